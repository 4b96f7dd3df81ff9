//! Undoing the filters of filtered fractal heap blocks: zlib (RFC 1950; the HDF5 "deflate"
//! filter, id 1) with `miniz_oxide`, byte shuffle (id 2) and Fletcher-32 (id 3) (HDF5 File
//! Format Specification 3.0, section IV.A.2.l "Data Storage - Filter Pipeline Message", for
//! the filter ids; section III.G for filtered heap blocks).
//!
//! Only metadata goes through here (the link heaps of groups created with filters); chunk data
//! is never decoded by this crate. Output is capped at the size the structure must have, so a
//! hostile stream cannot expand without bound.

/// Why a filter could not be undone.
pub(crate) type FilterError = &'static str;

/// Inflates a zlib stream to at most `max` bytes (more is an error).
pub(crate) fn zlib_decompress(input: &[u8], max: usize) -> Result<Vec<u8>, FilterError> {
    miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(input, max).map_err(|e| {
        match e.status {
            miniz_oxide::inflate::TINFLStatus::HasMoreOutput => "inflates past the expected size",
            miniz_oxide::inflate::TINFLStatus::Adler32Mismatch => "zlib checksum mismatch",
            _ => "invalid zlib stream",
        }
    })
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
