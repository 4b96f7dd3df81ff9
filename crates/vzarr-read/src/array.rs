//! Reading one array: [`Reader::array`] opens it (its zarrs array, kept per path) as an
//! [`ArrayReader`], which splits a box into batches of chunk rows (bounded by
//! `ReadOptions::batch_bytes`), fetches each batch's chunks concurrently with decoding the
//! previous one, decodes them with zarrs into the output buffer, and applies a selection's
//! steps. [`FetchedChunks`] lets a caller (verify) fetch ahead and decode boxes separately.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use ndarray::ArrayD;
use unsafe_cell_slice::UnsafeCellSlice;
use vzarr_core::{ChunkManifest, DataType, VirtualArray};
use zarrs::array::{
    Array, ArrayBytes, ArrayBytesDecodeIntoTarget, ArrayBytesFixedDisjointView, ArraySubset,
    ElementOwned,
};

use crate::ReadError;
use crate::reader::Reader;
use crate::select::{ResolvedSelection, Selection};
use crate::store::RefStore;
use crate::values::{RawArray, unravel};

/// Opening the arrays of open references.
impl Reader {
    /// The zarrs array at `path`, opened once and kept.
    fn zarr_array(&self, path: &str) -> Result<Arc<Array<RefStore>>, ReadError> {
        let mut arrays = self.arrays.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = arrays.get(path) {
            return Ok(a.clone());
        }
        if !self.dataset().arrays.contains_key(path) {
            return Err(ReadError::NoArray(path.to_string()));
        }
        let store = Arc::new(RefStore::new(self.shared.clone(), path, Arc::default()));
        let a = Array::open(store, &format!("/{path}"))
            .map_err(|e| ReadError::array(path, format!("zarrs cannot open it: {e}")))?;
        let a = Arc::new(a);
        arrays.insert(path.to_string(), a.clone());
        Ok(a)
    }

    /// A handle to read the array at `path`.
    pub fn array(&self, path: &str) -> Result<ArrayReader<'_>, ReadError> {
        let path = path.trim_start_matches('/');
        let meta = self
            .dataset()
            .arrays
            .get(path)
            .ok_or_else(|| ReadError::NoArray(path.to_string()))?;
        // Lazy Parquet references: a read reads the record files of the chunks it needs.
        let zarr = self.zarr_array(path)?;
        Ok(ArrayReader {
            reader: self,
            path: path.to_string(),
            meta,
            zarr,
        })
    }

    /// Reads a parsed selection (`VAR[0:3,10,:]`).
    pub fn read_selection(&self, sel: &Selection) -> Result<RawArray, ReadError> {
        self.array(&sel.var)?.read_selection(sel)
    }
}

/// Encoded bytes of some chunks of one array, fetched ahead of decoding
/// ([`ArrayReader::fetch_chunks`]).
#[derive(Clone, Debug, Default)]
pub struct FetchedChunks {
    // Shared by every box decoded from the batch: cloning it per box would copy the whole
    // batch's map each time (verify decodes one box per chunk).
    bytes: Arc<HashMap<usize, Bytes>>,
}

/// One array of open references.
pub struct ArrayReader<'r> {
    pub(crate) reader: &'r Reader,
    pub(crate) path: String,
    pub(crate) meta: &'r VirtualArray,
    pub(crate) zarr: Arc<Array<RefStore>>,
}

/// A batch of chunk rows: the box it covers and the chunks it needs.
struct Batch {
    ranges: Vec<Range<u64>>,
    lins: Vec<usize>,
}

