//! The HDF5 bitshuffle filter (HDF5 filter id 32008) with its framing: bitshuffle alone, or
//! bitshuffle then LZ4 or Zstandard per block, decoded to at most the chunk's size.
//!
//! Bitshuffle transposes the bits of a block of `n` elements (`n` a multiple of 8) of `s`
//! bytes: bit `k` of byte `j` of element `i` goes to bit `i % 8` of byte `i / 8` of row
//! `8 j + k`, rows of `n / 8` bytes one after another. A chunk is cut into blocks of the block
//! size (in elements), then one last block of the remaining elements rounded down to a
//! multiple of 8; the last `count % 8` elements are copied as they are. Without compression
//! the chunk is that, with no header. With compression (the filter's client data value 4: 2
//! for LZ4, 3 for Zstandard) a 12-byte header comes first (the decoded size, big-endian
//! 64-bit; the block size in bytes, big-endian 32-bit), then per block its compressed size
//! (big-endian 32-bit) and an LZ4 block or a Zstandard frame of the bitshuffled block, then the
//! remaining elements' bytes as they are (no size). This is not the HDF5 LZ4 filter's framing
//! (no uncompressed blocks, a last block rounded down, a tail without a record), and the
//! transposition is not Blosc's bitshuffle of whole buffers.
//!
//! The transposition is written here (no crate on crates.io implements bitshuffle's block
//! layout); it follows bitshuffle's scalar reference code (`bshuf_trans_bit_elem_scal`,
//! `bshuf_untrans_bit_elem_scal`, the 8x8 bit transpose `TRANS_BIT_8X8`) and is tested on the
//! filter's own output (the regression files of bitshuffle's test suite in the real-file corpus,
//! and files written by hdf5plugin in the interop tests). LZ4 blocks are decoded by `lz4_flex`,
//! Zstandard frames by `zstd` (bounded as in [`crate::zstd_decode_bounded`]).
//!
//! ### Compatible Implementations
//! bitshuffle's `bshuf_h5filter.c` (hdf5plugin's `Bitshuffle`, h5py's and NeXus writers').
//!
//! ### Specification
//! - <https://github.com/kiyo-masui/bitshuffle> (`src/bshuf_h5filter.c`, `src/bitshuffle.c`,
//!   `src/bitshuffle_core.c`)
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.bitshuffle`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.bitshuffle", "configuration": {"elementsize": 4, "blocksize": 0, "compression": "lz4"}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert!(matches!(codec, vzarr_core::Codec::Bitshuffle { element_size: 4, .. }));
//! ```
//! `elementsize` is the element size in bytes, `blocksize` the block size in elements (0: the
//! filter's default, 8192 bytes' worth of elements rounded down to a multiple of 8, at least
//! 128), `compression` one of `none`, `lz4`, `zstd`, and `level` (with `zstd` only) the
//! Zstandard level, for encoding.

use vzarr_core::BitshuffleCompression;
use zarrs::array::codec::api::CodecError;

use crate::lz4h5::{be_u32, be_u64, lz4_block_into};

fn err(msg: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("bitshuffle: {msg}"))
}

/// The filter's default block size in elements (`bshuf_default_block_size`).
pub fn default_block_size(element_size: usize) -> usize {
    ((8192 / element_size.max(1)) / 8 * 8).max(128)
}

/// Transposes an 8x8 bit matrix held in a `u64` (byte `r` is row `r`, bit `c` column `c`):
/// bitshuffle's `TRANS_BIT_8X8`.
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Bitshuffles one block of `input.len() / s` elements (a multiple of 8) into `out`.
fn shuffle_block(input: &[u8], out: &mut [u8], s: usize) {
    let row = input.len() / s / 8;
    for j in 0..s {
        for g in 0..row {
            let mut x = [0u8; 8];
            for (m, b) in x.iter_mut().enumerate() {
                *b = input[(g * 8 + m) * s + j];
            }
            let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
            for (k, b) in y.iter().enumerate() {
                out[(j * 8 + k) * row + g] = *b;
            }
        }
    }
}

