//! What the planner needs from every file, read up front: once per plan, as one batch of
//! ranges per file (which the byte layer coalesces, mostly into one request), up to
//! [`READ_FILES`] files at once.
//!
//! - The values of the concatenation coordinate (and of its CF bounds), decoded into numbers
//!   and kept for ordering and re-encoding, so that neither pass reads them again.
//! - The chunks of variables that must be identical in every file, compared as they arrive
//!   with those of the first input (the anchor) and dropped: only which files agree with the
//!   anchor is kept. Agreement (the same encoded bytes, or the same bytes once decoded, under
//!   the same metadata) is an equivalence, so files that all agree with the anchor agree with
//!   each other, whatever the order. Anything else (a difference, a read or decode that
//!   failed, an array over the budget) is left to the exact check of
//!   [`crate::compat::check_identical`], which reads on demand and names the files.
//!
//! A read that fails here is not an error: the planner reads again where it needs the bytes
//! and reports the failure there, in the order it always has.
//! [`read_numbers`] is that second read for a numeric variable: its values as read up front,
//! else read now.
//!
//! Memory: at most [`READ_FILES`] files' reads at once, each of at most [`FILE_BYTES`]
//! referenced bytes (arrays beyond the budget are read later, on demand) plus what the byte
//! layer's coalescing adds between them; the anchor's static chunks (at most [`FILE_BYTES`]);
//! and every file's decoded coordinate values (8 bytes a value).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::sync::OnceLock;

use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkRef, VirtualArray};
use vzarr_source::{Bytes, SourceStore, parallel_map, read_across};

use crate::error::PlanError;
use crate::input::Input;
use crate::values;

/// Files read at once.
pub(crate) const READ_FILES: usize = 32;

/// Referenced bytes read up front per file at most: arrays beyond are read on demand.
pub(crate) const FILE_BYTES: u64 = 4 << 20;

/// What one file's batch of reads gave.
#[derive(Default)]
struct FileRead {
    /// Decoded values by array path.
    numbers: HashMap<String, Vec<f64>>,
    /// Bytes of the referenced chunks read, by static array path and chunk.
    statics: BTreeMap<String, BTreeMap<usize, Bytes>>,
}

/// What the planner knows about one file before planning.
#[derive(Default)]
struct FileFacts {
    /// Decoded values by array path.
    numbers: HashMap<String, Vec<f64>>,
    /// Static arrays found identical to the anchor's.
    same: HashSet<String>,
}

/// What was read up front, by input position.
#[derive(Default)]
pub(crate) struct Prefetched {
    files: Vec<FileFacts>,
}

impl Prefetched {
    /// The decoded values of array `path` of the input at `pos`, if read up front.
    pub(crate) fn numbers(&self, pos: usize, path: &str) -> Option<&[f64]> {
        self.files.get(pos)?.numbers.get(path).map(Vec::as_slice)
    }

    /// Whether array `path` was found identical in every one of `inputs`.
    pub(crate) fn all_same(&self, inputs: &[&Input], path: &str) -> bool {
        inputs
            .iter()
            .all(|i| self.files.get(i.pos).is_some_and(|f| f.same.contains(path)))
    }
}

/// The values of a numeric variable of one file, as f64: as read up front, else read now.
pub(crate) fn read_numbers(
    input: &Input,
    path: &str,
    a: &VirtualArray,
    reader: &dyn SourceStore,
    pre: &Prefetched,
) -> Result<Vec<f64>, PlanError> {
    if let Some(v) = pre.numbers(input.pos, path) {
        return Ok(v.to_vec());
    }
    let err = |source| PlanError::Read {
        file: input.url.clone(),
        variable: path.into(),
        source,
    };
    let raw = values::read_array(a, reader).map_err(err)?;
    values::as_f64(&raw, a.data_type.clone(), a.endian).map_err(err)
}

/// Reads, from every input, the arrays `numbers` names (decoded into numbers) and the arrays
/// `statics` names (compared with the first input's); see the module documentation.
pub(crate) fn gather(
    inputs: &[Input],
    numbers: &(dyn Fn(&Input) -> Vec<String> + Sync),
    statics: &(dyn Fn(&Input) -> Vec<String> + Sync),
    reader: &dyn SourceStore,
) -> Prefetched {
    let read = |input: &Input| read_file(input, &numbers(input), &statics(input), reader);
    // Read once, by whichever worker needs it first (the first input's worker starts with
    // it); the others wait for it only once their own file is read.
    let anchor: OnceLock<Option<FileRead>> = OnceLock::new();
    let anchor_read = || anchor.get_or_init(|| read(&inputs[0]).map(owned)).as_ref();
    let positions: Vec<usize> = (0..inputs.len()).collect();
    let files = parallel_map(&positions, READ_FILES, |&k| {
        if k == 0 {
            return anchor_read().map_or_else(FileFacts::default, |a| FileFacts {
                numbers: a.numbers.clone(),
                same: a.statics.keys().cloned().collect(),
            });
        }
        let Some(mine) = read(&inputs[k]) else {
            return FileFacts::default();
        };
        let same =
            anchor_read().map_or_else(HashSet::new, |a| agreeing(&inputs[0], a, &inputs[k], &mine));
        FileFacts {
            numbers: mine.numbers,
            same,
        }
    });
    Prefetched { files }
}

