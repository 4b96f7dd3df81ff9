//! Frames built here byte by byte (after c-blosc2's format documents) for what real files
//! rarely hold: every kind of stream, special chunks, B2ND padding, damaged frames. The
//! interop tests (`tests/interop/test_filters.py`) decode frames c-blosc2 wrote, through
//! hdf5plugin, against h5py's values.

use super::*;

const NO_FILTERS: [u8; 6] = [0; 6];

/// A chunk header: `flags` (the extension bits are added), the filter slots, `b2flags`.
fn header(flags: u8, ts: u8, nbytes: usize, blocksize: usize, cbytes: usize) -> Vec<u8> {
    let mut h = vec![5, 1, flags | 0x05, ts];
    for v in [nbytes, blocksize, cbytes] {
        h.extend((v as i32).to_le_bytes());
    }
    h.resize(chunk::HEADER_LEN, 0);
    h
}

/// A memcpyed chunk of `data`.
fn copied(data: &[u8], ts: u8, blocksize: usize) -> Vec<u8> {
    let mut c = header(0x02, ts, data.len(), blocksize, 32 + data.len());
    c.extend(data);
    c
}

/// A chunk of blocks given as their streams (each: its size field and its bytes).
fn streamed(
    flags: u8,
    filters: [u8; 6],
    ts: u8,
    nbytes: usize,
    blocksize: usize,
    blocks: &[Vec<(i32, Vec<u8>)>],
) -> Vec<u8> {
    let mut body = Vec::new();
    let mut starts = Vec::new();
    let base = 32 + 4 * blocks.len();
    for streams in blocks {
        starts.push(base + body.len());
        for (size, bytes) in streams {
            body.extend(size.to_le_bytes());
            body.extend(bytes);
        }
    }
    let mut c = header(flags, ts, nbytes, blocksize, base + body.len());
    c[16..22].copy_from_slice(&filters);
    for s in starts {
        c.extend((s as u32).to_le_bytes());
    }
    c.extend(body);
    c
}

/// A contiguous frame of `chunks` (`Err`: that index entry instead of a stored chunk), with the
/// optional b2nd metalayer (shape, block shape).
fn frame(
    chunks: &[Result<Vec<u8>, i64>],
    nbytes: usize,
    chunksize: usize,
    ts: usize,
    nd: Option<(&[i64], &[i32])>,
) -> Vec<u8> {
    let mut meta = vec![0x93, 0xcd, 0, 0, 0xde, 0, 0];
    let mut content = Vec::new();
    if let Some((shape, block)) = nd {
        meta[6] = 1;
        meta.extend([0xa4, b'b', b'2', b'n', b'd', 0xd2]);
        content.extend([0x97, 0, shape.len() as u8, 0x90 | shape.len() as u8]);
        for &s in shape {
            content.push(0xd3);
            content.extend(s.to_be_bytes());
        }
        for dims in [
            shape.iter().map(|&s| s as i32).collect::<Vec<_>>(),
            block.to_vec(),
        ] {
            content.push(0x90 | dims.len() as u8);
            for d in dims {
                content.push(0xd2);
                content.extend(d.to_be_bytes());
            }
        }
        content.extend([0, 0xdb, 0, 0, 0, 3, b'|', b'V', b'4']);
    }
    let content_at = super::HEADER_MINLEN + meta.len() + if nd.is_some() { 4 + 3 } else { 3 };
    if nd.is_some() {
        meta.extend((content_at as i32).to_be_bytes());
        meta.extend([0xdc, 0, 1, 0xc6]);
        meta.extend((content.len() as u32).to_be_bytes());
        meta.extend(&content);
    } else {
        meta.extend([0xdc, 0, 0]);
    }
    let header_len = super::HEADER_MINLEN + meta.len();
    let mut data: Vec<u8> = Vec::new();
    let mut offsets: Vec<u8> = Vec::new();
    for c in chunks {
        match c {
            Ok(c) => {
                offsets.extend((data.len() as i64).to_le_bytes());
                data.extend(c);
            }
            Err(special) => offsets.extend(special.to_le_bytes()),
        }
    }
    let index = copied(&offsets, 8, offsets.len().max(1));
    let mut f = vec![0u8; super::HEADER_MINLEN];
    f[..2].copy_from_slice(&[0x9e, 0xa8]);
    f[2..10].copy_from_slice(b"b2frame\0");
    f[11..15].copy_from_slice(&(header_len as u32).to_be_bytes());
    let frame_len = header_len + data.len() + index.len() + 8;
    f[16..24].copy_from_slice(&(frame_len as u64).to_be_bytes());
    f[25] = 0x12;
    f[30..38].copy_from_slice(&(nbytes as u64).to_be_bytes());
    f[39..47].copy_from_slice(&(data.len() as u64).to_be_bytes());
    f[48..52].copy_from_slice(&(ts as u32).to_be_bytes());
    f[58..62].copy_from_slice(&(chunksize as u32).to_be_bytes());
    f.extend(meta);
    f.extend(data);
    f.extend(index);
    f.extend([0x94, 1, 0x93, 0xcd, 0, 0, 0xde, 0]);
    f
}

