//! Where a build's result goes: a kerchunk reference file (a local path, or an object on
//! object storage) or a branch of an Icechunk repository; appending to either; and writing
//! there. The command line and the Python package both go through here.

use std::path::Path;

use vzarr_core::VirtualDataset;
use vzarr_scan::inputs::SourceRef;
use vzarr_source::{Location, Scheme};

use crate::{BuildError, BuildOptions, Unwritable};

/// The format of a build's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// kerchunk version 1 reference JSON with Zarr v3 keys (one file or object).
    #[default]
    Kerchunk,
    /// An Icechunk repository (spec version 2), one commit per build (per piece for a large one).
    Icechunk,
}

impl std::str::FromStr for Format {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "kerchunk" => Ok(Format::Kerchunk),
            "icechunk" => Ok(Format::Icechunk),
            other => Err(BuildError::Options(format!(
                "output format {other:?}: kerchunk or icechunk"
            ))),
        }
    }
}

/// Where a build writes, validated.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Output {
    /// A kerchunk reference file: a local file (`file://`) or an object (s3://, gs://, az://).
    Kerchunk(Location),
    /// A branch of an Icechunk repository.
    Icechunk {
        /// The repository.
        location: vzarr_icechunk::RepoLocation,
        /// The branch.
        branch: String,
        /// The most chunks written in one piece (see
        /// [`vzarr_icechunk::WriteOptions::piece_refs`]).
        piece_refs: usize,
        /// How the pieces are committed.
        commits: vzarr_icechunk::Commits,
    },
}

/// What writing an output did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Written {
    /// A reference file was written.
    Kerchunk {
        /// Its path (local) or URL.
        at: String,
    },
    /// A commit was made.
    Icechunk(vzarr_icechunk::Written),
}

impl Output {
    /// The output `target` (a path or URL) in `format`; `branch` is the Icechunk branch to
    /// commit to (unused for kerchunk).
    pub fn parse(target: &str, format: Format, branch: &str) -> Result<Output, BuildError> {
        match format {
            Format::Kerchunk => {
                let loc = vzarr_source::locate(target).map_err(BuildError::Output)?;
                if matches!(loc.scheme, Scheme::Http | Scheme::Https) {
                    return Err(BuildError::Options(format!(
                        "{target}: references cannot be written over HTTP; write to a local \
                         path or an s3://, gs:// or az:// URL"
                    )));
                }
                if loc.scheme != Scheme::File && (loc.key.is_empty() || loc.key.ends_with('/')) {
                    return Err(BuildError::Options(format!(
                        "{target}: name the object to write, not only its bucket"
                    )));
                }
                Ok(Output::Kerchunk(loc))
            }
            Format::Icechunk => {
                if branch.is_empty() {
                    return Err(BuildError::Options("an empty branch name".into()));
                }
                Ok(Output::Icechunk {
                    location: vzarr_icechunk::RepoLocation::parse(target)?,
                    branch: branch.to_string(),
                    piece_refs: vzarr_icechunk::PIECE_REFS,
                    commits: vzarr_icechunk::Commits::Auto,
                })
            }
        }
    }

    /// The same output written in pieces of at most `n` chunks (at least 1; Icechunk only: a
    /// reference file is written whole).
    pub fn with_piece_refs(mut self, n: usize) -> Output {
        if let Output::Icechunk { piece_refs, .. } = &mut self {
            *piece_refs = n.max(1);
        }
        self
    }

    /// The same output with its pieces committed as `how` says (Icechunk only).
    pub fn with_commits(mut self, how: vzarr_icechunk::Commits) -> Output {
        if let Output::Icechunk { commits, .. } = &mut self {
            *commits = how;
        }
        self
    }

    /// Checks, before anything is scanned, that the output can be written where it is to go
    /// (a build that fails only once written wastes the whole build): a local reference
    /// file's directory exists and takes a new file, and the file is not a directory; a local
    /// Icechunk repository is a directory, or is absent below a directory that takes new
    /// entries (Icechunk creates the directories between). Object storage is not contacted:
    /// its location was checked when parsed ([`Output::parse`]).
    pub fn check_writable(&self) -> Result<(), BuildError> {
        match self {
            Output::Kerchunk(loc) if loc.scheme == Scheme::File => {
                check_file_writable(&loc.local_path())
            }
            Output::Icechunk {
                location: vzarr_icechunk::RepoLocation::Local(dir),
                ..
            } => check_dir_writable(dir),
            _ => Ok(()),
        }
    }

