//! One snapshot of a repository, read a key at a time: its Zarr documents and the provenance
//! of its commit at once (a few requests, whatever the number of chunks), each chunk's
//! reference looked up in Icechunk's manifests only when it is asked for. This is how a
//! reader opens a repository of ten million references in the time of its metadata; the
//! byte ranges it returns are for the caller to check and fetch (vzarr-read's `open_sources`).
//!
//! Icechunk's spec: <https://icechunk.io/en/latest/spec/> (snapshots, manifests, virtual chunk
//! references and containers).

use std::collections::HashMap;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use icechunk::format::manifest::{Checksum, ChunkPayload};
use icechunk::format::snapshot::NodeData;
use icechunk::format::{ByteRange, ChunkIndices, Path as IcPath};
use icechunk::repository::VersionInfo;
use icechunk::session::Session;
use serde_json::Value;
use vzarr_core::{ChunkGrid, DimGrid, Provenance, VirtualArray};
use vzarr_source::SourceVersion;

use crate::IcechunkError;
use crate::guard::{ChunkObjects, Target, caught};
use crate::location::RepoLocation;
use crate::read::open_repo;
use crate::url::decode_file_url;

/// Chunk lookups a [`Snapshot::chunks`] call runs at once.
const LOOKUPS_AT_ONCE: usize = 64;

/// What a chunk key of a snapshot holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotChunk {
    /// No chunk is stored there (the fill value).
    Missing,
    /// A byte range of a source (the URL in vzarr's form, not yet checked against any
    /// prefix: the caller checks it before fetching).
    Virtual {
        /// The source's URL.
        url: String,
        /// Where the chunk starts in the source.
        offset: u64,
        /// The chunk's length in bytes.
        length: u64,
        /// What the source must still be for the reference to hold, where the repository
        /// records it (Icechunk's checksum of the reference): the caller checks it before
        /// reading the range.
        version: Option<SourceVersion>,
    },
    /// Bytes the repository holds (an inline chunk, or a native chunk object read from the
    /// repository's own storage).
    Bytes(Bytes),
}

/// The version of its source an Icechunk virtual reference states (its checksum).
pub(crate) fn version_of(c: &Checksum) -> SourceVersion {
    match c {
        Checksum::ETag(e) => SourceVersion::ETag(e.0.clone()),
        Checksum::LastModified(s) => SourceVersion::NotModifiedAfter(s.0),
    }
}

/// An array of a snapshot: its node path and chunk grid.
#[derive(Clone, Debug)]
struct ArrayNode {
    node: IcPath,
    grid: ChunkGrid,
}

/// A snapshot of a repository, opened for reading one key at a time.
pub struct Snapshot {
    at: String,
    session: Session,
    /// The repository's storage, for the checks of native chunks.
    storage: std::sync::Arc<dyn icechunk::Storage + Send + Sync>,
    objects: ChunkObjects,
    snapshot: String,
    documents: HashMap<String, Bytes>,
    arrays: HashMap<String, ArrayNode>,
    provenance: Provenance,
    has_provenance: bool,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("at", &self.at)
            .field("snapshot", &self.snapshot)
            .field("arrays", &self.arrays.len())
            .finish_non_exhaustive()
    }
}

impl Snapshot {
    /// Opens snapshot `snapshot` (an id) when given, else the tip of `branch`: its documents
    /// and its commit's provenance, no manifest.
    ///
    /// Blocks on vzarr's I/O runtime: call it from outside an async context.
    pub fn open(
        location: &RepoLocation,
        branch: &str,
        snapshot: Option<&str>,
    ) -> Result<Snapshot, IcechunkError> {
        vzarr_source::runtime()?.block_on(caught(
            &location.display(),
            "opening the snapshot",
            open_async(location, branch, snapshot),
        ))
    }

    /// The snapshot's id.
    pub fn id(&self) -> &str {
        &self.snapshot
    }

    /// The Zarr documents (`zarr.json`, `path/zarr.json`) as the repository holds them.
    pub fn documents(&self) -> &HashMap<String, Bytes> {
        &self.documents
    }

    /// The provenance vzarr recorded in the snapshot's commit (empty when none).
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// Whether the commit carries vzarr's provenance.
    pub fn has_provenance(&self) -> bool {
        self.has_provenance
    }

