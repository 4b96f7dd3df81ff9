//! Storage layouts: a dataset's chunk grid and the byte range of every chunk in the file.
//!
//! - **Chunked**: one reference per stored chunk, from one pass of HDF5's chunk iteration
//!   (`H5Dchunk_iter`; asking chunk by chunk walks the whole index every time). A chunk stored
//!   with some filters skipped (a non-zero filter mask) cannot share the array's codec chain:
//!   its values are read through HDF5 and stored re-encoded with the full chain, inline.
//! - **Contiguous**: one range, or virtual chunks along the first axis when asked to split
//!   large uncompressed datasets.
//! - **Compact**: the data lives in the object header; it is copied inline.
//!
//! Every range is checked against the file size: a range past the end means a truncated or
//! corrupt file, an error rather than a reference that fails later.

use hdf5_sys::h5i::hid_t;
use vzarr_core::{ChunkGrid, Codec, CoreError};
pub(crate) use vzarr_hdf5_map::chunks::Chunks;
use vzarr_hdf5_map::chunks::{ChunksError, new_manifest};

use crate::Hdf5Error;
use crate::ctx::Ctx;
use crate::ffi::{self, HADDR_UNDEF};

/// What it takes to re-encode a chunk of a dataset.
pub(crate) struct ChunkEncoding<'a> {
    /// The dataset's file type (reading with it as memory type does no conversion).
    pub(crate) ftype: hid_t,
    /// One fill element in the stored byte order.
    pub(crate) fill: Vec<u8>,
    /// The dataset's codecs.
    pub(crate) codecs: &'a [Codec],
}

fn grid_error(ctx: &Ctx, path: &str, e: CoreError) -> Hdf5Error {
    ctx.object_error(path, e.to_string())
}

/// A dataset's storage that the shared mapping found wrong, as this scanner reports it.
fn chunks_error(ctx: &Ctx, path: &str, e: ChunksError) -> Hdf5Error {
    ctx.object_error(path, e.to_string())
}

/// A chunk stored with some filters skipped.
struct MaskedChunk {
    /// Its grid index.
    index: Vec<u64>,
    /// The filters skipped (bit i: filter i).
    filter_mask: u32,
}

