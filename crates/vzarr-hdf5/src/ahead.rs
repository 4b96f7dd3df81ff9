//! Looking ahead on object storage: before the walk, the structures the head already holds
//! are parsed to find what lies beyond it and will be needed first (the root group's header
//! continuations, the object headers it links to and theirs, those objects' chunk indexes),
//! so that all of it is fetched in one batch of concurrent requests instead of one round
//! trip after another as the walk meets it.
//!
//! A netCDF-4 file written by netCDF-C is the case in point: the global attributes are
//! written last, after the data, in a continuation block of the root group's header, and
//! each variable's chunk index among its data. The walk must read the root's header whole
//! (one round trip for the continuation) before it looks at the variables, whose indexes then
//! cost another round trip; the look-ahead finds both from the head (the links and the
//! variables' headers are in it) and asks for them together.
//!
//! It is a hint and nothing more: it reads only what is cached, ignores every error (the walk
//! meets and reports them), and looks at a bounded number of objects.

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use vzarr_hdf5_format::{File, Layout, LinkTarget, ObjectKind, Storage, StorageError};

use crate::storage::SourceStorage;

/// Objects linked from the root group whose headers the look-ahead reads at most.
const MAX_OBJECTS: usize = 4096;

/// Bytes asked for at a chunk index's address (its first node or header; the cache fetches
/// the whole block around it).
const INDEX_BYTES: u64 = 4096;

/// Ranges in the batch at most: each costs a block of the scan's cache (256 KiB on object
/// storage), and the batch must fit well within the cache (64 MiB) to be there when the
/// walk reads it. Every range is one the walk reads, in the order it reads them, so a cut
/// batch only leaves the rest to the walk.
const MAX_RANGES: usize = 64;

/// A [`Storage`] serving only the bytes the scan's cache (`storage`) already holds, noting
/// every range it could not serve.
struct CachedOnly {
    storage: SourceStorage,
    misses: Mutex<Vec<Range<u64>>>,
}

impl CachedOnly {
    fn miss(&self, range: Range<u64>) {
        self.misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(range);
    }
}

impl Storage for CachedOnly {
    fn size(&self) -> u64 {
        Storage::size(&self.storage)
    }

    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        let Some(end) = offset.checked_add(len) else {
            return Err(StorageError::new("range overflows"));
        };
        match self.storage.cache().cached(&(offset..end)) {
            Some(b) => Ok(b),
            None => {
                self.miss(offset..end);
                Err(StorageError::new("not fetched yet"))
            }
        }
    }
}

/// The byte ranges beyond what `storage` holds that a walk from the root will read first, in
/// the order it reads them (at most [`MAX_RANGES`]), found from what it holds (see the module
/// documentation); empty when nothing is found.
pub(crate) fn ranges(storage: &SourceStorage) -> Vec<Range<u64>> {
    let view = Arc::new(CachedOnly {
        storage: storage.clone(),
        misses: Mutex::new(Vec::new()),
    });
    let size = view.size();
    let mut indexes = Vec::new();
    if let Ok(file) = File::open(view.clone()) {
        indexes = linked_indexes(&file, size);
    }
    let mut out = view
        .misses
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .split_off(0);
    out.extend(indexes);
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| {
        r.start < r.end
            && r.end <= size
            && storage.cache().cached(r).is_none()
            && seen.insert((r.start, r.end))
    });
    out.truncate(MAX_RANGES);
    out
}

/// The chunk-index ranges of the datasets the root group links to, as far as the cached
/// bytes show them (reading them notes the header continuations that are missing).
fn linked_indexes(file: &File, size: u64) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let Ok(root) = file.object_header_available(file.root_address()) else {
        return out;
    };
    let Ok(links) = file.links(&root) else {
        return out;
    };
    for link in links.iter().take(MAX_OBJECTS) {
        let LinkTarget::Hard(addr) = link.target else {
            continue;
        };
        let Ok(oh) = file.object_header_available(addr) else {
            continue;
        };
        if file.object_kind(&oh) != ObjectKind::Dataset {
            continue;
        }
        if let Ok(ds) = file.dataset(&oh)
            && let Layout::Chunked(c) = &ds.layout.layout
            && let Some(a) = c.index_address
            && a < size
        {
            out.push(a..a.saturating_add(INDEX_BYTES).min(size));
        }
    }
    out
}
