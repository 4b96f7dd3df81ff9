//! kerchunk's Parquet references, as fsspec's `LazyReferenceMapper` writes and reads them
//! (kerchunk specification, <https://fsspec.github.io/kerchunk/spec.html>, "Parquet
//! references"): a directory holding `.zmetadata`, a JSON object
//! `{"metadata": {<every Zarr metadata key>: <document>}, "record_size": N}`, and per array
//! `<array>/refs.<k>.parq`, Parquet files of `record_size` rows each with the columns `path`
//! (URL, null for a chunk not stored), `offset`, `size` and `raw` (inline bytes, taking
//! precedence). Row `i` of file `k` is the chunk numbered `k * record_size + i` in C order over
//! the chunk grid; `offset` and `size` both 0 mean the whole file.
//!
//! Read lazily, as fsspec reads them: [`ParquetRecords::open`] parses `.zmetadata` alone into
//! the dataset (every manifest empty) and what is needed to read the record files later,
//! counting them (bounded by `ParseLimits::max_record_files` before any is named);
//! [`ParquetRecords::load_record`] reads one record file (for a reader that needs a few
//! chunks), [`ParquetRecords::load_array`] one array's record files, one at a time through
//! the caller's fetcher (so a reader of local files and object storage alike, under its own
//! policy), their rows straight into a manifest through the same builder logic as JSON
//! references; no file is held after its rows. [`parse_parquet_refs`] is the same, every
//! array loaded.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::Page;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;
use vzarr_core::{ChunkManifest, Provenance};

use super::builder::{Builder, ChunkValue, set_chunk};
use super::whole_files::WholeFiles;
use super::{ParseError, ParseLimits, ParsedRefs};

/// Why a part of Parquet references could not be fetched.
pub type FetchError = Arc<dyn std::error::Error + Send + Sync>;

/// Most bytes the columns of one record file may decode to.
pub(super) const MAX_PARQUET_DECODED: u64 = 1 << 30;

/// Largest record file read (bytes): far above what `record_size` rows of references take.
pub const MAX_PARQUET_FILE: u64 = 256 << 20;

/// Parses kerchunk's Parquet references whole: `zmetadata` is the bytes of the directory's
/// `.zmetadata`; `fetch` returns the bytes of a file of the directory by its relative path
/// (`tas/refs.0.parq`), or `None` when it does not exist (its chunks are then not stored, as
/// fsspec reads them). `origin` names the directory in errors. The same as
/// [`ParquetRecords::open`] followed by [`ParquetRecords::load_all`].
pub fn parse_parquet_refs(
    zmetadata: &[u8],
    origin: &str,
    limits: ParseLimits,
    fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
) -> Result<ParsedRefs, ParseError> {
    let (refs, records) = ParquetRecords::open(zmetadata, origin, limits)?;
    records.load_all(refs, fetch, &mut |_| Ok(()))
}

/// What reading the record files of Parquet references needs once `.zmetadata` is parsed:
/// the arrays whose chunks they hold (with their counts of chunks and of record files), the
/// record size, the limits, and the references loaded so far (counted against
/// `max_references` over every whole-array load). Shared by threads: loads of different
/// arrays may run at once.
#[derive(Debug)]
pub struct ParquetRecords {
    origin: String,
    limits: ParseLimits,
    record_size: u64,
    /// Array path -> its counts.
    arrays: BTreeMap<String, Counts>,
    references: AtomicU64,
}

/// An array's chunks and the record files that hold them.
#[derive(Clone, Copy, Debug)]
struct Counts {
    chunks: u64,
    files: u64,
}

/// One record file of an array, read ([`ParquetRecords::load_record`]): the chunks it holds,
/// the chunk numbered `first` in the array (C order) at index 0 of `manifest`.
#[derive(Debug)]
#[non_exhaustive]
pub struct RecordPart {
    /// The array's chunk number of the part's first chunk.
    pub first: u64,
    /// The part's chunks (`record_size` of them, fewer in the array's last record file).
    pub manifest: ChunkManifest,
    /// Its whole-file chunks (offset and size 0), by their index in `manifest`, to be set
    /// once their files' sizes are known ([`WholeFiles::resolve_manifest`]).
    pub whole: WholeFiles,
}

