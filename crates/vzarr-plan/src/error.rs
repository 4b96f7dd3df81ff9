//! Why files cannot be combined.
//!
//! [`PlanError`] is the one public error of the planner, in the shape of `object_store`'s error
//! enum: `#[non_exhaustive]`, one variant per situation, the files, variable and field named
//! in fields. A cause that has a type of its own (a byte-source read, a codec, CF time, the
//! core model) is kept as the variant's [`source`](std::error::Error::source) instead of being
//! flattened into text. The message of such a variant stops where its cause begins, so that
//! printing the chain (`{:#}` of an `anyhow::Error`, or walking `source()`) shows every part
//! once: `file: variable tas: chunk [3, 0, 0]: cannot decode: <why>`.
//!
//! The library names no command-line flags. A front end adds its hints by matching variants:
//! [`PlanError::Gap`] (accepting gaps), [`PlanError::TimeUnitsWithoutCfTime`] (the option that
//! set time units) and [`PlanError::NewDimExists`] (concatenating along an existing dimension
//! instead).

use std::fmt;

use vzarr_cftime::CfTimeError;
use vzarr_codec::CodecError;
use vzarr_core::{CoreError, DataType};
use vzarr_source::SourceError;

/// Why files cannot be combined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Nothing to combine.
    #[error("no input datasets")]
    NoInputs,
    /// An input is not the scan of one file.
    #[error("input {0} is not the scan of a single file")]
    NotSingleFile(usize),
    /// A file lacks the concatenation dimension.
    #[error("{file}: no variable has the dimension {dim:?}")]
    NoConcatDim {
        /// File URL.
        file: String,
        /// Dimension.
        dim: String,
    },
    /// Two variables of one file disagree on the length of a dimension.
    #[error(
        "{file}: variable {variable}: dimension {dim} has length {len} here, {other} elsewhere"
    )]
    DimLength {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Dimension.
        dim: String,
        /// Its length in `variable`.
        len: u64,
        /// Its length in another variable of the file.
        other: u64,
    },
    /// A variable is in one file but not another.
    #[error("variable {variable}: present in {present} but not in {absent}")]
    MissingVariable {
        /// Variable path.
        variable: String,
        /// File that has it.
        present: String,
        /// File that lacks it (with the reason when the scanner left it out there).
        absent: String,
        /// The file that differs from the first file (the one to leave out).
        odd: String,
    },
    /// Two files disagree on something that must agree.
    #[error(
        "variable {variable}: {field} differs between {} and {}: {detail}",
        .files.first,
        .files.second
    )]
    Mismatch {
        /// Variable path.
        variable: String,
        /// What differs.
        field: String,
        /// The two files.
        files: FilePair,
        /// The two values.
        detail: String,
    },
    /// Files overlap along the concatenation coordinate.
    #[error(
        "{} starts at {} but {} ends at {}: the files overlap",
        .0.files.second,
        .0.second_starts,
        .0.files.first,
        .0.first_ends
    )]
    Overlap(Boundary),
    /// A gap along the concatenation coordinate, when gaps are not accepted.
    #[error("{0}")]
    Gap(Gap),
    /// A file's coordinate has no CF time units while other files' have.
    #[error(
        "{file}: variable {variable}: no CF time units (\"<unit> since <date>\") while other \
         files have them"
    )]
    NotCfTime {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
    },
    /// A time variable whose first axis is not the concatenation dimension.
    #[error("{file}: variable {variable}: time variable with {dim} not as its first axis")]
    TimeAxisNotFirst {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// The concatenation dimension.
        dim: String,
    },
    /// Reading or decoding a variable failed.
    #[error("{file}: variable {variable}")]
    Read {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// Decoding or re-encoding a variable's CF time values failed.
    #[error("{file}: variable {variable}")]
    Time {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Why.
        #[source]
        source: CfTimeError,
    },
    /// A padded edge chunk cannot be shortened.
    #[error("{file}: variable {variable}: chunk {chunk:?}")]
    Refused {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Chunk index in the file.
        chunk: Vec<u64>,
        /// Why (boxed: it would make every `PlanError` larger).
        #[source]
        source: Box<EdgeChunkError>,
    },
    /// The units to re-encode CF time into do not parse in the coordinate's calendar.
    #[error(transparent)]
    InvalidTimeUnits(CfTimeError),
    /// Time units were given but the concatenation coordinate is not CF time.
    #[error(
        "time units to re-encode into were given, but the coordinate {dim:?} has no CF time units"
    )]
    TimeUnitsWithoutCfTime {
        /// The concatenation dimension.
        dim: String,
    },
    /// The variable to order the files by is in no file.
    #[error("no file has a variable {variable:?} to order the files along {dim} by")]
    OrderByMissing {
        /// The ordering variable's path.
        variable: String,
        /// The concatenation dimension.
        dim: String,
    },
    /// The variable to order the files by is not one-dimensional along the dimension.
    #[error(
        "{file}: variable {variable} cannot order the files along {dim}: its dimensions are \
         {dims:?}, not [{dim:?}]"
    )]
    OrderByNotAlongDim {
        /// File URL.
        file: String,
        /// The ordering variable's path.
        variable: String,
        /// The concatenation dimension.
        dim: String,
        /// The variable's dimensions in that file.
        dims: Vec<String>,
    },
    /// An ordering variable was given for files stacked along a new dimension.
    #[error("files stacked along a new dimension ({dim:?}) are not ordered by a variable")]
    OrderByWithNewDim {
        /// The new dimension.
        dim: String,
    },
    /// The number of labels for a new dimension is not the number of files.
    #[error("{labels} values for the new dimension {dim:?}, but {files} files")]
    LabelCount {
        /// The new dimension.
        dim: String,
        /// Number of labels given.
        labels: usize,
        /// Number of files.
        files: usize,
    },
    /// A file already has the dimension to stack along.
    #[error("{file}: variable {variable} already has a dimension {dim:?}")]
    NewDimExists {
        /// File URL.
        file: String,
        /// A variable with the dimension.
        variable: String,
        /// The dimension.
        dim: String,
    },
    /// The new dimension has the name of a variable or group.
    #[error("the new dimension {dim:?} clashes with a variable or group")]
    NewDimClash {
        /// The new dimension.
        dim: String,
    },
    /// The combined variable would have more chunks than this platform can index.
    #[error("variable {variable}: too many chunks")]
    TooManyChunks {
        /// Variable path.
        variable: String,
    },
    /// The combined dataset is inconsistent (a bug).
    #[error(transparent)]
    Core(#[from] CoreError),
}

