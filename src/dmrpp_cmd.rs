//! `vzarr check-dmrpp`: DMR++ sidecars checked against their granules.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

/// Arguments of `vzarr check-dmrpp`.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct CheckDmrppArgs {
    /// DMR++ sidecars: files, directories and object-store prefixes (ending in `/`; every
    /// `*.dmrpp` below them), or URLs.
    #[arg(
        required_unless_present = "files_from",
        value_name = "SIDECAR|DIR|PREFIX/"
    )]
    pub(crate) sidecars: Vec<String>,
    /// Also check the sidecars listed in FILE, one path or URL per line.
    #[arg(long, value_name = "FILE")]
    pub(crate) files_from: Vec<PathBuf>,
    /// Check by range reads of the granule only (every chunk inside it, none overlapping
    /// another, sampled chunks decoding to their size), without scanning its layout.
    #[arg(long)]
    pub(crate) ranges: bool,
    /// With --ranges: chunks decoded per array besides its first and last.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub(crate) samples: u64,
    /// Seed of the sampled chunks (the same seed decodes the same chunks).
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub(crate) seed: u64,
    /// Where the granules are, when not beside their sidecars: a URL or path, {name}
    /// standing for the sidecar's file name without .dmrpp (e.g. 's3://bucket/granules/{name}';
    /// one ending in / gets the name appended).
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) data_url: Option<String>,
    /// Sidecars checked at once (0: every core, and at least 32 on object storage).
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    pub(crate) jobs: usize,
    /// Print one JSON report per sidecar, a JSON array on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `vzarr check-dmrpp`: success only if every sidecar matches its granule.
pub(crate) fn check(args: &CheckDmrppArgs) -> Result<ExitCode> {
    let filters = vzarr_scan::inputs::Filters {
        include: vec!["*.dmrpp".into()],
        exclude: Vec::new(),
    };
    let sidecars = vzarr_scan::inputs::collect(&args.sidecars, &args.files_from, &filters)?;
    if sidecars.is_empty() {
        anyhow::bail!("no DMR++ sidecars (*.dmrpp) found in {:?}", args.sidecars);
    }
    let opts = vzarr_verify::SidecarOptions {
        mode: if args.ranges {
            vzarr_verify::SidecarMode::Ranges
        } else {
            vzarr_verify::SidecarMode::Scan
        },
        samples: args.samples,
        seed: args.seed,
        data_url: args.data_url.clone(),
    };
    let mut out = std::io::stdout().lock();
    let (mut matching, mut differing, mut failed) = (0usize, 0usize, 0usize);
    let mut reports = Vec::new();
    let results = vzarr_verify::check_sidecars(&sidecars, &opts, args.jobs);
    for (s, result) in sidecars.iter().zip(results) {
        // One sidecar that cannot be checked is reported; the others are checked.
        match result {
            Ok(r) => {
                if r.matches() {
                    matching += 1;
                } else {
                    differing += 1;
                }
                if args.json {
                    reports.push(serde_json::to_value(&r)?);
                    continue;
                }
                let name = s.display();
                for f in &r.findings {
                    writeln!(out, "STALE {name}: {f}")?;
                }
                if let Some(why) = &r.fallback {
                    writeln!(out, "note {name}: {why}")?;
                }
                for v in &r.not_checked {
                    writeln!(out, "not checked {name}: {}: {}", v.path, v.reason)?;
                }
                writeln!(out, "{name}: {}", r.summary())?;
            }
            Err(e) => {
                failed += 1;
                if args.json {
                    reports.push(serde_json::json!({
                        "sidecar": s.url(),
                        "error": e.to_string(),
                    }));
                } else {
                    writeln!(out, "ERROR {}: {e}", s.display())?;
                }
            }
        }
    }
    if args.json {
        serde_json::to_writer_pretty(&mut out, &reports)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{} sidecars: {matching} match their granules, {differing} do not, {failed} could \
             not be checked",
            sidecars.len()
        )?;
    }
    out.flush()?;
    Ok(if differing + failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
