//! Reading through the manifest: selections across chunk boundaries and typed reads of the
//! fixtures, compared with the HDF5 library reading the same files.

mod common;

use common::*;
use ndarray::s;
use vzarr_core::DataType;
use vzarr_read::{Scalar, parse_selection};

fn f32s(raw: &vzarr_read::RawArray) -> Vec<f32> {
    (0..raw.len())
        .map(|i| match raw.get(i).unwrap() {
            Scalar::F32(v) => v,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn selections_across_chunk_boundaries_match_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l.json");
    let src = fixtures().join("layouts_v1.h5");
    build(&src, &out, None);
    let reader = open(&out);
    let h5 = hdf5::File::open(&src).unwrap();

    // int32 23x17, chunks 10x5: rows 5..15 and columns 3..12 cross two and three chunk edges.
    let want: ndarray::Array2<i32> = h5
        .dataset("chunked_edge")
        .unwrap()
        .read_slice(s![5..15, 3..12])
        .unwrap();
    let got = reader
        .array("chunked_edge")
        .unwrap()
        .read::<i32>(&[5..15, 3..12])
        .unwrap();
    assert_eq!(got, want.into_dyn());
    // The same through a numpy-like selection with negative indices, to the edge chunks.
    let sel = parse_selection("chunked_edge[-18:-8, 3:]").unwrap();
    let raw = reader.read_selection(&sel).unwrap();
    let want: ndarray::Array2<i32> = h5
        .dataset("chunked_edge")
        .unwrap()
        .read_slice(s![5..15, 3..17])
        .unwrap();
    assert_eq!(raw.shape, vec![10, 14]);
    let vals: Vec<i32> = raw
        .bytes
        .chunks_exact(4)
        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(vals, want.iter().copied().collect::<Vec<_>>());

    // float32 20x30 shuffle+deflate, chunks 8x16: steps, single index, partial edge chunk.
    let full: ndarray::Array2<f32> = h5.dataset("btree_v1_deflate").unwrap().read_2d().unwrap();
    let raw = reader
        .read_selection(&parse_selection("btree_v1_deflate[1:20:3, 14]").unwrap())
        .unwrap();
    assert_eq!(raw.shape, vec![7]);
    let want: Vec<f32> = full.slice(s![1..20;3, 14]).iter().copied().collect();
    assert_eq!(f32s(&raw), want);
    let text = raw.to_text();
    assert_eq!(text.trim_end().split(' ').count(), 7);
    let json = raw.to_json();
    assert_eq!(json.as_array().unwrap().len(), 7);

    // Partially written chunks: the fill value where nothing was written, as HDF5 returns.
    let want: ndarray::Array2<f32> = h5
        .dataset("chunked_partial")
        .unwrap()
        .read_slice(s![5..25, 15..35])
        .unwrap();
    let got = reader
        .array("chunked_partial")
        .unwrap()
        .read::<f32>(&[5..25, 15..35])
        .unwrap();
    assert_eq!(got, want.into_dyn());

    // Part of one large raw chunk: only the selected bytes are fetched, not the 64 KiB chunk.
    let before = reader.stats().bytes;
    let want: ndarray::Array2<f64> = h5
        .dataset("contiguous_large")
        .unwrap()
        .read_slice(s![3..5, 5..10])
        .unwrap();
    let got = reader
        .array("contiguous_large")
        .unwrap()
        .read::<f64>(&[3..5, 5..10])
        .unwrap();
    assert_eq!(got, want.into_dyn());
    let fetched = reader.stats().bytes - before;
    // Two rows of 5 values, coalesced across the 984-byte gap between them: 1064 bytes.
    assert_eq!(fetched, 1064, "fetched {fetched} bytes for 10 values");

    // A 0-d array and a typed read of the wrong type.
    let v = reader
        .array("scalar_compact")
        .unwrap()
        .read_all::<i32>()
        .unwrap();
    assert_eq!(v.into_raw_vec_and_offset().0, vec![-7]);
    assert!(
        reader
            .array("chunked_edge")
            .unwrap()
            .read::<f64>(&[0..1, 0..1])
            .is_err()
    );
    assert!(
        reader
            .array("chunked_edge")
            .unwrap()
            .read::<i32>(&[0..24, 0..1])
            .is_err()
    );
    assert!(reader.array("nope").is_err());
    let stats = reader.stats();
    assert!(stats.bytes > 0 && stats.requests > 0);
}

#[test]
fn strings_and_big_endian_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let src = fixtures().join("nc4_types.nc");
    build(&src, &out, None);
    let reader = open(&out);
    // A char array (null_terminated_bytes of length 1), read and printed.
    let a = reader.array("station_name").unwrap();
    assert_eq!(a.data_type(), DataType::FixedBytes(1));
    let raw = a.read_all_raw().unwrap();
    let nc = netcdf::open(&src).unwrap();
    let want = nc
        .variable("station_name")
        .unwrap()
        .get_raw_values(..)
        .unwrap();
    assert_eq!(raw.bytes, want);
    assert!(raw.to_text().contains('"'));
    // Big-endian doubles come out in native order.
    let got = reader
        .array("v_double_be")
        .unwrap()
        .read_all::<f64>()
        .unwrap();
    let want: Vec<f64> = nc
        .variable("v_double_be")
        .unwrap()
        .get_values::<f64, _>(..)
        .unwrap();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), want);
}

