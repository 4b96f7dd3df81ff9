//! `vzarr.blosc2`: the HDF5-Blosc2 filter (HDF5 filter 32026, PyTables' `hdf5-blosc2`, shipped
//! by hdf5plugin), which stores each HDF5 chunk as a Blosc2 contiguous frame
//! (c-blosc2's `README_CFRAME_FORMAT.rst`): a msgpack header (sizes, the chunk size, the
//! metalayers), the frame's Blosc2 chunks, an index chunk of their 64-bit offsets (a negative
//! offset marks a chunk of zeros or NaNs that is not stored), and a trailer.
//!
//! A chunk of rank 2 to 8 is stored as a B2ND array (`README_B2ND_METALAYER.rst`): the frame's
//! `b2nd` metalayer gives the array's shape (the HDF5 chunk's), its chunk shape (the same: one
//! Blosc2 chunk) and its block shape; each Blosc2 block then holds one block of the array in C
//! order, the blocks in C order over the array padded to whole blocks. Decoding puts the
//! elements back in the array's C order and drops the padding. Other chunks are the frame's
//! chunks' bytes, concatenated.
//!
//! Written here, decoding only: no maintained crate without C reads Blosc2 frames (c-blosc2's
//! Rust bindings build it with cmake, and `blusc`, a young port, decodes chunks but not
//! frames and ignores filters it does not know). Every size is checked against the chunk's
//! decoded size before anything is allocated, and the output is written block by block.

mod blosclz;
mod chunk;

use zarrs::array::codec::api::CodecError;

use chunk::ChunkHeader;

/// Why a frame does not decode.
#[derive(Debug)]
pub(crate) enum Blosc2Error {
    /// The frame's header, index or metalayer is damaged.
    Frame(String),
    /// A Blosc2 chunk of the frame is damaged.
    Chunk(String),
    /// The frame uses a feature this decoder does not read.
    Unsupported(String),
}

impl From<Blosc2Error> for CodecError {
    fn from(e: Blosc2Error) -> Self {
        CodecError::Other(match e {
            Blosc2Error::Frame(why) => format!("vzarr.blosc2: frame: {why}"),
            Blosc2Error::Chunk(why) => format!("vzarr.blosc2: Blosc2 chunk: {why}"),
            Blosc2Error::Unsupported(what) => {
                format!("vzarr.blosc2: the frame uses {what}, which vzarr does not decode")
            }
        })
    }
}

/// The fixed part of a frame header (c-blosc2 `frame.h`: `FRAME_HEADER_MINLEN`).
const HEADER_MINLEN: usize = 87;

fn be(src: &[u8], at: usize, n: usize) -> u64 {
    src[at..at + n]
        .iter()
        .fold(0u64, |v, &b| (v << 8) | u64::from(b))
}

/// A frame's header, checked against the frame's length.
struct Frame<'a> {
    bytes: &'a [u8],
    header_len: usize,
    nbytes: usize,
    cbytes: usize,
    typesize: usize,
    blocksize: usize,
    chunksize: usize,
}

