//! Differential tests: the native scanner (`vzarr_hdf5::scan`) against the libhdf5 scanner
//! (`vzarr_hdf5_oracle::scan_file`) on every HDF5/NetCDF4 fixture, on files written here
//! with libhdf5 and netCDF-C, and on the files below `VZARR_REAL_HDF5_DIR` when it is set;
//! plus a seeded mutation test of the native scanner.
//!
//! One test binary: linking the static libhdf5 is slow.

mod by_design;
mod compare;
mod gen_files;
mod hostile_strings;
mod raw;
mod real;
mod robustness;

// The files the format crate's own differential test writes (every chunk index, group kind,
// attribute storage, shared messages, user blocks, 4-byte addresses, virtual and external
// storage), reused as they are.
#[allow(dead_code, clippy::all)]
#[path = "../../../vzarr-hdf5-format/tests/oracle/generated.rs"]
mod generated;
#[allow(dead_code, clippy::all)]
#[path = "../../../vzarr-hdf5-format/tests/oracle/util.rs"]
mod util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use compare::{Bytes, Stats, compare};
use vzarr_core::VirtualDataset;
use vzarr_hdf5_format::{ChunkIndex, File, Layout, ObjectKind, UNLIMITED};

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every HDF5/NetCDF4 fixture listed in `fixtures/fixtures.json` (the NetCDF3 and the
/// deliberately bad ones are not HDF5; `bad_truncated.h5` is, and both scanners must refuse
/// it), and the monthly archive.
pub(crate) fn hdf5_fixtures() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("fixtures.json")).unwrap()).unwrap();
    let mut out: Vec<PathBuf> = index["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            let name = f["name"].as_str().unwrap();
            matches!(f["format"].as_str(), Some("hdf5" | "netcdf4")) || name.ends_with(".h5")
        })
        .map(|f| dir.join(f["name"].as_str().unwrap()))
        .collect();
    let mut archive: Vec<PathBuf> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    archive.sort();
    out.extend(archive);
    out
}

/// Arrays (by path) whose chunks libhdf5 2.2's chunk iteration puts at the wrong positions:
/// extensible-array indexes whose unlimited dimension is not the first. The format crate's
/// test shows the native positions right by the data; here they are compared as sets.
pub(crate) fn libhdf5_misnumbered(path: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(file) = File::open_path(path) else {
        return out;
    };
    let Ok(paths) = file.object_paths() else {
        return out;
    };
    for (&addr, p) in &paths.by_address {
        let Ok(oh) = file.object_header(addr) else {
            continue;
        };
        if file.object_kind(&oh) != ObjectKind::Dataset {
            continue;
        }
        let Ok(ds) = file.dataset(&oh) else { continue };
        let Layout::Chunked(ch) = &ds.layout.layout else {
            continue;
        };
        let unlim_first = ds
            .dataspace
            .max_dims
            .as_ref()
            .is_none_or(|m| m.iter().position(|&d| d == UNLIMITED).unwrap_or(0) == 0);
        if matches!(ch.index, ChunkIndex::ExtensibleArray { .. }) && !unlim_first {
            out.insert(p.trim_start_matches('/').to_string());
        }
    }
    out
}

/// Whether the libhdf5 scanner's error `err` on the file at `path` is libhdf5 2.2 failing to
/// open a dataset with an unlimited dimension in a file whose lengths take fewer than 8
/// bytes: the library writes the unlimited maximum as that many bytes of ones and reads it
/// back as a finite maximum ("didn't find unlimited dimension"). The format reader takes it
/// as unlimited, as the specification says.
pub(crate) fn libhdf5_cannot_open(path: &Path, err: &str) -> bool {
    err.contains("didn't find unlimited dimension")
        && File::open_path(path).is_ok_and(|f| f.superblock().size_of_lengths < 8)
}

/// Whether the native scan met a hard link back up the group tree, which the libhdf5
/// scanner follows without end.
pub(crate) fn oracle_would_recurse(ds: &VirtualDataset) -> bool {
    ds.skipped.iter().any(|s| s.reason.contains("(a cycle)"))
}

