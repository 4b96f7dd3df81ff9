//! Errors of writing and opening Icechunk repositories.

/// A boxed error of the `icechunk` crate (its repository, session, store and storage errors
/// are distinct types).
pub type IcechunkCause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of writing or opening an Icechunk repository.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IcechunkError {
    /// The repository location is neither a local path nor a supported URL.
    #[error("{location}: not a repository location ({reason})")]
    BadLocation {
        /// The location as given.
        location: String,
        /// Why it was refused.
        reason: String,
    },
    /// An append's update ([`crate::Update`]) writes more chunks than one piece holds: it is
    /// never written as a replacement of the branch's content instead (its dataset holds only
    /// what changed).
    #[error(
        "{location}: the append writes {chunks} chunks, more than one piece of {piece}; plan it \
         with every file instead"
    )]
    UpdateTooLarge {
        /// The repository.
        location: String,
        /// Chunks the update writes at most.
        chunks: u64,
        /// The most a piece holds.
        piece: usize,
    },
    /// No Icechunk repository at the location.
    #[error("{location}: no Icechunk repository there")]
    NotARepository {
        /// The location.
        location: String,
    },
    /// The local directory exists and is not an Icechunk repository (nothing is written into
    /// it).
    #[error("{location}: exists and is not an empty directory or an Icechunk repository")]
    NotEmpty {
        /// The location.
        location: String,
    },
    /// The branch does not exist.
    #[error("{location}: no branch {branch:?}")]
    NoBranch {
        /// The location.
        location: String,
        /// The branch.
        branch: String,
    },
    /// The branch moved (another writer committed) while a build written in pieces ran;
    /// nothing was committed to it.
    #[error(
        "{location}: branch {branch:?} moved while the build was written; nothing was committed (build again)"
    )]
    BranchMoved {
        /// The location.
        location: String,
        /// The branch.
        branch: String,
    },
    /// The dataset cannot be written as it is.
    #[error("invalid dataset: {0}")]
    Invalid(#[from] vzarr_core::CoreError),
    /// A chunk reference Icechunk cannot hold (index past `u32`, URL it cannot parse, source
    /// outside every virtual chunk container).
    #[error("{array}: chunk {index:?}: {reason}")]
    Reference {
        /// Array path.
        array: String,
        /// Chunk index.
        index: Vec<u64>,
        /// Why.
        reason: String,
    },
    /// A source URL that cannot be a virtual chunk container prefix.
    #[error("{url}: cannot be a virtual chunk container: {reason}")]
    Container {
        /// The URL prefix.
        url: String,
        /// Why.
        reason: String,
    },
    /// The repository holds something vzarr cannot read back (a node or document that is not
    /// Zarr v3 as vzarr writes it).
    #[error("{location}: {what}: {reason}")]
    Content {
        /// The repository.
        location: String,
        /// The node or key.
        what: String,
        /// Why.
        reason: String,
    },
    /// A file of the repository is corrupt or asks for more than a reader gives (checked
    /// before Icechunk decodes it: a decoded size past the limits, a flexbuffer nested past
    /// the limit or referring to itself, a commit that is its own ancestor, ...).
    #[error("{location}: {file}: corrupt repository file: {reason}")]
    Corrupt {
        /// The repository.
        location: String,
        /// The file, relative to the repository (`repo`, `snapshots/ID`, `manifests/ID`).
        file: String,
        /// Why.
        reason: String,
    },
    /// The `icechunk` crate panicked (on a corrupt file the checks let through, most likely);
    /// caught, so that it is this repository's error.
    #[error(
        "{location}: {operation}: the icechunk crate failed: {message} (is the repository corrupt?)"
    )]
    Panicked {
        /// The repository.
        location: String,
        /// What was being done.
        operation: String,
        /// The panic's message.
        message: String,
    },
    /// An operation of the `icechunk` crate failed.
    #[error("{location}: {operation} failed: {source}")]
    Icechunk {
        /// The repository.
        location: String,
        /// What was being done.
        operation: String,
        /// The icechunk error.
        #[source]
        source: IcechunkCause,
    },
    /// Byte access (the I/O runtime, local paths).
    #[error(transparent)]
    Source(#[from] vzarr_source::SourceError),
    /// Cleaning up a repository directory created by a failed build.
    #[error("{location}: {source}")]
    Io {
        /// The path.
        location: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

impl IcechunkError {
    /// What the repository at `location` holds at `what` is not what vzarr reads, for `reason`.
    pub(crate) fn content(location: &str, what: &str, reason: String) -> Self {
        IcechunkError::Content {
            location: location.to_string(),
            what: what.to_string(),
            reason,
        }
    }

    /// `Panicked`, from what `catch_unwind` caught.
    pub(crate) fn panicked(
        location: &str,
        operation: &str,
        panic: Box<dyn std::any::Any + Send>,
    ) -> Self {
        IcechunkError::Panicked {
            location: location.to_string(),
            operation: operation.to_string(),
            message: panic_message(&panic),
        }
    }

    pub(crate) fn icechunk(
        location: &str,
        operation: impl Into<String>,
        source: impl Into<IcechunkCause>,
    ) -> Self {
        IcechunkError::Icechunk {
            location: location.to_string(),
            operation: operation.into(),
            source: source.into(),
        }
    }
}
