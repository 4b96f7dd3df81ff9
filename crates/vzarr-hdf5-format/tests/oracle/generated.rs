//! Files written here with libhdf5 to cover what the fixtures lack: every chunk index with
//! and without filters (paged arrays, deep B-trees), old-style / compact / dense groups,
//! compact and dense attributes (creation order, huge values, vlen strings), committed
//! datatypes, shared messages, user blocks, 4-byte addresses, soft / external links,
//! virtual and external storage.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use hdf5::file::LibraryVersion;
use hdf5::plist::dataset_create::ChunkOpts;
use hdf5::plist::file_create::{SharedMessageIndex, SharedMessageType, Sizeof, SizeofInfo};
use hdf5::plist::group_create::LinkCreationOrder;
use hdf5::types::VarLenUnicode;
use std::str::FromStr;

use hdf5::plist::dataset_create::AttrCreationOrder;
use hdf5::{Extent, File};
use ndarray::{Array1, Array2, Array3, s};

/// Which library version bounds to write with.
#[derive(Clone, Copy)]
pub(crate) enum Ver {
    Earliest,
    V18,
    Latest,
}

pub(crate) fn create(
    path: &Path,
    ver: Ver,
    fcpl: impl FnOnce(&mut hdf5::plist::FileCreateBuilder),
) -> File {
    let mut b = File::with_options();
    let p = b.fcpl();
    p.obj_track_times(false);
    fcpl(p);
    let low = match ver {
        Ver::Earliest => LibraryVersion::Earliest,
        Ver::V18 => LibraryVersion::V18,
        Ver::Latest => LibraryVersion::latest(),
    };
    b.fapl().libver_bounds(low, LibraryVersion::latest());
    b.create(path)
        .unwrap_or_else(|e| panic!("create {}: {e}", path.display()))
}

fn ds(g: &hdf5::Group) -> hdf5::DatasetBuilder {
    g.new_dataset_builder().obj_track_times(false)
}

