//! Sources on object storage through `object_store`: clients per (scheme, bucket or host)
//! built from the environment, [`ObjectSource`] (HEAD, then ranged GETs), listing of a prefix,
//! and [`RemoteReader`], a [`RangeReader`] over URLs of any kind.
//!
//! Requests run on one small tokio runtime, created on first use and kept for the process;
//! the blocking functions here spawn onto it and wait, so they can be called from any thread
//! that is not one of its own workers (rayon workers and threads of other runtimes included).

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::url::{Location, Scheme, UrlError, parse};
use crate::{ByteSource, LocalFile, RangeReader, SourceError, SourceStamp, absolute, file_url};

/// The process-wide I/O runtime, created on first use.
fn runtime(url: &str) -> Result<&'static tokio::runtime::Runtime, SourceError> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .thread_name("vzarr-source-io")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the I/O runtime: {e}"))
    })
    .as_ref()
    .map_err(|reason| SourceError::Remote {
        url: url.to_string(),
        reason: reason.clone(),
    })
}

/// Runs `f` on the I/O runtime and waits for it; `url` names errors of the runtime itself.
fn block_on<F, T>(url: &str, f: F) -> Result<T, SourceError>
where
    F: Future<Output = Result<T, SourceError>> + Send + 'static,
    T: Send + 'static,
{
    let handle = runtime(url)?.spawn(f);
    match futures::executor::block_on(handle) {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(SourceError::Remote {
            url: url.to_string(),
            reason: format!("I/O task failed: {e}"),
        }),
    }
}

/// An `object_store` error about `url` as a [`SourceError`] (missing objects as
/// [`SourceError::NotFound`]).
fn store_error(url: &str, e: object_store::Error) -> SourceError {
    match e {
        object_store::Error::NotFound { .. } => SourceError::NotFound {
            url: url.to_string(),
        },
        other => SourceError::Remote {
            url: url.to_string(),
            reason: other.to_string(),
        },
    }
}

fn url_error(url: &str, e: UrlError) -> SourceError {
    match e {
        UrlError::UnsupportedScheme(scheme) => SourceError::UnsupportedScheme {
            url: url.to_string(),
            scheme,
        },
        UrlError::Invalid(reason) => SourceError::BadUrl {
            url: url.to_string(),
            reason,
        },
    }
}

