//! The audit of references made elsewhere (no vzarr provenance): a fixture's own chunk
//! references, written without provenance as kerchunk writes them, then tampered with; each
//! defect is found and named by its kind, and the untampered references have none.

use serde_json::{Value, json};
use vzarr_verify::{DefectKind, VerifyOptions, audit};

use crate::common::*;

/// The fixture's references as kerchunk would have them: every chunk referenced as stored,
/// no `vzarr` block.
fn foreign_refs(name: &str) -> (Value, String) {
    let src = fixtures().join(name);
    let ds = scan(&src);
    let mut v: Value = serde_json::from_slice(&vzarr_kerchunk::to_bytes(&ds).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("vzarr");
    let dir = src.parent().unwrap().to_string_lossy().into_owned();
    (v, dir)
}

fn audit_of(v: &Value, allow: &str) -> vzarr_verify::AuditReport {
    let reader = vzarr_read::open_bytes(
        &serde_json::to_vec(v).unwrap(),
        "refs.json",
        vzarr_read::ReadOptions {
            allow_prefixes: vec![allow.to_string()],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!reader.refs().has_provenance);
    audit(&reader, &VerifyOptions::default())
}

fn tas_keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v["refs"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, r)| k.starts_with("tas/c/") && r.is_array())
        .map(|(k, _)| k.clone())
        .collect();
    k.sort();
    k
}

#[test]
fn untampered_references_have_no_defect() {
    for name in ["nc4_climate.nc", "filters.h5", "layouts_latest.h5"] {
        let (v, dir) = foreign_refs(name);
        let r = audit_of(&v, &dir);
        assert!(r.ok() && r.audited > 0, "{name}: {r:?}");
    }
}

#[test]
fn each_defect_is_named() {
    let (v, dir) = foreign_refs("nc4_climate.nc");
    let keys = tas_keys(&v);
    assert!(keys.len() >= 2);
    let kinds = |v: &Value| -> Vec<DefectKind> {
        let r = audit_of(v, &dir);
        assert!(r.defects.iter().all(|d| d.array == "tas"), "{r:?}");
        r.defects.iter().map(|d| d.kind).collect()
    };
    // Two chunks swapped: both shifted.
    let mut shifted = v.clone();
    let (a, b) = (keys[0].clone(), keys[1].clone());
    let ra = shifted["refs"][&a].clone();
    shifted["refs"][&a] = shifted["refs"][&b].clone();
    shifted["refs"][&b] = ra;
    assert!(kinds(&shifted).contains(&DefectKind::Shifted));
    // One left out: missing.
    let mut missing = v.clone();
    missing["refs"].as_object_mut().unwrap().remove(&keys[1]);
    assert_eq!(kinds(&missing), [DefectKind::Missing]);
    // An offset moved: wrong offset (and the chunk there is then missing).
    let mut moved = v.clone();
    let r = &mut moved["refs"][&keys[0]];
    *r = json!([r[0], r[1].as_u64().unwrap() + 8, r[2]]);
    assert!(kinds(&moved).contains(&DefectKind::WrongOffset));
    // Past the end of the file.
    let mut past = v.clone();
    let r = &mut past["refs"][&keys[0]];
    *r = json!([r[0], 1u64 << 40, r[2]]);
    assert!(kinds(&past).contains(&DefectKind::PastEnd));
    // Another variable's chunk under tas's key.
    let mut other = v.clone();
    let pr = v["refs"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, r)| k.starts_with("pr/c/") && r.is_array())
        .map(|(_, r)| r.clone())
        .unwrap();
    other["refs"][&keys[0]] = pr;
    assert!(kinds(&other).contains(&DefectKind::OtherVariable));
}
