//! Version 1 B-trees (`TREE`): node type 0 indexes the symbol nodes of an old-style group,
//! node type 1 indexes the raw data chunks of a dataset (HDF5 File Format Specification 3.0,
//! section III.A.1 "Disk Format: Level 1A1 - Version 1 B-trees").
//!
//! The walk goes level by level (breadth first), prefetching the nodes of each level, and
//! checks that every node has the level its parent implies, so that a corrupt tree can
//! neither loop nor revisit a node.

use std::collections::HashSet;
use std::ops::{ControlFlow, Range};

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::{File, expect_signature};

const WHAT: &str = "v1 B-tree node";
/// Nodes of one level prefetched together.
const WINDOW: usize = 2048;

/// The callback of [`walk_leaves`]: a leaf entry's key and child address.
pub(crate) type LeafFn<'a> = dyn FnMut(&[u8], u64) -> Result<ControlFlow<()>> + 'a;

/// Walks the leaves of the v1 B-tree rooted at `root`, calling `f(key, child)` for every
/// entry of every leaf node, left to right. `key` is the key before the child (its
/// `key_size` bytes); `child` the child's absolute file offset. Stops when `f` breaks.
pub(crate) fn walk_leaves(
    file: &File,
    root: u64,
    node_type: u8,
    key_size: usize,
    k: u16,
    f: &mut LeafFn,
) -> Result<()> {
    let sizes = file.sizes();
    let so = usize::from(sizes.offset);
    let header = 8 + 2 * so;
    let entry = key_size + so;
    // A node holds at most 2K entries and 2K+1 keys.
    let full = (header + (2 * usize::from(k)) * entry + key_size) as u64;
    let mut seen: HashSet<u64> = HashSet::new();
    let mut level: Vec<u64> = vec![root];
    let mut expect_level: Option<u8> = None;
    while !level.is_empty() {
        let mut next: Vec<u64> = Vec::new();
        let mut this_level: Option<u8> = None;
        for (i, &addr) in level.iter().enumerate() {
            if i % WINDOW == 0 && level.len() > 1 {
                let end = (i + WINDOW).min(level.len());
                let ranges: Vec<Range<u64>> = level[i..end]
                    .iter()
                    .map(|&a| a..a.saturating_add(full).min(file.size()))
                    .collect();
                file.prefetch(&ranges);
            }
            if !seen.insert(addr) {
                return Err(Error::Cycle {
                    structure: WHAT,
                    address: addr,
                    from: root,
                });
            }
            let mut img = file.read_upto(WHAT, addr, full)?;
            expect_signature(WHAT, addr, &img, "TREE")?;
            let mut c = Cursor::new(&img, WHAT, addr, sizes);
            c.skip(4)?;
            let t = c.u8()?;
            if t != node_type {
                return Err(c.invalid(format!("node type {t}, expected {node_type}")));
            }
            let lvl = c.u8()?;
            match expect_level.or(this_level) {
                Some(e) if e != lvl => {
                    return Err(c.invalid(format!("node of level {lvl} where level {e} belongs")));
                }
                _ => this_level = Some(lvl),
            }
            let n = usize::from(c.u16()?);
            let need = header + n * entry + key_size;
            if need > img.len() {
                // More entries than K allows: read what the node claims, if the file has it.
                img = file.read(WHAT, addr, need as u64)?;
            }
            let mut c = Cursor::new(&img, WHAT, addr, sizes);
            c.skip(header)?;
            if lvl == 0 {
                for _ in 0..n {
                    let key = c.bytes(key_size)?;
                    let child = c
                        .addr()?
                        .ok_or_else(|| c.invalid("undefined child address"))?;
                    if f(key, child)?.is_break() {
                        return Ok(());
                    }
                }
            } else {
                next.reserve(n);
                for _ in 0..n {
                    c.skip(key_size)?;
                    let child = c
                        .addr()?
                        .ok_or_else(|| c.invalid("undefined child address"))?;
                    next.push(child);
                }
            }
        }
        expect_level = match this_level {
            Some(0) | None => break,
            Some(l) => Some(l - 1),
        };
        level = next;
    }
    Ok(())
}
