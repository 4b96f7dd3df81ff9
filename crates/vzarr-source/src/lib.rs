//! Byte access to sources: a [`ByteSource`] gives a source's URL, size and ranged reads.
//!
//! Scanners that parse headers themselves (NetCDF3) read through this trait only, so the same
//! code scans local files ([`LocalFile`]) and objects on object storage ([`ObjectSource`]:
//! S3 and S3-compatible servers, GCS, Azure, HTTP(S), through `object_store`).
//!
//! - URLs: [`parse_url`] parses and checks them into a [`Location`]; [`PrefixPolicy`] is the
//!   allow-list of prefixes a reader may fetch from.
//! - Clients: [`StoreCache`] builds one `object_store` client per (scheme, bucket or host)
//!   from the environment (`AmazonS3Builder::from_env()` and its GCS and Azure peers) and keeps
//!   it.
//! - [`open_source`] opens a local path or any URL; [`list_prefix`] lists the objects under a
//!   prefix; [`RemoteReader`] is a [`RangeReader`] over URLs of any kind.
//!
//! Object-store requests run on a small process-wide tokio runtime; every function here is
//! blocking and may be called from ordinary threads (rayon workers included), but not from a
//! task of that runtime itself.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

mod remote;
mod url;

pub use remote::{
    ListedObject, ObjectSource, RemoteReader, StoreCache, list_prefix, object_path, open_source,
};
pub use url::{Location, Prefix, PrefixPolicy, Scheme, parse_url, percent_decode};

/// Errors of byte access, naming the source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source could not be opened or read.
    #[error("{url}: {error}")]
    Io {
        /// Source URL.
        url: String,
        /// The I/O error.
        error: io::Error,
    },
    /// A read past the end of the source.
    #[error(
        "{url}: read of {len} bytes at offset {offset} goes past the end of the file ({size} bytes)"
    )]
    OutOfBounds {
        /// Source URL.
        url: String,
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// Source size.
        size: u64,
    },
    /// A path that cannot be made into a URL.
    #[error("{0}: not a valid path")]
    BadPath(String),
    /// A URL that cannot be used (relative, `..` segments, no bucket, ...).
    #[error("{url}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// Why it is refused.
        reason: String,
    },
    /// A URL whose scheme is none of `file`, `s3`, `gs`, `az`, `http`, `https` (and their
    /// aliases).
    #[error("{url}: unsupported URL scheme {scheme:?} (supported: file, s3, gs, az, http, https)")]
    UnsupportedScheme {
        /// The URL as given.
        url: String,
        /// Its scheme as written.
        scheme: String,
    },
    /// There is no object (or file) at this URL.
    #[error("{url}: not found")]
    NotFound {
        /// The URL.
        url: String,
    },
    /// The object changed (its ETag no longer matches) since it was opened.
    #[error("{url}: the object changed since it was opened (its ETag no longer matches)")]
    Changed {
        /// The URL.
        url: String,
    },
    /// An object-store request failed, or its client could not be set up.
    #[error("{url}: {reason}")]
    Remote {
        /// The URL.
        url: String,
        /// Why, in the words of the object store client.
        reason: String,
    },
}

impl SourceError {
    /// Whether the source does not exist ([`SourceError::NotFound`], or a local file that is
    /// not there).
    pub fn is_not_found(&self) -> bool {
        match self {
            SourceError::NotFound { .. } => true,
            SourceError::Io { error, .. } => error.kind() == io::ErrorKind::NotFound,
            _ => false,
        }
    }

    /// The URL this error is about.
    pub fn url(&self) -> &str {
        match self {
            SourceError::Io { url, .. }
            | SourceError::OutOfBounds { url, .. }
            | SourceError::BadUrl { url, .. }
            | SourceError::UnsupportedScheme { url, .. }
            | SourceError::NotFound { url }
            | SourceError::Changed { url }
            | SourceError::Remote { url, .. } => url,
            SourceError::BadPath(p) => p,
        }
    }
}

/// Identity of a source's content at scan time, used to detect later changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch, where known.
    pub mtime_ns: Option<i128>,
    /// ETag, where the storage has one (object stores; local files have none).
    pub etag: Option<String>,
}

