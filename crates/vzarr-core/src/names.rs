//! Zarr v3 node names for the names of source objects (HDF5 links, netCDF variables) that Zarr
//! forbids or reserves.
//!
//! The Zarr v3 core specification ("Node names") says a node name must not be the empty
//! string, must not contain `/`, must not consist of periods only (`.`, `..`, ...) and must not
//! start with the reserved prefix `__`; zarrs refuses such names, zarr-python tolerates some.
//! A child called `zarr.json` cannot be stored either: its key prefix is its group's own
//! metadata document. Source formats allow all of these (HDF5 allows every name but the empty
//! one and names with `/`; netCDF allows `__x`).
//!
//! The mapping, deterministic and documented in `manifests/FORMAT.md`:
//! 1. A name Zarr allows is kept as it is.
//! 2. Otherwise every `/` becomes `%2F`; then, if the name is still not allowed, its first
//!    character is percent-encoded (`__x` -> `%5F_x`, `.` -> `%2E`, `..` -> `%2E.`,
//!    `zarr.json` -> `%7Aarr.json`); the empty name becomes `%00`.
//! 3. A mapped name that equals the name of a sibling (after mapping) gets the first free
//!    suffix `~1`, `~2`, ... Names Zarr allows never change; mapped names are suffixed in the
//!    order of their source names.
//!
//! Every renamed node keeps its source name in the attribute [`ORIGINAL_NAME_ATTR`].
//! Dimension names that are the names of such nodes are mapped with rule 2 (no suffix), so
//! that a renamed coordinate still names its dimension.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use crate::{Group, VirtualArray, VirtualDataset};

/// The attribute holding the source name of a node whose name Zarr does not allow.
pub const ORIGINAL_NAME_ATTR: &str = "vzarr:original_name";

/// Whether Zarr v3 allows `name` as the name of a node (and it can be stored: not
/// `zarr.json`).
pub fn is_allowed(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && !name.chars().all(|c| c == '.')
        && !name.starts_with("__")
        && name != "zarr.json"
}

/// `c` percent-encoded (its UTF-8 bytes, upper-case hex).
fn percent(c: char) -> String {
    let mut buf = [0u8; 4];
    c.encode_utf8(&mut buf)
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect()
}

/// The Zarr name of a source name, before suffixes for collisions (rules 1 and 2 above).
pub fn zarr_name(name: &str) -> Cow<'_, str> {
    if is_allowed(name) {
        return Cow::Borrowed(name);
    }
    let s = name.replace('/', "%2F");
    if is_allowed(&s) {
        return Cow::Owned(s);
    }
    let mut chars = s.chars();
    match chars.next() {
        None => Cow::Owned("%00".to_string()),
        Some(c) => Cow::Owned(format!("{}{}", percent(c), chars.as_str())),
    }
}

/// The Zarr names of the children of one group, given their source names in the order the
/// source lists them: [`zarr_name`] of each, with a suffix `~N` where a mapped name collides
/// with a sibling's (rule 3 above). Distinct source names give distinct Zarr names.
pub fn sibling_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let names: Vec<&str> = names.into_iter().collect();
    let mut taken: HashSet<String> = names
        .iter()
        .filter(|n| is_allowed(n))
        .map(|n| n.to_string())
        .collect();
    let mut out = Vec::with_capacity(names.len());
    // A source name listed twice gets the same Zarr name both times.
    let mut done: BTreeMap<&str, String> = BTreeMap::new();
    for n in names {
        if is_allowed(n) {
            out.push(n.to_string());
            continue;
        }
        if let Some(z) = done.get(n) {
            out.push(z.clone());
            continue;
        }
        let base = zarr_name(n).into_owned();
        let mut z = base.clone();
        let mut k = 0u64;
        while taken.contains(&z) {
            k += 1;
            z = format!("{base}~{k}");
        }
        taken.insert(z.clone());
        done.insert(n, z.clone());
        out.push(z);
    }
    out
}