    /// The output as a string for messages: a local path, or a URL.
    pub fn display(&self) -> String {
        match self {
            Output::Kerchunk(loc) if loc.scheme == Scheme::File => {
                loc.local_path().display().to_string()
            }
            Output::Kerchunk(loc) => loc.url(),
            Output::Icechunk { location, .. } => location.display(),
        }
    }
}

/// Checks that a local file can be written at `path` (see [`Output::check_writable`]): its
/// directory exists and takes a new file (tried with a temporary file, removed at once), and
/// `path` is not a directory.
pub fn check_file_writable(path: &Path) -> Result<(), BuildError> {
    let unwritable = |why| BuildError::Unwritable {
        path: path.display().to_string(),
        why,
    };
    if path.is_dir() {
        return Err(unwritable(Unwritable::IsADirectory));
    }
    let abs = vzarr_source::absolute(path).map_err(BuildError::Output)?;
    let dir = abs.parent().unwrap_or(Path::new("/"));
    if !dir.exists() {
        return Err(unwritable(Unwritable::NoDirectory(
            dir.display().to_string(),
        )));
    }
    takes_new_files(dir).map_err(unwritable)
}

/// Checks that a directory can be made or written at `dir`: an existing one takes new files;
/// else the nearest existing ancestor is a directory that does.
fn check_dir_writable(dir: &Path) -> Result<(), BuildError> {
    let unwritable = |why| BuildError::Unwritable {
        path: dir.display().to_string(),
        why,
    };
    let mut at = dir;
    while !at.exists() {
        match at.parent() {
            Some(p) => at = p,
            None => break,
        }
    }
    takes_new_files(at).map_err(unwritable)
}

/// Whether `dir` is a directory in which a file can be created (one is, and removed).
fn takes_new_files(dir: &Path) -> Result<(), Unwritable> {
    if !dir.is_dir() {
        return Err(Unwritable::NotADirectory(dir.display().to_string()));
    }
    tempfile::Builder::new()
        .prefix(".vzarr-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| Unwritable::NotWritable {
            dir: dir.display().to_string(),
            source,
        })
}

/// An error of writing references to the object at `loc`: the object store's own when the
/// upload failed.
fn upload_error(loc: &vzarr_source::Location, e: vzarr_kerchunk::WriteError) -> BuildError {
    match e {
        vzarr_kerchunk::WriteError::Io { source, .. } => {
            match source.downcast::<vzarr_source::SourceError>() {
                Ok(e) => BuildError::Output(e),
                Err(source) => vzarr_kerchunk::WriteError::Io {
                    path: loc.url(),
                    source,
                }
                .into(),
            }
        }
        other => other.into(),
    }
}

/// The provenance `output` records: a reference file's `vzarr` block (read only as far as
/// it), or the metadata of the tip commit of an Icechunk branch; an error naming the output
/// when it records none.
pub fn recorded(output: &Output) -> Result<vzarr_core::Provenance, BuildError> {
    Ok(match output {
        Output::Kerchunk(loc) if loc.scheme == Scheme::File => {
            crate::append::recorded_sources(&loc.local_path())?.1
        }
        Output::Kerchunk(loc) => crate::append::recorded_sources_at(loc)?.1,
        Output::Icechunk {
            location, branch, ..
        } => vzarr_icechunk::provenance(location, branch)?.ok_or_else(|| BuildError::Append {
            output: output.display(),
            reason: format!(
                "the tip of branch {branch:?} records no vzarr provenance; rebuild it instead \
                     of appending"
            ),
        })?,
    })
}

