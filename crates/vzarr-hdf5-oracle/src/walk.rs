//! The scan: opening a file, walking its groups and links from the root, and turning each
//! dataset into a [`VirtualArray`] (type, filters, fill value, chunk references, attributes,
//! dimension names) or a reason it is left out.

use std::path::Path;

use hdf5::{IndexType, IterationOrder, LinkType, LocationType};
use hdf5_sys::h5d::H5D_layout_t;
use vzarr_core::{Group, VirtualDataset};
use vzarr_hdf5_map::attrs::convert_attributes;
use vzarr_hdf5_map::dims::{PhonyDims, is_dimension_only, is_scale};
use vzarr_hdf5_map::{Scanned, refusal};
use vzarr_hdf5_map::{join, or_root};

use crate::attributes::{int_attr, read_attributes, string_attr};
use crate::ctx::Ctx;
use crate::dims::dimension_names;
use crate::ffi;
use crate::fill::dataset_fill;
use crate::layout::{ChunkEncoding, chunk_refs, compact_refs, contiguous_refs};
use crate::types::{data_type, type_info};
use crate::{Hdf5Error, ScanOptions, filters};

/// Scans an HDF5 or NetCDF4 file into a virtual dataset whose chunks point into the file.
pub fn scan_file(path: &Path, opts: &ScanOptions) -> Result<VirtualDataset, Hdf5Error> {
    let display = path.display().to_string();
    let abs = vzarr_source::absolute(path).map_err(|e| Hdf5Error::Open {
        path: display.clone(),
        reason: e.to_string(),
    })?;
    let url = vzarr_source::file_url(&abs).map_err(|e| Hdf5Error::Open {
        path: display.clone(),
        reason: e.to_string(),
    })?;
    let file_size = std::fs::metadata(&abs)
        .map_err(|e| Hdf5Error::Open {
            path: display.clone(),
            reason: e.to_string(),
        })?
        .len();
    // One lock for the whole file: every HDF5 call below re-enters it.
    hdf5::sync::sync(|| {
        let file = hdf5::File::open(&abs).map_err(|e| Hdf5Error::Open {
            path: display.clone(),
            reason: open_reason(&e.to_string()),
        })?;
        let mut ctx = Ctx {
            path: display.clone(),
            url,
            file_size,
            opts,
            out: VirtualDataset::new(),
            phony: PhonyDims::new(),
            root: file.id(),
            names: None,
        };
        let root = file
            .as_group()
            .map_err(|e| ctx.object_error("/", e.to_string()))?;
        walk_group(&mut ctx, &root, "")?;
        ctx.phony.finish(&ctx.out.groups, &mut ctx.out.arrays);
        ctx.out
            .validate()
            .map_err(|e| ctx.object_error("/", e.to_string()))?;
        Ok(ctx.out)
    })
}

