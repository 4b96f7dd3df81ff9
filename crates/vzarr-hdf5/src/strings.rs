//! Variable-length strings: the elements of an HDF5 variable-length string dataset (h5py `str`
//! datasets, netCDF-4 `string` variables) are global heap ids, not text (HDF5 File Format
//! Specification 3.0, section IV.A.2.d "The Datatype Message", class 9, and section III.E
//! "Disk Format: Level 1E - Global Heap"): 4 bytes of length, the address of a global heap
//! collection and the index of the object in it. They cannot be referenced in place, so the
//! scan reads every string and stores the array as inline chunks of the Zarr v3 `string` type
//! with the `vlen-utf8` codec, as zarr-python 3.4 writes variable-length strings.
//!
//! - The chunk grid is the dataset's (one chunk for contiguous and compact datasets); stored
//!   chunks are decoded through the dataset's filter pipeline first (with the filters of a
//!   chunk's filter mask skipped); chunks never written stay missing and read as the fill
//!   value.
//! - Each string is what the HDF5 library hands out: the stored bytes up to the first NUL; an
//!   element of length 0 or with an undefined collection address (a NULL string) is empty, as
//!   h5py and netCDF4-python read it. Text that is not UTF-8 leaves the array out (Zarr's
//!   `string` holds UTF-8).
//! - The fill value is the dataset's (netCDF-4's `_FillValue`), read from the heap like any
//!   element; without one, the empty string. Positions of an edge chunk outside the array
//!   hold the fill value.
//! - Bounded: the inline chunks of one array may take at most
//!   [`crate::ScanOptions::max_string_bytes`] (their `vlen-utf8` bytes: 4 per chunk, 4 per
//!   element, and the text). Each element's length is added before its text is read, so a
//!   length field claiming gigabytes leaves the array out with a warning naming the size and
//!   the limit; nothing is allocated for it. Heap collections are read within the file's size.

use vzarr_codec::{ByteCodecs, vlen_utf8};
use vzarr_core::{ChunkGrid, ChunkManifest, Codec, CoreError};
use vzarr_hdf5_format::{Dataset, FillStatus, Layout, ReferenceKind};
use vzarr_hdf5_map::refusal;

use crate::Hdf5Error;
use crate::ctx::Ctx;
use crate::error::compact_mismatch;
use crate::layout::Chunks;
use crate::references::RefPaths;

/// Bytes of global heap collections prefetched per collection a chunk's elements point into.
const COLLECTION_PREFETCH: u64 = 4096;

/// Why a string array is left out rather than an error.
pub(crate) type Refusal = String;

fn model_error(ctx: &Ctx, path: &str, source: CoreError) -> Hdf5Error {
    Hdf5Error::Model {
        url: ctx.url.clone(),
        object: path.to_string(),
        source: Box::new(source),
    }
}

/// The running size of what an array's strings take against the limit.
pub(crate) struct Budget {
    pub(crate) used: u64,
    pub(crate) limit: u64,
    /// How the bytes counted are held, for the refusal.
    pub(crate) held: &'static str,
}

impl Budget {
    /// A budget of `limit` bytes held as `held` ("vlen-utf8 encoded", ...).
    pub(crate) fn new(limit: u64, held: &'static str) -> Self {
        Budget {
            used: 0,
            limit,
            held,
        }
    }

    /// Adds `n` bytes; the refusal once the limit is passed.
    pub(crate) fn add(&mut self, n: u64) -> Result<(), Refusal> {
        self.used = self.used.saturating_add(n);
        if self.used > self.limit {
            return Err(format!(
                "variable-length strings of at least {} bytes ({}) exceed the limit of {} \
                 bytes for one array (--max-string-bytes): left out",
                self.used, self.held, self.limit
            ));
        }
        Ok(())
    }
}

