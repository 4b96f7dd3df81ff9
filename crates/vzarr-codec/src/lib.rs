//! Chunk encoding and decoding with a virtual array's bytes-to-bytes codecs (`numcodecs.zlib`,
//! `numcodecs.shuffle`, `numcodecs.fletcher32`, `zstd`, `blosc`), using zarrs' implementations
//! so that re-encoded chunks decode exactly as a Zarr reader decodes them, and the codecs of
//! third-party HDF5 filters, registered with zarrs as plugins ([`filters`]: `numcodecs.bz2`,
//! `vzarr.lzf`, `imagecodecs_lz4h5`, `vzarr.bitshuffle`, `vzarr.zfp`, `imagecodecs_szip`,
//! `vzarr.lzo`, `vzarr.blosc2`, `vzarr.jpegls`, `vzarr.htj2k`).
//! Every decoder writes at most the chunk's size.
//!
//! The `bytes` codec is the identity on chunk bytes kept in the stored byte order, so callers
//! work with raw chunk bytes in the array's endianness. String arrays use the `vlen-utf8`
//! array-to-bytes codec instead ([`vlen_utf8`]).

#![forbid(unsafe_code)]

mod aec;
pub mod bitshuffle;
pub mod blosc2;
mod bounded;
pub mod bz2;
pub mod filters;
mod fletcher32;
pub mod htj2k;
pub mod jpegls;
pub mod lz4h5;
pub mod lzf;
pub mod lzo;
pub mod szip;
pub mod vlen_utf8;
pub mod zfp;
mod zlib;
mod zstd;

pub use bounded::{BoundedCodec, BoundedDecompressor, UNBOUNDED_DECODE_LIMIT};
pub use filters::{FILTER_CODEC_NAMES, FilterCodec};
pub use fletcher32::{Fletcher32Codec, h5_fletcher32, register_zarrs_fixes};
pub use zlib::{BoundedZlibCodec, inflate_bounded};
pub use zstd::{BoundedZstdCodec, zstd_decode_bounded};

use std::borrow::Cow;
use std::sync::Arc;

use vzarr_core::Codec;
use zarrs::array::codec::CodecChain;
use zarrs::array::codec::api::{BytesRepresentation, BytesToBytesCodecTraits, CodecOptions};
use zarrs::metadata::v3::MetadataV3;

/// Errors of building a codec chain or running it.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The codec has no implementation here.
    #[error("codec {0}: {1}")]
    Unsupported(String, String),
    /// Encoding or decoding failed.
    #[error("{0}")]
    Failed(String),
}

/// The bytes-to-bytes part of a codec chain, ready to encode and decode chunks.
pub struct ByteCodecs {
    codecs: Vec<Arc<dyn BytesToBytesCodecTraits>>,
}

/// Why the chain `codecs` cannot encode values to bytes that decode to them again, if it
/// cannot: the first codec vzarr decodes only, or zfp in a lossy mode
/// ([`FilterCodec::encoding_refused`]).
pub fn encoding_refused(codecs: &[Codec]) -> Option<&'static str> {
    codecs
        .iter()
        .find_map(|c| FilterCodec::new(c.clone())?.encoding_refused())
}

impl ByteCodecs {
    /// Builds the chain for `codecs` (in encoding order).
    pub fn new(codecs: &[Codec]) -> Result<Self, CodecError> {
        register_zarrs_fixes();
        let mut metas = vec![MetadataV3::new_with_configuration(
            "bytes",
            serde_json::Map::from_iter([("endian".to_string(), serde_json::json!("little"))]),
        )];
        for c in codecs {
            let m: MetadataV3 = serde_json::from_value(c.to_zarr_json())
                .map_err(|e| CodecError::Unsupported(c.label(), e.to_string()))?;
            metas.push(m);
        }
        let chain = CodecChain::from_metadata(&metas).map_err(|e| {
            CodecError::Unsupported(
                codecs
                    .iter()
                    .map(Codec::label)
                    .collect::<Vec<_>>()
                    .join(","),
                e.to_string(),
            )
        })?;
        Ok(ByteCodecs {
            codecs: chain.bytes_to_bytes_codecs().to_vec(),
        })
    }

