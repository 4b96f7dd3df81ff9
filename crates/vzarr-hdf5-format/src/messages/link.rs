//! Group-related messages: link (type 6), link info (type 2), group info (type 10) and
//! symbol table (type 17) (HDF5 File Format Specification 3.0, sections IV.A.2.g "The Link
//! Message", IV.A.2.c "The Link Info Message", IV.A.2.k "The Group Info Message" and
//! IV.A.2.r "The Symbol Table Message"; the link info message's layout, shared with the
//! attribute info message, is decoded in [`super::info`]).

use crate::decode::Cursor;
use crate::error::Result;
use crate::messages::datatype::CharacterSet;
use crate::messages::info::{self, DenseStorageInfo};

/// Where a link points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// An object in this file: absolute file offset of its object header.
    Hard(u64),
    /// A path in this file.
    Soft(String),
    /// An object in another file.
    External {
        /// File name as stored.
        file: String,
        /// Object path in that file.
        path: String,
    },
    /// A user-defined link class (type >= 65) with its raw data.
    UserDefined {
        /// Link class id.
        class: u8,
        /// The link's data.
        data: Vec<u8>,
    },
}

/// A link of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Link name (bytes as stored, decoded lossily as UTF-8).
    pub name: String,
    /// Raw name bytes, the order key of name-ordered iteration.
    pub name_bytes: Vec<u8>,
    /// Creation order, when tracked.
    pub creation_order: Option<u64>,
    /// Character set of the name.
    pub charset: CharacterSet,
    /// The target.
    pub target: LinkTarget,
}

fn string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes a link message (also the form links take in a fractal heap).
pub(crate) fn decode_link(c: &mut Cursor) -> Result<Link> {
    let version = c.u8()?;
    if version != 1 {
        return Err(c.invalid(format!("link message version {version}")));
    }
    let flags = c.u8()?;
    if flags & 0xe0 != 0 {
        return Err(c.invalid(format!("unknown link flags {flags:#04x}")));
    }
    let link_type = if flags & 0x08 != 0 { c.u8()? } else { 0 };
    let creation_order = if flags & 0x04 != 0 {
        Some(c.u64()?)
    } else {
        None
    };
    let charset = if flags & 0x10 != 0 {
        match c.u8()? {
            0 => CharacterSet::Ascii,
            1 => CharacterSet::Utf8,
            v => return Err(c.invalid(format!("link name character set {v}"))),
        }
    } else {
        CharacterSet::Ascii
    };
    let name_len = c.uint(1 << (flags & 0x03))?;
    if name_len == 0 {
        return Err(c.invalid("link with an empty name"));
    }
    let name_bytes = c.bytes_u64(name_len)?.to_vec();
    let target = match link_type {
        0 => LinkTarget::Hard(
            c.addr()?
                .ok_or_else(|| c.invalid("hard link to an undefined address"))?,
        ),
        1 => {
            let n = usize::from(c.u16()?);
            LinkTarget::Soft(string(c.bytes(n)?))
        }
        64 => {
            let n = usize::from(c.u16()?);
            let data = c.bytes(n)?;
            let mut ec = Cursor::new(data, "external link value", c.here(), c.sizes);
            let vf = ec.u8()?;
            if vf >> 4 != 0 {
                return Err(c.invalid(format!("external link version {}", vf >> 4)));
            }
            let file = string(ec.cstr()?);
            let path = string(ec.cstr()?);
            LinkTarget::External { file, path }
        }
        t if t >= 65 => {
            let n = usize::from(c.u16()?);
            LinkTarget::UserDefined {
                class: t,
                data: c.bytes(n)?.to_vec(),
            }
        }
        t => return Err(c.invalid(format!("link type {t}"))),
    };
    Ok(Link {
        name: string(&name_bytes),
        name_bytes,
        creation_order,
        charset,
        target,
    })
}

/// Link info message: where a new-style group keeps dense links (its largest creation index
/// is 8 bytes).
pub type LinkInfo = DenseStorageInfo<u64>;

pub(crate) fn decode_link_info(c: &mut Cursor) -> Result<LinkInfo> {
    info::decode(c, "link info", Cursor::u64)
}

/// Group info message: storage thresholds of a new-style group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// Most links kept compact, and fewest kept dense, when stored.
    pub phase_change: Option<(u16, u16)>,
    /// Estimated number of entries and name length, when stored.
    pub estimates: Option<(u16, u16)>,
}

pub(crate) fn decode_group_info(c: &mut Cursor) -> Result<GroupInfo> {
    let version = c.u8()?;
    if version != 0 {
        return Err(c.invalid(format!("group info message version {version}")));
    }
    let flags = c.u8()?;
    let phase_change = if flags & 0x01 != 0 {
        Some((c.u16()?, c.u16()?))
    } else {
        None
    };
    let estimates = if flags & 0x02 != 0 {
        Some((c.u16()?, c.u16()?))
    } else {
        None
    };
    Ok(GroupInfo {
        phase_change,
        estimates,
    })
}

/// Symbol table message: an old-style group's B-tree and local heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolTable {
    /// Absolute file offset of the group's v1 B-tree (node type 0).
    pub btree_address: u64,
    /// Absolute file offset of the group's local heap (link names).
    pub heap_address: u64,
}

pub(crate) fn decode_symbol_table(c: &mut Cursor) -> Result<SymbolTable> {
    let btree_address = c
        .addr()?
        .ok_or_else(|| c.invalid("undefined symbol table B-tree address"))?;
    let heap_address = c
        .addr()?
        .ok_or_else(|| c.invalid("undefined symbol table local heap address"))?;
    Ok(SymbolTable {
        btree_address,
        heap_address,
    })
}
