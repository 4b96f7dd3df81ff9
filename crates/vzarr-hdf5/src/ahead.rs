//! Looking ahead on object storage: before the walk, the structures the head already holds
//! are parsed to find what lies beyond it and will be needed first (the groups' header
//! continuations, the object headers they link to and theirs, the objects' attribute heaps
//! and chunk indexes), so that all of it is fetched in one batch of concurrent requests
//! instead of one round trip after another as the walk meets it. What a batch brings may
//! show more (the headers of objects whose headers were not cached), so it is done again,
//! a few rounds at most (see [`plan`]).
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
use vzarr_hdf5_format::{File, LinkTarget, ObjectKind, Storage, StorageError};

use crate::storage::SourceStorage;

/// Objects below the root group whose headers the look-ahead reads at most (per round).
const MAX_OBJECTS: usize = 4096;

/// Ranges in all batches together at most: each costs a block of the scan's cache (256 KiB
/// on object storage), and the batches must fit well within the cache (64 MiB) to be there
/// when the walk reads them. Every range is one the walk reads, so a cut batch only leaves
/// the rest to the walk.
const MAX_RANGES: usize = 64;

/// Batches at most: each is a round trip, taken only when the previous one showed more.
const MAX_ROUNDS: usize = 4;

/// Fetches, in at most [`MAX_ROUNDS`] batches, what a walk from the root will read beyond
/// what `storage` holds (see the module documentation).
pub(crate) fn plan(storage: &SourceStorage) {
    let mut budget = MAX_RANGES;
    for _ in 0..MAX_ROUNDS {
        let batch = ranges(storage, budget);
        if batch.is_empty() {
            return;
        }
        budget -= batch.len();
        // A hint: a failed fetch shows again, with its cause, when the walk reads those bytes.
        vzarr_hdf5_format::Storage::prefetch(storage, &batch);
        if budget == 0 {
            return;
        }
    }
}

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

    /// What a walk says it will read next (the nodes of a B-tree level) is what to fetch.
    fn prefetch(&self, ranges: &[Range<u64>]) {
        for r in ranges {
            if self.storage.cache().cached(r).is_none() {
                self.miss(r.clone());
            }
        }
    }
}

/// Ends a chunk index visit at its first chunk: by then the index's nodes above it were read.
struct Enough;

impl From<vzarr_hdf5_format::Error> for Enough {
    fn from(_: vzarr_hdf5_format::Error) -> Self {
        Enough
    }
}

/// The byte ranges beyond what `storage` holds that a walk from the root will read first (at
/// most `max`), found from what it holds (see the module documentation); empty when nothing
/// is found.
pub(crate) fn ranges(storage: &SourceStorage, max: usize) -> Vec<Range<u64>> {
    let view = Arc::new(CachedOnly {
        storage: storage.clone(),
        misses: Mutex::new(Vec::new()),
    });
    let size = view.size();
    if let Ok(file) = File::open(view.clone()) {
        follow_links(&file);
    }
    let mut out = view
        .misses
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .split_off(0);
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| {
        r.start < r.end
            && r.end <= size
            && storage.cache().cached(r).is_none()
            && seen.insert((r.start, r.end))
    });
    out.truncate(max);
    out
}

/// Reads, as far as the cached bytes go, what the walk will read of the objects below the
/// root group (their headers, attributes and chunk indexes down to the first chunk), which
/// notes the missing ranges: groups are followed breadth first, at most [`MAX_OBJECTS`]
/// objects, each once.
fn follow_links(file: &File) {
    let root = file.root_address();
    let mut seen = std::collections::HashSet::from([root]);
    let mut groups = std::collections::VecDeque::from([root]);
    while let Some(addr) = groups.pop_front() {
        let Ok(group) = file.object_header_available(addr) else {
            continue;
        };
        let _ = file.attributes(&group);
        let Ok(links) = file.links(&group) else {
            continue;
        };
        for link in links {
            let LinkTarget::Hard(addr) = link.target else {
                continue;
            };
            if seen.len() >= MAX_OBJECTS {
                return;
            }
            if !seen.insert(addr) {
                continue;
            }
            let Ok(oh) = file.object_header_available(addr) else {
                continue;
            };
            match file.object_kind(&oh) {
                ObjectKind::Group => groups.push_back(addr),
                ObjectKind::Dataset => {
                    let _ = file.attributes(&oh);
                    if let Ok(ds) = file.dataset(&oh) {
                        let _ = file.visit_chunks(&ds, |_| Err(Enough));
                    }
                }
                _ => {}
            }
        }
    }
}
