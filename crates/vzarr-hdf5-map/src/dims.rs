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
/// how many were given in all (the next one's number).
#[derive(Debug, Default)]
pub struct PhonyDims {
    by_group: HashMap<(String, u64), Vec<String>>,
    count: usize,
}

impl PhonyDims {
    /// No phony dimension yet.
    pub fn new() -> Self {
        Self::default()
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
            let key = (group_path.to_string(), shape[axis]);
            let existing = self
                .by_group
                .get(&key)
                .and_then(|v| v.iter().find(|c| !used.contains(c)).cloned());
            let chosen = existing.unwrap_or_else(|| {
                let n = format!("phony_dim_{}", self.count);
                self.count += 1;
                self.by_group.entry(key).or_default().push(n.clone());
                n
            });
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
