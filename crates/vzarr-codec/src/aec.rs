//! CCSDS 121.0-B adaptive entropy coding (AEC), as libaec codes it without `AEC_PAD_RSI`,
//! for unsigned samples of 1 to 32 bits: the decoder of [`crate::szip`].
//!
//! Written here after `tensogram-szip` 0.24 (the one pure-Rust AEC crate) was found to decode
//! a block of the second-extension option that follows a reference sample one sample out of
//! step with libaec (a value of HDF5's and PyTables' szip test files came out wrong). This
//! follows libaec's `decode.c`: per block a coding option identifier, then a zero-block run
//! (with the remainder-of-segment code), the second extension (pairs, the first one cut to its
//! second value when a reference precedes it), a split sample (fundamental sequences, then
//! `k` low bits per sample) or the samples as they are; the first block of each reference
//! sample interval (RSI) starts with a reference sample when preprocessing, whose inverse
//! (unit-delay prediction, the mapping of CCSDS 121.0 section 4) is applied per RSI. RSIs
//! follow each other without padding. The encoder writes every block as it is (the
//! uncompressed option), which every AEC decoder reads: re-encoded chunks stay correct,
//! if larger.
//!
//! Every count read from the stream is checked against what the interval can still hold, and
//! the output is the size the caller asks for.

use zarrs::array::codec::api::CodecError;

fn err(msg: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("szip: {msg}"))
}

/// The parameters of a stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Aec {
    /// Bits per sample, 1 to 32.
    pub bits: u32,
    /// Samples per block (even).
    pub block: usize,
    /// Blocks per reference sample interval.
    pub rsi: usize,
    /// Whether samples were preprocessed (unit-delay prediction).
    pub preprocess: bool,
    /// Whether samples are stored most significant byte first.
    pub msb: bool,
}

struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn read(&mut self, n: u32) -> Result<u32, CodecError> {
        let mut v = 0u64;
        for _ in 0..n {
            let byte = *self
                .data
                .get(self.pos / 8)
                .ok_or_else(|| err("the stream ends inside a block"))?;
            v = (v << 1) | u64::from((byte >> (7 - self.pos % 8)) & 1);
            self.pos += 1;
        }
        Ok(v as u32)
    }

    /// A fundamental sequence: the number of 0 bits before a 1.
    fn fs(&mut self) -> Result<u32, CodecError> {
        let mut n = 0u32;
        while self.read(1)? == 0 {
            n += 1;
        }
        Ok(n)
    }
}

impl Aec {
    /// Bytes per sample.
    pub(crate) fn sample_bytes(&self) -> usize {
        match self.bits {
            17.. => 4,
            9..=16 => 2,
            _ => 1,
        }
    }

    fn id_len(&self) -> u32 {
        match self.bits {
            17.. => 5,
            9..=16 => 4,
            _ => 3,
        }
    }

    fn xmax(&self) -> u32 {
        if self.bits == 32 {
            u32::MAX
        } else {
            (1u32 << self.bits) - 1
        }
    }

    /// Decodes `len` bytes of samples.
    pub(crate) fn decode(&self, data: &[u8], len: usize) -> Result<Vec<u8>, CodecError> {
        let width = self.sample_bytes();
        if !len.is_multiple_of(width) {
            return Err(err(format!("{len} bytes of {width}-byte samples")));
        }
        let total = len / width;
        let (j, id_len) = (self.block, self.id_len());
        let uncompressed = (1u32 << id_len) - 1;
        let mut bits = Bits { data, pos: 0 };
        let mut out = Vec::with_capacity(len);
        let mut done = 0usize;
        let mut interval: Vec<u32> = Vec::with_capacity(j * self.rsi);
        while done < total {
            interval.clear();
            let mut block = 0usize;
            // Decode the blocks of one interval, or those that hold the samples left.
            let wanted = (total - done).min(j * self.rsi);
            while interval.len() < wanted {
                let reference = self.preprocess && block == 0;
                let id = bits.read(id_len)?;
                if id == 0 {
                    let second_extension = bits.read(1)? == 1;
                    if reference {
                        interval.push(bits.read(self.bits)?);
                    }
                    if second_extension {
                        let mut i = usize::from(reference);
                        while i < j {
                            let m = bits.fs()?;
                            if m > 90 {
                                return Err(err("a second-extension code out of range"));
                            }
                            // m = s (s + 1) / 2 + d1, the pair (s - d1, d1).
                            let mut s = 0;
                            while (s + 1) * (s + 2) / 2 <= m {
                                s += 1;
                            }
                            let d1 = m - s * (s + 1) / 2;
                            if i % 2 == 0 {
                                interval.push(s - d1);
                                i += 1;
                            }
                            interval.push(d1);
                            i += 1;
                        }
                        block += 1;
                    } else {
                        let mut zero_blocks = bits.fs()? as usize + 1;
                        if zero_blocks == 5 {
                            // The rest of the segment of 64 blocks, or of the interval.
                            zero_blocks = (self.rsi - block).min(64 - block % 64);
                        } else if zero_blocks > 5 {
                            zero_blocks -= 1;
                        }
                        if zero_blocks > self.rsi - block {
                            return Err(err("a run of zero blocks past the interval"));
                        }
                        let n = zero_blocks * j - usize::from(reference);
                        interval.resize(interval.len() + n, 0);
                        block += zero_blocks;
                    }
                } else if id == uncompressed {
                    for _ in 0..j {
                        interval.push(bits.read(self.bits)?);
                    }
                    block += 1;
                } else {
                    let k = id - 1;
                    if reference {
                        interval.push(bits.read(self.bits)?);
                    }
                    let start = interval.len();
                    for _ in usize::from(reference)..j {
                        let high = bits.fs()?;
                        if k + 32 - high.leading_zeros() > self.bits {
                            return Err(err("a split sample wider than the samples"));
                        }
                        interval.push(high << k);
                    }
                    if k > 0 {
                        for v in &mut interval[start..] {
                            *v |= bits.read(k)?;
                        }
                    }
                    block += 1;
                }
                if block > self.rsi {
                    return Err(err("more blocks than an interval holds"));
                }
            }
            if self.preprocess {
                self.postprocess(&mut interval);
            }
            for &v in interval.iter().take(wanted) {
                let b = v.to_be_bytes();
                let b = &b[4 - width..];
                if self.msb {
                    out.extend_from_slice(b);
                } else {
                    out.extend(b.iter().rev());
                }
            }
            done += wanted;
        }
        Ok(out)
    }

