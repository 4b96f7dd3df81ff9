//! Which arrays, and which chunks of other arrays, are kept inline: the rules of the
//! [module documentation](super), within the policy's bounds, cheapest first.

use vzarr_core::small::SMALL_REFERENCE_BYTES;
use vzarr_core::{ChunkRef, SmallChunkPolicy, VirtualArray, VirtualDataset};

use super::{ArrayAction, LeftReason, LeftReferenced};

/// An array or some of its chunks to keep inline.
pub(super) struct Candidate {
    /// The array's path.
    pub(super) path: String,
    /// Decoded bytes (whole array) or the chunks' bytes.
    pub(super) cost: u64,
    /// References it replaces.
    pub(super) references: u64,
    /// `None`: the whole array; else these chunks.
    pub(super) chunks: Option<Vec<usize>>,
}

/// What keeping `c` inline does to its array.
pub(super) fn action(c: &Candidate) -> ArrayAction {
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

/// Whether `a` is one to keep inline as a whole, its references (not strings) averaging
/// under [`SMALL_REFERENCE_BYTES`]: `Some(Ok(decoded bytes))` within the per-array bound (on
/// its decoded size and on the bytes it references), `Some(Err(decoded bytes))` beyond it,
/// `None` when it is not one.
pub(super) fn whole_inline(
    a: &VirtualArray,
    policy: &SmallChunkPolicy,
) -> Option<Result<u64, u64>> {
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

/// The decoded size of `a`, if it fits a `u64`.
fn decoded_bytes(a: &VirtualArray) -> Option<u64> {
    a.shape()
        .iter()
        .try_fold(a.data_type.size() as u64, |acc, &d| acc.checked_mul(d))
}

/// What to inline, within the policy's bounds (cheapest first), and what is left referenced.
pub(super) fn candidates(
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
