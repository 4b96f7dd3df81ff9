//! Datatype message, versions 1 to 5, every class (HDF5 File Format Specification 3.0,
//! section IV.A.2.d "Datatype Message"; class 11, complex numbers, is new in HDF5 2.0 and is
//! read as the library does: homogeneous, rectangular form, with a base type).

use crate::decode::{Cursor, Sizes, limit_enc_size};
use crate::error::Result;

/// Deepest nesting of datatypes (compound in array in vlen ...) accepted.
const MAX_DEPTH: u32 = 32;
/// Largest number of array dimensions (`H5S_MAX_RANK`).
const MAX_ARRAY_RANK: usize = 32;

/// Byte order of an atomic type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first.
    LittleEndian,
    /// Most significant byte first.
    BigEndian,
    /// VAX order (floating point only).
    Vax,
}

/// Padding of fixed-length strings (and of variable-length strings, as recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringPadding {
    /// NUL-terminated.
    NullTerminate,
    /// Padded with NULs.
    NullPad,
    /// Padded with spaces.
    SpacePad,
    /// A value this reader does not know.
    Other(u8),
}

/// Character set of strings and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharacterSet {
    /// US-ASCII.
    Ascii,
    /// UTF-8.
    Utf8,
    /// A value this reader does not know.
    Other(u8),
}

/// Mantissa normalization of a floating-point type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MantissaNormalization {
    /// No normalization.
    None,
    /// The most significant bit of the mantissa is always set.
    MsbSet,
    /// The most significant bit is implied (IEEE).
    Implied,
}

/// Kind of a reference type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferenceKind {
    /// `H5R_OBJECT1`: the object's address.
    Object1,
    /// `H5R_DATASET_REGION1`: a global heap id of an address and a selection.
    DatasetRegion1,
    /// `H5R_OBJECT2` (HDF5 1.12+).
    Object2,
    /// `H5R_DATASET_REGION2` (HDF5 1.12+).
    DatasetRegion2,
    /// `H5R_ATTR` (HDF5 1.12+).
    Attribute,
}

/// A member of a compound type.
#[derive(Clone, Debug, PartialEq)]
pub struct CompoundMember {
    /// Member name.
    pub name: String,
    /// Byte offset in the compound.
    pub offset: u32,
    /// Member type (version 1 array members are given as an [`TypeClass::Array`]).
    pub datatype: Datatype,
}

/// A member of an enumeration type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumMember {
    /// Member name.
    pub name: String,
    /// Raw value bytes, as stored (base type's size and byte order).
    pub value: Vec<u8>,
}

/// What a variable-length type holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlenKind {
    /// A sequence of elements of the base type.
    Sequence,
    /// A string.
    String {
        /// Padding as recorded.
        padding: StringPadding,
        /// Character set.
        charset: CharacterSet,
    },
}

/// A datatype: its size in bytes and its class with the class properties.
#[derive(Clone, Debug, PartialEq)]
pub struct Datatype {
    /// Message version (1 to 5).
    pub version: u8,
    /// Size in bytes as stored.
    pub size: u32,
    /// Class and properties.
    pub class: TypeClass,
}

