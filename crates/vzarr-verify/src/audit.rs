//! Auditing references made elsewhere (kerchunk's, which record no provenance): every
//! reference (or a seeded sample) is located in its source with vzarr's own scanners, so a
//! defect is named by its kind rather than only seen as values that differ:
//!
//! - the source is missing, or the range goes past its end (stale or wrong references);
//! - no stored chunk of any variable starts at the offset (a wrong offset, or a source
//!   rewritten since), or the chunk there has another length;
//! - the chunk there belongs to another variable;
//! - the variable's codecs or data type differ from what the references say;
//! - the chunk sits at other chunk coordinates than the key says, given where the file's other
//!   chunks sit (a shifted chunk: for a combined dataset, each file's placement along every
//!   dimension is the one most of its references agree on);
//! - a chunk the file stores is not referenced where the file's placement puts it (a missing
//!   chunk; checked when every reference is audited).

use std::collections::{BTreeMap, HashMap};

use vzarr_core::{ChunkRef, Codec, VirtualArray, VirtualDataset};
use vzarr_read::{ParsedRefs, ReadError, ReadOptions, Reader};

use crate::report::VerifyOptions;
use crate::sample::sample_indices;

/// The kind of a defective reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DefectKind {
    /// The source cannot be opened or scanned (missing, unreadable).
    StaleSource,
    /// The range goes past the end of the source.
    PastEnd,
    /// No stored chunk starts at the offset.
    WrongOffset,
    /// A chunk starts there, of another length.
    WrongLength,
    /// The chunk there belongs to another variable.
    OtherVariable,
    /// The variable's codecs, data type or rank differ from the references'.
    Metadata,
    /// The chunk sits at other coordinates than the key says.
    Shifted,
    /// A chunk the source stores is not referenced where it belongs.
    Missing,
    /// Chunks the references leave out read as another fill value than the source's.
    FillValue,
    /// A file the references were made from that no reference points into, while they point
    /// into others (a combine dropped it).
    Dropped,
}

impl DefectKind {
    /// The kind in words, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            DefectKind::StaleSource => "stale source",
            DefectKind::PastEnd => "past the end",
            DefectKind::WrongOffset => "wrong offset",
            DefectKind::WrongLength => "wrong length",
            DefectKind::OtherVariable => "other variable",
            DefectKind::Metadata => "metadata",
            DefectKind::Shifted => "shifted",
            DefectKind::Missing => "missing",
            DefectKind::FillValue => "fill value",
            DefectKind::Dropped => "dropped",
        }
    }
}

/// One defective reference.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Defect {
    /// Array path.
    pub array: String,
    /// The chunk (its key's indices).
    pub chunk: Vec<u64>,
    /// The source the reference points into.
    pub source: String,
    /// The kind.
    pub kind: DefectKind,
    /// What is wrong, in words.
    pub detail: String,
}

impl std::fmt::Display for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} chunk {:?} ({}): {}: {}",
            self.array,
            self.chunk,
            self.source,
            self.kind.name(),
            self.detail
        )
    }
}

/// What an audit found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AuditReport {
    /// References (byte ranges) in the audited arrays.
    pub references: u64,
    /// References audited.
    pub audited: u64,
    /// Sources scanned.
    pub sources: u64,
    /// Defects found, by kind.
    pub by_kind: BTreeMap<&'static str, u64>,
    /// The first defects, in detail.
    pub defects: Vec<Defect>,
    /// Every array with a defect, with its first defect in words.
    pub defective_arrays: BTreeMap<String, String>,
}

impl AuditReport {
    /// Whether no defect was found.
    pub fn ok(&self) -> bool {
        self.by_kind.is_empty()
    }

    /// One summary line.
    pub fn summary(&self) -> String {
        let found = if self.ok() {
            "no defect".to_string()
        } else {
            self.by_kind
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "audited {} of {} references against {} source(s) scanned by vzarr: {found}",
            self.audited, self.references, self.sources
        )
    }

    /// Leaves every defective array out of `ds` (kept in its skipped list with the defect):
    /// what an upgrade of the references should not carry over.
    pub fn leave_out_defective(&self, ds: &mut VirtualDataset) {
        for (path, first) in &self.defective_arrays {
            if ds.arrays.shift_remove(path).is_some() {
                ds.skipped.push(vzarr_core::SkippedVariable {
                    path: path.clone(),
                    reason: format!("the references are defective ({first})"),
                });
            }
        }
    }

