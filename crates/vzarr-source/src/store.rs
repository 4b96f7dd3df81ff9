//! Opening sources by URL, with policies as wrappers in the style of `object_store`'s
//! `LimitStore`: [`Stores`] opens local files and objects; [`crate::AllowPrefixes`] refuses URLs
//! outside the prefixes a reader may fetch from (symbolic links resolved first);
//! [`CheckRecords`] refuses sources that changed since they were recorded; [`Memo`] opens each
//! URL once; [`Recorded`] opens sources scanned before from their records (no HEAD request). Stack them as a reader needs, e.g.
//! `Memo::new(CheckRecords::new(AllowPrefixes::new(Stores::default(), policy), records))`.

use std::collections::HashMap;
use std::fmt::Debug;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use vzarr_core::SourceRecord;

use crate::object::{Clients, DEFAULT_RANGE_CONCURRENCY, ObjectSource};
use crate::url::{Location, Scheme, parse_url};
use crate::{
    ByteSource, Coalesced, Counted, IoStats, LOCAL_COALESCE_GAP, LocalFile, MAX_COALESCED_READ,
    REMOTE_COALESCE_GAP, SourceError, absolute, file_url,
};

/// Opens sources by URL.
pub trait SourceStore: Send + Sync + Debug {
    /// Opens the source at `url`: an absolute URL of any supported scheme, or a local path
    /// (relative paths against the current directory).
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError>;

    /// Opens the source `record` describes (a source scanned before), trusting the record
    /// where that saves a request: [`Stores`] opens an object with an ETag without a HEAD
    /// request, its reads conditional on the recorded ETag (an object changed since is an
    /// error on the first read). By default, [`SourceStore::open`] of the record's URL.
    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.open(&record.url)
    }
}

impl<T: SourceStore + ?Sized> SourceStore for Arc<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        (**self).open(url)
    }
    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        (**self).open_recorded(record)
    }
}

impl<T: SourceStore + ?Sized> SourceStore for &T {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        (**self).open(url)
    }
    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        (**self).open_recorded(record)
    }
}

/// Parses a URL or local path into a location (local paths made absolute).
pub fn locate(url_or_path: &str) -> Result<Location, SourceError> {
    let text = if url_or_path.contains("://") {
        url_or_path.to_string()
    } else {
        file_url(&absolute(Path::new(url_or_path))?)?
    };
    parse_url(&text).map_err(|source| SourceError::BadUrl {
        url: url_or_path.to_string(),
        source,
    })
}

/// How [`Stores`] reads: coalescing gaps, request size, ranges in flight, statistics.
#[derive(Clone, Debug)]
pub struct ReadTuning {
    /// Ranges of a local file closer than this are read in one `pread`.
    pub local_gap: u64,
    /// Ranges of an object closer than this are fetched in one request.
    pub remote_gap: u64,
    /// Largest coalesced read.
    pub max_request: u64,
    /// Ranges of one object fetched at once at most.
    pub concurrency: usize,
    /// Where reads are counted, if anywhere.
    pub stats: Option<Arc<IoStats>>,
}

impl Default for ReadTuning {
    fn default() -> Self {
        ReadTuning {
            local_gap: LOCAL_COALESCE_GAP,
            remote_gap: REMOTE_COALESCE_GAP,
            max_request: MAX_COALESCED_READ,
            concurrency: DEFAULT_RANGE_CONCURRENCY,
            stats: None,
        }
    }
}

/// The base store: local paths and `file://` URLs as [`LocalFile`]s, other URLs as
/// [`ObjectSource`]s with the process-wide [`Clients`]; each source read through
/// [`Coalesced`] (and [`Counted`] when statistics are kept).
#[derive(Debug, Default)]
pub struct Stores {
    tuning: ReadTuning,
}

impl Stores {
    /// A store reading with `tuning`.
    pub fn new(tuning: ReadTuning) -> Self {
        Stores { tuning }
    }

    /// Opens a parsed location.
    pub fn open_location(&self, loc: &Location) -> Result<Arc<dyn ByteSource>, SourceError> {
        let t = &self.tuning;
        let (raw, gap): (Box<dyn ByteSource>, u64) = if loc.scheme == Scheme::File {
            (Box::new(LocalFile::open(&loc.local_path())?), t.local_gap)
        } else {
            let src = ObjectSource::open(Clients::global(), loc)?.with_concurrency(t.concurrency);
            (Box::new(src), t.remote_gap)
        };
        if let Some(stats) = &t.stats {
            stats.count_open();
        }
        Ok(self.wrap(raw, gap))
    }

