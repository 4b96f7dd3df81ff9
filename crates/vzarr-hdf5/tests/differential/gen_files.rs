//! Files written here for what the scanner maps beyond the file structure: every data type
//! and byte order with fill values and `_FillValue` attributes of every kind, attributes of
//! every kind (null dataspaces, empty arrays, vlen strings, enums, half floats), chunks stored
//! with filters skipped (direct chunk writes, edge chunks with garbage padding), dimension
//! scales with classic and new-style references (partial, wrong rank, unreachable targets,
//! the root group), phony dimensions, a dataset that shrank, contiguous datasets around the
//! split size, netCDF-4 files with groups and every attribute type.

use std::path::{Path, PathBuf};

use hdf5::plist::dataset_create::ChunkOpts;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{
    H5T_IEEE_F32BE, H5T_IEEE_F32LE, H5T_IEEE_F64BE, H5T_IEEE_F64LE, H5T_STD_I8LE, H5T_STD_I16BE,
    H5T_STD_I16LE, H5T_STD_I32BE, H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_U8LE, H5T_STD_U16LE,
    H5T_STD_U64BE, H5T_STD_U64LE, H5T_str_t,
};
use vzarr_codec::ByteCodecs;
use vzarr_core::Codec;

use crate::generated::{Ver, create};
use crate::raw::{
    Flt, Lay, Space, attr, close_dataset, close_type, compound_type, copy_type, dataset,
    dimension_list, enum_type, fixed_string, float16, set_extent, string_attr, unlink,
    vlen_string_attr, write_chunk,
};

/// Every file of this module, written into `dir`.
pub(crate) fn all(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for ver in [Ver::Earliest, Ver::Latest] {
        out.push(mapping(dir, ver));
        out.push(masked(dir, ver));
        out.push(dims(dir, ver));
        out.push(shrunk(dir, ver));
    }
    out.push(contiguous(dir));
    out.push(netcdf4(dir, false));
    out.push(netcdf4(dir, true));
    out
}

fn tag(ver: Ver) -> &'static str {
    match ver {
        Ver::Earliest => "earliest",
        Ver::V18 => "v18",
        Ver::Latest => "latest",
    }
}

/// Little-endian or big-endian bytes of values.
fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The root id of an open file.
fn id(f: &hdf5::File) -> hid_t {
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

/// Encodes `raw` with the codecs of `chain` whose bit in `mask` is clear (what HDF5 stores
/// for a chunk written with those filters skipped).
fn encode_masked(chain: &[Codec], mask: u32, raw: &[u8]) -> Vec<u8> {
    let applied: Vec<Codec> = chain
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) == 0)
        .map(|(_, c)| c.clone())
        .collect();
    ByteCodecs::new(&applied).unwrap().encode(raw).unwrap()
}

