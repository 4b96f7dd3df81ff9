//! Opening references: [`open`], [`open_bytes`] and [`open_parsed`] parse a reference set,
//! check every URL against the allowed prefixes before anything is fetched, stack the byte
//! layer's policies, and give a [`Reader`]: the dataset, its provenance, its I/O counters and
//! one `ArrayReader` per array (`Reader::array`, in `array.rs`, with how an array's boxes are
//! batched, fetched and decoded). kerchunk's Parquet references are opened lazily
//! ([`open_parquet`], and [`open`] of a directory of them): `.zmetadata` alone at open, the
//! record file of each chunk a read needs (`lazy.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use vzarr_core::{ChunkManifest, Provenance, SourceRecord, VirtualDataset};
use vzarr_kerchunk::{ParquetRecords, ParseLimits, ParsedRefs, parse_refs};
use vzarr_source::{
    AllowPrefixes, ByteSource, CheckRecords, CheckVersions, IoStats, Memo, Prefix, PrefixPolicy,
    ReadTuning, SourceError, SourceStore, SourceVersion, Stores, open_source,
};
use zarrs::array::Array;

use crate::ReadError;
use crate::lazy::{LazyRecords, RecordFetch};
use crate::store::{RefStore, Shared};

/// How to open references.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// URL prefixes (or local directories) sources may be read from. The prefixes the
    /// references record narrow these (a source must be under both); they never widen them.
    pub allow_prefixes: Vec<String>,
    /// Also allow the prefixes the references record (for references the user made or
    /// trusts; off by default, so a tampered manifest cannot widen what is read).
    pub trust_recorded_prefixes: bool,
    /// Read even if sources changed since the build.
    pub ignore_stale: bool,
    /// The versions of their sources references state themselves (an Icechunk repository's
    /// checksums), by URL: unless `ignore_stale`, a source is opened only while it is each.
    pub versions: Arc<HashMap<String, Vec<SourceVersion>>>,
    /// Sources read at once, and ranges of one source fetched at once, at most.
    pub concurrency: usize,
    /// Byte ranges of one source closer than this are fetched in one request.
    pub coalesce_gap: u64,
    /// Largest coalesced request.
    pub max_request: u64,
    /// Encoded bytes fetched per batch of chunks while the previous batch is decoded.
    pub batch_bytes: u64,
    /// Largest chunk (decoded, nominal shape) a read decodes whole; compressed chunks above
    /// it are refused rather than allocated.
    pub max_chunk_bytes: u64,
    /// Limits on what the references may ask for.
    pub limits: ParseLimits,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            allow_prefixes: Vec::new(),
            trust_recorded_prefixes: false,
            ignore_stale: false,
            versions: Arc::default(),
            concurrency: 16,
            coalesce_gap: 64 << 10,
            max_request: 16 << 20,
            batch_bytes: 128 << 20,
            max_chunk_bytes: 8 << 30,
            limits: ParseLimits::default(),
        }
    }
}

/// Counters of what a reader fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes fetched from sources through the manifest.
    pub bytes: u64,
    /// Ranged requests made.
    pub requests: u64,
    /// Sources opened (a `stat` or HEAD request each; staleness is checked then).
    pub heads: u64,
    /// Record files of lazily opened Parquet references read so far.
    pub record_files: u64,
}

/// Open references: the dataset, its provenance, and byte access to its sources.
pub struct Reader {
    pub(crate) shared: Arc<Shared>,
    /// The same policy and records as the manifest's sources, not counted in the stats: for
    /// reading sources directly (verification).
    direct: Arc<dyn SourceStore>,
    stats: Arc<IoStats>,
    origin: String,
    pub(crate) options: ReadOptions,
    pub(crate) arrays: Mutex<HashMap<String, Arc<Array<RefStore>>>>,
    /// Record files of lazy Parquet references read so far.
    record_files: Arc<AtomicU64>,
}

