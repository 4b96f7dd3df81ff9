//! Appends and replacements in a reference file that neither parse nor render it whole.
//!
//! A reference file vzarr wrote has a fixed layout (see the crate documentation): the
//! provenance block, the root's `zarr.json`, every other group's, then each array's
//! `zarr.json` followed by its chunk entries in C order over its grid, without whitespace. An
//! append along a dimension changes the provenance, the documents and, of each array along the
//! dimension, the chunks from the one holding the first element of the output's last file on;
//! a re-processed file replaced in place changes the chunks holding its elements. Where the
//! dimension is the array's first axis, those are runs of entries: the last ones of its
//! block, or runs in its middle.
//!
//! [`read_tail`] reads what such a change can touch: every document and, of the arrays along
//! the dimension, the entries of those runs (arrays of at most `whole_up_to` chunks whole).
//! It finds them by substring searches, which JSON's grammar makes exact (a `,"` or a `":"`
//! never falls inside a string, where every quote is escaped), bisecting a block by byte
//! position to the entry where a run starts (entries are in C order; the ones around each
//! boundary are checked to be), and parses those parts alone, through [`parse_refs`] and its
//! checks. [`write_spliced`] writes the changed dataset: the head and every document
//! rendered, each array's entries around its changed runs copied as they are, the runs
//! rendered. For a file this writer wrote, that is byte for byte what [`crate::write_refs`]
//! writes for the whole dataset.
//!
//! A file in any other layout (another writer's, one edited by hand, an array changed along
//! a later axis) is not spliced: [`read_tail`] says why, and the caller reads it whole.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use memchr::memmem;
use vzarr_core::VirtualDataset;

use crate::read::{ParseLimits, parse_chunk_indices, parse_refs, split_chunk_key};
use crate::write::{
    PIECE_CHUNKS, Piece, TempWriter, WriteError, document, meta_key, render, write_atomically,
    write_head,
};

/// Why a reference file is not read at its tail (its caller reads it whole instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotSpliced(pub String);

fn no<T>(reason: impl Into<String>) -> Result<T, NotSpliced> {
    Err(NotSpliced(reason.into()))
}

/// A reference file read at its tail.
#[derive(Debug)]
#[non_exhaustive]
pub struct TailRefs {
    /// Every group and array, with chunks only where an append can change them (see the
    /// module documentation); the manifests are missing everything else.
    pub dataset: VirtualDataset,
    /// Where the parts of the file sit, for [`write_spliced`].
    pub layout: Layout,
}

/// Where the parts of a reference file sit ([`read_tail`]), for [`write_spliced`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The file's length.
    len: usize,
    /// Each array's chunk entries, by path.
    arrays: BTreeMap<String, Block>,
}

/// One array's chunk entries in the file, and which of them were read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Block {
    /// The entries (each with its leading comma), after the array's document.
    chunks: Range<usize>,
    read: Read,
}

/// Which chunk entries of an array were read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Read {
    /// None (an array not along the dimension).
    Nothing,
    /// All.
    Whole,
    /// Those of some runs of chunk indices along the array's first axis.
    Parts(Vec<Part>),
}

/// A run of an array's chunk entries that was read: those whose index along the first axis
/// is in `chunks` (an end of `u64::MAX`: to the last entry).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    chunks: Range<u64>,
    /// Each entry's index along the first axis and where the entry starts.
    entries: Vec<(u64, usize)>,
    /// Where the run ends.
    end: usize,
}

impl Part {
    /// Where the first entry at index `i` or later along the first axis starts, for `i` in
    /// the run's indices (or at its end).
    fn at(&self, i: u64) -> Option<usize> {
        if i < self.chunks.start || i > self.chunks.end {
            return None;
        }
        Some(
            self.entries
                .iter()
                .find(|(i0, _)| *i0 >= i)
                .map_or(self.end, |(_, at)| *at),
        )
    }
}

/// The start of every reference file vzarr writes.
const HEAD: &[u8] = br#"{"version":1,"vzarr":"#;
/// What follows the provenance block.
const REFS: &[u8] = br#","refs":{"zarr.json":"#;
/// The end of a non-root document's key, and the opening quote of its value.
const DOC_KEY_END: &[u8] = br#"/zarr.json":""#;
/// Below this many bytes, the search for an entry in an array's block goes entry by entry.
const BISECT_BYTES: usize = 1 << 12;

