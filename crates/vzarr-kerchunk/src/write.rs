//! Writing: a [`VirtualDataset`] as kerchunk v1 references, streamed, byte-identical for the
//! same dataset, written atomically to a file.

use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;

use base64::Engine as _;
use rayon::prelude::*;
use vzarr_core::{ChunkRef, VirtualArray, VirtualDataset};

use crate::consolidated;

/// Errors of writing references.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The dataset is inconsistent.
    #[error("invalid dataset: {0}")]
    Invalid(#[from] vzarr_core::CoreError),
    /// The dataset cannot be written over the reference file it was read from at its tail
    /// ([`crate::write_spliced`]): it changed what was not read.
    #[error("cannot write the append over the file read: {0}")]
    Splice(String),
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Io {
        /// Output path.
        path: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// The store key of the chunk at `index` of the array at `path` (default encoding, `/`); the
/// inverse of [`crate::split_chunk_key`] and [`crate::parse_chunk_indices`].
pub use vzarr_core::chunk_key;

pub(crate) fn meta_key(path: &str) -> String {
    if path.is_empty() {
        "zarr.json".to_string()
    } else {
        format!("{path}/zarr.json")
    }
}

/// At most this many stored chunks are rendered as one piece of output (one parallel task).
pub(crate) const PIECE_CHUNKS: usize = 1 << 14;

/// One array's metadata (for its first piece) and the stored chunks at the positions `range`.
pub(crate) struct Piece<'a> {
    pub(crate) path: &'a str,
    pub(crate) array: &'a VirtualArray,
    pub(crate) first: bool,
    pub(crate) range: Range<usize>,
}

/// The pieces of `array`: each holds at most [`PIECE_CHUNKS`] stored chunks; there is always
/// one, which carries the metadata.
fn pieces<'a>(path: &'a str, array: &'a VirtualArray) -> impl Iterator<Item = Piece<'a>> + 'a {
    let len = array.manifest.len();
    let mut starts: Vec<usize> = array
        .manifest
        .iter_stored()
        .map(|(i, _)| i)
        .step_by(PIECE_CHUNKS)
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([len]).collect();
    starts
        .into_iter()
        .zip(ends)
        .enumerate()
        .map(move |(k, (a, b))| Piece {
            path,
            array,
            first: k == 0,
            range: a..b,
        })
}

/// Appends `,"key":` (a key that is never the first of the object).
fn key(out: &mut Vec<u8>, key: &str) {
    out.push(b',');
    serde_json::to_writer(&mut *out, key).expect("writing to a Vec");
    out.push(b':');
}

/// Appends `,"key":"<the document as JSON text>"`.
pub(crate) fn document(out: &mut Vec<u8>, k: &str, doc: &serde_json::Value) {
    key(out, k);
    let text = serde_json::to_string(doc).expect("a JSON value serialises");
    serde_json::to_writer(&mut *out, &text).expect("writing to a Vec");
}

/// Renders one piece: the array's metadata if it is the first, then its chunks' entries.
pub(crate) fn render(p: &Piece<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * p.range.len().min(PIECE_CHUNKS) + 256);
    if p.first {
        document(&mut out, &meta_key(p.path), &p.array.zarr_metadata());
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    // `,"<path>/c` with the path escaped once; the indices are appended per chunk.
    let mut prefix = Vec::new();
    prefix.extend_from_slice(b",");
    let escaped = serde_json::to_string(&chunk_key(p.path, &[])).expect("a string serialises");
    prefix.extend_from_slice(&escaped.as_bytes()[..escaped.len() - 1]);
    // The last source's escaped URL, by the address of its text (interned: one per source).
    let mut last_source: (*const u8, usize, Vec<u8>) = (std::ptr::null(), 0, Vec::new());
    let mut idx = Vec::new();
    let mut num = itoa::Buffer::new();
    for (i, chunk) in p.array.manifest.iter_stored_in(p.range.clone()) {
        if chunk == ChunkRef::Missing {
            continue;
        }
        p.array.grid.chunk_index_into(i as u64, &mut idx);
        out.extend_from_slice(&prefix);
        for v in &idx {
            out.push(b'/');
            out.extend_from_slice(num.format(*v).as_bytes());
        }
        out.extend_from_slice(b"\":");
        match chunk {
            ChunkRef::Missing => {}
            ChunkRef::Inline(bytes) => {
                let mut s = String::from("base64:");
                b64.encode_string(bytes, &mut s);
                serde_json::to_writer(&mut out, &s).expect("writing to a Vec");
            }
            ChunkRef::Range {
                source,
                offset,
                length,
            } => {
                if (source.as_ptr(), source.len()) != (last_source.0, last_source.1) {
                    last_source = (
                        source.as_ptr(),
                        source.len(),
                        serde_json::to_vec(source).expect("a string serialises"),
                    );
                }
                out.push(b'[');
                out.extend_from_slice(&last_source.2);
                out.push(b',');
                out.extend_from_slice(num.format(offset).as_bytes());
                out.push(b',');
                out.extend_from_slice(num.format(length).as_bytes());
                out.push(b']');
            }
        }
    }
    out
}

