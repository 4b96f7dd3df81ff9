//! The `numcodecs.fletcher32` bytes to bytes codec, registered into zarrs at run time.
//!
//! Appends HDF5's Fletcher-32 checksum of the input (`H5_checksum_fletcher32`: 16-bit
//! big-endian words, the odd trailing byte included) as 4 little-endian bytes; decoding checks
//! and strips it, also accepting the byte-swapped form of HDF5 releases before 1.6.3, as HDF5
//! does. It replaces zarrs 0.23.14's built-in codec of the same name (run-time plugins take
//! precedence), which skips the last byte of odd-length input, so that every odd-length
//! chunk fails its checksum.
//!
//! ### Compatible Implementations
//! HDF5's `fletcher32` filter (id 3), `numcodecs.fletcher32` in zarr-python / numcodecs, and
//! zarrs' `fletcher32` codec on even-length input.
//!
//! ### Specification
//! - <https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/numcodecs.fletcher32>
//! - HDF5 filter id 3 (<https://support.hdfgroup.org/documentation/hdf5/latest/group___f_l_e_t_c_h_e_r32.html>)
//!
//! ### Codec `name` (Zarr V3)
//! - `numcodecs.fletcher32`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "numcodecs.fletcher32", "configuration": {}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Fletcher32);
//! ```

use std::borrow::Cow;
use std::sync::{Arc, Once};

use zarrs::array::codec::api::{
    self as codec_api, ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, Codec,
    CodecError, CodecMetadataOptions, CodecOptions, CodecTraits, PartialDecoderCapability,
    PartialEncoderCapability, RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::plugin::{ExtensionName, PluginCreateError, ZarrVersion};

use crate::bounded::{WHOLE_CHUNK_DECODER, WHOLE_CHUNK_ENCODER};

/// HDF5's Fletcher-32 checksum (`H5_checksum_fletcher32`), odd trailing byte included.
pub fn h5_fletcher32(data: &[u8]) -> u32 {
    let mut sum1: u32 = 0;
    let mut sum2: u32 = 0;
    let mut words = data.chunks_exact(2);
    let mut remaining = data.len() / 2;
    while remaining > 0 {
        let tlen = remaining.min(360);
        remaining -= tlen;
        for w in words.by_ref().take(tlen) {
            sum1 += (u32::from(w[0]) << 8) | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let [last] = words.remainder() {
        sum1 += u32::from(*last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// The `numcodecs.fletcher32` codec with HDF5's checksum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fletcher32Codec;

const CHECKSUM_SIZE: usize = 4;

impl ExtensionName for Fletcher32Codec {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match version {
            ZarrVersion::V3 => "numcodecs.fletcher32",
            ZarrVersion::V2 => "fletcher32",
        }))
    }
}

impl CodecTraits for Fletcher32Codec {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        Some(Configuration::default())
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        WHOLE_CHUNK_DECODER
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        WHOLE_CHUNK_ENCODER
    }
}

impl BytesToBytesCodecTraits for Fletcher32Codec {
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
        match decoded {
            BytesRepresentation::FixedSize(n) => {
                BytesRepresentation::FixedSize(n + CHECKSUM_SIZE as u64)
            }
            BytesRepresentation::BoundedSize(n) => {
                BytesRepresentation::BoundedSize(n + CHECKSUM_SIZE as u64)
            }
            BytesRepresentation::UnboundedSize => BytesRepresentation::UnboundedSize,
        }
    }

    fn encode<'a>(
        &self,
        decoded: ArrayBytesRaw<'a>,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let mut out = Vec::with_capacity(decoded.len() + CHECKSUM_SIZE);
        out.extend_from_slice(&decoded);
        out.extend_from_slice(&h5_fletcher32(&decoded).to_le_bytes());
        Ok(Cow::Owned(out))
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        _decoded_representation: &BytesRepresentation,
        options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let Some(n) = encoded.len().checked_sub(CHECKSUM_SIZE) else {
            return Err(CodecError::Other(
                "fletcher32: input shorter than the checksum".into(),
            ));
        };
        if options.validate_checksums() {
            let mut stored = [0u8; CHECKSUM_SIZE];
            stored.copy_from_slice(&encoded[n..]);
            let stored = u32::from_le_bytes(stored);
            let sum = h5_fletcher32(&encoded[..n]);
            let b = sum.to_le_bytes();
            let reversed = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
            if stored != sum && stored != reversed {
                return Err(CodecError::InvalidChecksum);
            }
        }
        let mut v = encoded.into_owned();
        v.truncate(n);
        Ok(Cow::Owned(v))
    }
}

static REGISTER: Once = Once::new();

