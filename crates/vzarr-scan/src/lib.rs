//! Scanning sources: one entry point for every scanner ([`scan_source`]: a source in, a
//! [`VirtualDataset`] out, the format sniffed from magic bytes by `vzarr-source`), batches of
//! sources in parallel with a scan cache ([`batch`], [`cache`]), and the collection of sources
//! from paths, directories, catalogs and prefixes ([`inputs`]).

#![forbid(unsafe_code)]

pub mod batch;
pub mod cache;
pub mod head;
pub mod inputs;
pub mod worker;

/// Why the HDF5 scanners leave a dataset out whatever its data type (see
/// [`vzarr_hdf5::refusal`]).
pub use vzarr_hdf5::refusal as hdf5_refusal;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use vzarr_core::{Provenance, SourceRecord, VirtualDataset};
use vzarr_source::{
    BlockCache, ByteSource, Bytes, Clients, Coalesced, Format, MAX_COALESCED_READ, ObjectPath,
    ObjectSource, ObjectStore, REMOTE_COALESCE_GAP, SniffError, SourceError, Stores, sniff,
};

use crate::inputs::SourceRef;

/// Which scanner reads HDF5 and NetCDF4 files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Hdf5Scanner {
    /// The pure-Rust scanner (`vzarr-hdf5`): local files and object storage.
    #[default]
    Native,
    /// The libhdf5 scanner (`vzarr-hdf5-oracle`), kept as an oracle: local files only, and
    /// only in builds with this crate's `libhdf5` feature.
    Libhdf5,
}

impl Hdf5Scanner {
    /// The scanner's name as users spell it (`native`, `libhdf5`).
    pub fn name(self) -> &'static str {
        match self {
            Hdf5Scanner::Native => "native",
            Hdf5Scanner::Libhdf5 => "libhdf5",
        }
    }

    /// Whether this build can run the scanner.
    pub fn available(self) -> bool {
        match self {
            Hdf5Scanner::Native => true,
            Hdf5Scanner::Libhdf5 => cfg!(feature = "libhdf5"),
        }
    }
}

/// Options shared by all scanners.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanOptions {
    /// Split uncompressed contiguous variables larger than this many bytes into virtual chunks
    /// along axis 0. `None` keeps one chunk.
    pub split_contiguous_bytes: Option<u64>,
    /// The scanner of HDF5 and NetCDF4 files.
    pub hdf5_scanner: Hdf5Scanner,
    /// Where the libhdf5 scanner runs: in a supervised worker process (a crash or hang of
    /// libhdf5 fails that file only), or in this process when `None`.
    pub libhdf5_worker: Option<worker::Libhdf5Worker>,
    /// Most bytes of inline chunks per variable-length string array (native HDF5 scanner;
    /// `None`: [`vzarr_hdf5::DEFAULT_MAX_STRING_BYTES`]); larger arrays are left out with a
    /// warning (see [`vzarr_hdf5::ScanOptions::max_string_bytes`]).
    pub max_string_bytes: Option<u64>,
    /// Leave object references out (native HDF5 scanner; by default they are read as the
    /// paths of their targets, see [`vzarr_hdf5::ScanOptions::object_references`]).
    pub skip_object_references: bool,
    /// Record soft, external and repeated hard links in their groups' attributes instead of
    /// following soft links (native HDF5 scanner; see
    /// [`vzarr_hdf5::ScanOptions::record_links`]).
    pub record_links: bool,
    /// Where the granules of DMR++ sidecars are, when not where each sidecar says (beside it,
    /// or its `dmrpp:href` on its own host): a template of their URLs or paths, `{name}` for
    /// the sidecar's file name without `.dmrpp` ([`vzarr_dmrpp::granule_from_template`]).
    pub dmrpp_data_url: Option<String>,
}

impl ScanOptions {
    /// Options reading the granules of DMR++ sidecars from `template` (see the field).
    pub fn with_dmrpp_data_url(mut self, template: Option<String>) -> Self {
        self.dmrpp_data_url = template;
        self
    }

    /// Options splitting contiguous variables above `bytes` (see the field).
    pub fn with_split_contiguous(mut self, bytes: Option<u64>) -> Self {
        self.split_contiguous_bytes = bytes;
        self
    }

