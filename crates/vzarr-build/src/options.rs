//! Options of a build.

use vzarr_core::{SmallChunkPolicy, SmallChunks};
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
    /// Scans in flight at once (0: every core, at least 128 for object storage; see
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
    /// Concatenating along an existing dimension: the variable that orders the files (see
    /// [`vzarr_plan::PlanOptions::order_by`]); `None`: the dimension's coordinate.
    pub order_by: Option<String>,
    /// A source whose scan runs longer is left out as a failure (`None`: no limit).
    pub time_limit: Option<std::time::Duration>,
    /// What to do with small chunks (`None`: the default policy, or on an append the one the
    /// output records).
    pub small_chunks: Option<SmallChunkPolicy>,
    /// Where the sources were found (directories, prefixes, catalogs, with their patterns),
    /// recorded in the output's provenance so that a sync can list them again
    /// ([`vzarr_scan::inputs::recorded_inputs`]); an append adds those its output records.
    pub inputs: Option<vzarr_core::Inputs>,
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

impl std::str::FromStr for OnError {
    type Err = crate::BuildError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fail" => Ok(OnError::Fail),
            "skip" => Ok(OnError::Skip),
            other => Err(crate::BuildError::Options(format!(
                "error policy {other:?}: fail or skip"
            ))),
        }
    }
}

/// A build's options as a user gives them (command-line flags, Python keyword arguments),
/// checked and turned into [`BuildOptions`] by [`Settings::options`]: the one place where
/// they are validated, so every front end accepts and refuses the same things.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Concatenate along this existing dimension.
    pub concat_dim: Option<String>,
    /// Stack along this new leading dimension.
    pub new_dim: Option<String>,
    /// The new dimension's coordinate values, one per source (default: the file names).
    pub new_dim_values: Option<Vec<String>>,
    /// Accept gaps along the concatenation coordinate.
    pub allow_gaps: bool,
    /// Units to re-encode CF time into.
    pub time_units: Option<String>,
    /// Order the files concatenated along an existing dimension by this variable.
    pub order_by: Option<String>,
    /// Scans in flight, and threads that plan and write (0: every core).
    pub jobs: usize,
    /// Bad sources: stop or skip.
    pub on_error: OnError,
    /// Directory of the scan cache.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Fail when a variable or attribute has to be left out.
    pub strict: bool,
    /// Seconds a source's scan may take (0: no limit).
    pub file_timeout_secs: u64,
    /// Options of each scan.
    pub scan: ScanOptions,
    /// What to do with small chunks (default: merge, then inline).
    pub small_chunks: Option<SmallChunks>,
    /// Size merged and inline chunks aim at.
    pub chunk_target: Option<u64>,
    /// Most decoded bytes one array may be inlined with.
    pub inline_max: Option<u64>,
    /// Most decoded bytes a build inlines in all.
    pub inline_total: Option<u64>,
}

/// Seconds a source's scan may take unless a user says otherwise.
pub const DEFAULT_FILE_TIMEOUT_SECS: u64 = 600;

impl Settings {
    /// Settings with the defaults users see (a scan may take [`DEFAULT_FILE_TIMEOUT_SECS`]).
    pub fn new() -> Self {
        Settings {
            file_timeout_secs: DEFAULT_FILE_TIMEOUT_SECS,
            ..Default::default()
        }
    }

    /// How to combine several sources, if the settings say; refuses an existing and a new
    /// dimension together, and new-dimension values without a new dimension.
    pub fn concat(&self) -> Result<Option<Concat>, crate::BuildError> {
        let bad = |m: &str| Err(crate::BuildError::Options(m.to_string()));
        match (&self.concat_dim, &self.new_dim) {
            (Some(_), Some(_)) => bad(
                "concatenating along an existing dimension and stacking along a new one \
                 exclude each other",
            ),
            (_, None) if self.new_dim_values.is_some() => {
                bad("values of a new dimension given without a new dimension")
            }
            (Some(dim), None) => Ok(Some(Concat::Existing(dim.clone()))),
            (None, Some(dim)) => Ok(Some(Concat::New {
                dim: dim.clone(),
                labels: self.new_dim_values.clone(),
            })),
            (None, None) => Ok(None),
        }
    }

