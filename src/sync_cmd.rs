//! `vzarr sync`: an output brought in line with its sources, through the library's
//! [`vzarr_build::sync`]; what it prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use vzarr_build::sync::{SyncAction, SyncOptions, SyncPlan};
use vzarr_build::{Format, Output, Progress};
use vzarr_scan::batch::BatchSummary;

use crate::flags::{OnErrorArg, ReportArgs, ScanArgs, SourceArgs};
use crate::print;

/// Arguments of `vzarr sync`.
#[derive(clap::Args, Clone)]
pub(crate) struct SyncArgs {
    /// The output to bring in line: a reference file (a local path, or an s3://, gs:// or
    /// az:// URL) or an Icechunk repository (a local directory, or s3://, gs:// or
    /// az://bucket/prefix).
    #[arg(value_name = "OUT.json|REPO")]
    pub(crate) output: String,
    /// The branch of an Icechunk repository to sync.
    #[arg(long, value_name = "BRANCH", default_value = "main")]
    pub(crate) branch: String,
    /// Allow listing and reading sources under this prefix: a local directory or a URL
    /// prefix such as s3://bucket/dir/ (repeatable; also $VZARR_ALLOW_PREFIXES and the
    /// allowed-prefixes file, as for verify). Every location the output records must be
    /// under one.
    #[arg(long = "allow-prefix", value_name = "PREFIX")]
    pub(crate) allow_prefix: Vec<String>,
    /// Also allow the locations the output records (only for outputs you made or trust).
    #[arg(long)]
    pub(crate) trust_references: bool,
    /// Print what would be added, replaced and removed; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Rebuild without the recorded sources that are gone (by default they are refused and
    /// nothing is written).
    #[arg(long)]
    pub(crate) allow_removal: bool,
    /// Scans in flight at once (default: every core; at least 128 when sources are on object
    /// storage); also the threads that plan and write (default: every core).
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    pub(crate) jobs: usize,
    /// What to do with a source that cannot be scanned.
    #[arg(long, value_enum, default_value = "fail")]
    pub(crate) on_error: OnErrorArg,
    /// Reuse scans stored under DIR (give the one the output was built with: a rebuild then
    /// scans only the new and changed sources); store new ones there.
    #[arg(long, value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Fail, writing nothing, when any variable or attribute has to be left out.
    #[arg(long)]
    pub(crate) strict: bool,
    /// A source whose scan takes longer than SECONDS fails (0: no limit).
    #[arg(long, value_name = "SECONDS", default_value_t = vzarr_build::DEFAULT_FILE_TIMEOUT_SECS)]
    pub(crate) file_timeout: u64,
    #[command(flatten)]
    pub(crate) scan: ScanArgs,
    /// Accept gaps along the concatenation coordinate (overlaps stay errors).
    #[arg(long)]
    pub(crate) allow_gaps: bool,
    /// Re-encode the CF time coordinate into these units (default: the first file's).
    #[arg(long, value_name = "UNITS")]
    pub(crate) time_units: Option<String>,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// Runs `vzarr sync`.
pub(crate) fn sync(args: SyncArgs) -> Result<ExitCode> {
    let format = if vzarr_icechunk::is_repository(&args.output) {
        Format::Icechunk
    } else {
        Format::Kerchunk
    };
    let output = Output::parse(&args.output, format, &args.branch)?;
    if !args.dry_run {
        output.check_writable()?;
    }
    args.report.check_writable()?;
    let source_args = SourceArgs {
        inputs: Vec::new(),
        catalog: Vec::new(),
        include: Vec::new(),
        exclude: Vec::new(),
        jobs: args.jobs,
        on_error: args.on_error,
        cache_dir: args.cache_dir.clone(),
        strict: args.strict,
        file_timeout: args.file_timeout,
        scan: args.scan.clone(),
    };
    let mut opts = crate::flags::build_options(&source_args, None)?;
    opts.allow_gaps = args.allow_gaps;
    opts.time_units.clone_from(&args.time_units);
    let mut allow = args.allow_prefix.clone();
    allow.extend(vzarr_read::configured_prefixes()?);
    let mut sync_opts = SyncOptions::new(allow);
    sync_opts.trust_recorded = args.trust_references;
    sync_opts.allow_removal = args.allow_removal;
    sync_opts.jobs = args.jobs;
    let plan = vzarr_build::sync::plan(&output, &sync_opts)?;
    print_plan(&plan, args.dry_run);
    let doc = |build: Option<(&BatchSummary, Option<&vzarr_build::Appended>)>| {
        summary_doc(&plan, args.dry_run, build)
    };
    if args.dry_run || matches!(plan.action, SyncAction::Nothing | SyncAction::Refuse) {
        write_summary(&args.report, &doc(None)?)?;
        if args.dry_run {
            println!("dry run: nothing written");
            return Ok(ExitCode::SUCCESS);
        }
    }
    if plan.action == SyncAction::Nothing {
        println!("{} is up to date: nothing written", plan.output);
        return Ok(ExitCode::SUCCESS);
    }
    let bar = print::progress_bar(0);
    let progress = |p: Progress<'_>| match p {
        Progress::Sources(n) => bar.set_length(n as u64),
        Progress::Scanned(..) => bar.inc(1),
        _ => bar.finish_and_clear(),
    };
    let action = vzarr_build::sync::action_name(plan.action);
    let done = vzarr_build::sync::run(&plan, &output, opts, &progress, |out| {
        print::warnings(&out.warnings);
        if let Some(r) = &out.plan {
            print::plan_report(r);
        }
        print::small_chunks(&out.small_chunks, action);
        // The summary goes out with the plan.
        if let Some(a) = &out.appended {
            print::appended(a, action);
        }
        print::finish_as(
            &out.dataset,
            &output,
            action,
            out.appended.as_ref(),
            &out.failures,
            &out.summary,
            &args.report,
            &|s| doc(Some((s, out.appended.as_ref()))),
        )
    });
    match done {
        Ok(Some(code)) => code,
        Ok(None) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
    }
}

