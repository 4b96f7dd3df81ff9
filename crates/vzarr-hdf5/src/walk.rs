//! The scan: opening a source, walking its groups and links from the root (depth first, links
//! in the file's order: creation order where the group tracks it, else name order, as the
//! libhdf5 scanner and h5py list them), and turning each dataset into a
//! [`VirtualArray`] (type, filters, fill value, chunk references, attributes, dimension
//! names) or a reason it is left out.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;

use vzarr_core::names::{ORIGINAL_NAME_ATTR, sibling_names, zarr_name};
use vzarr_core::{DataType, FillValue, Group, VirtualDataset};
use vzarr_hdf5_format::{
    Attribute, DataspaceKind, File, Layout, LinkTarget, ObjectHeader, ObjectKind, TypeClass,
    UNLIMITED,
};
use vzarr_hdf5_map::dims::{PhonyDims, is_dimension_only, is_scale};
pub(crate) use vzarr_hdf5_map::join;
use vzarr_hdf5_map::{Scanned, refusal};
use vzarr_source::ByteSource;

use crate::attributes::{convert_attributes, int_attr, string_attr};
use crate::ctx::Ctx;
use crate::dims::dimension_names;
use crate::fill::dataset_fill;
use crate::layout::{ChunkEncoding, chunk_refs, compact_refs, contiguous_refs};
use crate::references::{self, Convention, LinkRecord, RefPaths};
use crate::storage::SourceStorage;
use crate::strings::{Elements, fill_text, string_chunks};
use crate::types::{Mapped, dataset_type};
use crate::{Hdf5Error, ScanOptions, filters, records};

/// Bytes of an object header prefetched when a group names it (what the reader reads first).
const HEADER_PREFETCH: u64 = 512;

/// Most groups and datasets a file's soft links may add (each soft link to a group adds its
/// whole subtree again; a few links to links could otherwise multiply a file's objects).
pub(crate) const MAX_SOFT_NODES: usize = 100_000;

/// Where a group is in the walk.
#[derive(Clone, Copy)]
struct At<'p> {
    /// Its Zarr path (names mapped as `vzarr_core::names` says).
    path: &'p str,
    /// Its source path in the file (`""` for the root), for messages and skipped entries.
    source: &'p str,
    /// Whether it was reached through hard links only (a group below a soft link is not:
    /// there every object is listed again, as h5py's item access shows it).
    hard: bool,
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
    scan_noting(src, head, opts, None)
}

/// [`scan_with_head`], noting in `reach` (a window and where to note) the farthest end of
/// what the scan read below the window, the head included (see
/// [`vzarr_source::BlockCache::with_reach`]).
pub fn scan_noting(
    src: Arc<dyn ByteSource>,
    head: &Bytes,
    opts: &ScanOptions,
    reach: Option<(u64, Arc<AtomicU64>)>,
) -> Result<VirtualDataset, Hdf5Error> {
    let url = src.url().to_string();
    let file_size = src.size();
    let storage = SourceStorage::for_scan(src, opts, reach);
    storage.cache().seed_head(head);
    if (head.len() as u64) < opts.head_bytes.min(file_size) {
        storage
            .read_head(opts.head_bytes)
            .map_err(Hdf5Error::source(&url))?;
    }
    if opts.cache_beyond_head {
        // Batches for what lies beyond the head and will be needed first.
        crate::ahead::plan(&storage);
    }
    let file = File::open(Arc::new(storage.clone())).map_err(Hdf5Error::open(&url))?;
    let mut ctx = Ctx {
        url,
        file_size,
        opts,
        file: &file,
        storage: &storage,
        out: VirtualDataset::new(),
        phony: PhonyDims::new(),
        names: None,
        seen: HashMap::from([(file.root_address(), "/".to_string())]),
        soft_nodes: 0,
        soft_targets: HashMap::new(),
    };
    let mut ancestors = Vec::new();
    let root = At {
        path: "",
        source: "",
        hard: true,
    };
    walk_group(&mut ctx, file.root_address(), root, &mut ancestors)?;
    ctx.phony.finish(&ctx.out.groups, &mut ctx.out.arrays);
    ctx.out.validate().map_err(|source| Hdf5Error::Model {
        url: ctx.url.clone(),
        object: "/".into(),
        source: Box::new(source),
    })?;
    if opts.keep_fetched {
        keep_small_arrays(&mut ctx.out, &storage);
    }
    Ok(ctx.out)
}

