//! Messages a new user meets: an output that cannot be written is found before the build,
//! object-storage mistakes say what to set, and hints name options of the command that ran.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An HTTP endpoint on loopback that answers every request with 404 Not Found (an S3
/// endpoint without the object; a metadata service without credentials): `http://127.0.0.1:PORT`.
fn not_found_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Runs `vzarr` with the AWS environment `env` only (every other AWS_* variable removed).
fn vzarr_aws(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vzarr"));
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args).envs(env.iter().copied()).output().unwrap()
}

#[test]
fn an_output_that_cannot_be_written_is_found_before_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    // A source that would fail to scan: the output's error comes first, nothing is scanned.
    let bad = fixtures().join("bad_text.nc");
    let good = fixtures().join("archive/tas_202301.nc");
    let out = missing.join("out.json");
    let expect_missing = |o: &Output, what: &Path| {
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "vzarr: error: cannot write {}: the directory {} does not exist",
                what.display(),
                missing.display()
            )) && err.contains(&format!(
                "vzarr: hint: create it first (mkdir -p {})",
                missing.display()
            )),
            "{err}"
        );
        assert!(!err.contains("not an HDF5"), "{err}");
    };
    expect_missing(&vzarr(&["build", s(&bad), "-o", s(&out)]), &out);
    expect_missing(&vzarr(&["scan", s(&bad), "-o", s(&out)]), &out);
    let report = missing.join("failed.txt");
    let ok_out = dir.path().join("out.json");
    expect_missing(
        &vzarr(&["build", s(&bad), "-o", s(&ok_out), "--report", s(&report)]),
        &report,
    );
    expect_missing(
        &vzarr(&[
            "build",
            s(&bad),
            "-o",
            s(&ok_out),
            "--summary-json",
            s(&report),
        ]),
        &report,
    );
    expect_missing(&vzarr(&["combine", s(&bad), "-o", s(&out)]), &out);
    expect_missing(&vzarr(&["upgrade", s(&bad), "-o", s(&out)]), &out);
    assert!(!missing.exists() && !ok_out.exists());
    // A directory where the file is to go; a file where a directory is.
    let o = vzarr(&["build", s(&good), "-o", s(dir.path())]);
    assert!(
        text(&o.stderr).contains(&format!(
            "cannot write {}: it is a directory",
            dir.path().display()
        )),
        "{}",
        text(&o.stderr)
    );
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let repo = file.join("repo");
    let o = vzarr(&["build", s(&good), "-o", s(&repo), "--format", "icechunk"]);
    assert!(
        text(&o.stderr).contains(&format!(
            "cannot write {}: {} is not a directory",
            repo.display(),
            file.display()
        )),
        "{}",
        text(&o.stderr)
    );
    // An Icechunk repository's missing directories are made.
    let repo = dir.path().join("a/b/repo");
    let o = vzarr(&["build", s(&good), "-o", s(&repo), "--format", "icechunk"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn object_storage_mistakes_say_what_to_set() {
    let endpoint = not_found_endpoint();
    let out = tempfile::tempdir().unwrap();
    let out = out.path().join("out.json");
    let creds = [
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    // An http:// endpoint without AWS_ALLOW_HTTP: nothing is sent.
    let mut env = vec![("AWS_ENDPOINT_URL", endpoint.as_str())];
    env.extend(creds);
    let o = vzarr_aws(&["build", "s3://bucket/archive/m.nc", "-o", s(&out)], &env);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "s3://bucket/archive/m.nc: the endpoint {endpoint} is plain HTTP, which is refused \
             unless AWS_ALLOW_HTTP=true is set"
        )),
        "{err}"
    );
    // No credentials: the metadata service (here the endpoint, answering 404) has none.
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_METADATA_ENDPOINT", endpoint.as_str()),
    ];
    let o = vzarr_aws(&["build", "s3://bucket/archive/m.nc", "-o", s(&out)], &env);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("s3://bucket/archive/m.nc: no S3 credentials found")
            && err.contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{err}"
    );
    // A prefix without its trailing /: not an object; the hint says how to take the prefix.
    let mut env = vec![
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    env.extend(creds);
    let o = vzarr_aws(
        &[
            "build",
            "s3://bucket/archive",
            "--concat-dim",
            "time",
            "-o",
            s(&out),
        ],
        &env,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("vzarr: error: s3://bucket/archive: not found")
            && err.contains(
                "vzarr: hint: to take every file under the prefix s3://bucket/archive, end it \
                 with /: s3://bucket/archive/"
            ),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn upgrade_is_told_of_its_own_options() {
    // kerchunk's references (no provenance) to January and March: rebuilt from the sources,
    // the gap between them is an error whose hint names an option of `upgrade`, which then
    // accepts it.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let months: Vec<_> = ["tas_202301.nc", "tas_202303.nc"]
        .iter()
        .map(|m| {
            let p = data.join(m);
            std::fs::copy(fixtures().join("archive").join(m), &p).unwrap();
            p
        })
        .collect();
    let refs = dir.path().join("refs.json");
    let o = vzarr(&[
        "build",
        s(&months[0]),
        s(&months[1]),
        "--concat-dim",
        "time",
        "--allow-gaps",
        "-o",
        s(&refs),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&refs).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("vzarr");
    std::fs::write(&refs, v.to_string()).unwrap();
    let out = dir.path().join("up.json");
    let mut args = vec![
        "upgrade",
        s(&refs),
        "--rescan",
        "--concat-dim",
        "time",
        "--allow-prefix",
        s(&data),
        "-o",
        s(&out),
    ];
    let o = vzarr(&args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gap between")
            && err.contains("vzarr: hint: pass --allow-gaps to accept gaps"),
        "{err}"
    );
    args.push("--allow-gaps");
    let o = vzarr(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("combined 2 files"));
    // The combining options apply to --rescan only.
    let o = vzarr(&["upgrade", s(&refs), "--allow-gaps", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--rescan"), "{}", text(&o.stderr));
}

#[test]
fn a_reader_closing_stdout_stops_the_command_quietly() {
    // `vzarr inspect FILE | head -0`: the pipe's reader gone before anything is printed.
    let file = fixtures().join("archive/tas_202301.nc");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(["inspect", s(&file)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("internal error"), "{err}");
}
