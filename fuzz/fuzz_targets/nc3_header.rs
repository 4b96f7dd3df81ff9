//! Arbitrary bytes through the NetCDF3 header parser and the scanner, via an in-memory source.
//! Any panic, abort or out-of-memory is a bug: corrupt input must give an `Nc3Error`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vzarr_netcdf3::{MemSource, ScanOptions, parse_header, scan};

fuzz_target!(|data: &[u8]| {
    let src = MemSource::new("mem://fuzz/input.nc", data.to_vec());
    let header = parse_header(&src);
    // The last byte picks the split option, so that path is fuzzed too.
    let split = match data.last() {
        Some(&b) if b & 1 == 1 => Some(u64::from(b >> 1)),
        _ => None,
    };
    let ds = scan(
        &src,
        &ScanOptions {
            split_contiguous_bytes: split,
        },
    );
    if let Ok(ds) = ds {
        assert!(header.is_ok(), "scan succeeded where the header failed");
        ds.validate().expect("a successful scan validates");
    }
});
