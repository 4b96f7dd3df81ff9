//! Storage to chunk references: a contiguous dataset as one chunk or as virtual chunks of
//! whole rows (`ChunkGrid::split_rows`), a compact dataset as one inline chunk (HDF5 File
//! Format Specification 3.0, IV.A.2.i, "The Data Layout Message", layout classes 0 and 1).
//! Chunked datasets are each reader's own: the chunk index is where the readers differ.

use vzarr_core::{
    Attributes, ChunkGrid, ChunkManifest, Codec, CoreError, DataType, DimGrid, Endian, FillValue,
    VirtualArray,
};

/// A dataset's chunk grid and the manifest of its chunks.
#[derive(Debug)]
pub struct Chunks {
    /// The grid.
    pub grid: ChunkGrid,
    /// One entry per chunk of the grid.
    pub manifest: ChunkManifest,
}

/// Why a dataset's chunks could not be described.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChunksError {
    /// The grid or manifest the storage asks for is not a valid model.
    #[error(transparent)]
    Model(#[from] CoreError),
    /// The stored data cannot be what the dataset says (the reason).
    #[error("{0}")]
    Storage(String),
}

/// An empty manifest for `grid` and the source id of `url` in it.
pub fn new_manifest(grid: &ChunkGrid, url: &str) -> Result<(ChunkManifest, u32), ChunksError> {
    let n = grid.n_chunks()?;
    let n = usize::try_from(n).map_err(|_| ChunksError::Storage("too many chunks".into()))?;
    let mut m = ChunkManifest::new_missing(n);
    let sid = m.intern(url)?;
    Ok((m, sid))
}

/// The reason for a byte range past the end of the file.
pub fn past_end(what: &str, addr: u64, len: u64, file_size: u64) -> String {
    format!(
        "{what} at byte {addr} with {len} bytes ends past the end of the file ({file_size} \
         bytes): the file is truncated or corrupt"
    )
}

/// The chunks of a contiguous dataset of `shape` and `esize`-byte elements whose data starts
/// at `address` in the file at `url` of `file_size` bytes (`None`: never written, every chunk
/// reads as the fill value): one chunk, or virtual chunks of whole rows along axis 0 of at
/// most `split_bytes` each (only written data is split: a never-written dataset has no bytes
/// to point at).
pub fn contiguous(
    url: &str,
    file_size: u64,
    address: Option<u64>,
    split_bytes: Option<u64>,
    shape: &[u64],
    esize: usize,
) -> Result<Chunks, ChunksError> {
    let nbytes = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(esize as u64))
        .ok_or_else(|| ChunksError::Storage("dataset size overflows".into()))?;
    let row_bytes = shape
        .iter()
        .skip(1)
        .try_fold(esize as u64, |a, &d| a.checked_mul(d))
        .unwrap_or(0);
    let split = match (split_bytes, address) {
        (Some(target), Some(_)) => ChunkGrid::split_rows(shape, row_bytes, target)?,
        _ => None,
    };
    let grid = match split {
        Some(g) => g,
        None => ChunkGrid::whole(shape)?,
    };
    let (mut manifest, sid) = new_manifest(&grid, url)?;
    let Some(addr) = address.filter(|_| nbytes != 0) else {
        return Ok(Chunks { grid, manifest });
    };
    if addr.checked_add(nbytes).is_none_or(|end| end > file_size) {
        return Err(ChunksError::Storage(past_end(
            "contiguous data",
            addr,
            nbytes,
            file_size,
        )));
    }
    match grid.dims().first() {
        None => manifest.set_range(0, sid, addr, nbytes)?,
        Some(axis0) => {
            for i in 0..axis0.n_chunks() {
                let start = axis0.chunk_start(i);
                let rows = axis0.chunk_valid_len(i);
                manifest.set_range(i as usize, sid, addr + start * row_bytes, rows * row_bytes)?;
            }
        }
    }
    Ok(Chunks { grid, manifest })
}

/// Largest compact dataset: its data lives in the object header, at most 64 KiB.
const MAX_COMPACT_BYTES: usize = 1 << 16;

