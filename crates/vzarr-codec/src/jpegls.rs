//! JPEG-LS, as EUMETSAT's FCIDECOMP filter (HDF5 filter id 32018, in hdf5plugin) stores each
//! chunk: one JPEG-LS stream (CharLS) of the chunk's `components x lines x samples`, 8 or 16
//! bits a sample, the components one scan each (interleave mode 0).
//!
//! The stream describes itself (dimensions, precision, coding parameters), hence no
//! configuration. Each scan is decoded by the `pure_jpegls` crate (library `jpegls`: ITU-T T.87
//! in pure Rust, single-component scans): a stream of several components is handed over one
//! scan at a time, each with a frame header of its own component, which is what interleave mode
//! 0 means (every scan codes one component from fresh statistics). The decoded samples are one
//! byte each when the chunk holds one byte per sample, else two, little-endian: the filter
//! hands CharLS the chunk's bytes as native 16-bit samples and gives them back the same way,
//! so the bytes are those of the little-endian machines the filter runs on. The chunk's size
//! bounds everything: a stream whose frame does not fill it exactly is an error.
//!
//! Encoding (for chunks the filter stored raw, which a manifest keeps inline re-encoded with the
//! array's codecs) writes the chunk's bytes as one component of 8-bit samples, lossless, in
//! `lines x samples` that multiply to the chunk's size: it decodes to the same bytes.
//!
//! ### Compatible Implementations
//! FCIDECOMP's `H5Zjpegls.c` (HDF5 filter 32018) over CharLS; imagecodecs' `jpegls_decode`.
//!
//! ### Specification
//! - ITU-T T.87 (ISO/IEC 14495-1): markers SOI, SOF55 (`0xFFF7`), LSE (`0xFFF8`), SOS, EOI;
//!   in an entropy-coded scan a `0xFF` byte is followed by a byte whose high bit is 0, so a
//!   `0xFF` followed by a byte of `0x80` or more is the next marker.
//!
//! ### Codec `name` (Zarr V3)
//! - `vzarr.jpegls`
//!
//! ### Codec `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "vzarr.jpegls", "configuration": {}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let codec = vzarr_core::Codec::from_zarr_json(&v).unwrap();
//! # assert_eq!(codec, vzarr_core::Codec::JpegLs);
//! ```

use zarrs::array::codec::api::CodecError;

const SOI: u8 = 0xD8;
const EOI: u8 = 0xD9;
const SOS: u8 = 0xDA;
const SOF55: u8 = 0xF7;

fn error(what: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("jpegls: {what}"))
}

/// A marker segment: its code and payload (after the length field).
struct Segment<'a> {
    marker: u8,
    payload: &'a [u8],
    /// Where the segment starts (its `0xFF`).
    start: usize,
    /// Where what follows it starts.
    end: usize,
}

/// The segment at `at` (a marker with a length field).
fn segment(stream: &[u8], at: usize) -> Result<Segment<'_>, CodecError> {
    let head = stream
        .get(at..at + 4)
        .ok_or_else(|| error(format!("stream ends at byte {at}, inside a marker")))?;
    if head[0] != 0xFF {
        return Err(error(format!("no marker at byte {at}")));
    }
    let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
    let end = at + 2 + len;
    let payload = stream
        .get(at + 4..end)
        .filter(|_| len >= 2)
        .ok_or_else(|| {
            error(format!(
                "marker 0xFF{:02X} at byte {at} runs past the stream",
                head[1]
            ))
        })?;
    Ok(Segment {
        marker: head[1],
        payload,
        start: at,
        end,
    })
}

/// Where the entropy-coded data starting at `at` ends: the next `0xFF` followed by a byte of
/// `0x80` or more.
fn scan_end(stream: &[u8], at: usize) -> usize {
    (at..stream.len().saturating_sub(1))
        .find(|&i| stream[i] == 0xFF && stream[i + 1] >= 0x80)
        .unwrap_or(stream.len())
}

