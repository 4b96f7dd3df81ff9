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

/// Formats a byte count with binary units (`1.5 MiB`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn chunk_label(c: &[Vec<u64>]) -> String {
    let axes: Vec<String> = c
        .iter()
        .map(|edges| match edges.as_slice() {
            [one] => one.to_string(),
            many if many.len() <= 4 => format!(
                "[{}]",
                many.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            many => format!("[{}..{} edges]", many[0], many.len()),
        })
        .collect();
    format!("({})", axes.join(", "))
}

impl DatasetSummary {
    /// A plain-text table: one row per array, then totals and skipped variables.
    pub fn to_table(&self) -> String {
        let header = [
            "array", "shape", "dims", "dtype", "chunks", "codecs", "n chunks", "stored", "bytes",
        ];
        let rows: Vec<[String; 9]> = self
            .arrays
            .iter()
            .map(|a| {
                let shape = format!(
                    "({})",
                    a.shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let stored = if a.stats.inline > 0 {
                    format!("{} +{} inline", a.stats.referenced, a.stats.inline)
                } else {
                    a.stats.referenced.to_string()
                };
                let endian = if a.endian == "big" { " (BE)" } else { "" };
                [
                    a.path.clone(),
                    shape,
                    a.dimensions.join(","),
                    format!("{}{endian}", a.dtype),
                    format!(
                        "{}{}",
                        chunk_label(&a.chunk_shape),
                        if a.grid == "rectilinear" { " rect" } else { "" }
                    ),
                    if a.codecs.is_empty() {
                        "-".into()
                    } else {
                        a.codecs.join(",")
                    },
                    a.chunks.to_string(),
                    stored,
                    human_bytes(a.stats.referenced_bytes + a.stats.inline_bytes),
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(width).enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(w - c.chars().count()));
                }
            }
            s.push('\n');
            s
        };
        let mut out = line(&header.map(String::from));
        for r in &rows {
            out.push_str(&line(r));
        }
        out.push_str(&format!(
            "\n{} arrays in {} groups; {} chunks referenced ({}), {} inline ({}), {} not stored\n",
            self.arrays.len(),
            self.groups,
            self.total.referenced,
            human_bytes(self.total.referenced_bytes),
            self.total.inline,
            human_bytes(self.total.inline_bytes),
            self.total.missing,
        ));
        if !self.skipped.is_empty() {
            out.push_str(&format!("\nleft out ({}):\n", self.skipped.len()));
            for s in &self.skipped {
                out.push_str(&format!("  {}: {}\n", s.path, s.reason));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_human() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
