//! BloscLZ decoding: the LZ77 codec (derived from FastLZ) that is c-blosc2's default compressor
//! (`blosclz_decompress` of c-blosc2's `blosc/blosclz.c`; the format has no document of its own).
//!
//! A stream is a sequence of instructions, each behind a control byte: below 32, a literal run
//! of `ctrl + 1` bytes follows; otherwise a match of `(ctrl >> 5) + 2` bytes (the top value 7
//! extended by following bytes up to one that is not 255) at a distance of `(ctrl & 31) << 8`
//! plus the next byte plus one (a next byte of 255 with the top distance 31 << 8 announces a
//! 16-bit distance, plus 8191). As in c-blosc2, the instruction that ends the input is never
//! a copied match: its decoded size then falls short, which the caller reports.
//!
//! Written here because no maintained pure-Rust crate decodes BloscLZ: every step is checked
//! against the input's end and the output's size, so a damaged stream is an error, never a
//! read or write out of bounds.

/// Why a BloscLZ stream does not decode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BloscLzError {
    /// The input ends inside an instruction.
    Truncated,
    /// A literal or match would write past the output.
    Overrun,
    /// A match refers to bytes before the output's start.
    BadDistance,
}

impl std::fmt::Display for BloscLzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BloscLzError::Truncated => "the stream ends inside an instruction",
            BloscLzError::Overrun => "the stream decodes past the block's size",
            BloscLzError::BadDistance => "a match refers to bytes before the block's start",
        })
    }
}

/// Distances at or beyond this use the 16-bit form.
const MAX_DISTANCE: usize = 8191;

/// Decodes `input` into `out`, returning how many bytes were written (at most `out.len()`).
pub(crate) fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, BloscLzError> {
    let Some((&first, _)) = input.split_first() else {
        return Ok(0);
    };
    let mut ip = 1;
    let mut op = 0;
    let mut ctrl = usize::from(first & 31);
    let byte = |ip: &mut usize| -> Result<usize, BloscLzError> {
        let b = *input.get(*ip).ok_or(BloscLzError::Truncated)?;
        *ip += 1;
        Ok(usize::from(b))
    };
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let ofs = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let code = byte(&mut ip)?;
                    len += code;
                    if code != 255 {
                        break;
                    }
                }
            }
            let code = byte(&mut ip)?;
            len += 3;
            let mut distance = ofs + code + 1;
            if code == 255 && ofs == 31 << 8 {
                let far = (byte(&mut ip)? << 8) + byte(&mut ip)?;
                distance = far + MAX_DISTANCE + 1;
            }
            if len > out.len() - op {
                return Err(BloscLzError::Overrun);
            }
            if distance > op {
                return Err(BloscLzError::BadDistance);
            }
            if ip >= input.len() {
                // c-blosc2 stops before copying the last instruction's match.
                break;
            }
            ctrl = byte(&mut ip)?;
            let from = op - distance;
            if distance == 1 {
                let v = out[from];
                out[op..op + len].fill(v);
            } else if distance >= len {
                out.copy_within(from..from + len, op);
            } else {
                // Overlapping: the match repeats the last `distance` bytes.
                for i in 0..len {
                    out[op + i] = out[from + i];
                }
            }
            op += len;
        } else {
            let n = ctrl + 1;
            if n > out.len() - op {
                return Err(BloscLzError::Overrun);
            }
            let lit = input.get(ip..ip + n).ok_or(BloscLzError::Truncated)?;
            out[op..op + n].copy_from_slice(lit);
            op += n;
            ip += n;
            if ip >= input.len() {
                break;
            }
            ctrl = byte(&mut ip)?;
        }
    }
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_matches_decode() {
        // A literal run of 5 ("abcab", control 4), a match of 7 bytes ((control >> 5) + 2)
        // at distance 3 (the next byte plus one) that overlaps itself, then one literal "z".
        let input = [4, b'a', b'b', b'c', b'a', b'b', 5 << 5, 2, 0, b'z'];
        let mut out = [0u8; 13];
        assert_eq!(decompress(&input, &mut out), Ok(13));
        assert_eq!(&out, b"abcabcabcabcz");
    }

    #[test]
    fn damaged_streams_are_errors() {
        let mut out = [0u8; 4];
        // A literal run longer than the output.
        assert_eq!(
            decompress(&[9, 1, 2, 3], &mut out),
            Err(BloscLzError::Overrun)
        );
        // A literal run longer than the input.
        assert_eq!(
            decompress(&[3, 1, 2], &mut out),
            Err(BloscLzError::Truncated)
        );
        // A match reaching before the output's start (one byte written, distance 6).
        let mut big = [0u8; 64];
        assert_eq!(
            decompress(&[0, 9, 1 << 5, 5, 0], &mut big),
            Err(BloscLzError::BadDistance)
        );
        // A long-length match whose length bytes never end.
        assert_eq!(
            decompress(&[0, 7, 7 << 5, 255, 255], &mut big),
            Err(BloscLzError::Truncated)
        );
    }
}
