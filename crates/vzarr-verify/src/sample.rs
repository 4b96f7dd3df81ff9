//! Reproducible random samples of chunks.

use std::collections::HashSet;

/// SplitMix64: a small, fixed pseudo-random generator, so samples are reproducible across
/// versions and platforms.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..m` (`m >= 1`).
    fn below(&mut self, m: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % m);
        loop {
            let x = self.next();
            if x < zone {
                return x % m;
            }
        }
    }
}

/// `n` distinct indices of `0..total`, uniformly at random (Floyd's algorithm), sorted.
pub(crate) fn sample_indices(total: u64, n: u64, seed: u64) -> Vec<u64> {
    if n >= total {
        return (0..total).collect();
    }
    let mut rng = SplitMix64(seed);
    let mut set: HashSet<u64> = HashSet::with_capacity(n as usize);
    for j in total - n..total {
        let t = rng.below(j + 1);
        if !set.insert(t) {
            set.insert(j);
        }
    }
    let mut v: Vec<u64> = set.into_iter().collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_reproducible_and_distinct() {
        let a = sample_indices(1000, 50, 7);
        let b = sample_indices(1000, 50, 7);
        let c = sample_indices(1000, 50, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&i| i < 1000));
        assert_eq!(sample_indices(5, 10, 1), vec![0, 1, 2, 3, 4]);
        assert_eq!(sample_indices(5, 0, 1), Vec::<u64>::new());
        // Roughly uniform: every decile gets some of 2000 picks out of 10000.
        let s = sample_indices(10_000, 2000, 3);
        for d in 0..10 {
            let n = s.iter().filter(|&&i| i / 1000 == d).count();
            assert!((120..280).contains(&n), "decile {d}: {n}");
        }
    }
}
