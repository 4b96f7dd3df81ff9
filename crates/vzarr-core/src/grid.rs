//! Chunk grids: per-axis chunk edges, regular or rectilinear.
//!
//! Each axis is either [`DimGrid::Fixed`] (one chunk length repeated until the extent is
//! covered) or [`DimGrid::Varying`] (an explicit list of chunk edges with their prefix sums).
//! A grid whose axes are all fixed serialises as the Zarr v3 `regular` grid; any other grid as
//! the `rectilinear` grid of zarr-extensions, with run-length encoded edge lists.

use serde_json::{Value, json};

use crate::CoreError;

/// The chunking of one array axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DimGrid {
    /// Chunks of `size` elements, repeated until `extent` is covered (the last chunk may
    /// extend past the extent).
    Fixed {
        /// Chunk length along the axis (at least 1).
        size: u64,
        /// Array length along the axis.
        extent: u64,
    },
    /// Explicit chunk edges; `cumulative[i]` is the start of chunk `i` and
    /// `cumulative[edges.len()]` their sum.
    Varying {
        /// Chunk lengths along the axis (each at least 1).
        edges: Vec<u64>,
        /// Prefix sums of `edges`, one longer than `edges`, starting at 0.
        cumulative: Vec<u64>,
        /// Array length along the axis.
        extent: u64,
    },
}

impl DimGrid {
    /// A fixed axis; `size` must be at least 1.
    pub fn fixed(size: u64, extent: u64) -> Result<Self, CoreError> {
        if size == 0 {
            return Err(CoreError::Grid("chunk length 0".into()));
        }
        Ok(DimGrid::Fixed { size, extent })
    }

    /// An axis with explicit edges, kept as given: every edge at least 1, the sum at least the
    /// extent, and no edge starting at or past the extent (except a single edge of an empty
    /// axis).
    pub fn varying(edges: Vec<u64>, extent: u64) -> Result<Self, CoreError> {
        if edges.is_empty() {
            return Err(CoreError::Grid("no chunk edges".into()));
        }
        if edges.contains(&0) {
            return Err(CoreError::Grid("chunk edge of length 0".into()));
        }
        let mut cumulative = Vec::with_capacity(edges.len() + 1);
        let mut sum: u64 = 0;
        cumulative.push(0);
        for &e in &edges {
            sum = sum
                .checked_add(e)
                .ok_or_else(|| CoreError::Grid("chunk edges overflow u64".into()))?;
            cumulative.push(sum);
        }
        if sum < extent {
            return Err(CoreError::Grid(format!(
                "chunk edges sum to {sum}, less than the axis length {extent}"
            )));
        }
        let last_start = cumulative[edges.len() - 1];
        if edges.len() > 1 && last_start >= extent {
            return Err(CoreError::Grid(format!(
                "chunk edge {} starts at {last_start}, past the axis length {extent}",
                edges.len() - 1
            )));
        }
        Ok(DimGrid::Varying {
            edges,
            cumulative,
            extent,
        })
    }

    /// An axis from explicit edges, made [`DimGrid::Fixed`] when the edges are those of a
    /// regular grid (all equal), else [`DimGrid::Varying`].
    pub fn from_edges(edges: Vec<u64>, extent: u64) -> Result<Self, CoreError> {
        let grid = Self::varying(edges, extent)?;
        Ok(grid.normalized())
    }

    /// The same axis as [`DimGrid::Fixed`] if its edges are those of a regular grid.
    pub fn normalized(self) -> Self {
        match self {
            DimGrid::Varying {
                ref edges, extent, ..
            } => {
                let first = edges[0];
                let n = if extent == 0 {
                    1
                } else {
                    extent.div_ceil(first)
                };
                if edges.iter().all(|&e| e == first) && edges.len() as u64 == n.max(1) {
                    DimGrid::Fixed {
                        size: first,
                        extent,
                    }
                } else {
                    self
                }
            }
            fixed => fixed,
        }
    }

    /// Array length along this axis.
    pub fn extent(&self) -> u64 {
        match self {
            DimGrid::Fixed { extent, .. } | DimGrid::Varying { extent, .. } => *extent,
        }
    }

