//! Checking a DMR++ sidecar against the granule it describes.
//!
//! A DMR++ file (OPeNDAP's XML listing of a granule's variables and of every chunk's byte
//! range, `vzarr-dmrpp`) is written once, beside its granule; when the granule is rewritten
//! and the sidecar is not, reads through the sidecar return other bytes than the variable's,
//! silently. Two checks, neither reading the granule's data:
//!
//! - [`SidecarMode::Scan`] (the default): the granule's own layout, as vzarr scans it (HDF5
//!   and NetCDF4: the superblock, object headers and chunk indexes, no chunk data), compared
//!   with the sidecar's, array by array: shape, data type, byte order, chunk grid, filters and
//!   their order, the fill value where the granule has unwritten chunks (DMR++ writes floats
//!   to six significant digits: values that agree to six digits agree), and every chunk's
//!   offset and length, each chunk that differs, is missing from the sidecar or is only in it
//!   counted. A granule vzarr does not scan (HDF4) is checked as [`SidecarMode::Ranges`].
//! - [`SidecarMode::Ranges`]: range reads only: every chunk lies inside the granule's object,
//!   no two chunks overlap in part, and a sample of chunks of every array (its first, its last
//!   and [`SidecarOptions::samples`] more) decodes through the sidecar's filters to the size its
//!   chunk shape says (a Fletcher-32 checksum, where the filters hold one, verified).
//!
//! Both modes check that every chunk lies inside the granule. Chunks in files beside it (a
//! chunk's own `href`: Hyrax's `_mvs.h5` of values it computed) are checked by range reads in
//! either mode, their arrays not compared with the granule's.

use std::collections::BTreeMap;
use std::fmt;

use vzarr_core::{ChunkRef, Codec, SkippedVariable, VirtualArray, VirtualDataset};
use vzarr_scan::inputs::SourceRef;
use vzarr_source::ByteSource;

use crate::VerifyError;

/// Largest decoded chunk a range check decodes (larger ones are counted, not decoded).
const MAX_DECODED_CHUNK: u64 = 1 << 30;

/// How a sidecar is checked against its granule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SidecarMode {
    /// The sidecar's layout compared with vzarr's scan of the granule (its metadata only).
    Scan,
    /// Range reads only: bounds, overlaps, and sampled chunks decoded.
    Ranges,
}

/// What to check.
#[derive(Clone, Debug)]
pub struct SidecarOptions {
    /// The check.
    pub mode: SidecarMode,
    /// With [`SidecarMode::Ranges`]: chunks decoded per array besides its first and last.
    pub samples: u64,
    /// Seed of the sample (the same seed picks the same chunks).
    pub seed: u64,
    /// Where the granule is, when not where the sidecar says (`vzarr_dmrpp::data_url`: beside
    /// it, or its `dmrpp:href` on the same host): a URL or local path, `{name}` standing for
    /// the sidecar's file name without `.dmrpp` (`vzarr_dmrpp::granule_from_template`).
    pub data_url: Option<String>,
}

impl Default for SidecarOptions {
    fn default() -> Self {
        SidecarOptions {
            mode: SidecarMode::Scan,
            samples: 2,
            seed: 0,
            data_url: None,
        }
    }
}

/// What is wrong with an array of a sidecar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// Its shape is not the granule's.
    Shape,
    /// Its data type is not the granule's.
    DataType,
    /// Its byte order is not the granule's.
    ByteOrder,
    /// Its chunk shape is not the granule's.
    ChunkGrid,
    /// Its filters, or their order, are not the granule's.
    Filters,
    /// Its fill value is not the granule's, and the granule has unwritten chunks.
    FillValue,
    /// Chunks whose byte range is not the granule's.
    StaleChunks,
    /// Chunks the granule stores that the sidecar does not list (they read as fill values).
    MissingChunks,
    /// Chunks the sidecar lists that the granule does not store.
    ExtraChunks,
    /// Chunks that end past the end of the granule (or of the file beside it they are in).
    OutsideObject,
    /// Chunks in a file beside the granule (a chunk's own `href`) that cannot be opened.
    MissingFile,
    /// Chunks that overlap other chunks in part.
    Overlap,
    /// Sampled chunks that do not decode to their chunk's size through the sidecar's filters.
    Undecodable,
    /// Values the sidecar holds itself (variable-length strings) that are not the granule's.
    Values,
}

