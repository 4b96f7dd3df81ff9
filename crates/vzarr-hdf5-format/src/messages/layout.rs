//! Data layout message, versions 1 to 5 (HDF5 File Format Specification 3.0, section
//! IV.A.2.i "Data Layout Message"). Version 5 is not in the specification: HDF5 2.x writes it
//! for filtered chunked datasets under the latest format bounds; it has the fields of version
//! 4, and the chunk indexes then store the sizes of filtered chunks in "size of lengths"
//! bytes instead of the smallest width that holds the unfiltered chunk size plus one byte.
//!
//! Chunked layouts store the element size as an extra, last chunk dimension; it is split off
//! here into [`ChunkedLayout::element_size`].

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::Result;

/// Most dimensions of a layout (`H5O_LAYOUT_NDIMS`: rank 32 plus the element size).
const MAX_NDIMS: usize = 33;

/// How a chunked dataset indexes its chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkIndex {
    /// Version 1 B-tree (node type 1); the only index of layout versions 1 to 3.
    BTreeV1,
    /// One chunk holds the whole dataset; when filtered, its stored size and filter mask are
    /// in the layout message.
    SingleChunk {
        /// Stored size and filter mask of a filtered single chunk.
        filtered: Option<(u64, u32)>,
    },
    /// No index: chunks are allocated contiguously, in order, from the index address.
    Implicit,
    /// Fixed array (`FAHD`/`FADB`).
    FixedArray {
        /// Log2 of the most elements in a data block page.
        page_bits: u8,
    },
    /// Extensible array (`EAHD`/`EAIB`/`EASB`/`EADB`).
    ExtensibleArray {
        /// Log2 of the most elements the array can hold.
        max_bits: u8,
        /// Elements stored in the index block.
        index_elements: u8,
        /// Minimum data block pointers of a super block.
        min_pointers: u8,
        /// Minimum elements of a data block.
        min_elements: u8,
        /// Log2 of the most elements in a data block page.
        page_bits: u8,
    },
    /// Version 2 B-tree (`BTHD`, records of type 10 or 11).
    BTreeV2 {
        /// Node size in bytes.
        node_size: u32,
        /// Split percentage.
        split_percent: u8,
        /// Merge percentage.
        merge_percent: u8,
    },
}

impl ChunkIndex {
    /// Name of the index type, as the library's `H5D_chunk_index_t` documentation says it.
    pub fn name(&self) -> &'static str {
        match self {
            ChunkIndex::BTreeV1 => "v1 B-tree",
            ChunkIndex::SingleChunk { .. } => "single chunk",
            ChunkIndex::Implicit => "implicit",
            ChunkIndex::FixedArray { .. } => "fixed array",
            ChunkIndex::ExtensibleArray { .. } => "extensible array",
            ChunkIndex::BTreeV2 { .. } => "v2 B-tree",
        }
    }
}

/// A chunked layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkedLayout {
    /// Chunk shape of the dataset (one entry per dataset dimension).
    pub chunk_dims: Vec<u64>,
    /// Element size in bytes (the extra last dimension the format stores).
    pub element_size: u64,
    /// Version 4+ flags (0 before version 4).
    pub flags: u8,
    /// The chunk index.
    pub index: ChunkIndex,
    /// Absolute file offset of the index (or of the single chunk, or of the first implicit
    /// chunk); `None` when no chunk was ever written.
    pub index_address: Option<u64>,
}

impl ChunkedLayout {
    /// Flag bit 0: edge chunks that are only partly inside the dataset are stored unfiltered.
    pub fn dont_filter_partial_edge_chunks(&self) -> bool {
        self.flags & 0x01 != 0
    }

    /// Bytes of one chunk before filtering (all chunk dimensions times the element size);
    /// `None` on overflow.
    pub fn chunk_bytes(&self) -> Option<u64> {
        self.chunk_dims
            .iter()
            .try_fold(self.element_size, |a, &d| a.checked_mul(d))
    }
}

/// Where and how a dataset's raw data is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The data is inside the object header.
    Compact {
        /// The raw data bytes.
        data: Bytes,
    },
    /// One contiguous block.
    Contiguous {
        /// Absolute file offset; `None` when never written.
        address: Option<u64>,
        /// Size in bytes as stored (versions 3+); `None` for versions 1 and 2, where it is the
        /// dataspace's element count times the element size.
        size: Option<u64>,
    },
    /// Chunks with an index.
    Chunked(ChunkedLayout),
    /// A virtual dataset (data mapped from other datasets); not readable as raw bytes.
    Virtual {
        /// Absolute file offset of the global heap collection with the mapping.
        heap_address: Option<u64>,
        /// Object index in that collection.
        heap_index: u32,
    },
}

/// The decoded data layout message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutMessage {
    /// Message version (1 to 5).
    pub version: u8,
    /// The layout.
    pub layout: Layout,
}

impl LayoutMessage {
    /// Name of the layout class ("compact", "contiguous", "chunked", "virtual").
    pub fn class_name(&self) -> &'static str {
        match self.layout {
            Layout::Compact { .. } => "compact",
            Layout::Contiguous { .. } => "contiguous",
            Layout::Chunked(_) => "chunked",
            Layout::Virtual { .. } => "virtual",
        }
    }
}

