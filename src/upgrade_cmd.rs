//! `vzarr upgrade`: existing references (kerchunk's JSON or Parquet, Zarr v2 or v3) to vzarr's
//! output, through the library's loader, upgrade and writers.

use std::process::ExitCode;

use anyhow::Result;
use vzarr_build::Settings;
use vzarr_build::upgrade::{UpgradeOptions, upgrade as run_upgrade};
use vzarr_scan::batch::BatchSummary;

use crate::flags::{CombineArgs, OutputArgs, ReportArgs, SmallChunkArgs};
use crate::print;

/// Arguments of `vzarr upgrade`. How several sources are combined (`CombineArgs`) applies to
/// `--rescan` only.
#[derive(clap::Args, Clone)]
#[command(mut_group("CombineArgs", |g| g.requires("rescan")))]
pub(crate) struct UpgradeArgs {
    /// The references: a kerchunk JSON file (version 0 or 1, Zarr v2 or v3 metadata), or a
    /// directory (or object-store prefix) of kerchunk's Parquet references.
    #[arg(value_name = "REFS")]
    pub(crate) refs: String,
    /// Allow reading sources under this prefix: a local directory or a URL prefix such as
    /// s3://bucket/dir/ (repeatable; also $VZARR_ALLOW_PREFIXES and the allowed-prefixes
    /// file, as for verify). Every source the references name must be under one.
    #[arg(long = "allow-prefix", value_name = "PREFIX")]
    pub(crate) allow_prefix: Vec<String>,
    /// Allow whatever sources the references name (only for references you made or trust).
    #[arg(long)]
    pub(crate) trust_references: bool,
    /// Rebuild from the sources the references point into, as `vzarr build` of them would
    /// (their metadata and chunk references read anew by vzarr's scanners: defects of the
    /// references do not carry over); the sources are checked against the allowed prefixes
    /// first.
    #[arg(long)]
    pub(crate) rescan: bool,
    /// With --rescan and several sources: how to combine them, as for `vzarr build`.
    #[command(flatten)]
    pub(crate) combine: CombineArgs,
    /// Audit every reference against its source first (as `vzarr verify` does) and leave out
    /// the variables with a defect, each named with its first defect.
    #[arg(long, conflicts_with = "rescan")]
    pub(crate) leave_out_defective: bool,
    /// With --leave-out-defective: a file the references were made from (repeatable), as for
    /// `vzarr verify --source`: references that name no file (all inline) are audited against
    /// it. It must be under an allowed prefix.
    #[arg(
        long = "source",
        value_name = "FILE|URL",
        requires = "leave_out_defective"
    )]
    pub(crate) sources: Vec<String>,
    #[command(flatten)]
    pub(crate) output: OutputArgs,
    #[command(flatten)]
    pub(crate) small: SmallChunkArgs,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// Runs `vzarr upgrade`.
pub(crate) fn upgrade(args: UpgradeArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let output = args.output.output()?;
    output.check_writable()?;
    args.report.check_writable()?;
    let policy = args.small.settings(Settings::new()).small_chunk_policy()?;
    let mut parsed = vzarr_read::load(&args.refs, vzarr_read::ParseLimits::default())?;
    let mut allow = args.allow_prefix.clone();
    allow.extend(vzarr_read::configured_prefixes()?);
    let mut opts = UpgradeOptions::new(&args.refs, allow.clone());
    opts.trust_references = args.trust_references;
    opts.small_chunks = policy;
    if args.rescan {
        return rescan(&args, parsed, &opts, &output);
    }
    if args.leave_out_defective {
        // The sources as the upgrade allows them (checked here first).
        let mut sources = vzarr_build::upgrade::sources(parsed.clone(), &opts)?;
        sources.extend(allow.iter().cloned());
        let (kept, audit) =
            vzarr_verify::without_defective(parsed, &args.refs, sources, args.sources.clone())?;
        println!("{}", audit.summary());
        parsed = kept;
    }
    let up = run_upgrade(parsed, &opts)?;
    let left: Vec<String> = up
        .dataset
        .skipped
        .iter()
        .map(|s| format!("{}: left out: {}", s.path, s.reason))
        .collect();
    print::warnings(&left);
    print::small_chunks(&up.small_chunks, "upgrade");
    let summary = BatchSummary {
        files: up.dataset.provenance.sources.len(),
        total_seconds: started.elapsed().as_secs_f64(),
        ..Default::default()
    };
    print::finish(
        &up.dataset,
        &output,
        "upgrade",
        None,
        &[],
        &summary,
        &args.report,
    )
}

/// `vzarr upgrade --rescan`: `vzarr build` of the sources the references point into.
fn rescan(
    args: &UpgradeArgs,
    parsed: vzarr_read::ParsedRefs,
    opts: &UpgradeOptions,
    output: &vzarr_build::Output,
) -> Result<ExitCode> {
    let urls = vzarr_build::upgrade::sources(parsed, opts)?;
    let sources = urls
        .iter()
        .map(|u| vzarr_scan::inputs::SourceRef::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = args.small.settings(args.combine.settings(Settings::new()));
    let build_opts = settings.options()?;
    vzarr_build::run(sources, build_opts, None, &|_| {}, |mut out| {
        out.dataset.provenance.upgraded_from = Some(args.refs.clone());
        print::warnings(&out.warnings);
        if let Some(r) = &out.plan {
            print::plan_report(r);
        }
        print::small_chunks(&out.small_chunks, "upgrade");
        print::finish(
            &out.dataset,
            output,
            "upgrade",
            None,
            &out.failures,
            &out.summary,
            &args.report,
        )
    })?
}