/// Keeps, beside the references of small arrays, the chunk bytes that are in the cache (within
/// the bounds of [`VirtualDataset::keep_fetched`]; `cached` copies them out of its blocks).
fn keep_small_arrays(out: &mut VirtualDataset, storage: &SourceStorage) {
    let url = storage.cache().url().to_string();
    out.keep_fetched(|source, r| {
        if source == url {
            // Not a read of the parse: the reach of a learned head counts the chunks the
            // planner needs by itself (vzarr-scan's head module).
            storage.cache().held(&r)
        } else {
            None
        }
    });
}

/// Walks the group whose object header is at `addr` (at `at`); `ancestors` holds the
/// addresses of the groups above it, so that a link back up the tree (a cycle) is not
/// followed.
///
/// Links in the file's order (creation order where the group tracks it, else name order), as
/// h5py lists them:
/// - hard links: each group and dataset once, under the first path this walk meets it by
///   (where groups list their links in name order, the first `H5Ovisit`, h5py's `visit`,
///   finds); a further hard link to it is listed as skipped, naming that path;
/// - soft links: followed as h5py's item access follows them, the dataset or group they lead
///   to listed under the link's name (a group with everything below it); a dangling soft
///   link, one to a group above it, or one past [`MAX_SOFT_NODES`] is listed as skipped;
/// - external and user-defined links: listed as skipped, naming the target, not followed;
/// - with [`crate::ScanOptions::record_links`], soft, external and repeated hard links are
///   recorded in the group's attributes instead (`references`), never followed.
///
/// Names Zarr does not allow are mapped (`vzarr_core::names::sibling_names`), the source name
/// kept in the attribute `vzarr_core::names::ORIGINAL_NAME_ATTR`.
fn walk_group(
    ctx: &mut Ctx,
    addr: u64,
    at: At<'_>,
    ancestors: &mut Vec<u64>,
) -> Result<(), Hdf5Error> {
    let file = ctx.file;
    let oh = file
        .object_header(addr)
        .map_err(|e| ctx.structure_error(at.source, "object header", e))?;
    let attrs = file
        .attributes(&oh)
        .map_err(|e| ctx.structure_error(at.source, "attributes", e))?;
    let mut attributes = convert_attributes(ctx, at.source, &attrs, false, None);
    original_name(&mut attributes, at);
    ctx.out
        .groups
        .insert(at.path.to_string(), Group { attributes });
    let links = file
        .links_in_file_order(&oh)
        .map_err(|e| ctx.structure_error(at.source, "link table", e))?;
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
    let zarr_names = sibling_names(links.iter().map(|l| l.name.as_str()));
    ancestors.push(addr);
    // Links recorded in the group's attributes (`references`) rather than followed.
    let group_name = format!("/{}", at.source);
    let mut recorded = serde_json::Map::new();
    for (link, zname) in links.iter().zip(&zarr_names) {
        let child_path = join(at.path, zname);
        let child_source = join(at.source, &link.name);
        let child = At {
            path: &child_path,
            source: &child_source,
            hard: at.hard && matches!(link.target, LinkTarget::Hard(_)),
        };
        if ctx.opts.record_links {
            let record = match &link.target {
                LinkTarget::Soft(to) => Some(LinkRecord::Soft(to)),
                LinkTarget::External { file, path } => Some(LinkRecord::External { file, path }),
                LinkTarget::Hard(a) => ctx.seen.get(a).map(|first| LinkRecord::Hard(first)),
                LinkTarget::UserDefined { .. } => None,
            };
            if let Some(record) = record {
                let r = references::link_ref(&record, &group_name, &ctx.url);
                recorded.insert(link.name.clone(), r);
                continue;
            }
        }
        let target = match &link.target {
            LinkTarget::Hard(a) => *a,
            LinkTarget::Soft(to) => match soft_target(ctx, at.source, to) {
                Ok(a) => a,
                Err(reason) => {
                    ctx.skip(&child_source, reason);
                    continue;
                }
            },
            LinkTarget::External { file, path } => {
                ctx.skip(
                    &child_source,
                    format!(
                        "external link to {path:?} in the file {file:?}: not followed (the \
                         target is in another file)"
                    ),
                );
                continue;
            }
            LinkTarget::UserDefined { class, .. } => {
                ctx.skip(
                    &child_source,
                    format!("user-defined link of class {class}: not followed"),
                );
                continue;
            }
        };
        let oh = file
            .object_header(target)
            .map_err(|e| ctx.structure_error(&child_source, "object header", e))?;
        let kind = file.object_kind(&oh);
        if !matches!(kind, ObjectKind::Group | ObjectKind::Dataset) {
            // Named datatypes and others hold no data.
            continue;
        }
        if kind == ObjectKind::Group && ancestors.contains(&target) {
            let how = if matches!(link.target, LinkTarget::Hard(_)) {
                "hard"
            } else {
                "soft"
            };
            ctx.skip(
                &child_source,
                format!("{how} link to a group above it (a cycle): not followed"),
            );
            continue;
        }
        // A further hard link to an object met before is listed again under its own name,
        // as netCDF-C and h5py's item access show it (its first path stays the one object
        // references name), and counts, with everything below it, as a soft link's target does.
        let child = match ctx.seen.get(&target) {
            Some(_) if child.hard => At {
                hard: false,
                ..child
            },
            _ => child,
        };
        if child.hard {
            ctx.seen.insert(target, format!("/{child_source}"));
        } else {
            if ctx.soft_nodes >= MAX_SOFT_NODES {
                ctx.skip(
                    &child_source,
                    format!(
                        "reached through a soft link or a further hard link, past the \
                         {MAX_SOFT_NODES} groups and datasets such links may add: not followed"
                    ),
                );
                continue;
            }
            ctx.soft_nodes += 1;
        }
        match kind {
            ObjectKind::Group => walk_group(ctx, target, child, ancestors)?,
            _ => match scan_dataset(ctx, &oh, at, child)? {
                Scanned::Array(mut a) => {
                    original_name(&mut a.attributes, child);
                    ctx.out.arrays.insert(child_path.clone(), *a);
                }
                Scanned::Refused(reason) => ctx.skip(&child_source, reason),
                Scanned::DimensionOnly => {}
            },
        }
    }
    ancestors.pop();
    if let Some(g) = ctx.out.groups.get_mut(at.path) {
        references::record_links(&mut g.attributes, recorded);
    }
    Ok(())
}

