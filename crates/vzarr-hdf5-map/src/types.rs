//! HDF5 datatypes: what a type is as far as the scanners care ([`TypeInfo`]), decided from
//! the facts a reader finds in the datatype (HDF5 File Format Specification 3.0, IV.A.2.d,
//! "The Datatype Message": fixed-point, floating-point, string, variable-length and
//! enumeration classes), and the vzarr [`DataType`] and [`Endian`] it maps to, or why it has
//! no Zarr v3 equivalent that zarr-python 3.4 reads.

use vzarr_core::{DataType, Endian};

/// What an HDF5 type is, as far as the scanners care.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TypeInfo {
    /// Integer.
    Int(IntType),
    /// Integer wider than 8 bytes (PyTables' 16-byte ones): no Zarr data type; an attribute
    /// of it is read as netCDF-C reads it, as the 8-byte integer of its sign, when every value
    /// fits in one.
    WideInt(IntType),
    /// IEEE float of `size` bytes.
    Float {
        /// Bytes per element.
        size: usize,
        /// Stored big-endian.
        big_endian: bool,
    },
    /// Enum with two members FALSE=0 and TRUE=1 on a 1-byte integer (h5py's bool).
    Bool,
    /// Any other enum, read as its base integer.
    Enum(IntType),
    /// Fixed-length string of `size` bytes.
    FixedString {
        /// Bytes per string.
        size: usize,
        /// How shorter strings are padded.
        pad: StrPad,
    },
    /// Variable-length string.
    VarString,
    /// Everything else, with a name for messages.
    Other(String),
}

/// A plain integer: 1, 2, 4 or 8 bytes, no padding bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntType {
    /// Bytes per element.
    pub size: usize,
    /// Two's complement.
    pub signed: bool,
    /// Stored big-endian.
    pub big_endian: bool,
}

/// Padding of a fixed-length string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrPad {
    /// Null-terminated.
    NullTerm,
    /// Null-padded.
    NullPad,
    /// Space-padded (Fortran).
    SpacePad,
}

/// Byte order of an atomic type as the file states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
    /// None stated (allowed for 1-byte integers).
    None,
    /// VAX or mixed.
    Vax,
}

/// What a reader finds in an integer (fixed-point) datatype.
#[derive(Clone, Copy, Debug)]
pub struct IntFacts {
    /// Bytes per element.
    pub size: usize,
    /// Two's complement (`Some(true)`), unsigned (`Some(false)`), or a sign scheme the
    /// reader does not know (`None`).
    pub signed: Option<bool>,
    /// Byte order.
    pub order: Order,
    /// Bits of precision.
    pub precision: usize,
    /// Bit offset of the value.
    pub offset: usize,
}

/// What a reader finds in a floating-point datatype.
#[derive(Clone, Copy, Debug)]
pub struct FloatFacts {
    /// Bytes per element.
    pub size: usize,
    /// Byte order.
    pub order: Order,
    /// Sign location, exponent location, exponent size, mantissa location and mantissa size,
    /// in bits; `None` when unreadable.
    pub fields: Option<[usize; 5]>,
    /// Exponent bias.
    pub bias: u64,
    /// Bits of precision.
    pub precision: usize,
    /// Bit offset of the value.
    pub offset: usize,
}

/// An integer type without padding bits, or why it is not a plain 1, 2, 4 or 8-byte integer.
pub fn int_info(f: &IntFacts) -> TypeInfo {
    match int_layout(f) {
        Ok(t) if t.size > 8 => TypeInfo::WideInt(t),
        Ok(t) => TypeInfo::Int(t),
        Err(e) => TypeInfo::Other(e),
    }
}

/// A plain integer, or why it is not one.
fn int_layout(f: &IntFacts) -> Result<IntType, String> {
    let signed = f.signed.ok_or("integer with unknown sign")?;
    let big_endian = match f.order {
        Order::Little => false,
        Order::Big => true,
        Order::None if f.size == 1 => false,
        _ => return Err("integer with VAX or mixed byte order".into()),
    };
    if !matches!(f.size, 1 | 2 | 4 | 8 | 16) || f.precision != f.size * 8 || f.offset != 0 {
        return Err(format!("{}-byte integer with padding bits", f.size));
    }
    Ok(IntType {
        size: f.size,
        signed,
        big_endian,
    })
}

/// A float type: IEEE 754 half, single or double, or why not.
pub fn float_info(f: &FloatFacts) -> TypeInfo {
    let big_endian = match f.order {
        Order::Little => false,
        Order::Big => true,
        _ => return TypeInfo::Other("float with VAX or mixed byte order".into()),
    };
    let (want, want_bias): ([usize; 5], u64) = match f.size {
        2 => ([15, 10, 5, 0, 10], 15),
        4 => ([31, 23, 8, 0, 23], 127),
        8 => ([63, 52, 11, 0, 52], 1023),
        _ => return TypeInfo::Other(format!("non-IEEE {}-bit float", f.size * 8)),
    };
    if f.fields == Some(want) && f.bias == want_bias && f.precision == f.size * 8 && f.offset == 0 {
        TypeInfo::Float {
            size: f.size,
            big_endian,
        }
    } else {
        TypeInfo::Other(format!("non-IEEE {}-bit float", f.size * 8))
    }
}

