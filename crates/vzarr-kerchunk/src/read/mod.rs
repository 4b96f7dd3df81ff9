//! Reading: kerchunk references parsed into a [`VirtualDataset`]: vzarr's own (version 1 with
//! Zarr v3 metadata) and kerchunk's (Zarr v2 metadata, JSON or Parquet), one mapping for all
//! (kerchunk specification, <https://fsspec.github.io/kerchunk/spec.html>).
//!
//! Accepted: `{"version": 1, "refs": {...}}` with or without our `"vzarr"` provenance block,
//! and the older version-0 form (the top-level object is the refs map). Metadata values may be
//! JSON-encoded strings (as kerchunk writes them, Python's bare `NaN` included) or JSON
//! objects, Zarr v3 (`zarr.json`) or Zarr v2 (`.zgroup`, `.zattrs`, `.zarray`, `.zmetadata`).
//! Chunk values are `[url, offset, length]`, `"base64:..."` or a plain string (its UTF-8
//! bytes); chunks that are not listed read as the fill value. `templates` (`{{name}}` in URLs)
//! and generated keys (`gen`) are expanded. Everything else is an error that names the key and
//! says why; nothing here panics on input.
//!
//! This module holds the errors, the limits and [`parse_refs`], which reads JSON references in
//! two passes (the small parts, then the chunk keys one at a time straight into the
//! manifests). Its submodules:
//! - [`builder`]: the one place references become the model (metadata documents, then chunk
//!   entries), whatever holds them;
//! - [`v2`]: Zarr v2 metadata translated once into Zarr v3 documents;
//! - [`parquet_refs`]: kerchunk's Parquet references, `.zmetadata` first, then an array's
//!   record files when it is loaded;
//! - [`gen_keys`]: generated keys;
//! - [`metadata`]: metadata values as Zarr v3 documents, and the chunk count an array
//!   document implies (bounded before the model allocates a manifest);
//! - [`names`]: what a key or a reference names: node paths, chunk keys and their indices,
//!   URLs with `{{name}}` templates.

mod builder;
mod gen_keys;
mod metadata;
mod names;
mod parquet_refs;
#[cfg(test)]
mod tests;
mod v2;
#[cfg(test)]
mod v2_tests;
mod whole_files;

use std::collections::{BTreeMap, HashMap};

use crate::stream;

use bytes::Bytes;
use serde_json::Value;
use vzarr_core::{Provenance, VirtualDataset};

pub use names::{parse_chunk_indices, split_chunk_key};
pub use parquet_refs::{
    FetchError, MAX_PARQUET_FILE, ParquetRecords, RecordPart, parse_parquet_refs,
};
pub(crate) use v2::V2_LEAVES;
pub use whole_files::WholeFiles;

use builder::Builder;

/// Why references could not be parsed. Every variant names where the references came from
/// and, where it is about one key, the key.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A part of the references (a record file of Parquet references) could not be read.
    #[error("{origin}: {part}: {source}")]
    Part {
        /// Where the references came from.
        origin: String,
        /// The part, relative to `origin`.
        part: String,
        /// Why it could not be read.
        source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The references are malformed as a whole (not JSON, not UTF-8, wrong version, ...).
    #[error("{origin}: malformed references: {reason}")]
    Malformed {
        /// Where the references came from.
        origin: String,
        /// Why.
        reason: String,
    },
    /// One key of the references is malformed or does not fit the arrays it names.
    #[error("{origin}: key {key:?}: {reason}")]
    BadKey {
        /// Where the references came from.
        origin: String,
        /// The offending key.
        key: String,
        /// Why.
        reason: String,
    },
}

/// The default of [`ParseLimits::max_generated`]: 2^20 references from `gen` entries
/// (about a second of template rendering and 20 MiB of manifest).
pub const MAX_GENERATED: u64 = 1 << 20;

/// The default of [`ParseLimits::max_record_files`]: 2^16 record files of Parquet references
/// (at fsspec's default record size of 10,000 rows, 655 million chunks: more than
/// [`vzarr_core::MAX_REFERENCES`]).
pub const MAX_RECORD_FILES: u64 = 1 << 16;

/// Limits that keep hostile references from exhausting memory or time. Each is checked with
/// checked arithmetic before what it bounds is allocated or generated, and an error that
/// hits one names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseLimits {
    /// Most chunks (stored or not) one array, and all arrays together, may have.
    pub max_chunks: u64,
    /// Most chunk entries (references and inline chunks) the references may hold; each
    /// costs about 20 bytes in memory.
    pub max_references: u64,
    /// Most references the `gen` entries of kerchunk references may expand to, in all
    /// (counted against `max_references` too). Generated keys cost a template rendering each
    /// and come from a few bytes of input: this bounds what a small file can ask for.
    pub max_generated: u64,
    /// Most record files kerchunk's Parquet references may have, over all their arrays
    /// (counted from `.zmetadata`: chunks over `record_size`, per array). Each is a request
    /// when every reference is loaded.
    pub max_record_files: u64,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_chunks: vzarr_core::MAX_CHUNKS,
            max_references: vzarr_core::MAX_REFERENCES,
            max_generated: MAX_GENERATED,
            max_record_files: MAX_RECORD_FILES,
        }
    }
}

