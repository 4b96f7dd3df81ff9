//! Reading virtual Zarr v3 datasets through their kerchunk v1 references: values out of a
//! manifest through zarrs and `object_store`, with no C library.
//!
//! - [`open`]: a [`Reader`] over references at a path or URL. Chunk references are resolved
//!   through `vzarr-source` (local paths, `file://`, `s3://`, `gs://`, `az://`,
//!   `http(s)://`; credentials and endpoints from the environment as `object_store`'s
//!   builders read them), nearby byte ranges coalesced and fetched concurrently, and decoded
//!   with zarrs (regular and rectilinear grids, every codec vzarr emits, the `string` data
//!   type with `vlen-utf8` chunks, checked before zarrs decodes them, and the
//!   `null_terminated_bytes` data type added here).
//! - Every URL is checked against the allowed prefixes (recorded in the references or given
//!   by the user, symbolic links resolved) before anything is fetched; sources are checked
//!   for changes since the build (size, modification time, ETag) before they are read.
//! - kerchunk's Parquet references are opened lazily ([`open_parquet`], and [`open`] of their
//!   directory): `.zmetadata` at open, the record file of each chunk a read needs
//!   ([`Reader::manifest`]; [`Reader::load_all`] for everything).
//! - [`ArrayReader`]: read boxes, selections (`tas[0:3,10,:]`) or whole arrays, as raw
//!   native-endian bytes ([`RawArray`]) or `ndarray`s.
//!
//! ```no_run
//! let reader = vzarr_read::open("out.json", vzarr_read::ReadOptions::default())?;
//! let tas = reader.array("tas")?.read::<f32>(&[0..3, 0..10, 0..20])?;
//! println!("{tas:?}");
//! # Ok::<(), vzarr_read::ReadError>(())
//! ```

mod array;
mod config;
mod dtype;
mod error;
mod lazy;
mod reader;
mod select;
mod store;
mod struct_dtype;
mod values;

pub use array::{ArrayReader, FetchedChunks, max_chunk_bytes};
pub use config::{PREFIXES_ENV, configured_prefixes};
pub use dtype::NullTerminatedBytesDataType;
pub use error::ReadError;
pub use lazy::RecordFetch;
pub use reader::{
    Located, ReadOptions, ReadStats, Reader, holds_references, load, locate, open, open_bytes,
    open_located, open_parquet, open_parsed, open_sources,
};
pub use select::{AxisSelection, ResolvedSelection, Selection, parse_selection};
pub use store::{KeyTarget, resolve_key};
pub use struct_dtype::StructDataType;
pub use values::{
    Difference, RawArray, Scalar, box_positions, compare, compare_strings, extract_box, scalar,
    swap_elements, to_f64s, unravel,
};
pub use vzarr_codec::{Fletcher32Codec, h5_fletcher32, register_zarrs_fixes};
pub use vzarr_kerchunk::{FetchError, ParseError, ParseLimits, ParsedRefs, parse_refs};
pub use vzarr_source::{Location, Prefix, PrefixPolicy, Scheme, SourceError, parse_url};
