//! `vzarr.expire`: a repository's old snapshots expired and its garbage collected, its
//! provenance kept, through the same library call as `vzarr expire`
//! ([`vzarr_icechunk::expire`]).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use vzarr_build::BuildError;

/// Expires the snapshots of the repository `repo` written before `older_than` (an RFC 3339
/// time or an age such as `30d`, [`vzarr_icechunk::parse_cutoff`]), after a checkpoint of the
/// whole provenance where the expiration would cut it, and with `collect_garbage` deletes
/// what only they reached. Returns what was done, as JSON text.
#[pyfunction]
#[pyo3(signature = (repo, *, older_than, collect_garbage))]
pub(crate) fn expire(
    py: Python<'_>,
    repo: String,
    older_than: String,
    collect_garbage: bool,
) -> PyResult<String> {
    let now = vzarr_icechunk::Time::from(std::time::SystemTime::now());
    let cutoff = vzarr_icechunk::parse_cutoff(&older_than, now)
        .map_err(|e| PyValueError::new_err(format!("older_than: {e}")))?;
    let done = crate::guard::detach(py, "expire", || -> Result<_, BuildError> {
        let location = vzarr_icechunk::RepoLocation::parse(&repo)?;
        Ok(vzarr_icechunk::expire(&location, cutoff, collect_garbage)?)
    })?
    .map_err(|e| crate::to_py(py, &e))?;
    serde_json::to_string(&done).map_err(|e| crate::VzarrError::new_err(format!("expire: {e}")))
}
