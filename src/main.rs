//! The `vzarr` command line: virtual Zarr v3 datasets over HDF5 and NetCDF files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use vzarr_build::{BuildOptions, Failure, OnError};
use vzarr_core::summary::{human_bytes, summarize};
use vzarr_scan::batch::BatchSummary;
use vzarr_scan::inputs::{Filters, SourceRef};

mod read_cmds;

/// Exit status of a build that left some sources out (`--on-error skip`).
const EXIT_PARTIAL: u8 = 2;

#[derive(Parser)]
#[command(
    name = "vzarr",
    version,
    about = "Virtual Zarr v3 datasets over HDF5 and NetCDF files"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct ScanArgs {
    /// Split uncompressed contiguous variables larger than SIZE into virtual chunks along the
    /// first axis (e.g. 4MiB, 512KiB, 1000000).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    split_contiguous: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OnErrorArg {
    /// Stop at the first bad source; write nothing.
    Fail,
    /// Leave bad sources out, list them in the report, build the rest (exit status 2).
    Skip,
}

/// Where the sources are and how to scan them.
#[derive(clap::Args, Clone)]
struct SourceArgs {
    /// Files, directories (walked recursively), object-store URLs, or prefixes ending in /
    /// (s3://bucket/dir/).
    inputs: Vec<String>,
    /// A catalog: a file with one path or URL per line (# starts a comment; repeatable).
    #[arg(long, value_name = "FILE")]
    catalog: Vec<PathBuf>,
    /// Keep only files found in directories or prefixes that match GLOB (e.g. '*.nc';
    /// a pattern with / matches the path below the directory; repeatable).
    #[arg(long, value_name = "GLOB")]
    include: Vec<String>,
    /// Leave out files found in directories or prefixes that match GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Scanning threads (default: every core).
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// What to do with a source that cannot be scanned.
    #[arg(long, value_enum, default_value = "fail")]
    on_error: OnErrorArg,
    /// Reuse scans stored under DIR, keyed by URL, size and modification time; store new
    /// ones there.
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Fail, writing nothing, when any variable or attribute has to be left out.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    scan: ScanArgs,
}

/// How to combine several sources.
#[derive(clap::Args, Clone)]
struct CombineArgs {
    /// Concatenate the files along this existing dimension (e.g. time).
    #[arg(long, value_name = "DIM", conflicts_with = "new_dim")]
    concat_dim: Option<String>,
    /// Stack the files along a new leading dimension (e.g. member).
    #[arg(long, value_name = "NAME")]
    new_dim: Option<String>,
    /// Coordinate values of the new dimension, one per file in input order (default: the
    /// file names).
    #[arg(
        long,
        value_name = "V1,V2,...",
        value_delimiter = ',',
        requires = "new_dim"
    )]
    new_dim_values: Option<Vec<String>>,
    /// Accept gaps along the concatenation coordinate (overlaps stay errors).
    #[arg(long)]
    allow_gaps: bool,
    /// Re-encode the CF time coordinate into these units (default: the first file's).
    #[arg(long, value_name = "UNITS")]
    time_units: Option<String>,
}

impl CombineArgs {
    fn concat(&self) -> Option<vzarr_plan::Concat> {
        match (&self.concat_dim, &self.new_dim) {
            (Some(dim), _) => Some(vzarr_plan::Concat::Existing(dim.clone())),
            (None, Some(dim)) => Some(vzarr_plan::Concat::New {
                dim: dim.clone(),
                labels: self.new_dim_values.clone(),
            }),
            (None, None) => None,
        }
    }
}

