//! Dimension names: those of the dimension scales a dataset's `DIMENSION_LIST` attaches to its
//! axes (HDF5 Dimension Scale Specification; netCDF-4 dimensions), else phony dimensions
//! (`phony_dim_N`) shared within a group by length, as netCDF-C names and numbers them.

use std::collections::HashMap;

/// The `NAME` of a netCDF dimension that is not a variable.
pub const DIMENSION_ONLY: &str = "This is a netCDF dimension but not a netCDF variable";

/// Whether a dataset whose `CLASS` attribute is `class` is a dimension scale.
pub fn is_scale(class: Option<&str>) -> bool {
    class == Some("DIMENSION_SCALE")
}

/// Whether a dimension scale whose `NAME` attribute is `name` is a netCDF dimension without a
/// variable (no array: netCDF-4 writes such scales for dimensions alone).
pub fn is_dimension_only(name: Option<&str>) -> bool {
    name.is_some_and(|n| n.starts_with(DIMENSION_ONLY))
}

/// The phony dimensions of one file's scan so far: per group and length, the names given, and
/// how many were given in all (the next one's number); and netCDF-4's dimension ids seen so
/// far (`_Netcdf4Dimid` of each scale, unique in a file), for the axes of coordinate variables
/// of more than one dimension (a character coordinate `x(x, string3)`: HDF5 attaches no scale
/// to a scale, so netCDF-C lists their dimension ids in `_Netcdf4Coordinates`), which are
/// named when the walk ends ([`PhonyDims::finish`]).
#[derive(Debug, Default)]
pub struct PhonyDims {
    by_group: HashMap<(String, u64), Vec<String>>,
    count: usize,
    dimids: HashMap<u64, String>,
    pending: Vec<Pending>,
}

/// A coordinate variable's axes named by dimension ids not seen yet.
#[derive(Debug)]
struct Pending {
    array: String,
    group: String,
    axes: Vec<(usize, u64, u64)>,
}

/// The values of an integer attribute (one or a list), as read into JSON; `None` for others.
pub fn int_list(value: &serde_json::Value) -> Option<Vec<u64>> {
    match value {
        serde_json::Value::Array(v) => v.iter().map(serde_json::Value::as_u64).collect(),
        v => v.as_u64().map(|x| vec![x]),
    }
}

impl PhonyDims {
    /// No phony dimension yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes that the dimension scale named `name` has netCDF-4's dimension id `id`.
    pub fn note_dimid(&mut self, id: u64, name: &str) {
        self.dimids.entry(id).or_insert_with(|| name.to_string());
    }

    /// The dimension names of the coordinate variable `own` at `array` (a dimension scale of
    /// more than one axis) in the group at `group_path`, from its `_Netcdf4Coordinates`
    /// dimension ids `ids` (one per axis of `shape`): its own name first, then the scales'
    /// names; an id not seen yet is named when the walk ends ([`PhonyDims::finish`]).
    pub fn coordinate_names(
        &mut self,
        own: String,
        array: &str,
        ids: &[u64],
        group_path: &str,
        shape: &[u64],
    ) -> Vec<String> {
        let mut names = vec![own];
        let mut axes = Vec::new();
        for (axis, &id) in ids.iter().enumerate().skip(1) {
            match self.dimids.get(&id) {
                Some(n) => names.push(n.clone()),
                None => {
                    names.push(String::new());
                    axes.push((axis, id, shape[axis]));
                }
            }
        }
        if !axes.is_empty() {
            self.pending.push(Pending {
                array: array.to_string(),
                group: group_path.to_string(),
                axes,
            });
        }
        names
    }

    /// Names the axes [`PhonyDims::coordinate_names`] left open, in `arrays`: the scale with
    /// that dimension id, else a phony dimension.
    pub fn finish(&mut self, arrays: &mut vzarr_core::Arrays) {
        for p in std::mem::take(&mut self.pending) {
            let Some(a) = arrays.get_mut(&p.array) else {
                continue;
            };
            for (axis, id, len) in p.axes {
                let name = match self.dimids.get(&id) {
                    Some(n) => n.clone(),
                    None => {
                        let used = a.dimension_names.clone();
                        self.phony_name(&p.group, len, &used)
                    }
                };
                if let Some(slot) = a.dimension_names.get_mut(axis) {
                    *slot = name;
                }
            }
        }
    }

