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
use vzarr_core::{ChunkGrid, ChunkManifest, Codec, CoreError, DimGrid};

use crate::Hdf5Error;
use crate::ffi::{self, HADDR_UNDEF};
use crate::walk::Ctx;

/// A dataset's chunk grid and the references of its chunks.
pub(crate) struct Chunks {
    pub(crate) grid: ChunkGrid,
    pub(crate) manifest: ChunkManifest,
}

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

/// An empty manifest for `grid` and the source id of the file in it.
fn new_manifest(
    ctx: &Ctx,
    grid: &ChunkGrid,
    path: &str,
) -> Result<(ChunkManifest, u32), Hdf5Error> {
    let n = grid.n_chunks().map_err(|e| grid_error(ctx, path, e))?;
    let n = usize::try_from(n).map_err(|_| ctx.object_error(path, "too many chunks"))?;
    let mut m = ChunkManifest::new_missing(n);
    let sid = m.intern(&ctx.url).map_err(|e| grid_error(ctx, path, e))?;
    Ok((m, sid))
}

fn check_range(ctx: &Ctx, path: &str, what: &str, addr: u64, len: u64) -> Result<(), Hdf5Error> {
    if addr.checked_add(len).is_none_or(|end| end > ctx.file_size) {
        return Err(ctx.object_error(
            path,
            format!(
                "{what} at byte {addr} with {len} bytes ends past the end of the file ({} bytes): \
                 the file is truncated or corrupt",
                ctx.file_size
            ),
        ));
    }
    Ok(())
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
    let (mut manifest, sid) = new_manifest(ctx, &grid, path)?;
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
        let codecs = match vzarr_codec::ByteCodecs::new(enc.codecs) {
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
    Ok(Ok(Chunks { grid, manifest }))
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
    let nelem = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let nbytes = nelem
        .and_then(|n| n.checked_mul(esize as u64))
        .ok_or_else(|| ctx.object_error(path, "dataset size overflows"))?;
    let row_bytes = shape
        .iter()
        .skip(1)
        .try_fold(esize as u64, |a, &d| a.checked_mul(d))
        .unwrap_or(0);
    let grid = match (ctx.opts.split_contiguous_bytes, shape.first()) {
        // Only written data is split (a never-written dataset has no bytes to point at), and
        // into no more chunks than an array may reference.
        (Some(target), Some(&n0))
            if nbytes > target
                && row_bytes > 0
                && n0 > 1
                && ds.offset().is_some()
                && n0 / (target / row_bytes).clamp(1, n0)
                    <= vzarr_core::limits::MAX_ARRAY_REFERENCES =>
        {
            let rows = (target / row_bytes).clamp(1, n0);
            let mut edges = vec![rows; (n0 / rows) as usize];
            if n0 % rows != 0 {
                edges.push(n0 % rows);
            }
            let mut dims =
                vec![DimGrid::from_edges(edges, n0).map_err(|e| grid_error(ctx, path, e))?];
            for &d in &shape[1..] {
                dims.push(DimGrid::fixed(d.max(1), d).map_err(|e| grid_error(ctx, path, e))?);
            }
            ChunkGrid::new(dims)
        }
        _ => {
            let cs: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
            ChunkGrid::regular(shape, &cs).map_err(|e| grid_error(ctx, path, e))?
        }
    };
    let (mut manifest, sid) = new_manifest(ctx, &grid, path)?;
    // Never written (no address): every chunk reads as the fill value.
    let Some(addr) = ds.offset().filter(|_| nbytes != 0) else {
        return Ok(Chunks { grid, manifest });
    };
    check_range(ctx, path, "contiguous data", addr, nbytes)?;
    if shape.is_empty() {
        manifest
            .set_range(0, sid, addr, nbytes)
            .map_err(|e| grid_error(ctx, path, e))?;
        return Ok(Chunks { grid, manifest });
    }
    let axis0 = &grid.dims()[0];
    for i in 0..axis0.n_chunks() {
        let start = axis0.chunk_start(i);
        let rows = axis0.chunk_valid_len(i);
        manifest
            .set_range(i as usize, sid, addr + start * row_bytes, rows * row_bytes)
            .map_err(|e| grid_error(ctx, path, e))?;
    }
    Ok(Chunks { grid, manifest })
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
    let cs: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    let grid = ChunkGrid::regular(shape, &cs).map_err(|e| grid_error(ctx, path, e))?;
    let (mut manifest, _) = new_manifest(ctx, &grid, path)?;
    let nelem: u64 = shape.iter().product();
    if nelem == 0 {
        return Ok(Chunks { grid, manifest });
    }
    // Compact data lives in the object header, at most 64 KiB.
    let nbytes = usize::try_from(nelem * esize as u64)
        .ok()
        .filter(|&n| n <= 1 << 16)
        .ok_or_else(|| ctx.object_error(path, "compact dataset larger than 64 KiB"))?;
    let mut buf = vec![0u8; nbytes];
    // Read as the file type: the stored bytes, no conversion.
    if !ffi::dataset::read_all(id, ftype, &mut buf) {
        return Err(ctx.object_error(path, "compact data unreadable"));
    }
    manifest
        .set_inline(0, buf)
        .map_err(|e| grid_error(ctx, path, e))?;
    Ok(Chunks { grid, manifest })
}
