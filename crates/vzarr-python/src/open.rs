//! Opening what was built: telling a reference file and an Icechunk repository from sources
//! to scan, and checking every URL the references point at against the prefixes the caller
//! allows (the rules of `vzarr verify`) before Python reads any value.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_core::error_chain;
use vzarr_read::{ReadError, ReadOptions};
use vzarr_source::SourceError;

use crate::{NotAllowedError, SourceError as PySourceError, StaleSourceError, VzarrError};

/// Bytes read from the start of a file to tell references (JSON) from sources.
const SNIFF_BYTES: u64 = 512;

/// What `location` holds: an Icechunk repository, references (a JSON document, or kerchunk's
/// Parquet references, found as every reader finds them: `vzarr_read::holds_references`), or
/// anything else (sources to scan, or something the build will name as unreadable).
fn kind(location: &str) -> &'static str {
    if vzarr_icechunk::is_repository(location) {
        "icechunk"
    } else if vzarr_read::holds_references(location, SNIFF_BYTES) {
        "references"
    } else {
        "sources"
    }
}

/// What `location` holds: `"icechunk"` (a repository), `"references"` (a JSON document: a
/// reference file) or `"sources"` (files, directories, prefixes to scan). Reads at most the
/// first 512 bytes of a file or object, or asks the store whether a repository is there.
#[pyfunction]
pub(crate) fn detect(py: Python<'_>, location: String) -> PyResult<&'static str> {
    crate::guard::detach(py, &location, || kind(&location))
}

/// The reader options of the caller's prefixes: those given, plus those of the environment
/// and the configuration file unless `environment` is false (a store unpickled elsewhere
/// carries the policy resolved where it was made); the references' own only when trusted.
/// Sources whose recorded size, modification time or ETag changed are refused unless
/// `ignore_stale`.
pub(crate) fn reader_options(
    allow_prefixes: Vec<String>,
    trust_references: bool,
    ignore_stale: bool,
    environment: bool,
) -> Result<ReadOptions, ReadError> {
    let mut allow = allow_prefixes;
    if environment {
        allow.extend(vzarr_read::configured_prefixes()?);
    }
    Ok(ReadOptions {
        allow_prefixes: allow,
        trust_recorded_prefixes: trust_references,
        ignore_stale,
        ..Default::default()
    })
}

/// The prefixes the environment (`VZARR_ALLOW_PREFIXES`) and the configuration file allow,
/// as a reader made now would add them.
#[pyfunction]
pub(crate) fn configured_prefixes() -> PyResult<Vec<String>> {
    vzarr_read::configured_prefixes().map_err(|e| to_py(&e, "configuration"))
}

/// A reading error as the Python exception, with the hint the CLI gives in Python's terms:
/// refusals as `NotAllowedError`, changed sources as `StaleSourceError`, sources and
/// references that cannot be read as `SourceError`, bad prefixes and configuration as
/// `ValueError`, the rest as `VzarrError`.
pub(crate) fn to_py(e: &ReadError, at: &str) -> PyErr {
    let message = format!("{at}: {}", error_chain(e));
    let hinted = |hint: &str| format!("{message}\nhint: {hint}");
    match e.source_error() {
        Some(SourceError::NotAllowed(n)) => NotAllowedError::new_err(hinted(&match n.why {
            vzarr_source::Refusal::NotRecorded => "the references point outside the prefixes \
                they record: they may have been tampered with"
                .to_string(),
            _ if !n.recorded.is_empty() => format!(
                "the references record their sources under {}: allow them with \
                 allow_prefixes= (or VZARR_ALLOW_PREFIXES), or pass trust_references=True if \
                 you made these references",
                n.recorded.join(", ")
            ),
            _ => "allow the sources' prefix with allow_prefixes= (or VZARR_ALLOW_PREFIXES)"
                .to_string(),
        })),
        Some(SourceError::Stale { .. }) => StaleSourceError::new_err(hinted(
            "the source changed since the references were made: rebuild them, or pass \
             ignore_stale=True to read it as it is now",
        )),
        Some(_) => PySourceError::new_err(message),
        None if matches!(e, ReadError::Prefix(_)) => {
            pyo3::exceptions::PyValueError::new_err(hinted("check the allow_prefixes= values"))
        }
        None if matches!(e, ReadError::Config { .. }) => {
            pyo3::exceptions::PyValueError::new_err(message)
        }
        None => VzarrError::new_err(message),
    }
}

/// Reads the reference file at `location` (a path or URL), checks that every source it points
/// at is under the allowed prefixes (`allow_prefixes`, `VZARR_ALLOW_PREFIXES`, the
/// configuration file; the prefixes the references record only narrow these, or are allowed
/// too with `trust_references`) and, unless `ignore_stale`, that every source it records is
/// as it was recorded (size, modification time, ETag), and returns its bytes, exactly those
/// checked. (Python then reads the values through fsspec, which checks nothing more.)
#[pyfunction]
#[pyo3(signature = (location, *, allow_prefixes, trust_references, ignore_stale=false))]
pub(crate) fn checked_references(
    py: Python<'_>,
    location: String,
    allow_prefixes: Vec<String>,
    trust_references: bool,
    ignore_stale: bool,
) -> PyResult<Py<PyBytes>> {
    let bytes = crate::guard::detach(
        py,
        &location,
        || -> Result<Option<bytes::Bytes>, ReadError> {
            let opts = reader_options(allow_prefixes, trust_references, ignore_stale, true)?;
            let vzarr_read::Located::File { bytes, .. } = vzarr_read::locate(&location)? else {
                return Ok(None); // kerchunk's Parquet references
            };
            let reader = vzarr_read::open_bytes(&bytes, &location, opts)?;
            if ignore_stale {
                return Ok(Some(bytes));
            }
            if let Some(e) = reader.check_sources().into_iter().next() {
                return Err(ReadError::from(e));
            }
            Ok(Some(bytes))
        },
    )?;
    match bytes {
        Ok(Some(b)) => Ok(PyBytes::new(py, &b).unbind()),
        Ok(None) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{location}: kerchunk's Parquet references are read by vzarr's store, not fsspec's \
             reference filesystem: leave out remote_protocol and remote_options"
        ))),
        Err(e) => Err(to_py(&e, &location)),
    }
}