    /// Builds the chain for `codecs` to encode with: an error, before any chunk is read, when
    /// a codec of the chain cannot give bytes that decode to the values encoded (a codec vzarr
    /// decodes only, zfp in a lossy mode: [`encoding_refused`]).
    pub fn for_encoding(codecs: &[Codec]) -> Result<Self, CodecError> {
        match encoding_refused(codecs) {
            None => Self::new(codecs),
            Some(why) => Err(CodecError::Failed(why.to_string())),
        }
    }

    /// Whether the chain has no codecs (encoded bytes are the raw bytes).
    pub fn is_empty(&self) -> bool {
        self.codecs.is_empty()
    }

    /// Encodes raw chunk bytes.
    pub fn encode(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        let options = CodecOptions::default();
        let mut bytes: Cow<'_, [u8]> = Cow::Borrowed(raw);
        for c in &self.codecs {
            bytes = c
                .encode(bytes, &options)
                .map_err(|e| CodecError::Failed(format!("encoding: {e}")))?;
        }
        Ok(bytes.into_owned())
    }

    /// Number of codecs in the chain.
    pub fn len(&self) -> usize {
        self.codecs.len()
    }

    /// Decodes a chunk whose raw size is `raw_len` bytes.
    pub fn decode(&self, encoded: &[u8], raw_len: usize) -> Result<Vec<u8>, CodecError> {
        self.decode_skipping(encoded, raw_len, 0)
    }

    /// Decodes a chunk that was encoded with some codecs of the chain skipped: bit `i` of
    /// `skip_mask` set means codec `i` (in encoding order) was not applied, as an HDF5 chunk's
    /// filter mask says of the filters of its pipeline. Bits past the chain are ignored.
    pub fn decode_skipping(
        &self,
        encoded: &[u8],
        raw_len: usize,
        skip_mask: u32,
    ) -> Result<Vec<u8>, CodecError> {
        let options = CodecOptions::default();
        let applied: Vec<&Arc<dyn BytesToBytesCodecTraits>> = self
            .codecs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i >= 32 || skip_mask & (1 << i) == 0)
            .map(|(_, c)| c)
            .collect();
        // The decoded representation at each stage, from the raw bytes forward.
        let mut reps = vec![BytesRepresentation::FixedSize(raw_len as u64)];
        for c in &applied {
            let next = c.encoded_representation(reps.last().expect("non-empty"));
            reps.push(next);
        }
        let mut bytes: Cow<'_, [u8]> = Cow::Borrowed(encoded);
        for (c, rep) in applied.iter().zip(&reps).rev() {
            bytes = c
                .decode(bytes, rep, &options)
                .map_err(|e| CodecError::Failed(format!("decoding: {e}")))?;
        }
        if bytes.len() != raw_len {
            return Err(CodecError::Failed(format!(
                "decoded {} bytes, expected {raw_len}",
                bytes.len()
            )));
        }
        Ok(bytes.into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::{BitshuffleCompression, BloscShuffle};

    fn sample() -> Vec<u8> {
        (0..4000u32)
            .flat_map(|i| ((i * 7) % 300).to_le_bytes())
            .collect()
    }

    /// szip with the options of a 32-bit test file (mask 141, 16 pixels a block).
    fn szip() -> Codec {
        Codec::Szip {
            options_mask: 141,
            pixels_per_block: 16,
            bits_per_pixel: 32,
            pixels_per_scanline: 1000,
        }
    }

    /// H5Z-ZFP on 40 x 100 32-bit integers, reversible (`min_exp` -1075).
    fn zfp_int32() -> Codec {
        Codec::ZfpHdf5 {
            scalar: vzarr_core::ZfpType::Int32,
            shape: vec![40, 100],
            min_bits: 1,
            max_bits: 16658,
            max_prec: 64,
            min_exp: -1075,
            big_endian: false,
        }
    }

    /// Blosc at level 5 on 4-byte elements with `cname` and `shuffle`.
    fn blosc(cname: &str, shuffle: BloscShuffle) -> Codec {
        Codec::Blosc {
            cname: cname.into(),
            clevel: 5,
            shuffle,
            typesize: 4,
            blocksize: 0,
        }
    }

    /// The bitshuffle filter with these parameters.
    fn bitshuffle(
        element_size: usize,
        block_size: usize,
        compression: BitshuffleCompression,
        level: i32,
    ) -> Codec {
        Codec::Bitshuffle {
            element_size,
            block_size,
            compression,
            level,
        }
    }

    #[test]
    fn round_trips_every_codec() {
        let chains = vec![
            vec![],
            vec![Codec::Zlib { level: 4 }],
            vec![Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 1 }],
            vec![Codec::Fletcher32],
            vec![
                Codec::Shuffle { element_size: 4 },
                Codec::Zlib { level: 9 },
                Codec::Fletcher32,
            ],
            vec![Codec::Zstd { level: 3 }],
            vec![blosc("lz4", BloscShuffle::Shuffle)],
            vec![Codec::Bz2 { level: 9 }],
            vec![Codec::Lzf],
            vec![Codec::Shuffle { element_size: 4 }, Codec::Lzf],
            vec![Codec::Lz4Hdf5],
            vec![Codec::Lz4Hdf5, Codec::Fletcher32],
            vec![Codec::Shuffle { element_size: 4 }, Codec::Lzo],
            vec![bitshuffle(4, 0, BitshuffleCompression::Lz4, 0)],
            vec![bitshuffle(2, 64, BitshuffleCompression::Zstd, 5)],
            vec![bitshuffle(8, 0, BitshuffleCompression::None, 0)],
            vec![szip()],
            vec![zfp_int32()],
        ];
        let raw = sample();
        for chain in chains {
            let c = ByteCodecs::new(&chain).unwrap();
            let enc = c.encode(&raw).unwrap();
            if !chain.is_empty() {
                assert_ne!(enc, raw, "{chain:?} did nothing");
            }
            assert_eq!(c.decode(&enc, raw.len()).unwrap(), raw, "{chain:?}");
        }
    }

