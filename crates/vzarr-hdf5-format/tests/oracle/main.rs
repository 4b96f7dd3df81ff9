//! Differential tests against libhdf5 (the oracle), on the project's fixtures and on files
//! generated here, plus the robustness tests (seeded mutants, hand-made bombs).
//!
//! One test binary: linking the static libhdf5 is slow.

mod bombs;
mod compare;
mod lib5;

use std::path::{Path, PathBuf};

use compare::{Stats, compare_file};

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every HDF5/NetCDF4 fixture (the NetCDF3 and deliberately bad ones are not HDF5).
pub fn hdf5_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [fixtures_dir(), fixtures_dir().join("archive")] {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                (n.ends_with(".h5") || n.ends_with(".nc"))
                    && !n.starts_with("bad_")
                    && !n.starts_with("nc3_")
            })
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

#[test]
fn fixtures_match_libhdf5() {
    let mut total = Stats::default();
    for p in hdf5_fixtures() {
        let st = compare_file(&p);
        total.add(&st);
    }
    println!("fixtures compared with libhdf5: {total:?}");
    assert!(total.files >= 20, "{total:?}");
    assert!(total.chunks > 0 && total.datasets > 0);
}

mod generated;
mod util;

/// Every generated file, written into `dir`.
pub fn generate_all(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![generated::chunk_indexes_latest(dir)];
    files.extend(generated::chunk_indexes_earliest(dir));
    files.extend(generated::groups(dir));
    files.extend(generated::attributes(dir));
    files.extend(generated::shared(dir));
    files.extend(generated::containers(dir));
    files.push(generated::special_storage(dir));
    files.push(util::types(dir));
    files
}

#[test]
fn generated_files_match_libhdf5() {
    use std::collections::BTreeSet;
    use vzarr_hdf5_format::{File, Layout, ObjectKind};
    let dir = tempfile::tempdir().unwrap();
    let files = generate_all(dir.path());
    let mut total = Stats::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for f in &files {
        total.add(&compare_file(f));
        // What the files exercised.
        let file = File::open_path(f).unwrap();
        let sb = file.superblock();
        seen.insert(format!(
            "superblock v{} offsets {} lengths {} base {}",
            sb.version, sb.size_of_offsets, sb.size_of_lengths, sb.base_address
        ));
        let paths = file.object_paths().unwrap();
        for &addr in paths.by_address.keys() {
            let oh = file.object_header(addr).unwrap();
            seen.insert(format!("object header v{}", oh.version));
            if let Ok(Some(g)) = file.group_storage(&oh) {
                let filtered = if oh.has(vzarr_hdf5_format::messages::msg::FILTERS) {
                    " filtered"
                } else {
                    ""
                };
                seen.insert(format!(
                    "group {}{filtered}",
                    match g {
                        vzarr_hdf5_format::GroupStorage::SymbolTable(_) => "symbol table",
                        vzarr_hdf5_format::GroupStorage::Compact => "compact",
                        vzarr_hdf5_format::GroupStorage::Dense(_) => "dense",
                    }
                ));
            }
            if file.object_kind(&oh) == ObjectKind::Dataset {
                let ds = file.dataset(&oh).unwrap();
                let idx = match &ds.layout.layout {
                    Layout::Chunked(c) => {
                        format!(" {} filtered={}", c.index.name(), ds.is_filtered())
                    }
                    _ => String::new(),
                };
                seen.insert(format!(
                    "layout v{} {}{idx}",
                    ds.layout.version,
                    ds.layout.class_name()
                ));
                seen.insert(format!(
                    "fill {:?} v{}",
                    ds.fill_value.source.0, ds.fill_value.source.1
                ));
            }
            if let Ok(Some(ai)) = file.attribute_info(&oh) {
                seen.insert(format!(
                    "attributes dense={} tracked={}",
                    ai.heap_address.is_some(),
                    ai.track_creation_order
                ));
            }
        }
    }
    println!("generated files compared with libhdf5: {total:?}");
    for s in &seen {
        println!("  covered: {s}");
    }
    for want in [
        "superblock v0",
        "superblock v1",
        "superblock v2",
        "superblock v3",
        "object header v1",
        "object header v2",
        "group symbol table",
        "group compact",
        "group dense",
        "layout v3 chunked v1 B-tree",
        "layout v4 chunked single chunk filtered=false",
        "layout v5 chunked single chunk filtered=true",
        "layout v4 chunked implicit",
        "layout v4 chunked fixed array filtered=false",
        "layout v5 chunked fixed array filtered=true",
        "layout v4 chunked extensible array filtered=false",
        "layout v5 chunked extensible array filtered=true",
        "layout v4 chunked v2 B-tree filtered=false",
        "layout v5 chunked v2 B-tree filtered=true",
        "layout v3 compact",
        "layout v3 contiguous",
        "layout v4 virtual",
        "attributes dense=true tracked=true",
        "attributes dense=true tracked=false",
    ] {
        assert!(
            seen.iter().any(|s| s.starts_with(want)),
            "not covered: {want}"
        );
    }
    assert!(
        seen.contains("group dense filtered"),
        "not covered: filtered link heaps"
    );
    assert!(total.chunks > 200_000 / 40, "{total:?}");
    check_new_references(dir.path());
}