/// The sources of an append to `output`: the sources it records and those of `inputs` that
/// are new; `opts` gets how it was combined (see [`crate::append::plan_append_recorded`])
/// and the inputs to record: those the output records followed by the append's own
/// ([`merged_inputs`]).
pub fn plan_append(
    output: &Output,
    inputs: Vec<SourceRef>,
    opts: &mut BuildOptions,
) -> Result<Appending, BuildError> {
    let at = output.display();
    let provenance = recorded(output)?;
    opts.inputs = merged_inputs(&at, &provenance, opts.inputs.take(), &inputs)?;
    let mut sources = crate::append::plan_append_recorded(&at, &provenance, inputs, opts)?;
    let new = sources.split_off(crate::append::recorded_count(&provenance));
    Ok(Appending {
        provenance,
        recorded: sources,
        new,
    })
}

/// What an append starts from: the output's provenance, the sources it records and the new
/// ones.
#[derive(Debug)]
#[non_exhaustive]
pub struct Appending {
    /// The output's provenance.
    pub provenance: vzarr_core::Provenance,
    /// Its sources, in concatenation order.
    pub recorded: Vec<SourceRef>,
    /// The sources to add.
    pub new: Vec<SourceRef>,
}

/// The inputs an append to the output named `output` (recording `prov`) records: those `prov`
/// records followed by the append's own (`given`, or when it named files one by one, those
/// files `sources`). An output whose sources were named one by one records none: they are
/// its sources, named again if the append lists a directory. `None` while neither lists a
/// directory, a prefix or a catalog. Patterns apply to every directory and prefix listed
/// again, so two different sets of patterns are refused.
pub fn merged_inputs(
    output: &str,
    prov: &vzarr_core::Provenance,
    given: Option<vzarr_core::Inputs>,
    sources: &[SourceRef],
) -> Result<Option<vzarr_core::Inputs>, BuildError> {
    let as_files = |urls: Vec<String>| vzarr_core::Inputs {
        locations: urls,
        ..Default::default()
    };
    let (mut base, add) = match (prov.inputs.clone(), given) {
        (None, None) => return Ok(None),
        (Some(b), None) => (b, as_files(sources.iter().map(SourceRef::url).collect())),
        (b, Some(a)) => (
            b.unwrap_or_else(|| as_files(prov.sources.iter().map(|s| s.url.clone()).collect())),
            a,
        ),
    };
    let patterns = |i: &vzarr_core::Inputs| (i.include.clone(), i.exclude.clone());
    let lists = |i: &vzarr_core::Inputs| {
        !i.catalogs.is_empty() || i.locations.iter().any(|l| l.ends_with('/'))
    };
    if lists(&base) && lists(&add) && patterns(&base) != patterns(&add) {
        return Err(BuildError::Append {
            output: output.to_string(),
            reason: format!(
                "its directories were listed with the patterns include {:?}, exclude {:?}, \
                 the new inputs with include {:?}, exclude {:?}: give the same patterns",
                base.include, base.exclude, add.include, add.exclude
            ),
        });
    }
    if !lists(&base) {
        (base.include, base.exclude) = patterns(&add);
    }
    for l in add.locations {
        if !base.locations.contains(&l) {
            base.locations.push(l);
        }
    }
    for c in add.catalogs {
        if !base.catalogs.contains(&c) {
            base.catalogs.push(c);
        }
    }
    Ok(Some(base))
}