fn chunked(
    c: &Cursor,
    dims: Vec<u64>,
    flags: u8,
    index: ChunkIndex,
    addr: Option<u64>,
) -> Result<Layout> {
    if dims.len() < 2 {
        return Err(c.invalid("chunked layout with fewer than 2 dimensions"));
    }
    if dims.contains(&0) {
        return Err(c.invalid("chunk dimension of 0"));
    }
    let mut chunk_dims = dims;
    let element_size = chunk_dims.pop().unwrap_or(1);
    Ok(Layout::Chunked(ChunkedLayout {
        chunk_dims,
        element_size,
        flags,
        index,
        index_address: addr,
    }))
}

pub(crate) fn decode(c: &mut Cursor, data: &Bytes) -> Result<LayoutMessage> {
    let version = c.u8()?;
    let layout = match version {
        1 | 2 => {
            let ndims = usize::from(c.u8()?);
            if ndims == 0 || ndims > MAX_NDIMS {
                return Err(c.invalid(format!("layout with {ndims} dimensions")));
            }
            let class = c.u8()?;
            c.skip(5)?;
            let addr = match class {
                1 | 2 => c.addr()?,
                0 => None,
                k => return Err(c.invalid(format!("layout class {k}"))),
            };
            let mut dims = Vec::with_capacity(ndims);
            for _ in 0..ndims {
                dims.push(u64::from(c.u32()?));
            }
            match class {
                0 => {
                    let size = c.u32()? as usize;
                    let start = c.pos();
                    c.skip(size)?;
                    Layout::Compact {
                        data: data.slice(start..start + size),
                    }
                }
                1 => Layout::Contiguous {
                    address: addr,
                    size: None,
                },
                _ => chunked(c, dims, 0, ChunkIndex::BTreeV1, addr)?,
            }
        }
        3..=5 => {
            let class = c.u8()?;
            match class {
                0 => {
                    let size = usize::from(c.u16()?);
                    let start = c.pos();
                    c.skip(size)?;
                    Layout::Compact {
                        data: data.slice(start..start + size),
                    }
                }
                1 => Layout::Contiguous {
                    address: c.addr()?,
                    size: Some(c.length()?),
                },
                2 if version == 3 => {
                    let ndims = usize::from(c.u8()?);
                    if ndims > MAX_NDIMS {
                        return Err(c.invalid(format!("layout with {ndims} dimensions")));
                    }
                    let addr = c.addr()?;
                    let mut dims = Vec::with_capacity(ndims);
                    for _ in 0..ndims {
                        dims.push(u64::from(c.u32()?));
                    }
                    chunked(c, dims, 0, ChunkIndex::BTreeV1, addr)?
                }
                2 => {
                    let flags = c.u8()?;
                    if flags & !0x03 != 0 {
                        return Err(c.invalid(format!("unknown chunked layout flags {flags:#04x}")));
                    }
                    let ndims = usize::from(c.u8()?);
                    if ndims > MAX_NDIMS {
                        return Err(c.invalid(format!("layout with {ndims} dimensions")));
                    }
                    let enc = usize::from(c.u8()?);
                    if enc == 0 || enc > 8 {
                        return Err(c.invalid(format!("{enc}-byte chunk dimensions")));
                    }
                    let mut dims = Vec::with_capacity(ndims);
                    for _ in 0..ndims {
                        dims.push(c.uint(enc)?);
                    }
                    let index = match c.u8()? {
                        1 => ChunkIndex::SingleChunk {
                            filtered: if flags & 0x02 != 0 {
                                Some((c.length()?, c.u32()?))
                            } else {
                                None
                            },
                        },
                        2 => ChunkIndex::Implicit,
                        3 => {
                            let page_bits = c.u8()?;
                            if page_bits == 0 {
                                return Err(c.invalid("fixed array page bits of 0"));
                            }
                            ChunkIndex::FixedArray { page_bits }
                        }
                        4 => {
                            let p = [c.u8()?, c.u8()?, c.u8()?, c.u8()?, c.u8()?];
                            if p.contains(&0) {
                                return Err(c.invalid("extensible array parameter of 0"));
                            }
                            ChunkIndex::ExtensibleArray {
                                max_bits: p[0],
                                index_elements: p[1],
                                min_pointers: p[2],
                                min_elements: p[3],
                                page_bits: p[4],
                            }
                        }
                        5 => {
                            let node_size = c.u32()?;
                            let split_percent = c.u8()?;
                            let merge_percent = c.u8()?;
                            if !(1..=100).contains(&split_percent)
                                || !(1..=100).contains(&merge_percent)
                            {
                                return Err(
                                    c.invalid("v2 B-tree split or merge percent out of range")
                                );
                            }
                            ChunkIndex::BTreeV2 {
                                node_size,
                                split_percent,
                                merge_percent,
                            }
                        }
                        0 => {
                            return Err(c.invalid("v1 B-tree index in a version 4+ layout message"));
                        }
                        t => return Err(c.invalid(format!("chunk index type {t}"))),
                    };
                    let addr = c.addr()?;
                    chunked(c, dims, flags, index, addr)?
                }
                3 if version >= 4 => Layout::Virtual {
                    heap_address: c.addr()?,
                    heap_index: c.u32()?,
                },
                k => return Err(c.invalid(format!("layout class {k}"))),
            }
        }
        v => return Err(c.invalid(format!("layout message version {v}"))),
    };
    Ok(LayoutMessage { version, layout })
}