#[test]
fn chunks_of_a_frame_concatenate() {
    let a: Vec<u8> = (0..40).collect();
    let f = frame(
        &[Ok(copied(&a[..24], 4, 8)), Ok(copied(&a[24..], 4, 8))],
        40,
        24,
        4,
        None,
    );
    assert_eq!(blosc2_decode_bounded(&f, 40).unwrap(), a);
    assert!(
        blosc2_decode_bounded(&f, 39).is_err(),
        "more than the chunk's size"
    );
}

#[test]
fn special_index_entries_are_zeros_and_nans() {
    let zeros = Err(i64::MIN | (1 << 56));
    let nans = Err(i64::MIN | (2 << 56));
    let uninit = Err(i64::MIN | (4 << 56));
    let f = frame(&[zeros, nans.clone()], 16, 8, 4, None);
    let out = blosc2_decode_bounded(&f, 16).unwrap();
    assert_eq!(&out[..8], &[0; 8]);
    assert!(
        out[8..]
            .chunks(4)
            .all(|v| f32::from_le_bytes(v.try_into().unwrap()).is_nan())
    );
    let e = blosc2_decode_bounded(&frame(&[uninit], 8, 8, 4, None), 8).unwrap_err();
    assert!(e.to_string().contains("uninitialised"), "{e}");
}

#[test]
fn streams_filters_and_codecs_decode() {
    let values: Vec<u8> = (0u32..16)
        .flat_map(|v| (v * 1000 + 0x0500_0000).to_le_bytes())
        .collect();
    // Block 0 (32 bytes): byte shuffled, split into 4 streams: stored, LZ4, zeros, a run.
    let mut shuffled = [0u8; 32];
    for (i, &b) in values[..32].iter().enumerate() {
        shuffled[(i % 4) * 8 + i / 4] = b;
    }
    let planes: Vec<&[u8]> = shuffled.chunks(8).collect();
    assert_eq!(planes[2], &[0; 8][..], "third bytes of values below 65536");
    let lz4 = lz4_flex::block::compress(planes[1]);
    // Block 1 (32 bytes): zlib, one stream (bit 4: not split).
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    std::io::Write::write_all(&mut z, &values[32..]).unwrap();
    let zlib = z.finish().unwrap();
    let mut filters = NO_FILTERS;
    filters[5] = 1;
    let block0 = vec![
        (8, planes[0].to_vec()),
        (lz4.len() as i32, lz4),
        (0, vec![]),
        (-(planes[3][0] as i32), vec![1]),
    ];
    assert!(planes[3].iter().all(|&b| b == planes[3][0]));
    let c0 = streamed(1 << 5, filters, 4, 32, 32, &[block0]);
    let c1 = streamed(
        (3 << 5) | 0x10,
        NO_FILTERS,
        4,
        32,
        32,
        &[vec![(zlib.len() as i32, zlib)]],
    );
    let f = frame(&[Ok(c0), Ok(c1)], 64, 32, 4, None);
    assert_eq!(blosc2_decode_bounded(&f, 64).unwrap(), values);
}

#[test]
fn bit_shuffled_blocks_keep_their_tail() {
    // 10 two-byte values: 8 bit-shuffled, 2 as they are.
    let values: Vec<u8> = (0u16..10)
        .flat_map(|v| (v * 37 + 5).to_le_bytes())
        .collect();
    // Plane `bit` holds that bit of the first 8 values, value `e` in bit `e`.
    let mut planes: Vec<u8> = (0..16)
        .map(|bit| {
            (0..8).fold(0u8, |plane, e| {
                let v = u16::from_le_bytes([values[2 * e], values[2 * e + 1]]);
                plane | ((((v >> bit) & 1) as u8) << e)
            })
        })
        .collect();
    planes.extend(&values[16..]);
    let mut filters = NO_FILTERS;
    filters[5] = 2;
    let c = streamed(0x10, filters, 2, 20, 20, &[vec![(20, planes)]]);
    let f = frame(&[Ok(c)], 20, 20, 2, None);
    assert_eq!(blosc2_decode_bounded(&f, 20).unwrap(), values);
}

