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
//!
//! What counts as read: the parse's own reads and, of the chunk bytes a scan keeps for the
//! planner because its head held them, the chunks of at most [`PLANNER_CHUNK_BYTES`]: the
//! ones the planner reads (coordinates and their bounds, variables compared across files,
//! arrays of small chunks it keeps inline). A data chunk of 12 KB kept only because a 256 KiB
//! head happened to hold it is not needed, and a head grown to keep it would fetch every
//! file whole.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use vzarr_core::{ChunkRef, VirtualDataset};

use crate::REMOTE_HEAD_BYTES;

/// Files scanned with the full head before the head is learned.
pub const LEARN_FROM: usize = 4;

/// Chunks kept from the head count towards what a scan read when at most this long.
pub const PLANNER_CHUNK_BYTES: u64 = 4 << 10;

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

/// The farthest end of the chunks a scan kept for the planner that count towards its reach:
/// those of at most [`PLANNER_CHUNK_BYTES`] (0 if none).
pub fn kept_reach(ds: &VirtualDataset) -> u64 {
    ds.arrays
        .values()
        .flat_map(|a| {
            a.manifest.iter_stored().filter_map(|(i, r)| match r {
                ChunkRef::Range { offset, length, .. }
                    if length <= PLANNER_CHUNK_BYTES && a.manifest.fetched(i).is_some() =>
                {
                    offset.checked_add(length)
                }
                _ => None,
            })
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_kept_chunks_the_planner_reads_count() {
        use vzarr_core::{ChunkGrid, ChunkManifest, DataType, Endian, FillValue, VirtualArray};
        // (offset, length, kept) of each chunk of one array.
        let array = |chunks: &[(u64, u64, bool)]| {
            let mut manifest = ChunkManifest::new_missing(chunks.len());
            let sid = manifest.intern("s3://b/f.nc").unwrap();
            for (i, &(offset, length, kept)) in chunks.iter().enumerate() {
                manifest.set_range(i, sid, offset, length).unwrap();
                if kept {
                    manifest.keep_fetched(i, vec![0u8; length as usize].into());
                }
            }
            VirtualArray {
                data_type: DataType::UInt8,
                endian: Endian::Little,
                fill_value: FillValue::zero(DataType::UInt8),
                codecs: vec![],
                dimension_names: vec!["x".into()],
                attributes: Default::default(),
                grid: ChunkGrid::regular(&[chunks.len() as u64], &[1]).unwrap(),
                manifest,
            }
        };
        let mut ds = VirtualDataset::new();
        assert_eq!(kept_reach(&ds), 0);
        // A coordinate of 4 KiB kept at 18,000; a data chunk of 12 KB kept after it; a small
        // chunk farther on that was not kept (beyond the head).
        ds.arrays
            .insert("time".into(), array(&[(18_000, 4096, true)]));
        ds.arrays
            .insert("tas".into(), array(&[(22_096, 12_000, true)]));
        ds.arrays
            .insert("time_bnds".into(), array(&[(300_000, 16, false)]));
        assert_eq!(kept_reach(&ds), 18_000 + 4096);
    }

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
