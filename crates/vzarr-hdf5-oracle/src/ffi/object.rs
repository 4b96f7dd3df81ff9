//! Objects: number of attributes, the path of every object by address, and the path a
//! classic object reference points at.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, haddr_t, herr_t};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5o::{
    H5O_INFO_BASIC, H5O_INFO_NUM_ATTRS, H5O_info2_t, H5O_token_t, H5Oget_info3, H5Ovisit3,
};
use hdf5_sys::h5r::{H5R_type_t, H5Rget_name};

use super::{locked, two_call_name};

unsafe extern "C" {
    /// HDF5's native-VOL conversion of an object token to its file address (public API,
    /// `H5VLnative.h`; not bound by hdf5-sys).
    fn H5VLnative_token_to_addr(loc_id: hid_t, token: H5O_token_t, addr: *mut haddr_t) -> herr_t;
}

/// Number of attributes of an object; `None` when unreadable.
pub(crate) fn num_attrs(obj: hid_t) -> Option<u64> {
    // SAFETY: `H5O_info2_t` is a plain C struct of integers, a byte-array token and a C enum
    // whose zero is a valid variant (H5O_TYPE_GROUP): all zeros is a valid value.
    let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a local HDF5 writes one struct to; lock held.
    let r = locked(|| unsafe { H5Oget_info3(obj, &mut info, H5O_INFO_NUM_ATTRS) });
    (r >= 0).then_some(info.num_attrs)
}

/// The path of every object reachable from the group `root`, by file address, from one
/// visit (the first path found for an object reachable by several).
pub(crate) fn paths_by_address(root: hid_t) -> Option<HashMap<haddr_t, String>> {
    /// Records the visited object's path under its address in the map behind `data`.
    extern "C" fn visit(
        obj: hid_t,
        name: *const c_char,
        info: *const H5O_info2_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 calls this only from `H5Ovisit3` below (the function is not reachable
        // from anywhere else), with a NUL-terminated name and an info struct valid for the
        // call, and `data` the map, borrowed mutably by nobody else while the visit runs.
        unsafe {
            let map = &mut *data.cast::<HashMap<haddr_t, String>>();
            let mut addr: haddr_t = 0;
            if H5VLnative_token_to_addr(obj, (*info).token, &mut addr) >= 0 {
                let name = CStr::from_ptr(name).to_string_lossy().into_owned();
                map.entry(addr).or_insert(name);
            }
        }
        0
    }
    let mut map: HashMap<haddr_t, String> = HashMap::new();
    // SAFETY: the callback only inserts into `map`, which outlives the call; lock held.
    let r = locked(|| unsafe {
        H5Ovisit3(
            root,
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_INC,
            Some(visit),
            (&mut map as *mut HashMap<haddr_t, String>).cast(),
            H5O_INFO_BASIC,
        )
    });
    (r >= 0).then_some(map)
}

/// The path of the object at file address `addr`, resolved as a classic object reference
/// (`H5R_OBJECT1`) in the file of `loc`.
pub(crate) fn reference_path(loc: hid_t, addr: haddr_t) -> Option<String> {
    let r = (&addr as *const haddr_t).cast::<c_void>();
    let get = |buf, size| {
        // SAFETY: `r` points at one classic object reference (a file address, `hobj_ref_t`),
        // a local that outlives the calls; HDF5 writes at most `size` bytes, the buffer's
        // length (`two_call_name`); lock held.
        locked(|| unsafe { H5Rget_name(loc, H5R_type_t::H5R_OBJECT1, r, buf, size) })
    };
    two_call_name(get)
}
