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

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use zarrs::array::codec::ZlibCodec;
use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, CodecError, CodecMetadataOptions,
    CodecOptions, CodecTraits, PartialDecoderCapability, PartialEncoderCapability,
    RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::plugin::ZarrVersion;

/// Largest decoded chunk when the metadata does not bound it (never the case for the fixed
/// size data types vzarr writes).
pub const UNBOUNDED_DECODE_LIMIT: u64 = 1 << 32;

/// `numcodecs.zlib` decoding at most the chunk's size.
#[derive(Clone, Debug)]
pub struct BoundedZlibCodec {
    inner: ZlibCodec,
}

impl BoundedZlibCodec {
    /// The bounded codec over zarrs' codec.
    pub fn new(inner: ZlibCodec) -> Self {
        BoundedZlibCodec { inner }
    }
}

/// Inflates `encoded` to at most `limit` bytes; more is an error.
pub fn inflate_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(usize::try_from(limit.min(1 << 26)).unwrap_or(0));
    flate2::read::ZlibDecoder::new(encoded)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(CodecError::Other(format!(
            "zlib stream inflates past the {limit} bytes the chunk can hold"
        )));
    }
    Ok(out)
}

impl CodecTraits for BoundedZlibCodec {
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

impl zarrs::plugin::ExtensionName for BoundedZlibCodec {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match version {
            ZarrVersion::V3 => "numcodecs.zlib",
            ZarrVersion::V2 => "zlib",
        }))
    }
}

impl BytesToBytesCodecTraits for BoundedZlibCodec {
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
        Ok(Cow::Owned(inflate_bounded(&encoded, limit)?))
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        self.inner.encoded_representation(decoded)
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