/// Two files a message is about: the one compared against (or the earlier one) first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilePair {
    /// The first file (URL).
    pub first: String,
    /// The second file (URL).
    pub second: String,
}

impl PlanError {
    /// The file this error is attributable to, when leaving that file out could let the
    /// others be combined: the file that differs from the first one, or the one that failed.
    pub fn file(&self) -> Option<&str> {
        match self {
            PlanError::NoConcatDim { file, .. }
            | PlanError::DimLength { file, .. }
            | PlanError::NotCfTime { file, .. }
            | PlanError::TimeAxisNotFirst { file, .. }
            | PlanError::Read { file, .. }
            | PlanError::Time { file, .. }
            | PlanError::Refused { file, .. }
            | PlanError::NewDimExists { file, .. }
            | PlanError::OrderByNotAlongDim { file, .. } => Some(file),
            PlanError::MissingVariable { odd, .. } => Some(odd),
            PlanError::Mismatch { files, .. } => Some(&files.second),
            PlanError::Overlap(b) => Some(&b.files.second),
            _ => None,
        }
    }
}

impl FilePair {
    pub(crate) fn new(first: &str, second: &str) -> Self {
        FilePair {
            first: first.to_string(),
            second: second.to_string(),
        }
    }
}

/// Where one file ends and the next starts along the concatenation coordinate; the values
/// are labels (dates for CF time).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Boundary {
    /// The earlier file, then the later one.
    pub files: FilePair,
    /// The last coordinate value of the earlier file.
    pub first_ends: String,
    /// The first coordinate value of the later file.
    pub second_starts: String,
}

/// A gap along the concatenation coordinate: a step between two files much larger than the
/// usual step.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Gap {
    /// Where the gap is.
    pub boundary: Boundary,
    /// The usual step between coordinate values.
    pub step: f64,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.boundary;
        write!(
            f,
            "gap between {} (ends {}) and {} (starts {}); the usual step is {}",
            b.files.first, b.first_ends, b.files.second, b.second_starts, self.step
        )
    }
}

/// Why the bytes or values of a variable could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The codecs could not be built or failed.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A chunk too large to hold in memory.
    #[error("chunk of shape {shape:?} is too large")]
    ChunkTooLarge {
        /// The chunk's shape.
        shape: Vec<u64>,
    },
    /// A chunk reference whose byte range overflows.
    #[error("chunk {chunk}: byte range overflows")]
    RangeOverflow {
        /// Chunk position in the manifest.
        chunk: usize,
    },
    /// Values that are not numbers where numbers are needed.
    #[error("{} values are not numbers", .data_type.name())]
    NotNumeric {
        /// The variable's data type.
        data_type: DataType,
    },
}

/// Why a padded edge chunk cannot be shortened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EdgeChunkError {
    /// The stored bytes are fewer than the valid part needs.
    #[error("stored chunk is shorter than its valid part")]
    ShortChunk,
    /// The chunk is too large to hold in memory.
    #[error("chunk of shape {shape:?} is too large")]
    TooLarge {
        /// The shape whose bytes were counted.
        shape: Vec<u64>,
    },
    /// The chunk could not be read or decoded.
    #[error("cannot decode")]
    Decode(#[source] ReadError),
    /// The valid part could not be re-encoded.
    #[error("cannot re-encode")]
    Encode(#[source] CodecError),
}
