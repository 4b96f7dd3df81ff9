//! Extending a concatenation at its tail: an output combined along an existing dimension,
//! plus a *window* planned from its last file and the new files, gives the output a plan of
//! every file would give, without planning the files before the last again.
//!
//! Why the last file: in the output it ends the axis, so its padded last chunk stays as the
//! file stores it (Zarr pads edge chunks too); once files follow, that chunk is mid-axis and
//! must be shortened ([`crate::concat`]). The window plans it mid-axis, so everything from the
//! last file's first chunk on comes from the window, everything before it from the output.
//!
//! What the plan of every file decides from all of them is checked instead of trusted:
//! - the window starts with the output's last file (the new files all come after it), and
//!   plans it as the output did: its chunks equal, but for the padded last one;
//! - every variable has the same role (concatenated, CF time re-encoded, kept once) and the
//!   same metadata but for its extent along the dimension; variables kept once come from the
//!   first file, which the output holds;
//! - CF time is re-encoded into the output's units, then joined to the output's values;
//! - the small-chunk pass merged nothing in the window's concatenated variables (merging into
//!   coarser chunks is decided from the whole array); a variable it kept inline whole, in the
//!   window and in the output, is joined value by value and kept inline again as the pass
//!   keeps it (chunks and codecs follow the new extent), and what the result stores inline
//!   stays within the policy's bounds.
//!
//! One decision is approximated: the small-chunk pass keeps an array inline whole when its
//! references average under [`vzarr_core::small::SMALL_REFERENCE_BYTES`], which the output
//! no longer shows. It is taken as kept when the output and the window both kept it; the
//! average of every file could still reach the bound when the last file's references are
//! far smaller than the others'. The values are the same either way; only the output would
//! then keep inline what a full build references.
//!
//! Where a check fails the caller plans every file instead ([`NotExtendable`] says why);
//! the result is then the same, only slower.

use std::collections::BTreeMap;
use std::ops::Range;

use vzarr_core::{
    ChunkGrid, ChunkManifest, ChunkRef, ConcatInfo, DimGrid, SmallChunkPolicy, VirtualArray,
    VirtualDataset,
};

use crate::compact::{ArrayAction, CompactReport, kept_inline};
use crate::inline::inline_array;
use crate::output::copy_ref;
use crate::values::assemble;

/// Why an output cannot be extended at its tail: the caller plans every file instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotExtendable(pub String);

pub(crate) fn no<T>(reason: impl Into<String>) -> Result<T, NotExtendable> {
    Err(NotExtendable(reason.into()))
}

/// Where an extended (or replaced, [`crate::replace`]) array differs from the output's
/// version: its chunks at the indices along `axis` that `ranges` hold are new or replaced, the
/// others are the output's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    /// The axis of the concatenation dimension.
    pub axis: usize,
    /// Ranges of chunk indices along `axis`, in order and apart; an end of `u64::MAX` runs
    /// to the last chunk.
    pub ranges: Vec<Range<u64>>,
}

impl Changed {
    /// The chunks from index `from` along `axis` on.
    pub fn from(axis: usize, from: u64) -> Self {
        Changed {
            axis,
            ranges: std::iter::once(from..u64::MAX).collect(),
        }
    }

    /// The chunks at indices `range` along `axis`.
    pub fn range(axis: usize, range: Range<u64>) -> Self {
        Changed {
            axis,
            ranges: std::iter::once(range).collect(),
        }
    }

    /// Whether chunk index `i` along the axis changed.
    pub fn contains(&self, i: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(&i))
    }

    /// Adds `other`'s chunks (along another axis: every chunk).
    pub fn join(&mut self, other: &Changed) {
        if other.axis != self.axis {
            *self = Changed::from(self.axis, 0);
            return;
        }
        let mut all: Vec<Range<u64>> = self.ranges.drain(..).chain(other.ranges.clone()).collect();
        all.sort_by_key(|r| r.start);
        for r in all.into_iter().filter(|r| !r.is_empty()) {
            match self.ranges.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => self.ranges.push(r),
            }
        }
    }
}

/// Joins the arrays `more` changed into `changed`.
pub fn join_changed(changed: &mut BTreeMap<String, Changed>, more: BTreeMap<String, Changed>) {
    for (path, c) in more {
        match changed.get_mut(&path) {
            Some(have) => have.join(&c),
            None => {
                changed.insert(path, c);
            }
        }
    }
}

