//! Attribute values as Zarr v3 JSON, following what zarr-python and xarray expect.

use base64::Engine as _;
use serde_json::{Number, Value};

use crate::{DataType, FillValue};

/// A float attribute value: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has
/// no literal for them; zarr-python writes them the same way).
pub fn float_value(v: f64) -> Value {
    match Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None if v.is_nan() => Value::String("NaN".into()),
        None if v > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// The `_FillValue` attribute as xarray's Zarr v3 backend decodes it: for float arrays the
/// base64 of the value packed as little-endian float64, for integer arrays a JSON integer, for
/// bool arrays a JSON bool, for byte-string arrays the base64 of the bytes, for string arrays
/// the text; for complex arrays `[real, imaginary]`; for struct arrays an object of field values.
pub fn cf_fill_value(dtype: DataType, fill: &FillValue) -> Value {
    let b64 = |bytes: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    match dtype {
        DataType::Float16 => {
            let bits = u16::from_le_bytes([fill.le_bytes()[0], fill.le_bytes()[1]]);
            b64(&crate::half_to_f64(bits).to_le_bytes())
        }
        DataType::Float32 | DataType::Float64 => {
            b64(&fill.as_f64(dtype).expect("float").to_le_bytes())
        }
        DataType::FixedBytes(_) => b64(fill.le_bytes()),
        DataType::Complex64
        | DataType::Complex128
        | DataType::Struct(_)
        | DataType::FixedUtf32(_) => fill.to_zarr_json(dtype),
        DataType::String => Value::String(String::from_utf8_lossy(fill.le_bytes()).into_owned()),
        DataType::Bool => Value::Bool(fill.le_bytes()[0] != 0),
        int => {
            let v = fill.as_i128(int).expect("integer");
            match i64::try_from(v) {
                Ok(i) => Value::Number(i.into()),
                Err(_) => Value::Number(u64::try_from(v).expect("u64 range").into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_attr_specials() {
        assert_eq!(float_value(1.5), json!(1.5));
        assert_eq!(float_value(f64::NAN), json!("NaN"));
        assert_eq!(float_value(f64::NEG_INFINITY), json!("-Infinity"));
    }

    #[test]
    fn cf_fill_value_forms() {
        let f = FillValue::from_f64(DataType::Float32, 1e20).unwrap();
        // 1e20 as f32 widened to f64, little-endian, base64.
        let expect =
            base64::engine::general_purpose::STANDARD.encode(f64::from(1e20f32).to_le_bytes());
        assert_eq!(cf_fill_value(DataType::Float32, &f), json!(expect));
        let i = FillValue::from_i64(DataType::Int16, -999).unwrap();
        assert_eq!(cf_fill_value(DataType::Int16, &i), json!(-999));
        let nan = FillValue::from_f64(DataType::Float64, f64::NAN).unwrap();
        assert_eq!(
            cf_fill_value(DataType::Float64, &nan),
            json!("AAAAAAAA+H8=")
        );
        assert_eq!(
            cf_fill_value(DataType::String, &FillValue::from_text("NA")),
            json!("NA")
        );
    }
}
