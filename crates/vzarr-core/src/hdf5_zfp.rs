//! The client data of H5Z-ZFP (HDF5 filter 32013) read into a [`Codec::ZfpHdf5`].
//!
//! H5Z-ZFP keeps no header in its chunks: its `set_local` writes zfp's full header (magic,
//! field metadata, compression mode) into the client data values 1.., the value 0 holding the
//! versions of the filter and of zfp; each chunk is then a bare zfp stream of a field of the
//! chunk's dimensions other than 1 (in HDF5's order, the last fastest). The header is read with
//! `zfp-rs` (a pure-Rust zfp). Values written on a big-endian machine hold the header
//! byte-swapped, and the filter hands out big-endian values then (H5Z-ZFP's `swap`).
//!
//! Specification: H5Z-ZFP's `H5Zzfp.c` (`H5Z_zfp_set_local`, `get_zfp_info_from_cd_values`,
//! `H5Z_filter_zfp`) and zfp's header format (<https://zfp.readthedocs.io/en/latest/>).

use zfp_rs::{ZfpBitStream, ZfpHeaderMask, ZfpScalarType};

use crate::codec::{Codec, ZfpType};

/// The zfp codec version zfp-rs reads (zfp 0.5 and later).
const ZFP_CODEC: u32 = 5;

fn header(words: &[u32]) -> Option<zfp_rs::ZfpHeader> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    ZfpBitStream::from_bytes(&bytes)
        .ok()?
        .read_header(ZfpHeaderMask::FULL)
        .ok()
}

/// The zfp codec version of the streams, from the client data's value 0 (H5Z-ZFP's
/// `zfp_codec_version_mismatch`): bits 0-11 hold the filter's version, 12-15 the codec (from
/// filter version 1.1.0), 16-31 zfp's version, from which older filters' codec is inferred.
fn writer_codec(versions: u32) -> u32 {
    let filter = versions & 0xfff;
    if filter >= 0x110 {
        return (versions >> 12) & 0xf;
    }
    let zfp = ((versions >> 16) & 0xffff) << 4;
    match zfp {
        z if z < 0x0500 => 4,
        z if z < 0x1000 => (z & 0x0f00) >> 8,
        _ => 5,
    }
}

/// The codec of an H5Z-ZFP pipeline entry with client data `cd`, in a dataset whose values
/// are `value_size` bytes each.
pub(crate) fn zfp_codec(cd: &[u32], value_size: usize) -> Result<Codec, String> {
    let Some((&versions, words)) = cd.split_first() else {
        return Err("zfp filter without its header in the client data".into());
    };
    let codec = writer_codec(versions);
    if codec > ZFP_CODEC {
        return Err(format!(
            "zfp filter whose streams are of zfp codec {codec}, newer than the codec {ZFP_CODEC} \
             vzarr decodes (the filter's versions {versions:#x})"
        ));
    }
    let (h, big_endian) = match header(words) {
        Some(h) => (h, false),
        None => {
            let swapped: Vec<u32> = words.iter().map(|w| w.swap_bytes()).collect();
            match header(&swapped) {
                Some(h) => (h, true),
                None => {
                    return Err(format!(
                        "zfp filter whose header zfp (codec {ZFP_CODEC}) cannot read (the \
                         filter's versions {versions:#x}, codec {codec})"
                    ));
                }
            }
        }
    };
    let (Some(meta), Some(config)) = (h.metadata, h.config) else {
        return Err("zfp filter header without field or mode".into());
    };
    let scalar = match meta.scalar_type {
        ZfpScalarType::I32 => ZfpType::Int32,
        ZfpScalarType::I64 => ZfpType::Int64,
        ZfpScalarType::F32 => ZfpType::Float32,
        ZfpScalarType::F64 => ZfpType::Float64,
    };
    if scalar.size() != value_size {
        return Err(format!(
            "zfp filter with {} values in a dataset of {value_size}-byte values",
            scalar.as_str()
        ));
    }
    // zfp's dimensions are [nx, ny, nz, nw] (nx fastest); the shape is in C order.
    let shape: Vec<usize> = meta.dims.iter().rev().copied().filter(|&d| d > 0).collect();
    Ok(Codec::ZfpHdf5 {
        scalar,
        shape,
        min_bits: config.min_bits(),
        max_bits: config.max_bits(),
        max_prec: config.max_prec(),
        min_exp: config.min_exp(),
        big_endian,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_client_data_of_every_filter_version() {
        // Client data of H5Z-ZFP's test files in the hdf5plugin 7.1.0 sdist (filter 0.3.0
        // with zfp 0.4.0 and 0.5.3, filter 1.1.0 with zfp 1.0.0, both byte orders), as h5py
        // lists them: 1-D float64 fields of 256 values in rate, accuracy and expert modes.
        let files: [(&str, &[u32], bool); 7] = [
            ("030040", &[4194352, 91252346, 4083, 49283072], false),
            (
                "030235",
                &[37027888, 91252346, 4083, 4293918720, 3767042048, 34735],
                false,
            ),
            ("050", &[5243024, 91252346, 4083, 2171600896], false),
            ("054", &[5505168, 91252346, 4083, 2171600896], false),
            ("110050", &[83906832, 91252346, 4083, 49283072], false),
            ("le", &[5242912, 91252346, 4083, 2213543936], false),
            ("be", &[5242912, 2053533701, 4077846528, 61571], true),
        ];
        for (name, cd, be) in files {
            let Codec::ZfpHdf5 {
                scalar,
                shape,
                big_endian,
                ..
            } = zfp_codec(cd, 8).unwrap_or_else(|e| panic!("{name}: {e}"))
            else {
                panic!("{name}")
            };
            assert_eq!(
                (scalar, shape, big_endian),
                (ZfpType::Float64, vec![256], be)
            );
        }
        // test_zfp_110xxx.h5: streams of zfp codec 7, which H5Z-ZFP refuses to read too.
        let e = zfp_codec(&[268464400, 91252346, 4083, 49283072], 8).unwrap_err();
        assert!(e.contains("codec 7"), "{e}");
        assert!(zfp_codec(&[5242912, 91252346, 4083, 2213543936], 4).is_err());
        assert!(zfp_codec(&[5242912, 1, 2, 3], 8).is_err());
        assert!(zfp_codec(&[], 8).is_err());
        assert_eq!(writer_codec(0x0050_0020), 5);
    }
}
