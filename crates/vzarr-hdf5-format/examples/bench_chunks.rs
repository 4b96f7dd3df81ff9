//! Times the chunk visitor against libhdf5's `H5Dchunk_iter` on datasets of 1,000,000
//! chunks, one per index type, and counts reads and prefetch batches.
//!
//! `cargo run --release -p vzarr-hdf5-format --example bench_chunks -- DIR [CHUNKS]`
//! (the files are written into DIR on the first run).

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use hdf5::Extent;
use hdf5::file::LibraryVersion;
use vzarr_hdf5_format::{Error, File, FileStorage, Storage, StorageError};

/// Counts reads, bytes and prefetch calls, and the round trips a remote store with a
/// 64 KiB block cache would make (a read of an unfetched block: one; a prefetch call that
/// fetches anything new: one).
struct Counting {
    inner: FileStorage,
    reads: AtomicU64,
    bytes: AtomicU64,
    prefetches: AtomicU64,
    blocks: Mutex<HashSet<u64>>,
    trips: AtomicU64,
}

const BLOCK: u64 = 64 << 10;

impl Counting {
    fn fetch(&self, r: &Range<u64>) -> bool {
        let mut b = self.blocks.lock().unwrap();
        let mut new = false;
        for k in r.start / BLOCK..=(r.end.max(r.start + 1) - 1) / BLOCK {
            new |= b.insert(k);
        }
        new
    }
}

impl Storage for Counting {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        if self.fetch(&(offset..offset + len)) {
            self.trips.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.read(offset, len)
    }
    fn prefetch(&self, ranges: &[Range<u64>]) {
        self.prefetches.fetch_add(1, Ordering::Relaxed);
        let mut new = false;
        for r in ranges {
            new |= self.fetch(r);
        }
        if new {
            self.trips.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn write(path: &Path, n: usize, kind: &str) {
    if path.exists() {
        return;
    }
    let mut b = hdf5::File::with_options();
    let low = if kind == "v1btree" {
        LibraryVersion::Earliest
    } else {
        LibraryVersion::latest()
    };
    b.fapl().libver_bounds(low, LibraryVersion::latest());
    let f = b.create(path).unwrap();
    let side = (n as f64).sqrt() as usize;
    let data: Vec<i32> = (0..n as i32).collect();
    match kind {
        "v1btree" | "farray" => {
            let d = f
                .new_dataset::<i32>()
                .chunk(1)
                .deflate(1)
                .shape(n)
                .create("d")
                .unwrap();
            d.write(&data).unwrap();
        }
        "earray" => {
            let d = f
                .new_dataset::<i32>()
                .chunk(1)
                .deflate(1)
                .shape([Extent::resizable(n)])
                .create("d")
                .unwrap();
            d.write(&data).unwrap();
        }
        _ => {
            let d = f
                .new_dataset::<i32>()
                .chunk((1, 1))
                .deflate(1)
                .shape([Extent::resizable(side), Extent::resizable(side)])
                .create("d")
                .unwrap();
            d.write_raw(&data[..side * side]).unwrap();
        }
    }
    f.close().unwrap();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: bench_chunks DIR [CHUNKS]");
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    for kind in ["v1btree", "farray", "earray", "btree2"] {
        let path = Path::new(&dir).join(format!("{kind}_{n}.h5"));
        let t = Instant::now();
        write(&path, n, kind);
        let wrote = t.elapsed().as_secs_f64();
        let mut ours = Vec::new();
        let mut count = 0u64;
        let mut stats = (0, 0, 0, 0);
        for _ in 0..5 {
            let storage = Arc::new(Counting {
                inner: FileStorage::open(&path).unwrap(),
                reads: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                prefetches: AtomicU64::new(0),
                blocks: Mutex::new(HashSet::new()),
                trips: AtomicU64::new(0),
            });
            let t = Instant::now();
            let file = File::open(storage.clone()).unwrap();
            let oh = file
                .object_header(file.resolve_path("/d").unwrap())
                .unwrap();
            let ds = file.dataset(&oh).unwrap();
            let mut c = 0u64;
            let mut sum = 0u64;
            file.visit_chunks::<Error>(&ds, |r| {
                c += 1;
                sum = sum.wrapping_add(r.address ^ r.size);
                Ok(())
            })
            .unwrap();
            ours.push(t.elapsed().as_secs_f64());
            std::hint::black_box(sum);
            count = c;
            stats = (
                storage.reads.load(Ordering::Relaxed),
                storage.bytes.load(Ordering::Relaxed),
                storage.prefetches.load(Ordering::Relaxed),
                storage.trips.load(Ordering::Relaxed),
            );
        }
        let mut lib = Vec::new();
        let mut lib_count = 0u64;
        for _ in 0..5 {
            let t = Instant::now();
            let f = hdf5::File::open(&path).unwrap();
            let d = f.dataset("d").unwrap();
            let mut c = 0u64;
            d.chunks_visit(|_| {
                c += 1;
                0
            })
            .unwrap();
            lib.push(t.elapsed().as_secs_f64());
            lib_count = c;
        }
        assert_eq!(count, lib_count, "{kind}");
        println!(
            "{kind:8} {count:>8} chunks: ours {:7.1} ms, libhdf5 {:7.1} ms (medians of 5); {} reads, {:.1} MB, {} prefetch calls, {} round trips with a 64 KiB block cache; file written in {wrote:.1} s",
            median(ours) * 1e3,
            median(lib) * 1e3,
            stats.0,
            stats.1 as f64 / 1e6,
            stats.2,
            stats.3
        );
    }
}