impl ParquetRecords {
    /// Parses `.zmetadata` (its bytes `zmetadata`) alone: the references with every array's
    /// manifest empty (no record file read), and what reads the record files later. `origin`
    /// names the directory in errors. The record files are counted here (chunks over
    /// `record_size`, per array, checked) and refused beyond `limits.max_record_files`,
    /// before any is named.
    pub fn open(
        zmetadata: &[u8],
        origin: &str,
        limits: ParseLimits,
    ) -> Result<(ParsedRefs, ParquetRecords), ParseError> {
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
        let b = Builder::new(origin, limits, &meta)?;
        drop(meta);
        let mut arrays = BTreeMap::new();
        let mut files_in_all: u64 = 0;
        for (path, chunks) in b.v2_array_chunks() {
            let chunks = chunks as u64;
            let files = chunks.div_ceil(record_size);
            let max = limits.max_record_files;
            match files_in_all.checked_add(files) {
                Some(n) if n <= max => files_in_all = n,
                _ => {
                    let with = if files_in_all > 0 {
                        format!(
                            " ({} with the arrays before it)",
                            files_in_all.saturating_add(files)
                        )
                    } else {
                        String::new()
                    };
                    return Err(key_err(
                        ".zmetadata",
                        format!(
                            "array {path:?} has {chunks} chunks in {files} record files of {record_size} rows{with}, more than the {max} record files Parquet references may have (limit max_record_files, default {})",
                            super::MAX_RECORD_FILES
                        ),
                    ));
                }
            }
            arrays.insert(path, Counts { chunks, files });
        }
        let refs = b.finish(Provenance::default(), false)?;
        Ok((
            refs,
            ParquetRecords {
                origin: origin.to_string(),
                limits,
                record_size,
                arrays,
                references: AtomicU64::new(0),
            },
        ))
    }

    /// Whether the chunks of the array at `path` are in record files (read by
    /// [`ParquetRecords::load_array`]); other arrays' manifests are whole as opened.
    pub fn holds(&self, path: &str) -> bool {
        self.arrays.contains_key(path)
    }

    /// The arrays whose chunks are in record files, sorted.
    pub fn arrays(&self) -> impl Iterator<Item = &str> {
        self.arrays.keys().map(String::as_str)
    }

    /// Rows per record file (`record_size`): chunk `lin` of an array is in its record file
    /// `lin / record_size`.
    pub fn record_size(&self) -> u64 {
        self.record_size
    }

    /// How many record files the array at `path` has (0 for an array not held): at most
    /// `max_record_files` over every array.
    pub fn record_count(&self, path: &str) -> u64 {
        self.arrays.get(path).map_or(0, |c| c.files)
    }

    /// The name of record file `k` of the array at `path`, relative to the directory.
    pub fn record_file(&self, path: &str, k: u64) -> String {
        if path.is_empty() {
            format!("refs.{k}.parq")
        } else {
            format!("{path}/refs.{k}.parq")
        }
    }

    /// The record files of the array at `path` (relative to the directory, in order), none for
    /// an array not held. There are at most `max_record_files` of them.
    pub fn record_files(&self, path: &str) -> Vec<String> {
        (0..self.record_count(path))
            .map(|k| self.record_file(path, k))
            .collect()
    }

    /// Where the references came from, as errors name them.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Chunk entries loaded so far by whole-array loads, over every array.
    pub fn references(&self) -> u64 {
        self.references.load(Ordering::Relaxed)
    }

    /// The counts of the array at `path`, or the error of an array not held.
    fn counts(&self, path: &str) -> Result<Counts, ParseError> {
        self.arrays
            .get(path)
            .copied()
            .ok_or_else(|| ParseError::Malformed {
                origin: self.origin.clone(),
                reason: format!("no array {path:?} with record files"),
            })
    }

    /// Reads the record file `k` of the array at `path` through `fetch` (as for
    /// [`parse_parquet_refs`]) alone: the chunks it holds, for a reader that needs a few
    /// chunks rather than the array. `check` is asked about every distinct URL as the rows
    /// first name it (its error is the record file's, [`ParseError::Part`]). Its entries are
    /// not counted in [`ParquetRecords::references`]: the caller bounds what it keeps. A
    /// record file that does not exist holds no chunk.
    pub fn load_record(
        &self,
        path: &str,
        k: u64,
        fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
        check: &mut dyn FnMut(&str) -> Result<(), FetchError>,
    ) -> Result<RecordPart, ParseError> {
        let counts = self.counts(path)?;
        if k >= counts.files {
            return Err(ParseError::Malformed {
                origin: self.origin.clone(),
                reason: format!(
                    "array {path:?} has {} record files, not a record file {k}",
                    counts.files
                ),
            });
        }
        // k < files = ceil(chunks / record_size): first < chunks.
        let first = k * self.record_size;
        let rows = (counts.chunks - first).min(self.record_size);
        let mut manifest = ChunkManifest::new_missing(rows as usize);
        let mut whole = WholeFiles::default();
        let file = self.record_file(path, k);
        self.read_file(path, k, counts.chunks, fetch, &mut |key, lin, value| {
            let (known, known_whole) = (manifest.sources().len(), whole.urls().len());
            let bad = |reason: String| self.key_err(key, reason);
            set_chunk(
                &mut manifest,
                &mut whole,
                path,
                (lin as u64 - first) as usize,
                value,
                bad,
            )?;
            self.check_new(&manifest, &whole, known, known_whole, &file, check)
        })?;
        Ok(RecordPart {
            first,
            manifest,
            whole,
        })
    }

