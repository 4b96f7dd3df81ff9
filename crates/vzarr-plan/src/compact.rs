//! Small chunks made cheap to read: merged into larger virtual chunks where the data can stay
//! in place, kept inline where references would stay tiny.
//!
//! A reference costs a key in the output and, when read, a request (or a trip through a
//! reader's chunk machinery): records of 4 bytes referenced one by one make an output many
//! times its file and reads hundreds of times slower than the file. [`compact`] runs on a
//! finished dataset (one file's scan or the planner's combination), so every front end and
//! writer gets the same result, a concatenation's chunks never merge across files, and an
//! append (which plans every source again) gives the output a full build gives:
//!
//! 1. **Merge** (`merge`): adjacent uncompressed chunks under 64 KiB become one larger
//!    virtual chunk of a coarser grid, up to the policy's target size (not when the grid
//!    would turn rectilinear and the array is kept inline instead, in regular chunks).
//! 2. **Inline whole arrays**: an array whose references, once merged, average less than
//!    [`SMALL_REFERENCE_BYTES`] (interleaved NetCDF3 records, compressed chunks of a few bytes,
//!    0-d and short arrays) is read, decoded and kept inline in chunks of up to the target
//!    size along its first axis, compressed with `zstd` (after `numcodecs.shuffle` for
//!    elements of several bytes; not at all under 256 bytes: a choice made from the metadata
//!    alone, so the files of an archive get the same codecs); chunks that hold only the fill
//!    value are not stored.
//! 3. **Inline small chunks**: the chunks under [`SMALL_REFERENCE_BYTES`] of an array that
//!    stays referenced are copied inline as they are (same codecs).
//!
//! Bounds: an array is inlined only if it decodes to at most the policy's per-array bytes
//! (and references no more than that); a build inlines at most the policy's total, the
//! cheapest first (by decoded bytes, then path). What is left referenced in small pieces is
//! reported by name with its reference count. Reads go out in batches of at most
//! [`READ_BATCH_BYTES`], one coalesced read per source, [`READ_FILES`] sources at once. An
//! array that cannot be read or decoded stays as it was, and is reported.

use std::collections::BTreeMap;

use rayon::prelude::*;
use vzarr_codec::ByteCodecs;
use vzarr_core::small::SMALL_REFERENCE_BYTES;
use vzarr_core::{ChunkRef, Codec, SmallChunkPolicy, SmallChunks, VirtualArray, VirtualDataset};
use vzarr_source::{Bytes, SourceStore, read_across};

use crate::error::{PlanError, ReadError};
use crate::prefetch::READ_FILES;
use crate::{inline, merge, values};

/// Referenced bytes read for inlining at once at most.
pub const READ_BATCH_BYTES: u64 = 64 << 20;

/// The `zstd` level of chunks kept inline.
const ZSTD_LEVEL: i32 = 3;

/// Which chunk grids merging may make.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grids {
    /// Regular or rectilinear.
    #[default]
    Any,
    /// Regular only (for readers without rectilinear grids, such as VirtualiZarr's
    /// manifests): chunks whose merge would be rectilinear stay as they are.
    Regular,
}

/// What was done (or, by [`survey`], would be done) to one array.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ArrayAction {
    /// Adjacent chunks merged: `from` stored chunks became `to`.
    Merged {
        /// Stored chunks before.
        from: u64,
        /// Stored chunks after.
        to: u64,
    },
    /// The whole array kept inline instead of `references` references.
    Inlined {
        /// References it had.
        references: u64,
        /// Its decoded size.
        bytes: u64,
    },
    /// Small chunks of an array that stays referenced copied inline as they are.
    SmallChunksInlined {
        /// Chunks copied.
        chunks: u64,
        /// Their bytes.
        bytes: u64,
    },
}

/// Why an array stays referenced in small pieces.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LeftReason {
    /// It decodes to (or references) more than the per-array bound.
    ArrayLimit {
        /// The bound.
        limit: u64,
    },
    /// The build's total bound was reached before it.
    TotalLimit {
        /// The bound.
        limit: u64,
    },
    /// Reading or decoding it failed.
    Failed {
        /// Why.
        error: String,
    },
}

/// An array left referenced in small pieces.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LeftReferenced {
    /// Array path.
    pub array: String,
    /// Its references.
    pub references: u64,
    /// Bytes inlining would have taken (decoded, or the small chunks' bytes).
    pub bytes: u64,
    /// Why.
    #[serde(flatten)]
    pub reason: LeftReason,
}