    /// A seeded xorshift generator: reproducible mutations without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    #[test]
    fn mutated_chunks_give_errors_or_bounded_bytes_never_a_panic() {
        // Every codec's decoder treats a chunk as hostile: flipped, overwritten, truncated or
        // extended bytes give an error or at most the chunk's size, never a panic, an abort
        // or an allocation of what the bytes declare.
        let chains = [
            vec![Codec::Zlib { level: 4 }],
            vec![Codec::Zstd { level: 3 }],
            vec![blosc("zstd", BloscShuffle::BitShuffle)],
            vec![Codec::Bz2 { level: 9 }],
            vec![Codec::Lzf],
            vec![Codec::Lzo],
            vec![Codec::Lz4Hdf5],
            vec![bitshuffle(4, 0, BitshuffleCompression::Lz4, 0)],
            vec![bitshuffle(4, 128, BitshuffleCompression::Zstd, 3)],
            vec![bitshuffle(4, 0, BitshuffleCompression::None, 0)],
            vec![szip()],
            vec![zfp_int32()],
        ];
        let raw = sample();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for chain in chains {
            let c = ByteCodecs::new(&chain).unwrap();
            let enc = c.encode(&raw).unwrap();
            let (mut errors, mut ok) = (0, 0);
            for round in 0..400 {
                let mut m = enc.clone();
                match round % 5 {
                    0 => {
                        let i = rng.below(m.len());
                        m[i] ^= 1 << rng.below(8);
                    }
                    1 => {
                        // The headers: a size or length field set to an extreme.
                        let i = rng.below(m.len().min(24));
                        m[i] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
                    }
                    2 => m.truncate(rng.below(m.len())),
                    3 => m.extend((0..rng.below(64)).map(|_| rng.next() as u8)),
                    _ => {
                        for _ in 0..8 {
                            let i = rng.below(m.len());
                            m[i] = rng.next() as u8;
                        }
                    }
                }
                match c.decode(&m, raw.len()) {
                    Ok(v) => {
                        assert_eq!(v.len(), raw.len());
                        ok += 1;
                    }
                    Err(_) => errors += 1,
                }
            }
            assert!(
                errors > 0,
                "{chain:?}: no mutation was noticed ({ok} decoded)"
            );
        }
    }

