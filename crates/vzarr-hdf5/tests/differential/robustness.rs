//! Seeded mutation test of the whole native scanner: corrupted copies of the fixtures, of
//! generated files and of the real files below `VZARR_REAL_HDF5_DIR` (when set) are scanned (attributes, dimension scales, layouts, masked chunks: the
//! mapping, beyond the format crate's own mutation test of its reader), each under
//! `catch_unwind` in a thread with a wall-clock guard. No mutant may panic or hang.
//!
//! `VZARR_MUTANTS=n` sets the number of mutants (default 6000); `VZARR_MUTANT_SEED` the seed.
//!
//! Mutants whose datasets would need a manifest of more than [`MAX_CHUNKS`] chunks are left
//! out (counted): today's dense `ChunkManifest::new_missing` allocates 20 bytes per logical
//! chunk, so such a mutant measures the machine's memory, not the scanner (the libhdf5
//! scanner allocates the same).

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vzarr_hdf5_format::{DataspaceKind, File, Layout, MemStorage, ObjectKind};
use vzarr_source::{ByteSource, MemSource};

/// Most logical chunks a mutant's dataset may have to be scanned.
const MAX_CHUNKS: u64 = 1 << 22;
/// Largest chunk (bytes before filtering) of a mutant's dataset.
const MAX_CHUNK_BYTES: u64 = 64 << 20;
/// Wall-clock limit of one mutant's scan.
const LIMIT: Duration = Duration::from_secs(10);

/// A small xorshift generator.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

const SIGNATURES: [&[u8]; 8] = [
    b"TREE", b"HEAP", b"SNOD", b"OHDR", b"OCHK", b"GCOL", b"FAHD", b"EAHD",
];

/// Offsets of structures worth hitting: signatures, and the attribute and dataset names the
/// mapping reads (`_FillValue`, `DIMENSION_LIST`, `CLASS`, `NAME`).
fn targets(data: &[u8]) -> Vec<usize> {
    let names: [&[u8]; 5] = [
        b"_FillValue",
        b"DIMENSION_LIST",
        b"CLASS",
        b"NAME",
        b"DIMENSION_SCALE",
    ];
    (0..data.len().saturating_sub(4))
        .filter(|&i| {
            SIGNATURES.iter().any(|s| data[i..].starts_with(s))
                || names.iter().any(|n| data[i..].starts_with(n))
        })
        .collect()
}

/// Applies one random mutation near a target (most of the time).
fn mutate(rng: &mut XorShift, data: &mut Vec<u8>, targets: &[usize]) -> &'static str {
    if data.is_empty() {
        return "empty";
    }
    let last = data.len() - 1;
    let len = data.len() as u64;
    let near = |rng: &mut XorShift| -> usize {
        if !targets.is_empty() && rng.below(4) != 0 {
            let t = targets[rng.below(targets.len() as u64) as usize];
            (t + rng.below(160) as usize).min(last)
        } else {
            rng.below(len) as usize
        }
    };
    match rng.below(20) {
        0..=7 => {
            for _ in 0..=rng.below(4) {
                let at = near(rng);
                data[at] ^= 1 << rng.below(8);
            }
            "bit flip"
        }
        8..=11 => {
            let at = near(rng);
            let v = [0x00, 0xff, rng.next() as u8][rng.below(3) as usize];
            for b in data.iter_mut().skip(at).take(1 + rng.below(8) as usize) {
                *b = v;
            }
            "overwrite"
        }
        12 => {
            let at = near(rng);
            data.truncate(at.max(1));
            "truncate"
        }
        13..=15 => {
            let from = rng.below(len) as usize;
            let to = near(rng);
            let n = (8 + rng.below(128) as usize).min(data.len() - from);
            let block = data[from..from + n].to_vec();
            for (d, s) in data.iter_mut().skip(to).zip(block) {
                *d = s;
            }
            "duplicate block"
        }
        _ => {
            let at = near(rng);
            let v: u64 = match rng.below(4) {
                0 => rng.below(len),
                1 => u64::MAX - rng.below(4),
                2 => 1 << rng.below(40),
                _ => rng.next(),
            };
            for (d, s) in data.iter_mut().skip(at).zip(v.to_le_bytes()) {
                *d = s;
            }
            "address"
        }
    }
}

