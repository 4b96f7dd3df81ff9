//! Chunk index: implicit (HDF5 File Format Specification 3.0, appendix C, section VII.B "The
//! Implicit Index": chunks are allocated together, in
//! row-major order over the chunk grid of the maximum dimensions, from the index address).
//!
//! Before anything is visited, the whole allocation (chunks of the maximum grid times the
//! chunk size) must lie inside the file: the number of chunks visited is thus bounded by the
//! file size, however large the dataspace claims to be.

use super::{ChunkRecord, Ctx, Scaler, Sink};
use crate::error::{Error, Result};

const WHAT: &str = "implicit chunk index";

pub(super) fn visit(ctx: &Ctx, sink: &mut Sink) -> Result<()> {
    if ctx.filtered {
        return Err(ctx.invalid(
            WHAT,
            ctx.index_address,
            "implicit index of a filtered dataset",
        ));
    }
    let max: Vec<u64> = ctx
        .max_chunks()
        .into_iter()
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| {
            ctx.invalid(
                WHAT,
                ctx.index_address,
                "implicit index with an unlimited dimension",
            )
        })?;
    let total = max
        .iter()
        .try_fold(1u64, |a, &n| a.checked_mul(n))
        .and_then(|n| n.checked_mul(ctx.chunk_bytes));
    match total {
        Some(t) => ctx.file.check_range(WHAT, ctx.index_address, t)?,
        None => {
            return Err(Error::OutOfBounds {
                structure: WHAT,
                address: ctx.index_address,
                len: u64::MAX,
                file_size: ctx.file.size(),
            });
        }
    }
    let current = ctx.current_chunks();
    if current.iter().zip(&max).any(|(c, m)| c > m) {
        return Err(ctx.invalid(WHAT, ctx.index_address, "dimensions exceed their maximum"));
    }
    let count = current.iter().product::<u64>();
    // Row-major strides over the maximum grid.
    let mut down = vec![1u64; ctx.rank];
    for i in (0..ctx.rank.saturating_sub(1)).rev() {
        down[i] = down[i + 1] * max[i + 1];
    }
    let mut s = Scaler::new(&current, None);
    for k in 0..count {
        if k > 0 {
            s.next();
        }
        let idx: u64 = s.scaled.iter().zip(&down).map(|(a, b)| a * b).sum();
        let rec = ChunkRecord {
            scaled: &s.scaled,
            address: ctx.index_address + idx * ctx.chunk_bytes,
            size: ctx.chunk_bytes,
            filter_mask: 0,
        };
        if ctx.emit(sink, &rec)?.is_break() {
            break;
        }
    }
    Ok(())
}
