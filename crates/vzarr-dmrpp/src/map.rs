//! From a DMR++ element tree to a [`VirtualDataset`]: groups, dimensions, variables of the
//! DAP4 numeric types with their attributes and their `dmrpp:chunks` (as OPeNDAP's bes reads
//! them: `modules/dmrpp_module`, `DmrppParserSax2.cc`, `DmrppCommon.cc`, `Chunk.cc`), every
//! other variable listed as skipped with the reason.

use std::cell::RefCell;
use std::collections::HashMap;

use base64::Engine;
use vzarr_core::{
    Attributes, ChunkGrid, ChunkManifest, Codec, DataType, DimGrid, Endian, FillValue, Group,
    SkippedVariable, VirtualArray, VirtualDataset,
};

use vzarr_hdf5_map::chunks::Chunks;
use vzarr_hdf5_map::types::{IntFacts, Order, StrPad, TypeInfo};

use crate::href::Place;
use crate::masks::MaskedChunk;
use crate::strings;
use crate::structure;
use crate::types;
use crate::xml::Element;

/// Most chunks (stored or not) one variable's grid may have: the project's bound on any
/// array's grid.
const MAX_CHUNKS: u64 = vzarr_core::limits::MAX_CHUNKS;

/// Most chunks one variable may list: the project's bound on one scanned array's references.
const MAX_LISTED: u64 = vzarr_core::limits::MAX_ARRAY_REFERENCES;

/// What the walk knows about the whole document.
pub(crate) struct Doc<'a> {
    /// The granule every chunk is read from, but for those in other files (`href`).
    pub(crate) place: Place<'a>,
    /// Whether the document names the `dmrpp:version` that wrote it (since bes 3.20.9): its
    /// `compressionType` lists the filters in the order the HDF5 pipeline applied them. Older
    /// ones wrote "deflate shuffle" for any order, which Hyrax decodes inflating first.
    pub(crate) versioned: bool,
    /// Whether the document was written by bes 3.21 or later, which writes a scalar
    /// variable-length string's value into the document (`dmrpp:compact`, bes commit 7ac9584
    /// "Vls scalar", October 2023): a scalar `String` given as one chunk is then fixed-length.
    pub(crate) scalar_strings_held: bool,
    /// The chunks with a filter mask (`fm`) of the variable being read: (C-order position,
    /// mask).
    pub(crate) pending_masks: RefCell<Vec<(u64, u32)>>,
    /// Those of the variables built.
    pub(crate) masked: RefCell<Vec<MaskedChunk>>,
}

/// Walks the `Dataset` (or a `Group`) element at `path`.
pub(crate) fn walk(
    doc: &Doc<'_>,
    el: &Element,
    path: &str,
    scope: &mut Scope,
    out: &mut VirtualDataset,
) {
    let mut attributes = Attributes::new();
    for child in &el.children {
        if child.name == "Attribute" {
            attribute(child, &mut attributes, &mut out.skipped, path);
        }
    }
    out.groups.insert(path.to_string(), Group { attributes });
    for child in &el.children {
        let name = child.attr("name").unwrap_or_default();
        match child.name.as_str() {
            "Dimension" => {
                let size = child
                    .attr("size")
                    .and_then(|s| s.trim().parse::<u64>().ok());
                if let Some(size) = size {
                    scope.dims.insert(format!("/{}", join(path, name)), size);
                }
            }
            "Enumeration" => {
                if let Some(e) = enumeration(child) {
                    scope.enums.insert(format!("/{}", join(path, name)), e);
                }
            }
            "Group" => walk(doc, child, &join(path, name), scope, out),
            v if types::is_variable(v) => {
                let vpath = join(path, name);
                doc.pending_masks.borrow_mut().clear();
                match variable(doc, child, scope) {
                    Ok(a) => {
                        let masks = std::mem::take(&mut *doc.pending_masks.borrow_mut());
                        doc.masked.borrow_mut().extend(masks.into_iter().map(
                            |(chunk, filter_mask)| MaskedChunk {
                                path: vpath.clone(),
                                chunk,
                                filter_mask,
                            },
                        ));
                        out.arrays.insert(vpath, a);
                    }
                    Err(reason) => out.skipped.push(SkippedVariable {
                        path: vpath,
                        reason,
                    }),
                }
            }
            _ => {}
        }
    }
}

