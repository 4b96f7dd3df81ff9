//! From a parsed header to a [`VirtualDataset`]: one virtual array per variable.

use serde_json::Value;
use vzarr_core::limits::{MAX_ARRAY_REFERENCES, MAX_RECORD_CHUNKS};
use vzarr_core::{
    Attributes, ChunkGrid, ChunkManifest, CoreError, DimGrid, Endian, FillValue, SkippedVariable,
    VirtualArray, VirtualDataset, attrs,
};
use vzarr_source::ByteSource;

use crate::Nc3Error;
use crate::header::{AttrValue, Attribute, Header, NcType, Variable, parse_header};

/// Options of [`scan`].
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Split each non-record variable larger than this many bytes into chunks of whole rows
    /// along its first axis, each at most this size (at least one row); `None` keeps one chunk
    /// per non-record variable.
    pub split_contiguous_bytes: Option<u64>,
}

/// Scans a NetCDF3 file into a virtual dataset: the root group gets the global attributes and
/// every variable becomes an array whose chunks point at byte ranges of the file.
pub fn scan(src: &dyn ByteSource, opts: &ScanOptions) -> Result<VirtualDataset, Nc3Error> {
    let header = parse_header(src)?;
    dataset_from_header(&header, src, opts)
}

/// Builds the virtual dataset of an already parsed header (see [`scan`]); `src` gives the URL
/// and the size every chunk is checked against.
pub fn dataset_from_header(
    header: &Header,
    src: &dyn ByteSource,
    opts: &ScanOptions,
) -> Result<VirtualDataset, Nc3Error> {
    let url = src.url();
    let size = src.size();
    let mut ds = VirtualDataset::new();
    if let Some(root) = ds.groups.get_mut("") {
        root.attributes = attributes_json(&header.attributes, None);
    }
    ds.unlimited_dims.extend(
        header
            .dims
            .iter()
            .filter(|d| d.is_record)
            .map(|d| d.name.clone()),
    );
    for var in &header.variables {
        let skip = |reason: String| SkippedVariable {
            path: var.name.clone(),
            reason,
        };
        if let Some(problem) = node_name_problem(&var.name) {
            ds.skipped
                .push(skip(format!("{problem}: not usable as a Zarr array name")));
            continue;
        }
        if ds.arrays.contains_key(&var.name) {
            ds.skipped.push(skip(
                "a variable of the same name comes earlier in the header".into(),
            ));
            continue;
        }
        let fill_bytes = match var.attributes.iter().find(|a| a.name == "_FillValue") {
            Some(a) => match fill_from_attr(&a.value, var.nc_type) {
                Ok(b) => b,
                Err(reason) => {
                    ds.skipped.push(skip(reason));
                    continue;
                }
            },
            None => default_fill_le(var.nc_type),
        };
        let dtype = var.nc_type.data_type();
        let fill =
            FillValue::from_le_bytes(dtype, &fill_bytes).map_err(|source| Nc3Error::Core {
                url: url.to_string(),
                what: format!("variable '{}': fill value", var.name),
                source,
            })?;
        let array = build_array(header, var, fill, url, size, opts)?;
        ds.arrays.insert(var.name.clone(), array);
    }
    ds.validate().map_err(|source| Nc3Error::Core {
        url: url.to_string(),
        what: "virtual dataset".into(),
        source,
    })?;
    Ok(ds)
}

/// Why a variable name cannot be a Zarr node name, if it cannot.
fn node_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty name")
    } else if name.contains('/') {
        Some("name contains '/'")
    } else if name == "." || name == ".." {
        Some("name is '.' or '..'")
    } else {
        None
    }
}

