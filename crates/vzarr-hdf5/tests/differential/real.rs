//! Real files.
