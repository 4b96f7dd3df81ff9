//! Fuzzes kerchunk's Parquet references: the input is a `.zmetadata` (first byte even) or a
//! record file of a small fixed `.zmetadata` (first byte odd); every array is loaded. Any
//! bytes give references or a typed error, within the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vzarr_kerchunk::{FetchError, ParseLimits, parse_parquet_refs};

const ZMETADATA: &[u8] = br#"{"record_size": 4, "metadata": {".zgroup": {"zarr_format": 2},
"a/.zarray": {"zarr_format": 2, "shape": [6], "chunks": [1], "dtype": "<i2",
"compressor": null, "filters": null, "fill_value": 0, "order": "C"},
"a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]}}}"#;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let limits = ParseLimits::with_max_chunks(1 << 16);
    let record = bytes::Bytes::copy_from_slice(rest);
    let (zmetadata, mut fetch): (&[u8], Box<dyn FnMut(&str) -> Result<_, FetchError>>) =
        if which % 2 == 0 {
            (rest, Box::new(|_: &str| Ok(None)))
        } else {
            (ZMETADATA, Box::new(move |_: &str| Ok(Some(record.clone()))))
        };
    let _ = parse_parquet_refs(zmetadata, "fuzz", limits, &mut *fetch);
});
