//! Attributes: an attribute's stored values as JSON, HDF5 and netCDF bookkeeping dropped, and
//! `_FillValue` written the way xarray's Zarr v3 backend decodes it (CF conventions, "Missing
//! data"; netCDF-4's reserved attributes, NetCDF User Guide, "Attribute Conventions"). An
//! attribute that has no JSON form is left out and listed as skipped.

use serde_json::Value;
use vzarr_core::attrs::cf_fill_value;
use vzarr_core::{Attributes, DataType, FillValue, SkippedVariable};

use crate::or_root;
use crate::types::{IntType, StrPad, TypeInfo};

/// Attributes that are HDF5 or netCDF bookkeeping, never user attributes.
const DROPPED_ATTRS: &[&str] = &[
    "DIMENSION_LIST",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_nc3_strict",
    "_NCProperties",
];
/// Attributes of dimension scales that only describe the scale itself.
const SCALE_ATTRS: &[&str] = &["CLASS", "NAME", "REFERENCE_LIST"];

/// Largest fixed-size attribute read, in bytes.
pub const MAX_ATTR_BYTES: usize = 1 << 30;
/// Largest variable-length string attribute read, in elements.
pub const MAX_ATTR_STRINGS: u64 = 1 << 24;

/// Whether the attribute `name` is bookkeeping (of a dimension scale when `of_scale`), left
/// out of the Zarr attributes.
pub fn is_bookkeeping(name: &str, of_scale: bool) -> bool {
    DROPPED_ATTRS.contains(&name) || (of_scale && SCALE_ATTRS.contains(&name))
}

/// An attribute's value: JSON (`Ok`) or why it cannot be represented (`Err`).
#[derive(Clone, Debug, PartialEq)]
pub struct RawAttr {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: Result<Value, String>,
    /// The stored bytes and type of a numeric attribute, for `_FillValue` conversion.
    pub numeric: Option<Numeric>,
}

/// The stored elements of a numeric attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Numeric {
    /// Their type.
    pub info: TypeInfo,
    /// Their bytes as stored.
    pub bytes: Vec<u8>,
}

/// The dataspace of an attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Space {
    /// No elements (`H5S_NULL`).
    Null,
    /// One element, no dimensions.
    Scalar,
    /// An array of elements of these dimensions.
    Simple(Vec<u64>),
}

/// How a reader hands over an attribute's stored values.
pub trait AttrValues {
    /// The stored bytes of a fixed-size attribute (at most [`MAX_ATTR_BYTES`]), or why they
    /// are not read.
    fn bytes(&self) -> Result<Vec<u8>, String>;
    /// The strings of a variable-length string attribute (at most [`MAX_ATTR_STRINGS`]), each
    /// up to its first NUL as the C library hands them out, or why they cannot be read.
    fn strings(&self) -> Result<Vec<String>, String>;
}

