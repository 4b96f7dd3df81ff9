//! The `imagecodecs_szip` bytes to bytes codec with `header` true: HDF5's szip filter (id 4).
//!
//! HDF5's `H5Z_filter_szip` stores a chunk as its decoded size (4 bytes, little-endian), then
//! what libaec's szip-compatible `SZ_BufftoBuffCompress` writes: a CCSDS 121.0 adaptive
//! entropy coded stream of the chunk's samples, with three twists of libaec's `sz_compat.c`
//! that are reproduced here: 32- and 64-bit pixels are coded as bytes, the bytes of each
//! position of a pixel gathered together (interleaved); a scanline that is not a whole number
//! of blocks is padded to one (with its last pixel when preprocessing, else zeros); and only the
//! `MSB` (16) and `NN` (32) options change the coding. The entropy coding is [`crate::aec`],
//! written here (see there why); the framing and the szip layer too, as no crate has them.
//!
//! Decoding writes at most the chunk's size: the size in the header must not exceed it, and
//! the stream is decoded to that size (padded scanlines included, a bounded factor above).
//!
//! ### Compatible Implementations
//! HDF5's `H5Zszip.c` with libaec's `sz_compat.c`; imagecodecs' `szip_decode(..., header=True)`
//! and its Zarr codec `imagecodecs_szip` (package `imagecodecs-zarr`).
//!
//! ### Specification
//! - CCSDS 121.0-B-3, Lossless Data Compression
//! - libaec's `src/sz_compat.c` and `src/szlib.h` (the szip options and framing)
//!
//! ### Codec `name` (Zarr V3)
//! - `imagecodecs_szip`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "imagecodecs_szip", "configuration": {"options_mask": 169, "pixels_per_block": 8,
//!  "bits_per_pixel": 32, "pixels_per_scanline": 10, "header": true}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec.label(), "szip(169,8,32)");
//! ```

use vzarr_core::Codec as VCodec;
use zarrs::array::codec::api::CodecError;

use crate::aec::Aec;

const SZ_MSB_OPTION_MASK: u32 = 16;
const SZ_NN_OPTION_MASK: u32 = 32;

/// An `imagecodecs_szip` codec (HDF5's framing), ready to decode chunks.
#[derive(Clone, Debug)]
pub struct SzipHdf5 {
    /// Whether pixels of 32 or 64 bits are coded as interleaved bytes.
    interleave: Option<usize>,
    /// Bytes per coded sample.
    sample: usize,
    /// Pixels per scanline.
    line: usize,
    /// Pixels of a scanline padded to whole blocks.
    padded_line: usize,
    aec: Aec,
}

fn err(msg: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("szip: {msg}"))
}

impl SzipHdf5 {
    /// The codec of a [`VCodec::Szip`]; `None` for another codec.
    pub fn new(codec: &VCodec) -> Option<Result<Self, CodecError>> {
        let VCodec::Szip {
            options_mask,
            pixels_per_block: ppb,
            bits_per_pixel: bpp,
            pixels_per_scanline: pps,
        } = *codec
        else {
            return None;
        };
        Some((|| {
            if !(2..=32).contains(&ppb) || !ppb.is_multiple_of(2) || pps == 0 || pps > 1 << 20 {
                return Err(err(format!("{ppb} pixels per block, {pps} per scanline")));
            }
            let interleave = matches!(bpp, 32 | 64).then_some(bpp as usize / 8);
            let bits = match (interleave, bpp) {
                (Some(_), _) => 8,
                (None, 1..=31) => bpp,
                _ => return Err(err(format!("{bpp} bits per pixel"))),
            };
            let rsi = pps.div_ceil(ppb);
            let aec = Aec {
                bits,
                block: ppb as usize,
                rsi: rsi as usize,
                preprocess: options_mask & SZ_NN_OPTION_MASK != 0,
                msb: options_mask & SZ_MSB_OPTION_MASK != 0,
            };
            Ok(SzipHdf5 {
                interleave,
                sample: aec.sample_bytes(),
                line: pps as usize,
                padded_line: (rsi * ppb) as usize,
                aec,
            })
        })())
    }

