//! Build orchestration: sources in, one virtual dataset out.
//!
//! [`build`] scans sources in parallel (through the scan cache), goes on past bad files when
//! asked, and combines the scans with the planner. [`write_partial`] and [`read_partials`]
//! split the same work across processes (`vzarr scan --shard K/N` writes a partial, `vzarr
//! combine` plans from all of them); [`recorded_sources`] gives the sources of an existing
//! output so that `--append` rebuilds it with new files, reusing cached scans of the old ones.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use vzarr_core::record::{from_record, to_record};
use vzarr_core::{Provenance, VirtualDataset};
use vzarr_plan::{Concat, PlanOptions, PlanReport};
use vzarr_scan::ScanOptions;
use vzarr_scan::batch::{BatchOptions, BatchSummary, Outcome, scan_all};
use vzarr_scan::cache::ScanCache;
use vzarr_scan::inputs::SourceRef;

/// What to do with a source that cannot be scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Stop; write nothing.
    Fail,
    /// Leave it out, report it, build the rest.
    Skip,
}

/// Options of a build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Options of each scan.
    pub scan: ScanOptions,
    /// Scanning threads (0: every core).
    pub jobs: usize,
    /// Bad sources: stop or skip.
    pub on_error: OnError,
    /// Scan cache, if any.
    pub cache: Option<ScanCache>,
    /// Fail when a variable or attribute has to be left out.
    pub strict: bool,
    /// How to combine several sources.
    pub concat: Option<Concat>,
    /// Accept gaps along the concatenation coordinate.
    pub allow_gaps: bool,
    /// Units to re-encode CF time into.
    pub time_units: Option<String>,
}

/// A source that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Source path or URL.
    pub source: String,
    /// Why.
    pub reason: String,
}

/// The result of a build.
#[derive(Debug)]
pub struct BuildOutcome {
    /// The combined dataset.
    pub dataset: VirtualDataset,
    /// What the planner did, when several sources were combined.
    pub plan: Option<PlanReport>,
    /// Counts and times.
    pub summary: BatchSummary,
    /// Sources left out (with `OnError::Skip`).
    pub failures: Vec<Failure>,
    /// Variables and attributes the scanners left out, as `source: path: reason`.
    pub warnings: Vec<String>,
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A source could not be scanned (with `OnError::Fail`).
    #[error(transparent)]
    Scan(#[from] vzarr_scan::ScanError),
    /// The scans could not be combined.
    #[error(transparent)]
    Plan(#[from] vzarr_plan::PlanError),
    /// Writing the output failed.
    #[error(transparent)]
    Write(#[from] vzarr_kerchunk::WriteError),
    /// Anything else, with a message for the user.
    #[error("{0}")]
    Other(String),
}

fn other(msg: impl Into<String>) -> BuildError {
    BuildError::Other(msg.into())
}

/// Scanned datasets with their input positions, plus failures and warnings.
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

/// Scans `sources`, applying the error policy and `--strict`.
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
    };
    let outcomes: Vec<Outcome> = scan_all(sources, &batch, progress)?;
    let summary = BatchSummary::of_outcomes(&outcomes, started);
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
                        reason: e.to_string(),
                    },
                ));
            }
            Some(Ok(ds)) => {
                for s in &ds.skipped {
                    warnings.push(format!("{}: {}: {}", o.source.display(), s.path, s.reason));
                }
                if opts.strict && !ds.skipped.is_empty() {
                    return Err(other(format!(
                        "{}: {} item(s) would be left out and --strict is set; nothing written",
                        o.source.display(),
                        ds.skipped.len()
                    )));
                }
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

/// Combines scanned datasets (in input order) into one: a single dataset as it is, several
/// with the planner. Several without a way to combine them is an error that suggests one.
pub fn combine(
    datasets: Vec<VirtualDataset>,
    opts: &BuildOptions,
) -> Result<(VirtualDataset, Option<PlanReport>), BuildError> {
    let Some(concat) = opts.concat.clone() else {
        let n = datasets.len();
        if n == 1 {
            return Ok((datasets.into_iter().next().expect("one"), None));
        }
        if n == 0 {
            return Err(other("no source could be scanned; nothing written"));
        }
        let hint = match vzarr_plan::suggest_concat_dim(&datasets) {
            Some(d) => format!("--concat-dim {d} (the unlimited dimension of every file)"),
            None => "--concat-dim DIM".to_string(),
        };
        return Err(other(format!(
            "{n} input files: say how to combine them with {hint}, or --new-dim NAME to stack them"
        )));
    };
    if datasets.is_empty() {
        return Err(other("no source could be scanned; nothing written"));
    }
    let plan_opts = PlanOptions {
        concat,
        allow_gaps: opts.allow_gaps,
        time_units: opts.time_units.clone(),
    };
    let reader = vzarr_source::RemoteReader::new();
    let (ds, report) = vzarr_plan::plan(datasets, &plan_opts, &reader)?;
    Ok((ds, Some(report)))
}

/// Scans and combines `sources`.
pub fn build(
    sources: &[SourceRef],
    opts: &BuildOptions,
    progress: &(dyn Fn(&SourceRef, bool) + Sync),
) -> Result<BuildOutcome, BuildError> {
    let started = Instant::now();
    if sources.is_empty() {
        return Err(other("no input files"));
    }
    let scanned = scan_sources(sources, opts, progress)?;
    let mut summary = scanned.summary;
    let (dataset, plan) = combine(scanned.datasets.into_iter().map(|(_, d)| d).collect(), opts)?;
    fill_totals(&mut summary, &dataset, started);
    let failures = scanned.failures.into_iter().map(|(_, f)| f).collect();
    Ok(BuildOutcome {
        dataset,
        plan,
        summary,
        failures,
        warnings: scanned.warnings,
    })
}

/// Adds the output's totals to a summary.
pub fn fill_totals(summary: &mut BatchSummary, ds: &VirtualDataset, started: Instant) {
    let s = vzarr_core::summary::summarize(ds);
    summary.arrays = s.arrays.len();
    summary.chunks = s.total.referenced;
    summary.inline_chunks = s.total.inline;
    summary.bytes_referenced = s.total.referenced_bytes;
    summary.total_seconds = started.elapsed().as_secs_f64();
}

/// The sources of an existing output, in its concatenation order, and how it was combined.
pub fn recorded_sources(output: &Path) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        vzarr: Option<Provenance>,
    }
    let file =
        std::fs::File::open(output).map_err(|e| other(format!("{}: {e}", output.display())))?;
    let head: Head = serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| {
        other(format!(
            "{}: not a vzarr reference file: {e}",
            output.display()
        ))
    })?;
    let prov = head.vzarr.ok_or_else(|| {
        other(format!(
            "{}: has no vzarr provenance block; rebuild it instead of appending",
            output.display()
        ))
    })?;
    let urls: Vec<String> = match &prov.concat {
        Some(c) => c.pieces.iter().map(|p| p.url.clone()).collect(),
        None => prov.sources.iter().map(|s| s.url.clone()).collect(),
    };
    let sources = urls
        .into_iter()
        .map(|u| match u.strip_prefix("file://") {
            Some(p) => SourceRef::Local(p.into()),
            None => SourceRef::Url(u),
        })
        .collect();
    Ok((sources, prov))
}