/// What a group's elements declare for the variables below it, by absolute path.
#[derive(Default)]
pub(crate) struct Scope {
    /// Dimension sizes.
    dims: HashMap<String, u64>,
    /// Enumerations: the base integer type and the (name, value) members, by value.
    enums: HashMap<String, (DataType, Vec<(String, i128)>)>,
    /// The sizes of the phony dimensions named so far, `phony_dim_<index>`.
    phony: Vec<u64>,
}

/// An `Enumeration` element: its base integer type and members in the order of their values.
fn enumeration(el: &Element) -> Option<(DataType, Vec<(String, i128)>)> {
    let base = types::data_type(el.attr("basetype")?)?;
    if !(base.is_signed_int() || base.is_unsigned_int()) {
        return None;
    }
    let mut members: Vec<(String, i128)> = el
        .children_named("EnumConst")
        .map(|c| {
            Some((
                c.attr("name")?.to_string(),
                c.attr("value")?.trim().parse().ok()?,
            ))
        })
        .collect::<Option<_>>()?;
    members.sort_by_key(|m| m.1);
    Some((base, members))
}

/// `parent/name` (`name` at the root).
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// An `Attribute` element into `out`: values of atomic types by name; a container's
/// attributes unwrapped into `out` (HDF4 and HDF-EOS products nest them so).
fn attribute(el: &Element, out: &mut Attributes, skipped: &mut Vec<SkippedVariable>, at: &str) {
    let name = el.attr("name").unwrap_or_default().to_string();
    let dap = el.attr("type").unwrap_or_default();
    if dap == "Container" {
        for inner in el.children_named("Attribute") {
            attribute(inner, out, skipped, at);
        }
        return;
    }
    let values: Vec<String> = el.children_named("Value").map(|v| v.text.clone()).collect();
    match types::attribute(dap, &values) {
        Some((value, numpy)) => {
            if let Some(t) = numpy {
                vzarr_core::netcdf::set_attribute_type(out, &name, t);
            }
            out.insert(name, value);
        }
        None => skipped.push(SkippedVariable {
            path: format!("{at}@{name}"),
            reason: format!("attribute of DAP4 type {dap:?} with values {values:?}: not mapped"),
        }),
    }
}

