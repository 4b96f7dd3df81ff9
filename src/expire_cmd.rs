//! `vzarr expire`: a repository's old snapshots expired and its garbage collected, its
//! provenance kept (the library's `vzarr_icechunk::expire`).

use std::process::ExitCode;

use anyhow::{Context, Result};
use vzarr_core::summary::human_bytes;

/// Arguments of `vzarr expire`.
#[derive(clap::Args, Clone)]
pub(crate) struct ExpireArgs {
    /// The Icechunk repository: a local directory, or s3://, gs:// or az://bucket/prefix.
    #[arg(value_name = "REPO")]
    pub(crate) repo: String,
    /// Expire the snapshots written before this: an RFC 3339 time (2026-01-01T00:00:00Z) or
    /// an age (30d, 12h, 90m, 2w; 0s keeps only the branches' and tags' tips).
    #[arg(long, value_name = "TIME|AGE")]
    pub(crate) older_than: String,
    /// Expire only: leave the objects of expired snapshots in place (no garbage collection).
    #[arg(long)]
    pub(crate) no_gc: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `vzarr expire`.
pub(crate) fn expire(args: ExpireArgs) -> Result<ExitCode> {
    let cutoff = vzarr_icechunk::parse_cutoff(&args.older_than, chrono_now())
        .map_err(anyhow::Error::msg)
        .context("--older-than")?;
    let location = vzarr_icechunk::RepoLocation::parse(&args.repo)?;
    let done = vzarr_icechunk::expire(&location, cutoff, !args.no_gc)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
        return Ok(ExitCode::SUCCESS);
    }
    for lost in &done.lost {
        eprintln!(
            "vzarr: warning: the record of the sources was lost before (rebuild to append or sync): {lost}"
        );
    }
    if !done.checkpoints.is_empty() {
        println!(
            "provenance checkpoint committed on {}",
            done.checkpoints.join(", ")
        );
    }
    println!(
        "{} snapshot(s) older than {} expired",
        done.snapshots_expired,
        cutoff.to_rfc3339()
    );
    if let Some(c) = &done.collected {
        println!(
            "garbage collected: {} ({} snapshots, {} manifests, {} transaction logs, {} chunks)",
            human_bytes(c.bytes),
            c.snapshots,
            c.manifests,
            c.transaction_logs,
            c.chunks
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Now, as the library's cutoff takes it.
fn chrono_now() -> vzarr_icechunk::Time {
    vzarr_icechunk::Time::from(std::time::SystemTime::now())
}
