//! kerchunk's Parquet references, as fsspec's `LazyReferenceMapper` writes and reads them
//! (kerchunk specification, <https://fsspec.github.io/kerchunk/spec.html>, "Parquet
//! references"): a directory holding `.zmetadata`, a JSON object
//! `{"metadata": {<every Zarr metadata key>: <document>}, "record_size": N}`, and per array
//! `<array>/refs.<k>.parq`, Parquet files of `record_size` rows each with the columns `path`
//! (URL, null for a chunk not stored), `offset`, `size` and `raw` (inline bytes, taking
//! precedence). Row `i` of file `k` is the chunk numbered `k * record_size + i` in C order over
//! the chunk grid; `offset` and `size` both 0 mean the whole file.
//!
//! The files are read one at a time through the caller's fetcher (so a reader of local files
//! and object storage alike, under its own policy) and their rows go straight into the
//! manifests through the same builder as JSON references; no file is held after its rows.

use std::sync::Arc;

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;
use vzarr_core::Provenance;

use super::builder::{Builder, ChunkValue};
use super::{ParseError, ParseLimits, ParsedRefs};

/// Why a part of Parquet references could not be fetched.
pub type FetchError = Arc<dyn std::error::Error + Send + Sync>;

/// Most bytes the columns of one record file may decode to.
pub(super) const MAX_PARQUET_DECODED: u64 = 1 << 30;

/// Largest record file read (bytes): far above what `record_size` rows of references take.
pub const MAX_PARQUET_FILE: u64 = 256 << 20;

/// Parses kerchunk's Parquet references: `zmetadata` is the bytes of the directory's
/// `.zmetadata`; `fetch` returns the bytes of a file of the directory by its relative path
/// (`tas/refs.0.parq`), or `None` when it does not exist (its chunks are then not stored, as
/// fsspec reads them). `origin` names the directory in errors.
pub fn parse_parquet_refs(
    zmetadata: &[u8],
    origin: &str,
    limits: ParseLimits,
    fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
) -> Result<ParsedRefs, ParseError> {
    let key_err = |key: &str, reason: String| ParseError::BadKey {
        origin: origin.to_string(),
        key: key.to_string(),
        reason,
    };
    // Written by Python's json module: non-finite floats may be bare NaN, Infinity.
    let doc: Value = serde_json::from_slice(zmetadata).or_else(|e| {
        std::str::from_utf8(zmetadata)
            .ok()
            .and_then(|t| serde_json::from_str(&super::metadata::quote_non_finite(t)).ok())
            .ok_or_else(|| key_err(".zmetadata", format!("not JSON: {e}")))
    })?;
    let record_size = doc
        .get("record_size")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0 && n <= limits.max_references.max(1))
        .ok_or_else(|| {
            key_err(
                ".zmetadata",
                format!(
                    "\"record_size\" is missing or not an integer in 1..={} (Parquet references need it)",
                    limits.max_references
                ),
            )
        })?;
    let Some(Value::Object(metadata)) = doc.get("metadata") else {
        return Err(key_err(".zmetadata", "no \"metadata\" object".into()));
    };
    let meta: Vec<(String, Value)> = metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    drop(doc);
    let mut b = Builder::new(origin, limits, &meta)?;
    drop(meta);
    for (path, n_chunks) in b.v2_array_chunks() {
        let records = (n_chunks as u64).div_ceil(record_size);
        for k in 0..records {
            let file = if path.is_empty() {
                format!("refs.{k}.parq")
            } else {
                format!("{path}/refs.{k}.parq")
            };
            let Some(bytes) = fetch(&file).map_err(|e| ParseError::Part {
                origin: origin.to_string(),
                part: file.clone(),
                source: e,
            })?
            else {
                continue;
            };
            if bytes.len() as u64 > MAX_PARQUET_FILE {
                return Err(key_err(
                    &file,
                    format!(
                        "{} bytes, more than the {MAX_PARQUET_FILE} a record file may have",
                        bytes.len()
                    ),
                ));
            }
            let first = k * record_size;
            // The parquet crate panics on some corrupt files (a dictionary page missing, say)
            // rather than returning an error: such a panic is this file's error, not ours.
            let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read_record(
                    &mut b,
                    &file,
                    bytes,
                    &path,
                    first,
                    n_chunks as u64,
                    record_size,
                )
            }));
            match read {
                Ok(r) => r?,
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown".into());
                    return Err(key_err(
                        &file,
                        format!("corrupt Parquet (the Parquet reader failed: {why})"),
                    ));
                }
            }
        }
    }
    b.finish(Provenance::default(), false)
}

