//! Opening what was built: telling a reference file and an Icechunk repository from sources
//! to scan, and checking every URL the references point at against the prefixes the caller
//! allows (the rules of `vzarr verify`) before Python reads any value.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_core::error_chain;
use vzarr_read::{ReadError, ReadOptions};
use vzarr_source::SourceError;

use crate::{NotAllowedError, SourceError as PySourceError, VzarrError};

/// Bytes read from the start of a file to tell references (JSON) from sources.
const SNIFF_BYTES: u64 = 512;

/// What `location` holds: an Icechunk repository, references (a JSON document), or anything
/// else (sources to scan, or something the build will name as unreadable).
fn kind(location: &str) -> &'static str {
    if vzarr_icechunk::is_repository(location) {
        return "icechunk";
    }
    let local = !location.contains("://") || location.starts_with("file://");
    if local {
        let path = location.strip_prefix("file://").unwrap_or(location);
        // A directory of kerchunk's Parquet references.
        if std::path::Path::new(path).join(".zmetadata").is_file() {
            return "references";
        }
        if !std::path::Path::new(path).is_file() {
            return "sources";
        }
    } else if location.ends_with('/') {
        return "sources";
    }
    let Ok(src) = vzarr_source::open_source(location) else {
        return "sources";
    };
    let Ok(head) = src.read(0..src.size().min(SNIFF_BYTES)) else {
        return "sources";
    };
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => "references",
        _ => "sources",
    }
}

/// What `location` holds: `"icechunk"` (a repository), `"references"` (a JSON document: a
/// reference file) or `"sources"` (files, directories, prefixes to scan). Reads at most the
/// first 512 bytes of a file or object, or asks the store whether a repository is there.
#[pyfunction]
pub(crate) fn detect(py: Python<'_>, location: String) -> &'static str {
    py.detach(|| kind(&location))
}

/// The reader options of the caller's prefixes: those given plus those of the environment
/// and the configuration file; the references' own only when trusted.
pub(crate) fn reader_options(
    allow_prefixes: Vec<String>,
    trust_references: bool,
) -> Result<ReadOptions, ReadError> {
    let mut allow = allow_prefixes;
    allow.extend(vzarr_read::configured_prefixes()?);
    Ok(ReadOptions {
        allow_prefixes: allow,
        trust_recorded_prefixes: trust_references,
        // Nothing is read here; Python reads the values.
        ignore_stale: true,
        ..Default::default()
    })
}

/// A reading error as the Python exception: refusals as `NotAllowedError`, sources and
/// references that cannot be read as `SourceError`, the rest as `VzarrError`.
pub(crate) fn to_py(e: &ReadError, at: &str) -> PyErr {
    let message = format!("{at}: {}", error_chain(e));
    match e.source_error() {
        Some(SourceError::NotAllowed(_)) => NotAllowedError::new_err(message),
        Some(_) => PySourceError::new_err(message),
        None if matches!(e, ReadError::Prefix(_) | ReadError::Config { .. }) => {
            pyo3::exceptions::PyValueError::new_err(message)
        }
        None => VzarrError::new_err(message),
    }
}

/// Reads the reference file at `location` (a path or URL), checks that every source it points
/// at is under the allowed prefixes (`allow_prefixes`, `VZARR_ALLOW_PREFIXES`, the
/// configuration file; the prefixes the references record only narrow these, or are allowed
/// too with `trust_references`) and returns its bytes, exactly those checked.
#[pyfunction]
#[pyo3(signature = (location, *, allow_prefixes, trust_references))]
pub(crate) fn checked_references(
    py: Python<'_>,
    location: String,
    allow_prefixes: Vec<String>,
    trust_references: bool,
) -> PyResult<Py<PyBytes>> {
    let bytes = py.detach(|| -> Result<bytes::Bytes, ReadError> {
        let opts = reader_options(allow_prefixes, trust_references)?;
        let load = |source| ReadError::Load {
            origin: location.clone(),
            source,
        };
        let src = vzarr_source::open_source(&location).map_err(load)?;
        let bytes = src.read(0..src.size()).map_err(load)?;
        vzarr_read::open_bytes(&bytes, &location, opts)?;
        Ok(bytes)
    });
    match bytes {
        Ok(b) => Ok(PyBytes::new(py, &b).unbind()),
        Err(e) => Err(to_py(&e, &location)),
    }
}
