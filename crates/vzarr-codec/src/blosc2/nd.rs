//! The `b2nd` metalayer of a frame's header (c-blosc2's `README_B2ND_METALAYER.rst`, the
//! metalayer index of `README_CFRAME_FORMAT.rst`) and the decoding of a one-chunk B2ND array
//! into C order.

use super::{Blosc2Error, Frame, HEADER_MINLEN, be};

/// B2ND's largest rank (`B2ND_MAX_DIM`).
const MAX_DIM: usize = 8;

/// A B2ND array's shape and block shape (its one chunk is the whole array).
pub(super) struct B2nd {
    shape: Vec<usize>,
    block: Vec<usize>,
}

/// A cursor over msgpack bytes that fails, naming the metalayer, where they end or differ.
struct Pack<'a> {
    src: &'a [u8],
    at: usize,
}

impl Pack<'_> {
    fn byte(&mut self) -> Result<u8, Blosc2Error> {
        let b = *self
            .src
            .get(self.at)
            .ok_or_else(|| Blosc2Error::Frame("the metalayers are cut short".into()))?;
        self.at += 1;
        Ok(b)
    }

    fn uint(&mut self, marker: u8, n: usize) -> Result<u64, Blosc2Error> {
        let m = self.byte()?;
        if m != marker || self.at + n > self.src.len() {
            return Err(Blosc2Error::Frame(format!(
                "metalayers: byte {:#04x} where {marker:#04x} was expected",
                m
            )));
        }
        let v = be(self.src, self.at, n);
        self.at += n;
        Ok(v)
    }

    fn fixarray(&mut self) -> Result<usize, Blosc2Error> {
        match self.byte()? {
            b @ 0x90..=0x9f => Ok(usize::from(b & 0x0f)),
            b => Err(Blosc2Error::Frame(format!(
                "metalayers: byte {b:#04x} where an array was expected"
            ))),
        }
    }

    /// `n` dimensions of a fixarray of `marker` integers of `size` bytes.
    fn dims(&mut self, n: usize, marker: u8, size: usize) -> Result<Vec<usize>, Blosc2Error> {
        if self.fixarray()? != n {
            return Err(Blosc2Error::Frame("b2nd: a shape of the wrong rank".into()));
        }
        (0..n)
            .map(|_| {
                let v = self.uint(marker, size)?;
                let v = if size == 8 {
                    v as i64
                } else {
                    i64::from(v as u32 as i32)
                };
                usize::try_from(v)
                    .map_err(|_| Blosc2Error::Frame(format!("b2nd: a dimension of {v}")))
            })
            .collect()
    }
}

impl B2nd {
    /// The frame's `b2nd` (or older `caterva`) metalayer, if it has one.
    pub(super) fn find(frame: &Frame) -> Result<Option<B2nd>, Blosc2Error> {
        let header = &frame.bytes[..frame.header_len];
        let mut p = Pack {
            src: header,
            at: HEADER_MINLEN,
        };
        if p.byte()? & 0xf0 != 0x90 {
            return Err(Blosc2Error::Frame("no metalayer section".into()));
        }
        p.uint(0xcd, 2)?;
        let count = p.uint(0xde, 2)?;
        let mut content = None;
        for _ in 0..count {
            let len = match p.byte()? {
                b @ 0xa0..=0xbf => usize::from(b & 0x1f),
                b => {
                    return Err(Blosc2Error::Frame(format!(
                        "metalayers: byte {b:#04x} where a name was expected"
                    )));
                }
            };
            let name = header
                .get(p.at..p.at + len)
                .ok_or_else(|| Blosc2Error::Frame("the metalayers are cut short".into()))?;
            p.at += len;
            let offset = p.uint(0xd2, 4)? as usize;
            if name == b"b2nd" || name == b"caterva" {
                content = Some(offset);
            }
        }
        let Some(offset) = content else {
            return Ok(None);
        };
        let mut p = Pack {
            src: header,
            at: offset,
        };
        let len = p.uint(0xc6, 4)? as usize;
        let end = p.at.checked_add(len).filter(|&e| e <= header.len());
        let Some(end) = end else {
            return Err(Blosc2Error::Frame(
                "the b2nd metalayer runs past the header".into(),
            ));
        };
        let mut p = Pack {
            src: &header[..end],
            at: p.at,
        };
        if p.fixarray()? < 5 {
            return Err(Blosc2Error::Frame("b2nd: too few fields".into()));
        }
        p.byte()?; // format version
        let nd = usize::from(p.byte()?);
        if nd == 0 || nd > MAX_DIM {
            return Err(Blosc2Error::Frame(format!("b2nd: rank {nd}")));
        }
        let shape = p.dims(nd, 0xd3, 8)?;
        let chunk = p.dims(nd, 0xd2, 4)?;
        let block = p.dims(nd, 0xd2, 4)?;
        if chunk != shape {
            return Err(Blosc2Error::Unsupported(format!(
                "a B2ND array of shape {shape:?} in chunks of {chunk:?}"
            )));
        }
        if block
            .iter()
            .zip(&shape)
            .any(|(&b, &s)| b == 0 || b > s.max(1))
        {
            return Err(Blosc2Error::Frame(format!(
                "b2nd: blocks of {block:?} in an array of {shape:?}"
            )));
        }
        Ok(Some(B2nd { shape, block }))
    }

