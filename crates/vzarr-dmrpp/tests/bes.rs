//! The DMR++ files of OPeNDAP's bes repository that sit beside their HDF5 granules
//! (`../shared/dmrpp`, or `VZARR_DMRPP_DIR`), each scanned and compared with vzarr's own scan
//! of its granule (`vzarr-hdf5`, itself checked against libhdf5): for every variable both
//! give, the same shape, data type, byte order, chunk grid, filters and every chunk's byte
//! range (or inline bytes), and the fill value where the granule has unwritten chunks. The
//! sidecar known to be stale must differ, and so must one that states no byte order for
//! big-endian data and one of a granule inconsistent with itself; nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vzarr_core::{ChunkRef, Codec, VirtualArray};
use vzarr_source::{ByteSource, LocalFile};

/// A sidecar from before DMR++ stated byte orders: Hyrax reads its variables as little-endian,
/// and `atomic_type_1` is stored big-endian, so its values read through it are wrong.
const UNSTATED_BYTE_ORDER: [&str; 1] = ["modules/dmrpp_module/data/dmrpp/ntypes.h5.dmrpp"];

/// Granules that are not what their own metadata says: bes's test of a variable whose
/// dimension (`time`, 8) is longer than the dataset (4 values); the sidecar gives the
/// dimension's length.
const INCONSISTENT: [&str; 1] = ["modules/fileout_netcdf/data/swath_wrong_dim_rp.nc.dmrpp"];

/// The sidecar that describes another version of its granule (bes's own test data: every
/// offset 40 bytes off).
const STALE: [&str; 1] = ["modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp"];

/// Said to be stale in the test data's README, yet every byte it points at is where it says:
/// its three variables (netCDF-4's hidden `_nc4_non_coord_` names in the granule) compare
/// equal.
const SAID_STALE: &str = "modules/dmrpp_module/data/dmrpp/nc4_group_var_dim_name_same.h5.dmrpp";

fn data_dir() -> PathBuf {
    match std::env::var_os("VZARR_DMRPP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/dmrpp"),
    }
}