/// Undoes [`shuffle_block`] (also Blosc2's bit shuffle of a block).
pub(crate) fn unshuffle_block(input: &[u8], out: &mut [u8], s: usize) {
    let row = input.len() / s / 8;
    for j in 0..s {
        for g in 0..row {
            let mut x = [0u8; 8];
            for (k, b) in x.iter_mut().enumerate() {
                *b = input[(j * 8 + k) * row + g];
            }
            let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
            for (m, b) in y.iter().enumerate() {
                out[(g * 8 + m) * s + j] = *b;
            }
        }
    }
}

/// The element counts of the blocks of a chunk of `count` elements (the tail of `count % 8`
/// elements is not a block).
fn blocks(count: usize, block: usize) -> impl Iterator<Item = usize> {
    let last = count % block / 8 * 8;
    std::iter::repeat_n(block, count / block).chain((last > 0).then_some(last))
}

/// The parameters of a bitshuffle codec.
#[derive(Clone, Copy, Debug)]
pub struct Bitshuffle {
    /// Element size in bytes.
    pub element_size: usize,
    /// Block size in elements (0: the default).
    pub block_size: usize,
    /// Compression of each block.
    pub compression: BitshuffleCompression,
    /// Zstandard level (encoding).
    pub level: i32,
}

impl Bitshuffle {
    fn block(&self) -> Result<usize, CodecError> {
        let b = match self.block_size {
            0 => default_block_size(self.element_size),
            b => b,
        };
        if b % 8 != 0 || self.element_size == 0 {
            return Err(err(format!(
                "block size {b} (a multiple of 8 elements) or element size {}",
                self.element_size
            )));
        }
        Ok(b)
    }

    /// Decodes a chunk to at most `limit` bytes.
    pub fn decode_bounded(&self, encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        let s = self.element_size;
        if s == 0 {
            return Err(err("element size 0"));
        }
        if self.compression == BitshuffleCompression::None {
            if encoded.len() as u64 > limit {
                return Err(err(format!(
                    "{} bytes, past the {limit} the chunk can hold",
                    encoded.len()
                )));
            }
            if !encoded.len().is_multiple_of(s) {
                return Err(err(format!("{} bytes of {s}-byte elements", encoded.len())));
            }
            let count = encoded.len() / s;
            let block = self.block()?;
            let mut out = vec![0u8; encoded.len()];
            let mut pos = 0;
            for n in blocks(count, block) {
                let r = pos..pos + n * s;
                unshuffle_block(&encoded[r.clone()], &mut out[r], s);
                pos += n * s;
            }
            out[pos..].copy_from_slice(&encoded[pos..]);
            return Ok(out);
        }
        let total = be_u64(encoded, 0, "bitshuffle")?;
        if total > limit {
            return Err(err(format!(
                "the chunk declares {total} bytes, past the {limit} it can hold"
            )));
        }
        let total = usize::try_from(total).map_err(err)?;
        let block_bytes = be_u32(encoded, 8, "bitshuffle")? as usize;
        if total % s != 0 || !block_bytes.is_multiple_of(s) {
            return Err(err(format!(
                "{total} bytes in blocks of {block_bytes}: not whole {s}-byte elements"
            )));
        }
        let block = block_bytes / s;
        if block == 0 || !block.is_multiple_of(8) {
            return Err(err(format!("a block of {block} elements")));
        }
        let count = total / s;
        let mut out = vec![0u8; total];
        let mut tmp = vec![0u8; block_bytes.min(total)];
        let mut pos = 12;
        let mut at = 0;
        for n in blocks(count, block) {
            let stored = be_u32(encoded, pos, "bitshuffle")? as usize;
            pos += 4;
            let data = encoded
                .get(pos..pos.saturating_add(stored))
                .ok_or_else(|| err(format!("a block of {stored} bytes past the end")))?;
            pos += stored;
            let t = &mut tmp[..n * s];
            match self.compression {
                BitshuffleCompression::Lz4 => lz4_block_into(data, t)?,
                _ => {
                    let d = crate::zstd_decode_bounded(data, t.len() as u64)?;
                    if d.len() != t.len() {
                        return Err(err(format!(
                            "a zstd block decodes to {} bytes, not {}",
                            d.len(),
                            t.len()
                        )));
                    }
                    t.copy_from_slice(&d);
                }
            }
            unshuffle_block(t, &mut out[at..at + n * s], s);
            at += n * s;
        }
        let tail = total - at;
        let rest = encoded
            .get(pos..pos + tail)
            .ok_or_else(|| err("the last elements past the end"))?;
        out[at..].copy_from_slice(rest);
        Ok(out)
    }

