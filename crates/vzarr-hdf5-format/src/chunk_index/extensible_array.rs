//! Chunk index: extensible array (`EAHD` header, `EAIB` index block, `EASB` super blocks,
//! `EADB` data blocks and their pages) (HDF5 File Format Specification 3.0, appendix C,
//! section VII.D "The Extensible Array Index").
//!
//! Used for datasets with exactly one unlimited dimension. Element `i` is the chunk at
//! position `i` of the chunk grid in row-major order with the unlimited dimension moved to
//! the front (slowest). The index block holds the first elements and the addresses of the
//! first data blocks and of the super blocks; each super block holds the addresses of its
//! data blocks (and, when they are paged, which pages were written). Only elements below the
//! header's "max index set" exist.
//!
//! Where libhdf5 2.2 disagrees: its chunk iteration (`H5Dchunk_iter`) reports the
//! coordinates of elements by counting in unswizzled order, which is wrong when the
//! unlimited dimension is not the first; this reader undoes the swizzle as the library's own
//! chunk lookup does.

use std::ops::Range;

use bytes::Bytes;

use super::fixed_array::Elements;
use super::{Ctx, Scaler, Sink, bit, check_block};
use crate::decode::{Cursor, log2_floor};
use crate::error::{Error, Result};
use crate::file::SIGNED_PREFIX;

const WHAT_HDR: &str = "extensible array header";
const WHAT_IB: &str = "extensible array index block";
const WHAT_SB: &str = "extensible array super block";
const WHAT_DB: &str = "extensible array data block";
const WHAT_PAGE: &str = "extensible array data block page";
/// Blocks prefetched together.
const WINDOW: usize = 256;

/// A data block to visit.
struct DataBlock {
    addr: u64,
    /// Array index of its first element (after the index block's elements).
    first: u64,
    /// Block offsets accepted as stored: the block's first element (not counting the index
    /// block's), and for data blocks of the index block also the value libhdf5 writes there,
    /// which counts the blocks before it twice.
    block_off: [u64; 2],
    nelmts: u64,
    /// Page bitmap of the super block and the index of this block's first page bit.
    pages: Option<(Bytes, u64)>,
}

struct Params {
    so: u64,
    esize: u64,
    arr_off_size: usize,
    page_n: u64,
    class: u8,
    hdr_addr: u64,
}

impl Params {
    fn dblock_prefix(&self) -> u64 {
        4 + 1 + 1 + self.so + self.arr_off_size as u64 + 4
    }

    /// Checks the prefix of a block of this array (see [`check_block`]).
    fn check(&self, c: &mut Cursor, sig: &'static str) -> Result<()> {
        check_block(c, sig, self.class, self.hdr_addr)
    }
}

