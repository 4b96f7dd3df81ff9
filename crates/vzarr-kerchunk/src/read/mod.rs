//! Reading: kerchunk version 1 references holding a Zarr v3 hierarchy parsed back into a
//! [`VirtualDataset`].
//!
//! Accepted: `{"version": 1, "refs": {...}}` with or without our `"vzarr"` provenance block,
//! and the older version-0 form (the top-level object is the refs map). Metadata values may be
//! JSON-encoded strings (as kerchunk writes them) or JSON objects. Chunk values are
//! `[url, offset, length]`, `"base64:..."` or a plain string (its UTF-8 bytes); chunks that are
//! not listed read as the fill value. `templates` (`{{name}}` in URLs) are expanded.
//! Everything else is an error that names the key and says why; nothing here panics on input.
//!
//! This module holds the errors, the limits and [`parse_refs`], which reads the references in
//! two passes (the small parts, then the chunk keys one at a time straight into the
//! manifests). Its submodules:
//! - [`metadata`]: metadata values as Zarr v3 documents, and the chunk count an array
//!   document implies (bounded before the model allocates a manifest);
//! - [`names`]: what a key or a reference names: node paths, chunk keys and their indices,
//!   URLs with `{{name}}` templates.

mod metadata;
mod names;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use crate::stream;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value};
use vzarr_core::{Group, Provenance, VirtualArray, VirtualDataset};

pub use names::{parse_chunk_indices, split_chunk_key};

use metadata::{count_chunks, metadata_document};
use names::{check_node_path, expand_templates};

/// Why references could not be parsed. Every variant names where the references came from
/// and, where it is about one key, the key.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
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

/// Limits that keep a hostile manifest from exhausting memory.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ParseLimits {
    /// Most chunks (stored or not) one array, and all arrays together, may have.
    pub max_chunks: u64,
    /// Most chunk entries (references and inline chunks) the references may hold; each
    /// costs about 20 bytes in memory.
    pub max_references: u64,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_chunks: vzarr_core::MAX_CHUNKS,
            max_references: vzarr_core::MAX_REFERENCES,
        }
    }
}

