//! A panic below `run` is a bug, reported as one: an error line naming the command and its
//! inputs and what panicked where, exit status 1, no backtrace. The libraries catch the panics
//! they expect (of the parquet, flexbuffers and icechunk crates on corrupt files) as typed
//! errors without touching the panic hook; the hook installed here keeps those quiet too, and
//! remembers the last panic for [`report`]. `RUST_BACKTRACE` set (to anything but `0`) keeps
//! Rust's own report as well, for debugging.

use std::sync::Mutex;

/// The last panic: its message and where it happened.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Installs the binary's panic hook: it records each panic for [`report`] and prints nothing
/// (unless `RUST_BACKTRACE` asks for Rust's report).
pub(crate) fn install() {
    let rust_report = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let at = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{what}{at}"));
        if rust_report {
            previous(info);
        }
    }));
}

/// Whether the last panic was `println!` finding stdout closed (`vzarr ... | head`): not a
/// bug; the command stops quietly, as a reader closing the pipe asks.
pub(crate) fn broken_pipe() -> bool {
    LAST.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_deref()
        .is_some_and(|w| w.starts_with("failed printing to stdout") && w.contains("Broken pipe"))
}

/// The error line of a panic that reached `main`: the command with its arguments, and the
/// panic.
pub(crate) fn report() -> String {
    let command: Vec<String> = std::env::args()
        .skip(1)
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"[]*?$".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect();
    let what = LAST
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| "a panic".into());
    format!(
        "internal error (a bug in vzarr; please report it with the command and its inputs) in `vzarr {}`: {what}",
        command.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_reported_as_an_internal_error_naming_what_and_where() {
        let previous = std::panic::take_hook();
        install();
        let caught = std::panic::catch_unwind(|| {
            let v: Vec<u8> = Vec::new();
            v[3]
        });
        let line = report();
        std::panic::set_hook(previous);
        assert!(caught.is_err());
        assert!(
            line.starts_with("internal error (a bug in vzarr")
                && line.contains("index out of bounds")
                && line.contains("src/panics.rs:"),
            "{line}"
        );
        // Reported once.
        assert!(report().ends_with(": a panic"));
    }
}
