//! Tests of the compaction of small chunks.

use super::read::ZSTD_LEVEL;
use super::*;
use crate::values;
use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkGrid, ChunkManifest, ChunkRef, Codec, DataType, DimGrid, Endian, FillValue};
use vzarr_source::MemStore;

const F: &str = "mem://f";

/// A file of `records` records of 12 bytes from offset 100: a big-endian float32 (`a`,
/// the record number) then a big-endian float64 (`b`, ten times it), as a NetCDF3 file
/// with two record variables lays them out.
fn file(records: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; 100];
    for r in 0..records {
        bytes.extend((r as f32).to_be_bytes());
        bytes.extend((r as f64 * 10.0).to_be_bytes());
    }
    bytes.extend([0xEE; 4000]);
    bytes
}

fn array(dt: DataType, dims: Vec<DimGrid>, refs: &[(u64, u64)]) -> VirtualArray {
    let grid = ChunkGrid::new(dims);
    let mut manifest = ChunkManifest::new_missing(grid.n_chunks().unwrap() as usize);
    let sid = manifest.intern(F).unwrap();
    for (i, &(off, len)) in refs.iter().enumerate() {
        manifest.set_range(i, sid, off, len).unwrap();
    }
    VirtualArray {
        data_type: dt.clone(),
        endian: Endian::Big,
        fill_value: FillValue::zero(dt),
        codecs: vec![],
        dimension_names: vec!["t".into()],
        attributes: Default::default(),
        grid,
        manifest,
    }
}

/// `a` and `b` interleaved (one reference per record), `c`: a chunk of 2,000 bytes and,
/// not next to it, one of 1,000 (under the small size).
fn dataset(records: u64) -> (VirtualDataset, MemStore) {
    let mut ds = VirtualDataset::new();
    let rec = |k: u64, len: u64| -> Vec<(u64, u64)> {
        (0..records).map(|r| (100 + 12 * r + k, len)).collect()
    };
    let t = || vec![DimGrid::fixed(1, records).unwrap()];
    ds.arrays
        .insert("a".into(), array(DataType::Float32, t(), &rec(0, 4)));
    ds.arrays
        .insert("b".into(), array(DataType::Float64, t(), &rec(4, 8)));
    let end = 100 + 12 * records;
    let mut c = array(
        DataType::UInt8,
        vec![DimGrid::varying(vec![2000, 1000], 3000).unwrap()],
        &[(end, 2000), (end + 2500, 1000)],
    );
    c.dimension_names = vec!["x".into()];
    ds.arrays.insert("c".into(), c);
    let mut s = MemStore::new();
    s.insert(F, file(records));
    (ds, s)
}

fn values(a: &VirtualArray, s: &MemStore) -> Vec<u8> {
    values::read_array(a, s).unwrap()
}

#[test]
fn interleaved_records_are_kept_inline_with_their_values() {
    let (mut ds, store) = dataset(300);
    let before: Vec<Vec<u8>> = ds.arrays.values().map(|a| values(a, &store)).collect();
    let policy = SmallChunkPolicy::default();
    let survey = survey(&ds, &policy, Grids::Any);
    let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
    // Values unchanged, read through the new manifests (which read nothing).
    let reads = store.get(F).unwrap().reads();
    let after: Vec<Vec<u8>> = ds.arrays.values().map(|a| values(a, &store)).collect();
    assert_eq!(before, after);
    assert_eq!(
        store.get(F).unwrap().reads(),
        reads + 1,
        "only c's big chunk"
    );
    // a and b: one inline chunk each, shuffled and compressed; c: its 1000-byte chunk
    // copied inline as it is, its 2000-byte chunk still referenced.
    let a = &ds.arrays["a"];
    assert_eq!(a.grid, ChunkGrid::regular(&[300], &[300]).unwrap());
    assert_eq!(
        a.codecs,
        vec![
            Codec::Shuffle { element_size: 4 },
            Codec::Zstd { level: ZSTD_LEVEL }
        ]
    );
    assert!(matches!(a.manifest.get(0), ChunkRef::Inline(_)));
    let c = &ds.arrays["c"].manifest;
    assert!(matches!(c.get(0), ChunkRef::Range { length: 2000, .. }));
    assert!(matches!(c.get(1), ChunkRef::Inline(b) if b.len() == 1000));
    assert_eq!(
        (
            r.references_before,
            r.references_after,
            r.references_inlined
        ),
        (602, 1, 601)
    );
    assert_eq!(
        r.arrays["b"],
        vec![ArrayAction::Inlined {
            references: 300,
            bytes: 2400
        }]
    );
    assert!(r.left_referenced.is_empty());
    assert!(r.inline_bytes > 1000);
    // The survey said as much without reading.
    assert_eq!(survey.references_after, 1);
    assert_eq!(survey.arrays, r.arrays);
    // The default policy is not recorded.
    assert_eq!(ds.provenance.small_chunks, None);
}

