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

/// Requests in flight at most per object-store client, unless configured otherwise.
pub const DEFAULT_MAX_REQUESTS: usize = 64;

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
        Ok(ObjectSource {
            location: loc.clone(),
            store,
            path,
            record: SourceRecord {
                url: loc.url(),
                ..record.clone()
            },
            concurrency: DEFAULT_RANGE_CONCURRENCY,
        })
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

/// Most bytes written in one PUT request; a larger object is uploaded in parts of this size
/// (a multipart upload, which the store makes visible only when it completes).
const PUT_PART: usize = 16 << 20;

/// Writes `data` as the object at `loc` (an object-store URL) with `clients`, replacing any
/// object there. Readers see the old object or the new one, never a part: one PUT, or for
/// more than 16 MiB a multipart upload that the store publishes when it completes and that is
/// aborted when a part fails.
pub fn put_object(clients: &Clients, loc: &Location, data: Bytes) -> Result<(), SourceError> {
    let url = loc.url();
    let (store, path) = clients.resolve(loc)?;
    block_on(async move {
        if data.len() <= PUT_PART {
            store
                .put(&path, data.into())
                .await
                .map_err(|e| SourceError::remote(&url, e))?;
            return Ok(());
        }
        let mut upload = store
            .put_multipart(&path)
            .await
            .map_err(|e| SourceError::remote(&url, e))?;
        let mut sent = 0;
        while sent < data.len() {
            let end = (sent + PUT_PART).min(data.len());
            if let Err(e) = upload.put_part(data.slice(sent..end).into()).await {
                let _ = upload.abort().await;
                return Err(SourceError::remote(&url, e));
            }
            sent = end;
        }
        if let Err(e) = upload.complete().await {
            let _ = upload.abort().await;
            return Err(SourceError::remote(&url, e));
        }
        Ok(())
    })
}
