//! Attributes: reading every attribute of a group or dataset as JSON, dropping HDF5 and
//! netCDF bookkeeping, and writing `_FillValue` the way xarray's Zarr v3 backend decodes it.
//! An attribute that has no JSON form is left out and listed as skipped.

use std::ffi::CString;

use hdf5_sys::h5::H5_index_t;
use hdf5_sys::h5i::hid_t;
use serde_json::Value;
use vzarr_core::attrs::cf_fill_value;
use vzarr_core::{Attributes, DataType, FillValue};

use crate::ffi;
use crate::ffi::attr::Attribute;
use crate::types::{StrPad, TypeInfo, type_info};
use crate::walk::{Ctx, or_root};

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
const MAX_ATTR_BYTES: usize = 1 << 30;
/// Largest variable-length string attribute read, in elements.
const MAX_ATTR_STRINGS: usize = 1 << 24;

/// An attribute's value: JSON (`Ok`) or why it cannot be represented (`Err`).
pub(crate) struct RawAttr {
    pub(crate) name: String,
    pub(crate) value: Result<Value, String>,
    /// The stored bytes and type of a numeric attribute, for `_FillValue` conversion.
    pub(crate) numeric: Option<Numeric>,
}

/// The stored elements of a numeric attribute.
pub(crate) struct Numeric {
    /// Their type.
    pub(crate) info: TypeInfo,
    /// Their bytes as stored.
    pub(crate) bytes: Vec<u8>,
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

/// Decodes IEEE floats of `size` bytes into f64 values.
fn floats(bytes: &[u8], size: usize, big: bool) -> Vec<f64> {
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = c.to_vec();
            if big {
                b.reverse();
            }
            match size {
                2 => vzarr_core::half_to_f64(u16::from_le_bytes([b[0], b[1]])),
                4 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            }
        })
        .collect()
}

/// One value for a scalar dataspace or a single element, else a JSON array.
fn collapse(mut v: Vec<Value>, scalar_space: bool) -> Value {
    if v.len() == 1 || (scalar_space && !v.is_empty()) {
        v.swap_remove(0)
    } else {
        Value::Array(v)
    }
}

/// Reads an open attribute: its name, its value as JSON (or why it has none) and, for
/// numbers, the stored bytes.
fn read_one(attr: &Attribute) -> Result<RawAttr, String> {
    let name = attr.name().ok_or("attribute name unreadable")?;
    let shape = ffi::space::shape(attr.space())?;
    let scalar = matches!(shape.as_deref(), Some([]));
    let info = type_info(attr.file_type());
    let mut numeric = None;
    let value = match &info {
        TypeInfo::Int {
            size,
            signed,
            big_endian,
        }
        | TypeInfo::Enum {
            size,
            signed,
            big_endian,
        } => attr.read_raw(MAX_ATTR_BYTES).map(|b| {
            let v = collapse(ints_to_json(&b, *size, *signed, *big_endian), scalar);
            numeric = Some(Numeric {
                info: info.clone(),
                bytes: b,
            });
            v
        }),
        TypeInfo::Bool => attr
            .read_raw(MAX_ATTR_BYTES)
            .map(|b| collapse(b.iter().map(|&x| Value::Bool(x != 0)).collect(), scalar)),
        TypeInfo::Float { size, big_endian } => attr.read_raw(MAX_ATTR_BYTES).map(|b| {
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
        TypeInfo::FixedString { size, pad } => {
            if shape.is_none() {
                Ok(Value::String(String::new()))
            } else {
                attr.read_raw(MAX_ATTR_BYTES).map(|b| {
                    let v = fixed_strings(&b, *size, *pad);
                    collapse(v.into_iter().map(Value::String).collect(), scalar)
                })
            }
        }
        TypeInfo::VarString { .. } => {
            if shape.is_none() {
                Ok(Value::String(String::new()))
            } else {
                attr.read_vlen_strings(MAX_ATTR_STRINGS)
                    .map(|v| collapse(v.into_iter().map(Value::String).collect(), scalar))
            }
        }
        TypeInfo::Other(what) => Err(format!("attribute of {what}")),
    };
    Ok(RawAttr {
        name,
        value,
        numeric,
    })
}

/// Reads every attribute of an object, in creation order where tracked, else by name.
///
/// The names are listed in one `H5Aiterate2` pass and the attributes opened by name:
/// `H5Aopen_by_idx` builds and sorts a copy of the object's whole attribute table on every
/// call, which made reading n attributes cost n table copies.
pub(crate) fn read_attributes(obj: hid_t) -> Result<Vec<RawAttr>, String> {
    let n = ffi::object::num_attrs(obj).ok_or("object info unreadable")?;
    if n == 0 {
        return Ok(Vec::new());
    }
    // Creation order not tracked: fall back to name order.
    let names = ffi::attr::names(obj, H5_index_t::H5_INDEX_CRT_ORDER)
        .or_else(|| ffi::attr::names(obj, H5_index_t::H5_INDEX_NAME))
        .ok_or("cannot list the attributes")?;
    names
        .iter()
        .map(|name| read_one(&Attribute::open(obj, name, "H5Aopen")?))
        .collect()
}

/// Reads an attribute holding a short fixed or variable-length string.
pub(crate) fn string_attr(obj: hid_t, name: &str) -> Option<String> {
    let c = CString::new(name).ok()?;
    if !ffi::attr::exists(obj, &c) {
        return None;
    }
    let attr = Attribute::open(obj, &c, "H5Aopen").ok()?;
    match read_one(&attr).ok()?.value {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Converts raw attributes to JSON, dropping bookkeeping attributes (and, of a dimension
/// scale, the scale's own) and writing `_FillValue` the way xarray's Zarr v3 backend decodes
/// it; `array_type` is the data type of the dataset they belong to (`None` for a group).
pub(crate) fn convert_attributes(
    ctx: &mut Ctx,
    path: &str,
    attrs: Vec<RawAttr>,
    is_scale: bool,
    array_type: Option<DataType>,
) -> Attributes {
    let mut out = Attributes::new();
    for a in attrs {
        if DROPPED_ATTRS.contains(&a.name.as_str())
            || (is_scale && SCALE_ATTRS.contains(&a.name.as_str()))
        {
            continue;
        }
        let value = match a.value {
            Ok(v) => v,
            Err(reason) => {
                ctx.skip(
                    &format!("{}@{}", or_root(path), a.name),
                    format!("attribute left out: {reason}"),
                );
                continue;
            }
        };
        if a.name == "_FillValue"
            && let Some(dt) = array_type.clone()
        {
            match fill_attr(dt.clone(), &value, a.numeric.as_ref()) {
                Some(v) => {
                    out.insert(a.name, v);
                }
                None => ctx.skip(
                    &format!("{path}@_FillValue"),
                    format!(
                        "attribute left out: value {value} does not fit the array's {}",
                        dt.name()
                    ),
                ),
            }
            continue;
        }
        out.insert(a.name, value);
    }
    out
}

/// The `_FillValue` attribute converted to the array's type, in xarray's encoding.
fn fill_attr(dt: DataType, value: &Value, numeric: Option<&Numeric>) -> Option<Value> {
    let dt_in = dt.clone();
    let first = match value {
        Value::Array(v) => v.first()?,
        v => v,
    };
    let fill = match dt_in {
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
        DataType::Bool => FillValue::from_i64(
            dt.clone(),
            i64::from(first.as_bool().unwrap_or(first.as_i64()? != 0)),
        )
        .ok()?,
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