/// Whether scanning `data` would allocate a manifest or a chunk beyond the limits.
fn too_big(data: &[u8]) -> bool {
    let Ok(file) = File::open(Arc::new(MemStorage::new(data.to_vec()))) else {
        return false;
    };
    let Ok(paths) = file.object_paths() else {
        return false;
    };
    paths.by_address.keys().any(|&addr| {
        let Ok(oh) = file.object_header(addr) else {
            return false;
        };
        if file.object_kind(&oh) != ObjectKind::Dataset {
            return false;
        }
        let Ok(ds) = file.dataset(&oh) else {
            return false;
        };
        if ds.dataspace.kind != DataspaceKind::Simple {
            return false;
        }
        let chunk: Vec<u64> = match &ds.layout.layout {
            Layout::Chunked(ch) => {
                if ch.chunk_bytes().is_none_or(|b| b > MAX_CHUNK_BYTES) {
                    return true;
                }
                ch.chunk_dims.clone()
            }
            _ => ds.dataspace.dims.iter().map(|&d| d.max(1)).collect(),
        };
        let n = ds
            .dataspace
            .dims
            .iter()
            .zip(&chunk)
            .try_fold(1u64, |a, (&d, &c)| a.checked_mul(d.div_ceil(c.max(1))));
        n.is_none_or(|n| n > MAX_CHUNKS)
    })
}

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<PathBuf> = crate::hdf5_fixtures()
        .into_iter()
        .filter(|p| {
            !p.to_string_lossy().contains("archive/tas_2023") || p.ends_with("tas_202302.nc")
        })
        .collect();
    paths.extend(crate::gen_files::all(dir.path()));
    let mut out: Vec<(String, Vec<u8>)> = paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()))
        .collect();
    // The real HDF5 files no one here wrote (NWB, MATLAB, model output, third-party filters),
    // those of at most REAL_MAX_BYTES, when the corpus is there.
    if let Some(dir) = std::env::var_os("VZARR_REAL_HDF5_DIR") {
        let mut real = Vec::new();
        crate::real::files_below(std::path::Path::new(&dir), &mut real);
        for p in real {
            let data = std::fs::read(&p).unwrap();
            let hdf5 = vzarr_source::hdf5_signature_offsets(data.len() as u64)
                .any(|o| data[o as usize..].starts_with(&vzarr_source::HDF5_SIGNATURE));
            if hdf5 && data.len() <= REAL_MAX_BYTES {
                out.push((p.display().to_string(), data));
            }
        }
    }
    out
}

/// Largest real file mutated (bigger ones cost time per mutant, not coverage).
const REAL_MAX_BYTES: usize = 1 << 20;

#[test]
fn mutants_never_panic_or_hang() {
    let count: u64 = std::env::var("VZARR_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    let seed: u64 = std::env::var("VZARR_MUTANT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_abcd);
    let inputs = inputs();
    let tgts: Vec<Vec<usize>> = inputs.iter().map(|(_, d)| targets(d)).collect();
    let mut rng = XorShift(seed.max(1));
    let (mut ok, mut errors, mut panics, mut hangs, mut left_out) = (0u64, 0u64, 0, 0, 0u64);
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    let mut kinds: std::collections::BTreeMap<String, u64> = Default::default();
    for i in 0..count {
        let k = (i % inputs.len() as u64) as usize;
        let (name, original) = &inputs[k];
        let mut data = original.clone();
        let mut what = Vec::new();
        for _ in 0..1 + rng.below(4) / 3 {
            what.push(mutate(&mut rng, &mut data, &tgts[k]));
        }
        if too_big(&data) {
            left_out += 1;
            continue;
        }
        let split = [None, Some(4096)][rng.below(2) as usize];
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let src: Arc<dyn ByteSource> = Arc::new(MemSource::new("mem:///mutant.h5", data));
                let mut o = vzarr_hdf5::ScanOptions::local().with_split_contiguous_bytes(split);
                o.block_size = 4096;
                vzarr_hdf5::scan(src, &o).map(|ds| ds.arrays.len())
            }));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(LIMIT) {
            Ok(Ok(Ok(_))) => ok += 1,
            Ok(Ok(Err(e))) => {
                errors += 1;
                let kind = match &e {
                    vzarr_hdf5::Hdf5Error::Open { .. } => "open".to_string(),
                    vzarr_hdf5::Hdf5Error::Structure { what, .. } => format!("structure: {what}"),
                    vzarr_hdf5::Hdf5Error::Object { reason, .. } => {
                        format!("object: {}", reason.split(':').next().unwrap_or(""))
                    }
                    other => format!("{:?}", std::mem::discriminant(other)),
                };
                *kinds.entry(kind).or_insert(0u64) += 1;
                // Every error names the source.
                assert!(e.to_string().starts_with("mem:///mutant.h5"), "{e}");
            }
            Ok(Err(_)) => {
                panics += 1;
                println!("PANIC: mutant {i} of {name} ({what:?})");
            }
            Err(_) => {
                hangs += 1;
                println!("HANG: mutant {i} of {name} ({what:?})");
            }
        }
        slowest = slowest.max(t0.elapsed());
    }
    println!(
        "mutants: {count} from {} inputs (seed {seed:#x}): {ok} scanned, {errors} refused with an \
         error, {panics} panics, {hangs} hangs, {left_out} left out (manifest or chunk beyond \
         the limits); slowest {slowest:?}; {:?} in all",
        inputs.len(),
        started.elapsed()
    );
    println!("errors by kind: {kinds:?}");
    assert_eq!((panics, hangs), (0, 0));
    assert!(ok > 0 && errors > 0);
}