/// Reads the reference file `bytes` (named `origin` in errors) for a change along `dim` of
/// the elements in `spans` (in order and apart; an end of `u64::MAX` runs to the end: the
/// tail of an append): every document and, of the arrays along `dim`, the chunks that hold
/// those elements (every chunk of an array of at most `whole_up_to` chunks). `Err` says why
/// the file cannot be read so (not in vzarr's layout, malformed, an array along `dim` on
/// another than its first axis): the caller then reads it whole, which names what is
/// malformed.
pub fn read_tail(
    bytes: &[u8],
    origin: &str,
    limits: ParseLimits,
    (dim, spans): (&str, &[Range<u64>]),
    whole_up_to: u64,
) -> Result<TailRefs, NotSpliced> {
    if !bytes.starts_with(HEAD) {
        return no("it does not start as vzarr writes reference files");
    }
    let prov_end = skip_value(bytes, HEAD.len()).ok_or_else(|| layout("the provenance"))?;
    if !bytes[prov_end..].starts_with(REFS) {
        return no("the references do not start with the root's zarr.json");
    }
    let root_doc = prov_end + REFS.len();
    let root_end = skip_string(bytes, root_doc).ok_or_else(|| layout("zarr.json"))?;
    let refs_end = if bytes.ends_with(b"}}\n") {
        bytes.len() - 3
    } else if bytes.ends_with(b"}}") {
        bytes.len() - 2
    } else {
        return no("it does not end as vzarr writes reference files");
    };
    if refs_end < root_end {
        return no("it is cut short");
    }
    // Every other document: (path, the entry with its leading comma).
    let mut docs: Vec<(String, Range<usize>)> = Vec::new();
    let mut from = root_end;
    for hit in memmem::find_iter(&bytes[root_end..refs_end], DOC_KEY_END) {
        let h = root_end + hit;
        if h < from {
            return no("a document key inside a document");
        }
        let Some(k) = memmem::rfind(&bytes[from..h], b",\"") else {
            return no(format!(
                "a document key at byte {h} does not follow an entry"
            ));
        };
        let entry = from + k;
        let value = h + DOC_KEY_END.len() - 1;
        let key: String = serde_json::from_slice(&bytes[entry + 1..value - 1])
            .map_err(|e| NotSpliced(format!("a document key at byte {entry}: {e}")))?;
        let Some(path) = key.strip_suffix("/zarr.json") else {
            return no(format!("key {key:?} is not a document's"));
        };
        let end = skip_string(bytes, value).ok_or_else(|| layout(&key))?;
        docs.push((path.to_string(), entry..end));
        from = end;
    }
    // The documents alone, parsed: the nodes, their kinds and grids.
    let mut sub = Vec::with_capacity(root_end + 64 * docs.len());
    sub.extend_from_slice(&bytes[..root_end]);
    for (_, d) in &docs {
        sub.extend_from_slice(&bytes[d.clone()]);
    }
    let documents = sub.len();
    sub.extend_from_slice(b"}}");
    let meta = parse_refs(&sub, origin, limits).map_err(|e| NotSpliced(e.to_string()))?;
    sub.truncate(documents);
    let ds = &meta.dataset;
    if docs.len() + 1 != ds.groups.len() + ds.arrays.len() {
        return no("its documents are not one per node");
    }
    let mut arrays = BTreeMap::new();
    for (i, (path, doc)) in docs.iter().enumerate() {
        let next = docs.get(i + 1).map_or(refs_end, |(_, d)| d.start);
        let chunks = doc.end..next;
        let Some(array) = ds.arrays.get(path) else {
            if !chunks.is_empty() {
                return no(format!("entries follow the document of group {path:?}"));
            }
            continue;
        };
        let prefix = entry_prefix(path);
        if !chunks.is_empty() && !bytes[chunks.clone()].starts_with(&prefix) {
            return no(format!("what follows {path}'s document is not its chunks"));
        }
        let axis = array.dimension_names.iter().position(|d| d == dim);
        let n_chunks = array.grid.n_chunks().unwrap_or(u64::MAX);
        let read = match axis {
            None => Read::Nothing,
            Some(_) if n_chunks <= whole_up_to => {
                sub.extend_from_slice(&bytes[chunks.clone()]);
                Read::Whole
            }
            Some(0) => {
                let rows = &array.grid.dims()[0];
                let n = array.grid.grid_shape()[0];
                let mut runs: Vec<Range<u64>> = Vec::new();
                for span in spans.iter().filter(|s| !s.is_empty()) {
                    let a = rows.chunk_of(span.start).unwrap_or(n);
                    let b = match span.end {
                        u64::MAX => u64::MAX,
                        e => rows.chunk_of(e - 1).map_or(n, |c| c + 1),
                    };
                    match runs.last_mut() {
                        Some(last) if a < last.start => {
                            return no("the changed elements are not in order");
                        }
                        Some(last) if a <= last.end => last.end = last.end.max(b),
                        _ => runs.push(a..b),
                    }
                }
                let mut parts = Vec::with_capacity(runs.len());
                for run in runs {
                    let a = first_at(bytes, chunks.clone(), path, &prefix, run.start)?;
                    let b = match run.end {
                        u64::MAX => chunks.end,
                        e => first_at(bytes, a..chunks.end, path, &prefix, e)?,
                    };
                    let entries = entries(bytes, a..b, path)?;
                    sub.extend_from_slice(&bytes[a..b]);
                    parts.push(Part {
                        chunks: run,
                        entries,
                        end: b,
                    });
                }
                Read::Parts(parts)
            }
            Some(k) => {
                return no(format!(
                    "{path} is along {dim:?} on its axis {k}, not its first"
                ));
            }
        };
        if arrays
            .insert(path.clone(), Block { chunks, read })
            .is_some()
        {
            return no(format!("{path} has two documents"));
        }
    }
    if arrays.len() != ds.arrays.len() {
        return no("an array has no document of its own");
    }
    drop(meta);
    // The documents and the chunks read, parsed together.
    sub.extend_from_slice(b"}}");
    let dataset = parse_refs(&sub, origin, limits)
        .map_err(|e| NotSpliced(e.to_string()))?
        .dataset;
    Ok(TailRefs {
        dataset,
        layout: Layout {
            len: bytes.len(),
            arrays,
        },
    })
}

