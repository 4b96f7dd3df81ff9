//! Writing datasets to local repositories and opening them back.

use serde_json::json;
use vzarr_core::{
    ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue, Group, Provenance,
    SourceRecord, VirtualArray, VirtualDataset,
};
use vzarr_icechunk::{IcechunkError, RepoLocation, WriteMode, WriteOptions, history, open, write};

fn dataset(dir: &str) -> VirtualDataset {
    let mut ds = VirtualDataset::new();
    ds.groups
        .get_mut("")
        .unwrap()
        .attributes
        .insert("title".into(), json!("t"));
    ds.groups.insert("g".into(), Group::default());
    // Rectilinear on the first axis, fixed on the second.
    let grid = ChunkGrid::new(vec![
        DimGrid::varying(vec![2, 1, 3], 6).unwrap(),
        DimGrid::fixed(4, 8).unwrap(),
    ]);
    let mut manifest = ChunkManifest::new_missing(6);
    let a = format!("file://{dir}/a b%20.nc");
    let s = manifest.intern(&a).unwrap();
    manifest.set_range(0, s, 10, 32).unwrap();
    manifest.set_range(1, s, 42, 32).unwrap();
    manifest.set_inline(2, vec![0, 0, 128, 63]).unwrap();
    // 3 missing; 4, 5 references.
    manifest.set_range(4, s, 100, 48).unwrap();
    manifest.set_range(5, s, 148, 48).unwrap();
    ds.arrays.insert(
        "g/v".into(),
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: vec![],
            dimension_names: vec!["t".into(), "x".into()],
            attributes: Default::default(),
            grid,
            manifest,
        },
    );
    let mut scalar = ChunkManifest::new_missing(1);
    scalar.set_inline(0, vec![7]).unwrap();
    ds.arrays.insert(
        "s".into(),
        VirtualArray {
            data_type: DataType::Int8,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Int8),
            codecs: vec![],
            dimension_names: vec![],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[], &[]).unwrap(),
            manifest: scalar,
        },
    );
    ds.provenance = Provenance {
        sources: vec![SourceRecord {
            url: a,
            size: 1000,
            mtime_ns: Some(1_700_000_000_500_000_000),
            etag: None,
            fingerprint: None,
        }],
        allowed_prefixes: vec![format!("file://{dir}/")],
        concat: None,
    };
    ds
}

fn chunks(a: &VirtualArray) -> Vec<String> {
    a.manifest.iter().map(|c| format!("{c:?}")).collect()
}

#[test]
fn write_then_open_gives_the_same_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = dataset(dir);
    let loc = RepoLocation::parse(&format!("{dir}/repo")).unwrap();
    let opts = WriteOptions {
        message: "first".into(),
        ..Default::default()
    };
    let w = write(&ds, &loc, &opts).unwrap();
    assert!(w.created);
    assert_eq!((w.virtual_refs, w.native_chunks), (4, 2));
    assert_eq!(w.containers, vec![format!("file://{dir}/")]);
    let back = open(&loc, "main", 1000).unwrap();
    assert!(back.has_provenance);
    assert_eq!(back.dataset.provenance, ds.provenance);
    assert_eq!(back.dataset.groups, ds.groups);
    for (path, a) in &ds.arrays {
        let b = &back.dataset.arrays[path];
        assert_eq!(b.grid, a.grid, "{path}");
        assert_eq!(chunks(b), chunks(a), "{path}");
        assert_eq!(
            b.zarr_metadata()["attributes"],
            a.zarr_metadata()["attributes"]
        );
    }
    // A second build replaces the content in a new commit; both stay in the history.
    let mut ds2 = ds.clone();
    ds2.arrays.remove("s");
    let w2 = write(
        &ds2,
        &loc,
        &WriteOptions {
            message: "second".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!w2.created);
    let back = open(&loc, "main", 1000).unwrap();
    assert!(!back.dataset.arrays.contains_key("s"));
    let h: Vec<String> = history(&loc, "main")
        .unwrap()
        .into_iter()
        .map(|c| c.message)
        .collect();
    assert_eq!(h, ["second", "first", "Repository initialized"]);
    // Too many references for the limit.
    assert!(open(&loc, "main", 2).is_err());
}

