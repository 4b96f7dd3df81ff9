//! Consolidated metadata as zarr-python (3.4) writes it in a Zarr v3 group's `zarr.json`:
//! `"consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata":
//! {"<path>": <that node's zarr.json>, ...}}`, every node below the group by its path relative
//! to the group, ordered by depth, then in the order they are given (the dataset's: the
//! source's order of its variables); a group below carries an empty block of its own
//! (`"metadata": {}`), as zarr-python writes it. zarr-python's `consolidate_metadata` orders
//! a depth by case-folded path instead, but reads any order, and lists a group's members (and
//! xarray a dataset's variables) in the block's order: by depth, the given order kept.
//!
//! A reader that opens consolidated (`xarray.open_zarr(..., consolidated=True)`) reads only
//! this block, never the per-node documents: a block that disagrees with them would make it
//! read something else than what vzarr checked. [`check`] refuses such references.

use serde_json::{Map, Value, json};

/// The key of the block in a group document.
pub const KEY: &str = "consolidated_metadata";

/// An empty block, as zarr-python gives the groups below the consolidated one.
fn empty() -> Value {
    json!({"kind": "inline", "must_understand": false, "metadata": {}})
}

/// The path of `path` relative to the group at `under` (`""`: the root), if it is below it.
fn relative<'a>(path: &'a str, under: &str) -> Option<&'a str> {
    if path.is_empty() || path == under {
        return None;
    }
    if under.is_empty() {
        return Some(path);
    }
    path.strip_prefix(under)?.strip_prefix('/')
}

/// The consolidated block of the group at `under` over `nodes` (every node's path, `""` for
/// the root, and its metadata document): each node below it, its own block (if any) removed
/// and, for a group, an empty one put in its place.
pub fn block<'a>(nodes: impl IntoIterator<Item = (&'a str, &'a Value)>, under: &str) -> Value {
    let mut members: Vec<(&str, &Value)> = nodes
        .into_iter()
        .filter_map(|(p, d)| relative(p, under).map(|r| (r, d)))
        .collect();
    // Stable: the given order within a depth.
    members.sort_by_key(|(p, _)| p.matches('/').count());
    let mut metadata = Map::new();
    for (rel, doc) in members {
        let mut doc = doc.clone();
        if let Value::Object(m) = &mut doc {
            m.shift_remove(KEY);
            if m.get("node_type").and_then(Value::as_str) == Some("group") {
                m.insert(KEY.to_string(), empty());
            }
        }
        metadata.insert(rel.to_string(), doc);
    }
    json!({"kind": "inline", "must_understand": false, "metadata": metadata})
}

/// `group_doc` with the consolidated block of the group at `under` over `nodes`.
pub fn consolidate<'a>(
    group_doc: &Value,
    nodes: impl IntoIterator<Item = (&'a str, &'a Value)>,
    under: &str,
) -> Value {
    let mut doc = group_doc.clone();
    if let Value::Object(m) = &mut doc {
        m.insert(KEY.to_string(), block(nodes, under));
    }
    doc
}

/// Checks the consolidated block of every group document among `nodes` that carries one: it
/// must equal the block rebuilt from the per-node documents (the same members, each the same
/// document). Returns the path of the first group whose block disagrees and why.
pub fn check(nodes: &[(&str, &Value)]) -> Result<(), (String, String)> {
    for (path, doc) in nodes {
        let Some(given) = doc.get(KEY) else {
            continue;
        };
        if given.is_null() {
            continue;
        }
        let want = block(nodes.iter().copied(), path);
        if *given == want {
            continue;
        }
        return Err((path.to_string(), difference(given, &want)));
    }
    Ok(())
}

/// What differs between a given block and the one the per-node documents imply.
fn difference(given: &Value, want: &Value) -> String {
    let (Some(g), Some(w)) = (
        given.get("metadata").and_then(Value::as_object),
        want.get("metadata").and_then(Value::as_object),
    ) else {
        return "not an inline block of metadata".into();
    };
    if given.get("kind") != want.get("kind")
        || given.get("must_understand") != want.get("must_understand")
    {
        return "its kind or must_understand is not zarr-python's (\"inline\", false)".into();
    }
    if let Some(k) = g.keys().find(|k| !w.contains_key(*k)) {
        return format!("it lists {k:?}, which has no metadata document of its own");
    }
    if let Some(k) = w.keys().find(|k| !g.contains_key(*k)) {
        return format!("it leaves out {k:?}");
    }
    match w.iter().find(|(k, v)| g.get(*k) != Some(v)) {
        Some((k, _)) => format!("its entry for {k:?} differs from {k}/zarr.json"),
        None => "it differs from the per-node documents".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_by_depth_in_the_given_order_nested_groups_empty() {
        let g = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
        let a = json!({"zarr_format": 3, "node_type": "array", "shape": [1]});
        let nodes = [
            ("", &g),
            ("b/x", &a),
            ("B", &g),
            ("a", &g),
            ("b", &g),
            ("a/c", &a),
        ];
        let b = block(nodes.iter().copied(), "");
        let keys: Vec<&String> = b["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["B", "a", "b", "b/x", "a/c"]);
        assert_eq!(b["metadata"]["a"][KEY], empty());
        assert!(b["metadata"]["a/c"].get(KEY).is_none());
        let sub = block(nodes.iter().copied(), "b");
        let keys: Vec<&String> = sub["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["x"]);
    }

    #[test]
    fn check_refuses_what_disagrees() {
        let g = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
        let a = json!({"zarr_format": 3, "node_type": "array", "shape": [1]});
        let nodes = [("", &g), ("v", &a)];
        let root = consolidate(&g, nodes.iter().copied(), "");
        assert!(check(&[("", &root), ("v", &a)]).is_ok());
        let mut bad = root.clone();
        bad[KEY]["metadata"]["v"]["shape"] = json!([2]);
        let e = check(&[("", &bad), ("v", &a)]).unwrap_err();
        assert!(e.1.contains("\"v\""), "{e:?}");
        let mut extra = root.clone();
        extra[KEY]["metadata"]["w"] = a.clone();
        assert!(
            check(&[("", &extra), ("v", &a)])
                .unwrap_err()
                .1
                .contains("\"w\"")
        );
        let mut missing = root;
        missing[KEY]["metadata"] = json!({});
        assert!(
            check(&[("", &missing), ("v", &a)])
                .unwrap_err()
                .1
                .contains("leaves out")
        );
    }
}