/// The result of a scoped fetch thread (a panic in it is resumed here).
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> Result<T, ReadError> {
    match h.join() {
        Ok(v) => Ok(v),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The linear indices of the chunks that a box touches, in C order.
fn chunks_in_box(array: &VirtualArray, ranges: &[Range<u64>]) -> Vec<usize> {
    let grid = &array.grid;
    let mut per_axis: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for (d, r) in grid.dims().iter().zip(ranges) {
        if r.start >= r.end {
            return Vec::new();
        }
        match (d.chunk_of(r.start), d.chunk_of(r.end - 1)) {
            (Some(a), Some(b)) => per_axis.push(a..b + 1),
            _ => return Vec::new(),
        }
    }
    let counts: Vec<u64> = per_axis.iter().map(|r| r.end - r.start).collect();
    let total: u64 = counts.iter().product();
    (0..total)
        .filter_map(|k| {
            let idx: Vec<u64> = unravel(k, &counts)
                .iter()
                .zip(&per_axis)
                .map(|(i, r)| r.start + i)
                .collect();
            grid.linear_index(&idx).map(|l| l as usize)
        })
        .collect()
}

/// Whether the box `ranges` covers the valid part of chunk `lin` entirely.
fn fully_covered(array: &VirtualArray, lin: usize, ranges: &[Range<u64>]) -> bool {
    let idx = array.grid.chunk_index(lin as u64);
    array
        .grid
        .dims()
        .iter()
        .zip(&idx)
        .zip(ranges)
        .all(|((d, &i), r)| {
            let start = d.chunk_start(i);
            r.start <= start && r.end >= start + d.chunk_valid_len(i)
        })
}

/// Bytes of the largest chunk of `array` at its nominal (encoded) shape, saturating.
pub fn max_chunk_bytes(array: &VirtualArray) -> u64 {
    array
        .grid
        .dims()
        .iter()
        .fold(array.data_type.size() as u64, |acc, d| {
            let edge = match d {
                vzarr_core::DimGrid::Fixed { size, .. } => *size,
                vzarr_core::DimGrid::Varying { edges, .. } => {
                    edges.iter().copied().max().unwrap_or(1)
                }
            };
            acc.saturating_mul(edge)
        })
}

impl<'r> ArrayReader<'r> {
    /// Array path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The array's model: metadata and manifest (for lazily opened Parquet references, the
    /// manifest as [`crate::Reader::dataset`] holds it: see [`ArrayReader::manifest`]).
    pub fn meta(&self) -> &'r VirtualArray {
        self.meta
    }

    /// The array's whole manifest (for lazily opened Parquet references, every record file
    /// of the array read on first use; reads themselves need only the record files of the
    /// chunks they touch).
    pub fn manifest(&self) -> Result<&'r ChunkManifest, ReadError> {
        self.reader.shared.manifest(&self.path)
    }

    /// Shape.
    pub fn shape(&self) -> Vec<u64> {
        self.meta.shape()
    }

    /// Element type.
    pub fn data_type(&self) -> DataType {
        self.meta.data_type.clone()
    }

    /// Refuses arrays whose compressed chunks would not fit the chunk size limit when decoded,
    /// and string arrays with codecs after `vlen-utf8` (vzarr writes none; their decoded size
    /// cannot be bounded before decoding).
    pub fn check_chunk_size(&self) -> Result<(), ReadError> {
        if self.meta.data_type.is_string() && !self.meta.codecs.is_empty() {
            return Err(ReadError::array(
                &self.path,
                "string array with codecs after vlen-utf8: not read here (vzarr writes string \
                 chunks uncompressed)",
            ));
        }
        let n = max_chunk_bytes(self.meta);
        let limit = self.reader.options.max_chunk_bytes;
        if !self.meta.codecs.is_empty() && n > limit {
            return Err(ReadError::array(
                &self.path,
                format!("chunks of {n} bytes are larger than the limit of {limit} bytes"),
            ));
        }
        Ok(())
    }

    fn check_ranges(&self, ranges: &[Range<u64>]) -> Result<(), ReadError> {
        let shape = self.shape();
        if ranges.len() != shape.len() {
            return Err(ReadError::array(
                &self.path,
                format!("{} ranges for {} dimensions", ranges.len(), shape.len()),
            ));
        }
        for (k, (r, &n)) in ranges.iter().zip(&shape).enumerate() {
            if r.start > r.end || r.end > n {
                return Err(ReadError::array(
                    &self.path,
                    format!("range {r:?} is outside axis {k} of length {n}"),
                ));
            }
        }
        Ok(())
    }

    /// Splits the box into batches of whole chunk rows along axis 0, each with at most about
    /// `batch_bytes` of encoded chunks.
    fn batches(&self, ranges: &[Range<u64>]) -> Result<Vec<Batch>, ReadError> {
        if ranges.is_empty() {
            return Ok(vec![Batch {
                ranges: Vec::new(),
                lins: vec![0],
            }]);
        }
        let d0 = &self.meta.grid.dims()[0];
        let r0 = &ranges[0];
        let (Some(first), Some(last)) = (
            d0.chunk_of(r0.start),
            r0.end.checked_sub(1).and_then(|e| d0.chunk_of(e)),
        ) else {
            return Ok(Vec::new());
        };
        let limit = self.reader.options.batch_bytes.max(1);
        let mut out: Vec<Batch> = Vec::new();
        let mut cur: Option<Batch> = None;
        let mut cur_bytes = 0u64;
        for row in first..=last {
            let lo = d0.chunk_start(row).max(r0.start);
            let hi = (d0.chunk_start(row) + d0.chunk_len(row)).min(r0.end);
            let mut rr = ranges.to_vec();
            rr[0] = lo..hi;
            let mut lins = chunks_in_box(self.meta, &rr);
            if self.meta.codecs.is_empty() {
                // Raw chunks only partly selected are read by zarrs with ranged requests of
                // just the selected bytes; prefetch only the chunks read whole.
                lins.retain(|&l| fully_covered(self.meta, l, &rr));
            }
            let mut bytes = 0u64;
            for &l in &lins {
                let c = self.reader.shared.chunk(&self.path, l);
                bytes = bytes.saturating_add(c.map_err(|e| e.in_array(&self.path))?.encoded_len());
            }
            match &mut cur {
                Some(b) if cur_bytes < limit && b.lins.len() < 65_536 => {
                    b.ranges[0].end = hi;
                    b.lins.extend(lins);
                    cur_bytes += bytes;
                }
                _ => {
                    if let Some(b) = cur.take() {
                        out.push(b);
                    }
                    cur = Some(Batch { ranges: rr, lins });
                    cur_bytes = bytes;
                }
            }
        }
        out.extend(cur);
        Ok(out)
    }

    /// Fetches the encoded bytes of the stored-by-reference chunks `lins` (linear indices in
    /// C order over the grid), for [`ArrayReader::decode_box`].
    pub fn fetch_chunks(&self, lins: &[usize]) -> Result<FetchedChunks, ReadError> {
        let bytes = self
            .reader
            .shared
            .fetch(&self.path, lins)
            .map_err(|e| e.in_array(&self.path))?;
        Ok(FetchedChunks {
            bytes: Arc::new(bytes),
        })
    }

    /// Decodes the box `ranges` (one range per axis) into native-endian values, with the
    /// chunks in `fetched` (others are fetched on demand).
    pub fn decode_box(
        &self,
        fetched: &FetchedChunks,
        ranges: &[Range<u64>],
    ) -> Result<Vec<u8>, ReadError> {
        self.check_ranges(ranges)?;
        let store = Arc::new(RefStore::new(
            self.reader.shared.clone(),
            &self.path,
            fetched.bytes.clone(),
        ));
        let arr = self.zarr.with_storage(store);
        let subset = ArraySubset::new_with_ranges(ranges);
        let ab: ArrayBytes<'static> = arr
            .retrieve_array_subset(&subset)
            .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))?;
        let raw = ab
            .into_fixed()
            .map_err(|e| ReadError::array(&self.path, e))?;
        Ok(raw.into_owned())
    }

    /// Decodes the box `ranges` of a string array into its elements (C order), with the chunks
    /// in `fetched` (others are fetched on demand).
    pub fn decode_box_strings(
        &self,
        fetched: &FetchedChunks,
        ranges: &[Range<u64>],
    ) -> Result<Vec<String>, ReadError> {
        self.check_ranges(ranges)?;
        self.check_chunk_size()?;
        let store = Arc::new(RefStore::new(
            self.reader.shared.clone(),
            &self.path,
            fetched.bytes.clone(),
        ));
        self.retrieve_strings(store, ranges)
    }

    fn retrieve_strings(
        &self,
        store: Arc<RefStore>,
        ranges: &[Range<u64>],
    ) -> Result<Vec<String>, ReadError> {
        if !self.meta.data_type.is_string() {
            return Err(ReadError::array(&self.path, "not a string array"));
        }
        let arr = self.zarr.with_storage(store);
        arr.retrieve_array_subset::<Vec<String>>(&ArraySubset::new_with_ranges(ranges))
            .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))
    }

    /// Decodes the box `ranges` straight into `out` (the C-order bytes of a box of `out_shape`)
    /// at the position `rel` inside it.
    fn decode_into(
        &self,
        store: Arc<RefStore>,
        ranges: &[Range<u64>],
        out: &mut [u8],
        out_shape: &[u64],
        rel: &[Range<u64>],
    ) -> Result<(), ReadError> {
        let arr = self.zarr.with_storage(store);
        let esize = self.meta.data_type.size();
        let cells = UnsafeCellSlice::new(out);
        // SAFETY: this is the only view of `out` alive; its subset lies inside `out_shape`
        // (checked by the constructor) and `out` holds exactly the bytes of `out_shape`.
        let mut view = unsafe {
            ArrayBytesFixedDisjointView::new(
                cells,
                esize,
                out_shape,
                ArraySubset::new_with_ranges(rel),
            )
        }
        .map_err(|e| ReadError::array(&self.path, e))?;
        arr.retrieve_array_subset_into(
            &ArraySubset::new_with_ranges(ranges),
            ArrayBytesDecodeIntoTarget::Fixed(&mut view),
        )
        .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))
    }

    /// Reads the box `ranges` (one range per axis) as native-endian values. Chunks are fetched
    /// in batches (the next batch while the current one is decoded) and decoded straight into
    /// the result.
    pub fn read_raw(&self, ranges: &[Range<u64>]) -> Result<RawArray, ReadError> {
        self.check_ranges(ranges)?;
        self.check_chunk_size()?;
        let shape: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        if self.meta.data_type.is_string() {
            // Inline chunks, decoded batch by batch of chunk rows like the others.
            // Batches split axis 0 only: their elements follow each other in C order.
            let mut strings = Vec::new();
            for b in self.batches(ranges)? {
                let fetched = self.fetch_chunks(&b.lins)?;
                let store = Arc::new(RefStore::new(
                    self.reader.shared.clone(),
                    &self.path,
                    fetched.bytes,
                ));
                strings.extend(self.retrieve_strings(store, &b.ranges)?);
            }
            return Ok(RawArray {
                data_type: self.meta.data_type.clone(),
                shape,
                bytes: Vec::new(),
                strings,
            });
        }
        let esize = self.meta.data_type.size();
        let total = shape
            .iter()
            .try_fold(esize as u64, |a, &d| a.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| ReadError::array(&self.path, "the selection is too large"))?;
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|_| {
            ReadError::array(
                &self.path,
                format!("cannot allocate {total} bytes for the selection"),
            )
        })?;
        out.resize(total, 0);
        if total == 0 {
            return Ok(RawArray {
                data_type: self.meta.data_type.clone(),
                shape,
                bytes: out,
                strings: Vec::new(),
            });
        }
        let batches = self.batches(ranges)?;
        std::thread::scope(|s| -> Result<(), ReadError> {
            let fetch = |b: &Batch| self.fetch_chunks(&b.lins);
            let mut pending = batches.first().map(|b| s.spawn(move || fetch(b)));
            for (i, b) in batches.iter().enumerate() {
                let fetched = match pending.take() {
                    Some(h) => join(h)??,
                    None => FetchedChunks::default(),
                };
                pending = batches.get(i + 1).map(|n| s.spawn(move || fetch(n)));
                let store = Arc::new(RefStore::new(
                    self.reader.shared.clone(),
                    &self.path,
                    fetched.bytes,
                ));
                let rel: Vec<Range<u64>> = b
                    .ranges
                    .iter()
                    .zip(ranges)
                    .map(|(r, whole)| r.start - whole.start..r.end - whole.start)
                    .collect();
                self.decode_into(store, &b.ranges, &mut out, &shape, &rel)?;
            }
            Ok(())
        })?;
        Ok(RawArray {
            data_type: self.meta.data_type.clone(),
            shape,
            bytes: out,
            strings: Vec::new(),
        })
    }

    /// Reads the whole array as native-endian values.
    pub fn read_all_raw(&self) -> Result<RawArray, ReadError> {
        let ranges: Vec<Range<u64>> = self.shape().iter().map(|&n| 0..n).collect();
        self.read_raw(&ranges)
    }

    /// Reads the box `ranges` into an ndarray of `T` (which must match the data type, e.g.
    /// `f32` for `float32`, `u8` for `uint8`).
    pub fn read<T: ElementOwned>(&self, ranges: &[Range<u64>]) -> Result<ArrayD<T>, ReadError> {
        if self.meta.data_type.is_string() {
            // `String` elements: through zarrs' element conversion.
            self.check_ranges(ranges)?;
            self.check_chunk_size()?;
            let arr = self.zarr.with_storage(Arc::new(RefStore::new(
                self.reader.shared.clone(),
                &self.path,
                Arc::default(),
            )));
            let values = arr
                .retrieve_array_subset::<Vec<T>>(&ArraySubset::new_with_ranges(ranges))
                .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))?;
            let shape: Vec<usize> = ranges.iter().map(|r| (r.end - r.start) as usize).collect();
            return ArrayD::from_shape_vec(shape, values)
                .map_err(|e| ReadError::array(&self.path, e));
        }
        let raw = self.read_raw(ranges)?;
        let values = T::from_array_bytes(self.zarr.data_type(), ArrayBytes::new_flen(raw.bytes))
            .map_err(|e| ReadError::array(&self.path, e))?;
        let shape: Vec<usize> = raw.shape.iter().map(|&d| d as usize).collect();
        ArrayD::from_shape_vec(shape, values).map_err(|e| ReadError::array(&self.path, e))
    }

    /// Reads the whole array into an ndarray of `T`.
    pub fn read_all<T: ElementOwned>(&self) -> Result<ArrayD<T>, ReadError> {
        let ranges: Vec<Range<u64>> = self.shape().iter().map(|&n| 0..n).collect();
        self.read(&ranges)
    }

    /// Reads a numpy-like selection (steps and single indices applied).
    pub fn read_selection(&self, sel: &Selection) -> Result<RawArray, ReadError> {
        let r = sel.resolve(&self.shape())?;
        let bbox = self.read_raw(&r.ranges)?;
        Ok(apply_steps(bbox, &r))
    }
}