    fn add(&mut self, d: Defect, max: usize) {
        // A dropped file is no array's defect (its `array` is empty, which is also the path of
        // a root array): nothing to leave out for it.
        if d.kind != DefectKind::Dropped {
            self.defective_arrays
                .entry(d.array.clone())
                .or_insert_with(|| format!("chunk {:?}: {}: {}", d.chunk, d.kind.name(), d.detail));
        }
        *self.by_kind.entry(d.kind.name()).or_default() += 1;
        if self.defects.len() < max {
            self.defects.push(d);
        }
    }
}

/// A codec's kind, for comparing chains written by different tools (levels and block sizes
/// do not change decoding; element sizes of shuffles do).
fn codec_kind(c: &Codec) -> String {
    match c {
        Codec::Shuffle { element_size } => format!("shuffle({element_size})"),
        Codec::Zlib { .. } => "zlib".into(),
        Codec::Zstd { .. } => "zstd".into(),
        Codec::Blosc { .. } => "blosc".into(),
        Codec::Bz2 { .. } => "bz2".into(),
        other => format!("{:?}", std::mem::discriminant(other)),
    }
}

/// Where a source's stored chunks are: offset -> (array path, linear chunk index, length) of
/// every array storing a chunk there (links give one dataset several names).
type Index = HashMap<u64, Vec<(String, usize, u64)>>;

fn index_of(scanned: &VirtualDataset) -> Index {
    let mut idx = Index::new();
    for (path, a) in &scanned.arrays {
        for (lin, r) in a.manifest.iter_stored() {
            // A scan of one file references that file only (under its own spelling).
            if let ChunkRef::Range { offset, length, .. } = r {
                idx.entry(offset)
                    .or_default()
                    .push((path.clone(), lin, length));
            }
        }
    }
    idx
}

/// One reference under audit.
struct Ref<'a> {
    path: &'a str,
    array: &'a VirtualArray,
    lin: usize,
    url: &'a str,
    offset: u64,
    length: u64,
}

