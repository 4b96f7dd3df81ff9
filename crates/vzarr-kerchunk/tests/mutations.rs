//! Seeded mutations of valid references: the parser returns a value or a typed error for
//! every one, never panics, and never builds more chunks than its limit allows. (The same
//! parser is a cargo-fuzz target: `fuzz/fuzz_targets/kerchunk_refs.rs`.)

use vzarr_kerchunk::{ParseLimits, parse_refs};
use vzarr_test_support::SplitMix64;

fn seed_refs() -> Vec<Vec<u8>> {
    let manifests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    let mut seeds: Vec<Vec<u8>> = ["nc4_climate.nc.json", "archive.json", "dtypes.h5.json"]
        .iter()
        .map(|n| std::fs::read(manifests.join(n)).expect("golden manifest"))
        .collect();
    seeds.push(br#"{"version":1,"templates":{"u":"s3://b"},"refs":{"zarr.json":"{\"zarr_format\":3,\"node_type\":\"group\"}"}}"#.to_vec());
    seeds
}

/// Hostile fragments spliced into the text.
const FRAGMENTS: &[&str] = &[
    "18446744073709551615",
    "-1",
    "1e308",
    "[[1,4000000000]]",
    "\"base64:!!!\"",
    "\"../../etc/passwd\"",
    "{{u}}",
    "null",
    "[]",
    "{}",
    "\"c/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0\"",
    "\\u0000",
    "\"rectilinear\"",
    "[1099511627776,1099511627776,1099511627776]",
];

fn mutate(rng: &mut SplitMix64, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..=rng.below(3) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len() as u64) as usize;
        match rng.below(5) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = b"0123456789[]{},:\"-e."[rng.below(20) as usize],
            2 => {
                let end = (at + 1 + rng.below(64) as usize).min(b.len());
                b.drain(at..end);
            }
            3 => {
                let f = FRAGMENTS[rng.below(FRAGMENTS.len() as u64) as usize];
                b.splice(at..at, f.bytes());
            }
            _ => b.truncate(at),
        }
    }
    b
}

#[test]
fn mutated_references_parse_or_fail_cleanly() {
    let seeds = seed_refs();
    let limits = ParseLimits::with_max_chunks(1 << 20);
    let mut rng = SplitMix64(0x5eed_u64);
    let (mut ok, mut err) = (0u32, 0u32);
    let n: u64 = std::env::var("VZARR_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    for k in 0..n {
        let seed = &seeds[(k % seeds.len() as u64) as usize];
        let m = mutate(&mut rng, seed);
        match std::panic::catch_unwind(|| parse_refs(&m, "mutant.json", limits)) {
            Ok(Ok(p)) => {
                let chunks: usize = p.dataset.arrays.values().map(|a| a.manifest.len()).sum();
                assert!(chunks as u64 <= 1 << 20, "mutant {k}: {chunks} chunks");
                ok += 1;
            }
            Ok(Err(e)) => {
                assert!(e.to_string().starts_with("mutant.json: "), "{e}");
                err += 1;
            }
            Err(_) => panic!(
                "mutant {k} panicked: {}",
                String::from_utf8_lossy(&m[..m.len().min(300)])
            ),
        }
    }
    eprintln!("{n} mutants: {ok} parsed, {err} refused, 0 panics");
    assert_eq!(u64::from(ok + err), n);
    assert!(
        err > 0 && ok > 0,
        "mutations should both keep and break references"
    );
}
