//! Bringing an output back in line with its sources (`vzarr sync`, `vzarr.sync`).
//!
//! An output records where its sources were found ([`vzarr_core::Provenance::inputs`]:
//! directories and object-store prefixes with their include/exclude patterns, catalogs,
//! files named on their own) and each source as it was scanned (size, modification time,
//! ETag, fingerprint). [`plan`] lists those locations again and compares:
//!
//! - every location and every source is checked against the allowed prefixes before it is
//!   listed or opened (an output is untrusted: it may name any location);
//! - a source listed and not recorded is **added**; one recorded and not listed is
//!   **removed**; one whose size, modification time or ETag differ (or, with all three the
//!   same, the fingerprint of its first bytes) **changed**; the rest are **unchanged**.
//!
//! [`run`] then brings the output in line: nothing changed, nothing is written; only new
//! sources, an append ([`crate::run`] onto the output, the path of `build --append`); changed
//! sources, each planned between its neighbours and its references replaced in place, with
//! the new sources appended after ([`vzarr_plan::replace`], [`vzarr_plan::extend`]: only
//! those files scanned, only what changed written), where that gives what a plan of every
//! file gives; else (a removed source, a changed first file, a file now longer or shorter, a
//! changed order) a rebuild of every current source as the output was combined (the scans of
//! unchanged sources come from the scan cache when one is given). Either is written as one
//! atomic file or one Icechunk commit. Removed sources are refused ([`BuildError::Removed`])
//! unless [`SyncOptions::allow_removal`].
//!
//! An output whose sources were named one by one records no inputs: its recorded sources are
//! checked (changed, removed) and nothing can be added.

use std::collections::{HashMap, HashSet};

use vzarr_core::{Provenance, SourceRecord};
use vzarr_plan::Concat;
use vzarr_scan::inputs::SourceRef;
use vzarr_source::{AllowPrefixes, PrefixPolicy, SourceError, SourceStore, Stores};

use crate::tail::Tail;
use crate::{BuildError, BuildOptions, BuildOutcome, Output, Progress};

/// How to sync an output.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SyncOptions {
    /// Prefixes (local directories, URL prefixes) the recorded locations may be listed and
    /// the sources read from.
    pub allow_prefixes: Vec<String>,
    /// Also allow the locations the output records (for outputs the user made or trusts).
    pub trust_recorded: bool,
    /// Rebuild without the sources that are gone instead of refusing.
    pub allow_removal: bool,
    /// Sources checked at once (0: 16).
    pub jobs: usize,
}

impl SyncOptions {
    /// Options allowing `allow_prefixes`, refusing removals.
    pub fn new(allow_prefixes: Vec<String>) -> Self {
        SyncOptions {
            allow_prefixes,
            ..Default::default()
        }
    }
}

/// A source whose bytes changed since the output recorded them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Changed {
    /// The source's URL.
    pub url: String,
    /// What changed, in words.
    pub changes: Vec<String>,
}

/// What a sync does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SyncAction {
    /// Nothing changed: nothing is written.
    Nothing,
    /// Only new sources: they are appended.
    Append,
    /// Sources changed or were removed: the changed ones are replaced in place where that
    /// gives what a rebuild gives, else the output is rebuilt from the current sources.
    Rebuild,
    /// Sources were removed and removal is not allowed: nothing is written.
    Refuse,
}

/// What [`plan`] found: the sources added, changed, removed and unchanged since the output
/// was written, and what [`run`] will do about them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SyncPlan {
    /// The output, as named in messages.
    pub output: String,
    /// Whether the output records inputs that were listed again (else only its recorded
    /// sources were checked: nothing can be added).
    pub listed: bool,
    /// Sources listed that the output does not record (URLs, in listing order).
    pub added: Vec<String>,
    /// Recorded sources whose bytes changed.
    pub changed: Vec<Changed>,
    /// Recorded sources that are no longer listed or no longer exist.
    pub removed: Vec<String>,
    /// Recorded sources as they were.
    pub unchanged: Vec<String>,
    /// What [`run`] does.
    pub action: SyncAction,
    /// A change only the fingerprint saw (same size, time and ETag): the scan cache, keyed by
    /// those, would give the old scan.
    in_place: bool,
    /// The current sources, in listing order.
    sources: Vec<SourceRef>,
    /// What the output records.
    provenance: Provenance,
}

