//! Corrupt and hostile inputs: every one must give a typed error naming the file (never a
//! panic, never a huge allocation), and the scanner must stay exact on the edge of validity.

use crate::common::*;
use vzarr_netcdf3::{MemSource, Nc3Error, ScanOptions, parse_header, scan};

const URL: &str = "mem://test/corrupt.nc";

fn mem(bytes: &[u8]) -> MemSource {
    MemSource::new(URL, bytes.to_vec())
}

fn scan_err(bytes: &[u8]) -> Nc3Error {
    let e = scan(&mem(bytes), &ScanOptions::default()).unwrap_err();
    assert!(
        e.to_string().starts_with(URL),
        "message must name the file: {e}"
    );
    e
}

fn header_err(bytes: &[u8]) -> Nc3Error {
    let e = parse_header(&mem(bytes)).unwrap_err();
    assert!(
        e.to_string().starts_with(URL),
        "message must name the file: {e}"
    );
    e
}

fn rich_bytes(fmt: Fmt, nrecs: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.nc");
    write_rich(&path, fmt, nrecs);
    std::fs::read(&path).unwrap()
}

#[test]
fn bad_magic_and_version() {
    assert!(matches!(header_err(b""), Nc3Error::BadMagic { .. }));
    assert!(matches!(header_err(b"CD"), Nc3Error::BadMagic { .. }));
    assert!(matches!(
        header_err(b"\x89HDF\r\n\x1a\n0000000000000000000000000"),
        Nc3Error::BadMagic { .. }
    ));
    let e = header_err(b"CDF\x03\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
    assert!(
        matches!(e, Nc3Error::UnsupportedVersion { version: 3, .. }),
        "{e}"
    );
    let e = header_err(b"");
    assert!(e.to_string().contains("not a NetCDF3 file"), "{e}");
}

#[test]
fn smallest_files() {
    // The 32-byte empty file of the specification (CDF-1) and its CDF-2 and CDF-5 forms.
    for version in [1u8, 2, 5] {
        let (bytes, _) = Spec::new(version).build();
        let expect = if version == 5 { 4 + 8 + 3 * 12 } else { 32 };
        assert_eq!(bytes.len(), expect);
        let h = parse_header(&mem(&bytes)).unwrap();
        assert_eq!(
            (h.version, h.numrecs, h.header_len),
            (version, 0, expect as u64)
        );
        let ds = scan(&mem(&bytes), &ScanOptions::default()).unwrap();
        assert!(ds.arrays.is_empty());
        assert!(ds.root_attributes().unwrap().is_empty());
    }
}

#[test]
fn truncated_at_every_byte() {
    for fmt in Fmt::ALL {
        let bytes = rich_bytes(fmt, 2);
        let full = scan(&mem(&bytes), &ScanOptions::default()).unwrap();
        let h = parse_header(&mem(&bytes)).unwrap();
        // The end of the last byte any chunk references.
        let max_end = full
            .arrays
            .values()
            .flat_map(|a| a.manifest.iter())
            .filter_map(|c| match c {
                vzarr_core::ChunkRef::Range { offset, length, .. } => Some(offset + length),
                _ => None,
            })
            .max()
            .unwrap();
        for cut in 0..bytes.len() {
            let part = &bytes[..cut];
            if (cut as u64) < h.header_len {
                let e = header_err(part);
                assert!(
                    matches!(
                        e,
                        Nc3Error::TruncatedHeader { .. }
                            | Nc3Error::BadMagic { .. }
                            | Nc3Error::AbsurdCount { .. }
                    ),
                    "cut {cut}: {e}"
                );
                scan_err(part);
            } else {
                parse_header(&mem(part)).unwrap();
                let r = scan(&mem(part), &ScanOptions::default());
                if (cut as u64) < max_end {
                    let e = r.unwrap_err();
                    assert!(matches!(e, Nc3Error::BeyondEof { .. }), "cut {cut}: {e}");
                } else {
                    r.unwrap();
                }
            }
        }
    }
}

#[test]
fn truncated_data_names_file_variable_and_reason() {
    let bytes = rich_bytes(Fmt::Cdf1, 3);
    // The file ends with the padding of the last record's last variable (rec_odd, 1 byte):
    // cutting the padding loses nothing, cutting the byte loses the record.
    let end = bytes.len() - 3;
    scan(&mem(&bytes[..end]), &ScanOptions::default()).unwrap();
    let e = scan_err(&bytes[..end - 1]);
    let msg = e.to_string();
    assert!(matches!(e, Nc3Error::BeyondEof { .. }), "{msg}");
    assert!(msg.contains("variable 'rec_odd'"), "{msg}");
    assert!(msg.contains("record 2"), "{msg}");
    assert!(msg.contains("past the end of the file"), "{msg}");
}

#[test]
fn billions_of_records_in_a_sparse_file() {
    // numrecs 2^31 - 1 over a sparse file long enough to hold them all.
    let numrecs: u64 = 0x7fff_ffff;
    let scan_sparse = |nvars: usize| {
        let mut s = Spec::new(5);
        s.dims = vec![(b"t".to_vec(), 0), (b"x".to_vec(), 2)];
        s.vars = (0..nvars)
            .map(|k| SVar::new(&format!("r{k}"), 4, &[0, 1]))
            .collect();
        s.numrecs = Some(numrecs);
        let (b, begins) = s.build();
        let record: u64 = 8 * nvars as u64;
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), &b[..begins[0] as usize]).unwrap();
        f.as_file().set_len(begins[0] + numrecs * record).unwrap();
        let src = vzarr_source::LocalFile::open(f.path()).unwrap();
        scan(&src, &ScanOptions::default())
    };
    // The only record variable: its records lie back to back and are grouped into at most
    // 2^20 chunks of 2048 records.
    let ds = scan_sparse(1).unwrap();
    let a = &ds.arrays["r0"];
    assert_eq!(a.shape(), vec![numrecs, 2]);
    assert_eq!(a.grid.dims()[0].chunk_len(0), 2048);
    assert!(a.manifest.len() <= 1 << 20, "{}", a.manifest.len());
    assert_eq!(a.manifest.stored(), a.manifest.len());
    let last = a.manifest.len() - 1;
    let vzarr_core::ChunkRef::Range { length, .. } = a.manifest.get(last) else {
        panic!("last chunk not referenced");
    };
    assert_eq!(
        length,
        (numrecs - last as u64 * 2048) * 8,
        "the last chunk is short"
    );
    // Interleaved records cannot be grouped: refused, nothing allocated per record.
    let e = scan_sparse(2).unwrap_err();
    assert!(matches!(e, Nc3Error::TooManyChunks { .. }), "{e}");
    assert!(e.to_string().contains("r0"), "{e}");
}