/// An output extended at its tail.
#[derive(Debug)]
pub struct Extended {
    /// The combined dataset of every file.
    pub dataset: VirtualDataset,
    /// The arrays that changed (every array along the dimension), by path; the others are
    /// the output's.
    pub changed: BTreeMap<String, Changed>,
}

/// Extends `old`, a dataset combined along an existing dimension, with `window`: the plan
/// (small chunks compacted as `compacted` reports, under `policy`) of `old`'s last file
/// followed by new files, its CF time in `old`'s units. Returns the dataset a plan of every
/// file gives, or why that cannot be made from the two (see the module documentation).
pub fn extend(
    old: VirtualDataset,
    window: VirtualDataset,
    compacted: &CompactReport,
    policy: &SmallChunkPolicy,
) -> Result<Extended, NotExtendable> {
    let (oc, wc) = check_window(&old, &window, compacted)?;
    let Some(tail) = oc.pieces.last() else {
        return no("no files recorded");
    };
    match wc.pieces.first() {
        Some(p) if p.url == tail.url && p.len == tail.len => {}
        _ => return no(format!("new files come before its last file {}", tail.url)),
    }
    let (start, tail_len) = (tail.start, tail.len);
    let along: Vec<String> = oc.arrays.clone();
    let roles = (oc.dim.clone(), along.clone(), time_arrays(oc));
    let provenance = extended_provenance(&old, &window)?;
    let (arrays, changed) = join_arrays(old.arrays, window.arrays, &roles, compacted, |job| {
        Ok(match job.role {
            Role::Once => (job.old, None),
            Role::Whole(k, how) => {
                let span = (k, start, tail_len);
                let (array, change) = splice_whole(job.path, job.old, job.win, span, how, policy)?;
                (array, Some(change))
            }
            Role::Chunks(k) => {
                let (array, from) = splice_chunks(job.path, job.old, job.win, k, start, tail_len)?;
                (array, Some(Changed::from(k, from)))
            }
        })
    })?;
    let mut out = VirtualDataset {
        groups: old.groups,
        arrays,
        // What the planner left out is not written: the window's, for the report.
        skipped: window.skipped,
        provenance,
        unlimited_dims: old.unlimited_dims,
    };
    out.unlimited_dims.extend(window.unlimited_dims);
    finish(out, changed, (&along, compacted, policy))
}

/// `out` checked (what it stores inline within `policy`'s bounds, valid) as what changed.
pub(crate) fn finish(
    out: VirtualDataset,
    changed: BTreeMap<String, Changed>,
    (along, compacted, policy): (&[String], &CompactReport, &SmallChunkPolicy),
) -> Result<Extended, NotExtendable> {
    within_bounds(&out, along, compacted, policy)?;
    out.validate()
        .map_err(|e| NotExtendable(format!("the result is not valid: {e}")))?;
    Ok(Extended {
        dataset: out,
        changed,
    })
}

/// The index of the chunk (of nominal lengths `e` along an axis) that starts at element
/// `start`, if one does.
pub(crate) fn chunk_starting_at(e: &[u64], start: u64) -> Option<usize> {
    let mut sum = 0u64;
    let mut c = 0usize;
    while c < e.len() && sum < start {
        sum += e[c];
        c += 1;
    }
    (sum == start).then_some(c)
}

/// The CF time arrays a concatenation re-encoded.
pub(crate) fn time_arrays(c: &ConcatInfo) -> Vec<String> {
    c.retimed.iter().map(|r| r.array.clone()).collect()
}

/// One array to join: its path, its role, the output's version and the window's.
pub(crate) struct Job<'a> {
    pub(crate) path: &'a str,
    pub(crate) role: Role,
    pub(crate) old: VirtualArray,
    pub(crate) win: &'a VirtualArray,
}