/// Decodes a JPEG-LS stream to the chunk's `limit` bytes.
pub fn jpegls_decode_bounded(stream: &[u8], limit: u64) -> Result<Vec<u8>, CodecError> {
    if stream.get(..2) != Some(&[0xFF, SOI][..]) {
        return Err(error("the stream does not start with SOI"));
    }
    // Parameters before the first scan (LSE, ...), the frame header, the scans.
    let mut tables = Vec::new();
    let mut frame: Option<Segment> = None;
    let mut scans = Vec::new();
    let mut at = 2;
    loop {
        if stream.get(at..at + 2) == Some(&[0xFF, EOI][..]) {
            break;
        }
        let s = segment(stream, at)?;
        at = s.end;
        match s.marker {
            SOF55 => frame = Some(s),
            SOS => {
                let data_end = scan_end(stream, at);
                scans.push((s, at..data_end));
                at = data_end;
            }
            _ if scans.is_empty() => tables.push(s),
            _ => return Err(error(format!("marker 0xFF{:02X} between scans", s.marker))),
        }
    }
    let frame = frame.ok_or_else(|| error("no SOF55 frame header"))?;
    let f = frame.payload;
    if f.len() < 6 || f.len() != 6 + 3 * usize::from(f[5]) {
        return Err(error("a frame header of the wrong length"));
    }
    let (precision, lines, samples) = (
        f[0],
        u16::from_be_bytes([f[1], f[2]]),
        u16::from_be_bytes([f[3], f[4]]),
    );
    let ids: Vec<u8> = f[6..].chunks(3).map(|c| c[0]).collect();
    let plane = usize::from(lines) * usize::from(samples);
    let pixels = plane * ids.len();
    let limit = usize::try_from(limit).map_err(|_| error(format!("a chunk of {limit} bytes")))?;
    let width = match limit.checked_div(pixels) {
        Some(w @ (1 | 2)) if w * pixels == limit && (w == 2 || precision <= 8) => w,
        _ => {
            return Err(error(format!(
                "a frame of {} x {lines} x {samples} samples of {precision} bits does not fill \
                 the chunk's {limit} bytes",
                ids.len()
            )));
        }
    };
    if scans.len() != ids.len() {
        return Err(error(format!(
            "{} scans for {} components (only interleave mode 0, one scan a component, is read)",
            scans.len(),
            ids.len()
        )));
    }
    let mut out = vec![0u8; limit];
    let mut done = vec![false; ids.len()];
    for (sos, data) in scans {
        let p = sos.payload;
        if p.len() != 6 || p[0] != 1 {
            return Err(error(
                "a scan of several components (interleave modes 1 and 2 are not read)",
            ));
        }
        let k = ids
            .iter()
            .position(|&id| id == p[1])
            .filter(|&k| !done[k])
            .ok_or_else(|| {
                error(format!(
                    "a scan of component {} the frame does not list once",
                    p[1]
                ))
            })?;
        done[k] = true;
        // One component: SOI, the tables, a frame header of that component, the scan, EOI.
        let mut single = vec![0xFF, SOI];
        for t in &tables {
            single.extend_from_slice(&stream[t.start..t.end]);
        }
        single.extend_from_slice(&[0xFF, SOF55, 0, 11]);
        single.extend_from_slice(&f[..5]);
        single.push(1);
        single.extend_from_slice(&f[6 + 3 * k..9 + 3 * k]);
        single.extend_from_slice(&stream[sos.start..sos.end]);
        single.extend_from_slice(&stream[data]);
        single.extend_from_slice(&[0xFF, EOI]);
        let (values, _, _) = jpegls::decode(&single, u32::from(samples), u32::from(lines))
            .map_err(|e| error(format!("component {}: {e}", p[1])))?;
        let dst = &mut out[k * plane * width..(k + 1) * plane * width];
        if width == 1 {
            for (d, v) in dst.iter_mut().zip(&values) {
                *d = u8::try_from(*v)
                    .map_err(|_| error(format!("a sample of {v} in a chunk of bytes")))?;
            }
        } else {
            for (d, v) in dst.chunks_exact_mut(2).zip(&values) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(out)
}

/// Encodes `raw` as one lossless component of 8-bit samples, `lines x samples` both at most
/// 65,535 (what a JPEG-LS frame can say), which decodes to `raw`.
pub fn jpegls_encode(raw: &[u8]) -> Result<Vec<u8>, CodecError> {
    const MAX: usize = 65_535;
    let n = raw.len();
    let lines = (n.div_ceil(MAX).max(1)..=n.min(MAX))
        .find(|&l| n.is_multiple_of(l) && n / l <= MAX)
        .ok_or_else(|| {
            error(format!(
                "{n} bytes are no lines x samples of at most {MAX} each"
            ))
        })?;
    let values: Vec<u16> = raw.iter().map(|&b| u16::from(b)).collect();
    let mut opts = jpegls::EncodeOptions::default();
    opts.precision = Some(8);
    let mut out = Vec::new();
    jpegls::encode_with_options(&values, (n / lines) as u32, lines as u32, &opts, &mut out)
        .map_err(error)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG-LS stream of one component from pure_jpegls' encoder.
    fn encode(values: &[u16], samples: u32, lines: u32, precision: u8) -> Vec<u8> {
        let mut out = Vec::new();
        let mut opts = jpegls::EncodeOptions::default();
        opts.precision = Some(precision);
        jpegls::encode_with_options(values, samples, lines, &opts, &mut out).unwrap();
        out
    }

    /// The stream's segments split at its markers: SOI, then each (marker, bytes to the next).
    fn parts(stream: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 2;
        while at + 2 < stream.len() {
            let next = (at + 2..stream.len().saturating_sub(1))
                .find(|&i| stream[i] == 0xFF && stream[i + 1] >= 0x80)
                .unwrap_or(stream.len());
            let next = if stream[at + 1] == SOS {
                next
            } else {
                segment(stream, at).unwrap().end
            };
            out.push((stream[at + 1], stream[at..next].to_vec()));
            at = next;
        }
        out
    }

    fn field(n: usize, salt: u16, max: u16) -> Vec<u16> {
        (0..n)
            .map(|i| {
                ((i as u16).wrapping_mul(7).wrapping_add(salt) / 3 + (i % 5 == 0) as u16) % max
            })
            .collect()
    }

    #[test]
    fn one_component_of_16_and_8_bits() {
        let v = field(40 * 30, 11, 4000);
        let s = encode(&v, 30, 40, 16);
        let out = jpegls_decode_bounded(&s, 1000).unwrap_err().to_string();
        assert!(out.contains("does not fill"), "{out}");
        let out = jpegls_decode_bounded(&s, 40 * 30 * 2).unwrap();
        let got: Vec<u16> = out
            .chunks(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(got, v);
        let v8 = field(40 * 30, 3, 256);
        let out = jpegls_decode_bounded(&encode(&v8, 30, 40, 8), 1200).unwrap();
        assert_eq!(out, v8.iter().map(|&x| x as u8).collect::<Vec<_>>());
    }

    #[test]
    fn components_one_scan_each_back_in_planes() {
        // Three single-component streams joined into one frame of three components, as
        // CharLS writes interleave mode 0.
        let planes: Vec<Vec<u16>> = (0..3).map(|c| field(20 * 25, 100 * c, 256)).collect();
        let streams: Vec<Vec<(u8, Vec<u8>)>> = planes
            .iter()
            .map(|p| parts(&encode(p, 25, 20, 8)))
            .collect();
        let mut joined = vec![0xFF, SOI];
        let (_, sof) = streams[0].iter().find(|(m, _)| *m == SOF55).unwrap();
        joined.extend_from_slice(&[0xFF, SOF55, 0, 17]);
        joined.extend_from_slice(&sof[4..9]);
        joined.push(3);
        for id in 1..=3u8 {
            joined.extend_from_slice(&[id, 0x11, 0]);
        }
        for (c, parts) in streams.iter().enumerate().rev() {
            for (m, bytes) in parts {
                if *m == SOS {
                    let mut b = bytes.clone();
                    b[5] = c as u8 + 1;
                    joined.extend_from_slice(&b);
                }
            }
        }
        joined.extend_from_slice(&[0xFF, EOI]);
        let out = jpegls_decode_bounded(&joined, 3 * 500).unwrap();
        let want: Vec<u8> = planes.concat().iter().map(|&x| x as u8).collect();
        assert_eq!(out, want);
        assert!(jpegls_decode_bounded(&joined, 3 * 500 * 2).is_ok());
        assert!(jpegls_decode_bounded(&joined, 2 * 500).is_err());
    }

    #[test]
    fn encoded_bytes_decode_to_themselves() {
        for n in [1usize, 2, 97, 4096, 65_521, 131_072, 400_000] {
            let raw: Vec<u8> = (0..n)
                .map(|i| (i * 31 % 251) as u8 ^ (i >> 9) as u8)
                .collect();
            let s = jpegls_encode(&raw).unwrap();
            assert_eq!(jpegls_decode_bounded(&s, n as u64).unwrap(), raw, "{n}");
        }
        // A prime above 65,535 has no such lines x samples.
        assert!(jpegls_encode(&vec![0; 65_537]).is_err());
    }

    #[test]
    fn damaged_streams_are_errors_or_the_chunk() {
        let v = field(32 * 32, 5, 65535);
        let s = encode(&v, 32, 32, 16);
        for cut in 0..s.len() {
            assert!(jpegls_decode_bounded(&s[..cut], 2048).is_err(), "cut {cut}");
        }
        for at in 0..s.len() {
            for flip in [0xFF, 0x80, 0x01] {
                let mut m = s.clone();
                m[at] ^= flip;
                if let Ok(out) = jpegls_decode_bounded(&m, 2048) {
                    assert_eq!(out.len(), 2048);
                }
            }
        }
        assert!(jpegls_decode_bounded(b"\xff\xd8\xff\xc0\x00\x02\xff\xd9", 4).is_err());
    }
}
