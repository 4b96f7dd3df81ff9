//! Build orchestration: sources in, one virtual dataset out.
//!
//! - [`build`] scans sources in parallel (through the scan cache), goes on past bad files when
//!   asked, and combines the scans with the planner ([`scan_sources`], [`combine`]).
//! - [`shard`]: the same work split across processes (`vzarr scan --shard K/N` writes a
//!   partial, `vzarr combine` plans from all of them).
//! - [`append`] and `tail`: new files added to an existing output, planned with its last file
//!   only and joined to it ([`Appended::Tail`]), or, where that cannot give what a full plan
//!   gives, planned with every recorded file again (their scans from the scan cache).
//! - [`sync`]: an existing output brought in line with its sources as they are now (new,
//!   changed and removed files found by listing again where it was built from).
//!
//! ```no_run
//! use vzarr_build::{BuildOptions, build};
//! use vzarr_plan::Concat;
//! use vzarr_scan::inputs::{Filters, collect};
//!
//! let sources = collect(&["archive/".into()], &[], &Filters::default())?;
//! let opts = BuildOptions {
//!     concat: Some(Concat::Existing("time".into())),
//!     ..Default::default()
//! };
//! let out = build(&sources, &opts, &|_, _| {})?;
//! vzarr_kerchunk::write_file(&out.dataset, std::path::Path::new("tas.json"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod append;
mod build;
mod error;
mod options;
pub mod output;
mod report;
mod run;
pub mod shard;
pub mod sync;
mod tail;
pub mod upgrade;

pub use build::{
    BuildOutcome, Combined, Scanned, build, combine, error_chain, fill_totals, left_out,
    scan_sources, with_jobs,
};
pub use error::{BuildError, Unwritable};
pub use options::{BuildOptions, DEFAULT_FILE_TIMEOUT_SECS, OnError, Settings, parse_size};
pub use output::{Format, Output, Written};
pub use report::{Failure, write_report};
pub use run::{Progress, run};
pub use tail::{Appended, SplicedFile};
pub use vzarr_plan::Changed;