/// The output's arrays (`old`, in order) joined with the window's (`win`, the same ones) by
/// `join` of each with its role ([`role_of`] given `roles`: the dimension, the arrays along
/// it, the CF time arrays), and the arrays that changed.
pub(crate) fn join_arrays(
    old: vzarr_core::Arrays,
    mut win: vzarr_core::Arrays,
    roles: &(String, Vec<String>, Vec<String>),
    compacted: &CompactReport,
    mut join: impl FnMut(Job<'_>) -> Result<(VirtualArray, Option<Changed>), NotExtendable>,
) -> Result<(vzarr_core::Arrays, BTreeMap<String, Changed>), NotExtendable> {
    let (dim, along, time) = roles;
    let mut arrays = vzarr_core::Arrays::default();
    let mut changed = BTreeMap::new();
    for (path, oa) in old {
        let wa = win.shift_remove(&path).expect("same variables");
        let role = role_of(&path, &oa, &wa, (dim, along, time), compacted)?;
        let (array, change) = join(Job {
            path: &path,
            role,
            old: oa,
            win: &wa,
        })?;
        if let Some(c) = change {
            changed.insert(path.clone(), c);
        }
        arrays.insert(path, array);
    }
    Ok((arrays, changed))
}

/// How an array of the output joins its version in a window.
pub(crate) enum Role {
    /// Without the dimension: kept once, as the output has it.
    Once,
    /// Along the dimension on this axis, chunk by chunk.
    Chunks(usize),
    /// Along the dimension on this axis, kept inline whole as the planner keeps it.
    Whole(usize, Whole),
}

/// The role of the array at `path` (`a` in the output, `b` in the window) given the
/// dimension, the arrays along it and the CF time arrays, checked: kept once, the same
/// metadata; along the dimension, the same but for its extent there.
pub(crate) fn role_of(
    path: &str,
    a: &VirtualArray,
    b: &VirtualArray,
    (dim, along, time): (&str, &[String], &[String]),
    compacted: &CompactReport,
) -> Result<Role, NotExtendable> {
    if !along.iter().any(|p| p == path) {
        if a.zarr_metadata() != b.zarr_metadata() {
            return no(format!("{path}, kept once, differs"));
        }
        return Ok(Role::Once);
    }
    let Some(k) = a.dimension_names.iter().position(|d| d == dim) else {
        return no(format!("{path} lacks {dim}"));
    };
    let inlined = compacted
        .arrays
        .get(path)
        .into_iter()
        .flatten()
        .any(|x| matches!(x, ArrayAction::Inlined { .. }));
    let whole = if time.iter().any(|p| p == path) {
        Some(Whole::Time)
    } else if inlined {
        Some(Whole::Compacted)
    } else {
        None
    };
    same_but_extent(path, a, b, k, whole.is_some())?;
    Ok(match whole {
        Some(how) => Role::Whole(k, how),
        None => Role::Chunks(k),
    })
}

/// What extending and replacing ([`crate::replace`]) check of a window against the output
/// alike: both combined along the same existing dimension in the same order, the same
/// variables with the same roles, CF time in the same units, small chunks treated alike and
/// none merged or left referenced along the dimension. Returns both concatenations.
pub(crate) fn check_window<'a>(
    old: &'a VirtualDataset,
    window: &'a VirtualDataset,
    compacted: &CompactReport,
) -> Result<(&'a ConcatInfo, &'a ConcatInfo), NotExtendable> {
    let (Some(oc), Some(wc)) = (&old.provenance.concat, &window.provenance.concat) else {
        return no("not a concatenation");
    };
    if oc.new_dim || wc.new_dim {
        return no("stacked along a new dimension");
    }
    if oc.dim != wc.dim || oc.order_by != wc.order_by {
        return no("combined along another dimension or order");
    }
    if oc.arrays != wc.arrays {
        return no("the variables along the dimension differ");
    }
    let retimed = |c: &ConcatInfo| -> Vec<(String, String, String)> {
        c.retimed
            .iter()
            .map(|r| (r.array.clone(), r.calendar.clone(), r.units.clone()))
            .collect()
    };
    if retimed(oc) != retimed(wc) {
        return no("CF time differs (units, calendar or variables)");
    }
    if old.arrays.len() != window.arrays.len()
        || old.arrays.keys().any(|p| !window.arrays.contains_key(p))
    {
        return no("the variables differ");
    }
    if old.provenance.small_chunks != window.provenance.small_chunks {
        return no("small chunks were treated otherwise");
    }
    let actions = |path: &str| compacted.arrays.get(path).into_iter().flatten();
    for path in &oc.arrays {
        if actions(path).any(|a| matches!(a, ArrayAction::Merged { .. })) {
            return no(format!("small chunks of {path} merged"));
        }
    }
    if !compacted.left_referenced.is_empty() {
        return no("small chunks left referenced");
    }
    Ok((oc, wc))
}

