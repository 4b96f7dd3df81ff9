//! Fuzzes the kerchunk reference parser: any bytes parse or fail with a typed error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vzarr_kerchunk::parse_refs(
        data,
        "fuzz.json",
        vzarr_kerchunk::ParseLimits::with_max_chunks(1 << 20),
    );
});
