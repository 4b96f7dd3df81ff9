//! A table of h5py's shape (a packed compound of a 13-byte string, four float32 columns and an
//! enum bool): the bool member is `bool` in the manifest and `int8` to libhdf5, the same
//! bytes; verification compares the values, not the two types' names.

use hdf5::H5Type;
use hdf5::types::FixedAscii;
use serde_json::json;
use vzarr_core::DataType;
use vzarr_verify::verify;

use crate::common::*;

#[derive(H5Type, Clone, Copy)]
#[repr(C)]
struct Gene {
    gene_ids: FixedAscii<13>,
    means: f32,
    dispersions: f32,
    dispersions_norm: f32,
    std: f32,
    highly_variable: bool,
}

const ROWS: usize = 383;
/// Bytes of one packed row.
const ROW: usize = 13 + 4 * 4 + 1;

fn write_table(path: &std::path::Path) {
    let rows: Vec<Gene> = (0..ROWS)
        .map(|i| Gene {
            gene_ids: FixedAscii::from_ascii(format!("ENSG{i:09}").as_bytes()).unwrap(),
            means: i as f32 * 0.25,
            dispersions: if i % 17 == 0 {
                f32::NAN
            } else {
                1.0 / (i + 1) as f32
            },
            dispersions_norm: -(i as f32),
            std: (i as f32).sqrt(),
            highly_variable: i % 3 == 0,
        })
        .collect();
    let f = hdf5::File::create(path).unwrap();
    // Packed in the file, as h5py writes a numpy structured type.
    f.new_dataset_builder()
        .packed(true)
        .with_data(&rows)
        .create("var")
        .unwrap();
}

#[test]
fn a_compound_with_a_bool_member_verifies_by_value() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("table.h5");
    write_table(&src);
    let out = dir.path().join("table.json");
    build(&src, &out, None);
    let reader = open(&out);
    assert!(
        reader.dataset().arrays.contains_key("var"),
        "{:?}",
        scan(&src).skipped
    );
    let DataType::Struct(fields) = &reader.dataset().arrays["var"].data_type else {
        panic!(
            "not a struct: {:?}",
            reader.dataset().arrays["var"].data_type
        );
    };
    assert_eq!(fields.len(), 6);
    assert_eq!(fields[5].data_type, DataType::Bool);
    for readers in readers() {
        let r = verify(&reader, &with(readers)).unwrap();
        assert!(r.ok(), "{readers:?}: {}\n{:#?}", r.summary(), r.mismatches);
        assert_eq!(r.values_compared, ROWS as u64);
    }

    // The reference moved back by one row (30 packed bytes): each row reads as the one before
    // (the first as the bytes before the table), with both readers.
    let mut refs = read_json(&out);
    let key = refs["refs"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("var/c"))
        .unwrap()
        .clone();
    let r = refs["refs"][&key].clone();
    let (off, len) = (r[1].as_u64().unwrap(), r[2].as_u64().unwrap());
    assert_eq!(
        len,
        (ROWS * ROW) as u64,
        "one contiguous chunk of packed rows"
    );
    refs["refs"][&key] = json!([r[0], off - ROW as u64, len]);
    let moved = dir.path().join("moved.json");
    write_json(&moved, &refs);
    for readers in readers() {
        let r = verify(&open(&moved), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 1, "{readers:?}");
        let m = &r.mismatches[0];
        assert!(m.differing >= ROWS as u64 - 1, "{readers:?}: {m}");
    }
}