/// Chunks stored with filters skipped: every mask of a three-filter pipeline, edge chunks
/// whose padding holds garbage, big-endian elements, three dimensions, an unlimited axis.
fn masked(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("masked_{}.h5", tag(ver)));
    let f = create(&p, ver, |_| {});
    let root = id(&f);
    // (10, 12) int32, chunks (4, 5): edge chunks on both axes.
    let values: Vec<i32> = (0..120).map(|i| i * 3 - 50).collect();
    let d = dataset(
        root,
        "m2d",
        *H5T_STD_I32LE,
        &Space::dims(&[10, 12]),
        &Lay::Chunked(vec![4, 5]),
        &[Flt::Shuffle, Flt::Deflate(4), Flt::Fletcher32],
        Some(&(-9i32).to_le_bytes()),
        Some(&le(&values, i32::to_le_bytes)),
    );
    let chain = [
        Codec::Shuffle { element_size: 4 },
        Codec::Zlib { level: 4 },
        Codec::Fletcher32,
    ];
    // A chunk's full 4x5 block; past the array's edge, garbage.
    let block = |ci: u64, cj: u64| -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..4 {
            for j in 0..5 {
                let (r, c) = (ci * 4 + i, cj * 5 + j);
                let v = if r < 10 && c < 12 {
                    1000 + (r * 12 + c) as i32
                } else {
                    0x5a5a_5a5a
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    };
    for (ci, cj, mask) in [
        (0, 0, 0b010),
        (0, 1, 0b111),
        (1, 0, 0b100),
        (1, 1, 0b001),
        (2, 2, 0b011),
        (2, 0, 0b110),
        (0, 2, 0b101),
    ] {
        let raw = block(ci, cj);
        write_chunk(
            d,
            &[ci * 4, cj * 5],
            mask,
            &encode_masked(&chain, mask, &raw),
        );
    }
    close_dataset(d);
    // Big-endian float64 (7,), chunks (3,), deflate; the edge chunk raw with garbage.
    let d = dataset(
        root,
        "m_be",
        *H5T_IEEE_F64BE,
        &Space::dims(&[7]),
        &Lay::Chunked(vec![3]),
        &[Flt::Deflate(6)],
        Some(&9.5f64.to_be_bytes()),
        Some(&le(
            &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            f64::to_be_bytes,
        )),
    );
    write_chunk(
        d,
        &[6],
        1,
        &le(&[70.0f64, f64::NAN, -1.0], f64::to_be_bytes),
    );
    close_dataset(d);
    // uint16 (5, 4, 3), chunks (2, 2, 2), deflate; an edge chunk and an inner one masked,
    // the rest never written.
    let d = dataset(
        root,
        "m3d",
        *H5T_STD_U16LE,
        &Space::dims(&[5, 4, 3]),
        &Lay::Chunked(vec![2, 2, 2]),
        &[Flt::Deflate(1)],
        Some(&7u16.to_le_bytes()),
        None,
    );
    let raw: Vec<u8> = le(
        &(0..8u16).map(|i| 100 + i).collect::<Vec<_>>(),
        u16::to_le_bytes,
    );
    write_chunk(d, &[4, 2, 2], 1, &raw);
    write_chunk(d, &[0, 0, 0], 1, &raw);
    let enc = encode_masked(&[Codec::Zlib { level: 1 }], 0, &raw);
    write_chunk(d, &[2, 2, 0], 0, &enc);
    close_dataset(d);
    // An unlimited axis (extensible array under the latest format), deflate + fletcher32.
    let d = dataset(
        root,
        "m_unlimited",
        *H5T_STD_I16LE,
        &Space::Simple(vec![9], Some(vec![u64::MAX])),
        &Lay::Chunked(vec![4]),
        &[Flt::Deflate(2), Flt::Fletcher32],
        None,
        Some(&le(&[5i16; 9], i16::to_le_bytes)),
    );
    let chain = [Codec::Zlib { level: 2 }, Codec::Fletcher32];
    write_chunk(
        d,
        &[8],
        0b01,
        &encode_masked(&chain, 0b01, &le(&[1i16, 2, 3, 4], i16::to_le_bytes)),
    );
    write_chunk(
        d,
        &[0],
        0b10,
        &encode_masked(&chain, 0b10, &le(&[-1i16, -2, -3, -4], i16::to_le_bytes)),
    );
    close_dataset(d);
    // Edge chunks stored unfiltered because of the dataset's option (their filter mask says
    // so), deflate + shuffle.
    let e = f
        .new_dataset_builder()
        .obj_track_times(false)
        .chunk((4, 4))
        .shuffle()
        .deflate(5)
        .chunk_opts(ChunkOpts::DONT_FILTER_PARTIAL_CHUNKS)
        .with_data(&ndarray::Array2::from_shape_fn((10, 7), |(i, j)| {
            (i * 7 + j) as u32
        }))
        .create("dont_filter_partial");
    drop(e);
    f.close().unwrap();
    p
}

/// Dimension scales (classic and new-style references, partial lists, wrong ranks,
/// unreachable targets, the root group, other groups' scales, unlimited and dimension-only
/// scales) and phony dimensions.
fn dims(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("dims_{}.h5", tag(ver)));
    let f = create(&p, ver, |_| {});
    let root = id(&f);
    let scale = |loc: hid_t, name: &str, space: Space, netcdf_name: Option<&str>| {
        let n = match &space {
            Space::Simple(d, _) => d[0] as usize,
            _ => 1,
        };
        let lay = match &space {
            Space::Simple(_, Some(_)) => Lay::Chunked(vec![2]),
            _ => Lay::Contiguous,
        };
        let d = dataset(
            loc,
            name,
            *H5T_IEEE_F64LE,
            &space,
            &lay,
            &[],
            None,
            Some(&le(&vec![1.5f64; n], f64::to_le_bytes)),
        );
        string_attr(d, "CLASS", "DIMENSION_SCALE");
        string_attr(d, "NAME", netcdf_name.unwrap_or(name));
        d
    };
    let x = scale(root, "x", Space::dims(&[4]), None);
    let y = scale(root, "y", Space::dims(&[3]), None);
    let t = scale(
        root,
        "t",
        Space::Simple(vec![5], Some(vec![u64::MAX])),
        None,
    );
    let only = scale(
        root,
        "dimonly",
        Space::dims(&[6]),
        Some("This is a netCDF dimension but not a netCDF variable         6"),
    );
    let only_unlim = scale(
        root,
        "rec",
        Space::Simple(vec![2], Some(vec![u64::MAX])),
        Some("This is a netCDF dimension but not a netCDF variable         2"),
    );
    attr(
        x,
        "units",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &1i32.to_le_bytes(),
    );
    for d in [x, y, t, only, only_unlim] {
        close_dataset(d);
    }
    let grid = f.create_group("grid").unwrap();
    let lat = scale(grid.id(), "lat", Space::dims(&[4]), None);
    close_dataset(lat);
    let arr = |loc: hid_t, name: &str, dims: &[u64]| {
        let n: u64 = dims.iter().product();
        dataset(
            loc,
            name,
            *H5T_IEEE_F32LE,
            &Space::dims(dims),
            &Lay::Contiguous,
            &[],
            None,
            Some(&vec![0u8; n as usize * 4]),
        )
    };
    for (name, classic) in [("v_classic", true), ("v_new", false)] {
        let d = arr(root, name, &[4, 3]);
        dimension_list(root, d, &[Some("/x"), Some("/y")], classic);
        close_dataset(d);
    }
    let d = arr(root, "partial", &[4, 3]);
    dimension_list(root, d, &[None, Some("/y")], true);
    close_dataset(d);
    let d = arr(root, "wrong_rank", &[4, 3]);
    dimension_list(root, d, &[Some("/x")], true);
    close_dataset(d);
    let d = arr(root, "to_root", &[4]);
    dimension_list(root, d, &[Some("/")], true);
    close_dataset(d);
    let d = arr(root, "cross_group", &[4, 5]);
    dimension_list(root, d, &[Some("/grid/lat"), Some("/t")], false);
    close_dataset(d);
    let d = arr(root, "gone_target", &[2]);
    let gone = arr(root, "gone", &[2]);
    close_dataset(gone);
    dimension_list(root, d, &[Some("/gone")], true);
    close_dataset(d);
    // A two-dimensional scale with a DIMENSION_LIST of its own.
    let d = arr(root, "scale2d", &[4, 3]);
    string_attr(d, "CLASS", "DIMENSION_SCALE");
    string_attr(d, "NAME", "scale2d");
    dimension_list(root, d, &[Some("/x"), None], true);
    close_dataset(d);
    // Phony dimensions: shared within a group by length, never twice in one array.
    for (name, shape) in [
        ("p_a", vec![3, 3]),
        ("p_b", vec![3, 7]),
        ("p_c", vec![7, 3, 3]),
        ("p_scalar", vec![]),
    ] {
        let d = if shape.is_empty() {
            dataset(
                root,
                name,
                *H5T_STD_I32LE,
                &Space::Scalar,
                &Lay::Contiguous,
                &[],
                None,
                Some(&[0; 4]),
            )
        } else {
            arr(root, name, &shape)
        };
        close_dataset(d);
    }
    for gname in ["g1", "g1/sub", "g2"] {
        let g = f.create_group(gname).unwrap();
        for (name, shape) in [("a", vec![3, 3]), ("b", vec![4, 7])] {
            close_dataset(arr(g.id(), name, &shape));
        }
        // A scale of the root group seen from a subgroup.
        let d = arr(g.id(), "uses_x", &[4, 4]);
        dimension_list(root, d, &[Some("/x"), Some("/x")], true);
        close_dataset(d);
    }
    drop(grid);
    // Last, so that no later object takes its place: the reference now points at an object
    // no link reaches.
    unlink(root, "gone");
    f.close().unwrap();
    p
}

