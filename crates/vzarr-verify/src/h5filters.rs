//! HDF5 filters that the static HDF5 build lacks, registered in-process (decoding only) so
//! that verification can read such datasets through the HDF5 library: zstd (32015, the
//! `hdf5plugin` format: one zstd frame per chunk). Blosc comes from `hdf5-metno`'s own filter
//! (c-blosc). Only registered when no filter with that id is available yet.

use std::ffi::{c_uint, c_void};
use std::sync::Once;

use hdf5_sys::h5::{H5allocate_memory, H5free_memory};
use hdf5_sys::h5z::{
    H5Z_CLASS_T_VERS, H5Z_FLAG_REVERSE, H5Z_class2_t, H5Z_filter_t, H5Zfilter_avail, H5Zregister,
};

const ZSTD: H5Z_filter_t = 32015;

static REGISTER: Once = Once::new();

/// Registers the missing filters once per process.
pub(crate) fn register() {
    REGISTER.call_once(|| {
        hdf5::sync::sync(|| {
            // SAFETY: plain HDF5 calls under the library lock; HDF5 copies the class and the
            // name is static.
            unsafe {
                if H5Zfilter_avail(ZSTD) <= 0 {
                    let class = H5Z_class2_t {
                        version: H5Z_CLASS_T_VERS as _,
                        id: ZSTD,
                        encoder_present: 0,
                        decoder_present: 1,
                        name: c"zstd (vzarr-read, decode only)".as_ptr(),
                        can_apply: None,
                        set_local: None,
                        filter: Some(zstd_filter),
                    };
                    H5Zregister((&raw const class).cast::<c_void>());
                }
            }
        });
    });
}

/// The zstd filter callback: decodes one chunk into a buffer from the HDF5 allocator.
unsafe extern "C" fn zstd_filter(
    flags: c_uint,
    _cd_nelmts: usize,
    _cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    if flags & H5Z_FLAG_REVERSE == 0 {
        return 0; // decoding only
    }
    // SAFETY: *buf holds at least nbytes valid bytes (HDF5 filter contract).
    let input = unsafe { std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes) };
    let Some(out) = std::panic::catch_unwind(|| zstd::stream::decode_all(input).ok())
        .ok()
        .flatten()
    else {
        return 0;
    };
    // SAFETY: the new buffer comes from the HDF5 allocator, as HDF5 frees it.
    unsafe {
        let new = H5allocate_memory(out.len().max(1), 0);
        if new.is_null() {
            return 0;
        }
        std::ptr::copy_nonoverlapping(out.as_ptr(), new.cast::<u8>(), out.len());
        H5free_memory(*buf);
        *buf = new;
        *buf_size = out.len().max(1);
    }
    out.len()
}
