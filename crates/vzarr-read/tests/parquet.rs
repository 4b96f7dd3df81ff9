//! kerchunk's Parquet references read lazily: opening reads `.zmetadata` alone, a read reads
//! the record files of the chunks it touches only (once, whatever the threads), values equal
//! the eager path, a bad record file or a refused URL of one array is that array's typed
//! error, and record files are counted and bounded from `.zmetadata` before any is named.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::json;
use vzarr_read::{FetchError, ReadError, ReadOptions, Reader, RecordFetch, SourceError};
use vzarr_test_support::parquet_refs::record_file;

/// A Parquet reference set in `dir/refs`: arrays `a` (6 int16, chunks of 2: record files
/// `a/refs.0.parq` with chunks 0-1, `a/refs.1.parq` with chunk 2) and `b` (4 int16, chunks
/// of 2, one record file), over the source `dir/data/src.bin` (a's values 0..6, then b's
/// 100..104, little-endian). `b_url` is the URL b's records point at.
fn parquet_set(dir: &Path, b_url: Option<&str>) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let values: Vec<u8> = (0i16..6)
        .chain(100..104)
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let src = data.join("src.bin");
    std::fs::write(&src, values).unwrap();
    let src = vzarr_source::absolute(&src).unwrap();
    let url = src.to_str().unwrap();
    let b_url = b_url.unwrap_or(url);
    let refs = dir.join("refs");
    for d in ["a", "b"] {
        std::fs::create_dir_all(refs.join(d)).unwrap();
    }
    let zarray = |n: u64| {
        json!({"zarr_format": 2, "shape": [n], "chunks": [2], "dtype": "<i2",
            "compressor": null, "filters": null, "fill_value": -1, "order": "C"})
    };
    let zmeta = json!({"record_size": 2, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": zarray(6), "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "b/.zarray": zarray(4), "b/.zattrs": {"_ARRAY_DIMENSIONS": ["y"]},
    }});
    std::fs::write(refs.join(".zmetadata"), serde_json::to_vec(&zmeta).unwrap()).unwrap();
    let write = |rel: &str, rows: &[vzarr_test_support::parquet_refs::Row<'_>]| {
        std::fs::write(refs.join(rel), record_file(rows)).unwrap();
    };
    write(
        "a/refs.0.parq",
        &[(Some(url), 0, 4, None), (Some(url), 4, 4, None)],
    );
    write(
        "a/refs.1.parq",
        &[(Some(url), 8, 4, None), (None, 0, 0, None)],
    );
    write(
        "b/refs.0.parq",
        &[(Some(b_url), 12, 4, None), (Some(b_url), 16, 4, None)],
    );
    refs
}