/// The provenance of every file: the output's sources and pieces before its last file, then
/// the window's.
fn extended_provenance(
    old: &VirtualDataset,
    window: &VirtualDataset,
) -> Result<vzarr_core::Provenance, NotExtendable> {
    let (oc, wc) = (
        old.provenance.concat.as_ref().expect("checked"),
        window.provenance.concat.as_ref().expect("checked"),
    );
    let n = oc.pieces.len();
    let start = oc.pieces[n - 1].start;
    let mut pieces = oc.pieces[..n - 1].to_vec();
    pieces.extend(wc.pieces.iter().map(|p| vzarr_core::ConcatPiece {
        start: p.start + start,
        ..p.clone()
    }));
    let mut retimed = oc.retimed.clone();
    for (r, w) in retimed.iter_mut().zip(&wc.retimed) {
        r.source_units.truncate(n - 1);
        r.source_units.extend(w.source_units.iter().cloned());
    }
    let mut sources = old.provenance.sources.clone();
    sources.extend(window.provenance.sources.iter().cloned());
    sources.sort_by(|a, b| a.url.cmp(&b.url));
    sources.dedup_by(|a, b| a.url == b.url);
    let mut prov = old.provenance.clone();
    prov.allowed_prefixes = vzarr_core::prefixes_of(&sources);
    prov.sources = sources;
    prov.companions =
        crate::output::companions_of([&old.provenance, &window.provenance].into_iter());
    prov.concat = Some(ConcatInfo {
        pieces,
        retimed,
        ..oc.clone()
    });
    Ok(prov)
}

/// Checks that `a` and `b` are the same array but for their extent and chunks along `k` (and,
/// for arrays kept inline `whole`, their inline chunks and codecs, which follow the extent).
pub(crate) fn same_but_extent(
    path: &str,
    a: &VirtualArray,
    b: &VirtualArray,
    k: usize,
    whole: bool,
) -> Result<(), NotExtendable> {
    let (da, db) = (a.grid.dims(), b.grid.dims());
    if da.len() != db.len() || (!whole && (0..da.len()).any(|j| j != k && da[j] != db[j])) {
        return no(format!("{path}'s chunks differ across the dimension"));
    }
    let probe = VirtualArray {
        grid: a.grid.clone(),
        manifest: ChunkManifest::new_missing(0),
        attributes: b.attributes.clone(),
        codecs: if whole {
            a.codecs.clone()
        } else {
            b.codecs.clone()
        },
        dimension_names: b.dimension_names.clone(),
        fill_value: b.fill_value.clone(),
        data_type: b.data_type.clone(),
        endian: b.endian,
    };
    if probe.zarr_metadata() != a.zarr_metadata() {
        return no(format!("{path}'s metadata differs"));
    }
    Ok(())
}

/// The nominal chunk lengths along one axis.
pub(crate) fn edges(d: &DimGrid) -> Vec<u64> {
    (0..d.n_chunks()).map(|i| d.chunk_len(i)).collect()
}

/// `old`'s chunks before `start` along `k`, then `win`'s: the array and the index of its
/// first chunk from the window.
fn splice_chunks(
    path: &str,
    old: VirtualArray,
    win: &VirtualArray,
    k: usize,
    start: u64,
    tail_len: u64,
) -> Result<(VirtualArray, u64), NotExtendable> {
    let (od, wd) = (&old.grid.dims()[k], &win.grid.dims()[k]);
    let oe = edges(od);
    let we = edges(wd);
    // The output's chunk where its last file starts.
    let Some(c) = chunk_starting_at(&oe, start) else {
        return no(format!("{path}'s chunks cross into its last file"));
    };
    // The last file's chunks in the window: the same edges but for the padded last one.
    let mut m = 0usize;
    let mut covered = 0u64;
    while m < we.len() && covered < tail_len {
        covered += we[m];
        m += 1;
    }
    let old_tail = &oe[c..];
    if old_tail.len() != m || (m > 0 && old_tail[..m - 1] != we[..m - 1]) {
        return no(format!(
            "{path}'s last file is chunked otherwise in the window"
        ));
    }
    let mut new_edges = oe[..c].to_vec();
    new_edges.extend_from_slice(&we);
    let extent = start + wd.extent();
    let axis = if new_edges.is_empty() {
        DimGrid::fixed(od.chunk_len(0).max(1), 0)
    } else {
        DimGrid::from_edges(new_edges, extent)
    }
    .map_err(|e| NotExtendable(format!("{path}: {e}")))?;
    let mut dims = old.grid.dims().to_vec();
    dims[k] = axis;
    let grid = ChunkGrid::new(dims);
    let bad = |e: vzarr_core::CoreError| NotExtendable(format!("{path}: {e}"));
    let n = usize::try_from(grid.n_chunks().map_err(bad)?)
        .map_err(|_| NotExtendable(format!("{path}: too many chunks")))?;
    let mut manifest =
        ChunkManifest::new_missing_expecting(n, old.manifest.stored() + win.manifest.stored());
    let c64 = c as u64;
    let mut idx = Vec::new();
    // The output's last file, but for its last chunk along k, must be what the window made.
    for (lin, r) in old.manifest.iter_stored() {
        old.grid.chunk_index_into(lin as u64, &mut idx);
        if idx[k] >= c64 {
            let local = idx[k] - c64;
            let same_edge = we.get(local as usize) == oe.get(idx[k] as usize);
            if local + 1 < m as u64 || same_edge {
                idx[k] = local;
                let w = win
                    .grid
                    .linear_index(&idx)
                    .map(|i| win.manifest.get(i as usize));
                if w.as_ref() != Some(&r) {
                    return no(format!(
                        "{path}'s chunk {lin} of its last file differs in the window"
                    ));
                }
            }
            continue;
        }
        let i = grid.linear_index(&idx).expect("inside the grid") as usize;
        copy_ref(&mut manifest, i, r).map_err(|e| NotExtendable(format!("{path}: {e}")))?;
    }
    for (lin, r) in win.manifest.iter_stored() {
        win.grid.chunk_index_into(lin as u64, &mut idx);
        idx[k] += c64;
        let i = grid.linear_index(&idx).expect("inside the grid") as usize;
        copy_ref(&mut manifest, i, r).map_err(|e| NotExtendable(format!("{path}: {e}")))?;
    }
    Ok((
        VirtualArray {
            grid,
            manifest,
            ..old
        },
        c64,
    ))
}

