//! Byte access: the [`Storage`] trait the reader pulls bytes through, and two implementations
//! (in memory, and a local file read with positional reads).
//!
//! The project's byte layer (object stores, block cache) implements [`Storage`] too. The reader
//! calls [`Storage::prefetch`] whenever the file structure names several addresses at once, so
//! that a remote implementation can fetch them in one round trip. (Outside the HDF5 File
//! Format Specification 3.0, which describes the bytes, not how they are fetched; its section
//! II.A places the file's data at addresses relative to the base address.)

use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

/// A source of the bytes of one file.
pub trait Storage: Send + Sync {
    /// Size of the file in bytes.
    fn size(&self) -> u64;
    /// Exactly `len` bytes at `offset` (error if out of range).
    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError>;
    /// Hint: these ranges will be read soon; an implementation may fetch them together.
    fn prefetch(&self, _ranges: &[Range<u64>]) {}
}

/// A failure of a [`Storage`] implementation.
#[derive(Debug)]
pub struct StorageError(Box<dyn std::error::Error + Send + Sync>);

impl StorageError {
    /// Wraps any error (or message) as a storage error.
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StorageError(e.into())
    }

    /// The wrapped error.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// The end of `offset..offset + len` if it lies inside a file of `size` bytes.
fn checked_end(offset: u64, len: u64, size: u64) -> Result<u64, StorageError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(end),
        _ => Err(StorageError::new(format!(
            "range of {len} bytes at offset {offset} is outside the file ({size} bytes)"
        ))),
    }
}

/// A file held in memory.
#[derive(Clone, Debug)]
pub struct MemStorage {
    data: Bytes,
}

impl MemStorage {
    /// Storage over these bytes.
    pub fn new(data: impl Into<Bytes>) -> Self {
        MemStorage { data: data.into() }
    }
}

impl Storage for MemStorage {
    fn size(&self) -> u64 {
        self.data.len() as u64
    }

    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        let end = checked_end(offset, len, self.size())?;
        // Both fit in usize: they are at most the length of an in-memory buffer.
        let (start, end) = (offset as usize, end as usize);
        Ok(self.data.slice(start..end))
    }
}

/// A local file, read with positional reads (no shared cursor, so reads from many threads do
/// not contend).
#[derive(Debug)]
pub struct FileStorage {
    file: std::fs::File,
    size: u64,
}

impl FileStorage {
    /// Opens the file at `path`; its size is taken once, now.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = std::fs::File::open(path)?;
        Self::from_file(file)
    }

    /// Storage over an open file; its size is taken once, now.
    pub fn from_file(file: std::fs::File) -> std::io::Result<Self> {
        let size = file.metadata()?.len();
        Ok(FileStorage { file, size })
    }
}

impl Storage for FileStorage {
    fn size(&self) -> u64 {
        self.size
    }

    fn read(&self, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        checked_end(offset, len, self.size)?;
        let len = usize::try_from(len).map_err(StorageError::new)?;
        let mut buf = vec![0u8; len];
        read_exact_at(&self.file, &mut buf, offset).map_err(StorageError::new)?;
        Ok(Bytes::from(buf))
    }
}

#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "file shorter than expected",
                ));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_storage_checks_ranges() {
        let s = MemStorage::new(vec![1u8, 2, 3, 4]);
        assert_eq!(s.size(), 4);
        assert_eq!(&s.read(1, 2).unwrap()[..], &[2, 3]);
        assert!(s.read(3, 2).is_err());
        assert!(s.read(u64::MAX, 2).is_err());
        assert_eq!(s.read(4, 0).unwrap().len(), 0);
    }

    #[test]
    fn file_storage_reads_ranges() {
        let dir = std::env::temp_dir().join(format!("vzarr-h5f-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.bin");
        std::fs::write(&p, b"hello world").unwrap();
        let s = FileStorage::open(&p).unwrap();
        assert_eq!(s.size(), 11);
        assert_eq!(&s.read(6, 5).unwrap()[..], b"world");
        assert!(s.read(6, 6).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
