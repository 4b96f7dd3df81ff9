//! Fill value messages: the old one (type 4) and the new one (type 5, versions 1 to 3)
//! (HDF5 File Format Specification 3.0, sections IV.A.2.e "Fill Value (Old) Message" and
//! IV.A.2.f "Fill Value Message").
//!
//! The defined status follows the library's rules (`H5P_is_fill_value_defined`): no value
//! recorded means "default" when the new message says a value is defined, "undefined" when
//! it says so or when only the old message (or none) is present without a value.

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::Result;

/// When space for raw data is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationTime {
    /// At creation.
    Early,
    /// At the first write.
    Late,
    /// Chunk by chunk, as written.
    Incremental,
    /// A value this reader does not know.
    Other(u8),
}

/// When the fill value is written into allocated space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillTime {
    /// When space is allocated.
    OnAllocation,
    /// Never.
    Never,
    /// Only when a fill value was set by the user.
    IfSet,
    /// A value this reader does not know.
    Other(u8),
}

/// Whether and how a fill value is defined (`H5D_fill_value_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillStatus {
    /// No fill value is defined: unwritten data reads as undefined bytes.
    Undefined,
    /// The library default (all zero bytes).
    Default,
    /// A value set by the writer ([`FillValue::value`]).
    UserDefined,
}

/// A dataset's fill value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FillValue {
    /// Message type it came from (4 old, 5 new) and that message's version (0 for old).
    pub source: (u16, u8),
    /// Space allocation time (when recorded).
    pub allocation_time: Option<AllocationTime>,
    /// Fill value write time (when recorded).
    pub fill_time: Option<FillTime>,
    /// Defined status.
    pub status: FillStatus,
    /// The value's bytes in the dataset's type, when user-defined.
    pub value: Option<Bytes>,
}

fn alloc_time(v: u8) -> AllocationTime {
    match v {
        1 => AllocationTime::Early,
        2 => AllocationTime::Late,
        3 => AllocationTime::Incremental,
        v => AllocationTime::Other(v),
    }
}

fn fill_time(v: u8) -> FillTime {
    match v {
        0 => FillTime::OnAllocation,
        1 => FillTime::Never,
        2 => FillTime::IfSet,
        v => FillTime::Other(v),
    }
}

fn status_of(value: Option<&[u8]>, defined: bool) -> (FillStatus, Option<Bytes>) {
    match value {
        Some(v) if !v.is_empty() => (FillStatus::UserDefined, Some(Bytes::copy_from_slice(v))),
        _ if defined => (FillStatus::Default, None),
        _ => (FillStatus::Undefined, None),
    }
}

/// Decodes the old fill value message (type 4).
pub(crate) fn decode_old(c: &mut Cursor) -> Result<FillValue> {
    let size = c.u32()?;
    let v = c.bytes(size as usize)?;
    // The library maps an old message without a value to "undefined".
    let (status, value) = status_of(Some(v), false);
    Ok(FillValue {
        source: (4, 0),
        allocation_time: None,
        fill_time: None,
        status,
        value,
    })
}

/// Decodes the new fill value message (type 5).
pub(crate) fn decode_new(c: &mut Cursor) -> Result<FillValue> {
    let version = c.u8()?;
    match version {
        1 | 2 => {
            let at = c.u8()?;
            let ft = c.u8()?;
            let defined = c.u8()? != 0;
            let value = if defined {
                let size = c.u32()?;
                Some(c.bytes(size as usize)?)
            } else {
                None
            };
            let (status, value) = if defined {
                status_of(value, true)
            } else {
                (FillStatus::Undefined, None)
            };
            Ok(FillValue {
                source: (5, version),
                allocation_time: Some(alloc_time(at)),
                fill_time: Some(fill_time(ft)),
                status,
                value,
            })
        }
        3 => {
            let flags = c.u8()?;
            if flags & !0x3f != 0 {
                return Err(c.invalid(format!("unknown fill value flags {flags:#04x}")));
            }
            let undefined = flags & 0x10 != 0;
            let have = flags & 0x20 != 0;
            if undefined && have {
                return Err(c.invalid("fill value flagged both undefined and present"));
            }
            let (status, value) = if undefined {
                (FillStatus::Undefined, None)
            } else if have {
                let size = c.u32()?;
                status_of(Some(c.bytes(size as usize)?), true)
            } else {
                (FillStatus::Default, None)
            };
            Ok(FillValue {
                source: (5, 3),
                allocation_time: Some(alloc_time(flags & 0x03)),
                fill_time: Some(fill_time((flags >> 2) & 0x03)),
                status,
                value,
            })
        }
        v => Err(c.invalid(format!("fill value message version {v}"))),
    }
}
