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
//! Reads go through a [`RangeReader`]: coordinate values, static variables to compare, and
//! chunks to re-encode.

mod time;
mod values;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use vzarr_codec::ByteCodecs;
use vzarr_core::{
    ChunkGrid, ChunkManifest, ChunkRef, Codec, ConcatInfo, ConcatPiece, DataType, DimGrid, Endian,
    FillValue, Provenance, SkippedVariable, SourceRecord, VirtualArray, VirtualDataset,
};
use vzarr_source::RangeReader;

/// How files are combined.
#[derive(Clone, Debug, PartialEq)]
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

/// Options of [`plan`].
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// How files are combined.
    pub concat: Concat,
    /// Accept gaps along the concatenation coordinate (overlaps are always an error).
    pub allow_gaps: bool,
    /// Units to re-encode CF time coordinates into (default: the first file's).
    pub time_units: Option<String>,
}

/// What the planner did, for the user.
#[derive(Clone, Debug, Default, serde::Serialize)]
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
    /// Gaps found along the concatenation coordinate (only when gaps are allowed).
    pub gaps: Vec<String>,
    /// Units the CF time coordinate was re-encoded into.
    pub time_units: Option<String>,
}

/// Why files cannot be combined.
#[derive(Debug, thiserror::Error)]
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
    /// A variable is in one file but not another.
    #[error("variable {variable}: present in {present} but not in {absent}")]
    MissingVariable {
        /// Variable path.
        variable: String,
        /// File that has it.
        present: String,
        /// File that lacks it.
        absent: String,
    },
    /// Two files disagree on something that must agree.
    #[error("variable {variable}: {field} differs between {a} and {b}: {detail}")]
    Mismatch {
        /// Variable path.
        variable: String,
        /// What differs.
        field: String,
        /// One file.
        a: String,
        /// The other file.
        b: String,
        /// The two values.
        detail: String,
    },
    /// Files overlap along the concatenation coordinate.
    #[error("{0}")]
    Overlap(String),
    /// A gap along the concatenation coordinate (pass --allow-gaps to accept it).
    #[error("{0} (pass --allow-gaps to accept gaps)")]
    Gap(String),
    /// Reading or decoding a variable failed.
    #[error("{file}: variable {variable}: {reason}")]
    Read {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Why.
        reason: String,
    },
    /// A padded edge chunk cannot be shortened.
    #[error("{file}: variable {variable}: chunk {chunk:?}: {reason}")]
    Refused {
        /// File URL.
        file: String,
        /// Variable path.
        variable: String,
        /// Chunk index in the file.
        chunk: Vec<u64>,
        /// Why.
        reason: String,
    },
    /// Invalid options.
    #[error("{0}")]
    Options(String),
    /// The combined dataset is inconsistent (a bug).
    #[error(transparent)]
    Core(#[from] vzarr_core::CoreError),
}

/// Attributes that change how values decode: they must agree across files.
const DECODING_ATTRS: &[&str] = &[
    "scale_factor",
    "add_offset",
    "_FillValue",
    "missing_value",
    "valid_min",
    "valid_max",
    "valid_range",
    "units",
    "calendar",
    "_Unsigned",
    "_Encoding",
];

/// Inline chunks of re-encoded coordinates hold at most this many bytes.
const INLINE_CHUNK_BYTES: u64 = 8 << 20;

/// The file name of a URL, for labels.
pub fn file_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

struct Input {
    url: String,
    ds: VirtualDataset,
}

/// Combines per-file virtual datasets into one.
pub fn plan(
    inputs: Vec<VirtualDataset>,
    opts: &PlanOptions,
    reader: &dyn RangeReader,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    if inputs.is_empty() {
        return Err(PlanError::NoInputs);
    }
    let inputs: Vec<Input> = inputs
        .into_iter()
        .enumerate()
        .map(|(i, ds)| match ds.provenance.sources.as_slice() {
            [one] => Ok(Input {
                url: one.url.clone(),
                ds,
            }),
            _ => Err(PlanError::NotSingleFile(i)),
        })
        .collect::<Result<_, _>>()?;
    let (ds, report) = match &opts.concat {
        Concat::Existing(dim) => concat_existing(inputs, dim, opts, reader)?,
        Concat::New { dim, labels } => stack_new(inputs, dim, labels.as_deref(), reader)?,
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

fn axis_of(a: &VirtualArray, dim: &str) -> Option<usize> {
    a.dimension_names.iter().position(|d| d == dim)
}

fn leaf(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

fn join(group: &str, name: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{group}/{name}")
    }
}

/// Length of `dim` in a file, from its arrays (all must agree).
fn dim_len(input: &Input, dim: &str) -> Result<u64, PlanError> {
    let mut len = None;
    for (path, a) in &input.ds.arrays {
        if let Some(k) = axis_of(a, dim) {
            let n = a.shape()[k];
            match len {
                None => len = Some(n),
                Some(m) if m != n => {
                    return Err(PlanError::Read {
                        file: input.url.clone(),
                        variable: path.clone(),
                        reason: format!("dimension {dim} has length {n} here, {m} elsewhere"),
                    });
                }
                Some(_) => {}
            }
        }
    }
    len.ok_or_else(|| PlanError::NoConcatDim {
        file: input.url.clone(),
        dim: dim.to_string(),
    })
}

/// The coordinate variable of `dim` at the root: 1-D with `dim` as its only dimension.
fn coordinate<'a>(ds: &'a VirtualDataset, dim: &str) -> Option<&'a VirtualArray> {
    ds.arrays.get(dim).filter(|a| a.dimension_names == [dim])
}

