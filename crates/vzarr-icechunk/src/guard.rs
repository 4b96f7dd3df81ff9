//! Repository files checked before the `icechunk` crate decodes them, so that no file of a
//! repository (a bit flipped, a file cut short, one written to hurt) drives it into an abort
//! or a hang: Icechunk allocates what a zstd frame header declares (up to 16 GiB) and what a
//! snapshot says a manifest's size is, follows flexbuffer offsets with no bound on depth (an
//! offset of 0 is a cycle: the stack overflows), and walks a commit's parents with no bound.
//!
//! [`check_repository`] reads the `repo` file and the snapshot a read will open, each whole
//! (at most [`MAX_METADATA_FILE`] bytes), and checks: the file header (type, zstd); the
//! decoded size, bounded by [`MAX_DECODED_FILE`] and [`MAX_INFLATION`] times the file's size
//! (declared in the frame or, when not, counted while decoding); the flatbuffers as Icechunk
//! verifies them; every flexbuffer (the configuration, commit metadata) walked with a bound
//! on depth and on values; the parents of every commit (an index of the list, no cycle); the
//! node types of the snapshot; and, for each manifest the snapshot lists, its recorded size
//! (at most the object's) and the decoded size its frame header declares. Native chunks are
//! checked against the size of the object that holds them ([`ChunkObjects`]) before Icechunk
//! reads them. Errors name the repository, the file and the reason
//! ([`IcechunkError::Corrupt`]).
//!
//! What is left (a panic of the `icechunk` crate on a file these checks let through) is
//! caught by the readers (`read.rs`, `snapshot.rs`) as the repository's error.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::Read as _;

use futures::TryStreamExt as _;
use icechunk::Storage;
use icechunk::format::SnapshotId;
use icechunk::format::flatbuffers::generated;
use icechunk::format::format_constants::{
    CompressionAlgorithmBin, FileTypeBin, ICECHUNK_FILE_HEADER_LEN, SpecVersionBin,
    parse_file_header,
};
use icechunk::format::repo_info::RepoInfo;
use icechunk::format::snapshot::Snapshot;
use icechunk::storage::{Settings, StorageContext, StorageErrorKind};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use tokio::io::AsyncReadExt as _;

use crate::IcechunkError;

/// Largest repository metadata file (the `repo` file, a snapshot) read, in bytes as stored.
pub const MAX_METADATA_FILE: u64 = 256 << 20;

/// Most bytes any repository file may decode to.
pub const MAX_DECODED_FILE: u64 = 1 << 30;

/// Most bytes a repository file may decode to per byte stored (plus [`INFLATION_SLACK`]):
/// Icechunk's files compress 3-20 times; zstd can reach 30,000 on purpose-made input.
pub const MAX_INFLATION: u64 = 1024;

/// Decoded bytes allowed beyond [`MAX_INFLATION`] times a file's size (a small file may
/// compress well).
const INFLATION_SLACK: u64 = 1 << 20;

/// Deepest nesting of a flexbuffer value (Icechunk's configuration nests 4 deep).
const MAX_FLEX_DEPTH: u32 = 64;

/// Most values walked in a flexbuffer per byte of it (each shared value once per use): a
/// value takes at least a byte, and a writer shares little more than map keys; beyond,
/// lengths or offsets were changed (a vector claiming a billion values in a few bytes made
/// serde allocate until the process died).
const MAX_FLEX_VALUES_PER_BYTE: u64 = 4;

/// Values walked in any flexbuffer whatever its size.
const MIN_FLEX_VALUES: u64 = 1024;

/// What a read will open: a branch's tip or a snapshot (or the `repo` file alone).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'a> {
    /// The `repo` file alone (whether a repository is there).
    RepoFile,
    /// The tip of the branch.
    Branch(&'a str),
    /// The snapshot with this id.
    Snapshot(&'a str),
}

/// `fut`, a panic in it (of the `icechunk` crate, on a file the checks let through) caught
/// as the repository's error ([`IcechunkError::Panicked`]). The process's panic hook is left
/// as it is (it still sees the panic).
pub(crate) async fn caught<T>(
    at: &str,
    operation: &str,
    fut: impl std::future::Future<Output = Result<T, IcechunkError>>,
) -> Result<T, IcechunkError> {
    use futures::FutureExt as _;
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => Err(IcechunkError::panicked(at, operation, panic)),
    }
}

