//! A block cache for parsers that chase pointers through a file (HDF5 object headers, heaps,
//! B-trees): reads are served from aligned blocks kept in memory, misses of one call are
//! fetched together in one batch, and [`ByteSource::prefetch`] fetches what the structure
//! says will be needed next. The head of the file can be read up front in one request.
//!
//! Memory is bounded: at most `capacity` bytes of blocks are kept (oldest dropped first), and
//! a range longer than [`BlockCache::BYPASS_BLOCKS`] blocks is read around the cache.
//!
//! [`BlockCache::head_only`] keeps only the head of the file and reads everything else
//! exactly as asked: for local files, where a read is a system call and the page cache
//! already keeps what was read, whole blocks would only copy bytes that are not needed.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError, range_len};

/// Counters of a [`BlockCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Ranges served from cached blocks only.
    pub hits: u64,
    /// Blocks fetched from the source below.
    pub blocks_fetched: u64,
    /// Calls that went to the source below (each a batch of ranges).
    pub batches: u64,
}

#[derive(Debug, Default)]
struct State {
    blocks: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
    bytes: u64,
    counts: CacheCounts,
}

/// A source read through a cache of aligned blocks.
#[derive(Debug)]
pub struct BlockCache<S> {
    inner: S,
    block: u64,
    capacity: u64,
    /// False for [`BlockCache::head_only`]: misses are read exactly, not as blocks.
    fill: bool,
    state: Mutex<State>,
    /// Where the reach of the readers is noted ([`BlockCache::with_reach`]).
    reach: Option<(u64, Arc<AtomicU64>)>,
}

impl<S: ByteSource> BlockCache<S> {
    /// Ranges longer than this many blocks are read around the cache.
    pub const BYPASS_BLOCKS: u64 = 8;

    /// `inner` read in blocks of `block` bytes, keeping at most `capacity` bytes.
    pub fn new(inner: S, block: u64, capacity: u64) -> Self {
        BlockCache {
            inner,
            block: block.max(512),
            capacity,
            fill: true,
            state: Mutex::new(State::default()),
            reach: None,
        }
    }

    /// The same cache noting in `reach` the farthest end of any range its readers read, look
    /// at ([`BlockCache::cached`]) or prefetch that starts below `window`: how much of the
    /// start of the file a parse needed, to size the heads of files like it.
    pub fn with_reach(mut self, window: u64, reach: Arc<AtomicU64>) -> Self {
        self.reach = Some((window, reach));
        self
    }

    fn note(&self, ranges: &[Range<u64>]) {
        if let Some((window, reach)) = &self.reach {
            for r in ranges.iter().filter(|r| r.start < *window) {
                reach.fetch_max(r.end, Ordering::Relaxed);
            }
        }
    }

    /// `inner` with only its head cached (what [`BlockCache::read_head`] and
    /// [`BlockCache::seed_head`] put there, in blocks of `block` bytes, at most `capacity`
    /// bytes): every other range is read from `inner` exactly, nothing else is kept, and
    /// prefetches do nothing.
    pub fn head_only(inner: S, block: u64, capacity: u64) -> Self {
        BlockCache {
            fill: false,
            ..Self::new(inner, block, capacity)
        }
    }

    /// Reads the first `len` bytes of the source (clamped to its size) into the cache in one
    /// request.
    pub fn read_head(&self, len: u64) -> Result<(), SourceError> {
        let end = len.min(self.size());
        let first = self.blocks_of(&(0..end));
        if first.is_empty() {
            return Ok(());
        }
        let run = 0..(first.end * self.block).min(self.size());
        let bytes = self.inner.read_ranges(std::slice::from_ref(&run))?;
        let mut st = self.lock();
        st.counts.batches += 1;
        if let Some(b) = bytes.into_iter().next() {
            self.insert_run(&mut st, first, &b);
        }
        Ok(())
    }

    /// Puts bytes already fetched (the first `head.len()` bytes of the source) into the
    /// cache: the whole blocks they cover, and the partial last block when it ends the file.
    pub fn seed_head(&self, head: &bytes::Bytes) {
        let size = self.size();
        let len = (head.len() as u64).min(size);
        let whole = if len == size {
            len.div_ceil(self.block)
        } else {
            len / self.block
        };
        if whole == 0 {
            return;
        }
        let mut st = self.lock();
        self.insert_run(&mut st, 0..whole, head);
    }

    /// The bytes of `range` if every block of it is cached, without fetching anything; a read
    /// of the range as far as [`BlockCache::with_reach`] is concerned.
    pub fn cached(&self, range: &Range<u64>) -> Option<Bytes> {
        self.note(std::slice::from_ref(range));
        self.held(range)
    }

