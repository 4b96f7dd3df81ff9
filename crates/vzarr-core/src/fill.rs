//! Fill values: what unwritten chunks read as.

use base64::Engine as _;
use serde_json::{Number, Value};

use crate::{CoreError, DataType};

/// A fill value, kept as the little-endian bytes of one element so that equality is bitwise
/// (two NaN fill values with the same bits are equal); for [`DataType::String`], the UTF-8
/// bytes of the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FillValue {
    bytes: Vec<u8>,
}

/// Text stored as UTF-32LE code units, up to the first NUL (numpy's `U` strips its padding);
/// a unit that is not a code point reads as U+FFFD.
pub fn utf32_text(bytes: &[u8]) -> String {
    bytes
        .chunks_exact(4)
        .map(|u| u32::from_le_bytes([u[0], u[1], u[2], u[3]]))
        .take_while(|&c| c != 0)
        .map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// `text` as `n` UTF-32LE code units, padded with NUL; `None` when it has more code points.
pub fn utf32_bytes(text: &str, n: usize) -> Option<Vec<u8>> {
    if text.chars().count() > n {
        return None;
    }
    let mut out: Vec<u8> = text
        .chars()
        .flat_map(|c| u32::from(c).to_le_bytes())
        .collect();
    out.resize(n.checked_mul(4)?, 0);
    Some(out)
}

impl FillValue {
    /// A fill value from the little-endian bytes of one element of `dtype` (for
    /// [`DataType::String`], UTF-8 text of any length).
    pub fn from_le_bytes(dtype: DataType, bytes: &[u8]) -> Result<Self, CoreError> {
        if dtype.is_string() {
            let s = std::str::from_utf8(bytes)
                .map_err(|_| CoreError::Metadata("string fill value is not valid UTF-8".into()))?;
            return Ok(Self::from_text(s));
        }
        if bytes.len() != dtype.size() {
            return Err(CoreError::Metadata(format!(
                "fill value has {} bytes, {} needs {}",
                bytes.len(),
                dtype.name(),
                dtype.size()
            )));
        }
        Ok(FillValue {
            bytes: bytes.to_vec(),
        })
    }

    /// The fill value `text` of a [`DataType::String`] array.
    pub fn from_text(text: &str) -> Self {
        FillValue {
            bytes: text.as_bytes().to_vec(),
        }
    }

    /// The text of a [`DataType::String`] fill value (`None` for other types).
    pub fn as_text(&self, dtype: DataType) -> Option<&str> {
        if dtype.is_string() {
            std::str::from_utf8(&self.bytes).ok()
        } else {
            None
        }
    }

    /// The all-zero fill value (HDF5's default when none is set; the empty text for
    /// [`DataType::String`]).
    pub fn zero(dtype: DataType) -> Self {
        FillValue {
            bytes: vec![0; dtype.size()],
        }
    }

    /// A fill value from a signed integer; errors if it does not fit `dtype`.
    pub fn from_i64(dtype: DataType, v: i64) -> Result<Self, CoreError> {
        let out_of_range =
            || CoreError::Metadata(format!("fill value {v} does not fit {}", dtype.name()));
        let bytes = match dtype {
            DataType::Bool => vec![u8::from(v != 0)],
            DataType::Int8 => i8::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::Int16 => i16::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::Int32 => i32::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::Int64 => v.to_le_bytes().to_vec(),
            DataType::UInt8 => u8::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::UInt16 => u16::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::UInt32 => u32::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::UInt64 => u64::try_from(v)
                .map_err(|_| out_of_range())?
                .to_le_bytes()
                .to_vec(),
            DataType::Float32 => (v as f32).to_le_bytes().to_vec(),
            DataType::Float64 => (v as f64).to_le_bytes().to_vec(),
            DataType::Complex64 => [(v as f32).to_le_bytes(), 0f32.to_le_bytes()].concat(),
            DataType::Complex128 => [(v as f64).to_le_bytes(), 0f64.to_le_bytes()].concat(),
            DataType::Float16
            | DataType::FixedBytes(_)
            | DataType::FixedUtf32(_)
            | DataType::String
            | DataType::Struct(_) => {
                return Err(out_of_range());
            }
        };
        Ok(FillValue { bytes })
    }

    /// A fill value from a float for a float `dtype` (f32 rounds to nearest).
    pub fn from_f64(dtype: DataType, v: f64) -> Result<Self, CoreError> {
        let bytes = match dtype {
            DataType::Float32 => (v as f32).to_le_bytes().to_vec(),
            DataType::Float64 => v.to_le_bytes().to_vec(),
            _ => {
                return Err(CoreError::Metadata(format!(
                    "float fill value {v} for {}",
                    dtype.name()
                )));
            }
        };
        Ok(FillValue { bytes })
    }

    /// Little-endian bytes of the element.
    pub fn le_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The element's bytes in the given byte order (string types are never swapped).
    pub fn bytes_in(&self, dtype: DataType, endian: crate::Endian) -> Vec<u8> {
        let mut b = self.bytes.clone();
        if endian == crate::Endian::Big && dtype.has_endianness() {
            dtype.swap_element(&mut b);
        }
        b
    }

    /// The value as f64, for float types.
    pub fn as_f64(&self, dtype: DataType) -> Option<f64> {
        match dtype {
            DataType::Float32 => Some(f64::from(f32::from_le_bytes(
                self.bytes[..4].try_into().ok()?,
            ))),
            DataType::Float64 => Some(f64::from_le_bytes(self.bytes[..8].try_into().ok()?)),
            _ => None,
        }
    }

    /// The value as i128, for integer and bool types.
    pub fn as_i128(&self, dtype: DataType) -> Option<i128> {
        let b = &self.bytes;
        Some(match dtype {
            DataType::Bool => i128::from(b[0] != 0),
            DataType::Int8 => i128::from(b[0] as i8),
            DataType::UInt8 => i128::from(b[0]),
            DataType::Int16 => i128::from(i16::from_le_bytes(b[..2].try_into().ok()?)),
            DataType::UInt16 => i128::from(u16::from_le_bytes(b[..2].try_into().ok()?)),
            DataType::Int32 => i128::from(i32::from_le_bytes(b[..4].try_into().ok()?)),
            DataType::UInt32 => i128::from(u32::from_le_bytes(b[..4].try_into().ok()?)),
            DataType::Int64 => i128::from(i64::from_le_bytes(b[..8].try_into().ok()?)),
            DataType::UInt64 => i128::from(u64::from_le_bytes(b[..8].try_into().ok()?)),
            _ => return None,
        })
    }

    /// The Zarr v3 `fill_value` metadata value for an array of `dtype`.
    pub fn to_zarr_json(&self, dtype: DataType) -> Value {
        match dtype {
            DataType::Bool => Value::Bool(self.bytes[0] != 0),
            DataType::Float16 => {
                let bits = u16::from_le_bytes([self.bytes[0], self.bytes[1]]);
                float_json(half_to_f64(bits), bits == 0x7e00, || {
                    format!("0x{bits:04x}")
                })
            }
            DataType::Float32 => {
                let bits = u32::from_le_bytes(self.bytes[..4].try_into().expect("4 bytes"));
                float_json(f64::from(f32::from_bits(bits)), bits == 0x7fc0_0000, || {
                    format!("0x{bits:08x}")
                })
            }
            DataType::Float64 => {
                let bits = u64::from_le_bytes(self.bytes[..8].try_into().expect("8 bytes"));
                float_json(f64::from_bits(bits), bits == 0x7ff8_0000_0000_0000, || {
                    format!("0x{bits:016x}")
                })
            }
            DataType::FixedBytes(_) => {
                Value::String(base64::engine::general_purpose::STANDARD.encode(&self.bytes))
            }
            // zarr-python 3.4 writes the text, its padding NULs left out.
            DataType::FixedUtf32(_) => Value::String(utf32_text(&self.bytes)),
            DataType::Struct(fields) => {
                // zarr-python 3.4's form: an object of the fields' fill values.
                let mut out = serde_json::Map::new();
                let mut at = 0;
                for f in fields.iter() {
                    let n = f.data_type.size();
                    let part = FillValue {
                        bytes: self.bytes[at..at + n].to_vec(),
                    };
                    out.insert(f.name.clone(), part.to_zarr_json(f.data_type.clone()));
                    at += n;
                }
                Value::Object(out)
            }
            DataType::Complex64 | DataType::Complex128 => {
                // Zarr v3 complex fill values: `[real, imaginary]`, each as its float type's.
                let part = if dtype == DataType::Complex64 {
                    DataType::Float32
                } else {
                    DataType::Float64
                };
                let half = part.size();
                Value::Array(
                    self.bytes
                        .chunks_exact(half)
                        .map(|b| FillValue { bytes: b.to_vec() }.to_zarr_json(part.clone()))
                        .collect(),
                )
            }
            // zarr-python 3.4 writes the text itself.
            DataType::String => Value::String(String::from_utf8_lossy(&self.bytes).into_owned()),
            int => {
                let v = self.as_i128(int).expect("integer type");
                if let Ok(i) = i64::try_from(v) {
                    Value::Number(Number::from(i))
                } else {
                    Value::Number(Number::from(u64::try_from(v).expect("u64 range")))
                }
            }
        }
    }

    /// Parses a Zarr v3 `fill_value` metadata value for an array of `dtype`.
    pub fn from_zarr_json(dtype: DataType, value: &Value) -> Result<Self, CoreError> {
        let bad = || CoreError::Metadata(format!("fill_value {value} for {}", dtype.name()));
        match (dtype.clone(), value) {
            (DataType::Struct(fields), Value::Object(map)) => {
                let mut bytes = Vec::with_capacity(dtype.size());
                for f in fields.iter() {
                    let part = match map.get(&f.name) {
                        Some(v) => Self::from_zarr_json(f.data_type.clone(), v)?,
                        None => Self::zero(f.data_type.clone()),
                    };
                    bytes.extend(part.bytes);
                }
                Ok(FillValue { bytes })
            }
            (DataType::Struct(_), Value::String(s)) => {
                // Legacy form: base64 of the little-endian element bytes.
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| bad())?;
                Self::from_le_bytes(dtype, &bytes)
            }
            (DataType::Complex64 | DataType::Complex128, Value::Array(parts)) => {
                let part = if dtype == DataType::Complex64 {
                    DataType::Float32
                } else {
                    DataType::Float64
                };
                let [re, im] = parts.as_slice() else {
                    return Err(bad());
                };
                let mut bytes = Self::from_zarr_json(part.clone(), re)?.bytes;
                bytes.extend(Self::from_zarr_json(part, im)?.bytes);
                Ok(FillValue { bytes })
            }
            (DataType::Bool, Value::Bool(b)) => Ok(FillValue {
                bytes: vec![u8::from(*b)],
            }),
            (DataType::String, Value::String(s)) => Ok(Self::from_text(s)),
            (DataType::FixedUtf32(n), Value::String(s)) => {
                let bytes = utf32_bytes(s, n).ok_or_else(bad)?;
                Ok(FillValue { bytes })
            }
            (DataType::FixedBytes(n), Value::String(s)) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| bad())?;
                if bytes.len() > n {
                    return Err(bad());
                }
                let mut b = bytes;
                b.resize(n, 0);
                Ok(FillValue { bytes: b })
            }
            (d, Value::String(s)) if d.is_float() => {
                let bits: u64 = if let Some(hex) = s.strip_prefix("0x") {
                    u64::from_str_radix(hex, 16).map_err(|_| bad())?
                } else {
                    let f = match s.as_str() {
                        "NaN" => f64::NAN,
                        "Infinity" => f64::INFINITY,
                        "-Infinity" => f64::NEG_INFINITY,
                        _ => return Err(bad()),
                    };
                    return match d {
                        DataType::Float16 => Ok(FillValue {
                            bytes: f64_to_half(f).to_le_bytes().to_vec(),
                        }),
                        _ => Self::from_f64(d, f),
                    };
                };
                let bytes = match d {
                    DataType::Float16 => u16::try_from(bits)
                        .map_err(|_| bad())?
                        .to_le_bytes()
                        .to_vec(),
                    DataType::Float32 => u32::try_from(bits)
                        .map_err(|_| bad())?
                        .to_le_bytes()
                        .to_vec(),
                    _ => bits.to_le_bytes().to_vec(),
                };
                Ok(FillValue { bytes })
            }
            (d, Value::Number(n)) if d.is_float() => {
                let f = n.as_f64().ok_or_else(bad)?;
                if d == DataType::Float16 {
                    return Ok(FillValue {
                        bytes: f64_to_half(f).to_le_bytes().to_vec(),
                    });
                }
                Self::from_f64(d, f)
            }
            (d, Value::Number(n)) if d.is_signed_int() || d.is_unsigned_int() => {
                if let Some(i) = n.as_i64() {
                    Self::from_i64(d, i)
                } else if let (Some(u), DataType::UInt64) = (n.as_u64(), d) {
                    Ok(FillValue {
                        bytes: u.to_le_bytes().to_vec(),
                    })
                } else {
                    Err(bad())
                }
            }
            _ => Err(bad()),
        }
    }
}