/// The read with its bytes copied out of the buffers of the reads (which may be much larger
/// than the chunks, coalescing having merged ranges far apart), to be kept.
fn owned(mut r: FileRead) -> FileRead {
    for chunks in r.statics.values_mut() {
        for b in chunks.values_mut() {
            *b = Bytes::copy_from_slice(b);
        }
    }
    r
}

/// One input's batch: the referenced chunks (not already at hand) of the arrays asked for,
/// within [`FILE_BYTES`], in one read per source; `None` if the read failed.
fn read_file(
    input: &Input,
    numbers: &[String],
    statics: &[String],
    reader: &dyn SourceStore,
) -> Option<FileRead> {
    let mut budget = FILE_BYTES;
    let mut chosen: Vec<(&str, &VirtualArray, bool)> = Vec::new();
    let asked = numbers
        .iter()
        .map(|p| (p, false))
        .chain(statics.iter().map(|p| (p, true)));
    for (path, is_static) in asked {
        let Some(a) = input.ds.arrays.get(path) else {
            continue;
        };
        let n = a.manifest.stats().referenced_bytes;
        if n <= budget {
            budget -= n;
            chosen.push((path, a, is_static));
        }
    }
    let mut requests: Vec<(&str, Range<u64>)> = Vec::new();
    let mut slots: Vec<(usize, usize)> = Vec::new();
    for (c, (_, a, _)) in chosen.iter().enumerate() {
        for (i, r) in a.manifest.iter_stored() {
            if let ChunkRef::Range {
                source,
                offset,
                length,
            } = r
                && a.manifest.fetched(i).is_none()
            {
                requests.push((source, offset..offset.checked_add(length)?));
                slots.push((c, i));
            }
        }
    }
    let got = if requests.is_empty() {
        Vec::new()
    } else {
        read_across(reader, &requests, 1).ok()?
    };
    let mut read: Vec<BTreeMap<usize, Bytes>> = vec![BTreeMap::new(); chosen.len()];
    for ((c, i), b) in slots.into_iter().zip(got) {
        read[c].insert(i, b);
    }
    let mut out = FileRead::default();
    for ((path, a, is_static), chunks) in chosen.into_iter().zip(read) {
        if is_static {
            out.statics.insert(path.to_string(), chunks);
            continue;
        }
        let encoded: Option<Vec<Option<Vec<u8>>>> = (0..a.manifest.len())
            .map(|i| encoded(a, i, &chunks).map(|e| e.map(<[u8]>::to_vec)))
            .collect();
        let values = encoded
            .and_then(|e| values::assemble(a, e).ok())
            .and_then(|raw| values::as_f64(&raw, a.data_type.clone(), a.endian).ok());
        if let Some(v) = values {
            out.numbers.insert(path.to_string(), v);
        }
    }
    Some(out)
}

/// The encoded bytes of chunk `i` of `a` (`Some(None)` when not stored) from the manifest or
/// the chunks read; `None` when they are neither.
fn encoded<'a>(
    a: &'a VirtualArray,
    i: usize,
    read: &'a BTreeMap<usize, Bytes>,
) -> Option<Option<&'a [u8]>> {
    match a.manifest.get(i) {
        ChunkRef::Missing => Some(None),
        ChunkRef::Inline(b) => Some(Some(b)),
        ChunkRef::Range { .. } => a
            .manifest
            .fetched(i)
            .or_else(|| read.get(&i))
            .map(|b| Some(&b[..])),
    }
}

/// The static arrays of `input` (whose chunks are in `mine`) identical to the anchor's: the
/// same metadata, and every chunk stored in either the same encoded bytes or, decoded, the
/// same bytes.
fn agreeing(
    anchor_input: &Input,
    anchor: &FileRead,
    input: &Input,
    mine: &FileRead,
) -> HashSet<String> {
    let mut same = HashSet::new();
    for (path, chunks) in &mine.statics {
        let (Some(anchor_chunks), Some(a), Some(b)) = (
            anchor.statics.get(path),
            anchor_input.ds.arrays.get(path),
            input.ds.arrays.get(path),
        ) else {
            continue;
        };
        if a.zarr_metadata() != b.zarr_metadata() {
            continue;
        }
        let Ok(codecs) = ByteCodecs::new(&a.codecs) else {
            continue;
        };
        let stored: BTreeSet<usize> = a
            .manifest
            .iter_stored()
            .chain(b.manifest.iter_stored())
            .map(|(i, _)| i)
            .collect();
        let agree = stored.into_iter().all(|i| {
            let (Some(x), Some(y)) = (encoded(a, i, anchor_chunks), encoded(b, i, chunks)) else {
                return false;
            };
            if x == y {
                return true;
            }
            let decode = |arr: &VirtualArray, e: Option<&[u8]>| {
                values::decode_chunk(arr, &codecs, i, e.map(<[u8]>::to_vec)).ok()
            };
            matches!((decode(a, x), decode(b, y)), (Some(p), Some(q)) if p == q)
        });
        if agree {
            same.insert(path.clone());
        }
    }
    same
}
