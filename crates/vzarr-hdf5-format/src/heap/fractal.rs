//! Fractal heaps (`FRHP`, `FHIB`, `FHDB`): where dense links, dense attributes and shared
//! messages live (HDF5 File Format Specification 3.0, section III.G "Disk Format: Level 1G -
//! Fractal Heap"), addressed by heap ids of three kinds: managed (offset and length in the
//! heap's doubling table of blocks), huge (stored directly in the file, found through the
//! heap id or a v2 B-tree of record type 1 or 3) and tiny (the bytes are in the id itself).
//!
//! Heaps of groups created with filters have filtered direct blocks (and huge objects): their
//! entries carry the stored size and filter mask, and the blocks are unfiltered here with
//! [`crate::inflate`] (deflate, shuffle, Fletcher-32; other filters are unsupported).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Mutex;

use bytes::Bytes;

use crate::btree::v2::BTreeV2;
use crate::checksum;
use crate::decode::{Cursor, log2_floor};
use crate::error::{Error, Result};
use crate::file::{File, SIGNED_PREFIX, lock};
use crate::messages::filters::{self, FilterPipeline};

const WHAT: &str = "fractal heap header";
const WHAT_IB: &str = "fractal heap indirect block";
const WHAT_DB: &str = "fractal heap direct block";
/// Deepest chain of indirect blocks followed from the root.
const MAX_IBLOCK_DEPTH: usize = 64;
/// Decoded blocks kept per heap.
const CACHE: usize = 64;

/// An opened fractal heap.
#[derive(Debug)]
pub(crate) struct FractalHeap {
    address: u64,
    id_len: usize,
    checksum_dblocks: bool,
    huge_btree: Option<u64>,
    width: u64,
    start_block: u64,
    max_direct_block: u64,
    max_heap_bits: u32,
    root: Option<u64>,
    root_rows: u64,
    /// Derived: rows of a root indirect block that hold direct blocks.
    max_direct_rows: u64,
    first_row_bits: u32,
    heap_off_size: usize,
    heap_len_size: usize,
    tiny_extended: bool,
    huge_direct: bool,
    huge_id_size: usize,
    /// The I/O filters of the heap's blocks, when it has any.
    pipeline: Option<FilterPipeline>,
    /// Stored size and filter mask of a filtered root direct block.
    root_filtered: (u64, u32),
    /// Validated blocks by (address, heap offset, length).
    blocks: Mutex<HashMap<(u64, u64, u64), Bytes>>,
}

impl FractalHeap {
    /// Reads the heap header at `addr`.
    pub(crate) fn open(file: &File, addr: u64) -> Result<FractalHeap> {
        let sizes = file.sizes();
        let (so, sl) = (u64::from(sizes.offset), u64::from(sizes.length));
        let fixed =
            4 + 1 + 2 + 2 + 1 + 4 + sl + so + sl + so + 8 * sl + 2 + sl + sl + 2 + 2 + so + 2;
        let first = file.read(WHAT, addr, fixed + 4)?;
        let mut c = Cursor::new(&first, WHAT, addr, sizes);
        c.prefix("FRHP", 0)?;
        let id_len = usize::from(c.u16()?);
        let filter_len = c.u16()?;
        let flags = c.u8()?;
        let max_managed = c.u32()?;
        let _next_huge = c.length()?;
        let huge_btree = c.addr()?;
        let _free = c.length()?;
        let _free_manager = c.addr()?;
        for _ in 0..8 {
            c.length()?;
        }
        let width = u64::from(c.u16()?);
        let start_block = c.length()?;
        let max_direct_block = c.length()?;
        let max_heap_bits = u32::from(c.u16()?);
        let _start_rows = c.u16()?;
        let root = c.addr()?;
        let root_rows = u64::from(c.u16()?);
        let mut pipeline = None;
        let mut root_filtered = (0, 0);
        if filter_len > 0 {
            // Stored size and mask of a filtered root direct block, then the pipeline.
            let full = fixed + sl + 4 + u64::from(filter_len) + 4;
            let img = file.read(WHAT, addr, full)?;
            file.verify_trailing(WHAT, addr, &img)?;
            let mut c = Cursor::new(&img, WHAT, addr, sizes);
            c.skip(fixed as usize)?;
            root_filtered = (c.length()?, c.u32()?);
            let raw = c.bytes(usize::from(filter_len))?;
            pipeline = Some(filters::decode(&mut Cursor::new(
                raw,
                "fractal heap I/O filters",
                addr,
                sizes,
            ))?);
        } else {
            file.verify_trailing(WHAT, addr, &first)?;
        }
        let pow2 = |v: u64| v != 0 && v & (v - 1) == 0;
        if !pow2(width) || !pow2(start_block) || !pow2(max_direct_block) {
            return Err(c.invalid("table width or block sizes not powers of two"));
        }
        if max_direct_block < start_block || !(1..=64).contains(&max_heap_bits) {
            return Err(c.invalid("inconsistent doubling table parameters"));
        }
        if id_len < 2 {
            return Err(c.invalid(format!("heap id length {id_len}")));
        }
        let first_row_bits = log2_floor(start_block) + log2_floor(width);
        let max_direct_rows = u64::from(log2_floor(max_direct_block) - log2_floor(start_block)) + 2;
        let heap_off_size = max_heap_bits.div_ceil(8) as usize;
        let dir_off_size = log2_floor(max_direct_block).div_ceil(8) as usize;
        let heap_len_size = dir_off_size.min(crate::decode::limit_enc_size(u64::from(max_managed)));
        // A huge object's address and length (plus filter mask and size when filtered) fit
        // in the id, or the id is a key into the huge object B-tree.
        let direct_len = if filter_len > 0 {
            so + sl + 4 + sl
        } else {
            so + sl
        };
        let (huge_direct, huge_id_size) = if direct_len < id_len as u64 {
            (true, direct_len as usize)
        } else {
            (false, (id_len - 1).min(8))
        };
        Ok(FractalHeap {
            address: addr,
            id_len,
            checksum_dblocks: flags & 0x02 != 0,
            huge_btree,
            width,
            start_block,
            max_direct_block,
            max_heap_bits,
            root,
            root_rows,
            max_direct_rows,
            first_row_bits,
            heap_off_size,
            heap_len_size,
            tiny_extended: id_len - 1 > 17,
            huge_direct,
            huge_id_size,
            pipeline,
            root_filtered,
            blocks: Mutex::new(HashMap::new()),
        })
    }

