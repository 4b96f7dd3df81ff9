//! Reading chunk and array bytes through a manifest, for the planner's checks and re-encoding;
//! numbers to and from the bytes of numeric types.

use std::collections::BTreeMap;
use std::ops::Range;

use vzarr_codec::{ByteCodecs, vlen_utf8};
use vzarr_core::{ChunkRef, DataType, Endian, VirtualArray};
use vzarr_source::SourceStore;

use crate::error::ReadError;

/// The encoded bytes of chunk `i`, or `None` when it is not stored.
pub(crate) fn encoded_chunk(
    array: &VirtualArray,
    i: usize,
    reader: &dyn SourceStore,
) -> Result<Option<Vec<u8>>, ReadError> {
    match array.manifest.get(i) {
        ChunkRef::Missing => Ok(None),
        ChunkRef::Inline(b) => Ok(Some(b.to_vec())),
        ChunkRef::Range {
            source,
            offset,
            length,
        } => {
            if let Some(b) = array.manifest.fetched(i) {
                return Ok(Some(b.to_vec()));
            }
            let end = offset
                .checked_add(length)
                .ok_or(ReadError::RangeOverflow { chunk: i })?;
            Ok(Some(reader.open(source)?.read(offset..end)?.to_vec()))
        }
    }
}

/// The elements of a string chunk of nominal shape `shape` from its encoded bytes (the fill
/// value when `None`). String chunks with codecs after `vlen-utf8` are refused: vzarr writes
/// none, and their decoded size cannot be bounded before decoding.
pub(crate) fn string_chunk(
    array: &VirtualArray,
    codecs: &ByteCodecs,
    shape: &[u64],
    enc: Option<Vec<u8>>,
) -> Result<Vec<String>, ReadError> {
    // Each element takes at least 4 bytes encoded.
    let n = chunk_bytes(shape, 4)? / 4;
    let Some(enc) = enc else {
        let fill = array
            .fill_value
            .as_text(array.data_type.clone())
            .unwrap_or_default();
        return Ok(vec![fill.to_string(); n]);
    };
    if !codecs.is_empty() {
        return Err(ReadError::Codec(vzarr_codec::CodecError::Unsupported(
            "vlen-utf8".into(),
            "string chunks with further codecs are not decoded here".into(),
        )));
    }
    Ok(vlen_utf8::decode(&enc, n)?)
}

