//! The libhdf5 scanner in a supervised child process, one per file, so that libhdf5 crashing,
//! aborting or looping on a corrupt file costs that file's scan, never the batch.
//!
//! The parent runs `PROGRAM ARGS... PATH [SPLIT]` (the `vzarr` binary's hidden
//! `__scan-worker` command, which calls [`serve`]); the child writes one JSON object on its
//! standard output, `{"record": R}` with the scan record (`vzarr_core::record`) or
//! `{"error": "..."}` with the scanner's error, and exits 0. A child that is killed by a
//! signal, exits otherwise, says more than [`MAX_RECORD_BYTES`] or runs past the time limit
//! is killed and its file fails.
//! The native scanner needs none of this: it is memory safe and bounded by construction.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vzarr_core::VirtualDataset;

use crate::ScanError;

/// Largest scan record accepted from a worker (about 10 million chunk references).
pub const MAX_RECORD_BYTES: u64 = 1 << 30;

/// Largest error message kept from a worker's standard error.
const MAX_ERROR_BYTES: u64 = 16 << 10;

/// How to start the worker that runs the libhdf5 scanner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Libhdf5Worker {
    /// The program (e.g. `std::env::current_exe()`).
    pub program: PathBuf,
    /// Its arguments before the file's path (e.g. `["__scan-worker"]`).
    pub args: Vec<String>,
    /// Time one file's scan may take before the worker is killed; `None`: no limit.
    pub timeout: Option<Duration>,
}

fn failed(url: &str, reason: impl Into<String>) -> ScanError {
    ScanError::Worker {
        url: url.to_string(),
        reason: reason.into(),
    }
}

/// Reads at most `limit` bytes of `r` on a thread; the bytes and whether there were more.
fn read_bounded(
    r: impl Read + Send + 'static,
    limit: u64,
) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut r = r.take(limit + 1);
        let _ = r.read_to_end(&mut buf);
        let over = buf.len() as u64 > limit;
        buf.truncate(limit as usize);
        (buf, over)
    })
}

