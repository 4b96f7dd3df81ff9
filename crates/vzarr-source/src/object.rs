//! Sources on object storage through `object_store`: one client per (scheme, bucket or host)
//! built from the environment, each behind `object_store`'s [`LimitStore`] so that requests in
//! flight stay bounded, and [`ObjectSource`]: a HEAD at open, then one ranged GET per range,
//! conditional on the ETag seen at open.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::limit::LimitStore;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};
use vzarr_core::SourceRecord;

use crate::url::{Location, Scheme};
use crate::{ByteSource, SourceError, block_on, range_len};

/// Requests in flight at most per object-store client, unless configured otherwise: twice the
/// scans a catalog build keeps in flight on object storage (128), so that a scan's second
/// request or the planner's reads do not queue behind them.
pub const DEFAULT_MAX_REQUESTS: usize = 256;

/// Ranges of one source fetched concurrently at most, unless configured otherwise.
pub const DEFAULT_RANGE_CONCURRENCY: usize = 16;

/// The record of an object's metadata.
pub(crate) fn meta_record(url: String, meta: &ObjectMeta) -> SourceRecord {
    SourceRecord {
        url,
        size: meta.size,
        mtime_ns: meta.last_modified.timestamp_nanos_opt().map(i128::from),
        etag: meta.e_tag.clone(),
        fingerprint: None,
    }
}

/// The object path of a location in its store: the absolute path for local files, the
/// percent-decoded path for HTTP(S), the key as written otherwise.
pub fn object_path(loc: &Location) -> Result<ObjectPath, object_store::path::Error> {
    match loc.scheme {
        Scheme::File => ObjectPath::from_absolute_path(loc.local_path()),
        Scheme::Http | Scheme::Https => ObjectPath::from_url_path(&loc.key),
        _ => ObjectPath::parse(&loc.key),
    }
}

/// `object_store` clients, one per (scheme, bucket/container/host), built from the
/// environment on first use and kept: S3 with `AmazonS3Builder::from_env()` (`AWS_*`
/// variables, endpoint included), GCS with `GoogleCloudStorageBuilder::from_env()`, Azure with
/// `MicrosoftAzureBuilder::from_env()`, HTTP(S) with `HttpBuilder` (plain HTTP allowed for
/// `http://` URLs only), and one `LocalFileSystem` for `file://`. Every remote client is
/// wrapped in a [`LimitStore`] of `max_requests`; retries follow each client's defaults.
#[derive(Debug)]
pub struct Clients {
    local: Arc<LocalFileSystem>,
    max_requests: usize,
    stores: Mutex<HashMap<(Scheme, String), Arc<dyn ObjectStore>>>,
}

impl Default for Clients {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_REQUESTS)
    }
}

impl Clients {
    /// Clients allowing `max_requests` requests in flight each (at least 1).
    pub fn new(max_requests: usize) -> Self {
        Clients {
            local: Arc::new(LocalFileSystem::new()),
            max_requests: max_requests.max(1),
            stores: Mutex::new(HashMap::new()),
        }
    }

