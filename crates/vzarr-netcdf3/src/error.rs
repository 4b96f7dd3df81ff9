//! Typed errors of the NetCDF3 scanner; every message starts with the source URL.

use vzarr_core::CoreError;
use vzarr_source::SourceError;

/// Errors of NetCDF3 header parsing and scanning, each naming the source and what is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Nc3Error {
    /// A ranged read failed (the message names the source).
    #[error(transparent)]
    Source(#[from] SourceError),

    /// The file does not start with `CDF` (or is shorter than the 4-byte magic).
    #[error(
        "{url}: not a NetCDF3 file: starts with {found} (expected CDF\\x01, CDF\\x02 or CDF\\x05)"
    )]
    BadMagic {
        /// Source URL.
        url: String,
        /// The first bytes, escaped.
        found: String,
    },

    /// `CDF` followed by a version byte other than 1, 2 or 5.
    #[error("{url}: unsupported NetCDF3 version byte {version} (expected 1, 2 or 5)")]
    UnsupportedVersion {
        /// Source URL.
        url: String,
        /// The version byte found.
        version: u8,
    },

    /// The file ends inside the header.
    #[error(
        "{url}: truncated header: {what} needs {need} bytes at offset {offset}, but the file has only {size} bytes"
    )]
    TruncatedHeader {
        /// Source URL.
        url: String,
        /// The header item being read.
        what: String,
        /// Offset of the item.
        offset: u64,
        /// Bytes the item needs.
        need: u64,
        /// File size.
        size: u64,
    },

    /// A count (or a count times an element size) that cannot fit in the rest of the file.
    #[error(
        "{url}: absurd count in the header: {what} is {count} at offset {offset}, needing at least {need} bytes where only {remaining} remain in the file"
    )]
    AbsurdCount {
        /// Source URL.
        url: String,
        /// The count being read.
        what: String,
        /// The count found.
        count: u64,
        /// Offset of the count.
        offset: u64,
        /// Bytes the count implies (saturated at `u64::MAX`).
        need: u64,
        /// Bytes left in the file after the count.
        remaining: u64,
    },

    /// The header would be larger than [`crate::MAX_HEADER_BYTES`].
    #[error(
        "{url}: header is larger than {limit} bytes (reading {what} at offset {offset}); refusing"
    )]
    HeaderTooLarge {
        /// Source URL.
        url: String,
        /// The header item being read.
        what: String,
        /// Offset of the item.
        offset: u64,
        /// The limit.
        limit: u64,
    },

    /// A list tag other than the one the grammar expects.
    #[error(
        "{url}: bad list tag {tag:#x} at offset {offset} for {what} (expected {expected:#x} or ABSENT)"
    )]
    BadTag {
        /// Source URL.
        url: String,
        /// The list being read.
        what: String,
        /// The tag found.
        tag: u32,
        /// The tag expected.
        expected: u32,
        /// Offset of the tag.
        offset: u64,
    },

    /// An `nc_type` code that this format version does not define.
    #[error("{url}: {what}: unknown nc_type {code} for a CDF-{version} file{hint}")]
    UnknownType {
        /// Source URL.
        url: String,
        /// The attribute or variable.
        what: String,
        /// The code found.
        code: u32,
        /// Format version (1, 2 or 5).
        version: u8,
        /// Extra explanation (empty, or why the code is not allowed here).
        hint: String,
    },

    /// A variable that names a dimension id past the dimension list.
    #[error(
        "{url}: variable '{var}': dimension id {dimid} does not exist (the file has {ndims} dimensions)"
    )]
    BadDimId {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// The dimension id found.
        dimid: u64,
        /// Number of dimensions in the file.
        ndims: usize,
    },

    /// A name that is not valid UTF-8.
    #[error("{url}: bad name for {what} at offset {offset}: {reason}")]
    BadName {
        /// Source URL.
        url: String,
        /// The item named.
        what: String,
        /// Offset of the name.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },

    /// The record (unlimited) dimension used on an axis other than the first.
    #[error(
        "{url}: variable '{var}': record dimension '{dim}' is used on axis {axis}; it may only be the first"
    )]
    RecordDimNotFirst {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// The record dimension's name.
        dim: String,
        /// The axis it is used on.
        axis: usize,
    },

    /// A variable with more dimensions than netCDF allows.
    #[error("{url}: variable '{var}' has {rank} dimensions; netCDF allows at most {max}")]
    TooManyDims {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// Its number of dimensions.
        rank: u64,
        /// The limit.
        max: u64,
    },

    /// A variable needs more chunk references than a dataset may hold.
    #[error(
        "{url}: variable '{var}': {count} chunks, more than the {max} references an array may hold"
    )]
    TooManyChunks {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// Chunks it would need.
        count: u64,
        /// The limit.
        max: u64,
    },

    /// A size computed from the header overflows 64 bits.
    #[error("{url}: {what}: size overflows 64 bits")]
    SizeOverflow {
        /// Source URL.
        url: String,
        /// The variable or quantity.
        what: String,
    },

    /// A variable's data would start inside the header.
    #[error(
        "{url}: variable '{var}': data begins at offset {begin}, inside the header ({header_len} bytes)"
    )]
    DataOverlapsHeader {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// The variable's `begin`.
        begin: u64,
        /// Length of the header.
        header_len: u64,
    },

    /// A chunk's byte range passes the end of the file (truncated file or corrupt offsets).
    #[error(
        "{url}: variable '{var}': {what} at offset {offset} ({length} bytes) goes past the end of the file ({size} bytes): truncated file or corrupt header"
    )]
    BeyondEof {
        /// Source URL.
        url: String,
        /// Variable name.
        var: String,
        /// Which chunk or record.
        what: String,
        /// Start of the byte range.
        offset: u64,
        /// Length of the byte range.
        length: u64,
        /// File size.
        size: u64,
    },

    /// The core model refused what the scanner built.
    #[error("{url}: {what}: {source}")]
    Core {
        /// Source URL.
        url: String,
        /// The variable or step.
        what: String,
        /// The model error.
        #[source]
        source: CoreError,
    },
}
