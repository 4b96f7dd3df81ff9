//! Local files: ranged reads with `pread`, and the `file://` URLs of paths.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use vzarr_core::SourceRecord;

use crate::{ByteSource, SourceError, range_len};

/// The identity of a local file: its device and inode, which tell two paths to one file
/// apart from paths to two files (see [`ByteSource::file_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// The device.
    pub dev: u64,
    /// The inode on that device.
    pub ino: u64,
}

impl FileId {
    /// The identity in `meta` (from `stat`, `lstat` or an open file's `fstat`).
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// A local file opened for ranged reads. Each range is one `pread`; put [`crate::Coalesced`]
/// in front to merge nearby ranges.
#[derive(Debug)]
pub struct LocalFile {
    path: PathBuf,
    file: File,
    record: SourceRecord,
    /// The identity of the file opened (`fstat` of the open handle).
    id: FileId,
}

impl LocalFile {
    /// Opens `path` (made absolute) for reading.
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let abs = absolute(path)?;
        let url = file_url(&abs)?;
        // Checked before opening: opening a FIFO or a device could block or read forever.
        let meta = std::fs::metadata(&abs).map_err(|e| SourceError::io(&url, e))?;
        if !meta.is_file() {
            return Err(SourceError::Io {
                url,
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    if meta.is_dir() {
                        "is a directory"
                    } else {
                        "not a regular file"
                    },
                ),
            });
        }
        let file = File::open(&abs).map_err(|e| SourceError::io(&url, e))?;
        let meta = file.metadata().map_err(|e| SourceError::io(&url, e))?;
        let record = file_record(url, &meta)?;
        Ok(LocalFile {
            path: abs,
            file,
            record,
            id: FileId::of(&meta),
        })
    }

    /// The absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_one(&self, r: &Range<u64>) -> Result<Bytes, SourceError> {
        let url = &self.record.url;
        let n = range_len(url, r, self.record.size)?;
        let mut buf = vec![0u8; n];
        self.file
            .read_exact_at(&mut buf, r.start)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => SourceError::ShortRead {
                    url: url.clone(),
                    offset: r.start,
                    len: n as u64,
                    got: 0,
                },
                _ => SourceError::io(url, e),
            })?;
        Ok(Bytes::from(buf))
    }
}

impl ByteSource for LocalFile {
    fn record(&self) -> &SourceRecord {
        &self.record
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
        ranges.iter().map(|r| self.read_one(r)).collect()
    }

    fn file_id(&self) -> Option<FileId> {
        Some(self.id)
    }
}

/// The record of a regular file's metadata; an error for a directory.
fn file_record(url: String, meta: &std::fs::Metadata) -> Result<SourceRecord, SourceError> {
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "is a directory"
        } else {
            "not a regular file"
        };
        return Err(SourceError::Io {
            url,
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
        });
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128);
    Ok(SourceRecord {
        url,
        size: meta.len(),
        mtime_ns,
        etag: None,
        fingerprint: None,
    })
}

/// The record (URL, size, modification time) of a local file without opening it: the same
/// record [`LocalFile::open`] gives.
pub fn local_record(path: &Path) -> Result<SourceRecord, SourceError> {
    let abs = absolute(path)?;
    let url = file_url(&abs)?;
    let meta = std::fs::metadata(&abs).map_err(|e| SourceError::io(&url, e))?;
    file_record(url, &meta)
}

/// `path` made absolute against the current directory, with `.` and `..` resolved lexically.
pub fn absolute(path: &Path) -> Result<PathBuf, SourceError> {
    let joined = std::path::absolute(path).map_err(|_| SourceError::BadPath {
        path: path.display().to_string(),
    })?;
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
    let bad = || SourceError::BadPath {
        path: abs.display().to_string(),
    };
    let s = abs.to_str().ok_or_else(bad)?;
    if !s.starts_with('/') {
        return Err(bad());
    }
    Ok(format!("file://{s}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn ranged_reads() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"0123456789").unwrap();
        let src = LocalFile::open(f.path()).unwrap();
        assert_eq!(src.size(), 10);
        assert_eq!(src.read(2..5).unwrap(), &b"234"[..]);
        assert_eq!(src.read(10..10).unwrap(), &b""[..]);
        assert_eq!(
            src.read_ranges(&[0..2, 8..10]).unwrap(),
            vec![Bytes::from_static(b"01"), Bytes::from_static(b"89")]
        );
        assert!(matches!(
            src.read(8..11),
            Err(SourceError::OutOfBounds { .. })
        ));
        assert!(matches!(
            src.read(u64::MAX - 1..u64::MAX),
            Err(SourceError::OutOfBounds { .. })
        ));
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 5..2;
        assert!(src.read(backwards).is_err());
        assert!(src.url().starts_with("file:///"));
    }

    #[test]
    fn missing_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let e = LocalFile::open(&dir.path().join("nope.nc")).unwrap_err();
        assert!(e.to_string().contains("nope.nc"), "{e}");
        assert!(e.is_not_found());
        assert!(e.url().unwrap().ends_with("/nope.nc"));
        assert!(LocalFile::open(dir.path()).is_err());
        // A FIFO is refused without blocking on it.
        let fifo = dir.path().join("pipe.nc");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = LocalFile::open(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = local_record(&dir.path().join("nope.nc")).unwrap_err();
        assert!(e.is_not_found() && e.to_string().contains("nope.nc"), "{e}");
        assert!(local_record(dir.path()).is_err());
    }

    #[test]
    fn local_record_is_the_open_record() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"0123456789").unwrap();
        let rec = local_record(f.path()).unwrap();
        assert_eq!(&rec, LocalFile::open(f.path()).unwrap().record());
        assert_eq!((rec.size, rec.etag), (10, None));
        assert!(rec.mtime_ns.is_some());
    }

    #[test]
    fn absolute_resolves_dots() {
        let p = absolute(Path::new("/a/b/../c/./d.nc")).unwrap();
        assert_eq!(p, PathBuf::from("/a/c/d.nc"));
        assert_eq!(file_url(&p).unwrap(), "file:///a/c/d.nc");
    }
}