/// Registers the fixed codecs with zarrs (once per process): `numcodecs.fletcher32` with
/// HDF5's checksum, `numcodecs.zlib` and `zstd` with bounded decoders
/// ([`crate::BoundedZlibCodec`], [`crate::BoundedZstdCodec`]), and the codecs of third-party
/// HDF5 filters ([`crate::filters`]). Affects every zarrs codec chain built afterwards in this
/// process; [`crate::ByteCodecs::new`] calls it.
pub fn register_zarrs_fixes() {
    REGISTER.call_once(|| {
        crate::filters::register();
        codec_api::register_codec_v3(codec_api::CodecRuntimePluginV3::new(
            |name| {
                name == "numcodecs.fletcher32"
                    || name == "https://codec.zarrs.dev/bytes_to_bytes/fletcher32"
            },
            |metadata| {
                if !metadata.configuration_is_none_or_empty() {
                    return Err(PluginCreateError::Other(
                        "numcodecs.fletcher32 takes no configuration".into(),
                    ));
                }
                Ok(Codec::BytesToBytes(Arc::new(Fletcher32Codec)))
            },
        ));
        codec_api::register_codec_v3(codec_api::CodecRuntimePluginV3::new(
            |name| name == "numcodecs.zlib" || name == "zlib",
            |metadata| {
                let conf: zarrs::metadata_ext::codec::zlib::ZlibCodecConfiguration = metadata
                    .to_typed_configuration()
                    .map_err(|e| PluginCreateError::Other(e.to_string()))?;
                let inner = zarrs::array::codec::ZlibCodec::new_with_configuration(&conf)?;
                Ok(Codec::BytesToBytes(Arc::new(
                    crate::zlib::BoundedZlibCodec::new(inner),
                )))
            },
        ));
        codec_api::register_codec_v3(codec_api::CodecRuntimePluginV3::new(
            |name| name == "zstd" || name == "numcodecs.zstd",
            |metadata| {
                let conf: zarrs::metadata_ext::codec::zstd::ZstdCodecConfiguration = metadata
                    .to_typed_configuration()
                    .map_err(|e| PluginCreateError::Other(e.to_string()))?;
                let inner = zarrs::array::codec::ZstdCodec::new_with_configuration(&conf)?;
                Ok(Codec::BytesToBytes(Arc::new(
                    crate::zstd::BoundedZstdCodec::new(inner),
                )))
            },
        ));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zarrs_builtin_codec_drops_the_odd_byte() {
        // The upstream gap this module fills: zarrs' own codec ignores the last byte of
        // odd-length input, so its checksum of "abc" equals that of "ab".
        let builtin = zarrs::array::codec::Fletcher32Codec::new();
        let enc = builtin
            .encode(Cow::Borrowed(b"abc"), &CodecOptions::default())
            .unwrap();
        let theirs = u32::from_le_bytes(enc[3..7].try_into().unwrap());
        assert_eq!(theirs, h5_fletcher32(b"ab"));
        assert_ne!(theirs, h5_fletcher32(b"abc"));
        // Even lengths agree.
        let enc = builtin
            .encode(Cow::Borrowed(b"abcd"), &CodecOptions::default())
            .unwrap();
        assert_eq!(
            u32::from_le_bytes(enc[4..8].try_into().unwrap()),
            h5_fletcher32(b"abcd")
        );
    }

    #[test]
    fn checksum_matches_numcodecs() {
        // Values numcodecs 0.17.1 (Fletcher32().encode) appends, little-endian.
        assert_eq!(h5_fletcher32(b"abc"), 0x25c5_c462);
        assert_eq!(h5_fletcher32(b"ab"), 0x6162_6162);
        assert_eq!(h5_fletcher32(&(0..201u8).collect::<Vec<_>>()), 0xbe00_9b37);
        let v: Vec<u8> = (0..1001u32).map(|i| ((i * 7) % 256) as u8).collect();
        assert_eq!(h5_fletcher32(&v), 0x8ae4_94e7);
    }

    #[test]
    fn checksum_matches_hdf5_on_odd_lengths() {
        // Reference values of HDF5's H5_checksum_fletcher32.
        assert_eq!(h5_fletcher32(b""), 0);
        assert_eq!(h5_fletcher32(b"ab"), 0x6162_6162);
        // "abc": words 0x6162, then 0x6300 for the odd byte.
        let s1 = 0x6162u32 + 0x6300;
        let s2 = 0x6162u32 + s1;
        let s2 = (s2 & 0xffff) + (s2 >> 16);
        assert_eq!(h5_fletcher32(b"abc"), (s2 << 16) | s1);
        let c = Fletcher32Codec;
        let data: Vec<u8> = (0..1001u32).map(|i| (i * 7) as u8).collect();
        let enc = c
            .encode(Cow::Borrowed(&data), &CodecOptions::default())
            .unwrap();
        let rep = BytesRepresentation::FixedSize(data.len() as u64);
        assert_eq!(
            c.decode(enc.clone(), &rep, &CodecOptions::default())
                .unwrap()
                .as_ref(),
            &data[..]
        );
        let mut bad = enc.into_owned();
        bad[1000] ^= 1;
        assert!(
            c.decode(Cow::Owned(bad), &rep, &CodecOptions::default())
                .is_err()
        );
    }
}