/// Filters as the decoder applies them, levels left out (they do not change what is read).
fn filters(codecs: &[Codec]) -> Vec<String> {
    codecs
        .iter()
        .map(|c| match c {
            Codec::Zlib { .. } => "zlib".to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// How `ours` (from the DMR++) differs from `theirs` (from the granule), if it does.
fn differences(ours: &VirtualArray, theirs: &VirtualArray) -> Vec<String> {
    let mut out = Vec::new();
    if ours.shape() != theirs.shape() {
        out.push(format!("shape {:?} vs {:?}", ours.shape(), theirs.shape()));
        return out;
    }
    if ours.data_type != theirs.data_type {
        out.push(format!(
            "type {:?} vs {:?}",
            ours.data_type, theirs.data_type
        ));
    }
    if ours.data_type.has_endianness() && ours.endian != theirs.endian {
        out.push(format!(
            "byte order {:?} vs {:?}",
            ours.endian, theirs.endian
        ));
    }
    if ours.grid != theirs.grid {
        out.push(format!("grid {:?} vs {:?}", ours.grid, theirs.grid));
        return out;
    }
    if filters(&ours.codecs) != filters(&theirs.codecs) {
        out.push(format!(
            "filters {:?} vs {:?}",
            filters(&ours.codecs),
            filters(&theirs.codecs)
        ));
    }
    // The fill value is what unwritten chunks read as: compared where the granule has some.
    let unwritten =
        (0..theirs.manifest.len()).any(|i| matches!(theirs.manifest.get(i), ChunkRef::Missing));
    if unwritten && ours.fill_value != theirs.fill_value {
        out.push(format!(
            "fill value {:?} vs {:?}",
            ours.fill_value, theirs.fill_value
        ));
    }
    let mut wrong = 0;
    let mut first = None;
    for i in 0..theirs.manifest.len() {
        let (a, b) = (ours.manifest.get(i), theirs.manifest.get(i));
        let same = match (&a, &b) {
            (ChunkRef::Missing, ChunkRef::Missing) => true,
            (
                ChunkRef::Range { offset, length, .. },
                ChunkRef::Range {
                    offset: o2,
                    length: l2,
                    ..
                },
            ) => offset == o2 && length == l2,
            (ChunkRef::Inline(x), ChunkRef::Inline(y)) => x == y,
            _ => false,
        };
        if !same {
            wrong += 1;
            first.get_or_insert(format!("chunk {i}: {a:?} vs {b:?}"));
        }
    }
    if wrong > 0 {
        out.push(format!(
            "{wrong} of {} chunks differ, first {}",
            theirs.manifest.len(),
            first.unwrap_or_default()
        ));
    }
    out
}

#[test]
fn bes_sidecars_match_their_granules() {
    let dir = data_dir();
    let pairs = std::fs::read_to_string(dir.join("bes_pairs.tsv")).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the DMR++ test data: ../shared/dmrpp beside the repository, or \
             VZARR_DMRPP_DIR)",
            dir.display()
        )
    });
    let bes = dir.join("bes");
    let mut compared = 0;
    let mut said_stale_arrays = 0;
    let mut refused = Vec::new();
    let mut arrays = 0;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut differing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in pairs.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let [sidecar, _, data, _, "present"] = cols[..] else {
            continue;
        };
        let data_path = bes.join(data);
        let mut head = [0u8; 8];
        let is_hdf5 = std::fs::File::open(&data_path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok_and(|()| &head == b"\x89HDF\r\n\x1a\n");
        if !is_hdf5 {
            continue; // HDF4 and others: not scanned by vzarr-hdf5
        }
        let url = format!("file://{}", data_path.display());
        let xml = std::fs::read(bes.join(sidecar)).unwrap();
        let ours = match vzarr_dmrpp::scan(&xml, &format!("{url}.dmrpp")) {
            Ok(s) => s.dataset,
            Err(e) => {
                refused.push(format!("{sidecar}: {e}"));
                continue;
            }
        };
        let src: Arc<dyn ByteSource> = Arc::new(LocalFile::open(&data_path).unwrap());
        let theirs = vzarr_hdf5::scan(src, &vzarr_hdf5::ScanOptions::for_url(&url))
            .unwrap_or_else(|e| panic!("{data}: {e}"));
        compared += 1;
        for s in &ours.skipped {
            if !s.path.contains('@') {
                let reason = s.reason.split(':').next().unwrap_or_default().to_string();
                *skipped.entry(reason).or_default() += 1;
            }
        }
        for (path, a) in &ours.arrays {
            // netCDF-4 stores a variable named as a dimension it does not hold under a hidden
            // name; the sidecar names it as netCDF does.
            let hidden = match path.rsplit_once('/') {
                Some((g, n)) => format!("{g}/_nc4_non_coord_{n}"),
                None => format!("_nc4_non_coord_{path}"),
            };
            let Some(b) = theirs
                .arrays
                .get(path)
                .or_else(|| theirs.arrays.get(&hidden))
            else {
                continue;
            };
            arrays += 1;
            if sidecar == SAID_STALE {
                said_stale_arrays += 1;
            }
            let d = differences(a, b);
            if !d.is_empty() {
                differing
                    .entry(sidecar.to_string())
                    .or_default()
                    .push(format!("{path}: {}", d.join("; ")));
            }
        }
    }
    println!("{compared} bes sidecars of HDF5 granules, {arrays} arrays compared");
    println!("variables skipped, by reason: {skipped:#?}");
    println!("{} refused:\n    {}", refused.len(), refused.join("\n    "));
    for (f, d) in &differing {
        println!("{f}:\n    {}", d.join("\n    "));
    }
    assert!(compared > 150, "only {compared} pairs compared");
    // Files that are not DMR++ documents (bes's own request files kept beside them).
    assert!(
        refused.iter().all(|r| r.contains("not a DMR++ document")),
        "{refused:#?}"
    );
    let unexpected: Vec<&String> = differing
        .keys()
        .filter(|f| {
            let f = f.as_str();
            !STALE.contains(&f) && !INCONSISTENT.contains(&f) && !UNSTATED_BYTE_ORDER.contains(&f)
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "sidecars differing from their granules: {unexpected:?}"
    );
    assert_eq!(
        said_stale_arrays, 3,
        "{SAID_STALE}: its three variables compared"
    );
    for stale in STALE
        .iter()
        .chain(&UNSTATED_BYTE_ORDER)
        .chain(&INCONSISTENT)
    {
        assert!(
            differing.contains_key(*stale),
            "{stale} is stale but was not found so"
        );
    }
}

