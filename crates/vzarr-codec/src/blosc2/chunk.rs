//! One Blosc2 chunk decoded block by block (c-blosc2's `README_CHUNK_FORMAT.rst`): the 32-byte
//! extended header, then either the data as it is (memcpyed), nothing (a chunk of one special
//! value), or a start offset per block and each block's streams (one, or one per byte of the
//! type size), each behind its compressed size: 0 a run of zeros, negative a run of one byte,
//! equal to the stream's size stored as it is, else BloscLZ, LZ4, zlib or zstd. The filter
//! pipeline (six slots, undone last to first) may hold byte shuffle, bit shuffle and truncated
//! precision (nothing to undo); the delta filter, user filters and codecs, dictionaries, lazy
//! chunks and variable-length blocks are refused by name, as is a chunk of uninitialised
//! values (its bytes are whatever memory held).

use super::{Blosc2Error, blosclz};

/// The extended header's length.
pub(crate) const HEADER_LEN: usize = 32;
/// c-blosc2's largest block (`BLOSC2_MAXBLOCKSIZE`).
const MAX_BLOCKSIZE: usize = 536_866_816;

/// A chunk's header, checked.
#[derive(Debug)]
pub(crate) struct ChunkHeader {
    /// Decoded bytes.
    pub nbytes: usize,
    /// Decoded bytes of each block but the last.
    pub blocksize: usize,
    /// Bytes of the chunk, header included.
    pub cbytes: usize,
    typesize: usize,
    flags: u8,
    filters: [u8; 6],
    filters_meta: [u8; 6],
    special: u8,
}

fn le_u32(src: &[u8], at: usize) -> usize {
    u32::from_le_bytes(src[at..at + 4].try_into().expect("4 bytes")) as usize
}

fn le_i32(src: &[u8], at: usize) -> Option<i32> {
    src.get(at..at + 4)
        .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")))
}

impl ChunkHeader {
    /// Reads and checks the header of the chunk at the start of `src`.
    pub(crate) fn read(src: &[u8]) -> Result<Self, Blosc2Error> {
        let bad = |why: String| Blosc2Error::Chunk(why);
        if src.len() < 16 {
            return Err(bad(format!(
                "{} bytes cannot hold a chunk header",
                src.len()
            )));
        }
        let (flags, typesize) = (src[2], usize::from(src[3]));
        let nbytes = i32::from_le_bytes(src[4..8].try_into().expect("4 bytes"));
        let blocksize = i32::from_le_bytes(src[8..12].try_into().expect("4 bytes"));
        let cbytes = i32::from_le_bytes(src[12..16].try_into().expect("4 bytes"));
        if flags & 0x05 != 0x05 {
            return Err(bad(format!(
                "version {} header without the Blosc2 extension (flags {flags:#04x})",
                src[0]
            )));
        }
        if src.len() < HEADER_LEN || cbytes < HEADER_LEN as i32 {
            return Err(bad("the extended header is cut short".into()));
        }
        let (nbytes, mut blocksize, cbytes) = match (
            usize::try_from(nbytes),
            usize::try_from(blocksize),
            usize::try_from(cbytes),
        ) {
            (Ok(n), Ok(b), Ok(c)) if b > 0 && b <= MAX_BLOCKSIZE && typesize > 0 => (n, b, c),
            _ => {
                return Err(bad(format!(
                    "header sizes {nbytes}, block {blocksize}, type {typesize}"
                )));
            }
        };
        if cbytes > src.len() {
            return Err(bad(format!(
                "it declares {cbytes} bytes, {} are there",
                src.len()
            )));
        }
        if nbytes > 0 && blocksize > nbytes {
            blocksize = nbytes;
        }
        let (flags2, b2flags) = (src[30], src[31]);
        let refuse = |what: &str| Err(Blosc2Error::Unsupported(what.into()));
        if flags2 != 0 {
            return refuse("variable-length blocks");
        }
        if b2flags & 0x01 != 0 {
            return refuse("a compression dictionary");
        }
        if b2flags & 0x08 != 0 {
            return refuse("a lazy chunk");
        }
        let special = (b2flags >> 4) & 0x07;
        let header = ChunkHeader {
            nbytes,
            blocksize,
            cbytes,
            typesize,
            flags,
            filters: src[16..22].try_into().expect("6 bytes"),
            filters_meta: src[24..30].try_into().expect("6 bytes"),
            special,
        };
        match special {
            0 => {}
            1 => {}
            2 if typesize == 4 || typesize == 8 => {}
            2 => return Err(bad(format!("a NaN chunk of {typesize}-byte values"))),
            3 if cbytes > HEADER_LEN && nbytes.is_multiple_of(cbytes - HEADER_LEN) => {}
            3 => return Err(bad("a repeated value that does not divide the chunk".into())),
            4 => return refuse("a chunk of uninitialised values"),
            s => return Err(bad(format!("special value kind {s}"))),
        }
        if special == 0 && flags & 0x02 == 0 {
            for f in header.filters {
                match f {
                    0..=2 | 4 => {}
                    3 => return refuse("the delta filter"),
                    f => return Err(Blosc2Error::Unsupported(format!("filter {f}"))),
                }
            }
            match flags >> 5 {
                0 | 1 | 3 | 4 => {}
                6 => return Err(Blosc2Error::Unsupported(format!("user codec {}", src[22]))),
                c => return Err(bad(format!("compressor format {c}"))),
            }
        }
        Ok(header)
    }