/// Audits the references `reader` holds (see the module documentation); `opts` gives the
/// arrays, the sample and how many defects to describe. Sources are opened under the reader's
/// policy (allowed prefixes) before they are scanned. It audits the manifests
/// `reader.dataset()` holds: of lazily opened Parquet references, load them first
/// (`Reader::load_all`; [`crate::verify`] refuses a reader not loaded).
pub fn audit(reader: &Reader, opts: &VerifyOptions) -> AuditReport {
    let ds = reader.dataset();
    let mut refs: Vec<Ref<'_>> = Vec::new();
    for (path, array) in &ds.arrays {
        if !opts.covers(path) {
            continue;
        }
        for (lin, r) in array.manifest.iter_stored() {
            if let ChunkRef::Range {
                source,
                offset,
                length,
            } = r
            {
                refs.push(Ref {
                    path,
                    array,
                    lin,
                    url: source,
                    offset,
                    length,
                });
            }
        }
    }
    let mut report = AuditReport {
        references: refs.len() as u64,
        ..Default::default()
    };
    let chosen: Vec<usize> = match opts.sample {
        Some(n) => sample_indices(refs.len() as u64, n, opts.seed)
            .into_iter()
            .map(|i| i as usize)
            .collect(),
        None => (0..refs.len()).collect(),
    };
    report.audited = chosen.len() as u64;
    let max = opts.max_reported;
    let defect = |r: &Ref<'_>, kind, detail: String| Defect {
        array: r.path.to_string(),
        chunk: r.array.grid.chunk_index(r.lin as u64),
        source: r.url.to_string(),
        kind,
        detail,
    };
    // Each source opened under the policy, then scanned once.
    let mut scans: BTreeMap<&str, Result<(u64, VirtualDataset, Index), String>> = BTreeMap::new();
    for &i in &chosen {
        let url = refs[i].url;
        scans.entry(url).or_insert_with(|| scan(reader, url));
    }
    // The files the user says the references were made from: each not referenced is scanned
    // too (a dataset of one file whose references name none), or named as dropped.
    let referenced: Vec<String> = scans.keys().map(|u| same_file(u)).collect();
    for given in &opts.sources {
        if referenced.contains(&same_file(given)) {
            continue;
        }
        if referenced.is_empty() && opts.sources.len() == 1 {
            scans.insert(given.as_str(), scan(reader, given));
        } else if !referenced.is_empty() {
            report.add(
                Defect {
                    array: String::new(),
                    chunk: Vec::new(),
                    source: given.clone(),
                    kind: DefectKind::Dropped,
                    detail:
                        "no reference points into this file, which the references were made from"
                            .into(),
                },
                max,
            );
        }
    }
    report.sources = scans.values().filter(|s| s.is_ok()).count() as u64;
    // Placements: per (source, dimension), element offset -> votes.
    let mut votes: HashMap<(&str, &str), HashMap<i128, u64>> = HashMap::new();
    let mut placed: Vec<(usize, Vec<i128>)> = Vec::new();
    let mut seen: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
    for &i in &chosen {
        let r = &refs[i];
        let (size, scanned, idx) = match &scans[r.url] {
            Ok(s) => s,
            Err(e) => {
                report.add(defect(r, DefectKind::StaleSource, e.clone()), max);
                continue;
            }
        };
        if r.offset.saturating_add(r.length) > *size {
            report.add(
                defect(
                    r,
                    DefectKind::PastEnd,
                    format!(
                        "{} bytes at offset {} go past the end of the file ({size} bytes)",
                        r.length, r.offset
                    ),
                ),
                max,
            );
            continue;
        }
        let found = idx
            .get(&r.offset)
            .map(|all| all.iter().find(|(p, _, _)| p == r.path).unwrap_or(&all[0]));
        let Some((spath, slin, slen)) = found else {
            report.add(
                defect(
                    r,
                    DefectKind::WrongOffset,
                    format!(
                        "no stored chunk of any variable starts at offset {}",
                        r.offset
                    ),
                ),
                max,
            );
            continue;
        };
        if spath != r.path {
            report.add(
                defect(
                    r,
                    DefectKind::OtherVariable,
                    format!("the range is a chunk of {spath}"),
                ),
                max,
            );
            continue;
        }
        let sa = &scanned.arrays[spath];
        // An uncompressed chunk longer than the array: HDF5 stores it whole, the scanner cuts
        // it to the array; a reference to the whole stored chunk is right.
        let padded = sa.codecs.is_empty() && *slen < r.length;
        if *slen != r.length && !padded {
            report.add(
                defect(
                    r,
                    DefectKind::WrongLength,
                    format!("the chunk there is {slen} bytes, not {}", r.length),
                ),
                max,
            );
            continue;
        }
        let ours: Vec<String> = r.array.codecs.iter().map(codec_kind).collect();
        let theirs: Vec<String> = sa.codecs.iter().map(codec_kind).collect();
        if sa.grid.ndim() != r.array.grid.ndim()
            || sa.data_type != r.array.data_type
            || (sa.data_type.size() > 1 && sa.endian != r.array.endian)
            || ours != theirs
        {
            report.add(
                defect(
                    r,
                    DefectKind::Metadata,
                    format!(
                        "the file's variable is {} {} {:?} with codecs {theirs:?}; the references say {} {} {:?} with {ours:?}",
                        sa.data_type.name(),
                        sa.endian.as_str(),
                        sa.shape(),
                        r.array.data_type.name(),
                        r.array.endian.as_str(),
                        r.array.shape()
                    ),
                ),
                max,
            );
            continue;
        }
        let key_origin = r
            .array
            .grid
            .chunk_origin(&r.array.grid.chunk_index(r.lin as u64));
        let src_origin = sa.grid.chunk_origin(&sa.grid.chunk_index(*slin as u64));
        let delta: Vec<i128> = key_origin
            .iter()
            .zip(&src_origin)
            .map(|(&k, &s)| i128::from(k) - i128::from(s))
            .collect();
        seen.insert((r.url, r.path));
        for (d, dim) in delta.iter().zip(&r.array.dimension_names) {
            *votes
                .entry((r.url, dim.as_str()))
                .or_default()
                .entry(*d)
                .or_default() += 1;
        }
        placed.push((i, delta));
    }
    // The placement of each file along each dimension: what most of its references say (0
    // for a dataset of one file).
    let single = scans.len() == 1;
    let placement = |url: &str, dim: &str| -> i128 {
        if single {
            return 0;
        }
        votes
            .get(&(url, dim))
            .and_then(|v| v.iter().max_by_key(|(d, n)| (**n, -**d)).map(|(d, _)| *d))
            .unwrap_or(0)
    };
    for (i, delta) in &placed {
        let r = &refs[*i];
        let want: Vec<i128> = r
            .array
            .dimension_names
            .iter()
            .map(|d| placement(r.url, d))
            .collect();
        if *delta != want {
            report.add(
                defect(
                    r,
                    DefectKind::Shifted,
                    format!(
                        "the range is the file's chunk at element offset {:?} from where the key puts it; the file's other chunks sit at {want:?}",
                        delta
                    ),
                ),
                max,
            );
        }
    }
    // Variables the references hold that the file's scan leaves out (types Zarr v3 cannot
    // hold, such as HDF5 object references or variable-length sequences): whatever the
    // references store for them is not the file's values.
    if single && let Some(Ok((_, scanned, _))) = scans.values().next() {
        let url = *scans.keys().next().expect("one source");
        for s in &scanned.skipped {
            // Only types: a variable left out for its size (say) may be right in them.
            if ds.arrays.contains_key(&s.path)
                && (s.reason.starts_with("unsupported data type")
                    || s.reason
                        .starts_with(vzarr_scan::hdf5_refusal::REGION_REFERENCES)
                    || s.reason
                        .starts_with(vzarr_scan::hdf5_refusal::ATTRIBUTE_REFERENCES))
                && opts.covers(&s.path)
            {
                report.add(
                    Defect {
                        array: s.path.clone(),
                        chunk: Vec::new(),
                        source: url.to_string(),
                        kind: DefectKind::Metadata,
                        detail: format!(
                            "the file's variable has no Zarr v3 counterpart ({}); what the references hold for it is not its values",
                            s.reason
                        ),
                    },
                    max,
                );
            }
        }
        // Object references (vzarr reads them as their targets' paths, marked by the links and
        // references convention): references that do not say so hold something else.
        for (path, sa) in &scanned.arrays {
            if sa.attributes.contains_key("links_references")
                && ds
                    .arrays
                    .get(path)
                    .is_some_and(|a| !a.attributes.contains_key("links_references"))
                && opts.covers(path)
            {
                report.add(
                    Defect {
                        array: path.clone(),
                        chunk: Vec::new(),
                        source: url.to_string(),
                        kind: DefectKind::Metadata,
                        detail: "the file's variable holds HDF5 object references; what the references hold for it is not their targets".into(),
                    },
                    max,
                );
            }
        }
    }
    // Missing: every chunk a scanned file stores of a variable its references place.
    if opts.sample.is_none() {
        for (url, scan) in &scans {
            let Ok((_, scanned, _)) = scan else { continue };
            for (path, sa) in &scanned.arrays {
                let Some(array) = ds.arrays.get(path) else {
                    continue;
                };
                if !opts.covers(path) {
                    continue;
                }
                // A file of a combined dataset is placed by its references; the one file of a
                // single-file dataset holds every array where the keys say.
                if sa.grid.ndim() != array.grid.ndim()
                    || (!single
                        && (!seen.contains(&(*url, path.as_str()))
                            || !array
                                .dimension_names
                                .iter()
                                .all(|d| votes.contains_key(&(*url, d.as_str())))))
                {
                    continue;
                }
                if single
                    && sa.data_type == array.data_type
                    && sa.fill_value != array.fill_value
                    && array.manifest.stored() < array.manifest.len()
                {
                    report.add(
                        Defect {
                            array: path.clone(),
                            chunk: Vec::new(),
                            source: url.to_string(),
                            kind: DefectKind::FillValue,
                            detail: format!(
                                "the chunks the references leave out read as {}; the file's fill value is {}",
                                array.fill_value.to_zarr_json(array.data_type.clone()),
                                sa.fill_value.to_zarr_json(sa.data_type.clone())
                            ),
                        },
                        max,
                    );
                }
                for (slin, r) in sa.manifest.iter_stored() {
                    let (offset, length) = match r {
                        ChunkRef::Range { offset, length, .. } => (offset, length),
                        // Values the file keeps in its metadata or heap (compact data,
                        // variable-length strings): only a chunk left out is a defect.
                        ChunkRef::Inline(b) => (u64::MAX, b.len() as u64),
                        ChunkRef::Missing => continue,
                    };
                    let origin = sa.grid.chunk_origin(&sa.grid.chunk_index(slin as u64));
                    let pos: Option<Vec<u64>> = origin
                        .iter()
                        .zip(&array.dimension_names)
                        .map(|(&o, d)| u64::try_from(i128::from(o) + placement(url, d)).ok())
                        .collect();
                    let Some(pos) = pos else { continue };
                    let index: Option<Vec<u64>> = pos
                        .iter()
                        .zip(array.grid.dims())
                        .map(|(&p, g)| g.chunk_of(p))
                        .collect();
                    let Some(index) = index else { continue };
                    let Some(lin) = array.grid.linear_index(&index) else {
                        continue;
                    };
                    let here = array.manifest.get(lin as usize);
                    let referenced = if offset == u64::MAX {
                        !matches!(here, ChunkRef::Missing)
                    } else {
                        matches!(here, ChunkRef::Range { source, offset: o, .. } if source == *url && o == offset)
                    };
                    let harmless = match here {
                        ChunkRef::Inline(_) => true,
                        ChunkRef::Missing => holds_only_fill(reader, url, sa, array, r),
                        ChunkRef::Range { .. } => false,
                    };
                    if !referenced && !harmless {
                        report.add(
                            Defect {
                                array: path.clone(),
                                chunk: index,
                                source: url.to_string(),
                                kind: DefectKind::Missing,
                                detail: format!(
                                    "the file stores this chunk ({length} bytes {}); the references {}",
                                    if offset == u64::MAX {
                                        "in its metadata or heap".to_string()
                                    } else {
                                        format!("at offset {offset}")
                                    },
                                    match here {
                                        ChunkRef::Missing => "leave it out (it reads as the fill value)".to_string(),
                                        ChunkRef::Range { source, offset, .. } => format!("point at {source} offset {offset} instead"),
                                        ChunkRef::Inline(_) => String::new(),
                                    }
                                ),
                            },
                            max,
                        );
                    }
                }
            }
        }
    }
    report
}

