//! The one place references become the model, whatever holds them (JSON, Parquet): the
//! metadata documents (Zarr v3 as given, Zarr v2 translated once by [`super::v2`]) give the
//! dataset's groups and arrays, then chunk entries are set one at a time into the arrays'
//! manifests, bounded by the limits, each error naming the key.

use std::collections::{BTreeMap, HashMap, HashSet};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;
use vzarr_core::{ChunkManifest, Group, Provenance, VirtualArray, VirtualDataset};

use super::metadata::{count_chunks, metadata_document};
use super::names::{check_node_path, expand_templates, parse_chunk_indices, split_chunk_key};
use super::whole_files::WholeFiles;
use super::{ParseError, ParseLimits, ParsedRefs, v2};

/// One chunk entry, whatever form it had.
pub(super) enum ChunkValue<'a> {
    /// The chunk's bytes, inline.
    Inline(Vec<u8>),
    /// A byte range of a source.
    Range {
        /// The source (templates expanded).
        url: &'a str,
        /// First byte.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
    /// A whole source (`[url]`): kept aside until its size is known ([`WholeFiles`]).
    WholeFile {
        /// The source (templates expanded).
        url: &'a str,
    },
}

/// The dataset being built from references.
pub(super) struct Builder<'o> {
    origin: &'o str,
    limits: ParseLimits,
    ds: VirtualDataset,
    documents: HashMap<String, Bytes>,
    /// Zarr v2 arrays: how their chunk keys separate indices, and their rank.
    v2_arrays: HashMap<String, (char, usize)>,
    /// Arrays left out (valid Zarr v2 without a counterpart here): their chunk keys are skipped.
    left_out: HashSet<String>,
    references: u64,
    whole_files: WholeFiles,
}

impl<'o> Builder<'o> {
    fn bad_key(&self, key: &str, reason: String) -> ParseError {
        ParseError::BadKey {
            origin: self.origin.to_string(),
            key: key.to_string(),
            reason,
        }
    }

    fn malformed(&self, reason: String) -> ParseError {
        ParseError::Malformed {
            origin: self.origin.to_string(),
            reason,
        }
    }