/// Reads the files under `refs` and records which were asked for.
fn counting_fetch(refs: &Path) -> (RecordFetch, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (dir, log) = (refs.to_path_buf(), asked.clone());
    let fetch: RecordFetch = Arc::new(move |rel: &str| -> Result<Option<Bytes>, FetchError> {
        log.lock().unwrap().push(rel.to_string());
        match std::fs::read(dir.join(rel)) {
            Ok(b) => Ok(Some(Bytes::from(b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Arc::new(e)),
        }
    });
    (fetch, asked)
}

fn allowing(dir: &Path) -> ReadOptions {
    ReadOptions {
        allow_prefixes: vec![dir.join("data").to_str().unwrap().to_string()],
        ..Default::default()
    }
}

fn open_counted(refs: &Path, options: ReadOptions) -> (Reader, Arc<Mutex<Vec<String>>>) {
    let (fetch, asked) = counting_fetch(refs);
    let zmetadata = std::fs::read(refs.join(".zmetadata")).unwrap();
    let reader =
        vzarr_read::open_parquet(&zmetadata, refs.to_str().unwrap(), fetch, options).unwrap();
    (reader, asked)
}

/// The values of `r` along the one axis of `a`.
fn read1(a: &vzarr_read::ArrayReader<'_>, r: std::ops::Range<u64>) -> Vec<i16> {
    a.read::<i16>(std::slice::from_ref(&r))
        .unwrap()
        .into_raw_vec_and_offset()
        .0
}

fn values(reader: &Reader, path: &str) -> Result<Vec<i16>, ReadError> {
    let a = reader.array(path)?;
    let whole: Vec<std::ops::Range<u64>> = a.shape().into_iter().map(|n| 0..n).collect();
    Ok(a.read::<i16>(&whole)?.iter().copied().collect())
}

#[test]
fn opening_reads_zmetadata_alone_and_an_array_its_record_files() {
    let dir = tempfile::tempdir().unwrap();
    let refs = parquet_set(dir.path(), None);
    let (reader, asked) = open_counted(&refs, allowing(dir.path()));
    assert!(
        asked.lock().unwrap().is_empty(),
        "no record file read at open"
    );
    assert_eq!(reader.pending_arrays(), ["a", "b"]);
    assert_eq!(reader.stats().record_files, 0);
    assert_eq!(reader.stats().requests, 0);
    // Metadata is served without any record file.
    assert_eq!(reader.dataset().arrays["b"].shape(), vec![4]);
    assert!(matches!(
        reader.require_loaded(),
        Err(ReadError::NotLoaded { arrays, .. }) if arrays == ["a", "b"]
    ));
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(*asked.lock().unwrap(), ["a/refs.0.parq", "a/refs.1.parq"]);
    assert_eq!(reader.stats().record_files, 2);
    // Reads load record files, not whole manifests.
    assert_eq!(reader.pending_arrays(), ["a", "b"]);
    // Kept: read again, nothing more is read.
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(reader.stats().record_files, 2);
    // The values of the eager path (every record file read at once).
    let eager = vzarr_read::open_parsed(
        vzarr_read::load(refs.to_str().unwrap(), Default::default()).unwrap(),
        "eager",
        allowing(dir.path()),
    )
    .unwrap();
    for p in ["a", "b"] {
        assert_eq!(
            values(&eager, p).unwrap(),
            values(&reader, p).unwrap(),
            "{p}"
        );
        assert_eq!(
            eager.manifest(p).unwrap(),
            reader.manifest(p).unwrap(),
            "{p}"
        );
    }
    // The whole manifests (`Reader::manifest`) read every record file of their array.
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "a/refs.0.parq",
            "a/refs.1.parq",
            "a/refs.0.parq",
            "a/refs.1.parq",
            "b/refs.0.parq",
            "b/refs.0.parq"
        ]
    );
    assert!(reader.pending_arrays().is_empty());
}

#[test]
fn reading_one_element_reads_its_record_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let refs = parquet_set(dir.path(), None);
    let (reader, asked) = open_counted(&refs, allowing(dir.path()));
    let a = reader.array("a").unwrap();
    // Element 4 is in chunk 2, the first row of a/refs.1.parq.
    assert_eq!(read1(&a, 4..5), [4]);
    assert_eq!(*asked.lock().unwrap(), ["a/refs.1.parq"]);
    assert_eq!(reader.stats().record_files, 1);
    assert_eq!(read1(&a, 0..2), [0, 1]);
    assert_eq!(*asked.lock().unwrap(), ["a/refs.1.parq", "a/refs.0.parq"]);
    // A missing record file holds no chunk: fill values, one request that finds nothing.
    std::fs::remove_file(refs.join("b/refs.0.parq")).unwrap();
    assert_eq!(values(&reader, "b").unwrap(), [-1, -1, -1, -1]);
    assert_eq!(reader.stats().record_files, 2);
}

/// `.zmetadata` of one array `x` of `chunks` chunks of one int16 each, `record_size` rows per
/// record file.
fn one_array_zmetadata(chunks: u64, record_size: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({"record_size": record_size, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "x/.zarray": {"zarr_format": 2, "shape": [chunks], "chunks": [1], "dtype": "<i2",
            "compressor": null, "filters": null, "fill_value": 0, "order": "C"},
        "x/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
    }}))
    .unwrap()
}

#[test]
fn record_files_are_counted_and_bounded_before_any_is_named() {
    // 2^31 record files of one row (a 261-byte `.zmetadata`) aborted the process asking for
    // 48 GiB of names; 2^25 took 1.7 GB. Refused at open now, naming the limit.
    for chunks in [1u64 << 31, 1 << 25, (1 << 16) + 1] {
        let fetch: RecordFetch = Arc::new(|_: &str| panic!("no record file is read"));
        let e = vzarr_read::open_parquet(
            &one_array_zmetadata(chunks, 1),
            "big",
            fetch,
            ReadOptions::default(),
        )
        .err()
        .expect("refused");
        let text = e.to_string();
        assert!(
            text.starts_with("big: ")
                && text.contains(&format!("{chunks} record files"))
                && text.contains("limit max_record_files, default 65536"),
            "{text}"
        );
    }
    // At the limit: opened, and a read asks for the one record file it needs.
    let dir = tempfile::tempdir().unwrap();
    let (fetch, asked) = counting_fetch(dir.path());
    let reader = vzarr_read::open_parquet(
        &one_array_zmetadata(1 << 16, 1),
        "at-limit",
        fetch,
        ReadOptions::default(),
    )
    .unwrap();
    let x = reader.array("x").unwrap();
    assert_eq!(read1(&x, 40_000..40_001), [0]);
    assert_eq!(*asked.lock().unwrap(), ["x/refs.40000.parq"]);
}

