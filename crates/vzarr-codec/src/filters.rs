//! Codecs of third-party HDF5 filters, registered into zarrs at run time: `numcodecs.bz2`
//! ([`crate::bz2`]), `vzarr.lzf` ([`crate::lzf`]), `imagecodecs_lz4h5` ([`crate::lz4h5`]),
//! `vzarr.bitshuffle` ([`crate::bitshuffle`]), `vzarr.zfp` ([`crate::zfp`]),
//! `imagecodecs_szip` ([`crate::szip`]), `vzarr.lzo` ([`crate::lzo`]), `vzarr.blosc2`
//! ([`crate::blosc2`], decoding only), `vzarr.jpegls` ([`crate::jpegls`]) and `vzarr.htj2k`
//! ([`crate::htj2k`], decoding only).
//! One zarrs codec type serves them all: its configuration is the [`vzarr_core::Codec`] it was
//! built from, and every decoder writes at most the chunk's decoded size (the representation
//! zarrs passes down), so a chunk declaring more, or a stream that decodes further, is an
//! error and never an allocation of what the chunk claims.
use std::borrow::Cow;
use std::sync::Arc;

use vzarr_core::Codec as VCodec;
use zarrs::array::codec::api::{
    self as codec_api, ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, Codec,
    CodecError, CodecMetadataOptions, CodecOptions, CodecTraits, PartialDecoderCapability,
    PartialEncoderCapability, RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::plugin::{ExtensionName, PluginCreateError, ZarrVersion};

use crate::bitshuffle::Bitshuffle;
use crate::bounded::{WHOLE_CHUNK_DECODER, WHOLE_CHUNK_ENCODER, decode_limit};
use crate::szip::SzipHdf5;
use crate::zfp::ZfpHdf5;

/// The Zarr v3 names of the codecs of this module.
pub const FILTER_CODEC_NAMES: [&str; 10] = [
    "numcodecs.bz2",
    "vzarr.lzf",
    "imagecodecs_lz4h5",
    "vzarr.bitshuffle",
    "vzarr.zfp",
    "imagecodecs_szip",
    "vzarr.blosc2",
    "vzarr.lzo",
    "vzarr.jpegls",
    "vzarr.htj2k",
];

/// A third-party HDF5 filter's codec for zarrs.
#[derive(Clone, Debug)]
pub struct FilterCodec {
    codec: VCodec,
    name: &'static str,
}

impl FilterCodec {
    /// The zarrs codec of `codec`, if it is one of this module's.
    pub fn new(codec: VCodec) -> Option<Self> {
        let name = match codec {
            VCodec::Bz2 { .. } => FILTER_CODEC_NAMES[0],
            VCodec::Lzf => FILTER_CODEC_NAMES[1],
            VCodec::Lz4Hdf5 => FILTER_CODEC_NAMES[2],
            VCodec::Bitshuffle { .. } => FILTER_CODEC_NAMES[3],
            VCodec::ZfpHdf5 { .. } => FILTER_CODEC_NAMES[4],
            VCodec::Szip { .. } => FILTER_CODEC_NAMES[5],
            VCodec::Blosc2Hdf5 => FILTER_CODEC_NAMES[6],
            VCodec::Lzo => FILTER_CODEC_NAMES[7],
            VCodec::JpegLs => FILTER_CODEC_NAMES[8],
            VCodec::Htj2k { .. } => FILTER_CODEC_NAMES[9],
            _ => return None,
        };
        Some(FilterCodec { codec, name })
    }

    fn bitshuffle(&self) -> Option<Bitshuffle> {
        match self.codec {
            VCodec::Bitshuffle {
                element_size,
                block_size,
                compression,
                level,
            } => Some(Bitshuffle {
                element_size,
                block_size,
                compression,
                level,
            }),
            _ => None,
        }
    }

    /// Decodes one chunk to at most `limit` bytes.
    pub fn decode_bounded(&self, encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        match &self.codec {
            VCodec::Bz2 { .. } => crate::bz2::bz2_decode_bounded(encoded, limit),
            VCodec::Lzf => crate::lzf::lzf_decode_bounded(encoded, limit),
            VCodec::Lz4Hdf5 => crate::lz4h5::lz4h5_decode_bounded(encoded, limit),
            VCodec::Blosc2Hdf5 => crate::blosc2::blosc2_decode_bounded(encoded, limit),
            VCodec::Lzo => crate::lzo::lzo_decode_bounded(encoded, limit),
            VCodec::JpegLs => crate::jpegls::jpegls_decode_bounded(encoded, limit),
            VCodec::Htj2k { endian } => crate::htj2k::htj2k_decode_bounded(encoded, limit, *endian),
            c @ VCodec::ZfpHdf5 { .. } => ZfpHdf5::new(c)
                .expect("a zfp codec")?
                .decode_bounded(encoded, limit),
            c @ VCodec::Szip { .. } => SzipHdf5::new(c)
                .expect("a szip codec")?
                .decode_bounded(encoded, limit),
            _ => self
                .bitshuffle()
                .expect("a filter codec")
                .decode_bounded(encoded, limit),
        }
    }

    /// Why vzarr cannot write this codec's data so that it decodes to the values given, if it
    /// cannot: the codecs it decodes only, and zfp in a lossy mode.
    pub fn encoding_refused(&self) -> Option<&'static str> {
        match &self.codec {
            VCodec::Blosc2Hdf5 => {
                Some("vzarr.blosc2 decodes only: vzarr does not write Blosc2 frames")
            }
            VCodec::Htj2k { .. } => {
                Some("vzarr.htj2k decodes only: vzarr does not write JPEG 2000 codestreams")
            }
            c @ VCodec::ZfpHdf5 { .. } => match ZfpHdf5::new(c) {
                Some(Ok(z)) if z.reversible() => None,
                _ => {
                    Some("vzarr.zfp in a lossy mode: re-encoding decoded values would change them")
                }
            },
            _ => None,
        }
    }

    /// Encodes one chunk.
    pub fn encode_raw(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        if let Some(why) = self.encoding_refused() {
            return Err(CodecError::Other(why.into()));
        }
        match &self.codec {
            VCodec::Bz2 { level } => crate::bz2::bz2_encode(raw, *level),
            VCodec::Lzf => Ok(crate::lzf::lzf_encode(raw)),
            VCodec::Lz4Hdf5 => Ok(crate::lz4h5::lz4h5_encode(raw)),
            VCodec::Lzo => crate::lzo::lzo_encode(raw),
            VCodec::JpegLs => crate::jpegls::jpegls_encode(raw),
            // Refused above (`encoding_refused`); the arm keeps the match exhaustive.
            VCodec::Blosc2Hdf5 | VCodec::Htj2k { .. } => {
                Err(CodecError::Other(format!("{} decodes only", self.name)))
            }
            c @ VCodec::ZfpHdf5 { .. } => ZfpHdf5::new(c).expect("a zfp codec")?.encode(raw),
            c @ VCodec::Szip { .. } => SzipHdf5::new(c).expect("a szip codec")?.encode(raw),
            _ => self.bitshuffle().expect("a filter codec").encode(raw),
        }
    }
}