    /// A phony dimension of length `len` in the group at `group_path` not among `used`.
    fn phony_name(&mut self, group_path: &str, len: u64, used: &[String]) -> String {
        let key = (group_path.to_string(), len);
        if let Some(existing) = self
            .by_group
            .get(&key)
            .and_then(|v| v.iter().find(|c| !used.contains(c)).cloned())
        {
            return existing;
        }
        let n = format!("phony_dim_{}", self.count);
        self.count += 1;
        self.by_group.entry(key).or_default().push(n.clone());
        n
    }

    /// The dimension names of a dataset named `own` in the group at `group_path`: its own
    /// name for a 1-D dimension scale (`is_scale`), else the names of the scales attached to
    /// its axes (`list`, from `DIMENSION_LIST`; `None` without one), and phony dimensions for
    /// axes without a scale (shared within a group by length, as netCDF-C does, never twice
    /// in one array).
    pub fn dimension_names(
        &mut self,
        own: String,
        is_scale: bool,
        list: Option<Vec<Option<String>>>,
        group_path: &str,
        shape: &[u64],
    ) -> Vec<String> {
        if is_scale && shape.len() == 1 {
            return vec![own];
        }
        let mut names = list.unwrap_or_else(|| vec![None; shape.len()]);
        let mut used: Vec<String> = names.iter().flatten().cloned().collect();
        for (axis, name) in names.iter_mut().enumerate() {
            if name.is_some() {
                continue;
            }
            let chosen = self.phony_name(group_path, shape[axis], &used);
            used.push(chosen.clone());
            *name = Some(chosen);
        }
        names.into_iter().map(Option::unwrap_or_default).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinate_axes_named_by_dimension_id_when_the_walk_ends() {
        use vzarr_core::{ChunkGrid, ChunkManifest, DataType, Endian, FillValue, VirtualArray};
        let mut p = PhonyDims::new();
        p.note_dimid(0, "x");
        let names = p.coordinate_names("x".into(), "x", &[0, 1], "", &[2, 3]);
        assert_eq!(names, ["x", ""]);
        let mut arrays = vzarr_core::Arrays::new();
        arrays.insert(
            "x".into(),
            VirtualArray {
                data_type: DataType::FixedBytes(1),
                endian: Endian::Little,
                fill_value: FillValue::from_le_bytes(DataType::FixedBytes(1), &[0]).unwrap(),
                codecs: vec![],
                dimension_names: names,
                attributes: Default::default(),
                grid: ChunkGrid::regular(&[2, 3], &[2, 3]).unwrap(),
                manifest: ChunkManifest::new_missing(1),
            },
        );
        // The string-length dimension's scale is walked after the variable.
        p.note_dimid(1, "string3");
        p.finish(&mut arrays);
        assert_eq!(arrays["x"].dimension_names, ["x", "string3"]);
        // An id no scale has: a phony dimension.
        let names = p.coordinate_names("y".into(), "y", &[5, 9], "", &[2, 4]);
        assert_eq!(names, ["y", ""]);
        let mut y = arrays["x"].clone();
        y.dimension_names = names;
        arrays.insert("y".into(), y);
        p.finish(&mut arrays);
        assert_eq!(arrays["y"].dimension_names, ["y", "phony_dim_0"]);
    }

    #[test]
    fn phony_dimensions_shared_by_length_within_a_group() {
        let mut p = PhonyDims::new();
        assert_eq!(
            p.dimension_names("a".into(), false, None, "", &[3, 3, 4]),
            ["phony_dim_0", "phony_dim_1", "phony_dim_2"]
        );
        // Same group, same lengths: the same names, each once per array.
        assert_eq!(
            p.dimension_names("b".into(), false, None, "", &[4, 3]),
            ["phony_dim_2", "phony_dim_0"]
        );
        // Another group: new names; a scale's own name; names from the list kept.
        assert_eq!(
            p.dimension_names("c".into(), false, None, "g", &[3]),
            ["phony_dim_3"]
        );
        assert_eq!(
            p.dimension_names("time".into(), true, None, "", &[5]),
            ["time"]
        );
        assert_eq!(
            p.dimension_names(
                "d".into(),
                false,
                Some(vec![Some("time".into()), None]),
                "",
                &[5, 4]
            ),
            ["time", "phony_dim_2"]
        );
    }
}
