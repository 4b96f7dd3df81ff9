//! `vzarr build`, `scan`, `combine` and `inspect`: library calls and what they print.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use vzarr_build::shard::Shard;
use vzarr_build::{BuildError, BuildOptions, Progress};
use vzarr_core::summary::summarize;
use vzarr_scan::batch::BatchSummary;
use vzarr_scan::inputs::SourceRef;

use vzarr_build::Output;

use crate::flags::ReportArgs;
use crate::print;

/// Runs `vzarr build` (with `--append`, the output's recorded sources come first).
pub(crate) fn build(
    sources: Vec<SourceRef>,
    opts: BuildOptions,
    output: &Output,
    append: bool,
    report: &ReportArgs,
) -> Result<ExitCode> {
    output.check_writable()?;
    report.check_writable()?;
    let bar = print::progress_bar(0);
    let progress = |p: Progress<'_>| match p {
        Progress::Sources(n) => bar.set_length(n as u64),
        Progress::Scanned(..) => bar.inc(1),
        _ => bar.finish_and_clear(),
    };
    vzarr_build::run(sources, opts, append.then_some(output), &progress, |out| {
        print::warnings(&out.warnings);
        if let Some(r) = &out.plan {
            print::plan_report(r);
        }
        print::small_chunks(&out.small_chunks, "build");
        let action = if append { "append" } else { "build" };
        if let Some(a) = &out.appended {
            print::appended(a, action);
        }
        print::finish(
            &out.dataset,
            output,
            action,
            out.appended.as_ref(),
            &out.failures,
            &out.summary,
            report,
        )
    })?
}

/// Runs `vzarr scan --shard K/N`: scans one shard into a partial file.
pub(crate) fn scan(
    all: Vec<SourceRef>,
    opts: BuildOptions,
    shard: Shard,
    output: &Path,
) -> Result<ExitCode> {
    if all.is_empty() {
        return Err(BuildError::NoInputs.into());
    }
    vzarr_build::output::check_file_writable(output)?;
    let mine = (0..all.len()).filter(|&i| shard.contains(i)).count();
    let bar = print::progress_bar(mine);
    let scanned = vzarr_build::shard::scan_shard(&all, shard, &opts, &|_, _| bar.inc(1));
    bar.finish_and_clear();
    let scanned = scanned?;
    print::warnings(&scanned.warnings);
    vzarr_build::shard::write_partial(output, shard, all.len(), &scanned, opts.inputs.as_ref())?;
    println!(
        "wrote {}: shard {}/{}, {mine} of {} sources ({} scanned, {} from the cache, {} failed)",
        output.display(),
        shard.k,
        shard.n,
        all.len(),
        scanned.summary.scanned,
        scanned.summary.cache_hits,
        scanned.summary.failed
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `vzarr combine`: plans and writes from the partial scans of every shard.
pub(crate) fn combine(
    partials: &[PathBuf],
    opts: &BuildOptions,
    output: &Output,
    report: &ReportArgs,
) -> Result<ExitCode> {
    output.check_writable()?;
    report.check_writable()?;
    vzarr_build::with_jobs(opts.jobs, || {
        combine_in_pool(partials, opts, output, report)
    })
}

fn combine_in_pool(
    partials: &[PathBuf],
    opts: &BuildOptions,
    output: &Output,
    report: &ReportArgs,
) -> Result<ExitCode> {
    let started = Instant::now();
    let (datasets, mut failures, warnings, inputs) = vzarr_build::shard::read_partials(partials)?;
    print::warnings(&warnings);
    let files = datasets.len() + failures.len();
    let mut combined = vzarr_build::combine(datasets, opts)?;
    combined.dataset.provenance.inputs = inputs;
    failures.extend(combined.failures.iter().cloned());
    if let Some(r) = &combined.plan {
        print::plan_report(r);
    }
    print::small_chunks(&combined.small_chunks, "combine");
    let mut summary = BatchSummary {
        files,
        failed: failures.len(),
        ..Default::default()
    };
    vzarr_build::fill_totals(&mut summary, &combined, started);
    print::finish(
        &combined.dataset,
        output,
        "combine",
        None,
        &failures,
        &summary,
        report,
    )
}

/// Runs `vzarr inspect` on an Icechunk repository: what a branch's tip holds, and its history.
pub(crate) fn inspect_repo(
    location: &vzarr_icechunk::RepoLocation,
    branch: &str,
    json: bool,
) -> Result<ExitCode> {
    let opened = vzarr_icechunk::open(location, branch, vzarr_core::MAX_REFERENCES)?;
    let history = vzarr_icechunk::history(location, branch)?;
    let s = summarize(&opened.dataset);
    if json {
        let v = serde_json::json!({
            "repository": location.display(),
            "branch": branch,
            "snapshot": opened.snapshot,
            "history": history,
            "dataset": s,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "Icechunk repository {}, branch {branch}, snapshot {}",
            location.display(),
            opened.snapshot
        );
        for c in &history {
            println!("  {} {} {}", c.id, c.written_at, c.message);
        }
        print!("{}", s.to_table());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `vzarr inspect`: what the scanner sees in one file, and what a build would merge and
/// keep inline.
pub(crate) fn inspect(
    source: &SourceRef,
    scan: &vzarr_scan::ScanOptions,
    small: &vzarr_core::SmallChunkPolicy,
    json: bool,
) -> Result<ExitCode> {
    let ds = vzarr_scan::scan_source(source, scan)?;
    let s = summarize(&ds);
    let survey = vzarr_plan::survey(&ds, small, vzarr_plan::Grids::Any);
    if json {
        let mut v = serde_json::to_value(&s)?;
        v["small_chunks"] = serde_json::to_value(&survey)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", s.to_table());
        print!("{}", print::survey_table(&survey));
    }
    Ok(ExitCode::SUCCESS)
}