    /// A source read through coalescing (and counted when statistics are kept).
    fn wrap(&self, raw: Box<dyn ByteSource>, gap: u64) -> Arc<dyn ByteSource> {
        let t = &self.tuning;
        match &t.stats {
            Some(stats) => Arc::new(Coalesced::new(
                Counted::new(raw, stats.clone()),
                gap,
                t.max_request,
            )),
            None => Arc::new(Coalesced::new(raw, gap, t.max_request)),
        }
    }
}

impl SourceStore for Stores {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.open_location(&locate(url)?)
    }

    /// An object whose record has an ETag is opened from the record, without a request
    /// ([`ObjectSource::from_record`]); local files and objects without an ETag (whose reads
    /// could not tell a changed object) are opened as [`Stores::open_location`] does.
    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        let loc = locate(&record.url)?;
        if loc.scheme == Scheme::File || record.etag.is_none() {
            return self.open_location(&loc);
        }
        let t = &self.tuning;
        // No request: not counted as an open.
        let src = ObjectSource::from_record(Clients::global(), &loc, record)?
            .with_concurrency(t.concurrency);
        Ok(self.wrap(Box::new(src), t.remote_gap))
    }
}

/// Opens a local path or any URL with the default [`Stores`].
pub fn open_source(url_or_path: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
    Stores::default().open(url_or_path)
}

/// A store that refuses sources whose size, modification time or ETag differ from the
/// records given (sources without a record pass).
#[derive(Debug)]
pub struct CheckRecords<T> {
    inner: T,
    records: HashMap<String, SourceRecord>,
}

impl<T: SourceStore> CheckRecords<T> {
    /// `inner`, checking sources against `records` (by URL).
    pub fn new(inner: T, records: impl IntoIterator<Item = SourceRecord>) -> Self {
        CheckRecords {
            inner,
            records: records.into_iter().map(|r| (r.url.clone(), r)).collect(),
        }
    }
}

/// Bytes at the start of a source that its fingerprint covers.
pub const FINGERPRINT_BYTES: u64 = 64 << 10;

/// The fingerprint of a source: `xxh3:` and the 16 hex digits of the XXH3-64 hash of its
/// first [`FINGERPRINT_BYTES`] bytes (all of it when shorter).
pub fn fingerprint(src: &dyn ByteSource) -> Result<String, SourceError> {
    let head = src.read(0..src.size().min(FINGERPRINT_BYTES))?;
    Ok(fingerprint_of(&head))
}

/// The fingerprint of bytes that are a source's first [`FINGERPRINT_BYTES`] bytes.
pub fn fingerprint_of(head: &[u8]) -> String {
    let n = head.len().min(FINGERPRINT_BYTES as usize);
    format!("xxh3:{:016x}", twox_hash::XxHash3_64::oneshot(&head[..n]))
}

/// What differs between a source's record then and now, in words (empty if nothing).
pub fn record_changes(then: &SourceRecord, now: &SourceRecord) -> Vec<String> {
    let mut changes = Vec::new();
    if now.size != then.size {
        changes.push(format!(
            "size changed from {} to {} bytes",
            then.size, now.size
        ));
    }
    if let Some(t) = then.mtime_ns
        && now.mtime_ns != Some(t)
    {
        changes.push(format!(
            "modification time changed from {} to {}",
            format_ns(t),
            now.mtime_ns.map_or_else(|| "unknown".into(), format_ns)
        ));
    }
    if let (Some(t), Some(n)) = (&then.etag, &now.etag)
        && t != n
    {
        changes.push(format!("ETag changed from {t} to {n}"));
    }
    changes
}

impl<T: SourceStore> SourceStore for CheckRecords<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        let Some(then) = self.records.get(url) else {
            return self.inner.open(url);
        };
        let src = match self.inner.open(url) {
            Ok(s) => s,
            Err(e) if e.is_not_found() => {
                return Err(SourceError::Stale {
                    url: url.to_string(),
                    changes: vec!["the source no longer exists".into()],
                });
            }
            Err(e) => return Err(e),
        };
        let mut changes = record_changes(then, src.record());
        // Same size and time but rewritten in place: the fingerprint tells (an ETag already
        // does on object storage).
        if changes.is_empty()
            && let Some(want) = &then.fingerprint
            && (then.etag.is_none() || src.record().etag.is_none())
        {
            let now = fingerprint(src.as_ref())?;
            if now != *want {
                changes.push(format!(
                    "content changed (fingerprint of the first {} KiB {want}, now {now})",
                    FINGERPRINT_BYTES >> 10
                ));
            }
        }
        if changes.is_empty() {
            Ok(src)
        } else {
            Err(SourceError::Stale {
                url: url.to_string(),
                changes,
            })
        }
    }
}

/// A store that opens each URL once and keeps the opened source.
#[derive(Debug)]
pub struct Memo<T> {
    inner: T,
    open: Mutex<HashMap<String, Arc<dyn ByteSource>>>,
}