    #[test]
    fn fletcher32_covers_the_odd_last_byte() {
        // zarrs' built-in codec ignores the last byte of odd-length data; ours must not.
        let c = ByteCodecs::new(&[Codec::Fletcher32]).unwrap();
        let enc = c.encode(b"abc").unwrap();
        assert_eq!(&enc[3..], &0x25c5_c462u32.to_le_bytes());
        let mut bad = enc.clone();
        bad[2] ^= 1;
        assert!(c.decode(&bad, 3).is_err());
    }

    #[test]
    fn fletcher32_detects_corruption() {
        let c = ByteCodecs::new(&[Codec::Fletcher32]).unwrap();
        let mut enc = c.encode(&sample()).unwrap();
        enc[10] ^= 1;
        assert!(c.decode(&enc, sample().len()).is_err());
    }

    #[test]
    fn decode_skipping_undoes_only_the_applied_codecs() {
        let chain = [
            Codec::Shuffle { element_size: 4 },
            Codec::Zlib { level: 4 },
            Codec::Fletcher32,
        ];
        let all = ByteCodecs::new(&chain).unwrap();
        assert_eq!(all.len(), 3);
        let raw = sample();
        // Encoded with zlib skipped (mask 0b010): shuffle, then fletcher32.
        let partial = ByteCodecs::new(&[chain[0].clone(), chain[2].clone()]).unwrap();
        let enc = partial.encode(&raw).unwrap();
        assert_eq!(all.decode_skipping(&enc, raw.len(), 0b010).unwrap(), raw);
        // Every filter skipped: the stored bytes are the raw bytes.
        assert_eq!(all.decode_skipping(&raw, raw.len(), 0b111).unwrap(), raw);
        // Bits past the chain are ignored; a wrong mask fails instead of giving bytes.
        let full = all.encode(&raw).unwrap();
        assert_eq!(all.decode_skipping(&full, raw.len(), !0b111).unwrap(), raw);
        assert!(all.decode_skipping(&enc, raw.len(), 0).is_err());
    }

    #[test]
    fn zlib_is_rfc1950() {
        let c = ByteCodecs::new(&[Codec::Zlib { level: 6 }]).unwrap();
        let enc = c.encode(b"hello hello hello").unwrap();
        // zlib header: CM=8 (deflate), and (CMF*256 + FLG) % 31 == 0.
        assert_eq!(enc[0] & 0x0f, 8);
        assert_eq!((u16::from(enc[0]) * 256 + u16::from(enc[1])) % 31, 0);
    }

    #[test]
    fn chains_with_a_decode_only_codec_refuse_to_encode_before_any_chunk() {
        let shuffle = Codec::Shuffle { element_size: 2 };
        assert!(ByteCodecs::for_encoding(&[shuffle.clone(), Codec::Lzf]).is_ok());
        for (c, name) in [
            (Codec::Blosc2Hdf5, "vzarr.blosc2"),
            (
                Codec::Htj2k {
                    endian: vzarr_core::Endian::Little,
                },
                "vzarr.htj2k",
            ),
        ] {
            let e = ByteCodecs::for_encoding(&[shuffle.clone(), c.clone()])
                .err()
                .unwrap();
            assert!(
                e.to_string().contains(&format!("{name} decodes only")),
                "{e}"
            );
            // Decoding chains are built as before.
            assert!(ByteCodecs::new(&[c]).is_ok());
        }
    }
}