/// Reads the reference file at a local path, `file://` URL or object-store URL (the user
/// named it, so it is allowed).
fn load_refs(refs: &str) -> Result<(Bytes, SourceRecord), ReadError> {
    let load = |source| ReadError::Load {
        origin: refs.to_string(),
        source,
    };
    let src = open_source(refs).map_err(load)?;
    let bytes = src.read(0..src.size()).map_err(load)?;
    Ok((bytes, src.record().clone()))
}

/// Opens references (a local path, `file://` or object-store URL): a JSON file, or a
/// directory (prefix) of kerchunk's Parquet references, opened lazily ([`open_parquet`]).
/// Every URL the manifest names is checked against the allowed prefixes before anything is
/// fetched: here, or for lazy Parquet references when an array's record files are read.
pub fn open(refs: &str, options: ReadOptions) -> Result<Reader, ReadError> {
    open_located(locate(refs)?, refs, options)
}

/// Opens references [`locate`] found; `origin` names them in messages.
pub fn open_located(
    located: Located,
    origin: &str,
    options: ReadOptions,
) -> Result<Reader, ReadError> {
    match located {
        Located::File { bytes, .. } => open_bytes(&bytes, origin, options),
        Located::Parquet { dir, zmetadata, .. } => {
            open_parquet(&zmetadata, origin, record_fetch(&dir), options)
        }
    }
}

/// What references at a path or URL are: the one place the readers (the CLI, the Python
/// store and `open_dataset`) tell a reference file from kerchunk's Parquet references.
#[derive(Debug)]
#[non_exhaustive]
pub enum Located {
    /// A reference file.
    File {
        /// Its bytes.
        bytes: Bytes,
        /// Its size, modification time and ETag when read.
        record: SourceRecord,
    },
    /// A directory (object-store prefix) of kerchunk's Parquet references.
    Parquet {
        /// The directory or prefix, without a trailing `/`.
        dir: String,
        /// The bytes of its `.zmetadata`.
        zmetadata: Bytes,
        /// The `.zmetadata`'s size, modification time and ETag when read.
        record: SourceRecord,
    },
}

impl Located {
    /// The size, modification time and ETag of what identifies the references (the file,
    /// or the Parquet references' `.zmetadata`).
    pub fn record(&self) -> &SourceRecord {
        match self {
            Located::File { record, .. } | Located::Parquet { record, .. } => record,
        }
    }
}

/// Reads the reference file `refs` names, or the `.zmetadata` of the Parquet references it
/// names (a local directory holding one, a path ending in `/.zmetadata`, or an object-store
/// prefix with no object of its own name but a `.zmetadata` below). `refs` is what the user
/// named, so it is read whatever the allowed prefixes.
pub fn locate(refs: &str) -> Result<Located, ReadError> {
    let dir = match parquet_dir(refs) {
        Some(dir) => dir,
        None => match load_refs(refs) {
            Ok((bytes, record)) => return Ok(Located::File { bytes, record }),
            Err(e) => match &e {
                ReadError::Load { source, .. } => match parquet_prefix(refs, source) {
                    Some(dir) => dir,
                    None => return Err(e),
                },
                _ => return Err(e),
            },
        },
    };
    let (zmetadata, record) = load_refs(&format!("{dir}/.zmetadata"))?;
    Ok(Located::Parquet {
        dir,
        zmetadata,
        record,
    })
}

/// Whether `location` holds references, by the rules of [`locate`], reading at most the
/// first `sniff` bytes of a file or object (references when the first character that is not
/// white space, after a byte-order mark, opens a JSON object) or asking whether a
/// `.zmetadata` is below it.
pub fn holds_references(location: &str, sniff: u64) -> bool {
    if parquet_dir(location).is_some() {
        return true;
    }
    match open_source(location) {
        Ok(src) => {
            let Ok(head) = src.read(0..src.size().min(sniff)) else {
                return false;
            };
            let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
            text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        }
        Err(e) => parquet_prefix(location, &e).is_some(),
    }
}

/// The object-store prefix of Parquet references `refs` names, when opening it as a file
/// failed with `e` because there is no such object, and a `.zmetadata` is below it.
fn parquet_prefix(refs: &str, e: &SourceError) -> Option<String> {
    let dir = refs.trim_end_matches('/');
    let below = || open_source(&format!("{dir}/.zmetadata")).is_ok();
    (e.is_not_found() && !dir.is_empty() && below()).then(|| dir.to_string())
}

