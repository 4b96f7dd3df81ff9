//! Concatenation along an existing dimension.
//!
//! Files are put in coordinate order ([`crate::order`]); every variable with the dimension
//! is concatenated: its chunk edges along the axis are the files' edges in order, a `regular`
//! grid when they come out equal and a `rectilinear` one otherwise. HDF5 pads a file's last
//! chunk along the axis to the full chunk shape; in the middle of the combined axis such a
//! chunk is shortened, by referencing a shorter byte range when it is uncompressed and the
//! axis is outermost (the valid rows are a prefix), else by decoding it and storing its valid
//! part re-encoded inline ([`crate::inline`]). Never shifted data. The CF time coordinate and
//! its bounds are re-encoded into one units string ([`crate::time`]); variables without the
//! dimension must be identical in every file and are kept once ([`crate::compat`]).

use rayon::prelude::*;
use vzarr_core::{
    ChunkGrid, ChunkManifest, ChunkRef, ConcatInfo, ConcatPiece, DimGrid, Retimed, SkippedVariable,
    VirtualArray, VirtualDataset,
};
use vzarr_source::SourceStore;

use crate::compat::{check_compatible, check_identical, check_same_variables};
use crate::error::{EdgeChunkError, PlanError};
use crate::inline::{EdgeJob, EdgeReencoder, reencode_one};
use crate::input::{Input, Version, attr_str, axis_of, join, parent, same_path, take_manifests};
use crate::order::{self, Coordinate};
use crate::output::{base_dataset, combined_provenance, copy_ref};
use crate::prefetch::{self, Prefetched};
use crate::time::{CfTime, TimeEncoding, is_cf_time_units, time_array};
use crate::{PlanOptions, PlanReport, values};

/// One chunk of the combined axis: where it comes from and how long it is.
#[derive(Clone, Copy)]
struct AxisChunk {
    /// The file (position in output order).
    file: usize,
    /// The chunk's index along the axis in that file.
    local: u64,
    /// Its edge in the combined grid.
    edge: u64,
    /// Whether it is a padded edge chunk that must be shortened to `edge`.
    padded: bool,
}

/// What the planner did with one variable.
enum Role {
    /// A CF time coordinate (or its bounds), concatenated and re-encoded.
    Retimed(Retimed),
    /// Concatenated along the dimension.
    Concatenated,
    /// The same in every file: kept once.
    KeptOnce,
    /// Left out of the combined dataset, for this reason (none of the files is at fault).
    LeftOut(String),
}

/// One planned variable (none when left out), its role and what planning it adds to the
/// report.
type Planned = (Option<VirtualArray>, Role, PlanReport);

