//! Extending a combined dataset at its tail ([`vzarr_plan::extend`]) against planning every
//! file: the same arrays, chunk for chunk, on synthetic monthly archives whose chunks point at
//! no bytes (so uncompressed, small chunks kept as they are: padded chunks are cut by
//! reference). The Python interop tests (`test_append.py`) compare written references byte
//! for byte on files written by netCDF4-python, compressed and inlined chunks included.

mod common;

use common::{MemReader, archive};
use vzarr_core::{SmallChunkPolicy, SmallChunks, VirtualDataset};
use vzarr_plan::{Concat, Grids, PlanOptions, compact, extend, plan};

fn planned(
    files: Vec<VirtualDataset>,
    units: Option<&str>,
) -> (VirtualDataset, vzarr_plan::CompactReport) {
    let opts = PlanOptions::new(Concat::Existing("time".into()))
        .with_time_units(units.map(str::to_string));
    let reader = MemReader::default();
    let (mut ds, _) = plan(files, &opts, &reader).unwrap();
    let report = compact(&mut ds, &policy(), Grids::Any, &reader).unwrap();
    (ds, report)
}

fn policy() -> SmallChunkPolicy {
    SmallChunkPolicy::default().with_mode(SmallChunks::Keep)
}

fn assert_same(a: &VirtualDataset, b: &VirtualDataset, what: &str) {
    assert_eq!(a.provenance, b.provenance, "{what}: provenance");
    assert_eq!(
        a.arrays.keys().collect::<Vec<_>>(),
        b.arrays.keys().collect::<Vec<_>>(),
        "{what}: arrays"
    );
    for (path, x) in &a.arrays {
        let y = &b.arrays[path];
        assert_eq!(x.zarr_metadata(), y.zarr_metadata(), "{what}: {path}");
        assert!(
            x.manifest.iter().eq(y.manifest.iter()),
            "{what}: {path}'s chunks"
        );
    }
}

