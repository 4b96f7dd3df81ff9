//! What a source must still be for a reference into it to hold, as a reference states it
//! itself (Icechunk's per-reference checksum: the object's ETag, or a time the source may not
//! be modified after; see the Icechunk spec, "virtual chunk references",
//! <https://icechunk.io/en/latest/spec/>), and the store wrapper that refuses sources that
//! no longer are. vzarr's own outputs record whole sources instead (`CheckRecords`).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError, SourceStore};

/// A version of a source a reference was made from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceVersion {
    /// The object's entity tag then.
    ETag(String),
    /// The source must not have been modified after this time (seconds since the Unix epoch).
    NotModifiedAfter(u32),
}

impl SourceVersion {
    /// `Ok` when the source `url`, as `now` describes it, is still this version;
    /// [`SourceError::Stale`] saying what changed otherwise (an ETag the source no longer has
    /// or gives none of; a modification after the time allowed, or no time to compare).
    pub fn check(&self, url: &str, now: &SourceRecord) -> Result<(), SourceError> {
        let change = match self {
            SourceVersion::ETag(want) => match &now.etag {
                Some(e) if e == want => return Ok(()),
                Some(e) => format!("ETag {want} when referenced, now {e}"),
                None => format!("ETag {want} when referenced, none now"),
            },
            SourceVersion::NotModifiedAfter(secs) => match now.mtime_ns {
                Some(ns) if ns <= i128::from(*secs) * 1_000_000_000 => return Ok(()),
                Some(ns) => format!(
                    "modified at {}.{:09} s since the epoch, after the {secs} s the reference allows",
                    ns.div_euclid(1_000_000_000),
                    ns.rem_euclid(1_000_000_000)
                ),
                None => format!(
                    "the reference allows modifications up to {secs} s since the epoch; the \
                     source gives no modification time"
                ),
            },
        };
        Err(SourceError::Stale {
            url: url.to_string(),
            changes: vec![change],
        })
    }
}

/// A store that opens a source only while it is every version references into it state
/// (sources no reference states a version of open as `inner` opens them).
#[derive(Debug)]
pub struct CheckVersions<T> {
    inner: T,
    versions: Arc<HashMap<String, Vec<SourceVersion>>>,
}

impl<T: SourceStore> CheckVersions<T> {
    /// `inner`, checking sources against `versions` (by URL).
    pub fn new(inner: T, versions: Arc<HashMap<String, Vec<SourceVersion>>>) -> Self {
        CheckVersions { inner, versions }
    }
}

impl<T: SourceStore> SourceStore for CheckVersions<T> {
    fn open(&self, url: &str) -> Result<Arc<dyn ByteSource>, SourceError> {
        let src = self.inner.open(url)?;
        for v in self.versions.get(url).into_iter().flatten() {
            v.check(url, src.record())?;
        }
        Ok(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(mtime_ns: Option<i128>, etag: Option<&str>) -> SourceRecord {
        SourceRecord {
            url: "s3://b/f.nc".into(),
            size: 10,
            mtime_ns,
            etag: etag.map(str::to_string),
            fingerprint: None,
        }
    }

    #[test]
    fn etags_and_times_are_compared_as_icechunk_does() {
        let etag = SourceVersion::ETag("\"a\"".into());
        assert!(etag.check("u", &rec(None, Some("\"a\""))).is_ok());
        let e = etag.check("u", &rec(None, Some("\"b\""))).unwrap_err();
        assert!(
            e.to_string()
                .contains("ETag \"a\" when referenced, now \"b\""),
            "{e}"
        );
        assert!(etag.check("u", &rec(Some(1), None)).is_err());
        let time = SourceVersion::NotModifiedAfter(100);
        assert!(time.check("u", &rec(Some(100_000_000_000), None)).is_ok());
        assert!(time.check("u", &rec(Some(99_500_000_000), None)).is_ok());
        let e = time
            .check("u", &rec(Some(100_000_000_001), None))
            .unwrap_err();
        assert!(e.to_string().contains("after the 100 s"), "{e}");
        assert!(time.check("u", &rec(None, Some("x"))).is_err());
    }
}