/// An in-memory dataset of one float32 array of 4 elements in one zlib chunk stored inline.
fn one_zlib_chunk(chunk: Vec<u8>) -> Vec<u8> {
    one_chunk(chunk, vec![vzarr_core::Codec::Zlib { level: 1 }])
}

/// An in-memory dataset of one float32 array of 4 elements in one chunk stored inline.
fn one_chunk(chunk: Vec<u8>, codecs: Vec<vzarr_core::Codec>) -> Vec<u8> {
    use vzarr_core::{ChunkGrid, ChunkManifest, Endian, FillValue, VirtualArray};
    let mut ds = vzarr_core::VirtualDataset::new();
    let mut manifest = ChunkManifest::new_missing(1);
    manifest.set_inline(0, chunk).unwrap();
    ds.arrays.insert(
        "v".into(),
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Float32),
            codecs,
            dimension_names: vec!["x".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[4], &[4]).unwrap(),
            manifest,
        },
    );
    vzarr_kerchunk::to_bytes(&ds).unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(9));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn decompression_bombs_and_short_chunks_are_errors() {
    let read = |chunk: Vec<u8>| {
        let refs = one_zlib_chunk(chunk);
        let r =
            vzarr_read::open_bytes(&refs, "mem.json", vzarr_read::ReadOptions::default()).unwrap();
        r.array("v").unwrap().read_all_raw()
    };
    let good: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(read(zlib(&good)).unwrap().bytes, good);
    // 64 MiB of zeros in a few KiB: refused at the chunk's 16 bytes, not inflated.
    let e = read(zlib(&vec![0u8; 64 << 20])).unwrap_err().to_string();
    assert!(e.contains("inflates past the 16 bytes"), "{e}");
    // A chunk that decodes short is an error, not values padded with anything.
    let e = read(zlib(&good[..8])).unwrap_err().to_string();
    assert!(e.contains("array v"), "{e}");
    // The same for an uncompressed chunk shorter than its shape (and longer).
    for raw in [&good[..8], &[good.as_slice(), &[0u8; 4]].concat()[..]] {
        let refs = one_chunk(raw.to_vec(), vec![]);
        let r =
            vzarr_read::open_bytes(&refs, "mem.json", vzarr_read::ReadOptions::default()).unwrap();
        let e = r
            .array("v")
            .unwrap()
            .read_all_raw()
            .unwrap_err()
            .to_string();
        assert!(e.contains("array v"), "{e}");
    }
}

#[test]
fn a_kept_parse_serves_the_same_bytes_under_the_same_limits_only() {
    // open_bytes keeps the last parse: it must never stand in for other bytes or limits.
    let values = |v: [f32; 4]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let (one, two) = (values([1.0, 2.0, 3.0, 4.0]), values([5.0, 6.0, 7.0, 8.0]));
    let (a, b) = (
        one_chunk(one.clone(), vec![]),
        one_chunk(two.clone(), vec![]),
    );
    for (refs, want) in [(&a, &one), (&a, &one), (&b, &two), (&a, &one)] {
        let r =
            vzarr_read::open_bytes(refs, "mem.json", vzarr_read::ReadOptions::default()).unwrap();
        assert_eq!(&r.array("v").unwrap().read_all_raw().unwrap().bytes, want);
    }
    let mut tight = vzarr_read::ReadOptions::default();
    tight.limits.max_references = 0;
    let e = vzarr_read::open_bytes(&a, "mem.json", tight)
        .err()
        .expect("over the limit");
    assert!(e.to_string().contains("mem.json"), "{e}");
}