    /// The paths of the snapshot's arrays.
    pub fn array_paths(&self) -> impl Iterator<Item = &str> {
        self.arrays.keys().map(String::as_str)
    }

    /// Whether `index` is a chunk of the array at `path` (inside its grid).
    pub fn has_chunk_index(&self, path: &str, index: &[u64]) -> bool {
        self.arrays
            .get(path)
            .is_some_and(|a| a.grid.linear_index(index).is_some())
    }

    /// What the chunks at `keys` (`(array path, chunk index)`) hold, in order; an index outside
    /// an array's grid, or a path that is no array, is `Missing`. Native chunk objects are read
    /// from the repository.
    pub fn chunks(&self, keys: &[(&str, &[u64])]) -> Result<Vec<SnapshotChunk>, IcechunkError> {
        vzarr_source::runtime()?.block_on(caught(&self.at, "reading chunks", async {
            futures::stream::iter(keys.iter().map(|(p, i)| self.chunk(p, i)))
                .buffered(LOOKUPS_AT_ONCE)
                .try_collect()
                .await
        }))
    }

    /// Whether the array at `path` stores any chunk (reads its manifests until the first).
    pub fn stores_chunks(&self, path: &str) -> Result<bool, IcechunkError> {
        let Some(array) = self.arrays.get(path) else {
            return Ok(false);
        };
        vzarr_source::runtime()?.block_on(caught(&self.at, "listing chunks", async {
            let stream = self.session.array_chunk_iterator(&array.node).await;
            let mut stream = std::pin::pin!(stream);
            let first = stream.try_next().await.map_err(|e| {
                IcechunkError::icechunk(&self.at, format!("listing chunks of {path}"), e)
            })?;
            Ok(first.is_some())
        }))
    }

    /// The stored chunks of the array at `path` (references, inline and native), at most
    /// `max` of them (more is an error naming the array).
    pub fn chunk_indices(&self, path: &str, max: u64) -> Result<Vec<Vec<u64>>, IcechunkError> {
        let Some(array) = self.arrays.get(path) else {
            return Ok(Vec::new());
        };
        vzarr_source::runtime()?.block_on(caught(&self.at, "listing chunks", async {
            let stream = self.session.array_chunk_iterator(&array.node).await;
            let mut stream = std::pin::pin!(stream);
            let mut out = Vec::new();
            while let Some(info) = stream.try_next().await.map_err(|e| {
                IcechunkError::icechunk(&self.at, format!("listing chunks of {path}"), e)
            })? {
                if out.len() as u64 >= max {
                    return Err(self.content(path, format!("more than {max} chunk entries")));
                }
                out.push(info.coord.0.iter().map(|&c| u64::from(c)).collect());
            }
            out.sort();
            Ok(out)
        }))
    }

    fn content(&self, what: &str, reason: String) -> IcechunkError {
        IcechunkError::content(&self.at, what, reason)
    }

    async fn chunk(&self, path: &str, index: &[u64]) -> Result<SnapshotChunk, IcechunkError> {
        let Some(array) = self.arrays.get(path) else {
            return Ok(SnapshotChunk::Missing);
        };
        if array.grid.linear_index(index).is_none() {
            return Ok(SnapshotChunk::Missing);
        }
        let what = || format!("{path} chunk {index:?}");
        let Ok(coords) = index.iter().map(|&i| u32::try_from(i)).collect() else {
            return Ok(SnapshotChunk::Missing);
        };
        let coords = ChunkIndices(coords);
        let payload = self
            .session
            .get_chunk_ref(&array.node, &coords)
            .await
            .map_err(|e| IcechunkError::icechunk(&self.at, format!("looking up {}", what()), e))?;
        Ok(match payload {
            None => SnapshotChunk::Missing,
            Some(ChunkPayload::Inline(bytes)) => SnapshotChunk::Bytes(bytes),
            Some(ChunkPayload::Virtual(r)) => {
                let url = self
                    .session
                    .resolve_virtual_location(&r.location)
                    .map_err(|e| self.content(&what(), e.to_string()))?;
                let url = decode_file_url(&url)
                    .ok_or_else(|| self.content(&what(), format!("{url}: not UTF-8")))?;
                SnapshotChunk::Virtual {
                    url,
                    offset: r.offset,
                    length: r.length,
                    version: r.checksum.as_ref().map(version_of),
                }
            }
            Some(ChunkPayload::Ref(r)) => {
                // Icechunk allocates the length the manifest gives: checked against the chunk
                // object first.
                self.objects
                    .check(
                        self.storage.as_ref(),
                        &self.at,
                        &r.id.to_string(),
                        r.offset,
                        r.length,
                        &what(),
                    )
                    .await?;
                let reader = self
                    .session
                    .get_chunk_reader(&array.node, &coords, &ByteRange::ALL)
                    .await
                    .map_err(|e| {
                        IcechunkError::icechunk(&self.at, format!("reading {}", what()), e)
                    })?;
                match reader {
                    None => SnapshotChunk::Missing,
                    Some(fut) => SnapshotChunk::Bytes(fut.await.map_err(|e| {
                        IcechunkError::icechunk(&self.at, format!("reading {}", what()), e)
                    })?),
                }
            }
            #[allow(unreachable_patterns)]
            Some(_) => {
                return Err(self.content(&what(), "a chunk payload vzarr does not know".into()));
            }
        })
    }
}