/// References of HDF5 1.12+ (not readable through the classic reference path of the
/// oracle): resolve them and check their targets.
fn check_new_references(dir: &Path) {
    use vzarr_hdf5_format::File;
    let file = File::open_path(dir.join("types.h5")).unwrap();
    let target = file.resolve_path("/target").unwrap();
    let grp = file.resolve_path("/grp").unwrap();
    let root = file.object_header(file.root_address()).unwrap();
    let attrs = file.attributes(&root).unwrap();
    let get = |n: &str| {
        attrs
            .iter()
            .find(|a| a.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let objects = |n: &str| -> Vec<Vec<u64>> {
        let a = get(n);
        file.references(&a.datatype, &a.value)
            .unwrap()
            .into_iter()
            .map(|v| v.into_iter().map(|r| r.unwrap().object).collect())
            .collect()
    };
    assert_eq!(objects("new_refs"), vec![vec![target], vec![grp]]);
    assert_eq!(objects("new_ref_lists"), vec![vec![target, grp]]);
    assert_eq!(objects("obj_refs"), vec![vec![target], vec![grp]]);
    assert_eq!(objects("region_ref"), vec![vec![target]]);
    let paths = file.object_paths().unwrap();
    assert_eq!(paths.by_address[&target], "/target");
    let cx = get("complex");
    match &cx.datatype.class {
        vzarr_hdf5_format::TypeClass::Complex { base } => assert_eq!(base.size, 4),
        c => panic!("complex attribute read as {c:?}"),
    }
    assert_eq!(cx.value.len(), 16);
}

mod mutation;

/// A global allocator that refuses any single allocation above 1 GiB: an allocation sized
/// by an unchecked field aborts the test binary instead of passing unnoticed.
mod guard_alloc {
    use std::alloc::{GlobalAlloc, Layout, System};

    pub(crate) struct Guard;

    const LIMIT: usize = 1 << 30;

    // SAFETY: forwards to the system allocator; refusing (null) is allowed by the contract.
    unsafe impl GlobalAlloc for Guard {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if layout.size() > LIMIT {
                return std::ptr::null_mut();
            }
            // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract; forwarded as is.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System` through this allocator with `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if layout.size() > LIMIT {
                return std::ptr::null_mut();
            }
            // SAFETY: as for `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if new_size > LIMIT {
                return std::ptr::null_mut();
            }
            // SAFETY: `ptr` came from `System` through this allocator with `layout`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GUARD: guard_alloc::Guard = guard_alloc::Guard;

#[test]
fn mutants_never_panic_or_hang() {
    let count: u64 = std::env::var("VZARR_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    let seed: u64 = std::env::var("VZARR_MUTANT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234);
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<(String, Vec<u8>)> = hdf5_fixtures()
        .into_iter()
        .filter(|p| {
            !p.to_string_lossy().contains("archive/tas_2023")
                || p.to_string_lossy().ends_with("01.nc")
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    let mut extra = generated::chunk_indexes_earliest(dir.path());
    extra.extend(generated::groups(dir.path()).into_iter().take(1));
    extra.extend(generated::shared(dir.path()));
    extra.extend(generated::attributes(dir.path()));
    extra.push(util::types(dir.path()));
    extra.push(generated::filtered_groups_small(dir.path()));
    extra.extend(generated::containers(dir.path()).into_iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.starts_with("sizes") || n == "userblock_512_earliest.h5"
    }));
    for p in extra {
        inputs.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read(&p).unwrap(),
        ));
    }
    // Every unmutated input reads without error.
    for (name, data) in &inputs {
        if let Err(e) = mutation::walk_everything(data.clone(), true) {
            panic!("{name}: {}", e.report());
        }
    }
    let started = std::time::Instant::now();
    let out = mutation::run(&inputs, count, seed, std::time::Duration::from_secs(10));
    println!(
        "mutation test: {} inputs, {:?} in {:.1} s (seed {seed:#x})",
        inputs.len(),
        out,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(out.panics, 0, "{out:?}");
    assert_eq!(out.hangs, 0, "{out:?}");
    assert_eq!(out.mutants, count);
}

/// A simulated remote store with a block cache: a read of bytes not yet fetched costs one
/// round trip (and fetches its 64 KiB-aligned blocks), a prefetch call costs one round trip
/// for all its ranges. Prints the round trips of a full walk of each fixture.
#[test]
fn round_trips_with_a_block_cache() {
    use std::collections::HashSet;
    use std::ops::Range;
    use std::sync::Mutex;
    use vzarr_hdf5_format::{MemStorage, Storage, StorageError};

    struct Sim {
        block: u64,
        inner: MemStorage,
        blocks: Mutex<HashSet<u64>>,
        trips: Mutex<u64>,
    }
    impl Sim {
        fn fetch(&self, r: Range<u64>) -> bool {
            let mut b = self.blocks.lock().unwrap();
            let mut missing = false;
            for k in r.start / self.block..=(r.end.max(r.start + 1) - 1) / self.block {
                missing |= b.insert(k);
            }
            missing
        }
    }
    impl Storage for Sim {
        fn size(&self) -> u64 {
            self.inner.size()
        }
        fn read(&self, offset: u64, len: u64) -> Result<bytes::Bytes, StorageError> {
            if self.fetch(offset..offset + len) {
                *self.trips.lock().unwrap() += 1;
            }
            self.inner.read(offset, len)
        }
        fn prefetch(&self, ranges: &[Range<u64>]) {
            let mut any = false;
            for r in ranges {
                any |= self.fetch(r.clone());
            }
            if any {
                *self.trips.lock().unwrap() += 1;
            }
        }
    }
    let mut lines = Vec::new();
    for p in hdf5_fixtures() {
        let data = std::fs::read(&p).unwrap();
        let mut trips = Vec::new();
        let mut n = 0;
        for block in [4u64 << 10, 64 << 10] {
            let sim = std::sync::Arc::new(Sim {
                block,
                inner: MemStorage::new(data.clone()),
                blocks: Mutex::new(HashSet::new()),
                trips: Mutex::new(0),
            });
            let file = vzarr_hdf5_format::File::open(sim.clone()).unwrap();
            n = mutation::walk_everything_file(&file).unwrap();
            trips.push(*sim.trips.lock().unwrap());
        }
        lines.push(format!(
            "{:28} {:>8} bytes {:>6} items: {:>3} round trips with 4 KiB blocks, {:>2} with 64 KiB",
            p.file_name().unwrap().to_string_lossy(),
            data.len(),
            n,
            trips[0],
            trips[1]
        ));
    }
    println!("full walk through a block cache:\n{}", lines.join("\n"));
}