/// The directory of kerchunk Parquet references `refs` names, when it names one: the
/// directory of a `.zmetadata` file, or a local directory holding one.
fn parquet_dir(refs: &str) -> Option<String> {
    if let Some(dir) = refs.strip_suffix("/.zmetadata") {
        return Some(dir.to_string());
    }
    let local = match vzarr_source::parse_url(refs) {
        Ok(loc) if loc.scheme == vzarr_source::Scheme::File => loc.local_path(),
        Ok(_) => return None,
        Err(_) => std::path::PathBuf::from(refs),
    };
    (local.is_dir() && local.join(".zmetadata").is_file())
        .then(|| refs.trim_end_matches('/').to_string())
}

/// Parses the references at `refs` (a path or URL, which the user named, so it is read
/// whatever the allowed prefixes): a JSON file (kerchunk version 0 or 1, Zarr v3 or v2
/// metadata), or kerchunk's Parquet references (a directory or object-store prefix holding
/// `.zmetadata` and `<array>/refs.<k>.parq` files, read one at a time).
pub fn load(refs: &str, limits: ParseLimits) -> Result<ParsedRefs, ReadError> {
    match locate(refs)? {
        Located::File { bytes, .. } => Ok(parse_refs(&bytes, refs, limits)?),
        Located::Parquet { dir, zmetadata, .. } => {
            let fetch = record_fetch(&dir);
            Ok(vzarr_kerchunk::parse_parquet_refs(
                &zmetadata,
                refs,
                limits,
                &mut |rel| fetch(rel),
            )?)
        }
    }
}

/// Reads the record files of the Parquet references under `dir` (which the user named, so
/// they are read whatever the allowed prefixes), one whole file at a time.
fn record_fetch(dir: &str) -> RecordFetch {
    let dir = dir.to_string();
    Arc::new(move |rel: &str| {
        let url = format!("{dir}/{rel}");
        let src = match open_source(&url) {
            Ok(s) => s,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(Arc::new(e)),
        };
        if src.size() > vzarr_kerchunk::MAX_PARQUET_FILE {
            return Err(Arc::new(std::io::Error::other(format!(
                "{url}: {} bytes, more than the {} a record file may have",
                src.size(),
                vzarr_kerchunk::MAX_PARQUET_FILE
            ))));
        }
        src.read(0..src.size())
            .map(Some)
            .map_err(|e| Arc::new(e) as _)
    })
}

/// The source stack of a reader: allowed prefixes, then (unless ignored) the recorded
/// size, modification time and ETag of every source, then each source opened once.
fn source_stack(
    allow: &Arc<AllowPrefixes<Stores>>,
    prov: &Provenance,
    options: &ReadOptions,
) -> Arc<dyn SourceStore> {
    if options.ignore_stale {
        Arc::new(Memo::new(allow.clone()))
    } else {
        let records = CheckRecords::new(allow.clone(), prov.sources.iter().cloned());
        Arc::new(Memo::new(CheckVersions::new(
            records,
            options.versions.clone(),
        )))
    }
}

/// Opens references given as bytes; `origin` names them in messages. The parse of the last
/// reference file of at most 16 MiB is kept: the same bytes opened again (one
/// reader per group of a file, as xarray opens groups) are not parsed again, and the new
/// reader checks its sources afresh.
pub fn open_bytes(bytes: &[u8], origin: &str, options: ReadOptions) -> Result<Reader, ReadError> {
    let refs = parse_kept(bytes, origin, options.limits)?;
    open_parsed(refs, origin, options)
}

/// The largest reference file whose parse [`open_bytes`] keeps (its model and documents
/// cost a few times its size in memory).
pub(crate) const PARSE_KEPT_BYTES: usize = 16 << 20;

/// The last reference file parsed (at most [`PARSE_KEPT_BYTES`]): its bytes, the limits it
/// was parsed under, the parse.
static LAST_PARSE: Mutex<Option<(Bytes, ParseLimits, ParsedRefs)>> = Mutex::new(None);

