//! HDF5 filter pipelines mapped to Zarr v3 codecs (after `bytes`, in pipeline order, one
//! codec per filter), or the reason a pipeline has no codecs that zarr-python 3.4 decodes.

use vzarr_core::{BloscShuffle, Codec, DataType};
use vzarr_hdf5_format::FilterPipeline;

/// Name of an HDF5 filter id, for messages.
pub(crate) fn filter_name(id: u16) -> &'static str {
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

/// Most client data values of one filter the libhdf5 scanner reads (`H5Pget_filter2` with a
/// buffer of 32); values past them fall back to the defaults below, as they do there.
const MAX_CD_VALUES: usize = 32;

/// The codecs after `bytes` for a dataset's filter pipeline (none without a pipeline), or why
/// it cannot be mapped.
pub(crate) fn codecs(
    pipeline: Option<&FilterPipeline>,
    dt: DataType,
) -> Result<Vec<Codec>, String> {
    let Some(pipeline) = pipeline else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(pipeline.filters.len());
    for filter in &pipeline.filters {
        let cd = &filter.client_data[..filter.client_data.len().min(MAX_CD_VALUES)];
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

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_hdf5_format::Filter;

    fn pipeline(filters: &[(u16, &[u32])]) -> FilterPipeline {
        FilterPipeline {
            version: 2,
            filters: filters
                .iter()
                .map(|(id, cd)| Filter {
                    id: *id,
                    name: None,
                    flags: 0,
                    client_data: cd.to_vec(),
                })
                .collect(),
        }
    }

    #[test]
    fn maps_the_supported_filters_in_order() {
        let p = pipeline(&[(2, &[4]), (1, &[5]), (3, &[])]);
        assert_eq!(
            codecs(Some(&p), DataType::Float32).unwrap(),
            vec![
                Codec::Shuffle { element_size: 4 },
                Codec::Zlib { level: 5 },
                Codec::Fletcher32
            ]
        );
        assert_eq!(codecs(None, DataType::Int8).unwrap(), vec![]);
        // Defaults when client data is missing.
        let p = pipeline(&[(2, &[]), (1, &[]), (32015, &[])]);
        assert_eq!(
            codecs(Some(&p), DataType::Int16).unwrap(),
            vec![
                Codec::Shuffle { element_size: 2 },
                Codec::Zlib { level: 6 },
                Codec::Zstd { level: 3 }
            ]
        );
    }

    #[test]
    fn blosc_and_refusals() {
        let p = pipeline(&[(32001, &[2, 2, 4, 4800, 5, 1, 1])]);
        assert_eq!(
            codecs(Some(&p), DataType::Float32).unwrap(),
            vec![Codec::Blosc {
                cname: "lz4".into(),
                clevel: 5,
                shuffle: BloscShuffle::Shuffle,
                typesize: 4,
                blocksize: 0
            }]
        );
        let p = pipeline(&[(32001, &[2, 2, 4, 4800, 5, 1, 9])]);
        assert!(codecs(Some(&p), DataType::Float32).is_err());
        let p = pipeline(&[(1, &[4]), (32000, &[])]);
        assert_eq!(
            codecs(Some(&p), DataType::Float32).unwrap_err(),
            "unsupported filter LZF (HDF5 filter id 32000): zarr-python 3.4 has no codec that \
             decodes it"
        );
    }
}