/// How an array along the dimension is kept inline whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whole {
    /// CF time, re-encoded by the planner ([`inline_array`]).
    Time,
    /// Small references replaced by the array's values ([`kept_inline`]).
    Compacted,
}

/// The raw C-order bytes of an array whose chunks are all inline, decoded.
pub(crate) fn decoded(path: &str, a: &VirtualArray) -> Result<Vec<u8>, NotExtendable> {
    let mut chunks = Vec::with_capacity(a.manifest.len());
    for r in a.manifest.iter() {
        chunks.push(match r {
            ChunkRef::Inline(b) => Some(b.to_vec()),
            ChunkRef::Missing => None,
            ChunkRef::Range { .. } => return no(format!("{path} is not kept inline whole")),
        });
    }
    assemble(a, chunks).map_err(|e| NotExtendable(format!("{path}: {e}")))
}

/// Of `a`'s C-order values around axis `k`: how many runs there are (the product of the
/// extents before `k`) and the bytes of one element along `k` (the product after it, times
/// the element size).
pub(crate) fn strides(
    path: &str,
    a: &VirtualArray,
    k: usize,
) -> Result<(usize, usize), NotExtendable> {
    let too_large = || NotExtendable(format!("{path} is too large"));
    let size = |dims: &[u64]| -> Result<usize, NotExtendable> {
        let n = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(too_large)?;
        usize::try_from(n).map_err(|_| too_large())
    };
    let shape = a.shape();
    let inner = size(&shape[k + 1..])?
        .checked_mul(a.data_type.size())
        .ok_or_else(too_large)?;
    Ok((size(&shape[..k])?, inner))
}

/// The values of an array kept inline whole, in the output (`old`) and in the window (`win`),
/// laid out around axis `k` ([`strides`]), with their extents along it.
pub(crate) struct Values {
    pub(crate) old: Vec<u8>,
    pub(crate) win: Vec<u8>,
    pub(crate) outer: usize,
    pub(crate) inner: usize,
    pub(crate) old_len: usize,
    pub(crate) win_len: usize,
}

/// The [`Values`] of the array at `path`, kept inline alike in both, each as long as its
/// shape says.
pub(crate) fn values(
    path: &str,
    old: &VirtualArray,
    win: &VirtualArray,
    k: usize,
) -> Result<Values, NotExtendable> {
    if old.data_type.is_string() || old.data_type != win.data_type || old.endian != win.endian {
        return no(format!("{path}: kept inline otherwise"));
    }
    let (outer, inner) = strides(path, old, k)?;
    let v = Values {
        old: decoded(path, old)?,
        win: decoded(path, win)?,
        outer,
        inner,
        old_len: old.shape()[k] as usize,
        win_len: win.shape()[k] as usize,
    };
    if v.old.len() != outer * v.old_len * inner || v.win.len() != outer * v.win_len * inner {
        return no(format!("{path}'s extent differs in the window"));
    }
    Ok(v)
}

