//! Shared test helpers: NetCDF3 writers (through the `netcdf` crate), a reader that resolves
//! our manifests independently of the scanner, and a hand-made header builder for files the
//! netCDF library would never write.
#![allow(dead_code)]

use std::path::Path;

use ndarray::{ArrayD, IxDyn, Slice};
use netcdf::types::{NcTypeDescriptor, NcVariableType};
use serde_json::{Value, json};
use vzarr_core::{ChunkRef, DataType, VirtualArray};

/// The three NetCDF3 formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fmt {
    Cdf1,
    Cdf2,
    Cdf5,
}

impl Fmt {
    pub(crate) const ALL: [Fmt; 3] = [Fmt::Cdf1, Fmt::Cdf2, Fmt::Cdf5];

    pub(crate) fn options(self) -> netcdf::Options {
        match self {
            Fmt::Cdf1 => netcdf::Options::CLASSIC,
            Fmt::Cdf2 => netcdf::Options::_64BIT_OFFSET,
            Fmt::Cdf5 => netcdf::Options::_64BIT_DATA,
        }
    }

    pub(crate) fn version(self) -> u8 {
        match self {
            Fmt::Cdf1 => 1,
            Fmt::Cdf2 => 2,
            Fmt::Cdf5 => 5,
        }
    }
}

/// `NC_CHAR` elements for the netcdf crate.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NcChar(pub u8);

// SAFETY: NcChar is a transparent u8, the memory layout of NC_CHAR.
unsafe impl NcTypeDescriptor for NcChar {
    fn type_descriptor() -> NcVariableType {
        NcVariableType::Char
    }
}

/// Deterministic test values with extremes first.
pub(crate) trait TestVal: NcTypeDescriptor + Copy {
    fn make(i: usize) -> Self;
}

macro_rules! int_testval {
    ($($t:ty),*) => {$(
        impl TestVal for $t {
            fn make(i: usize) -> Self {
                match i {
                    0 => <$t>::MIN,
                    1 => <$t>::MAX,
                    2 => 0,
                    _ => (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(i as u32 % 63) as $t,
                }
            }
        }
    )*};
}
int_testval!(i8, u8, i16, u16, i32, u32, i64, u64);

impl TestVal for f32 {
    fn make(i: usize) -> Self {
        match i {
            0 => f32::NAN,
            1 => -0.0,
            2 => f32::INFINITY,
            3 => f32::from_bits(1), // subnormal
            4 => f32::MIN,
            5 => f32::from_bits(0x7fc0_1234), // NaN with payload
            _ => (i as f32) * 1.25 - 7.0,
        }
    }
}

impl TestVal for f64 {
    fn make(i: usize) -> Self {
        match i {
            0 => f64::NAN,
            1 => -0.0,
            2 => f64::NEG_INFINITY,
            3 => f64::from_bits(1),
            4 => f64::MAX,
            5 => f64::from_bits(0x7ff8_0000_0000_abcd),
            _ => (i as f64) * 0.1 - 3.0,
        }
    }
}

impl TestVal for NcChar {
    fn make(i: usize) -> Self {
        NcChar(b"abcdefghijklmnopqrstuvwxyz0123456789 "[i % 37])
    }
}

pub(crate) fn vals<T: TestVal>(n: usize, offset: usize) -> Vec<T> {
    (0..n).map(|i| T::make(i + offset)).collect()
}

fn def_and_attrs(f: &mut netcdf::FileMut, cdf5: bool) {
    f.add_attribute("title", "rich NetCDF3 test file").unwrap();
    f.add_attribute("history", "line one\nline two\0").unwrap();
    f.add_attribute("g_byte", -5i8).unwrap();
    f.add_attribute("g_bytes", vec![-128i8, 0, 127]).unwrap();
    f.add_attribute("g_short", -300i16).unwrap();
    f.add_attribute("g_shorts", vec![i16::MIN, 1, i16::MAX])
        .unwrap();
    f.add_attribute("g_int", 123_456i32).unwrap();
    f.add_attribute("g_ints", vec![i32::MIN, -1, i32::MAX, 7])
        .unwrap();
    f.add_attribute("g_float", 1.5f32).unwrap();
    f.add_attribute("g_floats", vec![f32::NAN, f32::INFINITY, -0.0, 1e-30, 0.1])
        .unwrap();
    f.add_attribute("g_double", 0.1f64).unwrap();
    f.add_attribute("g_doubles", vec![f64::NEG_INFINITY, 1e300, -2.5])
        .unwrap();
    f.add_attribute("g_empty_text", "").unwrap();
    f.add_attribute("g_unicode", "température µ").unwrap();
    if cdf5 {
        f.add_attribute("g_ubyte", 200u8).unwrap();
        f.add_attribute("g_ubytes", vec![0u8, 255]).unwrap();
        f.add_attribute("g_ushort", 65_000u16).unwrap();
        f.add_attribute("g_ushorts", vec![1u16, 2, 3]).unwrap();
        f.add_attribute("g_uint", u32::MAX).unwrap();
        f.add_attribute("g_uints", vec![0u32, 4_000_000_000])
            .unwrap();
        f.add_attribute("g_int64", i64::MIN).unwrap();
        f.add_attribute("g_int64s", vec![i64::MAX, -1]).unwrap();
        f.add_attribute("g_uint64", u64::MAX).unwrap();
        f.add_attribute("g_uint64s", vec![0u64, 1 << 63]).unwrap();
    }
}

/// Which variables a rich file has: (name suffix, type) pairs per format.
fn numeric_types(cdf5: bool) -> Vec<&'static str> {
    let mut t = vec!["byte", "short", "int", "float", "double"];
    if cdf5 {
        t.extend(["ubyte", "ushort", "uint", "int64", "uint64"]);
    }
    t
}

