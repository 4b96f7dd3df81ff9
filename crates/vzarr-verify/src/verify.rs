//! Verification: every chunk (or a seeded random sample) read through the manifest and
//! compared value by value with the source read directly.
//!
//! For combined datasets, arrays along the concatenation dimension are compared slab by slab
//! with the file each slab came from (a new leading dimension takes one file per index);
//! other arrays with the first file. CF time coordinates (and their bounds) that the planner
//! re-encoded into other units are compared as decoded instants (`vzarr-cftime`), since their
//! numbers legitimately differ from the source's.

use std::collections::HashSet;
use std::ops::Range;
use std::time::Instant;

use vzarr_codec::vlen_utf8;
use vzarr_core::{ChunkRef, VirtualArray};
use vzarr_read::{
    Difference, FetchedChunks, ReadError, Reader, box_positions, compare, compare_strings,
    extract_box, to_f64s, unravel,
};

use crate::direct::DirectReaders;
use crate::report::{Mismatch, Skipped, VerifyOptions, VerifyProgress, VerifyReport};
use crate::sample::sample_indices;
use crate::{SourceReaders, VerifyError};

/// One slab of a chunk's region and where it comes from in a source.
struct Slab {
    url: String,
    /// Start of the slab inside the chunk's region.
    box_start: Vec<u64>,
    /// Extent of the slab (array axes).
    count: Vec<u64>,
    /// Start in the source variable (source axes).
    src_start: Vec<u64>,
    /// Whether axis 0 is a new dimension the source does not have.
    drop_axis0: bool,
}

enum Plan {
    Slabs(Vec<Slab>),
    Skip(String),
}

/// Whether `dt` is a struct with a `fixed_length_utf32` field (at any depth): what a compound
/// with variable-length string members becomes.
fn has_text_field(dt: &vzarr_core::DataType) -> bool {
    match dt {
        vzarr_core::DataType::Struct(fields) => fields.iter().any(|f| {
            matches!(f.data_type, vzarr_core::DataType::FixedUtf32(_))
                || has_text_field(&f.data_type)
        }),
        _ => false,
    }
}

/// Whether `dt` can hold the paths object references are read as (a string, or a struct
/// with a text field).
fn has_paths(dt: &vzarr_core::DataType) -> bool {
    dt.is_string() || has_text_field(dt)
}

