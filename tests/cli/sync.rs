//! `vzarr sync`: an output built from a directory of the monthly archive brought in line with
//! the directory after months were added, one re-processed (its values rewritten) and one
//! removed; each result compared with a fresh build of the directory as it is then.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// Runs `vzarr` with no allowed prefixes configured (an empty configuration directory).
fn run(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(args)
        .env("VZARR_ALLOW_PREFIXES", "")
        .env("XDG_CONFIG_HOME", config)
        .output()
        .expect("run vzarr")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A temporary directory with `arch/` holding the archive's months `months`.
struct Archive {
    tmp: tempfile::TempDir,
}

impl Archive {
    fn new(months: std::ops::RangeInclusive<u32>) -> Archive {
        let a = Archive {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(a.dir()).unwrap();
        std::fs::create_dir_all(a.path("config")).unwrap();
        a.add(months);
        a
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn dir(&self) -> PathBuf {
        self.path("arch")
    }

    fn month(&self, m: u32) -> PathBuf {
        self.dir().join(format!("tas_2023{m:02}.nc"))
    }

    fn add(&self, months: std::ops::RangeInclusive<u32>) {
        for m in months {
            let name = format!("tas_2023{m:02}.nc");
            std::fs::copy(fixtures().join("archive").join(&name), self.month(m)).unwrap();
        }
    }

    /// `vzarr` with no allowed prefixes configured.
    fn vzarr(&self, args: &[&str]) -> Output {
        run(&self.path("config"), args)
    }

    /// A fresh build of the directory as it is now, into `name`.
    fn fresh(&self, name: &str, extra: &[&str]) -> PathBuf {
        let out = self.path(name);
        let dir = self.dir();
        let mut args = vec!["build", s(&dir), "--concat-dim", "time", "-o", s(&out)];
        args.extend_from_slice(extra);
        ok(&self.vzarr(&args));
        out
    }

    /// `vzarr sync OUT --allow-prefix arch/ --cache-dir cache` with `extra`.
    fn sync(&self, out: &Path, extra: &[&str]) -> Output {
        let dir = self.dir();
        let cache = self.path("cache");
        let mut args = vec![
            "sync",
            s(out),
            "--allow-prefix",
            s(&dir),
            "--cache-dir",
            s(&cache),
        ];
        args.extend_from_slice(extra);
        self.vzarr(&args)
    }
}

/// Rewrites a month's `tas` with other values (each plus 1 K), as a re-processing would: the
/// same coordinate, other bytes.
fn reprocess(path: &Path) {
    let f = hdf5::File::open_rw(path).unwrap();
    let tas = f.dataset("tas").unwrap();
    let v: ndarray::Array3<f32> = tas.read().unwrap();
    tas.write(&(v + 1.0)).unwrap();
    f.close().unwrap();
}

/// The file's bytes and modification time: what a sync that writes nothing leaves alone.
fn state(p: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(p).unwrap(),
        std::fs::metadata(p).unwrap().modified().unwrap(),
    )
}

fn same_bytes(a: &Path, b: &Path) {
    assert!(
        std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
        "{} and {} differ",
        a.display(),
        b.display()
    );
}

fn summary(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn sync_appends_replaces_refuses_and_equals_a_fresh_build() {
    let a = Archive::new(1..=9);
    let out = a.path("out.json");
    let cache = a.path("cache");
    ok(&a.vzarr(&[
        "build",
        s(&a.dir()),
        "--concat-dim",
        "time",
        "-o",
        s(&out),
        "--cache-dir",
        s(&cache),
    ]));
    let recorded = summary(&out)["vzarr"]["inputs"].clone();
    assert_eq!(
        recorded["locations"][0].as_str().unwrap(),
        format!("file://{}/", a.dir().display())
    );

    // Nothing changed: a no-op.
    let before = state(&out);
    let o = a.sync(&out, &[]);
    let printed = ok(&o);
    assert!(
        printed.contains("0 added, 0 replaced, 0 removed, 9 unchanged"),
        "{printed}"
    );
    assert!(printed.contains("up to date: nothing written"), "{printed}");
    assert!(state(&out) == before, "a sync with nothing to do wrote");

    // Two new months: an append, equal to a fresh build.
    a.add(10..=11);
    let plan_json = a.path("plan.json");
    let o = a.sync(&out, &["--dry-run", "--summary-json", s(&plan_json)]);
    let printed = ok(&o);
    assert!(
        printed.contains("2 added, 0 replaced, 0 removed, 9 unchanged"),
        "{printed}"
    );
    assert!(
        printed.contains("added     ") && printed.contains("tas_202310.nc"),
        "{printed}"
    );
    assert!(
        printed.contains("unchanged ") && printed.contains("tas_202301.nc"),
        "{printed}"
    );
    assert!(printed.contains("dry run: nothing written"), "{printed}");
    assert!(state(&out) == before, "a dry run wrote");
    let p = summary(&plan_json);
    assert_eq!(p["action"], "append");
    assert_eq!(p["dry_run"], true);
    assert_eq!(p["added"].as_array().unwrap().len(), 2);
    let done_json = a.path("done.json");
    let printed = ok(&a.sync(&out, &["--summary-json", s(&done_json)]));
    assert!(printed.contains("2 added"), "{printed}");
    assert!(printed.contains("appended at the tail"), "{printed}");
    let d = summary(&done_json);
    assert_eq!(d["action"], "append");
    // Only the new months scanned, and only the output's last month planned with them.
    assert_eq!(d["build"]["scanned"], 2, "{d}");
    assert_eq!(d["build"]["cache_hits"], 1, "{d}");
    same_bytes(&out, &a.fresh("fresh-append.json", &[]));

    // A re-processed month and one more new month: replaced in place and appended, equal to
    // a fresh build, scanning only those two (the neighbours and the last month come from
    // the cache).
    reprocess(&a.month(5));
    a.add(12..=12);
    let printed = ok(&a.sync(&out, &["--summary-json", s(&done_json)]));
    assert!(
        printed.contains("1 added, 1 replaced, 0 removed, 10 unchanged"),
        "{printed}"
    );
    assert!(
        printed.contains("1 changed file(s) replaced in place: 5 file(s) planned"),
        "{printed}"
    );
    assert!(
        printed.contains("replaced  ") && printed.contains("tas_202305.nc"),
        "{printed}"
    );
    let d = summary(&done_json);
    assert_eq!(d["action"], "rebuild");
    assert!(
        d["replaced"][0]["url"]
            .as_str()
            .unwrap()
            .ends_with("tas_202305.nc"),
        "{d}"
    );
    assert!(
        d["added"][0].as_str().unwrap().ends_with("tas_202312.nc"),
        "{d}"
    );
    assert_eq!(d["build"]["scanned"], 2, "{d}");
    let fresh = a.fresh("fresh-rebuild.json", &[]);
    same_bytes(&out, &fresh);
    // The values read through the output are the re-processed ones.
    let cat = |refs: &Path| {
        ok(&a.vzarr(&[
            "cat",
            s(refs),
            "tas[120,0,0]",
            "--json",
            "--allow-prefix",
            s(&a.dir()),
        ]))
    };
    let synced: f32 = serde_json::from_str(cat(&out).trim()).unwrap();
    let original = fixtures().join("archive");
    let v: ndarray::Array3<f32> = hdf5::File::open(a.month(5))
        .unwrap()
        .dataset("tas")
        .unwrap()
        .read()
        .unwrap();
    // Day 1 of May is index 120 along time (31+28+31+30 days before it).
    assert_eq!(synced, v[[0, 0, 0]]);
    let was: ndarray::Array3<f32> = hdf5::File::open(original.join("tas_202305.nc"))
        .unwrap()
        .dataset("tas")
        .unwrap()
        .read()
        .unwrap();
    assert_eq!(synced, was[[0, 0, 0]] + 1.0);

    // A removed month is refused, naming it, and nothing is written.
    std::fs::remove_file(a.month(12)).unwrap();
    let before = state(&out);
    let o = a.sync(&out, &["--summary-json", s(&done_json)]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("no longer there") && err.contains("tas_202312.nc"),
        "{err}"
    );
    assert!(err.contains("--allow-removal"), "{err}");
    assert!(state(&out) == before, "a refused sync wrote");
    let d = summary(&done_json);
    assert_eq!(d["action"], "refuse");
    assert!(
        d["refused"][0].as_str().unwrap().ends_with("tas_202312.nc"),
        "{d}"
    );
    // Accepted with --allow-removal: equal to a fresh build without it.
    let printed = ok(&a.sync(&out, &["--allow-removal"]));
    assert!(
        printed.contains("0 added, 0 replaced, 1 removed, 11 unchanged"),
        "{printed}"
    );
    same_bytes(&out, &a.fresh("fresh-removed.json", &[]));
}

#[test]
fn sync_reads_only_under_the_allowed_prefixes() {
    let a = Archive::new(1..=3);
    let out = a.fresh("out.json", &[]);
    a.add(4..=4);
    let before = state(&out);
    // No prefix allowed: refused before anything is listed, with the way out.
    let o = a.vzarr(&["sync", s(&out)]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("arch"), "{err}");
    assert!(
        err.contains("--allow-prefix") && err.contains("--trust-references"),
        "{err}"
    );
    // Another directory allowed: refused too.
    let other = a.path("config");
    let o = a.vzarr(&["sync", s(&out), "--allow-prefix", s(&other)]);
    assert!(!o.status.success(), "{}", text(&o.stdout));
    assert!(state(&out) == before, "a refused sync wrote");
    // Trusting the output allows what it records.
    let printed = ok(&a.vzarr(&["sync", s(&out), "--trust-references"]));
    assert!(printed.contains("1 added"), "{printed}");
    same_bytes(&out, &a.fresh("fresh.json", &[]));
}

#[test]
fn build_append_records_its_inputs_and_sync_lists_them() {
    // Built from named files: no inputs recorded, a sync checks the recorded sources only.
    let a = Archive::new(1..=3);
    let out = a.path("out.json");
    let (m1, m2) = (a.month(1), a.month(2));
    ok(&a.vzarr(&[
        "build",
        s(&m1),
        s(&m2),
        "--concat-dim",
        "time",
        "-o",
        s(&out),
    ]));
    assert!(summary(&out)["vzarr"].get("inputs").is_none());
    let printed = ok(&a.sync(&out, &[]));
    assert!(
        printed.contains("0 added, 0 replaced, 0 removed, 2 unchanged"),
        "{printed}"
    );
    assert!(printed.contains("records no directory"), "{printed}");
    // Appending the directory records it, with the files named before.
    ok(&a.vzarr(&["build", "--append", s(&a.dir()), "-o", s(&out)]));
    let inputs = summary(&out)["vzarr"]["inputs"]["locations"].clone();
    let want = [
        format!("file://{}", m1.display()),
        format!("file://{}", m2.display()),
        format!("file://{}/", a.dir().display()),
    ];
    assert_eq!(inputs, serde_json::json!(want));
    a.add(4..=5);
    let printed = ok(&a.sync(&out, &[]));
    assert!(
        printed.contains("2 added, 0 replaced, 0 removed, 3 unchanged"),
        "{printed}"
    );
    // Listed again, the output equals a fresh build of the directory but for the inputs it
    // records.
    let fresh = a.fresh("fresh.json", &[]);
    let mut got = summary(&out);
    let mut want = summary(&fresh);
    got["vzarr"].as_object_mut().unwrap().remove("inputs");
    want["vzarr"].as_object_mut().unwrap().remove("inputs");
    assert!(got == want, "the synced output differs from a fresh build");
}

#[test]
fn sync_of_an_icechunk_repository_commits_once_with_the_fresh_build_values() {
    let a = Archive::new(1..=4);
    let repo = a.path("repo");
    ok(&a.vzarr(&[
        "build",
        s(&a.dir()),
        "--concat-dim",
        "time",
        "-o",
        s(&repo),
        "--format",
        "icechunk",
    ]));
    a.add(5..=6);
    reprocess(&a.month(2));
    let printed = ok(&a.sync(&repo, &[]));
    assert!(
        printed.contains("2 added, 1 replaced, 0 removed, 3 unchanged"),
        "{printed}"
    );
    // Month 2 replaced in place between months 1 and 3, months 5 and 6 appended after 4.
    assert!(
        printed.contains("1 changed file(s) replaced in place: 6 file(s) planned"),
        "{printed}"
    );
    let history = ok(&a.vzarr(&["inspect", s(&repo), "--json"]));
    let h: serde_json::Value = serde_json::from_str(&history).unwrap();
    // The build's commit, the sync's, and the repository's first.
    assert_eq!(h["history"].as_array().unwrap().len(), 3, "{h}");
    let fresh = a.fresh("fresh.json", &[]);
    for var in ["tas", "pr", "time", "time_bnds"] {
        let cat = |refs: &Path| {
            ok(&a.vzarr(&["cat", s(refs), var, "--json", "--allow-prefix", s(&a.dir())]))
        };
        assert_eq!(cat(&repo), cat(&fresh), "{var}");
    }
    // Nothing more to do: no commit.
    ok(&a.sync(&repo, &[]));
    let again = ok(&a.vzarr(&["inspect", s(&repo), "--json"]));
    assert_eq!(history, again);
}

/// Bytes of every file under `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                tree_bytes(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

#[test]
fn expiring_a_repository_keeps_what_appends_and_sync_need() {
    let a = Archive::new(1..=2);
    let repo = a.path("repo");
    let build = |months: &[u32], append: bool| {
        let mut args = vec!["build", "-o", s(&repo), "--format", "icechunk"];
        args.push(if append { "--append" } else { "--concat-dim" });
        if !append {
            args.push("time");
        }
        let files: Vec<PathBuf> = months.iter().map(|m| a.month(*m)).collect();
        args.extend(files.iter().map(|p| s(p)));
        ok(&a.vzarr(&args))
    };
    build(&[1, 2], false);
    for m in 3..=5 {
        a.add(m..=m);
        assert!(build(&[m], true).contains("appended at the tail"));
    }
    let before = tree_bytes(&repo);
    // The tip records its provenance as a change: a checkpoint first, then every snapshot
    // but the tip expired and collected.
    let printed = ok(&a.vzarr(&["expire", s(&repo), "--older-than", "0s", "--json"]));
    let done: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(done["checkpoints"], serde_json::json!(["main"]), "{done}");
    assert!(done["snapshots_expired"].as_u64().unwrap() >= 4, "{done}");
    assert!(done["collected"]["bytes"].as_u64().unwrap() > 0, "{done}");
    assert!(tree_bytes(&repo) < before);
    let history = ok(&a.vzarr(&["inspect", s(&repo), "--json"]));
    let h: serde_json::Value = serde_json::from_str(&history).unwrap();
    let messages: Vec<&str> = h["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages.len(),
        2,
        "the checkpoint and the first commit: {messages:?}"
    );
    assert!(messages[0].contains("checkpoint"), "{messages:?}");
    // The values, the provenance and appends are as before.
    let cat = |refs: &Path| {
        ok(&a.vzarr(&[
            "cat",
            s(refs),
            "tas",
            "--json",
            "--allow-prefix",
            s(&a.dir()),
        ]))
    };
    assert_eq!(cat(&repo), cat(&a.fresh("fresh5.json", &[])));
    a.add(6..=6);
    assert!(build(&[6], true).contains("appended at the tail"));
    assert_eq!(cat(&repo), cat(&a.fresh("fresh6.json", &[])));
    let printed = ok(&a.sync(&repo, &["--dry-run"]));
    assert!(
        printed.contains("0 added, 0 replaced, 0 removed"),
        "{printed}"
    );
    // Nothing older than 30 days: nothing expired, and no checkpoint (the tip's change
    // applies to the checkpoint, which stays).
    let printed = ok(&a.vzarr(&["expire", s(&repo), "--older-than", "30d"]));
    assert!(
        printed.contains("0 snapshot(s)") && !printed.contains("checkpoint"),
        "{printed}"
    );
    // A cutoff that is not a time is refused by name.
    let o = a.vzarr(&["expire", s(&repo), "--older-than", "yesterday"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--older-than"),
        "{}",
        text(&o.stderr)
    );
}
