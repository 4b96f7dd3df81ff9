//! Chunks stored with some of their dataset's filters skipped: an HDF5 chunk's filter mask
//! (HDF5 File Format Specification 3.0, III.A.1.b / VII.B: bit `i` set means filter `i` of the
//! pipeline was not applied to that chunk, as `H5Pset_filter` with `H5Z_FLAG_OPTIONAL` allows)
//! or DMR++'s `fm` attribute, which copies it. Such a chunk cannot share the array's codec
//! chain: it is decoded undoing only the filters it went through, its part outside the array
//! set to the fill value (what libhdf5 gives for it), and encoded again with the whole chain,
//! to be kept inline. Both readers that meet such chunks (the native HDF5 scanner and the
//! DMR++ scanner's caller) go through [`reencode`].

use vzarr_codec::{ByteCodecs, CodecError};
use vzarr_core::ChunkGrid;

/// Largest chunk (decoded bytes) re-encoded.
pub const MAX_CHUNK_BYTES: usize = 1 << 31;

/// Why a chunk with a filter mask could not be re-encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MaskedError {
    /// The chunk's decoded size is over [`MAX_CHUNK_BYTES`] (or overflows).
    #[error("chunk too large to re-encode")]
    TooLarge,
    /// Its stored bytes did not decode through the filters its mask leaves, or the whole
    /// chain could not encode them.
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// The chunk at `index` of `grid` stored as `stored` with the filters of `mask` skipped,
/// encoded with every filter of `codecs` (`ByteCodecs::for_encoding` of the array's codecs);
/// `fill` is one fill element in the stored byte order (its length is the element size).
pub fn reencode(
    stored: &[u8],
    grid: &ChunkGrid,
    index: &[u64],
    fill: &[u8],
    codecs: &ByteCodecs,
    mask: u32,
) -> Result<Vec<u8>, MaskedError> {
    let cshape = grid.chunk_shape(index);
    let valid = grid.chunk_valid_shape(index);
    let esize = fill.len().max(1);
    let nelem = cshape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
        .filter(|&n| n.saturating_mul(esize) <= MAX_CHUNK_BYTES)
        .ok_or(MaskedError::TooLarge)?;
    let decoded = codecs.decode_skipping(stored, nelem * esize, mask)?;
    // Allocated once the chunk has decoded to its full size, not on the word of its shape.
    let mut buf = if fill.is_empty() {
        vec![0u8; nelem]
    } else {
        fill.repeat(nelem)
    };
    copy_valid(&decoded, &mut buf, &cshape, &valid, esize);
    Ok(codecs.encode(&buf)?)
}

/// Copies the leading corner `valid` of the C-order array `src` of shape `shape` (elements
/// of `esize` bytes) into the same positions of `dst`.
fn copy_valid(src: &[u8], dst: &mut [u8], shape: &[u64], valid: &[u64], esize: usize) {
    let Some((&row_valid, outer)) = valid.split_last() else {
        dst.copy_from_slice(src);
        return;
    };
    if valid.contains(&0) {
        return;
    }
    let row_len = shape[shape.len() - 1] as usize * esize;
    let copy = row_valid as usize * esize;
    // Index over the outer axes' valid extents, C order.
    let mut idx = vec![0u64; outer.len()];
    loop {
        let row = idx
            .iter()
            .zip(shape)
            .fold(0usize, |a, (&i, &n)| a * n as usize + i as usize);
        let at = row * row_len;
        dst[at..at + copy].copy_from_slice(&src[at..at + copy]);
        let mut axis = outer.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < outer[axis] {
                break;
            }
            idx[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_valid;

    #[test]
    fn copies_the_valid_corner_only() {
        // A 3x4 chunk of 1-byte elements, valid 2x3.
        let src: Vec<u8> = (1..=12).collect();
        let mut dst = vec![0u8; 12];
        copy_valid(&src, &mut dst, &[3, 4], &[2, 3], 1);
        assert_eq!(dst, vec![1, 2, 3, 0, 5, 6, 7, 0, 0, 0, 0, 0]);
        // 1-D, 2-byte elements.
        let src: Vec<u8> = (1..=8).collect();
        let mut dst = vec![9u8; 8];
        copy_valid(&src, &mut dst, &[4], &[3], 2);
        assert_eq!(dst, vec![1, 2, 3, 4, 5, 6, 9, 9]);
        // 3-D, nothing valid on one axis.
        let mut dst = vec![7u8; 8];
        copy_valid(&[0; 8], &mut dst, &[2, 2, 2], &[2, 0, 2], 1);
        assert_eq!(dst, vec![7; 8]);
        let src: Vec<u8> = (0..8).collect();
        let mut dst = vec![0u8; 8];
        copy_valid(&src, &mut dst, &[2, 2, 2], &[2, 1, 2], 1);
        assert_eq!(dst, vec![0, 1, 0, 0, 4, 5, 0, 0]);
    }
}
