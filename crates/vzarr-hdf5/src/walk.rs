//! The scan: opening a source, walking its groups and links from the root (depth first, links
//! in name order, as the libhdf5 scanner does), and turning each dataset into a
//! [`VirtualArray`] (type, filters, fill value, chunk references, attributes, dimension
//! names) or a reason it is left out.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use vzarr_core::{Group, SkippedVariable, VirtualArray, VirtualDataset};
use vzarr_hdf5_format::{
    Attribute, DataspaceKind, File, Layout, LinkTarget, ObjectHeader, ObjectKind, UNLIMITED,
};
use vzarr_source::ByteSource;

use crate::attributes::{convert_attributes, string_attr};
use crate::dims::{DIMENSION_ONLY, ObjectNames, dimension_names};
use crate::fill::dataset_fill;
use crate::layout::{ChunkEncoding, Chunks, chunk_refs, compact_refs, contiguous_refs};
use crate::storage::SourceStorage;
use crate::types::{Mapped, dataset_type};
use crate::{Hdf5Error, ScanOptions, filters};

/// Bytes of an object header prefetched when a group names it (what the reader reads first).
const HEADER_PREFETCH: u64 = 512;

/// The state of one file's scan.
pub(crate) struct Ctx<'a> {
    /// The source's URL: the name of the file in messages and the source of every chunk
    /// reference.
    pub(crate) url: String,
    /// The file's size, which every byte range must stay within.
    pub(crate) file_size: u64,
    pub(crate) opts: &'a ScanOptions,
    /// The file's structure.
    pub(crate) file: &'a File,
    /// Its bytes.
    pub(crate) storage: &'a SourceStorage,
    /// What the scan found so far.
    pub(crate) out: VirtualDataset,
    /// Phony dimensions per group: (group, length) -> names.
    pub(crate) phony: HashMap<(String, u64), Vec<String>>,
    pub(crate) phony_count: usize,
    /// Object paths by address (or why they cannot all be named), built when the first
    /// reference is resolved.
    pub(crate) names: Option<Result<ObjectNames, String>>,
}

impl Ctx<'_> {
    pub(crate) fn object_error(&self, object: &str, reason: impl Into<String>) -> Hdf5Error {
        Hdf5Error::Object {
            url: self.url.clone(),
            object: object.to_string(),
            reason: reason.into(),
        }
    }

    fn structure_error(
        &self,
        object: &str,
        what: &'static str,
        source: vzarr_hdf5_format::Error,
    ) -> Hdf5Error {
        Hdf5Error::Structure {
            url: self.url.clone(),
            object: or_root(object).to_string(),
            what,
            source: Box::new(source),
        }
    }

    /// Leaves a variable (or attribute, `path@name`) out, with the reason.
    pub(crate) fn skip(&mut self, object: &str, reason: impl Into<String>) {
        self.out.skipped.push(SkippedVariable {
            path: object.to_string(),
            reason: reason.into(),
        });
    }
}

/// Scans an HDF5 or NetCDF4 source into a virtual dataset whose chunks point into it (at
/// [`ByteSource::url`]). The provenance is left empty for the caller to fill.
pub fn scan(src: Arc<dyn ByteSource>, opts: &ScanOptions) -> Result<VirtualDataset, Hdf5Error> {
    scan_with_head(src, &Bytes::new(), opts)
}

/// [`scan`] of a source whose first bytes (`head`) were already fetched, e.g. by the request
/// that opened it.
pub fn scan_with_head(
    src: Arc<dyn ByteSource>,
    head: &Bytes,
    opts: &ScanOptions,
) -> Result<VirtualDataset, Hdf5Error> {
    let url = src.url().to_string();
    let file_size = src.size();
    let storage = if opts.cache_beyond_head {
        SourceStorage::new(src, opts.block_size, opts.cache_capacity)
    } else {
        SourceStorage::head_only(src, opts.block_size, opts.cache_capacity)
    };
    storage.cache().seed_head(head);
    if (head.len() as u64) < opts.head_bytes.min(file_size) {
        storage
            .read_head(opts.head_bytes)
            .map_err(|source| Hdf5Error::Source {
                url: url.clone(),
                source: Box::new(source),
            })?;
    }
    let file = File::open(Arc::new(storage.clone())).map_err(|source| Hdf5Error::Open {
        url: url.clone(),
        source: Box::new(source),
    })?;
    let mut ctx = Ctx {
        url,
        file_size,
        opts,
        file: &file,
        storage: &storage,
        out: VirtualDataset::new(),
        phony: HashMap::new(),
        phony_count: 0,
        names: None,
    };
    let mut ancestors = Vec::new();
    walk_group(&mut ctx, file.root_address(), "", &mut ancestors)?;
    ctx.out.validate().map_err(|source| Hdf5Error::Model {
        url: ctx.url.clone(),
        object: "/".into(),
        source: Box::new(source),
    })?;
    keep_small_arrays(&mut ctx.out, &storage);
    Ok(ctx.out)
}