/// Where the values of a chunk's region (`origin` + `count`) come from.
fn plan(
    reader: &Reader,
    readers: SourceReaders,
    unnamed: Option<&str>,
    path: &str,
    array: &VirtualArray,
    origin: &[u64],
    count: &[u64],
) -> Plan {
    if has_text_field(&array.data_type) {
        return Plan::Skip(
            "a compound with variable-length strings, read from the file's heap at scan time \
             into fixed-length struct fields: no reader of the source here gives them so \
             (the interop tests compare them with h5py)"
                .into(),
        );
    }
    // libhdf5 names the targets of object references (`H5Rget_name`); vzarr's own reader
    // reads no references.
    if readers == SourceReaders::Native
        && array.attributes.contains_key("links_references")
        && has_paths(&array.data_type)
    {
        return Plan::Skip(
            "object references, resolved at scan time to the paths of their targets: vzarr's \
             own reader of the source does not name them (the C readers do, and the interop \
             tests compare them with h5py's names of the targets)"
                .into(),
        );
    }
    let prov = reader.provenance();
    let whole = |url: String| {
        Plan::Slabs(vec![Slab {
            url,
            box_start: vec![0; count.len()],
            count: count.to_vec(),
            src_start: origin.to_vec(),
            drop_axis0: false,
        }])
    };
    if let Some(c) = &prov.concat
        && c.arrays.iter().any(|a| a == path)
    {
        if c.new_dim {
            if path == c.dim {
                return Plan::Skip(format!(
                    "the coordinate of the new dimension {:?} is made from labels, not read from a source",
                    c.dim
                ));
            }
            if array.dimension_names.first().map(String::as_str) == Some(c.dim.as_str())
                && !count.is_empty()
            {
                let mut slabs = Vec::new();
                for p in &c.pieces {
                    if p.start >= origin[0] && p.start < origin[0] + count[0] {
                        let mut box_start = vec![0; count.len()];
                        box_start[0] = p.start - origin[0];
                        let mut cnt = count.to_vec();
                        cnt[0] = 1;
                        slabs.push(Slab {
                            url: p.url.clone(),
                            box_start,
                            count: cnt,
                            src_start: origin[1..].to_vec(),
                            drop_axis0: true,
                        });
                    }
                }
                return Plan::Slabs(slabs);
            }
        } else if let Some(k) = array.dimension_names.iter().position(|d| *d == c.dim) {
            let (lo_r, hi_r) = (origin[k], origin[k] + count[k]);
            let mut slabs = Vec::new();
            for p in &c.pieces {
                let lo = lo_r.max(p.start);
                let hi = hi_r.min(p.start.saturating_add(p.len));
                if lo >= hi {
                    continue;
                }
                let mut box_start = vec![0; count.len()];
                box_start[k] = lo - lo_r;
                let mut cnt = count.to_vec();
                cnt[k] = hi - lo;
                let mut src_start = origin.to_vec();
                src_start[k] = lo - p.start;
                slabs.push(Slab {
                    url: p.url.clone(),
                    box_start,
                    count: cnt,
                    src_start,
                    drop_axis0: false,
                });
            }
            let covered: u64 = slabs.iter().map(|s| s.count[k]).sum();
            if covered != count[k] {
                return Plan::Skip(format!(
                    "the concatenation pieces cover {covered} of {} elements of this chunk along {:?}",
                    count[k], c.dim
                ));
            }
            return Plan::Slabs(slabs);
        }
    }
    if let Some(c) = &prov.concat
        && let Some(p) = c.pieces.first()
    {
        return whole(p.url.clone());
    }
    if prov.sources.len() == 1 {
        return whole(prov.sources[0].url.clone());
    }
    match array.manifest.sources() {
        [one] => whole(one.to_string()),
        [] => match prov.sources.first() {
            Some(s) => whole(s.url.clone()),
            // References without provenance (kerchunk's) whose chunks all point into one file:
            // an array with inline chunks or none stored is compared with that file (the
            // references of one file; a combined dataset's point into several).
            None => match unnamed {
                Some(url) => whole(url.to_string()),
                None => Plan::Skip(
                    "no source is recorded to compare with (name the file the references were \
                     made from)"
                        .into(),
                ),
            },
        },
        many => Plan::Skip(format!(
            "its chunks point into {} files and the references record no concatenation \
             layout, so where a chunk's values lie in its file is unknown",
            many.len()
        )),
    }
}

/// The file chunks that name none are compared with, for references without provenance: the
/// one source every array's chunks point into, else the one file the user named
/// ([`VerifyOptions::sources`]). Found once per run.
fn unnamed_source(reader: &Reader, opts: &VerifyOptions) -> Option<String> {
    one_source(reader).or_else(|| match opts.sources.as_slice() {
        [one] => Some(crate::audit::same_file(one)),
        _ => None,
    })
}

/// The one source every array's chunks point into, when there is exactly one.
fn one_source(reader: &Reader) -> Option<String> {
    let mut found: Option<&str> = None;
    for a in reader.dataset().arrays.values() {
        for url in a.manifest.sources() {
            match found {
                None => found = Some(url),
                Some(f) if f == &**url => {}
                Some(_) => return None,
            }
        }
    }
    found.map(str::to_string)
}

struct Task {
    array: usize,
    lin: usize,
}

/// The chunks of one array that verification may pick.
enum Candidates {
    /// Every chunk of the grid.
    All(usize),
    /// These chunks (the stored ones of a large grid).
    Stored(Vec<usize>),
}