macro_rules! with_type {
    ($name:expr, $T:ident => $body:expr) => {
        match $name {
            "byte" => {
                type $T = i8;
                $body
            }
            "short" => {
                type $T = i16;
                $body
            }
            "int" => {
                type $T = i32;
                $body
            }
            "float" => {
                type $T = f32;
                $body
            }
            "double" => {
                type $T = f64;
                $body
            }
            "ubyte" => {
                type $T = u8;
                $body
            }
            "ushort" => {
                type $T = u16;
                $body
            }
            "uint" => {
                type $T = u32;
                $body
            }
            "int64" => {
                type $T = i64;
                $body
            }
            "uint64" => {
                type $T = u64;
                $body
            }
            other => panic!("type {other}"),
        }
    };
}

/// Writes a file with record and non-record variables of every type of the format, char
/// variables, scalars, odd sizes (padding), attributes of every type, a variable with
/// `_FillValue`, unwritten variables and a partly written record variable; `nrecs` records.
pub(crate) fn write_rich(path: &Path, fmt: Fmt, nrecs: usize) {
    let cdf5 = fmt == Fmt::Cdf5;
    let mut f = netcdf::create_with(path, fmt.options()).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 3).unwrap();
    f.add_dimension("y", 5).unwrap();
    f.add_dimension("strlen", 7).unwrap();
    f.add_dimension("z", 11).unwrap();
    def_and_attrs(&mut f, cdf5);
    let types = numeric_types(cdf5);
    for t in &types {
        with_type!(*t, T => {
            let mut v = f.add_variable::<T>(&format!("fix_{t}"), &["x", "y"]).unwrap();
            v.put_attribute("long_name", format!("fixed {t}")).unwrap();
            f.add_variable::<T>(&format!("rec_{t}"), &["time", "x"]).unwrap();
            f.add_variable::<T>(&format!("odd_{t}"), &["x"]).unwrap();
        });
    }
    {
        let mut v = f.add_variable::<f64>("fix_double_attrs", &["y"]).unwrap();
        v.put_attribute("units", "K").unwrap();
        v.put_attribute("scale_factor", 0.01f32).unwrap();
        v.put_attribute("add_offset", 273.15f64).unwrap();
        v.put_attribute("valid_range", vec![-100i16, 100]).unwrap();
        v.put_attribute("flag_values", vec![1i8, 2, 4]).unwrap();
        v.put_attribute("nan_attr", f64::NAN).unwrap();
        v.put_attribute("ints", vec![1i32, 2, 3]).unwrap();
        if cdf5 {
            v.put_attribute("u64s", vec![u64::MAX, 5]).unwrap();
        }
    }
    f.add_variable_with_type("names", &["x", "strlen"], &NcVariableType::Char)
        .unwrap();
    f.add_variable_with_type("rec_char", &["time", "strlen"], &NcVariableType::Char)
        .unwrap();
    f.add_variable::<f64>("time", &["time"]).unwrap();
    f.add_variable::<f64>("scalar_double", &[]).unwrap();
    f.add_variable::<i32>("scalar_unwritten", &[]).unwrap();
    f.add_variable_with_type("scalar_char", &[], &NcVariableType::Char)
        .unwrap();
    {
        let mut v = f.add_variable::<f32>("with_fill", &["y"]).unwrap();
        v.put_attribute("_FillValue", -999f32).unwrap();
        v.put_attribute("units", "m").unwrap();
    }
    {
        let mut v = f.add_variable::<i16>("with_int_fill", &["x", "y"]).unwrap();
        v.put_attribute("_FillValue", -1i16).unwrap();
    }
    f.add_variable::<i16>("unwritten", &["x", "y"]).unwrap();
    f.add_variable::<f64>("big", &["z", "y"]).unwrap();
    {
        let mut v = f
            .add_variable::<i32>("rec_partial", &["time", "x"])
            .unwrap();
        v.put_attribute("_FillValue", -7i32).unwrap();
    }
    f.add_variable::<f32>("rec_unwritten", &["time", "y"])
        .unwrap();
    f.add_variable::<i8>("rec_odd", &["time"]).unwrap();
    f.enddef().unwrap();

    for t in &types {
        with_type!(*t, T => {
            let mut v = f.variable_mut(&format!("fix_{t}")).unwrap();
            v.put_values(&vals::<T>(15, 0), ..).unwrap();
            let mut v = f.variable_mut(&format!("odd_{t}")).unwrap();
            v.put_values(&vals::<T>(3, 5), ..).unwrap();
            if nrecs > 0 {
                let mut v = f.variable_mut(&format!("rec_{t}")).unwrap();
                v.put_values(&vals::<T>(3 * nrecs, 2), ([0, 0], [nrecs, 3])).unwrap();
            }
        });
    }
    f.variable_mut("fix_double_attrs")
        .unwrap()
        .put_values(&vals::<f64>(5, 6), ..)
        .unwrap();
    f.variable_mut("names")
        .unwrap()
        .put_values(&vals::<NcChar>(21, 0), ..)
        .unwrap();
    f.variable_mut("scalar_double")
        .unwrap()
        .put_value(3.25f64, ..)
        .unwrap();
    f.variable_mut("scalar_char")
        .unwrap()
        .put_value(NcChar(b'Q'), ..)
        .unwrap();
    // Partly written: indices 1 and 2 only.
    f.variable_mut("with_fill")
        .unwrap()
        .put_values(&[1.5f32, 2.5], ([1], [2]))
        .unwrap();
    f.variable_mut("with_int_fill")
        .unwrap()
        .put_values(&[5i16, 6, 7], ([1, 1], [1, 3]))
        .unwrap();
    f.variable_mut("big")
        .unwrap()
        .put_values(&vals::<f64>(55, 9), ..)
        .unwrap();
    if nrecs > 0 {
        f.variable_mut("time")
            .unwrap()
            .put_values(&vals::<f64>(nrecs, 6), ([0], [nrecs]))
            .unwrap();
        f.variable_mut("rec_char")
            .unwrap()
            .put_values(&vals::<NcChar>(7 * nrecs, 3), ([0, 0], [nrecs, 7]))
            .unwrap();
        f.variable_mut("rec_odd")
            .unwrap()
            .put_values(&vals::<i8>(nrecs, 0), ([0], [nrecs]))
            .unwrap();
        // Only the last record of rec_partial is written.
        f.variable_mut("rec_partial")
            .unwrap()
            .put_values(&[10i32, 11, 12], ([nrecs - 1, 0], [1, 3]))
            .unwrap();
    }
    f.close().unwrap();
}

