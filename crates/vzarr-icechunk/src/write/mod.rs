//! Writing a [`VirtualDataset`] to an Icechunk repository as one commit, or for a large
//! dataset one commit per piece, the branch gaining all of them or none ([`Commits`]).
//!
//! This module holds the options, the result and the write itself: the repository opened or
//! created, the branch, the session(s) committed and, for a build in pieces, the temporary
//! branch and the move of the branch to the last commit. Its submodules:
//! - [`containers`]: the virtual chunk containers a dataset needs, and each source's Icechunk
//!   location and checksum;
//! - [`manifests`]: manifests split along the arrays' axes, and the pieces cut between splits;
//! - [`session`]: what one writable session writes: the documents, a piece's chunks, the commit.

mod containers;
mod manifests;
mod session;

use icechunk::config::{
    CachingConfig, ManifestConfig, ManifestVirtualChunkLocationCompressionConfig,
};
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::snapshot::SnapshotProperties;
use icechunk::repository::{RepositoryErrorKind, VersionInfo};
use icechunk::{Repository, RepositoryConfig};
use serde_json::{Value, json};
use vzarr_core::{VirtualArray, VirtualDataset};

use crate::location::{LocalState, RepoLocation, container_for};
use crate::{IcechunkError, PROPERTY_KEY, VERSION_KEY};

pub use containers::container_prefixes;
pub use manifests::APPEND_SPLIT_REFS;
pub use session::array_document;

use containers::{add_missing_containers, array_locations};
use manifests::{plan_pieces, splitting};
use session::Writer;

/// The default of [`WriteOptions::piece_refs`]: the most chunks (references and native
/// chunks) Icechunk's session holds before they are committed. Icechunk keeps several hundred
/// bytes per reference until a commit writes them out, so this bounds the writer's memory.
pub const PIECE_REFS: usize = 1 << 20;

/// The most references one manifest holds (manifests are split along the arrays' axes, see
/// [`write()`]); never more than [`WriteOptions::piece_refs`]. Below Icechunk's 65,535, the
/// most its configuration can exempt from compressing each reference's URL on its own (a
/// zstd call per reference, a third of a large write's time; the manifest object is still
/// compressed whole, where repeated URLs cost little).
pub const MANIFEST_REFS: usize = 65_000;

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

/// How a write is committed: the policy a build's size chooses by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Commits {
    /// Chosen by size: a dataset of at most [`WriteOptions::piece_refs`] chunks is one
    /// session and one commit; a larger one is written in pieces, one commit each, on a
    /// temporary branch that the branch is then moved to (all the commits or none). Nothing
    /// is amended, so every byte written stays part of the branch's history (no garbage).
    #[default]
    Auto,
    /// One session and one commit whatever the size: Icechunk holds every chunk of it in
    /// memory until the commit (a few hundred bytes a reference).
    One,
    /// One commit per piece: what [`Commits::Auto`] does for more than one piece, asked for
    /// explicitly (a front end's `--commit-per-piece`).
    PerPiece,
}

