//! [`AllowPrefixes`]: a store that opens only URLs under the prefixes a reader may fetch from,
//! a local path checked once its symbolic links are resolved, and the file opened being the
//! file checked.
//!
//! A local path is resolved (`canonicalize`: its links and `..` followed) and the resolved
//! path checked against the allowed (and recorded) directories; the identity of the file
//! there (device and inode, without following a link) is taken, the path is opened, and the
//! identity of the file opened (from its open handle) must be the same. A link swapped in
//! between the check and the open is refused ([`SourceError::LinkChanged`]), and so is a path
//! whose links cannot be resolved ([`SourceError::Unresolved`]): nothing is read from either.

use std::path::PathBuf;
use std::sync::Arc;

use vzarr_core::SourceRecord;

use crate::url::{Location, Prefix, PrefixPolicy, Scheme};
use crate::{ByteSource, FileId, SourceError, SourceStore};

/// A store that opens only URLs under the allowed prefixes. Local paths are resolved first
/// (symbolic links, `..`), so a link inside an allowed directory that points outside it is
/// refused, and the file opened must be the one checked (see the module documentation);
/// nothing is read from a refused source.
#[derive(Debug)]
pub struct AllowPrefixes<T> {
    inner: T,
    policy: PrefixPolicy,
    /// The allowed local directories with their links resolved.
    allowed_dirs: Vec<PathBuf>,
    /// The recorded local directories with their links resolved.
    recorded_dirs: Vec<PathBuf>,
}

fn resolved_dirs(prefixes: &[Prefix]) -> Vec<PathBuf> {
    prefixes
        .iter()
        .filter_map(Prefix::local_path)
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
        .collect()
}

/// A local file as checked: its path with every link resolved, and the identity of the file
/// there.
struct Checked {
    /// The resolved path.
    real: PathBuf,
    /// The file's identity, taken without following a link.
    id: FileId,
}

