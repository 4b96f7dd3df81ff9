//! Groups: listing the links of the three kinds of groups, resolving paths, and walking the
//! file to name every object (HDF5 File Format Specification 3.0, section IV.A "Disk Format:
//! Level 2A - Data Object Headers" for the group messages; old-style groups: section III.A.1
//! (v1 B-tree, node type 0), III.B "Disk Format: Level 1B - Group Symbol Table Nodes",
//! III.C "Symbol Table Entry" and III.D (local heap); compact groups: link messages in the object header; dense groups:
//! link info message, fractal heap (III.G) and v2 B-tree record types 5 and 6 (III.A.2)).
//!
//! Links come out in name order (bytewise, as `H5Literate2` with `H5_INDEX_NAME` and
//! `H5_ITER_INC` gives them), whatever the storage; [`File::links_in_file_order`] gives them
//! in creation order where the group tracks it (`H5_INDEX_CRT_ORDER`).

use std::collections::HashMap;
use std::ops::{ControlFlow, Range};

use crate::btree::v1;
use crate::btree::v2::BTreeV2;
use crate::decode::Cursor;
use crate::error::{Error, Result, ResultExt};
use crate::file::File;
use crate::heap::fractal::FractalHeap;
use crate::heap::local;
use crate::messages::datatype::CharacterSet;
use crate::messages::link::{self, Link, LinkInfo, LinkTarget, SymbolTable};
use crate::messages::{decode_first, msg};
use crate::object_header::ObjectHeader;

/// Soft links followed while resolving one path (the library's default `H5L_NUM_LINKS`).
pub const MAX_SOFT_LINKS: u32 = 16;
/// Symbol table nodes prefetched together.
const WINDOW: usize = 256;

/// What an object header describes (as the library's `H5O_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A group (symbol table, link info or link messages present).
    Group,
    /// A dataset (datatype and dataspace present).
    Dataset,
    /// A named (committed) datatype (datatype only).
    NamedDatatype,
    /// Anything else.
    Other,
}

/// How a group stores its links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupStorage {
    /// Old style: symbol table (v1 B-tree of symbol nodes and a local heap).
    SymbolTable(SymbolTable),
    /// Link messages in the object header.
    Compact,
    /// A fractal heap with a v2 B-tree name index.
    Dense(LinkInfo),
}

/// The path of every object reachable from the root, from one walk of the file.
#[derive(Debug, Default)]
pub struct ObjectPaths {
    /// Absolute path (`/` for the root) by object header address: the first path found in a
    /// depth-first walk in name order, as `H5Ovisit` with the name index finds it.
    pub by_address: HashMap<u64, String>,
    /// Groups whose links could not be read: their path and the error. The walk goes on
    /// past them.
    pub errors: Vec<(String, Error)>,
}

const WHAT_SNOD: &str = "symbol table node";

impl File {
    /// What the object header `oh` describes.
    pub fn object_kind(&self, oh: &ObjectHeader) -> ObjectKind {
        if oh.has(msg::SYMBOL_TABLE) || oh.has(msg::LINK_INFO) || oh.has(msg::LINK) {
            ObjectKind::Group
        } else if oh.has(msg::DATATYPE) && oh.has(msg::DATASPACE) {
            ObjectKind::Dataset
        } else if oh.has(msg::DATATYPE) {
            ObjectKind::NamedDatatype
        } else {
            ObjectKind::Other
        }
    }

    /// The group info message of `oh`, if any.
    pub fn group_info(&self, oh: &ObjectHeader) -> Result<Option<link::GroupInfo>> {
        decode_first(self, oh, msg::GROUP_INFO, "group info message", |c, _| {
            link::decode_group_info(c)
        })
    }

