//! kerchunk's Parquet references read lazily, as fsspec's `LazyReferenceMapper` reads them:
//! opening reads `.zmetadata` alone; a read of some chunks reads the record files that hold
//! them, one file at a time ([`LazyRecords::chunk`]), every URL they hold checked against the
//! reader's allowed prefixes before a chunk of them is given out (so before any byte of a
//! source is fetched). The record files read are kept in a cache bounded in bytes
//! ([`PART_CACHE_BYTES`], least recently used out first; the file in use is always kept), as
//! fsspec caches its record files.
//!
//! What needs every chunk of an array (verify, listings, [`LazyRecords::manifest`]) reads its
//! record files into its whole manifest, kept for the reader's life: a manifest costs about 20
//! bytes a reference, so what is kept never exceeds what an eager open held (and is bounded by
//! the same `max_references`). Several threads asking for the same array at once load it once
//! (a mutex per array, the manifest in a `OnceLock`); a failed load is not kept, so a later
//! read tries again.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use vzarr_core::{ChunkManifest, ChunkRef};
use vzarr_kerchunk::{FetchError, ParquetRecords, RecordPart};
use vzarr_source::{AllowPrefixes, SourceStore, Stores};

use crate::ReadError;

/// Reads a file of a directory of Parquet references by its relative path
/// (`tas/refs.0.parq`): its bytes, or `None` when it does not exist (its chunks are then not
/// stored, as fsspec reads them).
pub type RecordFetch = Arc<dyn Fn(&str) -> Result<Option<Bytes>, FetchError> + Send + Sync>;

/// Most bytes the record files kept for chunk reads may take in memory (their chunk entries
/// at 24 bytes each, plus inline chunks); the record file a read uses is kept whatever its
/// size.
pub(crate) const PART_CACHE_BYTES: u64 = 64 << 20;

/// Where one chunk is, owned (from a manifest, or a record file that may leave the cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChunkLoc {
    /// Not stored: reads as the fill value.
    Missing,
    /// Encoded bytes kept in the references.
    Inline(Bytes),
    /// A byte range of a source.
    Range {
        /// Source URL.
        source: Arc<str>,
        /// Byte offset.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
}

impl ChunkLoc {
    /// Chunk `lin` of `manifest` (missing when outside it).
    pub(crate) fn of(manifest: &ChunkManifest, lin: usize) -> ChunkLoc {
        if lin >= manifest.len() {
            return ChunkLoc::Missing;
        }
        match manifest.get(lin) {
            ChunkRef::Missing => ChunkLoc::Missing,
            ChunkRef::Inline(b) => ChunkLoc::Inline(Bytes::copy_from_slice(b)),
            ChunkRef::Range {
                source,
                offset,
                length,
            } => ChunkLoc::Range {
                source: Arc::from(source),
                offset,
                length,
            },
        }
    }

    /// Encoded bytes of the chunk (0 when not stored).
    pub(crate) fn encoded_len(&self) -> u64 {
        match self {
            ChunkLoc::Missing => 0,
            ChunkLoc::Inline(b) => b.len() as u64,
            ChunkLoc::Range { length, .. } => *length,
        }
    }
}

/// The record files read for chunk reads, least recently used first.
#[derive(Default)]
struct Parts {
    held: VecDeque<((String, u64), Arc<RecordPart>)>,
    bytes: u64,
}

/// Bytes a record file read takes in memory, about.
fn part_bytes(part: &RecordPart) -> u64 {
    (part.manifest.len() as u64)
        .saturating_mul(24)
        .saturating_add(part.manifest.stats().inline_bytes)
}

/// One array's manifest, loaded once.
#[derive(Default)]
struct Slot {
    manifest: OnceLock<ChunkManifest>,
    /// Held while the array loads: a second thread waits, then finds it loaded.
    loading: Mutex<()>,
}

/// The record files of lazily opened Parquet references, and the manifests loaded so far.
pub(crate) struct LazyRecords {
    records: ParquetRecords,
    fetch: RecordFetch,
    policy: Arc<AllowPrefixes<Stores>>,
    /// The reader's sources (the same policy, each opened once), which whole-file chunks are
    /// opened through for their sizes.
    sources: Arc<dyn SourceStore>,
    slots: BTreeMap<String, Slot>,
    files_read: Arc<AtomicU64>,
    /// Record files read for chunk reads (one load at a time: the lock is held while a file
    /// is read).
    parts: Mutex<Parts>,
}

impl LazyRecords {
    /// The arrays `records` holds, none loaded; URLs are checked against `policy`, whole files
    /// opened through `sources` (so a read opens them no more); record files read are counted
    /// in `files_read`.
    pub(crate) fn new(
        records: ParquetRecords,
        fetch: RecordFetch,
        policy: Arc<AllowPrefixes<Stores>>,
        sources: Arc<dyn SourceStore>,
        files_read: Arc<AtomicU64>,
    ) -> Self {
        let slots = records
            .arrays()
            .map(|p| (p.to_string(), Slot::default()))
            .collect();
        LazyRecords {
            records,
            fetch,
            policy,
            sources,
            slots,
            files_read,
            parts: Mutex::default(),
        }
    }

    /// The arrays whose record files were not read yet, sorted.
    pub(crate) fn pending(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|(_, s)| s.manifest.get().is_none())
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The manifest of the array at `path` if it is loaded already.
    pub(crate) fn loaded(&self, path: &str) -> Option<&ChunkManifest> {
        self.slots.get(path).and_then(|s| s.manifest.get())
    }

