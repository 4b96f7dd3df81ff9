//! vzarr from Python: the library's build (scan, plan, write) as the extension module
//! `vzarr._vzarr`, wrapped by the pure-Python package `vzarr` (`python/vzarr`).
//!
//! Only the native HDF5/NetCDF4 scanner and the NetCDF3 parser are built in: no libhdf5 or
//! netCDF-C. The GIL is released while files are scanned, planned and written; scans run in
//! parallel as in `vzarr build`.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_build::{BuildError, BuildOptions, OnError};
use vzarr_scan::ScanError as ScanFailure;
use vzarr_scan::inputs::Filters;

create_exception!(
    _vzarr,
    VzarrError,
    PyException,
    "Base class of vzarr's errors; `file` names the source concerned when one is."
);
create_exception!(
    _vzarr,
    SourceError,
    VzarrError,
    "A source could not be read (missing, no permission, truncated, unreachable)."
);
create_exception!(
    _vzarr,
    ScanError,
    VzarrError,
    "A source could not be scanned (not HDF5/NetCDF, corrupt, or left-out variables with strict=True)."
);
create_exception!(
    _vzarr,
    PlanError,
    VzarrError,
    "Sources could not be combined (variables differ, coordinates overlap, ...)."
);
create_exception!(
    _vzarr,
    WriteError,
    VzarrError,
    "The output could not be written."
);

/// An error and its causes on one line, each cause once.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// The Python exception of a build error, with its message and `file`.
fn to_py(py: Python<'_>, e: &BuildError) -> PyErr {
    let message = chain(e);
    let (err, file) = match e {
        BuildError::Scan(s @ (ScanFailure::Source(_) | ScanFailure::Io { .. })) => {
            (SourceError::new_err(message), s.file().map(str::to_string))
        }
        BuildError::Scan(s) => (ScanError::new_err(message), s.file().map(str::to_string)),
        BuildError::Strict { .. } => (ScanError::new_err(message), None),
        BuildError::Plan(p) => (
            PlanError::new_err(message),
            p.file()
                .map(|f| f.strip_prefix("file://").unwrap_or(f).to_string()),
        ),
        BuildError::Write(_) | BuildError::Io { .. } => (WriteError::new_err(message), None),
        _ => (VzarrError::new_err(message), None),
    };
    let file = match (file, e) {
        (Some(f), _) => Some(f.strip_prefix("file://").unwrap_or(&f).to_string()),
        (None, BuildError::Strict { file, .. }) => Some(file.clone()),
        _ => None,
    };
    // Setting an attribute on a fresh exception object cannot fail in practice; if it did,
    // the exception would still carry its message.
    let _ = err.value(py).setattr("file", file);
    err
}

/// What a build gives back to Python: the references (when not written to a file), the
/// sources left out as (source, reason), the warnings, and the summary as JSON text.
type Built = (
    Option<Py<PyBytes>>,
    Vec<(String, String)>,
    Vec<String>,
    String,
);

/// Scans `inputs` (paths, directories, URLs, prefixes; `catalog` files of one per line),
/// combines them as asked and returns the kerchunk references as JSON bytes, or writes them
/// to `output`. The keyword arguments are those of `vzarr build` (see `vzarr.build`).
#[pyfunction]
#[pyo3(signature = (
    inputs, *, catalog, include, exclude, concat_dim, new_dim, new_dim_values, allow_gaps,
    time_units, jobs, on_error, cache_dir, strict, file_timeout, split_contiguous,
    max_string_bytes, output, progress
))]
#[allow(clippy::too_many_arguments)]
fn build(
    py: Python<'_>,
    inputs: Vec<String>,
    catalog: Vec<PathBuf>,
    include: Vec<String>,
    exclude: Vec<String>,
    concat_dim: Option<String>,
    new_dim: Option<String>,
    new_dim_values: Option<Vec<String>>,
    allow_gaps: bool,
    time_units: Option<String>,
    jobs: usize,
    on_error: &str,
    cache_dir: Option<PathBuf>,
    strict: bool,
    file_timeout: u64,
    split_contiguous: Option<String>,
    max_string_bytes: Option<String>,
    output: Option<PathBuf>,
    progress: bool,
) -> PyResult<Built> {
    let on_error = match on_error {
        "fail" => OnError::Fail,
        "skip" => OnError::Skip,
        other => {
            return Err(PyValueError::new_err(format!(
                "on_error must be \"fail\" or \"skip\", not {other:?}"
            )));
        }
    };
    let concat = match (concat_dim, new_dim) {
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "concat_dim and new_dim exclude each other",
            ));
        }
        (Some(dim), None) => Some(vzarr_plan::Concat::Existing(dim)),
        (None, Some(dim)) => Some(vzarr_plan::Concat::New {
            dim,
            labels: new_dim_values,
        }),
        (None, None) => {
            if new_dim_values.is_some() {
                return Err(PyValueError::new_err("new_dim_values needs new_dim"));
            }
            None
        }
    };
    let size = |name: &str, v: Option<String>| -> PyResult<Option<u64>> {
        v.map(|t| vzarr_build::parse_size(&t))
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
    };
    let split_contiguous = size("split_contiguous", split_contiguous)?;
    let max_string_bytes = size("max_string_bytes", max_string_bytes)?;
    if time_units.is_some() && concat.is_none() {
        return Err(PyValueError::new_err(
            "time_units needs concat_dim or new_dim",
        ));
    }
    let result = py.detach(
        || -> Result<(Option<Vec<u8>>, vzarr_build::BuildOutcome), BuildError> {
            let cache = match &cache_dir {
                Some(dir) => Some(vzarr_scan::cache::ScanCache::open(dir)?),
                None => None,
            };
            let opts = BuildOptions {
                scan: vzarr_scan::ScanOptions::default()
                    .with_split_contiguous(split_contiguous)
                    .with_max_string_bytes(max_string_bytes),
                jobs,
                on_error,
                cache,
                strict,
                concat,
                allow_gaps,
                time_units,
                time_limit: (file_timeout > 0)
                    .then(|| std::time::Duration::from_secs(file_timeout)),
            };
            let filters = Filters { include, exclude };
            let sources = vzarr_scan::inputs::collect(&inputs, &catalog, &filters)?;
            let bar = if progress {
                indicatif::ProgressBar::new(sources.len() as u64)
            } else {
                indicatif::ProgressBar::hidden()
            };
            vzarr_build::with_jobs(jobs, || {
                let out = vzarr_build::build(&sources, &opts, &|_, _| bar.inc(1));
                bar.finish_and_clear();
                let out = out?;
                let bytes = match &output {
                    Some(path) => {
                        vzarr_kerchunk::write_file(&out.dataset, path)?;
                        None
                    }
                    None => Some(vzarr_kerchunk::to_bytes(&out.dataset)?),
                };
                Ok((bytes, out))
            })
        },
    );
    let (bytes, out) = result.map_err(|e| to_py(py, &e))?;
    let summary = serde_json::to_string(&out.summary)
        .map_err(|e| VzarrError::new_err(format!("summary: {e}")))?;
    Ok((
        bytes.map(|b| PyBytes::new(py, &b).unbind()),
        out.failures
            .into_iter()
            .map(|f| (f.source, f.reason))
            .collect(),
        out.warnings,
        summary,
    ))
}

/// The extension module `vzarr._vzarr`.
#[pymodule]
fn _vzarr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add("VzarrError", py.get_type::<VzarrError>())?;
    m.add("SourceError", py.get_type::<SourceError>())?;
    m.add("ScanError", py.get_type::<ScanError>())?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    m.add("WriteError", py.get_type::<WriteError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