    /// Encodes a chunk as the filter does.
    pub fn encode(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        let s = self.element_size;
        let block = self.block()?;
        if !raw.len().is_multiple_of(s) {
            return Err(err(format!("{} bytes of {s}-byte elements", raw.len())));
        }
        let count = raw.len() / s;
        let mut out = Vec::with_capacity(raw.len() + 64);
        if self.compression != BitshuffleCompression::None {
            out.extend((raw.len() as u64).to_be_bytes());
            out.extend(((block * s) as u32).to_be_bytes());
        }
        let mut at = 0;
        let mut tmp = vec![0u8; (block * s).min(raw.len())];
        for n in blocks(count, block) {
            let t = &mut tmp[..n * s];
            shuffle_block(&raw[at..at + n * s], t, s);
            at += n * s;
            match self.compression {
                BitshuffleCompression::None => out.extend_from_slice(t),
                BitshuffleCompression::Lz4 => {
                    let c = lz4_flex::block::compress(t);
                    out.extend((c.len() as u32).to_be_bytes());
                    out.extend(c);
                }
                BitshuffleCompression::Zstd => {
                    let c = ::zstd::bulk::compress(t, self.level).map_err(err)?;
                    out.extend((c.len() as u32).to_be_bytes());
                    out.extend(c);
                }
            }
        }
        out.extend_from_slice(&raw[at..]);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(s: usize, block: usize, compression: BitshuffleCompression) -> Bitshuffle {
        Bitshuffle {
            element_size: s,
            block_size: block,
            compression,
            level: 3,
        }
    }

    #[test]
    fn transposes_bits_as_bitshuffle_does() {
        // 8 one-byte elements: row k holds bit k of each element, element i at bit i.
        let input = [1u8, 0, 0, 0, 0, 0, 0, 0x81];
        let mut out = [0u8; 8];
        shuffle_block(&input, &mut out, 1);
        assert_eq!(out, [0x81, 0, 0, 0, 0, 0, 0, 0x80]);
        let mut back = [0u8; 8];
        unshuffle_block(&out, &mut back, 1);
        assert_eq!(back, input);
        // 16 two-byte elements 0..16 (little-endian): rows 0-3 of the low bytes.
        let input: Vec<u8> = (0..16u16).flat_map(u16::to_le_bytes).collect();
        let mut out = vec![0u8; 32];
        shuffle_block(&input, &mut out, 2);
        assert_eq!(&out[..8], &[0xaa, 0xaa, 0xcc, 0xcc, 0xf0, 0xf0, 0x00, 0xff]);
        assert!(out[8..].iter().all(|&b| b == 0));
    }

    #[test]
    fn round_trips_every_compression_and_tail() {
        for compression in [
            BitshuffleCompression::None,
            BitshuffleCompression::Lz4,
            BitshuffleCompression::Zstd,
        ] {
            for (s, block, count) in [(4, 0, 5000), (1, 64, 1003), (10, 16, 77), (8, 8, 7)] {
                let raw: Vec<u8> = (0..count * s).map(|i| (i * 7 % 253) as u8).collect();
                let c = codec(s, block, compression);
                let enc = c.encode(&raw).unwrap();
                assert_eq!(
                    c.decode_bounded(&enc, raw.len() as u64).unwrap(),
                    raw,
                    "{compression:?} {s} {block} {count}"
                );
            }
        }
    }

    #[test]
    fn refuses_what_it_cannot_hold() {
        let c = codec(4, 0, BitshuffleCompression::Lz4);
        let raw = vec![3u8; 4096];
        let enc = c.encode(&raw).unwrap();
        assert!(c.decode_bounded(&enc, 1000).is_err());
        let mut huge = (1u64 << 40).to_be_bytes().to_vec();
        huge.extend(32u32.to_be_bytes());
        assert!(c.decode_bounded(&huge, 1 << 20).is_err());
        let mut odd = 64u64.to_be_bytes().to_vec();
        odd.extend(12u32.to_be_bytes());
        assert!(c.decode_bounded(&odd, 64).is_err());
        let none = codec(4, 0, BitshuffleCompression::None);
        assert!(none.decode_bounded(&[0; 6], 100).is_err());
        assert!(none.decode_bounded(&[0; 400], 100).is_err());
    }
}
