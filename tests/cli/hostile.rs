//! Reference files that crashed the readers (issue 52's mutation campaign, and one-bit flips
//! of Icechunk `repo` files found since), replayed through `vzarr cat`, `verify` and `upgrade`
//! under a 1 GiB address-space limit: each is a clean error (exit status 1, `vzarr: error:`
//! naming the file and the reason), never a panic, an abort or an allocation failure.
//!
//! The Icechunk cases are committed (`tests/cli/data/hostile/*/repo`: a repository's `repo`
//! file with one change, which is all a reader decodes before it fails); the others are
//! written here. The larger campaign is `scripts/robustness references`.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary with `args` under a 1 GiB address-space limit (as the issue's bound);
/// a run past `HANG` is killed and fails the test (a hang detector, not a speed check).
fn vzarr_limited(args: &[&str]) -> Output {
    const HANG: Duration = Duration::from_secs(120);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_vzarr"))
        .args(args)
        // Rust's own report of panics the libraries catch, kept out (see src/panics.rs);
        // glibc's per-thread malloc arenas (64 MiB of address space each) would make the
        // limit fail thread starts that allocate nothing.
        .env_remove("RUST_BACKTRACE")
        .env("MALLOC_ARENA_MAX", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vzarr");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > HANG {
            child.kill().ok();
            panic!("vzarr {args:?} still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Runs `cat` (of `selection`), `verify` and (for kerchunk references, which it reads)
/// `upgrade` on `refs` and checks each: exit status 1, one error line naming `names` and
/// saying `why`, no panic, abort or failed allocation.
fn refused_cleanly(refs: &Path, selection: &str, names: &str, why: &str, allow: &Path) {
    let r = refs.to_str().unwrap();
    let out = refs.with_extension("upgraded.json");
    let allow = allow.to_str().unwrap();
    let mut runs = vec![
        vec!["cat", r, selection, "--allow-prefix", allow],
        vec!["verify", r, "--allow-prefix", allow],
    ];
    if !refs.join("repo").exists() {
        runs.push(vec![
            "upgrade",
            r,
            "-o",
            out.to_str().unwrap(),
            "--allow-prefix",
            allow,
        ]);
    }
    for args in runs {
        let o = vzarr_limited(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("vzarr: error: ") && err.contains(names) && err.contains(why),
            "{args:?}: {err}"
        );
        for crash in [
            "panicked at",
            "internal error",
            "memory allocation",
            "overflowed its stack",
        ] {
            assert!(!err.contains(crash), "{args:?}: {err}");
        }
    }
}

/// kerchunk references (Zarr v2) of one int16 array `x` of `n` one-element chunks, with the
/// `gen` entry whose offset template is `offset` over `i` in `0..n`, reading `dir/d.bin`.
fn gen_refs(dir: &Path, name: &str, n: u64, offset: &str) -> PathBuf {
    std::fs::write(dir.join("d.bin"), [0u8; 64]).unwrap();
    let zarray = serde_json::json!({"zarr_format": 2, "shape": [n], "chunks": [1],
        "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0, "order": "C"});
    let refs = serde_json::json!({
        "version": 1,
        "templates": {"u": dir.join("d.bin").to_str().unwrap()},
        "refs": {
            ".zgroup": "{\"zarr_format\":2}",
            "x/.zarray": zarray.to_string(),
            "x/.zattrs": "{\"_ARRAY_DIMENSIONS\":[\"x\"]}",
        },
        "gen": [{"key": "x/{{i}}", "url": "{{u}}", "offset": offset, "length": "2",
            "dimensions": {"i": {"stop": n}}}],
    });
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&refs).unwrap()).unwrap();
    p
}

const MIN: &str = "(-170141183460469231731687303715884105727 - 1)";

#[test]
fn gen_template_overflows_are_errors_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    // `(-2^127) // -1` panicked (exit 101); unary minus of -2^127 wrapped silently.
    for (name, expr) in [
        ("div.json", format!("{{{{ {MIN} // -1 }}}}")),
        ("neg.json", format!("{{{{ -{MIN} }}}}")),
        ("mul.json", format!("{{{{ {MIN} * (i - 1) }}}}")),
    ] {
        let refs = gen_refs(dir.path(), name, 4, &expr);
        refused_cleanly(
            &refs,
            "x[0]",
            &format!("{name}: malformed references: \"gen\" entry 0"),
            "integer overflow",
            dir.path(),
        );
    }
    // `(-2^127) % -1` panicked too: it is 0, as in Python.
    let refs = gen_refs(dir.path(), "mod.json", 4, &format!("{{{{ {MIN} % -1 }}}}"));
    let o = vzarr_limited(&[
        "cat",
        refs.to_str().unwrap(),
        "x[0:2]",
        "--allow-prefix",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "0 0");
}

#[test]
fn gen_entries_are_counted_before_they_are_expanded() {
    // 300 bytes naming 2^27 references (the reader's max_references) took `cat` past 20 s.
    let dir = tempfile::tempdir().unwrap();
    let refs = gen_refs(dir.path(), "big.json", 1 << 27, "{{ i * 2 }}");
    assert!(std::fs::metadata(&refs).unwrap().len() < 600);
    refused_cleanly(
        &refs,
        "x[0]",
        "big.json: malformed references: \"gen\" entry 0: expands to 134217728 references",
        "limit max_generated, default 1048576",
        dir.path(),
    );
}

#[test]
fn a_few_references_in_a_huge_grid_upgrade_in_bounded_memory() {
    // Found by the reference campaign: 16 references naming an int16 array of 2^31 - 1
    // elements in chunks of 4 (a 900-byte file); `upgrade`'s small-chunk merge walked every
    // chunk of the grid and asked for 512 MiB (an abort under 1 GiB).
    let dir = tempfile::tempdir().unwrap();
    let refs = gen_refs(dir.path(), "sparse.json", 16, "{{ i * 2 }}");
    let text = std::fs::read_to_string(&refs)
        .unwrap()
        .replace(r#"\"shape\":[16]"#, r#"\"shape\":[2147483647]"#);
    assert!(text.contains("2147483647"));
    std::fs::write(&refs, text).unwrap();
    let out = dir.path().join("upgraded.json");
    let o = vzarr_limited(&[
        "upgrade",
        refs.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--allow-prefix",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", crate::common::text(&o.stderr));
    let o = vzarr_limited(&[
        "cat",
        out.to_str().unwrap(),
        "x[0:2]",
        "--allow-prefix",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", crate::common::text(&o.stderr));
}

#[test]
fn parquet_record_files_are_bounded_from_zmetadata() {
    // A 261-byte `.zmetadata`: one-row record files for 2^31 chunks aborted the process
    // asking for 48 GiB ("memory allocation of 51539607552 bytes failed"); 2^25 took 1.7 GB
    // and more than 20 s.
    let dir = tempfile::tempdir().unwrap();
    for k in [31, 25] {
        let refs = dir.path().join(format!("refs{k}"));
        std::fs::create_dir(&refs).unwrap();
        let zmeta = serde_json::json!({"record_size": 1, "metadata": {
            ".zgroup": {"zarr_format": 2},
            "x/.zarray": {"zarr_format": 2, "shape": [1u64 << k], "chunks": [1], "dtype": "<i2",
                "compressor": null, "filters": null, "fill_value": 0, "order": "C"},
            "x/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        }});
        std::fs::write(refs.join(".zmetadata"), zmeta.to_string()).unwrap();
        refused_cleanly(
            &refs,
            "x[0]",
            &format!("refs{k}: key \".zmetadata\": array \"x\" has {}", 1u64 << k),
            "limit max_record_files, default 65536",
            dir.path(),
        );
    }
}

/// A copy of the committed hostile repository `name` (its `repo` file) in `dir`.
fn hostile_repo(name: &str, dir: &Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir(&to).unwrap();
    std::fs::copy(
        root()
            .join("tests/cli/data/hostile")
            .join(name)
            .join("repo"),
        to.join("repo"),
    )
    .unwrap();
    to
}

#[test]
fn corrupt_icechunk_repo_files_are_refused_before_icechunk_decodes_them() {
    let dir = tempfile::tempdir().unwrap();
    for (name, why) in [
        // One bit flipped in the configuration's flexbuffer: an offset of 0, a map that
        // contains itself; Icechunk's decoder recursed until the stack overflowed.
        (
            "icechunk-config-cycle",
            "configuration: Serde Error: nested more than 64 deep",
        ),
        // One bit flipped in a vector length of the commit metadata: serde allocated until
        // the process died ("memory allocation of 603979776 bytes failed" under 1 GiB).
        (
            "icechunk-metadata-length",
            "commit 0, metadata \"vzarr\": Serde Error: more values than its size allows",
        ),
        // The zstd frame declares 4.8 GB: Icechunk would allocate what it declares (up to
        // 16 GiB).
        (
            "icechunk-declared-size",
            "declares 4800000000 decoded bytes, more than the 2164736 its 1090 bytes may decode to",
        ),
    ] {
        let repo = hostile_repo(name, dir.path());
        refused_cleanly(
            &repo,
            "tas[0,0,0]",
            &format!("{name}: repo: corrupt repository file: "),
            why,
            dir.path(),
        );
    }
}
