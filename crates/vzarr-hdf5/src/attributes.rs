//! Attributes: every attribute of a group or dataset, its stored values handed to the shared
//! mapping (`vzarr_hdf5_map::attrs`, which turns them into JSON, drops bookkeeping and writes
//! `_FillValue` the way xarray's Zarr v3 backend decodes it), in the order the HDF5 library
//! iterates them by creation order. Values and reasons are those of the libhdf5 scanner.

use serde_json::Value;
use vzarr_core::{Attributes, DataType};
use vzarr_hdf5_format::{Attribute, DataspaceKind, File, TypeClass};
use vzarr_hdf5_map::attrs::{
    AttrValues, MAX_ATTR_BYTES, MAX_ATTR_STRINGS, RawAttr, Space, is_bookkeeping, read_attr,
};

use crate::ctx::Ctx;
use crate::references::{self, Convention};
use crate::types::type_info;

/// An attribute's stored values, read from the file on demand.
struct Stored<'a> {
    file: &'a File,
    attr: &'a Attribute,
}

impl AttrValues for Stored<'_> {
    fn bytes(&self) -> Result<Vec<u8>, String> {
        if self.attr.value.len() > MAX_ATTR_BYTES {
            return Err("attribute too large".into());
        }
        Ok(self.attr.value.to_vec())
    }

    fn strings(&self) -> Result<Vec<String>, String> {
        let a = self.attr;
        let n = a.dataspace.num_elements().unwrap_or(u64::MAX);
        if n > MAX_ATTR_STRINGS {
            return Err("attribute too large".into());
        }
        let es = a.datatype.storage_size(self.file.superblock().sizes()) as usize;
        let values = self
            .file
            .read_vlens(&a.value, es, 1)
            .map_err(|_| "H5Aread of variable-length strings failed".to_string())?;
        Ok(values
            .iter()
            .map(|b| {
                let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..end]).into_owned()
            })
            .collect())
    }
}

/// Reads an attribute: its name, its value as JSON (or why it has none) and, for numbers,
/// the stored bytes.
pub(crate) fn read_one(file: &File, attr: &Attribute) -> RawAttr {
    let space = match attr.dataspace.kind {
        DataspaceKind::Null => Space::Null,
        DataspaceKind::Scalar => Space::Scalar,
        DataspaceKind::Simple => Space::Simple(attr.dataspace.dims.clone()),
    };
    read_attr(
        attr.name.clone(),
        type_info(&attr.datatype),
        space,
        &Stored { file, attr },
    )
}

/// The value of the attribute `name` of `attrs` when it is a string (`CLASS`, `NAME`).
/// The values of the integer attribute `name` among `attrs` (one or a list), if there is one.
pub(crate) fn int_attr(file: &File, attrs: &[Attribute], name: &str) -> Option<Vec<u64>> {
    let a = attrs.iter().find(|a| a.name == name)?;
    vzarr_hdf5_map::dims::int_list(read_one(file, a).value.as_ref().ok()?)
}

pub(crate) fn string_attr(file: &File, attrs: &[Attribute], name: &str) -> Option<String> {
    let a = attrs.iter().find(|a| a.name == name)?;
    match read_one(file, a).value {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// The attributes of the object at `path` as Zarr attributes (`array_type`: the data type of
/// the dataset they belong to, `None` for a group); bookkeeping attributes are not read.
pub(crate) fn convert_attributes(
    ctx: &mut Ctx,
    path: &str,
    attrs: &[Attribute],
    is_scale: bool,
    array_type: Option<DataType>,
) -> Attributes {
    let file = ctx.file;
    let kept: Vec<&Attribute> = attrs
        .iter()
        .filter(|a| !is_bookkeeping(&a.name, is_scale))
        .collect();
    // Object references as `ref` objects (see `references`), when the scan reads them.
    let mut refs = 0;
    let mut raw = Vec::with_capacity(kept.len());
    for a in kept {
        let value = if ctx.opts.object_references && is_object_reference(a) {
            let names = ctx.object_names();
            references::attribute_value(file, a, names, path)
        } else {
            None
        };
        raw.push(match value {
            Some(value) => {
                refs += usize::from(value.is_ok());
                RawAttr {
                    name: a.name.clone(),
                    value,
                    numeric: None,
                }
            }
            None => read_one(file, a),
        });
    }
    let mut out = vzarr_hdf5_map::attrs::convert_attributes(
        raw,
        path,
        is_scale,
        array_type.as_ref(),
        &mut ctx.out.skipped,
    );
    if refs > 0 {
        references::register(&mut out, &[Convention::Ref]);
    }
    // netCDF-C reads attributes only of the types it knows: an enum type must be one the file
    // commits (netCDF-4 writes them so); one written with the attribute (h5py's bool) is
    // skipped, so a netCDF reader shows no such attribute. A `_FillValue` has its variable's
    // type, which netCDF-C knows (it finds the type by its equal), so it is always shown.
    let unknown: Vec<serde_json::Value> = attrs
        .iter()
        .filter(|a| {
            !a.datatype_shared
                && a.name != "_FillValue"
                && matches!(a.datatype.class, TypeClass::Enum { .. })
                && out.contains_key(&a.name)
        })
        .map(|a| a.name.clone().into())
        .collect();
    if !unknown.is_empty() {
        vzarr_core::netcdf::set_field(&mut out, "attributes_not_shown", unknown.into());
    }
    out
}

/// Whether `a` holds object references.
fn is_object_reference(a: &Attribute) -> bool {
    matches!(a.datatype.class, TypeClass::Reference { kind } if references::names_an_object(kind))
}
