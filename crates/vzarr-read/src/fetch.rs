//! Byte access to sources through `object_store`: URL resolution (local files, S3, GCS, Azure,
//! HTTP; URL parsing and clients from `vzarr-source`), the allowed-prefix check before every
//! request, source staleness checks, and coalesced, concurrent ranged reads on an internal
//! tokio runtime.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use vzarr_source::{
    Location, PrefixPolicy, Scheme, SourceStamp, StoreCache, merge_ranges, object_path,
};

use crate::ReadError;

/// Counters of what was fetched.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub bytes: AtomicU64,
    pub requests: AtomicU64,
    pub heads: AtomicU64,
}

/// Tuning of ranged reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FetchTuning {
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Ranges of one source closer than this are fetched as one request.
    pub coalesce_gap: u64,
    /// Coalesced requests grow to at most this many bytes (a single larger range is fetched
    /// alone).
    pub max_request: u64,
}

type CheckCell = Arc<tokio::sync::OnceCell<Result<(), ReadError>>>;

/// The ranges fetched from one source and their bytes.
type Fetched = (Arc<str>, Vec<Range<u64>>, Vec<Bytes>);

/// Resolves URLs and fetches byte ranges.
pub(crate) struct Fetcher {
    rt: Option<tokio::runtime::Runtime>,
    /// Clients of this fetcher (used on its runtime only).
    stores: StoreCache,
    policy: PrefixPolicy,
    records: HashMap<String, SourceStamp>,
    checks: Mutex<HashMap<String, CheckCell>>,
    ignore_stale: bool,
    pub stats: Stats,
    tuning: FetchTuning,
}