/// An attribute named `name` of type `info` in dataspace `space`, its values read through
/// `values`: its value as JSON (or why it has none) and, for numbers, the stored bytes.
///
/// One element is one JSON value (a scalar dataspace, or an array of one element), as h5py
/// and netCDF4-python hand it out; more elements are a JSON array, nested as the dataspace
/// is (a 2 x 2 attribute is a list of two lists of two, as numpy's `tolist` gives it).
pub fn read_attr(name: String, info: TypeInfo, space: Space, values: &dyn AttrValues) -> RawAttr {
    let scalar = space == Space::Scalar;
    let dims: &[u64] = match &space {
        Space::Simple(d) => d,
        _ => &[],
    };
    let collapse = |v: Vec<Value>, scalar: bool| shaped(one_or_all(v, scalar), dims);
    let mut numeric = None;
    let value = match &info {
        TypeInfo::Int(t) | TypeInfo::Enum(t) => values.bytes().map(|b| {
            let v = collapse(ints_to_json(&b, t.size, t.signed, t.big_endian), scalar);
            numeric = Some(Numeric {
                info: info.clone(),
                bytes: b,
            });
            v
        }),
        TypeInfo::Bool => values
            .bytes()
            .map(|b| collapse(b.iter().map(|&x| Value::Bool(x != 0)).collect(), scalar)),
        TypeInfo::Float { size, big_endian } => values.bytes().map(|b| {
            let v = collapse(
                floats(&b, *size, *big_endian)
                    .into_iter()
                    .map(vzarr_core::attrs::float_value)
                    .collect(),
                scalar,
            );
            numeric = Some(Numeric {
                info: info.clone(),
                bytes: b,
            });
            v
        }),
        TypeInfo::FixedString { .. } | TypeInfo::VarString if space == Space::Null => {
            Ok(Value::String(String::new()))
        }
        TypeInfo::FixedString { size, pad } => values.bytes().map(|b| {
            let v = fixed_strings(&b, *size, *pad);
            collapse(v.into_iter().map(Value::String).collect(), scalar)
        }),
        TypeInfo::VarString => values
            .strings()
            .map(|v| collapse(v.into_iter().map(Value::String).collect(), scalar)),
        TypeInfo::WideInt(t) => values.bytes().and_then(|b| {
            let narrow = narrow_ints(&b, t)?;
            let v = collapse(ints_to_json(&narrow, 8, t.signed, false), scalar);
            numeric = Some(Numeric {
                info: TypeInfo::Int(IntType {
                    size: 8,
                    signed: t.signed,
                    big_endian: false,
                }),
                bytes: narrow,
            });
            Ok(v)
        }),
        TypeInfo::Other(what) => Err(format!("attribute of {what}")),
    };
    RawAttr {
        name,
        value,
        numeric,
    }
}

fn fixed_strings(bytes: &[u8], size: usize, pad: StrPad) -> Vec<String> {
    if size == 0 {
        return vec![];
    }
    bytes
        .chunks(size)
        .map(|s| {
            let s = match pad {
                StrPad::NullTerm | StrPad::NullPad => {
                    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
                }
                StrPad::SpacePad => {
                    let end = s
                        .iter()
                        .rposition(|&b| b != b' ' && b != 0)
                        .map_or(0, |i| i + 1);
                    &s[..end]
                }
            };
            String::from_utf8_lossy(s).into_owned()
        })
        .collect()
}

/// Integers of `t.size` (over 8) bytes as little-endian 8-byte integers of the same sign, or
/// why not: a value that does not fit (netCDF-C's conversion would clip it).
fn narrow_ints(bytes: &[u8], t: &IntType) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(bytes.len() / t.size * 8);
    for c in bytes.chunks_exact(t.size) {
        let mut le = c.to_vec();
        if t.big_endian {
            le.reverse();
        }
        let (low, high) = le.split_at(8);
        let fill = if t.signed && low[7] & 0x80 != 0 {
            0xff
        } else {
            0
        };
        if high.iter().any(|&x| x != fill) {
            return Err(format!(
                "{}-byte integer attribute with a value beyond 64 bits",
                t.size
            ));
        }
        out.extend_from_slice(low);
    }
    Ok(out)
}

/// Decodes integers of `size` bytes into JSON numbers.
fn ints_to_json(bytes: &[u8], size: usize, signed: bool, big: bool) -> Vec<Value> {
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            if big {
                for (i, &x) in c.iter().rev().enumerate() {
                    b[i] = x;
                }
            } else {
                b[..size].copy_from_slice(c);
            }
            if signed {
                // Sign-extend.
                let shift = 64 - 8 * size as u32;
                let v = (i64::from_le_bytes(b) << shift) >> shift;
                Value::from(v)
            } else {
                Value::from(u64::from_le_bytes(b))
            }
        })
        .collect()
}

/// Decodes IEEE floats of `size` bytes (2, 4 or 8) into f64 values.
pub fn floats(bytes: &[u8], size: usize, big: bool) -> Vec<f64> {
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            if big {
                b[..size].reverse();
            }
            match size {
                2 => vzarr_core::half_to_f64(u16::from_le_bytes([b[0], b[1]])),
                4 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => f64::from_le_bytes(b),
            }
        })
        .collect()
}

