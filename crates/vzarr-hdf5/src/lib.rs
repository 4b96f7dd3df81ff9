//! Native HDF5 and NetCDF4 scanner: reads the structure of a file in pure Rust
//! ([`vzarr_hdf5_format`]) through the project's byte layer ([`vzarr_source`], so local files
//! and object storage alike) and returns it as a [`vzarr_core::VirtualDataset`] whose chunk
//! references point into the file.
//!
//! The result is the one the libhdf5 scanner (`vzarr-hdf5-oracle`) gives for the same file:
//! the same groups, arrays, attributes, dimension names, fill values, codecs and chunk
//! references, the same variables left out for the same reasons. A differential test holds
//! the two to that, fixture by fixture (`tests/differential`).
//!
//! Policy for what cannot be virtualised: a dataset whose data type, filter or layout has no
//! Zarr v3 equivalent that zarr-python 3.4 reads (region references, variable-length
//! sequences, N-bit, ...) is left out and listed in [`vzarr_core::VirtualDataset::skipped`] with the reason; the
//! rest of the file is still virtualised. Files that cannot be read at all are an
//! [`Hdf5Error`]. Variable-length strings cannot be referenced in place either: their values
//! are read and stored inline as Zarr v3 `string` arrays, up to
//! [`ScanOptions::max_string_bytes`] per array (`strings`).
//!
//! Where the two differ, by design (the differential test lists each such array and checks
//! the rest equal; the interop tests compare the values with h5py and netCDF4-python):
//! - variable-length string datasets, which the libhdf5 scanner leaves out, are stored inline;
//!   so are compounds with variable-length string members, as a `struct` whose strings are
//!   `fixed_length_utf32` fields (as VirtualiZarr 2.8 reads them); so are object references,
//!   read as the paths of their targets (`references`), which the libhdf5 scanner leaves out;
//! - soft links are followed as h5py follows them, the libhdf5 scanner lists them as skipped
//!   (a second hard link to a dataset or group is listed again by both, as netCDF-C shows it);
//! - names Zarr v3 does not allow are mapped (`vzarr_core::names`).
//!
//! Where the two differ, the libhdf5 scanner cannot give an answer or libhdf5 gives a wrong
//! one (each is checked by the differential test):
//! - a hard link to a group above it (a cycle): the libhdf5 scanner follows it without end;
//!   here it is listed as skipped and not followed;
//! - an extensible-array chunk index whose unlimited dimension is not the first: libhdf5 2.2's
//!   chunk iteration reports some chunks at wrong positions (the libhdf5 scanner drops those
//!   past the extent); here every chunk is where its values are;
//! - a dataset with an unlimited dimension in a file whose lengths take fewer than 8 bytes:
//!   libhdf5 2.2 cannot open it ("didn't find unlimited dimension"); here it is scanned.
//!
//! How what is read is spelled in Zarr (data types, attribute values, `_FillValue`, fill
//! values, phony dimensions, contiguous and compact chunks) is decided once, in
//! `vzarr-hdf5-map`, for both scanners: this crate reads the file and fills that mapping.
//!
//! ```no_run
//! use std::sync::Arc;
//! use vzarr_source::{ByteSource, LocalFile};
//!
//! let src: Arc<dyn ByteSource> = Arc::new(LocalFile::open("tas.nc".as_ref())?);
//! let ds = vzarr_hdf5::scan(src, &vzarr_hdf5::ScanOptions::local())?;
//! println!("{} arrays", ds.arrays.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules
//!
//! | module       | what it does |
//! |--------------|--------------|
//! | `walk`       | the scan entry ([`scan`]): groups and links from the root (hard, soft, external), Zarr names, one dataset at a time |
//! | `types`      | a datatype message's facts for the mapping; compounds, complex numbers, bitfields and array types, which only this scanner maps |
//! | `filters`    | HDF5 filter pipelines to Zarr v3 codecs, or why not |
//! | `layout`     | chunked, contiguous and compact storage to chunk references; chunks stored with filters skipped, re-encoded |
//! | `strings`    | variable-length strings read from the global heap, stored inline (`string`, `vlen-utf8`) |
//! | `records`    | compounds with variable-length string members read, stored inline as a `struct` with `fixed_length_utf32` fields |
//! | `references` | object references resolved to paths, links recorded (the Links and Object References and `ref` conventions) |
//! | `fill`       | the dataset fill value (what unwritten chunks read as) |
//! | `attributes` | attribute values read from the file (variable-length strings from the global heap) for the mapping |
//! | `dims`       | the dimension scales `DIMENSION_LIST` attaches, resolved to names |
//! | `values`     | [`ValueReader`]: a region of a dataset's values read straight from the file (no manifest), for verification |
//! | `storage`    | the byte-layer adapter: [`SourceStorage`], the reader's bytes from a block cache |
//! | `error`      | [`Hdf5Error`] |

