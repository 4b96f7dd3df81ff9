//! LZO1X without a header, as PyTables' LZO filter (HDF5 filter id 305) stores each chunk.
//!
//! Decoding uses the `lzokay` crate (a pure-Rust port of lzokay, which decodes every LZO1X
//! stream liblzo2's `lzo1x_decompress_safe` does) into a buffer of the chunk's size: the stream
//! carries no length, so the size the array metadata implies is both the output buffer and the
//! bound. PyTables before 0.8 (2003) appended the decoded bytes' Adler-32 and their count
//! (each a little-endian `u32`) after the stream; a stream followed by exactly those eight
//! bytes is decoded and both are checked. Encoding writes an LZO1X stream of lzokay's
//! compressor, which every LZO1X decoder reads.
//!
//! ### Compatible Implementations
//! PyTables' `H5Zlzo.c` (HDF5 filter 305, `lzo1x_1_compress` / `lzo1x_decompress_safe`),
//! imagecodecs' `lzo_decode` with `header=False`.
//!
//! ### Specification
//! - LZO1X's stream format (liblzo2 `lzo1x_d.ch`): literal runs and back references in the
//!   M1-M4 instruction forms, ended by the M4 instruction of length 3 (`0x11 0x00 0x00`).
//! - Adler-32: RFC 1950, section 8.
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.lzo`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.lzo", "configuration": {}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Lzo);
//! ```

use lzokay::Error as LzoError;
use zarrs::array::codec::api::CodecError;

/// Decodes an LZO1X stream (or an early PyTables stream with its trailer) to at most `limit`
/// bytes.
pub fn lzo_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let limit = usize::try_from(limit)
        .map_err(|_| CodecError::Other(format!("lzo: a chunk of {limit} bytes")))?;
    decode(encoded, limit).map_err(|e| e.into_codec_error(limit))
}

/// Decodes an LZO1X stream whose decoded size nothing gives, to at most `most` bytes: the
/// output buffer doubles from four times the input (at least 64 KiB) while the stream decodes
/// past it, as PyTables' filter does.
pub fn lzo_decode_growing(encoded: &[u8], most: u64) -> Result<Vec<u8>, CodecError> {
    let most = usize::try_from(most).unwrap_or(usize::MAX);
    let mut limit = encoded.len().saturating_mul(4).max(1 << 16).min(most);
    loop {
        match decode(encoded, limit) {
            Err(Failure::Lzo(LzoError::OutputOverrun)) if limit < most => {
                limit = limit.saturating_mul(2).min(most);
            }
            r => return r.map_err(|e| e.into_codec_error(limit)),
        }
    }
}

/// Why a stream did not decode.
enum Failure {
    Lzo(LzoError),
    Trailer(usize),
}

impl Failure {
    fn into_codec_error(self, limit: usize) -> CodecError {
        CodecError::Other(match self {
            Failure::Lzo(LzoError::OutputOverrun) => {
                format!("lzo stream decodes past the {limit} bytes the chunk can hold")
            }
            Failure::Lzo(e) => format!("lzo: {e}"),
            Failure::Trailer(n) => format!(
                "lzo stream followed by 8 bytes that are not its Adler-32 and length ({n} \
                 bytes decoded)"
            ),
        })
    }
}

fn decode(encoded: &[u8], limit: usize) -> Result<Vec<u8>, Failure> {
    if limit == 0 && encoded.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = vec![0u8; limit];
    let n = match lzokay::decompress::decompress(encoded, &mut out) {
        Err(LzoError::InputNotConsumed) if encoded.len() > 8 => {
            let (stream, trailer) = encoded.split_at(encoded.len() - 8);
            // Not a stream and its trailer: the first error stands.
            let n = lzokay::decompress::decompress(stream, &mut out)
                .map_err(|_| Failure::Lzo(LzoError::InputNotConsumed))?;
            let word = |at: usize| u32::from_le_bytes(trailer[at..at + 4].try_into().unwrap());
            if word(4) as usize != n || word(0) != adler32(&out[..n]) {
                return Err(Failure::Trailer(n));
            }
            n
        }
        r => r.map_err(Failure::Lzo)?,
    };
    out.truncate(n);
    Ok(out)
}

/// Encodes `raw` as an LZO1X stream.
pub fn lzo_encode(raw: &[u8]) -> Result<Vec<u8>, CodecError> {
    lzokay::compress::compress(raw).map_err(|e| CodecError::Other(format!("lzo: {e}")))
}

/// Adler-32 (RFC 1950) of `bytes`.
fn adler32(bytes: &[u8]) -> u32 {
    let mut a = adler2::Adler32::new();
    a.write_slice(bytes);
    a.checksum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| ((i % 251) as f32 * 0.5).to_le_bytes())
            .collect()
    }

    #[test]
    fn round_trip_bounded_by_the_chunk() {
        let raw = sample();
        let enc = lzo_encode(&raw).unwrap();
        assert!(enc.len() < raw.len() / 4, "{}", enc.len());
        assert!(enc.ends_with(&[0x11, 0, 0]));
        assert_eq!(lzo_decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
        let e = lzo_decode_bounded(&enc, 1000).unwrap_err().to_string();
        assert!(e.contains("past the 1000 bytes"), "{e}");
        assert_eq!(lzo_decode_bounded(&[], 0).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn early_pytables_trailer_is_checked() {
        let raw = sample();
        let mut enc = lzo_encode(&raw).unwrap();
        enc.extend_from_slice(&adler32(&raw).to_le_bytes());
        enc.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        assert_eq!(lzo_decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
        let mut bad = enc.clone();
        let at = bad.len() - 6;
        bad[at] ^= 1;
        let e = lzo_decode_bounded(&bad, raw.len() as u64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Adler-32"), "{e}");
        let mut extra = lzo_encode(&raw).unwrap();
        extra.push(0);
        let e = lzo_decode_bounded(&extra, raw.len() as u64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("input not consumed"), "{e}");
    }

    #[test]
    fn growing_buffer_reaches_the_stream_or_the_bound() {
        let raw = vec![7u8; 300_000];
        let enc = lzo_encode(&raw).unwrap();
        assert!(enc.len() * 4 < 1 << 16, "{}", enc.len());
        assert_eq!(lzo_decode_growing(&enc, 1 << 20).unwrap(), raw);
        let e = lzo_decode_growing(&enc, 200_000).unwrap_err().to_string();
        assert!(e.contains("past the 200000 bytes"), "{e}");
    }

    #[test]
    fn adler32_of_rfc1950_example() {
        // "Wikipedia" -> 0x11E60398, the usual worked example.
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn damaged_streams_are_errors_or_bounded() {
        let raw = sample();
        let enc = lzo_encode(&raw).unwrap();
        for cut in (0..enc.len()).step_by(7) {
            assert!(lzo_decode_bounded(&enc[..cut], raw.len() as u64).is_err());
        }
        for at in 0..enc.len() {
            for flip in [0xff, 0x80, 0x01] {
                let mut m = enc.clone();
                m[at] ^= flip;
                if let Ok(v) = lzo_decode_bounded(&m, raw.len() as u64) {
                    assert!(v.len() <= raw.len());
                }
            }
        }
    }
}
