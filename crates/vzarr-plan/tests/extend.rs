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
