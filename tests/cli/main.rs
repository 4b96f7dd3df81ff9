//! End-to-end tests of the `vzarr` binary (one test binary): builds and golden manifests,
//! catalog-scale batches, reading and verifying through references, hostile reference files.

mod batch;
mod build;
mod common;
mod dmrpp;
mod hostile;
mod messages;
mod read;
mod sync;