/// One variable element as a virtual array, or why not.
fn variable(doc: &Doc<'_>, el: &Element, scope: &mut Scope) -> Result<VirtualArray, String> {
    // An enum is read as its base integer type, its members as CF flags (as the HDF5
    // mapping reads an HDF5 enum).
    let members = match el.attr("enum") {
        Some(e) if el.name == "Enum" => {
            let path = if e.starts_with('/') {
                e.to_string()
            } else {
                format!("/{e}")
            };
            Some(
                scope
                    .enums
                    .get(&path)
                    .cloned()
                    .ok_or_else(|| format!("enumeration {e:?} is not declared"))?,
            )
        }
        _ => None,
    };
    // h5py's bool (members FALSE=0 and TRUE=1 on one byte) is `bool`, as the HDF5 mapping
    // decides it.
    let is_bool = members.as_ref().is_some_and(|(base, m)| {
        let facts = IntFacts {
            size: base.size(),
            signed: Some(base.is_signed_int()),
            order: Order::Little,
            precision: base.size() * 8,
            offset: 0,
        };
        let named: Vec<(&str, Vec<u8>)> = m
            .iter()
            .map(|(n, v)| (n.as_str(), v.to_le_bytes()[..base.size()].to_vec()))
            .collect();
        vzarr_hdf5_map::types::enum_info(&facts, &named) == TypeInfo::Bool
    });
    let members = members.filter(|_| !is_bool);
    // Early DMR++ lists a contiguous variable's `dmrpp:chunk` directly inside it.
    let chunks = el.child("chunks").or_else(|| el.child("chunk").map(|_| el));
    let byte_order = chunks.and_then(|c| c.attr("byteOrder")).unwrap_or("LE");
    let mut endian = match byte_order {
        "LE" => Endian::Little,
        "BE" => Endian::Big,
        other => return Err(format!("byteOrder {other:?} (neither LE nor BE)")),
    };
    let data_type = match &members {
        _ if is_bool => DataType::Bool,
        Some((base, _)) => base.clone(),
        None if el.name == "String" => match scalar_fixed_string(el) {
            Some(t) if doc.scalar_strings_held => t,
            Some(_) => {
                return Err(concat!(
                    "a scalar string given as one chunk by a sidecar written before bes 3.21, ",
                    "which does not say whether it is of fixed length (the chunk's bytes) or of ",
                    "variable length (a reference into the granule's heap): not read from DMR++"
                )
                .into());
            }
            None => string_type(el)?,
        },
        None if el.name == "Structure" => {
            let (t, e) = structure::data_type(el, chunks, endian)?;
            endian = e;
            t
        }
        None => types::data_type(&el.name)
            .ok_or_else(|| format!("DAP4 {} variable: not mapped from DMR++ yet", el.name))?,
    };
    let dims = &scope.dims;
    let phony = &mut scope.phony;
    let mut shape = Vec::new();
    let mut dimension_names = Vec::new();
    for d in el.children_named("Dim") {
        match (d.attr("name"), d.attr("size")) {
            (Some(name), _) => {
                let full = if name.starts_with('/') {
                    name.to_string()
                } else {
                    format!("/{name}")
                };
                let size = dims
                    .get(&full)
                    .copied()
                    .ok_or_else(|| format!("dimension {name:?} is not declared"))?;
                shape.push(size);
                dimension_names.push(full.rsplit('/').next().unwrap_or_default().to_string());
            }
            (None, Some(size)) => {
                let size: u64 = size
                    .trim()
                    .parse()
                    .map_err(|_| format!("dimension size {size:?} is not a number"))?;
                // Anonymous dimensions numbered in document order, one of each size shared
                // by the variables, two axes of one variable never the same: as netCDF-C
                // names phony dimensions.
                let taken = |k: usize| dimension_names.contains(&format!("phony_dim_{k}"));
                let k = match (0..phony.len()).find(|&k| phony[k] == size && !taken(k)) {
                    Some(k) => k,
                    None => {
                        phony.push(size);
                        phony.len() - 1
                    }
                };
                shape.push(size);
                dimension_names.push(format!("phony_dim_{k}"));
            }
            (None, None) => return Err("a <Dim> without a name or a size".into()),
        }
    }
    let mut attributes = Attributes::new();
    let mut skipped = Vec::new();
    for a in el.children_named("Attribute") {
        attribute(a, &mut attributes, &mut skipped, "");
    }
    if let Some((_, m)) = &members {
        vzarr_hdf5_map::attrs::enum_attributes(&mut attributes, m);
    }
    for child in &el.children {
        if child.name.starts_with("unsupported") {
            return Err(format!(
                "the DMR++ marks it {}: its bytes are not described",
                child.name
            ));
        }
    }
    let compact = el.child("compact");
    // Strings: a fixed-length one's `fillValue` as its bytes, NUL-padded (Hyrax writes
    // `unsupported-string` where it has none); empty for variable-length ones.
    let fill_value = match &data_type {
        DataType::String => FillValue::from_text(""),
        DataType::Struct(_) => {
            structure::fill_value(el, &data_type, chunks.and_then(|c| c.attr("fillValue")))?
        }
        DataType::FixedBytes(n) => {
            let stated = chunks.and_then(|c| c.attr("fillValue"));
            let mut b = stated
                .filter(|f| !f.starts_with("unsupported"))
                .map(|f| f.as_bytes().to_vec())
                .unwrap_or_default();
            b.resize(*n, 0);
            FillValue::from_le_bytes(data_type.clone(), &b).map_err(|e| e.to_string())?
        }
        t => fill_value(t, chunks, &attributes)?,
    };
    if shape.len() > vzarr_core::limits::MAX_RANK {
        return Err(format!(
            "{} dimensions, more than the {} an array may have",
            shape.len(),
            vzarr_core::limits::MAX_RANK
        ));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or("the shape's element count overflows")?;
    let bytes = elements
        .checked_mul(data_type.size() as u64)
        .ok_or("the array's size in bytes overflows")?;
    let (chunks, codecs, chunking) = if let Some(m) = el.child("missingdata") {
        // Values Hyrax computed (HDF-EOS grids' coordinates, flattened variable-length
        // data), held in the sidecar deflated (a value as small as a scalar byte as it is):
        // kept inline as the array's one chunk, in the byte order they were written in
        // (little-endian, as Hyrax's hosts).
        let held = base64::engine::general_purpose::STANDARD
            .decode(m.text.trim())
            .map_err(|e| format!("dmrpp:missingdata is not base64: {e}"))?;
        let data = match vzarr_codec::inflate_bounded(&held, bytes) {
            Ok(d) => d,
            Err(_) if held.len() as u64 == bytes => held,
            Err(e) => return Err(format!("dmrpp:missingdata: {e}")),
        };
        held_whole(&shape, data, Some(("missingdata", bytes)))?
    } else if let Some(v) = el.child("vlsa") {
        held_whole(&shape, strings::vlsa(v, elements)?, None)?
    } else if let (DataType::String, Some(c), true) = (&data_type, compact, shape.is_empty()) {
        // A scalar string's value held in the document (bes writes a scalar variable-length
        // string so since 3.21): the text, up to a NUL, as one `vlen-utf8` value.
        held_whole(&shape, strings::compact_scalar(c)?, None)?
    } else if data_type == DataType::String {
        return Err(
            "variable-length strings stored in the granule's heap (no dmrpp:vlsa values): \
             not read from DMR++"
                .into(),
        );
    } else if let Some(c) = compact {
        let data = base64::engine::general_purpose::STANDARD
            .decode(c.text.trim())
            .map_err(|e| format!("dmrpp:compact is not base64: {e}"))?;
        held_whole(&shape, data, Some(("compact", bytes)))?
    } else if let Some(c) = chunks {
        chunked(doc, c, &data_type, &shape, bytes)?
    } else {
        return Err(
            "no storage information (no dmrpp:chunks, chunk or compact): where its values are \
             is not said"
                .into(),
        );
    };
    // The storage (filters, chunk shape) recorded as the HDF5 mapping records it, for the
    // encoding vzarr's xarray backend gives.
    Ok(chunks.into_array(
        (data_type, endian),
        fill_value,
        codecs,
        attributes,
        dimension_names,
        chunking.as_deref(),
    ))
}

/// Values the document holds (`data`, encoded as the array's one chunk) as a whole-array
/// inline chunk; with `raw`, raw values of `dmrpp:<name>` that must be the array's `bytes`.
fn held_whole(shape: &[u64], data: Vec<u8>, raw: Option<(&str, u64)>) -> Result<Stored, String> {
    if let Some((name, bytes)) = raw.filter(|&(_, b)| data.len() as u64 != b) {
        return Err(format!(
            "dmrpp:{name} holds {} bytes, the array {bytes}",
            data.len()
        ));
    }
    let grid = ChunkGrid::whole(shape).map_err(|e| e.to_string())?;
    let mut manifest = ChunkManifest::new_missing(1);
    manifest.set_inline(0, data).map_err(|e| e.to_string())?;
    Ok((Chunks { grid, manifest }, Vec::new(), None))
}

/// The Zarr type of a DAP4 `String` variable: fixed-length (`dmrpp:FixedLengthStringArray`,
/// mapped as the HDF5 mapping maps HDF5's fixed-length strings), else variable-length.
pub(crate) fn string_type(el: &Element) -> Result<DataType, String> {
    let Some(f) = el.child("FixedLengthStringArray") else {
        return Ok(DataType::String);
    };
    let size = f
        .attr("string_length")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .ok_or("a fixed-length string without a valid string_length")?;
    let pad = match f.attr("pad").map(str::trim) {
        Some("null_pad") => StrPad::NullPad,
        Some("space_pad") => StrPad::SpacePad,
        Some("null_term") | None => StrPad::NullTerm,
        Some(other) => return Err(format!("fixed-length string padding {other:?}")),
    };
    vzarr_hdf5_map::types::data_type(&TypeInfo::FixedString { size, pad }).map(|(t, _)| t)
}

/// Largest scalar string read as a fixed-length one ([`scalar_fixed_string`]).
const MAX_SCALAR_STRING: u64 = 64 << 20;

/// The type of a scalar `String` whose one uncompressed chunk the document gives without
/// saying more (no `dmrpp:vlsa` or `dmrpp:compact` values): Hyrax reads it as the chunk's
/// bytes up to the first NUL (bes's `DmrppStr::read`), which is how sidecars describe HDF5's
/// scalar fixed-length strings (HDF-EOS's 32,000-byte `StructMetadata.0`): a NUL-terminated
/// fixed-length string of the chunk's size. (Older sidecars describe a scalar
/// variable-length string the same way, its chunk the 16-byte heap reference.)
fn scalar_fixed_string(el: &Element) -> Option<DataType> {
    if el.child("Dim").is_some() || el.child("vlsa").is_some() {
        return None;
    }
    let c = el.child("chunks")?;
    if c.attr("compressionType").is_some() || c.child("chunkDimensionSizes").is_some() {
        return None;
    }
    let mut listed = c.children_named("chunk");
    let (one, None) = (listed.next()?, listed.next()) else {
        return None;
    };
    let size = one
        .attr("nBytes")?
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0 && n <= MAX_SCALAR_STRING)?;
    let info = TypeInfo::FixedString {
        size: usize::try_from(size).ok()?,
        pad: StrPad::NullTerm,
    };
    vzarr_hdf5_map::types::data_type(&info).ok().map(|(t, _)| t)
}