/// The allowed prefixes of a sync: those given, and with `trust_recorded` the recorded
/// locations (directories and prefixes, the directories of files and catalogs) and the
/// prefixes the output records.
fn allowed(prov: &Provenance, opts: &SyncOptions) -> Vec<String> {
    let mut allow = opts.allow_prefixes.clone();
    if opts.trust_recorded {
        let dir = |u: &String| match u.rfind('/') {
            Some(i) => u[..=i].to_string(),
            None => u.clone(),
        };
        allow.extend(prov.allowed_prefixes.iter().cloned());
        if let Some(i) = &prov.inputs {
            allow.extend(i.locations.iter().chain(&i.catalogs).map(dir));
        }
    }
    allow
}

/// Lists the locations `output` records again and compares what is there with the sources
/// it records (see the module documentation). Nothing is written.
pub fn plan(output: &Output, opts: &SyncOptions) -> Result<SyncPlan, BuildError> {
    let prov = crate::output::recorded(output)?;
    plan_recorded(&output.display(), prov, opts)
}

/// [`plan`] for an output named `output` that records `prov`.
pub fn plan_recorded(
    output: &str,
    prov: Provenance,
    opts: &SyncOptions,
) -> Result<SyncPlan, BuildError> {
    let src_err = |source| BuildError::SyncSource {
        output: output.to_string(),
        source,
    };
    if prov.concat.as_ref().is_some_and(|c| c.new_dim) {
        return Err(BuildError::Sync {
            output: output.to_string(),
            reason: "syncing a stack along a new dimension is not supported; rebuild it".into(),
        });
    }
    if prov.sources.is_empty() {
        return Err(BuildError::Sync {
            output: output.to_string(),
            reason: "it records no sources".into(),
        });
    }
    let policy = PrefixPolicy::new(&[], &allowed(&prov, opts)).map_err(src_err)?;
    let store = AllowPrefixes::new(Stores::default(), policy);
    // The locations first: nothing is listed (no catalog read) outside the allowed prefixes.
    let current: Vec<SourceRef> = match &prov.inputs {
        Some(inputs) => {
            for u in inputs.locations.iter().chain(&inputs.catalogs) {
                store.check(u).map_err(src_err)?;
            }
            vzarr_scan::inputs::collect_recorded(inputs)?
        }
        None => recorded_order(&prov)
            .into_iter()
            .map(SourceRef::parse)
            .collect::<Result<_, _>>()?,
    };
    let threads = if opts.jobs == 0 { 16 } else { opts.jobs };
    let urls: Vec<String> = current.iter().map(SourceRef::url).collect();
    let records: HashMap<&str, &SourceRecord> =
        prov.sources.iter().map(|s| (s.url.as_str(), s)).collect();
    let now = vzarr_source::parallel_map(&urls, threads, |u| {
        state_of(&store, u, records.get(u.as_str()).copied())
    });
    let mut plan = SyncPlan {
        output: output.to_string(),
        listed: prov.inputs.is_some(),
        added: Vec::new(),
        changed: Vec::new(),
        removed: Vec::new(),
        unchanged: Vec::new(),
        action: SyncAction::Nothing,
        in_place: false,
        sources: Vec::new(),
        provenance: Provenance::default(),
    };
    let mut found: HashSet<&str> = HashSet::new();
    for ((src, url), state) in current.into_iter().zip(&urls).zip(now) {
        let recorded = records.contains_key(url.as_str());
        match state.map_err(src_err)? {
            State::Gone => continue,
            State::Same if recorded => plan.unchanged.push(url.clone()),
            State::Changed { changes, in_place } if recorded => {
                plan.in_place |= in_place;
                plan.changed.push(Changed {
                    url: url.clone(),
                    changes,
                });
            }
            _ => plan.added.push(url.clone()),
        }
        found.insert(url.as_str());
        plan.sources.push(src);
    }
    plan.removed = recorded_order(&prov)
        .into_iter()
        .filter(|u| !found.contains(u))
        .map(str::to_string)
        .collect();
    plan.action = if !plan.removed.is_empty() && !opts.allow_removal {
        SyncAction::Refuse
    } else if !plan.removed.is_empty() || !plan.changed.is_empty() {
        SyncAction::Rebuild
    } else if !plan.added.is_empty() {
        SyncAction::Append
    } else {
        SyncAction::Nothing
    };
    plan.provenance = prov;
    Ok(plan)
}