    /// [`BlockCache::cached`] without counting the range as read: for copying out bytes that
    /// happen to be at hand (chunks kept for later), which the reach must not grow by.
    pub fn held(&self, range: &Range<u64>) -> Option<Bytes> {
        if range.end > self.size() || range.end < range.start || self.bypasses(range) {
            return None;
        }
        let span = self.blocks_of(range);
        let st = self.lock();
        if span.is_empty() {
            return Some(Bytes::new());
        }
        if !span.clone().all(|b| st.blocks.contains_key(&b)) {
            return None;
        }
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        for b in span {
            let bytes = st.blocks.get(&b)?;
            let base = b * self.block;
            let lo = range.start.max(base) - base;
            let hi = (range.end.min(base + self.block) - base).min(bytes.len() as u64);
            if lo >= hi {
                return None;
            }
            out.extend_from_slice(&bytes[lo as usize..hi as usize]);
        }
        (out.len() as u64 == range.end - range.start).then(|| out.freeze())
    }

    /// [`BlockCache::cached`] for a reader that drops the bytes soon: a range inside one
    /// block is a slice of it, not a copy.
    fn peek(&self, range: &Range<u64>) -> Option<Bytes> {
        let span = self.blocks_of(range);
        if span.end - span.start != 1 || range.end > self.size() {
            return self.cached(range);
        }
        let st = self.lock();
        let b = st.blocks.get(&span.start)?;
        let base = span.start * self.block;
        let (lo, hi) = ((range.start - base) as usize, (range.end - base) as usize);
        (hi <= b.len()).then(|| b.slice(lo..hi))
    }

