//! Appends and syncs that cost what changed: the output's last file and the new files are
//! scanned and planned, then joined to the output as it is ([`vzarr_plan::extend`]); a
//! re-processed file is scanned and planned between its neighbours, then put in its place
//! ([`vzarr_plan::replace`]). Either gives what a plan of every file gives. Where the planner
//! cannot be sure of that (new files before the last one, a last file changed since it was
//! recorded, small chunks treated by what the whole array holds, the first file changed, a
//! file that grew or shrank), every file is planned instead, and the reason is given.
//!
//! The output is read only as far as the change needs it: a repository's last manifest
//! splits ([`vzarr_icechunk::open_tail`]; a replacement writes its chunks without reading
//! them), a reference file's documents and the entries that change
//! ([`vzarr_kerchunk::read_tail`]; [`SplicedFile`] then writes the file again with the rest
//! copied as bytes, not parsed and rendered).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use vzarr_core::{Provenance, VirtualDataset};
use vzarr_plan::{Changed, extend, join_changed, replace, window_of};
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
        /// Files planned (the output's last one and the new ones; the changed ones and their
        /// neighbours).
        files: usize,
        /// Recorded files re-processed since and replaced in place (by `vzarr sync`).
        replaced: usize,
        /// The arrays that changed and from which chunk on (the others are the output's).
        changed: BTreeMap<String, Changed>,
        /// The reference file appended to, read at its tail: the outcome's dataset holds
        /// what changed, and the write keeps the rest of the file as it is. `None` for a
        /// repository, or a file read whole.
        spliced: Option<SplicedFile>,
    },
    /// Every file planned again, for this reason.
    Full {
        /// Why the tail was not enough.
        reason: String,
    },
}

impl Appended {
    /// How the append was planned, for a summary in JSON: `{"planned": "tail", "files": N}`
    /// (with `"replaced": K` where a sync replaced K files in place) or `{"planned": "full",
    /// "reason": "..."}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Appended::Tail {
                files, replaced: 0, ..
            } => serde_json::json!({"planned": "tail", "files": files}),
            Appended::Tail {
                files, replaced, ..
            } => serde_json::json!({"planned": "tail", "files": files, "replaced": replaced}),
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

    /// The reference file an append at the tail read at its tail (see [`Appended::Tail`]).
    pub fn spliced(&self) -> Option<&SplicedFile> {
        match self {
            Appended::Tail { spliced, .. } => spliced.as_ref(),
            Appended::Full { .. } => None,
        }
    }
}

/// A reference file read at its tail for an append ([`vzarr_kerchunk::read_tail`]): its
/// bytes, where their parts sit, and (for a local file) its size and modification time when
/// it was read, which must still be its own when the append is written.
#[derive(Clone)]
pub struct SplicedFile(Arc<Spliced>);

struct Spliced {
    bytes: Vec<u8>,
    layout: vzarr_kerchunk::Layout,
    /// A local file: open as it was read, with its size and modification time then.
    local: Option<(std::fs::File, (u64, SystemTime))>,
}

impl SplicedFile {
    /// Writes `ds` (the dataset of an append at the tail of this file, whose `changed`
    /// arrays changed) to `out` ([`vzarr_kerchunk::write_spliced`]).
    pub fn write<W: std::io::Write>(
        &self,
        ds: &VirtualDataset,
        changed: &BTreeMap<String, Changed>,
        out: W,
    ) -> Result<W, vzarr_kerchunk::WriteError> {
        let update = crate::output::update_of(changed);
        vzarr_kerchunk::write_spliced(ds, &self.0.bytes, &self.0.layout, &update.arrays, out)
    }

    /// [`SplicedFile::write`] over the local file `path` it was read from, atomically, if
    /// that has not changed since it was read (the bytes kept are copied from it, file to
    /// file, and the copy is refused if it changes meanwhile).
    pub fn write_file(
        &self,
        ds: &VirtualDataset,
        changed: &BTreeMap<String, Changed>,
        path: &Path,
    ) -> Result<(), BuildError> {
        let changed_since = || BuildError::Append {
            output: path.display().to_string(),
            reason: "it changed while the append was planned; run the append again".into(),
        };
        let state = |m: std::fs::Metadata| -> Result<(u64, SystemTime), BuildError> {
            Ok((m.len(), m.modified().map_err(|e| BuildError::io(path, e))?))
        };
        let Some((file, then)) = &self.0.local else {
            return Err(changed_since());
        };
        let now = std::fs::metadata(path).map_err(|e| BuildError::io(path, e))?;
        if state(now)? != *then {
            return Err(changed_since());
        }
        let update = crate::output::update_of(changed);
        vzarr_kerchunk::write_file_spliced(
            ds,
            &self.0.bytes,
            Some(file),
            &self.0.layout,
            &update.arrays,
            path,
        )?;
        Ok(())
    }
}