/// An enum type on the integer `base` with the (name, stored value) `members`: h5py's bool
/// when it has exactly the members FALSE=0 and TRUE=1 (any case) on a 1-byte integer, else
/// an enum read as its base integer.
pub fn enum_info<N: AsRef<str>, V: AsRef<[u8]>>(base: &IntFacts, members: &[(N, V)]) -> TypeInfo {
    match int_layout(base) {
        Ok(t) if t.size > 8 => TypeInfo::Other(format!("enum on {}-byte integer", t.size)),
        Ok(t) if t.size == 1 && is_bool_enum(members) => TypeInfo::Bool,
        Ok(t) => TypeInfo::Enum(t),
        Err(e) => TypeInfo::Other(format!("enum on {e}")),
    }
}

/// Whether an enum has exactly the members FALSE=0 and TRUE=1 (h5py's bool).
fn is_bool_enum<N: AsRef<str>, V: AsRef<[u8]>>(members: &[(N, V)]) -> bool {
    if members.len() != 2 {
        return false;
    }
    let mut seen = [false; 2];
    for (name, value) in members {
        match (name.as_ref().to_ascii_uppercase().as_str(), value.as_ref()) {
            ("FALSE", [0]) => seen[0] = true,
            ("TRUE", [1]) => seen[1] = true,
            _ => return false,
        }
    }
    seen == [true, true]
}

/// The byte order of a type that is big-endian or not.
pub fn endian(big_endian: bool) -> Endian {
    if big_endian {
        Endian::Big
    } else {
        Endian::Little
    }
}

/// The Zarr data type and byte order of a dataset of type `info`, or why there is none. A
/// variable-length string maps to `string` (its values are not in the chunks; a scanner that
/// cannot read them from the global heap leaves such datasets out itself).
pub fn data_type(info: &TypeInfo) -> Result<(DataType, Endian), String> {
    Ok(match *info {
        TypeInfo::Int(t) | TypeInfo::Enum(t) => {
            let dt = DataType::integer(t.size, t.signed)
                .ok_or_else(|| format!("{}-byte integer", t.size))?;
            (dt, endian(t.big_endian))
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
        TypeInfo::VarString => (DataType::String, Endian::Little),
        TypeInfo::WideInt(t) => {
            return Err(format!(
                "unsupported data type ({}-byte integer): Zarr v3 has no integer wider than \
                 8 bytes",
                t.size
            ));
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

    fn int(size: usize, precision: usize, order: Order) -> IntFacts {
        IntFacts {
            size,
            signed: Some(true),
            order,
            precision,
            offset: 0,
        }
    }

    #[test]
    fn integers_and_padding_bits() {
        assert_eq!(
            int_info(&int(2, 16, Order::Big)),
            TypeInfo::Int(IntType {
                size: 2,
                signed: true,
                big_endian: true
            })
        );
        assert_eq!(
            int_info(&int(4, 12, Order::Little)),
            TypeInfo::Other("4-byte integer with padding bits".into())
        );
        assert_eq!(
            int_info(&int(4, 32, Order::Vax)),
            TypeInfo::Other("integer with VAX or mixed byte order".into())
        );
        assert!(matches!(
            int_info(&int(1, 8, Order::None)),
            TypeInfo::Int(IntType { size: 1, .. })
        ));
        let unknown = IntFacts {
            signed: None,
            ..int(4, 32, Order::Little)
        };
        assert_eq!(
            int_info(&unknown),
            TypeInfo::Other("integer with unknown sign".into())
        );
        assert_eq!(
            data_type(&int_info(&int(8, 64, Order::Little))).unwrap(),
            (DataType::Int64, Endian::Little)
        );
    }

    #[test]
    fn ieee_floats_only() {
        let f = |size, fields, bias| FloatFacts {
            size,
            order: Order::Little,
            fields: Some(fields),
            bias,
            precision: size * 8,
            offset: 0,
        };
        assert_eq!(
            float_info(&f(4, [31, 23, 8, 0, 23], 127)),
            TypeInfo::Float {
                size: 4,
                big_endian: false
            }
        );
        assert_eq!(
            float_info(&f(2, [15, 10, 5, 0, 10], 15)),
            TypeInfo::Float {
                size: 2,
                big_endian: false
            }
        );
        assert_eq!(
            float_info(&f(4, [31, 24, 7, 0, 24], 63)),
            TypeInfo::Other("non-IEEE 32-bit float".into())
        );
        assert_eq!(
            float_info(&f(3, [0; 5], u64::MAX)),
            TypeInfo::Other("non-IEEE 24-bit float".into())
        );
    }

    #[test]
    fn h5py_bool_and_other_enums() {
        let base = int(1, 8, Order::Little);
        assert_eq!(
            enum_info(&base, &[("FALSE", [0]), ("TRUE", [1])]),
            TypeInfo::Bool
        );
        assert_eq!(
            enum_info(&base, &[("false", [0]), ("True", [1])]),
            TypeInfo::Bool
        );
        assert!(matches!(
            enum_info(&base, &[("no", [0]), ("yes", [1])]),
            TypeInfo::Enum(IntType { size: 1, .. })
        ));
        assert_eq!(
            enum_info(&int(4, 12, Order::Little), &[("a", [0])]),
            TypeInfo::Other("enum on 4-byte integer with padding bits".into())
        );
    }

    #[test]
    fn refusals_name_the_type() {
        let s = TypeInfo::FixedString {
            size: 4,
            pad: StrPad::SpacePad,
        };
        assert!(data_type(&s).unwrap_err().contains("space padding"));
        assert_eq!(
            data_type(&TypeInfo::Other("opaque type".into())).unwrap_err(),
            "unsupported data type (opaque type): Zarr v3 has no equivalent that zarr-python \
             3.4 reads"
        );
        assert_eq!(
            data_type(&TypeInfo::VarString).unwrap(),
            (DataType::String, Endian::Little)
        );
    }
}
