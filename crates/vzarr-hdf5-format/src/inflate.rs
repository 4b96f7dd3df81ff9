//! Undoing the filters of filtered fractal heap blocks: a small zlib/DEFLATE decoder (RFC 1950
//! and 1951; the HDF5 "deflate" filter, id 1, writes zlib streams), byte shuffle (id 2) and
//! Fletcher-32 (id 3) (HDF5 File Format Specification 3.0, section IV.A.2.l "Data Storage -
//! Filter Pipeline Message", for the filter ids; section III.G for filtered heap blocks).
//!
//! Only metadata goes through here (the link heaps of groups created with filters); chunk data
//! is never decoded by this crate. Output is capped at the size the structure must have, so a
//! hostile stream cannot expand without bound.

/// Why a filtered block could not be decoded.
pub(crate) type FilterError = &'static str;

struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    bit: u32,
    nbits: u32,
}

impl Bits<'_> {
    fn need(&mut self, n: u32) -> Result<(), FilterError> {
        while self.nbits < n {
            let b = *self.data.get(self.pos).ok_or("deflate stream ends early")?;
            self.pos += 1;
            self.bit |= u32::from(b) << self.nbits;
            self.nbits += 8;
        }
        Ok(())
    }

    fn bits(&mut self, n: u32) -> Result<u32, FilterError> {
        if n == 0 {
            return Ok(0);
        }
        self.need(n)?;
        let v = self.bit & ((1u32 << n) - 1);
        self.bit >>= n;
        self.nbits -= n;
        Ok(v)
    }

    fn align(&mut self) {
        self.bit = 0;
        self.nbits = 0;
    }
}

