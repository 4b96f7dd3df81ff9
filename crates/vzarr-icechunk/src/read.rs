//! Opening a repository back into a [`VirtualDataset`]: Zarr documents, chunk references and
//! native chunks of a branch's tip, and the provenance of its last commit.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use icechunk::format::manifest::ChunkPayload;
use icechunk::format::snapshot::{NodeData, SnapshotInfo};
use icechunk::format::{ByteRange, ChunkIndices, Path as IcPath};
use icechunk::repository::VersionInfo;
use icechunk::{Repository, Store};
use serde_json::Value;
use tokio::sync::RwLock;
use vzarr_core::{ChunkGrid, DimGrid, Group, Provenance, VirtualArray, VirtualDataset};

use vzarr_source::SourceVersion;

use crate::IcechunkError;
use crate::guard::{ChunkObjects, Target, caught, check_repository};
use crate::location::RepoLocation;
use crate::snapshot::version_of;
use crate::url::decode_file_url;

/// A branch of a repository, opened.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Opened {
    /// The dataset: groups, arrays with their manifests (virtual references as byte ranges,
    /// native chunks inline), and the provenance of the tip commit.
    pub dataset: VirtualDataset,
    /// The Zarr documents (`zarr.json`, `path/zarr.json`) as the repository holds them.
    pub documents: HashMap<String, Bytes>,
    /// Whether the tip commit carries vzarr's provenance.
    pub has_provenance: bool,
    /// The tip snapshot's id.
    pub snapshot: String,
    /// The versions of their sources the virtual references state (Icechunk's checksums), by
    /// source URL, each once: a reader checks them before reading (`vzarr_source::CheckVersions`).
    pub versions: HashMap<String, Vec<SourceVersion>>,
}

/// One commit of a branch's history.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct Commit {
    /// Snapshot id.
    pub id: String,
    /// Commit message.
    pub message: String,
    /// When it was written (RFC 3339).
    pub written_at: String,
}

/// Whether `location` (a local path, or an `s3://`, `gs://` or `az://` URL) holds an Icechunk repository. Local paths
/// are checked without I/O beyond a `stat`; other locations with one request.
pub fn is_repository(location: &str) -> bool {
    let Ok(loc) = RepoLocation::parse(location) else {
        return false;
    };
    match &loc {
        RepoLocation::Local(p) => {
            p.is_dir() && (p.join("repo").is_file() || p.join("refs").is_dir())
        }
        _ => {
            let Ok(rt) = vzarr_source::runtime() else {
                return false;
            };
            rt.block_on(caught(&loc.display(), "looking for a repository", async {
                let s = loc.storage().await?;
                // A `repo` file that fails the checks is a repository (a corrupt one, which
                // opening it reports), not fed to Icechunk here.
                if check_repository(s.as_ref(), &loc.display(), Target::RepoFile)
                    .await
                    .is_err()
                {
                    return Ok(true);
                }
                Ok(Repository::exists(s, None).await.unwrap_or(false))
            }))
            .unwrap_or(false)
        }
    }
}

/// Opens the tip of `branch`, reading at most `max_references` chunk entries (references and
/// native chunks).
///
/// Blocks on vzarr's I/O runtime: call it from outside an async context.
pub fn open(
    location: &RepoLocation,
    branch: &str,
    max_references: u64,
) -> Result<Opened, IcechunkError> {
    let at = location.display();
    vzarr_source::runtime()?.block_on(caught(
        &at,
        "opening the repository",
        open_scoped(location, branch, max_references, None),
    ))
}

