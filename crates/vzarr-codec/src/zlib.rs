//! The `numcodecs.zlib` bytes to bytes codec with a bounded decoder, registered into zarrs at
//! run time.
//!
//! Encoding and configuration are zarrs' own `zlib` codec's; decoding stops at the size the
//! array metadata implies for the chunk (its decoded representation), so a chunk whose stream
//! inflates further (a compression bomb, or a reference into the wrong bytes) is an error
//! instead of an allocation of whatever the stream asks for. zarrs 0.23.14 inflates to the
//! end of the stream.
//!
//! ### Compatible Implementations
//! HDF5's `deflate` filter (id 1), `numcodecs.zlib` in zarr-python / numcodecs, zarrs' `zlib`.
//!
//! ### Specification
//! - <https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/numcodecs.zlib>
//! - RFC 1950 (zlib) and RFC 1951 (DEFLATE)
//!
//! ### Codec `name` (Zarr V3)
//! - `numcodecs.zlib`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "numcodecs.zlib", "configuration": {"level": 4}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Zlib { level: 4 });
//! ```

use zarrs::array::codec::ZlibCodec;
use zarrs::array::codec::api::CodecError;

use crate::bounded::{BoundedCodec, BoundedDecompressor, read_bounded};

/// `numcodecs.zlib` decoding at most the chunk's size.
pub type BoundedZlibCodec = BoundedCodec<ZlibCodec>;

/// Inflates `encoded` to at most `limit` bytes; more is an error.
pub fn inflate_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    read_bounded(
        flate2::read::ZlibDecoder::new(encoded),
        limit,
        "zlib stream inflates",
    )
}

impl BoundedDecompressor for ZlibCodec {
    const NAME_V3: &'static str = "numcodecs.zlib";
    const NAME_V2: &'static str = "zlib";

    fn decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        inflate_bounded(encoded, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(9));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn stops_at_the_chunk_size() {
        let bomb = zlib(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        let e = inflate_bounded(&bomb, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("inflates past the 1048576 bytes"), "{e}");
        assert_eq!(inflate_bounded(&zlib(b"abc"), 3).unwrap(), b"abc");
        assert!(inflate_bounded(b"not zlib", 100).is_err());
    }
}