    /// The small-chunk policy these settings ask for: `None` when they say nothing of it (the
    /// default, or what an output appended to records); sizes without merging or inlining
    /// are refused. Contiguous data split into chunks of a given size caps merged chunks at
    /// that size (unless the chunk target is given): merging must not undo the split asked for.
    pub fn small_chunk_policy(&self) -> Result<Option<SmallChunkPolicy>, crate::BuildError> {
        // A split's cap, where it is below the default and chunks are merged at all.
        let cap = self
            .scan
            .split_contiguous_bytes
            .filter(|&s| s < vzarr_core::small::DEFAULT_TARGET_CHUNK_BYTES)
            .filter(|_| self.small_chunks != Some(SmallChunks::Keep));
        let target = self.chunk_target.or(cap);
        let sized = [target, self.inline_max, self.inline_total];
        if self.small_chunks.is_none() && sized.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut p = SmallChunkPolicy::default();
        if let Some(m) = self.small_chunks {
            p = p.with_mode(m);
        }
        let bad = |m: &str| Err(crate::BuildError::Options(m.to_string()));
        match p.mode {
            SmallChunks::Keep if sized.iter().any(Option::is_some) => {
                return bad("chunk sizes given, but small chunks are kept as they are");
            }
            SmallChunks::Merge if self.inline_max.is_some() || self.inline_total.is_some() => {
                return bad("inline limits given, but small chunks are only merged");
            }
            _ => {}
        }
        if let Some(v) = target {
            p = p.with_target_chunk_bytes(v);
        }
        if let Some(v) = self.inline_max {
            p = p.with_inline_array_bytes(v);
        }
        if let Some(v) = self.inline_total {
            p = p.with_inline_total_bytes(v);
        }
        Ok(Some(p))
    }

    /// The build options these settings ask for (opening the scan cache, if any).
    pub fn options(&self) -> Result<BuildOptions, crate::BuildError> {
        let concat = self.concat()?;
        if self.time_units.is_some() && concat.is_none() {
            return Err(crate::BuildError::Options(
                "time units given, but the sources are not combined along a dimension".into(),
            ));
        }
        if self.order_by.is_some() && self.concat_dim.is_none() {
            return Err(crate::BuildError::Options(
                "a variable to order the files by given, but no existing dimension to \
                 concatenate them along"
                    .into(),
            ));
        }
        for (what, name) in [
            ("dimension", &self.concat_dim),
            ("new dimension", &self.new_dim),
            ("time units", &self.time_units),
            ("variable to order by", &self.order_by),
        ] {
            if name.as_deref().is_some_and(|n| n.trim().is_empty()) {
                return Err(crate::BuildError::Options(format!("an empty {what}")));
            }
        }
        let small_chunks = self.small_chunk_policy()?;
        let cache = match &self.cache_dir {
            Some(dir) => Some(ScanCache::open(dir)?),
            None => None,
        };
        Ok(BuildOptions {
            scan: self.scan.clone(),
            jobs: self.jobs,
            on_error: self.on_error,
            cache,
            strict: self.strict,
            concat,
            allow_gaps: self.allow_gaps,
            time_units: self.time_units.clone(),
            order_by: self.order_by.clone(),
            time_limit: (self.file_timeout_secs > 0)
                .then(|| std::time::Duration::from_secs(self.file_timeout_secs)),
            small_chunks,
            inputs: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_in_one_place() {
        let s = Settings {
            concat_dim: Some("time".into()),
            new_dim: Some("member".into()),
            ..Settings::new()
        };
        assert!(
            s.options()
                .unwrap_err()
                .to_string()
                .contains("exclude each other")
        );
        let s = Settings {
            new_dim_values: Some(vec!["a".into()]),
            ..Settings::new()
        };
        assert!(
            s.options()
                .unwrap_err()
                .to_string()
                .contains("without a new dimension")
        );
        let s = Settings {
            time_units: Some("days since 2000-01-01".into()),
            ..Settings::new()
        };
        assert!(
            s.options()
                .unwrap_err()
                .to_string()
                .contains("not combined")
        );
        for s in [
            Settings {
                order_by: Some("time_centered".into()),
                ..Settings::new()
            },
            Settings {
                new_dim: Some("member".into()),
                order_by: Some("time_centered".into()),
                ..Settings::new()
            },
        ] {
            let e = s.options().unwrap_err().to_string();
            assert!(e.contains("no existing dimension to concatenate"), "{e}");
        }
        let s = Settings {
            concat_dim: Some("time".into()),
            order_by: Some("".into()),
            ..Settings::new()
        };
        assert!(
            s.options()
                .unwrap_err()
                .to_string()
                .contains("empty variable to order by")
        );
        let s = Settings {
            concat_dim: Some(" ".into()),
            ..Settings::new()
        };
        assert!(
            s.options()
                .unwrap_err()
                .to_string()
                .contains("empty dimension")
        );
        let o = Settings {
            new_dim: Some("member".into()),
            new_dim_values: Some(vec!["a".into(), "b".into()]),
            time_units: Some("days since 2000-01-01".into()),
            ..Settings::new()
        }
        .options()
        .unwrap();
        assert_eq!(
            o.concat,
            Some(Concat::New {
                dim: "member".into(),
                labels: Some(vec!["a".into(), "b".into()])
            })
        );
        assert_eq!(o.time_limit, Some(std::time::Duration::from_secs(600)));
        assert_eq!("skip".parse::<OnError>().unwrap(), OnError::Skip);
        assert!("ignore".parse::<OnError>().is_err());
    }
}