/// Writes what precedes the arrays: the provenance block, the root's `zarr.json` (with the
/// consolidated metadata of every node) and every other group's.
pub(crate) fn write_head<W: Write>(ds: &VirtualDataset, out: &mut W) -> io::Result<()> {
    out.write_all(br#"{"version":1,"vzarr":"#)?;
    serde_json::to_writer(&mut *out, &ds.provenance)?;
    out.write_all(br#","refs":{"zarr.json":"#)?;
    let nodes: Vec<(&str, serde_json::Value)> = ds
        .groups
        .keys()
        .filter(|p| !p.is_empty())
        .map(|p| (p.as_str(), ds.group_document(p, false)))
        .chain(
            ds.arrays
                .iter()
                .map(|(p, a)| (p.as_str(), a.zarr_metadata())),
        )
        .collect();
    let root = consolidated::consolidate(
        &ds.group_document("", false),
        nodes.iter().map(|(p, d)| (*p, d)),
        "",
    );
    let text = serde_json::to_string(&root)?;
    serde_json::to_writer(&mut *out, &text)?;
    let mut buf = Vec::new();
    for path in ds.groups.keys().filter(|p| !p.is_empty()) {
        document(&mut buf, &meta_key(path), &ds.group_document(path, false));
    }
    out.write_all(&buf)
}

/// Writes the references of `ds` to `out`. Arrays are rendered in pieces on the current
/// rayon thread pool, a few pieces per thread at a time (bounded memory), and written in
/// order: the output does not depend on the number of threads.
pub fn write_refs<W: Write>(ds: &VirtualDataset, mut out: W) -> Result<W, WriteError> {
    ds.validate()?;
    let io_err = |source| WriteError::Io {
        path: "<output>".into(),
        source,
    };
    (|| -> io::Result<()> {
        write_head(ds, &mut out)?;
        let window = 2 * rayon::current_num_threads().max(1);
        let mut all = ds.arrays.iter().flat_map(|(p, a)| pieces(p, a)).peekable();
        while all.peek().is_some() {
            let batch: Vec<Piece<'_>> = all.by_ref().take(window).collect();
            let rendered: Vec<Vec<u8>> = batch.par_iter().map(render).collect();
            for r in rendered {
                out.write_all(&r)?;
            }
        }
        out.write_all(b"}}\n")
    })()
    .map_err(io_err)?;
    Ok(out)
}

/// The references of `ds` as bytes.
pub fn to_bytes(ds: &VirtualDataset) -> Result<Vec<u8>, WriteError> {
    write_refs(ds, Vec::new())
}

/// Writes the references of `ds` to `path` atomically: a temporary file in the same directory,
/// flushed and synced, then renamed over `path`. On error nothing is left at `path`.
pub fn write_file(ds: &VirtualDataset, path: &Path) -> Result<(), WriteError> {
    write_atomically(path, |w| write_refs(ds, w))
}

/// The temporary file an atomic write writes to.
pub(crate) type TempWriter = io::BufWriter<tempfile::NamedTempFile>;

/// Writes what `write` writes to `path` atomically (see [`write_file`]).
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(TempWriter) -> Result<TempWriter, WriteError>,
) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    // Temporary files are created private (0600); the output is an ordinary file (0644).
    let tmp = tempfile::Builder::new()
        .prefix(".vzarr-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(&dir)
        .map_err(io_err)?;
    let buf = io::BufWriter::with_capacity(1 << 20, tmp);
    let buf = write(buf).map_err(|e| match e {
        WriteError::Io { source, .. } => io_err(source),
        other => other,
    })?;
    let tmp = buf.into_inner().map_err(|e| io_err(e.into_error()))?;
    tmp.as_file().sync_all().map_err(io_err)?;
    tmp.persist(path).map_err(|e| io_err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use vzarr_core::{ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue, Group};

    fn dataset() -> VirtualDataset {
        let mut ds = VirtualDataset::new();
        ds.groups
            .get_mut("")
            .unwrap()
            .attributes
            .insert("title".into(), json!("t"));
        ds.groups.insert("g".into(), Group::default());
        let grid = ChunkGrid::new(vec![DimGrid::varying(vec![2, 1], 3).unwrap()]);
        let mut manifest = ChunkManifest::new_missing(2);
        let s = manifest.intern("file:///x/a b.nc").unwrap();
        manifest.set_range(0, s, 10, 8).unwrap();
        manifest.set_inline(1, vec![0, 0, 128, 63]).unwrap();
        ds.arrays.insert(
            "g/v".into(),
            VirtualArray {
                data_type: DataType::Float32,
                endian: Endian::Little,
                fill_value: FillValue::zero(DataType::Float32),
                codecs: vec![],
                dimension_names: vec!["t".into()],
                attributes: Default::default(),
                grid,
                manifest,
            },
        );
        let scalar = VirtualArray {
            data_type: DataType::Int8,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Int8),
            codecs: vec![],
            dimension_names: vec![],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[], &[]).unwrap(),
            manifest: ChunkManifest::new_missing(1),
        };
        ds.arrays.insert("s".into(), scalar);
        ds
    }

    #[test]
    fn layout_and_values() {
        let bytes = to_bytes(&dataset()).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["version"], 1);
        let refs = v["refs"].as_object().unwrap();
        let keys: Vec<&str> = refs.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            vec![
                "zarr.json",
                "g/zarr.json",
                "g/v/zarr.json",
                "g/v/c/0",
                "g/v/c/1",
                "s/zarr.json"
            ]
        );
        let mut root: Value = serde_json::from_str(refs["zarr.json"].as_str().unwrap()).unwrap();
        // The consolidated block repeats every node's document, by depth then path.
        let block = root
            .as_object_mut()
            .unwrap()
            .shift_remove("consolidated_metadata");
        assert_eq!(
            root,
            json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}})
        );
        let block = block.unwrap();
        let members: Vec<&String> = block["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(members, ["g", "s", "g/v"]);
        for (k, doc) in block["metadata"].as_object().unwrap() {
            let mut own: Value =
                serde_json::from_str(refs[&format!("{k}/zarr.json")].as_str().unwrap()).unwrap();
            if own["node_type"] == "group" {
                own["consolidated_metadata"] =
                    json!({"kind": "inline", "must_understand": false, "metadata": {}});
            }
            assert_eq!(*doc, own, "{k}");
        }
        assert_eq!(refs["g/v/c/0"], json!(["file:///x/a b.nc", 10, 8]));
        assert_eq!(refs["g/v/c/1"], json!("base64:AACAPw=="));
        let meta: Value = serde_json::from_str(refs["g/v/zarr.json"].as_str().unwrap()).unwrap();
        assert_eq!(meta["chunk_grid"]["name"], "rectilinear");
    }

    /// A 2-d array of `n` x 3 chunks over several sources, with inline and missing chunks: more
    /// than one piece.
    fn large(n: u64) -> VirtualDataset {
        let mut ds = VirtualDataset::new();
        let grid = ChunkGrid::regular(&[n * 2, 9], &[2, 3]).unwrap();
        let total = (n * 3) as usize;
        let mut manifest = ChunkManifest::new_missing(total);
        let ids: Vec<u32> = (0..5)
            .map(|k| manifest.intern(&format!("s3://b/\"q\"/f{k}.nc")).unwrap())
            .collect();
        for i in 0..total {
            match i % 7 {
                0 => {}
                1 => manifest.set_inline(i, vec![i as u8; 3]).unwrap(),
                _ => manifest
                    .set_range(i, ids[i / 1000 % 5], i as u64 * 10, 7)
                    .unwrap(),
            }
        }
        ds.arrays.insert(
            "a\"b".into(),
            VirtualArray {
                data_type: DataType::Int8,
                endian: Endian::Little,
                fill_value: FillValue::zero(DataType::Int8),
                codecs: vec![],
                dimension_names: vec!["x".into(), "y".into()],
                attributes: Default::default(),
                grid,
                manifest,
            },
        );
        ds
    }

    #[test]
    fn every_chunk_written_whatever_the_threads() {
        let ds = large(40_000);
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| to_bytes(&ds).unwrap())
        };
        let one = run(1);
        assert_eq!(one, run(3), "output depends on the number of threads");
        let v: Value = serde_json::from_slice(&one).unwrap();
        let refs = v["refs"].as_object().unwrap();
        let array = &ds.arrays["a\"b"];
        assert_eq!(refs.len(), 2 + array.manifest.stored());
        let mut seen = 0;
        for (i, chunk) in array.manifest.iter_stored() {
            let idx = array.grid.chunk_index(i as u64);
            let k = chunk_key("a\"b", &idx);
            let want = match chunk {
                ChunkRef::Missing => unreachable!(),
                ChunkRef::Inline(b) => json!(format!(
                    "base64:{}",
                    base64::engine::general_purpose::STANDARD.encode(b)
                )),
                ChunkRef::Range {
                    source,
                    offset,
                    length,
                } => json!([source, offset, length]),
            };
            assert_eq!(refs[&k], want, "{k}");
            seen += 1;
        }
        assert!(seen > 2 * PIECE_CHUNKS);
    }

    #[test]
    fn chunk_keys() {
        assert_eq!(chunk_key("tas", &[0, 1, 2]), "tas/c/0/1/2");
        assert_eq!(chunk_key("g/s", &[]), "g/s/c");
    }

    #[test]
    fn deterministic_and_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_file(&dataset(), &p).unwrap();
        let a = std::fs::read(&p).unwrap();
        write_file(&dataset(), &p).unwrap();
        assert_eq!(a, std::fs::read(&p).unwrap());
        assert_eq!(a, to_bytes(&dataset()).unwrap());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
        // Only the output is left in the directory.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn invalid_dataset_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        let mut ds = dataset();
        ds.arrays.get_mut("g/v").unwrap().manifest = ChunkManifest::new_missing(5);
        assert!(write_file(&ds, &p).is_err());
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