/// Where to put reports.
#[derive(clap::Args, Clone)]
struct ReportArgs {
    /// Where to list the sources left out with --on-error skip (default: OUT.json.failed.txt).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Also write the summary (files, scans, cache hits, arrays, chunks, bytes, seconds) as
    /// JSON to FILE.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Virtualise files: write Zarr v3 metadata and chunk references (kerchunk v1 JSON).
    ///
    /// One file is virtualised as it is. Several files (directories, catalogs, prefixes) are
    /// combined into one dataset along --concat-dim, or stacked along a new dimension with
    /// --new-dim.
    Build {
        #[command(flatten)]
        sources: SourceArgs,
        /// Output reference file (written atomically).
        #[arg(short, long, value_name = "OUT.json")]
        output: PathBuf,
        /// Extend OUT.json with the given new files: its recorded sources are combined with
        /// them (their scans come from --cache-dir when cached there); the result equals a
        /// full rebuild.
        #[arg(long)]
        append: bool,
        #[command(flatten)]
        combine: CombineArgs,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Scan one shard of the sources (every N-th, starting at K) into a partial file, for
    /// `vzarr combine`; run shards 0..N on any batch engine.
    Scan {
        #[command(flatten)]
        sources: SourceArgs,
        /// The shard: K/N (K from 0 to N-1).
        #[arg(long, value_name = "K/N", default_value = "0/1")]
        shard: String,
        /// Partial scan file to write.
        #[arg(short, long, value_name = "PARTIAL.json")]
        output: PathBuf,
    },
    /// Combine the partial scans of every shard into one reference file.
    Combine {
        /// Partial scan files of shards 0..N.
        #[arg(required = true)]
        partials: Vec<PathBuf>,
        /// Output reference file (written atomically).
        #[arg(short, long, value_name = "OUT.json")]
        output: PathBuf,
        #[command(flatten)]
        combine: CombineArgs,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Print what the scanner sees in a file: arrays, shapes, types, chunking, codecs.
    Inspect {
        /// HDF5, NetCDF4 or NetCDF3 file (or object-store URL of a NetCDF3 file).
        input: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scan: ScanArgs,
    },
    /// Check references: read every chunk (or a --sample) through the manifest and compare
    /// every value with the source read directly; exit status 1 if any value differs.
    Verify(read_cmds::VerifyArgs),
    /// Print values through the references, e.g. `vzarr cat OUT.json 'tas[0:3,10,:]'`.
    Cat(read_cmds::CatArgs),
}

/// Parses a byte size with an optional unit (B, KB, KiB, MB, MiB, GB, GiB).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 4MiB or 1000000"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    let v = n.checked_mul(mult).ok_or("size too large")?;
    if v == 0 {
        return Err("size must be at least 1 byte".into());
    }
    Ok(v)
}

fn scan_options(a: &ScanArgs) -> vzarr_scan::ScanOptions {
    vzarr_scan::ScanOptions {
        split_contiguous_bytes: a.split_contiguous,
    }
}

fn build_options(s: &SourceArgs, c: Option<&CombineArgs>) -> Result<BuildOptions> {
    let cache = match &s.cache_dir {
        Some(dir) => Some(vzarr_scan::cache::ScanCache::open(dir)?),
        None => None,
    };
    Ok(BuildOptions {
        scan: scan_options(&s.scan),
        jobs: s.jobs,
        on_error: match s.on_error {
            OnErrorArg::Fail => OnError::Fail,
            OnErrorArg::Skip => OnError::Skip,
        },
        cache,
        strict: s.strict,
        concat: c.and_then(CombineArgs::concat),
        allow_gaps: c.is_some_and(|c| c.allow_gaps),
        time_units: c.and_then(|c| c.time_units.clone()),
    })
}

fn collect(s: &SourceArgs) -> Result<Vec<SourceRef>> {
    let filters = Filters {
        include: s.include.clone(),
        exclude: s.exclude.clone(),
    };
    Ok(vzarr_scan::inputs::collect(
        &s.inputs, &s.catalog, &filters,
    )?)
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
fn progress_bar(n: usize) -> indicatif::ProgressBar {
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

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Verify(args) => read_cmds::verify(args),
        Command::Cat(args) => read_cmds::cat(args).map(|()| ExitCode::SUCCESS),
        command => run(command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vzarr: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("vzarr: warning: {w}");
    }
}

fn print_report(r: &vzarr_plan::PlanReport) {
    println!(
        "combined {} files: {} arrays concatenated ({} rectilinear), {} kept once",
        r.order.len(),
        r.concatenated.len(),
        r.rectilinear.len(),
        r.kept_once.len()
    );
    if let Some(u) = &r.time_units {
        println!("time re-encoded as {u:?}");
    }
    println!(
        "padded edge chunks: {} trimmed to a shorter byte range, {} re-encoded inline ({})",
        r.trimmed_chunks,
        r.materialised_chunks,
        human_bytes(r.materialised_bytes)
    );
    for g in &r.gaps {
        eprintln!("vzarr: warning: {g}");
    }
}

/// Writes the output, the failure report and the summary; returns the exit status.
fn finish(
    ds: &vzarr_core::VirtualDataset,
    output: &Path,
    failures: &[Failure],
    summary: &BatchSummary,
    report: &ReportArgs,
) -> Result<ExitCode> {
    vzarr_kerchunk::write_file(ds, output)
        .with_context(|| format!("writing {}", output.display()))?;
    let s = summarize(ds);
    let out = vzarr_source::absolute(output).unwrap_or(output.to_path_buf());
    println!(
        "wrote {}: {} arrays from {} file(s), {} chunks referenced ({}), {} inline, {} left out",
        out.display(),
        s.arrays.len(),
        ds.provenance.sources.len(),
        s.total.referenced,
        human_bytes(s.total.referenced_bytes),
        s.total.inline,
        s.skipped.len()
    );
    println!(
        "{} files: {} scanned, {} from the cache, {} failed; {:.2} s",
        summary.files, summary.scanned, summary.cache_hits, summary.failed, summary.total_seconds
    );
    if let Some(p) = &report.summary_json {
        std::fs::write(p, serde_json::to_string_pretty(summary)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let path = report
        .report
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.failed.txt", output.display())));
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

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Build {
            sources,
            output,
            append,
            combine,
            report,
        } => {
            let mut list = collect(&sources)?;
            let mut combine = combine;
            if append {
                let (old, prov) = vzarr_build::recorded_sources(&output)?;
                if let Some(c) = &prov.concat {
                    if c.new_dim {
                        bail!(
                            "{}: appending to a stack along a new dimension is not supported; rebuild it",
                            output.display()
                        );
                    }
                    match &combine.concat_dim {
                        Some(d) if *d != c.dim => bail!(
                            "{} was concatenated along {:?}, not {d:?}",
                            output.display(),
                            c.dim
                        ),
                        Some(_) => {}
                        None => combine.concat_dim = Some(c.dim.clone()),
                    }
                }
                let new: Vec<SourceRef> = list.into_iter().filter(|s| !old.contains(s)).collect();
                if new.is_empty() {
                    bail!(
                        "nothing to append: every input is already in {}",
                        output.display()
                    );
                }
                list = old.into_iter().chain(new).collect();
            } else if list.is_empty() {
                bail!("no input files");
            }
            let opts = build_options(&sources, Some(&combine))?;
            let bar = progress_bar(list.len());
            let out = vzarr_build::build(&list, &opts, &|_, _| bar.inc(1));
            bar.finish_and_clear();
            let out = out?;
            print_warnings(&out.warnings);
            if let Some(r) = &out.plan {
                print_report(r);
            }
            finish(&out.dataset, &output, &out.failures, &out.summary, &report)
        }
        Command::Scan {
            sources,
            shard,
            output,
        } => {
            let (k, n) = vzarr_build::parse_shard(&shard).map_err(anyhow::Error::msg)?;
            let all = collect(&sources)?;
            if all.is_empty() {
                bail!("no input files");
            }
            let mine: Vec<(usize, SourceRef)> = all
                .iter()
                .cloned()
                .enumerate()
                .filter(|(i, _)| i % n == k)
                .collect();
            let list: Vec<SourceRef> = mine.iter().map(|(_, s)| s.clone()).collect();
            let opts = build_options(&sources, None)?;
            let bar = progress_bar(list.len());
            let scanned = vzarr_build::scan_sources(&list, &opts, &|_, _| bar.inc(1));
            bar.finish_and_clear();
            let mut scanned = scanned?;
            print_warnings(&scanned.warnings);
            // Positions in the shard back to positions in the whole source list.
            for (pos, _) in scanned.datasets.iter_mut() {
                *pos = mine[*pos].0;
            }
            for (pos, _) in scanned.failures.iter_mut() {
                *pos = mine[*pos].0;
            }
            vzarr_build::write_partial(&output, (k, n), all.len(), &scanned)?;
            println!(
                "wrote {}: shard {k}/{n}, {} of {} sources ({} scanned, {} from the cache, {} failed)",
                output.display(),
                list.len(),
                all.len(),
                scanned.summary.scanned,
                scanned.summary.cache_hits,
                scanned.summary.failed
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Combine {
            partials,
            output,
            combine,
            report,
        } => {
            let started = std::time::Instant::now();
            let (datasets, failures, warnings) = vzarr_build::read_partials(&partials)?;
            print_warnings(&warnings);
            let opts = BuildOptions {
                scan: vzarr_scan::ScanOptions::default(),
                jobs: 0,
                on_error: OnError::Skip,
                cache: None,
                strict: false,
                concat: combine.concat(),
                allow_gaps: combine.allow_gaps,
                time_units: combine.time_units.clone(),
            };
            let files = datasets.len() + failures.len();
            let (ds, plan) = vzarr_build::combine(datasets, &opts)?;
            if let Some(r) = &plan {
                print_report(r);
            }
            let mut summary = BatchSummary {
                files,
                failed: failures.len(),
                ..Default::default()
            };
            vzarr_build::fill_totals(&mut summary, &ds, started);
            finish(&ds, &output, &failures, &summary, &report)
        }
        Command::Inspect { input, json, scan } => {
            let source = match vzarr_scan::inputs::collect(
                std::slice::from_ref(&input),
                &[],
                &Filters::default(),
            )?
            .as_slice()
            {
                [one] => one.clone(),
                _ => bail!("{input}: inspect takes one file"),
            };
            let ds = vzarr_scan::batch::scan_source(&source, &scan_options(&scan))?;
            let s = summarize(&ds);
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", s.to_table());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify(_) | Command::Cat(_) => bail!("verify and cat are dispatched in main"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("512kib"), Ok(512 << 10));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert_eq!(parse_size("2 GB"), Ok(2_000_000_000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }
}
