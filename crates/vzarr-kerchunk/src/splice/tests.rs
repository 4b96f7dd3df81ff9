//! Tests of the splice: reads and writes against `write_refs` of the whole dataset.
use super::*;
use crate::to_bytes;
use vzarr_core::{
    ChunkGrid, ChunkManifest, ChunkRef, DataType, DimGrid, Endian, FillValue, Group, VirtualArray,
};

/// An array of `rows` rows along `dims[axis]` (chunks of 2 rows, then whatever
/// `edges` says), `cols` columns in chunks of 2, every chunk referenced but one.
fn array(dims: [&str; 2], axis: usize, edges: &[u64], cols: u64) -> VirtualArray {
    let rows: u64 = edges.iter().sum();
    let along = DimGrid::from_edges(edges.to_vec(), rows).unwrap();
    let across = DimGrid::fixed(2, cols).unwrap();
    let grid = if axis == 0 {
        ChunkGrid::new(vec![along, across])
    } else {
        ChunkGrid::new(vec![across, along])
    };
    let n = grid.n_chunks().unwrap() as usize;
    let mut manifest = ChunkManifest::new_missing(n);
    let s = manifest.intern("file:///data/a \"b\".nc").unwrap();
    for i in (0..n).filter(|i| *i != 1) {
        manifest
            .set_range(i, s, 100 * i as u64, 10 + i as u64)
            .unwrap();
    }
    VirtualArray {
        data_type: DataType::Float32,
        endian: Endian::Little,
        fill_value: FillValue::zero(DataType::Float32),
        codecs: vec![],
        dimension_names: dims.iter().map(|d| d.to_string()).collect(),
        attributes: Default::default(),
        grid,
        manifest,
    }
}

/// A dataset along `time` whose chunks along it are `edges`: `tas` (time on its first
/// axis), `t` (time alone, inline), `g/x` (no time) and `g/late` (time on its second
/// axis).
fn dataset(edges: &[u64]) -> VirtualDataset {
    let mut ds = VirtualDataset::new();
    ds.groups.insert("g".into(), Group::default());
    ds.arrays
        .insert("tas".into(), array(["time", "x"], 0, edges, 5));
    let rows: u64 = edges.iter().sum();
    let mut t = array(["time", "x"], 0, edges, 1);
    t.dimension_names.truncate(1);
    t.grid = ChunkGrid::new(vec![DimGrid::from_edges(edges.to_vec(), rows).unwrap()]);
    t.manifest = ChunkManifest::new_missing(edges.len());
    for i in 0..edges.len() {
        t.manifest.set_inline(i, vec![i as u8; 8]).unwrap();
    }
    ds.arrays.insert("t".into(), t);
    let mut x = array(["x", "y"], 0, &[2, 2, 1], 3);
    x.dimension_names = vec!["x".into(), "y".into()];
    ds.arrays.insert("g/x".into(), x);
    ds.arrays
        .insert("g/late".into(), array(["x", "time"], 1, edges, 3));
    ds
}

/// `ds` as a read at the tail holds it: chunks of the arrays along time from chunk
/// `from` on (`whole` arrays whole), none of the others.
fn as_read(ds: &VirtualDataset, from: u64, whole: &[&str]) -> VirtualDataset {
    as_read_runs(ds, std::slice::from_ref(&(from..u64::MAX)), whole)
}

/// `ds` as a read of the chunks at `runs` along time holds it.
fn as_read_runs(ds: &VirtualDataset, runs: &[Range<u64>], whole: &[&str]) -> VirtualDataset {
    let mut out = ds.clone();
    for (path, a) in out.arrays.iter_mut() {
        let axis = a.dimension_names.iter().position(|d| d == "time");
        let mut m = ChunkManifest::new_missing(a.manifest.len());
        let mut idx = Vec::new();
        for (i, r) in a.manifest.iter_stored() {
            a.grid.chunk_index_into(i as u64, &mut idx);
            let keep = match axis {
                None => false,
                Some(_) if whole.contains(&path.as_str()) => true,
                Some(k) => runs.iter().any(|r| r.contains(&idx[k])),
            };
            match (keep, r) {
                (
                    true,
                    ChunkRef::Range {
                        source,
                        offset,
                        length,
                    },
                ) => {
                    let s = m.intern(source).unwrap();
                    m.set_range(i, s, offset, length).unwrap();
                }
                (true, ChunkRef::Inline(b)) => m.set_inline(i, b.to_vec()).unwrap(),
                _ => {}
            }
        }
        a.manifest = m;
    }
    out
}

fn read(bytes: &[u8], start: u64, whole_up_to: u64) -> Result<TailRefs, NotSpliced> {
    read_tail(
        bytes,
        "refs.json",
        ParseLimits::default(),
        ("time", std::slice::from_ref(&(start..u64::MAX))),
        whole_up_to,
    )
}