/// A listed source as it is now, against its record.
enum State {
    /// No longer there (a file named on its own, an object listed then deleted).
    Gone,
    /// As recorded (or not recorded: new).
    Same,
    /// Changed since recorded.
    Changed {
        changes: Vec<String>,
        /// Seen only by the fingerprint.
        in_place: bool,
    },
}

/// Opens `url` through the allowed prefixes and compares it with its record `then` (size,
/// modification time, ETag; with those the same, the fingerprint where recorded and no ETag
/// tells).
fn state_of(
    store: &AllowPrefixes<Stores>,
    url: &str,
    then: Option<&SourceRecord>,
) -> Result<State, SourceError> {
    let src = match store.open(url) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(State::Gone),
        Err(e) => return Err(e),
    };
    let Some(then) = then else {
        return Ok(State::Same);
    };
    let changes = vzarr_source::record_changes(then, src.record());
    if !changes.is_empty() {
        return Ok(State::Changed {
            changes,
            in_place: false,
        });
    }
    if let Some(want) = &then.fingerprint
        && (then.etag.is_none() || src.record().etag.is_none())
        && !untouched_since_written(url, then)
    {
        let now = vzarr_source::fingerprint(src.as_ref())?;
        if now != *want {
            return Ok(State::Changed {
                changes: vec![format!(
                    "content changed (fingerprint of the first {} KiB {want}, now {now})",
                    vzarr_source::FINGERPRINT_BYTES >> 10
                )],
                in_place: true,
            });
        }
    }
    Ok(State::Same)
}

/// Whether the local file at `url` was last changed by the write its record saw, so its
/// bytes are the recorded ones without reading its fingerprint: its inode's change time
/// equals its modification time to the nanosecond, and that is the recorded one. A later
/// change of any kind (a rewrite whose modification time was put back, a `chmod`, a rename)
/// sets the change time to the clock's time, which no user sets. Only where times have
/// sub-second precision (else a change within the same second could look untouched).
fn untouched_since_written(url: &str, then: &SourceRecord) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Some(recorded) = then.mtime_ns.filter(|t| t % 1_000_000_000 != 0) else {
            return false;
        };
        let Ok(loc) = vzarr_source::parse_url(url) else {
            return false;
        };
        if loc.scheme != vzarr_source::Scheme::File {
            return false;
        }
        let Ok(m) = std::fs::metadata(loc.local_path()) else {
            return false;
        };
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        let (ctime, mtime) = (ns(m.ctime(), m.ctime_nsec()), ns(m.mtime(), m.mtime_nsec()));
        ctime == mtime && mtime == recorded
    }
    #[cfg(not(unix))]
    {
        let _ = (url, then);
        false
    }
}

/// The recorded sources' URLs in concatenation order (by URL for a single source).
fn recorded_order(prov: &Provenance) -> Vec<&str> {
    match &prov.concat {
        Some(c) => c.pieces.iter().map(|p| p.url.as_str()).collect(),
        None => prov.own_sources().map(|s| s.url.as_str()).collect(),
    }
}

