//! A pure-Rust reader of the HDF5 file structure, for building virtual datasets: it finds
//! every group, dataset, attribute and stored chunk of a file without decoding any data.
//!
//! Written from the HDF5 File Format Specification version 3.0 (each module cites its
//! section), checked against the HDF5 library (2.2) as the oracle. Every byte of the file is
//! treated as hostile: all addresses and lengths are checked against the file size, all
//! counts against the bytes that would hold them, recursion is bounded and cycles are
//! detected, and a corrupt file gives an [`Error`] naming the structure and its address.
//!
//! Bytes come through the [`Storage`] trait ([`MemStorage`], [`FileStorage`], or the
//! project's byte layer); the reader calls [`Storage::prefetch`] whenever the structure
//! names several addresses at once. Every address in this API is an absolute file offset
//! (the superblock's base address already added).
//!
//! What it reads:
//! - superblocks 0 to 3 (user blocks, 2/4/8-byte addresses and lengths), object headers 1 and 2
//!   with continuation blocks, shared messages (in other object headers and in the shared
//!   message heap), every message the scanner needs ([`messages`]);
//! - groups of the three kinds ([`File::links`] in name order, [`File::resolve_path`],
//!   [`File::object_paths`]), attributes compact and dense ([`File::attributes`]),
//!   variable-length data in global heaps ([`File::read_vlen`]), references of both
//!   generations ([`File::references`]);
//! - datasets ([`File::dataset`]) and their stored chunks, for all six chunk indexes
//!   ([`File::visit_chunks`]), contiguous extents and compact data.
//!
//! Refused by name: virtual datasets are reported as [`Layout::Virtual`]; external raw data
//! as [`Dataset::external_files`]; files of the multi/split and family drivers and files
//! closed with a metadata cache image are [`Error::Unsupported`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use vzarr_hdf5_format::{File, FileStorage, ObjectKind};
//!
//! let file = File::open(Arc::new(FileStorage::open("data.nc")?))?;
//! let addr = file.resolve_path("/tas")?;
//! let oh = file.object_header(addr)?;
//! assert_eq!(file.object_kind(&oh), ObjectKind::Dataset);
//! let ds = file.dataset(&oh)?;
//! file.visit_chunks::<vzarr_hdf5_format::Error>(&ds, |c| {
//!     println!("{:?} at {} ({} bytes)", c.scaled, c.address, c.size);
//!     Ok(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod attribute;
pub mod btree;
pub mod checksum;
pub mod chunk_index;
pub mod dataset;
pub mod decode;
pub mod error;
pub mod file;
pub mod group;
pub mod heap;
mod inflate;
pub mod messages;
pub mod object_header;
pub mod reference;
pub mod sohm;
pub mod storage;
pub mod superblock;

pub use attribute::Attribute;
pub use chunk_index::ChunkRecord;
pub use dataset::Dataset;
pub use decode::Sizes;
pub use error::{Error, Result};
pub use file::{File, OpenOptions};
pub use group::{GroupStorage, MAX_SOFT_LINKS, ObjectKind, ObjectPaths};
pub use heap::global::{GlobalHeapId, VlenElement};
pub use messages::attribute::AttributeInfo;
pub use messages::dataspace::{Dataspace, DataspaceKind, UNLIMITED};
pub use messages::datatype::{
    ByteOrder, CharacterSet, CompoundMember, Datatype, EnumMember, MantissaNormalization,
    ReferenceKind, StringPadding, TypeClass, VlenKind,
};
pub use messages::fill::{AllocationTime, FillStatus, FillTime, FillValue};
pub use messages::filters::{Filter, FilterPipeline};
pub use messages::info::DenseStorageInfo;
pub use messages::layout::{ChunkIndex, ChunkedLayout, Layout, LayoutMessage};
pub use messages::link::{GroupInfo, Link, LinkInfo, LinkTarget, SymbolTable};
pub use object_header::{Message, ObjectHeader, ObjectTimes};
pub use reference::Reference;
pub use storage::{FileStorage, MemStorage, Storage, StorageError};
pub use superblock::{SIGNATURE, Superblock, signature_offsets};
