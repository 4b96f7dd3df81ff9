//! Errors of byte access. Every variant names the source (URL or path) it is about; causes
//! from the operating system and `object_store` are kept as sources. Why a URL is refused
//! ([`UrlError`], [`Refusal`]) is here too, below the URL rules that raise it (`url.rs`).

use std::io;

/// Why a source could not be opened, listed or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A local file could not be opened or read.
    #[error("{url}: {source}")]
    Io {
        /// Source URL (or path).
        url: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A read past the end of the source.
    #[error(
        "{url}: read of {len} bytes at offset {offset} goes past the end of the file ({size} bytes)"
    )]
    OutOfBounds {
        /// Source URL.
        url: String,
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// Source size.
        size: u64,
    },
    /// A source returned fewer bytes than asked for.
    #[error(
        "{url}: short read: {len} bytes at offset {offset} returned {got} (the source changed or is shorter than recorded)"
    )]
    ShortRead {
        /// Source URL.
        url: String,
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// Bytes returned.
        got: u64,
    },
    /// A local path that cannot be made into a URL (not UTF-8, no absolute form).
    #[error("{path}: not a valid path")]
    BadPath {
        /// The path as given.
        path: String,
    },
    /// A URL that cannot be used (relative, `..` segments, no bucket, unsupported scheme, ...).
    #[error("{url}: {source}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        #[source]
        source: UrlError,
    },
    /// There is no object (or file) at this URL.
    #[error("{url}: not found")]
    NotFound {
        /// The URL.
        url: String,
    },
    /// The object changed (its ETag no longer matches) since it was opened, or since the
    /// record it was opened from was made (its scan).
    #[error(
        "{url}: the object changed since it was opened or scanned (its ETag no longer matches)"
    )]
    Changed {
        /// The URL.
        url: String,
    },
    /// The client of an object store could not be set up (credentials, endpoint, ...).
    #[error("{url}: cannot set up the {scheme} client: {source}")]
    Client {
        /// The URL that needed the client.
        url: String,
        /// The URL scheme (`s3`, `gs`, ...).
        scheme: &'static str,
        /// The builder's error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// An object-store request failed for a reason the environment sets right (plain HTTP
    /// refused, no credentials found): the message says what to set.
    #[error("{url}: {problem}")]
    Setup {
        /// The URL.
        url: String,
        /// What is wrong, and what to set.
        problem: SetupProblem,
        /// The object store's error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// An object-store request failed.
    #[error("{url}: {source}")]
    Remote {
        /// The URL.
        url: String,
        /// The object store's error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// A local path whose links could not be resolved to check it against the allowed
    /// prefixes (not there, a loop, no permission); nothing was read.
    #[error("{url}: cannot resolve its links to check it against the allowed prefixes")]
    Unresolved {
        /// The URL.
        url: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The local file opened is not the one checked against the allowed prefixes: a link
    /// changed between the check and the open; nothing was read.
    #[error(
        "{url}: the file opened is not the one checked against the allowed prefixes \
         ({checked}): a link changed in between; nothing was read"
    )]
    LinkChanged {
        /// The URL.
        url: String,
        /// The path checked, its links resolved (`file://...`).
        checked: String,
    },
    /// A URL outside the prefixes a reader may fetch from; nothing was read.
    #[error(transparent)]
    NotAllowed(Box<NotAllowed>),
    /// A source differs from what was recorded when the references were built.
    #[error("{url}: source changed since the references were built: {}", .changes.join(", "))]
    Stale {
        /// The source URL.
        url: String,
        /// What changed, in words (size, modification time, ETag, or that it is gone).
        changes: Vec<String>,
    },
    /// The I/O runtime could not be started or a task of it failed.
    #[error("the I/O runtime failed: {source}")]
    Runtime {
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// What is wrong with the environment of an object-store client, and what to set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetupProblem {
    /// The endpoint is plain HTTP, which the client refuses unless told otherwise.
    #[error(
        "{} refused{}",
        .endpoint.as_ref().map_or_else(|| "plain HTTP is".to_string(), |e| format!("the endpoint {e} is plain HTTP, which is")),
        .allow.map(|a| format!(" unless {a}=true is set")).unwrap_or_default()
    )]
    HttpNotAllowed {
        /// The endpoint the environment names, if it names one.
        endpoint: Option<String>,
        /// The environment variable that allows plain HTTP, where there is one.
        allow: Option<&'static str>,
    },
    /// No credentials in the environment: the client asked a cloud machine's metadata
    /// service for them, and there is none.
    #[error(
        "no {cloud} credentials found (none in the environment, and no cloud machine's metadata \
         service to ask): {what}"
    )]
    NoCredentials {
        /// The cloud (`S3`, `Google Cloud Storage`, `Azure`).
        cloud: &'static str,
        /// What to set.
        what: &'static str,
    },
}