impl Drop for Fetcher {
    fn drop(&mut self) {
        // Never block in drop (the reader may be dropped inside another async runtime).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// One byte range of one source.
#[derive(Clone, Debug)]
pub(crate) struct RangeRequest {
    /// Source URL as written in the manifest.
    pub url: Arc<str>,
    /// Byte offset.
    pub offset: u64,
    /// Number of bytes.
    pub length: u64,
}

fn os_error(url: &str, e: object_store::Error) -> ReadError {
    match e {
        object_store::Error::NotFound { .. } => ReadError::source(url, "not found"),
        other => ReadError::source(url, other),
    }
}

/// `ns` since the Unix epoch as an RFC 3339 UTC timestamp.
pub(crate) fn format_ns(ns: i128) -> String {
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

impl Fetcher {
    /// A fetcher with its own runtime.
    pub fn new(
        policy: PrefixPolicy,
        records: HashMap<String, SourceStamp>,
        ignore_stale: bool,
        tuning: FetchTuning,
    ) -> Result<Self, ReadError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .max_blocking_threads(tuning.concurrency.max(1) * 2)
            .thread_name("vzarr-read-io")
            .enable_all()
            .build()
            .map_err(|e| ReadError::Options(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Fetcher {
            rt: Some(rt),
            stores: StoreCache::new(),
            policy,
            records,
            checks: Mutex::new(HashMap::new()),
            ignore_stale,
            stats: Stats::default(),
            tuning,
        })
    }

    /// Runs `f` on the internal runtime and waits for it (callable from any thread, also
    /// threads of another runtime).
    pub fn block_on<F, T>(&self, f: F) -> Result<T, ReadError>
    where
        F: Future<Output = Result<T, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self
            .rt
            .as_ref()
            .ok_or_else(|| ReadError::Options("the I/O runtime is shut down".into()))?;
        let handle = rt.spawn(f);
        match futures::executor::block_on(handle) {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(ReadError::Options(format!("I/O task failed: {e}"))),
        }
    }

    /// Spawns `f` on the internal runtime.
    pub fn spawn<F, T>(&self, f: F) -> Option<tokio::task::JoinHandle<Result<T, ReadError>>>
    where
        F: Future<Output = Result<T, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        self.rt.as_ref().map(|rt| rt.spawn(f))
    }

    /// Waits for a task spawned with [`Fetcher::spawn`].
    pub fn join<T>(handle: tokio::task::JoinHandle<Result<T, ReadError>>) -> Result<T, ReadError> {
        match futures::executor::block_on(handle) {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(ReadError::Options(format!("I/O task failed: {e}"))),
        }
    }

    /// Checks `url` against the allowed prefixes and returns its store and object path.
    pub fn resolve(
        &self,
        url: &str,
    ) -> Result<(Arc<dyn ObjectStore>, ObjectPath, Location), ReadError> {
        let refused = |reason: String| ReadError::NotAllowed {
            url: url.to_string(),
            array: None,
            reason,
        };
        let (loc, prefix) = self.policy.check(url).map_err(refused)?;
        let path = object_path(&loc).map_err(|e| {
            refused(if loc.scheme == Scheme::File {
                format!("not a valid local path: {e}")
            } else {
                format!("not a valid object key: {e}")
            })
        })?;
        if loc.scheme == Scheme::File {
            // The file object_store will open must be the one that was checked.
            let want = loc.local_path();
            let actual = self
                .stores
                .local()
                .path_to_filesystem(&path)
                .map_err(|e| refused(format!("not a valid local path: {e}")))?;
            let under = prefix
                .local_path()
                .is_some_and(|dir| actual.starts_with(dir));
            if actual != want || !under {
                return Err(refused(format!(
                    "resolves to {} outside the allowed prefix",
                    actual.display()
                )));
            }
        }
        let store = self.stores.store(loc.scheme, &loc.authority).map_err(|e| {
            ReadError::source(
                url,
                format!("cannot set up the {} client: {e}", loc.scheme.as_str()),
            )
        })?;
        Ok((store, path, loc))
    }

    /// Current size, modification time and ETag of a source.
    pub async fn head(self: Arc<Self>, url: String) -> Result<ObjectMeta, ReadError> {
        let (store, path, _) = self.resolve(&url)?;
        self.stats.heads.fetch_add(1, Ordering::Relaxed);
        store.head(&path).await.map_err(|e| os_error(&url, e))
    }

    async fn check_one(self: Arc<Self>, url: String, rec: SourceStamp) -> Result<(), ReadError> {
        let meta = match self.clone().head(url.clone()).await {
            Ok(m) => m,
            Err(ReadError::Source { reason, .. }) if reason == "not found" => {
                return Err(ReadError::Stale {
                    url,
                    what: "the source no longer exists".into(),
                });
            }
            Err(e) => return Err(e),
        };
        let mut changes = Vec::new();
        if meta.size != rec.size {
            changes.push(format!(
                "size changed from {} to {} bytes",
                rec.size, meta.size
            ));
        }
        if let Some(then) = rec.mtime_ns {
            let now = meta.last_modified.timestamp_nanos_opt().map(i128::from);
            if now != Some(then) {
                changes.push(format!(
                    "modification time changed from {} to {}",
                    format_ns(then),
                    now.map_or_else(|| meta.last_modified.to_string(), format_ns)
                ));
            }
        }
        if let (Some(then), Some(now)) = (&rec.etag, &meta.e_tag)
            && then != now
        {
            changes.push(format!("ETag changed from {then} to {now}"));
        }
        if changes.is_empty() {
            Ok(())
        } else {
            Err(ReadError::Stale {
                url,
                what: changes.join(", "),
            })
        }
    }

    /// Checks once per source (memoised) that it has not changed since the build; sources
    /// without a record, and everything when staleness is ignored, pass.
    pub async fn ensure_fresh(self: Arc<Self>, url: Arc<str>) -> Result<(), ReadError> {
        if self.ignore_stale {
            return Ok(());
        }
        let Some(rec) = self.records.get(&*url).cloned() else {
            return Ok(());
        };
        let cell = {
            let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
            checks.entry(url.to_string()).or_default().clone()
        };
        let me = self.clone();
        cell.get_or_init(|| me.check_one(url.to_string(), rec))
            .await
            .clone()
    }

    /// Checks every recorded source concurrently; all stale sources, in URL order.
    pub async fn check_all(self: Arc<Self>, urls: Vec<Arc<str>>) -> Vec<ReadError> {
        let n = self.tuning.concurrency.max(1);
        let mut out: Vec<(Arc<str>, ReadError)> = futures::stream::iter(urls)
            .map(|u| {
                let me = self.clone();
                async move { (u.clone(), me.ensure_fresh(u).await) }
            })
            .buffer_unordered(n)
            .filter_map(|(u, r)| async move { r.err().map(|e| (u, e)) })
            .collect()
            .await;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, e)| e).collect()
    }

    /// Fetches many byte ranges: sources checked for staleness first, ranges of one source
    /// coalesced (gaps below the coalescing gap, requests of bounded size), requests in
    /// flight bounded. The result is in request order; each has exactly the requested length.
    /// `direct` reads (verification reading a source itself) are not counted in the stats.
    pub async fn fetch_many(
        self: Arc<Self>,
        requests: Vec<RangeRequest>,
        direct: bool,
    ) -> Result<Vec<Bytes>, ReadError> {
        // Per source: the requested ranges.
        let mut by_url: HashMap<Arc<str>, Vec<Range<u64>>> = HashMap::new();
        for r in &requests {
            let end = r.offset.checked_add(r.length).ok_or_else(|| {
                ReadError::source(&r.url, format!("range {}+{} overflows", r.offset, r.length))
            })?;
            by_url.entry(r.url.clone()).or_default().push(r.offset..end);
        }
        let n = self.tuning.concurrency.max(1);
        let urls: Vec<Arc<str>> = by_url.keys().cloned().collect();
        futures::stream::iter(urls.clone())
            .map(|u| self.clone().ensure_fresh(u))
            .buffer_unordered(n)
            .try_collect::<Vec<()>>()
            .await?;

        // Coalesced requests, grouped into tasks of bounded size per source.
        struct Task {
            url: Arc<str>,
            store: Arc<dyn ObjectStore>,
            path: ObjectPath,
            ranges: Vec<Range<u64>>,
        }
        let mut tasks = Vec::new();
        let mut merged_by_url: HashMap<Arc<str>, Vec<Range<u64>>> = HashMap::new();
        for (url, ranges) in &by_url {
            let (store, path, _) = self.resolve(url)?;
            let merged = merge_ranges(ranges, self.tuning.coalesce_gap, self.tuning.max_request);
            let mut group: Vec<Range<u64>> = Vec::new();
            let mut size = 0u64;
            for m in &merged {
                let len = m.end - m.start;
                if !group.is_empty() && size + len > self.tuning.max_request {
                    tasks.push(Task {
                        url: url.clone(),
                        store: store.clone(),
                        path: path.clone(),
                        ranges: std::mem::take(&mut group),
                    });
                    size = 0;
                }
                group.push(m.clone());
                size += len;
            }
            if !group.is_empty() {
                tasks.push(Task {
                    url: url.clone(),
                    store,
                    path,
                    ranges: group,
                });
            }
            merged_by_url.insert(url.clone(), merged);
        }
        let stats = &self.stats;
        let fetched: Vec<Fetched> = futures::stream::iter(tasks)
            .map(|t| async move {
                let bytes = t
                    .store
                    .get_ranges(&t.path, &t.ranges)
                    .await
                    .map_err(|e| os_error(&t.url, e))?;
                for (r, b) in t.ranges.iter().zip(&bytes) {
                    if b.len() as u64 != r.end - r.start {
                        return Err(ReadError::source(
                            &t.url,
                            format!(
                                "short read: {} bytes at offset {} returned {} (the source is \
                                 shorter than the manifest says)",
                                r.end - r.start,
                                r.start,
                                b.len()
                            ),
                        ));
                    }
                    if !direct {
                        stats.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
                        stats.requests.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok::<_, ReadError>((t.url, t.ranges, bytes))
            })
            .buffer_unordered(n)
            .try_collect()
            .await?;
        let mut pieces: HashMap<Arc<str>, Vec<(Range<u64>, Bytes)>> = HashMap::new();
        for (url, ranges, bytes) in fetched {
            pieces
                .entry(url)
                .or_default()
                .extend(ranges.into_iter().zip(bytes));
        }
        for v in pieces.values_mut() {
            v.sort_by_key(|(r, _)| r.start);
        }
        requests
            .iter()
            .map(|r| {
                let v = pieces
                    .get(&r.url)
                    .ok_or_else(|| ReadError::source(&r.url, "range was not fetched"))?;
                let idx = v.partition_point(|(m, _)| m.start <= r.offset);
                let (m, b) = idx
                    .checked_sub(1)
                    .and_then(|i| v.get(i))
                    .ok_or_else(|| ReadError::source(&r.url, "range was not fetched"))?;
                let start = (r.offset - m.start) as usize;
                let end = start + r.length as usize;
                if r.offset + r.length > m.end || end > b.len() {
                    return Err(ReadError::source(&r.url, "range was not fetched"));
                }
                Ok(b.slice(start..end))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetcher(prefixes: &[&str]) -> Fetcher {
        let given: Vec<String> = prefixes.iter().map(|p| p.to_string()).collect();
        let tuning = FetchTuning {
            concurrency: 2,
            coalesce_gap: 0,
            max_request: 1 << 20,
        };
        Fetcher::new(
            PrefixPolicy::new(&[], &given).unwrap(),
            HashMap::new(),
            false,
            tuning,
        )
        .unwrap()
    }

    #[test]
    fn resolves_urls_to_stores_and_keys() {
        let f = fetcher(&[
            "https://example.com/data/",
            "s3://bucket/a/",
            "gs://b/",
            "/data/",
        ]);
        let (_, p, l) = f.resolve("https://example.com/data/x%20y.nc").unwrap();
        assert_eq!((p.as_ref(), l.scheme), ("data/x y.nc", Scheme::Https));
        let (_, p, _) = f.resolve("s3://bucket/a/b c.nc").unwrap();
        assert_eq!(p.as_ref(), "a/b c.nc");
        let (_, p, _) = f.resolve("gs://b/k.nc").unwrap();
        assert_eq!(p.as_ref(), "k.nc");
        let (_, p, l) = f.resolve("file:///data/x.nc").unwrap();
        assert_eq!((p.as_ref(), l.scheme), ("data/x.nc", Scheme::File));
        for bad in [
            "https://example.com/other/x",
            "s3://bucket/b/x",
            "file:///etc/passwd",
            "file:///data/../etc/passwd",
        ] {
            let e = f.resolve(bad).err().unwrap();
            assert!(matches!(e, ReadError::NotAllowed { .. }), "{bad}: {e}");
        }
        // Stores are made once per bucket.
        let (a, _, _) = f.resolve("s3://bucket/a/1").unwrap();
        let (b, _, _) = f.resolve("s3://bucket/a/2").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn fetches_coalesced_ranges_in_request_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = Arc::new(fetcher(&[dir.path().to_str().unwrap()]));
        let url: Arc<str> = Arc::from(format!("file://{}", p.display()));
        let req = |o: u64, l: u64| RangeRequest {
            url: url.clone(),
            offset: o,
            length: l,
        };
        let reqs = vec![
            req(5000, 10),
            req(0, 100),
            req(100, 50),
            req(9990, 10),
            req(20, 5),
        ];
        let g = f.clone();
        let got = f.block_on(g.fetch_many(reqs.clone(), false)).unwrap();
        for (r, b) in reqs.iter().zip(&got) {
            assert_eq!(
                &b[..],
                &data[r.offset as usize..(r.offset + r.length) as usize]
            );
        }
        // 0..150 merge (the 20..25 inside), the others stay apart (gap 0).
        assert_eq!(f.stats.requests.load(Ordering::Relaxed), 3);
        assert_eq!(f.stats.bytes.load(Ordering::Relaxed), 170);
        let g = f.clone();
        let e = f
            .block_on(g.fetch_many(vec![req(9995, 10)], false))
            .unwrap_err();
        assert!(e.to_string().contains("f.bin"), "{e}");
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