/// `value` (a flat JSON array of C-order elements) nested along `dims` when there are two or
/// more of them and the elements fill them exactly (none empty); anything else as it is.
fn shaped(value: Value, dims: &[u64]) -> Value {
    let Value::Array(flat) = value else {
        return value;
    };
    let fits = dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .is_some_and(|n| n == flat.len() as u64);
    // No elements: an empty list (the outer lists of empty lists are not built on the word
    // of a dataspace whose other axes may be huge).
    if dims.len() < 2 || !fits || flat.is_empty() {
        return Value::Array(flat);
    }
    nest(&mut flat.into_iter(), dims)
}

/// The next values of `flat` as nested lists of `dims` (which `flat` fills, none zero).
fn nest(flat: &mut std::vec::IntoIter<Value>, dims: &[u64]) -> Value {
    match dims {
        [] | [_] => Value::Array(
            flat.by_ref()
                .take(dims.first().map_or(1, |&d| d as usize))
                .collect(),
        ),
        [d, rest @ ..] => Value::Array((0..*d).map(|_| nest(flat, rest)).collect()),
    }
}

/// One value for a scalar dataspace or a single element, else a JSON array.
fn one_or_all(mut v: Vec<Value>, scalar_space: bool) -> Value {
    if v.len() == 1 || (scalar_space && !v.is_empty()) {
        v.swap_remove(0)
    } else {
        Value::Array(v)
    }
}

/// Converts the attributes of the object at `path` to JSON, dropping bookkeeping attributes
/// (and, of a dimension scale, the scale's own) and writing `_FillValue` the way xarray's
/// Zarr v3 backend decodes it; `array_type` is the data type of the dataset they belong to
/// (`None` for a group). Attributes that cannot be represented are listed in `skipped`.
pub fn convert_attributes(
    attrs: impl IntoIterator<Item = RawAttr>,
    path: &str,
    is_scale: bool,
    array_type: Option<&DataType>,
    skipped: &mut Vec<SkippedVariable>,
) -> Attributes {
    let mut out = Attributes::new();
    let mut skip = |object: String, reason: String| {
        skipped.push(SkippedVariable {
            path: object,
            reason,
        });
    };
    for a in attrs {
        if is_bookkeeping(&a.name, is_scale) {
            continue;
        }
        let value = match a.value {
            Ok(v) => v,
            Err(reason) => {
                skip(
                    format!("{}@{}", or_root(path), a.name),
                    format!("attribute left out: {reason}"),
                );
                continue;
            }
        };
        if a.name == "_FillValue"
            && let Some(dt) = array_type
        {
            match fill_attr(dt.clone(), &value, a.numeric.as_ref()) {
                Some(v) => {
                    out.insert(a.name, v);
                }
                None => skip(
                    format!("{path}@_FillValue"),
                    format!(
                        "attribute left out: value {value} does not fit the array's {}",
                        dt.name()
                    ),
                ),
            }
            continue;
        }
        if let Some(t) = a.numeric.as_ref().and_then(|n| numpy_type(&n.info)) {
            vzarr_core::netcdf::set_attribute_type(&mut out, &a.name, t);
        }
        out.insert(a.name, value);
    }
    out
}

/// numpy's name of a numeric attribute's stored type (an enum's: its base integer's, as
/// netCDF4-python hands enum attributes out).
fn numpy_type(info: &TypeInfo) -> Option<&'static str> {
    match info {
        TypeInfo::Int(t) | TypeInfo::Enum(t) => {
            vzarr_core::netcdf::numpy_type_name(false, t.signed, t.size)
        }
        TypeInfo::Float { size, .. } => vzarr_core::netcdf::numpy_type_name(true, true, *size),
        _ => None,
    }
}