impl ExtensionName for FilterCodec {
    fn name(&self, _version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(self.name))
    }
}

impl CodecTraits for FilterCodec {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        match self.codec.to_zarr_json().get("configuration") {
            Some(serde_json::Value::Object(m)) => Some(Configuration::from(m.clone())),
            _ => Some(Configuration::default()),
        }
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        WHOLE_CHUNK_DECODER
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        WHOLE_CHUNK_ENCODER
    }
}

impl BytesToBytesCodecTraits for FilterCodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn BytesToBytesCodecTraits> {
        self as Arc<dyn BytesToBytesCodecTraits>
    }

    fn recommended_concurrency(
        &self,
        _decoded_representation: &BytesRepresentation,
    ) -> Result<RecommendedConcurrency, CodecError> {
        Ok(RecommendedConcurrency::new_maximum(1))
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        match (&self.codec, decoded) {
            (
                VCodec::Bitshuffle {
                    compression: vzarr_core::BitshuffleCompression::None,
                    ..
                },
                d,
            ) => *d,
            _ => BytesRepresentation::UnboundedSize,
        }
    }

    fn encode<'a>(
        &self,
        decoded: ArrayBytesRaw<'a>,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        Ok(Cow::Owned(self.encode_raw(&decoded)?))
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let out = self.decode_bounded(&encoded, decode_limit(decoded_representation))?;
        // A chunk of a fixed size decodes to exactly that many bytes: a shorter one is damaged
        // (or its reference cut short), even where a partial read would not notice.
        if let BytesRepresentation::FixedSize(n) = decoded_representation
            && out.len() as u64 != *n
        {
            return Err(CodecError::Other(format!(
                "{}: the chunk decodes to {} bytes, not {n}",
                self.name,
                out.len()
            )));
        }
        Ok(Cow::Owned(out))
    }
}

/// Registers this module's codecs with zarrs (called once, by [`crate::register_zarrs_fixes`]).
pub(crate) fn register() {
    codec_api::register_codec_v3(codec_api::CodecRuntimePluginV3::new(
        |name| FILTER_CODEC_NAMES.contains(&name),
        |metadata| {
            let json = serde_json::to_value(metadata)
                .map_err(|e| PluginCreateError::Other(e.to_string()))?;
            let codec = VCodec::from_zarr_json(&json)
                .map_err(|e| PluginCreateError::Other(e.to_string()))?;
            let c = FilterCodec::new(codec)
                .ok_or_else(|| PluginCreateError::Other(format!("not a filter codec: {json}")))?;
            Ok(Codec::BytesToBytes(Arc::new(c)))
        },
    ));
}
