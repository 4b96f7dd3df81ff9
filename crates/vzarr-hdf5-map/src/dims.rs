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

/// The dimensions of one group as netCDF-C lists them, by length and unlimitedness (whether
/// the maximum size is unlimited): their names in the order they were made, the scales' first.
type GroupDims = HashMap<(u64, bool), Vec<String>>;

/// The dimension names of one file's scan, named as netCDF-C names them when it opens the
/// file (`libhdf5/hdf5open.c`: `rec_read_metadata`, then `rec_match_dimscales` and
/// `create_phony_dims`):
///
/// - every dimension scale is a dimension of its group, numbered first (`_Netcdf4Dimid` when
///   it has one);
/// - then the axes of datasets without dimension scales get a dimension of their group with
///   the same length and the same unlimitedness that the dataset does not use yet (a scale's
///   first, in the order they were made), else a new phony one, `phony_dim_N` with `N` the
///   file's next dimension id; groups are taken children first (each group's subgroups, in
///   link order, before its own datasets), datasets in link order.
///
/// The walk records what it finds ([`PhonyDims::note_scale`], [`PhonyDims::dimension_names`],
/// [`PhonyDims::coordinate_names`]); names that depend on the whole file are left empty and
/// given when the walk ends ([`PhonyDims::finish`]).
#[derive(Debug, Default)]
pub struct PhonyDims {
    /// Per group (Zarr path), the dimensions of its scales in walk order.
    scales: HashMap<String, GroupDims>,
    /// How many dimension scales the file has, and its largest netCDF-4 dimension id.
    scale_count: u64,
    max_dimid: Option<u64>,
    /// netCDF-4's dimension ids (`_Netcdf4Dimid` of each scale, unique in a file) -> names.
    dimids: HashMap<u64, String>,
    pending: Vec<Pending>,
}

/// A dataset's axes named when the walk ends.
#[derive(Debug)]
struct Pending {
    array: String,
    group: String,
    axes: Vec<Axis>,
    /// A dataset netCDF-C does not show (see [`PhonyDims::not_shown`]).
    late: bool,
}

/// One such axis: its length and unlimitedness, and for a coordinate variable's axis the
/// dimension id `_Netcdf4Coordinates` gives it.
#[derive(Debug)]
struct Axis {
    axis: usize,
    len: u64,
    unlimited: bool,
    id: Option<u64>,
}

/// The values of an integer attribute (one or a list), as read into JSON; `None` for others.
pub fn int_list(value: &serde_json::Value) -> Option<Vec<u64>> {
    match value {
        serde_json::Value::Array(v) => v.iter().map(serde_json::Value::as_u64).collect(),
        v => v.as_u64().map(|x| vec![x]),
    }
}

impl PhonyDims {
    /// Nothing recorded yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes the dimension scale named `name` in the group at `group_path`: a dimension of
    /// that group of length `len` (`None` for a scale without one axis, which nothing
    /// matches), unlimited or not. Every scale takes a dimension id, dimension-only ones too.
    pub fn note_scale(&mut self, group_path: &str, name: &str, len: Option<u64>, unlimited: bool) {
        self.scale_count += 1;
        if let Some(len) = len {
            self.scales
                .entry(group_path.to_string())
                .or_default()
                .entry((len, unlimited))
                .or_default()
                .push(name.to_string());
        }
    }

    /// Notes that the dimension scale named `name` has netCDF-4's dimension id `id`.
    pub fn note_dimid(&mut self, id: u64, name: &str) {
        self.dimids.entry(id).or_insert_with(|| name.to_string());
        self.max_dimid = Some(self.max_dimid.map_or(id, |m| m.max(id)));
    }

