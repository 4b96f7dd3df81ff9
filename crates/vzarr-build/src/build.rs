//! Scanning sources and combining their scans: the whole of `vzarr build`.

use std::time::Instant;

use vzarr_core::VirtualDataset;
pub use vzarr_core::error_chain;
use vzarr_plan::{CompactReport, PlanOptions, PlanReport};
use vzarr_scan::batch::{BatchOptions, BatchSummary, Outcome, scan_all};
use vzarr_scan::inputs::SourceRef;
use vzarr_source::{Memo, Recorded, Stores};

use crate::{BuildError, BuildOptions, Failure, OnError};

/// The result of a build.
#[derive(Debug)]
pub struct BuildOutcome {
    /// The combined dataset.
    pub dataset: VirtualDataset,
    /// What the planner did, when several sources were combined.
    pub plan: Option<PlanReport>,
    /// What was merged and inlined.
    pub small_chunks: CompactReport,
    /// Counts and times.
    pub summary: BatchSummary,
    /// Sources left out (with [`OnError::Skip`]).
    pub failures: Vec<Failure>,
    /// Variables and attributes the scanners left out, as `source: path: reason`.
    pub warnings: Vec<String>,
    /// How an append was planned (`None` for a build).
    pub appended: Option<crate::Appended>,
}

/// Scanned datasets with their input positions, plus failures and warnings.
#[derive(Debug)]
pub struct Scanned {
    /// (input position, dataset), in input order.
    pub datasets: Vec<(usize, VirtualDataset)>,
    /// (input position, failure) of the sources that failed, in input order.
    pub failures: Vec<(usize, Failure)>,
    /// Left-out variables and attributes.
    pub warnings: Vec<String>,
    /// Counts and times of the scan.
    pub summary: BatchSummary,
}

/// Scans `sources`, applying the error policy and strictness; `progress` is called after each
/// source with whether it succeeded.
pub fn scan_sources(
    sources: &[SourceRef],
    opts: &BuildOptions,
    progress: &(dyn Fn(&SourceRef, bool) + Sync),
) -> Result<Scanned, BuildError> {
    let started = Instant::now();
    let batch = BatchOptions {
        jobs: opts.jobs,
        scan: opts.scan.clone(),
        cache: opts.cache.clone(),
        keep_going: opts.on_error == OnError::Skip,
        time_limit: opts.time_limit,
    };
    let outcomes: Vec<Outcome> = scan_all(sources, &batch, progress)?;
    let mut summary = BatchSummary::of_outcomes(&outcomes, started);
    summary.jobs = vzarr_scan::batch::scan_threads(sources, opts.jobs);
    let mut datasets = Vec::with_capacity(outcomes.len());
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    for (i, o) in outcomes.into_iter().enumerate() {
        match o.result {
            None => {}
            Some(Err(e)) => {
                if opts.on_error == OnError::Fail {
                    return Err(e.into());
                }
                failures.push((
                    i,
                    Failure {
                        source: o.source.display(),
                        reason: error_chain(&e),
                    },
                ));
            }
            Some(Ok(ds)) => {
                warnings.extend(left_out(&o.source, &ds, opts.strict)?);
                datasets.push((i, ds));
            }
        }
    }
    Ok(Scanned {
        datasets,
        failures,
        warnings,
        summary,
    })
}

/// The combined dataset of [`combine`], and what was done to make it.
#[derive(Debug)]
pub struct Combined {
    /// The dataset.
    pub dataset: VirtualDataset,
    /// What the planner did, when several sources were combined.
    pub plan: Option<PlanReport>,
    /// What was merged and inlined.
    pub small_chunks: CompactReport,
    /// Sources the planner left out (with [`OnError::Skip`]).
    pub failures: Vec<Failure>,
}

/// Combines scanned datasets (in input order) into one, then merges and inlines its small
/// chunks as [`BuildOptions::small_chunks`] says ([`vzarr_plan::compact`]). A single dataset
/// is taken as it is, several are planned, which reads what it needs (coordinates, static
/// variables, edge chunks) through the byte layer. Several without a way to combine them is
/// an error that suggests one. With [`OnError::Skip`], a file the planner cannot combine with
/// the others (a variable that differs, a coordinate that overlaps, a chunk it cannot read)
/// is left out, reported in the returned failures, and the rest is planned again.
pub fn combine(datasets: Vec<VirtualDataset>, opts: &BuildOptions) -> Result<Combined, BuildError> {
    let sources = Memo::new(Stores::default());
    let (mut dataset, plan, failures) = plan_all(datasets, opts, &sources)?;
    if opts.strict
        && let Some(p) = &plan
        && let Some(first) = p.left_out.first()
    {
        return Err(BuildError::StrictPlan {
            count: p.left_out.len(),
            first: first.clone(),
        });
    }
    // Sources are opened from the records of their scans: no request to open an object.
    let recorded = Recorded::new(&sources, dataset.provenance.sources.clone());
    let policy = opts.small_chunks.unwrap_or_default();
    let small_chunks =
        vzarr_plan::compact(&mut dataset, &policy, vzarr_plan::Grids::Any, &recorded)?;
    Ok(Combined {
        dataset,
        plan,
        small_chunks,
        failures,
    })
}