fn layout(what: &str) -> NotSpliced {
    NotSpliced(format!("{what} is not where vzarr writes it"))
}

/// `,"<path>/c` as JSON text: how every chunk entry of the array at `path` starts.
fn entry_prefix(path: &str) -> Vec<u8> {
    let quoted = serde_json::to_string(&format!("{path}/c")).expect("a string serialises");
    let mut p = b",".to_vec();
    p.extend_from_slice(&quoted.as_bytes()[..quoted.len() - 1]);
    p
}

/// Where the first entry of `block` (the array at `path`'s entries, each starting with
/// `prefix`, in C order) whose index along the first axis is `i` or more starts (the block's
/// end if none is): bisected by byte position down to a few kilobytes, then entry by entry.
fn first_at(
    bytes: &[u8],
    block: Range<usize>,
    path: &str,
    prefix: &[u8],
    i: u64,
) -> Result<usize, NotSpliced> {
    // `lo` starts an entry before index `i` (or is the block's start); none starts between
    // `mid` and `hi` where the search found none.
    let (mut lo, mut hi) = (block.start, block.end);
    while hi - lo > BISECT_BYTES {
        let mid = lo + (hi - lo) / 2;
        match memmem::find(&bytes[mid..hi], prefix) {
            None => hi = mid,
            Some(k) => {
                let (index, _) = entry_at(bytes, mid + k, block.end, path)?;
                if index.first().copied().unwrap_or(0) >= i {
                    hi = mid + k;
                } else {
                    lo = mid + k;
                }
            }
        }
    }
    let mut at = lo;
    let mut last: Option<Vec<u64>> = None;
    while at < block.end {
        let (index, end) = entry_at(bytes, at, block.end, path)?;
        if last.as_ref().is_some_and(|l| *l >= index) {
            return no(format!("{path}'s chunk entries are not in C order"));
        }
        if index.first().copied().unwrap_or(0) >= i {
            return Ok(at);
        }
        last = Some(index);
        at = end;
    }
    Ok(block.end)
}