/// Random-access, read-only bytes of one source.
pub trait ByteSource: Send + Sync {
    /// Absolute URL of the source (`file:///...`, `s3://...`).
    fn url(&self) -> &str;
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Reads exactly `len` bytes at `offset`; errors if the range passes the end.
    fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, SourceError>;
    /// Size, modification time and ETag at open.
    fn stamp(&self) -> SourceStamp;
}

/// A local file opened for ranged reads.
#[derive(Debug)]
pub struct LocalFile {
    path: PathBuf,
    url: String,
    file: File,
    stamp: SourceStamp,
}

impl LocalFile {
    /// Opens `path` (made absolute) for reading.
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let abs = absolute(path)?;
        let url = file_url(&abs)?;
        let io_err = |error| SourceError::Io {
            url: url.clone(),
            error,
        };
        let file = File::open(&abs).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        let stamp = file_stamp(&meta).map_err(io_err)?;
        Ok(LocalFile {
            path: abs,
            url,
            file,
            stamp,
        })
    }

    /// The absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ByteSource for LocalFile {
    fn url(&self) -> &str {
        &self.url
    }

    fn size(&self) -> u64 {
        self.stamp.size
    }

    fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let n = checked_len(&self.url, offset, len, self.stamp.size)?;
        let mut buf = vec![0u8; n];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|error| SourceError::Io {
                url: self.url.clone(),
                error,
            })?;
        Ok(buf)
    }

    fn stamp(&self) -> SourceStamp {
        self.stamp.clone()
    }
}

/// The stamp of a regular file's metadata; an error for a directory.
fn file_stamp(meta: &std::fs::Metadata) -> Result<SourceStamp, io::Error> {
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a directory",
        ));
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128);
    Ok(SourceStamp {
        size: meta.len(),
        mtime_ns,
        etag: None,
    })
}

/// Size and modification time of a local file without opening it (the same stamp
/// [`LocalFile::open`] records); errors name the file's `file://` URL.
pub fn local_stamp(path: &Path) -> Result<SourceStamp, SourceError> {
    let abs = absolute(path)?;
    let url = file_url(&abs)?;
    std::fs::metadata(&abs)
        .and_then(|m| file_stamp(&m))
        .map_err(|error| SourceError::Io { url, error })
}

/// The length of a read of `len` bytes at `offset` of a source of `size` bytes, or the
/// out-of-bounds error naming `url` when the range passes the end (or does not fit memory).
pub fn checked_len(url: &str, offset: u64, len: u64, size: u64) -> Result<usize, SourceError> {
    let oob = || SourceError::OutOfBounds {
        url: url.to_string(),
        offset,
        len,
        size,
    };
    match offset.checked_add(len) {
        Some(end) if end <= size => usize::try_from(len).map_err(|_| oob()),
        _ => Err(oob()),
    }
}