    /// The groups and arrays of the metadata entries `meta` (key, value as given), every chunk
    /// missing.
    pub(super) fn new(
        origin: &'o str,
        limits: ParseLimits,
        meta: &[(String, Value)],
    ) -> Result<Self, ParseError> {
        let mut b = Builder {
            origin,
            limits,
            ds: VirtualDataset::new(),
            documents: HashMap::new(),
            v2_arrays: HashMap::new(),
            left_out: HashSet::new(),
            references: 0,
            whole_files: WholeFiles::default(),
        };
        b.ds.groups.clear();
        let mut nodes: Vec<(String, String, Value, Bytes)> = Vec::new();
        for (key, value) in meta {
            let path = if key == "zarr.json" {
                ""
            } else if let Some(p) = key.strip_suffix("/zarr.json") {
                p
            } else {
                continue;
            };
            check_node_path(path).map_err(|e| b.bad_key(key, e))?;
            let (doc, raw) = metadata_document(value).map_err(|e| b.bad_key(key, e))?;
            if doc.get("zarr_format").and_then(Value::as_u64) != Some(3) {
                return Err(b.bad_key(key, "not Zarr v3 metadata (zarr_format is not 3)".into()));
            }
            nodes.push((key.clone(), path.to_string(), doc, raw));
        }
        let v2_nodes = v2::collect_nodes(meta).map_err(|(k, e)| b.bad_key(&k, e))?;
        for (path, node) in v2_nodes {
            let key_of = |leaf: &str| {
                if path.is_empty() {
                    leaf.to_string()
                } else {
                    format!("{path}/{leaf}")
                }
            };
            let v3_key = key_of("zarr.json");
            if nodes.iter().any(|(_, p, _, _)| *p == path) {
                return Err(b.bad_key(
                    &v3_key,
                    "the node has both Zarr v3 and Zarr v2 metadata".into(),
                ));
            }
            let doc = match &node.zarray {
                Some(zarray) => match v2::translate_array(zarray, node.zattrs.as_ref()) {
                    Ok(a) => {
                        b.v2_arrays.insert(path.clone(), (a.separator, a.ndim));
                        a.doc
                    }
                    Err(v2::V2Error::Malformed(e)) => return Err(b.bad_key(&key_of(".zarray"), e)),
                    Err(v2::V2Error::Unsupported(reason)) => {
                        b.ds.skipped.push(vzarr_core::SkippedVariable {
                            path: path.clone(),
                            reason,
                        });
                        b.left_out.insert(path);
                        continue;
                    }
                },
                None => v2::translate_group(node.zattrs.as_ref()).map_err(|e| match e {
                    v2::V2Error::Malformed(e) | v2::V2Error::Unsupported(e) => {
                        b.bad_key(&key_of(".zattrs"), e)
                    }
                })?,
            };
            let raw = Bytes::from(
                serde_json::to_vec(&doc).map_err(|e| b.bad_key(&v3_key, e.to_string()))?,
            );
            nodes.push((v3_key, path, doc, raw));
        }
        let mut parsed_docs: Vec<(String, Value)> = Vec::new();
        let mut total_chunks: u64 = 0;
        for (key, path, doc, raw) in nodes {
            match doc.get("node_type").and_then(Value::as_str) {
                Some("group") => {
                    let Some(attributes) = vzarr_core::netcdf::attributes_of(&doc) else {
                        return Err(b.bad_key(&key, "group attributes are not an object".into()));
                    };
                    b.ds.groups.insert(path.clone(), Group { attributes });
                }
                Some("array") => {
                    // Bound the chunk count before the model allocates a manifest for it;
                    // shapes and grids the counter does not understand are refused by the
                    // model's parser before it allocates.
                    if let Some(n) =
                        count_chunks(&doc, limits.max_chunks).map_err(|e| b.bad_key(&key, e))?
                    {
                        total_chunks = total_chunks.saturating_add(n);
                        if total_chunks > limits.max_chunks {
                            return Err(b.bad_key(
                                &key,
                                format!(
                                    "the arrays have more than {} chunks in all",
                                    limits.max_chunks
                                ),
                            ));
                        }
                    }
                    let array = VirtualArray::from_zarr_metadata(&doc)
                        .map_err(|e| b.bad_key(&key, e.to_string()))?;
                    array
                        .validate()
                        .map_err(|e| b.bad_key(&key, e.to_string()))?;
                    b.ds.arrays.insert(path.clone(), array);
                }
                other => {
                    return Err(b.bad_key(
                        &key,
                        format!("node_type {other:?} is neither \"group\" nor \"array\""),
                    ));
                }
            }
            b.documents.insert(key, raw);
            parsed_docs.push((path, doc));
        }
        // A consolidated block is what zarr-python reads instead of the documents: it must say
        // what they say, or a reader opening consolidated would read something else.
        let docs: Vec<(&str, &Value)> = parsed_docs.iter().map(|(p, d)| (p.as_str(), d)).collect();
        if let Err((group, why)) = crate::consolidated::check(&docs) {
            let key = if group.is_empty() {
                "zarr.json".to_string()
            } else {
                format!("{group}/zarr.json")
            };
            return Err(b.bad_key(
                &key,
                format!(
                    "consolidated metadata disagrees with the per-node documents ({why}); \
                     refused, since zarr-python reading it consolidated would not read what \
                     the documents say"
                ),
            ));
        }
        for path in b.ds.arrays.keys() {
            if b.ds.groups.contains_key(path) {
                return Err(b.malformed(format!("{path} is both a group and an array")));
            }
        }
        Ok(b)
    }

    /// The arrays read from Zarr v2 metadata, with their number of chunks.
    pub(super) fn v2_array_chunks(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = self
            .v2_arrays
            .keys()
            .map(|p| (p.clone(), self.ds.arrays[p].manifest.len()))
            .collect();
        v.sort();
        v
    }

