//! Real files no one here wrote: every file below `VZARR_REAL_HDF5_DIR` (the HDF5 and NetCDF
//! files shipped in the sdists that `scripts/real-files` pins, chosen there by signature) is
//! scanned by both scanners. Files neither can open are listed and
//! must fail in both; every file the libhdf5 scanner scans must be scanned natively with an
//! identical result (and identical kerchunk bytes), apart from the documented libhdf5
//! divergences (see `crate::libhdf5_misnumbered` and `crate::libhdf5_cannot_open`).

use std::path::{Path, PathBuf};

use crate::compare::{Bytes, Stats, compare};

pub(crate) fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_below(&p, out);
        } else if !p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            out.push(p);
        }
    }
}

/// Calls to the source below the block cache when `path` is scanned with the object-storage
/// options.
fn round_trips(path: &Path) -> u64 {
    let src = std::sync::Arc::new(crate::Calls {
        inner: vzarr_source::MemSource::new("s3://bucket/file", std::fs::read(path).unwrap()),
        calls: Default::default(),
    });
    let _ = vzarr_hdf5::scan(src.clone(), &vzarr_hdf5::ScanOptions::object_storage());
    src.calls.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn real_files_match_the_oracle() {
    let Some(dir) = std::env::var_os("VZARR_REAL_HDF5_DIR") else {
        println!("VZARR_REAL_HDF5_DIR is not set: no real files compared");
        return;
    };
    let mut files = Vec::new();
    files_below(Path::new(&dir), &mut files);
    assert!(
        !files.is_empty(),
        "VZARR_REAL_HDF5_DIR={} holds no HDF5/NetCDF files (run scripts/real-files)",
        Path::new(&dir).display()
    );
    let mut total = Stats::default();
    let mut both_fail = Vec::new();
    let mut failed = Vec::new();
    let mut trips = Vec::new();
    for p in &files {
        let mut st = Stats::default();
        let mut diffs = compare(p, None, Bytes::Local, &mut st);
        if st.both_fail == 0 {
            // The same with contiguous datasets split, and through a tiny block cache.
            let mut more = Stats::default();
            diffs.extend(compare(p, Some(1 << 16), Bytes::Local, &mut more));
            diffs.extend(compare(p, None, Bytes::TinyCache, &mut more));
            st.differences += more.differences;
        }
        if !diffs.is_empty() {
            failed.push(p.display().to_string());
        } else if st.both_fail > 0 {
            let native = crate::compare::native(p, None, Bytes::Local).unwrap_err();
            let oracle = crate::compare::oracle(p, None).unwrap_err();
            both_fail.push(format!(
                "{}\n      native: {native}\n      oracle: {oracle}",
                p.display()
            ));
        }
        if st.both_fail == 0 {
            trips.push(round_trips(p));
        }
        st.files = 1;
        total.add(&st);
    }
    trips.sort_unstable();
    if let (Some(max), false) = (trips.last(), trips.is_empty()) {
        println!(
            "round trips per file with the object-storage options: median {}, max {max}, {} of \
             {} files in one",
            trips[trips.len() / 2],
            trips.iter().filter(|&&t| t == 1).count(),
            trips.len()
        );
    }
    println!("files neither scanner opens ({}):", both_fail.len());
    for f in &both_fail {
        println!("  {f}");
    }
    println!(
        "real files: {} files, {} scanned by both and equal, {} refused by both, {} libhdf5 \
         cannot open; {} arrays, {} chunks ({} referenced, {} inline), {} attributes, {} \
         skipped entries compared; {} arrays libhdf5 misnumbers; native only (issue 16 types): \
         {} arrays, {} left out by both with other reasons, {} enums with flag attributes; {} \
         differences by design (listed above); {} differences in {} files",
        files.len(),
        total.scans,
        total.both_fail,
        total.libhdf5_refuses,
        total.arrays,
        total.chunks,
        total.referenced,
        total.inline,
        total.attributes,
        total.skipped,
        total.libhdf5_misnumbered,
        total.native_only,
        total.reason_changed,
        total.enum_attributes,
        total.by_design,
        total.differences,
        failed.len()
    );
    assert!(failed.is_empty(), "differences in {failed:?}");
}