    /// The inverse of the unit-delay prediction, in place (the reference first).
    fn postprocess(&self, samples: &mut [u32]) {
        let xmax = self.xmax();
        let med = xmax / 2 + 1;
        let Some((&mut first, rest)) = samples.split_first_mut() else {
            return;
        };
        let mut last = first;
        for d in rest {
            let half = (*d >> 1) + (*d & 1);
            let mask = if last & med != 0 { xmax } else { 0 };
            last = if half <= (mask ^ last) {
                if *d & 1 == 0 {
                    last.wrapping_add(*d >> 1)
                } else {
                    last.wrapping_sub((*d >> 1) + 1)
                }
            } else {
                mask ^ *d
            };
            *d = last;
        }
    }

    /// Encodes `raw` (whole samples, a whole number of blocks) with the uncompressed option.
    pub(crate) fn encode(&self, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
        let width = self.sample_bytes();
        if !raw.len().is_multiple_of(width * self.block) {
            return Err(err(format!(
                "{} bytes are not whole blocks of {} {width}-byte samples",
                raw.len(),
                self.block
            )));
        }
        let samples: Vec<u32> = raw
            .chunks_exact(width)
            .map(|c| {
                let mut b = [0u8; 4];
                if self.msb {
                    b[4 - width..].copy_from_slice(c);
                } else {
                    for (i, &x) in c.iter().enumerate() {
                        b[3 - i] = x;
                    }
                }
                u32::from_be_bytes(b) & self.xmax()
            })
            .collect();
        let mut out = Writer::default();
        let id = (1u32 << self.id_len()) - 1;
        for interval in samples.chunks(self.block * self.rsi) {
            let coded = if self.preprocess {
                self.preprocess_interval(interval)
            } else {
                interval.to_vec()
            };
            for block in coded.chunks(self.block) {
                out.put(id, self.id_len());
                for &v in block {
                    out.put(v, self.bits);
                }
            }
        }
        Ok(out.finish())
    }

    /// The reference, then the mapped prediction errors (CCSDS 121.0 section 4).
    fn preprocess_interval(&self, x: &[u32]) -> Vec<u32> {
        let xmax = self.xmax();
        let mut out = Vec::with_capacity(x.len());
        out.push(x[0]);
        for w in x.windows(2) {
            let (prev, cur) = (w[0], w[1]);
            let theta = prev.min(xmax - prev);
            let d = if cur >= prev {
                let delta = cur - prev;
                if delta <= theta {
                    2 * delta
                } else {
                    theta + delta
                }
            } else {
                let delta = prev - cur;
                if delta <= theta {
                    2 * delta - 1
                } else {
                    theta + delta
                }
            };
            out.push(d);
        }
        out
    }
}

#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Writer {
    fn put(&mut self, v: u32, bits: u32) {
        self.acc = (self.acc << bits) | (u64::from(v) & ((1u64 << bits) - 1));
        self.n += bits;
        while self.n >= 8 {
            self.n -= 8;
            self.bytes.push((self.acc >> self.n) as u8);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.bytes.push((self.acc << (8 - self.n)) as u8);
        }
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_streams_are_errors_or_the_size_asked_never_a_panic() {
        // Random bytes as streams, every sample width and option: an error or exactly the
        // requested bytes; nothing read from the stream sizes the output.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ok, mut errors) = (0, 0);
        for round in 0..3000 {
            let bits = [1, 4, 8, 12, 16, 20, 24, 31, 32][round % 9];
            let aec = Aec {
                bits,
                block: [8, 16, 32, 2][round % 4],
                rsi: 1 + round % 7,
                preprocess: round % 2 == 0,
                msb: round % 3 == 0,
            };
            let data: Vec<u8> = (0..next() % 200).map(|_| next() as u8).collect();
            let len = aec.sample_bytes() * (next() % 300) as usize;
            match aec.decode(&data, len) {
                Ok(v) => {
                    assert_eq!(v.len(), len);
                    ok += 1;
                }
                Err(_) => errors += 1,
            }
        }
        assert!(ok > 0 && errors > 0, "{ok} decoded, {errors} errors");
    }

    #[test]
    fn the_uncompressed_option_round_trips() {
        for (bits, preprocess, msb) in [(8, true, false), (16, false, true), (12, true, true)] {
            let aec = Aec {
                bits,
                block: 16,
                rsi: 3,
                preprocess,
                msb,
            };
            let w = aec.sample_bytes();
            let raw: Vec<u8> = (0..16 * 7 * w)
                .map(|i| {
                    let v = (i / w * 37 % 4096) as u16 & ((1u32 << bits) - 1) as u16;
                    let b = if msb {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    };
                    if w == 1 {
                        b[usize::from(msb)]
                    } else {
                        b[i % w]
                    }
                })
                .collect();
            let enc = aec.encode(&raw).unwrap();
            assert_eq!(
                aec.decode(&enc, raw.len()).unwrap(),
                raw,
                "{bits} {preprocess}"
            );
        }
    }
}