#![forbid(unsafe_code)]

mod ahead;
mod attributes;
mod ctx;
mod dims;
mod error;
mod fill;
mod filters;
mod layout;
mod records;
mod references;
mod storage;
mod strings;
mod types;
mod values;
mod walk;

pub use error::Hdf5Error;
pub use references::relative_path;
pub use storage::SourceStorage;
pub use values::{MAX_REGION_BYTES, RegionValues, ValueReader};
pub use vzarr_hdf5_map::refusal;
pub use walk::{scan, scan_noting, scan_with_head};

/// Options of a scan: what to virtualise and how to read the bytes.
///
/// The byte tuning decides how many requests a scan costs. HDF5 metadata written by
/// netCDF-C and h5py mostly sits near the start of a file, but object headers, B-tree nodes
/// and heaps can be anywhere; the scan reads the head of the file in one request, then serves
/// every structure from a cache of aligned blocks, fetching the blocks a structure points at
/// in batches.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanOptions {
    /// Split uncompressed contiguous datasets larger than this many bytes into virtual chunks
    /// along axis 0, each at most this size (at least one row). `None` keeps one chunk.
    pub split_contiguous_bytes: Option<u64>,
    /// Bytes read from the start of the file in the first request.
    pub head_bytes: u64,
    /// Size of the blocks the cache reads and keeps (at least 512).
    pub block_size: u64,
    /// Most bytes of blocks kept in memory at once (oldest dropped first).
    pub cache_capacity: u64,
    /// Whether bytes beyond the head are read and kept in blocks; when false, every
    /// structure outside the head is read exactly as large as it is, and prefetches do
    /// nothing (see [`vzarr_source::BlockCache::head_only`]).
    pub cache_beyond_head: bool,
    /// Whether small arrays keep the chunk bytes the scan already holds (see
    /// [`vzarr_core::VirtualDataset::keep_fetched`]), so that the planner need not fetch them
    /// again: worth a request on object storage, nothing for a local file, where keeping them
    /// would only hold up to 256 KiB per file in memory until the build ends.
    pub keep_fetched: bool,
    /// Most bytes the inline chunks of one variable-length string array may take (their
    /// `vlen-utf8` encoding: the UTF-8 text, plus 4 bytes per element and per chunk); a larger
    /// array is left out with a warning naming its size and this limit. Default
    /// [`DEFAULT_MAX_STRING_BYTES`].
    pub max_string_bytes: u64,
    /// Whether object references (datasets, compound members and attributes of an object
    /// reference type) are read as the paths of their targets, as the draft Links and Object
    /// References convention spells them (`references`); when false they are left out with
    /// [`vzarr_hdf5_map::refusal::OBJECT_REFERENCES_NOT_READ`]. Default true.
    pub object_references: bool,
    /// Whether soft and external links, and second hard links to an object, are recorded in
    /// the attributes of the group that holds them (`references`) instead of followed (soft
    /// links) or left out (the others). Default false: h5py's view, each soft link's target
    /// read again under the link's name.
    pub record_links: bool,
}

/// The default of [`ScanOptions::max_string_bytes`]: 64 MiB.
pub const DEFAULT_MAX_STRING_BYTES: u64 = 64 << 20;