/// The bytes `ds`'s array at `path` stores inline.
fn stored(ds: &VirtualDataset, path: &str) -> u64 {
    ds.arrays[path]
        .manifest
        .iter_stored()
        .map(|(_, r)| match r {
            ChunkRef::Inline(b) => b.len() as u64,
            _ => 0,
        })
        .sum()
}

#[test]
fn bounds_count_what_is_stored_cheapest_first() {
    // What a and b store kept inline: their values (record numbers) compress to a fraction
    // of the 1,200 and 2,400 bytes they decode to.
    let (template, store) = dataset(300);
    let mut all = template.clone();
    compact(&mut all, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
    let (sa, sb) = (stored(&all, "a"), stored(&all, "b"));
    assert!(sa < 1200 / 2 && sb < 2400 / 2, "{sa} {sb}");
    // A per-array bound under their decoded sizes keeps them inline; the total takes c's
    // small chunk (1,000 bytes, the cheapest), then a, and not b.
    let policy = SmallChunkPolicy::default()
        .with_inline_array_bytes(1000)
        .with_inline_total_bytes(1000 + sa + sb - 1);
    let mut ds = template.clone();
    let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
    assert_eq!(
        r.left_referenced,
        vec![LeftReferenced {
            array: "b".into(),
            references: 300,
            bytes: sb,
            reason: LeftReason::TotalLimit {
                limit: 1000 + sa + sb - 1
            }
        }]
    );
    assert_eq!(stored(&ds, "a"), sa);
    assert_eq!(ds.arrays["b"].manifest.stats().referenced, 300);
    assert_eq!(ds.arrays["c"].manifest.stats().referenced, 1);
    assert_eq!(r.inline_bytes, 1000 + sa);
    assert_eq!(ds.provenance.small_chunks, Some(policy));
    // A per-array bound between what a and b store: the larger stays, named with what it
    // would store.
    assert_ne!(sa, sb);
    let ((small, s_small), (large, s_large)) = if sa < sb {
        (("a", sa), ("b", sb))
    } else {
        (("b", sb), ("a", sa))
    };
    let policy = SmallChunkPolicy::default().with_inline_array_bytes(s_large - 1);
    let mut ds = template.clone();
    let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
    let left = r.left_referenced.iter().find(|l| l.array == large).unwrap();
    assert_eq!(
        (left.bytes, &left.reason),
        (s_large, &LeftReason::ArrayLimit { limit: s_large - 1 })
    );
    assert!(left.to_string().contains("300 small references"), "{left}");
    assert_eq!(stored(&ds, small), s_small);
    // Decoding is bounded apart (16 times the per-array bound): with a bound of 100 bytes, b
    // (2,400 bytes decoded) is not read; a is (1,200), and stores more than 100; c's small
    // chunk is over the bound too.
    let policy = SmallChunkPolicy::default().with_inline_array_bytes(100);
    let mut ds = template.clone();
    let before = store.get(F).unwrap().reads();
    let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
    let reasons: Vec<(&str, u64, &LeftReason)> = r
        .left_referenced
        .iter()
        .map(|l| (l.array.as_str(), l.bytes, &l.reason))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("a", sa, &LeftReason::ArrayLimit { limit: 100 }),
            ("b", 2400, &LeftReason::DecodeLimit { limit: 1600 }),
            ("c", 1000, &LeftReason::ArrayLimit { limit: 100 }),
        ]
    );
    assert!(
        r.left_referenced[1].to_string().contains("decodes to"),
        "{}",
        r.left_referenced[1]
    );
    assert_eq!(
        store.get(F).unwrap().reads(),
        before + 300,
        "a's 300 records alone were read"
    );
    assert_eq!(ds.arrays, template.arrays);
    // The survey, which reads nothing, bounds by the bytes referenced.
    let s = survey(&template, &policy, Grids::Any);
    assert_eq!(s.left_referenced.len(), 3);
}

