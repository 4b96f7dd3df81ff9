//! Options of a build.

use vzarr_plan::Concat;
use vzarr_scan::ScanOptions;
use vzarr_scan::cache::ScanCache;

/// What to do with a source that cannot be used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnError {
    /// Stop; write nothing.
    #[default]
    Fail,
    /// Leave it out, report it, build the rest.
    Skip,
}

/// Options of a build (the defaults scan with every core, stop at the first bad source and
/// combine nothing).
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Options of each scan.
    pub scan: ScanOptions,
    /// Scans in flight at once (0: every core, at least 32 for object storage; see
    /// [`vzarr_scan::batch::REMOTE_JOBS`]).
    pub jobs: usize,
    /// Bad sources: stop or skip.
    pub on_error: OnError,
    /// Scan cache, if any.
    pub cache: Option<ScanCache>,
    /// Fail when a variable or attribute has to be left out.
    pub strict: bool,
    /// How to combine several sources.
    pub concat: Option<Concat>,
    /// Accept gaps along the concatenation coordinate.
    pub allow_gaps: bool,
    /// Units to re-encode CF time into.
    pub time_units: Option<String>,
    /// A source whose scan runs longer is left out as a failure (`None`: no limit).
    pub time_limit: Option<std::time::Duration>,
}
