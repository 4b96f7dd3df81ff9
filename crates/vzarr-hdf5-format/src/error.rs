//! The one error type of the crate.
//!
//! Every variant names the structure that is wrong (e.g. `"v1 B-tree node"`, `"datatype
//! message"`) and the absolute file offset where it starts, so that a report on a corrupt file
//! points at the bytes. Causes are kept as sources ([`Error::Context`], [`Error::Read`]), never
//! flattened into strings. Structure names follow the HDF5 File Format Specification 3.0
//! (sections II to IV and appendix C).

use crate::storage::StorageError;

/// Result type of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while reading the HDF5 structure of a file.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The byte source failed to deliver a range.
    #[error("{structure} at byte {address}: reading {len} bytes failed")]
    Read {
        /// Structure being read.
        structure: &'static str,
        /// Absolute file offset of the read.
        address: u64,
        /// Bytes requested.
        len: u64,
        /// The storage error.
        #[source]
        source: StorageError,
    },
    /// A structure would extend past the end of the file (or its end overflows).
    #[error(
        "{structure} at byte {address}: {len} bytes would end past the end of the file \
         ({file_size} bytes)"
    )]
    OutOfBounds {
        /// Structure being read.
        structure: &'static str,
        /// Absolute file offset where it starts.
        address: u64,
        /// Its length in bytes.
        len: u64,
        /// Size of the file.
        file_size: u64,
    },
    /// No HDF5 format signature at any of the offsets where a superblock may start.
    #[error(
        "not an HDF5 file: no format signature at offset 0, 512, 1024, ... ({file_size} bytes)"
    )]
    NotHdf5 {
        /// Size of the file.
        file_size: u64,
    },
    /// The superblock says the file is longer than it is.
    #[error(
        "truncated file: the superblock at byte {address} says the file ends at byte {eof}, but it \
         has {file_size} bytes"
    )]
    TruncatedFile {
        /// Absolute file offset of the superblock.
        address: u64,
        /// End of file recorded in the superblock (absolute).
        eof: u64,
        /// Actual size of the file.
        file_size: u64,
    },
    /// A structure does not start with its signature.
    #[error("{structure} at byte {address}: bad signature {found:?} (expected {expected:?})")]
    Signature {
        /// Structure expected there.
        structure: &'static str,
        /// Absolute file offset.
        address: u64,
        /// The four bytes found.
        found: [u8; 4],
        /// The signature expected.
        expected: &'static str,
    },
    /// A stored checksum does not match the bytes.
    #[error(
        "{structure} at byte {address}: checksum mismatch (stored {stored:#010x}, computed \
         {computed:#010x})"
    )]
    Checksum {
        /// Structure whose checksum failed.
        structure: &'static str,
        /// Absolute file offset of the structure.
        address: u64,
        /// Checksum stored in the file.
        stored: u32,
        /// Checksum computed over the bytes.
        computed: u32,
    },
    /// A structure ends before a field that must be there.
    #[error(
        "{structure} at byte {address}: truncated: {need} more bytes needed at byte {at} of \
         {have}"
    )]
    Truncated {
        /// Structure being decoded.
        structure: &'static str,
        /// Absolute file offset of the structure.
        address: u64,
        /// Position inside the structure where decoding stopped.
        at: usize,
        /// Bytes needed there.
        need: usize,
        /// Bytes the structure has.
        have: usize,
    },
    /// A version number this reader does not know.
    #[error("{structure} at byte {address}: unsupported version {version}")]
    Version {
        /// Structure with the version field.
        structure: &'static str,
        /// Absolute file offset.
        address: u64,
        /// The version found.
        version: u8,
    },
    /// A field holds a value that is impossible or inconsistent.
    #[error("{structure} at byte {address}: {detail}")]
    Invalid {
        /// Structure with the bad field.
        structure: &'static str,
        /// Absolute file offset.
        address: u64,
        /// What is wrong.
        detail: String,
    },
    /// A valid feature of the format that this reader does not implement.
    #[error("{structure} at byte {address}: unsupported: {detail}")]
    Unsupported {
        /// Structure using the feature.
        structure: &'static str,
        /// Absolute file offset.
        address: u64,
        /// The feature.
        detail: String,
    },
    /// A safety limit was hit (nesting depth, chain length, element count).
    #[error("{structure} at byte {address}: limit exceeded: {detail}")]
    Limit {
        /// Structure where the limit was hit.
        structure: &'static str,
        /// Absolute file offset.
        address: u64,
        /// Which limit.
        detail: String,
    },
    /// A structure refers back to itself (continuation chain, B-tree, heap, links).
    #[error("{structure} at byte {address}: cycle: reached again from {from}")]
    Cycle {
        /// Structure reached twice.
        structure: &'static str,
        /// Its absolute file offset.
        address: u64,
        /// Absolute file offset of the structure that pointed at it again.
        from: u64,
    },
    /// A path inside the file cannot be resolved.
    #[error("path {path:?}: {detail}")]
    Path {
        /// The path asked for.
        path: String,
        /// Why it does not resolve.
        detail: String,
        /// The error of the file structure that stopped the resolution, if any.
        #[source]
        source: Option<Box<Error>>,
    },
    /// An error inside an enclosing structure, e.g. a message inside an object header.
    #[error("in {structure} at byte {address}")]
    Context {
        /// The enclosing structure.
        structure: &'static str,
        /// Its absolute file offset.
        address: u64,
        /// The error inside it.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Wraps `self` as happening inside `structure` at `address`.
    pub fn context(self, structure: &'static str, address: u64) -> Error {
        Error::Context {
            structure,
            address,
            source: Box::new(self),
        }
    }

    /// The whole chain of messages, outermost first, joined with ": ".
    pub fn report(&self) -> String {
        let mut out = self.to_string();
        let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(self);
        while let Some(e) = cur {
            out.push_str(": ");
            out.push_str(&e.to_string());
            cur = e.source();
        }
        out
    }

    /// The innermost error, past any [`Error::Context`] layers.
    pub fn root_cause(&self) -> &Error {
        let mut e = self;
        while let Error::Context { source, .. } = e {
            e = source;
        }
        e
    }

    pub(crate) fn invalid(
        structure: &'static str,
        address: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Invalid {
            structure,
            address,
            detail: detail.into(),
        }
    }

    pub(crate) fn unsupported(
        structure: &'static str,
        address: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Unsupported {
            structure,
            address,
            detail: detail.into(),
        }
    }

    pub(crate) fn limit(structure: &'static str, address: u64, detail: impl Into<String>) -> Self {
        Error::Limit {
            structure,
            address,
            detail: detail.into(),
        }
    }
}

/// Adds an enclosing structure to the error of a result.
pub(crate) trait ResultExt<T> {
    /// Wraps an error as happening inside `structure` at `address`.
    fn within(self, structure: &'static str, address: u64) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn within(self, structure: &'static str, address: u64) -> Result<T> {
        self.map_err(|e| e.context(structure, address))
    }
}