    fn nblocks(&self) -> usize {
        self.nbytes.div_ceil(self.blocksize)
    }
}

/// Decodes the chunk at the start of `src`, handing each block's decoded bytes, in order, to
/// `block` (every block `blocksize` bytes but a shorter last one).
pub(crate) fn for_each_block(
    src: &[u8],
    header: &ChunkHeader,
    mut block: impl FnMut(usize, &[u8]) -> Result<(), Blosc2Error>,
) -> Result<(), Blosc2Error> {
    let h = header;
    let src = &src[..h.cbytes];
    let bad = |why: String| Blosc2Error::Chunk(why);
    let n = h.nblocks();
    let size = |i: usize| (h.nbytes - i * h.blocksize).min(h.blocksize);
    if h.special != 0 {
        let mut fill = vec![0u8; h.blocksize.min(h.nbytes)];
        match h.special {
            2 if h.typesize == 4 => fill.chunks_exact_mut(4).for_each(|c| {
                c.copy_from_slice(&f32::NAN.to_le_bytes());
            }),
            2 => fill.chunks_exact_mut(8).for_each(|c| {
                c.copy_from_slice(&f64::NAN.to_le_bytes());
            }),
            3 => {
                let value = &src[HEADER_LEN..];
                if !h.blocksize.is_multiple_of(value.len()) {
                    return Err(bad("a repeated value that does not divide a block".into()));
                }
                fill.chunks_exact_mut(value.len())
                    .for_each(|c| c.copy_from_slice(value));
            }
            _ => {}
        }
        for i in 0..n {
            block(i, &fill[..size(i)])?;
        }
        return Ok(());
    }
    if h.flags & 0x02 != 0 {
        if h.cbytes != HEADER_LEN + h.nbytes {
            return Err(bad(format!(
                "a copied chunk of {} bytes in {} bytes",
                h.nbytes, h.cbytes
            )));
        }
        for i in 0..n {
            let at = HEADER_LEN + i * h.blocksize;
            block(i, &src[at..at + size(i)])?;
        }
        return Ok(());
    }
    if src.len() < HEADER_LEN + 4 * n {
        return Err(bad(format!("{n} block offsets do not fit")));
    }
    let mut streams = vec![0u8; h.blocksize.min(h.nbytes)];
    let mut out = vec![0u8; streams.len()];
    let mut decoders = Decoders::default();
    for i in 0..n {
        let bsize = size(i);
        let start = le_u32(src, HEADER_LEN + 4 * i);
        if start < HEADER_LEN + 4 * n || start >= src.len() {
            return Err(bad(format!("block {i} starts at byte {start}")));
        }
        let leftover = i + 1 == n && !h.nbytes.is_multiple_of(h.blocksize);
        let nstreams = if h.flags & 0x10 == 0 && !leftover {
            h.typesize
        } else {
            1
        };
        if !bsize.is_multiple_of(nstreams) {
            return Err(bad(format!(
                "block {i} of {bsize} bytes is not {nstreams} streams"
            )));
        }
        let neblock = bsize / nstreams;
        let mut at = start;
        for part in streams[..bsize].chunks_exact_mut(neblock) {
            let csize = le_i32(src, at).ok_or_else(|| bad(format!("block {i} is cut short")))?;
            at += 4;
            match csize {
                0 => part.fill(0),
                c if c < 0 => {
                    let token = *src
                        .get(at)
                        .ok_or_else(|| bad(format!("block {i} is cut short")))?;
                    at += 1;
                    if token & 1 == 0 || c < -255 {
                        return Err(bad(format!("block {i}: run token {token}, size {c}")));
                    }
                    part.fill(c.unsigned_abs() as u8);
                }
                c => {
                    let c = c as usize;
                    let data = src
                        .get(at..at + c)
                        .ok_or_else(|| bad(format!("block {i}: a stream runs past the chunk")))?;
                    at += c;
                    if c == neblock {
                        part.copy_from_slice(data);
                    } else {
                        decoders
                            .decode(h.flags >> 5, data, part)
                            .map_err(|why| bad(format!("block {i}: {why}")))?;
                    }
                }
            }
        }
        let decoded = unfilter(h, &mut streams[..bsize], &mut out[..bsize])?;
        block(i, decoded)?;
    }
    Ok(())
}

