//! End-to-end tests of DMR++ sidecars: `vzarr check-dmrpp` on a directory of good, stale and
//! orphaned sidecars (each reported, the batch finished, exit status 1), and `vzarr build
//! --data-url` of a sidecar away from its granule, verified against the granule read directly.
//! The pair is one of OPeNDAP bes's (`../shared/dmrpp`, or `VZARR_DMRPP_DIR`).

use std::path::{Path, PathBuf};

use crate::common::*;

/// bes's sidecar of 4 shuffled and deflated chunks, and its granule.
const PAIR: &str = "bes/modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5";

fn pair() -> (PathBuf, PathBuf) {
    let dir = match std::env::var_os("VZARR_DMRPP_DIR") {
        Some(d) => PathBuf::from(d),
        None => root().join("../shared/dmrpp"),
    };
    let granule = dir.join(PAIR);
    let sidecar = PathBuf::from(format!("{}.dmrpp", granule.display()));
    assert!(
        sidecar.exists(),
        "{}: the DMR++ test data (../shared/dmrpp beside the repository, or VZARR_DMRPP_DIR)",
        sidecar.display()
    );
    (sidecar, granule)
}

/// Writes `name` (a granule copy) and `name.dmrpp` (the sidecar, edited by `edit`) into `dir`.
fn put(dir: &Path, name: &str, edit: impl Fn(String) -> String, with_granule: bool) {
    let (sidecar, granule) = pair();
    if with_granule {
        std::fs::copy(granule, dir.join(name)).unwrap();
    }
    let xml = std::fs::read_to_string(sidecar).unwrap();
    std::fs::write(dir.join(format!("{name}.dmrpp")), edit(xml)).unwrap();
}

#[test]
fn check_dmrpp_reports_every_sidecar_and_fails_on_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "good.h5", |x| x, true);
    put(
        dir.path(),
        "stale.h5",
        |x| x.replace("offset=\"5970\"", "offset=\"5980\""),
        true,
    );
    put(dir.path(), "orphan.h5", |x| x, false);
    let o = vzarr(&["check-dmrpp", dir.path().to_str().unwrap()]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", text(&o.stderr));
    assert!(
        out.contains("good.h5.dmrpp: matches its granule: 1 arrays, 4 chunks"),
        "{out}"
    );
    assert!(
        out.contains("STALE ")
            && out.contains("stale.h5.dmrpp: d_4_shufzip_chunks: stale chunks: 1 of 4 chunks"),
        "{out}"
    );
    assert!(out.contains("ERROR ") && out.contains("orphan.h5"), "{out}");
    assert!(
        out.contains("3 sidecars: 1 match their granules, 1 do not, 1 could not be checked"),
        "{out}"
    );

    // The good one alone, as JSON; by range reads too.
    let good = dir.path().join("good.h5.dmrpp");
    for extra in [&[][..], &["--ranges"][..]] {
        let mut args = vec!["check-dmrpp", "--json", good.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = vzarr(&args);
        assert!(o.status.success(), "{}", text(&o.stdout));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v[0]["findings"], serde_json::json!([]));
        assert_eq!(v[0]["chunks"], 4);
    }
}

#[test]
fn a_sidecar_away_from_its_granule_builds_with_data_url() {
    let (_, granule) = pair();
    let sidecars = tempfile::tempdir().unwrap();
    put(sidecars.path(), "g.h5", |x| x, false);
    let granules = tempfile::tempdir().unwrap();
    std::fs::copy(&granule, granules.path().join("g.h5")).unwrap();
    let out = sidecars.path().join("g.json");
    let sidecar = sidecars.path().join("g.h5.dmrpp");
    let template = format!("{}/{{name}}", granules.path().display());
    // Without the template the granule beside the sidecar is missing.
    let o = vzarr(&[
        "build",
        sidecar.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("g.h5"), "{}", text(&o.stderr));
    let o = vzarr(&[
        "build",
        sidecar.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--data-url",
        &template,
        "--small-chunks",
        "keep",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains(&format!("{}/g.h5", granules.path().display()))
    );
    // Every value read through the references equals the granule read directly.
    let o = vzarr(&[
        "verify",
        out.to_str().unwrap(),
        "--allow-prefix",
        granules.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).contains("4 chunks"), "{}", text(&o.stdout));
}