impl SetupProblem {
    /// The problem `e` (from a request for a `scheme` URL) is a symptom of, if one: found in
    /// the words of the error and its causes, `object_store` giving no types for these.
    fn of(scheme: &str, e: &object_store::Error) -> Option<SetupProblem> {
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            text.push_str(&c.to_string());
            cause = c.source();
        }
        let env = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok());
        if text.contains("URL scheme is not allowed") {
            let (endpoint, allow) = match scheme {
                "s3" => (
                    env(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
                    Some("AWS_ALLOW_HTTP"),
                ),
                "az" => (
                    env(&["AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"]),
                    Some("AZURE_ALLOW_HTTP"),
                ),
                _ => (None, None),
            };
            return Some(SetupProblem::HttpNotAllowed { endpoint, allow });
        }
        // The metadata services the clients ask when the environment names no credentials:
        // the clouds' own, or the one AWS_METADATA_ENDPOINT names.
        let configured = env(&["AWS_METADATA_ENDPOINT"]);
        let metadata_service = [
            "169.254.169.254",
            "169.254.170.2",
            "metadata.google.internal",
        ];
        if metadata_service
            .iter()
            .copied()
            .chain(configured.as_deref())
            .any(|m| text.contains(m.trim_end_matches('/')))
        {
            return Some(match scheme {
                "gs" => SetupProblem::NoCredentials {
                    cloud: "Google Cloud Storage",
                    what: "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a \
                           service account key file, or GOOGLE_SKIP_SIGNATURE=true for a public \
                           bucket",
                },
                "az" => SetupProblem::NoCredentials {
                    cloud: "Azure",
                    what: "set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN (or \
                           AZURE_CLIENT_ID, AZURE_CLIENT_SECRET and AZURE_TENANT_ID), or \
                           AZURE_SKIP_SIGNATURE=true for a public container",
                },
                _ => SetupProblem::NoCredentials {
                    cloud: "S3",
                    what: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and \
                           AWS_SESSION_TOKEN for temporary ones), or AWS_SKIP_SIGNATURE=true for \
                           a public bucket",
                },
            });
        }
        None
    }
}

/// Why a URL was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// An empty string.
    #[error("empty URL")]
    Empty,
    /// Control characters anywhere in the URL.
    #[error("the URL has control characters")]
    ControlCharacters,
    /// Neither an absolute path nor `scheme://...`.
    #[error("not an absolute URL or path (relative paths are not accepted in manifests)")]
    Relative,
    /// A scheme that is not one of [`crate::Scheme`]'s (as written).
    #[error("unsupported URL scheme {0:?} (supported: file, s3, gs, az, http, https)")]
    UnsupportedScheme(String),
    /// `file://host/...`.
    #[error("file URL with a host (expected file:///absolute/path)")]
    FileHost,
    /// `s3:///key` and the like.
    #[error("URL without a bucket or host")]
    NoAuthority,
    /// A bucket or host with spaces or backslashes.
    #[error("invalid bucket or host")]
    BadAuthority,
    /// `https://user:password@host/...`.
    #[error("URLs with credentials are not accepted")]
    Credentials,
    /// An HTTP URL with `?` or `#`.
    #[error("HTTP URLs with a query or fragment are not accepted")]
    QueryOrFragment,
    /// `.` or `..` segments, also percent-encoded.
    #[error("the path has `.` or `..` segments (it resolves to {resolved})")]
    DotSegments {
        /// The URL with the dots resolved lexically.
        resolved: String,
    },
    /// A percent-encoded `/` or `\\`.
    #[error("the path has a percent-encoded `/` or `\\`")]
    EncodedSeparator,
    /// A NUL byte, also percent-encoded.
    #[error("the path has a NUL byte")]
    Nul,
    /// `a//b` in an object key.
    #[error("empty path segment (`//`)")]
    EmptySegment,
    /// A local path that is not UTF-8.
    #[error("the path is not UTF-8")]
    NotUtf8,
}

/// Why a URL is refused by a [`crate::PrefixPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The user allows no prefix at all.
    NoneAllowed,
    /// Not under any prefix the user allows.
    NotAllowed,
    /// Under a prefix the user allows, but outside every prefix the references record.
    NotRecorded,
}

/// A URL refused by a [`crate::PrefixPolicy`], and what the policy allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to read {url}: {}", self.reason())]
#[non_exhaustive]
pub struct NotAllowed {
    /// The refused URL.
    pub url: String,
    /// Why it is refused.
    pub why: Refusal,
    /// Where the URL leads once symbolic links are resolved, if that differs.
    pub resolved: Option<String>,
    /// The prefixes the user allows (empty: none).
    pub allowed: Vec<String>,
    /// The prefixes the references record (they can only narrow what is allowed).
    pub recorded: Vec<String>,
}

impl NotAllowed {
    fn reason(&self) -> String {
        let via = self
            .resolved
            .as_ref()
            .map_or_else(String::new, |r| format!("it resolves to {r}, "));
        match self.why {
            Refusal::NoneAllowed => format!("{via}no allowed prefixes"),
            Refusal::NotAllowed => format!(
                "{via}not under an allowed prefix (allowed: {})",
                self.allowed.join(", ")
            ),
            Refusal::NotRecorded => format!(
                "{via}outside the prefixes the references record (recorded: {})",
                self.recorded.join(", ")
            ),
        }
    }
}