#[test]
fn absurd_counts_are_refused_before_allocating() {
    for version in [1u8, 2, 5] {
        let cs = if version == 5 { 8 } else { 4 };
        let mut s = Spec::new(version);
        s.dims = vec![(b"x".to_vec(), 3)];
        s.gatts = vec![SAttr::text("title", "t")];
        s.vars = vec![SVar::new("v", 4, &[0])];
        let (good, _) = s.build();
        parse_header(&mem(&good)).unwrap();
        let huge: u64 = 0x7fff_ffff;
        let patch = |at: usize| {
            let mut b = good.clone();
            if cs == 8 {
                b[at..at + 8].copy_from_slice(&huge.to_be_bytes());
            } else {
                b[at..at + 4].copy_from_slice(&(huge as u32).to_be_bytes());
            }
            b
        };
        // Layout: magic 4, numrecs cs, dim tag 4, dim count, name count, "x"+pad 4, len ...
        let dim_count = 4 + cs + 4;
        let dim_name_len = dim_count + cs;
        let gatt_count = dim_name_len + cs + 4 + cs + 4;
        let gatt_name_len = gatt_count + cs;
        let gatt_nelems = gatt_name_len + cs + 8 + 4;
        let var_count = gatt_nelems + cs + 4 + 4;
        let var_name_len = var_count + cs;
        let var_ndims = var_name_len + cs + 4;
        for (what, at) in [
            ("dimension count", dim_count),
            ("dimension name length", dim_name_len),
            ("attribute count", gatt_count),
            ("attribute name length", gatt_name_len),
            ("attribute value count", gatt_nelems),
            ("variable count", var_count),
            ("variable name length", var_name_len),
        ] {
            let e = header_err(&patch(at));
            assert!(
                matches!(e, Nc3Error::AbsurdCount { count, .. } if count == huge),
                "v{version} {what}: {e}"
            );
            assert!(e.to_string().contains("absurd count"), "{e}");
        }
        // A rank above netCDF-C's NC_MAX_VAR_DIMS (1024), however many bytes remain.
        let e = header_err(&patch(var_ndims));
        assert!(
            matches!(e, Nc3Error::TooManyDims { rank, max: 1024, .. } if rank == huge),
            "v{version} variable rank: {e}"
        );
        if version == 5 {
            // All-ones 64-bit counts do not overflow the checks either.
            let mut b = good.clone();
            b[dim_count..dim_count + 8].fill(0xFF);
            assert!(matches!(header_err(&b), Nc3Error::AbsurdCount { .. }));
        }
    }
}

