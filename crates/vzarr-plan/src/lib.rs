//! Concatenation planner: many per-file virtual datasets in, one virtual dataset out.
//!
//! Along an existing dimension (`time` in a monthly archive) files are ordered by their
//! decoded coordinate values, checked for gaps and overlaps, and every variable with that
//! dimension is concatenated: its chunk edges along the axis are the files' edges in order,
//! which gives a `regular` grid when they come out equal and a `rectilinear` one otherwise.
//! HDF5 pads edge chunks to the full chunk shape, so a file's last chunk along the axis is
//! shortened: by referencing a shorter byte range when the chunk is uncompressed and the axis
//! is outermost, else by decoding it, keeping the valid part and re-encoding it inline. Never
//! shifted data. Variables without the dimension must be identical in every file (metadata
//! and values) and are kept once. CF time coordinates are decoded with each file's units and
//! calendar and re-encoded into one units string, inline.
//!
//! Along a new dimension (ensemble members) files are stacked along a new leading axis;
//! dimension coordinates are kept once.
//!
//! Reads go through a [`SourceStore`] of the byte layer: coordinate values, static variables to
//! compare, and chunks to re-encode. Sources are opened from the records of their scans
//! ([`SourceStore::open_recorded`]: no request to open an object, reads conditional on the
//! recorded ETag). What every file must give (coordinate values, static variables) is read
//! up front, once, as one batch of ranges per file and many files at once, reusing the bytes
//! a scan kept ([`vzarr_core::ChunkManifest::fetched`]); padded edge chunks are read and
//! re-encoded many files at once too.
//!
//! ```no_run
//! # fn scans() -> Vec<vzarr_core::VirtualDataset> { vec![] }
//! use vzarr_plan::{Concat, PlanOptions, plan};
//!
//! let opts = PlanOptions::new(Concat::Existing("time".into())).with_allow_gaps(true);
//! let (dataset, report) = plan(scans(), &opts, &vzarr_source::Stores::default())?;
//! println!("{} files, {} padded chunks re-encoded", report.order.len(), report.materialised_chunks);
//! # Ok::<(), vzarr_plan::PlanError>(())
//! ```
//!
//! # Modules
//!
//! | module    | what it does |
//! |-----------|--------------|
//! | `order`   | orders files by the decoded concatenation coordinate; gaps and overlaps |
//! | `agree`   | the file the others are checked against, chosen by agreement |
//! | `compat`  | what must agree between files; static variables identical in every file |
//! | `concat`  | concatenation along an existing dimension: edges, rectilinear grids, padded edge chunks |
//! | `stack`   | stacking along a new dimension |
//! | `extend`  | an output extended at its tail: its last file and new files planned, joined to it |
//! | `inline`  | arrays and chunks the planner encodes itself, stored inline |
//! | `time`    | CF time: recognising, converting and re-encoding time coordinates |
//! | `values`  | reading chunk and array bytes through a manifest; numbers from bytes |
//! | `prefetch` | what every file must give, read up front, once, many files at once |
//! | `input`, `output` | the per-file inputs; the frame of the combined dataset |
//! | `error`   | [`PlanError`] and the types of its causes |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod agree;
mod compact;
mod compat;
mod concat;
mod error;
mod extend;
mod inline;
mod input;
mod merge;
mod order;
mod output;
mod prefetch;
mod replace;
mod stack;
mod time;
mod values;

use std::collections::BTreeSet;

use vzarr_core::{SourceRecord, VirtualDataset};
use vzarr_source::{Recorded, SourceStore};

pub use compact::{
    ArrayAction, CompactReport, DECODE_BATCH_BYTES, Grids, LeftReason, LeftReferenced,
    READ_BATCH_BYTES, compact, survey,
};
pub use error::{Boundary, EdgeChunkError, FilePair, Gap, PlanError, ReadError};
pub use extend::{Changed, Extended, NotExtendable, extend, join_changed};
pub use replace::{replace, window_of};

/// How files are combined.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Concat {
    /// Concatenate along an existing dimension.
    Existing(String),
    /// Stack along a new leading dimension; `labels` are the coordinate values, one per file
    /// in input order (integers, floats or text), or `None` for the file names.
    New {
        /// Name of the new dimension.
        dim: String,
        /// Coordinate values, one per file.
        labels: Option<Vec<String>>,
    },
}

