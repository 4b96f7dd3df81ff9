//! Unit tests of kerchunk references with Zarr v2 metadata: JSON chunk keys of both
//! separators, consolidated metadata, arrays left out, and Parquet references (files written
//! here with the parquet crate's writer, in fsspec's layout) with hostile inputs.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use vzarr_core::ChunkRef;
use vzarr_test_support::parquet_refs::{Row, record_file};

use super::*;

fn zarray(shape: &[u64], chunks: &[u64], extra: Value) -> String {
    let mut z = json!({"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": "<i2",
        "compressor": null, "filters": null, "fill_value": -1, "order": "C"});
    for (k, v) in extra.as_object().unwrap() {
        z[k] = v.clone();
    }
    z.to_string()
}

fn v2_refs(extra: Value) -> Vec<u8> {
    let mut refs = json!({
        ".zgroup": "{\"zarr_format\": 2}",
        ".zattrs": "{\"title\": \"t\", \"nan\": NaN}",
        "a/.zarray": zarray(&[4, 6], &[2, 3], json!({})),
        "a/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"]}",
        "g/b/.zarray": zarray(&[5], &[5], json!({"dimension_separator": "/"})),
        "s/.zarray": zarray(&[], &[], json!({})),
        "f/.zarray": zarray(&[2], &[1], json!({"order": "F"})),
    });
    for (k, v) in extra.as_object().unwrap() {
        refs[k] = v.clone();
    }
    serde_json::to_vec(&json!({"version": 1, "refs": refs})).unwrap()
}

fn parse(b: &[u8]) -> Result<ParsedRefs, ParseError> {
    parse_refs(b, "t.json", ParseLimits::default())
}

#[test]
fn zarr_v2_json_references() {
    let b = v2_refs(json!({
        "a/1.1": ["/d/a.nc", 100, 12],
        "g/b/0": "base64:AQACAAMABAAFAA==",
        "s/0": ["/d/a.nc", 7, 2],
        "f/0": ["/d/a.nc", 0, 2],
    }));
    let p = parse(&b).unwrap();
    let ds = &p.dataset;
    assert_eq!(ds.groups[""].attributes["title"], json!("t"));
    assert_eq!(ds.groups[""].attributes["nan"], json!("NaN"));
    assert!(ds.groups.contains_key("g"));
    let a = &ds.arrays["a"];
    assert_eq!(a.dimension_names, ["y", "x"]);
    assert_eq!(
        a.manifest.get(3),
        ChunkRef::Range {
            source: "/d/a.nc",
            offset: 100,
            length: 12
        }
    );
    assert_eq!(a.attributes["_FillValue"], json!(-1));
    assert!(matches!(ds.arrays["g/b"].manifest.get(0), ChunkRef::Inline(b) if b.len() == 10));
    assert!(matches!(
        ds.arrays["s"].manifest.get(0),
        ChunkRef::Range { offset: 7, .. }
    ));
    // Left out with the reason; its chunk key is skipped, not an error.
    assert!(!ds.arrays.contains_key("f"));
    assert!(
        ds.skipped
            .iter()
            .any(|s| s.path == "f" && s.reason.contains("Fortran"))
    );
    // The documents served are Zarr v3.
    let doc: Value = serde_json::from_slice(&p.documents["a/zarr.json"]).unwrap();
    assert_eq!(doc["zarr_format"], json!(3));
}

#[test]
fn consolidated_zmetadata_alone_or_agreeing() {
    let meta = json!({"metadata": {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": serde_json::from_str::<Value>(&zarray(&[4], &[2], json!({}))).unwrap(),
    }, "zarr_consolidated_format": 1});
    let b = serde_json::to_vec(&json!({".zmetadata": meta, "a/1": ["/d/a.nc", 0, 4]})).unwrap();
    let p = parse(&b).unwrap();
    assert_eq!(p.dataset.arrays["a"].manifest.stored(), 1);
    // A key given both ways must say the same.
    let b = serde_json::to_vec(&json!({".zmetadata": meta,
        "a/.zarray": zarray(&[8], &[2], json!({}))}))
    .unwrap();
    let e = parse(&b).unwrap_err().to_string();
    assert!(e.contains("a/.zarray") && e.contains("consolidated"), "{e}");
}