impl std::fmt::Display for LeftReferenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use vzarr_core::summary::human_bytes;
        write!(
            f,
            "{}: {} small references kept: ",
            self.array, self.references
        )?;
        match &self.reason {
            LeftReason::ArrayLimit { limit } => write!(
                f,
                "inlining it would take {}, above the per-array limit of {}",
                human_bytes(self.bytes),
                human_bytes(*limit)
            ),
            LeftReason::TotalLimit { limit } => write!(
                f,
                "inlining it ({}) would exceed the build's limit of {} inline",
                human_bytes(self.bytes),
                human_bytes(*limit)
            ),
            LeftReason::Failed { error } => write!(f, "it could not be inlined: {error}"),
        }
    }
}

/// What [`compact`] did (or [`survey`] would do).
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct CompactReport {
    /// References before.
    pub references_before: u64,
    /// References after (those written).
    pub references_after: u64,
    /// References removed by merging.
    pub references_merged: u64,
    /// References replaced by inline chunks.
    pub references_inlined: u64,
    /// Encoded bytes added inline (0 in a survey).
    pub inline_bytes: u64,
    /// What was done, by array.
    pub arrays: BTreeMap<String, Vec<ArrayAction>>,
    /// Arrays left referenced in small pieces.
    pub left_referenced: Vec<LeftReferenced>,
}

/// An array or some of its chunks to keep inline.
struct Candidate {
    path: String,
    /// Decoded bytes (whole array) or the chunks' bytes.
    cost: u64,
    /// References it replaces.
    references: u64,
    /// `None`: the whole array; else these chunks.
    chunks: Option<Vec<usize>>,
}

/// Merges and inlines the small chunks of `ds` as `policy` says, reading what it inlines
/// through `reader`; records a policy other than the default in the provenance.
pub fn compact(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    grids: Grids,
    reader: &dyn SourceStore,
) -> Result<CompactReport, PlanError> {
    ds.provenance.small_chunks = (!policy.is_default()).then_some(*policy);
    let inline_before = inline_bytes(ds);
    let mut report = run(ds, policy, grids, Some(reader))?;
    report.references_after = referenced(ds);
    report.inline_bytes = inline_bytes(ds).saturating_sub(inline_before);
    Ok(report)
}

/// What [`compact`] would do to `ds`, without reading anything (`inline_bytes` is 0; arrays
/// that would fail to read are not known).
pub fn survey(ds: &VirtualDataset, policy: &SmallChunkPolicy, grids: Grids) -> CompactReport {
    let mut ds = ds.clone();
    // Without reading, nothing fails but a dataset that breaks the model's rules, which a
    // scan never gives; such a dataset is surveyed as if nothing were done.
    let mut report = run(&mut ds, policy, grids, None).unwrap_or_default();
    report.references_after = referenced(&ds).saturating_sub(report.references_inlined);
    report
}

/// The work of [`compact`] (and, with no reader, of [`survey`]: what would be inlined is
/// only recorded). A merge that would make a grid rectilinear waits: when the array is kept
/// inline instead (its chunks then are regular) the merge is not needed; otherwise it is
/// applied at the end.
fn run(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    grids: Grids,
    reader: Option<&dyn SourceStore>,
) -> Result<CompactReport, PlanError> {
    let mut report = CompactReport {
        references_before: referenced(ds),
        ..Default::default()
    };
    let mut waiting = BTreeMap::new();
    if policy.mode != SmallChunks::Keep {
        waiting = merge_all(ds, policy, grids, &mut report)?;
    }
    if policy.mode == SmallChunks::Inline {
        let (accepted, left) = candidates(ds, policy);
        report.left_referenced = left;
        match reader {
            Some(reader) => inline_all(ds, policy, accepted, reader, &mut report)?,
            None => {
                for c in accepted {
                    report.references_inlined += c.references;
                    let done = action(&c);
                    report.arrays.entry(c.path).or_default().push(done);
                }
            }
        }
    }
    for (path, merged) in waiting {
        let inlined = report.arrays.get(&path).is_some_and(|acts| {
            acts.iter()
                .any(|a| matches!(a, ArrayAction::Inlined { .. }))
        });
        if !inlined {
            apply_merge(ds, path, merged, &mut report);
        }
    }
    Ok(report)
}

fn referenced(ds: &VirtualDataset) -> u64 {
    ds.arrays
        .values()
        .map(|a| a.manifest.stats().referenced)
        .sum()
}

fn inline_bytes(ds: &VirtualDataset) -> u64 {
    ds.arrays
        .values()
        .map(|a| a.manifest.stats().inline_bytes)
        .sum()
}

