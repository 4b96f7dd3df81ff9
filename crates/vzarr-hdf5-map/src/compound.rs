//! HDF5 compounds (HDF5 File Format Specification, "Datatype Message", class 6) as Zarr data
//! types: a complex number where a compound is one, else zarr-python 3.4's `struct` with the
//! compound's padding as fields of its own. Shared by the scanners that describe compounds
//! (vzarr-hdf5 from the datatype message, vzarr-dmrpp from a DAP4 `Structure` and its
//! `structOffset`), so a compound maps one way whatever describes it.

use vzarr_core::{DataType, Endian, StructField};

use crate::types::TypeInfo;

/// Most members of a compound mapped to a `struct` (vzarr-core's bound on struct fields).
pub const MAX_STRUCT_MEMBERS: usize = 4096;

/// Member names of a compound that hold the real and imaginary parts of a complex number:
/// h5py's (`r`, `i`, its default `complex_names`, also PyTables'), and the spellings other
/// writers use (`re`/`im`, `real`/`imag`, `real`/`imaginary`), compared case-insensitively.
pub const COMPLEX_NAMES: [(&str, &str); 4] = [
    ("r", "i"),
    ("re", "im"),
    ("real", "imag"),
    ("real", "imaginary"),
];

/// What a member's type is, as far as a `struct` field goes.
#[derive(Clone, Debug, PartialEq)]
pub enum MemberType {
    /// A type that maps, with its byte order.
    Mapped(DataType, Endian),
    /// A type that does not map, and why.
    Unmapped(String),
    /// An array type (zarr-python's `struct` has no subarray fields).
    Array,
    /// A variable-length type (its bytes are references into the HDF5 global heap).
    VariableLength,
}

/// One member of a compound.
#[derive(Clone, Debug, PartialEq)]
pub struct Member<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its byte offset in the compound.
    pub offset: u64,
    /// Its type.
    pub ty: MemberType,
}

/// The complex type of a compound of `size` bytes that is a complex number: two members
/// named as in [`COMPLEX_NAMES`], each an IEEE float of one type (`parts`: their classified
/// types), real part at offset 0 and imaginary part right after it, nothing else.
pub fn complex(size: u64, members: &[(&str, u64, TypeInfo)]) -> Option<(DataType, Endian)> {
    let [(re, re_at, re_ty), (im, im_at, im_ty)] = members else {
        return None;
    };
    let (a, b) = (re.to_ascii_lowercase(), im.to_ascii_lowercase());
    if !COMPLEX_NAMES.iter().any(|&(x, y)| a == x && b == y) || re_ty != im_ty {
        return None;
    }
    let TypeInfo::Float {
        size: half,
        big_endian,
    } = *re_ty
    else {
        return None;
    };
    let complex = match half {
        4 => DataType::Complex64,
        8 => DataType::Complex128,
        _ => return None,
    };
    let half = half as u64;
    (*re_at == 0 && *im_at == half && size == 2 * half)
        .then_some((complex, crate::types::endian(big_endian)))
}