/// The chunk entry of the array at `path` that starts at `at` (with its comma) and ends by
/// `limit`: its chunk index and its end.
fn entry_at(
    bytes: &[u8],
    at: usize,
    limit: usize,
    path: &str,
) -> Result<(Vec<u64>, usize), NotSpliced> {
    let bad = || {
        NotSpliced(format!(
            "{path}'s chunk entry at byte {at} is not as vzarr writes it"
        ))
    };
    if bytes.get(at) != Some(&b',') {
        return Err(bad());
    }
    let key_end = skip_string(bytes, at + 1).ok_or_else(bad)?;
    let key: String = serde_json::from_slice(&bytes[at + 1..key_end]).map_err(|_| bad())?;
    if bytes.get(key_end) != Some(&b':') {
        return Err(bad());
    }
    let end = skip_value(bytes, key_end + 1).ok_or_else(bad)?;
    if end > limit {
        return no(format!(
            "{path}'s chunk entry at byte {at} runs past its block"
        ));
    }
    let index = split_chunk_key(&key, |p| p == path)
        .and_then(|(_, rest)| parse_chunk_indices(rest).ok())
        .ok_or_else(bad)?;
    Ok((index, end))
}

/// The chunk entries of the array at `path` in `range`: each one's first index and start,
/// in C order (checked).
fn entries(bytes: &[u8], range: Range<usize>, path: &str) -> Result<Vec<(u64, usize)>, NotSpliced> {
    let mut out = Vec::new();
    let mut last: Option<Vec<u64>> = None;
    let mut i = range.start;
    while i < range.end {
        let (index, end) = entry_at(bytes, i, range.end, path)?;
        if last.as_ref().is_some_and(|l| *l >= index) {
            return no(format!(
                "{path}'s chunk entries are not in C order at byte {i}"
            ));
        }
        out.push((index.first().copied().unwrap_or(0), i));
        last = Some(index);
        i = end;
    }
    Ok(out)
}

/// The end of the JSON string starting at `pos`.
fn skip_string(bytes: &[u8], pos: usize) -> Option<usize> {
    if bytes.get(pos) != Some(&b'"') {
        return None;
    }
    let mut i = pos + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[i] == b'\\' {
            i += 2;
        } else {
            return Some(i + 1);
        }
    }
}

/// The end of the JSON string, object or array starting at `pos` (its brackets matched; what
/// is inside is checked when it is parsed).
fn skip_value(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => skip_string(bytes, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            loop {
                match *bytes.get(i)? {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => None,
    }
}

/// Writes `ds`, read from the reference file `old` ([`read_tail`], which gave `layout`) and
/// changed there, to `out`: the head and the documents rendered; of each array in `changed`
/// (by path: the axis and the runs of chunk indices along it that changed, in order and
/// apart, an end of `u64::MAX` running to the last chunk) the entries around those runs
/// copied from `old`, the runs rendered; every other array's entries copied. Fails if `ds`
/// changed what was not read.
pub fn write_spliced<W: Write>(
    ds: &VirtualDataset,
    old: &[u8],
    layout: &Layout,
    changed: &BTreeMap<String, (usize, Vec<Range<u64>>)>,
    out: W,
) -> Result<W, WriteError> {
    let mut sink = Plain(out);
    splice_into(ds, old, layout, changed, &mut sink)?;
    Ok(sink.0)
}

/// Where a spliced file goes: what is rendered written, what is kept of the old file copied.
trait Sink: Write {
    /// Copies bytes `range` of the old file, `old`.
    fn keep(&mut self, old: &[u8], range: Range<usize>) -> std::io::Result<()>;
}

/// A writer: the kept bytes written from memory.
struct Plain<W>(W);

impl<W: Write> Write for Plain<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write> Sink for Plain<W> {
    fn keep(&mut self, old: &[u8], range: Range<usize>) -> std::io::Result<()> {
        self.0.write_all(&old[range])
    }
}

/// A temporary file beside the old one: the kept bytes copied from file to file by the
/// kernel (`io::copy` of two files, `copy_file_range` on Linux), which costs a third of
/// writing them from memory on this project's machines (BENCHMARKS.md, "Living archives").
struct Copying<'a> {
    out: TempWriter,
    from: &'a std::fs::File,
}

impl Write for Copying<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Sink for Copying<'_> {
    fn keep(&mut self, _old: &[u8], range: Range<usize>) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        self.out.flush()?;
        let mut from = self.from;
        from.seek(SeekFrom::Start(range.start as u64))?;
        let want = range.len() as u64;
        let copied = std::io::copy(&mut from.take(want), &mut self.out.get_ref().as_file())?;
        if copied != want {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "the file changed while it was copied: it ended after {copied} of {want} bytes at {}",
                    range.start
                ),
            ));
        }
        Ok(())
    }
}

