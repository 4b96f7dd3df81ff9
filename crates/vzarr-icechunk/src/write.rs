//! Writing a [`VirtualDataset`] to an Icechunk repository as one commit (or, for a large
//! dataset, one commit per piece when asked: [`Commits`]).

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use icechunk::config::{
    CachingConfig, ManifestConfig, ManifestSplitCondition, ManifestSplitDim,
    ManifestSplitDimCondition, ManifestSplittingConfig,
};
use icechunk::format::SnapshotId;
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::{
    Checksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::format::snapshot::SnapshotProperties;
use icechunk::format::{ChunkIndices, Path as IcPath};
use icechunk::repository::RepositoryErrorKind;
use icechunk::storage::ETag;
use icechunk::store::SetVirtualRefsResult;
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{Repository, RepositoryConfig, Store};
use serde_json::{Value, json};
use tokio::sync::RwLock;
use vzarr_core::{ChunkRef, DimGrid, SourceRecord, VirtualArray, VirtualDataset, group_metadata};

use crate::location::{LocalState, RepoLocation, container_for};
use crate::url::encode_file_url;
use crate::{IcechunkError, PROPERTY_KEY, VERSION_KEY};

/// References handed to Icechunk's store at once (bounds the temporary vector only).
const BATCH: usize = 1 << 16;

/// The default of [`WriteOptions::piece_refs`]: the most chunks (references and native
/// chunks) Icechunk's session holds before they are committed. Icechunk keeps several hundred
/// bytes per reference until a commit writes them out, so this bounds the writer's memory.
pub const PIECE_REFS: usize = 1 << 20;

/// The most references one manifest holds (manifests are split along the arrays' axes, see
/// [`write()`]); never more than [`WriteOptions::piece_refs`].
pub const MANIFEST_REFS: usize = 1 << 18;

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

/// How a build written in pieces is committed (see [`write()`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Commits {
    /// The branch gains one commit: each piece amends the one before. Icechunk merges the
    /// transaction logs of the amended commits, so the memory of the last commit grows with
    /// every chunk of the build (about 100 bytes a chunk).
    #[default]
    One,
    /// The branch gains one commit per piece (the last with the message and the provenance;
    /// the others say which piece they hold), all or none: memory stays that of one piece at
    /// any number of chunks.
    PerPiece,
}