/// The stamp of an object's metadata.
fn meta_stamp(meta: &ObjectMeta) -> SourceStamp {
    SourceStamp {
        size: meta.size,
        mtime_ns: meta.last_modified.timestamp_nanos_opt().map(i128::from),
        etag: meta.e_tag.clone(),
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
/// `http://` URLs only), and one `LocalFileSystem` for `file://`.
#[derive(Debug)]
pub struct StoreCache {
    local: Arc<LocalFileSystem>,
    stores: Mutex<HashMap<(Scheme, String), Arc<dyn ObjectStore>>>,
}

impl Default for StoreCache {
    fn default() -> Self {
        Self::new()
    }
}

impl StoreCache {
    /// A cache without clients.
    pub fn new() -> Self {
        StoreCache {
            local: Arc::new(LocalFileSystem::new()),
            stores: Mutex::new(HashMap::new()),
        }
    }

    /// The process-wide cache that [`ObjectSource::open`], [`open_source`], [`list_prefix`]
    /// and [`RemoteReader`] use.
    pub fn global() -> &'static StoreCache {
        static GLOBAL: OnceLock<StoreCache> = OnceLock::new();
        GLOBAL.get_or_init(StoreCache::new)
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
        let store: Arc<dyn ObjectStore> = match scheme {
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
            Scheme::File => self.local.clone(),
        };
        stores.insert(key, store.clone());
        Ok(store)
    }

    /// The client and object path of a parsed location; errors name `url`.
    fn resolve(
        &self,
        url: &str,
        loc: &Location,
    ) -> Result<(Arc<dyn ObjectStore>, ObjectPath), SourceError> {
        let path = object_path(loc).map_err(|e| SourceError::BadUrl {
            url: url.to_string(),
            reason: format!("not a valid object key: {e}"),
        })?;
        let store = self
            .store(loc.scheme, &loc.authority)
            .map_err(|e| SourceError::Remote {
                url: url.to_string(),
                reason: format!("cannot set up the {} client: {e}", loc.scheme.as_str()),
            })?;
        Ok((store, path))
    }
}

/// One object on object storage, read with ranged GETs. [`ObjectSource::open`] does a HEAD
/// request for its size, modification time and ETag; reads are checked against that size and,
/// where the object has an ETag, made conditional on it (`If-Match`), so an object replaced
/// after the open is an error ([`SourceError::Changed`]), never a mix of old and new bytes.
#[derive(Debug)]
pub struct ObjectSource {
    url: String,
    location: Location,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    stamp: SourceStamp,
}

impl ObjectSource {
    /// Opens the object at `url` (any supported scheme, `file://` included) with the
    /// process-wide clients.
    pub fn open(url: &str) -> Result<Self, SourceError> {
        Self::open_with(StoreCache::global(), url)
    }

    /// Opens the object at `url` with the clients of `stores`.
    pub fn open_with(stores: &StoreCache, url: &str) -> Result<Self, SourceError> {
        let loc = parse(url).map_err(|e| url_error(url, e))?;
        Self::open_location(stores, loc)
    }

    fn open_location(stores: &StoreCache, location: Location) -> Result<Self, SourceError> {
        let url = location.url();
        let (store, path) = stores.resolve(&url, &location)?;
        let (s, p, u) = (store.clone(), path.clone(), url.clone());
        let meta = block_on(&url, async move {
            s.head(&p).await.map_err(|e| store_error(&u, e))
        })?;
        Ok(ObjectSource {
            url,
            location,
            store,
            path,
            stamp: meta_stamp(&meta),
        })
    }

    /// The parsed location.
    pub fn location(&self) -> &Location {
        &self.location
    }
}

impl ByteSource for ObjectSource {
    /// The canonical URL (`s3://bucket/key`, ...).
    fn url(&self) -> &str {
        &self.url
    }

    fn size(&self) -> u64 {
        self.stamp.size
    }

    fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        crate::checked_len(&self.url, offset, len, self.stamp.size)?;
        let end = offset + len;
        if len == 0 {
            return Ok(Vec::new());
        }
        let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
        let options = GetOptions::new()
            .with_range(Some(offset..end))
            .with_if_match(self.stamp.etag.clone());
        let bytes = block_on(&self.url, async move {
            let got = store.get_opts(&path, options).await;
            let got = match got {
                Ok(g) => g.bytes().await,
                Err(e) => Err(e),
            };
            got.map_err(|e| match e {
                object_store::Error::Precondition { .. } => SourceError::Changed { url },
                e => store_error(&url, e),
            })
        })?;
        if bytes.len() as u64 != len {
            return Err(SourceError::Remote {
                url: self.url.clone(),
                reason: format!(
                    "short read: {len} bytes at offset {offset} returned {} (the object \
                     changed since it was opened?)",
                    bytes.len()
                ),
            });
        }
        Ok(bytes.to_vec())
    }

    fn stamp(&self) -> SourceStamp {
        self.stamp.clone()
    }
}

/// Opens a local path (relative paths against the current directory), a `file://` URL (both
/// as [`LocalFile`]) or an object-store URL (as [`ObjectSource`], with the process-wide
/// clients).
pub fn open_source(url_or_path: &str) -> Result<Box<dyn ByteSource>, SourceError> {
    open_source_with(StoreCache::global(), url_or_path)
}

fn open_source_with(
    stores: &StoreCache,
    url_or_path: &str,
) -> Result<Box<dyn ByteSource>, SourceError> {
    if !url_or_path.contains("://") {
        return Ok(Box::new(LocalFile::open(Path::new(url_or_path))?));
    }
    let loc = parse(url_or_path).map_err(|e| url_error(url_or_path, e))?;
    if loc.scheme == Scheme::File {
        return Ok(Box::new(LocalFile::open(&loc.local_path())?));
    }
    Ok(Box::new(ObjectSource::open_location(stores, loc)?))
}

/// One object found by [`list_prefix`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedObject {
    /// Its URL (`s3://bucket/key`, `file:///abs/path`).
    pub url: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch, where known.
    pub mtime_ns: Option<i128>,
    /// ETag, where the storage has one (never for local files, as in [`LocalFile`]'s stamp).
    pub etag: Option<String>,
}

/// Every object under `prefix` (an object-store URL, a `file://` URL or a local directory),
/// recursively, sorted by URL. Prefixes match whole path segments: `s3://b/data` and
/// `s3://b/data/` both list `data/...`, not `database/...`. An object-store prefix with
/// nothing under it gives an empty list; a local directory that does not exist is
/// [`SourceError::NotFound`].
pub fn list_prefix(prefix: &str) -> Result<Vec<ListedObject>, SourceError> {
    list_prefix_with(StoreCache::global(), prefix)
}