/// Most bytes a file of `stored` bytes may decode to.
fn decoded_bound(stored: u64) -> u64 {
    stored
        .saturating_mul(MAX_INFLATION)
        .saturating_add(INFLATION_SLACK)
        .min(MAX_DECODED_FILE)
}

/// A repository's storage, with what the checks of one open need.
struct Files<'s> {
    storage: &'s (dyn Storage + Send + Sync),
    settings: Settings,
    at: &'s str,
}

/// The error of the file `file` of the repository at `at`.
fn corrupt(at: &str, file: &str, reason: impl Into<String>) -> IcechunkError {
    IcechunkError::Corrupt {
        location: at.to_string(),
        file: file.to_string(),
        reason: reason.into(),
    }
}

impl Files<'_> {
    fn corrupt(&self, file: &str, reason: impl Into<String>) -> IcechunkError {
        corrupt(self.at, file, reason)
    }

    /// The bytes of `path` (at most `limit`; more is this file's error), or `None` when it
    /// does not exist. With `range`, those bytes of it.
    async fn read(
        &self,
        path: &str,
        range: Option<std::ops::Range<u64>>,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, IcechunkError> {
        let ctx = StorageContext::unattributed(&self.settings);
        let got = self.storage.get_object(&ctx, path, range.as_ref()).await;
        let read = match got {
            Ok((read, _)) => read,
            Err(e) if matches!(e.kind, StorageErrorKind::ObjectNotFound) => return Ok(None),
            Err(e) => {
                return Err(IcechunkError::icechunk(
                    self.at,
                    format!("reading {path}"),
                    e,
                ));
            }
        };
        let mut out = Vec::new();
        read.take(limit.saturating_add(1))
            .read_to_end(&mut out)
            .await
            .map_err(|e| IcechunkError::icechunk(self.at, format!("reading {path}"), e))?;
        if out.len() as u64 > limit {
            return Err(self.corrupt(
                path,
                format!("more than the {limit} bytes such a file may have"),
            ));
        }
        Ok(Some(out))
    }

    /// The object sizes under `prefix` (`manifests`, `chunks`), by object name.
    async fn sizes(&self, prefix: &str) -> Result<HashMap<String, u64>, IcechunkError> {
        let ctx = StorageContext::unattributed(&self.settings);
        let listing = self
            .storage
            .list_objects(&ctx, prefix)
            .await
            .map_err(|e| IcechunkError::icechunk(self.at, format!("listing {prefix}"), e))?;
        listing
            .map_ok(|info| (info.id, info.size_bytes))
            .try_collect()
            .await
            .map_err(|e| IcechunkError::icechunk(self.at, format!("listing {prefix}"), e))
    }
}

/// The decoded body of the repository file `bytes` (named `file`), which must be of type
/// `kind`: the header checked, the decoded size bounded before anything is allocated.
fn decode(
    at: &str,
    file: &str,
    bytes: &[u8],
    kind: FileTypeBin,
) -> Result<(SpecVersionBin, Vec<u8>), IcechunkError> {
    let header = parse_file_header(bytes).map_err(|e| corrupt(at, file, e.to_string()))?;
    if header.file_type != kind {
        return Err(corrupt(
            at,
            file,
            format!(
                "a {:?} file where a {kind:?} file belongs",
                header.file_type
            ),
        ));
    }
    if header.compression != CompressionAlgorithmBin::Zstd {
        return Err(corrupt(at, file, "not zstd-compressed"));
    }
    let frame = &bytes[ICECHUNK_FILE_HEADER_LEN..];
    let bound = decoded_bound(bytes.len() as u64);
    let out = match declared_size(at, file, frame, bound)? {
        Some(size) => zstd::bulk::decompress(frame, size as usize)
            .ok()
            .filter(|d| d.len() as u64 == size)
            .ok_or_else(|| {
                corrupt(
                    at,
                    file,
                    format!("does not decode to the {size} bytes it declares"),
                )
            })?,
        None => {
            let mut out = Vec::new();
            zstd::stream::read::Decoder::new(frame)
                .map_err(|e| corrupt(at, file, format!("zstd: {e}")))?
                .take(bound + 1)
                .read_to_end(&mut out)
                .map_err(|e| corrupt(at, file, format!("zstd: {e}")))?;
            if out.len() as u64 > bound {
                return Err(corrupt(
                    at,
                    file,
                    format!(
                        "decodes to more than the {bound} bytes a file of {} bytes may (limit: {MAX_INFLATION} per byte, at most {MAX_DECODED_FILE})",
                        bytes.len()
                    ),
                ));
            }
            out
        }
    };
    Ok((header.spec_version, out))
}