/// The rows of one record file into array `path`'s manifest, starting at chunk `first`.
fn read_record(
    b: &mut Builder<'_>,
    file: &str,
    bytes: Bytes,
    path: &str,
    first: u64,
    n_chunks: u64,
    record_size: u64,
) -> Result<(), ParseError> {
    let origin = b.origin().to_string();
    let bad = |reason: String| ParseError::BadKey {
        origin: origin.clone(),
        key: file.to_string(),
        reason,
    };
    let reader = SerializedFileReader::new(bytes).map_err(|e| bad(format!("not Parquet: {e}")))?;
    let rows = reader.metadata().file_metadata().num_rows();
    if rows < 0 || rows as u64 > record_size {
        return Err(bad(format!(
            "{rows} rows, more than the record size {record_size}"
        )));
    }
    // What the file says its columns decode to, bounded before anything is decoded.
    let decoded: i64 = reader
        .metadata()
        .row_groups()
        .iter()
        .flat_map(|g| g.columns().iter().map(|c| c.uncompressed_size().max(0)))
        .fold(0i64, i64::saturating_add);
    if decoded as u64 > MAX_PARQUET_DECODED {
        return Err(bad(format!(
            "its columns decode to {decoded} bytes, more than the {MAX_PARQUET_DECODED} a record file may"
        )));
    }
    let iter = reader
        .get_row_iter(None)
        .map_err(|e| bad(format!("unreadable rows: {e}")))?;
    // fsspec pads the last record file to `record_size` rows; rows past the array's last
    // chunk are never read (as fsspec never asks for them).
    let wanted = usize::try_from(n_chunks.saturating_sub(first)).unwrap_or(usize::MAX);
    for (i, row) in iter.take(wanted).enumerate() {
        let row = row.map_err(|e| bad(format!("row {i}: {e}")))?;
        let (mut url, mut offset, mut size, mut raw) = (None, 0i64, 0i64, None);
        for (name, field) in row.get_column_iter() {
            match (name.as_str(), field) {
                (_, Field::Null) => {}
                ("path", Field::Str(s)) => url = Some(s.clone()),
                ("path", Field::Bytes(s)) => {
                    url = Some(
                        std::str::from_utf8(s.data())
                            .map_err(|_| bad(format!("row {i}: path is not UTF-8")))?
                            .to_string(),
                    );
                }
                ("offset", Field::Long(v)) => offset = *v,
                ("offset", Field::Int(v)) => offset = i64::from(*v),
                ("size", Field::Long(v)) => size = *v,
                ("size", Field::Int(v)) => size = i64::from(*v),
                ("raw", Field::Bytes(v)) => raw = Some(v.data().to_vec()),
                ("raw", Field::Str(v)) => raw = Some(v.as_bytes().to_vec()),
                ("path" | "offset" | "size" | "raw", other) => {
                    return Err(bad(format!("row {i}: column {name} has the value {other}")));
                }
                _ => {}
            }
        }
        let lin = first + i as u64;
        if raw.is_none() && url.is_none() {
            continue;
        }
        let key = format!("{file} row {i}");
        let lin = lin as usize;
        if let Some(raw) = raw {
            b.set(&key, path, lin, ChunkValue::Inline(raw))?;
            continue;
        }
        let url = url.expect("checked above");
        if offset < 0 || size < 0 {
            return Err(b.bad_key_of(&key, format!("negative offset {offset} or size {size}")));
        }
        let value = if offset == 0 && size == 0 {
            ChunkValue::WholeFile { url: &url }
        } else {
            ChunkValue::Range {
                url: &url,
                offset: offset as u64,
                length: size as u64,
            }
        };
        b.set(&key, path, lin, value)?;
    }
    Ok(())
}
