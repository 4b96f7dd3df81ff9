//! The `vzarr.zfp` bytes to bytes codec: a bare zfp stream, as H5Z-ZFP (HDF5 filter 32013)
//! stores each chunk, decoded with the field and mode of the codec's configuration.
//!
//! H5Z-ZFP writes zfp's header (field type and dimensions, compression mode) once, into the
//! filter's client data, and no header into the chunks: a chunk is the stream `zfp_compress`
//! writes for the chunk's values, a field of the chunk's dimensions other than 1 (HDF5's last
//! dimension is zfp's fastest, `nx`). The scanner reads that header
//! (`vzarr_core::Codec::from_hdf5_filter`) into this codec's configuration. Decoding uses
//! `zfp-rs` (a pure-Rust zfp by the author of zarrs, bit for bit with the C library on
//! little-endian machines); the output is exactly the field's values, so a chunk can never
//! make it allocate more than the configuration says, and that must be the chunk's size.
//! Values written on a big-endian machine decode to big-endian bytes (H5Z-ZFP's `swap`), the
//! byte order HDF5 then expects.
//!
//! Encoding (used only to re-encode a chunk, e.g. one stored with the filter skipped) is
//! allowed in zfp's reversible mode only: in its lossy modes, re-encoding decoded values would
//! not give back the values that were read.
//!
//! ### Compatible Implementations
//! H5Z-ZFP's `H5Z_filter_zfp` (1.0 and later, zfp codec 5; hdf5plugin's `Zfp`).
//!
//! ### Specification
//! - <https://zfp.readthedocs.io/en/latest/> (the stream; the expert-mode parameters)
//! - <https://h5z-zfp.readthedocs.io/> (the filter: client data, dimensions, byte order)
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.zfp`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.zfp", "configuration": {"type": "float64", "shape": [60, 125],
//!  "minbits": 2000, "maxbits": 2000, "maxprec": 64, "minexp": -1074, "endian": "little"}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec.label(), "zfp(float64,[60, 125])");
//! ```
//! `shape` is the field's dimensions in C order (1 to 4 of them, each at least 1), `type` one
//! of `int32`, `int64`, `float32`, `float64`, and `minbits`, `maxbits`, `maxprec`, `minexp`
//! zfp's expert-mode parameters, which every zfp mode is (reversible mode: `minexp` -1075).

use vzarr_core::{Codec as VCodec, ZfpType};
use zarrs::array::codec::api::CodecError;
use zfp_rs::{
    ZfpBitStream, ZfpConfig, ZfpDecompressionError, ZfpField, ZfpFieldMut, ZfpMode, ZfpScalar,
};

/// A `vzarr.zfp` codec, ready to decode chunks.
#[derive(Clone, Debug)]
pub struct ZfpHdf5 {
    scalar: ZfpType,
    /// `[nx, ny, nz, nw]`, unused dimensions 0 (zfp's order: `nx` fastest).
    dims: [usize; 4],
    values: usize,
    config: ZfpConfig,
    big_endian: bool,
}

fn err(msg: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("zfp: {msg}"))
}

impl ZfpHdf5 {
    /// The codec of a [`VCodec::ZfpHdf5`]; `None` for another codec.
    pub fn new(codec: &VCodec) -> Option<Result<Self, CodecError>> {
        let VCodec::ZfpHdf5 {
            scalar,
            shape,
            min_bits,
            max_bits,
            max_prec,
            min_exp,
            big_endian,
        } = codec
        else {
            return None;
        };
        Some((|| {
            if shape.is_empty() || shape.len() > 4 || shape.contains(&0) {
                return Err(err(format!("a field of shape {shape:?}")));
            }
            let values = shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .filter(|n| n.checked_mul(scalar.size()).is_some())
                .ok_or_else(|| err(format!("a field of shape {shape:?} overflows")))?;
            let mut dims = [0usize; 4];
            for (d, &s) in dims.iter_mut().zip(shape.iter().rev()) {
                *d = s;
            }
            let config =
                ZfpConfig::expert(*min_bits, *max_bits, *max_prec, *min_exp).map_err(|e| {
                    err(format!(
                        "mode {min_bits},{max_bits},{max_prec},{min_exp}: {e}"
                    ))
                })?;
            Ok(ZfpHdf5 {
                scalar: *scalar,
                dims,
                values,
                config,
                big_endian: *big_endian,
            })
        })())
    }

