//! HDF5 filters that the static HDF5 build lacks, registered in-process (decoding only) so
//! that verification can read such datasets through the HDF5 library: zstd (32015, the
//! `hdf5plugin` format: one zstd frame per chunk) and LZF (32000, h5py's filter, which
//! hdf5plugin's plugin directory does not have; decoded with the `lzf` crate, a port of the
//! LibLZF that h5py builds in: the interop tests compare the values with h5py's), LZO (305,
//! PyTables' filter, in no plugin directory; decoded by vzarr-codec, the interop tests compare
//! with imagecodecs' LZO decoder), and, when
//! no plugin gives them, the HDF5 LZ4 filter (32004) and bitshuffle (32008) with vzarr-codec's
//! decoders. Blosc comes from `hdf5-metno`'s own filter (c-blosc); the other third-party
//! filters (bzip2, zfp, ...) from the plugins libhdf5 loads from `HDF5_PLUGIN_PATH`
//! (hdf5plugin's plugin directory, which the interop tests set: there LZ4 and bitshuffle are
//! hdf5plugin's own). Only registered when no filter with that id is available yet.

use std::ffi::{c_uint, c_void};
use std::sync::Once;

use hdf5_sys::h5::{H5allocate_memory, H5free_memory};
use hdf5_sys::h5z::{
    H5Z_CLASS_T_VERS, H5Z_FLAG_REVERSE, H5Z_class2_t, H5Z_filter_t, H5Z_func_t, H5Zfilter_avail,
    H5Zregister,
};

const ZSTD: H5Z_filter_t = 32015;
const LZF: H5Z_filter_t = 32000;
const LZ4: H5Z_filter_t = 32004;
const BITSHUFFLE: H5Z_filter_t = 32008;
const LZO: H5Z_filter_t = 305;

/// The largest chunk HDF5 stores (4 GiB): no decoded chunk is larger.
const MAX_CHUNK: u64 = 1 << 32;

static REGISTER: Once = Once::new();

/// Registers the missing filters once per process.
pub(crate) fn register() {
    REGISTER.call_once(|| {
        let filters: [(H5Z_filter_t, &std::ffi::CStr, H5Z_func_t); 5] = [
            (
                ZSTD,
                c"zstd (vzarr-read, decode only)",
                Some(filter::<Zstd>),
            ),
            (LZF, c"lzf (vzarr-verify, decode only)", Some(filter::<Lzf>)),
            (LZO, c"lzo (vzarr-verify, decode only)", Some(filter::<Lzo>)),
            (LZ4, c"lz4 (vzarr-verify, decode only)", Some(filter::<Lz4>)),
            (
                BITSHUFFLE,
                c"bitshuffle (vzarr-verify, decode only)",
                Some(filter::<Bitshuffle>),
            ),
        ];
        hdf5::sync::sync(|| {
            for (id, name, filter) in filters {
                // SAFETY: plain HDF5 calls under the library lock; HDF5 copies the class and
                // the name is static.
                unsafe {
                    if H5Zfilter_avail(id) <= 0 {
                        let class = H5Z_class2_t {
                            version: H5Z_CLASS_T_VERS as _,
                            id,
                            encoder_present: 0,
                            decoder_present: 1,
                            name: name.as_ptr(),
                            can_apply: None,
                            set_local: None,
                            filter,
                        };
                        H5Zregister((&raw const class).cast::<c_void>());
                    }
                }
            }
        });
    });
}

/// The decoding of one HDF5 filter, called by its callback [`filter`].
trait ChunkDecoder {
    /// The fewest client data values the filter needs (what its `set_local` records); with
    /// fewer the chunk is not decoded.
    const MIN_CLIENT_DATA: usize;

    /// Decodes one chunk with the filter's client data `cd`; `None` when it cannot.
    fn decode(cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>>;
}

/// The zstd filter: one frame per chunk.
struct Zstd;

impl ChunkDecoder for Zstd {
    const MIN_CLIENT_DATA: usize = 0;

    fn decode(_cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>> {
        zstd::stream::decode_all(input).ok()
    }
}

/// The LZF filter (h5py's `lzf_filter.c`): the chunk's decoded size is its third client data
/// value.
struct Lzf;

impl ChunkDecoder for Lzf {
    const MIN_CLIENT_DATA: usize = 3;

    fn decode(cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>> {
        lzf::decompress(input, cd[2] as usize).ok()
    }
}

/// PyTables' LZO filter (`H5Zlzo.c`): nothing gives the decoded size, so vzarr-codec's
/// decoder grows its buffer as PyTables' filter does, up to 256 times the input (what LZO1X's
/// run lengths can reach) or a chunk's largest size.
struct Lzo;

impl ChunkDecoder for Lzo {
    const MIN_CLIENT_DATA: usize = 0;

    fn decode(_cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>> {
        let most = (input.len() as u64)
            .saturating_mul(256)
            .saturating_add(4096)
            .min(MAX_CHUNK);
        vzarr_codec::lzo::lzo_decode_growing(input, most).ok()
    }
}

/// The HDF5 LZ4 filter: the framing of `lz4_h5filter.c` (the decoded size, the block size,
/// then each block's compressed size and bytes), decoded by vzarr-codec. LZ4 expands at most
/// 255 times, which bounds what a chunk may declare.
struct Lz4;

impl ChunkDecoder for Lz4 {
    const MIN_CLIENT_DATA: usize = 0;

