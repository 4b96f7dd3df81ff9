//! The `vzarr` command line: virtual Zarr v3 datasets over HDF5 and NetCDF files.
//!
//! `main` parses the flags into validated options ([`flags::parse`]), `run` dispatches to the
//! library with one match, and errors become an exit status and a message (with a hint naming
//! the flag that changes the outcome, where one does, among the command's own: [`hints`];
//! libraries never name flags).

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

mod build_cmds;
mod dmrpp_cmd;
#[cfg(test)]
mod doc_commands;
mod expire_cmd;
mod flags;
mod hints;
mod panics;
mod print;
mod read_cmds;
mod sync_cmd;
mod upgrade_cmd;

use flags::Run;

/// Returns the memory glibc's malloc holds free to the system. glibc keeps freed memory in the
/// arena of the thread that freed it, and an Icechunk build in pieces frees hundreds of MB per
/// piece on whichever of the runtime's threads ran Icechunk's commit: without this, a build of
/// 10M references peaked at 3.2 GB instead of about 2 (benches/HISTORY.md). Called between pieces
/// (`vzarr_icechunk::WriteOptions::after_piece`); a no-op with other allocators.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only walks glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn main() -> ExitCode {
    panics::install();
    let command = flags::Cli::parse().command;
    let name = command.name();
    let outcome = std::panic::catch_unwind(|| flags::validate(command).and_then(run));
    match outcome {
        Ok(Ok(code)) => code,
        // stdout closed by its reader (`| head`): stop quietly, as other command-line tools do.
        Err(_) if panics::broken_pipe() => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("vzarr: error: {}", message(&e));
            if let Some(h) = hints::Hint::of(&e).and_then(|h| h.text_for(name)) {
                eprintln!("vzarr: hint: {h}");
            }
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("vzarr: error: {}", panics::report());
            ExitCode::FAILURE
        }
    }
}

fn run(command: Run) -> Result<ExitCode> {
    match command {
        Run::Build {
            sources,
            opts,
            output,
            append,
            report,
        } => build_cmds::build(sources, opts, &output, append, &report),
        Run::Scan {
            sources,
            opts,
            shard,
            output,
        } => build_cmds::scan(sources, opts, shard, &output),
        Run::Combine {
            partials,
            opts,
            output,
            report,
        } => build_cmds::combine(&partials, &opts, &output, &report),
        Run::Inspect {
            source,
            scan,
            small,
            json,
        } => build_cmds::inspect(&source, &scan, &small, json),
        Run::InspectRepo {
            location,
            branch,
            json,
        } => build_cmds::inspect_repo(&location, &branch, json),
        Run::Verify(args) => read_cmds::verify(args),
        Run::Cat(args) => read_cmds::cat(args).map(|()| ExitCode::SUCCESS),
        Run::Sync(args) => sync_cmd::sync(args),
        Run::Expire(args) => expire_cmd::expire(args),
        Run::Upgrade(args) => upgrade_cmd::upgrade(args),
        Run::CheckDmrpp(args) => dmrpp_cmd::check(&args),
        Run::VerifyWorker => verify_worker(),
        Run::ScanWorker {
            path,
            split_contiguous,
        } => scan_worker(&path, split_contiguous),
    }
}

/// The worker process of `vzarr verify --readers c`.
#[cfg(feature = "c-oracle")]
fn verify_worker() -> Result<ExitCode> {
    vzarr_verify::worker::serve()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "c-oracle"))]
fn verify_worker() -> Result<ExitCode> {
    anyhow::bail!("the C readers of verify are not part of this build (cargo feature `c-oracle`)")
}

/// The worker process of `--hdf5-scanner libhdf5`.
#[cfg(feature = "c-oracle")]
fn scan_worker(path: &std::path::Path, split_contiguous: Option<u64>) -> Result<ExitCode> {
    vzarr_scan::worker::serve(path, split_contiguous)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "c-oracle"))]
fn scan_worker(_path: &std::path::Path, _split_contiguous: Option<u64>) -> Result<ExitCode> {
    anyhow::bail!("the libhdf5 scanner is not part of this build (cargo feature `c-oracle`)")
}

/// The error and its causes on one line, each cause once (a library error may say its
/// cause's words itself and also give the cause as its source).
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
