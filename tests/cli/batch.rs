//! Catalog-scale builds end to end: bad files skipped and reported, the scan cache, append
//! equal to a rebuild, sharded scans equal to a one-process build.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn months() -> Vec<PathBuf> {
    (1..=12)
        .map(|m| fixtures().join(format!("archive/tas_2023{m:02}.nc")))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "stderr: {}\nstdout: {}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn mixed_catalog_skips_bad_files_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let cat = dir.path().join("catalog.txt");
    let mut lines: Vec<String> = months()[..3]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    std::fs::write(dir.path().join("empty.nc"), b"").unwrap();
    std::fs::write(
        dir.path().join("notes.nc"),
        b"this is a text file, not NetCDF\n",
    )
    .unwrap();
    let good = std::fs::read(&months()[3]).unwrap();
    std::fs::write(dir.path().join("truncated.nc"), &good[..good.len() / 2]).unwrap();
    lines.extend(["empty.nc", "notes.nc", "truncated.nc"].map(String::from));
    std::fs::write(&cat, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out.json");

    // Default: the first bad file stops the build, nothing is written.
    let o = vzarr(&[
        "build",
        "--catalog",
        s(&cat),
        "--concat-dim",
        "time",
        "-o",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.exists());

    // --on-error skip: the rest is built, the bad ones are listed, the exit status says so.
    let report = dir.path().join("bad.txt");
    let sum = dir.path().join("summary.json");
    let o = vzarr(&[
        "build",
        "--catalog",
        s(&cat),
        "--concat-dim",
        "time",
        "-o",
        s(&out),
        "--on-error",
        "skip",
        "--report",
        s(&report),
        "--summary-json",
        s(&sum),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.exists());
    let text = std::fs::read_to_string(&report).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains("empty.nc") && lines[0].contains("empty file"),
        "{text}"
    );
    assert!(
        lines[1].contains("notes.nc") && lines[1].contains("not an HDF5 or NetCDF file"),
        "{text}"
    );
    assert!(
        lines[2].contains("truncated.nc") && lines[2].contains("truncated"),
        "{text}"
    );
    let v = summary(&sum);
    assert_eq!(
        (
            v["files"].as_u64(),
            v["failed"].as_u64(),
            v["scanned"].as_u64()
        ),
        (Some(6), Some(3), Some(3))
    );
    let refs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(refs["vzarr"]["sources"].as_array().unwrap().len(), 3);
}

#[test]
fn files_the_planner_cannot_combine_are_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let report = dir.path().join("bad.txt");
    // April with its static `lat` coordinate changed: it cannot be combined with the others.
    let m = months();
    let odd = dir.path().join("tas_202304.nc");
    std::fs::copy(&m[3], &odd).unwrap();
    let refs_of = |p: &Path| {
        let r = dir.path().join("one.json");
        ok(&vzarr(&[
            "build",
            s(p),
            "-o",
            s(&r),
            "--small-chunks",
            "keep",
        ]));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&r).unwrap()).unwrap();
        v
    };
    let lat = refs_of(&odd)["refs"]["lat/c/0"].clone();
    let at = (lat[1].as_u64().unwrap() + lat[2].as_u64().unwrap() / 2) as usize;
    let mut bytes = std::fs::read(&odd).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(&odd, &bytes).unwrap();
    let mut args: Vec<&str> = vec!["build", s(&m[0]), s(&m[1]), s(&m[2]), s(&odd)];
    args.extend([
        "--concat-dim",
        "time",
        "-o",
        s(&out),
        "--report",
        s(&report),
    ]);
    // By default the build fails and writes nothing.
    let o = vzarr(&args);
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.exists());
    // Skipping: the odd file is left out and reported, the three months are combined.
    args.extend(["--on-error", "skip"]);
    let o = vzarr(&args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with(s(&odd)), "{text}");
    assert!(text.contains("lat"), "{text}");
    let refs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let pieces = refs["vzarr"]["concat"]["pieces"].as_array().unwrap();
    assert_eq!(pieces.len(), 3);
    assert_eq!(pieces[2]["start"].as_u64(), Some(31 + 28));
}