    /// How the group `oh` stores its links; `None` if it is not a group.
    pub fn group_storage(&self, oh: &ObjectHeader) -> Result<Option<GroupStorage>> {
        if let Some(st) = decode_first(
            self,
            oh,
            msg::SYMBOL_TABLE,
            "symbol table message",
            |c, _| link::decode_symbol_table(c),
        )? {
            return Ok(Some(GroupStorage::SymbolTable(st)));
        }
        if let Some(li) = decode_first(self, oh, msg::LINK_INFO, "link info message", |c, _| {
            link::decode_link_info(c)
        })? {
            return Ok(Some(if li.heap_address.is_some() {
                GroupStorage::Dense(li)
            } else {
                GroupStorage::Compact
            }));
        }
        Ok(oh.has(msg::LINK).then_some(GroupStorage::Compact))
    }

    /// The links of the group `oh`, in name order.
    pub fn links(&self, oh: &ObjectHeader) -> Result<Vec<Link>> {
        let storage = self
            .group_storage(oh)?
            .ok_or_else(|| Error::invalid("object header", oh.address, "not a group"))?;
        let mut links = match storage {
            GroupStorage::SymbolTable(st) => self
                .symbol_table_links(&st)
                .within("symbol table of the group", oh.address)?,
            GroupStorage::Compact => {
                let mut out = Vec::new();
                for m in oh.find_all(msg::LINK) {
                    let (data, addr) = crate::messages::body(self, msg::LINK, m)?;
                    let mut c = Cursor::new(&data, "link message", addr, self.sizes());
                    out.push(link::decode_link(&mut c)?);
                }
                out
            }
            GroupStorage::Dense(li) => self
                .dense_links(&li)
                .within("dense link storage of the group", oh.address)?,
        };
        links.sort_by(|a, b| a.name_bytes.cmp(&b.name_bytes));
        Ok(links)
    }

    /// The links of the group `oh` in the order the HDF5 library lists them for a reader that
    /// asks for the file's order (h5py's and netCDF-C's iteration): by creation order where
    /// the group tracks it (its link info message says so and every link carries its
    /// creation index, as in netCDF-4 files and h5py's `track_order=True`), else in name
    /// order (old-style groups, and new-style ones that do not track it).
    pub fn links_in_file_order(&self, oh: &ObjectHeader) -> Result<Vec<Link>> {
        let mut links = self.links(oh)?;
        let tracked = decode_first(self, oh, msg::LINK_INFO, "link info message", |c, _| {
            link::decode_link_info(c)
        })?
        .is_some_and(|li| li.track_creation_order);
        if tracked && links.iter().all(|l| l.creation_order.is_some()) {
            // Stable: links of equal indexes (a corrupt file) stay in name order.
            links.sort_by_key(|l| l.creation_order);
        }
        Ok(links)
    }

    /// The link called `name` in the group `oh`, if any. In dense groups only the heap objects
    /// whose name hash matches are read.
    pub fn find_link(&self, oh: &ObjectHeader, name: &[u8]) -> Result<Option<Link>> {
        if let Some(GroupStorage::Dense(li)) = self.group_storage(oh)? {
            return self
                .dense_links_matching(&li, Some(name))
                .map(|v| v.into_iter().find(|l| l.name_bytes == name))
                .within("dense link storage of the group", oh.address);
        }
        Ok(self.links(oh)?.into_iter().find(|l| l.name_bytes == name))
    }

