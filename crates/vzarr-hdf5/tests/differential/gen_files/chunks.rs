//! Chunked storage: chunks stored with filters skipped, a dataset that shrank, contiguous
//! datasets around the split size.

use std::path::{Path, PathBuf};

use hdf5_sys::h5t::{
    H5T_IEEE_F32LE, H5T_IEEE_F64BE, H5T_IEEE_F64LE, H5T_STD_I8LE, H5T_STD_I16LE, H5T_STD_I32LE,
    H5T_STD_U16LE,
};

use super::{id, le, tag};
use crate::generated::{Ver, create};
use crate::raw::{
    Flt, Lay, Space, close_dataset, close_type, copy_type, dataset, set_extent, write_chunk,
};
use hdf5::plist::dataset_create::ChunkOpts;
use vzarr_codec::ByteCodecs;
use vzarr_core::Codec;

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
pub(crate) fn masked(dir: &Path, ver: Ver) -> PathBuf {
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

/// A chunked dataset that shrank: chunks past the new extent stay in the index.
pub(crate) fn shrunk(dir: &Path, ver: Ver) -> PathBuf {
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
pub(crate) fn contiguous(dir: &Path) -> PathBuf {
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
