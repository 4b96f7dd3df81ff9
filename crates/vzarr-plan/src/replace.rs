//! Replacing one file in the middle of a concatenation: an output combined along an existing
//! dimension, one of whose files was re-processed, plus a *window* planned from that file and
//! its neighbours, gives the output a plan of every file would give, without planning the
//! others again.
//!
//! Why the neighbours: a file's place along the axis, its chunks and its padded last chunk
//! depend on the files beside it. Planned between them, the file is cut as the plan of every
//! file cuts it, its order against them is checked, and so is whatever must agree between
//! files (the variables kept once hold the same values in it as in its neighbour).
//!
//! What the plan of every file decides is checked instead of trusted, as an extension at the
//! tail checks it ([`crate::extend`]): the window holds the output's files around the
//! replaced one, in the output's order, each as long as the output records it; every variable
//! keeps its role and metadata; CF time is re-encoded into the output's units; small chunks
//! were not merged along the dimension. Then:
//! - the replaced file's chunks cover the same elements in the output and in the window, with
//!   the same edges, so the grid stays as it is and only those chunks are replaced (chunks the
//!   file no longer stores become missing);
//! - a variable kept inline whole has the file's values replaced, and is kept inline again as
//!   the pass keeps it; its chunks change only where its values do;
//! - variables kept once, and every attribute, come from the first file, so the first file
//!   is never replaced this way.
//!
//! Where a check fails the caller plans every file instead ([`NotExtendable`] says why).

use std::ops::Range;

use vzarr_core::{ChunkRef, SmallChunkPolicy, VirtualArray, VirtualDataset};

use crate::compact::CompactReport;
use crate::extend::{
    Changed, Extended, NotExtendable, Role, Values, Whole, check_window, chunk_starting_at, edges,
    finish, inline_whole, join_arrays, no, time_arrays, values,
};
use crate::output::copy_ref;

/// The positions of the output's files (`files` of them) a replacement of the one at `at`
/// (not the first) is planned with, in order: it and its neighbours.
pub fn window_of(at: usize, files: usize) -> Range<usize> {
    at.saturating_sub(1)..files.min(at + 2)
}

/// Replaces the file at position `at` of `old`'s concatenation (not the first) with its
/// version in `window`: the plan (small chunks compacted as `compacted` reports, under
/// `policy`) of the output's files [`window_of`] `at` (`at - 1`, `at` and, unless `at` is the
/// last, `at + 1`), in that order, the one at `at` as it is now, CF time in `old`'s units. Returns the dataset a
/// plan of every file gives, and which chunks changed, or why that cannot be made from the
/// two (see the module documentation).
pub fn replace(
    old: VirtualDataset,
    window: VirtualDataset,
    at: usize,
    compacted: &CompactReport,
    policy: &SmallChunkPolicy,
) -> Result<Extended, NotExtendable> {
    let (oc, wc) = check_window(&old, &window, compacted)?;
    if at == 0 {
        return no("its first file changed: what is kept once comes from it");
    }
    let Some(piece) = oc.pieces.get(at) else {
        return no(format!("no file at position {at}"));
    };
    let around = &oc.pieces[window_of(at, oc.pieces.len())];
    let same_files = around.len() == wc.pieces.len()
        && around
            .iter()
            .zip(&wc.pieces)
            .all(|(o, w)| o.url == w.url && o.len == w.len);
    if !same_files {
        return no(format!(
            "{} is not planned between its neighbours as the output holds them",
            piece.url
        ));
    }
    let (start, len) = (piece.start, piece.len);
    let wstart = wc.pieces[1].start;
    let along = oc.arrays.clone();
    let roles = (oc.dim.clone(), along.clone(), time_arrays(oc));
    let provenance = replaced_provenance(&old, &window, at)?;
    let span = (start, wstart, len);
    let (arrays, changed) = join_arrays(old.arrays, window.arrays, &roles, compacted, |job| {
        Ok(match job.role {
            Role::Once => (job.old, None),
            Role::Whole(k, how) => {
                replace_values(job.path, job.old, job.win, k, span, how, policy)?
            }
            Role::Chunks(k) => {
                let (array, range) = replace_chunks(job.path, job.old, job.win, k, span)?;
                (array, Some(Changed::range(k, range)))
            }
        })
    })?;
    let out = VirtualDataset {
        groups: old.groups,
        arrays,
        skipped: window.skipped,
        provenance,
        unlimited_dims: old.unlimited_dims,
    };
    finish(out, changed, (&along, compacted, policy))
}