/// The fill value: the `fillValue` of `dmrpp:chunks` (Hyrax writes floats with six
/// significant digits), replaced by the `_FillValue` attribute's exact value where the two
/// agree; zero without either (HDF5's default).
fn fill_value(
    t: &DataType,
    chunks: Option<&Element>,
    attributes: &Attributes,
) -> Result<FillValue, String> {
    let stated = chunks.and_then(|c| c.attr("fillValue"));
    let attr = attributes.get("_FillValue").and_then(|v| match v {
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::String(s) => Some(s.clone()),
        _ => None,
    });
    let text = match (stated, attr) {
        (Some(s), Some(a)) if t.is_float() => {
            let (x, y) = (types::parse_float(s), types::parse_float(&a));
            match (x, y) {
                (Some(x), Some(y)) if x == y || (x - y).abs() <= 1e-5 * y.abs() => a,
                (Some(x), Some(y)) if x.is_nan() && y.is_nan() => a,
                _ => s.to_string(),
            }
        }
        (Some(s), _) => s.to_string(),
        (None, Some(a)) => a,
        (None, None) => return Ok(FillValue::zero(t.clone())),
    };
    let text = netcdf_default(t, &text).unwrap_or(text);
    let bytes = types::le_bytes(t, &text).map_err(|e| format!("fill value: {e}"))?;
    FillValue::from_le_bytes(t.clone(), &bytes).map_err(|e| e.to_string())
}