    /// Where chunk `lin` of the array at `path` is: from the array's manifest when it is
    /// loaded, else from the one record file that holds it (read on first use and kept in
    /// the bounded cache); `None` when the array's chunks are not in record files.
    pub(crate) fn chunk(&self, path: &str, lin: usize) -> Option<Result<ChunkLoc, ReadError>> {
        let slot = self.slots.get(path)?;
        if let Some(m) = slot.manifest.get() {
            return Some(Ok(ChunkLoc::of(m, lin)));
        }
        let k = lin as u64 / self.records.record_size();
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let key = (path.to_string(), k);
        let part = match parts.held.iter().position(|(p, _)| *p == key) {
            Some(i) => {
                // Most recently used last.
                let entry = parts.held.remove(i)?;
                let part = entry.1.clone();
                parts.held.push_back(entry);
                part
            }
            None => {
                let part = match self.load_part(path, k) {
                    Ok(p) => Arc::new(p),
                    Err(e) => return Some(Err(e)),
                };
                parts.bytes = parts.bytes.saturating_add(part_bytes(&part));
                parts.held.push_back((key, part.clone()));
                while parts.bytes > PART_CACHE_BYTES && parts.held.len() > 1 {
                    if let Some((_, old)) = parts.held.pop_front() {
                        parts.bytes = parts.bytes.saturating_sub(part_bytes(&old));
                    }
                }
                part
            }
        };
        let at = (lin as u64).checked_sub(part.first).unwrap_or(u64::MAX);
        Some(Ok(usize::try_from(at)
            .map(|at| ChunkLoc::of(&part.manifest, at))
            .unwrap_or(ChunkLoc::Missing)))
    }

    /// Record file `k` of the array at `path`, read, its URLs checked and its whole-file
    /// chunks set.
    fn load_part(&self, path: &str, k: u64) -> Result<RecordPart, ReadError> {
        let mut fetch = |rel: &str| self.counted_fetch(rel);
        let mut check = |url: &str| self.check(url);
        let mut part = self.records.load_record(path, k, &mut fetch, &mut check)?;
        let whole = std::mem::take(&mut part.whole);
        if !whole.is_empty() {
            whole.resolve_manifest::<ReadError>(
                &mut part.manifest,
                self.records.origin(),
                |url| {
                    let size = self.sources.open(url)?.size();
                    Ok((url.to_string(), size))
                },
            )?;
        }
        Ok(part)
    }

    /// A file of the directory through the reader's fetcher, counted when it exists.
    fn counted_fetch(&self, rel: &str) -> Result<Option<Bytes>, FetchError> {
        let got = (self.fetch)(rel)?;
        if got.is_some() {
            self.files_read.fetch_add(1, Ordering::Relaxed);
        }
        Ok(got)
    }

    /// A URL of the record files against the reader's policy.
    fn check(&self, url: &str) -> Result<(), FetchError> {
        self.policy
            .check(url)
            .map(|_| ())
            .map_err(|e| Arc::new(e) as _)
    }

    /// The manifest of the array at `path`, its record files read on first use; `None` when
    /// its chunks are not in record files.
    pub(crate) fn manifest(&self, path: &str) -> Option<Result<&ChunkManifest, ReadError>> {
        let slot = self.slots.get(path)?;
        if let Some(m) = slot.manifest.get() {
            return Some(Ok(m));
        }
        let _guard = slot.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.manifest.get() {
            return Some(Ok(m));
        }
        let mut fetch = |rel: &str| self.counted_fetch(rel);
        let mut check = |url: &str| self.check(url);
        Some(match self.load(path, &mut fetch, &mut check) {
            // Errors are not kept: a later read tries again (a source back online).
            Err(e) => Err(e),
            Ok(m) => Ok(slot.manifest.get_or_init(|| m)),
        })
    }

    /// The array at `path` read from its record files, its whole-file chunks set once each
    /// file is opened through the reader's sources (the policy checked first) and its size
    /// known.
    fn load(
        &self,
        path: &str,
        fetch: &mut dyn FnMut(&str) -> Result<Option<Bytes>, FetchError>,
        check: &mut dyn FnMut(&str) -> Result<(), FetchError>,
    ) -> Result<ChunkManifest, ReadError> {
        let (mut manifest, whole) = self.records.load_array(path, fetch, check)?;
        if !whole.is_empty() {
            whole.resolve_manifest::<ReadError>(&mut manifest, self.records.origin(), |url| {
                let size = self.sources.open(url)?.size();
                Ok((url.to_string(), size))
            })?;
        }
        Ok(manifest)
    }

    /// Every manifest, loading those not loaded yet (in path order; the first error stops).
    pub(crate) fn load_all(&self) -> Result<(), ReadError> {
        for path in self.slots.keys() {
            if let Some(r) = self.manifest(path) {
                r?;
            }
        }
        Ok(())
    }

    /// The loaded manifests by array path (after [`LazyRecords::load_all`]: every one).
    pub(crate) fn into_manifests(self) -> impl Iterator<Item = (String, ChunkManifest)> {
        self.slots
            .into_iter()
            .filter_map(|(p, s)| s.manifest.into_inner().map(|m| (p, m)))
    }
}
