//! `vzarr.sync`: an output brought in line with its sources, through the same library calls
//! as `vzarr sync` ([`vzarr_build::sync`]).

use std::path::PathBuf;

use pyo3::prelude::*;
use vzarr_build::sync::{SyncAction, SyncOptions};
use vzarr_build::{BuildError, Format, Output, Progress, Settings};

/// What a sync gives Python: the plan as JSON text; when a build ran, the sources left out as
/// (source, reason), the warnings and the summary as JSON text; and what was written (JSON
/// text).
type Synced = (
    String,
    Vec<(String, String)>,
    Vec<String>,
    Option<String>,
    Option<String>,
);

/// Brings `output` (a reference file or, `icechunk`, an Icechunk repository's `branch`) in
/// line with the locations it records (see `vzarr.sync`): every location and source must be
/// under `allow_prefixes` (plus the environment's and the configuration file's), or the
/// recorded ones with `trust_references`.
#[pyfunction]
#[pyo3(signature = (
    output, *, allow_prefixes, trust_references, allow_removal, dry_run, icechunk, branch,
    cache_dir, jobs, on_error, strict, file_timeout, allow_gaps, time_units, progress
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sync(
    py: Python<'_>,
    output: String,
    allow_prefixes: Vec<String>,
    trust_references: bool,
    allow_removal: bool,
    dry_run: bool,
    icechunk: Option<bool>,
    branch: &str,
    cache_dir: Option<PathBuf>,
    jobs: usize,
    on_error: &str,
    strict: bool,
    file_timeout: u64,
    allow_gaps: bool,
    time_units: Option<String>,
    progress: bool,
) -> PyResult<Synced> {
    let call = crate::Call::Sync;
    let icechunk = icechunk.unwrap_or_else(|| vzarr_icechunk::is_repository(&output));
    let format = if icechunk {
        Format::Icechunk
    } else {
        Format::Kerchunk
    };
    let target =
        Output::parse(&output, format, branch).map_err(|e| crate::to_py_from(py, &e, call))?;
    if !dry_run {
        target
            .check_writable()
            .map_err(|e| crate::to_py_from(py, &e, call))?;
    }
    let settings = Settings {
        jobs,
        on_error: on_error.parse().map_err(crate::value_error("on_error"))?,
        cache_dir,
        strict,
        file_timeout_secs: file_timeout,
        ..Settings::new()
    };
    let mut allow = allow_prefixes;
    allow.extend(vzarr_read::configured_prefixes().map_err(|e| crate::open::to_py(&e, &output))?);
    let mut sync_opts = SyncOptions::new(allow);
    sync_opts.trust_recorded = trust_references;
    sync_opts.allow_removal = allow_removal;
    sync_opts.jobs = jobs;
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
    let result = crate::guard::detach(py, "sync", || -> Result<_, BuildError> {
        let plan = vzarr_build::sync::plan(&target, &sync_opts)?;
        if dry_run || plan.action == SyncAction::Nothing {
            return Ok((plan, None));
        }
        let mut opts = settings.options()?;
        opts.allow_gaps = allow_gaps;
        opts.time_units = time_units;
        let done = vzarr_build::sync::run(&plan, &target, opts, &on_progress, |mut out| {
            let started = std::time::Instant::now();
            let w = vzarr_build::sync::write(&plan, &out, &target, None)?;
            out.summary.add_write(started.elapsed().as_secs_f64());
            Ok::<_, BuildError>((out, crate::written_json(&w)))
        })?
        .transpose()?;
        Ok((plan, done))
    })?;
    let (plan, done) = result.map_err(|e| crate::to_py_from(py, &e, call))?;
    let plan_json = serde_json::json!({
        "output": plan.output,
        "action": plan.action,
        "dry_run": dry_run,
        "listed": plan.listed,
        "added": plan.added,
        "replaced": plan.changed,
        "removed": plan.removed,
        "unchanged": plan.unchanged,
    })
    .to_string();
    let Some((out, written)) = done else {
        return Ok((plan_json, Vec::new(), Vec::new(), None, None));
    };
    let summary = serde_json::to_string(&out.summary)
        .map_err(|e| crate::VzarrError::new_err(format!("summary: {e}")))?;
    let mut warnings = out.warnings;
    warnings.extend(out.plan.iter().flat_map(|p| p.left_out.iter().cloned()));
    Ok((
        plan_json,
        out.failures
            .into_iter()
            .map(|f| (f.source, f.reason))
            .collect(),
        warnings,
        Some(summary),
        Some(written),
    ))
}
