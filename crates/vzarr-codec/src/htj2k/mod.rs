//! JPEG 2000 codestreams, as hdf5plugin's HTJ2K filter (h5z-htj2k, HDF5 filter id 32033)
//! stores each chunk: one bare codestream (no JP2 boxes) of the chunk as an image of
//! `height x width` samples, one component, or three interleaved per pixel (`height x width x
//! 3`), 8 or 16 bits a sample, coded with the High-Throughput block coder of ITU-T T.814
//! (OpenJPH writes them).
//!
//! The codestream describes the image (size, components, precision, signedness, transform);
//! the byte order of 16-bit samples is the filter's, from its client data values, hence the
//! configuration's `endian`. Decoding uses the `jpeg2k` crate over `openjp2`, a Rust port of
//! OpenJPEG 2.5, which decodes Part 1 and HT code-blocks. Before the decoder sees a codestream,
//! its SIZ marker segment is read here and must describe an image of at most the chunk's size
//! in at most [`MAX_TILES`] tiles, so what the decoder allocates is bounded by the chunk, and
//! decoding is strict (a truncated codestream is an error, not a partial image). A panic of the
//! decoder on a damaged codestream is caught and reported as an error.
//!
//! Reversible codestreams (the 5/3 wavelet, lossless) decode to the filter's values exactly.
//! Irreversible ones (the 9/7 wavelet, the filter's lossy mode) are reconstructed with floating
//! point, which JPEG 2000 lets decoders round differently: OpenJPEG's values differ from
//! OpenJPH's (what libhdf5 with the filter gives) by a few units in the last place (3 at most
//! on hdf5plugin's 16-bit test images), and OpenJPEG clips to the sample range where the filter
//! lets a value wrap. zarr-python decodes `vzarr.htj2k` with OpenJPH (through imagecodecs), as
//! the filter does.
//!
//! Encoding is not offered: vzarr never writes HTJ2K codestreams.
//!
//! ### Compatible Implementations
//! h5z-htj2k (hdf5plugin) over OpenJPH; imagecodecs' `htj2k_decode` (OpenJPH) and
//! `jpeg2k_decode` (OpenJPEG).
//!
//! ### Specification
//! - ITU-T T.800 (ISO/IEC 15444-1) Annex A: the SOC marker, then the SIZ marker segment (`Lsiz`,
//!   `Rsiz`, `Xsiz`, `Ysiz`, `XOsiz`, `YOsiz`, `XTsiz`, `YTsiz`, `XTOsiz`, `YTOsiz`, `Csiz`, and
//!   `Ssiz`, `XRsiz`, `YRsiz` per component).
//! - ITU-T T.814 (ISO/IEC 15444-15): HTJ2K code-blocks.
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.htj2k`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.htj2k", "configuration": {"endian": "big"}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::Htj2k { endian: vzarr_core::Endian::Big });
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};

use vzarr_core::Endian;
use zarrs::array::codec::api::CodecError;

/// Most tiles a codestream may have: the filter codes each chunk as one image, and the decoder
/// allocates per tile, so a codestream of many tiny tiles is refused rather than decoded.
pub const MAX_TILES: u64 = 4096;

/// Most components: the filter writes one (grey) or three (RGB).
const MAX_COMPONENTS: u16 = 4;

fn error(what: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("htj2k: {what}"))
}

/// The image a codestream's SIZ marker segment describes.
#[derive(Debug, PartialEq, Eq)]
struct Size {
    width: u32,
    height: u32,
    components: u16,
    precision: u8,
    signed: bool,
}

impl Size {
    /// Bytes a decoded sample takes.
    fn sample_bytes(&self) -> u64 {
        if self.precision <= 8 { 1 } else { 2 }
    }

    /// Bytes of the decoded image.
    fn bytes(&self) -> u64 {
        u64::from(self.width)
            * u64::from(self.height)
            * u64::from(self.components)
            * self.sample_bytes()
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads the SOC marker and the SIZ marker segment that must follow it.
fn read_siz(cs: &[u8]) -> Result<Size, CodecError> {
    if cs.len() < 4 || cs[..4] != [0xFF, 0x4F, 0xFF, 0x51] {
        return Err(error(
            "not a JPEG 2000 codestream (no SOC marker followed by SIZ)",
        ));
    }
    let siz = &cs[4..];
    if siz.len() < 38 {
        return Err(error("codestream cut short in its SIZ marker segment"));
    }
    let lsiz = usize::from(u16::from_be_bytes([siz[0], siz[1]]));
    let components = u16::from_be_bytes([siz[36], siz[37]]);
    if components == 0 || components > MAX_COMPONENTS {
        return Err(error(format!(
            "{components} components (the filter writes 1 or 3)"
        )));
    }
    if lsiz != 38 + 3 * usize::from(components) || siz.len() < lsiz {
        return Err(error(format!(
            "SIZ marker segment of {lsiz} bytes for {components} components, in a codestream \
             of {} bytes",
            cs.len()
        )));
    }
    let [x, y, x0, y0, tw, th, tx0, ty0] = std::array::from_fn(|i| be32(siz, 4 + 4 * i));
    let (Some(width), Some(height)) = (x.checked_sub(x0), y.checked_sub(y0)) else {
        return Err(error(format!(
            "image offset ({x0}, {y0}) past its size ({x}, {y})"
        )));
    };
    if width == 0 || height == 0 || tw == 0 || th == 0 || tx0 > x0 || ty0 > y0 {
        return Err(error(format!(
            "image of {width} x {height} samples in tiles of {tw} x {th} from ({tx0}, {ty0})"
        )));
    }
    let tiles =
        u64::from(x - tx0).div_ceil(u64::from(tw)) * u64::from(y - ty0).div_ceil(u64::from(th));
    if tiles > MAX_TILES {
        return Err(error(format!(
            "{tiles} tiles, more than the {MAX_TILES} vzarr decodes"
        )));
    }
    let comps = &siz[38..lsiz];
    let ssiz = comps[0];
    for c in comps.chunks_exact(3) {
        if c != [ssiz, 1, 1] {
            return Err(error(
                "components of different precisions or subsampled (the filter writes neither)",
            ));
        }
    }
    let precision = (ssiz & 0x7F) + 1;
    if precision > 16 {
        return Err(error(format!(
            "{precision}-bit samples (the filter writes 8 or 16)"
        )));
    }
    Ok(Size {
        width,
        height,
        components,
        precision,
        signed: ssiz & 0x80 != 0,
    })
}

/// Bytes of the image a codestream's SIZ marker segment describes, its samples interleaved per
/// pixel; an error for what the filter never writes and vzarr does not decode (more than 4
/// components, components of different precisions or subsampled, over 16 bits a sample, more
/// than [`MAX_TILES`] tiles). Reads only the codestream's first marker segments.
pub fn htj2k_image_bytes(encoded: &[u8]) -> Result<u64, CodecError> {
    read_siz(encoded).map(|size| size.bytes())
}

/// Decodes one chunk's codestream to its samples, interleaved per pixel, 16-bit samples in
/// `endian` order, writing at most `limit` bytes: an image larger than that is an error before
/// any decoding.
pub fn htj2k_decode_bounded(
    encoded: &[u8],
    limit: u64,
    endian: Endian,
) -> Result<Vec<u8>, CodecError> {
    let size = read_siz(encoded)?;
    let n = size.bytes();
    if n > limit {
        return Err(error(format!(
            "a {} x {} image of {} components decodes to {n} bytes, more than the chunk's {limit}",
            size.height, size.width, size.components
        )));
    }
    let params = jpeg2k::DecodeParameters::new().strict(true);
    let image = catch_unwind(AssertUnwindSafe(|| {
        jpeg2k::Image::from_bytes_with(encoded, params)
    }))
    .map_err(|_| error("the decoder failed on a damaged codestream"))?
    .map_err(error)?;
    let comps = image.components();
    let pixels = size.width as usize * size.height as usize;
    if comps.len() != usize::from(size.components)
        || comps.iter().any(|c| {
            c.width() != size.width
                || c.height() != size.height
                || c.precision() != u32::from(size.precision)
                || c.is_signed() != size.signed
                || c.data().len() != pixels
        })
    {
        return Err(error(
            "the decoded image is not the one its SIZ marker segment describes",
        ));
    }
    let mut out = Vec::with_capacity(n as usize);
    let planes: Vec<&[i32]> = comps.iter().map(|c| c.data()).collect();
    // The decoder clips samples to the precision's range, so they fit their bytes.
    let samples = (0..pixels).flat_map(|p| planes.iter().map(move |plane| plane[p]));
    match (size.sample_bytes(), endian) {
        (1, _) => out.extend(samples.map(|v| v as u8)),
        (_, Endian::Little) => {
            samples.for_each(|v| out.extend_from_slice(&(v as u16).to_le_bytes()))
        }
        (_, Endian::Big) => samples.for_each(|v| out.extend_from_slice(&(v as u16).to_be_bytes())),
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
