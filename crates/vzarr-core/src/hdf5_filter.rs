//! The codec of each HDF5 filter vzarr maps: the filter's id and client data values (its
//! `cd_values`) read into a [`Codec`], or the reason none is mapped.
//!
//! Specification: the HDF Group's registry of filter ids
//! (<https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md>) and
//! each filter's own source, cited where its client data values are read.

use crate::codec::{BitshuffleCompression, BloscShuffle, Codec};
use crate::{DataType, Endian};

/// Name of an HDF5 filter id (the registered filter ids of the HDF Group), for messages.
pub fn hdf5_filter_name(id: u32) -> &'static str {
    match id {
        1 => "deflate",
        2 => "shuffle",
        3 => "fletcher32",
        4 => "szip",
        5 => "N-bit",
        6 => "scale-offset",
        305 => "LZO",
        307 => "bzip2",
        32000 => "LZF",
        32001 => "blosc",
        32004 => "LZ4",
        32008 => "bitshuffle",
        32013 => "zfp",
        32015 => "zstd",
        32017 => "SZ",
        32018 => "FCIDECOMP (JPEG-LS)",
        32024 => "SZ3",
        32026 => "blosc2",
        32028 => "SPERR",
        32033 => "HTJ2K",
        _ => "unknown",
    }
}

/// hdf5plugin's HTJ2K filter (h5z-htj2k): client data values (version 1) are the filter's
/// version, the data type (1 uint8, 2 uint16, +128 signed, +256 big-endian), the image's width,
/// height and components; version 0 files have none and hold little-endian samples. The
/// codestream repeats the image's geometry; the byte order of 16-bit samples is only here.
fn htj2k_codec(cd: &[u32], dt: &DataType) -> Result<Codec, String> {
    if !matches!(
        dt,
        DataType::Int8 | DataType::UInt8 | DataType::Int16 | DataType::UInt16
    ) {
        return Err(format!(
            "HTJ2K filter on {} elements (it writes 8- and 16-bit integers only)",
            dt.name()
        ));
    }
    let endian = match cd {
        [] => Endian::Little,
        [1, dtype, ..] if dtype & 0x100 != 0 => Endian::Big,
        [1, ..] => Endian::Little,
        [version, ..] => return Err(format!("HTJ2K filter version {version}")),
    };
    Ok(Codec::Htj2k { endian })
}

fn blosc_cname(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "blosclz",
        1 => "lz4",
        2 => "lz4hc",
        3 => "snappy",
        4 => "zlib",
        5 => "zstd",
        _ => return None,
    })
}

