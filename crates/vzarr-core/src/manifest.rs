//! Chunk manifests: where each chunk of a virtual array lives.
//!
//! Columnar: per chunk (C order over the grid) a `u32` source id, a `u64` offset and a `u64`
//! length, about 20 bytes a chunk. Source URLs are interned in a table. Two sentinel ids mark a
//! chunk that is not stored (it reads as the fill value) and a chunk whose encoded bytes are
//! kept inline (its offset is then an index into the inline table).

use std::collections::HashMap;
use std::sync::Arc;

use crate::CoreError;

const MISSING: u32 = u32::MAX;
const INLINE: u32 = u32::MAX - 1;
const MAX_SOURCES: usize = (u32::MAX - 2) as usize;

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

/// The chunk locations of one virtual array, in C order over its chunk grid.
#[derive(Clone, Debug, Default)]
pub struct ChunkManifest {
    sources: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
    source_ids: Vec<u32>,
    offsets: Vec<u64>,
    lengths: Vec<u64>,
    inline: Vec<Vec<u8>>,
}

impl PartialEq for ChunkManifest {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.get(i) == other.get(i))
    }
}

impl Eq for ChunkManifest {}

impl ChunkManifest {
    /// A manifest of `n` chunks, none stored.
    pub fn new_missing(n: usize) -> Self {
        ChunkManifest {
            source_ids: vec![MISSING; n],
            offsets: vec![0; n],
            lengths: vec![0; n],
            ..Default::default()
        }
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.source_ids.len()
    }

    /// Whether the manifest has no chunks.
    pub fn is_empty(&self) -> bool {
        self.source_ids.is_empty()
    }

    /// The interned source URLs.
    pub fn sources(&self) -> &[Arc<str>] {
        &self.sources
    }

    /// Interns a source URL and returns its id.
    pub fn intern(&mut self, url: &str) -> Result<u32, CoreError> {
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
        if i >= self.len() {
            return Err(CoreError::Manifest(format!(
                "chunk {i} is outside a manifest of {} chunks",
                self.len()
            )));
        }
        Ok(())
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
        self.source_ids[i] = source;
        self.offsets[i] = offset;
        self.lengths[i] = length;
        Ok(())
    }

    /// Stores chunk `i`'s encoded bytes inline.
    pub fn set_inline(&mut self, i: usize, bytes: Vec<u8>) -> Result<(), CoreError> {
        self.check(i)?;
        self.source_ids[i] = INLINE;
        self.offsets[i] = self.inline.len() as u64;
        self.lengths[i] = bytes.len() as u64;
        self.inline.push(bytes);
        Ok(())
    }

    /// Marks chunk `i` as not stored.
    pub fn set_missing(&mut self, i: usize) -> Result<(), CoreError> {
        self.check(i)?;
        self.source_ids[i] = MISSING;
        self.offsets[i] = 0;
        self.lengths[i] = 0;
        Ok(())
    }

    /// Where chunk `i` is; panics if `i` is out of range.
    pub fn get(&self, i: usize) -> ChunkRef<'_> {
        match self.source_ids[i] {
            MISSING => ChunkRef::Missing,
            INLINE => ChunkRef::Inline(&self.inline[self.offsets[i] as usize]),
            id => ChunkRef::Range {
                source: &self.sources[id as usize],
                offset: self.offsets[i],
                length: self.lengths[i],
            },
        }
    }

    /// Iterates over all chunks in C order.
    pub fn iter(&self) -> impl Iterator<Item = ChunkRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Counts of stored-by-reference, inline and missing chunks, and bytes referenced and
    /// inlined.
    pub fn stats(&self) -> ManifestStats {
        let mut s = ManifestStats::default();
        for (i, &id) in self.source_ids.iter().enumerate() {
            match id {
                MISSING => s.missing += 1,
                INLINE => {
                    s.inline += 1;
                    s.inline_bytes += self.lengths[i];
                }
                _ => {
                    s.referenced += 1;
                    s.referenced_bytes += self.lengths[i];
                }
            }
        }
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
    fn errors() {
        let mut m = ChunkManifest::new_missing(1);
        assert!(m.set_range(0, 0, 0, 1).is_err(), "unknown source");
        let a = m.intern("x").unwrap();
        assert!(m.set_range(1, a, 0, 1).is_err(), "out of range");
        assert!(m.set_range(0, a, u64::MAX, 1).is_err(), "overflow");
        assert!(m.set_inline(5, vec![]).is_err());
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
        let bytes =
            m.source_ids.capacity() * 4 + m.offsets.capacity() * 8 + m.lengths.capacity() * 8;
        assert_eq!(bytes, n * 20);
    }
}