    /// Decodes the frame's one chunk into the array's bytes in C order, at most `limit`.
    pub(super) fn decode(
        &self,
        frame: &Frame,
        nchunks: usize,
        limit: u64,
    ) -> Result<Vec<u8>, Blosc2Error> {
        let ts = frame.typesize;
        let too_big = || Blosc2Error::Frame(format!("a b2nd array of {:?}", self.shape));
        let bytes = self
            .shape
            .iter()
            .try_fold(ts, |n, &d| n.checked_mul(d))
            .filter(|&n| n as u64 <= limit)
            .ok_or_else(too_big)?;
        let grid: Vec<usize> = self
            .shape
            .iter()
            .zip(&self.block)
            .map(|(&s, &b)| s.div_ceil(b))
            .collect();
        let block_items: usize = self.block.iter().product();
        let padded = grid
            .iter()
            .zip(&self.block)
            .try_fold(ts, |n, (&g, &b)| n.checked_mul(g * b))
            .ok_or_else(too_big)?;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        if nchunks != 1 || frame.nbytes != padded {
            return Err(Blosc2Error::Frame(format!(
                "{nchunks} chunks of {} bytes for a b2nd array of {padded}",
                frame.nbytes
            )));
        }
        let offsets = frame.offsets(1)?;
        let mut out = vec![0u8; bytes];
        let nd = self.shape.len();
        let last = self.block[nd - 1];
        let row_bytes = last * ts;
        frame.chunk(0, offsets[0], |b, data| {
            if data.len() != block_items * ts {
                return Err(Blosc2Error::Chunk(format!(
                    "a block of {} bytes, b2nd blocks hold {}",
                    data.len(),
                    block_items * ts
                )));
            }
            // The block's origin in the array.
            let mut origin = vec![0; nd];
            let mut rest = b;
            for d in (0..nd).rev() {
                origin[d] = rest % grid[d] * self.block[d];
                rest /= grid[d];
            }
            if origin[nd - 1] >= self.shape[nd - 1] {
                return Ok(());
            }
            let count = last.min(self.shape[nd - 1] - origin[nd - 1]) * ts;
            let rows = block_items / last;
            'row: for r in 0..rows {
                let mut rest = r;
                let mut dst = 0;
                let mut stride = 1;
                let mut at = vec![0; nd];
                for d in (0..nd - 1).rev() {
                    at[d] = origin[d] + rest % self.block[d];
                    rest /= self.block[d];
                    if at[d] >= self.shape[d] {
                        continue 'row;
                    }
                }
                at[nd - 1] = origin[nd - 1];
                for d in (0..nd).rev() {
                    dst += at[d] * stride;
                    stride *= self.shape[d];
                }
                let src = &data[r * row_bytes..r * row_bytes + count];
                out[dst * ts..dst * ts + count].copy_from_slice(src);
            }
            Ok(())
        })?;
        Ok(out)
    }
}