fn action(c: &Candidate) -> ArrayAction {
    match &c.chunks {
        None => ArrayAction::Inlined {
            references: c.references,
            bytes: c.cost,
        },
        Some(chunks) => ArrayAction::SmallChunksInlined {
            chunks: chunks.len() as u64,
            bytes: c.cost,
        },
    }
}

/// Merges adjacent chunks of every array that has references, but for merges that would
/// make a grid rectilinear where the array could be kept inline instead: those are returned,
/// by path, to be applied if it is not.
fn merge_all(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    grids: Grids,
    report: &mut CompactReport,
) -> Result<BTreeMap<String, VirtualArray>, PlanError> {
    let merged: Vec<Result<Option<(String, VirtualArray)>, PlanError>> = ds
        .arrays
        .par_iter()
        .map(|(path, a)| Ok(merged(a, policy, grids)?.map(|m| (path.clone(), m))))
        .collect();
    let mut waiting = BTreeMap::new();
    for r in merged {
        let Some((path, a)) = r? else { continue };
        let old = &ds.arrays[&path];
        if policy.mode == SmallChunks::Inline
            && a.grid.is_regular() != old.grid.is_regular()
            && matches!(whole_inline(old, policy), Some(Ok(_)))
        {
            waiting.insert(path, a);
            continue;
        }
        apply_merge(ds, path, a, report);
    }
    Ok(waiting)
}

/// Puts the merged array `a` in place of `path`'s, and reports it (an array left referenced
/// in small pieces is reported again with the merged references, or not at all when they
/// are no longer small).
fn apply_merge(ds: &mut VirtualDataset, path: String, a: VirtualArray, report: &mut CompactReport) {
    let from = ds.arrays[&path].manifest.stats().referenced;
    let stats = a.manifest.stats();
    report.references_merged += from - stats.referenced;
    report
        .arrays
        .entry(path.clone())
        .or_default()
        .push(ArrayAction::Merged {
            from,
            to: stats.referenced,
        });
    report.left_referenced.retain_mut(|l| {
        if l.array != path {
            return true;
        }
        l.references = stats.referenced;
        stats.referenced_bytes / stats.referenced.max(1) < SMALL_REFERENCE_BYTES
    });
    ds.arrays.insert(path, a);
}

/// Whether `a` is one to keep inline as a whole, its references (not strings) averaging
/// under [`SMALL_REFERENCE_BYTES`]: `Some(Ok(decoded bytes))` within the per-array bound (on
/// its decoded size and on the bytes it references), `Some(Err(decoded bytes))` beyond it,
/// `None` when it is not one.
fn whole_inline(a: &VirtualArray, policy: &SmallChunkPolicy) -> Option<Result<u64, u64>> {
    let stats = a.manifest.stats();
    if a.data_type.is_string()
        || stats.referenced == 0
        || stats.referenced_bytes / stats.referenced >= SMALL_REFERENCE_BYTES
    {
        return None;
    }
    let bytes = decoded_bytes(a).unwrap_or(u64::MAX);
    let limit = policy.inline_array_bytes;
    Some(if bytes <= limit && stats.referenced_bytes <= limit {
        Ok(bytes)
    } else {
        Err(bytes)
    })
}

/// `a` with its adjacent chunks merged, if any are.
fn merged(
    a: &VirtualArray,
    policy: &SmallChunkPolicy,
    grids: Grids,
) -> Result<Option<VirtualArray>, PlanError> {
    if a.manifest.stats().referenced == 0 {
        return Ok(None);
    }
    let regular_only = grids == Grids::Regular;
    let Some(m) = merge::plan(a, policy.target_chunk_bytes, regular_only) else {
        return Ok(None);
    };
    let manifest = merge::apply(a, &m)?;
    let mut dims = a.grid.dims().to_vec();
    dims[m.axis] = m.dim;
    let out = VirtualArray {
        grid: vzarr_core::ChunkGrid::new(dims),
        manifest,
        ..a.clone()
    };
    out.validate()?;
    Ok(Some(out))
}

/// The decoded size of `a`, if it fits a `u64`.
fn decoded_bytes(a: &VirtualArray) -> Option<u64> {
    a.shape()
        .iter()
        .try_fold(a.data_type.size() as u64, |acc, &d| acc.checked_mul(d))
}

