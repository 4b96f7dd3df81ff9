//! How much of each object a catalog scan fetches in the request that opens it, learned from
//! the files scanned so far.
//!
//! An object is opened with one ranged GET of its head: the size, modification time and ETag
//! come with it, and the metadata of most files lies in it. A fixed head of
//! [`REMOTE_HEAD_BYTES`] fetches small files whole (a 66 KB daily file whose metadata takes
//! 12 KB: 5.5 times what the scan needs) and, over 100,000 objects, gigabytes. The files of
//! one archive are alike, so the first [`LEARN_FROM`] files of a batch are opened with the
//! full head and their scans note how far into it they read (the parse, the look-ahead, the
//! small chunks kept for the planner: [`vzarr_source::BlockCache::with_reach`]); later files
//! are opened with a quarter more than the farthest of those, rounded up to 1 KiB. A file that
//! needs more reads it in a second request, and raises the head of the files after it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::REMOTE_HEAD_BYTES;

/// Files scanned with the full head before the head is learned.
pub const LEARN_FROM: usize = 4;

/// The smallest learned head.
const MIN_HEAD: u64 = 4 << 10;

/// The head sizes of one batch of scans.
#[derive(Debug, Default)]
pub struct HeadSizes {
    /// The farthest reach noted so far.
    reach: AtomicU64,
    /// Scans noted so far.
    noted: AtomicUsize,
}

impl HeadSizes {
    /// A learner that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The head to fetch when opening the next object.
    pub fn head(&self) -> u64 {
        if self.noted.load(Ordering::Relaxed) < LEARN_FROM {
            return REMOTE_HEAD_BYTES;
        }
        let reach = self.reach.load(Ordering::Relaxed);
        (reach + reach / 4)
            .next_multiple_of(1 << 10)
            .clamp(MIN_HEAD, REMOTE_HEAD_BYTES)
    }

    /// Notes how far into its first [`REMOTE_HEAD_BYTES`] a scan read.
    pub fn note(&self, reach: u64) {
        self.reach
            .fetch_max(reach.min(REMOTE_HEAD_BYTES), Ordering::Relaxed);
        self.noted.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_a_quarter_more_than_the_farthest_reach() {
        let h = HeadSizes::new();
        for reach in [10_000, 12_000, 9_000] {
            h.note(reach);
            assert_eq!(h.head(), REMOTE_HEAD_BYTES, "not before {LEARN_FROM} scans");
        }
        h.note(11_000);
        // 12,000 + 3,000 rounded up to 1 KiB.
        assert_eq!(h.head(), 15 << 10);
        // A file that read farther raises it; the head never passes the full one.
        h.note(40_000);
        assert_eq!(h.head(), 49 << 10);
        h.note(1 << 30);
        assert_eq!(h.head(), REMOTE_HEAD_BYTES);
        // Nothing read at all: the smallest head.
        let h = HeadSizes::new();
        (0..LEARN_FROM).for_each(|_| h.note(0));
        assert_eq!(h.head(), MIN_HEAD);
    }
}