/// A chunked dataset that shrank: chunks past the new extent stay in the index.
fn shrunk(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("shrunk_{}.h5", tag(ver)));
    let f = create(&p, ver, |_| {});
    let root = id(&f);
    let d = dataset(
        root,
        "shrunk",
        *H5T_STD_I32LE,
        &Space::Simple(vec![10, 6], Some(vec![u64::MAX, u64::MAX])),
        &Lay::Chunked(vec![2, 4]),
        &[],
        None,
        Some(&le(&(0..60).collect::<Vec<i32>>(), i32::to_le_bytes)),
    );
    set_extent(d, &[5, 3]);
    close_dataset(d);
    let d = dataset(
        root,
        "shrunk_deflate",
        *H5T_STD_I16LE,
        &Space::Simple(vec![9], Some(vec![u64::MAX])),
        &Lay::Chunked(vec![2]),
        &[Flt::Deflate(1)],
        None,
        Some(&le(&[3i16; 9], i16::to_le_bytes)),
    );
    set_extent(d, &[3]);
    close_dataset(d);
    f.close().unwrap();
    p
}

/// Contiguous datasets around the split size (4096 bytes in the test).
fn contiguous(dir: &Path) -> PathBuf {
    let p = dir.join("contiguous.h5");
    let f = create(&p, Ver::Earliest, |_| {});
    let root = id(&f);
    for (name, dims, t, es) in [
        ("f64_1000", vec![1000u64], *H5T_IEEE_F64LE, 8u64),
        ("i16_7x30x20", vec![7, 30, 20], *H5T_STD_I16LE, 2),
        ("f32_3x5000", vec![3, 5000], *H5T_IEEE_F32LE, 4),
        ("f32_1x10000", vec![1, 10000], *H5T_IEEE_F32LE, 4),
        ("f64_512", vec![512], *H5T_IEEE_F64LE, 8),
        ("f64_513", vec![513], *H5T_IEEE_F64LE, 8),
        ("i8_5000x0", vec![5000, 0], *H5T_STD_I8LE, 1),
    ] {
        let n: u64 = dims.iter().product::<u64>() * es;
        let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        close_dataset(dataset(
            root,
            name,
            t,
            &Space::dims(&dims),
            &Lay::Contiguous,
            &[],
            None,
            Some(&data),
        ));
    }
    let t = copy_type(*H5T_STD_I32LE);
    close_dataset(dataset(
        root,
        "unwritten_big",
        t,
        &Space::dims(&[100, 100]),
        &Lay::Contiguous,
        &[],
        None,
        None,
    ));
    close_type(t);
    f.close().unwrap();
    p
}

