//! Scanning many sources: in parallel (rayon), through the scan cache, stopping at the first
//! failure or going on past bad files.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use vzarr_core::{ChunkRef, SourceRecord, VirtualDataset};

use crate::cache::{ScanCache, cache_key};
use crate::head::HeadSizes;
use crate::inputs::SourceRef;
use crate::{Opened, ScanError, ScanOptions, open_for_scan, scan_opened};

/// Scans in flight at once by default when a batch holds sources on object storage: their
/// time goes to request latency, not to the CPU, so many more than the cores are kept busy.
pub const REMOTE_JOBS: usize = 32;

/// Options of [`scan_all`].
#[derive(Clone, Debug, Default)]
pub struct BatchOptions {
    /// Threads; 0 chooses: every core for local files, at least [`REMOTE_JOBS`] when a source
    /// is on object storage (never more than there are sources).
    pub jobs: usize,
    /// Options of each scan.
    pub scan: ScanOptions,
    /// Where scan results are cached, if anywhere.
    pub cache: Option<ScanCache>,
    /// Go on past sources that fail (else stop scanning new sources after the first failure).
    pub keep_going: bool,
    /// A scan running longer is recorded as a failure (its thread is left to finish on its
    /// own); `None`: no limit.
    pub time_limit: Option<std::time::Duration>,
}

/// What happened to one source.
#[derive(Debug)]
pub struct Outcome {
    /// The source.
    pub source: SourceRef,
    /// Its scan, or why it failed; `None` when it was not scanned because an earlier source
    /// failed.
    pub result: Option<Result<VirtualDataset, ScanError>>,
    /// Whether the scan came from the cache.
    pub cached: bool,
}

/// The record of a source as it is now, and the source opened where that took opening it
/// (an object: one ranged GET gives both).
fn record_of(
    source: &SourceRef,
    heads: &HeadSizes,
) -> Result<(SourceRecord, Option<Opened>), ScanError> {
    match source.local_path() {
        Some(p) => Ok((vzarr_source::local_record(&p)?, None)),
        None => {
            let opened = open_for_scan(source, heads.head())?;
            Ok((opened.src.record().clone(), Some(opened)))
        }
    }
}

fn scan_with_cache(
    source: &SourceRef,
    opts: &ScanOptions,
    cache: Option<&ScanCache>,
    heads: &HeadSizes,
) -> Result<(VirtualDataset, bool), ScanError> {
    let (record, opened) = record_of(source, heads)?;
    let key = cache_key(&record, opts);
    if let Some(mut ds) = cache.and_then(|c| c.get(&key)) {
        // The head fetched to learn the record serves the planner as a fresh scan's would.
        if let Some(o) = &opened {
            crate::keep_head(&mut ds, &record.url, &o.head);
        }
        return Ok((ds, true));
    }
    let opened = match opened {
        Some(o) => o,
        None => open_for_scan(source, heads.head())?,
    };
    let reach = opened.reach.as_ref().map(|(_, at)| at.clone());
    let ds = scan_opened(source, opened, opts)?;
    if let Some(r) = reach {
        // How far the scan read, and the small chunks it kept for the planner.
        let kept = ds
            .arrays
            .values()
            .flat_map(|a| {
                a.manifest.iter_stored().filter_map(|(i, r)| match r {
                    ChunkRef::Range { offset, length, .. } if a.manifest.fetched(i).is_some() => {
                        offset.checked_add(length)
                    }
                    _ => None,
                })
            })
            .max()
            .unwrap_or(0);
        heads.note(r.load(Ordering::Relaxed).max(kept));
    }
    // The record the scan made must be the one the key was made of; a file that changed
    // while it was scanned is not cached.
    if let Some(c) = cache {
        let rec = ds.provenance.sources.first();
        if rec.is_some_and(|r| r.size == record.size && r.mtime_ns == record.mtime_ns) {
            c.put(&key, &ds)?;
        }
    }
    Ok((ds, false))
}

/// Scans one source with the batch's cache, turning a panic into a failure and, with a time
/// limit, a scan that runs past it into a failure too.
fn guarded(
    source: &SourceRef,
    opts: &BatchOptions,
    heads: &Arc<HeadSizes>,
) -> Result<(VirtualDataset, bool), ScanError> {
    let (s, scan, cache) = (source.clone(), opts.scan.clone(), opts.cache.clone());
    let heads = heads.clone();
    guard(&source.url(), opts.time_limit, move || {
        scan_with_cache(&s, &scan, cache.as_ref(), &heads)
    })
}