/// What to inline, within the policy's bounds (cheapest first), and what is left referenced.
fn candidates(
    ds: &VirtualDataset,
    policy: &SmallChunkPolicy,
) -> (Vec<Candidate>, Vec<LeftReferenced>) {
    let mut found = Vec::new();
    let mut left = Vec::new();
    let array_limit = LeftReason::ArrayLimit {
        limit: policy.inline_array_bytes,
    };
    for (path, a) in &ds.arrays {
        match whole_inline(a, policy) {
            Some(Ok(bytes)) => {
                found.push(Candidate {
                    path: path.clone(),
                    cost: bytes,
                    references: a.manifest.stats().referenced,
                    chunks: None,
                });
                continue;
            }
            Some(Err(bytes)) => {
                left.push(LeftReferenced {
                    array: path.clone(),
                    references: a.manifest.stats().referenced,
                    bytes,
                    reason: array_limit.clone(),
                });
                continue;
            }
            None if a.data_type.is_string() => continue,
            None => {}
        }
        let small: Vec<(usize, u64)> = a
            .manifest
            .iter_stored()
            .filter_map(|(i, r)| match r {
                ChunkRef::Range { length, .. } if length < SMALL_REFERENCE_BYTES => {
                    Some((i, length))
                }
                _ => None,
            })
            .collect();
        if small.is_empty() {
            continue;
        }
        let bytes: u64 = small.iter().map(|&(_, n)| n).sum();
        if bytes > policy.inline_array_bytes {
            left.push(LeftReferenced {
                array: path.clone(),
                references: small.len() as u64,
                bytes,
                reason: array_limit.clone(),
            });
            continue;
        }
        found.push(Candidate {
            path: path.clone(),
            cost: bytes,
            references: small.len() as u64,
            chunks: Some(small.into_iter().map(|(i, _)| i).collect()),
        });
    }
    found.sort_by(|a, b| (a.cost, &a.path).cmp(&(b.cost, &b.path)));
    let mut total = 0u64;
    let mut accepted = Vec::new();
    for c in found {
        if total.saturating_add(c.cost) > policy.inline_total_bytes {
            left.push(LeftReferenced {
                array: c.path,
                references: c.references,
                bytes: c.cost,
                reason: LeftReason::TotalLimit {
                    limit: policy.inline_total_bytes,
                },
            });
            continue;
        }
        total += c.cost;
        accepted.push(c);
    }
    left.sort_by(|a, b| a.array.cmp(&b.array));
    (accepted, left)
}

/// The referenced chunks a candidate needs read, as (chunk, source, range), skipping those
/// whose bytes the scan kept.
fn wanted<'a>(a: &'a VirtualArray, c: &Candidate) -> Vec<(usize, &'a str, std::ops::Range<u64>)> {
    let pick = |(i, r): (usize, ChunkRef<'a>)| match r {
        ChunkRef::Range {
            source,
            offset,
            length,
        } if a.manifest.fetched(i).is_none() => {
            Some((i, source, offset..offset.saturating_add(length)))
        }
        _ => None,
    };
    match &c.chunks {
        None => a.manifest.iter_stored().filter_map(pick).collect(),
        Some(chunks) => chunks
            .iter()
            .filter_map(|&i| pick((i, a.manifest.get(i))))
            .collect(),
    }
}

/// Inlines the accepted candidates, in batches of at most [`READ_BATCH_BYTES`] read.
fn inline_all(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    accepted: Vec<Candidate>,
    reader: &dyn SourceStore,
    report: &mut CompactReport,
) -> Result<(), PlanError> {
    let mut batch: Vec<Candidate> = Vec::new();
    let mut batch_bytes = 0u64;
    let mut pending = accepted.into_iter().peekable();
    while let Some(c) = pending.next() {
        batch_bytes = batch_bytes.saturating_add(
            ds.arrays
                .get(&c.path)
                .map_or(0, |a| a.manifest.stats().referenced_bytes),
        );
        batch.push(c);
        if batch_bytes >= READ_BATCH_BYTES || pending.peek().is_none() {
            inline_batch(ds, policy, std::mem::take(&mut batch), reader, report)?;
            batch_bytes = 0;
        }
    }
    Ok(())
}

