//! Independent oracle: files written by netCDF-C (through the `netcdf` crate) in all three
//! NetCDF3 formats, scanned by us, read back through our manifests only, and compared value by
//! value (bitwise) with what netCDF-C reads; attributes, dimension names and fill values too.

use std::path::Path;

use crate::common::*;
use serde_json::json;
use vzarr_core::{ChunkRef, DataType, DimGrid, Endian, VirtualDataset, attrs};
use vzarr_netcdf3::{
    ByteSource, FIRST_READ_BYTES, Header, MemSource, ScanOptions, parse_header, scan,
};
use vzarr_source::LocalFile;

const SPLITS: [Option<u64>; 8] = [
    None,
    Some(0),
    Some(1),
    Some(40),
    Some(64),
    Some(100),
    Some(440),
    Some(1 << 20),
];

/// Scans `path` and checks everything against the netCDF library; returns what we built.
fn check_against_netcdf(path: &Path, opts: &ScanOptions) -> (Header, VirtualDataset) {
    let bytes = std::fs::read(path).unwrap();
    let src = LocalFile::open(path).unwrap();
    let header = parse_header(&src).unwrap();
    let ds = scan(&src, opts).unwrap();
    ds.validate().unwrap();
    assert!(ds.skipped.is_empty(), "{:?}", ds.skipped);
    let nc = netcdf::open(path).unwrap();

    // Global attributes, in file order.
    let root = ds.root_attributes().unwrap();
    let names: Vec<String> = nc.attributes().map(|a| a.name().to_string()).collect();
    let (ours, types) = user_attributes(root);
    assert_eq!(ours, names);
    for a in nc.attributes() {
        assert_eq!(
            types.get(a.name()).map(String::as_str),
            netcdf_attr_type(&a),
            "type of global attribute {}",
            a.name()
        );
        assert_eq!(
            root[a.name()],
            netcdf_attr_json(&a),
            "global attribute {}",
            a.name()
        );
    }

    // Dimensions.
    let nc_dims: Vec<_> = nc.dimensions().collect();
    assert_eq!(header.dims.len(), nc_dims.len());
    for (ours, theirs) in header.dims.iter().zip(&nc_dims) {
        assert_eq!(ours.name, theirs.name());
        assert_eq!(ours.is_record, theirs.is_unlimited());
        let len = if ours.is_record {
            header.numrecs
        } else {
            ours.len
        };
        assert_eq!(len, theirs.len() as u64, "dimension {}", ours.name);
    }

    // Variables.
    assert_eq!(ds.arrays.len(), nc.variables().count());
    assert_eq!(header.variables.len(), ds.arrays.len());
    for v in nc.variables() {
        let name = v.name();
        let a = &ds.arrays[&name];
        let dim_names: Vec<String> = v.dimensions().iter().map(|d| d.name()).collect();
        assert_eq!(a.dimension_names, dim_names, "{name}");
        let shape: Vec<u64> = v.dimensions().iter().map(|d| d.len() as u64).collect();
        assert_eq!(a.shape(), shape, "{name}");
        assert_eq!(a.endian, Endian::Big);
        assert!(a.codecs.is_empty());
        assert_eq!(
            read_via_manifest(&bytes, a),
            read_via_netcdf(&v),
            "values of {name} in {} (split {:?})",
            path.display(),
            opts.split_contiguous_bytes
        );
        assert_eq!(
            a.fill_value.le_bytes(),
            netcdf_fill_le(&v, a.data_type.clone()),
            "fill value of {name}"
        );
        let attr_names: Vec<String> = v.attributes().map(|x| x.name().to_string()).collect();
        let (ours, types) = user_attributes(&a.attributes);
        assert_eq!(ours, attr_names, "{name}");
        for att in v.attributes().filter(|x| x.name() != "_FillValue") {
            assert_eq!(
                types.get(att.name()).map(String::as_str),
                netcdf_attr_type(&att),
                "type of {name}@{}",
                att.name()
            );
        }
        for att in v.attributes() {
            let ours = &a.attributes[att.name()];
            if att.name() == "_FillValue" {
                assert_eq!(
                    ours,
                    &attrs::cf_fill_value(a.data_type.clone(), &a.fill_value)
                );
                assert_eq!(
                    a.fill_value.to_zarr_json(a.data_type.clone()),
                    netcdf_attr_json(&att),
                    "_FillValue of {name}"
                );
            } else {
                assert_eq!(ours, &netcdf_attr_json(&att), "{name}.{}", att.name());
            }
        }
        // Every chunk lies inside the file.
        for c in a.manifest.iter() {
            if let ChunkRef::Range { offset, length, .. } = c {
                assert!(offset + length <= bytes.len() as u64);
                assert!(offset >= header.header_len);
            }
        }
    }
    (header, ds)
}