/// The kinds of single-record-variable files (records are not padded).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Single {
    /// `short only(time, x=3)`: 6-byte records.
    Short,
    /// `byte only(time)`: 1-byte records.
    Byte,
    /// `char only(time, strlen=5)`: 5-byte records.
    Char,
    /// `double only(time, x=3)`: 24-byte records (already aligned).
    Double,
    /// `ushort only(time, x=3)` (CDF-5 only): 6-byte records.
    UShort,
}

/// Writes a file whose only record variable is of the given kind, with fixed variables around
/// it and `nrecs` records.
pub(crate) fn write_single(path: &Path, fmt: Fmt, kind: Single, nrecs: usize) {
    let mut f = netcdf::create_with(path, fmt.options()).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 3).unwrap();
    f.add_dimension("strlen", 5).unwrap();
    f.add_variable::<i16>("before", &["x"]).unwrap();
    match kind {
        Single::Short => {
            f.add_variable::<i16>("only", &["time", "x"]).unwrap();
        }
        Single::Byte => {
            f.add_variable::<i8>("only", &["time"]).unwrap();
        }
        Single::Char => {
            f.add_variable_with_type("only", &["time", "strlen"], &NcVariableType::Char)
                .unwrap();
        }
        Single::Double => {
            f.add_variable::<f64>("only", &["time", "x"]).unwrap();
        }
        Single::UShort => {
            f.add_variable::<u16>("only", &["time", "x"]).unwrap();
        }
    }
    f.add_variable::<i8>("after", &["x"]).unwrap();
    f.enddef().unwrap();
    f.variable_mut("before")
        .unwrap()
        .put_values(&[1i16, 2, 3], ..)
        .unwrap();
    f.variable_mut("after")
        .unwrap()
        .put_values(&[4i8, 5, 6], ..)
        .unwrap();
    if nrecs > 0 {
        let mut v = f.variable_mut("only").unwrap();
        match kind {
            Single::Short => v
                .put_values(&vals::<i16>(3 * nrecs, 0), ([0, 0], [nrecs, 3]))
                .unwrap(),
            Single::Byte => v.put_values(&vals::<i8>(nrecs, 0), ([0], [nrecs])).unwrap(),
            Single::Char => v
                .put_values(&vals::<NcChar>(5 * nrecs, 0), ([0, 0], [nrecs, 5]))
                .unwrap(),
            Single::Double => v
                .put_values(&vals::<f64>(3 * nrecs, 0), ([0, 0], [nrecs, 3]))
                .unwrap(),
            Single::UShort => v
                .put_values(&vals::<u16>(3 * nrecs, 0), ([0, 0], [nrecs, 3]))
                .unwrap(),
        }
    }
    f.close().unwrap();
}