/// Number of bytes of a chunk of `shape` with elements of `esize` bytes.
pub(crate) fn chunk_bytes(shape: &[u64], esize: usize) -> Result<usize, ReadError> {
    shape
        .iter()
        .try_fold(esize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
        .filter(|&n| n <= 1 << 32)
        .ok_or_else(|| ReadError::ChunkTooLarge {
            shape: shape.to_vec(),
        })
}

/// The raw bytes (stored byte order, nominal chunk shape) of chunk `i`; the fill value when
/// the chunk is not stored.
pub(crate) fn raw_chunk(
    array: &VirtualArray,
    codecs: &ByteCodecs,
    i: usize,
    reader: &dyn SourceStore,
) -> Result<Vec<u8>, ReadError> {
    decode_chunk(array, codecs, i, encoded_chunk(array, i, reader)?)
}

/// Decodes the encoded bytes `enc` of chunk `i` (the fill value when `None`). The "raw" bytes
/// of a string chunk are its elements as a `vlen-utf8` chunk ([`vzarr_codec::vlen_utf8`]),
/// checked and in the one encoding a list of strings has, so equal values give equal bytes.
pub(crate) fn decode_chunk(
    array: &VirtualArray,
    codecs: &ByteCodecs,
    i: usize,
    enc: Option<Vec<u8>>,
) -> Result<Vec<u8>, ReadError> {
    let index = array.grid.chunk_index(i as u64);
    let shape = array.grid.chunk_shape(&index);
    if array.data_type.is_string() {
        return Ok(vlen_utf8::encode(&string_chunk(
            array, codecs, &shape, enc,
        )?)?);
    }
    let n = chunk_bytes(&shape, array.data_type.size())?;
    match enc {
        None => Ok(array
            .fill_value
            .bytes_in(array.data_type.clone(), array.endian)
            .repeat(n / array.data_type.size().max(1))),
        Some(enc) => Ok(codecs.decode(&enc, n)?),
    }
}

/// The encoded bytes of every chunk (`None` when not stored); the ranges of each source are
/// read with one [`vzarr_source::ByteSource::read_ranges`], so the records of a NetCDF3 record
/// variable, a few hundred bytes apart, take one read rather than one each.
fn encoded_chunks(
    array: &VirtualArray,
    reader: &dyn SourceStore,
) -> Result<Vec<Option<Vec<u8>>>, ReadError> {
    let n = array.manifest.len();
    let mut out: Vec<Option<Vec<u8>>> = vec![None; n];
    let mut by_source: BTreeMap<&str, (Vec<usize>, Vec<Range<u64>>)> = BTreeMap::new();
    for (i, slot) in out.iter_mut().enumerate() {
        match array.manifest.get(i) {
            ChunkRef::Missing => {}
            ChunkRef::Inline(b) => *slot = Some(b.to_vec()),
            ChunkRef::Range { .. } if array.manifest.fetched(i).is_some() => {
                *slot = array.manifest.fetched(i).map(|b| b.to_vec());
            }
            ChunkRef::Range {
                source,
                offset,
                length,
            } => {
                let end = offset
                    .checked_add(length)
                    .ok_or(ReadError::RangeOverflow { chunk: i })?;
                let e = by_source.entry(source).or_default();
                e.0.push(i);
                e.1.push(offset..end);
            }
        }
    }
    for (source, (chunks, ranges)) in by_source {
        let bytes = reader.open(source)?.read_ranges(&ranges)?;
        for (i, b) in chunks.into_iter().zip(bytes) {
            out[i] = Some(b.to_vec());
        }
    }
    Ok(out)
}

/// The whole array as raw bytes in C order (stored byte order).
pub(crate) fn read_array(
    array: &VirtualArray,
    reader: &dyn SourceStore,
) -> Result<Vec<u8>, ReadError> {
    assemble(array, encoded_chunks(array, reader)?)
}

/// The whole array as raw bytes in C order (stored byte order) from the encoded bytes of
/// every chunk (`None` when not stored).
pub(crate) fn assemble(
    array: &VirtualArray,
    encoded: Vec<Option<Vec<u8>>>,
) -> Result<Vec<u8>, ReadError> {
    let codecs = ByteCodecs::new(&array.codecs)?;
    let shape = array.shape();
    let esize = array.data_type.size();
    let total = chunk_bytes(&shape, esize)?;
    let mut out = vec![0u8; total];
    if total == 0 {
        return Ok(out);
    }
    let ndim = shape.len();
    for (i, enc) in encoded.into_iter().enumerate() {
        let raw = decode_chunk(array, &codecs, i, enc)?;
        let index = array.grid.chunk_index(i as u64);
        let cshape = array.grid.chunk_shape(&index);
        let origin = array.grid.chunk_origin(&index);
        let valid = array.grid.chunk_valid_shape(&index);
        if ndim == 0 {
            out.copy_from_slice(&raw[..esize]);
            continue;
        }
        // Copy runs along the last axis: one per index of the leading valid region.
        let run = valid[ndim - 1] as usize * esize;
        let lead: u64 = valid[..ndim - 1].iter().product();
        let mut pos = vec![0u64; ndim - 1];
        for _ in 0..lead {
            let mut src = 0u64;
            let mut dst = 0u64;
            for k in 0..ndim - 1 {
                src = src * cshape[k] + pos[k];
                dst = dst * shape[k] + origin[k] + pos[k];
            }
            let src = (src * cshape[ndim - 1]) as usize * esize;
            let dst = (dst * shape[ndim - 1] + origin[ndim - 1]) as usize * esize;
            out[dst..dst + run].copy_from_slice(&raw[src..src + run]);
            for k in (0..ndim - 1).rev() {
                pos[k] += 1;
                if pos[k] < valid[k] {
                    break;
                }
                pos[k] = 0;
            }
        }
    }
    Ok(out)
}

/// Elements of a numeric type as f64 (integers beyond 2^53 lose precision).
pub(crate) fn as_f64(bytes: &[u8], dt: DataType, endian: Endian) -> Result<Vec<f64>, ReadError> {
    let size = dt.size();
    if size == 0 || matches!(dt, DataType::FixedBytes(_) | DataType::Bool) {
        return Err(ReadError::NotNumeric { data_type: dt });
    }
    Ok(bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            if endian == Endian::Big {
                b[..size].reverse();
            }
            match dt {
                DataType::Int8 => f64::from(b[0] as i8),
                DataType::UInt8 => f64::from(b[0]),
                DataType::Int16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
                DataType::UInt16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
                DataType::Int32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                DataType::UInt32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                DataType::Int64 => i64::from_le_bytes(b) as f64,
                DataType::UInt64 => u64::from_le_bytes(b) as f64,
                DataType::Float16 => vzarr_core::half_to_f64(u16::from_le_bytes([b[0], b[1]])),
                DataType::Float32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => f64::from_le_bytes(b),
            }
        })
        .collect())
}

