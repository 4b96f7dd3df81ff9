//! The reader: opens references, checks every URL against the allowed prefixes before anything
//! is fetched, and reads array subsets through zarrs.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use ndarray::ArrayD;
use unsafe_cell_slice::UnsafeCellSlice;
use vzarr_core::{DataType, Provenance, VirtualArray, VirtualDataset};
use vzarr_kerchunk::{ParseLimits, ParsedRefs, parse_refs};
use vzarr_source::{
    AllowPrefixes, ByteSource, CheckRecords, IoStats, Memo, Prefix, PrefixPolicy, ReadTuning,
    SourceError, SourceStore, Stores, open_source,
};
use zarrs::array::{
    Array, ArrayBytes, ArrayBytesDecodeIntoTarget, ArrayBytesFixedDisjointView, ArraySubset,
    ElementOwned,
};

use crate::ReadError;
use crate::select::{ResolvedSelection, Selection};
use crate::store::{RefStore, Shared};
use crate::values::{RawArray, unravel};

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
}

/// Open references: the dataset, its provenance, and byte access to its sources.
pub struct Reader {
    shared: Arc<Shared>,
    /// The same policy and records as the manifest's sources, not counted in the stats: for
    /// reading sources directly (verification).
    direct: Arc<dyn SourceStore>,
    stats: Arc<IoStats>,
    origin: String,
    options: ReadOptions,
    arrays: Mutex<HashMap<String, Arc<Array<RefStore>>>>,
}

/// Reads the reference file at a local path, `file://` URL or object-store URL (the user
/// named it, so it is allowed).
fn load_refs(refs: &str) -> Result<Bytes, ReadError> {
    let load = |source| ReadError::Load {
        origin: refs.to_string(),
        source,
    };
    let src = open_source(refs).map_err(load)?;
    src.read(0..src.size()).map_err(load)
}

/// Opens references (a local path, `file://` or object-store URL). Every URL the manifest
/// names is checked against the allowed prefixes here, before anything is fetched.
pub fn open(refs: &str, options: ReadOptions) -> Result<Reader, ReadError> {
    let bytes = load_refs(refs)?;
    open_bytes(&bytes, refs, options)
}

/// The source stack of a reader: allowed prefixes, then (unless ignored) the recorded
/// size, modification time and ETag of every source, then each source opened once.
fn source_stack(
    allow: &Arc<AllowPrefixes<Stores>>,
    prov: &Provenance,
    ignore_stale: bool,
) -> Arc<dyn SourceStore> {
    if ignore_stale {
        Arc::new(Memo::new(allow.clone()))
    } else {
        Arc::new(Memo::new(CheckRecords::new(
            allow.clone(),
            prov.sources.iter().cloned(),
        )))
    }
}

/// Opens references given as bytes; `origin` names them in messages.
pub fn open_bytes(bytes: &[u8], origin: &str, options: ReadOptions) -> Result<Reader, ReadError> {
    let refs = parse_refs(bytes, origin, options.limits)?;
    open_parsed(refs, origin, options)
}

/// Opens references already in the model (kerchunk references parsed, or an Icechunk
/// repository opened); `origin` names them in messages. As with [`open`], every URL they name
/// is checked against the allowed prefixes here, before anything is fetched.
pub fn open_parsed(
    refs: ParsedRefs,
    origin: &str,
    options: ReadOptions,
) -> Result<Reader, ReadError> {
    vzarr_codec::register_zarrs_fixes();
    let prov = &refs.dataset.provenance;
    for p in &options.allow_prefixes {
        Prefix::parse(p, true).map_err(ReadError::Prefix)?;
    }
    let mut allowed = options.allow_prefixes.clone();
    if options.trust_recorded_prefixes {
        allowed.extend(prov.allowed_prefixes.iter().cloned());
    }
    let policy = PrefixPolicy::new(&prov.allowed_prefixes, &allowed).map_err(ReadError::Prefix)?;
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
    // Every URL, before any byte is fetched.
    for (path, array) in &refs.dataset.arrays {
        for url in array.manifest.sources() {
            counted
                .check(url)
                .map_err(|e| ReadError::from(e).in_array(path))?;
        }
    }
    let mut others: Vec<&str> = prov.sources.iter().map(|s| s.url.as_str()).collect();
    if let Some(c) = &prov.concat {
        others.extend(c.pieces.iter().map(|p| p.url.as_str()));
    }
    for url in others {
        counted.check(url)?;
    }
    let sources = source_stack(&counted, prov, options.ignore_stale);
    let direct = source_stack(&uncounted, prov, options.ignore_stale);
    Ok(Reader {
        shared: Arc::new(Shared {
            refs,
            sources,
            concurrency: options.concurrency.max(1),
        }),
        direct,
        stats,
        origin: origin.to_string(),
        options,
        arrays: Mutex::new(HashMap::new()),
    })
}