impl Candidates {
    fn len(&self) -> usize {
        match self {
            Candidates::All(n) => *n,
            Candidates::Stored(v) => v.len(),
        }
    }

    fn nth(&self, k: usize) -> usize {
        match self {
            Candidates::All(_) => k,
            Candidates::Stored(v) => v[k],
        }
    }
}

/// Verifies the references opened in `reader`: reads chunks through the manifest and
/// compares every value with the source read directly. Stale sources are an error (unless the
/// reader ignores staleness); differences are in the report.
pub fn verify(reader: &Reader, opts: &VerifyOptions) -> Result<VerifyReport, VerifyError> {
    // Every chunk is compared: lazily opened Parquet references must be loaded whole.
    reader.require_loaded()?;
    if !opts.readers.available() {
        return Err(VerifyError::NotBuilt {
            readers: opts.readers,
        });
    }
    let t0 = Instant::now();
    let bytes_before = reader.stats().bytes;
    let mut stale = reader.check_sources().into_iter();
    if let Some(first) = stale.next() {
        return Err(VerifyError::Sources {
            first,
            more: stale.count(),
        });
    }
    let ds = reader.dataset();
    let paths: Vec<String> = if opts.arrays.is_empty() {
        ds.arrays.keys().cloned().collect()
    } else {
        for a in &opts.arrays {
            if !ds.arrays.contains_key(a.trim_start_matches('/')) {
                return Err(ReadError::NoArray(a.clone()).into());
            }
        }
        let mut v: Vec<String> = opts
            .arrays
            .iter()
            .map(|a| a.trim_start_matches('/').to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let arrays: Vec<&VirtualArray> = paths.iter().map(|p| &ds.arrays[p]).collect();
    let unnamed = unnamed_source(reader, opts);
    // Every chunk of grids up to DENSE_CHUNKS (missing ones must read as the fill value);
    // of larger grids, the stored chunks only.
    let mut report = VerifyReport::default();
    let candidates: Vec<Candidates> = arrays
        .iter()
        .zip(&paths)
        .map(|(a, path)| {
            let n = a.manifest.len();
            if n <= vzarr_core::DENSE_CHUNKS {
                return Candidates::All(n);
            }
            let stored: Vec<usize> = a.manifest.iter_stored().map(|(i, _)| i).collect();
            report.skipped.push(Skipped {
                array: path.clone(),
                chunk: None,
                reason: format!(
                    "{} chunks that are not stored (of a grid of {n}) were not compared",
                    n - stored.len()
                ),
            });
            Candidates::Stored(stored)
        })
        .collect();
    let counts: Vec<u64> = candidates.iter().map(|c| c.len() as u64).collect();
    let mut starts = Vec::with_capacity(counts.len());
    let mut total = 0u64;
    for c in &counts {
        starts.push(total);
        total += c;
    }
    let picked: Vec<u64> = match opts.sample {
        Some(n) if n < total => sample_indices(total, n, opts.seed),
        _ => (0..total).collect(),
    };
    let tasks: Vec<Task> = picked
        .iter()
        .map(|&g| {
            let a = starts.partition_point(|&s| s <= g) - 1;
            Task {
                array: a,
                lin: candidates[a].nth((g - starts[a]) as usize),
            }
        })
        .collect();

    // Batches of tasks of one array, bounded in encoded bytes and count.
    let limit = reader.options().batch_bytes.max(1);
    let mut batches: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while i < tasks.len() {
        let a = tasks[i].array;
        let mut j = i;
        let mut bytes = 0u64;
        while j < tasks.len() && tasks[j].array == a && bytes < limit && j - i < 4096 {
            bytes += match arrays[a].manifest.get(tasks[j].lin) {
                ChunkRef::Range { length, .. } => length,
                _ => 0,
            };
            j += 1;
        }
        batches.push(i..j);
        i = j;
    }

    let mut direct = DirectReaders::new(
        reader.direct_sources().clone(),
        opts.readers,
        opts.worker.clone(),
    );
    report.chunks_total = total;
    let mut skipped_arrays: HashSet<String> = HashSet::new();
    let readers = paths
        .iter()
        .map(|p| reader.array(p))
        .collect::<Result<Vec<_>, _>>()?;
    let fetch = |b: &Range<usize>| {
        let ar = &readers[tasks[b.start].array];
        let lins: Vec<usize> = tasks[b.clone()].iter().map(|t| t.lin).collect();
        ar.fetch_chunks(&lins)
    };
    let mut done = 0u64;
    std::thread::scope(|s| {
        let mut pending = batches.first().map(|b| s.spawn(move || fetch(b)));
        for (bi, b) in batches.iter().enumerate() {
            let a = tasks[b.start].array;
            let path = &paths[a];
            let array = arrays[a];
            // A failed prefetch is reported per chunk below (each chunk is then fetched alone).
            let fetched: FetchedChunks = match pending.take() {
                Some(h) => match h.join() {
                    Ok(r) => r.unwrap_or_default(),
                    Err(p) => std::panic::resume_unwind(p),
                },
                None => FetchedChunks::default(),
            };
            pending = batches.get(bi + 1).map(|n| s.spawn(move || fetch(n)));
            let ar = &readers[a];
            let source_path = source_path(ds, path);
            let alt_path = hyrax_path(array).filter(|p| *p != source_path);
            for t in &tasks[b.clone()] {
                let idx = array.grid.chunk_index(t.lin as u64);
                let origin = array.grid.chunk_origin(&idx);
                let count = array.grid.chunk_valid_shape(&idx);
                done += 1;
                report.chunks_checked += 1;
                let ranges: Vec<Range<u64>> =
                    origin.iter().zip(&count).map(|(&o, &c)| o..o + c).collect();
                check_chunk(
                    reader,
                    &mut direct,
                    &mut report,
                    opts,
                    &mut skipped_arrays,
                    ChunkCtx {
                        path,
                        source_path: &source_path,
                        alt_path,
                        array,
                        idx: &idx,
                        origin: &origin,
                        count: &count,
                        unnamed: unnamed.as_deref(),
                    },
                    || {
                        if array.data_type.is_string() {
                            // Strings travel as a vlen-utf8 chunk, as the source's do (one
                            // that cannot be encoded, of more than 4 GiB, is reported below
                            // as unreadable).
                            let v = ar.decode_box_strings(&fetched, &ranges)?;
                            Ok(vlen_utf8::encode(&v).unwrap_or_default())
                        } else {
                            ar.decode_box(&fetched, &ranges)
                        }
                    },
                );
                if let Some(p) = &opts.progress {
                    p(VerifyProgress {
                        done,
                        total: picked.len() as u64,
                    });
                }
            }
        }
    });
    report.bytes_read = reader.stats().bytes - bytes_before;
    report.source_bytes_read = direct.bytes;
    report.readers = direct.used;
    report.seconds = t0.elapsed().as_secs_f64();
    Ok(report)
}

struct ChunkCtx<'a> {
    path: &'a str,
    /// The array's path in its sources (names Zarr does not allow are mapped in the
    /// manifest; the source names are kept in attributes).
    source_path: &'a str,
    /// Where `source_path` is not in the source, the path tried instead: the HDF5 path a DMR++
    /// sidecar gives in Hyrax's `fullnamepath` attribute (Hyrax renames `Data Fields` to
    /// `Data_Fields`, flattens groups into names).
    alt_path: Option<&'a str>,
    array: &'a VirtualArray,
    idx: &'a [u64],
    origin: &'a [u64],
    count: &'a [u64],
    /// The file chunks that name none are compared with ([`unnamed_source`]).
    unnamed: Option<&'a str>,
}

impl ChunkCtx<'_> {
    /// The mismatch of this chunk when a side could not be read or compared: no values
    /// differ, `reason` says why, `source` is the source it concerns.
    fn unreadable(&self, source: String, reason: String) -> Mismatch {
        Mismatch {
            array: self.path.to_string(),
            chunk: self.idx.to_vec(),
            source,
            differing: 0,
            first_index: None,
            reason,
        }
    }
}