/// [`parse_refs`] of `bytes`, or a copy of the kept parse of the same bytes under the same
/// limits.
fn parse_kept(bytes: &[u8], origin: &str, limits: ParseLimits) -> Result<ParsedRefs, ReadError> {
    if bytes.len() > PARSE_KEPT_BYTES {
        return Ok(parse_refs(bytes, origin, limits)?);
    }
    let kept = |slot: &Option<(Bytes, ParseLimits, ParsedRefs)>| match slot {
        Some((b, l, refs)) if *l == limits && b.as_ref() == bytes => Some(refs.clone()),
        _ => None,
    };
    if let Some(refs) = kept(&LAST_PARSE.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(refs);
    }
    let refs = parse_refs(bytes, origin, limits)?;
    *LAST_PARSE.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((Bytes::copy_from_slice(bytes), limits, refs.clone()));
    Ok(refs)
}

/// The byte layer of a reader: the allowed-prefix policy over the stores, counted and not.
struct Stacks {
    counted: Arc<AllowPrefixes<Stores>>,
    uncounted: Arc<AllowPrefixes<Stores>>,
    stats: Arc<IoStats>,
}

impl Stacks {
    /// The policy of `options` narrowed (or, when trusted, widened) by what `prov` records,
    /// over stores tuned by `options`.
    fn new(prov: &Provenance, options: &ReadOptions) -> Result<Self, ReadError> {
        for p in &options.allow_prefixes {
            Prefix::parse(p, true).map_err(ReadError::Prefix)?;
        }
        let mut allowed = options.allow_prefixes.clone();
        if options.trust_recorded_prefixes {
            allowed.extend(prov.allowed_prefixes.iter().cloned());
        }
        let policy =
            PrefixPolicy::new(&prov.allowed_prefixes, &allowed).map_err(ReadError::Prefix)?;
        let stats = IoStats::new();
        let tuning = ReadTuning {
            local_gap: options.coalesce_gap,
            remote_gap: options.coalesce_gap,
            max_request: options.max_request.max(1),
            concurrency: options.concurrency.max(1),
            stats: Some(stats.clone()),
        };
        let counted = Arc::new(AllowPrefixes::new(
            Stores::new(tuning.clone()),
            policy.clone(),
        ));
        let uncounted = Arc::new(AllowPrefixes::new(
            Stores::new(ReadTuning {
                stats: None,
                ..tuning
            }),
            policy,
        ));
        Ok(Stacks {
            counted,
            uncounted,
            stats,
        })
    }

    /// Checks the URLs `prov` names (sources, concatenation pieces).
    fn check_recorded(&self, prov: &Provenance) -> Result<(), ReadError> {
        let mut urls: Vec<&str> = prov.sources.iter().map(|s| s.url.as_str()).collect();
        if let Some(c) = &prov.concat {
            urls.extend(c.pieces.iter().map(|p| p.url.as_str()));
        }
        for url in urls {
            self.counted.check(url)?;
        }
        Ok(())
    }
}

/// Opens references already in the model (kerchunk references parsed, or an Icechunk
/// repository opened); `origin` names them in messages. As with [`open`], every URL they name
/// is checked against the allowed prefixes here, before anything is fetched.
pub fn open_parsed(
    refs: ParsedRefs,
    origin: &str,
    options: ReadOptions,
) -> Result<Reader, ReadError> {
    open_with(refs, None, origin, options)
}

/// Opens kerchunk's Parquet references lazily, as fsspec's `LazyReferenceMapper` reads them:
/// `zmetadata` (the bytes of their `.zmetadata`) is parsed here (the record files counted and
/// bounded by `options.limits.max_record_files`), and nothing else is read; a read reads
/// through `fetch` the record file of each chunk it needs (kept in a bounded cache), an
/// array's whole manifest ([`Reader::manifest`], [`Reader::load_all`]) all of its record
/// files (the manifest is then kept); every URL they hold is checked against the allowed
/// prefixes then, before any byte of a source is fetched. An error while loading (a record
/// file unreadable or corrupt, a URL refused) is that read's error, naming the record file;
/// other arrays stay readable. `origin` names the references.
pub fn open_parquet(
    zmetadata: &[u8],
    origin: &str,
    fetch: RecordFetch,
    options: ReadOptions,
) -> Result<Reader, ReadError> {
    let (refs, records) = ParquetRecords::open(zmetadata, origin, options.limits)?;
    open_with(refs, Some((records, fetch)), origin, options)
}

