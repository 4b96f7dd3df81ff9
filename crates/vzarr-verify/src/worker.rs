//! Reading sources through C libraries (libhdf5, netCDF-C) in a supervised worker process, so
//! that a library that crashes, aborts or hangs on a corrupt file costs one failed comparison,
//! never the verification.
//!
//! The parent writes one request per line (JSON: `{"kind": "hdf5"|"netcdf", "path", "var",
//! "start", "count"}`) to the worker's standard input; the worker answers with one JSON line
//! (`{"ok": true, "dtype": ..., "len": n}` followed by `n` bytes of values, or
//! `{"ok": false, "error": ...}`). A worker that exits, is killed by a signal or does not
//! answer within the time limit is killed and replaced for the next request.
//!
//! The worker is the program the caller names (the `vzarr` binary runs
//! [`serve`] for its hidden `__verify-worker` command); the parent has already checked the
//! path against the allowed prefixes and the recorded source state.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;

use serde::{Deserialize, Serialize};
use vzarr_core::DataType;

use crate::WorkerCommand;
use crate::c_readers::{hdf5_read, nc_read, open_hdf5, open_netcdf};
use crate::source_values::SourceValues;

/// Which library reads the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// HDF5 and NetCDF4 through libhdf5.
    Hdf5,
    /// NetCDF3 through netCDF-C.
    Netcdf,
}

#[derive(Serialize, Deserialize)]
struct Request {
    kind: Kind,
    path: PathBuf,
    var: String,
    start: Vec<u64>,
    count: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
struct Answer {
    ok: bool,
    #[serde(default)]
    dtype: Option<serde_json::Value>,
    #[serde(default)]
    len: u64,
    #[serde(default)]
    error: Option<String>,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<std::io::Result<(Answer, Vec<u8>)>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A supervised worker, started on first use and restarted after a failure.
pub(crate) struct Worker {
    command: WorkerCommand,
    running: Option<Running>,
}

/// Largest answer accepted from a worker (values of one chunk region).
const MAX_ANSWER: u64 = 1 << 33;

fn read_answers(stdout: ChildStdout, tx: mpsc::Sender<std::io::Result<(Answer, Vec<u8>)>>) {
    let mut r = BufReader::new(stdout);
    loop {
        let mut line = String::new();
        let got = match r.read_line(&mut line) {
            Ok(0) => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the worker exited",
            )),
            Ok(_) => serde_json::from_str::<Answer>(&line)
                .map_err(std::io::Error::other)
                .and_then(|a| {
                    if a.len > MAX_ANSWER {
                        return Err(std::io::Error::other("answer too large"));
                    }
                    let mut bytes = vec![0u8; a.len as usize];
                    r.read_exact(&mut bytes)?;
                    Ok((a, bytes))
                }),
            Err(e) => Err(e),
        };
        let stop = got.is_err();
        if tx.send(got).is_err() || stop {
            return;
        }
    }
}

impl Worker {
    pub(crate) fn new(command: WorkerCommand) -> Self {
        Worker {
            command,
            running: None,
        }
    }

    fn start(&self) -> Result<Running, String> {
        let mut child = Command::new(&self.command.program)
            .args(&self.command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start the reader process {}: {e}",
                    self.command.program.display()
                )
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or("the reader process has no input")?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the reader process has no output")?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("vzarr-verify-worker".into())
            .spawn(move || read_answers(stdout, tx))
            .map_err(|e| e.to_string())?;
        Ok(Running {
            child,
            stdin,
            answers: rx,
        })
    }

    /// Reads a region of a variable of the file at `path` in the worker.
    pub(crate) fn read(
        &mut self,
        kind: Kind,
        path: &Path,
        var: &str,
        start: &[u64],
        count: &[u64],
    ) -> Result<SourceValues, String> {
        if self.running.is_none() {
            self.running = Some(self.start()?);
        }
        let req = Request {
            kind,
            path: path.to_path_buf(),
            var: var.to_string(),
            start: start.to_vec(),
            count: count.to_vec(),
        };
        let timeout = self.command.timeout;
        let running = self.running.as_mut().ok_or("no reader process")?;
        let mut line = serde_json::to_vec(&req).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let sent = running
            .stdin
            .write_all(&line)
            .and_then(|()| running.stdin.flush());
        let got = match sent {
            Ok(()) => running.answers.recv_timeout(timeout),
            Err(e) => Ok(Err(e)),
        };
        match got {
            Ok(Ok((a, bytes))) if a.ok => {
                let dtype = a
                    .dtype
                    .as_ref()
                    .ok_or("the reader process gave no data type")
                    .and_then(|d| {
                        DataType::from_zarr_json(d).map_err(|_| "bad data type from the reader")
                    })?;
                Ok(SourceValues { dtype, bytes })
            }
            Ok(Ok((a, _))) => Err(a.error.unwrap_or_else(|| "the reader failed".into())),
            Ok(Err(e)) => {
                let status = self.stop();
                Err(format!("the reader process failed ({e}; {status})"))
            }
            Err(_) => {
                self.stop();
                Err(format!(
                    "the reader process gave no answer within {} s and was stopped",
                    timeout.as_secs_f64()
                ))
            }
        }
    }

