//! Planner tests on synthetic per-file datasets (the Python interop tests cover real files
//! read back with xarray).

mod common;

use common::{MemReader, archive, days, month_file};
use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkRef, Codec, DataType, DimGrid, FillValue, VirtualArray};
use vzarr_plan::{Concat, PlanError, PlanOptions, ReadError, plan, suggest_concat_dim};
use vzarr_source::SourceError;

fn opts() -> PlanOptions {
    PlanOptions::new(Concat::Existing("time".into()))
}

fn time_values(a: &VirtualArray) -> Vec<f64> {
    let mut out = Vec::new();
    for r in a.manifest.iter() {
        match r {
            ChunkRef::Inline(b) => out.extend(
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap())),
            ),
            other => panic!("time chunk not inline: {other:?}"),
        }
    }
    out.truncate(a.shape()[0] as usize);
    out
}

#[test]
fn chunk_one_is_regular_and_time_is_reencoded() {
    let (ds, report) = plan(archive(24, 1, 2, &[]), &opts(), &MemReader::default()).unwrap();
    let a = &ds.arrays["var0"];
    assert_eq!(a.shape(), vec![730, 4, 5]);
    assert!(a.grid.is_regular());
    assert!(report.rectilinear.is_empty());
    assert_eq!((report.trimmed_chunks, report.materialised_chunks), (0, 0));
    // Time in the first file's units, continuous across files.
    let t = time_values(&ds.arrays["time"]);
    assert_eq!(t.len(), 730);
    for (i, v) in t.iter().enumerate() {
        assert_eq!(*v, i as f64 + 0.5);
    }
    assert_eq!(
        ds.arrays["time"].attributes["units"],
        "days since 2000-01-01"
    );
    assert_eq!(report.time_units.as_deref(), Some("days since 2000-01-01"));
}

#[test]
fn whole_month_chunks_are_rectilinear_and_trimmed() {
    let (ds, report) = plan(archive(12, 31, 1, &[]), &opts(), &MemReader::default()).unwrap();
    let a = &ds.arrays["var0"];
    let DimGrid::Varying { edges, .. } = &a.grid.dims()[0] else {
        panic!("expected varying")
    };
    let want: Vec<u64> = (1..=12).map(days).collect();
    assert_eq!(edges, &want);
    // Every month shorter than 31 days except the last ends in a padded chunk, trimmed.
    let padded = (1..12).filter(|&m| days(m) < 31).count() as u64;
    assert_eq!(report.trimmed_chunks, padded);
    // The trimmed February chunk references 28 rows of 80 bytes.
    let feb = a.grid.linear_index(&[1, 0, 0]).unwrap() as usize;
    match a.manifest.get(feb) {
        ChunkRef::Range { length, .. } => assert_eq!(length, 28 * 80),
        other => panic!("{other:?}"),
    }
    assert_eq!(report.rectilinear, vec!["var0".to_string()]);
    let json = a.grid.to_zarr_json().to_string();
    assert!(
        json.contains("[31,28,31,30,31,30,[31,2],30,31,30,31]"),
        "{json}"
    );
}

#[test]
fn order_comes_from_time_not_from_input_order() {
    let mut inputs = archive(6, 1, 1, &[]);
    inputs.reverse();
    let (ds, report) = plan(inputs, &opts(), &MemReader::default()).unwrap();
    let names: Vec<&str> = report
        .order
        .iter()
        .map(|u| vzarr_plan::file_name(u))
        .collect();
    assert_eq!(
        names,
        [
            "f00000.nc",
            "f00001.nc",
            "f00002.nc",
            "f00003.nc",
            "f00004.nc",
            "f00005.nc"
        ]
    );
    let pieces = &ds.provenance.concat.as_ref().unwrap().pieces;
    assert_eq!(pieces[1].start, 31);
    assert_eq!(pieces[1].len, 28);
    let t = time_values(&ds.arrays["time"]);
    assert!(t.windows(2).all(|w| w[1] == w[0] + 1.0));
}

