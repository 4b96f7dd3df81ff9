//! HDF5 filter pipelines mapped to Zarr v3 codecs (after `bytes`, in pipeline order), or the
//! reason a pipeline has no codecs that zarr-python 3.4 decodes.

use std::ffi::c_uint;

use hdf5_sys::h5i::hid_t;
use vzarr_core::{BloscShuffle, Codec, DataType};

use crate::ffi;

/// Name of an HDF5 filter id, for messages.
pub(crate) fn filter_name(id: i32) -> &'static str {
    match id {
        1 => "deflate",
        2 => "shuffle",
        3 => "fletcher32",
        4 => "szip",
        5 => "N-bit",
        6 => "scale-offset",
        307 => "bzip2",
        32000 => "LZF",
        32001 => "blosc",
        32004 => "LZ4",
        32008 => "bitshuffle",
        32013 => "zfp",
        32015 => "zstd",
        32017 => "sz",
        32024 => "sz3",
        32026 => "blosc2",
        _ => "unknown",
    }
}

fn blosc_cname(code: c_uint) -> Option<&'static str> {
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

/// The codecs after `bytes` for a dataset's filter pipeline, or why it cannot be mapped.
pub(crate) fn codecs(dcpl: hid_t, dt: DataType) -> Result<Vec<Codec>, String> {
    let n = ffi::plist::nfilters(dcpl);
    if n < 0 {
        return Err("filter pipeline unreadable".into());
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as u32 {
        let Some(filter) = ffi::plist::filter(dcpl, i) else {
            return Err(format!("filter {i} of the pipeline unreadable"));
        };
        let cd = filter.cd_values.as_slice();
        let codec = match filter.id {
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
                let typesize = cd.get(2).copied().unwrap_or(dt.size() as c_uint) as usize;
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
            other => {
                return Err(format!(
                    "unsupported filter {} (HDF5 filter id {other}): zarr-python 3.4 has no codec \
                     that decodes it",
                    filter_name(other)
                ));
            }
        };
        out.push(codec);
    }
    Ok(out)
}