/// The HDF5 path (without its leading `/`) Hyrax's `fullnamepath` attribute of `array` gives
/// (a string, or a list of them: its first): a DMR++ sidecar's name of the granule's dataset
/// where Hyrax renamed it.
pub(crate) fn hyrax_path(array: &VirtualArray) -> Option<&str> {
    let s = match array.attributes.get("fullnamepath")? {
        serde_json::Value::Array(a) => a.first()?.as_str()?,
        other => other.as_str()?,
    };
    Some(s.trim_start_matches('/')).filter(|p| !p.is_empty())
}

/// The path in the source of the array at `path`: each component's source name, kept in the
/// attribute `vzarr:original_name` of groups and arrays whose names were mapped.
fn source_path(ds: &vzarr_core::VirtualDataset, path: &str) -> String {
    use vzarr_core::names::ORIGINAL_NAME_ATTR;
    let mut out: Vec<String> = Vec::new();
    let mut at = String::new();
    for comp in path.split('/') {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(comp);
        let attrs = ds
            .arrays
            .get(&at)
            .map(|a| &a.attributes)
            .or_else(|| ds.groups.get(&at).map(|g| &g.attributes));
        let name = attrs
            .and_then(|a| a.get(ORIGINAL_NAME_ATTR))
            .and_then(serde_json::Value::as_str)
            .unwrap_or(comp);
        out.push(name.to_string());
    }
    out.join("/")
}

