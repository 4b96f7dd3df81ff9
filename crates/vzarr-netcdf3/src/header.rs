//! The NetCDF3 header: its model and a parser that reads it with a few ranged reads.
//!
//! Grammar (netcdf-c `docs/file_format_specifications.md`, big-endian throughout):
//! `magic numrecs dim_list gatt_list var_list`. CDF-5 widens every count, length, dimension
//! id, `vsize` and `numrecs` to 64 bits; list tags and `nc_type` stay 32-bit. `begin` is 32-bit
//! in CDF-1 and 64-bit in CDF-2 and CDF-5.

use vzarr_core::DataType;
use vzarr_source::ByteSource;

use crate::Nc3Error;

/// Bytes read first: the whole header of almost every file fits.
pub const FIRST_READ_BYTES: u64 = 64 * 1024;

/// Headers longer than this are refused (a corrupt count would otherwise make the parser read
/// far into a large remote file).
pub const MAX_HEADER_BYTES: u64 = 256 * 1024 * 1024;

/// Most dimensions of a variable (netCDF-C's `NC_MAX_VAR_DIMS`).
pub const MAX_VAR_DIMS: u64 = 1024;

const NC_DIMENSION: u32 = 0x0A;
const NC_VARIABLE: u32 = 0x0B;
const NC_ATTRIBUTE: u32 = 0x0C;

