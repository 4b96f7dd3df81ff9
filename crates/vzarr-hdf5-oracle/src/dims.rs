//! Dimension names: the dimension scales a dataset's `DIMENSION_LIST` attaches to its axes
//! (netCDF-4 dimensions), resolved to their names through the HDF5 library; the names, and
//! phony dimensions for axes without a scale, are the shared mapping's
//! (`vzarr_hdf5_map::dims`).

use hdf5_sys::h5i::hid_t;

use crate::ctx::{Ctx, ObjectNames};
use crate::ffi;
use crate::ffi::attr::{Attribute, References};

/// The dimension scales attached to each axis of a dataset, by object path, from its
/// `DIMENSION_LIST` attribute. `Ok(None)` when there is no such attribute. Object references
/// of the classic kind (what netCDF-4 and the HDF5 dimension-scale API write) are resolved
/// through `names`, built on first use from `root`; references of the HDF5 1.12 kind through
/// `H5Rget_obj_name`.
fn dimension_list(
    ds: hid_t,
    rank: usize,
    root: hid_t,
    names: &mut Option<ObjectNames>,
) -> Result<Option<Vec<Option<String>>>, String> {
    if !ffi::attr::exists(ds, c"DIMENSION_LIST") {
        return Ok(None);
    }
    let attr = Attribute::open(ds, c"DIMENSION_LIST", "H5Aopen DIMENSION_LIST")?;
    if ffi::space::npoints(attr.space()) != rank as u64 {
        return Err("DIMENSION_LIST does not match the dataset rank".into());
    }
    let paths = match attr.read_references()? {
        References::Paths(paths) => paths,
        References::Addresses(addrs) => {
            let mut out = Vec::with_capacity(rank);
            for addr in addrs {
                let Some(addr) = addr else {
                    out.push(None);
                    continue;
                };
                if names.is_none() {
                    *names = Some(ObjectNames::of_file(root)?);
                }
                out.push(match names.as_ref().and_then(|n| n.0.get(&addr)) {
                    Some(n) => Some(n.clone()),
                    // Not reachable by a hard link from the root: ask the library.
                    None => ffi::object::reference_path(ds, addr),
                });
            }
            out
        }
    };
    Ok(Some(
        paths
            .into_iter()
            .map(|p| p.filter(|n| !n.is_empty()))
            .collect(),
    ))
}

/// The dimension names of a dataset at `path` in the group `group_path` (`unlimited`: which
/// axes' maximum size is): its own name for a 1-D dimension scale, else the names of the
/// scales attached to its axes; axes without one are left empty and named when the walk ends,
/// as netCDF-C names them (`vzarr_hdf5_map::dims::PhonyDims`).
pub(crate) fn dimension_names(
    ctx: &mut Ctx,
    id: hid_t,
    (group_path, path): (&str, &str),
    shape: &[u64],
    unlimited: &[bool],
    is_scale: bool,
) -> Vec<String> {
    let own = path.rsplit('/').next().unwrap_or(path).to_string();
    // A scale of more than one axis (a character coordinate variable) has no scales attached:
    // netCDF-C lists its dimensions' ids.
    if is_scale
        && shape.len() > 1
        && let Some(ids) = crate::attributes::int_attr(id, "_Netcdf4Coordinates")
        && ids.len() == shape.len()
    {
        return ctx
            .phony
            .coordinate_names(own, path, &ids, group_path, shape);
    }
    // A 1-D scale names its own dimension: its list is not read.
    let list = if is_scale && shape.len() == 1 {
        None
    } else {
        dimension_list(id, shape.len(), ctx.root, &mut ctx.names)
            .unwrap_or(None)
            .map(|l| {
                l.into_iter()
                    .map(|p| p.map(|p| p.rsplit('/').next().unwrap_or(&p).to_string()))
                    .collect()
            })
    };
    ctx.phony
        .dimension_names(own, is_scale, list, (group_path, path), shape, unlimited)
}

#[cfg(test)]
#[allow(unsafe_code)] // Writing object references needs HDF5 calls hdf5-metno does not wrap.
mod tests {
    use std::ffi::{CString, c_void};
    use std::ptr;

    use hdf5_sys::h5p::H5P_DEFAULT;

    use crate::ffi::Hid;
    use crate::{ScanOptions, scan_file};

