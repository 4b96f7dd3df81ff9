//! Verification against every reader of the sources this build has (vzarr's own; libhdf5 and
//! netCDF-C with the `c-oracle` feature): every fixture, tampered manifests and sources,
//! allowed prefixes, stale sources, combined archives, an h5py-style table with a bool member.

mod audit;
mod checks;
mod combined;
mod common;
mod tables;
