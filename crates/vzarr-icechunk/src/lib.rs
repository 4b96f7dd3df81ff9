//! Icechunk repositories of vzarr datasets (spec version 2, `icechunk` crate 2.3).
//!
//! - [`write()`]: a planned [`vzarr_core::VirtualDataset`] as a commit on a branch: the Zarr v3
//!   documents vzarr writes (rectilinear grids included), a virtual chunk reference (URL,
//!   offset, length, and the source's ETag or modification time as checksum) per referenced
//!   chunk, and the chunks vzarr keeps inline (re-encoded edges, decoded time, strings) as
//!   native Icechunk chunks. The repository's configuration lists one virtual chunk container
//!   per source prefix (`file:///dir/`, `s3://bucket/dir/`): what a reader must authorise.
//!   The commit's metadata holds the dataset's provenance under `vzarr` (sources with size,
//!   modification time and ETag, concatenation), as the kerchunk writer's `vzarr` block; an
//!   append's commit holds what it changed of its parent's under `vzarr_delta` (`delta`).
//!   Datasets of more than [`WriteOptions::piece_refs`] chunks are written in pieces, one
//!   commit each on a temporary branch that the branch then moves to (all or none), so that
//!   Icechunk holds one piece at a time and nothing is amended ([`Commits`]: the policy is
//!   chosen by size); manifests are split so that none holds more than [`MANIFEST_REFS`]
//!   references.
//! - [`open`]: the tip of a branch back into a dataset (native chunks read into the manifest
//!   as inline bytes), for vzarr's reader and verifier; [`history`] lists the commits.
//! - [`expire()`]: old snapshots expired and garbage collected with Icechunk's own operations,
//!   after a commit of the whole provenance where the tip records a change (`expire`).
//!
//! Icechunk names snapshots, nodes and manifests with random ids, so two writes of the same
//! dataset give the same content but not the same bytes.
//!
//! ```no_run
//! use vzarr_icechunk::{RepoLocation, WriteOptions, commit_message, write};
//! let ds = vzarr_core::VirtualDataset::new();
//! let opts = WriteOptions { message: commit_message(&ds, "build"), ..Default::default() };
//! let done = write(&ds, &RepoLocation::parse("out.icechunk")?, &opts)?;
//! println!("{} on {}", done.snapshot, done.branch);
//! # Ok::<(), vzarr_icechunk::IcechunkError>(())
//! ```

#![forbid(unsafe_code)]

mod delta;
mod error;
mod expire;
mod guard;
mod location;
mod read;
mod snapshot;
mod url;
mod write;

pub use delta::{DELTA_KEY, FULL_EVERY};
pub use error::{IcechunkCause, IcechunkError};
pub use expire::{CHECKPOINT_MESSAGE, Collected, Expired, Time, expire, parse_cutoff};
pub use guard::{MAX_DECODED_FILE, MAX_INFLATION, MAX_METADATA_FILE, check_metadata_file};
pub use location::{RepoLocation, container_for, s3_options_from_env};
pub use read::{
    Commit, Opened, TAIL_ALL_CHUNKS, history, is_repository, open, open_tail, provenance,
};
pub use snapshot::{Snapshot, SnapshotChunk};
pub use write::{
    APPEND_SPLIT_REFS, Commits, MANIFEST_REFS, PIECE_REFS, Update, WriteMode, WriteOptions,
    Written, array_document, commit_message, container_prefixes, update_chunks, write,
};

/// The commit metadata key holding the dataset's provenance (the kerchunk writer's `vzarr`
/// block).
pub const PROPERTY_KEY: &str = "vzarr";

/// The commit metadata key holding the version of vzarr that wrote the commit.
pub const VERSION_KEY: &str = "vzarr_version";
