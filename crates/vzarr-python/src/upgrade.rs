//! `vzarr.upgrade`: existing references (kerchunk's JSON or Parquet, Zarr v2 or v3) to vzarr's
//! output, through the same library calls as `vzarr upgrade`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_build::upgrade::{UpgradeOptions, upgrade as run_upgrade};
use vzarr_build::{Format, Output, Settings};

/// What an upgrade gives Python: the references as JSON bytes (without `output`), the
/// warnings (variables left out), and what was written (JSON text, with `output`).
type Upgraded = (Option<Py<PyBytes>>, Vec<String>, Option<String>);

/// Upgrades the references at `refs` (a kerchunk JSON file, or a directory of kerchunk's
/// Parquet references): returns them as vzarr's JSON references, or writes them to `output`
/// (with `format="icechunk"` a repository). Sources must be under `allow_prefixes` (plus the
/// environment's and the configuration file's), or anywhere with `trust_references`.
#[pyfunction]
#[pyo3(signature = (
    refs, *, allow_prefixes, trust_references, small_chunks, chunk_target, inline_max,
    inline_total, output, format, branch, rescan, concat_dim, leave_out_defective, sources
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn upgrade(
    py: Python<'_>,
    refs: String,
    allow_prefixes: Vec<String>,
    trust_references: bool,
    small_chunks: Option<String>,
    chunk_target: Option<String>,
    inline_max: Option<String>,
    inline_total: Option<String>,
    output: Option<String>,
    format: &str,
    branch: &str,
    rescan: bool,
    concat_dim: Option<String>,
    leave_out_defective: bool,
    sources: Vec<String>,
) -> PyResult<Upgraded> {
    if rescan && leave_out_defective {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "rescan and leave_out_defective: choose one",
        ));
    }
    if concat_dim.is_some() && !rescan {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "concat_dim applies to rescan=True only",
        ));
    }
    let format: Format = format.parse().map_err(crate::value_error("format"))?;
    let output = output
        .map(|o| Output::parse(&o, format, branch))
        .transpose()
        .map_err(|e| crate::to_py_from(py, &e, crate::Call::Upgrade))?;
    if output.is_none() && format != Format::Kerchunk {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "format=\"icechunk\" needs output= (the repository)",
        ));
    }
    let small = [small_chunks, chunk_target, inline_max, inline_total];
    let (settings, policy) = crate::with_small_chunks(
        Settings {
            concat_dim,
            ..Settings::new()
        },
        small,
    )?;
    let mut allow = allow_prefixes;
    allow.extend(vzarr_read::configured_prefixes().map_err(|e| crate::open::to_py(&e, &refs))?);
    let mut parsed = crate::guard::detach(py, &refs, || {
        vzarr_read::load(&refs, vzarr_read::ParseLimits::default())
    })?
    .map_err(|e| crate::open::to_py(&e, &refs))?;
    let mut opts = UpgradeOptions::new(&refs, allow.clone());
    opts.trust_references = trust_references;
    opts.small_chunks = policy;
    if rescan {
        return rescan_sources(py, parsed, &opts, settings, output.as_ref(), &refs);
    }
    if leave_out_defective {
        let mut checked = crate::guard::detach(py, &refs, || {
            vzarr_build::upgrade::sources(parsed.clone(), &opts)
        })?
        .map_err(|e| crate::to_py_from(py, &e, crate::Call::Upgrade))?;
        checked.extend(allow);
        parsed = crate::guard::detach(py, &refs, || {
            vzarr_verify::without_defective(parsed, &refs, checked, sources)
        })?
        .map_err(|e| crate::open::to_py(&e, &refs))?
        .0;
    }
    let done = crate::guard::detach(py, &refs, || -> Result<_, vzarr_build::BuildError> {
        let up = run_upgrade(parsed, &opts)?;
        let warnings: Vec<String> = up
            .dataset
            .skipped
            .iter()
            .map(|s| format!("{}: left out: {}", s.path, s.reason))
            .collect();
        Ok(match &output {
            Some(target) => {
                let w =
                    vzarr_build::output::write(&up.dataset, target, "upgrade", false, None, None)?;
                (None, warnings, Some(crate::written_json(&w)))
            }
            None => (Some(vzarr_kerchunk::to_bytes(&up.dataset)?), warnings, None),
        })
    })?;
    let (bytes, warnings, written) =
        done.map_err(|e| crate::to_py_from(py, &e, crate::Call::Upgrade))?;
    Ok((
        bytes.map(|b| PyBytes::new(py, &b).unbind()),
        warnings,
        written,
    ))
}

/// `vzarr.upgrade(rescan=True)`: a build of the sources the references point into (checked
/// against the allowed prefixes first), as `vzarr upgrade --rescan` does.
fn rescan_sources(
    py: Python<'_>,
    parsed: vzarr_read::ParsedRefs,
    opts: &UpgradeOptions,
    settings: Settings,
    output: Option<&Output>,
    refs: &str,
) -> PyResult<Upgraded> {
    let done = crate::guard::detach(py, refs, || -> Result<_, vzarr_build::BuildError> {
        let urls = vzarr_build::upgrade::sources(parsed, opts)?;
        let sources = urls
            .iter()
            .map(|u| vzarr_scan::inputs::SourceRef::parse(u))
            .collect::<Result<Vec<_>, _>>()?;
        let build_opts = settings.options()?;
        vzarr_build::run(sources, build_opts, None, &|_| {}, |mut out| {
            out.dataset.provenance.upgraded_from = Some(refs.to_string());
            let mut warnings = out.warnings.clone();
            warnings.extend(out.plan.iter().flat_map(|p| p.left_out.iter().cloned()));
            Ok(match output {
                Some(target) => {
                    let w = vzarr_build::output::write(
                        &out.dataset,
                        target,
                        "upgrade",
                        false,
                        None,
                        None,
                    )?;
                    (None, warnings, Some(crate::written_json(&w)))
                }
                None => (
                    Some(vzarr_kerchunk::to_bytes(&out.dataset)?),
                    warnings,
                    None,
                ),
            })
        })?
    })?;
    let (bytes, warnings, written) =
        done.map_err(|e| crate::to_py_from(py, &e, crate::Call::Upgrade))?;
    Ok((
        bytes.map(|b| PyBytes::new(py, &b).unbind()),
        warnings,
        written,
    ))
}