/// Split sizes each file is scanned with.
const SPLITS: [Option<u64>; 2] = [None, Some(4096)];

#[test]
fn fixtures_match_the_oracle() {
    let mut total = Stats::default();
    let mut failed = Vec::new();
    for p in hdf5_fixtures() {
        let mut st = Stats::default();
        for split in SPLITS {
            if !compare(&p, split, Bytes::Local, &mut st).is_empty() {
                failed.push(p.display().to_string());
            }
        }
        if !compare(&p, None, Bytes::TinyCache, &mut st).is_empty() {
            failed.push(format!("{} (tiny cache)", p.display()));
        }
        st.files = 1;
        total.add(&st);
    }
    println!("fixtures compared: {total:?}");
    assert!(failed.is_empty(), "differences in {failed:?}");
    assert!(
        total.files >= 20 && total.arrays > 100 && total.chunks > 1000,
        "{total:?}"
    );
    assert_eq!(
        total.both_fail, 3,
        "bad_truncated.h5 is refused by both, with each split"
    );
}

#[test]
fn generated_files_match_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut files = gen_files::all(d);
    files.push(generated::chunk_indexes_latest(d));
    files.extend(generated::chunk_indexes_earliest(d));
    files.extend(generated::attributes(d));
    files.extend(generated::shared(d));
    files.extend(generated::containers(d));
    files.push(generated::special_storage(d));
    files.push(util::types(d));
    let total = compare_all(&files);
    assert!(total.libhdf5_misnumbered > 0, "{total:?}");
}

/// The generated files of groups (old-style B-trees, compact and dense link storage,
/// thousands of soft links, cycles): a test of their own, which nextest runs beside the one
/// above (as one, they were the longest test of the workspace).
#[test]
fn generated_groups_match_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    compare_all(&generated::groups(dir.path()));
}

/// Each of `files` compared with the oracle at every split, and through a tiny cache; the
/// totals, after asserting that nothing differed.
fn compare_all(files: &[std::path::PathBuf]) -> Stats {
    let mut total = Stats::default();
    let mut failed = Vec::new();
    for p in files {
        let mut st = Stats::default();
        for split in SPLITS {
            if !compare(p, split, Bytes::Local, &mut st).is_empty() {
                failed.push(p.display().to_string());
            }
        }
        if !compare(p, None, Bytes::TinyCache, &mut st).is_empty() {
            failed.push(format!("{} (tiny cache)", p.display()));
        }
        st.files = 1;
        total.add(&st);
    }
    println!("generated files compared: {total:?}");
    assert!(failed.is_empty(), "differences in {failed:?}");
    total
}

/// Counts the calls (each a batch of ranges: one round trip on object storage) that reach
/// the source below the scanner's block cache.
#[derive(Debug)]
pub(crate) struct Calls {
    pub(crate) inner: vzarr_source::MemSource,
    pub(crate) calls: std::sync::atomic::AtomicU64,
}

impl vzarr_source::ByteSource for Calls {
    fn record(&self) -> &vzarr_core::SourceRecord {
        self.inner.record()
    }

    fn read_ranges(
        &self,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<bytes::Bytes>, vzarr_source::SourceError> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_ranges(ranges)
    }
}