    /// Number of chunks along this axis.
    pub fn n_chunks(&self) -> u64 {
        match self {
            DimGrid::Fixed { size, extent } => extent.div_ceil(*size),
            DimGrid::Varying { edges, extent, .. } => {
                if *extent == 0 {
                    0
                } else {
                    edges.len() as u64
                }
            }
        }
    }

    /// Start of chunk `i` along this axis.
    pub fn chunk_start(&self, i: u64) -> u64 {
        match self {
            DimGrid::Fixed { size, .. } => i * size,
            DimGrid::Varying { cumulative, .. } => cumulative[i as usize],
        }
    }

    /// Nominal (encoded) length of chunk `i`, which may extend past the extent.
    pub fn chunk_len(&self, i: u64) -> u64 {
        match self {
            DimGrid::Fixed { size, .. } => *size,
            DimGrid::Varying { edges, .. } => edges[i as usize],
        }
    }

    /// Number of elements of chunk `i` that lie inside the extent.
    pub fn chunk_valid_len(&self, i: u64) -> u64 {
        let start = self.chunk_start(i);
        self.chunk_len(i).min(self.extent().saturating_sub(start))
    }

    /// The chunk holding element `pos`, if `pos` is inside the extent.
    pub fn chunk_of(&self, pos: u64) -> Option<u64> {
        if pos >= self.extent() {
            return None;
        }
        Some(match self {
            DimGrid::Fixed { size, .. } => pos / size,
            DimGrid::Varying { cumulative, .. } => {
                // The last prefix sum <= pos.
                (cumulative.partition_point(|&c| c <= pos) - 1) as u64
            }
        })
    }

    /// All chunk edges in order (expanded).
    pub fn edges(&self) -> Vec<u64> {
        match self {
            DimGrid::Fixed { size, extent } => vec![*size; extent.div_ceil(*size) as usize],
            DimGrid::Varying { edges, .. } => edges.clone(),
        }
    }

    /// The rectilinear `chunk_shapes` entry of this axis: a bare integer for a fixed axis,
    /// else the run-length encoded edge list.
    pub fn to_rectilinear_json(&self) -> Value {
        match self {
            DimGrid::Fixed { size, .. } => json!(size),
            DimGrid::Varying { edges, .. } => Value::Array(rle_encode(edges)),
        }
    }
}

/// Run-length encodes chunk edges: a run of two or more equal edges becomes `[value, count]`,
/// a single edge stays a bare integer.
pub fn rle_encode(edges: &[u64]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < edges.len() {
        let v = edges[i];
        let mut j = i + 1;
        while j < edges.len() && edges[j] == v {
            j += 1;
        }
        let count = (j - i) as u64;
        if count == 1 {
            out.push(json!(v));
        } else {
            out.push(json!([v, count]));
        }
        i = j;
    }
    out
}

/// Most chunk edges an axis may have when parsed from metadata (bounds allocations driven by
/// untrusted input).
pub const MAX_EDGES: u64 = 1 << 26;

/// Expands a run-length encoded edge list (`[4, [1, 3], 2]`); every value and count at least 1.
pub fn rle_decode(items: &[Value]) -> Result<Vec<u64>, CoreError> {
    let bad = |v: &Value| CoreError::Metadata(format!("bad chunk edge entry {v}"));
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::Number(n) => match n.as_u64() {
                Some(v) if v >= 1 && (out.len() as u64) < MAX_EDGES => out.push(v),
                _ => return Err(bad(item)),
            },
            Value::Array(pair) if pair.len() == 2 => {
                let v = pair[0]
                    .as_u64()
                    .filter(|&v| v >= 1)
                    .ok_or_else(|| bad(item))?;
                let c = pair[1]
                    .as_u64()
                    .filter(|&c| c >= 1)
                    .ok_or_else(|| bad(item))?;
                if out.len() as u64 + c > MAX_EDGES {
                    return Err(CoreError::Metadata(format!(
                        "run of {c} chunk edges is too long"
                    )));
                }
                out.extend(std::iter::repeat_n(v, c as usize));
            }
            _ => return Err(bad(item)),
        }
    }
    Ok(out)
}

/// The chunk grid of an array: one [`DimGrid`] per axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkGrid {
    dims: Vec<DimGrid>,
}

impl ChunkGrid {
    /// A grid from its axes.
    pub fn new(dims: Vec<DimGrid>) -> Self {
        ChunkGrid { dims }
    }