pub(super) fn visit(ctx: &Ctx, sink: &mut Sink) -> Result<()> {
    let file = ctx.file;
    let sizes = file.sizes();
    let so = u64::from(sizes.offset);
    let hdr_addr = ctx.index_address;
    let hlen = 4 + 1 + 1 + 6 + 6 * u64::from(sizes.length) + so + 4;
    let img = file.read_signed(WHAT_HDR, hdr_addr, hlen, "EAHD", 0)?;
    let mut c = Cursor::new(&img, WHAT_HDR, hdr_addr, sizes);
    c.skip(SIGNED_PREFIX)?;
    let class = c.u8()?;
    if class != u8::from(ctx.filtered) {
        return Err(c.invalid(format!("array class {class} does not match the pipeline")));
    }
    let esize = usize::from(c.u8()?);
    let max_bits = u32::from(c.u8()?);
    let idx_blk_elmts = u64::from(c.u8()?);
    let min_elmts = u64::from(c.u8()?);
    let min_ptrs = u64::from(c.u8()?);
    let page_bits = u32::from(c.u8()?);
    for _ in 0..4 {
        c.length()?;
    }
    let max_idx_set = c.length()?;
    let _nelmts = c.length()?;
    let Some(ib_addr) = c.addr()? else {
        return Ok(());
    };
    let elems = Elements::for_ctx(ctx, esize, WHAT_HDR, hdr_addr)?;
    let pow2 = |v: u64| v != 0 && v & (v - 1) == 0;
    if !(1..=64).contains(&max_bits)
        || !pow2(min_elmts)
        || !pow2(min_ptrs)
        || min_ptrs < 2
        || log2_floor(min_elmts) > max_bits
        || page_bits > max_bits.min(63)
    {
        return Err(c.invalid("inconsistent extensible array parameters"));
    }
    let nsblks = 1 + u64::from(max_bits - log2_floor(min_elmts));
    let ib_nsblks = 2 * u64::from(log2_floor(min_ptrs));
    let ndblk_addrs = 2 * (min_ptrs - 1);
    let nsblk_addrs = nsblks
        .checked_sub(ib_nsblks)
        .ok_or_else(|| c.invalid("fewer super blocks than the index block covers"))?;
    // Chunk grid: the one unlimited dimension goes first.
    let max = ctx.max_chunks();
    let unlimited: Vec<usize> = (0..max.len()).filter(|&i| max[i].is_none()).collect();
    if unlimited.len() != 1 {
        return Err(c.invalid(format!(
            "extensible array index for {} unlimited dimensions",
            unlimited.len()
        )));
    }
    let extents: Vec<u64> = max.iter().map(|m| m.unwrap_or(u64::MAX)).collect();
    let mut scaler = Scaler::new(&extents, Some(unlimited[0]));
    let p = Params {
        so,
        esize: esize as u64,
        arr_off_size: max_bits.div_ceil(8) as usize,
        page_n: 1u64 << page_bits,
        class,
        hdr_addr,
    };

    // Index block.
    let ib_len = (4 + 1 + 1 + so) + idx_blk_elmts * p.esize + (ndblk_addrs + nsblk_addrs) * so + 4;
    let ib = file.read(WHAT_IB, ib_addr, ib_len)?;
    file.verify_trailing(WHAT_IB, ib_addr, &ib)?;
    let mut c = Cursor::new(&ib, WHAT_IB, ib_addr, sizes);
    p.check(&mut c, "EAIB")?;
    let raw = c.bytes((idx_blk_elmts * p.esize) as usize)?;
    let mut dblk_addrs = Vec::with_capacity(ndblk_addrs as usize);
    for _ in 0..ndblk_addrs {
        dblk_addrs.push(c.addr()?);
    }
    let mut sblk_addrs = Vec::with_capacity(nsblk_addrs as usize);
    for _ in 0..nsblk_addrs {
        sblk_addrs.push(c.addr()?);
    }
    // The index block's children are known at once: fetch them together.
    let mut ranges: Vec<Range<u64>> = Vec::new();
    if !elems.visit(
        ctx,
        raw,
        0,
        idx_blk_elmts.min(max_idx_set),
        &mut scaler,
        sink,
    )? {
        return Ok(());
    }

    // Data blocks in array order: those of the index block, then those of each super block.
    let mut blocks: Vec<DataBlock> = Vec::new();
    let mut start = 0u64; // Element offset after the index block's elements.
    let mut dblk = 0usize;
    let mut sblocks: Vec<(u64, u64, u64, u64, u64)> = Vec::new(); // addr, sblk, start, ndblks, dblk_nelmts
    for u in 0..nsblks {
        let ndblks = 1u64 << (u / 2);
        let dn = (1u64 << u.div_ceil(2)).checked_mul(min_elmts);
        let Some(dn) = dn else { break };
        if idx_blk_elmts.saturating_add(start) >= max_idx_set {
            break;
        }
        if u < ib_nsblks {
            if dn > p.page_n {
                return Err(Error::invalid(
                    WHAT_IB,
                    ib_addr,
                    "paged data block in the index block",
                ));
            }
            for k in 0..ndblks {
                let off = start + k * dn;
                let lib_off = start + dblk as u64 * dn;
                if let Some(Some(a)) = dblk_addrs.get(dblk) {
                    blocks.push(DataBlock {
                        addr: *a,
                        first: idx_blk_elmts + off,
                        block_off: [off, lib_off],
                        nelmts: dn,
                        pages: None,
                    });
                    ranges.push(
                        *a..a.saturating_add(
                            p.dblock_prefix().saturating_add(dn.saturating_mul(p.esize)),
                        ),
                    );
                }
                dblk += 1;
            }
        } else if let Some(Some(a)) = sblk_addrs.get((u - ib_nsblks) as usize) {
            sblocks.push((*a, u, start, ndblks, dn));
        }
        let Some(next) = ndblks.checked_mul(dn).and_then(|n| n.checked_add(start)) else {
            break;
        };
        start = next;
    }
    for &(a, _, _, ndblks, dn) in &sblocks {
        if let Some(len) = sblock_len(&p, ndblks, dn) {
            ranges.push(a..a.saturating_add(len));
        }
    }
    file.prefetch(&ranges);

    // Super blocks: their data blocks join the list, in order.
    for &(sb_addr, _u, sb_start, ndblks, dn) in &sblocks {
        let paged = dn > p.page_n;
        let npages = if paged { dn / p.page_n } else { 0 };
        let init_size = npages.div_ceil(8);
        let len = sblock_len(&p, ndblks, dn)
            .ok_or_else(|| Error::invalid(WHAT_SB, sb_addr, "super block size overflows"))?;
        let sb = file.read(WHAT_SB, sb_addr, len)?;
        file.verify_trailing(WHAT_SB, sb_addr, &sb)?;
        let mut c = Cursor::new(&sb, WHAT_SB, sb_addr, sizes);
        p.check(&mut c, "EASB")?;
        let off = c.uint(p.arr_off_size)?;
        if off != sb_start {
            return Err(c.invalid(format!("block offset {off}, expected {sb_start}")));
        }
        let bitmap = Bytes::copy_from_slice(c.bytes((ndblks * init_size) as usize)?);
        for k in 0..ndblks {
            let a = c.addr()?;
            if let Some(a) = a {
                let boff = k
                    .checked_mul(dn)
                    .and_then(|o| o.checked_add(sb_start))
                    .filter(|o| {
                        o.checked_add(dn)
                            .and_then(|e| e.checked_add(idx_blk_elmts))
                            .is_some()
                    })
                    .ok_or_else(|| c.invalid("data block offsets overflow"))?;
                blocks.push(DataBlock {
                    addr: a,
                    first: idx_blk_elmts + boff,
                    block_off: [boff, boff],
                    nelmts: dn,
                    pages: paged.then(|| (bitmap.clone(), k * npages)),
                });
            }
        }
    }

    for (i, b) in blocks.iter().enumerate() {
        if b.first >= max_idx_set {
            break;
        }
        if i % WINDOW == 0 {
            // The blocks of the window, and the written pages of paged ones.
            let mut ranges: Vec<Range<u64>> = Vec::new();
            for b in &blocks[i..blocks.len().min(i + WINDOW)] {
                let len = if b.pages.is_some() {
                    p.dblock_prefix()
                } else {
                    p.dblock_prefix()
                        .saturating_add(b.nelmts.saturating_mul(p.esize))
                };
                ranges.push(b.addr..b.addr.saturating_add(len));
                ranges.extend(page_ranges(&p, b));
            }
            file.prefetch(&ranges);
        }
        let count = b.nelmts.min(max_idx_set - b.first);
        if !visit_block(ctx, &p, &elems, b, count, &mut scaler, sink)? {
            break;
        }
    }
    Ok(())
}

