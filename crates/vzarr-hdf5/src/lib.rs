//! HDF5 and NetCDF4 scanner: reads the native layout of every dataset of a file through the
//! HDF5 library and returns it as a [`VirtualDataset`].
//!
//! Policy for what cannot be virtualised: a dataset whose data type, filter or layout has no
//! Zarr v3 equivalent that zarr-python 3.4 reads (variable-length strings, references,
//! compound types, LZF, N-bit, ...) is left out and listed in
//! [`VirtualDataset::skipped`] with the reason; the rest of the file is still virtualised.
//! Callers that want such files to fail check `skipped` (the CLI's `--strict`). Files that
//! cannot be read at all are an [`Hdf5Error`].

mod filters;
mod raw;

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::path::Path;
use std::ptr;

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, herr_t, hsize_t};
use hdf5_sys::h5d::{
    H5D_fill_value_t, H5D_layout_t, H5Dget_create_plist, H5Dget_offset, H5Dget_space, H5Dget_type,
    H5Dread,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5l::{H5L_info2_t, H5L_type_t, H5Literate2};
use hdf5_sys::h5o::{H5O_INFO_BASIC, H5O_info2_t, H5O_type_t, H5Oget_info_by_name3};
use hdf5_sys::h5p::{
    H5P_DEFAULT, H5Pfill_value_defined, H5Pget_chunk, H5Pget_external_count, H5Pget_fill_value,
    H5Pget_layout,
};
use hdf5_sys::h5s::H5S_ALL;
use serde_json::Value;
use vzarr_core::attrs::cf_fill_value;
use vzarr_core::{
    Attributes, ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue, Group,
    SkippedVariable, VirtualArray, VirtualDataset,
};

use raw::{HADDR_UNDEF, RawAttr, TypeInfo};

/// Options of an HDF5 scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Split uncompressed contiguous datasets larger than this many bytes into virtual chunks
    /// along axis 0, each at most this size (at least one row). `None` keeps one chunk.
    pub split_contiguous_bytes: Option<u64>,
}

/// A file that could not be scanned, naming the file and, where known, the object.
#[derive(Debug, thiserror::Error)]
pub enum Hdf5Error {
    /// The file could not be opened as HDF5.
    #[error("{path}: cannot open as HDF5: {reason}")]
    Open {
        /// File path.
        path: String,
        /// Why.
        reason: String,
    },
    /// An object of the file could not be read.
    #[error("{path}: {object}: {reason}")]
    Object {
        /// File path.
        path: String,
        /// Object path inside the file.
        object: String,
        /// Why.
        reason: String,
    },
}

/// The 8-byte HDF5 format signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Offsets where an HDF5 superblock may start in a file of `size` bytes: 0, 512, 1024, 2048, ...
pub fn signature_offsets(size: u64) -> impl Iterator<Item = u64> {
    std::iter::once(0u64)
        .chain((9..63).map(|k| 1u64 << k))
        .take_while(move |&o| o.saturating_add(8) <= size)
}

/// Attributes that are HDF5 or netCDF bookkeeping, never user attributes.
const DROPPED_ATTRS: &[&str] = &[
    "DIMENSION_LIST",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_nc3_strict",
    "_NCProperties",
];
/// Attributes of dimension scales that only describe the scale itself.
const SCALE_ATTRS: &[&str] = &["CLASS", "NAME", "REFERENCE_LIST"];
/// The `NAME` of a netCDF dimension that is not a variable.
const DIMENSION_ONLY: &str = "This is a netCDF dimension but not a netCDF variable";

struct Ctx<'a> {
    path: String,
    url: String,
    file_size: u64,
    opts: &'a ScanOptions,
    out: VirtualDataset,
    /// Phony dimensions per group: (group, length) -> names.
    phony: HashMap<(String, u64), Vec<String>>,
    phony_count: usize,
    /// The root group, for resolving object references.
    root: hid_t,
    /// Object paths by address, built when the first reference is resolved.
    names: Option<raw::ObjectNames>,
}