/// Runs the scan `run` of the source `url` so that a panic in it is a [`ScanError::Panicked`]
/// and, with a `time_limit`, one running past it a [`ScanError::TimedOut`] (the scan is then
/// left to finish on its own thread, its result dropped).
pub fn guard<T, F>(
    url: &str,
    time_limit: Option<std::time::Duration>,
    run: F,
) -> Result<T, ScanError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ScanError> + Send + 'static,
{
    let run = {
        let url = url.to_string();
        move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|p| {
                let message = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(ScanError::Panicked { url, message })
            })
        }
    };
    let Some(limit) = time_limit else {
        return run();
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("vzarr-scan-file".into())
        .spawn(move || {
            let _ = tx.send(run());
        });
    if let Err(e) = spawned {
        return Err(ScanError::Threads(e));
    }
    rx.recv_timeout(limit).unwrap_or_else(|_| {
        Err(ScanError::TimedOut {
            url: url.to_string(),
            seconds: limit.as_secs_f64(),
        })
    })
}

/// Scans `sources` with up to `opts.jobs` threads, in order; `progress` is called after each
/// source with whether it succeeded.
pub fn scan_all(
    sources: &[SourceRef],
    opts: &BatchOptions,
    progress: &(dyn Fn(&SourceRef, bool) + Sync),
) -> Result<Vec<Outcome>, ScanError> {
    let stop = AtomicBool::new(false);
    // Heads of objects learned from the files scanned so far (files of a batch are alike).
    let heads = Arc::new(HeadSizes::new());
    let work = || {
        sources
            .par_iter()
            .map(|s| {
                if stop.load(Ordering::Relaxed) {
                    return Outcome {
                        source: s.clone(),
                        result: None,
                        cached: false,
                    };
                }
                let r = guarded(s, opts, &heads);
                if r.is_err() && !opts.keep_going {
                    stop.store(true, Ordering::Relaxed);
                }
                progress(s, r.is_ok());
                let cached = r.as_ref().is_ok_and(|(_, c)| *c);
                Outcome {
                    source: s.clone(),
                    result: Some(r.map(|(ds, _)| ds)),
                    cached,
                }
            })
            .collect::<Vec<_>>()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads(sources, opts.jobs))
        .thread_name(|i| format!("vzarr-scan-{i}"))
        .build()
        .map_err(|e| ScanError::Threads(std::io::Error::other(e)))?;
    Ok(pool.install(work))
}

/// Threads of a batch: `jobs` when given, else every core, raised to [`REMOTE_JOBS`] when a
/// source is on object storage, and never more than the sources (at least 1).
fn threads(sources: &[SourceRef], jobs: usize) -> usize {
    if jobs > 0 {
        return jobs;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let remote = sources.iter().any(|s| s.local_path().is_none());
    let want = if remote {
        cores.max(REMOTE_JOBS)
    } else {
        cores
    };
    want.min(sources.len()).max(1)
}

/// Totals of a batch, for the summary.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BatchSummary {
    /// Sources given.
    pub files: usize,
    /// Sources scanned now.
    pub scanned: usize,
    /// Sources whose scan came from the cache.
    pub cache_hits: usize,
    /// Sources that failed.
    pub failed: usize,
    /// Arrays in the output.
    pub arrays: usize,
    /// Chunks referenced in the output.
    pub chunks: u64,
    /// Chunks kept inline in the output.
    pub inline_chunks: u64,
    /// Bytes referenced in the sources.
    pub bytes_referenced: u64,
    /// References merged away into larger virtual chunks.
    pub references_merged: u64,
    /// References replaced by chunks kept inline.
    pub references_inlined: u64,
    /// Encoded bytes of the chunks kept inline to replace small references.
    pub bytes_inlined: u64,
    /// Seconds spent scanning.
    pub scan_seconds: f64,
    /// Seconds in all.
    pub total_seconds: f64,
}

impl BatchSummary {
    /// Counts the outcomes of a batch.
    pub fn of_outcomes(outcomes: &[Outcome], started: Instant) -> Self {
        BatchSummary {
            files: outcomes.len(),
            scanned: outcomes
                .iter()
                .filter(|o| o.result.as_ref().is_some_and(Result::is_ok) && !o.cached)
                .count(),
            cache_hits: outcomes.iter().filter(|o| o.cached).count(),
            failed: outcomes
                .iter()
                .filter(|o| o.result.as_ref().is_some_and(Result::is_err))
                .count(),
            scan_seconds: started.elapsed().as_secs_f64(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(urls: &[&str]) -> Vec<SourceRef> {
        urls.iter().map(|u| SourceRef::parse(u).unwrap()).collect()
    }

    #[test]
    fn threads_follow_the_kind_of_sources() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let local = refs(&["/data/a.nc"; 200]);
        assert_eq!(threads(&local, 0), cores.min(200));
        assert_eq!(threads(&local, 3), 3);
        let mut mixed = local.clone();
        mixed.extend(refs(&["s3://bucket/b.nc"]));
        assert_eq!(threads(&mixed, 0), cores.max(REMOTE_JOBS));
        assert_eq!(threads(&mixed, 2), 2);
        // Never more threads than sources, never none.
        assert_eq!(threads(&refs(&["s3://bucket/b.nc"; 3]), 0), 3);
        assert_eq!(threads(&[], 0), 1);
    }
}
