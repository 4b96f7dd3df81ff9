//! Reading a region of a dataset's values straight from the file, without a manifest: the
//! dataset is found by its path, its chunk index walked ([`File::visit_chunks`]), its chunks
//! read and decoded with the project's codecs ([`vzarr_codec::ByteCodecs`], undoing only the
//! filters each chunk went through), contiguous and compact data read in place, and the
//! values put together in C order, in native byte order.
//!
//! This is the reader `vzarr verify` compares a manifest with when no C library is linked:
//! it shares the scanner's reading of types, filters and fill values, but not its
//! references, so a reference pointing at other bytes than the chunk's (shifted, swapped,
//! stale, tampered with) reads as different values here.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use vzarr_codec::{ByteCodecs, vlen_utf8};
use vzarr_core::{DataType, Endian};
use vzarr_hdf5_format::{Dataset, DataspaceKind, File, FillStatus, Layout, ObjectKind};
use vzarr_source::ByteSource;

use crate::error::compact_mismatch;
use crate::fill::dataset_fill;
use crate::storage::SourceStorage;
use crate::strings::text_of;
use crate::types::dataset_type;
use crate::walk::element_fill;
use crate::{Hdf5Error, ScanOptions, filters};

/// Most bytes of values one [`ValueReader::read`] puts together (8 GiB, as the manifest
/// reader's largest chunk).
pub const MAX_REGION_BYTES: u64 = 8 << 30;

/// Datasets whose layout and chunk index a reader keeps at once.
const KEEP_DATASETS: usize = 16;

/// Values of a region of a dataset.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RegionValues {
    /// The element type, as the scanner maps the dataset's HDF5 type.
    pub data_type: DataType,
    /// The elements in C order and native byte order; for [`DataType::String`], the strings
    /// encoded as one `vlen-utf8` chunk ([`vzarr_codec::vlen_utf8`]).
    pub bytes: Vec<u8>,
}

/// A stored chunk: where it is and which filters it skipped.
#[derive(Clone, Copy)]
struct StoredChunk {
    address: u64,
    size: u64,
    filter_mask: u32,
}

/// Where a dataset's elements are.
enum Place {
    /// Chunks of `chunk` elements per axis; the stored ones by their C-order position in the
    /// grid, sorted.
    Chunked {
        chunk: Vec<u64>,
        codecs: ByteCodecs,
        stored: Vec<(u64, StoredChunk)>,
    },
    /// One extent at this address (`None`: never written).
    Contiguous(Option<u64>),
    /// In the object header.
    Compact(Bytes),
}

/// What unwritten elements read as.
enum Fill {
    /// One element in the stored byte order.
    Bytes(Vec<u8>),
    /// The fill string of a variable-length string dataset.
    Text(String),
}

/// A dataset ready to read.
struct Prepared {
    data_type: DataType,
    endian: Endian,
    /// Shape, an array datatype's dimensions included.
    shape: Vec<u64>,
    /// Bytes of one stored element (a global heap id for variable-length strings).
    stored_size: usize,
    fill: Fill,
    place: Place,
}

/// Reads regions of datasets of one HDF5 file.
pub struct ValueReader {
    url: String,
    src: Arc<dyn ByteSource>,
    storage: SourceStorage,
    file: File,
    /// Prepared datasets, most recently used last.
    prepared: Vec<(String, Arc<Prepared>)>,
}