    /// The dimension names of the coordinate variable `own` at `array` (a dimension scale of
    /// more than one axis) in the group at `group_path`, from its `_Netcdf4Coordinates`
    /// dimension ids `ids` (one per axis of `shape`): its own name first, then the scales'
    /// names; the others are left empty, named when the walk ends ([`PhonyDims::finish`]).
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
                    axes.push(Axis {
                        axis,
                        len: shape[axis],
                        unlimited: false,
                        id: Some(id),
                    });
                }
            }
        }
        self.defer(array, group_path, axes);
        names
    }

    /// The dimension names of a dataset named `own` at `array` in the group at `group_path`,
    /// of shape `shape` (`unlimited`: which axes' maximum size is unlimited): its own name for
    /// a 1-D dimension scale (`is_scale`), else the names of the scales attached to its axes
    /// (`list`, from `DIMENSION_LIST`; `None` without one). Axes without a scale are left
    /// empty, named when the walk ends ([`PhonyDims::finish`]).
    pub fn dimension_names(
        &mut self,
        own: String,
        is_scale: bool,
        list: Option<Vec<Option<String>>>,
        (group_path, array): (&str, &str),
        shape: &[u64],
        unlimited: &[bool],
    ) -> Vec<String> {
        if is_scale && shape.len() == 1 {
            return vec![own];
        }
        let names = list.unwrap_or_else(|| vec![None; shape.len()]);
        let axes = names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_none())
            .map(|(axis, _)| Axis {
                axis,
                len: shape.get(axis).copied().unwrap_or(0),
                unlimited: unlimited.get(axis).copied().unwrap_or(false),
                id: None,
            })
            .collect();
        self.defer(array, group_path, axes);
        names.into_iter().map(Option::unwrap_or_default).collect()
    }

    fn defer(&mut self, array: &str, group_path: &str, axes: Vec<Axis>) {
        if !axes.is_empty() {
            self.pending.push(Pending {
                array: array.to_string(),
                group: group_path.to_string(),
                axes,
                late: false,
            });
        }
    }

    /// Notes that netCDF-C does not show the dataset at `array` (object references, HDF5 array
    /// datatypes: it drops such datasets before it names any dimension): its axes are named after every other dataset's,
    /// so that the phony dimensions of those are numbered as netCDF-C numbers them.
    /// Called right after the dataset's [`PhonyDims::dimension_names`].
    pub fn not_shown(&mut self, array: &str) {
        if let Some(p) = self.pending.last_mut().filter(|p| p.array == array) {
            p.late = true;
        }
    }

    /// Names the axes left empty, in `arrays`, as netCDF-C does (see the type's doc): the
    /// datasets it shows first, each lot by group (`groups` in walk order, each below its
    /// parent), children first, and in walk order within a group.
    pub fn finish(&mut self, groups: &vzarr_core::Groups, arrays: &mut vzarr_core::Arrays) {
        let mut next = self
            .scale_count
            .max(self.max_dimid.map_or(0, |m| m.saturating_add(1)));
        let mut pending = std::mem::take(&mut self.pending);
        let mut order = children_first(groups.keys().map(String::as_str));
        // Groups the walk did not record (none in a scan): last, in a fixed order.
        let mut rest: Vec<String> = pending
            .iter()
            .map(|p| &p.group)
            .filter(|g| !groups.contains_key(g.as_str()))
            .cloned()
            .collect();
        rest.sort();
        rest.dedup();
        order.extend(rest);
        let rank: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, g)| (g.as_str(), i))
            .collect();
        // A stable sort: walk order within a group.
        pending.sort_by_key(|p| (p.late, rank.get(p.group.as_str()).copied()));
        let mut dims: HashMap<String, GroupDims> = HashMap::new();
        for p in pending {
            let Some(a) = arrays.get_mut(&p.array) else {
                continue;
            };
            let group_dims = dims
                .entry(p.group.clone())
                .or_insert_with(|| self.scales.get(&p.group).cloned().unwrap_or_default());
            for ax in &p.axes {
                let name = self.dimension_for(ax, group_dims, &a.dimension_names, &mut next);
                if let Some(slot) = a.dimension_names.get_mut(ax.axis) {
                    *slot = name;
                }
            }
        }
    }

    /// The dimension of one axis: the scale with its `_Netcdf4Coordinates` id, else the first
    /// dimension of the group (`dims`) of its length and unlimitedness the dataset does not use
    /// yet (`used`), else a new phony one numbered `next`.
    fn dimension_for(
        &self,
        ax: &Axis,
        dims: &mut GroupDims,
        used: &[String],
        next: &mut u64,
    ) -> String {
        if let Some(n) = ax.id.and_then(|id| self.dimids.get(&id)) {
            return n.clone();
        }
        let same = dims.entry((ax.len, ax.unlimited)).or_default();
        if let Some(n) = same.iter().find(|n| !used.contains(n)) {
            return n.clone();
        }
        let name = format!("phony_dim_{next}");
        *next = next.saturating_add(1);
        same.push(name.clone());
        name
    }
}