#[test]
fn b2nd_blocks_return_to_c_order() {
    // A 3 x 5 array of 1-byte items in 2 x 2 blocks: padded to 4 x 6, six blocks.
    let (rows, cols) = (3usize, 5usize);
    let value = |r: usize, c: usize| (r * 10 + c) as u8;
    let mut blocks = Vec::new();
    for br in 0..2 {
        for bc in 0..3 {
            for r in 0..2 {
                for c in 0..2 {
                    let (r, c) = (br * 2 + r, bc * 2 + c);
                    blocks.push(if r < rows && c < cols {
                        value(r, c)
                    } else {
                        0xee
                    });
                }
            }
        }
    }
    let f = frame(
        &[Ok(copied(&blocks, 1, 4))],
        24,
        24,
        1,
        Some((&[3, 5][..], &[2, 2][..])),
    );
    let want: Vec<u8> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| value(r, c)))
        .collect();
    assert_eq!(blosc2_decode_bounded(&f, 15).unwrap(), want);
    assert!(blosc2_decode_bounded(&f, 14).is_err());
    // A block size that is not the b2nd block's is refused.
    let f = frame(
        &[Ok(copied(&blocks, 1, 8))],
        24,
        24,
        1,
        Some((&[3, 5][..], &[2, 2][..])),
    );
    assert!(blosc2_decode_bounded(&f, 15).is_err());
}

#[test]
fn refusals_name_the_feature() {
    let mut filters = NO_FILTERS;
    filters[5] = 3;
    let c = streamed(0, filters, 1, 4, 4, &[vec![(4, vec![1, 2, 3, 4])]]);
    let e = blosc2_decode_bounded(&frame(&[Ok(c)], 4, 4, 1, None), 4).unwrap_err();
    assert!(e.to_string().contains("delta"), "{e}");
    let c = streamed(6 << 5, NO_FILTERS, 1, 4, 4, &[vec![(2, vec![1, 2])]]);
    let e = blosc2_decode_bounded(&frame(&[Ok(c)], 4, 4, 1, None), 4).unwrap_err();
    assert!(e.to_string().contains("user codec"), "{e}");
    assert!(blosc2_decode_bounded(b"not a frame at all", 100).is_err());
}

/// Every truncation and every byte flipped: an error or a chunk of at most the limit, never a
/// panic.
#[test]
fn damaged_frames_never_panic() {
    let values: Vec<u8> = (0..64).collect();
    let lz4 = lz4_flex::block::compress(&values[..32]);
    let mut filters = NO_FILTERS;
    filters[5] = 1;
    let frames = [
        frame(&[Ok(copied(&values, 4, 16))], 64, 64, 4, None),
        frame(
            &[Ok(streamed(
                0x30,
                filters,
                4,
                32,
                32,
                &[vec![(lz4.len() as i32, lz4)]],
            ))],
            32,
            32,
            4,
            None,
        ),
        frame(
            &[Ok(copied(&values[..24], 1, 4))],
            24,
            24,
            1,
            Some((&[3, 5][..], &[2, 2][..])),
        ),
        frame(
            &[Err(i64::MIN | (1 << 56))],
            64,
            64,
            8,
            Some((&[8, 1][..], &[8, 1][..])),
        ),
    ];
    for f in &frames {
        // Each size of the frame header at its largest.
        for (at, n) in [(11, 4), (16, 8), (30, 8), (39, 8), (48, 4), (58, 4)] {
            let mut m = f.clone();
            m[at..at + n].fill(0xff);
            assert!(blosc2_decode_bounded(&m, 64).is_err());
        }
        for cut in 0..f.len() {
            let _ = blosc2_decode_bounded(&f[..cut], 64);
        }
        for at in 0..f.len() {
            for flip in [0xff, 0x80, 0x01] {
                let mut m = f.clone();
                m[at] ^= flip;
                if let Ok(out) = blosc2_decode_bounded(&m, 64) {
                    assert!(out.len() <= 64);
                }
            }
        }
    }
}
