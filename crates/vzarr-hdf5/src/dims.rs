//! Dimension names: the dimension scales a dataset's `DIMENSION_LIST` attaches to its axes
//! (netCDF-4 dimensions), resolved to their names here; the names, and phony dimensions for
//! axes without a scale, are the shared mapping's (`vzarr_hdf5_map::dims`).

use vzarr_core::names::zarr_name;
use vzarr_hdf5_format::{Attribute, DataspaceKind, File};

use crate::ctx::{Ctx, ObjectNames};

/// The last component of an object path; the root group is `.` (the name `H5Ovisit` gives
/// it).
fn last_component(path: &str) -> &str {
    if path == "/" {
        return ".";
    }
    path.rsplit('/').next().unwrap_or(path)
}

/// The name of the dimension scale attached to each axis of a dataset, from its
/// `DIMENSION_LIST` attribute (the first object reference of each axis, resolved to the
/// object's path through `names`, built on first use; a file whose objects cannot all be
/// named is not walked again). `Ok(None)` when there is no such attribute.
fn dimension_list(
    file: &File,
    attrs: &[Attribute],
    rank: usize,
    names: &mut Option<Result<ObjectNames, String>>,
) -> Result<Option<Vec<Option<String>>>, String> {
    let Some(attr) = attrs.iter().find(|a| a.name == "DIMENSION_LIST") else {
        return Ok(None);
    };
    let npoints = match attr.dataspace.kind {
        DataspaceKind::Null => 0,
        _ => attr.dataspace.num_elements().unwrap_or(u64::MAX),
    };
    if npoints != rank as u64 {
        return Err("DIMENSION_LIST does not match the dataset rank".into());
    }
    let lists = file
        .references(&attr.datatype, &attr.value)
        .map_err(|_| "object references unreadable".to_string())?;
    let mut out = Vec::with_capacity(rank);
    for list in lists {
        // netCDF-C takes the last scale attached to an axis (`H5DSiterate_scales`).
        let Some(Some(r)) = list.last() else {
            out.push(None);
            continue;
        };
        let names = names
            .get_or_insert_with(|| ObjectNames::of_file(file))
            .as_ref()
            .map_err(Clone::clone)?;
        let path = names.0.get(&r.object);
        // An object not reachable by a hard link from the root has no name.
        out.push(path.map(|p| zarr_name(last_component(p)).into_owned()));
    }
    Ok(Some(out))
}

/// The dimension names of a dataset at source path `path` (Zarr path `array`) in the group at
/// Zarr path `group_path` (`unlimited`: which axes' maximum size is): its own name for a 1-D
/// dimension scale, else the names of the scales attached to its axes; axes without one are
/// left empty and named when the walk ends, as netCDF-C names them
/// (`vzarr_hdf5_map::dims::PhonyDims`). Names are mapped as Zarr node names
/// are (`vzarr_core::names::zarr_name`), so that a renamed coordinate still names its
/// dimension.
pub(crate) fn dimension_names(
    ctx: &mut Ctx,
    attrs: &[Attribute],
    (group_path, array): (&str, &str),
    path: &str,
    shape: &[u64],
    unlimited: &[bool],
    is_scale: bool,
) -> Vec<String> {
    // Dimension names are the names of the scales' arrays, mapped as Zarr needs them.
    let own = zarr_name(path.rsplit('/').next().unwrap_or(path)).into_owned();
    // A scale of more than one axis (a character coordinate variable) has no scales attached:
    // netCDF-C lists its dimensions' ids.
    if is_scale
        && shape.len() > 1
        && let Some(ids) = crate::attributes::int_attr(ctx.file, attrs, "_Netcdf4Coordinates")
        && ids.len() == shape.len()
    {
        return ctx
            .phony
            .coordinate_names(own, array, &ids, group_path, shape);
    }
    // A 1-D scale names its own dimension: its list is not read.
    let list = if is_scale && shape.len() == 1 {
        None
    } else {
        dimension_list(ctx.file, attrs, shape.len(), &mut ctx.names).unwrap_or(None)
    };
    ctx.phony
        .dimension_names(own, is_scale, list, (group_path, array), shape, unlimited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_last_components() {
        assert_eq!(last_component("/grid/lat"), "lat");
        assert_eq!(last_component("/lon"), "lon");
        assert_eq!(last_component("/"), ".");
    }
}