/// Byte ranges of the written pages of a paged data block (empty when not paged).
fn page_ranges(p: &Params, b: &DataBlock) -> Vec<Range<u64>> {
    let Some((bitmap, first_bit)) = &b.pages else {
        return Vec::new();
    };
    let npages = b.nelmts / p.page_n;
    let page_len = p.page_n.saturating_mul(p.esize).saturating_add(4);
    let start = b.addr.saturating_add(p.dblock_prefix());
    (0..npages)
        .filter(|&q| bit(bitmap, first_bit.saturating_add(q)))
        .map(|q| {
            let a = start.saturating_add(q.saturating_mul(page_len));
            a..a.saturating_add(page_len)
        })
        .collect()
}

/// Bytes of a super block with `ndblks` data blocks of `dn` elements.
fn sblock_len(p: &Params, ndblks: u64, dn: u64) -> Option<u64> {
    let init_size = if dn > p.page_n {
        (dn / p.page_n).div_ceil(8)
    } else {
        0
    };
    let per_block = init_size.checked_add(p.so)?;
    ndblks
        .checked_mul(per_block)?
        .checked_add(6 + p.so + p.arr_off_size as u64 + 4)
}

fn visit_block(
    ctx: &Ctx,
    p: &Params,
    elems: &Elements,
    b: &DataBlock,
    count: u64,
    scaler: &mut Scaler,
    sink: &mut Sink,
) -> Result<bool> {
    let file = ctx.file;
    let sizes = file.sizes();
    let prefix = p.dblock_prefix();
    let len = match &b.pages {
        None => b
            .nelmts
            .checked_mul(p.esize)
            .and_then(|n| n.checked_add(prefix))
            .ok_or_else(|| Error::invalid(WHAT_DB, b.addr, "block size overflows"))?,
        Some(_) => prefix,
    };
    let db = file.read(WHAT_DB, b.addr, len)?;
    let mut c = Cursor::new(&db, WHAT_DB, b.addr, sizes);
    p.check(&mut c, "EADB")?;
    let off = c.uint(p.arr_off_size)?;
    if !b.block_off.contains(&off) {
        return Err(c.invalid(format!("block offset {off}, expected {}", b.block_off[0])));
    }
    let Some((bitmap, first_bit)) = &b.pages else {
        // Elements, then the checksum of everything before it.
        let body = c.pos();
        file.verify_trailing(WHAT_DB, b.addr, &db)?;
        return elems.visit(ctx, &db[body..db.len() - 4], b.first, count, scaler, sink);
    };
    file.verify_trailing(WHAT_DB, b.addr, &db)?;
    let npages = b.nelmts / p.page_n;
    let page_len = p
        .page_n
        .checked_mul(p.esize)
        .and_then(|n| n.checked_add(4))
        .ok_or_else(|| Error::invalid(WHAT_DB, b.addr, "page size overflows"))?;
    let pages_start = b
        .addr
        .checked_add(prefix)
        .ok_or_else(|| Error::invalid(WHAT_DB, b.addr, "block address overflows"))?;
    file.check_range(WHAT_DB, pages_start, npages.saturating_mul(page_len))?;
    // (Already prefetched with the block's window.)
    let written = (0..npages).filter(|&q| bit(bitmap, first_bit + q));
    for q in written {
        let first = q * p.page_n;
        if first >= count {
            break;
        }
        let pa = pages_start + q * page_len;
        let page = file.read(WHAT_PAGE, pa, page_len)?;
        file.verify_trailing(WHAT_PAGE, pa, &page)?;
        let n = p.page_n.min(count - first);
        if !elems.visit(
            ctx,
            &page[..page.len() - 4],
            b.first + first,
            n,
            scaler,
            sink,
        )? {
            return Ok(false);
        }
    }
    Ok(true)
}