impl std::fmt::Debug for ValueReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueReader")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl ValueReader {
    /// Opens the HDF5 file of `src` (its metadata read through a block cache, as a scan reads
    /// it).
    pub fn open(src: Arc<dyn ByteSource>) -> Result<Self, Hdf5Error> {
        let url = src.url().to_string();
        let opts = ScanOptions::for_url(&url);
        let storage = SourceStorage::for_scan(src.clone(), &opts, None);
        storage
            .read_head(opts.head_bytes)
            .map_err(Hdf5Error::source(&url))?;
        let file = File::open(Arc::new(storage.clone())).map_err(Hdf5Error::open(&url))?;
        Ok(ValueReader {
            url,
            src,
            storage,
            file,
            prepared: Vec::new(),
        })
    }

    /// The source's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The values of the region `start` + `count` of the dataset at `path` (`/`-separated,
    /// from the root group; an array datatype's dimensions are trailing axes, as in the
    /// scanner's arrays).
    pub fn read(
        &mut self,
        path: &str,
        start: &[u64],
        count: &[u64],
    ) -> Result<RegionValues, Hdf5Error> {
        let ds = self.prepared(path)?;
        self.read_prepared(&ds, path, start, count)
    }

    fn error(&self, path: &str, reason: impl Into<String>) -> Hdf5Error {
        Hdf5Error::Object {
            url: self.url.clone(),
            object: path.to_string(),
            reason: reason.into(),
        }
    }

    fn structure(
        &self,
        path: &str,
        what: &'static str,
    ) -> impl Fn(vzarr_hdf5_format::Error) -> Hdf5Error {
        let (url, object) = (self.url.clone(), path.to_string());
        move |source| Hdf5Error::Structure {
            url: url.clone(),
            object: object.clone(),
            what,
            source: Box::new(source),
        }
    }

    /// The dataset at `path`, prepared once and kept for the next reads.
    fn prepared(&mut self, path: &str) -> Result<Arc<Prepared>, Hdf5Error> {
        if let Some(i) = self.prepared.iter().position(|(p, _)| p == path) {
            let item = self.prepared.remove(i);
            let ds = item.1.clone();
            self.prepared.push(item);
            return Ok(ds);
        }
        let ds = Arc::new(self.prepare(path)?);
        if self.prepared.len() >= KEEP_DATASETS {
            self.prepared.remove(0);
        }
        self.prepared.push((path.to_string(), ds.clone()));
        Ok(ds)
    }

    fn prepare(&self, path: &str) -> Result<Prepared, Hdf5Error> {
        let file = &self.file;
        let full = format!("/{}", path.trim_start_matches('/'));
        let addr = file
            .resolve_path(&full)
            .map_err(self.structure(path, "path"))?;
        let oh = file
            .object_header(addr)
            .map_err(self.structure(path, "object header"))?;
        if file.object_kind(&oh) != ObjectKind::Dataset {
            return Err(self.error(path, "not a dataset"));
        }
        let ds = file.dataset(&oh).map_err(self.structure(path, "dataset"))?;
        let mapped = dataset_type(&ds.datatype).map_err(|reason| self.error(path, reason))?;
        let mut shape = match ds.dataspace.kind {
            DataspaceKind::Null => return Err(self.error(path, "null dataspace: no values")),
            DataspaceKind::Scalar => Vec::new(),
            DataspaceKind::Simple => ds.dataspace.dims.clone(),
        };
        let rank = shape.len();
        shape.extend_from_slice(&mapped.extra_dims);
        if ds.external_files.is_some_and(|n| n > 0) {
            return Err(self.error(path, "raw data in external files"));
        }
        let strings = mapped.data_type.is_string();
        let stored_size = if strings {
            ds.element_size(file) as usize
        } else {
            mapped.data_type.size()
        };
        let stored_type = if strings {
            DataType::FixedBytes(stored_size)
        } else {
            mapped.data_type.clone()
        };
        let fill = if strings {
            Fill::Text(self.fill_text(&ds, path)?)
        } else {
            let msg = element_fill(&ds.fill_value, &mapped).map_err(|r| self.error(path, r))?;
            let fill = dataset_fill(&msg, mapped.data_type.clone(), mapped.endian)
                .map_err(|r| self.error(path, r))?;
            Fill::Bytes(fill.bytes_in(mapped.data_type.clone(), mapped.endian))
        };
        let codecs =
            filters::codecs(ds.filters.as_ref(), stored_type).map_err(|r| self.error(path, r))?;
        let place = match &ds.layout.layout {
            Layout::Chunked(ch) => {
                let mut chunk = ch.chunk_dims.clone();
                if chunk.len() == rank {
                    chunk.extend_from_slice(&mapped.extra_dims);
                }
                if chunk.len() != shape.len() || chunk.contains(&0) {
                    return Err(self.error(path, "chunk shape unreadable"));
                }
                let codecs = ByteCodecs::new(&codecs)
                    .map_err(|e| self.error(path, format!("filters: {e}")))?;
                let stored = self.chunk_index(&ds, &shape, &chunk, path)?;
                Place::Chunked {
                    chunk,
                    codecs,
                    stored,
                }
            }
            Layout::Contiguous { address, .. } => {
                if !codecs.is_empty() {
                    return Err(self.error(path, "contiguous dataset with filters"));
                }
                Place::Contiguous(*address)
            }
            Layout::Compact { data } => Place::Compact(data.clone()),
            Layout::Virtual { .. } => {
                return Err(self.error(path, "virtual dataset (VDS): its data lives elsewhere"));
            }
        };
        Ok(Prepared {
            data_type: mapped.data_type,
            endian: mapped.endian,
            shape,
            stored_size,
            fill,
            place,
        })
    }

    /// The stored chunks of a chunked dataset inside its extent, by C-order grid position.
    fn chunk_index(
        &self,
        ds: &Dataset,
        shape: &[u64],
        chunk: &[u64],
        path: &str,
    ) -> Result<Vec<(u64, StoredChunk)>, Hdf5Error> {
        let counts: Vec<u64> = shape
            .iter()
            .zip(chunk)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect();
        // Positions in the grid below fit in 64 bits.
        if counts
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n))
            .is_none()
        {
            return Err(self.error(path, "chunk grid too large"));
        }
        let size = self.file.size();
        let mut stored = Vec::new();
        let mut past_end: Option<String> = None;
        self.file
            .visit_chunks::<vzarr_hdf5_format::Error>(ds, |c| {
                let mut lin: u64 = 0;
                // Axes past the record's (an array datatype's) hold one chunk.
                for (k, &n) in counts.iter().enumerate() {
                    let i = c.scaled.get(k).copied().unwrap_or(0);
                    if i >= n {
                        return Ok(()); // Past the current extent: never read.
                    }
                    lin = lin * n + i;
                }
                if c.address.checked_add(c.size).is_none_or(|e| e > size) && past_end.is_none() {
                    past_end = Some(format!(
                        "chunk {:?} at byte {} with {} bytes ends past the end of the file \
                         ({size} bytes): the file is truncated or corrupt",
                        c.scaled, c.address, c.size
                    ));
                }
                stored.push((
                    lin,
                    StoredChunk {
                        address: c.address,
                        size: c.size,
                        filter_mask: c.filter_mask,
                    },
                ));
                Ok(())
            })
            .map_err(self.structure(path, "chunk index"))?;
        if let Some(reason) = past_end {
            return Err(self.error(path, reason));
        }
        stored.sort_unstable_by_key(|s| s.0);
        if stored.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(self.error(path, "chunk index lists a chunk twice"));
        }
        Ok(stored)
    }

    /// The fill string of a variable-length string dataset (empty unless the writer set one).
    fn fill_text(&self, ds: &Dataset, path: &str) -> Result<String, Hdf5Error> {
        if ds.fill_value.status != FillStatus::UserDefined {
            return Ok(String::new());
        }
        let Some(value) = ds.fill_value.value.as_deref() else {
            return Ok(String::new());
        };
        let bytes = self
            .file
            .read_vlen(value, 1)
            .map_err(self.structure(path, "fill value"))?;
        text_of(&bytes, || "of the fill value".into()).map_err(|r| self.error(path, r))
    }

    fn read_prepared(
        &self,
        ds: &Prepared,
        path: &str,
        start: &[u64],
        count: &[u64],
    ) -> Result<RegionValues, Hdf5Error> {
        if start.len() != ds.shape.len() || count.len() != ds.shape.len() {
            return Err(self.error(
                path,
                format!(
                    "a region of {} dimensions asked of a dataset of {}",
                    count.len(),
                    ds.shape.len()
                ),
            ));
        }
        for (k, ((&s, &c), &d)) in start.iter().zip(count).zip(&ds.shape).enumerate() {
            if s.checked_add(c).is_none_or(|e| e > d) {
                return Err(self.error(
                    path,
                    format!(
                        "axis {k}: region {s}..{} is outside the dataset's length {d}",
                        s.saturating_add(c)
                    ),
                ));
            }
        }
        let es = ds.stored_size;
        let n = count
            .iter()
            .try_fold(1u64, |a, &c| a.checked_mul(c))
            .filter(|&n| n.saturating_mul(es.max(1) as u64) <= MAX_REGION_BYTES)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                self.error(
                    path,
                    format!("region {count:?} holds more than {MAX_REGION_BYTES} bytes"),
                )
            })?;
        // The stored elements of the region; `written[i]` whether element i was read (else
        // it is the fill value).
        let mut raw = vec![0u8; n * es];
        let mut written = vec![false; n];
        if n > 0 {
            self.gather(ds, path, start, count, &mut raw, &mut written)?;
        }
        let bytes = match &ds.fill {
            Fill::Text(fill) => {
                let mut strings = Vec::with_capacity(n);
                for (i, w) in written.iter().enumerate() {
                    if !w {
                        strings.push(fill.clone());
                        continue;
                    }
                    let e = &raw[i * es..(i + 1) * es];
                    let b = self
                        .file
                        .read_vlen(e, 1)
                        .map_err(self.structure(path, "variable-length string"))?;
                    let s = text_of(&b, || format!("{i} of the region"))
                        .map_err(|r| self.error(path, r))?;
                    strings.push(s);
                }
                vlen_utf8::encode(&strings).map_err(|e| self.error(path, e.to_string()))?
            }
            Fill::Bytes(fill) => {
                for (i, w) in written.iter().enumerate() {
                    if !w {
                        raw[i * es..(i + 1) * es].copy_from_slice(fill);
                    }
                }
                let big = ds.endian == Endian::Big;
                if big != cfg!(target_endian = "big") {
                    ds.data_type.swap_elements(&mut raw);
                }
                raw
            }
        };
        Ok(RegionValues {
            data_type: ds.data_type.clone(),
            bytes,
        })
    }

    /// Copies the stored elements of the region into `raw` (stored byte order), marking them
    /// in `written`.
    fn gather(
        &self,
        ds: &Prepared,
        path: &str,
        start: &[u64],
        count: &[u64],
        raw: &mut [u8],
        written: &mut [bool],
    ) -> Result<(), Hdf5Error> {
        let es = ds.stored_size;
        let region = Region { start, count };
        match &ds.place {
            Place::Compact(data) => {
                let nbytes = ds
                    .shape
                    .iter()
                    .try_fold(es as u64, |a, &d| a.checked_mul(d))
                    .unwrap_or(u64::MAX);
                if data.len() as u64 != nbytes {
                    return Err(self.error(path, compact_mismatch(data.len(), nbytes)));
                }
                let whole = Region {
                    start: &vec![0; ds.shape.len()],
                    count: &ds.shape,
                };
                copy_box(data, &whole, &region, es, raw, written);
            }
            Place::Contiguous(None) => {}
            Place::Contiguous(Some(addr)) => {
                let runs = contiguous_runs(&ds.shape, start, count, es as u64, *addr)
                    .ok_or_else(|| self.error(path, "contiguous data: offsets overflow"))?;
                let end = runs.last().map_or(0, |r| r.end);
                if end > self.file.size() {
                    return Err(self.error(
                        path,
                        format!(
                            "contiguous data ends past the end of the file ({} bytes): the \
                             file is truncated or corrupt",
                            self.file.size()
                        ),
                    ));
                }
                let got = self
                    .src
                    .read_ranges(&runs)
                    .map_err(Hdf5Error::source(&self.url))?;
                let mut at = 0;
                for b in got {
                    raw[at..at + b.len()].copy_from_slice(&b);
                    at += b.len();
                }
                if at != raw.len() {
                    return Err(self.error(path, "contiguous data read short"));
                }
                written.fill(true);
            }
            Place::Chunked {
                chunk,
                codecs,
                stored,
            } => {
                let counts: Vec<u64> = ds
                    .shape
                    .iter()
                    .zip(chunk)
                    .map(|(&d, &c)| d.div_ceil(c))
                    .collect();
                let nominal = chunk
                    .iter()
                    .try_fold(1u64, |a, &c| a.checked_mul(c))
                    .unwrap_or(u64::MAX);
                let raw_len = usize::try_from(nominal.saturating_mul(es as u64))
                    .ok()
                    .filter(|&l| l as u64 <= MAX_REGION_BYTES)
                    .ok_or_else(|| self.error(path, "chunks too large to decode"))?;
                let lo: Vec<u64> = start.iter().zip(chunk).map(|(&s, &c)| s / c).collect();
                let hi: Vec<u64> = start
                    .iter()
                    .zip(count)
                    .zip(chunk)
                    .map(|((&s, &n), &c)| (s + n - 1) / c + 1)
                    .collect();
                let mut idx = lo.clone();
                loop {
                    let lin = idx
                        .iter()
                        .zip(&counts)
                        .try_fold(0u64, |a, (&i, &n)| a.checked_mul(n)?.checked_add(i))
                        .ok_or_else(|| self.error(path, "chunk grid too large"))?;
                    if let Ok(k) = stored.binary_search_by_key(&lin, |s| s.0) {
                        let c = stored[k].1;
                        let decoded = self.chunk(c, codecs, raw_len, &idx, path)?;
                        let origin: Vec<u64> =
                            idx.iter().zip(chunk).map(|(&i, &c)| i * c).collect();
                        let whole = Region {
                            start: &origin,
                            count: chunk,
                        };
                        copy_box(&decoded, &whole, &region, es, raw, written);
                    }
                    // Next chunk of the box, C order.
                    let mut axis = idx.len();
                    loop {
                        if axis == 0 {
                            return Ok(());
                        }
                        axis -= 1;
                        idx[axis] += 1;
                        if idx[axis] < hi[axis] {
                            break;
                        }
                        idx[axis] = lo[axis];
                    }
                }
            }
        }
        Ok(())
    }

    /// One stored chunk, decoded to its `raw_len` bytes.
    fn chunk(
        &self,
        c: StoredChunk,
        codecs: &ByteCodecs,
        raw_len: usize,
        index: &[u64],
        path: &str,
    ) -> Result<Vec<u8>, Hdf5Error> {
        let bytes = self
            .storage
            .read_range(c.address..c.address + c.size)
            .map_err(Hdf5Error::chunk_bytes(&self.url, path, index))?;
        codecs
            .decode_skipping(&bytes, raw_len, c.filter_mask)
            .map_err(Hdf5Error::chunk(&self.url, path, index, c.filter_mask))
    }
}

