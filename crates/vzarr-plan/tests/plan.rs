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
    inputs[1].arrays.shift_remove("var1");
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
            .shift_remove("var0")
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
            .shift_remove("var0")
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

/// A store over `MemReader` that records which sources were opened by URL and which from
/// their scan's record.
#[derive(Debug, Default)]
struct Calls {
    inner: MemReader,
    by_url: std::sync::Mutex<Vec<String>>,
    by_record: std::sync::Mutex<Vec<String>>,
}

impl vzarr_source::SourceStore for Calls {
    fn open(&self, url: &str) -> Result<std::sync::Arc<dyn vzarr_source::ByteSource>, SourceError> {
        self.by_url.lock().unwrap().push(url.into());
        self.inner.open(url)
    }
    fn open_recorded(
        &self,
        record: &vzarr_core::SourceRecord,
    ) -> Result<std::sync::Arc<dyn vzarr_source::ByteSource>, SourceError> {
        self.by_record.lock().unwrap().push(record.url.clone());
        self.inner.open(&record.url)
    }
}

/// `n` monthly files (31 days each) whose time coordinate (chunks of 10, the last one padded)
/// and static `lat` (2 chunks of 3) are stored by reference in `reader`; file `odd` (if any)
/// has other `lat` values; with `keep`, the scan kept every chunk's bytes.
fn referenced_archive(
    n: usize,
    reader: &mut MemReader,
    odd: Option<usize>,
    keep: bool,
) -> Vec<vzarr_core::VirtualDataset> {
    use vzarr_core::{ChunkGrid, ChunkManifest, Endian};
    (0..n)
        .map(|k| {
            let url = format!("file:///ref/f{k}.nc");
            let mut ds = month_file(&url, 31 * k as u64, 31, 31, 1, &[]);
            let mut bytes = vec![0u8; 2048];
            // Time: 31 values (days since the file's month start), chunks of 10 at 100.
            for d in 0..40usize {
                let v = d as f64 + 0.5;
                bytes[100 + 8 * d..108 + 8 * d].copy_from_slice(&v.to_le_bytes());
            }
            // lat: 6 float32 at 1000, in chunks of 3.
            for j in 0..6usize {
                let v = j as f32 * 10.0 + if Some(k) == odd { 1.0 } else { 0.0 };
                bytes[1000 + 4 * j..1004 + 4 * j].copy_from_slice(&v.to_le_bytes());
            }
            let t = ds.arrays.get_mut("time").unwrap();
            t.grid = ChunkGrid::regular(&[31], &[10]).unwrap();
            t.manifest = ChunkManifest::new_missing(4);
            let sid = t.manifest.intern(&url).unwrap();
            for i in 0..4 {
                t.manifest
                    .set_range(i, sid, 100 + 80 * i as u64, 80)
                    .unwrap();
            }
            let mut lat = VirtualArray {
                data_type: DataType::Float32,
                endian: Endian::Little,
                fill_value: FillValue::from_f64(DataType::Float32, 0.0).unwrap(),
                codecs: vec![],
                dimension_names: vec!["lat".into()],
                attributes: Default::default(),
                grid: ChunkGrid::regular(&[6], &[3]).unwrap(),
                manifest: ChunkManifest::new_missing(2),
            };
            let sid = lat.manifest.intern(&url).unwrap();
            for i in 0..2 {
                lat.manifest
                    .set_range(i, sid, 1000 + 12 * i as u64, 12)
                    .unwrap();
            }
            ds.arrays.insert("lat".into(), lat);
            if keep {
                let b = bytes.clone();
                ds.keep_fetched(|_, r| {
                    b.get(r.start as usize..r.end as usize)
                        .map(vzarr_source::Bytes::copy_from_slice)
                });
            }
            reader.insert(url, bytes);
            ds
        })
        .collect()
}