    fn row_block_size(&self, row: u64) -> Option<u64> {
        if row == 0 {
            Some(self.start_block)
        } else {
            self.start_block
                .checked_shl(u32::try_from(row - 1).ok()?)
                .filter(|&s| {
                    s != 0 && log2_floor(s) == log2_floor(self.start_block) + (row - 1) as u32
                })
        }
    }

    fn row_block_offset(&self, row: u64) -> Option<u64> {
        if row == 0 {
            Some(0)
        } else {
            let first = self.start_block.checked_mul(self.width)?;
            first
                .checked_shl(u32::try_from(row - 1).ok()?)
                .filter(|&s| s != 0 && log2_floor(s) == log2_floor(first) + (row - 1) as u32)
        }
    }

    /// Row and column of the block holding heap offset `off` in a doubling table.
    fn lookup(&self, off: u64) -> (u64, u64) {
        let first = self.start_block.saturating_mul(self.width);
        if off < first {
            (0, off / self.start_block)
        } else {
            let high = log2_floor(off);
            let row = u64::from(high - self.first_row_bits) + 1;
            let size = self.row_block_size(row).unwrap_or(u64::MAX);
            (row, (off - (1u64 << high)) / size)
        }
    }

    /// The object with heap id `id`.
    pub(crate) fn read_object(&self, file: &File, id: &[u8]) -> Result<Bytes> {
        let bad = |d: String| Error::invalid(WHAT, self.address, d);
        if id.len() < self.id_len {
            return Err(bad(format!(
                "heap id of {} bytes, expected {}",
                id.len(),
                self.id_len
            )));
        }
        let id = &id[..self.id_len];
        let flag = id[0];
        if flag & 0xc0 != 0 {
            return Err(bad(format!("heap id version {}", flag >> 6)));
        }
        match flag & 0x30 {
            0x00 => {
                let mut c = Cursor::new(&id[1..], "fractal heap id", self.address, file.sizes());
                let off = c.uint(self.heap_off_size)?;
                let len = c.uint(self.heap_len_size)?;
                self.managed(file, off, len)
            }
            0x10 => self.huge(file, &id[1..]),
            0x20 => {
                let (len, start) = if self.tiny_extended {
                    ((usize::from(flag & 0x0f) << 8 | usize::from(id[1])) + 1, 2)
                } else {
                    (usize::from(flag & 0x0f) + 1, 1)
                };
                id.get(start..start + len)
                    .map(Bytes::copy_from_slice)
                    .ok_or_else(|| bad(format!("tiny object of {len} bytes overflows its id")))
            }
            _ => Err(bad("reserved heap id type".into())),
        }
    }

