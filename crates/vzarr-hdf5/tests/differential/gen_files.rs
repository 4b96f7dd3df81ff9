//! Files written here for what the scanner maps beyond the file structure: every data type
//! and byte order with fill values and `_FillValue` attributes of every kind, attributes of
//! every kind (null dataspaces, empty arrays, vlen strings, enums, half floats), chunks stored
//! with filters skipped (direct chunk writes, edge chunks with garbage padding), dimension
//! scales with classic and new-style references (partial, wrong rank, unreachable targets,
//! the root group), phony dimensions, a dataset that shrank, contiguous datasets around the
//! split size, netCDF-4 files with groups and every attribute type.

use std::path::{Path, PathBuf};

use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{
    H5T_IEEE_F32BE, H5T_IEEE_F32LE, H5T_IEEE_F64BE, H5T_IEEE_F64LE, H5T_STD_I8LE, H5T_STD_I16BE,
    H5T_STD_I16LE, H5T_STD_I32BE, H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_U8LE, H5T_STD_U16LE,
    H5T_STD_U64BE, H5T_STD_U64LE, H5T_str_t,
};

use crate::generated::{Ver, create};
use crate::raw::{
    Flt, Lay, Space, attr, close_dataset, close_type, compound_type, dataset, enum_type,
    fixed_string, float16, vlen_string_attr,
};

mod chunks;
mod dims;
mod links;

/// Every file of this module, written into `dir`.
pub(crate) fn all(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for ver in [Ver::Earliest, Ver::Latest] {
        out.push(mapping(dir, ver));
        out.push(chunks::masked(dir, ver));
        out.push(dims::dims(dir, ver));
        out.push(chunks::shrunk(dir, ver));
        out.push(links::links(dir, ver));
    }
    out.push(chunks::contiguous(dir));
    out.push(dims::netcdf4(dir, false));
    out.push(dims::netcdf4(dir, true));
    out
}

pub(crate) fn tag(ver: Ver) -> &'static str {
    match ver {
        Ver::Earliest => "earliest",
        Ver::V18 => "v18",
        Ver::Latest => "latest",
    }
}

/// Little-endian or big-endian bytes of values.
pub(crate) fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The root id of an open file.
pub(crate) fn id(f: &hdf5::File) -> hid_t {
    f.id()
}

