//! DAP4 atomic types (DAP4 specification, volume 1, section 3: "Char", "Byte", "Int8" ...
//! "Float64", "String", "URL"), the vzarr data types they map to, and their values as the
//! DMR++ writes them (attribute `<Value>`s, the `fillValue` of `dmrpp:chunks`).

use serde_json::Value;
use vzarr_core::DataType;

/// A DAP4 numeric (or character) type: its Zarr data type, or `None` for the others.
pub(crate) fn data_type(dap: &str) -> Option<DataType> {
    Some(match dap {
        "Byte" | "UInt8" => DataType::UInt8,
        "Int8" => DataType::Int8,
        "Int16" => DataType::Int16,
        "UInt16" => DataType::UInt16,
        "Int32" => DataType::Int32,
        "UInt32" => DataType::UInt32,
        "Int64" => DataType::Int64,
        "UInt64" => DataType::UInt64,
        "Float32" => DataType::Float32,
        "Float64" => DataType::Float64,
        // A netCDF char (one byte of text), as the HDF5 mapping gives NC_CHAR.
        "Char" => DataType::FixedBytes(1),
        _ => return None,
    })
}

/// Whether `name` is an element naming a DAP4 variable (atomic or constructor type).
pub(crate) fn is_variable(name: &str) -> bool {
    data_type(name).is_some()
        || matches!(
            name,
            "String" | "URL" | "Opaque" | "Enum" | "Structure" | "Sequence"
        )
}

/// The little-endian bytes of one value of `t` written as `text`, or why not.
pub(crate) fn le_bytes(t: &DataType, text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    let bad = || format!("{text:?} is not a {} value", t.name());
    Ok(match t {
        DataType::Float32 => parse_float(text)
            .ok_or_else(bad)
            .map(|v| (v as f32).to_le_bytes().to_vec())?,
        DataType::Float64 => parse_float(text).ok_or_else(bad)?.to_le_bytes().to_vec(),
        DataType::FixedBytes(1) => text.as_bytes().first().map_or(vec![0], |&b| vec![b]),
        t if t.is_signed_int() => {
            let v: i64 = text.parse().map_err(|_| bad())?;
            let size = t.size();
            let bytes = v.to_le_bytes();
            let fits = size == 8 || (v >> (8 * size - 1)) == 0 || (v >> (8 * size - 1)) == -1;
            if !fits {
                return Err(bad());
            }
            bytes[..size].to_vec()
        }
        t if t.is_unsigned_int() => {
            let v: u64 = text.parse().map_err(|_| bad())?;
            let size = t.size();
            if size < 8 && v >> (8 * size) != 0 {
                return Err(bad());
            }
            v.to_le_bytes()[..size].to_vec()
        }
        _ => return Err(bad()),
    })
}

/// A float as DAP4 writes it (`nan`, `-inf`, `1e+20`, ...).
pub(crate) fn parse_float(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok()
}

/// The JSON value of an attribute of DAP4 type `dap` with the texts `values`, and numpy's name
/// of its type where it is numeric; `None` where the type is not one an attribute maps.
pub(crate) fn attribute(dap: &str, values: &[String]) -> Option<(Value, Option<&'static str>)> {
    let one_or_all = |v: Vec<Value>| match <[Value; 1]>::try_from(v) {
        Ok([x]) => x,
        Err(v) => Value::Array(v),
    };
    match dap {
        "String" | "URL" | "Char" => Some((
            one_or_all(values.iter().map(|s| Value::String(s.clone())).collect()),
            None,
        )),
        _ => {
            let t = data_type(dap)?;
            let numpy = vzarr_core::netcdf::numpy_type_name(
                t.is_float(),
                t.is_signed_int() || t.is_float(),
                t.size(),
            );
            let parsed: Option<Vec<Value>> = values
                .iter()
                .map(|s| {
                    let s = s.trim();
                    if t.is_float() {
                        parse_float(s).map(vzarr_core::attrs::float_value)
                    } else if t.is_signed_int() {
                        s.parse::<i64>().ok().map(Value::from)
                    } else {
                        s.parse::<u64>().ok().map(Value::from)
                    }
                })
                .collect();
            Some((one_or_all(parsed?), numpy))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_type() {
        assert_eq!(le_bytes(&DataType::Int16, "-2").unwrap(), vec![0xfe, 0xff]);
        assert!(le_bytes(&DataType::Int8, "200").is_err());
        assert!(le_bytes(&DataType::UInt8, "256").is_err());
        assert_eq!(
            le_bytes(&DataType::UInt16, "65535").unwrap(),
            vec![0xff, 0xff]
        );
        assert_eq!(
            le_bytes(&DataType::Float32, "-9999").unwrap(),
            (-9999f32).to_le_bytes().to_vec()
        );
        assert!(
            f32::from_le_bytes(
                le_bytes(&DataType::Float32, "nan")
                    .unwrap()
                    .try_into()
                    .unwrap()
            )
            .is_nan()
        );
        assert!(le_bytes(&DataType::Int32, "x").is_err());
        let (v, t) = attribute("Float32", &["1.5".into(), "2".into()]).unwrap();
        assert_eq!((v, t), (serde_json::json!([1.5, 2.0]), Some("float32")));
        let (v, t) = attribute("UInt8", &["7".into()]).unwrap();
        assert_eq!((v, t), (serde_json::json!(7), Some("uint8")));
        assert!(attribute("Int32", &["x".into()]).is_none());
        assert!(attribute("Container", &[]).is_none());
    }
}
