//! vzarr from Python: the library's build (scan, plan, write) as the extension module
//! `vzarr._vzarr`, wrapped by the pure-Python package `vzarr` (`python/vzarr`).
//!
//! Only the native HDF5/NetCDF4 scanner and the NetCDF3 parser are built in: no libhdf5 or
//! netCDF-C. The GIL is released while files are scanned, planned and written; scans run in
//! parallel as in `vzarr build`.

mod codecs;
mod expire;
mod guard;
mod open;
mod parser;
mod repo_store;
mod store;
mod sync;
mod upgrade;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyType};
use pyo3_object_store::PyExternalObjectStore;
use vzarr_build::{BuildError, Format, Output, Progress, Settings, Written};
use vzarr_scan::ScanError as ScanFailure;
use vzarr_scan::inputs::Filters;
use vzarr_source::ObjectStore;

create_exception!(
    vzarr,
    VzarrError,
    PyException,
    "Base class of vzarr's errors; `file` names the source concerned when one is."
);
create_exception!(
    vzarr,
    SourceError,
    VzarrError,
    "A source could not be read (missing, no permission, truncated, unreachable)."
);
create_exception!(
    vzarr,
    StaleSourceError,
    SourceError,
    "A source changed since the references were made (its size, modification time, ETag or \
     first bytes differ from those recorded): its bytes are not read (ignore_stale=True reads \
     them as they are now)."
);
create_exception!(
    vzarr,
    NotAllowedError,
    SourceError,
    "References point at a source outside the prefixes the caller allows (allow_prefixes=, \
     VZARR_ALLOW_PREFIXES, the configuration file; or the references' own prefixes with \
     trust_references=True)."
);
/// `ScanError`: a source could not be scanned. A subclass of both `VzarrError` and Python's
/// `ValueError` (what VirtualiZarr's parsers raise for a file they cannot parse), so code
/// written against either catches it. pyo3's `create_exception!` takes one base, so the class
/// is made once per interpreter by calling `type` with both.
static SCAN_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The class `ScanError` (see [`SCAN_ERROR`]).
fn scan_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    SCAN_ERROR
        .get_or_try_init(py, || {
            let namespace = PyDict::new(py);
            namespace.set_item(
                "__doc__",
                "A source could not be scanned (not HDF5/NetCDF, corrupt, or left-out \
                 variables with strict=True). Also a ValueError, as VirtualiZarr's parsers \
                 raise for a file they cannot parse.",
            )?;
            namespace.set_item("__module__", "vzarr")?;
            let bases = (py.get_type::<VzarrError>(), py.get_type::<PyValueError>());
            let made = py
                .get_type::<PyType>()
                .call1(("ScanError", bases, namespace))?;
            Ok(made.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// A `ScanError` (see [`SCAN_ERROR`]) with `message`.
pub(crate) fn scan_error(py: Python<'_>, message: String) -> PyErr {
    match scan_error_type(py) {
        Ok(t) => PyErr::from_type(t.clone(), message),
        Err(e) => e,
    }
}
create_exception!(
    vzarr,
    PlanError,
    VzarrError,
    "Sources could not be combined (variables differ, coordinates overlap, ...)."
);
create_exception!(
    vzarr,
    WriteError,
    VzarrError,
    "The output could not be written."
);

/// The call a build error came from: each hint names a keyword argument the call takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// `vzarr.build`, `vzarr.scan`, `open_dataset` of sources, the VirtualiZarr parser.
    Build,
    /// `vzarr.upgrade` (no `strict`, `allow_gaps`, `order_by` or `new_dim`).
    Upgrade,
    /// `vzarr.sync` (no `concat_dim`, `order_by` or `new_dim`: they are recorded).
    Sync,
}

/// The keyword argument of `call` that changes the outcome of the build error `e`, in words,
/// where one does: the CLI's hints, in the Python call's terms.
fn build_hint(e: &BuildError, call: Call) -> Option<String> {
    use vzarr_plan::PlanError as Plan;
    if call == Call::Upgrade {
        return match e {
            BuildError::UpgradeSource {
                source: vzarr_source::SourceError::NotAllowed(_),
                ..
            } => build_hint(e, Call::Build),
            BuildError::HowToCombine { .. } => {
                Some("combine them with concat_dim=\"DIM\" (with rescan=True)".into())
            }
            _ => None,
        };
    }
    if call == Call::Sync {
        return match e {
            BuildError::Removed { .. } => Some(
                "if they were removed on purpose, pass allow_removal=True to rebuild without \
                 them"
                    .into(),
            ),
            BuildError::SyncSource {
                source: vzarr_source::SourceError::NotAllowed(_),
                ..
            } => Some(
                "allow the locations with allow_prefixes= (or VZARR_ALLOW_PREFIXES), or pass \
                 trust_references=True if you made this output"
                    .into(),
            ),
            BuildError::Strict { .. } | BuildError::Plan(_) => build_hint(e, Call::Build)
                .filter(|h| !h.contains("order_by") && !h.contains("concat_dim")),
            _ => None,
        };
    }
    Some(match e {
        BuildError::Strict { .. } => {
            "strict=True is set: leave it out to build without them".into()
        }
        BuildError::Plan(p) if matches!(**p, Plan::Gap(_)) => {
            "pass allow_gaps=True to accept gaps".into()
        }
        BuildError::Plan(p) if matches!(**p, Plan::Overlap(_)) => {
            "leave out a file given twice; if the \
            dimension's coordinate does not tell the files apart, order them by another \
            variable along the dimension with order_by=\"VAR\""
                .into()
        }
        BuildError::HowToCombine {
            suggestion: Some(d),
            ..
        } => format!(
            "combine them with concat_dim=\"{d}\" (the unlimited dimension of every file), or \
             new_dim=\"NAME\" to stack them"
        ),
        BuildError::HowToCombine { .. } => {
            "combine them with concat_dim=\"DIM\", or new_dim=\"NAME\" to stack them".into()
        }
        BuildError::UpgradeSource {
            source: vzarr_source::SourceError::NotAllowed(_),
            ..
        } => "allow the sources' prefix with allow_prefixes= (or VZARR_ALLOW_PREFIXES), or \
              pass trust_references=True if you made these references"
            .into(),
        _ => return None,
    })
}

/// The Python exception of a build error, with its message (and the hint, as the CLI gives
/// it) and `file`.
pub(crate) fn to_py(py: Python<'_>, e: &BuildError) -> PyErr {
    to_py_from(py, e, Call::Build)
}

/// [`to_py`] of an error of `call`, whose hint names `call`'s keyword arguments.
pub(crate) fn to_py_from(py: Python<'_>, e: &BuildError, call: Call) -> PyErr {
    let mut message = vzarr_build::error_chain(e);
    if let Some(h) = build_hint(e, call) {
        message = format!("{message}\nhint: {h}");
    }
    let (err, file) = match e {
        BuildError::Scan(s @ (ScanFailure::Source(_) | ScanFailure::Io { .. })) => {
            (SourceError::new_err(message), s.file().map(str::to_string))
        }
        BuildError::Scan(s) => (scan_error(py, message), s.file().map(str::to_string)),
        BuildError::Strict { .. } => (scan_error(py, message), None),
        BuildError::Plan(p) => (
            PlanError::new_err(message),
            p.file()
                .map(|f| f.strip_prefix("file://").unwrap_or(f).to_string()),
        ),
        BuildError::Write(_)
        | BuildError::Io { .. }
        | BuildError::Output(_)
        | BuildError::Icechunk(_)
        | BuildError::Append { .. }
        | BuildError::Unwritable { .. } => (WriteError::new_err(message), None),
        BuildError::Options(_) => (PyValueError::new_err(message), None),
        BuildError::UpgradeSource {
            source: vzarr_source::SourceError::NotAllowed(_),
            ..
        } => (NotAllowedError::new_err(message), None),
        BuildError::UpgradeSource { .. } => (SourceError::new_err(message), None),
        BuildError::SyncSource {
            source: vzarr_source::SourceError::NotAllowed(_),
            ..
        } => (NotAllowedError::new_err(message), None),
        BuildError::SyncSource { .. } => (SourceError::new_err(message), None),
        BuildError::Sync { .. } | BuildError::Removed { .. } => {
            (WriteError::new_err(message), None)
        }
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

/// What a build gives back to Python: the references (when not written elsewhere), the
/// sources left out as (source, reason), the warnings, the summary as JSON text, and what
/// was written (a path or URL, and for Icechunk the commit) as JSON text.
type Built = (
    Option<Py<PyBytes>>,
    Vec<(String, String)>,
    Vec<String>,
    String,
    Option<String>,
);

/// A finished build in the binding: the references (when returned), the outcome, and what was
/// written (as JSON text).
type Done = (Option<Vec<u8>>, vzarr_build::BuildOutcome, Option<String>);

/// A library error about the keyword argument `name` as Python's `ValueError`.
pub(crate) fn value_error(name: &'static str) -> impl Fn(BuildError) -> PyErr {
    move |e| PyValueError::new_err(format!("{name}: {}", vzarr_build::error_chain(&e)))
}

/// Scans `inputs` (paths, directories, URLs, prefixes; `catalog` files of one per line),
/// combines them as asked and returns the kerchunk references as JSON bytes, or writes them
/// to `output` (a path or URL; with `format="icechunk"` a repository). The keyword arguments
/// are those of `vzarr build` (see `vzarr.build`), validated by the library as the command
/// line's are.
#[pyfunction]
#[pyo3(signature = (
    inputs, *, catalog, include, exclude, concat_dim, new_dim, new_dim_values, allow_gaps,
    time_units, order_by, jobs, on_error, cache_dir, strict, file_timeout, split_contiguous,
    max_string_bytes, small_chunks, chunk_target, inline_max, inline_total, output, format,
    branch, piece_refs, commit_per_piece, one_commit, append, progress,
    object_references=true, record_links=false, data_url=None
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
    order_by: Option<String>,
    jobs: usize,
    on_error: &str,
    cache_dir: Option<PathBuf>,
    strict: bool,
    file_timeout: u64,
    split_contiguous: Option<String>,
    max_string_bytes: Option<String>,
    small_chunks: Option<String>,
    chunk_target: Option<String>,
    inline_max: Option<String>,
    inline_total: Option<String>,
    output: Option<String>,
    format: &str,
    branch: &str,
    piece_refs: Option<usize>,
    commit_per_piece: bool,
    one_commit: bool,
    append: bool,
    progress: bool,
    object_references: bool,
    record_links: bool,
    data_url: Option<String>,
) -> PyResult<Built> {
    let format: Format = format.parse().map_err(value_error("format"))?;
    if one_commit && commit_per_piece {
        return Err(PyValueError::new_err(
            "one_commit and commit_per_piece: choose one",
        ));
    }
    if piece_refs == Some(0) {
        return Err(PyValueError::new_err("piece_refs: at least 1"));
    }
    let output = output
        .map(|o| {
            Output::parse(&o, format, branch).map(|out| {
                out.with_piece_refs(piece_refs.unwrap_or(vzarr_icechunk::PIECE_REFS))
                    .with_commits(if one_commit {
                        vzarr_icechunk::Commits::One
                    } else {
                        vzarr_icechunk::Commits::per_piece(commit_per_piece)
                    })
            })
        })
        .transpose()
        .map_err(|e| to_py(py, &e))?;
    // Before anything is scanned: a build that fails only once written wastes the build.
    if let Some(out) = &output {
        out.check_writable().map_err(|e| to_py(py, &e))?;
    }
    if output.is_none() && (append || format != Format::Kerchunk) {
        return Err(PyValueError::new_err(
            "append and format=\"icechunk\" need output= (the file or repository)",
        ));
    }
    let settings = Settings {
        concat_dim,
        new_dim,
        new_dim_values,
        allow_gaps,
        time_units,
        order_by,
        jobs,
        on_error: on_error.parse().map_err(value_error("on_error"))?,
        cache_dir,
        strict,
        file_timeout_secs: file_timeout,
        scan: scan_options(
            split_contiguous,
            max_string_bytes,
            object_references,
            record_links,
            data_url,
        )?,
        ..Settings::new()
    };
    let small = [small_chunks, chunk_target, inline_max, inline_total];
    let (settings, _) = with_small_chunks(settings, small)?;
    // Options that do not go together are the caller's error (ValueError); a scan cache that
    // cannot be opened is a write error, raised with the build's others.
    settings
        .concat()
        .map_err(value_error("concat_dim, new_dim, new_dim_values"))?;
    let bar = if progress {
        indicatif::ProgressBar::new(0)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let on_progress = |p: Progress<'_>| match p {
        Progress::Sources(n) => bar.set_length(n as u64),
        Progress::Scanned(..) => bar.inc(1),
        _ => bar.finish_and_clear(),
    };
    let result = crate::guard::detach(py, "build", || -> Result<Done, BuildError> {
        let opts = settings.options()?;
        let filters = Filters { include, exclude };
        let sources = vzarr_scan::inputs::collect(&inputs, &catalog, &filters)?;
        let opts = vzarr_build::BuildOptions {
            inputs: vzarr_scan::inputs::recorded_inputs(&inputs, &catalog, &filters)?,
            ..opts
        };
        let append_to = output.as_ref().filter(|_| append);
        vzarr_build::run(sources, opts, append_to, &on_progress, |mut out| {
            let action = if append { "append" } else { "build" };
            // The write (or the rendering of the references returned) counts in the summary.
            let started = std::time::Instant::now();
            let (bytes, written) = match &output {
                Some(target) => {
                    let w = vzarr_build::output::write(
                        &out.dataset,
                        target,
                        action,
                        append,
                        out.appended.as_ref(),
                        Some(release_free_memory),
                    )?;
                    (None, Some(written_json(&w)))
                }
                None => (Some(vzarr_kerchunk::to_bytes(&out.dataset)?), None),
            };
            out.summary.add_write(started.elapsed().as_secs_f64());
            Ok((bytes, out, written))
        })?
    })?;
    let (bytes, out, written) = result.map_err(|e| to_py(py, &e))?;
    let mut summary = serde_json::to_value(&out.summary)
        .map_err(|e| VzarrError::new_err(format!("summary: {e}")))?;
    if let (Some(a), Some(map)) = (&out.appended, summary.as_object_mut()) {
        map.insert("append".into(), a.to_json());
    }
    let summary = summary.to_string();
    let mut warnings = out.warnings;
    if format == Format::Kerchunk {
        warnings.extend(
            vzarr_build::output::reference_file_warning(&out.dataset, out.appended.as_ref())
                .map(|w| format!("{w}: format=\"icechunk\"")),
        );
    }
    warnings.extend(out.plan.iter().flat_map(|p| p.left_out.iter().cloned()));
    warnings.extend(
        out.small_chunks
            .left_referenced
            .iter()
            .map(|l| match l.reason {
                vzarr_plan::LeftReason::Failed { .. } => l.to_string(),
                _ => format!("{l} (inline_max= and inline_total= raise the limits)"),
            }),
    );
    Ok((
        bytes.map(|b| PyBytes::new(py, &b).unbind()),
        out.failures
            .into_iter()
            .map(|f| (f.source, f.reason))
            .collect(),
        warnings,
        summary,
        written,
    ))
}

/// Returns the memory glibc's malloc holds free to the system, between the pieces of an
/// Icechunk build: glibc keeps memory freed by a thread in that thread's arena, and each piece
/// frees hundreds of MB on one of the I/O runtime's threads (the binary does the same; see
/// benches/HISTORY.md, "Icechunk at scale"). A no-op with other allocators.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only walks glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What was written, as JSON text for `Report.output` and `Report.commit`.
pub(crate) fn written_json(w: &Written) -> String {
    let v = match w {
        Written::Kerchunk { at } => serde_json::json!({ "output": at }),
        Written::Icechunk(w) => serde_json::json!({
            "output": w.location,
            "branch": w.branch,
            "snapshot": w.snapshot,
            "created": w.created,
            "virtual_refs": w.virtual_refs,
            "native_chunks": w.native_chunks,
            "pieces": w.pieces,
            "commits": w.commits,
            "containers": w.containers,
        }),
        _ => serde_json::json!({}),
    };
    v.to_string()
}

/// `settings` with the keyword arguments `small_chunks`, `chunk_target`, `inline_max` and
/// `inline_total` (in that order), and the small-chunk policy they make; a ValueError when
/// one does not parse or they do not go together.
pub(crate) fn with_small_chunks(
    mut settings: Settings,
    [small_chunks, chunk_target, inline_max, inline_total]: [Option<String>; 4],
) -> PyResult<(Settings, Option<vzarr_core::SmallChunkPolicy>)> {
    settings.small_chunks = small_chunks
        .map(|m| m.parse())
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("small_chunks: {e}")))?;
    settings.chunk_target = size_option("chunk_target", chunk_target)?;
    settings.inline_max = size_option("inline_max", inline_max)?;
    settings.inline_total = size_option("inline_total", inline_total)?;
    let policy = settings.small_chunk_policy().map_err(value_error(
        "small_chunks, chunk_target, inline_max, inline_total",
    ))?;
    Ok((settings, policy))
}

/// A size keyword argument (an integer or text like "4MiB", as the library parses it).
fn size_option(name: &str, v: Option<String>) -> PyResult<Option<u64>> {
    v.map(|t| vzarr_build::parse_size(&t))
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
}

/// The scan options of the keyword arguments (sizes as the library parses them).
pub(crate) fn scan_options(
    split_contiguous: Option<String>,
    max_string_bytes: Option<String>,
    object_references: bool,
    record_links: bool,
    data_url: Option<String>,
) -> PyResult<vzarr_scan::ScanOptions> {
    Ok(vzarr_scan::ScanOptions::default()
        .with_split_contiguous(size_option("split_contiguous", split_contiguous)?)
        .with_max_string_bytes(size_option("max_string_bytes", max_string_bytes)?)
        .with_object_references(object_references)
        .with_record_links(record_links)
        .with_dmrpp_data_url(data_url))
}

/// An object store handed over from Python (an obstore store, recreated here from its
/// configuration by `pyo3-object_store`): made once per store by `vzarr.virtualizarr.Parser`
/// and reused for every file read through it, so its connections are pooled.
#[pyclass(frozen, module = "vzarr._vzarr")]
pub(crate) struct Store(Arc<dyn ObjectStore>);

#[pymethods]
impl Store {
    #[new]
    fn new(store: &Bound<'_, PyAny>) -> PyResult<Self> {
        let s: PyExternalObjectStore = store.extract().map_err(|e| {
            PyValueError::new_err(format!(
                "vzarr reads through obstore's S3Store, GCSStore, AzureStore, HTTPStore and \
                 LocalStore (recreated from their configuration), not {}: {e}",
                store
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        Ok(Store(s.into_dyn()))
    }
}

/// The extension module `vzarr._vzarr`.
#[pymodule]
fn _vzarr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(upgrade::upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(sync::sync, m)?)?;
    m.add_function(wrap_pyfunction!(expire::expire, m)?)?;
    m.add_function(wrap_pyfunction!(parser::scan_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(open::detect, m)?)?;
    m.add_function(wrap_pyfunction!(open::checked_references, m)?)?;
    m.add_function(wrap_pyfunction!(open::configured_prefixes, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::decode_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::encode_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::htj2k_image_bytes, m)?)?;
    m.add_class::<Store>()?;
    m.add_class::<store::ReferenceStore>()?;
    m.add_class::<repo_store::RepositoryStore>()?;
    m.add("VzarrError", py.get_type::<VzarrError>())?;
    m.add("SourceError", py.get_type::<SourceError>())?;
    m.add("NotAllowedError", py.get_type::<NotAllowedError>())?;
    m.add("StaleSourceError", py.get_type::<StaleSourceError>())?;
    m.add("ScanError", scan_error_type(py)?)?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    m.add("WriteError", py.get_type::<WriteError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
