//! Unit tests of parsing references: chunk values, metadata forms, version 0, templates,
//! provenance, and a typed error for each kind of malformed input.

use super::*;
use serde_json::json;
use vzarr_core::ChunkRef;

fn array_doc(shape: &[u64], chunks: &[u64]) -> String {
    let names = &["y", "x"][..shape.len()];
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {}, "dimension_names": names
    })
    .to_string()
}

fn refs_with(extra: Value) -> Vec<u8> {
    let mut refs = json!({
        "zarr.json": r#"{"zarr_format":3,"node_type":"group","attributes":{"t":1}}"#,
        "v/zarr.json": array_doc(&[4, 6], &[2, 3]),
    });
    for (k, v) in extra.as_object().unwrap() {
        refs[k] = v.clone();
    }
    serde_json::to_vec(&json!({"version": 1, "refs": refs})).unwrap()
}

fn err(bytes: &[u8]) -> String {
    parse_refs(bytes, "t.json", ParseLimits::default())
        .unwrap_err()
        .to_string()
}

/// `[url]` chunks are kept aside, each URL asked once, then set as `0..size` of their source
/// (a chunk also given as a range keeps it); the caller's error stops the resolution.
#[test]
fn whole_file_references_resolved_by_size() {
    let b = refs_with(json!({
        "v/c/0/0": ["{{d}}/a.nc"],
        "v/c/1/0": ["file:///d/a.nc"],
        "v/c/1/1": ["file:///d/b.nc"],
        "v/c/0/1": ["file:///d/b.nc", 4, 2],
    }));
    let mut doc: Value = serde_json::from_slice(&b).unwrap();
    doc["templates"] = json!({"d": "file:///d"});
    let b = serde_json::to_vec(&doc).unwrap();
    let p = parse_refs(&b, "t.json", ParseLimits::default()).unwrap();
    assert_eq!(p.whole_files.len(), 3);
    assert_eq!(p.whole_files.urls(), ["file:///d/a.nc", "file:///d/b.nc"]);
    assert_eq!(p.dataset.arrays["v"].manifest.stored(), 1);
    let (mut ds, whole) = (p.dataset.clone(), p.whole_files.clone());
    let mut asked = Vec::new();
    whole
        .resolve(&mut ds, "t.json", |u: &str| -> Result<_, ParseError> {
            asked.push(u.to_string());
            Ok((u.replace("file:///d", "file:///e"), u.len() as u64))
        })
        .unwrap();
    assert_eq!(asked, ["file:///d/a.nc", "file:///d/b.nc"]);
    let m = &ds.arrays["v"].manifest;
    let range = |source, length| ChunkRef::Range {
        source,
        offset: 0,
        length,
    };
    assert_eq!(m.get(0), range("file:///e/a.nc", 14));
    assert_eq!(m.get(2), range("file:///e/a.nc", 14));
    assert_eq!(m.get(3), range("file:///e/b.nc", 14));
    assert_eq!(
        m.get(1),
        ChunkRef::Range {
            source: "file:///d/b.nc",
            offset: 4,
            length: 2
        }
    );
    let e = p
        .whole_files
        .resolve(&mut p.dataset.clone(), "t.json", |u: &str| {
            Err(ParseError::Malformed {
                origin: "t.json".into(),
                reason: format!("refusing {u}"),
            })
        })
        .unwrap_err();
    assert!(e.to_string().ends_with("refusing file:///d/a.nc"), "{e}");
}

#[test]
fn parses_refs() {
    let b = refs_with(json!({
        "v/c/0/0": ["file:///d/a.nc", 10, 12],
        "v/c/1/1": "base64:AQACAAMABAAFAAYA",
        "v/c/0/1": "raw text",
    }));
    let p = parse_refs(&b, "t.json", ParseLimits::default()).unwrap();
    let a = &p.dataset.arrays["v"];
    assert_eq!(
        a.manifest.get(0),
        ChunkRef::Range {
            source: "file:///d/a.nc",
            offset: 10,
            length: 12
        }
    );
    assert_eq!(a.manifest.get(1), ChunkRef::Inline(b"raw text"));
    assert_eq!(a.manifest.get(2), ChunkRef::Missing);
    assert_eq!(
        a.manifest.get(3),
        ChunkRef::Inline(&[1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0])
    );
    assert_eq!(p.dataset.groups[""].attributes["t"], json!(1));
    assert!(!p.has_provenance);
    assert!(p.documents.contains_key("v/zarr.json"));
}

#[test]
fn accepts_object_metadata_and_version0_and_templates() {
    let doc: Value = serde_json::from_str(&array_doc(&[4], &[4])).unwrap();
    let v0 = json!({"g/a/zarr.json": doc, "g/a/c/0": ["{{u}}/a.nc", 0, 8]});
    let e = err(&serde_json::to_vec(&v0).unwrap());
    assert!(e.contains("undefined template"), "{e}");
    let v1 = json!({"version": 1, "templates": {"u": "s3://b/d"}, "refs": v0});
    let p = parse_refs(
        &serde_json::to_vec(&v1).unwrap(),
        "t",
        ParseLimits::default(),
    )
    .unwrap();
    assert!(p.dataset.groups.contains_key("g"), "implicit parent group");
    assert_eq!(
        p.dataset.arrays["g/a"].manifest.get(0),
        ChunkRef::Range {
            source: "s3://b/d/a.nc",
            offset: 0,
            length: 8
        }
    );
}