#[test]
fn gaps_and_overlaps() {
    let mut inputs = archive(4, 1, 1, &[]);
    inputs.remove(2);
    let e = plan(inputs.clone(), &opts(), &MemReader::default()).unwrap_err();
    assert!(matches!(e, PlanError::Gap(_)), "{e}");
    assert!(
        e.to_string().contains("f00001.nc") && e.to_string().contains("f00003.nc"),
        "{e}"
    );
    let (_, report) = plan(inputs, &opts().with_allow_gaps(true), &MemReader::default()).unwrap();
    assert_eq!(report.gaps.len(), 1);

    let mut twice = archive(2, 1, 1, &[]);
    twice.push(archive(2, 1, 1, &[]).remove(1));
    twice[2].provenance.sources[0].url = "file:///archive/copy.nc".into();
    let e = plan(twice, &opts().with_allow_gaps(true), &MemReader::default()).unwrap_err();
    assert!(matches!(e, PlanError::Overlap(_)), "{e}");
}

#[test]
fn disagreements_name_the_field_and_the_files() {
    let mut inputs = archive(3, 1, 2, &[]);
    inputs[1].arrays.get_mut("var1").unwrap().data_type = DataType::Float64;
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("var1")
            && e.contains("data type")
            && e.contains("f00000.nc")
            && e.contains("f00001.nc"),
        "{e}"
    );

    let mut inputs = archive(3, 1, 2, &[]);
    inputs[2]
        .arrays
        .get_mut("var0")
        .unwrap()
        .attributes
        .insert("scale_factor".into(), 0.5.into());
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("attribute scale_factor"), "{e}");

    let mut inputs = archive(3, 1, 2, &[]);
    inputs[1].arrays.get_mut("var0").unwrap().fill_value =
        FillValue::from_f64(DataType::Float32, 0.0).unwrap();
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("fill value"), "{e}");

    let mut inputs = archive(3, 1, 2, &[]);
    inputs[1].arrays.remove("var1");
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("var1") && e.contains("not in"), "{e}");

    // Compression levels may differ; other codecs may not.
    let mut inputs = archive(2, 1, 1, &[Codec::Zlib { level: 4 }]);
    inputs[1].arrays.get_mut("var0").unwrap().codecs = vec![Codec::Zlib { level: 9 }];
    plan(inputs, &opts(), &MemReader::default()).unwrap();
    let mut inputs = archive(2, 1, 1, &[Codec::Zlib { level: 4 }]);
    inputs[1].arrays.get_mut("var0").unwrap().codecs =
        vec![Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 4 }];
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("codecs"), "{e}");
}

#[test]
fn compressed_padded_chunks_are_reencoded_with_the_valid_rows() {
    // Two months with 10-day chunks, zlib: January's last chunk holds 1 valid day of 10.
    let codecs = vec![Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 4 }];
    let mut inputs = vec![
        month_file("file:///a.nc", 0, 31, 10, 1, &codecs),
        month_file("file:///b.nc", 31, 28, 10, 1, &codecs),
    ];
    // Give every chunk of a.nc real bytes: rows of value (day index).
    let enc = ByteCodecs::new(&codecs).unwrap();
    let mut file = vec![0u8; 4096];
    let a = inputs[0].arrays.get_mut("var0").unwrap();
    let sid = a.manifest.intern("file:///a.nc").unwrap();
    for c in 0..4u64 {
        let raw: Vec<u8> = (0..10 * 20)
            .flat_map(|i| ((c * 10 + i / 20) as f32).to_le_bytes())
            .collect();
        let bytes = enc.encode(&raw).unwrap();
        a.manifest
            .set_range(c as usize, sid, file.len() as u64, bytes.len() as u64)
            .unwrap();
        file.extend(bytes);
    }
    let mut reader = MemReader::new();
    reader.insert("file:///a.nc", file);
    let (ds, report) = plan(inputs, &opts(), &reader).unwrap();
    assert_eq!((report.materialised_chunks, report.trimmed_chunks), (1, 0));
    let v = &ds.arrays["var0"];
    let DimGrid::Varying { edges, .. } = &v.grid.dims()[0] else {
        panic!()
    };
    assert_eq!(edges, &vec![10, 10, 10, 1, 10, 10, 10]);
    let ChunkRef::Inline(b) = v.manifest.get(3) else {
        panic!("not inline")
    };
    let raw = enc.decode(b, 20 * 4).unwrap();
    assert!(
        raw.chunks_exact(4)
            .all(|c| f32::from_le_bytes(c.try_into().unwrap()) == 30.0)
    );
    assert_eq!(report.materialised_bytes, b.len() as u64);
}