/// Chunk indexes of layout version 4 (and 5 when filtered).
pub(crate) fn chunk_indexes_latest(dir: &Path) -> PathBuf {
    let p = dir.join("chunk_indexes_latest.h5");
    let f = create(&p, Ver::Latest, |_| {});
    let d2 = Array2::from_shape_fn((16, 24), |(i, j)| (i * 24 + j) as i32);
    ds(&f)
        .chunk((16, 24))
        .with_data(&d2)
        .create("single")
        .unwrap();
    ds(&f)
        .chunk((16, 24))
        .deflate(3)
        .with_data(&d2)
        .create("single_deflate")
        .unwrap();
    ds(&f)
        .chunk((5, 7))
        .alloc_time(Some(hdf5::dataset::AllocTime::Early))
        .with_data(&d2)
        .create("implicit")
        .unwrap();
    // Implicit with maximum dimensions larger than the current ones.
    let imp = ds(&f)
        .empty::<i16>()
        .chunk((4, 4))
        .alloc_time(Some(hdf5::dataset::AllocTime::Early))
        .shape([Extent::new(8, Some(20)), Extent::fixed(8)])
        .create("implicit_max")
        .unwrap();
    imp.write(&Array2::from_shape_fn((8, 8), |(i, j)| (i * 8 + j) as i16))
        .unwrap();
    ds(&f)
        .chunk((5, 7))
        .with_data(&d2)
        .create("farray")
        .unwrap();
    ds(&f)
        .chunk((5, 7))
        .shuffle()
        .deflate(4)
        .with_data(&d2)
        .create("farray_deflate")
        .unwrap();
    // Paged fixed array: 3000 chunks, pages of 1024 elements, the middle page never written.
    let pa = ds(&f)
        .empty::<u8>()
        .chunk(1)
        .shape(3000)
        .create("farray_paged")
        .unwrap();
    pa.write_slice(&Array1::from_elem(10, 7u8), s![0..10])
        .unwrap();
    pa.write_slice(&Array1::from_elem(10, 8u8), s![2500..2510])
        .unwrap();
    let pf = ds(&f)
        .empty::<u16>()
        .chunk(1)
        .deflate(1)
        .shape(2100)
        .create("farray_paged_deflate")
        .unwrap();
    pf.write_slice(&Array1::from_elem(5, 3u16), s![1030..1035])
        .unwrap();
    pf.write_slice(&Array1::from_elem(5, 3u16), s![2090..2095])
        .unwrap();
    // Extensible arrays: unlimited first dimension, sparse and large enough for super blocks
    // and paged data blocks.
    let ea = ds(&f)
        .empty::<u8>()
        .chunk(1)
        .shape([Extent::resizable(0)])
        .create("earray_sparse")
        .unwrap();
    ea.resize(200_000).unwrap();
    for start in [0usize, 37, 1500, 70_000, 150_000, 199_990] {
        ea.write_slice(&Array1::from_elem(10, 1u8), s![start..start + 10])
            .unwrap();
    }
    let ef = ds(&f)
        .empty::<i32>()
        .chunk((4, 3))
        .shuffle()
        .deflate(2)
        .shape([Extent::resizable(0), Extent::fixed(6)])
        .create("earray_deflate")
        .unwrap();
    ef.resize((2000, 6)).unwrap();
    ef.write(&Array2::from_shape_fn((2000, 6), |(i, j)| {
        (i * 6 + j) as i32
    }))
    .unwrap();
    // Unlimited second dimension (libhdf5's chunk iteration numbers these wrongly).
    let e2 = ds(&f)
        .empty::<f32>()
        .chunk((2, 3))
        .shape([Extent::fixed(4), Extent::resizable(0)])
        .create("earray_unlim_dim1")
        .unwrap();
    e2.resize((4, 30)).unwrap();
    e2.write(&Array2::from_shape_fn((4, 30), |(i, j)| {
        (i * 30 + j) as f32
    }))
    .unwrap();
    // v2 B-trees deep enough for internal nodes.
    let bt = ds(&f)
        .empty::<i16>()
        .chunk((1, 1))
        .shape([Extent::resizable(0), Extent::resizable(0)])
        .create("btree2")
        .unwrap();
    bt.resize((40, 45)).unwrap();
    bt.write(&Array2::from_shape_fn((40, 45), |(i, j)| {
        (i * 45 + j) as i16
    }))
    .unwrap();
    let btf = ds(&f)
        .empty::<f64>()
        .chunk((1, 2, 2))
        .deflate(1)
        .shape([Extent::resizable(0), Extent::resizable(0), Extent::fixed(4)])
        .create("btree2_deflate_3d")
        .unwrap();
    btf.resize((30, 30, 4)).unwrap();
    btf.write(&Array3::from_shape_fn((30, 30, 4), |(i, j, k)| {
        (i + j + k) as f64
    }))
    .unwrap();
    // Edge chunks stored unfiltered.
    let dp = ds(&f)
        .chunk((4, 4))
        .deflate(5)
        .chunk_opts(ChunkOpts::DONT_FILTER_PARTIAL_CHUNKS)
        .with_data(&Array2::from_shape_fn((10, 10), |(i, j)| {
            (i * 10 + j) as i64
        }))
        .create("dont_filter_partial")
        .unwrap();
    drop(dp);
    // A chunk written with its filter skipped (filter mask 1).
    let fm = ds(&f)
        .empty::<u32>()
        .chunk(4)
        .deflate(4)
        .shape(12)
        .create("filter_mask")
        .unwrap();
    crate::util::write_chunk_direct(
        &fm,
        &[4],
        1,
        &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0],
    );
    f.close().unwrap();
    p
}

/// Version 1 B-trees, deep (small K, so also a version 1 superblock) and wide.
pub(crate) fn chunk_indexes_earliest(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, k) in [("btree1_k4.h5", Some(4u32)), ("btree1_default.h5", None)] {
        let p = dir.join(name);
        let f = create(&p, Ver::Earliest, |c| {
            if let Some(k) = k {
                c.istore_k(k);
            }
        });
        let d = Array1::from_shape_fn(3000, |i| i as u16);
        ds(&f).chunk(1).with_data(&d).create("many").unwrap();
        ds(&f)
            .chunk(7)
            .shuffle()
            .deflate(6)
            .with_data(&d)
            .create("many_deflate")
            .unwrap();
        let d3 = Array3::from_shape_fn((6, 5, 4), |(i, j, k)| (i * 20 + j * 4 + k) as f32);
        ds(&f)
            .chunk((2, 2, 3))
            .with_data(&d3)
            .create("cube")
            .unwrap();
        let part = ds(&f)
            .empty::<i8>()
            .chunk((3, 3))
            .fill_value(-3i8)
            .shape((9, 9))
            .create("partial")
            .unwrap();
        part.write_slice(&Array2::from_elem((3, 3), 5i8), s![3..6, 6..9])
            .unwrap();
        ds(&f).with_data(&d).create("contiguous").unwrap();
        ds(&f)
            .empty::<f32>()
            .fill_value(2.5f32)
            .shape(10)
            .create("contiguous_unwritten")
            .unwrap();
        ds(&f)
            .layout(hdf5::dataset::Layout::Compact)
            .with_data(&Array1::from_shape_fn(10, |i| i as u8))
            .create("compact")
            .unwrap();
        f.close().unwrap();
        out.push(p);
    }
    out
}

