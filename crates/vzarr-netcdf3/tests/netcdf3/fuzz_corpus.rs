//! Fuzz-style robustness without cargo-fuzz: every file of the seed corpus
//! (`tests/corpus/`), then 20,000 deterministic pseudo-random mutations of the valid seeds,
//! go through `parse_header` and `scan`. Nothing may panic, and a counting global allocator
//! checks that no mutated input makes the scanner ask for a large allocation.
//!
//! `cargo test -p vzarr-netcdf3 --test netcdf3 -- --ignored write_seed_corpus` rewrites the
//! seed corpus (netCDF-C writes the valid files; the `bad_*` files are patched copies).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use vzarr_netcdf3::{MemSource, ScanOptions, parse_header, scan};

/// Passes requests to the system allocator and, on threads that opted in (other tests run in
/// parallel in this binary), remembers the largest single request and refuses absurd ones.
struct CountingAlloc;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
}

/// Tracked requests above this fail at once (the test then aborts with "memory allocation of
/// N bytes failed") instead of swapping.
const REFUSE: usize = 1 << 30;

/// Records a request; false if it must be refused.
fn note(size: usize) -> bool {
    if TRACK.try_with(Cell::get).unwrap_or(false) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        return size <= REFUSE;
    }
    true
}

// SAFETY: every call is forwarded unchanged to `System`, or fails with a null pointer, which
// the `GlobalAlloc` contract allows.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract; forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !note(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// No single allocation may exceed this while scanning inputs of a few KB.
const MAX_ALLOCATION: usize = 1 << 20;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Runs both entry points; returns whether the scan succeeded.
fn exercise(bytes: &[u8], split: Option<u64>) -> bool {
    let src = MemSource::new("mem://fuzz/input.nc", bytes.to_vec());
    let header = parse_header(&src);
    let ds = scan(
        &src,
        &ScanOptions {
            split_contiguous_bytes: split,
        },
    );
    match (&header, &ds) {
        (Err(_), Ok(_)) => panic!("scan succeeded where the header failed"),
        (_, Ok(ds)) => {
            ds.validate().expect("a successful scan validates");
            true
        }
        (_, Err(e)) => {
            assert!(e.to_string().contains("mem://fuzz/input.nc"), "{e}");
            false
        }
    }
}