#[test]
fn extending_at_the_tail_equals_planning_every_file() {
    for chunk_t in [31, 10, 7, 1] {
        let all = archive(9, chunk_t, 2, &[]);
        let (full, _) = planned(all.clone(), None);
        let units = full.provenance.concat.as_ref().unwrap().retimed[0]
            .units
            .clone();
        // The first five, then the last of them with the next four.
        let (old, _) = planned(all[..5].to_vec(), None);
        let (window, report) = planned(all[4..].to_vec(), Some(&units));
        let what = format!("chunks of {chunk_t}");
        let ext = extend(old, window, &report, &policy()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_same(&ext.dataset, &full, &what);
        // Every array along time changed, from the old last file's first chunk on.
        assert!(ext.changed.contains_key("var0") && ext.changed.contains_key("time"));
    }
}

#[test]
fn a_window_that_does_not_start_with_the_last_file_is_refused() {
    let all = archive(6, 10, 1, &[]);
    let (old, _) = planned(all[..3].to_vec(), None);
    let units = old.provenance.concat.as_ref().unwrap().retimed[0]
        .units
        .clone();
    // Files after the old last one, without it.
    let (window, report) = planned(all[3..].to_vec(), Some(&units));
    let e = extend(old, window, &report, &policy()).unwrap_err();
    assert!(e.0.contains("come before its last file"), "{e}");
}

/// File `k` of `all` re-processed: its variables' chunks moved within it (every second one
/// no longer stored), its record new.
fn reprocessed(all: &[VirtualDataset], k: usize) -> Vec<VirtualDataset> {
    let mut all = all.to_vec();
    let f = &mut all[k];
    for (path, a) in f.arrays.iter_mut().filter(|(p, _)| p.starts_with("var")) {
        let n = a.manifest.len();
        let mut man = vzarr_core::ChunkManifest::new_missing(n);
        let url = f.provenance.sources[0].url.clone();
        let sid = man.intern(&url).unwrap();
        for i in (0..n).step_by(2) {
            let vzarr_core::ChunkRef::Range { length, .. } = a.manifest.get(i) else {
                panic!("referenced");
            };
            man.set_range(i, sid, 900_000 + i as u64 * length, length)
                .unwrap();
        }
        a.manifest = man;
        assert!(path.starts_with("var"));
    }
    f.provenance.sources[0].size += 1;
    all
}

#[test]
fn replacing_a_file_in_the_middle_equals_planning_every_file() {
    for chunk_t in [31, 10, 7, 1] {
        let all = archive(9, chunk_t, 2, &[]);
        let (old, _) = planned(all.clone(), None);
        let units = old.provenance.concat.as_ref().unwrap().retimed[0]
            .units
            .clone();
        for k in [1, 4, 8] {
            let now = reprocessed(&all, k);
            let (full, _) = planned(now.clone(), None);
            let (window, report) = planned(now[k - 1..now.len().min(k + 2)].to_vec(), Some(&units));
            let what = format!("chunks of {chunk_t}, file {k}");
            let r = vzarr_plan::replace(old.clone(), window, k, &report, &policy())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_same(&r.dataset, &full, &what);
            // Only the file's chunks of the variables changed (the time values are the same).
            assert_eq!(
                r.changed.keys().collect::<Vec<_>>(),
                ["var0", "var1"],
                "{what}"
            );
            let c = &r.changed["var0"];
            let rows = full.arrays["var0"].grid.dims()[0].clone();
            let piece = &full.provenance.concat.as_ref().unwrap().pieces[k];
            let first = rows.chunk_of(piece.start).unwrap();
            let last = rows.chunk_of(piece.start + piece.len - 1).unwrap();
            assert_eq!(c.ranges, std::slice::from_ref(&(first..last + 1)), "{what}");
        }
    }
}

#[test]
fn a_replaced_file_then_new_files_equal_planning_every_file() {
    // The last file re-processed and two new ones: replaced, then extended.
    let all = archive(9, 10, 1, &[]);
    let (old, _) = planned(all[..7].to_vec(), None);
    let units = old.provenance.concat.as_ref().unwrap().retimed[0]
        .units
        .clone();
    let now = reprocessed(&all, 6);
    let (full, _) = planned(now.clone(), None);
    let (window, report) = planned(now[5..7].to_vec(), Some(&units));
    let r = vzarr_plan::replace(old, window, 6, &report, &policy()).unwrap();
    let (tail, report) = planned(now[6..].to_vec(), Some(&units));
    let mut ext = extend(r.dataset, tail, &report, &policy()).unwrap();
    assert_same(&ext.dataset, &full, "replaced then extended");
    vzarr_plan::join_changed(&mut ext.changed, r.changed);
    assert_eq!(ext.changed["var0"].ranges.len(), 1);
}

#[test]
fn a_replacement_the_output_cannot_take_is_refused() {
    let all = archive(6, 10, 1, &[]);
    let (old, _) = planned(all.clone(), None);
    let units = old.provenance.concat.as_ref().unwrap().retimed[0]
        .units
        .clone();
    // The first file: what is kept once comes from it.
    let (w, report) = planned(all[0..2].to_vec(), Some(&units));
    let e = vzarr_plan::replace(old.clone(), w, 0, &report, &policy()).unwrap_err();
    assert!(e.0.contains("first file"), "{e}");
    // A window that is not the file between its neighbours.
    let (w, report) = planned(all[2..4].to_vec(), Some(&units));
    let e = vzarr_plan::replace(old.clone(), w, 2, &report, &policy()).unwrap_err();
    assert!(e.0.contains("neighbours"), "{e}");
    // The last file, now one day longer (April of 31 days).
    let (old, _) = planned(all[..4].to_vec(), None);
    let mut longer = all[2..4].to_vec();
    longer[1] = common::month_file("file:///archive/f00003.nc", 90, 31, 10, 1, &[]);
    let (w, report) = planned(longer, Some(&units));
    let e = vzarr_plan::replace(old, w, 3, &report, &policy()).unwrap_err();
    assert!(e.0.contains("neighbours"), "{e}");
}