/// The `_FillValue` attribute converted to the array's type, in xarray's encoding. For a
/// bool array (h5py's enum bool), a bool `_FillValue` (what h5py and xarray write) or an
/// integer one (0 is false, anything else true).
fn fill_attr(dt: DataType, value: &Value, numeric: Option<&Numeric>) -> Option<Value> {
    let dt_in = dt.clone();
    let first = match value {
        Value::Array(v) => v.first()?,
        v => v,
    };
    let fill = match dt_in {
        // netCDF-4's `_FillValue` of a `string` variable: the text.
        DataType::String => FillValue::from_text(first.as_str()?),
        DataType::FixedBytes(n) => {
            let s = first.as_str()?.as_bytes();
            let mut b = s.to_vec();
            b.resize(n, 0);
            b.truncate(n);
            FillValue::from_le_bytes(dt.clone(), &b).ok()?
        }
        d if d.is_float() => {
            let f = match numeric {
                Some(Numeric {
                    info: TypeInfo::Float { size, big_endian },
                    bytes,
                }) => *floats(bytes, *size, *big_endian).first()?,
                _ => first.as_f64()?,
            };
            match d {
                DataType::Float16 => {
                    FillValue::from_le_bytes(d, &vzarr_core::f64_to_half(f).to_le_bytes()).ok()?
                }
                _ => FillValue::from_f64(d, f).ok()?,
            }
        }
        DataType::Bool => {
            let b = match first {
                Value::Bool(b) => *b,
                v => v.as_i64()? != 0,
            };
            FillValue::from_i64(dt.clone(), i64::from(b)).ok()?
        }
        d => {
            if let Some(i) = first.as_i64() {
                FillValue::from_i64(d, i).ok()?
            } else if let (Some(u), DataType::UInt64) = (first.as_u64(), &d) {
                FillValue::from_le_bytes(d, &u.to_le_bytes()).ok()?
            } else {
                let f = first.as_f64()?;
                if f.fract() != 0.0 || !f.is_finite() {
                    return None;
                }
                FillValue::from_i64(d, f as i64).ok()?
            }
        }
    };
    Some(cf_fill_value(dt, &fill))
}