#[test]
fn absurd_counts_in_a_real_file() {
    for fmt in Fmt::ALL {
        let mut bytes = rich_bytes(fmt, 1);
        let cs = if fmt == Fmt::Cdf5 { 8 } else { 4 };
        let at = 4 + cs + 4;
        bytes[at..at + cs].fill(0);
        bytes[at + cs - 4..at + cs].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        assert!(matches!(header_err(&bytes), Nc3Error::AbsurdCount { .. }));
    }
}

#[test]
fn begin_beyond_end_of_file() {
    for fmt in Fmt::ALL {
        let bytes = rich_bytes(fmt, 2);
        let h = parse_header(&mem(&bytes)).unwrap();
        // The last variable's begin is the last field of the header.
        let w = if fmt == Fmt::Cdf1 { 4 } else { 8 };
        let end = h.header_len as usize;
        let last = h.variables.last().unwrap().name.clone();
        for value in [bytes.len() as u64, u32::MAX as u64, u64::MAX] {
            let mut b = bytes.clone();
            if w == 4 {
                b[end - 4..end].copy_from_slice(&(value as u32).to_be_bytes());
            } else {
                b[end - 8..end].copy_from_slice(&value.to_be_bytes());
            }
            let e = scan_err(&b);
            assert!(
                matches!(&e, Nc3Error::BeyondEof { var, .. } if *var == last),
                "{e}"
            );
        }
    }
    // A hand-made non-record variable far past the end, and one inside the header.
    let mut s = Spec::new(2);
    s.dims = vec![(b"x".to_vec(), 3)];
    let mut v = SVar::new("v", 6, &[0]);
    v.begin = Some(1 << 40);
    s.vars = vec![v];
    let (b, _) = s.build();
    assert!(matches!(scan_err(&b), Nc3Error::BeyondEof { .. }));
    s.vars[0].begin = Some(8);
    let (b, _) = s.build();
    assert!(matches!(
        header_err(&b),
        Nc3Error::DataOverlapsHeader { .. }
    ));
}