    /// Decodes one chunk to at most `limit` bytes.
    pub fn decode_bounded(&self, encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        let Some((head, stream)) = encoded.split_first_chunk::<4>() else {
            return Err(err(format!(
                "a chunk of {} bytes has no header",
                encoded.len()
            )));
        };
        let size = u64::from(u32::from_le_bytes(*head));
        if size > limit {
            return Err(err(format!(
                "the chunk declares {size} bytes, more than the {limit} it can hold"
            )));
        }
        let size = size as usize;
        let pad = self.padded_line != self.line;
        let coded = if pad {
            // Whole padded scanlines: at most twice the declared size (a block is at least
            // 2 pixels), plus one line.
            let lines = (size / self.sample).div_ceil(self.line);
            lines * self.padded_line * self.sample
        } else {
            size
        };
        let mut out = self.aec.decode(stream, coded)?;
        if pad {
            let (line, padded) = (self.line * self.sample, self.padded_line * self.sample);
            let mut kept = 0;
            for start in (0..out.len()).step_by(padded) {
                let n = line.min(out.len() - start);
                out.copy_within(start..start + n, kept);
                kept += n;
            }
            out.truncate(kept);
        }
        if out.len() < size {
            return Err(err(format!(
                "the stream decodes to {} bytes, the chunk declares {size}",
                out.len()
            )));
        }
        out.truncate(size);
        if let Some(w) = self.interleave {
            if !size.is_multiple_of(w) {
                return Err(err(format!("{size} bytes of {w}-byte pixels")));
            }
            let n = size / w;
            let mut pixels = vec![0u8; size];
            for (j, plane) in out.chunks_exact(n).enumerate() {
                for (i, &b) in plane.iter().enumerate() {
                    pixels[i * w + j] = b;
                }
            }
            out = pixels;
        }
        Ok(out)
    }

    /// Encodes one chunk as HDF5's szip filter does (header, interleaving, padding).
    pub fn encode(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        let size = u32::try_from(raw.len()).map_err(|_| err("a chunk of 4 GiB or more"))?;
        let mut samples = raw.to_vec();
        if let Some(w) = self.interleave {
            if !raw.len().is_multiple_of(w) {
                return Err(err(format!("{} bytes of {w}-byte pixels", raw.len())));
            }
            let n = raw.len() / w;
            for (i, pixel) in raw.chunks_exact(w).enumerate() {
                for (j, &b) in pixel.iter().enumerate() {
                    samples[j * n + i] = b;
                }
            }
        }
        if !samples.len().is_multiple_of(self.sample) {
            return Err(err(format!(
                "{} bytes of {}-byte samples",
                samples.len(),
                self.sample
            )));
        }
        let (line, padded) = (self.line * self.sample, self.padded_line * self.sample);
        let mut coded = Vec::with_capacity(samples.len().div_ceil(line) * padded);
        for l in samples.chunks(line) {
            coded.extend_from_slice(l);
            // A short scanline is padded with its last pixel when preprocessing, else zeros.
            let fill: Vec<u8> = if self.aec.preprocess {
                l[l.len() - self.sample..].to_vec()
            } else {
                vec![0; self.sample]
            };
            for _ in 0..(padded - l.len()) / self.sample {
                coded.extend_from_slice(&fill);
            }
        }
        let stream = self.aec.encode(&coded)?;
        let mut out = Vec::with_capacity(4 + stream.len());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&stream);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(options_mask: u32, ppb: u32, bpp: u32, pps: u32) -> SzipHdf5 {
        SzipHdf5::new(&VCodec::Szip {
            options_mask,
            pixels_per_block: ppb,
            bits_per_pixel: bpp,
            pixels_per_scanline: pps,
        })
        .unwrap()
        .unwrap()
    }

