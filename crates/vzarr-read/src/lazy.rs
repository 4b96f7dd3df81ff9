//! kerchunk's Parquet references read lazily, as fsspec's `LazyReferenceMapper` reads them:
//! opening reads `.zmetadata` alone; an array's record files are read when one of its chunks
//! is first needed, every URL they hold checked against the reader's allowed prefixes before
//! the manifest is given out (so before any byte of a source is fetched), and the manifest is
//! kept for the reader's life. Kept, not cached with eviction: a manifest costs about 20 bytes
//! a reference, so what is kept never exceeds what an eager open held (and is bounded by the
//! same `max_references`), while an evicted array would be read again from its record files
//! (up to `MAX_PARQUET_FILE` each) by a reader going back and forth between variables.
//! Several threads asking for the same array at once load it once (a mutex per array, the
//! manifest in a `OnceLock`); a failed load is not kept, so a later read tries again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use vzarr_core::ChunkManifest;
use vzarr_kerchunk::{FetchError, ParquetRecords};
use vzarr_source::{AllowPrefixes, SourceStore, Stores};

use crate::ReadError;

/// Reads a file of a directory of Parquet references by its relative path
/// (`tas/refs.0.parq`): its bytes, or `None` when it does not exist (its chunks are then not
/// stored, as fsspec reads them).
pub type RecordFetch = Arc<dyn Fn(&str) -> Result<Option<Bytes>, FetchError> + Send + Sync>;

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
        let mut fetch = |rel: &str| {
            let got = (self.fetch)(rel)?;
            if got.is_some() {
                self.files_read.fetch_add(1, Ordering::Relaxed);
            }
            Ok(got)
        };
        let mut check = |url: &str| -> Result<(), FetchError> {
            self.policy
                .check(url)
                .map(|_| ())
                .map_err(|e| Arc::new(e) as _)
        };
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