/// Options of [`plan`]: build them with [`PlanOptions::new`] and the `with_` methods (the
/// struct may gain fields, so other crates cannot write it as a literal).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PlanOptions {
    /// How files are combined.
    pub concat: Concat,
    /// Accept gaps along the concatenation coordinate (overlaps are always an error).
    pub allow_gaps: bool,
    /// Units to re-encode CF time coordinates into (default: the first file's).
    pub time_units: Option<String>,
    /// Concatenating along an existing dimension: order and check the files by this variable
    /// (a path; 1-D along the dimension) instead of the dimension's coordinate variable, for
    /// files whose coordinate is absent or useless (NEMO's `time_counter` of zeros beside
    /// `time_centered`, WRF's `Time` beside `XTIME`). The dimension's own coordinate, if any,
    /// is then concatenated as it is, like any variable along the dimension.
    pub order_by: Option<String>,
}

impl PlanOptions {
    /// Combines files as `concat` says; gaps are errors; CF time goes into the first file's
    /// units.
    pub fn new(concat: Concat) -> Self {
        PlanOptions {
            concat,
            allow_gaps: false,
            time_units: None,
            order_by: None,
        }
    }

    /// Accepts gaps along the concatenation coordinate (they are listed in
    /// [`PlanReport::gaps`]).
    pub fn with_allow_gaps(mut self, allow_gaps: bool) -> Self {
        self.allow_gaps = allow_gaps;
        self
    }

    /// Re-encodes CF time coordinates into `units` (`None`: the first file's units).
    pub fn with_time_units(mut self, units: Option<String>) -> Self {
        self.time_units = units;
        self
    }

    /// Orders the files by the variable at path `var` (`None`: by the dimension's coordinate
    /// variable); see [`PlanOptions::order_by`].
    pub fn with_order_by(mut self, var: Option<String>) -> Self {
        self.order_by = var;
        self
    }
}

/// What the planner did, for the user.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct PlanReport {
    /// Files in output order.
    pub order: Vec<String>,
    /// Arrays that carry the concatenation dimension.
    pub concatenated: Vec<String>,
    /// Arrays found identical in every file and kept once.
    pub kept_once: Vec<String>,
    /// Concatenated arrays whose grid is rectilinear.
    pub rectilinear: Vec<String>,
    /// Padded edge chunks referenced through a shorter byte range.
    pub trimmed_chunks: u64,
    /// Padded edge chunks decoded, cut and re-encoded inline.
    pub materialised_chunks: u64,
    /// Bytes those re-encoded chunks add inline.
    pub materialised_bytes: u64,
    /// Gaps found along the concatenation coordinate (only when gaps are allowed), each as
    /// the message of a [`Gap`].
    pub gaps: Vec<String>,
    /// Units the CF time coordinate was re-encoded into.
    pub time_units: Option<String>,
    /// The variable the files were ordered by, when not the dimension's coordinate.
    pub ordered_by: Option<String>,
    /// Variables left out of the combined dataset though every file has them, each as
    /// `path: reason` (padded edge chunks to re-encode with a codec vzarr decodes only).
    pub left_out: Vec<String>,
}

/// The file name of a URL, for labels.
pub fn file_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// Combines per-file virtual datasets into one.
pub fn plan(
    inputs: Vec<VirtualDataset>,
    opts: &PlanOptions,
    reader: &dyn SourceStore,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    if inputs.is_empty() {
        return Err(PlanError::NoInputs);
    }
    let inputs = input::Input::from_datasets(inputs)?;
    if let (Concat::New { dim, .. }, Some(_)) = (&opts.concat, &opts.order_by) {
        return Err(PlanError::OrderByWithNewDim { dim: dim.clone() });
    }
    // The file the others are checked against is chosen by agreement, not by position: a
    // file that disagrees with the others is the one named, never one of the majority.
    let axis = agree::Axis::of(&opts.concat, opts.order_by.as_deref());
    agree::check_against(&inputs, agree::reference(&inputs, &axis), &axis)?;
    // Sources are opened from the records their scans made: no request to open an object.
    let records: Vec<SourceRecord> = inputs
        .iter()
        .flat_map(|i| i.ds.provenance.sources.iter().cloned())
        .collect();
    let recorded = Recorded::new(reader, records);
    let reader: &dyn SourceStore = &recorded;
    let (ds, report) = match &opts.concat {
        Concat::Existing(dim) => concat::concat_existing(inputs, dim, opts, reader)?,
        Concat::New { dim, labels } => stack::stack_new(inputs, dim, labels.as_deref(), reader)?,
    };
    ds.validate()?;
    Ok((ds, report))
}

/// The dimension to suggest when several files are given without one: the unlimited (record)
/// dimension common to all datasets, if exactly one.
pub fn suggest_concat_dim(datasets: &[VirtualDataset]) -> Option<String> {
    let mut common: Option<BTreeSet<String>> = None;
    for ds in datasets {
        let u = ds.unlimited_dims.clone();
        common = Some(match common {
            None => u,
            Some(c) => c.intersection(&u).cloned().collect(),
        });
    }
    let common = common?;
    if common.len() == 1 {
        common.into_iter().next()
    } else {
        None
    }
}
