//! Streaming passes over reference JSON, so that opening a manifest of millions of references
//! never holds its whole JSON tree: the first pass keeps the small parts (version, templates,
//! the `vzarr` block, metadata documents) and skips chunk values; the second hands chunk
//! entries one at a time to the caller, who stores them in columnar manifests.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// The small parts of a reference file, from the first pass.
#[derive(Debug, Default)]
pub(crate) struct Head {
    /// Whether the top level is a JSON object.
    pub(crate) is_object: bool,
    /// `version`, as given.
    pub(crate) version: Option<Value>,
    /// Whether a `refs` key is present, and whether its value is an object.
    pub(crate) refs: Option<bool>,
    /// `gen`, `templates` and `vzarr`, as given.
    pub(crate) gen_: Option<Value>,
    pub(crate) templates: Option<Value>,
    pub(crate) vzarr: Option<Value>,
    /// Metadata entries inside `refs` (version 1) and at the top level (version 0), in order.
    pub(crate) refs_meta: Vec<(String, Value)>,
    pub(crate) top_meta: Vec<(String, Value)>,
}

impl Head {
    /// Whether the file is in the version-1 form (`refs` or `version` at the top level).
    pub(crate) fn is_v1(&self) -> bool {
        self.refs.is_some() || self.version.is_some()
    }
}

/// Whether `key` names a metadata document (`zarr.json`, `path/zarr.json`, and the Zarr v2
/// `.zarray`, `.zattrs`, `.zgroup`, `.zmetadata`).
pub(crate) fn is_metadata_key(key: &str) -> bool {
    let leaf = key.rsplit('/').next().unwrap_or(key);
    leaf == "zarr.json" || crate::read::V2_LEAVES.contains(&leaf)
}

/// Pass 1 over a whole reference file.
pub(crate) fn head(bytes: &[u8]) -> Result<Head, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let head = de.deserialize_any(TopVisitor)?;
    de.end()?;
    Ok(head)
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Head;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Head, A::Error> {
        let mut h = Head {
            is_object: true,
            ..Default::default()
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => h.version = Some(map.next_value()?),
                "gen" => h.gen_ = Some(map.next_value()?),
                "templates" => h.templates = Some(map.next_value()?),
                "vzarr" => h.vzarr = Some(map.next_value()?),
                "refs" => {
                    let (is_object, meta) = map.next_value_seed(MetaSeed)?;
                    h.refs = Some(is_object);
                    h.refs_meta = meta;
                }
                k if is_metadata_key(k) => {
                    let v: Value = map.next_value()?;
                    h.top_meta.push((key, v));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(h)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Head, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Head::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Head, E> {
        Ok(Head::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Head, E> {
        Ok(Head::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Head, E> {
        Ok(Head::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Head, E> {
        Ok(Head::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Head, E> {
        Ok(Head::default())
    }
    fn visit_unit<E>(self) -> Result<Head, E> {
        Ok(Head::default())
    }
}

/// The metadata entries of a `refs` object (chunk values skipped); `false` when the value is
/// not an object.
struct MetaSeed;

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = (bool, Vec<(String, Value)>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = (bool, Vec<(String, Value)>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of references")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if is_metadata_key(&key) {
                meta.push((key, map.next_value()?));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok((true, meta))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((false, Vec::new()))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((false, Vec::new()))
    }
}

/// Pass 2: calls `f` with every non-metadata entry of the references (inside `refs` when
/// `v1`, else at the top level), in file order, one at a time. The first error `f` returns
/// stops the pass and is returned.
pub(crate) fn for_each_chunk<E>(
    bytes: &[u8],
    v1: bool,
    f: &mut dyn FnMut(String, Value) -> Result<(), E>,
) -> Result<(), PassError<E>> {
    let failed: RefCell<Option<E>> = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let r = de.deserialize_map(ChunkTop {
        v1,
        f: RefCell::new(f),
        failed: &failed,
    });
    if let Some(e) = failed.into_inner() {
        return Err(PassError::Caller(e));
    }
    r.map_err(PassError::Json)
}

/// Why the second pass stopped.
#[derive(Debug)]
pub(crate) enum PassError<E> {
    /// The caller's callback failed.
    Caller(E),
    /// The JSON itself (cannot happen after a successful first pass, but is handled).
    Json(serde_json::Error),
}

struct ChunkTop<'a, 'f, E> {
    v1: bool,
    f: RefCell<&'f mut dyn FnMut(String, Value) -> Result<(), E>>,
    failed: &'a RefCell<Option<E>>,
}

impl<'a, 'f, 'de, E> Visitor<'de> for ChunkTop<'a, 'f, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if self.v1 {
                if key == "refs" {
                    map.next_value_seed(ChunkMap {
                        f: &self.f,
                        failed: self.failed,
                    })?;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            } else if is_metadata_key(&key) {
                map.next_value::<IgnoredAny>()?;
            } else {
                let v: Value = map.next_value()?;
                let r = (self.f.borrow_mut())(key, v);
                if let Err(e) = r {
                    *self.failed.borrow_mut() = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
        }
        Ok(())
    }
}

struct ChunkMap<'a, 'b, 'f, E> {
    f: &'b RefCell<&'f mut dyn FnMut(String, Value) -> Result<(), E>>,
    failed: &'a RefCell<Option<E>>,
}

impl<'a, 'b, 'f, 'de, E> DeserializeSeed<'de> for ChunkMap<'a, 'b, 'f, E> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'a, 'b, 'f, 'de, E> Visitor<'de> for ChunkMap<'a, 'b, 'f, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of references")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if is_metadata_key(&key) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let v: Value = map.next_value()?;
            let r = (self.f.borrow_mut())(key, v);
            if let Err(e) = r {
                *self.failed.borrow_mut() = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_passes() {
        let text = br#"{"vzarr": {"a": 1}, "refs": {"zarr.json": "{}", "v/c/0": ["u", 0, 1],
            "v/zarr.json": {"x": 2}, "v/c/1": "base64:"}, "version": 1}"#;
        let h = head(text).unwrap();
        assert!(h.is_object && h.is_v1() && h.refs == Some(true));
        let keys: Vec<&str> = h.refs_meta.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zarr.json", "v/zarr.json"]);
        let mut seen = Vec::new();
        for_each_chunk::<()>(text, true, &mut |k, v| {
            seen.push((k, v));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0, "v/c/0");
        // Version 0: the top level is the refs.
        let v0 = br#"{"zarr.json": "{}", "a/c/0": "x"}"#;
        let h = head(v0).unwrap();
        assert!(!h.is_v1() && h.top_meta.len() == 1);
        let mut n = 0;
        for_each_chunk::<()>(v0, false, &mut |_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1);
        // The callback's error stops the pass.
        let e = for_each_chunk(text, true, &mut |k, _| {
            if k == "v/c/0" { Err(k) } else { Ok(()) }
        })
        .unwrap_err();
        assert!(matches!(e, PassError::Caller(k) if k == "v/c/0"));
        // Not an object at all.
        assert!(!head(b"[1]").unwrap().is_object);
        assert_eq!(head(br#"{"refs": 5}"#).unwrap().refs, Some(false));
    }
}
