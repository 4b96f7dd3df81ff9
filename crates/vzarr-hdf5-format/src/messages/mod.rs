//! Object header messages (HDF5 File Format Specification 3.0, section IV.A.2 "Disk Format:
//! Level 2A2 - Data Object Header Messages") and shared messages (section IV.A.2, "Shared
//! Messages": a message stored in another object header, or in the shared object header
//! message heap).
//!
//! Each message type has a decoder in a submodule; this module resolves shared messages to
//! their bodies and decodes the small messages (modification time, B-tree K values, external
//! files).

pub mod attribute;
pub mod dataspace;
pub mod datatype;
pub mod fill;
pub mod filters;
pub mod info;
pub mod layout;
pub mod link;

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::File;
use crate::object_header::{Message, ObjectHeader};

/// Message type numbers.
pub mod msg {
    /// NIL (padding).
    pub const NIL: u16 = 0x0000;
    /// Dataspace.
    pub const DATASPACE: u16 = 0x0001;
    /// Link info.
    pub const LINK_INFO: u16 = 0x0002;
    /// Datatype.
    pub const DATATYPE: u16 = 0x0003;
    /// Fill value (old).
    pub const FILL_OLD: u16 = 0x0004;
    /// Fill value.
    pub const FILL: u16 = 0x0005;
    /// Link.
    pub const LINK: u16 = 0x0006;
    /// External data files.
    pub const EXTERNAL_FILES: u16 = 0x0007;
    /// Data layout.
    pub const LAYOUT: u16 = 0x0008;
    /// Bogus (testing).
    pub const BOGUS: u16 = 0x0009;
    /// Group info.
    pub const GROUP_INFO: u16 = 0x000a;
    /// Filter pipeline.
    pub const FILTERS: u16 = 0x000b;
    /// Attribute.
    pub const ATTRIBUTE: u16 = 0x000c;
    /// Object comment.
    pub const COMMENT: u16 = 0x000d;
    /// Object modification time (old).
    pub const MTIME_OLD: u16 = 0x000e;
    /// Shared message table.
    pub const SHARED_TABLE: u16 = 0x000f;
    /// Object header continuation.
    pub const CONTINUATION: u16 = 0x0010;
    /// Symbol table.
    pub const SYMBOL_TABLE: u16 = 0x0011;
    /// Object modification time.
    pub const MTIME: u16 = 0x0012;
    /// B-tree 'K' values.
    pub const BTREE_K: u16 = 0x0013;
    /// Driver info.
    pub const DRIVER_INFO: u16 = 0x0014;
    /// Attribute info.
    pub const ATTRIBUTE_INFO: u16 = 0x0015;
    /// Object reference count.
    pub const REFCOUNT: u16 = 0x0016;
    /// File space info.
    pub const FILE_SPACE_INFO: u16 = 0x0017;
    /// Metadata cache image.
    pub const MDC_IMAGE: u16 = 0x0018;
    /// The highest message type the library knows.
    pub const LAST_KNOWN: u16 = MDC_IMAGE;
}

/// How many shared-message indirections are followed (a committed datatype whose message is
/// itself shared, ...).
const MAX_SHARED_DEPTH: u32 = 8;

/// The body of a message, following shared-message references: bytes and the absolute file
/// offset they start at.
pub(crate) fn body(file: &File, kind: u16, m: &Message) -> Result<(Bytes, u64)> {
    resolve(file, kind, m.flags, &m.data, m.address, 0)
}

