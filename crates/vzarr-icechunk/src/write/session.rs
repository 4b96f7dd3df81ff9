//! What one writable Icechunk session writes: the group and array documents, the chunks of
//! a piece (virtual references in batches, inline chunks as native Icechunk chunks), and the
//! commit.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use icechunk::format::SnapshotId;
use icechunk::format::manifest::VirtualChunkRef;
use icechunk::format::snapshot::SnapshotProperties;
use icechunk::format::{ChunkIndices, Path as IcPath};
use icechunk::store::SetVirtualRefsResult;
use icechunk::{Repository, Store};
use serde_json::{Value, json};
use tokio::sync::RwLock;
use vzarr_core::{ChunkRef, DimGrid, VirtualArray, VirtualDataset};

use super::containers::Locations;
use super::manifests::Segment;
use super::{Update, Written, ice};
use crate::IcechunkError;

/// References handed to Icechunk's store at once (bounds the temporary vector only).
const BATCH: usize = 1 << 16;

/// The array's `zarr.json` as Icechunk takes it: the rectilinear `chunk_shapes` of a fixed
/// axis written as a run (`[[size, count]]`) rather than a bare integer, which Icechunk 2.3
/// cannot parse. Everything else is the document the kerchunk writer emits.
pub fn array_document(array: &VirtualArray) -> Value {
    let mut doc = array.zarr_metadata();
    if !array.grid.is_regular() {
        let shapes: Vec<Value> = array
            .grid
            .dims()
            .iter()
            .map(|d| match d {
                DimGrid::Fixed { size, .. } => {
                    let n = d.n_chunks().max(1);
                    if n == 1 {
                        json!([size])
                    } else {
                        json!([[size, n]])
                    }
                }
                DimGrid::Varying { .. } => d.to_rectilinear_json(),
            })
            .collect();
        doc["chunk_grid"]["configuration"]["chunk_shapes"] = Value::Array(shapes);
    }
    doc
}

fn ic_path(path: &str) -> Result<IcPath, IcechunkError> {
    IcPath::new(&format!("/{path}")).map_err(|e| IcechunkError::Content {
        location: String::new(),
        what: path.to_string(),
        reason: format!("not a valid node path: {e}"),
    })
}

fn meta_key(path: &str) -> String {
    if path.is_empty() {
        "zarr.json".into()
    } else {
        format!("{path}/zarr.json")
    }
}

/// What every piece of a write shares.
pub(super) struct Writer<'a> {
    pub(super) repo: &'a Repository,
    pub(super) ds: &'a VirtualDataset,
    pub(super) arrays: &'a [(&'a str, &'a VirtualArray)],
    pub(super) locations: &'a [Locations<'a>],
    pub(super) at: &'a str,
}

impl Writer<'_> {
    /// A store over a new writable session on `branch`.
    pub(super) async fn store(&self, branch: &str) -> Result<Store, IcechunkError> {
        let session = self
            .repo
            .writable_session(branch)
            .await
            .map_err(ice(self.at, "starting a session"))?;
        Ok(Store::from_session(Arc::new(RwLock::new(session))).await)
    }

    /// The group and array documents (after clearing the branch when `clear`).
    pub(super) async fn write_nodes(
        &self,
        store: &Store,
        clear: bool,
    ) -> Result<(), IcechunkError> {
        let at = self.at;
        if clear {
            store
                .session()
                .write()
                .await
                .clear()
                .await
                .map_err(ice(at, "clearing the branch"))?;
        }
        self.write_groups(store).await?;
        for (path, array) in self.arrays {
            let key = meta_key(path);
            store
                .set(&key, Bytes::from(array_document(array).to_string()))
                .await
                .map_err(ice(at, &format!("writing {key}")))?;
        }
        Ok(())
    }

    /// The group documents.
    async fn write_groups(&self, store: &Store) -> Result<(), IcechunkError> {
        let at = self.at;
        store
            .set(
                "zarr.json",
                Bytes::from(self.ds.group_document("", true).to_string()),
            )
            .await
            .map_err(ice(at, "writing zarr.json"))?;
        for path in self.ds.groups.keys().filter(|p| !p.is_empty()) {
            let key = meta_key(path);
            store
                .set(
                    &key,
                    Bytes::from(self.ds.group_document(path, true).to_string()),
                )
                .await
                .map_err(ice(at, &format!("writing {key}")))?;
        }
        Ok(())
    }

    /// What an append or a replacement changed ([`Update`]): the group documents, and of
    /// each changed array its document and its chunks in the changed runs.
    pub(super) async fn write_update(
        &self,
        store: &Store,
        update: &Update,
        written: &mut Written,
    ) -> Result<(), IcechunkError> {
        let at = self.at;
        self.write_groups(store).await?;
        for (k, (path, array)) in self.arrays.iter().enumerate() {
            let Some((axis, runs)) = update.arrays.get(*path) else {
                continue;
            };
            let key = meta_key(path);
            store
                .set(&key, Bytes::from(array_document(array).to_string()))
                .await
                .map_err(ice(at, &format!("writing {key}")))?;
            let n = array.manifest.len();
            for run in runs.iter().filter(|r| !r.is_empty()) {
                // In C order, the chunks of a run along axis 0 are one run.
                let range = if *axis == 0 {
                    let inner: u64 = array.grid.grid_shape()[1..].iter().product();
                    let at =
                        |i: u64| usize::try_from(i.saturating_mul(inner)).map_or(n, |x| x.min(n));
                    at(run.start)..at(run.end)
                } else {
                    0..n
                };
                let (v, c) = write_chunks(
                    store,
                    path,
                    array,
                    range,
                    Some((*axis, run.clone())),
                    &self.locations[k],
                    at,
                )
                .await?;
                written.virtual_refs += v;
                written.native_chunks += c;
            }
        }
        Ok(())
    }

    /// The chunks of one piece: references in batches, inline chunks as Icechunk chunks.
    pub(super) async fn write_piece(
        &self,
        store: &Store,
        piece: &[Segment],
        written: &mut Written,
    ) -> Result<(), IcechunkError> {
        for s in piece {
            let (path, array) = self.arrays[s.array];
            let (v, n) = write_chunks(
                store,
                path,
                array,
                s.range.clone(),
                None,
                &self.locations[s.array],
                self.at,
            )
            .await?;
            written.virtual_refs += v;
            written.native_chunks += n;
        }
        Ok(())
    }

    /// Commits the session of `store` as a new commit (never an amend: see [`super::write`]).
    pub(super) async fn commit(
        &self,
        store: &Store,
        message: &str,
        props: Option<SnapshotProperties>,
    ) -> Result<SnapshotId, IcechunkError> {
        let session = store.session();
        let mut session = session.write().await;
        let mut commit = session.commit(message).allow_empty(true);
        if let Some(props) = props {
            commit = commit.properties(props);
        }
        commit.execute().await.map_err(ice(self.at, "committing"))
    }
}

