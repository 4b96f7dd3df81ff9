//! Combinations made by hand and verified: a rectilinear concatenation and a stack of two
//! NetCDF4 files, read through zarrs and compared with netCDF-C.

use std::path::Path;

use ndarray::{ArrayD, Axis, IxDyn, s};
use vzarr_core::{
    ChunkGrid, ChunkManifest, ChunkRef, ConcatInfo, ConcatPiece, DataType, DimGrid, Endian,
    FillValue, Provenance, VirtualArray, VirtualDataset, prefixes_of,
};
use vzarr_read::{Scalar, parse_selection};
use vzarr_verify::verify;

fn f32s(raw: &vzarr_read::RawArray) -> Vec<f32> {
    (0..raw.len())
        .map(|i| match raw.get(i).unwrap() {
            Scalar::F32(v) => v,
            other => panic!("{other:?}"),
        })
        .collect()
}

use crate::common::*;

fn write_nc4(path: &Path, times: usize, chunk: usize, base: f32) -> ArrayD<f32> {
    let mut f = netcdf::create(path).unwrap();
    f.add_dimension("time", times).unwrap();
    f.add_dimension("lat", 4).unwrap();
    f.add_dimension("lon", 5).unwrap();
    let data = ArrayD::from_shape_fn(IxDyn(&[times, 4, 5]), |i| {
        base + (i[0] * 100 + i[1] * 10 + i[2]) as f32 * 0.5
    });
    let mut v = f
        .add_variable::<f32>("tas", &["time", "lat", "lon"])
        .unwrap();
    v.set_chunking(&[chunk, 2, 5]).unwrap();
    v.set_compression(4, true).unwrap();
    v.put(data.view(), ..).unwrap();
    data
}

fn copy_refs(dst: &mut ChunkManifest, dst_lin: u64, r: ChunkRef<'_>) {
    match r {
        ChunkRef::Missing => {}
        ChunkRef::Inline(b) => dst.set_inline(dst_lin as usize, b.to_vec()).unwrap(),
        ChunkRef::Range {
            source,
            offset,
            length,
        } => {
            let s = dst.intern(source).unwrap();
            dst.set_range(dst_lin as usize, s, offset, length).unwrap();
        }
    }
}

#[test]
fn rectilinear_concatenation_reads_through_zarrs() {
    // Two monthly files of 31 and 28 days, one chunk per month along time: the combined axis
    // has chunk edges [31, 28], a rectilinear grid.
    let dir = tempfile::tempdir().unwrap();
    let p1 = dir.path().join("tas_202301.nc");
    let p2 = dir.path().join("tas_202302.nc");
    let d1 = write_nc4(&p1, 31, 31, 0.0);
    let d2 = write_nc4(&p2, 28, 28, 1000.0);
    let (ds1, ds2) = (scan(&p1), scan(&p2));
    let (a1, a2) = (&ds1.arrays["tas"], &ds2.arrays["tas"]);
    let grid = ChunkGrid::new(vec![
        DimGrid::varying(vec![31, 28], 59).unwrap(),
        a1.grid.dims()[1].clone(),
        a1.grid.dims()[2].clone(),
    ]);
    let mut manifest = ChunkManifest::new_missing(grid.n_chunks().unwrap() as usize);
    for (t, a) in [(0u64, a1), (1, a2)] {
        for lin in 0..a.manifest.len() {
            let idx = a.grid.chunk_index(lin as u64);
            let dst = grid.linear_index(&[t, idx[1], idx[2]]).unwrap();
            copy_refs(&mut manifest, dst, a.manifest.get(lin));
        }
    }
    let mut ds = VirtualDataset::new();
    ds.arrays.insert(
        "tas".into(),
        VirtualArray {
            grid,
            manifest,
            ..a1.clone()
        },
    );
    let mut sources = ds1.provenance.sources.clone();
    sources.extend(ds2.provenance.sources.clone());
    sources.sort_by(|a, b| a.url.cmp(&b.url));
    let (u1, u2) = (sources[0].url.clone(), sources[1].url.clone());
    ds.provenance = Provenance {
        allowed_prefixes: prefixes_of(&sources),
        sources,
        concat: Some(ConcatInfo {
            dim: "time".into(),
            order_by: None,
            new_dim: false,
            pieces: vec![
                ConcatPiece {
                    url: u1.clone(),
                    start: 0,
                    len: 31,
                },
                ConcatPiece {
                    url: u2.clone(),
                    start: 31,
                    len: 28,
                },
            ],
            arrays: vec!["tas".into()],
            retimed: Vec::new(),
        }),
        small_chunks: None,
        upgraded_from: None,
        inputs: None,
        companions: Vec::new(),
    };
    let out = dir.path().join("combined.json");
    vzarr_kerchunk::write_file(&ds, &out).unwrap();
    let refs = read_json(&out);
    assert!(
        refs["refs"]["tas/zarr.json"]
            .as_str()
            .unwrap()
            .contains("\"rectilinear\"")
    );

    let reader = open(&out);
    let want = ndarray::concatenate(Axis(0), &[d1.view(), d2.view()]).unwrap();
    let got = reader.array("tas").unwrap().read_all::<f32>().unwrap();
    assert_eq!(got, want);
    // Across the month boundary (index 31) and a lat chunk boundary (index 2).
    let raw = reader
        .read_selection(&parse_selection("tas[29:33, 1:3, ::2]").unwrap())
        .unwrap();
    assert_eq!(raw.shape, vec![4, 2, 3]);
    let w: Vec<f32> = want.slice(s![29..33, 1..3, ..;2]).iter().copied().collect();
    assert_eq!(f32s(&raw), w);

    // verify compares each month's slab with its own file.
    let mut swapped = refs.clone();
    swapped["vzarr"]["concat"]["pieces"][0]["url"] = serde_json::json!(u2);
    swapped["vzarr"]["concat"]["pieces"][1]["url"] = serde_json::json!(u1);
    let p = dir.path().join("swapped.json");
    write_json(&p, &swapped);
    for readers in readers() {
        let r = verify(&reader, &with(readers)).unwrap();
        assert!(r.ok(), "{}\n{:#?}", r.summary(), r.mismatches);
        assert_eq!(r.values_compared, 59 * 4 * 5);
        // With the pieces' files swapped, every chunk is compared with the wrong month.
        let r = verify(&open(&p), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 4, "{readers:?}: {:#?}", r.mismatches);
        assert!(r.mismatches.iter().all(|m| m.array == "tas"));
    }
}

