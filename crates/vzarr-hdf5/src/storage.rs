//! The byte-layer adapter: the HDF5 reader ([`vzarr_hdf5_format`]) pulls bytes through its
//! [`Storage`] trait; [`SourceStorage`] serves them from a [`BlockCache`] over one
//! [`ByteSource`] of the project's byte layer (a local file, an object-store object, bytes in
//! memory), so that metadata scattered through a file costs few requests and the reader's
//! prefetch hints become one batched fetch.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;
use vzarr_hdf5_format::{Storage, StorageError};
use vzarr_source::{BlockCache, ByteSource, CacheCounts, SourceError};

use crate::ScanOptions;

/// A [`Storage`] over a block-cached [`ByteSource`].
#[derive(Debug, Clone)]
pub struct SourceStorage {
    cache: Arc<BlockCache<Arc<dyn ByteSource>>>,
}

impl SourceStorage {
    /// Reads `src` through a cache of `block_size`-byte blocks holding at most
    /// `capacity` bytes, noting how far its readers read where `reach` says (a window and
    /// where to note: [`BlockCache::with_reach`]).
    pub fn new(
        src: Arc<dyn ByteSource>,
        block_size: u64,
        capacity: u64,
        reach: Option<(u64, Arc<AtomicU64>)>,
    ) -> Self {
        let cache = BlockCache::new(src, block_size, capacity);
        let cache = match reach {
            Some((window, at)) => cache.with_reach(window, at),
            None => cache,
        };
        SourceStorage {
            cache: Arc::new(cache),
        }
    }

    /// Reads `src` as a scan with `opts` does: through the block cache
    /// ([`SourceStorage::new`]) when `opts.cache_beyond_head`, else caching its head only
    /// ([`SourceStorage::head_only`]).
    pub(crate) fn for_scan(
        src: Arc<dyn ByteSource>,
        opts: &ScanOptions,
        reach: Option<(u64, Arc<AtomicU64>)>,
    ) -> Self {
        if opts.cache_beyond_head {
            SourceStorage::new(src, opts.block_size, opts.cache_capacity, reach)
        } else {
            SourceStorage::head_only(src, opts.block_size, opts.cache_capacity)
        }
    }

    /// Reads `src` exactly as the reader asks, except for its head (see
    /// [`BlockCache::head_only`]), kept in `block_size`-byte blocks, at most `capacity` bytes.
    pub fn head_only(src: Arc<dyn ByteSource>, block_size: u64, capacity: u64) -> Self {
        SourceStorage {
            cache: Arc::new(BlockCache::head_only(src, block_size, capacity)),
        }
    }

    /// Reads the first `len` bytes of the source into the cache in one request (where
    /// netCDF-C and h5py put most of a file's metadata).
    pub fn read_head(&self, len: u64) -> Result<(), SourceError> {
        self.cache.read_head(len)
    }

    /// The block cache (for its counters).
    pub fn cache(&self) -> &BlockCache<Arc<dyn ByteSource>> {
        &self.cache
    }

    /// The cache's counters so far.
    pub fn counts(&self) -> CacheCounts {
        self.cache.counts()
    }

    /// Exactly the bytes of `range`, through the cache (ranges of many blocks go around it).
    pub fn read_range(&self, range: Range<u64>) -> Result<Bytes, SourceError> {
        self.cache.read(range)
    }
}

impl Storage for SourceStorage {
    fn size(&self) -> u64 {
        self.cache.size()
    }

    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        let end = offset.checked_add(len).ok_or_else(|| {
            StorageError::new(format!("range of {len} bytes at offset {offset} overflows"))
        })?;
        self.cache.read(offset..end).map_err(StorageError::new)
    }

    fn prefetch(&self, ranges: &[Range<u64>]) {
        // A hint: a failed prefetch shows again, with its cause, when the bytes are read.
        let _ = self.cache.prefetch(ranges);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_source::MemSource;

    #[test]
    fn reads_and_prefetches_through_the_cache() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mem = Arc::new(MemSource::new("mem://x.h5", data.clone()));
        let src: Arc<dyn ByteSource> = mem.clone();
        let s = SourceStorage::new(src, 1024, 1 << 20, None);
        s.read_head(4096).unwrap();
        assert_eq!(mem.reads(), 1);
        assert_eq!(&s.read(100, 50).unwrap()[..], &data[100..150]);
        assert_eq!(mem.reads(), 1, "served from the head");
        Storage::prefetch(&s, &[10_000..10_100, 15_000..15_100]);
        let after = mem.reads();
        assert_eq!(&s.read(15_010, 10).unwrap()[..], &data[15_010..15_020]);
        assert_eq!(mem.reads(), after, "served from the prefetched blocks");
        assert_eq!(s.size(), 20_000);
        assert!(s.read(19_990, 20).is_err());
        assert!(s.read(u64::MAX, 2).is_err());
        assert_eq!(s.counts().batches, 2);
    }
}
