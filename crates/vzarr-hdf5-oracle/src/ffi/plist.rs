//! Dataset creation property lists: layout, chunk shape, external files, fill value, filter
//! pipeline.

use std::ffi::c_uint;
use std::ptr;

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5d::{H5D_fill_value_t, H5D_layout_t};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5Pfill_value_defined, H5Pget_chunk, H5Pget_external_count, H5Pget_fill_value, H5Pget_filter2,
    H5Pget_layout, H5Pget_nfilters,
};
use hdf5_sys::h5z::H5Z_filter_t;

use super::{dtype, locked};

/// Storage layout of the dataset.
pub(crate) fn layout(dcpl: hid_t) -> H5D_layout_t {
    // SAFETY: a query of an identifier (an invalid one gives H5D_LAYOUT_ERROR); lock held.
    locked(|| unsafe { H5Pget_layout(dcpl) })
}

/// Number of external files holding the raw data (negative on error).
pub(crate) fn external_count(dcpl: hid_t) -> i32 {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Pget_external_count(dcpl) })
}

/// The chunk shape, when the property list has one of rank `rank`.
pub(crate) fn chunk(dcpl: hid_t, rank: usize) -> Option<Vec<u64>> {
    let max = i32::try_from(rank).ok()?;
    let mut chunk = vec![0 as hsize_t; rank];
    // SAFETY: HDF5 writes at most `max` = `rank` entries, the buffer's length; lock held.
    let got = locked(|| unsafe { H5Pget_chunk(dcpl, max, chunk.as_mut_ptr()) });
    (got == max).then_some(chunk)
}

/// Whether the fill value is the library default, undefined or set by the user; `None` when
/// unreadable.
pub(crate) fn fill_value_status(dcpl: hid_t) -> Option<H5D_fill_value_t> {
    let mut status = H5D_fill_value_t::H5D_FILL_VALUE_DEFAULT;
    // SAFETY: `status` is a local that HDF5 writes one enum value to; lock held.
    (locked(|| unsafe { H5Pfill_value_defined(dcpl, &mut status) }) >= 0).then_some(status)
}

/// The fill value as one element of `mem_type` (converted by HDF5 if needed; no conversion
/// when it is the dataset's own type); `None` when unreadable.
pub(crate) fn fill_value(dcpl: hid_t, mem_type: hid_t) -> Option<Vec<u8>> {
    locked(|| {
        let n = dtype::size(mem_type);
        if n == 0 {
            return None;
        }
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` holds one element of `mem_type`, what HDF5 writes; lock held.
        (unsafe { H5Pget_fill_value(dcpl, mem_type, buf.as_mut_ptr().cast()) } >= 0).then_some(buf)
    })
}

/// Number of filters in the pipeline (negative on error).
pub(crate) fn nfilters(dcpl: hid_t) -> i32 {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Pget_nfilters(dcpl) })
}

/// One filter of a pipeline.
pub(crate) struct Filter {
    /// The filter id (1 deflate, 2 shuffle, ...).
    pub(crate) id: H5Z_filter_t,
    /// Its client data values (at most 32 are read).
    pub(crate) cd_values: Vec<c_uint>,
}

/// Filter `i` of the pipeline; `None` when unreadable.
pub(crate) fn filter(dcpl: hid_t, i: u32) -> Option<Filter> {
    let mut flags: c_uint = 0;
    let mut cd = [0 as c_uint; 32];
    let mut nelmts: usize = cd.len();
    let mut config: c_uint = 0;
    // SAFETY: HDF5 writes at most `nelmts` (the array's length) client data values, one value
    // to each other out-pointer, and no name (length 0, null buffer); lock held.
    let id = locked(|| unsafe {
        H5Pget_filter2(
            dcpl,
            i as c_uint,
            &mut flags,
            &mut nelmts,
            cd.as_mut_ptr(),
            0,
            ptr::null_mut(),
            &mut config,
        )
    });
    (id >= 0).then(|| Filter {
        id,
        cd_values: cd[..nelmts.min(cd.len())].to_vec(),
    })
}
