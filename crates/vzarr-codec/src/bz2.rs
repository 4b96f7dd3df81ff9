//! The `numcodecs.bz2` bytes to bytes codec (a bzip2 stream), decoded to at most the chunk's
//! size.
//!
//! HDF5's bzip2 filter (id 307, PyTables' and hdf5plugin's `H5Zbzip2.c`) stores each chunk as
//! one bzip2 stream (`BZ2_bzBuffToBuffCompress` with the block size of its client data), which
//! is what numcodecs' `BZ2` writes and reads. Decoding streams with the `bzip2` crate (its
//! pure-Rust back end `libbz2-rs-sys`) and stops past the chunk's size.
//!
//! ### Compatible Implementations
//! `H5Zbzip2.c` (HDF5 filter 307), `numcodecs.bz2` in zarr-python / numcodecs, zarrs' `bz2`.
//!
//! ### Specification
//! - <https://github.com/zarr-developers/numcodecs> (`numcodecs.bz2`)
//!
//! ### Codec `name` (Zarr V3)
//! - `numcodecs.bz2`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "numcodecs.bz2", "configuration": {"level": 9}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Bz2 { level: 9 });
//! ```

use std::io::Write;

use zarrs::array::codec::api::CodecError;

use crate::bounded::read_bounded;

/// Decodes the bzip2 stream(s) of `encoded` to at most `limit` bytes.
pub fn bz2_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    read_bounded(
        bzip2::read::MultiBzDecoder::new(encoded),
        limit,
        "bzip2 stream decodes",
    )
}

/// Encodes `raw` as one bzip2 stream of block size `level` (1-9).
pub fn bz2_encode(raw: &[u8], level: u32) -> Result<Vec<u8>, CodecError> {
    let mut e =
        bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level.clamp(1, 9)));
    e.write_all(raw)?;
    Ok(e.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds() {
        let bomb = bz2_encode(&vec![0u8; 16 << 20], 9).unwrap();
        assert!(bomb.len() < 10_000, "{}", bomb.len());
        let e = bz2_decode_bounded(&bomb, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("past the 1048576 bytes"), "{e}");
        let enc = bz2_encode(b"abcabc", 1).unwrap();
        assert_eq!(bz2_decode_bounded(&enc, 6).unwrap(), b"abcabc");
        assert!(bz2_decode_bounded(b"not bzip2", 100).is_err());
    }
}