impl ScanOptions {
    /// For local files: a 64 KiB head kept in 16 KiB blocks, and every structure beyond it
    /// read exactly (one system call each, as libhdf5 does). A read costs a system call, not
    /// a round trip, and the page cache keeps what was read, so blocks beyond the head only
    /// copy bytes nobody asked for: on a million-chunk v1 B-tree (nodes of 2.6 KiB between
    /// chunks), `vzarr inspect` took 0.25 s with 16 KiB blocks, 0.17 s with 4 KiB blocks and
    /// 0.10 s reading each node exactly; 120 small netCDF-4 files scan as fast as with blocks
    /// (their metadata lies in the head).
    pub fn local() -> Self {
        ScanOptions {
            split_contiguous_bytes: None,
            head_bytes: 64 << 10,
            block_size: 16 << 10,
            cache_capacity: 64 << 10,
            cache_beyond_head: false,
            keep_fetched: false,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            object_references: true,
            record_links: false,
        }
    }

    /// For object storage (S3, GCS, Azure, HTTP): a 256 KiB head and 256 KiB blocks, at most
    /// 64 MiB cached. The head of a netCDF-4 file (superblock, root group, the variables'
    /// object headers and attributes, often their chunk indexes and coordinates) arrives in
    /// one request (every fixture of the project: one request in all; the benchmark
    /// archives' metadata lies in their first 40 KB), and what lies beyond it in few (3 to 5
    /// batches for the million-chunk files of the `bench_scan` example). A request costs
    /// 20-100 ms of latency, but a catalog scans many files at once and is then limited by
    /// bandwidth, where every head's size counts: a 1 MiB head made the object-storage
    /// benchmark fetch 3-4 times the bytes for the same requests, and take longer
    /// (benches/HISTORY.md). 64 MiB holds the reader's largest prefetch window of such blocks,
    /// and bounds the memory of a scan when many run at once.
    pub fn object_storage() -> Self {
        ScanOptions {
            split_contiguous_bytes: None,
            head_bytes: 256 << 10,
            block_size: 256 << 10,
            cache_capacity: 64 << 20,
            cache_beyond_head: true,
            keep_fetched: true,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            object_references: true,
            record_links: false,
        }
    }

    /// [`ScanOptions::local`] for `file://` URLs, [`ScanOptions::object_storage`] for any
    /// other.
    pub fn for_url(url: &str) -> Self {
        if url.starts_with("file://") {
            Self::local()
        } else {
            Self::object_storage()
        }
    }

    /// The same options, splitting contiguous datasets larger than `bytes` (see
    /// [`ScanOptions::split_contiguous_bytes`]).
    pub fn with_split_contiguous_bytes(mut self, bytes: Option<u64>) -> Self {
        self.split_contiguous_bytes = bytes;
        self
    }
}

impl ScanOptions {
    /// The same options, with at most `bytes` of inline chunks per variable-length string
    /// array (see [`ScanOptions::max_string_bytes`]).
    pub fn with_max_string_bytes(mut self, bytes: u64) -> Self {
        self.max_string_bytes = bytes;
        self
    }

    /// The same options, reading object references as paths or leaving them out (see
    /// [`ScanOptions::object_references`]).
    pub fn with_object_references(mut self, read: bool) -> Self {
        self.object_references = read;
        self
    }

    /// The same options, recording links or following them (see
    /// [`ScanOptions::record_links`]).
    pub fn with_record_links(mut self, record: bool) -> Self {
        self.record_links = record;
        self
    }

    /// The options with a head of `bytes` (at least 512) and blocks no larger, for a file
    /// whose head was fetched at that size: a head shorter than [`ScanOptions::head_bytes`] is
    /// not read again at full size, and blocks of it seed the cache.
    pub fn with_head(mut self, bytes: u64) -> Self {
        self.head_bytes = bytes.max(512);
        self.block_size = self.block_size.min(self.head_bytes);
        self
    }
}

impl Default for ScanOptions {
    /// [`ScanOptions::local`].
    fn default() -> Self {
        Self::local()
    }
}