/// Compares CF time values in different units by their decoded instants (exact, to the
/// nanosecond after cftime's microsecond rounding).
fn compare_instants(
    ours_dt: vzarr_core::DataType,
    ours: &[u8],
    theirs_dt: vzarr_core::DataType,
    theirs: &[u8],
    ours_units: &str,
    theirs_units: &str,
    calendar: Option<&str>,
) -> Result<Option<Difference>, String> {
    let cal = vzarr_cftime::Calendar::from_attribute(calendar).map_err(|e| e.to_string())?;
    let ou = vzarr_cftime::Units::parse(ours_units, cal).map_err(|e| e.to_string())?;
    let su = vzarr_cftime::Units::parse(theirs_units, cal).map_err(|e| e.to_string())?;
    let a = to_f64s(ours_dt, ours).ok_or("not numeric")?;
    let b = to_f64s(theirs_dt, theirs).ok_or("not numeric")?;
    if a.len() != b.len() {
        return Err(format!("{} values against {}", a.len(), b.len()));
    }
    let da = vzarr_cftime::decode(&a, &ou).map_err(|e| e.to_string())?;
    let db = vzarr_cftime::decode(&b, &su).map_err(|e| e.to_string())?;
    let show = |i: &Option<vzarr_cftime::Instant>, v: f64, u: &str| {
        i.map_or_else(
            || format!("{v} {u}"),
            |i| format!("{} ({v} {u})", i.to_iso_string()),
        )
    };
    let mut diff: Option<Difference> = None;
    for (k, (x, y)) in da.iter().zip(&db).enumerate() {
        if x != y {
            match &mut diff {
                Some(d) => d.count += 1,
                None => {
                    diff = Some(Difference {
                        count: 1,
                        first: k,
                        ours: show(x, a[k], ours_units),
                        theirs: show(y, b[k], theirs_units),
                    })
                }
            }
        }
    }
    Ok(diff)
}

/// The planner's record of how it re-encoded the CF time array at `path`, if it did.
fn retimed<'a>(reader: &'a Reader, path: &str) -> Option<&'a vzarr_core::Retimed> {
    let c = reader.provenance().concat.as_ref()?;
    c.retimed.iter().find(|r| r.array == path)
}

