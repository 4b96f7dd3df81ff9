//! HDF5 filters that the static HDF5 build lacks, registered in-process (decoding only) so
//! that verification can read such datasets through the HDF5 library: zstd (32015, the
//! `hdf5plugin` format: one zstd frame per chunk) and LZF (32000, h5py's filter, which
//! hdf5plugin's plugin directory does not have; decoded with the `lzf` crate, a port of the
//! LibLZF that h5py builds in: the interop tests compare the values with h5py's), and, when
//! no plugin gives them, the HDF5 LZ4 filter (32004) and bitshuffle (32008) with vzarr-codec's
//! decoders. Blosc comes from `hdf5-metno`'s own filter (c-blosc); the other third-party
//! filters (bzip2, zfp, ...) from the plugins libhdf5 loads from `HDF5_PLUGIN_PATH`
//! (hdf5plugin's plugin directory, which the interop tests set: there LZ4 and bitshuffle are
//! hdf5plugin's own). Only registered when no filter with that id is available yet.

use std::ffi::{c_uint, c_void};
use std::sync::Once;

use hdf5_sys::h5::{H5allocate_memory, H5free_memory};
use hdf5_sys::h5z::{
    H5Z_CLASS_T_VERS, H5Z_FLAG_REVERSE, H5Z_class2_t, H5Z_filter_t, H5Zfilter_avail, H5Zregister,
};

const ZSTD: H5Z_filter_t = 32015;
const LZF: H5Z_filter_t = 32000;
const LZ4: H5Z_filter_t = 32004;
const BITSHUFFLE: H5Z_filter_t = 32008;

/// The largest chunk HDF5 stores (4 GiB): no decoded chunk is larger.
const MAX_CHUNK: u64 = 1 << 32;

static REGISTER: Once = Once::new();

/// An HDF5 filter callback.
type Callback = unsafe extern "C" fn(
    c_uint,
    usize,
    *const c_uint,
    usize,
    *mut usize,
    *mut *mut c_void,
) -> usize;

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
                let filters: [(H5Z_filter_t, &std::ffi::CStr, Callback); 3] = [
                    (LZF, c"lzf (vzarr-verify, decode only)", lzf_filter),
                    (LZ4, c"lz4 (vzarr-verify, decode only)", lz4_filter),
                    (
                        BITSHUFFLE,
                        c"bitshuffle (vzarr-verify, decode only)",
                        bitshuffle_filter,
                    ),
                ];
                for (id, name, filter) in filters {
                    if H5Zfilter_avail(id) <= 0 {
                        let class = H5Z_class2_t {
                            version: H5Z_CLASS_T_VERS as _,
                            id,
                            encoder_present: 0,
                            decoder_present: 1,
                            name: name.as_ptr(),
                            can_apply: None,
                            set_local: None,
                            filter: Some(filter),
                        };
                        H5Zregister((&raw const class).cast::<c_void>());
                    }
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

/// The HDF5 LZ4 filter callback: the framing of `lz4_h5filter.c` (the decoded size, the
/// block size, then each block's compressed size and bytes), decoded by vzarr-codec. LZ4
/// expands at most 255 times, which bounds what a chunk may declare.
unsafe extern "C" fn lz4_filter(
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
    let limit = (nbytes as u64)
        .saturating_mul(256)
        .saturating_add(4096)
        .min(MAX_CHUNK);
    let out =
        std::panic::catch_unwind(|| vzarr_codec::lz4h5::lz4h5_decode_bounded(input, limit).ok())
            .ok()
            .flatten();
    // SAFETY: the HDF5 filter contract, as for this callback.
    unsafe { replace_buffer(out, buf_size, buf) }
}

/// The bitshuffle filter callback (`bshuf_h5filter.c`): the element size, block size and
/// compression come from the client data (read as the scanner reads them), decoded by
/// vzarr-codec, at most as many bytes as the input (uncompressed), 255 times it (LZ4) or a
/// chunk's largest size (zstd).
unsafe extern "C" fn bitshuffle_filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    if flags & H5Z_FLAG_REVERSE == 0 || cd_nelmts < 3 {
        return 0; // decoding only, with the element size bitshuffle's set_local records
    }
    // SAFETY: cd_values holds cd_nelmts values and *buf nbytes bytes (HDF5 filter contract).
    let (cd, input) = unsafe {
        (
            std::slice::from_raw_parts(cd_values, cd_nelmts),
            std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes),
        )
    };
    use vzarr_core::BitshuffleCompression as C;
    let compression = match cd.get(4).copied().unwrap_or(0) {
        0 => C::None,
        2 => C::Lz4,
        3 => C::Zstd,
        _ => return 0,
    };
    let codec = vzarr_codec::bitshuffle::Bitshuffle {
        element_size: cd[2] as usize,
        block_size: cd.get(3).copied().unwrap_or(0) as usize,
        compression,
        level: 0,
    };
    let limit = match compression {
        C::None => nbytes as u64,
        C::Lz4 => (nbytes as u64).saturating_mul(256).saturating_add(4096),
        C::Zstd => MAX_CHUNK,
    }
    .min(MAX_CHUNK);
    let out = std::panic::catch_unwind(|| codec.decode_bounded(input, limit).ok())
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