#[test]
fn every_range_is_read_once_and_sources_open_from_their_records() {
    let n = 5;
    let mut calls = Calls::default();
    // Input order is not time order: the planner reorders, reads stay one per range.
    let mut inputs = referenced_archive(n, &mut calls.inner, None, false);
    inputs.reverse();
    let (ds, report) = plan(inputs, &opts(), &calls).unwrap();
    assert_eq!(report.kept_once, vec!["lat".to_string()]);
    let t = time_values(&ds.arrays["time"]);
    assert_eq!(t.len(), 31 * n);
    for (i, v) in t.iter().enumerate() {
        assert_eq!(*v, i as f64 + 0.5);
    }
    // 4 time chunks and 2 lat chunks per file, each read once (the time coordinate is needed
    // twice, to order the files and to re-encode it; the first file's lat is compared with
    // every other file's).
    for k in 0..n {
        let src = calls.inner.get(&format!("file:///ref/f{k}.nc")).unwrap();
        assert_eq!(src.reads(), 6, "file {k}");
    }
    // Every source opened from its scan's record, none by URL (no HEAD on object storage).
    assert!(calls.by_url.lock().unwrap().is_empty());
    let mut by_record = calls.by_record.lock().unwrap().clone();
    by_record.sort();
    by_record.dedup();
    assert_eq!(by_record.len(), n);
}

#[test]
fn bytes_the_scan_kept_are_not_read_again() {
    let mut reader = MemReader::new();
    let inputs = referenced_archive(4, &mut reader, None, true);
    let (_, report) = plan(inputs, &opts(), &reader).unwrap();
    assert_eq!(report.kept_once, vec!["lat".to_string()]);
    for k in 0..4 {
        let src = reader.get(&format!("file:///ref/f{k}.nc")).unwrap();
        assert_eq!(src.reads(), 0, "file {k}");
    }
}

