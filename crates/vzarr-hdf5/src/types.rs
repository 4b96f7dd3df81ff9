//! HDF5 datatypes: what a type is as far as the scanner cares ([`TypeInfo`]), and the vzarr
//! [`DataType`] and [`Endian`] it maps to, or why it has no Zarr v3 equivalent that
//! zarr-python 3.4 reads. The classification and the reasons are those of the libhdf5
//! scanner (`vzarr-hdf5-oracle`), decided here from the datatype message itself; beyond it,
//! variable-length strings map to the Zarr v3 `string` type (their values are read from the
//! global heap and stored inline, `crate::strings`).

use vzarr_core::{DataType, Endian};
use vzarr_hdf5_format::{ByteOrder, CompoundMember, Datatype, StringPadding, TypeClass, VlenKind};
use vzarr_hdf5_map::compound::{self, Member, MemberType};
use vzarr_hdf5_map::types::{FloatFacts, IntFacts, Order, enum_info, float_info, int_info};
pub(crate) use vzarr_hdf5_map::types::{IntType, StrPad, TypeInfo, data_type, endian};

/// A byte order as the mapping names it.
fn order(o: ByteOrder) -> Order {
    match o {
        ByteOrder::LittleEndian => Order::Little,
        ByteOrder::BigEndian => Order::Big,
        ByteOrder::Vax => Order::Vax,
    }
}

/// The facts of an integer type, or why it is not one.
fn int_facts(t: &Datatype) -> Result<IntFacts, String> {
    let TypeClass::FixedPoint {
        order: o,
        signed,
        bit_offset,
        precision,
        ..
    } = t.class
    else {
        return Err(format!("{} base type", t.class_name()));
    };
    Ok(IntFacts {
        size: t.size as usize,
        signed: Some(signed),
        order: order(o),
        precision: usize::from(precision),
        offset: usize::from(bit_offset),
    })
}

/// Classifies an HDF5 datatype.
pub(crate) fn type_info(t: &Datatype) -> TypeInfo {
    let size = t.size as usize;
    match &t.class {
        TypeClass::FixedPoint { .. } => match int_facts(t) {
            Ok(f) => int_info(&f),
            Err(e) => TypeInfo::Other(e),
        },
        TypeClass::FloatingPoint {
            order: o,
            bit_offset,
            precision,
            exponent_bias,
            ..
        } => float_info(&FloatFacts {
            size,
            order: order(*o),
            fields: t.float_fields().map(|f| f.map(usize::from)),
            bias: u64::from(*exponent_bias),
            precision: usize::from(*precision),
            offset: usize::from(*bit_offset),
        }),
        TypeClass::String { padding, .. } => {
            let pad = match padding {
                StringPadding::NullPad => StrPad::NullPad,
                StringPadding::SpacePad => StrPad::SpacePad,
                _ => StrPad::NullTerm,
            };
            TypeInfo::FixedString { size, pad }
        }
        TypeClass::VariableLength {
            kind: VlenKind::String { .. },
            ..
        } => TypeInfo::VarString,
        TypeClass::Enum { base, members } => match int_facts(base) {
            Ok(f) => {
                let members: Vec<(&str, &[u8])> = members
                    .iter()
                    .map(|m| (m.name.as_str(), m.value.as_slice()))
                    .collect();
                enum_info(&f, &members)
            }
            Err(e) => TypeInfo::Other(format!("enum on {e}")),
        },
        TypeClass::Compound { .. } => TypeInfo::Other("compound type".into()),
        TypeClass::Reference { .. } => TypeInfo::Other("reference type".into()),
        TypeClass::VariableLength { .. } => TypeInfo::Other("variable-length sequence type".into()),
        TypeClass::Array { .. } => TypeInfo::Other("array type".into()),
        TypeClass::Opaque { .. } => TypeInfo::Other("opaque type".into()),
        TypeClass::Bitfield { .. } => TypeInfo::Other("bitfield type".into()),
        TypeClass::Time { .. } => TypeInfo::Other("time type".into()),
        // The libhdf5 scanner names classes it has no words for by the library's constant.
        TypeClass::Complex { .. } => TypeInfo::Other("type class H5T_COMPLEX".into()),
    }
}

/// Most dimensions of an HDF5 array datatype (the library's `H5S_MAX_RANK`).
const MAX_ARRAY_TYPE_RANK: usize = 32;