/// The class of a datatype with its properties.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeClass {
    /// Integer.
    FixedPoint {
        /// Byte order.
        order: ByteOrder,
        /// Two's complement signed.
        signed: bool,
        /// Low padding bits are ones.
        low_pad_one: bool,
        /// High padding bits are ones.
        high_pad_one: bool,
        /// First significant bit.
        bit_offset: u16,
        /// Number of significant bits.
        precision: u16,
    },
    /// Floating point.
    FloatingPoint {
        /// Byte order (may be VAX).
        order: ByteOrder,
        /// Low padding bits are ones.
        low_pad_one: bool,
        /// High padding bits are ones.
        high_pad_one: bool,
        /// Internal padding bits are ones.
        internal_pad_one: bool,
        /// Mantissa normalization.
        normalization: MantissaNormalization,
        /// Bit position of the sign bit.
        sign_location: u8,
        /// First significant bit.
        bit_offset: u16,
        /// Number of significant bits.
        precision: u16,
        /// Bit position of the exponent.
        exponent_location: u8,
        /// Bits of the exponent.
        exponent_size: u8,
        /// Bit position of the mantissa.
        mantissa_location: u8,
        /// Bits of the mantissa.
        mantissa_size: u8,
        /// Exponent bias.
        exponent_bias: u32,
    },
    /// Time (rarely used).
    Time {
        /// Byte order.
        order: ByteOrder,
        /// Bits of precision.
        precision: u16,
    },
    /// Fixed-length string.
    String {
        /// Padding.
        padding: StringPadding,
        /// Character set.
        charset: CharacterSet,
    },
    /// Bit field.
    Bitfield {
        /// Byte order.
        order: ByteOrder,
        /// Low padding bits are ones.
        low_pad_one: bool,
        /// High padding bits are ones.
        high_pad_one: bool,
        /// First significant bit.
        bit_offset: u16,
        /// Number of significant bits.
        precision: u16,
    },
    /// Opaque bytes with an ASCII tag.
    Opaque {
        /// The tag (trailing NULs removed).
        tag: String,
    },
    /// Compound (struct).
    Compound {
        /// Members in stored order.
        members: Vec<CompoundMember>,
    },
    /// Reference.
    Reference {
        /// What kind of reference.
        kind: ReferenceKind,
    },
    /// Enumeration.
    Enum {
        /// Base integer type.
        base: Box<Datatype>,
        /// Members in stored order.
        members: Vec<EnumMember>,
    },
    /// Variable-length sequence or string (stored as a length and a global heap id).
    VariableLength {
        /// Sequence or string.
        kind: VlenKind,
        /// Element type (for strings: a 1-byte character type).
        base: Box<Datatype>,
    },
    /// Fixed-size array of a base type.
    Array {
        /// Array dimensions.
        dims: Vec<u32>,
        /// Element type.
        base: Box<Datatype>,
    },
    /// Complex number (HDF5 2.0): real and imaginary parts of the base type.
    Complex {
        /// Type of each part.
        base: Box<Datatype>,
    },
}

impl Datatype {
    /// Of a floating-point type, the bit fields that say its layout: sign location, exponent
    /// location, exponent size, mantissa location and mantissa size (`None` for other
    /// classes).
    pub fn float_fields(&self) -> Option<[u8; 5]> {
        match self.class {
            TypeClass::FloatingPoint {
                sign_location,
                exponent_location,
                exponent_size,
                mantissa_location,
                mantissa_size,
                ..
            } => Some([
                sign_location,
                exponent_location,
                exponent_size,
                mantissa_location,
                mantissa_size,
            ]),
            _ => None,
        }
    }

    /// Name of the datatype class ("integer", "float", "string", ...).
    pub fn class_name(&self) -> &'static str {
        match self.class {
            TypeClass::FixedPoint { .. } => "integer",
            TypeClass::FloatingPoint { .. } => "float",
            TypeClass::Time { .. } => "time",
            TypeClass::String { .. } => "string",
            TypeClass::Bitfield { .. } => "bitfield",
            TypeClass::Opaque { .. } => "opaque",
            TypeClass::Compound { .. } => "compound",
            TypeClass::Reference { .. } => "reference",
            TypeClass::Enum { .. } => "enum",
            TypeClass::VariableLength { .. } => "vlen",
            TypeClass::Array { .. } => "array",
            TypeClass::Complex { .. } => "complex",
        }
    }

    /// Bytes one element occupies in the file's raw data (dataset chunks, attribute values).
    ///
    /// Variable-length elements and references have a fixed on-disk size that depends on the
    /// size of addresses, not on the size stored in the message.
    pub fn storage_size(&self, sizes: Sizes) -> u64 {
        let addr = u64::from(sizes.offset);
        match &self.class {
            TypeClass::VariableLength { .. } => 4 + addr + 4,
            TypeClass::Reference { kind } => match kind {
                ReferenceKind::Object1 => addr,
                ReferenceKind::DatasetRegion1 => addr + 4,
                // max(4 + 2 + blob id (address + 4), 2 + 1 + token (address))
                _ => (4 + 2 + addr + 4).max(3 + addr),
            },
            _ => u64::from(self.size),
        }
    }
}

pub(crate) fn decode(c: &mut Cursor) -> Result<Datatype> {
    decode_depth(c, 0)
}

fn order_bit(flags: u32) -> ByteOrder {
    if flags & 1 != 0 {
        ByteOrder::BigEndian
    } else {
        ByteOrder::LittleEndian
    }
}

fn padding(v: u32) -> StringPadding {
    match v {
        0 => StringPadding::NullTerminate,
        1 => StringPadding::NullPad,
        2 => StringPadding::SpacePad,
        v => StringPadding::Other(v as u8),
    }
}

fn charset(v: u32) -> CharacterSet {
    match v {
        0 => CharacterSet::Ascii,
        1 => CharacterSet::Utf8,
        v => CharacterSet::Other(v as u8),
    }
}