fn attr_str<'a>(a: &'a VirtualArray, name: &str) -> Option<&'a str> {
    a.attributes.get(name).and_then(Value::as_str)
}

/// A coordinate's values in one common encoding, per file.
struct CoordValues {
    /// Per file (input order), its values in `units` (or raw when not CF time).
    values: Vec<Vec<f64>>,
    /// CF time: the calendar and the units the values are in.
    cf: Option<(String, String)>,
}

fn read_numbers(
    input: &Input,
    path: &str,
    a: &VirtualArray,
    reader: &dyn RangeReader,
) -> Result<Vec<f64>, PlanError> {
    let err = |reason: String| PlanError::Read {
        file: input.url.clone(),
        variable: path.into(),
        reason,
    };
    let raw = values::read_array(a, reader).map_err(err)?;
    values::as_f64(&raw, a.data_type, a.endian).map_err(err)
}

fn coordinate_values(
    inputs: &[Input],
    dim: &str,
    target_units: Option<&str>,
    reader: &dyn RangeReader,
) -> Result<Option<CoordValues>, PlanError> {
    let coords: Vec<Option<&VirtualArray>> =
        inputs.iter().map(|i| coordinate(&i.ds, dim)).collect();
    if coords.iter().all(Option::is_none) {
        return Ok(None);
    }
    if let Some(pos) = coords.iter().position(Option::is_none) {
        let present = coords.iter().position(Option::is_some).unwrap_or(0);
        return Err(PlanError::MissingVariable {
            variable: dim.into(),
            present: inputs[present].url.clone(),
            absent: inputs[pos].url.clone(),
        });
    }
    let coords: Vec<&VirtualArray> = coords.into_iter().flatten().collect();
    let is_time = |a: &VirtualArray| attr_str(a, "units").is_some_and(time::is_cf_time_units);
    let mut values = Vec::with_capacity(inputs.len());
    for (input, a) in inputs.iter().zip(&coords) {
        values.push(read_numbers(input, dim, a, reader)?);
    }
    if !coords.iter().any(|a| is_time(a)) {
        return Ok(Some(CoordValues { values, cf: None }));
    }
    // CF time: every file needs units; calendars must agree.
    let calendar = |a: &VirtualArray| attr_str(a, "calendar").unwrap_or("standard").to_string();
    let cal0 = calendar(coords[0]);
    for (k, a) in coords.iter().enumerate() {
        if !is_time(a) {
            return Err(PlanError::Read {
                file: inputs[k].url.clone(),
                variable: dim.into(),
                reason: "no CF time units (\"<unit> since <date>\") while other files have them"
                    .into(),
            });
        }
        if !time::same_calendar(&calendar(a), &cal0) {
            return Err(PlanError::Mismatch {
                variable: dim.into(),
                field: "calendar".into(),
                a: inputs[0].url.clone(),
                b: inputs[k].url.clone(),
                detail: format!("{cal0:?} vs {:?}", calendar(a)),
            });
        }
    }
    let target = target_units.map_or_else(
        || attr_str(coords[0], "units").unwrap_or_default().to_string(),
        str::to_string,
    );
    for (k, a) in coords.iter().enumerate() {
        let from = attr_str(a, "units").unwrap_or_default();
        values[k] =
            time::convert(&values[k], from, &target, &cal0).map_err(|reason| PlanError::Read {
                file: inputs[k].url.clone(),
                variable: dim.into(),
                reason,
            })?;
    }
    Ok(Some(CoordValues {
        values,
        cf: Some((cal0, target)),
    }))
}

