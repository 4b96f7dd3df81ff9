//! How a write is cut: each array's manifests split along its axes so that none holds more
//! than a given number of references (Icechunk's manifest splitting configuration), and the
//! dataset's stored chunks in pieces cut only between those splits.

use std::ops::Range;

use icechunk::config::{
    ManifestSplitCondition, ManifestSplitDim, ManifestSplitDimCondition, ManifestSplittingConfig,
};
use vzarr_core::VirtualArray;

/// Consecutive stored chunks of one array, written in one go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Segment {
    /// Index into the dataset's arrays (in path order).
    pub(super) array: usize,
    /// C-order positions.
    pub(super) range: Range<usize>,
}

/// How an array's chunks are split into manifests: axes before `axis` one chunk wide, `axis`
/// in runs of `size` chunks, the axes after it whole. Each split is then a run of consecutive
/// C-order positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    axis: usize,
    size: u64,
    /// Chunks of the axes after `axis` (one step along `axis`).
    inner: u64,
    /// Chunks along `axis`.
    along: u64,
}

impl Split {
    /// The split of an array whose grid has `counts` chunks per axis, none holding more than
    /// `max` chunks; `None` when the whole array fits in one.
    fn of(counts: &[u64], max: u64) -> Option<Split> {
        let max = max.max(1);
        let total = counts
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n.max(1)));
        if total.is_some_and(|t| t <= max) {
            return None;
        }
        for axis in 0..counts.len() {
            let inner = counts[axis + 1..]
                .iter()
                .try_fold(1u64, |a, &n| a.checked_mul(n.max(1)));
            if let Some(inner) = inner.filter(|&i| i <= max) {
                let along = counts[axis].max(1);
                // Runs of a fixed length whatever the array's extent: the splits an append
                // along the axis does not reach keep their edges.
                return Some(Split {
                    axis,
                    size: (max / inner).max(1),
                    inner,
                    along,
                });
            }
        }
        None
    }

    /// Which split C-order position `i` falls in (increasing with `i`).
    fn key(&self, i: u64) -> (u64, u64) {
        let block = self.along * self.inner;
        (i / block, (i % block) / self.inner / self.size)
    }
}

/// The most references a manifest of an array whose first axis is the concatenation
/// dimension holds: an append rewrites the split it reaches (the last), so this bounds what
/// an append adds to a repository (Icechunk's manifests take about 17 bytes a reference:
/// under 300 KB), whatever the archive's size.
pub const APPEND_SPLIT_REFS: usize = 16_384;

/// The most references one manifest of `a` holds: `max`, or [`APPEND_SPLIT_REFS`] if fewer
/// when `a`'s first axis is `along` (the concatenation dimension).
fn max_of(a: &VirtualArray, max: usize, along: Option<&str>) -> u64 {
    let appendable = along.is_some() && a.dimension_names.first().map(String::as_str) == along;
    (if appendable {
        max.min(APPEND_SPLIT_REFS)
    } else {
        max
    }) as u64
}

/// Icechunk's manifest splitting for the dataset's arrays: one rule per array that needs
/// splitting (its path matched exactly), as [`Split::of`] chooses with at most `max`
/// references a manifest ([`APPEND_SPLIT_REFS`] along the concatenation dimension `along`).
pub(super) fn splitting(
    arrays: &[(&str, &VirtualArray)],
    max: usize,
    along: Option<&str>,
) -> ManifestSplittingConfig {
    let rules = arrays
        .iter()
        .filter_map(|(path, a)| {
            let split = Split::of(&a.grid.grid_shape(), max_of(a, max, along))?;
            let mut dims: Vec<ManifestSplitDim> = (0..split.axis)
                .map(|axis| ManifestSplitDim {
                    condition: ManifestSplitDimCondition::Axis(axis),
                    num_chunks: 1,
                })
                .collect();
            dims.push(ManifestSplitDim {
                condition: ManifestSplitDimCondition::Axis(split.axis),
                num_chunks: u32::try_from(split.size).unwrap_or(u32::MAX),
            });
            Some((
                ManifestSplitCondition::PathMatches {
                    regex: format!("^{}$", regex_escape(&format!("/{path}"))),
                },
                dims,
            ))
        })
        .collect();
    ManifestSplittingConfig {
        split_sizes: Some(rules),
    }
}