#[test]
fn refusals_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = dataset(dir);
    // An append needs a repository.
    let loc = RepoLocation::parse(&format!("{dir}/none")).unwrap();
    let e = write(
        &ds,
        &loc,
        &WriteOptions {
            mode: WriteMode::Existing,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, IcechunkError::NotARepository { .. }), "{e}");
    assert!(!tmp.path().join("none").exists());
    // A directory with other files is not written into.
    std::fs::create_dir(tmp.path().join("full")).unwrap();
    std::fs::write(tmp.path().join("full/x"), b"x").unwrap();
    let loc = RepoLocation::parse(&format!("{dir}/full")).unwrap();
    let e = write(&ds, &loc, &WriteOptions::default()).unwrap_err();
    assert!(matches!(e, IcechunkError::NotEmpty { .. }), "{e}");
    // An invalid dataset: nothing created.
    let mut bad = ds.clone();
    bad.arrays.get_mut("g/v").unwrap().manifest = ChunkManifest::new_missing(2);
    let loc = RepoLocation::parse(&format!("{dir}/bad")).unwrap();
    assert!(write(&bad, &loc, &WriteOptions::default()).is_err());
    assert!(!tmp.path().join("bad").exists());
    // A source Icechunk cannot hold a container for: the new repository is removed again.
    let mut other = ds.clone();
    let a = other.arrays.get_mut("g/v").unwrap();
    let s = a.manifest.intern("https://example.org/x.nc").unwrap();
    a.manifest.set_range(4, s, 0, 48).unwrap();
    let loc = RepoLocation::parse(&format!("{dir}/other")).unwrap();
    let e = write(&other, &loc, &WriteOptions::default()).unwrap_err();
    assert!(matches!(e, IcechunkError::Container { .. }), "{e}");
    assert!(!tmp.path().join("other").exists());
    // No branch.
    let loc = RepoLocation::parse(&format!("{dir}/repo")).unwrap();
    write(&ds, &loc, &WriteOptions::default()).unwrap();
    assert!(matches!(
        open(&loc, "nope", 100).unwrap_err(),
        IcechunkError::NoBranch { .. }
    ));
}

#[test]
fn locations() {
    assert!(matches!(
        RepoLocation::parse("s3://b/p/q/").unwrap(),
        RepoLocation::S3 { ref bucket, ref prefix } if bucket == "b" && prefix == "p/q"
    ));
    for bad in [
        "s3://b",
        "s3://b/",
        "s3:///p",
        "s3://b/a/../c",
        "gs://b/p",
        "",
    ] {
        assert!(RepoLocation::parse(bad).is_err(), "{bad}");
    }
}

/// Many references in one array (run with `--ignored --nocapture`; prints the times). Not a
/// benchmark: a check that writing and opening stream at scale.
#[test]
#[ignore]
fn many_references() {
    let n: u64 = std::env::var("VZARR_ICECHUNK_REFS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let mut ds = VirtualDataset::new();
    let grid = ChunkGrid::regular(&[n, 16], &[1, 16]).unwrap();
    let mut manifest = ChunkManifest::new_missing(n as usize);
    let files: Vec<u32> = (0..100)
        .map(|i| manifest.intern(&format!("file://{dir}/f{i}.nc")).unwrap())
        .collect();
    for i in 0..n {
        manifest
            .set_range(i as usize, files[(i % 100) as usize], 4096 + i * 64, 64)
            .unwrap();
    }
    ds.arrays.insert(
        "v".into(),
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: vec![],
            dimension_names: vec!["t".into(), "x".into()],
            attributes: Default::default(),
            grid,
            manifest,
        },
    );
    ds.provenance.allowed_prefixes = vec![format!("file://{dir}/")];
    let loc = RepoLocation::parse(&format!("{dir}/repo")).unwrap();
    let t = std::time::Instant::now();
    let w = write(&ds, &loc, &WriteOptions::default()).unwrap();
    let written = t.elapsed();
    assert_eq!(w.virtual_refs, n);
    let t = std::time::Instant::now();
    let back = open(&loc, "main", n).unwrap();
    let opened = t.elapsed();
    assert_eq!(back.dataset.arrays["v"].manifest.stored(), n as usize);
    let size: u64 = walk_size(&tmp.path().join("repo"));
    println!("{n} references: write {written:?}, open {opened:?}, repository {size} bytes");
}

fn walk_size(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                walk_size(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}
