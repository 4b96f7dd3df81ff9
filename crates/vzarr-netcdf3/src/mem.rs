//! An in-memory byte source that counts its reads.

use std::sync::atomic::{AtomicU64, Ordering};

use vzarr_source::{ByteSource, SourceError, SourceStamp};

/// An in-memory [`ByteSource`] over a byte vector that counts reads and bytes read (for tests,
/// fuzzing and bytes already fetched).
#[derive(Debug)]
pub struct MemSource {
    url: String,
    data: Vec<u8>,
    reads: AtomicU64,
    bytes_read: AtomicU64,
}

impl MemSource {
    /// A source named `url` holding `data`.
    pub fn new(url: impl Into<String>, data: Vec<u8>) -> Self {
        MemSource {
            url: url.into(),
            data,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
        }
    }

    /// Number of `read_range` calls so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Bytes returned by `read_range` so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

impl ByteSource for MemSource {
    fn url(&self) -> &str {
        &self.url
    }

    fn size(&self) -> u64 {
        self.data.len() as u64
    }

    fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let oob = || SourceError::OutOfBounds {
            url: self.url.clone(),
            offset,
            len,
            size: self.data.len() as u64,
        };
        let start = usize::try_from(offset).map_err(|_| oob())?;
        let n = usize::try_from(len).map_err(|_| oob())?;
        let end = start.checked_add(n).ok_or_else(oob)?;
        let bytes = self.data.get(start..end).ok_or_else(oob)?.to_vec();
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(len, Ordering::Relaxed);
        Ok(bytes)
    }

    fn stamp(&self) -> SourceStamp {
        SourceStamp {
            size: self.data.len() as u64,
            mtime_ns: None,
            etag: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_counted_and_bounded() {
        let m = MemSource::new("mem://x", b"0123456789".to_vec());
        assert_eq!(m.read_range(2, 3).unwrap(), b"234");
        assert_eq!(m.read_range(10, 0).unwrap(), b"");
        assert!(m.read_range(8, 3).is_err());
        assert!(m.read_range(u64::MAX, 2).is_err());
        assert_eq!((m.reads(), m.bytes_read()), (2, 3));
    }
}