/// Most list items preallocated from a count read in the file (the rest grow as parsed).
const MAX_PREALLOC: usize = 64;

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

    fn decode(t: NcType, raw: &[u8]) -> Self {
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

/// Returns the format version (1, 2 or 5) when `first_bytes` start with `CDF\x01`, `CDF\x02`
/// or `CDF\x05`.
pub fn sniff(first_bytes: &[u8]) -> Option<u8> {
    match first_bytes {
        [b'C', b'D', b'F', v @ (1 | 2 | 5), ..] => Some(*v),
        _ => None,
    }
}

/// Reads and parses the header of a NetCDF3 file: the first [`FIRST_READ_BYTES`] (or the whole
/// file if smaller), then more in doubling steps only if the header is longer.
pub fn parse_header(src: &dyn ByteSource) -> Result<Header, Nc3Error> {
    let size = src.size();
    let mut r = Reader {
        src,
        size,
        buf: Vec::new(),
        pos: 0,
        reads: 0,
        bytes_read: 0,
        version: 1,
    };
    // First read: the magic and, usually, the whole header.
    r.fill_to(size.min(FIRST_READ_BYTES))?;
    let magic: Vec<u8> = r.buf.iter().take(4).copied().collect();
    if magic.len() < 4 || &magic[..3] != b"CDF" {
        return Err(Nc3Error::BadMagic {
            url: src.url().to_string(),
            found: escape(&magic),
        });
    }
    let version = magic[3];
    if sniff(&magic).is_none() {
        return Err(Nc3Error::UnsupportedVersion {
            url: src.url().to_string(),
            version,
        });
    }
    r.version = version;
    r.pos = 4;

    let raw_numrecs = r.count("numrecs")?;
    let streaming = if version == 5 {
        raw_numrecs == u64::MAX
    } else {
        raw_numrecs == u64::from(u32::MAX)
    };

    // dim_list
    let ndims = r.list(NC_DIMENSION, "dimension list", r.count_size() * 2)?;
    let mut dims = Vec::with_capacity(prealloc(ndims));
    for i in 0..ndims {
        let name = r.name(&format!("name of dimension {i}"))?;
        let len = r.count(&format!("length of dimension '{name}'"))?;
        dims.push(Dimension {
            name,
            len,
            is_record: len == 0,
        });
    }

    // gatt_list
    let attributes = r.att_list("global attributes")?;

    // var_list
    let min_var = r.count_size() * 4 + 4 + 4 + 4;
    let nvars = r.list(NC_VARIABLE, "variable list", min_var)?;
    let mut raw_vars = Vec::with_capacity(prealloc(nvars));
    for i in 0..nvars {
        raw_vars.push(r.var(i, dims.len())?);
    }
    let header_len = r.offset();

    let url = src.url();
    let mut variables = derive_shapes(url, &dims, raw_vars)?;

    // Record size: netcdf-c sums the padded record slabs; with exactly one record variable
    // the records are not padded.
    let mut record_size: u64 = 0;
    let mut first_rec: Option<&Variable> = None;
    for v in variables.iter().filter(|v| v.is_record) {
        first_rec.get_or_insert(v);
        record_size =
            record_size
                .checked_add(v.padded_bytes)
                .ok_or_else(|| Nc3Error::SizeOverflow {
                    url: url.to_string(),
                    what: "record size".into(),
                })?;
    }
    if let Some(first) = first_rec
        && record_size == first.padded_bytes
    {
        record_size = first.slab_bytes;
    }

    let numrecs = if streaming {
        streaming_numrecs(&variables, record_size, size)
    } else {
        raw_numrecs
    };
    for v in variables.iter_mut().filter(|v| v.is_record) {
        if let Some(s) = v.shape.first_mut() {
            *s = numrecs;
        }
    }
    for v in &variables {
        if v.begin < header_len {
            return Err(Nc3Error::DataOverlapsHeader {
                url: url.to_string(),
                var: v.name.clone(),
                begin: v.begin,
                header_len,
            });
        }
    }

    Ok(Header {
        version,
        numrecs,
        streaming,
        dims,
        attributes,
        variables,
        record_size,
        header_len,
        file_size: size,
        bytes_read: r.bytes_read,
        reads: r.reads,
    })
}

/// Whole records present for every record variable, for a STREAMING header.
fn streaming_numrecs(vars: &[Variable], record_size: u64, size: u64) -> u64 {
    let mut n: Option<u64> = None;
    for v in vars.iter().filter(|v| v.is_record) {
        let fits = match v.begin.checked_add(v.slab_bytes) {
            Some(end) if end <= size => match (size - end).checked_div(record_size) {
                Some(q) => q.saturating_add(1),
                None => 0,
            },
            _ => 0,
        };
        n = Some(n.map_or(fits, |m| m.min(fits)));
    }
    n.unwrap_or(0)
}

struct RawVar {
    name: String,
    dimids: Vec<usize>,
    attributes: Vec<Attribute>,
    nc_type: NcType,
    vsize: u64,
    begin: u64,
}

/// Shapes and sizes of the variables (the record axis holds 0 until numrecs is known).
fn derive_shapes(
    url: &str,
    dims: &[Dimension],
    raw: Vec<RawVar>,
) -> Result<Vec<Variable>, Nc3Error> {
    let mut out = Vec::with_capacity(raw.len());
    for rv in raw {
        let overflow = || Nc3Error::SizeOverflow {
            url: url.to_string(),
            what: format!("variable '{}'", rv.name),
        };
        let mut shape = Vec::with_capacity(rv.dimids.len());
        let mut is_record = false;
        let mut elems: u64 = 1;
        for (axis, &d) in rv.dimids.iter().enumerate() {
            let dim = dims.get(d).ok_or_else(|| Nc3Error::BadDimId {
                url: url.to_string(),
                var: rv.name.clone(),
                dimid: d as u64,
                ndims: dims.len(),
            })?;
            if dim.is_record {
                if axis != 0 {
                    return Err(Nc3Error::RecordDimNotFirst {
                        url: url.to_string(),
                        var: rv.name.clone(),
                        dim: dim.name.clone(),
                        axis,
                    });
                }
                is_record = true;
                shape.push(0);
            } else {
                elems = elems.checked_mul(dim.len).ok_or_else(overflow)?;
                shape.push(dim.len);
            }
        }
        let slab_bytes = elems.checked_mul(rv.nc_type.size()).ok_or_else(overflow)?;
        let padded_bytes = slab_bytes
            .checked_next_multiple_of(4)
            .ok_or_else(overflow)?;
        out.push(Variable {
            name: rv.name,
            dimids: rv.dimids,
            attributes: rv.attributes,
            nc_type: rv.nc_type,
            vsize: rv.vsize,
            begin: rv.begin,
            is_record,
            shape,
            slab_bytes,
            padded_bytes,
        });
    }
    Ok(out)
}

fn prealloc(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX).min(MAX_PREALLOC)
}

fn escape(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing (empty file)".into();
    }
    let s: String = bytes
        .iter()
        .flat_map(|b| b.escape_ascii())
        .map(char::from)
        .collect();
    format!("\"{s}\"")
}

/// A cursor over the header bytes that fetches more from the source as needed.
struct Reader<'a> {
    src: &'a dyn ByteSource,
    size: u64,
    buf: Vec<u8>,
    pos: usize,
    reads: u32,
    bytes_read: u64,
    version: u8,
}

