//! Element data types and byte order of virtual arrays.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::CoreError;

/// Most fields of a `struct` data type read from metadata, and most nesting depth.
const MAX_STRUCT_FIELDS: usize = 4096;
const MAX_STRUCT_DEPTH: usize = 16;

/// One field of a [`DataType::Struct`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructField {
    /// Field name.
    pub name: String,
    /// Field type.
    pub data_type: DataType,
}

impl StructField {
    /// How the name of a field that stands for padding bytes of a source's compound begins
    /// (zarr-python's `struct` packs its fields, so the bytes between and after a compound's
    /// members are fields of their own); the byte offset follows. vzarr's xarray backend leaves
    /// such fields out, as netCDF-C and h5py do.
    pub const PADDING_PREFIX: &str = "vzarr:padding@";

    /// The field for `len` padding bytes from byte `at` of a compound: a fixed-length byte
    /// string, named [`Self::PADDING_PREFIX`] and the offset.
    pub fn padding(at: u64, len: usize) -> StructField {
        StructField {
            name: format!("{}{at}", Self::PADDING_PREFIX),
            data_type: DataType::FixedBytes(len),
        }
    }

    /// Whether this field stands for padding bytes ([`Self::padding`]).
    pub fn is_padding(&self) -> bool {
        self.name.starts_with(Self::PADDING_PREFIX)
    }
}

/// Byte order of multi-byte elements as they are stored in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first (NetCDF3, big-endian HDF5 types).
    Big,
}

impl Endian {
    /// The name used by the Zarr v3 `bytes` codec.
    pub fn as_str(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }
}

/// Element type of a virtual array, as Zarr v3 names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// One byte, 0 or 1.
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Unsigned 64-bit integer.
    UInt64,
    /// IEEE 754 half precision.
    Float16,
    /// IEEE 754 single precision.
    Float32,
    /// IEEE 754 double precision.
    Float64,
    /// Fixed-length byte string of the given length (`null_terminated_bytes`, numpy `S<n>`).
    FixedBytes(usize),
    /// Fixed-length Unicode text of the given number of code points, each a 4-byte UTF-32
    /// code unit, shorter text padded with NUL (`fixed_length_utf32`, numpy `U<n>`). Here a
    /// field of a [`DataType::Struct`]: what a variable-length string member of an HDF5
    /// compound becomes, as VirtualiZarr reads it.
    FixedUtf32(usize),
    /// Complex number of two IEEE single-precision floats, real part first.
    Complex64,
    /// Complex number of two IEEE double-precision floats, real part first.
    Complex128,
    /// Variable-length UTF-8 text (Zarr v3 `string`, encoded with the `vlen-utf8` codec, as
    /// zarr-python 3.4 writes numpy `StringDType` arrays). Its elements have no fixed size:
    /// [`DataType::size`] is 0.
    String,
    /// Packed fields, one after the other without padding (zarr-python's `struct`, numpy
    /// structured types; zarr-extensions `data-types/struct`).
    Struct(Arc<[StructField]>),
}

impl DataType {
    /// The integer type of `size` bytes (1, 2, 4 or 8), signed or not.
    pub fn integer(size: usize, signed: bool) -> Option<DataType> {
        Some(match (size, signed) {
            (1, true) => DataType::Int8,
            (2, true) => DataType::Int16,
            (4, true) => DataType::Int32,
            (8, true) => DataType::Int64,
            (1, false) => DataType::UInt8,
            (2, false) => DataType::UInt16,
            (4, false) => DataType::UInt32,
            (8, false) => DataType::UInt64,
            _ => return None,
        })
    }

    /// The IEEE float type of `size` bytes (2, 4 or 8).
    pub fn float(size: usize) -> Option<DataType> {
        Some(match size {
            2 => DataType::Float16,
            4 => DataType::Float32,
            8 => DataType::Float64,
            _ => return None,
        })
    }

