//! Source URLs between vzarr's form and Icechunk's.
//!
//! vzarr writes `file://` URLs with the path as written (`file:///data/a b.nc`, as fsspec and
//! `object_store` take it); Icechunk parses `file://` locations as WHATWG URLs, which
//! percent-encodes some bytes and not others (a literal `%20` in a file name would then read as
//! a space). So `file://` paths are percent-encoded here, every byte but the unreserved ones
//! and `/`, which the URL parser keeps as they are, and decoded when read back. Object-store
//! URLs (`s3://bucket/key`) are kept verbatim by Icechunk and here. Virtual chunk container
//! prefixes stay in vzarr's form: Icechunk's readers percent-decode a location before they
//! match it against the prefixes.

/// The Icechunk form of a vzarr source URL (or URL prefix).
pub(crate) fn encode_file_url(url: &str) -> String {
    let Some(path) = url.strip_prefix("file://") else {
        return url.to_string();
    };
    let mut out = String::with_capacity(url.len() + 8);
    out.push_str("file://");
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The vzarr form of an Icechunk location; `None` when a `file://` path does not decode to
/// UTF-8.
pub(crate) fn decode_file_url(url: &str) -> Option<String> {
    let Some(path) = url.strip_prefix("file://") else {
        return Some(url.to_string());
    };
    let bytes = vzarr_source::percent_decode(path);
    Some(format!("file://{}", String::from_utf8(bytes).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for u in [
            "file:///data/a b.nc",
            "file:///data/100%25/x#y?.nc",
            "file:///d/ü.nc",
            "s3://bucket/a b/c.nc",
        ] {
            let e = encode_file_url(u);
            assert!(!e.contains(' ') || u.starts_with("s3://"), "{e}");
            assert_eq!(decode_file_url(&e).as_deref(), Some(u));
        }
        assert_eq!(encode_file_url("file:///a b/"), "file:///a%20b/");
    }
}