/// A name: NUL-terminated, padded to a multiple of 8 bytes before version 3.
fn member_name(c: &mut Cursor, version: u8) -> Result<String> {
    let start = c.pos();
    let raw = c.cstr()?;
    if version < 3 {
        let used = c.pos() - start;
        let padded = used.div_ceil(8) * 8;
        c.skip(padded - used)?;
    }
    Ok(String::from_utf8_lossy(raw).into_owned())
}

fn decode_depth(c: &mut Cursor, depth: u32) -> Result<Datatype> {
    if depth > MAX_DEPTH {
        return Err(crate::error::Error::limit(
            c.what,
            c.addr,
            format!("datatype nested deeper than {MAX_DEPTH}"),
        ));
    }
    let head = c.u32()?;
    let class_id = head & 0x0f;
    let version = ((head >> 4) & 0x0f) as u8;
    let flags = head >> 8;
    if !(1..=5).contains(&version) {
        return Err(c.invalid(format!("datatype version {version}")));
    }
    let size = c.u32()?;
    if size == 0 {
        return Err(c.invalid("datatype of size 0"));
    }
    let bits = u64::from(size) * 8;
    let class = match class_id {
        0 => {
            let bit_offset = c.u16()?;
            let precision = c.u16()?;
            TypeClass::FixedPoint {
                order: order_bit(flags),
                low_pad_one: flags & 0x02 != 0,
                high_pad_one: flags & 0x04 != 0,
                signed: flags & 0x08 != 0,
                bit_offset,
                precision,
            }
        }
        1 => {
            let mut order = order_bit(flags);
            if version >= 3 && flags & 0x40 != 0 {
                if flags & 0x01 == 0 {
                    return Err(c.invalid("floating-point byte order bits 0b10 are reserved"));
                }
                order = ByteOrder::Vax;
            }
            let normalization = match (flags >> 4) & 0x03 {
                0 => MantissaNormalization::None,
                1 => MantissaNormalization::MsbSet,
                2 => MantissaNormalization::Implied,
                _ => return Err(c.invalid("unknown mantissa normalization")),
            };
            let sign_location = ((flags >> 8) & 0xff) as u8;
            let bit_offset = c.u16()?;
            let precision = c.u16()?;
            let exponent_location = c.u8()?;
            let exponent_size = c.u8()?;
            let mantissa_location = c.u8()?;
            let mantissa_size = c.u8()?;
            let exponent_bias = c.u32()?;
            let in_range = |pos: u8, len: u8| len > 0 && u64::from(pos) + u64::from(len) <= bits;
            if u64::from(sign_location) >= bits
                || !in_range(exponent_location, exponent_size)
                || !in_range(mantissa_location, mantissa_size)
            {
                return Err(
                    c.invalid("floating-point sign, exponent or mantissa outside the type's bits")
                );
            }
            TypeClass::FloatingPoint {
                order,
                low_pad_one: flags & 0x02 != 0,
                high_pad_one: flags & 0x04 != 0,
                internal_pad_one: flags & 0x08 != 0,
                normalization,
                sign_location,
                bit_offset,
                precision,
                exponent_location,
                exponent_size,
                mantissa_location,
                mantissa_size,
                exponent_bias,
            }
        }
        2 => TypeClass::Time {
            order: order_bit(flags),
            precision: c.u16()?,
        },
        3 => TypeClass::String {
            padding: padding(flags & 0x0f),
            charset: charset((flags >> 4) & 0x0f),
        },
        4 => {
            let bit_offset = c.u16()?;
            let precision = c.u16()?;
            TypeClass::Bitfield {
                order: order_bit(flags),
                low_pad_one: flags & 0x02 != 0,
                high_pad_one: flags & 0x04 != 0,
                bit_offset,
                precision,
            }
        }
        5 => {
            let len = (flags & 0xff) as usize;
            if !len.is_multiple_of(8) {
                return Err(c.invalid("opaque tag length not a multiple of 8"));
            }
            let raw = c.bytes(len)?;
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            TypeClass::Opaque {
                tag: String::from_utf8_lossy(&raw[..end]).into_owned(),
            }
        }
        6 => decode_compound(c, version, flags, size, depth)?,
        7 => {
            let kind = match flags & 0x0f {
                0 => ReferenceKind::Object1,
                1 => ReferenceKind::DatasetRegion1,
                2 => ReferenceKind::Object2,
                3 => ReferenceKind::DatasetRegion2,
                4 => ReferenceKind::Attribute,
                k => return Err(c.invalid(format!("reference type {k}"))),
            };
            TypeClass::Reference { kind }
        }
        8 => {
            let n = (flags & 0xffff) as usize;
            let base = decode_depth(c, depth + 1)?;
            if base.size != size {
                return Err(c.invalid("enumeration size differs from its base type's"));
            }
            // Each member needs at least a 1-byte name and its value.
            let min_each = 1 + base.size as usize;
            if n.saturating_mul(min_each) > c.remaining() {
                return Err(c.invalid(format!("{n} enumeration members cannot fit")));
            }
            let mut names = Vec::with_capacity(n);
            for _ in 0..n {
                names.push(member_name(c, version)?);
            }
            let mut members = Vec::with_capacity(n);
            for name in names {
                let value = c.bytes(base.size as usize)?.to_vec();
                members.push(EnumMember { name, value });
            }
            TypeClass::Enum {
                base: Box::new(base),
                members,
            }
        }
        9 => {
            let kind = match flags & 0x0f {
                0 => VlenKind::Sequence,
                1 => VlenKind::String {
                    padding: padding((flags >> 4) & 0x0f),
                    charset: charset((flags >> 8) & 0x0f),
                },
                k => return Err(c.invalid(format!("variable-length type {k}"))),
            };
            TypeClass::VariableLength {
                kind,
                base: Box::new(decode_depth(c, depth + 1)?),
            }
        }
        10 => {
            let rank = usize::from(c.u8()?);
            if rank > MAX_ARRAY_RANK {
                return Err(c.invalid(format!("array type of rank {rank}")));
            }
            if version < 3 {
                c.skip(3)?;
            }
            let mut dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                dims.push(c.u32()?);
            }
            if version < 3 {
                c.skip(rank * 4)?;
            }
            let base = decode_depth(c, depth + 1)?;
            let expected = dims
                .iter()
                .try_fold(u64::from(base.size), |a, &d| a.checked_mul(u64::from(d)));
            if expected != Some(u64::from(size)) {
                return Err(c.invalid("array type size differs from its dimensions times its base"));
            }
            TypeClass::Array {
                dims,
                base: Box::new(base),
            }
        }
        11 => {
            if flags & 0x01 == 0 {
                return Err(c.invalid("heterogeneous complex number types are not defined"));
            }
            if (flags >> 1) & 0x03 != 0 {
                return Err(c.invalid("complex number type not in rectangular form"));
            }
            if flags >> 3 != 0 {
                return Err(c.invalid("unknown complex number type flags"));
            }
            TypeClass::Complex {
                base: Box::new(decode_depth(c, depth + 1)?),
            }
        }
        k => return Err(c.invalid(format!("datatype class {k}"))),
    };
    Ok(Datatype {
        version,
        size,
        class,
    })
}