/// Keeps, beside the references of small arrays, the chunk bytes that are in the cache (within
/// the bounds of [`VirtualDataset::keep_fetched`]; `cached` copies them out of its blocks).
fn keep_small_arrays(out: &mut VirtualDataset, storage: &SourceStorage) {
    let url = storage.cache().url().to_string();
    out.keep_fetched(|source, r| {
        if source == url {
            storage.cache().cached(&r)
        } else {
            None
        }
    });
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// A group path for messages: `/` for the root.
pub(crate) fn or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// Walks the group whose object header is at `addr`; `ancestors` holds the addresses of the
/// groups above it, so that a hard link back up the tree (a cycle) is not followed.
fn walk_group(
    ctx: &mut Ctx,
    addr: u64,
    path: &str,
    ancestors: &mut Vec<u64>,
) -> Result<(), Hdf5Error> {
    let file = ctx.file;
    let oh = file
        .object_header(addr)
        .map_err(|e| ctx.structure_error(path, "object header", e))?;
    let attrs = file
        .attributes(&oh)
        .map_err(|e| ctx.structure_error(path, "attributes", e))?;
    let attributes = convert_attributes(ctx, path, &attrs, false, None);
    ctx.out
        .groups
        .insert(path.to_string(), Group { attributes });
    let links = file
        .links(&oh)
        .map_err(|e| ctx.structure_error(path, "link table", e))?;
    let heads: Vec<Range<u64>> = links
        .iter()
        .filter_map(|l| match l.target {
            LinkTarget::Hard(a) => Some(a..a.saturating_add(HEADER_PREFETCH).min(ctx.file_size)),
            _ => None,
        })
        .collect();
    if heads.len() > 1 {
        vzarr_hdf5_format::Storage::prefetch(ctx.storage, &heads);
    }
    ancestors.push(addr);
    for link in links {
        let child = join(path, &link.name);
        let target = match link.target {
            LinkTarget::Hard(a) => a,
            LinkTarget::Soft(_) => {
                ctx.skip(
                    &child,
                    "soft link (not followed; the target is scanned where it lives)",
                );
                continue;
            }
            LinkTarget::External { .. } | LinkTarget::UserDefined { .. } => {
                ctx.skip(&child, "external or user-defined link (not followed)");
                continue;
            }
        };
        let oh = file
            .object_header(target)
            .map_err(|e| ctx.structure_error(&child, "object header", e))?;
        match file.object_kind(&oh) {
            ObjectKind::Group if ancestors.contains(&target) => ctx.skip(
                &child,
                "hard link to a group above it (a cycle): not followed",
            ),
            ObjectKind::Group => walk_group(ctx, target, &child, ancestors)?,
            ObjectKind::Dataset => match scan_dataset(ctx, &oh, path, &child)? {
                Scanned::Array(a) => {
                    ctx.out.arrays.insert(child, *a);
                }
                Scanned::Refused(reason) => ctx.skip(&child, reason),
                Scanned::DimensionOnly => {}
            },
            // Named datatypes and others hold no data.
            ObjectKind::NamedDatatype | ObjectKind::Other => {}
        }
    }
    ancestors.pop();
    Ok(())
}

/// What became of a dataset.
enum Scanned {
    /// A virtual array.
    Array(Box<VirtualArray>),
    /// Left out, with the reason.
    Refused(String),
    /// A netCDF dimension without a variable: no array.
    DimensionOnly,
}

fn scan_dataset(
    ctx: &mut Ctx,
    oh: &ObjectHeader,
    group_path: &str,
    path: &str,
) -> Result<Scanned, Hdf5Error> {
    let file = ctx.file;
    let ds = file
        .dataset(oh)
        .map_err(|e| ctx.structure_error(path, "dataset", e))?;
    let attrs: Vec<Attribute> = file
        .attributes(oh)
        .map_err(|e| ctx.structure_error(path, "attributes", e))?;

    let is_scale = string_attr(file, &attrs, "CLASS").as_deref() == Some("DIMENSION_SCALE");
    let space = &ds.dataspace;
    let unlimited_1d = space.kind == DataspaceKind::Simple
        && space.dims.len() == 1
        && space.max_dims.as_deref() == Some(&[UNLIMITED]);
    if is_scale && unlimited_1d {
        let name = path.rsplit('/').next().unwrap_or(path);
        ctx.out.unlimited_dims.insert(name.to_string());
    }
    if is_scale && string_attr(file, &attrs, "NAME").is_some_and(|n| n.starts_with(DIMENSION_ONLY))
    {
        return Ok(Scanned::DimensionOnly);
    }
    let shape: Vec<u64> = match space.kind {
        DataspaceKind::Null => {
            return Ok(Scanned::Refused(
                "null dataspace: the dataset holds no data".into(),
            ));
        }
        DataspaceKind::Scalar => Vec::new(),
        DataspaceKind::Simple => space.dims.clone(),
    };
    let mapped = match dataset_type(&ds.datatype) {
        Ok(v) => v,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    let (data_type, endian) = (mapped.data_type.clone(), mapped.endian);
    if ds.external_files.is_some_and(|n| n > 0) {
        return Ok(Scanned::Refused(
            "raw data in external files (H5Pset_external)".into(),
        ));
    }
    let codecs = match filters::codecs(ds.filters.as_ref(), data_type.clone()) {
        Ok(c) => c,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    // An HDF5 array datatype's dimensions become trailing axes, whole in every chunk.
    let dataset_rank = shape.len();
    let mut shape = shape;
    shape.extend_from_slice(&mapped.extra_dims);
    let fill_msg = match element_fill(&ds.fill_value, &mapped) {
        Ok(f) => f,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    let fill_value = dataset_fill(&fill_msg, data_type.clone(), endian)
        .map_err(|reason| ctx.object_error(path, reason))?;
    let Chunks { grid, manifest } = match &ds.layout.layout {
        Layout::Chunked(ch) => {
            let enc = ChunkEncoding {
                fill: fill_value.bytes_in(data_type.clone(), endian),
                codecs: &codecs,
            };
            let mut chunk = ch.chunk_dims.clone();
            if chunk.len() == dataset_rank {
                chunk.extend_from_slice(&mapped.extra_dims);
            }
            match chunk_refs(ctx, &ds, &chunk, &shape, &enc, path)? {
                Ok(v) => v,
                Err(reason) => return Ok(Scanned::Refused(reason)),
            }
        }
        Layout::Contiguous { address, .. } => {
            if !codecs.is_empty() {
                return Ok(Scanned::Refused("contiguous dataset with filters".into()));
            }
            contiguous_refs(ctx, *address, &shape, data_type.size(), path)?
        }
        Layout::Compact { data } => compact_refs(ctx, data, &shape, data_type.size(), path)?,
        Layout::Virtual { .. } => {
            return Ok(Scanned::Refused(
                "virtual dataset (VDS): its data lives in other datasets".into(),
            ));
        }
    };

    let mut attributes = convert_attributes(ctx, path, &attrs, is_scale, Some(data_type.clone()));
    if let Some(members) = &mapped.enum_members {
        enum_attributes(&mut attributes, members);
    }
    let mut dimension_names = dimension_names(
        ctx,
        &attrs,
        group_path,
        path,
        &shape[..dataset_rank],
        is_scale,
    );
    let own = path.rsplit('/').next().unwrap_or(path);
    dimension_names.extend((0..mapped.extra_dims.len()).map(|k| format!("{own}_dim_{k}")));
    Ok(Scanned::Array(Box::new(VirtualArray {
        data_type,
        endian,
        fill_value,
        codecs,
        dimension_names,
        attributes,
        grid,
        manifest,
    })))
}

/// The fill value message for one element of `mapped`: for an HDF5 array datatype, whose fill
/// value is a whole array, one of its elements when they are all equal (Zarr has one fill
/// value per element), or why not.
fn element_fill(
    fill: &vzarr_hdf5_format::FillValue,
    mapped: &Mapped,
) -> Result<vzarr_hdf5_format::FillValue, String> {
    let esize = mapped.data_type.size();
    match fill.value.as_ref() {
        Some(v) if !mapped.extra_dims.is_empty() && esize > 0 && v.len() > esize => {
            let first = &v[..esize];
            if v.len() % esize != 0 || v.chunks_exact(esize).any(|e| e != first) {
                return Err(
                    "array data type whose fill value is not one value repeated: Zarr has one \
                     fill value per element"
                        .into(),
                );
            }
            let mut out = fill.clone();
            out.value = Some(v.slice(..esize));
            Ok(out)
        }
        _ => Ok(fill.clone()),
    }
}

/// The CF attributes of an enum's members: `flag_values` (the values, as the base integer
/// type's) and `flag_meanings` (the names, blank-separated, blanks inside a name replaced by
/// `_`), in the order of the values; attributes of these names already in the source win.
fn enum_attributes(attributes: &mut vzarr_core::Attributes, members: &[(String, i128)]) {
    if members.is_empty()
        || attributes.contains_key("flag_values")
        || attributes.contains_key("flag_meanings")
    {
        return;
    }
    let values: Vec<serde_json::Value> = members
        .iter()
        .map(|(_, v)| match i64::try_from(*v) {
            Ok(i) => serde_json::Value::from(i),
            Err(_) => serde_json::Value::from(u64::try_from(*v).unwrap_or(u64::MAX)),
        })
        .collect();
    let meanings: Vec<String> = members
        .iter()
        .map(|(n, _)| n.split_whitespace().collect::<Vec<_>>().join("_"))
        .collect();
    attributes.insert("flag_values".into(), serde_json::Value::Array(values));
    attributes.insert(
        "flag_meanings".into(),
        serde_json::Value::String(meanings.join(" ")),
    );
}
