//! HDF5 datatypes as libhdf5 describes them: the facts of each type asked of the library
//! (`H5Tget_class`, `H5Tget_size`, `H5Tget_order`, ...), classified by the shared mapping
//! (`vzarr_hdf5_map::types`) into what a type is as far as the scanner cares ([`TypeInfo`]).

use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{H5T_class_t, H5T_order_t, H5T_sign_t, H5T_str_t};
use vzarr_core::{DataType, Endian};
use vzarr_hdf5_map::types::{FloatFacts, IntFacts, Order, enum_info, float_info, int_info};
pub(crate) use vzarr_hdf5_map::types::{StrPad, TypeInfo};

use crate::ffi::dtype;

/// The byte order of a type as the mapping names it.
fn order(t: hid_t) -> Order {
    match dtype::order(t) {
        H5T_order_t::H5T_ORDER_LE => Order::Little,
        H5T_order_t::H5T_ORDER_BE => Order::Big,
        H5T_order_t::H5T_ORDER_NONE => Order::None,
        _ => Order::Vax,
    }
}

/// The facts of an integer type.
fn int_facts(t: hid_t) -> IntFacts {
    IntFacts {
        size: dtype::size(t),
        signed: match dtype::sign(t) {
            H5T_sign_t::H5T_SGN_NONE => Some(false),
            H5T_sign_t::H5T_SGN_2 => Some(true),
            _ => None,
        },
        order: order(t),
        precision: dtype::precision(t),
        offset: usize::try_from(dtype::offset(t)).unwrap_or(usize::MAX),
    }
}

/// The members of an enum as (name, stored value); `None` when one is unreadable.
fn enum_members(t: hid_t) -> Option<Vec<(String, Vec<u8>)>> {
    let n = u32::try_from(dtype::nmembers(t)).ok()?;
    (0..n)
        .map(|i| Some((dtype::member_name(t, i)?, dtype::member_value(t, i)?)))
        .collect()
}

/// Classifies an HDF5 datatype.
pub(crate) fn type_info(t: hid_t) -> TypeInfo {
    let size = dtype::size(t);
    match dtype::class(t) {
        H5T_class_t::H5T_INTEGER => int_info(&int_facts(t)),
        H5T_class_t::H5T_FLOAT => float_info(&FloatFacts {
            size,
            order: order(t),
            fields: dtype::fields(t),
            bias: dtype::ebias(t) as u64,
            precision: dtype::precision(t),
            offset: usize::try_from(dtype::offset(t)).unwrap_or(usize::MAX),
        }),
        H5T_class_t::H5T_STRING => {
            if dtype::is_variable_str(t) {
                TypeInfo::VarString
            } else {
                let pad = match dtype::strpad(t) {
                    H5T_str_t::H5T_STR_NULLPAD => StrPad::NullPad,
                    H5T_str_t::H5T_STR_SPACEPAD => StrPad::SpacePad,
                    _ => StrPad::NullTerm,
                };
                TypeInfo::FixedString { size, pad }
            }
        }
        H5T_class_t::H5T_ENUM => {
            let Ok(base) = dtype::super_type(t) else {
                return TypeInfo::Other("enum with unreadable base type".into());
            };
            // An unreadable member makes it no bool: it is read as its base integer.
            let members = enum_members(t).unwrap_or_default();
            enum_info(&int_facts(base.id()), &members)
        }
        H5T_class_t::H5T_COMPOUND => TypeInfo::Other("compound type".into()),
        H5T_class_t::H5T_REFERENCE => TypeInfo::Other("reference type".into()),
        H5T_class_t::H5T_VLEN => TypeInfo::Other("variable-length sequence type".into()),
        H5T_class_t::H5T_ARRAY => TypeInfo::Other("array type".into()),
        H5T_class_t::H5T_OPAQUE => TypeInfo::Other("opaque type".into()),
        H5T_class_t::H5T_BITFIELD => TypeInfo::Other("bitfield type".into()),
        H5T_class_t::H5T_TIME => TypeInfo::Other("time type".into()),
        other => TypeInfo::Other(format!("type class {other:?}")),
    }
}

/// The Zarr data type and byte order of a dataset of type `info`, or why there is none: the
/// shared mapping's, except that variable-length strings are left out (this scanner does not
/// read the global heap; the native one stores them inline).
pub(crate) fn data_type(info: &TypeInfo) -> Result<(DataType, Endian), String> {
    if *info == TypeInfo::VarString {
        return Err(
            "variable-length string data type: chunks hold references into the HDF5 \
                    global heap, not the strings, so they cannot be referenced in place"
                .into(),
        );
    }
    vzarr_hdf5_map::types::data_type(info)
}