fn list_prefix_with(stores: &StoreCache, prefix: &str) -> Result<Vec<ListedObject>, SourceError> {
    let loc = if prefix.contains("://") {
        parse(prefix).map_err(|e| url_error(prefix, e))?
    } else {
        let abs = absolute(Path::new(prefix))?;
        let url = file_url(&abs)?;
        parse(&url).map_err(|e| url_error(prefix, e))?
    };
    let (store, path) = stores.resolve(prefix, &loc)?;
    if loc.scheme == Scheme::File {
        let dir = loc.local_path();
        match std::fs::metadata(&dir) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SourceError::NotFound {
                    url: prefix.to_string(),
                });
            }
            Err(error) => {
                return Err(SourceError::Io {
                    url: prefix.to_string(),
                    error,
                });
            }
        }
    }
    let root = (!path.as_ref().is_empty()).then_some(path);
    let u = prefix.to_string();
    let metas: Vec<ObjectMeta> = block_on(prefix, async move {
        store
            .list(root.as_ref())
            .try_collect()
            .await
            .map_err(|e| store_error(&u, e))
    })?;
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        let mut stamp = meta_stamp(&m);
        let url = if loc.scheme == Scheme::File {
            // The file's own path (object_store percent-encodes some characters in its keys).
            let p = stores
                .local
                .path_to_filesystem(&m.location)
                .map_err(|e| store_error(prefix, e))?;
            stamp.etag = None;
            file_url(&p)?
        } else {
            format!("{}://{}/{}", loc.scheme.as_str(), loc.authority, m.location)
        };
        out.push(ListedObject {
            url,
            size: stamp.size,
            mtime_ns: stamp.mtime_ns,
            etag: stamp.etag,
        });
    }
    out.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(out)
}

/// A [`RangeReader`] over URLs of any kind: local paths and `file://` URLs read as
/// [`LocalFile`]s, object-store URLs as [`ObjectSource`]s (process-wide clients). Opened
/// sources are kept, so each is opened (stat or HEAD) once.
#[derive(Default)]
pub struct RemoteReader {
    open: Mutex<HashMap<String, Arc<dyn ByteSource>>>,
}

impl std::fmt::Debug for RemoteReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteReader")
            .field("open", &self.lock().len())
            .finish()
    }
}

impl RemoteReader {
    /// A reader with no open sources.
    pub fn new() -> Self {
        Self::default()
    }