    fn key_err(&self, key: &str, reason: String) -> ParseError {
        ParseError::BadKey {
            origin: self.origin.clone(),
            key: key.to_string(),
            reason,
        }
    }

    /// Asks `check` about the URL a chunk just set brought into `manifest` or `whole` (those
    /// past `known` and `known_whole`), if any; its error is `file`'s.
    fn check_new(
        &self,
        manifest: &ChunkManifest,
        whole: &WholeFiles,
        known: usize,
        known_whole: usize,
        file: &str,
        check: &mut dyn FnMut(&str) -> Result<(), FetchError>,
    ) -> Result<(), ParseError> {
        let new = manifest.sources().get(known..).and_then(|s| s.first());
        let new_whole = whole.urls().get(known_whole..).and_then(|s| s.first());
        if let Some(url) = new.map(|u| &**u).or(new_whole.map(String::as_str)) {
            check(url).map_err(|source| ParseError::Part {
                origin: self.origin.clone(),
                part: file.to_string(),
                source,
            })?;
        }
        Ok(())
    }

    /// Fetches record file `k` of the array at `path` (of `n_chunks` chunks) and hands its
    /// rows to `set` (key naming the row, the chunk's number in the array, value). Nothing
    /// for a file that does not exist.
    fn read_file(
        &self,
        path: &str,
        k: u64,
        n_chunks: u64,
        fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
        set: &mut dyn FnMut(&str, usize, ChunkValue<'_>) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        let file = self.record_file(path, k);
        let Some(bytes) = fetch(&file).map_err(|e| ParseError::Part {
            origin: self.origin.clone(),
            part: file.clone(),
            source: e,
        })?
        else {
            return Ok(());
        };
        if bytes.len() as u64 > MAX_PARQUET_FILE {
            return Err(self.key_err(
                &file,
                format!(
                    "{} bytes, more than the {MAX_PARQUET_FILE} a record file may have",
                    bytes.len()
                ),
            ));
        }
        let first = k * self.record_size;
        // The parquet crate panics on some corrupt files rather than returning an error; what
        // is known of it is checked first (`check_layout`), and a panic left is this file's
        // error, caught here without touching the process's panic hook (which still sees it).
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            read_record(
                &self.origin,
                &file,
                bytes,
                first,
                n_chunks,
                self.record_size,
                set,
            )
        }));
        match read {
            Ok(r) => r,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown".into());
                Err(self.key_err(
                    &file,
                    format!("corrupt Parquet (the Parquet reader failed: {why})"),
                ))
            }
        }
    }

    /// Reads the record files of the array at `path` through `fetch` (as for
    /// [`parse_parquet_refs`]) into its manifest. `check` is asked about every distinct URL
    /// as the rows first name it (a reader's allowed-prefix policy, say); its error is the
    /// record file's ([`ParseError::Part`], the cause kept). Errors name the record file; the
    /// chunk entries count against `max_references` with every array loaded before (a failed
    /// load counts nothing). Whole-file chunks (offset and size 0) come apart, to be set once
    /// their files' sizes are known ([`WholeFiles::resolve_manifest`]).
    pub fn load_array(
        &self,
        path: &str,
        fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
        check: &mut dyn FnMut(&str) -> Result<(), FetchError>,
    ) -> Result<(ChunkManifest, WholeFiles), ParseError> {
        let counts = self.counts(path)?;
        let n_chunks = usize::try_from(counts.chunks).map_err(|_| ParseError::Malformed {
            origin: self.origin.clone(),
            reason: format!("array {path:?}: {} chunks", counts.chunks),
        })?;
        let mut manifest = ChunkManifest::new_missing(n_chunks);
        let mut whole = WholeFiles::default();
        let before = self.references();
        let mut loaded: u64 = 0;
        let max = self.limits.max_references;
        for k in 0..counts.files {
            let file = self.record_file(path, k);
            self.read_file(path, k, counts.chunks, fetch, &mut |key, lin, value| {
                loaded += 1;
                if before.saturating_add(loaded) > max {
                    return Err(self.key_err(
                        key,
                        format!("the references hold more than {max} chunks in all"),
                    ));
                }
                let (known, known_whole) = (manifest.sources().len(), whole.urls().len());
                let bad = |reason: String| self.key_err(key, reason);
                set_chunk(&mut manifest, &mut whole, path, lin, value, bad)?;
                self.check_new(&manifest, &whole, known, known_whole, &file, check)
            })?;
        }
        // Counted once the array is whole; loads running at once are bounded together here.
        let total = self.references.fetch_add(loaded, Ordering::Relaxed) + loaded;
        if total > max {
            self.references.fetch_sub(loaded, Ordering::Relaxed);
            return Err(self.key_err(
                path,
                format!("the references hold more than {max} chunks in all"),
            ));
        }
        Ok((manifest, whole))
    }

    /// `refs` (as [`ParquetRecords::open`] gave them) with every array's record files read
    /// into its manifest ([`ParquetRecords::load_array`]), in path order; the first error
    /// stops.
    pub fn load_all(
        self,
        mut refs: ParsedRefs,
        fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
        check: &mut dyn FnMut(&str) -> Result<(), FetchError>,
    ) -> Result<ParsedRefs, ParseError> {
        for path in self.arrays.keys() {
            let (manifest, whole) = self.load_array(path, fetch, check)?;
            if let Some(array) = refs.dataset.arrays.get_mut(path) {
                array.manifest = manifest;
            }
            refs.whole_files.append(whole);
        }
        Ok(refs)
    }
}