    /// A regular grid for `shape` with chunks of `chunk_shape`.
    pub fn regular(shape: &[u64], chunk_shape: &[u64]) -> Result<Self, CoreError> {
        if shape.len() != chunk_shape.len() {
            return Err(CoreError::Grid(format!(
                "chunk shape {chunk_shape:?} does not match array shape {shape:?}"
            )));
        }
        let dims = shape
            .iter()
            .zip(chunk_shape)
            .map(|(&e, &c)| DimGrid::fixed(c, e))
            .collect::<Result<_, _>>()?;
        Ok(ChunkGrid { dims })
    }

    /// The grid of one chunk holding the whole array (an axis of length 0 has chunks of 1).
    pub fn whole(shape: &[u64]) -> Result<Self, CoreError> {
        let chunk: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
        Self::regular(shape, &chunk)
    }

    /// The grid of an array stored contiguously in C order, rows of `row_bytes` bytes along
    /// its first axis, split along that axis into virtual chunks of whole rows of at most
    /// `target` bytes each (at least one row; the last chunk holds the remaining rows, a
    /// regular grid when they divide evenly). `None` where the array stays one chunk: not
    /// larger than `target`, at most one row, rows of no bytes, or more chunks than an array
    /// may reference ([`crate::limits::MAX_ARRAY_REFERENCES`]). The one rule every scanner
    /// splits by (HDF5 contiguous datasets, NetCDF3 fixed-size variables).
    pub fn split_rows(
        shape: &[u64],
        row_bytes: u64,
        target: u64,
    ) -> Result<Option<Self>, CoreError> {
        let Some((&n0, inner)) = shape.split_first() else {
            return Ok(None);
        };
        let total = n0.checked_mul(row_bytes);
        if row_bytes == 0 || n0 <= 1 || total.is_none_or(|t| t <= target) {
            return Ok(None);
        }
        let rows = (target / row_bytes).clamp(1, n0);
        if n0 / rows > crate::limits::MAX_ARRAY_REFERENCES {
            return Ok(None);
        }
        let full = usize::try_from(n0 / rows)
            .map_err(|_| CoreError::Grid(format!("{n0} rows in chunks of {rows}")))?;
        let mut edges = vec![rows; full];
        if n0 % rows != 0 {
            edges.push(n0 % rows);
        }
        let mut dims = vec![DimGrid::from_edges(edges, n0)?];
        for &d in inner {
            dims.push(DimGrid::fixed(d.max(1), d)?);
        }
        Ok(Some(ChunkGrid { dims }))
    }

    /// The per-axis grids.
    pub fn dims(&self) -> &[DimGrid] {
        &self.dims
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.dims.len()
    }