/// Picks every `step`-th element of a bounding box and drops single-index axes.
fn apply_steps(bbox: RawArray, r: &ResolvedSelection) -> RawArray {
    let out_shape = r.shape();
    if r.steps.iter().all(|&s| s == 1) {
        return RawArray {
            shape: out_shape,
            ..bbox
        };
    }
    let esize = bbox.data_type.size();
    let counts = r.counts();
    let n: u64 = counts.iter().product();
    if bbox.data_type.is_string() {
        let strings = (0..n)
            .map(|k| {
                let idx = unravel(k, &counts);
                let mut lin = 0usize;
                for ((i, s), d) in idx.iter().zip(&r.steps).zip(&bbox.shape) {
                    lin = lin * *d as usize + (*i * *s) as usize;
                }
                bbox.strings[lin].clone()
            })
            .collect();
        return RawArray {
            data_type: bbox.data_type,
            shape: out_shape,
            bytes: Vec::new(),
            strings,
        };
    }
    let mut bytes = Vec::with_capacity(n as usize * esize);
    for k in 0..n {
        let idx = unravel(k, &counts);
        let mut lin = 0usize;
        for ((i, s), d) in idx.iter().zip(&r.steps).zip(&bbox.shape) {
            lin = lin * *d as usize + (*i * *s) as usize;
        }
        bytes.extend_from_slice(&bbox.bytes[lin * esize..(lin + 1) * esize]);
    }
    RawArray {
        data_type: bbox.data_type,
        shape: out_shape,
        bytes,
        strings: Vec::new(),
    }
}