impl Commits {
    /// [`Commits::PerPiece`] when `yes`, else [`Commits::One`] (a front end's on/off flag).
    pub fn per_piece(yes: bool) -> Commits {
        if yes { Commits::PerPiece } else { Commits::One }
    }
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
    /// The most chunks (references and native chunks) written in one piece, the unit held
    /// in memory; [`PIECE_REFS`] by default, 0 counts as 1. A dataset of more is written in
    /// several pieces, committed as [`WriteOptions::commits`] says (see [`write()`]).
    pub piece_refs: usize,
    /// How the pieces are committed: [`Commits::One`] by default.
    pub commits: Commits,
    /// Called after each piece is committed, when Icechunk has dropped the piece's change set
    /// (a program may return freed memory to the system there: with glibc's malloc, freed
    /// memory otherwise stays in the arena of the thread that freed it). `None` by default.
    pub after_piece: Option<fn()>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            branch: "main".into(),
            message: "vzarr".into(),
            mode: WriteMode::default(),
            piece_refs: PIECE_REFS,
            commits: Commits::One,
            after_piece: None,
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
    /// Pieces the chunks were written in (each committed on a temporary branch and amended
    /// into the next when more than one, unless [`Commits::PerPiece`]).
    pub pieces: u64,
    /// Commits the branch gained: 1, or with [`Commits::PerPiece`] one per piece.
    pub commits: u64,
    /// The temporary branch of a build in pieces, when the build succeeded but deleting the
    /// branch failed (it can be deleted by hand; nothing needs it).
    pub temporary_branch_left: Option<String>,
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
/// Memory stays bounded at any number of references: Icechunk 2.3 holds every chunk of a
/// session in its change set until the commit (several hundred bytes each), so a dataset of
/// more than `opts.piece_refs` chunks is written in pieces. The pieces go to a temporary
/// branch started at the branch's tip: the documents first, as one commit, then each piece
/// as a commit amending the one before (the last with `opts.message` and the provenance), so
/// the final commit's parent is still the tip. The branch is then moved to it, only if it
/// still points at the tip (else [`IcechunkError::BranchMoved`]), and the temporary branch
/// (`vzarr-build.<branch>.<pid>.<time>`) is deleted, also when the write fails (should that
/// fail after the commit, [`Written::temporary_branch_left`] names it). The branch
/// thus gains exactly one commit; the intermediate snapshots are unreachable and Icechunk's
/// garbage collection removes them. Repositories of spec version 1, which cannot amend, get
/// one piece. With [`Commits::PerPiece`] nothing is amended: every piece stays a commit of
/// its own (the first also holds the documents), and the branch, moved the same way, gains
/// them all or none.
///
/// Manifests are split along the arrays' axes so that none holds more than
/// [`MANIFEST_REFS`] references (or `opts.piece_refs`, if fewer), and pieces are cut
/// between splits, so every manifest is written once; a splitting configured in the
/// repository by its owner is used instead.
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
        _ => false,
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
    let arrays: Vec<(&str, &VirtualArray)> =
        ds.arrays.iter().map(|(p, a)| (p.as_str(), a)).collect();
    // Every reference's location, checked before anything is written.
    let locations = arrays
        .iter()
        .map(|(path, array)| array_locations(path, array, ds, &prefixes))
        .collect::<Result<Vec<_>, _>>()?;
    let piece_refs = opts.piece_refs.max(1);
    let split_refs = piece_refs.min(MANIFEST_REFS);
    let pieces = plan_pieces(&arrays, piece_refs, split_refs);
    let repo = if exists {
        let mut repo = Repository::open(storage.clone())
            .execute()
            .await
            .map_err(ice(&at, "opening the repository"))?;
        let mut config = repo.config().clone();
        // Containers the repository lacks are added; one it lists already (perhaps set up by
        // its owner for their readers) is left as it is.
        if add_missing_containers(&mut config, &containers)? {
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
        add_missing_containers(&mut config, &containers)?;
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
    // The writer's own view of the repository, never saved: manifests split so that none
    // holds more than `split_refs` references (unless the repository's owner configured a
    // splitting of their own), and no cache of the manifests written (Icechunk keeps up to
    // 15M references of them in memory by default).
    let mut overlay = RepositoryConfig {
        caching: Some(CachingConfig {
            num_chunk_refs: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    if repo
        .config()
        .manifest
        .as_ref()
        .and_then(|m| m.splitting.as_ref())
        .is_none()
    {
        overlay.manifest = Some(ManifestConfig {
            splitting: Some(splitting(&arrays, split_refs)),
            ..Default::default()
        });
    }
    let repo = Repository::open(storage.clone())
        .config(overlay)
        .execute()
        .await
        .map_err(ice(&at, "opening the repository for writing"))?;
    let mut written = Written {
        location: at.clone(),
        branch: opts.branch.clone(),
        snapshot: String::new(),
        created: !exists,
        virtual_refs: 0,
        native_chunks: 0,
        pieces: 0,
        commits: 0,
        temporary_branch_left: None,
        containers: containers
            .iter()
            .map(|c| c.url_prefix().to_string())
            .collect(),
    };
    let mut props = SnapshotProperties::new();
    props.insert(
        PROPERTY_KEY.into(),
        serde_json::to_value(&ds.provenance).unwrap_or(Value::Null),
    );
    props.insert(VERSION_KEY.into(), json!(env!("CARGO_PKG_VERSION")));
    let w = Writer {
        repo: &repo,
        ds,
        arrays: &arrays,
        locations: &locations,
        at: &at,
    };
    let per_piece = opts.commits == Commits::PerPiece;
    if pieces.len() <= 1 || (!per_piece && repo.spec_version() < SpecVersionBin::V2) {
        // One session holds everything (Icechunk amends only spec-version-2 commits).
        let store = w.store(&opts.branch).await?;
        w.write_nodes(&store, exists).await?;
        for piece in &pieces {
            w.write_piece(&store, piece, &mut written).await?;
        }
        written.pieces = pieces.len().max(1) as u64;
        written.commits = 1;
        written.snapshot = w
            .commit(&store, &opts.message, Some(props), false)
            .await?
            .to_string();
        return Ok(written);
    }
    // Many pieces: each is committed, so that Icechunk's change set never holds more than
    // one piece. The commits go to a temporary branch started at the branch's tip, each
    // amending the one before (unless per piece), so the last has the tip as its parent; the
    // branch is then moved there (if nobody moved it meanwhile) and the temporary branch
    // deleted.
    let tip = repo
        .lookup_branch(&opts.branch)
        .await
        .map_err(ice(&at, "looking up the branch"))?;
    let temp = temporary_branch(&opts.branch);
    repo.create_branch(&temp, &tip)
        .await
        .map_err(ice(&at, "creating a temporary branch"))?;
    let result = async {
        let n = pieces.len();
        if !per_piece {
            let store = w.store(&temp).await?;
            w.write_nodes(&store, exists).await?;
            w.commit(&store, &progress(0, n), None, false).await?;
        }
        let mut last = None;
        for (k, piece) in pieces.iter().enumerate() {
            let store = w.store(&temp).await?;
            if per_piece && k == 0 {
                w.write_nodes(&store, exists).await?;
            }
            w.write_piece(&store, piece, &mut written).await?;
            let (message, props) = if k + 1 == n {
                (opts.message.clone(), Some(props.clone()))
            } else if per_piece {
                (piece_message(k + 1, n), None)
            } else {
                (progress(k + 1, n), None)
            };
            last = Some(w.commit(&store, &message, props, !per_piece).await?);
            drop(store);
            if let Some(f) = opts.after_piece {
                f();
            }
        }
        let last = last.expect("several pieces");
        repo.reset_branch(&opts.branch, &last, Some(&tip))
            .await
            .map_err(|e| match e.kind {
                RepositoryErrorKind::Conflict { .. } => IcechunkError::BranchMoved {
                    location: at.clone(),
                    branch: opts.branch.clone(),
                },
                _ => IcechunkError::icechunk(&at, "moving the branch to the new commit", e),
            })?;
        Ok::<_, IcechunkError>(last)
    }
    .await;
    let deleted = repo.delete_branch(&temp).await;
    let last = result?;
    // The commit is on the branch: a temporary branch that could not be deleted does not
    // undo it, the caller is told instead.
    if deleted.is_err() {
        written.temporary_branch_left = Some(temp);
    }
    written.pieces = pieces.len() as u64;
    written.commits = if per_piece { written.pieces } else { 1 };
    written.snapshot = last.to_string();
    Ok(written)
}

/// The message of an intermediate commit (amended away by the next).
fn progress(done: usize, of: usize) -> String {
    format!("vzarr: build in progress ({done} of {of} pieces)")
}

/// The message of a piece's own commit ([`Commits::PerPiece`]; not the last).
fn piece_message(done: usize, of: usize) -> String {
    format!("vzarr: piece {done} of {of} of a build (complete only in the last)")
}

/// A branch name no one else uses: the build's temporary branch.
fn temporary_branch(branch: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("vzarr-build.{branch}.{}.{nanos:x}", std::process::id())
}

/// The Icechunk location and checksum of each source of an array.
type Locations<'a> = HashMap<&'a str, (VirtualChunkLocation, Option<Checksum>)>;

/// Icechunk's location of each source of `array`, once. Every source must lie under a
/// container of the repository (`container_prefixes` made them so): checked here, because
/// Icechunk 2.3 checks a location at write time without percent-decoding it and at read time
/// after decoding it, so its own check would refuse `file:///dir with space/x.nc` under the
/// container `file:///dir with space/` that its readers match.
fn array_locations<'a>(
    path: &str,
    array: &'a VirtualArray,
    ds: &VirtualDataset,
    prefixes: &[String],
) -> Result<Locations<'a>, IcechunkError> {
    let checksums: HashMap<&str, Option<Checksum>> = ds
        .provenance
        .sources
        .iter()
        .map(|s| (s.url.as_str(), checksum(s)))
        .collect();
    let ref_err = |reason: String| IcechunkError::Reference {
        array: path.to_string(),
        index: Vec::new(),
        reason,
    };
    array
        .manifest
        .sources()
        .iter()
        .map(|u| {
            if !prefixes.iter().any(|p| u.starts_with(p.as_str())) {
                return Err(ref_err(format!(
                    "{u}: outside every virtual chunk container of the repository"
                )));
            }
            VirtualChunkLocation::from_url(&encode_file_url(u))
                .map(|l| (&**u, (l, checksums.get(&**u).cloned().flatten())))
                .map_err(|e| ref_err(format!("{u}: not a URL Icechunk takes: {e}")))
        })
        .collect()
}

/// Consecutive stored chunks of one array, written in one go.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Segment {
    /// Index into the dataset's arrays (in path order).
    array: usize,
    /// C-order positions.
    range: Range<usize>,
}

/// How an array's chunks are split into manifests: axes before `axis` one chunk wide, `axis`
/// in runs of `size` chunks, the axes after it whole. Each split is then a run of consecutive
/// C-order positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    axis: usize,
    size: u64,
    /// Chunks of the axes after `axis` (one step along `axis`).
    inner: u64,
    /// Chunks along `axis`.
    along: u64,
}

impl Split {
    /// The split of an array whose grid has `counts` chunks per axis, none holding more than
    /// `max` chunks; `None` when the whole array fits in one.
    fn of(counts: &[u64], max: u64) -> Option<Split> {
        let max = max.max(1);
        let total = counts
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n.max(1)));
        if total.is_some_and(|t| t <= max) {
            return None;
        }
        for axis in 0..counts.len() {
            let inner = counts[axis + 1..]
                .iter()
                .try_fold(1u64, |a, &n| a.checked_mul(n.max(1)));
            if let Some(inner) = inner.filter(|&i| i <= max) {
                let along = counts[axis].max(1);
                return Some(Split {
                    axis,
                    size: (max / inner).clamp(1, along),
                    inner,
                    along,
                });
            }
        }
        None
    }

    /// Which split C-order position `i` falls in (increasing with `i`).
    fn key(&self, i: u64) -> (u64, u64) {
        let block = self.along * self.inner;
        (i / block, (i % block) / self.inner / self.size)
    }
}