/// The one chunk of a compact dataset of `shape` and `esize`-byte elements, copied inline:
/// `read(n)` gives its `n` stored bytes, or why it cannot.
pub fn compact(
    url: &str,
    shape: &[u64],
    esize: usize,
    read: impl FnOnce(usize) -> Result<Vec<u8>, String>,
) -> Result<Chunks, ChunksError> {
    let grid = ChunkGrid::whole(shape)?;
    let (mut manifest, _) = new_manifest(&grid, url)?;
    let nelem = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if nelem == Some(0) {
        return Ok(Chunks { grid, manifest });
    }
    let nbytes = nelem
        .and_then(|n| n.checked_mul(esize as u64))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= MAX_COMPACT_BYTES)
        .ok_or_else(|| ChunksError::Storage("compact dataset larger than 64 KiB".into()))?;
    let data = read(nbytes).map_err(ChunksError::Storage)?;
    manifest.set_inline(0, data)?;
    Ok(Chunks { grid, manifest })
}

impl Chunks {
    /// The chunks of a chunked dataset whose chunk is longer than the dataset along the first
    /// axis cut to the dataset's length there, where the stored chunks can be cut: HDF5 sizes
    /// the chunks of an extendible dataset for what it may grow to (a coordinate of 5 values
    /// on an unlimited dimension has chunks of 512 by netCDF-C's and h5py's defaults), and a
    /// chunk longer than the array keeps files from being concatenated (VirtualiZarr's
    /// `open_virtual_mfdataset` refuses partial chunks; a combined grid would have a padded
    /// chunk in its middle).
    ///
    /// As VirtualiZarr 2.8 does (`_chunk_shape` of its HDF5 parser): only when the chunks are
    /// unfiltered (`unfiltered`; a prefix of the stored bytes is then the valid rows, the padded
    /// edge rule of the design notes) and no other axis is cut (each other axis's chunk is at
    /// most its length, or 1). Every stored chunk is then a reference to the first
    /// `length x (the other axes' chunk) x esize` bytes of its range. Anything else (filters,
    /// an empty first axis, a chunk stored inline or shorter than the cut) is left as it is.
    pub fn cut_to_extent(mut self, unfiltered: bool, esize: usize) -> Self {
        let Some(cut) = self.cut_bytes(unfiltered, esize) else {
            return self;
        };
        let stored: Vec<(usize, Option<u32>, u64)> = self
            .manifest
            .iter_stored_with_ids()
            .map(|(i, id, r)| match r {
                vzarr_core::ChunkRef::Range { offset, .. } => (i, id, offset),
                _ => (i, None, 0),
            })
            .collect();
        let mut dims = self.grid.dims().to_vec();
        let extent = dims[0].extent();
        let Ok(axis0) = DimGrid::fixed(extent, extent) else {
            return self;
        };
        let mut manifest = self.manifest.clone();
        for (i, id, offset) in stored {
            let Some(id) = id else { return self };
            if manifest.set_range(i, id, offset, cut).is_err() {
                return self;
            }
        }
        dims[0] = axis0;
        self.grid = ChunkGrid::new(dims);
        self.manifest = manifest;
        self
    }

    /// The bytes of a chunk cut to the first axis's length, when [`Chunks::cut_to_extent`]
    /// applies.
    fn cut_bytes(&self, unfiltered: bool, esize: usize) -> Option<u64> {
        let (first, rest) = self.grid.dims().split_first()?;
        let DimGrid::Fixed { size, extent } = *first else {
            return None;
        };
        if !unfiltered || extent == 0 || size <= extent {
            return None;
        }
        let mut row = esize as u64;
        for d in rest {
            let DimGrid::Fixed { size, extent } = *d else {
                return None;
            };
            if size > extent.max(1) {
                return None;
            }
            row = row.checked_mul(size)?;
        }
        let full = row.checked_mul(size)?;
        let cut = row.checked_mul(extent)?;
        // Every stored chunk a reference holding at least the valid rows.
        let whole = self.manifest.iter_stored().all(|(_, r)| {
            matches!(r, vzarr_core::ChunkRef::Range { length, .. } if length >= cut && length <= full)
        });
        whole.then_some(cut)
    }

