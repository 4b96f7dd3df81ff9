//! A zarrs store over parsed references: `zarr.json` keys are served from the parsed
//! documents, chunk keys through the manifest (`None` for a missing chunk, inline bytes from
//! memory, byte ranges of sources through the reader's source stack). Chunks a read will
//! need are fetched into the store's cache in one batch before zarrs decodes them.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use vzarr_core::ChunkManifest;
use vzarr_kerchunk::{ParsedRefs, parse_chunk_indices, split_chunk_key};
use vzarr_source::{SourceStore, read_across};
use zarrs::storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs::storage::{MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey};

use crate::ReadError;
use crate::lazy::{ChunkLoc, LazyRecords};

/// What a reader shares between its stores.
pub(crate) struct Shared {
    /// The parsed references (for lazily opened Parquet references, the manifests of the
    /// arrays `lazy` holds are empty: theirs are there).
    pub(crate) refs: ParsedRefs,
    /// The record files of lazily opened Parquet references.
    pub(crate) lazy: Option<LazyRecords>,
    /// The sources, behind the reader's policies.
    pub(crate) sources: Arc<dyn SourceStore>,
    /// Sources read at once at most.
    pub(crate) concurrency: usize,
}

/// What a store key of parsed references names.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum KeyTarget<'a> {
    /// A metadata document (`zarr.json`, `path/zarr.json`), as given.
    Document(&'a Bytes),
    /// The chunk at linear index `lin` (C order over the grid) of the array at `path`; the
    /// manifest says whether it is stored, inline or by reference.
    Chunk {
        /// The array's path.
        path: &'a str,
        /// The chunk's linear index.
        lin: usize,
    },
    /// Nothing: not a document, nor a chunk key inside an array's grid.
    Nothing,
}

/// What `key` names in `refs`: a document, a chunk of an array (its key in the default
/// encoding, inside the grid), or nothing.
pub fn resolve_key<'a>(refs: &'a ParsedRefs, key: &'a str) -> KeyTarget<'a> {
    if let Some(doc) = refs.documents.get(key) {
        return KeyTarget::Document(doc);
    }
    let arrays = &refs.dataset.arrays;
    let Some((path, rest)) = split_chunk_key(key, |p| arrays.contains_key(p)) else {
        return KeyTarget::Nothing;
    };
    let Ok(index) = parse_chunk_indices(rest) else {
        return KeyTarget::Nothing;
    };
    let Some((path, array)) = arrays.get_key_value(path) else {
        return KeyTarget::Nothing;
    };
    match array.grid.linear_index(&index) {
        Some(lin) => KeyTarget::Chunk {
            path,
            lin: lin as usize,
        },
        None => KeyTarget::Nothing,
    }
}

impl Shared {
    fn resolve<'a>(&'a self, key: &'a str) -> KeyTarget<'a> {
        resolve_key(&self.refs, key)
    }

    /// The manifest of the array at `path`, its record files read first when the references
    /// are lazy Parquet references and it was not loaded yet.
    pub(crate) fn manifest(&self, path: &str) -> Result<&ChunkManifest, ReadError> {
        if let Some(m) = self.lazy.as_ref().and_then(|l| l.manifest(path)) {
            return m;
        }
        self.refs
            .dataset
            .arrays
            .get(path)
            .map(|a| &a.manifest)
            .ok_or_else(|| ReadError::NoArray(path.to_string()))
    }

    /// Where chunk `lin` of the array at `path` is. For lazily opened Parquet references,
    /// only the record file that holds it is read (unless the array is loaded already).
    pub(crate) fn chunk(&self, path: &str, lin: usize) -> Result<ChunkLoc, ReadError> {
        if let Some(c) = self.lazy.as_ref().and_then(|l| l.chunk(path, lin)) {
            return c;
        }
        self.refs
            .dataset
            .arrays
            .get(path)
            .map(|a| ChunkLoc::of(&a.manifest, lin))
            .ok_or_else(|| ReadError::NoArray(path.to_string()))
    }

