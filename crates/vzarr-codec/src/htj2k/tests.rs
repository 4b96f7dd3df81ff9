//! Codestreams written by OpenJPH (`testdata/htj2k/make.py`), decoded and compared with the
//! images they were made from, or with OpenJPH's own decoding for the irreversible one.

use super::*;

const U16: &[u8] = include_bytes!("../../testdata/htj2k/u16.j2c");
const I8: &[u8] = include_bytes!("../../testdata/htj2k/i8.j2c");
const RGB: &[u8] = include_bytes!("../../testdata/htj2k/rgb.j2c");
const U16_LOSSY: &[u8] = include_bytes!("../../testdata/htj2k/u16-lossy.j2c");
const U16_LOSSY_OPENJPH: &[u8] = include_bytes!("../../testdata/htj2k/u16-lossy.openjph.le");

/// The images of `make.py`, 16 lines of 24 samples, in C order.
fn pixels() -> impl Iterator<Item = (u32, u32)> {
    (0..16).flat_map(|y| (0..24).map(move |x| (x, y)))
}

#[test]
fn reversible_codestreams_decode_to_their_images() {
    let u16s: Vec<u16> = pixels()
        .map(|(x, y)| ((x * 37 + y * 101 + (x * y) % 13 * 50) % 65536) as u16)
        .collect();
    let le: Vec<u8> = u16s.iter().flat_map(|v| v.to_le_bytes()).collect();
    let be: Vec<u8> = u16s.iter().flat_map(|v| v.to_be_bytes()).collect();
    assert_eq!(htj2k_decode_bounded(U16, 768, Endian::Little).unwrap(), le);
    assert_eq!(htj2k_decode_bounded(U16, 768, Endian::Big).unwrap(), be);

    let i8s: Vec<u8> = pixels()
        .map(|(x, y)| (((x * 11 + y * 5) % 256) as i32 - 128) as i8 as u8)
        .collect();
    assert_eq!(htj2k_decode_bounded(I8, 384, Endian::Big).unwrap(), i8s);

    let rgb: Vec<u8> = pixels()
        .flat_map(|(x, y)| (0..3).map(move |c| ((x * 7 + y * 3 + c * 50) % 256) as u8))
        .collect();
    assert_eq!(
        htj2k_decode_bounded(RGB, 1152, Endian::Little).unwrap(),
        rgb
    );
}

#[test]
fn irreversible_codestreams_decode_within_a_few_units_of_openjph() {
    let ours = htj2k_decode_bounded(U16_LOSSY, 768, Endian::Little).unwrap();
    let worst = ours
        .chunks_exact(2)
        .zip(U16_LOSSY_OPENJPH.chunks_exact(2))
        .map(|(a, b)| {
            let a = u16::from_le_bytes([a[0], a[1]]) as i32;
            let b = u16::from_le_bytes([b[0], b[1]]) as i32;
            (a - b).abs()
        })
        .max()
        .unwrap();
    assert!(worst <= 3, "differs from OpenJPH by {worst}");
}

#[test]
fn the_size_is_checked_before_decoding() {
    // What the SIZ marker segment says the image takes, which zarr-python's codec asks first.
    assert_eq!(htj2k_image_bytes(U16).unwrap(), 768);
    assert_eq!(htj2k_image_bytes(I8).unwrap(), 384);
    assert_eq!(htj2k_image_bytes(RGB).unwrap(), 1152);
    assert!(htj2k_image_bytes(&U16[..20]).is_err());
    // A limit below the image's size is refused from the SIZ marker segment alone.
    let e = htj2k_decode_bounded(U16, 767, Endian::Little).unwrap_err();
    assert!(e.to_string().contains("more than the chunk's 767"), "{e}");
    // An image claimed of 2^31 x 2^31 samples.
    let mut huge = U16.to_vec();
    huge[8..12].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    huge[12..16].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    assert!(htj2k_decode_bounded(&huge, 768, Endian::Little).is_err());
    // 8,192 tiles of 1 x 1 sample.
    let mut tiny_tiles = U16.to_vec();
    tiny_tiles[8..12].copy_from_slice(&4096u32.to_be_bytes());
    tiny_tiles[12..16].copy_from_slice(&2u32.to_be_bytes());
    tiny_tiles[24..28].copy_from_slice(&1u32.to_be_bytes());
    tiny_tiles[28..32].copy_from_slice(&1u32.to_be_bytes());
    let e = htj2k_decode_bounded(&tiny_tiles, 1 << 30, Endian::Little).unwrap_err();
    assert!(e.to_string().contains("8192 tiles"), "{e}");
    assert!(htj2k_image_bytes(&tiny_tiles).is_err());
    assert!(htj2k_decode_bounded(b"\xff\xd8\xff\xf7", 768, Endian::Little).is_err());
}

/// Every cut and three flips of every byte: an error or the image's exact size, never a panic
/// that escapes or more than the limit.
#[test]
fn damaged_codestreams_are_errors() {
    for stream in [U16, I8, RGB, U16_LOSSY] {
        for cut in 0..stream.len() {
            if let Ok(out) = htj2k_decode_bounded(&stream[..cut], 1152, Endian::Little) {
                assert!(out.len() <= 1152);
            }
        }
        for at in 0..stream.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut m = stream.to_vec();
                m[at] ^= flip;
                if let Ok(out) = htj2k_decode_bounded(&m, 1152, Endian::Little) {
                    assert!(out.len() <= 1152);
                }
            }
        }
    }
}