/// `K/N`: shard K (0-based) of N.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard {s:?}: expected K/N, e.g. 0/8"))?;
    let k: usize = k
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s:?}: K is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s:?}: N is not a number"))?;
    if n == 0 || k >= n {
        return Err(format!("--shard {s:?}: need 0 <= K < N"));
    }
    Ok((k, n))
}

/// Writes the scans of shard `k` of `n` (every n-th source starting at k of `total` sources;
/// positions in `scanned` are positions among all sources) to `path`, atomically.
pub fn write_partial(
    path: &Path,
    shard: (usize, usize),
    total: usize,
    scanned: &Scanned,
) -> Result<(), BuildError> {
    let mut entries: Vec<(usize, Value)> = scanned
        .datasets
        .iter()
        .map(|(i, ds)| (*i, json!({"index": i, "record": to_record(ds)})))
        .collect();
    entries.extend(
        scanned
            .failures
            .iter()
            .map(|(i, f)| (*i, json!({"index": i, "failure": f}))),
    );
    entries.sort_by_key(|(i, _)| *i);
    let doc = json!({
        "vzarr_partial": 1,
        "shard": [shard.0, shard.1],
        "total": total,
        "warnings": scanned.warnings,
        "scans": entries.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    });
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let io = |e: std::io::Error| other(format!("{}: {e}", path.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
    serde_json::to_writer(std::io::BufWriter::new(&mut tmp), &doc).map_err(|e| io(e.into()))?;
    tmp.flush().map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// The content of all partial scans: datasets in source order, failures, warnings.
pub type Partials = (Vec<VirtualDataset>, Vec<Failure>, Vec<String>);

/// Reads the partials of every shard and returns the datasets in source order, the failures
/// and the warnings; a missing, repeated or inconsistent shard is an error.
pub fn read_partials(paths: &[std::path::PathBuf]) -> Result<Partials, BuildError> {
    let mut shards: Vec<(usize, usize, usize)> = Vec::new();
    let mut entries: Vec<(usize, Result<VirtualDataset, Failure>)> = Vec::new();
    let mut warnings = Vec::new();
    for p in paths {
        let text = std::fs::read(p).map_err(|e| other(format!("{}: {e}", p.display())))?;
        let v: Value =
            serde_json::from_slice(&text).map_err(|e| other(format!("{}: {e}", p.display())))?;
        let bad = |what: &str| other(format!("{}: not a vzarr partial scan: {what}", p.display()));
        if v.get("vzarr_partial").and_then(Value::as_u64) != Some(1) {
            return Err(bad("no version 1 marker"));
        }
        let shard = v
            .get("shard")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no shard"))?;
        let k = shard
            .first()
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("shard"))? as usize;
        let n = shard
            .get(1)
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("shard"))? as usize;
        let total = v
            .get("total")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("total"))? as usize;
        shards.push((k, n, total));
        if let Some(w) = v.get("warnings").and_then(Value::as_array) {
            warnings.extend(w.iter().filter_map(Value::as_str).map(str::to_string));
        }
        for e in v
            .get("scans")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no scans"))?
        {
            let i = e
                .get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad("index"))? as usize;
            if i % n != k || i >= total {
                return Err(bad(&format!("source {i} does not belong to shard {k}/{n}")));
            }
            if let Some(rec) = e.get("record") {
                entries.push((
                    i,
                    Ok(from_record(rec).map_err(|err| other(format!("{}: {err}", p.display())))?),
                ));
            } else {
                let f: Failure =
                    serde_json::from_value(e.get("failure").cloned().unwrap_or_default())
                        .map_err(|_| bad("failure entry"))?;
                entries.push((i, Err(f)));
            }
        }
    }
    let (n, total) = match shards.first() {
        Some(&(_, n, t)) => (n, t),
        None => return Err(other("no partial scans given")),
    };
    if shards.iter().any(|&(_, m, t)| m != n || t != total) {
        return Err(other(
            "the partial scans come from different shardings (N or the source count differ)",
        ));
    }
    let mut ks: Vec<usize> = shards.iter().map(|s| s.0).collect();
    ks.sort_unstable();
    if ks != (0..n).collect::<Vec<_>>() {
        let list = |v: Vec<usize>| {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let missing = list((0..n).filter(|k| ks.binary_search(k).is_err()).collect());
        let mut twice: Vec<usize> = ks
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        twice.dedup();
        let mut problems = Vec::new();
        if !missing.is_empty() {
            problems.push(format!("missing shard(s) {missing} of {n}"));
        }
        if !twice.is_empty() {
            problems.push(format!("shard(s) {} given more than once", list(twice)));
        }
        let mut msg = problems.join("; ");
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        return Err(other(format!(
            "{msg}need the partial scans of shards 0..{n} exactly once each; got {ks:?}"
        )));
    }
    entries.sort_by_key(|(i, _)| *i);
    let mut datasets = Vec::new();
    let mut failures = Vec::new();
    for (_, e) in entries {
        match e {
            Ok(ds) => datasets.push(ds),
            Err(f) => failures.push(f),
        }
    }
    Ok((datasets, failures, warnings))
}

