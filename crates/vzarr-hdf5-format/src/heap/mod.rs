//! Heaps: local heaps (names of old-style groups), global heaps (variable-length data) and
//! fractal heaps (dense links and attributes, shared messages) (HDF5 File Format
//! Specification 3.0, sections III.D, III.E and III.G).

pub(crate) mod fractal;
pub mod global;
pub(crate) mod local;
