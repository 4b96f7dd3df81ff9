//! Chunk index: fixed array (`FAHD` header, `FADB` data block, optional data block pages)
//! (HDF5 File Format Specification 3.0, appendix C, section VII.C "The Fixed Array
//! Index").
//!
//! Element `i` of the array is the chunk at row-major position `i` of the chunk grid over the
//! maximum dimensions. A data block with more elements than a page holds is split into
//! pages; a bitmap in the data block says which pages were ever written, and only those are
//! read. Sizes are checked against the file before anything is allocated.

use std::ops::Range;

use super::{ChunkRecord, Ctx, Scaler, Sink, bit, check_block};
use crate::decode::{Cursor, le_uint};
use crate::error::{Error, Result};
use crate::file::SIGNED_PREFIX;

const WHAT_HDR: &str = "fixed array header";
const WHAT_DB: &str = "fixed array data block";
const WHAT_PAGE: &str = "fixed array data block page";
/// Pages prefetched together.
const WINDOW: u64 = 256;

/// Decodes array elements of chunk addresses (and sizes and filter masks when filtered).
pub(super) struct Elements {
    pub esize: usize,
    pub so: usize,
    pub size_len: usize,
    pub filtered: bool,
    pub base: u64,
}

impl Elements {
    pub(super) fn for_ctx(
        ctx: &Ctx,
        esize: usize,
        what: &'static str,
        addr: u64,
    ) -> Result<Elements> {
        let so = usize::from(ctx.file.sizes().offset);
        let size_len = ctx.chunk_size_len();
        let expect = if ctx.filtered { so + size_len + 4 } else { so };
        if esize != expect {
            return Err(Error::invalid(
                what,
                addr,
                format!("element size {esize}, expected {expect}"),
            ));
        }
        Ok(Elements {
            esize,
            so,
            size_len,
            filtered: ctx.filtered,
            base: ctx.file.sizes().base,
        })
    }