/// Group paths (`""` the root, `a/b` below `a`) given in walk order (each after its parent),
/// children first: each group's subgroups, in the order given, then the group itself.
fn children_first<'a>(groups: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut roots = Vec::new();
    let all: Vec<&str> = groups.collect();
    let known: std::collections::HashSet<&str> = all.iter().copied().collect();
    for g in &all {
        let parent = g.rsplit_once('/').map_or("", |(p, _)| p);
        if g.is_empty() || !known.contains(parent) {
            roots.push(*g);
        } else {
            children.entry(parent).or_default().push(g);
        }
    }
    let mut out = Vec::with_capacity(all.len());
    // Iterative: a deep tree of groups must not exhaust the stack.
    let mut stack: Vec<(&str, bool)> = roots.iter().rev().map(|g| (*g, false)).collect();
    while let Some((g, expanded)) = stack.pop() {
        if expanded {
            out.push(g.to_string());
            continue;
        }
        stack.push((g, true));
        if let Some(kids) = children.get(g) {
            stack.extend(kids.iter().rev().map(|k| (*k, false)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_core::{
        Arrays, ChunkGrid, ChunkManifest, DataType, Endian, FillValue, Group, Groups, VirtualArray,
    };

    fn array(names: Vec<String>, shape: &[u64]) -> VirtualArray {
        VirtualArray {
            data_type: DataType::FixedBytes(1),
            endian: Endian::Little,
            fill_value: FillValue::from_le_bytes(DataType::FixedBytes(1), &[0]).unwrap(),
            codecs: vec![],
            dimension_names: names,
            attributes: Default::default(),
            grid: ChunkGrid::regular(shape, shape).unwrap(),
            manifest: ChunkManifest::new_missing(1),
        }
    }

    fn groups(paths: &[&str]) -> Groups {
        paths
            .iter()
            .map(|p| ((*p).to_string(), Group::default()))
            .collect()
    }

    /// Walks `(group, array, shape, unlimited axes)` datasets without scales, then names them.
    fn walk(p: &mut PhonyDims, g: &Groups, ds: &[(&str, &str, &[u64], &[bool])]) -> Arrays {
        let mut arrays = Arrays::new();
        for (group, name, shape, unlimited) in ds {
            let names =
                p.dimension_names((*name).into(), false, None, (group, name), shape, unlimited);
            arrays.insert((*name).to_string(), array(names, shape));
        }
        p.finish(g, &mut arrays);
        arrays
    }

    #[test]
    fn coordinate_axes_named_by_dimension_id_when_the_walk_ends() {
        let mut p = PhonyDims::new();
        p.note_scale("", "x", Some(2), false);
        p.note_dimid(0, "x");
        let names = p.coordinate_names("x".into(), "x", &[0, 1], "", &[2, 3]);
        assert_eq!(names, ["x", ""]);
        // The string-length dimension's scale is walked after the variable.
        p.note_scale("", "string3", Some(3), false);
        p.note_dimid(1, "string3");
        // An id no scale has: a phony dimension, numbered after the file's dimension ids.
        let y = p.coordinate_names("y".into(), "y", &[5, 9], "", &[2, 4]);
        assert_eq!(y, ["y", ""]);
        let mut arrays = Arrays::new();
        arrays.insert("x".into(), array(names, &[2, 3]));
        arrays.insert("y".into(), array(y, &[2, 4]));
        p.finish(&groups(&[""]), &mut arrays);
        assert_eq!(arrays["x"].dimension_names, ["x", "string3"]);
        assert_eq!(arrays["y"].dimension_names, ["y", "phony_dim_2"]);
    }

    #[test]
    fn phony_dimensions_shared_by_length_within_a_group() {
        let mut p = PhonyDims::new();
        let g = groups(&[""]);
        let a = walk(
            &mut p,
            &g,
            &[("", "a", &[3, 3, 4], &[]), ("", "b", &[4, 3], &[])],
        );
        assert_eq!(
            a["a"].dimension_names,
            ["phony_dim_0", "phony_dim_1", "phony_dim_2"]
        );
        // Same group, same lengths: the same names, each once per array.
        assert_eq!(a["b"].dimension_names, ["phony_dim_2", "phony_dim_0"]);
    }

    #[test]
    fn subgroups_are_named_before_their_parent_and_after_every_scale() {
        // netCDF-C numbers phony dimensions by the file's next dimension id, after every
        // dimension scale, children first.
        let mut p = PhonyDims::new();
        p.note_scale("", "time", Some(5), true);
        let g = groups(&["", "g", "g/h", "k"]);
        let a = walk(
            &mut p,
            &g,
            &[
                ("", "r", &[7], &[]),
                ("g", "g/x", &[7], &[]),
                ("g/h", "g/h/y", &[7, 2], &[]),
                ("k", "k/z", &[7], &[]),
            ],
        );
        assert_eq!(a["g/h/y"].dimension_names, ["phony_dim_1", "phony_dim_2"]);
        assert_eq!(a["g/x"].dimension_names, ["phony_dim_3"]);
        assert_eq!(a["k/z"].dimension_names, ["phony_dim_4"]);
        assert_eq!(a["r"].dimension_names, ["phony_dim_5"]);
    }

    #[test]
    fn a_scale_of_the_group_with_that_length_and_unlimitedness_is_taken() {
        let mut p = PhonyDims::new();
        p.note_scale("", "x", Some(4), false);
        p.note_scale("", "t", Some(3), true);
        let g = groups(&[""]);
        let a = walk(
            &mut p,
            &g,
            &[
                ("", "v", &[4, 4], &[false, false]),
                ("", "w", &[3, 3], &[false, true]),
            ],
        );
        assert_eq!(a["v"].dimension_names, ["x", "phony_dim_2"]);
        // Length 3 but not unlimited: not `t`.
        assert_eq!(a["w"].dimension_names, ["phony_dim_3", "t"]);
    }

    #[test]
    fn names_from_the_list_are_kept_and_scales_name_themselves() {
        let mut p = PhonyDims::new();
        assert_eq!(
            p.dimension_names("time".into(), true, None, ("", "time"), &[5], &[]),
            ["time"]
        );
        let names = p.dimension_names(
            "d".into(),
            false,
            Some(vec![Some("time".into()), None]),
            ("", "d"),
            &[5, 4],
            &[],
        );
        assert_eq!(names, ["time", ""]);
        let mut arrays = Arrays::new();
        arrays.insert("d".into(), array(names, &[5, 4]));
        p.finish(&groups(&[""]), &mut arrays);
        assert_eq!(arrays["d"].dimension_names, ["time", "phony_dim_0"]);
    }

    #[test]
    fn datasets_netcdf_does_not_show_are_named_last() {
        let mut p = PhonyDims::new();
        let g = groups(&[""]);
        let refs = p.dimension_names("refs".into(), false, None, ("", "refs"), &[9], &[]);
        p.not_shown("refs");
        let v = p.dimension_names("v".into(), false, None, ("", "v"), &[5], &[]);
        let mut arrays = Arrays::new();
        arrays.insert("refs".into(), array(refs, &[9]));
        arrays.insert("v".into(), array(v, &[5]));
        p.finish(&g, &mut arrays);
        assert_eq!(arrays["v"].dimension_names, ["phony_dim_0"]);
        assert_eq!(arrays["refs"].dimension_names, ["phony_dim_1"]);
    }

    #[test]
    fn children_first_order() {
        let order = children_first(["", "a", "a/b", "a/c", "d"].into_iter());
        assert_eq!(order, ["a/b", "a/c", "a", "d", ""]);
    }
}