    /// The array and chunk (linear index) a chunk key names; `None` for a chunk of an array
    /// left out.
    fn resolve(&self, key: &str) -> Result<Option<(String, usize)>, ParseError> {
        let arrays = &self.ds.arrays;
        let v2_arrays = &self.v2_arrays;
        let (path, index) = if let Some((path, rest)) = split_chunk_key(key, |p| {
            arrays.contains_key(p) && !v2_arrays.contains_key(p)
        }) {
            (
                path,
                parse_chunk_indices(rest).map_err(|e| self.bad_key(key, e))?,
            )
        } else if let Some((path, rest, (sep, ndim))) = v2_chunk_key(key, v2_arrays) {
            let index = v2::parse_v2_indices(rest, sep, ndim).map_err(|e| self.bad_key(key, e))?;
            (path, index)
        } else if self.left_out.iter().any(|p| {
            p.is_empty()
                || key
                    .strip_prefix(p.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        }) {
            return Ok(None);
        } else {
            return Err(self.bad_key(
                key,
                "neither a metadata key nor a chunk key (<array>/c/<i>/<j>... in Zarr v3, \
                 <array>/<i>.<j>... in Zarr v2) of any array"
                    .into(),
            ));
        };
        let array = &arrays[path];
        let grid_shape = array.grid.grid_shape();
        if index.len() != grid_shape.len() {
            return Err(self.bad_key(
                key,
                format!(
                    "{} chunk indices for the {}-dimensional array {path}",
                    index.len(),
                    grid_shape.len()
                ),
            ));
        }
        let lin = array.grid.linear_index(&index).ok_or_else(|| {
            self.bad_key(
                key,
                format!(
                    "chunk index {index:?} is outside the chunk grid {grid_shape:?} of array {path}"
                ),
            )
        })?;
        let lin =
            usize::try_from(lin).map_err(|_| self.bad_key(key, "chunk index too large".into()))?;
        Ok(Some((path.to_string(), lin)))
    }

    /// Chunk entries set so far.
    pub(super) fn references(&self) -> u64 {
        self.references
    }

    /// Sets chunk `lin` of array `path`; `key` names the entry in errors.
    pub(super) fn set(
        &mut self,
        key: &str,
        path: &str,
        lin: usize,
        value: ChunkValue<'_>,
    ) -> Result<(), ParseError> {
        self.references += 1;
        if self.references > self.limits.max_references {
            return Err(self.bad_key(
                key,
                format!(
                    "the references hold more than {} chunks in all",
                    self.limits.max_references
                ),
            ));
        }
        let bad = |reason: String| ParseError::BadKey {
            origin: self.origin.to_string(),
            key: key.to_string(),
            reason,
        };
        let array = self
            .ds
            .arrays
            .get_mut(path)
            .ok_or_else(|| bad(format!("no array {path}")))?;
        set_chunk(
            &mut array.manifest,
            &mut self.whole_files,
            path,
            lin,
            value,
            bad,
        )
    }

    /// One chunk entry of JSON references: `[url, offset, length]`, `[url]`, `"base64:..."`
    /// or raw text.
    pub(super) fn json_chunk(
        &mut self,
        key: &str,
        value: Value,
        templates: &BTreeMap<String, String>,
    ) -> Result<(), ParseError> {
        let Some((path, lin)) = self.resolve(key)? else {
            return Ok(());
        };
        match value {
            Value::String(s) => {
                let bytes = if let Some(b) = s.strip_prefix("base64:") {
                    base64::engine::general_purpose::STANDARD
                        .decode(b)
                        .map_err(|e| self.bad_key(key, format!("invalid base64: {e}")))?
                } else {
                    s.into_bytes()
                };
                self.set(key, &path, lin, ChunkValue::Inline(bytes))
            }
            Value::Array(items) => {
                let url = items.first().and_then(Value::as_str).ok_or_else(|| {
                    self.bad_key(
                        key,
                        "the first item of a reference must be a URL string".into(),
                    )
                })?;
                if url.is_empty() {
                    return Err(self.bad_key(key, "empty URL".into()));
                }
                let url = expand_templates(url, templates).map_err(|e| self.bad_key(key, e))?;
                match items.len() {
                    1 => self.set(key, &path, lin, ChunkValue::WholeFile { url: &url }),
                    3 => {
                        let offset = self.json_u64(key, &items[1], "offset")?;
                        let length = self.json_u64(key, &items[2], "length")?;
                        self.set(
                            key,
                            &path,
                            lin,
                            ChunkValue::Range {
                                url: &url,
                                offset,
                                length,
                            },
                        )
                    }
                    n => Err(self.bad_key(
                        key,
                        format!("a reference has {n} items (expected [url, offset, length])"),
                    )),
                }
            }
            _ => Err(self.bad_key(
                key,
                "a chunk value must be [url, offset, length] or a string".into(),
            )),
        }
    }

    fn json_u64(&self, key: &str, v: &Value, what: &str) -> Result<u64, ParseError> {
        match v {
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Ok(u)
                } else if n.as_i64().is_some_and(|i| i < 0) || n.as_f64().is_some_and(|f| f < 0.0) {
                    Err(self.bad_key(key, format!("negative {what} {n}")))
                } else {
                    Err(self.bad_key(key, format!("{what} {n} is not an integer in 0..2^64")))
                }
            }
            other => Err(self.bad_key(key, format!("{what} {other} is not a number"))),
        }
    }

    /// The dataset: implicit parent groups added, the provenance set, validated.
    pub(super) fn finish(
        self,
        provenance: Provenance,
        has_provenance: bool,
    ) -> Result<ParsedRefs, ParseError> {
        let Builder {
            origin,
            mut ds,
            documents,
            whole_files,
            ..
        } = self;
        let malformed = |reason: String| ParseError::Malformed {
            origin: origin.to_string(),
            reason,
        };
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
            whole_files,
        })
    }
}

