//! HDF5 object references and links, spelled as VirtualiZarr 2.8's HDF5 parser spells them with
//! `links_and_references=True`: the draft Links and Object References convention
//! (<https://github.com/catalystneuro/zarr-links-references>) and the `ref` convention v2.0.0
//! (<https://github.com/R-CF/zarr_convention_ref/blob/v2.0.0/README.md>), each registered in the
//! node's `zarr_conventions` attribute.
//!
//! An object reference is an address in the file (HDF5 File Format Specification 3.0, section
//! IV.A.2.d, class 7, and appendix D, VIII.B-C): it cannot be referenced in place, so it is
//! resolved at scan time to its target's path, the first path a depth-first walk of the file in
//! name order finds (the name h5py and the HDF5 library give an object opened by reference),
//! written relative to the node that holds it (`..` is the node's parent, `.` the node itself):
//! - a dataset of object references: a Zarr `string` array of those paths ("" for a null
//!   reference), stored inline (`vlen-utf8`) on the dataset's chunk grid cut to the array,
//!   fill value "", marked `"links_references": {"references": true}`;
//! - a compound member of object references: a `fixed_length_utf32` field of those paths (see
//!   `records`), the array marked `"links_references": {"references": [member names]}`;
//! - an attribute: `{"ref": {"node": path}}`, `null` for a null reference, nested lists for an
//!   array of them.
//!
//! Links, when the scan records them ([`crate::ScanOptions::record_links`]), are not followed
//! but listed in the attributes of the group that holds them, as
//! `"links_references": {"links": {name: {"ref": {...}}}}`: a soft link's path relative to the
//! group (a relative one as written), an external link's file (resolved against the scanned
//! file's URL) as `uri` and its path as `node`, and a second hard link to an object already met
//! the path of its first name.
//!
//! Region and attribute references (a selection of a dataset, an attribute) have no such
//! spelling and are always left out, as VirtualiZarr refuses them. Paths are the file's HDF5
//! names; where vzarr maps a name Zarr does not allow (`vzarr_core::names`), the mapped node
//! keeps the source name in its attributes.

use std::collections::HashMap;

use serde_json::{Value, json};
use vzarr_core::Attributes;
use vzarr_hdf5_format::{Attribute, DataspaceKind, File, ReferenceKind, TypeClass};
use vzarr_hdf5_map::refusal;

use crate::ctx::ObjectNames;
use crate::strings::Refusal;

/// The Links and Object References convention (draft), as VirtualiZarr 2.8 registers it.
fn links_references_convention() -> Value {
    json!({
        "uuid": "93624424-4c95-4eda-b86a-f1880206739f",
        "spec_url": "https://github.com/catalystneuro/zarr-links-references/blob/main/README.md",
        "name": "links_references",
        "description": "Links and object references between nodes of Zarr hierarchies",
    })
}

/// The `ref` convention v2.0.0, whose objects name the targets of links and references.
fn ref_convention() -> Value {
    json!({
        "uuid": "d89b30cf-ed8c-43d5-9a16-b492f0cd8786",
        "schema_url":
            "https://raw.githubusercontent.com/R-CF/zarr_convention_ref/refs/tags/v2.0.0/schema.json",
        "spec_url": "https://github.com/R-CF/zarr_convention_ref/blob/v2.0.0/README.md",
        "name": "ref",
        "description": "External Reference Convention",
    })
}

/// Which convention a node uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Convention {
    /// Links and Object References.
    LinksReferences,
    /// `ref`.
    Ref,
}