/// Concatenates the inputs along the existing dimension `dim`.
pub(crate) fn concat_existing(
    mut inputs: Vec<Input>,
    dim: &str,
    opts: &PlanOptions,
    reader: &dyn SourceStore,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    let lens: Vec<u64> = inputs
        .iter()
        .map(|i| order::dim_len(i, dim))
        .collect::<Result<_, _>>()?;
    // The variable that orders the files: the dimension's coordinate unless one was given.
    let by = opts.order_by.as_deref().unwrap_or(dim);
    let pre = gather_existing(&inputs, dim, by, reader);
    let cv = order::coordinate_values(&inputs, dim, by, opts.order_by.is_some(), reader, &pre)?;
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    let mut report = PlanReport {
        ordered_by: opts.order_by.clone(),
        ..PlanReport::default()
    };
    if let Some(cv) = &cv {
        order = order::by_first_value(cv);
        report.gaps = order::check_spacing(&order, &inputs, cv, opts.allow_gaps)?
            .iter()
            .map(ToString::to_string)
            .collect();
    }
    let ordered: Vec<&Input> = order.iter().map(|&k| &inputs[k]).collect();
    let skipped = check_same_variables(&ordered)?;

    // CF time: the ordering coordinate and its bounds are re-encoded into one units string.
    let cf = match &cv {
        Some(Coordinate {
            time: Some(time), ..
        }) => {
            let units = opts.time_units.clone().unwrap_or_else(|| {
                // The first file in time order defines the units.
                attr_str(&ordered[0].ds.arrays[by], "units")
                    .unwrap_or(&time.units)
                    .to_string()
            });
            let target = CfTime {
                calendar: time.calendar.clone(),
                units,
            };
            target.check().map_err(PlanError::InvalidTimeUnits)?;
            Some(target)
        }
        _ => None,
    };
    if cf.is_none() && opts.time_units.is_some() {
        return Err(PlanError::TimeUnitsWithoutCfTime { dim: by.into() });
    }
    let bounds = cf
        .as_ref()
        .and_then(|_| attr_str(&ordered[0].ds.arrays[by], "bounds").map(|b| join(parent(by), b)));

    // The references of the variables concatenated chunk by chunk leave the inputs here and
    // each file's are dropped once copied (see `take_manifests`).
    let is_time = |path: &str| cf.is_some() && (path == by || Some(path) == bounds.as_deref());
    let concatenated_paths: Vec<String> = ordered[0]
        .ds
        .arrays
        .iter()
        .filter(|(p, a)| axis_of(a, dim).is_some() && !is_time(p))
        .map(|(p, _)| p.clone())
        .collect();
    let mut taken = take_manifests(&mut inputs, &order, concatenated_paths);
    let ordered: Vec<&Input> = order.iter().map(|&k| &inputs[k]).collect();
    let urls: Vec<&str> = ordered.iter().map(|i| i.url.as_str()).collect();

    let mut out = base_dataset(&ordered, skipped);
    let mut concatenated = Vec::new();
    let mut retimed = Vec::new();
    // Each variable on its own (in parallel); the results are taken in path order, so the
    // output and the first error reported do not depend on the threads.
    let paths: Vec<&String> = ordered[0].ds.arrays.keys().collect();
    let work: Vec<(&String, Option<Vec<ChunkManifest>>)> =
        paths.iter().map(|&p| (p, taken.remove(p))).collect();
    let planned: Vec<Result<Planned, PlanError>> = work
        .into_par_iter()
        .map(|(path, manifests)| {
            let path = path.as_str();
            let arrays = same_path(&ordered, path)?;
            let mut sub = PlanReport::default();
            let time = cf.as_ref().filter(|_| is_time(path));
            if let Some(target) = time {
                let enc = TimeEncoding {
                    target,
                    coord: by,
                    coord_units: ordered
                        .iter()
                        .map(|i| attr_str(&i.ds.arrays[by], "units").unwrap_or_default())
                        .collect(),
                };
                let r = Retimed {
                    array: path.to_string(),
                    calendar: target.calendar.clone(),
                    units: target.units.clone(),
                    source_units: arrays
                        .iter()
                        .zip(&enc.coord_units)
                        .map(|(a, c)| attr_str(a, "units").unwrap_or(c).to_string())
                        .collect(),
                };
                let array = time_array(path, &arrays, &ordered, dim, &enc, reader, &pre)?;
                Ok((Some(array), Role::Retimed(r), sub))
            } else if let Some(k) = axis_of(arrays[0], dim) {
                // (Taken above unless some file lacks the variable, which `same_path` reports.)
                let manifests = manifests
                    .unwrap_or_else(|| arrays.iter().map(|a| a.manifest.clone()).collect());
                match concat_array(path, &arrays, manifests, &ordered, k, reader, &mut sub)? {
                    Ok(array) => Ok((Some(array), Role::Concatenated, sub)),
                    Err(why) => Ok((None, Role::LeftOut(why), sub)),
                }
            } else {
                let known_same = pre.all_same(&ordered, path);
                check_identical(path, &arrays, &urls, reader, known_same)?;
                Ok((Some(arrays[0].clone()), Role::KeptOnce, sub))
            }
        })
        .collect();
    for (path, result) in paths.into_iter().zip(planned) {
        let (array, role, sub) = result?;
        match role {
            Role::Retimed(r) => {
                report.time_units = Some(r.units.clone());
                concatenated.push(path.clone());
                retimed.push(r);
            }
            Role::Concatenated => concatenated.push(path.clone()),
            Role::KeptOnce => report.kept_once.push(path.clone()),
            Role::LeftOut(reason) => {
                report.left_out.push(format!("{path}: {reason}"));
                out.skipped.push(SkippedVariable {
                    path: path.clone(),
                    reason,
                });
            }
        }
        report.rectilinear.extend(sub.rectilinear);
        report.trimmed_chunks += sub.trimmed_chunks;
        report.materialised_chunks += sub.materialised_chunks;
        report.materialised_bytes += sub.materialised_bytes;
        if let Some(array) = array {
            out.arrays.insert(path.clone(), array);
        }
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
            order_by: opts.order_by.clone(),
            new_dim: false,
            pieces,
            arrays: concatenated,
            retimed,
        },
    );
    Ok((out, report))
}