impl FindingKind {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Shape => "shape",
            FindingKind::DataType => "data type",
            FindingKind::ByteOrder => "byte order",
            FindingKind::ChunkGrid => "chunk shape",
            FindingKind::Filters => "filters",
            FindingKind::FillValue => "fill value",
            FindingKind::StaleChunks => "stale chunks",
            FindingKind::MissingChunks => "missing chunks",
            FindingKind::ExtraChunks => "extra chunks",
            FindingKind::OutsideObject => "chunks outside the granule",
            FindingKind::MissingFile => "chunks in a file that cannot be read",
            FindingKind::Overlap => "overlapping chunks",
            FindingKind::Undecodable => "undecodable chunks",
            FindingKind::Values => "values",
        }
    }
}

/// One thing wrong with one array of a sidecar.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SidecarFinding {
    /// The array's path.
    pub array: String,
    /// What is wrong.
    pub kind: FindingKind,
    /// The sidecar's value against the granule's, or the chunks concerned.
    pub detail: String,
}

impl fmt::Display for SidecarFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.array, self.kind.name(), self.detail)
    }
}

/// The result of checking one sidecar.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct SidecarReport {
    /// The sidecar's URL.
    pub sidecar: String,
    /// Its granule's URL.
    pub granule: String,
    /// The check made (a granule vzarr does not scan is checked by ranges).
    pub mode: SidecarMode,
    /// Why the check is not the one asked for, if it is not.
    pub fallback: Option<String>,
    /// Arrays checked.
    pub arrays: usize,
    /// Chunks whose byte ranges were checked.
    pub chunks: u64,
    /// Chunks read and decoded.
    pub decoded: u64,
    /// Variables of the sidecar not checked (vzarr does not build them), with the reason.
    pub not_checked: Vec<SkippedVariable>,
    /// Everything wrong, by array.
    pub findings: Vec<SidecarFinding>,
}

impl SidecarReport {
    /// Whether the sidecar describes its granule as far as checked.
    pub fn matches(&self) -> bool {
        self.findings.is_empty()
    }

    /// One line: the verdict and what was checked (the sidecar not named).
    pub fn summary(&self) -> String {
        let how = match self.mode {
            SidecarMode::Scan => "compared with the granule's layout",
            SidecarMode::Ranges => "checked by range reads",
        };
        let decoded = if self.decoded > 0 {
            format!(", {} decoded", self.decoded)
        } else {
            String::new()
        };
        let verdict = if self.matches() {
            "matches its granule".to_string()
        } else {
            let arrays: std::collections::BTreeSet<&str> =
                self.findings.iter().map(|f| f.array.as_str()).collect();
            format!("DOES NOT MATCH its granule ({} arrays)", arrays.len())
        };
        format!(
            "{verdict}: {} arrays, {} chunks {how}{decoded}",
            self.arrays, self.chunks
        )
    }
}

