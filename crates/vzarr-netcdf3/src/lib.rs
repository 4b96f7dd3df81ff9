//! Pure-Rust NetCDF3 scanner of vzarr: classic (CDF-1), 64-bit offset (CDF-2) and 64-bit
//! data (CDF-5) files become virtual Zarr v3 datasets.
//!
//! The header is parsed from a few ranged reads through a [`ByteSource`] (no netcdf-c, no
//! read of the data section). Non-record variables are contiguous: one chunk, or whole-row
//! chunks along the first axis when [`ScanOptions::split_contiguous_bytes`] asks for it.
//! Record variables get one chunk per record at `begin + i * record_size`.
//!
//! ```no_run
//! use vzarr_source::LocalFile;
//! let src = LocalFile::open(std::path::Path::new("tas.nc")).unwrap();
//! let ds = vzarr_netcdf3::scan(&src, &vzarr_netcdf3::ScanOptions::default()).unwrap();
//! println!("{} arrays", ds.arrays.len());
//! ```

#![forbid(unsafe_code)]

mod error;
mod header;
mod scan;

pub use error::Nc3Error;
pub use header::{
    AttrValue, Attribute, Dimension, FIRST_READ_BYTES, Header, MAX_HEADER_BYTES, MAX_VAR_DIMS,
    NcType, Variable, parse_header, sniff,
};
pub use scan::{ScanOptions, attr_json, dataset_from_header, default_fill_le, scan};
#[doc(no_inline)]
pub use vzarr_source::MemSource;

#[doc(no_inline)]
pub use vzarr_source::ByteSource;
