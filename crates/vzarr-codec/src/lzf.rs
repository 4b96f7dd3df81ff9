//! LZF without a header, as h5py's LZF filter (HDF5 filter id 32000) stores each chunk.
//!
//! Decoding uses the `lzf` crate (a Rust port of LibLZF, byte compatible with it) and writes at
//! most the chunk's size: the stream carries no length, so the size the array metadata implies
//! is both the output buffer and the bound. Encoding falls back to a stream of literal runs
//! when LibLZF's compressor gives up (its output would not be smaller than its input), so that
//! every chunk can be re-encoded.
//!
//! ### Compatible Implementations
//! h5py's `lzf_filter.c` (HDF5 filter 32000), LibLZF's `lzf_decompress`.
//!
//! ### Specification
//! - LibLZF's stream format (`lzf_d.c`): a control byte below 32 starts a run of `ctrl + 1`
//!   literal bytes; otherwise a back reference of length `(ctrl >> 5) + 2` (a length of 7 adds
//!   the next byte) at distance `((ctrl & 0x1f) << 8) + next byte + 1`.
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.lzf`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.lzf", "configuration": {}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Lzf);
//! ```

use zarrs::array::codec::api::CodecError;

/// Decodes an LZF stream to at most `limit` bytes.
pub fn lzf_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let limit = usize::try_from(limit)
        .map_err(|_| CodecError::Other(format!("lzf: a chunk of {limit} bytes")))?;
    if limit == 0 && encoded.is_empty() {
        return Ok(Vec::new());
    }
    lzf::decompress(encoded, limit).map_err(|e| match e {
        lzf::LzfError::BufferTooSmall => CodecError::Other(format!(
            "lzf stream decodes past the {limit} bytes the chunk can hold"
        )),
        e => CodecError::Other(format!("lzf: {e}")),
    })
}

/// Encodes `raw` as an LZF stream (literal runs where LZF does not compress).
pub fn lzf_encode(raw: &[u8]) -> Vec<u8> {
    match lzf::compress(raw) {
        Ok(v) => v,
        Err(_) => {
            let mut out = Vec::with_capacity(raw.len() + raw.len().div_ceil(32));
            for run in raw.chunks(32) {
                out.push((run.len() - 1) as u8);
                out.extend_from_slice(run);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds() {
        let raw: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let enc = lzf_encode(&raw);
        assert!(enc.len() < raw.len());
        assert_eq!(lzf_decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
        let e = lzf_decode_bounded(&enc, 100).unwrap_err().to_string();
        assert!(e.contains("past the 100 bytes"), "{e}");
        // Incompressible input: literal runs, still decodable.
        let noise: Vec<u8> = (0..1000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let enc = lzf_encode(&noise);
        assert_eq!(lzf_decode_bounded(&enc, 1000).unwrap(), noise);
        assert!(lzf_decode_bounded(&[0xff], 10).is_err());
    }
}
