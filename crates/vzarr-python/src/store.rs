//! The key-value side of `vzarr.store.VzarrStore` (zarr-python's `Store` over a reference
//! file): references parsed once in Rust (about 20 bytes a reference, no Python object per
//! reference), keys resolved to documents and chunks, chunk bytes fetched through the
//! reader's source stack (allowed prefixes checked for every URL at open, before anything is
//! read), many keys at once, concurrently and with nearby ranges coalesced, the GIL released.
//! kerchunk's Parquet references are opened lazily: `.zmetadata` at open, an array's record
//! files (its URLs checked then) when a chunk key of it is first asked for, and kept.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_core::{ChunkRef, chunk_key};
use vzarr_read::{KeyTarget, ReadError, Reader, resolve_key};

use crate::VzarrError;
use crate::open::{reader_options, to_py};

/// A byte range as zarr-python asks for one: `(0, start, end)`, `(1, offset, 0)` (from offset
/// to the end) or `(2, n, 0)` (the last `n` bytes); `None`: the whole value.
pub(crate) type PyRange = Option<(u8, u64, u64)>;

/// The absolute range of `r` inside a value of `len` bytes, as zarr-python's stores serve it:
/// a range reaching past the end is cut at the end, a suffix longer than the value is the
/// whole value; a range starting past the end is an error.
pub(crate) fn range_in(r: PyRange, len: u64) -> Result<Range<u64>, String> {
    let out = match r {
        None => Some(0..len),
        Some((0, s, e)) => (s <= e && s <= len).then(|| s..e.min(len)),
        Some((1, o, _)) => (o <= len).then_some(o..len),
        Some((2, n, _)) => Some(len - n.min(len)..len),
        Some((k, ..)) => return Err(format!("unknown byte range kind {k}")),
    };
    out.ok_or_else(|| format!("byte range {r:?} starts past the value's {len} bytes"))
}

/// Why a batch of keys could not be served: reading (typed: a refused URL is
/// `NotAllowedError`), or a request that does not fit its value.
enum GetError {
    Read(ReadError),
    Other(String),
}

impl From<String> for GetError {
    fn from(e: String) -> Self {
        GetError::Other(e)
    }
}

/// What one request resolves to before anything is fetched.
enum Plan {
    Ready(Option<Bytes>),
    Fetch(usize),
}

/// A reference file opened for zarr-python: what its keys name and the sources behind it.
#[pyclass(frozen, module = "vzarr._vzarr")]
pub(crate) struct ReferenceStore {
    reader: Arc<Reader>,
    location: String,
    /// The reference file's size, modification time (ns) and ETag when opened.
    stamp: (u64, Option<i128>, Option<String>),
}

impl ReferenceStore {
    fn get_many_inner(
        &self,
        requests: &[(String, PyRange)],
    ) -> Result<Vec<Option<Bytes>>, GetError> {
        let refs = self.reader.refs();
        let mut plans = Vec::with_capacity(requests.len());
        let mut fetch: Vec<(&str, Range<u64>)> = Vec::new();
        for (key, r) in requests {
            let plan = match resolve_key(refs, key) {
                KeyTarget::Document(doc) => {
                    let rr = range_in(*r, doc.len() as u64).map_err(|e| format!("{key}: {e}"))?;
                    Plan::Ready(Some(doc.slice(rr.start as usize..rr.end as usize)))
                }
                KeyTarget::Chunk { path, lin } => {
                    // Lazy Parquet references: the array's record files read here, once.
                    let manifest = self.reader.manifest(path).map_err(GetError::Read)?;
                    match manifest.get(lin) {
                        ChunkRef::Missing => Plan::Ready(None),
                        ChunkRef::Inline(b) => {
                            let rr =
                                range_in(*r, b.len() as u64).map_err(|e| format!("{key}: {e}"))?;
                            Plan::Ready(Some(Bytes::copy_from_slice(
                                &b[rr.start as usize..rr.end as usize],
                            )))
                        }
                        ChunkRef::Range {
                            source,
                            offset,
                            length,
                        } => {
                            let rr = range_in(*r, length).map_err(|e| format!("{key}: {e}"))?;
                            let (Some(a), Some(b)) =
                                (offset.checked_add(rr.start), offset.checked_add(rr.end))
                            else {
                                return Err(GetError::Other(format!(
                                    "{key}: offset + length overflows"
                                )));
                            };
                            fetch.push((source, a..b));
                            Plan::Fetch(fetch.len() - 1)
                        }
                    }
                }
                _ => Plan::Ready(None),
            };
            plans.push(plan);
        }
        let mut fetched = if fetch.is_empty() {
            Vec::new()
        } else {
            vzarr_source::read_across(
                self.reader.direct_sources().as_ref(),
                &fetch,
                self.reader.options().concurrency.max(1),
            )
            .map_err(|e| GetError::Read(ReadError::from(e)))?
        };
        Ok(plans
            .into_iter()
            .map(|p| match p {
                Plan::Ready(b) => b,
                Plan::Fetch(i) => Some(std::mem::take(&mut fetched[i])),
            })
            .collect())
    }

