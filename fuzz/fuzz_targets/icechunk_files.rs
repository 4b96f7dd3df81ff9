//! Fuzzes the checks of Icechunk repository files (the `repo` file, first byte even, or a
//! snapshot) that run before Icechunk decodes them: any bytes pass or fail with a typed error,
//! without a panic, an abort or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let file = if which % 2 == 0 { "repo" } else { "snapshots/FUZZ" };
    let _ = vzarr_icechunk::check_metadata_file(file, rest);
});
