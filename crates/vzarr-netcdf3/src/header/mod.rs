//! The NetCDF3 header: its model and a parser that reads it with a few ranged reads.
//!
//! Grammar (netcdf-c `docs/file_format_specifications.md`, big-endian throughout):
//! `magic numrecs dim_list gatt_list var_list`. CDF-5 widens every count, length, dimension
//! id, `vsize` and `numrecs` to 64 bits; list tags and `nc_type` stay 32-bit. `begin` is 32-bit
//! in CDF-1 and 64-bit in CDF-2 and CDF-5.
//!
//! This module parses the header into its model: [`parse_header`] reads the lists in grammar
//! order and derives each variable's shape, sizes and the record size. Its submodules:
//! - [`model`]: the model (types, attributes, dimensions, variables, the header);
//! - [`reader`]: the cursor over the header bytes that fetches more from the source as needed
//!   and reads the grammar's items (counts, names, lists, attributes, variable entries).

mod model;
mod reader;

use vzarr_source::ByteSource;

use crate::Nc3Error;

pub use model::{AttrValue, Attribute, Dimension, Header, NcType, Variable};

use reader::Reader;

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
}