    /// Size of one element in bytes; 0 for [`DataType::String`], whose elements have no fixed
    /// size (see [`DataType::is_string`]).
    pub fn size(&self) -> usize {
        match self {
            DataType::String => 0,
            DataType::Bool | DataType::Int8 | DataType::UInt8 => 1,
            DataType::Int16 | DataType::UInt16 | DataType::Float16 => 2,
            DataType::Int32 | DataType::UInt32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::UInt64 | DataType::Float64 | DataType::Complex64 => 8,
            DataType::Complex128 => 16,
            DataType::FixedBytes(n) => *n,
            DataType::FixedUtf32(n) => n.saturating_mul(4),
            DataType::Struct(fields) => fields.iter().map(|f| f.data_type.size()).sum(),
        }
    }

    /// Whether the byte order matters for this type (elements wider than one byte that are not
    /// byte strings).
    pub fn has_endianness(&self) -> bool {
        match self {
            DataType::FixedBytes(_) => false,
            DataType::Struct(fields) => fields.iter().any(|f| f.data_type.has_endianness()),
            _ => self.size() > 1,
        }
    }

    /// Whether this is a complex type.
    pub fn is_complex(&self) -> bool {
        matches!(self, DataType::Complex64 | DataType::Complex128)
    }

    /// Swaps the byte order of one element in place (big-endian to little-endian and back):
    /// each part of a complex number on its own, byte strings never.
    pub fn swap_element(&self, element: &mut [u8]) {
        match self {
            DataType::FixedBytes(_) => {}
            DataType::Complex64 | DataType::Complex128 => {
                let half = self.size() / 2;
                for part in element.chunks_exact_mut(half) {
                    part.reverse();
                }
            }
            DataType::FixedUtf32(_) => {
                for unit in element.chunks_exact_mut(4) {
                    unit.reverse();
                }
            }
            DataType::Struct(fields) => {
                let mut at = 0;
                for f in fields.iter() {
                    let n = f.data_type.size();
                    if let Some(part) = element.get_mut(at..at + n) {
                        f.data_type.swap_element(part);
                    }
                    at += n;
                }
            }
            _ => element.reverse(),
        }
    }

    /// Swaps the byte order of every element of `bytes` in place (see
    /// [`DataType::swap_element`]).
    pub fn swap_elements(&self, bytes: &mut [u8]) {
        if self.has_endianness() {
            for e in bytes.chunks_exact_mut(self.size()) {
                self.swap_element(e);
            }
        }
    }

    /// Whether this is the variable-length [`DataType::String`] (no fixed element size; its
    /// chunks are encoded by the `vlen-utf8` codec, not `bytes`).
    pub fn is_string(&self) -> bool {
        matches!(self, DataType::String)
    }

    /// Whether this is a floating-point type.
    pub fn is_float(&self) -> bool {
        matches!(
            self,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        )
    }

