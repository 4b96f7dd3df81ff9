//! HDF5 datatypes: what a type is as far as the scanner cares ([`TypeInfo`]), and the vzarr
//! [`DataType`] and [`Endian`] it maps to, or why it has no Zarr v3 equivalent that
//! zarr-python 3.4 reads. The classification and the reasons are those of the libhdf5
//! scanner (`vzarr-hdf5-oracle`), decided here from the datatype message itself.

use vzarr_core::{DataType, Endian};
use vzarr_hdf5_format::{ByteOrder, Datatype, StringPadding, TypeClass, VlenKind};

/// What an HDF5 type is, as far as the scanner cares.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TypeInfo {
    /// Integer of `size` bytes.
    Int {
        size: usize,
        signed: bool,
        big_endian: bool,
    },
    /// IEEE float of `size` bytes.
    Float { size: usize, big_endian: bool },
    /// Enum with two members FALSE=0 and TRUE=1 on a 1-byte integer (h5py's bool).
    Bool,
    /// Any other enum, read as its base integer.
    Enum {
        size: usize,
        signed: bool,
        big_endian: bool,
    },
    /// Fixed-length string of `size` bytes.
    FixedString { size: usize, pad: StrPad },
    /// Variable-length string.
    VarString,
    /// Everything else, with a name for messages.
    Other(String),
}

/// Padding of a fixed-length string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StrPad {
    NullTerm,
    NullPad,
    SpacePad,
}

/// An integer type without padding bits.
struct IntLayout {
    size: usize,
    signed: bool,
    big_endian: bool,
}

/// The layout of an integer type, or why it is not a plain 1, 2, 4 or 8-byte integer.
fn int_layout(t: &Datatype) -> Result<IntLayout, String> {
    let size = t.size as usize;
    let TypeClass::FixedPoint {
        order,
        signed,
        bit_offset,
        precision,
        ..
    } = t.class
    else {
        return Err(format!("{} base type", t.class_name()));
    };
    let big_endian = match order {
        ByteOrder::LittleEndian => false,
        ByteOrder::BigEndian => true,
        ByteOrder::Vax => return Err("integer with VAX or mixed byte order".into()),
    };
    if !matches!(size, 1 | 2 | 4 | 8) || usize::from(precision) != size * 8 || bit_offset != 0 {
        return Err(format!("{size}-byte integer with padding bits"));
    }
    Ok(IntLayout {
        size,
        signed,
        big_endian,
    })
}

/// Whether a float type of `size` bytes has the IEEE 754 half, single or double layout.
fn ieee_layout(t: &Datatype, size: usize) -> bool {
    let TypeClass::FloatingPoint {
        sign_location,
        bit_offset,
        precision,
        exponent_location,
        exponent_size,
        mantissa_location,
        mantissa_size,
        exponent_bias,
        ..
    } = t.class
    else {
        return false;
    };
    let fields = [
        sign_location,
        exponent_location,
        exponent_size,
        mantissa_location,
        mantissa_size,
    ];
    let (want, want_bias): ([u8; 5], u32) = match size {
        2 => ([15, 10, 5, 0, 10], 15),
        4 => ([31, 23, 8, 0, 23], 127),
        8 => ([63, 52, 11, 0, 52], 1023),
        _ => return false,
    };
    fields == want
        && exponent_bias == want_bias
        && usize::from(precision) == size * 8
        && bit_offset == 0
}

/// Whether an enum has exactly the members FALSE=0 and TRUE=1 (h5py's bool).
fn is_bool_enum(members: &[vzarr_hdf5_format::EnumMember]) -> bool {
    if members.len() != 2 {
        return false;
    }
    let mut seen = [false; 2];
    for m in members {
        match (m.name.to_ascii_uppercase().as_str(), m.value.as_slice()) {
            ("FALSE", [0]) => seen[0] = true,
            ("TRUE", [1]) => seen[1] = true,
            _ => return false,
        }
    }
    seen == [true, true]
}

/// Classifies an HDF5 datatype.
pub(crate) fn type_info(t: &Datatype) -> TypeInfo {
    let size = t.size as usize;
    match &t.class {
        TypeClass::FixedPoint { .. } => match int_layout(t) {
            Ok(l) => TypeInfo::Int {
                size: l.size,
                signed: l.signed,
                big_endian: l.big_endian,
            },
            Err(e) => TypeInfo::Other(e),
        },
        TypeClass::FloatingPoint { order, .. } => {
            let big_endian = match order {
                ByteOrder::LittleEndian => false,
                ByteOrder::BigEndian => true,
                ByteOrder::Vax => {
                    return TypeInfo::Other("float with VAX or mixed byte order".into());
                }
            };
            if ieee_layout(t, size) {
                TypeInfo::Float { size, big_endian }
            } else {
                TypeInfo::Other(format!("non-IEEE {}-bit float", size * 8))
            }
        }
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
        TypeClass::Enum { base, members } => {
            let l = match int_layout(base) {
                Ok(l) => l,
                Err(e) => return TypeInfo::Other(format!("enum on {e}")),
            };
            if l.size == 1 && is_bool_enum(members) {
                TypeInfo::Bool
            } else {
                TypeInfo::Enum {
                    size: l.size,
                    signed: l.signed,
                    big_endian: l.big_endian,
                }
            }
        }
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

/// The Zarr data type and byte order of a dataset of type `info`, or why there is none.
pub(crate) fn data_type(info: &TypeInfo) -> Result<(DataType, Endian), String> {
    let endian = |big: bool| if big { Endian::Big } else { Endian::Little };
    Ok(match *info {
        TypeInfo::Int {
            size,
            signed,
            big_endian,
        }
        | TypeInfo::Enum {
            size,
            signed,
            big_endian,
        } => {
            let dt =
                DataType::integer(size, signed).ok_or_else(|| format!("{size}-byte integer"))?;
            (dt, endian(big_endian))
        }
        TypeInfo::Float { size, big_endian } => {
            let dt = DataType::float(size).ok_or_else(|| format!("{size}-byte float"))?;
            (dt, endian(big_endian))
        }
        TypeInfo::Bool => (DataType::Bool, Endian::Little),
        TypeInfo::FixedString { size, pad } => {
            if size == 0 {
                return Err("zero-length string type".into());
            }
            if pad == StrPad::SpacePad {
                return Err(
                    "fixed-length string with space padding: HDF5 strips the padding \
                            spaces on read, but the stored bytes keep them"
                        .into(),
                );
            }
            (DataType::FixedBytes(size), Endian::Little)
        }
        TypeInfo::VarString => {
            return Err(
                "variable-length string data type: chunks hold references into the HDF5 \
                        global heap, not the strings, so they cannot be referenced in place"
                    .into(),
            );
        }
        TypeInfo::Other(ref what) => {
            return Err(format!(
                "unsupported data type ({what}): Zarr v3 has no equivalent that \
                                zarr-python 3.4 reads"
            ));
        }
    })
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
            TypeInfo::Int {
                size: 2,
                signed: true,
                big_endian: true
            }
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
            TypeInfo::Enum { size: 1, .. }
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