impl Commits {
    /// [`Commits::PerPiece`] when `yes`, else [`Commits::Auto`] (a front end's on/off flag).
    pub fn per_piece(yes: bool) -> Commits {
        if yes {
            Commits::PerPiece
        } else {
            Commits::Auto
        }
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
    /// How the write is committed: [`Commits::Auto`] (by size) by default.
    pub commits: Commits,
    /// Called after each piece is committed, when Icechunk has dropped the piece's change set
    /// (a program may return freed memory to the system there: with glibc's malloc, freed
    /// memory otherwise stays in the arena of the thread that freed it). `None` by default.
    pub after_piece: Option<fn()>,
    /// An append that changed only some arrays from some chunk on ([`Update`]): the commit
    /// writes those and leaves the rest of the repository as it is. `None` (the default):
    /// the dataset replaces the branch's content.
    pub update: Option<Update>,
}

/// What an append or a replacement changed: the arrays whose chunks at some runs of indices
/// along one axis are new or replaced (their documents are written again too, as are the
/// groups'; chunks of a run that ends no longer stored are removed); every other
/// array of the repository is the dataset's already. Icechunk then writes new manifests only
/// for the manifest splits that hold a changed chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Update {
    /// By array path: the axis and the runs of chunk indices along it that changed (in
    /// order and apart; an end of `u64::MAX` runs to the last chunk).
    pub arrays: std::collections::BTreeMap<String, (usize, Vec<std::ops::Range<u64>>)>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            branch: "main".into(),
            message: "vzarr".into(),
            mode: WriteMode::default(),
            piece_refs: PIECE_REFS,
            commits: Commits::Auto,
            after_piece: None,
            update: None,
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
    /// Pieces the chunks were written in (each committed on a temporary branch when more
    /// than one).
    pub pieces: u64,
    /// Commits the branch gained: one per piece.
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

/// A `map_err` adapter for the `icechunk` crate's errors.
pub(crate) fn ice<E: Into<crate::IcechunkCause>>(
    at: &str,
    op: &str,
) -> impl FnOnce(E) -> IcechunkError {
    let (at, op) = (at.to_string(), op.to_string());
    move |e| IcechunkError::icechunk(&at, op, e)
}

/// Writes `ds` to the repository at `location` on `opts.branch`, with the dataset's
/// provenance in the (last) commit's metadata (key `vzarr`). Nothing reaches the branch
/// unless every node and chunk was written; a local repository this call created is removed
/// again when the write fails.
///
/// Memory stays bounded at any number of references: Icechunk 2.3 holds every chunk of a
/// session in its change set until the commit (a few hundred bytes each), so a dataset of
/// more than `opts.piece_refs` chunks is written in pieces, each committed on its own
/// ([`Commits::Auto`]; [`Commits::One`] keeps one session whatever the size). The pieces go
/// to a temporary branch started at the branch's tip (the first also holds the documents,
/// the last `opts.message` and the provenance, the others say which piece they are); the
/// branch is then moved to the last, only if it still points at the tip (else
/// [`IcechunkError::BranchMoved`]), so it gains all the commits or none. The temporary
/// branch (`vzarr-build.<branch>.<pid>.<time>`) is deleted, also when the write fails
/// (should that fail after the move, [`Written::temporary_branch_left`] names it).
///
/// No commit is amended: Icechunk merges an amended commit's transaction log into the
/// next, so a chain of amends writes every earlier piece's log again (bytes growing with
/// the square of the pieces). Each piece's log holds that piece only, and every byte the
/// write stores stays reachable from the branch.
///
/// An append planned at the tail ([`WriteOptions::update`]) is one commit that writes the
/// group documents and the changed arrays' documents and chunks only (at most
/// `opts.piece_refs` chunks, else [`IcechunkError::UpdateTooLarge`]): Icechunk keeps every manifest split without a changed chunk as it is, so
/// an append along the first axis adds the splits it touches, not the repository again.
///
/// Manifests are split along the arrays' axes so that none holds more than
/// [`MANIFEST_REFS`] references (or `opts.piece_refs`, if fewer; [`APPEND_SPLIT_REFS`] for
/// arrays whose first axis is the concatenation dimension), and pieces are cut
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
    // Arrays along the concatenation dimension are split small along it (appends rewrite
    // the last split only).
    let along = ds
        .provenance
        .concat
        .as_ref()
        .filter(|c| !c.new_dim)
        .map(|c| c.dim.as_str());
    let pieces = plan_pieces(&arrays, piece_refs, split_refs, along);
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
    // splitting of their own), their URLs compressed with the manifest, and no cache of the manifests written (Icechunk keeps up to
    // 15M references of them in memory by default).
    let mut overlay = RepositoryConfig {
        caching: Some(CachingConfig {
            num_chunk_refs: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    let owner = repo.config().manifest.clone().unwrap_or_default();
    let mut manifest = ManifestConfig::default();
    if owner.splitting.is_none() {
        manifest.splitting = Some(splitting(&arrays, split_refs, along));
    }
    // No per-reference URL compression in manifests of fewer than 65,535 references (all of
    // vzarr's own splits), unless the owner configured it.
    if owner.virtual_chunk_location_compression.is_none() {
        manifest.virtual_chunk_location_compression =
            Some(ManifestVirtualChunkLocationCompressionConfig {
                min_num_chunks: Some(u16::MAX),
                ..Default::default()
            });
    }
    overlay.manifest = Some(manifest);
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
    // An append records what it changed of its parent's provenance (a chain is cut by a
    // whole one every FULL_EVERY commits); anything else the whole provenance.
    let change = match &opts.update {
        Some(_) if exists => {
            let tip = VersionInfo::BranchTipRef(opts.branch.clone());
            match crate::delta::provenance_at(&repo, &at, &tip).await? {
                (Some(info), Some(parent), chain)
                    if chain.changes + 1 < crate::delta::FULL_EVERY =>
                {
                    crate::delta::delta(&parent, &info.id.to_string(), &ds.provenance)
                }
                _ => None,
            }
        }
        _ => None,
    };
    match change {
        Some(d) => props.insert(
            crate::delta::DELTA_KEY.into(),
            serde_json::to_value(&d).unwrap_or(Value::Null),
        ),
        None => props.insert(
            PROPERTY_KEY.into(),
            serde_json::to_value(&ds.provenance).unwrap_or(Value::Null),
        ),
    };
    props.insert(VERSION_KEY.into(), json!(env!("CARGO_PKG_VERSION")));
    let w = Writer {
        repo: &repo,
        ds,
        arrays: &arrays,
        locations: &locations,
        at: &at,
    };
    if let Some(update) = &opts.update {
        // An append: the changed arrays only, in one session. Never the branch's content
        // replaced instead: the dataset may hold only what changed.
        if !exists {
            return Err(IcechunkError::NotARepository { location: at });
        }
        let chunks = update_chunks(ds, update);
        if chunks > piece_refs as u64 {
            return Err(IcechunkError::UpdateTooLarge {
                location: at,
                chunks,
                piece: piece_refs,
            });
        }
    }
    if opts.update.is_some() || pieces.len() <= 1 || opts.commits == Commits::One {
        // One session holds everything: what an append changed, or the whole dataset.
        let store = w.store(&opts.branch).await?;
        written.pieces = 1;
        match &opts.update {
            Some(update) => w.write_update(&store, update, &mut written).await?,
            None => {
                w.write_nodes(&store, exists).await?;
                for piece in &pieces {
                    w.write_piece(&store, piece, &mut written).await?;
                }
                written.pieces = pieces.len().max(1) as u64;
            }
        }
        written.commits = 1;
        written.snapshot = w
            .commit(&store, &opts.message, Some(props))
            .await?
            .to_string();
        return Ok(written);
    }
    // Many pieces: each is a commit of its own, so that Icechunk's change set never holds
    // more than one piece. The commits go to a temporary branch started at the branch's tip;
    // the branch is then moved to the last (if nobody moved it meanwhile) and the temporary
    // branch deleted.
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
        let mut last = None;
        for (k, piece) in pieces.iter().enumerate() {
            let store = w.store(&temp).await?;
            if k == 0 {
                w.write_nodes(&store, exists).await?;
            }
            w.write_piece(&store, piece, &mut written).await?;
            let (message, props) = if k + 1 == n {
                (opts.message.clone(), Some(props.clone()))
            } else {
                (piece_message(k + 1, n), None)
            };
            last = Some(w.commit(&store, &message, props).await?);
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
    // The commits are on the branch: a temporary branch that could not be deleted does not
    // undo them, the caller is told instead.
    if deleted.is_err() {
        written.temporary_branch_left = Some(temp);
    }
    written.pieces = pieces.len() as u64;
    written.commits = written.pieces;
    written.snapshot = last.to_string();
    Ok(written)
}

/// At most how many chunks an [`Update`] of `ds` writes (every chunk of an array changed
/// along an axis other than the first).
pub fn update_chunks(ds: &VirtualDataset, update: &Update) -> u64 {
    ds.arrays
        .iter()
        .filter_map(|(path, a)| {
            let (axis, runs) = update.arrays.get(path)?;
            let n = a.manifest.len() as u64;
            if *axis != 0 {
                return Some(n);
            }
            let inner: u64 = a.grid.grid_shape().iter().skip(1).product();
            let at = |i: u64| i.saturating_mul(inner).min(n);
            Some(
                runs.iter()
                    .map(|r| at(r.end) - at(r.start).min(at(r.end)))
                    .sum(),
            )
        })
        .sum()
}

/// The message of a piece's own commit (not the last).
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