/// Checks the ordered coordinate for overlaps (always an error) and gaps.
fn check_spacing(
    order: &[usize],
    inputs: &[Input],
    cv: &CoordValues,
    allow_gaps: bool,
) -> Result<Vec<String>, PlanError> {
    let label = |v: f64| -> String {
        match &cv.cf {
            Some((cal, units)) => time::describe(v, units, cal),
            None => format!("{v}"),
        }
    };
    let mut within = 0.0f64;
    for v in &cv.values {
        for w in v.windows(2) {
            within = within.max(w[1] - w[0]);
        }
    }
    let firsts: Vec<f64> = order
        .iter()
        .filter_map(|&k| cv.values[k].first().copied())
        .collect();
    let step = if within > 0.0 {
        within
    } else {
        let mut diffs: Vec<f64> = firsts.windows(2).map(|w| w[1] - w[0]).collect();
        diffs.sort_by(f64::total_cmp);
        diffs.get(diffs.len() / 2).copied().unwrap_or(0.0)
    };
    let mut gaps = Vec::new();
    let mut prev: Option<(usize, f64)> = None;
    for &k in order {
        let v = &cv.values[k];
        let (Some(&first), Some(&last)) = (v.first(), v.last()) else {
            continue;
        };
        if let Some((p, prev_last)) = prev {
            if first <= prev_last {
                return Err(PlanError::Overlap(format!(
                    "{} starts at {} but {} ends at {}: the files overlap",
                    inputs[k].url,
                    label(first),
                    inputs[p].url,
                    label(prev_last)
                )));
            }
            if step > 0.0 && first - prev_last > 1.5 * step {
                let msg = format!(
                    "gap between {} (ends {}) and {} (starts {}); the usual step is {step}",
                    inputs[p].url,
                    label(prev_last),
                    inputs[k].url,
                    label(first)
                );
                if !allow_gaps {
                    return Err(PlanError::Gap(msg));
                }
                gaps.push(msg);
            }
        }
        prev = Some((k, last));
    }
    Ok(gaps)
}

fn json_diff(a: &Value, b: &Value) -> String {
    let s = |v: &Value| {
        let t = v.to_string();
        if t.len() > 200 {
            format!("{}...", &t[..200])
        } else {
            t
        }
    };
    format!("{} vs {}", s(a), s(b))
}

/// Codecs that decode the same way (compression levels may differ).
fn codecs_compatible(a: &[Codec], b: &[Codec]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Codec::Zlib { .. }, Codec::Zlib { .. }) => true,
            (Codec::Zstd { .. }, Codec::Zstd { .. }) => true,
            // Blosc frames describe themselves; the configuration does not change decoding.
            (Codec::Blosc { .. }, Codec::Blosc { .. }) => true,
            (x, y) => x == y,
        })
}

/// Checks that `b` (from file `fb`) matches `a` (from `fa`) in everything that must agree;
/// `skip_axis` is the concatenation axis, whose length and chunking may differ.
fn check_compatible(
    path: &str,
    a: &VirtualArray,
    fa: &str,
    b: &VirtualArray,
    fb: &str,
    skip_axis: Option<usize>,
    ignore_attrs: &[&str],
) -> Result<(), PlanError> {
    let mismatch = |field: &str, detail: String| PlanError::Mismatch {
        variable: path.into(),
        field: field.into(),
        a: fa.into(),
        b: fb.into(),
        detail,
    };
    if a.data_type != b.data_type {
        return Err(mismatch(
            "data type",
            format!("{} vs {}", a.data_type.name(), b.data_type.name()),
        ));
    }
    if a.data_type.has_endianness() && a.endian != b.endian {
        return Err(mismatch(
            "byte order",
            format!("{:?} vs {:?}", a.endian, b.endian),
        ));
    }
    if a.fill_value != b.fill_value {
        return Err(mismatch(
            "fill value",
            json_diff(
                &a.fill_value.to_zarr_json(a.data_type),
                &b.fill_value.to_zarr_json(b.data_type),
            ),
        ));
    }
    if !codecs_compatible(&a.codecs, &b.codecs) {
        let l = |c: &[Codec]| c.iter().map(Codec::label).collect::<Vec<_>>().join(",");
        return Err(mismatch(
            "codecs",
            format!("[{}] vs [{}]", l(&a.codecs), l(&b.codecs)),
        ));
    }
    if a.dimension_names != b.dimension_names {
        return Err(mismatch(
            "dimensions",
            format!("{:?} vs {:?}", a.dimension_names, b.dimension_names),
        ));
    }
    for (k, (da, db)) in a.grid.dims().iter().zip(b.grid.dims()).enumerate() {
        if Some(k) == skip_axis {
            continue;
        }
        if da.extent() != db.extent() {
            return Err(mismatch(
                "shape",
                format!(
                    "{} is {} vs {}",
                    a.dimension_names[k],
                    da.extent(),
                    db.extent()
                ),
            ));
        }
        if da != db {
            return Err(mismatch(
                "chunk edges",
                format!(
                    "along {}: {:?} vs {:?}",
                    a.dimension_names[k],
                    da.edges(),
                    db.edges()
                ),
            ));
        }
    }
    for key in DECODING_ATTRS.iter().filter(|k| !ignore_attrs.contains(k)) {
        let (x, y) = (a.attributes.get(*key), b.attributes.get(*key));
        if x != y {
            return Err(mismatch(
                &format!("attribute {key}"),
                json_diff(x.unwrap_or(&Value::Null), y.unwrap_or(&Value::Null)),
            ));
        }
    }
    Ok(())
}