impl SyncPlan {
    /// The sources added, in listing order.
    fn added_sources(&self) -> Vec<SourceRef> {
        let added: HashSet<&str> = self.added.iter().map(String::as_str).collect();
        self.sources
            .iter()
            .filter(|s| added.contains(s.url().as_str()))
            .cloned()
            .collect()
    }

    /// The sources [`run`] scans (or takes from the cache): every current one for a rebuild,
    /// the added ones for an append, none otherwise.
    pub fn to_scan(&self) -> &[SourceRef] {
        match self.action {
            SyncAction::Append | SyncAction::Rebuild => &self.sources,
            _ => &[],
        }
    }
}

/// Brings `output` in line as `plan` (made by [`plan`] of the same output) says, building
/// with `opts` (how the output was combined and its small-chunk policy come from its record;
/// [`BuildOptions::inputs`] is set to the recorded inputs): `None` when there is nothing to
/// do, else `finish` of the build's outcome (which writes it: [`write`]). A refused plan is
/// [`BuildError::Removed`], naming the sources that are gone.
pub fn run<T: Send>(
    plan: &SyncPlan,
    output: &Output,
    mut opts: BuildOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
    finish: impl FnOnce(BuildOutcome) -> T + Send,
) -> Result<Option<T>, BuildError> {
    let prov = &plan.provenance;
    opts.inputs.clone_from(&prov.inputs);
    match plan.action {
        SyncAction::Nothing => Ok(None),
        SyncAction::Refuse => Err(BuildError::Removed {
            output: plan.output.clone(),
            removed: plan.removed.clone(),
        }),
        SyncAction::Append => {
            crate::run(plan.added_sources(), opts, Some(output), progress, finish).map(Some)
        }
        SyncAction::Rebuild => {
            if let Some(c) = &prov.concat {
                opts.concat = Some(Concat::Existing(c.dim.clone()));
                opts.order_by.clone_from(&c.order_by);
            }
            if opts.small_chunks.is_none() {
                opts.small_chunks = prov.small_chunks;
            }
            if plan.in_place {
                // The cache is keyed by size, time and ETag: it would give the old scan.
                opts.cache = None;
            }
            // Changed files replaced in place and new ones appended, where that gives what a
            // plan of every file gives; else every current source planned.
            let why = if plan.removed.is_empty() {
                let changed: Vec<String> = plan.changed.iter().map(|c| c.url.clone()).collect();
                let added = plan.added_sources();
                let tail = crate::with_jobs(opts.jobs, || {
                    crate::tail::join(output, prov, &changed, &added, &opts, progress)
                });
                match tail {
                    Ok(Tail::Done(out)) => {
                        progress(Progress::Done);
                        return Ok(Some(finish(*out)));
                    }
                    Ok(Tail::Full(reason)) => reason,
                    Err(e) => {
                        progress(Progress::Done);
                        return Err(e);
                    }
                }
            } else {
                "files were removed".into()
            };
            crate::run(plan.sources.clone(), opts, None, progress, |mut out| {
                out.appended = Some(crate::Appended::Full { reason: why });
                finish(out)
            })
            .map(Some)
        }
    }
}

/// Writes the outcome of a sync's build to `output`: an append as `build --append` writes it
/// (at the tail, only what changed),
/// a rebuild as one atomic file or one commit replacing the branch's content (see
/// [`crate::output::write`]).
pub fn write(
    plan: &SyncPlan,
    out: &crate::BuildOutcome,
    output: &Output,
    after_piece: Option<fn()>,
) -> Result<crate::Written, BuildError> {
    let append = plan.action == SyncAction::Append;
    crate::output::write(
        &out.dataset,
        output,
        action_name(plan.action),
        append,
        out.appended.as_ref(),
        after_piece,
    )
}

