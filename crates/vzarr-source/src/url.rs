//! Source URLs: parsing, normalisation, and the allowed-prefix policy.
//!
//! URLs may come from elsewhere (a manifest, a listing): every URL is parsed here before
//! anything is fetched, and refused if it is relative, has `.`/`..` segments (also
//! percent-encoded), encoded slashes, credentials or control characters. Readers check parsed
//! URLs against their allowed prefixes ([`PrefixPolicy`]).

use std::fmt;

use crate::SourceError;
use crate::error::{Refusal, UrlError};

/// The storage a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// Local file system (`file:///abs/path` or `/abs/path`).
    File,
    /// Amazon S3 or an S3-compatible server (`s3://bucket/key`).
    S3,
    /// Google Cloud Storage (`gs://bucket/key`).
    Gcs,
    /// Azure Blob Storage (`az://container/key`).
    Azure,
    /// Plain HTTP (`http://host/path`).
    Http,
    /// HTTPS (`https://host/path`).
    Https,
}

impl Scheme {
    /// The scheme of a URL scheme name (lower case): `file`, `s3`/`s3a`, `gs`/`gcs`,
    /// `az`/`azure`/`abfs`/`abfss`/`adl`, `http`, `https`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "file" => Scheme::File,
            "s3" | "s3a" => Scheme::S3,
            "gs" | "gcs" => Scheme::Gcs,
            "az" | "azure" | "abfs" | "abfss" | "adl" => Scheme::Azure,
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return None,
        })
    }

    /// The canonical URL scheme.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::File => "file",
            Scheme::S3 => "s3",
            Scheme::Gcs => "gs",
            Scheme::Azure => "az",
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A parsed, checked source URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Storage kind.
    pub scheme: Scheme,
    /// Bucket, container or `host[:port]`; empty for local files.
    pub authority: String,
    /// Object key or path below the authority, without a leading `/` (for local files: the
    /// absolute path without its leading `/`).
    pub key: String,
}

impl Location {
    /// The canonical URL (`file:///abs`, `s3://bucket/key`, ...).
    pub fn url(&self) -> String {
        format!("{}://{}/{}", self.scheme.as_str(), self.authority, self.key)
    }

    /// The absolute local path of a `file` location.
    pub fn local_path(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(format!("/{}", self.key))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url())
    }
}

