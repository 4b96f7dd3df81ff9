//! Writing: a [`VirtualDataset`] as kerchunk v1 references, streamed, byte-identical for the
//! same dataset, written atomically to a file.

use std::io::{self, Write};
use std::path::Path;

use base64::Engine as _;
use vzarr_core::{ChunkRef, VirtualArray, VirtualDataset, group_metadata};

/// Errors of writing references.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The dataset is inconsistent.
    #[error("invalid dataset: {0}")]
    Invalid(#[from] vzarr_core::CoreError),
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
pub fn chunk_key(path: &str, index: &[u64]) -> String {
    let mut key = String::with_capacity(path.len() + 3 + index.len() * 4);
    if !path.is_empty() {
        key.push_str(path);
        key.push('/');
    }
    key.push('c');
    for i in index {
        key.push('/');
        key.push_str(&i.to_string());
    }
    key
}

fn meta_key(path: &str) -> String {
    if path.is_empty() {
        "zarr.json".to_string()
    } else {
        format!("{path}/zarr.json")
    }
}

struct RefsWriter<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> RefsWriter<W> {
    fn key(&mut self, key: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, key)?;
        self.out.write_all(b":")
    }

    fn document(&mut self, key: &str, doc: &serde_json::Value) -> io::Result<()> {
        self.key(key)?;
        let text = serde_json::to_string(doc)?;
        serde_json::to_writer(&mut self.out, &text)?;
        Ok(())
    }

    fn array(&mut self, path: &str, array: &VirtualArray) -> io::Result<()> {
        self.document(&meta_key(path), &array.zarr_metadata())?;
        let b64 = base64::engine::general_purpose::STANDARD;
        for (i, chunk) in array.manifest.iter_stored() {
            match chunk {
                ChunkRef::Missing => {}
                ChunkRef::Inline(bytes) => {
                    let index = array.grid.chunk_index(i as u64);
                    self.key(&chunk_key(path, &index))?;
                    let mut s = String::from("base64:");
                    b64.encode_string(bytes, &mut s);
                    serde_json::to_writer(&mut self.out, &s)?;
                }
                ChunkRef::Range {
                    source,
                    offset,
                    length,
                } => {
                    let index = array.grid.chunk_index(i as u64);
                    self.key(&chunk_key(path, &index))?;
                    self.out.write_all(b"[")?;
                    serde_json::to_writer(&mut self.out, source)?;
                    write!(self.out, ",{offset},{length}]")?;
                }
            }
        }
        Ok(())
    }
}

/// Writes the references of `ds` to `out`.
pub fn write_refs<W: Write>(ds: &VirtualDataset, out: W) -> Result<W, WriteError> {
    ds.validate()?;
    let io_err = |source| WriteError::Io {
        path: "<output>".into(),
        source,
    };
    let mut w = RefsWriter { out, first: true };
    (|| -> io::Result<()> {
        w.out.write_all(br#"{"version":1,"vzarr":"#)?;
        serde_json::to_writer(&mut w.out, &ds.provenance)?;
        w.out.write_all(br#","refs":{"#)?;
        let root = ds.groups.get("").cloned().unwrap_or_default();
        w.document("zarr.json", &group_metadata(&root.attributes))?;
        for (path, group) in ds.groups.iter().filter(|(p, _)| !p.is_empty()) {
            w.document(&meta_key(path), &group_metadata(&group.attributes))?;
        }
        for (path, array) in &ds.arrays {
            w.array(path, array)?;
        }
        w.out.write_all(b"}}\n")
    })()
    .map_err(io_err)?;
    Ok(w.out)
}

/// The references of `ds` as bytes.
pub fn to_bytes(ds: &VirtualDataset) -> Result<Vec<u8>, WriteError> {
    write_refs(ds, Vec::new())
}

/// Writes the references of `ds` to `path` atomically: a temporary file in the same directory,
/// flushed and synced, then renamed over `path`. On error nothing is left at `path`.
pub fn write_file(ds: &VirtualDataset, path: &Path) -> Result<(), WriteError> {
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
    let buf = write_refs(ds, buf).map_err(|e| match e {
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
        let root: Value = serde_json::from_str(refs["zarr.json"].as_str().unwrap()).unwrap();
        assert_eq!(
            root,
            json!({"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}})
        );
        assert_eq!(refs["g/v/c/0"], json!(["file:///x/a b.nc", 10, 8]));
        assert_eq!(refs["g/v/c/1"], json!("base64:AACAPw=="));
        let meta: Value = serde_json::from_str(refs["g/v/zarr.json"].as_str().unwrap()).unwrap();
        assert_eq!(meta["chunk_grid"]["name"], "rectilinear");
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
