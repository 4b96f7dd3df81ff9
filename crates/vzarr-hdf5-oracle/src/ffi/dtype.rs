//! Datatypes: class, size, byte order, sign, bit layout, string padding, enum members.

use std::ffi::{CStr, c_uint};

use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{
    H5T_class_t, H5T_order_t, H5T_sign_t, H5T_str_t, H5Tget_class, H5Tget_ebias, H5Tget_fields,
    H5Tget_member_name, H5Tget_member_value, H5Tget_nmembers, H5Tget_offset, H5Tget_order,
    H5Tget_precision, H5Tget_sign, H5Tget_size, H5Tget_strpad, H5Tget_super, H5Tis_variable_str,
};

use super::{Hid, locked};

// Every function here is a query of an identifier: an invalid one gives HDF5's error value
// (H5T_NO_CLASS, 0, a negative number, ...), never undefined behaviour.

/// The type's class.
pub(crate) fn class(t: hid_t) -> H5T_class_t {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_class(t) })
}

/// Size of one element in bytes (0 on error).
pub(crate) fn size(t: hid_t) -> usize {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_size(t) })
}

/// Byte order.
pub(crate) fn order(t: hid_t) -> H5T_order_t {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_order(t) })
}

/// Sign of an integer type.
pub(crate) fn sign(t: hid_t) -> H5T_sign_t {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_sign(t) })
}

/// Number of significant bits.
pub(crate) fn precision(t: hid_t) -> usize {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_precision(t) })
}

/// Bit offset of the significant bits.
pub(crate) fn offset(t: hid_t) -> i32 {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_offset(t) })
}

/// Exponent bias of a float type.
pub(crate) fn ebias(t: hid_t) -> usize {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_ebias(t) })
}

/// Bit fields of a float type: sign position, exponent position and size, mantissa position
/// and size; `None` when unreadable.
pub(crate) fn fields(t: hid_t) -> Option<[usize; 5]> {
    let (mut spos, mut epos, mut esize, mut mpos, mut msize) = (0, 0, 0, 0, 0);
    // SAFETY: the five out-pointers are locals that HDF5 writes one `size_t` each to; lock
    // held.
    let ok = locked(|| unsafe {
        H5Tget_fields(t, &mut spos, &mut epos, &mut esize, &mut mpos, &mut msize)
    }) >= 0;
    ok.then_some([spos, epos, esize, mpos, msize])
}

/// Whether a string type is variable-length.
pub(crate) fn is_variable_str(t: hid_t) -> bool {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tis_variable_str(t) }) > 0
}

/// Padding of a fixed-length string type.
pub(crate) fn strpad(t: hid_t) -> H5T_str_t {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_strpad(t) })
}

/// The base type of an enum, array or variable-length type.
pub(crate) fn super_type(t: hid_t) -> Result<Hid, String> {
    // SAFETY: a query of an identifier; the new identifier is owned by the returned `Hid`;
    // lock held.
    Hid::datatype(locked(|| unsafe { H5Tget_super(t) }), "H5Tget_super")
}

/// Number of members of an enum or compound type (negative on error).
pub(crate) fn nmembers(t: hid_t) -> i32 {
    // SAFETY: a query of an identifier; lock held.
    locked(|| unsafe { H5Tget_nmembers(t) })
}

/// Name of member `i` of an enum or compound type.
pub(crate) fn member_name(t: hid_t, i: u32) -> Option<String> {
    locked(|| {
        // SAFETY: a query of an identifier; the result is null or a NUL-terminated string
        // that HDF5 allocated for the caller; lock held.
        let p = unsafe { H5Tget_member_name(t, i as c_uint) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` is a non-null NUL-terminated string from HDF5, read before it is freed.
        let name = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        // SAFETY: `p` was allocated by HDF5 for the caller and is freed once, here.
        unsafe { hdf5_sys::h5::H5free_memory(p.cast()) };
        Some(name)
    })
}

/// Value of member `i` of an enum type, as the bytes of one element of its base type.
pub(crate) fn member_value(t: hid_t, i: u32) -> Option<Vec<u8>> {
    locked(|| {
        let n = size(t);
        if n == 0 {
            return None;
        }
        // HDF5 writes one value of the enum's size, which is the size of its base type.
        let mut v = vec![0u8; n];
        // SAFETY: `v` holds one element of the enum's size, what HDF5 writes; lock held.
        (unsafe { H5Tget_member_value(t, i as c_uint, v.as_mut_ptr().cast()) } >= 0).then_some(v)
    })
}