    fn huge(&self, file: &File, rest: &[u8]) -> Result<Bytes> {
        const WHAT_HUGE: &str = "fractal heap huge object";
        let sizes = file.sizes();
        let filtered = self.pipeline.is_some();
        let mut c = Cursor::new(rest, "fractal heap huge object id", self.address, sizes);
        // (address, stored length, filter mask, size once unfiltered)
        let (addr, len, mask, size) = if self.huge_direct {
            let addr = c
                .addr()?
                .ok_or_else(|| c.invalid("undefined huge object address"))?;
            let len = c.length()?;
            if filtered {
                (addr, len, c.u32()?, c.length()?)
            } else {
                (addr, len, 0, len)
            }
        } else {
            let key = c.uint(self.huge_id_size)?;
            let bt_addr = self.huge_btree.ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    self.address,
                    "huge object without a huge object B-tree",
                )
            })?;
            let bt = BTreeV2::open(file, bt_addr, Some(if filtered { 2 } else { 1 }))?;
            let mut found = None;
            bt.for_each(file, &mut |rec| {
                let mut r = Cursor::new(rec, "huge object record", bt_addr, sizes);
                let addr = r.addr()?;
                let len = r.length()?;
                let (mask, size) = if filtered {
                    (r.u32()?, r.length()?)
                } else {
                    (0, len)
                };
                if r.length()? == key {
                    found = Some((addr.unwrap_or(u64::MAX), len, mask, size));
                    return Ok(ControlFlow::Break(()));
                }
                Ok(ControlFlow::Continue(()))
            })?;
            found.ok_or_else(|| {
                Error::invalid(WHAT, self.address, format!("no huge object with id {key}"))
            })?
        };
        let raw = file.read(WHAT_HUGE, addr, len)?;
        match &self.pipeline {
            None => Ok(raw),
            Some(p) => unfilter(p, mask, &raw, size, WHAT_HUGE, addr),
        }
    }

    fn cached(&self, key: (u64, u64, u64)) -> Option<Bytes> {
        lock(&self.blocks).get(&key).cloned()
    }

    fn remember(&self, key: (u64, u64, u64), b: &Bytes) {
        let mut cache = lock(&self.blocks);
        if cache.len() >= CACHE {
            cache.clear();
        }
        cache.insert(key, b.clone());
    }

    /// Bytes of an entry for a direct block (address, and the stored size and filter mask
    /// when the heap is filtered).
    fn direct_entry_len(&self, file: &File) -> u64 {
        let s = file.sizes();
        u64::from(s.offset)
            + if self.pipeline.is_some() {
                u64::from(s.length) + 4
            } else {
                0
            }
    }

    fn iblock_len(&self, file: &File, nrows: u64) -> Option<u64> {
        let so = u64::from(file.sizes().offset);
        let dir = nrows.min(self.max_direct_rows).checked_mul(self.width)?;
        let ind = nrows
            .saturating_sub(self.max_direct_rows)
            .checked_mul(self.width)?;
        (5 + so + self.heap_off_size as u64)
            .checked_add(dir.checked_mul(self.direct_entry_len(file))?)?
            .checked_add(ind.checked_mul(so)?)?
            .checked_add(4)
    }

    /// Position in an indirect block of the entry for (row, col), and whether it is a direct
    /// block entry.
    fn entry_pos(&self, file: &File, row: u64, col: u64) -> (usize, bool) {
        let so = u64::from(file.sizes().offset);
        let head = 5 + so + self.heap_off_size as u64;
        if row < self.max_direct_rows {
            let e = row * self.width + col;
            ((head + e * self.direct_entry_len(file)) as usize, true)
        } else {
            let dir = self.max_direct_rows * self.width * self.direct_entry_len(file);
            let e = (row - self.max_direct_rows) * self.width + col;
            ((head + dir + e * so) as usize, false)
        }
    }

    /// Checks the fields of a block after its signature and version: the address of this
    /// heap's header and the block's heap offset, which must be `block_off`.
    fn check_block(&self, c: &mut Cursor, block_off: u64) -> Result<()> {
        if c.addr()? != Some(self.address) {
            return Err(c.invalid("block belongs to another heap"));
        }
        let off = c.uint(self.heap_off_size)?;
        if off != block_off {
            return Err(c.invalid(format!("block offset {off}, expected {block_off}")));
        }
        Ok(())
    }

    /// Reads an indirect block of `nrows` rows at `addr`, expected at heap offset `block_off`.
    fn iblock(&self, file: &File, addr: u64, nrows: u64, block_off: u64) -> Result<Bytes> {
        let len = self
            .iblock_len(file, nrows)
            .ok_or_else(|| Error::invalid(WHAT_IB, addr, "block size overflows"))?;
        if let Some(img) = self.cached((addr, block_off, len)) {
            return Ok(img);
        }
        let img = file.read_signed(WHAT_IB, addr, len, "FHIB", 0)?;
        let mut c = Cursor::new(&img, WHAT_IB, addr, file.sizes());
        c.skip(SIGNED_PREFIX)?;
        self.check_block(&mut c, block_off)?;
        // Prefetch this block's direct blocks: lookups of neighbouring objects follow.
        let dir_rows = nrows.min(self.max_direct_rows);
        let mut ranges = Vec::new();
        for row in 0..dir_rows {
            let size = self.row_block_size(row).unwrap_or(0);
            for col in 0..self.width {
                if let Ok(Some((a, stored))) = self.direct_entry(file, &img, addr, row, col) {
                    let len = stored.map_or(size, |(n, _)| n);
                    ranges.push(a..a.saturating_add(len));
                }
            }
        }
        file.prefetch(&ranges);
        self.remember((addr, block_off, len), &img);
        Ok(img)
    }

    /// Reads and checks the direct block at `addr` (heap offset `block_off`); returns it with
    /// the length of its header.
    fn dblock(
        &self,
        file: &File,
        addr: u64,
        size: u64,
        block_off: u64,
        stored: Option<(u64, u32)>,
    ) -> Result<(Bytes, usize)> {
        let header = 5
            + usize::from(file.sizes().offset)
            + self.heap_off_size
            + if self.checksum_dblocks { 4 } else { 0 };
        if let Some(img) = self.cached((addr, block_off, size)) {
            return Ok((img, header));
        }
        let img = match (&self.pipeline, stored) {
            (Some(p), Some((n, mask))) => {
                let raw = file.read(WHAT_DB, addr, n)?;
                unfilter(p, mask, &raw, size, WHAT_DB, addr)?
            }
            _ => file.read(WHAT_DB, addr, size)?,
        };
        let mut c = Cursor::new(&img, WHAT_DB, addr, file.sizes());
        c.prefix("FHDB", 0)?;
        self.check_block(&mut c, block_off)?;
        if self.checksum_dblocks && !file.verifies_checksums() {
            c.u32()?;
        } else if self.checksum_dblocks {
            let at = c.pos();
            let stored = c.u32()?;
            let mut copy = img.to_vec();
            copy[at..at + 4].fill(0);
            let computed = checksum::lookup3(&copy, 0);
            if stored != computed {
                return Err(Error::Checksum {
                    structure: WHAT_DB,
                    address: addr,
                    stored,
                    computed,
                });
            }
        }
        debug_assert_eq!(c.pos(), header);
        self.remember((addr, block_off, size), &img);
        Ok((img, header))
    }

    /// The direct block entry (row, col) of an indirect block image: its address, and its
    /// stored size and filter mask when the heap is filtered. `None` for an unused entry.
    #[allow(clippy::type_complexity)]
    fn direct_entry(
        &self,
        file: &File,
        img: &[u8],
        iaddr: u64,
        row: u64,
        col: u64,
    ) -> Result<Option<(u64, Option<(u64, u32)>)>> {
        let (pos, _) = self.entry_pos(file, row, col);
        let len = self.direct_entry_len(file) as usize;
        let raw = img
            .get(pos..pos + len)
            .ok_or_else(|| Error::invalid(WHAT_IB, iaddr, "entry outside the block"))?;
        let mut c = Cursor::new(raw, WHAT_IB, iaddr, file.sizes());
        let Some(a) = c.addr()? else {
            return Ok(None);
        };
        let stored = if self.pipeline.is_some() {
            Some((c.length()?, c.u32()?))
        } else {
            None
        };
        Ok(Some((a, stored)))
    }

    fn managed(&self, file: &File, off: u64, len: u64) -> Result<Bytes> {
        let root = self
            .root
            .ok_or_else(|| Error::invalid(WHAT, self.address, "managed object in an empty heap"))?;
        let max_off = if self.max_heap_bits >= 64 {
            u64::MAX
        } else {
            1u64 << self.max_heap_bits
        };
        if off >= max_off {
            return Err(Error::invalid(
                WHAT,
                self.address,
                format!("heap offset {off} out of range"),
            ));
        }
        let so = usize::from(file.sizes().offset);
        let root_stored = self.pipeline.as_ref().map(|_| self.root_filtered);
        let (dblock_addr, dblock_size, dblock_off, stored) = if self.root_rows == 0 {
            (root, self.start_block, 0, root_stored)
        } else {
            let mut iaddr = root;
            let mut nrows = self.root_rows;
            let mut ioff = 0u64;
            let mut rel = off;
            let mut depth = 0;
            loop {
                let (row, col) = self.lookup(rel);
                if row >= nrows || col >= self.width {
                    return Err(Error::invalid(
                        WHAT_IB,
                        iaddr,
                        format!("heap offset {off} beyond the block's {nrows} rows"),
                    ));
                }
                let img = self.iblock(file, iaddr, nrows, ioff)?;
                let none =
                    || Error::invalid(WHAT_IB, iaddr, format!("no block holds heap offset {off}"));
                let (child, stored) = if row < self.max_direct_rows {
                    self.direct_entry(file, &img, iaddr, row, col)?
                        .ok_or_else(none)?
                } else {
                    let (pos, _) = self.entry_pos(file, row, col);
                    let raw = img
                        .get(pos..pos + so)
                        .ok_or_else(|| Error::invalid(WHAT_IB, iaddr, "entry outside the block"))?;
                    let a = crate::decode::decode_addr(raw, file.sizes().base)
                        .flatten()
                        .ok_or_else(none)?;
                    (a, None)
                };
                let size = self
                    .row_block_size(row)
                    .ok_or_else(|| Error::invalid(WHAT_IB, iaddr, "row block size overflows"))?;
                let child_off = self
                    .row_block_offset(row)
                    .and_then(|o| o.checked_add(size.checked_mul(col)?))
                    .ok_or_else(|| Error::invalid(WHAT_IB, iaddr, "block offset overflows"))?;
                if row < self.max_direct_rows {
                    break (child, size, ioff.saturating_add(child_off), stored);
                }
                depth += 1;
                if depth > MAX_IBLOCK_DEPTH {
                    return Err(Error::limit(
                        WHAT_IB,
                        iaddr,
                        "indirect blocks nested too deep",
                    ));
                }
                let child_rows =
                    u64::from(log2_floor(size)).saturating_sub(u64::from(self.first_row_bits)) + 1;
                if child_rows >= nrows {
                    return Err(Error::invalid(
                        WHAT_IB,
                        child,
                        "child indirect block not smaller than its parent",
                    ));
                }
                iaddr = child;
                nrows = child_rows;
                ioff = ioff.saturating_add(child_off);
                rel = rel.checked_sub(child_off).ok_or_else(|| {
                    Error::invalid(WHAT_IB, iaddr, "heap offset before its block")
                })?;
            }
        };
        if dblock_size > self.max_direct_block {
            return Err(Error::invalid(
                WHAT_DB,
                dblock_addr,
                "direct block larger than the heap allows",
            ));
        }
        let (img, header) = self.dblock(file, dblock_addr, dblock_size, dblock_off, stored)?;
        let start = off
            .checked_sub(dblock_off)
            .ok_or_else(|| Error::invalid(WHAT_DB, dblock_addr, "heap offset before its block"))?;
        let end = start.checked_add(len);
        match end {
            Some(end) if start >= header as u64 && end <= dblock_size => {
                Ok(img.slice(start as usize..end as usize))
            }
            _ => Err(Error::invalid(
                WHAT_DB,
                dblock_addr,
                format!("object at heap offset {off} with {len} bytes outside the block"),
            )),
        }
    }
}

