//! The `zstd` bytes to bytes codec with a bounded decoder, registered into zarrs at run time.
//!
//! Encoding and configuration are zarrs' own `zstd` codec's; decoding streams the frames and
//! stops at the size the array metadata implies for the chunk (its decoded representation).
//! zarrs 0.23.14 allocates whatever content size a frame's header declares before decoding,
//! so a chunk of a few bytes declaring 2^40 bytes aborted the process (a failed allocation);
//! here it is an error, and a frame that decodes past the chunk's size too.
//!
//! ### Compatible Implementations
//! HDF5's zstd filter (id 32015, hdf5plugin: one frame per chunk), `zstd` in zarr-python,
//! zarrs' `zstd`.
//!
//! ### Specification
//! - <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/zstd/index.html>
//! - RFC 8878 (Zstandard)
//!
//! ### Codec `name` (Zarr V3)
//! - `zstd`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "zstd", "configuration": {"level": 3, "checksum": false}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Zstd { level: 3 });
//! ```

use zarrs::array::codec::ZstdCodec;
use zarrs::array::codec::api::CodecError;

use crate::bounded::{BoundedCodec, BoundedDecompressor, read_bounded};

/// `zstd` decoding at most the chunk's size.
pub type BoundedZstdCodec = BoundedCodec<ZstdCodec>;

/// Decodes the zstd frames of `encoded` to at most `limit` bytes; more is an error, as is
/// anything that is not zstd. The content size a frame declares is not trusted.
pub fn zstd_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    read_bounded(
        ::zstd::stream::read::Decoder::new(encoded)?,
        limit,
        "zstd frame decodes",
    )
}

impl BoundedDecompressor for ZstdCodec {
    const NAME_V3: &'static str = "zstd";
    const NAME_V2: &'static str = "zstd";

    fn decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        zstd_decode_bounded(encoded, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame that declares `declared` bytes of content and holds none.
    fn lying_frame(declared: u64) -> Vec<u8> {
        // Magic, a descriptor with an 8-byte content size and a single segment, the size,
        // then one last, raw, empty block.
        let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0];
        f.extend(declared.to_le_bytes());
        f.extend([0x01, 0x00, 0x00]);
        f
    }

    #[test]
    fn stops_at_the_chunk_size_whatever_the_frame_declares() {
        // zarrs' own decoder aborts the process on this frame (it allocates 1 TiB first);
        // the stream decoder refuses the window such a frame asks for.
        let e = zstd_decode_bounded(&lying_frame(1 << 40), 16).unwrap_err();
        assert!(e.to_string().contains("too much memory"), "{e}");
        assert_eq!(zstd_decode_bounded(&lying_frame(0), 16).unwrap(), b"");
        let bomb = ::zstd::bulk::compress(&vec![0u8; 64 << 20], 19).unwrap();
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        let e = zstd_decode_bounded(&bomb, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("decodes past the 1048576 bytes"), "{e}");
        let ok = ::zstd::bulk::compress(b"abc", 3).unwrap();
        assert_eq!(zstd_decode_bounded(&ok, 3).unwrap(), b"abc");
        assert!(zstd_decode_bounded(b"not zstd", 100).is_err());
    }

    #[test]
    fn a_codec_chain_uses_it() {
        let chain = crate::ByteCodecs::new(&[vzarr_core::Codec::Zstd { level: 3 }]).unwrap();
        // A chunk of 16 bytes whose frame declares 1 TiB: an error, not an abort.
        assert!(chain.decode(&lying_frame(1 << 40), 16).is_err());
        let enc = chain.encode(&[7u8; 1000]).unwrap();
        assert_eq!(chain.decode(&enc, 1000).unwrap(), vec![7u8; 1000]);
    }
}