    /// The source at `url`, opened on first use.
    pub fn source(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        if let Some(s) = self.lock().get(url) {
            return Ok(s.clone());
        }
        // Opened without the lock held (a HEAD request may take a while); a source opened
        // twice concurrently is kept once.
        let s: Arc<dyn ByteSource> = Arc::from(open_source_with(StoreCache::global(), url)?);
        Ok(self.lock().entry(url.to_string()).or_insert(s).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn ByteSource>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl RangeReader for RemoteReader {
    fn read(&self, url: &str, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        self.source(url)?.read_range(offset, len)
    }

    fn coalesce_gap(&self, url: &str) -> u64 {
        match parse(url) {
            Ok(loc) if loc.scheme != Scheme::File => crate::REMOTE_COALESCE_GAP,
            _ => crate::LOCAL_COALESCE_GAP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_a_local_directory_recursively() {
        let dir = tempfile::tempdir().unwrap();
        let root = absolute(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("b/c")).unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::write(root.join("z.nc"), b"zz").unwrap();
        std::fs::write(root.join("b/c/x y.nc"), b"xyz").unwrap();
        std::fs::write(root.join("b/a%b.nc"), b"a").unwrap();
        std::fs::write(root.join("a.nc"), b"").unwrap();
        let url = file_url(&root).unwrap();
        let want = ["a.nc", "b/a%b.nc", "b/c/x y.nc", "z.nc"];
        for prefix in [format!("{url}/"), url.clone(), root.display().to_string()] {
            let got = list_prefix(&prefix).unwrap();
            let urls: Vec<&str> = got.iter().map(|o| o.url.as_str()).collect();
            let expect: Vec<String> = want.iter().map(|w| format!("{url}/{w}")).collect();
            assert_eq!(urls, expect, "{prefix}");
            for o in &got {
                // Each listed URL opens, with the stamp the listing gave.
                let src = open_source(&o.url).unwrap();
                let st = src.stamp();
                assert_eq!(
                    (st.size, st.mtime_ns, st.etag),
                    (o.size, o.mtime_ns, o.etag.clone())
                );
                assert!(o.mtime_ns.is_some());
            }
        }
        // Below a subdirectory only.
        let sub = list_prefix(&format!("{url}/b/c")).unwrap();
        assert_eq!(sub.len(), 1);
        assert_eq!(sub[0].size, 3);
        assert!(list_prefix(&format!("{url}/empty/")).unwrap().is_empty());
        let e = list_prefix(&format!("{url}/nope/")).unwrap_err();
        assert!(matches!(e, SourceError::NotFound { .. }), "{e}");
        assert!(e.to_string().contains("/nope/"), "{e}");
        assert!(e.is_not_found());
    }

    #[test]
    fn dispatches_and_refuses_urls() {
        let dir = tempfile::tempdir().unwrap();
        let p = absolute(&dir.path().join("f.bin")).unwrap();
        std::fs::write(&p, b"0123456789").unwrap();
        let url = file_url(&p).unwrap();
        for name in [url.as_str(), p.to_str().unwrap()] {
            let s = open_source(name).unwrap();
            assert_eq!(s.url(), url);
            assert_eq!(s.read_range(3, 4).unwrap(), b"3456");
            assert_eq!(s.stamp().etag, None);
        }
        // ObjectSource reads local files too, through object_store.
        let o = ObjectSource::open(&url).unwrap();
        assert_eq!(o.size(), 10);
        assert_eq!(o.read_range(8, 2).unwrap(), b"89");
        assert_eq!(o.read_range(10, 0).unwrap(), b"");
        assert!(matches!(
            o.read_range(8, 3),
            Err(SourceError::OutOfBounds { .. })
        ));
        assert_eq!(
            o.stamp().mtime_ns,
            LocalFile::open(&p).unwrap().stamp().mtime_ns
        );
        let e = ObjectSource::open(&format!("{url}.missing")).unwrap_err();
        assert!(matches!(e, SourceError::NotFound { .. }), "{e}");
        assert!(e.to_string().contains("f.bin.missing"), "{e}");

        let e = open_source("ftp://host/x.nc").err().unwrap();
        assert!(
            matches!(&e, SourceError::UnsupportedScheme { scheme, .. } if scheme == "ftp"),
            "{e}"
        );
        assert!(e.to_string().starts_with("ftp://host/x.nc: "), "{e}");
        let e = open_source("s3://bucket/a/../b").err().unwrap();
        assert!(matches!(e, SourceError::BadUrl { .. }), "{e}");
        assert!(e.to_string().contains("s3://bucket/a/../b"), "{e}");
        let e = list_prefix("gopher://x/").unwrap_err();
        assert!(matches!(e, SourceError::UnsupportedScheme { .. }), "{e}");
    }

    #[test]
    fn remote_reader_reads_local_urls_from_threads() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let p = absolute(&dir.path().join("d.bin")).unwrap();
        std::fs::write(&p, &data).unwrap();
        let url = file_url(&p).unwrap();
        let r = RemoteReader::new();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let (r, url, data) = (&r, &url, &data);
                s.spawn(move || {
                    let o = t * 100;
                    assert_eq!(
                        r.read(url, o, 50).unwrap(),
                        &data[o as usize..o as usize + 50]
                    );
                });
            }
        });
        assert!(Arc::ptr_eq(
            &r.source(&url).unwrap(),
            &r.source(&url).unwrap()
        ));
        assert!(r.read(&url, 999, 2).is_err());
        assert!(
            r.read("file:///nonexistent/x.nc", 0, 1)
                .unwrap_err()
                .is_not_found()
        );
    }

    #[test]
    fn object_paths() {
        let p = |u: &str| object_path(&parse(u).unwrap()).unwrap().to_string();
        assert_eq!(p("s3://b/a b/c.nc"), "a b/c.nc");
        assert_eq!(p("s3://b/dir/"), "dir");
        assert_eq!(p("https://h/x%20y.nc"), "x y.nc");
        assert_eq!(p("file:///data/x.nc"), "data/x.nc");
        let c = StoreCache::new();
        let a = c.store(Scheme::S3, "bucket").unwrap();
        let b = c.store(Scheme::S3, "bucket").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }
}