/// Checks what the parquet crate would otherwise panic on (it asserts these rather than
/// returning an error): every column chunk inside the file (offsets and sizes not negative),
/// and no data page in a dictionary encoding before its column's dictionary page. The pages
/// are read for that (decompressed once more); what they decode to is bounded by the caller.
fn check_layout(reader: &SerializedFileReader<Bytes>, len: u64) -> Result<(), String> {
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        for (j, c) in group.columns().iter().enumerate() {
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let size = c.compressed_size();
            let inside = u64::try_from(start)
                .ok()
                .zip(u64::try_from(size).ok())
                .and_then(|(s, n)| s.checked_add(n))
                .is_some_and(|end| end <= len);
            if !inside || c.data_page_offset() < 0 {
                return Err(format!(
                    "row group {g}, column {j}: {size} bytes at offset {start}, outside the file's {len} bytes"
                ));
            }
        }
    }
    for g in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(g)
            .map_err(|e| format!("row group {g}: {e}"))?;
        for j in 0..group.num_columns() {
            let mut pages = group
                .get_column_page_reader(j)
                .map_err(|e| format!("row group {g}, column {j}: {e}"))?;
            let mut dictionary = false;
            while let Some(page) = pages
                .get_next_page()
                .map_err(|e| format!("row group {g}, column {j}: {e}"))?
            {
                let encoding = match &page {
                    Page::DictionaryPage { .. } => {
                        dictionary = true;
                        continue;
                    }
                    Page::DataPage { encoding, .. } | Page::DataPageV2 { encoding, .. } => {
                        *encoding
                    }
                };
                if matches!(
                    encoding,
                    Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
                ) && !dictionary
                {
                    return Err(format!(
                        "row group {g}, column {j}: a dictionary-encoded page and no dictionary page before it"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The rows of one record file, starting at chunk `first`, each given to `set` (key naming
/// the row, linear index, value).
fn read_record(
    origin: &str,
    file: &str,
    bytes: Bytes,
    first: u64,
    n_chunks: u64,
    record_size: u64,
    set: &mut dyn FnMut(&str, usize, ChunkValue<'_>) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let bad = |reason: String| ParseError::BadKey {
        origin: origin.to_string(),
        key: file.to_string(),
        reason,
    };
    let len = bytes.len() as u64;
    let reader = SerializedFileReader::new(bytes).map_err(|e| bad(format!("not Parquet: {e}")))?;
    check_layout(&reader, len).map_err(bad)?;
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
            set(&key, lin, ChunkValue::Inline(raw))?;
            continue;
        }
        let url = url.expect("checked above");
        if offset < 0 || size < 0 {
            return Err(ParseError::BadKey {
                origin: origin.to_string(),
                key,
                reason: format!("negative offset {offset} or size {size}"),
            });
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
        set(&key, lin, value)?;
    }
    Ok(())
}
