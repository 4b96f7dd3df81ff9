//! Builds written in many pieces store no garbage: every byte a build writes stays reachable
//! from the branch (Icechunk's garbage collection finds nothing to delete), at 10 and at 100
//! pieces, and the values read back equal.

mod common;

use std::collections::BTreeMap;
use std::num::{NonZeroU16, NonZeroUsize};
use std::path::Path;

use vzarr_icechunk::{Commits, RepoLocation, WriteOptions, history, open, write};

/// Bytes under `p`, by top-level folder of the repository (`manifests`, `snapshots`,
/// `transactions`, `repo`, ...).
fn sizes(p: &Path) -> BTreeMap<String, u64> {
    fn walk(p: &Path) -> u64 {
        std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                if m.is_dir() { walk(&e.path()) } else { m.len() }
            })
            .sum()
    }
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            let n = if m.is_dir() { walk(&e.path()) } else { m.len() };
            (e.file_name().to_string_lossy().into_owned(), n)
        })
        .collect()
}

/// Runs Icechunk's garbage collection with a cutoff of now: whatever no branch or tag
/// reaches is deleted.
fn collect_garbage(repo: &Path) {
    vzarr_source::runtime().unwrap().block_on(async {
        let storage = icechunk::new_local_filesystem_storage(repo).await.unwrap();
        let r = icechunk::Repository::open(storage).execute().await.unwrap();
        let now = chrono::Utc::now() + chrono::Duration::seconds(1);
        let n = |v: u16| NonZeroU16::new(v).unwrap();
        let config = icechunk::ops::gc::GCConfig::clean_all(
            now,
            now,
            None,
            n(50),
            NonZeroUsize::new(1 << 28).unwrap(),
            NonZeroUsize::new(1 << 28).unwrap(),
            n(4),
            n(16),
            n(4),
            None,
            false,
        );
        icechunk::ops::gc::garbage_collect(r.asset_manager().clone(), &config, None, 100)
            .await
            .unwrap();
    });
}

/// A build in 10 and one in 100 pieces: the repository holds no more than 1.5 times what
/// garbage collection leaves (a chain of amended commits repeats every earlier piece's
/// transaction log: 5.5 times at 10 pieces, growing with their square), the branch gains
/// one commit per piece and the values read back equal.
#[test]
fn pieces_write_no_garbage() {
    let n = 20_000u64;
    for pieces in [10u64, 100] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        let ds = common::rows_over_100_files(dir, n);
        let path = tmp.path().join("repo");
        let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
        let w = write(
            &ds,
            &loc,
            &WriteOptions {
                piece_refs: (n / pieces) as usize,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(w.pieces, pieces);
        assert_eq!(w.commits, pieces);
        assert_eq!(history(&loc, "main").unwrap().len() as u64, pieces + 1);
        let written = sizes(&path);
        collect_garbage(&path);
        let live = sizes(&path);
        let (w_sum, l_sum): (u64, u64) = (written.values().sum(), live.values().sum());
        assert!(
            w_sum as f64 <= 1.5 * l_sum as f64,
            "{pieces} pieces: {w_sum} bytes written, {l_sum} live ({written:?} against {live:?})"
        );
        // Garbage collection found nothing of the build's to delete.
        for kind in ["manifests", "snapshots", "transactions"] {
            assert_eq!(written.get(kind), live.get(kind), "{pieces} pieces: {kind}");
        }
        let back = open(&loc, "main", n).unwrap();
        let a = &back.dataset.arrays["v"].manifest;
        assert_eq!(a.stored(), n as usize);
        for (i, c) in a.iter_stored() {
            assert_eq!(
                c,
                ds.arrays["v"].manifest.get(i),
                "{pieces} pieces: chunk {i}"
            );
        }
        eprintln!("{pieces} pieces: {w_sum} bytes written, {l_sum} live: {written:?} / {live:?}");
    }
}

/// `Commits::One`: a dataset past `piece_refs` is still one session and one commit, equal to
/// what was written, and leaves no garbage either.
#[test]
fn one_commit_whatever_the_size() {
    let n = 2_000u64;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let ds = common::rows_over_100_files(dir, n);
    let path = tmp.path().join("repo");
    let loc = RepoLocation::parse(path.to_str().unwrap()).unwrap();
    let w = write(
        &ds,
        &loc,
        &WriteOptions {
            piece_refs: 100,
            commits: Commits::One,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((w.pieces, w.commits), (20, 1));
    assert_eq!(history(&loc, "main").unwrap().len(), 2);
    let written = sizes(&path);
    collect_garbage(&path);
    let live = sizes(&path);
    for kind in ["manifests", "snapshots", "transactions"] {
        assert_eq!(written.get(kind), live.get(kind), "{kind}");
    }
    let back = open(&loc, "main", n).unwrap();
    for (i, c) in back.dataset.arrays["v"].manifest.iter_stored() {
        assert_eq!(c, ds.arrays["v"].manifest.get(i), "chunk {i}");
    }
}