async fn open_async(
    location: &RepoLocation,
    branch: &str,
    snapshot: Option<&str>,
) -> Result<Snapshot, IcechunkError> {
    let at = location.display();
    let content = |what: &str, reason: String| IcechunkError::content(&at, what, reason);
    let target = match snapshot {
        Some(id) => Target::Snapshot(id),
        None => Target::Branch(branch),
    };
    let repo = open_repo(location, target).await?;
    let storage = location.storage().await?;
    let version = match snapshot {
        Some(id) => VersionInfo::SnapshotId(
            id.try_into()
                .map_err(|_| content("the snapshot id", format!("{id}: not a snapshot id")))?,
        ),
        None => VersionInfo::BranchTipRef(branch.to_string()),
    };
    let session = repo
        .readonly_session(&version)
        .await
        .map_err(|e| crate::read::no_branch_or(e, &at, branch))?;
    let id = session.snapshot_id().clone();
    // The commit of the session's snapshot (not the branch's tip now: it may have moved).
    let info = repo
        .ancestry(&VersionInfo::SnapshotId(id.clone()))
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "reading the commit", e))?;
    let info = std::pin::pin!(info)
        .next()
        .await
        .transpose()
        .map_err(|e| IcechunkError::icechunk(&at, "reading the commit", e))?
        .ok_or_else(|| content("the commit", "the snapshot has no commit".into()))?;
    let recorded =
        crate::delta::provenance_at(&repo, &at, &VersionInfo::SnapshotId(info.id.clone()))
            .await?
            .1;
    let mut documents = HashMap::new();
    let mut arrays = HashMap::new();
    let nodes = session
        .list_nodes(&IcPath::root())
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "listing nodes", e))?;
    for node in nodes {
        let node = node.map_err(|e| IcechunkError::icechunk(&at, "listing nodes", e))?;
        let path = node.path.as_str().trim_start_matches('/').to_string();
        let key = if path.is_empty() {
            "zarr.json".to_string()
        } else {
            format!("{path}/zarr.json")
        };
        if let NodeData::Array { .. } = &node.node_data {
            let doc: Value = serde_json::from_slice(&node.user_data)
                .map_err(|e| content(&key, format!("not JSON: {e}")))?;
            let array =
                VirtualArray::from_zarr_metadata(&doc).map_err(|e| content(&key, e.to_string()))?;
            let grid = ChunkGrid::new(
                array
                    .grid
                    .dims()
                    .iter()
                    .cloned()
                    .map(DimGrid::normalized)
                    .collect(),
            );
            arrays.insert(
                path,
                ArrayNode {
                    node: node.path.clone(),
                    grid,
                },
            );
        }
        documents.insert(key, node.user_data.clone());
    }
    Ok(Snapshot {
        at,
        session,
        storage,
        objects: ChunkObjects::default(),
        snapshot: id.to_string(),
        documents,
        arrays,
        has_provenance: recorded.is_some(),
        provenance: recorded.unwrap_or_default(),
    })
}