    /// The process-wide clients.
    pub fn global() -> &'static Clients {
        static GLOBAL: OnceLock<Clients> = OnceLock::new();
        GLOBAL.get_or_init(Clients::default)
    }

    /// The local file system store (root `/`).
    pub fn local(&self) -> &Arc<LocalFileSystem> {
        &self.local
    }

    /// The client for `scheme` and `authority` (bucket, container or `host[:port]`), built on
    /// first use.
    pub fn store(
        &self,
        scheme: Scheme,
        authority: &str,
    ) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
        if scheme == Scheme::File {
            return Ok(self.local.clone());
        }
        let key = (scheme, authority.to_string());
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = stores.get(&key) {
            return Ok(s.clone());
        }
        let client: Arc<dyn ObjectStore> = match scheme {
            Scheme::S3 => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(authority)
                    .build()?,
            ),
            Scheme::Gcs => Arc::new(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(authority)
                    .build()?,
            ),
            Scheme::Azure => {
                let b = object_store::azure::MicrosoftAzureBuilder::from_env();
                let b = if authority.contains('@') {
                    b.with_url(format!("abfs://{authority}/"))
                } else {
                    b.with_container_name(authority)
                };
                Arc::new(b.build()?)
            }
            Scheme::Http | Scheme::Https => Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(format!("{}://{authority}", scheme.as_str()))
                    .with_client_options(
                        object_store::ClientOptions::new().with_allow_http(scheme == Scheme::Http),
                    )
                    .build()?,
            ),
            Scheme::File => return Ok(self.local.clone()),
        };
        let store: Arc<dyn ObjectStore> = Arc::new(LimitStore::new(client, self.max_requests));
        stores.insert(key, store.clone());
        Ok(store)
    }

    /// The client and object path of a location.
    pub fn resolve(
        &self,
        loc: &Location,
    ) -> Result<(Arc<dyn ObjectStore>, ObjectPath), SourceError> {
        let url = loc.url();
        let path = object_path(loc).map_err(|e| SourceError::Remote {
            url: url.clone(),
            source: Box::new(e.into()),
        })?;
        let store =
            self.store(loc.scheme, &loc.authority)
                .map_err(|source| SourceError::Client {
                    url,
                    scheme: loc.scheme.as_str(),
                    source: Box::new(source),
                })?;
        Ok((store, path))
    }
}

/// One object on object storage, read with ranged GETs. [`ObjectSource::open`] does a HEAD
/// request for its size, modification time and ETag; reads are checked against that size and,
/// where the object has an ETag, made conditional on it (`If-Match`), so an object replaced
/// after the open is an error ([`SourceError::Changed`]), never a mix of old and new bytes.
/// Each range is one request, `concurrency` at a time; put [`crate::Coalesced`] in front to
/// merge nearby ranges.
#[derive(Debug)]
pub struct ObjectSource {
    location: Location,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    record: SourceRecord,
    concurrency: usize,
}

impl ObjectSource {
    /// Opens the object at `loc` (any scheme, `file://` included) with `clients`.
    pub fn open(clients: &Clients, loc: &Location) -> Result<Self, SourceError> {
        let url = loc.url();
        let (store, path) = clients.resolve(loc)?;
        let (s, p, u) = (store.clone(), path.clone(), url.clone());
        let meta =
            block_on(async move { s.head(&p).await.map_err(|e| SourceError::remote(&u, e)) })?;
        Ok(ObjectSource {
            location: loc.clone(),
            store,
            path,
            record: meta_record(url, &meta),
            concurrency: DEFAULT_RANGE_CONCURRENCY,
        })
    }

    /// Opens the object at `loc` and reads its first `head` bytes (fewer if it is shorter) in
    /// one ranged GET, whose response also gives the size, modification time and ETag: one
    /// request instead of a HEAD and a GET.
    pub fn open_with_head(
        clients: &Clients,
        loc: &Location,
        head: u64,
    ) -> Result<(Self, Bytes), SourceError> {
        let (store, path) = clients.resolve(loc)?;
        Self::open_with_head_in(store, path, loc, head)
    }

    /// [`ObjectSource::open_with_head`] through a store the caller gives (e.g. one a user
    /// configured, whose credentials and endpoint differ from the environment's), where the
    /// object lies at `path`; `loc` is the URL it is known by (recorded in references, named
    /// in errors).
    pub fn open_with_head_in(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        loc: &Location,
        head: u64,
    ) -> Result<(Self, Bytes), SourceError> {
        let url = loc.url();
        let (s, p, u) = (store.clone(), path.clone(), url.clone());
        let got = block_on(async move {
            let options = GetOptions::new().with_range(Some(0..head.max(1)));
            match s.get_opts(&p, options).await {
                Ok(r) => {
                    let meta = r.meta.clone();
                    let bytes = r.bytes().await.map_err(|e| SourceError::remote(&u, e))?;
                    Ok(Some((meta, bytes)))
                }
                // An empty object has no byte 0 to start a range at.
                Err(object_store::Error::Generic { .. })
                | Err(object_store::Error::NotModified { .. }) => Ok(None),
                Err(e) => Err(SourceError::remote(&u, e)),
            }
        })?;
        let (meta, bytes) = match got {
            Some(v) => v,
            None => {
                let (s, p, u) = (store.clone(), path.clone(), url.clone());
                let meta =
                    block_on(
                        async move { s.head(&p).await.map_err(|e| SourceError::remote(&u, e)) },
                    )?;
                (meta, Bytes::new())
            }
        };
        let src = ObjectSource {
            location: loc.clone(),
            store,
            path,
            record: meta_record(url, &meta),
            concurrency: DEFAULT_RANGE_CONCURRENCY,
        };
        Ok((src, bytes))
    }