/// The decoded size the zstd frame `frame` declares (`None` when it declares none), refused
/// above `bound`.
fn declared_size(
    at: &str,
    file: &str,
    frame: &[u8],
    bound: u64,
) -> Result<Option<u64>, IcechunkError> {
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .map_err(|_| corrupt(at, file, "not a zstd frame"))?;
    match size {
        Some(n) if n > bound => Err(corrupt(
            at,
            file,
            format!(
                "declares {n} decoded bytes, more than the {bound} its {} bytes may decode to (limit: {MAX_INFLATION} per byte, at most {MAX_DECODED_FILE})",
                frame.len() + ICECHUNK_FILE_HEADER_LEN
            ),
        )),
        n => Ok(n),
    }
}

/// Checks the repository files a read of `target` opens (see the module's doc). A
/// repository with no `repo` file (spec version 1, or none at all) is left to Icechunk.
pub(crate) async fn check_repository(
    storage: &(dyn Storage + Send + Sync),
    at: &str,
    target: Target<'_>,
) -> Result<(), IcechunkError> {
    let settings = storage
        .default_settings()
        .await
        .map_err(|e| IcechunkError::icechunk(at, "reading the storage settings", e))?;
    let files = Files {
        storage,
        settings,
        at,
    };
    let Some(bytes) = files.read("repo", None, MAX_METADATA_FILE).await? else {
        return Ok(());
    };
    let (_, decoded) = decode(at, "repo", &bytes, FileTypeBin::RepoInfo)?;
    drop(bytes);
    check_repo_info(at, &decoded)?;
    let info = RepoInfo::from_buffer(decoded).map_err(|e| files.corrupt("repo", e.to_string()))?;
    let snapshot = match target {
        Target::RepoFile => return Ok(()),
        Target::Branch(b) => match info.resolve_branch(b) {
            Ok(id) => id,
            // No such branch: Icechunk says so.
            Err(_) => return Ok(()),
        },
        Target::Snapshot(id) => match SnapshotId::try_from(id) {
            Ok(id) => id,
            Err(_) => return Ok(()),
        },
    };
    drop(info);
    check_snapshot(&files, &snapshot).await
}

/// The flatbuffer of the `repo` file as Icechunk verifies it, its flexbuffers and its
/// commits' parents.
fn check_repo_info(at: &str, decoded: &[u8]) -> Result<(), IcechunkError> {
    let bad = |reason: String| corrupt(at, "repo", reason);
    RepoInfo::verify_buffer(decoded).map_err(|e| bad(e.to_string()))?;
    let repo = flatbuffers::root_with_opts::<generated::Repo<'_>>(&permissive(), decoded)
        .map_err(|e| bad(e.to_string()))?;
    if let Some(config) = repo.config() {
        check_flex(config.bytes()).map_err(|e| bad(format!("configuration: {e}")))?;
    }
    if let Some(items) = repo.metadata() {
        for item in items {
            check_flex(item.value().bytes())
                .map_err(|e| bad(format!("metadata {:?}: {e}", item.name())))?;
        }
    }
    let snapshots = repo.snapshots();
    let n = snapshots.len();
    // Each commit's parent: none (negative) or an index of the list; following parents
    // from any commit ends (no cycle). `state`: 0 unseen, 1 on the current path, 2 ends.
    let mut state = vec![0u8; n];
    for start in 0..n {
        let mut path = Vec::new();
        let mut at = start;
        loop {
            match state[at] {
                2 => break,
                1 => return Err(bad(format!("commit {at} is its own ancestor"))),
                _ => {}
            }
            state[at] = 1;
            path.push(at);
            let snap = snapshots.get(at);
            if let Some(items) = snap.metadata() {
                for item in items {
                    check_flex(item.value().bytes()).map_err(|e| {
                        bad(format!("commit {at}, metadata {:?}: {e}", item.name()))
                    })?;
                }
            }
            let parent = snap.parent_offset();
            if parent < 0 {
                break;
            }
            let parent = parent as usize;
            if parent >= n {
                return Err(bad(format!(
                    "commit {at}: parent {parent} outside the {n} commits"
                )));
            }
            at = parent;
        }
        for p in path {
            state[p] = 2;
        }
    }
    Ok(())
}