/// A URL as printed: the path of a local file.
fn shown(url: &str) -> &str {
    url.strip_prefix("file://").unwrap_or(url)
}

/// Prints the plan: counts, then the sources added, replaced and removed (and with
/// `dry_run` the unchanged ones).
fn print_plan(plan: &SyncPlan, dry_run: bool) {
    println!(
        "sync {}: {} added, {} replaced, {} removed{}, {} unchanged",
        plan.output,
        plan.added.len(),
        plan.changed.len(),
        plan.removed.len(),
        if plan.action == SyncAction::Refuse {
            " (refused)"
        } else {
            ""
        },
        plan.unchanged.len()
    );
    if !plan.listed {
        println!(
            "  the output records no directory, prefix or catalog: only its sources were \
             checked, none can be added"
        );
    }
    for u in &plan.added {
        println!("  added     {}", shown(u));
    }
    for c in &plan.changed {
        println!("  replaced  {} ({})", shown(&c.url), c.changes.join("; "));
    }
    let gone = if plan.action == SyncAction::Refuse {
        "refused  "
    } else {
        "removed  "
    };
    for u in &plan.removed {
        println!("  {gone} {} (no longer there)", shown(u));
    }
    if dry_run {
        for u in &plan.unchanged {
            println!("  unchanged {}", shown(u));
        }
        let what = match plan.action {
            SyncAction::Nothing => "nothing to do".to_string(),
            SyncAction::Append => format!("would append {} file(s)", plan.added.len()),
            SyncAction::Rebuild => format!(
                "would replace the changed file(s) in place where that gives what a rebuild \
                 gives, else rebuild from {} file(s); in one write",
                plan.to_scan().len()
            ),
            _ => "would refuse: recorded sources are gone".to_string(),
        };
        println!("{what}");
    }
}

/// The sync's summary as JSON: the plan, and when a build ran its summary and how it was
/// planned (`planned`: at the tail, with the files replaced in place, or every file and why).
fn summary_doc(
    plan: &SyncPlan,
    dry_run: bool,
    build: Option<(&BatchSummary, Option<&vzarr_build::Appended>)>,
) -> Result<serde_json::Value> {
    let refused = plan.action == SyncAction::Refuse;
    let planned = build
        .and_then(|(_, a)| a)
        .map(vzarr_build::Appended::to_json);
    let build = build.map(|(s, _)| s);
    Ok(serde_json::json!({
        "output": plan.output,
        "action": plan.action,
        "dry_run": dry_run,
        "listed": plan.listed,
        "added": plan.added,
        "replaced": plan.changed,
        "removed": if refused { &[][..] } else { &plan.removed[..] },
        "refused": if refused { &plan.removed[..] } else { &[][..] },
        "unchanged": plan.unchanged.len(),
        "build": build.map(serde_json::to_value).transpose()?,
        "planned": planned,
    }))
}

/// Writes `doc` to `--summary-json`, if given.
fn write_summary(report: &ReportArgs, doc: &serde_json::Value) -> Result<()> {
    if let Some(p) = &report.summary_json {
        std::fs::write(p, serde_json::to_string_pretty(doc)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
