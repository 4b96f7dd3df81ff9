//! HDF5 filter pipelines mapped to Zarr v3 codecs (after `bytes`, in pipeline order, one
//! codec per filter; the mapping itself is `vzarr_core::Codec::from_hdf5_filter`, shared with
//! the libhdf5 scanner), or the reason a pipeline has no codecs that zarr-python 3.4 (with the
//! `vzarr` package) and vzarr's reader both decode.

use vzarr_core::{Codec, DataType};
use vzarr_hdf5_format::FilterPipeline;

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
        out.push(Codec::from_hdf5_filter(
            u32::from(filter.id),
            cd,
            dt.clone(),
        )?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::BloscShuffle;
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
        let p = pipeline(&[(1, &[4]), (32000, &[4, 261, 400])]);
        assert_eq!(
            codecs(Some(&p), DataType::Float32).unwrap(),
            vec![Codec::Zlib { level: 4 }, Codec::Lzf]
        );
        let p = pipeline(&[(2, &[4]), (32024, &[])]);
        assert_eq!(
            codecs(Some(&p), DataType::Float32).unwrap_err(),
            "unsupported filter SZ3 (HDF5 filter id 32024): no Zarr codec that both zarr-python \
             3.4 and vzarr decode"
        );
    }
}
