//! Bytes the planner writes itself, stored inline in the manifest: arrays of re-encoded values
//! (CF time coordinates and bounds), and padded edge chunks decoded, cut to their valid part
//! and re-encoded with the variable's own codecs (string chunks: their elements, encoded again
//! as a `vlen-utf8` chunk).

use std::collections::HashMap;

use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkGrid, ChunkManifest, Codec, DataType, Endian, FillValue, VirtualArray};
use vzarr_source::{SourceStore, parallel_map};

use crate::error::{EdgeChunkError, PlanError};
use crate::prefetch::READ_FILES;
use crate::values;

/// Inline chunks of re-encoded coordinates hold at most this many bytes.
const INLINE_CHUNK_BYTES: u64 = 8 << 20;

/// The fill value of `a` as little-endian bytes of `dt` (converted through f64 when the type
/// changes).
fn fill_value_as(a: &VirtualArray, dt: DataType) -> Vec<u8> {
    if dt == a.data_type {
        return a.fill_value.le_bytes().to_vec();
    }
    let v = values::as_f64(a.fill_value.le_bytes(), a.data_type.clone(), Endian::Little)
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or(f64::NAN);
    values::from_f64(&[v], dt.clone()).unwrap_or_else(|| vec![0; dt.size()])
}

/// Builds an array like `template` whose values are `raw_le` (little-endian elements of `dt`
/// in C order): one or more inline chunks along axis 0, no codecs.
pub(crate) fn inline_array(
    template: &VirtualArray,
    shape: &[u64],
    dt: DataType,
    raw_le: Vec<u8>,
) -> Result<VirtualArray, PlanError> {
    let pad = fill_value_as(template, dt.clone());
    let (grid, chunks) = chunks_along_axis0(shape, dt.size(), INLINE_CHUNK_BYTES, &raw_le, &pad)?;
    let mut manifest = ChunkManifest::new_missing(chunks.len());
    for (i, bytes) in chunks.into_iter().enumerate() {
        manifest.set_inline(i, bytes)?;
    }
    let fill_value = FillValue::from_le_bytes(dt.clone(), &fill_value_as(template, dt.clone()))?;
    let mut attributes = template.attributes.clone();
    if dt != template.data_type
        && let Some(v) = attributes.get_mut("_FillValue")
    {
        *v = vzarr_core::attrs::cf_fill_value(dt.clone(), &fill_value);
    }
    Ok(VirtualArray {
        data_type: dt,
        endian: Endian::Little,
        fill_value,
        codecs: vec![],
        dimension_names: template.dimension_names.clone(),
        attributes,
        grid,
        manifest,
    })
}

/// The raw C-order bytes `raw` of an array of `shape` (elements of `esize` bytes) cut along
/// axis 0 into chunks of whole rows, as many rows as fit `chunk_bytes` (at least one); the
/// last chunk padded with the element `pad` to the nominal chunk shape, as Zarr expects. A
/// 0-d array is one chunk.
pub(crate) fn chunks_along_axis0(
    shape: &[u64],
    esize: usize,
    chunk_bytes: u64,
    raw: &[u8],
    pad: &[u8],
) -> Result<(ChunkGrid, Vec<Vec<u8>>), PlanError> {
    let esize = esize as u64;
    let row: u64 = shape.iter().skip(1).product::<u64>() * esize;
    let mut chunk: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    if let Some(first) = chunk.first_mut() {
        *first = (chunk_bytes / row.max(1)).clamp(1, (*first).max(1));
    }
    let grid = ChunkGrid::regular(shape, &chunk)?;
    let n = grid.n_chunks()? as usize;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let idx = grid.chunk_index(i as u64);
        let start = grid.chunk_origin(&idx).first().copied().unwrap_or(0);
        let rows = grid.dims().first().map_or(1, |d| d.chunk_valid_len(idx[0]));
        let nominal = grid.chunk_shape(&idx).first().copied().unwrap_or(1);
        let mut bytes = raw[(start * row) as usize..((start + rows) * row) as usize].to_vec();
        for _ in rows..nominal {
            for _ in 0..row / esize.max(1) {
                bytes.extend_from_slice(pad);
            }
        }
        out.push(bytes);
    }
    Ok((grid, out))
}

/// Encoded bytes of padded edge chunks read and re-encoded together at most (a batch's
/// chunks are read concurrently, its results kept until the planner copies them into the
/// combined manifest, where they stay inline).
const EDGE_BATCH_BYTES: u64 = 64 << 20;

/// A padded edge chunk to re-encode: chunk `lin` of `array` (of file `file`), of nominal
/// shape `nominal`, keeping the first `keep` indices along the concatenation axis.
pub(crate) struct EdgeJob<'a> {
    /// The file's position in output order.
    pub(crate) file: usize,
    /// The file's version of the variable.
    pub(crate) array: &'a VirtualArray,
    /// The chunk's position in the manifest.
    pub(crate) lin: usize,
    /// Its nominal shape.
    pub(crate) nominal: Vec<u64>,
    /// Indices to keep along the axis.
    pub(crate) keep: u64,
    /// Its encoded length (for the batch bound).
    pub(crate) len: u64,
}

