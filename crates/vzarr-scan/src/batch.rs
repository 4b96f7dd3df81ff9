//! Scanning many sources: in parallel (rayon), through the scan cache, stopping at the first
//! failure or going on past bad files.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use vzarr_core::{SourceRecord, VirtualDataset};

use crate::cache::{ScanCache, cache_key};
use crate::head::HeadSizes;
use crate::inputs::SourceRef;
use crate::{Opened, ScanError, ScanOptions, open_for_scan, scan_opened};

/// Scans in flight at once by default when a batch holds sources on object storage: their
/// time goes to request latency, not to the CPU, so many more than the cores are kept busy.
/// Measured on 10,000 objects at +100 ms a request (benches/s3catalog, 2 cores): 36.8 s with
/// 32, 20.1 s with 64, 12.7 s with 128 (1.44x the latency floor), 10.5 s with 256 (2.1x its
/// floor: the server and the CPU were the limit), peak memory 247-274 MiB.
pub const REMOTE_JOBS: usize = 128;

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
    /// For an object scanned now: how far into it the scan read while parsing (the bytes its
    /// parse used, from the start of the object; the small chunks kept for the planner
    /// included). 0 for local files and cached scans.
    pub reach: u64,
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

/// A scan, whether it came from the cache, and how far into an object it read (0 if it did not
/// read one).
type Scanned = (VirtualDataset, bool, u64);

fn scan_with_cache(
    source: &SourceRef,
    opts: &ScanOptions,
    cache: Option<&ScanCache>,
    heads: &HeadSizes,
) -> Result<Scanned, ScanError> {
    let (record, opened) = record_of(source, heads)?;
    let key = cache_key(&record, opts);
    if let Some(mut ds) = cache.and_then(|c| c.get(&key)) {
        // The head fetched to learn the record serves the planner as a fresh scan's would.
        if let Some(o) = &opened {
            crate::keep_head(&mut ds, &record.url, &o.head);
        }
        return Ok((ds, true, 0));
    }
    let opened = match opened {
        Some(o) => o,
        None => open_for_scan(source, heads.head())?,
    };
    let reach = opened.reach.as_ref().map(|(_, at)| at.clone());
    let ds = scan_opened(source, opened, opts)?;
    let mut reached = 0;
    if let Some(r) = reach {
        // How far the scan read, and the small chunks it kept that the planner reads.
        let kept = crate::head::kept_reach(&ds);
        reached = r.load(Ordering::Relaxed).max(kept);
        heads.note(reached);
    }
    // The record the scan made must be the one the key was made of; a file that changed
    // while it was scanned is not cached.
    if let Some(c) = cache {
        let rec = ds.provenance.own_sources().next();
        if rec.is_some_and(|r| r.size == record.size && r.mtime_ns == record.mtime_ns) {
            c.put(&key, &ds)?;
        }
    }
    Ok((ds, false, reached))
}

/// Scans one source with the batch's cache, turning a panic into a failure and, with a time
/// limit, a scan that runs past it into a failure too.
fn guarded(
    source: &SourceRef,
    opts: &BatchOptions,
    heads: &Arc<HeadSizes>,
) -> Result<Scanned, ScanError> {
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
                        reach: 0,
                    };
                }
                let r = guarded(s, opts, &heads);
                if r.is_err() && !opts.keep_going {
                    stop.store(true, Ordering::Relaxed);
                }
                progress(s, r.is_ok());
                let (cached, reach) = r.as_ref().map_or((false, 0), |(_, c, at)| (*c, *at));
                Outcome {
                    source: s.clone(),
                    result: Some(r.map(|(ds, _, _)| ds)),
                    cached,
                    reach,
                }
            })
            .collect::<Vec<_>>()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(scan_threads(sources, opts.jobs))
        .thread_name(|i| format!("vzarr-scan-{i}"))
        .build()
        .map_err(|e| ScanError::Threads(std::io::Error::other(e)))?;
    Ok(pool.install(work))
}

/// Threads of a batch (scans in flight at once): `jobs` when given, else every core, raised to
/// [`REMOTE_JOBS`] when a source is on object storage, and never more than the sources (at
/// least 1).
pub fn scan_threads(sources: &[SourceRef], jobs: usize) -> usize {
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
    /// Scans in flight at once ([`scan_threads`]).
    pub jobs: usize,
    /// Bytes the scans of objects used while parsing, summed over the objects scanned now
    /// (how far into each object its scan read; see [`Outcome::reach`]); what a batch fetches
    /// is compared with this.
    pub bytes_parsed: u64,
    /// Seconds spent scanning.
    pub scan_seconds: f64,
    /// Seconds spent writing the output (0 until a front end writes it and adds them, to
    /// this and to [`BatchSummary::total_seconds`]: see [`BatchSummary::add_write`]).
    pub write_seconds: f64,
    /// Seconds in all (the write's included once it is added).
    pub total_seconds: f64,
}

impl BatchSummary {
    /// The summary with the output's write, which took `seconds`, counted in the totals.
    pub fn add_write(&mut self, seconds: f64) {
        self.write_seconds += seconds;
        self.total_seconds += seconds;
    }

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
            bytes_parsed: outcomes.iter().map(|o| o.reach).sum(),
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
        assert_eq!(scan_threads(&local, 0), cores.min(200));
        assert_eq!(scan_threads(&local, 3), 3);
        let mut mixed = local.clone();
        mixed.extend(refs(&["s3://bucket/b.nc"]));
        assert_eq!(scan_threads(&mixed, 0), cores.max(REMOTE_JOBS));
        assert_eq!(scan_threads(&mixed, 2), 2);
        // Never more threads than sources, never none.
        assert_eq!(scan_threads(&refs(&["s3://bucket/b.nc"; 3]), 0), 3);
        assert_eq!(scan_threads(&[], 0), 1);
    }
}
