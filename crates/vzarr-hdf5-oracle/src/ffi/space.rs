//! Dataspaces: shape, unlimited extent, number of elements.

use std::ptr;

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5s::{
    H5S_class_t, H5Sget_simple_extent_dims, H5Sget_simple_extent_ndims,
    H5Sget_simple_extent_npoints, H5Sget_simple_extent_type,
};

use super::locked;

/// Shape of a dataspace: `None` for a null dataspace, `Some([])` for a scalar.
pub(crate) fn shape(space: hid_t) -> Result<Option<Vec<u64>>, String> {
    locked(|| {
        // SAFETY: a query of an identifier (an invalid one gives H5S_NO_CLASS); lock held.
        let class = unsafe { H5Sget_simple_extent_type(space) };
        match class {
            H5S_class_t::H5S_NULL => Ok(None),
            H5S_class_t::H5S_SCALAR => Ok(Some(vec![])),
            H5S_class_t::H5S_SIMPLE => {
                // SAFETY: a query of an identifier; lock held.
                let n = unsafe { H5Sget_simple_extent_ndims(space) };
                if n < 0 {
                    return Err("dataspace rank unreadable".into());
                }
                let mut dims = vec![0 as hsize_t; n as usize];
                // SAFETY: `dims` has room for the rank just read (HDF5 writes one entry per
                // axis); no maximum dimensions are asked for (null); lock held.
                if unsafe { H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), ptr::null_mut()) }
                    < 0
                {
                    return Err("dataspace extent unreadable".into());
                }
                Ok(Some(dims))
            }
            _ => Err("unknown dataspace class".into()),
        }
    })
}

/// Which axes of a simple dataspace have an unlimited maximum size (empty for scalar and null
/// dataspaces, or when unreadable).
pub(crate) fn unlimited_axes(space: hid_t) -> Vec<bool> {
    locked(|| {
        // SAFETY: a query of an identifier; lock held.
        let n = unsafe { H5Sget_simple_extent_ndims(space) };
        let Ok(n) = usize::try_from(n) else {
            return Vec::new();
        };
        let mut dims = vec![0 as hsize_t; n];
        let mut max = vec![0 as hsize_t; n];
        // SAFETY: both buffers have room for the rank just read (HDF5 writes one entry per
        // axis to each); lock held.
        if unsafe { H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), max.as_mut_ptr()) } < 0 {
            return Vec::new();
        }
        max.iter().map(|m| *m == hsize_t::MAX).collect()
    })
}

/// Number of elements of a dataspace (0 for null, or when unreadable).
pub(crate) fn npoints(space: hid_t) -> u64 {
    // SAFETY: a query of an identifier; lock held.
    let n = locked(|| unsafe { H5Sget_simple_extent_npoints(space) });
    u64::try_from(n).unwrap_or(0)
}