/// One virtual array: grid and manifest from the variable's layout.
fn build_array(
    header: &Header,
    var: &Variable,
    fill: FillValue,
    url: &str,
    size: u64,
    opts: &ScanOptions,
) -> Result<VirtualArray, Nc3Error> {
    let dtype = var.nc_type.data_type();
    let core = |what: &str| {
        let what = format!("variable '{}': {what}", var.name);
        move |source: CoreError| Nc3Error::Core {
            url: url.to_string(),
            what,
            source,
        }
    };
    let beyond = |what: String, offset: u64, length: u64| Nc3Error::BeyondEof {
        url: url.to_string(),
        var: var.name.clone(),
        what,
        offset,
        length,
        size,
    };
    let check = |what: &dyn Fn() -> String, offset: Option<u64>, length: u64| match offset
        .and_then(|o| o.checked_add(length).map(|e| (o, e)))
    {
        Some((_, end)) if end <= size => Ok(()),
        Some((o, _)) => Err(beyond(what(), o, length)),
        None => Err(beyond(what(), offset.unwrap_or(u64::MAX), length)),
    };

    // Per axis grid, then the chunks as (offset, length) computed from a rule.
    let (grid, layout) = if var.shape.is_empty() {
        // Scalar: one chunk of one element.
        check(&|| "data".into(), Some(var.begin), var.slab_bytes)?;
        (ChunkGrid::new(Vec::new()), Layout::Single)
    } else if var.is_record {
        let numrecs = var.shape.first().copied().unwrap_or(0);
        if let Some(last) = numrecs.checked_sub(1) {
            let off = last
                .checked_mul(header.record_size)
                .and_then(|x| x.checked_add(var.begin));
            check(&|| format!("record {last}"), off, var.slab_bytes)?;
        }
        // One chunk per record; the only record variable's records lie back to back, so
        // above MAX_RECORD_CHUNKS records they are grouped into chunks of several records.
        let per = if header.record_size == var.slab_bytes && numrecs > MAX_RECORD_CHUNKS {
            numrecs.div_ceil(MAX_RECORD_CHUNKS)
        } else {
            1
        };
        let chunks = numrecs.div_ceil(per);
        if chunks > MAX_ARRAY_REFERENCES {
            return Err(Nc3Error::TooManyChunks {
                url: url.to_string(),
                var: var.name.clone(),
                count: chunks,
                max: MAX_ARRAY_REFERENCES,
            });
        }
        let mut dims = vec![DimGrid::fixed(per, numrecs).map_err(core("record axis"))?];
        for &ext in var.shape.iter().skip(1) {
            dims.push(DimGrid::fixed(ext.max(1), ext).map_err(core("chunk grid"))?);
        }
        (ChunkGrid::new(dims), Layout::Records { per })
    } else {
        check(&|| "data".into(), Some(var.begin), var.slab_bytes)?;
        let rows = var.shape.first().copied().unwrap_or(0);
        let split = match opts.split_contiguous_bytes {
            Some(target) if rows > 0 => {
                ChunkGrid::split_rows(&var.shape, var.slab_bytes / rows, target)
                    .map_err(core("chunk grid"))?
            }
            _ => None,
        };
        match split {
            Some(grid) => (
                grid,
                Layout::Rows {
                    row_bytes: var.slab_bytes / rows,
                },
            ),
            None => (
                ChunkGrid::whole(&var.shape).map_err(core("chunk grid"))?,
                Layout::Single,
            ),
        }
    };

    let n = grid.n_chunks().map_err(core("chunk grid"))?;
    let n_usize = usize::try_from(n).map_err(|_| Nc3Error::SizeOverflow {
        url: url.to_string(),
        what: format!("variable '{}': chunk count", var.name),
    })?;
    let mut manifest = ChunkManifest::new_missing(n_usize);
    if n > 0 {
        let sid = manifest.intern(url).map_err(core("manifest"))?;
        for i in 0..n {
            let (offset, length) = match layout {
                Layout::Single => (Some(var.begin), var.slab_bytes),
                Layout::Records { per } => {
                    let first = i.saturating_mul(per);
                    let count = per.min(numrecs_of(var).saturating_sub(first));
                    (
                        first
                            .checked_mul(header.record_size)
                            .and_then(|x| x.checked_add(var.begin)),
                        count.saturating_mul(var.slab_bytes),
                    )
                }
                Layout::Rows { row_bytes } => {
                    let axis0 = grid.dims().first();
                    let start = axis0.map_or(0, |d| d.chunk_start(i));
                    let len = axis0.map_or(0, |d| d.chunk_len(i));
                    (
                        start
                            .checked_mul(row_bytes)
                            .and_then(|x| x.checked_add(var.begin)),
                        len.saturating_mul(row_bytes),
                    )
                }
            };
            check(&|| format!("chunk {i}"), offset, length)?;
            let idx = usize::try_from(i).unwrap_or(usize::MAX);
            manifest
                .set_range(idx, sid, offset.unwrap_or(0), length)
                .map_err(core("manifest"))?;
        }
    }

    let dimension_names = var
        .dimids
        .iter()
        .map(|&d| {
            header
                .dims
                .get(d)
                .map(|d| d.name.clone())
                .unwrap_or_default()
        })
        .collect();
    let attributes = attributes_json(&var.attributes, Some((dtype.clone(), &fill)));
    Ok(VirtualArray {
        data_type: dtype,
        endian: Endian::Big,
        fill_value: fill,
        codecs: vec![],
        dimension_names,
        attributes,
        grid,
        manifest,
    })
}

/// How chunk `i` maps to bytes.
#[derive(Clone, Copy)]
enum Layout {
    /// One chunk: the whole variable.
    Single,
    /// Chunk `i` holds records `i * per ..` (the last one fewer).
    Records { per: u64 },
    /// Chunks of whole rows along axis 0, `row_bytes` each row.
    Rows { row_bytes: u64 },
}