    /// Whether this is a signed integer type.
    pub fn is_signed_int(&self) -> bool {
        matches!(
            self,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    }

    /// Whether this is an unsigned integer type.
    pub fn is_unsigned_int(&self) -> bool {
        matches!(
            self,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
        )
    }

    /// Short human-readable name (`int16`, `float32`, `S8`, ...).
    pub fn name(&self) -> String {
        match self {
            DataType::FixedBytes(n) => format!("S{n}"),
            DataType::FixedUtf32(n) => format!("U{n}"),
            DataType::Struct(fields) => format!(
                "struct{{{}}}",
                fields
                    .iter()
                    .map(|f| format!("{}: {}", f.name, f.data_type.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.zarr_name().to_string(),
        }
    }

    fn zarr_name(&self) -> &'static str {
        match self {
            DataType::Bool => "bool",
            DataType::Int8 => "int8",
            DataType::Int16 => "int16",
            DataType::Int32 => "int32",
            DataType::Int64 => "int64",
            DataType::UInt8 => "uint8",
            DataType::UInt16 => "uint16",
            DataType::UInt32 => "uint32",
            DataType::UInt64 => "uint64",
            DataType::Float16 => "float16",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::FixedBytes(_) => "null_terminated_bytes",
            DataType::FixedUtf32(_) => "fixed_length_utf32",
            DataType::Complex64 => "complex64",
            DataType::Complex128 => "complex128",
            DataType::String => "string",
            DataType::Struct(_) => "struct",
        }
    }

    /// The Zarr v3 `data_type` metadata value.
    pub fn to_zarr_json(&self) -> Value {
        match self {
            DataType::FixedBytes(n) => json!({
                "name": "null_terminated_bytes",
                "configuration": {"length_bytes": n}
            }),
            DataType::FixedUtf32(n) => json!({
                "name": "fixed_length_utf32",
                "configuration": {"length_bytes": n.saturating_mul(4)}
            }),
            DataType::Struct(fields) => json!({
                "name": "struct",
                "configuration": {"fields": fields
                    .iter()
                    .map(|f| json!({"name": f.name, "data_type": f.data_type.to_zarr_json()}))
                    .collect::<Vec<_>>()}
            }),
            other => Value::String(other.zarr_name().to_string()),
        }
    }

    /// Parses a Zarr v3 `data_type` metadata value.
    pub fn from_zarr_json(value: &Value) -> Result<Self, CoreError> {
        Self::from_zarr_json_at(value, 0)
    }

    fn from_zarr_json_at(value: &Value, depth: usize) -> Result<Self, CoreError> {
        let bad = || CoreError::Metadata(format!("unsupported data_type {value}"));
        match value {
            Value::String(s) => Ok(match s.as_str() {
                "bool" => DataType::Bool,
                "int8" => DataType::Int8,
                "int16" => DataType::Int16,
                "int32" => DataType::Int32,
                "int64" => DataType::Int64,
                "uint8" => DataType::UInt8,
                "uint16" => DataType::UInt16,
                "uint32" => DataType::UInt32,
                "uint64" => DataType::UInt64,
                "float16" => DataType::Float16,
                "float32" => DataType::Float32,
                "float64" => DataType::Float64,
                "complex64" => DataType::Complex64,
                "complex128" => DataType::Complex128,
                "string" => DataType::String,
                _ => return Err(bad()),
            }),
            Value::Object(map) if map.get("name").and_then(Value::as_str) == Some("struct") => {
                let fields = map
                    .get("configuration")
                    .and_then(|c| c.get("fields"))
                    .and_then(Value::as_array)
                    .filter(|f| !f.is_empty() && f.len() <= MAX_STRUCT_FIELDS)
                    .ok_or_else(bad)?;
                if depth >= MAX_STRUCT_DEPTH {
                    return Err(bad());
                }
                let fields = fields
                    .iter()
                    .map(|f| {
                        let name = f.get("name").and_then(Value::as_str).ok_or_else(bad)?;
                        let dt = f.get("data_type").ok_or_else(bad)?;
                        let data_type = Self::from_zarr_json_at(dt, depth + 1)?;
                        // A struct's fields are packed: each has a fixed size.
                        if data_type.is_string() {
                            return Err(bad());
                        }
                        Ok(StructField {
                            name: name.to_string(),
                            data_type,
                        })
                    })
                    .collect::<Result<Vec<_>, CoreError>>()?;
                let total = fields
                    .iter()
                    .try_fold(0usize, |a, f| a.checked_add(f.data_type.size()));
                if total.is_none_or(|n| n > 1 << 20) {
                    return Err(bad());
                }
                Ok(DataType::Struct(fields.into()))
            }
            Value::Object(map) => {
                let name = map.get("name").and_then(Value::as_str);
                if name != Some("null_terminated_bytes") && name != Some("fixed_length_utf32") {
                    return Err(bad());
                }
                let n = map
                    .get("configuration")
                    .and_then(|c| c.get("length_bytes"))
                    .and_then(Value::as_u64)
                    .ok_or_else(bad)?;
                if n == 0 || n > 1 << 20 {
                    return Err(bad());
                }
                let n = usize::try_from(n).map_err(|_| bad())?;
                if name == Some("fixed_length_utf32") {
                    if n % 4 != 0 {
                        return Err(bad());
                    }
                    return Ok(DataType::FixedUtf32(n / 4));
                }
                Ok(DataType::FixedBytes(n))
            }
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zarr_json_round_trip() {
        for dt in [
            DataType::Bool,
            DataType::Int8,
            DataType::Int16,
            DataType::Int32,
            DataType::Int64,
            DataType::UInt8,
            DataType::UInt16,
            DataType::UInt32,
            DataType::UInt64,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
            DataType::FixedBytes(7),
            DataType::FixedUtf32(5),
            DataType::Complex64,
            DataType::Complex128,
            DataType::String,
            DataType::Struct(
                vec![
                    StructField {
                        name: "a".into(),
                        data_type: DataType::Int32,
                    },
                    StructField {
                        name: "b".into(),
                        data_type: DataType::Struct(
                            vec![StructField {
                                name: "x".into(),
                                data_type: DataType::Float64,
                            }]
                            .into(),
                        ),
                    },
                ]
                .into(),
            ),
        ] {
            assert_eq!(DataType::from_zarr_json(&dt.to_zarr_json()).unwrap(), dt);
        }
        assert_eq!(
            DataType::FixedBytes(3).to_zarr_json(),
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}})
        );
        assert!(DataType::from_zarr_json(&json!("complex32")).is_err());
        assert_eq!(
            DataType::FixedUtf32(5).to_zarr_json(),
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 20}})
        );
        let odd = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}});
        assert!(DataType::from_zarr_json(&odd).is_err());
        assert_eq!(DataType::String.to_zarr_json(), json!("string"));
        // A struct's fields have fixed sizes: a variable-length string field is refused.
        let field = |t: Value| {
            json!({"name": "struct", "configuration": {"fields": [
                {"name": "a", "data_type": "int32"}, {"name": "s", "data_type": t}]}})
        };
        assert!(DataType::from_zarr_json(&field(json!("int8"))).is_ok());
        assert!(DataType::from_zarr_json(&field(json!("string"))).is_err());
    }

    #[test]
    fn from_size() {
        assert_eq!(DataType::integer(2, true), Some(DataType::Int16));
        assert_eq!(DataType::integer(8, false), Some(DataType::UInt64));
        assert_eq!(DataType::integer(3, true), None);
        assert_eq!(DataType::float(4), Some(DataType::Float32));
        assert_eq!(DataType::float(16), None);
    }

    #[test]
    fn sizes_and_endianness() {
        assert_eq!(DataType::Float64.size(), 8);
        assert!(DataType::Int16.has_endianness());
        assert!(!DataType::UInt8.has_endianness());
        assert!(!DataType::FixedBytes(4).has_endianness());
        assert_eq!(DataType::Complex128.size(), 16);
        let mut c = [1, 2, 3, 4, 5, 6, 7, 8];
        DataType::Complex64.swap_element(&mut c);
        assert_eq!(c, [4, 3, 2, 1, 8, 7, 6, 5]);
        assert_eq!(DataType::String.size(), 0);
        assert_eq!(DataType::FixedUtf32(3).size(), 12);
        assert!(DataType::FixedUtf32(1).has_endianness());
        let mut u = [0x41, 0, 0, 0, 0xe9, 0, 0, 0];
        DataType::FixedUtf32(2).swap_element(&mut u);
        assert_eq!(u, [0, 0, 0, 0x41, 0, 0, 0, 0xe9]);
        assert!(!DataType::String.has_endianness() && DataType::String.is_string());
    }
}
