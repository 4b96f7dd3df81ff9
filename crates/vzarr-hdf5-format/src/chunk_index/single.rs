//! Chunk index: single chunk (HDF5 File Format Specification 3.0, appendix C, section VII.A
//! "The Single Chunk Index", and section IV.A.2.i "Data Layout Message", version 4: the index address is the
//! chunk's address; a filtered chunk's size and filter mask are in the layout message).

use super::{ChunkRecord, Ctx, Sink};
use crate::error::Result;

pub(super) fn visit(ctx: &Ctx, filtered: Option<(u64, u32)>, sink: &mut Sink) -> Result<()> {
    let scaled = vec![0u64; ctx.rank];
    let (size, filter_mask) = filtered.unwrap_or((ctx.chunk_bytes, 0));
    let rec = ChunkRecord {
        scaled: &scaled,
        address: ctx.index_address,
        size,
        filter_mask,
    };
    ctx.emit(sink, &rec).map(|_| ())
}