    fn decode(_cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>> {
        let limit = (input.len() as u64)
            .saturating_mul(256)
            .saturating_add(4096)
            .min(MAX_CHUNK);
        vzarr_codec::lz4h5::lz4h5_decode_bounded(input, limit).ok()
    }
}

/// The bitshuffle filter (`bshuf_h5filter.c`): the element size, block size and compression
/// come from the client data (read as the scanner reads them), decoded by vzarr-codec, at
/// most as many bytes as the input (uncompressed), 255 times it (LZ4) or a chunk's largest
/// size (zstd).
struct Bitshuffle;

impl ChunkDecoder for Bitshuffle {
    const MIN_CLIENT_DATA: usize = 3;

    fn decode(cd: &[c_uint], input: &[u8]) -> Option<Vec<u8>> {
        use vzarr_core::BitshuffleCompression as C;
        let compression = match cd.get(4).copied().unwrap_or(0) {
            0 => C::None,
            2 => C::Lz4,
            3 => C::Zstd,
            _ => return None,
        };
        let codec = vzarr_codec::bitshuffle::Bitshuffle {
            element_size: cd[2] as usize,
            block_size: cd.get(3).copied().unwrap_or(0) as usize,
            compression,
            level: 0,
        };
        let nbytes = input.len() as u64;
        let limit = match compression {
            C::None => nbytes,
            C::Lz4 => nbytes.saturating_mul(256).saturating_add(4096),
            C::Zstd => MAX_CHUNK,
        }
        .min(MAX_CHUNK);
        codec.decode_bounded(input, limit).ok()
    }
}

/// The HDF5 filter callback of `D`: decoding only (0, failure, when asked to encode or given
/// fewer client data values than `D` needs), one chunk into a buffer from the HDF5
/// allocator; a panic while decoding is a failure.
unsafe extern "C" fn filter<D: ChunkDecoder>(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    if flags & H5Z_FLAG_REVERSE == 0 || cd_nelmts < D::MIN_CLIENT_DATA {
        return 0;
    }
    // SAFETY: cd_values holds cd_nelmts values and *buf nbytes bytes (HDF5 filter contract);
    // no client data is read when the filter needs none.
    let (cd, input) = unsafe {
        (
            if D::MIN_CLIENT_DATA == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(cd_values, cd_nelmts)
            },
            std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes),
        )
    };
    let out = std::panic::catch_unwind(|| D::decode(cd, input))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `filter::<D>` on `encoded` in a buffer from the HDF5 allocator, as libhdf5 does.
    fn run<D: ChunkDecoder>(cd: &[c_uint], encoded: &[u8]) -> Option<Vec<u8>> {
        hdf5::sync::sync(|| {
            // SAFETY: the buffer comes from the HDF5 allocator and holds `encoded`; the
            // callback replaces it (or leaves it) and it is freed here, as libhdf5 would.
            unsafe {
                let mut buf = H5allocate_memory(encoded.len().max(1), 0);
                assert!(!buf.is_null());
                std::ptr::copy_nonoverlapping(encoded.as_ptr(), buf.cast::<u8>(), encoded.len());
                let mut size = encoded.len();
                let n = filter::<D>(
                    H5Z_FLAG_REVERSE,
                    cd.len(),
                    cd.as_ptr(),
                    encoded.len(),
                    &mut size,
                    &mut buf,
                );
                let out = (n > 0).then(|| std::slice::from_raw_parts(buf.cast::<u8>(), n).to_vec());
                H5free_memory(buf);
                out
            }
        })
    }

    #[test]
    fn callbacks_decode_into_the_hdf5_buffer_or_fail() {
        let raw: Vec<u8> = (0..4000u32).map(|i| (i % 7) as u8).collect();
        let zstd = zstd::bulk::compress(&raw, 3).unwrap();
        assert_eq!(run::<Zstd>(&[], &zstd), Some(raw.clone()));
        assert_eq!(run::<Zstd>(&[], b"not zstd"), None);
        let lzf = lzf::compress(&raw).unwrap();
        assert_eq!(run::<Lzf>(&[0, 0, 4000], &lzf), Some(raw.clone()));
        // Fewer client data values than the filter needs, or too small a chunk size: failure.
        assert_eq!(run::<Lzf>(&[0, 0], &lzf), None);
        assert_eq!(run::<Lzf>(&[0, 0, 10], &lzf), None);
        let lz4 = vzarr_codec::lz4h5::lz4h5_encode(&raw);
        assert_eq!(run::<Lz4>(&[], &lz4), Some(raw.clone()));
        let lzo = vzarr_codec::lzo::lzo_encode(&raw).unwrap();
        assert_eq!(run::<Lzo>(&[1, 23, 0], &lzo), Some(raw.clone()));
        assert_eq!(run::<Lzo>(&[], b"not lzo"), None);
        // Bitshuffle: element size 1, no compression; an unknown compression fails.
        assert_eq!(
            Bitshuffle::decode(&[0, 0, 1, 0, 0], &raw).map(|v| v.len()),
            Some(raw.len())
        );
        assert_eq!(run::<Bitshuffle>(&[0, 0, 1, 0, 9], &raw), None);
        // Encoding is refused before anything is read.
        // SAFETY: the callback returns before it reads any pointer when asked to encode.
        let n = unsafe {
            filter::<Zstd>(
                0,
                0,
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(n, 0);
    }
}