/// A compound of `size` bytes as zarr-python 3.4's `struct`: its members in offset order, each
/// of a type that maps (nested compounds included) other than an array or variable-length
/// type, all multi-byte members in one byte order (the `bytes` codec has one `endian`). Bytes
/// between members and after the last (alignment padding: h5py's and PyTables' aligned
/// tables) become fields of their own ([`StructField::padding`]), so the fields are packed as
/// the struct packs them.
pub fn to_struct(size: u64, members: &[Member<'_>]) -> Result<(DataType, Endian), String> {
    let why = |reason: String| format!("unsupported data type (compound type): {reason}");
    if members.is_empty() || members.len() > MAX_STRUCT_MEMBERS {
        return Err(why(format!(
            "{} members (a struct has 1 to {MAX_STRUCT_MEMBERS} fields)",
            members.len()
        )));
    }
    let mut sorted: Vec<&Member<'_>> = members.iter().collect();
    sorted.sort_by_key(|m| m.offset);
    let mut fields = Vec::with_capacity(sorted.len());
    let mut at: u64 = 0;
    let mut order: Option<Endian> = None;
    for m in sorted {
        if m.offset < at {
            return Err(why(format!(
                "member {:?} at byte {} overlaps the member before it, which ends at byte {at}",
                m.name, m.offset
            )));
        }
        if m.offset > at {
            fields.push(padding(at, m.offset - at)?);
            at = m.offset;
        }
        let (data_type, endian) = match &m.ty {
            MemberType::Array => {
                return Err(why(format!(
                    "member {:?} is of an array data type: zarr-python 3.4's struct has no \
                     subarray fields",
                    m.name
                )));
            }
            MemberType::VariableLength => {
                return Err(why(format!(
                    "member {:?} is of a variable-length type: its bytes are references into \
                     the HDF5 global heap",
                    m.name
                )));
            }
            MemberType::Unmapped(e) => return Err(why(format!("member {:?}: {e}", m.name))),
            MemberType::Mapped(t, e) => (t.clone(), *e),
        };
        if data_type.has_endianness() {
            match order {
                Some(o) if o != endian => {
                    return Err(why(format!(
                        "members of both byte orders (member {:?} is {}-endian): the bytes \
                         codec has one endian",
                        m.name,
                        endian.as_str()
                    )));
                }
                _ => order = Some(endian),
            }
        }
        at += data_type.size() as u64;
        fields.push(StructField {
            name: m.name.to_string(),
            data_type,
        });
    }
    match at.cmp(&size) {
        std::cmp::Ordering::Less => fields.push(padding(at, size - at)?),
        std::cmp::Ordering::Equal => {}
        std::cmp::Ordering::Greater => {
            return Err(why(format!(
                "members end at byte {at}, past the {size}-byte compound"
            )));
        }
    }
    if fields.len() > MAX_STRUCT_MEMBERS {
        return Err(why(format!(
            "{} fields with its padding (a struct has at most {MAX_STRUCT_MEMBERS})",
            fields.len()
        )));
    }
    if let Some(f) = fields
        .iter()
        .find(|f| f.is_padding() && members.iter().any(|m| m.name == f.name))
    {
        return Err(why(format!(
            "a member is named {:?}, as the field for its padding would be",
            f.name
        )));
    }
    Ok((
        DataType::Struct(fields.into()),
        order.unwrap_or(Endian::Little),
    ))
}

/// The field for `len` padding bytes from byte `at` of a compound.
fn padding(at: u64, len: u64) -> Result<StructField, String> {
    let len = usize::try_from(len).map_err(|_| format!("{len} bytes of padding"))?;
    Ok(StructField::padding(at, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(name: &str, offset: u64, t: DataType) -> Member<'_> {
        Member {
            name,
            offset,
            ty: MemberType::Mapped(t, Endian::Little),
        }
    }

    #[test]
    fn padding_between_and_after_members_becomes_fields() {
        let (t, _) = to_struct(
            24,
            &[
                int("a", 0, DataType::Float64),
                int("b", 8, DataType::Int16),
                int("c", 12, DataType::Int32),
            ],
        )
        .unwrap();
        let DataType::Struct(fields) = t else {
            panic!("{t:?}")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["a", "b", "vzarr:padding@10", "c", "vzarr:padding@16"]
        );
    }

    #[test]
    fn overlaps_arrays_and_mixed_orders_are_refused() {
        let overlap = to_struct(
            8,
            &[int("a", 0, DataType::Int64), int("b", 4, DataType::Int32)],
        );
        assert!(overlap.unwrap_err().contains("overlaps"));
        let array = [Member {
            name: "a",
            offset: 0,
            ty: MemberType::Array,
        }];
        assert!(to_struct(8, &array).unwrap_err().contains("subarray"));
        let mixed = [
            int("a", 0, DataType::Int32),
            Member {
                name: "b",
                offset: 4,
                ty: MemberType::Mapped(DataType::Int32, Endian::Big),
            },
        ];
        assert!(
            to_struct(8, &mixed)
                .unwrap_err()
                .contains("both byte orders")
        );
    }

    #[test]
    fn complex_numbers() {
        let f = |big_endian| TypeInfo::Float {
            size: 4,
            big_endian,
        };
        assert_eq!(
            complex(8, &[("r", 0, f(false)), ("i", 4, f(false))]),
            Some((DataType::Complex64, Endian::Little))
        );
        assert_eq!(complex(8, &[("x", 0, f(false)), ("i", 4, f(false))]), None);
        assert_eq!(complex(8, &[("r", 0, f(false)), ("i", 4, f(true))]), None);
        assert_eq!(complex(12, &[("r", 0, f(false)), ("i", 4, f(false))]), None);
    }
}
