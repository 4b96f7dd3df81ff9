//! Filter pipeline message, versions 1 and 2 (HDF5 File Format Specification 3.0, section
//! IV.A.2.l "Data Storage - Filter Pipeline Message").

use crate::decode::Cursor;
use crate::error::Result;

/// Most filters in one pipeline (`H5Z_MAX_NFILTERS`).
pub const MAX_FILTERS: usize = 32;

/// One filter of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// Filter id (1 deflate, 2 shuffle, 3 fletcher32, 32001 blosc, ...).
    pub id: u16,
    /// Name, when stored.
    pub name: Option<String>,
    /// Filter flags as stored.
    pub flags: u16,
    /// Client data values.
    pub client_data: Vec<u32>,
}

impl Filter {
    /// Whether the filter is optional (flags bit 0): a chunk may skip it on failure.
    pub fn is_optional(&self) -> bool {
        self.flags & 0x0001 != 0
    }
}

/// A dataset's filter pipeline, in the order the filters are applied when writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterPipeline {
    /// Message version (1 or 2).
    pub version: u8,
    /// The filters.
    pub filters: Vec<Filter>,
}

pub(crate) fn decode(c: &mut Cursor) -> Result<FilterPipeline> {
    let version = c.u8()?;
    if !(1..=2).contains(&version) {
        return Err(c.invalid(format!("filter pipeline version {version}")));
    }
    let n = usize::from(c.u8()?);
    if n > MAX_FILTERS {
        return Err(c.invalid(format!("{n} filters (at most {MAX_FILTERS})")));
    }
    if version == 1 {
        c.skip(6)?;
    }
    let mut filters = Vec::with_capacity(n);
    for _ in 0..n {
        let id = c.u16()?;
        let name_len = if version == 1 || id >= 256 {
            usize::from(c.u16()?)
        } else {
            0
        };
        if version == 1 && name_len % 8 != 0 {
            return Err(c.invalid("filter name length not a multiple of 8"));
        }
        let flags = c.u16()?;
        let ncd = usize::from(c.u16()?);
        let name = if name_len > 0 {
            let raw = c.bytes(name_len)?;
            let end = raw
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| c.invalid("filter name without terminating NUL"))?;
            Some(String::from_utf8_lossy(&raw[..end]).into_owned())
        } else {
            None
        };
        if ncd.saturating_mul(4) > c.remaining() {
            return Err(c.truncated(ncd * 4));
        }
        let mut client_data = Vec::with_capacity(ncd);
        for _ in 0..ncd {
            client_data.push(c.u32()?);
        }
        if version == 1 && ncd % 2 == 1 {
            c.skip(4)?;
        }
        filters.push(Filter {
            id,
            name,
            flags,
            client_data,
        });
    }
    Ok(FilterPipeline { version, filters })
}
