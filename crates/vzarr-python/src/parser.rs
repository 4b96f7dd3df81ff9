//! The VirtualiZarr parser's scan (`vzarr.virtualizarr.Parser`): one file (or DMR++ sidecar)
//! scanned into flat manifest buffers that the Python side turns into VirtualiZarr's
//! `ManifestArray`s, refusing what VirtualiZarr's `HDFParser` refuses.

use std::sync::Arc;

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_build::{BuildError, Settings};
use vzarr_source::ObjectPath;

use crate::{Store, scan_error, scan_options, to_py, with_small_chunks};

/// VirtualiZarr's refusal of a dataset of references: `NotImplementedError` for the first
/// dataset the scan left out because it holds object references not asked for (its message
/// naming the option that reads them) or region or attribute references (which nothing
/// reads), as VirtualiZarr 2.8's HDFParser raises it.
fn refused_references(url: &str, ds: &vzarr_core::VirtualDataset) -> PyResult<()> {
    use vzarr_scan::hdf5_refusal as r;
    for s in ds.skipped.iter().filter(|s| !s.path.contains('@')) {
        if s.reason.contains(r::OBJECT_REFERENCES_NOT_READ) {
            return Err(PyNotImplementedError::new_err(format!(
                "{url}: {}: {}. To store object references as the paths of their targets, \
                 following the draft Links and Object References convention, pass \
                 links_and_references=True.",
                s.path, s.reason
            )));
        }
        if s.reason.contains(r::REGION_REFERENCES) || s.reason.contains(r::ATTRIBUTE_REFERENCES) {
            return Err(PyNotImplementedError::new_err(format!(
                "{url}: {}: {}",
                s.path, s.reason
            )));
        }
    }
    Ok(())
}

/// One array of a scanned file for VirtualiZarr: its path, Zarr v3 metadata (JSON text), chunk
/// grid shape, per chunk (C order) the source id as little-endian u32 (`u32::MAX`: missing,
/// `u32::MAX - 1`: inline), offset and length as little-endian u64, the source URLs, and the
/// inline chunks as (grid index, bytes).
type ArrayManifest = (
    String,
    String,
    Vec<u64>,
    Py<PyBytes>,
    Py<PyBytes>,
    Py<PyBytes>,
    Vec<String>,
    Vec<(Vec<u64>, Py<PyBytes>)>,
);

/// Most chunks of one array handed to VirtualiZarr, whose manifests are dense numpy arrays
/// (20 bytes a chunk here, more there).
const MAX_PARSER_CHUNKS: u64 = 1 << 27;

/// Arrays of `ds` whose chunk grid is not regular (HDF4's linked blocks of unequal rows, read
/// from DMR++; contiguous data split in rows that do not divide evenly), which VirtualiZarr's
/// manifests cannot hold: kept inline (regular then) where the policy's limits allow, else
/// left out with a warning naming them.
fn regular_only(
    ds: &mut vzarr_core::VirtualDataset,
    policy: &vzarr_core::SmallChunkPolicy,
    reader: &dyn vzarr_source::SourceStore,
    warnings: &mut Vec<String>,
) -> Result<(), BuildError> {
    let irregular: Vec<String> = ds
        .arrays
        .iter()
        .filter(|(_, a)| !a.grid.is_regular())
        .map(|(p, _)| p.clone())
        .collect();
    if irregular.is_empty() {
        return Ok(());
    }
    let mut sub = vzarr_core::VirtualDataset::new();
    sub.provenance = ds.provenance.clone();
    for p in &irregular {
        sub.arrays.insert(p.clone(), ds.arrays[p].clone());
    }
    let mut inline = *policy;
    inline.mode = vzarr_core::SmallChunks::Inline;
    vzarr_plan::compact(&mut sub, &inline, vzarr_plan::Grids::Regular, reader)
        .map_err(BuildError::from)?;
    for (p, a) in sub.arrays {
        if a.grid.is_regular() {
            // In its place: the order of the arrays is the file's.
            if let Some(slot) = ds.arrays.get_mut(&p) {
                *slot = a;
            }
        } else {
            ds.arrays.shift_remove(&p);
            warnings.push(format!(
                "{p}: left out: chunks of unequal rows (a rectilinear chunk grid), which \
                 VirtualiZarr's manifests cannot hold, and too large to keep inline \
                 (vzarr.build writes it)"
            ));
        }
    }
    Ok(())
}