/// The source at `url` opened under the reader's policy, then scanned: its size, what vzarr's
/// scanners make of it, and where its chunks are.
fn scan(reader: &Reader, url: &str) -> Result<(u64, VirtualDataset, Index), String> {
    let src = reader
        .direct_sources()
        .open(url)
        .map_err(|e| e.to_string())?;
    let source = vzarr_scan::inputs::SourceRef::parse(url).map_err(|e| e.to_string())?;
    let scanned = vzarr_scan::scan_source(&source, &vzarr_scan::ScanOptions::default())
        .map_err(|e| e.to_string())?;
    let idx = index_of(&scanned);
    Ok((src.size(), scanned, idx))
}

/// A source's URL in one spelling: a local path and its `file://` URL are the same file, and
/// a relative path is the file it names from the current directory (made absolute as a build
/// records it, `.` and `..` resolved lexically); anything else is kept as given.
pub(crate) fn same_file(url: &str) -> String {
    if let Ok(l) = vzarr_source::parse_url(url) {
        return l.url();
    }
    if url.contains("://") {
        return url.to_string();
    }
    vzarr_source::absolute(std::path::Path::new(url))
        .and_then(|abs| vzarr_source::file_url(&abs))
        .ok()
        .and_then(|u| vzarr_source::parse_url(&u).ok())
        .map_or_else(|| url.to_string(), |l| l.url())
}