impl Reader {
    /// The dataset as parsed from the references.
    pub fn dataset(&self) -> &VirtualDataset {
        &self.shared.refs.dataset
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
        }
    }

    /// The sources under the reader's policy (allowed prefixes, recorded records), for reading
    /// them directly; reads through it are not counted in [`Reader::stats`].
    pub fn direct_sources(&self) -> &Arc<dyn SourceStore> {
        &self.direct
    }

    /// Every source URL the references name (manifests, recorded sources, concatenation
    /// pieces), sorted and deduplicated.
    pub fn source_urls(&self) -> Vec<String> {
        let ds = self.dataset();
        let mut v: Vec<String> = ds
            .arrays
            .values()
            .flat_map(|a| a.manifest.sources().iter().map(|s| s.to_string()))
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

    fn zarr_array(&self, path: &str) -> Result<Arc<Array<RefStore>>, ReadError> {
        let mut arrays = self.arrays.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = arrays.get(path) {
            return Ok(a.clone());
        }
        if !self.dataset().arrays.contains_key(path) {
            return Err(ReadError::NoArray(path.to_string()));
        }
        let store = Arc::new(RefStore::new(self.shared.clone(), path, Arc::default()));
        let a = Array::open(store, &format!("/{path}"))
            .map_err(|e| ReadError::array(path, format!("zarrs cannot open it: {e}")))?;
        let a = Arc::new(a);
        arrays.insert(path.to_string(), a.clone());
        Ok(a)
    }

    /// A handle to read the array at `path`.
    pub fn array(&self, path: &str) -> Result<ArrayReader<'_>, ReadError> {
        let path = path.trim_start_matches('/');
        let meta = self
            .dataset()
            .arrays
            .get(path)
            .ok_or_else(|| ReadError::NoArray(path.to_string()))?;
        let zarr = self.zarr_array(path)?;
        Ok(ArrayReader {
            reader: self,
            path: path.to_string(),
            meta,
            zarr,
        })
    }

    /// Reads a parsed selection (`VAR[0:3,10,:]`).
    pub fn read_selection(&self, sel: &Selection) -> Result<RawArray, ReadError> {
        self.array(&sel.var)?.read_selection(sel)
    }
}

/// Encoded bytes of some chunks of one array, fetched ahead of decoding
/// ([`ArrayReader::fetch_chunks`]).
#[derive(Clone, Debug, Default)]
pub struct FetchedChunks {
    // Shared by every box decoded from the batch: cloning it per box would copy the whole
    // batch's map each time (verify decodes one box per chunk).
    bytes: Arc<HashMap<usize, Bytes>>,
}

/// One array of open references.
pub struct ArrayReader<'r> {
    reader: &'r Reader,
    path: String,
    meta: &'r VirtualArray,
    zarr: Arc<Array<RefStore>>,
}

/// A batch of chunk rows: the box it covers and the chunks it needs.
struct Batch {
    ranges: Vec<Range<u64>>,
    lins: Vec<usize>,
}