#[test]
fn open_of_a_directory_is_lazy_and_load_all_completes_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let refs = parquet_set(dir.path(), None);
    let mut reader = vzarr_read::open(refs.to_str().unwrap(), allowing(dir.path())).unwrap();
    assert_eq!(reader.stats().record_files, 0);
    assert_eq!(reader.dataset().arrays["a"].manifest.stored(), 0);
    assert_eq!(values(&reader, "b").unwrap(), [100, 101, 102, 103]);
    assert_eq!(reader.stats().record_files, 1);
    reader.load_all().unwrap();
    // Every record file into the whole manifests (b's read again: a chunk read's cache is
    // not a manifest).
    assert_eq!(reader.stats().record_files, 4);
    assert!(reader.pending_arrays().is_empty());
    reader.require_loaded().unwrap();
    let ds = reader.dataset();
    assert_eq!(ds.arrays["a"].manifest.stored(), 3);
    assert_eq!(ds.arrays["b"].manifest.stored(), 2);
    assert_eq!(reader.source_urls().len(), 1);
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn one_array_loaded_once_by_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let refs = parquet_set(dir.path(), None);
    let (reader, asked) = open_counted(&refs, allowing(dir.path()));
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4).map(|_| s.spawn(|| values(&reader, "a"))).collect();
        for h in hs {
            assert_eq!(h.join().unwrap().unwrap(), [0, 1, 2, 3, 4, 5]);
        }
    });
    assert_eq!(*asked.lock().unwrap(), ["a/refs.0.parq", "a/refs.1.parq"]);
}

#[test]
fn a_corrupt_record_file_of_b_is_bs_error_only() {
    let dir = tempfile::tempdir().unwrap();
    let refs = parquet_set(dir.path(), None);
    std::fs::write(refs.join("b/refs.0.parq"), b"PAR1 cut short").unwrap();
    let (reader, _) = open_counted(&refs, allowing(dir.path()));
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
    let e = values(&reader, "b").unwrap_err();
    assert!(
        matches!(&e, ReadError::Parse(vzarr_read::ParseError::BadKey { key, .. }) if key == "b/refs.0.parq"),
        "{e}"
    );
    // A record file that cannot be read at all: the fetcher's error, naming the file.
    std::fs::remove_file(refs.join("b/refs.0.parq")).unwrap();
    std::fs::create_dir(refs.join("b/refs.0.parq")).unwrap();
    let reader = vzarr_read::open(refs.to_str().unwrap(), allowing(dir.path())).unwrap();
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
    let e = values(&reader, "b").unwrap_err();
    assert!(
        matches!(&e, ReadError::Parse(vzarr_read::ParseError::Part { part, .. }) if part == "b/refs.0.parq"),
        "{e}"
    );
}

#[test]
fn a_refused_url_of_b_is_refused_when_b_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("secret.bin");
    std::fs::write(&elsewhere, [0u8; 64]).unwrap();
    let elsewhere = vzarr_source::absolute(&elsewhere).unwrap();
    let refs = parquet_set(dir.path(), Some(elsewhere.to_str().unwrap()));
    let (reader, asked) = open_counted(&refs, allowing(dir.path()));
    assert_eq!(values(&reader, "a").unwrap(), [0, 1, 2, 3, 4, 5]);
    let before = reader.stats();
    let e = values(&reader, "b").unwrap_err();
    assert!(
        matches!(e.source_error(), Some(SourceError::NotAllowed(_))),
        "{e}"
    );
    assert!(e.to_string().contains("b/refs.0.parq"), "{e}");
    // Refused at load, before any byte of a source was fetched.
    let after = reader.stats();
    assert_eq!(
        (after.requests, after.bytes),
        (before.requests, before.bytes)
    );
    assert_eq!(asked.lock().unwrap().last().unwrap(), "b/refs.0.parq");
    assert_eq!(reader.pending_arrays(), ["a", "b"]);
}