/// Copies a chunk reference into `out` at position `i`.
fn copy_ref(out: &mut ChunkManifest, i: usize, r: ChunkRef<'_>) -> Result<(), PlanError> {
    match r {
        ChunkRef::Missing => {}
        ChunkRef::Inline(b) => out.set_inline(i, b.to_vec())?,
        ChunkRef::Range {
            source,
            offset,
            length,
        } => {
            let sid = out.intern(source)?;
            out.set_range(i, sid, offset, length)?;
        }
    }
    Ok(())
}

/// Arrays of the same path, one per input, in output order.
fn same_path<'a>(ordered: &[&'a Input], path: &str) -> Result<Vec<&'a VirtualArray>, PlanError> {
    ordered
        .iter()
        .map(|i| {
            i.ds.arrays
                .get(path)
                .ok_or_else(|| PlanError::MissingVariable {
                    variable: path.into(),
                    present: ordered[0].url.clone(),
                    absent: i.url.clone(),
                })
        })
        .collect()
}

/// Checks that every input has the same arrays and skipped variables; returns their union.
fn check_same_variables(ordered: &[&Input]) -> Result<Vec<SkippedVariable>, PlanError> {
    let first = ordered[0];
    for other in &ordered[1..] {
        for path in other.ds.arrays.keys() {
            if !first.ds.arrays.contains_key(path) {
                return Err(PlanError::MissingVariable {
                    variable: path.clone(),
                    present: other.url.clone(),
                    absent: first.url.clone(),
                });
            }
        }
    }
    let mut skipped: BTreeMap<String, SkippedVariable> = BTreeMap::new();
    for input in ordered {
        for s in &input.ds.skipped {
            if let Some(arr) = ordered.iter().find(|i| i.ds.arrays.contains_key(&s.path)) {
                return Err(PlanError::MissingVariable {
                    variable: s.path.clone(),
                    present: arr.url.clone(),
                    absent: format!("{} (left out there: {})", input.url, s.reason),
                });
            }
            skipped.entry(s.path.clone()).or_insert_with(|| s.clone());
        }
    }
    Ok(skipped.into_values().collect())
}

/// Checks that a variable without the concatenation dimension is identical in every file:
/// the same metadata and the same values, chunk by chunk.
fn check_identical(
    path: &str,
    arrays: &[&VirtualArray],
    urls: &[&str],
    reader: &dyn RangeReader,
) -> Result<(), PlanError> {
    let a = arrays[0];
    let meta = a.zarr_metadata();
    let codecs = ByteCodecs::new(&a.codecs).map_err(|e| PlanError::Read {
        file: urls[0].into(),
        variable: path.into(),
        reason: e.to_string(),
    })?;
    for (k, b) in arrays.iter().enumerate().skip(1) {
        let other = b.zarr_metadata();
        if other != meta {
            let field = meta
                .as_object()
                .and_then(|m| m.iter().find(|(key, v)| other.get(key.as_str()) != Some(v)))
                .map_or("metadata".to_string(), |(key, _)| key.clone());
            let detail = json_diff(&meta[field.as_str()], &other[field.as_str()]);
            return Err(PlanError::Mismatch {
                variable: path.into(),
                field: format!(
                    "{field} (a variable without the concatenation dimension must be identical in every file)"
                ),
                a: urls[0].into(),
                b: urls[k].into(),
                detail,
            });
        }
        for i in 0..a.manifest.len() {
            let read = |arr: &VirtualArray, url: &str| {
                values::encoded_chunk(arr, i, reader).map_err(|reason| PlanError::Read {
                    file: url.into(),
                    variable: path.into(),
                    reason,
                })
            };
            let (x, y) = (read(a, urls[0])?, read(b, urls[k])?);
            if x == y {
                continue;
            }
            let raw = |arr: &VirtualArray, url: &str| {
                values::raw_chunk(arr, &codecs, i, reader).map_err(|reason| PlanError::Read {
                    file: url.into(),
                    variable: path.into(),
                    reason,
                })
            };
            if raw(a, urls[0])? != raw(b, urls[k])? {
                return Err(PlanError::Mismatch {
                    variable: path.into(),
                    field: "values (a variable without the concatenation dimension must be identical in every file)".into(),
                    a: urls[0].into(),
                    b: urls[k].into(),
                    detail: format!("chunk {:?} differs", a.grid.chunk_index(i as u64)),
                });
            }
        }
    }
    Ok(())
}