/// Checks the DMR++ sidecar at `sidecar` (a URL or a local path) against its granule
/// ([`SidecarOptions::data_url`], else the file beside it or the one its `dmrpp:href` names on
/// the same host: `vzarr_dmrpp::data_url`).
pub fn check_sidecar(sidecar: &str, opts: &SidecarOptions) -> Result<SidecarReport, VerifyError> {
    let src = vzarr_source::open_source(sidecar)?;
    let (mut ours, data_url, masked) =
        vzarr_scan::scan_dmrpp(src.as_ref(), opts.data_url.as_deref())?;
    let granule_ref = SourceRef::parse(&data_url)?;
    if !masked.is_empty() {
        // Chunks stored with some filters skipped, read and re-encoded as a build keeps them
        // (and as vzarr's scan of the granule does): compared, and decoded, as inline chunks.
        let open = std::cell::RefCell::new(BTreeMap::new());
        vzarr_dmrpp::masks::apply(&mut ours, &masked, |url, range| {
            let mut open = open.borrow_mut();
            if !open.contains_key(url) {
                open.insert(url.to_string(), vzarr_source::open_source(url)?);
            }
            open[url].read(range).map(|b| b.to_vec())
        });
    }
    let mut report = SidecarReport {
        sidecar: src.url().to_string(),
        granule: data_url,
        mode: opts.mode,
        fallback: None,
        arrays: ours.arrays.len(),
        chunks: 0,
        decoded: 0,
        not_checked: ours
            .skipped
            .iter()
            .filter(|s| !s.path.contains('@'))
            .cloned()
            .collect(),
        findings: Vec::new(),
    };
    // The granule's size from its scan when it is compared (one open of it), else from
    // opening it for the range reads.
    let mut scanned_size = None;
    let granule_url = granule_ref.url();
    if opts.mode == SidecarMode::Scan {
        match vzarr_scan::scan_source(&granule_ref, &vzarr_scan::ScanOptions::default()) {
            // A granule that is itself a sidecar is not compared as one.
            Ok(theirs)
                if theirs.provenance.sources.first().map(|r| &r.url) == Some(&report.granule) =>
            {
                scanned_size = theirs.provenance.sources.first().map(|r| r.size);
                compare_layouts(&ours, &theirs, &mut report);
            }
            Ok(_) | Err(vzarr_scan::ScanError::Format(_)) => {
                report.mode = SidecarMode::Ranges;
                report.fallback = Some(
                    "vzarr does not scan the granule's format (HDF4): checked by range reads"
                        .into(),
                );
            }
            Err(e) => return Err(e.into()),
        }
    }
    match scanned_size {
        Some(size) => check_ranges(&ours, &granule_url, size, None, opts, &mut report),
        None => {
            let granule = vzarr_source::open_source(&granule_url)?;
            let size = granule.size();
            let from = Some(granule.as_ref());
            check_ranges(&ours, &granule_url, size, from, opts, &mut report);
        }
    }
    // Chunks in files beside the granule (Hyrax's `_mvs.h5` of values it computed, which the
    // granule does not hold as such) are checked by range reads, in either mode.
    let others = ours.referenced_sources();
    for file in others.into_iter().filter(|u| *u != granule_url) {
        match vzarr_source::open_source(file) {
            Ok(src) => {
                let from = Some(src.as_ref());
                check_ranges(&ours, file, src.size(), from, opts, &mut report);
            }
            Err(e) => {
                for (path, a) in &ours.arrays {
                    if a.manifest.sources().iter().any(|s| **s == *file) {
                        report.findings.push(SidecarFinding {
                            array: path.clone(),
                            kind: FindingKind::MissingFile,
                            detail: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    report
        .findings
        .sort_by(|a, b| (&a.array, a.kind).cmp(&(&b.array, b.kind)));
    Ok(report)
}

/// [`check_sidecar`] of each of `sidecars`, `jobs` at a time (0: as many as a batch of scans
/// of them would run: every core, and at least 32 for sidecars on object storage, whose checks
/// mostly wait on requests); the results in the order of `sidecars`.
pub fn check_sidecars(
    sidecars: &[SourceRef],
    opts: &SidecarOptions,
    jobs: usize,
) -> Vec<Result<SidecarReport, VerifyError>> {
    let threads = vzarr_scan::batch::scan_threads(sidecars, jobs);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<SidecarReport, VerifyError>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(sidecar) = sidecars.get(i) else {
                            return mine;
                        };
                        mine.push((i, check_sidecar(&sidecar.url(), opts)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The granule's array the sidecar's array `a` at `path` describes: the same path; netCDF-4's
/// hidden name of a variable named as a dimension it does not hold (DMR++ names it as netCDF
/// does); or the path its `fullnamepath` attribute gives (Hyrax's CF names of HDF-EOS and
/// grouped files: `g1_x` for `/g1/x`).
fn granule_array<'a>(
    theirs: &'a VirtualDataset,
    path: &str,
    a: &VirtualArray,
) -> Option<&'a VirtualArray> {
    let hidden = match path.rsplit_once('/') {
        Some((g, n)) => format!("{g}/_nc4_non_coord_{n}"),
        None => format!("_nc4_non_coord_{path}"),
    };
    let full = crate::verify::hyrax_path(a);
    theirs
        .arrays
        .get(path)
        .or_else(|| theirs.arrays.get(&hidden))
        .or_else(|| full.and_then(|f| theirs.arrays.get(f)))
}

/// Filters as they decode, deflate levels left out (they do not change what is read).
fn filter_names(codecs: &[Codec]) -> Vec<String> {
    codecs
        .iter()
        .map(|c| match c {
            Codec::Zlib { .. } => "zlib".to_string(),
            other => other.label(),
        })
        .collect()
}

/// Whether two fill values agree, floats to the six significant digits DMR++ writes.
fn same_fill(a: &VirtualArray, b: &VirtualArray) -> bool {
    if a.fill_value == b.fill_value {
        return true;
    }
    match (
        a.fill_value.as_f64(a.data_type.clone()),
        b.fill_value.as_f64(b.data_type.clone()),
    ) {
        (Some(x), Some(y)) if a.data_type.is_float() => {
            (x.is_nan() && y.is_nan()) || format!("{x:.5e}") == format!("{y:.5e}")
        }
        _ => false,
    }
}

/// Compares the sidecar's arrays (`ours`) with the granule's (`theirs`).
fn compare_layouts(ours: &VirtualDataset, theirs: &VirtualDataset, report: &mut SidecarReport) {
    for (path, a) in &ours.arrays {
        // An array with chunks in other files is checked by range reads in them.
        if a.manifest.sources().iter().any(|s| **s != *report.granule) {
            continue;
        }
        let Some(b) = granule_array(theirs, path, a) else {
            // A variable the granule's scan does not build (a type vzarr refuses in HDF5, say)
            // is not compared; nor one without chunks (Hyrax gives netCDF's dimensions without
            // values as variables of fill values). One absent from the granule is, as extra
            // chunks.
            let n = a.manifest.stored() as u64;
            let held = n > 0
                && a.manifest
                    .iter_stored()
                    .all(|(_, r)| matches!(r, ChunkRef::Inline(_)));
            if n == 0 {
                report.not_checked.push(SkippedVariable {
                    path: path.clone(),
                    reason: "no chunks in the sidecar, no such variable in the granule".into(),
                });
            } else if held {
                // dmrpp:missingdata: values Hyrax computed (coordinates of HDF-EOS grids,
                // variable-length data flattened), which the granule does not hold as such.
                report.not_checked.push(SkippedVariable {
                    path: path.clone(),
                    reason: "values the sidecar holds, not in the granule as such".into(),
                });
            } else if !theirs.skipped.iter().any(|s| &s.path == path) {
                report.findings.push(SidecarFinding {
                    array: path.clone(),
                    kind: FindingKind::ExtraChunks,
                    detail: format!("the granule has no such variable ({n} chunks listed)"),
                });
            }
            continue;
        };
        let mut found = |kind, detail| {
            report.findings.push(SidecarFinding {
                array: path.clone(),
                kind,
                detail,
            })
        };
        if a.shape() != b.shape() {
            found(
                FindingKind::Shape,
                format!(
                    "{:?} in the sidecar, {:?} in the granule",
                    a.shape(),
                    b.shape()
                ),
            );
            continue;
        }
        if let Some(theirs) = fixed_scalar_text(a, b) {
            // A scalar string the sidecar holds (`dmrpp:compact`): DMR++ does not say whether
            // the granule's is of fixed or variable length, so its value is what is compared.
            match (inline_strings(a), theirs) {
                (Some(ours), Some(t)) if ours.first() == Some(&t) => {}
                (Some(ours), Some(t)) => found(
                    FindingKind::Values,
                    format!("{:?} in the sidecar, {t:?} in the granule", ours.first()),
                ),
                _ => report.not_checked.push(SkippedVariable {
                    path: path.clone(),
                    reason: "a scalar string the sidecar holds, the granule's not held in its \
                             metadata: not read"
                        .into(),
                }),
            }
            continue;
        }
        if a.data_type != b.data_type {
            found(
                FindingKind::DataType,
                format!(
                    "{:?} in the sidecar, {:?} in the granule",
                    a.data_type, b.data_type
                ),
            );
        }
        if a.data_type.has_endianness() && a.endian != b.endian {
            found(
                FindingKind::ByteOrder,
                format!(
                    "{:?} in the sidecar, {:?} in the granule",
                    a.endian, b.endian
                ),
            );
        }
        // Variable-length strings are inline on both sides, chunked as each writer chose:
        // compared by value.
        if a.data_type == vzarr_core::DataType::String {
            match (inline_strings(a), inline_strings(b)) {
                (Some(x), Some(y)) if x == y => {}
                (x, y) => {
                    let first = |v: Option<Vec<String>>| {
                        v.map_or("none read".to_string(), |v| format!("{:?}", v.first()))
                    };
                    found(
                        FindingKind::Values,
                        format!(
                            "first {} in the sidecar, {} in the granule",
                            first(x),
                            first(y)
                        ),
                    );
                }
            }
            continue;
        }
        if a.grid != b.grid {
            let shape = |v: &VirtualArray| v.grid.chunk_shape(&vec![0; v.grid.ndim()]);
            found(
                FindingKind::ChunkGrid,
                format!(
                    "{:?} in the sidecar, {:?} in the granule",
                    shape(a),
                    shape(b)
                ),
            );
            continue;
        }
        let (fa, fb) = (filter_names(&a.codecs), filter_names(&b.codecs));
        if fa != fb {
            found(
                FindingKind::Filters,
                format!("{fa:?} in the sidecar, {fb:?} in the granule"),
            );
        }
        let unwritten = b.manifest.stored() < b.manifest.len();
        if unwritten && !same_fill(a, b) {
            found(
                FindingKind::FillValue,
                format!(
                    "{} in the sidecar, {} in the granule",
                    a.fill_value.to_zarr_json(a.data_type.clone()),
                    b.fill_value.to_zarr_json(b.data_type.clone())
                ),
            );
        }
        let mut counts: BTreeMap<FindingKind, Tally> = BTreeMap::new();
        for i in 0..b.manifest.len() {
            let (x, y) = (a.manifest.get(i), b.manifest.get(i));
            let kind = match (&x, &y) {
                (ChunkRef::Missing, ChunkRef::Missing) => continue,
                (ChunkRef::Missing, _) => FindingKind::MissingChunks,
                (_, ChunkRef::Missing) => FindingKind::ExtraChunks,
                (
                    ChunkRef::Range { offset, length, .. },
                    ChunkRef::Range {
                        offset: o2,
                        length: l2,
                        ..
                    },
                ) if offset == o2 && length == l2 => continue,
                (ChunkRef::Inline(p), ChunkRef::Inline(q)) if p == q => continue,
                _ => FindingKind::StaleChunks,
            };
            counts.entry(kind).or_default().add(|| {
                let index = a.grid.chunk_index(i as u64);
                format!(
                    "first {index:?}: {} in the sidecar, {} in the granule",
                    describe(&x),
                    describe(&y)
                )
            });
        }
        for (kind, t) in counts {
            found(
                kind,
                format!("{} of {} chunks, {}", t.n, b.manifest.len(), t.first),
            );
        }
    }
}

/// For a scalar variable-length string the sidecar holds (`a`) and the granule's scalar
/// fixed-length one (`b`): `Some` of the granule's text (up to a NUL) where its scan holds it
/// (compact storage), `Some(None)` where it does not; `None` for any other pair.
fn fixed_scalar_text(a: &VirtualArray, b: &VirtualArray) -> Option<Option<String>> {
    let scalar = a.shape().is_empty() && b.shape().is_empty();
    if !scalar
        || a.data_type != vzarr_core::DataType::String
        || !matches!(b.data_type, vzarr_core::DataType::FixedBytes(_))
    {
        return None;
    }
    Some(match b.manifest.get(0) {
        ChunkRef::Inline(bytes) => {
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
        }
        _ => None,
    })
}

/// The values of a variable-length string array held inline (in C order; unstored chunks
/// empty), or `None` where some are not inline or do not decode.
fn inline_strings(a: &VirtualArray) -> Option<Vec<String>> {
    let shape = a.shape();
    let n = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))?;
    if n as u64 > MAX_STRINGS {
        return None;
    }
    let mut out = vec![String::new(); n];
    let strides: Vec<usize> = (0..shape.len())
        .map(|k| shape[k + 1..].iter().map(|&d| d as usize).product())
        .collect();
    for i in 0..a.manifest.len() {
        let bytes = match a.manifest.get(i) {
            ChunkRef::Missing => continue,
            ChunkRef::Inline(b) => b,
            ChunkRef::Range { .. } => return None,
        };
        let index = a.grid.chunk_index(i as u64);
        let nominal = a.grid.chunk_shape(&index);
        let valid = a.grid.chunk_valid_shape(&index);
        let origin = a.grid.chunk_origin(&index);
        let count = nominal.iter().product::<u64>() as usize;
        let values = vzarr_codec::vlen_utf8::decode(bytes, count).ok()?;
        for (k, v) in values.into_iter().enumerate() {
            // The element's position in the chunk, kept where it lies inside the array.
            let (mut rest, mut at, mut inside) = (k, 0usize, true);
            for d in (0..nominal.len()).rev() {
                let pos = rest % nominal[d] as usize;
                rest /= nominal[d] as usize;
                inside &= (pos as u64) < valid[d];
                at += (origin[d] as usize + pos) * strides[d];
            }
            if inside {
                out[at] = v;
            }
        }
    }
    Some(out)
}

/// Most strings of one array compared by value.
const MAX_STRINGS: u64 = 1 << 24;

/// How many chunks a finding concerns, and the first of them described.
#[derive(Default)]
struct Tally {
    n: u64,
    first: String,
}

impl Tally {
    /// Counts one more chunk; `describe` says what is wrong with it when it is the first.
    fn add(&mut self, describe: impl FnOnce() -> String) {
        if self.n == 0 {
            self.first = describe();
        }
        self.n += 1;
    }
}

/// A chunk reference for a report.
fn describe(r: &ChunkRef<'_>) -> String {
    match r {
        ChunkRef::Missing => "none".into(),
        ChunkRef::Inline(b) => format!("{} bytes inline", b.len()),
        ChunkRef::Range { offset, length, .. } => format!("bytes {offset}+{length}"),
    }
}

/// Bounds (against the `size` of `file`: the granule, or a file beside it) and overlaps of
/// every chunk in `file`; with `decode_from` (that file), sampled chunks decoded.
fn check_ranges(
    ours: &VirtualDataset,
    file: &str,
    size: u64,
    decode_from: Option<&dyn ByteSource>,
    opts: &SidecarOptions,
    report: &mut SidecarReport,
) {
    let granule = file == report.granule;
    // (offset, end, array) of every range, to find overlaps.
    let mut ranges: Vec<(u64, u64, &str)> = Vec::new();
    for (path, a) in &ours.arrays {
        let mut outside = Tally::default();
        let mut any = false;
        for (_, r) in a.manifest.iter_stored() {
            // Chunks the sidecar holds are counted with the granule's.
            let here = match r {
                ChunkRef::Range { source, .. } => source == file,
                _ => granule,
            };
            if !here {
                continue;
            }
            any = true;
            report.chunks += 1;
            if let ChunkRef::Range { offset, length, .. } = r {
                let end = offset.saturating_add(length);
                if end > size {
                    outside.add(|| format!("first bytes {offset}+{length}"));
                }
                ranges.push((offset, end, path.as_str()));
            }
        }
        if outside.n > 0 {
            report.findings.push(SidecarFinding {
                array: path.clone(),
                kind: FindingKind::OutsideObject,
                detail: format!(
                    "{} chunks, {}, past the {size} bytes of {}",
                    outside.n,
                    outside.first,
                    if granule { "the granule" } else { file }
                ),
            });
        }
        if let Some(from) = decode_from.filter(|_| outside.n == 0 && any) {
            decode_sample(path, a, file, granule, from, opts, report);
        }
    }
    ranges.sort_unstable();
    let mut overlapping: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut reach: Option<(u64, u64, &str)> = None; // the range reaching furthest so far
    for &(start, end, path) in &ranges {
        if let Some((s0, e0, p0)) = reach {
            // Identical ranges are one stored chunk named twice (a hard link), not an overlap.
            if start < e0 && (start, end) != (s0, e0) && start < end {
                overlapping
                    .entry(path)
                    .or_default()
                    .add(|| format!("first bytes {start}..{end} overlap {p0}'s {s0}..{e0}"));
            }
        }
        if reach.is_none_or(|(_, e0, _)| end > e0) {
            reach = Some((start, end, path));
        }
    }
    for (path, t) in overlapping {
        report.findings.push(SidecarFinding {
            array: path.to_string(),
            kind: FindingKind::Overlap,
            detail: format!("{} chunks, {}", t.n, t.first),
        });
    }
}

/// Decodes the first, the last and `opts.samples` random stored chunks of `a` in `file` (read
/// from `from`; those the sidecar holds with the `granule`'s).
fn decode_sample(
    path: &str,
    a: &VirtualArray,
    file: &str,
    granule: bool,
    from: &dyn ByteSource,
    opts: &SidecarOptions,
    report: &mut SidecarReport,
) {
    // The chunks in `file` (and those the sidecar holds, with the granule's).
    let stored: Vec<usize> = a
        .manifest
        .iter_stored()
        .filter(|(_, r)| match r {
            ChunkRef::Range { source, .. } => *source == file,
            _ => granule,
        })
        .map(|(i, _)| i)
        .collect();
    if stored.is_empty() || a.data_type.size() == 0 {
        return;
    }
    let mut picks: Vec<usize> =
        crate::sample::sample_indices(stored.len() as u64, opts.samples, opts.seed)
            .into_iter()
            .map(|k| stored[k as usize])
            .collect();
    picks.extend([stored[0], stored[stored.len() - 1]]);
    picks.sort_unstable();
    picks.dedup();
    let codecs = match vzarr_codec::ByteCodecs::new(&a.codecs) {
        Ok(c) => c,
        Err(e) => {
            report.findings.push(SidecarFinding {
                array: path.to_string(),
                kind: FindingKind::Undecodable,
                detail: format!("its filters: {e}"),
            });
            return;
        }
    };
    let mut bad = Tally::default();
    for i in picks {
        let index = a.grid.chunk_index(i as u64);
        let raw = a
            .grid
            .chunk_shape(&index)
            .iter()
            .try_fold(a.data_type.size() as u64, |n, &d| n.checked_mul(d));
        let Some(raw) = raw.filter(|&n| n <= MAX_DECODED_CHUNK) else {
            continue;
        };
        let encoded = match a.manifest.get(i) {
            ChunkRef::Inline(b) => Ok(vzarr_source::Bytes::copy_from_slice(b)),
            ChunkRef::Range { offset, length, .. } if length <= MAX_DECODED_CHUNK => {
                from.read(offset..offset + length)
            }
            _ => continue,
        };
        report.decoded += 1;
        let result = match encoded {
            Ok(bytes) => codecs
                .decode(&bytes, raw as usize)
                .map(drop)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = result {
            bad.add(|| format!("first {index:?}: {e}"));
        }
    }
    if bad.n > 0 {
        report.findings.push(SidecarFinding {
            array: path.to_string(),
            kind: FindingKind::Undecodable,
            detail: format!("{} of the chunks decoded, {}", bad.n, bad.first),
        });
    }
}