#[test]
fn seed_corpus_never_panics() {
    let files = corpus();
    assert!(
        files.len() >= 10,
        "seed corpus missing: {}",
        corpus_dir().display()
    );
    for (name, bytes) in &files {
        assert!(bytes.len() < 4096, "{name} is {} bytes", bytes.len());
        for split in [None, Some(1), Some(16)] {
            let ok = exercise(bytes, split);
            if name.starts_with("valid_") {
                assert!(ok, "{name} must scan");
            } else if name.starts_with("bad_") {
                assert!(!ok, "{name} must be refused");
            }
        }
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const WORDS32: [u32; 16] = [
    0,
    1,
    2,
    3,
    4,
    7,
    0x0A,
    0x0B,
    0x0C,
    0xFF,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0xFFFF_FFFE,
    0x10000,
    12,
];
const WORDS64: [u64; 8] = [
    0,
    1,
    u64::MAX,
    u64::MAX - 1,
    1 << 63,
    i64::MAX as u64,
    1 << 40,
    0xFFFF_FFFF,
];

/// One random mutation, mostly aimed at the header (the first `hot` bytes).
fn mutate(rng: &mut Rng, b: &mut Vec<u8>, hot: usize) {
    let hot = hot.clamp(1, b.len().max(1));
    match rng.below(10) {
        0 if !b.is_empty() => {
            let i = rng.below(hot.min(b.len()));
            b[i] ^= 1 << rng.below(8);
        }
        1 if !b.is_empty() => {
            let i = rng.below(hot.min(b.len()));
            b[i] = rng.next() as u8;
        }
        2 | 3 if b.len() >= 4 => {
            let i = rng.below(hot.min(b.len() - 3)) & !3;
            let w = WORDS32[rng.below(WORDS32.len())];
            b[i..i + 4].copy_from_slice(&w.to_be_bytes());
        }
        4 if b.len() >= 8 => {
            let i = rng.below(hot.min(b.len() - 7)) & !3;
            let w = WORDS64[rng.below(WORDS64.len())];
            b[i..i + 8].copy_from_slice(&w.to_be_bytes());
        }
        5 => {
            let n = rng.below(b.len() + 1);
            b.truncate(n);
        }
        6 => {
            for _ in 0..rng.below(64) {
                b.push(rng.next() as u8);
            }
        }
        7 if !b.is_empty() => {
            let start = rng.below(b.len());
            let end = (start + rng.below(16)).min(b.len());
            b.drain(start..end);
        }
        8 if !b.is_empty() => {
            let start = rng.below(b.len());
            let end = (start + 1 + rng.below(32)).min(b.len());
            let piece: Vec<u8> = b[start..end].to_vec();
            let at = rng.below(b.len());
            b.splice(at..at, piece);
        }
        _ => {
            // A small count somewhere in the header, as netCDF counts look.
            if b.len() >= 4 {
                let i = rng.below(hot.min(b.len() - 3)) & !3;
                let w = rng.below(40) as u32;
                b[i..i + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
    }
}

#[test]
fn twenty_thousand_mutations_never_panic_or_explode() {
    let seeds: Vec<Vec<u8>> = corpus()
        .into_iter()
        .filter(|(n, _)| n.starts_with("valid_"))
        .map(|(_, b)| b)
        .collect();
    assert!(!seeds.is_empty());
    let hot: Vec<usize> = seeds
        .iter()
        .map(|b| {
            parse_header(&MemSource::new("mem://seed", b.clone()))
                .map(|h| h.header_len as usize + 16)
                .unwrap_or(b.len())
        })
        .collect();
    let mut rng = Rng(0x5EED_0FC0_FFEE_0042);
    let (mut ok, mut refused) = (0u32, 0u32);
    LARGEST.store(0, Ordering::Relaxed);
    for _ in 0..20_000 {
        let k = rng.below(seeds.len());
        let mut b = seeds[k].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut b, hot[k]);
        }
        let split = match rng.below(3) {
            0 => None,
            1 => Some(rng.below(64) as u64),
            _ => Some(rng.next()),
        };
        TRACK.with(|t| t.set(true));
        let scanned = exercise(&b, split);
        TRACK.with(|t| t.set(false));
        if scanned {
            ok += 1;
        } else {
            refused += 1;
        }
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    println!(
        "mutations: {ok} scanned, {refused} refused; largest single allocation {largest} bytes"
    );
    assert!(
        ok > 500 && refused > 500,
        "mutations too mild or too harsh: {ok}/{refused}"
    );
    assert!(
        largest < MAX_ALLOCATION,
        "an input made the scanner allocate {largest} bytes at once"
    );
}

/// Rewrites `tests/corpus/` (run on demand, see the module docs).
#[test]
#[ignore]
fn write_seed_corpus() {
    use crate::common::*;
    let dir = corpus_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        assert!(bytes.len() < 4096, "{name}: {} bytes", bytes.len());
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    let small = |fmt: Fmt| -> Vec<u8> {
        let p = tmp.path().join(format!("small_{fmt:?}.nc"));
        let mut f = netcdf::create_with(&p, fmt.options()).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("x", 3).unwrap();
        f.add_dimension("len", 4).unwrap();
        f.add_attribute("title", "seed").unwrap();
        f.add_attribute("version", vec![1i16, 2]).unwrap();
        let mut t = f.add_variable::<f64>("time", &["time"]).unwrap();
        t.put_attribute("units", "days since 2000-01-01").unwrap();
        let mut v = f.add_variable::<i16>("v", &["time", "x"]).unwrap();
        v.put_attribute("_FillValue", -99i16).unwrap();
        v.put_attribute("scale_factor", 0.5f32).unwrap();
        f.add_variable::<f32>("lat", &["x"]).unwrap();
        f.add_variable_with_type("label", &["x", "len"], &netcdf::types::NcVariableType::Char)
            .unwrap();
        f.add_variable::<i32>("scalar", &[]).unwrap();
        if fmt == Fmt::Cdf5 {
            f.add_variable::<u16>("u16", &["x"]).unwrap();
            f.add_variable::<u64>("u64", &["time"]).unwrap();
            f.add_variable::<i64>("i64", &[]).unwrap();
            f.add_variable::<u8>("u8", &["time", "x"]).unwrap();
        }
        f.enddef().unwrap();
        f.variable_mut("time")
            .unwrap()
            .put_values(&[0.0f64, 1.0], ([0], [2]))
            .unwrap();
        f.variable_mut("v")
            .unwrap()
            .put_values(&[1i16, 2, 3, 4, 5, 6], ([0, 0], [2, 3]))
            .unwrap();
        f.variable_mut("lat")
            .unwrap()
            .put_values(&[-10f32, 0., 10.], ..)
            .unwrap();
        f.close().unwrap();
        std::fs::read(&p).unwrap()
    };
    let single = {
        let p = tmp.path().join("single.nc");
        write_single(&p, Fmt::Cdf1, Single::Byte, 3);
        std::fs::read(&p).unwrap()
    };
    // netCDF-C pads an empty file to 4096 bytes; the specification's 32-byte form instead.
    let empty = Spec::new(1).build().0;
    let cdf1 = small(Fmt::Cdf1);
    let cdf2 = small(Fmt::Cdf2);
    let cdf5 = small(Fmt::Cdf5);
    write("valid_cdf1_small.nc", &cdf1);
    write("valid_cdf2_small.nc", &cdf2);
    write("valid_cdf5_types.nc", &cdf5);
    write("valid_cdf1_single_record_var.nc", &single);
    write("valid_cdf1_empty.nc", &empty);
    let mut streaming = cdf1.clone();
    streaming[4..8].fill(0xFF);
    write("valid_cdf1_streaming.nc", &streaming);

    let h1 = parse_header(&MemSource::new("mem://seed", cdf1.clone())).unwrap();
    let h5 = parse_header(&MemSource::new("mem://seed", cdf5.clone())).unwrap();
    let mut magic = cdf1.clone();
    magic[..4].copy_from_slice(b"\x89HDF");
    write("bad_magic.nc", &magic);
    let mut version = cdf2.clone();
    version[3] = 4;
    write("bad_version.nc", &version);
    write(
        "bad_truncated_header.nc",
        &cdf1[..h1.header_len as usize / 2],
    );
    write(
        "bad_truncated_header_cdf5.nc",
        &cdf5[..h5.header_len as usize - 3],
    );
    let mut absurd = cdf1.clone();
    absurd[12..16].copy_from_slice(&0x7FFF_FFFFu32.to_be_bytes());
    write("bad_absurd_dim_count.nc", &absurd);
    let mut absurd5 = cdf5.clone();
    absurd5[16..24].copy_from_slice(&u64::MAX.to_be_bytes());
    write("bad_absurd_dim_count_cdf5.nc", &absurd5);
    let mut begin = cdf2.clone();
    let end = parse_header(&MemSource::new("mem://seed", cdf2.clone()))
        .unwrap()
        .header_len as usize;
    begin[end - 8..end].copy_from_slice(&(1u64 << 40).to_be_bytes());
    write("bad_begin_beyond_eof.nc", &begin);
    let mut records = cdf1.clone();
    records[4..8].copy_from_slice(&1000u32.to_be_bytes());
    write("bad_numrecs_beyond_eof.nc", &records);
    write("bad_truncated_data.nc", &single[..single.len() - 2]);
}