    fn symbol_table_links(&self, st: &SymbolTable) -> Result<Vec<Link>> {
        let sb = self.superblock();
        let sizes = self.sizes();
        let (so, sl) = (u64::from(sizes.offset), u64::from(sizes.length));
        // The B-tree root and the heap header are usually read together.
        let node_len = 8 + 2 * so + (2 * u64::from(sb.group_internal_k) + 1) * (sl + so);
        self.prefetch(&[
            st.btree_address..st.btree_address.saturating_add(node_len),
            st.heap_address..st.heap_address.saturating_add(local::header_len(self)),
        ]);
        let heap = local::read(self, st.heap_address)?;
        let mut snods: Vec<u64> = Vec::new();
        v1::walk_leaves(
            self,
            st.btree_address,
            0,
            sl as usize,
            sb.group_internal_k,
            &mut |_, child| {
                snods.push(child);
                Ok(ControlFlow::Continue(()))
            },
        )?;
        let entry = (sl + so + 24) as usize;
        let full = 8 + 2 * u64::from(sb.group_leaf_k) * entry as u64;
        let mut links = Vec::new();
        for (i, &addr) in snods.iter().enumerate() {
            if i % WINDOW == 0 && snods.len() > 1 {
                let end = (i + WINDOW).min(snods.len());
                let ranges: Vec<Range<u64>> = snods[i..end]
                    .iter()
                    .map(|&a| a..a.saturating_add(full))
                    .collect();
                self.prefetch(&ranges);
            }
            let mut img = self.read_upto(WHAT_SNOD, addr, full)?;
            let mut c = Cursor::new(&img, WHAT_SNOD, addr, sizes);
            c.prefix("SNOD", 1)?;
            c.skip(1)?;
            let n = usize::from(c.u16()?);
            let need = 8 + n * entry;
            if need > img.len() {
                img = self.read(WHAT_SNOD, addr, need as u64)?;
            }
            let mut c = Cursor::new(&img, WHAT_SNOD, addr, sizes);
            c.skip(8)?;
            for _ in 0..n {
                let name_off = c.length()?;
                let header = c.addr()?;
                let cache_type = c.u32()?;
                c.skip(4)?;
                let scratch = c.bytes(16)?;
                let name = heap.string_at(name_off)?.to_vec();
                let target = if cache_type == 2 {
                    // A soft link: the scratch pad holds the offset of its value in the heap.
                    let off = u32::from_le_bytes([scratch[0], scratch[1], scratch[2], scratch[3]]);
                    LinkTarget::Soft(
                        String::from_utf8_lossy(heap.string_at(u64::from(off))?).into_owned(),
                    )
                } else {
                    LinkTarget::Hard(header.ok_or_else(|| {
                        c.invalid("symbol table entry with an undefined object header address")
                    })?)
                };
                links.push(Link {
                    name: String::from_utf8_lossy(&name).into_owned(),
                    name_bytes: name,
                    creation_order: None,
                    charset: CharacterSet::Ascii,
                    target,
                });
            }
        }
        Ok(links)
    }

    fn dense_links(&self, li: &LinkInfo) -> Result<Vec<Link>> {
        self.dense_links_matching(li, None)
    }