    /// Fetches the stored-by-reference chunks among `lins` of array `path`: linear index ->
    /// encoded bytes.
    pub(crate) fn fetch(
        &self,
        path: &str,
        lins: &[usize],
    ) -> Result<HashMap<usize, Bytes>, ReadError> {
        if !self.refs.dataset.arrays.contains_key(path) {
            return Ok(HashMap::new());
        }
        let mut ids = Vec::new();
        let mut ranges: Vec<(Arc<str>, Range<u64>)> = Vec::new();
        for &lin in lins {
            if let ChunkLoc::Range {
                source,
                offset,
                length,
            } = self.chunk(path, lin)?
            {
                let end = offset.checked_add(length).ok_or_else(|| {
                    ReadError::array(path, format!("chunk {lin}: offset + length overflows"))
                })?;
                ids.push(lin);
                ranges.push((source, offset..end));
            }
        }
        let reqs: Vec<(&str, Range<u64>)> = ranges.iter().map(|(s, r)| (&**s, r.clone())).collect();
        let bytes = read_across(self.sources.as_ref(), &reqs, self.concurrency)?;
        Ok(ids.into_iter().zip(bytes).collect())
    }
}

/// The zarrs store of one read: the shared references plus the prefetched chunks of one
/// array (shared, not copied: a batch's chunks serve every box decoded from it).
pub(crate) struct RefStore {
    shared: Arc<Shared>,
    array: String,
    cache: Arc<HashMap<usize, Bytes>>,
}

impl RefStore {
    /// A store with prefetched chunks of `array`.
    pub(crate) fn new(shared: Arc<Shared>, array: &str, cache: Arc<HashMap<usize, Bytes>>) -> Self {
        RefStore {
            shared,
            array: array.to_string(),
            cache,
        }
    }
}

impl RefStore {
    /// The whole encoded chunk `lin` of the string array `path`, checked to be a valid
    /// `vlen-utf8` chunk of as many elements as the chunk's shape holds (`None` when it is
    /// not stored).
    fn string_chunk(
        &self,
        key: &str,
        path: &str,
        lin: usize,
    ) -> Result<Option<Bytes>, StorageError> {
        let array = &self.shared.refs.dataset.arrays[path];
        let b = match self.shared.chunk(path, lin).map_err(storage_err)? {
            ChunkLoc::Missing => return Ok(None),
            ChunkLoc::Inline(b) => b,
            ChunkLoc::Range {
                source,
                offset,
                length,
            } => match self.cache.get(&lin).filter(|_| path == self.array) {
                Some(b) => b.clone(),
                None => {
                    let end = offset
                        .checked_add(length)
                        .ok_or_else(|| storage_err(format!("{key}: offset + length overflows")))?;
                    read_across(self.shared.sources.as_ref(), &[(&source, offset..end)], 1)
                        .map_err(storage_err)?
                        .pop()
                        .unwrap_or_default()
                }
            },
        };
        let idx = array.grid.chunk_index(lin as u64);
        let n = array
            .grid
            .chunk_shape(&idx)
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| storage_err(format!("{key}: chunk shape too large")))?;
        vzarr_codec::vlen_utf8::decode(&b, n).map_err(|e| storage_err(format!("{key}: {e}")))?;
        Ok(Some(b))
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
            KeyTarget::Nothing => return Ok(None),
            KeyTarget::Document(doc) => slices(k, doc, byte_ranges)?,
            KeyTarget::Chunk { path, lin } => {
                let array = &self.shared.refs.dataset.arrays[path];
                if array.data_type.is_string() {
                    // zarrs' vlen-utf8 decoder trusts the lengths in a chunk: the whole chunk
                    // is checked first.
                    let Some(b) = self.string_chunk(k, path, lin)? else {
                        return Ok(None);
                    };
                    let out = slices(k, &b, byte_ranges)?;
                    return Ok(Some(Box::new(out.into_iter().map(Ok))));
                }
                match self.shared.chunk(path, lin).map_err(storage_err)? {
                    ChunkLoc::Missing => return Ok(None),
                    ChunkLoc::Inline(b) => slices(k, &b, byte_ranges)?,
                    ChunkLoc::Range {
                        source,
                        offset,
                        length,
                    } => {
                        if path == self.array
                            && let Some(b) = self.cache.get(&lin)
                        {
                            slices(k, b, byte_ranges)?
                        } else {
                            let mut reqs = Vec::new();
                            for r in byte_ranges {
                                let rr = range_in(k, r, length)?;
                                reqs.push((&*source, offset + rr.start..offset + rr.end));
                            }
                            read_across(self.shared.sources.as_ref(), &reqs, 1)
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
            KeyTarget::Nothing => None,
            KeyTarget::Document(d) => Some(d.len() as u64),
            KeyTarget::Chunk { path, lin } => {
                match self.shared.chunk(path, lin).map_err(storage_err)? {
                    ChunkLoc::Missing => None,
                    c => Some(c.encoded_len()),
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