#[test]
fn an_append_written_over_the_tail_is_the_whole_write() {
    // Old: rows 2+2+2+1 (the last file, from row 6 on, in one padded chunk); new: that
    // file's chunk cut to 1 row and two more files of 2 and 3 rows.
    let mut old = dataset(&[2, 2, 2, 1]);
    old.arrays.shift_remove("g/late");
    let mut new = dataset(&[2, 2, 2, 1, 2, 3]);
    new.arrays.shift_remove("g/late");
    let bytes = to_bytes(&old).unwrap();
    let tail = read(&bytes, 6, 4).unwrap();
    // What was read: `t` whole (4 chunks), `tas` from chunk 3 on, nothing of `g/x`.
    assert_eq!(tail.dataset, as_read(&old, 3, &["t"]));
    let changed = BTreeMap::from([
        (
            "tas".to_string(),
            (0, std::iter::once(3..u64::MAX).collect()),
        ),
        ("t".to_string(), (0, std::iter::once(3..u64::MAX).collect())),
    ]);
    let spliced = write_spliced(
        &as_read(&new, 3, &["t"]),
        &bytes,
        &tail.layout,
        &changed,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(spliced).unwrap(),
        String::from_utf8(to_bytes(&new).unwrap()).unwrap()
    );
    // A tail found by bisecting a large block.
    let mut big_old = dataset(&[2; 3000]);
    let mut big_new = dataset(&[2; 3010]);
    big_old.arrays.shift_remove("g/late");
    big_new.arrays.shift_remove("g/late");
    let bytes = to_bytes(&big_old).unwrap();
    let tail = read(&bytes, 2 * 1500, 4).unwrap();
    assert_eq!(tail.dataset, as_read(&big_old, 1500, &[]));
    let changed = BTreeMap::from([
        (
            "tas".to_string(),
            (0, std::iter::once(1500..u64::MAX).collect()),
        ),
        (
            "t".to_string(),
            (0, std::iter::once(1500..u64::MAX).collect()),
        ),
    ]);
    let spliced = write_spliced(
        &as_read(&big_new, 1500, &[]),
        &bytes,
        &tail.layout,
        &changed,
        Vec::new(),
    )
    .unwrap();
    assert!(spliced == to_bytes(&big_new).unwrap());
    // A change before what was read is refused, not written.
    let early = BTreeMap::from([(
        "tas".to_string(),
        (0, std::iter::once(10..u64::MAX).collect()),
    )]);
    let e = write_spliced(&big_new, &bytes, &tail.layout, &early, Vec::new()).unwrap_err();
    assert!(e.to_string().contains("not read"), "{e}");
    let other = BTreeMap::from([(
        "g/x".to_string(),
        (0, std::iter::once(0..u64::MAX).collect()),
    )]);
    let e = write_spliced(&big_new, &bytes, &tail.layout, &other, Vec::new()).unwrap_err();
    assert!(e.to_string().contains("not read"), "{e}");
    let e = write_spliced(&big_new, &bytes[1..], &tail.layout, &changed, Vec::new());
    assert!(
        e.unwrap_err()
            .to_string()
            .contains("not the file that was read")
    );
}

#[test]
fn chunks_replaced_in_the_middle_and_an_append_are_the_whole_write() {
    // 3,000 files of 2 rows; two in the middle re-processed (other references), ten
    // appended.
    let mut old = dataset(&[2; 3000]);
    old.arrays.shift_remove("g/late");
    let mut new = dataset(&[2; 3010]);
    new.arrays.shift_remove("g/late");
    for row in [500u64, 1200] {
        let a = new.arrays.get_mut("tas").unwrap();
        let s = a.manifest.intern("file:///data/re-processed.nc").unwrap();
        for col in 0..3 {
            let i = a.grid.linear_index(&[row, col]).unwrap() as usize;
            a.manifest.set_range(i, s, 7 * row + col, 99).unwrap();
        }
        let t = new.arrays.get_mut("t").unwrap();
        t.manifest.set_inline(row as usize, vec![0xee; 8]).unwrap();
    }
    let bytes = to_bytes(&old).unwrap();
    let spans = [1000..1002, 2400..2402, 6000..u64::MAX];
    let read = read_tail(
        &bytes,
        "refs.json",
        ParseLimits::default(),
        ("time", &spans),
        4,
    )
    .unwrap();
    let runs = [500..501, 1200..1201, 3000..u64::MAX];
    assert_eq!(read.dataset, as_read_runs(&old, &runs, &[]));
    let changed = BTreeMap::from([
        ("tas".to_string(), (0, runs.to_vec())),
        ("t".to_string(), (0, runs.to_vec())),
    ]);
    let spliced = write_spliced(
        &as_read_runs(&new, &runs, &[]),
        &bytes,
        &read.layout,
        &changed,
        Vec::new(),
    )
    .unwrap();
    assert!(spliced == to_bytes(&new).unwrap());
    // To a file, the kept bytes copied from the old file: the same bytes; refused when
    // the old file is not what was read.
    let d = tempfile::tempdir().unwrap();
    let (old_path, new_path) = (d.path().join("old.json"), d.path().join("new.json"));
    std::fs::write(&old_path, &bytes).unwrap();
    let from = std::fs::File::open(&old_path).unwrap();
    let mine = as_read_runs(&new, &runs, &[]);
    write_file_spliced(
        &mine,
        &bytes,
        Some(&from),
        &read.layout,
        &changed,
        &new_path,
    )
    .unwrap();
    assert!(std::fs::read(&new_path).unwrap() == to_bytes(&new).unwrap());
    std::fs::write(&old_path, &bytes[..bytes.len() - 10]).unwrap();
    let e = write_file_spliced(
        &mine,
        &bytes,
        Some(&from),
        &read.layout,
        &changed,
        &new_path,
    )
    .unwrap_err();
    assert!(e.to_string().contains("changed"), "{e}");
    assert!(std::fs::read(&new_path).unwrap() == to_bytes(&new).unwrap());
    // A run between those read is refused.
    let between = BTreeMap::from([("tas".to_string(), (0, std::iter::once(800..801).collect()))]);
    let e = write_spliced(&new, &bytes, &read.layout, &between, Vec::new()).unwrap_err();
    assert!(e.to_string().contains("not read"), "{e}");
}