/// The `_FillValue` attribute of a string array (netCDF-4's, of a `string` variable) is
/// written as `missing_value`: xarray 2026.9 cannot decode a `_FillValue` attribute of a Zarr
/// v3 string array (its `FillValueCoder` has no case for `StringDType`, so `open_zarr` fails
/// on the whole dataset), while it masks `missing_value` values exactly as it masks
/// `_FillValue` ones of the source. The array's `fill_value` holds the dataset's fill value
/// (netCDF-C sets both alike). When the variable has a `missing_value` of its own, the
/// `_FillValue` attribute is dropped, listed as left out if it differs from the fill value.
fn string_fill_attribute(
    ctx: &mut Ctx,
    path: &str,
    attributes: &mut vzarr_core::Attributes,
    fill: &FillValue,
) {
    let Some(v) = attributes.shift_remove("_FillValue") else {
        return;
    };
    if !attributes.contains_key("missing_value") {
        attributes.insert("missing_value".into(), v);
        return;
    }
    if v.as_str() != fill.as_text(DataType::String) {
        ctx.skip(
            &format!("{path}@_FillValue"),
            format!(
                "attribute left out: {v} differs from the dataset's fill value {:?} and the \
                 variable has a missing_value (xarray cannot decode a _FillValue attribute of \
                 a Zarr string array)",
                fill.as_text(DataType::String).unwrap_or_default()
            ),
        );
    }
}