/// A readable reason for an HDF5 open failure; a truncated file says how much is missing.
pub(crate) fn open_reason(hdf5_message: &str) -> String {
    let field = |name: &str| -> Option<u64> {
        let rest = &hdf5_message[hdf5_message.find(name)? + name.len()..];
        rest.trim_start_matches([' ', '='])
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    if hdf5_message.contains("truncated file")
        && let (Some(eof), Some(stored)) = (field("eof ="), field("stored_eof"))
    {
        return format!(
            "truncated file: {eof} bytes on disk, but the HDF5 superblock says {stored} \
             ({hdf5_message})"
        );
    }
    hdf5_message.to_string()
}

/// Links of a group in the file's order, with their kind: by creation order where the group
/// tracks it, else by name (HDF5 refuses to iterate by creation order when it is not
/// tracked).
fn links(group: &hdf5::Group) -> Result<Vec<(String, LinkType)>, String> {
    let by = |index: IndexType| {
        let mut out = Vec::new();
        group
            .iter_visit(index, IterationOrder::Increasing, |name, info| {
                out.push((name.to_string(), info.link_type));
                Ok(())
            })
            .map(|_| out)
    };
    by(IndexType::CreationOrder)
        .or_else(|_| by(IndexType::Name))
        .map_err(|_| "cannot list the group's links".to_string())
}

fn walk_group(ctx: &mut Ctx, group: &hdf5::Group, path: &str) -> Result<(), Hdf5Error> {
    let gid = group.id();
    let attrs = read_attributes(gid).map_err(|e| ctx.object_error(or_root(path), e))?;
    let attributes = convert_attributes(attrs, path, false, None, &mut ctx.out.skipped);
    ctx.out
        .groups
        .insert(path.to_string(), Group { attributes });
    let members = links(group).map_err(|e| ctx.object_error(or_root(path), e))?;
    for (name, kind) in members {
        let child = join(path, &name);
        match kind {
            LinkType::Hard => {}
            LinkType::Soft => {
                ctx.skip(
                    &child,
                    "soft link (not followed; the target is scanned where it lives)",
                );
                continue;
            }
            LinkType::External => {
                ctx.skip(&child, "external or user-defined link (not followed)");
                continue;
            }
        }
        let kind = group
            .loc_type_by_name(&name)
            .map_err(|_| ctx.object_error(&child, "object header unreadable"))?;
        match kind {
            LocationType::Group => {
                let g = group
                    .group(&name)
                    .map_err(|e| ctx.object_error(&child, e.to_string()))?;
                walk_group(ctx, &g, &child)?;
            }
            LocationType::Dataset => {
                let ds = group
                    .dataset(&name)
                    .map_err(|e| ctx.object_error(&child, e.to_string()))?;
                match scan_dataset(ctx, &ds, path, &child)? {
                    Scanned::Array(a) => {
                        ctx.out.arrays.insert(child, *a);
                    }
                    Scanned::Refused(reason) => ctx.skip(&child, reason),
                    Scanned::DimensionOnly => {}
                }
            }
            _ => {} // Named datatypes and others hold no data.
        }
    }
    Ok(())
}

fn scan_dataset(
    ctx: &mut Ctx,
    ds: &hdf5::Dataset,
    group_path: &str,
    path: &str,
) -> Result<Scanned, Hdf5Error> {
    let id = ds.id();
    let err = |ctx: &Ctx, e: String| ctx.object_error(path, e);
    let dcpl = ffi::dataset::create_plist(id).map_err(|e| err(ctx, e))?;
    let ftype = ffi::dataset::file_type(id).map_err(|e| err(ctx, e))?;
    let space = ffi::dataset::space(id).map_err(|e| err(ctx, e))?;

    let is_scale = is_scale(string_attr(id, "CLASS").as_deref());
    let unlimited = ffi::space::unlimited_axes(space.id());
    if is_scale {
        let name = path.rsplit('/').next().unwrap_or(path);
        if unlimited == [true] {
            ctx.out.unlimited_dims.insert(name.to_string());
        }
        let len = ffi::space::shape(space.id())
            .ok()
            .flatten()
            .and_then(|s| s.first().copied());
        let unl = unlimited.first().copied().unwrap_or(false);
        ctx.phony.note_scale(group_path, name, len, unl);
        if let Some([dimid]) = int_attr(id, "_Netcdf4Dimid").as_deref() {
            ctx.phony.note_dimid(*dimid, name);
        }
    }
    if is_scale && is_dimension_only(string_attr(id, "NAME").as_deref()) {
        return Ok(Scanned::DimensionOnly);
    }
    let Some(shape) = ffi::space::shape(space.id()).map_err(|e| err(ctx, e))? else {
        return Ok(Scanned::Refused(refusal::NULL_DATASPACE.into()));
    };
    let (data_type, endian) = match data_type(&type_info(ftype.id())) {
        Ok(v) => v,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    let layout = ffi::plist::layout(dcpl.id());
    if ffi::plist::external_count(dcpl.id()) > 0 {
        return Ok(Scanned::Refused(refusal::EXTERNAL_FILES.into()));
    }
    let codecs = match filters::codecs(dcpl.id(), data_type.clone()) {
        Ok(c) => c,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    let fill_value =
        dataset_fill(dcpl.id(), ftype.id(), data_type.clone(), endian).map_err(|e| err(ctx, e))?;
    let chunks = match layout {
        H5D_layout_t::H5D_CHUNKED => {
            let enc = ChunkEncoding {
                ftype: ftype.id(),
                fill: fill_value.bytes_in(data_type.clone(), endian),
                codecs: &codecs,
            };
            match chunk_refs(ctx, ds, dcpl.id(), &shape, &enc, path)? {
                Ok(v) => v,
                Err(reason) => return Ok(Scanned::Refused(reason)),
            }
        }
        H5D_layout_t::H5D_CONTIGUOUS => {
            if !codecs.is_empty() {
                return Ok(Scanned::Refused(refusal::CONTIGUOUS_WITH_FILTERS.into()));
            }
            contiguous_refs(ctx, ds, &shape, data_type.size(), path)?
        }
        H5D_layout_t::H5D_COMPACT => {
            compact_refs(ctx, id, ftype.id(), &shape, data_type.size(), path)?
        }
        H5D_layout_t::H5D_VIRTUAL => {
            return Ok(Scanned::Refused(refusal::VIRTUAL_DATASET.into()));
        }
        other => {
            return Ok(Scanned::Refused(format!(
                "unknown storage layout {other:?}"
            )));
        }
    };

    let raw_attrs = read_attributes(id).map_err(|e| err(ctx, e))?;
    let skipped = &mut ctx.out.skipped;
    let attributes = convert_attributes(raw_attrs, path, is_scale, Some(&data_type), skipped);
    let dimension_names =
        dimension_names(ctx, id, (group_path, path), &shape, &unlimited, is_scale);
    let ty = (data_type, endian);
    let chunking = match layout {
        H5D_layout_t::H5D_CHUNKED => ffi::plist::chunk(dcpl.id(), shape.len()),
        _ => None,
    };
    let array = chunks.into_array(
        ty,
        fill_value,
        codecs,
        attributes,
        dimension_names,
        chunking.as_deref(),
    );
    Ok(Scanned::Array(Box::new(array)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_file_reason() {
        let m = "H5Fopen(): unable to synchronously open file: truncated file: eof = 59225, \
                 sblock->base_addr = 0, stored_eof = 118450";
        let r = open_reason(m);
        assert!(
            r.starts_with(
                "truncated file: 59225 bytes on disk, but the HDF5 superblock says 118450"
            ),
            "{r}"
        );
        assert_eq!(open_reason("other"), "other");
    }
}
