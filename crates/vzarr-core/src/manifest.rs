//! Chunk manifests: where each chunk of a virtual array lives.
//!
//! Columnar: per chunk (C order over the grid) a `u32` source id, a `u64` offset and a `u64`
//! length, 20 bytes a chunk. Source URLs are interned in a table. Two sentinel ids mark a
//! chunk that is not stored (it reads as the fill value) and a chunk whose encoded bytes are
//! kept inline (its offset is then an index into the inline table).
//!
//! Grids of more than [`DENSE_CHUNKS`] chunks start sparse: only stored chunks take memory
//! (an ordered map from the chunk's position), so a never-written dataset of 2^60 chunks
//! costs nothing; a sparse manifest turns dense once half its chunks are stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::CoreError;

const MISSING: u32 = u32::MAX;
const INLINE: u32 = u32::MAX - 1;
const MAX_SOURCES: usize = (u32::MAX - 2) as usize;

/// Grids of at most this many chunks are held densely from the start (20 bytes a chunk).
pub const DENSE_CHUNKS: usize = 1 << 20;

/// Where one chunk's encoded bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkRef<'a> {
    /// Not stored: every element reads as the fill value.
    Missing,
    /// Encoded bytes kept in the manifest.
    Inline(&'a [u8]),
    /// A byte range of a source.
    Range {
        /// Source URL.
        source: &'a str,
        /// Byte offset in the source.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
}

/// One chunk's entry: source id (or a sentinel), offset, length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    id: u32,
    offset: u64,
    length: u64,
}

#[derive(Clone, Debug)]
enum Slots {
    Dense {
        ids: Vec<u32>,
        offsets: Vec<u64>,
        lengths: Vec<u64>,
    },
    Sparse(BTreeMap<usize, Slot>),
}

impl Default for Slots {
    fn default() -> Self {
        Slots::Sparse(BTreeMap::new())
    }
}

/// The chunk locations of one virtual array, in C order over its chunk grid.
#[derive(Clone, Debug, Default)]
pub struct ChunkManifest {
    len: usize,
    sources: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
    slots: Slots,
    inline: Vec<Vec<u8>>,
    /// Bytes of referenced chunks that a scanner already had in hand (not part of the
    /// manifest: never written, never compared).
    fetched: HashMap<usize, bytes::Bytes>,
}

impl PartialEq for ChunkManifest {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter_stored().eq(other.iter_stored())
    }
}

impl Eq for ChunkManifest {}

impl ChunkManifest {
    /// A manifest of `n` chunks, none stored. Allocates nothing per chunk when `n` is above
    /// [`DENSE_CHUNKS`].
    pub fn new_missing(n: usize) -> Self {
        let slots = if n <= DENSE_CHUNKS {
            Slots::Dense {
                ids: vec![MISSING; n],
                offsets: vec![0; n],
                lengths: vec![0; n],
            }
        } else {
            Slots::Sparse(BTreeMap::new())
        };
        ChunkManifest {
            len: n,
            slots,
            ..Default::default()
        }
    }

    /// A manifest of `n` chunks, none stored yet, that will hold about `stored` of them (e.g.
    /// the sum of the manifests it is combined from): dense from the start when that is at
    /// least half of `n` (or `n` is at most [`DENSE_CHUNKS`]), so that filling it never holds
    /// a sparse and a dense copy at once; sparse otherwise, as [`ChunkManifest::new_missing`].
    /// A dense manifest takes at most 40 bytes per expected chunk.
    pub fn new_missing_expecting(n: usize, stored: usize) -> Self {
        let mut m = ChunkManifest::new_missing(n);
        if stored >= n.div_ceil(2) {
            m.densify();
        }
        m
    }

    /// Number of chunks (stored or not).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the manifest has no chunks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of chunks stored (by reference or inline).
    pub fn stored(&self) -> usize {
        match &self.slots {
            Slots::Dense { ids, .. } => ids.iter().filter(|&&id| id != MISSING).count(),
            Slots::Sparse(map) => map.len(),
        }
    }

    /// Whether only stored chunks take memory.
    pub fn is_sparse(&self) -> bool {
        matches!(self.slots, Slots::Sparse(_))
    }

    /// The interned source URLs.
    pub fn sources(&self) -> &[Arc<str>] {
        &self.sources
    }

