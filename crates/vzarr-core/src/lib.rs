//! Core model of vzarr: virtual datasets, arrays, chunk grids and chunk manifests.
//!
//! No I/O lives here: scanners produce a [`VirtualDataset`], the planner combines many into
//! one, writers serialise it and readers resolve it.

#![forbid(unsafe_code)]

pub mod attrs;
mod codec;
mod dataset;
mod dtype;
mod fill;
mod grid;
mod hdf5_filter;
mod hdf5_zfp;
pub mod limits;
mod manifest;
pub mod names;
pub mod netcdf;
pub mod record;
pub mod small;
pub mod summary;

pub use codec::{
    BitshuffleCompression, BloscShuffle, Codec, ZfpType, bytes_codec_json, vlen_utf8_codec_json,
};
pub use dataset::{
    Arrays, Attributes, ConcatInfo, ConcatPiece, Group, Groups, Inputs, Provenance, Retimed,
    SkippedVariable, SourceRecord, VirtualArray, VirtualDataset, group_metadata, prefixes_of,
};
pub use dtype::{DataType, Endian, StructField};
pub use fill::{FillValue, f64_to_half, half_to_f64, utf32_bytes, utf32_text};
pub use grid::{ChunkGrid, DimGrid, MAX_EDGES, chunk_key, rle_decode, rle_encode};
pub use hdf5_filter::hdf5_filter_name;
pub use limits::{
    KEEP_FETCHED_ARRAY_BYTES, KEEP_FETCHED_SOURCE_BYTES, MAX_ARRAY_REFERENCES, MAX_CHUNKS,
    MAX_RANK, MAX_REFERENCES,
};
pub use manifest::{ChunkManifest, ChunkRef, DENSE_CHUNKS, ManifestStats};
pub use small::{SmallChunkPolicy, SmallChunks};

/// Errors of the core model: invalid grids, manifests or metadata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A chunk grid that breaks the rules (zero edges, edges that do not cover the axis, ...).
    #[error("invalid chunk grid: {0}")]
    Grid(String),
    /// A manifest operation out of range or inconsistent.
    #[error("invalid chunk manifest: {0}")]
    Manifest(String),
    /// Metadata that cannot be represented or parsed.
    #[error("invalid metadata: {0}")]
    Metadata(String),
}

/// An error and its causes on one line, each cause once (a cause whose text the line already
/// holds is left out): how the build reports a file's error and the planner a chunk's.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}
