//! `check_sidecar` on OPeNDAP bes's DMR++ files that sit beside their granules
//! (`../shared/dmrpp`, or `VZARR_DMRPP_DIR`): compared with vzarr's scan of each HDF5 granule
//! (itself checked against libhdf5), exactly the sidecars known not to describe their granule
//! are flagged, each for what is wrong with it; checked by range reads, the stale one is
//! flagged and nothing else; HDF4 granules are checked by range reads. Sidecars damaged on
//! purpose (an offset moved, a chunk past the end, overlapping chunks) are flagged for it.
//! Sidecars whose chunks are partly in Hyrax's `_mvs.h5` files beside their granules are
//! checked with those files (fixtures/dmrpp-companions) beside them, and flagged without.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vzarr_verify::{FindingKind, SidecarMode, SidecarOptions, check_sidecar};

/// A sidecar that describes another version of its granule (every offset 40 bytes off).
const STALE: &str = "modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp";
/// Written before DMR++ stated byte orders: `atomic_type_1` is big-endian in the granule.
const UNSTATED_BYTE_ORDER: &str = "modules/dmrpp_module/data/dmrpp/ntypes.h5.dmrpp";
/// bes's test of a variable whose dimension (8) is longer than its data (4 values).
const INCONSISTENT: &str = "modules/fileout_netcdf/data/swath_wrong_dim_rp.nc.dmrpp";
/// Said to be stale in the test data's README; every byte it points at is where it says.
const SAID_STALE: &str = "modules/dmrpp_module/data/dmrpp/nc4_group_var_dim_name_same.h5.dmrpp";

fn data_dir() -> PathBuf {
    match std::env::var_os("VZARR_DMRPP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/dmrpp"),
    }
}

/// The bes pairs whose granule is present: (sidecar, granule), relative to `bes/` (37 of 297
/// granules are elsewhere than beside their sidecars).
fn present_pairs() -> Vec<(String, String)> {
    let dir = data_dir();
    let pairs = std::fs::read_to_string(dir.join("bes_pairs.tsv")).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the DMR++ test data: ../shared/dmrpp beside the repository, or \
             VZARR_DMRPP_DIR)",
            dir.display()
        )
    });
    pairs
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            match cols[..] {
                [sidecar, _, granule, _, "present"] => {
                    Some((sidecar.to_string(), granule.to_string()))
                }
                _ => None,
            }
        })
        .collect()
}

/// Hyrax's `_mvs.h5` file of the granule `granule` (fixtures/dmrpp-companions: the shared
/// corpus holds the sidecars and granules, not these), if it has one.
fn companion_of(granule: &str) -> Option<PathBuf> {
    let name = format!("{}_mvs.h5", Path::new(granule).file_name()?.to_str()?);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dmrpp-companions");
    walk(&root)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| *n == *name))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The pair (sidecar, granule, in `bes`) copied into `into` with the granule's `_mvs.h5`
/// beside it, when it has one: (sidecar, granule) there.
fn with_companion(
    bes: &Path,
    sidecar: &str,
    granule: &str,
    into: &Path,
) -> Option<(PathBuf, PathBuf)> {
    let companion = companion_of(granule)?;
    std::fs::create_dir_all(into).unwrap();
    let copy = |from: &Path| {
        let to = into.join(from.file_name().unwrap());
        std::fs::copy(from, &to).unwrap();
        to
    };
    copy(&companion);
    Some((copy(&bes.join(sidecar)), copy(&bes.join(granule))))
}

/// The findings of each flagged sidecar: (array, kind).
type Flagged = BTreeMap<String, Vec<(String, FindingKind)>>;