/// With the object-storage options a fixture costs one round trip (its metadata is inside
/// the 256 KiB head), and a source read through a tiny cache still gives the same dataset.
#[test]
fn object_storage_options_take_one_round_trip_per_fixture() {
    let mut report = Vec::new();
    for p in hdf5_fixtures() {
        if p.ends_with("bad_truncated.h5") {
            continue;
        }
        let data = std::fs::read(&p).unwrap();
        let src = std::sync::Arc::new(Calls {
            inner: vzarr_source::MemSource::new("s3://bucket/f.nc", data),
            calls: Default::default(),
        });
        let ds = vzarr_hdf5::scan(src.clone(), &vzarr_hdf5::ScanOptions::object_storage())
            .unwrap_or_else(|e| panic!("{}: {}", p.display(), e.report()));
        let calls = src.calls.load(std::sync::atomic::Ordering::Relaxed);
        report.push(format!(
            "{}: {calls}",
            p.file_name().unwrap().to_string_lossy()
        ));
        assert_eq!(calls, 1, "{}", p.display());
        assert!(ds.arrays.values().all(|a| a
            .manifest
            .iter()
            .all(|r| !matches!(r, vzarr_core::ChunkRef::Range { source, .. } if source != "s3://bucket/f.nc"))));
    }
    println!("round trips per fixture: {report:?}");
}

/// A chunk whose address in the chunk index (a v1 B-tree node, no checksum) is moved past
/// the end of the file: an error naming the dataset, in both scanners.
#[test]
fn a_chunk_past_the_end_of_the_file_is_an_error_naming_the_dataset() {
    let path = fixtures_dir().join("layouts_v1.h5");
    let mut data = std::fs::read(&path).unwrap();
    let file = File::open_path(&path).unwrap();
    let oh = file
        .object_header(file.resolve_path("/btree_v1").unwrap())
        .unwrap();
    let ds = file.dataset(&oh).unwrap();
    let mut first = None;
    file.visit_chunks::<vzarr_hdf5_format::Error>(&ds, |c| {
        first.get_or_insert(c.address);
        Ok(())
    })
    .unwrap();
    let rel = first.unwrap() - file.superblock().base_address;
    let tree = data.windows(4).position(|w| w == b"TREE").unwrap();
    let at = tree
        + data[tree..]
            .windows(8)
            .position(|w| w == rel.to_le_bytes())
            .unwrap();
    let beyond = data.len() as u64 + 1000;
    data[at..at + 8].copy_from_slice(&beyond.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("moved.h5");
    std::fs::write(&p, &data).unwrap();
    let oracle = compare::oracle(&p, None).unwrap_err();
    let src: std::sync::Arc<dyn vzarr_source::ByteSource> =
        std::sync::Arc::new(vzarr_source::LocalFile::open(&p).unwrap());
    let e = vzarr_hdf5::scan(src, &vzarr_hdf5::ScanOptions::local()).unwrap_err();
    println!("oracle: {oracle}\nnative: {}", e.report());
    assert_eq!(e.object(), Some("btree_v1"), "{}", e.report());
    assert!(
        e.report().contains("past the end of the file"),
        "{}",
        e.report()
    );
    assert!(
        oracle.contains("btree_v1") && oracle.contains("past the end of the file"),
        "{oracle}"
    );
}

/// A netCDF-4 file laid out as netCDF-C lays out a month of daily fields: each variable's
/// chunk index among its data, beyond the head, and a global attribute added after the data
/// (in a continuation block of the root group's header at the end of the file). The walk
/// needs the continuation before it looks at the variables; the look-ahead finds both from
/// the head, so the scan takes two round trips (the head, then one batch), not three; the
/// dataset is the one the local options give.
#[test]
fn object_storage_scans_fetch_what_lies_beyond_the_head_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("month.nc");
    {
        let mut f = netcdf::create(&p).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("lat", 90).unwrap();
        f.add_dimension("lon", 180).unwrap();
        // Each variable defined and written before the next, as netCDF4-python scripts do.
        for (k, name) in ["pr", "psl", "tas"].into_iter().enumerate() {
            let mut v = f
                .add_variable::<f32>(name, &["time", "lat", "lon"])
                .unwrap();
            v.set_chunking(&[1, 90, 180]).unwrap();
            v.put_attribute("units", "1").unwrap();
            let values: Vec<f32> = (0..31 * 90 * 180).map(|i| (i + k) as f32).collect();
            v.put_values(&values, (0..31, .., ..)).unwrap();
        }
        for (name, value) in [
            ("Conventions", "CF-1.7"),
            ("frequency", "day"),
            (
                "source",
                "vzarr's differential tests, written as netCDF-C writes months",
            ),
            ("title", "a month of synthetic daily fields"),
        ] {
            f.add_attribute(name, value).unwrap();
        }
        f.add_attribute("history", "written after the data")
            .unwrap();
    }
    let data = std::fs::read(&p).unwrap();
    assert!(data.len() > 4 << 20, "{} bytes", data.len());
    let src = std::sync::Arc::new(Calls {
        inner: vzarr_source::MemSource::new("s3://bucket/month.nc", data.clone()),
        calls: Default::default(),
    });
    let remote = vzarr_hdf5::scan(src.clone(), &vzarr_hdf5::ScanOptions::object_storage())
        .unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(src.calls.load(std::sync::atomic::Ordering::Relaxed), 2);
    let local = vzarr_hdf5::scan(
        std::sync::Arc::new(vzarr_source::MemSource::new("s3://bucket/month.nc", data)),
        &vzarr_hdf5::ScanOptions::local(),
    )
    .unwrap();
    assert_eq!(
        vzarr_kerchunk::to_bytes(&remote).unwrap(),
        vzarr_kerchunk::to_bytes(&local).unwrap()
    );
    assert_eq!(
        remote.groups[""].attributes["history"],
        "written after the data"
    );
}