impl Ctx<'_> {
    fn object_error(&self, object: &str, reason: impl Into<String>) -> Hdf5Error {
        Hdf5Error::Object {
            path: self.path.clone(),
            object: object.to_string(),
            reason: reason.into(),
        }
    }

    fn skip(&mut self, object: &str, reason: impl Into<String>) {
        self.out.skipped.push(SkippedVariable {
            path: object.to_string(),
            reason: reason.into(),
        });
    }
}

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
            phony: HashMap::new(),
            phony_count: 0,
            root: file.id(),
            names: None,
        };
        let root = file
            .as_group()
            .map_err(|e| ctx.object_error("/", e.to_string()))?;
        walk_group(&mut ctx, &root, "")?;
        ctx.out
            .validate()
            .map_err(|e| ctx.object_error("/", e.to_string()))?;
        Ok(ctx.out)
    })
}

/// A readable reason for an HDF5 open failure; a truncated file says how much is missing.
fn open_reason(hdf5_message: &str) -> String {
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

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// Links of a group in name order: (name, link type).
fn links(group: hid_t) -> Result<Vec<(String, H5L_type_t)>, String> {
    unsafe extern "C" fn collect(
        _g: hid_t,
        name: *const c_char,
        info: *const H5L_info2_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 passes a valid name and info; `data` is the Vec below.
        unsafe {
            let out = &mut *(data as *mut Vec<(String, H5L_type_t)>);
            let name = std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned();
            out.push((name, (*info).type_));
        }
        0
    }
    let mut out: Vec<(String, H5L_type_t)> = Vec::new();
    let mut idx: hsize_t = 0;
    // SAFETY: valid group id; the callback only appends to `out`.
    let r = unsafe {
        H5Literate2(
            group,
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_INC,
            &mut idx,
            Some(collect),
            (&mut out as *mut Vec<(String, H5L_type_t)>).cast(),
        )
    };
    if r < 0 {
        return Err("cannot list the group's links".into());
    }
    Ok(out)
}

fn object_type(group: hid_t, name: &str) -> Result<H5O_type_t, String> {
    let c = CString::new(name).map_err(|_| format!("link name {name:?} has a NUL byte"))?;
    let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid group id, NUL-terminated name, valid out-pointer.
    if unsafe { H5Oget_info_by_name3(group, c.as_ptr(), &mut info, H5O_INFO_BASIC, H5P_DEFAULT) }
        < 0
    {
        return Err("object header unreadable".into());
    }
    Ok(info.type_)
}

fn walk_group(ctx: &mut Ctx, group: &hdf5::Group, path: &str) -> Result<(), Hdf5Error> {
    let gid = group.id();
    let attrs = raw::read_attributes(gid).map_err(|e| ctx.object_error(or_root(path), e))?;
    let attributes = convert_attributes(ctx, path, attrs, false, None);
    ctx.out
        .groups
        .insert(path.to_string(), Group { attributes });
    let members = links(gid).map_err(|e| ctx.object_error(or_root(path), e))?;
    for (name, kind) in members {
        let child = join(path, &name);
        match kind {
            H5L_type_t::H5L_TYPE_HARD => {}
            H5L_type_t::H5L_TYPE_SOFT => {
                ctx.skip(
                    &child,
                    "soft link (not followed; the target is scanned where it lives)",
                );
                continue;
            }
            _ => {
                ctx.skip(&child, "external or user-defined link (not followed)");
                continue;
            }
        }
        match object_type(gid, &name).map_err(|e| ctx.object_error(&child, e))? {
            H5O_type_t::H5O_TYPE_GROUP => {
                let g = group
                    .group(&name)
                    .map_err(|e| ctx.object_error(&child, e.to_string()))?;
                walk_group(ctx, &g, &child)?;
            }
            H5O_type_t::H5O_TYPE_DATASET => {
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

fn or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

enum Scanned {
    Array(Box<VirtualArray>),
    Refused(String),
    DimensionOnly,
}

fn data_type(info: &TypeInfo) -> Result<(DataType, Endian), String> {
    let endian = |big: bool| if big { Endian::Big } else { Endian::Little };
    Ok(match *info {
        TypeInfo::Int {
            size,
            signed,
            big_endian,
        }
        | TypeInfo::Enum {
            size,
            signed,
            big_endian,
        } => {
            let dt =
                DataType::integer(size, signed).ok_or_else(|| format!("{size}-byte integer"))?;
            (dt, endian(big_endian))
        }
        TypeInfo::Float { size, big_endian } => {
            let dt = DataType::float(size).ok_or_else(|| format!("{size}-byte float"))?;
            (dt, endian(big_endian))
        }
        TypeInfo::Bool => (DataType::Bool, Endian::Little),
        TypeInfo::FixedString { size, pad } => {
            if size == 0 {
                return Err("zero-length string type".into());
            }
            if pad == raw::StrPad::SpacePad {
                return Err(
                    "fixed-length string with space padding: HDF5 strips the padding \
                            spaces on read, but the stored bytes keep them"
                        .into(),
                );
            }
            (DataType::FixedBytes(size), Endian::Little)
        }
        TypeInfo::VarString { .. } => {
            return Err(
                "variable-length string data type: chunks hold references into the HDF5 \
                        global heap, not the strings, so they cannot be referenced in place"
                    .into(),
            );
        }
        TypeInfo::Other(ref what) => {
            return Err(format!(
                "unsupported data type ({what}): Zarr v3 has no equivalent that \
                                zarr-python 3.4 reads"
            ));
        }
    })
}

fn scan_dataset(
    ctx: &mut Ctx,
    ds: &hdf5::Dataset,
    group_path: &str,
    path: &str,
) -> Result<Scanned, Hdf5Error> {
    let id = ds.id();
    let err = |ctx: &Ctx, e: String| ctx.object_error(path, e);
    // SAFETY: valid dataset id; the returned ids are owned by the wrappers.
    let dcpl = raw::plist_hid(unsafe { H5Dget_create_plist(id) }, "H5Dget_create_plist")
        .map_err(|e| err(ctx, e))?;
    let ftype =
        raw::type_hid(unsafe { H5Dget_type(id) }, "H5Dget_type").map_err(|e| err(ctx, e))?;
    let space =
        raw::space_hid(unsafe { H5Dget_space(id) }, "H5Dget_space").map_err(|e| err(ctx, e))?;

    let is_scale = raw::string_attr(id, "CLASS").as_deref() == Some("DIMENSION_SCALE");
    if is_scale && raw::is_unlimited_1d(space.id()) {
        let name = path.rsplit('/').next().unwrap_or(path);
        ctx.out.unlimited_dims.insert(name.to_string());
    }
    if is_scale && raw::string_attr(id, "NAME").is_some_and(|n| n.starts_with(DIMENSION_ONLY)) {
        return Ok(Scanned::DimensionOnly);
    }
    let Some(shape) = raw::space_shape(space.id()).map_err(|e| err(ctx, e))? else {
        return Ok(Scanned::Refused(
            "null dataspace: the dataset holds no data".into(),
        ));
    };
    let (data_type, endian) = match data_type(&raw::type_info(ftype.id())) {
        Ok(v) => v,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    // SAFETY: valid dcpl id.
    let layout = unsafe { H5Pget_layout(dcpl.id()) };
    if unsafe { H5Pget_external_count(dcpl.id()) } > 0 {
        return Ok(Scanned::Refused(
            "raw data in external files (H5Pset_external)".into(),
        ));
    }
    let codecs = match filters::codecs(dcpl.id(), data_type) {
        Ok(c) => c,
        Err(reason) => return Ok(Scanned::Refused(reason)),
    };
    let fill_value =
        dataset_fill(dcpl.id(), ftype.id(), data_type, endian).map_err(|e| err(ctx, e))?;
    let chunked = match layout {
        H5D_layout_t::H5D_CHUNKED => {
            let enc = ChunkEncoding {
                ftype: ftype.id(),
                fill: fill_value.bytes_in(data_type, endian),
                codecs: &codecs,
            };
            match chunk_refs(ctx, ds, dcpl.id(), &shape, &enc, path)? {
                Ok(v) => v,
                Err(reason) => return Ok(Scanned::Refused(reason)),
            }
        }
        H5D_layout_t::H5D_CONTIGUOUS => {
            if !codecs.is_empty() {
                return Ok(Scanned::Refused("contiguous dataset with filters".into()));
            }
            contiguous_refs(ctx, id, &shape, data_type.size(), path)?
        }
        H5D_layout_t::H5D_COMPACT => {
            compact_refs(ctx, id, ftype.id(), &shape, data_type.size(), path)?
        }
        H5D_layout_t::H5D_VIRTUAL => {
            return Ok(Scanned::Refused(
                "virtual dataset (VDS): its data lives in other datasets".into(),
            ));
        }
        other => {
            return Ok(Scanned::Refused(format!(
                "unknown storage layout {other:?}"
            )));
        }
    };
    let (grid, manifest) = chunked;

    let raw_attrs = raw::read_attributes(id).map_err(|e| err(ctx, e))?;
    let attributes = convert_attributes(
        ctx,
        path,
        raw_attrs,
        is_scale,
        Some((data_type, &fill_value)),
    );
    let dimension_names = dimension_names(ctx, id, group_path, path, &shape, is_scale)?;
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

fn dataset_fill(
    dcpl: hid_t,
    ftype: hid_t,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    let mut status = H5D_fill_value_t::H5D_FILL_VALUE_DEFAULT;
    // SAFETY: valid dcpl id; out-pointer valid.
    if unsafe { H5Pfill_value_defined(dcpl, &mut status) } < 0 {
        return Err("fill value status unreadable".into());
    }
    if status != H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        return Ok(FillValue::zero(dt));
    }
    let mut buf = vec![0u8; dt.size()];
    // SAFETY: buffer holds one element of the file type.
    if unsafe { H5Pget_fill_value(dcpl, ftype, buf.as_mut_ptr().cast()) } < 0 {
        return Err("fill value unreadable".into());
    }
    if endian == Endian::Big && dt.has_endianness() {
        buf.reverse();
    }
    FillValue::from_le_bytes(dt, &buf).map_err(|e| e.to_string())
}

type Refs = (ChunkGrid, ChunkManifest);

fn grid_error(ctx: &Ctx, path: &str, e: vzarr_core::CoreError) -> Hdf5Error {
    ctx.object_error(path, e.to_string())
}

fn new_manifest(
    ctx: &Ctx,
    grid: &ChunkGrid,
    path: &str,
) -> Result<(ChunkManifest, u32), Hdf5Error> {
    let n = grid.n_chunks().map_err(|e| grid_error(ctx, path, e))?;
    let n = usize::try_from(n).map_err(|_| ctx.object_error(path, "too many chunks"))?;
    let mut m = ChunkManifest::new_missing(n);
    let sid = m.intern(&ctx.url).map_err(|e| grid_error(ctx, path, e))?;
    Ok((m, sid))
}

fn check_range(ctx: &Ctx, path: &str, what: &str, addr: u64, len: u64) -> Result<(), Hdf5Error> {
    if addr.checked_add(len).is_none_or(|end| end > ctx.file_size) {
        return Err(ctx.object_error(
            path,
            format!(
                "{what} at byte {addr} with {len} bytes ends past the end of the file ({} bytes): \
                 the file is truncated or corrupt",
                ctx.file_size
            ),
        ));
    }
    Ok(())
}

/// What it takes to re-encode a chunk of a dataset.
struct ChunkEncoding<'a> {
    /// The dataset's file type (reading with it as memory type does no conversion).
    ftype: hid_t,
    /// One fill element in the stored byte order.
    fill: Vec<u8>,
    /// The dataset's codecs.
    codecs: &'a [vzarr_core::Codec],
}

fn chunk_refs(
    ctx: &mut Ctx,
    ds: &hdf5::Dataset,
    dcpl: hid_t,
    shape: &[u64],
    enc: &ChunkEncoding,
    path: &str,
) -> Result<Result<Refs, String>, Hdf5Error> {
    let rank = shape.len();
    let mut chunk = vec![0 as hsize_t; rank];
    // SAFETY: buffer of `rank` entries.
    let got = unsafe { H5Pget_chunk(dcpl, rank as i32, chunk.as_mut_ptr()) };
    if got != rank as i32 || chunk.contains(&0) {
        return Err(ctx.object_error(path, "chunk shape unreadable"));
    }
    let grid = ChunkGrid::regular(shape, &chunk).map_err(|e| grid_error(ctx, path, e))?;
    let (mut manifest, sid) = new_manifest(ctx, &grid, path)?;
    let mut bad: Option<String> = None;
    let mut masked: Vec<(Vec<u64>, u32)> = Vec::new();
    let file_size = ctx.file_size;
    // Chunks per axis, computed once: the callback runs for every chunk (millions), so it
    // computes the C-order position in place, without allocating.
    let counts = grid.grid_shape();
    let visit = ds.chunks_visit(|c| {
        let mut lin: u64 = 0;
        for ((&o, &s), &n) in c.offset.iter().zip(&chunk).zip(&counts) {
            let i = o / s;
            if i >= n {
                return 0; // A chunk past the current extent (the dataset shrank): never read.
            }
            // Cannot overflow: the grid's chunk count fits the manifest.
            lin = lin * n + i;
        }
        if c.addr == HADDR_UNDEF {
            return 0;
        }
        if c.addr.checked_add(c.size).is_none_or(|end| end > file_size) {
            bad = Some(format!(
                "chunk {:?} at byte {} with {} bytes ends past the end of the file ({file_size} \
                 bytes): the file is truncated or corrupt",
                grid.chunk_index(lin),
                c.addr,
                c.size
            ));
            return -1;
        }
        if c.filter_mask != 0 {
            masked.push((grid.chunk_index(lin), c.filter_mask));
            return 0;
        }
        if let Err(e) = manifest.set_range(lin as usize, sid, c.addr, c.size) {
            bad = Some(e.to_string());
            return -1;
        }
        0
    });
    if let Some(reason) = bad {
        return Err(ctx.object_error(path, reason));
    }
    visit.map_err(|e| ctx.object_error(path, format!("chunk index unreadable: {e}")))?;
    if !masked.is_empty() {
        // Chunks stored with some filters skipped cannot share the array's codec chain:
        // read their values through HDF5 and store them re-encoded with the full chain.
        let codecs = match vzarr_codec::ByteCodecs::new(enc.codecs) {
            Ok(c) => c,
            Err(e) => {
                let (idx, mask) = &masked[0];
                return Ok(Err(format!(
                    "{} chunk(s) were stored with some filters skipped (first: chunk {idx:?}, \
                     filter mask {mask:#x}) and cannot be re-encoded: {e}",
                    masked.len()
                )));
            }
        };
        for (idx, mask) in &masked {
            let raw = read_chunk_values(ds.id(), &grid, idx, enc).map_err(|e| {
                ctx.object_error(path, format!("chunk {idx:?} (filter mask {mask:#x}): {e}"))
            })?;
            let encoded = codecs
                .encode(&raw)
                .map_err(|e| ctx.object_error(path, format!("chunk {idx:?}: {e}")))?;
            let lin = grid.linear_index(idx).expect("index inside the grid") as usize;
            manifest
                .set_inline(lin, encoded)
                .map_err(|e| grid_error(ctx, path, e))?;
        }
    }
    Ok(Ok((grid, manifest)))
}

/// The raw bytes (stored byte order, full chunk shape, fill value past the array's edge) of
/// the chunk at `idx`, read through HDF5 so that its filters are undone as the library does.
fn read_chunk_values(
    ds: hid_t,
    grid: &ChunkGrid,
    idx: &[u64],
    enc: &ChunkEncoding,
) -> Result<Vec<u8>, String> {
    use hdf5_sys::h5s::{H5S_seloper_t, H5Screate_simple, H5Sselect_hyperslab};
    let origin = grid.chunk_origin(idx);
    let cshape = grid.chunk_shape(idx);
    let valid = grid.chunk_valid_shape(idx);
    let esize = enc.fill.len().max(1);
    let nelem = cshape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
        .filter(|&n| n.saturating_mul(esize) <= 1 << 31)
        .ok_or("chunk too large to re-encode")?;
    let mut buf = enc.fill.repeat(nelem);
    let rank = cshape.len() as i32;
    let zeros = vec![0 as hsize_t; cshape.len()];
    // SAFETY: the dataspaces are created and owned here; the selections lie inside them; the
    // buffer holds the whole memory dataspace in the file type.
    unsafe {
        let mem = raw::space_hid(
            H5Screate_simple(rank, cshape.as_ptr(), ptr::null()),
            "H5Screate_simple",
        )?;
        let file = raw::space_hid(H5Dget_space(ds), "H5Dget_space")?;
        let set = H5S_seloper_t::H5S_SELECT_SET;
        let null = ptr::null();
        if H5Sselect_hyperslab(mem.id(), set, zeros.as_ptr(), null, valid.as_ptr(), null) < 0
            || H5Sselect_hyperslab(file.id(), set, origin.as_ptr(), null, valid.as_ptr(), null) < 0
        {
            return Err("hyperslab selection failed".into());
        }
        if H5Dread(
            ds,
            enc.ftype,
            mem.id(),
            file.id(),
            H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        ) < 0
        {
            return Err("reading the chunk through HDF5 failed".into());
        }
    }
    Ok(buf)
}

fn contiguous_refs(
    ctx: &mut Ctx,
    id: hid_t,
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Refs, Hdf5Error> {
    let nelem = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let nbytes = nelem
        .and_then(|n| n.checked_mul(esize as u64))
        .ok_or_else(|| ctx.object_error(path, "dataset size overflows"))?;
    let row_bytes = shape
        .iter()
        .skip(1)
        .try_fold(esize as u64, |a, &d| a.checked_mul(d))
        .unwrap_or(0);
    let grid = match (ctx.opts.split_contiguous_bytes, shape.first()) {
        (Some(target), Some(&n0)) if nbytes > target && row_bytes > 0 && n0 > 1 => {
            let rows = (target / row_bytes).clamp(1, n0);
            let mut edges = vec![rows; (n0 / rows) as usize];
            if n0 % rows != 0 {
                edges.push(n0 % rows);
            }
            let mut dims =
                vec![DimGrid::from_edges(edges, n0).map_err(|e| grid_error(ctx, path, e))?];
            for &d in &shape[1..] {
                dims.push(DimGrid::fixed(d.max(1), d).map_err(|e| grid_error(ctx, path, e))?);
            }
            ChunkGrid::new(dims)
        }
        _ => {
            let cs: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
            ChunkGrid::regular(shape, &cs).map_err(|e| grid_error(ctx, path, e))?
        }
    };
    let (mut manifest, sid) = new_manifest(ctx, &grid, path)?;
    // SAFETY: valid dataset id.
    let addr = unsafe { H5Dget_offset(id) };
    if addr == HADDR_UNDEF || nbytes == 0 {
        return Ok((grid, manifest)); // Never written: every chunk reads as the fill value.
    }
    check_range(ctx, path, "contiguous data", addr, nbytes)?;
    if shape.is_empty() {
        manifest
            .set_range(0, sid, addr, nbytes)
            .map_err(|e| grid_error(ctx, path, e))?;
        return Ok((grid, manifest));
    }
    let axis0 = &grid.dims()[0];
    for i in 0..axis0.n_chunks() {
        let start = axis0.chunk_start(i);
        let rows = axis0.chunk_valid_len(i);
        manifest
            .set_range(i as usize, sid, addr + start * row_bytes, rows * row_bytes)
            .map_err(|e| grid_error(ctx, path, e))?;
    }
    Ok((grid, manifest))
}

fn compact_refs(
    ctx: &mut Ctx,
    id: hid_t,
    ftype: hid_t,
    shape: &[u64],
    esize: usize,
    path: &str,
) -> Result<Refs, Hdf5Error> {
    let cs: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    let grid = ChunkGrid::regular(shape, &cs).map_err(|e| grid_error(ctx, path, e))?;
    let (mut manifest, _) = new_manifest(ctx, &grid, path)?;
    let nelem: u64 = shape.iter().product();
    if nelem == 0 {
        return Ok((grid, manifest));
    }
    // Compact data lives in the object header, at most 64 KiB.
    let nbytes = usize::try_from(nelem * esize as u64)
        .ok()
        .filter(|&n| n <= 1 << 16)
        .ok_or_else(|| ctx.object_error(path, "compact dataset larger than 64 KiB"))?;
    let mut buf = vec![0u8; nbytes];
    // SAFETY: the buffer holds every element in the file type (no conversion).
    if unsafe {
        H5Dread(
            id,
            ftype,
            H5S_ALL,
            H5S_ALL,
            H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        )
    } < 0
    {
        return Err(ctx.object_error(path, "compact data unreadable"));
    }
    manifest
        .set_inline(0, buf)
        .map_err(|e| grid_error(ctx, path, e))?;
    Ok((grid, manifest))
}

/// Converts raw attributes to JSON, dropping bookkeeping attributes and writing `_FillValue`
/// the way xarray's Zarr v3 backend decodes it.
fn convert_attributes(
    ctx: &mut Ctx,
    path: &str,
    attrs: Vec<RawAttr>,
    is_scale: bool,
    array: Option<(DataType, &FillValue)>,
) -> Attributes {
    let mut out = Attributes::new();
    for a in attrs {
        if DROPPED_ATTRS.contains(&a.name.as_str())
            || (is_scale && SCALE_ATTRS.contains(&a.name.as_str()))
        {
            continue;
        }
        let value = match a.value {
            Ok(v) => v,
            Err(reason) => {
                ctx.skip(
                    &format!("{}@{}", or_root(path), a.name),
                    format!("attribute left out: {reason}"),
                );
                continue;
            }
        };
        if a.name == "_FillValue"
            && let Some((dt, _)) = array
        {
            match fill_attr(dt, &value, a.numeric.as_ref()) {
                Some(v) => {
                    out.insert(a.name, v);
                }
                None => ctx.skip(
                    &format!("{path}@_FillValue"),
                    format!(
                        "attribute left out: value {value} does not fit the array's {}",
                        dt.name()
                    ),
                ),
            }
            continue;
        }
        out.insert(a.name, value);
    }
    out
}

/// The `_FillValue` attribute converted to the array's type, in xarray's encoding.
fn fill_attr(dt: DataType, value: &Value, numeric: Option<&(TypeInfo, Vec<u8>)>) -> Option<Value> {
    let first = match value {
        Value::Array(v) => v.first()?,
        v => v,
    };
    let fill = match dt {
        DataType::FixedBytes(n) => {
            let s = first.as_str()?.as_bytes();
            let mut b = s.to_vec();
            b.resize(n, 0);
            b.truncate(n);
            FillValue::from_le_bytes(dt, &b).ok()?
        }
        d if d.is_float() => {
            let f = match numeric {
                Some((TypeInfo::Float { size, big_endian }, bytes)) => {
                    *raw::floats(bytes, *size, *big_endian).first()?
                }
                _ => first.as_f64()?,
            };
            match d {
                DataType::Float16 => {
                    FillValue::from_le_bytes(d, &vzarr_core::f64_to_half(f).to_le_bytes()).ok()?
                }
                _ => FillValue::from_f64(d, f).ok()?,
            }
        }
        DataType::Bool => FillValue::from_i64(
            dt,
            i64::from(first.as_bool().unwrap_or(first.as_i64()? != 0)),
        )
        .ok()?,
        d => {
            if let Some(i) = first.as_i64() {
                FillValue::from_i64(d, i).ok()?
            } else if let (Some(u), DataType::UInt64) = (first.as_u64(), d) {
                FillValue::from_le_bytes(d, &u.to_le_bytes()).ok()?
            } else {
                let f = first.as_f64()?;
                if f.fract() != 0.0 || !f.is_finite() {
                    return None;
                }
                FillValue::from_i64(d, f as i64).ok()?
            }
        }
    };
    Some(cf_fill_value(dt, &fill))
}

fn dimension_names(
    ctx: &mut Ctx,
    id: hid_t,
    group_path: &str,
    path: &str,
    shape: &[u64],
    is_scale: bool,
) -> Result<Vec<String>, Hdf5Error> {
    let own = path.rsplit('/').next().unwrap_or(path).to_string();
    if is_scale && shape.len() == 1 {
        return Ok(vec![own]);
    }
    let list = raw::dimension_list(id, shape.len(), ctx.root, &mut ctx.names).unwrap_or(None);
    let mut names: Vec<Option<String>> = match list {
        Some(l) => l
            .into_iter()
            .map(|p| p.map(|p| p.rsplit('/').next().unwrap_or(&p).to_string()))
            .collect(),
        None => vec![None; shape.len()],
    };
    // Axes without a dimension scale get phony dimensions, shared within a group by length
    // (as netCDF-C does), never twice in one array.
    let mut used: Vec<String> = names.iter().flatten().cloned().collect();
    for (axis, name) in names.iter_mut().enumerate() {
        if name.is_some() {
            continue;
        }
        let key = (group_path.to_string(), shape[axis]);
        let existing = ctx
            .phony
            .get(&key)
            .and_then(|v| v.iter().find(|c| !used.contains(c)).cloned());
        let chosen = existing.unwrap_or_else(|| {
            let n = format!("phony_dim_{}", ctx.phony_count);
            ctx.phony_count += 1;
            ctx.phony.entry(key).or_default().push(n.clone());
            n
        });
        used.push(chosen.clone());
        *name = Some(chosen);
    }
    Ok(names.into_iter().map(Option::unwrap_or_default).collect())
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

    #[test]
    fn signature_offsets_follow_the_spec() {
        let v: Vec<u64> = signature_offsets(5000).collect();
        assert_eq!(v, vec![0, 512, 1024, 2048, 4096]);
        assert_eq!(signature_offsets(4).count(), 0);
    }

    /// Writes a `DIMENSION_LIST` on dataset `var` of the file `file` whose axes reference the
    /// objects at `targets`, as classic (`H5T_STD_REF_OBJ`) or HDF5 1.12 (`H5T_STD_REF`)
    /// object references.
    fn write_dimension_list(file: &hdf5::File, var: &str, targets: &[&str], classic: bool) {
        use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
        use hdf5_sys::h5r::{H5R_ref_t, H5R_type_t, H5Rcreate, H5Rcreate_object, H5Rdestroy};
        use hdf5_sys::h5s::H5Screate_simple;
        use hdf5_sys::h5t::{H5T_STD_REF, H5T_STD_REF_OBJ, H5Tvlen_create};
        #[repr(C)]
        struct Hvl {
            len: usize,
            p: *mut c_void,
        }
        let ds = file.dataset(var).unwrap();
        let names: Vec<CString> = targets.iter().map(|t| CString::new(*t).unwrap()).collect();
        hdf5::sync::sync(|| unsafe {
            let mut old: Vec<u64> = vec![0; targets.len()];
            let mut new: Vec<H5R_ref_t> = vec![std::mem::zeroed(); targets.len()];
            for (i, n) in names.iter().enumerate() {
                let r = if classic {
                    H5Rcreate(
                        (&mut old[i] as *mut u64).cast(),
                        file.id(),
                        n.as_ptr(),
                        H5R_type_t::H5R_OBJECT1,
                        -1,
                    )
                } else {
                    H5Rcreate_object(file.id(), n.as_ptr(), H5P_DEFAULT, &mut new[i])
                };
                assert!(r >= 0);
            }
            let mut hvl: Vec<Hvl> = (0..targets.len())
                .map(|i| Hvl {
                    len: 1,
                    p: if classic {
                        (&mut old[i] as *mut u64).cast()
                    } else {
                        (&mut new[i] as *mut H5R_ref_t).cast()
                    },
                })
                .collect();
            let base = if classic {
                *H5T_STD_REF_OBJ
            } else {
                *H5T_STD_REF
            };
            let t = raw::type_hid(H5Tvlen_create(base), "vlen").unwrap();
            let dims = [targets.len() as u64];
            let space =
                raw::space_hid(H5Screate_simple(1, dims.as_ptr(), ptr::null()), "space").unwrap();
            let a = raw::attr_hid(
                H5Acreate2(
                    ds.id(),
                    c"DIMENSION_LIST".as_ptr(),
                    t.id(),
                    space.id(),
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                ),
                "H5Acreate2",
            )
            .unwrap();
            assert!(H5Awrite(a.id(), t.id(), hvl.as_mut_ptr().cast()) >= 0);
            if !classic {
                for r in &mut new {
                    H5Rdestroy(r);
                }
            }
        });
    }

    #[test]
    fn dimension_names_from_classic_and_new_object_references() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("refs.h5");
        {
            let f = hdf5::File::create(&p).unwrap();
            let g = f.create_group("grid").unwrap();
            g.new_dataset::<f64>().shape(4).create("lat").unwrap();
            f.new_dataset::<f64>().shape(3).create("lon").unwrap();
            for (name, classic) in [("classic", true), ("new_style", false)] {
                f.new_dataset::<f32>().shape((4, 3)).create(name).unwrap();
                write_dimension_list(&f, name, &["/grid/lat", "/lon"], classic);
            }
        }
        let ds = scan_file(&p, &ScanOptions::default()).unwrap();
        for name in ["classic", "new_style"] {
            let a = &ds.arrays[name];
            assert_eq!(a.dimension_names, ["lat", "lon"], "{name}");
        }
    }
}