fn split_parent(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// Renames the groups and arrays of `ds` whose names Zarr does not allow, as the module
/// documentation says, for scanners that name nodes by joining source names with `/` (so a
/// source name cannot itself contain `/` here). Skipped variables keep their source paths;
/// renamed nodes get [`ORIGINAL_NAME_ATTR`]; dimension names and unlimited dimensions are
/// mapped with [`zarr_name`]. A dataset whose names are all allowed is left as it is.
/// Returns the arrays renamed: source path -> Zarr path (for callers that keep facts about
/// arrays by path beside the dataset).
pub fn make_names_zarr_safe(ds: &mut VirtualDataset) -> BTreeMap<String, String> {
    let all_allowed = ds
        .groups
        .keys()
        .chain(ds.arrays.keys())
        .filter(|p| !p.is_empty())
        .all(|p| p.split('/').all(is_allowed));
    let dims_allowed = ds
        .arrays
        .values()
        .flat_map(|a| &a.dimension_names)
        .chain(&ds.unlimited_dims)
        .all(|d| zarr_name(d) == d.as_str());
    if all_allowed && dims_allowed {
        return BTreeMap::new();
    }
    // The children of every group: source names of groups, arrays and skipped variables
    // (skipped attributes, `path@name`, are not children).
    let mut children: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let skipped = ds
        .skipped
        .iter()
        .map(|s| s.path.as_str())
        .filter(|p| !p.contains('@'));
    for p in ds
        .groups
        .keys()
        .map(String::as_str)
        .chain(ds.arrays.keys().map(String::as_str))
        .chain(skipped)
        .filter(|p| !p.is_empty())
    {
        let (parent, name) = split_parent(p);
        children.entry(parent).or_default().insert(name);
    }
    // Source path -> Zarr name of its last component.
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    for (parent, names) in &children {
        let names: Vec<&str> = names.iter().copied().collect();
        for (n, z) in names.iter().zip(sibling_names(names.iter().copied())) {
            if *n != z {
                let p = if parent.is_empty() {
                    n.to_string()
                } else {
                    format!("{parent}/{n}")
                };
                renamed.insert(p, z);
            }
        }
    }
    let map_path = |path: &str| -> String {
        if path.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        let mut src = String::new();
        for comp in path.split('/') {
            if !src.is_empty() {
                src.push('/');
                out.push('/');
            }
            src.push_str(comp);
            out.push_str(renamed.get(&src).map_or(comp, String::as_str));
        }
        out
    };
    let original = |path: &str| -> Option<Value> {
        renamed
            .contains_key(path)
            .then(|| Value::String(split_parent(path).1.to_string()))
    };
    let groups = std::mem::take(&mut ds.groups);
    ds.groups = groups
        .into_iter()
        .map(|(p, mut g): (String, Group)| {
            if let Some(v) = original(&p) {
                g.attributes.insert(ORIGINAL_NAME_ATTR.into(), v);
            }
            (map_path(&p), g)
        })
        .collect();
    let mut arrays_renamed = BTreeMap::new();
    let arrays = std::mem::take(&mut ds.arrays);
    ds.arrays = arrays
        .into_iter()
        .map(|(p, mut a): (String, VirtualArray)| {
            if let Some(v) = original(&p) {
                a.attributes.insert(ORIGINAL_NAME_ATTR.into(), v);
            }
            for d in &mut a.dimension_names {
                if let Cow::Owned(z) = zarr_name(d) {
                    *d = z;
                }
            }
            let z = map_path(&p);
            if z != p {
                arrays_renamed.insert(p, z.clone());
            }
            (z, a)
        })
        .collect();
    ds.unlimited_dims = std::mem::take(&mut ds.unlimited_dims)
        .into_iter()
        .map(|d| zarr_name(&d).into_owned())
        .collect();
    arrays_renamed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkGrid, ChunkManifest, DataType, Endian, FillValue, SkippedVariable};

    #[test]
    fn the_specification_rules() {
        for ok in ["a", "_x", "x__", "a.b", "...a", "%5F_x", "é"] {
            assert!(is_allowed(ok), "{ok}");
            assert_eq!(zarr_name(ok), ok);
        }
        for (bad, z) in [
            ("__x", "%5F_x"),
            ("__", "%5F_"),
            ("___x", "%5F__x"),
            (".", "%2E"),
            ("..", "%2E."),
            ("", "%00"),
            ("a/b", "a%2Fb"),
            ("/", "%2F"),
            ("__a/b", "%5F_a%2Fb"),
            ("zarr.json", "%7Aarr.json"),
        ] {
            assert!(!is_allowed(bad), "{bad}");
            assert_eq!(zarr_name(bad), z, "{bad:?}");
            assert!(is_allowed(&zarr_name(bad)), "{bad:?}");
        }
    }

    #[test]
    fn collisions_get_distinct_names_deterministically() {
        // `%5F_x` exists as a name of its own: the mapped `__x` takes a suffix; so does a
        // second name mapping to a taken one.
        let names = ["%5F_x", "%5F_x~1", "__x", "a", "a%2Fb", "a/b"];
        let z = sibling_names(names);
        assert_eq!(z, ["%5F_x", "%5F_x~1", "%5F_x~2", "a", "a%2Fb", "a%2Fb~1"]);
        let distinct: HashSet<&String> = z.iter().collect();
        assert_eq!(distinct.len(), names.len());
        assert_eq!(sibling_names(names), z, "deterministic");
        assert_eq!(sibling_names(["__x", "__x"]), ["%5F_x", "%5F_x"]);
    }

    fn array(dims: &[&str]) -> VirtualArray {
        VirtualArray {
            data_type: DataType::UInt8,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::UInt8),
            codecs: vec![],
            dimension_names: dims.iter().map(|d| d.to_string()).collect(),
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[2], &[2]).unwrap(),
            manifest: ChunkManifest::new_missing(1),
        }
    }

    #[test]
    fn renames_nodes_below_renamed_groups_and_keeps_the_source_names() {
        let mut ds = VirtualDataset::new();
        ds.groups.insert("__g".into(), Group::default());
        ds.arrays.insert("__g/..".into(), array(&["__t"]));
        ds.arrays.insert("__g/v".into(), array(&["__t"]));
        ds.arrays.insert("__t".into(), array(&["__t"]));
        ds.arrays.insert("ok".into(), array(&["phony_dim_0"]));
        ds.skipped.push(SkippedVariable {
            path: "__g/c".into(),
            reason: "r".into(),
        });
        ds.unlimited_dims.insert("__t".into());
        make_names_zarr_safe(&mut ds);
        let arrays: Vec<&String> = ds.arrays.keys().collect();
        assert_eq!(arrays, ["%5F_g/%2E.", "%5F_g/v", "%5F_t", "ok"]);
        assert!(ds.groups.contains_key("%5F_g"));
        assert_eq!(ds.groups["%5F_g"].attributes[ORIGINAL_NAME_ATTR], "__g");
        assert_eq!(ds.arrays["%5F_g/%2E."].attributes[ORIGINAL_NAME_ATTR], "..");
        assert!(
            !ds.arrays["%5F_g/v"]
                .attributes
                .contains_key(ORIGINAL_NAME_ATTR)
        );
        assert_eq!(ds.arrays["%5F_g/v"].dimension_names, ["%5F_t"]);
        assert_eq!(ds.arrays["ok"].dimension_names, ["phony_dim_0"]);
        assert_eq!(
            ds.skipped[0].path, "__g/c",
            "skipped paths stay source paths"
        );
        assert!(ds.unlimited_dims.contains("%5F_t"));
        ds.validate().unwrap();
        // Allowed names: nothing changes.
        let before = ds.clone();
        make_names_zarr_safe(&mut ds);
        assert_eq!(ds, before);
    }
}