/// `text` as a regular expression matching exactly it (the `regex` crate's meta characters
/// escaped).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The dataset's stored chunks in pieces of at most `piece` chunks (more only when one
/// manifest split holds more), cut only between manifest splits of `split` chunks (as
/// [`splitting`] makes them with `along`), so that every manifest is written once. Arrays in
/// path order, chunks in C order.
pub(super) fn plan_pieces(
    arrays: &[(&str, &VirtualArray)],
    piece: usize,
    split: usize,
    along: Option<&str>,
) -> Vec<Vec<Segment>> {
    let mut pieces: Vec<Vec<Segment>> = Vec::new();
    let mut current: Vec<Segment> = Vec::new();
    let mut count = 0usize;
    let mut close = |array: usize, range: Range<usize>, n: usize| {
        if count > 0 && count + n > piece {
            pieces.push(std::mem::take(&mut current));
            count = 0;
        }
        match current.last_mut() {
            Some(s) if s.array == array => s.range.end = range.end,
            _ => current.push(Segment { array, range }),
        }
        count += n;
    };
    for (k, (_, a)) in arrays.iter().enumerate() {
        let split = Split::of(&a.grid.grid_shape(), max_of(a, split, along));
        let key = |i: usize| split.map(|s| s.key(i as u64)).unwrap_or_default();
        // The run of stored chunks in the current split: (key, start, end, count).
        let mut run: Option<((u64, u64), usize, usize, usize)> = None;
        for (i, _) in a.manifest.iter_stored() {
            match &mut run {
                Some((kk, _, end, n)) if *kk == key(i) => {
                    *end = i + 1;
                    *n += 1;
                }
                _ => {
                    if let Some((_, start, end, n)) = run.take() {
                        close(k, start..end, n);
                    }
                    run = Some((key(i), i, i + 1, 1));
                }
            }
        }
        if let Some((_, start, end, n)) = run {
            close(k, start..end, n);
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use icechunk::format::Path as IcPath;
    use vzarr_core::{ChunkGrid, ChunkManifest, DataType, Endian, FillValue};

    #[test]
    fn splits_are_runs_of_c_order() {
        // Fits whole.
        assert_eq!(Split::of(&[4, 5], 20), None);
        assert_eq!(Split::of(&[], 1), None);
        // The last axis alone fits: rows split in runs of 4 chunks.
        let s = Split::of(&[7, 5], 4).unwrap();
        assert_eq!((s.axis, s.size, s.inner, s.along), (1, 4, 1, 5));
        let keys: Vec<_> = (0..10).map(|i| s.key(i)).collect();
        assert_eq!(
            keys,
            [
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 1),
                (1, 0),
                (1, 0),
                (1, 0),
                (1, 0),
                (1, 1)
            ]
        );
        // Whole rows fit: the first axis in runs of 3 rows.
        let s = Split::of(&[10, 2, 3], 20).unwrap();
        assert_eq!((s.axis, s.size, s.inner), (0, 3, 6));
        assert_eq!(s.key(17), (0, 0));
        assert_eq!(s.key(18), (0, 1));
        // Every split is a run of consecutive positions of at most `max` chunks.
        for (counts, max) in [(vec![7u64, 5], 4u64), (vec![3, 4, 5], 7), (vec![9], 2)] {
            let s = Split::of(&counts, max).unwrap();
            let total: u64 = counts.iter().product();
            let mut seen = std::collections::HashMap::new();
            let mut last = None;
            for i in 0..total {
                let k = s.key(i);
                if last != Some(k) {
                    assert!(!seen.contains_key(&k), "{counts:?}: split {k:?} not a run");
                }
                *seen.entry(k).or_insert(0u64) += 1;
                last = Some(k);
            }
            assert!(seen.values().all(|&n| n <= max), "{counts:?}");
        }
    }

    fn array(n: usize, stored: &[usize]) -> VirtualArray {
        let mut manifest = ChunkManifest::new_missing(n);
        let s = manifest.intern("file:///d/x.nc").unwrap();
        for &i in stored {
            manifest.set_range(i, s, i as u64, 1).unwrap();
        }
        VirtualArray {
            data_type: DataType::Int8,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Int8),
            codecs: vec![],
            dimension_names: vec!["x".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[n as u64], &[1]).unwrap(),
            manifest,
        }
    }

    #[test]
    fn pieces_end_between_splits() {
        let a = array(10, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let b = array(5, &[1, 3]);
        let arrays = [("a", &a), ("b", &b)];
        let seg = |array, range| Segment { array, range };
        // Splits of 2 chunks, pieces of at most 4.
        assert_eq!(
            plan_pieces(&arrays, 4, 2, None),
            [
                vec![seg(0, 0..4)],
                vec![seg(0, 4..8)],
                vec![seg(0, 8..10), seg(1, 1..4)]
            ]
        );
        // Pieces of 3 with splits of 2: a piece holds one split (2 chunks), never cuts one.
        let p = plan_pieces(&arrays, 3, 2, None);
        assert_eq!(p.len(), 6);
        assert!(
            p.iter()
                .all(|piece| piece.iter().all(|s| s.range.start % 2 == 0 || s.array == 1))
        );
        // Everything in one piece.
        assert_eq!(
            plan_pieces(&arrays, 100, 100, None),
            [vec![seg(0, 0..10), seg(1, 1..4)]]
        );
        assert!(plan_pieces(&[("e", &array(3, &[]))], 1, 1, None).is_empty());
    }

    #[test]
    fn arrays_along_the_concatenation_dimension_split_small_and_stable() {
        // 10,000 chunks a step along x (the array's first axis): 1 step a split along x,
        // 6 steps otherwise; the runs keep their length as the array grows (an array that
        // fits one manifest has no rule).
        let a = array(10, &[0]);
        assert_eq!(max_of(&a, 65_000, Some("x")), APPEND_SPLIT_REFS as u64);
        assert_eq!(max_of(&a, 1_000, Some("x")), 1_000);
        assert_eq!(max_of(&a, 65_000, Some("time")), 65_000);
        assert_eq!(max_of(&a, 65_000, None), 65_000);
        assert_eq!(Split::of(&[6, 100, 100], 65_000), None);
        for along in [7u64, 30, 300] {
            let s = Split::of(&[along, 100, 100], 16_384).unwrap();
            assert_eq!((s.axis, s.size), (0, 1));
            let s = Split::of(&[along, 100, 100], 65_000).unwrap();
            assert_eq!((s.axis, s.size), (0, 6));
        }
    }

    #[test]
    fn split_rules_match_exactly_their_array() {
        let a = array(10, &[0]);
        for path in ["a", "g/v", "x.y+z (1)", "t[0]^$", "é/ü"] {
            let cfg = splitting(&[(path, &a)], 2, None);
            let (cond, dims) = &cfg.split_sizes.as_ref().unwrap()[0];
            assert!(
                cond.matches(&IcPath::new(&format!("/{path}")).unwrap()),
                "{path}"
            );
            assert!(
                !cond.matches(&IcPath::new(&format!("/{path}x")).unwrap()),
                "{path}"
            );
            assert!(
                !cond.matches(&IcPath::new(&format!("/q/{path}")).unwrap()),
                "{path}"
            );
            assert_eq!(dims.len(), 1);
            assert_eq!(dims[0].num_chunks, 2);
        }
    }
}
