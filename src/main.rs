//! The `vzarr` command line: virtual Zarr v3 datasets over HDF5 and NetCDF files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use vzarr_core::summary::{human_bytes, summarize};

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
    /// Virtualise a file: write Zarr v3 metadata and chunk references (kerchunk v1 JSON).
    Build {
        /// HDF5, NetCDF4 or NetCDF3 file.
        input: PathBuf,
        /// Output reference file (written atomically).
        #[arg(short, long, value_name = "OUT.json")]
        output: PathBuf,
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
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vzarr: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Build {
            input,
            output,
            strict,
            scan,
        } => {
            let ds = vzarr_scan::scan_path(&input, &scan_options(&scan))?;
            for s in &ds.skipped {
                eprintln!(
                    "vzarr: warning: {}: {}: {}",
                    input.display(),
                    s.path,
                    s.reason
                );
            }
            if strict && !ds.skipped.is_empty() {
                bail!(
                    "{}: {} item(s) would be left out and --strict is set; nothing written",
                    input.display(),
                    ds.skipped.len()
                );
            }
            vzarr_kerchunk::write_file(&ds, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            let s = summarize(&ds);
            let out = vzarr_source::absolute(&output).unwrap_or(output.clone());
            println!(
                "wrote {}: {} arrays, {} chunks referenced ({}), {} inline, {} left out",
                out.display(),
                s.arrays.len(),
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