/// Sets chunk `lin` of `manifest` (array `path`'s) to `value`, a whole-file chunk into
/// `whole` until its size is known; `bad` makes an error about the entry.
pub(super) fn set_chunk(
    manifest: &mut ChunkManifest,
    whole: &mut WholeFiles,
    path: &str,
    lin: usize,
    value: ChunkValue<'_>,
    bad: impl Fn(String) -> ParseError,
) -> Result<(), ParseError> {
    match value {
        ChunkValue::Inline(bytes) => manifest
            .set_inline(lin, bytes)
            .map_err(|e| bad(e.to_string())),
        ChunkValue::Range {
            url,
            offset,
            length,
        } => {
            if url.is_empty() {
                return Err(bad("empty URL".into()));
            }
            if offset.checked_add(length).is_none() {
                return Err(bad(format!("offset {offset} + length {length} overflows")));
            }
            let id = manifest.intern(url).map_err(|e| bad(e.to_string()))?;
            manifest
                .set_range(lin, id, offset, length)
                .map_err(|e| bad(e.to_string()))
        }
        ChunkValue::WholeFile { url } => {
            if url.is_empty() {
                return Err(bad("empty URL".into()));
            }
            if lin >= manifest.len() {
                return Err(bad(format!(
                    "outside the {} chunks of array {path}",
                    manifest.len()
                )));
            }
            whole.push(path, lin, url);
            Ok(())
        }
    }
}

/// The Zarr v2 array (per `v2_arrays`: path -> separator and rank) a chunk key belongs to,
/// with the key's index part: `<path>/<i>.<j>` with separator `.`, `<path>/<i>/<j>` with `/`.
fn v2_chunk_key<'k>(
    key: &'k str,
    v2_arrays: &HashMap<String, (char, usize)>,
) -> Option<(&'k str, &'k str, (char, usize))> {
    if v2_arrays.is_empty() {
        return None;
    }
    let (path, rest) = key.rsplit_once('/').unwrap_or(("", key));
    if let Some(&(sep, ndim)) = v2_arrays.get(path)
        && (sep == '.' || ndim <= 1)
    {
        return Some((path, rest, (sep, ndim)));
    }
    // Separator `/`: the path is the key less its last `ndim` segments.
    for (p, _) in key.match_indices('/').collect::<Vec<_>>().into_iter().rev() {
        let (path, rest) = (&key[..p], &key[p + 1..]);
        if let Some(&(sep, ndim)) = v2_arrays.get(path)
            && sep == '/'
        {
            return (rest.split('/').count() == ndim.max(1)).then_some((path, rest, (sep, ndim)));
        }
    }
    if let Some(&(sep, ndim)) = v2_arrays.get("")
        && sep == '/'
        && key.split('/').count() == ndim.max(1)
    {
        return Some(("", key, (sep, ndim)));
    }
    None
}