/// Icechunk's manifest splitting for the dataset's arrays: one rule per array that needs
/// splitting (its path matched exactly), as [`Split::of`] chooses.
fn splitting(arrays: &[(&str, &VirtualArray)], max: usize) -> ManifestSplittingConfig {
    let rules = arrays
        .iter()
        .filter_map(|(path, a)| {
            let split = Split::of(&a.grid.grid_shape(), max as u64)?;
            let mut dims: Vec<ManifestSplitDim> = (0..split.axis)
                .map(|axis| ManifestSplitDim {
                    condition: ManifestSplitDimCondition::Axis(axis),
                    num_chunks: 1,
                })
                .collect();
            dims.push(ManifestSplitDim {
                condition: ManifestSplitDimCondition::Axis(split.axis),
                num_chunks: u32::try_from(split.size).unwrap_or(u32::MAX),
            });
            Some((
                ManifestSplitCondition::PathMatches {
                    regex: format!("^{}$", regex_escape(&format!("/{path}"))),
                },
                dims,
            ))
        })
        .collect();
    ManifestSplittingConfig {
        split_sizes: Some(rules),
    }
}

/// `text` as a regular expression matching exactly it (the `regex` crate's meta characters
/// escaped).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The dataset's stored chunks in pieces of at most `piece` chunks (more only when one
/// manifest split holds more), cut only between manifest splits of `split` chunks, so that
/// every manifest is written once. Arrays in path order, chunks in C order.
fn plan_pieces(arrays: &[(&str, &VirtualArray)], piece: usize, split: usize) -> Vec<Vec<Segment>> {
    let mut pieces: Vec<Vec<Segment>> = Vec::new();
    let mut current: Vec<Segment> = Vec::new();
    let mut count = 0usize;
    let mut close = |array: usize, range: Range<usize>, n: usize| {
        if count > 0 && count + n > piece {
            pieces.push(std::mem::take(&mut current));
            count = 0;
        }
        match current.last_mut() {
            Some(s) if s.array == array => s.range.end = range.end,
            _ => current.push(Segment { array, range }),
        }
        count += n;
    };
    for (k, (_, a)) in arrays.iter().enumerate() {
        let split = Split::of(&a.grid.grid_shape(), split as u64);
        let key = |i: usize| split.map(|s| s.key(i as u64)).unwrap_or_default();
        // The run of stored chunks in the current split: (key, start, end, count).
        let mut run: Option<((u64, u64), usize, usize, usize)> = None;
        for (i, _) in a.manifest.iter_stored() {
            match &mut run {
                Some((kk, _, end, n)) if *kk == key(i) => {
                    *end = i + 1;
                    *n += 1;
                }
                _ => {
                    if let Some((_, start, end, n)) = run.take() {
                        close(k, start..end, n);
                    }
                    run = Some((key(i), i, i + 1, 1));
                }
            }
        }
        if let Some((_, start, end, n)) = run {
            close(k, start..end, n);
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// What every piece of a write shares.
struct Writer<'a> {
    repo: &'a Repository,
    ds: &'a VirtualDataset,
    arrays: &'a [(&'a str, &'a VirtualArray)],
    locations: &'a [Locations<'a>],
    at: &'a str,
}

impl Writer<'_> {
    /// A store over a new writable session on `branch`.
    async fn store(&self, branch: &str) -> Result<Store, IcechunkError> {
        let session = self
            .repo
            .writable_session(branch)
            .await
            .map_err(ice(self.at, "starting a session"))?;
        Ok(Store::from_session(Arc::new(RwLock::new(session))).await)
    }

    /// The group and array documents (after clearing the branch when `clear`).
    async fn write_nodes(&self, store: &Store, clear: bool) -> Result<(), IcechunkError> {
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
        let root = self.ds.groups.get("").cloned().unwrap_or_default();
        store
            .set(
                "zarr.json",
                Bytes::from(group_metadata(&root.attributes).to_string()),
            )
            .await
            .map_err(ice(at, "writing zarr.json"))?;
        for (path, group) in self.ds.groups.iter().filter(|(p, _)| !p.is_empty()) {
            let key = meta_key(path);
            store
                .set(
                    &key,
                    Bytes::from(group_metadata(&group.attributes).to_string()),
                )
                .await
                .map_err(ice(at, &format!("writing {key}")))?;
        }
        for (path, array) in self.arrays {
            let key = meta_key(path);
            store
                .set(&key, Bytes::from(array_document(array).to_string()))
                .await
                .map_err(ice(at, &format!("writing {key}")))?;
        }
        Ok(())
    }

    /// The chunks of one piece: references in batches, inline chunks as Icechunk chunks.
    async fn write_piece(
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
                &self.locations[s.array],
                self.at,
            )
            .await?;
            written.virtual_refs += v;
            written.native_chunks += n;
        }
        Ok(())
    }

    /// Commits the session of `store` (amending the branch's tip when `amend`).
    async fn commit(
        &self,
        store: &Store,
        message: &str,
        props: Option<SnapshotProperties>,
        amend: bool,
    ) -> Result<SnapshotId, IcechunkError> {
        let session = store.session();
        let mut session = session.write().await;
        let mut commit = session.commit(message).allow_empty(true);
        if let Some(props) = props {
            commit = commit.properties(props);
        }
        if amend {
            commit = commit.amend();
        }
        commit.execute().await.map_err(ice(self.at, "committing"))
    }
}