#[test]
fn reads_provenance() {
    let mut v: Value = serde_json::from_slice(&refs_with(json!({}))).unwrap();
    v["vzarr"] = json!({"sources": [{"url": "file:///d/a.nc", "size": 5, "mtime_ns": 7, "etag": "x"}],
                        "allowed_prefixes": ["file:///d/"]});
    let p = parse_refs(
        &serde_json::to_vec(&v).unwrap(),
        "t",
        ParseLimits::default(),
    )
    .unwrap();
    assert!(p.has_provenance);
    assert_eq!(p.dataset.provenance.sources[0].size, 5);
    assert_eq!(p.dataset.provenance.sources[0].etag.as_deref(), Some("x"));
    v["vzarr"] = json!({"sources": "nope"});
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("provenance"));
}

#[test]
fn malformed_refs_are_typed_errors() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"\xff\xfe{}".to_vec(), "not UTF-8"),
        (b"{\"version\": 1, ".to_vec(), "not JSON"),
        (b"[1]".to_vec(), "not a JSON object"),
        (
            br#"{"version": 2, "refs": {}}"#.to_vec(),
            "unsupported version",
        ),
        (br#"{"version": 1}"#.to_vec(), "\"refs\" is missing"),
        (
            br#"{"version": 1, "refs": {}, "gen": [{"key": "x"}]}"#.to_vec(),
            "gen",
        ),
        (
            refs_with(json!({"v/c/2/0": ["file:///a", 0, 1]})),
            "outside the chunk grid",
        ),
        (
            refs_with(json!({"v/c/0": ["file:///a", 0, 1]})),
            "1 chunk indices",
        ),
        (
            refs_with(json!({"v/c/0/-1": ["file:///a", 0, 1]})),
            "not a non-negative integer",
        ),
        (
            refs_with(json!({"v/c/0/01": ["file:///a", 0, 1]})),
            "leading zeros",
        ),
        (
            refs_with(json!({"v/c/0/99999999999999999999": ["file:///a", 0, 1]})),
            "too large",
        ),
        (
            refs_with(json!({"v/c/0/0": ["file:///a", -5, 1]})),
            "negative offset",
        ),
        (
            refs_with(json!({"v/c/0/0": ["file:///a", 0, -1]})),
            "negative length",
        ),
        (
            refs_with(json!({"v/c/0/0": ["file:///a", 1.5, 1]})),
            "not an integer",
        ),
        (
            refs_with(json!({"v/c/0/0": ["file:///a", "0", 1]})),
            "not a number",
        ),
        (
            refs_with(json!({"v/c/0/0": ["file:///a", u64::MAX, 2]})),
            "overflows",
        ),
        (refs_with(json!({"v/c/0/0": [""]})), "empty URL"),
        (refs_with(json!({"v/c/0/0": ["file:///a", 0]})), "2 items"),
        (refs_with(json!({"v/c/0/0": [7, 0, 1]})), "URL string"),
        (refs_with(json!({"v/c/0/0": 5})), "must be"),
        (refs_with(json!({"v/c/0/0": "base64:!!"})), "invalid base64"),
        (
            refs_with(json!({"w/c/0/0": ["file:///a", 0, 1]})),
            "neither a metadata key",
        ),
        (refs_with(json!({"v/.zarray": "{}"})), "Zarr v2"),
        (
            refs_with(json!({"x/zarr.json": "not json"})),
            "not valid JSON",
        ),
        (refs_with(json!({"x/zarr.json": 5})), "JSON object"),
        (
            refs_with(json!({"x/zarr.json": "{\"zarr_format\":2}"})),
            "not Zarr v3",
        ),
        (
            refs_with(json!({"a/../b/zarr.json": "{}"})),
            "invalid node path",
        ),
        (
            refs_with(json!({"x/zarr.json": "{\"zarr_format\":3,\"node_type\":\"banana\"}"})),
            "node_type",
        ),
        (
            refs_with(json!({"big/zarr.json": array_doc(&[u64::MAX, u64::MAX], &[1, 1])})),
            "more than",
        ),
        (
            refs_with(json!({"v/zarr.json": array_doc(&[4, 6], &[0, 3])})),
            "v/zarr.json",
        ),
    ];
    for (bytes, want) in cases {
        let e = err(&bytes);
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}

#[test]
fn rectilinear_runs_are_bounded_before_expansion() {
    let doc = json!({
        "zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "int8",
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline",
            "chunk_shapes": [[[1, 4_000_000_000u64]]]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {}}]
    });
    let e = err(&refs_with(json!({"r/zarr.json": doc.to_string()})));
    assert!(e.contains("more than"), "{e}");
}