/// [`write_spliced`] into `out`.
fn splice_into<S: Sink>(
    ds: &VirtualDataset,
    old: &[u8],
    layout: &Layout,
    changed: &BTreeMap<String, (usize, Vec<Range<u64>>)>,
    out: &mut S,
) -> Result<(), WriteError> {
    if old.len() != layout.len {
        return Err(WriteError::Splice("not the file that was read".into()));
    }
    ds.validate()?;
    let io_err = |source| WriteError::Io {
        path: "<output>".into(),
        source,
    };
    write_head(ds, &mut *out).map_err(io_err)?;
    for (path, array) in &ds.arrays {
        let Some(block) = layout.arrays.get(path) else {
            return Err(WriteError::Splice(format!("{path} is not in the file")));
        };
        let mut doc = Vec::new();
        document(&mut doc, &meta_key(path), &array.zarr_metadata());
        out.write_all(&doc).map_err(io_err)?;
        let len = array.manifest.len();
        let stride: u64 = array.grid.grid_shape().iter().skip(1).product();
        let linear = |i: u64| {
            i.checked_mul(stride)
                .and_then(|f| usize::try_from(f).ok())
                .map_or(len, |f| f.min(len))
        };
        let render_run = |out: &mut S, run: Range<usize>| -> Result<(), WriteError> {
            let mut a = run.start;
            while a < run.end {
                let b = run.end.min(a.saturating_add(PIECE_CHUNKS));
                let piece = Piece {
                    path,
                    array,
                    first: false,
                    range: a..b,
                };
                out.write_all(&render(&piece)).map_err(io_err)?;
                a = b;
            }
            Ok(())
        };
        match (&block.read, changed.get(path)) {
            (Read::Whole, _) => render_run(out, 0..len)?,
            (_, None) => out.keep(old, block.chunks.clone()).map_err(io_err)?,
            (Read::Parts(parts), Some((0, runs))) => {
                let mut copied = block.chunks.start;
                for run in runs.iter().filter(|r| !r.is_empty()) {
                    let part = parts.iter().find(|p| {
                        p.chunks.start <= run.start
                            && (run.end <= p.chunks.end || p.chunks.end == u64::MAX)
                    });
                    let Some(part) = part else {
                        return Err(WriteError::Splice(format!(
                            "{path} changed from chunk {}, where the file was not read",
                            run.start
                        )));
                    };
                    let from = part.at(run.start).unwrap_or(part.end);
                    let to = match run.end {
                        u64::MAX => block.chunks.end,
                        e => part.at(e).unwrap_or(part.end),
                    };
                    if from < copied {
                        return Err(WriteError::Splice(format!(
                            "{path}'s changed chunks overlap"
                        )));
                    }
                    out.keep(old, copied..from).map_err(io_err)?;
                    render_run(out, linear(run.start)..linear(run.end))?;
                    copied = to;
                }
                out.keep(old, copied..block.chunks.end).map_err(io_err)?;
            }
            (_, Some(_)) => {
                return Err(WriteError::Splice(format!(
                    "{path} changed where the file was not read"
                )));
            }
        }
    }
    out.write_all(b"}}\n").map_err(io_err)?;
    Ok(())
}

/// [`write_spliced`] to `path`, atomically (see [`crate::write_file`]); with `from`, the open
/// file whose bytes `old` are (the caller makes sure they still are), the kept bytes are
/// copied from it file to file.
pub fn write_file_spliced(
    ds: &VirtualDataset,
    old: &[u8],
    from: Option<&std::fs::File>,
    layout: &Layout,
    changed: &BTreeMap<String, (usize, Vec<Range<u64>>)>,
    path: &Path,
) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let state = |f: &std::fs::File| -> Result<(u64, std::time::SystemTime), WriteError> {
        let m = f.metadata().map_err(io_err)?;
        Ok((m.len(), m.modified().map_err(io_err)?))
    };
    write_atomically(path, |w| match from {
        Some(from) => {
            let before = state(from)?;
            let mut sink = Copying { out: w, from };
            splice_into(ds, old, layout, changed, &mut sink)?;
            // Before the new file replaces it: what was copied is what was read.
            if state(from)? != before || before.0 != old.len() as u64 {
                return Err(WriteError::Splice(
                    "the file changed while it was copied".into(),
                ));
            }
            Ok(sink.out)
        }
        None => write_spliced(ds, old, layout, changed, w),
    })
}

#[cfg(test)]
mod tests;
