//! Listing the objects (or files) under a prefix.
//!
//! A listing of object storage goes page by page (ListObjectsV2 returns 1,000 keys a page).
//! `object_store` retries a request that fails (503 SlowDown, 500, a reset connection) but
//! not a page whose body is cut short: one such page in a listing of 4,000 objects used to
//! stop a whole build. Here a listing that fails part-way resumes after the last key it got
//! (object stores list keys in order), up to [`LIST_ATTEMPTS`] times in a row.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore};
use vzarr_core::SourceRecord;

use crate::object::{Clients, meta_record};
use crate::url::{Scheme, parse_url};
use crate::{SourceError, absolute, block_on, file_url};

/// Every object under `prefix` (an object-store URL, a `file://` URL or a local directory),
/// recursively, sorted by URL, with their records (local files carry no ETag, as in
/// [`crate::LocalFile`]'s record). Prefixes match whole path segments: `s3://b/data` and
/// `s3://b/data/` both list `data/...`, not `database/...`. An object-store prefix with nothing
/// under it gives an empty list; a local directory that does not exist is
/// [`SourceError::NotFound`].
pub fn list_prefix(prefix: &str) -> Result<Vec<SourceRecord>, SourceError> {
    list_prefix_with(Clients::global(), prefix)
}

/// [`list_prefix`] with the given clients.
pub fn list_prefix_with(clients: &Clients, prefix: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let text = if prefix.contains("://") {
        prefix.to_string()
    } else {
        file_url(&absolute(Path::new(prefix))?)?
    };
    let loc = parse_url(&text).map_err(|source| SourceError::BadUrl {
        url: prefix.to_string(),
        source,
    })?;
    if loc.scheme == Scheme::File {
        let dir = loc.local_path();
        match std::fs::metadata(&dir) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SourceError::NotFound {
                    url: prefix.to_string(),
                });
            }
            Err(e) => return Err(SourceError::io(prefix, e)),
        }
    }
    let (store, path) = clients.resolve(&loc)?;
    let root = (!path.as_ref().is_empty()).then_some(path);
    let u = prefix.to_string();
    let metas: Vec<ObjectMeta> = if loc.scheme == Scheme::File {
        // A local listing is not in key order (it cannot resume) and does not fail midway
        // for reasons that go away.
        block_on(async move {
            store
                .list(root.as_ref())
                .try_collect()
                .await
                .map_err(|e| SourceError::remote(&u, e))
        })?
    } else {
        block_on(async move { list_resuming(store, root, &u, LIST_BACKOFF).await })?
    };
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        let url = if loc.scheme == Scheme::File {
            // The file's own path (object_store percent-encodes some characters in its keys).
            let p = clients
                .local()
                .path_to_filesystem(&m.location)
                .map_err(|e| SourceError::remote(prefix, e))?;
            file_url(&p)?
        } else {
            format!("{}://{}/{}", loc.scheme.as_str(), loc.authority, m.location)
        };
        let mut rec = meta_record(url, &m);
        if loc.scheme == Scheme::File {
            rec.etag = None;
        }
        out.push(rec);
    }
    out.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(out)
}

/// Failed attempts in a row after which a listing gives up.
pub const LIST_ATTEMPTS: u32 = 5;

/// The wait before the first retry of a listing; it doubles with each failure in a row.
const LIST_BACKOFF: Duration = Duration::from_millis(200);