/// Writes a failure report: one line per source, `source<TAB>reason`.
pub fn write_report(path: &Path, failures: &[Failure]) -> Result<(), BuildError> {
    let mut text = String::new();
    for f in failures {
        text.push_str(&format!(
            "{}\t{}\n",
            f.source,
            f.reason.replace(['\n', '\t'], " ")
        ));
    }
    std::fs::write(path, text).map_err(|e| other(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse() {
        assert_eq!(parse_shard("0/4"), Ok((0, 4)));
        assert_eq!(parse_shard(" 3 / 4 "), Ok((3, 4)));
        assert!(parse_shard("4/4").is_err());
        assert!(parse_shard("1/0").is_err());
        assert!(parse_shard("x").is_err());
    }

    #[test]
    fn combine_names_missing_and_repeated_shards() {
        let dir = tempfile::tempdir().unwrap();
        let part = |k: usize| {
            let p = dir.path().join(format!("part-{k}.json"));
            let scanned = Scanned {
                datasets: vec![],
                failures: vec![],
                warnings: vec![],
                summary: BatchSummary::default(),
            };
            write_partial(&p, (k, 5), 12, &scanned).unwrap();
            p
        };
        let err = |paths: &[std::path::PathBuf]| match read_partials(paths) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("combined an incomplete set of partials"),
        };
        let e = err(&[part(0), part(1), part(3), part(4)]);
        assert!(e.starts_with("missing shard(s) 2 of 5: "), "{e}");
        assert!(e.contains("exactly once each; got [0, 1, 3, 4]"), "{e}");
        let e = err(&[part(4), part(1), part(1), part(0)]);
        assert!(
            e.starts_with("missing shard(s) 2, 3 of 5; shard(s) 1 given more than once: "),
            "{e}"
        );
    }
}