#[test]
fn malformed_zarr_v2_is_a_typed_error_naming_the_key() {
    for (extra, key, why) in [
        (json!({"a/1.1.1": ["/d", 0, 1]}), "a/1.1.1", "chunk indices"),
        (
            json!({"a/9.0": ["/d", 0, 1]}),
            "a/9.0",
            "outside the chunk grid",
        ),
        (
            json!({"a/0/0": ["/d", 0, 1]}),
            "a/0/0",
            "neither a metadata key",
        ),
        (
            json!({"g/b/0.0": ["/d", 0, 1]}),
            "g/b/0.0",
            "not a non-negative integer",
        ),
        (
            json!({"a/.zarray": "{\"zarr_format\": 2}"}),
            "a/.zarray",
            "shape",
        ),
        (
            json!({"a/.zattrs": "[1]"}),
            "a/.zattrs",
            "not a JSON object",
        ),
        (
            json!({"x/.zarray": zarray(&[2], &[1], json!({"dtype": "<q9"}))}),
            "x/.zarray",
            "dtype",
        ),
        (
            json!({"a/zarr.json": "{\"zarr_format\": 3, \"node_type\": \"group\"}"}),
            "a/zarr.json",
            "both",
        ),
    ] {
        let e = parse(&v2_refs(extra)).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(why), "{key}: {e}");
    }
}

/// A Parquet record file in fsspec's layout (`path`, `offset`, `size`, `raw`).
fn record(rows: &[Row<'_>]) -> Bytes {
    Bytes::from(record_file(rows))
}

fn zmetadata(record_size: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({"record_size": record_size, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": serde_json::from_str::<Value>(&zarray(&[5], &[1], json!({}))).unwrap(),
        "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
    }}))
    .unwrap()
}

#[test]
fn parquet_references() {
    // Chunks 0..3 in record 0, 3..5 in record 1 (rows past the last chunk are padding).
    let r0 = record(&[
        (Some("/d/a.nc"), 10, 2, None),
        (None, 0, 0, None),
        (Some("/d/a.nc"), 0, 0, Some(b"\x05\x00")),
    ]);
    let r1 = record(&[
        (Some("/d/b.nc"), 30, 2, None),
        (Some("/d/c.nc"), 0, 0, None),
        (None, 0, 0, None),
    ]);
    let mut fetch = |rel: &str| -> Result<Option<Bytes>, FetchError> {
        Ok(match rel {
            "a/refs.0.parq" => Some(r0.clone()),
            "a/refs.1.parq" => Some(r1.clone()),
            _ => None,
        })
    };
    let p =
        parse_parquet_refs(&zmetadata(3), "d.parq", ParseLimits::default(), &mut fetch).unwrap();
    let m = &p.dataset.arrays["a"].manifest;
    assert_eq!(
        m.get(0),
        ChunkRef::Range {
            source: "/d/a.nc",
            offset: 10,
            length: 2
        }
    );
    assert_eq!(m.get(1), ChunkRef::Missing);
    assert_eq!(m.get(2), ChunkRef::Inline(b"\x05\x00"));
    assert!(matches!(
        m.get(3),
        ChunkRef::Range {
            source: "/d/b.nc",
            ..
        }
    ));
    assert_eq!(m.stored(), 3);
    // Offset and size 0: the whole file, set once its size is known.
    assert_eq!(p.whole_files.urls(), ["/d/c.nc"]);
    assert_eq!(p.whole_files.len(), 1);
    // A record file that is absent: its chunks are not stored.
    let mut only_first = |rel: &str| -> Result<Option<Bytes>, FetchError> {
        Ok((rel == "a/refs.0.parq").then(|| r0.clone()))
    };
    let p =
        parse_parquet_refs(&zmetadata(3), "d", ParseLimits::default(), &mut only_first).unwrap();
    assert_eq!(p.dataset.arrays["a"].manifest.stored(), 2);
}

