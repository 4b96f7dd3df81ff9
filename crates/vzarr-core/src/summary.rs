//! A per-array summary of a virtual dataset, for `vzarr inspect` and build reports.

use serde::Serialize;

use crate::{DimGrid, ManifestStats, VirtualDataset};

/// What one array looks like: shape, type, chunking, codecs and chunk counts.
#[derive(Clone, Debug, Serialize)]
pub struct ArraySummary {
    /// Array path.
    pub path: String,
    /// Array shape.
    pub shape: Vec<u64>,
    /// Dimension names.
    pub dimensions: Vec<String>,
    /// Element type name.
    pub dtype: String,
    /// Byte order of the stored elements.
    pub endian: &'static str,
    /// `regular` or `rectilinear`.
    pub grid: &'static str,
    /// Chunk shape per axis: the fixed length, or the edges of a varying axis.
    pub chunk_shape: Vec<Vec<u64>>,
    /// Codec labels after `bytes`.
    pub codecs: Vec<String>,
    /// Number of chunks in the grid.
    pub chunks: u64,
    /// Referenced, inline and missing chunks and bytes.
    pub stats: ManifestStats,
}

/// The summary of a whole dataset.
#[derive(Clone, Debug, Serialize)]
pub struct DatasetSummary {
    /// Number of groups (root included).
    pub groups: usize,
    /// One entry per array, by path.
    pub arrays: Vec<ArraySummary>,
    /// Variables the scanner refused.
    pub skipped: Vec<crate::SkippedVariable>,
    /// Chunk totals over all arrays.
    pub total: ManifestStats,
}

/// Summarises a dataset.
pub fn summarize(ds: &VirtualDataset) -> DatasetSummary {
    let mut total = ManifestStats::default();
    let arrays = ds
        .arrays
        .iter()
        .map(|(path, a)| {
            let stats = a.manifest.stats();
            total.referenced += stats.referenced;
            total.inline += stats.inline;
            total.missing += stats.missing;
            total.referenced_bytes += stats.referenced_bytes;
            total.inline_bytes += stats.inline_bytes;
            ArraySummary {
                path: path.clone(),
                shape: a.shape(),
                dimensions: a.dimension_names.clone(),
                dtype: a.data_type.name(),
                endian: if a.data_type.has_endianness() {
                    a.endian.as_str()
                } else {
                    "n/a"
                },
                grid: if a.grid.is_regular() {
                    "regular"
                } else {
                    "rectilinear"
                },
                chunk_shape: a
                    .grid
                    .dims()
                    .iter()
                    .map(|d| match d {
                        DimGrid::Fixed { size, .. } => vec![*size],
                        DimGrid::Varying { edges, .. } => edges.clone(),
                    })
                    .collect(),
                codecs: a.codecs.iter().map(crate::Codec::label).collect(),
                chunks: a.grid.n_chunks().unwrap_or(u64::MAX),
                stats,
            }
        })
        .collect();
    DatasetSummary {
        groups: ds.groups.len(),
        arrays,
        skipped: ds.skipped.clone(),
        total,
    }
}