fn float_json(v: f64, canonical_nan: bool, hex: impl FnOnce() -> String) -> Value {
    if v.is_nan() {
        if canonical_nan {
            Value::String("NaN".into())
        } else {
            Value::String(hex())
        }
    } else if v == f64::INFINITY {
        Value::String("Infinity".into())
    } else if v == f64::NEG_INFINITY {
        Value::String("-Infinity".into())
    } else {
        Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(hex()))
    }
}

/// Converts IEEE half-precision bits to f64 (exact).
pub fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Converts f64 to IEEE half-precision bits, rounding to nearest, ties to even.
pub fn f64_to_half(f: f64) -> u16 {
    if f.is_nan() {
        return 0x7e00;
    }
    let sign: u16 = if f.is_sign_negative() { 0x8000 } else { 0 };
    let a = f.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        // Subnormal (or zero): multiples of 2^-24; the product is exact in f64.
        let m = (a * 2f64.powi(24)).round_ties_even() as u16;
        return sign | m;
    }
    let bits = a.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i32 - 1023 + 15;
    let mant = bits & ((1u64 << 52) - 1);
    let mut m = (mant >> 42) as u16;
    let rem = mant & ((1u64 << 42) - 1);
    let half = 1u64 << 41;
    if rem > half || (rem == half && m & 1 == 1) {
        m += 1;
        if m == 0x400 {
            m = 0;
            exp += 1;
        }
    }
    if exp >= 31 {
        return sign | 0x7c00;
    }
    sign | ((exp as u16) << 10) | m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_specials() {
        let nan = FillValue::from_f64(DataType::Float32, f64::NAN).unwrap();
        assert_eq!(nan.to_zarr_json(DataType::Float32), json!("NaN"));
        let inf = FillValue::from_f64(DataType::Float64, f64::INFINITY).unwrap();
        assert_eq!(inf.to_zarr_json(DataType::Float64), json!("Infinity"));
        let ninf = FillValue::from_f64(DataType::Float64, f64::NEG_INFINITY).unwrap();
        assert_eq!(ninf.to_zarr_json(DataType::Float64), json!("-Infinity"));
        // A NaN with a payload keeps its bits through the hex form.
        let odd =
            FillValue::from_le_bytes(DataType::Float32, &0x7fc0_0001u32.to_le_bytes()).unwrap();
        assert_eq!(odd.to_zarr_json(DataType::Float32), json!("0x7fc00001"));
        assert_eq!(
            FillValue::from_zarr_json(DataType::Float32, &json!("0x7fc00001")).unwrap(),
            odd
        );
    }

    #[test]
    fn netcdf_default_float_fill_round_trips() {
        let f = FillValue::from_f64(DataType::Float32, 9.969_209_968_386_869e36).unwrap();
        let j = f.to_zarr_json(DataType::Float32);
        assert_eq!(FillValue::from_zarr_json(DataType::Float32, &j).unwrap(), f);
        assert_eq!(j, json!(9.969_209_968_386_869e36));
    }

    #[test]
    fn integers() {
        let f = FillValue::from_i64(DataType::Int16, -32767).unwrap();
        assert_eq!(f.to_zarr_json(DataType::Int16), json!(-32767));
        let u = FillValue::from_le_bytes(DataType::UInt64, &u64::MAX.to_le_bytes()).unwrap();
        assert_eq!(u.to_zarr_json(DataType::UInt64), json!(u64::MAX));
        assert_eq!(
            FillValue::from_zarr_json(DataType::UInt64, &json!(u64::MAX)).unwrap(),
            u
        );
        assert!(FillValue::from_i64(DataType::UInt8, 300).is_err());
        assert!(FillValue::from_i64(DataType::Int8, -129).is_err());
    }

    #[test]
    fn strings() {
        let f = FillValue::from_text("MISSING");
        assert_eq!(f.to_zarr_json(DataType::String), json!("MISSING"));
        assert_eq!(
            FillValue::from_zarr_json(DataType::String, &json!("MISSING")).unwrap(),
            f
        );
        assert_eq!(f.as_text(DataType::String), Some("MISSING"));
        assert_eq!(f.as_text(DataType::UInt8), None);
        assert_eq!(
            FillValue::zero(DataType::String).to_zarr_json(DataType::String),
            json!("")
        );
        assert_eq!(
            FillValue::from_le_bytes(DataType::String, "wörld".as_bytes()).unwrap(),
            FillValue::from_text("wörld")
        );
        assert!(FillValue::from_le_bytes(DataType::String, &[0xff]).is_err());
        assert!(FillValue::from_zarr_json(DataType::String, &json!(0)).is_err());
        assert!(FillValue::from_i64(DataType::String, 0).is_err());
        assert_eq!(f.bytes_in(DataType::String, crate::Endian::Big), b"MISSING");
    }

    #[test]
    fn bytes_in_big_endian() {
        let f = FillValue::from_i64(DataType::Int32, 1).unwrap();
        assert_eq!(
            f.bytes_in(DataType::Int32, crate::Endian::Big),
            vec![0, 0, 0, 1]
        );
        assert_eq!(
            f.bytes_in(DataType::Int32, crate::Endian::Little),
            vec![1, 0, 0, 0]
        );
    }

    #[test]
    fn complex() {
        let mut le = 1.5f32.to_le_bytes().to_vec();
        le.extend(f32::NAN.to_le_bytes());
        let f = FillValue::from_le_bytes(DataType::Complex64, &le).unwrap();
        let j = f.to_zarr_json(DataType::Complex64);
        assert_eq!(j, json!([1.5, "NaN"]));
        assert_eq!(
            FillValue::from_zarr_json(DataType::Complex64, &j).unwrap(),
            f
        );
        let z = FillValue::zero(DataType::Complex128);
        assert_eq!(z.to_zarr_json(DataType::Complex128), json!([0.0, 0.0]));
        assert!(FillValue::from_zarr_json(DataType::Complex128, &json!([0.0])).is_err());
        let mut be = f.bytes_in(DataType::Complex64, crate::Endian::Big);
        assert_eq!(&be[..4], &1.5f32.to_be_bytes());
        DataType::Complex64.swap_element(&mut be);
        assert_eq!(be, le);
    }

    #[test]
    fn half() {
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0xc000), -2.0);
        assert_eq!(half_to_f64(0x0001), 2f64.powi(-24));
        assert!(half_to_f64(0x7e00).is_nan());
        let f = FillValue::from_le_bytes(DataType::Float16, &0x3c00u16.to_le_bytes()).unwrap();
        assert_eq!(f.to_zarr_json(DataType::Float16), json!(1.0));
        for bits in (0u16..=0xffff).filter(|b| b & 0x7c00 != 0x7c00) {
            assert_eq!(f64_to_half(half_to_f64(bits)), bits, "bits {bits:#06x}");
        }
        assert_eq!(f64_to_half(1.0 + 2f64.powi(-11)), 0x3c00); // tie to even
        assert_eq!(f64_to_half(1e6), 0x7c00);
    }
}