/// The CF attributes of an enum's members: `flag_values` (the values, as the base integer
/// type's) and `flag_meanings` (the names, blank-separated, blanks inside a name replaced by
/// `_`), in the order of the values; attributes of these names already in the source win.
/// The members are also recorded in the netCDF view (`vzarr_core::netcdf`'s `enum`: what
/// netCDF4-python gives as the variable's `datatype.enum_dict`).
pub fn enum_attributes(attributes: &mut Attributes, members: &[(String, i128)]) {
    let number = |v: i128| match i64::try_from(v) {
        Ok(i) => Value::from(i),
        Err(_) => Value::from(u64::try_from(v).unwrap_or(u64::MAX)),
    };
    if !members.is_empty()
        && !attributes.contains_key("flag_values")
        && !attributes.contains_key("flag_meanings")
    {
        let values: Vec<Value> = members.iter().map(|(_, v)| number(*v)).collect();
        let meanings: Vec<String> = members
            .iter()
            .map(|(n, _)| n.split_whitespace().collect::<Vec<_>>().join("_"))
            .collect();
        attributes.insert("flag_values".into(), Value::Array(values));
        attributes.insert("flag_meanings".into(), Value::String(meanings.join(" ")));
    }
    let dict: serde_json::Map<String, Value> = members
        .iter()
        .map(|(n, v)| (n.clone(), number(*v)))
        .collect();
    vzarr_core::netcdf::set_field(attributes, "enum", dict.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Stored(Vec<u8>, Vec<String>);

    impl AttrValues for Stored {
        fn bytes(&self) -> Result<Vec<u8>, String> {
            Ok(self.0.clone())
        }
        fn strings(&self) -> Result<Vec<String>, String> {
            Ok(self.1.clone())
        }
    }

    #[test]
    fn integers_floats_and_strings() {
        assert_eq!(ints_to_json(&[0xff, 0xfe], 2, true, true), vec![json!(-2)]);
        assert_eq!(
            ints_to_json(&[0xff, 0xff], 2, false, false),
            vec![json!(65535)]
        );
        assert_eq!(floats(&[0x3f, 0x80, 0, 0], 4, true), vec![1.0]);
        assert_eq!(floats(&[0x00, 0x3c], 2, false), vec![1.0]);
        assert_eq!(
            fixed_strings(b"ab\0\0cd  ", 4, StrPad::NullTerm),
            vec!["ab".to_string(), "cd  ".to_string()]
        );
        assert_eq!(
            fixed_strings(b"ab  ", 4, StrPad::SpacePad),
            vec!["ab".to_string()]
        );
        assert_eq!(one_or_all(vec![json!(1)], false), json!(1));
        assert_eq!(one_or_all(vec![], false), json!([]));
        assert_eq!(one_or_all(vec![json!(1), json!(2)], false), json!([1, 2]));
    }

    #[test]
    fn integers_wider_than_8_bytes_read_as_64_bit_ones_where_they_fit() {
        let wide = |signed, big_endian| {
            TypeInfo::WideInt(IntType {
                size: 16,
                signed,
                big_endian,
            })
        };
        let read = |info, bytes: Vec<u8>, space| {
            read_attr("t".into(), info, space, &Stored(bytes, vec![]))
        };
        // PyTables' `ref_time`: an unsigned 16-byte zero, big-endian, as netCDF-C shows it.
        let a = read(wide(false, true), vec![0; 16], Space::Scalar);
        assert_eq!(a.value, Ok(json!(0)));
        assert_eq!(numpy_type(&a.numeric.unwrap().info), Some("uint64"));
        // Signed, little-endian: -2 and 2^63 - 1 fit; the sign is extended over 16 bytes.
        let mut b = vec![0xfe; 1];
        b.extend([0xff; 15]);
        b.extend([0xff; 7]);
        b.push(0x7f);
        b.extend([0; 8]);
        let a = read(wide(true, false), b, Space::Simple(vec![2]));
        assert_eq!(a.value, Ok(json!([-2, i64::MAX])));
        assert_eq!(numpy_type(&a.numeric.unwrap().info), Some("int64"));
        // A value beyond 64 bits is not clipped: the attribute is left out, with the reason.
        let mut b = vec![0; 16];
        b[8] = 1;
        let a = read(wide(false, false), b, Space::Scalar);
        assert!(a.value.unwrap_err().contains("beyond 64 bits"));
        let mut b = vec![0; 16];
        b[7] = 0x80; // 2^63 as a signed 16-byte integer: not an int64
        assert!(read(wide(true, false), b, Space::Scalar).value.is_err());
        // A dataset of such integers has no Zarr data type.
        assert!(
            crate::types::data_type(&wide(true, false))
                .unwrap_err()
                .contains("16-byte integer")
        );
    }

    #[test]
    fn values_by_type_and_space() {
        let int16 = TypeInfo::Int(crate::types::IntType {
            size: 2,
            signed: true,
            big_endian: false,
        });
        let a = read_attr(
            "n".into(),
            int16.clone(),
            Space::Simple(vec![2]),
            &Stored(vec![1, 0, 2, 0], vec![]),
        );
        assert_eq!(a.value, Ok(json!([1, 2])));
        assert_eq!(a.numeric.unwrap().bytes, vec![1, 0, 2, 0]);
        let s = read_attr(
            "s".into(),
            TypeInfo::VarString,
            Space::Scalar,
            &Stored(vec![], vec!["x".into()]),
        );
        assert_eq!(s.value, Ok(json!("x")));
        let null = read_attr(
            "e".into(),
            TypeInfo::VarString,
            Space::Null,
            &Stored(vec![], vec!["never read".into()]),
        );
        assert_eq!(null.value, Ok(json!("")));
        let other = read_attr(
            "o".into(),
            TypeInfo::Other("opaque type".into()),
            Space::Scalar,
            &Stored(vec![], vec![]),
        );
        assert_eq!(other.value, Err("attribute of opaque type".into()));
    }

    #[test]
    fn attribute_arrays_keep_their_shape() {
        let two_by_two = Space::Simple(vec![2, 2]);
        let s = read_attr(
            "s".into(),
            TypeInfo::FixedString {
                size: 1,
                pad: StrPad::NullPad,
            },
            two_by_two.clone(),
            &Stored(b"abcd".to_vec(), vec![]),
        );
        assert_eq!(s.value, Ok(json!([["a", "b"], ["c", "d"]])));
        let int8 = TypeInfo::Int(crate::types::IntType {
            size: 1,
            signed: true,
            big_endian: false,
        });
        let n = read_attr(
            "n".into(),
            int8.clone(),
            Space::Simple(vec![2, 1, 3]),
            &Stored(vec![1, 2, 3, 4, 5, 6], vec![]),
        );
        assert_eq!(n.value, Ok(json!([[[1, 2, 3]], [[4, 5, 6]]])));
        // The stored bytes of a numeric attribute stay flat.
        assert_eq!(n.numeric.unwrap().bytes.len(), 6);
        let v = read_attr(
            "v".into(),
            TypeInfo::VarString,
            two_by_two,
            &Stored(vec![], vec!["w".into(), "x".into(), "y".into(), "z".into()]),
        );
        assert_eq!(v.value, Ok(json!([["w", "x"], ["y", "z"]])));
        // One element is one value, whatever the rank; no elements an empty list; values
        // that do not fill the dataspace stay flat.
        let one = |dims: Vec<u64>, bytes: Vec<u8>| {
            read_attr(
                "o".into(),
                int8.clone(),
                Space::Simple(dims),
                &Stored(bytes, vec![]),
            )
            .value
        };
        assert_eq!(one(vec![1, 1], vec![7]), Ok(json!(7)));
        assert_eq!(one(vec![u64::MAX, 0], vec![]), Ok(json!([])));
        assert_eq!(one(vec![2, 2], vec![1, 2, 3]), Ok(json!([1, 2, 3])));
        assert_eq!(one(vec![3], vec![1, 2, 3]), Ok(json!([1, 2, 3])));
    }

    #[test]
    fn bookkeeping_dropped_and_unrepresentable_listed() {
        let raw = |name: &str, value: Result<Value, String>| RawAttr {
            name: name.into(),
            value,
            numeric: None,
        };
        let mut skipped = Vec::new();
        let out = convert_attributes(
            vec![
                raw("DIMENSION_LIST", Ok(json!(1))),
                raw("NAME", Ok(json!("x"))),
                raw("units", Ok(json!("K"))),
                raw("bad", Err("attribute of opaque type".into())),
                raw("_FillValue", Ok(json!(300))),
            ],
            "",
            true,
            Some(&DataType::Int8),
            &mut skipped,
        );
        assert_eq!(serde_json::to_value(&out).unwrap(), json!({"units": "K"}));
        assert_eq!(skipped.len(), 2);
        assert_eq!(skipped[0].path, "/@bad");
        assert_eq!(skipped[1].path, "@_FillValue");
    }

    #[test]
    fn fill_value_attribute_in_xarray_encoding() {
        assert_eq!(
            fill_attr(DataType::Int16, &json!(-999), None),
            Some(json!(-999))
        );
        assert_eq!(fill_attr(DataType::Int8, &json!(300), None), None);
        assert_eq!(
            fill_attr(DataType::Float64, &json!("NaN"), None),
            None,
            "a NaN without its stored bytes has no number"
        );
        let nan = Numeric {
            info: TypeInfo::Float {
                size: 8,
                big_endian: false,
            },
            bytes: f64::NAN.to_le_bytes().to_vec(),
        };
        assert_eq!(
            fill_attr(DataType::Float64, &json!("NaN"), Some(&nan)),
            Some(json!("AAAAAAAA+H8="))
        );
        // A bool `_FillValue` (h5py's, xarray's) and an integer one alike.
        assert_eq!(
            fill_attr(DataType::Bool, &json!(false), None),
            Some(json!(false))
        );
        assert_eq!(
            fill_attr(DataType::Bool, &json!(true), None),
            Some(json!(true))
        );
        assert_eq!(fill_attr(DataType::Bool, &json!("x"), None), None);
        assert_eq!(
            fill_attr(DataType::Bool, &json!(1), None),
            Some(json!(true))
        );
        assert_eq!(
            fill_attr(DataType::UInt64, &json!(u64::MAX), None),
            Some(json!(u64::MAX))
        );
        assert_eq!(
            fill_attr(DataType::FixedBytes(2), &json!("abc"), None),
            Some(json!("YWI="))
        );
        assert_eq!(
            fill_attr(DataType::String, &json!(["MISSING"]), None),
            Some(json!("MISSING"))
        );
        assert_eq!(fill_attr(DataType::String, &json!(1), None), None);
    }
}
