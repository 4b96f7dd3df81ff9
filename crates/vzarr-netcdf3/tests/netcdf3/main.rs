//! NetCDF3 scanner tests: against netCDF-C (the oracle), corrupt and hostile headers, and a
//! seeded mutation corpus (one test binary).

mod common;
mod corrupt;
mod fuzz_corpus;
mod oracle;
