//! The limits shared by building and reading, so that a build never writes what a reader
//! refuses. Each bounds memory that hostile or absurd input could otherwise ask for.
//!
//! | limit | value | applies to |
//! |---|---|---|
//! | [`MAX_REFERENCES`] | 2^27 | chunk entries (references and inline chunks) of one dataset: ~20 bytes each in memory |
//! | [`MAX_CHUNKS`] | 2^31 | chunks of one array's grid, stored or not (missing chunks cost nothing) |
//! | [`MAX_ARRAY_REFERENCES`] | 2^24 | chunk entries one scanned array may hold (~320 MiB) |
//! | [`MAX_RANK`] | 64 | dimensions of an array (numpy's limit; HDF5 allows 32, netCDF-C 1024) |
//! | [`MAX_RECORD_CHUNKS`] | 2^20 | chunks of a NetCDF3 record variable before records are grouped |
//! | [`KEEP_FETCHED_ARRAY_BYTES`] | 64 KiB | referenced bytes of an array whose chunk bytes a scan may keep for the planner |
//! | [`KEEP_FETCHED_SOURCE_BYTES`] | 256 KiB | chunk bytes a scan keeps for the planner per source, in all |

/// Most chunk entries (references and inline chunks) one dataset may hold.
pub const MAX_REFERENCES: u64 = 1 << 27;

/// Most chunk entries one array of a scanned file may hold (a combined dataset may hold more,
/// up to [`MAX_REFERENCES`] in all).
pub const MAX_ARRAY_REFERENCES: u64 = 1 << 24;

/// Most chunks (stored or not) one array's grid may have.
pub const MAX_CHUNKS: u64 = 1 << 31;

/// Most dimensions of an array.
pub const MAX_RANK: usize = 64;

/// Above this many records, the records of a NetCDF3 file's only record variable (which lie
/// back to back) are grouped into larger chunks, so that the count of references stays
/// bounded however many records the header claims.
pub const MAX_RECORD_CHUNKS: u64 = 1 << 20;

/// Arrays whose references add up to at most this many bytes (coordinates, mostly) may keep,
/// beside their references, the chunk bytes a scanner already fetched
/// ([`crate::VirtualDataset::keep_fetched`]), so that the planner need not fetch them again.
pub const KEEP_FETCHED_ARRAY_BYTES: u64 = 64 << 10;

/// Most chunk bytes one scanned source keeps for the planner, over all its arrays; so a build
/// of N sources holds at most N times this many kept bytes.
pub const KEEP_FETCHED_SOURCE_BYTES: u64 = 256 << 10;