#[test]
fn huge_shapes_and_record_counts() {
    // CDF-5 dimensions whose product overflows 64 bits.
    let mut s = Spec::new(5);
    s.dims = vec![(b"a".to_vec(), 1 << 40), (b"b".to_vec(), 1 << 40)];
    s.vars = vec![SVar::new("v", 6, &[0, 1])];
    let (b, _) = s.build();
    assert!(matches!(header_err(&b), Nc3Error::SizeOverflow { .. }));
    // Large but representable: refused by the end-of-file check, nothing allocated.
    s.vars = vec![SVar::new("v", 6, &[0])];
    let (b, _) = s.build();
    assert!(matches!(scan_err(&b), Nc3Error::BeyondEof { .. }));
    // A record count far beyond the file.
    let mut s = Spec::new(5);
    s.dims = vec![(b"t".to_vec(), 0), (b"x".to_vec(), 2)];
    s.vars = vec![SVar::new("r", 4, &[0, 1])];
    s.numrecs = Some(2);
    let (mut b, _) = s.build();
    scan(&mem(&b), &ScanOptions::default()).unwrap();
    b[4..12].copy_from_slice(&(u64::MAX - 1).to_be_bytes());
    assert!(matches!(scan_err(&b), Nc3Error::BeyondEof { .. }));
    // Splitting a large fixed variable into tiny chunks is bounded by the file too.
    let mut s = Spec::new(5);
    s.dims = vec![(b"a".to_vec(), 1 << 40)];
    s.vars = vec![SVar::new("v", 1, &[0])];
    let (b, _) = s.build();
    let e = scan(
        &mem(&b),
        &ScanOptions {
            split_contiguous_bytes: Some(1),
        },
    )
    .unwrap_err();
    assert!(matches!(e, Nc3Error::BeyondEof { .. }), "{e}");
}

#[test]
fn streaming_numrecs_hand_built() {
    for version in [1u8, 2, 5] {
        let mut s = Spec::new(version);
        s.numrecs = Some(5);
        s.dims = vec![(b"t".to_vec(), 0), (b"x".to_vec(), 3)];
        s.vars = vec![
            SVar::new("fixed", 4, &[1]),
            SVar::new("r1", 3, &[0, 1]),
            SVar::new("r2", 1, &[0]),
        ];
        let (mut b, _) = s.build();
        let w = if version == 5 { 8 } else { 4 };
        b[4..4 + w].fill(0xFF);
        let h = parse_header(&mem(&b)).unwrap();
        assert!(h.streaming);
        assert_eq!(h.numrecs, 5);
        assert_eq!(h.record_size, 8 + 4);
        // The last record without its trailing padding still counts: r2's byte is there.
        let short = &b[..b.len() - 3];
        assert_eq!(parse_header(&mem(short)).unwrap().numrecs, 5);
        scan(&mem(short), &ScanOptions::default()).unwrap();
        // Without r2's byte the last record is incomplete.
        let shorter = &b[..b.len() - 4];
        assert_eq!(parse_header(&mem(shorter)).unwrap().numrecs, 4);
        // No records at all.
        let h0 = parse_header(&mem(&b[..h.header_len as usize + 12])).unwrap();
        assert_eq!(h0.numrecs, 0);
    }
}

#[test]
fn unknown_types_bad_ids_tags_and_names() {
    let base = || {
        let mut s = Spec::new(1);
        s.dims = vec![(b"t".to_vec(), 0), (b"x".to_vec(), 3)];
        s.vars = vec![SVar::new("v", 4, &[1])];
        s
    };
    // Unknown nc_type, and CDF-5 types in a CDF-1 file.
    for ty in [0u32, 12, 7, 11] {
        let mut s = base();
        s.vars[0].ty = ty;
        let e = header_err(&s.build().0);
        assert!(
            matches!(e, Nc3Error::UnknownType { code, .. } if code == ty),
            "{e}"
        );
        let mut s = base();
        s.gatts = vec![SAttr {
            name: b"a".to_vec(),
            ty,
            count: 1,
            raw: vec![0; 8],
        }];
        assert!(matches!(
            header_err(&s.build().0),
            Nc3Error::UnknownType { .. }
        ));
    }
    // CDF-5 accepts them.
    let mut s = base();
    s.version = 5;
    s.vars[0].ty = 11;
    parse_header(&mem(&s.build().0)).unwrap();
    // Dimension id past the list.
    let mut s = base();
    s.vars[0].dimids = vec![2];
    let e = header_err(&s.build().0);
    assert!(matches!(e, Nc3Error::BadDimId { dimid: 2, .. }), "{e}");
    // Record dimension not first.
    let mut s = base();
    s.vars[0].dimids = vec![1, 0];
    let e = header_err(&s.build().0);
    assert!(
        matches!(e, Nc3Error::RecordDimNotFirst { axis: 1, .. }),
        "{e}"
    );
    // Names that are not UTF-8.
    let mut s = base();
    s.dims[1].0 = vec![b'x', 0xFF];
    assert!(matches!(header_err(&s.build().0), Nc3Error::BadName { .. }));
    let mut s = base();
    s.vars[0].name = vec![0xC3];
    let e = header_err(&s.build().0);
    assert!(matches!(e, Nc3Error::BadName { .. }), "{e}");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
    // A wrong list tag with a non-zero count.
    let (mut b, _) = base().build();
    b[8..12].copy_from_slice(&0x0Bu32.to_be_bytes());
    assert!(matches!(header_err(&b), Nc3Error::BadTag { tag: 0x0B, .. }));
    // ABSENT with a non-zero tag is accepted (as netcdf-c does).
    let mut s = base();
    s.dims.clear();
    s.vars.clear();
    let (mut b, _) = s.build();
    b[8..12].copy_from_slice(&0x0Au32.to_be_bytes());
    parse_header(&mem(&b)).unwrap();
}

