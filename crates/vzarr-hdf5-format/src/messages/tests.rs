//! Hand-encoded messages of versions the HDF5 library no longer writes (layout versions 1
//! and 2, dataspace version 1 with maximum dimensions, filter pipeline version 1 with names,
//! the old fill value message, VAX floats) and link variants, checked field by field.

use bytes::Bytes;

use super::datatype::{ByteOrder, TypeClass};
use super::fill::FillStatus;
use super::layout::{ChunkIndex, Layout};
use super::link::LinkTarget;
use super::*;
use crate::decode::Sizes;

const S8: Sizes = Sizes {
    offset: 8,
    length: 8,
    base: 0,
};

fn cur(b: &[u8]) -> Cursor<'_> {
    Cursor::new(b, "test", 0, S8)
}

#[test]
fn layout_version_1_and_2() {
    // Version 1, chunked: ndims 3 (2 + element size), class 2, reserved, B-tree address,
    // dims 4 x 5 x 8.
    let mut b = vec![1u8, 3, 2, 0, 0, 0, 0, 0];
    b.extend_from_slice(&1000u64.to_le_bytes());
    for d in [4u32, 5, 8] {
        b.extend_from_slice(&d.to_le_bytes());
    }
    let data = Bytes::from(b);
    let m = layout::decode(&mut cur(&data), &data).unwrap();
    assert_eq!(m.version, 1);
    match m.layout {
        Layout::Chunked(c) => {
            assert_eq!(c.chunk_dims, vec![4, 5]);
            assert_eq!(c.element_size, 8);
            assert_eq!(c.index, ChunkIndex::BTreeV1);
            assert_eq!(c.index_address, Some(1000));
            assert_eq!(c.chunk_bytes(), Some(160));
        }
        l => panic!("{l:?}"),
    }
    // Version 2, contiguous: the size comes from the dataspace.
    let mut b = vec![2u8, 2, 1, 0, 0, 0, 0, 0];
    b.extend_from_slice(&77u64.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    let data = Bytes::from(b);
    let m = layout::decode(&mut cur(&data), &data).unwrap();
    assert_eq!(
        m.layout,
        Layout::Contiguous {
            address: Some(77),
            size: None
        }
    );
    // Version 1, compact with 3 bytes of data.
    let mut b = vec![1u8, 1, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&[9, 8, 7]);
    let data = Bytes::from(b);
    let m = layout::decode(&mut cur(&data), &data).unwrap();
    assert_eq!(
        m.layout,
        Layout::Compact {
            data: Bytes::from_static(&[9, 8, 7])
        }
    );
    // A zero chunk dimension and a truncated message are errors.
    let data = Bytes::from(vec![
        3u8, 2, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0, 0,
    ]);
    assert!(layout::decode(&mut cur(&data), &data).is_err());
    let data = Bytes::from(vec![4u8, 2, 0, 2]);
    assert!(layout::decode(&mut cur(&data), &data).is_err());
}

#[test]
fn dataspace_version_1_with_unlimited_maximum() {
    let mut b = vec![1u8, 2, 1, 0, 0, 0, 0, 0];
    for v in [3u64, 4, u64::MAX, 4] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let ds = dataspace::decode(&mut cur(&b)).unwrap();
    assert_eq!(ds.dims, vec![3, 4]);
    assert_eq!(ds.max_dims, Some(vec![dataspace::UNLIMITED, 4]));
    assert_eq!(ds.num_elements(), Some(12));
    // Maximum smaller than the dimension.
    let mut b = vec![1u8, 1, 1, 0, 0, 0, 0, 0];
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(&4u64.to_le_bytes());
    assert!(dataspace::decode(&mut cur(&b)).is_err());
    // Rank 33.
    assert!(dataspace::decode(&mut cur(&[2, 33, 0, 1])).is_err());
}

#[test]
fn filter_pipeline_version_1_with_names() {
    let mut b = vec![1u8, 1, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&307u16.to_le_bytes()); // id
    b.extend_from_slice(&8u16.to_le_bytes()); // name length (padded)
    b.extend_from_slice(&1u16.to_le_bytes()); // flags: optional
    b.extend_from_slice(&3u16.to_le_bytes()); // 3 client values
    b.extend_from_slice(b"bzip2\0\0\0");
    for v in [9u32, 1, 2] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[0; 4]); // padding for an odd count
    let p = filters::decode(&mut cur(&b)).unwrap();
    assert_eq!(p.filters.len(), 1);
    let f = &p.filters[0];
    assert_eq!(
        (f.id, f.name.as_deref(), f.client_data.as_slice()),
        (307, Some("bzip2"), &[9, 1, 2][..])
    );
    assert!(f.is_optional());
    // 33 filters.
    assert!(filters::decode(&mut cur(&[2, 33])).is_err());
}

