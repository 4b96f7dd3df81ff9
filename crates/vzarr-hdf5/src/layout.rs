//! Storage layouts: a dataset's chunk grid and the byte range of every chunk in the file.
//!
//! - **Chunked**: one reference per stored chunk, from one pass over the chunk index
//!   ([`File::visit_chunks`], which allocates nothing per chunk; neither does the mapping
//!   here: the C-order position is computed in place). A chunk stored with some filters
//!   skipped (a non-zero filter mask) cannot share the array's codec chain: it is stored
//!   re-encoded with the full chain, inline (`vzarr_hdf5_map::masked`; what the libhdf5
//!   scanner gets by reading the chunk through the library).
//! - **Contiguous**: one range, or virtual chunks along the first axis when asked to split
//!   large uncompressed datasets.
//! - **Compact**: the data lives in the object header; it is copied inline.
//!
//! Every range is checked against the file size: a range past the end means a truncated or
//! corrupt file, an error rather than a reference that fails later.

use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkGrid, Codec, CoreError};
use vzarr_hdf5_format::Dataset;
pub(crate) use vzarr_hdf5_map::chunks::Chunks;
use vzarr_hdf5_map::chunks::{ChunksError, new_manifest, past_end};
use vzarr_hdf5_map::masked::{self, MaskedError};

use crate::Hdf5Error;
use crate::ctx::Ctx;

/// What it takes to re-encode a chunk of a dataset.
pub(crate) struct ChunkEncoding<'a> {
    /// One fill element in the stored byte order.
    pub(crate) fill: Vec<u8>,
    /// The dataset's codecs, one per filter of its pipeline.
    pub(crate) codecs: &'a [Codec],
}

fn model_error(ctx: &Ctx, path: &str, source: CoreError) -> Hdf5Error {
    Hdf5Error::Model {
        url: ctx.url.clone(),
        object: path.to_string(),
        source: Box::new(source),
    }
}

/// A dataset's storage that the shared mapping found wrong, as this scanner reports it.
fn chunks_error(ctx: &Ctx, path: &str, e: ChunksError) -> Hdf5Error {
    match e {
        ChunksError::Model(source) => model_error(ctx, path, source),
        other => ctx.object_error(path, other.to_string()),
    }
}

/// A chunk stored with some filters skipped.
struct MaskedChunk {
    /// Its grid index.
    index: Vec<u64>,
    /// The filters skipped (bit i: filter i).
    filter_mask: u32,
    /// Where it is stored.
    address: u64,
    /// Its stored size.
    size: u64,
}

/// Why a visit of the chunk index stopped.
enum Stop {
    /// The index is unreadable.
    Index(vzarr_hdf5_format::Error),
    /// The mapping refused a chunk.
    Scan(Hdf5Error),
}

impl From<vzarr_hdf5_format::Error> for Stop {
    fn from(e: vzarr_hdf5_format::Error) -> Self {
        Stop::Index(e)
    }
}