    /// The array of these chunks with the rest of what a scanner found of the dataset: its
    /// data type and byte order (`ty`), fill value, codecs after `bytes`, attributes and
    /// dimension names.
    pub fn into_array(
        self,
        ty: (DataType, Endian),
        fill_value: FillValue,
        codecs: Vec<Codec>,
        mut attributes: Attributes,
        dimension_names: Vec<String>,
        chunking: Option<&[u64]>,
    ) -> VirtualArray {
        let (data_type, endian) = ty;
        storage_view(&mut attributes, &codecs, chunking);
        VirtualArray {
            data_type,
            endian,
            fill_value,
            codecs,
            dimension_names,
            attributes,
            grid: self.grid,
            manifest: self.manifest,
        }
    }
}

/// Records in the netCDF view ([`vzarr_core::netcdf`]) how the source stores a dataset, as
/// netCDF4-python's `Variable.filters()` and `chunking()` describe it (and xarray's netCDF4
/// backend hands out as `encoding`): its filters from `codecs`, and `chunking`, the chunk
/// shape of a chunked dataset (`None`: contiguous or compact).
pub fn storage_view(attributes: &mut Attributes, codecs: &[Codec], chunking: Option<&[u64]>) {
    use serde_json::json;
    let mut filters = json!({
        "zlib": false, "szip": false, "zstd": false, "bzip2": false, "blosc": false,
        "shuffle": false, "complevel": 0, "fletcher32": false,
    });
    for c in codecs {
        match c {
            Codec::Zlib { level } => {
                filters["zlib"] = json!(true);
                filters["complevel"] = json!(level);
            }
            Codec::Shuffle { .. } => filters["shuffle"] = json!(true),
            Codec::Fletcher32 => filters["fletcher32"] = json!(true),
            Codec::Zstd { level } => {
                filters["zstd"] = json!(true);
                filters["complevel"] = json!(level);
            }
            Codec::Bz2 { level } => {
                filters["bzip2"] = json!(true);
                filters["complevel"] = json!(level);
            }
            Codec::Blosc { cname, shuffle, .. } => {
                let compressor = match cname.as_str() {
                    "blosclz" => "blosc_lz".to_string(),
                    other => format!("blosc_{other}"),
                };
                let shuffle = match shuffle {
                    vzarr_core::BloscShuffle::NoShuffle => 0,
                    vzarr_core::BloscShuffle::Shuffle => 1,
                    vzarr_core::BloscShuffle::BitShuffle => 2,
                };
                filters["blosc"] = json!({"compressor": compressor, "shuffle": shuffle});
            }
            Codec::Szip {
                options_mask,
                pixels_per_block,
                ..
            } => {
                // netCDF-C's names of the two codings (H5_SZIP_NN_OPTION_MASK 32, EC 4).
                let coding = if options_mask & 32 != 0 { "nn" } else { "ec" };
                filters["szip"] = json!({"coding": coding, "pixels_per_block": pixels_per_block});
            }
            _ => {}
        }
    }
    vzarr_core::netcdf::set_field(attributes, "filters", filters);
    let chunking = match chunking {
        Some(shape) => json!(shape),
        None => json!("contiguous"),
    };
    vzarr_core::netcdf::set_field(attributes, "chunking", chunking);
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::DimGrid;

    const URL: &str = "file:///x.h5";

    fn at(
        address: Option<u64>,
        split_bytes: Option<u64>,
        shape: &[u64],
    ) -> Result<Chunks, ChunksError> {
        contiguous(URL, 1000, address, split_bytes, shape, 2)
    }

    #[test]
    fn contiguous_one_chunk_or_rows() {
        let one = at(Some(100), None, &[10, 4]).unwrap();
        assert_eq!(one.grid, ChunkGrid::regular(&[10, 4], &[10, 4]).unwrap());
        assert_eq!(one.manifest.len(), 1);
        let rows = at(Some(100), Some(24), &[10, 4]).unwrap();
        assert_eq!(
            rows.grid.dims()[0],
            DimGrid::from_edges(vec![3, 3, 3, 1], 10).unwrap()
        );
        assert_eq!(rows.manifest.len(), 4);
        // Never written: not split, nothing referenced.
        let unwritten = at(None, Some(24), &[10, 4]).unwrap();
        assert_eq!(unwritten.manifest.len(), 1);
        assert!(
            at(Some(990), None, &[10, 4])
                .unwrap_err()
                .to_string()
                .contains("past the end of the file (1000 bytes)")
        );
        assert!(at(Some(0), None, &[u64::MAX, 4]).is_err());
    }

    /// A chunked dataset of `shape` with chunks `chunk` of 4-byte elements, every chunk
    /// stored whole at 1000 bytes apart (`inline`: chunk 0 inline instead).
    fn chunked(shape: &[u64], chunk: &[u64], inline: bool) -> Chunks {
        let grid = ChunkGrid::regular(shape, chunk).unwrap();
        let (mut manifest, sid) = new_manifest(&grid, URL).unwrap();
        let bytes = chunk.iter().product::<u64>() * 4;
        for i in 0..manifest.len() {
            manifest.set_range(i, sid, 1000 * i as u64, bytes).unwrap();
        }
        if inline {
            manifest.set_inline(0, vec![0; bytes as usize]).unwrap();
        }
        Chunks { grid, manifest }
    }

    fn lengths(c: &Chunks) -> Vec<(u64, u64)> {
        c.manifest
            .iter_stored()
            .map(|(_, r)| match r {
                vzarr_core::ChunkRef::Range { offset, length, .. } => (offset, length),
                _ => (u64::MAX, 0),
            })
            .collect()
    }

    #[test]
    fn chunks_longer_than_the_first_axis_cut_where_unfiltered() {
        // 5 values on an unlimited dimension, chunks of 512: one chunk of 5, its first 20 bytes.
        let c = chunked(&[5], &[512], false).cut_to_extent(true, 4);
        assert_eq!(c.grid, ChunkGrid::regular(&[5], &[5]).unwrap());
        assert_eq!(lengths(&c), vec![(0, 20)]);
        // 2-D, the other axis in several chunks: each chunk's valid rows are a prefix.
        let c = chunked(&[3, 10], &[8, 4], false).cut_to_extent(true, 4);
        assert_eq!(c.grid, ChunkGrid::regular(&[3, 10], &[3, 4]).unwrap());
        assert_eq!(lengths(&c), vec![(0, 48), (1000, 48), (2000, 48)]);
        // Left as they are: filters, a chunk that fits, an empty axis, another axis cut, an
        // inline chunk.
        let keep = |c: Chunks, unfiltered: bool| {
            let before = (c.grid.clone(), lengths(&c));
            let after = c.cut_to_extent(unfiltered, 4);
            assert_eq!((after.grid.clone(), lengths(&after)), before);
        };
        keep(chunked(&[5], &[512], false), false);
        keep(chunked(&[1024], &[512], false), true);
        keep(chunked(&[0], &[512], false), true);
        keep(chunked(&[3, 2], &[8, 4], false), true);
        keep(chunked(&[5], &[512], true), true);
        // Nothing stored: the grid is cut all the same.
        let empty = Chunks {
            grid: ChunkGrid::regular(&[5], &[512]).unwrap(),
            manifest: ChunkManifest::new_missing(1),
        };
        assert_eq!(
            empty.cut_to_extent(true, 4).grid,
            ChunkGrid::regular(&[5], &[5]).unwrap()
        );
    }

    #[test]
    fn compact_inline_up_to_64_kib() {
        let c = compact(URL, &[2, 2], 1, |n| Ok(vec![7; n])).unwrap();
        assert_eq!(c.manifest.len(), 1);
        let empty = compact(URL, &[0], 4, |_| Err("not read".into())).unwrap();
        assert_eq!(empty.manifest.len(), 0);
        assert_eq!(
            compact(URL, &[1 << 15], 4, |n| Ok(vec![0; n]))
                .unwrap_err()
                .to_string(),
            "compact dataset larger than 64 KiB"
        );
        assert_eq!(
            compact(URL, &[2], 4, |_| Err("unreadable".into()))
                .unwrap_err()
                .to_string(),
            "unreadable"
        );
    }
}
