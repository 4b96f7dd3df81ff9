//! LZ4 in the framing of the HDF5 LZ4 filter (HDF5 filter id 32004), decoded to at most the
//! chunk's size.
//!
//! A chunk is a 12-byte header (the decoded size, big-endian signed 64-bit; the block size,
//! big-endian signed 32-bit) followed by one record per block of the block size (the last one
//! shorter): its stored size (big-endian 32-bit), then that many bytes, an LZ4 block or, when
//! the stored size equals the block's decoded size, the block as it is. This is neither the
//! LZ4 frame format nor numcodecs' `lz4` (a 4-byte little-endian size then one block), so
//! `numcodecs.lz4` does not decode it. LZ4 blocks are decoded by `lz4_flex` (safe Rust).
//!
//! ### Compatible Implementations
//! The HDF Group's `H5Zlz4.c` (hdf5plugin's `LZ4`), imagecodecs' `lz4h5` (imagecodecs-zarr's
//! `imagecodecs_lz4h5`).
//!
//! ### Specification
//! - hdf5_plugins `LZ4/LZ4_HDF5_format.md` (The HDF Group)
//! - <https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md>
//!
//! ### Codec `name` (Zarr V3)
//! - `imagecodecs_lz4h5`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "imagecodecs_lz4h5", "configuration": {}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Lz4Hdf5);
//! ```

use zarrs::array::codec::api::CodecError;

/// Block size the HDF5 filter uses when its client data gives none (1 GiB).
const DEFAULT_BLOCK_SIZE: usize = 1 << 30;

fn err(msg: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("lz4h5: {msg}"))
}

/// A big-endian `u32` at `pos`, or an error naming `what`.
pub(crate) fn be_u32(data: &[u8], pos: usize, what: &str) -> Result<u32, CodecError> {
    data.get(pos..pos + 4)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")))
        .ok_or_else(|| CodecError::Other(format!("{what}: truncated at byte {pos}")))
}

/// A big-endian `u64` at `pos`, or an error naming `what`.
pub(crate) fn be_u64(data: &[u8], pos: usize, what: &str) -> Result<u64, CodecError> {
    data.get(pos..pos + 8)
        .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| CodecError::Other(format!("{what}: truncated at byte {pos}")))
}

/// Decodes `n` bytes from the LZ4 block `block` into `out` (exactly `n` bytes or an error).
pub(crate) fn lz4_block_into(block: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
    let got = lz4_flex::block::decompress_into(block, out).map_err(err)?;
    if got != out.len() {
        return Err(err(format!(
            "a block decodes to {got} bytes, not {}",
            out.len()
        )));
    }
    Ok(())
}

/// Decodes an HDF5 LZ4 chunk to at most `limit` bytes.
pub fn lz4h5_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let total = be_u64(encoded, 0, "lz4h5")?;
    let block = u64::from(be_u32(encoded, 8, "lz4h5")?);
    if total > limit {
        return Err(err(format!(
            "the chunk declares {total} bytes, past the {limit} it can hold"
        )));
    }
    let total = usize::try_from(total).map_err(err)?;
    let block = usize::try_from(block).map_err(err)?.min(total);
    if block == 0 && total > 0 {
        return Err(err("block size 0"));
    }
    let mut out = vec![0u8; total];
    let mut pos = 12;
    for piece in out.chunks_mut(block.max(1)) {
        let stored = be_u32(encoded, pos, "lz4h5")? as usize;
        pos += 4;
        let data = encoded
            .get(pos..pos.saturating_add(stored))
            .ok_or_else(|| err(format!("a block of {stored} bytes past the end")))?;
        if stored == piece.len() {
            piece.copy_from_slice(data);
        } else {
            lz4_block_into(data, piece)?;
        }
        pos += stored;
    }
    Ok(out)
}

/// Encodes `raw` in the HDF5 LZ4 filter's framing, with the filter's default block size.
pub fn lz4h5_encode(raw: &[u8]) -> Vec<u8> {
    let block = DEFAULT_BLOCK_SIZE.min(raw.len());
    let mut out = Vec::with_capacity(12 + raw.len() + raw.len() / 200 + 32);
    out.extend((raw.len() as u64).to_be_bytes());
    out.extend((block as u32).to_be_bytes());
    for piece in raw.chunks(block.max(1)) {
        let c = lz4_flex::block::compress(piece);
        let stored: &[u8] = if c.len() >= piece.len() { piece } else { &c };
        out.extend((stored.len() as u32).to_be_bytes());
        out.extend_from_slice(stored);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds() {
        let raw: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 300).to_le_bytes())
            .collect();
        let enc = lz4h5_encode(&raw);
        assert_eq!(&enc[..8], &(raw.len() as u64).to_be_bytes());
        assert_eq!(lz4h5_decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
        assert!(lz4h5_decode_bounded(&enc, 100).is_err());
        assert_eq!(lz4h5_decode_bounded(&lz4h5_encode(b""), 0).unwrap(), b"");
        // A block stored as it is (stored size = decoded size), two blocks of 3 and 1.
        let mut f = 4u64.to_be_bytes().to_vec();
        f.extend(3u32.to_be_bytes());
        f.extend(3u32.to_be_bytes());
        f.extend(b"abc");
        f.extend(1u32.to_be_bytes());
        f.extend(b"d");
        assert_eq!(lz4h5_decode_bounded(&f, 4).unwrap(), b"abcd");
        // A chunk declaring 1 TiB: an error before any allocation.
        let mut huge = (1u64 << 40).to_be_bytes().to_vec();
        huge.extend(4u32.to_be_bytes());
        assert!(lz4h5_decode_bounded(&huge, 1 << 20).is_err());
        // Block size 0 would loop for ever in the C filter.
        let mut zero = 4u64.to_be_bytes().to_vec();
        zero.extend(0u32.to_be_bytes());
        assert!(lz4h5_decode_bounded(&zero, 4).is_err());
    }
}
