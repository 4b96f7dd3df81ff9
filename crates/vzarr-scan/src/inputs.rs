//! Collecting sources from the command line: files, directories walked recursively with
//! include/exclude globs, catalog files (one path or URL per line), and object-store URLs and
//! prefixes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use vzarr_source::{Location, Scheme};

use crate::ScanError;

/// A source to scan: a parsed location (a local file as `file://`, or an object-store URL).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceRef(Location);

impl SourceRef {
    /// The source at a parsed location.
    pub fn new(location: Location) -> Self {
        SourceRef(location)
    }

    /// A local file (made absolute).
    pub fn local(path: &Path) -> Result<Self, ScanError> {
        Ok(SourceRef(vzarr_source::locate(
            &path.display().to_string(),
        )?))
    }

    /// Parses a URL or local path.
    pub fn parse(url_or_path: &str) -> Result<Self, ScanError> {
        Ok(SourceRef(vzarr_source::locate(url_or_path)?))
    }

    /// The location.
    pub fn location(&self) -> &Location {
        &self.0
    }

    /// The source's URL (`file://` for local files).
    pub fn url(&self) -> String {
        self.0.url()
    }

    /// The local path of a local file.
    pub fn local_path(&self) -> Option<PathBuf> {
        (self.0.scheme == Scheme::File).then(|| self.0.local_path())
    }

    /// A short name for messages: the path of a local file, else the URL.
    pub fn display(&self) -> String {
        match self.local_path() {
            Some(p) => p.display().to_string(),
            None => self.url(),
        }
    }
}

/// Include and exclude patterns for files found in directories and under prefixes.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// Keep only files matching one of these (all files when empty).
    pub include: Vec<String>,
    /// Drop files matching one of these.
    pub exclude: Vec<String>,
}

/// Compiled filters: a pattern with a `/` matches the path relative to the walked directory
/// or prefix, one without matches the file name.
pub struct CompiledFilters {
    include_name: GlobSet,
    include_path: GlobSet,
    exclude_name: GlobSet,
    exclude_path: GlobSet,
    any_include: bool,
}

fn compile(patterns: &[String], with_slash: bool) -> Result<GlobSet, ScanError> {
    let mut b = GlobSetBuilder::new();
    for p in patterns.iter().filter(|p| p.contains('/') == with_slash) {
        let g = Glob::new(p).map_err(|source| ScanError::Glob {
            pattern: p.clone(),
            source,
        })?;
        b.add(g);
    }
    b.build().map_err(|source| ScanError::Glob {
        pattern: patterns.join(" "),
        source,
    })
}

impl Filters {
    /// Compiles the patterns.
    pub fn compile(&self) -> Result<CompiledFilters, ScanError> {
        Ok(CompiledFilters {
            include_name: compile(&self.include, false)?,
            include_path: compile(&self.include, true)?,
            exclude_name: compile(&self.exclude, false)?,
            exclude_path: compile(&self.exclude, true)?,
            any_include: !self.include.is_empty(),
        })
    }
}

impl CompiledFilters {
    /// Whether a file at `relative` (below the walked directory) is kept.
    pub fn keep(&self, relative: &str) -> bool {
        let name = relative.rsplit('/').next().unwrap_or(relative);
        if self.exclude_name.is_match(name) || self.exclude_path.is_match(relative) {
            return false;
        }
        !self.any_include
            || self.include_name.is_match(name)
            || self.include_path.is_match(relative)
    }
}

fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