    /// The source below.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Counters so far.
    pub fn counts(&self) -> CacheCounts {
        self.lock().counts
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Block indices covering `r` (empty for an empty range).
    fn blocks_of(&self, r: &Range<u64>) -> Range<u64> {
        if r.is_empty() {
            return 0..0;
        }
        r.start / self.block..(r.end - 1) / self.block + 1
    }

    fn bypasses(&self, r: &Range<u64>) -> bool {
        let b = self.blocks_of(r);
        b.end - b.start > Self::BYPASS_BLOCKS
    }

    /// Puts the blocks `run` (read as one contiguous `bytes`) into the cache, and returns
    /// them by index. Each block is copied into a buffer of its own: a slice would keep the
    /// whole read (a run, or a coalesced read of several runs) alive while any one of its
    /// blocks is cached, so the cache's memory would no longer be bounded by its capacity.
    fn insert_run(&self, st: &mut State, run: Range<u64>, bytes: &Bytes) -> Vec<(u64, Bytes)> {
        let mut out = Vec::new();
        for (k, b) in run.enumerate() {
            let lo = (k as u64 * self.block) as usize;
            if lo >= bytes.len() {
                break;
            }
            let hi = (lo + self.block as usize).min(bytes.len());
            let block = Bytes::copy_from_slice(&bytes[lo..hi]);
            if let std::collections::hash_map::Entry::Vacant(e) = st.blocks.entry(b) {
                e.insert(block.clone());
                st.order.push_back(b);
                st.bytes += (hi - lo) as u64;
            }
            st.counts.blocks_fetched += 1;
            out.push((b, block));
        }
        while st.bytes > self.capacity {
            let Some(old) = st.order.pop_front() else {
                break;
            };
            if let Some(b) = st.blocks.remove(&old) {
                st.bytes -= b.len() as u64;
            }
        }
        out
    }

    /// Ranges served from cached blocks where all of their blocks are cached, and read from
    /// the source below exactly (in one call) where not; nothing is added to the cache.
    fn read_around(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        let mut out: Vec<Option<Bytes>> = ranges.iter().map(|r| self.peek(r)).collect();
        let misses: Vec<Range<u64>> = ranges
            .iter()
            .zip(&out)
            .filter(|(_, got)| got.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        let hits = (ranges.len() - misses.len()) as u64;
        if hits > 0 {
            self.lock().counts.hits += hits;
        }
        if !misses.is_empty() {
            let mut read = self.inner.read_ranges(&misses)?.into_iter();
            for (slot, r) in out.iter_mut().zip(ranges) {
                if slot.is_none() {
                    *slot = Some(read.next().ok_or_else(|| SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: 0,
                    })?);
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Fetches the missing blocks of `ranges` (those not read around the cache) and returns
    /// them with the blocks that were cached, by index. The missing blocks are read in
    /// batches of at most a quarter of the capacity, so that a large prefetch does not hold
    /// more than that in read buffers at once.
    /// Only cached when `keep` is false (a prefetch): nothing is returned.
    fn fill(&self, ranges: &[Range<u64>], keep: bool) -> Result<HashMap<u64, Bytes>, SourceError> {
        let mut have: HashMap<u64, Bytes> = HashMap::new();
        let mut missing: Vec<u64> = Vec::new();
        {
            let st = self.lock();
            for r in ranges.iter().filter(|r| !self.bypasses(r)) {
                for b in self.blocks_of(r) {
                    match st.blocks.get(&b) {
                        Some(bytes) => {
                            if keep {
                                have.insert(b, bytes.clone());
                            }
                        }
                        None => missing.push(b),
                    }
                }
            }
        }
        missing.sort_unstable();
        missing.dedup();
        // Runs of consecutive missing blocks, one read each, in batches.
        let mut runs: Vec<Range<u64>> = Vec::new();
        for b in missing {
            match runs.last_mut() {
                Some(r) if r.end == b => r.end += 1,
                _ => runs.push(b..b + 1),
            }
        }
        let batch_blocks = (self.capacity / 4 / self.block).max(1);
        let size = self.size();
        let mut rest = runs.as_slice();
        while !rest.is_empty() {
            let mut n = 0;
            let mut blocks = 0;
            while n < rest.len()
                && (n == 0 || blocks + (rest[n].end - rest[n].start) <= batch_blocks)
            {
                blocks += rest[n].end - rest[n].start;
                n += 1;
            }
            let (batch, tail) = rest.split_at(n);
            rest = tail;
            let byte_ranges: Vec<Range<u64>> = batch
                .iter()
                .map(|r| r.start * self.block..(r.end * self.block).min(size))
                .collect();
            let got = self.inner.read_ranges(&byte_ranges)?;
            let mut st = self.lock();
            st.counts.batches += 1;
            for (run, bytes) in batch.iter().zip(got) {
                let blocks = self.insert_run(&mut st, run.clone(), &bytes);
                if keep {
                    have.extend(blocks);
                }
            }
        }
        Ok(have)
    }
}

impl<S: ByteSource> ByteSource for BlockCache<S> {
    fn record(&self) -> &SourceRecord {
        self.inner.record()
    }

    fn file_id(&self) -> Option<crate::FileId> {
        self.inner.file_id()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        let size = self.size();
        for r in ranges {
            range_len(self.url(), r, size)?;
        }
        self.note(ranges);
        if !self.fill {
            return self.read_around(ranges);
        }
        let blocks = self.fill(ranges, true)?;
        let direct: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| self.bypasses(r))
            .cloned()
            .collect();
        let mut direct = if direct.is_empty() {
            Vec::new()
        } else {
            self.inner.read_ranges(&direct)?
        }
        .into_iter();
        let mut hits = 0;
        let out = ranges
            .iter()
            .map(|r| {
                if self.bypasses(r) {
                    return direct.next().ok_or_else(|| SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: 0,
                    });
                }
                let span = self.blocks_of(r);
                let piece = |b: u64| -> Result<&Bytes, SourceError> {
                    blocks.get(&b).ok_or_else(|| SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: 0,
                    })
                };
                if span.is_empty() {
                    return Ok(Bytes::new());
                }
                hits += 1;
                if span.end - span.start == 1 {
                    let b = piece(span.start)?;
                    let lo = (r.start - span.start * self.block) as usize;
                    let hi = (r.end - span.start * self.block) as usize;
                    return if hi <= b.len() {
                        Ok(b.slice(lo..hi))
                    } else {
                        Err(SourceError::ShortRead {
                            url: self.url().to_string(),
                            offset: r.start,
                            len: r.end - r.start,
                            got: b.len().saturating_sub(lo) as u64,
                        })
                    };
                }
                let mut out = BytesMut::with_capacity((r.end - r.start) as usize);
                for b in span {
                    let bytes = piece(b)?;
                    let base = b * self.block;
                    let lo = r.start.max(base) - base;
                    let hi = (r.end.min(base + self.block) - base).min(bytes.len() as u64);
                    if lo < hi {
                        out.extend_from_slice(&bytes[lo as usize..hi as usize]);
                    }
                }
                if out.len() as u64 != r.end - r.start {
                    return Err(SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: out.len() as u64,
                    });
                }
                Ok(out.freeze())
            })
            .collect();
        self.lock().counts.hits += hits;
        out
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<(), SourceError> {
        if !self.fill {
            return Ok(());
        }
        let size = self.size();
        let ok: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start <= r.end && r.end <= size)
            .cloned()
            .collect();
        self.note(&ok);
        self.fill(&ok, false).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemSource;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn serves_reads_from_blocks_and_batches_misses() {
        let d = data(10_000);
        let mem = MemSource::new("mem://x", d.clone());
        let c = BlockCache::new(&mem, 1024, 1 << 20);
        c.read_head(2048).unwrap();
        assert_eq!(mem.reads(), 1);
        // Inside the head: no read.
        assert_eq!(&c.read(100..200).unwrap()[..], &d[100..200]);
        assert_eq!(&c.read(1000..1100).unwrap()[..], &d[1000..1100]);
        assert_eq!(mem.reads(), 1);
        // Two misses in one call: one batch, two runs.
        let got = c
            .read_ranges(&[5000..5010, 9000..9990, 3000..3100])
            .unwrap();
        assert_eq!(&got[0][..], &d[5000..5010]);
        assert_eq!(&got[1][..], &d[9000..9990]);
        assert_eq!(&got[2][..], &d[3000..3100]);
        assert_eq!(c.counts().batches, 2);
        // Prefetch, then reads are hits.
        let before = mem.reads();
        c.prefetch(&[6000..7000, 7500..7600]).unwrap();
        let after = mem.reads();
        assert!(after > before);
        assert_eq!(&c.read(6100..6200).unwrap()[..], &d[6100..6200]);
        assert_eq!(mem.reads(), after);
        // Last partial block and the end of the file.
        assert_eq!(&c.read(9990..10_000).unwrap()[..], &d[9990..]);
        assert!(c.read(9990..10_001).is_err());
        assert_eq!(&c.read(10_000..10_000).unwrap()[..], b"");
    }

    #[test]
    fn seeded_heads_and_peeks() {
        let d = data(5000);
        let mem = MemSource::new("mem://x", d.clone());
        let c = BlockCache::new(&mem, 1024, 1 << 20);
        // A head of 2500 bytes: blocks 0 and 1 are whole; block 2 is not cached.
        c.seed_head(&Bytes::copy_from_slice(&d[..2500]));
        assert_eq!(c.cached(&(10..2000)).unwrap(), &d[10..2000]);
        assert!(c.cached(&(2000..2100)).is_none());
        assert_eq!(&c.read(100..2048).unwrap()[..], &d[100..2048]);
        assert_eq!(mem.reads(), 0);
        // A head that is the whole (short) file caches its partial last block.
        let short = MemSource::new("mem://y", d[..1500].to_vec());
        let c = BlockCache::new(&short, 1024, 1 << 20);
        c.seed_head(&Bytes::copy_from_slice(&d[..1500]));
        assert_eq!(c.cached(&(1400..1500)).unwrap(), &d[1400..1500]);
        assert_eq!(short.reads(), 0);
    }

    #[test]
    fn head_only_reads_the_rest_exactly() {
        let d = data(100_000);
        let mem = MemSource::new("mem://x", d.clone());
        let c = BlockCache::head_only(&mem, 1024, 4096);
        c.read_head(4096).unwrap();
        assert_eq!((mem.reads(), mem.bytes_read()), (1, 4096));
        // Inside the head: served from it, across blocks too.
        assert_eq!(&c.read(1000..1100).unwrap()[..], &d[1000..1100]);
        assert_eq!(&c.read(0..4096).unwrap()[..], &d[..4096]);
        assert_eq!(mem.reads(), 1);
        // Beyond the head: exactly the bytes asked for, one call for all misses of a call,
        // nothing cached, prefetches ignored.
        c.prefetch(std::slice::from_ref(&(50_000..60_000))).unwrap();
        assert_eq!(mem.reads(), 1);
        let got = c
            .read_ranges(&[10_000..10_010, 100..200, 4000..4200, 99_990..100_000])
            .unwrap();
        assert_eq!(&got[0][..], &d[10_000..10_010]);
        assert_eq!(&got[1][..], &d[100..200]);
        assert_eq!(&got[2][..], &d[4000..4200]);
        assert_eq!(&got[3][..], &d[99_990..]);
        assert_eq!(mem.bytes_read(), 4096 + 10 + 200 + 10);
        assert!(c.cached(&(10_000..10_010)).is_none());
        assert!(c.lock().bytes <= 4096);
        assert!(c.read(99_990..100_001).is_err());
        assert_eq!(c.counts().hits, 3);
    }

    #[test]
    fn bounded_memory_and_bypass() {
        let d = data(100_000);
        let mem = MemSource::new("mem://x", d.clone());
        let c = BlockCache::new(&mem, 1024, 4096);
        for k in 0..50u64 {
            let o = k * 1500;
            assert_eq!(
                &c.read(o..o + 10).unwrap()[..],
                &d[o as usize..o as usize + 10]
            );
        }
        assert!(c.lock().bytes <= 4096);
        // A long range goes around the cache.
        let before = c.counts().blocks_fetched;
        assert_eq!(&c.read(0..50_000).unwrap()[..], &d[..50_000]);
        assert_eq!(c.counts().blocks_fetched, before);
    }
}