/// netCDF's default fill value of a float type (`NC_FILL_FLOAT`, `NC_FILL_DOUBLE`: 2^103 x
/// 0x1.ep, 9.969209968386869e36), exactly, where `text` is it to six significant digits.
fn netcdf_default(t: &DataType, text: &str) -> Option<String> {
    const NC_FILL: f64 = 9.969_209_968_386_869e36;
    let v = types::parse_float(text)?;
    (t.is_float() && (v - NC_FILL).abs() <= 1e-5 * NC_FILL).then(|| format!("{NC_FILL:e}"))
}

/// The filters of `compressionType`, as codecs in encoding order.
fn codecs(doc: &Doc<'_>, c: &Element, t: &DataType) -> Result<Vec<Codec>, String> {
    let listed: Vec<&str> = c
        .attr("compressionType")
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let levels: Vec<u32> = c
        .attr("deflateLevel")
        .or_else(|| c.attr("deflate_level"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|l| l.parse().ok())
        .collect();
    let mut deflates = 0usize;
    let mut codec = |f: &str| -> Result<Codec, String> {
        Ok(match f {
            "deflate" => {
                let level = levels.get(deflates).or(levels.last()).copied().unwrap_or(6);
                deflates += 1;
                Codec::Zlib { level }
            }
            "shuffle" => Codec::Shuffle {
                element_size: t.size(),
            },
            "fletcher32" => Codec::Fletcher32,
            other => {
                return Err(format!(
                    "filter {other:?} (Hyrax reads deflate, shuffle and fletcher32)"
                ));
            }
        })
    };
    if doc.versioned {
        listed.iter().map(|f| codec(f)).collect()
    } else {
        // Hyrax before versioned DMR++ decodes inflating first, then unshuffling, whatever
        // the order written: in encoding order, shuffle before deflate.
        let mut out = Vec::new();
        for f in ["shuffle", "deflate", "fletcher32"] {
            for _ in listed.iter().filter(|&&x| x == f) {
                out.push(codec(f)?);
            }
        }
        if let Some(other) = listed
            .iter()
            .find(|f| !matches!(**f, "shuffle" | "deflate" | "fletcher32"))
        {
            return Err(codec(other).err().unwrap_or_default());
        }
        Ok(out)
    }
}

/// The `offset` and `nBytes` of a chunk or block element (`what`, for messages).
fn byte_range(el: &Element, what: &str) -> Result<(u64, u64), String> {
    let num = |k: &str| {
        el.attr(k)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("{what} without a valid {k}"))
    };
    let (o, n) = (num("offset")?, num("nBytes")?);
    o.checked_add(n)
        .ok_or_else(|| format!("{what}'s end overflows"))?;
    Ok((o, n))
}