/// A CF-like file of 10 variables, the "typical file" of the header cost figure.
pub(crate) fn write_typical(path: &Path, fmt: Fmt, nrecs: usize) {
    let mut f = netcdf::create_with(path, fmt.options()).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", 18).unwrap();
    f.add_dimension("lon", 36).unwrap();
    f.add_dimension("bnds", 2).unwrap();
    f.add_attribute("Conventions", "CF-1.8").unwrap();
    f.add_attribute("title", "Typical monthly means").unwrap();
    f.add_attribute("institution", "Test Institute").unwrap();
    f.add_attribute("source", "vzarr-netcdf3 tests").unwrap();
    f.add_attribute("history", "created by write_typical")
        .unwrap();
    for (name, dims, units) in [
        ("time", vec!["time"], "days since 2000-01-01"),
        ("time_bnds", vec!["time", "bnds"], ""),
        ("lat", vec!["lat"], "degrees_north"),
        ("lat_bnds", vec!["lat", "bnds"], "degrees_north"),
        ("lon", vec!["lon"], "degrees_east"),
        ("lon_bnds", vec!["lon", "bnds"], "degrees_east"),
    ] {
        let mut v = f.add_variable::<f64>(name, &dims).unwrap();
        if !units.is_empty() {
            v.put_attribute("units", units).unwrap();
        }
        v.put_attribute("long_name", format!("{name} coordinate"))
            .unwrap();
        if name == "time" {
            v.put_attribute("calendar", "standard").unwrap();
            v.put_attribute("bounds", "time_bnds").unwrap();
        }
    }
    for (name, units) in [
        ("tas", "K"),
        ("pr", "kg m-2 s-1"),
        ("psl", "Pa"),
        ("huss", "1"),
    ] {
        let mut v = f
            .add_variable::<f32>(name, &["time", "lat", "lon"])
            .unwrap();
        v.put_attribute("standard_name", format!("{name}_standard"))
            .unwrap();
        v.put_attribute("long_name", format!("Long name of {name}"))
            .unwrap();
        v.put_attribute("units", units).unwrap();
        v.put_attribute("_FillValue", 1e20f32).unwrap();
        v.put_attribute("missing_value", 1e20f32).unwrap();
        v.put_attribute("cell_methods", "time: mean").unwrap();
    }
    f.enddef().unwrap();
    f.variable_mut("lat")
        .unwrap()
        .put_values(&vals::<f64>(18, 6), ..)
        .unwrap();
    if nrecs > 0 {
        f.variable_mut("tas")
            .unwrap()
            .put_values(
                &vals::<f32>(nrecs * 18 * 36, 0),
                ([0, 0, 0], [nrecs, 18, 36]),
            )
            .unwrap();
    }
    f.close().unwrap();
}