/// Groups and multi-level chunk indexes beyond the head: a netCDF-4 file with its variables
/// in a nested group, each of 730 small chunks (a v1 B-tree of a root and 12 leaves) written
/// before the next is defined, so that the later variables' headers, index roots and leaves
/// all lie beyond the 256 KiB head, among the data. The look-ahead follows the groups and goes
/// down the indexes a level a round, so the scan takes a round trip per level of what lies
/// beyond the head (3: the head, the headers and index roots, the leaves; nothing is left
/// for the walk), not one more for leaves the walk meets (4 with one look-ahead batch of
/// the root group's links only).
#[test]
fn object_storage_scans_follow_groups_and_index_levels_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nested.nc");
    {
        let mut f = netcdf::create(&p).unwrap();
        let mut g = f.add_group("model").unwrap();
        let mut g = g.add_group("atmos").unwrap();
        g.add_unlimited_dimension("time").unwrap();
        g.add_dimension("y", 8).unwrap();
        g.add_dimension("x", 8).unwrap();
        for (k, name) in ["pr", "psl", "tas", "uas"].into_iter().enumerate() {
            let mut v = g.add_variable::<f32>(name, &["time", "y", "x"]).unwrap();
            v.set_chunking(&[1, 8, 8]).unwrap();
            v.put_attribute("units", "1").unwrap();
            let values: Vec<f32> = (0..730 * 64).map(|i| (i + k) as f32).collect();
            v.put_values(&values, (0..730, .., ..)).unwrap();
        }
    }
    let data = std::fs::read(&p).unwrap();
    assert!(data.len() > 600 << 10, "{} bytes", data.len());
    let src = std::sync::Arc::new(Calls {
        inner: vzarr_source::MemSource::new("s3://bucket/nested.nc", data.clone()),
        calls: Default::default(),
    });
    let remote = vzarr_hdf5::scan(src.clone(), &vzarr_hdf5::ScanOptions::object_storage())
        .unwrap_or_else(|e| panic!("{}", e.report()));
    let local = vzarr_hdf5::scan(
        std::sync::Arc::new(vzarr_source::MemSource::new("s3://bucket/nested.nc", data)),
        &vzarr_hdf5::ScanOptions::local(),
    )
    .unwrap();
    assert_eq!(
        vzarr_kerchunk::to_bytes(&remote).unwrap(),
        vzarr_kerchunk::to_bytes(&local).unwrap()
    );
    assert_eq!(remote.arrays["model/atmos/uas"].manifest.len(), 730);
    assert_eq!(src.calls.load(std::sync::atomic::Ordering::Relaxed), 3);
}
