//! Test support shared by vzarr's crates (never a dependency of a library, only of tests and
//! benches): an S3-compatible server on loopback ([`moto`]), a seeded generator
//! ([`SplitMix64`]) for reproducible mutations and samples, and record files of kerchunk's
//! Parquet references ([`parquet_refs`]).

pub mod moto;
pub mod parquet_refs;

/// SplitMix64: a small, fixed pseudo-random generator, so that seeded tests pick the same
/// values on every platform and version.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..m` (`m >= 1`).
    pub fn below(&mut self, m: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % m);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % m;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_bounded() {
        let mut a = SplitMix64(7);
        let mut b = SplitMix64(7);
        for _ in 0..100 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
    }
}
