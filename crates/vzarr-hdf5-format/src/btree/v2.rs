//! Version 2 B-trees (`BTHD`, `BTIN`, `BTLF`) (HDF5 File Format Specification 3.0, section
//! III.A.2 "Disk Format: Level 1A2 - Version 2 B-trees").
//!
//! Records are handed out in key order (an in-order walk, as the library iterates), while the
//! nodes are read level by level: every internal level is read (and prefetched) before the
//! next, then the leaves are read in order with windowed prefetches. Each node's checksum is
//! verified; each node may be reached once only; depths are checked.

use std::collections::HashSet;
use std::ops::{ControlFlow, Range};

use bytes::Bytes;

use crate::decode::{Cursor, limit_enc_size};
use crate::error::{Error, Result};
use crate::file::{File, SIGNED_PREFIX, expect_signature};

const WHAT_HDR: &str = "v2 B-tree header";
const WHAT_INT: &str = "v2 B-tree internal node";
const WHAT_LEAF: &str = "v2 B-tree leaf node";
/// Deepest tree accepted (a tree this deep would hold more records than any file).
const MAX_DEPTH: u16 = 48;
/// Leaves prefetched together.
const WINDOW: usize = 2048;

/// An opened v2 B-tree (its header).
#[derive(Clone, Debug)]
pub(crate) struct BTreeV2 {
    pub address: u64,
    pub tree_type: u8,
    pub node_size: u32,
    pub record_size: u16,
    pub depth: u16,
    pub root: Option<u64>,
    pub root_records: u16,
    /// Most records per node, per depth (0 = leaf).
    max_records: Vec<u64>,
    /// Bytes of the "records in child" field.
    nrec_size: usize,
    /// Bytes of the "records in subtree" field of a child at each depth.
    cum_size: Vec<usize>,
}

struct Internal {
    records: Bytes,
    nrec: usize,
    /// Index of the first child in the next level's node list.
    first_child: usize,
}

impl BTreeV2 {
    /// Reads the header at `addr`, checking the record type when `tree_type` is given.
    pub(crate) fn open(file: &File, addr: u64, tree_type: Option<u8>) -> Result<BTreeV2> {
        let sizes = file.sizes();
        let len = 4
            + 1
            + 1
            + 4
            + 2
            + 2
            + 1
            + 1
            + u64::from(sizes.offset)
            + 2
            + u64::from(sizes.length)
            + 4;
        let img = file.read_signed(WHAT_HDR, addr, len, "BTHD", 0)?;
        let mut c = Cursor::new(&img, WHAT_HDR, addr, sizes);
        c.skip(SIGNED_PREFIX)?;
        let t = c.u8()?;
        if let Some(want) = tree_type
            && t != want
        {
            return Err(c.invalid(format!("record type {t}, expected {want}")));
        }
        let node_size = c.u32()?;
        let record_size = c.u16()?;
        let depth = c.u16()?;
        let _split = c.u8()?;
        let _merge = c.u8()?;
        let root = c.addr()?;
        let root_records = c.u16()?;
        let _total_records = c.length()?;
        if record_size == 0 {
            return Err(c.invalid("record size 0"));
        }
        if depth > MAX_DEPTH {
            return Err(Error::limit(WHAT_HDR, addr, format!("depth {depth}")));
        }
        let ns = u64::from(node_size);
        let rs = u64::from(record_size);
        if ns < 10 + rs {
            return Err(c.invalid(format!("node size {node_size} holds no record")));
        }
        let leaf_max = (ns - 10) / rs;
        let nrec_size = limit_enc_size(leaf_max);
        let mut max_records = vec![leaf_max];
        let mut cum = vec![leaf_max];
        let mut cum_size = vec![0usize];
        let so = u64::from(sizes.offset);
        for d in 1..=usize::from(depth) {
            let ptr = so + nrec_size as u64 + cum_size[d - 1] as u64;
            let max = ns.saturating_sub(10 + ptr) / (rs + ptr);
            if max == 0 {
                return Err(c.invalid(format!("node size {node_size} too small at depth {d}")));
            }
            let cm = max
                .saturating_add(1)
                .saturating_mul(cum[d - 1])
                .saturating_add(max);
            max_records.push(max);
            cum.push(cm);
            cum_size.push(limit_enc_size(cm));
        }
        Ok(BTreeV2 {
            address: addr,
            tree_type: t,
            node_size,
            record_size,
            depth,
            root,
            root_records,
            max_records,
            nrec_size,
            cum_size,
        })
    }

    fn read_node(
        &self,
        file: &File,
        addr: u64,
        depth: usize,
        nrec: usize,
        seen: &mut HashSet<u64>,
    ) -> Result<Bytes> {
        let what = if depth == 0 { WHAT_LEAF } else { WHAT_INT };
        if !seen.insert(addr) {
            return Err(Error::Cycle {
                structure: what,
                address: addr,
                from: self.address,
            });
        }
        if nrec as u64 > self.max_records[depth] {
            return Err(Error::invalid(
                what,
                addr,
                format!(
                    "{nrec} records, more than a node of depth {depth} holds ({})",
                    self.max_records[depth]
                ),
            ));
        }
        let img = file.read(what, addr, u64::from(self.node_size))?;
        expect_signature(what, addr, &img, if depth == 0 { "BTLF" } else { "BTIN" })?;
        if img[4] != 0 {
            return Err(Error::Version {
                structure: what,
                address: addr,
                version: img[4],
            });
        }
        if img[5] != self.tree_type {
            return Err(Error::invalid(
                what,
                addr,
                format!("record type {}, expected {}", img[5], self.tree_type),
            ));
        }
        let ptr = self.ptr_size(file, depth);
        let covered =
            6 + nrec * usize::from(self.record_size) + if depth > 0 { (nrec + 1) * ptr } else { 0 };
        if covered + 4 > img.len() {
            return Err(Error::invalid(what, addr, "records overflow the node"));
        }
        file.verify(what, addr, &img[..covered], &img[covered..covered + 4])?;
        Ok(img)
    }