/// HDF4's linked blocks (`dmrpp:block`, in the order of the data): an uncompressed array
/// stored in pieces. Zarr expresses them where each block holds whole rows along the first
/// axis: one chunk per block, the blocks' row counts the grid's edges along that axis
/// (rectilinear where they differ). Compressed data across blocks, or a block ending inside a
/// row, cannot be expressed: refused with the reason.
fn linked_blocks(
    c: &Element,
    codecs: &[Codec],
    shape: &[u64],
    bytes: u64,
    place: &Place<'_>,
) -> Result<Chunks, String> {
    if let Some(other) = c.children.iter().find(|e| e.name != "block") {
        return Err(format!(
            "HDF4 linked blocks with a dmrpp:{} beside them: not read from DMR++",
            other.name
        ));
    }
    if !codecs.is_empty() {
        return Err(
            "HDF4 linked blocks of compressed data: one compressed stream across \
             blocks has no Zarr chunking"
                .into(),
        );
    }
    let blocks = c
        .children_named("block")
        .map(|b| byte_range(b, "a linked block"))
        .collect::<Result<Vec<_>, _>>()?;
    let urls = c
        .children_named("block")
        .map(|b| place.chunk_url(b.attr("href")))
        .collect::<Result<Vec<_>, _>>()?;
    let total = blocks
        .iter()
        .try_fold(0u64, |t, &(_, n)| t.checked_add(n))
        .ok_or("linked blocks' sizes overflow")?;
    if total != bytes {
        return Err(format!(
            "HDF4 linked blocks of {total} bytes for an array of {bytes}"
        ));
    }
    let rows = shape.first().copied().unwrap_or(1);
    if blocks.len() as u64 > MAX_LISTED || rows == 0 {
        return Err(format!("{} HDF4 linked blocks", blocks.len()));
    }
    let row_bytes = bytes / rows;
    let mut edges = Vec::with_capacity(blocks.len());
    for &(o, n) in &blocks {
        if n == 0 || row_bytes == 0 || n % row_bytes != 0 || shape.is_empty() {
            return Err(format!(
                "an HDF4 linked block (bytes {o}+{n}) ends inside a row of {row_bytes} bytes: \
                 no Zarr chunk grid holds it"
            ));
        }
        edges.push(n / row_bytes);
    }
    let mut dims = vec![DimGrid::from_edges(edges, rows).map_err(|e| e.to_string())?];
    for &d in &shape[1..] {
        dims.push(DimGrid::fixed(d.max(1), d).map_err(|e| e.to_string())?);
    }
    let grid = ChunkGrid::new(dims);
    let mut m = ChunkManifest::new_missing(blocks.len());
    for (i, (&(o, n), url)) in blocks.iter().zip(&urls).enumerate() {
        let sid = m.intern(url).map_err(|e| e.to_string())?;
        m.set_range(i, sid, o, n).map_err(|e| e.to_string())?;
    }
    Ok(Chunks { grid, manifest: m })
}