/// An array kept inline whole: the output's values before `start` along `k`, then the
/// window's, kept inline as the planner (`how`) keeps them; the changed chunks (along axis 0,
/// the one inline chunks are cut along).
fn splice_whole(
    path: &str,
    old: VirtualArray,
    win: &VirtualArray,
    (k, start, tail_len): (usize, u64, u64),
    how: Whole,
    policy: &SmallChunkPolicy,
) -> Result<(VirtualArray, Changed), NotExtendable> {
    let Values {
        old: ro,
        win: rw,
        outer,
        inner,
        old_len: ok_,
        win_len: wk,
    } = values(path, &old, win, k)?;
    let os = old.shape();
    let (s, t) = (start as usize, tail_len as usize);
    if ok_ != s + t || wk < t {
        return no(format!("{path}'s extent differs in the window"));
    }
    let mut raw = Vec::with_capacity(outer * (s + wk) * inner);
    for o in 0..outer {
        let ob = &ro[o * ok_ * inner..(o + 1) * ok_ * inner];
        let wb = &rw[o * wk * inner..(o + 1) * wk * inner];
        if ob[s * inner..] != wb[..t * inner] {
            return no(format!(
                "{path}'s values of its last file differ in the window"
            ));
        }
        raw.extend_from_slice(&ob[..s * inner]);
        raw.extend_from_slice(wb);
    }
    let mut shape = os;
    shape[k] = start + wk as u64;
    let first = old.grid.dims()[0].chunk_of(start).unwrap_or(0);
    let (array, same) = inline_whole(path, old, &shape, raw, how, policy)?;
    let from = if same && k == 0 { first } else { 0 };
    Ok((array, Changed::from(0, from)))
}

/// `raw` (the C-order values of an array of `shape`) kept inline as the planner (`how`)
/// keeps `old`'s, and whether the result is cut and encoded as `old` is (its chunks along
/// axis 0 then equal `old`'s where the values do).
pub(crate) fn inline_whole(
    path: &str,
    old: VirtualArray,
    shape: &[u64],
    raw: Vec<u8>,
    how: Whole,
    policy: &SmallChunkPolicy,
) -> Result<(VirtualArray, bool), NotExtendable> {
    let (codecs, rows) = (old.codecs.clone(), old.grid.dims()[0].chunk_len(0));
    let template = VirtualArray {
        grid: ChunkGrid::whole(shape).map_err(|e| NotExtendable(format!("{path}: {e}")))?,
        manifest: ChunkManifest::new_missing(1),
        ..old
    };
    let array = match how {
        Whole::Time if template.endian == vzarr_core::Endian::Little => {
            inline_array(&template, shape, template.data_type.clone(), raw)
                .map_err(|e| NotExtendable(format!("{path}: {e}")))?
        }
        Whole::Time => return no(format!("{path}: big-endian time")),
        Whole::Compacted => {
            if raw.len() as u64 > policy.inline_decoded_bytes() {
                return no(format!("{path} decodes to more than a plan keeps inline"));
            }
            kept_inline(&template, &raw, policy.target_chunk_bytes)
                .map_err(|e| NotExtendable(format!("{path}: {e}")))?
        }
    };
    // Chunks are the output's where the values are when the array is cut the same way and
    // encoded the same way; otherwise every chunk is written again.
    let same = array.codecs == codecs && array.grid.dims()[0].chunk_len(0) == rows;
    Ok((array, same))
}

/// Checks what the result stores inline against the policy's bounds: a plan of every file
/// would keep small chunks referenced past them, which the window cannot know.
pub(crate) fn within_bounds(
    ds: &VirtualDataset,
    along: &[String],
    compacted: &CompactReport,
    policy: &SmallChunkPolicy,
) -> Result<(), NotExtendable> {
    let inline = |a: &VirtualArray| -> u64 {
        a.manifest
            .iter_stored()
            .map(|(_, r)| match r {
                ChunkRef::Inline(b) => b.len() as u64,
                _ => 0,
            })
            .sum()
    };
    let mut total = 0u64;
    for (path, a) in &ds.arrays {
        let bytes = inline(a);
        total += bytes;
        if along.contains(path)
            && compacted.arrays.contains_key(path)
            && bytes > policy.inline_array_bytes
        {
            return no(format!("{path} would store more inline than a plan allows"));
        }
    }
    if total > policy.inline_total_bytes {
        return no("the output would store more inline than a plan allows");
    }
    Ok(())
}