/// [`open`] for an append at the tail of a concatenation along `dim`: every document, but
/// chunks only where an append can change them: of the arrays along `dim`, those from the
/// one holding element `start` on (every chunk of an array of at most `whole_up_to` chunks,
/// [`TAIL_ALL_CHUNKS`] for an append); none of the other arrays. Reads the manifests of the
/// last splits along `dim`, not every reference of the repository. The dataset's manifests
/// are missing everything else.
///
/// Blocks on vzarr's I/O runtime: call it from outside an async context.
pub fn open_tail(
    location: &RepoLocation,
    branch: &str,
    max_references: u64,
    (dim, start): (&str, u64),
    whole_up_to: u64,
) -> Result<Opened, IcechunkError> {
    let at = location.display();
    vzarr_source::runtime()?.block_on(caught(
        &at,
        "opening the repository",
        open_scoped(
            location,
            branch,
            max_references,
            Some((dim, start, whole_up_to)),
        ),
    ))
}

/// Arrays of at most this many chunks are read whole by [`open_tail`] (arrays kept inline
/// whole, re-encoded CF time: they change whole).
pub const TAIL_ALL_CHUNKS: u64 = 1 << 16;

/// The commits of `branch`, newest first.
pub fn history(location: &RepoLocation, branch: &str) -> Result<Vec<Commit>, IcechunkError> {
    let at = location.display();
    vzarr_source::runtime()?.block_on(caught(&at, "reading the history", async {
        let repo = open_repo(location, Target::Branch(branch)).await?;
        let commits: Vec<_> = repo
            .ancestry(&VersionInfo::BranchTipRef(branch.to_string()))
            .await
            .map_err(|e| no_branch_or(e, &at, branch))?
            .try_collect()
            .await
            .map_err(|e| IcechunkError::icechunk(&at, "reading the history", e))?;
        Ok(commits
            .into_iter()
            .map(|c| Commit {
                id: c.id.to_string(),
                message: c.message,
                written_at: c.flushed_at.to_rfc3339(),
            })
            .collect())
    }))
}

pub(crate) fn no_branch_or(
    e: icechunk::repository::RepositoryError,
    at: &str,
    branch: &str,
) -> IcechunkError {
    let text = e.to_string();
    if text.contains("ref not found") || text.contains("branch") && text.contains("not found") {
        IcechunkError::NoBranch {
            location: at.to_string(),
            branch: branch.to_string(),
        }
    } else {
        IcechunkError::icechunk(at, format!("looking up branch {branch:?}"), e)
    }
}

/// Opens the repository at `location` for a read of `target`, the files that read decodes
/// checked first (`guard.rs`).
pub(crate) async fn open_repo(
    location: &RepoLocation,
    target: Target<'_>,
) -> Result<Repository, IcechunkError> {
    let at = location.display();
    let storage = location.storage().await?;
    check_repository(storage.as_ref(), &at, target).await?;
    let exists = Repository::exists(storage.clone(), None)
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "looking for a repository", e))?;
    if !exists {
        return Err(IcechunkError::NotARepository { location: at });
    }
    Repository::open(storage)
        .execute()
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "opening the repository", e))
}