/// Each pair checked: the flagged sidecars, how many arrays and chunks were checked, and how
/// many sidecars were checked by range reads for their granule's format.
fn check_all(mode: SidecarMode) -> (Flagged, usize, u64, usize) {
    let bes = data_dir().join("bes");
    let staging = tempfile::tempdir().unwrap();
    let (mut flagged, mut arrays, mut chunks, mut fallbacks) = (BTreeMap::new(), 0, 0, 0);
    for (k, (sidecar, granule)) in present_pairs().into_iter().enumerate() {
        let (path, granule) = with_companion(
            &bes,
            &sidecar,
            &granule,
            &staging.path().join(format!("{k}")),
        )
        .unwrap_or_else(|| (bes.join(&sidecar), bes.join(&granule)));
        let opts = SidecarOptions {
            mode,
            data_url: Some(granule.display().to_string()),
            ..Default::default()
        };
        let report = match check_sidecar(&path.display().to_string(), &opts) {
            Ok(r) => r,
            // bes keeps a request file under a .dmrpp name, and two HDF4 sidecars hold a
            // debug line before their XML (crates/vzarr-dmrpp/tests/bes.rs).
            Err(e)
                if e.to_string().contains("not a DMR++ document")
                    || e.to_string().contains("text outside the root element") =>
            {
                continue;
            }
            Err(e) => panic!("{sidecar}: {e}"),
        };
        arrays += report.arrays;
        chunks += report.chunks;
        fallbacks += usize::from(report.fallback.is_some());
        if !report.matches() {
            flagged.insert(
                sidecar,
                report
                    .findings
                    .iter()
                    .map(|f| (f.array.clone(), f.kind))
                    .collect(),
            );
        }
    }
    (flagged, arrays, chunks, fallbacks)
}

#[test]
fn compared_with_their_granules_exactly_the_wrong_sidecars_are_flagged() {
    let (flagged, arrays, chunks, fallbacks) = check_all(SidecarMode::Scan);
    println!("{arrays} arrays, {chunks} chunks; {fallbacks} by range reads; {flagged:#?}");
    assert!(
        arrays > 300 && chunks > 1000,
        "{arrays} arrays, {chunks} chunks"
    );
    // The HDF4 granules (and one raw binary file), which vzarr does not scan.
    assert!(fallbacks >= 29, "{fallbacks} checked by range reads");
    let names: Vec<&str> = flagged.keys().map(String::as_str).collect();
    assert_eq!(names, [STALE, UNSTATED_BYTE_ORDER, INCONSISTENT]);
    assert!(!flagged.contains_key(SAID_STALE));
    let kinds = |s: &str| -> Vec<FindingKind> { flagged[s].iter().map(|f| f.1).collect() };
    assert_eq!(
        flagged[UNSTATED_BYTE_ORDER],
        [("atomic_type_1".to_string(), FindingKind::ByteOrder)]
    );
    assert_eq!(
        flagged[INCONSISTENT],
        [("pre_wrong".to_string(), FindingKind::Shape)]
    );
    // Every variable of the stale one: its chunks are elsewhere in the granule.
    let stale = kinds(STALE);
    assert_eq!(
        stale
            .iter()
            .filter(|k| **k == FindingKind::StaleChunks)
            .count(),
        9,
        "{stale:?}"
    );
}

#[test]
fn chunks_in_mvs_files_are_checked_in_them() {
    let bes = data_dir().join("bes");
    let sidecar = "modules/fileout_netcdf/data/grid_2_2d_sin.h5.dmrpp";
    let granule = "modules/fileout_netcdf/data/grid_2_2d_sin.h5";
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = with_companion(&bes, sidecar, granule, dir.path()).unwrap();
    let path = path.display().to_string();
    for mode in [SidecarMode::Scan, SidecarMode::Ranges] {
        let opts = SidecarOptions {
            mode,
            samples: 100,
            ..Default::default()
        };
        let r = check_sidecar(&path, &opts).unwrap();
        assert!(r.matches(), "{mode:?}: {:?}", r.findings);
        // 8 arrays' chunks in the `_mvs.h5` (coordinates Hyrax computed), all decoded.
        assert!(r.decoded >= 8, "{mode:?}: {} decoded", r.decoded);
    }
    // The `_mvs.h5` cut short: its arrays' chunks are past its end.
    let mvs = dir.path().join("grid_2_2d_sin.h5_mvs.h5");
    let bytes = std::fs::read(&mvs).unwrap();
    std::fs::write(&mvs, &bytes[..bytes.len() / 2]).unwrap();
    let r = check_sidecar(&path, &SidecarOptions::default()).unwrap();
    assert!(!r.matches());
    assert!(
        r.findings
            .iter()
            .all(|f| f.kind == FindingKind::OutsideObject || f.kind == FindingKind::Undecodable),
        "{:?}",
        r.findings
    );
    // Gone: each of its arrays flagged for it.
    std::fs::remove_file(&mvs).unwrap();
    let r = check_sidecar(&path, &SidecarOptions::default()).unwrap();
    let missing = r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::MissingFile)
        .count();
    assert_eq!(missing, 8, "{:?}", r.findings);
}