/// The result of a scoped fetch thread (a panic in it is resumed here).
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> Result<T, ReadError> {
    match h.join() {
        Ok(v) => Ok(v),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The linear indices of the chunks that a box touches, in C order.
fn chunks_in_box(array: &VirtualArray, ranges: &[Range<u64>]) -> Vec<usize> {
    let grid = &array.grid;
    let mut per_axis: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for (d, r) in grid.dims().iter().zip(ranges) {
        if r.start >= r.end {
            return Vec::new();
        }
        match (d.chunk_of(r.start), d.chunk_of(r.end - 1)) {
            (Some(a), Some(b)) => per_axis.push(a..b + 1),
            _ => return Vec::new(),
        }
    }
    let counts: Vec<u64> = per_axis.iter().map(|r| r.end - r.start).collect();
    let total: u64 = counts.iter().product();
    (0..total)
        .filter_map(|k| {
            let idx: Vec<u64> = unravel(k, &counts)
                .iter()
                .zip(&per_axis)
                .map(|(i, r)| r.start + i)
                .collect();
            grid.linear_index(&idx).map(|l| l as usize)
        })
        .collect()
}

/// Whether the box `ranges` covers the valid part of chunk `lin` entirely.
fn fully_covered(array: &VirtualArray, lin: usize, ranges: &[Range<u64>]) -> bool {
    let idx = array.grid.chunk_index(lin as u64);
    array
        .grid
        .dims()
        .iter()
        .zip(&idx)
        .zip(ranges)
        .all(|((d, &i), r)| {
            let start = d.chunk_start(i);
            r.start <= start && r.end >= start + d.chunk_valid_len(i)
        })
}

/// Bytes of the largest chunk of `array` at its nominal (encoded) shape, saturating.
pub fn max_chunk_bytes(array: &VirtualArray) -> u64 {
    array
        .grid
        .dims()
        .iter()
        .fold(array.data_type.size() as u64, |acc, d| {
            let edge = match d {
                vzarr_core::DimGrid::Fixed { size, .. } => *size,
                vzarr_core::DimGrid::Varying { edges, .. } => {
                    edges.iter().copied().max().unwrap_or(1)
                }
            };
            acc.saturating_mul(edge)
        })
}

fn encoded_len(array: &VirtualArray, lin: usize) -> u64 {
    match array.manifest.get(lin) {
        vzarr_core::ChunkRef::Range { length, .. } => length,
        vzarr_core::ChunkRef::Inline(b) => b.len() as u64,
        vzarr_core::ChunkRef::Missing => 0,
    }
}

impl<'r> ArrayReader<'r> {
    /// Array path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The array's model: metadata and manifest.
    pub fn meta(&self) -> &'r VirtualArray {
        self.meta
    }

    /// Shape.
    pub fn shape(&self) -> Vec<u64> {
        self.meta.shape()
    }

    /// Element type.
    pub fn data_type(&self) -> DataType {
        self.meta.data_type.clone()
    }

    /// Refuses arrays whose compressed chunks would not fit the chunk size limit when decoded,
    /// and string arrays with codecs after `vlen-utf8` (vzarr writes none; their decoded size
    /// cannot be bounded before decoding).
    pub fn check_chunk_size(&self) -> Result<(), ReadError> {
        if self.meta.data_type.is_string() && !self.meta.codecs.is_empty() {
            return Err(ReadError::array(
                &self.path,
                "string array with codecs after vlen-utf8: not read here (vzarr writes string \
                 chunks uncompressed)",
            ));
        }
        let n = max_chunk_bytes(self.meta);
        let limit = self.reader.options.max_chunk_bytes;
        if !self.meta.codecs.is_empty() && n > limit {
            return Err(ReadError::array(
                &self.path,
                format!("chunks of {n} bytes are larger than the limit of {limit} bytes"),
            ));
        }
        Ok(())
    }

    fn check_ranges(&self, ranges: &[Range<u64>]) -> Result<(), ReadError> {
        let shape = self.shape();
        if ranges.len() != shape.len() {
            return Err(ReadError::array(
                &self.path,
                format!("{} ranges for {} dimensions", ranges.len(), shape.len()),
            ));
        }
        for (k, (r, &n)) in ranges.iter().zip(&shape).enumerate() {
            if r.start > r.end || r.end > n {
                return Err(ReadError::array(
                    &self.path,
                    format!("range {r:?} is outside axis {k} of length {n}"),
                ));
            }
        }
        Ok(())
    }

    /// Splits the box into batches of whole chunk rows along axis 0, each with at most about
    /// `batch_bytes` of encoded chunks.
    fn batches(&self, ranges: &[Range<u64>]) -> Vec<Batch> {
        if ranges.is_empty() {
            return vec![Batch {
                ranges: Vec::new(),
                lins: vec![0],
            }];
        }
        let d0 = &self.meta.grid.dims()[0];
        let r0 = &ranges[0];
        let (Some(first), Some(last)) = (
            d0.chunk_of(r0.start),
            r0.end.checked_sub(1).and_then(|e| d0.chunk_of(e)),
        ) else {
            return Vec::new();
        };
        let limit = self.reader.options.batch_bytes.max(1);
        let mut out: Vec<Batch> = Vec::new();
        let mut cur: Option<Batch> = None;
        let mut cur_bytes = 0u64;
        for row in first..=last {
            let lo = d0.chunk_start(row).max(r0.start);
            let hi = (d0.chunk_start(row) + d0.chunk_len(row)).min(r0.end);
            let mut rr = ranges.to_vec();
            rr[0] = lo..hi;
            let mut lins = chunks_in_box(self.meta, &rr);
            if self.meta.codecs.is_empty() {
                // Raw chunks only partly selected are read by zarrs with ranged requests of
                // just the selected bytes; prefetch only the chunks read whole.
                lins.retain(|&l| fully_covered(self.meta, l, &rr));
            }
            let bytes: u64 = lins.iter().map(|&l| encoded_len(self.meta, l)).sum();
            match &mut cur {
                Some(b) if cur_bytes < limit && b.lins.len() < 65_536 => {
                    b.ranges[0].end = hi;
                    b.lins.extend(lins);
                    cur_bytes += bytes;
                }
                _ => {
                    if let Some(b) = cur.take() {
                        out.push(b);
                    }
                    cur = Some(Batch { ranges: rr, lins });
                    cur_bytes = bytes;
                }
            }
        }
        out.extend(cur);
        out
    }

    /// Fetches the encoded bytes of the stored-by-reference chunks `lins` (linear indices in
    /// C order over the grid), for [`ArrayReader::decode_box`].
    pub fn fetch_chunks(&self, lins: &[usize]) -> Result<FetchedChunks, ReadError> {
        let bytes = self
            .reader
            .shared
            .fetch(&self.path, lins)
            .map_err(|e| e.in_array(&self.path))?;
        Ok(FetchedChunks {
            bytes: Arc::new(bytes),
        })
    }

    /// Decodes the box `ranges` (one range per axis) into native-endian values, with the
    /// chunks in `fetched` (others are fetched on demand).
    pub fn decode_box(
        &self,
        fetched: &FetchedChunks,
        ranges: &[Range<u64>],
    ) -> Result<Vec<u8>, ReadError> {
        self.check_ranges(ranges)?;
        let store = Arc::new(RefStore::new(
            self.reader.shared.clone(),
            &self.path,
            fetched.bytes.clone(),
        ));
        let arr = self.zarr.with_storage(store);
        let subset = ArraySubset::new_with_ranges(ranges);
        let ab: ArrayBytes<'static> = arr
            .retrieve_array_subset(&subset)
            .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))?;
        let raw = ab
            .into_fixed()
            .map_err(|e| ReadError::array(&self.path, e))?;
        Ok(raw.into_owned())
    }

    /// Decodes the box `ranges` of a string array into its elements (C order), with the chunks
    /// in `fetched` (others are fetched on demand).
    pub fn decode_box_strings(
        &self,
        fetched: &FetchedChunks,
        ranges: &[Range<u64>],
    ) -> Result<Vec<String>, ReadError> {
        self.check_ranges(ranges)?;
        self.check_chunk_size()?;
        let store = Arc::new(RefStore::new(
            self.reader.shared.clone(),
            &self.path,
            fetched.bytes.clone(),
        ));
        self.retrieve_strings(store, ranges)
    }

    fn retrieve_strings(
        &self,
        store: Arc<RefStore>,
        ranges: &[Range<u64>],
    ) -> Result<Vec<String>, ReadError> {
        if !self.meta.data_type.is_string() {
            return Err(ReadError::array(&self.path, "not a string array"));
        }
        let arr = self.zarr.with_storage(store);
        arr.retrieve_array_subset::<Vec<String>>(&ArraySubset::new_with_ranges(ranges))
            .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))
    }

    /// Decodes the box `ranges` straight into `out` (the C-order bytes of a box of `out_shape`)
    /// at the position `rel` inside it.
    fn decode_into(
        &self,
        store: Arc<RefStore>,
        ranges: &[Range<u64>],
        out: &mut [u8],
        out_shape: &[u64],
        rel: &[Range<u64>],
    ) -> Result<(), ReadError> {
        let arr = self.zarr.with_storage(store);
        let esize = self.meta.data_type.size();
        let cells = UnsafeCellSlice::new(out);
        // SAFETY: this is the only view of `out` alive; its subset lies inside `out_shape`
        // (checked by the constructor) and `out` holds exactly the bytes of `out_shape`.
        let mut view = unsafe {
            ArrayBytesFixedDisjointView::new(
                cells,
                esize,
                out_shape,
                ArraySubset::new_with_ranges(rel),
            )
        }
        .map_err(|e| ReadError::array(&self.path, e))?;
        arr.retrieve_array_subset_into(
            &ArraySubset::new_with_ranges(ranges),
            ArrayBytesDecodeIntoTarget::Fixed(&mut view),
        )
        .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))
    }

    /// Reads the box `ranges` (one range per axis) as native-endian values. Chunks are fetched
    /// in batches (the next batch while the current one is decoded) and decoded straight into
    /// the result.
    pub fn read_raw(&self, ranges: &[Range<u64>]) -> Result<RawArray, ReadError> {
        self.check_ranges(ranges)?;
        self.check_chunk_size()?;
        let shape: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        if self.meta.data_type.is_string() {
            // Inline chunks, decoded batch by batch of chunk rows like the others.
            // Batches split axis 0 only: their elements follow each other in C order.
            let mut strings = Vec::new();
            for b in self.batches(ranges) {
                let fetched = self.fetch_chunks(&b.lins)?;
                let store = Arc::new(RefStore::new(
                    self.reader.shared.clone(),
                    &self.path,
                    fetched.bytes,
                ));
                strings.extend(self.retrieve_strings(store, &b.ranges)?);
            }
            return Ok(RawArray {
                data_type: self.meta.data_type.clone(),
                shape,
                bytes: Vec::new(),
                strings,
            });
        }
        let esize = self.meta.data_type.size();
        let total = shape
            .iter()
            .try_fold(esize as u64, |a, &d| a.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| ReadError::array(&self.path, "the selection is too large"))?;
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|_| {
            ReadError::array(
                &self.path,
                format!("cannot allocate {total} bytes for the selection"),
            )
        })?;
        out.resize(total, 0);
        if total == 0 {
            return Ok(RawArray {
                data_type: self.meta.data_type.clone(),
                shape,
                bytes: out,
                strings: Vec::new(),
            });
        }
        let batches = self.batches(ranges);
        std::thread::scope(|s| -> Result<(), ReadError> {
            let fetch = |b: &Batch| self.fetch_chunks(&b.lins);
            let mut pending = batches.first().map(|b| s.spawn(move || fetch(b)));
            for (i, b) in batches.iter().enumerate() {
                let fetched = match pending.take() {
                    Some(h) => join(h)??,
                    None => FetchedChunks::default(),
                };
                pending = batches.get(i + 1).map(|n| s.spawn(move || fetch(n)));
                let store = Arc::new(RefStore::new(
                    self.reader.shared.clone(),
                    &self.path,
                    fetched.bytes,
                ));
                let rel: Vec<Range<u64>> = b
                    .ranges
                    .iter()
                    .zip(ranges)
                    .map(|(r, whole)| r.start - whole.start..r.end - whole.start)
                    .collect();
                self.decode_into(store, &b.ranges, &mut out, &shape, &rel)?;
            }
            Ok(())
        })?;
        Ok(RawArray {
            data_type: self.meta.data_type.clone(),
            shape,
            bytes: out,
            strings: Vec::new(),
        })
    }

    /// Reads the whole array as native-endian values.
    pub fn read_all_raw(&self) -> Result<RawArray, ReadError> {
        let ranges: Vec<Range<u64>> = self.shape().iter().map(|&n| 0..n).collect();
        self.read_raw(&ranges)
    }

    /// Reads the box `ranges` into an ndarray of `T` (which must match the data type, e.g.
    /// `f32` for `float32`, `u8` for `uint8`).
    pub fn read<T: ElementOwned>(&self, ranges: &[Range<u64>]) -> Result<ArrayD<T>, ReadError> {
        if self.meta.data_type.is_string() {
            // `String` elements: through zarrs' element conversion.
            self.check_ranges(ranges)?;
            self.check_chunk_size()?;
            let arr = self.zarr.with_storage(Arc::new(RefStore::new(
                self.reader.shared.clone(),
                &self.path,
                Arc::default(),
            )));
            let values = arr
                .retrieve_array_subset::<Vec<T>>(&ArraySubset::new_with_ranges(ranges))
                .map_err(|e| ReadError::array(&self.path, format!("decoding failed: {e}")))?;
            let shape: Vec<usize> = ranges.iter().map(|r| (r.end - r.start) as usize).collect();
            return ArrayD::from_shape_vec(shape, values)
                .map_err(|e| ReadError::array(&self.path, e));
        }
        let raw = self.read_raw(ranges)?;
        let values = T::from_array_bytes(self.zarr.data_type(), ArrayBytes::new_flen(raw.bytes))
            .map_err(|e| ReadError::array(&self.path, e))?;
        let shape: Vec<usize> = raw.shape.iter().map(|&d| d as usize).collect();
        ArrayD::from_shape_vec(shape, values).map_err(|e| ReadError::array(&self.path, e))
    }

    /// Reads the whole array into an ndarray of `T`.
    pub fn read_all<T: ElementOwned>(&self) -> Result<ArrayD<T>, ReadError> {
        let ranges: Vec<Range<u64>> = self.shape().iter().map(|&n| 0..n).collect();
        self.read(&ranges)
    }

    /// Reads a numpy-like selection (steps and single indices applied).
    pub fn read_selection(&self, sel: &Selection) -> Result<RawArray, ReadError> {
        let r = sel.resolve(&self.shape())?;
        let bbox = self.read_raw(&r.ranges)?;
        Ok(apply_steps(bbox, &r))
    }
}

