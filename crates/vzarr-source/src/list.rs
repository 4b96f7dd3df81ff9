//! Listing the objects (or files) under a prefix.

use std::path::Path;

use futures::TryStreamExt;
use object_store::ObjectMeta;
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
    let metas: Vec<ObjectMeta> = block_on(async move {
        store
            .list(root.as_ref())
            .try_collect()
            .await
            .map_err(|e| SourceError::remote(&u, e))
    })?;
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
}