/// The word for a sync's action in commit messages and summaries (`append`, `sync`).
pub fn action_name(action: SyncAction) -> &'static str {
    match action {
        SyncAction::Append => "append",
        _ => "sync",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &std::path::Path) -> SourceRecord {
        let mut r = vzarr_source::local_record(path).unwrap();
        r.fingerprint = Some(vzarr_source::fingerprint_of(&std::fs::read(path).unwrap()));
        r
    }

    #[test]
    fn a_file_untouched_since_its_write_needs_no_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("a.nc");
        std::fs::write(&path, "abc").unwrap();
        let url = vzarr_source::file_url(&path).unwrap();
        let r = record(&path);
        if r.mtime_ns.is_some_and(|t| t % 1_000_000_000 == 0) {
            return; // a file system without sub-second times: always fingerprinted
        }
        assert!(untouched_since_written(&url, &r));
        // Written again, its modification time put back: the change time tells.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&path, "xyz").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert!(!untouched_since_written(&url, &r));
        // Another record's time, or none.
        let mut other = r.clone();
        other.mtime_ns = other.mtime_ns.map(|t| t + 1);
        assert!(!untouched_since_written(&url, &other));
    }

    #[test]
    fn sources_are_sorted_into_added_changed_removed_and_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("arch");
        std::fs::create_dir(&dir).unwrap();
        let file = |n: &str| dir.join(n);
        for n in ["a.nc", "b.nc", "c.nc", "gone.nc"] {
            std::fs::write(file(n), n.repeat(10)).unwrap();
        }
        let sources: Vec<SourceRecord> = ["a.nc", "b.nc", "c.nc", "gone.nc"]
            .iter()
            .map(|n| record(&file(n)))
            .collect();
        let url = |n: &str| vzarr_source::file_url(&file(n)).unwrap();
        let prov = Provenance {
            sources,
            inputs: Some(vzarr_core::Inputs {
                locations: vec![format!("{}/", vzarr_source::file_url(&dir).unwrap())],
                exclude: vec!["*.txt".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        // b.nc rewritten with other bytes of the same size, its time put back: only the
        // fingerprint tells. c.nc grows. gone.nc goes; new.nc comes; notes.txt is excluded.
        let b = file("b.nc");
        let mtime = std::fs::metadata(&b).unwrap().modified().unwrap();
        std::fs::write(&b, "B.NC".repeat(10)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&b)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        std::fs::write(file("c.nc"), "longer".repeat(10)).unwrap();
        std::fs::remove_file(file("gone.nc")).unwrap();
        std::fs::write(file("new.nc"), "new").unwrap();
        std::fs::write(file("notes.txt"), "x").unwrap();
        let allow = vec![dir.display().to_string()];
        let p = plan_recorded("out.json", prov.clone(), &SyncOptions::new(allow.clone())).unwrap();
        assert_eq!(p.added, [url("new.nc")]);
        let changed: Vec<&str> = p.changed.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(changed, [url("b.nc"), url("c.nc")]);
        assert!(
            p.changed[0].changes[0].contains("fingerprint"),
            "{:?}",
            p.changed
        );
        assert!(
            p.changed[1].changes[0].contains("size changed"),
            "{:?}",
            p.changed
        );
        assert_eq!(p.removed, [url("gone.nc")]);
        assert_eq!(p.unchanged, [url("a.nc")]);
        assert_eq!(p.action, SyncAction::Refuse);
        assert!(p.in_place);
        let mut o = SyncOptions::new(allow);
        o.allow_removal = true;
        let p = plan_recorded("out.json", prov.clone(), &o).unwrap();
        assert_eq!(p.action, SyncAction::Rebuild);
        assert_eq!(p.to_scan().len(), 4);
        // Nothing allowed: refused before anything is listed, naming the output.
        let e = plan_recorded("out.json", prov, &SyncOptions::default()).unwrap_err();
        assert!(
            matches!(&e, BuildError::SyncSource { output, source: SourceError::NotAllowed(_) }
                if output == "out.json"),
            "{e:?}"
        );
    }
}