/// Builds a coordinate array whose values are re-encoded: one or more inline chunks along
/// axis 0, no codecs.
fn inline_array(
    template: &VirtualArray,
    shape: &[u64],
    dt: DataType,
    raw_le: Vec<u8>,
) -> Result<VirtualArray, PlanError> {
    let esize = dt.size() as u64;
    let row: u64 = shape.iter().skip(1).product::<u64>() * esize;
    let mut chunk: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    if let Some(first) = chunk.first_mut() {
        *first = (INLINE_CHUNK_BYTES / row.max(1)).clamp(1, (*first).max(1));
    }
    let grid = ChunkGrid::regular(shape, &chunk)?;
    let n = grid.n_chunks()? as usize;
    let mut manifest = ChunkManifest::new_missing(n);
    for i in 0..n {
        let idx = grid.chunk_index(i as u64);
        let start = grid.chunk_origin(&idx).first().copied().unwrap_or(0);
        let rows = grid.dims().first().map_or(1, |d| d.chunk_valid_len(idx[0]));
        let nominal = grid.chunk_shape(&idx).first().copied().unwrap_or(1);
        let mut bytes = raw_le[(start * row) as usize..((start + rows) * row) as usize].to_vec();
        // The last chunk is padded to the nominal chunk shape, as Zarr expects.
        let pad = template.fill_value_as(dt);
        for _ in rows..nominal {
            for _ in 0..row / esize {
                bytes.extend_from_slice(&pad);
            }
        }
        manifest.set_inline(i, bytes)?;
    }
    let fill_value = FillValue::from_le_bytes(dt, &template.fill_value_as(dt))?;
    let mut attributes = template.attributes.clone();
    if dt != template.data_type
        && let Some(v) = attributes.get_mut("_FillValue")
    {
        *v = vzarr_core::attrs::cf_fill_value(dt, &fill_value);
    }
    Ok(VirtualArray {
        data_type: dt,
        endian: Endian::Little,
        fill_value,
        codecs: vec![],
        dimension_names: template.dimension_names.clone(),
        attributes,
        grid,
        manifest,
    })
}

trait FillAs {
    fn fill_value_as(&self, dt: DataType) -> Vec<u8>;
}

impl FillAs for VirtualArray {
    /// The fill value as little-endian bytes of `dt` (converted through f64 when the type
    /// changes).
    fn fill_value_as(&self, dt: DataType) -> Vec<u8> {
        if dt == self.data_type {
            return self.fill_value.le_bytes().to_vec();
        }
        let v = values::as_f64(self.fill_value.le_bytes(), self.data_type, Endian::Little)
            .ok()
            .and_then(|v| v.first().copied())
            .unwrap_or(f64::NAN);
        values::from_f64(&[v], dt).unwrap_or_else(|| vec![0; dt.size()])
    }
}

/// How per-file CF time values are re-encoded.
struct TimeEncoding<'a> {
    /// The common calendar.
    calendar: &'a str,
    /// Each file's coordinate units (for bounds without units of their own).
    coord_units: Vec<&'a str>,
    /// The units to encode into.
    target: &'a str,
}

/// Concatenates per-file time coordinates (or their bounds) re-encoded into one units.
fn time_array(
    path: &str,
    arrays: &[&VirtualArray],
    inputs: &[&Input],
    dim: &str,
    enc: &TimeEncoding,
    reader: &dyn RangeReader,
) -> Result<VirtualArray, PlanError> {
    let first = arrays[0];
    let mut all = Vec::new();
    let mut extent = 0u64;
    let k = axis_of(first, dim).unwrap_or(0);
    if k != 0 {
        return Err(PlanError::Read {
            file: inputs[0].url.clone(),
            variable: path.into(),
            reason: format!("time variable with {dim} not as its first axis"),
        });
    }
    for (j, (a, input)) in arrays.iter().zip(inputs).enumerate() {
        if j > 0 {
            check_compatible(
                path,
                first,
                &inputs[0].url,
                a,
                &input.url,
                Some(k),
                &["units", "_FillValue"],
            )?;
        }
        let v = read_numbers(input, path, a, reader)?;
        let from = attr_str(a, "units").unwrap_or(enc.coord_units[j]);
        let conv = time::convert(&v, from, enc.target, enc.calendar).map_err(|reason| {
            PlanError::Read {
                file: input.url.clone(),
                variable: path.into(),
                reason,
            }
        })?;
        all.extend(conv);
        extent += a.shape()[k];
    }
    let mut shape = first.shape();
    shape[k] = extent;
    let dt = if first.data_type.is_float() || values::from_f64(&all, first.data_type).is_none() {
        if first.data_type == DataType::Float32
            && values::from_f64(&all, DataType::Float32).is_some()
        {
            DataType::Float32
        } else {
            DataType::Float64
        }
    } else {
        first.data_type
    };
    let raw = values::from_f64(&all, dt).expect("representable by construction");
    let mut out = inline_array(first, &shape, dt, raw)?;
    if out.attributes.contains_key("units") || path == dim {
        out.attributes.insert("units".into(), json!(enc.target));
    }
    Ok(out)
}

