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

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use zarrs::array::codec::ZstdCodec;
use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, CodecError, CodecMetadataOptions,
    CodecOptions, CodecTraits, PartialDecoderCapability, PartialEncoderCapability,
    RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::plugin::ZarrVersion;

use crate::UNBOUNDED_DECODE_LIMIT;

/// `zstd` decoding at most the chunk's size.
#[derive(Clone, Debug)]
pub struct BoundedZstdCodec {
    inner: ZstdCodec,
}

impl BoundedZstdCodec {
    /// The bounded codec over zarrs' codec.
    pub fn new(inner: ZstdCodec) -> Self {
        BoundedZstdCodec { inner }
    }
}

/// Decodes the zstd frames of `encoded` to at most `limit` bytes; more is an error, as is
/// anything that is not zstd. The content size a frame declares is not trusted.
pub fn zstd_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(usize::try_from(limit.min(1 << 26)).unwrap_or(0));
    ::zstd::stream::read::Decoder::new(encoded)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(CodecError::Other(format!(
            "zstd frame decodes past the {limit} bytes the chunk can hold"
        )));
    }
    Ok(out)
}

impl CodecTraits for BoundedZstdCodec {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        version: ZarrVersion,
        options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        self.inner.configuration(version, options)
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        PartialDecoderCapability {
            partial_read: false,
            partial_decode: false,
        }
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        PartialEncoderCapability {
            partial_encode: false,
        }
    }
}

impl zarrs::plugin::ExtensionName for BoundedZstdCodec {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match version {
            ZarrVersion::V3 => "zstd",
            ZarrVersion::V2 => "zstd",
        }))
    }
}

impl BytesToBytesCodecTraits for BoundedZstdCodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn BytesToBytesCodecTraits> {
        self as Arc<dyn BytesToBytesCodecTraits>
    }

    fn recommended_concurrency(
        &self,
        decoded_representation: &BytesRepresentation,
    ) -> Result<RecommendedConcurrency, CodecError> {
        self.inner.recommended_concurrency(decoded_representation)
    }

    fn encode<'a>(
        &self,
        decoded: ArrayBytesRaw<'a>,
        options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.inner.encode(decoded, options)
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let limit = decoded_representation
            .size()
            .unwrap_or(UNBOUNDED_DECODE_LIMIT);
        Ok(Cow::Owned(zstd_decode_bounded(&encoded, limit)?))
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        self.inner.encoded_representation(decoded)
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