/// The snapshot file `id`, and the manifests it lists.
async fn check_snapshot(files: &Files<'_>, id: &SnapshotId) -> Result<(), IcechunkError> {
    let file = format!("snapshots/{id}");
    let Some(bytes) = files.read(&file, None, MAX_METADATA_FILE).await? else {
        // Icechunk says the snapshot is missing.
        return Ok(());
    };
    let (version, decoded) = decode(files.at, &file, &bytes, FileTypeBin::Snapshot)?;
    drop(bytes);
    check_snapshot_body(files.at, &file, version, &decoded)?;
    let bad = |reason: String| files.corrupt(&file, reason);
    let snapshot = Snapshot::from_buffer(version, decoded).map_err(|e| bad(e.to_string()))?;
    let manifests: Vec<_> = snapshot
        .manifest_files()
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if manifests.is_empty() {
        return Ok(());
    }
    let sizes = files.sizes("manifests").await?;
    for m in manifests {
        let name = m.id.to_string();
        let path = format!("manifests/{name}");
        let Some(&size) = sizes.get(&name) else {
            // Icechunk says the manifest is missing.
            continue;
        };
        if m.size_bytes > size {
            return Err(bad(format!(
                "manifest {name}: recorded as {} bytes, the object has {size}",
                m.size_bytes
            )));
        }
        // Icechunk reads the recorded size (the whole object when it is 0).
        let stored = if m.size_bytes == 0 {
            size
        } else {
            m.size_bytes
        };
        let bound = decoded_bound(stored);
        let head_len = (ICECHUNK_FILE_HEADER_LEN as u64 + 18).min(stored);
        let head = files.read(&path, Some(0..head_len), head_len).await?;
        let Some(head) = head else { continue };
        let header = parse_file_header(&head).map_err(|e| files.corrupt(&path, e.to_string()))?;
        if header.file_type != FileTypeBin::Manifest
            || header.compression != CompressionAlgorithmBin::Zstd
        {
            return Err(files.corrupt(&path, "not a zstd-compressed manifest"));
        }
        let frame = &head[ICECHUNK_FILE_HEADER_LEN..];
        if declared_size(files.at, &path, frame, bound)?.is_none() {
            // No declared size (older writers): Icechunk would decode it unbounded; decoded
            // here first, within the bound.
            if let Some(whole) = files.read(&path, None, stored).await? {
                decode(files.at, &path, &whole, FileTypeBin::Manifest)?;
            }
        }
    }
    Ok(())
}

/// The decoded snapshot `file` (of spec `version`): the flatbuffer as Icechunk verifies it,
/// the flexbuffers of the commit's metadata, the node types.
fn check_snapshot_body(
    at: &str,
    file: &str,
    version: SpecVersionBin,
    decoded: &[u8],
) -> Result<(), IcechunkError> {
    let bad = |reason: String| corrupt(at, file, reason);
    Snapshot::verify_buffer(decoded).map_err(|e| bad(e.to_string()))?;
    let snap = flatbuffers::root_with_opts::<generated::Snapshot<'_>>(&permissive(), decoded)
        .map_err(|e| bad(e.to_string()))?;
    if version != SpecVersionBin::V1 {
        for item in snap.metadata() {
            check_flex(item.value().bytes())
                .map_err(|e| bad(format!("metadata {:?}: {e}", item.name())))?;
        }
    }
    for (i, node) in snap.nodes().iter().enumerate() {
        let ok = match node.node_data_type() {
            generated::NodeData::Array => node.node_data_as_array().is_some(),
            generated::NodeData::Group => node.node_data_as_group().is_some(),
            _ => false,
        };
        if !ok {
            return Err(bad(format!(
                "node {i} ({:?}) is neither an array nor a group",
                node.path()
            )));
        }
    }
    Ok(())
}

/// Checks the bytes of one repository metadata file as a read checks them before Icechunk
/// decodes them, without the rest of the repository: `file` is `repo` (the header, the
/// decoded size, the flatbuffer, the flexbuffers, the commits' parents) or a snapshot
/// (`snapshots/ID`: the same, and the node types). For fuzzing, and for tools that hold a
/// file's bytes.
pub fn check_metadata_file(file: &str, bytes: &[u8]) -> Result<(), IcechunkError> {
    let at = "(bytes)";
    if file == "repo" {
        let (_, decoded) = decode(at, file, bytes, FileTypeBin::RepoInfo)?;
        check_repo_info(at, &decoded)
    } else {
        let (version, decoded) = decode(at, file, bytes, FileTypeBin::Snapshot)?;
        check_snapshot_body(at, file, version, &decoded)
    }
}