/// Big-endian (file) element bytes as a u64 bit pattern.
fn be_bits(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// Little-endian (native) element bytes as a u64 bit pattern.
fn le_bits(b: &[u8]) -> u64 {
    b.iter()
        .rev()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// Reads a virtual array's values through its manifest only (grid + byte ranges + fill value),
/// as element bit patterns. Checks that every stored chunk's length equals its grid shape
/// times the element size (the Zarr rule) and that chunks cover the array exactly once.
pub(crate) fn read_via_manifest(file: &[u8], a: &VirtualArray) -> ArrayD<u64> {
    let shape: Vec<usize> = a.shape().iter().map(|&s| s as usize).collect();
    let es = a.data_type.size();
    let mut out = ArrayD::<u64>::zeros(IxDyn(&shape));
    let mut covered = ArrayD::<u8>::zeros(IxDyn(&shape));
    let decode = |b: &[u8]| match a.data_type {
        DataType::FixedBytes(_) => be_bits(b),
        _ if a.endian == vzarr_core::Endian::Big => be_bits(b),
        _ => le_bits(b),
    };
    for i in 0..a.manifest.len() {
        let idx = a.grid.chunk_index(i as u64);
        let origin: Vec<usize> = a
            .grid
            .chunk_origin(&idx)
            .iter()
            .map(|&x| x as usize)
            .collect();
        let cshape: Vec<usize> = a
            .grid
            .chunk_shape(&idx)
            .iter()
            .map(|&x| x as usize)
            .collect();
        let n: usize = cshape.iter().product();
        let bytes: Vec<u8> = match a.manifest.get(i) {
            ChunkRef::Range { offset, length, .. } => {
                assert_eq!(
                    length as usize,
                    n * es,
                    "chunk {i} of shape {cshape:?}: stored length must equal the grid shape"
                );
                file[offset as usize..(offset + length) as usize].to_vec()
            }
            ChunkRef::Inline(b) => b.to_vec(),
            ChunkRef::Missing => a
                .fill_value
                .bytes_in(a.data_type.clone(), a.endian)
                .repeat(n),
        };
        let elems: Vec<u64> = bytes.chunks_exact(es).map(decode).collect();
        let chunk = ArrayD::from_shape_vec(IxDyn(&cshape), elems).unwrap();
        let valid: Vec<usize> = (0..shape.len())
            .map(|k| cshape[k].min(shape[k] - origin[k]))
            .collect();
        out.slice_each_axis_mut(|ax| {
            let k = ax.axis.index();
            Slice::from(origin[k]..origin[k] + valid[k])
        })
        .assign(&chunk.slice_each_axis(|ax| Slice::from(0..valid[ax.axis.index()])));
        covered
            .slice_each_axis_mut(|ax| {
                let k = ax.axis.index();
                Slice::from(origin[k]..origin[k] + valid[k])
            })
            .mapv_inplace(|c| c + 1);
    }
    assert!(
        covered.iter().all(|&c| c == 1),
        "chunks must cover every element exactly once"
    );
    out
}

/// What the netCDF library reads for a variable, as element bit patterns.
pub(crate) fn read_via_netcdf(v: &netcdf::Variable) -> ArrayD<u64> {
    let shape: Vec<usize> = v.dimensions().iter().map(|d| d.len()).collect();
    let es = v.vartype().size();
    let raw = v.get_raw_values(..).unwrap();
    let elems: Vec<u64> = raw.chunks_exact(es).map(le_bits).collect();
    ArrayD::from_shape_vec(IxDyn(&shape), elems).unwrap()
}

/// The fill value the netCDF library reports for a variable, as little-endian bytes.
pub(crate) fn netcdf_fill_le(v: &netcdf::Variable, dtype: DataType) -> Vec<u8> {
    fn get<T: NcTypeDescriptor + Copy>(v: &netcdf::Variable) -> T {
        v.fill_value::<T>().unwrap().expect("fill mode")
    }
    match dtype {
        DataType::Int8 => get::<i8>(v).to_le_bytes().to_vec(),
        DataType::UInt8 => get::<u8>(v).to_le_bytes().to_vec(),
        DataType::Int16 => get::<i16>(v).to_le_bytes().to_vec(),
        DataType::UInt16 => get::<u16>(v).to_le_bytes().to_vec(),
        DataType::Int32 => get::<i32>(v).to_le_bytes().to_vec(),
        DataType::UInt32 => get::<u32>(v).to_le_bytes().to_vec(),
        DataType::Int64 => get::<i64>(v).to_le_bytes().to_vec(),
        DataType::UInt64 => get::<u64>(v).to_le_bytes().to_vec(),
        DataType::Float32 => get::<f32>(v).to_le_bytes().to_vec(),
        DataType::Float64 => get::<f64>(v).to_le_bytes().to_vec(),
        DataType::FixedBytes(1) => vec![get::<NcChar>(v).0],
        other => panic!("unexpected {other:?}"),
    }
}

fn float_json(f: f64) -> Value {
    if f.is_nan() {
        json!("NaN")
    } else if f == f64::INFINITY {
        json!("Infinity")
    } else if f == f64::NEG_INFINITY {
        json!("-Infinity")
    } else {
        json!(f)
    }
}

/// An attribute as the netCDF library reads it, in our JSON convention (written here
/// independently of the scanner).
pub(crate) fn netcdf_attr_json(a: &netcdf::Attribute) -> Value {
    use netcdf::AttributeValue as A;
    match a.value().unwrap() {
        A::Uchar(x) => json!(x),
        A::Uchars(v) => json!(v),
        A::Schar(x) => json!(x),
        A::Schars(v) => json!(v),
        A::Ushort(x) => json!(x),
        A::Ushorts(v) => json!(v),
        A::Short(x) => json!(x),
        A::Shorts(v) => json!(v),
        A::Uint(x) => json!(x),
        A::Uints(v) => json!(v),
        A::Int(x) => json!(x),
        A::Ints(v) => json!(v),
        A::Ulonglong(x) => json!(x),
        A::Ulonglongs(v) => json!(v),
        A::Longlong(x) => json!(x),
        A::Longlongs(v) => json!(v),
        A::Float(x) => float_json(f64::from(x)),
        A::Floats(v) => Value::Array(v.iter().map(|&x| float_json(f64::from(x))).collect()),
        A::Double(x) => float_json(x),
        A::Doubles(v) => Value::Array(v.iter().map(|&x| float_json(x)).collect()),
        A::Str(s) => json!(s),
        A::Strs(v) => json!(v),
    }
}

/// numpy's name of the netCDF library's type of a numeric attribute (`None` for text), as the
/// netCDF view records it (`vzarr_core::netcdf`).
pub(crate) fn netcdf_attr_type(a: &netcdf::Attribute) -> Option<&'static str> {
    use netcdf::AttributeValue as A;
    Some(match a.value().unwrap() {
        A::Uchar(_) | A::Uchars(_) => "uint8",
        A::Schar(_) | A::Schars(_) => "int8",
        A::Ushort(_) | A::Ushorts(_) => "uint16",
        A::Short(_) | A::Shorts(_) => "int16",
        A::Uint(_) | A::Uints(_) => "uint32",
        A::Int(_) | A::Ints(_) => "int32",
        A::Ulonglong(_) | A::Ulonglongs(_) => "uint64",
        A::Longlong(_) | A::Longlongs(_) => "int64",
        A::Float(_) | A::Floats(_) => "float32",
        A::Double(_) | A::Doubles(_) => "float64",
        A::Str(_) | A::Strs(_) => return None,
    })
}

/// The attribute names of `attrs` (the netCDF view left out) and the recorded type of each.
pub(crate) fn user_attributes(
    attrs: &vzarr_core::Attributes,
) -> (Vec<String>, std::collections::BTreeMap<String, String>) {
    let names = attrs
        .keys()
        .filter(|k| *k != vzarr_core::netcdf::NETCDF_KEY)
        .cloned()
        .collect();
    let types = attrs
        .get(vzarr_core::netcdf::NETCDF_KEY)
        .and_then(|v| v.get("attribute_types"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    (names, types)
}

/// A NetCDF3 header written by hand, for files the netCDF library would never write.
pub(crate) struct Hb {
    pub(crate) version: u8,
    pub(crate) buf: Vec<u8>,
}

impl Hb {
    pub(crate) fn new(version: u8) -> Self {
        Hb {
            version,
            buf: vec![b'C', b'D', b'F', version],
        }
    }
    pub(crate) fn u32(&mut self, x: u32) -> &mut Self {
        self.buf.extend_from_slice(&x.to_be_bytes());
        self
    }
    pub(crate) fn u64(&mut self, x: u64) -> &mut Self {
        self.buf.extend_from_slice(&x.to_be_bytes());
        self
    }
    /// A NON_NEG count: 64-bit in CDF-5.
    pub(crate) fn count(&mut self, x: u64) -> &mut Self {
        if self.version == 5 {
            self.u64(x)
        } else {
            self.u32(x as u32)
        }
    }
    /// An OFFSET: 32-bit in CDF-1.
    pub(crate) fn offset(&mut self, x: u64) -> &mut Self {
        if self.version == 1 {
            self.u32(x as u32)
        } else {
            self.u64(x)
        }
    }
    pub(crate) fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    pub(crate) fn pad(&mut self) -> &mut Self {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
        self
    }
    pub(crate) fn name(&mut self, s: &[u8]) -> &mut Self {
        self.count(s.len() as u64).raw(s).pad()
    }
    pub(crate) fn absent(&mut self) -> &mut Self {
        self.u32(0).count(0)
    }
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
}

/// An attribute for [`Spec`]: name, nc_type, count and big-endian value bytes (unpadded).
#[derive(Clone, Debug)]
pub(crate) struct SAttr {
    pub(crate) name: Vec<u8>,
    pub(crate) ty: u32,
    pub(crate) count: u64,
    pub(crate) raw: Vec<u8>,
}

impl SAttr {
    pub(crate) fn text(name: &str, v: &str) -> Self {
        SAttr {
            name: name.into(),
            ty: 2,
            count: v.len() as u64,
            raw: v.as_bytes().to_vec(),
        }
    }
    pub(crate) fn ints(name: &str, v: &[i32]) -> Self {
        SAttr {
            name: name.into(),
            ty: 4,
            count: v.len() as u64,
            raw: v.iter().flat_map(|x| x.to_be_bytes()).collect(),
        }
    }
    pub(crate) fn doubles(name: &str, v: &[f64]) -> Self {
        SAttr {
            name: name.into(),
            ty: 6,
            count: v.len() as u64,
            raw: v.iter().flat_map(|x| x.to_be_bytes()).collect(),
        }
    }
}

/// A variable for [`Spec`].
#[derive(Clone, Debug)]
pub(crate) struct SVar {
    pub(crate) name: Vec<u8>,
    pub(crate) dimids: Vec<u64>,
    pub(crate) attrs: Vec<SAttr>,
    pub(crate) ty: u32,
    /// `None`: computed like netcdf-c.
    pub(crate) vsize: Option<u64>,
    /// `None`: laid out like netcdf-c.
    pub(crate) begin: Option<u64>,
}

impl SVar {
    pub(crate) fn new(name: &str, ty: u32, dimids: &[u64]) -> Self {
        SVar {
            name: name.into(),
            dimids: dimids.to_vec(),
            attrs: vec![],
            ty,
            vsize: None,
            begin: None,
        }
    }
}

/// A whole NetCDF3 file described by hand; [`Spec::build`] lays it out like netcdf-c
/// (non-record variables after the header, then the records) and fills the data section
/// with a byte pattern.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub(crate) version: u8,
    /// `None`: write STREAMING.
    pub(crate) numrecs: Option<u64>,
    pub(crate) dims: Vec<(Vec<u8>, u64)>,
    pub(crate) gatts: Vec<SAttr>,
    pub(crate) vars: Vec<SVar>,
}

pub(crate) fn type_size(ty: u32) -> u64 {
    match ty {
        1 | 2 | 7 => 1,
        3 | 8 => 2,
        4 | 5 | 9 => 4,
        6 | 10 | 11 => 8,
        _ => 1,
    }
}

impl Spec {
    pub(crate) fn new(version: u8) -> Self {
        Spec {
            version,
            numrecs: Some(0),
            dims: vec![],
            gatts: vec![],
            vars: vec![],
        }
    }

    fn is_rec(&self, v: &SVar) -> bool {
        v.dimids
            .first()
            .and_then(|&d| self.dims.get(d as usize))
            .is_some_and(|d| d.1 == 0)
    }

    /// Unpadded bytes (saturating: hostile shapes are allowed here).
    fn slab(&self, v: &SVar) -> u64 {
        let mut n = type_size(v.ty);
        for (k, &d) in v.dimids.iter().enumerate() {
            let len = self.dims.get(d as usize).map_or(1, |d| d.1);
            if !(k == 0 && len == 0) {
                n = n.saturating_mul(len);
            }
        }
        n
    }

    fn padded(&self, v: &SVar) -> u64 {
        let s = self.slab(v);
        s.checked_next_multiple_of(4).unwrap_or(s)
    }

    fn header(&self, begins: &[u64]) -> Vec<u8> {
        let mut h = Hb::new(self.version);
        match self.numrecs {
            Some(n) => h.count(n),
            None if self.version == 5 => h.u64(u64::MAX),
            None => h.u32(u32::MAX),
        };
        if self.dims.is_empty() {
            h.absent();
        } else {
            h.u32(0x0A).count(self.dims.len() as u64);
            for (name, len) in &self.dims {
                h.name(name).count(*len);
            }
        }
        att_list(&mut h, &self.gatts);
        if self.vars.is_empty() {
            h.absent();
        } else {
            h.u32(0x0B).count(self.vars.len() as u64);
            for (v, &b) in self.vars.iter().zip(begins) {
                h.name(&v.name).count(v.dimids.len() as u64);
                for &d in &v.dimids {
                    h.count(d);
                }
                att_list(&mut h, &v.attrs);
                let vsize = v.vsize.unwrap_or(self.padded(v));
                h.u32(v.ty).count(vsize).offset(b);
            }
        }
        h.buf
    }

    /// The file bytes and the begin of every variable; the data section is a byte pattern,
    /// cut at 1 MiB (hostile shapes would ask for more).
    pub(crate) fn build(&self) -> (Vec<u8>, Vec<u64>) {
        let header_len = self.header(&vec![0; self.vars.len()]).len() as u64;
        let mut begins = vec![0u64; self.vars.len()];
        let mut at = header_len;
        for (i, v) in self.vars.iter().enumerate() {
            if !self.is_rec(v) {
                begins[i] = v.begin.unwrap_or(at);
                at = at.saturating_add(self.padded(v));
            }
        }
        let recs: Vec<usize> = (0..self.vars.len())
            .filter(|&i| self.is_rec(&self.vars[i]))
            .collect();
        let mut recsize: u64 = recs.iter().fold(0u64, |acc, &i| {
            acc.saturating_add(self.padded(&self.vars[i]))
        });
        if recs.len() == 1 {
            recsize = self.slab(&self.vars[recs[0]]);
        }
        let rec_start = at;
        for &i in &recs {
            begins[i] = self.vars[i].begin.unwrap_or(at);
            at = at.saturating_add(self.padded(&self.vars[i]));
        }
        let numrecs = self.numrecs.unwrap_or(0);
        let data_end = rec_start.saturating_add(numrecs.saturating_mul(recsize));
        let mut bytes = self.header(&begins);
        let end = data_end
            .max(bytes.len() as u64)
            .min(bytes.len() as u64 + (1 << 20));
        let mut k: u8 = 0;
        while (bytes.len() as u64) < end {
            bytes.push(k);
            k = k.wrapping_add(37);
        }
        (bytes, begins)
    }
}

fn att_list(h: &mut Hb, attrs: &[SAttr]) {
    if attrs.is_empty() {
        h.absent();
        return;
    }
    h.u32(0x0C).count(attrs.len() as u64);
    for a in attrs {
        h.name(&a.name).u32(a.ty).count(a.count).raw(&a.raw).pad();
    }
}
