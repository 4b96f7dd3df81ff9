//! Reading, decoding and re-encoding what is kept inline: batches of at most
//! [`READ_BATCH_BYTES`](super::READ_BATCH_BYTES) read and
//! [`DECODE_BATCH_BYTES`](super::DECODE_BATCH_BYTES) decoded, one coalesced read per source,
//! many sources at once; arrays re-chunked along their first axis and compressed, kept inline
//! when what they then store fits the bounds.

use std::collections::BTreeMap;

use rayon::prelude::*;
use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkRef, Codec, SmallChunkPolicy, VirtualArray, VirtualDataset, error_chain};
use vzarr_source::{Bytes, SourceStore, read_across};

use super::select::{Candidate, action};
use super::{CompactReport, DECODE_BATCH_BYTES, LeftReason, LeftReferenced, READ_BATCH_BYTES};
use crate::error::{PlanError, ReadError};
use crate::prefetch::READ_FILES;
use crate::{inline, values};

/// The `zstd` level of chunks kept inline.
pub(super) const ZSTD_LEVEL: i32 = 3;

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

/// Inlines the candidates (cheapest first), in batches of at most [`READ_BATCH_BYTES`] read
/// and [`DECODE_BATCH_BYTES`] decoded, each within the per-array bound and, in order, the
/// total (both on what it stores once encoded); once the total is reached, the rest are not
/// read.
pub(super) fn inline_all(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    candidates: Vec<Candidate>,
    reader: &dyn SourceStore,
    report: &mut CompactReport,
) -> Result<(), PlanError> {
    // Arrays leave the dataset while they are read and come back after: back in their place.
    let places: std::collections::HashMap<String, usize> = ds
        .arrays
        .keys()
        .enumerate()
        .map(|(k, p)| (p.clone(), k))
        .collect();
    let mut stored = 0u64;
    let mut batch: Vec<Candidate> = Vec::new();
    let (mut batch_read, mut batch_decoded) = (0u64, 0u64);
    let mut pending = candidates.into_iter().peekable();
    while let Some(c) = pending.next() {
        if stored >= policy.inline_total_bytes {
            report.left_referenced.push(LeftReferenced {
                array: c.path,
                references: c.references,
                bytes: c.estimate,
                reason: LeftReason::TotalLimit {
                    limit: policy.inline_total_bytes,
                },
            });
        } else {
            batch_read = batch_read.saturating_add(
                ds.arrays
                    .get(&c.path)
                    .map_or(0, |a| a.manifest.stats().referenced_bytes),
            );
            if c.chunks.is_none() {
                batch_decoded = batch_decoded.saturating_add(c.bytes);
            }
            batch.push(c);
        }
        let full = batch_read >= READ_BATCH_BYTES || batch_decoded >= DECODE_BATCH_BYTES;
        if !batch.is_empty() && (full || pending.peek().is_none()) {
            let b = std::mem::take(&mut batch);
            inline_batch(ds, policy, b, reader, &mut stored, report)?;
            (batch_read, batch_decoded) = (0, 0);
        }
    }
    ds.arrays
        .sort_by_cached_key(|p, _| places.get(p).copied().unwrap_or(usize::MAX));
    report.left_referenced.sort_by(|a, b| a.array.cmp(&b.array));
    Ok(())
}

/// The bytes the inline chunks of `a` take.
fn inline_bytes(a: &VirtualArray) -> u64 {
    a.manifest
        .iter_stored()
        .map(|(_, r)| match r {
            ChunkRef::Inline(b) => b.len() as u64,
            _ => 0,
        })
        .sum()
}

/// Reads a batch's chunks (one read per source) and inlines each candidate, in order, that
/// stores within the per-array bound and, with what is `stored` inline so far, the total; a
/// candidate over a bound, or that cannot be read or decoded, stays as it was and is
/// reported.
fn inline_batch(
    ds: &mut VirtualDataset,
    policy: &SmallChunkPolicy,
    batch: Vec<Candidate>,
    reader: &dyn SourceStore,
    stored: &mut u64,
    report: &mut CompactReport,
) -> Result<(), PlanError> {
    let arrays: Vec<(Candidate, VirtualArray)> = batch
        .into_iter()
        .filter_map(|c| ds.arrays.shift_remove(&c.path).map(|a| (c, a)))
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
                .map_err(|e| error_chain(&e))
                .and_then(|chunks| inline_one(&a, &c, chunks, policy));
            (c, a, r)
        })
        .collect();
    for (c, old, r) in done {
        let (new, bytes) = match r {
            Ok(new) => {
                // Copied chunks take their bytes as stored; an array kept whole, its chunks
                // as encoded.
                let bytes = if c.chunks.is_some() {
                    c.bytes
                } else {
                    inline_bytes(&new)
                };
                (new, bytes)
            }
            Err(error) => {
                report.left_referenced.push(LeftReferenced {
                    array: c.path.clone(),
                    references: c.references,
                    bytes: c.bytes,
                    reason: LeftReason::Failed { error },
                });
                ds.arrays.insert(c.path, old);
                continue;
            }
        };
        let over = if bytes > policy.inline_array_bytes {
            Some(LeftReason::ArrayLimit {
                limit: policy.inline_array_bytes,
            })
        } else if stored.saturating_add(bytes) > policy.inline_total_bytes {
            Some(LeftReason::TotalLimit {
                limit: policy.inline_total_bytes,
            })
        } else {
            None
        };
        if let Some(reason) = over {
            report.left_referenced.push(LeftReferenced {
                array: c.path.clone(),
                references: c.references,
                bytes,
                reason,
            });
            ds.arrays.insert(c.path, old);
            continue;
        }
        *stored += bytes;
        report.references_inlined += c.references;
        report
            .arrays
            .entry(c.path.clone())
            .or_default()
            .push(action(&c));
        ds.arrays.insert(c.path, new);
    }
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
            let raw = values::assemble(a, all).map_err(|e| error_chain(&e))?;
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
pub(crate) fn kept_inline(
    template: &VirtualArray,
    raw: &[u8],
    target: u64,
) -> Result<VirtualArray, String> {
    let dt = template.data_type.clone();
    let fill = template.fill_value.bytes_in(dt.clone(), template.endian);
    let shape = template.shape();
    let (grid, chunks) = inline::chunks_along_axis0(&shape, dt.size(), target, raw, &fill)
        .map_err(|e| error_chain(&e))?;
    let all_fill = |c: &[u8]| !fill.is_empty() && c.chunks(fill.len()).all(|e| e == fill);
    let codecs = inline_codecs(template, raw.len() as u64);
    let chain = ByteCodecs::new(&codecs).map_err(|e| error_chain(&e))?;
    let mut manifest = vzarr_core::ChunkManifest::new_missing(chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        if all_fill(c) {
            continue;
        }
        let bytes = chain.encode(c).map_err(|e| error_chain(&e))?;
        manifest.set_inline(i, bytes).map_err(|e| error_chain(&e))?;
    }
    Ok(VirtualArray {
        codecs,
        grid,
        manifest,
        ..template.clone()
    })
}
