//! Appends at the tail of a reference file that neither parse nor render it whole.
//!
//! A reference file vzarr wrote has a fixed layout (see the crate documentation): the
//! provenance block, the root's `zarr.json`, every other group's, then each array's
//! `zarr.json` followed by its chunk entries in C order over its grid, without whitespace. An
//! append along a dimension changes the provenance, the documents and, of each array along the
//! dimension, the chunks from the one holding the first element of the output's last file on.
//! Where the dimension is the array's first axis, those are the last entries of its block.
//!
//! [`read_tail`] reads what an append can change: every document and, of the arrays along the
//! dimension, the entries from that chunk on (arrays of at most `whole_up_to` chunks whole).
//! It finds them by substring searches, which JSON's grammar makes exact (a `,"` or a `":"`
//! never falls inside a string, where every quote is escaped), and parses those parts alone,
//! through [`parse_refs`] and its checks.
//! [`write_spliced`] writes the extended dataset: the head and every document rendered, each
//! array's entries before its changed chunks copied as they are, the changed chunks rendered.
//! For a file this writer wrote, that is byte for byte what [`crate::write_refs`] writes for
//! the whole dataset.
//!
//! A file in any other layout (another writer's, one edited by hand, an array extended along
//! a later axis) is not spliced: [`read_tail`] says why, and the caller reads it whole.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use memchr::memmem;
use vzarr_core::VirtualDataset;

use crate::read::{ParseLimits, parse_chunk_indices, parse_refs, split_chunk_key};
use crate::write::{
    PIECE_CHUNKS, Piece, WriteError, document, meta_key, render, write_atomically, write_head,
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
    /// Those from `window` on (along the array's first axis): each entry's index along that
    /// axis and where the entry starts.
    Tail {
        window: usize,
        entries: Vec<(u64, usize)>,
    },
}

/// The start of every reference file vzarr writes.
const HEAD: &[u8] = br#"{"version":1,"vzarr":"#;
/// What follows the provenance block.
const REFS: &[u8] = br#","refs":{"zarr.json":"#;
/// The end of a non-root document's key, and the opening quote of its value.
const DOC_KEY_END: &[u8] = br#"/zarr.json":""#;
/// The first window read at the end of an array's entries (it grows fourfold until it holds
/// an entry before the changed chunks).
const FIRST_WINDOW: usize = 1 << 16;