/// Groups of the three kinds, links of every kind, cycles.
pub(crate) fn groups(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // Old-style groups, with small symbol table K values for deep B-trees.
    let p = dir.join("groups_old.h5");
    let f = create(&p, Ver::Earliest, |c| {
        c.sym_k(2, 2);
    });
    let g = f.create_group("many").unwrap();
    for i in 0..300 {
        let name = format!("g{:04}_{}", (i * 7919) % 1000, "x".repeat(i % 17));
        if g.link_exists(&name) {
            continue;
        }
        let sub = g.create_group(&name).unwrap();
        if i % 50 == 0 {
            ds(&sub)
                .with_data(&Array1::from_elem(3, i as i32))
                .create("d")
                .unwrap();
        }
    }
    g.link_soft("/many", "soft_to_self").unwrap();
    g.link_soft("../missing", "dangling").unwrap();
    g.link_external("other.h5", "/x/y", "ext").unwrap();
    f.link_hard("/many", "many/cycle").unwrap();
    let nested = f
        .create_group("a")
        .unwrap()
        .create_group("b")
        .unwrap()
        .create_group("c")
        .unwrap();
    ds(&nested)
        .with_data(&Array1::from_elem(2, 1.5f64))
        .create("deep")
        .unwrap();
    f.link_soft("/a/b", "to_b").unwrap();
    f.close().unwrap();
    out.push(p);

    // New-style groups: compact, dense (large heap with child indirect blocks), creation
    // order tracked and indexed, a huge link value.
    let p = dir.join("groups_new.h5");
    let f = create(&p, Ver::Latest, |_| {});
    let c = f.create_group("compact").unwrap();
    for n in ["b", "a", "c"] {
        c.create_group(n).unwrap();
    }
    let dense = f.create_group("dense").unwrap();
    for i in 0..4000 {
        let name = format!("link_{i:05}_{}", "n".repeat(120));
        dense.link_soft("/compact", &name).unwrap();
    }
    for i in 0..20 {
        dense.create_group(&format!("sub{i:02}")).unwrap();
    }
    dense
        .link_soft(&format!("/{}", "z".repeat(10_000)), "huge_soft")
        .unwrap();
    let ordered = f
        .create_group_builder()
        .with_gcpl(|p| p.link_creation_order(LinkCreationOrder::Indexed))
        .create("ordered")
        .unwrap();
    for i in (0..30).rev() {
        ordered.create_group(&format!("o{i:02}")).unwrap();
    }
    let tracked = f
        .create_group_builder()
        .with_gcpl(|p| p.link_creation_order(LinkCreationOrder::Tracked))
        .create("tracked_compact")
        .unwrap();
    for n in ["zz", "aa", "mm"] {
        tracked.create_group(n).unwrap();
    }
    f.link_hard("/dense", "compact/back").unwrap();
    // Groups created with filters: their link heaps have filtered blocks (and huge objects).
    for (name, fletcher) in [("filtered", false), ("filtered_fletcher", true)] {
        let g = f
            .create_group_builder()
            .with_gcpl(|p| {
                if fletcher {
                    p.deflate(6).fletcher32()
                } else {
                    p.deflate(6)
                }
            })
            .create(name)
            .unwrap();
        for i in 0..300 {
            g.link_soft("/compact", &format!("f{i:04}_{}", "q".repeat(i % 90)))
                .unwrap();
        }
        g.create_group("child").unwrap();
        g.link_soft(&format!("/{}", "w".repeat(9000)), "huge_soft")
            .unwrap();
    }
    f.close().unwrap();
    out.push(p);
    out
}

