//! Work done with the GIL released, a panic in it caught at the Python boundary: raised as
//! `vzarr.VzarrError` (an `Exception`, which `except Exception` catches) naming what was being
//! done, instead of pyo3's `PanicException` (a `BaseException`). No panic hook is replaced:
//! the process's own hook still reports the panic.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;

use crate::VzarrError;

/// `f` run with the GIL released; a panic in it becomes a `VzarrError` naming `at`.
pub(crate) fn detach<T: Send>(
    py: Python<'_>,
    at: &str,
    f: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|payload| internal(at, payload.as_ref()))
}

/// The exception of a caught panic.
fn internal(at: &str, payload: &(dyn std::any::Any + Send)) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    VzarrError::new_err(format!(
        "{at}: internal error (a bug in vzarr, please report it with the input): {what}"
    ))
}
