//! Writing datasets to local repositories and opening them back.

mod common;

use serde_json::json;
use vzarr_core::{
    ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue, Group, Provenance,
    SourceRecord, VirtualArray, VirtualDataset,
};
use vzarr_icechunk::{
    Commits, IcechunkError, RepoLocation, WriteMode, WriteOptions, history, open, open_tail, write,
};

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
        small_chunks: None,
        upgraded_from: None,
        inputs: None,
        companions: Vec::new(),
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
    ds2.arrays.shift_remove("s");
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

/// An append's view of a repository: documents, and chunks only from the tail on along the
/// concatenation dimension (by index, not by listing every manifest).
#[test]
fn open_tail_reads_chunks_from_the_tail_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = dataset(dir);
    let loc = RepoLocation::parse(&format!("{dir}/repo")).unwrap();
    write(&ds, &loc, &WriteOptions::default()).unwrap();
    let all = chunks(&ds.arrays["g/v"]);
    let missing = format!("{:?}", vzarr_core::ChunkRef::Missing);
    // g/v: t edges 2, 1, 3 (3 chunks), x 2 chunks. From t = 3 (chunk 2) on: positions 4, 5;
    // from t = 2 (chunk 1) on: 2, 3 (not stored), 4, 5. `s` has no t: no chunk read.
    for (start, from) in [(3, 4), (2, 2), (0, 0)] {
        let back = open_tail(&loc, "main", 1000, ("t", start), 0).unwrap();
        let got = chunks(&back.dataset.arrays["g/v"]);
        for (i, (g, a)) in got.iter().zip(&all).enumerate() {
            let want = if i >= from { a } else { &missing };
            assert_eq!(g, want, "start {start}: chunk {i}");
        }
        assert_eq!(chunks(&back.dataset.arrays["s"]), vec![missing.clone()]);
        assert_eq!(back.dataset.provenance, ds.provenance);
        assert_eq!(
            back.dataset.arrays["g/v"].zarr_metadata(),
            ds.arrays["g/v"].zarr_metadata()
        );
    }
    // Arrays of few chunks are read whole.
    let back = open_tail(&loc, "main", 1000, ("t", 3), 100).unwrap();
    assert_eq!(chunks(&back.dataset.arrays["g/v"]), all);
    // The limit counts what is read.
    assert!(open_tail(&loc, "main", 1, ("t", 3), 0).is_err());

    // An update (what an append changed) is one commit of what changed only: the dataset
    // read at the tail, written back with g/v changed from t chunk 2 on, keeps `s` and the
    // chunks before; one larger than a piece is refused, never written as a replacement.
    let tail = open_tail(&loc, "main", 1000, ("t", 3), 0).unwrap().dataset;
    let update = vzarr_icechunk::Update {
        arrays: [(
            "g/v".to_string(),
            (0usize, std::iter::once(2..u64::MAX).collect()),
        )]
        .into_iter()
        .collect(),
    };
    assert_eq!(vzarr_icechunk::update_chunks(&tail, &update), 2);
    let too_small = WriteOptions {
        mode: WriteMode::Existing,
        piece_refs: 1,
        update: Some(update.clone()),
        ..Default::default()
    };
    assert!(matches!(
        write(&tail, &loc, &too_small),
        Err(IcechunkError::UpdateTooLarge { chunks: 2, .. })
    ));
    let w = write(
        &tail,
        &loc,
        &WriteOptions {
            mode: WriteMode::Existing,
            update: Some(update),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((w.virtual_refs, w.native_chunks, w.commits), (2, 0, 1));
    let back = open(&loc, "main", 1000).unwrap().dataset;
    for (path, a) in &ds.arrays {
        assert_eq!(chunks(&back.arrays[path]), chunks(a), "{path}");
    }
    // A run replaced in the middle (t chunk 1, positions 2 and 3), the dataset holding none
    // of its chunks now: the stored one is removed, the others kept.
    let none = open_tail(&loc, "main", 1000, ("t", 100), 0)
        .unwrap()
        .dataset;
    let update = vzarr_icechunk::Update {
        arrays: [("g/v".to_string(), (0usize, std::iter::once(1..2).collect()))]
            .into_iter()
            .collect(),
    };
    assert_eq!(vzarr_icechunk::update_chunks(&none, &update), 2);
    let w = write(
        &none,
        &loc,
        &WriteOptions {
            mode: WriteMode::Existing,
            update: Some(update),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((w.virtual_refs, w.commits), (0, 1));
    let got = chunks(&open(&loc, "main", 1000).unwrap().dataset.arrays["g/v"]);
    for (i, (g, a)) in got.iter().zip(&all).enumerate() {
        let want = if i == 2 { &missing } else { a };
        assert_eq!(g, want, "chunk {i}");
    }
    assert_ne!(all[2], missing);
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
    let s = a.manifest.intern("ftp://example.org/x.nc").unwrap();
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

/// Sources on HTTP(S) servers and Google Cloud Storage: the repository lists a container per
/// prefix with the store Icechunk reads them through, and the references read back as written.
#[test]
fn http_and_gcs_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let mut ds = dataset(dir);
    let a = ds.arrays.get_mut("g/v").unwrap();
    let h = a.manifest.intern("https://example.org/data/x.nc").unwrap();
    a.manifest.set_range(4, h, 100, 48).unwrap();
    let g = a.manifest.intern("gs://bucket/dir/y.nc").unwrap();
    a.manifest.set_range(5, g, 148, 48).unwrap();
    let p = a.manifest.intern("http://127.0.0.1:8080/z.nc").unwrap();
    a.manifest.set_range(0, p, 10, 32).unwrap();
    let path = tmp.path().join("repo");
    let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
    let w = write(&ds, &loc, &WriteOptions::default()).unwrap();
    let mut want = vec![
        format!("file://{dir}/"),
        "gs://bucket/dir/".to_string(),
        "http://127.0.0.1:8080/".to_string(),
        "https://example.org/data/".to_string(),
    ];
    want.sort();
    assert_eq!(w.containers, want);
    let back = open(&loc, "main", 1000).unwrap();
    assert_eq!(
        chunks(&back.dataset.arrays["g/v"]),
        chunks(&ds.arrays["g/v"])
    );
    let config = vzarr_source::runtime().unwrap().block_on(async {
        let storage = icechunk::new_local_filesystem_storage(&path).await.unwrap();
        let repo = icechunk::Repository::open(storage).execute().await.unwrap();
        serde_json::to_value(repo.config()).unwrap()
    });
    let conts = &config["virtual_chunk_containers"];
    assert!(
        conts["gs://bucket/dir/"]["store"].get("gcs").is_some(),
        "{conts}"
    );
    assert_eq!(
        conts["http://127.0.0.1:8080/"]["store"]["http"]["allow_http"], "true",
        "{conts}"
    );
    assert!(
        conts["https://example.org/data/"]["store"]
            .get("http")
            .is_some(),
        "{conts}"
    );
}

/// The repository's branches and the reference counts of the manifests of `branch`'s tip
/// (through the `icechunk` crate itself).
fn branches_and_manifests(dir: &std::path::Path, branch: &str) -> (Vec<String>, Vec<u32>) {
    vzarr_source::runtime().unwrap().block_on(async {
        let storage = icechunk::new_local_filesystem_storage(dir).await.unwrap();
        let repo = icechunk::Repository::open(storage).execute().await.unwrap();
        let branches = repo.list_branches().await.unwrap().into_iter().collect();
        let tip = repo.lookup_branch(branch).await.unwrap();
        let mut sizes: Vec<u32> = repo
            .lookup_manifest_files(&tip)
            .await
            .unwrap()
            .map(|m| m.num_chunk_refs)
            .collect();
        sizes.sort();
        (branches, sizes)
    })
}

/// A dataset of two arrays with many chunks: a 2-D grid (7 x 5 chunks, some missing, some
/// inline) and a 1-D one of 40 chunks from three sources.
fn many_chunks(dir: &str) -> VirtualDataset {
    let mut ds = dataset(dir);
    let grid = ChunkGrid::new(vec![
        DimGrid::varying(vec![1, 2, 1, 3, 1, 1, 2], 11).unwrap(),
        DimGrid::fixed(3, 15).unwrap(),
    ]);
    let mut manifest = ChunkManifest::new_missing(35);
    let a = manifest.intern(&format!("file://{dir}/a b%20.nc")).unwrap();
    for i in 0..35usize {
        match i % 6 {
            0 => {}
            1 => manifest.set_inline(i, vec![i as u8; 4]).unwrap(),
            _ => manifest
                .set_range(i, a, 1000 + 10 * i as u64, 8 + i as u64)
                .unwrap(),
        }
    }
    ds.arrays.insert(
        "g/w".into(),
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
    let mut manifest = ChunkManifest::new_missing(40);
    let files: Vec<u32> = (0..3)
        .map(|k| manifest.intern(&format!("file://{dir}/f{k}.nc")).unwrap())
        .collect();
    for i in 0..40usize {
        manifest
            .set_range(i, files[i % 3], 64 * i as u64, 64)
            .unwrap();
    }
    ds.arrays.insert(
        "u".into(),
        VirtualArray {
            data_type: DataType::Int16,
            endian: Endian::Big,
            fill_value: FillValue::zero(DataType::Int16),
            codecs: vec![],
            dimension_names: vec!["t".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[1280], &[32]).unwrap(),
            manifest,
        },
    );
    ds
}

fn assert_same(back: &VirtualDataset, ds: &VirtualDataset) {
    assert_eq!(back.groups, ds.groups);
    assert_eq!(back.provenance, ds.provenance);
    // An Icechunk repository lists its nodes in path order, whatever the order written.
    let sorted = |d: &VirtualDataset| {
        let mut k: Vec<String> = d.arrays.keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(sorted(back), sorted(ds));
    for (path, a) in &ds.arrays {
        let b = &back.arrays[path];
        assert_eq!(b.grid, a.grid, "{path}");
        assert_eq!(chunks(b), chunks(a), "{path}");
    }
}

/// A build written in many pieces (down to one chunk each) reads back equal, adds one commit
/// per piece to the branch (the last with the message), leaves no temporary branch, and splits
/// the manifests.
#[test]
fn pieces_end_as_one_commit_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = many_chunks(dir);
    let stored: u64 = ds.arrays.values().map(|a| a.manifest.stored() as u64).sum();
    let path = tmp.path().join("repo");
    let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
    let mut commits = vec!["Repository initialized".to_string()];
    for (k, piece_refs) in [1usize, 2, 5, 7, 16, 1000, 0].into_iter().enumerate() {
        let message = format!("build {k}");
        let w = write(
            &ds,
            &loc,
            &WriteOptions {
                message: message.clone(),
                piece_refs,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(w.virtual_refs + w.native_chunks, stored, "{piece_refs}");
        let expect_pieces = if piece_refs >= 1000 {
            1
        } else {
            stored.div_ceil(piece_refs.max(1) as u64)
        };
        if piece_refs <= 1 {
            assert_eq!(w.pieces, expect_pieces, "{piece_refs}");
        } else {
            // Pieces are cut between manifest splits only: never fewer than that.
            assert!(w.pieces >= expect_pieces, "{piece_refs}: {}", w.pieces);
        }
        let back = open(&loc, "main", 1000).unwrap();
        assert_same(&back.dataset, &ds);
        assert_eq!(back.snapshot, w.snapshot);
        assert_eq!(w.commits, w.pieces, "{piece_refs}");
        let n = w.pieces as usize;
        for p in 1..n {
            commits.insert(
                0,
                format!("vzarr: piece {p} of {n} of a build (complete only in the last)"),
            );
        }
        commits.insert(0, message);
        let h: Vec<String> = history(&loc, "main")
            .unwrap()
            .into_iter()
            .map(|c| c.message)
            .collect();
        assert_eq!(h, commits, "{piece_refs}");
        let (branches, manifests) = branches_and_manifests(&path, "main");
        assert_eq!(branches, ["main"], "{piece_refs}");
        let most = piece_refs.clamp(1, vzarr_icechunk::MANIFEST_REFS) as u32;
        assert!(
            manifests.iter().all(|&n| n <= most),
            "{piece_refs}: {manifests:?}"
        );
        assert_eq!(
            manifests.iter().map(|&n| u64::from(n)).sum::<u64>(),
            stored,
            "{piece_refs}"
        );
    }
    // Another branch, in pieces: main stays as it was.
    let tip = open(&loc, "main", 1000).unwrap().snapshot;
    vzarr_source::runtime().unwrap().block_on(async {
        let storage = icechunk::new_local_filesystem_storage(&path).await.unwrap();
        let repo = icechunk::Repository::open(storage).execute().await.unwrap();
        let at = repo.lookup_branch("main").await.unwrap();
        repo.create_branch("dev", &at).await.unwrap();
    });
    let mut ds2 = ds.clone();
    ds2.arrays.shift_remove("u");
    write(
        &ds2,
        &loc,
        &WriteOptions {
            branch: "dev".into(),
            message: "dev build".into(),
            piece_refs: 3,
            ..Default::default()
        },
    )
    .unwrap();
    assert_same(&open(&loc, "dev", 1000).unwrap().dataset, &ds2);
    assert_eq!(open(&loc, "main", 1000).unwrap().snapshot, tip);
    let h = history(&loc, "dev").unwrap();
    assert_eq!(h[0].message, "dev build");
    // The dev build's pieces, then main's history from its tip.
    let main_ids: Vec<String> = history(&loc, "main")
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(main_ids[0], tip);
    assert!(h.len() > main_ids.len() + 1);
    let dev_ids: Vec<String> = h.into_iter().map(|c| c.id).collect();
    assert_eq!(dev_ids[dev_ids.len() - main_ids.len()..], main_ids[..]);
    assert_eq!(branches_and_manifests(&path, "dev").0, ["dev", "main"]);
}

/// A build in pieces that fails midway (Icechunk refuses a zero-length reference of the last
/// piece) leaves the branch as it was and no temporary branch; so does an append into a
/// repository whose branch is missing.
#[test]
fn failed_pieces_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = many_chunks(dir);
    let path = tmp.path().join("repo");
    let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
    write(
        &ds,
        &loc,
        &WriteOptions {
            message: "good".into(),
            piece_refs: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let tip = open(&loc, "main", 1000).unwrap().snapshot;
    let messages = |loc: &RepoLocation| -> Vec<String> {
        history(loc, "main")
            .unwrap()
            .into_iter()
            .map(|c| c.message)
            .collect()
    };
    let good = messages(&loc);
    assert_eq!(good[0], "good");
    let mut bad = ds.clone();
    let u = bad.arrays.get_mut("u").unwrap();
    let s = u.manifest.intern(&format!("file://{dir}/f0.nc")).unwrap();
    u.manifest.set_range(39, s, 0, 0).unwrap();
    let e = write(
        &bad,
        &loc,
        &WriteOptions {
            message: "bad".into(),
            piece_refs: 4,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, IcechunkError::Icechunk { .. }), "{e}");
    assert_eq!(open(&loc, "main", 1000).unwrap().snapshot, tip);
    assert_eq!(messages(&loc), good);
    assert_eq!(branches_and_manifests(&path, "main").0, ["main"]);
    // A new repository whose build fails in its last piece is removed again.
    let fresh = tmp.path().join("fresh");
    let e = write(
        &bad,
        &RepoLocation::parse(fresh.to_str().unwrap()).unwrap(),
        &WriteOptions {
            piece_refs: 4,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, IcechunkError::Icechunk { .. }), "{e}");
    assert!(!fresh.exists());
}

/// Pieces committed one by one: the branch gains one commit per piece, the last with the
/// message and the provenance, and reads back equal; a failure in the last piece leaves the
/// branch, its history and the branch list as they were, though earlier pieces had been
/// committed.
#[test]
fn pieces_committed_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = many_chunks(dir);
    let stored: u64 = ds.arrays.values().map(|a| a.manifest.stored() as u64).sum();
    let path = tmp.path().join("repo");
    let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
    let opts = WriteOptions {
        message: "build".into(),
        piece_refs: 4,
        commits: Commits::PerPiece,
        ..Default::default()
    };
    let w = write(&ds, &loc, &opts).unwrap();
    assert_eq!(w.virtual_refs + w.native_chunks, stored);
    assert!(w.pieces >= stored.div_ceil(4), "{}", w.pieces);
    assert_eq!(w.commits, w.pieces);
    let back = open(&loc, "main", 1000).unwrap();
    assert_same(&back.dataset, &ds);
    assert!(back.has_provenance);
    assert_eq!(back.snapshot, w.snapshot);
    let messages = |loc: &RepoLocation| -> Vec<String> {
        history(loc, "main")
            .unwrap()
            .into_iter()
            .map(|c| c.message)
            .collect()
    };
    let n = w.pieces as usize;
    let mut expect = vec!["build".to_string()];
    expect.extend(
        (1..n)
            .rev()
            .map(|k| format!("vzarr: piece {k} of {n} of a build (complete only in the last)")),
    );
    expect.push("Repository initialized".into());
    assert_eq!(messages(&loc), expect);
    assert_eq!(branches_and_manifests(&path, "main").0, ["main"]);
    // The last piece fails: nothing of the build is left on the branch.
    let mut bad = ds.clone();
    let u = bad.arrays.get_mut("u").unwrap();
    let s = u.manifest.intern(&format!("file://{dir}/f0.nc")).unwrap();
    u.manifest.set_range(39, s, 0, 0).unwrap();
    let e = write(&bad, &loc, &opts).unwrap_err();
    assert!(matches!(e, IcechunkError::Icechunk { .. }), "{e}");
    assert_eq!(open(&loc, "main", 1000).unwrap().snapshot, w.snapshot);
    assert_eq!(messages(&loc), expect);
    assert_eq!(branches_and_manifests(&path, "main").0, ["main"]);
}

#[test]
fn locations() {
    assert!(matches!(
        RepoLocation::parse("s3://b/p/q/").unwrap(),
        RepoLocation::S3 { ref bucket, ref prefix } if bucket == "b" && prefix == "p/q"
    ));
    let gs = RepoLocation::parse("gs://b/p").unwrap();
    assert!(
        matches!(gs, RepoLocation::Gcs { ref bucket, ref prefix } if bucket == "b" && prefix == "p")
    );
    assert_eq!(gs.display(), "gs://b/p");
    let az = RepoLocation::parse("az://c/d/e/").unwrap();
    assert!(
        matches!(az, RepoLocation::Azure { ref container, ref prefix } if container == "c" && prefix == "d/e")
    );
    assert_eq!(az.display(), "az://c/d/e");
    for bad in [
        "s3://b",
        "s3://b/",
        "s3:///p",
        "s3://b/a/../c",
        "gs://b",
        "az://c/",
        "https://h/p",
        "",
    ] {
        assert!(RepoLocation::parse(bad).is_err(), "{bad}");
    }
}

/// Many references in one array (run with `--ignored --nocapture`; prints the times and the
/// peak RSS). `VZARR_ICECHUNK_REFS` sets the number (default 1M), `VZARR_ICECHUNK_PIECE` the
/// piece size. Not a benchmark: a check that writing and opening stream at scale, that every
/// reference reads back equal and that the branch gains one commit.
#[test]
#[ignore]
fn many_references() {
    let n: u64 = std::env::var("VZARR_ICECHUNK_REFS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = common::rows_over_100_files(dir, n);
    let loc = RepoLocation::parse(&format!("{dir}/repo")).unwrap();
    let piece_refs = std::env::var("VZARR_ICECHUNK_PIECE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(vzarr_icechunk::PIECE_REFS);
    let before = peak_rss_kib();
    let t = std::time::Instant::now();
    let w = write(
        &ds,
        &loc,
        &WriteOptions {
            piece_refs,
            ..Default::default()
        },
    )
    .unwrap();
    let written = t.elapsed();
    let after_write = peak_rss_kib();
    assert_eq!(w.virtual_refs, n);
    let size: u64 = walk_size(&tmp.path().join("repo"));
    let t = std::time::Instant::now();
    let back = open(&loc, "main", n).unwrap();
    let opened = t.elapsed();
    let a = &back.dataset.arrays["v"].manifest;
    assert_eq!(a.stored(), n as usize);
    for (i, c) in a.iter_stored() {
        assert_eq!(
            c,
            ds.arrays["v"].manifest.get(i),
            "chunk {i} differs after the round trip"
        );
    }
    assert_eq!(history(&loc, "main").unwrap().len() as u64, 1 + w.commits);
    println!(
        "{n} references in {} pieces: write {written:?} (peak RSS {before} KiB before, {after_write} KiB after), open {opened:?}, repository {size} bytes",
        w.pieces
    );
}

/// The process's peak resident set (VmHWM), KiB; 0 where /proc is missing.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
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