impl SourceError {
    /// Whether the source does not exist ([`SourceError::NotFound`], or a local file that is
    /// not there).
    pub fn is_not_found(&self) -> bool {
        match self {
            SourceError::NotFound { .. } => true,
            SourceError::Io { source, .. } | SourceError::Unresolved { source, .. } => {
                source.kind() == io::ErrorKind::NotFound
            }
            SourceError::Remote { source, .. } => {
                matches!(**source, object_store::Error::NotFound { .. })
            }
            _ => false,
        }
    }

    /// The URL (or path) this error is about, where it names one.
    pub fn url(&self) -> Option<&str> {
        match self {
            SourceError::Io { url, .. }
            | SourceError::OutOfBounds { url, .. }
            | SourceError::ShortRead { url, .. }
            | SourceError::BadUrl { url, .. }
            | SourceError::NotFound { url }
            | SourceError::Changed { url }
            | SourceError::Client { url, .. }
            | SourceError::Setup { url, .. }
            | SourceError::Unresolved { url, .. }
            | SourceError::LinkChanged { url, .. }
            | SourceError::Remote { url, .. }
            | SourceError::Stale { url, .. } => Some(url),
            SourceError::BadPath { path } => Some(path),
            SourceError::NotAllowed(n) => Some(&n.url),
            SourceError::Runtime { .. } => None,
        }
    }

    /// An `object_store` error about `url`, with a missing object as
    /// [`SourceError::NotFound`], a failed `If-Match` as [`SourceError::Changed`], and plain
    /// HTTP refused or no credentials found as [`SourceError::Setup`].
    pub(crate) fn remote(url: &str, e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { .. } => SourceError::NotFound {
                url: url.to_string(),
            },
            object_store::Error::Precondition { .. } => SourceError::Changed {
                url: url.to_string(),
            },
            source => {
                let scheme = url.split_once("://").map_or("", |(s, _)| s);
                match SetupProblem::of(scheme, &source) {
                    Some(problem) => SourceError::Setup {
                        url: url.to_string(),
                        problem,
                        source: Box::new(source),
                    },
                    None => SourceError::Remote {
                        url: url.to_string(),
                        source: Box::new(source),
                    },
                }
            }
        }
    }

    /// An operating-system error about a local source (a missing file keeps the system's
    /// words; [`SourceError::is_not_found`] recognises it).
    pub(crate) fn io(url: &str, source: io::Error) -> Self {
        SourceError::Io {
            url: url.to_string(),
            source,
        }
    }
}

/// The length of a read of `len` bytes at `offset` of a source of `size` bytes, or the
/// out-of-bounds error naming `url` when the range passes the end (or does not fit memory).
pub fn checked_len(url: &str, offset: u64, len: u64, size: u64) -> Result<usize, SourceError> {
    let oob = || SourceError::OutOfBounds {
        url: url.to_string(),
        offset,
        len,
        size,
    };
    match offset.checked_add(len) {
        Some(end) if end <= size => usize::try_from(len).map_err(|_| oob()),
        _ => Err(oob()),
    }
}

/// The length of the read `range` of a source of `size` bytes, or the out-of-bounds error
/// naming `url` when it is backwards or passes the end.
pub fn range_len(url: &str, range: &std::ops::Range<u64>, size: u64) -> Result<usize, SourceError> {
    if range.end < range.start {
        return Err(SourceError::OutOfBounds {
            url: url.to_string(),
            offset: range.start,
            len: 0,
            size,
        });
    }
    checked_len(url, range.start, range.end - range.start, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(words: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: format!("Error performing GET: {words}").into(),
        }
    }

    #[test]
    fn setup_problems_say_what_to_set() {
        let e = SourceError::remote(
            "s3://b/k",
            generic("HTTP error: builder error: URL scheme is not allowed"),
        );
        let SourceError::Setup { problem, .. } = &e else {
            panic!("{e}")
        };
        assert!(
            matches!(
                problem,
                SetupProblem::HttpNotAllowed {
                    allow: Some("AWS_ALLOW_HTTP"),
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("unless AWS_ALLOW_HTTP=true is set"),
            "{e}"
        );
        let e = SourceError::remote(
            "gs://b/k",
            generic("Error performing PUT http://169.254.169.254/latest/api/token"),
        );
        assert!(
            e.to_string()
                .contains("no Google Cloud Storage credentials found")
                && e.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{e}"
        );
        let e = SourceError::remote("az://c/k", generic("169.254.169.254/metadata/identity"));
        assert!(e.to_string().contains("AZURE_STORAGE_ACCOUNT_KEY"), "{e}");
        // Anything else stays the object store's error.
        let e = SourceError::remote("s3://b/k", generic("503 Slow Down"));
        assert!(matches!(e, SourceError::Remote { .. }), "{e}");
        let e = SourceError::remote(
            "s3://b/k",
            object_store::Error::NotFound {
                path: "k".into(),
                source: "gone".into(),
            },
        );
        assert!(matches!(e, SourceError::NotFound { .. }), "{e}");
    }
}
