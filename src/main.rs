//! The `vzarr` command line: virtual Zarr v3 datasets over HDF5 and NetCDF files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use vzarr_core::summary::{human_bytes, summarize};

mod read_cmds;

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

#[derive(Subcommand)]
enum Command {
    /// Virtualise files: write Zarr v3 metadata and chunk references (kerchunk v1 JSON).
    ///
    /// One file is virtualised as it is. Several files (or a directory) are combined into one
    /// dataset along --concat-dim, or stacked along a new dimension with --new-dim.
    Build {
        /// HDF5, NetCDF4 or NetCDF3 files, or directories of them.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output reference file (written atomically).
        #[arg(short, long, value_name = "OUT.json")]
        output: PathBuf,
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
        /// Fail, writing nothing, when any variable or attribute has to be left out.
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        scan: ScanArgs,
    },
    /// Print what the scanner sees in a file: arrays, shapes, types, chunking, codecs.
    Inspect {
        /// HDF5, NetCDF4 or NetCDF3 file.
        input: PathBuf,
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

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Verify(args) => read_cmds::verify(args),
        Command::Cat(args) => read_cmds::cat(args).map(|()| ExitCode::SUCCESS),
        command => run(command).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vzarr: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Build {
            inputs,
            output,
            concat_dim,
            new_dim,
            new_dim_values,
            allow_gaps,
            time_units,
            strict,
            scan,
        } => {
            let files = vzarr_scan::expand_inputs(&inputs)?;
            let opts = scan_options(&scan);
            let mut scanned = Vec::with_capacity(files.len());
            for f in &files {
                let ds = vzarr_scan::scan_path(f, &opts)?;
                for s in &ds.skipped {
                    eprintln!("vzarr: warning: {}: {}: {}", f.display(), s.path, s.reason);
                }
                if strict && !ds.skipped.is_empty() {
                    bail!(
                        "{}: {} item(s) would be left out and --strict is set; nothing written",
                        f.display(),
                        ds.skipped.len()
                    );
                }
                scanned.push(ds);
            }
            let concat = match (concat_dim, new_dim) {
                (Some(dim), _) => Some(vzarr_plan::Concat::Existing(dim)),
                (None, Some(dim)) => Some(vzarr_plan::Concat::New {
                    dim,
                    labels: new_dim_values,
                }),
                (None, None) => None,
            };
            let ds = match concat {
                None if scanned.len() == 1 => scanned.pop().expect("one dataset"),
                None => {
                    let hint = match vzarr_plan::suggest_concat_dim(&scanned) {
                        Some(d) => {
                            format!("--concat-dim {d} (the unlimited dimension of every file)")
                        }
                        None => "--concat-dim DIM".to_string(),
                    };
                    bail!(
                        "{} input files: say how to combine them with {hint}, or --new-dim NAME \
                         to stack them",
                        scanned.len()
                    );
                }
                Some(concat) => {
                    let plan_opts = vzarr_plan::PlanOptions {
                        concat,
                        allow_gaps,
                        time_units,
                    };
                    let reader = vzarr_source::LocalReader::new();
                    let (ds, report) = vzarr_plan::plan(scanned, &plan_opts, &reader)?;
                    print_report(&report);
                    ds
                }
            };
            vzarr_kerchunk::write_file(&ds, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            let s = summarize(&ds);
            let out = vzarr_source::absolute(&output).unwrap_or(output.clone());
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
            Ok(())
        }
        Command::Inspect { input, json, scan } => {
            let ds = vzarr_scan::scan_path(&input, &scan_options(&scan))?;
            let s = summarize(&ds);
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", s.to_table());
            }
            Ok(())
        }
        Command::Verify(_) | Command::Cat(_) => bail!("verify and cat are dispatched in main"),
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
