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
mod repo_store;
mod store;
mod sync;
mod upgrade;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyType};
use pyo3_object_store::PyExternalObjectStore;
use vzarr_build::{BuildError, Format, Output, Progress, Settings, Written};
use vzarr_scan::ScanError as ScanFailure;
use vzarr_scan::inputs::Filters;
use vzarr_source::{ObjectPath, ObjectStore};

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
fn scan_error(py: Python<'_>, message: String) -> PyErr {
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
fn scan_options(
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

/// VirtualiZarr's refusal of a dataset of references: `NotImplementedError` for the first
/// dataset the scan left out because it holds object references not asked for (its message
/// naming the option that reads them) or region or attribute references (which nothing
/// reads), as VirtualiZarr 2.8's HDFParser raises it.
fn refused_references(url: &str, ds: &vzarr_core::VirtualDataset) -> PyResult<()> {
    use vzarr_scan::hdf5_refusal as r;
    for s in ds.skipped.iter().filter(|s| !s.path.contains('@')) {
        if s.reason.contains(r::OBJECT_REFERENCES_NOT_READ) {
            return Err(PyNotImplementedError::new_err(format!(
                "{url}: {}: {}. To store object references as the paths of their targets, \
                 following the draft Links and Object References convention, pass \
                 links_and_references=True.",
                s.path, s.reason
            )));
        }
        if s.reason.contains(r::REGION_REFERENCES) || s.reason.contains(r::ATTRIBUTE_REFERENCES) {
            return Err(PyNotImplementedError::new_err(format!(
                "{url}: {}: {}",
                s.path, s.reason
            )));
        }
    }
    Ok(())
}

/// An object store handed over from Python (an obstore store, recreated here from its
/// configuration by `pyo3-object_store`): made once per store by `vzarr.virtualizarr.Parser`
/// and reused for every file read through it, so its connections are pooled.
#[pyclass(frozen, module = "vzarr._vzarr")]
struct Store(Arc<dyn ObjectStore>);

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

/// One array of a scanned file for VirtualiZarr: its path, Zarr v3 metadata (JSON text), chunk
/// grid shape, per chunk (C order) the source id as little-endian u32 (`u32::MAX`: missing,
/// `u32::MAX - 1`: inline), offset and length as little-endian u64, the source URLs, and the
/// inline chunks as (grid index, bytes).
type ArrayManifest = (
    String,
    String,
    Vec<u64>,
    Py<PyBytes>,
    Py<PyBytes>,
    Py<PyBytes>,
    Vec<String>,
    Vec<(Vec<u64>, Py<PyBytes>)>,
);

/// Most chunks of one array handed to VirtualiZarr, whose manifests are dense numpy arrays
/// (20 bytes a chunk here, more there).
const MAX_PARSER_CHUNKS: u64 = 1 << 27;

/// Arrays of `ds` whose chunk grid is not regular (HDF4's linked blocks of unequal rows, read
/// from DMR++; contiguous data split in rows that do not divide evenly), which VirtualiZarr's
/// manifests cannot hold: kept inline (regular then) where the policy's limits allow, else
/// left out with a warning naming them.
fn regular_only(
    ds: &mut vzarr_core::VirtualDataset,
    policy: &vzarr_core::SmallChunkPolicy,
    reader: &dyn vzarr_source::SourceStore,
    warnings: &mut Vec<String>,
) -> Result<(), BuildError> {
    let irregular: Vec<String> = ds
        .arrays
        .iter()
        .filter(|(_, a)| !a.grid.is_regular())
        .map(|(p, _)| p.clone())
        .collect();
    if irregular.is_empty() {
        return Ok(());
    }
    let mut sub = vzarr_core::VirtualDataset::new();
    sub.provenance = ds.provenance.clone();
    for p in &irregular {
        sub.arrays.insert(p.clone(), ds.arrays[p].clone());
    }
    let mut inline = *policy;
    inline.mode = vzarr_core::SmallChunks::Inline;
    vzarr_plan::compact(&mut sub, &inline, vzarr_plan::Grids::Regular, reader)
        .map_err(BuildError::from)?;
    for (p, a) in sub.arrays {
        if a.grid.is_regular() {
            // In its place: the order of the arrays is the file's.
            if let Some(slot) = ds.arrays.get_mut(&p) {
                *slot = a;
            }
        } else {
            ds.arrays.shift_remove(&p);
            warnings.push(format!(
                "{p}: left out: chunks of unequal rows (a rectilinear chunk grid), which \
                 VirtualiZarr's manifests cannot hold, and too large to keep inline \
                 (vzarr.build writes it)"
            ));
        }
    }
    Ok(())
}

/// Scans one file (`url`: a path or URL) and returns its groups (path -> attributes, as JSON
/// text) and its arrays' manifests as flat buffers (see `ArrayManifest`), for the
/// VirtualiZarr parser `vzarr.virtualizarr.Parser`.
#[pyfunction]
#[pyo3(signature = (
    url, *, strict, file_timeout, split_contiguous, max_string_bytes, small_chunks=None,
    chunk_target=None, inline_max=None, inline_total=None, store=None, path=None,
    links_and_references=false, data_url=None
))]
#[allow(clippy::too_many_arguments)]
fn scan_manifests(
    py: Python<'_>,
    url: String,
    strict: bool,
    file_timeout: u64,
    split_contiguous: Option<String>,
    max_string_bytes: Option<String>,
    small_chunks: Option<String>,
    chunk_target: Option<String>,
    inline_max: Option<String>,
    inline_total: Option<String>,
    store: Option<&Store>,
    path: Option<String>,
    links_and_references: bool,
    data_url: Option<String>,
) -> PyResult<(String, Vec<ArrayManifest>, Vec<String>)> {
    // As VirtualiZarr's HDFParser: references and links recorded only when asked for.
    let scan = scan_options(
        split_contiguous,
        max_string_bytes,
        links_and_references,
        links_and_references,
        data_url,
    )?;
    let small = [small_chunks, chunk_target, inline_max, inline_total];
    let (_, policy) = with_small_chunks(Settings::new(), small)?;
    let policy = policy.unwrap_or_default();
    let time_limit = (file_timeout > 0).then(|| std::time::Duration::from_secs(file_timeout));
    let through = match (store, path) {
        (Some(s), Some(p)) => Some((
            s.0.clone(),
            ObjectPath::parse(&p)
                .map_err(|e| PyValueError::new_err(format!("{url}: path {p:?}: {e}")))?,
        )),
        (None, None) => None,
        _ => return Err(PyValueError::new_err("store and path go together")),
    };
    // One file, on a thread of its own only for the time limit: no batch, no planner (a
    // parser is called once per file, so what a build spends around a scan counts here).
    let built = crate::guard::detach(
        py,
        "scan",
        || -> Result<(vzarr_core::VirtualDataset, Vec<String>), BuildError> {
            let source = vzarr_scan::inputs::SourceRef::parse(&url)?;
            let s = source.clone();
            let given = through.clone();
            let mut ds = vzarr_scan::batch::guard(&url, time_limit, move || match given {
                Some((store, path)) => vzarr_scan::scan_in_store(&s, store, path, &scan),
                None => vzarr_scan::scan_source(&s, &scan),
            })?;
            let mut warnings = vzarr_build::left_out(&source, &ds, strict)?;
            // Small chunks merged (regular grids only: VirtualiZarr's manifests are regular)
            // and inlined, read through the store the file was scanned through.
            let records = ds.provenance.sources.clone();
            // The record is the file's, or the granule's beside a DMR++ sidecar: read in the
            // same store at its own path.
            let in_store = through
                .zip(records.first())
                .and_then(|((store, path), record)| {
                    let at = vzarr_scan::path_in_store(&source, &path, &record.url)?;
                    let loc = vzarr_source::locate(&record.url).ok()?;
                    Some((store, at, loc, record))
                });
            let reader: Box<dyn vzarr_source::SourceStore> = match in_store {
                Some((store, path, loc, record)) => {
                    let src = vzarr_source::ObjectSource::from_record_in(store, path, &loc, record);
                    Box::new(vzarr_source::Opened::new([Arc::new(src) as _]))
                }
                _ => Box::new(vzarr_source::Recorded::new(
                    vzarr_source::Stores::default(),
                    records,
                )),
            };
            let small = vzarr_plan::compact(&mut ds, &policy, vzarr_plan::Grids::Regular, &*reader)
                .map_err(BuildError::from)?;
            warnings.extend(small.left_referenced.iter().map(|l| match l.reason {
                vzarr_plan::LeftReason::Failed { .. } => l.to_string(),
                _ => format!("{l} (inline_max= and inline_total= raise the limits)"),
            }));
            regular_only(&mut ds, &policy, &*reader, &mut warnings)?;
            Ok((ds, warnings))
        },
    )?;
    let (ds, warnings) = built.map_err(|e| to_py(py, &e))?;
    refused_references(&url, &ds)?;
    let groups: serde_json::Map<String, serde_json::Value> = ds
        .groups
        .iter()
        .map(|(p, g)| (p.clone(), serde_json::Value::Object(g.attributes.clone())))
        .collect();
    let mut arrays = Vec::with_capacity(ds.arrays.len());
    for (path, a) in &ds.arrays {
        let n = a
            .grid
            .n_chunks()
            .ok()
            .filter(|&n| n <= MAX_PARSER_CHUNKS && n == a.manifest.len() as u64)
            .ok_or_else(|| {
                scan_error(
                    py,
                    format!(
                        "{url}: {path}: {} chunks, more than the {MAX_PARSER_CHUNKS} a \
                         VirtualiZarr manifest is given here",
                        a.manifest.len()
                    ),
                )
            })? as usize;
        let mut ids = vec![u32::MAX; n];
        let mut offsets = vec![0u64; n];
        let mut lengths = vec![0u64; n];
        let mut inline = Vec::new();
        let sources: Vec<String> = a.manifest.sources().iter().map(|s| s.to_string()).collect();
        for (i, id, chunk) in a.manifest.iter_stored_with_ids() {
            match chunk {
                vzarr_core::ChunkRef::Missing => {}
                vzarr_core::ChunkRef::Inline(b) => {
                    ids[i] = u32::MAX - 1;
                    lengths[i] = b.len() as u64;
                    inline.push((a.grid.chunk_index(i as u64), PyBytes::new(py, b).unbind()));
                }
                vzarr_core::ChunkRef::Range { offset, length, .. } => {
                    // The manifest's own id: the position of the source in `sources`.
                    ids[i] = id.unwrap_or(0);
                    offsets[i] = offset;
                    lengths[i] = length;
                }
            }
        }
        let le32: Vec<u8> = ids.iter().flat_map(|v| v.to_le_bytes()).collect();
        let le64 = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        arrays.push((
            path.clone(),
            a.zarr_metadata().to_string(),
            a.grid.grid_shape(),
            PyBytes::new(py, &le32).unbind(),
            PyBytes::new(py, &le64(&offsets)).unbind(),
            PyBytes::new(py, &le64(&lengths)).unbind(),
            sources,
            inline,
        ));
    }
    Ok((
        serde_json::Value::Object(groups).to_string(),
        arrays,
        warnings,
    ))
}

/// The extension module `vzarr._vzarr`.
#[pymodule]
fn _vzarr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(upgrade::upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(sync::sync, m)?)?;
    m.add_function(wrap_pyfunction!(expire::expire, m)?)?;
    m.add_function(wrap_pyfunction!(scan_manifests, m)?)?;
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