/// Attributes of every kind on `loc`.
fn all_attributes(loc: hid_t) {
    let s = Space::Scalar;
    attr(loc, "i8", *H5T_STD_I8LE, &s, &[0xfe]);
    attr(
        loc,
        "u64s",
        *H5T_STD_U64LE,
        &Space::dims(&[2]),
        &le(&[0u64, u64::MAX], u64::to_le_bytes),
    );
    attr(loc, "u64_be", *H5T_STD_U64BE, &s, &u64::MAX.to_be_bytes());
    attr(
        loc,
        "i64",
        *H5T_STD_I64LE,
        &Space::dims(&[1]),
        &(-1i64).to_le_bytes(),
    );
    attr(loc, "f32_nan", *H5T_IEEE_F32LE, &s, &f32::NAN.to_le_bytes());
    attr(
        loc,
        "f64s",
        *H5T_IEEE_F64LE,
        &Space::dims(&[3]),
        &le(&[f64::INFINITY, f64::NEG_INFINITY, 1.5], f64::to_le_bytes),
    );
    attr(
        loc,
        "i32_be",
        *H5T_STD_I32BE,
        &Space::dims(&[3]),
        &le(&[1i32, -2, 70000], i32::to_be_bytes),
    );
    attr(loc, "f64_be", *H5T_IEEE_F64BE, &s, &0.1f64.to_be_bytes());
    attr(
        loc,
        "f32_be",
        *H5T_IEEE_F32BE,
        &Space::dims(&[2]),
        &le(&[1.5f32, -0.0], f32::to_be_bytes),
    );
    for be in [false, true] {
        let t = float16(be);
        let v: [u8; 4] = if be {
            [0x3c, 0x00, 0xc0, 0x00]
        } else {
            [0x00, 0x3c, 0x00, 0xc0]
        };
        attr(
            loc,
            if be { "f16_be" } else { "f16" },
            t,
            &Space::dims(&[2]),
            &v,
        );
        close_type(t);
    }
    let b = enum_type(*H5T_STD_I8LE, &[("FALSE", &[0]), ("TRUE", &[1])]);
    attr(loc, "bool", b, &s, &[1]);
    attr(loc, "bools", b, &Space::dims(&[3]), &[1, 0, 1]);
    close_type(b);
    let e = enum_type(*H5T_STD_I16LE, &[("red", &[0, 0]), ("blue", &[7, 1])]);
    attr(loc, "enum16", e, &Space::dims(&[2]), &[7, 1, 0, 0]);
    close_type(e);
    for (name, pad) in [
        ("s_nullterm", H5T_str_t::H5T_STR_NULLTERM),
        ("s_nullpad", H5T_str_t::H5T_STR_NULLPAD),
        ("s_spacepad", H5T_str_t::H5T_STR_SPACEPAD),
    ] {
        let t = fixed_string(6, pad);
        attr(loc, name, t, &s, b"ab cd\0");
        attr(
            loc,
            &format!("{name}_array"),
            t,
            &Space::dims(&[2]),
            b"x\0\0\0\0\0y z   ",
        );
        attr(loc, &format!("{name}_null"), t, &Space::Null, &[]);
        close_type(t);
    }
    vlen_string_attr(loc, "vlen", &s, &["text é"]);
    vlen_string_attr(loc, "vlens", &Space::dims(&[3]), &["a", "", "ccc"]);
    vlen_string_attr(loc, "vlen_null", &Space::Null, &[]);
    attr(loc, "int_null", *H5T_STD_I32LE, &Space::Null, &[]);
    attr(loc, "float_null", *H5T_IEEE_F64LE, &Space::Null, &[]);
    attr(loc, "int_empty", *H5T_STD_I32LE, &Space::dims(&[0]), &[]);
    let c = compound_type();
    attr(loc, "compound", c, &s, &[1, 0, 0, 0]);
    close_type(c);
}