#[test]
fn stacking_along_a_new_dimension_is_verified_per_member() {
    let dir = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    let mut datasets = Vec::new();
    for (k, name) in ["member_a.nc", "member_b.nc"].iter().enumerate() {
        let p = dir.path().join(name);
        let mut f = netcdf::create(&p).unwrap();
        f.add_dimension("y", 3).unwrap();
        f.add_dimension("x", 4).unwrap();
        let data = ArrayD::from_shape_fn(IxDyn(&[3, 4]), |i| (k * 100 + i[0] * 4 + i[1]) as i16);
        let mut v = f.add_variable::<i16>("x_var", &["y", "x"]).unwrap();
        v.put(data.view(), ..).unwrap();
        drop(f);
        parts.push(data);
        datasets.push(scan(&p));
    }
    let a0 = &datasets[0].arrays["x_var"];
    let mut dims = vec![DimGrid::fixed(1, 2).unwrap()];
    dims.extend(a0.grid.dims().iter().cloned());
    let grid = ChunkGrid::new(dims);
    let per = a0.manifest.len();
    let mut manifest = ChunkManifest::new_missing(per * 2);
    for (f, d) in datasets.iter().enumerate() {
        for c in 0..per {
            copy_refs(
                &mut manifest,
                (f * per + c) as u64,
                d.arrays["x_var"].manifest.get(c),
            );
        }
    }
    let mut ds = VirtualDataset::new();
    let mut names = vec!["member".to_string()];
    names.extend(a0.dimension_names.iter().cloned());
    ds.arrays.insert(
        "x_var".into(),
        VirtualArray {
            grid,
            manifest,
            dimension_names: names,
            ..a0.clone()
        },
    );
    // The new dimension's coordinate, inline.
    let mut labels = ChunkManifest::new_missing(1);
    labels
        .set_inline(0, [0i64, 1].iter().flat_map(|v| v.to_le_bytes()).collect())
        .unwrap();
    ds.arrays.insert(
        "member".into(),
        VirtualArray {
            data_type: DataType::Int64,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Int64),
            codecs: vec![],
            dimension_names: vec!["member".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[2], &[2]).unwrap(),
            manifest: labels,
        },
    );
    let sources: Vec<_> = datasets
        .iter()
        .flat_map(|d| d.provenance.sources.clone())
        .collect();
    ds.provenance = Provenance {
        allowed_prefixes: prefixes_of(&sources),
        concat: Some(ConcatInfo {
            dim: "member".into(),
            order_by: None,
            new_dim: true,
            pieces: sources
                .iter()
                .enumerate()
                .map(|(k, s)| ConcatPiece {
                    url: s.url.clone(),
                    start: k as u64,
                    len: 1,
                })
                .collect(),
            arrays: vec!["x_var".into(), "member".into()],
            retimed: Vec::new(),
        }),
        sources,
        small_chunks: None,
        upgraded_from: None,
        inputs: None,
        companions: Vec::new(),
    };
    let out = dir.path().join("stacked.json");
    vzarr_kerchunk::write_file(&ds, &out).unwrap();
    let reader = open(&out);
    let got = reader.array("x_var").unwrap().read_all::<i16>().unwrap();
    let want = ndarray::stack(Axis(0), &[parts[0].view(), parts[1].view()]).unwrap();
    assert_eq!(got, want);
    for readers in readers() {
        let r = verify(&reader, &with(readers)).unwrap();
        assert!(r.ok(), "{:#?}", r.mismatches);
        assert_eq!(r.values_compared, 24);
        assert_eq!(r.skipped.len(), 1);
        assert_eq!(r.skipped[0].array, "member");
        assert!(
            r.skipped[0].reason.contains("labels"),
            "{}",
            r.skipped[0].reason
        );
    }
}