/// The source name of a node whose Zarr name differs, kept as an attribute.
fn original_name(attributes: &mut vzarr_core::Attributes, at: At<'_>) {
    let source = at.source.rsplit('/').next().unwrap_or(at.source);
    let name = at.path.rsplit('/').next().unwrap_or(at.path);
    if !at.path.is_empty() && source != name {
        attributes.insert(
            ORIGINAL_NAME_ATTR.to_string(),
            serde_json::Value::String(source.to_string()),
        );
    }
}

/// The object header address a soft link to `to` in the group at source path `group` leads
/// to (relative targets from that group, at most `MAX_SOFT_LINKS` soft links deep), or why
/// it leads nowhere.
fn soft_target(ctx: &mut Ctx, group: &str, to: &str) -> Result<u64, String> {
    let full = if to.starts_with('/') {
        to.to_string()
    } else {
        format!("/{}", join(group, to))
    };
    if let Some(known) = ctx.soft_targets.get(&full) {
        return known.clone();
    }
    let found = ctx.file.resolve_path(&full).map_err(|e| {
        let detail = match &e {
            vzarr_hdf5_format::Error::Path { detail, .. } => detail.clone(),
            other => other.to_string(),
        };
        format!("dangling soft link to {to:?} ({detail}): not followed")
    });
    ctx.soft_targets.insert(full, found.clone());
    found
}