#[test]
fn rich_files_match_netcdf_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for fmt in Fmt::ALL {
        for nrecs in [0, 1, 4] {
            let path = dir.path().join(format!("rich_{fmt:?}_{nrecs}.nc"));
            write_rich(&path, fmt, nrecs);
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[..4], &[b'C', b'D', b'F', fmt.version()]);
            for split in SPLITS {
                let opts = ScanOptions {
                    split_contiguous_bytes: split,
                };
                let (h, ds) = check_against_netcdf(&path, &opts);
                assert_eq!(h.version, fmt.version());
                assert_eq!(h.numrecs, nrecs as u64);
                assert!(!h.streaming);
                // Several record variables: records are padded to 4 bytes per variable.
                let recsize: u64 = h
                    .variables
                    .iter()
                    .filter(|v| v.is_record)
                    .map(|v| v.slab_bytes.next_multiple_of(4))
                    .sum();
                assert_eq!(h.record_size, recsize);
                let n_types = if fmt == Fmt::Cdf5 { 10 } else { 5 };
                assert_eq!(ds.arrays.len(), 3 * n_types + 14);
            }
        }
    }
}

#[test]
fn types_dims_and_metadata_of_the_rich_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rich5.nc");
    write_rich(&path, Fmt::Cdf5, 3);
    let src = LocalFile::open(&path).unwrap();
    let ds = scan(&src, &ScanOptions::default()).unwrap();
    let dt = |n: &str| ds.arrays[n].data_type.clone();
    for (name, t) in [
        ("fix_byte", DataType::Int8),
        ("fix_short", DataType::Int16),
        ("fix_int", DataType::Int32),
        ("fix_float", DataType::Float32),
        ("fix_double", DataType::Float64),
        ("fix_ubyte", DataType::UInt8),
        ("fix_ushort", DataType::UInt16),
        ("fix_uint", DataType::UInt32),
        ("fix_int64", DataType::Int64),
        ("fix_uint64", DataType::UInt64),
        ("names", DataType::FixedBytes(1)),
    ] {
        assert_eq!(dt(name), t, "{name}");
    }
    // Record variable: one chunk per record, whole record.
    let rec = &ds.arrays["rec_short"];
    assert_eq!(rec.shape(), vec![3, 3]);
    assert_eq!(
        rec.zarr_metadata()["chunk_grid"],
        json!({"name": "regular", "configuration": {"chunk_shape": [1, 3]}})
    );
    assert_eq!(rec.manifest.len(), 3);
    let text = &ds.arrays["names"];
    assert_eq!(text.dimension_names, vec!["x", "strlen"]);
    assert_eq!(
        text.zarr_metadata()["data_type"],
        json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}})
    );
    // Scalars: 0-d, one chunk.
    let s = &ds.arrays["scalar_double"];
    assert!(s.shape().is_empty());
    assert_eq!(s.manifest.len(), 1);
    assert!(matches!(
        s.manifest.get(0),
        ChunkRef::Range { length: 8, .. }
    ));
    // No invented _FillValue; the default fill is the Zarr fill_value.
    let u = &ds.arrays["unwritten"];
    assert!(!u.attributes.contains_key("_FillValue"));
    assert_eq!(u.fill_value.to_zarr_json(DataType::Int16), json!(-32767));
    let f = &ds.arrays["fix_float"];
    assert_eq!(
        f.fill_value.to_zarr_json(DataType::Float32),
        json!(9.969_209_968_386_869e36)
    );
    // _FillValue present: the Zarr fill and the xarray form of the attribute.
    let wf = &ds.arrays["with_fill"];
    assert_eq!(wf.fill_value.to_zarr_json(DataType::Float32), json!(-999.0));
    assert_eq!(
        wf.attributes["_FillValue"],
        attrs::cf_fill_value(DataType::Float32, &wf.fill_value)
    );
    assert!(wf.attributes["_FillValue"].is_string(), "base64 form");
    assert_eq!(
        ds.arrays["with_int_fill"].attributes["_FillValue"],
        json!(-1)
    );
    // Attributes of every type, in file order.
    let a = &ds.arrays["fix_double_attrs"].attributes;
    assert_eq!(a["units"], json!("K"));
    assert_eq!(a["scale_factor"], json!(f64::from(0.01f32)));
    assert_eq!(a["valid_range"], json!([-100, 100]));
    assert_eq!(a["nan_attr"], json!("NaN"));
    assert_eq!(a["u64s"], json!([u64::MAX, 5]));
    let g = ds.root_attributes().unwrap();
    assert_eq!(
        g["history"],
        json!("line one\nline two"),
        "trailing NUL stripped"
    );
    assert_eq!(g["g_floats"][0], json!("NaN"));
    assert_eq!(g["g_floats"][1], json!("Infinity"));
    assert_eq!(g["g_uint64"], json!(u64::MAX));
    assert_eq!(g["g_int64"], json!(i64::MIN));
    assert_eq!(g["g_empty_text"], json!(""));
    assert_eq!(g["g_unicode"], json!("température µ"));
}