    /// The object at `loc` as `record` describes it (size, modification time, ETag), without
    /// a request: for a source scanned before, whose record is at hand. Reads are checked
    /// against the recorded size and made conditional on the recorded ETag, so an object
    /// replaced since the record was made is an error ([`SourceError::Changed`]) on the first
    /// read, never a mix of old and new bytes.
    pub fn from_record(
        clients: &Clients,
        loc: &Location,
        record: &SourceRecord,
    ) -> Result<Self, SourceError> {
        let (store, path) = clients.resolve(loc)?;
        Ok(Self::from_record_in(store, path, loc, record))
    }

    /// [`ObjectSource::from_record`] through a store the caller gives, where the object lies
    /// at `path` (see [`ObjectSource::open_with_head_in`]).
    pub fn from_record_in(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        loc: &Location,
        record: &SourceRecord,
    ) -> Self {
        ObjectSource {
            location: loc.clone(),
            store,
            path,
            record: SourceRecord {
                url: loc.url(),
                ..record.clone()
            },
            concurrency: DEFAULT_RANGE_CONCURRENCY,
        }
    }

    /// The same source fetching at most `n` ranges at once (at least 1).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The parsed location.
    pub fn location(&self) -> &Location {
        &self.location
    }
}

impl ByteSource for ObjectSource {
    fn record(&self) -> &SourceRecord {
        &self.record
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        let url = &self.record.url;
        for r in ranges {
            range_len(url, r, self.record.size)?;
        }
        let wanted: Vec<Range<u64>> = ranges.to_vec();
        let (store, path, url) = (self.store.clone(), self.path.clone(), url.clone());
        let etag = self.record.etag.clone();
        let n = self.concurrency;
        block_on(async move {
            futures::stream::iter(wanted)
                .map(|r| {
                    let (store, path, url, etag) = (&store, &path, &url, &etag);
                    async move {
                        if r.is_empty() {
                            return Ok(Bytes::new());
                        }
                        let options = GetOptions::new()
                            .with_range(Some(r.clone()))
                            .with_if_match(etag.clone());
                        let got = store
                            .get_opts(path, options)
                            .await
                            .map_err(|e| SourceError::remote(url, e))?;
                        let bytes = got.bytes().await.map_err(|e| SourceError::remote(url, e))?;
                        if bytes.len() as u64 != r.end - r.start {
                            return Err(SourceError::ShortRead {
                                url: url.clone(),
                                offset: r.start,
                                len: r.end - r.start,
                                got: bytes.len() as u64,
                            });
                        }
                        Ok(bytes)
                    }
                })
                .buffered(n)
                .try_collect()
                .await
        })
    }
}

/// Bytes of each part of a multipart upload by [`ObjectWriter`] (the last may be smaller); an
/// object of at most this many bytes is written in one PUT.
pub const PUT_PART: usize = 16 << 20;

/// Parts of one [`ObjectWriter`] being uploaded at once at most (so it holds at most this
/// many parts, plus the one it is filling).
const PARTS_IN_FLIGHT: usize = 4;

