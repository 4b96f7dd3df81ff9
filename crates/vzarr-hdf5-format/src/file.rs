//! The open file: superblock, byte access with bounds checks, and the caches shared by the
//! structure readers (HDF5 File Format Specification 3.0, section II "Disk Format: Level 0 -
//! File Metadata": all addresses are relative to the base address; this crate turns them into
//! absolute file offsets as it decodes them).

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use crate::decode::{Cursor, Sizes};
use crate::error::{Error, Result};
use crate::heap::global::GlobalHeapCache;
use crate::object_header::ObjectHeader;
use crate::sohm::SohmTable;
use crate::storage::Storage;
use crate::superblock::{self, Superblock};

/// Most bytes read for one metadata structure: no structure this reader decodes is larger
/// in any file the library writes (the largest are global heap collections and huge heap
/// objects holding big attribute values).
pub const MAX_READ: u64 = 512 << 20;

/// Bytes of the signature and version byte that begin a structure read with
/// [`File::read_signed`].
pub(crate) const SIGNED_PREFIX: usize = 5;

/// An HDF5 file opened for reading its structure.
///
/// Cheap to share between threads (`&File` is all the readers need); the only shared mutable
/// state is a small cache of global heap collections and the shared-message table.
pub struct File {
    storage: Arc<dyn Storage>,
    size: u64,
    superblock: Superblock,
    sizes: Sizes,
    sohm: Mutex<Option<Arc<Option<SohmTable>>>>,
    pub(crate) global_heap: Mutex<GlobalHeapCache>,
    verify_checksums: bool,
}

/// Options of [`File::open_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Verify the checksums of the structures that have one (default: true). Turning this
    /// off is for diagnostics and for testing the decoders on hostile input that carries
    /// valid checksums; every other check stays on.
    pub verify_checksums: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            verify_checksums: true,
        }
    }
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("size", &self.size)
            .field("superblock", &self.superblock)
            .finish_non_exhaustive()
    }
}

/// Locks a mutex, ignoring poisoning (the caches hold plain data that stays consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl File {
    /// Opens a file: finds and checks the superblock (and its extension, when there is one).
    pub fn open(storage: Arc<dyn Storage>) -> Result<File> {
        File::open_with(storage, OpenOptions::default())
    }

    /// Opens a file with options.
    pub fn open_with(storage: Arc<dyn Storage>, options: OpenOptions) -> Result<File> {
        let size = storage.size();
        let mut sb = superblock::read(&*storage, options.verify_checksums)?;
        let sizes = sb.sizes();
        let mut file = File {
            storage,
            size,
            superblock: sb.clone(),
            sizes,
            sohm: Mutex::new(None),
            global_heap: Mutex::new(GlobalHeapCache::default()),
            verify_checksums: options.verify_checksums,
        };
        if let Some(addr) = sb.driver_info {
            // Driver information block: version, reserved, size, 8-byte driver id.
            let b = file.read("driver information block", addr, 16)?;
            check_driver(&b[8..16], addr)?;
        }
        if let Some(ext) = sb.extension {
            let oh = file
                .object_header(ext)
                .map_err(|e| e.context("superblock extension", ext))?;
            if let Some(m) = oh.find(crate::messages::msg::MDC_IMAGE) {
                // The metadata of the file may be in the cache image only, not at the
                // addresses the structures give.
                return Err(Error::unsupported(
                    "superblock extension",
                    m.address,
                    "file closed with a metadata cache image",
                ));
            }
            if let Some(m) = oh.find(crate::messages::msg::DRIVER_INFO) {
                // Driver info message: version, 8-byte driver id, ...
                let id = m.data.get(1..9).ok_or_else(|| {
                    Error::invalid("driver info message", m.address, "shorter than its id")
                })?;
                check_driver(id, m.address)?;
            }
            if let Some((chunk, internal, leaf)) = crate::messages::btree_k_values(&oh)? {
                sb.chunk_btree_k = chunk;
                sb.group_internal_k = internal;
                sb.group_leaf_k = leaf;
                file.superblock = sb;
            }
        }
        Ok(file)
    }

    /// Opens the local file at `path`.
    pub fn open_path(path: impl AsRef<std::path::Path>) -> Result<File> {
        let p = path.as_ref();
        let storage = crate::storage::FileStorage::open(p).map_err(|e| Error::Read {
            structure: "file",
            address: 0,
            len: 0,
            source: crate::storage::StorageError::new(e),
        })?;
        File::open(Arc::new(storage))
    }

    /// The decoded superblock.
    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    /// Size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Absolute file offset of the root group's object header.
    pub fn root_address(&self) -> u64 {
        self.superblock.root_object_header
    }

    /// The byte source.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    pub(crate) fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Whether checksums are verified.
    pub(crate) fn verifies_checksums(&self) -> bool {
        self.verify_checksums
    }

    /// Checks the checksum in the last 4 bytes of `image` (when checksums are verified).
    pub(crate) fn verify_trailing(
        &self,
        what: &'static str,
        addr: u64,
        image: &[u8],
    ) -> Result<()> {
        if image.len() < 4 || self.verify_checksums {
            crate::checksum::verify_trailing(what, addr, image)
        } else {
            Ok(())
        }
    }

    /// Reads the `len` bytes of a structure at `addr` that starts with the signature `sig` and
    /// a version byte and ends with the checksum of the rest; checks the signature, then the
    /// checksum (when checksums are verified), then that the version is `version`. The fields
    /// start at byte [`SIGNED_PREFIX`].
    pub(crate) fn read_signed(
        &self,
        what: &'static str,
        addr: u64,
        len: u64,
        sig: &'static str,
        version: u8,
    ) -> Result<Bytes> {
        let img = self.read(what, addr, len)?;
        let mut c = Cursor::new(&img, what, addr, self.sizes);
        c.signature(sig)?;
        self.verify_trailing(what, addr, &img)?;
        c.version(version)?;
        Ok(img)
    }

    /// Checks the checksum `stored` of `covered` (when checksums are verified).
    pub(crate) fn verify(
        &self,
        what: &'static str,
        addr: u64,
        covered: &[u8],
        stored: &[u8],
    ) -> Result<()> {
        if stored.len() < 4 || self.verify_checksums {
            crate::checksum::verify(what, addr, covered, stored)
        } else {
            Ok(())
        }
    }

    /// Checks that `len` bytes at `addr` lie inside the file.
    pub(crate) fn check_range(&self, what: &'static str, addr: u64, len: u64) -> Result<()> {
        match addr.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::OutOfBounds {
                structure: what,
                address: addr,
                len,
                file_size: self.size,
            }),
        }
    }

    /// Exactly `len` bytes at absolute offset `addr` (at most [`MAX_READ`]).
    pub(crate) fn read(&self, what: &'static str, addr: u64, len: u64) -> Result<Bytes> {
        self.check_range(what, addr, len)?;
        if len > MAX_READ {
            return Err(Error::limit(
                what,
                addr,
                format!("{len} bytes of metadata in one structure (at most {MAX_READ})"),
            ));
        }
        let b = self.storage.read(addr, len).map_err(|source| Error::Read {
            structure: what,
            address: addr,
            len,
            source,
        })?;
        if b.len() as u64 != len {
            return Err(Error::Read {
                structure: what,
                address: addr,
                len,
                source: crate::storage::StorageError::new(format!(
                    "storage returned {} bytes instead of {len}",
                    b.len()
                )),
            });
        }
        Ok(b)
    }

    /// Up to `max` bytes at `addr`: fewer when the file ends sooner.
    pub(crate) fn read_upto(&self, what: &'static str, addr: u64, max: u64) -> Result<Bytes> {
        if addr > self.size {
            return Err(Error::OutOfBounds {
                structure: what,
                address: addr,
                len: max,
                file_size: self.size,
            });
        }
        self.read(what, addr, max.min(self.size - addr))
    }

    /// Tells the storage that these ranges will be read soon (out-of-file ranges are dropped,
    /// nothing is sent for fewer than two ranges).
    pub(crate) fn prefetch(&self, ranges: &[Range<u64>]) {
        let size = self.size;
        let ok: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < r.end && r.end <= size)
            .cloned()
            .collect();
        if ok.len() > 1 {
            self.storage.prefetch(&ok);
        }
    }

    /// The shared object header message table, loaded on first use (`None` when the file has
    /// none).
    pub(crate) fn sohm_table(&self) -> Result<Arc<Option<SohmTable>>> {
        if let Some(t) = lock(&self.sohm).as_ref() {
            return Ok(t.clone());
        }
        let table = match self.superblock.extension {
            Some(ext) => {
                let oh = self.object_header(ext)?;
                crate::sohm::load(self, &oh)?
            }
            None => None,
        };
        let t = Arc::new(table);
        *lock(&self.sohm) = Some(t.clone());
        Ok(t)
    }

    /// Reads and decodes the object header at absolute offset `addr`.
    pub fn object_header(&self, addr: u64) -> Result<ObjectHeader> {
        crate::object_header::read(self, addr)
    }

    /// The object header at `addr` as far as its bytes can be read now: continuation blocks
    /// whose read fails are left out, with their messages. For looking ahead over storage
    /// that serves only what it already holds (to find what to fetch next), never for
    /// decoding an object: [`File::object_header`] reads it whole or fails.
    pub fn object_header_available(&self, addr: u64) -> Result<ObjectHeader> {
        crate::object_header::read_with(self, addr, true)
    }
}