/// A box of an array: its first index and extent per axis.
struct Region<'a> {
    start: &'a [u64],
    count: &'a [u64],
}

/// Copies the part of `src` (the elements of box `from`, C order, `es` bytes each) that lies
/// inside box `to` into `dst` (the elements of `to`), marking them in `written`.
fn copy_box(
    src: &[u8],
    from: &Region,
    to: &Region,
    es: usize,
    dst: &mut [u8],
    written: &mut [bool],
) {
    let rank = to.count.len();
    // The intersection, per axis.
    let mut lo = Vec::with_capacity(rank);
    let mut hi = Vec::with_capacity(rank);
    for k in 0..rank {
        let a = from.start[k].max(to.start[k]);
        let b = (from.start[k] + from.count[k]).min(to.start[k] + to.count[k]);
        if a >= b {
            return;
        }
        lo.push(a);
        hi.push(b);
    }
    if rank == 0 {
        if src.len() >= es && dst.len() >= es {
            dst[..es].copy_from_slice(&src[..es]);
            written[0] = true;
        }
        return;
    }
    let offset = |r: &Region, pos: &[u64]| -> usize {
        pos.iter()
            .zip(r.start)
            .zip(r.count)
            .fold(0usize, |a, ((&p, &s), &c)| {
                a * c as usize + (p - s) as usize
            })
    };
    let row = (hi[rank - 1] - lo[rank - 1]) as usize;
    let mut pos = lo.clone();
    loop {
        let s = offset(from, &pos);
        let d = offset(to, &pos);
        if (s + row) * es <= src.len() {
            dst[d * es..(d + row) * es].copy_from_slice(&src[s * es..(s + row) * es]);
            written[d..d + row].fill(true);
        }
        // Next row, C order over the outer axes.
        let mut axis = rank - 1;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            pos[axis] += 1;
            if pos[axis] < hi[axis] {
                break;
            }
            pos[axis] = lo[axis];
        }
    }
}

