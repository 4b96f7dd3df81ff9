//! Times whole scans, native (`vzarr_hdf5::scan`) against the libhdf5 scanner
//! (`vzarr_hdf5_oracle::scan_file`), on datasets of 1,000,000 chunks, one per index type
//! (the files `vzarr-hdf5-format`'s `bench_chunks` example writes: the same names and
//! contents, written here when missing), checks that both give the same dataset, and counts
//! what the native scan asks of the byte layer with the local and the object-storage options
//! (calls to the source below the block cache, each a batch of ranges fetched at once, i.e. a
//! round trip on object storage; ranges; bytes).
//!
//! `cargo run --release -p vzarr-hdf5 --example bench_scan -- DIR [CHUNKS]`

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use hdf5::Extent;
use hdf5::file::LibraryVersion;
use vzarr_core::SourceRecord;
use vzarr_source::{ByteSource, LocalFile, SourceError};

/// Counts the calls, ranges and bytes that reach the source.
#[derive(Debug)]
struct Calls {
    inner: LocalFile,
    calls: AtomicU64,
    ranges: AtomicU64,
    bytes: AtomicU64,
}

impl ByteSource for Calls {
    fn record(&self) -> &SourceRecord {
        self.inner.record()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.ranges
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        let got = self.inner.read_ranges(ranges)?;
        let n: u64 = got.iter().map(|b| b.len() as u64).sum();
        self.bytes.fetch_add(n, Ordering::Relaxed);
        Ok(got)
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
            let d = f.new_dataset::<i32>().chunk(1).deflate(1).shape(n);
            d.create("d").unwrap().write(&data).unwrap();
        }
        "earray" => {
            let d = f
                .new_dataset::<i32>()
                .chunk(1)
                .deflate(1)
                .shape([Extent::resizable(n)]);
            d.create("d").unwrap().write(&data).unwrap();
        }
        _ => {
            let d = f
                .new_dataset::<i32>()
                .chunk((1, 1))
                .deflate(1)
                .shape([Extent::resizable(side), Extent::resizable(side)]);
            d.create("d")
                .unwrap()
                .write_raw(&data[..side * side])
                .unwrap();
        }
    }
    f.close().unwrap();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn native(path: &Path, opts: &vzarr_hdf5::ScanOptions) -> (vzarr_core::VirtualDataset, [u64; 3]) {
    let src = Arc::new(Calls {
        inner: LocalFile::open(path).unwrap(),
        calls: AtomicU64::new(0),
        ranges: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let ds = vzarr_hdf5::scan(src.clone(), opts).unwrap();
    let counts = [
        src.calls.load(Ordering::Relaxed),
        src.ranges.load(Ordering::Relaxed),
        src.bytes.load(Ordering::Relaxed),
    ];
    (ds, counts)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: bench_scan DIR [CHUNKS]");
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let mut local = vzarr_hdf5::ScanOptions::local();
    // Overrides of the local options, for tuning: BENCH_HEAD, BENCH_BLOCK, BENCH_CAPACITY.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    local.head_bytes = env("BENCH_HEAD").unwrap_or(local.head_bytes);
    local.block_size = env("BENCH_BLOCK").unwrap_or(local.block_size);
    local.cache_capacity = env("BENCH_CAPACITY").unwrap_or(local.cache_capacity);
    let remote = vzarr_hdf5::ScanOptions::object_storage();
    for kind in ["v1btree", "farray", "earray", "btree2"] {
        let path = Path::new(&dir).join(format!("{kind}_{n}.h5"));
        write(&path, n, kind);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut last = None;
        for _ in 0..5 {
            let t = Instant::now();
            let (ds, _) = native(&path, &local);
            ours.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let o = vzarr_hdf5_oracle::scan_file(&path, &Default::default()).unwrap();
            theirs.push(t.elapsed().as_secs_f64());
            last = Some((ds, o));
        }
        let (ds, o) = last.unwrap();
        assert!(ds == o, "{kind}: the scanners disagree");
        let chunks: u64 = ds
            .arrays
            .values()
            .map(|a| a.manifest.stats().referenced)
            .sum();
        let (_, l) = native(&path, &local);
        let (_, r) = native(&path, &remote);
        println!(
            "{kind:8} {chunks:>8} chunks: native {:7.1} ms, libhdf5 scanner {:7.1} ms (medians \
             of 5; same result); byte layer, local options: {} calls, {} ranges, {:.1} MB; \
             object-storage options: {} calls, {} ranges, {:.1} MB",
            median(ours) * 1e3,
            median(theirs) * 1e3,
            l[0],
            l[1],
            l[2] as f64 / 1e6,
            r[0],
            r[1],
            r[2] as f64 / 1e6,
        );
    }
}
