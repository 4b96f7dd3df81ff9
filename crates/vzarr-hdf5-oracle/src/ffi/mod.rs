//! Thin safe wrappers over the HDF5 C calls the scanner makes beyond the `hdf5-metno` API.
//!
//! This is the only module of the crate with `unsafe` code, and it holds no scanning logic:
//! each function makes one C call (or the few that one operation needs, such as a read and
//! the release of what the read allocated), checks the result and returns owned Rust values.
//! What the values mean for a Zarr array is decided elsewhere.
//!
//! Why calling these wrappers with any argument is sound:
//! - **Identifiers are handles, not pointers.** An `hid_t` is looked up in HDF5's own tables;
//!   a stale, invalid or wrongly typed identifier makes the call fail with a negative return
//!   (or a documented error value), which the wrappers report. Identifiers that a call
//!   creates are owned by a [`Hid`] and closed exactly once, when it drops.
//! - **One thread in the library at a time.** The bundled static HDF5 is built without its
//!   thread-safety option, so every call here runs holding the global re-entrant lock that
//!   `hdf5-metno` takes around each of its own calls ([`hdf5::sync::sync`]). The scanner holds
//!   it for a whole file, so the wrappers only check that this thread owns it.
//! - **Buffers are sized from HDF5's own description** of what a call writes (the element
//!   size of the memory type and the number of elements of the object read), never from the
//!   caller's arguments; a buffer that does not match is refused before the call.
//! - **Memory that HDF5 allocates** (names, variable-length data, references) is copied into
//!   owned Rust values and released with the library's functions before returning.

pub(crate) mod attr;
pub(crate) mod dataset;
pub(crate) mod dtype;
pub(crate) mod object;
pub(crate) mod plist;
pub(crate) mod space;

use std::ffi::c_char;
use std::ptr;

use hdf5_sys::h5::{haddr_t, herr_t};
use hdf5_sys::h5a::H5Aclose;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5Pclose;
use hdf5_sys::h5s::H5Sclose;
use hdf5_sys::h5t::H5Tclose;

/// An undefined address (`HADDR_UNDEF`): a chunk or dataset that was never written.
pub(crate) const HADDR_UNDEF: haddr_t = haddr_t::MAX;

/// Runs `f` holding HDF5's global lock: as it is when this thread already holds it (then it
/// stays held until `f` returns, since the guard is further up this thread's stack), else
/// inside [`hdf5::sync::sync`]. The check is a thread id and one relaxed load; taking the
/// re-entrant lock again for every call cost a measurable share of a scan.
fn locked<T>(f: impl FnOnce() -> T) -> T {
    if hdf5_sys::LOCK.is_owned_by_current_thread() {
        f()
    } else {
        hdf5::sync::sync(f)
    }
}

/// An owned HDF5 identifier, closed on drop with the matching close function.
pub(crate) struct Hid {
    id: hid_t,
    close: unsafe extern "C" fn(hid_t) -> herr_t,
}

impl Hid {
    /// Takes ownership of `id`, just returned by a C call, if it is valid (non-negative);
    /// else returns "`what` failed" as the error.
    fn new(
        id: hid_t,
        close: unsafe extern "C" fn(hid_t) -> herr_t,
        what: &str,
    ) -> Result<Self, String> {
        if id < 0 {
            Err(format!("{what} failed"))
        } else {
            Ok(Hid { id, close })
        }
    }

    /// A datatype identifier just returned by `what`.
    pub(crate) fn datatype(id: hid_t, what: &str) -> Result<Self, String> {
        Hid::new(id, H5Tclose, what)
    }

    /// A dataspace identifier just returned by `what`.
    pub(crate) fn dataspace(id: hid_t, what: &str) -> Result<Self, String> {
        Hid::new(id, H5Sclose, what)
    }

    /// A property list identifier just returned by `what`.
    pub(crate) fn plist(id: hid_t, what: &str) -> Result<Self, String> {
        Hid::new(id, H5Pclose, what)
    }

    /// An attribute identifier just returned by `what`.
    pub(crate) fn attribute(id: hid_t, what: &str) -> Result<Self, String> {
        Hid::new(id, H5Aclose, what)
    }

    /// The identifier, for calls; it stays owned by `self`.
    pub(crate) fn id(&self) -> hid_t {
        self.id
    }
}

impl Drop for Hid {
    fn drop(&mut self) {
        let (id, close) = (self.id, self.close);
        // SAFETY: `id` was returned by the C call that created it and is owned by this
        // wrapper alone, so this is its one close; `close` is the close function of its kind
        // (chosen by the constructor); the lock is held.
        locked(|| unsafe {
            close(id);
        });
    }
}

/// A name from an HDF5 call that is made twice: `get(null, 0)` returns the name's length
/// (without its NUL, negative on failure), `get(buf, size)` fills a buffer of `size` bytes,
/// the length + 1. `get` must write at most `size` bytes to `buf`.
fn two_call_name(mut get: impl FnMut(*mut c_char, usize) -> isize) -> Option<String> {
    let n = usize::try_from(get(ptr::null_mut(), 0)).ok()?;
    let mut buf = vec![0u8; n + 1];
    if get(buf.as_mut_ptr().cast(), buf.len()) < 0 {
        return None;
    }
    buf.truncate(n);
    Some(String::from_utf8_lossy(&buf).into_owned())
}
