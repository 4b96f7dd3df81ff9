//! A dataset's fill value as the HDF5 library reports it, decided by the shared mapping
//! (`vzarr_hdf5_map::fill`): what the library returns for chunks never written.

use hdf5_sys::h5d::H5D_fill_value_t;
use hdf5_sys::h5i::hid_t;
use vzarr_core::{DataType, Endian, FillValue};

use crate::ffi;

/// The fill value of a dataset with creation property list `dcpl`, file type `ftype` and
/// data type `dt` in byte order `endian`: the user's when one is defined, else zero.
pub(crate) fn dataset_fill(
    dcpl: hid_t,
    ftype: hid_t,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    let status = ffi::plist::fill_value_status(dcpl).ok_or("fill value status unreadable")?;
    let user = if status == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        // Read as the file type: the stored bytes, no conversion.
        Some(ffi::plist::fill_value(dcpl, ftype).ok_or("fill value unreadable")?)
    } else {
        None
    };
    vzarr_hdf5_map::fill::dataset_fill(user, dt, endian)
}