/// Values encoded as little-endian elements of `dt` (a numeric type); `None` if a value does
/// not fit exactly.
pub(crate) fn from_f64(values: &[f64], dt: DataType) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(values.len() * dt.size());
    for &v in values {
        let exact_int = |lo: f64, hi: f64| v.fract() == 0.0 && v >= lo && v <= hi;
        match dt {
            DataType::Float64 => out.extend(v.to_le_bytes()),
            DataType::Float32 => {
                let f = v as f32;
                if f64::from(f) != v && !v.is_nan() {
                    return None;
                }
                out.extend(f.to_le_bytes());
            }
            DataType::Int8 if exact_int(-128.0, 127.0) => out.extend((v as i8).to_le_bytes()),
            DataType::Int16 if exact_int(-32768.0, 32767.0) => out.extend((v as i16).to_le_bytes()),
            DataType::Int32 if exact_int(-2_147_483_648.0, 2_147_483_647.0) => {
                out.extend((v as i32).to_le_bytes())
            }
            DataType::Int64 if exact_int(-9.007_199_254_740_992e15, 9.007_199_254_740_992e15) => {
                out.extend((v as i64).to_le_bytes())
            }
            DataType::UInt8 if exact_int(0.0, 255.0) => out.push(v as u8),
            DataType::UInt16 if exact_int(0.0, 65535.0) => out.extend((v as u16).to_le_bytes()),
            DataType::UInt32 if exact_int(0.0, 4_294_967_295.0) => {
                out.extend((v as u32).to_le_bytes())
            }
            DataType::UInt64 if exact_int(0.0, 9.007_199_254_740_992e15) => {
                out.extend((v as u64).to_le_bytes())
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Keeps the first `keep` indices along `axis` of a C-order chunk of `shape` whose elements
/// are items of a list (strings).
pub(crate) fn slice_prefix_items<T: Clone>(
    items: &[T],
    shape: &[u64],
    axis: usize,
    keep: u64,
) -> Vec<T> {
    slice_prefix_units(items, shape, axis, keep, 1)
}

/// Keeps the first `keep` indices along `axis` of a C-order chunk of `shape`.
pub(crate) fn slice_prefix(
    raw: &[u8],
    shape: &[u64],
    axis: usize,
    keep: u64,
    esize: usize,
) -> Vec<u8> {
    slice_prefix_units(raw, shape, axis, keep, esize)
}

/// Keeps the first `keep` indices along `axis` of a C-order chunk of `shape` whose elements
/// are `unit` consecutive items of `items` each.
fn slice_prefix_units<T: Clone>(
    items: &[T],
    shape: &[u64],
    axis: usize,
    keep: u64,
    unit: usize,
) -> Vec<T> {
    let outer: u64 = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product::<u64>() as usize * unit;
    let stride = shape[axis] as usize * inner;
    let run = keep as usize * inner;
    let mut out = Vec::with_capacity(outer as usize * run);
    for o in 0..outer as usize {
        out.extend_from_slice(&items[o * stride..o * stride + run]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_prefix_keeps_leading_rows() {
        // shape (2, 3, 2) of u8, keep 2 of 3 along axis 1.
        let raw: Vec<u8> = (0..12).collect();
        assert_eq!(
            slice_prefix(&raw, &[2, 3, 2], 1, 2, 1),
            vec![0, 1, 2, 3, 6, 7, 8, 9]
        );
        assert_eq!(
            slice_prefix(&raw, &[2, 3, 2], 0, 1, 1),
            (0..6).collect::<Vec<u8>>()
        );
        assert_eq!(
            slice_prefix(&raw, &[2, 3, 2], 2, 1, 1),
            vec![0, 2, 4, 6, 8, 10]
        );
    }

    #[test]
    fn slice_prefix_items_matches_the_bytes_version() {
        let raw: Vec<u8> = (0..12).collect();
        for (axis, keep) in [(0, 1), (1, 2), (2, 1)] {
            assert_eq!(
                slice_prefix_items(&raw, &[2, 3, 2], axis, keep),
                slice_prefix(&raw, &[2, 3, 2], axis, keep, 1)
            );
        }
    }

    #[test]
    fn string_chunks_decode_to_their_canonical_bytes_or_the_fill() {
        use vzarr_core::{ChunkGrid, ChunkManifest, FillValue};
        let a = VirtualArray {
            data_type: DataType::String,
            endian: Endian::Little,
            fill_value: FillValue::from_text("NA"),
            codecs: vec![],
            dimension_names: vec!["t".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[3], &[2]).unwrap(),
            manifest: ChunkManifest::new_missing(2),
        };
        let c = ByteCodecs::new(&[]).unwrap();
        let enc = vlen_utf8::encode(&["x", "y"]).unwrap();
        assert_eq!(decode_chunk(&a, &c, 0, Some(enc.clone())).unwrap(), enc);
        assert_eq!(
            decode_chunk(&a, &c, 1, None).unwrap(),
            vlen_utf8::encode(&["NA", "NA"]).unwrap()
        );
        assert!(decode_chunk(&a, &c, 0, Some(vec![1, 0, 0, 0])).is_err());
    }

    #[test]
    fn numbers_round_trip() {
        let v = [1.0, -2.0, 30.0];
        for dt in [
            DataType::Int16,
            DataType::Int32,
            DataType::Float32,
            DataType::Float64,
            DataType::Int64,
        ] {
            let b = from_f64(&v, dt.clone()).unwrap();
            assert_eq!(as_f64(&b, dt, Endian::Little).unwrap(), v);
        }
        assert!(from_f64(&[0.5], DataType::Int32).is_none());
        assert!(from_f64(&[300.0], DataType::UInt8).is_none());
        assert!(from_f64(&[0.1], DataType::Float32).is_none());
        let be = [0u8, 0, 0, 5];
        assert_eq!(
            as_f64(&be, DataType::Int32, Endian::Big).unwrap(),
            vec![5.0]
        );
    }
}
