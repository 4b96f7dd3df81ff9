//! Reading through references whose sources are on an S3-compatible server: `moto` from PyPI,
//! started on loopback by this test with `$VZARR_INTEROP_PYTHON -m moto.server` (scripts/test
//! sets the variable; the pinned `moto[server]` is in tests/interop/requirements.txt). Without
//! the variable the test says so and passes; with it, a missing moto is a failure.
//!
//! One test function only: it sets the AWS_* environment variables the S3 client reads.

#[path = "verify/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};
use vzarr_read::{ReadError, ReadOptions};
use vzarr_source::SourceError;
use vzarr_test_support::moto::{interop_python, s3_put, set_s3_env, start_moto};
use vzarr_verify::{VerifyError, VerifyOptions, verify};

const BUCKET: &str = "vzarr-test";
const OTHER: &str = "other-bucket";

/// The references of `local` refs with `file://{dir}/` rewritten to `s3://{BUCKET}/{prefix}/`
/// and, when `drop_mtime`, the recorded modification times removed (an upload has its own).
fn to_s3(refs: &Value, dir: &Path, prefix: &str, drop_mtime: bool) -> Value {
    let from = format!("file://{}/", vzarr_source::absolute(dir).unwrap().display());
    let to = format!("s3://{BUCKET}/{prefix}/");
    let text = serde_json::to_string(refs).unwrap().replace(&from, &to);
    let mut v: Value = serde_json::from_str(&text).unwrap();
    if drop_mtime {
        for s in v["vzarr"]["sources"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("mtime_ns");
        }
    }
    v
}

fn open_bytes(v: &Value, opts: ReadOptions) -> Result<vzarr_read::Reader, ReadError> {
    vzarr_read::open_bytes(&serde_json::to_vec(v).unwrap(), "s3-test.json", opts)
}