    /// The array shape the grid covers.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().map(DimGrid::extent).collect()
    }

    /// Whether every axis is fixed (serialises as `regular`).
    pub fn is_regular(&self) -> bool {
        self.dims.iter().all(|d| matches!(d, DimGrid::Fixed { .. }))
    }

    /// Number of chunks along each axis.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.dims.iter().map(DimGrid::n_chunks).collect()
    }

    /// Total number of chunks (1 for a 0-d array); errors if it overflows.
    pub fn n_chunks(&self) -> Result<u64, CoreError> {
        self.dims.iter().try_fold(1u64, |acc, d| {
            acc.checked_mul(d.n_chunks())
                .ok_or_else(|| CoreError::Grid("number of chunks overflows u64".into()))
        })
    }

    /// Position of chunk `index` in C order over the grid.
    pub fn linear_index(&self, index: &[u64]) -> Option<u64> {
        if index.len() != self.dims.len() {
            return None;
        }
        let mut lin: u64 = 0;
        for (d, &i) in self.dims.iter().zip(index) {
            let n = d.n_chunks();
            if i >= n {
                return None;
            }
            lin = lin.checked_mul(n)?.checked_add(i)?;
        }
        Some(lin)
    }

    /// The chunk index of the chunk at C-order position `linear`.
    pub fn chunk_index(&self, linear: u64) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.dims.len());
        self.chunk_index_into(linear, &mut out);
        out
    }

    /// [`ChunkGrid::chunk_index`] into `out` (cleared first), without allocating when it has
    /// room.
    pub fn chunk_index_into(&self, mut linear: u64, out: &mut Vec<u64>) {
        out.clear();
        out.resize(self.dims.len(), 0);
        for (k, d) in self.dims.iter().enumerate().rev() {
            let n = d.n_chunks().max(1);
            out[k] = linear % n;
            linear /= n;
        }
    }

    /// Nominal (encoded) shape of the chunk at `index`.
    pub fn chunk_shape(&self, index: &[u64]) -> Vec<u64> {
        self.dims
            .iter()
            .zip(index)
            .map(|(d, &i)| d.chunk_len(i))
            .collect()
    }

    /// Shape of the part of the chunk at `index` inside the array (smaller than the nominal
    /// shape at the array's edge).
    pub fn chunk_valid_shape(&self, index: &[u64]) -> Vec<u64> {
        self.dims
            .iter()
            .zip(index)
            .map(|(d, &i)| d.chunk_valid_len(i))
            .collect()
    }

    /// Element offset of the chunk at `index`.
    pub fn chunk_origin(&self, index: &[u64]) -> Vec<u64> {
        self.dims
            .iter()
            .zip(index)
            .map(|(d, &i)| d.chunk_start(i))
            .collect()
    }

    /// The Zarr v3 `chunk_grid` metadata: `regular` when every axis is fixed, else
    /// `rectilinear` with run-length encoded edges.
    pub fn to_zarr_json(&self) -> Value {
        if self.is_regular() {
            let chunk_shape: Vec<u64> = self
                .dims
                .iter()
                .map(|d| match d {
                    DimGrid::Fixed { size, .. } => *size,
                    DimGrid::Varying { .. } => unreachable!("regular grid"),
                })
                .collect();
            json!({"name": "regular", "configuration": {"chunk_shape": chunk_shape}})
        } else {
            let shapes: Vec<Value> = self.dims.iter().map(DimGrid::to_rectilinear_json).collect();
            json!({
                "name": "rectilinear",
                "configuration": {"kind": "inline", "chunk_shapes": shapes}
            })
        }
    }

    /// Parses Zarr v3 `chunk_grid` metadata for an array of `shape`.
    pub fn from_zarr_json(value: &Value, shape: &[u64]) -> Result<Self, CoreError> {
        let bad = || CoreError::Metadata(format!("unsupported chunk_grid {value}"));
        let name = value.get("name").and_then(Value::as_str).ok_or_else(bad)?;
        let conf = value.get("configuration").ok_or_else(bad)?;
        match name {
            "regular" => {
                let cs: Vec<u64> = conf
                    .get("chunk_shape")
                    .and_then(Value::as_array)
                    .ok_or_else(bad)?
                    .iter()
                    .map(|v| v.as_u64().ok_or_else(bad))
                    .collect::<Result<_, _>>()?;
                Self::regular(shape, &cs)
            }
            "rectilinear" => {
                if conf.get("kind").and_then(Value::as_str) != Some("inline") {
                    return Err(bad());
                }
                let shapes = conf
                    .get("chunk_shapes")
                    .and_then(Value::as_array)
                    .ok_or_else(bad)?;
                if shapes.len() != shape.len() {
                    return Err(bad());
                }
                let dims = shapes
                    .iter()
                    .zip(shape)
                    .map(|(s, &extent)| match s {
                        Value::Number(n) => DimGrid::fixed(n.as_u64().ok_or_else(bad)?, extent),
                        Value::Array(items) => {
                            let mut edges = rle_decode(items)?;
                            // Overflow chunks past the extent are permitted; drop them.
                            let mut sum = 0u64;
                            let keep = edges
                                .iter()
                                .position(|&e| {
                                    let start = sum;
                                    sum = sum.saturating_add(e);
                                    start >= extent && start > 0
                                })
                                .unwrap_or(edges.len());
                            edges.truncate(keep.max(1));
                            DimGrid::varying(edges, extent)
                        }
                        _ => Err(bad()),
                    })
                    .collect::<Result<_, _>>()?;
                Ok(ChunkGrid { dims })
            }
            _ => Err(bad()),
        }
    }
}

