//! Request statistics as a wrapper: [`Counted`] counts the reads that reach the source below
//! it (put it below [`crate::Coalesced`] to count requests as they are sent).

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError};

/// Counters of reads, shared by every source that reports to them.
#[derive(Debug, Default)]
pub struct IoStats {
    requests: AtomicU64,
    bytes: AtomicU64,
    opens: AtomicU64,
}

/// A snapshot of [`IoStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounts {
    /// Ranged reads (requests) made.
    pub requests: u64,
    /// Bytes those reads returned.
    pub bytes: u64,
    /// Sources opened (a `stat` or a HEAD request each).
    pub opens: u64,
}

impl IoStats {
    /// New counters at zero.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The counts so far.
    pub fn counts(&self) -> IoCounts {
        IoCounts {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            opens: self.opens.load(Ordering::Relaxed),
        }
    }

    /// Counts one opened source.
    pub fn count_open(&self) {
        self.opens.fetch_add(1, Ordering::Relaxed);
    }
}

/// A source that counts the reads and bytes that pass through it.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    stats: Arc<IoStats>,
}

impl<S: ByteSource> Counted<S> {
    /// `inner`, counting into `stats`.
    pub fn new(inner: S, stats: Arc<IoStats>) -> Self {
        Counted { inner, stats }
    }
}

impl<S: ByteSource> ByteSource for Counted<S> {
    fn record(&self) -> &SourceRecord {
        self.inner.record()
    }

    fn file_id(&self) -> Option<crate::FileId> {
        self.inner.file_id()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        let got = self.inner.read_ranges(ranges)?;
        let n: u64 = got.iter().map(|b| b.len() as u64).sum();
        self.stats.requests.fetch_add(
            ranges.iter().filter(|r| !r.is_empty()).count() as u64,
            Ordering::Relaxed,
        );
        self.stats.bytes.fetch_add(n, Ordering::Relaxed);
        Ok(got)
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<(), SourceError> {
        self.inner.prefetch(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemSource;

    #[test]
    fn counts_reads() {
        let stats = IoStats::new();
        let c = Counted::new(MemSource::new("mem://x", vec![7u8; 100]), stats.clone());
        c.read_ranges(&[0..10, 20..20, 50..60]).unwrap();
        assert_eq!(
            stats.counts(),
            IoCounts {
                requests: 2,
                bytes: 20,
                opens: 0
            }
        );
    }
}
