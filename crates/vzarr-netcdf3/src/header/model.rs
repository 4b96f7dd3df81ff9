//! The model of a NetCDF3 header: external types (`nc_type`), attribute values decoded from
//! big-endian, attributes, dimensions, variables (with the shape and sizes derived from their
//! entries) and the header itself (netcdf-c `docs/file_format_specifications.md`).

use vzarr_core::DataType;

/// A NetCDF3 external type (`nc_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcType {
    /// `NC_BYTE` (1): signed 8-bit integer.
    Byte,
    /// `NC_CHAR` (2): 8-bit character.
    Char,
    /// `NC_SHORT` (3): signed 16-bit integer.
    Short,
    /// `NC_INT` (4): signed 32-bit integer.
    Int,
    /// `NC_FLOAT` (5): IEEE single precision.
    Float,
    /// `NC_DOUBLE` (6): IEEE double precision.
    Double,
    /// `NC_UBYTE` (7, CDF-5 only): unsigned 8-bit integer.
    UByte,
    /// `NC_USHORT` (8, CDF-5 only): unsigned 16-bit integer.
    UShort,
    /// `NC_UINT` (9, CDF-5 only): unsigned 32-bit integer.
    UInt,
    /// `NC_INT64` (10, CDF-5 only): signed 64-bit integer.
    Int64,
    /// `NC_UINT64` (11, CDF-5 only): unsigned 64-bit integer.
    UInt64,
}

impl NcType {
    /// The type for an `nc_type` code, if `version` defines it (7-11 need CDF-5).
    pub fn from_code(code: u32, version: u8) -> Option<Self> {
        let t = match code {
            1 => NcType::Byte,
            2 => NcType::Char,
            3 => NcType::Short,
            4 => NcType::Int,
            5 => NcType::Float,
            6 => NcType::Double,
            7 => NcType::UByte,
            8 => NcType::UShort,
            9 => NcType::UInt,
            10 => NcType::Int64,
            11 => NcType::UInt64,
            _ => return None,
        };
        if code >= 7 && version != 5 {
            return None;
        }
        Some(t)
    }

    /// The `nc_type` code.
    pub fn code(self) -> u32 {
        match self {
            NcType::Byte => 1,
            NcType::Char => 2,
            NcType::Short => 3,
            NcType::Int => 4,
            NcType::Float => 5,
            NcType::Double => 6,
            NcType::UByte => 7,
            NcType::UShort => 8,
            NcType::UInt => 9,
            NcType::Int64 => 10,
            NcType::UInt64 => 11,
        }
    }

    /// Size of one element in the file, in bytes.
    pub fn size(self) -> u64 {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::Float | NcType::UInt => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    /// The Zarr data type of a variable of this type (`char` is a 1-byte string, numpy `S1`).
    pub fn data_type(self) -> DataType {
        match self {
            NcType::Byte => DataType::Int8,
            NcType::Char => DataType::FixedBytes(1),
            NcType::Short => DataType::Int16,
            NcType::Int => DataType::Int32,
            NcType::Float => DataType::Float32,
            NcType::Double => DataType::Float64,
            NcType::UByte => DataType::UInt8,
            NcType::UShort => DataType::UInt16,
            NcType::UInt => DataType::UInt32,
            NcType::Int64 => DataType::Int64,
            NcType::UInt64 => DataType::UInt64,
        }
    }

    /// The netCDF name of the type (`short`, `uint64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        }
    }
}

/// The values of an attribute, decoded from big-endian.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// `NC_CHAR` text, raw bytes (padding removed, trailing NULs kept).
    Char(Vec<u8>),
    /// `NC_BYTE` values.
    Byte(Vec<i8>),
    /// `NC_SHORT` values.
    Short(Vec<i16>),
    /// `NC_INT` values.
    Int(Vec<i32>),
    /// `NC_FLOAT` values.
    Float(Vec<f32>),
    /// `NC_DOUBLE` values.
    Double(Vec<f64>),
    /// `NC_UBYTE` values.
    UByte(Vec<u8>),
    /// `NC_USHORT` values.
    UShort(Vec<u16>),
    /// `NC_UINT` values.
    UInt(Vec<u32>),
    /// `NC_INT64` values.
    Int64(Vec<i64>),
    /// `NC_UINT64` values.
    UInt64(Vec<u64>),
}

impl AttrValue {
    /// The attribute's `nc_type`.
    pub fn nc_type(&self) -> NcType {
        match self {
            AttrValue::Char(_) => NcType::Char,
            AttrValue::Byte(_) => NcType::Byte,
            AttrValue::Short(_) => NcType::Short,
            AttrValue::Int(_) => NcType::Int,
            AttrValue::Float(_) => NcType::Float,
            AttrValue::Double(_) => NcType::Double,
            AttrValue::UByte(_) => NcType::UByte,
            AttrValue::UShort(_) => NcType::UShort,
            AttrValue::UInt(_) => NcType::UInt,
            AttrValue::Int64(_) => NcType::Int64,
            AttrValue::UInt64(_) => NcType::UInt64,
        }
    }