impl std::fmt::Debug for SplicedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SplicedFile({} bytes)", self.0.bytes.len())
    }
}

impl PartialEq for SplicedFile {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SplicedFile {}

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
    join(output, prov, &[], new, opts, progress)
}

/// Brings `output` (whose provenance is `prov`) in line where the recorded files `changed`
/// (URLs) were re-processed and the files `new` came: each changed file planned between its
/// neighbours and replaced in place ([`vzarr_plan::replace`]), then the new ones appended at
/// the tail ([`vzarr_plan::extend`]), if that gives what a plan of every file gives.
pub(crate) fn join(
    output: &Output,
    prov: &Provenance,
    changed: &[String],
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
    // The changed files' positions, and the recorded files to scan: each changed one with its
    // neighbours, and the last one if files are appended.
    let mut at = Vec::with_capacity(changed.len());
    for url in changed {
        match c.pieces.iter().position(|p| p.url == *url) {
            Some(0) => {
                return Ok(Tail::Full(format!(
                    "its first file {url} changed: what is kept once comes from it"
                )));
            }
            Some(i) => at.push(i),
            None => return Ok(Tail::Full(format!("{url} is not one of its files"))),
        }
    }
    at.sort_unstable();
    let n = c.pieces.len();
    let mut recorded: Vec<usize> = at
        .iter()
        .flat_map(|&i| window_of(i, n))
        .chain((!new.is_empty()).then_some(n - 1))
        .collect();
    recorded.sort_unstable();
    recorded.dedup();
    let mut sources = recorded
        .iter()
        .map(|&i| SourceRef::parse(&c.pieces[i].url))
        .collect::<Result<Vec<_>, _>>()?;
    sources.extend(new.iter().cloned());
    progress(Progress::Sources(sources.len()));
    let mut scanned = scan_sources(&sources, &window_opts, &|s, ok| {
        progress(Progress::Scanned(s, ok))
    })?;
    // Every recorded file scanned, and as recorded but for the changed ones.
    let mut of_piece: BTreeMap<usize, VirtualDataset> = BTreeMap::new();
    let mut news = Vec::new();
    for (k, ds) in std::mem::take(&mut scanned.datasets) {
        match recorded.get(k) {
            Some(&i) => {
                of_piece.insert(i, ds);
            }
            None => news.push(ds),
        }
    }
    for &i in &recorded {
        let url = &c.pieces[i].url;
        let was = prov.sources.iter().find(|s| s.url == *url);
        match of_piece.get(&i) {
            None => return Ok(Tail::Full(format!("{url} could not be scanned"))),
            Some(ds)
                if !at.contains(&i)
                    && ds.provenance.sources.iter().find(|s| s.url == *url) != was =>
            {
                return Ok(Tail::Full(format!("{url} changed since it was recorded")));
            }
            _ => {}
        }
    }
    let mut spans: Vec<std::ops::Range<u64>> = at
        .iter()
        .map(|&i| c.pieces[i].start..c.pieces[i].start + c.pieces[i].len)
        .collect();
    if !new.is_empty() {
        spans.push(last.start..u64::MAX);
    }
    let (mut dataset, spliced) = existing(output, &c.dim, &spans)?;
    let policy = opts.small_chunks.unwrap_or_default();
    let mut changes: BTreeMap<String, Changed> = BTreeMap::new();
    let mut last_window = None;
    for &i in &at {
        let window: Vec<VirtualDataset> = window_of(i, n).map(|j| of_piece[&j].clone()).collect();
        let combined = combine(window, &window_opts)?;
        if let Some(f) = combined.failures.first() {
            return Ok(Tail::Full(format!(
                "{} could not be planned between its neighbours: {}",
                c.pieces[i].url, f.source
            )));
        }
        match replace(
            dataset,
            combined.dataset,
            i,
            &combined.small_chunks,
            &policy,
        ) {
            Ok(r) => {
                dataset = r.dataset;
                join_changed(&mut changes, r.changed);
            }
            Err(why) => return Ok(Tail::Full(why.0)),
        }
        last_window = Some((combined.plan, combined.small_chunks, combined.failures));
    }
    if !new.is_empty() {
        let mut window = vec![of_piece.remove(&(n - 1)).expect("scanned")];
        window.extend(news);
        let combined = combine(window, &window_opts)?;
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
        match extend(dataset, combined.dataset, &combined.small_chunks, &policy) {
            Ok(e) => {
                dataset = e.dataset;
                join_changed(&mut changes, e.changed);
            }
            Err(why) => return Ok(Tail::Full(why.0)),
        }
        last_window = Some((combined.plan, combined.small_chunks, combined.failures));
    }
    let Some((mut plan, small_chunks, failures)) = last_window else {
        return Ok(Tail::Full("nothing changed".into()));
    };
    if let Some(p) = &mut plan
        && let Some(c) = &dataset.provenance.concat
    {
        p.order = c.pieces.iter().map(|p| p.url.clone()).collect();
        p.concatenated.clone_from(&c.arrays);
        p.rectilinear = c
            .arrays
            .iter()
            .filter(|a| dataset.arrays.get(*a).is_some_and(|x| !x.grid.is_regular()))
            .cloned()
            .collect();
    }
    // An Icechunk append larger than one piece is written in pieces by a full plan: the
    // update of one commit holds what changed only.
    if let Output::Icechunk { piece_refs, .. } = output {
        let update = crate::output::update_of(&changes);
        let chunks = vzarr_icechunk::update_chunks(&dataset, &update);
        if chunks > *piece_refs as u64 {
            return Ok(Tail::Full(format!(
                "the change writes {chunks} chunks, more than one piece of {piece_refs}"
            )));
        }
    }
    let done = Combined {
        dataset,
        plan,
        small_chunks,
        failures,
    };
    let mut out = outcome(scanned, done, opts, started);
    out.appended = Some(Appended::Tail {
        files: sources.len(),
        replaced: at.len(),
        changed: changes,
        spliced,
    });
    Ok(Tail::Done(Box::new(out)))
}