/// Undoes the filters of `pipeline` not skipped by `mask` (in reverse order) on `raw`, which
/// must give exactly `size` bytes.
fn unfilter(
    pipeline: &FilterPipeline,
    mask: u32,
    raw: &[u8],
    size: u64,
    what: &'static str,
    addr: u64,
) -> Result<Bytes> {
    let size = usize::try_from(size)
        .ok()
        .filter(|&n| n as u64 <= crate::file::MAX_READ)
        .ok_or_else(|| Error::limit(what, addr, format!("unfiltered size {size}")))?;
    let bad = |e: &str| Error::invalid(what, addr, format!("cannot unfilter: {e}"));
    let mut data = raw.to_vec();
    for (i, f) in pipeline.filters.iter().enumerate().rev() {
        if i < 32 && mask & (1 << i) != 0 {
            continue;
        }
        data = match f.id {
            1 => crate::inflate::zlib_decompress(&data, size).map_err(bad)?,
            2 => {
                let es = f.client_data.first().map_or(1, |&e| e as usize);
                crate::inflate::unshuffle(&data, es)
            }
            3 => crate::inflate::fletcher32_strip(&data).map_err(bad)?,
            id => {
                return Err(Error::unsupported(
                    what,
                    addr,
                    format!("heap block filtered with filter {id}"),
                ));
            }
        };
    }
    if data.len() != size {
        return Err(bad(&format!("{} bytes instead of {size}", data.len())));
    }
    Ok(Bytes::from(data))
}