    /// Number of values (characters for text).
    pub fn len(&self) -> usize {
        match self {
            AttrValue::Char(v) | AttrValue::UByte(v) => v.len(),
            AttrValue::Byte(v) => v.len(),
            AttrValue::Short(v) => v.len(),
            AttrValue::Int(v) => v.len(),
            AttrValue::Float(v) => v.len(),
            AttrValue::Double(v) => v.len(),
            AttrValue::UShort(v) => v.len(),
            AttrValue::UInt(v) => v.len(),
            AttrValue::Int64(v) => v.len(),
            AttrValue::UInt64(v) => v.len(),
        }
    }

    /// Whether the attribute has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn decode(t: NcType, raw: &[u8]) -> Self {
        fn be<const N: usize, T>(raw: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
            raw.chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    for (d, s) in a.iter_mut().zip(c) {
                        *d = *s;
                    }
                    f(a)
                })
                .collect()
        }
        match t {
            NcType::Char => AttrValue::Char(raw.to_vec()),
            NcType::Byte => AttrValue::Byte(raw.iter().map(|&b| b as i8).collect()),
            NcType::UByte => AttrValue::UByte(raw.to_vec()),
            NcType::Short => AttrValue::Short(be(raw, i16::from_be_bytes)),
            NcType::UShort => AttrValue::UShort(be(raw, u16::from_be_bytes)),
            NcType::Int => AttrValue::Int(be(raw, i32::from_be_bytes)),
            NcType::UInt => AttrValue::UInt(be(raw, u32::from_be_bytes)),
            NcType::Float => AttrValue::Float(be(raw, f32::from_be_bytes)),
            NcType::Double => AttrValue::Double(be(raw, f64::from_be_bytes)),
            NcType::Int64 => AttrValue::Int64(be(raw, i64::from_be_bytes)),
            NcType::UInt64 => AttrValue::UInt64(be(raw, u64::from_be_bytes)),
        }
    }
}

/// A named attribute (global or of a variable).
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    /// Attribute name.
    pub name: String,
    /// Its values.
    pub value: AttrValue,
}

/// A dimension of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dimension {
    /// Dimension name.
    pub name: String,
    /// Length as stored (0 for the record dimension).
    pub len: u64,
    /// Whether this is the record (unlimited) dimension.
    pub is_record: bool,
}

/// A variable of the file: its header entry plus the shape and sizes derived from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    /// Variable name.
    pub name: String,
    /// Dimension ids, outermost first.
    pub dimids: Vec<usize>,
    /// Variable attributes in file order.
    pub attributes: Vec<Attribute>,
    /// Element type.
    pub nc_type: NcType,
    /// `vsize` as stored (redundant, may be `2^32 - 1` for large variables; not used for offsets).
    pub vsize: u64,
    /// Offset of the variable's data (of its first record, for a record variable).
    pub begin: u64,
    /// Whether the first dimension is the record dimension.
    pub is_record: bool,
    /// Shape, with the number of records on the record axis.
    pub shape: Vec<u64>,
    /// Unpadded bytes of the whole variable (non-record) or of one record (record variable).
    pub slab_bytes: u64,
    /// `slab_bytes` rounded up to a multiple of 4, as netcdf-c lays variables out.
    pub padded_bytes: u64,
}

/// A parsed NetCDF3 header, with the cost of reading it.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Format version: 1 (classic), 2 (64-bit offset) or 5 (64-bit data).
    pub version: u8,
    /// Number of records (computed from the file size when the header says STREAMING).
    pub numrecs: u64,
    /// Whether `numrecs` was STREAMING (all ones) in the file.
    pub streaming: bool,
    /// Dimensions in id order.
    pub dims: Vec<Dimension>,
    /// Global attributes in file order.
    pub attributes: Vec<Attribute>,
    /// Variables in file order.
    pub variables: Vec<Variable>,
    /// Bytes between successive records: the sum of the padded record slabs of all record
    /// variables, or the unpadded slab when there is exactly one record variable.
    pub record_size: u64,
    /// Length of the header in bytes.
    pub header_len: u64,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Bytes read from the source to parse the header.
    pub bytes_read: u64,
    /// Number of ranged reads used to parse the header.
    pub reads: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes() {
        for code in 1..=11 {
            let t = NcType::from_code(code, 5).unwrap();
            assert_eq!(t.code(), code);
            assert_eq!(t.size() as usize, t.data_type().size());
        }
        assert_eq!(NcType::from_code(7, 1), None);
        assert_eq!(NcType::from_code(11, 2), None);
        assert_eq!(NcType::from_code(6, 1), Some(NcType::Double));
        assert_eq!(NcType::from_code(0, 5), None);
        assert_eq!(NcType::from_code(12, 5), None);
    }

    #[test]
    fn attr_decode_big_endian() {
        assert_eq!(
            AttrValue::decode(NcType::Short, &[0x80, 0x01, 0x00, 0x05]),
            AttrValue::Short(vec![-32767, 5])
        );
        assert_eq!(
            AttrValue::decode(NcType::Float, &[0x7c, 0xf0, 0, 0]),
            AttrValue::Float(vec![f32::from_bits(0x7cf0_0000)])
        );
    }
}
