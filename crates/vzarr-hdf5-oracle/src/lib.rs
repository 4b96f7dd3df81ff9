//! HDF5 and NetCDF4 scanner: reads the native layout of every dataset of a file through the
//! HDF5 library and returns it as a [`VirtualDataset`].
//!
//! Policy for what cannot be virtualised: a dataset whose data type, filter or layout has no
//! Zarr v3 equivalent that zarr-python 3.4 reads (variable-length strings, references,
//! compound types, LZF, N-bit, ...) is left out and listed in
//! [`VirtualDataset::skipped`] with the reason; the rest of the file is still virtualised.
//! Callers that want such files to fail check `skipped` (the CLI's `--strict`). Files that
//! cannot be read at all are an [`Hdf5Error`].
//!
//! This crate only asks libhdf5 what the file holds; how it is spelled in Zarr (data types,
//! attribute values, fill values, phony dimensions, contiguous and compact chunks) is the
//! shared mapping's (`vzarr-hdf5-map`), the one the native scanner fills too.
//!
//! # Modules
//!
//! | module       | what it does |
//! |--------------|--------------|
//! | `walk`       | the scan entry ([`scan_file`]): groups and links from the root, one dataset at a time |
//! | `types`      | a datatype's facts asked of libhdf5, for the mapping |
//! | `filters`    | HDF5 filter pipelines to Zarr v3 codecs, or why not |
//! | `layout`     | chunked, contiguous and compact storage to chunk references; chunks stored with filters skipped, re-encoded |
//! | `fill`       | the dataset fill value (what unwritten chunks read as) |
//! | `attributes` | attribute values read through libhdf5, for the mapping |
//! | `dims`       | the dimension scales `DIMENSION_LIST` attaches, resolved through libhdf5 |
//! | `ffi`        | thin safe wrappers over the HDF5 C calls beyond `hdf5-metno`; the only `unsafe` code |
//!
//! Every HDF5 call runs under `hdf5-metno`'s global lock (the bundled HDF5 is not built
//! thread-safe); [`scan_file`] takes it once per file.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_code)]

mod attributes;
mod ctx;
mod dims;
#[allow(unsafe_code)]
mod ffi;
mod fill;
mod filters;
mod layout;
mod types;
mod walk;

pub use walk::scan_file;

/// Options of an HDF5 scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Split uncompressed contiguous datasets larger than this many bytes into virtual chunks
    /// along axis 0, each at most this size (at least one row). `None` keeps one chunk.
    pub split_contiguous_bytes: Option<u64>,
}

/// A file that could not be scanned, naming the file and, where known, the object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Hdf5Error {
    /// The file could not be opened as HDF5.
    #[error("{path}: cannot open as HDF5: {reason}")]
    Open {
        /// File path.
        path: String,
        /// Why.
        reason: String,
    },
    /// An object of the file could not be read.
    #[error("{path}: {object}: {reason}")]
    Object {
        /// File path.
        path: String,
        /// Object path inside the file.
        object: String,
        /// Why.
        reason: String,
    },
}

/// The 8-byte HDF5 format signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Offsets where an HDF5 superblock may start in a file of `size` bytes: 0, 512, 1024, 2048, ...
pub fn signature_offsets(size: u64) -> impl Iterator<Item = u64> {
    std::iter::once(0u64)
        .chain((9..63).map(|k| 1u64 << k))
        .take_while(move |&o| o.saturating_add(8) <= size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_offsets_follow_the_spec() {
        let v: Vec<u64> = signature_offsets(5000).collect();
        assert_eq!(v, vec![0, 512, 1024, 2048, 4096]);
        assert_eq!(signature_offsets(4).count(), 0);
    }
}
