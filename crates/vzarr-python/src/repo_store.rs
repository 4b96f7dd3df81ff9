//! The key-value side of `vzarr.store.VzarrStore` over an Icechunk repository: one snapshot's
//! documents and commit read when it opens (no manifest: a repository of ten million
//! references opens in the time of its metadata), each chunk's reference looked up in
//! Icechunk's manifests when a key is asked for, and its bytes fetched through vzarr's source
//! stack. The allowed prefixes are vzarr's own rules, as for reference files: the sources the
//! commit records are checked when the store opens, and every source a reference names is
//! checked when it is first opened, before any of its bytes is read (local paths once their
//! links are resolved), whatever virtual chunk containers the repository declares.

use std::ops::Range;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_core::error_chain;
use vzarr_icechunk::{RepoLocation, Snapshot, SnapshotChunk};
use vzarr_kerchunk::{parse_chunk_indices, split_chunk_key};
use vzarr_read::{ReadError, ReadOptions};
use vzarr_source::{SourceError, SourceStore};

use crate::VzarrError;
use crate::open::{reader_options, to_py};
use crate::store::{PyRange, keys_with_prefix, names_below, range_in};

/// What one request resolves to before anything is fetched.
enum Plan {
    Ready(Option<Bytes>),
    Lookup(usize),
}

/// Why a `get_many` failed: a source refused or unreadable (raised as vzarr's `SourceError`
/// classes), or anything else.
enum GetError {
    Source(SourceError),
    Other(String),
}

/// A snapshot of an Icechunk repository opened for zarr-python.
#[pyclass(frozen, module = "vzarr._vzarr")]
pub(crate) struct RepositoryStore {
    snapshot: Snapshot,
    sources: std::sync::Arc<dyn SourceStore>,
    options: ReadOptions,
    location: String,
}

impl RepositoryStore {
    /// The array path and chunk index `key` names, if it is a chunk key of an array.
    fn chunk_of<'k>(&self, key: &'k str) -> Option<(&'k str, Vec<u64>)> {
        let (path, rest) = split_chunk_key(key, |p| self.snapshot.array_paths().any(|a| a == p))?;
        let index = parse_chunk_indices(rest).ok()?;
        self.snapshot
            .has_chunk_index(path, &index)
            .then_some((path, index))
    }

    fn get_many_inner(
        &self,
        requests: &[(String, PyRange)],
    ) -> Result<Vec<Option<Bytes>>, GetError> {
        let other = GetError::Other;
        let mut plans = Vec::with_capacity(requests.len());
        // (array path, chunk index, the request's position)
        let mut lookups: Vec<(&str, Vec<u64>, usize)> = Vec::new();
        for (n, (key, r)) in requests.iter().enumerate() {
            let plan = if let Some(doc) = self.snapshot.documents().get(key) {
                let rr =
                    range_in(*r, doc.len() as u64).map_err(|e| other(format!("{key}: {e}")))?;
                Plan::Ready(Some(doc.slice(rr.start as usize..rr.end as usize)))
            } else if let Some((path, index)) = self.chunk_of(key) {
                lookups.push((path, index, n));
                Plan::Lookup(lookups.len() - 1)
            } else {
                Plan::Ready(None)
            };
            plans.push(plan);
        }
        let keys: Vec<(&str, &[u64])> =
            lookups.iter().map(|(p, i, _)| (*p, i.as_slice())).collect();
        let found = if keys.is_empty() {
            Vec::new()
        } else {
            self.snapshot
                .chunks(&keys)
                .map_err(|e| other(error_chain(&e)))?
        };
        // Each looked-up chunk: bytes at hand, or an index into the fetches.
        let mut fetch: Vec<(&str, Range<u64>)> = Vec::new();
        let mut values: Vec<Option<Result<Bytes, usize>>> = Vec::with_capacity(found.len());
        for (chunk, (_, _, n)) in found.iter().zip(&lookups) {
            let (key, r) = &requests[*n];
            values.push(match chunk {
                SnapshotChunk::Bytes(b) => {
                    let rr =
                        range_in(*r, b.len() as u64).map_err(|e| other(format!("{key}: {e}")))?;
                    Some(Ok(b.slice(rr.start as usize..rr.end as usize)))
                }
                SnapshotChunk::Virtual {
                    url,
                    offset,
                    length,
                    version,
                } => {
                    if let Some(v) = version
                        && !self.options.ignore_stale
                    {
                        // Icechunk's own check of the reference (the source opened once).
                        let src = self.sources.open(url).map_err(GetError::Source)?;
                        v.check(url, src.record()).map_err(GetError::Source)?;
                    }
                    let rr = range_in(*r, *length).map_err(|e| other(format!("{key}: {e}")))?;
                    let (Some(a), Some(b)) =
                        (offset.checked_add(rr.start), offset.checked_add(rr.end))
                    else {
                        return Err(other(format!("{key}: offset + length overflows")));
                    };
                    fetch.push((url.as_str(), a..b));
                    Some(Err(fetch.len() - 1))
                }
                _ => None,
            });
        }
        let mut fetched = if fetch.is_empty() {
            Vec::new()
        } else {
            vzarr_source::read_across(
                self.sources.as_ref(),
                &fetch,
                self.options.concurrency.max(1),
            )
            .map_err(GetError::Source)?
        };
        Ok(plans
            .into_iter()
            .map(|p| match p {
                Plan::Ready(b) => b,
                Plan::Lookup(i) => match values[i].take() {
                    Some(Ok(b)) => Some(b),
                    Some(Err(j)) => Some(std::mem::take(&mut fetched[j])),
                    None => None,
                },
            })
            .collect())
    }

    /// The stored chunks of the array at `path` whose index starts with `head`.
    fn chunk_indices(&self, path: &str, head: &[u64]) -> Result<Vec<Vec<u64>>, String> {
        let all = self
            .snapshot
            .chunk_indices(path, self.options.limits.max_references)
            .map_err(|e| error_chain(&e))?;
        Ok(all.into_iter().filter(|i| i.starts_with(head)).collect())
    }

    fn error(&self, e: GetError) -> PyErr {
        match e {
            GetError::Source(e) => to_py(&ReadError::from(e), &self.location),
            GetError::Other(m) => VzarrError::new_err(format!("{}: {m}", self.location)),
        }
    }
}