    fn ptr_size(&self, file: &File, depth: usize) -> usize {
        if depth == 0 {
            0
        } else {
            usize::from(file.sizes().offset) + self.nrec_size + self.cum_size[depth - 1]
        }
    }

    /// Calls `f` with every record, in key order, until it breaks.
    pub(crate) fn for_each(
        &self,
        file: &File,
        f: &mut dyn FnMut(&[u8]) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let Some(root) = self.root else {
            return Ok(());
        };
        if self.root_records == 0 {
            return Ok(());
        }
        let rs = usize::from(self.record_size);
        let depth = usize::from(self.depth);
        let mut seen = HashSet::new();
        // Internal levels, top down: nodes with their records and first child index.
        let mut levels: Vec<Vec<Internal>> = Vec::with_capacity(depth);
        let mut current: Vec<(u64, usize)> = vec![(root, usize::from(self.root_records))];
        for d in (1..=depth).rev() {
            let ranges: Vec<Range<u64>> = current
                .iter()
                .map(|&(a, _)| a..a.saturating_add(u64::from(self.node_size)))
                .collect();
            file.prefetch(&ranges);
            let ptr = self.ptr_size(file, d);
            let mut nodes = Vec::with_capacity(current.len());
            let mut next: Vec<(u64, usize)> = Vec::new();
            for &(addr, nrec) in &current {
                let img = self.read_node(file, addr, d, nrec, &mut seen)?;
                let rec_end = 6 + nrec * rs;
                let mut c = Cursor::new(&img[rec_end..], WHAT_INT, addr, file.sizes());
                let first_child = next.len();
                for _ in 0..=nrec {
                    let child = c
                        .addr()?
                        .ok_or_else(|| Error::invalid(WHAT_INT, addr, "undefined child address"))?;
                    let n = c.uint(self.nrec_size)? as usize;
                    if d > 1 {
                        c.skip(self.cum_size[d - 1])?;
                    }
                    next.push((child, n));
                }
                debug_assert_eq!(c.pos(), (nrec + 1) * ptr);
                nodes.push(Internal {
                    records: img.slice(6..rec_end),
                    nrec,
                    first_child,
                });
            }
            levels.push(nodes);
            current = next;
        }
        // `current` now lists the leaves, left to right.
        let leaves = current;
        let mut walker = Walker {
            tree: self,
            file,
            levels: &levels,
            leaves: &leaves,
            seen,
            prefetched: 0,
        };
        if depth == 0 {
            let _ = walker.leaf(0, f)?;
        } else {
            let _ = walker.subtree(0, 0, f)?;
        }
        Ok(())
    }
}

struct Walker<'a> {
    tree: &'a BTreeV2,
    file: &'a File,
    levels: &'a [Vec<Internal>],
    leaves: &'a [(u64, usize)],
    seen: HashSet<u64>,
    prefetched: usize,
}

impl Walker<'_> {
    fn leaf(
        &mut self,
        i: usize,
        f: &mut dyn FnMut(&[u8]) -> Result<ControlFlow<()>>,
    ) -> Result<ControlFlow<()>> {
        let &(addr, nrec) = self
            .leaves
            .get(i)
            .ok_or_else(|| Error::invalid(WHAT_HDR, self.tree.address, "missing leaf"))?;
        if i >= self.prefetched && self.leaves.len() > 1 {
            let end = (i + WINDOW).min(self.leaves.len());
            let ranges: Vec<Range<u64>> = self.leaves[i..end]
                .iter()
                .map(|&(a, _)| a..a.saturating_add(u64::from(self.tree.node_size)))
                .collect();
            self.file.prefetch(&ranges);
            self.prefetched = end;
        }
        let img = self
            .tree
            .read_node(self.file, addr, 0, nrec, &mut self.seen)?;
        let rs = usize::from(self.tree.record_size);
        for r in 0..nrec {
            if f(&img[6 + r * rs..6 + (r + 1) * rs])?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// In-order walk of node `idx` of internal level `lvl` (0 = root level).
    fn subtree(
        &mut self,
        lvl: usize,
        idx: usize,
        f: &mut dyn FnMut(&[u8]) -> Result<ControlFlow<()>>,
    ) -> Result<ControlFlow<()>> {
        let node = &self.levels[lvl][idx];
        let rs = usize::from(self.tree.record_size);
        let (records, nrec, first) = (node.records.clone(), node.nrec, node.first_child);
        for r in 0..=nrec {
            let child = first + r;
            let flow = if lvl + 1 == self.levels.len() {
                self.leaf(child, f)?
            } else {
                self.subtree(lvl + 1, child, f)?
            };
            if flow.is_break() {
                return Ok(flow);
            }
            if r < nrec && f(&records[r * rs..(r + 1) * rs])?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}