#[test]
fn hostile_parquet_references_are_typed_errors() {
    let good = record(&[(Some("/d/a.nc"), 10, 2, None)]);
    let cases: Vec<(Vec<u8>, Bytes, &str)> = vec![
        (b"{".to_vec(), good.clone(), "not JSON"),
        (br#"{"metadata": {}}"#.to_vec(), good.clone(), "record_size"),
        (
            br#"{"record_size": 0, "metadata": {}}"#.to_vec(),
            good.clone(),
            "record_size",
        ),
        (
            br#"{"record_size": 5}"#.to_vec(),
            good.clone(),
            "\"metadata\"",
        ),
        (
            zmetadata(3),
            Bytes::from_static(b"PAR1 not really"),
            "not Parquet",
        ),
        (
            zmetadata(1),
            record(&[(Some("/d"), 1, 1, None), (Some("/d"), 2, 1, None)]),
            "rows",
        ),
        (
            zmetadata(3),
            record(&[(Some("/d"), -1, 1, None)]),
            "negative",
        ),
    ];
    for (meta, file, why) in cases {
        let mut fetch = |_: &str| -> Result<Option<Bytes>, FetchError> { Ok(Some(file.clone())) };
        let e = parse_parquet_refs(&meta, "d.parq", ParseLimits::default(), &mut fetch)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why) && e.starts_with("d.parq"), "{why}: {e}");
    }
    // The fetcher's error, kept as the cause, naming the part.
    let mut failing = |_: &str| -> Result<Option<Bytes>, FetchError> {
        Err(Arc::new(std::io::Error::other("disk on fire")))
    };
    let e = parse_parquet_refs(
        &zmetadata(3),
        "d.parq",
        ParseLimits::default(),
        &mut failing,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ParseError::Part { part, .. } if part == "a/refs.0.parq"),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

/// `.zmetadata` of two arrays: `a` (3 chunks) and `g/b` (2 chunks), 2 rows a record file.
fn two_arrays() -> Vec<u8> {
    let z = |n: u64| serde_json::from_str::<Value>(&zarray(&[n], &[1], json!({}))).unwrap();
    serde_json::to_vec(&json!({"record_size": 2, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": z(3), "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "g/.zgroup": {"zarr_format": 2},
        "g/b/.zarray": z(2), "g/b/.zattrs": {"_ARRAY_DIMENSIONS": ["y"]},
    }}))
    .unwrap()
}

/// The record files of [`two_arrays`], by relative path.
fn two_array_files() -> BTreeMap<&'static str, Bytes> {
    BTreeMap::from([
        (
            "a/refs.0.parq",
            record(&[
                (Some("/d/a.nc"), 10, 2, None),
                (Some("/d/a.nc"), 12, 2, None),
            ]),
        ),
        ("a/refs.1.parq", record(&[(Some("/d/a.nc"), 14, 2, None)])),
        (
            "g/b/refs.0.parq",
            record(&[
                (Some("/d/b.nc"), 0, 2, None),
                (None, 0, 0, Some(b"\x07\x00")),
            ]),
        ),
    ])
}