/// Writes the stored chunks of `array` at C-order positions `range`: references in batches,
/// inline chunks as Icechunk chunks. Returns (references, native chunks).
async fn write_chunks(
    store: &Store,
    path: &str,
    array: &VirtualArray,
    range: Range<usize>,
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
    for (i, chunk) in array.manifest.iter_stored_in(range) {
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

/// Adds to `config` the virtual chunk containers of `containers` it does not list yet (one it
/// lists is left as it is); returns whether any was added.
fn add_missing_containers(
    config: &mut RepositoryConfig,
    containers: &[VirtualChunkContainer],
) -> Result<bool, IcechunkError> {
    let mut changed = false;
    for c in containers {
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
    Ok(changed)
}

fn node_path(path: &str) -> IcPath {
    IcPath::from_trusted(&format!("/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::{ChunkGrid, ChunkManifest, DataType, Endian, FillValue};

    #[test]
    fn splits_are_runs_of_c_order() {
        // Fits whole.
        assert_eq!(Split::of(&[4, 5], 20), None);
        assert_eq!(Split::of(&[], 1), None);
        // The last axis alone fits: rows split in runs of 4 chunks.
        let s = Split::of(&[7, 5], 4).unwrap();
        assert_eq!((s.axis, s.size, s.inner, s.along), (1, 4, 1, 5));
        let keys: Vec<_> = (0..10).map(|i| s.key(i)).collect();
        assert_eq!(
            keys,
            [
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 1),
                (1, 0),
                (1, 0),
                (1, 0),
                (1, 0),
                (1, 1)
            ]
        );
        // Whole rows fit: the first axis in runs of 3 rows.
        let s = Split::of(&[10, 2, 3], 20).unwrap();
        assert_eq!((s.axis, s.size, s.inner), (0, 3, 6));
        assert_eq!(s.key(17), (0, 0));
        assert_eq!(s.key(18), (0, 1));
        // Every split is a run of consecutive positions of at most `max` chunks.
        for (counts, max) in [(vec![7u64, 5], 4u64), (vec![3, 4, 5], 7), (vec![9], 2)] {
            let s = Split::of(&counts, max).unwrap();
            let total: u64 = counts.iter().product();
            let mut seen = std::collections::HashMap::new();
            let mut last = None;
            for i in 0..total {
                let k = s.key(i);
                if last != Some(k) {
                    assert!(!seen.contains_key(&k), "{counts:?}: split {k:?} not a run");
                }
                *seen.entry(k).or_insert(0u64) += 1;
                last = Some(k);
            }
            assert!(seen.values().all(|&n| n <= max), "{counts:?}");
        }
    }

    fn array(n: usize, stored: &[usize]) -> VirtualArray {
        let mut manifest = ChunkManifest::new_missing(n);
        let s = manifest.intern("file:///d/x.nc").unwrap();
        for &i in stored {
            manifest.set_range(i, s, i as u64, 1).unwrap();
        }
        VirtualArray {
            data_type: DataType::Int8,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Int8),
            codecs: vec![],
            dimension_names: vec!["x".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[n as u64], &[1]).unwrap(),
            manifest,
        }
    }

    #[test]
    fn pieces_end_between_splits() {
        let a = array(10, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let b = array(5, &[1, 3]);
        let arrays = [("a", &a), ("b", &b)];
        let seg = |array, range| Segment { array, range };
        // Splits of 2 chunks, pieces of at most 4.
        assert_eq!(
            plan_pieces(&arrays, 4, 2),
            [
                vec![seg(0, 0..4)],
                vec![seg(0, 4..8)],
                vec![seg(0, 8..10), seg(1, 1..4)]
            ]
        );
        // Pieces of 3 with splits of 2: a piece holds one split (2 chunks), never cuts one.
        let p = plan_pieces(&arrays, 3, 2);
        assert_eq!(p.len(), 6);
        assert!(
            p.iter()
                .all(|piece| piece.iter().all(|s| s.range.start % 2 == 0 || s.array == 1))
        );
        // Everything in one piece.
        assert_eq!(
            plan_pieces(&arrays, 100, 100),
            [vec![seg(0, 0..10), seg(1, 1..4)]]
        );
        assert!(plan_pieces(&[("e", &array(3, &[]))], 1, 1).is_empty());
    }

    #[test]
    fn split_rules_match_exactly_their_array() {
        let a = array(10, &[0]);
        for path in ["a", "g/v", "x.y+z (1)", "t[0]^$", "é/ü"] {
            let cfg = splitting(&[(path, &a)], 2);
            let (cond, dims) = &cfg.split_sizes.as_ref().unwrap()[0];
            assert!(
                cond.matches(&IcPath::new(&format!("/{path}")).unwrap()),
                "{path}"
            );
            assert!(
                !cond.matches(&IcPath::new(&format!("/{path}x")).unwrap()),
                "{path}"
            );
            assert!(
                !cond.matches(&IcPath::new(&format!("/q/{path}")).unwrap()),
                "{path}"
            );
            assert_eq!(dims.len(), 1);
            assert_eq!(dims[0].num_chunks, 2);
        }
    }
}