/// `path` made absolute against the current directory, with `.` and `..` resolved lexically.
pub fn absolute(path: &Path) -> Result<PathBuf, SourceError> {
    let joined =
        std::path::absolute(path).map_err(|_| SourceError::BadPath(path.display().to_string()))?;
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The `file://` URL of an absolute path (no percent-encoding: fsspec and object_store's local
/// store take the path as written).
pub fn file_url(abs: &Path) -> Result<String, SourceError> {
    let s = abs
        .to_str()
        .ok_or_else(|| SourceError::BadPath(abs.display().to_string()))?;
    if !s.starts_with('/') {
        return Err(SourceError::BadPath(s.to_string()));
    }
    Ok(format!("file://{s}"))
}

/// Gap below which nearby ranges of a local file are read in one `pread` (about what a
/// system call costs in page-cache copying).
pub const LOCAL_COALESCE_GAP: u64 = 16 << 10;

/// Gap below which nearby ranges of an object are fetched in one request (about what a
/// request's latency costs in transfer).
pub const REMOTE_COALESCE_GAP: u64 = 1 << 20;

/// Largest single read that coalescing produces.
pub const MAX_COALESCED_READ: u64 = 16 << 20;

/// Merges ranges closer than `gap` into sorted requests of at most `max` bytes (a single range
/// larger than `max` stays one request).
pub fn merge_ranges(ranges: &[Range<u64>], gap: u64, max: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.to_vec();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        if let Some(last) = out.last_mut()
            && r.start <= last.end.saturating_add(gap)
            && r.end.max(last.end) - last.start <= max
        {
            last.end = last.end.max(r.end);
            continue;
        }
        out.push(r);
    }
    out
}

/// Reads byte ranges of sources named by URL.
pub trait RangeReader: Send + Sync {
    /// Reads exactly `len` bytes at `offset` of the source at `url`.
    fn read(&self, url: &str, offset: u64, len: u64) -> Result<Vec<u8>, SourceError>;

    /// Gap below which [`RangeReader::read_many`] reads two ranges of `url` in one read.
    fn coalesce_gap(&self, _url: &str) -> u64 {
        0
    }

    /// Reads several ranges of the source at `url`, in the order given; nearby ranges are
    /// read together. A failing merged read is retried range by range, so an error names the
    /// range that caused it.
    fn read_many(&self, url: &str, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, SourceError> {
        let one_by_one = || {
            ranges
                .iter()
                .map(|r| self.read(url, r.start, r.end.saturating_sub(r.start)))
                .collect()
        };
        let merged = merge_ranges(ranges, self.coalesce_gap(url), MAX_COALESCED_READ);
        if merged.len() == ranges.len() {
            return one_by_one();
        }
        let runs: Vec<(u64, Vec<u8>)> = match merged
            .iter()
            .map(|m| Ok((m.start, self.read(url, m.start, m.end - m.start)?)))
            .collect::<Result<_, SourceError>>()
        {
            Ok(runs) => runs,
            Err(_) => return one_by_one(),
        };
        ranges
            .iter()
            .map(|r| {
                // The run holding `r`: the last one starting at or before it.
                let k = runs.partition_point(|(s, _)| *s <= r.start);
                let (start, bytes) = &runs[k.saturating_sub(1)];
                let lo = usize::try_from(r.start - start).unwrap_or(usize::MAX);
                let hi = usize::try_from(r.end.saturating_sub(*start)).unwrap_or(usize::MAX);
                bytes
                    .get(lo..hi)
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| SourceError::OutOfBounds {
                        url: url.to_string(),
                        offset: r.start,
                        len: r.end.saturating_sub(r.start),
                        size: start + bytes.len() as u64,
                    })
            })
            .collect()
    }
}

/// A [`RangeReader`] over local `file://` URLs, keeping files open.
#[derive(Debug, Default)]
pub struct LocalReader {
    open: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<LocalFile>>>,
}

impl LocalReader {
    /// A reader with no open files.
    pub fn new() -> Self {
        Self::default()
    }

    fn file(&self, url: &str) -> Result<std::sync::Arc<LocalFile>, SourceError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = open.get(url) {
            return Ok(f.clone());
        }
        let path = url
            .strip_prefix("file://")
            .ok_or_else(|| SourceError::BadPath(format!("{url} is not a file:// URL")))?;
        let f = std::sync::Arc::new(LocalFile::open(Path::new(path))?);
        open.insert(url.to_string(), f.clone());
        Ok(f)
    }
}

impl RangeReader for LocalReader {
    fn read(&self, url: &str, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        self.file(url)?.read_range(offset, len)
    }

