//! The inputs of a plan: one scanned file each, and lookups across them (a variable's arrays
//! in every file, its axis of a dimension, its attributes, paths in the group tree).

use std::collections::HashMap;

use serde_json::Value;
use vzarr_core::{ChunkManifest, VirtualArray, VirtualDataset};

use crate::error::PlanError;

/// The scan of one file.
pub(crate) struct Input {
    /// Its position among the inputs.
    pub(crate) pos: usize,
    /// The file's URL.
    pub(crate) url: String,
    /// What the scanner found in it.
    pub(crate) ds: VirtualDataset,
}

impl Input {
    /// One input per dataset; each must be the scan of a single file (and of its
    /// companions: `Provenance::companions`).
    pub(crate) fn from_datasets(datasets: Vec<VirtualDataset>) -> Result<Vec<Input>, PlanError> {
        datasets
            .into_iter()
            .enumerate()
            .map(|(i, ds)| {
                let url = {
                    let mut own = ds.provenance.own_sources();
                    match (own.next(), own.next()) {
                        (Some(one), None) => one.url.clone(),
                        _ => return Err(PlanError::NotSingleFile(i)),
                    }
                };
                Ok(Input { pos: i, url, ds })
            })
            .collect()
    }
}

/// The chunk manifests of the arrays at `paths` that every input has, taken out of the
/// inputs (in `order`: one per input, in that order), each array left with an empty one.
/// The planner copies a file's references into the combined manifest from these and drops
/// them as it goes, so that the inputs' references are freed while the combined ones are
/// made instead of being held beside them to the end. A path some input lacks is left in
/// place (the checks that follow report it).
pub(crate) fn take_manifests(
    inputs: &mut [Input],
    order: &[usize],
    paths: impl IntoIterator<Item = String>,
) -> HashMap<String, Vec<ChunkManifest>> {
    let mut out = HashMap::new();
    for path in paths {
        if !order
            .iter()
            .all(|&k| inputs[k].ds.arrays.contains_key(&path))
        {
            continue;
        }
        let taken = order
            .iter()
            .map(|&k| {
                let a = inputs[k].ds.arrays.get_mut(&path).expect("checked above");
                std::mem::take(&mut a.manifest)
            })
            .collect();
        out.insert(path, taken);
    }
    out
}

/// One file's version of a variable.
#[derive(Clone, Copy)]
pub(crate) struct Version<'a> {
    /// The file's URL.
    pub(crate) url: &'a str,
    /// The variable in that file.
    pub(crate) array: &'a VirtualArray,
}

/// Arrays of the same path, one per input, in output order.
pub(crate) fn same_path<'a>(
    ordered: &[&'a Input],
    path: &str,
) -> Result<Vec<&'a VirtualArray>, PlanError> {
    ordered
        .iter()
        .map(|i| {
            i.ds.arrays
                .get(path)
                .ok_or_else(|| PlanError::MissingVariable {
                    variable: path.into(),
                    present: ordered[0].url.clone(),
                    absent: i.url.clone(),
                    odd: i.url.clone(),
                })
        })
        .collect()
}

/// The axis of `dim` in an array.
pub(crate) fn axis_of(a: &VirtualArray, dim: &str) -> Option<usize> {
    a.dimension_names.iter().position(|d| d == dim)
}

/// A string attribute.
pub(crate) fn attr_str<'a>(a: &'a VirtualArray, name: &str) -> Option<&'a str> {
    a.attributes.get(name).and_then(Value::as_str)
}

/// The last segment of a path.
pub(crate) fn leaf(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The group of a path (`""` at the root).
pub(crate) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// A name inside a group.
pub(crate) fn join(group: &str, name: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{group}/{name}")
    }
}