/// Concatenates one variable along axis `k`: grids, chunk references, padded edge chunks.
fn concat_array(
    path: &str,
    arrays: &[&VirtualArray],
    inputs: &[&Input],
    k: usize,
    reader: &dyn RangeReader,
    report: &mut PlanReport,
) -> Result<VirtualArray, PlanError> {
    let first = arrays[0];
    for (a, input) in arrays.iter().zip(inputs).skip(1) {
        check_compatible(path, first, &inputs[0].url, a, &input.url, Some(k), &[])?;
    }
    let last = arrays.len() - 1;
    // Per combined chunk along k: (file, local chunk index, edge, padded).
    let mut along: Vec<(usize, u64, u64, bool)> = Vec::new();
    let mut extent = 0u64;
    for (f, a) in arrays.iter().enumerate() {
        let d = &a.grid.dims()[k];
        for l in 0..d.n_chunks() {
            let nominal = d.chunk_len(l);
            let valid = d.chunk_valid_len(l);
            let padded = f != last && valid < nominal;
            along.push((f, l, if padded { valid } else { nominal }, padded));
        }
        extent += d.extent();
    }
    let axis = if along.is_empty() {
        DimGrid::fixed(first.grid.dims()[k].chunk_len(0).max(1), 0)?
    } else {
        DimGrid::from_edges(along.iter().map(|x| x.2).collect(), extent)?
    };
    let mut dims = first.grid.dims().to_vec();
    dims[k] = axis;
    let grid = ChunkGrid::new(dims);
    let n = usize::try_from(grid.n_chunks()?)
        .map_err(|_| PlanError::Options("too many chunks".into()))?;
    let mut manifest = ChunkManifest::new_missing(n);
    let esize = first.data_type.size();
    let mut codecs: Option<ByteCodecs> = None;
    for i in 0..n {
        let mut idx = grid.chunk_index(i as u64);
        let (f, l, edge, padded) = along[idx[k] as usize];
        idx[k] = l;
        let src = arrays[f];
        let lin = src
            .grid
            .linear_index(&idx)
            .expect("index inside the file's grid") as usize;
        let r = src.manifest.get(lin);
        if !padded || r == ChunkRef::Missing {
            copy_ref(&mut manifest, i, r)?;
            continue;
        }
        let nominal = src.grid.chunk_shape(&idx);
        let refused = |reason: String| PlanError::Refused {
            file: inputs[f].url.clone(),
            variable: path.into(),
            chunk: idx.clone(),
            reason,
        };
        if src.codecs.is_empty() && k == 0 {
            // Uncompressed, concatenation axis outermost: the valid rows are a prefix.
            let keep = values::chunk_bytes(&nominal[1..], esize).map_err(refused)? as u64 * edge;
            match r {
                ChunkRef::Range {
                    source,
                    offset,
                    length,
                } if keep <= length => {
                    let sid = manifest.intern(source)?;
                    manifest.set_range(i, sid, offset, keep)?;
                }
                ChunkRef::Inline(b) if keep as usize <= b.len() => {
                    manifest.set_inline(i, b[..keep as usize].to_vec())?;
                }
                _ => {
                    return Err(refused(
                        "stored chunk is shorter than its valid part".into(),
                    ));
                }
            }
            report.trimmed_chunks += 1;
            continue;
        }
        // Decode, keep the valid part along k, re-encode inline.
        if codecs.is_none() {
            codecs = Some(
                ByteCodecs::new(&first.codecs)
                    .map_err(|e| refused(format!("cannot re-encode: {e}")))?,
            );
        }
        let c = codecs.as_ref().expect("set above");
        let raw = values::raw_chunk(src, c, lin, reader)
            .map_err(|e| refused(format!("cannot decode: {e}")))?;
        let cut = values::slice_prefix(&raw, &nominal, k, edge, esize);
        let encoded = c
            .encode(&cut)
            .map_err(|e| refused(format!("cannot re-encode: {e}")))?;
        report.materialised_chunks += 1;
        report.materialised_bytes += encoded.len() as u64;
        manifest.set_inline(i, encoded)?;
    }
    if !grid.is_regular() {
        report.rectilinear.push(path.to_string());
    }
    Ok(VirtualArray {
        grid,
        manifest,
        ..first.clone()
    })
}

fn combined_provenance(ordered: &[&Input], concat: ConcatInfo) -> Provenance {
    let mut sources: Vec<SourceRecord> = ordered
        .iter()
        .flat_map(|i| i.ds.provenance.sources.iter().cloned())
        .collect();
    sources.sort_by(|a, b| a.url.cmp(&b.url));
    sources.dedup_by(|a, b| a.url == b.url);
    let allowed_prefixes = vzarr_core::prefixes_of(&sources);
    Provenance {
        sources,
        allowed_prefixes,
        concat: Some(concat),
    }
}

