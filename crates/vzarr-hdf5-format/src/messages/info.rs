//! Link info (type 2) and attribute info (type 21) messages: where a new-style group keeps
//! dense links, and an object dense attributes (HDF5 File Format Specification 3.0, sections
//! IV.A.2.c "The Link Info Message" and IV.A.2.v "The Attribute Info Message").
//!
//! Both messages have the same layout but for the width of the largest creation index (8
//! bytes for links, 2 for attributes): one type, [`DenseStorageInfo`], holds either.

use crate::decode::Cursor;
use crate::error::{Error, Result};

/// Link info or attribute info message: where links or attributes are kept in dense storage.
/// `I` is the type of the largest creation index (`u64` for links, `u16` for attributes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseStorageInfo<I> {
    /// Creation order of the links or attributes is tracked.
    pub track_creation_order: bool,
    /// Creation order of the links or attributes is indexed.
    pub index_creation_order: bool,
    /// Largest creation index used, when tracked.
    pub max_creation_index: Option<I>,
    /// Fractal heap of dense links or attributes; `None` when they are compact.
    pub heap_address: Option<u64>,
    /// v2 B-tree name index of dense storage (record type 5 for links, 8 for attributes).
    pub name_index_address: Option<u64>,
    /// v2 B-tree creation-order index of dense storage (record type 6 for links, 9 for
    /// attributes).
    pub creation_order_index_address: Option<u64>,
}

impl<I> DenseStorageInfo<I> {
    /// Addresses of the fractal heap and the name index of dense storage; an error naming
    /// the message `what` when either is undefined.
    pub(crate) fn heap_and_name_index(&self, what: &'static str) -> Result<(u64, u64)> {
        match (self.heap_address, self.name_index_address) {
            (Some(heap), Some(name_index)) => Ok((heap, name_index)),
            _ => Err(Error::invalid(
                what,
                0,
                "dense storage without a name index",
            )),
        }
    }
}

/// Decodes the message `what` (`"link info"` or `"attribute info"`, for errors), whose
/// largest creation index `read_max_index` reads.
pub(crate) fn decode<'a, I>(
    c: &mut Cursor<'a>,
    what: &str,
    read_max_index: impl FnOnce(&mut Cursor<'a>) -> Result<I>,
) -> Result<DenseStorageInfo<I>> {
    let version = c.u8()?;
    if version != 0 {
        return Err(c.invalid(format!("{what} message version {version}")));
    }
    let flags = c.u8()?;
    if flags & !0x03 != 0 {
        return Err(c.invalid(format!("unknown {what} flags {flags:#04x}")));
    }
    let track_creation_order = flags & 0x01 != 0;
    let index_creation_order = flags & 0x02 != 0;
    let max_creation_index = if track_creation_order {
        Some(read_max_index(c)?)
    } else {
        None
    };
    let heap_address = c.addr()?;
    let name_index_address = c.addr()?;
    let creation_order_index_address = if index_creation_order {
        c.addr()?
    } else {
        None
    };
    Ok(DenseStorageInfo {
        track_creation_order,
        index_creation_order,
        max_creation_index,
        heap_address,
        name_index_address,
        creation_order_index_address,
    })
}
