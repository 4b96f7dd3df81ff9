//! Datasets: their creation property list, type and dataspace, and reads of their values
//! without type conversion.

use std::ptr;

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5d::{H5Dget_create_plist, H5Dget_space, H5Dget_type, H5Dread};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::{H5S_ALL, H5S_seloper_t, H5Screate_simple, H5Sselect_hyperslab};

use super::{Hid, dtype, locked, space};

/// A copy of the dataset's creation property list.
pub(crate) fn create_plist(ds: hid_t) -> Result<Hid, String> {
    // SAFETY: a query of an identifier; the new identifier is owned by the returned `Hid`;
    // lock held.
    Hid::plist(
        locked(|| unsafe { H5Dget_create_plist(ds) }),
        "H5Dget_create_plist",
    )
}

/// The dataset's datatype as stored in the file.
pub(crate) fn file_type(ds: hid_t) -> Result<Hid, String> {
    // SAFETY: as for `create_plist`.
    Hid::datatype(locked(|| unsafe { H5Dget_type(ds) }), "H5Dget_type")
}

/// The dataset's dataspace.
pub(crate) fn space(ds: hid_t) -> Result<Hid, String> {
    // SAFETY: as for `create_plist`.
    Hid::dataspace(locked(|| unsafe { H5Dget_space(ds) }), "H5Dget_space")
}

/// Bytes of `n` elements of `mem_type`, if that fits in memory.
fn bytes_of(n: u64, mem_type: hid_t) -> Option<usize> {
    usize::try_from(n).ok()?.checked_mul(dtype::size(mem_type))
}

/// Reads every element of the dataset into `buf` as `mem_type` (the dataset's own file type
/// reads the stored bytes without conversion). `buf` must hold exactly the dataset's elements;
/// returns false when it does not or the read fails.
pub(crate) fn read_all(ds: hid_t, mem_type: hid_t, buf: &mut [u8]) -> bool {
    locked(|| {
        let Ok(file_space) = space(ds) else {
            return false;
        };
        if bytes_of(space::npoints(file_space.id()), mem_type) != Some(buf.len()) {
            return false;
        }
        // SAFETY: `buf` holds every element of the dataset in `mem_type` (checked above),
        // which is what HDF5 writes with both selections `H5S_ALL`; lock held.
        let read = unsafe {
            H5Dread(
                ds,
                mem_type,
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                buf.as_mut_ptr().cast(),
            )
        };
        read >= 0
    })
}

/// Reads the block of the dataset at `origin` with `count` elements per axis into the
/// leading corner of `buf`, a C-order array of shape `shape` of `mem_type` elements; the rest
/// of `buf` is left as it is.
pub(crate) fn read_block(
    ds: hid_t,
    mem_type: hid_t,
    shape: &[u64],
    origin: &[u64],
    count: &[u64],
    buf: &mut [u8],
) -> Result<(), String> {
    let rank = shape.len();
    if origin.len() != rank || count.len() != rank || count.iter().zip(shape).any(|(c, s)| c > s) {
        return Err("block selection does not match the buffer".into());
    }
    let rank = i32::try_from(rank).map_err(|_| "rank too large".to_string())?;
    let nelem = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    locked(|| {
        if nelem.and_then(|n| bytes_of(n, mem_type)) != Some(buf.len()) {
            return Err("buffer does not hold the block's shape".into());
        }
        let zeros = vec![0 as hsize_t; shape.len()];
        // SAFETY: `shape` has `rank` entries; no maximum dimensions (null); the new
        // identifier is owned by the `Hid`; lock held.
        let mem = Hid::dataspace(
            unsafe { H5Screate_simple(rank, shape.as_ptr(), ptr::null()) },
            "H5Screate_simple",
        )?;
        let file = space(ds)?;
        let set = H5S_seloper_t::H5S_SELECT_SET;
        let null = ptr::null();
        // SAFETY: the start and count arrays have `rank` entries, the rank of both dataspaces
        // (the file's is checked by HDF5 against the selection); no stride or block (null);
        // lock held.
        let selected = unsafe {
            H5Sselect_hyperslab(mem.id(), set, zeros.as_ptr(), null, count.as_ptr(), null) >= 0
                && H5Sselect_hyperslab(file.id(), set, origin.as_ptr(), null, count.as_ptr(), null)
                    >= 0
        };
        if !selected {
            return Err("hyperslab selection failed".into());
        }
        // SAFETY: `buf` holds the whole memory dataspace in `mem_type` (checked above) and the
        // memory selection lies inside it (`count` <= `shape`); HDF5 refuses a file selection
        // outside the dataset's extent; lock held.
        let read = unsafe {
            H5Dread(
                ds,
                mem_type,
                mem.id(),
                file.id(),
                H5P_DEFAULT,
                buf.as_mut_ptr().cast(),
            )
        };
        if read < 0 {
            return Err("reading the chunk through HDF5 failed".into());
        }
        Ok(())
    })
}