#[test]
fn split_contiguous_variables_into_row_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rich1.nc");
    write_rich(&path, Fmt::Cdf1, 2);
    let src = LocalFile::open(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // big(z=11, y=5) double: 40-byte rows, 440 bytes.
    let cases: [(u64, Vec<u64>); 6] = [
        (100, vec![2, 2, 2, 2, 2, 1]),
        (120, vec![3, 3, 3, 2]),
        (40, vec![1; 11]),
        (1, vec![1; 11]),
        (220, vec![5, 5, 1]),
        (439, vec![10, 1]),
    ];
    for (target, edges) in cases {
        let ds = scan(
            &src,
            &ScanOptions {
                split_contiguous_bytes: Some(target),
            },
        )
        .unwrap();
        let big = &ds.arrays["big"];
        assert_eq!(big.grid.dims()[0].edges(), edges, "target {target}");
        assert_eq!(big.grid.dims()[1], DimGrid::Fixed { size: 5, extent: 5 });
        assert_eq!(big.grid.is_regular(), edges.iter().all(|&e| e == edges[0]));
        // Byte ranges are consecutive and end exactly at the variable's end.
        let begin = match big.manifest.get(0) {
            ChunkRef::Range { offset, .. } => offset,
            other => panic!("{other:?}"),
        };
        let mut at = begin;
        for (i, e) in edges.iter().enumerate() {
            match big.manifest.get(i) {
                ChunkRef::Range { offset, length, .. } => {
                    assert_eq!((offset, length), (at, e * 40));
                    at += length;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(at, begin + 440);
        let nc = netcdf::open(&path).unwrap();
        assert_eq!(
            read_via_manifest(&bytes, big),
            read_via_netcdf(&nc.variable("big").unwrap())
        );
        if !big.grid.is_regular() {
            assert_eq!(
                big.zarr_metadata()["chunk_grid"]["name"],
                json!("rectilinear")
            );
        }
    }
    // Small variables and targets at or above the size stay one chunk.
    let ds = scan(
        &src,
        &ScanOptions {
            split_contiguous_bytes: Some(440),
        },
    )
    .unwrap();
    assert_eq!(ds.arrays["big"].manifest.len(), 1);
    assert_eq!(ds.arrays["scalar_double"].manifest.len(), 1);
}

#[test]
fn single_record_variable_records_are_not_padded() {
    let dir = tempfile::tempdir().unwrap();
    for fmt in Fmt::ALL {
        for (kind, unpadded) in [
            (Single::Short, 6),
            (Single::Byte, 1),
            (Single::Char, 5),
            (Single::Double, 24),
            (Single::UShort, 6),
        ] {
            if matches!(kind, Single::UShort) && fmt != Fmt::Cdf5 {
                continue;
            }
            for nrecs in [0, 1, 5] {
                let path = dir
                    .path()
                    .join(format!("single_{fmt:?}_{kind:?}_{nrecs}.nc"));
                write_single(&path, fmt, kind, nrecs);
                for split in [None, Some(1)] {
                    let (h, ds) = check_against_netcdf(
                        &path,
                        &ScanOptions {
                            split_contiguous_bytes: split,
                        },
                    );
                    assert_eq!(h.record_size, unpadded, "{fmt:?} {kind:?}");
                    let only = &ds.arrays["only"];
                    assert_eq!(only.manifest.len(), nrecs);
                    if nrecs >= 2 {
                        let off = |i| match only.manifest.get(i) {
                            ChunkRef::Range { offset, .. } => offset,
                            other => panic!("{other:?}"),
                        };
                        assert_eq!(off(1) - off(0), unpadded);
                    }
                }
            }
        }
    }
}

#[test]
fn zero_records_give_empty_record_axes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero.nc");
    write_rich(&path, Fmt::Cdf2, 0);
    let src = LocalFile::open(&path).unwrap();
    let ds = scan(&src, &ScanOptions::default()).unwrap();
    let rec = &ds.arrays["rec_double"];
    assert_eq!(rec.shape(), vec![0, 3]);
    assert_eq!(rec.grid.dims()[0], DimGrid::Fixed { size: 1, extent: 0 });
    assert!(rec.manifest.is_empty());
    assert_eq!(
        rec.zarr_metadata()["chunk_grid"],
        json!({"name": "regular", "configuration": {"chunk_shape": [1, 3]}})
    );
    assert_eq!(ds.arrays["time"].shape(), vec![0]);
}

#[test]
fn typical_header_is_read_in_one_read() {
    let dir = tempfile::tempdir().unwrap();
    for fmt in Fmt::ALL {
        let path = dir.path().join(format!("typical_{fmt:?}.nc"));
        write_typical(&path, fmt, 12);
        check_against_netcdf(&path, &ScanOptions::default());
        let mem = MemSource::new("mem://typical.nc", std::fs::read(&path).unwrap());
        let h = parse_header(&mem).unwrap();
        assert_eq!(h.variables.len(), 10);
        assert!(h.reads <= 2, "{} reads", h.reads);
        assert_eq!(h.reads, 1);
        assert_eq!(u64::from(h.reads), mem.reads());
        assert_eq!(h.bytes_read, mem.bytes_read());
        assert_eq!(h.bytes_read, mem.size().min(FIRST_READ_BYTES));
        println!(
            "typical {fmt:?}: {} variables, header {} bytes, file {} bytes; header scan costs {} bytes in {} read(s)",
            h.variables.len(),
            h.header_len,
            h.file_size,
            h.bytes_read,
            h.reads
        );
        // A full scan reads nothing more than the header scan.
        let mem2 = MemSource::new("mem://typical.nc", mem.data().to_vec());
        scan(&mem2, &ScanOptions::default()).unwrap();
        assert_eq!(mem2.reads(), 1);
    }
}

#[test]
fn long_header_is_read_in_growing_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long_header.nc");
    {
        let mut f = netcdf::create_with(&path, netcdf::Options::_64BIT_OFFSET).unwrap();
        f.add_dimension("x", 4).unwrap();
        for i in 0..200 {
            f.add_attribute(&format!("comment_{i:03}"), "y".repeat(1000 + i))
                .unwrap();
        }
        f.add_variable::<f32>("v", &["x"]).unwrap();
        f.enddef().unwrap();
        f.variable_mut("v")
            .unwrap()
            .put_values(&[1f32, 2., 3., 4.], ..)
            .unwrap();
        f.close().unwrap();
    }
    let (h, _) = check_against_netcdf(&path, &ScanOptions::default());
    assert!(h.header_len > 2 * FIRST_READ_BYTES, "{}", h.header_len);
    // 64 KiB, then doubling: 128 KiB, 256 KiB (the file is ~220 KB).
    assert_eq!(h.reads, 3, "{h:?}");
    assert!(h.bytes_read <= h.file_size);
    println!(
        "long header: {} bytes, file {} bytes; scan costs {} bytes in {} reads",
        h.header_len, h.file_size, h.bytes_read, h.reads
    );
}

#[test]
fn streaming_numrecs_is_computed_from_the_file_size() {
    let dir = tempfile::tempdir().unwrap();
    for fmt in Fmt::ALL {
        let path = dir.path().join(format!("stream_{fmt:?}.nc"));
        write_rich(&path, fmt, 4);
        let orig = std::fs::read(&path).unwrap();
        let nc = netcdf::open(&path).unwrap();
        let mut bytes = orig.clone();
        let w = if fmt == Fmt::Cdf5 { 8 } else { 4 };
        bytes[4..4 + w].fill(0xFF);
        let src = MemSource::new("mem://stream.nc", bytes.clone());
        let h = parse_header(&src).unwrap();
        assert!(h.streaming);
        assert_eq!(h.numrecs, 4);
        let ds = scan(&src, &ScanOptions::default()).unwrap();
        for v in nc.variables() {
            assert_eq!(
                read_via_manifest(&bytes, &ds.arrays[&v.name()]),
                read_via_netcdf(&v),
                "{}",
                v.name()
            );
        }
        // A partly written last record is not counted.
        let cut = bytes.len() - (h.record_size as usize) / 2;
        let src = MemSource::new("mem://stream.nc", bytes[..cut].to_vec());
        let h2 = parse_header(&src).unwrap();
        assert_eq!(h2.numrecs, 3);
        let ds2 = scan(&src, &ScanOptions::default()).unwrap();
        assert_eq!(ds2.arrays["rec_int"].shape(), vec![3, 3]);
    }
}

#[test]
fn hand_built_files_parse_like_the_library_writes_them() {
    // The test builder lays files out like netcdf-c; the netCDF library agrees with it.
    let dir = tempfile::tempdir().unwrap();
    for version in [1u8, 2, 5] {
        let mut s = Spec::new(version);
        s.numrecs = Some(3);
        s.dims = vec![(b"t".to_vec(), 0), (b"x".to_vec(), 3)];
        s.gatts = vec![SAttr::text("title", "hand made"), SAttr::ints("n", &[1, 2])];
        let mut a = SVar::new("a", 3, &[1]);
        a.attrs = vec![SAttr::doubles("scale", &[0.5])];
        s.vars = vec![a, SVar::new("r", 1, &[0, 1]), SVar::new("q", 6, &[0])];
        let (bytes, _) = s.build();
        let path = dir.path().join(format!("hand{version}.nc"));
        std::fs::write(&path, &bytes).unwrap();
        let (h, ds) = check_against_netcdf(&path, &ScanOptions::default());
        assert_eq!(h.record_size, 4 + 8);
        assert_eq!(ds.arrays["r"].shape(), vec![3, 3]);
    }
}
