//! Verification against libhdf5 and netCDF-C: every fixture, tampered manifests and sources,
//! allowed prefixes, stale sources, combined archives.

mod checks;
mod combined;
mod common;
