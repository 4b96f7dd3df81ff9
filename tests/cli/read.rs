//! End-to-end tests of `vzarr verify` and `vzarr cat`: exit status and messages on good,
//! corrupted, stale and out-of-prefix references, and printed values against the HDF5 library.

use crate::common::*;
use std::path::{Path, PathBuf};

fn build(input: &Path, out: &Path) {
    build_with(input, out, &[]);
}

fn build_with(input: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "build",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = vzarr(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// The `--readers` of this build: native always, c with the `c-oracle` feature.
fn readers() -> Vec<&'static str> {
    if cfg!(feature = "c-oracle") {
        vec!["native", "c"]
    } else {
        vec!["native"]
    }
}

fn copy_fixture(name: &str, dir: &Path) -> PathBuf {
    let dst = dir.join(name);
    std::fs::copy(fixtures().join(name), &dst).unwrap();
    dst
}

#[test]
fn verify_succeeds_on_good_references() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "nc4_climate.nc",
        "nc3_classic.nc",
        "filters.h5",
        "dtypes.h5",
    ] {
        let out = dir.path().join(format!("{name}.json"));
        build(&fixtures().join(name), &out);
        let o = vzarr(&["verify", out.to_str().unwrap(), "--trust-references"]);
        let stdout = text(&o.stdout);
        assert!(o.status.success(), "{name}: {stdout}{}", text(&o.stderr));
        assert!(stdout.contains("all values match"), "{stdout}");
        // Arrays of object references are named as skipped first (see vzarr-verify).
        assert!(
            stdout.lines().any(|l| l.starts_with("verified ")),
            "{stdout}"
        );
        assert!(
            stdout
                .lines()
                .filter(|l| l.starts_with("skipped "))
                .all(|l| l.starts_with("skipped objref: object references")),
            "{stdout}"
        );
        // The output names the readers compared with: the C libraries where built.
        let (hdf5, nc3) = if cfg!(feature = "c-oracle") {
            ("libhdf5 ", "netCDF-C for NetCDF3")
        } else {
            ("vzarr's HDF5 reader", "vzarr's NetCDF3 reader")
        };
        let want = if name.starts_with("nc3") { nc3 } else { hdf5 };
        assert!(
            stdout.contains(&format!("compared with {want}")),
            "{stdout}"
        );
        // vzarr's own readers, asked for by name, in every build.
        let o = vzarr(&[
            "verify",
            out.to_str().unwrap(),
            "--trust-references",
            "--readers",
            "native",
        ]);
        let stdout = text(&o.stdout);
        assert!(o.status.success(), "{name}: {stdout}{}", text(&o.stderr));
        assert!(stdout.contains("compared with vzarr's"), "{stdout}");
    }
    // The C readers are refused by name where they are not built.
    let out = dir.path().join("nc3_classic.nc.json");
    let o = vzarr(&[
        "verify",
        out.to_str().unwrap(),
        "--trust-references",
        "--readers",
        "c",
    ]);
    if cfg!(feature = "c-oracle") {
        assert!(o.status.success(), "{}", text(&o.stderr));
    } else {
        assert_eq!(o.status.code(), Some(1));
        assert!(
            text(&o.stderr).contains("cargo feature `c-oracle`"),
            "{}",
            text(&o.stderr)
        );
    }
    // A reproducible sample, and JSON output.
    let out = dir.path().join("filters.h5.json");
    let run = || {
        let o = vzarr(&[
            "verify",
            out.to_str().unwrap(),
            "--trust-references",
            "--sample",
            "5",
            "--seed",
            "9",
            "--json",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["seconds"] = serde_json::json!(0);
        v
    };
    let a = run();
    assert_eq!(a["chunks_checked"], 5);
    assert_eq!(a["failed_chunks"], 0);
    assert_eq!(a, run());
}

#[test]
fn verify_names_the_variable_chunk_and_source_of_a_difference() {
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("filters.h5", dir.path());
    let out = dir.path().join("f.json");
    // Every chunk referenced (a small one would be kept inline, out of reach of bit rot).
    build_with(&src, &out, &["--small-chunks", "keep"]);
    let refs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let r = &refs["refs"]["deflate/c/1/1"];
    let (off, len) = (r[1].as_u64().unwrap(), r[2].as_u64().unwrap());
    // Bit rot: bytes change, the modification time does not.
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[(off + len / 2) as usize] ^= 0x5a;
    std::fs::write(&src, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // The change lies in the first 64 KiB, which the recorded fingerprint covers: stale.
    let o = vzarr(&["verify", out.to_str().unwrap(), "--trust-references"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("content changed (fingerprint of the first 64 KiB"),
        "{e}"
    );
    // Read anyway: the value comparison names the chunk.
    for readers in readers() {
        let o = vzarr(&[
            "verify",
            out.to_str().unwrap(),
            "--trust-references",
            "--ignore-stale",
            "--readers",
            readers,
        ]);
        let stdout = text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{stdout}");
        assert!(stdout.contains("MISMATCH deflate chunk [1, 1]"), "{stdout}");
        assert!(stdout.contains(&format!("{}", src.display())), "{stdout}");
        assert!(stdout.contains("1 chunk(s) differ"), "{stdout}");
    }
}

#[test]
fn verify_refuses_stale_sources_and_urls_outside_the_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("nc3_classic.nc", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out);

    // A manifest pointing at /etc/passwd is refused before anything is read.
    let mut refs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    refs["refs"]["tas/c/0/0/0"] = serde_json::json!(["file:///etc/passwd", 0, 100]);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_vec(&refs).unwrap()).unwrap();
    let dir_s = dir.path().to_str().unwrap();
    for cmd in ["verify", "cat"] {
        for allow in [
            ["--allow-prefix", dir_s],
            ["--trust-references", "--ignore-stale"],
        ] {
            let mut args = vec![cmd, bad.to_str().unwrap()];
            if cmd == "cat" {
                args.push("tas[0]");
            }
            args.extend(allow);
            let o = vzarr(&args);
            assert!(!o.status.success());
            let e = text(&o.stderr);
            assert!(e.contains("refusing to read file:///etc/passwd"), "{e}");
            assert!(e.contains("(array tas)"), "{e}");
            assert!(e.contains("not under an allowed prefix"), "{e}");
            assert!(!e.contains("root:"), "{e}");
        }
        // Nothing allowed: the hint names the prefixes the references record.
        let mut args = vec![cmd, out.to_str().unwrap()];
        if cmd == "cat" {
            args.push("tas[0]");
        }
        let o = vzarr(&args);
        assert!(!o.status.success());
        let e = text(&o.stderr);
        assert!(e.contains("no allowed prefixes"), "{e}");
        assert!(
            e.contains("hint: the references record their sources under file://"),
            "{e}"
        );
        assert!(e.contains("--allow-prefix"), "{e}");
        // The environment variable allows too.
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"))
            .args(&args)
            .env("VZARR_ALLOW_PREFIXES", format!("/nowhere, {dir_s}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }

    // A source whose size changed is reported stale, naming it and what changed.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&src)
        .unwrap()
        .set_len(std::fs::metadata(&src).unwrap().len() + 4)
        .unwrap();
    let o = vzarr(&["verify", out.to_str().unwrap(), "--trust-references"]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("source changed since the references were built"),
        "{e}"
    );
    assert!(e.contains("nc3_classic.nc"), "{e}");
    assert!(e.contains("size changed from"), "{e}");
    // --ignore-stale reads anyway (the data is intact).
    let o = vzarr(&[
        "verify",
        out.to_str().unwrap(),
        "--trust-references",
        "--ignore-stale",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn cat_prints_values_across_chunk_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("layouts_v1.h5");
    let out = dir.path().join("l.json");
    build(&src, &out);
    // int32 23x17 with chunks 10x5: rows 5..15, columns 3..12 cross chunk edges on both axes.
    let want: ndarray::Array2<i32> = hdf5::File::open(&src)
        .unwrap()
        .dataset("chunked_edge")
        .unwrap()
        .read_slice(ndarray::s![5..15, 3..12])
        .unwrap();
    let o = vzarr(&[
        "cat",
        out.to_str().unwrap(),
        "chunked_edge[5:15, 3:12]",
        "--trust-references",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let expected: String = want
        .rows()
        .into_iter()
        .map(|r| r.iter().map(i32::to_string).collect::<Vec<_>>().join(" ") + "\n")
        .collect();
    assert_eq!(text(&o.stdout), expected);
    // JSON, with negative indices and a single index.
    let o = vzarr(&[
        "cat",
        out.to_str().unwrap(),
        "chunked_edge[-18:-8, 4]",
        "--json",
        "--trust-references",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got: Vec<i32> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got, want.column(1).to_vec());
    // A bad selection.
    let o = vzarr(&[
        "cat",
        out.to_str().unwrap(),
        "chunked_edge[99]",
        "--trust-references",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("out of bounds"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_source_rewritten_with_a_corrupt_header_is_reported_not_fatal() {
    // Same size and modification time, header overwritten: the fingerprint reports it stale;
    // read anyway, netCDF-C (in verify's reader process) fails on every chunk and verify
    // reports each, exiting 1, never crashing.
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("nc3_classic.nc", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out);
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[8..64].fill(0xff);
    std::fs::write(&src, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let o = vzarr(&["verify", out.to_str().unwrap(), "--trust-references"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("content changed"),
        "{}",
        text(&o.stderr)
    );
    for readers in readers() {
        let o = vzarr(&[
            "verify",
            out.to_str().unwrap(),
            "--trust-references",
            "--ignore-stale",
            "--readers",
            readers,
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        let stdout = text(&o.stdout);
        assert!(
            stdout.contains("reading the source directly failed"),
            "{readers}: {stdout}"
        );
    }
}

#[test]
fn cat_prints_variable_length_strings() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("dtypes.h5");
    let out = dir.path().join("d.json");
    build(&src, &out);
    let want: Vec<String> = hdf5::File::open(&src)
        .unwrap()
        .dataset("vlen_str")
        .unwrap()
        .read_1d::<hdf5::types::VarLenUnicode>()
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(want.len(), 4);
    let o = vzarr(&[
        "cat",
        out.to_str().unwrap(),
        "vlen_str[1::2]",
        "--json",
        "--trust-references",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got: Vec<String> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got, vec![want[1].clone(), want[3].clone()]);
    let o = vzarr(&[
        "cat",
        out.to_str().unwrap(),
        "vlen_str[3]",
        "--trust-references",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!("{}\n", serde_json::to_string(&want[3]).unwrap())
    );
}

#[test]
fn relative_source_paths_name_the_files_the_references_point_into() {
    // References that record no sources (kerchunk's): `--source` with a relative path (and
    // one with `..`) names the file the references point into, not a dropped one.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let src = dir.path().join("data/m.nc");
    std::fs::copy(fixtures().join("archive/tas_202301.nc"), &src).unwrap();
    let out = dir.path().join("out.json");
    build_with(&src, &out, &["--small-chunks", "keep"]);
    let mut refs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    refs.as_object_mut().unwrap().remove("vzarr");
    std::fs::write(dir.path().join("kc.json"), refs.to_string()).unwrap();
    for given in ["data/m.nc", "./data/../data/m.nc"] {
        let o = vzarr_in(
            dir.path(),
            &[
                "verify",
                "kc.json",
                "--allow-prefix",
                "data",
                "--source",
                given,
                "--readers",
                "native",
            ],
        );
        let stdout = text(&o.stdout);
        assert!(o.status.success(), "{given}: {stdout}{}", text(&o.stderr));
        assert!(
            !stdout.contains("dropped") && stdout.contains("no defect"),
            "{given}: {stdout}"
        );
        let o = vzarr_in(
            dir.path(),
            &[
                "upgrade",
                "kc.json",
                "--leave-out-defective",
                "--source",
                given,
                "--allow-prefix",
                "data",
                "-o",
                "up.json",
            ],
        );
        let stdout = text(&o.stdout);
        assert!(o.status.success(), "{given}: {stdout}{}", text(&o.stderr));
        assert!(
            !stdout.contains("dropped") && stdout.contains("no defect"),
            "{given}: {stdout}"
        );
    }
    // A file the references do not point into is still named as dropped.
    std::fs::copy(&src, dir.path().join("data/other.nc")).unwrap();
    let o = vzarr_in(
        dir.path(),
        &[
            "verify",
            "kc.json",
            "--allow-prefix",
            "data",
            "--source",
            "data/m.nc",
            "--source",
            "data/other.nc",
            "--readers",
            "native",
        ],
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("(data/other.nc): dropped") && !stdout.contains("(data/m.nc)"),
        "{stdout}"
    );
}

#[test]
fn links_are_checked_on_the_file_opened() {
    // References to data/m.nc; then m.nc becomes a link out of the allowed directory, then a
    // link to nothing: both refused, naming the path and why, nothing read.
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join("data")).unwrap();
    std::fs::create_dir(root.join("outside")).unwrap();
    let src = root.join("data/m.nc");
    std::fs::copy(fixtures().join("archive/tas_202301.nc"), &src).unwrap();
    let out = root.join("m.json");
    build_with(&src, &out, &["--small-chunks", "keep"]);
    let cat = || {
        vzarr(&[
            "cat",
            out.to_str().unwrap(),
            "tas[0,0,0]",
            "--allow-prefix",
            root.join("data").to_str().unwrap(),
            "--ignore-stale",
        ])
    };
    let o = cat();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let moved = root.join("outside/m.nc");
    std::fs::rename(&src, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &src).unwrap();
    let o = cat();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "it resolves to file://{}, not under an allowed prefix",
            moved.display()
        )),
        "{e}"
    );
    std::fs::remove_file(&src).unwrap();
    std::os::unix::fs::symlink(root.join("outside/gone.nc"), &src).unwrap();
    let o = cat();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "file://{}: cannot resolve its links to check it against the allowed prefixes",
            src.display()
        )) && e.contains("No such file or directory"),
        "{e}"
    );
}
