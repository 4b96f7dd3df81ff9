//! `vzarr verify` and `vzarr cat`: reading through the references.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

/// Options shared by the commands that read through references.
#[derive(clap::Args, Clone, Debug)]
pub struct ReadArgs {
    /// Also allow reading sources under this prefix: a local directory or a URL prefix such
    /// as s3://bucket/dir/ (repeatable). The prefixes recorded in the references are allowed
    /// too; without any, nothing is read.
    #[arg(long = "allow-prefix", value_name = "PREFIX")]
    pub allow_prefix: Vec<String>,
    /// Do not trust the prefixes recorded in the references; only --allow-prefix counts (for
    /// references from someone else).
    #[arg(long)]
    pub ignore_recorded_prefixes: bool,
    /// Read even if a source's size or modification time changed since the build.
    #[arg(long)]
    pub ignore_stale: bool,
    /// Requests in flight at most.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub concurrency: usize,
}

impl ReadArgs {
    fn options(&self) -> vzarr_read::ReadOptions {
        vzarr_read::ReadOptions {
            allow_prefixes: self.allow_prefix.clone(),
            use_recorded_prefixes: !self.ignore_recorded_prefixes,
            ignore_stale: self.ignore_stale,
            concurrency: self.concurrency.max(1),
            ..Default::default()
        }
    }
}

/// Arguments of `vzarr verify`.
#[derive(clap::Args, Clone, Debug)]
pub struct VerifyArgs {
    /// Reference file: a path, or a file://, s3://, gs://, az:// or http(s):// URL.
    #[arg(value_name = "OUT.json")]
    pub refs: String,
    /// Check a random sample of N chunks instead of all of them.
    #[arg(long, value_name = "N")]
    pub sample: Option<u64>,
    /// Seed of the random sample (the same seed checks the same chunks).
    #[arg(long, value_name = "SEED", default_value_t = 0, requires = "sample")]
    pub seed: u64,
    /// Only verify this array (repeatable).
    #[arg(long = "array", value_name = "PATH")]
    pub arrays: Vec<String>,
    /// Describe at most this many differing chunks (all are counted).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_reported: usize,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Arguments of `vzarr cat`.
#[derive(clap::Args, Clone, Debug)]
pub struct CatArgs {
    /// Reference file: a path, or a file://, s3://, gs://, az:// or http(s):// URL.
    #[arg(value_name = "OUT.json")]
    pub refs: String,
    /// Array and optional numpy-like selection, e.g. 'tas[0:3,10,:]', 'g/v[-1]', 'time'.
    #[arg(value_name = "VAR[SEL]")]
    pub selection: String,
    /// Print the values as JSON (nested lists) instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Runs `vzarr verify`: success only if every compared value matches.
pub fn verify(args: VerifyArgs) -> Result<ExitCode> {
    let reader = vzarr_read::open(&args.refs, args.read.options())
        .with_context(|| format!("opening {}", args.refs))?;
    let bar = if std::io::stderr().is_terminal() && !args.json {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} verifying [{bar:40}] {pos}/{len} chunks, {elapsed} (eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Some(b)
    } else {
        None
    };
    let progress: Option<Arc<dyn Fn(vzarr_read::VerifyProgress) + Send + Sync>> =
        bar.clone().map(|b| {
            Arc::new(move |p: vzarr_read::VerifyProgress| {
                b.set_length(p.total);
                b.set_position(p.done);
            }) as Arc<dyn Fn(vzarr_read::VerifyProgress) + Send + Sync>
        });
    let opts = vzarr_read::VerifyOptions {
        sample: args.sample,
        seed: args.seed,
        arrays: args.arrays.clone(),
        max_reported: args.max_reported,
        progress,
    };
    let report = vzarr_read::verify(&reader, &opts);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report.with_context(|| format!("verifying {}", args.refs))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        for m in &report.mismatches {
            writeln!(out, "MISMATCH {m}")?;
        }
        let shown = report.mismatches.len() as u64;
        if report.failed_chunks > shown {
            writeln!(
                out,
                "... and {} more differing chunk(s)",
                report.failed_chunks - shown
            )?;
        }
        for s in &report.skipped {
            match &s.chunk {
                Some(c) => writeln!(out, "skipped {} chunk {c:?}: {}", s.array, s.reason)?,
                None => writeln!(out, "skipped {}: {}", s.array, s.reason)?,
            }
        }
        writeln!(out, "{}", report.summary())?;
    }
    out.flush()?;
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs `vzarr cat`: prints the selected values.
pub fn cat(args: CatArgs) -> Result<()> {
    let sel = vzarr_read::parse_selection(&args.selection)?;
    let reader = vzarr_read::open(&args.refs, args.read.options())
        .with_context(|| format!("opening {}", args.refs))?;
    let values = reader.read_selection(&sel)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &values.to_json())?;
        writeln!(out)?;
    } else {
        out.write_all(values.to_text().as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
