//! What the keys and references of kerchunk references name: node paths (`a/b`), chunk keys
//! (`<array>/c/<i>/<j>...`) split into their array and parsed indices, and chunk URLs with
//! `{{name}}` templates expanded.

use std::collections::BTreeMap;

/// Splits a chunk key into its array path and index part (`""` for a 0-d array), when some
/// array (per `is_array`) owns it: `tas/c/0/1` -> `("tas", "0/1")`, `g/s/c` -> `("g/s", "")`.
pub fn split_chunk_key(key: &str, is_array: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
    let b = key.as_bytes();
    for (p, _) in key.match_indices('c') {
        let starts = p == 0 || b[p - 1] == b'/';
        let ends = p + 1 == b.len() || b[p + 1] == b'/';
        if !(starts && ends) {
            continue;
        }
        let prefix = if p == 0 { "" } else { &key[..p - 1] };
        if is_array(prefix) {
            let rest = &key[p + 1..];
            return Some((prefix, rest.strip_prefix('/').unwrap_or(rest)));
        }
    }
    None
}

/// Parses the index part of a chunk key (`"0/12/3"`); strict decimal, no signs or leading
/// zeros.
pub fn parse_chunk_indices(rest: &str) -> Result<Vec<u64>, String> {
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    rest.split('/')
        .map(|s| {
            if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                return Err(format!("chunk index {s:?} is not a non-negative integer"));
            }
            if s.len() > 1 && s.starts_with('0') {
                return Err(format!("chunk index {s:?} has leading zeros"));
            }
            s.parse::<u64>()
                .map_err(|_| format!("chunk index {s:?} is too large"))
        })
        .collect()
}

/// Checks a node path (`""`, `a`, `a/b`): no leading or trailing `/`, no empty, `.` or `..`
/// segments.
pub(super) fn check_node_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Ok(());
    }
    for s in path.split('/') {
        if s.is_empty() || s == "." || s == ".." {
            return Err(format!("invalid node path {path:?}"));
        }
    }
    Ok(())
}

/// Expands `{{name}}` templates in a URL.
pub(super) fn expand_templates(
    url: &str,
    templates: &BTreeMap<String, String>,
) -> Result<String, String> {
    if !url.contains("{{") {
        return Ok(url.to_string());
    }
    let mut out = url.to_string();
    for (name, value) in templates {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    if out.contains("{{") {
        return Err(format!("URL {url:?} uses an undefined template"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_key_splitting() {
        let arrays = ["c", "a/c", "x"];
        let is = |p: &str| arrays.contains(&p);
        assert_eq!(split_chunk_key("x/c/0/1", is), Some(("x", "0/1")));
        assert_eq!(split_chunk_key("c/c/3", is), Some(("c", "3")));
        assert_eq!(split_chunk_key("a/c/c", is), Some(("a/c", "")));
        assert_eq!(split_chunk_key("x/cc/0", is), None);
        assert_eq!(split_chunk_key("y/c/0", is), None);
        assert_eq!(parse_chunk_indices("").unwrap(), Vec::<u64>::new());
        assert!(parse_chunk_indices("1//2").is_err());
        assert!(parse_chunk_indices("+1").is_err());
    }
}