    /// Bytes of a decoded chunk.
    pub fn decoded_len(&self) -> usize {
        self.values * self.scalar.size()
    }

    /// Decodes one chunk; `limit` (the chunk's size) must hold the field.
    pub fn decode_bounded(&self, encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
        let len = self.decoded_len();
        if len as u64 > limit {
            return Err(err(format!(
                "the field's {len} bytes exceed the {limit} bytes of the chunk"
            )));
        }
        match self.scalar {
            ZfpType::Int32 => self.decode_as::<i32, 4>(encoded, i32::to_le_bytes, i32::to_be_bytes),
            ZfpType::Int64 => self.decode_as::<i64, 8>(encoded, i64::to_le_bytes, i64::to_be_bytes),
            ZfpType::Float32 => {
                self.decode_as::<f32, 4>(encoded, f32::to_le_bytes, f32::to_be_bytes)
            }
            ZfpType::Float64 => {
                self.decode_as::<f64, 8>(encoded, f64::to_le_bytes, f64::to_be_bytes)
            }
        }
    }

    fn decode_as<T: ZfpScalar + Default + Clone, const N: usize>(
        &self,
        encoded: &[u8],
        le: fn(T) -> [u8; N],
        be: fn(T) -> [u8; N],
    ) -> Result<Vec<u8>, CodecError> {
        let mut stream = ZfpBitStream::from_bytes(encoded).map_err(err)?;
        let mut values = vec![T::default(); self.values];
        let mut field = ZfpFieldMut::new(&mut values, self.dims).map_err(err)?;
        match stream.decompress(&self.config, &mut field) {
            Ok(_) => {}
            Err(ZfpDecompressionError::Truncated { required, capacity }) => {
                return Err(err(format!(
                    "the stream is cut short: {capacity} bytes, decoding needs {required}"
                )));
            }
            Err(e) => return Err(err(e)),
        }
        let to_bytes = if self.big_endian { be } else { le };
        Ok(values.into_iter().flat_map(to_bytes).collect())
    }

    /// Whether the stream is in zfp's reversible (lossless) mode, the one mode whose decoded
    /// values re-encode to a stream that decodes to them again.
    pub fn reversible(&self) -> bool {
        self.config.mode() == ZfpMode::Reversible
    }

    /// Encodes one chunk (its values in the codec's byte order), in reversible mode only.
    pub fn encode(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        if !self.reversible() {
            return Err(err(
                "a lossy zfp mode: re-encoding decoded values would change them",
            ));
        }
        if raw.len() != self.decoded_len() {
            return Err(err(format!(
                "{} bytes to encode, the field holds {}",
                raw.len(),
                self.decoded_len()
            )));
        }
        match self.scalar {
            ZfpType::Int32 => self.encode_as::<i32, 4>(raw, i32::from_le_bytes, i32::from_be_bytes),
            ZfpType::Int64 => self.encode_as::<i64, 8>(raw, i64::from_le_bytes, i64::from_be_bytes),
            ZfpType::Float32 => {
                self.encode_as::<f32, 4>(raw, f32::from_le_bytes, f32::from_be_bytes)
            }
            ZfpType::Float64 => {
                self.encode_as::<f64, 8>(raw, f64::from_le_bytes, f64::from_be_bytes)
            }
        }
    }

