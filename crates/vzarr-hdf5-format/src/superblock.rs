//! The superblock: where the file starts, the sizes of addresses and lengths, the base address
//! and the root group (HDF5 File Format Specification 3.0, section II.A "Disk Format: Level
//! 0A - Format Signature and Superblock"; versions 0 to 3), and the superblock extension
//! (section II.C "Disk Format: Level 0C - Superblock Extension").

use crate::checksum;
use crate::decode::{Cursor, Sizes};
use crate::error::{Error, Result};
use crate::storage::Storage;

/// The 8-byte HDF5 format signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Offsets where a superblock may start in a file of `size` bytes: 0, 512, 1024, 2048, ...
pub fn signature_offsets(size: u64) -> impl Iterator<Item = u64> {
    std::iter::once(0u64)
        .chain((9..63).map(|k| 1u64 << k))
        .take_while(move |&o| o.checked_add(8).is_some_and(|end| end <= size))
}

/// The decoded superblock. Every address is an absolute file offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Superblock version (0 to 3).
    pub version: u8,
    /// Absolute file offset of the format signature (the size of the user block).
    pub address: u64,
    /// Absolute file offset that addresses stored in the file are relative to. As the HDF5
    /// library does, this is the superblock's own offset, whatever the stored field says.
    pub base_address: u64,
    /// Bytes of a stored address (2, 4 or 8).
    pub size_of_offsets: u8,
    /// Bytes of a stored length (2, 4 or 8).
    pub size_of_lengths: u8,
    /// File consistency flags.
    pub consistency_flags: u32,
    /// Absolute file offset of the root group's object header.
    pub root_object_header: u64,
    /// End of the HDF5 data as stored (relative to the base address); `None` if undefined.
    pub end_of_file: Option<u64>,
    /// Absolute file offset of the superblock extension's object header (versions 2 and 3).
    pub extension: Option<u64>,
    /// Absolute file offset of the driver information block (versions 0 and 1).
    pub driver_info: Option<u64>,
    /// "Group leaf node K": half the capacity of a symbol table node.
    pub group_leaf_k: u16,
    /// "Group internal node K": half the fan-out of a group v1 B-tree node.
    pub group_internal_k: u16,
    /// "Indexed storage internal node K": half the fan-out of a chunk v1 B-tree node.
    pub chunk_btree_k: u16,
}

impl Superblock {
    /// The sizes used to decode stored fields.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            offset: self.size_of_offsets,
            length: self.size_of_lengths,
            base: self.base_address,
        }
    }
}

const WHAT: &str = "superblock";

/// Reads the size of offsets or lengths (`what`), which must be 2, 4 or 8.
fn read_size(c: &mut Cursor, what: &str) -> Result<u8> {
    let v = c.u8()?;
    if matches!(v, 2 | 4 | 8) {
        Ok(v)
    } else {
        Err(c.invalid(format!("size of {what} is {v}, not 2, 4 or 8")))
    }
}

/// Switches `c` to the sizes of offsets `so` and lengths `sl`, relative to the superblock's
/// offset, then reads the base address, the address after it (free space info in versions 0
/// and 1, the superblock extension in versions 2 and 3) and the end of file address.
fn read_addresses(c: &mut Cursor, so: u8, sl: u8) -> Result<(Option<u64>, u64)> {
    c.sizes = Sizes {
        offset: so,
        length: sl,
        base: c.addr,
    };
    // Stored base address: the library replaces it by the superblock's offset.
    let _stored_base = c.uint(usize::from(so))?;
    let next = c.addr()?;
    let eof = c.uint(usize::from(so))?;
    Ok((next, eof))
}

/// Reads the address of the root group's object header, which must be defined.
fn read_root(c: &mut Cursor) -> Result<u64> {
    c.addr()?
        .ok_or_else(|| c.invalid("undefined root group object header address"))
}

/// The superblock of `version` at `offset` with the fields all versions store, and those
/// only versions 0 and 1 store set as the library does for versions 2 and 3 (no driver info
/// block; K values 4, 16 and 32).
fn common(
    version: u8,
    offset: u64,
    (so, sl): (u8, u8),
    consistency_flags: u32,
    root: u64,
    eof: u64,
) -> Superblock {
    Superblock {
        version,
        address: offset,
        base_address: offset,
        size_of_offsets: so,
        size_of_lengths: sl,
        consistency_flags,
        root_object_header: root,
        end_of_file: undefined_to_none(eof, so),
        extension: None,
        driver_info: None,
        group_leaf_k: 4,
        group_internal_k: 16,
        chunk_btree_k: 32,
    }
}