/// One string as the HDF5 library hands it out: the bytes up to the first NUL, as UTF-8.
pub(crate) fn text_of(bytes: &[u8], what: impl FnOnce() -> String) -> Result<String, Refusal> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    match std::str::from_utf8(&bytes[..end]) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => Err(format!(
            "variable-length string {} is not valid UTF-8 ({e}): Zarr's string type holds \
             UTF-8 text",
            what()
        )),
    }
}

/// What the elements of a string array's stored chunks are.
pub(crate) enum Elements<'a> {
    /// Variable-length strings: global heap ids.
    Strings,
    /// Object references of this kind, read as the paths of their targets (`references`).
    References(ReferenceKind, RefPaths<'a>),
}

/// Reads the strings at the C-order positions `valid` (others are `fill`) of a raw chunk of
/// `n` elements of `es` bytes.
struct ChunkReader<'a, 'c> {
    ctx: &'a Ctx<'c>,
    path: &'a str,
    es: usize,
    elements: Elements<'a>,
}

impl ChunkReader<'_, '_> {
    fn structure_error(&self, source: vzarr_hdf5_format::Error) -> Hdf5Error {
        structure_error(self.ctx, self.path, &self.elements, source)
    }

    /// The strings of the elements of `raw` (nominal shape `shape`, of which the leading
    /// corner `valid` lies inside the array; `origin` is the chunk's first index, for
    /// messages); positions outside `valid` hold `fill`.
    fn strings(
        &mut self,
        raw: &[u8],
        shape: &[u64],
        valid: &[u64],
        origin: &[u64],
        fill: &str,
        budget: &mut Budget,
    ) -> Result<Result<Vec<String>, Refusal>, Hdf5Error> {
        let file = self.ctx.file;
        let n = raw.len() / self.es.max(1);
        // The collections the chunk's elements live in, fetched together.
        // (Object references point at object headers, not heap collections.)
        let mut cols: Vec<u64> = match self.elements {
            Elements::Strings => raw
                .chunks_exact(self.es)
                .filter_map(|e| file.decode_vlen(e).ok())
                .filter(|v| v.length > 0)
                .filter_map(|v| v.id.collection)
                .collect(),
            Elements::References(..) => Vec::new(),
        };
        cols.sort_unstable();
        cols.dedup();
        if cols.len() > 1 {
            let ranges: Vec<std::ops::Range<u64>> = cols
                .iter()
                .map(|&a| {
                    a..a.saturating_add(COLLECTION_PREFETCH)
                        .min(self.ctx.file_size)
                })
                .collect();
            vzarr_hdf5_format::Storage::prefetch(self.ctx.storage, &ranges);
        }
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0u64; shape.len()];
        for i in 0..n {
            let inside = idx.iter().zip(valid).all(|(i, v)| i < v);
            if !inside {
                if let Err(r) = budget.add(4 + fill.len() as u64) {
                    return Ok(Err(r));
                }
                out.push(fill.to_string());
            } else if let Elements::References(kind, paths) = &mut self.elements {
                let e = &raw[i * self.es..(i + 1) * self.es];
                let (ctx, path) = (self.ctx, self.path);
                let got = paths
                    .path(file, *kind, e)
                    .map_err(|source| Hdf5Error::Structure {
                        url: ctx.url.clone(),
                        object: path.to_string(),
                        what: "object reference",
                        source: Box::new(source),
                    })?;
                match got {
                    Ok(p) => {
                        if let Err(r) = budget.add(4 + p.len() as u64) {
                            return Ok(Err(r));
                        }
                        out.push(p);
                    }
                    Err(r) => return Ok(Err(r)),
                }
            } else {
                let e = &raw[i * self.es..(i + 1) * self.es];
                let v = file.decode_vlen(e).map_err(|e| self.structure_error(e))?;
                if let Err(r) = budget.add(4 + u64::from(v.length)) {
                    return Ok(Err(r));
                }
                // Length 0 or an undefined collection: a NULL or empty string.
                let bytes = file.read_vlen(e, 1).map_err(|e| self.structure_error(e))?;
                let at = || {
                    let pos: Vec<u64> = idx.iter().zip(origin).map(|(i, o)| i + o).collect();
                    format!("at {pos:?}")
                };
                match text_of(&bytes, at) {
                    Ok(s) => {
                        // Counted at its stored length; the text stops at its first NUL.
                        budget.used = budget
                            .used
                            .saturating_sub(u64::from(v.length).saturating_sub(s.len() as u64));
                        out.push(s);
                    }
                    Err(r) => return Ok(Err(r)),
                }
            }
            // Next C-order position.
            for k in (0..idx.len()).rev() {
                idx[k] += 1;
                if idx[k] < shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        Ok(Ok(out))
    }
}

fn structure_error(
    ctx: &Ctx,
    path: &str,
    elements: &Elements,
    source: vzarr_hdf5_format::Error,
) -> Hdf5Error {
    Hdf5Error::Structure {
        url: ctx.url.clone(),
        object: path.to_string(),
        what: match elements {
            Elements::Strings => "variable-length string",
            Elements::References(..) => "object reference",
        },
        source: Box::new(source),
    }
}

/// The C-order positions in a chunk of `nominal` elements of the elements of its leading
/// corner of `shape` (at most `nominal` on every axis), in C order.
fn corner(shape: &[u64], nominal: &[u64]) -> Vec<usize> {
    let n: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(n as usize);
    let mut idx = vec![0u64; shape.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(nominal).fold(0u64, |a, (&i, &d)| a * d + i) as usize);
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// The fill value of a variable-length string dataset: the string its fill value message
/// points at when the writer defined one (netCDF-4's `_FillValue`), else the empty string
/// (what the library reads for never-written elements).
pub(crate) fn fill_text(
    ctx: &Ctx,
    ds: &Dataset,
    path: &str,
) -> Result<Result<String, Refusal>, Hdf5Error> {
    if ds.fill_value.status != FillStatus::UserDefined {
        return Ok(Ok(String::new()));
    }
    let Some(value) = ds.fill_value.value.as_deref() else {
        return Ok(Ok(String::new()));
    };
    let es = ds.element_size(ctx.file) as usize;
    if value.len() != es {
        return Err(ctx.object_error(
            path,
            format!(
                "fill value of {} bytes for variable-length elements of {es}",
                value.len()
            ),
        ));
    }
    let structure = |source| Hdf5Error::Structure {
        url: ctx.url.clone(),
        object: path.to_string(),
        what: "fill value",
        source: Box::new(source),
    };
    let v = ctx.file.decode_vlen(value).map_err(structure)?;
    if u64::from(v.length) > ctx.opts.max_string_bytes {
        return Ok(Err(format!(
            "fill value string of {} bytes exceeds the limit of {} bytes for one array \
             (--max-string-bytes): left out",
            v.length, ctx.opts.max_string_bytes
        )));
    }
    let bytes = ctx.file.read_vlen(value, 1).map_err(structure)?;
    Ok(text_of(&bytes, || "of the fill value".to_string()))
}

/// Elements in a chunk of `shape`, if their vlen-utf8 lengths (4 bytes each) stay within
/// `limit`.
pub(crate) fn elements(shape: &[u64], limit: u64) -> Option<usize> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .filter(|&n| n.saturating_mul(4) <= limit)
        .and_then(|n| usize::try_from(n).ok())
}

pub(crate) fn too_many(n_desc: String, limit: u64) -> Refusal {
    format!(
        "variable-length strings: {n_desc} take more than the limit of {limit} bytes for one \
         array (--max-string-bytes) even if empty: left out"
    )
}

/// A stored chunk of a chunked string dataset.
struct Stored {
    index: Vec<u64>,
    address: u64,
    size: u64,
    filter_mask: u32,
}

/// The chunk grid and inline chunks of the variable-length string dataset `ds` of shape
/// `shape` whose codecs (its filters, in pipeline order) are `codecs`; `Ok(Err(reason))` when
/// it is left out.
pub(crate) fn string_chunks(
    ctx: &Ctx,
    ds: &Dataset,
    shape: &[u64],
    codecs: &[Codec],
    fill: &str,
    kind: Elements<'_>,
    path: &str,
) -> Result<Result<Chunks, Refusal>, Hdf5Error> {
    let limit = ctx.opts.max_string_bytes;
    let es = ds.element_size(ctx.file) as usize;
    let mut reader = ChunkReader {
        ctx,
        path,
        es,
        elements: kind,
    };
    let mut budget = Budget::new(limit, "vlen-utf8 encoded");
    let whole: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    let chunk_shape = match &ds.layout.layout {
        Layout::Chunked(ch) => ch.chunk_dims.clone(),
        _ => whole.clone(),
    };
    if chunk_shape.len() != shape.len() || chunk_shape.contains(&0) {
        return Err(ctx.object_error(path, "chunk shape unreadable"));
    }
    // The chunks as stored, and as written: inline chunks can be cut, so a chunk longer than
    // the array (a few strings on an unlimited dimension) is as long as the array.
    let raw_grid =
        ChunkGrid::regular(shape, &chunk_shape).map_err(|e| model_error(ctx, path, e))?;
    let cut: Vec<u64> = chunk_shape
        .iter()
        .zip(&whole)
        .map(|(&c, &s)| c.min(s))
        .collect();
    let grid = ChunkGrid::regular(shape, &cut).map_err(|e| model_error(ctx, path, e))?;
    let n = grid.n_chunks().map_err(|e| model_error(ctx, path, e))?;
    let n = usize::try_from(n).map_err(|_| ctx.object_error(path, "too many chunks"))?;
    let mut manifest = ChunkManifest::new_missing(n);
    let Some(per_chunk) = elements(&chunk_shape, limit) else {
        return Ok(Err(too_many(
            format!("chunks of {chunk_shape:?} elements"),
            limit,
        )));
    };
    // Every stored chunk costs at least 4 bytes plus 4 per element.
    let chunk_floor = 4 + 4 * per_chunk as u64;
    let put = |manifest: &mut ChunkManifest, index: &[u64], strings: Vec<String>| {
        let lin = grid
            .linear_index(index)
            .ok_or_else(|| ctx.object_error(path, "chunk index outside the grid"))?;
        let bytes =
            vlen_utf8::encode(&strings).map_err(|e| ctx.object_error(path, e.to_string()))?;
        manifest
            .set_inline(lin as usize, bytes)
            .map_err(|e| model_error(ctx, path, e))
    };
    let whole_chunk = !matches!(ds.layout.layout, Layout::Chunked(_));
    let done = each_raw_chunk(
        ctx,
        ds,
        &raw_grid,
        codecs,
        es,
        path,
        chunk_floor,
        &mut budget,
        |index, raw, budget| {
            if let Err(r) = budget.add(4) {
                return Ok(Err(r));
            }
            let origin = grid.chunk_origin(index);
            let (nominal, valid) = if whole_chunk {
                (shape.to_vec(), shape.to_vec())
            } else {
                (raw_grid.chunk_shape(index), grid.chunk_valid_shape(index))
            };
            match reader.strings(raw, &nominal, &valid, &origin, fill, budget)? {
                Ok(mut strings) => {
                    let written = grid.chunk_shape(index);
                    if !whole_chunk && written != nominal {
                        // The written chunk's elements: the leading corner of the stored one.
                        let mut all: Vec<Option<String>> =
                            std::mem::take(&mut strings).into_iter().map(Some).collect();
                        strings = corner(&written, &nominal)
                            .into_iter()
                            .map(|p| all[p].take().unwrap_or_default())
                            .collect();
                    }
                    put(&mut manifest, index, strings).map(Ok)
                }
                Err(r) => Ok(Err(r)),
            }
        },
    )?;
    if let Err(r) = done {
        return Ok(Err(r));
    }
    Ok(Ok(Chunks { grid, manifest }))
}

/// Calls `each(index, raw, budget)` for every stored chunk of the dataset `ds`, in the order
/// of its chunk index: `raw` its elements of `es` bytes in C order at the full chunk shape of
/// `grid` (the dataset's chunking), decoded through `codecs` (its filters) with the filters
/// of the chunk's mask skipped. A contiguous or compact dataset is one chunk of the whole
/// array at index 0 (none when never written or empty). `floor` bytes of `budget` are counted
/// per stored chunk while the index is read (a refusal once past the limit), and given back
/// before the chunks are read. `Ok(Err(reason))`: the dataset is left out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn each_raw_chunk(
    ctx: &Ctx,
    ds: &Dataset,
    grid: &ChunkGrid,
    codecs: &[Codec],
    es: usize,
    path: &str,
    floor: u64,
    budget: &mut Budget,
    mut each: impl FnMut(&[u64], &[u8], &mut Budget) -> Result<Result<(), Refusal>, Hdf5Error>,
) -> Result<Result<(), Refusal>, Hdf5Error> {
    let limit = budget.limit;
    let shape = grid.shape();
    let nelem: u64 = shape.iter().product();
    let zero = vec![0; shape.len()];
    match &ds.layout.layout {
        Layout::Chunked(ch) => {
            let per_chunk = ch
                .chunk_dims
                .iter()
                .take(shape.len())
                .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
                .ok_or_else(|| ctx.object_error(path, "chunk too large"))?;
            let raw_len = per_chunk
                .checked_mul(es)
                .ok_or_else(|| ctx.object_error(path, "chunk too large"))?;
            let mut stored: Vec<Stored> = Vec::new();
            let counts = grid.grid_shape();
            let file_size = ctx.file_size;
            let mut refused: Option<Refusal> = None;
            let visit = ctx.file.visit_chunks::<VisitStop>(ds, |c| {
                if c.scaled.iter().zip(&counts).any(|(i, n)| i >= n) {
                    return Ok(()); // Past the current extent: never read.
                }
                if c.address.checked_add(c.size).is_none_or(|e| e > file_size) {
                    return Err(VisitStop::Scan(ctx.object_error(
                        path,
                        format!(
                            "chunk {:?} at byte {} with {} bytes ends past the end of the \
                             file ({file_size} bytes): the file is truncated or corrupt",
                            c.scaled, c.address, c.size
                        ),
                    )));
                }
                if let Err(r) = budget.add(floor) {
                    refused = Some(r);
                    return Err(VisitStop::Refused);
                }
                stored.push(Stored {
                    index: c.scaled.to_vec(),
                    address: c.address,
                    size: c.size,
                    filter_mask: c.filter_mask,
                });
                Ok(())
            });
            match visit {
                Ok(()) => {}
                Err(VisitStop::Refused) => {
                    return Ok(Err(
                        refused.unwrap_or_else(|| too_many("chunks".into(), limit))
                    ));
                }
                Err(VisitStop::Scan(e)) => return Err(e),
                Err(VisitStop::Index(source)) => {
                    return Err(Hdf5Error::Structure {
                        url: ctx.url.clone(),
                        object: path.to_string(),
                        what: "chunk index",
                        source: Box::new(source),
                    });
                }
            }
            // The floors are counted; what each chunk holds is added by `each`.
            budget.used = budget.used.saturating_sub(floor * stored.len() as u64);
            let chain = match ByteCodecs::new(codecs) {
                Ok(c) => c,
                Err(e) => {
                    return Ok(Err(format!(
                        "variable-length strings: the filters cannot be decoded here: {e}"
                    )));
                }
            };
            for s in &stored {
                let bytes = ctx
                    .storage
                    .read_range(s.address..s.address + s.size)
                    .map_err(Hdf5Error::chunk_bytes(&ctx.url, path, &s.index))?;
                let raw = if chain.is_empty() && s.filter_mask == 0 {
                    if bytes.len() != raw_len {
                        return Err(ctx.object_error(
                            path,
                            format!(
                                "chunk {:?} has {} bytes, {raw_len} expected",
                                s.index,
                                bytes.len()
                            ),
                        ));
                    }
                    bytes.to_vec()
                } else {
                    chain
                        .decode_skipping(&bytes, raw_len, s.filter_mask)
                        .map_err(Hdf5Error::chunk(&ctx.url, path, &s.index, s.filter_mask))?
                };
                if let Err(r) = each(&s.index, &raw, budget)? {
                    return Ok(Err(r));
                }
            }
        }
        Layout::Contiguous { address, .. } => {
            if !codecs.is_empty() {
                return Ok(Err(refusal::CONTIGUOUS_WITH_FILTERS.into()));
            }
            // Never written (no address) or empty: every element reads as the fill value.
            let Some(addr) = address.filter(|_| nelem > 0) else {
                return Ok(Ok(()));
            };
            let len = nelem
                .checked_mul(es as u64)
                .ok_or_else(|| ctx.object_error(path, "dataset too large"))?;
            if addr.checked_add(len).is_none_or(|e| e > ctx.file_size) {
                return Err(ctx.object_error(
                    path,
                    format!(
                        "contiguous data at byte {addr} with {len} bytes ends past the end of \
                         the file ({} bytes): the file is truncated or corrupt",
                        ctx.file_size
                    ),
                ));
            }
            let raw = ctx
                .storage
                .read_range(addr..addr + len)
                .map_err(Hdf5Error::chunk_bytes(&ctx.url, path, &zero))?;
            return each(&zero, &raw, budget);
        }
        Layout::Compact { data } => {
            if nelem == 0 {
                return Ok(Ok(()));
            }
            let raw_len = nelem.saturating_mul(es as u64);
            if data.len() as u64 != raw_len {
                return Err(ctx.object_error(path, compact_mismatch(data.len(), raw_len)));
            }
            return each(&zero, data, budget);
        }
        Layout::Virtual { .. } => {
            return Ok(Err(refusal::VIRTUAL_DATASET.into()));
        }
    }
    Ok(Ok(()))
}