/// A canonical Huffman code: number of codes of each length, symbols in code order.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> Result<Huffman, FilterError> {
        let mut counts = [0u16; 16];
        for &l in lengths {
            counts[usize::from(l)] += 1;
        }
        counts[0] = 0;
        // Over-subscribed codes are invalid; incomplete ones are allowed (single-code trees).
        let mut left: i32 = 1;
        for &c in &counts[1..] {
            left = left * 2 - i32::from(c);
            if left < 0 {
                return Err("over-subscribed Huffman code");
            }
        }
        let mut offs = [0u16; 16];
        for i in 1..15 {
            offs[i + 1] = offs[i] + counts[i];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbols[usize::from(offs[usize::from(l)])] = s as u16;
                offs[usize::from(l)] += 1;
            }
        }
        Ok(Huffman { counts, symbols })
    }

    fn decode(&self, b: &mut Bits) -> Result<u16, FilterError> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= b.bits(1)? as i32;
            let count = i32::from(self.counts[len]);
            if code - count < first {
                return self
                    .symbols
                    .get((index + (code - first)) as usize)
                    .copied()
                    .ok_or("bad Huffman code");
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err("bad Huffman code")
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

fn codes(
    b: &mut Bits,
    out: &mut Vec<u8>,
    max: usize,
    lit: &Huffman,
    dist: &Huffman,
) -> Result<(), FilterError> {
    loop {
        let sym = lit.decode(b)?;
        match sym {
            0..=255 => {
                if out.len() >= max {
                    return Err("inflated data larger than expected");
                }
                out.push(sym as u8);
            }
            256 => return Ok(()),
            _ => {
                let i = usize::from(sym - 257);
                let len = usize::from(*LEN_BASE.get(i).ok_or("bad length code")?)
                    + b.bits(u32::from(LEN_EXTRA[i]))? as usize;
                let d = usize::from(dist.decode(b)?);
                let dist = usize::from(*DIST_BASE.get(d).ok_or("bad distance code")?)
                    + b.bits(u32::from(DIST_EXTRA[d]))? as usize;
                if dist > out.len() {
                    return Err("distance before the start of the data");
                }
                if out.len() + len > max {
                    return Err("inflated data larger than expected");
                }
                let start = out.len() - dist;
                for k in 0..len {
                    let v = out[start + k];
                    out.push(v);
                }
            }
        }
    }
}

/// Inflates a zlib stream into at most `max` bytes.
pub(crate) fn zlib_decompress(input: &[u8], max: usize) -> Result<Vec<u8>, FilterError> {
    let (cmf, flg) = match input {
        [a, b, ..] => (*a, *b),
        _ => return Err("zlib stream too short"),
    };
    if cmf & 0x0f != 8 || (u16::from(cmf) * 256 + u16::from(flg)) % 31 != 0 {
        return Err("not a zlib stream");
    }
    if flg & 0x20 != 0 {
        return Err("zlib preset dictionary");
    }
    let mut b = Bits {
        data: input,
        pos: 2,
        bit: 0,
        nbits: 0,
    };
    let mut out = Vec::with_capacity(max.min(1 << 20));
    loop {
        let last = b.bits(1)?;
        match b.bits(2)? {
            0 => {
                b.align();
                let hdr = input
                    .get(b.pos..b.pos + 4)
                    .ok_or("stored block ends early")?;
                let len = usize::from(u16::from_le_bytes([hdr[0], hdr[1]]));
                let nlen = u16::from_le_bytes([hdr[2], hdr[3]]);
                if len as u16 != !nlen {
                    return Err("stored block length check");
                }
                b.pos += 4;
                let data = input
                    .get(b.pos..b.pos + len)
                    .ok_or("stored block ends early")?;
                if out.len() + len > max {
                    return Err("inflated data larger than expected");
                }
                out.extend_from_slice(data);
                b.pos += len;
            }
            1 => {
                let mut l = [0u8; 288];
                l[..144].fill(8);
                l[144..256].fill(9);
                l[256..280].fill(7);
                l[280..].fill(8);
                let lit = Huffman::new(&l)?;
                let dist = Huffman::new(&[5u8; 30])?;
                codes(&mut b, &mut out, max, &lit, &dist)?;
            }
            2 => {
                let nlen = b.bits(5)? as usize + 257;
                let ndist = b.bits(5)? as usize + 1;
                let ncode = b.bits(4)? as usize + 4;
                if nlen > 286 || ndist > 30 {
                    return Err("bad code counts");
                }
                const ORDER: [usize; 19] = [
                    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
                ];
                let mut cl = [0u8; 19];
                for &o in &ORDER[..ncode] {
                    cl[o] = b.bits(3)? as u8;
                }
                let clh = Huffman::new(&cl)?;
                let mut lens = vec![0u8; nlen + ndist];
                let mut i = 0;
                while i < lens.len() {
                    let sym = clh.decode(&mut b)?;
                    let (val, rep) = match sym {
                        0..=15 => (sym as u8, 1),
                        16 => {
                            let prev =
                                *lens.get(i.wrapping_sub(1)).ok_or("repeat with no length")?;
                            (prev, 3 + b.bits(2)? as usize)
                        }
                        17 => (0, 3 + b.bits(3)? as usize),
                        _ => (0, 11 + b.bits(7)? as usize),
                    };
                    if i + rep > lens.len() {
                        return Err("too many code lengths");
                    }
                    lens[i..i + rep].fill(val);
                    i += rep;
                }
                if lens[256] == 0 {
                    return Err("no end-of-block code");
                }
                let lit = Huffman::new(&lens[..nlen])?;
                let dist = Huffman::new(&lens[nlen..])?;
                codes(&mut b, &mut out, max, &lit, &dist)?;
            }
            _ => return Err("invalid deflate block type"),
        }
        if last == 1 {
            break;
        }
    }
    // Adler-32 of the output, after the (byte-aligned) end of the deflate data.
    b.align();
    let tail = input.get(b.pos..b.pos + 4).ok_or("zlib checksum missing")?;
    let stored = u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let (mut a, mut s) = (1u32, 0u32);
    for chunk in out.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            s += a;
        }
        a %= 65521;
        s %= 65521;
    }
    if (s << 16 | a) != stored {
        return Err("zlib checksum mismatch");
    }
    Ok(out)
}

/// Undoes a byte shuffle of elements of `size` bytes.
pub(crate) fn unshuffle(data: &[u8], size: usize) -> Vec<u8> {
    if size <= 1 || data.len() < size {
        return data.to_vec();
    }
    let n = data.len() / size;
    let mut out = vec![0u8; data.len()];
    for j in 0..size {
        for i in 0..n {
            out[i * size + j] = data[j * n + i];
        }
    }
    out[n * size..].copy_from_slice(&data[n * size..]);
    out
}