/// Decodes `%XX` escapes; invalid escapes are kept as written.
pub fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// The lexical resolution of `.` and `..` in `segments` (for error messages).
fn resolve_dots(segments: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in segments {
        match *s {
            "." | "" => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

/// Checks the segments of a key: no `.`/`..` (also percent-encoded), no encoded `/`, no
/// empty segments (except that local paths collapse them). Returns the checked key.
fn check_key(scheme: Scheme, authority: &str, key: &str) -> Result<String, UrlError> {
    let segments: Vec<&str> = if scheme == Scheme::File {
        key.split('/').filter(|s| !s.is_empty()).collect()
    } else if key.is_empty() {
        Vec::new()
    } else {
        // A trailing slash names a "directory"; other empty segments are refused.
        let body = key.strip_suffix('/').unwrap_or(key);
        let v: Vec<&str> = body.split('/').collect();
        if v.iter().any(|s| s.is_empty()) {
            return Err(UrlError::EmptySegment);
        }
        v
    };
    for s in &segments {
        let decoded = percent_decode(s);
        let dots = |d: &[u8]| d == b"." || d == b"..";
        if dots(s.as_bytes()) || dots(&decoded) {
            let resolved = resolve_dots(
                &segments
                    .iter()
                    .map(|s| match percent_decode(s).as_slice() {
                        b"." => ".",
                        b".." => "..",
                        _ => s,
                    })
                    .collect::<Vec<_>>(),
            );
            return Err(UrlError::DotSegments {
                resolved: format!("{}://{}/{}", scheme.as_str(), authority, resolved),
            });
        }
        if decoded.contains(&b'/') || (decoded.contains(&b'\\') && !s.contains('\\')) {
            return Err(UrlError::EncodedSeparator);
        }
        if decoded.contains(&0) {
            return Err(UrlError::Nul);
        }
    }
    let mut out = segments.join("/");
    if scheme != Scheme::File && key.ends_with('/') && !out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Parses and checks a source URL: absolute local paths, `file://`, `s3://`, `gs://`, `az://`,
/// `http(s)://`.
pub fn parse_url(url: &str) -> Result<Location, UrlError> {
    if url.is_empty() {
        return Err(UrlError::Empty);
    }
    if url.chars().any(|c| c.is_control()) {
        return Err(UrlError::ControlCharacters);
    }
    if let Some(path) = url.strip_prefix('/') {
        let key = check_key(Scheme::File, "", path)?;
        return Ok(Location {
            scheme: Scheme::File,
            authority: String::new(),
            key,
        });
    }
    let Some((scheme_name, rest)) = url.split_once("://") else {
        return Err(UrlError::Relative);
    };
    let scheme = Scheme::from_name(&scheme_name.to_ascii_lowercase())
        .ok_or_else(|| UrlError::UnsupportedScheme(scheme_name.to_string()))?;
    if scheme == Scheme::File {
        let path = if let Some(p) = rest.strip_prefix('/') {
            p
        } else if let Some(p) = rest.strip_prefix("localhost/") {
            p
        } else {
            return Err(UrlError::FileHost);
        };
        let key = check_key(Scheme::File, "", path)?;
        return Ok(Location {
            scheme,
            authority: String::new(),
            key,
        });
    }
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.is_empty() {
        return Err(UrlError::NoAuthority);
    }
    if matches!(scheme, Scheme::Http | Scheme::Https) {
        if authority.contains('@') {
            return Err(UrlError::Credentials);
        }
        if url.contains('?') || url.contains('#') {
            return Err(UrlError::QueryOrFragment);
        }
    }
    let authority = if matches!(scheme, Scheme::Http | Scheme::Https) {
        authority.to_ascii_lowercase()
    } else {
        authority.to_string()
    };
    if authority.contains(['\\', ' ']) {
        return Err(UrlError::BadAuthority);
    }
    let key = check_key(scheme, &authority, key)?;
    Ok(Location {
        scheme,
        authority,
        key,
    })
}

/// One allowed prefix: a local directory, a bucket or a bucket prefix, a URL prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix {
    loc: Location,
}

impl Prefix {
    /// Parses a prefix. Local prefixes given by the user may be relative (made absolute against
    /// the current directory); URL prefixes must be absolute.
    pub fn parse(prefix: &str, allow_relative: bool) -> Result<Self, SourceError> {
        let p = prefix.trim();
        let is_url = p.contains("://");
        let bad = |source| SourceError::BadUrl {
            url: p.to_string(),
            source,
        };
        let text = if !is_url && allow_relative {
            // A local path from the user: made absolute, `.` and `..` resolved lexically.
            crate::absolute(std::path::Path::new(p))?
                .to_str()
                .ok_or_else(|| bad(UrlError::NotUtf8))?
                .to_string()
        } else if !is_url && !p.starts_with('/') {
            return Err(bad(UrlError::Relative));
        } else {
            p.to_string()
        };
        let mut loc = parse_url(&text).map_err(bad)?;
        while loc.key.ends_with('/') {
            loc.key.pop();
        }
        Ok(Prefix { loc })
    }

    /// The prefix of a location: the location itself, as a directory.
    pub fn of(loc: &Location) -> Self {
        let mut loc = loc.clone();
        while loc.key.ends_with('/') {
            loc.key.pop();
        }
        Prefix { loc }
    }

    /// Whether `loc` is this prefix or below it (whole path segments only).
    pub fn matches(&self, loc: &Location) -> bool {
        if self.loc.scheme != loc.scheme || self.loc.authority != loc.authority {
            return false;
        }
        let pk = &self.loc.key;
        pk.is_empty()
            || loc.key == *pk
            || (loc.key.len() > pk.len()
                && loc.key.starts_with(pk.as_str())
                && loc.key.as_bytes()[pk.len()] == b'/')
    }

    /// The prefix as a URL.
    pub fn url(&self) -> String {
        self.loc.url()
    }

    /// The prefix as a location.
    pub fn location(&self) -> &Location {
        &self.loc
    }

    /// The local directory of a `file` prefix.
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        (self.loc.scheme == Scheme::File).then(|| self.loc.local_path())
    }
}

/// The prefixes a reader may fetch from: those the user allows, narrowed by those the
/// references record. Recorded prefixes never widen what the user allows.
#[derive(Clone, Debug, Default)]
pub struct PrefixPolicy {
    allowed: Vec<Prefix>,
    recorded: Vec<Prefix>,
}

impl PrefixPolicy {
    /// A policy from prefixes the references record (absolute URLs; they narrow) and
    /// prefixes the user allows (relative local paths allowed).
    pub fn new(recorded: &[String], allowed: &[String]) -> Result<Self, SourceError> {
        let recorded = recorded
            .iter()
            .map(|p| Prefix::parse(p, false))
            .collect::<Result<_, _>>()?;
        let allowed = allowed
            .iter()
            .map(|p| Prefix::parse(p, true))
            .collect::<Result<_, _>>()?;
        Ok(PrefixPolicy { allowed, recorded })
    }

    /// A policy allowing these prefixes, with nothing recorded.
    pub fn from_prefixes(allowed: Vec<Prefix>) -> Self {
        PrefixPolicy {
            allowed,
            recorded: Vec::new(),
        }
    }

    /// The prefixes the user allows.
    pub fn allowed(&self) -> &[Prefix] {
        &self.allowed
    }

    /// The prefixes the references record.
    pub fn recorded(&self) -> &[Prefix] {
        &self.recorded
    }

    /// The refusal of `url` for `why`.
    pub(crate) fn refuse(&self, url: &str, why: Refusal, resolved: Option<String>) -> SourceError {
        SourceError::NotAllowed(Box::new(crate::error::NotAllowed {
            url: url.to_string(),
            why,
            resolved,
            allowed: self.allowed.iter().map(Prefix::url).collect(),
            recorded: self.recorded.iter().map(Prefix::url).collect(),
        }))
    }

    /// Why `loc` is refused, if it is (lexically: see [`crate::AllowPrefixes`] for the check
    /// that also resolves symbolic links).
    pub fn refusal(&self, loc: &Location) -> Option<Refusal> {
        if self.allowed.is_empty() {
            return Some(Refusal::NoneAllowed);
        }
        if !self.allowed.iter().any(|p| p.matches(loc)) {
            return Some(Refusal::NotAllowed);
        }
        if !self.recorded.is_empty() && !self.recorded.iter().any(|p| p.matches(loc)) {
            return Some(Refusal::NotRecorded);
        }
        None
    }

    /// Parses `url` and checks it against the prefixes lexically.
    pub fn check(&self, url: &str) -> Result<Location, SourceError> {
        let loc = parse_url(url).map_err(|source| SourceError::BadUrl {
            url: url.to_string(),
            source,
        })?;
        match self.refusal(&loc) {
            None => Ok(loc),
            Some(why) => Err(self.refuse(url, why, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalises() {
        let l = parse_url("file:///data/a b.nc").unwrap();
        assert_eq!((l.scheme, l.key.as_str()), (Scheme::File, "data/a b.nc"));
        assert_eq!(l.url(), "file:///data/a b.nc");
        assert_eq!(parse_url("/data//x.nc").unwrap().key, "data/x.nc");
        let s = parse_url("s3://bucket/dir/x.nc").unwrap();
        assert_eq!(
            (s.scheme, s.authority.as_str(), s.key.as_str()),
            (Scheme::S3, "bucket", "dir/x.nc")
        );
        let h = parse_url("HTTPS://Example.COM:8080/x").unwrap();
        assert_eq!(h.url(), "https://example.com:8080/x");
        assert_eq!(parse_url("gs://b/k").unwrap().scheme, Scheme::Gcs);
        assert_eq!(parse_url("az://c/k").unwrap().scheme, Scheme::Azure);
    }

    #[test]
    fn refuses_dangerous_urls() {
        for (url, want) in [
            (
                "file:///data/../etc/passwd",
                "resolves to file:///etc/passwd",
            ),
            ("/data/./x", "`.` or `..`"),
            (
                "file:///data/%2e%2e/etc/passwd",
                "resolves to file:///etc/passwd",
            ),
            ("file:///data/%2E%2e/x", "`..`"),
            ("file:///data/a%2fb", "percent-encoded"),
            (
                "s3://bucket/a/../../other/x",
                "resolves to s3://bucket/other/x",
            ),
            ("relative/path.nc", "relative"),
            ("file://host/x", "host"),
            ("ftp://x/y", "scheme"),
            ("https://user:pw@host/x", "credentials"),
            ("https://host/x?sig=1", "query"),
            ("s3://bucket/a//b", "empty path segment"),
            ("s3:///key", "bucket"),
            ("file:///a\u{0}b", "control"),
            ("", "empty"),
        ] {
            let e = parse_url(url).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    #[test]
    fn prefix_matching_is_by_segment() {
        let p = Prefix::parse("s3://bucket/data", false).unwrap();
        assert!(p.matches(&parse_url("s3://bucket/data/x.nc").unwrap()));
        assert!(p.matches(&parse_url("s3://bucket/data").unwrap()));
        assert!(!p.matches(&parse_url("s3://bucket/database/x.nc").unwrap()));
        assert!(!p.matches(&parse_url("s3://other/data/x.nc").unwrap()));
        assert!(!p.matches(&parse_url("gs://bucket/data/x.nc").unwrap()));
        let whole = Prefix::parse("s3://bucket", false).unwrap();
        assert!(whole.matches(&parse_url("s3://bucket/any/x").unwrap()));
        let local = Prefix::parse("file:///data/archive/", false).unwrap();
        assert!(local.matches(&parse_url("/data/archive/x.nc").unwrap()));
        assert!(!local.matches(&parse_url("/etc/passwd").unwrap()));
        assert!(Prefix::parse("relative/dir", false).is_err());
        let rel = Prefix::parse("relative/dir", true).unwrap();
        assert!(rel.url().starts_with("file:///"));
        let dots = Prefix::parse("/data/x/../archive", true).unwrap();
        assert_eq!(dots.url(), "file:///data/archive");
        assert!(Prefix::parse("/data/x/../archive", false).is_err());
        assert!(Prefix::parse("file:///data/../etc", false).is_err());
    }

    #[test]
    fn policy() {
        let allowed = ["file:///data/".to_string(), "s3://bucket/x/".to_string()];
        let p = PrefixPolicy::new(&[], &allowed).unwrap();
        assert!(p.check("file:///data/a.nc").is_ok());
        assert!(p.check("s3://bucket/x/a.nc").is_ok());
        let e = p.check("s3://bucket2/x/a.nc").unwrap_err().to_string();
        assert!(e.contains("not under an allowed prefix"), "{e}");
        let e = p.check("/etc/passwd").unwrap_err();
        assert!(matches!(e, SourceError::NotAllowed(_)), "{e}");
        let none = PrefixPolicy::new(&["file:///data/".into()], &[]).unwrap();
        let e = none.check("file:///data/a.nc").unwrap_err().to_string();
        assert!(e.contains("no allowed prefixes"), "{e}");
        // Recorded prefixes narrow what the user allows, never widen it.
        let p = PrefixPolicy::new(
            &["file:///data/archive/".into(), "file:///".into()],
            &allowed,
        )
        .unwrap();
        assert!(p.check("file:///data/archive/a.nc").is_ok());
        let e = p.check("file:///etc/passwd").unwrap_err().to_string();
        assert!(e.contains("not under an allowed prefix"), "{e}");
        let p = PrefixPolicy::new(&["file:///data/archive/".into()], &allowed).unwrap();
        let e = p.check("file:///data/other.nc").unwrap_err().to_string();
        assert!(
            e.contains("outside the prefixes the references record"),
            "{e}"
        );
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b"), b"a b");
        assert_eq!(percent_decode("%zz%2"), b"%zz%2");
        assert_eq!(percent_decode("%2e%2E"), b"..");
    }
}
