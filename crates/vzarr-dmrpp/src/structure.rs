//! DAP4 `Structure` variables of HDF5 compounds: the members' types from their elements, their
//! byte offsets from `dmrpp:chunks`'s `structOffset` (bes's `DmrppCommon`: the offset of each
//! member after the first, then the compound's size; a structure without it is refused, its
//! padding unknown), mapped as the HDF5 mapping maps a compound
//! ([`vzarr_hdf5_map::compound`]); its `fillValue`, one value per member.

use vzarr_core::{DataType, Endian, FillValue};
use vzarr_hdf5_map::compound::{self, Member, MemberType};
use vzarr_hdf5_map::types::TypeInfo;

use crate::types;
use crate::xml::Element;

/// The Zarr type (and byte order) of the `Structure` element `el`, its members stored in
/// `endian` (the `byteOrder` of `chunks`).
pub(crate) fn data_type(
    el: &Element,
    chunks: Option<&Element>,
    endian: Endian,
) -> Result<(DataType, Endian), String> {
    let members: Vec<&Element> = members(el).collect();
    if members.is_empty() || members.len() > compound::MAX_STRUCT_MEMBERS {
        return Err(format!("a Structure of {} members", members.len()));
    }
    let mapped: Vec<(&str, MemberType)> = members
        .iter()
        .map(|m| (m.attr("name").unwrap_or_default(), member_type(m, endian)))
        .collect();
    let stated = chunks.and_then(|c| c.attr("structOffset"));
    let (offsets, size) = match stated {
        Some(list) => {
            let values = list
                .split_whitespace()
                .map(|v| v.parse::<u64>().map_err(|_| format!("structOffset {v:?}")))
                .collect::<Result<Vec<_>, _>>()?;
            if values.len() != members.len() {
                return Err(format!(
                    "structOffset lists {} values for {} members",
                    values.len(),
                    members.len()
                ));
            }
            let mut offsets = vec![0];
            offsets.extend_from_slice(&values[..values.len() - 1]);
            (offsets, values[values.len() - 1])
        }
        // Older sidecars state no offsets: the compound's padding is not known.
        None => {
            return Err(
                "a Structure without structOffset: where its members lie is not said".into(),
            );
        }
    };
    // A complex number where the compound is one, as for an HDF5 input.
    let parts: Vec<(&str, u64, TypeInfo)> = mapped
        .iter()
        .zip(&offsets)
        .map(|((name, t), &at)| {
            let info = match t {
                MemberType::Mapped(DataType::Float32, e) => TypeInfo::Float {
                    size: 4,
                    big_endian: *e == Endian::Big,
                },
                MemberType::Mapped(DataType::Float64, e) => TypeInfo::Float {
                    size: 8,
                    big_endian: *e == Endian::Big,
                },
                _ => TypeInfo::Other(String::new()),
            };
            (*name, at, info)
        })
        .collect();
    if let Some(c) = compound::complex(size, &parts) {
        return Ok(c);
    }
    let members: Vec<Member<'_>> = mapped
        .into_iter()
        .zip(offsets)
        .map(|((name, ty), offset)| Member { name, offset, ty })
        .collect();
    compound::to_struct(size, &members)
}

/// The member variables of the structure `el`, in document order.
fn members(el: &Element) -> impl Iterator<Item = &Element> {
    el.children.iter().filter(|c| types::is_variable(&c.name))
}

/// A member's type: its DAP4 type in `endian`, an array where it has dimensions.
fn member_type(m: &Element, endian: Endian) -> MemberType {
    if m.child("Dim").is_some() {
        return MemberType::Array;
    }
    let t = match m.name.as_str() {
        "String" => match m.child("FixedLengthStringArray") {
            Some(_) => match crate::map::string_type(m) {
                Ok(t) => t,
                Err(e) => return MemberType::Unmapped(e),
            },
            None => return MemberType::VariableLength,
        },
        "Structure" => {
            return MemberType::Unmapped(
                "a structure inside a structure: DMR++ gives no offsets inside it".into(),
            );
        }
        name => match types::data_type(name) {
            Some(t) => t,
            None => return MemberType::Unmapped(format!("DAP4 {name} member")),
        },
    };
    let e = if t.has_endianness() {
        endian
    } else {
        Endian::Little
    };
    MemberType::Mapped(t, e)
}

/// The fill value of the structure `el` of type `t`: `fillValue` holds one value per member
/// in document order (`0` alone: zero), each placed in its field.
pub(crate) fn fill_value(
    el: &Element,
    t: &DataType,
    stated: Option<&str>,
) -> Result<FillValue, String> {
    let DataType::Struct(fields) = t else {
        return Ok(FillValue::zero(t.clone()));
    };
    let tokens: Vec<&str> = stated
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
    let names: Vec<&str> = members(el)
        .map(|c| c.attr("name").unwrap_or_default())
        .collect();
    if tokens.len() != names.len() || tokens.iter().all(|v| *v == "0") {
        return Ok(FillValue::zero(t.clone()));
    }
    let mut bytes = Vec::with_capacity(t.size());
    for f in fields.iter() {
        let token = names
            .iter()
            .position(|n| *n == f.name)
            .filter(|_| !f.is_padding())
            .map(|i| tokens[i]);
        match token {
            Some(v) => bytes.extend(
                types::le_bytes(&f.data_type, v)
                    .map_err(|e| format!("fill value of member {:?}: {e}", f.name))?,
            ),
            None => bytes.extend(std::iter::repeat_n(0, f.data_type.size())),
        }
    }
    FillValue::from_le_bytes(t.clone(), &bytes).map_err(|e| e.to_string())
}
