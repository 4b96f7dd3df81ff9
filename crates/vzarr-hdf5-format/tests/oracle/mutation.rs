//! Seeded mutation test: thousands of corrupted copies of the fixtures and of generated files,
//! each read completely (every group, object header, attribute with its variable-length
//! values and references, every dataset's chunks) with a wall-clock guard; no mutant may
//! panic or hang. Half of the mutants are read with checksum verification off, so that the
//! decoders behind checksums meet hostile bytes too.
//!
//! `VZARR_MUTANTS=n` sets the number of mutants (default 6000); `VZARR_MUTANT_SEED` the seed.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vzarr_hdf5_format::{Error, File, MemStorage, ObjectKind, OpenOptions, TypeClass, VlenKind};

/// A small xorshift generator (no dependency needed).
pub(crate) struct XorShift(u64);

impl XorShift {
    pub(crate) fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// Reads everything there is to read; returns how many things were read, or the first
/// error.
pub(crate) fn walk_everything(data: Vec<u8>, verify_checksums: bool) -> Result<u64, Error> {
    let file = File::open_with(
        Arc::new(MemStorage::new(data)),
        OpenOptions { verify_checksums },
    )?;
    walk_everything_file(&file)
}

/// [`walk_everything`] over an open file.
pub(crate) fn walk_everything_file(file: &File) -> Result<u64, Error> {
    let mut n = 0u64;
    let mut first_err: Option<Error> = None;
    let mut keep = |r: Result<(), Error>| {
        if let Err(e) = r
            && first_err.is_none()
        {
            first_err = Some(e);
        }
    };
    let paths = file.object_paths()?;
    for (_, e) in paths.errors {
        keep(Err(e));
    }
    let mut addrs: Vec<(&u64, &String)> = paths.by_address.iter().collect();
    addrs.sort();
    for (&addr, path) in addrs {
        n += 1;
        keep(file.resolve_path(path).map(|_| ()));
        let oh = match file.object_header(addr) {
            Ok(oh) => oh,
            Err(e) => {
                keep(Err(e));
                continue;
            }
        };
        match file.attributes(&oh) {
            Ok(attrs) => {
                for a in attrs {
                    n += 1;
                    keep(read_value(file, &a.datatype, &a.value).map(|k| n += k));
                }
            }
            Err(e) => keep(Err(e)),
        }
        match file.object_kind(&oh) {
            ObjectKind::Group => keep(file.links(&oh).map(|l| n += l.len() as u64)),
            ObjectKind::Dataset => match file.dataset(&oh) {
                Ok(ds) => {
                    keep(file.visit_chunks::<Error>(&ds, |c| {
                        n += 1 + c.scaled.len() as u64;
                        Ok(())
                    }));
                    keep(ds.contiguous_extent(file).map(|_| ()));
                }
                Err(e) => keep(Err(e)),
            },
            _ => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// Reads the variable-length parts and references of an attribute value.
fn read_value(file: &File, t: &vzarr_hdf5_format::Datatype, value: &[u8]) -> Result<u64, Error> {
    let sizes = vzarr_hdf5_format::Sizes {
        offset: file.superblock().size_of_offsets,
        length: file.superblock().size_of_lengths,
        base: file.superblock().base_address,
    };
    let es = t.storage_size(sizes) as usize;
    let mut n = 0;
    match &t.class {
        TypeClass::VariableLength { kind, base } => {
            if let TypeClass::Reference { .. } = base.class {
                n += file.references(t, value)?.len() as u64;
            } else {
                let bs = match kind {
                    VlenKind::String { .. } => 1,
                    VlenKind::Sequence => base.storage_size(sizes),
                };
                for e in value.chunks_exact(es.max(1)) {
                    n += file.read_vlen(e, bs)?.len() as u64;
                }
            }
        }
        TypeClass::Reference { .. } => n += file.references(t, value)?.len() as u64,
        _ => {}
    }
    Ok(n)
}

/// Applies one random mutation.
fn mutate(rng: &mut XorShift, data: &mut Vec<u8>, signatures: &[usize]) -> &'static str {
    let len = data.len() as u64;
    if len == 0 {
        return "empty";
    }
    // Aim most mutations at the metadata: near a structure signature.
    let last = data.len() - 1;
    let near = |rng: &mut XorShift| -> usize {
        if !signatures.is_empty() && rng.below(4) != 0 {
            let s = signatures[rng.below(signatures.len() as u64) as usize];
            (s + rng.below(96) as usize).min(last)
        } else {
            rng.below(len) as usize
        }
    };
    match rng.below(7) {
        0 | 1 => {
            for _ in 0..=rng.below(4) {
                let at = near(rng);
                data[at] ^= 1 << rng.below(8);
            }
            "bit flip"
        }
        2 => {
            let at = near(rng);
            let v = match rng.below(3) {
                0 => 0x00,
                1 => 0xff,
                _ => rng.next() as u8,
            };
            for b in data.iter_mut().skip(at).take(1 + rng.below(8) as usize) {
                *b = v;
            }
            "overwrite"
        }
        3 => {
            let at = near(rng);
            data.truncate(at);
            "truncate"
        }
        4 => {
            let at = near(rng);
            let n = 16 + rng.below(512) as usize;
            for b in data.iter_mut().skip(at).take(n) {
                *b = 0;
            }
            "zero block"
        }
        5 => {
            let from = rng.below(len) as usize;
            let to = near(rng);
            let n = (8 + rng.below(256) as usize).min(data.len() - from);
            let block = data[from..from + n].to_vec();
            for (d, s) in data.iter_mut().skip(to).zip(block) {
                *d = s;
            }
            "duplicate block"
        }
        _ => {
            // An 8-byte little-endian value that looks like an address or a count.
            let at = near(rng);
            let v: u64 = match rng.below(4) {
                0 => rng.below(len),
                1 => u64::MAX - rng.below(4),
                2 => 1 << rng.below(64),
                _ => rng.next(),
            };
            for (d, s) in data.iter_mut().skip(at).zip(v.to_le_bytes()) {
                *d = s;
            }
            "address"
        }
    }
}

const SIGNATURES: [&[u8]; 21] = [
    b"TREE",
    b"HEAP",
    b"SNOD",
    b"OHDR",
    b"OCHK",
    b"FRHP",
    b"FHIB",
    b"FHDB",
    b"BTHD",
    b"BTIN",
    b"BTLF",
    b"FAHD",
    b"FADB",
    b"EAHD",
    b"EAIB",
    b"EASB",
    b"EADB",
    b"GCOL",
    b"SMTB",
    b"\x89HDF",
    b"\x01\x00",
];

fn signature_offsets(data: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    for i in 0..data.len().saturating_sub(4) {
        if SIGNATURES[..20].iter().any(|s| data[i..].starts_with(s)) {
            out.push(i);
        }
    }
    out
}

/// Outcome counts.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub mutants: u64,
    pub ok: u64,
    pub errors: u64,
    pub panics: u64,
    pub hangs: u64,
    pub slowest_ms: u128,
}

/// Runs `count` mutants of `inputs` (name, bytes), each in a thread with a `limit` guard.
pub(crate) fn run(inputs: &[(String, Vec<u8>)], count: u64, seed: u64, limit: Duration) -> Outcome {
    let mut out = Outcome::default();
    let mut rng = XorShift::new(seed);
    let sigs: Vec<Vec<usize>> = inputs.iter().map(|(_, d)| signature_offsets(d)).collect();
    let mut kinds: std::collections::BTreeMap<&'static str, u64> = Default::default();
    for i in 0..count {
        let k = (i % inputs.len() as u64) as usize;
        let (name, original) = &inputs[k];
        let mut data = original.clone();
        let mut what = Vec::new();
        for _ in 0..=rng.below(3) {
            what.push(mutate(&mut rng, &mut data, &sigs[k]));
        }
        for w in &what {
            *kinds.entry(w).or_default() += 1;
        }
        let verify = rng.below(2) == 0;
        let (tx, rx) = mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| walk_everything(data, verify)));
            let _ = tx.send(r);
        });
        out.mutants += 1;
        match rx.recv_timeout(limit) {
            Ok(Ok(Ok(_))) => out.ok += 1,
            Ok(Ok(Err(_))) => out.errors += 1,
            Ok(Err(_)) => {
                out.panics += 1;
                println!("PANIC: mutant {i} of {name} ({what:?}, checksums {verify})");
            }
            Err(_) => {
                out.hangs += 1;
                println!("HANG: mutant {i} of {name} ({what:?}, checksums {verify})");
            }
        }
        out.slowest_ms = out.slowest_ms.max(started.elapsed().as_millis());
    }
    println!("mutations applied: {kinds:?}");
    out
}