fn base_dataset(ordered: &[&Input], skipped: Vec<SkippedVariable>) -> VirtualDataset {
    let mut out = VirtualDataset::new();
    out.groups = ordered[0].ds.groups.clone();
    out.skipped = skipped;
    for i in ordered {
        out.unlimited_dims
            .extend(i.ds.unlimited_dims.iter().cloned());
    }
    out
}

fn concat_existing(
    inputs: Vec<Input>,
    dim: &str,
    opts: &PlanOptions,
    reader: &dyn RangeReader,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    let lens: Vec<u64> = inputs
        .iter()
        .map(|i| dim_len(i, dim))
        .collect::<Result<_, _>>()?;
    let cv = coordinate_values(&inputs, dim, None, reader)?;
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    let mut report = PlanReport::default();
    if let Some(cv) = &cv {
        // Files with no values (zero records) go first; they add nothing.
        order.sort_by(|&a, &b| {
            let key = |k: usize| cv.values[k].first().copied().unwrap_or(f64::NEG_INFINITY);
            key(a).total_cmp(&key(b))
        });
        report.gaps = check_spacing(&order, &inputs, cv, opts.allow_gaps)?;
    }
    let ordered: Vec<&Input> = order.iter().map(|&k| &inputs[k]).collect();
    let urls: Vec<&str> = ordered.iter().map(|i| i.url.as_str()).collect();
    let skipped = check_same_variables(&ordered)?;

    // CF time: the coordinate and its bounds are re-encoded into one units string.
    let cf = match &cv {
        Some(CoordValues {
            cf: Some((cal, units)),
            ..
        }) => {
            let target = opts.time_units.clone().unwrap_or_else(|| {
                // The first file in time order defines the units.
                attr_str(&ordered[0].ds.arrays[dim], "units")
                    .unwrap_or(units)
                    .to_string()
            });
            time::check_units(&target, cal).map_err(PlanError::Options)?;
            Some((cal.clone(), target))
        }
        _ => None,
    };
    if cf.is_none() && opts.time_units.is_some() {
        return Err(PlanError::Options(format!(
            "--time-units given, but the coordinate {dim:?} has no CF time units"
        )));
    }
    let bounds = cf
        .as_ref()
        .and_then(|_| attr_str(&ordered[0].ds.arrays[dim], "bounds").map(|b| join(parent(dim), b)));

    let mut out = base_dataset(&ordered, skipped);
    let mut concatenated = Vec::new();
    for path in ordered[0].ds.arrays.keys() {
        let arrays = same_path(&ordered, path)?;
        let is_time = cf.is_some() && (path == dim || Some(path) == bounds.as_ref());
        let array = if is_time {
            let (cal, target) = cf.as_ref().expect("checked");
            let enc = TimeEncoding {
                calendar: cal,
                coord_units: ordered
                    .iter()
                    .map(|i| attr_str(&i.ds.arrays[dim], "units").unwrap_or_default())
                    .collect(),
                target,
            };
            report.time_units = Some(target.clone());
            concatenated.push(path.clone());
            time_array(path, &arrays, &ordered, dim, &enc, reader)?
        } else if let Some(k) = axis_of(arrays[0], dim) {
            concatenated.push(path.clone());
            concat_array(path, &arrays, &ordered, k, reader, &mut report)?
        } else {
            check_identical(path, &arrays, &urls, reader)?;
            report.kept_once.push(path.clone());
            arrays[0].clone()
        };
        out.arrays.insert(path.clone(), array);
    }
    let mut start = 0;
    let pieces = order
        .iter()
        .map(|&k| {
            let p = ConcatPiece {
                url: inputs[k].url.clone(),
                start,
                len: lens[k],
            };
            start += lens[k];
            p
        })
        .collect();
    report.order = urls.iter().map(|u| u.to_string()).collect();
    report.concatenated = concatenated.clone();
    out.provenance = combined_provenance(
        &ordered,
        ConcatInfo {
            dim: dim.into(),
            new_dim: false,
            pieces,
            arrays: concatenated,
        },
    );
    Ok((out, report))
}

/// Whether an array is a dimension coordinate (1-D, named after its dimension).
fn is_dim_coordinate(path: &str, a: &VirtualArray) -> bool {
    a.dimension_names.len() == 1 && a.dimension_names[0] == leaf(path)
}

