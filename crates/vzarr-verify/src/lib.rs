//! Verification of vzarr references: every chunk (or a seeded sample) read through the
//! manifest with `vzarr-read` and compared value by value with the source read without the
//! manifest by another reader ([`SourceReaders`]):
//!
//! - vzarr's own readers, in every build: HDF5/NetCDF4 through the native HDF5 reader's own
//!   walk of the file's chunk index and vzarr's codecs, NetCDF3 through its header parser and
//!   ranged reads of the variable's data; local files and object storage alike, no C library;
//! - the C libraries, in builds with the `c-oracle` feature (the default readers there):
//!   libhdf5 for HDF5/NetCDF4 (files on object storage downloaded to a temporary file first,
//!   as the library reads local files only), netCDF-C for local NetCDF3, in a supervised
//!   worker process when [`VerifyOptions::worker`] is set.
//!
//! The report names the readers it compared with ([`VerifyReport::readers`]).
//!
//! DMR++ sidecars are checked against their granules by [`check_sidecar`] (`sidecar`).
//!
//! ```no_run
//! let reader = vzarr_read::open("out.json", vzarr_read::ReadOptions::default())?;
//! let report = vzarr_verify::verify(&reader, &vzarr_verify::VerifyOptions::default())?;
//! println!("{}", report.readers_line());
//! println!("{}", report.summary());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audit;
#[cfg(feature = "c-oracle")]
mod c_opened;
#[cfg(feature = "c-oracle")]
mod c_readers;
mod direct;
#[cfg(feature = "c-oracle")]
mod h5filters;
mod report;
mod sample;
mod sidecar;
mod source_values;
mod verify;
#[cfg(feature = "c-oracle")]
pub mod worker;

use std::path::PathBuf;
use std::time::Duration;

pub use audit::{AuditReport, Defect, DefectKind, audit, without_defective};
pub use report::{Mismatch, Skipped, VerifyOptions, VerifyProgress, VerifyReport};
pub use sidecar::{
    FindingKind, SidecarFinding, SidecarMode, SidecarOptions, SidecarReport, check_sidecar,
    check_sidecars,
};
pub use verify::verify;

/// The readers that read the sources directly, to compare with what the manifest reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceReaders {
    /// vzarr's own readers (no C library): HDF5/NetCDF4 through the native HDF5 reader's walk
    /// of the chunk index and vzarr's codecs, NetCDF3 through its header parser.
    Native,
    /// libhdf5 and netCDF-C (NetCDF3 on object storage through vzarr's NetCDF3 reader), in
    /// builds with the `c-oracle` feature only.
    CLibraries,
}

impl SourceReaders {
    /// Whether this build has these readers.
    pub fn available(self) -> bool {
        match self {
            SourceReaders::Native => true,
            SourceReaders::CLibraries => cfg!(feature = "c-oracle"),
        }
    }

    /// The readers' name as users spell it (`native`, `c`).
    pub fn name(self) -> &'static str {
        match self {
            SourceReaders::Native => "native",
            SourceReaders::CLibraries => "c",
        }
    }
}

impl Default for SourceReaders {
    /// The C libraries where they are built (`c-oracle`), else vzarr's own readers.
    fn default() -> Self {
        if cfg!(feature = "c-oracle") {
            SourceReaders::CLibraries
        } else {
            SourceReaders::Native
        }
    }
}

/// How to start a worker process that reads sources through the C libraries (see
/// [`VerifyOptions::worker`]); the worker runs `worker::serve` (builds with `c-oracle`).
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    /// The program (e.g. `std::env::current_exe()`).
    pub program: PathBuf,
    /// Its arguments (e.g. `["__verify-worker"]`).
    pub args: Vec<String>,
    /// Time one read may take before the worker is killed.
    pub timeout: Duration,
}

/// Why a verification could not run (differing values are not errors: they are in the
/// [`VerifyReport`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// Reading through the references failed before any comparison.
    #[error(transparent)]
    Read(#[from] vzarr_read::ReadError),
    /// Sources are stale, missing or refused (the first one, and how many more).
    #[error("{first}{}", if *.more > 0 { format!(" (and {} more sources)", .more) } else { String::new() })]
    Sources {
        /// The first source's error.
        #[source]
        first: vzarr_source::SourceError,
        /// How many more sources failed the check.
        more: usize,
    },
    /// A source could not be opened or read.
    #[error(transparent)]
    Source(#[from] vzarr_source::SourceError),
    /// A source (a DMR++ sidecar, or its granule) could not be scanned.
    #[error(transparent)]
    Scan(#[from] vzarr_scan::ScanError),
    /// The readers asked for are not part of this build.
    #[error(
        "the {} readers (libhdf5, netCDF-C) are not part of this build: it was built without the cargo feature `c-oracle`",
        .readers.name()
    )]
    NotBuilt {
        /// The readers asked for.
        readers: SourceReaders,
    },
}