#[test]
fn per_variable_problems_skip_the_variable_only() {
    let mut s = Spec::new(2);
    s.dims = vec![(b"x".to_vec(), 3)];
    let mut bad_fill = SVar::new("bad_fill", 4, &[0]);
    bad_fill.attrs = vec![SAttr::ints("_FillValue", &[1, 2])];
    let mut wide_fill = SVar::new("wide_fill", 1, &[0]);
    wide_fill.attrs = vec![SAttr::ints("_FillValue", &[1000])];
    let mut conv_fill = SVar::new("conv_fill", 6, &[0]);
    conv_fill.attrs = vec![SAttr::ints("_FillValue", &[-9])];
    s.vars = vec![
        SVar::new("ok", 4, &[0]),
        SVar::new("a/b", 4, &[0]),
        SVar::new("ok", 5, &[0]),
        bad_fill,
        wide_fill,
        conv_fill,
        SVar::new("", 4, &[0]),
    ];
    let (b, _) = s.build();
    let ds = scan(&mem(&b), &ScanOptions::default()).unwrap();
    let mut arrays: Vec<&str> = ds.arrays.keys().map(String::as_str).collect();
    arrays.sort();
    assert_eq!(arrays, vec!["conv_fill", "ok"]);
    assert_eq!(ds.arrays["ok"].data_type, vzarr_core::DataType::Int32);
    assert_eq!(
        ds.arrays["conv_fill"]
            .fill_value
            .to_zarr_json(vzarr_core::DataType::Float64),
        serde_json::json!(-9.0)
    );
    let skipped: Vec<(&str, &str)> = ds
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert!(skipped.iter().any(|(p, r)| *p == "a/b" && r.contains('/')));
    assert!(
        skipped
            .iter()
            .any(|(p, r)| *p == "ok" && r.contains("same name"))
    );
    assert!(
        skipped
            .iter()
            .any(|(p, r)| *p == "bad_fill" && r.contains("exactly one"))
    );
    assert!(
        skipped
            .iter()
            .any(|(p, r)| *p == "wide_fill" && r.contains("does not fit"))
    );
    assert!(skipped.iter().any(|(p, _)| p.is_empty()));
}

#[test]
fn header_too_short_for_its_own_lists() {
    // Every prefix of a hand-built header with all list kinds is an error, never a panic.
    for version in [1u8, 2, 5] {
        let mut s = Spec::new(version);
        s.numrecs = Some(1);
        s.dims = vec![(b"time".to_vec(), 0), (b"lat".to_vec(), 2)];
        s.gatts = vec![
            SAttr::text("title", "abc"),
            SAttr::doubles("d", &[1.0, 2.0]),
        ];
        let mut v = SVar::new("tas", 5, &[0, 1]);
        v.attrs = vec![SAttr::text("units", "K")];
        s.vars = vec![v, SVar::new("lat", 6, &[1])];
        let (b, _) = s.build();
        let h = parse_header(&mem(&b)).unwrap();
        for cut in 0..h.header_len as usize {
            header_err(&b[..cut]);
        }
    }
}