/// Reads a batch's chunks (one read per source) and inlines each candidate; a candidate that
/// cannot be read or decoded stays as it was and is reported.
fn inline_batch(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    batch: Vec<Candidate>,
    reader: &dyn SourceStore,
    report: &mut CompactReport,
) -> Result<(), PlanError> {
    let arrays: Vec<(Candidate, VirtualArray)> = batch
        .into_iter()
        .filter_map(|c| ds.arrays.remove(&c.path).map(|a| (c, a)))
        .collect();
    let requests: Vec<Vec<(usize, &str, std::ops::Range<u64>)>> =
        arrays.iter().map(|(c, a)| wanted(a, c)).collect();
    let flat: Vec<(&str, std::ops::Range<u64>)> = requests
        .iter()
        .flatten()
        .map(|(_, s, r)| (*s, r.clone()))
        .collect();
    // One batch for all; if it fails, each candidate alone, so that the failure is its own.
    let together = read_across(reader, &flat, READ_FILES).ok();
    let mut got: Vec<Result<BTreeMap<usize, Bytes>, ReadError>> = Vec::new();
    let mut pos = 0;
    for req in &requests {
        let bytes = match &together {
            Some(all) => Ok(all[pos..pos + req.len()].to_vec()),
            None => {
                let mine: Vec<(&str, std::ops::Range<u64>)> =
                    req.iter().map(|(_, s, r)| (*s, r.clone())).collect();
                read_across(reader, &mine, READ_FILES).map_err(ReadError::from)
            }
        };
        pos += req.len();
        got.push(bytes.map(|b| req.iter().map(|(i, _, _)| *i).zip(b).collect()));
    }
    drop(requests);
    let done: Vec<(Candidate, VirtualArray, Result<VirtualArray, String>)> = arrays
        .into_par_iter()
        .zip(got)
        .map(|((c, a), read)| {
            let r = read
                .map_err(|e| chain_text(&e))
                .and_then(|chunks| inline_one(&a, &c, chunks, policy));
            (c, a, r)
        })
        .collect();
    for (c, old, r) in done {
        match r {
            Ok(new) => {
                report.references_inlined += c.references;
                report
                    .arrays
                    .entry(c.path.clone())
                    .or_default()
                    .push(action(&c));
                ds.arrays.insert(c.path, new);
            }
            Err(error) => {
                report.left_referenced.push(LeftReferenced {
                    array: c.path.clone(),
                    references: c.references,
                    bytes: c.cost,
                    reason: LeftReason::Failed { error },
                });
                ds.arrays.insert(c.path, old);
            }
        }
    }
    report.left_referenced.sort_by(|a, b| a.array.cmp(&b.array));
    Ok(())
}

/// `a` with the candidate's chunks inline, from the chunks read (by position) and those the
/// scan kept.
fn inline_one(
    a: &VirtualArray,
    c: &Candidate,
    mut read: BTreeMap<usize, Bytes>,
    policy: &SmallChunkPolicy,
) -> Result<VirtualArray, String> {
    let mut encoded = |i: usize| -> Option<Vec<u8>> {
        match a.manifest.get(i) {
            ChunkRef::Missing => None,
            ChunkRef::Inline(b) => Some(b.to_vec()),
            ChunkRef::Range { .. } => read
                .remove(&i)
                .or_else(|| a.manifest.fetched(i).cloned())
                .map(|b| b.to_vec()),
        }
    };
    match &c.chunks {
        Some(chunks) => {
            let mut out = a.clone();
            for &i in chunks {
                let bytes = encoded(i).ok_or("a chunk was not read")?;
                out.manifest
                    .set_inline(i, bytes)
                    .map_err(|e| e.to_string())?;
            }
            Ok(out)
        }
        None => {
            let all: Vec<Option<Vec<u8>>> = (0..a.manifest.len()).map(&mut encoded).collect();
            let raw = values::assemble(a, all).map_err(|e| chain_text(&e))?;
            kept_inline(a, &raw, policy.target_chunk_bytes)
        }
    }
}

/// Arrays kept inline that decode to fewer bytes are stored without compression.
const COMPRESS_FROM_BYTES: u64 = 256;

/// The codecs of an array kept inline, decided by its metadata alone (so that files of one
/// archive get the same): none for arrays under [`COMPRESS_FROM_BYTES`], else `zstd`, after
/// `numcodecs.shuffle` for elements of several bytes.
fn inline_codecs(a: &VirtualArray, decoded: u64) -> Vec<Codec> {
    let zstd = Codec::Zstd { level: ZSTD_LEVEL };
    match a.data_type.size() {
        _ if decoded < COMPRESS_FROM_BYTES => vec![],
        1 => vec![zstd],
        n => vec![Codec::Shuffle { element_size: n }, zstd],
    }
}