#[test]
fn parquet_references_read_lazily() {
    let files = two_array_files();
    let asked = std::cell::RefCell::new(Vec::<String>::new());
    let mut fetch = |rel: &str| -> Result<Option<Bytes>, FetchError> {
        asked.borrow_mut().push(rel.to_string());
        Ok(files.get(rel).cloned())
    };
    let (refs, records) = ParquetRecords::open(&two_arrays(), "d", ParseLimits::default()).unwrap();
    // Opened from .zmetadata alone: metadata whole, every manifest empty.
    assert_eq!(refs.dataset.arrays["a"].shape(), vec![3]);
    assert!(
        refs.dataset
            .arrays
            .values()
            .all(|a| a.manifest.stored() == 0)
    );
    assert!(refs.documents.contains_key("g/b/zarr.json"));
    assert_eq!(records.arrays().collect::<Vec<_>>(), ["a", "g/b"]);
    assert_eq!(
        records.record_files("a"),
        ["a/refs.0.parq", "a/refs.1.parq"]
    );
    assert!(records.holds("g/b") && !records.holds("g"));
    // One array: its record files only.
    let a = records
        .load_array("a", &mut fetch, &mut |_| Ok(()))
        .unwrap()
        .0;
    assert_eq!(*asked.borrow(), ["a/refs.0.parq", "a/refs.1.parq"]);
    assert_eq!(records.references(), 3);
    // The same entries as the eager parse, which is the lazy open with every array loaded.
    let eager = parse_parquet_refs(
        &two_arrays(),
        "d",
        ParseLimits::default(),
        &mut |rel: &str| Ok(files.get(rel).cloned()),
    )
    .unwrap();
    assert_eq!(a, eager.dataset.arrays["a"].manifest);
    assert_eq!(a.stored(), 3);
    assert_eq!(eager.dataset.arrays["g/b"].manifest.stored(), 2);
    assert_eq!(
        eager.dataset.arrays["g/b"].manifest.get(1),
        ChunkRef::Inline(b"\x07\x00")
    );
    let all = records
        .load_all(
            refs,
            &mut |rel: &str| Ok(files.get(rel).cloned()),
            &mut |_| Ok(()),
        )
        .unwrap();
    assert_eq!(all.dataset, eager.dataset);
}

#[test]
fn a_bad_record_file_is_its_arrays_error_only() {
    let mut files = two_array_files();
    files.insert(
        "g/b/refs.0.parq",
        Bytes::from_static(b"PAR1 not Parquet PAR1"),
    );
    let mut fetch =
        |rel: &str| -> Result<Option<Bytes>, FetchError> { Ok(files.get(rel).cloned()) };
    let (_, records) = ParquetRecords::open(&two_arrays(), "d", ParseLimits::default()).unwrap();
    assert_eq!(
        records
            .load_array("a", &mut fetch, &mut |_| Ok(()))
            .unwrap()
            .0
            .stored(),
        3
    );
    let e = records
        .load_array("g/b", &mut fetch, &mut |_| Ok(()))
        .unwrap_err();
    assert!(
        matches!(&e, ParseError::BadKey { key, .. } if key == "g/b/refs.0.parq"),
        "{e}"
    );
    // A URL the caller refuses: the record file's error, the refusal kept as its cause,
    // asked before the manifest is given out.
    let files = two_array_files();
    let mut fetch =
        |rel: &str| -> Result<Option<Bytes>, FetchError> { Ok(files.get(rel).cloned()) };
    let mut asked = Vec::new();
    let mut refuse_b = |url: &str| -> Result<(), FetchError> {
        asked.push(url.to_string());
        if url == "/d/b.nc" {
            Err(Arc::new(std::io::Error::other("not allowed")))
        } else {
            Ok(())
        }
    };
    assert!(records.load_array("a", &mut fetch, &mut refuse_b).is_ok());
    let e = records
        .load_array("g/b", &mut fetch, &mut refuse_b)
        .unwrap_err();
    assert!(
        matches!(&e, ParseError::Part { part, .. } if part == "g/b/refs.0.parq"),
        "{e}"
    );
    assert!(e.to_string().contains("not allowed"), "{e}");
    // Each distinct URL asked about once per load.
    assert_eq!(asked, ["/d/a.nc", "/d/b.nc"]);
}

