//! Attribute message, versions 1 to 3, and attribute info message (HDF5 File Format
//! Specification 3.0, sections IV.A.2.m "Attribute Message" and IV.A.2.v "Attribute Info
//! Message"; the attribute info message has the layout of the link info message, see
//! [`super::info`]).
//!
//! The datatype and dataspace of an attribute may be shared (stored elsewhere); this module
//! only splits the message into its parts, [`crate::attribute`] resolves them.

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::Result;
use crate::messages::datatype::CharacterSet;
use crate::messages::info::{self, DenseStorageInfo};

/// An attribute message split into its parts.
#[derive(Clone, Debug)]
pub(crate) struct RawAttribute {
    pub name: Vec<u8>,
    pub charset: CharacterSet,
    pub datatype_shared: bool,
    pub datatype: Bytes,
    pub datatype_address: u64,
    pub dataspace_shared: bool,
    pub dataspace: Bytes,
    pub dataspace_address: u64,
    /// Everything after the dataspace: the value (its length is checked by the caller).
    pub data: Bytes,
}

fn pad8(n: usize, version: u8) -> usize {
    if version == 1 { n.div_ceil(8) * 8 } else { n }
}

/// Splits an attribute message whose body `data` starts at absolute offset `addr`.
pub(crate) fn split(c: &mut Cursor, data: &Bytes) -> Result<RawAttribute> {
    let version = c.u8()?;
    if !(1..=3).contains(&version) {
        return Err(c.invalid(format!("attribute message version {version}")));
    }
    let flags = c.u8()?;
    if version == 1 && flags != 0 {
        // Reserved in version 1; the library ignores it.
    } else if flags & !0x03 != 0 {
        return Err(c.invalid(format!("unknown attribute flags {flags:#04x}")));
    }
    let flags = if version == 1 { 0 } else { flags };
    let name_size = usize::from(c.u16()?);
    let dt_size = usize::from(c.u16()?);
    let ds_size = usize::from(c.u16()?);
    let charset = if version == 3 {
        match c.u8()? {
            0 => CharacterSet::Ascii,
            1 => CharacterSet::Utf8,
            v => CharacterSet::Other(v),
        }
    } else {
        CharacterSet::Ascii
    };
    if name_size == 0 {
        return Err(c.invalid("attribute name of length 0"));
    }
    let name_raw = c.bytes(pad8(name_size, version))?;
    let name_field = &name_raw[..name_size];
    let name_end = name_field.iter().position(|&b| b == 0).unwrap_or(name_size);
    let name = name_field[..name_end].to_vec();
    let dt_start = c.pos();
    c.skip(pad8(dt_size, version))?;
    let ds_start = c.pos();
    c.skip(pad8(ds_size, version))?;
    let data_start = c.pos();
    let base = c.addr;
    Ok(RawAttribute {
        name,
        charset,
        datatype_shared: flags & 0x01 != 0,
        datatype: data.slice(dt_start..dt_start + dt_size),
        datatype_address: base.saturating_add(dt_start as u64),
        dataspace_shared: flags & 0x02 != 0,
        dataspace: data.slice(ds_start..ds_start + ds_size),
        dataspace_address: base.saturating_add(ds_start as u64),
        data: data.slice(data_start..),
    })
}

/// Attribute info message: where an object keeps dense attributes (its largest creation
/// index is 2 bytes).
pub type AttributeInfo = DenseStorageInfo<u16>;

pub(crate) fn decode_info(c: &mut Cursor) -> Result<AttributeInfo> {
    info::decode(c, "attribute info", Cursor::u16)
}
