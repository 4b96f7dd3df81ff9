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
    pub(super) bytes: u64,
    /// What keeping it inline is expected to store, the order of inlining (cheapest first):
    /// for a whole array, the bytes it references (re-encoded, an array takes about as much
    /// or less), at most its decoded bytes; for chunks, their bytes (copied as stored).
    pub(super) estimate: u64,
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
            bytes: c.bytes,
        },
        Some(chunks) => ArrayAction::SmallChunksInlined {
            chunks: chunks.len() as u64,
            bytes: c.bytes,
        },
    }
}

/// Whether `a` is one to keep inline as a whole, its references (not strings) averaging
/// under [`SMALL_REFERENCE_BYTES`]: `Some(Ok(decoded bytes))` when it may be read and decoded
/// for that (it decodes to, and references, at most the policy's
/// [`SmallChunkPolicy::inline_decoded_bytes`]; whether what it stores re-encoded fits the
/// per-array bound is known once it is), `Some(Err(decoded bytes))` beyond that, `None` when
/// it is not one.
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
    let limit = policy.inline_decoded_bytes();
    Some(if bytes <= limit && stats.referenced_bytes <= limit {
        Ok(bytes)
    } else {
        Err(bytes)
    })
}

/// Whether `a` is expected to be kept inline as a whole: it may be decoded for that
/// ([`whole_inline`]) and the bytes it references (what it is expected to store, at most its
/// decoded bytes) fit the per-array bound.
pub(super) fn expected_inline(a: &VirtualArray, policy: &SmallChunkPolicy) -> bool {
    matches!(whole_inline(a, policy), Some(Ok(bytes))
        if a.manifest.stats().referenced_bytes.min(bytes) <= policy.inline_array_bytes)
}

/// The decoded size of `a`, if it fits a `u64`.
fn decoded_bytes(a: &VirtualArray) -> Option<u64> {
    a.shape()
        .iter()
        .try_fold(a.data_type.size() as u64, |acc, &d| acc.checked_mul(d))
}

/// What to inline, cheapest first (by expected stored bytes, then path), and what is left
/// referenced before anything is read: arrays that decode past the decoding bound, small
/// chunks over the per-array bound. The per-array bound on arrays kept whole, and the total,
/// are applied as they are encoded ([`super::read`]), or by their estimate in a survey
/// ([`within_total`]).
pub(super) fn candidates(
    ds: &VirtualDataset,
    policy: &SmallChunkPolicy,
) -> (Vec<Candidate>, Vec<LeftReferenced>) {
    let mut found = Vec::new();
    let mut left = Vec::new();
    for (path, a) in &ds.arrays {
        match whole_inline(a, policy) {
            Some(Ok(bytes)) => {
                let stats = a.manifest.stats();
                found.push(Candidate {
                    path: path.clone(),
                    bytes,
                    estimate: stats.referenced_bytes.min(bytes),
                    references: stats.referenced,
                    chunks: None,
                });
                continue;
            }
            Some(Err(bytes)) => {
                left.push(LeftReferenced {
                    array: path.clone(),
                    references: a.manifest.stats().referenced,
                    bytes,
                    reason: LeftReason::DecodeLimit {
                        limit: policy.inline_decoded_bytes(),
                    },
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
                reason: LeftReason::ArrayLimit {
                    limit: policy.inline_array_bytes,
                },
            });
            continue;
        }
        found.push(Candidate {
            path: path.clone(),
            bytes,
            estimate: bytes,
            references: small.len() as u64,
            chunks: Some(small.into_iter().map(|(i, _)| i).collect()),
        });
    }
    found.sort_by(|a, b| (a.estimate, &a.path).cmp(&(b.estimate, &b.path)));
    left.sort_by(|a, b| a.array.cmp(&b.array));
    (found, left)
}

/// The candidates a survey (nothing read) takes: those whose estimate fits the per-array
/// bound and, cheapest first, the total; the others are added to `left`.
pub(super) fn within_total(
    found: Vec<Candidate>,
    policy: &SmallChunkPolicy,
    left: &mut Vec<LeftReferenced>,
) -> Vec<Candidate> {
    let mut total = 0u64;
    let mut accepted = Vec::new();
    for c in found {
        let reason = if c.chunks.is_none() && c.estimate > policy.inline_array_bytes {
            LeftReason::ArrayLimit {
                limit: policy.inline_array_bytes,
            }
        } else if total.saturating_add(c.estimate) > policy.inline_total_bytes {
            LeftReason::TotalLimit {
                limit: policy.inline_total_bytes,
            }
        } else {
            total += c.estimate;
            accepted.push(c);
            continue;
        };
        left.push(LeftReferenced {
            array: c.path,
            references: c.references,
            bytes: c.estimate,
            reason,
        });
    }
    left.sort_by(|a, b| a.array.cmp(&b.array));
    accepted
}