fn decode_compound(
    c: &mut Cursor,
    version: u8,
    flags: u32,
    size: u32,
    depth: u32,
) -> Result<TypeClass> {
    let n = (flags & 0xffff) as usize;
    if n == 0 {
        return Err(c.invalid("compound type without members"));
    }
    // A member needs at least a name byte, an offset byte and an 8-byte type header.
    if n.saturating_mul(10) > c.remaining() {
        return Err(c.invalid(format!("{n} compound members cannot fit")));
    }
    let offset_bytes = limit_enc_size(u64::from(size));
    let mut members = Vec::with_capacity(n);
    for _ in 0..n {
        let name = member_name(c, version)?;
        let offset = if version >= 3 {
            c.uint(offset_bytes)? as u32
        } else {
            c.u32()?
        };
        let mut v1_dims = Vec::new();
        if version == 1 {
            let rank = usize::from(c.u8()?);
            if rank > 4 {
                return Err(c.invalid(format!("compound member array of rank {rank}")));
            }
            c.skip(3 + 4 + 4)?;
            for i in 0..4 {
                let d = c.u32()?;
                if i < rank {
                    v1_dims.push(d);
                }
            }
        }
        let mut datatype = decode_depth(c, depth + 1)?;
        if !v1_dims.is_empty() {
            let total = v1_dims
                .iter()
                .try_fold(u64::from(datatype.size), |a, &d| {
                    a.checked_mul(u64::from(d))
                })
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| c.invalid("compound member array size overflows"))?;
            datatype = Datatype {
                version: 2,
                size: total,
                class: TypeClass::Array {
                    dims: v1_dims,
                    base: Box::new(datatype),
                },
            };
        }
        if u64::from(offset) + u64::from(datatype.size) > u64::from(size) {
            return Err(c.invalid(format!(
                "compound member {name:?} extends outside the compound"
            )));
        }
        members.push(CompoundMember {
            name,
            offset,
            datatype,
        });
    }
    Ok(TypeClass::Compound { members })
}