#[test]
fn static_variables_must_be_identical() {
    let mut inputs = archive(2, 1, 0, &[]);
    for (k, ds) in inputs.iter_mut().enumerate() {
        let url = ds.provenance.sources[0].url.clone();
        let mut a = month_file(&url, 0, 1, 1, 1, &[])
            .arrays
            .remove("var0")
            .unwrap();
        a.dimension_names = vec!["t1".into(), "y".into(), "x".into()];
        a.manifest = vzarr_core::ChunkManifest::new_missing(1);
        a.manifest.set_inline(0, vec![k as u8; 80]).unwrap();
        ds.arrays.insert("orog".into(), a);
    }
    let e = plan(inputs.clone(), &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("orog") && e.contains("identical") && e.contains("chunk [0, 0, 0]"),
        "{e}"
    );
    // Same values, stored differently (compressed in one file): accepted, kept once.
    let raw = vec![0u8; 80];
    inputs[1]
        .arrays
        .get_mut("orog")
        .unwrap()
        .manifest
        .set_inline(0, raw.clone())
        .unwrap();
    let (ds, report) = plan(inputs, &opts(), &MemReader::default()).unwrap();
    assert_eq!(report.kept_once, vec!["orog".to_string()]);
    assert_eq!(ds.arrays["orog"].shape(), vec![1, 4, 5]);
}

#[test]
fn read_failures_keep_their_cause() {
    // A static variable whose chunks point into files the reader does not have.
    let mut inputs = archive(2, 1, 0, &[]);
    for ds in inputs.iter_mut() {
        let url = ds.provenance.sources[0].url.clone();
        let mut a = month_file(&url, 0, 1, 1, 1, &[])
            .arrays
            .remove("var0")
            .unwrap();
        a.dimension_names = vec!["t1".into(), "y".into(), "x".into()];
        ds.arrays.insert("orog".into(), a);
    }
    let e = plan(inputs, &opts(), &MemReader::default()).unwrap_err();
    let PlanError::Read {
        file,
        variable,
        source,
    } = &e
    else {
        panic!("{e}")
    };
    assert!(file.ends_with("f00000.nc") && variable == "orog", "{e}");
    assert!(
        matches!(source, ReadError::Source(SourceError::NotFound { .. })),
        "{source:?}"
    );
    // The message stops where the cause begins; the cause is the error's source.
    let cause = std::error::Error::source(&e).expect("a source").to_string();
    assert_eq!(cause, source.to_string());
    assert!(!e.to_string().contains(&cause), "{e}");
}

#[test]
fn new_dimension_stacks_files() {
    let inputs: Vec<_> = (0..3)
        .map(|k| month_file(&format!("file:///m{k}.nc"), 0, 31, 31, 1, &[]))
        .collect();
    let o = PlanOptions::new(Concat::New {
        dim: "member".into(),
        labels: Some(vec!["a".into(), "b".into(), "c".into()]),
    });
    let (ds, report) = plan(inputs, &o, &MemReader::default()).unwrap();
    let v = &ds.arrays["var0"];
    assert_eq!(v.shape(), vec![3, 31, 4, 5]);
    assert_eq!(v.dimension_names[0], "member");
    for k in 0..3u64 {
        match v
            .manifest
            .get(v.grid.linear_index(&[k, 0, 0, 0]).unwrap() as usize)
        {
            ChunkRef::Range { source, .. } => assert_eq!(source, format!("file:///m{k}.nc")),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(report.kept_once, vec!["time".to_string()]);
    assert_eq!(ds.arrays["member"].data_type, DataType::FixedBytes(1));
    let e = plan(
        vec![month_file("file:///x.nc", 0, 3, 3, 1, &[])],
        &PlanOptions::new(Concat::New {
            dim: "time".into(),
            labels: None,
        }),
        &MemReader::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("already has a dimension"), "{e}");
}

#[test]
fn suggests_the_common_unlimited_dimension() {
    let inputs = archive(2, 1, 1, &[]);
    assert_eq!(suggest_concat_dim(&inputs).as_deref(), Some("time"));
    let mut other = inputs.clone();
    other[1].unlimited_dims.clear();
    assert_eq!(suggest_concat_dim(&other), None);
}
