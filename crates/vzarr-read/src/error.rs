//! Errors of reading through a manifest.

/// Why references could not be opened or read. Every variant names what it is about (the
/// references, a key, a source URL, an array) and says why in words.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ReadError {
    /// The reference file itself could not be read.
    #[error("{origin}: cannot read the references: {reason}")]
    Load {
        /// Where the references came from (path or URL).
        origin: String,
        /// Why.
        reason: String,
    },
    /// The references are malformed as a whole (not JSON, not UTF-8, wrong version, ...).
    #[error("{origin}: malformed references: {reason}")]
    Malformed {
        /// Where the references came from.
        origin: String,
        /// Why.
        reason: String,
    },
    /// One key of the references is malformed or does not fit the arrays it names.
    #[error("{origin}: key {key:?}: {reason}")]
    BadKey {
        /// Where the references came from.
        origin: String,
        /// The offending key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A URL the manifest points at is outside the allowed prefixes, or is not acceptable at
    /// all (`..` segments, relative paths, ...). Nothing was fetched.
    #[error("refusing to read {url}{}: {reason}", array.as_ref().map(|a| format!(" (array {a})")).unwrap_or_default())]
    NotAllowed {
        /// The refused URL.
        url: String,
        /// An array whose chunks point there, where known.
        array: Option<String>,
        /// Why it is refused.
        reason: String,
    },
    /// A source changed since the references were built.
    #[error(
        "{url}: source changed since the references were built: {what} (pass --ignore-stale to read anyway)"
    )]
    Stale {
        /// The source URL.
        url: String,
        /// What changed (size, modification time, ETag, or that it is gone).
        what: String,
    },
    /// A source could not be reached or read.
    #[error("{url}: {reason}")]
    Source {
        /// The source URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// No array at this path.
    #[error("no array {0:?} in the references")]
    NoArray(String),
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
    /// Reading a source directly (not through the manifest) failed during verification.
    #[error("{url}: {variable}: reading the source directly: {reason}")]
    Direct {
        /// Source URL.
        url: String,
        /// Variable path.
        variable: String,
        /// Why.
        reason: String,
    },
    /// An option value that cannot be used.
    #[error("{0}")]
    Options(String),
}

impl ReadError {
    pub(crate) fn source(url: &str, reason: impl ToString) -> Self {
        ReadError::Source {
            url: url.to_string(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn array(path: &str, reason: impl ToString) -> Self {
        ReadError::Array {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }
}
