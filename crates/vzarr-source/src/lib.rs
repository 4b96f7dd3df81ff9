//! The one byte-access layer of vzarr: every byte a scanner, the planner or a reader takes
//! from a source comes through here, locally and on object storage (S3 and S3-compatible
//! servers, GCS, Azure, HTTP(S), through `object_store`).
//!
//! - [`ByteSource`]: one source (its [`SourceRecord`]: URL, size, modification time, ETag)
//!   with batched ranged reads returning [`Bytes`] without copies. [`LocalFile`] (`pread`),
//!   [`ObjectSource`] (ranged GETs, `If-Match` on the ETag seen at open), [`MemSource`].
//! - Wrappers that are policies, in the style of `object_store`'s `LimitStore`:
//!   [`Coalesced`] merges nearby ranges (the only place ranges are coalesced), [`Counted`]
//!   counts requests and bytes, [`BlockCache`] serves pointer-chasing parsers from cached
//!   blocks with batched prefetch.
//! - [`SourceStore`]: opening sources by URL. [`Stores`] is the base; [`AllowPrefixes`],
//!   [`CheckRecords`], [`Memo`] and [`Recorded`] wrap it; [`read_across`] reads ranges of many
//!   sources.
//! - URLs are parsed once into [`Location`]s ([`parse_url`]), never split as strings;
//!   [`PrefixPolicy`] holds what a reader may fetch.
//! - [`sniff`] detects the format from magic bytes; [`list_prefix`] lists a prefix.
//!
//! Object-store requests run on the process's one I/O runtime ([`runtime`]); every function
//! here is blocking and may be called from ordinary threads (rayon workers included), but not
//! from a task of that runtime itself.
//!
//! ```no_run
//! use vzarr_source::{ByteSource, open_source};
//! let src = open_source("s3://bucket/archive/tas_202301.nc")?;
//! let head = src.read(0..8)?;
//! println!("{} is {} bytes and starts with {head:?}", src.url(), src.size());
//! # Ok::<(), vzarr_source::SourceError>(())
//! ```

#![forbid(unsafe_code)]

mod allow;
mod block_cache;
mod coalesce;
mod error;
mod list;
mod local;
mod mem;
mod object;
mod reader;
mod runtime;
mod sniff;
mod stats;
mod store;
mod url;
mod version;

use std::ops::Range;
use std::sync::Arc;

pub use bytes::Bytes;
/// The object-store types a caller needs to hand vzarr a store of its own.
pub use object_store::{ObjectStore, path::Path as ObjectPath};
pub use vzarr_core::SourceRecord;

pub use allow::AllowPrefixes;
pub use block_cache::{BlockCache, CacheCounts};
pub use coalesce::{
    Coalesced, LOCAL_COALESCE_GAP, MAX_COALESCED_READ, REMOTE_COALESCE_GAP, merge_ranges,
};
pub use error::{NotAllowed, Refusal, SetupProblem, SourceError, UrlError, checked_len, range_len};
pub use list::{LIST_ATTEMPTS, list_prefix, list_prefix_with};
pub use local::{FileId, LocalFile, absolute, file_url, local_record};
pub use mem::{MemSource, MemStore};
pub use object::{
    Clients, DEFAULT_MAX_REQUESTS, DEFAULT_RANGE_CONCURRENCY, ObjectSource, ObjectWriter, PUT_PART,
    object_path,
};
pub use reader::SourceReader;
pub use runtime::{block_on, runtime};
pub use sniff::{Format, HDF5_SIGNATURE, SniffError, hdf5_signature_offsets, sniff};
pub use stats::{Counted, IoCounts, IoStats};
pub use store::{
    CheckRecords, FINGERPRINT_BYTES, Memo, Opened, ReadTuning, Recorded, SourceStore, Stores,
    fingerprint, fingerprint_of, format_ns, locate, open_source, parallel_map, read_across,
    record_changes,
};
pub use url::{Location, Prefix, PrefixPolicy, Scheme, parse_url, percent_decode};
pub use version::{CheckVersions, SourceVersion};

/// Random-access, read-only bytes of one source.
pub trait ByteSource: Send + Sync + std::fmt::Debug {
    /// What the source was when opened: URL, size, modification time, ETag.
    fn record(&self) -> &SourceRecord;

    /// Reads every range exactly (in the order given); an error if one passes the end.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError>;

    /// Says that these ranges will be read soon, so that a cache can fetch them together.
    fn prefetch(&self, _ranges: &[Range<u64>]) -> Result<(), SourceError> {
        Ok(())
    }

    /// Reads one range exactly.
    fn read(&self, range: Range<u64>) -> Result<Bytes, SourceError> {
        let (start, len) = (range.start, range.end.saturating_sub(range.start));
        self.read_ranges(std::slice::from_ref(&range))?
            .pop()
            .ok_or_else(|| SourceError::ShortRead {
                url: self.url().to_string(),
                offset: start,
                len,
                got: 0,
            })
    }

    /// Absolute URL of the source (`file:///...`, `s3://...`).
    fn url(&self) -> &str {
        &self.record().url
    }

    /// Size in bytes.
    fn size(&self) -> u64 {
        self.record().size
    }

    /// The identity of the local file opened (from its open handle), for a local file; `None`
    /// for other sources. [`AllowPrefixes`] compares it with the file it checked.
    fn file_id(&self) -> Option<FileId> {
        None
    }
}

macro_rules! forward_byte_source {
    ($t:ty) => {
        impl<S: ByteSource + ?Sized> ByteSource for $t {
            fn record(&self) -> &SourceRecord {
                (**self).record()
            }
            fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, SourceError> {
                (**self).read_ranges(ranges)
            }
            fn prefetch(&self, ranges: &[Range<u64>]) -> Result<(), SourceError> {
                (**self).prefetch(ranges)
            }
            fn read(&self, range: Range<u64>) -> Result<Bytes, SourceError> {
                (**self).read(range)
            }
            fn file_id(&self) -> Option<FileId> {
                (**self).file_id()
            }
        }
    };
}

forward_byte_source!(Arc<S>);
forward_byte_source!(Box<S>);
forward_byte_source!(&S);