impl<'a> Frame<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self, Blosc2Error> {
        let bad = |why: &str| Blosc2Error::Frame(why.into());
        if bytes.len() < HEADER_MINLEN || &bytes[2..10] != b"b2frame\0" {
            return Err(bad("no Blosc2 frame header (magic \"b2frame\")"));
        }
        if bytes[26] & 0x0f != 0 {
            return Err(Blosc2Error::Unsupported("a sparse frame".into()));
        }
        let header_len = be(bytes, 11, 4) as usize;
        let frame_len = be(bytes, 16, 8);
        let nbytes = be(bytes, 30, 8);
        let cbytes = be(bytes, 39, 8);
        let typesize = be(bytes, 48, 4) as usize;
        let blocksize = be(bytes, 53, 4) as usize;
        let chunksize = be(bytes, 58, 4) as usize;
        if frame_len > bytes.len() as u64 || header_len < HEADER_MINLEN {
            return Err(Blosc2Error::Frame(format!(
                "the frame declares {frame_len} bytes and a {header_len}-byte header, {} bytes are there",
                bytes.len()
            )));
        }
        let bytes = &bytes[..frame_len as usize];
        if (header_len as u64).saturating_add(cbytes) > frame_len || nbytes > i64::MAX as u64 {
            return Err(bad("its chunks run past the frame"));
        }
        if typesize == 0 || typesize > i32::MAX as usize || chunksize > i32::MAX as usize {
            return Err(Blosc2Error::Frame(format!(
                "type size {typesize}, chunk size {chunksize}"
            )));
        }
        Ok(Frame {
            bytes,
            header_len,
            nbytes: nbytes as usize,
            cbytes: cbytes as usize,
            typesize,
            blocksize,
            chunksize,
        })
    }

    /// The frame's chunk count (one index entry each).
    fn nchunks(&self) -> Result<usize, Blosc2Error> {
        match self.chunksize {
            0 if self.nbytes == 0 => Ok(0),
            0 => Err(Blosc2Error::Unsupported("chunks of varying sizes".into())),
            c => Ok(self.nbytes.div_ceil(c)),
        }
    }

    /// The offsets (from the end of the header) of the frame's `n` chunks.
    fn offsets(&self, n: usize) -> Result<Vec<i64>, Blosc2Error> {
        let at = self.header_len + self.cbytes;
        let src = &self.bytes[at.min(self.bytes.len())..];
        let h = ChunkHeader::read(src).map_err(|e| match e {
            Blosc2Error::Chunk(why) => Blosc2Error::Frame(format!("chunk index: {why}")),
            e => e,
        })?;
        if h.nbytes != n * 8 {
            return Err(Blosc2Error::Frame(format!(
                "the chunk index holds {} bytes for {n} chunks",
                h.nbytes
            )));
        }
        let mut raw = Vec::with_capacity(h.nbytes);
        chunk::for_each_block(src, &h, |_, b| {
            raw.extend_from_slice(b);
            Ok(())
        })?;
        Ok(raw
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect())
    }

    /// Decodes chunk `i` (at `offset`), handing its blocks to `block`; returns its header.
    fn chunk(
        &self,
        i: usize,
        offset: i64,
        block: impl FnMut(usize, &[u8]) -> Result<(), Blosc2Error>,
    ) -> Result<usize, Blosc2Error> {
        let size = (self.nbytes - i * self.chunksize).min(self.chunksize);
        if offset < 0 {
            // A chunk of one special value, kept in the index only.
            let kind = (offset as u64 >> 56) & 0x7f;
            let mut header = [0u8; chunk::HEADER_LEN];
            header[..4].copy_from_slice(&[5, 1, 0x07, self.typesize.min(255) as u8]);
            header[4..8].copy_from_slice(&(size as i32).to_le_bytes());
            let blocksize = match self.blocksize {
                b if b == 0 || b > size => size,
                b => b,
            };
            header[8..12].copy_from_slice(&(blocksize as i32).to_le_bytes());
            header[12..16].copy_from_slice(&(chunk::HEADER_LEN as i32).to_le_bytes());
            header[31] = match kind {
                k if k & 1 != 0 => 0x10,
                k if k & 4 != 0 => 0x40,
                k if k & 2 != 0 => 0x20,
                k => return Err(Blosc2Error::Frame(format!("special chunk kind {k}"))),
            };
            let h = ChunkHeader::read(&header)?;
            chunk::for_each_block(&header, &h, block)?;
            return Ok(size);
        }
        let start = (offset as usize).checked_add(self.header_len);
        let end = self.header_len + self.cbytes;
        let src = match start {
            Some(s) if s < end => &self.bytes[s..end],
            _ => {
                return Err(Blosc2Error::Frame(format!(
                    "chunk {i} at offset {offset} lies outside the frame's chunks"
                )));
            }
        };
        let h = ChunkHeader::read(src)?;
        if h.nbytes != size {
            return Err(Blosc2Error::Frame(format!(
                "chunk {i} holds {} bytes, the frame says {size}",
                h.nbytes
            )));
        }
        chunk::for_each_block(src, &h, block)?;
        Ok(size)
    }
}

/// Decodes one HDF5-Blosc2 chunk (a Blosc2 frame) to at most `limit` bytes.
pub fn blosc2_decode_bounded(encoded: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    let frame = Frame::read(encoded)?;
    let n = frame.nchunks()?;
    if let Some(nd) = nd::B2nd::find(&frame)? {
        return Ok(nd.decode(&frame, n, limit)?);
    }
    if frame.nbytes as u64 > limit {
        return Err(Blosc2Error::Frame(format!(
            "the frame decodes to {} bytes, more than the chunk's {limit}",
            frame.nbytes
        ))
        .into());
    }
    let offsets = frame.offsets(n)?;
    let mut out = Vec::with_capacity(frame.nbytes);
    for (i, &offset) in offsets.iter().enumerate() {
        frame.chunk(i, offset, |_, b| {
            out.extend_from_slice(b);
            Ok(())
        })?;
    }
    Ok(out)
}

mod nd;

#[cfg(test)]
mod tests;