/// Reads up front, from every file, the variable that orders the files along `dim` (at path
/// `by`; and its bounds, when it is a CF time coordinate) and the variables without `dim`
/// ([`crate::prefetch`]).
fn gather_existing(inputs: &[Input], dim: &str, by: &str, reader: &dyn SourceStore) -> Prefetched {
    let numbers = |input: &Input| {
        let Some(c) = order::coordinate(&input.ds, dim, by) else {
            return Vec::new();
        };
        let mut paths = vec![by.to_string()];
        if attr_str(c, "units").is_some_and(is_cf_time_units)
            && let Some(b) = attr_str(c, "bounds")
        {
            paths.push(join(parent(by), b));
        }
        paths
    };
    let statics = |input: &Input| {
        input
            .ds
            .arrays
            .iter()
            .filter(|(_, a)| axis_of(a, dim).is_none())
            .map(|(p, _)| p.clone())
            .collect()
    };
    prefetch::gather(inputs, &numbers, &statics, reader)
}

/// The chunks of the combined axis `k`, in order: every file's chunks along `k`, the padded
/// last chunk of every file but the last marked and cut to its valid length.
fn axis_chunks(arrays: &[&VirtualArray], k: usize) -> (Vec<AxisChunk>, u64) {
    let last = arrays.len() - 1;
    let mut along = Vec::new();
    let mut extent = 0u64;
    for (f, a) in arrays.iter().enumerate() {
        let d = &a.grid.dims()[k];
        for l in 0..d.n_chunks() {
            let nominal = d.chunk_len(l);
            let valid = d.chunk_valid_len(l);
            let padded = f != last && valid < nominal;
            along.push(AxisChunk {
                file: f,
                local: l,
                edge: if padded { valid } else { nominal },
                padded,
            });
        }
        extent += d.extent();
    }
    (along, extent)
}

/// Whether a padded chunk of `src` along axis `k` is shortened by referencing fewer bytes:
/// uncompressed fixed-size elements with `k` outermost (the valid rows are a prefix). String
/// chunks are re-encoded instead (their elements have no fixed size).
fn trims_by_reference(src: &VirtualArray, k: usize) -> bool {
    src.codecs.is_empty() && k == 0 && !src.data_type.is_string()
}

