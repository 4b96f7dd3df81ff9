//! Shared helpers of the reader's integration tests (also used by vzarr-verify's tests,
//! through a `#[path]` module).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Names of the good fixtures (HDF5, NetCDF4, NetCDF3) listed in fixtures.json.
pub(crate) fn good_fixtures() -> Vec<String> {
    let text = std::fs::read_to_string(fixtures().join("fixtures.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| matches!(f["format"].as_str(), Some("hdf5" | "netcdf4" | "netcdf3")))
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

/// Scans `src` and writes its references to `out`.
pub(crate) fn build(src: &Path, out: &Path, split: Option<u64>) {
    let opts = vzarr_scan::ScanOptions::default().with_split_contiguous(split);
    let source = vzarr_scan::inputs::SourceRef::local(src).unwrap();
    let ds = vzarr_scan::scan_source(&source, &opts)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    vzarr_kerchunk::write_file(&ds, out).unwrap();
}

/// Copies a fixture into `dir` and returns the copy's absolute path.
pub(crate) fn copy_fixture(name: &str, dir: &Path) -> PathBuf {
    let dst = dir.join(name);
    std::fs::copy(fixtures().join(name), &dst).unwrap();
    vzarr_source::absolute(&dst).unwrap()
}

/// Reads references as JSON.
pub(crate) fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Writes JSON references.
pub(crate) fn write_json(p: &Path, v: &serde_json::Value) {
    std::fs::write(p, serde_json::to_vec(v).unwrap()).unwrap();
}

/// Options that trust the recorded prefixes (the tests' own references).
pub(crate) fn trusting() -> vzarr_read::ReadOptions {
    vzarr_read::ReadOptions {
        trust_recorded_prefixes: true,
        ..Default::default()
    }
}

/// Opens references the test made (their recorded prefixes trusted).
pub(crate) fn open(p: &Path) -> vzarr_read::Reader {
    vzarr_read::open(p.to_str().unwrap(), trusting())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Sets a file's modification time (to undo the change a write makes).
pub(crate) fn set_mtime(p: &Path, t: std::time::SystemTime) {
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.set_modified(t).unwrap();
}
