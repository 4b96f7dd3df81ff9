//! What the commands print: progress, warnings, the planner's report, and the closing lines of
//! a build (after writing its output, failure report and summary).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use vzarr_build::Failure;
use vzarr_core::summary::{human_bytes, summarize};
use vzarr_scan::batch::BatchSummary;

use vzarr_build::{Output, Written};

use crate::flags::ReportArgs;
use crate::hints::Hint;

/// Exit status of a build that left some sources out (`--on-error skip`).
pub(crate) const EXIT_PARTIAL: u8 = 2;

/// A progress bar on stderr when it is a terminal, hidden otherwise.
pub(crate) fn progress_bar(n: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(n as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "scanning {bar:40} {pos}/{len} files, {per_sec}, eta {eta} {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

pub(crate) fn warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("vzarr: warning: {w}");
    }
}

pub(crate) fn plan_report(r: &vzarr_plan::PlanReport) {
    println!(
        "combined {} files: {} arrays concatenated ({} rectilinear), {} kept once",
        r.order.len(),
        r.concatenated.len(),
        r.rectilinear.len(),
        r.kept_once.len()
    );
    if let Some(v) = &r.ordered_by {
        println!("files ordered by {v}");
    }
    if let Some(u) = &r.time_units {
        println!("time re-encoded as {u:?}");
    }
    println!(
        "padded edge chunks: {} trimmed to a shorter byte range, {} re-encoded inline ({})",
        r.trimmed_chunks,
        r.materialised_chunks,
        human_bytes(r.materialised_bytes)
    );
    for w in r.gaps.iter().chain(&r.left_out) {
        eprintln!("vzarr: warning: {w}");
    }
}

/// What was merged and inlined, and the arrays left referenced in small pieces (each a
/// warning, with the options of the subcommand `cmd` that would inline them).
pub(crate) fn small_chunks(r: &vzarr_plan::CompactReport, cmd: &str) {
    if r.references_before != r.references_after {
        println!(
            "small chunks: {} references -> {} ({} merged away, {} replaced by {} inline)",
            r.references_before,
            r.references_after,
            r.references_merged,
            r.references_inlined,
            human_bytes(r.inline_bytes)
        );
    }
    for left in &r.left_referenced {
        eprintln!("vzarr: warning: {left}");
    }
    if r.left_referenced
        .iter()
        .any(|l| !matches!(l.reason, vzarr_plan::LeftReason::Failed { .. }))
        && let Some(h) = Hint::InlineLimits.text_for(cmd)
    {
        eprintln!("vzarr: hint: {h}");
    }
}

/// What a build would merge and keep inline, for `vzarr inspect`.
pub(crate) fn survey_table(r: &vzarr_plan::CompactReport) -> String {
    use vzarr_plan::ArrayAction;
    let mut out = String::new();
    if r.arrays.is_empty() && r.left_referenced.is_empty() {
        return out;
    }
    out.push_str(&format!(
        "\nsmall chunks (what a build does with them): {} references -> {}\n",
        r.references_before, r.references_after
    ));
    for (path, actions) in &r.arrays {
        for a in actions {
            let what = match a {
                ArrayAction::Merged { from, to } => {
                    format!("{from} chunks merged into {to} larger virtual chunks")
                }
                ArrayAction::Inlined { references, bytes } => format!(
                    "kept inline ({} decoded) instead of {references} references",
                    human_bytes(*bytes)
                ),
                ArrayAction::SmallChunksInlined { chunks, bytes } => format!(
                    "{chunks} chunks under 1 KiB copied inline ({})",
                    human_bytes(*bytes)
                ),
                _ => continue,
            };
            out.push_str(&format!("  {path}: {what}\n"));
        }
    }
    for left in &r.left_referenced {
        out.push_str(&format!("  {left}\n"));
    }
    out
}

/// How an append or a sync (`action`) was planned: at the output's tail (changed files
/// replaced in place), or every file again and why.
pub(crate) fn appended(a: &vzarr_build::Appended, action: &str) {
    match a {
        vzarr_build::Appended::Tail {
            files,
            replaced: 0,
            changed,
            ..
        } => println!(
            "appended at the tail: {files} file(s) planned (the output's last and the new), {} array(s) changed",
            changed.len()
        ),
        vzarr_build::Appended::Tail {
            files,
            replaced,
            changed,
            ..
        } => println!(
            "{replaced} changed file(s) replaced in place: {files} file(s) planned (each changed one between its neighbours, the output's last and any new), {} array(s) changed",
            changed.len()
        ),
        vzarr_build::Appended::Full { reason } if action == "append" => {
            println!("appended by planning every file again: {reason}")
        }
        vzarr_build::Appended::Full { reason } => {
            println!("{action}: planned every file again: {reason}")
        }
        _ => {}
    }
}