/// Every `.dmrpp` file of the test data (bes's, pydap's and the NASA products' without their
/// granules: ICESat-2 ATL08, AIRS, MERRA-2, TEMPO) scans, each variable built or listed as
/// skipped with its reason; only files that are not DMR++ documents are refused.
#[test]
fn every_sidecar_scans_or_names_why_not() {
    let dir = data_dir();
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "dmrpp") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut built, mut skipped, mut refused) = (0, 0, Vec::new());
    for f in &files {
        let xml = std::fs::read(f).unwrap();
        match vzarr_dmrpp::scan(&xml, &format!("file://{}", f.display())) {
            Ok(s) => {
                let ds = s.dataset;
                built += ds.arrays.len();
                skipped += ds.skipped.iter().filter(|s| !s.path.contains('@')).count();
            }
            Err(e) => refused.push(e.to_string()),
        }
    }
    println!(
        "{} sidecars: {built} arrays built, {skipped} variables skipped, {} files refused",
        files.len(),
        refused.len()
    );
    assert!(files.len() > 350, "{} sidecars found", files.len());
    assert!(
        refused.iter().all(|r| r.contains("not a DMR++ document")),
        "{refused:#?}"
    );
    // HDF4 linked blocks: refused with the reason, never read as the fill value.
    let linked = dir.join("bes/modules/fileout_netcdf/data/SDS_unlimited_2.hdf.dmrpp");
    let ds = vzarr_dmrpp::scan(&std::fs::read(linked).unwrap(), "file:///x.hdf.dmrpp")
        .unwrap()
        .dataset;
    assert!(
        ds.skipped
            .iter()
            .any(|s| s.reason.contains("linked blocks")),
        "{:?}",
        ds.skipped
    );
    // ICESat-2 ATL08 (unversioned: "deflate shuffle" decodes inflating first).
    let atl08 = files
        .iter()
        .find(|f| {
            f.to_string_lossy()
                .ends_with("ATL08_20200716202251.h5.dmrpp")
        })
        .expect("ATL08's sidecar");
    let s = vzarr_dmrpp::scan(&std::fs::read(atl08).unwrap(), "s3://b/ATL08.h5.dmrpp").unwrap();
    assert_eq!(s.data_url, "s3://b/ATL08.h5");
    let ds = s.dataset;
    let shuffled: Vec<_> = ds
        .arrays
        .values()
        .filter(|a| a.codecs.iter().any(|c| matches!(c, Codec::Shuffle { .. })))
        .collect();
    assert!(shuffled.len() > 100, "{} shuffled arrays", shuffled.len());
    for a in shuffled {
        assert!(
            matches!(a.codecs[0], Codec::Shuffle { .. }),
            "{:?}",
            a.codecs
        );
    }
    let any = ds.arrays.values().next().unwrap();
    let ChunkRef::Range { source, .. } = (0..any.manifest.len())
        .map(|i| any.manifest.get(i))
        .find(|r| matches!(r, ChunkRef::Range { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(source, "s3://b/ATL08.h5");
}

/// A sidecar cut at every byte, or with any one byte changed to a structural character, gives
/// a dataset or an error, never a panic.
#[test]
fn damaged_sidecars_never_panic() {
    let path = data_dir().join("bes/modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5.dmrpp");
    let xml = std::fs::read(&path).unwrap();
    for end in 0..xml.len() {
        let _ = vzarr_dmrpp::scan(&xml[..end], "file:///x.h5.dmrpp");
    }
    for at in 0..xml.len() {
        for b in [b'<', b'>', b'"', b'[', b'-', b'9', 0xff] {
            let mut bad = xml.clone();
            bad[at] = b;
            let _ = vzarr_dmrpp::scan(&bad, "file:///x.h5.dmrpp");
        }
    }
}