impl Codec {
    /// The codec of one HDF5 filter (`id` with its client data values `cd`) in the pipeline
    /// of a dataset of type `dt`, or why zarr-python 3.4 has none that decodes it. Client
    /// data values a filter leaves out take the defaults the filter's own code uses.
    pub fn from_hdf5_filter(id: u32, cd: &[u32], dt: DataType) -> Result<Codec, String> {
        Ok(match id {
            1 => Codec::Zlib {
                level: cd.first().copied().unwrap_or(6),
            },
            2 => Codec::Shuffle {
                element_size: cd.first().map_or(dt.size(), |&s| s as usize).max(1),
            },
            3 => Codec::Fletcher32,
            32001 => {
                // cd_values: filter revision, blosc version, typesize, buffer size, clevel,
                // shuffle, compressor.
                let typesize = cd.get(2).copied().unwrap_or(dt.size() as u32) as usize;
                let clevel = cd.get(4).copied().unwrap_or(5);
                let shuffle = match cd.get(5).copied().unwrap_or(1) {
                    0 => BloscShuffle::NoShuffle,
                    2 => BloscShuffle::BitShuffle,
                    _ => BloscShuffle::Shuffle,
                };
                let code = cd.get(6).copied().unwrap_or(0);
                let cname = blosc_cname(code)
                    .ok_or_else(|| format!("blosc filter with unknown compressor code {code}"))?;
                Codec::Blosc {
                    cname: cname.into(),
                    clevel,
                    shuffle,
                    typesize,
                    blocksize: 0,
                }
            }
            32015 => Codec::Zstd {
                level: cd.first().map_or(3, |&l| l as i32),
            },
            // cd_values: the block size (100k units, 1-9), else 9 (H5Zbzip2.c).
            307 => Codec::Bz2 {
                level: cd
                    .first()
                    .copied()
                    .filter(|l| (1..=9).contains(l))
                    .unwrap_or(9),
            },
            // cd_values (h5py's lzf_filter.c): filter version, LZF version, chunk bytes;
            // decoding needs none of them.
            32000 => Codec::Lzf,
            // cd_values: the block size, for encoding only (the framing carries it).
            32004 => Codec::Lz4Hdf5,
            // cd_values: revision, block size, type size, chunk bytes, level, shuffle, codec,
            // then the chunk's rank and shape for B2ND; the frame repeats all decoding needs.
            32026 => Codec::Blosc2Hdf5,
            // cd_values (PyTables' H5Zlzo.c): level, object version, object type; unused.
            305 => Codec::Lzo,
            // cd_values (H5Zjpegls.c): bytes a sample, components, lines, samples, then
            // CharLS' parameters; the stream repeats all decoding needs.
            32018 => Codec::JpegLs,
            32033 => htj2k_codec(cd, &dt)?,
            32013 => crate::hdf5_zfp::zfp_codec(cd, dt.size())?,
            // cd_values (H5Zszip.c, after its set_local): the option mask, pixels per block,
            // bits per pixel, pixels per scanline.
            4 => match *cd {
                [
                    options_mask,
                    pixels_per_block,
                    bits_per_pixel,
                    pixels_per_scanline,
                    ..,
                ] => Codec::Szip {
                    options_mask,
                    pixels_per_block,
                    bits_per_pixel,
                    pixels_per_scanline,
                },
                _ => return Err(format!("szip filter with {} client data values", cd.len())),
            },
            32008 => {
                // cd_values (bshuf_h5filter.c): bitshuffle's major and minor version, the
                // element size, the block size in elements (0: default), the compression
                // (0: none, 2: LZ4, 3: zstd) and the zstd level.
                let compression = match cd.get(4).copied().unwrap_or(0) {
                    0 => BitshuffleCompression::None,
                    2 => BitshuffleCompression::Lz4,
                    3 => BitshuffleCompression::Zstd,
                    c => return Err(format!("bitshuffle filter with unknown compression {c}")),
                };
                let element_size = cd.get(2).map_or(dt.size(), |&s| s as usize);
                if element_size == 0 {
                    return Err("bitshuffle filter with element size 0".into());
                }
                let block_size = cd.get(3).copied().unwrap_or(0) as usize;
                if !block_size.is_multiple_of(8) {
                    return Err(format!(
                        "bitshuffle filter with a block size of {block_size} elements (not a \
                         multiple of 8)"
                    ));
                }
                Codec::Bitshuffle {
                    element_size,
                    block_size,
                    compression,
                    level: match compression {
                        BitshuffleCompression::Zstd => cd.get(5).map_or(3, |&l| l as i32),
                        _ => 0,
                    },
                }
            }
            other => {
                return Err(format!(
                    "unsupported filter {} (HDF5 filter id {other}): no Zarr codec that both \
                     zarr-python 3.4 and vzarr decode",
                    hdf5_filter_name(other)
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn third_party_filters() {
        let f = |id, cd: &[u32]| Codec::from_hdf5_filter(id, cd, DataType::Float32);
        assert_eq!(f(307, &[5]).unwrap(), Codec::Bz2 { level: 5 });
        assert_eq!(f(307, &[]).unwrap(), Codec::Bz2 { level: 9 });
        assert_eq!(f(32000, &[4, 261, 4000]).unwrap(), Codec::Lzf);
        assert_eq!(f(32004, &[]).unwrap(), Codec::Lz4Hdf5);
        assert_eq!(f(305, &[1, 23, 0]).unwrap(), Codec::Lzo);
        assert_eq!(f(32018, &[2, 1, 100, 200, 16, 1]).unwrap(), Codec::JpegLs);
        let h = |cd: &[u32], dt| Codec::from_hdf5_filter(32033, cd, dt);
        assert_eq!(
            h(&[1, 258, 512, 257, 1], DataType::UInt16).unwrap(),
            Codec::Htj2k {
                endian: Endian::Big
            }
        );
        assert_eq!(
            h(&[], DataType::Int16).unwrap(),
            Codec::Htj2k {
                endian: Endian::Little
            }
        );
        assert!(h(&[2, 2, 4, 4, 1], DataType::UInt16).is_err());
        assert!(f(32033, &[1, 2, 4, 4, 1]).is_err());
        assert_eq!(
            f(32026, &[1, 0, 4, 64, 5, 1, 0]).unwrap(),
            Codec::Blosc2Hdf5
        );
        assert_eq!(
            f(32008, &[0, 3, 4, 0, 2]).unwrap(),
            Codec::Bitshuffle {
                element_size: 4,
                block_size: 0,
                compression: BitshuffleCompression::Lz4,
                level: 0
            }
        );
        assert_eq!(
            f(32008, &[0, 4, 2, 64, 3, 10]).unwrap().to_zarr_json(),
            json!({"name": "vzarr.bitshuffle", "configuration":
                {"elementsize": 2, "blocksize": 64, "compression": "zstd", "level": 10}})
        );
        assert_eq!(
            f(32008, &[0, 4]).unwrap().to_zarr_json().to_string(),
            r#"{"name":"vzarr.bitshuffle","configuration":{"elementsize":4,"blocksize":0,"compression":"none"}}"#
        );
        assert!(f(32008, &[0, 4, 4, 12, 2]).is_err());
        assert!(f(32008, &[0, 4, 4, 0, 1]).is_err());
        assert_eq!(
            f(32024, &[]).unwrap_err(),
            "unsupported filter SZ3 (HDF5 filter id 32024): no Zarr codec that both zarr-python \
             3.4 and vzarr decode"
        );
        // Levels do not change decoding; bitshuffle's block size and compression do.
        assert!(Codec::Bz2 { level: 1 }.decodes_like(&Codec::Bz2 { level: 9 }));
        assert!(!Codec::Lzf.decodes_like(&Codec::Lz4Hdf5));
        let b = |block_size, level| Codec::Bitshuffle {
            element_size: 4,
            block_size,
            compression: BitshuffleCompression::Zstd,
            level,
        };
        assert!(b(0, 3).decodes_like(&b(0, 9)));
        assert!(!b(0, 3).decodes_like(&b(64, 3)));
    }
}
