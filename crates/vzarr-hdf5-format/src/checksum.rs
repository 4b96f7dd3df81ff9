//! Jenkins lookup3 `hashlittle`, the checksum of every structure of the version 2 era of the
//! format (HDF5 File Format Specification 3.0, section II.A "Checksums": "Jenkins'
//! lookup3 algorithm", initial value 0), and also the hash of link and attribute names in
//! dense storage indexes.

use crate::error::{Error, Result};

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

fn word(k: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w[..k.len()].copy_from_slice(k);
    u32::from_le_bytes(w)
}

/// Jenkins lookup3 `hashlittle(data, len, initval)`, byte-order independent.
pub fn lookup3(data: &[u8], initval: u32) -> u32 {
    // The length is mixed in modulo 2^32, as the reference implementation does.
    let init = 0xdead_beef_u32
        .wrapping_add(data.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = data;
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    let mut tail = [0u8; 12];
    tail[..k.len()].copy_from_slice(k);
    a = a.wrapping_add(word(&tail[0..4]));
    b = b.wrapping_add(word(&tail[4..8]));
    c = c.wrapping_add(word(&tail[8..12]));
    finish(&mut a, &mut b, &mut c);
    c
}

/// Checks the checksum stored in the 4 bytes after `covered` (little-endian) against the
/// lookup3 checksum of `covered`.
pub(crate) fn verify(
    structure: &'static str,
    address: u64,
    covered: &[u8],
    stored: &[u8],
) -> Result<()> {
    let stored = match stored {
        [a, b, c, d, ..] => u32::from_le_bytes([*a, *b, *c, *d]),
        _ => {
            return Err(Error::Truncated {
                structure,
                address,
                at: covered.len(),
                need: 4,
                have: covered.len() + stored.len(),
            });
        }
    };
    let computed = lookup3(covered, 0);
    if stored != computed {
        return Err(Error::Checksum {
            structure,
            address,
            stored,
            computed,
        });
    }
    Ok(())
}

/// Checks a structure whose last 4 bytes are the checksum of everything before them.
pub(crate) fn verify_trailing(structure: &'static str, address: u64, image: &[u8]) -> Result<()> {
    if image.len() < 4 {
        return Err(Error::Truncated {
            structure,
            address,
            at: 0,
            need: 4,
            have: image.len(),
        });
    }
    let (covered, stored) = image.split_at(image.len() - 4);
    verify(structure, address, covered, stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // Test vectors of lookup3.c's driver5().
        assert_eq!(lookup3(b"", 0), 0xdead_beef);
        assert_eq!(lookup3(b"", 0xdead_beef), 0xbd5b_7dde);
        assert_eq!(lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(lookup3(b"Four score and seven years ago", 1), 0xcd62_8161);
    }

    #[test]
    fn trailing_checksum() {
        let mut img = b"OHDR some bytes".to_vec();
        let c = lookup3(&img, 0);
        img.extend_from_slice(&c.to_le_bytes());
        verify_trailing("x", 0, &img).unwrap();
        img[0] ^= 1;
        assert!(matches!(
            verify_trailing("x", 0, &img),
            Err(Error::Checksum { .. })
        ));
        assert!(verify_trailing("x", 0, &[1, 2]).is_err());
    }
}
