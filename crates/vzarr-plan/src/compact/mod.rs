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
//! Bounds count what the output stores, as written: an array is inlined only if its chunks
//! re-encoded take at most the policy's per-array bytes, and a build stores at most the
//! policy's total inline, the cheapest first (by expected stored bytes: the bytes an array
//! references, then path; the bounds are checked on what each array takes once encoded).
//! Decoding is bounded apart: an array is read and decoded only if it decodes to (and
//! references) at most [`SmallChunkPolicy::inline_decoded_bytes`] (16 times the per-array
//! bound), and a batch decodes at most [`DECODE_BATCH_BYTES`] at once (or one array). What is left referenced in small pieces is
//! reported by name with its reference count. Reads go out in batches of at most
//! [`READ_BATCH_BYTES`], one coalesced read per source, 32 sources at once. An
//! array that cannot be read or decoded stays as it was, and is reported.
//!
//! | module | what it does |
//! |---|---|
//! | `select` | which arrays and chunks to keep inline, within the bounds |
//! | `read` | reading, decoding and re-encoding what is kept inline |

mod read;
mod select;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use rayon::prelude::*;
use vzarr_core::small::SMALL_REFERENCE_BYTES;
use vzarr_core::{SmallChunkPolicy, SmallChunks, VirtualArray, VirtualDataset};
use vzarr_source::SourceStore;

use crate::error::PlanError;
use crate::merge;
use read::inline_all;
pub(crate) use read::kept_inline;
use select::{action, candidates, expected_inline, within_total};

/// Referenced bytes read for inlining at once at most.
pub const READ_BATCH_BYTES: u64 = 64 << 20;
/// Decoded bytes of the arrays inlined at once at most (one array alone may decode to more,
/// up to the policy's [`SmallChunkPolicy::inline_decoded_bytes`]).
pub const DECODE_BATCH_BYTES: u64 = 256 << 20;

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
    /// What it would store inline (its chunks re-encoded, or the small chunks as stored) is
    /// more than the per-array bound.
    ArrayLimit {
        /// The bound.
        limit: u64,
    },
    /// It decodes to (or references) more than inlining decodes
    /// ([`SmallChunkPolicy::inline_decoded_bytes`]).
    DecodeLimit {
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
    /// Bytes inlining would have stored (the array re-encoded, or the small chunks as
    /// stored; in a survey, the bytes the array references), or, past the decoding bound, the
    /// bytes it decodes to.
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
            LeftReason::DecodeLimit { limit } => write!(
                f,
                "it decodes to {}, above the {} inlining decodes at most (16 times the \
                 per-array limit)",
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
        let (found, left) = candidates(ds, policy);
        report.left_referenced = left;
        match reader {
            Some(reader) => inline_all(ds, policy, found, reader, &mut report)?,
            None => {
                let accepted = within_total(found, policy, &mut report.left_referenced);
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

/// Merges adjacent chunks of every array that has references, but for merges that would
/// make a grid rectilinear where the array is expected to be kept inline instead (it may be
/// decoded, and what it references fits the per-array bound): those are returned, by path,
/// to be applied if it is not.
fn merge_all(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    grids: Grids,
    report: &mut CompactReport,
) -> Result<BTreeMap<String, VirtualArray>, PlanError> {
    let all: Vec<(&String, &VirtualArray)> = ds.arrays.iter().collect();
    let merged: Vec<Result<Option<(String, VirtualArray)>, PlanError>> = all
        .into_par_iter()
        .map(|(path, a)| Ok(merged(a, policy, grids)?.map(|m| (path.clone(), m))))
        .collect();
    let mut waiting = BTreeMap::new();
    for r in merged {
        let Some((path, a)) = r? else { continue };
        let old = &ds.arrays[&path];
        if policy.mode == SmallChunks::Inline
            && a.grid.is_regular() != old.grid.is_regular()
            && expected_inline(old, policy)
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