/// [`open_parsed`], with the record files of lazy Parquet references when given.
fn open_with(
    mut refs: ParsedRefs,
    lazy: Option<(ParquetRecords, RecordFetch)>,
    origin: &str,
    options: ReadOptions,
) -> Result<Reader, ReadError> {
    vzarr_codec::register_zarrs_fixes();
    let prov = &refs.dataset.provenance;
    let stacks = Stacks::new(prov, &options)?;
    // Every URL, before any byte is fetched.
    for (path, array) in &refs.dataset.arrays {
        for url in array.manifest.sources() {
            stacks
                .counted
                .check(url)
                .map_err(|e| ReadError::from(e).in_array(path))?;
        }
    }
    stacks.check_recorded(prov)?;
    let sources = source_stack(&stacks.counted, prov, &options);
    let direct = source_stack(&stacks.uncounted, prov, &options);
    // Whole-file chunks: each source checked and opened (its size learned) once, through the
    // same stack the reads use.
    std::mem::take(&mut refs.whole_files).resolve::<ReadError>(
        &mut refs.dataset,
        origin,
        |url: &str| {
            let size = sources.open(url)?.size();
            Ok((url.to_string(), size))
        },
    )?;
    let record_files = Arc::new(AtomicU64::new(0));
    let lazy = lazy.map(|(records, fetch)| {
        LazyRecords::new(
            records,
            fetch,
            stacks.counted.clone(),
            sources.clone(),
            record_files.clone(),
        )
    });
    Ok(Reader {
        shared: Arc::new(Shared {
            refs,
            lazy,
            sources,
            concurrency: options.concurrency.max(1),
        }),
        direct,
        stats: stacks.stats,
        origin: origin.to_string(),
        options,
        arrays: Mutex::new(HashMap::new()),
        record_files,
    })
}

/// The sources of references that are read one key at a time from elsewhere (an Icechunk
/// repository's manifests, too many to hold), under the policy [`open_parsed`] applies: the
/// URLs `prov` names (sources, concatenation pieces) are checked here, and every other URL
/// when it is first opened, before any of its bytes is read (a local path once its links
/// are resolved). Unless `options.ignore_stale`, sources `prov` records are refused when they
/// changed since.
pub fn open_sources(
    prov: &Provenance,
    options: &ReadOptions,
) -> Result<Arc<dyn SourceStore>, ReadError> {
    let stacks = Stacks::new(prov, options)?;
    stacks.check_recorded(prov)?;
    Ok(source_stack(&stacks.uncounted, prov, options))
}

impl Reader {
    /// The dataset as parsed from the references. For lazily opened Parquet references
    /// ([`open_parquet`]), the manifests of the arrays not loaded yet
    /// ([`Reader::pending_arrays`]) are empty here until [`Reader::load_all`]; a read loads
    /// what it needs ([`Reader::manifest`]).
    pub fn dataset(&self) -> &VirtualDataset {
        &self.shared.refs.dataset
    }

    /// The manifest of the array at `path`; for lazily opened Parquet references, its record
    /// files are read (and its URLs checked) on first use and it is kept.
    pub fn manifest(&self, path: &str) -> Result<&ChunkManifest, ReadError> {
        self.shared.manifest(path.trim_start_matches('/'))
    }

    /// The arrays of lazily opened Parquet references whose whole manifests were not loaded
    /// yet ([`Reader::manifest`], [`Reader::load_all`]; reads load record files, not
    /// manifests), none for other references, sorted.
    pub fn pending_arrays(&self) -> Vec<String> {
        self.shared
            .lazy
            .as_ref()
            .map(LazyRecords::pending)
            .unwrap_or_default()
    }