/// Re-encodes the valid part of padded edge chunks of one variable along `axis`: the jobs
/// are read and re-encoded in batches of at most [`EDGE_BATCH_BYTES`], up to
/// [`READ_FILES`] at once (chunks of different files are read concurrently); the codec
/// chain is built on first use. All run before the planner copies the references, so that
/// it can drop each file's references once copied.
pub(crate) struct EdgeReencoder<'a> {
    /// The variable's codecs.
    codecs: &'a [Codec],
    /// The chain built from them, once needed.
    chain: Option<ByteCodecs>,
    /// The concatenation axis.
    axis: usize,
    /// Jobs not yet run, in order.
    jobs: std::vec::IntoIter<EdgeJob<'a>>,
    /// Results not yet taken, by (file, chunk).
    done: HashMap<(usize, usize), Result<Vec<u8>, EdgeChunkError>>,
    reader: &'a dyn SourceStore,
}

impl<'a> EdgeReencoder<'a> {
    pub(crate) fn new(
        codecs: &'a [Codec],
        axis: usize,
        jobs: Vec<EdgeJob<'a>>,
        reader: &'a dyn SourceStore,
    ) -> Self {
        EdgeReencoder {
            codecs,
            chain: None,
            axis,
            jobs: jobs.into_iter(),
            done: HashMap::new(),
            reader,
        }
    }

    /// Runs every job, in batches, and returns the results to take by (file, chunk).
    pub(crate) fn run_all(mut self) -> Reencoded {
        let mut failed = None;
        loop {
            match self.run_batch() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        Reencoded {
            done: self.done,
            failed,
        }
    }

    fn chain(&mut self) -> Result<&ByteCodecs, EdgeChunkError> {
        if self.chain.is_none() {
            self.chain =
                Some(ByteCodecs::for_encoding(self.codecs).map_err(EdgeChunkError::Encode)?);
        }
        Ok(self.chain.as_ref().expect("set above"))
    }

    /// Runs the next batch of jobs; `false` when none is left.
    fn run_batch(&mut self) -> Result<bool, EdgeChunkError> {
        let mut batch = Vec::new();
        let mut bytes = 0u64;
        while bytes < EDGE_BATCH_BYTES
            && let Some(job) = self.jobs.next()
        {
            bytes = bytes.saturating_add(job.len);
            batch.push(job);
        }
        if batch.is_empty() {
            return Ok(false);
        }
        let (axis, reader) = (self.axis, self.reader);
        let chain = self.chain()?;
        let results = parallel_map(&batch, READ_FILES, |j| {
            valid_prefix(chain, j.array, j.lin, &j.nominal, axis, j.keep, reader)
        });
        for (j, r) in batch.iter().zip(results) {
            self.done.insert((j.file, j.lin), r);
        }
        Ok(true)
    }
}

/// The results of [`EdgeReencoder::run_all`].
pub(crate) struct Reencoded {
    /// By (file, chunk).
    done: HashMap<(usize, usize), Result<Vec<u8>, EdgeChunkError>>,
    /// Why the jobs could not run (the codec chain could not be built).
    failed: Option<EdgeChunkError>,
}

impl Reencoded {
    /// The re-encoded valid part of chunk `lin` of file `file`, or why it is not there;
    /// `None` when it was not one of the jobs.
    pub(crate) fn take(
        &mut self,
        file: usize,
        lin: usize,
    ) -> Option<Result<Vec<u8>, EdgeChunkError>> {
        match self.done.remove(&(file, lin)) {
            Some(r) => Some(r),
            None => self.failed.take().map(Err),
        }
    }
}

/// [`valid_prefix`] of the chunk of a job that was not among an [`EdgeReencoder`]'s jobs.
pub(crate) fn reencode_one(
    codecs: &[Codec],
    job: &EdgeJob<'_>,
    axis: usize,
    reader: &dyn SourceStore,
) -> Result<Vec<u8>, EdgeChunkError> {
    let chain = ByteCodecs::for_encoding(codecs).map_err(EdgeChunkError::Encode)?;
    valid_prefix(
        &chain,
        job.array,
        job.lin,
        &job.nominal,
        axis,
        job.keep,
        reader,
    )
}

/// Decodes chunk `lin` of `src` (nominal shape `nominal`), keeps the first `keep` indices
/// along `axis` and encodes them again.
fn valid_prefix(
    chain: &ByteCodecs,
    src: &VirtualArray,
    lin: usize,
    nominal: &[u64],
    axis: usize,
    keep: u64,
    reader: &dyn SourceStore,
) -> Result<Vec<u8>, EdgeChunkError> {
    if src.data_type.is_string() {
        // Strings: the elements of the valid part, encoded again as a vlen-utf8 chunk.
        let enc = values::encoded_chunk(src, lin, reader).map_err(EdgeChunkError::Decode)?;
        let items =
            values::string_chunk(src, chain, nominal, enc).map_err(EdgeChunkError::Decode)?;
        let cut = values::slice_prefix_items(&items, nominal, axis, keep);
        return vzarr_codec::vlen_utf8::encode(&cut).map_err(EdgeChunkError::Encode);
    }
    let raw = values::raw_chunk(src, chain, lin, reader).map_err(EdgeChunkError::Decode)?;
    let cut = values::slice_prefix(&raw, nominal, axis, keep, src.data_type.size());
    chain.encode(&cut).map_err(EdgeChunkError::Encode)
}
