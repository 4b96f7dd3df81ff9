//! Writing a [`VirtualDataset`] to an Icechunk repository as one commit.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::{
    Checksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::format::{ChunkIndices, Path as IcPath};
use icechunk::storage::ETag;
use icechunk::store::SetVirtualRefsResult;
use icechunk::{Repository, RepositoryConfig, Store};
use serde_json::{Value, json};
use tokio::sync::RwLock;
use vzarr_core::{ChunkRef, DimGrid, SourceRecord, VirtualArray, VirtualDataset, group_metadata};

use crate::location::{LocalState, RepoLocation, container_for};
use crate::url::encode_file_url;
use crate::{IcechunkError, PROPERTY_KEY, VERSION_KEY};

/// References handed to Icechunk at once (the session holds them until the commit; batches
/// only bound the temporary vector).
const BATCH: usize = 1 << 16;

/// Whether the repository must exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteMode {
    /// Create the repository if there is none; otherwise replace the branch's content with
    /// the dataset in a new commit (earlier commits stay in the history).
    #[default]
    CreateOrReplace,
    /// The repository must exist (an append): the dataset replaces the branch's content in a
    /// new commit.
    Existing,
}

/// How to write.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// The branch to commit to (created from `main`'s tip when missing in a new repository).
    pub branch: String,
    /// The commit message.
    pub message: String,
    /// Whether the repository must exist.
    pub mode: WriteMode,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            branch: "main".into(),
            message: "vzarr".into(),
            mode: WriteMode::default(),
        }
    }
}

/// What a write did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Written {
    /// The repository.
    pub location: String,
    /// The branch committed to.
    pub branch: String,
    /// The new snapshot's id.
    pub snapshot: String,
    /// Whether the repository was created by this write.
    pub created: bool,
    /// Virtual chunk references written.
    pub virtual_refs: u64,
    /// Chunks written as Icechunk chunks (inline in the manifest or chunk objects).
    pub native_chunks: u64,
    /// The virtual chunk containers (URL prefixes) the dataset's references need, all listed in
    /// the repository's configuration.
    pub containers: Vec<String>,
}

/// A commit message naming vzarr's version, the action and the sources (the first and last
/// few when there are many).
pub fn commit_message(ds: &VirtualDataset, action: &str) -> String {
    let urls: Vec<&str> = match &ds.provenance.concat {
        Some(c) => c.pieces.iter().map(|p| p.url.as_str()).collect(),
        None => ds
            .provenance
            .sources
            .iter()
            .map(|s| s.url.as_str())
            .collect(),
    };
    let list = if urls.len() <= 6 {
        urls.join(", ")
    } else {
        format!(
            "{}, ... ({} more) ..., {}",
            urls[..3].join(", "),
            urls.len() - 5,
            urls[urls.len() - 2..].join(", ")
        )
    };
    format!(
        "vzarr {}: {action} of {} source(s): {list}",
        env!("CARGO_PKG_VERSION"),
        urls.len()
    )
}

/// The URL prefixes of the virtual chunk containers a dataset needs: the prefixes its
/// provenance records, and the directory of every referenced source outside them. Sorted.
pub fn container_prefixes(ds: &VirtualDataset) -> Vec<String> {
    let mut out: BTreeSet<String> = ds.provenance.allowed_prefixes.iter().cloned().collect();
    for a in ds.arrays.values() {
        for url in a.manifest.sources() {
            if !out.iter().any(|p| url.starts_with(p.as_str()))
                && let Some(i) = url.rfind('/')
            {
                out.insert(url[..=i].to_string());
            }
        }
    }
    out.into_iter().collect()
}

/// The checksum Icechunk checks on every read of a source's chunks: the ETag where the store
/// gave one, else the modification time in whole seconds, rounded up (a reader refuses the
/// chunk when the source is modified after it; a sub-second modification time rounded down
/// would refuse the unchanged source).
fn checksum(rec: &SourceRecord) -> Option<Checksum> {
    if let Some(etag) = &rec.etag {
        return Some(Checksum::ETag(ETag(etag.clone())));
    }
    let ns = rec.mtime_ns?;
    let secs = ns.div_euclid(1_000_000_000) + i128::from(ns.rem_euclid(1_000_000_000) != 0);
    u32::try_from(secs)
        .ok()
        .map(|s| Checksum::LastModified(SecondsSinceEpoch(s)))
}

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

