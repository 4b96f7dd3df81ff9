//! Bytes the planner writes itself, stored inline in the manifest: arrays of re-encoded values
//! (CF time coordinates and bounds), and padded edge chunks decoded, cut to their valid part
//! and re-encoded with the variable's own codecs.

use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkGrid, ChunkManifest, Codec, DataType, Endian, FillValue, VirtualArray};
use vzarr_source::SourceStore;

use crate::error::{EdgeChunkError, PlanError};
use crate::values;

/// Inline chunks of re-encoded coordinates hold at most this many bytes.
const INLINE_CHUNK_BYTES: u64 = 8 << 20;

/// The fill value of `a` as little-endian bytes of `dt` (converted through f64 when the type
/// changes).
fn fill_value_as(a: &VirtualArray, dt: DataType) -> Vec<u8> {
    if dt == a.data_type {
        return a.fill_value.le_bytes().to_vec();
    }
    let v = values::as_f64(a.fill_value.le_bytes(), a.data_type, Endian::Little)
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or(f64::NAN);
    values::from_f64(&[v], dt).unwrap_or_else(|| vec![0; dt.size()])
}

/// Builds an array like `template` whose values are `raw_le` (little-endian elements of `dt`
/// in C order): one or more inline chunks along axis 0, no codecs.
pub(crate) fn inline_array(
    template: &VirtualArray,
    shape: &[u64],
    dt: DataType,
    raw_le: Vec<u8>,
) -> Result<VirtualArray, PlanError> {
    let esize = dt.size() as u64;
    let row: u64 = shape.iter().skip(1).product::<u64>() * esize;
    let mut chunk: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    if let Some(first) = chunk.first_mut() {
        *first = (INLINE_CHUNK_BYTES / row.max(1)).clamp(1, (*first).max(1));
    }
    let grid = ChunkGrid::regular(shape, &chunk)?;
    let n = grid.n_chunks()? as usize;
    let mut manifest = ChunkManifest::new_missing(n);
    let pad = fill_value_as(template, dt);
    for i in 0..n {
        let idx = grid.chunk_index(i as u64);
        let start = grid.chunk_origin(&idx).first().copied().unwrap_or(0);
        let rows = grid.dims().first().map_or(1, |d| d.chunk_valid_len(idx[0]));
        let nominal = grid.chunk_shape(&idx).first().copied().unwrap_or(1);
        let mut bytes = raw_le[(start * row) as usize..((start + rows) * row) as usize].to_vec();
        // The last chunk is padded to the nominal chunk shape, as Zarr expects.
        for _ in rows..nominal {
            for _ in 0..row / esize {
                bytes.extend_from_slice(&pad);
            }
        }
        manifest.set_inline(i, bytes)?;
    }
    let fill_value = FillValue::from_le_bytes(dt, &fill_value_as(template, dt))?;
    let mut attributes = template.attributes.clone();
    if dt != template.data_type
        && let Some(v) = attributes.get_mut("_FillValue")
    {
        *v = vzarr_core::attrs::cf_fill_value(dt, &fill_value);
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

/// Re-encodes the valid part of padded edge chunks of one variable; the codec chain is built
/// on first use and kept for the variable's other chunks.
pub(crate) struct EdgeReencoder<'a> {
    /// The variable's codecs.
    codecs: &'a [Codec],
    /// The chain built from them, once needed.
    chain: Option<ByteCodecs>,
}

impl<'a> EdgeReencoder<'a> {
    pub(crate) fn new(codecs: &'a [Codec]) -> Self {
        EdgeReencoder {
            codecs,
            chain: None,
        }
    }

    /// Decodes chunk `lin` of `src` (nominal shape `nominal`), keeps the first `keep`
    /// indices along `axis` and encodes them again.
    pub(crate) fn valid_prefix(
        &mut self,
        src: &VirtualArray,
        lin: usize,
        nominal: &[u64],
        axis: usize,
        keep: u64,
        reader: &dyn SourceStore,
    ) -> Result<Vec<u8>, EdgeChunkError> {
        if self.chain.is_none() {
            self.chain = Some(ByteCodecs::new(self.codecs).map_err(EdgeChunkError::Encode)?);
        }
        let chain = self.chain.as_ref().expect("set above");
        let raw = values::raw_chunk(src, chain, lin, reader).map_err(EdgeChunkError::Decode)?;
        let cut = values::slice_prefix(&raw, nominal, axis, keep, src.data_type.size());
        chain.encode(&cut).map_err(EdgeChunkError::Encode)
    }
}
