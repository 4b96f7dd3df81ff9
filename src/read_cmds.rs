//! `vzarr verify` and `vzarr cat`: reading through the references.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::flags::{CatArgs, ReadArgs, VerifyArgs};

/// Opens references: an Icechunk repository (a branch's tip) or a kerchunk reference file.
pub(crate) fn open_reader(refs: &str, read: &ReadArgs) -> Result<vzarr_read::Reader> {
    let mut options = read.options()?;
    let reader = if vzarr_icechunk::is_repository(refs) {
        let location = vzarr_icechunk::RepoLocation::parse(refs)?;
        let opened = vzarr_icechunk::open(&location, &read.branch, options.limits.max_references)?;
        // The checksums of the references (of any repository, vzarr's or not) are checked
        // before a source is read, as Icechunk checks them.
        options.versions = Arc::new(opened.versions);
        let parsed = vzarr_read::ParsedRefs::from_parts(
            opened.dataset,
            opened.documents,
            opened.has_provenance,
        );
        vzarr_read::open_parsed(parsed, refs, options)
    } else {
        vzarr_read::open(refs, options)
    };
    reader.with_context(|| format!("opening {refs}"))
}

/// Runs `vzarr verify`: success only if every compared value matches.
pub(crate) fn verify(args: VerifyArgs) -> Result<ExitCode> {
    let readers = args.source_readers()?;
    let mut reader = open_reader(&args.refs, &args.read)?;
    // Every chunk is verified: lazily opened Parquet references are read whole.
    reader
        .load_all()
        .with_context(|| format!("reading the references of {}", args.refs))?;
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
    let progress: Option<Arc<dyn Fn(vzarr_verify::VerifyProgress) + Send + Sync>> =
        bar.clone().map(|b| {
            Arc::new(move |p: vzarr_verify::VerifyProgress| {
                b.set_length(p.total);
                b.set_position(p.done);
            }) as Arc<dyn Fn(vzarr_verify::VerifyProgress) + Send + Sync>
        });
    let opts = vzarr_verify::VerifyOptions {
        sample: args.sample,
        seed: args.seed,
        arrays: args.arrays.clone(),
        max_reported: args.max_reported,
        progress,
        readers,
        worker: Some(vzarr_verify::WorkerCommand {
            program: std::env::current_exe().context("locating the vzarr binary")?,
            args: vec!["__verify-worker".into()],
            timeout: std::time::Duration::from_secs(args.read_timeout.max(1)),
        }),
        sources: args.sources.clone(),
    };
    let report = vzarr_verify::verify(&reader, &opts);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report.with_context(|| format!("verifying {}", args.refs))?;
    // References made elsewhere (kerchunk's) record no provenance: each reference is also
    // located in its source, so a defect is named by its kind.
    let audit = (!reader.refs().has_provenance).then(|| vzarr_verify::audit(&reader, &opts));
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(a) = &audit {
            v["audit"] = serde_json::to_value(a)?;
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        if let Some(a) = &audit {
            for d in &a.defects {
                writeln!(out, "DEFECT {d}")?;
            }
            writeln!(out, "{}", a.summary())?;
        }
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
        writeln!(out, "{}", report.readers_line())?;
    }
    out.flush()?;
    Ok(if report.ok() && audit.is_none_or(|a| a.ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs `vzarr cat`: prints the selected values.
pub(crate) fn cat(args: CatArgs) -> Result<()> {
    let sel = vzarr_read::parse_selection(&args.selection)?;
    let reader = open_reader(&args.refs, &args.read)?;
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