/// Flatbuffer verification that refuses nothing Icechunk's own accepts: the structure is
/// verified by Icechunk's options first; this is only to read it.
fn permissive() -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 128,
        max_tables: usize::MAX,
        max_apparent_size: usize::MAX,
        ignore_missing_null_terminator: true,
    }
}

/// Walks the flexbuffer `bytes` as serde deserializes it (as Icechunk will), bounded: at most
/// [`MAX_FLEX_DEPTH`] deep, at most [`MAX_FLEX_VALUES_PER_BYTE`] values a byte.
/// The flexbuffers crate panics on some corrupt buffers (an index out of bounds): such a
/// panic is caught as this buffer's error (the process's panic hook still sees it).
pub(crate) fn check_flex(bytes: &[u8]) -> Result<(), String> {
    let most = (bytes.len() as u64)
        .saturating_mul(MAX_FLEX_VALUES_PER_BYTE)
        .max(MIN_FLEX_VALUES);
    let left = Cell::new(most);
    let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let root = flexbuffers::Reader::get_root(bytes).map_err(|e| e.to_string())?;
        Bounded {
            depth: 0,
            left: &left,
        }
        .deserialize(root)
        .map_err(|e| e.to_string())
    }));
    match walked {
        Ok(r) => r,
        Err(panic) => Err(format!(
            "the flexbuffer reader failed: {}",
            crate::error::panic_message(&panic)
        )),
    }
}

/// A serde seed (and visitor) that visits a value and everything in it, refusing beyond
/// the bounds: `depth` levels in, `left` values left to visit.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    depth: u32,
    left: &'a Cell<u64>,
}

impl Bounded<'_> {
    /// Counts one value; an error past the bounds.
    fn count<E: serde::de::Error>(self) -> Result<(), E> {
        if self.depth > MAX_FLEX_DEPTH {
            return Err(E::custom(format!(
                "nested more than {MAX_FLEX_DEPTH} deep (a cycle?)"
            )));
        }
        let left = self.left.get().checked_sub(1).ok_or_else(|| {
            E::custom(format!(
                "more values than its size allows ({MAX_FLEX_VALUES_PER_BYTE} a byte): a length or offset is wrong"
            ))
        })?;
        self.left.set(left);
        Ok(())
    }

    fn child(self) -> Self {
        Bounded {
            depth: self.depth + 1,
            ..self
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any flexbuffer value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.count()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.count()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.count()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.count()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.count()
    }

    fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.count()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.count()
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.count()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.count()?;
        self.child().deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        while seq.next_element_seed(self.child())?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        while map.next_key_seed(self.child())?.is_some() {
            map.next_value_seed(self.child())?;
        }
        Ok(())
    }
}

/// The sizes of the native chunk objects of a repository, listed once when a chunk of one is
/// first read: a reference to bytes past the end of its object is refused before Icechunk
/// allocates its length.
#[derive(Debug, Default)]
pub(crate) struct ChunkObjects {
    sizes: tokio::sync::OnceCell<HashMap<String, u64>>,
}