#[test]
fn by_range_reads_the_stale_sidecar_is_flagged_and_nothing_else() {
    let (flagged, arrays, _, _) = check_all(SidecarMode::Ranges);
    assert!(arrays > 300, "{arrays} arrays");
    // Its one compressed variable fails its Fletcher-32 checksum 40 bytes off; the others
    // (uncompressed) and the other two sidecars cannot be told by ranges alone.
    assert_eq!(
        flagged.into_iter().collect::<Vec<_>>(),
        [(
            STALE.to_string(),
            vec![("Y".to_string(), FindingKind::Undecodable)]
        )]
    );
}

/// A copy of a bes pair (sidecar and granule) in a temporary directory, the sidecar's XML
/// changed by `edit`.
fn damaged(sidecar: &str, edit: impl Fn(&str) -> String) -> (tempfile::TempDir, String) {
    let bes = data_dir().join("bes");
    let dir = tempfile::tempdir().unwrap();
    let name = Path::new(sidecar).file_name().unwrap();
    let granule = Path::new(sidecar).with_extension("");
    std::fs::copy(
        bes.join(&granule),
        dir.path().join(granule.file_name().unwrap()),
    )
    .unwrap();
    let xml = std::fs::read_to_string(bes.join(sidecar)).unwrap();
    let edited = edit(&xml);
    assert_ne!(edited, xml, "the edit changed nothing");
    let path = dir.path().join(name);
    std::fs::write(&path, edited).unwrap();
    (dir, path.display().to_string())
}

fn kinds(path: &str, mode: SidecarMode) -> Vec<FindingKind> {
    let opts = SidecarOptions {
        mode,
        samples: 100,
        ..Default::default()
    };
    let r = check_sidecar(path, &opts).unwrap();
    r.findings.iter().map(|f| f.kind).collect()
}

#[test]
fn damaged_sidecars_are_flagged_for_what_is_wrong() {
    // 4 shuffled and deflated chunks of 2-D floats at 4016, 4992, 5970 and 6502.
    let pair = "modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5.dmrpp";
    let (_d, good) = damaged(pair, |x| x.replace("  ", " "));
    assert!(kinds(&good, SidecarMode::Scan).is_empty());
    assert!(kinds(&good, SidecarMode::Ranges).is_empty());

    // One chunk's offset moved by a byte.
    let (_d, moved) = damaged(pair, |x| x.replace("offset=\"4992\"", "offset=\"4993\""));
    assert_eq!(
        kinds(&moved, SidecarMode::Scan),
        [FindingKind::StaleChunks, FindingKind::Overlap]
    );
    assert_eq!(
        kinds(&moved, SidecarMode::Ranges),
        [FindingKind::Overlap, FindingKind::Undecodable]
    );

    // A chunk past the granule's end; a chunk dropped from the list.
    let (_d, past) = damaged(pair, |x| {
        x.replace("offset=\"6502\"", "offset=\"99999999\"")
    });
    assert!(kinds(&past, SidecarMode::Ranges).contains(&FindingKind::OutsideObject));
    let (_d, dropped) = damaged(pair, |x| {
        let start = x
            .find("<dmrpp:chunk chunkPositionInArray=\"[50,50]\"")
            .unwrap();
        let end = start + x[start..].find("/>").unwrap() + 2;
        format!("{}{}", &x[..start], &x[end..])
    });
    assert_eq!(
        kinds(&dropped, SidecarMode::Scan),
        [FindingKind::MissingChunks]
    );

    // Filters named in another order than the granule's.
    let (_d, order) = damaged(pair, |x| {
        x.replace(
            "compressionType=\"deflate shuffle\"",
            "compressionType=\"deflate\"",
        )
        .replace(
            "compressionType=\"shuffle deflate\"",
            "compressionType=\"deflate\"",
        )
    });
    assert_eq!(kinds(&order, SidecarMode::Scan), [FindingKind::Filters]);
    assert_eq!(
        kinds(&order, SidecarMode::Ranges),
        Vec::<FindingKind>::new()
    );
}