/// Undoes the filter pipeline of one block held in `a`, using `b` as scratch; returns which of
/// them holds the result.
fn unfilter<'a>(
    h: &ChunkHeader,
    mut a: &'a mut [u8],
    mut b: &'a mut [u8],
) -> Result<&'a [u8], Blosc2Error> {
    for (&f, &meta) in h.filters.iter().zip(&h.filters_meta).rev() {
        match f {
            1 => {
                let size = if meta == 0 {
                    h.typesize
                } else {
                    usize::from(meta)
                };
                unshuffle(size, a, b);
            }
            2 => {
                let whole = a.len() / h.typesize / 8 * 8 * h.typesize;
                crate::bitshuffle::unshuffle_block(&a[..whole], &mut b[..whole], h.typesize);
                b[whole..].copy_from_slice(&a[whole..]);
            }
            _ => continue,
        }
        std::mem::swap(&mut a, &mut b);
    }
    Ok(a)
}

/// Byte unshuffle of elements of `size` bytes (trailing bytes that make no element stay).
fn unshuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    let count = src.len() / size;
    if size <= 1 || count == 0 {
        dst.copy_from_slice(src);
        return;
    }
    match size {
        2 => unshuffle_n::<2>(src, dst, count),
        4 => unshuffle_n::<4>(src, dst, count),
        8 => unshuffle_n::<8>(src, dst, count),
        _ => {
            for j in 0..size {
                let plane = &src[j * count..(j + 1) * count];
                for (e, &v) in plane.iter().enumerate() {
                    dst[e * size + j] = v;
                }
            }
        }
    }
    let whole = count * size;
    dst[whole..].copy_from_slice(&src[whole..]);
}

/// [`unshuffle`] for a size known at compile time: one element written at a time.
fn unshuffle_n<const N: usize>(src: &[u8], dst: &mut [u8], count: usize) {
    let planes: [&[u8]; N] = std::array::from_fn(|j| &src[j * count..(j + 1) * count]);
    for (e, out) in dst[..count * N].chunks_exact_mut(N).enumerate() {
        for (b, plane) in out.iter_mut().zip(&planes) {
            *b = plane[e];
        }
    }
}

/// The codecs' decoder state, made once per chunk.
#[derive(Default)]
struct Decoders {
    zstd: Option<::zstd::bulk::Decompressor<'static>>,
}

impl Decoders {
    /// Decodes one stream of compressor format `format` into exactly `out`.
    fn decode(&mut self, format: u8, data: &[u8], out: &mut [u8]) -> Result<(), String> {
        let got = match format {
            0 => blosclz::decompress(data, out).map_err(|e| format!("BloscLZ: {e}"))?,
            1 => lz4_flex::block::decompress_into(data, out).map_err(|e| format!("LZ4: {e}"))?,
            3 => {
                let mut z = flate2::Decompress::new(true);
                match z.decompress(data, out, flate2::FlushDecompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => z.total_out() as usize,
                    Ok(_) => return Err("zlib: the stream does not end in the block".into()),
                    Err(e) => return Err(format!("zlib: {e}")),
                }
            }
            4 => {
                if self.zstd.is_none() {
                    self.zstd =
                        Some(::zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?);
                }
                let z = self.zstd.as_mut().expect("made above");
                z.decompress_to_buffer(data, out)
                    .map_err(|e| format!("zstd: {e}"))?
            }
            f => return Err(format!("compressor format {f}")),
        };
        if got != out.len() {
            return Err(format!(
                "a stream decodes to {got} bytes, not {}",
                out.len()
            ));
        }
        Ok(())
    }
}