/// Resolves the body of a message of type `kind` with `flags` whose stored body is `data`.
pub(crate) fn resolve(
    file: &File,
    kind: u16,
    flags: u8,
    data: &Bytes,
    address: u64,
    depth: u32,
) -> Result<(Bytes, u64)> {
    if flags & 0x02 == 0 {
        return Ok((data.clone(), address));
    }
    const WHAT: &str = "shared message";
    if depth >= MAX_SHARED_DEPTH {
        return Err(Error::limit(
            WHAT,
            address,
            format!("more than {MAX_SHARED_DEPTH} shared-message indirections"),
        ));
    }
    let mut c = Cursor::new(data, WHAT, address, file.sizes());
    let version = c.u8()?;
    let share_type = c.u8()?;
    let target = match version {
        1 => {
            c.skip(6)?;
            c.length()?; // Reserved (a heap address in the oldest writers).
            Shared::Header(c.addr()?)
        }
        2 => Shared::Header(c.addr()?),
        3 => match share_type {
            1 => {
                let id = c.bytes(8)?;
                Shared::Heap(id.try_into().map_err(|_| c.truncated(8))?)
            }
            2 | 3 => Shared::Header(c.addr()?),
            t => return Err(c.invalid(format!("shared message type {t}"))),
        },
        v => {
            return Err(Error::Version {
                structure: WHAT,
                address,
                version: v,
            });
        }
    };
    match target {
        Shared::Header(None) => Err(c.invalid("shared message in an undefined object header")),
        Shared::Header(Some(oh_addr)) => {
            let oh = file
                .object_header(oh_addr)
                .map_err(|e| e.context(WHAT, address))?;
            let m = oh.find(kind).ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    address,
                    format!("object header at byte {oh_addr} has no message of type {kind:#06x}"),
                )
            })?;
            resolve(file, kind, m.flags, &m.data, m.address, depth + 1)
        }
        Shared::Heap(id) => {
            let table = file.sohm_table().map_err(|e| e.context(WHAT, address))?;
            let table = table.as_ref().as_ref().ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    address,
                    "message in the shared message heap, but the file has no shared message table",
                )
            })?;
            let bytes = table
                .read_message(file, kind, &id)
                .map_err(|e| e.context(WHAT, address))?;
            // Messages in the shared heap are stored unshared.
            Ok((bytes, address))
        }
    }
}

enum Shared {
    Header(Option<u64>),
    Heap([u8; 8]),
}

/// Decodes the first message of type `kind`, if any, with `f` over its resolved body.
pub(crate) fn decode_first<T>(
    file: &File,
    oh: &ObjectHeader,
    kind: u16,
    what: &'static str,
    f: impl FnOnce(&mut Cursor, &Bytes) -> Result<T>,
) -> Result<Option<T>> {
    let Some(m) = oh.find(kind) else {
        return Ok(None);
    };
    let (data, addr) = body(file, kind, m)?;
    let mut c = Cursor::new(&data, what, addr, file.sizes());
    f(&mut c, &data)
        .map(Some)
        .map_err(|e| e.context(what, addr))
}

/// The B-tree 'K' values message of a superblock extension: (chunk index K, group internal
/// K, group leaf K).
pub(crate) fn btree_k_values(oh: &ObjectHeader) -> Result<Option<(u16, u16, u16)>> {
    let Some(m) = oh.find(msg::BTREE_K) else {
        return Ok(None);
    };
    let sizes = crate::decode::Sizes {
        offset: 8,
        length: 8,
        base: 0,
    };
    let mut c = Cursor::new(&m.data, "B-tree K values message", m.address, sizes);
    let version = c.u8()?;
    if version != 0 {
        return Err(c.invalid(format!("version {version}")));
    }
    let v = (c.u16()?, c.u16()?, c.u16()?);
    if v.0 == 0 || v.1 == 0 || v.2 == 0 {
        return Err(c.invalid("a K value is 0"));
    }
    Ok(Some(v))
}

/// The object modification time (seconds since the epoch), from the new or the old message.
pub(crate) fn modification_time(oh: &ObjectHeader) -> Option<u64> {
    if let Some(m) = oh.find(msg::MTIME) {
        let d = &m.data;
        if d.len() >= 8 && d[0] == 1 {
            return Some(u64::from(u32::from_le_bytes([d[4], d[5], d[6], d[7]])));
        }
    }
    if let Some(m) = oh.find(msg::MTIME_OLD) {
        // "YYYYMMDDhhmmss" in ASCII (UTC).
        let s = std::str::from_utf8(m.data.get(..14)?).ok()?;
        let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
        let (y, mo, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
        let (h, mi, se) = (n(8..10)?, n(10..12)?, n(12..14)?);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || y < 1970 {
            return None;
        }
        return Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se);
    }
    None
}

/// Days since 1970-01-01 of a proleptic Gregorian date (year >= 1970).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).saturating_sub(719_468)
}

/// Number of external raw data files listed in an external data files message (0 if none).
pub(crate) fn external_file_count(file: &File, oh: &ObjectHeader) -> Result<Option<u16>> {
    decode_first(
        file,
        oh,
        msg::EXTERNAL_FILES,
        "external data files message",
        |c, _| {
            let version = c.u8()?;
            if version != 1 {
                return Err(c.invalid(format!("version {version}")));
            }
            c.skip(3)?;
            let _allocated = c.u16()?;
            c.u16()
        },
    )
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod civil_tests {
    use super::days_from_civil;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
    }
}