#[test]
fn fill_values_old_and_new() {
    let mut b = 2u32.to_le_bytes().to_vec();
    b.extend_from_slice(&[0x2a, 0]);
    let f = fill::decode_old(&mut cur(&b)).unwrap();
    assert_eq!(f.status, FillStatus::UserDefined);
    assert_eq!(f.value.as_deref(), Some(&[0x2a, 0][..]));
    let f = fill::decode_old(&mut cur(&0u32.to_le_bytes())).unwrap();
    assert_eq!(f.status, FillStatus::Undefined);
    // Version 2: defined, no value -> default.
    let mut b = vec![2u8, 2, 2, 1];
    b.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        fill::decode_new(&mut cur(&b)).unwrap().status,
        FillStatus::Default
    );
    // Version 3: undefined; both flags set is an error.
    assert_eq!(
        fill::decode_new(&mut cur(&[3, 0x10])).unwrap().status,
        FillStatus::Undefined
    );
    assert!(fill::decode_new(&mut cur(&[3, 0x30])).is_err());
}

#[test]
fn vax_float_and_opaque_tag() {
    // Version 3 float, VAX order (bits 0 and 6), 4 bytes.
    let mut b = vec![0x31u8, 0x41 | 0x20, 31, 0];
    b.extend_from_slice(&4u32.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&32u16.to_le_bytes());
    b.extend_from_slice(&[23, 8, 0, 23]);
    b.extend_from_slice(&129u32.to_le_bytes());
    let t = datatype::decode(&mut cur(&b)).unwrap();
    match t.class {
        TypeClass::FloatingPoint { order, .. } => assert_eq!(order, ByteOrder::Vax),
        c => panic!("{c:?}"),
    }
    // Exponent outside the type's bits.
    let mut bad = b.clone();
    bad[12] = 30;
    assert!(datatype::decode(&mut cur(&bad)).is_err());
    // Opaque with an 8-byte tag.
    let mut b = vec![0x15u8, 8, 0, 0];
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(b"tag\0\0\0\0\0");
    let t = datatype::decode(&mut cur(&b)).unwrap();
    assert_eq!(t.class, TypeClass::Opaque { tag: "tag".into() });
}

#[test]
fn deeply_nested_datatypes_are_refused() {
    // 40 nested variable-length sequences of ... (each 8 bytes of header).
    let mut b = Vec::new();
    for _ in 0..40 {
        b.extend_from_slice(&[0x19, 0, 0, 0]);
        b.extend_from_slice(&16u32.to_le_bytes());
    }
    b.extend_from_slice(&[0x10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0]);
    let e = datatype::decode(&mut cur(&b)).unwrap_err();
    assert!(matches!(e, Error::Limit { .. }), "{e:?}");
}

#[test]
fn link_messages() {
    // External link with creation order and UTF-8 name.
    let mut b = vec![1u8, 0x08 | 0x04 | 0x10, 64];
    b.extend_from_slice(&7u64.to_le_bytes());
    b.push(1); // UTF-8
    b.push(3); // name length (1 byte)
    b.extend_from_slice(b"ext");
    let val = b"\0other.h5\0/x/y\0";
    b.extend_from_slice(&(val.len() as u16).to_le_bytes());
    b.extend_from_slice(val);
    let l = link::decode_link(&mut cur(&b)).unwrap();
    assert_eq!(l.name, "ext");
    assert_eq!(l.creation_order, Some(7));
    assert_eq!(
        l.target,
        LinkTarget::External {
            file: "other.h5".into(),
            path: "/x/y".into()
        }
    );
    // User-defined link class 70.
    let mut b = vec![1u8, 0x08, 70, 1, b'u', 2, 0, 0xaa, 0xbb];
    let l = link::decode_link(&mut cur(&b)).unwrap();
    assert_eq!(
        l.target,
        LinkTarget::UserDefined {
            class: 70,
            data: vec![0xaa, 0xbb]
        }
    );
    // Link type 2 is not defined; an empty name is refused.
    b[2] = 2;
    assert!(link::decode_link(&mut cur(&b)).is_err());
    assert!(link::decode_link(&mut cur(&[1, 0, 0])).is_err());
}

#[test]
fn modification_times() {
    let oh = |kind: u16, data: &'static [u8]| ObjectHeader {
        address: 0,
        version: 1,
        flags: 0,
        reference_count: None,
        times: None,
        attribute_phase_change: None,
        messages: vec![Message {
            kind,
            flags: 0,
            creation_order: None,
            address: 0,
            data: Bytes::from_static(data),
        }],
    };
    assert_eq!(
        modification_time(&oh(msg::MTIME, &[1, 0, 0, 0, 10, 0, 0, 0])),
        Some(10)
    );
    assert_eq!(
        modification_time(&oh(msg::MTIME_OLD, b"19700102000001")),
        Some(86401)
    );
    assert_eq!(
        modification_time(&oh(msg::MTIME_OLD, b"1970x102000001")),
        None
    );
}
