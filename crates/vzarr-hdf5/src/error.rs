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
    /// A `map_err` for the byte layer's error on `url` (its head or metadata).
    pub(crate) fn source(url: &str) -> impl FnOnce(SourceError) -> Self {
        move |source| Hdf5Error::Source {
            url: url.to_string(),
            source: Box::new(source),
        }
    }

    /// A `map_err` for the structure reader's error opening the file at `url`.
    pub(crate) fn open(url: &str) -> impl FnOnce(vzarr_hdf5_format::Error) -> Self {
        move |source| Hdf5Error::Open {
            url: url.to_string(),
            source: Box::new(source),
        }
    }

    /// A `map_err` for the byte layer's error reading the stored bytes of chunk `chunk` of
    /// dataset `object`.
    pub(crate) fn chunk_bytes<'a>(
        url: &'a str,
        object: &'a str,
        chunk: &'a [u64],
    ) -> impl FnOnce(SourceError) -> Self + 'a {
        move |source| Hdf5Error::ChunkBytes {
            url: url.to_string(),
            object: object.to_string(),
            chunk: chunk.to_vec(),
            source: Box::new(source),
        }
    }

    /// A `map_err` for a codec's error on chunk `chunk` (stored with `filter_mask`) of
    /// dataset `object`.
    pub(crate) fn chunk<'a>(
        url: &'a str,
        object: &'a str,
        chunk: &'a [u64],
        filter_mask: u32,
    ) -> impl FnOnce(CodecError) -> Self + 'a {
        move |source| Hdf5Error::Chunk {
            url: url.to_string(),
            object: object.to_string(),
            chunk: chunk.to_vec(),
            filter_mask,
            source: Box::new(source),
        }
    }

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

/// Why a compact dataset is unreadable when it stores `stored` bytes for `expected` bytes of
/// elements.
pub(crate) fn compact_mismatch(stored: usize, expected: u64) -> String {
    format!("compact data unreadable: {stored} bytes stored for {expected} bytes of elements")
}
