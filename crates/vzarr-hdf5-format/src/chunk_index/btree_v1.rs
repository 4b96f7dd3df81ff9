//! Chunk index: version 1 B-tree of node type 1 (HDF5 File Format Specification 3.0,
//! section III.A.1 "Version 1 B-trees": the key of a raw data chunk node holds the chunk's
//! stored size, its filter mask and its logical offset in each dimension plus a trailing 0
//! for the element-size dimension).

use super::{ChunkRecord, Ctx, Sink};
use crate::btree::v1;
use crate::decode::le_uint;
use crate::error::Result;

pub(super) fn visit(ctx: &Ctx, sink: &mut Sink) -> Result<()> {
    let rank = ctx.rank;
    let key_size = 8 + 8 * (rank + 1);
    let dims = &ctx.layout.chunk_dims;
    let mut scaled = vec![0u64; rank];
    v1::walk_leaves(
        ctx.file,
        ctx.index_address,
        1,
        key_size,
        ctx.file.superblock().chunk_btree_k,
        &mut |key, child| {
            let size = le_uint(&key[0..4]);
            let filter_mask = le_uint(&key[4..8]) as u32;
            for (i, s) in scaled.iter_mut().enumerate() {
                let off = le_uint(&key[8 + 8 * i..16 + 8 * i]);
                *s = off / dims[i];
            }
            let rec = ChunkRecord {
                scaled: &scaled,
                address: child,
                size,
                filter_mask,
            };
            ctx.emit(sink, &rec)
        },
    )?;
    Ok(())
}
