//! Attributes: every attribute of a group or dataset read through the HDF5 library, its
//! stored values handed to the shared mapping (`vzarr_hdf5_map::attrs`, which turns them into
//! JSON, drops bookkeeping and writes `_FillValue` the way xarray's Zarr v3 backend decodes
//! it). An attribute that has no JSON form is left out and listed as skipped.

use std::ffi::CString;

use hdf5_sys::h5::H5_index_t;
use hdf5_sys::h5i::hid_t;
use serde_json::Value;
use vzarr_hdf5_map::attrs::{
    AttrValues, MAX_ATTR_BYTES, MAX_ATTR_STRINGS, RawAttr, Space, read_attr,
};

use crate::ffi;
use crate::ffi::attr::Attribute;
use crate::types::type_info;

impl AttrValues for Attribute {
    fn bytes(&self) -> Result<Vec<u8>, String> {
        self.read_raw(MAX_ATTR_BYTES)
    }

    fn strings(&self) -> Result<Vec<String>, String> {
        self.read_vlen_strings(MAX_ATTR_STRINGS as usize)
    }
}

/// Reads an open attribute: its name, its value as JSON (or why it has none) and, for
/// numbers, the stored bytes.
fn read_one(attr: &Attribute) -> Result<RawAttr, String> {
    let name = attr.name().ok_or("attribute name unreadable")?;
    let space = match ffi::space::shape(attr.space())? {
        None => Space::Null,
        Some(dims) if dims.is_empty() => Space::Scalar,
        Some(dims) => Space::Simple(dims),
    };
    Ok(read_attr(name, type_info(attr.file_type()), space, attr))
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
/// The values of the integer attribute `name` of `obj` (one or a list), if there is one.
pub(crate) fn int_attr(obj: hid_t, name: &str) -> Option<Vec<u64>> {
    let c = CString::new(name).ok()?;
    if !ffi::attr::exists(obj, &c) {
        return None;
    }
    let attr = Attribute::open(obj, &c, "H5Aopen").ok()?;
    vzarr_hdf5_map::dims::int_list(read_one(&attr).ok()?.value.as_ref().ok()?)
}

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
