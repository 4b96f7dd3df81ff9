//! Format detection from magic bytes, never from the file name: the HDF5 signature at
//! offset 0, 512, 1024, 2048, ... (HDF5 File Format Specification 3.0, section II.A,
//! "Format Signature"), and `CDF\x01`, `CDF\x02`, `CDF\x05` for NetCDF3 (netCDF-C
//! `docs/file_format_specifications.md`); a DMR++ sidecar is XML whose first 4 KiB hold a
//! DAP4 `<Dataset` and the `dmrpp` namespace.

use crate::{ByteSource, SourceError};

/// The 8-byte HDF5 format signature.
pub const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Offsets where an HDF5 superblock may start in a file of `size` bytes: 0, 512, 1024, 2048, ...
pub fn hdf5_signature_offsets(size: u64) -> impl Iterator<Item = u64> {
    std::iter::once(0u64)
        .chain((9..63).map(|k| 1u64 << k))
        .take_while(move |&o| o.saturating_add(8) <= size)
}

/// The format of a source, from its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// A DMR++ sidecar (OPeNDAP's XML description of an HDF5, NetCDF4 or HDF4 granule).
    Dmrpp,
}

/// Bytes of a file's start searched for the marks of a DMR++ document.
const DMRPP_HEAD: u64 = 4096;

/// Whether `head`, a file's first bytes, is XML that holds a DAP4 `Dataset` in the `dmrpp`
/// namespace: one that starts with a tag, or holds an XML declaration after other text (a
/// sidecar a tool wrote a debug line into, which the DMR++ scanner then refuses with why).
fn looks_like_dmrpp(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    (start.is_some_and(|i| head[i] == b'<') || has(b"<?xml")) && has(b"<Dataset") && has(b"dmrpp")
}

/// Why a source's format was not recognised.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SniffError {
    /// The source could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The source is empty.
    #[error("{url}: empty file (0 bytes)")]
    Empty {
        /// Source URL.
        url: String,
    },
    /// NetCDF3 magic with a version byte other than 1, 2 or 5.
    #[error("{url}: NetCDF3 magic with unsupported version byte {version}")]
    NetCdf3Version {
        /// Source URL.
        url: String,
        /// The version byte.
        version: u8,
    },
    /// An HDF4 file (its magic `0e 03 13 01`): read through its DMR++ sidecar only.
    #[error(
        "{url}: an HDF4 file, which vzarr reads only through its DMR++ sidecar (build from \
         the sidecar; check the sidecar against this file by range reads)"
    )]
    Hdf4 {
        /// Source URL.
        url: String,
    },
    /// Neither an HDF5 signature nor NetCDF3 magic.
    #[error(
        "{url}: not an HDF5 or NetCDF file: no HDF5 signature at offsets 0, 512, 1024, ... and no NetCDF3 magic (first bytes {head:02x?})"
    )]
    Unrecognised {
        /// Source URL.
        url: String,
        /// The first bytes (at most 8).
        head: Vec<u8>,
    },
}

/// Detects the format of `src` from its magic bytes.
pub fn sniff(src: &dyn ByteSource) -> Result<Format, SniffError> {
    let size = src.size();
    let url = || src.url().to_string();
    if size == 0 {
        return Err(SniffError::Empty { url: url() });
    }
    let head = src.read(0..size.min(8))?;
    if head.starts_with(b"CDF") && head.len() >= 4 {
        return match head[3] {
            v @ (1 | 2 | 5) => Ok(Format::NetCdf3 { version: v }),
            version => Err(SniffError::NetCdf3Version {
                url: url(),
                version,
            }),
        };
    }
    let others: Vec<u64> = hdf5_signature_offsets(size).skip(1).collect();
    if head[..] == HDF5_SIGNATURE {
        return Ok(Format::Hdf5 { offset: 0 });
    }
    if head.trim_ascii_start().starts_with(b"<") || head.starts_with(b"\xef\xbb\xbf") {
        let start = src.read(0..size.min(DMRPP_HEAD))?;
        if looks_like_dmrpp(&start) {
            return Ok(Format::Dmrpp);
        }
    }
    let ranges: Vec<std::ops::Range<u64>> = others.iter().map(|&o| o..o + 8).collect();
    let sigs = src.read_ranges(&ranges)?;
    if let Some((&offset, _)) = others
        .iter()
        .zip(&sigs)
        .find(|(_, s)| s[..] == HDF5_SIGNATURE)
    {
        return Ok(Format::Hdf5 { offset });
    }
    if head.starts_with(b"\x0e\x03\x13\x01") {
        return Err(SniffError::Hdf4 { url: url() });
    }
    // Text: a DMR++ document with something before its XML.
    if head
        .iter()
        .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        let start = src.read(0..size.min(DMRPP_HEAD))?;
        if looks_like_dmrpp(&start) {
            return Ok(Format::Dmrpp);
        }
    }
    Err(SniffError::Unrecognised {
        url: url(),
        head: head.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemSource;

    #[test]
    fn sniffs_magic_bytes() {
        let m = MemSource::new("mem://a", b"CDF\x02rest-of-header".to_vec());
        assert_eq!(sniff(&m).unwrap(), Format::NetCdf3 { version: 2 });
        let mut hdf = vec![0u8; 600];
        hdf[512..520].copy_from_slice(&HDF5_SIGNATURE);
        let m = MemSource::new("mem://b", hdf);
        assert_eq!(sniff(&m).unwrap(), Format::Hdf5 { offset: 512 });
        // One read for the head, one batch for the other offsets.
        assert_eq!(m.reads(), 2);
    }

    #[test]
    fn sniffs_dmrpp_sidecars() {
        let doc = b"<?xml version=\"1.0\"?>\n<Dataset xmlns:dmrpp=\"http://xml.opendap.org/dap/dmrpp/1.0.0#\">";
        let m = MemSource::new("mem://a.h5.dmrpp", doc.to_vec());
        assert_eq!(sniff(&m).unwrap(), Format::Dmrpp);
        let m = MemSource::new("mem://a.xml", b"<?xml version=\"1.0\"?><other/>".to_vec());
        assert!(matches!(sniff(&m), Err(SniffError::Unrecognised { .. })));
        // A line of text before the XML: given to the DMR++ scanner, which says what is wrong.
        let mut noisy = b"number of blocks for contiguous storage is: 1\n".to_vec();
        noisy.extend_from_slice(doc);
        let m = MemSource::new("mem://b.hdf.dmrpp", noisy);
        assert_eq!(sniff(&m).unwrap(), Format::Dmrpp);
    }

    #[test]
    fn rejects_other_files() {
        let e = sniff(&MemSource::new("mem://a", Vec::new()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty file"), "{e}");
        let e = sniff(&MemSource::new(
            "mem://b",
            b"hello, this is text\n".to_vec(),
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("not an HDF5 or NetCDF file"), "{e}");
        let e = sniff(&MemSource::new(
            "mem://d.hdf",
            b"\x0e\x03\x13\x01\0\xc8".to_vec(),
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("an HDF4 file") && e.contains("DMR++"), "{e}");
        let e = sniff(&MemSource::new("mem://c", b"CDF\x03".to_vec()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("version byte 3"), "{e}");
    }

    #[test]
    fn signature_offsets_follow_the_spec() {
        let v: Vec<u64> = hdf5_signature_offsets(5000).collect();
        assert_eq!(v, vec![0, 512, 1024, 2048, 4096]);
        assert_eq!(hdf5_signature_offsets(4).count(), 0);
    }
}