    /// Interns a source URL and returns its id.
    pub fn intern(&mut self, url: &str) -> Result<u32, CoreError> {
        // Chunks are mostly added source after source: the last one is compared first.
        if let Some(last) = self.sources.last()
            && **last == *url
        {
            return Ok(self.sources.len() as u32 - 1);
        }
        if let Some(&id) = self.index.get(url) {
            return Ok(id);
        }
        if self.sources.len() >= MAX_SOURCES {
            return Err(CoreError::Manifest(
                "too many sources in one manifest".into(),
            ));
        }
        let id = self.sources.len() as u32;
        let url: Arc<str> = Arc::from(url);
        self.sources.push(url.clone());
        self.index.insert(url, id);
        Ok(id)
    }

    fn check(&self, i: usize) -> Result<(), CoreError> {
        if i >= self.len {
            return Err(CoreError::Manifest(format!(
                "chunk {i} is outside a manifest of {} chunks",
                self.len
            )));
        }
        Ok(())
    }

    fn slot(&self, i: usize) -> Slot {
        let missing = Slot {
            id: MISSING,
            ..Default::default()
        };
        match &self.slots {
            Slots::Dense {
                ids,
                offsets,
                lengths,
            } => Slot {
                id: ids[i],
                offset: offsets[i],
                length: lengths[i],
            },
            Slots::Sparse(map) => map.get(&i).copied().unwrap_or(missing),
        }
    }

    fn put(&mut self, i: usize, slot: Slot) {
        // Runs for every chunk of every array: hashing `i` only when there is something to
        // drop (a scanner keeps fetched bytes for a handful of small arrays).
        if !self.fetched.is_empty() {
            self.fetched.remove(&i);
        }
        match &mut self.slots {
            Slots::Dense {
                ids,
                offsets,
                lengths,
            } => {
                ids[i] = slot.id;
                offsets[i] = slot.offset;
                lengths[i] = slot.length;
            }
            Slots::Sparse(map) => {
                if slot.id == MISSING {
                    map.remove(&i);
                } else {
                    map.insert(i, slot);
                }
                if map.len() > self.len / 2 {
                    self.densify();
                }
            }
        }
    }

    /// Turns a sparse manifest dense (once half its chunks are stored, dense is smaller).
    fn densify(&mut self) {
        let Slots::Sparse(map) = &self.slots else {
            return;
        };
        let n = self.len;
        let (mut ids, mut offsets, mut lengths) = (vec![MISSING; n], vec![0; n], vec![0; n]);
        for (&i, s) in map {
            ids[i] = s.id;
            offsets[i] = s.offset;
            lengths[i] = s.length;
        }
        self.slots = Slots::Dense {
            ids,
            offsets,
            lengths,
        };
    }

    /// Points chunk `i` at a byte range of the source with id `source`.
    pub fn set_range(
        &mut self,
        i: usize,
        source: u32,
        offset: u64,
        length: u64,
    ) -> Result<(), CoreError> {
        self.check(i)?;
        if source as usize >= self.sources.len() {
            return Err(CoreError::Manifest(format!("unknown source id {source}")));
        }
        if offset.checked_add(length).is_none() {
            return Err(CoreError::Manifest(format!(
                "chunk {i}: offset {offset} + length {length} overflows"
            )));
        }
        self.put(
            i,
            Slot {
                id: source,
                offset,
                length,
            },
        );
        Ok(())
    }

    /// Stores chunk `i`'s encoded bytes inline.
    pub fn set_inline(&mut self, i: usize, bytes: Vec<u8>) -> Result<(), CoreError> {
        self.check(i)?;
        let slot = Slot {
            id: INLINE,
            offset: self.inline.len() as u64,
            length: bytes.len() as u64,
        };
        self.inline.push(bytes);
        self.put(i, slot);
        Ok(())
    }

    /// Marks chunk `i` as not stored.
    pub fn set_missing(&mut self, i: usize) -> Result<(), CoreError> {
        self.check(i)?;
        self.put(
            i,
            Slot {
                id: MISSING,
                ..Default::default()
            },
        );
        Ok(())
    }

