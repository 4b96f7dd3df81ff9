//! The differences between the two scanners that are by design, taken out of both scans
//! before they are compared, each one listed (printed, and counted in the statistics):
//!
//! - **variable-length strings**: an array of the Zarr `string` type in the native scan
//!   where the libhdf5 scanner lists the variable as skipped for its type (or the native
//!   scanner leaves it out for another reason of its own: a size limit, text that is not
//!   UTF-8); its values are compared with h5py and netCDF4-python in the interop tests;
//! - **soft links**: followed natively (the dataset, or the group with everything below it,
//!   under the link's name; dangling or cyclic ones listed as skipped), skipped by the
//!   libhdf5 scanner;
//! - **external and user-defined links**: skipped by both, in other words;
//! - **names Zarr does not allow**: mapped natively, so the libhdf5 scan is mapped the same
//!   way ([`vzarr_core::names::make_names_zarr_safe`]) before the comparison;
//! - **phony dimension numbers**: the arrays a link adds or removes take phony dimensions in
//!   walk order, so the numbers of later ones shift; they are compared up to a renumbering
//!   that must be one-to-one over the whole file.
//!
//! Everything else must be equal.

use std::collections::BTreeMap;

use vzarr_core::VirtualDataset;
use vzarr_core::names::zarr_name;

/// Whether `path` is `top` or below it.
fn at_or_below(path: &str, top: &str) -> bool {
    path == top || path.strip_prefix(top).is_some_and(|r| r.starts_with('/'))
}

/// The Zarr path of a source path (each component mapped, without collision suffixes).
fn zarr_path(source: &str) -> String {
    source
        .split('/')
        .map(|c| zarr_name(c).into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Removes every group and array at or below the Zarr path `top`, and every skipped entry at
/// or below the source path `source`; returns how many nodes went.
fn remove_subtree(ds: &mut VirtualDataset, top: &str, source: &str) -> usize {
    let before = ds.groups.len() + ds.arrays.len();
    ds.groups.retain(|p, _| !at_or_below(p, top));
    ds.arrays.retain(|p, _| !at_or_below(p, top));
    ds.skipped.retain(|s| {
        let p = s.path.split('@').next().unwrap_or(&s.path);
        !at_or_below(p, source)
    });
    before - ds.groups.len() - ds.arrays.len()
}

/// Takes the by-design differences out of `oracle` and `native` (see the module
/// documentation); returns what was taken out, one line each.
pub(crate) fn reconcile(oracle: &mut VirtualDataset, native: &mut VirtualDataset) -> Vec<String> {
    let mut listed = Vec::new();
    vzarr_core::names::make_names_zarr_safe(oracle);
    let oracle_skips = oracle.skipped.clone();
    for s in &oracle_skips {
        let (p, z) = (s.path.as_str(), zarr_path(&s.path));
        if s.reason.starts_with("variable-length string data type") {
            if let Some(a) = native.arrays.get(&z)
                && a.data_type.is_string()
            {
                native.arrays.shift_remove(&z);
                listed.push(format!(
                    "{p}: variable-length strings, stored inline natively"
                ));
            } else if let Some(n) = native
                .skipped
                .iter()
                .find(|n| n.path == p && n.reason.contains("variable-length string"))
            {
                listed.push(format!(
                    "{p}: variable-length strings, natively: {}",
                    n.reason
                ));
            } else {
                continue;
            }
            native.skipped.retain(|n| n.path != p);
            oracle.skipped.retain(|o| o.path != p);
        } else if s.reason.starts_with("soft link") {
            let why = native
                .skipped
                .iter()
                .find(|x| x.path == p)
                .map(|x| x.reason.clone());
            let n = remove_subtree(native, &z, p);
            listed.push(match why {
                Some(r) => format!("{p}: soft link, natively: {r}"),
                None => format!("{p}: soft link followed natively ({n} groups and arrays)"),
            });
            native.skipped.retain(|x| !at_or_below(&x.path, p));
            oracle.skipped.retain(|o| o.path != p);
        } else if s.reason.starts_with("external or user-defined link")
            && let Some(n) = native.skipped.iter_mut().find(|x| x.path == p)
            && (n.reason.starts_with("external link to") || n.reason.starts_with("user-defined"))
        {
            listed.push(format!("{p}: {}", n.reason));
            n.reason = s.reason.clone();
        }
    }
    if !listed.is_empty() {
        renumber_phony(oracle, native, &mut listed);
    }
    listed
}

/// Renames the oracle's phony dimensions to the native ones where the two number them
/// differently, if the correspondence is one-to-one over the whole file (else leaves them, to
/// be reported as differences).
fn renumber_phony(oracle: &mut VirtualDataset, native: &VirtualDataset, listed: &mut Vec<String>) {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    let mut back: BTreeMap<String, String> = BTreeMap::new();
    for (p, a) in &oracle.arrays {
        let Some(b) = native.arrays.get(p) else {
            continue;
        };
        if a.dimension_names.len() != b.dimension_names.len() {
            continue;
        }
        for (x, y) in a.dimension_names.iter().zip(&b.dimension_names) {
            if !(x.starts_with("phony_dim_") && y.starts_with("phony_dim_")) {
                continue;
            }
            if map.get(x).is_some_and(|v| v != y) || back.get(y).is_some_and(|v| v != x) {
                return; // Not one-to-one: the comparison reports it.
            }
            map.insert(x.clone(), y.clone());
            back.insert(y.clone(), x.clone());
        }
    }
    let moved = map.iter().filter(|(x, y)| x != y).count();
    if moved == 0 {
        return;
    }
    for a in oracle.arrays.values_mut() {
        for d in &mut a.dimension_names {
            if let Some(y) = map.get(d) {
                *d = y.clone();
            }
        }
    }
    listed.push(format!(
        "{moved} phony dimensions numbered differently (one to one)"
    ));
}
