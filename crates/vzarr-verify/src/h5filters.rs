//! HDF5 filters that the static HDF5 build lacks, registered in-process (decoding only) so
//! that verification can read such datasets through the HDF5 library: zstd (32015, the
//! `hdf5plugin` format: one zstd frame per chunk) and LZF (32000, h5py's filter, which
//! hdf5plugin's plugin directory does not have; decoded with the `lzf` crate, a port of the
//! LibLZF that h5py builds in: the interop tests compare the values with h5py's). Blosc comes
//! from `hdf5-metno`'s own filter (c-blosc); the other third-party filters (bitshuffle, LZ4,
//! bzip2, ...) from the plugins libhdf5 loads from `HDF5_PLUGIN_PATH` (hdf5plugin's plugin
//! directory). Only registered when no filter with that id is available yet.

use std::ffi::{c_uint, c_void};
use std::sync::Once;

use hdf5_sys::h5::{H5allocate_memory, H5free_memory};
use hdf5_sys::h5z::{
    H5Z_CLASS_T_VERS, H5Z_FLAG_REVERSE, H5Z_class2_t, H5Z_filter_t, H5Zfilter_avail, H5Zregister,
};

const ZSTD: H5Z_filter_t = 32015;
const LZF: H5Z_filter_t = 32000;

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
                if H5Zfilter_avail(LZF) <= 0 {
                    let class = H5Z_class2_t {
                        version: H5Z_CLASS_T_VERS as _,
                        id: LZF,
                        encoder_present: 0,
                        decoder_present: 1,
                        name: c"lzf (vzarr-verify, decode only)".as_ptr(),
                        can_apply: None,
                        set_local: None,
                        filter: Some(lzf_filter),
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
    let out = std::panic::catch_unwind(|| zstd::stream::decode_all(input).ok())
        .ok()
        .flatten();
    // SAFETY: the HDF5 filter contract, as for this callback.
    unsafe { replace_buffer(out, buf_size, buf) }
}

/// The LZF filter callback (h5py's `lzf_filter.c`): the chunk's decoded size is its third
/// client data value; decodes one chunk into a buffer from the HDF5 allocator.
unsafe extern "C" fn lzf_filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    if flags & H5Z_FLAG_REVERSE == 0 || cd_nelmts < 3 {
        return 0; // decoding only, with the chunk size h5py's set_local records
    }
    // SAFETY: cd_values holds cd_nelmts values and *buf nbytes bytes (HDF5 filter contract).
    let (size, input) = unsafe {
        (
            *cd_values.add(2) as usize,
            std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes),
        )
    };
    let out = std::panic::catch_unwind(|| lzf::decompress(input, size).ok())
        .ok()
        .flatten();
    // SAFETY: the HDF5 filter contract, as for this callback.
    unsafe { replace_buffer(out, buf_size, buf) }
}

/// Replaces the filter's buffer with `out` (a buffer from the HDF5 allocator, as HDF5 frees
/// it) and returns its length, or 0 (failure) without `out`.
///
/// # Safety
/// `buf` and `buf_size` are a filter callback's, `*buf` allocated by HDF5.
unsafe fn replace_buffer(
    out: Option<Vec<u8>>,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    let Some(out) = out else {
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