    fn chunk_ref(&self, s: Slot) -> ChunkRef<'_> {
        match s.id {
            MISSING => ChunkRef::Missing,
            INLINE => ChunkRef::Inline(&self.inline[s.offset as usize]),
            id => ChunkRef::Range {
                source: &self.sources[id as usize],
                offset: s.offset,
                length: s.length,
            },
        }
    }

    /// Where chunk `i` is; panics if `i` is out of range.
    pub fn get(&self, i: usize) -> ChunkRef<'_> {
        assert!(i < self.len, "chunk {i} of a manifest of {}", self.len);
        self.chunk_ref(self.slot(i))
    }

    /// Iterates over all chunks in C order (stored or not: use [`ChunkManifest::iter_stored`]
    /// for grids that may be huge).
    pub fn iter(&self) -> impl Iterator<Item = ChunkRef<'_>> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The stored chunks (by reference or inline) with their positions, in C order.
    pub fn iter_stored(&self) -> Box<dyn Iterator<Item = (usize, ChunkRef<'_>)> + '_> {
        self.iter_stored_in(0..self.len)
    }

    /// The stored chunks at positions in `range` (clamped to the manifest), in C order.
    pub fn iter_stored_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> Box<dyn Iterator<Item = (usize, ChunkRef<'_>)> + '_> {
        Box::new(
            self.slots_in(range)
                .map(move |(i, s)| (i, self.chunk_ref(s))),
        )
    }

    /// The stored chunks with their positions and, for references, the id of their source
    /// (its index in [`ChunkManifest::sources`]), in C order: for writers of formats that
    /// keep sources in a table (VirtualiZarr's manifests) without looking URLs up.
    pub fn iter_stored_with_ids(
        &self,
    ) -> Box<dyn Iterator<Item = (usize, Option<u32>, ChunkRef<'_>)> + '_> {
        Box::new(self.slots_in(0..self.len).map(move |(i, s)| {
            let id = (s.id != INLINE && s.id != MISSING).then_some(s.id);
            (i, id, self.chunk_ref(s))
        }))
    }

    /// The stored slots at positions in `range` (clamped to the manifest), in C order.
    fn slots_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> Box<dyn Iterator<Item = (usize, Slot)> + '_> {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        match &self.slots {
            Slots::Dense {
                ids,
                offsets,
                lengths,
            } => Box::new(
                ids[start..end]
                    .iter()
                    .enumerate()
                    .filter(|(_, id)| **id != MISSING)
                    .map(move |(k, &id)| {
                        let i = start + k;
                        let s = Slot {
                            id,
                            offset: offsets[i],
                            length: lengths[i],
                        };
                        (i, s)
                    }),
            ),
            Slots::Sparse(map) => Box::new(map.range(start..end).map(|(&i, &s)| (i, s))),
        }
    }

    /// Keeps bytes a scanner already read for the referenced chunk `i` (its whole range), so
    /// that the planner need not fetch them again. Ignored for chunks that are not references
    /// or whose length differs.
    pub fn keep_fetched(&mut self, i: usize, bytes: bytes::Bytes) {
        if i < self.len
            && let ChunkRef::Range { length, .. } = self.get(i)
            && length == bytes.len() as u64
        {
            self.fetched.insert(i, bytes);
        }
    }

    /// Bytes kept by [`ChunkManifest::keep_fetched`], over all chunks.
    pub fn fetched_bytes(&self) -> u64 {
        self.fetched.values().map(|b| b.len() as u64).sum()
    }

    /// The bytes kept for chunk `i` by [`ChunkManifest::keep_fetched`], if any.
    pub fn fetched(&self, i: usize) -> Option<&bytes::Bytes> {
        self.fetched.get(&i)
    }

    /// Counts of stored-by-reference, inline and missing chunks, and bytes referenced and
    /// inlined.
    pub fn stats(&self) -> ManifestStats {
        let mut s = ManifestStats::default();
        for (_, r) in self.iter_stored() {
            match r {
                ChunkRef::Inline(b) => {
                    s.inline += 1;
                    s.inline_bytes += b.len() as u64;
                }
                ChunkRef::Range { length, .. } => {
                    s.referenced += 1;
                    s.referenced_bytes += length;
                }
                ChunkRef::Missing => {}
            }
        }
        s.missing = self.len as u64 - s.inline - s.referenced;
        s
    }
}