/// The byte ranges of the region `start` + `count` of a C-order array of `shape` stored
/// contiguously at `addr`, adjacent rows merged, in order; `None` if an offset overflows.
fn contiguous_runs(
    shape: &[u64],
    start: &[u64],
    count: &[u64],
    es: u64,
    addr: u64,
) -> Option<Vec<Range<u64>>> {
    let rank = shape.len();
    if rank == 0 {
        let one = addr..addr.checked_add(es)?;
        return Some(std::iter::once(one).collect());
    }
    let row = count[rank - 1].checked_mul(es)?;
    let mut out: Vec<Range<u64>> = Vec::new();
    let mut pos = start.to_vec();
    loop {
        let lin = pos
            .iter()
            .zip(shape)
            .try_fold(0u64, |a, (&p, &d)| a.checked_mul(d)?.checked_add(p))?;
        let at = lin.checked_mul(es)?.checked_add(addr)?;
        let end = at.checked_add(row)?;
        match out.last_mut() {
            Some(last) if last.end == at => last.end = end,
            _ => out.push(at..end),
        }
        let mut axis = rank - 1;
        loop {
            if axis == 0 {
                return Some(out);
            }
            axis -= 1;
            pos[axis] += 1;
            if pos[axis] < start[axis] + count[axis] {
                break;
            }
            pos[axis] = start[axis];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_copy_their_intersection() {
        // A 4x4 source box at (2, 2) into a region 0..5 x 0..5.
        let src: Vec<u8> = (0..16).collect();
        let mut dst = vec![99u8; 25];
        let mut written = vec![false; 25];
        let from = Region {
            start: &[2, 2],
            count: &[4, 4],
        };
        let to = Region {
            start: &[0, 0],
            count: &[5, 5],
        };
        copy_box(&src, &from, &to, 1, &mut dst, &mut written);
        assert_eq!(&dst[10..15], &[99, 99, 0, 1, 2]);
        assert_eq!(&dst[15..20], &[99, 99, 4, 5, 6]);
        assert_eq!(&dst[20..25], &[99, 99, 8, 9, 10]);
        assert_eq!(written.iter().filter(|&&w| w).count(), 9);
        // No overlap: nothing.
        let mut w2 = vec![false; 25];
        let far = Region {
            start: &[10, 10],
            count: &[2, 2],
        };
        copy_box(&src, &far, &to, 1, &mut dst, &mut w2);
        assert!(w2.iter().all(|w| !w));
    }

    #[test]
    fn contiguous_runs_merge_adjacent_rows() {
        // Whole rows of a 4x3 array of 2-byte elements: one run.
        let one = |r: Range<u64>| Some(std::iter::once(r).collect::<Vec<_>>());
        assert_eq!(
            contiguous_runs(&[4, 3], &[1, 0], &[2, 3], 2, 100),
            one(106..118)
        );
        // Part rows: one run per row.
        assert_eq!(
            contiguous_runs(&[4, 3], &[1, 1], &[2, 1], 2, 100),
            Some(vec![108..110, 114..116])
        );
        assert_eq!(contiguous_runs(&[], &[], &[], 8, 5), one(5..13));
        assert_eq!(
            contiguous_runs(&[u64::MAX, 2], &[u64::MAX - 1, 0], &[1, 2], 8, 0),
            None
        );
    }
}
