//! Reading virtual Zarr v3 datasets through their kerchunk v1 references.
//!
//! - [`parse_refs`]: references back into the model ([`vzarr_core::VirtualDataset`]), with
//!   typed errors for malformed input.
//! - [`open`]: a [`Reader`] whose store resolves chunk references through `object_store`
//!   (local paths, `file://`, `s3://`, `gs://`, `az://`, `http(s)://`; credentials and
//!   endpoints from the environment as `object_store`'s builders read them), coalescing nearby
//!   byte ranges and fetching concurrently, and decodes with zarrs (regular and rectilinear
//!   grids, every codec we emit, and the `null_terminated_bytes` data type added here).
//! - Every URL is checked against the allowed prefixes (recorded in the references or given
//!   by the user) before anything is fetched; sources are checked for changes since the build
//!   (size, modification time, ETag) before they are read.
//! - [`verify`]: every chunk (or a seeded sample) read through the manifest and compared with
//!   the source read directly (HDF5 library, netCDF-C, or our NetCDF3 header parser).
//!
//! ```no_run
//! let reader = vzarr_read::open("out.json", vzarr_read::ReadOptions::default()).unwrap();
//! let tas = reader.array("tas").unwrap().read::<f32>(&[0..3, 0..10, 0..20]).unwrap();
//! println!("{tas:?}");
//! ```

#![warn(missing_docs)]

mod direct;
mod dtype;
mod error;
mod fetch;
mod h5filters;
mod reader;
mod refs;
mod select;
mod store;
mod values;
mod verify;

pub use dtype::NullTerminatedBytesDataType;
pub use error::ReadError;
pub use reader::{ArrayReader, ReadOptions, ReadStats, Reader, open, open_bytes};
pub use refs::{ParseLimits, ParsedRefs, parse_refs};
pub use select::{AxisSelection, ResolvedSelection, Selection, parse_selection};
pub use values::{Difference, RawArray, Scalar, compare};
pub use verify::{Mismatch, Skipped, VerifyOptions, VerifyProgress, VerifyReport, verify};
pub use vzarr_codec::{Fletcher32Codec, h5_fletcher32, register_zarrs_fixes};
pub use vzarr_source::{Location, Prefix, PrefixPolicy, Scheme, SourceStamp, parse_url};