/// Writes `ds` to `output` (atomically: a reference file appears whole or not at all; an
/// Icechunk build's branch gains all its commits, one per piece, or none). `action` names
/// what made it in an Icechunk commit message (`build`, `append`, `combine`); `append` says
/// the repository must exist; `appended` says how an append was planned: at the tail
/// ([`crate::Appended::Tail`]), only what changed is written, the rest of the reference file
/// kept as it is or the rest of the repository left as it is; `after_piece` runs between the
/// pieces of an Icechunk build (see [`vzarr_icechunk::WriteOptions::after_piece`]).
pub fn write(
    ds: &VirtualDataset,
    output: &Output,
    action: &str,
    append: bool,
    appended: Option<&crate::Appended>,
    after_piece: Option<fn()>,
) -> Result<Written, BuildError> {
    // Planned at the tail (an append, or a sync that replaced files in place): the dataset
    // holds what changed, which is all that is written.
    let changed = appended.and_then(crate::Appended::changed);
    let append = append || changed.is_some();
    let spliced = appended.and_then(crate::Appended::spliced).zip(changed);
    match output {
        // A local location is absolute already (`vzarr_source::locate`).
        Output::Kerchunk(loc) if loc.scheme == Scheme::File => {
            let path = loc.local_path();
            match spliced {
                Some((file, changed)) => file.write_file(ds, changed, &path)?,
                None => vzarr_kerchunk::write_file(ds, &path)?,
            }
            Ok(Written::Kerchunk {
                at: output.display(),
            })
        }
        // Streamed: memory stays at a few parts of the upload whatever the output's size.
        Output::Kerchunk(loc) => {
            let w = vzarr_source::ObjectWriter::create(vzarr_source::Clients::global(), loc)
                .map_err(BuildError::Output)?;
            // On error the writer is dropped, which aborts the upload.
            let w = match spliced {
                Some((file, changed)) => file.write(ds, changed, w),
                None => vzarr_kerchunk::write_refs(ds, w),
            }
            .map_err(|e| upload_error(loc, e))?;
            w.finish().map_err(BuildError::Output)?;
            Ok(Written::Kerchunk { at: loc.url() })
        }
        Output::Icechunk {
            location,
            branch,
            piece_refs,
            commits,
        } => {
            let opts = vzarr_icechunk::WriteOptions {
                branch: branch.clone(),
                message: vzarr_icechunk::commit_message(ds, action),
                mode: if append {
                    vzarr_icechunk::WriteMode::Existing
                } else {
                    vzarr_icechunk::WriteMode::CreateOrReplace
                },
                piece_refs: *piece_refs,
                commits: *commits,
                after_piece,
                update: changed.filter(|_| append).map(update_of),
            };
            Ok(Written::Icechunk(vzarr_icechunk::write(
                ds, location, &opts,
            )?))
        }
    }
}

/// What an append at the tail or a replacement changed, as the writers take it.
pub fn update_of(
    changed: &std::collections::BTreeMap<String, vzarr_plan::Changed>,
) -> vzarr_icechunk::Update {
    vzarr_icechunk::Update {
        arrays: changed
            .iter()
            .map(|(p, c)| (p.clone(), (c.axis, c.ranges.clone())))
            .collect(),
    }
}

/// The most chunks (references and inline values) a reference file holds before vzarr warns
/// that it stops being practical to open. Measured on 2 cores (2026-11-28, BENCHMARKS.md,
/// "Readers at scale"): `vzarr.open_dataset` opens 1,051,200 references in 0.6 s and 243 MiB
/// and 10,000,000 in 6.0 s and 1.2 GiB; fsspec's reference filesystem, the reader of those
/// without vzarr, needs 7.4 s and 728 MiB for 1M and more than 12 GiB for 10M; an Icechunk
/// repository opens 10M in 0.3 s.
pub const REFERENCE_FILE_CEILING: usize = 5_000_000;

/// A warning when `ds`, written as a reference file, would hold more chunks than
/// [`REFERENCE_FILE_CEILING`]: what opening it costs, and the Icechunk format instead. A
/// dataset changed at the tail of a reference file (`appended` spliced) holds only what
/// changed: the file's chunks are then counted by the arrays' grids (every chunk, stored or
/// not).
pub fn reference_file_warning(
    ds: &VirtualDataset,
    appended: Option<&crate::Appended>,
) -> Option<String> {
    let partial = appended.and_then(crate::Appended::spliced).is_some();
    ceiling_warning(
        ds.arrays
            .values()
            .map(|a| match partial {
                true => a
                    .grid
                    .n_chunks()
                    .ok()
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(usize::MAX),
                false => a.manifest.stored(),
            })
            .fold(0usize, usize::saturating_add),
    )
}