/// Writes the stored chunks of `array` at C-order positions `range` (with `run` =
/// `(axis, r)`, only those whose index along `axis` is in `r`, and where `r` ends before
/// `u64::MAX`, those no longer stored removed): references in batches, inline chunks as
/// Icechunk chunks. Returns (references, native chunks).
async fn write_chunks(
    store: &Store,
    path: &str,
    array: &VirtualArray,
    range: Range<usize>,
    run: Option<(usize, Range<u64>)>,
    locations: &Locations<'_>,
    at: &str,
) -> Result<(u64, u64), IcechunkError> {
    let node = ic_path(path)?;
    let ref_err = |index: Vec<u64>, reason: String| IcechunkError::Reference {
        array: path.to_string(),
        index,
        reason,
    };
    let mut batch: Vec<(ChunkIndices, VirtualChunkRef)> =
        Vec::with_capacity(BATCH.min(range.len()));
    let (mut refs, mut native) = (0u64, 0u64);
    let flush = |batch: Vec<(ChunkIndices, VirtualChunkRef)>| async move {
        match store
            .set_virtual_refs(&node_path(path), false, batch)
            .await
            .map_err(|e| IcechunkError::icechunk(at, format!("writing references of {path}"), e))?
        {
            SetVirtualRefsResult::Done => Ok(()),
            SetVirtualRefsResult::FailedRefs(failed) => Err(IcechunkError::Reference {
                array: path.to_string(),
                index: failed
                    .first()
                    .map(|c| c.0.iter().map(|&i| u64::from(i)).collect())
                    .unwrap_or_default(),
                reason: format!(
                    "{} reference(s) outside every virtual chunk container of the repository",
                    failed.len()
                ),
            }),
        }
    };
    // A run replaced in the middle: what it no longer stores is removed.
    let replaced = run.as_ref().is_some_and(|(_, r)| r.end != u64::MAX);
    let chunks: Box<dyn Iterator<Item = (usize, ChunkRef<'_>)>> = if replaced {
        Box::new(range.map(|i| (i, array.manifest.get(i))))
    } else {
        array.manifest.iter_stored_in(range)
    };
    for (i, chunk) in chunks {
        let index = array.grid.chunk_index(i as u64);
        if let Some((axis, r)) = &run
            && index.get(*axis).is_some_and(|x| !r.contains(x))
        {
            continue;
        }
        let coords = index
            .iter()
            .map(|&c| u32::try_from(c))
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| {
                ref_err(
                    index.clone(),
                    "chunk index past 2^32 (Icechunk's limit)".into(),
                )
            })?;
        match chunk {
            ChunkRef::Missing => {
                store
                    .session()
                    .write()
                    .await
                    .set_chunk_ref(node.clone(), ChunkIndices(coords), None)
                    .await
                    .map_err(|e| {
                        IcechunkError::icechunk(at, format!("removing a chunk of {path}"), e)
                    })?;
            }
            ChunkRef::Range {
                source,
                offset,
                length,
            } => {
                let (location, checksum) = locations
                    .get(source)
                    .cloned()
                    .ok_or_else(|| ref_err(index.clone(), "source id out of range".into()))?;
                batch.push((
                    ChunkIndices(coords),
                    VirtualChunkRef {
                        location,
                        offset,
                        length,
                        checksum,
                    },
                ));
                refs += 1;
                if batch.len() >= BATCH {
                    flush(std::mem::take(&mut batch)).await?;
                }
            }
            ChunkRef::Inline(bytes) => {
                let session = store.session();
                let writer = session
                    .read()
                    .await
                    .get_chunk_writer(&node, &ChunkIndices(coords.clone()))
                    .map_err(|e| {
                        IcechunkError::icechunk(at, format!("writing a chunk of {path}"), e)
                    })?;
                let payload = writer(Bytes::copy_from_slice(bytes)).await.map_err(|e| {
                    IcechunkError::icechunk(at, format!("writing a chunk of {path}"), e)
                })?;
                session
                    .write()
                    .await
                    .set_chunk_ref(node.clone(), ChunkIndices(coords), Some(payload))
                    .await
                    .map_err(|e| {
                        IcechunkError::icechunk(at, format!("writing a chunk of {path}"), e)
                    })?;
                native += 1;
            }
        }
    }
    if !batch.is_empty() {
        flush(batch).await?;
    }
    Ok((refs, native))
}

fn node_path(path: &str) -> IcPath {
    IcPath::from_trusted(&format!("/{path}"))
}
