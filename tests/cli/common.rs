//! Helpers shared by the CLI tests: the binary, the fixtures.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixtures directory.
pub(crate) fn fixtures() -> PathBuf {
    root().join("fixtures")
}

/// Runs the `vzarr` binary with `args`.
pub(crate) fn vzarr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(args)
        .output()
        .expect("run vzarr")
}

/// Runs the `vzarr` binary with `args` in the directory `dir`.
pub(crate) fn vzarr_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run vzarr")
}

/// Bytes of a process output as text.
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
