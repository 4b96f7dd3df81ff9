//! One entry point for every scanner: a path in, a [`VirtualDataset`] out. The format is
//! sniffed from magic bytes (the HDF5 signature at offset 0, 512, 1024, ...; `CDF\x01`,
//! `CDF\x02`, `CDF\x05`), never from the file name.

pub mod batch;
pub mod cache;
pub mod inputs;

use std::path::Path;

use vzarr_core::{Provenance, SourceRecord, VirtualDataset};
use vzarr_source::{ByteSource, LocalFile, SourceError};

/// Options shared by all scanners.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Split uncompressed contiguous variables larger than this many bytes into virtual chunks
    /// along axis 0. `None` keeps one chunk.
    pub split_contiguous_bytes: Option<u64>,
}

/// The format of a source, from its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// HDF5, NetCDF4 included; the superblock starts at this offset.
    Hdf5 {
        /// Offset of the signature.
        offset: u64,
    },
    /// NetCDF3 classic with this version byte (1, 2 or 5).
    NetCdf3 {
        /// Version byte.
        version: u8,
    },
}

/// Why a source could not be scanned.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The source could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The source is not a format we scan.
    #[error("{path}: {reason}")]
    Unrecognised {
        /// Source path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The HDF5 scanner failed.
    #[error(transparent)]
    Hdf5(#[from] vzarr_hdf5::Hdf5Error),
    /// The NetCDF3 scanner failed.
    #[error(transparent)]
    NetCdf3(#[from] vzarr_netcdf3::Nc3Error),
}

/// Detects the format of `src` from its magic bytes.
pub fn sniff(src: &dyn ByteSource) -> Result<Format, ScanError> {
    let size = src.size();
    let path = src.url().trim_start_matches("file://").to_string();
    if size == 0 {
        return Err(ScanError::Unrecognised {
            path,
            reason: "empty file (0 bytes)".into(),
        });
    }
    let head = src.read_range(0, size.min(8))?;
    if head.starts_with(b"CDF") && head.len() >= 4 {
        return match head[3] {
            v @ (1 | 2 | 5) => Ok(Format::NetCdf3 { version: v }),
            v => Err(ScanError::Unrecognised {
                path,
                reason: format!("NetCDF3 magic with unsupported version byte {v}"),
            }),
        };
    }
    for offset in vzarr_hdf5::signature_offsets(size) {
        let sig = if offset == 0 && head.len() == 8 {
            head.clone()
        } else {
            src.read_range(offset, 8)?
        };
        if sig == vzarr_hdf5::SIGNATURE {
            return Ok(Format::Hdf5 { offset });
        }
    }
    Err(ScanError::Unrecognised {
        path,
        reason: format!(
            "not an HDF5 or NetCDF file: no HDF5 signature at offsets 0, 512, 1024, ... and no \
             NetCDF3 magic (first bytes {:02x?})",
            &head[..head.len().min(8)]
        ),
    })
}

/// Scans a local file of any supported format; the result's provenance records the file's
/// size and modification time.
pub fn scan_path(path: &Path, opts: &ScanOptions) -> Result<VirtualDataset, ScanError> {
    let src = LocalFile::open(path)?;
    let stamp = src.stamp();
    let mut ds = match sniff(&src)? {
        Format::Hdf5 { .. } => {
            let o = vzarr_hdf5::ScanOptions {
                split_contiguous_bytes: opts.split_contiguous_bytes,
            };
            vzarr_hdf5::scan_file(src.path(), &o)?
        }
        Format::NetCdf3 { .. } => {
            let o = vzarr_netcdf3::ScanOptions {
                split_contiguous_bytes: opts.split_contiguous_bytes,
            };
            vzarr_netcdf3::scan(&src, &o)?
        }
    };
    ds.provenance = Provenance::single(SourceRecord {
        url: src.url().to_string(),
        size: stamp.size,
        mtime_ns: stamp.mtime_ns,
        etag: None,
    });
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn sniffs_magic_bytes() {
        let f = file_with(b"CDF\x02rest-of-header");
        assert_eq!(
            sniff(&LocalFile::open(f.path()).unwrap()).unwrap(),
            Format::NetCdf3 { version: 2 }
        );
        let mut hdf = vec![0u8; 600];
        hdf[512..520].copy_from_slice(&vzarr_hdf5::SIGNATURE);
        let f = file_with(&hdf);
        assert_eq!(
            sniff(&LocalFile::open(f.path()).unwrap()).unwrap(),
            Format::Hdf5 { offset: 512 }
        );
    }

    #[test]
    fn rejects_other_files() {
        let f = file_with(b"");
        let e = sniff(&LocalFile::open(f.path()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty file"), "{e}");
        let f = file_with(b"hello, this is text\n");
        let e = sniff(&LocalFile::open(f.path()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an HDF5 or NetCDF file"), "{e}");
        let f = file_with(b"CDF\x03");
        let e = sniff(&LocalFile::open(f.path()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("version byte 3"), "{e}");
    }
}
