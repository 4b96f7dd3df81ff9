//! Shared helpers of the verifier's integration tests: the reader's test helpers (fixtures,
//! building, opening references), plus scanning and planning.

#![allow(dead_code)]

use std::path::Path;

#[path = "../../../vzarr-read/tests/common/mod.rs"]
mod reader;
pub(crate) use reader::*;

/// Scans a local file.
pub(crate) fn scan(src: &Path) -> vzarr_core::VirtualDataset {
    let source = vzarr_scan::inputs::SourceRef::local(src).unwrap();
    vzarr_scan::scan_source(&source, &vzarr_scan::ScanOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
}

/// Plans `datasets` along `concat`, reading through the default byte layer.
pub(crate) fn plan(
    datasets: Vec<vzarr_core::VirtualDataset>,
    concat: vzarr_plan::Concat,
    time_units: Option<&str>,
) -> vzarr_core::VirtualDataset {
    let opts = vzarr_plan::PlanOptions::new(concat).with_time_units(time_units.map(str::to_string));
    vzarr_plan::plan(datasets, &opts, &vzarr_source::Stores::default())
        .unwrap()
        .0
}

/// The readers of sources this build has: vzarr's own always, the C libraries with the
/// `c-oracle` feature. Every check runs with each.
pub(crate) fn readers() -> Vec<vzarr_verify::SourceReaders> {
    [
        vzarr_verify::SourceReaders::Native,
        vzarr_verify::SourceReaders::CLibraries,
    ]
    .into_iter()
    .filter(|r| r.available())
    .collect()
}

/// Verify options reading the sources with `readers`.
pub(crate) fn with(readers: vzarr_verify::SourceReaders) -> vzarr_verify::VerifyOptions {
    vzarr_verify::VerifyOptions {
        readers,
        ..Default::default()
    }
}