#[test]
fn an_empty_month_is_left_out_not_the_twelve_that_agree() {
    // The twelve months and January with no time steps as xarray writes it (NaN fill values,
    // other chunks): the twelve are built, the empty one is reported. Whether it sorts after
    // the months (a directory) or first (by name and on the command line) does not matter.
    let empty = fixtures().join("archive_odd/tas_empty.nc");
    for name in ["tas_empty.nc", "0_empty.nc"] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        for m in months() {
            std::fs::copy(&m, data.join(m.file_name().unwrap())).unwrap();
        }
        let odd = data.join(name);
        std::fs::copy(&empty, &odd).unwrap();
        let out = dir.path().join("out.json");
        let report = dir.path().join("bad.txt");
        let mut args = vec!["build"];
        let explicit: Vec<PathBuf> = std::iter::once(odd.clone())
            .chain(months().iter().map(|m| data.join(m.file_name().unwrap())))
            .collect();
        if name == "tas_empty.nc" {
            args.push(s(&data));
        } else {
            args.extend(explicit.iter().map(|p| s(p)));
        }
        args.extend([
            "--concat-dim",
            "time",
            "--on-error",
            "skip",
            "-o",
            s(&out),
            "--report",
            s(&report),
        ]);
        let o = vzarr(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        let listed = std::fs::read_to_string(&report).unwrap();
        assert_eq!(listed.lines().count(), 1, "{name}: {listed}");
        assert!(
            listed.starts_with(s(&odd)) && listed.contains("fill value differs"),
            "{name}: {listed}"
        );
        assert!(
            err.contains(&format!("{}: variable", odd.display())),
            "{name}: {err}"
        );
        let refs: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(refs["vzarr"]["sources"].as_array().unwrap().len(), 12);
        let pieces = refs["vzarr"]["concat"]["pieces"].as_array().unwrap();
        assert_eq!(pieces.len(), 12, "{name}");
        assert_eq!(pieces[11]["start"].as_u64(), Some(365 - 31), "{name}");
        assert!(text(&o.stdout).contains("combined 12 files"), "{name}");
    }
}

#[test]
fn cache_hits_are_counted_and_changes_rescanned() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for m in months() {
        std::fs::copy(&m, data.join(m.file_name().unwrap())).unwrap();
    }
    let cache = dir.path().join("cache");
    let build = |name: &str| {
        let out = dir.path().join(format!("{name}.json"));
        let sum = dir.path().join(format!("{name}.summary.json"));
        let o = vzarr(&[
            "build",
            s(&data),
            "--concat-dim",
            "time",
            "-o",
            s(&out),
            "--cache-dir",
            s(&cache),
            "--summary-json",
            s(&sum),
            "--jobs",
            "2",
        ]);
        ok(&o);
        (std::fs::read(&out).unwrap(), summary(&sum))
    };
    let (cold, v) = build("cold");
    assert_eq!(
        (v["scanned"].as_u64(), v["cache_hits"].as_u64()),
        (Some(12), Some(0))
    );
    let (warm, v) = build("warm");
    assert_eq!(
        (v["scanned"].as_u64(), v["cache_hits"].as_u64()),
        (Some(0), Some(12))
    );
    assert_eq!(cold, warm, "a build from cached scans equals a fresh one");
    // A changed file (new modification time) is scanned again.
    let f = std::fs::File::options()
        .append(true)
        .open(data.join("tas_202305.nc"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let (_, v) = build("touched");
    assert_eq!(
        (v["scanned"].as_u64(), v["cache_hits"].as_u64()),
        (Some(1), Some(11))
    );
}

#[test]
fn append_equals_a_full_rebuild_and_scans_only_new_files() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let m = months();
    let first: Vec<&str> = m[..6].iter().map(|p| s(p)).collect();
    let rest: Vec<&str> = m[6..].iter().map(|p| s(p)).collect();
    let all: Vec<&str> = m.iter().map(|p| s(p)).collect();
    let out = dir.path().join("appended.json");
    let mut args = vec![
        "build",
        "--concat-dim",
        "time",
        "-o",
        s(&out),
        "--cache-dir",
        s(&cache),
    ];
    args.extend(&first);
    ok(&vzarr(&args));
    let sum = dir.path().join("append.summary.json");
    let mut args = vec![
        "build",
        "--append",
        "-o",
        s(&out),
        "--cache-dir",
        s(&cache),
        "--summary-json",
        s(&sum),
    ];
    args.extend(&rest);
    let o = vzarr(&args);
    ok(&o);
    let v = summary(&sum);
    assert_eq!(
        (v["scanned"].as_u64(), v["cache_hits"].as_u64()),
        (Some(6), Some(1)),
        "only the new months are scanned, and only the output's last month is planned again"
    );
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("appended at the tail: 7 file(s) planned")
            && said.contains("the rest of the file kept as it was"),
        "{said}"
    );

    let full = dir.path().join("full.json");
    let mut args = vec!["build", "--concat-dim", "time", "-o", s(&full)];
    args.extend(&all);
    ok(&vzarr(&args));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&full).unwrap(),
        "append differs from a rebuild"
    );

    // Appending files that are already there is refused.
    let mut args = vec!["build", "--append", "-o", s(&out)];
    args.extend(&rest);
    let o = vzarr(&args);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to append"));
}