#[test]
fn a_static_variable_that_differs_is_named_with_the_files_in_time_order() {
    // File 3's lat differs; inputs in reverse order: the error names the first file in time
    // order and file 3, as the exact check always has.
    for keep in [false, true] {
        let mut reader = MemReader::new();
        let mut inputs = referenced_archive(5, &mut reader, Some(3), keep);
        inputs.reverse();
        let e = plan(inputs, &opts(), &reader).unwrap_err();
        let PlanError::Mismatch {
            variable, files, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(variable, "lat");
        assert_eq!(
            (files.first.as_str(), files.second.as_str()),
            ("file:///ref/f0.nc", "file:///ref/f3.nc"),
            "{e}"
        );
        assert!(e.to_string().contains("chunk [0] differs"), "{e}");
    }
    // The same values stored inline in one file: identical, kept once; each range still
    // read once.
    let mut reader = MemReader::new();
    let mut inputs = referenced_archive(3, &mut reader, None, false);
    let lat = inputs[1].arrays.get_mut("lat").unwrap();
    for i in 0..2 {
        let raw: Vec<u8> = (0..3)
            .flat_map(|j| ((3 * i + j) as f32 * 10.0).to_le_bytes())
            .collect();
        lat.manifest.set_inline(i, raw).unwrap();
    }
    let (_, report) = plan(inputs, &opts(), &reader).unwrap();
    assert_eq!(report.kept_once, vec!["lat".to_string()]);
    let reads: Vec<u64> = (0..3)
        .map(|k| reader.get(&format!("file:///ref/f{k}.nc")).unwrap().reads())
        .collect();
    assert_eq!(reads, [6, 4, 6]);
}

/// A string array of `values` along `dims` (shape `shape`, chunks `chunk`), stored inline
/// vlen-utf8 as the HDF5 scanner writes it (edge chunks padded with the fill value).
fn string_array(values: &[String], dims: &[&str], shape: &[u64], chunk: &[u64]) -> VirtualArray {
    use vzarr_core::{ChunkGrid, ChunkManifest, Endian};
    let grid = ChunkGrid::regular(shape, chunk).unwrap();
    let n = grid.n_chunks().unwrap() as usize;
    let mut manifest = ChunkManifest::new_missing(n);
    for i in 0..n {
        let idx = grid.chunk_index(i as u64);
        let origin = grid.chunk_origin(&idx);
        let nominal = grid.chunk_shape(&idx);
        // 1-D or 2-D only here.
        let mut items = Vec::new();
        let rows = nominal[0];
        let cols = nominal.get(1).copied().unwrap_or(1);
        for r in 0..rows {
            for c in 0..cols {
                let (gr, gc) = (origin[0] + r, origin.get(1).copied().unwrap_or(0) + c);
                let inside = gr < shape[0] && shape.get(1).is_none_or(|&w| gc < w);
                let width = shape.get(1).copied().unwrap_or(1);
                items.push(if inside {
                    values[(gr * width + gc) as usize].clone()
                } else {
                    "NA".to_string()
                });
            }
        }
        manifest
            .set_inline(i, vzarr_codec::vlen_utf8::encode(&items).unwrap())
            .unwrap();
    }
    VirtualArray {
        data_type: DataType::String,
        endian: Endian::Little,
        fill_value: FillValue::from_text("NA"),
        codecs: vec![],
        dimension_names: dims.iter().map(|d| d.to_string()).collect(),
        attributes: Default::default(),
        grid,
        manifest,
    }
}

#[test]
fn string_variables_concatenate_and_static_ones_are_kept_once() {
    // Two months; a per-day label along time in chunks of 10 (January's last chunk holds 1
    // valid day of 10: re-encoded), and a static list of station names.
    let stations: Vec<String> = ["Oslo", "Tromsø", ""]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut inputs = vec![
        month_file("file:///a.nc", 0, 31, 10, 0, &[]),
        month_file("file:///b.nc", 31, 28, 10, 0, &[]),
    ];
    let mut labels_all = Vec::new();
    for (ds, (start, len)) in inputs.iter_mut().zip([(0u64, 31u64), (31, 28)]) {
        let labels: Vec<String> = (start..start + len).map(|d| format!("day {d} ✓")).collect();
        labels_all.extend(labels.clone());
        ds.arrays.insert(
            "label".into(),
            string_array(&labels, &["time"], &[len], &[10]),
        );
        ds.arrays.insert(
            "station".into(),
            string_array(&stations, &["station"], &[3], &[2]),
        );
    }
    let (ds, report) = plan(inputs.clone(), &opts(), &MemReader::default()).unwrap();
    assert!(report.concatenated.contains(&"label".to_string()));
    assert_eq!(report.kept_once, vec!["station".to_string()]);
    assert_eq!(
        report.trimmed_chunks, 0,
        "string chunks are never trimmed by reference"
    );
    assert_eq!(report.materialised_chunks, 1);
    let label = &ds.arrays["label"];
    assert_eq!(label.data_type, DataType::String);
    let DimGrid::Varying { edges, .. } = &label.grid.dims()[0] else {
        panic!("expected varying")
    };
    // The last chunk keeps its nominal edge past the end of the axis.
    assert_eq!(edges, &vec![10, 10, 10, 1, 10, 10, 10]);
    // Every element, chunk by chunk, equals the labels in time order.
    let mut got = Vec::new();
    for i in 0..edges.len() {
        let ChunkRef::Inline(b) = label.manifest.get(i) else {
            panic!("chunk {i} not inline")
        };
        let nominal = label.grid.chunk_shape(&[i as u64])[0] as usize;
        let valid = label.grid.chunk_valid_shape(&[i as u64])[0] as usize;
        let items = vzarr_codec::vlen_utf8::decode(b, nominal).unwrap();
        got.extend(items.into_iter().take(valid));
    }
    assert_eq!(got, labels_all);
    // A static string variable that differs in one file is refused, naming it.
    let other: Vec<String> = ["Oslo", "Bergen", ""]
        .iter()
        .map(|s| s.to_string())
        .collect();
    inputs[1].arrays.insert(
        "station".into(),
        string_array(&other, &["station"], &[3], &[2]),
    );
    let e = plan(inputs, &opts(), &MemReader::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("station") && e.contains("identical"), "{e}");
}

/// A file of `archive` laid out as NEMO writes it: the CF time coordinate is the variable
/// `time_centered` along `time`, and the coordinate variable `time` holds zeros.
fn nemo_like(mut ds: vzarr_core::VirtualDataset) -> vzarr_core::VirtualDataset {
    let t = ds.arrays.shift_remove("time").unwrap();
    let n = t.shape()[0] as usize;
    let mut zeros = t.clone();
    zeros.attributes.clear();
    zeros.manifest = vzarr_core::ChunkManifest::new_missing(1);
    zeros.manifest.set_inline(0, vec![0u8; 8 * n]).unwrap();
    ds.arrays.insert("time_centered".into(), t);
    ds.arrays.insert("time".into(), zeros);
    ds
}

#[test]
fn files_are_ordered_by_the_variable_given() {
    let mut inputs: Vec<_> = archive(4, 1, 1, &[]).into_iter().map(nemo_like).collect();
    inputs.reverse();
    // The coordinate (zeros everywhere) cannot order them.
    let e = plan(inputs.clone(), &opts(), &MemReader::default()).unwrap_err();
    assert!(matches!(e, PlanError::Overlap(_)), "{e}");

    let by = opts().with_order_by(Some("time_centered".into()));
    let (ds, report) = plan(inputs.clone(), &by, &MemReader::default()).unwrap();
    let names: Vec<&str> = report
        .order
        .iter()
        .map(|u| vzarr_plan::file_name(u))
        .collect();
    assert_eq!(names, ["f00000.nc", "f00001.nc", "f00002.nc", "f00003.nc"]);
    assert_eq!(report.ordered_by.as_deref(), Some("time_centered"));
    // The ordering variable is CF time: re-encoded into the first file's units, continuous.
    let t = time_values(&ds.arrays["time_centered"]);
    assert_eq!(t.len(), 31 + 28 + 31 + 30);
    assert!(
        t.iter().enumerate().all(|(i, &v)| v == i as f64 + 0.5),
        "{t:?}"
    );
    assert_eq!(
        ds.arrays["time_centered"].attributes["units"],
        "days since 2000-01-01"
    );
    // The dimension's own coordinate is concatenated as stored.
    assert_eq!(ds.arrays["time"].shape(), vec![120]);
    assert!(!ds.arrays["time"].attributes.contains_key("units"));
    assert_eq!(ds.arrays["var0"].shape(), vec![120, 4, 5]);
    let concat = ds.provenance.concat.as_ref().unwrap();
    assert_eq!(concat.order_by.as_deref(), Some("time_centered"));
    assert_eq!(concat.retimed.len(), 1);
    assert_eq!(concat.retimed[0].array, "time_centered");

    // Files without a coordinate at all are ordered by the variable too (WRF's XTIME).
    let no_coord: Vec<_> = inputs
        .iter()
        .cloned()
        .map(|mut d| {
            d.arrays.shift_remove("time");
            d
        })
        .collect();
    let (_, report) = plan(no_coord, &by, &MemReader::default()).unwrap();
    assert_eq!(vzarr_plan::file_name(&report.order[0]), "f00000.nc");
}

#[test]
fn an_ordering_variable_must_exist_and_run_along_the_dimension() {
    let inputs: Vec<_> = archive(3, 1, 1, &[]).into_iter().map(nemo_like).collect();
    let e = plan(
        inputs.clone(),
        &opts().with_order_by(Some("nope".into())),
        &MemReader::default(),
    )
    .unwrap_err();
    assert!(matches!(e, PlanError::OrderByMissing { .. }), "{e}");
    assert!(e.to_string().contains("\"nope\""), "{e}");

    let e = plan(
        inputs.clone(),
        &opts().with_order_by(Some("var0".into())),
        &MemReader::default(),
    )
    .unwrap_err();
    assert!(matches!(e, PlanError::OrderByNotAlongDim { .. }), "{e}");
    assert!(
        e.to_string().contains("f00000.nc") && e.to_string().contains("[\"time\", \"y\", \"x\"]"),
        "{e}"
    );

    let mut one_lacks = inputs.clone();
    one_lacks[1].arrays.shift_remove("time_centered");
    let e = plan(
        one_lacks,
        &opts().with_order_by(Some("time_centered".into())),
        &MemReader::default(),
    )
    .unwrap_err();
    assert!(matches!(e, PlanError::MissingVariable { .. }), "{e}");
    assert_eq!(e.file().map(vzarr_plan::file_name), Some("f00001.nc"));

    let stack = PlanOptions::new(Concat::New {
        dim: "member".into(),
        labels: None,
    })
    .with_order_by(Some("time_centered".into()));
    let e = plan(inputs, &stack, &MemReader::default()).unwrap_err();
    assert!(matches!(e, PlanError::OrderByWithNewDim { .. }), "{e}");
}

#[test]
fn the_file_that_disagrees_is_named_whatever_its_position() {
    // File 0 (first by URL, in time and in input order) has another data type: it is the
    // odd one, not file 1 compared with it.
    for reverse in [false, true] {
        let mut inputs = archive(5, 1, 2, &[]);
        inputs[0].arrays.get_mut("var1").unwrap().data_type = DataType::Float64;
        if reverse {
            inputs.reverse();
        }
        let e = plan(inputs, &opts(), &MemReader::default()).unwrap_err();
        assert_eq!(
            e.file().map(vzarr_plan::file_name),
            Some("f00000.nc"),
            "{e}"
        );
        assert!(e.to_string().contains("data type"), "{e}");
    }
    // A file with no time steps, whose fill values differ from the others' (as xarray writes
    // an empty selection): sorted first in time (it has no values), it is still the odd one.
    let mut inputs = archive(4, 1, 1, &[]);
    let mut empty = month_file("file:///archive/a_empty.nc", 0, 0, 1, 1, &[]);
    empty.arrays.get_mut("var0").unwrap().fill_value =
        FillValue::from_f64(DataType::Float32, f32::NAN as f64).unwrap();
    inputs.insert(0, empty);
    let e = plan(inputs, &opts(), &MemReader::default()).unwrap_err();
    assert_eq!(
        e.file().map(vzarr_plan::file_name),
        Some("a_empty.nc"),
        "{e}"
    );
    // Two against two: the group of the first URL is the reference, in any input order.
    for reverse in [false, true] {
        let mut inputs = archive(4, 1, 1, &[]);
        for ds in &mut inputs[2..] {
            ds.arrays
                .get_mut("var0")
                .unwrap()
                .attributes
                .insert("scale_factor".into(), 0.5.into());
        }
        if reverse {
            inputs.reverse();
        }
        let e = plan(inputs, &opts(), &MemReader::default()).unwrap_err();
        assert_eq!(
            e.file().map(vzarr_plan::file_name),
            Some("f00002.nc"),
            "{e}"
        );
    }
}

#[test]
fn a_static_variable_that_differs_in_the_first_file_names_the_first_file() {
    // File 0's lat differs from the four others': file 0 is named, against file 1 (the first
    // of the files that agree), whatever the input order.
    for reverse in [false, true] {
        let mut reader = MemReader::new();
        let mut inputs = referenced_archive(5, &mut reader, Some(0), false);
        if reverse {
            inputs.reverse();
        }
        let e = plan(inputs, &opts(), &reader).unwrap_err();
        let PlanError::Mismatch { files, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(
            (files.first.as_str(), files.second.as_str()),
            ("file:///ref/f1.nc", "file:///ref/f0.nc"),
            "{e}"
        );
        assert_eq!(e.file(), Some("file:///ref/f0.nc"));
    }
}
