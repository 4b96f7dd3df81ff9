//! The kerchunk version 1 reference format holding a Zarr v3 hierarchy, read and written.
//!
//! Layout: `{"version": 1, "vzarr": {...}, "refs": {...}}`, where `vzarr` holds the provenance
//! (sources with size, modification time and ETag, allowed URL prefixes, how files were
//! concatenated) and `refs` the Zarr hierarchy: the root group's `zarr.json` first, then every
//! group's `zarr.json` by path, then every array's `zarr.json` followed by its chunk keys in C
//! order over the grid. Metadata documents are JSON-encoded strings, as kerchunk writes them;
//! chunk values are `[url, offset, length]` or `"base64:..."` for inline bytes; chunks that are
//! not stored are left out (they read as the fill value). See `manifests/FORMAT.md` and the
//! kerchunk specification (<https://fsspec.github.io/kerchunk/spec.html>).
//!
//! - [`write_file`], [`write_refs`], [`to_bytes`]: the same dataset always gives the same bytes.
//! - [`parse_refs`]: references back into the model, with typed errors for malformed input;
//!   also the older version-0 form, JSON-object metadata, `templates` and `gen`, and kerchunk's
//!   own references with Zarr v2 metadata; [`parse_parquet_refs`]: kerchunk's Parquet
//!   references, read through the caller's fetcher; [`ParquetRecords`]: the same read lazily
//!   (`.zmetadata` first, an array's record files when it is needed).
//! - [`read_tail`], [`write_spliced`], [`write_file_spliced`]: an append at the tail of a file
//!   this writer wrote reads what the append can change and copies the rest as bytes, with the
//!   same result as writing the whole extended dataset.
//!
//! ```
//! use vzarr_core::VirtualDataset;
//! let bytes = vzarr_kerchunk::to_bytes(&VirtualDataset::new())?;
//! let back = vzarr_kerchunk::parse_refs(&bytes, "memory", Default::default())?;
//! assert!(back.dataset.arrays.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod consolidated;
mod read;
mod splice;
mod stream;
mod write;

pub use read::{
    FetchError, MAX_GENERATED, MAX_PARQUET_FILE, MAX_RECORD_FILES, ParquetRecords, ParseError,
    ParseLimits, ParsedRefs, RecordPart, WholeFiles, parse_chunk_indices, parse_parquet_refs,
    parse_refs, split_chunk_key,
};
pub use splice::{Layout, NotSpliced, TailRefs, read_tail, write_file_spliced, write_spliced};
pub use write::{WriteError, chunk_key, to_bytes, write_file, write_refs};

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunk keys written for an array parse back to the same array and index, also when
    /// array paths contain `c` segments.
    #[test]
    fn chunk_keys_round_trip() {
        let arrays = ["", "c", "a/c", "x/y", "c/c"];
        let indices: [&[u64]; 4] = [&[], &[0], &[3, 14, 15], &[u64::MAX, 0]];
        for path in arrays {
            for index in indices {
                let key = chunk_key(path, index);
                let (p, rest) = split_chunk_key(&key, |p| p == path)
                    .unwrap_or_else(|| panic!("{key} not split"));
                assert_eq!(p, path, "{key}");
                assert_eq!(parse_chunk_indices(rest).unwrap(), index, "{key}");
            }
        }
    }
}
