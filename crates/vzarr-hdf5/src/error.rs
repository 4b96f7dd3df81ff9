//! The one error type of the scanner: a file that cannot be scanned, naming the file (its
//! URL), the object inside it where known, and the reason, with the cause kept as the
//! error's source.

use vzarr_codec::CodecError;
use vzarr_core::CoreError;
use vzarr_source::SourceError;

/// A source that could not be scanned.
///
/// Variables that merely cannot be virtualised are not errors: they are listed in
/// [`vzarr_core::VirtualDataset::skipped`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Hdf5Error {
    /// The bytes of the source could not be read (before any HDF5 structure was decoded).
    #[error("{url}: cannot read the source")]
    Source {
        /// URL of the source.
        url: String,
        /// The byte layer's error.
        #[source]
        source: Box<SourceError>,
    },
    /// The source is not an HDF5 file, or its superblock is unreadable.
    #[error("{url}: cannot open as HDF5")]
    Open {
        /// URL of the source.
        url: String,
        /// What the HDF5 reader found.
        #[source]
        source: Box<vzarr_hdf5_format::Error>,
    },
    /// A structure of an object (object header, link table, attribute, chunk index, ...) is
    /// unreadable: corrupt, truncated, or a feature the reader does not implement.
    #[error("{url}: {object}: {what} unreadable")]
    Structure {
        /// URL of the source.
        url: String,
        /// Path of the object inside the file (`/` for the root group).
        object: String,
        /// What was being read ("object header", "chunk index", ...).
        what: &'static str,
        /// What the HDF5 reader found.
        #[source]
        source: Box<vzarr_hdf5_format::Error>,
    },
    /// An object holds something impossible (a chunk past the end of the file, a compact
    /// dataset whose data does not match its shape, ...).
    #[error("{url}: {object}: {reason}")]
    Object {
        /// URL of the source.
        url: String,
        /// Path of the object inside the file.
        object: String,
        /// What is wrong.
        reason: String,
    },
    /// A chunk stored with some filters skipped could not be decoded or re-encoded.
    #[error("{url}: {object}: chunk {chunk:?} (filter mask {filter_mask:#x})")]
    Chunk {
        /// URL of the source.
        url: String,
        /// Path of the dataset inside the file.
        object: String,
        /// The chunk's grid index.
        chunk: Vec<u64>,
        /// The chunk's filter mask.
        filter_mask: u32,
        /// The codec error.
        #[source]
        source: Box<CodecError>,
    },
    /// The bytes of a chunk stored with some filters skipped could not be read.
    #[error("{url}: {object}: chunk {chunk:?} unreadable")]
    ChunkBytes {
        /// URL of the source.
        url: String,
        /// Path of the dataset inside the file.
        object: String,
        /// The chunk's grid index.
        chunk: Vec<u64>,
        /// The byte layer's error.
        #[source]
        source: Box<SourceError>,
    },
    /// The dataset's shape, chunking or references do not make a valid virtual array.
    #[error("{url}: {object}: invalid virtual array")]
    Model {
        /// URL of the source.
        url: String,
        /// Path of the object inside the file.
        object: String,
        /// The model's error.
        #[source]
        source: Box<CoreError>,
    },
}

impl Hdf5Error {
    /// The URL of the source the error is about.
    pub fn url(&self) -> &str {
        match self {
            Hdf5Error::Source { url, .. }
            | Hdf5Error::Open { url, .. }
            | Hdf5Error::Structure { url, .. }
            | Hdf5Error::Object { url, .. }
            | Hdf5Error::Chunk { url, .. }
            | Hdf5Error::ChunkBytes { url, .. }
            | Hdf5Error::Model { url, .. } => url,
        }
    }

    /// The path of the object inside the file the error is about, where known.
    pub fn object(&self) -> Option<&str> {
        match self {
            Hdf5Error::Source { .. } | Hdf5Error::Open { .. } => None,
            Hdf5Error::Structure { object, .. }
            | Hdf5Error::Object { object, .. }
            | Hdf5Error::Chunk { object, .. }
            | Hdf5Error::ChunkBytes { object, .. }
            | Hdf5Error::Model { object, .. } => Some(object),
        }
    }

    /// The whole chain of messages, outermost first, joined with ": ".
    pub fn report(&self) -> String {
        let mut out = self.to_string();
        let mut cur = std::error::Error::source(self);
        while let Some(e) = cur {
            out.push_str(": ");
            out.push_str(&e.to_string());
            cur = e.source();
        }
        out
    }
}
