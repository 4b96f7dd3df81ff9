//! What this crate's zarrs codecs share: they decode and encode whole chunks only (no partial
//! decoding or encoding), and every decoder stops at the chunk's decoded size, the
//! representation zarrs passes down.
//!
//! [`BoundedCodec`] is zarrs' own codec with its decoder replaced by a bounded one
//! ([`BoundedDecompressor`]): [`crate::BoundedZlibCodec`] and [`crate::BoundedZstdCodec`].
//! [`read_bounded`] is the bounded read of a streaming decoder (zlib, zstd, bzip2).

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, CodecError, CodecMetadataOptions,
    CodecOptions, CodecTraits, PartialDecoderCapability, PartialEncoderCapability,
    RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::plugin::{ExtensionName, ZarrVersion};

/// Largest decoded chunk when the metadata does not bound it (never the case for the fixed
/// size data types vzarr writes).
pub const UNBOUNDED_DECODE_LIMIT: u64 = 1 << 32;

/// The partial decoding of this crate's codecs: none, a chunk is decoded whole.
pub(crate) const WHOLE_CHUNK_DECODER: PartialDecoderCapability = PartialDecoderCapability {
    partial_read: false,
    partial_decode: false,
};

/// The partial encoding of this crate's codecs: none, a chunk is encoded whole.
pub(crate) const WHOLE_CHUNK_ENCODER: PartialEncoderCapability = PartialEncoderCapability {
    partial_encode: false,
};

/// The most bytes a chunk of `decoded` may decode to ([`UNBOUNDED_DECODE_LIMIT`] when the
/// representation does not say).
pub(crate) fn decode_limit(decoded: &BytesRepresentation) -> u64 {
    decoded.size().unwrap_or(UNBOUNDED_DECODE_LIMIT)
}

/// Reads `decoder` to its end, at most `limit` bytes: more is the error "`what` past the
/// `limit` bytes the chunk can hold", and a read error is an error.
pub(crate) fn read_bounded(
    decoder: impl Read,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(usize::try_from(limit.min(1 << 26)).unwrap_or(0));
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(CodecError::Other(format!(
            "{what} past the {limit} bytes the chunk can hold"
        )));
    }
    Ok(out)
}

/// A zarrs bytes to bytes codec whose decoding [`BoundedCodec`] replaces with one that stops
/// at the chunk's size; everything else (configuration, encoding) stays zarrs'.
pub trait BoundedDecompressor: BytesToBytesCodecTraits + Clone + 'static {
    /// The codec's name in Zarr v3 metadata.
    const NAME_V3: &'static str;
    /// The codec's name in Zarr v2 metadata.
    const NAME_V2: &'static str;

    /// Decodes `encoded` to at most `limit` bytes; more is an error.
    fn decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError>;
}

/// zarrs' codec `C` decoding at most the chunk's size.
#[derive(Clone, Debug)]
pub struct BoundedCodec<C> {
    inner: C,
}

impl<C: BoundedDecompressor> BoundedCodec<C> {
    /// The bounded codec over zarrs' codec.
    pub fn new(inner: C) -> Self {
        BoundedCodec { inner }
    }
}

impl<C: BoundedDecompressor> CodecTraits for BoundedCodec<C> {
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
        WHOLE_CHUNK_DECODER
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        WHOLE_CHUNK_ENCODER
    }
}

impl<C: BoundedDecompressor> ExtensionName for BoundedCodec<C> {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match version {
            ZarrVersion::V3 => C::NAME_V3,
            ZarrVersion::V2 => C::NAME_V2,
        }))
    }
}

impl<C: BoundedDecompressor> BytesToBytesCodecTraits for BoundedCodec<C> {
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
        let limit = decode_limit(decoded_representation);
        Ok(Cow::Owned(C::decode_bounded(&encoded, limit)?))
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        self.inner.encoded_representation(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BoundedZlibCodec, BoundedZstdCodec};

    #[test]
    fn read_bounded_stops_one_byte_past_the_limit() {
        assert_eq!(read_bounded(&b"abc"[..], 3, "x").unwrap(), b"abc");
        assert_eq!(read_bounded(&b""[..], 0, "x").unwrap(), b"");
        let e = read_bounded(&b"abcd"[..], 3, "the stream decodes").unwrap_err();
        assert_eq!(
            e.to_string(),
            CodecError::Other("the stream decodes past the 3 bytes the chunk can hold".into())
                .to_string()
        );
    }

    #[test]
    fn decode_limit_is_the_representation_size() {
        assert_eq!(decode_limit(&BytesRepresentation::FixedSize(7)), 7);
        assert_eq!(decode_limit(&BytesRepresentation::BoundedSize(9)), 9);
        assert_eq!(
            decode_limit(&BytesRepresentation::UnboundedSize),
            UNBOUNDED_DECODE_LIMIT
        );
    }

    #[test]
    fn bounded_codecs_keep_zarrs_names_and_configuration() {
        let zlib = BoundedZlibCodec::new(zarrs::array::codec::ZlibCodec::new(
            4u32.try_into().unwrap(),
        ));
        assert_eq!(zlib.name(ZarrVersion::V3).unwrap(), "numcodecs.zlib");
        assert_eq!(zlib.name(ZarrVersion::V2).unwrap(), "zlib");
        let zstd = BoundedZstdCodec::new(zarrs::array::codec::ZstdCodec::new(3, false));
        assert_eq!(zstd.name(ZarrVersion::V3).unwrap(), "zstd");
        assert_eq!(zstd.name(ZarrVersion::V2).unwrap(), "zstd");
        let options = CodecMetadataOptions::default();
        assert_eq!(
            zstd.configuration(ZarrVersion::V3, &options),
            zarrs::array::codec::ZstdCodec::new(3, false).configuration(ZarrVersion::V3, &options)
        );
        assert!(!zstd.partial_decoder_capability().partial_decode);
        assert!(!zlib.partial_encoder_capability().partial_encode);
    }
}