#[test]
fn references_are_counted_over_every_load() {
    let files = two_array_files();
    let mut fetch =
        |rel: &str| -> Result<Option<Bytes>, FetchError> { Ok(files.get(rel).cloned()) };
    let limits = ParseLimits {
        max_references: 4,
        ..ParseLimits::default()
    };
    let (_, records) = ParquetRecords::open(&two_arrays(), "d", limits).unwrap();
    records
        .load_array("a", &mut fetch, &mut |_| Ok(()))
        .unwrap();
    let e = records
        .load_array("g/b", &mut fetch, &mut |_| Ok(()))
        .unwrap_err();
    assert!(e.to_string().contains("more than 4"), "{e}");
    // A failed load counts nothing.
    assert_eq!(records.references(), 3);
    let e = parse_parquet_refs(&two_arrays(), "d", limits, &mut fetch).unwrap_err();
    assert!(e.to_string().contains("more than 4"), "{e}");
}

/// Seeded mutations of a Parquet record file (bytes flipped) give references or a typed error
/// naming the file, never a panic out of the reader: what the parquet crate is known to panic
/// on is checked first (column chunks outside the file, dictionary pages missing), and the
/// panics left are that file's typed error. The process's panic hook is not replaced: a hook
/// installed here sees each of those panics.
#[test]
fn mutated_record_files_are_typed_errors() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use vzarr_test_support::SplitMix64;
    static PARQUET_PANICS: AtomicUsize = AtomicUsize::new(0);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        if info
            .location()
            .is_some_and(|l| l.file().contains("parquet"))
        {
            PARQUET_PANICS.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let good = record(&[
        (Some("/d/a.nc"), 10, 2, None),
        (None, 0, 0, Some(b"\x01\x00")),
    ]);
    let mut rng = SplitMix64(45);
    let (mut caught, mut refused) = (0, 0);
    for _ in 0..2000 {
        let mut file = good.to_vec();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(file.len() as u64) as usize;
            file[i] = rng.below(256) as u8;
        }
        let file = Bytes::from(file);
        let mut fetch = |_: &str| -> Result<Option<Bytes>, FetchError> { Ok(Some(file.clone())) };
        if let Err(e) =
            parse_parquet_refs(&zmetadata(3), "d.parq", ParseLimits::default(), &mut fetch)
        {
            let text = e.to_string();
            assert!(text.starts_with("d.parq: "), "{text}");
            if text.contains("the Parquet reader failed") {
                assert!(text.contains("a/refs.0.parq"), "{text}");
                caught += 1;
            } else {
                refused += 1;
            }
        }
    }
    std::panic::set_hook(previous);
    assert!(refused > 100, "mutants should break the file: {refused}");
    // Before the layout checks, 9 of these mutants made the parquet crate panic.
    assert!(caught <= 2, "{caught} panics of the parquet crate");
    assert_eq!(PARQUET_PANICS.load(Ordering::SeqCst), caught);
}

/// Seeded mutations of Zarr v2 references (bytes flipped, cut, values swapped for other JSON):
/// every outcome is references or a typed error, never a panic (mutations of a Parquet record
/// file: `mutated_record_files_are_typed_errors`).
#[test]
fn mutated_references_never_panic() {
    use vzarr_test_support::SplitMix64;
    let base = v2_refs(json!({
        "a/1.1": ["/d/a.nc", 100, 12],
        "g/b/0": "base64:AQACAAMABAAFAA==",
        "s/0": ["/d/a.nc", 7, 2],
    }));
    let mut rng = SplitMix64(45);
    let odd: [&[u8]; 8] = [
        b"null",
        b"-1",
        b"1e400",
        b"\"\"",
        b"[]",
        b"{}",
        b"\"NaN\"",
        b"18446744073709551616",
    ];
    for _ in 0..3000 {
        let mut b = base.clone();
        match rng.below(3) {
            0 => {
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] = rng.below(256) as u8;
                }
            }
            1 => b.truncate(rng.below(b.len() as u64) as usize),
            _ => {
                // A number, string or literal inside the JSON replaced by another value.
                let i = rng.below(b.len() as u64) as usize;
                let j = (i + 1 + rng.below(6) as usize).min(b.len());
                let with = odd[rng.below(odd.len() as u64) as usize];
                b.splice(i..j, with.iter().copied());
            }
        }
        let _ = parse(&b);
    }
}
