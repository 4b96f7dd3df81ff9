//! Verification of vzarr references: every chunk (or a seeded sample) read through the
//! manifest with `vzarr-read` and compared value by value with the source read by an
//! independent reader: the HDF5 library for HDF5/NetCDF4, netCDF-C for local NetCDF3, and
//! for NetCDF3 on object storage our header parser with ranged reads of the variable's data.
//! HDF5 files on object storage are downloaded to a temporary file first (the HDF5 library
//! reads local files only).
//!
//! This is the one crate of the reading side that links C libraries (libhdf5, netCDF-C);
//! `vzarr-read` alone reads manifests without them.
//!
//! ```no_run
//! let reader = vzarr_read::open("out.json", vzarr_read::ReadOptions::default())?;
//! let report = vzarr_verify::verify(&reader, &vzarr_verify::VerifyOptions::default())?;
//! println!("{}", report.summary());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod direct;
mod h5filters;
mod verify;
pub mod worker;

pub use verify::{Mismatch, Skipped, VerifyOptions, VerifyProgress, VerifyReport, verify};
pub use worker::WorkerCommand;

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
}