#[pymethods]
impl RepositoryStore {
    /// Opens snapshot `snapshot` (an id), or the tip of `branch`, of the repository at
    /// `location` (a path or an s3://, gs://, az:// URL): its documents and the provenance of
    /// its commit, whose sources are checked against the allowed prefixes now
    /// (`allow_prefixes`, `VZARR_ALLOW_PREFIXES`, the configuration file; the prefixes the
    /// commit records only narrow these, unless `trust_references`). Raises `NotAllowedError`
    /// for a refused source.
    #[new]
    ///
    /// Unless `ignore_stale`, a source the commit records is refused (`StaleSourceError`,
    /// before any of its bytes is used) when its size, modification time or ETag changed
    /// since, and so is one whose ETag or modification time differs from the checksum a
    /// chunk's reference carries (Icechunk's own check, for repositories vzarr did not
    /// write). `environment` as for `ReferenceStore`.
    #[pyo3(signature = (location, *, branch, snapshot, allow_prefixes, trust_references,
                        ignore_stale=false, environment=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        location: String,
        branch: String,
        snapshot: Option<String>,
        allow_prefixes: Vec<String>,
        trust_references: bool,
        ignore_stale: bool,
        environment: bool,
    ) -> PyResult<Self> {
        let opened = crate::guard::detach(py, &location, || -> Result<_, PyErrKind> {
            let options =
                reader_options(allow_prefixes, trust_references, ignore_stale, environment)
                    .map_err(PyErrKind::Read)?;
            let loc =
                RepoLocation::parse(&location).map_err(|e| PyErrKind::Other(error_chain(&e)))?;
            let snap = Snapshot::open(&loc, &branch, snapshot.as_deref())
                .map_err(|e| PyErrKind::Other(error_chain(&e)))?;
            let sources =
                vzarr_read::open_sources(snap.provenance(), &options).map_err(PyErrKind::Read)?;
            Ok((snap, sources, options))
        })?;
        let (snapshot, sources, options) = opened.map_err(|e| match e {
            PyErrKind::Read(e) => to_py(&e, &location),
            PyErrKind::Other(m) => VzarrError::new_err(format!("{location}: {m}")),
        })?;
        Ok(RepositoryStore {
            snapshot,
            sources,
            options,
            location,
        })
    }

    /// Where the repository is.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// The id of the snapshot read.
    #[getter]
    fn snapshot(&self) -> &str {
        self.snapshot.id()
    }

    /// What identifies the values read: the snapshot's id (a snapshot never changes).
    #[getter]
    fn stamp(&self) -> &str {
        self.snapshot.id()
    }

    /// The values of `requests` (`(key, range)`, as for `ReferenceStore.get_many`), `None`
    /// for a key that names nothing or a chunk not stored; references looked up in the
    /// manifests, chunks of sources fetched concurrently, nearby ranges of one source in one
    /// request.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        requests: Vec<(String, PyRange)>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let got = crate::guard::detach(py, &self.location, || self.get_many_inner(&requests))?
            .map_err(|e| self.error(e))?;
        Ok(got
            .into_iter()
            .map(|b| b.map(|b| PyBytes::new(py, &b)))
            .collect())
    }

    /// The keys of the metadata documents (`zarr.json`, `path/zarr.json`), sorted.
    fn document_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.snapshot.documents().keys().cloned().collect();
        v.sort();
        v
    }

    /// Whether `key` holds a value (a document or a stored chunk).
    fn exists(&self, py: Python<'_>, key: &str) -> PyResult<bool> {
        if self.snapshot.documents().contains_key(key) {
            return Ok(true);
        }
        let Some((path, index)) = self.chunk_of(key) else {
            return Ok(false);
        };
        let found = crate::guard::detach(py, &self.location, || {
            self.snapshot.chunks(&[(path, index.as_slice())])
        })?
        .map_err(|e| VzarrError::new_err(format!("{}: {}", self.location, error_chain(&e))))?;
        Ok(found.first().is_some_and(|c| *c != SnapshotChunk::Missing))
    }

    /// Every key starting with `prefix`, documents first, then each array's chunk keys.
    fn list_prefix(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        crate::guard::detach(py, &self.location, || {
            keys_with_prefix(
                prefix,
                self.snapshot.documents().keys(),
                self.snapshot.array_paths(),
                |path, head| self.chunk_indices(path, head),
            )
        })?
        .map_err(|m| VzarrError::new_err(format!("{}: {m}", self.location)))
    }

    /// The names directly below `prefix` (a directory: `""` the root, `"tas"`, `"tas/c/0"`),
    /// sorted.
    fn list_dir(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        crate::guard::detach(py, &self.location, || {
            names_below(
                prefix,
                self.snapshot.documents().keys(),
                self.snapshot.array_paths(),
                |path| {
                    self.snapshot
                        .stores_chunks(path)
                        .map_err(|e| error_chain(&e))
                },
                |path, head| self.chunk_indices(path, head),
            )
        })?
        .map_err(|m| VzarrError::new_err(format!("{}: {m}", self.location)))
    }
}

/// An opening error, before it becomes a Python exception (outside the GIL).
enum PyErrKind {
    Read(ReadError),
    Other(String),
}