fn fail(report: &mut VerifyReport, opts: &VerifyOptions, m: Mismatch, counted: &mut bool) {
    if !*counted {
        report.failed_chunks += 1;
        *counted = true;
    }
    if report.mismatches.len() < opts.max_reported {
        report.mismatches.push(m);
    }
}

#[allow(clippy::too_many_arguments)]
fn check_chunk(
    reader: &Reader,
    direct: &mut DirectReaders,
    report: &mut VerifyReport,
    opts: &VerifyOptions,
    skipped_arrays: &mut HashSet<String>,
    c: ChunkCtx<'_>,
    ours: impl FnOnce() -> Result<Vec<u8>, ReadError>,
) {
    let n: u64 = c.count.iter().product();
    if n == 0 {
        return;
    }
    let esize = c.array.data_type.size();
    let strings = c.array.data_type.is_string();
    let limit = reader.options().max_chunk_bytes;
    let region = n.saturating_mul(esize as u64);
    let nominal = if c.array.codecs.is_empty() {
        0
    } else {
        vzarr_read::max_chunk_bytes(c.array)
    };
    if region > limit || nominal > limit {
        let m = c.unreadable(
            String::new(),
            format!(
                "chunk of {} bytes is too large to verify in memory (limit {limit} bytes)",
                region.max(nominal)
            ),
        );
        let mut counted = false;
        fail(report, opts, m, &mut counted);
        return;
    }
    let slabs = match plan(
        reader,
        opts.readers,
        c.unnamed,
        c.path,
        c.array,
        c.origin,
        c.count,
    ) {
        Plan::Skip(reason) => {
            if skipped_arrays.insert(c.path.to_string()) {
                report.skipped.push(Skipped {
                    array: c.path.to_string(),
                    chunk: None,
                    reason,
                });
            }
            return;
        }
        Plan::Slabs(s) => s,
    };
    let mut counted = false;
    let first_url = slabs.first().map(|s| s.url.clone()).unwrap_or_default();
    let ours = match ours() {
        Ok(b) => b,
        Err(e) => {
            let m = c.unreadable(
                first_url,
                format!("reading through the manifest failed: {e}"),
            );
            fail(report, opts, m, &mut counted);
            return;
        }
    };
    let dt = c.array.data_type.clone();
    let ours_strings = if strings {
        match vlen_utf8::decode(&ours, n as usize) {
            Ok(v) => v,
            Err(e) => {
                let m = c.unreadable(first_url, format!("decoded strings unreadable: {e}"));
                fail(report, opts, m, &mut counted);
                return;
            }
        }
    } else {
        Vec::new()
    };
    if !strings && ours.len() as u64 != region {
        let m = c.unreadable(
            first_url,
            format!("decoded {} bytes, expected {region}", ours.len()),
        );
        fail(report, opts, m, &mut counted);
        return;
    }
    let cf = retimed(reader, c.path);
    let pieces = reader.provenance().concat.as_ref().map(|c| &c.pieces);
    for s in slabs {
        // CF time re-encoded by the planner: when the units differ, compare decoded instants.
        let retimed: Option<(&str, &str)> = cf.and_then(|r| {
            let k = pieces?.iter().position(|p| p.url == s.url)?;
            let su = r.source_units.get(k)?;
            (su.trim() != r.units.trim()).then_some((r.units.as_str(), su.as_str()))
        });
        let (src_start, src_count): (Vec<u64>, Vec<u64>) = if s.drop_axis0 {
            (s.src_start.clone(), s.count[1..].to_vec())
        } else {
            (s.src_start.clone(), s.count.clone())
        };
        let mut read = |at: &str| direct.read(&s.url, at, &src_start, &src_count);
        let first = read(c.source_path);
        let theirs = match (first, c.alt_path) {
            (Err(e), Some(alt)) => read(alt).map_err(|_| e),
            (r, _) => r,
        };
        let theirs = match theirs {
            Ok(v) => v,
            // Values the references hold that the source has no variable for (a DMR++
            // sidecar's values Hyrax computed, `dmrpp:missingdata`): nothing to compare with.
            Err(e)
                if e.starts_with(crate::direct::ABSENT)
                    && c.array.manifest.sources().is_empty() =>
            {
                if skipped_arrays.insert(c.path.to_string()) {
                    report.skipped.push(Skipped {
                        array: c.path.to_string(),
                        chunk: None,
                        reason: format!(
                            "its values are held in the references and {e} (values computed \
                             where the references were made)"
                        ),
                    });
                }
                return;
            }
            Err(e) => {
                let m = c.unreadable(
                    s.url.clone(),
                    format!("reading the source directly failed: {e}"),
                );
                fail(report, opts, m, &mut counted);
                continue;
            }
        };
        let sub = if strings {
            Vec::new()
        } else {
            extract_box(&ours, c.count, esize, &s.box_start, &s.count)
        };
        let nvals = if strings {
            s.count.iter().product()
        } else {
            (sub.len() / esize.max(1)) as u64
        };
        let diff = match &retimed {
            None if strings => {
                let ours: Vec<&String> = box_positions(c.count, &s.box_start, &s.count)
                    .into_iter()
                    .map(|i| &ours_strings[i])
                    .collect();
                if theirs.dtype.is_string() {
                    match vlen_utf8::decode(&theirs.bytes, nvals as usize) {
                        Ok(t) => compare_strings(&ours, &t),
                        Err(e) => Some(Difference {
                            count: nvals,
                            first: 0,
                            ours: format!("{nvals} strings"),
                            theirs: format!("unreadable strings ({e})"),
                        }),
                    }
                } else {
                    Some(Difference {
                        count: nvals,
                        first: 0,
                        ours: "strings".into(),
                        theirs: format!("values of type {}", theirs.dtype.name()),
                    })
                }
            }
            None => compare(dt.clone(), &sub, theirs.dtype.clone(), &theirs.bytes),
            Some((ou, su)) => {
                let calendar = cf.map(|r| r.calendar.as_str());
                match compare_instants(
                    dt.clone(),
                    &sub,
                    theirs.dtype.clone(),
                    &theirs.bytes,
                    ou,
                    su,
                    calendar,
                ) {
                    Ok(d) => d,
                    Err(reason) => {
                        report.skipped.push(Skipped {
                            array: c.path.to_string(),
                            chunk: Some(c.idx.to_vec()),
                            reason: format!(
                                "CF time in other units ({su:?} in {}): {reason}",
                                s.url
                            ),
                        });
                        continue;
                    }
                }
            }
        };
        report.values_compared += nvals;
        if let Some(d) = diff {
            let local = unravel(d.first as u64, &s.count);
            let first: Vec<u64> = local
                .iter()
                .zip(&s.box_start)
                .zip(c.origin)
                .map(|((l, b), o)| l + b + o)
                .collect();
            let type_note = if theirs.dtype != dt {
                format!(
                    " (manifest type {}, source type {})",
                    dt.name(),
                    theirs.dtype.name()
                )
            } else {
                String::new()
            };
            // A codec with no single decoding (lossy JPEG 2000) may be the difference: say so.
            let codec_note: String = c
                .array
                .codecs
                .iter()
                .filter_map(|k| {
                    let why = k.decoders_may_differ()?;
                    Some(format!(" ({}: {why})", k.to_zarr_json()["name"].as_str()?))
                })
                .collect();
            let m = Mismatch {
                array: c.path.to_string(),
                chunk: c.idx.to_vec(),
                source: s.url.clone(),
                differing: d.count,
                first_index: Some(first.clone()),
                reason: format!(
                    "{} of {nvals} values differ; first at {first:?}: manifest {}, source \
                     {}{type_note}{codec_note}",
                    d.count, d.ours, d.theirs
                ),
            };
            fail(report, opts, m, &mut counted);
        }
    }
}
