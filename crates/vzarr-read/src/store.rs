//! A zarrs store over parsed references: `zarr.json` keys are served from the parsed
//! documents, chunk keys through the manifest (`None` for a missing chunk, inline bytes from
//! memory, byte ranges of sources through the fetcher). Chunks a read will need are
//! prefetched into the store's cache in one coalesced, concurrent batch before zarrs decodes
//! them.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use vzarr_core::ChunkRef;
use zarrs::storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs::storage::{MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey};

use crate::ReadError;
use crate::fetch::{Fetcher, RangeRequest};
use crate::refs::{ParsedRefs, parse_chunk_indices, split_chunk_key};

/// What a reader shares between its stores.
pub(crate) struct Shared {
    /// The parsed references.
    pub refs: ParsedRefs,
    /// Byte access to sources.
    pub fetcher: Arc<Fetcher>,
}

/// What a store key names.
enum Resolved<'a> {
    Document(&'a Bytes),
    Chunk { path: &'a str, lin: usize },
    Nothing,
}

impl Shared {
    fn resolve<'a>(&'a self, key: &'a str) -> Resolved<'a> {
        if let Some(doc) = self.refs.documents.get(key) {
            return Resolved::Document(doc);
        }
        let arrays = &self.refs.dataset.arrays;
        let Some((path, rest)) = split_chunk_key(key, |p| arrays.contains_key(p)) else {
            return Resolved::Nothing;
        };
        let Ok(index) = parse_chunk_indices(rest) else {
            return Resolved::Nothing;
        };
        let Some((path, array)) = arrays.get_key_value(path) else {
            return Resolved::Nothing;
        };
        match array.grid.linear_index(&index) {
            Some(lin) => Resolved::Chunk {
                path,
                lin: lin as usize,
            },
            None => Resolved::Nothing,
        }
    }

    /// The fetch requests for the stored-by-reference chunks among `lins` of array `path`.
    pub fn chunk_requests(&self, path: &str, lins: &[usize]) -> Vec<(usize, RangeRequest)> {
        let Some(array) = self.refs.dataset.arrays.get(path) else {
            return Vec::new();
        };
        let interned: HashMap<&str, &Arc<str>> =
            array.manifest.sources().iter().map(|s| (&**s, s)).collect();
        lins.iter()
            .filter_map(|&lin| match array.manifest.get(lin) {
                ChunkRef::Range {
                    source,
                    offset,
                    length,
                } => {
                    let url = interned
                        .get(source)
                        .map_or_else(|| Arc::from(source), |s| (*s).clone());
                    Some((
                        lin,
                        RangeRequest {
                            url,
                            offset,
                            length,
                        },
                    ))
                }
                _ => None,
            })
            .collect()
    }
}

/// Fetches the stored-by-reference chunks `lins` of array `path`: linear index -> encoded
/// bytes.
pub(crate) async fn prefetch(
    shared: Arc<Shared>,
    path: String,
    lins: Vec<usize>,
) -> Result<HashMap<usize, Bytes>, ReadError> {
    let reqs = shared.chunk_requests(&path, &lins);
    let (ids, reqs): (Vec<usize>, Vec<RangeRequest>) = reqs.into_iter().unzip();
    let bytes = shared.fetcher.clone().fetch_many(reqs, false).await?;
    Ok(ids.into_iter().zip(bytes).collect())
}

/// The zarrs store of one read: the shared references plus the prefetched chunks of one
/// array.
pub(crate) struct RefStore {
    shared: Arc<Shared>,
    array: String,
    cache: HashMap<usize, Bytes>,
}

impl RefStore {
    /// A store with prefetched chunks of `array`.
    pub fn new(shared: Arc<Shared>, array: &str, cache: HashMap<usize, Bytes>) -> Self {
        RefStore {
            shared,
            array: array.to_string(),
            cache,
        }
    }
}

fn storage_err(e: impl ToString) -> StorageError {
    StorageError::Other(e.to_string())
}

/// The absolute range of `r` inside a value of `len` bytes, or an error if it leaves it.
fn range_in(key: &str, r: ByteRange, len: u64) -> Result<Range<u64>, StorageError> {
    let out = match r {
        ByteRange::FromStart(o, Some(l)) => o.checked_add(l).filter(|&e| e <= len).map(|e| o..e),
        ByteRange::FromStart(o, None) => (o <= len).then_some(o..len),
        ByteRange::Suffix(l) => (l <= len).then(|| len - l..len),
    };
    out.ok_or_else(|| {
        storage_err(format!(
            "{key}: byte range {r:?} is outside the referenced {len} bytes"
        ))
    })
}

fn slices(key: &str, b: &Bytes, ranges: ByteRangeIterator<'_>) -> Result<Vec<Bytes>, StorageError> {
    ranges
        .map(|r| {
            let rr = range_in(key, r, b.len() as u64)?;
            Ok(b.slice(rr.start as usize..rr.end as usize))
        })
        .collect()
}

impl ReadableStorageTraits for RefStore {
    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> Result<MaybeBytesIterator<'a>, StorageError> {
        let k = key.as_str();
        let out: Vec<Bytes> = match self.shared.resolve(k) {
            Resolved::Nothing => return Ok(None),
            Resolved::Document(doc) => slices(k, doc, byte_ranges)?,
            Resolved::Chunk { path, lin } => {
                let array = &self.shared.refs.dataset.arrays[path];
                match array.manifest.get(lin) {
                    ChunkRef::Missing => return Ok(None),
                    ChunkRef::Inline(b) => slices(k, &Bytes::copy_from_slice(b), byte_ranges)?,
                    ChunkRef::Range {
                        source,
                        offset,
                        length,
                    } => {
                        if path == self.array
                            && let Some(b) = self.cache.get(&lin)
                        {
                            slices(k, b, byte_ranges)?
                        } else {
                            let url: Arc<str> = Arc::from(source);
                            let mut reqs = Vec::new();
                            for r in byte_ranges {
                                let rr = range_in(k, r, length)?;
                                reqs.push(RangeRequest {
                                    url: url.clone(),
                                    offset: offset + rr.start,
                                    length: rr.end - rr.start,
                                });
                            }
                            let fetcher = self.shared.fetcher.clone();
                            self.shared
                                .fetcher
                                .block_on(fetcher.fetch_many(reqs, false))
                                .map_err(storage_err)?
                        }
                    }
                }
            }
        };
        Ok(Some(Box::new(out.into_iter().map(Ok))))
    }

    fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
        Ok(match self.shared.resolve(key.as_str()) {
            Resolved::Nothing => None,
            Resolved::Document(d) => Some(d.len() as u64),
            Resolved::Chunk { path, lin } => {
                match self.shared.refs.dataset.arrays[path].manifest.get(lin) {
                    ChunkRef::Missing => None,
                    ChunkRef::Inline(b) => Some(b.len() as u64),
                    ChunkRef::Range { length, .. } => Some(length),
                }
            }
        })
    }

    fn supports_get_partial(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_inside_the_reference() {
        assert_eq!(
            range_in("k", ByteRange::FromStart(2, Some(3)), 5).unwrap(),
            2..5
        );
        assert_eq!(
            range_in("k", ByteRange::FromStart(5, None), 5).unwrap(),
            5..5
        );
        assert_eq!(range_in("k", ByteRange::Suffix(2), 5).unwrap(), 3..5);
        assert!(range_in("k", ByteRange::FromStart(2, Some(4)), 5).is_err());
        assert!(range_in("k", ByteRange::FromStart(6, None), 5).is_err());
        assert!(range_in("k", ByteRange::Suffix(6), 5).is_err());
        assert!(range_in("k", ByteRange::FromStart(u64::MAX, Some(2)), 5).is_err());
    }
}