async fn open_scoped(
    location: &RepoLocation,
    branch: &str,
    max_references: u64,
    tail: Option<(&str, u64, u64)>,
) -> Result<Opened, IcechunkError> {
    let at = location.display();
    let content = |what: &str, reason: String| IcechunkError::content(&at, what, reason);
    let repo = open_repo(location, Target::Branch(branch)).await?;
    let version = VersionInfo::BranchTipRef(branch.to_string());
    let tip = tip_commit(&repo, &at, branch)
        .await?
        .ok_or_else(|| IcechunkError::NoBranch {
            location: at.clone(),
            branch: branch.to_string(),
        })?;
    let at_tip = VersionInfo::SnapshotId(tip.id.clone());
    let (_, recorded, _) = crate::delta::provenance_at(&repo, &at, &at_tip).await?;
    let session = repo
        .readonly_session(&version)
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "starting a session", e))?;
    let mut ds = VirtualDataset::new();
    let has_provenance = recorded.is_some();
    ds.provenance = recorded.unwrap_or_default();
    let mut documents = HashMap::new();
    let mut versions: HashMap<String, Vec<SourceVersion>> = HashMap::new();
    let nodes: Vec<_> = session
        .list_nodes(&IcPath::root())
        .await
        .map_err(|e| IcechunkError::icechunk(&at, "listing nodes", e))?
        .collect::<Result<_, _>>()
        .map_err(|e| IcechunkError::icechunk(&at, "listing nodes", e))?;
    let mut references = 0u64;
    let storage = location.storage().await?;
    let objects = ChunkObjects::default();
    let session = Arc::new(RwLock::new(session));
    let store = Store::from_session(session.clone()).await;
    for node in nodes {
        let path = node.path.as_str().trim_start_matches('/').to_string();
        let key = if path.is_empty() {
            "zarr.json".to_string()
        } else {
            format!("{path}/zarr.json")
        };
        let doc: Value = serde_json::from_slice(&node.user_data)
            .map_err(|e| content(&key, format!("not JSON: {e}")))?;
        documents.insert(key.clone(), node.user_data.clone());
        match &node.node_data {
            NodeData::Group => {
                let attributes = vzarr_core::netcdf::attributes_of(&doc).unwrap_or_default();
                ds.groups.insert(path, Group { attributes });
            }
            NodeData::Array { .. } => {
                let mut array = VirtualArray::from_zarr_metadata(&doc)
                    .map_err(|e| content(&key, e.to_string()))?;
                // The writer spells a fixed axis of a rectilinear grid as a run of equal
                // edges (see `array_document`): the same axis, back as the model holds it.
                array.grid = ChunkGrid::new(
                    array
                        .grid
                        .dims()
                        .iter()
                        .cloned()
                        .map(DimGrid::normalized)
                        .collect(),
                );
                // Chunks one at a time from Icechunk's stream (or, at the tail, by index),
                // counted against the limit before they are kept; native chunk objects are
                // fetched after the listing.
                let mut native = Vec::new();
                let k = tail
                    .and_then(|(dim, _, _)| array.dimension_names.iter().position(|d| d == dim));
                let counts = array.grid.grid_shape();
                let n_chunks = array.grid.n_chunks().unwrap_or(u64::MAX);
                let first = match (tail, k) {
                    (Some((_, start, _)), Some(k)) => {
                        array.grid.dims()[k].chunk_of(start).unwrap_or(counts[k])
                    }
                    _ => 0,
                };
                let mut keep = |index: Vec<u64>, payload: ChunkPayload| {
                    references += 1;
                    if references > max_references {
                        return Err(content(
                            &path,
                            format!("more than {max_references} chunk entries"),
                        ));
                    }
                    let bad = |reason: String| content(&format!("{path} chunk {index:?}"), reason);
                    let lin = array
                        .grid
                        .linear_index(&index)
                        .ok_or_else(|| bad("outside the chunk grid".into()))?;
                    let lin = usize::try_from(lin).map_err(|_| bad("index too large".into()))?;
                    match payload {
                        ChunkPayload::Virtual(r) => {
                            let url = decode_file_url(r.location.url())
                                .ok_or_else(|| bad(format!("{}: not UTF-8", r.location.url())))?;
                            let s = array
                                .manifest
                                .intern(&url)
                                .map_err(|e| bad(e.to_string()))?;
                            if let Some(c) = &r.checksum {
                                let v = version_of(c);
                                let known = versions.entry(url.clone()).or_default();
                                if !known.contains(&v) {
                                    known.push(v);
                                }
                            }
                            array
                                .manifest
                                .set_range(lin, s, r.offset, r.length)
                                .map_err(|e| bad(e.to_string()))?;
                        }
                        ChunkPayload::Inline(bytes) => array
                            .manifest
                            .set_inline(lin, bytes.to_vec())
                            .map_err(|e| bad(e.to_string()))?,
                        ChunkPayload::Ref(r) => native.push((lin, index, r)),
                        #[allow(unreachable_patterns)]
                        _ => return Err(bad("a chunk payload vzarr does not know".into())),
                    }
                    Ok(())
                };
                match (tail, k) {
                    // Not along the dimension: an append keeps it as it is.
                    (Some(_), None) => {}
                    (Some((_, _, whole)), Some(k)) if n_chunks > whole => {
                        let guard = session.read().await;
                        // Every index with index[k] >= first, in C order.
                        let lo: Vec<u64> = (0..counts.len())
                            .map(|j| if j == k { first } else { 0 })
                            .collect();
                        let mut index = lo.clone();
                        let empty = counts.iter().zip(&lo).any(|(&n, &l)| l >= n);
                        'all: loop {
                            if empty {
                                break;
                            }
                            let coords = index
                                .iter()
                                .map(|&c| u32::try_from(c))
                                .collect::<Result<Vec<u32>, _>>()
                                .map_err(|_| content(&path, "chunk index past 2^32".into()))?;
                            let payload = guard
                                .get_chunk_ref(&node.path, &ChunkIndices(coords))
                                .await
                                .map_err(|e| {
                                    IcechunkError::icechunk(
                                        &at,
                                        format!("reading chunks of {path}"),
                                        e,
                                    )
                                })?;
                            if let Some(payload) = payload {
                                keep(index.clone(), payload)?;
                            }
                            let mut axis = counts.len();
                            loop {
                                if axis == 0 {
                                    break 'all;
                                }
                                axis -= 1;
                                index[axis] += 1;
                                if index[axis] < counts[axis] {
                                    break;
                                }
                                index[axis] = lo[axis];
                            }
                        }
                    }
                    _ => {
                        let guard = session.read().await;
                        let stream = guard.array_chunk_iterator(&node.path).await;
                        let mut stream = std::pin::pin!(stream);
                        while let Some(info) = stream.try_next().await.map_err(|e| {
                            IcechunkError::icechunk(&at, format!("listing chunks of {path}"), e)
                        })? {
                            let index: Vec<u64> =
                                info.coord.0.iter().map(|&c| u64::from(c)).collect();
                            keep(index, info.payload)?;
                        }
                    }
                }
                for (lin, index, r) in native {
                    let ckey = vzarr_core::chunk_key(&path, &index);
                    // Icechunk allocates the length the manifest gives: checked against the
                    // chunk object first.
                    objects
                        .check(
                            storage.as_ref(),
                            &at,
                            &r.id.to_string(),
                            r.offset,
                            r.length,
                            &ckey,
                        )
                        .await?;
                    let bytes = store
                        .get(&ckey, &ByteRange::ALL)
                        .await
                        .map_err(|e| IcechunkError::icechunk(&at, format!("reading {ckey}"), e))?;
                    array
                        .manifest
                        .set_inline(lin, bytes.to_vec())
                        .map_err(|e| content(&ckey, e.to_string()))?;
                }
                ds.arrays.insert(path, array);
            }
        }
    }
    Ok(Opened {
        dataset: ds,
        documents,
        has_provenance,
        snapshot: tip.id.to_string(),
        versions,
    })
}

/// The provenance the tip commit of `branch` records (`None` when it has none: not written
/// by vzarr), without reading the references.
pub fn provenance(
    location: &RepoLocation,
    branch: &str,
) -> Result<Option<Provenance>, IcechunkError> {
    let at = location.display();
    vzarr_source::runtime()?.block_on(caught(&at, "reading the provenance", async {
        let repo = open_repo(location, Target::Branch(branch)).await?;
        // The branch must exist: its tip's error says so.
        tip_commit(&repo, &at, branch).await?;
        let version = VersionInfo::BranchTipRef(branch.to_string());
        Ok(crate::delta::provenance_at(&repo, &at, &version).await?.1)
    }))
}

/// The tip commit of `branch` (`None` for a branch without commits).
async fn tip_commit(
    repo: &Repository,
    at: &str,
    branch: &str,
) -> Result<Option<SnapshotInfo>, IcechunkError> {
    let ancestry = repo
        .ancestry(&VersionInfo::BranchTipRef(branch.to_string()))
        .await
        .map_err(|e| no_branch_or(e, at, branch))?;
    std::pin::pin!(ancestry)
        .next()
        .await
        .transpose()
        .map_err(|e| IcechunkError::icechunk(at, "reading the tip commit", e))
}
