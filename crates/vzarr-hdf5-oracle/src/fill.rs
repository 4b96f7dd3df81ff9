//! A dataset's fill value: what the HDF5 library returns for chunks never written, which is
//! what Zarr's `fill_value` must be (the CF `_FillValue` attribute is kept apart, in
//! [`crate::attributes`]).

use hdf5_sys::h5d::H5D_fill_value_t;
use hdf5_sys::h5i::hid_t;
use vzarr_core::{DataType, Endian, FillValue};

use crate::ffi;

/// The fill value of a dataset with creation property list `dcpl`, file type `ftype` and
/// data type `dt` in byte order `endian`: the user's when one is defined, else zero (the
/// library default).
pub(crate) fn dataset_fill(
    dcpl: hid_t,
    ftype: hid_t,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    let status = ffi::plist::fill_value_status(dcpl).ok_or("fill value status unreadable")?;
    if status != H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        return Ok(FillValue::zero(dt));
    }
    // Read as the file type: the stored bytes, no conversion.
    let mut buf = ffi::plist::fill_value(dcpl, ftype).ok_or("fill value unreadable")?;
    if endian == Endian::Big && dt.has_endianness() {
        buf.reverse();
    }
    FillValue::from_le_bytes(dt, &buf).map_err(|e| e.to_string())
}