/// The output's provenance with the replaced file's record (and CF time units) the window's.
fn replaced_provenance(
    old: &VirtualDataset,
    window: &VirtualDataset,
    at: usize,
) -> Result<vzarr_core::Provenance, NotExtendable> {
    let (oc, wc) = (
        old.provenance.concat.as_ref().expect("checked"),
        window.provenance.concat.as_ref().expect("checked"),
    );
    let url = &oc.pieces[at].url;
    let Some(record) = window.provenance.sources.iter().find(|s| s.url == *url) else {
        return no(format!("the window does not record {url}"));
    };
    let mut prov = old.provenance.clone();
    let Some(slot) = prov.sources.iter_mut().find(|s| s.url == *url) else {
        return no(format!("the output does not record {url}"));
    };
    *slot = record.clone();
    let mut concat = oc.clone();
    for (r, w) in concat.retimed.iter_mut().zip(&wc.retimed) {
        match (r.source_units.get_mut(at), w.source_units.get(1)) {
            (Some(o), Some(n)) => o.clone_from(n),
            _ => return no(format!("{}'s units per file are not recorded", r.array)),
        }
    }
    prov.concat = Some(concat);
    Ok(prov)
}

/// The chunk indices along one axis whose edges `e` cover the elements `[start, start + len)`
/// exactly (the last may be a padded edge chunk of the whole axis).
fn covering(e: &[u64], start: u64, len: u64) -> Option<Range<usize>> {
    let a = chunk_starting_at(e, start)?;
    let mut sum = start;
    let mut b = a;
    while b < e.len() && sum < start + len {
        sum += e[b];
        b += 1;
    }
    (sum == start + len || (b == e.len() && sum > start + len)).then_some(a..b)
}

/// `old` with the chunks of elements `[start, start + len)` along axis `k` replaced by the
/// window's chunks of `[wstart, wstart + len)`: the array and the chunk indices replaced.
fn replace_chunks(
    path: &str,
    mut old: VirtualArray,
    win: &VirtualArray,
    k: usize,
    (start, wstart, len): (u64, u64, u64),
) -> Result<(VirtualArray, Range<u64>), NotExtendable> {
    let (oe, we) = (edges(&old.grid.dims()[k]), edges(&win.grid.dims()[k]));
    let (Some(o), Some(w)) = (covering(&oe, start, len), covering(&we, wstart, len)) else {
        return no(format!("{path}'s chunks cross into or out of the file"));
    };
    // The file's last chunk is padded where it ends the axis: in the window only if it ends
    // the window too, which the window's pieces make it do exactly when it ends the output.
    if oe[o.clone()] != we[w.clone()] {
        return no(format!("{path}'s file is chunked otherwise in the window"));
    }
    let bad = |e: vzarr_core::CoreError| NotExtendable(format!("{path}: {e}"));
    let shift = |i: u64| i - o.start as u64 + w.start as u64;
    let mut idx = Vec::new();
    let n = old.manifest.len();
    // In C order, the chunks of a range along axis 0 are one run.
    let lins: Range<usize> = if k == 0 {
        let inner: u64 = old.grid.grid_shape()[1..].iter().product();
        let at = |c: usize| usize::try_from(c as u64 * inner).map_or(n, |x| x.min(n));
        at(o.start)..at(o.end)
    } else {
        0..n
    };
    for lin in lins {
        old.grid.chunk_index_into(lin as u64, &mut idx);
        if !o.contains(&(idx[k] as usize)) {
            continue;
        }
        idx[k] = shift(idx[k]);
        let r = win
            .grid
            .linear_index(&idx)
            .map_or(ChunkRef::Missing, |i| win.manifest.get(i as usize));
        match r {
            ChunkRef::Missing => old.manifest.set_missing(lin).map_err(bad)?,
            r => copy_ref(&mut old.manifest, lin, r)
                .map_err(|e| NotExtendable(format!("{path}: {e}")))?,
        }
    }
    Ok((old, o.start as u64..o.end as u64))
}

/// An array kept inline whole with the values of elements `[start, start + len)` along `k`
/// replaced by the window's of `[wstart, wstart + len)`, kept inline as the planner (`how`)
/// keeps them; what changed (`None`: the values are the same).
fn replace_values(
    path: &str,
    old: VirtualArray,
    win: &VirtualArray,
    k: usize,
    (start, wstart, len): (u64, u64, u64),
    how: Whole,
    policy: &SmallChunkPolicy,
) -> Result<(VirtualArray, Option<Changed>), NotExtendable> {
    let Values {
        old: ro,
        win: rw,
        outer,
        inner,
        old_len: ok_,
        win_len: wk,
    } = values(path, &old, win, k)?;
    let os = old.shape();
    let (s, ws_, t) = (start as usize, wstart as usize, len as usize);
    if ok_ < s + t || wk < ws_ + t {
        return no(format!("{path}'s extent differs in the window"));
    }
    let mut raw = ro.clone();
    for o in 0..outer {
        let from = &rw[(o * wk + ws_) * inner..(o * wk + ws_ + t) * inner];
        raw[(o * ok_ + s) * inner..(o * ok_ + s + t) * inner].copy_from_slice(from);
    }
    if raw == ro {
        return Ok((old, None));
    }
    let rows = old.grid.dims()[0].clone();
    let (array, same) = inline_whole(path, old, &os, raw, how, policy)?;
    let change = match (
        k,
        rows.chunk_of(start),
        rows.chunk_of((start + len).saturating_sub(1)),
    ) {
        (0, Some(a), Some(b)) if same => Changed::range(0, a..b + 1),
        _ => Changed::from(0, 0),
    };
    Ok((array, Some(change)))
}