/// A `map_err` adapter for the `icechunk` crate's errors.
fn ice<E: Into<crate::IcechunkCause>>(at: &str, op: &str) -> impl FnOnce(E) -> IcechunkError {
    let (at, op) = (at.to_string(), op.to_string());
    move |e| IcechunkError::icechunk(&at, op, e)
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

/// Writes `ds` to the repository at `location` as one commit on `opts.branch`, with the
/// dataset's provenance in the commit's metadata (key `vzarr`). Nothing is committed unless
/// every node and chunk was written; a local repository this call created is removed again
/// when the write fails.
///
/// Blocks on vzarr's I/O runtime: call it from outside an async context.
pub fn write(
    ds: &VirtualDataset,
    location: &RepoLocation,
    opts: &WriteOptions,
) -> Result<Written, IcechunkError> {
    ds.validate()?;
    let at = location.display();
    let state = location.local_state()?;
    if state == Some(LocalState::NonEmptyDir) && !is_local_repo(location) {
        return Err(IcechunkError::NotEmpty { location: at });
    }
    let rt = vzarr_source::runtime()?;
    let result = rt.block_on(write_async(ds, location, opts));
    if result.is_err()
        && let RepoLocation::Local(p) = location
    {
        // Leave nothing behind where nothing was.
        match state {
            Some(LocalState::Absent) => {
                let _ = std::fs::remove_dir_all(p);
            }
            Some(LocalState::EmptyDir) => {
                if let Ok(entries) = std::fs::read_dir(p) {
                    for e in entries.flatten() {
                        let _ = std::fs::remove_dir_all(e.path())
                            .or_else(|_| std::fs::remove_file(e.path()));
                    }
                }
            }
            _ => {}
        }
    }
    result
}

/// Whether a local directory holds an Icechunk repository (its `repo` object, spec version 2,
/// or the `refs` directory of version 1).
fn is_local_repo(location: &RepoLocation) -> bool {
    match location {
        RepoLocation::Local(p) => p.join("repo").is_file() || p.join("refs").is_dir(),
        RepoLocation::S3 { .. } => false,
    }
}

async fn write_async(
    ds: &VirtualDataset,
    location: &RepoLocation,
    opts: &WriteOptions,
) -> Result<Written, IcechunkError> {
    let at = location.display();
    let storage = location.storage().await?;
    let exists = Repository::exists(storage.clone(), None)
        .await
        .map_err(ice(&at, "looking for a repository"))?;
    let prefixes = container_prefixes(ds);
    let containers = prefixes
        .iter()
        .map(|p| container_for(p))
        .collect::<Result<Vec<_>, _>>()?;
    let repo = if exists {
        let mut repo = Repository::open(storage.clone())
            .execute()
            .await
            .map_err(ice(&at, "opening the repository"))?;
        let mut config = repo.config().clone();
        let mut changed = false;
        // Containers the repository lacks are added; one it lists already (perhaps set up by
        // its owner for their readers) is left as it is.
        for c in &containers {
            if config.get_virtual_chunk_container(c.url_prefix()).is_none() {
                config
                    .set_virtual_chunk_container(c.clone())
                    .map_err(|reason| IcechunkError::Container {
                        url: c.url_prefix().to_string(),
                        reason,
                    })?;
                changed = true;
            }
        }
        if changed {
            // A container added before a failed commit is harmless: nothing references it.
            repo = repo
                .reopen(Some(config), None)
                .await
                .map_err(ice(&at, "updating the virtual chunk containers"))?;
            repo.save_config()
                .await
                .map_err(ice(&at, "saving the configuration"))?;
        }
        repo
    } else {
        if opts.mode == WriteMode::Existing {
            return Err(IcechunkError::NotARepository { location: at });
        }
        let mut config = RepositoryConfig::default();
        for c in &containers {
            config
                .set_virtual_chunk_container(c.clone())
                .map_err(|reason| IcechunkError::Container {
                    url: c.url_prefix().to_string(),
                    reason,
                })?;
        }
        Repository::create(storage.clone())
            .config(config)
            .spec_version(SpecVersionBin::V2)
            .execute()
            .await
            .map_err(ice(&at, "creating the repository"))?
    };
    let branches = repo
        .list_branches()
        .await
        .map_err(ice(&at, "listing branches"))?;
    if !branches.contains(&opts.branch) {
        if exists {
            return Err(IcechunkError::NoBranch {
                location: at,
                branch: opts.branch.clone(),
            });
        }
        let tip = repo
            .lookup_branch("main")
            .await
            .map_err(ice(&at, "looking up main"))?;
        repo.create_branch(&opts.branch, &tip)
            .await
            .map_err(ice(&at, "creating the branch"))?;
    }
    let mut session = repo
        .writable_session(&opts.branch)
        .await
        .map_err(ice(&at, "starting a session"))?;
    if exists {
        session
            .clear()
            .await
            .map_err(ice(&at, "clearing the branch"))?;
    }
    let store = Store::from_session(Arc::new(RwLock::new(session))).await;
    let mut written = Written {
        location: at.clone(),
        branch: opts.branch.clone(),
        snapshot: String::new(),
        created: !exists,
        virtual_refs: 0,
        native_chunks: 0,
        containers: containers
            .iter()
            .map(|c| c.url_prefix().to_string())
            .collect(),
    };
    let root = ds.groups.get("").cloned().unwrap_or_default();
    store
        .set(
            "zarr.json",
            Bytes::from(group_metadata(&root.attributes).to_string()),
        )
        .await
        .map_err(ice(&at, "writing zarr.json"))?;
    for (path, group) in ds.groups.iter().filter(|(p, _)| !p.is_empty()) {
        let key = meta_key(path);
        store
            .set(
                &key,
                Bytes::from(group_metadata(&group.attributes).to_string()),
            )
            .await
            .map_err(ice(&at, &format!("writing {key}")))?;
    }
    let checksums: HashMap<&str, Option<Checksum>> = ds
        .provenance
        .sources
        .iter()
        .map(|s| (s.url.as_str(), checksum(s)))
        .collect();
    for (path, array) in &ds.arrays {
        let key = meta_key(path);
        store
            .set(&key, Bytes::from(array_document(array).to_string()))
            .await
            .map_err(ice(&at, &format!("writing {key}")))?;
        let (v, n) = write_chunks(&store, path, array, &checksums, &prefixes, &at).await?;
        written.virtual_refs += v;
        written.native_chunks += n;
    }
    let session = store.session();
    let mut session = session.write().await;
    let mut props = icechunk::format::snapshot::SnapshotProperties::new();
    props.insert(
        PROPERTY_KEY.into(),
        serde_json::to_value(&ds.provenance).unwrap_or(Value::Null),
    );
    props.insert(VERSION_KEY.into(), json!(env!("CARGO_PKG_VERSION")));
    let id = session
        .commit(opts.message.clone())
        .properties(props)
        .allow_empty(true)
        .execute()
        .await
        .map_err(ice(&at, "committing"))?;
    written.snapshot = id.to_string();
    Ok(written)
}

/// Writes the chunks of one array: references in batches, inline chunks as Icechunk chunks.
/// Returns (references, native chunks).
async fn write_chunks(
    store: &Store,
    path: &str,
    array: &VirtualArray,
    checksums: &HashMap<&str, Option<Checksum>>,
    prefixes: &[String],
    at: &str,
) -> Result<(u64, u64), IcechunkError> {
    let node = ic_path(path)?;
    let ref_err = |index: Vec<u64>, reason: String| IcechunkError::Reference {
        array: path.to_string(),
        index,
        reason,
    };
    // Icechunk's location of each source, once. Every source must lie under a container of
    // the repository (`container_prefixes` made them so): checked here, because Icechunk 2.3
    // checks a location at write time without percent-decoding it and at read time after
    // decoding it, so its own check would refuse `file:///dir with space/x.nc` under the
    // container `file:///dir with space/` that its readers match.
    let locations = array
        .manifest
        .sources()
        .iter()
        .map(|u| {
            if !prefixes.iter().any(|p| u.starts_with(p.as_str())) {
                return Err(ref_err(
                    Vec::new(),
                    format!("{u}: outside every virtual chunk container of the repository"),
                ));
            }
            VirtualChunkLocation::from_url(&encode_file_url(u))
                .map(|l| (&**u, (l, checksums.get(&**u).cloned().flatten())))
                .map_err(|e| ref_err(Vec::new(), format!("{u}: not a URL Icechunk takes: {e}")))
        })
        .collect::<Result<HashMap<&str, _>, _>>()?;
    let mut batch: Vec<(ChunkIndices, VirtualChunkRef)> =
        Vec::with_capacity(BATCH.min(array.manifest.stored()));
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
    for (i, chunk) in array.manifest.iter_stored() {
        let index = array.grid.chunk_index(i as u64);
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
            ChunkRef::Missing => {}
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