/// How a dataset's HDF5 datatype maps to a Zarr array.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mapped {
    /// The element type.
    pub(crate) data_type: DataType,
    /// Byte order of the stored elements.
    pub(crate) endian: Endian,
    /// Trailing dimensions an HDF5 array datatype adds (empty for other types).
    pub(crate) extra_dims: Vec<u64>,
    /// For an enum (not h5py's bool): its members as (name, value), sorted by value.
    pub(crate) enum_members: Option<Vec<(String, i128)>>,
}

impl Mapped {
    /// The Zarr `string` type: what object references are read as (`references`).
    pub(crate) fn string() -> Self {
        Mapped {
            data_type: DataType::String,
            endian: Endian::Little,
            extra_dims: Vec::new(),
            enum_members: None,
        }
    }
}

fn endian_of(order: ByteOrder, what: &str) -> Result<Endian, String> {
    match order {
        ByteOrder::LittleEndian => Ok(Endian::Little),
        ByteOrder::BigEndian => Ok(Endian::Big),
        ByteOrder::Vax => Err(format!("{what} with VAX or mixed byte order")),
    }
}

/// The part type of a complex number: an IEEE single or double float.
fn complex_part(t: &Datatype) -> Option<(DataType, Endian)> {
    let TypeInfo::Float { size, big_endian } = type_info(t) else {
        return None;
    };
    let complex = match size {
        4 => DataType::Complex64,
        8 => DataType::Complex128,
        _ => return None,
    };
    Some((complex, endian(big_endian)))
}

/// A compound as the shared mapping maps it ([`vzarr_hdf5_map::compound`]): a complex number
/// where it is one, else a `struct`.
fn compound(t: &Datatype, members: &[CompoundMember]) -> Result<(DataType, Endian), String> {
    let size = u64::from(t.size);
    let parts: Vec<(&str, u64, TypeInfo)> = members
        .iter()
        .map(|m| (m.name.as_str(), u64::from(m.offset), type_info(&m.datatype)))
        .collect();
    if let Some(c) = compound::complex(size, &parts) {
        return Ok(c);
    }
    let members: Vec<Member<'_>> = members
        .iter()
        .map(|m| Member {
            name: m.name.as_str(),
            offset: u64::from(m.offset),
            ty: match &m.datatype.class {
                TypeClass::Array { .. } => MemberType::Array,
                TypeClass::VariableLength { .. } => MemberType::VariableLength,
                _ => match element_type(&m.datatype) {
                    Ok(mapped) => MemberType::Mapped(mapped.data_type, mapped.endian),
                    Err(e) => MemberType::Unmapped(e),
                },
            },
        })
        .collect();
    compound::to_struct(size, &members)
}

/// The element type of a dataset's datatype that is not an array type.
pub(crate) fn element_type(t: &Datatype) -> Result<Mapped, String> {
    let plain = |(data_type, endian)| Mapped {
        data_type,
        endian,
        extra_dims: Vec::new(),
        enum_members: None,
    };
    match &t.class {
        TypeClass::Compound { members } => compound(t, members).map(plain),
        TypeClass::Complex { base } => complex_part(base)
            .filter(|_| u64::from(t.size) == 2 * u64::from(base.size))
            .map(plain)
            .ok_or_else(|| {
                format!(
                    "unsupported data type (complex number of {}-byte {} parts): Zarr v3 has \
                     complex64 and complex128 only",
                    base.size,
                    base.class_name()
                )
            }),
        TypeClass::Bitfield {
            order,
            bit_offset,
            precision,
            ..
        } => {
            let size = t.size as usize;
            let dt = DataType::integer(size, false)
                .filter(|_| *bit_offset == 0 && usize::from(*precision) == size * 8)
                .ok_or_else(|| {
                    format!(
                        "unsupported data type ({size}-byte bitfield with {precision} bits at \
                         offset {bit_offset}): only 1, 2, 4 and 8-byte bitfields without \
                         padding bits map to an unsigned integer"
                    )
                })?;
            Ok(plain((dt, endian_of(*order, "bitfield")?)))
        }
        TypeClass::Enum { base, members } => {
            let info = type_info(t);
            let mut mapped = data_type(&info).map(plain)?;
            if let TypeInfo::Enum(IntType {
                size,
                signed,
                big_endian,
            }) = info
            {
                let mut out: Vec<(String, i128)> = members
                    .iter()
                    .filter(|m| m.value.len() == size && base.size as usize == size)
                    .map(|m| {
                        let mut b = [0u8; 16];
                        b[..size].copy_from_slice(&m.value);
                        if big_endian {
                            b[..size].reverse();
                        }
                        let v = i128::from_le_bytes(b);
                        let shift = 128 - 8 * size as u32;
                        let v = if signed { (v << shift) >> shift } else { v };
                        (m.name.clone(), v)
                    })
                    .collect();
                out.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
                mapped.enum_members = Some(out);
            }
            Ok(mapped)
        }
        _ => data_type(&type_info(t)).map(plain),
    }
}