/// Whether chunk `stored` that the file stores of `sa` holds nothing but `array`'s fill value
/// (an uncompressed chunk of at most 1 MiB, e.g. a NetCDF-3 scalar never written): references
/// that leave it out read the same values, so that is no defect.
fn holds_only_fill(
    reader: &Reader,
    url: &str,
    sa: &VirtualArray,
    array: &VirtualArray,
    stored: ChunkRef<'_>,
) -> bool {
    if !sa.codecs.is_empty() || sa.data_type != array.data_type {
        return false;
    }
    let fill = array.fill_value.bytes_in(sa.data_type.clone(), sa.endian);
    let bytes = match stored {
        ChunkRef::Inline(b) => b.to_vec(),
        ChunkRef::Range { offset, length, .. } if length <= 1 << 20 => {
            match reader
                .direct_sources()
                .open(url)
                .and_then(|s| s.read(offset..offset + length))
            {
                Ok(b) => b.to_vec(),
                Err(_) => return false,
            }
        }
        _ => return false,
    };
    !fill.is_empty()
        && !bytes.is_empty()
        && bytes.len() % fill.len() == 0
        && bytes.chunks(fill.len()).all(|c| c == fill.as_slice())
}

/// Audits every reference of `refs` (their sources read only under `allow_prefixes`; `origin`
/// names them; `made_from`, the files they were made from when the user names them, as
/// [`VerifyOptions::sources`]) and returns them without the arrays that have a defect, each kept in the
/// dataset's skipped list with its first defect, with the audit: what an upgrade that must not
/// carry defects over starts from.
pub fn without_defective(
    refs: ParsedRefs,
    origin: &str,
    allow_prefixes: Vec<String>,
    made_from: Vec<String>,
) -> Result<(ParsedRefs, AuditReport), ReadError> {
    let reader = vzarr_read::open_parsed(
        refs,
        origin,
        ReadOptions {
            allow_prefixes,
            ..Default::default()
        },
    )?;
    let report = audit(
        &reader,
        &VerifyOptions {
            sources: made_from,
            ..Default::default()
        },
    );
    let mut refs = reader.refs().clone();
    drop(reader);
    report.leave_out_defective(&mut refs.dataset);
    for path in report.defective_arrays.keys() {
        refs.documents.remove(&format!("{path}/zarr.json"));
    }
    Ok((refs, report))
}