/// Concatenates one variable along axis `k`: grids, chunk references, padded edge chunks.
/// `arrays` are the files' versions of the variable and `manifests` their references (taken
/// out of them, see `take_manifests`): each file's are dropped once copied.
fn concat_array(
    path: &str,
    arrays: &[&VirtualArray],
    manifests: Vec<ChunkManifest>,
    inputs: &[&Input],
    k: usize,
    reader: &dyn SourceStore,
    report: &mut PlanReport,
) -> Result<Result<VirtualArray, String>, PlanError> {
    let first = arrays[0];
    let reference = Version {
        url: &inputs[0].url,
        array: first,
    };
    for (a, input) in arrays.iter().zip(inputs).skip(1) {
        let other = Version {
            url: &input.url,
            array: a,
        };
        check_compatible(path, reference, other, Some(k), &[])?;
    }
    let (along, extent) = axis_chunks(arrays, k);
    let axis = if along.is_empty() {
        DimGrid::fixed(first.grid.dims()[k].chunk_len(0).max(1), 0)?
    } else {
        DimGrid::from_edges(along.iter().map(|c| c.edge).collect(), extent)?
    };
    let mut dims = first.grid.dims().to_vec();
    dims[k] = axis;
    let grid = ChunkGrid::new(dims);
    let n = usize::try_from(grid.n_chunks()?).map_err(|_| PlanError::TooManyChunks {
        variable: path.into(),
    })?;
    let stored = manifests.iter().map(ChunkManifest::stored).sum();
    let mut manifest = ChunkManifest::new_missing_expecting(n, stored);
    // Each file's version whole again, owned, to be dropped file by file below.
    let full: Vec<VirtualArray> = arrays
        .iter()
        .zip(manifests)
        .map(|(a, m)| VirtualArray {
            manifest: m,
            ..(*a).clone()
        })
        .collect();
    let esize = first.data_type.size();
    // Each file's stored chunks only (a grid may be huge and mostly unwritten): the position
    // of a file's first chunk along `k` among all files' chunks, plus its own index along `k`.
    let mut first_along = vec![0usize; arrays.len()];
    for (pos, c) in along.iter().enumerate().rev() {
        first_along[c.file] = pos;
    }
    // The padded chunks to decode and re-encode, found first so that they are read and
    // re-encoded many files at once: in the files with a padded chunk along `k` whose chunks
    // cannot be trimmed by reference.
    let mut padded_files: Vec<usize> = along.iter().filter(|c| c.padded).map(|c| c.file).collect();
    padded_files.dedup();
    let mut jobs = Vec::new();
    for f in padded_files {
        let src = &full[f];
        if trims_by_reference(src, k) {
            continue;
        }
        for (lin, r) in src.manifest.iter_stored() {
            let idx = src.grid.chunk_index(lin as u64);
            let chunk = along[first_along[f] + idx[k] as usize];
            let len = match r {
                ChunkRef::Range { length, .. } => length,
                ChunkRef::Inline(b) => b.len() as u64,
                ChunkRef::Missing => continue,
            };
            if chunk.padded {
                jobs.push(EdgeJob {
                    file: f,
                    array: src,
                    lin,
                    nominal: src.grid.chunk_shape(&idx),
                    keep: chunk.edge,
                    len,
                });
            }
        }
    }
    // Chunks to cut and re-encode, in a codec chain vzarr cannot encode (a codec it decodes
    // only) or that reads chunks of one shape only (zfp): the variable is left out rather than
    // the dataset failed, no file being at fault.
    if let Some(job) = jobs.first()
        && let Some(why) = cannot_cut(&first.codecs)
    {
        return Ok(Err(format!(
            "left out of the concatenation: {}'s chunk {:?} is padded past the file's end along \
             the concatenation dimension (HDF5 stores edge chunks whole) and would have to be \
             cut and re-encoded: {why}",
            inputs[job.file].url,
            job.array.grid.chunk_index(job.lin as u64),
        )));
    }
    let mut reencoded = EdgeReencoder::new(&first.codecs, k, jobs, reader).run_all();
    let mut idx = Vec::new();
    for (f, src) in full.into_iter().enumerate() {
        let src = &src;
        for (lin, r) in src.manifest.iter_stored() {
            src.grid.chunk_index_into(lin as u64, &mut idx);
            let pos = first_along[f] + idx[k] as usize;
            let chunk = along[pos];
            idx[k] = pos as u64;
            let i = grid
                .linear_index(&idx)
                .expect("index inside the combined grid") as usize;
            idx[k] = chunk.local;
            if !chunk.padded || r == ChunkRef::Missing {
                copy_ref(&mut manifest, i, r)?;
                continue;
            }
            let nominal = src.grid.chunk_shape(&idx);
            let refused = |source: EdgeChunkError| PlanError::Refused {
                file: inputs[chunk.file].url.clone(),
                variable: path.into(),
                chunk: idx.clone(),
                source: Box::new(source),
            };
            if trims_by_reference(src, k) {
                // Uncompressed, concatenation axis outermost: the valid rows are a prefix.
                let row = values::chunk_bytes(&nominal[1..], esize).map_err(|_| {
                    refused(EdgeChunkError::TooLarge {
                        shape: nominal[1..].to_vec(),
                    })
                })?;
                let keep = row as u64 * chunk.edge;
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
                    _ => return Err(refused(EdgeChunkError::ShortChunk)),
                }
                report.trimmed_chunks += 1;
                continue;
            }
            // Decode, keep the valid part along k, re-encode inline.
            let encoded = match reencoded.take(f, lin) {
                Some(r) => r,
                None => {
                    let job = EdgeJob {
                        file: f,
                        array: src,
                        lin,
                        nominal: nominal.clone(),
                        keep: chunk.edge,
                        len: 0,
                    };
                    reencode_one(&first.codecs, &job, k, reader)
                }
            }
            .map_err(refused)?;
            report.materialised_chunks += 1;
            report.materialised_bytes += encoded.len() as u64;
            manifest.set_inline(i, encoded)?;
        }
    }
    if !grid.is_regular() {
        report.rectilinear.push(path.to_string());
    }
    Ok(Ok(VirtualArray {
        grid,
        manifest,
        ..first.clone()
    }))
}

/// Why chunks of the chain `codecs` cannot be cut shorter and re-encoded, if they cannot.
fn cannot_cut(codecs: &[vzarr_core::Codec]) -> Option<String> {
    if let Some(why) = vzarr_codec::encoding_refused(codecs) {
        return Some(why.to_string());
    }
    codecs.iter().find_map(|c| {
        let shape = c.fixed_chunk_shape()?;
        Some(format!(
            "{} decodes chunks of its configuration's shape {shape:?} only",
            c.label()
        ))
    })
}