/// Registers `conventions` in `attrs["zarr_conventions"]`, each once (by uuid), after those
/// already there.
pub(crate) fn register(attrs: &mut Attributes, conventions: &[Convention]) {
    let mut list = match attrs.shift_remove("zarr_conventions") {
        Some(Value::Array(v)) => v,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    for c in conventions {
        let value = match c {
            Convention::LinksReferences => links_references_convention(),
            Convention::Ref => ref_convention(),
        };
        if !list.iter().any(|e| e.get("uuid") == value.get("uuid")) {
            list.push(value);
        }
    }
    attrs.insert("zarr_conventions".into(), Value::Array(list));
}

/// Whether references of `kind` name an object (and can be spelled as its path).
pub(crate) fn names_an_object(kind: ReferenceKind) -> bool {
    matches!(kind, ReferenceKind::Object1 | ReferenceKind::Object2)
}

/// Why data of reference `kind` is left out when references are read (region and attribute
/// references); `None` for object references.
pub(crate) fn unspellable(kind: ReferenceKind) -> Option<Refusal> {
    match kind {
        ReferenceKind::Object1 | ReferenceKind::Object2 => None,
        ReferenceKind::DatasetRegion1 | ReferenceKind::DatasetRegion2 => {
            Some(refusal::REGION_REFERENCES.into())
        }
        ReferenceKind::Attribute => Some(refusal::ATTRIBUTE_REFERENCES.into()),
    }
}

/// The path from the node at the absolute path `start` to the node at `target` (both `/`-
/// separated HDF5 paths): `..` for each of `start`'s components past their common part, then
/// the rest of `target`; `.` for `start` itself.
pub fn relative_path(target: &str, start: &str) -> String {
    let t: Vec<&str> = target.split('/').filter(|c| !c.is_empty()).collect();
    let s: Vec<&str> = start.split('/').filter(|c| !c.is_empty()).collect();
    let common = t.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = std::iter::repeat_n("..", s.len() - common).collect();
    parts.extend_from_slice(&t[common..]);
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// Resolves object references to paths relative to one node, each target's path found once.
pub(crate) struct RefPaths<'a> {
    names: &'a ObjectNames,
    /// The absolute HDF5 path of the node holding the references.
    start: String,
    found: HashMap<u64, String>,
}

impl<'a> RefPaths<'a> {
    /// Paths relative to the node at the source path `start` (without or with a leading `/`).
    pub(crate) fn new(names: &'a ObjectNames, start: &str) -> Self {
        RefPaths {
            names,
            start: format!("/{}", start.trim_start_matches('/')),
            found: HashMap::new(),
        }
    }

    /// The path of the target of the reference element `e` of `kind` ("" for a null
    /// reference), or why it has none.
    pub(crate) fn path(
        &mut self,
        file: &File,
        kind: ReferenceKind,
        e: &[u8],
    ) -> Result<Result<String, Refusal>, vzarr_hdf5_format::Error> {
        let Some(r) = file.decode_reference(kind, e)? else {
            return Ok(Ok(String::new()));
        };
        if let Some(other) = &r.file {
            return Ok(Err(format!(
                "object reference to an object in another file ({other:?}): left out"
            )));
        }
        if let Some(p) = self.found.get(&r.object) {
            return Ok(Ok(p.clone()));
        }
        let Some(target) = self.names.0.get(&r.object) else {
            return Ok(Err(format!(
                "object reference to the object at byte {}, which no hard link from the root \
                 group reaches (it has no path): left out",
                r.object
            )));
        };
        let p = relative_path(target, &self.start);
        self.found.insert(r.object, p.clone());
        Ok(Ok(p))
    }
}

/// The value of the attribute `a` of the node at source path `start` when it holds object
/// references: `{"ref": {"node": path}}` each (`null` for a null one), nested as its
/// dataspace; `None` when it is not of an object reference type. `names`: the file's object
/// paths, or why they cannot be had.
pub(crate) fn attribute_value(
    file: &File,
    a: &Attribute,
    names: Result<&ObjectNames, &String>,
    start: &str,
) -> Option<Result<Value, String>> {
    let TypeClass::Reference { kind } = a.datatype.class else {
        return None;
    };
    if !names_an_object(kind) {
        return None;
    }
    let names = match names {
        Ok(n) => n,
        Err(why) => return Some(Err(format!("object references unresolved: {why}"))),
    };
    let es = a.datatype.storage_size(file.superblock().sizes()) as usize;
    if es == 0 {
        return Some(Err("object reference of 0 bytes".into()));
    }
    let dims: Vec<u64> = match a.dataspace.kind {
        DataspaceKind::Null => return Some(Ok(Value::Null)),
        DataspaceKind::Scalar => Vec::new(),
        DataspaceKind::Simple => a.dataspace.dims.clone(),
    };
    let n = dims.iter().try_fold(1u64, |x, &d| x.checked_mul(d));
    if n.is_none_or(|n| n.saturating_mul(es as u64) != a.value.len() as u64) {
        return Some(Err(
            "object references of a size other than the attribute's".into(),
        ));
    }
    let mut paths = RefPaths::new(names, start);
    let mut flat = Vec::new();
    for e in a.value.chunks_exact(es) {
        match paths.path(file, kind, e) {
            Ok(Ok(p)) if p.is_empty() => flat.push(Value::Null),
            Ok(Ok(p)) => flat.push(json!({"ref": {"node": p}})),
            Ok(Err(why)) => return Some(Err(why)),
            Err(e) => return Some(Err(format!("object reference unreadable: {e}"))),
        }
    }
    Some(Ok(nest(flat, &dims)))
}

/// `flat` (C order) as nested lists of `dims` (a scalar: its one value).
fn nest(flat: Vec<Value>, dims: &[u64]) -> Value {
    match dims {
        [] => flat.into_iter().next().unwrap_or(Value::Null),
        [_] => Value::Array(flat),
        [first, rest @ ..] => {
            let per = (flat.len() as u64 / (*first).max(1)) as usize;
            let mut it = flat.into_iter();
            Value::Array(
                (0..*first)
                    .map(|_| nest(it.by_ref().take(per).collect(), rest))
                    .collect(),
            )
        }
    }
}

/// Where a link leads, recorded in the attributes of the group that holds it.
pub(crate) enum LinkRecord<'a> {
    /// A soft link's path as written.
    Soft(&'a str),
    /// An external link: its file name and the path in that file.
    External { file: &'a str, path: &'a str },
    /// A second hard link to an object whose first name is this absolute path.
    Hard(&'a str),
}

/// The `ref` object of a link in the group at the absolute HDF5 path `group`, in the file at
/// `url`.
pub(crate) fn link_ref(link: &LinkRecord<'_>, group: &str, url: &str) -> Value {
    match link {
        LinkRecord::Soft(to) if to.starts_with('/') => {
            json!({"ref": {"node": relative_path(to, group)}})
        }
        // HDF5 resolves a relative soft link against its group, as a ref node is resolved.
        LinkRecord::Soft(to) => json!({"ref": {"node": to}}),
        LinkRecord::External { file, path } => json!({"ref": {
            "uri": resolve_external(url, file),
            "node": format!("/{}", path.trim_start_matches('/')),
        }}),
        LinkRecord::Hard(first) => json!({"ref": {"node": relative_path(first, group)}}),
    }
}

/// Records `links` (name, `ref` object) in a group's attributes.
pub(crate) fn record_links(attrs: &mut Attributes, links: serde_json::Map<String, Value>) {
    if links.is_empty() {
        return;
    }
    register(attrs, &[Convention::LinksReferences, Convention::Ref]);
    attrs.insert("links_references".into(), json!({ "links": links }));
}

/// The location of an external link's file named `name` in the file at `url`: a URL as given,
/// an absolute path as a `file://` URL, else beside that file (`.` and `..` resolved).
pub(crate) fn resolve_external(url: &str, name: &str) -> String {
    if name.contains("://") {
        return name.to_string();
    }
    if name.starts_with('/') {
        return format!("file://{}", normalise(name));
    }
    let dir = url.rsplit_once('/').map_or("", |(d, _)| d);
    match dir.split_once("://") {
        None => normalise(&format!("{dir}/{name}")),
        Some((scheme, rest)) => match rest.split_once('/') {
            Some((root, path)) => {
                format!("{scheme}://{root}/{}", normalise(&format!("{path}/{name}")))
            }
            None => format!("{scheme}://{rest}/{}", normalise(name)),
        },
    }
}

/// A `/`-separated path with `.`, empty and resolvable `..` components removed (as
/// `posixpath.normpath`: `..` above an absolute root is dropped, above a relative one kept).
fn normalise(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    let joined = out.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_walk_up_from_the_node() {
        assert_eq!(
            relative_path(
                "/devices/probe",
                "/general/extracellular_ephys/electrodes/group"
            ),
            "../../../../devices/probe"
        );
        assert_eq!(relative_path("/values", "/values"), ".");
        assert_eq!(relative_path("/values", "/"), "values");
        assert_eq!(relative_path("/", "/a/b"), "../..");
        assert_eq!(relative_path("/a/c", "/a/b"), "../c");
        assert_eq!(relative_path("/a/b/c", "/a/b"), "c");
    }

    #[test]
    fn external_files_resolve_beside_the_file() {
        let cases = [
            ("file:///data/a.h5", "b.h5", "file:///data/b.h5"),
            ("file:///data/x/a.h5", "../b.h5", "file:///data/b.h5"),
            (
                "s3://bucket/dir/a.nwb",
                "sub/b.nwb",
                "s3://bucket/dir/sub/b.nwb",
            ),
            ("s3://bucket/dir/a.nwb", "/abs/b.nwb", "file:///abs/b.nwb"),
            (
                "file:///data/a.h5",
                "https://example.org/b.h5",
                "https://example.org/b.h5",
            ),
            ("s3://bucket/a.nwb", "./b.nwb", "s3://bucket/b.nwb"),
        ];
        for (url, name, expected) in cases {
            assert_eq!(resolve_external(url, name), expected, "{url} {name}");
        }
    }

    #[test]
    fn arrays_nest_as_their_dataspace() {
        let flat: Vec<Value> = (0..6).map(Value::from).collect();
        assert_eq!(nest(flat, &[2, 3]), json!([[0, 1, 2], [3, 4, 5]]));
        assert_eq!(nest(vec![json!(1)], &[]), json!(1));
    }

    #[test]
    fn conventions_are_registered_once() {
        let mut attrs = Attributes::new();
        register(&mut attrs, &[Convention::Ref]);
        register(&mut attrs, &[Convention::LinksReferences, Convention::Ref]);
        let names: Vec<&str> = attrs["zarr_conventions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ref", "links_references"]);
    }
}