/// One object written as a stream (an [`std::io::Write`]), replacing any object at its
/// location. Readers see the old object or the new one, never a part: up to
/// [`PUT_PART`] bytes are sent in one PUT by [`ObjectWriter::finish`]; more go as a
/// multipart upload, in parts sent while writing goes on (a few at once), which the store
/// publishes only when `finish` completes it. A failed part, a failed completion, or a writer
/// dropped without `finish` aborts the upload, so nothing appears and no parts are left
/// stored. Memory stays at a few parts whatever the object's size.
pub struct ObjectWriter {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    part_size: usize,
    /// The part being filled.
    buf: Vec<u8>,
    /// The multipart upload, once more than one part's bytes were written.
    upload: Option<Box<dyn object_store::MultipartUpload>>,
    /// Parts sent and not yet acknowledged, oldest first.
    in_flight: std::collections::VecDeque<tokio::task::JoinHandle<object_store::Result<()>>>,
    /// Whether writing failed (the upload is then aborted and every later call fails).
    failed: bool,
    finished: bool,
}

impl ObjectWriter {
    /// A writer of the object at `loc` (an object-store URL), through `clients`. Sends
    /// nothing yet.
    pub fn create(clients: &Clients, loc: &Location) -> Result<Self, SourceError> {
        let (store, path) = clients.resolve(loc)?;
        Ok(Self::new_in(store, path, loc.url()))
    }

    /// A writer of the object at `path` in `store`, named `url` in errors.
    pub fn new_in(store: Arc<dyn ObjectStore>, path: ObjectPath, url: String) -> Self {
        ObjectWriter {
            url,
            store,
            path,
            part_size: PUT_PART,
            buf: Vec::new(),
            upload: None,
            in_flight: Default::default(),
            failed: false,
            finished: false,
        }
    }

    /// The same writer with parts of `bytes` (at least 1; S3 refuses parts but the last
    /// below 5 MiB) instead of [`PUT_PART`].
    pub fn with_part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(1);
        self
    }

    fn check(&self) -> Result<(), SourceError> {
        let reason = if self.failed {
            "an earlier write to it failed; nothing was written"
        } else if self.finished {
            "written to after it was finished"
        } else {
            return Ok(());
        };
        Err(SourceError::Io {
            url: self.url.clone(),
            source: std::io::Error::other(reason),
        })
    }

    /// Marks the writer failed, aborts the upload and returns `e`.
    fn fail(&mut self, e: SourceError) -> SourceError {
        self.failed = true;
        self.abort();
        e
    }

    fn send_full_parts(&mut self) -> Result<(), SourceError> {
        while self.buf.len() > self.part_size {
            let rest = self.buf.split_off(self.part_size);
            let part = std::mem::replace(&mut self.buf, rest);
            if let Err(e) = self.send_part(part) {
                return Err(self.fail(e));
            }
        }
        Ok(())
    }

    /// Sends one part (starting the upload first if needed), waiting for the oldest part in
    /// flight when [`PARTS_IN_FLIGHT`] are.
    fn send_part(&mut self, part: Vec<u8>) -> Result<(), SourceError> {
        if self.upload.is_none() {
            let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
            let upload = block_on(async move {
                store
                    .put_multipart(&path)
                    .await
                    .map_err(|e| SourceError::remote(&url, e))
            })?;
            self.upload = Some(upload);
        }
        while self.in_flight.len() >= PARTS_IN_FLIGHT {
            self.wait_oldest()?;
        }
        let upload = self.upload.as_mut().expect("started above");
        let sending = upload.put_part(Bytes::from(part).into());
        self.in_flight.push_back(crate::runtime()?.spawn(sending));
        Ok(())
    }

    fn wait_oldest(&mut self) -> Result<(), SourceError> {
        let Some(h) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match futures::executor::block_on(h) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(SourceError::remote(&self.url, e)),
            Err(e) => Err(SourceError::Runtime {
                source: std::io::Error::other(e),
            }),
        }
    }

    /// Makes the object appear with everything written: one PUT, or the last part and the
    /// completion of the upload. On error nothing appears (the upload is aborted).
    pub fn finish(mut self) -> Result<(), SourceError> {
        self.check()?;
        let result = self.finish_inner();
        self.finished = true;
        result.map_err(|e| self.fail(e))
    }

    fn finish_inner(&mut self) -> Result<(), SourceError> {
        let data = Bytes::from(std::mem::take(&mut self.buf));
        if self.upload.is_none() {
            let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
            return block_on(async move {
                store
                    .put(&path, data.into())
                    .await
                    .map(|_| ())
                    .map_err(|e| SourceError::remote(&url, e))
            });
        }
        if !data.is_empty() {
            self.send_part(data.into())?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        let mut upload = self.upload.take().expect("started");
        let url = self.url.clone();
        block_on(async move {
            match upload.complete().await {
                Ok(_) => Ok(()),
                Err(e) => {
                    let _ = upload.abort().await;
                    Err(SourceError::remote(&url, e))
                }
            }
        })
    }

    /// Waits for the parts in flight and aborts the upload, if one was started (best effort:
    /// errors are ignored, the first failure is what the caller reports).
    fn abort(&mut self) {
        while let Some(h) = self.in_flight.pop_front() {
            let _ = futures::executor::block_on(h);
        }
        if let Some(mut upload) = self.upload.take() {
            let _ = block_on(async move {
                let _ = upload.abort().await;
                Ok(())
            });
        }
    }
}