/// Picks every `step`-th element of a bounding box and drops single-index axes.
fn apply_steps(bbox: RawArray, r: &ResolvedSelection) -> RawArray {
    let out_shape = r.shape();
    if r.steps.iter().all(|&s| s == 1) {
        return RawArray {
            shape: out_shape,
            ..bbox
        };
    }
    let esize = bbox.data_type.size();
    let counts = r.counts();
    let n: u64 = counts.iter().product();
    if bbox.data_type.is_string() {
        let strings = (0..n)
            .map(|k| {
                let idx = unravel(k, &counts);
                let mut lin = 0usize;
                for ((i, s), d) in idx.iter().zip(&r.steps).zip(&bbox.shape) {
                    lin = lin * *d as usize + (*i * *s) as usize;
                }
                bbox.strings[lin].clone()
            })
            .collect();
        return RawArray {
            data_type: bbox.data_type,
            shape: out_shape,
            bytes: Vec::new(),
            strings,
        };
    }
    let mut bytes = Vec::with_capacity(n as usize * esize);
    for k in 0..n {
        let idx = unravel(k, &counts);
        let mut lin = 0usize;
        for ((i, s), d) in idx.iter().zip(&r.steps).zip(&bbox.shape) {
            lin = lin * *d as usize + (*i * *s) as usize;
        }
        bytes.extend_from_slice(&bbox.bytes[lin * esize..(lin + 1) * esize]);
    }
    RawArray {
        data_type: bbox.data_type,
        shape: out_shape,
        bytes,
        strings: Vec::new(),
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