    fn coalesce_gap(&self, _url: &str) -> u64 {
        LOCAL_COALESCE_GAP
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn merges_ranges() {
        let r = merge_ranges(&[10..20, 0..5, 100..110, 21..30], 4, 1000);
        assert_eq!(r, vec![0..5, 10..30, 100..110]);
        let r = merge_ranges(&[0..5, 10..20], 5, 1000);
        assert_eq!(r, vec![0..20]);
        // Bounded request size.
        let r = merge_ranges(&[0..10, 10..20, 20..30], 0, 20);
        assert_eq!(r, vec![0..20, 20..30]);
        // Overlapping and duplicate ranges.
        let r = merge_ranges(&[0..10, 5..8, 0..10], 0, 100);
        assert_eq!(r, vec![0..10]);
    }

    /// A reader that counts its reads, over an in-memory source.
    struct Counting(Vec<u8>, std::sync::atomic::AtomicUsize);

    impl RangeReader for Counting {
        fn read(&self, url: &str, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let end = offset + len;
            if end > self.0.len() as u64 {
                return Err(SourceError::OutOfBounds {
                    url: url.into(),
                    offset,
                    len,
                    size: self.0.len() as u64,
                });
            }
            Ok(self.0[offset as usize..end as usize].to_vec())
        }

        fn coalesce_gap(&self, _url: &str) -> u64 {
            4
        }
    }

    #[test]
    fn read_many_coalesces_nearby_ranges_and_keeps_the_order() {
        let r = Counting((0..=255).collect(), Default::default());
        let ranges = [40..44, 0..3, 5..9, 100..100, 12..20, 6..7];
        let got = r.read_many("mem", &ranges).unwrap();
        for (g, want) in got.iter().zip(&ranges) {
            let want: Vec<u8> = (want.start as u8..want.end as u8).collect();
            assert_eq!(g, &want);
        }
        // 0..20 (gaps of 2 and 3), 40..44, 100..100: three reads instead of six.
        assert_eq!(r.1.load(std::sync::atomic::Ordering::Relaxed), 3);
    }

    #[test]
    fn read_many_names_the_failing_range() {
        let r = Counting((0..=99).collect(), Default::default());
        let e = r.read_many("mem", &[0..10, 12..20, 98..104]).unwrap_err();
        assert!(
            matches!(
                e,
                SourceError::OutOfBounds {
                    offset: 98,
                    len: 6,
                    ..
                }
            ),
            "{e:?}"
        );
        // Merged runs that read fine are still split correctly.
        let got = r.read_many("mem", &[90..95, 96..100]).unwrap();
        assert_eq!(
            got,
            vec![(90..95).collect::<Vec<u8>>(), (96..100).collect()]
        );
    }

    #[test]
    fn ranged_reads() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"0123456789").unwrap();
        let src = LocalFile::open(f.path()).unwrap();
        assert_eq!(src.size(), 10);
        assert_eq!(src.read_range(2, 3).unwrap(), b"234");
        assert_eq!(src.read_range(10, 0).unwrap(), b"");
        assert!(matches!(
            src.read_range(8, 3),
            Err(SourceError::OutOfBounds { .. })
        ));
        assert!(matches!(
            src.read_range(u64::MAX, 2),
            Err(SourceError::OutOfBounds { .. })
        ));
        assert!(src.url().starts_with("file:///"));
    }

    #[test]
    fn missing_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let e = LocalFile::open(&dir.path().join("nope.nc")).unwrap_err();
        assert!(e.to_string().contains("nope.nc"), "{e}");
        assert!(e.is_not_found());
        assert!(e.url().ends_with("/nope.nc"), "{}", e.url());
        assert!(LocalFile::open(dir.path()).is_err());
        let e = local_stamp(&dir.path().join("nope.nc")).unwrap_err();
        assert!(e.is_not_found() && e.to_string().contains("nope.nc"), "{e}");
        assert!(local_stamp(dir.path()).is_err());
    }

    #[test]
    fn local_stamp_is_the_open_stamp() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"0123456789").unwrap();
        let st = local_stamp(f.path()).unwrap();
        assert_eq!(st, LocalFile::open(f.path()).unwrap().stamp());
        assert_eq!((st.size, st.etag), (10, None));
        assert!(st.mtime_ns.is_some());
    }

    #[test]
    fn local_reader_reads_by_url() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"abcdef").unwrap();
        let url = file_url(&absolute(f.path()).unwrap()).unwrap();
        let r = LocalReader::new();
        assert_eq!(r.read(&url, 1, 3).unwrap(), b"bcd");
        assert_eq!(r.read(&url, 4, 2).unwrap(), b"ef");
        assert!(r.read(&url, 5, 2).is_err());
        assert!(r.read("s3://bucket/x", 0, 1).is_err());
    }

    #[test]
    fn absolute_resolves_dots() {
        let p = absolute(Path::new("/a/b/../c/./d.nc")).unwrap();
        assert_eq!(p, PathBuf::from("/a/c/d.nc"));
        assert_eq!(file_url(&p).unwrap(), "file:///a/c/d.nc");
    }
}
