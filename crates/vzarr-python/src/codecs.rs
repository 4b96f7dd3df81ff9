//! The codecs of third-party HDF5 filters that no other Python package decodes as HDF5 stores
//! them (`vzarr.lzf`, `vzarr.bitshuffle`, `vzarr.zfp`, `vzarr.blosc2`, `vzarr.lzo`,
//! `vzarr.jpegls`), for the Zarr codecs of `vzarr.codecs` that zarr-python finds through the `zarr.codecs` entry points:
//! the same Rust decoders as vzarr's own reader (`vzarr_codec::FilterCodec`), bounded by the
//! chunk's size; and, for `vzarr.htj2k` (which zarr-python decodes with the filter's own
//! decoder, OpenJPH through imagecodecs), the bounds vzarr's reader checks before decoding.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use vzarr_codec::FilterCodec;

use crate::VzarrError;

fn codec(codec_json: &str) -> PyResult<FilterCodec> {
    let json: serde_json::Value =
        serde_json::from_str(codec_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let c = vzarr_core::Codec::from_zarr_json(&json)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    FilterCodec::new(c).ok_or_else(|| PyValueError::new_err(format!("not a vzarr codec: {json}")))
}

/// Decodes one chunk with the codec `codec_json` (its Zarr v3 metadata, as JSON), writing at
/// most `limit` bytes (the chunk's decoded size); a chunk that declares or decodes to more, or
/// is not what the codec reads, raises `VzarrError`.
#[pyfunction]
pub(crate) fn decode_chunk<'py>(
    py: Python<'py>,
    codec_json: &str,
    data: &[u8],
    limit: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let c = codec(codec_json)?;
    let out = py
        .detach(|| c.decode_bounded(data, limit))
        .map_err(|e| VzarrError::new_err(format!("{codec_json}: {e}")))?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes one chunk with the codec `codec_json` (as the HDF5 filter would).
#[pyfunction]
pub(crate) fn encode_chunk<'py>(
    py: Python<'py>,
    codec_json: &str,
    data: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let c = codec(codec_json)?;
    let out = py
        .detach(|| c.encode_raw(data))
        .map_err(|e| VzarrError::new_err(format!("{codec_json}: {e}")))?;
    Ok(PyBytes::new(py, &out))
}

/// Bytes of the image an HTJ2K chunk's codestream declares in its SIZ marker segment, checked
/// as vzarr's reader checks it before decoding (1-4 components of one precision up to 16 bits,
/// not subsampled, at most 4096 tiles); `VzarrError` otherwise.
#[pyfunction]
pub(crate) fn htj2k_image_bytes(data: &[u8]) -> PyResult<u64> {
    vzarr_codec::htj2k::htj2k_image_bytes(data)
        .map_err(|e| VzarrError::new_err(format!("vzarr.htj2k: {e}")))
}
