//! Hand-made bombs: datasets whose dataspace is astronomically large but never written,
//! and files patched to hold cycles and huge counts. Each must end quickly with an empty
//! visit or an error, never a panic, a hang or a huge allocation.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdf5::Extent;
use vzarr_hdf5_format::checksum::lookup3;
use vzarr_hdf5_format::{Error, File, Layout, MemStorage, ObjectKind, OpenOptions};

use crate::generated::{Ver, create};

fn open_mem(data: Vec<u8>, verify_checksums: bool) -> Result<File, Error> {
    File::open_with(
        Arc::new(MemStorage::new(data)),
        OpenOptions { verify_checksums },
    )
}

/// Counts the chunks of dataset `path`, timing the visit.
fn count_chunks(file: &File, path: &str) -> (Result<u64, Error>, Duration) {
    let started = Instant::now();
    let r = (|| {
        let oh = file.object_header(file.resolve_path(path)?)?;
        let ds = file.dataset(&oh)?;
        let mut n = 0;
        file.visit_chunks::<Error>(&ds, |_| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    })();
    (r, started.elapsed())
}

fn put_u64(data: &mut [u8], at: usize, v: u64) {
    data[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn fix_checksum(data: &mut [u8], start: usize, covered: usize) {
    let c = lookup3(&data[start..start + covered], 0);
    data[start + covered..start + covered + 4].copy_from_slice(&c.to_le_bytes());
}

fn find(data: &[u8], sig: &[u8]) -> Vec<usize> {
    (0..data.len().saturating_sub(sig.len()))
        .filter(|&i| data[i..].starts_with(sig))
        .collect()
}

fn quick<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let r = f();
    let t = started.elapsed();
    assert!(t < Duration::from_secs(2), "{what}: took {t:?}");
    r
}

fn index_address(file: &File, path: &str) -> u64 {
    let oh = file
        .object_header(file.resolve_path(path).unwrap())
        .unwrap();
    let ds = file.dataset(&oh).unwrap();
    match ds.layout.layout {
        Layout::Chunked(c) => c.index_address.unwrap(),
        _ => panic!("{path} not chunked"),
    }
}

/// Datasets of 2^60 one-element chunks, never (or barely) written.
fn huge_dataspaces(dir: &Path) {
    let big = 1u64 << 60;
    for (name, ver) in [
        ("huge_latest.h5", Ver::Latest),
        ("huge_earliest.h5", Ver::Earliest),
    ] {
        let p = dir.join(name);
        let f = create(&p, ver, |_| {});
        f.new_dataset::<u8>()
            .shape(big as usize)
            .chunk(1)
            .create("fixed")
            .unwrap();
        f.new_dataset::<u8>()
            .shape([Extent::new(big as usize, None)])
            .chunk(1)
            .create("unlimited")
            .unwrap();
        f.new_dataset::<u8>()
            .shape([Extent::new(1 << 30, None), Extent::new(1 << 30, None)])
            .chunk((1, 1))
            .create("unlimited2")
            .unwrap();
        let one = f
            .new_dataset::<u8>()
            .shape([Extent::new(big as usize, None), Extent::new(4, None)])
            .chunk((1, 4))
            .create("one_written")
            .unwrap();
        one.write_slice(
            &ndarray::Array2::from_elem((1, 4), 9u8),
            ndarray::s![5..6, 0..4],
        )
        .unwrap();
        drop(one);
        f.close().unwrap();
        let file = File::open_path(&p).unwrap();
        for ds in ["fixed", "unlimited", "unlimited2"] {
            let (r, t) = count_chunks(&file, ds);
            assert_eq!(r.unwrap(), 0, "{name}:{ds}");
            assert!(t < Duration::from_millis(500), "{name}:{ds} took {t:?}");
        }
        let (r, t) = count_chunks(&file, "one_written");
        assert_eq!(r.unwrap(), 1, "{name}:one_written");
        assert!(
            t < Duration::from_millis(500),
            "{name}:one_written took {t:?}"
        );
    }
}

#[test]
fn bombs_end_quickly() {
    let dir = tempfile::tempdir().unwrap();
    huge_dataspaces(dir.path());
    let latest = std::fs::read(crate::fixtures_dir().join("layouts_latest.h5")).unwrap();
    let file = File::open_path(crate::fixtures_dir().join("layouts_latest.h5")).unwrap();

    // Fixed array claiming 2^60 elements (checksum recomputed): refused before allocating.
    let fa = index_address(&file, "fixed_array") as usize;
    let mut d = latest.clone();
    put_u64(&mut d, fa + 8, 1 << 60);
    fix_checksum(&mut d, fa, 8 + 8 + 8);
    let f = open_mem(d, true).unwrap();
    let (r, _) = quick("fixed array count", || count_chunks(&f, "fixed_array"));
    assert!(r.is_err(), "{r:?}");

    // Extensible array with "max index set" of 2^64-1: the visit stays bounded by the blocks.
    let ea = index_address(&file, "extensible_array") as usize;
    let mut d = latest.clone();
    put_u64(&mut d, ea + 44, u64::MAX);
    fix_checksum(&mut d, ea, 68);
    let f = open_mem(d, true).unwrap();
    let (r, _) = quick("extensible array max index", || {
        count_chunks(&f, "extensible_array")
    });
    assert!(r.is_ok() || r.is_err());

    // v2 B-tree header claiming depth 65535.
    let bt = index_address(&file, "btree_v2") as usize;
    let mut d = latest.clone();
    d[bt + 12..bt + 14].copy_from_slice(&0xffffu16.to_le_bytes());
    let covered = 4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + 8 + 2 + 8;
    fix_checksum(&mut d, bt, covered);
    let f = open_mem(d, true).unwrap();
    let (r, _) = quick("v2 B-tree depth", || count_chunks(&f, "btree_v2"));
    assert!(matches!(r.unwrap_err().root_cause(), Error::Limit { .. }));

    // Implicit index whose dataspace claims 2^40 x 2^20 elements (checksums off).
    let oh = file
        .object_header(file.resolve_path("implicit").unwrap())
        .unwrap();
    let m = oh
        .find(vzarr_hdf5_format::messages::msg::DATASPACE)
        .unwrap();
    let mut d = latest.clone();
    let at = m.address as usize;
    put_u64(&mut d, at + 4, 1 << 40);
    put_u64(&mut d, at + 12, 1 << 20);
    put_u64(&mut d, at + 20, 1 << 40);
    put_u64(&mut d, at + 28, 1 << 20);
    let f = open_mem(d, false).unwrap();
    let (r, _) = quick("implicit huge dataspace", || count_chunks(&f, "implicit"));
    assert!(r.is_err(), "{r:?}");

    v1_structures(dir.path());
    heaps(dir.path());
    split_files(dir.path());
}

/// Files written with the split (multi) and family drivers: refused by name, since their
/// addresses reach into other files.
fn split_files(dir: &Path) {
    let base = dir.join("split.h5");
    let mut b = hdf5::File::with_options();
    b.fapl().split();
    let f = b.create(&base).unwrap();
    f.new_dataset::<u8>().shape(10).create("d").unwrap();
    f.close().unwrap();
    // The split driver names the metadata file "<name>.meta".
    let meta = dir.join("split.h5.meta");
    let r = File::open_path(&meta);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");

    let fam = dir.join("family_%d.h5");
    let mut b = hdf5::File::with_options();
    b.fapl().family_options(1 << 16);
    let f = b.create(&fam).unwrap();
    f.new_dataset::<u8>().shape(100).create("d").unwrap();
    f.close().unwrap();
    let r = File::open_path(dir.join("family_0.h5"));
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");

    // A file closed with a metadata cache image.
    let p = dir.join("cache_image.h5");
    let mut b = hdf5::File::with_options();
    b.fapl().libver_bounds(
        hdf5::file::LibraryVersion::latest(),
        hdf5::file::LibraryVersion::latest(),
    );
    let fapl = b.fapl().finish().unwrap();
    // SAFETY: HDF5 calls on identifiers created and closed in this block, under the library lock.
    hdf5::sync::sync(|| unsafe {
        let cfg = hdf5_sys::h5ac::H5AC_cache_image_config_t {
            version: 1,
            generate_image: 1,
            save_resize_status: 0,
            entry_ageout: -1,
        };
        assert!(hdf5_sys::h5p::H5Pset_mdc_image_config(fapl.id(), &cfg) >= 0);
    });
    let mut b = hdf5::File::with_options();
    b.set_fapl(&fapl).unwrap();
    let f = b.create(&p).unwrap();
    f.new_dataset::<u8>().shape(10).create("d").unwrap();
    f.close().unwrap();
    let r = File::open_path(&p);
    assert!(
        matches!(
            r.as_ref().map_err(|e| e.root_cause()),
            Err(Error::Unsupported { .. })
        ),
        "{r:?}"
    );
}

/// Cycles and counts in version 1 structures (no checksums to get past).
fn v1_structures(dir: &Path) {
    // A v1 B-tree whose first child is its own root.
    let files = crate::generated::chunk_indexes_earliest(dir);
    let p = &files[0];
    let data = std::fs::read(p).unwrap();
    let file = File::open_path(p).unwrap();
    let root = index_address(&file, "many") as usize;
    let mut d = data.clone();
    let key = 4 + 4 + 8 * 2;
    put_u64(&mut d, root + 24 + key, root as u64);
    let f = open_mem(d, true).unwrap();
    let (r, _) = quick("B-tree child = root", || count_chunks(&f, "many"));
    assert!(r.is_err(), "{r:?}");
    // Entries used = 65535.
    let mut d = data.clone();
    d[root + 6..root + 8].copy_from_slice(&0xffffu16.to_le_bytes());
    let f = open_mem(d, true).unwrap();
    let (r, _) = quick("B-tree entries", || count_chunks(&f, "many"));
    assert!(r.is_err(), "{r:?}");

    // An object header continuation that leads back to its own block.
    let attrs = crate::generated::attributes(dir);
    let p = attrs
        .iter()
        .find(|p| p.ends_with("attrs_earliest.h5"))
        .unwrap();
    let data = std::fs::read(p).unwrap();
    let file = File::open_path(p).unwrap();
    let addr = file.resolve_path("/untracked_many").unwrap();
    let oh = file.object_header(addr).unwrap();
    assert_eq!(oh.version, 1);
    let cont = oh
        .messages
        .iter()
        .find(|m| m.kind == vzarr_hdf5_format::messages::msg::CONTINUATION)
        .expect("a continuation message");
    let mut d = data.clone();
    let size0 = u32::from_le_bytes(
        data[addr as usize + 8..addr as usize + 12]
            .try_into()
            .unwrap(),
    );
    put_u64(&mut d, cont.address as usize, addr + 16);
    put_u64(&mut d, cont.address as usize + 8, u64::from(size0));
    let f = open_mem(d, true).unwrap();
    let r = quick("continuation cycle", || f.object_header(addr));
    assert!(
        matches!(
            r.as_ref().map_err(|e| e.root_cause()),
            Err(Error::Cycle { .. })
        ),
        "{r:?}"
    );

    // A message of an unknown type is skipped, unless flagged "fail if unknown".
    let attr = oh
        .messages
        .iter()
        .find(|m| m.kind == vzarr_hdf5_format::messages::msg::ATTRIBUTE)
        .unwrap();
    let n_attrs = file.attributes(&oh).unwrap().len();
    let type_at = attr.address as usize - 8;
    let mut d = data.clone();
    d[type_at..type_at + 2].copy_from_slice(&0x00ffu16.to_le_bytes());
    let f = open_mem(d.clone(), true).unwrap();
    let oh2 = f.object_header(addr).unwrap();
    assert_eq!(f.attributes(&oh2).unwrap().len(), n_attrs - 1);
    d[type_at + 4] |= 0x80;
    let f = open_mem(d, true).unwrap();
    let r = f.object_header(addr);
    assert!(
        matches!(
            r.as_ref().map_err(|e| e.root_cause()),
            Err(Error::Unsupported { .. })
        ),
        "{r:?}"
    );

    // Symbol table nodes claiming 65535 entries; a dataspace of rank 255.
    let groups = crate::generated::groups(dir);
    let data = std::fs::read(&groups[0]).unwrap();
    // (Every node: the file also holds stale nodes left by splits.)
    let mut d = data.clone();
    for at in find(&data, b"SNOD") {
        d[at + 6..at + 8].copy_from_slice(&0xffffu16.to_le_bytes());
    }
    let f = open_mem(d, true).unwrap();
    let r = quick("SNOD count", || crate::mutation::walk_everything_file(&f));
    assert!(r.is_err());
    let file = File::open_path(&groups[0]).unwrap();
    let addr = file.resolve_path("/a/b/c/deep").unwrap();
    let oh = file.object_header(addr).unwrap();
    let m = oh
        .find(vzarr_hdf5_format::messages::msg::DATASPACE)
        .unwrap();
    let mut d = data.clone();
    d[m.address as usize + 1] = 255;
    let f = open_mem(d, true).unwrap();
    let r = quick("rank 255", || f.dataset(&f.object_header(addr).unwrap()));
    assert!(r.is_err());

    // Soft links that point at each other.
    let p = dir.join("soft_loop.h5");
    let hf = create(&p, Ver::Latest, |_| {});
    hf.link_soft("/b", "a").unwrap();
    hf.link_soft("/a", "b").unwrap();
    hf.close().unwrap();
    let f = File::open_path(&p).unwrap();
    let r = quick("soft link loop", || f.resolve_path("/a/x"));
    assert!(matches!(r, Err(Error::Path { .. })), "{r:?}");
    let root = f.object_header(f.root_address()).unwrap();
    assert_eq!(f.object_kind(&root), ObjectKind::Group);
}

/// Heaps with impossible sizes.
fn heaps(dir: &Path) {
    let groups = crate::generated::groups(dir);
    let data = std::fs::read(&groups[1]).unwrap();
    // Fractal heap: 65535 rows in the root indirect block (checksum recomputed).
    for at in find(&data, b"FRHP") {
        let mut d = data.clone();
        d[at + 140..at + 142].copy_from_slice(&0xffffu16.to_le_bytes());
        fix_checksum(&mut d, at, 142);
        let f = open_mem(d, true).unwrap();
        let r = quick("fractal heap rows", || {
            crate::mutation::walk_everything_file(&f)
        });
        assert!(r.is_err());
    }
    // Global heap collection of 2^62 bytes.
    let attrs = crate::generated::attributes(dir);
    let data = std::fs::read(&attrs[0]).unwrap();
    let at = find(&data, b"GCOL")[0];
    let mut d = data.clone();
    put_u64(&mut d, at + 8, 1 << 62);
    let f = open_mem(d, true).unwrap();
    let r = quick("global heap size", || {
        crate::mutation::walk_everything_file(&f)
    });
    assert!(r.is_err());
}
