//! Reading: kerchunk version 1 references holding a Zarr v3 hierarchy parsed back into a
//! [`VirtualDataset`].
//!
//! Accepted: `{"version": 1, "refs": {...}}` with or without our `"vzarr"` provenance block,
//! and the older version-0 form (the top-level object is the refs map). Metadata values may be
//! JSON-encoded strings (as kerchunk writes them) or JSON objects. Chunk values are
//! `[url, offset, length]`, `"base64:..."` or a plain string (its UTF-8 bytes); chunks that are
//! not listed read as the fill value. `templates` (`{{name}}` in URLs) are expanded.
//! Everything else is an error that names the key and says why; nothing here panics on input.

use std::collections::{BTreeMap, HashMap};

use crate::stream;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value};
use vzarr_core::{Group, Provenance, VirtualArray, VirtualDataset};

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

/// Splits a chunk key into its array path and index part (`""` for a 0-d array), when some
/// array (per `is_array`) owns it: `tas/c/0/1` -> `("tas", "0/1")`, `g/s/c` -> `("g/s", "")`.
pub fn split_chunk_key(key: &str, is_array: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
    let b = key.as_bytes();
    for (p, _) in key.match_indices('c') {
        let starts = p == 0 || b[p - 1] == b'/';
        let ends = p + 1 == b.len() || b[p + 1] == b'/';
        if !(starts && ends) {
            continue;
        }
        let prefix = if p == 0 { "" } else { &key[..p - 1] };
        if is_array(prefix) {
            let rest = &key[p + 1..];
            return Some((prefix, rest.strip_prefix('/').unwrap_or(rest)));
        }
    }
    None
}

/// Parses the index part of a chunk key (`"0/12/3"`); strict decimal, no signs or leading
/// zeros.
pub fn parse_chunk_indices(rest: &str) -> Result<Vec<u64>, String> {
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    rest.split('/')
        .map(|s| {
            if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                return Err(format!("chunk index {s:?} is not a non-negative integer"));
            }
            if s.len() > 1 && s.starts_with('0') {
                return Err(format!("chunk index {s:?} has leading zeros"));
            }
            s.parse::<u64>()
                .map_err(|_| format!("chunk index {s:?} is too large"))
        })
        .collect()
}

/// Checks a node path (`""`, `a`, `a/b`): no leading or trailing `/`, no empty, `.` or `..`
/// segments.
fn check_node_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Ok(());
    }
    for s in path.split('/') {
        if s.is_empty() || s == "." || s == ".." {
            return Err(format!("invalid node path {path:?}"));
        }
    }
    Ok(())
}

