//! The scan cache: each source's scan result stored under a directory, keyed by URL, size,
//! modification time (and ETag), scan options and the record format, so that a rebuild
//! rescans only changed or new sources.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vzarr_core::SourceRecord;
use vzarr_core::VirtualDataset;
use vzarr_core::record::{RECORD_VERSION, from_record, to_record};

use crate::{ScanError, ScanOptions};

/// A directory of cached scan results.
#[derive(Clone, Debug)]
pub struct ScanCache {
    dir: PathBuf,
}

/// FNV-1a, 64 bits: a stable file name for a cache key (the key itself is stored inside and
/// compared on load, so a collision is a miss, never a wrong hit).
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The cache key of a source as it is now.
pub fn cache_key(record: &SourceRecord, opts: &ScanOptions) -> String {
    format!(
        "vzarr {} record {RECORD_VERSION}|{}|size={}|mtime={:?}|etag={:?}|split={:?}{}{}{}{}",
        env!("CARGO_PKG_VERSION"),
        record.url,
        record.size,
        record.mtime_ns,
        record.etag,
        opts.split_contiguous_bytes,
        // Only a non-default scanner changes the key, so existing caches stay valid.
        match opts.hdf5_scanner {
            crate::Hdf5Scanner::Native => String::new(),
            other => format!("|hdf5={}", other.name()),
        },
        match opts.max_string_bytes {
            None => String::new(),
            Some(n) => format!("|strings={n}"),
        },
        if opts.skip_object_references {
            "|refs=skip"
        } else {
            ""
        },
        if opts.record_links {
            "|links=record"
        } else {
            ""
        },
    )
}

impl ScanCache {
    /// A cache in `dir`, created if needed.
    pub fn open(dir: &Path) -> Result<Self, ScanError> {
        std::fs::create_dir_all(dir).map_err(|source| ScanError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        Ok(ScanCache {
            dir: dir.to_path_buf(),
        })
    }

    fn file(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{:016x}.json", fnv1a(key)))
    }

    /// The cached scan for `key`, if present and readable.
    pub fn get(&self, key: &str) -> Option<VirtualDataset> {
        let text = std::fs::read(self.file(key)).ok()?;
        let v: Value = serde_json::from_slice(&text).ok()?;
        if v.get("key").and_then(Value::as_str) != Some(key) {
            return None;
        }
        from_record(v.get("record")?).ok()
    }

    /// Stores the scan for `key` (written atomically).
    pub fn put(&self, key: &str, ds: &VirtualDataset) -> Result<(), ScanError> {
        let io = |source: std::io::Error| ScanError::Io {
            path: self.dir.display().to_string(),
            source,
        };
        let doc = json!({"key": key, "record": to_record(ds)});
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(io)?;
        let mut w = std::io::BufWriter::new(&mut tmp);
        serde_json::to_writer(&mut w, &doc).map_err(|e| io(e.into()))?;
        w.flush().map_err(io)?;
        drop(w);
        tmp.persist(self.file(key)).map_err(|e| io(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_with_the_source_and_options() {
        let s = SourceRecord {
            url: "file:///a.nc".into(),
            size: 10,
            mtime_ns: Some(5),
            etag: None,
            fingerprint: None,
        };
        let o = ScanOptions::default();
        let k = cache_key(&s, &o);
        let other = |f: &dyn Fn(&mut SourceRecord)| {
            let mut r = s.clone();
            f(&mut r);
            cache_key(&r, &o)
        };
        assert_ne!(k, other(&|r| r.url = "file:///b.nc".into()));
        assert_ne!(k, other(&|r| r.size = 11));
        assert_ne!(k, other(&|r| r.mtime_ns = Some(6)));
        assert_ne!(k, other(&|r| r.etag = Some("x".into())));
        assert_ne!(
            k,
            cache_key(&s, &ScanOptions::default().with_split_contiguous(Some(1)))
        );
    }

    #[test]
    fn round_trip_and_misses() {
        let d = tempfile::tempdir().unwrap();
        let c = ScanCache::open(&d.path().join("cache")).unwrap();
        let mut ds = VirtualDataset::new();
        ds.groups
            .get_mut("")
            .unwrap()
            .attributes
            .insert("x".into(), json!(1));
        c.put("key-1", &ds).unwrap();
        assert_eq!(c.get("key-1"), Some(ds));
        assert_eq!(c.get("key-2"), None);
        // A corrupt entry is a miss.
        std::fs::write(c.file("key-1"), b"{not json").unwrap();
        assert_eq!(c.get("key-1"), None);
    }
}