impl<T: SourceStore> AllowPrefixes<T> {
    /// `inner` restricted to `policy`.
    pub fn new(inner: T, policy: PrefixPolicy) -> Self {
        AllowPrefixes {
            inner,
            allowed_dirs: resolved_dirs(policy.allowed()),
            recorded_dirs: resolved_dirs(policy.recorded()),
            policy,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &PrefixPolicy {
        &self.policy
    }

    /// Checks `url` without opening it: under an allowed prefix, and for local files, still
    /// under an allowed (and recorded) directory once its links are resolved. Returns the
    /// location. A local path that is not there passes (there is nothing to read; opening it
    /// resolves it again, and refuses it if it still cannot be resolved); one whose links
    /// cannot be resolved for another reason (permissions, a loop) is refused.
    pub fn check(&self, url: &str) -> Result<Location, SourceError> {
        let loc = self.policy.check(url)?;
        if loc.scheme == Scheme::File {
            match self.resolve(url, &loc) {
                Ok(_) => {}
                Err(SourceError::Unresolved { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(loc)
    }

    /// The local file at `loc` (named `url`) with its links resolved, checked against the
    /// allowed (and recorded) directories, and its identity.
    fn resolve(&self, url: &str, loc: &Location) -> Result<Checked, SourceError> {
        let unresolved = |source| SourceError::Unresolved {
            url: url.to_string(),
            source,
        };
        let real = std::fs::canonicalize(loc.local_path()).map_err(unresolved)?;
        let why = if !self.allowed_dirs.iter().any(|d| real.starts_with(d)) {
            Some(crate::Refusal::NotAllowed)
        } else if !self.policy.recorded().is_empty()
            && !self.recorded_dirs.iter().any(|d| real.starts_with(d))
        {
            Some(crate::Refusal::NotRecorded)
        } else {
            None
        };
        if let Some(why) = why {
            let resolved = Some(format!("file://{}", real.display()));
            return Err(self.policy.refuse(url, why, resolved));
        }
        // Not following a link: a link put where the resolved path was is not the file
        // checked.
        let meta = std::fs::symlink_metadata(&real).map_err(unresolved)?;
        Ok(Checked {
            id: FileId::of(&meta),
            real,
        })
    }

    /// Opens `url` with `open` once checked; a local file must be, once opened, the file
    /// checked.
    fn open_checked(
        &self,
        url: &str,
        open: impl FnOnce(&Location) -> Result<Arc<dyn ByteSource>, SourceError>,
    ) -> Result<Arc<dyn ByteSource>, SourceError> {
        let loc = self.policy.check(url)?;
        if loc.scheme != Scheme::File {
            return open(&loc);
        }
        let checked = self.resolve(url, &loc)?;
        let src = open(&loc)?;
        // Sources that are not local files of this machine (a store in memory) have no
        // identity to compare.
        match src.file_id() {
            Some(id) if id != checked.id => Err(SourceError::LinkChanged {
                url: url.to_string(),
                checked: format!("file://{}", checked.real.display()),
            }),
            _ => Ok(src),
        }
    }
}

impl<T: SourceStore> SourceStore for AllowPrefixes<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.open_checked(url, |loc| self.inner.open(&loc.url()))
    }

    fn open_recorded(&self, record: &SourceRecord) -> Result<Arc<dyn ByteSource>, SourceError> {
        self.open_checked(&record.url, |loc| {
            self.inner.open_recorded(&SourceRecord {
                url: loc.url(),
                ..record.clone()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stores, absolute, file_url};
    use std::io::Write;
    use std::path::Path;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        file_url(&absolute(&p).unwrap()).unwrap()
    }

    /// A directory `allowed/` (with `x.nc`) beside `secret.txt`, and a store allowing only
    /// `allowed/`.
    fn setup() -> (tempfile::TempDir, PathBuf, String, PrefixPolicy) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("allowed")).unwrap();
        let inside = write(&root.join("allowed"), "x.nc", b"data");
        write(&root, "secret.txt", b"root:x:0:0");
        let policy =
            PrefixPolicy::new(&[], &[format!("file://{}/allowed/", root.display())]).unwrap();
        (dir, root, inside, policy)
    }

    #[test]
    fn allowed_prefixes_resolve_links() {
        let (_dir, root, inside, policy) = setup();
        let secret = format!("file://{}/secret.txt", root.display());
        std::os::unix::fs::symlink(root.join("secret.txt"), root.join("allowed/link.nc")).unwrap();
        let store = AllowPrefixes::new(Stores::default(), policy);
        assert_eq!(
            &store.open(&inside).unwrap().read(0..4).unwrap()[..],
            b"data"
        );
        let e = store.open(&secret).unwrap_err();
        assert!(
            matches!(&e, SourceError::NotAllowed(n) if n.resolved.is_none()),
            "{e}"
        );
        let link = format!("file://{}/allowed/link.nc", root.display());
        let e = store.open(&link).unwrap_err();
        assert!(
            matches!(&e, SourceError::NotAllowed(n) if n.resolved.as_deref().is_some_and(|r| r.ends_with("secret.txt"))),
            "{e}"
        );
        assert!(!e.to_string().contains("root:x"), "{e}");
        let e = store.open("file:///etc/passwd").unwrap_err();
        assert!(matches!(e, SourceError::NotAllowed(_)), "{e}");
    }

    #[test]
    fn a_path_that_cannot_be_resolved_is_refused() {
        let (_dir, root, _inside, policy) = setup();
        let store = AllowPrefixes::new(Stores::default(), policy);
        // A link that leads nowhere (yet): refused when opened, naming the path and why.
        let dangling = root.join("allowed/dangling.nc");
        std::os::unix::fs::symlink(root.join("later.txt"), &dangling).unwrap();
        let url = format!("file://{}", dangling.display());
        let e = store.open(&url).unwrap_err();
        assert!(
            matches!(&e, SourceError::Unresolved { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound),
            "{e:?}"
        );
        assert!(e.is_not_found());
        assert!(
            e.to_string().starts_with(&format!(
                "{url}: cannot resolve its links to check it against the allowed prefixes"
            )),
            "{e}"
        );
        // Checking without opening lets a path that is not there pass (nothing to read).
        store.check(&url).unwrap();
        // A loop of links is refused by the check too.
        let a = root.join("allowed/a.nc");
        let b = root.join("allowed/b.nc");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let url = format!("file://{}", a.display());
        for e in [
            store.check(&url).unwrap_err(),
            store.open(&url).unwrap_err(),
        ] {
            assert!(matches!(e, SourceError::Unresolved { .. }), "{e:?}");
        }
    }

    /// A store that, asked to open, first puts a link to `target` where `at` was (what an
    /// attacker does between the check and the open), then opens.
    #[derive(Debug)]
    struct SwapThenOpen {
        at: PathBuf,
        target: PathBuf,
    }

    impl SourceStore for SwapThenOpen {
        fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
            let tmp = self.at.with_extension("swap");
            std::os::unix::fs::symlink(&self.target, &tmp).unwrap();
            std::fs::rename(&tmp, &self.at).unwrap();
            Stores::default().open(url)
        }
    }

    #[test]
    fn a_link_swapped_in_between_the_check_and_the_open_is_refused() {
        let (_dir, root, inside, policy) = setup();
        let at = root.join("allowed/x.nc");
        let store = AllowPrefixes::new(
            SwapThenOpen {
                at: at.clone(),
                target: root.join("secret.txt"),
            },
            policy.clone(),
        );
        let e = store.open(&inside).unwrap_err();
        assert!(
            matches!(&e, SourceError::LinkChanged { checked, .. } if *checked == inside),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("a link changed in between; nothing was read"),
            "{e}"
        );
        // The same through a record (the open that skips a request).
        std::fs::remove_file(&at).unwrap();
        write(&root.join("allowed"), "x.nc", b"data");
        let record = Stores::default().open(&inside).unwrap().record().clone();
        let e = store.open_recorded(&record).unwrap_err();
        assert!(matches!(e, SourceError::LinkChanged { .. }), "{e:?}");
        // Without the swap, the identities agree: the file is opened.
        std::fs::remove_file(&at).unwrap();
        write(&root.join("allowed"), "x.nc", b"data");
        let plain = AllowPrefixes::new(Stores::default(), policy);
        assert_eq!(
            &plain.open(&inside).unwrap().read(0..4).unwrap()[..],
            b"data"
        );
    }

    #[test]
    fn identities_are_those_of_the_open_files() {
        let (_dir, root, inside, _policy) = setup();
        let a = Stores::default().open(&inside).unwrap();
        let b = Stores::default()
            .open(&format!("file://{}/secret.txt", root.display()))
            .unwrap();
        let (ia, ib) = (a.file_id().unwrap(), b.file_id().unwrap());
        assert_ne!(ia, ib);
        let meta = std::fs::symlink_metadata(root.join("allowed/x.nc")).unwrap();
        assert_eq!(ia, FileId::of(&meta));
        // Sources that are not local files have none.
        let m = crate::MemSource::new("mem://x", vec![1, 2, 3]);
        assert_eq!(m.file_id(), None);
    }
}