/// The output as it is, as far as a change of the elements `spans` along `dim` needs it (an
/// end of `u64::MAX`: the tail, from an append on): a reference file read there where its
/// layout allows
/// ([`vzarr_kerchunk::read_tail`], with what the write needs to keep the rest as it is), else
/// whole; a repository's tip ([`vzarr_icechunk::open_tail`]). Their manifests are missing what
/// the append keeps, which it does not write.
fn existing(
    output: &Output,
    dim: &str,
    spans: &[std::ops::Range<u64>],
) -> Result<(VirtualDataset, Option<SplicedFile>), BuildError> {
    let limits = vzarr_kerchunk::ParseLimits::default();
    match output {
        Output::Kerchunk(loc) => {
            let at = output.display();
            let (bytes, local) = if loc.scheme == Scheme::File {
                let path = loc.local_path();
                let io = |e| BuildError::io(&path, e);
                let mut file = std::fs::File::open(&path).map_err(io)?;
                let meta = file.metadata().map_err(io)?;
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes).map_err(io)?;
                let then = (meta.len(), meta.modified().map_err(io)?);
                (bytes, Some((file, then)))
            } else {
                let src = vzarr_source::open_source(&loc.url()).map_err(BuildError::Output)?;
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut vzarr_source::SourceReader::new(src), &mut bytes)
                    .map_err(|e| BuildError::Io {
                    path: at.clone(),
                    source: e,
                })?;
                (bytes, None)
            };
            match vzarr_kerchunk::read_tail(
                &bytes,
                &at,
                limits,
                (dim, spans),
                vzarr_icechunk::TAIL_ALL_CHUNKS,
            ) {
                Ok(tail) => {
                    let file = Spliced {
                        bytes,
                        layout: tail.layout,
                        local,
                    };
                    Ok((tail.dataset, Some(SplicedFile(Arc::new(file)))))
                }
                // Read whole, which names what is malformed, if anything is.
                Err(_) => Ok((
                    vzarr_kerchunk::parse_refs(&bytes, &at, limits)?.dataset,
                    None,
                )),
            }
        }
        Output::Icechunk {
            location, branch, ..
        } => {
            // What a replacement changes is written, not read: only the tail is.
            let start = spans
                .last()
                .filter(|s| s.end == u64::MAX)
                .map_or(u64::MAX, |s| s.start);
            Ok((
                vzarr_icechunk::open_tail(
                    location,
                    branch,
                    limits.max_references,
                    (dim, start),
                    vzarr_icechunk::TAIL_ALL_CHUNKS,
                )?
                .dataset,
                None,
            ))
        }
    }
}