    /// The chunk keys of stored chunks of the array at `path` whose index starts with `head`
    /// (the array loaded first, for lazy Parquet references).
    fn chunk_indices(&self, path: &str, head: &[u64]) -> Result<Vec<Vec<u64>>, ReadError> {
        let array = &self.reader.refs().dataset.arrays[path];
        let manifest = self.reader.manifest(path)?;
        let mut idx = Vec::new();
        let mut out = Vec::new();
        for (i, c) in manifest.iter_stored() {
            if c == ChunkRef::Missing {
                continue;
            }
            array.grid.chunk_index_into(i as u64, &mut idx);
            if idx.starts_with(head) {
                out.push(idx.clone());
            }
        }
        Ok(out)
    }
}

/// `prefix` as a key prefix: empty for the root, else ending with `/`.
fn dir_prefix(prefix: &str) -> String {
    let p = prefix.trim_matches('/');
    if p.is_empty() {
        String::new()
    } else {
        format!("{p}/")
    }
}

#[pymethods]
impl ReferenceStore {
    /// Opens the reference file at `location` (a path or URL) and checks every URL it names
    /// against the allowed prefixes (`allow_prefixes`, `VZARR_ALLOW_PREFIXES`, the
    /// configuration file; those the references record only narrow these, unless
    /// `trust_references`). Raises `NotAllowedError` for a refused reference.
    #[new]
    ///
    /// Unless `ignore_stale`, a source the references record is refused (`StaleSourceError`,
    /// before any of its bytes is used) when its size, modification time or ETag changed since.
    /// `environment`: add the prefixes of the environment and the configuration file (false
    /// when `allow_prefixes` already holds them, resolved where the store was first made).
    #[pyo3(signature = (location, *, allow_prefixes, trust_references, ignore_stale=false,
                        environment=true))]
    fn new(
        py: Python<'_>,
        location: String,
        allow_prefixes: Vec<String>,
        trust_references: bool,
        ignore_stale: bool,
        environment: bool,
    ) -> PyResult<Self> {
        let opened = crate::guard::detach(py, &location, || -> Result<_, ReadError> {
            let opts = reader_options(allow_prefixes, trust_references, ignore_stale, environment)?;
            // A reference file, or kerchunk's Parquet references (local or on object
            // storage; stamped by their .zmetadata, opened lazily: an array's record files
            // when first needed), found as every reader finds them.
            let located = vzarr_read::locate(&location)?;
            let rec = located.record();
            let stamp = (rec.size, rec.mtime_ns, rec.etag.clone());
            let reader = vzarr_read::open_located(located, &location, opts)?;
            Ok((reader, stamp))
        })?;
        let (reader, stamp) = opened.map_err(|e| to_py(&e, &location))?;
        Ok(ReferenceStore {
            reader: Arc::new(reader),
            location,
            stamp,
        })
    }

    /// Where the references were opened from.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// The reference file's size, modification time (ns since the epoch) and ETag when opened.
    #[getter]
    fn stamp(&self) -> (u64, Option<i128>, Option<String>) {
        self.stamp.clone()
    }

    /// Chunk references (stored chunks) the store holds (of Parquet references, every
    /// array's record files are read for it).
    #[getter]
    fn references(&self, py: Python<'_>) -> PyResult<u64> {
        crate::guard::detach(py, &self.location, || {
            let mut n = 0u64;
            for path in self.reader.dataset().arrays.keys() {
                n += self.reader.manifest(path)?.stored() as u64;
            }
            Ok(n)
        })?
        .map_err(|e: ReadError| to_py(&e, &self.location))
    }

    /// The values of `requests` (`(key, range)`; see the module), `None` for a key that names
    /// nothing or a chunk not stored; chunks of sources fetched concurrently, nearby ranges
    /// of one source in one request.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        requests: Vec<(String, PyRange)>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let got = crate::guard::detach(py, &self.location, || self.get_many_inner(&requests))?
            .map_err(|e| match e {
                GetError::Read(e) => to_py(&e, &self.location),
                GetError::Other(e) => VzarrError::new_err(format!("{}: {e}", self.location)),
            })?;
        Ok(got
            .into_iter()
            .map(|b| b.map(|b| PyBytes::new(py, &b)))
            .collect())
    }

    /// The keys of the metadata documents (`zarr.json`, `path/zarr.json`), sorted.
    fn document_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.reader.refs().documents.keys().cloned().collect();
        v.sort();
        v
    }

    /// Whether `key` holds a value (a document or a stored chunk).
    fn exists(&self, py: Python<'_>, key: &str) -> PyResult<bool> {
        crate::guard::detach(py, &self.location, || {
            match resolve_key(self.reader.refs(), key) {
                KeyTarget::Document(_) => Ok(true),
                KeyTarget::Chunk { path, lin } => {
                    Ok(self.reader.manifest(path)?.get(lin) != ChunkRef::Missing)
                }
                _ => Ok(false),
            }
        })?
        .map_err(|e: ReadError| to_py(&e, &self.location))
    }

    /// Every key starting with `prefix`, documents first, then each array's chunk keys in C
    /// order.
    fn list_prefix(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        crate::guard::detach(py, &self.location, || {
            let refs = self.reader.refs();
            keys_with_prefix(
                prefix,
                refs.documents.keys(),
                refs.dataset.arrays.keys().map(String::as_str),
                |path, head| self.chunk_indices(path, head),
            )
        })?
        .map_err(|e| to_py(&e, &self.location))
    }

    /// The names directly below `prefix` (a directory: `""` the root, `"tas"`, `"tas/c/0"`),
    /// sorted.
    fn list_dir(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        crate::guard::detach(py, &self.location, || {
            let refs = self.reader.refs();
            names_below(
                prefix,
                refs.documents.keys(),
                refs.dataset.arrays.keys().map(String::as_str),
                |path| Ok(self.reader.manifest(path)?.stored() > 0),
                |path, head| self.chunk_indices(path, head),
            )
        })?
        .map_err(|e| to_py(&e, &self.location))
    }
}