    /// Options scanning HDF5 and NetCDF4 files with `scanner`.
    pub fn with_hdf5_scanner(mut self, scanner: Hdf5Scanner) -> Self {
        self.hdf5_scanner = scanner;
        self
    }

    /// Options storing at most `bytes` of strings per array (see the field).
    pub fn with_max_string_bytes(mut self, bytes: Option<u64>) -> Self {
        self.max_string_bytes = bytes;
        self
    }

    /// Options reading object references as paths (`true`, the default) or leaving them out
    /// (see [`ScanOptions::skip_object_references`]).
    pub fn with_object_references(mut self, read: bool) -> Self {
        self.skip_object_references = !read;
        self
    }

    /// Options recording links in their groups' attributes (see the field).
    pub fn with_record_links(mut self, record: bool) -> Self {
        self.record_links = record;
        self
    }

    /// Options running the libhdf5 scanner in `worker` processes (see the field).
    pub fn with_libhdf5_worker(mut self, worker: Option<worker::Libhdf5Worker>) -> Self {
        self.libhdf5_worker = worker;
        self
    }
}

/// Why a source (or the list of sources) could not be scanned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// The source could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The source is not a format we scan.
    #[error(transparent)]
    Format(#[from] SniffError),
    /// The HDF5 scanner failed.
    #[error(transparent)]
    Hdf5(#[from] vzarr_hdf5::Hdf5Error),
    /// The libhdf5 scanner failed.
    #[cfg(feature = "libhdf5")]
    #[error(transparent)]
    Libhdf5(#[from] vzarr_hdf5_oracle::Hdf5Error),
    /// The libhdf5 scanner, run in a worker process, reported an error (its message names
    /// the file).
    #[error("{message}")]
    Libhdf5Failed {
        /// The scanner's message.
        message: String,
    },
    /// The worker process running the libhdf5 scanner failed (crashed, ran too long, or
    /// reported an error).
    #[error("{url}: {reason}")]
    Worker {
        /// The source URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The HDF5 scanner asked for cannot scan this source (not in this build, or the
    /// libhdf5 scanner and a source that is not a local file).
    #[error("{url}: the {scanner} HDF5 scanner {reason}")]
    ScannerUnavailable {
        /// The source URL.
        url: String,
        /// The scanner's name.
        scanner: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The NetCDF3 scanner failed.
    #[error(transparent)]
    NetCdf3(#[from] vzarr_netcdf3::Nc3Error),
    /// The DMR++ scanner failed.
    #[error(transparent)]
    Dmrpp(#[from] vzarr_dmrpp::DmrppError),
    /// A local path (input, catalog or cache directory) could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An include or exclude pattern that is not a valid glob.
    #[error("bad glob pattern {pattern:?}: {source}")]
    Glob {
        /// The pattern.
        pattern: String,
        /// Why.
        #[source]
        source: globset::Error,
    },
    /// A directory with no files to scan (after the filters).
    #[error("{path}: directory has no files (after the include/exclude filters)")]
    EmptyDirectory {
        /// The directory.
        path: String,
    },
    /// A line of a catalog could not be used.
    #[error("{catalog}:{line}: {source}")]
    Catalog {
        /// The catalog file.
        catalog: String,
        /// The line number (from 1).
        line: usize,
        /// Why.
        #[source]
        source: Box<ScanError>,
    },
    /// The scanning threads could not be started.
    #[error("cannot start the scanning threads: {0}")]
    Threads(#[source] std::io::Error),
    /// The scan panicked (a bug; the batch goes on).
    #[error("{url}: the scan failed unexpectedly: {message}")]
    Panicked {
        /// The source URL.
        url: String,
        /// The panic's message.
        message: String,
    },
    /// The scan ran past the time limit of one file.
    #[error("{url}: the scan ran past the limit of {seconds} s per file")]
    TimedOut {
        /// The source URL.
        url: String,
        /// The limit.
        seconds: f64,
    },
}

impl ScanError {
    /// The source (URL or path) or input (catalog, directory) this error is about, where the
    /// error holds it apart from its message.
    pub fn file(&self) -> Option<&str> {
        match self {
            ScanError::Source(e) => e.url(),
            ScanError::Hdf5(e) => Some(e.url()),
            ScanError::Worker { url, .. }
            | ScanError::ScannerUnavailable { url, .. }
            | ScanError::Panicked { url, .. }
            | ScanError::TimedOut { url, .. } => Some(url),
            ScanError::Io { path, .. } | ScanError::EmptyDirectory { path } => Some(path),
            ScanError::Catalog { catalog, .. } => Some(catalog),
            _ => None,
        }
    }
}

/// Bytes read from the start of an object on object storage by the request that opens it:
/// the size, modification time and ETag come with them, and the metadata of most NetCDF and
/// HDF5 files lies within them (as `vzarr_hdf5::ScanOptions::object_storage` says).
pub const REMOTE_HEAD_BYTES: u64 = 256 << 10;

/// A source opened for scanning, with the bytes of its head already fetched.
pub(crate) struct Opened {
    pub(crate) src: Arc<dyn ByteSource>,
    pub(crate) head: Bytes,
    /// For an object: the head asked for, and where its readers note how far into its
    /// first [`REMOTE_HEAD_BYTES`] they read ([`head::HeadSizes`]).
    pub(crate) reach: Option<(u64, Arc<AtomicU64>)>,
    /// The store (one the caller configured) and path it was opened in, if one was given: a
    /// DMR++ sidecar's granule beside it is opened in the same store.
    pub(crate) store: Option<(Arc<dyn ObjectStore>, ObjectPath)>,
}

/// The path, in the store `path` (the source's) is in, of the object at `url`: the source
/// itself, the granule beside a DMR++ sidecar (the source's URL and path without `.dmrpp`), or
/// another object in the source's directory or below it (a file beside the granule that some
/// of the sidecar's chunks are in); `None` for any other object.
pub fn path_in_store(source: &SourceRef, path: &ObjectPath, url: &str) -> Option<ObjectPath> {
    let own = source.url();
    if url == own {
        return Some(path.clone());
    }
    if own.strip_suffix(".dmrpp") == Some(url) {
        return path.as_ref().strip_suffix(".dmrpp").map(ObjectPath::from);
    }
    let dir = &own[..=own.rfind('/')?];
    let rest = url.strip_prefix(dir)?;
    if rest
        .split('/')
        .any(|p| p.is_empty() || p == "." || p == ".." || p.contains('%'))
    {
        return None;
    }
    let p = path.as_ref();
    let in_store = p.rfind('/').map_or("", |i| &p[..=i]);
    ObjectPath::parse(format!("{in_store}{rest}")).ok()
}

/// Opens a source for scanning: a local file as it is; an object in one ranged GET of its
/// first `head` bytes (no HEAD request), behind a block cache seeded with them.
pub(crate) fn open_for_scan(source: &SourceRef, head: u64) -> Result<Opened, ScanError> {
    let loc = source.location();
    if source.local_path().is_some() {
        return Ok(Opened {
            src: Stores::default().open_location(loc)?,
            head: Bytes::new(),
            reach: None,
            store: None,
        });
    }
    let (obj, bytes) = ObjectSource::open_with_head(Clients::global(), loc, head)?;
    Ok(opened_object(obj, bytes, head))
}

/// An object opened with (up to) its first `asked` bytes fetched as `head`, behind the
/// coalescing and the block cache every remote scan reads through, in blocks of the head's
/// size (at most 256 KiB), noting how far its readers read.
fn opened_object(obj: ObjectSource, head: Bytes, asked: u64) -> Opened {
    let coalesced = Coalesced::new(obj, REMOTE_COALESCE_GAP, MAX_COALESCED_READ);
    let block = asked.clamp(1 << 10, 256 << 10).next_multiple_of(1 << 10);
    let reach = Arc::new(AtomicU64::new(0));
    let cache =
        BlockCache::new(coalesced, block, 64 << 20).with_reach(REMOTE_HEAD_BYTES, reach.clone());
    cache.seed_head(&head);
    Opened {
        src: Arc::new(cache),
        head,
        reach: Some((asked, reach)),
        store: None,
    }
}

/// Scans one object-store source through `store` (one the caller configured, e.g. a Python
/// user's obstore store), where the object lies at `path`; the source's URL is what the
/// references record. Otherwise as [`scan_source`].
pub fn scan_in_store(
    source: &SourceRef,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    opts: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let (obj, head) = ObjectSource::open_with_head_in(
        store.clone(),
        path.clone(),
        source.location(),
        REMOTE_HEAD_BYTES,
    )?;
    let mut opened = opened_object(obj, head, REMOTE_HEAD_BYTES);
    opened.store = Some((store, path));
    scan_opened(source, opened, opts)
}

/// Keeps, beside the references of the small arrays of `ds` (coordinates, mostly), the bytes
/// of their chunks that lie within `head`, the first bytes of the source `url` already
/// fetched, copied out of it (so the head itself is freed when the scan ends); bounded as
/// [`VirtualDataset::keep_fetched`] says. The planner then reads only what lies beyond.
pub(crate) fn keep_head(ds: &mut VirtualDataset, url: &str, head: &Bytes) {
    if head.is_empty() {
        return;
    }
    ds.keep_fetched(|source, r| {
        let end = usize::try_from(r.end).ok()?;
        (source == url && end <= head.len())
            .then(|| Bytes::copy_from_slice(&head[r.start as usize..end]))
    });
}

/// Scans one source of any supported format, local or remote; the result's provenance
/// records the source as opened (size, modification time, ETag, fingerprint).
pub fn scan_source(source: &SourceRef, opts: &ScanOptions) -> Result<VirtualDataset, ScanError> {
    scan_opened(source, open_for_scan(source, REMOTE_HEAD_BYTES)?, opts)
}

/// Why the libhdf5 scanner cannot run in a build without it.
const NOT_BUILT: &str = "is not part of this build (cargo feature `libhdf5` of vzarr-scan, \
     `c-oracle` of the vzarr binary)";

/// Scans a local HDF5 file with the libhdf5 scanner, in a worker process when one is set.
fn scan_libhdf5(source: &SourceRef, opts: &ScanOptions) -> Result<VirtualDataset, ScanError> {
    if !Hdf5Scanner::Libhdf5.available() {
        // Also with a worker: the worker is this build's program, without the scanner.
        return Err(ScanError::ScannerUnavailable {
            url: source.url(),
            scanner: Hdf5Scanner::Libhdf5.name(),
            reason: NOT_BUILT,
        });
    }
    let Some(path) = source.local_path() else {
        return Err(ScanError::ScannerUnavailable {
            url: source.url(),
            scanner: Hdf5Scanner::Libhdf5.name(),
            reason: "reads only local files",
        });
    };
    if let Some(w) = &opts.libhdf5_worker {
        return worker::scan_in_worker(w, &source.url(), &path, opts.split_contiguous_bytes);
    }
    libhdf5_in_process(source, &path, opts)
}

#[cfg(feature = "libhdf5")]
fn libhdf5_in_process(
    _source: &SourceRef,
    path: &std::path::Path,
    opts: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let o = vzarr_hdf5_oracle::ScanOptions {
        split_contiguous_bytes: opts.split_contiguous_bytes,
    };
    Ok(vzarr_hdf5_oracle::scan_file(path, &o)?)
}

#[cfg(not(feature = "libhdf5"))]
fn libhdf5_in_process(
    source: &SourceRef,
    _path: &std::path::Path,
    _opts: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    Err(ScanError::ScannerUnavailable {
        url: source.url(),
        scanner: Hdf5Scanner::Libhdf5.name(),
        reason: NOT_BUILT,
    })
}

/// Scans a source already opened.
pub(crate) fn scan_opened(
    source: &SourceRef,
    opened: Opened,
    opts: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let mut src = opened.src.clone();
    // Files besides the scanned one that its chunks are in (a DMR++ sidecar's `href`s).
    let mut companions: Vec<SourceRecord> = Vec::new();
    let mut ds = match sniff(src.as_ref())? {
        Format::Hdf5 { .. } => match opts.hdf5_scanner {
            Hdf5Scanner::Native => {
                let mut o = vzarr_hdf5::ScanOptions::for_url(src.url())
                    .with_split_contiguous_bytes(opts.split_contiguous_bytes)
                    .with_max_string_bytes(
                        opts.max_string_bytes
                            .unwrap_or(vzarr_hdf5::DEFAULT_MAX_STRING_BYTES),
                    )
                    .with_object_references(!opts.skip_object_references)
                    .with_record_links(opts.record_links);
                // The head this object was opened with, and its reach noted: the scan's own
                // reads of the head are served from its cache, above the source's.
                let noting = opened.reach.clone().map(|(asked, at)| {
                    o = o.clone().with_head(asked);
                    (REMOTE_HEAD_BYTES, at)
                });
                vzarr_hdf5::scan_noting(src.clone(), &opened.head, &o, noting)?
            }
            Hdf5Scanner::Libhdf5 => {
                let mut ds = scan_libhdf5(source, opts)?;
                // The native scanner maps names as it walks; the libhdf5 scanner's output
                // (kept as the oracle's) is mapped here.
                vzarr_core::names::make_names_zarr_safe(&mut ds);
                ds
            }
        },
        Format::NetCdf3 { .. } => {
            let o = vzarr_netcdf3::ScanOptions {
                split_contiguous_bytes: opts.split_contiguous_bytes,
            };
            let mut ds = vzarr_netcdf3::scan(src.as_ref(), &o)?;
            // netCDF allows names Zarr reserves (`__x`).
            vzarr_core::names::make_names_zarr_safe(&mut ds);
            keep_head(&mut ds, src.url(), &opened.head);
            ds
        }
        Format::Dmrpp => {
            let (mut ds, granule, masked) =
                scan_dmrpp(src.as_ref(), opts.dmrpp_data_url.as_deref())?;
            // The chunks are the granule's: its record (size, time, ETag) is what readers
            // check, taken with one request; the granule's bytes are not read. So are the
            // records of the files beside it that some chunks are in (Hyrax's `_mvs.h5`).
            // Objects beside a sidecar read through the caller's store are opened in it.
            let open = |url: &str| -> Result<Arc<dyn ByteSource>, ScanError> {
                let at = SourceRef::parse(url)?;
                let beside = opened.store.as_ref().and_then(|(store, path)| {
                    Some((store.clone(), path_in_store(source, path, &at.url())?))
                });
                Ok(match beside {
                    Some((store, path)) => {
                        let (obj, _) =
                            ObjectSource::open_with_head_in(store, path, at.location(), 0)?;
                        Arc::new(obj)
                    }
                    None => open_for_scan(&at, 0)?.src,
                })
            };
            src = open(&granule)?;
            let others: Vec<String> = ds
                .referenced_sources()
                .into_iter()
                .filter(|u| *u != src.url())
                .map(str::to_string)
                .collect();
            let mut readable: HashMap<String, Arc<dyn ByteSource>> = HashMap::new();
            readable.insert(src.url().to_string(), src.clone());
            for url in others {
                match open(&url).and_then(|o| Ok((record_of(o.as_ref())?, o))) {
                    Ok((record, o)) => {
                        companions.push(record);
                        readable.insert(url, o);
                    }
                    // A file beside the granule that cannot be read costs the variables with
                    // chunks in it, not the granule's.
                    Err(e) => leave_out_in(&mut ds, &url, &e.to_string()),
                }
            }
            // Chunks stored with some filters skipped: read now, kept inline re-encoded.
            vzarr_dmrpp::masks::apply(&mut ds, &masked, |url, range| match readable.get(url) {
                Some(s) => s.read(range).map(|b| b.to_vec()).map_err(|e| e.to_string()),
                None => Err(format!("{url} is not open")),
            });
            ds
        }
        _ => {
            return Err(ScanError::Format(SniffError::Unrecognised {
                url: source.url(),
                head: Vec::new(),
            }));
        }
    };
    let record = record_of(src.as_ref())?;
    ds.provenance = Provenance::with_companions(record, companions);
    Ok(ds)
}

/// Leaves out of `ds` the arrays with chunks in the file at `url`, which cannot be read
/// (`why`), listing them as skipped.
fn leave_out_in(ds: &mut VirtualDataset, url: &str, why: &str) {
    let gone: Vec<String> = ds
        .arrays
        .iter()
        .filter(|(_, a)| a.manifest.sources().iter().any(|s| **s == *url))
        .map(|(p, _)| p.clone())
        .collect();
    for path in gone {
        ds.arrays.shift_remove(&path);
        ds.skipped.push(vzarr_core::SkippedVariable {
            path,
            reason: format!(
                "its chunks are in a file beside the granule that cannot be read: {why}"
            ),
        });
    }
}

/// The record readers check `src` against. The fingerprint tells a source rewritten with the
/// same size and modification time; an object's ETag tells that already (readers then skip
/// the fingerprint), and hashing its first 64 KiB would cost a second request whenever its
/// head is shorter.
fn record_of(src: &dyn ByteSource) -> Result<SourceRecord, ScanError> {
    let mut record = src.record().clone();
    if record.etag.is_none() {
        record.fingerprint = Some(vzarr_source::fingerprint(src)?);
    }
    Ok(record)
}

/// The virtual dataset the DMR++ sidecar `src` describes (read whole, at most
/// [`vzarr_dmrpp::MAX_SIDECAR_BYTES`]), its provenance left empty, its granule's URL (by
/// `template` when given: [`ScanOptions::dmrpp_data_url`]) and its chunks stored with some
/// filters skipped (`vzarr_dmrpp::Scanned::masked`, still byte ranges in the dataset). The
/// granule is not opened.
pub fn scan_dmrpp(
    src: &dyn ByteSource,
    template: Option<&str>,
) -> Result<(VirtualDataset, String, Vec<vzarr_dmrpp::MaskedChunk>), ScanError> {
    let url = src.url().to_string();
    if src.size() > vzarr_dmrpp::MAX_SIDECAR_BYTES {
        return Err(vzarr_dmrpp::DmrppError::TooLarge {
            url,
            size: src.size(),
            max: vzarr_dmrpp::MAX_SIDECAR_BYTES,
        }
        .into());
    }
    let granule = match template {
        Some(t) => Some(SourceRef::parse(&vzarr_dmrpp::granule_from_template(t, &url))?.url()),
        None => None,
    };
    let xml = src.read(0..src.size())?;
    let s = vzarr_dmrpp::scan_with(&xml, &url, granule.as_deref())?;
    Ok((s.dataset, s.data_url, s.masked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::ChunkRef;
    use vzarr_source::MemSource;

    #[test]
    fn netcdf3_scans_keep_the_small_chunks_within_the_head() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nc3_classic.nc");
        let bytes = std::fs::read(path).unwrap();
        let url = "s3://bucket/nc3_classic.nc";
        let source = SourceRef::parse(url).unwrap();
        // A head that ends inside the data: chunks before its end are kept, the rest not.
        let head_len = 1800;
        assert!(head_len < bytes.len());
        let opened = Opened {
            src: Arc::new(MemSource::new(url, bytes.clone())),
            head: Bytes::copy_from_slice(&bytes[..head_len]),
            reach: None,
            store: None,
        };
        let ds = scan_opened(&source, opened, &ScanOptions::default()).unwrap();
        let (mut kept, mut beyond) = (0, 0);
        for (path, a) in &ds.arrays {
            for (i, r) in a.manifest.iter_stored() {
                let ChunkRef::Range { offset, length, .. } = r else {
                    continue;
                };
                let end = (offset + length) as usize;
                match a.manifest.fetched(i) {
                    Some(b) => {
                        assert!(end <= head_len, "{path} chunk {i}");
                        assert_eq!(&b[..], &bytes[offset as usize..end], "{path} chunk {i}");
                        kept += 1;
                    }
                    None => {
                        assert!(end > head_len, "{path} chunk {i} is in the head");
                        beyond += 1;
                    }
                }
            }
        }
        assert!(kept > 0 && beyond > 0, "{kept} kept, {beyond} beyond");
        // A local file (no head): nothing kept.
        let opened = Opened {
            src: Arc::new(MemSource::new(url, bytes.clone())),
            head: Bytes::new(),
            reach: None,
            store: None,
        };
        let ds = scan_opened(&source, opened, &ScanOptions::default()).unwrap();
        assert!(
            ds.arrays
                .values()
                .all(|a| (0..a.manifest.len()).all(|i| a.manifest.fetched(i).is_none()))
        );
    }
}
