//! A snapshot read key by key (`Snapshot`) gives what the whole-repository read (`open`) gives:
//! the same documents, and for every chunk index the same reference; indices outside the grid
//! and paths that are no array hold nothing; the snapshot opened by id stays what it was after
//! the branch moves.

mod common;

use vzarr_core::ChunkRef;
use vzarr_icechunk::{RepoLocation, Snapshot, SnapshotChunk, WriteOptions, open, write};

#[test]
fn a_snapshot_read_key_by_key_equals_the_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300_000;
    let ds = common::rows_over_100_files("/data/src", n);
    let loc = RepoLocation::parse(&dir.path().join("r").display().to_string()).unwrap();
    write(&ds, &loc, &WriteOptions::default()).unwrap();
    let whole = open(&loc, "main", u64::MAX).unwrap();
    let snap = Snapshot::open(&loc, "main", None).unwrap();
    assert_eq!(snap.id(), whole.snapshot);
    assert_eq!(snap.documents(), &whole.documents);
    assert!(snap.has_provenance());
    assert_eq!(snap.provenance(), &whole.dataset.provenance);
    assert_eq!(snap.array_paths().collect::<Vec<_>>(), ["v"]);

    let indices: Vec<[u64; 2]> = (0..n).step_by(997).map(|i| [i, 0]).collect();
    let keys: Vec<(&str, &[u64])> = indices.iter().map(|i| ("v", &i[..])).collect();
    let got = snap.chunks(&keys).unwrap();
    let manifest = &whole.dataset.arrays["v"].manifest;
    for (i, chunk) in indices.iter().zip(&got) {
        let ChunkRef::Range {
            source,
            offset,
            length,
        } = manifest.get(i[0] as usize)
        else {
            panic!("chunk {i:?} is no reference");
        };
        let SnapshotChunk::Virtual {
            url,
            offset: o,
            length: l,
            version,
        } = chunk
        else {
            panic!("chunk {i:?}: {chunk:?} is no reference");
        };
        assert_eq!(
            (url.as_str(), *o, *l),
            (&*source.to_string(), offset, length)
        );
        // The sources here record no modification time or ETag: no checksum to state.
        assert_eq!(*version, None);
    }
    // Outside the grid, or no array: nothing.
    let outside = snap
        .chunks(&[("v", &[n, 0]), ("v", &[0, 1]), ("w", &[0, 0]), ("v", &[0])])
        .unwrap();
    assert!(outside.iter().all(|c| *c == SnapshotChunk::Missing));
    assert!(!snap.has_chunk_index("v", &[n, 0]));
    assert!(snap.stores_chunks("v").unwrap());
    assert_eq!(snap.chunk_indices("v", u64::MAX).unwrap().len() as u64, n);
    assert!(snap.chunk_indices("v", 10).is_err());

    // The branch moves; the snapshot opened by id does not.
    let before = snap.id().to_string();
    let more = common::rows_over_100_files("/data/other", 10);
    write(&more, &loc, &WriteOptions::default()).unwrap();
    let tip = Snapshot::open(&loc, "main", None).unwrap();
    assert_ne!(tip.id(), before);
    let old = Snapshot::open(&loc, "main", Some(&before)).unwrap();
    assert_eq!(old.documents(), &whole.documents);
    assert_eq!(old.chunks(&keys).unwrap(), got);
    assert!(Snapshot::open(&loc, "main", Some("not-an-id")).is_err());
    assert!(Snapshot::open(&loc, "no-such-branch", None).is_err());
}