/// Finds and decodes the superblock.
pub(crate) fn read(storage: &dyn Storage, verify_checksum: bool) -> Result<Superblock> {
    let size = storage.size();
    for offset in signature_offsets(size) {
        let sig = storage.read(offset, 8).map_err(|source| Error::Read {
            structure: WHAT,
            address: offset,
            len: 8,
            source,
        })?;
        if sig[..] == SIGNATURE {
            return decode_at(storage, offset, verify_checksum);
        }
    }
    Err(Error::NotHdf5 { file_size: size })
}

fn decode_at(storage: &dyn Storage, offset: u64, verify_checksum: bool) -> Result<Superblock> {
    let size = storage.size();
    // The longest superblock (version 1, 8-byte fields) has 8+16+4+4*8+40 = 104 bytes; read
    // what the file has up to a little more.
    let len = (size - offset).min(256);
    let buf = storage.read(offset, len).map_err(|source| Error::Read {
        structure: WHAT,
        address: offset,
        len,
        source,
    })?;
    let provisional = Sizes {
        offset: 8,
        length: 8,
        base: offset,
    };
    let mut c = Cursor::new(&buf, WHAT, offset, provisional);
    c.skip(8)?;
    let version = c.u8()?;
    let sb = match version {
        0 | 1 => {
            let _free_space_version = c.u8()?;
            let _root_stab_version = c.u8()?;
            c.skip(1)?;
            let _shared_header_version = c.u8()?;
            let so = read_size(&mut c, "offsets")?;
            let sl = read_size(&mut c, "lengths")?;
            c.skip(1)?;
            let group_leaf_k = c.u16()?;
            let group_internal_k = c.u16()?;
            let consistency_flags = c.u32()?;
            let chunk_btree_k = if version == 1 {
                let k = c.u16()?;
                c.skip(2)?;
                k
            } else {
                32
            };
            let (_free_space, eof) = read_addresses(&mut c, so, sl)?;
            let driver_info = c.addr()?;
            // Root group symbol table entry; its cached scratch-pad is not trusted.
            let _name_offset = c.length()?;
            let root = read_root(&mut c)?;
            if group_leaf_k == 0 || group_internal_k == 0 || chunk_btree_k == 0 {
                return Err(c.invalid("a B-tree K value is 0"));
            }
            Superblock {
                driver_info,
                group_leaf_k,
                group_internal_k,
                chunk_btree_k,
                ..common(version, offset, (so, sl), consistency_flags, root, eof)
            }
        }
        2 | 3 => {
            let so = read_size(&mut c, "offsets")?;
            let sl = read_size(&mut c, "lengths")?;
            let consistency_flags = u32::from(c.u8()?);
            let (extension, eof) = read_addresses(&mut c, so, sl)?;
            let root = read_root(&mut c)?;
            let covered = c.pos();
            if verify_checksum || buf.len() < covered + 4 {
                checksum::verify(WHAT, offset, &buf[..covered], &buf[covered..])?;
            }
            Superblock {
                extension,
                ..common(version, offset, (so, sl), consistency_flags, root, eof)
            }
        }
        v => {
            return Err(Error::Version {
                structure: WHAT,
                address: offset,
                version: v,
            });
        }
    };
    // The library refuses files shorter than the stored end of file (compared as it does,
    // without the base address).
    if let Some(eof) = sb.end_of_file
        && size < eof
    {
        return Err(Error::TruncatedFile {
            address: offset,
            eof: eof.saturating_add(sb.base_address),
            file_size: size,
        });
    }
    Ok(sb)
}

fn undefined_to_none(v: u64, size: u8) -> Option<u64> {
    let all = if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * u32::from(size))) - 1
    };
    (v != all).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_the_spec() {
        let v: Vec<u64> = signature_offsets(5000).collect();
        assert_eq!(v, vec![0, 512, 1024, 2048, 4096]);
        assert_eq!(signature_offsets(4).count(), 0);
        assert_eq!(signature_offsets(u64::MAX).last(), Some(1 << 62));
    }

    #[test]
    fn undefined_sizes() {
        assert_eq!(undefined_to_none(0xffff, 2), None);
        assert_eq!(undefined_to_none(0xfffe, 2), Some(0xfffe));
        assert_eq!(undefined_to_none(u64::MAX, 8), None);
    }
}