    /// Visits the elements in `raw` (whole elements only), whose first element has index
    /// `first`; positions `scaler` as it goes. Returns false when the sink stopped.
    pub(super) fn visit(
        &self,
        ctx: &Ctx,
        raw: &[u8],
        first: u64,
        count: u64,
        scaler: &mut Scaler,
        sink: &mut Sink,
    ) -> Result<bool> {
        scaler.set(first);
        for (k, e) in raw
            .chunks_exact(self.esize)
            .take(count as usize)
            .enumerate()
        {
            if k > 0 {
                scaler.next();
            }
            let a = &e[..self.so];
            if a.iter().all(|&b| b == 0xff) {
                continue;
            }
            let address = self.base.checked_add(le_uint(a)).ok_or_else(|| {
                Error::invalid("chunk index element", 0, "chunk address overflows")
            })?;
            let (size, filter_mask) = if self.filtered {
                (
                    le_uint(&e[self.so..self.so + self.size_len]),
                    le_uint(&e[self.so + self.size_len..self.so + self.size_len + 4]) as u32,
                )
            } else {
                (ctx.chunk_bytes, 0)
            };
            let rec = ChunkRecord {
                scaled: &scaler.scaled,
                address,
                size,
                filter_mask,
            };
            if ctx.emit(sink, &rec)?.is_break() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

pub(super) fn visit(ctx: &Ctx, sink: &mut Sink) -> Result<()> {
    let file = ctx.file;
    let sizes = file.sizes();
    let so = u64::from(sizes.offset);
    let hdr_addr = ctx.index_address;
    let hlen = 4 + 1 + 1 + 1 + 1 + u64::from(sizes.length) + so + 4;
    let img = file.read_signed(WHAT_HDR, hdr_addr, hlen, "FAHD", 0)?;
    let mut c = Cursor::new(&img, WHAT_HDR, hdr_addr, sizes);
    c.skip(SIGNED_PREFIX)?;
    let class = c.u8()?;
    if class != u8::from(ctx.filtered) {
        return Err(c.invalid(format!(
            "array class {class} for a dataset {}filtered",
            if ctx.filtered { "" } else { "un" }
        )));
    }
    let esize = usize::from(c.u8()?);
    let page_bits = c.u8()?;
    let nelmts = c.length()?;
    let Some(db_addr) = c.addr()? else {
        return Ok(());
    };
    let elems = Elements::for_ctx(ctx, esize, WHAT_HDR, hdr_addr)?;
    if page_bits == 0 || page_bits > 63 {
        return Err(c.invalid(format!("page bits {page_bits}")));
    }
    let max: Vec<u64> = ctx
        .max_chunks()
        .into_iter()
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| c.invalid("fixed array index with an unlimited dimension"))?;
    let grid = max.iter().try_fold(1u64, |a, &n| a.checked_mul(n));
    if grid.is_none_or(|g| nelmts > g) {
        return Err(c.invalid(format!("{nelmts} elements, more than the chunk grid holds")));
    }
    let es = esize as u64;
    let page_n = 1u64 << page_bits;
    let mut scaler = Scaler::new(&max, None);
    let prefix = 4 + 1 + 1 + so;
    if nelmts <= page_n {
        // One unpaged block: prefix, elements, checksum.
        let len = nelmts
            .checked_mul(es)
            .and_then(|n| n.checked_add(prefix + 4))
            .ok_or_else(|| c.invalid("data block size overflows"))?;
        let db = file.read(WHAT_DB, db_addr, len)?;
        let mut dc = Cursor::new(&db, WHAT_DB, db_addr, sizes);
        check_block(&mut dc, "FADB", class, hdr_addr)?;
        file.verify_trailing(WHAT_DB, db_addr, &db)?;
        let raw = &db[prefix as usize..db.len() - 4];
        elems.visit(ctx, raw, 0, nelmts, &mut scaler, sink)?;
        return Ok(());
    }
    // Paged: prefix, page bitmap, checksum; then the pages.
    let npages = nelmts.div_ceil(page_n);
    let bitmap_len = npages.div_ceil(8);
    let db_len = prefix + bitmap_len + 4;
    let db = file.read(WHAT_DB, db_addr, db_len)?;
    let mut dc = Cursor::new(&db, WHAT_DB, db_addr, sizes);
    check_block(&mut dc, "FADB", class, hdr_addr)?;
    file.verify_trailing(WHAT_DB, db_addr, &db)?;
    let bitmap = &db[prefix as usize..(prefix + bitmap_len) as usize];
    let page_len = page_n
        .checked_mul(es)
        .and_then(|n| n.checked_add(4))
        .ok_or_else(|| c.invalid("data block page size overflows"))?;
    let pages_start = db_addr
        .checked_add(db_len)
        .ok_or_else(|| c.invalid("data block address overflows"))?;
    // Every page must lie inside the file, written or not (they are allocated together).
    let last = nelmts - (npages - 1) * page_n;
    let all = (npages - 1).checked_mul(page_len).and_then(|n| {
        last.checked_mul(es)
            .and_then(|l| l.checked_add(4))
            .and_then(|l| n.checked_add(l))
    });
    match all {
        Some(all) => file.check_range(WHAT_DB, pages_start, all)?,
        None => return Err(c.invalid("data block pages overflow")),
    }
    let page_addr = |p: u64| pages_start + p * page_len;
    let page_count = |p: u64| {
        if p + 1 == npages {
            nelmts - p * page_n
        } else {
            page_n
        }
    };
    let mut window_end = 0;
    for p in 0..npages {
        if !bit(bitmap, p) {
            continue;
        }
        if p >= window_end {
            let ranges: Vec<Range<u64>> = (p..npages.min(p + WINDOW))
                .filter(|&q| bit(bitmap, q))
                .map(|q| page_addr(q)..page_addr(q) + page_count(q) * es + 4)
                .collect();
            file.prefetch(&ranges);
            window_end = p + WINDOW;
        }
        let n = page_count(p);
        let pa = page_addr(p);
        let page = file.read(WHAT_PAGE, pa, n * es + 4)?;
        file.verify_trailing(WHAT_PAGE, pa, &page)?;
        if !elems.visit(
            ctx,
            &page[..page.len() - 4],
            p * page_n,
            n,
            &mut scaler,
            sink,
        )? {
            break;
        }
    }
    Ok(())
}