#[test]
fn inlined_arrays_keep_their_place() {
    let (mut ds, store) = dataset(300);
    // c first: the source's order, not the paths'.
    ds.arrays.move_index(2, 0);
    compact(&mut ds, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
    assert_eq!(ds.arrays.keys().collect::<Vec<_>>(), ["c", "a", "b"]);
    assert_eq!(ds.arrays["a"].manifest.stats().referenced, 0);
}

#[test]
fn an_array_that_cannot_be_read_stays_as_it_was() {
    let (mut ds, store) = dataset(50);
    // b's references point past the end of the file.
    let b = ds.arrays.get_mut("b").unwrap();
    let sid = b.manifest.intern(F).unwrap();
    b.manifest.set_range(7, sid, 1 << 40, 8).unwrap();
    let old = b.clone();
    let r = compact(&mut ds, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
    assert_eq!(ds.arrays["b"], old);
    assert_eq!(r.left_referenced.len(), 1);
    assert!(
        matches!(&r.left_referenced[0].reason, LeftReason::Failed { error } if error.contains("mem://f")),
        "{:?}",
        r.left_referenced
    );
    // The others were inlined all the same.
    assert_eq!(ds.arrays["a"].manifest.stats().referenced, 0);
}

#[test]
fn keep_and_merge_copy_nothing() {
    let (mut ds, store) = dataset(40);
    let keep = SmallChunkPolicy::default().with_mode(SmallChunks::Keep);
    let before = ds.clone();
    let r = compact(&mut ds, &keep, Grids::Any, &store).unwrap();
    assert_eq!(ds.arrays, before.arrays);
    assert_eq!(r.references_after, r.references_before);
    assert_eq!(ds.provenance.small_chunks, Some(keep));
    // Merge: a single record variable's back-to-back records become one chunk.
    let mut ds = VirtualDataset::new();
    let refs: Vec<(u64, u64)> = (0..40).map(|r| (100 + 4 * r, 4)).collect();
    let one = array(
        DataType::Float32,
        vec![DimGrid::fixed(1, 40).unwrap()],
        &refs,
    );
    ds.arrays.insert("a".into(), one.clone());
    let merge = SmallChunkPolicy::default().with_mode(SmallChunks::Merge);
    let r = compact(&mut ds, &merge, Grids::Any, &store).unwrap();
    assert_eq!(r.references_merged, 39);
    assert_eq!(values(&ds.arrays["a"], &store), values(&one, &store));
    assert!(matches!(
        ds.arrays["a"].manifest.get(0),
        ChunkRef::Range {
            offset: 100,
            length: 160,
            ..
        }
    ));
}

#[test]
fn a_rectilinear_merge_waits_for_inlining() {
    // Records back to back whose count has no divisor near the target: merged, the axis
    // would be rectilinear.
    let (_, store) = dataset(400);
    let run = |records: u64, policy: SmallChunkPolicy| {
        let refs: Vec<(u64, u64)> = (0..records).map(|r| (100 + 4 * r, 4)).collect();
        let one = array(
            DataType::Float32,
            vec![DimGrid::fixed(1, records).unwrap()],
            &refs,
        );
        let mut ds = VirtualDataset::new();
        ds.arrays.insert("a".into(), one.clone());
        let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
        assert_eq!(values(&ds.arrays["a"], &store), values(&one, &store));
        (ds.arrays["a"].clone(), r)
    };
    let small = SmallChunkPolicy::default().with_target_chunk_bytes(64);
    // Kept inline instead, in regular chunks of 16 values.
    let (a, r) = run(97, small);
    assert_eq!(a.grid, ChunkGrid::regular(&[97], &[16]).unwrap());
    assert_eq!(a.manifest.stats().referenced, 0);
    assert_eq!(r.references_merged, 0);
    // No room to inline: merged after all (6 x 16 + 1), still small: reported so.
    let (a, r) = run(97, small.with_inline_total_bytes(100));
    assert!(!a.grid.is_regular());
    assert_eq!((r.references_merged, r.references_after), (90, 7));
    assert_eq!(r.arrays["a"], vec![ArrayAction::Merged { from: 97, to: 7 }]);
    assert_eq!(r.left_referenced.len(), 1);
    assert_eq!(r.left_referenced[0].references, 7);
    // Merged into references of 2 KiB (1,009 records: 512 + 497): no longer small.
    let big = SmallChunkPolicy::default()
        .with_target_chunk_bytes(2048)
        .with_inline_total_bytes(100);
    let (a, r) = run(1009, big);
    assert_eq!(
        a.grid.dims()[0],
        DimGrid::from_edges(vec![512, 497], 1009).unwrap()
    );
    assert_eq!(
        r.arrays["a"],
        vec![ArrayAction::Merged { from: 1009, to: 2 }]
    );
    assert!(r.left_referenced.is_empty(), "{:?}", r.left_referenced);
}

#[test]
fn the_same_input_gives_the_same_output() {
    let run = || {
        let (mut ds, store) = dataset(120);
        compact(&mut ds, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
        ds.arrays
            .iter()
            .map(|(p, a)| (p.clone(), a.zarr_metadata(), a.manifest.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn chunks_of_fill_values_are_not_stored() {
    let mut ds = VirtualDataset::new();
    // 4,096 float32 zeros then a one, in chunks of 64 values compressed... referenced as
    // one tiny compressed chunk each: kept inline in 4 KiB chunks, the all-zero ones not
    // stored.
    let n = 4097u64;
    let mut raw = vec![0u8; 4 * n as usize];
    raw[4 * 4096..].copy_from_slice(&1f32.to_be_bytes());
    let codecs = vec![Codec::Zlib { level: 1 }];
    let chain = ByteCodecs::new(&codecs).unwrap();
    let mut file = Vec::new();
    let mut refs = Vec::new();
    for c in raw.chunks(256) {
        let mut c = c.to_vec();
        c.resize(256, 0);
        let enc = chain.encode(&c).unwrap();
        refs.push((file.len() as u64, enc.len() as u64));
        file.extend(enc);
    }
    let mut a = array(
        DataType::Float32,
        vec![DimGrid::fixed(64, n).unwrap()],
        &refs,
    );
    a.codecs = codecs;
    ds.arrays.insert("z".into(), a.clone());
    let mut store = MemStore::new();
    store.insert(F, file);
    let policy = SmallChunkPolicy::default().with_target_chunk_bytes(4096);
    compact(&mut ds, &policy, Grids::Any, &store).unwrap();
    let z = &ds.arrays["z"];
    assert_eq!(z.grid, ChunkGrid::regular(&[n], &[1024]).unwrap());
    assert_eq!(z.manifest.stored(), 1);
    assert_eq!(values(z, &store), values(&a, &store));
}