/// Records of a record variable (its first axis).
fn numrecs_of(var: &Variable) -> u64 {
    var.shape.first().copied().unwrap_or(0)
}

/// Attributes as JSON in file order; `_FillValue` (when `fill` is given) in the form xarray's
/// Zarr v3 backend decodes.
fn attributes_json(
    list: &[Attribute],
    fill: Option<(vzarr_core::DataType, &FillValue)>,
) -> Attributes {
    let mut out = Attributes::new();
    for a in list {
        let v = match &fill {
            Some((dtype, f)) if a.name == "_FillValue" => attrs::cf_fill_value(dtype.clone(), f),
            _ => attr_json(&a.value),
        };
        if a.name != "_FillValue"
            && let Some(t) = attr_numpy_type(a.value.nc_type())
        {
            vzarr_core::netcdf::set_attribute_type(&mut out, &a.name, t);
        }
        out.insert(a.name.clone(), v);
    }
    out
}

/// numpy's name of a numeric attribute type (`None` for text).
fn attr_numpy_type(t: NcType) -> Option<&'static str> {
    let (float, signed, size) = match t {
        NcType::Char => return None,
        NcType::Byte => (false, true, 1),
        NcType::Short => (false, true, 2),
        NcType::Int => (false, true, 4),
        NcType::Int64 => (false, true, 8),
        NcType::UByte => (false, false, 1),
        NcType::UShort => (false, false, 2),
        NcType::UInt => (false, false, 4),
        NcType::UInt64 => (false, false, 8),
        NcType::Float => (true, true, 4),
        NcType::Double => (true, true, 8),
    };
    vzarr_core::netcdf::numpy_type_name(float, signed, size)
}

/// One attribute's values as JSON: text as a string (trailing NULs stripped), one number as a
/// scalar, several as an array.
pub fn attr_json(value: &AttrValue) -> Value {
    fn nums<T>(v: &[T], f: impl Fn(&T) -> Value) -> Value {
        match v {
            [x] => f(x),
            _ => Value::Array(v.iter().map(f).collect()),
        }
    }
    match value {
        AttrValue::Char(b) => {
            let end = b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
            let text = b.get(..end).unwrap_or_default();
            Value::String(String::from_utf8_lossy(text).into_owned())
        }
        AttrValue::Byte(v) => nums(v, |x| Value::from(*x)),
        AttrValue::Short(v) => nums(v, |x| Value::from(*x)),
        AttrValue::Int(v) => nums(v, |x| Value::from(*x)),
        AttrValue::UByte(v) => nums(v, |x| Value::from(*x)),
        AttrValue::UShort(v) => nums(v, |x| Value::from(*x)),
        AttrValue::UInt(v) => nums(v, |x| Value::from(*x)),
        AttrValue::Int64(v) => nums(v, |x| Value::from(*x)),
        AttrValue::UInt64(v) => nums(v, |x| Value::from(*x)),
        AttrValue::Float(v) => nums(v, |x| attrs::float_value(f64::from(*x))),
        AttrValue::Double(v) => nums(v, |x| attrs::float_value(*x)),
    }
}

/// The netCDF default fill value of a type (`NC_FILL_*`), as little-endian bytes.
pub fn default_fill_le(t: NcType) -> Vec<u8> {
    match t {
        NcType::Byte => (-127i8).to_le_bytes().to_vec(),
        NcType::Char => vec![0],
        NcType::Short => (-32767i16).to_le_bytes().to_vec(),
        NcType::Int => (-2_147_483_647i32).to_le_bytes().to_vec(),
        // 9.9692099683868690e+36: the spec gives the bit patterns.
        NcType::Float => f32::from_bits(0x7CF0_0000).to_le_bytes().to_vec(),
        NcType::Double => f64::from_bits(0x479E_0000_0000_0000).to_le_bytes().to_vec(),
        NcType::UByte => vec![255],
        NcType::UShort => u16::MAX.to_le_bytes().to_vec(),
        NcType::UInt => u32::MAX.to_le_bytes().to_vec(),
        NcType::Int64 => (-9_223_372_036_854_775_806i64).to_le_bytes().to_vec(),
        NcType::UInt64 => (u64::MAX - 1).to_le_bytes().to_vec(),
    }
}

#[derive(Clone, Copy, Debug)]
enum Num {
    I(i128),
    F(f64),
}