/// The new dimension's coordinate: integers, floats or UTF-8 text, inline.
fn label_array(dim: &str, labels: &[String]) -> Result<VirtualArray, PlanError> {
    let n = labels.len() as u64;
    let (dt, raw, attrs): (DataType, Vec<u8>, serde_json::Map<String, Value>) = if let Ok(v) =
        labels
            .iter()
            .map(|s| s.trim().parse::<i64>())
            .collect::<Result<Vec<_>, _>>()
    {
        (
            DataType::Int64,
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Default::default(),
        )
    } else if let Ok(v) = labels
        .iter()
        .map(|s| s.trim().parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
    {
        (
            DataType::Float64,
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Default::default(),
        )
    } else {
        let width = labels.iter().map(String::len).max().unwrap_or(1).max(1);
        let mut raw = Vec::with_capacity(width * labels.len());
        for l in labels {
            let mut b = l.as_bytes().to_vec();
            b.resize(width, 0);
            raw.extend(b);
        }
        let mut attrs = serde_json::Map::new();
        attrs.insert("_Encoding".into(), json!("utf-8"));
        (DataType::FixedBytes(width), raw, attrs)
    };
    let grid = ChunkGrid::regular(&[n], &[n.max(1)])?;
    let mut manifest = ChunkManifest::new_missing(grid.n_chunks()? as usize);
    if n > 0 {
        manifest.set_inline(0, raw)?;
    }
    Ok(VirtualArray {
        data_type: dt,
        endian: Endian::Little,
        fill_value: FillValue::zero(dt),
        codecs: vec![],
        dimension_names: vec![dim.into()],
        attributes: attrs,
        grid,
        manifest,
    })
}

fn stack_new(
    inputs: Vec<Input>,
    dim: &str,
    labels: Option<&[String]>,
    reader: &dyn RangeReader,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    let labels: Vec<String> = match labels {
        Some(l) if l.len() != inputs.len() => {
            return Err(PlanError::Options(format!(
                "{} values for the new dimension {dim:?}, but {} files",
                l.len(),
                inputs.len()
            )));
        }
        Some(l) => l.to_vec(),
        None => inputs
            .iter()
            .map(|i| file_name(&i.url).to_string())
            .collect(),
    };
    let ordered: Vec<&Input> = inputs.iter().collect();
    let urls: Vec<&str> = ordered.iter().map(|i| i.url.as_str()).collect();
    let skipped = check_same_variables(&ordered)?;
    for input in &ordered {
        if let Some((path, _)) = input
            .ds
            .arrays
            .iter()
            .find(|(_, a)| a.dimension_names.iter().any(|d| d == dim))
        {
            return Err(PlanError::Options(format!(
                "{}: variable {path} already has a dimension {dim:?}; use --concat-dim to concatenate along it",
                input.url
            )));
        }
    }
    // Dimension coordinates and their bounds are kept once.
    let first = &ordered[0].ds;
    let mut once: BTreeSet<String> = BTreeSet::new();
    for (path, a) in &first.arrays {
        if is_dim_coordinate(path, a) {
            once.insert(path.clone());
            if let Some(b) = attr_str(a, "bounds") {
                once.insert(join(parent(path), b));
            }
        }
    }
    let mut out = base_dataset(&ordered, skipped);
    let mut report = PlanReport::default();
    let mut stacked = Vec::new();
    let nf = ordered.len() as u64;
    for path in first.arrays.keys() {
        let arrays = same_path(&ordered, path)?;
        if once.contains(path) {
            check_identical(path, &arrays, &urls, reader)?;
            report.kept_once.push(path.clone());
            out.arrays.insert(path.clone(), arrays[0].clone());
            continue;
        }
        let a0 = arrays[0];
        for (a, input) in arrays.iter().zip(&ordered).skip(1) {
            check_compatible(path, a0, &ordered[0].url, a, &input.url, None, &[])?;
        }
        let mut dims = vec![DimGrid::fixed(1, nf)?];
        dims.extend(a0.grid.dims().iter().cloned());
        let grid = ChunkGrid::new(dims);
        let per = a0.manifest.len();
        let mut manifest = ChunkManifest::new_missing(per * ordered.len());
        for (f, a) in arrays.iter().enumerate() {
            for c in 0..per {
                copy_ref(&mut manifest, f * per + c, a.manifest.get(c))?;
            }
        }
        let mut dimension_names = vec![dim.to_string()];
        dimension_names.extend(a0.dimension_names.iter().cloned());
        out.arrays.insert(
            path.clone(),
            VirtualArray {
                grid,
                manifest,
                dimension_names,
                ..a0.clone()
            },
        );
        stacked.push(path.clone());
    }
    if out.arrays.contains_key(dim) || out.groups.contains_key(dim) {
        return Err(PlanError::Options(format!(
            "the new dimension {dim:?} clashes with a variable or group"
        )));
    }
    out.arrays
        .insert(dim.to_string(), label_array(dim, &labels)?);
    stacked.push(dim.to_string());
    report.order = urls.iter().map(|u| u.to_string()).collect();
    report.concatenated = stacked.clone();
    let pieces = ordered
        .iter()
        .enumerate()
        .map(|(k, i)| ConcatPiece {
            url: i.url.clone(),
            start: k as u64,
            len: 1,
        })
        .collect();
    out.provenance = combined_provenance(
        &ordered,
        ConcatInfo {
            dim: dim.into(),
            new_dim: true,
            pieces,
            arrays: stacked,
        },
    );
    Ok((out, report))
}
