//! Bounds-checked decoding of little-endian fields from a byte slice (HDF5 File Format
//! Specification 3.0, section I.B "Conventions": all fields little-endian, addresses and
//! lengths in the sizes the superblock gives, the undefined address is all bits set).
//!
//! Every read returns an error naming the structure and its file address instead of
//! panicking when the slice is too short.

use crate::error::{Error, Result};

/// Sizes of file addresses ("offsets") and lengths, in bytes, and the base address that file
/// addresses are relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes of an address (2, 4 or 8).
    pub offset: u8,
    /// Bytes of a length (2, 4 or 8).
    pub length: u8,
    /// Absolute file offset that stored addresses are relative to.
    pub base: u64,
}

/// A read position in the bytes of one structure.
#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Name of the structure, for errors.
    pub what: &'static str,
    /// Absolute file offset of `buf[0]`, for errors.
    pub addr: u64,
    pub sizes: Sizes,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str, addr: u64, sizes: Sizes) -> Self {
        Cursor {
            buf,
            pos: 0,
            what,
            addr,
            sizes,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Absolute file offset of the current position.
    pub(crate) fn here(&self) -> u64 {
        self.addr.saturating_add(self.pos as u64)
    }

    pub(crate) fn truncated(&self, need: usize) -> Error {
        Error::Truncated {
            structure: self.what,
            address: self.addr,
            at: self.pos,
            need,
            have: self.buf.len(),
        }
    }

    pub(crate) fn invalid(&self, detail: impl Into<String>) -> Error {
        Error::invalid(self.what, self.addr, detail)
    }

    /// Checks that the structure starts with the 4-byte signature `sig` and steps past it.
    pub(crate) fn signature(&mut self, sig: &'static str) -> Result<()> {
        crate::file::expect_signature(self.what, self.addr, self.buf, sig)?;
        self.skip(4)
    }

    /// Reads a version byte, an [`Error::Version`] unless it is `expected`.
    pub(crate) fn version(&mut self, expected: u8) -> Result<()> {
        let version = self.u8()?;
        if version != expected {
            return Err(Error::Version {
                structure: self.what,
                address: self.addr,
                version,
            });
        }
        Ok(())
    }

    /// Checks the signature `sig` and the version byte after it (see [`Cursor::signature`],
    /// [`Cursor::version`]).
    pub(crate) fn prefix(&mut self, sig: &'static str, version: u8) -> Result<()> {
        self.signature(sig)?;
        self.version(version)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Bytes given by a length read from the file.
    pub(crate) fn bytes_u64(&mut self, n: u64) -> Result<&'a [u8]> {
        match usize::try_from(n) {
            Ok(n) => self.bytes(n),
            Err(_) => Err(self.truncated(usize::MAX)),
        }
    }

    pub(crate) fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(le_uint(self.bytes(8)?))
    }

    /// An unsigned little-endian integer of `n` (0..=8) bytes.
    pub(crate) fn uint(&mut self, n: usize) -> Result<u64> {
        if n > 8 {
            return Err(self.invalid(format!("{n}-byte integer field")));
        }
        Ok(le_uint(self.bytes(n)?))
    }

    /// A length field (size of lengths bytes).
    pub(crate) fn length(&mut self) -> Result<u64> {
        self.uint(usize::from(self.sizes.length))
    }

    /// An address field: `None` for the undefined address, else the absolute file offset.
    pub(crate) fn addr(&mut self) -> Result<Option<u64>> {
        let n = usize::from(self.sizes.offset);
        let raw = self.bytes(n)?;
        decode_addr(raw, self.sizes.base).ok_or_else(|| {
            self.invalid(format!(
                "address {} plus the base address {} overflows",
                le_uint(raw),
                self.sizes.base
            ))
        })
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub(crate) fn cstr(&mut self) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => Err(self.invalid("string without terminating NUL")),
        }
    }
}

/// Unsigned little-endian integer of up to 8 bytes.
pub(crate) fn le_uint(b: &[u8]) -> u64 {
    let mut v = 0u64;
    for (i, &x) in b.iter().take(8).enumerate() {
        v |= u64::from(x) << (8 * i);
    }
    v
}

/// Decodes a stored address: `Some(None)` when undefined (all bits set), `Some(Some(abs))`
/// with the base added, `None` when the addition overflows.
pub(crate) fn decode_addr(raw: &[u8], base: u64) -> Option<Option<u64>> {
    if raw.iter().all(|&b| b == 0xff) {
        return Some(None);
    }
    base.checked_add(le_uint(raw)).map(Some)
}

/// `floor(log2(n))` for `n > 0`, 0 for 0.
pub(crate) fn log2_floor(n: u64) -> u32 {
    if n == 0 { 0 } else { 63 - n.leading_zeros() }
}

/// Bytes needed to encode values from 0 to `limit` (the library's `H5VM_limit_enc_size`).
pub(crate) fn limit_enc_size(limit: u64) -> usize {
    (log2_floor(limit) / 8 + 1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Sizes = Sizes {
        offset: 8,
        length: 8,
        base: 0,
    };

    #[test]
    fn fields() {
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 0xff, 0xff, 0xff, 0xff, b'a', 0];
        let mut c = Cursor::new(&data, "t", 0, S);
        assert_eq!(c.u8().unwrap(), 1);
        assert_eq!(c.u16().unwrap(), 0x0302);
        assert_eq!(c.uint(3).unwrap(), 0x060504);
        assert_eq!(c.u16().unwrap(), 0x0807);
        assert!(c.u64().is_err());
        assert!(c.uint(9).is_err());
        let mut c4 = Cursor::new(
            &data[9..13],
            "t",
            0,
            Sizes {
                offset: 4,
                length: 4,
                base: 512,
            },
        );
        assert_eq!(c4.addr().unwrap(), None);
        let mut c = Cursor::new(&data[13..], "t", 0, S);
        assert_eq!(c.cstr().unwrap(), b"a");
        assert!(c.cstr().is_err());
        assert_eq!(decode_addr(&[1, 0], 512), Some(Some(513)));
        assert_eq!(decode_addr(&[1, 0, 0, 0, 0, 0, 0, 0], u64::MAX), None);
    }

    #[test]
    fn logs() {
        assert_eq!(log2_floor(1), 0);
        assert_eq!(log2_floor(1024), 10);
        assert_eq!(log2_floor(1025), 10);
        assert_eq!(limit_enc_size(255), 1);
        assert_eq!(limit_enc_size(256), 2);
        assert_eq!(limit_enc_size(0), 1);
    }
}
