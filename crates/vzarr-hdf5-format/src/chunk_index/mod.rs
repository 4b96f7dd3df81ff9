//! Chunk indexes: a streaming visitor over the stored chunks of a chunked dataset (HDF5 File
//! Format Specification 3.0, section IV.A.2.i "Data Layout Message" for the index types;
//! section III.A.1 (v1 B-tree, node type 1) and appendix C, sections VII.A "The Single Chunk
//! Index", VII.B "The Implicit Index", VII.C "The Fixed Array Index", VII.D "The Extensible
//! Array Index" and VII.E "The Version 2 B-trees Index" (record types 10 and 11 of III.A.2)).
//!
//! Every chunk is handed to the caller as a [`ChunkRecord`] borrowing a reused coordinate
//! buffer: nothing is allocated per chunk, and nothing is sized by the dataset's logical
//! chunk count. Unwritten chunks (undefined addresses) are not visited. Every chunk's byte
//! range is checked against the file size.

mod btree_v1;
mod btree_v2;
mod extensible_array;
mod fixed_array;
mod implicit;
mod single;

use std::ops::ControlFlow;

use crate::dataset::Dataset;
use crate::decode::{Cursor, log2_floor};
use crate::error::{Error, Result};
use crate::file::File;
use crate::messages::dataspace::UNLIMITED;
use crate::messages::layout::{ChunkIndex, ChunkedLayout, Layout};

/// One stored chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkRecord<'a> {
    /// Chunk coordinates: the chunk's logical offset divided by the chunk shape, per
    /// dimension.
    pub scaled: &'a [u64],
    /// Absolute file offset of the stored chunk.
    pub address: u64,
    /// Stored size in bytes (for unfiltered chunks, the chunk's full byte size).
    pub size: u64,
    /// Filters skipped for this chunk (bit `i` set: filter `i` of the pipeline not applied).
    pub filter_mask: u32,
}

/// The callback of the internal walkers.
pub(crate) type Sink<'s> = dyn FnMut(&ChunkRecord) -> ControlFlow<()> + 's;

/// What the walkers of the chunk indexes share.
pub(crate) struct Ctx<'a> {
    pub file: &'a File,
    pub dataset: &'a Dataset,
    pub layout: &'a ChunkedLayout,
    pub index_address: u64,
    /// Dataset rank.
    pub rank: usize,
    /// Bytes of a whole chunk before filtering.
    pub chunk_bytes: u64,
    pub filtered: bool,
}

impl Ctx<'_> {
    /// Bytes of the stored size of a filtered chunk in array and v2 B-tree records.
    pub(crate) fn chunk_size_len(&self) -> usize {
        if !self.filtered {
            0
        } else if self.dataset.layout.version > 4 {
            usize::from(self.file.sizes().length)
        } else {
            (1 + (log2_floor(self.chunk_bytes) as usize + 8) / 8).min(8)
        }
    }

    /// Checks a chunk's byte range against the file and hands it to `sink`.
    #[inline]
    pub(crate) fn emit(&self, sink: &mut Sink, rec: &ChunkRecord) -> Result<ControlFlow<()>> {
        match rec.address.checked_add(rec.size) {
            Some(end) if end <= self.file.size() => Ok(sink(rec)),
            _ => Err(Error::OutOfBounds {
                structure: "chunk",
                address: rec.address,
                len: rec.size,
                file_size: self.file.size(),
            }),
        }
    }

    /// Chunks per dimension over the maximum dimensions (`None` for unlimited axes).
    pub(crate) fn max_chunks(&self) -> Vec<Option<u64>> {
        let max = self.dataset.dataspace.max_dims_or_dims();
        max.iter()
            .zip(&self.layout.chunk_dims)
            .map(|(&m, &c)| (m != UNLIMITED).then(|| m.div_ceil(c)))
            .collect()
    }

    /// Chunks per dimension over the current dimensions.
    pub(crate) fn current_chunks(&self) -> Vec<u64> {
        self.dataset
            .dataspace
            .dims
            .iter()
            .zip(&self.layout.chunk_dims)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect()
    }

    pub(crate) fn invalid(
        &self,
        what: &'static str,
        addr: u64,
        detail: impl Into<String>,
    ) -> Error {
        Error::invalid(what, addr, detail)
    }
}

/// Row-major chunk coordinates of linear element indexes, with an optional "swizzled"
/// unlimited dimension that varies slowest (the extensible array's order).
pub(crate) struct Scaler {
    /// Coordinates in iteration order (the swizzled dimension first, if any).
    counter: Vec<u64>,
    /// Extent of each iteration-order dimension (the first may be unbounded).
    extent: Vec<u64>,
    /// Dataset dimension of each iteration-order position.
    order: Vec<usize>,
    /// Output buffer in dataset dimension order.
    pub scaled: Vec<u64>,
}

impl Scaler {
    /// Over `extents` (row-major) with dimension `first` moved to the front (slowest).
    pub(crate) fn new(extents: &[u64], first: Option<usize>) -> Scaler {
        let rank = extents.len();
        let mut order: Vec<usize> = (0..rank).collect();
        if let Some(f) = first.filter(|&f| f < rank) {
            order.remove(f);
            order.insert(0, f);
        }
        let extent = order.iter().map(|&d| extents[d]).collect();
        Scaler {
            counter: vec![0; rank],
            extent,
            order,
            scaled: vec![0; rank],
        }
    }