    /// Kills the worker and says how it ended.
    fn stop(&mut self) -> String {
        let Some(mut r) = self.running.take() else {
            return "not running".into();
        };
        let _ = r.child.kill();
        match r.child.wait() {
            Ok(s) => describe_status(s),
            Err(e) => e.to_string(),
        }
    }
}

fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => s.to_string(),
    }
}

enum Handle {
    Hdf5(hdf5::File),
    Netcdf(netcdf::File),
}

/// Files kept open by a worker.
const KEEP_OPEN: usize = 8;

fn answer(open: &mut Vec<(PathBuf, Handle)>, req: &Request) -> Result<SourceValues, String> {
    let pos = open.iter().position(|(p, _)| *p == req.path);
    let k = match pos {
        Some(k) => k,
        None => {
            let h = match req.kind {
                Kind::Hdf5 => Handle::Hdf5(open_hdf5(&req.path)?),
                Kind::Netcdf => Handle::Netcdf(open_netcdf(&req.path)?),
            };
            if open.len() >= KEEP_OPEN {
                open.remove(0);
            }
            open.push((req.path.clone(), h));
            open.len() - 1
        }
    };
    match &open[k].1 {
        Handle::Hdf5(f) => hdf5_read(f, &req.var, &req.start, &req.count),
        Handle::Netcdf(f) => nc_read(f, &req.var, &req.start, &req.count),
    }
}

/// Serves read requests on standard input until it closes (the worker's side).
pub fn serve() -> std::io::Result<()> {
    crate::h5filters::register();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut open: Vec<(PathBuf, Handle)> = Vec::new();
    for line in stdin.lock().lines() {
        let line = line?;
        let result = match serde_json::from_str::<Request>(&line) {
            Ok(req) => answer(&mut open, &req),
            Err(e) => Err(format!("bad request: {e}")),
        };
        match result {
            Ok(v) => {
                let a = Answer {
                    ok: true,
                    dtype: Some(v.dtype.to_zarr_json()),
                    len: v.bytes.len() as u64,
                    error: None,
                };
                serde_json::to_writer(&mut out, &a)?;
                out.write_all(b"\n")?;
                out.write_all(&v.bytes)?;
            }
            Err(error) => {
                let a = Answer {
                    ok: false,
                    dtype: None,
                    len: 0,
                    error: Some(error),
                };
                serde_json::to_writer(&mut out, &a)?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(script: &str, timeout_ms: u64) -> Worker {
        Worker::new(WorkerCommand {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            timeout: std::time::Duration::from_millis(timeout_ms),
        })
    }

    fn read(w: &mut Worker) -> Result<SourceValues, String> {
        w.read(Kind::Hdf5, Path::new("/nowhere.h5"), "v", &[0], &[1])
    }

    #[test]
    fn a_crashing_worker_is_one_failure_and_is_restarted() {
        let mut w = worker("read line; kill -SEGV $$", 10_000);
        let e = read(&mut w).unwrap_err();
        assert!(e.contains("killed by signal 11"), "{e}");
        // The next request starts a new worker (which crashes again, the same way).
        let e = read(&mut w).unwrap_err();
        assert!(e.contains("signal 11"), "{e}");
    }

    #[test]
    fn a_hanging_worker_is_stopped_at_the_time_limit() {
        let mut w = worker("read line; sleep 100", 300);
        let e = read(&mut w).unwrap_err();
        assert!(e.contains("no answer within 0.3 s"), "{e}");
        assert!(w.running.is_none());
    }

    #[test]
    fn answers_and_refusals_pass_through() {
        // An answer of 4 bytes of uint8, then a refusal.
        let script = r#"read a; printf '{"ok":true,"dtype":"uint8","len":4}\nabcd'; read b; printf '{"ok":false,"error":"no such variable"}\n'; read c"#;
        let mut w = worker(script, 10_000);
        let v = read(&mut w).unwrap();
        assert_eq!(
            (v.dtype, v.bytes.as_slice()),
            (DataType::UInt8, &b"abcd"[..])
        );
        assert_eq!(read(&mut w).unwrap_err(), "no such variable");
    }
}