/// Attributes: compact and dense, creation order, huge values, vlen strings.
pub(crate) fn attributes(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, ver) in [
        ("attrs_latest.h5", Ver::Latest),
        ("attrs_earliest.h5", Ver::Earliest),
    ] {
        let p = dir.join(name);
        let f = create(&p, ver, |_| {});
        let orders = [
            ("untracked", AttrCreationOrder::Untracked),
            ("tracked", AttrCreationOrder::Tracked),
            ("indexed", AttrCreationOrder::Indexed),
        ];
        for (oname, order) in orders {
            for (count, kind) in [(5usize, "few"), (40, "many")] {
                let d = ds(&f)
                    .with_dcpl(|p| p.attr_creation_order(order))
                    .with_data(&Array1::from_elem(3, 0u8))
                    .create(format!("{oname}_{kind}").as_str())
                    .unwrap();
                for i in (0..count).rev() {
                    let an = format!("attr_{}_{i:03}", ["q", "b", "x", "a"][i % 4]);
                    d.new_attr::<i32>()
                        .shape(i % 3 + 1)
                        .create(an.as_str())
                        .unwrap()
                        .write(&Array1::from_elem(i % 3 + 1, i as i32))
                        .unwrap();
                }
                let s = VarLenUnicode::from_str(&format!("vlen text for {oname}_{kind}")).unwrap();
                d.new_attr::<VarLenUnicode>()
                    .create("vlen")
                    .unwrap()
                    .write_scalar(&s)
                    .unwrap();
                let v: Vec<VarLenUnicode> = (0..4)
                    .map(|i| VarLenUnicode::from_str(&"é".repeat(i * 3)).unwrap())
                    .collect();
                d.new_attr::<VarLenUnicode>()
                    .shape(4)
                    .create("vlen_array")
                    .unwrap()
                    .write(&Array1::from_vec(v))
                    .unwrap();
            }
        }
        if matches!(ver, Ver::Latest) {
            // A value larger than a managed heap object: a huge object.
            let g = f.create_group("huge").unwrap();
            g.new_attr::<f64>()
                .shape(20_000)
                .create("big")
                .unwrap()
                .write(&Array1::from_shape_fn(20_000, |i| i as f64))
                .unwrap();
            for i in 0..10 {
                g.new_attr::<u8>()
                    .create(format!("small{i}").as_str())
                    .unwrap()
                    .write_scalar(&(i as u8))
                    .unwrap();
            }
        }
        f.close().unwrap();
        out.push(p);
    }
    out
}

/// Committed datatypes (shared in another object header) and the shared message heap.
pub(crate) fn shared(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, ver) in [
        ("committed_earliest.h5", Ver::Earliest),
        ("committed_latest.h5", Ver::Latest),
    ] {
        let p = dir.join(name);
        let f = create(&p, ver, |_| {});
        crate::util::commit_and_use(&f);
        f.close().unwrap();
        out.push(p);
    }
    let p = dir.join("sohm.h5");
    let f = create(&p, Ver::Latest, |c| {
        c.shared_mesg_indexes(&[
            SharedMessageIndex {
                message_types: SharedMessageType::DATATYPE | SharedMessageType::SIMPLE_DATASPACE,
                min_message_size: 0,
            },
            SharedMessageIndex {
                message_types: SharedMessageType::ATTRIBUTE
                    | SharedMessageType::FILL_VALUE
                    | SharedMessageType::FILTER_PIPELINE,
                min_message_size: 0,
            },
        ]);
    });
    for i in 0..6 {
        let d = ds(&f)
            .chunk((2, 3))
            .deflate(3)
            .fill_value(7i64)
            .with_data(&Array2::from_shape_fn((4, 6), |(a, b)| (a * b + i) as i64))
            .create(format!("d{i}").as_str())
            .unwrap();
        d.new_attr::<i32>()
            .shape(3)
            .create("same")
            .unwrap()
            .write(&Array1::from_elem(3, 42))
            .unwrap();
        d.new_attr::<i32>()
            .create("own")
            .unwrap()
            .write_scalar(&(i as i32))
            .unwrap();
    }
    // Dense attributes that live in the shared message heap.
    let many = ds(&f)
        .with_data(&Array1::from_elem(2, 1u8))
        .create("many_shared_attrs")
        .unwrap();
    for i in 0..20 {
        many.new_attr::<i64>()
            .shape(2)
            .create(format!("a{i:02}").as_str())
            .unwrap()
            .write(&Array1::from_elem(2, i as i64 % 3))
            .unwrap();
    }
    crate::util::commit_and_use(&f);
    f.close().unwrap();
    out.push(p);
    out
}

