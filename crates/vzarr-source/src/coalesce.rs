//! Range coalescing, done once: [`Coalesced`] merges nearby ranges of one read into fewer,
//! larger reads of the source below it and hands each caller its slice of them (no copies).
//! Sources below it (local files, objects) read each range they are given as one request, so
//! the gap and request size set here are the only ones that apply.

use std::ops::Range;

use bytes::Bytes;
use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError};

/// Gap below which nearby ranges of a local file are read in one `pread` (about what a
/// system call costs in page-cache copying).
pub const LOCAL_COALESCE_GAP: u64 = 16 << 10;

/// Gap below which nearby ranges of an object are fetched in one request (about what a
/// request's latency costs in transfer).
pub const REMOTE_COALESCE_GAP: u64 = 1 << 20;

/// Largest single read that coalescing produces.
pub const MAX_COALESCED_READ: u64 = 16 << 20;

/// Merges ranges closer than `gap` into sorted requests of at most `max` bytes (a single range
/// larger than `max` stays one request).
pub fn merge_ranges(ranges: &[Range<u64>], gap: u64, max: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.to_vec();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        if let Some(last) = out.last_mut()
            && r.start <= last.end.saturating_add(gap)
            && r.end.max(last.end) - last.start <= max
        {
            last.end = last.end.max(r.end);
            continue;
        }
        out.push(r);
    }
    out
}

/// A source whose reads merge ranges closer than `gap` into reads of at most `max` bytes.
/// A merged read that fails is retried range by range, so an error names the range that
/// caused it.
#[derive(Debug)]
pub struct Coalesced<S> {
    inner: S,
    gap: u64,
    max: u64,
}

impl<S: ByteSource> Coalesced<S> {
    /// `inner` with ranges closer than `gap` merged into reads of at most `max` bytes.
    pub fn new(inner: S, gap: u64, max: u64) -> Self {
        Coalesced {
            inner,
            gap,
            max: max.max(1),
        }
    }

    /// The source below.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: ByteSource> ByteSource for Coalesced<S> {
    fn record(&self) -> &SourceRecord {
        self.inner.record()
    }

    fn file_id(&self) -> Option<crate::FileId> {
        self.inner.file_id()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        if ranges.iter().any(|r| r.end < r.start) {
            // Backwards ranges are the source's to refuse, with its own error.
            return self.inner.read_ranges(ranges);
        }
        let merged = merge_ranges(ranges, self.gap, self.max);
        if merged.len() == ranges.len() {
            return self.inner.read_ranges(ranges);
        }
        let runs = match self.inner.read_ranges(&merged) {
            Ok(runs) => runs,
            Err(_) => return self.inner.read_ranges(ranges),
        };
        ranges
            .iter()
            .map(|r| {
                // The run holding `r`: the last one starting at or before it.
                let k = merged.partition_point(|m| m.start <= r.start);
                let (m, bytes) = k
                    .checked_sub(1)
                    .and_then(|k| Some((merged.get(k)?, runs.get(k)?)))
                    .ok_or_else(|| SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: 0,
                    })?;
                let lo = (r.start - m.start) as usize;
                let hi = (r.end - m.start) as usize;
                if hi > bytes.len() {
                    return Err(SourceError::ShortRead {
                        url: self.url().to_string(),
                        offset: r.start,
                        len: r.end - r.start,
                        got: bytes.len().saturating_sub(lo) as u64,
                    });
                }
                Ok(bytes.slice(lo..hi))
            })
            .collect()
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
    fn merges_ranges() {
        let r = merge_ranges(&[10..20, 0..5, 100..110, 21..30], 4, 1000);
        assert_eq!(r, vec![0..5, 10..30, 100..110]);
        let r = merge_ranges(&[0..5, 10..20], 5, 1000);
        assert_eq!(r, vec![0..20]);
        // Bounded request size.
        let r = merge_ranges(&[0..10, 10..20, 20..30], 0, 20);
        assert_eq!(r, vec![0..20, 20..30]);
        // Overlapping and duplicate ranges.
        let r = merge_ranges(&[0..10, 5..8, 0..10], 0, 100);
        assert_eq!(r, vec![0..10]);
    }

    #[test]
    fn coalesces_nearby_ranges_and_keeps_the_order() {
        let mem = MemSource::new("mem://x", (0..=255).collect::<Vec<u8>>());
        let c = Coalesced::new(&mem, 4, 1 << 20);
        let ranges = [40..44, 0..3, 5..9, 100..100, 12..20, 6..7];
        let got = c.read_ranges(&ranges).unwrap();
        for (g, want) in got.iter().zip(&ranges) {
            let want: Vec<u8> = (want.start as u8..want.end as u8).collect();
            assert_eq!(&g[..], &want[..]);
        }
        // 0..20 (gaps of 2 and 3), 40..44, 100..100: three reads instead of six.
        assert_eq!(mem.reads(), 3);
    }

    #[test]
    fn names_the_failing_range() {
        let mem = MemSource::new("mem://x", (0..=99).collect::<Vec<u8>>());
        let c = Coalesced::new(&mem, 4, 1 << 20);
        let e = c.read_ranges(&[0..10, 12..20, 98..104]).unwrap_err();
        assert!(
            matches!(
                e,
                SourceError::OutOfBounds {
                    offset: 98,
                    len: 6,
                    ..
                }
            ),
            "{e:?}"
        );
        // Merged runs that read fine are still split correctly.
        let got = c.read_ranges(&[90..95, 96..100]).unwrap();
        assert_eq!(&got[0][..], &(90..95).collect::<Vec<u8>>()[..]);
        assert_eq!(&got[1][..], &(96..100).collect::<Vec<u8>>()[..]);
    }
}