/// Every key starting with `prefix`: the documents' (sorted), then each array's chunk keys
/// (`indices(path, head)`: the stored chunks of the array at `path` whose index starts with
/// `head`) in the order `indices` gives them.
pub(crate) fn keys_with_prefix<'a, E>(
    prefix: &str,
    documents: impl Iterator<Item = &'a String>,
    arrays: impl Iterator<Item = &'a str>,
    indices: impl Fn(&str, &[u64]) -> Result<Vec<Vec<u64>>, E>,
) -> Result<Vec<String>, E> {
    let mut out: Vec<String> = documents
        .filter(|k| k.starts_with(prefix))
        .cloned()
        .collect();
    out.sort();
    let mut arrays: Vec<&str> = arrays.collect();
    arrays.sort_unstable();
    for path in arrays {
        let base = chunk_key(path, &[]);
        if !(base.starts_with(prefix) || prefix.starts_with(base.as_str())) {
            continue;
        }
        for idx in indices(path, &[])? {
            let k = chunk_key(path, &idx);
            if k.starts_with(prefix) {
                out.push(k);
            }
        }
    }
    Ok(out)
}

/// The names directly below the directory `prefix` (`""` the root, `"tas"`, `"tas/c/0"`),
/// sorted: of the documents' keys, and of the arrays' chunk keys (`indices` as for
/// [`keys_with_prefix`]; `stored(path)`: whether the array at `path` stores any chunk, asked
/// only where the documents do not already give the name).
pub(crate) fn names_below<'a, E>(
    prefix: &str,
    documents: impl Iterator<Item = &'a String>,
    arrays: impl Iterator<Item = &'a str>,
    stored: impl Fn(&str) -> Result<bool, E>,
    indices: impl Fn(&str, &[u64]) -> Result<Vec<Vec<u64>>, E>,
) -> Result<Vec<String>, E> {
    let pfx = dir_prefix(prefix);
    let mut out = BTreeSet::new();
    let first = |rest: &str| rest.split('/').next().unwrap_or(rest).to_string();
    for k in documents {
        if let Some(rest) = k.strip_prefix(pfx.as_str()) {
            out.insert(first(rest));
        }
    }
    for path in arrays {
        let base = chunk_key(path, &[]);
        if let Some(rest) = base.strip_prefix(pfx.as_str()) {
            let name = first(rest);
            // Listed already when the array's document is below `prefix` too.
            if !out.contains(&name) && stored(path)? {
                out.insert(name);
            }
        } else if let Some(rest) = pfx.strip_prefix(&format!("{base}/")) {
            let head: Option<Vec<u64>> = rest
                .trim_end_matches('/')
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().ok())
                .collect();
            let Some(head) = head else { continue };
            for idx in indices(path, &head)? {
                if let Some(v) = idx.get(head.len()) {
                    out.insert(v.to_string());
                }
            }
        }
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_zarr_python_serves_them() {
        assert_eq!(range_in(None, 5).unwrap(), 0..5);
        assert_eq!(range_in(Some((0, 1, 3)), 5).unwrap(), 1..3);
        assert_eq!(range_in(Some((0, 1, 9)), 5).unwrap(), 1..5);
        assert_eq!(range_in(Some((1, 5, 0)), 5).unwrap(), 5..5);
        assert_eq!(range_in(Some((2, 2, 0)), 5).unwrap(), 3..5);
        assert_eq!(range_in(Some((2, 9, 0)), 5).unwrap(), 0..5);
        assert!(range_in(Some((0, 6, 7)), 5).is_err());
        assert!(range_in(Some((0, 3, 2)), 5).is_err());
        assert!(range_in(Some((1, 6, 0)), 5).is_err());
        assert!(range_in(Some((7, 0, 0)), 5).is_err());
    }
}
