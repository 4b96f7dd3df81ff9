//! Chunks whose filters were partly skipped: a `dmrpp:chunk` with a non-zero `fm` (the HDF5
//! chunk's filter mask, bes's `DMZ::process_chunk`). Their stored bytes cannot be read through
//! the array's codec chain; they are read once, when the dataset is built, and kept inline
//! re-encoded with every filter, as the HDF5 scanner keeps such chunks of a granule it scans
//! (`vzarr_hdf5_map::masked`).

use std::ops::Range;

use vzarr_codec::ByteCodecs;
use vzarr_core::{ChunkRef, SkippedVariable, VirtualDataset};

/// A chunk the document says was stored with some filters skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MaskedChunk {
    /// The array's path.
    pub path: String,
    /// The chunk's position in the array's grid, in C order.
    pub chunk: u64,
    /// The filters skipped: bit `i` set, filter `i` of the pipeline not applied.
    pub filter_mask: u32,
}

/// Makes every chunk of `masked` in `ds` an inline chunk re-encoded with all of its array's
/// filters, its stored bytes read with `read(url, range)`; an array one of whose chunks cannot
/// be read or decoded is left out of `ds`, listed as skipped with the reason.
pub fn apply<E: std::fmt::Display>(
    ds: &mut VirtualDataset,
    masked: &[MaskedChunk],
    read: impl Fn(&str, Range<u64>) -> Result<Vec<u8>, E>,
) {
    let mut failed: Vec<(String, String)> = Vec::new();
    // The scanner lists an array's masked chunks together: its codecs and fill made once.
    for run in masked.chunk_by(|x, y| x.path == y.path) {
        let path = &run[0].path;
        if failed.iter().any(|(p, _)| p == path) {
            continue;
        }
        let Some(a) = ds.arrays.get_mut(path) else {
            continue;
        };
        let codecs = ByteCodecs::for_encoding(&a.codecs).map_err(|e| e.to_string());
        let fill = a.fill_value.bytes_in(a.data_type.clone(), a.endian);
        for m in run {
            let index = a.grid.chunk_index(m.chunk);
            let done = (|| -> Result<(), String> {
                let ChunkRef::Range {
                    source,
                    offset,
                    length,
                } = a.manifest.get(m.chunk as usize)
                else {
                    return Err("not a byte range".into());
                };
                let stored = read(source, offset..offset + length).map_err(|e| e.to_string())?;
                let codecs = codecs.as_ref().map_err(String::clone)?;
                let bytes = vzarr_hdf5_map::masked::reencode(
                    &stored,
                    &a.grid,
                    &index,
                    &fill,
                    codecs,
                    m.filter_mask,
                )
                .map_err(|e| e.to_string())?;
                a.manifest
                    .set_inline(m.chunk as usize, bytes)
                    .map_err(|e| e.to_string())
            })();
            if let Err(e) = done {
                failed.push((
                    path.clone(),
                    format!(
                        "chunk {index:?}, stored with some filters skipped (fm {:#x}): {e}",
                        m.filter_mask
                    ),
                ));
                break;
            }
        }
    }
    for (path, reason) in failed {
        ds.arrays.shift_remove(&path);
        ds.skipped.push(SkippedVariable { path, reason });
    }
}
