//! An in-memory source: bytes already fetched, test data, fuzzing inputs.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError, SourceStore, range_len};

/// A [`ByteSource`] over bytes in memory that counts its reads (one per range) and the bytes
/// it returned.
#[derive(Debug)]
pub struct MemSource {
    record: SourceRecord,
    data: Bytes,
    reads: AtomicU64,
    bytes_read: AtomicU64,
}

impl MemSource {
    /// A source named `url` holding `data`.
    pub fn new(url: impl Into<String>, data: impl Into<Bytes>) -> Self {
        let data = data.into();
        MemSource {
            record: SourceRecord {
                url: url.into(),
                size: data.len() as u64,
                mtime_ns: None,
                etag: None,
                fingerprint: None,
            },
            data,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
        }
    }

    /// The same source with this record (size excepted, which is the data's).
    pub fn with_record(mut self, record: SourceRecord) -> Self {
        let size = self.record.size;
        self.record = SourceRecord { size, ..record };
        self
    }

    /// Ranges read so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Bytes returned so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }
}

impl ByteSource for MemSource {
    fn record(&self) -> &SourceRecord {
        &self.record
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        ranges
            .iter()
            .map(|r| {
                let n = range_len(&self.record.url, r, self.record.size)?;
                self.reads.fetch_add(1, Ordering::Relaxed);
                self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
                let start = r.start as usize;
                Ok(self.data.slice(start..start + n))
            })
            .collect()
    }
}

/// A [`SourceStore`] of in-memory sources by URL (tests, bytes already fetched).
#[derive(Debug, Default)]
pub struct MemStore {
    sources: std::collections::HashMap<String, std::sync::Arc<MemSource>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the source at `url` holding `data`.
    pub fn insert(&mut self, url: impl Into<String>, data: impl Into<Bytes>) {
        let url = url.into();
        self.sources
            .insert(url.clone(), std::sync::Arc::new(MemSource::new(url, data)));
    }

    /// The source at `url`, if any (to look at its counters).
    pub fn get(&self, url: &str) -> Option<&std::sync::Arc<MemSource>> {
        self.sources.get(url)
    }
}

impl SourceStore for MemStore {
    fn open(&self, url: &str) -> Result<std::sync::Arc<dyn ByteSource>, SourceError> {
        match self.sources.get(url) {
            Some(s) => Ok(s.clone()),
            None => Err(SourceError::NotFound {
                url: url.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_counts() {
        let m = MemSource::new("mem://x", b"0123456789".to_vec());
        assert_eq!(m.size(), 10);
        assert_eq!(&m.read(2..5).unwrap()[..], b"234");
        assert_eq!(&m.read(10..10).unwrap()[..], b"");
        assert!(m.read(8..11).is_err());
        assert!(m.read(u64::MAX - 1..u64::MAX).is_err());
        assert_eq!((m.reads(), m.bytes_read()), (2, 3));
    }
}