impl Reader<'_> {
    fn url(&self) -> String {
        self.src.url().to_string()
    }

    fn offset(&self) -> u64 {
        self.pos as u64
    }

    fn remaining(&self) -> u64 {
        self.size.saturating_sub(self.offset())
    }

    /// Bytes of a count (`NON_NEG`): 8 in CDF-5, else 4.
    fn count_size(&self) -> u64 {
        if self.version == 5 { 8 } else { 4 }
    }

    /// Reads from the source until the buffer holds the first `end` bytes of the file.
    fn fill_to(&mut self, end: u64) -> Result<(), Nc3Error> {
        let have = self.buf.len() as u64;
        if end <= have {
            return Ok(());
        }
        let bytes = self.src.read(have..end)?;
        self.reads = self.reads.saturating_add(1);
        self.bytes_read = self.bytes_read.saturating_add(bytes.len() as u64);
        self.buf.extend_from_slice(&bytes);
        Ok(())
    }

    /// Makes sure `n` bytes from the cursor are in the buffer, reading more (at least doubling
    /// what was read) if not.
    fn ensure(&mut self, n: u64, what: &str) -> Result<(), Nc3Error> {
        let offset = self.offset();
        let end = offset.checked_add(n);
        let truncated = || Nc3Error::TruncatedHeader {
            url: self.url(),
            what: what.to_string(),
            offset,
            need: n,
            size: self.size,
        };
        let Some(end) = end else {
            return Err(truncated());
        };
        if end <= self.buf.len() as u64 {
            return Ok(());
        }
        if end > self.size {
            return Err(truncated());
        }
        if end > MAX_HEADER_BYTES {
            return Err(Nc3Error::HeaderTooLarge {
                url: self.url(),
                what: what.to_string(),
                offset,
                limit: MAX_HEADER_BYTES,
            });
        }
        let doubled = (self.buf.len() as u64).saturating_mul(2);
        let target = end.max(doubled.min(self.size).min(MAX_HEADER_BYTES));
        self.fill_to(target)
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&[u8], Nc3Error> {
        self.ensure(n, what)?;
        let start = self.pos;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(Nc3Error::TruncatedHeader {
                url: self.url(),
                what: what.to_string(),
                offset: self.offset(),
                need: n,
                size: self.size,
            });
        };
        self.pos = end;
        Ok(self.buf.get(start..end).unwrap_or_default())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Nc3Error> {
        let b = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        for (d, s) in a.iter_mut().zip(b) {
            *d = *s;
        }
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Nc3Error> {
        self.array::<4>(what).map(u32::from_be_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, Nc3Error> {
        self.array::<8>(what).map(u64::from_be_bytes)
    }

    /// A `NON_NEG` count or length: 64-bit in CDF-5, else 32-bit.
    fn count(&mut self, what: &str) -> Result<u64, Nc3Error> {
        if self.version == 5 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// An `OFFSET`: 32-bit in CDF-1, 64-bit in CDF-2 and CDF-5.
    fn offset_field(&mut self, what: &str) -> Result<u64, Nc3Error> {
        if self.version == 1 {
            self.u32(what).map(u64::from)
        } else {
            self.u64(what)
        }
    }

    /// Errors unless `need` bytes (implied by `count`, read at `at`) fit in the rest of the file.
    fn check_fits(&self, count: u64, need: u64, what: &str, at: u64) -> Result<(), Nc3Error> {
        let remaining = self.remaining();
        if need > remaining {
            return Err(Nc3Error::AbsurdCount {
                url: self.url(),
                what: what.to_string(),
                count,
                offset: at,
                need,
                remaining,
            });
        }
        Ok(())
    }

    /// A list header (`ABSENT` or tag + count); returns the count, checked against the file.
    fn list(&mut self, tag: u32, what: &str, min_item: u64) -> Result<u64, Nc3Error> {
        let tag_off = self.offset();
        let found = self.u32(&format!("tag of the {what}"))?;
        let count_off = self.offset();
        let n = self.count(&format!("length of the {what}"))?;
        if n == 0 {
            // ABSENT; netcdf-c accepts any tag with a zero count.
            return Ok(0);
        }
        if found != tag {
            return Err(Nc3Error::BadTag {
                url: self.url(),
                what: what.to_string(),
                tag: found,
                expected: tag,
                offset: tag_off,
            });
        }
        let need = n.saturating_mul(min_item);
        self.check_fits(n, need, &format!("length of the {what}"), count_off)?;
        Ok(n)
    }

    /// A name: count, bytes, padding to 4; must be UTF-8.
    fn name(&mut self, what: &str) -> Result<String, Nc3Error> {
        let at = self.offset();
        let n = self.count(what)?;
        let padded = n.checked_next_multiple_of(4).unwrap_or(u64::MAX);
        self.check_fits(n, padded, what, at)?;
        let raw = self.take(padded, what)?;
        let text = raw
            .get(..usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(raw);
        match std::str::from_utf8(text) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(Nc3Error::BadName {
                url: self.url(),
                what: what.to_string(),
                offset: at,
                reason: format!("not UTF-8 ({e})"),
            }),
        }
    }

    fn nc_type(&mut self, what: &str) -> Result<NcType, Nc3Error> {
        let code = self.u32(&format!("type of {what}"))?;
        NcType::from_code(code, self.version).ok_or_else(|| Nc3Error::UnknownType {
            url: self.url(),
            what: what.to_string(),
            code,
            version: self.version,
            hint: if (7..=11).contains(&code) {
                " (types 7-11 need CDF-5)".into()
            } else {
                String::new()
            },
        })
    }

    fn att_list(&mut self, owner: &str) -> Result<Vec<Attribute>, Nc3Error> {
        let min_attr = self.count_size() * 2 + 4;
        let n = self.list(
            NC_ATTRIBUTE,
            &format!("attribute list of {owner}"),
            min_attr,
        )?;
        let mut out = Vec::with_capacity(prealloc(n));
        for i in 0..n {
            let name = self.name(&format!("name of attribute {i} of {owner}"))?;
            let what = format!("attribute '{name}' of {owner}");
            let t = self.nc_type(&what)?;
            let at = self.offset();
            let count = self.count(&format!("length of {what}"))?;
            let bytes = count.saturating_mul(t.size());
            let padded = bytes.checked_next_multiple_of(4).unwrap_or(u64::MAX);
            self.check_fits(count, padded, &format!("length of {what}"), at)?;
            let raw = self.take(padded, &format!("values of {what}"))?;
            let raw = raw
                .get(..usize::try_from(bytes).unwrap_or(usize::MAX))
                .unwrap_or(raw);
            out.push(Attribute {
                name,
                value: AttrValue::decode(t, raw),
            });
        }
        Ok(out)
    }

    fn var(&mut self, i: u64, ndims: usize) -> Result<RawVar, Nc3Error> {
        let name = self.name(&format!("name of variable {i}"))?;
        let what = format!("variable '{name}'");
        let at = self.offset();
        let rank = self.count(&format!("number of dimensions of {what}"))?;
        if rank > MAX_VAR_DIMS {
            return Err(Nc3Error::TooManyDims {
                url: self.url(),
                var: name,
                rank,
                max: MAX_VAR_DIMS,
            });
        }
        let idsize = self.count_size();
        let need = rank.saturating_mul(idsize);
        self.check_fits(rank, need, &format!("number of dimensions of {what}"), at)?;
        let mut dimids = Vec::with_capacity(prealloc(rank));
        for axis in 0..rank {
            let id = self.count(&format!("dimension id {axis} of {what}"))?;
            let idx = usize::try_from(id)
                .ok()
                .filter(|&d| d < ndims)
                .ok_or_else(|| Nc3Error::BadDimId {
                    url: self.url(),
                    var: name.clone(),
                    dimid: id,
                    ndims,
                })?;
            dimids.push(idx);
        }
        let attributes = self.att_list(&what)?;
        let nc_type = self.nc_type(&what)?;
        let vsize = self.count(&format!("vsize of {what}"))?;
        let begin = self.offset_field(&format!("begin of {what}"))?;
        Ok(RawVar {
            name,
            dimids,
            attributes,
            nc_type,
            vsize,
            begin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_versions() {
        assert_eq!(sniff(b"CDF\x01rest"), Some(1));
        assert_eq!(sniff(b"CDF\x02"), Some(2));
        assert_eq!(sniff(b"CDF\x05"), Some(5));
        assert_eq!(sniff(b"CDF\x03"), None);
        assert_eq!(sniff(b"CDF"), None);
        assert_eq!(sniff(b"\x89HDF\r\n\x1a\n"), None);
        assert_eq!(sniff(b""), None);
    }

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