/// How a dataset's datatype maps to a Zarr array, or why it does not: an HDF5 array datatype
/// becomes its base type with the array's dimensions as trailing axes.
pub(crate) fn dataset_type(t: &Datatype) -> Result<Mapped, String> {
    let TypeClass::Array { dims, base } = &t.class else {
        return element_type(t);
    };
    if dims.is_empty() || dims.len() > MAX_ARRAY_TYPE_RANK || dims.contains(&0) {
        return Err(format!(
            "array data type with dimensions {dims:?}: HDF5 allows 1 to \
             {MAX_ARRAY_TYPE_RANK} dimensions of length >= 1"
        ));
    }
    if matches!(base.class, TypeClass::Array { .. }) {
        return Err("array data type of an array data type".into());
    }
    let mut mapped = element_type(base).map_err(|e| format!("array data type of {e}"))?;
    let n = dims
        .iter()
        .try_fold(mapped.data_type.size() as u64, |a, &d| {
            a.checked_mul(u64::from(d))
        });
    if n != Some(u64::from(t.size)) {
        return Err(format!(
            "array data type of {} bytes holds {dims:?} elements of {} bytes",
            t.size,
            mapped.data_type.size()
        ));
    }
    mapped.extra_dims = dims.iter().map(|&d| u64::from(d)).collect();
    Ok(mapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(size: u32, precision: u16, order: ByteOrder) -> Datatype {
        Datatype {
            version: 1,
            size,
            class: TypeClass::FixedPoint {
                order,
                signed: true,
                low_pad_one: false,
                high_pad_one: false,
                bit_offset: 0,
                precision,
            },
        }
    }

    #[test]
    fn integers_and_padding_bits() {
        assert_eq!(
            type_info(&int(2, 16, ByteOrder::BigEndian)),
            TypeInfo::Int(IntType {
                size: 2,
                signed: true,
                big_endian: true
            })
        );
        assert_eq!(
            type_info(&int(4, 12, ByteOrder::LittleEndian)),
            TypeInfo::Other("4-byte integer with padding bits".into())
        );
        assert_eq!(
            data_type(&type_info(&int(8, 64, ByteOrder::LittleEndian))).unwrap(),
            (DataType::Int64, Endian::Little)
        );
    }

    #[test]
    fn h5py_bool_and_other_enums() {
        let member = |name: &str, v: u8| vzarr_hdf5_format::EnumMember {
            name: name.into(),
            value: vec![v],
        };
        let e = |members| Datatype {
            version: 1,
            size: 1,
            class: TypeClass::Enum {
                base: Box::new(int(1, 8, ByteOrder::LittleEndian)),
                members,
            },
        };
        assert_eq!(
            type_info(&e(vec![member("FALSE", 0), member("TRUE", 1)])),
            TypeInfo::Bool
        );
        assert_eq!(
            type_info(&e(vec![member("false", 0), member("True", 1)])),
            TypeInfo::Bool
        );
        assert!(matches!(
            type_info(&e(vec![member("no", 0), member("yes", 1)])),
            TypeInfo::Enum(IntType { size: 1, .. })
        ));
    }

    #[test]
    fn refusals_name_the_type() {
        let s = Datatype {
            version: 1,
            size: 4,
            class: TypeClass::String {
                padding: StringPadding::SpacePad,
                charset: vzarr_hdf5_format::CharacterSet::Ascii,
            },
        };
        assert!(
            data_type(&type_info(&s))
                .unwrap_err()
                .contains("space padding")
        );
        let o = Datatype {
            version: 1,
            size: 4,
            class: TypeClass::Opaque { tag: "x".into() },
        };
        assert_eq!(
            data_type(&type_info(&o)).unwrap_err(),
            "unsupported data type (opaque type): Zarr v3 has no equivalent that zarr-python \
             3.4 reads"
        );
    }
}
