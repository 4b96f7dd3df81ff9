//! Every DMR++ file of the test data (`../shared/dmrpp`, or `VZARR_DMRPP_DIR`: OPeNDAP bes's,
//! and NASA products' without their granules) scanned, and damaged ones refused without a
//! panic. Each sidecar beside its granule is compared with vzarr's scan of the granule by
//! `vzarr_verify::check_sidecar` (crates/vzarr-verify/tests/sidecars.rs), and its values read
//! through zarr-python compared with h5py's (tests/interop/test_dmrpp.py).

use std::path::{Path, PathBuf};

use vzarr_core::{ChunkRef, Codec};

fn data_dir() -> PathBuf {
    match std::env::var_os("VZARR_DMRPP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/dmrpp"),
    }
}

/// Every `.dmrpp` file of the test data (bes's, pydap's and the NASA products' without their
/// granules: ICESat-2 ATL08, AIRS, MERRA-2, TEMPO) scans, each variable built or listed as
/// skipped with its reason; only files that are not DMR++ documents, or not well-formed XML,
/// are refused.
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
    // bes's request files kept under a .dmrpp name, and two HDF4 sidecars its writer printed
    // a debug line into before the XML: not well-formed, refused with the line.
    let malformed = refused
        .iter()
        .filter(|r| r.contains("text outside the root element near byte 0: \"number of blocks"))
        .count();
    assert_eq!(malformed, 2, "{refused:#?}");
    assert!(
        refused
            .iter()
            .all(|r| r.contains("not a DMR++ document") || r.contains("text outside")),
        "{refused:#?}"
    );
    // HDF4 linked blocks: an appendable SDS of 12 rows in blocks of 10, 1 and 1 rows, one
    // chunk each (its values are checked against pyhdf in tests/interop/test_dmrpp.py).
    let linked = dir.join("bes/modules/fileout_netcdf/data/SDS_unlimited_2.hdf.dmrpp");
    let ds = vzarr_dmrpp::scan(&std::fs::read(linked).unwrap(), "file:///x.hdf.dmrpp")
        .unwrap()
        .dataset;
    let a = &ds.arrays["AppendableData"];
    assert_eq!(a.grid.dims()[0].edges(), [10, 1, 1]);
    let ranges: Vec<_> = a.manifest.iter().map(|r| format!("{r:?}")).collect();
    assert!(ranges[1].contains("offset: 3580, length: 40"), "{ranges:?}");
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