impl ParseLimits {
    /// Limits of at most `max_chunks` chunks (and as many references) in all.
    pub fn with_max_chunks(max_chunks: u64) -> Self {
        ParseLimits {
            max_chunks,
            max_references: max_chunks,
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
        if let Some(gen_) = &head.gen_
            && gen_.as_array().is_none_or(|g| !g.is_empty())
        {
            return Err(malformed(
                "generated keys (\"gen\") are not supported".into(),
            ));
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

    let bad_key = |key: &str, reason: String| ParseError::BadKey {
        origin: origin.to_string(),
        key: key.to_string(),
        reason,
    };

    // Metadata documents.
    let mut ds = VirtualDataset::new();
    ds.groups.clear();
    let mut documents = HashMap::new();
    let mut parsed_docs: Vec<(String, Value)> = Vec::new();
    let mut total_chunks: u64 = 0;
    for (key, value) in &meta {
        let path = if key == "zarr.json" {
            ""
        } else if let Some(p) = key.strip_suffix("/zarr.json") {
            p
        } else {
            continue;
        };
        check_node_path(path).map_err(|e| bad_key(key, e))?;
        let (doc, raw) = metadata_document(value).map_err(|e| bad_key(key, e))?;
        if doc.get("zarr_format").and_then(Value::as_u64) != Some(3) {
            return Err(bad_key(
                key,
                "not Zarr v3 metadata (zarr_format is not 3)".into(),
            ));
        }
        match doc.get("node_type").and_then(Value::as_str) {
            Some("group") => {
                let attributes = match doc.get("attributes") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => {
                        return Err(bad_key(key, "group attributes are not an object".into()));
                    }
                };
                ds.groups.insert(path.to_string(), Group { attributes });
            }
            Some("array") => {
                // Bound the chunk count before the model allocates a manifest for it; shapes
                // and grids the counter does not understand are refused by the model's parser
                // before it allocates.
                if let Some(n) =
                    count_chunks(&doc, limits.max_chunks).map_err(|e| bad_key(key, e))?
                {
                    total_chunks = total_chunks.saturating_add(n);
                    if total_chunks > limits.max_chunks {
                        return Err(bad_key(
                            key,
                            format!(
                                "the arrays have more than {} chunks in all",
                                limits.max_chunks
                            ),
                        ));
                    }
                }
                let array = VirtualArray::from_zarr_metadata(&doc)
                    .map_err(|e| bad_key(key, e.to_string()))?;
                array.validate().map_err(|e| bad_key(key, e.to_string()))?;
                ds.arrays.insert(path.to_string(), array);
            }
            other => {
                return Err(bad_key(
                    key,
                    format!("node_type {other:?} is neither \"group\" nor \"array\""),
                ));
            }
        }
        documents.insert(key.clone(), raw);
        parsed_docs.push((path.to_string(), doc));
    }
    // A consolidated block is what zarr-python reads instead of the documents: it must say
    // what they say, or a reader opening consolidated would read something else.
    let nodes: Vec<(&str, &Value)> = parsed_docs.iter().map(|(p, d)| (p.as_str(), d)).collect();
    if let Err((group, why)) = crate::consolidated::check(&nodes) {
        let key = if group.is_empty() {
            "zarr.json".to_string()
        } else {
            format!("{group}/zarr.json")
        };
        return Err(bad_key(
            &key,
            format!(
                "consolidated metadata disagrees with the per-node documents ({why}); \
                 refused, since zarr-python reading it consolidated would not read what \
                 the documents say"
            ),
        ));
    }
    drop(parsed_docs);
    for path in ds.arrays.keys() {
        if ds.groups.contains_key(path) {
            return Err(malformed(format!("{path} is both a group and an array")));
        }
    }

    // Pass 2: chunk keys, one at a time, straight into the manifests.
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut references: u64 = 0;
    let mut chunk = |key: String, value: Value| -> Result<(), ParseError> {
        let key = key.as_str();
        let leaf = key.rsplit('/').next().unwrap_or(key);
        if matches!(leaf, ".zarray" | ".zgroup" | ".zattrs" | ".zmetadata") {
            return Err(bad_key(
                key,
                "Zarr v2 metadata: only Zarr v3 references are supported".into(),
            ));
        }
        references += 1;
        if references > limits.max_references {
            return Err(bad_key(
                key,
                format!(
                    "the references hold more than {} chunks in all",
                    limits.max_references
                ),
            ));
        }
        let arrays = &ds.arrays;
        let Some((path, rest)) = split_chunk_key(key, |p| arrays.contains_key(p)) else {
            return Err(bad_key(
                key,
                "neither a metadata key nor a chunk key (<array>/c/<i>/<j>...) of any array".into(),
            ));
        };
        let path = path.to_string();
        let index = parse_chunk_indices(rest).map_err(|e| bad_key(key, e))?;
        let array = ds.arrays.get_mut(&path).expect("found above");
        let grid_shape = array.grid.grid_shape();
        if index.len() != grid_shape.len() {
            return Err(bad_key(
                key,
                format!(
                    "{} chunk indices for the {}-dimensional array {path}",
                    index.len(),
                    grid_shape.len()
                ),
            ));
        }
        let lin = array.grid.linear_index(&index).ok_or_else(|| {
            bad_key(
                key,
                format!(
                    "chunk index {index:?} is outside the chunk grid {grid_shape:?} of array {path}"
                ),
            )
        })? as usize;
        match value {
            Value::String(s) => {
                let bytes = if let Some(b) = s.strip_prefix("base64:") {
                    b64.decode(b)
                        .map_err(|e| bad_key(key, format!("invalid base64: {e}")))?
                } else {
                    s.as_bytes().to_vec()
                };
                array
                    .manifest
                    .set_inline(lin, bytes)
                    .map_err(|e| bad_key(key, e.to_string()))?;
            }
            Value::Array(items) => {
                let url = items.first().and_then(Value::as_str).ok_or_else(|| {
                    bad_key(
                        key,
                        "the first item of a reference must be a URL string".into(),
                    )
                })?;
                if url.is_empty() {
                    return Err(bad_key(key, "empty URL".into()));
                }
                let url = expand_templates(url, &templates).map_err(|e| bad_key(key, e))?;
                let (offset, length) = match items.len() {
                    1 => {
                        return Err(bad_key(
                            key,
                            "whole-file references ([url] without offset and length) are not supported".into(),
                        ));
                    }
                    3 => {
                        let num = |v: &Value, what: &str| -> Result<u64, ParseError> {
                            match v {
                                Value::Number(n) => {
                                    if let Some(u) = n.as_u64() {
                                        Ok(u)
                                    } else if n.as_i64().is_some_and(|i| i < 0)
                                        || n.as_f64().is_some_and(|f| f < 0.0)
                                    {
                                        Err(bad_key(key, format!("negative {what} {n}")))
                                    } else {
                                        Err(bad_key(
                                            key,
                                            format!("{what} {n} is not an integer in 0..2^64"),
                                        ))
                                    }
                                }
                                other => {
                                    Err(bad_key(key, format!("{what} {other} is not a number")))
                                }
                            }
                        };
                        (num(&items[1], "offset")?, num(&items[2], "length")?)
                    }
                    n => {
                        return Err(bad_key(
                            key,
                            format!("a reference has {n} items (expected [url, offset, length])"),
                        ));
                    }
                };
                if offset.checked_add(length).is_none() {
                    return Err(bad_key(
                        key,
                        format!("offset {offset} + length {length} overflows"),
                    ));
                }
                let id = array
                    .manifest
                    .intern(&url)
                    .map_err(|e| bad_key(key, e.to_string()))?;
                array
                    .manifest
                    .set_range(lin, id, offset, length)
                    .map_err(|e| bad_key(key, e.to_string()))?;
            }
            _ => {
                return Err(bad_key(
                    key,
                    "a chunk value must be [url, offset, length] or a string".into(),
                ));
            }
        }
        Ok(())
    };
    match stream::for_each_chunk(bytes, v1, &mut chunk) {
        Ok(()) => {}
        Err(stream::PassError::Caller(e)) => return Err(e),
        Err(stream::PassError::Json(e)) => return Err(malformed(format!("not JSON: {e}"))),
    }

    // Implicit parent groups (Zarr v3 readers do not need them; the model does).
    let mut parents = Vec::new();
    for path in ds.groups.keys().chain(ds.arrays.keys()) {
        let mut p = path.as_str();
        while !p.is_empty() {
            p = p.rsplit_once('/').map_or("", |(a, _)| a);
            parents.push(p.to_string());
        }
    }
    parents.push(String::new());
    for p in parents {
        if ds.arrays.contains_key(&p) {
            return Err(malformed(format!("array {p:?} has children")));
        }
        ds.groups.entry(p).or_default();
    }
    ds.provenance = provenance;
    ds.validate().map_err(|e| malformed(e.to_string()))?;
    Ok(ParsedRefs {
        dataset: ds,
        documents,
        has_provenance,
    })
}