/// A variable's chunks, its filters (in encoding order) and its chunk shape (`None`:
/// contiguous or compact).
type Stored = (Chunks, Vec<Codec>, Option<Vec<u64>>);

/// A `dmrpp:chunks` element: chunked (`chunkDimensionSizes` and positions) or contiguous
/// (one byte range, or several adjacent ones Hyrax lists for parallel reads).
fn chunked(
    doc: &Doc<'_>,
    c: &Element,
    t: &DataType,
    shape: &[u64],
    bytes: u64,
) -> Result<Stored, String> {
    let codecs = codecs(doc, c, t)?;
    let place = &doc.place;
    if c.name == "chunks" && c.children_named("block").next().is_some() {
        return linked_blocks(c, &codecs, shape, bytes, place).map(|k| (k, codecs, None));
    }
    // Anything else inside (elements of later DMR++ versions) would leave bytes undescribed:
    // the variable is refused rather than read as fill.
    if let Some(other) = c
        .children
        .iter()
        .find(|e| !matches!(e.name.as_str(), "chunk" | "chunkDimensionSizes"))
        .filter(|_| c.name == "chunks")
    {
        return Err(format!(
            "dmrpp:{} inside dmrpp:chunks: not read from DMR++",
            other.name
        ));
    }
    let listed: Vec<&Element> = c.children_named("chunk").collect();
    // The filter mask of each chunk (bes writes the HDF5 chunk's, in decimal).
    let mask = |ch: &Element| -> Result<u32, String> {
        match ch.attr("fm").map(str::trim) {
            None => Ok(0),
            Some(m) => m
                .parse::<u32>()
                .map_err(|_| format!("a chunk's filter mask fm={m:?} is not a number")),
        }
    };
    let range = |ch: &Element| byte_range(ch, "a chunk");
    let sizes = c.child("chunkDimensionSizes");
    let Some(sizes) = sizes else {
        if let Some(ch) = listed.iter().find(|ch| mask(ch) != Ok(0)) {
            return Err(format!(
                "contiguous data with a filter mask (fm={:?}): HDF5 masks chunks only",
                ch.attr("fm").unwrap_or_default()
            ));
        }
        // Contiguous: the ranges must follow each other, in one file, and hold the array.
        let mut ranges = listed
            .iter()
            .map(|ch| range(ch))
            .collect::<Result<Vec<_>, _>>()?;
        let mut urls = listed
            .iter()
            .map(|ch| place.chunk_url(ch.attr("href")))
            .collect::<Result<Vec<_>, _>>()?;
        urls.dedup();
        if urls.len() > 1 {
            return Err(format!(
                "contiguous data in ranges of {} files: one range of one file in Zarr",
                urls.len()
            ));
        }
        let url = urls.pop().unwrap_or_else(|| place.data_url.to_string());
        ranges.sort_unstable();
        let grid = ChunkGrid::whole(shape).map_err(|e| e.to_string())?;
        let mut m = ChunkManifest::new_missing(1);
        let Some(&(start, _)) = ranges.first() else {
            return Ok((Chunks { grid, manifest: m }, codecs, None));
        };
        let mut end = start;
        for &(o, n) in &ranges {
            if o != end {
                return Err(format!(
                    "contiguous data in ranges that do not follow each other (byte {o} after {end})"
                ));
            }
            end += n;
        }
        if codecs.is_empty() && end - start != bytes {
            return Err(format!(
                "contiguous data of {} bytes for an array of {bytes}",
                end - start
            ));
        }
        let sid = m.intern(&url).map_err(|e| e.to_string())?;
        m.set_range(0, sid, start, end - start)
            .map_err(|e| e.to_string())?;
        return Ok((Chunks { grid, manifest: m }, codecs, None));
    };
    let chunk: Vec<u64> = sizes
        .text
        .split_whitespace()
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| format!("chunk size {s:?} is not a number"))
        })
        .collect::<Result<_, _>>()?;
    if chunk.len() != shape.len() || chunk.contains(&0) {
        return Err(format!(
            "chunk shape {chunk:?} for an array of shape {shape:?}"
        ));
    }
    let dims = chunk
        .iter()
        .zip(shape)
        .map(|(&c, &s)| DimGrid::fixed(c, s).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let grid = ChunkGrid::new(dims);
    let n = grid.n_chunks().map_err(|e| e.to_string())?;
    if n > MAX_CHUNKS {
        return Err(format!(
            "{n} chunks, over the {MAX_CHUNKS} an array may have"
        ));
    }
    if listed.len() as u64 > MAX_LISTED {
        return Err(format!(
            "{} chunks listed, over the {MAX_LISTED} one array may reference",
            listed.len()
        ));
    }
    let counts: Vec<u64> = chunk
        .iter()
        .zip(shape)
        .map(|(&c, &s)| s.div_ceil(c))
        .collect();
    // Sparse where few of a large grid's chunks are listed: nothing allocated per chunk.
    let mut m = ChunkManifest::new_missing_expecting(n as usize, listed.len());
    for ch in listed {
        let (o, len) = range(ch)?;
        // Interned as met: an array whose chunks are all in other files names no granule.
        let sid = match ch.attr("href") {
            None => m.intern(place.data_url),
            h => m.intern(&place.chunk_url(h)?),
        }
        .map_err(|e| e.to_string())?;
        let pos: Vec<u64> = ch
            .attr("chunkPositionInArray")
            .unwrap_or("[]")
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("chunk position {s:?}"))
            })
            .collect::<Result<_, _>>()?;
        if pos.len() != shape.len() {
            return Err(format!(
                "chunk position {pos:?} for an array of {} axes",
                shape.len()
            ));
        }
        let mut index = 0u64;
        for ((&p, &c), &k) in pos.iter().zip(&chunk).zip(&counts) {
            if p % c != 0 || p / c >= k {
                return Err(format!(
                    "chunk position {pos:?} is not on the chunk grid {chunk:?}"
                ));
            }
            index = index * k + p / c;
        }
        m.set_range(index as usize, sid, o, len)
            .map_err(|e| e.to_string())?;
        match mask(ch)? {
            0 => {}
            fm if codecs.is_empty() => {
                return Err(format!(
                    "a chunk with a filter mask (fm={fm}) in an array without filters"
                ));
            }
            fm => doc.pending_masks.borrow_mut().push((index, fm)),
        }
    }
    // A chunk longer than the array along the first axis, as the HDF5 mapping cuts it.
    let cut = Chunks { grid, manifest: m }.cut_to_extent(codecs.is_empty(), t.size());
    Ok((cut, codecs, Some(chunk)))
}