/// The `_FillValue` attribute converted to the variable's type, as little-endian bytes; an
/// error text when it has not exactly one value or its value does not fit the type.
fn fill_from_attr(value: &AttrValue, t: NcType) -> Result<Vec<u8>, String> {
    if value.len() != 1 {
        return Err(format!(
            "_FillValue has {} values; it must have exactly one",
            value.len()
        ));
    }
    let mismatch = || {
        format!(
            "_FillValue of type {} does not fit a {} variable",
            value.nc_type().name(),
            t.name()
        )
    };
    let num = match value {
        AttrValue::Char(c) => {
            return if t == NcType::Char {
                Ok(c.clone())
            } else {
                Err(mismatch())
            };
        }
        AttrValue::Byte(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::Short(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::Int(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::UByte(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::UShort(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::UInt(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::Int64(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::UInt64(v) => v.first().map(|&x| Num::I(x.into())),
        AttrValue::Float(v) => v.first().map(|&x| Num::F(x.into())),
        AttrValue::Double(v) => v.first().map(|&x| Num::F(x)),
    }
    .ok_or_else(mismatch)?;
    num_to_le(num, t).ok_or_else(|| {
        let shown = match num {
            Num::I(i) => i.to_string(),
            Num::F(f) => f.to_string(),
        };
        format!("_FillValue {shown} does not fit a {} variable", t.name())
    })
}

fn num_to_le(n: Num, t: NcType) -> Option<Vec<u8>> {
    let int = || match n {
        Num::I(i) => Some(i),
        // Integral floats within range convert exactly.
        Num::F(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 => Some(f as i128),
        Num::F(_) => None,
    };
    let float = || match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    };
    Some(match t {
        NcType::Byte => i8::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::Short => i16::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::Int => i32::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::Int64 => i64::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::UByte => u8::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::UShort => u16::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::UInt => u32::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::UInt64 => u64::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        NcType::Float => (float() as f32).to_le_bytes().to_vec(),
        NcType::Double => float().to_le_bytes().to_vec(),
        NcType::Char => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attr_json_forms() {
        assert_eq!(attr_json(&AttrValue::Char(b"K\0\0".to_vec())), json!("K"));
        assert_eq!(attr_json(&AttrValue::Char(vec![])), json!(""));
        assert_eq!(attr_json(&AttrValue::Short(vec![3])), json!(3));
        assert_eq!(attr_json(&AttrValue::Int(vec![1, 2])), json!([1, 2]));
        assert_eq!(attr_json(&AttrValue::Double(vec![])), json!([]));
        assert_eq!(attr_json(&AttrValue::Float(vec![f32::NAN])), json!("NaN"));
        assert_eq!(
            attr_json(&AttrValue::UInt64(vec![u64::MAX])),
            json!(u64::MAX)
        );
        assert_eq!(attr_json(&AttrValue::Float(vec![0.5])), json!(0.5));
    }

    #[test]
    fn fill_conversion() {
        assert_eq!(
            fill_from_attr(&AttrValue::Short(vec![-999]), NcType::Short).unwrap(),
            (-999i16).to_le_bytes()
        );
        // Widening and exact integral floats are accepted.
        assert_eq!(
            fill_from_attr(&AttrValue::Short(vec![-999]), NcType::Int).unwrap(),
            (-999i32).to_le_bytes()
        );
        assert_eq!(
            fill_from_attr(&AttrValue::Double(vec![255.0]), NcType::UByte).unwrap(),
            vec![255]
        );
        assert_eq!(
            fill_from_attr(&AttrValue::Double(vec![1e20]), NcType::Float).unwrap(),
            (1e20f32).to_le_bytes()
        );
        assert!(fill_from_attr(&AttrValue::Int(vec![300]), NcType::Byte).is_err());
        assert!(fill_from_attr(&AttrValue::Double(vec![0.5]), NcType::Int).is_err());
        assert!(fill_from_attr(&AttrValue::Int(vec![1, 2]), NcType::Int).is_err());
        assert!(fill_from_attr(&AttrValue::Char(b"x".to_vec()), NcType::Int).is_err());
        assert_eq!(
            fill_from_attr(&AttrValue::Char(b"x".to_vec()), NcType::Char).unwrap(),
            b"x"
        );
    }

    #[test]
    fn default_fills() {
        assert_eq!(
            f32::from_le_bytes(default_fill_le(NcType::Float).try_into().unwrap()),
            9.969_209_968_386_869e36_f64 as f32
        );
        assert_eq!(
            f64::from_le_bytes(default_fill_le(NcType::Double).try_into().unwrap()),
            9.969_209_968_386_869e36
        );
        for code in 1..=11 {
            let t = NcType::from_code(code, 5).unwrap();
            assert_eq!(default_fill_le(t).len() as u64, t.size());
        }
    }

    #[test]
    fn node_names() {
        assert!(node_name_problem("tas").is_none());
        assert!(node_name_problem("").is_some());
        assert!(node_name_problem("a/b").is_some());
        assert!(node_name_problem("..").is_some());
    }
}
