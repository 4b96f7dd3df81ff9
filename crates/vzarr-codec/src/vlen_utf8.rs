//! The `vlen-utf8` codec's chunk encoding, for the string chunks vzarr writes itself
//! (zarr-extensions `codecs/vlen-utf8`; numcodecs `VLenUTF8`): a little-endian `u32` count of
//! elements, then per element a little-endian `u32` byte length and the UTF-8 bytes. The
//! encoding of a list of strings is unique, so equal values give equal chunk bytes.

use crate::CodecError;

/// Bytes the encoding of `items` takes: 4, plus 4 and the text per element.
pub fn encoded_len<S: AsRef<str>>(items: &[S]) -> u64 {
    4 + items
        .iter()
        .map(|s| 4 + s.as_ref().len() as u64)
        .sum::<u64>()
}

/// Encodes the elements of a chunk, in C order. Fails if there are more than `u32::MAX`
/// elements or an element has more than `u32::MAX` bytes.
pub fn encode<S: AsRef<str>>(items: &[S]) -> Result<Vec<u8>, CodecError> {
    let too_large = || CodecError::Failed("vlen-utf8: chunk too large to encode".into());
    let count = u32::try_from(items.len()).map_err(|_| too_large())?;
    let len = usize::try_from(encoded_len(items)).map_err(|_| too_large())?;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&count.to_le_bytes());
    for s in items {
        let s = s.as_ref();
        let n = u32::try_from(s.len()).map_err(|_| too_large())?;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    Ok(out)
}

/// Decodes a chunk of `expected` elements. Every length is checked against the bytes left
/// before anything is allocated for it, so hostile input costs at most its own size.
pub fn decode(bytes: &[u8], expected: usize) -> Result<Vec<String>, CodecError> {
    let bad = |why: String| CodecError::Failed(format!("vlen-utf8: {why}"));
    let u32_at = |at: usize| -> Result<u32, CodecError> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| {
                bad(format!(
                    "chunk ends at byte {} inside a length",
                    bytes.len()
                ))
            })
    };
    let count = u32_at(0)? as usize;
    if count != expected {
        return Err(bad(format!(
            "chunk holds {count} elements, its shape {expected}"
        )));
    }
    // Each element takes at least its 4-byte length.
    if count > (bytes.len() - 4) / 4 {
        return Err(bad(format!(
            "{count} elements cannot fit in {} bytes",
            bytes.len()
        )));
    }
    let mut out = Vec::with_capacity(count);
    let mut at = 4usize;
    for i in 0..count {
        let n = u32_at(at)? as usize;
        at += 4;
        let s = bytes
            .get(at..at.saturating_add(n))
            .ok_or_else(|| bad(format!("element {i} of {n} bytes runs past the chunk")))?;
        let s = std::str::from_utf8(s)
            .map_err(|e| bad(format!("element {i} is not valid UTF-8: {e}")))?;
        out.push(s.to_string());
        at += n;
    }
    if at != bytes.len() {
        return Err(bad(format!(
            "{} bytes after the last element",
            bytes.len() - at
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_exact_bytes() {
        let items = ["a", "", "héllo"];
        let enc = encode(&items).unwrap();
        assert_eq!(enc.len() as u64, encoded_len(&items));
        assert_eq!(
            enc,
            b"\x03\0\0\0\x01\0\0\0a\0\0\0\0\x06\0\0\0h\xc3\xa9llo".to_vec()
        );
        assert_eq!(decode(&enc, 3).unwrap(), items);
        assert_eq!(
            decode(&encode::<&str>(&[]).unwrap(), 0).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn hostile_chunks_are_errors_without_allocation() {
        let enc = encode(&["abc", "d"]).unwrap();
        assert!(decode(&enc, 3).is_err(), "count differs from the shape");
        // A count claiming 2^32 - 1 elements in a few bytes.
        let mut huge = enc.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge, u32::MAX as usize).is_err());
        // A length running past the end.
        let mut long = enc.clone();
        long[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&long, 2).is_err());
        // Truncated, trailing bytes, not UTF-8.
        assert!(decode(&enc[..enc.len() - 1], 2).is_err());
        let mut extra = enc.clone();
        extra.push(0);
        assert!(decode(&extra, 2).is_err());
        let mut latin = enc.clone();
        latin[8] = 0xe9;
        assert!(decode(&latin, 2).is_err());
        assert!(decode(&[1, 0], 1).is_err());
        assert!(decode(&[], 0).is_err());
    }
}
