//! Appends that cost what is new: the output's last file and the new files are scanned and
//! planned, then joined to the output as it is ([`vzarr_plan::extend`]), which gives what a
//! plan of every file gives. Where the planner cannot be sure of that (new files before the
//! last one, a last file changed since it was recorded, small chunks treated by what the
//! whole array holds), the append plans every file instead and says why.

use std::collections::BTreeMap;
use std::time::Instant;

use vzarr_core::{Provenance, VirtualDataset};
use vzarr_plan::{Changed, extend};
use vzarr_scan::inputs::SourceRef;
use vzarr_source::Scheme;

use crate::build::{Combined, combine, outcome, scan_sources};
use crate::{BuildError, BuildOptions, BuildOutcome, Output, Progress};

/// How an append was planned.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Appended {
    /// At the tail: the output's last file and the new files planned, joined to the output.
    Tail {
        /// Files planned (the output's last one and the new ones).
        files: usize,
        /// The arrays that changed and from which chunk on (the others are the output's).
        changed: BTreeMap<String, Changed>,
    },
    /// Every file planned again, for this reason.
    Full {
        /// Why the tail was not enough.
        reason: String,
    },
}

impl Appended {
    /// How the append was planned, for a summary in JSON: `{"planned": "tail", "files": N}`
    /// or `{"planned": "full", "reason": "..."}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Appended::Tail { files, .. } => serde_json::json!({"planned": "tail", "files": files}),
            Appended::Full { reason } => serde_json::json!({"planned": "full", "reason": reason}),
        }
    }

    /// The arrays an append at the tail changed, and from which chunk on.
    pub fn changed(&self) -> Option<&BTreeMap<String, Changed>> {
        match self {
            Appended::Tail { changed, .. } => Some(changed),
            Appended::Full { .. } => None,
        }
    }
}

/// What [`append`] did: the outcome, or why every file must be planned.
pub(crate) enum Tail {
    /// Planned at the tail.
    Done(Box<BuildOutcome>),
    /// Not possible at the tail, for this reason.
    Full(String),
}

/// Appends `new` to `output` (whose provenance is `prov`) at its tail, if that gives what a
/// plan of every file gives (see the module documentation).
pub(crate) fn append(
    output: &Output,
    prov: &Provenance,
    new: &[SourceRef],
    opts: &BuildOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Tail, BuildError> {
    let started = Instant::now();
    let Some(c) = prov.concat.as_ref().filter(|c| !c.new_dim) else {
        return Ok(Tail::Full(
            "not concatenated along an existing dimension".into(),
        ));
    };
    let Some(last) = c.pieces.last() else {
        return Ok(Tail::Full("it records no files".into()));
    };
    let units = c.retimed.first().map(|r| r.units.clone());
    let mut window_opts = opts.clone();
    match (&opts.time_units, &units) {
        (Some(given), Some(u)) if given != u => {
            return Ok(Tail::Full(format!(
                "CF time is to be re-encoded into {given:?}, not its {u:?}"
            )));
        }
        _ => window_opts.time_units = units.or_else(|| opts.time_units.clone()),
    }
    let mut sources = vec![SourceRef::parse(&last.url)?];
    sources.extend(new.iter().cloned());
    progress(Progress::Sources(sources.len()));
    let mut scanned = scan_sources(&sources, &window_opts, &|s, ok| {
        progress(Progress::Scanned(s, ok))
    })?;
    let recorded = prov.sources.iter().find(|s| s.url == last.url);
    match scanned.datasets.first() {
        Some((0, ds)) if ds.provenance.sources.first() == recorded => {}
        _ => {
            return Ok(Tail::Full(format!(
                "its last file {} changed since it was recorded",
                last.url
            )));
        }
    }
    let datasets = std::mem::take(&mut scanned.datasets);
    let combined = combine(datasets.into_iter().map(|(_, d)| d).collect(), &window_opts)?;
    if combined
        .failures
        .iter()
        .any(|f| last.url.ends_with(&f.source))
    {
        return Ok(Tail::Full(format!(
            "its last file {} could not be planned with the new ones",
            last.url
        )));
    }
    let old = existing(output, &c.dim, last.start)?;
    let policy = opts.small_chunks.unwrap_or_default();
    let extended = match extend(old, combined.dataset, &combined.small_chunks, &policy) {
        Ok(e) => e,
        Err(why) => return Ok(Tail::Full(why.0)),
    };
    let mut plan = combined.plan;
    if let Some(p) = &mut plan
        && let Some(c) = &extended.dataset.provenance.concat
    {
        p.order = c.pieces.iter().map(|p| p.url.clone()).collect();
        p.concatenated.clone_from(&c.arrays);
        p.rectilinear = c
            .arrays
            .iter()
            .filter(|a| {
                extended
                    .dataset
                    .arrays
                    .get(*a)
                    .is_some_and(|x| !x.grid.is_regular())
            })
            .cloned()
            .collect();
    }
    // An Icechunk append larger than one piece is written in pieces by a full plan: the
    // update of one commit holds what changed only.
    if let Output::Icechunk { piece_refs, .. } = output {
        let update = crate::output::update_of(&extended.changed);
        let chunks = vzarr_icechunk::update_chunks(&extended.dataset, &update);
        if chunks > *piece_refs as u64 {
            return Ok(Tail::Full(format!(
                "the append writes {chunks} chunks, more than one piece of {piece_refs}"
            )));
        }
    }
    let done = Combined {
        dataset: extended.dataset,
        plan,
        small_chunks: combined.small_chunks,
        failures: combined.failures,
    };
    let mut out = outcome(scanned, done, opts, started);
    out.appended = Some(Appended::Tail {
        files: sources.len(),
        changed: extended.changed,
    });
    Ok(Tail::Done(Box::new(out)))
}

/// The output as it is: a reference file read whole; a repository's tip as far as an append
/// at the tail along `dim` from element `start` on needs it ([`vzarr_icechunk::open_tail`]:
/// its manifests are missing what the append keeps, which it does not write).
fn existing(output: &Output, dim: &str, start: u64) -> Result<VirtualDataset, BuildError> {
    let limits = vzarr_kerchunk::ParseLimits::default();
    match output {
        Output::Kerchunk(loc) => {
            let at = output.display();
            let bytes = if loc.scheme == Scheme::File {
                let path = loc.local_path();
                std::fs::read(&path).map_err(|e| BuildError::io(&path, e))?
            } else {
                let src = vzarr_source::open_source(&loc.url()).map_err(BuildError::Output)?;
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut vzarr_source::SourceReader::new(src), &mut bytes)
                    .map_err(|e| BuildError::Io {
                    path: at.clone(),
                    source: e,
                })?;
                bytes
            };
            Ok(vzarr_kerchunk::parse_refs(&bytes, &at, limits)?.dataset)
        }
        Output::Icechunk {
            location, branch, ..
        } => Ok(vzarr_icechunk::open_tail(
            location,
            branch,
            limits.max_references,
            (dim, start),
            vzarr_icechunk::TAIL_ALL_CHUNKS,
        )?
        .dataset),
    }
}