/// Refuses files written with the multi or family drivers: their addresses reach into other
/// files than the one being read (HDF5 File Format Specification 3.0, section II.B "Disk
/// Format: Level 0B - File Driver Info").
fn check_driver(id: &[u8], addr: u64) -> Result<()> {
    match id {
        b"NCSAmult" | b"NCSAfami" => Err(Error::unsupported(
            "driver information",
            addr,
            format!(
                "file written with the {} driver: its data spans several files",
                if id == b"NCSAmult" { "multi" } else { "family" }
            ),
        )),
        _ => Ok(()),
    }
}

/// Fails with a signature error unless `buf` starts with `sig`.
pub(crate) fn expect_signature(
    what: &'static str,
    addr: u64,
    buf: &[u8],
    sig: &'static str,
) -> Result<()> {
    let s = sig.as_bytes();
    if buf.len() >= 4 && buf[..4] == s[..4] {
        return Ok(());
    }
    let mut found = [0u8; 4];
    for (d, s) in found.iter_mut().zip(buf) {
        *d = *s;
    }
    Err(Error::Signature {
        structure: what,
        address: addr,
        found,
        expected: sig,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<File>();
        send_sync::<crate::Error>();
        send_sync::<crate::Dataset>();
    }

    #[test]
    fn refuses_what_is_not_hdf5() {
        let f = File::open(Arc::new(crate::MemStorage::new(
            b"CDF\x01 not hdf5".to_vec(),
        )));
        assert!(matches!(f, Err(Error::NotHdf5 { file_size: 13 })));
        let f = File::open(Arc::new(crate::MemStorage::new(Vec::new())));
        assert!(matches!(f, Err(Error::NotHdf5 { file_size: 0 })));
        // A signature at 512 and nothing after it.
        let mut d = vec![0u8; 520];
        d[512..520].copy_from_slice(&crate::SIGNATURE);
        assert!(matches!(
            File::open(Arc::new(crate::MemStorage::new(d))),
            Err(Error::Truncated { .. })
        ));
    }
}