/// A netCDF-4 file (or netCDF-4 classic model) through netCDF-C: groups using their
/// parents' dimensions, unlimited dimensions in any position, dimensions without variables,
/// every attribute type, fill values of every type.
fn netcdf4(dir: &Path, classic: bool) -> PathBuf {
    use netcdf::AttributeValue as A;
    let p = dir.join(if classic {
        "nc4_classic_model.nc"
    } else {
        "nc4_extra.nc"
    });
    let mut f = if classic {
        netcdf::create_with(&p, netcdf::Options::NETCDF4 | netcdf::Options::CLASSIC).unwrap()
    } else {
        netcdf::create(&p).unwrap()
    };
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 4).unwrap();
    f.add_dimension("y", 3).unwrap();
    f.add_dimension("z", 3).unwrap();
    f.add_dimension("unused", 7).unwrap();
    let mut attrs: Vec<(&str, A)> = vec![
        ("schar", A::Schar(-3)),
        ("schars", A::Schars(vec![-1, 2])),
        ("short", A::Short(-300)),
        ("int", A::Int(7)),
        ("ints", A::Ints(vec![1, 2, 3])),
        ("float", A::Float(0.1)),
        ("float_nan", A::Float(f32::NAN)),
        ("double", A::Double(1e300)),
        ("doubles", A::Doubles(vec![0.5, -0.25])),
        ("text", A::Str("hello".into())),
    ];
    if !classic {
        attrs.extend([
            ("uchar", A::Uchar(200)),
            ("ushorts", A::Ushorts(vec![1, 65535])),
            ("uint", A::Uint(u32::MAX)),
            ("longlong", A::Longlong(i64::MIN)),
            ("ulonglongs", A::Ulonglongs(vec![0, u64::MAX])),
            ("strs", A::Strs(vec!["a".into(), "".into(), "ccc".into()])),
        ]);
    }
    for (name, v) in &attrs {
        f.add_attribute(name, v.clone()).unwrap();
    }
    // Definitions first: the classic model writes data only out of define mode.
    {
        let mut v = f.add_variable::<f64>("time", &["time"]).unwrap();
        v.put_attribute("units", "days since 2000-01-01").unwrap();
    }
    f.add_variable::<f32>("v", &["time", "x"])
        .unwrap()
        .set_fill_value(-1.0f32)
        .unwrap();
    f.add_variable::<i16>("w", &["x", "time"])
        .unwrap()
        .set_compression(3, true)
        .unwrap();
    {
        let mut v = f.add_variable::<i8>("yz", &["y", "z"]).unwrap();
        v.set_fill_value(-7i8).unwrap();
        for (name, a) in &attrs {
            v.put_attribute(name, a.clone()).unwrap();
        }
    }
    if !classic {
        f.add_unlimited_dimension("rec").unwrap();
        f.add_variable::<f64>("rec_var", &["rec"]).unwrap();
        let mut v = f.add_variable::<u64>("u64_fill", &["x"]).unwrap();
        v.set_fill_value(u64::MAX).unwrap();
        let mut v = f.add_variable::<i64>("i64_be", &["y"]).unwrap();
        v.set_endianness(netcdf::Endianness::Big).unwrap();
        v.set_fill_value(-2i64).unwrap();
        let mut g = f.add_group("g").unwrap();
        g.add_dimension("gx", 2).unwrap();
        g.add_attribute("group_attr", "in g").unwrap();
        let mut v = g.add_variable::<u8>("gv", &["x", "gx"]).unwrap();
        v.set_fill_value(9u8).unwrap();
        v.put_values(&[1u8; 8], ..).unwrap();
        let mut sub = g.add_group("sub").unwrap();
        sub.add_dimension("x", 5).unwrap();
        let mut v = sub.add_variable::<f32>("shadow", &["x", "y"]).unwrap();
        v.put_values(&[0.5f32; 15], ..).unwrap();
        let mut v = sub.add_variable::<f32>("x", &["x"]).unwrap();
        v.put_values(&[0.0f32, 1.0, 2.0, 3.0, 4.0], ..).unwrap();
    } else {
        f.enddef().unwrap();
    }
    let put = |name: &str, f: &mut netcdf::FileMut, w: &dyn Fn(&mut netcdf::VariableMut)| {
        w(&mut f.variable_mut(name).unwrap());
    };
    put("time", &mut f, &|v| {
        v.put_values(&[0.0f64, 1.0, 2.0], (0..3,)).unwrap()
    });
    put("v", &mut f, &|v| {
        v.put_values(&[1.0f32; 8], (0..2, ..)).unwrap()
    });
    put("w", &mut f, &|v| {
        v.put_values(&[2i16; 12], (.., 0..3)).unwrap()
    });
    if !classic {
        put("rec_var", &mut f, &|v| {
            v.put_values(&[4.0f64], (0..1,)).unwrap()
        });
        put("i64_be", &mut f, &|v| {
            v.put_values(&[1i64, 2, 3], ..).unwrap()
        });
    }
    drop(f);
    p
}