/// The store key of the chunk at `index` of the array at `path` in Zarr v3's default chunk key
/// encoding with the `/` separator (`path/c/i/j`; `path/c` for a 0-d array).
pub fn chunk_key(path: &str, index: &[u64]) -> String {
    let mut key = String::with_capacity(path.len() + 3 + index.len() * 4);
    if !path.is_empty() {
        key.push_str(path);
        key.push('/');
    }
    key.push('c');
    for i in index {
        key.push('/');
        key.push_str(&i.to_string());
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split_into_chunks_of_at_most_the_target() {
        // 10 rows of 8 bytes in chunks of at most 24 bytes: 3 rows, the last chunk 1 row.
        let g = ChunkGrid::split_rows(&[10, 2], 8, 24).unwrap().unwrap();
        assert_eq!(g.dims()[0].edges(), vec![3, 3, 3, 1]);
        assert_eq!(g.dims()[1], DimGrid::fixed(2, 2).unwrap());
        // Rows that divide evenly: a regular grid.
        let g = ChunkGrid::split_rows(&[9], 8, 24).unwrap().unwrap();
        assert_eq!(g.dims()[0], DimGrid::fixed(3, 9).unwrap());
        // A row larger than the target: one row a chunk.
        let g = ChunkGrid::split_rows(&[4, 100], 400, 10).unwrap().unwrap();
        assert_eq!(g.dims()[0], DimGrid::fixed(1, 4).unwrap());
        // Not split: small enough, one row, no bytes, no axis, too many chunks.
        assert_eq!(ChunkGrid::split_rows(&[3], 8, 24).unwrap(), None);
        assert_eq!(ChunkGrid::split_rows(&[1, 100], 8, 24).unwrap(), None);
        assert_eq!(ChunkGrid::split_rows(&[10, 0], 0, 24).unwrap(), None);
        assert_eq!(ChunkGrid::split_rows(&[], 8, 0).unwrap(), None);
        assert_eq!(ChunkGrid::split_rows(&[1 << 30], 1, 1).unwrap(), None);
        assert_eq!(
            ChunkGrid::whole(&[0, 3]).unwrap().dims(),
            &[DimGrid::fixed(1, 0).unwrap(), DimGrid::fixed(3, 3).unwrap()]
        );
    }

    fn varying(edges: &[u64], extent: u64) -> DimGrid {
        DimGrid::varying(edges.to_vec(), extent).unwrap()
    }

    #[test]
    fn spec_example_exact_json() {
        // The example of the zarr-extensions rectilinear spec and DESIGN.md, array shape 6 on
        // every axis: 4 | [1, 2, 3] | [[4, 2]] | [[1, 3], 3].
        let grid = ChunkGrid::new(vec![
            DimGrid::fixed(4, 6).unwrap(),
            varying(&[1, 2, 3], 6),
            varying(&[4, 4], 6),
            varying(&[1, 1, 1, 3], 6),
        ]);
        assert_eq!(
            serde_json::to_string(&grid.to_zarr_json()).unwrap(),
            r#"{"name":"rectilinear","configuration":{"kind":"inline","chunk_shapes":[4,[1,2,3],[[4,2]],[[1,3],3]]}}"#
        );
        let back = ChunkGrid::from_zarr_json(&grid.to_zarr_json(), &[6, 6, 6, 6]).unwrap();
        assert_eq!(back, grid);
        assert_eq!(back.grid_shape(), vec![2, 3, 2, 4]);
    }

    #[test]
    fn regular_json() {
        let g = ChunkGrid::regular(&[31, 180, 360], &[10, 90, 360]).unwrap();
        assert_eq!(
            g.to_zarr_json(),
            json!({"name": "regular", "configuration": {"chunk_shape": [10, 90, 360]}})
        );
        assert_eq!(g.grid_shape(), vec![4, 2, 1]);
        assert_eq!(g.n_chunks().unwrap(), 8);
    }

    #[test]
    fn rle_round_trips() {
        let cases: Vec<Vec<u64>> = vec![
            vec![1],
            vec![31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
            vec![5, 5, 5, 15, 15, 20, 35],
            vec![7; 100],
            vec![1, 2, 2, 1, 1, 1, 3],
        ];
        for edges in cases {
            let enc = rle_encode(&edges);
            assert_eq!(rle_decode(&enc).unwrap(), edges);
        }
        assert_eq!(
            Value::Array(rle_encode(&[5, 5, 5, 15, 15, 20, 35])),
            json!([[5, 3], [15, 2], 20, 35])
        );
        assert!(rle_decode(&[json!(0)]).is_err());
        assert!(rle_decode(&[json!([3, 0])]).is_err());
        assert!(rle_decode(&[json!([3])]).is_err());
        assert!(rle_decode(&[json!("3")]).is_err());
        assert!(rle_decode(&[json!([1, u64::MAX])]).is_err());
    }

    #[test]
    fn index_math_varying() {
        // 31 + 28 + 31 days of daily data, one chunk per month.
        let d = varying(&[31, 28, 31], 90);
        assert_eq!(d.n_chunks(), 3);
        assert_eq!(d.chunk_of(0), Some(0));
        assert_eq!(d.chunk_of(30), Some(0));
        assert_eq!(d.chunk_of(31), Some(1));
        assert_eq!(d.chunk_of(58), Some(1));
        assert_eq!(d.chunk_of(59), Some(2));
        assert_eq!(d.chunk_of(89), Some(2));
        assert_eq!(d.chunk_of(90), None);
        assert_eq!(d.chunk_start(2), 59);
        assert_eq!(d.chunk_len(1), 28);
    }

    #[test]
    fn index_math_fixed_and_linear() {
        let g = ChunkGrid::new(vec![varying(&[3, 2], 5), DimGrid::fixed(4, 10).unwrap()]);
        assert_eq!(g.grid_shape(), vec![2, 3]);
        assert_eq!(g.linear_index(&[1, 2]), Some(5));
        assert_eq!(g.chunk_index(5), vec![1, 2]);
        assert_eq!(g.chunk_index(3), vec![1, 0]);
        assert_eq!(g.linear_index(&[2, 0]), None);
        assert_eq!(g.chunk_shape(&[1, 2]), vec![2, 4]);
        assert_eq!(g.chunk_origin(&[1, 2]), vec![3, 8]);
        assert_eq!(g.dims()[1].chunk_valid_len(2), 2);
        assert_eq!(g.chunk_valid_shape(&[1, 2]), vec![2, 2]);
        for lin in 0..6 {
            assert_eq!(g.linear_index(&g.chunk_index(lin)), Some(lin));
        }
    }

    #[test]
    fn scalar_grid() {
        let g = ChunkGrid::regular(&[], &[]).unwrap();
        assert_eq!(g.n_chunks().unwrap(), 1);
        assert_eq!(g.linear_index(&[]), Some(0));
        assert_eq!(
            g.to_zarr_json(),
            json!({"name": "regular", "configuration": {"chunk_shape": []}})
        );
    }

    #[test]
    fn normalisation() {
        assert_eq!(
            DimGrid::from_edges(vec![10, 10, 10], 30).unwrap(),
            DimGrid::fixed(10, 30).unwrap()
        );
        assert_eq!(
            DimGrid::from_edges(vec![10, 10, 10], 25).unwrap(),
            DimGrid::fixed(10, 25).unwrap()
        );
        assert!(matches!(
            DimGrid::from_edges(vec![10, 10, 5], 25).unwrap(),
            DimGrid::Varying { .. }
        ));
        assert!(matches!(
            DimGrid::from_edges(vec![31, 28], 59).unwrap(),
            DimGrid::Varying { .. }
        ));
    }

    #[test]
    fn invalid_edges() {
        assert!(DimGrid::varying(vec![], 0).is_err());
        assert!(DimGrid::varying(vec![2, 0], 2).is_err());
        assert!(DimGrid::varying(vec![2, 2], 5).is_err());
        // An edge that starts past the extent is not kept.
        assert!(DimGrid::varying(vec![5, 5], 5).is_err());
        assert!(DimGrid::fixed(0, 5).is_err());
        // An empty axis still has one edge >= 1.
        let empty = DimGrid::varying(vec![1], 0).unwrap();
        assert_eq!(empty.n_chunks(), 0);
    }

    #[test]
    fn parse_drops_overflow_chunks() {
        let v = json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[4, 4, 4]]}});
        let g = ChunkGrid::from_zarr_json(&v, &[6]).unwrap();
        assert_eq!(g.grid_shape(), vec![2]);
    }
}
