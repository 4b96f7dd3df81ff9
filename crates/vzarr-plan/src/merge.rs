//! Small chunks merged into larger virtual chunks, where that keeps the data in place.
//!
//! Chunks of [`MERGE_BELOW_BYTES`] or more are left as they are. A run of consecutive chunks along one axis forms a single valid chunk of a coarser grid when
//! the chunks are stored without compression (the array's only codec is `bytes`), every axis
//! before that axis is chunked by 1 and every axis after it is one whole chunk (so a chunk is
//! a contiguous slab of the array in C order), and, for every position of the axes before, the
//! chunks of the run lie back to back in one source, each holding exactly its nominal number
//! of bytes. The merged chunk is then the byte range from the first chunk's offset to the
//! last chunk's end: unfiltered HDF5 chunks of one record each written in order, the records
//! of a NetCDF3 file's only record variable, contiguous data split finer than needed.
//!
//! Runs end wherever a neighbour is not adjacent (another source, another order, a chunk kept
//! inline, a stored chunk beside a missing one); a run is cut into groups of at most the
//! target size. Where a single run covers the axis and its chunks are equal, the group length
//! is chosen to divide the chunk count when a divisor near the target exists, so the grid
//! stays regular; otherwise the axis becomes rectilinear, its last group cut to the array's
//! extent.

use vzarr_core::small::MERGE_BELOW_BYTES;
use vzarr_core::{ChunkManifest, ChunkRef, CoreError, DimGrid, VirtualArray};

/// How the chunks of an array are merged: along `axis`, consecutive chunks `groups[k]` (a
/// range of chunk indices along the axis) become chunk `k` of the new axis `dim`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Merge {
    /// The axis merged along.
    pub(crate) axis: usize,
    /// Chunk index ranges along the axis, one per merged chunk.
    pub(crate) groups: Vec<std::ops::Range<u64>>,
    /// The merged axis.
    pub(crate) dim: DimGrid,
}

/// The axis chunks of `a` could be merged along, with the bytes of one index along it (the
/// product of the later axes' extents and the element size): the first axis with at least two
/// chunks, every axis before it chunked by 1 and every axis after it one whole chunk.
fn merge_axis(a: &VirtualArray) -> Option<(usize, u64)> {
    let esize = a.data_type.size() as u64;
    if !a.codecs.is_empty() || a.data_type.is_string() || esize == 0 {
        return None;
    }
    let dims = a.grid.dims();
    if dims.iter().any(|d| d.extent() == 0) {
        return None;
    }
    let unit = |d: &DimGrid| match d {
        DimGrid::Fixed { size, .. } => *size == 1,
        DimGrid::Varying { edges, .. } => edges.iter().all(|&e| e == 1),
    };
    let whole = |d: &DimGrid| d.n_chunks() == 1 && d.chunk_len(0) == d.extent();
    for (axis, d) in dims.iter().enumerate() {
        if d.n_chunks() >= 2 && dims[axis + 1..].iter().all(whole) {
            let row = dims[axis + 1..]
                .iter()
                .try_fold(esize, |acc, d| acc.checked_mul(d.extent()))?;
            return Some((axis, row));
        }
        if !unit(d) {
            return None;
        }
    }
    None
}

/// Whether chunk `i` of the merge axis (of `n`) holds what a merged chunk needs, for every
/// position before the axis: not stored, or a byte range of exactly its nominal length (the
/// last chunk may hold just its valid part).
fn whole_chunk(m: &ChunkManifest, lin: usize, nominal: u64, valid: u64, last: bool) -> bool {
    match m.get(lin) {
        ChunkRef::Missing => true,
        ChunkRef::Inline(_) => false,
        ChunkRef::Range { length, .. } => length == nominal || (last && length == valid),
    }
}

