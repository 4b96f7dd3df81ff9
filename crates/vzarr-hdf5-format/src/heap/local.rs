//! Local heaps: the link names of old-style groups (HDF5 File Format Specification 3.0,
//! section III.D "Disk Format: Level 1D - Local Heaps").

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::File;

const WHAT: &str = "local heap";

/// A local heap's data segment.
#[derive(Clone, Debug)]
pub(crate) struct LocalHeap {
    address: u64,
    data: Bytes,
}

/// Bytes of a local heap header.
pub(crate) fn header_len(file: &File) -> u64 {
    let s = file.sizes();
    8 + 2 * u64::from(s.length) + u64::from(s.offset)
}

/// Reads the local heap at `addr` (header and data segment).
pub(crate) fn read(file: &File, addr: u64) -> Result<LocalHeap> {
    let hdr = file.read(WHAT, addr, header_len(file))?;
    let mut c = Cursor::new(&hdr, WHAT, addr, file.sizes());
    c.prefix("HEAP", 0)?;
    c.skip(3)?;
    let size = c.length()?;
    let _free = c.length()?;
    let data_addr = c
        .addr()?
        .ok_or_else(|| c.invalid("undefined data segment address"))?;
    let data = file.read("local heap data segment", data_addr, size)?;
    Ok(LocalHeap {
        address: addr,
        data,
    })
}

impl LocalHeap {
    /// The NUL-terminated string at `offset` in the data segment.
    pub(crate) fn string_at(&self, offset: u64) -> Result<&[u8]> {
        let start = usize::try_from(offset)
            .ok()
            .filter(|&o| o < self.data.len())
            .ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    self.address,
                    format!(
                        "name offset {offset} outside the data segment of {} bytes",
                        self.data.len()
                    ),
                )
            })?;
        let rest = &self.data[start..];
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            Error::invalid(
                WHAT,
                self.address,
                format!("name at offset {offset} has no terminating NUL"),
            )
        })?;
        Ok(&rest[..end])
    }
}