#[test]
fn sharded_scans_combine_to_the_single_process_build() {
    let dir = tempfile::tempdir().unwrap();
    let cat = dir.path().join("catalog.txt");
    std::fs::write(
        &cat,
        months()
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let single = dir.path().join("single.json");
    ok(&vzarr(&[
        "build",
        "--catalog",
        s(&cat),
        "--concat-dim",
        "time",
        "-o",
        s(&single),
    ]));

    // N processes at once, as a batch engine would run them.
    let n = 3;
    let partials: Vec<PathBuf> = (0..n)
        .map(|k| dir.path().join(format!("part{k}.json")))
        .collect();
    let children: Vec<_> = (0..n)
        .map(|k| {
            Command::new(env!("CARGO_BIN_EXE_vzarr"))
                .args([
                    "scan",
                    "--catalog",
                    s(&cat),
                    "--shard",
                    &format!("{k}/{n}"),
                    "-o",
                    s(&partials[k]),
                ])
                .output()
        })
        .collect();
    for c in children {
        ok(&c.unwrap());
    }
    let combined = dir.path().join("combined.json");
    let mut args = vec!["combine", "--concat-dim", "time", "-o", s(&combined)];
    // Partials in any order.
    args.extend(partials.iter().rev().map(|p| s(p)));
    ok(&vzarr(&args));
    assert_eq!(
        std::fs::read(&single).unwrap(),
        std::fs::read(&combined).unwrap()
    );

    // A missing shard is an error.
    let o = vzarr(&[
        "combine",
        "--concat-dim",
        "time",
        "-o",
        s(&combined),
        s(&partials[0]),
        s(&partials[2]),
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exactly once"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn directories_are_walked_with_include_and_exclude() {
    let dir = tempfile::tempdir().unwrap();
    for (i, m) in months().iter().enumerate() {
        let sub = dir.path().join(if i < 6 { "h1" } else { "h2" });
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(m, sub.join(m.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.path().join("README.txt"), b"not data").unwrap();
    let out = dir.path().join("out.json");
    let o = vzarr(&[
        "build",
        s(dir.path()),
        "--include",
        "*.nc",
        "--exclude",
        "h2/tas_20231[0-2].nc",
        "--concat-dim",
        "time",
        "-o",
        s(&out),
    ]);
    ok(&o);
    let refs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(refs["vzarr"]["sources"].as_array().unwrap().len(), 9);
}

/// The summary counts the write: an Icechunk build in pieces reports its pieces and
/// commits, and `--summary-json` has the write's seconds, included in the total.
#[test]
fn summary_counts_the_icechunk_write() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let sum = dir.path().join("summary.json");
    let mut args = vec!["build"];
    let files = months();
    args.extend(files[..3].iter().map(|p| s(p)));
    args.extend([
        "--concat-dim",
        "time",
        "--format",
        "icechunk",
        "-o",
        s(&repo),
        "--piece-refs",
        "2",
        "--summary-json",
        s(&sum),
    ]);
    let o = vzarr(&args);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("pieces, one commit each"), "{stdout}");
    assert!(stdout.contains(" s writing)"), "{stdout}");
    let v = summary(&sum);
    let (write, total, scan) = (
        v["write_seconds"].as_f64().unwrap(),
        v["total_seconds"].as_f64().unwrap(),
        v["scan_seconds"].as_f64().unwrap(),
    );
    assert!(write > 0.0, "{v}");
    assert!(total >= write + scan, "{v}");
}