#[test]
fn reads_and_verifies_through_an_s3_server() {
    let Some(python) = interop_python("the S3 test") else {
        return;
    };
    let moto = start_moto(&python);
    // SAFETY: the only test of this binary; nothing else reads the environment concurrently.
    unsafe { set_s3_env(&moto.endpoint) };
    let names = [
        "nc4_climate.nc",
        "nc3_classic.nc",
        "nc3_64bit_data.nc",
        "filters.h5",
        "dtypes.h5",
    ];
    let archive = fixtures().join("archive");
    let mut months: Vec<PathBuf> = std::fs::read_dir(&archive)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    months.sort();
    let mut uploads: Vec<(PathBuf, String, String)> = names
        .iter()
        .map(|n| {
            (
                fixtures().join(n),
                BUCKET.to_string(),
                format!("fixtures/{n}"),
            )
        })
        .collect();
    uploads.push((
        fixtures().join("nc3_classic.nc"),
        OTHER.into(),
        "fixtures/nc3_classic.nc".into(),
    ));
    for m in &months {
        let n = m.file_name().unwrap().to_str().unwrap();
        uploads.push((m.clone(), BUCKET.into(), format!("archive/{n}")));
    }
    s3_put(&python, &moto.endpoint, &[BUCKET, OTHER], &uploads);

    let dir = tempfile::tempdir().unwrap();
    for name in names {
        let out = dir.path().join(format!("{name}.json"));
        build(&fixtures().join(name), &out, None);
        let local = read_json(&out);
        // The upload's modification time is not the file's: stale until told otherwise.
        let stale = to_s3(&local, &fixtures(), "fixtures", false);
        let reader = open_bytes(&stale, trusting()).unwrap();
        let e = verify(&reader, &VerifyOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("s3://{BUCKET}/fixtures/{name}")), "{e}");
        assert!(e.contains("modification time changed"), "{e}");
        // Size only: verified value by value against the object read directly.
        let remote = to_s3(&local, &fixtures(), "fixtures", true);
        let reader = open_bytes(&remote, trusting()).unwrap();
        let r = verify(&reader, &VerifyOptions::default()).unwrap();
        assert!(r.ok(), "{name}: {}\n{:#?}", r.summary(), r.mismatches);
        assert!(
            r.bytes_read > 0 && r.source_bytes_read > 0,
            "{name}: {}",
            r.summary()
        );
        assert_eq!(r.chunks_checked, r.chunks_total);
        // Values through S3 equal values through local files.
        let local_reader = open(&out);
        for (path, a) in &reader.dataset().arrays {
            if a.shape().contains(&0) {
                continue;
            }
            let x = reader.array(path).unwrap().read_all_raw().unwrap();
            let y = local_reader.array(path).unwrap().read_all_raw().unwrap();
            assert_eq!(x, y, "{name}: {path}");
        }
    }

    // Another bucket is refused before any request, even though the object exists there.
    let out = dir.path().join("nc3_classic.nc.json");
    let mut v = to_s3(&read_json(&out), &fixtures(), "fixtures", true);
    let r = v["refs"]["tas/c/0/0/0"].clone();
    v["refs"]["tas/c/0/0/0"] = json!([format!("s3://{OTHER}/fixtures/nc3_classic.nc"), r[1], r[2]]);
    match open_bytes(&v, trusting()) {
        Err(e) if matches!(e.source_error(), Some(SourceError::NotAllowed(_))) => {
            let e = e.to_string();
            assert!(
                e.contains(&format!("s3://{OTHER}/fixtures/nc3_classic.nc")),
                "{e}"
            );
            assert!(e.contains(&format!("s3://{BUCKET}/fixtures")), "{e}");
        }
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("another bucket was not refused"),
    }

    // The combined monthly archive, concatenation slabs read from their own objects.
    let arch = dir.path().join("archive.json");
    let scanned = months.iter().map(|p| scan(p)).collect();
    let ds = plan(scanned, vzarr_plan::Concat::Existing("time".into()), None);
    vzarr_kerchunk::write_file(&ds, &arch).unwrap();
    let remote = to_s3(&read_json(&arch), &archive, "archive", true);
    // The references themselves on S3 too.
    let refs_file = dir.path().join("remote_archive.json");
    write_json(&refs_file, &remote);
    s3_put(
        &python,
        &moto.endpoint,
        &[],
        &[(refs_file, BUCKET.into(), "refs/archive.json".into())],
    );
    let reader = vzarr_read::open(&format!("s3://{BUCKET}/refs/archive.json"), trusting()).unwrap();
    let r = verify(&reader, &VerifyOptions::default()).unwrap();
    assert!(r.ok(), "{}\n{:#?}", r.summary(), r.mismatches);
    let before = reader.stats();
    let tas = reader.array("tas").unwrap();
    let n_chunks = tas.meta().manifest.stats().referenced;
    let x = tas.read_all::<f32>().unwrap();
    let y = open(&arch).array("tas").unwrap().read_all::<f32>().unwrap();
    assert_eq!(x, y);
    let requests = reader.stats().requests - before.requests;
    assert!(
        requests <= n_chunks,
        "{requests} requests for {n_chunks} chunks"
    );

    // A source whose size changed on the server is stale.
    let grown = dir.path().join("grown.nc");
    let mut bytes = std::fs::read(fixtures().join("nc3_classic.nc")).unwrap();
    bytes.extend_from_slice(&[0; 8]);
    std::fs::write(&grown, &bytes).unwrap();
    s3_put(
        &python,
        &moto.endpoint,
        &[],
        &[(grown, BUCKET.into(), "fixtures/nc3_classic.nc".into())],
    );
    let reader = open_bytes(&v_without_tamper(&out), trusting()).unwrap();
    let e = verify(&reader, &VerifyOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            VerifyError::Sources {
                first: SourceError::Stale { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains(&format!(
            "size changed from {} to {} bytes",
            bytes.len() - 8,
            bytes.len()
        )),
        "{e}"
    );
    assert_eq!(
        reader.stats().bytes,
        0,
        "nothing fetched from a stale source"
    );
}

fn v_without_tamper(out: &Path) -> Value {
    to_s3(&read_json(out), &fixtures(), "fixtures", true)
}