impl ChunkObjects {
    /// Checks that `offset..offset + length` lies inside the chunk object `id` (as Icechunk
    /// names it under `chunks/`); `what` names the chunk in errors.
    pub(crate) async fn check(
        &self,
        storage: &(dyn Storage + Send + Sync),
        at: &str,
        id: &str,
        offset: u64,
        length: u64,
        what: &str,
    ) -> Result<(), IcechunkError> {
        let sizes =
            self.sizes
                .get_or_try_init(|| async {
                    let settings = storage.default_settings().await.map_err(|e| {
                        IcechunkError::icechunk(at, "reading the storage settings", e)
                    })?;
                    let files = Files {
                        storage,
                        settings,
                        at,
                    };
                    files.sizes("chunks").await
                })
                .await?;
        let file = format!("chunks/{id}");
        let size = sizes
            .get(id)
            .copied()
            .ok_or_else(|| IcechunkError::Corrupt {
                location: at.to_string(),
                file: file.clone(),
                reason: format!("{what}: its chunk object is missing"),
            })?;
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(IcechunkError::Corrupt {
                location: at.to_string(),
                file,
                reason: format!(
                    "{what}: {length} bytes at offset {offset}, past the object's {size} bytes"
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flexbuffers_are_walked_within_bounds() {
        let v = serde_json::json!({"a": [1, 2, {"b": "c"}], "d": null, "e": 1.5});
        let bytes = flexbuffers::to_vec(&v).unwrap();
        check_flex(&bytes).unwrap();
        // 70 levels of nesting: refused, not recursed into.
        let mut deep = serde_json::json!(1);
        for _ in 0..70 {
            deep = serde_json::json!([deep]);
        }
        let bytes = flexbuffers::to_vec(&deep).unwrap();
        let e = check_flex(&bytes).unwrap_err();
        assert!(e.contains("deep"), "{e}");
        // Many maps sharing one keys vector, as writers share keys: within the bound.
        let shared: Vec<_> = (0..5000)
            .map(|i| serde_json::json!({"url": i, "size": 1}))
            .collect();
        check_flex(&flexbuffers::to_vec(&shared).unwrap()).unwrap();
        // Commit metadata as vzarr writes it (its provenance), small numbers and all: within
        // the bound.
        let sources: Vec<_> = (0..10_000)
            .map(|i| serde_json::json!({"url": format!("file:///d/{i}.nc"), "size": 7, "mtime": 1, "etag": null}))
            .collect();
        let pieces: Vec<_> = (0..10_000)
            .map(|i| serde_json::json!({"url": i, "start": i, "len": 1}))
            .collect();
        let prov = serde_json::json!({"sources": sources, "concat": {"dim": "t", "pieces": pieces}, "allowed_prefixes": ["file:///d/"]});
        check_flex(&flexbuffers::to_vec(&prov).unwrap()).unwrap();
    }

    #[test]
    fn mutated_flexbuffers_end() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        // Every byte of a nested value set to 0 or with one bit flipped: the walk ends each
        // time (an offset of 0 refers to itself: serde's own walk recursed until the stack
        // overflowed, found by flipping one bit of a `repo` file), and some of them are cycles
        // refused for their depth.
        let v = serde_json::json!({"a": {"b": [1, {"c": [2, 3]}], "d": "e"}, "f": [[4]]});
        let good = flexbuffers::to_vec(&v).unwrap();
        let mut cycles = 0;
        for i in 0..good.len() {
            for b in (0..8).map(|k| good[i] ^ (1 << k)).chain([0]) {
                let mut bytes = good.clone();
                bytes[i] = b;
                if let Err(e) = check_flex(&bytes)
                    && e.contains("deep")
                {
                    cycles += 1;
                }
            }
        }
        std::panic::set_hook(previous);
        assert!(cycles > 0, "no mutant made a cycle");
    }

    /// A committed hostile `repo` file (tests/cli/data/hostile).
    fn hostile(name: &str) -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::fs::read(root.join("tests/cli/data/hostile").join(name).join("repo")).unwrap()
    }

    #[test]
    fn hostile_repo_files_are_refused_naming_why() {
        check_metadata_file("repo", &hostile("icechunk-intact")).unwrap();
        for (name, why) in [
            (
                "icechunk-config-cycle",
                "configuration: Serde Error: nested more than 64 deep",
            ),
            (
                "icechunk-metadata-length",
                "more values than its size allows",
            ),
            (
                "icechunk-declared-size",
                "declares 4800000000 decoded bytes",
            ),
        ] {
            let e = check_metadata_file("repo", &hostile(name)).unwrap_err();
            assert!(
                matches!(&e, IcechunkError::Corrupt { file, reason, .. } if file == "repo" && reason.contains(why)),
                "{name}: {e}"
            );
        }
    }

    #[test]
    fn every_one_bit_flip_of_a_repo_file_is_checked_without_a_crash() {
        // Icechunk's decoder overflowed the stack or exhausted memory on some of these; the
        // checks end on each (a panic of the flexbuffers crate caught as the file's error).
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let good = hostile("icechunk-intact");
        let mut refused = 0;
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                if check_metadata_file("repo", &b).is_err() {
                    refused += 1;
                }
            }
        }
        std::panic::set_hook(previous);
        assert!(
            refused > good.len(),
            "{refused} of {} flips refused",
            good.len() * 8
        );
    }

    #[test]
    fn decoded_sizes_are_bounded_by_the_file() {
        assert_eq!(decoded_bound(0), INFLATION_SLACK);
        assert_eq!(decoded_bound(1000), 1000 * MAX_INFLATION + INFLATION_SLACK);
        assert_eq!(decoded_bound(u64::MAX), MAX_DECODED_FILE);
    }
}