/// Reads the reference file `bytes` (named `origin` in errors) for an append along `dim`
/// at its tail, from element `start` on: every document and, of the arrays along `dim`, the
/// chunks from the one holding `start` on (every chunk of an array of at most `whole_up_to`
/// chunks). `Err` says why the file cannot be read so (not in vzarr's layout, malformed, an
/// array along `dim` on another than its first axis): the caller then reads it whole, which
/// names what is malformed.
pub fn read_tail(
    bytes: &[u8],
    origin: &str,
    limits: ParseLimits,
    (dim, start): (&str, u64),
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
                let first = array.grid.dims()[0]
                    .chunk_of(start)
                    .unwrap_or(array.grid.grid_shape()[0]);
                let (window, entries) = tail_window(bytes, chunks.clone(), path, &prefix, first)?;
                if let Some(at) = entries.iter().find(|(i0, _)| *i0 >= first) {
                    sub.extend_from_slice(&bytes[at.1..chunks.end]);
                }
                Read::Tail { window, entries }
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

/// The entries at the end of `chunks` (the array at `path`'s, each starting with `prefix`)
/// from a window that starts at the block's start or holds an entry before chunk `first`
/// along the first axis: where the window starts, and each entry's first index and start.
fn tail_window(
    bytes: &[u8],
    chunks: Range<usize>,
    path: &str,
    prefix: &[u8],
    first: u64,
) -> Result<(usize, Vec<(u64, usize)>), NotSpliced> {
    let mut width = FIRST_WINDOW;
    loop {
        let guess = chunks.end.saturating_sub(width).max(chunks.start);
        let window = if guess == chunks.start {
            chunks.start
        } else {
            match memmem::find(&bytes[guess..chunks.end], prefix) {
                Some(k) => guess + k,
                None => {
                    width = width.saturating_mul(4);
                    continue;
                }
            }
        };
        let entries = entries(bytes, window..chunks.end, path)?;
        match entries.first() {
            Some((i0, _)) if *i0 >= first && window > chunks.start => {
                width = width.saturating_mul(4);
            }
            _ => return Ok((window, entries)),
        }
    }
}

/// The chunk entries of the array at `path` in `range`: each one's first index and start,
/// in C order (checked).
fn entries(bytes: &[u8], range: Range<usize>, path: &str) -> Result<Vec<(u64, usize)>, NotSpliced> {
    let mut out = Vec::new();
    let mut last: Option<Vec<u64>> = None;
    let mut i = range.start;
    while i < range.end {
        let bad = || {
            NotSpliced(format!(
                "{path}'s chunk entry at byte {i} is not as vzarr writes it"
            ))
        };
        if bytes[i] != b',' {
            return Err(bad());
        }
        let key_end = skip_string(bytes, i + 1).ok_or_else(bad)?;
        let key: String = serde_json::from_slice(&bytes[i + 1..key_end]).map_err(|_| bad())?;
        if bytes.get(key_end) != Some(&b':') {
            return Err(bad());
        }
        let end = skip_value(bytes, key_end + 1).ok_or_else(bad)?;
        let index = split_chunk_key(&key, |p| p == path)
            .and_then(|(_, rest)| parse_chunk_indices(rest).ok())
            .ok_or_else(bad)?;
        if last.as_ref().is_some_and(|l| *l >= index) {
            return no(format!(
                "{path}'s chunk entries are not in C order at {key:?}"
            ));
        }
        out.push((index.first().copied().unwrap_or(0), i));
        last = Some(index);
        i = end;
    }
    if i != range.end {
        return no(format!("{path}'s last chunk entry runs past its block"));
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

/// Writes `ds`, read at the tail of the reference file `old` ([`read_tail`], which gave
/// `layout`) and extended there, to `out`: the head and the documents rendered; of each array
/// in `changed` (by path: the axis and the first chunk index along it that changed) the
/// entries before that chunk copied from `old`, the others rendered; every other array's
/// entries copied. Fails if `ds` changed what was not read.
pub fn write_spliced<W: Write>(
    ds: &VirtualDataset,
    old: &[u8],
    layout: &Layout,
    changed: &BTreeMap<String, (usize, u64)>,
    mut out: W,
) -> Result<W, WriteError> {
    if old.len() != layout.len {
        return Err(WriteError::Splice("not the file that was read".into()));
    }
    ds.validate()?;
    let io_err = |source| WriteError::Io {
        path: "<output>".into(),
        source,
    };
    write_head(ds, &mut out).map_err(io_err)?;
    for (path, array) in &ds.arrays {
        let Some(block) = layout.arrays.get(path) else {
            return Err(WriteError::Splice(format!("{path} is not in the file")));
        };
        let mut doc = Vec::new();
        document(&mut doc, &meta_key(path), &array.zarr_metadata());
        out.write_all(&doc).map_err(io_err)?;
        let len = array.manifest.len();
        let rendered_from = match (&block.read, changed.get(path)) {
            (Read::Whole, _) => Some(0),
            (_, None) => {
                out.write_all(&old[block.chunks.clone()]).map_err(io_err)?;
                None
            }
            (Read::Tail { window, entries }, Some(&(0, from))) => {
                let before = *window == block.chunks.start
                    || entries.first().is_some_and(|(i0, _)| *i0 < from);
                if !before {
                    return Err(WriteError::Splice(format!(
                        "{path} changed from chunk {from}, before what was read"
                    )));
                }
                let boundary = entries
                    .iter()
                    .find(|(i0, _)| *i0 >= from)
                    .map_or(block.chunks.end, |(_, at)| *at);
                out.write_all(&old[block.chunks.start..boundary])
                    .map_err(io_err)?;
                let stride: u64 = array.grid.grid_shape().iter().skip(1).product();
                let first = from
                    .checked_mul(stride)
                    .and_then(|f| usize::try_from(f).ok())
                    .map_or(len, |f| f.min(len));
                Some(first)
            }
            (_, Some(_)) => {
                return Err(WriteError::Splice(format!(
                    "{path} changed where the file was not read"
                )));
            }
        };
        if let Some(first) = rendered_from {
            let mut a = first;
            while a < len {
                let b = len.min(a.saturating_add(PIECE_CHUNKS));
                let piece = Piece {
                    path,
                    array,
                    first: false,
                    range: a..b,
                };
                out.write_all(&render(&piece)).map_err(io_err)?;
                a = b;
            }
        }
    }
    out.write_all(b"}}\n").map_err(io_err)?;
    Ok(out)
}

/// [`write_spliced`] to `path`, atomically (see [`crate::write_file`]).
pub fn write_file_spliced(
    ds: &VirtualDataset,
    old: &[u8],
    layout: &Layout,
    changed: &BTreeMap<String, (usize, u64)>,
    path: &Path,
) -> Result<(), WriteError> {
    write_atomically(path, |w| write_spliced(ds, old, layout, changed, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::to_bytes;
    use vzarr_core::{
        ChunkGrid, ChunkManifest, ChunkRef, DataType, DimGrid, Endian, FillValue, Group,
        VirtualArray,
    };

    /// An array of `rows` rows along `dims[axis]` (chunks of 2 rows, then whatever
    /// `edges` says), `cols` columns in chunks of 2, every chunk referenced but one.
    fn array(dims: [&str; 2], axis: usize, edges: &[u64], cols: u64) -> VirtualArray {
        let rows: u64 = edges.iter().sum();
        let along = DimGrid::from_edges(edges.to_vec(), rows).unwrap();
        let across = DimGrid::fixed(2, cols).unwrap();
        let grid = if axis == 0 {
            ChunkGrid::new(vec![along, across])
        } else {
            ChunkGrid::new(vec![across, along])
        };
        let n = grid.n_chunks().unwrap() as usize;
        let mut manifest = ChunkManifest::new_missing(n);
        let s = manifest.intern("file:///data/a \"b\".nc").unwrap();
        for i in (0..n).filter(|i| *i != 1) {
            manifest
                .set_range(i, s, 100 * i as u64, 10 + i as u64)
                .unwrap();
        }
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: vec![],
            dimension_names: dims.iter().map(|d| d.to_string()).collect(),
            attributes: Default::default(),
            grid,
            manifest,
        }
    }

    /// A dataset along `time` whose chunks along it are `edges`: `tas` (time on its first
    /// axis), `t` (time alone, inline), `g/x` (no time) and `g/late` (time on its second
    /// axis).
    fn dataset(edges: &[u64]) -> VirtualDataset {
        let mut ds = VirtualDataset::new();
        ds.groups.insert("g".into(), Group::default());
        ds.arrays
            .insert("tas".into(), array(["time", "x"], 0, edges, 5));
        let rows: u64 = edges.iter().sum();
        let mut t = array(["time", "x"], 0, edges, 1);
        t.dimension_names.truncate(1);
        t.grid = ChunkGrid::new(vec![DimGrid::from_edges(edges.to_vec(), rows).unwrap()]);
        t.manifest = ChunkManifest::new_missing(edges.len());
        for i in 0..edges.len() {
            t.manifest.set_inline(i, vec![i as u8; 8]).unwrap();
        }
        ds.arrays.insert("t".into(), t);
        let mut x = array(["x", "y"], 0, &[2, 2, 1], 3);
        x.dimension_names = vec!["x".into(), "y".into()];
        ds.arrays.insert("g/x".into(), x);
        ds.arrays
            .insert("g/late".into(), array(["x", "time"], 1, edges, 3));
        ds
    }

    /// `ds` as a read at the tail holds it: chunks of the arrays along time from chunk
    /// `from` on (`whole` arrays whole), none of the others.
    fn as_read(ds: &VirtualDataset, from: u64, whole: &[&str]) -> VirtualDataset {
        let mut out = ds.clone();
        for (path, a) in out.arrays.iter_mut() {
            let axis = a.dimension_names.iter().position(|d| d == "time");
            let mut m = ChunkManifest::new_missing(a.manifest.len());
            let mut idx = Vec::new();
            for (i, r) in a.manifest.iter_stored() {
                a.grid.chunk_index_into(i as u64, &mut idx);
                let keep = match axis {
                    None => false,
                    Some(_) if whole.contains(&path.as_str()) => true,
                    Some(k) => idx[k] >= from,
                };
                match (keep, r) {
                    (
                        true,
                        ChunkRef::Range {
                            source,
                            offset,
                            length,
                        },
                    ) => {
                        let s = m.intern(source).unwrap();
                        m.set_range(i, s, offset, length).unwrap();
                    }
                    (true, ChunkRef::Inline(b)) => m.set_inline(i, b.to_vec()).unwrap(),
                    _ => {}
                }
            }
            a.manifest = m;
        }
        out
    }

    fn read(bytes: &[u8], start: u64, whole_up_to: u64) -> Result<TailRefs, NotSpliced> {
        read_tail(
            bytes,
            "refs.json",
            ParseLimits::default(),
            ("time", start),
            whole_up_to,
        )
    }

    #[test]
    fn an_append_written_over_the_tail_is_the_whole_write() {
        // Old: rows 2+2+2+1 (the last file, from row 6 on, in one padded chunk); new: that
        // file's chunk cut to 1 row and two more files of 2 and 3 rows.
        let mut old = dataset(&[2, 2, 2, 1]);
        old.arrays.shift_remove("g/late");
        let mut new = dataset(&[2, 2, 2, 1, 2, 3]);
        new.arrays.shift_remove("g/late");
        let bytes = to_bytes(&old).unwrap();
        let tail = read(&bytes, 6, 4).unwrap();
        // What was read: `t` whole (4 chunks), `tas` from chunk 3 on, nothing of `g/x`.
        assert_eq!(tail.dataset, as_read(&old, 3, &["t"]));
        let changed = BTreeMap::from([("tas".to_string(), (0, 3)), ("t".to_string(), (0, 3))]);
        let spliced = write_spliced(
            &as_read(&new, 3, &["t"]),
            &bytes,
            &tail.layout,
            &changed,
            Vec::new(),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(spliced).unwrap(),
            String::from_utf8(to_bytes(&new).unwrap()).unwrap()
        );
        // A window smaller than the tail grows until it holds an entry before it.
        let mut big_old = dataset(&[2; 3000]);
        let mut big_new = dataset(&[2; 3010]);
        big_old.arrays.shift_remove("g/late");
        big_new.arrays.shift_remove("g/late");
        let bytes = to_bytes(&big_old).unwrap();
        let tail = read(&bytes, 2 * 1500, 4).unwrap();
        assert_eq!(tail.dataset, as_read(&big_old, 1500, &[]));
        let changed =
            BTreeMap::from([("tas".to_string(), (0, 1500)), ("t".to_string(), (0, 1500))]);
        let spliced = write_spliced(
            &as_read(&big_new, 1500, &[]),
            &bytes,
            &tail.layout,
            &changed,
            Vec::new(),
        )
        .unwrap();
        assert!(spliced == to_bytes(&big_new).unwrap());
        // A change before what was read is refused, not written.
        let early = BTreeMap::from([("tas".to_string(), (0, 10))]);
        let e = write_spliced(&big_new, &bytes, &tail.layout, &early, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("before what was read"), "{e}");
        let other = BTreeMap::from([("g/x".to_string(), (0, 0))]);
        let e = write_spliced(&big_new, &bytes, &tail.layout, &other, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not read"), "{e}");
        let e = write_spliced(&big_new, &bytes[1..], &tail.layout, &changed, Vec::new());
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("not the file that was read")
        );
    }

    #[test]
    fn other_layouts_are_read_whole() {
        let ds = dataset(&[2, 2, 2]);
        let bytes = to_bytes(&ds).unwrap();
        // Along time on a later axis, with more chunks than are read whole.
        let e = read(&bytes, 4, 1).unwrap_err();
        assert!(e.0.contains("g/late") && e.0.contains("axis 1"), "{e}");
        // ... and with few enough, read whole.
        assert_eq!(
            read(&bytes, 4, 100).unwrap().dataset,
            as_read(&ds, 2, &["g/late", "t", "tas"])
        );
        // Another writer's layout: spaces, another key order, version 0.
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let pretty = serde_json::to_vec_pretty(&v).unwrap();
        assert!(read(&pretty, 4, 100).is_err());
        let refs = serde_json::to_vec(&v["refs"]).unwrap();
        assert!(read(&refs, 4, 100).is_err());
        let mut reordered = v.clone();
        let p = reordered
            .as_object_mut()
            .unwrap()
            .shift_remove("vzarr")
            .unwrap();
        reordered.as_object_mut().unwrap().insert("vzarr".into(), p);
        assert!(read(&serde_json::to_vec(&reordered).unwrap(), 4, 100).is_err());
        // Entries out of C order in what is read.
        let text = String::from_utf8(bytes.clone()).unwrap();
        let swapped = text.replace("\"tas/c/2/0\"", "\"tas/c/2/9\"");
        let e = read(swapped.as_bytes(), 4, 1).unwrap_err();
        assert!(e.0.contains("tas"), "{e}");
    }

    #[test]
    fn damaged_files_are_refused_without_panicking() {
        let mut ds = dataset(&[2, 1]);
        ds.arrays.shift_remove("g/x");
        let bytes = to_bytes(&ds).unwrap();
        // Every cut, and a byte changed at every fourth position to characters that structure
        // the file.
        for n in 0..bytes.len() {
            let _ = read(&bytes[..n], 2, 2);
            if n % 4 != 0 {
                continue;
            }
            for c in [b'"', b'\\', b',', b']'] {
                let mut b = bytes.clone();
                b[n] = c;
                if let Ok(t) = read(&b, 2, 2) {
                    let _ = write_spliced(&t.dataset, &b, &t.layout, &BTreeMap::new(), Vec::new());
                }
            }
        }
    }
}