fn io_error(path: &Path, source: std::io::Error) -> ScanError {
    ScanError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Files below `dir`, recursively, sorted, without hidden files and directories, filtered.
fn walk(dir: &Path, filters: &CompiledFilters) -> Result<Vec<PathBuf>, ScanError> {
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = entry.map_err(|e| {
            let path = e
                .path()
                .map_or_else(|| dir.to_path_buf(), Path::to_path_buf);
            io_error(&path, e.into())
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        if filters.keep(&rel.to_string_lossy()) {
            out.push(entry.path().to_path_buf());
        }
    }
    Ok(out)
}

/// Lists an object-store prefix (a URL ending in `/`), filtered.
fn list(prefix: &str, filters: &CompiledFilters) -> Result<Vec<SourceRef>, ScanError> {
    let listed = vzarr_source::list_prefix(prefix)?;
    listed
        .into_iter()
        .filter(|o| {
            let rel = o.url.strip_prefix(prefix).unwrap_or(&o.url);
            !rel.split('/').any(|c| c.starts_with('.')) && filters.keep(rel)
        })
        .map(|o| SourceRef::parse(&o.url))
        .collect()
}

/// One input: a file, a directory, a URL of an object or a prefix (ending in `/`).
fn expand_one(
    item: &str,
    base: &Path,
    filters: &CompiledFilters,
    out: &mut Vec<SourceRef>,
) -> Result<(), ScanError> {
    if is_url(item) {
        if let Some(path) = item.strip_prefix("file://") {
            return expand_one(path, base, filters, out);
        }
        if item.ends_with('/') {
            out.extend(list(item, filters)?);
        } else {
            out.push(SourceRef::parse(item)?);
        }
        return Ok(());
    }
    let path = base.join(item);
    let abs = vzarr_source::absolute(&path)?;
    let meta = std::fs::metadata(&abs).map_err(|e| io_error(&path, e))?;
    if meta.is_dir() {
        let files = walk(&abs, filters)?;
        if files.is_empty() {
            return Err(ScanError::EmptyDirectory {
                path: path.display().to_string(),
            });
        }
        for f in files {
            out.push(SourceRef::local(&f)?);
        }
    } else {
        out.push(SourceRef::local(&abs)?);
    }
    Ok(())
}

/// Collects the sources of `items` (paths or URLs, in order) and of `catalogs` (files with one
/// path or URL per line; `#` starts a comment; relative paths are relative to the catalog's
/// folder). Directories and prefixes give their files sorted and filtered; explicit files are
/// always kept. A source named twice is kept once, at its first place.
pub fn collect(
    items: &[String],
    catalogs: &[PathBuf],
    filters: &Filters,
) -> Result<Vec<SourceRef>, ScanError> {
    let compiled = filters.compile()?;
    let cwd = PathBuf::from(".");
    let mut all = Vec::new();
    for item in items {
        expand_one(item, &cwd, &compiled, &mut all)?;
    }
    for cat in catalogs {
        let text = std::fs::read_to_string(cat).map_err(|e| io_error(cat, e))?;
        let base = cat.parent().map_or_else(|| cwd.clone(), Path::to_path_buf);
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            expand_one(line, &base, &compiled, &mut all).map_err(|e| ScanError::Catalog {
                catalog: cat.display().to_string(),
                line: n + 1,
                source: Box::new(e),
            })?;
        }
    }
    let mut seen = HashSet::new();
    all.retain(|s| seen.insert(s.clone()));
    Ok(all)
}

/// The inputs of a build as given (`items` and `catalogs`, as [`collect`] takes them, and the
/// patterns of `filters`) made absolute, for the output's provenance: what [`collect_recorded`]
/// lists again. `None` when every item names a file (the sources are then the record); a
/// directory or prefix (an item ending in `/`, or a local directory) or a catalog records
/// them all. Local directories end in `/` once recorded.
pub fn recorded_inputs(
    items: &[String],
    catalogs: &[PathBuf],
    filters: &Filters,
) -> Result<Option<vzarr_core::Inputs>, ScanError> {
    let mut locations = Vec::with_capacity(items.len());
    let mut listed = !catalogs.is_empty();
    for item in items {
        let local = match item.strip_prefix("file://") {
            Some(path) => Some(path),
            None if is_url(item) => None,
            None => Some(item.as_str()),
        };
        let Some(path) = local else {
            listed |= item.ends_with('/');
            locations.push(item.clone());
            continue;
        };
        let abs = vzarr_source::absolute(Path::new(path))?;
        let mut url = vzarr_source::file_url(&abs)?;
        if abs.is_dir() {
            listed = true;
            if !url.ends_with('/') {
                url.push('/');
            }
        }
        locations.push(url);
    }
    if !listed {
        return Ok(None);
    }
    let catalogs = catalogs
        .iter()
        .map(|c| vzarr_source::file_url(&vzarr_source::absolute(c)?))
        .collect::<Result<Vec<String>, vzarr_source::SourceError>>()?;
    Ok(Some(vzarr_core::Inputs {
        locations,
        catalogs,
        include: filters.include.clone(),
        exclude: filters.exclude.clone(),
    }))
}

/// The sources of recorded inputs ([`recorded_inputs`]) as they are now: directories walked
/// and prefixes listed again with the recorded patterns, catalogs read again. A local file
/// named on its own that is no longer there is left out (it was removed), not an error.
pub fn collect_recorded(inputs: &vzarr_core::Inputs) -> Result<Vec<SourceRef>, ScanError> {
    let local = |u: &str| -> Result<Option<PathBuf>, ScanError> {
        let loc = vzarr_source::locate(u)?;
        Ok((loc.scheme == Scheme::File).then(|| loc.local_path()))
    };
    let mut items = Vec::with_capacity(inputs.locations.len());
    for u in &inputs.locations {
        match local(u)? {
            Some(p) if !u.ends_with('/') && !p.exists() => {}
            Some(p) => items.push(p.display().to_string()),
            None => items.push(u.clone()),
        }
    }
    let mut catalogs = Vec::with_capacity(inputs.catalogs.len());
    for c in &inputs.catalogs {
        catalogs.push(local(c)?.unwrap_or_else(|| PathBuf::from(c)));
    }
    let filters = Filters {
        include: inputs.include.clone(),
        exclude: inputs.exclude.clone(),
    };
    collect(&items, &catalogs, &filters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn walks_recursively_with_filters() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "a/2023/tas_01.nc",
            "a/2023/tas_02.nc",
            "a/2024/tas_01.nc",
            "a/README.txt",
            "a/.hidden/x.nc",
            "a/2023/.x.nc",
        ] {
            touch(&d.path().join(f));
        }
        let dir = d.path().join("a").display().to_string();
        let names = |v: Vec<SourceRef>| -> Vec<String> {
            v.iter()
                .map(|s| s.display().rsplit("/a/").next().unwrap().to_string())
                .collect()
        };
        let all = collect(std::slice::from_ref(&dir), &[], &Filters::default()).unwrap();
        assert_eq!(
            names(all),
            [
                "2023/tas_01.nc",
                "2023/tas_02.nc",
                "2024/tas_01.nc",
                "README.txt"
            ]
        );
        let f = Filters {
            include: vec!["*.nc".into()],
            exclude: vec!["2024/*".into()],
        };
        assert_eq!(
            names(collect(std::slice::from_ref(&dir), &[], &f).unwrap()),
            ["2023/tas_01.nc", "2023/tas_02.nc"]
        );
        let f = Filters {
            include: vec!["*.zarr".into()],
            exclude: vec![],
        };
        assert!(
            collect(&[dir], &[], &f).is_err(),
            "a directory with no matching files is an error"
        );
    }

    #[test]
    fn catalogs_resolve_relative_paths_and_dedupe() {
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("data/x.nc"));
        touch(&d.path().join("data/y.nc"));
        let cat = d.path().join("catalog.txt");
        std::fs::write(
            &cat,
            "# my files\ndata/y.nc\n\ndata/x.nc  # comment\ndata/y.nc\n",
        )
        .unwrap();
        let got = collect(&[], std::slice::from_ref(&cat), &Filters::default()).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|s| s.display().rsplit('/').next().unwrap().to_string())
            .collect();
        assert_eq!(names, ["y.nc", "x.nc"]);
        std::fs::write(&cat, "data/missing.nc\n").unwrap();
        let e = collect(&[], &[cat], &Filters::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("catalog.txt:1"), "{e}");
    }

    #[test]
    fn urls_pass_through() {
        let got = collect(&["s3://bucket/a/file.nc".into()], &[], &Filters::default()).unwrap();
        assert_eq!(
            got,
            vec![SourceRef::parse("s3://bucket/a/file.nc").unwrap()]
        );
        assert_eq!(got[0].display(), "s3://bucket/a/file.nc");
        assert!(collect(&["s3://bucket/../x".into()], &[], &Filters::default()).is_err());
        assert!(is_url("gs://b/x") && !is_url("/tmp/x") && !is_url("a:b"));
    }

    #[test]
    fn inputs_are_recorded_when_something_is_listed_and_listed_again() {
        let d = tempfile::tempdir().unwrap();
        for f in ["a/x.nc", "a/y.nc", "a/z.txt", "b.nc"] {
            touch(&d.path().join(f));
        }
        let p = |f: &str| d.path().join(f).display().to_string();
        let filters = Filters {
            include: vec!["*.nc".into()],
            exclude: vec![],
        };
        // Files named one by one: nothing to record.
        assert_eq!(recorded_inputs(&[p("b.nc")], &[], &filters).unwrap(), None);
        let rec = recorded_inputs(&[p("a"), p("b.nc")], &[], &filters)
            .unwrap()
            .unwrap();
        assert_eq!(
            rec.locations,
            [
                format!("file://{}/", p("a")),
                format!("file://{}", p("b.nc"))
            ]
        );
        assert_eq!(rec.include, ["*.nc"]);
        touch(&d.path().join("a/w.nc"));
        std::fs::remove_file(d.path().join("b.nc")).unwrap();
        let names: Vec<String> = collect_recorded(&rec)
            .unwrap()
            .iter()
            .map(|s| s.display().rsplit('/').next().unwrap().to_string())
            .collect();
        // The file named on its own and gone is left out, not an error.
        assert_eq!(names, ["w.nc", "x.nc", "y.nc"]);
    }
}