/// The planning part of [`combine`].
fn plan_all(
    mut datasets: Vec<VirtualDataset>,
    opts: &BuildOptions,
    sources: &Memo<Stores>,
) -> Result<(VirtualDataset, Option<PlanReport>, Vec<Failure>), BuildError> {
    let Some(concat) = opts.concat.clone() else {
        let n = datasets.len();
        return match n {
            0 => Err(BuildError::NothingScanned),
            1 => Ok((
                datasets.into_iter().next().expect("one dataset"),
                None,
                vec![],
            )),
            _ => Err(BuildError::HowToCombine {
                count: n,
                suggestion: vzarr_plan::suggest_concat_dim(&datasets),
            }),
        };
    };
    let plan_opts = PlanOptions::new(concat)
        .with_allow_gaps(opts.allow_gaps)
        .with_time_units(opts.time_units.clone())
        .with_order_by(opts.order_by.clone());
    let mut failures = Vec::new();
    loop {
        if datasets.is_empty() {
            return Err(BuildError::NothingScanned);
        }
        let skip = opts.on_error == OnError::Skip && datasets.len() > 1;
        let attempt = if skip {
            vzarr_plan::plan(datasets.clone(), &plan_opts, sources)
        } else {
            vzarr_plan::plan(std::mem::take(&mut datasets), &plan_opts, sources)
        };
        let e = match attempt {
            Ok((ds, report)) => return Ok((ds, Some(report), failures)),
            Err(e) => e,
        };
        let odd = e.file().map(str::to_string);
        let pos = odd.as_deref().and_then(|url| {
            datasets
                .iter()
                .position(|d| d.provenance.sources.iter().any(|s| s.url == url))
        });
        match (skip, pos) {
            (true, Some(k)) => {
                let url = odd.unwrap_or_default();
                failures.push(Failure {
                    source: url.strip_prefix("file://").unwrap_or(&url).to_string(),
                    reason: error_chain(&e),
                });
                datasets.remove(k);
            }
            _ => return Err(e.into()),
        }
    }
}

/// What the scan `ds` of `source` left out (variables, attributes), as warnings
/// `source: path: reason`; with `strict`, an error when it left out anything.
pub fn left_out(
    source: &SourceRef,
    ds: &VirtualDataset,
    strict: bool,
) -> Result<Vec<String>, BuildError> {
    if strict && !ds.skipped.is_empty() {
        return Err(BuildError::Strict {
            file: source.display(),
            count: ds.skipped.len(),
        });
    }
    Ok(ds
        .skipped
        .iter()
        .map(|s| format!("{}: {}: {}", source.display(), s.path, s.reason))
        .collect())
}

/// Scans and combines `sources`; the dataset's provenance records [`BuildOptions::inputs`].
pub fn build(
    sources: &[SourceRef],
    opts: &BuildOptions,
    progress: &(dyn Fn(&SourceRef, bool) + Sync),
) -> Result<BuildOutcome, BuildError> {
    let started = Instant::now();
    if sources.is_empty() {
        return Err(BuildError::NoInputs);
    }
    let mut scanned = scan_sources(sources, opts, progress)?;
    let datasets = std::mem::take(&mut scanned.datasets);
    let combined = combine(datasets.into_iter().map(|(_, d)| d).collect(), opts)?;
    Ok(outcome(scanned, combined, opts, started))
}

/// The outcome of a scan (its datasets taken) and of their combination: the dataset records
/// [`BuildOptions::inputs`], the summary the output's totals, the failures both steps'.
pub(crate) fn outcome(
    scanned: Scanned,
    mut combined: Combined,
    opts: &BuildOptions,
    started: Instant,
) -> BuildOutcome {
    let mut summary = scanned.summary;
    combined.dataset.provenance.inputs.clone_from(&opts.inputs);
    fill_totals(&mut summary, &combined, started);
    let mut failures: Vec<Failure> = scanned.failures.into_iter().map(|(_, f)| f).collect();
    summary.failed += combined.failures.len();
    failures.extend(combined.failures);
    BuildOutcome {
        dataset: combined.dataset,
        plan: combined.plan,
        small_chunks: combined.small_chunks,
        summary,
        failures,
        warnings: scanned.warnings,
        appended: None,
    }
}

/// Runs `f` with the parallel parts of planning and writing (variables planned at once,
/// references rendered in pieces) on at most `jobs` threads, every core when `jobs` is 0.
/// Scans take their own threads ([`BuildOptions::jobs`]).
pub fn with_jobs<T: Send>(jobs: usize, f: impl FnOnce() -> T + Send) -> T {
    if jobs == 0 {
        return f();
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("vzarr-plan-{i}"))
        .build();
    match pool {
        Ok(pool) => pool.install(f),
        // Only a thread count, not a correctness matter: the current threads will do.
        Err(_) => f(),
    }
}

/// Adds the output's totals to a summary.
pub fn fill_totals(summary: &mut BatchSummary, combined: &Combined, started: Instant) {
    let s = vzarr_core::summary::summarize(&combined.dataset);
    let small = &combined.small_chunks;
    summary.references_merged = small.references_merged;
    summary.references_inlined = small.references_inlined;
    summary.bytes_inlined = small.inline_bytes;
    summary.arrays = s.arrays.len();
    summary.chunks = s.total.referenced;
    summary.inline_chunks = s.total.inline;
    summary.bytes_referenced = s.total.referenced_bytes;
    summary.total_seconds = started.elapsed().as_secs_f64();
}