/// Whether chunks `lin` and `lin + 1` can be one chunk: both not stored, or both byte ranges
/// of one source, back to back.
fn adjacent(m: &ChunkManifest, lin: usize) -> bool {
    match (m.get(lin), m.get(lin + 1)) {
        (ChunkRef::Missing, ChunkRef::Missing) => true,
        (
            ChunkRef::Range {
                source: s1,
                offset: o1,
                length: l1,
            },
            ChunkRef::Range {
                source: s2,
                offset: o2,
                ..
            },
        ) => s1 == s2 && o1.checked_add(l1) == Some(o2),
        _ => false,
    }
}

/// How the chunks of `a` can be merged into chunks of at most `target` bytes (a single chunk
/// may be larger when it is larger by itself), or `None` when nothing would be merged (or,
/// with `regular_only`, when the merged axis would not be regular).
pub(crate) fn plan(a: &VirtualArray, target: u64, regular_only: bool) -> Option<Merge> {
    let (axis, row) = merge_axis(a)?;
    let dims = a.grid.dims();
    let d = &dims[axis];
    let n = d.n_chunks();
    // Small chunks only: larger ones cost little through their references.
    let largest = match d {
        DimGrid::Fixed { size, .. } => *size,
        DimGrid::Varying { edges, .. } => edges.iter().copied().max().unwrap_or(0),
    };
    if largest.saturating_mul(row) >= MERGE_BELOW_BYTES {
        return None;
    }
    // Positions before the axis: each chunked by 1, so one chunk per position.
    let outer: u64 = dims[..axis]
        .iter()
        .map(|d| d.extent())
        .try_fold(1u64, u64::checked_mul)?;
    let m = &a.manifest;
    // The walk below visits every chunk of the grid, stored or not: a grid far larger than
    // what is stored (a few references naming an array of 2^29 chunks, say) is not merged
    // (a merge would store no fewer chunks), rather than walked in time and memory that the
    // references do not bound.
    let grid_chunks = n.checked_mul(outer)?;
    if grid_chunks > (m.stored() as u64).saturating_mul(2).max(1 << 20) {
        return None;
    }
    let n_us = usize::try_from(n).ok()?;
    // joins[i]: chunks i and i + 1 can be one chunk at every outer position.
    let mut ok = vec![true; n_us];
    let mut joins = vec![true; n_us.saturating_sub(1)];
    for p in 0..outer {
        let base = usize::try_from(p.checked_mul(n)?).ok()?;
        for i in 0..n_us {
            let nominal = d.chunk_len(i as u64).checked_mul(row)?;
            let valid = d.chunk_valid_len(i as u64).checked_mul(row)?;
            if !whole_chunk(m, base + i, nominal, valid, i + 1 == n_us) {
                ok[i] = false;
            }
            if i + 1 < n_us && !adjacent(m, base + i) {
                joins[i] = false;
            }
        }
    }
    for i in 0..n_us.saturating_sub(1) {
        joins[i] &= ok[i] && ok[i + 1];
    }
    // Runs of joinable chunks.
    let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
    let mut start = 0u64;
    for i in 0..n {
        if i + 1 == n || !joins[i as usize] {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    let bytes_of = |i: u64| d.chunk_len(i).saturating_mul(row);
    let groups = match (runs.as_slice(), d) {
        ([whole], DimGrid::Fixed { size, .. }) if whole.end - whole.start == n => {
            let k = regular_group(n, size.saturating_mul(row), target);
            (0..n.div_ceil(k))
                .map(|g| g * k..((g + 1) * k).min(n))
                .collect()
        }
        _ => runs
            .into_iter()
            .flat_map(|r| greedy(r, &bytes_of, target))
            .collect::<Vec<_>>(),
    };
    // Worth it only if fewer chunks are stored (merging chunks that are not stored anywhere
    // only changes the grid).
    let stored_after = (0..outer)
        .flat_map(|p| groups.iter().map(move |g| (p * n + g.start) as usize))
        .filter(|&lin| matches!(m.get(lin), ChunkRef::Range { .. }))
        .count();
    if groups.len() as u64 == n || stored_after >= m.stored() {
        return None;
    }
    let edges: Vec<u64> = groups
        .iter()
        .map(|g| d.chunk_start(g.end - 1) + d.chunk_len(g.end - 1) - d.chunk_start(g.start))
        .collect();
    // Regular when the groups come out equal and every last chunk is whole; else the last
    // group is cut to the extent (its bytes are a prefix of the run's).
    let last_whole = (0..outer).all(|p| {
        let lin = (p * n + n - 1) as usize;
        !matches!(m.get(lin), ChunkRef::Range { length, .. } if length != bytes_of(n - 1))
    });
    let dim = match DimGrid::from_edges(edges.clone(), d.extent()).ok()? {
        fixed @ DimGrid::Fixed { .. } if last_whole => fixed,
        _ if regular_only => return None,
        _ => {
            let mut edges = edges;
            let start: u64 = edges[..edges.len() - 1].iter().sum();
            *edges.last_mut()? = d.extent() - start;
            DimGrid::from_edges(edges, d.extent()).ok()?
        }
    };
    Some(Merge { axis, groups, dim })
}

/// The group length for `n` equal chunks of `chunk` bytes: all of them when they fit
/// `target`, else the largest divisor of `n` within a factor of two of what fits (a regular
/// grid), else what fits.
fn regular_group(n: u64, chunk: u64, target: u64) -> u64 {
    let fit = (target / chunk.max(1)).max(1);
    if n <= fit {
        return n;
    }
    (fit.div_ceil(2)..=fit)
        .rev()
        .find(|&k| n.is_multiple_of(k))
        .unwrap_or(fit)
}

/// Chunks `run` cut into groups of at most `target` bytes (at least one chunk each).
fn greedy(
    run: std::ops::Range<u64>,
    bytes_of: &dyn Fn(u64) -> u64,
    target: u64,
) -> Vec<std::ops::Range<u64>> {
    let mut out = Vec::new();
    let mut start = run.start;
    let mut size = 0u64;
    for i in run.clone() {
        let b = bytes_of(i);
        if i > start && size.saturating_add(b) > target {
            out.push(start..i);
            start = i;
            size = 0;
        }
        size = size.saturating_add(b);
    }
    if start < run.end {
        out.push(start..run.end);
    }
    out
}

/// The manifest of `a` merged as `merge` says (the grid's axis replaced by `merge.dim`).
pub(crate) fn apply(a: &VirtualArray, merge: &Merge) -> Result<ChunkManifest, CoreError> {
    let dims = a.grid.dims();
    let axis = merge.axis;
    let n = dims[axis].n_chunks();
    let outer: u64 = dims[..axis].iter().map(DimGrid::extent).product();
    let row: u64 = dims[axis + 1..]
        .iter()
        .map(DimGrid::extent)
        .product::<u64>()
        * a.data_type.size() as u64;
    let groups = merge.groups.len() as u64;
    let total = usize::try_from(outer * groups)
        .map_err(|_| CoreError::Manifest("merged chunk count overflows".into()))?;
    let stored = a.manifest.stored();
    let mut out = ChunkManifest::new_missing_expecting(total, stored);
    for p in 0..outer {
        for (g, range) in merge.groups.iter().enumerate() {
            let first = (p * n + range.start) as usize;
            let ChunkRef::Range { source, offset, .. } = a.manifest.get(first) else {
                continue;
            };
            // A merged chunk's bytes are its encoded shape: the group's chunks back to back
            // (the last group of a rectilinear axis cut to the extent, a prefix of them).
            let length = merge.dim.chunk_len(g as u64) * row;
            let sid = out.intern(source)?;
            out.set_range((p * groups) as usize + g, sid, offset, length)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::{ChunkGrid, Codec, DataType, Endian, FillValue};

    /// A float32 array of `shape` on `grid` whose chunk `i` is referenced at `at(i)` (source,
    /// offset, length), or missing when `at` gives `None`.
    fn array(
        shape: &[u64],
        dims: Vec<DimGrid>,
        at: impl Fn(usize) -> Option<(&'static str, u64, u64)>,
    ) -> VirtualArray {
        let grid = ChunkGrid::new(dims);
        assert_eq!(grid.shape(), shape);
        let n = grid.n_chunks().unwrap() as usize;
        let mut manifest = ChunkManifest::new_missing(n);
        for i in 0..n {
            if let Some((src, off, len)) = at(i) {
                let sid = manifest.intern(src).unwrap();
                manifest.set_range(i, sid, off, len).unwrap();
            }
        }
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Big,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: vec![],
            dimension_names: (0..shape.len()).map(|k| format!("d{k}")).collect(),
            attributes: Default::default(),
            grid,
            manifest,
        }
    }

    fn fixed(size: u64, extent: u64) -> DimGrid {
        DimGrid::fixed(size, extent).unwrap()
    }

    fn refs(m: &ChunkManifest) -> Vec<Option<(String, u64, u64)>> {
        m.iter()
            .map(|r| match r {
                ChunkRef::Range {
                    source,
                    offset,
                    length,
                } => Some((source.to_string(), offset, length)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn back_to_back_records_merge_into_a_regular_grid() {
        // 100 records of 4 bytes back to back (a NetCDF3 file's only record variable).
        let a = array(&[100], vec![fixed(1, 100)], |i| {
            Some(("f", 1000 + 4 * i as u64, 4))
        });
        // 16 fit 64 bytes; 10 divides 100 and is within a factor of two.
        let m = plan(&a, 64, false).unwrap();
        assert_eq!(m.dim, fixed(10, 100));
        let out = apply(&a, &m).unwrap();
        assert_eq!(out.len(), 10);
        assert_eq!(refs(&out)[3], Some(("f".into(), 1120, 40)));
        // Everything fits: one chunk of the whole array.
        let m = plan(&a, 1 << 20, false).unwrap();
        assert_eq!(m.dim, fixed(100, 100));
        assert_eq!(
            refs(&apply(&a, &m).unwrap()),
            vec![Some(("f".into(), 1000, 400))]
        );
    }

    #[test]
    fn a_count_without_a_divisor_gives_a_rectilinear_axis() {
        let a = array(&[97], vec![fixed(1, 97)], |i| Some(("f", 4 * i as u64, 4)));
        let m = plan(&a, 64, false).unwrap();
        let mut edges = vec![16; 6];
        edges.push(1);
        assert_eq!(m.dim, DimGrid::from_edges(edges, 97).unwrap());
        let out = apply(&a, &m).unwrap();
        assert_eq!(refs(&out)[6], Some(("f".into(), 384, 4)));
        // Not for readers of regular grids only.
        assert!(plan(&a, 64, true).is_none());
    }

    #[test]
    fn padded_hdf5_edge_chunks_stay_whole_or_are_cut_to_the_extent() {
        // 95 rows of 3 float32 in chunks of 10 rows, each stored whole (120 bytes).
        let a = array(&[95, 3], vec![fixed(10, 95), fixed(3, 3)], |i| {
            Some(("f", 120 * i as u64, 120))
        });
        let m = plan(&a, 1 << 20, false).unwrap();
        assert_eq!(m.dim, fixed(100, 95));
        assert_eq!(
            refs(&apply(&a, &m).unwrap()),
            vec![Some(("f".into(), 0, 1200))]
        );
        // 3 fit 360 bytes; 2 divides the 10 chunks: a regular grid, the last chunk whole.
        let m = plan(&a, 360, false).unwrap();
        assert_eq!(m.dim, fixed(20, 95));
        assert_eq!(
            refs(&apply(&a, &m).unwrap())[4],
            Some(("f".into(), 960, 240))
        );
        // 65 rows, 7 chunks: groups of 3, 3, 1, the last cut to its 5 valid rows.
        let b = array(&[65, 3], vec![fixed(10, 65), fixed(3, 3)], |i| {
            Some(("f", 120 * i as u64, 120))
        });
        let m = plan(&b, 360, false).unwrap();
        assert_eq!(m.dim, DimGrid::from_edges(vec![30, 30, 5], 65).unwrap());
        assert_eq!(
            refs(&apply(&b, &m).unwrap())[2],
            Some(("f".into(), 720, 60))
        );
    }

    #[test]
    fn what_is_not_adjacent_or_compressed_does_not_merge() {
        // Interleaved records: chunk i of this variable every 100 bytes.
        let a = array(&[50], vec![fixed(1, 50)], |i| {
            Some(("f", 100 * i as u64, 4))
        });
        assert!(plan(&a, 1 << 20, false).is_none());
        // Compressed chunks.
        let mut b = array(&[50], vec![fixed(1, 50)], |i| Some(("f", 4 * i as u64, 4)));
        b.codecs = vec![Codec::Zlib { level: 1 }];
        assert!(plan(&b, 1 << 20, false).is_none());
        // A chunk of another length.
        let c = array(&[50], vec![fixed(1, 50)], |i| {
            Some(("f", 4 * i as u64, if i == 7 { 3 } else { 4 }))
        });
        let m = plan(&c, 1 << 20, false).unwrap();
        assert_eq!(m.groups, vec![0..7, 7..8, 8..50]);
        // Inner axes chunked: rows of 4 split in two along the last axis merge only along it
        // (the first axis is chunked by 1).
        let d = array(&[10, 4], vec![fixed(1, 10), fixed(2, 4)], |i| {
            Some(("f", 8 * i as u64, 8))
        });
        let m = plan(&d, 1 << 20, false).unwrap();
        assert_eq!((m.axis, m.dim.clone()), (1, fixed(4, 4)));
        let out = apply(&d, &m).unwrap();
        assert_eq!(out.len(), 10);
        assert_eq!(refs(&out)[2], Some(("f".into(), 32, 16)));
        // Chunks of 64 KiB (16,384 float32) back to back: large enough as they are.
        let f = array(&[163_840], vec![fixed(16_384, 163_840)], |i| {
            Some(("f", 65_536 * i as u64, 65_536))
        });
        assert!(plan(&f, 1 << 30, false).is_none());
        // An inner axis chunked by more than 1 before a split axis: nothing merges.
        let e = array(&[10, 4], vec![fixed(2, 10), fixed(2, 4)], |i| {
            Some(("f", 16 * i as u64, 16))
        });
        assert!(plan(&e, 1 << 20, false).is_none());
    }

    #[test]
    fn every_outer_position_must_agree() {
        // Two stacked files (axis 0 chunked by 1), 6 records each, back to back in each file;
        // the second file has record 3 missing: runs break there for both.
        let a = array(&[2, 6], vec![fixed(1, 2), fixed(1, 6)], |i| {
            let (p, r) = (i / 6, (i % 6) as u64);
            match p {
                0 => Some(("a", 4 * r, 4)),
                _ if r == 3 => None,
                _ => Some(("b", 4 * r, 4)),
            }
        });
        let m = plan(&a, 1 << 20, false).unwrap();
        assert_eq!(m.groups, vec![0..3, 3..4, 4..6]);
        let out = apply(&a, &m).unwrap();
        assert_eq!(
            refs(&out),
            vec![
                Some(("a".into(), 0, 12)),
                Some(("a".into(), 12, 4)),
                Some(("a".into(), 16, 8)),
                Some(("b".into(), 0, 12)),
                None,
                Some(("b".into(), 16, 8)),
            ]
        );
        // Missing in both at the same place merges: all missing.
        let b = array(&[2, 4], vec![fixed(1, 2), fixed(1, 4)], |i| {
            (i % 4 != 1 && i % 4 != 2).then_some(("a", 0, 4))
        });
        assert!(plan(&b, 1 << 20, false).is_none());
    }
}