/// Every object under `root` in `store`, resuming after the last key listed when the listing
/// fails part-way with an error that may go away; gives up after [`LIST_ATTEMPTS`] failures
/// in a row (without progress between them), or at once on an error that will not go away
/// (not found, no permission, no credentials).
async fn list_resuming(
    store: Arc<dyn ObjectStore>,
    root: Option<ObjectPath>,
    url: &str,
    backoff: Duration,
) -> Result<Vec<ObjectMeta>, SourceError> {
    let mut out: Vec<ObjectMeta> = Vec::new();
    let mut failures = 0u32;
    loop {
        let mut stream = match out.last() {
            None => store.list(root.as_ref()),
            Some(last) => store.list_with_offset(root.as_ref(), &last.location),
        };
        let err = loop {
            match stream.next().await {
                None => return Ok(out),
                Some(Ok(m)) => {
                    failures = 0;
                    out.push(m);
                }
                Some(Err(e)) => break e,
            }
        };
        failures += 1;
        if failures >= LIST_ATTEMPTS || !matches!(err, object_store::Error::Generic { .. }) {
            return Err(SourceError::remote(url, err));
        }
        tokio::time::sleep(backoff * 2u32.pow(failures - 1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteSource, open_source};

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
                // Each listed URL opens, with the record the listing gave.
                assert_eq!(open_source(&o.url).unwrap().record(), o);
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
        let e = list_prefix("gopher://x/").unwrap_err();
        assert!(matches!(e, SourceError::BadUrl { .. }), "{e}");
    }

    /// An in-memory store whose listings fail part-way: the first `cut` listings (by
    /// `list` or `list_with_offset`) give `after` objects, then a transient error.
    #[derive(Debug)]
    struct CutLists {
        inner: object_store::memory::InMemory,
        cut: std::sync::atomic::AtomicUsize,
        after: usize,
        lists: std::sync::atomic::AtomicUsize,
    }

    impl std::fmt::Display for CutLists {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "CutLists")
        }
    }

    impl CutLists {
        fn cut(
            &self,
            s: futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>>,
        ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
            use std::sync::atomic::Ordering;
            self.lists.fetch_add(1, Ordering::SeqCst);
            let left = self.cut.load(Ordering::SeqCst);
            if left == 0 {
                return s;
            }
            self.cut.store(left - 1, Ordering::SeqCst);
            let err = object_store::Error::Generic {
                store: "CutLists",
                source:
                    "error getting list response body: end of file before message length reached"
                        .into(),
            };
            s.take(self.after)
                .chain(futures::stream::once(async move { Err(err) }))
                .boxed()
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for CutLists {
        async fn put_opts(
            &self,
            location: &ObjectPath,
            payload: object_store::PutPayload,
            opts: object_store::PutOptions,
        ) -> object_store::Result<object_store::PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &ObjectPath,
            opts: object_store::PutMultipartOptions,
        ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }

        async fn get_opts(
            &self,
            location: &ObjectPath,
            options: object_store::GetOptions,
        ) -> object_store::Result<object_store::GetResult> {
            self.inner.get_opts(location, options).await
        }

        fn delete_stream(
            &self,
            locations: futures::stream::BoxStream<'static, object_store::Result<ObjectPath>>,
        ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectPath>> {
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.cut(self.inner.list(prefix))
        }

        fn list_with_offset(
            &self,
            prefix: Option<&ObjectPath>,
            offset: &ObjectPath,
        ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.cut(self.inner.list_with_offset(prefix, offset))
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> object_store::Result<object_store::ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &ObjectPath,
            to: &ObjectPath,
            options: object_store::CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    fn store_of(n: usize, cut: usize, after: usize) -> Arc<CutLists> {
        use object_store::ObjectStoreExt;
        let inner = Arc::new(object_store::memory::InMemory::new());
        let fill = inner.clone();
        block_on(async move {
            for i in 0..n {
                let p = ObjectPath::from(format!("data/f{i:04}.nc"));
                fill.put(&p, vec![i as u8; 3].into()).await.unwrap();
            }
            // Beside the prefix: not listed.
            fill.put(&ObjectPath::from("other/x.nc"), vec![0].into())
                .await
                .unwrap();
            Ok::<_, SourceError>(())
        })
        .unwrap();
        let inner = Arc::try_unwrap(inner).expect("the only owner left");
        Arc::new(CutLists {
            inner,
            cut: cut.into(),
            after,
            lists: 0.into(),
        })
    }

    fn list_all(store: &Arc<CutLists>) -> Result<Vec<String>, SourceError> {
        let s: Arc<dyn ObjectStore> = store.clone();
        let got = block_on(list_resuming(
            s,
            Some(ObjectPath::from("data")),
            "mem://data/",
            Duration::from_millis(1),
        ))?;
        Ok(got.into_iter().map(|m| m.location.to_string()).collect())
    }

    #[test]
    fn a_listing_cut_short_resumes_after_the_last_key() {
        use std::sync::atomic::Ordering;
        let want: Vec<String> = (0..2500).map(|i| format!("data/f{i:04}.nc")).collect();
        // Cut after 1,000 keys, three times in a row: resumed each time after the last key.
        let s = store_of(2500, 3, 1000);
        assert_eq!(list_all(&s).unwrap(), want);
        assert_eq!(s.lists.load(Ordering::SeqCst), 4);
        // Cut before any key, LIST_ATTEMPTS - 1 times: still complete.
        let s = store_of(2500, LIST_ATTEMPTS as usize - 1, 0);
        assert_eq!(list_all(&s).unwrap(), want);
        // Cut before any key LIST_ATTEMPTS times in a row: the error, naming the prefix.
        let s = store_of(10, LIST_ATTEMPTS as usize, 0);
        let e = list_all(&s).unwrap_err().to_string();
        assert!(
            e.contains("mem://data/") && e.contains("end of file"),
            "{e}"
        );
        assert_eq!(s.lists.load(Ordering::SeqCst), LIST_ATTEMPTS as usize);
        // Failures with progress between them do not count in a row: 10 cuts, 1 key each.
        let s = store_of(30, 10, 1);
        assert_eq!(list_all(&s).unwrap().len(), 30);
    }
}