#[test]
fn other_layouts_are_read_whole() {
    let ds = dataset(&[2, 2, 2]);
    let bytes = to_bytes(&ds).unwrap();
    // Along time on a later axis, with more chunks than are read whole.
    let e = read(&bytes, 4, 1).unwrap_err();
    assert!(e.0.contains("g/late") && e.0.contains("axis 1"), "{e}");
    // ... and with few enough, read whole.
    assert_eq!(
        read(&bytes, 4, 100).unwrap().dataset,
        as_read(&ds, 2, &["g/late", "t", "tas"])
    );
    // Another writer's layout: spaces, another key order, version 0.
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let pretty = serde_json::to_vec_pretty(&v).unwrap();
    assert!(read(&pretty, 4, 100).is_err());
    let refs = serde_json::to_vec(&v["refs"]).unwrap();
    assert!(read(&refs, 4, 100).is_err());
    let mut reordered = v.clone();
    let p = reordered
        .as_object_mut()
        .unwrap()
        .shift_remove("vzarr")
        .unwrap();
    reordered.as_object_mut().unwrap().insert("vzarr".into(), p);
    assert!(read(&serde_json::to_vec(&reordered).unwrap(), 4, 100).is_err());
    // Entries out of C order in what is read.
    let text = String::from_utf8(bytes.clone()).unwrap();
    let swapped = text.replace("\"tas/c/2/0\"", "\"tas/c/2/9\"");
    let e = read(swapped.as_bytes(), 4, 1).unwrap_err();
    assert!(e.0.contains("tas"), "{e}");
}

#[test]
fn damaged_files_are_refused_without_panicking() {
    let mut ds = dataset(&[2, 1]);
    ds.arrays.shift_remove("g/x");
    let bytes = to_bytes(&ds).unwrap();
    // Every cut, and a byte changed at every fourth position to characters that structure
    // the file.
    for n in 0..bytes.len() {
        let _ = read(&bytes[..n], 2, 2);
        if n % 4 != 0 {
            continue;
        }
        for c in [b'"', b'\\', b',', b']'] {
            let mut b = bytes.clone();
            b[n] = c;
            if let Ok(t) = read(&b, 2, 2) {
                let _ = write_spliced(&t.dataset, &b, &t.layout, &BTreeMap::new(), Vec::new());
            }
        }
    }
    // The same of a file read in runs (bisected), with a run in the middle written.
    let mut ds = dataset(&[1; 16]);
    for p in ["g/x", "g/late"] {
        ds.arrays.shift_remove(p);
    }
    let bytes = to_bytes(&ds).unwrap();
    let spans = [5..7, 12..u64::MAX];
    let runs = BTreeMap::from([("tas".to_string(), (0, vec![5..7, 12..u64::MAX]))]);
    let parts = |b: &[u8]| read_tail(b, "refs.json", ParseLimits::default(), ("time", &spans), 0);
    assert!(parts(&bytes).is_ok());
    for n in (0..bytes.len()).step_by(7) {
        let _ = parts(&bytes[..n]);
        for c in [b'"', b',', b'9'] {
            let mut b = bytes.clone();
            b[n] = c;
            if let Ok(t) = parts(&b) {
                let _ = write_spliced(&t.dataset, &b, &t.layout, &runs, Vec::new());
            }
        }
    }
}
