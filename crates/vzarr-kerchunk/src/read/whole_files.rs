//! Whole-file references: a chunk that is a whole source (`[url]` in JSON references; a Parquet
//! row with `offset` and `size` both 0), as the kerchunk specification allows
//! (<https://fsspec.github.io/kerchunk/spec.html>, version 1: "`[url]`, the whole file").
//!
//! The model holds a chunk as a byte range, and a Zarr v3 or Icechunk reference needs its
//! length, which only the source knows. So these chunks are kept aside while the references
//! are parsed, and set into the manifests once whoever opens the references has checked each
//! URL against its allowed prefixes and learned its size ([`WholeFiles::resolve`]): the reader
//! when it opens them, `vzarr upgrade` when it records the sources.

use std::collections::BTreeMap;

use vzarr_core::{ChunkManifest, VirtualDataset};

use super::ParseError;

/// The whole-file chunks of parsed references not yet set into the manifests (none for most
/// references): each URL once, and per chunk its array, linear index and URL.
#[derive(Clone, Debug, Default)]
pub struct WholeFiles {
    urls: Vec<String>,
    index: BTreeMap<String, u32>,
    /// (array path, chunk's linear index, URL id)
    chunks: Vec<(String, usize, u32)>,
}

impl WholeFiles {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Number of whole-file chunks.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// The URLs whole-file chunks name, each once, in the order first met.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// Records chunk `lin` of array `path` as the whole of `url`.
    pub(super) fn push(&mut self, path: &str, lin: usize, url: &str) {
        let id = match self.index.get(url) {
            Some(&id) => id,
            None => {
                let id = self.urls.len() as u32;
                self.urls.push(url.to_string());
                self.index.insert(url.to_string(), id);
                id
            }
        };
        self.chunks.push((path.to_string(), lin, id));
    }

    /// Adds `other`'s chunks (another array's, say) to these.
    pub fn append(&mut self, other: WholeFiles) {
        for (path, lin, id) in other.chunks {
            self.push(&path, lin, &other.urls[id as usize]);
        }
    }

    /// Sets every whole-file chunk into `ds`'s manifests as the byte range `0..size` of its
    /// source: `source(url)` gives, for each URL of [`WholeFiles::urls`] (asked once each),
    /// the URL to record (e.g. made absolute) and the source's size, or the error to return
    /// (a URL refused, a source that cannot be opened). A chunk its key also gave as a byte
    /// range or inline keeps that. `origin` names the references in errors.
    pub fn resolve<E: From<ParseError>>(
        self,
        ds: &mut VirtualDataset,
        origin: &str,
        source: impl FnMut(&str) -> Result<(String, u64), E>,
    ) -> Result<(), E> {
        let resolved = self.sizes(source)?;
        for (path, lin, id) in &self.chunks {
            let array = ds.arrays.get_mut(path).ok_or_else(|| {
                E::from(bad_chunk(origin, path, *lin, format!("no array {path}")))
            })?;
            set_whole(
                &mut array.manifest,
                origin,
                path,
                *lin,
                &resolved[*id as usize],
            )?;
        }
        Ok(())
    }

    /// As [`WholeFiles::resolve`], for the chunks of one array whose manifest is `manifest`
    /// (those [`crate::ParquetRecords::load_array`] gives with it).
    pub fn resolve_manifest<E: From<ParseError>>(
        self,
        manifest: &mut ChunkManifest,
        origin: &str,
        source: impl FnMut(&str) -> Result<(String, u64), E>,
    ) -> Result<(), E> {
        let resolved = self.sizes(source)?;
        for (path, lin, id) in &self.chunks {
            set_whole(manifest, origin, path, *lin, &resolved[*id as usize])?;
        }
        Ok(())
    }

    /// Each URL's (URL to record, size), asked once each.
    fn sizes<E>(
        &self,
        mut source: impl FnMut(&str) -> Result<(String, u64), E>,
    ) -> Result<Vec<(String, u64)>, E> {
        self.urls.iter().map(|u| source(u)).collect()
    }
}

fn bad_chunk(origin: &str, path: &str, lin: usize, reason: String) -> ParseError {
    ParseError::BadKey {
        origin: origin.to_string(),
        key: format!("{path} chunk {lin}"),
        reason,
    }
}

/// Chunk `lin` of `m` (array `path`'s) as the whole of a source (URL to record, size), unless
/// it holds something already.
fn set_whole(
    m: &mut ChunkManifest,
    origin: &str,
    path: &str,
    lin: usize,
    (url, size): &(String, u64),
) -> Result<(), ParseError> {
    let bad = |reason: String| bad_chunk(origin, path, lin, reason);
    if lin >= m.len() {
        return Err(bad(format!(
            "outside the {} chunks of array {path}",
            m.len()
        )));
    }
    if !matches!(m.get(lin), vzarr_core::ChunkRef::Missing) {
        return Ok(());
    }
    let id = m.intern(url).map_err(|e| bad(e.to_string()))?;
    m.set_range(lin, id, 0, *size)
        .map_err(|e| bad(e.to_string()))
}
