//! An S3-compatible server for tests: `moto` from PyPI, started on loopback with
//! `$VZARR_INTEROP_PYTHON -m moto.server` (scripts/test and the bootstrap environment set the
//! variable; the pinned `moto[server]` is in tests/interop/requirements.txt), and uploads with
//! boto3 (which comes with moto).
//!
//! Used by the S3 tests of vzarr-source, vzarr-read and the CLI. A test binary
//! using it should have one test function only: [`set_s3_env`] sets process-wide environment
//! variables that the S3 clients read when they are built.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The interpreter with moto, or `None` (with a note on stderr) when the variable is not set:
/// the caller then skips its test.
pub fn interop_python(test: &str) -> Option<PathBuf> {
    let p = std::env::var_os("VZARR_INTEROP_PYTHON").map(PathBuf::from);
    if p.is_none() {
        eprintln!("VZARR_INTEROP_PYTHON is not set: skipping {test} (scripts/test sets it)");
    }
    p
}

/// A running `moto.server`, killed on drop.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `moto.server` on a free loopback port and waits until it accepts connections.
pub fn start_moto(python: &Path) -> Moto {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto.server");
    let moto = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "moto.server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    moto
}

/// Points the S3 clients (`AmazonS3Builder::from_env()`) at `endpoint` with test credentials.
///
/// # Safety
/// Sets environment variables: no other thread may read or write the environment meanwhile
/// (call it first in the only test function of the binary).
pub unsafe fn set_s3_env(endpoint: &str) {
    // SAFETY: the caller guarantees that no other thread touches the environment meanwhile.
    unsafe {
        std::env::set_var("AWS_ENDPOINT_URL", endpoint);
        std::env::set_var("AWS_ALLOW_HTTP", "true");
        std::env::set_var("AWS_ACCESS_KEY_ID", "test");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::remove_var("AWS_SESSION_TOKEN");
        std::env::remove_var("AWS_PROFILE");
    }
}

/// Creates `buckets` (where missing) and uploads files: `(local path, bucket, key)`.
pub fn s3_put(
    python: &Path,
    endpoint: &str,
    buckets: &[&str],
    uploads: &[(PathBuf, String, String)],
) {
    let script = r#"
import sys, boto3
endpoint, args = sys.argv[1], sys.argv[2:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
have = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
while args:
    if args[0] == "bucket":
        if args[1] not in have:
            s3.create_bucket(Bucket=args[1])
        args = args[2:]
    else:
        s3.upload_file(args[1], args[2], args[3])
        args = args[4:]
"#;
    let mut cmd = Command::new(python);
    cmd.args(["-c", script, endpoint]);
    for b in buckets {
        cmd.args(["bucket", b]);
    }
    for (path, bucket, key) in uploads {
        cmd.arg("put").arg(path).args([bucket, key]);
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "boto3 upload failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