/// Writes the output, the failure report and the summary; returns the exit status.
pub(crate) fn finish(
    ds: &vzarr_core::VirtualDataset,
    output: &Output,
    action: &str,
    appended: Option<&vzarr_build::Appended>,
    failures: &[Failure],
    summary: &BatchSummary,
    report: &ReportArgs,
) -> Result<ExitCode> {
    finish_as(
        ds,
        output,
        action,
        appended,
        failures,
        summary,
        report,
        &|s| {
            let mut json = serde_json::to_value(s)?;
            if let (Some(a), Some(map)) = (appended, json.as_object_mut()) {
                map.insert("append".into(), a.to_json());
            }
            Ok(json)
        },
    )
}

/// [`finish`] with the summary written to `--summary-json` as `summary_doc` makes it of the
/// build's summary.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_as(
    ds: &vzarr_core::VirtualDataset,
    output: &Output,
    action: &str,
    appended: Option<&vzarr_build::Appended>,
    failures: &[Failure],
    summary: &BatchSummary,
    report: &ReportArgs,
    summary_doc: &dyn Fn(&BatchSummary) -> Result<serde_json::Value>,
) -> Result<ExitCode> {
    let s = summarize(ds);
    if let Output::Kerchunk(_) = output
        && let Some(w) = vzarr_build::output::reference_file_warning(ds, appended)
    {
        warnings(&[w]);
        // `append` is `vzarr build --append`.
        let cmd = if action == "append" { "build" } else { action };
        if let Some(h) = Hint::IcechunkFormat.text_for(cmd) {
            eprintln!("vzarr: hint: {h}");
        }
    }
    let started = std::time::Instant::now();
    let written = vzarr_build::output::write(
        ds,
        output,
        action,
        action == "append",
        appended,
        Some(crate::release_free_memory),
    );
    // The write counts in the summary's time (for a large Icechunk build, most of it).
    let mut summary = summary.clone();
    summary.add_write(started.elapsed().as_secs_f64());
    // The library's Icechunk errors name the repository already.
    let written = match output {
        Output::Kerchunk(_) => written.with_context(|| format!("writing {}", output.display()))?,
        _ => written?,
    };
    // The default report sits beside a local output, or in the working directory, named
    // after the last segment of a URL.
    let out = output.display();
    let default_report = PathBuf::from(format!(
        "{}.failed.txt",
        if out.contains("://") {
            out.rsplit('/').next().unwrap_or("vzarr")
        } else {
            &out
        }
    ));
    match written {
        Written::Kerchunk { at } => {
            // Read at its tail: the dataset holds what the append wrote, the file the rest.
            let spliced = appended.and_then(vzarr_build::Appended::spliced).is_some();
            println!(
                "wrote {at}: {} arrays from {} file(s){} {} chunks referenced ({}), {} inline{}",
                s.arrays.len(),
                ds.provenance.sources.len(),
                if spliced {
                    format!("; the {action} wrote")
                } else {
                    ",".into()
                },
                s.total.referenced,
                human_bytes(s.total.referenced_bytes),
                s.total.inline,
                if spliced {
                    ", the rest of the file kept as it was".to_string()
                } else {
                    format!(", {} left out", s.skipped.len())
                }
            );
        }
        Written::Icechunk(w) => {
            println!(
                "wrote {} (Icechunk, branch {}, commit {}{}): {} arrays from {} file(s), {} virtual references ({}), {} native chunks, {} left out",
                w.location,
                w.branch,
                w.snapshot,
                if w.created { ", new repository" } else { "" },
                s.arrays.len(),
                ds.provenance.sources.len(),
                w.virtual_refs,
                human_bytes(s.total.referenced_bytes),
                w.native_chunks,
                s.skipped.len()
            );
            println!(
                "virtual chunk containers (a reader authorises these): {}",
                w.containers.join(", ")
            );
            if let Some(b) = &w.temporary_branch_left {
                eprintln!(
                    "vzarr: warning: could not delete the build's temporary branch {b:?} (nothing needs it; delete it by hand)"
                );
            }
            if w.commits > 1 {
                println!("written in {} pieces, one commit each", w.pieces);
            } else if w.pieces > 1 {
                println!("written in {} pieces, one commit", w.pieces);
            }
        }
        _ => {}
    }
    if action == "upgrade" {
        println!(
            "upgraded in {:.2} s ({:.2} s writing)",
            summary.total_seconds, summary.write_seconds
        );
    } else {
        println!(
            "{} files: {} scanned, {} from the cache, {} failed; {:.2} s ({:.2} s writing)",
            summary.files,
            summary.scanned,
            summary.cache_hits,
            summary.failed,
            summary.total_seconds,
            summary.write_seconds
        );
    }
    if let Some(p) = &report.summary_json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(&summary_doc(&summary)?)? + "\n",
        )
        .with_context(|| format!("writing {}", p.display()))?;
    }
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let path = report.report.clone().unwrap_or(default_report);
    vzarr_build::write_report(&path, failures)?;
    eprintln!(
        "vzarr: {} source(s) left out (listed in {}); the output is partial",
        failures.len(),
        path.display()
    );
    for f in failures.iter().take(5) {
        eprintln!("vzarr:   {}: {}", f.source, f.reason);
    }
    Ok(ExitCode::from(EXIT_PARTIAL))
}