/// `template` holding `raw` (its whole C-order bytes, in its byte order) in inline chunks of
/// up to `target` bytes along axis 0, compressed as the module documentation says.
fn kept_inline(template: &VirtualArray, raw: &[u8], target: u64) -> Result<VirtualArray, String> {
    let dt = template.data_type.clone();
    let fill = template.fill_value.bytes_in(dt.clone(), template.endian);
    let shape = template.shape();
    let (grid, chunks) = inline::chunks_along_axis0(&shape, dt.size(), target, raw, &fill)
        .map_err(|e| chain_text(&e))?;
    let all_fill = |c: &[u8]| !fill.is_empty() && c.chunks(fill.len()).all(|e| e == fill);
    let codecs = inline_codecs(template, raw.len() as u64);
    let chain = ByteCodecs::new(&codecs).map_err(|e| chain_text(&e))?;
    let mut manifest = vzarr_core::ChunkManifest::new_missing(chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        if all_fill(c) {
            continue;
        }
        let bytes = chain.encode(c).map_err(|e| chain_text(&e))?;
        manifest.set_inline(i, bytes).map_err(|e| chain_text(&e))?;
    }
    Ok(VirtualArray {
        codecs,
        grid,
        manifest,
        ..template.clone()
    })
}

/// An error and its causes on one line, each once.
fn chain_text(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::{ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue};
    use vzarr_source::MemStore;

    const F: &str = "mem://f";

    /// A file of `records` records of 12 bytes from offset 100: a big-endian float32 (`a`,
    /// the record number) then a big-endian float64 (`b`, ten times it), as a NetCDF3 file
    /// with two record variables lays them out.
    fn file(records: u64) -> Vec<u8> {
        let mut bytes = vec![0u8; 100];
        for r in 0..records {
            bytes.extend((r as f32).to_be_bytes());
            bytes.extend((r as f64 * 10.0).to_be_bytes());
        }
        bytes.extend([0xEE; 4000]);
        bytes
    }

    fn array(dt: DataType, dims: Vec<DimGrid>, refs: &[(u64, u64)]) -> VirtualArray {
        let grid = ChunkGrid::new(dims);
        let mut manifest = ChunkManifest::new_missing(grid.n_chunks().unwrap() as usize);
        let sid = manifest.intern(F).unwrap();
        for (i, &(off, len)) in refs.iter().enumerate() {
            manifest.set_range(i, sid, off, len).unwrap();
        }
        VirtualArray {
            data_type: dt.clone(),
            endian: Endian::Big,
            fill_value: FillValue::zero(dt),
            codecs: vec![],
            dimension_names: vec!["t".into()],
            attributes: Default::default(),
            grid,
            manifest,
        }
    }

    /// `a` and `b` interleaved (one reference per record), `c`: a chunk of 2,000 bytes and,
    /// not next to it, one of 1,000 (under the small size).
    fn dataset(records: u64) -> (VirtualDataset, MemStore) {
        let mut ds = VirtualDataset::new();
        let rec = |k: u64, len: u64| -> Vec<(u64, u64)> {
            (0..records).map(|r| (100 + 12 * r + k, len)).collect()
        };
        let t = || vec![DimGrid::fixed(1, records).unwrap()];
        ds.arrays
            .insert("a".into(), array(DataType::Float32, t(), &rec(0, 4)));
        ds.arrays
            .insert("b".into(), array(DataType::Float64, t(), &rec(4, 8)));
        let end = 100 + 12 * records;
        let mut c = array(
            DataType::UInt8,
            vec![DimGrid::varying(vec![2000, 1000], 3000).unwrap()],
            &[(end, 2000), (end + 2500, 1000)],
        );
        c.dimension_names = vec!["x".into()];
        ds.arrays.insert("c".into(), c);
        let mut s = MemStore::new();
        s.insert(F, file(records));
        (ds, s)
    }

    fn values(a: &VirtualArray, s: &MemStore) -> Vec<u8> {
        values::read_array(a, s).unwrap()
    }

    #[test]
    fn interleaved_records_are_kept_inline_with_their_values() {
        let (mut ds, store) = dataset(300);
        let before: Vec<Vec<u8>> = ds.arrays.values().map(|a| values(a, &store)).collect();
        let policy = SmallChunkPolicy::default();
        let survey = survey(&ds, &policy, Grids::Any);
        let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
        // Values unchanged, read through the new manifests (which read nothing).
        let reads = store.get(F).unwrap().reads();
        let after: Vec<Vec<u8>> = ds.arrays.values().map(|a| values(a, &store)).collect();
        assert_eq!(before, after);
        assert_eq!(
            store.get(F).unwrap().reads(),
            reads + 1,
            "only c's big chunk"
        );
        // a and b: one inline chunk each, shuffled and compressed; c: its 1000-byte chunk
        // copied inline as it is, its 2000-byte chunk still referenced.
        let a = &ds.arrays["a"];
        assert_eq!(a.grid, ChunkGrid::regular(&[300], &[300]).unwrap());
        assert_eq!(
            a.codecs,
            vec![
                Codec::Shuffle { element_size: 4 },
                Codec::Zstd { level: ZSTD_LEVEL }
            ]
        );
        assert!(matches!(a.manifest.get(0), ChunkRef::Inline(_)));
        let c = &ds.arrays["c"].manifest;
        assert!(matches!(c.get(0), ChunkRef::Range { length: 2000, .. }));
        assert!(matches!(c.get(1), ChunkRef::Inline(b) if b.len() == 1000));
        assert_eq!(
            (
                r.references_before,
                r.references_after,
                r.references_inlined
            ),
            (602, 1, 601)
        );
        assert_eq!(
            r.arrays["b"],
            vec![ArrayAction::Inlined {
                references: 300,
                bytes: 2400
            }]
        );
        assert!(r.left_referenced.is_empty());
        assert!(r.inline_bytes > 1000);
        // The survey said as much without reading.
        assert_eq!(survey.references_after, 1);
        assert_eq!(survey.arrays, r.arrays);
        // The default policy is not recorded.
        assert_eq!(ds.provenance.small_chunks, None);
    }

    #[test]
    fn limits_leave_arrays_referenced_cheapest_first() {
        let (mut ds, store) = dataset(300);
        // a decodes to 1,200 bytes, b to 2,400, c's small chunk is 1,000: c fits, then a
        // does not.
        let policy = SmallChunkPolicy::default()
            .with_inline_array_bytes(2000)
            .with_inline_total_bytes(2000);
        let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
        assert_eq!(
            r.left_referenced,
            vec![
                LeftReferenced {
                    array: "a".into(),
                    references: 300,
                    bytes: 1200,
                    reason: LeftReason::TotalLimit { limit: 2000 }
                },
                LeftReferenced {
                    array: "b".into(),
                    references: 300,
                    bytes: 2400,
                    reason: LeftReason::ArrayLimit { limit: 2000 }
                },
            ]
        );
        assert!(
            r.left_referenced[1]
                .to_string()
                .contains("300 small references")
        );
        assert_eq!(ds.arrays["b"].manifest.stats().referenced, 300);
        assert_eq!(ds.arrays["a"].manifest.stats().referenced, 300);
        assert_eq!(ds.arrays["c"].manifest.stats().referenced, 1);
        assert_eq!(ds.provenance.small_chunks, Some(policy));
    }

    #[test]
    fn an_array_that_cannot_be_read_stays_as_it_was() {
        let (mut ds, store) = dataset(50);
        // b's references point past the end of the file.
        let b = ds.arrays.get_mut("b").unwrap();
        let sid = b.manifest.intern(F).unwrap();
        b.manifest.set_range(7, sid, 1 << 40, 8).unwrap();
        let old = b.clone();
        let r = compact(&mut ds, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
        assert_eq!(ds.arrays["b"], old);
        assert_eq!(r.left_referenced.len(), 1);
        assert!(
            matches!(&r.left_referenced[0].reason, LeftReason::Failed { error } if error.contains("mem://f")),
            "{:?}",
            r.left_referenced
        );
        // The others were inlined all the same.
        assert_eq!(ds.arrays["a"].manifest.stats().referenced, 0);
    }

    #[test]
    fn keep_and_merge_copy_nothing() {
        let (mut ds, store) = dataset(40);
        let keep = SmallChunkPolicy::default().with_mode(SmallChunks::Keep);
        let before = ds.clone();
        let r = compact(&mut ds, &keep, Grids::Any, &store).unwrap();
        assert_eq!(ds.arrays, before.arrays);
        assert_eq!(r.references_after, r.references_before);
        assert_eq!(ds.provenance.small_chunks, Some(keep));
        // Merge: a single record variable's back-to-back records become one chunk.
        let mut ds = VirtualDataset::new();
        let refs: Vec<(u64, u64)> = (0..40).map(|r| (100 + 4 * r, 4)).collect();
        let one = array(
            DataType::Float32,
            vec![DimGrid::fixed(1, 40).unwrap()],
            &refs,
        );
        ds.arrays.insert("a".into(), one.clone());
        let merge = SmallChunkPolicy::default().with_mode(SmallChunks::Merge);
        let r = compact(&mut ds, &merge, Grids::Any, &store).unwrap();
        assert_eq!(r.references_merged, 39);
        assert_eq!(values(&ds.arrays["a"], &store), values(&one, &store));
        assert!(matches!(
            ds.arrays["a"].manifest.get(0),
            ChunkRef::Range {
                offset: 100,
                length: 160,
                ..
            }
        ));
    }

    #[test]
    fn a_rectilinear_merge_waits_for_inlining() {
        // Records back to back whose count has no divisor near the target: merged, the axis
        // would be rectilinear.
        let (_, store) = dataset(400);
        let run = |records: u64, policy: SmallChunkPolicy| {
            let refs: Vec<(u64, u64)> = (0..records).map(|r| (100 + 4 * r, 4)).collect();
            let one = array(
                DataType::Float32,
                vec![DimGrid::fixed(1, records).unwrap()],
                &refs,
            );
            let mut ds = VirtualDataset::new();
            ds.arrays.insert("a".into(), one.clone());
            let r = compact(&mut ds, &policy, Grids::Any, &store).unwrap();
            assert_eq!(values(&ds.arrays["a"], &store), values(&one, &store));
            (ds.arrays["a"].clone(), r)
        };
        let small = SmallChunkPolicy::default().with_target_chunk_bytes(64);
        // Kept inline instead, in regular chunks of 16 values.
        let (a, r) = run(97, small);
        assert_eq!(a.grid, ChunkGrid::regular(&[97], &[16]).unwrap());
        assert_eq!(a.manifest.stats().referenced, 0);
        assert_eq!(r.references_merged, 0);
        // No room to inline: merged after all (6 x 16 + 1), still small: reported so.
        let (a, r) = run(97, small.with_inline_total_bytes(100));
        assert!(!a.grid.is_regular());
        assert_eq!((r.references_merged, r.references_after), (90, 7));
        assert_eq!(r.arrays["a"], vec![ArrayAction::Merged { from: 97, to: 7 }]);
        assert_eq!(r.left_referenced.len(), 1);
        assert_eq!(r.left_referenced[0].references, 7);
        // Merged into references of 2 KiB (1,009 records: 512 + 497): no longer small.
        let big = SmallChunkPolicy::default()
            .with_target_chunk_bytes(2048)
            .with_inline_total_bytes(100);
        let (a, r) = run(1009, big);
        assert_eq!(
            a.grid.dims()[0],
            DimGrid::from_edges(vec![512, 497], 1009).unwrap()
        );
        assert_eq!(
            r.arrays["a"],
            vec![ArrayAction::Merged { from: 1009, to: 2 }]
        );
        assert!(r.left_referenced.is_empty(), "{:?}", r.left_referenced);
    }

    #[test]
    fn the_same_input_gives_the_same_output() {
        let run = || {
            let (mut ds, store) = dataset(120);
            compact(&mut ds, &SmallChunkPolicy::default(), Grids::Any, &store).unwrap();
            ds.arrays
                .iter()
                .map(|(p, a)| (p.clone(), a.zarr_metadata(), a.manifest.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn chunks_of_fill_values_are_not_stored() {
        let mut ds = VirtualDataset::new();
        // 4,096 float32 zeros then a one, in chunks of 64 values compressed... referenced as
        // one tiny compressed chunk each: kept inline in 4 KiB chunks, the all-zero ones not
        // stored.
        let n = 4097u64;
        let mut raw = vec![0u8; 4 * n as usize];
        raw[4 * 4096..].copy_from_slice(&1f32.to_be_bytes());
        let codecs = vec![Codec::Zlib { level: 1 }];
        let chain = ByteCodecs::new(&codecs).unwrap();
        let mut file = Vec::new();
        let mut refs = Vec::new();
        for c in raw.chunks(256) {
            let mut c = c.to_vec();
            c.resize(256, 0);
            let enc = chain.encode(&c).unwrap();
            refs.push((file.len() as u64, enc.len() as u64));
            file.extend(enc);
        }
        let mut a = array(
            DataType::Float32,
            vec![DimGrid::fixed(64, n).unwrap()],
            &refs,
        );
        a.codecs = codecs;
        ds.arrays.insert("z".into(), a.clone());
        let mut store = MemStore::new();
        store.insert(F, file);
        let policy = SmallChunkPolicy::default().with_target_chunk_bytes(4096);
        compact(&mut ds, &policy, Grids::Any, &store).unwrap();
        let z = &ds.arrays["z"];
        assert_eq!(z.grid, ChunkGrid::regular(&[n], &[1024]).unwrap());
        assert_eq!(z.manifest.stored(), 1);
        assert_eq!(values(z, &store), values(&a, &store));
    }
}