    fn encode_as<T: ZfpScalar, const N: usize>(
        &self,
        raw: &[u8],
        le: fn([u8; N]) -> T,
        be: fn([u8; N]) -> T,
    ) -> Result<Vec<u8>, CodecError> {
        let from = if self.big_endian { be } else { le };
        let values: Vec<T> = raw
            .chunks_exact(N)
            .map(|c| from(c.try_into().expect("N bytes")))
            .collect();
        let field = ZfpField::new(&values, self.dims).map_err(err)?;
        let capacity = self
            .config
            .maximum_size(T::SCALAR_TYPE, self.dims)
            .ok_or_else(|| err("the field is too large to encode"))?;
        let mut stream = ZfpBitStream::new(capacity).map_err(err)?;
        let size = stream.compress(&self.config, &field).map_err(err)?;
        let mut out = stream.as_bytes().to_vec();
        out.truncate(size);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zfp_rs::{ZfpDimensionality, ZfpScalarType, ZfpStreamAlignment};

    fn codec(config: &ZfpConfig, scalar: ZfpType, shape: &[usize], big_endian: bool) -> ZfpHdf5 {
        ZfpHdf5::new(&VCodec::ZfpHdf5 {
            scalar,
            shape: shape.to_vec(),
            min_bits: config.min_bits(),
            max_bits: config.max_bits(),
            max_prec: config.max_prec(),
            min_exp: config.min_exp(),
            big_endian,
        })
        .unwrap()
        .unwrap()
    }

    fn field() -> Vec<f64> {
        (0..30 * 17)
            .map(|i| f64::from(i % 17) * 0.5 + f64::from(i / 17).sin())
            .collect()
    }

    /// The stream H5Z-ZFP would write: zfp's compressor on the chunk's field.
    fn compress(config: &ZfpConfig, values: &[f64], dims: [usize; 2]) -> Vec<u8> {
        let f = ZfpField::new(values, dims).unwrap();
        let cap = config.maximum_size(ZfpScalarType::F64, dims).unwrap();
        let mut bs = ZfpBitStream::new(cap).unwrap();
        let n = bs.compress(config, &f).unwrap();
        bs.as_bytes()[..n].to_vec()
    }

    #[test]
    fn decodes_fixed_rate_in_both_byte_orders_and_refuses_to_reencode() {
        let config = ZfpConfig::fixed_rate(
            16.0,
            ZfpScalarType::F64,
            ZfpDimensionality::D2,
            ZfpStreamAlignment::Unaligned,
        )
        .unwrap();
        let values = field();
        // HDF5 shape (30, 17): zfp's nx is 17.
        let enc = compress(&config, &values, [17, 30]);
        let le = codec(&config, ZfpType::Float64, &[30, 17], false);
        let got = le.decode_bounded(&enc, 30 * 17 * 8).unwrap();
        let got: Vec<f64> = got
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let worst = got
            .iter()
            .zip(&values)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst > 0.0 && worst < 1e-2, "{worst}");
        let be = codec(&config, ZfpType::Float64, &[30, 17], true);
        let got_be = be.decode_bounded(&enc, 30 * 17 * 8).unwrap();
        assert_eq!(got_be[..8], {
            let mut b = got[0].to_le_bytes();
            b.reverse();
            b
        });
        assert!(
            le.encode(&got_be)
                .unwrap_err()
                .to_string()
                .contains("lossy")
        );
        // The chunk must hold the field: a smaller limit is an error before any allocation.
        assert!(le.decode_bounded(&enc, 100).is_err());
        // A stream cut short is an error.
        assert!(
            le.decode_bounded(&enc[..enc.len() / 2], 30 * 17 * 8)
                .is_err()
        );
    }

    #[test]
    fn reversible_round_trips_every_type() {
        let config = ZfpConfig::reversible();
        for (scalar, shape) in [
            (ZfpType::Int32, vec![5, 6, 7]),
            (ZfpType::Int64, vec![9]),
            (ZfpType::Float32, vec![2, 3, 4, 5]),
            (ZfpType::Float64, vec![13, 11]),
        ] {
            for big_endian in [false, true] {
                let c = codec(&config, scalar, &shape, big_endian);
                let raw: Vec<u8> = (0..c.decoded_len())
                    .map(|i| {
                        if i % scalar.size() == 0 {
                            0
                        } else {
                            (i % 7) as u8
                        }
                    })
                    .collect();
                let enc = c.encode(&raw).unwrap();
                assert_eq!(c.decode_bounded(&enc, raw.len() as u64).unwrap(), raw);
            }
        }
    }

    #[test]
    fn refuses_fields_it_cannot_hold() {
        let c = |shape: Vec<usize>| {
            ZfpHdf5::new(&VCodec::ZfpHdf5 {
                scalar: ZfpType::Float64,
                shape,
                min_bits: 1,
                max_bits: 16658,
                max_prec: 64,
                min_exp: -1074,
                big_endian: false,
            })
            .unwrap()
        };
        assert!(c(vec![]).is_err());
        assert!(c(vec![0, 3]).is_err());
        assert!(c(vec![1, 2, 3, 4, 5]).is_err());
        assert!(c(vec![usize::MAX, 2]).is_err());
        assert!(c(vec![1 << 40, 1 << 40]).is_err());
        // 2^61 values of 8 bytes: the size overflows, refused before any allocation.
        assert!(c(vec![1 << 31, 1 << 30]).is_err());
        assert!(c(vec![4, 4]).is_ok());
    }
}