fn ceiling_warning(chunks: usize) -> Option<String> {
    (chunks > REFERENCE_FILE_CEILING).then(|| {
        format!(
            "{chunks} chunks in one reference file: above {REFERENCE_FILE_CEILING} a reference \
             file is slow to open (about 0.6 s and 120 MB a million with vzarr's reader, far \
             more through fsspec's); an Icechunk repository (format icechunk) opens in a \
             fraction of a second at any size"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked_before_the_build() {
        let dir = tempfile::tempdir().unwrap();
        let at = |p: &Path| {
            Output::parse(p.to_str().unwrap(), Format::Kerchunk, "main")
                .unwrap()
                .check_writable()
        };
        at(&dir.path().join("out.json")).unwrap();
        let e = at(&dir.path().join("missing/out.json")).unwrap_err();
        assert!(
            matches!(&e, BuildError::Unwritable { why: Unwritable::NoDirectory(d), .. }
                if d.ends_with("missing")),
            "{e:?}"
        );
        let e = at(dir.path()).unwrap_err();
        assert!(
            matches!(
                &e,
                BuildError::Unwritable {
                    why: Unwritable::IsADirectory,
                    ..
                }
            ),
            "{e:?}"
        );
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let e = at(&file.join("out.json")).unwrap_err();
        assert!(
            matches!(
                &e,
                BuildError::Unwritable {
                    why: Unwritable::NotADirectory(_),
                    ..
                }
            ),
            "{e:?}"
        );
        // An Icechunk repository: missing directories are made, a file in the way is not.
        let repo = |p: &Path| {
            Output::parse(p.to_str().unwrap(), Format::Icechunk, "main")
                .unwrap()
                .check_writable()
        };
        repo(&dir.path().join("a/b/repo")).unwrap();
        repo(&file.join("repo")).unwrap_err();
        // Nothing is left behind.
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["file"]);
    }

    #[test]
    fn reference_files_above_the_ceiling_are_warned_of() {
        assert_eq!(ceiling_warning(REFERENCE_FILE_CEILING), None);
        let w = ceiling_warning(REFERENCE_FILE_CEILING + 1).expect("a warning");
        assert!(w.starts_with("5000001 chunks in one reference file"), "{w}");
        assert!(w.contains("Icechunk"), "{w}");
        assert_eq!(reference_file_warning(&VirtualDataset::new(), None), None);
    }

    #[test]
    fn appends_record_the_inputs_before_theirs() {
        let files = |urls: &[&str]| vzarr_core::Inputs {
            locations: urls.iter().map(|u| u.to_string()).collect(),
            ..Default::default()
        };
        let mut prov = vzarr_core::Provenance::default();
        prov.sources.push(vzarr_core::SourceRecord {
            url: "file:///d/a.nc".into(),
            size: 1,
            mtime_ns: None,
            etag: None,
            fingerprint: None,
        });
        let src = |u: &str| SourceRef::parse(u).unwrap();
        // Files named one by one, then files: nothing to record.
        let none = merged_inputs("o", &prov, None, &[src("/d/b.nc")]).unwrap();
        assert_eq!(none, None);
        // Files, then a directory: the files named before come first.
        let dir = vzarr_core::Inputs {
            include: vec!["*.nc".into()],
            ..files(&["file:///d/"])
        };
        let m = merged_inputs("o", &prov, Some(dir.clone()), &[])
            .unwrap()
            .unwrap();
        assert_eq!(m.locations, ["file:///d/a.nc", "file:///d/"]);
        assert_eq!(m.include, ["*.nc"]);
        // A directory, then files: the files are added, the patterns kept.
        prov.inputs = Some(dir.clone());
        let m = merged_inputs("o", &prov, None, &[src("/e/c.nc")])
            .unwrap()
            .unwrap();
        assert_eq!(m.locations, ["file:///d/", "file:///e/c.nc"]);
        assert_eq!(m.include, ["*.nc"]);
        // The same directory again: recorded once.
        let m = merged_inputs("o", &prov, Some(dir), &[]).unwrap().unwrap();
        assert_eq!(m.locations, ["file:///d/"]);
        // Another directory with other patterns: refused.
        let e = merged_inputs("o", &prov, Some(files(&["s3://b/x/"])), &[]).unwrap_err();
        assert!(e.to_string().contains("give the same patterns"), "{e}");
    }
}