impl std::io::Write for ObjectWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.check().map_err(std::io::Error::other)?;
        self.buf.extend_from_slice(data);
        self.send_full_parts().map_err(std::io::Error::other)?;
        Ok(data.len())
    }

    /// Nothing to do: parts are sent when full, the rest by [`ObjectWriter::finish`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if !self.finished {
            self.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::{
        CopyOptions, GetResult, ListResult, MultipartUpload, PutMultipartOptions, PutOptions,
        PutPayload, PutResult, UploadPart,
    };

    use super::*;

    /// An in-memory store whose multipart uploads fail at part `fail_at` (never when 0) and
    /// that records uploads started and aborted.
    #[derive(Debug, Default)]
    struct Flaky {
        inner: InMemory,
        fail_at: usize,
        started: Arc<AtomicUsize>,
        aborted: Arc<AtomicBool>,
    }

    impl std::fmt::Display for Flaky {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Flaky")
        }
    }

    #[derive(Debug)]
    struct FlakyUpload {
        inner: Box<dyn MultipartUpload>,
        part: usize,
        fail_at: usize,
        aborted: Arc<AtomicBool>,
    }

    #[async_trait::async_trait]
    impl MultipartUpload for FlakyUpload {
        fn put_part(&mut self, data: PutPayload) -> UploadPart {
            self.part += 1;
            if self.part == self.fail_at {
                return Box::pin(async {
                    Err(object_store::Error::Generic {
                        store: "Flaky",
                        source: "part refused".into(),
                    })
                });
            }
            self.inner.put_part(data)
        }

        async fn complete(&mut self) -> object_store::Result<PutResult> {
            self.inner.complete().await
        }

        async fn abort(&mut self) -> object_store::Result<()> {
            self.aborted.store(true, Ordering::SeqCst);
            self.inner.abort().await
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Flaky {
        async fn put_opts(
            &self,
            location: &ObjectPath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &ObjectPath,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.started.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(FlakyUpload {
                inner: self.inner.put_multipart_opts(location, opts).await?,
                part: 0,
                fail_at: self.fail_at,
                aborted: self.aborted.clone(),
            }))
        }

        async fn get_opts(
            &self,
            location: &ObjectPath,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.inner.get_opts(location, options).await
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<ObjectPath>>,
        ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> object_store::Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &ObjectPath,
            to: &ObjectPath,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    fn content(store: &Flaky, path: &ObjectPath) -> Option<Vec<u8>> {
        let (inner, path) = (store.inner.clone(), path.clone());
        block_on(async move {
            match inner.get(&path).await {
                Ok(r) => Ok(Some(r.bytes().await.expect("body").to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => panic!("{e}"),
            }
        })
        .unwrap()
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// Writes `bytes` in writes of 1 to 97 bytes.
    fn write_all_unevenly(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
        let mut at = 0;
        let mut step = 1;
        while at < bytes.len() {
            let end = (at + step).min(bytes.len());
            w.write_all(&bytes[at..end])?;
            at = end;
            step = step % 97 + 13;
        }
        Ok(())
    }

    #[test]
    fn small_objects_are_one_put() {
        let store = Arc::new(Flaky::default());
        let path = ObjectPath::from("out/refs.json");
        let mut w = ObjectWriter::new_in(store.clone(), path.clone(), "mem://out/refs.json".into())
            .with_part_size(1000);
        write_all_unevenly(&mut w, &data(1000)).unwrap();
        assert_eq!(
            content(&store, &path),
            None,
            "nothing visible before finish"
        );
        w.finish().unwrap();
        assert_eq!(content(&store, &path), Some(data(1000)));
        assert_eq!(
            store.started.load(Ordering::SeqCst),
            0,
            "no multipart upload"
        );
    }

    #[test]
    fn large_objects_stream_in_parts_and_appear_whole_at_finish() {
        let store = Arc::new(Flaky::default());
        let path = ObjectPath::from("out/refs.json");
        // Replaces an object already there.
        let old = Bytes::from_static(b"old");
        let (inner, p) = (store.inner.clone(), path.clone());
        block_on(async move {
            inner.put(&p, old.into()).await.unwrap();
            Ok(())
        })
        .unwrap();
        // 10,000 bytes in parts of 64: 157 parts, more than are ever in flight.
        let mut w = ObjectWriter::new_in(store.clone(), path.clone(), "mem://out/refs.json".into())
            .with_part_size(64);
        write_all_unevenly(&mut w, &data(10_000)).unwrap();
        assert_eq!(
            content(&store, &path),
            Some(b"old".to_vec()),
            "old until finish"
        );
        w.finish().unwrap();
        assert_eq!(content(&store, &path), Some(data(10_000)));
        assert_eq!(store.started.load(Ordering::SeqCst), 1);
        assert!(!store.aborted.load(Ordering::SeqCst));
    }

    #[test]
    fn a_failed_part_aborts_the_upload_and_names_the_object() {
        let store = Arc::new(Flaky {
            fail_at: 5,
            ..Default::default()
        });
        let path = ObjectPath::from("out/refs.json");
        let mut w = ObjectWriter::new_in(store.clone(), path.clone(), "mem://out/refs.json".into())
            .with_part_size(64);
        // The failure shows at a later write or at finish (parts are sent in the background).
        let failed = write_all_unevenly(&mut w, &data(10_000)).err();
        let e = match failed {
            Some(e) => e.to_string(),
            None => w.finish().unwrap_err().to_string(),
        };
        assert!(
            e.contains("mem://out/refs.json") && e.contains("part refused"),
            "{e}"
        );
        assert!(store.aborted.load(Ordering::SeqCst), "upload aborted");
        assert_eq!(content(&store, &path), None, "nothing written");
    }

    #[test]
    fn a_writer_dropped_unfinished_aborts_and_writes_nothing() {
        let store = Arc::new(Flaky::default());
        let path = ObjectPath::from("out/refs.json");
        let mut w = ObjectWriter::new_in(store.clone(), path.clone(), "mem://out/refs.json".into())
            .with_part_size(64);
        write_all_unevenly(&mut w, &data(1_000)).unwrap();
        drop(w);
        assert!(store.aborted.load(Ordering::SeqCst));
        assert_eq!(content(&store, &path), None);
        // Unfinished and never past one part: nothing was sent at all.
        let mut w = ObjectWriter::new_in(store.clone(), path.clone(), "mem://out/refs.json".into());
        w.write_all(b"abc").unwrap();
        drop(w);
        assert_eq!(content(&store, &path), None);
    }
}
