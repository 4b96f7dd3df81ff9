//! HDF5 filter pipelines mapped to Zarr v3 codecs (after `bytes`, in pipeline order), or the
//! reason a pipeline has no codecs that zarr-python 3.4 decodes.

use hdf5_sys::h5i::hid_t;
use vzarr_core::{Codec, DataType};

use crate::ffi;

/// The codecs after `bytes` for a dataset's filter pipeline, or why it cannot be mapped.
pub(crate) fn codecs(dcpl: hid_t, dt: DataType) -> Result<Vec<Codec>, String> {
    let n = ffi::plist::nfilters(dcpl);
    if n < 0 {
        return Err("filter pipeline unreadable".into());
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as u32 {
        let Some(filter) = ffi::plist::filter(dcpl, i) else {
            return Err(format!("filter {i} of the pipeline unreadable"));
        };
        let cd = filter.cd_values.as_slice();
        // A negative id is not a filter id; it maps to the "unknown" refusal.
        let id = u32::try_from(filter.id).unwrap_or(u32::MAX);
        out.push(Codec::from_hdf5_filter(id, cd, dt.clone())?);
    }
    Ok(out)
}
