//! Errors of a build. Library messages never name command-line flags; the CLI adds hints by
//! matching variants.

/// Why a build (or a shard scan, a combine, an append) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A source could not be scanned (the build stops at the first failure).
    #[error(transparent)]
    Scan(#[from] vzarr_scan::ScanError),
    /// The scans could not be combined.
    #[error(transparent)]
    Plan(Box<vzarr_plan::PlanError>),
    /// Writing the output failed.
    #[error(transparent)]
    Write(#[from] vzarr_kerchunk::WriteError),
    /// A file of the build (partial, report, existing output) could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// No sources were given.
    #[error("no input files")]
    NoInputs,
    /// Every source failed to scan.
    #[error("no source could be scanned; nothing written")]
    NothingScanned,
    /// Several sources and no way to combine them.
    #[error(
        "{count} input files: say how to combine them (the dimension to concatenate along{}, or a new dimension to stack them along)",
        suggestion.as_ref().map(|d| format!(", e.g. {d}, the unlimited dimension of every file")).unwrap_or_default()
    )]
    HowToCombine {
        /// Number of scanned sources.
        count: usize,
        /// The unlimited dimension common to every file, if any.
        suggestion: Option<String>,
    },
    /// Variables or attributes would be left out of a build that must be complete.
    #[error("{file}: {count} item(s) would be left out of a strict build; nothing written")]
    Strict {
        /// The source.
        file: String,
        /// How many items.
        count: usize,
    },
    /// Variables every source has would be left out of the combined dataset of a build that
    /// must be complete.
    #[error(
        "{count} variable(s) would be left out of the combined dataset of a strict build \
         (first: {first}); nothing written"
    )]
    StrictPlan {
        /// How many variables.
        count: usize,
        /// The first, as `path: reason`.
        first: String,
    },
    /// A shard specification that is not `K/N` with `0 <= K < N`.
    #[error("shard {spec:?}: {reason}")]
    BadShard {
        /// As given.
        spec: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A file that is not a partial scan of a shard.
    #[error("{path}: not a vzarr partial scan: {what}")]
    NotAPartial {
        /// The file.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// The partial scans do not make up one complete sharding.
    #[error("{0}")]
    Shards(String),
    /// The output (or a report) cannot be written where it is to go: found before anything
    /// is scanned.
    #[error("cannot write {path}")]
    Unwritable {
        /// The file or repository.
        path: String,
        /// Why.
        #[source]
        why: Unwritable,
    },
    /// The output on object storage could not be read or written.
    #[error("output {0}")]
    Output(#[source] vzarr_source::SourceError),
    /// Writing or reading an Icechunk repository failed.
    #[error(transparent)]
    Icechunk(#[from] vzarr_icechunk::IcechunkError),
    /// Options that do not go together, or a value out of range.
    #[error("{0}")]
    Options(String),
    /// References to upgrade that cannot be (a source URL that is not absolute, a reference
    /// past the end of its source).
    #[error("{origin}: {reason}")]
    Upgrade {
        /// The references.
        origin: String,
        /// Why.
        reason: String,
    },
    /// References to upgrade with a chunk that does not fit its array.
    #[error(transparent)]
    References(#[from] vzarr_kerchunk::ParseError),
    /// A source of references to upgrade could not be opened (refused by the allowed
    /// prefixes, missing, unreadable).
    #[error("{origin}: {source}")]
    UpgradeSource {
        /// The references.
        origin: String,
        /// Why.
        #[source]
        source: vzarr_source::SourceError,
    },
    /// An existing output cannot be appended to.
    #[error("{output}: {reason}")]
    Append {
        /// The output file.
        output: String,
        /// Why.
        reason: String,
    },
    /// An existing output cannot be synced with its sources.
    #[error("{output}: {reason}")]
    Sync {
        /// The output.
        output: String,
        /// Why.
        reason: String,
    },
    /// A location or source an output records could not be listed or opened for a sync
    /// (refused by the allowed prefixes, unreadable).
    #[error("{output}: {source}")]
    SyncSource {
        /// The output.
        output: String,
        /// Why.
        #[source]
        source: vzarr_source::SourceError,
    },
    /// Sources an output records are gone, and a sync was not allowed to remove them.
    #[error(
        "{output}: {} recorded source(s) no longer there: {}; nothing written",
        removed.len(),
        removed.join(", ")
    )]
    Removed {
        /// The output.
        output: String,
        /// The sources that are gone (URLs).
        removed: Vec<String>,
    },
}

/// Why an output cannot be written where it is to go.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unwritable {
    /// The directory that would hold it does not exist.
    #[error("the directory {0} does not exist")]
    NoDirectory(String),
    /// What would hold it is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(String),
    /// A file is to be written where a directory is.
    #[error("it is a directory")]
    IsADirectory,
    /// The directory that would hold it takes no new file (permissions, a read-only file
    /// system).
    #[error("no file can be created in {dir}")]
    NotWritable {
        /// The directory.
        dir: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl From<vzarr_plan::PlanError> for BuildError {
    fn from(e: vzarr_plan::PlanError) -> Self {
        BuildError::Plan(Box::new(e))
    }
}

impl BuildError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        BuildError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