/// One fixed-size dataset per data type and layout, with fill values, `_FillValue`
/// attributes of every kind, and the datasets the scanner must refuse.
fn mapping(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("mapping_{}.h5", tag(ver)));
    let f = create(&p, ver, |_| {});
    let root = id(&f);
    all_attributes(root);
    let grp = f.create_group("d").unwrap();
    let g = grp.id();
    let chunked = |c: &[u64]| Lay::Chunked(c.to_vec());
    let n12 = Space::dims(&[3, 4]);
    let close = |d: hid_t| close_dataset(d);

    let d = dataset(
        g,
        "i16_be",
        *H5T_STD_I16BE,
        &n12,
        &Lay::Contiguous,
        &[],
        Some(&(-5i16).to_be_bytes()),
        Some(&le(&[7i16; 12], i16::to_be_bytes)),
    );
    attr(
        d,
        "_FillValue",
        *H5T_STD_I16BE,
        &Space::Scalar,
        &(-5i16).to_be_bytes(),
    );
    all_attributes(d);
    close(d);
    let d = dataset(
        g,
        "u8",
        *H5T_STD_U8LE,
        &n12,
        &chunked(&[2, 3]),
        &[Flt::Deflate(1)],
        None,
        Some(&[3u8; 12]),
    );
    attr(
        d,
        "_FillValue",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &300i32.to_le_bytes(),
    );
    close(d);
    let t = float16(false);
    let d = dataset(
        g,
        "f16",
        t,
        &n12,
        &chunked(&[2, 2]),
        &[Flt::Shuffle, Flt::Deflate(2)],
        Some(&[0x00, 0x3e]),
        Some(&[0x00, 0x3c].repeat(12)),
    );
    attr(d, "_FillValue", t, &Space::Scalar, &[0x00, 0x3e]);
    close(d);
    close_type(t);
    let t = float16(true);
    let d = dataset(
        g,
        "f16_be",
        t,
        &n12,
        &Lay::Contiguous,
        &[],
        None,
        Some(&[0x3c, 0x00].repeat(12)),
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F64LE,
        &Space::Scalar,
        &0.5f64.to_le_bytes(),
    );
    close(d);
    close_type(t);
    let d = dataset(
        g,
        "f32_be",
        *H5T_IEEE_F32BE,
        &n12,
        &chunked(&[2, 3]),
        &[Flt::Shuffle, Flt::Deflate(4), Flt::Fletcher32],
        Some(&1e20f32.to_be_bytes()),
        Some(&le(&[1.25f32; 12], f32::to_be_bytes)),
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F32BE,
        &Space::Scalar,
        &1e20f32.to_be_bytes(),
    );
    attr(
        d,
        "missing_value",
        *H5T_IEEE_F32BE,
        &Space::dims(&[1]),
        &1e20f32.to_be_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "f64_int_fill",
        *H5T_IEEE_F64LE,
        &n12,
        &Lay::Contiguous,
        &[],
        Some(&(-999f64).to_le_bytes()),
        None,
    );
    attr(
        d,
        "_FillValue",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &(-999i32).to_le_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "f64_nan_be_fill",
        *H5T_IEEE_F64LE,
        &n12,
        &chunked(&[3, 4]),
        &[],
        Some(&f64::NAN.to_le_bytes()),
        None,
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F64BE,
        &Space::Scalar,
        &f64::NAN.to_be_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "f32_fill_array",
        *H5T_IEEE_F32LE,
        &n12,
        &Lay::Contiguous,
        &[],
        None,
        Some(&[0u8; 48]),
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F32LE,
        &Space::dims(&[2]),
        &le(&[1.0f32, 2.0], f32::to_le_bytes),
    );
    close(d);
    let d = dataset(
        g,
        "f32_fill_text",
        *H5T_IEEE_F32LE,
        &Space::dims(&[2]),
        &Lay::Compact,
        &[],
        None,
        Some(&[0u8; 8]),
    );
    vlen_string_attr(d, "_FillValue", &Space::Scalar, &["abc"]);
    close(d);
    let d = dataset(
        g,
        "i16_fraction_fill",
        *H5T_STD_I16LE,
        &Space::dims(&[4]),
        &Lay::Compact,
        &[],
        None,
        Some(&[1u8; 8]),
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F64LE,
        &Space::Scalar,
        &2.5f64.to_le_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "i16_whole_float_fill",
        *H5T_STD_I16LE,
        &Space::dims(&[4]),
        &Lay::Contiguous,
        &[],
        None,
        Some(&[1u8; 8]),
    );
    attr(
        d,
        "_FillValue",
        *H5T_IEEE_F64LE,
        &Space::Scalar,
        &(-3.0f64).to_le_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "u64_max_fill",
        *H5T_STD_U64LE,
        &Space::dims(&[4]),
        &chunked(&[2]),
        &[],
        Some(&u64::MAX.to_le_bytes()),
        None,
    );
    attr(
        d,
        "_FillValue",
        *H5T_STD_U64LE,
        &Space::Scalar,
        &u64::MAX.to_le_bytes(),
    );
    close(d);
    let d = dataset(
        g,
        "i32_null_fill",
        *H5T_STD_I32LE,
        &Space::dims(&[4]),
        &Lay::Contiguous,
        &[],
        None,
        None,
    );
    attr(d, "_FillValue", *H5T_STD_I32LE, &Space::Null, &[]);
    close(d);
    let b = enum_type(*H5T_STD_I8LE, &[("FALSE", &[0]), ("TRUE", &[1])]);
    let d = dataset(
        g,
        "bool",
        b,
        &n12,
        &chunked(&[2, 2]),
        &[Flt::Deflate(1)],
        Some(&[1]),
        Some(&[0, 1].repeat(6)),
    );
    attr(d, "_FillValue", b, &Space::Scalar, &[1]);
    close(d);
    let d = dataset(
        g,
        "bool_int_fill",
        b,
        &Space::dims(&[3]),
        &Lay::Contiguous,
        &[],
        None,
        Some(&[1, 1, 0]),
    );
    attr(d, "_FillValue", *H5T_STD_U8LE, &Space::Scalar, &[1]);
    close(d);
    close_type(b);
    let e = enum_type(
        *H5T_STD_I32BE,
        &[("a", &[0, 0, 0, 1]), ("b", &[0, 0, 0, 2])],
    );
    let d = dataset(
        g,
        "enum_be",
        e,
        &Space::dims(&[3]),
        &Lay::Contiguous,
        &[],
        Some(&[0, 0, 0, 2]),
        Some(&[0, 0, 0, 1].repeat(3)),
    );
    close(d);
    close_type(e);
    let t = fixed_string(4, H5T_str_t::H5T_STR_NULLPAD);
    let d = dataset(
        g,
        "s4",
        t,
        &Space::dims(&[5]),
        &chunked(&[2]),
        &[],
        Some(b"ab\0\0"),
        Some(b"abcdxy\0\0z\0\0\0ppppqq\0\0"),
    );
    attr(d, "_FillValue", t, &Space::Scalar, b"xy\0\0");
    close(d);
    close_type(t);
    let t = fixed_string(4, H5T_str_t::H5T_STR_SPACEPAD);
    close(dataset(
        g,
        "s4_spacepad",
        t,
        &Space::dims(&[2]),
        &Lay::Contiguous,
        &[],
        None,
        Some(b"ab  cd  "),
    ));
    close_type(t);
    let c = compound_type();
    close(dataset(
        g,
        "compound",
        c,
        &Space::dims(&[2]),
        &Lay::Contiguous,
        &[],
        None,
        Some(&[0u8; 8]),
    ));
    close_type(c);
    close(dataset(
        g,
        "null_space",
        *H5T_STD_I32LE,
        &Space::Null,
        &Lay::Contiguous,
        &[],
        None,
        None,
    ));
    close(dataset(
        g,
        "scalar_contig",
        *H5T_IEEE_F64BE,
        &Space::Scalar,
        &Lay::Contiguous,
        &[],
        Some(&1.0f64.to_be_bytes()),
        Some(&3.25f64.to_be_bytes()),
    ));
    close(dataset(
        g,
        "scalar_compact",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &Lay::Compact,
        &[],
        None,
        Some(&(-7i32).to_le_bytes()),
    ));
    close(dataset(
        g,
        "scalar_unwritten",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &Lay::Contiguous,
        &[],
        Some(&5i32.to_le_bytes()),
        None,
    ));
    close(dataset(
        g,
        "compact_2d",
        *H5T_STD_U16LE,
        &n12,
        &Lay::Compact,
        &[],
        None,
        Some(&le(&[9u16; 12], u16::to_le_bytes)),
    ));
    close(dataset(
        g,
        "empty_1d",
        *H5T_IEEE_F32LE,
        &Space::dims(&[0]),
        &Lay::Contiguous,
        &[],
        None,
        None,
    ));
    close(dataset(
        g,
        "empty_compact",
        *H5T_IEEE_F32LE,
        &Space::dims(&[0, 3]),
        &Lay::Compact,
        &[],
        None,
        None,
    ));
    close(dataset(
        g,
        "empty_chunked",
        *H5T_STD_I32LE,
        &Space::Simple(vec![0, 4], Some(vec![u64::MAX, 4])),
        &chunked(&[2, 2]),
        &[],
        None,
        None,
    ));
    close(dataset(
        g,
        "unwritten_chunked",
        *H5T_STD_I16LE,
        &Space::dims(&[10, 10]),
        &chunked(&[3, 3]),
        &[Flt::Deflate(3)],
        Some(&(-1i16).to_le_bytes()),
        None,
    ));
    close(dataset(
        g,
        "unwritten_contig",
        *H5T_IEEE_F32LE,
        &Space::dims(&[10]),
        &Lay::Contiguous,
        &[],
        Some(&2.5f32.to_le_bytes()),
        None,
    ));
    drop(grp);
    f.close().unwrap();
    p
}