/// Scans one file (`url`: a path or URL) and returns its groups (path -> attributes, as JSON
/// text) and its arrays' manifests as flat buffers (see `ArrayManifest`), for the
/// VirtualiZarr parser `vzarr.virtualizarr.Parser`.
#[pyfunction]
#[pyo3(signature = (
    url, *, strict, file_timeout, split_contiguous, max_string_bytes, small_chunks=None,
    chunk_target=None, inline_max=None, inline_total=None, store=None, path=None,
    links_and_references=false, data_url=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_manifests(
    py: Python<'_>,
    url: String,
    strict: bool,
    file_timeout: u64,
    split_contiguous: Option<String>,
    max_string_bytes: Option<String>,
    small_chunks: Option<String>,
    chunk_target: Option<String>,
    inline_max: Option<String>,
    inline_total: Option<String>,
    store: Option<&Store>,
    path: Option<String>,
    links_and_references: bool,
    data_url: Option<String>,
) -> PyResult<(String, Vec<ArrayManifest>, Vec<String>)> {
    // As VirtualiZarr's HDFParser: references and links recorded only when asked for.
    let scan = scan_options(
        split_contiguous,
        max_string_bytes,
        links_and_references,
        links_and_references,
        data_url,
    )?;
    let small = [small_chunks, chunk_target, inline_max, inline_total];
    let (_, policy) = with_small_chunks(Settings::new(), small)?;
    let policy = policy.unwrap_or_default();
    let time_limit = (file_timeout > 0).then(|| std::time::Duration::from_secs(file_timeout));
    let through = match (store, path) {
        (Some(s), Some(p)) => Some((
            s.0.clone(),
            ObjectPath::parse(&p)
                .map_err(|e| PyValueError::new_err(format!("{url}: path {p:?}: {e}")))?,
        )),
        (None, None) => None,
        _ => return Err(PyValueError::new_err("store and path go together")),
    };
    // One file, on a thread of its own only for the time limit: no batch, no planner (a
    // parser is called once per file, so what a build spends around a scan counts here).
    let built = crate::guard::detach(
        py,
        "scan",
        || -> Result<(vzarr_core::VirtualDataset, Vec<String>), BuildError> {
            let source = vzarr_scan::inputs::SourceRef::parse(&url)?;
            let s = source.clone();
            let given = through.clone();
            let mut ds = vzarr_scan::batch::guard(&url, time_limit, move || match given {
                Some((store, path)) => vzarr_scan::scan_in_store(&s, store, path, &scan),
                None => vzarr_scan::scan_source(&s, &scan),
            })?;
            let mut warnings = vzarr_build::left_out(&source, &ds, strict)?;
            // Small chunks merged (regular grids only: VirtualiZarr's manifests are regular)
            // and inlined, read through the store the file was scanned through.
            let records = ds.provenance.sources.clone();
            // The records are the file's, or the granule's beside a DMR++ sidecar and those of
            // the files beside it some chunks are in: read in the same store at their paths.
            let in_store: Option<Vec<Arc<dyn vzarr_source::ByteSource>>> =
                through.and_then(|(store, path)| {
                    records
                        .iter()
                        .map(|record| {
                            let at = vzarr_scan::path_in_store(&source, &path, &record.url)?;
                            let loc = vzarr_source::locate(&record.url).ok()?;
                            let src = vzarr_source::ObjectSource::from_record_in(
                                store.clone(),
                                at,
                                &loc,
                                record,
                            );
                            Some(Arc::new(src) as _)
                        })
                        .collect()
                });
            let reader: Box<dyn vzarr_source::SourceStore> = match in_store {
                Some(opened) if !opened.is_empty() => Box::new(vzarr_source::Opened::new(opened)),
                _ => Box::new(vzarr_source::Recorded::new(
                    vzarr_source::Stores::default(),
                    records,
                )),
            };
            let small = vzarr_plan::compact(&mut ds, &policy, vzarr_plan::Grids::Regular, &*reader)
                .map_err(BuildError::from)?;
            warnings.extend(small.left_referenced.iter().map(|l| match l.reason {
                vzarr_plan::LeftReason::Failed { .. } => l.to_string(),
                _ => format!("{l} (inline_max= and inline_total= raise the limits)"),
            }));
            regular_only(&mut ds, &policy, &*reader, &mut warnings)?;
            Ok((ds, warnings))
        },
    )?;
    let (ds, warnings) = built.map_err(|e| to_py(py, &e))?;
    refused_references(&url, &ds)?;
    let groups: serde_json::Map<String, serde_json::Value> = ds
        .groups
        .iter()
        .map(|(p, g)| (p.clone(), serde_json::Value::Object(g.attributes.clone())))
        .collect();
    let mut arrays = Vec::with_capacity(ds.arrays.len());
    for (path, a) in &ds.arrays {
        let n = a
            .grid
            .n_chunks()
            .ok()
            .filter(|&n| n <= MAX_PARSER_CHUNKS && n == a.manifest.len() as u64)
            .ok_or_else(|| {
                scan_error(
                    py,
                    format!(
                        "{url}: {path}: {} chunks, more than the {MAX_PARSER_CHUNKS} a \
                         VirtualiZarr manifest is given here",
                        a.manifest.len()
                    ),
                )
            })? as usize;
        let mut ids = vec![u32::MAX; n];
        let mut offsets = vec![0u64; n];
        let mut lengths = vec![0u64; n];
        let mut inline = Vec::new();
        let sources: Vec<String> = a.manifest.sources().iter().map(|s| s.to_string()).collect();
        for (i, id, chunk) in a.manifest.iter_stored_with_ids() {
            match chunk {
                vzarr_core::ChunkRef::Missing => {}
                vzarr_core::ChunkRef::Inline(b) => {
                    ids[i] = u32::MAX - 1;
                    lengths[i] = b.len() as u64;
                    inline.push((a.grid.chunk_index(i as u64), PyBytes::new(py, b).unbind()));
                }
                vzarr_core::ChunkRef::Range { offset, length, .. } => {
                    // The manifest's own id: the position of the source in `sources`.
                    ids[i] = id.unwrap_or(0);
                    offsets[i] = offset;
                    lengths[i] = length;
                }
            }
        }
        let le32: Vec<u8> = ids.iter().flat_map(|v| v.to_le_bytes()).collect();
        let le64 = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        arrays.push((
            path.clone(),
            a.zarr_metadata().to_string(),
            a.grid.grid_shape(),
            PyBytes::new(py, &le32).unbind(),
            PyBytes::new(py, &le64(&offsets)).unbind(),
            PyBytes::new(py, &le64(&lengths)).unbind(),
            sources,
            inline,
        ));
    }
    Ok((
        serde_json::Value::Object(groups).to_string(),
        arrays,
        warnings,
    ))
}
