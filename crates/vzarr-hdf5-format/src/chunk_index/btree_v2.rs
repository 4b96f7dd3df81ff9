//! Chunk index: version 2 B-tree with record type 10 (unfiltered chunks: address and scaled
//! offsets) or 11 (filtered: address, stored size, filter mask and scaled offsets) (HDF5 File
//! Format Specification 3.0, appendix C, section VII.E "The Version 2 B-trees Index", and
//! section III.A.2 "Version 2 B-trees", record types 10 and 11).

use std::ops::ControlFlow;

use super::{ChunkRecord, Ctx, Sink};
use crate::btree::v2::BTreeV2;
use crate::decode::{decode_addr, le_uint};
use crate::error::{Error, Result};

const WHAT: &str = "v2 B-tree chunk record";

pub(super) fn visit(ctx: &Ctx, sink: &mut Sink) -> Result<()> {
    let file = ctx.file;
    let rec_type = if ctx.filtered { 11 } else { 10 };
    let bt = BTreeV2::open(file, ctx.index_address, Some(rec_type))?;
    let so = usize::from(file.sizes().offset);
    let size_len = ctx.chunk_size_len();
    let head = if ctx.filtered { so + size_len + 4 } else { so };
    let expect = head + 8 * ctx.rank;
    if usize::from(bt.record_size) != expect {
        return Err(Error::invalid(
            WHAT,
            ctx.index_address,
            format!("record size {}, expected {expect}", bt.record_size),
        ));
    }
    let base = file.sizes().base;
    let mut scaled = vec![0u64; ctx.rank];
    bt.for_each(file, &mut |rec| {
        let address = decode_addr(&rec[..so], base).flatten().ok_or_else(|| {
            Error::invalid(WHAT, bt.address, "undefined or overflowing chunk address")
        })?;
        let (size, filter_mask) = if ctx.filtered {
            (
                le_uint(&rec[so..so + size_len]),
                le_uint(&rec[so + size_len..so + size_len + 4]) as u32,
            )
        } else {
            (ctx.chunk_bytes, 0)
        };
        for (i, s) in scaled.iter_mut().enumerate() {
            *s = le_uint(&rec[head + 8 * i..head + 8 * i + 8]);
        }
        let r = ChunkRecord {
            scaled: &scaled,
            address,
            size,
            filter_mask,
        };
        Ok(match ctx.emit(sink, &r)? {
            ControlFlow::Break(()) => ControlFlow::Break(()),
            ControlFlow::Continue(()) => ControlFlow::Continue(()),
        })
    })
}