    /// `Ok` when [`Reader::dataset`] holds every reference; else [`ReadError::NotLoaded`],
    /// naming the arrays of lazily opened Parquet references not loaded yet. For what needs
    /// every chunk and takes the reader as it is (verify).
    pub fn require_loaded(&self) -> Result<(), ReadError> {
        let arrays = self.pending_arrays();
        if arrays.is_empty() {
            return Ok(());
        }
        Err(ReadError::NotLoaded {
            origin: self.origin.clone(),
            arrays,
        })
    }

    /// Loads every array's manifest not loaded yet (reading the record files of lazily opened
    /// Parquet references) and puts them in [`Reader::dataset`], which then holds every
    /// reference, as for eagerly parsed references. For what needs every chunk (verify,
    /// listing, summaries).
    pub fn load_all(&mut self) -> Result<(), ReadError> {
        let Some(lazy) = &self.shared.lazy else {
            return Ok(());
        };
        lazy.load_all()?;
        // The zarrs arrays share `shared`; they are reopened on demand.
        self.arrays
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        if Arc::get_mut(&mut self.shared).is_none() {
            // Shared elsewhere still (nothing else holds it once the arrays are gone; kept
            // correct regardless): a copy of the references, with the manifests copied.
            let old = &*self.shared;
            let mut refs = old.refs.clone();
            for (path, a) in refs.dataset.arrays.iter_mut() {
                a.manifest = old.manifest(path)?.clone();
            }
            self.shared = Arc::new(Shared {
                refs,
                lazy: None,
                sources: old.sources.clone(),
                concurrency: old.concurrency,
            });
            return Ok(());
        }
        let shared = Arc::get_mut(&mut self.shared).expect("checked just above");
        if let Some(lazy) = shared.lazy.take() {
            for (path, m) in lazy.into_manifests() {
                if let Some(a) = shared.refs.dataset.arrays.get_mut(&path) {
                    a.manifest = m;
                }
            }
        }
        Ok(())
    }

    /// The references as parsed.
    pub fn refs(&self) -> &ParsedRefs {
        &self.shared.refs
    }

    /// Where the data comes from (empty when the references carry no `vzarr` block).
    pub fn provenance(&self) -> &Provenance {
        &self.shared.refs.dataset.provenance
    }

    /// Where the references came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The options the reader was opened with.
    pub fn options(&self) -> &ReadOptions {
        &self.options
    }

    /// What was fetched so far through the manifest.
    pub fn stats(&self) -> ReadStats {
        let c = self.stats.counts();
        ReadStats {
            bytes: c.bytes,
            requests: c.requests,
            heads: c.opens,
            record_files: self.record_files.load(Ordering::Relaxed),
        }
    }

    /// The sources under the reader's policy (allowed prefixes, recorded records), for reading
    /// them directly; reads through it are not counted in [`Reader::stats`].
    pub fn direct_sources(&self) -> &Arc<dyn SourceStore> {
        &self.direct
    }

    /// Every source URL the references name (manifests, recorded sources, concatenation
    /// pieces), sorted and deduplicated; of lazily opened Parquet references, those of the
    /// arrays loaded so far ([`Reader::load_all`] first for all).
    pub fn source_urls(&self) -> Vec<String> {
        let ds = self.dataset();
        let lazy = self.shared.lazy.as_ref();
        let mut v: Vec<String> = ds
            .arrays
            .iter()
            .map(|(p, a)| lazy.and_then(|l| l.loaded(p)).unwrap_or(&a.manifest))
            .flat_map(|m| m.sources().iter().map(|s| s.to_string()))
            .chain(ds.provenance.sources.iter().map(|s| s.url.clone()))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Opens every source the references name and checks it against its recorded size,
    /// modification time and ETag; returns the errors (stale, missing or refused sources) in
    /// URL order (empty when staleness is ignored and every source opens).
    pub fn check_sources(&self) -> Vec<SourceError> {
        let urls = self.source_urls();
        vzarr_source::parallel_map(&urls, self.shared.concurrency, |url| {
            self.direct.open(url).err()
        })
        .into_iter()
        .flatten()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Reader>();
    }
}