/// The chunks of a chunked dataset; `Ok(Err(reason))` when the dataset cannot be
/// virtualised (left out with the reason), `Err` when the file is unreadable.
pub(crate) fn chunk_refs(
    ctx: &mut Ctx,
    ds: &hdf5::Dataset,
    dcpl: hid_t,
    shape: &[u64],
    enc: &ChunkEncoding,
    path: &str,
) -> Result<Result<Chunks, String>, Hdf5Error> {
    let chunk = ffi::plist::chunk(dcpl, shape.len())
        .filter(|c| !c.contains(&0))
        .ok_or_else(|| ctx.object_error(path, "chunk shape unreadable"))?;
    let grid = ChunkGrid::regular(shape, &chunk).map_err(|e| grid_error(ctx, path, e))?;
    let (mut manifest, sid) =
        new_manifest(&grid, &ctx.url).map_err(|e| chunks_error(ctx, path, e))?;
    let mut bad: Option<String> = None;
    let mut masked: Vec<MaskedChunk> = Vec::new();
    let file_size = ctx.file_size;
    // Chunks per axis, computed once: the callback runs for every chunk (millions), so it
    // computes the C-order position in place, without allocating.
    let counts = grid.grid_shape();
    let visit = ds.chunks_visit(|c| {
        let mut lin: u64 = 0;
        for ((&o, &s), &n) in c.offset.iter().zip(&chunk).zip(&counts) {
            let i = o / s;
            if i >= n {
                return 0; // A chunk past the current extent (the dataset shrank): never read.
            }
            // Cannot overflow: the grid's chunk count fits the manifest.
            lin = lin * n + i;
        }
        if c.addr == HADDR_UNDEF {
            return 0;
        }
        if c.addr.checked_add(c.size).is_none_or(|end| end > file_size) {
            bad = Some(format!(
                "chunk {:?} at byte {} with {} bytes ends past the end of the file ({file_size} \
                 bytes): the file is truncated or corrupt",
                grid.chunk_index(lin),
                c.addr,
                c.size
            ));
            return -1;
        }
        if c.filter_mask != 0 {
            masked.push(MaskedChunk {
                index: grid.chunk_index(lin),
                filter_mask: c.filter_mask,
            });
            return 0;
        }
        if let Err(e) = manifest.set_range(lin as usize, sid, c.addr, c.size) {
            bad = Some(e.to_string());
            return -1;
        }
        0
    });
    if let Some(reason) = bad {
        return Err(ctx.object_error(path, reason));
    }
    visit.map_err(|e| ctx.object_error(path, format!("chunk index unreadable: {e}")))?;
    if !masked.is_empty() {
        // Chunks stored with some filters skipped cannot share the array's codec chain:
        // read their values through HDF5 and store them re-encoded with the full chain.
        let codecs = match vzarr_codec::ByteCodecs::for_encoding(enc.codecs) {
            Ok(c) => c,
            Err(e) => {
                let MaskedChunk { index, filter_mask } = &masked[0];
                return Ok(Err(format!(
                    "{} chunk(s) were stored with some filters skipped (first: chunk {index:?}, \
                     filter mask {filter_mask:#x}) and cannot be re-encoded: {e}",
                    masked.len()
                )));
            }
        };
        for MaskedChunk { index, filter_mask } in &masked {
            let raw = read_chunk_values(ds.id(), &grid, index, enc).map_err(|e| {
                ctx.object_error(
                    path,
                    format!("chunk {index:?} (filter mask {filter_mask:#x}): {e}"),
                )
            })?;
            let encoded = codecs
                .encode(&raw)
                .map_err(|e| ctx.object_error(path, format!("chunk {index:?}: {e}")))?;
            let lin = grid.linear_index(index).expect("index inside the grid") as usize;
            manifest
                .set_inline(lin, encoded)
                .map_err(|e| grid_error(ctx, path, e))?;
        }
    }
    // Chunks longer than the dataset's first axis cut to it where they can be (the shared
    // mapping's rule).
    let chunks = Chunks { grid, manifest }.cut_to_extent(enc.codecs.is_empty(), enc.fill.len());
    Ok(Ok(chunks))
}

/// The raw bytes (stored byte order, full chunk shape, fill value past the array's edge) of
/// the chunk at `idx`, read through HDF5 so that its filters are undone as the library does.
fn read_chunk_values(
    ds: hid_t,
    grid: &ChunkGrid,
    idx: &[u64],
    enc: &ChunkEncoding,
) -> Result<Vec<u8>, String> {
    let origin = grid.chunk_origin(idx);
    let cshape = grid.chunk_shape(idx);
    let valid = grid.chunk_valid_shape(idx);
    let esize = enc.fill.len().max(1);
    let nelem = cshape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
        .filter(|&n| n.saturating_mul(esize) <= 1 << 31)
        .ok_or("chunk too large to re-encode")?;
    let mut buf = enc.fill.repeat(nelem);
    ffi::dataset::read_block(ds, enc.ftype, &cshape, &origin, &valid, &mut buf)?;
    Ok(buf)
}

/// The chunks of a contiguous dataset: one, or virtual chunks along axis 0 of at most
/// `split_contiguous_bytes` each.
pub(crate) fn contiguous_refs(
    ctx: &mut Ctx,
    ds: &hdf5::Dataset,
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Chunks, Hdf5Error> {
    let split = ctx.opts.split_contiguous_bytes;
    vzarr_hdf5_map::chunks::contiguous(&ctx.url, ctx.file_size, ds.offset(), split, shape, esize)
        .map_err(|e| chunks_error(ctx, path, e))
}

/// The one chunk of a compact dataset, copied inline.
pub(crate) fn compact_refs(
    ctx: &mut Ctx,
    id: hid_t,
    ftype: hid_t,
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Chunks, Hdf5Error> {
    vzarr_hdf5_map::chunks::compact(&ctx.url, shape, esize, |nbytes| {
        let mut buf = vec![0u8; nbytes];
        // Read as the file type: the stored bytes, no conversion.
        if ffi::dataset::read_all(id, ftype, &mut buf) {
            Ok(buf)
        } else {
            Err("compact data unreadable".into())
        }
    })
    .map_err(|e| chunks_error(ctx, path, e))
}