/// Scans the local HDF5 file `path` (of source `url`) with the libhdf5 scanner in a worker.
pub(crate) fn scan_in_worker(
    worker: &Libhdf5Worker,
    url: &str,
    path: &Path,
    split_contiguous_bytes: Option<u64>,
) -> Result<VirtualDataset, ScanError> {
    let mut cmd = Command::new(&worker.program);
    cmd.args(&worker.args).arg(path);
    if let Some(n) = split_contiguous_bytes {
        cmd.arg(n.to_string());
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            failed(
                url,
                format!(
                    "cannot start the libhdf5 scanner process {}: {e}",
                    worker.program.display()
                ),
            )
        })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(failed(url, "the libhdf5 scanner process has no output"));
    };
    let out = read_bounded(stdout, MAX_RECORD_BYTES);
    let err = read_bounded(stderr, MAX_ERROR_BYTES);
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(url, format!("waiting for the libhdf5 scanner: {e}")));
            }
        }
        if worker.timeout.is_some_and(|t| started.elapsed() > t) {
            let _ = child.kill();
            let _ = child.wait();
            let secs = worker.timeout.map_or(0.0, |t| t.as_secs_f64());
            return Err(failed(
                url,
                format!("the libhdf5 scanner ran past the limit of {secs} s and was stopped"),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (out, over) = out.join().unwrap_or_default();
    let (err, _) = err.join().unwrap_or_default();
    let err = String::from_utf8_lossy(&err).trim().to_string();
    if !status.success() {
        #[cfg(unix)]
        if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
            return Err(failed(
                url,
                format!("the libhdf5 scanner crashed (signal {signal})"),
            ));
        }
        return Err(failed(
            url,
            if err.is_empty() {
                format!("the libhdf5 scanner failed ({status})")
            } else {
                err
            },
        ));
    }
    if over {
        return Err(failed(
            url,
            format!("the libhdf5 scanner's result is larger than {MAX_RECORD_BYTES} bytes"),
        ));
    }
    let unreadable = |e: &dyn std::fmt::Display| {
        failed(
            url,
            format!("unreadable result from the libhdf5 scanner: {e}"),
        )
    };
    let value: serde_json::Value = serde_json::from_slice(&out).map_err(|e| unreadable(&e))?;
    if let Some(message) = value.get("error").and_then(serde_json::Value::as_str) {
        return Err(ScanError::Libhdf5Failed {
            message: message.to_string(),
        });
    }
    let record = value
        .get("record")
        .ok_or_else(|| unreadable(&"no record"))?;
    vzarr_core::record::from_record(record).map_err(|e| unreadable(&e))
}

/// The worker's side: scans `path` with the libhdf5 scanner (contiguous datasets split above
/// `split_contiguous_bytes`) and writes the result (record or error) to standard output; an
/// error here is one of writing that output.
#[cfg(feature = "libhdf5")]
pub fn serve(path: &Path, split_contiguous_bytes: Option<u64>) -> Result<(), ScanError> {
    let o = vzarr_hdf5_oracle::ScanOptions {
        split_contiguous_bytes,
    };
    let doc = match vzarr_hdf5_oracle::scan_file(path, &o) {
        Ok(ds) => serde_json::json!({"record": vzarr_core::record::to_record(&ds)}),
        Err(e) => serde_json::json!({"error": e.to_string()}),
    };
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(stdout);
    let io = |source: std::io::Error| ScanError::Io {
        path: "standard output".into(),
        source,
    };
    serde_json::to_writer(&mut w, &doc).map_err(|e| io(e.into()))?;
    std::io::Write::flush(&mut w).map_err(io)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A worker that runs `script` with `sh -c` (the file's path is `$1`).
    fn sh(script: &str, timeout_ms: Option<u64>) -> Libhdf5Worker {
        Libhdf5Worker {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into(), "worker".into()],
            timeout: timeout_ms.map(Duration::from_millis),
        }
    }

    fn scan(w: &Libhdf5Worker) -> Result<VirtualDataset, ScanError> {
        scan_in_worker(w, "file:///data/x.h5", Path::new("/data/x.h5"), None)
    }

    #[test]
    fn a_record_comes_back_as_the_scan() {
        let mut ds = VirtualDataset::new();
        ds.groups
            .get_mut("")
            .unwrap()
            .attributes
            .insert("title".into(), serde_json::json!("t"));
        let doc = serde_json::json!({"record": vzarr_core::record::to_record(&ds)}).to_string();
        let script = format!("[ \"$1\" = /data/x.h5 ] && printf '%s' '{doc}'");
        assert_eq!(scan(&sh(&script, Some(10_000))).unwrap(), ds);
    }

    #[test]
    fn the_scanner_error_is_passed_on() {
        let e = scan(&sh(
            r#"printf '{"error": "/data/x.h5: cannot open as HDF5: bad"}'"#,
            None,
        ))
        .unwrap_err();
        assert!(matches!(e, ScanError::Libhdf5Failed { .. }), "{e}");
        assert_eq!(e.to_string(), "/data/x.h5: cannot open as HDF5: bad");
    }

    #[test]
    fn a_crash_fails_the_file_only() {
        let e = scan(&sh("kill -SEGV $$", None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "file:///data/x.h5: the libhdf5 scanner crashed (signal 11)"
        );
        let e = scan(&sh("echo 'HDF5-DIAG: assertion failed' >&2; exit 3", None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "file:///data/x.h5: HDF5-DIAG: assertion failed"
        );
    }

    #[test]
    fn a_hang_is_stopped_at_the_limit() {
        let e = scan(&sh("sleep 30", Some(200))).unwrap_err();
        assert!(
            e.to_string()
                .contains("ran past the limit of 0.2 s and was stopped"),
            "{e}"
        );
    }

    #[test]
    fn garbage_is_an_error() {
        for script in [
            "printf 'not json'",
            "printf '{}'",
            r#"printf '{"record": 5}'"#,
        ] {
            let e = scan(&sh(script, None)).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("file:///data/x.h5: unreadable result from the libhdf5 scanner"),
                "{script}: {e}"
            );
        }
    }
}