    /// Writes a `DIMENSION_LIST` on dataset `var` of the file `file` whose axes reference the
    /// objects at `targets`, as classic (`H5T_STD_REF_OBJ`) or HDF5 1.12 (`H5T_STD_REF`)
    /// object references.
    fn write_dimension_list(file: &hdf5::File, var: &str, targets: &[&str], classic: bool) {
        use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
        use hdf5_sys::h5r::{H5R_ref_t, H5R_type_t, H5Rcreate, H5Rcreate_object, H5Rdestroy};
        use hdf5_sys::h5s::H5Screate_simple;
        use hdf5_sys::h5t::{H5T_STD_REF, H5T_STD_REF_OBJ, H5Tvlen_create};
        #[repr(C)]
        struct Hvl {
            len: usize,
            p: *mut c_void,
        }
        let ds = file.dataset(var).unwrap();
        let names: Vec<CString> = targets.iter().map(|t| CString::new(*t).unwrap()).collect();
        hdf5::sync::sync(|| {
            let mut old: Vec<u64> = vec![0; targets.len()];
            // SAFETY: `H5R_ref_t` is an opaque C buffer of bytes; all zeros is a valid value.
            let mut new: Vec<H5R_ref_t> = vec![unsafe { std::mem::zeroed() }; targets.len()];
            for (i, n) in names.iter().enumerate() {
                let r = if classic {
                    // SAFETY: `old[i]` is room for one classic reference (`hobj_ref_t`, 8
                    // bytes); the name is NUL-terminated; lock held.
                    unsafe {
                        H5Rcreate(
                            (&mut old[i] as *mut u64).cast(),
                            file.id(),
                            n.as_ptr(),
                            H5R_type_t::H5R_OBJECT1,
                            -1,
                        )
                    }
                } else {
                    // SAFETY: `new[i]` is room for one reference; the name is NUL-terminated;
                    // lock held.
                    unsafe { H5Rcreate_object(file.id(), n.as_ptr(), H5P_DEFAULT, &mut new[i]) }
                };
                assert!(r >= 0);
            }
            let mut hvl: Vec<Hvl> = (0..targets.len())
                .map(|i| Hvl {
                    len: 1,
                    p: if classic {
                        (&mut old[i] as *mut u64).cast()
                    } else {
                        (&mut new[i] as *mut H5R_ref_t).cast()
                    },
                })
                .collect();
            let base = if classic {
                *H5T_STD_REF_OBJ
            } else {
                *H5T_STD_REF
            };
            // SAFETY: creates a type from a library global; owned by the `Hid`; lock held.
            let t = Hid::datatype(unsafe { H5Tvlen_create(base) }, "vlen").unwrap();
            let dims = [targets.len() as u64];
            // SAFETY: `dims` has the rank's one entry; no maximum dimensions; lock held.
            let space = unsafe { H5Screate_simple(1, dims.as_ptr(), ptr::null()) };
            let space = Hid::dataspace(space, "space").unwrap();
            // SAFETY: valid identifiers and a NUL-terminated name; owned by the `Hid`; lock
            // held.
            let a = unsafe {
                H5Acreate2(
                    ds.id(),
                    c"DIMENSION_LIST".as_ptr(),
                    t.id(),
                    space.id(),
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                )
            };
            let a = Hid::attribute(a, "H5Acreate2").unwrap();
            // SAFETY: `hvl` holds one `hvl_t` per element of the attribute's dataspace, each
            // pointing at one reference of the vlen's base type that outlives the call; lock
            // held.
            assert!(unsafe { H5Awrite(a.id(), t.id(), hvl.as_mut_ptr().cast()) } >= 0);
            if !classic {
                for r in &mut new {
                    // SAFETY: each reference was created above and is destroyed once.
                    unsafe { H5Rdestroy(r) };
                }
            }
        });
    }

    #[test]
    fn dimension_names_from_classic_and_new_object_references() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("refs.h5");
        {
            let f = hdf5::File::create(&p).unwrap();
            let g = f.create_group("grid").unwrap();
            g.new_dataset::<f64>().shape(4).create("lat").unwrap();
            f.new_dataset::<f64>().shape(3).create("lon").unwrap();
            for (name, classic) in [("classic", true), ("new_style", false)] {
                f.new_dataset::<f32>().shape((4, 3)).create(name).unwrap();
                write_dimension_list(&f, name, &["/grid/lat", "/lon"], classic);
            }
        }
        let ds = scan_file(&p, &ScanOptions::default()).unwrap();
        for name in ["classic", "new_style"] {
            let a = &ds.arrays[name];
            assert_eq!(a.dimension_names, ["lat", "lon"], "{name}");
        }
    }
}