impl<T: SourceStore> Memo<T> {
    /// `inner`, remembering opened sources.
    pub fn new(inner: T) -> Self {
        Memo {
            inner,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The store below.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn ByteSource>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: SourceStore> SourceStore for Memo<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        let key = locate(url)?.url();
        if let Some(s) = self.lock().get(&key) {
            return Ok(s.clone());
        }
        // Opened without the lock held (a HEAD request may take a while); a source opened
        // twice concurrently is kept once.
        let s = self.inner.open(&key)?;
        Ok(self.lock().entry(key).or_insert(s).clone())
    }

    /// The source kept for the record's URL when it agrees with the record (same size, and
    /// the same ETag where the record has one); else the source opened from the record, kept
    /// instead.
    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        let key = locate(&record.url)?.url();
        let agrees = |s: &Arc<dyn ByteSource>| {
            s.record().size == record.size
                && (record.etag.is_none() || s.record().etag == record.etag)
        };
        if let Some(s) = self.lock().get(&key).filter(|s| agrees(s)) {
            return Ok(s.clone());
        }
        let s = self.inner.open_recorded(&SourceRecord {
            url: key.clone(),
            ..record.clone()
        })?;
        let mut open = self.lock();
        let kept = open.entry(key).or_insert_with(|| s.clone());
        if !agrees(kept) {
            *kept = s.clone();
        }
        Ok(kept.clone())
    }
}

/// A store that opens the sources it holds records of from those records
/// ([`SourceStore::open_recorded`]: an object scanned before is opened without a HEAD
/// request, its reads conditional on the recorded ETag), and any other URL as `inner` does.
#[derive(Debug)]
pub struct Recorded<T> {
    inner: T,
    records: HashMap<String, SourceRecord>,
}

impl<T: SourceStore> Recorded<T> {
    /// `inner`, opening the sources of `records` (by URL) from them.
    pub fn new(inner: T, records: impl IntoIterator<Item = SourceRecord>) -> Self {
        Recorded {
            inner,
            records: records.into_iter().map(|r| (r.url.clone(), r)).collect(),
        }
    }
}

impl<T: SourceStore> SourceStore for Recorded<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        match self.records.get(url) {
            Some(r) => self.inner.open_recorded(r),
            None => self.inner.open(url),
        }
    }

    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.inner.open_recorded(record)
    }
}

/// A [`SourceStore`] of sources opened already (e.g. through a store a user configured), by
/// the URL they record; any other URL is not found.
#[derive(Debug, Default)]
pub struct Opened {
    sources: HashMap<String, Arc<dyn ByteSource>>,
}

impl Opened {
    /// A store of `sources`.
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn ByteSource>>) -> Self {
        Opened {
            sources: sources
                .into_iter()
                .map(|s| (s.record().url.clone(), s))
                .collect(),
        }
    }
}

impl SourceStore for Opened {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.sources
            .get(url)
            .cloned()
            .ok_or_else(|| SourceError::NotFound {
                url: url.to_string(),
            })
    }
}

/// A persistent pool of `threads` threads for [`read_across`] (one a thread count, built the
/// first time it is asked for): a call that reads a few ranges of many sources, as
/// zarr-python's store calls do, then starts no thread (starting them cost about 80 us a
/// range). `None` when the pool cannot be built.
fn read_pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == threads) {
        return Some(p.clone());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("vzarr-read-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.push((threads, pool.clone()));
    Some(pool)
}

/// Reads byte ranges of many sources: ranges are grouped by URL, each source is opened
/// through `store` and read with one [`ByteSource::read_ranges`] call, up to `concurrency`
/// sources at once (on a pool of threads kept between calls). The result is in request
/// order.
pub fn read_across(
    store: &dyn SourceStore,
    requests: &[(&str, Range<u64>)],
    concurrency: usize,
) -> Result<Vec<Bytes>, SourceError> {
    let mut by_url: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, (url, _)) in requests.iter().enumerate() {
        let k = *index.entry(url).or_insert_with(|| {
            by_url.push((url, Vec::new()));
            by_url.len() - 1
        });
        by_url[k].1.push(i);
    }
    let read_one = |(url, idx): &(&str, Vec<usize>)| -> Result<Vec<(usize, Bytes)>, SourceError> {
        let src = store.open(url)?;
        let ranges: Vec<Range<u64>> = idx.iter().map(|&i| requests[i].1.clone()).collect();
        let got = src.read_ranges(&ranges)?;
        Ok(idx.iter().copied().zip(got).collect())
    };
    let pool = (concurrency > 1 && by_url.len() > 1)
        .then(|| read_pool(concurrency))
        .flatten();
    let results: Vec<_> = match pool {
        Some(pool) => {
            use rayon::prelude::*;
            pool.install(|| by_url.par_iter().map(read_one).collect())
        }
        None => parallel_map(&by_url, concurrency, read_one),
    };
    let mut out: Vec<Option<Bytes>> = vec![None; requests.len()];
    for r in results {
        for (i, b) in r? {
            out[i] = Some(b);
        }
    }
    Ok(out.into_iter().map(Option::unwrap_or_default).collect())
}