    /// Links of a dense group; with `only`, just those whose name hash matches it.
    fn dense_links_matching(&self, li: &LinkInfo, only: Option<&[u8]>) -> Result<Vec<Link>> {
        let want = only.map(|n| crate::checksum::lookup3(n, 0));
        let (heap_addr, bt_addr) = li.heap_and_name_index("link info message")?;
        let heap = FractalHeap::open(self, heap_addr)?;
        let bt = BTreeV2::open(self, bt_addr, Some(5))?;
        let sizes = self.sizes();
        let mut links = Vec::new();
        bt.for_each(self, &mut |rec| {
            if let Some(h) = want
                && rec.get(..4) != Some(&h.to_le_bytes()[..])
            {
                return Ok(ControlFlow::Continue(()));
            }
            let id = rec.get(4..).unwrap_or_default();
            let obj = heap.read_object(self, id)?;
            let mut c = Cursor::new(&obj, "link message in fractal heap", heap_addr, sizes);
            links.push(link::decode_link(&mut c)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(links)
    }

    /// Prefetches the first bytes of the object headers hard links point at.
    pub(crate) fn prefetch_headers(&self, links: &[Link]) {
        let ranges: Vec<Range<u64>> = links
            .iter()
            .filter_map(|l| match l.target {
                LinkTarget::Hard(a) => Some(a..a.saturating_add(crate::object_header::FIRST_READ)),
                _ => None,
            })
            .collect();
        self.prefetch(&ranges);
    }

    /// The object header address a path leads to, from the root (a leading `/` is optional;
    /// `.` and empty components are skipped). Soft links are followed, at most
    /// [`MAX_SOFT_LINKS`] of them, relative to the group holding the link or from the root
    /// when absolute; external and user-defined links are errors.
    pub fn resolve_path(&self, path: &str) -> Result<u64> {
        let mut budget = MAX_SOFT_LINKS;
        self.resolve_from(self.root_address(), path, &mut budget)
            .map_err(|e| match e {
                e @ Error::Path { .. } => e,
                e => Error::Path {
                    path: path.to_string(),
                    detail: "the file structure along it cannot be read".into(),
                    source: Some(Box::new(e)),
                },
            })
    }

    fn resolve_from(&self, start: u64, path: &str, budget: &mut u32) -> Result<u64> {
        let mut cur = if path.starts_with('/') {
            self.root_address()
        } else {
            start
        };
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        for (i, part) in parts.iter().enumerate() {
            let oh = self.object_header(cur)?;
            if self.object_kind(&oh) != ObjectKind::Group {
                return Err(Error::Path {
                    path: path.to_string(),
                    detail: format!("{:?} is not a group", parts[..i].join("/")),
                    source: None,
                });
            }
            let link = self
                .find_link(&oh, part.as_bytes())?
                .ok_or_else(|| Error::Path {
                    path: path.to_string(),
                    detail: format!("no link {part:?}"),
                    source: None,
                })?;
            cur = match &link.target {
                LinkTarget::Hard(a) => *a,
                LinkTarget::Soft(target) => {
                    if *budget == 0 {
                        return Err(Error::Path {
                            path: path.to_string(),
                            detail: format!("more than {MAX_SOFT_LINKS} soft links"),
                            source: None,
                        });
                    }
                    *budget -= 1;
                    self.resolve_from(cur, target, budget)?
                }
                LinkTarget::External { file, path: p } => {
                    return Err(Error::Path {
                        path: path.to_string(),
                        detail: format!("{part:?} is an external link to {p:?} in {file:?}"),
                        source: None,
                    });
                }
                LinkTarget::UserDefined { class, .. } => {
                    return Err(Error::Path {
                        path: path.to_string(),
                        detail: format!("{part:?} is a user-defined link of class {class}"),
                        source: None,
                    });
                }
            };
        }
        Ok(cur)
    }

    /// Names every object reachable from the root through hard links: a depth-first walk in
    /// name order that visits each object once (hard links may form cycles and give an
    /// object several paths; the first path wins).
    pub fn object_paths(&self) -> Result<ObjectPaths> {
        let root = self.root_address();
        let mut out = ObjectPaths::default();
        out.by_address.insert(root, "/".to_string());
        let root_oh = self.object_header(root)?;
        let first = self.links(&root_oh)?;
        self.prefetch_headers(&first);
        // Stack of (links of a group, next index, path of the group).
        let mut stack: Vec<(Vec<Link>, usize, String)> = vec![(first, 0, String::new())];
        while let Some((links, idx, prefix)) = stack.last_mut() {
            let Some(link) = links.get(*idx) else {
                stack.pop();
                continue;
            };
            *idx += 1;
            let LinkTarget::Hard(addr) = link.target else {
                continue;
            };
            if out.by_address.contains_key(&addr) {
                continue;
            }
            let path = format!("{prefix}/{}", link.name);
            out.by_address.insert(addr, path.clone());
            let oh = match self.object_header(addr) {
                Ok(oh) => oh,
                Err(e) => {
                    out.errors.push((path, e));
                    continue;
                }
            };
            if self.object_kind(&oh) == ObjectKind::Group {
                match self.links(&oh) {
                    Ok(l) => {
                        self.prefetch_headers(&l);
                        stack.push((l, 0, path));
                    }
                    Err(e) => out.errors.push((path, e)),
                }
            }
        }
        Ok(out)
    }
}