impl ParseLimits {
    /// Limits of at most `max_chunks` chunks (and as many references, generated ones and
    /// record files) in all.
    pub fn with_max_chunks(max_chunks: u64) -> Self {
        ParseLimits {
            max_chunks,
            max_references: max_chunks,
            max_generated: max_chunks,
            max_record_files: max_chunks,
        }
    }
}

/// References parsed back into the model, plus what a store needs to serve them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ParsedRefs {
    /// The dataset: groups, arrays with their manifests, provenance (sources with their
    /// recorded size, modification time and ETag).
    pub dataset: VirtualDataset,
    /// Metadata documents (`zarr.json`, `path/zarr.json`) as JSON bytes, as given.
    pub documents: HashMap<String, Bytes>,
    /// Whether the references carried a `vzarr` provenance block.
    pub has_provenance: bool,
    /// Chunks that are whole sources, not yet in the manifests: whoever opens the references
    /// sets them once it knows the sources' sizes ([`WholeFiles::resolve`]).
    pub whole_files: WholeFiles,
}

impl ParsedRefs {
    /// References from their parts (for stores other than kerchunk JSON that open into the
    /// same model, such as Icechunk repositories): the dataset, its metadata documents by key,
    /// and whether it carries vzarr's provenance.
    pub fn from_parts(
        dataset: VirtualDataset,
        documents: HashMap<String, Bytes>,
        has_provenance: bool,
    ) -> Self {
        ParsedRefs {
            dataset,
            documents,
            has_provenance,
            whole_files: WholeFiles::default(),
        }
    }
}

/// Parses references from `bytes`; `origin` names them in errors.
pub fn parse_refs(
    bytes: &[u8],
    origin: &str,
    limits: ParseLimits,
) -> Result<ParsedRefs, ParseError> {
    let malformed = |reason: String| ParseError::Malformed {
        origin: origin.to_string(),
        reason,
    };
    std::str::from_utf8(bytes).map_err(|e| {
        malformed(format!(
            "not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    // Pass 1 keeps the small parts only; chunk values are skipped (never held as a tree).
    let head = stream::head(bytes).map_err(|e| malformed(format!("not JSON: {e}")))?;
    if !head.is_object {
        return Err(malformed("the top level is not a JSON object".into()));
    }
    let v1 = head.is_v1();
    let (meta, provenance, has_provenance, templates) = if v1 {
        match &head.version {
            Some(v) if v.as_u64() == Some(1) => {}
            Some(v) => return Err(malformed(format!("unsupported version {v} (expected 1)"))),
            None => return Err(malformed("\"refs\" without \"version\": 1".into())),
        }
        if head.refs != Some(true) {
            return Err(malformed("\"refs\" is missing or not an object".into()));
        }
        let mut templates = BTreeMap::new();
        if let Some(t) = &head.templates {
            let Value::Object(t) = t else {
                return Err(malformed("\"templates\" is not an object".into()));
            };
            for (k, v) in t {
                let v = v
                    .as_str()
                    .ok_or_else(|| malformed(format!("template {k:?} is not a string")))?;
                templates.insert(k.clone(), v.to_string());
            }
        }
        let (prov, has) = match head.vzarr {
            None => (Provenance::default(), false),
            Some(v) => {
                let prov: Provenance = serde_json::from_value(v)
                    .map_err(|e| malformed(format!("\"vzarr\" provenance block: {e}")))?;
                (prov, true)
            }
        };
        (head.refs_meta, prov, has, templates)
    } else {
        (head.top_meta, Provenance::default(), false, BTreeMap::new())
    };

    let mut b = Builder::new(origin, limits, &meta)?;
    drop(meta);
    // Pass 2: chunk keys, one at a time, straight into the manifests.
    match stream::for_each_chunk(bytes, v1, &mut |key, value| {
        b.json_chunk(&key, value, &templates)
    }) {
        Ok(()) => {}
        Err(stream::PassError::Caller(e)) => return Err(e),
        Err(stream::PassError::Json(e)) => return Err(malformed(format!("not JSON: {e}"))),
    }
    // Generated keys, expanded one at a time into the same manifests.
    if let Some(gen_) = &head.gen_ {
        let before = b.references();
        gen_keys::expand(
            gen_,
            &templates,
            &limits,
            before,
            &mut |key, value| b.json_chunk(&key, value, &templates),
            &malformed,
        )?;
    }
    b.finish(provenance, has_provenance)
}