/// `f` applied to every item, on up to `threads` scoped threads (blocking I/O of many sources
/// at once); the results in item order.
pub fn parallel_map<I: Sync, T: Send>(
    items: &[I],
    threads: usize,
    f: impl Fn(&I) -> T + Sync,
) -> Vec<T> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<T>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(items.len()) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(k) else { break };
                    let r = f(item);
                    *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every item is mapped once the scope ends")
        })
        .collect()
}

/// `ns` since the Unix epoch as an RFC 3339 UTC timestamp.
pub fn format_ns(ns: i128) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i128::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        file_url(&absolute(&p).unwrap()).unwrap()
    }

    #[test]
    fn stores_open_paths_and_urls_and_read_across_sources() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.bin", &(0..200u8).collect::<Vec<_>>());
        let b = write(dir.path(), "b.bin", b"0123456789");
        let stats = IoStats::new();
        let store = Memo::new(Stores::new(ReadTuning {
            local_gap: 0,
            stats: Some(stats.clone()),
            ..Default::default()
        }));
        let s = store.open(a.strip_prefix("file://").unwrap()).unwrap();
        assert_eq!(s.url(), a);
        let reqs = [
            (b.as_str(), 2..4),
            (a.as_str(), 10..20),
            (a.as_str(), 20..30),
            (b.as_str(), 0..1),
        ];
        let got = read_across(&store, &reqs, 4).unwrap();
        assert_eq!(&got[0][..], b"23");
        assert_eq!(&got[1][..], &(10..20u8).collect::<Vec<_>>()[..]);
        assert_eq!(&got[2][..], &(20..30u8).collect::<Vec<_>>()[..]);
        assert_eq!(&got[3][..], b"0");
        let c = stats.counts();
        // a: 10..30 merged (adjacent); b: two reads; each file opened once.
        assert_eq!((c.requests, c.bytes, c.opens), (3, 23, 2));
        assert!(read_across(&store, &[(a.as_str(), 150..250)], 1).is_err());
        // Many sources at once (the pool of reading threads): an error of one is the call's.
        assert!(read_across(&store, &[(b.as_str(), 0..1), (a.as_str(), 150..250)], 4).is_err());
    }

    #[test]
    fn check_records_reports_changes() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.bin", b"abc");
        let now = Stores::default().open(&a).unwrap().record().clone();
        let ok = CheckRecords::new(Stores::default(), [now.clone()]);
        ok.open(&a).unwrap();
        let then = SourceRecord {
            size: 4,
            mtime_ns: Some(0),
            ..now.clone()
        };
        let stale = CheckRecords::new(Stores::default(), [then]);
        let e = stale.open(&a).unwrap_err().to_string();
        assert!(e.contains("size changed from 4 to 3 bytes"), "{e}");
        assert!(
            e.contains("modification time changed from 1970-01-01T00:00:00"),
            "{e}"
        );
        let gone = SourceRecord {
            url: format!("{a}.gone"),
            ..now.clone()
        };
        // Rewritten in place with the same size and time: the fingerprint tells.
        let mut printed = now.clone();
        printed.fingerprint =
            Some(fingerprint(Stores::default().open(&a).unwrap().as_ref()).unwrap());
        CheckRecords::new(Stores::default(), [printed.clone()])
            .open(&a)
            .unwrap();
        let t = std::fs::metadata(a.strip_prefix("file://").unwrap())
            .unwrap()
            .modified()
            .unwrap();
        std::fs::write(a.strip_prefix("file://").unwrap(), b"abd").unwrap();
        std::fs::File::options()
            .write(true)
            .open(a.strip_prefix("file://").unwrap())
            .unwrap()
            .set_modified(t)
            .unwrap();
        let e = CheckRecords::new(Stores::default(), [printed])
            .open(&a)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("content changed (fingerprint of the first 64 KiB"),
            "{e}"
        );
        let e = CheckRecords::new(Stores::default(), [gone.clone()])
            .open(&gone.url)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no longer exists"), "{e}");
    }

    #[test]
    fn formats_timestamps() {
        assert_eq!(format_ns(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            format_ns(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456789Z"
        );
        assert_eq!(format_ns(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            format_ns(951_782_400 * 1_000_000_000),
            "2000-02-29T00:00:00.000000000Z"
        );
    }
}