/// The chunks of a chunked dataset with chunk shape `chunk`; `Ok(Err(reason))` when the
/// dataset cannot be virtualised (left out with the reason), `Err` when the file is
/// unreadable.
pub(crate) fn chunk_refs(
    ctx: &Ctx,
    ds: &Dataset,
    chunk: &[u64],
    shape: &[u64],
    enc: &ChunkEncoding,
    path: &str,
) -> Result<Result<Chunks, String>, Hdf5Error> {
    if chunk.len() != shape.len() || chunk.contains(&0) {
        return Err(ctx.object_error(path, "chunk shape unreadable"));
    }
    let grid = ChunkGrid::regular(shape, chunk).map_err(|e| model_error(ctx, path, e))?;
    let (mut manifest, sid) =
        new_manifest(&grid, &ctx.url).map_err(|e| chunks_error(ctx, path, e))?;
    let mut masked: Vec<MaskedChunk> = Vec::new();
    let file_size = ctx.file_size;
    // Chunks per axis, computed once: the callback runs for every chunk (millions), so it
    // computes the C-order position in place, without allocating.
    let counts = grid.grid_shape();
    let visit = ctx.file.visit_chunks::<Stop>(ds, |c| {
        let mut lin: u64 = 0;
        for (&i, &n) in c.scaled.iter().zip(&counts) {
            if i >= n {
                return Ok(()); // A chunk past the current extent (the dataset shrank): never read.
            }
            // Cannot overflow: the grid's chunk count fits the manifest.
            lin = lin * n + i;
        }
        if c.address
            .checked_add(c.size)
            .is_none_or(|end| end > file_size)
        {
            let what = format!("chunk {:?}", c.scaled);
            return Err(Stop::Scan(
                ctx.object_error(path, past_end(&what, c.address, c.size, file_size)),
            ));
        }
        if c.filter_mask != 0 {
            // Axes past the dataset's (an array datatype's) hold one chunk.
            let mut index = c.scaled.to_vec();
            index.resize(counts.len(), 0);
            masked.push(MaskedChunk {
                index,
                filter_mask: c.filter_mask,
                address: c.address,
                size: c.size,
            });
            return Ok(());
        }
        manifest
            .set_range(lin as usize, sid, c.address, c.size)
            .map_err(|e| Stop::Scan(model_error(ctx, path, e)))
    });
    match visit {
        Ok(()) => {}
        Err(Stop::Scan(e)) => return Err(e),
        Err(Stop::Index(source)) => {
            return Err(Hdf5Error::Structure {
                url: ctx.url.clone(),
                object: path.to_string(),
                what: "chunk index",
                source: Box::new(source),
            });
        }
    }
    if !masked.is_empty() {
        // Chunks stored with some filters skipped cannot share the array's codec chain:
        // decode them and store them re-encoded with the full chain.
        let codecs = match ByteCodecs::for_encoding(enc.codecs) {
            Ok(c) => c,
            Err(e) => {
                let MaskedChunk {
                    index, filter_mask, ..
                } = &masked[0];
                return Ok(Err(format!(
                    "{} chunk(s) were stored with some filters skipped (first: chunk {index:?}, \
                     filter mask {filter_mask:#x}) and cannot be re-encoded: {e}",
                    masked.len()
                )));
            }
        };
        for m in &masked {
            let stored = ctx
                .storage
                .read_range(m.address..m.address + m.size)
                .map_err(Hdf5Error::chunk_bytes(&ctx.url, path, &m.index))?;
            let encoded =
                masked::reencode(&stored, &grid, &m.index, &enc.fill, &codecs, m.filter_mask)
                    .map_err(|e| match e {
                        MaskedError::Codec(c) => {
                            Hdf5Error::chunk(&ctx.url, path, &m.index, m.filter_mask)(c)
                        }
                        other => ctx.object_error(
                            path,
                            format!(
                                "chunk {:?} (filter mask {:#x}): {other}",
                                m.index, m.filter_mask
                            ),
                        ),
                    })?;
            let lin = grid
                .linear_index(&m.index)
                .ok_or_else(|| ctx.object_error(path, "chunk index outside the grid"))?;
            manifest
                .set_inline(lin as usize, encoded)
                .map_err(|e| model_error(ctx, path, e))?;
        }
    }
    // Chunks longer than the dataset's first axis cut to it where they can be (the shared
    // mapping's rule).
    let chunks = Chunks { grid, manifest }.cut_to_extent(enc.codecs.is_empty(), enc.fill.len());
    Ok(Ok(chunks))
}

/// The chunks of a contiguous dataset stored at `address` (`None`: never written): one, or
/// virtual chunks along axis 0 of at most `split_contiguous_bytes` each.
pub(crate) fn contiguous_refs(
    ctx: &Ctx,
    address: Option<u64>,
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Chunks, Hdf5Error> {
    let split = ctx.opts.split_contiguous_bytes;
    vzarr_hdf5_map::chunks::contiguous(&ctx.url, ctx.file_size, address, split, shape, esize)
        .map_err(|e| chunks_error(ctx, path, e))
}

/// The one chunk of a compact dataset whose raw data (in the object header) is `data`,
/// copied inline.
pub(crate) fn compact_refs(
    ctx: &Ctx,
    data: &[u8],
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Chunks, Hdf5Error> {
    vzarr_hdf5_map::chunks::compact(&ctx.url, shape, esize, |nbytes| {
        // The library refuses a compact dataset whose data is not exactly its elements.
        if data.len() == nbytes {
            Ok(data.to_vec())
        } else {
            Err(format!(
                "compact data unreadable: {} bytes stored for {nbytes} bytes of elements",
                data.len()
            ))
        }
    })
    .map_err(|e| chunks_error(ctx, path, e))
}
