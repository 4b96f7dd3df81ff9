//! Errors of reading through a manifest.

use vzarr_kerchunk::ParseError;
use vzarr_source::SourceError;

/// Why references could not be opened or read. Every variant names what it is about (the
/// references, a source URL, an array) and keeps its cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The reference file itself could not be read.
    #[error("{origin}: cannot read the references: {source}")]
    Load {
        /// Where the references came from (path or URL).
        origin: String,
        /// Why.
        #[source]
        source: SourceError,
    },
    /// The references are malformed.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// An allowed prefix that cannot be used.
    #[error("allowed prefix: {0}")]
    Prefix(#[source] SourceError),
    /// The file of allowed prefixes could not be read.
    #[error("{path}: cannot read the allowed prefixes: {source}")]
    Config {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A source the manifest points at could not be read, is outside the allowed prefixes
    /// ([`SourceError::NotAllowed`]), or changed since the build ([`SourceError::Stale`]).
    #[error("{source}{}", array.as_ref().map(|a| format!(" (array {a})")).unwrap_or_default())]
    Source {
        /// An array whose chunks point there, where known.
        array: Option<String>,
        /// The byte layer's error.
        #[source]
        source: SourceError,
    },
    /// No array at this path.
    #[error("no array {0:?} in the references")]
    NoArray(String),
    /// What needs every chunk was asked of lazily opened Parquet references whose arrays are
    /// not all loaded (`Reader::load_all` loads them).
    #[error(
        "{origin}: the record files of {} arrays ({}) are not read yet (lazily opened Parquet references; load them all first)",
        .arrays.len(),
        .arrays.join(", ")
    )]
    NotLoaded {
        /// Where the references came from.
        origin: String,
        /// The arrays not loaded.
        arrays: Vec<String>,
    },
    /// An array could not be opened or decoded.
    #[error("array {path}: {reason}")]
    Array {
        /// Array path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A selection (`VAR[0:3,10,:]`) that cannot be parsed or does not fit the array.
    #[error("selection {spec:?}: {reason}")]
    Selection {
        /// The selection as given.
        spec: String,
        /// Why.
        reason: String,
    },
}

impl From<SourceError> for ReadError {
    fn from(source: SourceError) -> Self {
        ReadError::Source {
            array: None,
            source,
        }
    }
}

impl ReadError {
    pub(crate) fn array(path: &str, reason: impl ToString) -> Self {
        ReadError::Array {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// The byte layer's error under this one, if any (to tell refused, stale and missing
    /// sources apart), also when it is the cause of a part of the references (a record file of
    /// Parquet references that could not be read, or that holds a refused URL).
    pub fn source_error(&self) -> Option<&SourceError> {
        match self {
            ReadError::Load { source, .. }
            | ReadError::Prefix(source)
            | ReadError::Source { source, .. } => Some(source),
            ReadError::Parse(ParseError::Part { source, .. }) => source.downcast_ref(),
            _ => None,
        }
    }

    /// This error with `array` named, for a source error.
    pub(crate) fn in_array(self, path: &str) -> Self {
        match self {
            ReadError::Source {
                array: None,
                source,
            } => ReadError::Source {
                array: Some(path.to_string()),
                source,
            },
            other => other,
        }
    }
}