/// User blocks, 4-byte (and 2-byte) addresses and lengths.
pub(crate) fn containers(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for ub in [512u64, 1024, 4096] {
        for ver in [Ver::Earliest, Ver::V18, Ver::Latest] {
            let tag = match ver {
                Ver::Earliest => "earliest",
                Ver::V18 => "v18",
                Ver::Latest => "latest",
            };
            let p = dir.join(format!("userblock_{ub}_{tag}.h5"));
            let f = create(&p, ver, |c| {
                c.userblock(ub);
            });
            fill_small(&f);
            f.close().unwrap();
            out.push(p);
        }
    }
    for (sz, tag) in [(Sizeof::Bytes4, "4"), (Sizeof::Bytes2, "2")] {
        for ver in [Ver::Earliest, Ver::Latest] {
            let vt = if matches!(ver, Ver::Latest) {
                "latest"
            } else {
                "earliest"
            };
            let p = dir.join(format!("sizes{tag}_{vt}.h5"));
            let r = std::panic::catch_unwind(|| {
                let f = create(&p, ver, |c| {
                    c.sizes(SizeofInfo {
                        sizeof_addr: sz,
                        sizeof_size: sz,
                    });
                });
                fill_small(&f);
                f.close().unwrap();
            });
            match r {
                Ok(()) => out.push(p),
                Err(_) => println!("note: libhdf5 cannot write {}-byte sizes ({vt})", tag),
            }
        }
    }
    out
}

fn fill_small(f: &File) {
    let g = f.create_group("g").unwrap();
    ds(&g)
        .chunk((2, 2))
        .deflate(1)
        .with_data(&Array2::from_shape_fn((5, 3), |(i, j)| (i * 3 + j) as i16))
        .create("chunked")
        .unwrap();
    ds(&g)
        .with_data(&Array1::from_shape_fn(6, |i| i as u32))
        .create("contig")
        .unwrap();
    let e = ds(&g)
        .empty::<u8>()
        .chunk(2)
        .shape([Extent::resizable(0)])
        .create("ext")
        .unwrap();
    e.resize(9).unwrap();
    e.write(&Array1::from_elem(9, 4u8)).unwrap();
    g.new_attr::<i16>()
        .shape(2)
        .create("a")
        .unwrap()
        .write(&Array1::from_elem(2, 9i16))
        .unwrap();
    let s = VarLenUnicode::from_str("text").unwrap();
    g.new_attr::<VarLenUnicode>()
        .create("s")
        .unwrap()
        .write_scalar(&s)
        .unwrap();
}

/// Virtual and external storage, soft links into datasets.
pub(crate) fn special_storage(dir: &Path) -> PathBuf {
    let p = dir.join("special_storage.h5");
    let src = dir.join("vds_source.h5");
    {
        let f = create(&src, Ver::Latest, |_| {});
        ds(&f)
            .with_data(&Array1::from_shape_fn(10, |i| i as f32))
            .create("src")
            .unwrap();
        f.close().unwrap();
    }
    let f = create(&p, Ver::Latest, |_| {});
    let src_s = src.to_string_lossy().into_owned();
    ds(&f)
        .empty::<f32>()
        .shape(10)
        .with_dcpl(|c| c.virtual_map(src_s.as_str(), "src", 10, 0..10, 10, 0..10))
        .create("virtual")
        .unwrap();
    let ext = dir.join("external.raw");
    std::fs::write(&ext, vec![0u8; 400]).unwrap();
    let ext_s = ext.to_string_lossy().into_owned();
    ds(&f)
        .empty::<i32>()
        .shape(100)
        .with_dcpl(|c| c.external(ext_s.as_str(), 0, 400))
        .create("external")
        .unwrap();
    f.link_soft("/external", "soft_to_dataset").unwrap();
    f.close().unwrap();
    p
}

#[allow(dead_code)]
pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A small file with dense link heaps behind filters (for the mutation test).
pub(crate) fn filtered_groups_small(dir: &Path) -> PathBuf {
    let p = dir.join("filtered_groups_small.h5");
    let f = create(&p, Ver::Latest, |_| {});
    for (name, fletcher) in [("deflate", false), ("deflate_fletcher", true)] {
        let g = f
            .create_group_builder()
            .with_gcpl(|p| {
                if fletcher {
                    p.deflate(6).fletcher32()
                } else {
                    p.deflate(6)
                }
            })
            .create(name)
            .unwrap();
        for i in 0..60 {
            g.link_soft("/", &format!("l{i:03}_{}", "z".repeat(i)))
                .unwrap();
        }
        g.link_soft(&format!("/{}", "y".repeat(5000)), "huge")
            .unwrap();
    }
    f.close().unwrap();
    p
}
