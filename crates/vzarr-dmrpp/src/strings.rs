//! Variable-length strings whose values a DMR++ holds itself (`dmrpp:vlsa`, bes's
//! `vlsa.cc`): one `v` element per run of equal values (`c`: how many, default 1), its text
//! the value, or, where it has `s` (the value's length), the value deflated (zlib) and
//! base64-encoded. Stored as one inline `vlen-utf8` chunk.

use base64::Engine;

/// Most bytes of strings (as `vlen-utf8` encodes them) read from one `dmrpp:vlsa`, the bound
/// the HDF5 scanner keeps by default (`vzarr_hdf5::DEFAULT_MAX_STRING_BYTES`).
pub(crate) const MAX_STRING_BYTES: u64 = 64 << 20;

/// The `vlen-utf8` chunk of the `elements` values `vlsa` lists, or why there is none.
pub(crate) fn vlsa(vlsa: &crate::xml::Element, elements: u64) -> Result<Vec<u8>, String> {
    let mut values: Vec<String> = Vec::new();
    let mut bytes = 4u64;
    for v in vlsa.children_named("v") {
        let count = match v.attr("c") {
            Some(c) => c
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("dmrpp:vlsa count {c:?} is not a number"))?,
            None => 1,
        };
        let value = match v.attr("s") {
            Some(s) => {
                let size = s
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("dmrpp:vlsa size {s:?} is not a number"))?;
                if size > MAX_STRING_BYTES {
                    return Err(format!("a dmrpp:vlsa value of {size} bytes"));
                }
                let deflated = base64::engine::general_purpose::STANDARD
                    .decode(v.text.trim())
                    .map_err(|e| format!("a dmrpp:vlsa value is not base64: {e}"))?;
                let raw = vzarr_codec::inflate_bounded(&deflated, size)
                    .map_err(|e| format!("a dmrpp:vlsa value: {e}"))?;
                if raw.len() as u64 != size {
                    return Err(format!(
                        "a dmrpp:vlsa value inflates to {} bytes, not the {size} stated",
                        raw.len()
                    ));
                }
                String::from_utf8_lossy(&raw).into_owned()
            }
            None => v.text.clone(),
        };
        let total = values.len() as u64 + count;
        bytes = count
            .checked_mul(4 + value.len() as u64)
            .and_then(|b| b.checked_add(bytes))
            .filter(|&b| b <= MAX_STRING_BYTES && total <= elements)
            .ok_or_else(|| {
                format!(
                    "dmrpp:vlsa holds more than the array's {elements} values or \
                     {MAX_STRING_BYTES} bytes"
                )
            })?;
        values.extend(std::iter::repeat_n(value, count as usize));
    }
    if values.len() as u64 != elements {
        return Err(format!(
            "dmrpp:vlsa holds {} values for an array of {elements}",
            values.len()
        ));
    }
    vzarr_codec::vlen_utf8::encode(&values).map_err(|e| e.to_string())
}

/// The value of a scalar string held as `dmrpp:compact` (its bytes, base64-encoded; bes's
/// `DmrppStr` reads them up to the first NUL), as one `vlen-utf8` value.
pub(crate) fn compact_scalar(compact: &crate::xml::Element) -> Result<Vec<u8>, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.text.trim())
        .map_err(|e| format!("dmrpp:compact is not base64: {e}"))?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..end]).into_owned();
    vzarr_codec::vlen_utf8::encode(&[text]).map_err(|e| e.to_string())
}