/// Why the visit of a string dataset's chunk index stopped.
enum VisitStop {
    Index(vzarr_hdf5_format::Error),
    Scan(Hdf5Error),
    Refused,
}

impl From<vzarr_hdf5_format::Error> for VisitStop {
    fn from(e: vzarr_hdf5_format::Error) -> Self {
        VisitStop::Index(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stops_at_the_first_nul_and_must_be_utf8() {
        assert_eq!(text_of(b"ab\0cd", String::new).unwrap(), "ab");
        assert_eq!(text_of("wörld".as_bytes(), String::new).unwrap(), "wörld");
        assert_eq!(text_of(b"", String::new).unwrap(), "");
        let e = text_of(b"caf\xe9", || "at [3]".into()).unwrap_err();
        assert!(e.contains("at [3]") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn the_budget_names_size_and_limit() {
        let mut b = Budget::new(10, "vlen-utf8 encoded");
        b.add(6).unwrap();
        let e = b.add(1 << 40).unwrap_err();
        assert!(
            e.contains(&format!("{}", 6 + (1u64 << 40))) && e.contains("limit of 10"),
            "{e}"
        );
        assert_eq!(elements(&[2, 3], 24), Some(6));
        assert_eq!(elements(&[2, 3], 23), None);
        assert_eq!(elements(&[u64::MAX, 2], u64::MAX), None);
        assert_eq!(elements(&[], 4), Some(1));
    }

    #[test]
    fn the_corner_of_a_longer_chunk() {
        assert_eq!(corner(&[2, 2], &[4, 3]), vec![0, 1, 3, 4]);
        assert_eq!(corner(&[3], &[1024]), vec![0, 1, 2]);
        assert_eq!(corner(&[], &[]), vec![0]);
    }
}