    /// Positions at linear index `idx`.
    pub(crate) fn set(&mut self, mut idx: u64) {
        for i in (0..self.counter.len()).rev() {
            let e = self.extent[i].max(1);
            if i == 0 {
                self.counter[0] = idx;
            } else {
                self.counter[i] = idx % e;
                idx /= e;
            }
        }
        self.publish();
    }

    /// Advances to the next linear index.
    #[inline]
    pub(crate) fn next(&mut self) {
        for i in (0..self.counter.len()).rev() {
            self.counter[i] = self.counter[i].wrapping_add(1);
            if i == 0 || self.counter[i] < self.extent[i] {
                break;
            }
            self.counter[i] = 0;
        }
        self.publish();
    }

    #[inline]
    fn publish(&mut self) {
        for (k, &d) in self.order.iter().enumerate() {
            self.scaled[d] = self.counter[k];
        }
    }
}

/// Checks the prefix of a fixed or extensible array block (HDF5 File Format Specification
/// 3.0, appendix C, sections VII.C and VII.D): the signature `sig`, version 0, the array
/// class of the header and the address `hdr_addr` of the header it belongs to.
pub(super) fn check_block(
    c: &mut Cursor,
    sig: &'static str,
    class: u8,
    hdr_addr: u64,
) -> Result<()> {
    c.prefix(sig, 0)?;
    if c.u8()? != class {
        return Err(c.invalid("array class differs from the header's"));
    }
    if c.addr()? != Some(hdr_addr) {
        return Err(c.invalid("block belongs to another array"));
    }
    Ok(())
}

/// Reads `n` bits (MSB first within each byte) — the page-initialized bitmaps.
pub(crate) fn bit(bitmap: &[u8], i: u64) -> bool {
    usize::try_from(i / 8)
        .ok()
        .and_then(|b| bitmap.get(b))
        .is_some_and(|&byte| byte & (0x80 >> (i % 8)) != 0)
}

impl File {
    /// Calls `f` for every stored chunk of the chunked dataset `ds` (nothing for other
    /// layouts or when no chunk was ever written). The visit stops at the first error of `f`,
    /// which is returned as is; errors of the file structure are converted with `E::from`.
    pub fn visit_chunks<E: From<Error>>(
        &self,
        ds: &Dataset,
        mut f: impl FnMut(&ChunkRecord) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut user: Option<E> = None;
        let r = self.visit_chunks_inner(ds, &mut |rec: &ChunkRecord| match f(rec) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                user = Some(e);
                ControlFlow::Break(())
            }
        });
        if let Some(e) = user {
            return Err(e);
        }
        r.map_err(|e| E::from(e.context("chunk index of the dataset", ds.address)))
    }

    fn visit_chunks_inner(&self, ds: &Dataset, sink: &mut Sink) -> Result<()> {
        let Layout::Chunked(layout) = &ds.layout.layout else {
            return Ok(());
        };
        let Some(index_address) = layout.index_address else {
            return Ok(());
        };
        let chunk_bytes = layout.chunk_bytes().ok_or_else(|| {
            Error::invalid("data layout message", ds.address, "chunk size overflows")
        })?;
        let ctx = Ctx {
            file: self,
            dataset: ds,
            layout,
            index_address,
            rank: layout.chunk_dims.len(),
            chunk_bytes,
            filtered: ds.is_filtered(),
        };
        match &layout.index {
            ChunkIndex::BTreeV1 => btree_v1::visit(&ctx, sink),
            ChunkIndex::SingleChunk { filtered } => single::visit(&ctx, *filtered, sink),
            ChunkIndex::Implicit => implicit::visit(&ctx, sink),
            ChunkIndex::FixedArray { .. } => fixed_array::visit(&ctx, sink),
            ChunkIndex::ExtensibleArray { .. } => extensible_array::visit(&ctx, sink),
            ChunkIndex::BTreeV2 { .. } => btree_v2::visit(&ctx, sink),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaler_row_major_and_swizzled() {
        let mut s = Scaler::new(&[2, 3], None);
        let mut seen = vec![s.scaled.clone()];
        for _ in 0..5 {
            s.next();
            seen.push(s.scaled.clone());
        }
        assert_eq!(
            seen,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        s.set(4);
        assert_eq!(s.scaled, vec![1, 1]);
        // Dimension 1 unlimited and slowest: order (d1, d0) with d0 of extent 2.
        let mut s = Scaler::new(&[2, u64::MAX], Some(1));
        s.set(3);
        assert_eq!(s.scaled, vec![1, 1]);
        s.next();
        assert_eq!(s.scaled, vec![0, 2]);
    }

    #[test]
    fn bits_msb_first() {
        assert!(bit(&[0x80], 0));
        assert!(!bit(&[0x80], 1));
        assert!(bit(&[0x00, 0x01], 15));
        assert!(!bit(&[0x01], 100));
    }
}