    #[test]
    fn round_trips_every_pixel_size_and_padding() {
        for (mask, ppb, bpp, pps, bytes) in [
            (141, 32, 8, 4000, 1),
            (169, 8, 16, 250, 2),
            (169, 8, 32, 10, 4),
            (153, 16, 64, 64, 8),
            (133, 8, 32, 37, 4),
        ] {
            let c = codec(mask, ppb, bpp, pps);
            let raw: Vec<u8> = (0..4000 * bytes)
                .map(|i| ((i / bytes) / 32 + (i % bytes) * 3) as u8)
                .collect();
            let enc = c.encode(&raw).unwrap();
            assert_eq!(c.decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
            // The header must fit the chunk.
            assert!(c.decode_bounded(&enc, raw.len() as u64 - 1).is_err());
        }
    }

    #[test]
    fn decodes_what_hdf5_wrote() {
        // The first chunk of tables/tests/test_szip.h5 (PyTables 3.11.1's sdist, written by
        // HDF5 with szip): int32 (20, 10) chunks of the (40, 20) values 20 * row + column,
        // client data (169, 8, 32, 10): K13, LSB, NN, raw; 32-bit pixels, so interleaved.
        let hex = concat!(
            "200300004015558049fd0a2aaa0093fa2855540127f478aaa8024fe9415550049fd322aaa0093fa7",
            "855540127f518aaa8024fea815550049fd5a2aaa0093fac855540127f5b8aaa8024febc15550049f",
            "d022aaa0093fa1855540127f458aaa8024fe9015550049fd2a2aaa0093fa6855540127f4f8aaa802",
            "4fe000800200080020008002000800200080020008002000800a002800a002800a002800a0008002",
            "00080020008002000800200080020008002000800200080020008002000800200080020008002000",
            "800200080020008002000800200080020008002000800200080020",
        );
        let enc: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let want: Vec<u8> = (0..20i32)
            .flat_map(|r| (0..10).map(move |c| 20 * r + c))
            .flat_map(i32::to_le_bytes)
            .collect();
        let c = codec(169, 8, 32, 10);
        assert_eq!(c.decode_bounded(&enc, 800).unwrap(), want);
        // Re-encoded (with the uncompressed option: the bytes differ, the values do not).
        let again = c.encode(&want).unwrap();
        assert_eq!(c.decode_bounded(&again, 800).unwrap(), want);
    }

    #[test]
    fn decodes_the_second_extension_after_a_reference() {
        // Chunk (0, 10) of the same file: the byte plane of the values' second bytes turns
        // from 0 to 1 at value 256, inside a block coded with the second extension right
        // after its interval's reference (the case tensogram-szip 0.24 decodes out of step).
        let hex = concat!(
            "20030000414aaa8024fe8795550049fd192aaa0093fa4655540127f4b4aaa8024fe9b95550049fd4",
            "12aaa0093fa9655540127f554aaa8024feaf95550049fd692aaa0093fae655540127fdf5f0188421",
            "0be124fe8395550049fd112aaa0093fa3655540127f494aaa8024fe9795550049fd392aaa0093fa8",
            "655540127f000400100040010004001000400100040010004001100e840050014005001400500140",
            "05000400100040010004001000400100040010004001000400100040010004001000400100040010",
            "00400100040010004001000400100040010004001000400100040010004001",
        );
        let enc: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let want: Vec<u8> = (0..20i32)
            .flat_map(|r| (10..20).map(move |c| 20 * r + c))
            .flat_map(i32::to_le_bytes)
            .collect();
        assert_eq!(
            codec(169, 8, 32, 10).decode_bounded(&enc, 800).unwrap(),
            want
        );
    }

    #[test]
    fn refuses_what_szip_cannot_hold() {
        let c = |ppb, bpp, pps| {
            SzipHdf5::new(&VCodec::Szip {
                options_mask: 0,
                pixels_per_block: ppb,
                bits_per_pixel: bpp,
                pixels_per_scanline: pps,
            })
            .unwrap()
        };
        assert!(c(7, 8, 64).is_err());
        assert!(c(64, 8, 64).is_err());
        assert!(c(8, 0, 64).is_err());
        assert!(c(8, 33, 64).is_err());
        assert!(c(8, 8, 0).is_err());
        let ok = c(8, 8, 64).unwrap();
        assert!(ok.decode_bounded(&[1, 0], 10).is_err());
        assert!(ok.decode_bounded(&[255, 255, 255, 255, 0], 1000).is_err());
    }
}