/// Number of chunks the `chunk_grid` of an array document implies, computed without
/// expanding run-length encoded edges; `None` when the document is not understood here (the
/// model's parser then reports it). Errors when a limit is passed.
fn count_chunks(doc: &Value, limit: u64) -> Result<Option<u64>, String> {
    let Some(shape) = doc
        .get("shape")
        .and_then(Value::as_array)
        .map(|s| s.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
    else {
        return Ok(None);
    };
    let Some(shape) = shape else { return Ok(None) };
    if shape.len() > vzarr_core::MAX_RANK {
        return Err(format!(
            "{} dimensions (at most {})",
            shape.len(),
            vzarr_core::MAX_RANK
        ));
    }
    let Some(grid) = doc.get("chunk_grid") else {
        return Ok(None);
    };
    let conf = grid.get("configuration");
    let too_many = || format!("the chunk grid has more than {limit} chunks");
    let per_axis: Vec<u64> = match grid.get("name").and_then(Value::as_str) {
        Some("regular") => {
            let Some(cs) = conf
                .and_then(|c| c.get("chunk_shape"))
                .and_then(Value::as_array)
                .and_then(|v| v.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            else {
                return Ok(None);
            };
            if cs.len() != shape.len() || cs.contains(&0) {
                return Ok(None);
            }
            shape
                .iter()
                .zip(&cs)
                .map(|(&e, &c)| e.div_ceil(c))
                .collect()
        }
        Some("rectilinear") => {
            let Some(shapes) = conf
                .and_then(|c| c.get("chunk_shapes"))
                .and_then(Value::as_array)
            else {
                return Ok(None);
            };
            if shapes.len() != shape.len() {
                return Ok(None);
            }
            let mut v = Vec::with_capacity(shape.len());
            for (s, &extent) in shapes.iter().zip(&shape) {
                match s {
                    Value::Number(n) => match n.as_u64() {
                        Some(c) if c > 0 => v.push(extent.div_ceil(c)),
                        _ => return Ok(None),
                    },
                    Value::Array(items) => {
                        // Every listed edge is expanded by the model's parser: bound them all.
                        let mut listed: u64 = 0;
                        let mut used: u64 = 0;
                        let mut covered: u64 = 0;
                        for item in items {
                            let (val, count) = match item {
                                Value::Number(n) => (n.as_u64(), Some(1)),
                                Value::Array(p) if p.len() == 2 => (p[0].as_u64(), p[1].as_u64()),
                                _ => return Ok(None),
                            };
                            let (Some(val), Some(count)) = (val, count) else {
                                return Ok(None);
                            };
                            if val == 0 {
                                return Ok(None);
                            }
                            listed = listed.saturating_add(count);
                            if listed > limit {
                                return Err(too_many());
                            }
                            if covered < extent {
                                let need = (extent - covered).div_ceil(val);
                                let take = need.min(count);
                                used += take;
                                covered = covered.saturating_add(take.saturating_mul(val));
                            }
                        }
                        v.push(if extent == 0 { 0 } else { used });
                    }
                    _ => return Ok(None),
                }
            }
            v
        }
        _ => return Ok(None),
    };
    let mut n: u64 = 1;
    for c in per_axis {
        n = n.checked_mul(c).ok_or_else(too_many)?;
    }
    if n > limit {
        return Err(too_many());
    }
    Ok(Some(n))
}

/// A metadata value as a JSON document: a JSON-encoded string or an object.
fn metadata_document(value: &Value) -> Result<(Value, Bytes), String> {
    match value {
        Value::String(s) => {
            let doc: Value =
                serde_json::from_str(s).map_err(|e| format!("metadata is not valid JSON: {e}"))?;
            if !doc.is_object() {
                return Err("metadata is not a JSON object".into());
            }
            Ok((doc, Bytes::from(s.clone().into_bytes())))
        }
        Value::Object(_) => {
            let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            Ok((value.clone(), Bytes::from(text)))
        }
        _ => Err("metadata must be a JSON object or a JSON-encoded string".into()),
    }
}

/// Expands `{{name}}` templates in a URL.
fn expand_templates(url: &str, templates: &BTreeMap<String, String>) -> Result<String, String> {
    if !url.contains("{{") {
        return Ok(url.to_string());
    }
    let mut out = url.to_string();
    for (name, value) in templates {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    if out.contains("{{") {
        return Err(format!("URL {url:?} uses an undefined template"));
    }
    Ok(out)
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vzarr_core::ChunkRef;

    fn array_doc(shape: &[u64], chunks: &[u64]) -> String {
        let names = &["y", "x"][..shape.len()];
        json!({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {}, "dimension_names": names
        })
        .to_string()
    }

    fn refs_with(extra: Value) -> Vec<u8> {
        let mut refs = json!({
            "zarr.json": r#"{"zarr_format":3,"node_type":"group","attributes":{"t":1}}"#,
            "v/zarr.json": array_doc(&[4, 6], &[2, 3]),
        });
        for (k, v) in extra.as_object().unwrap() {
            refs[k] = v.clone();
        }
        serde_json::to_vec(&json!({"version": 1, "refs": refs})).unwrap()
    }

    fn err(bytes: &[u8]) -> String {
        parse_refs(bytes, "t.json", ParseLimits::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_refs() {
        let b = refs_with(json!({
            "v/c/0/0": ["file:///d/a.nc", 10, 12],
            "v/c/1/1": "base64:AQACAAMABAAFAAYA",
            "v/c/0/1": "raw text",
        }));
        let p = parse_refs(&b, "t.json", ParseLimits::default()).unwrap();
        let a = &p.dataset.arrays["v"];
        assert_eq!(
            a.manifest.get(0),
            ChunkRef::Range {
                source: "file:///d/a.nc",
                offset: 10,
                length: 12
            }
        );
        assert_eq!(a.manifest.get(1), ChunkRef::Inline(b"raw text"));
        assert_eq!(a.manifest.get(2), ChunkRef::Missing);
        assert_eq!(
            a.manifest.get(3),
            ChunkRef::Inline(&[1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0])
        );
        assert_eq!(p.dataset.groups[""].attributes["t"], json!(1));
        assert!(!p.has_provenance);
        assert!(p.documents.contains_key("v/zarr.json"));
    }

    #[test]
    fn accepts_object_metadata_and_version0_and_templates() {
        let doc: Value = serde_json::from_str(&array_doc(&[4], &[4])).unwrap();
        let v0 = json!({"g/a/zarr.json": doc, "g/a/c/0": ["{{u}}/a.nc", 0, 8]});
        let e = err(&serde_json::to_vec(&v0).unwrap());
        assert!(e.contains("undefined template"), "{e}");
        let v1 = json!({"version": 1, "templates": {"u": "s3://b/d"}, "refs": v0});
        let p = parse_refs(
            &serde_json::to_vec(&v1).unwrap(),
            "t",
            ParseLimits::default(),
        )
        .unwrap();
        assert!(p.dataset.groups.contains_key("g"), "implicit parent group");
        assert_eq!(
            p.dataset.arrays["g/a"].manifest.get(0),
            ChunkRef::Range {
                source: "s3://b/d/a.nc",
                offset: 0,
                length: 8
            }
        );
    }

    #[test]
    fn reads_provenance() {
        let mut v: Value = serde_json::from_slice(&refs_with(json!({}))).unwrap();
        v["vzarr"] = json!({"sources": [{"url": "file:///d/a.nc", "size": 5, "mtime_ns": 7, "etag": "x"}],
                            "allowed_prefixes": ["file:///d/"]});
        let p = parse_refs(
            &serde_json::to_vec(&v).unwrap(),
            "t",
            ParseLimits::default(),
        )
        .unwrap();
        assert!(p.has_provenance);
        assert_eq!(p.dataset.provenance.sources[0].size, 5);
        assert_eq!(p.dataset.provenance.sources[0].etag.as_deref(), Some("x"));
        v["vzarr"] = json!({"sources": "nope"});
        assert!(err(&serde_json::to_vec(&v).unwrap()).contains("provenance"));
    }

    #[test]
    fn malformed_refs_are_typed_errors() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"\xff\xfe{}".to_vec(), "not UTF-8"),
            (b"{\"version\": 1, ".to_vec(), "not JSON"),
            (b"[1]".to_vec(), "not a JSON object"),
            (
                br#"{"version": 2, "refs": {}}"#.to_vec(),
                "unsupported version",
            ),
            (br#"{"version": 1}"#.to_vec(), "\"refs\" is missing"),
            (
                br#"{"version": 1, "refs": {}, "gen": [{"key": "x"}]}"#.to_vec(),
                "gen",
            ),
            (
                refs_with(json!({"v/c/2/0": ["file:///a", 0, 1]})),
                "outside the chunk grid",
            ),
            (
                refs_with(json!({"v/c/0": ["file:///a", 0, 1]})),
                "1 chunk indices",
            ),
            (
                refs_with(json!({"v/c/0/-1": ["file:///a", 0, 1]})),
                "not a non-negative integer",
            ),
            (
                refs_with(json!({"v/c/0/01": ["file:///a", 0, 1]})),
                "leading zeros",
            ),
            (
                refs_with(json!({"v/c/0/99999999999999999999": ["file:///a", 0, 1]})),
                "too large",
            ),
            (
                refs_with(json!({"v/c/0/0": ["file:///a", -5, 1]})),
                "negative offset",
            ),
            (
                refs_with(json!({"v/c/0/0": ["file:///a", 0, -1]})),
                "negative length",
            ),
            (
                refs_with(json!({"v/c/0/0": ["file:///a", 1.5, 1]})),
                "not an integer",
            ),
            (
                refs_with(json!({"v/c/0/0": ["file:///a", "0", 1]})),
                "not a number",
            ),
            (
                refs_with(json!({"v/c/0/0": ["file:///a", u64::MAX, 2]})),
                "overflows",
            ),
            (refs_with(json!({"v/c/0/0": ["file:///a"]})), "whole-file"),
            (refs_with(json!({"v/c/0/0": ["file:///a", 0]})), "2 items"),
            (refs_with(json!({"v/c/0/0": [7, 0, 1]})), "URL string"),
            (refs_with(json!({"v/c/0/0": 5})), "must be"),
            (refs_with(json!({"v/c/0/0": "base64:!!"})), "invalid base64"),
            (
                refs_with(json!({"w/c/0/0": ["file:///a", 0, 1]})),
                "neither a metadata key",
            ),
            (refs_with(json!({"v/.zarray": "{}"})), "Zarr v2"),
            (
                refs_with(json!({"x/zarr.json": "not json"})),
                "not valid JSON",
            ),
            (refs_with(json!({"x/zarr.json": 5})), "JSON object"),
            (
                refs_with(json!({"x/zarr.json": "{\"zarr_format\":2}"})),
                "not Zarr v3",
            ),
            (
                refs_with(json!({"a/../b/zarr.json": "{}"})),
                "invalid node path",
            ),
            (
                refs_with(json!({"x/zarr.json": "{\"zarr_format\":3,\"node_type\":\"banana\"}"})),
                "node_type",
            ),
            (
                refs_with(json!({"big/zarr.json": array_doc(&[u64::MAX, u64::MAX], &[1, 1])})),
                "more than",
            ),
            (
                refs_with(json!({"v/zarr.json": array_doc(&[4, 6], &[0, 3])})),
                "v/zarr.json",
            ),
        ];
        for (bytes, want) in cases {
            let e = err(&bytes);
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }

    #[test]
    fn rectilinear_runs_are_bounded_before_expansion() {
        let doc = json!({
            "zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "int8",
            "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline",
                "chunk_shapes": [[[1, 4_000_000_000u64]]]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {}}]
        });
        let e = err(&refs_with(json!({"r/zarr.json": doc.to_string()})));
        assert!(e.contains("more than"), "{e}");
    }

    #[test]
    fn chunk_key_splitting() {
        let arrays = ["c", "a/c", "x"];
        let is = |p: &str| arrays.contains(&p);
        assert_eq!(split_chunk_key("x/c/0/1", is), Some(("x", "0/1")));
        assert_eq!(split_chunk_key("c/c/3", is), Some(("c", "3")));
        assert_eq!(split_chunk_key("a/c/c", is), Some(("a/c", "")));
        assert_eq!(split_chunk_key("x/cc/0", is), None);
        assert_eq!(split_chunk_key("y/c/0", is), None);
        assert_eq!(parse_chunk_indices("").unwrap(), Vec::<u64>::new());
        assert!(parse_chunk_indices("1//2").is_err());
        assert!(parse_chunk_indices("+1").is_err());
    }
}
