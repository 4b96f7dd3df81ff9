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

/// Parses a byte size with an optional unit (B, KB, KiB, MB, MiB, GB, GiB), e.g. `4MiB`;
/// at least 1 byte. The one parser of sizes given by users (CLI flags, Python keywords).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 4MiB or 1000000"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    let v = n.checked_mul(mult).ok_or("size too large")?;
    if v == 0 {
        return Err("size must be at least 1 byte".into());
    }
    Ok(v)
}