/// Chunk counts and byte totals of a manifest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ManifestStats {
    /// Chunks that point at a byte range of a source.
    pub referenced: u64,
    /// Chunks kept inline.
    pub inline: u64,
    /// Chunks not stored (fill value).
    pub missing: u64,
    /// Bytes referenced in sources.
    pub referenced_bytes: u64,
    /// Bytes kept inline.
    pub inline_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_get() {
        let mut m = ChunkManifest::new_missing(4);
        let a = m.intern("file:///a.nc").unwrap();
        let b = m.intern("file:///b.nc").unwrap();
        assert_eq!(m.intern("file:///a.nc").unwrap(), a);
        m.set_range(0, a, 100, 20).unwrap();
        m.set_range(2, b, 7, 3).unwrap();
        m.set_inline(3, vec![1, 2, 3]).unwrap();
        assert_eq!(
            m.get(0),
            ChunkRef::Range {
                source: "file:///a.nc",
                offset: 100,
                length: 20
            }
        );
        assert_eq!(m.get(1), ChunkRef::Missing);
        assert_eq!(
            m.get(2),
            ChunkRef::Range {
                source: "file:///b.nc",
                offset: 7,
                length: 3
            }
        );
        assert_eq!(m.get(3), ChunkRef::Inline(&[1, 2, 3]));
        let s = m.stats();
        assert_eq!((s.referenced, s.inline, s.missing), (2, 1, 1));
        assert_eq!((s.referenced_bytes, s.inline_bytes), (23, 3));
        assert_eq!(m.sources().len(), 2);
    }

    #[test]
    fn stored_chunks_of_a_range() {
        let mut m = ChunkManifest::new_missing(10);
        let a = m.intern("a").unwrap();
        for i in [0, 3, 4, 9] {
            m.set_range(i, a, i as u64, 1).unwrap();
        }
        let at = |r: std::ops::Range<usize>| -> Vec<usize> {
            m.iter_stored_in(r).map(|(i, _)| i).collect()
        };
        assert_eq!(at(0..10), vec![0, 3, 4, 9]);
        assert_eq!(at(1..4), vec![3]);
        assert_eq!(at(4..100), vec![4, 9]);
        assert_eq!(at(12..20), Vec::<usize>::new());
        // Interning the same URL again, last or not, gives its id.
        let b = m.intern("b").unwrap();
        assert_eq!((m.intern("b").unwrap(), m.intern("a").unwrap()), (b, a));
    }

    #[test]
    fn errors() {
        let mut m = ChunkManifest::new_missing(1);
        assert!(m.set_range(0, 0, 0, 1).is_err(), "unknown source");
        let a = m.intern("x").unwrap();
        assert!(m.set_range(1, a, 0, 1).is_err(), "out of range");
        assert!(m.set_range(0, a, u64::MAX, 1).is_err(), "overflow");
        assert!(m.set_inline(5, vec![]).is_err());
    }

    #[test]
    fn ids_come_with_the_iteration() {
        for dense in [true, false] {
            let mut m = if dense {
                ChunkManifest::new_missing(5)
            } else {
                ChunkManifest::new_missing(DENSE_CHUNKS + 5)
            };
            let a = m.intern("s3://b/a.nc").unwrap();
            let b = m.intern("s3://b/b.nc").unwrap();
            m.set_range(0, b, 10, 5).unwrap();
            m.set_range(2, a, 20, 5).unwrap();
            m.set_inline(3, vec![1u8, 2]).unwrap();
            let got: Vec<(usize, Option<u32>)> =
                m.iter_stored_with_ids().map(|(i, id, _)| (i, id)).collect();
            assert_eq!(got, vec![(0, Some(b)), (2, Some(a)), (3, None)]);
            for (_, id, r) in m.iter_stored_with_ids() {
                if let (Some(id), ChunkRef::Range { source, .. }) = (id, r) {
                    assert_eq!(&*m.sources()[id as usize], source);
                }
            }
        }
    }

    #[test]
    fn equality_ignores_interning_order() {
        let mut m1 = ChunkManifest::new_missing(2);
        let a1 = m1.intern("a").unwrap();
        let b1 = m1.intern("b").unwrap();
        m1.set_range(0, b1, 1, 1).unwrap();
        m1.set_range(1, a1, 2, 2).unwrap();
        let mut m2 = ChunkManifest::new_missing(2);
        let b2 = m2.intern("b").unwrap();
        let a2 = m2.intern("a").unwrap();
        m2.set_range(0, b2, 1, 1).unwrap();
        m2.set_range(1, a2, 2, 2).unwrap();
        assert_eq!(m1, m2);
    }

    #[test]
    fn per_chunk_footprint() {
        // The columns cost 20 bytes a chunk.
        let n = 1000;
        let m = ChunkManifest::new_missing(n);
        let Slots::Dense {
            ids,
            offsets,
            lengths,
        } = &m.slots
        else {
            panic!("small grids are dense");
        };
        let bytes = ids.capacity() * 4 + offsets.capacity() * 8 + lengths.capacity() * 8;
        assert_eq!(bytes, n * 20);
    }

    #[test]
    fn fetched_bytes_are_kept_beside_references_only() {
        let mut m = ChunkManifest::new_missing(3);
        let s = m.intern("a").unwrap();
        m.set_range(0, s, 10, 3).unwrap();
        m.set_inline(1, vec![1]).unwrap();
        m.keep_fetched(0, bytes::Bytes::from_static(b"xyz"));
        m.keep_fetched(1, bytes::Bytes::from_static(b"q"));
        m.keep_fetched(2, bytes::Bytes::from_static(b"q"));
        assert_eq!(m.fetched(0).unwrap().as_ref(), b"xyz");
        assert!(m.fetched(1).is_none() && m.fetched(2).is_none());
        assert_eq!(m.fetched_bytes(), 3);
        // Wrong length: not kept.
        let mut m2 = m.clone();
        m2.keep_fetched(0, bytes::Bytes::from_static(b"xy"));
        assert_eq!(m2.fetched(0).unwrap().as_ref(), b"xyz");
        // Equality ignores it; re-pointing the chunk drops it.
        let mut plain = ChunkManifest::new_missing(3);
        let s2 = plain.intern("a").unwrap();
        plain.set_range(0, s2, 10, 3).unwrap();
        plain.set_inline(1, vec![1]).unwrap();
        assert_eq!(plain, m);
        m.set_range(0, s, 20, 3).unwrap();
        assert!(m.fetched(0).is_none());
        assert_eq!(m.fetched_bytes(), 0);
    }

    #[test]
    fn huge_grids_are_sparse_until_half_stored() {
        let n = 1usize << 60;
        let mut m = ChunkManifest::new_missing(n);
        assert!(m.is_sparse());
        assert_eq!((m.len(), m.stored()), (n, 0));
        let s = m.intern("file:///x.nc").unwrap();
        m.set_range(n - 1, s, 8, 4).unwrap();
        m.set_range(3, s, 0, 4).unwrap();
        m.set_inline(7, vec![1]).unwrap();
        assert_eq!(
            m.get(n - 1),
            ChunkRef::Range {
                source: "file:///x.nc",
                offset: 8,
                length: 4
            }
        );
        assert_eq!(m.get(4), ChunkRef::Missing);
        let stored: Vec<usize> = m.iter_stored().map(|(i, _)| i).collect();
        assert_eq!(stored, vec![3, 7, n - 1]);
        let part: Vec<usize> = m.iter_stored_in(4..n - 1).map(|(i, _)| i).collect();
        assert_eq!(part, vec![7]);
        assert_eq!(m.iter_stored_in(n - 1..usize::MAX).count(), 1);
        let st = m.stats();
        assert_eq!((st.referenced, st.inline, st.missing), (2, 1, n as u64 - 3));
        m.set_missing(3).unwrap();
        assert_eq!(m.stored(), 2);
        // A sparse manifest turns dense past half full, keeping its chunks.
        let n = DENSE_CHUNKS + 10;
        let mut m = ChunkManifest::new_missing(n);
        let s = m.intern("a").unwrap();
        for i in (0..n).rev().step_by(1).take(n / 2 + 1) {
            m.set_range(i, s, i as u64, 1).unwrap();
        }
        assert!(!m.is_sparse());
        assert_eq!(m.stored(), n / 2 + 1);
        assert_eq!(
            m.get(n - 1),
            ChunkRef::Range {
                source: "a",
                offset: (n - 1) as u64,
                length: 1
            }
        );
        assert_eq!(m.get(0), ChunkRef::Missing);
        // Told it will hold at least half its chunks, a manifest starts dense; else sparse.
        assert!(!ChunkManifest::new_missing_expecting(n, n / 2 + 5).is_sparse());
        assert!(ChunkManifest::new_missing_expecting(n, n / 2 - 5).is_sparse());
        assert!(ChunkManifest::new_missing_expecting(1 << 60, 1 << 20).is_sparse());
    }
}