fn scan_dataset(
    ctx: &mut Ctx,
    oh: &ObjectHeader,
    group: At<'_>,
    at: At<'_>,
) -> Result<Scanned, Hdf5Error> {
    let file = ctx.file;
    // Messages name the dataset by its source path.
    let path = at.source;
    let ds = file
        .dataset(oh)
        .map_err(|e| ctx.structure_error(path, "dataset", e))?;
    let attrs: Vec<Attribute> = file
        .attributes(oh)
        .map_err(|e| ctx.structure_error(path, "attributes", e))?;

    let is_scale = is_scale(string_attr(file, &attrs, "CLASS").as_deref());
    let space = &ds.dataspace;
    let unlimited_1d = space.kind == DataspaceKind::Simple
        && space.dims.len() == 1
        && space.max_dims.as_deref() == Some(&[UNLIMITED]);
    if is_scale && unlimited_1d {
        let name = path.rsplit('/').next().unwrap_or(path);
        ctx.out.unlimited_dims.insert(zarr_name(name).into_owned());
    }
    if is_scale {
        let name = zarr_name(path.rsplit('/').next().unwrap_or(path));
        let len = match space.kind {
            DataspaceKind::Simple => space.dims.first().copied(),
            _ => None,
        };
        let unlimited = unlimited_axes(space, 1) == [true];
        ctx.phony.note_scale(group.path, &name, len, unlimited);
        if let Some([id]) = int_attr(file, &attrs, "_Netcdf4Dimid").as_deref() {
            ctx.phony.note_dimid(*id, &name);
        }
    }
    if is_scale && is_dimension_only(string_attr(file, &attrs, "NAME").as_deref()) {
        return Ok(Scanned::DimensionOnly);
    }
    let shape: Vec<u64> = match space.kind {
        DataspaceKind::Null => {
            return Ok(Scanned::Refused(refusal::NULL_DATASPACE.into()));
        }
        DataspaceKind::Scalar => Vec::new(),
        DataspaceKind::Simple => space.dims.clone(),
    };
    // Object references are read as the paths of their targets (`references`), stored inline
    // as strings.
    let reference = match ds.datatype.class {
        TypeClass::Reference { kind } => match references::unspellable(kind) {
            Some(why) => return Ok(Scanned::Refused(why)),
            None if !ctx.opts.object_references => {
                return Ok(Scanned::Refused(refusal::OBJECT_REFERENCES_NOT_READ.into()));
            }
            None => Some(kind),
        },
        _ => None,
    };
    // A compound with variable-length string (or object reference) members is read and stored
    // inline (`records`); its data type is known once its strings are.
    let refs_in_records = ctx.opts.object_references;
    let (mapped, records) = match dataset_type(&ds.datatype) {
        Ok(v) => (v, None),
        Err(_) if reference.is_some() => (Mapped::string(), None),
        Err(reason) => {
            match records::members(&ds.datatype, file.superblock().sizes(), refs_in_records) {
                None => return Ok(Scanned::Refused(reason)),
                Some(Err(why)) => return Ok(Scanned::Refused(why)),
                Some(Ok(members)) => {
                    let stored = DataType::FixedBytes(ds.element_size(file) as usize);
                    let placeholder = Mapped {
                        data_type: stored,
                        endian: vzarr_core::Endian::Little,
                        extra_dims: Vec::new(),
                        enum_members: None,
                    };
                    (placeholder, Some(members))
                }
            }
        }
    };
    let (mut data_type, mut endian) = (mapped.data_type.clone(), mapped.endian);
    if ds.external_files.is_some_and(|n| n > 0) {
        return Ok(Scanned::Refused(refusal::EXTERNAL_FILES.into()));
    }
    // The filters act on the stored elements: for strings, global heap ids.
    let stored_type = if data_type.is_string() {
        DataType::FixedBytes(ds.element_size(file) as usize)
    } else {
        data_type.clone()
    };
    let codecs = match filters::codecs(ds.filters.as_ref(), stored_type) {
        Ok(c) => c,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    // An HDF5 array datatype's dimensions become trailing axes, whole in every chunk.
    let dataset_rank = shape.len();
    let mut shape = shape;
    shape.extend_from_slice(&mapped.extra_dims);
    // The file's object paths, walked once when the first reference needs them.
    let needs_names =
        reference.is_some() || records.as_deref().is_some_and(records::has_references);
    if needs_names && let Err(why) = ctx.object_names() {
        return Ok(Scanned::Refused(format!(
            "object references unresolved: {why}"
        )));
    }
    let names = needs_names
        .then(|| ctx.names.as_ref().and_then(|n| n.as_ref().ok()))
        .flatten();
    let (fill_value, chunks, codecs) = if let Some(members) = &records {
        match records::record_chunks(ctx, &ds, &shape, &codecs, members, names, path)? {
            // Stored inline, `bytes`-encoded alone.
            Ok((dt, fill, chunks)) => {
                (data_type, endian) = (dt, vzarr_core::Endian::Little);
                (fill, chunks, Vec::new())
            }
            Err(reason) => return Ok(Scanned::Refused(reason)),
        }
    } else if data_type.is_string() {
        // A null reference reads as "", as unwritten elements do.
        let fill = match reference {
            Some(_) => String::new(),
            None => match fill_text(ctx, &ds, path)? {
                Ok(f) => f,
                Err(reason) => return Ok(Scanned::Refused(reason)),
            },
        };
        let elements = match (reference, names) {
            (Some(kind), Some(names)) => Elements::References(kind, RefPaths::new(names, path)),
            _ => Elements::Strings,
        };
        match string_chunks(ctx, &ds, &shape, &codecs, &fill, elements, path)? {
            // The strings are stored inline, vlen-utf8 encoded, with no further codec.
            Ok(chunks) => (FillValue::from_text(&fill), chunks, Vec::new()),
            Err(reason) => return Ok(Scanned::Refused(reason)),
        }
    } else {
        let fill_msg = match element_fill(&ds.fill_value, &mapped) {
            Ok(f) => f,
            Err(reason) => return Ok(Scanned::Refused(reason)),
        };
        let fill_value = dataset_fill(&fill_msg, data_type.clone(), endian)
            .map_err(|reason| ctx.object_error(path, reason))?;
        let chunks = match &ds.layout.layout {
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
                    return Ok(Scanned::Refused(refusal::CONTIGUOUS_WITH_FILTERS.into()));
                }
                contiguous_refs(ctx, *address, &shape, data_type.size(), path)?
            }
            Layout::Compact { data } => compact_refs(ctx, data, &shape, data_type.size(), path)?,
            Layout::Virtual { .. } => {
                return Ok(Scanned::Refused(refusal::VIRTUAL_DATASET.into()));
            }
        };
        (fill_value, chunks, codecs)
    };

    let mut attributes = convert_attributes(ctx, path, &attrs, is_scale, Some(data_type.clone()));
    if reference.is_some() {
        references::register(&mut attributes, &[Convention::LinksReferences]);
        attributes.insert(
            "links_references".into(),
            serde_json::json!({"references": true}),
        );
    } else if let Some(members) = &records
        && records::has_references(members)
    {
        references::register(&mut attributes, &[Convention::LinksReferences]);
        attributes.insert(
            "links_references".into(),
            serde_json::json!({"references": records::reference_names(members)}),
        );
    }
    if data_type.is_string() {
        string_fill_attribute(ctx, path, &mut attributes, &fill_value);
    }
    if let Some(members) = &mapped.enum_members {
        vzarr_hdf5_map::attrs::enum_attributes(&mut attributes, members);
    }
    let mut dimension_names = dimension_names(
        ctx,
        &attrs,
        (group.path, at.path),
        path,
        &shape[..dataset_rank],
        &unlimited_axes(space, dataset_rank),
        is_scale,
    );
    // netCDF-C drops datasets of object references (and compounds with reference members),
    // of an HDF5 array datatype (no netCDF type is one) and of compounds holding a compound
    // with padding somewhere (netCDF-4 compounds nest only packed); the latter two are recorded.
    if !mapped.extra_dims.is_empty() {
        vzarr_core::netcdf::set_field(&mut attributes, "not_shown", "HDF5 array datatype".into());
        ctx.phony.not_shown(at.path);
    } else if nested_with_padding(&data_type) {
        let why = "compound holding a compound, with padding";
        vzarr_core::netcdf::set_field(&mut attributes, "not_shown", why.into());
        ctx.phony.not_shown(at.path);
    } else if attributes.contains_key("links_references") {
        ctx.phony.not_shown(at.path);
    }
    let own = path.rsplit('/').next().unwrap_or(path);
    dimension_names.extend((0..mapped.extra_dims.len()).map(|k| format!("{own}_dim_{k}")));
    let ty = (data_type, endian);
    let chunking = match &ds.layout.layout {
        Layout::Chunked(ch) => Some(&ch.chunk_dims[..dataset_rank.min(ch.chunk_dims.len())]),
        _ => None,
    };
    let array = chunks.into_array(
        ty,
        fill_value,
        codecs,
        attributes,
        dimension_names,
        chunking,
    );
    Ok(Scanned::Array(Box::new(array)))
}

/// Which of the first `rank` axes of `space` have an unlimited maximum size.
fn unlimited_axes(space: &vzarr_hdf5_format::Dataspace, rank: usize) -> Vec<bool> {
    let max = space.max_dims.as_deref().unwrap_or(&[]);
    (0..rank).map(|k| max.get(k) == Some(&UNLIMITED)).collect()
}

/// The fill value message for one element of `mapped`: for an HDF5 array datatype, whose fill
/// value is a whole array, one of its elements when they are all equal (Zarr has one fill
/// value per element), or why not.
pub(crate) fn element_fill(
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

/// Whether `t` is a struct holding a struct, with a padding field at any depth (a compound
/// netCDF-C does not read).
fn nested_with_padding(t: &DataType) -> bool {
    fn padded(fields: &[vzarr_core::StructField]) -> bool {
        fields.iter().any(|f| {
            f.is_padding() || matches!(&f.data_type, DataType::Struct(inner) if padded(inner))
        })
    }
    match t {
        DataType::Struct(fields) => {
            fields
                .iter()
                .any(|f| matches!(f.data_type, DataType::Struct(_)))
                && padded(fields)
        }
        _ => false,
    }
}