/// Checks and strips the Fletcher-32 checksum the HDF5 filter appends (big-endian halves as
/// the library computes them).
pub(crate) fn fletcher32_strip(data: &[u8]) -> Result<Vec<u8>, FilterError> {
    if data.len() < 4 {
        return Err("Fletcher-32 data too short");
    }
    let (body, sum) = data.split_at(data.len() - 4);
    let stored = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
    let (mut s1, mut s2) = (0u32, 0u32);
    let mut words = body.chunks_exact(2);
    for w in &mut words {
        s1 = (s1 + (u32::from(w[0]) << 8 | u32::from(w[1]))) % 65535;
        s2 = (s2 + s1) % 65535;
    }
    if let [last] = words.remainder() {
        s1 = (s1 + (u32::from(*last) << 8)) % 65535;
        s2 = (s2 + s1) % 65535;
    }
    if (s2 << 16 | s1) != stored {
        return Err("Fletcher-32 checksum mismatch");
    }
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn zlib_streams() {
        // zlib.compress(b"hello hello hello", 9): fixed Huffman codes.
        let z = [
            120u8, 218, 203, 72, 205, 201, 201, 87, 200, 64, 144, 0, 58, 46, 6, 125,
        ];
        assert_eq!(zlib_decompress(&z, 100).unwrap(), b"hello hello hello");
        assert!(zlib_decompress(&z, 5).is_err());
        let mut bad = z.to_vec();
        bad[15] ^= 1;
        assert!(zlib_decompress(&bad, 100).is_err());
        for cut in 0..z.len() {
            assert!(zlib_decompress(&z[..cut], 100).is_err());
        }
        // zlib.compress(b"abc", 0): a stored block.
        let s = [120u8, 1, 1, 3, 0, 252, 255, 97, 98, 99, 2, 77, 1, 39];
        assert_eq!(zlib_decompress(&s, 10).unwrap(), b"abc");
        // zlib.compress(fox * 20 + bytes(range(256)), 9): dynamic Huffman codes.
        let d = hex(DYNAMIC);
        let mut want = b"The quick brown fox jumps over the lazy dog. ".repeat(20);
        want.extend(0..=255u8);
        assert_eq!(zlib_decompress(&d, 2000).unwrap(), want);
        let mut x = crate::decode::le_uint(&[1]) as usize;
        for _ in 0..200 {
            // Corrupt one byte anywhere: an error or other bytes, never a panic.
            x = (x * 1103515245 + 12345) % d.len();
            let mut c = d.clone();
            c[x] ^= 0x5a;
            let _ = zlib_decompress(&c, 2000);
        }
    }

    const DYNAMIC: &str = "78da0bc94855282ccd4cce56482aca2fcf5348cbaf50c82acd2d2856c82f4b2d5228014ae72456552aa4e4a7eb29848c2a1e553caa98da8a191899985958d9d83938b9b87978f9f8050485844544c5c42524a5a46564e5e4151495945554d5d43534b5b47574f5f40d0c8d8c4d4ccdcc2d2cadac6d6cedec1d1c9d9c5d5cdddc3d3cbdbc7d7cfdfc030283824342c3c22322a3a26362e3e2131293925352d3d23332b3b27372f3f20b0a8b8a4b4acbca2b2aabaa6b6aebea1b1a9b9a5b5adbda3b3abbba7b7afbfa274c9c3479cad469d367cc9c357bcedc79f3172c5cb478c9d265cb57ac5cb57acdda75eb376cdcb479cbd66ddb77ecdcb57bcfde7dfb0f1c3c74f8c8d163c74f9c3c75faccd973e72f5cbc74f9cad56bd76fdcbc75fbcedd7bf71f3c7cf4f8c9d367cf5fbc7cf5facddb77ef3f7cfcf4f9cbd76fdf7ffcfcf5fbcfdf7fff011497c29c";

    #[test]
    fn shuffle_round_trip() {
        let data: Vec<u8> = (0..11).collect();
        let shuffled = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9, 10];
        assert_eq!(unshuffle(&shuffled, 2), data);
    }
}
