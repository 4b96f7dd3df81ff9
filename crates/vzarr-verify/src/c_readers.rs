//! The C libraries as readers of sources, for verification in builds with the `c-oracle`
//! feature: HDF5 and NetCDF4 through libhdf5 (raw values in the file type), NetCDF3 through
//! netCDF-C. Called in this process or, through [`crate::worker`], in a worker process; which
//! of the two reads a source is decided where it is opened (`c_opened.rs`).

use std::ops::Range;
use std::ptr;

use hdf5_sys::h5::{H5free_memory, haddr_t, hsize_t};
use hdf5_sys::h5d::{
    H5Dget_chunk_info_by_coord, H5Dget_create_plist, H5Dget_space, H5Dget_type, H5Dread,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{H5P_DEFAULT, H5Pclose, H5Pget_chunk, H5Pget_fill_value};
use hdf5_sys::h5r::{H5R_type_t, H5Rget_name};
use hdf5_sys::h5s::{
    H5S_ALL, H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sget_simple_extent_dims,
    H5Sget_simple_extent_ndims, H5Sselect_hyperslab,
};
use hdf5_sys::h5t::{
    H5T_C_S1, H5T_STD_REF_OBJ, H5T_VARIABLE, H5T_class_t, H5T_order_t, H5T_sign_t, H5Tclose,
    H5Tcopy, H5Tequal, H5Tget_array_dims2, H5Tget_array_ndims, H5Tget_class, H5Tget_cset,
    H5Tget_member_name, H5Tget_member_offset, H5Tget_member_type, H5Tget_nmembers, H5Tget_order,
    H5Tget_sign, H5Tget_size, H5Tget_super, H5Tis_variable_str, H5Treclaim, H5Tset_cset,
    H5Tset_size,
};
use vzarr_core::DataType;

use crate::source_values::SourceValues;

/// Opens an HDF5 file with libhdf5.
pub(crate) fn open_hdf5(path: &std::path::Path) -> Result<hdf5::File, String> {
    hdf5::sync::sync(|| hdf5::File::open(path)).map_err(|e| format!("HDF5 cannot open it: {e}"))
}

/// Opens a NetCDF file with netCDF-C.
pub(crate) fn open_netcdf(path: &std::path::Path) -> Result<netcdf::File, String> {
    netcdf::open(path).map_err(|e| format!("netCDF cannot open it: {e}"))
}

struct Hid(hid_t, unsafe extern "C" fn(hid_t) -> hdf5_sys::h5::herr_t);

impl Drop for Hid {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: a valid identifier owned by this wrapper.
            unsafe {
                (self.1)(self.0);
            }
        }
    }
}

/// The element type of an HDF5 type and whether it is stored big-endian, as libhdf5
/// describes it: a compound of two floats of one type at offsets 0 and their size is a complex
/// number, an HDF5 complex type too.
///
/// # Safety
/// `ftype` must be a valid datatype identifier; call inside `hdf5::sync::sync`.
unsafe fn hdf5_dtype(ftype: hid_t) -> Result<(DataType, bool), String> {
    // SAFETY: the caller passes a valid datatype identifier and holds the HDF5 lock; the
    // base and member types are owned (and closed) by `Hid`.
    unsafe {
        let size = H5Tget_size(ftype);
        let class = H5Tget_class(ftype);
        let int = |t: hid_t, size: usize| -> Result<DataType, String> {
            let signed = H5Tget_sign(t) == H5T_sign_t::H5T_SGN_2;
            DataType::integer(size, signed)
                .ok_or_else(|| format!("{size}-byte integers are not supported"))
        };
        let be = |t: hid_t| H5Tget_order(t) == H5T_order_t::H5T_ORDER_BE;
        let complex = |part: hid_t| -> Option<(DataType, bool)> {
            if H5Tget_class(part) != H5T_class_t::H5T_FLOAT {
                return None;
            }
            match H5Tget_size(part) {
                4 if size == 8 => Some((DataType::Complex64, be(part))),
                8 if size == 16 => Some((DataType::Complex128, be(part))),
                _ => None,
            }
        };
        match class {
            H5T_class_t::H5T_INTEGER => Ok((int(ftype, size)?, be(ftype))),
            H5T_class_t::H5T_BITFIELD => Ok((
                DataType::integer(size, false)
                    .ok_or_else(|| format!("{size}-byte bitfields are not supported"))?,
                be(ftype),
            )),
            H5T_class_t::H5T_ENUM => {
                let base = Hid(H5Tget_super(ftype), H5Tclose);
                if base.0 < 0 {
                    return Err("enum without a base type".into());
                }
                Ok((int(base.0, H5Tget_size(base.0))?, be(base.0)))
            }
            H5T_class_t::H5T_FLOAT => {
                let dt = DataType::float(size)
                    .ok_or_else(|| format!("{size}-byte floats are not supported"))?;
                Ok((dt, be(ftype)))
            }
            H5T_class_t::H5T_STRING => {
                if H5Tis_variable_str(ftype) > 0 {
                    return Ok((DataType::String, false));
                }
                Ok((DataType::FixedBytes(size), false))
            }
            H5T_class_t::H5T_COMPLEX => {
                let base = Hid(H5Tget_super(ftype), H5Tclose);
                if base.0 < 0 {
                    return Err("complex type without a base type".into());
                }
                complex(base.0).ok_or_else(|| "complex type of unsupported parts".into())
            }
            H5T_class_t::H5T_COMPOUND => {
                let unsupported = || "compound type other than a complex number".to_string();
                let as_struct = || hdf5_struct(ftype, size);
                if H5Tget_nmembers(ftype) != 2
                    || H5Tget_member_offset(ftype, 0) != 0
                    || H5Tget_member_offset(ftype, 1) != size / 2
                {
                    return as_struct();
                }
                // Complex only under the names h5py, PyTables and others give the parts (as
                // h5py reads them); any other pair of floats is a struct.
                let name = |i: u32| {
                    let p = H5Tget_member_name(ftype, i);
                    if p.is_null() {
                        return String::new();
                    }
                    let s = std::ffi::CStr::from_ptr(p).to_string_lossy().to_lowercase();
                    H5free_memory(p.cast());
                    s
                };
                let names = (name(0), name(1));
                let complex_names = [
                    ("r", "i"),
                    ("re", "im"),
                    ("real", "imag"),
                    ("real", "imaginary"),
                ];
                if !complex_names
                    .iter()
                    .any(|&(a, b)| names.0 == a && names.1 == b)
                {
                    return as_struct();
                }
                let re = Hid(H5Tget_member_type(ftype, 0), H5Tclose);
                let im = Hid(H5Tget_member_type(ftype, 1), H5Tclose);
                if re.0 < 0 || im.0 < 0 {
                    return Err(unsupported());
                }
                match (complex(re.0), complex(im.0)) {
                    (Some(a), Some(b)) if a == b => Ok(a),
                    _ => as_struct(),
                }
            }
            H5T_class_t::H5T_ARRAY => {
                let base = Hid(H5Tget_super(ftype), H5Tclose);
                if base.0 < 0 {
                    return Err("array type without a base type".into());
                }
                hdf5_dtype(base.0)
            }
            other => Err(format!("HDF5 type class {other:?} is not supported")),
        }
    }
}

/// A compound as a packed struct (fields in offset order, one byte order, padding bytes as
/// fields of their own), as libhdf5 describes it.
///
/// # Safety
/// `ftype` must be a valid compound datatype identifier; call inside `hdf5::sync::sync`.
unsafe fn hdf5_struct(ftype: hid_t, size: usize) -> Result<(DataType, bool), String> {
    // SAFETY: member indexes are below H5Tget_nmembers; member types are closed by `Hid`;
    // member names are C strings the library allocates, freed with H5free_memory.
    unsafe {
        let n = H5Tget_nmembers(ftype);
        if !(1..=4096).contains(&n) {
            return Err(format!("compound of {n} members"));
        }
        let mut members = Vec::with_capacity(n as usize);
        for i in 0..n as u32 {
            let p = H5Tget_member_name(ftype, i);
            if p.is_null() {
                return Err("compound member without a name".into());
            }
            let name = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
            H5free_memory(p.cast());
            let t = Hid(H5Tget_member_type(ftype, i), H5Tclose);
            if t.0 < 0 {
                return Err(format!("compound member {name:?} has no type"));
            }
            let (dt, be) = hdf5_dtype(t.0)?;
            members.push((H5Tget_member_offset(ftype, i), name, dt, be));
        }
        members.sort_by_key(|m| m.0);
        let mut at = 0;
        let mut order = None;
        let mut fields = Vec::with_capacity(members.len());
        for (offset, name, dt, be) in members {
            if offset < at {
                return Err(format!(
                    "compound member {name:?} overlaps the one before it"
                ));
            }
            if offset > at {
                fields.push(vzarr_core::StructField::padding(at as u64, offset - at));
                at = offset;
            }
            if dt.has_endianness() {
                if order.is_some_and(|o| o != be) {
                    return Err("compound with members of both byte orders".into());
                }
                order = Some(be);
            }
            at += dt.size();
            fields.push(vzarr_core::StructField {
                name,
                data_type: dt,
            });
        }
        if at > size {
            return Err("compound whose members end past its size".into());
        }
        if at < size {
            fields.push(vzarr_core::StructField::padding(at as u64, size - at));
        }
        Ok((DataType::Struct(fields.into()), order.unwrap_or(false)))
    }
}

/// The dimensions an HDF5 array type adds after the dataset's (none for other types).
///
/// # Safety
/// `ftype` must be a valid datatype identifier; call inside `hdf5::sync::sync`.
unsafe fn hdf5_array_dims(ftype: hid_t) -> Result<Vec<u64>, String> {
    // SAFETY: as for `hdf5_dtype`; the buffer holds `ndims` dimensions.
    unsafe {
        if H5Tget_class(ftype) != H5T_class_t::H5T_ARRAY {
            return Ok(Vec::new());
        }
        let nd = H5Tget_array_ndims(ftype);
        if !(1..=32).contains(&nd) {
            return Err(format!("array type of {nd} dimensions"));
        }
        let mut dims = vec![0 as hsize_t; nd as usize];
        if H5Tget_array_dims2(ftype, dims.as_mut_ptr()) < 0 {
            return Err("cannot get the array type's dimensions".into());
        }
        Ok(dims)
    }
}

pub(crate) fn hdf5_read(
    file: &hdf5::File,
    var: &str,
    start: &[u64],
    count: &[u64],
) -> Result<SourceValues, String> {
    hdf5::sync::sync(|| {
        let ds = file.dataset(var).map_err(|e| {
            if file.link_exists(var) {
                format!("no dataset {var:?} in the file: {e}")
            } else {
                format!("{}: {var:?}", crate::direct::ABSENT)
            }
        })?;
        let id = ds.id();
        // SAFETY: identifiers are checked and closed by `Hid`; the buffer holds the whole
        // memory dataspace in the file type; selections lie inside the checked extent.
        unsafe {
            let ftype = Hid(H5Dget_type(id), H5Tclose);
            if ftype.0 < 0 {
                return Err("cannot get the dataset's type".into());
            }
            // Object references: their targets' names (libhdf5's `H5Rget_name`), relative to
            // the dataset, as the scanners read them.
            let reference = H5Tget_class(ftype.0) == H5T_class_t::H5T_REFERENCE;
            if reference && H5Tequal(ftype.0, *H5T_STD_REF_OBJ) <= 0 {
                return Err("region or attribute references: not read".into());
            }
            let (dtype, be) = if reference {
                (DataType::String, false)
            } else {
                hdf5_dtype(ftype.0)?
            };
            let esize = H5Tget_size(ftype.0);
            // An array type's axes follow the dataset's, read whole: libhdf5 reads an element
            // of an array type as all of its values in C order.
            let extra = hdf5_array_dims(ftype.0)?;
            let Some(split) = count.len().checked_sub(extra.len()) else {
                return Err(format!(
                    "the array has {} dimensions, fewer than its type's {}",
                    count.len(),
                    extra.len()
                ));
            };
            if start[split..].iter().any(|&s| s != 0) || count[split..] != extra[..] {
                return Err(format!(
                    "region {start:?} + {count:?} does not cover the array type's \
                     dimensions {extra:?} whole"
                ));
            }
            let (start, count) = (&start[..split], &count[..split]);
            let space = Hid(H5Dget_space(id), H5Sclose);
            if space.0 < 0 {
                return Err("cannot get the dataset's dataspace".into());
            }
            let rank = H5Sget_simple_extent_ndims(space.0);
            if rank < 0 || rank as usize != count.len() {
                return Err(format!(
                    "the dataset has {rank} dimensions, the array {}",
                    count.len()
                ));
            }
            let mut dims = vec![0 as hsize_t; count.len()];
            if rank > 0
                && H5Sget_simple_extent_dims(space.0, dims.as_mut_ptr(), ptr::null_mut()) < 0
            {
                return Err("cannot get the dataset's shape".into());
            }
            for (k, ((&s, &c), &d)) in start.iter().zip(count).zip(&dims).enumerate() {
                if s.checked_add(c).is_none_or(|e| e > d) {
                    return Err(format!(
                        "axis {k}: region {s}..{} is outside the dataset's length {d}",
                        s.saturating_add(c)
                    ));
                }
            }
            let n: usize = count.iter().map(|&c| c as usize).product();
            if dtype == DataType::String {
                let strings = if n == 0 {
                    Vec::new()
                } else if reference {
                    hdf5_read_references(id, space.0, start, count, n, var)?
                } else {
                    hdf5_read_strings(id, ftype.0, space.0, start, count, n)?
                };
                let bytes = vzarr_codec::vlen_utf8::encode(&strings).map_err(|e| e.to_string())?;
                return Ok(SourceValues { dtype, bytes });
            }
            let mut buf = vec![0u8; n * esize];
            if n > 0 {
                let status = if rank == 0 {
                    H5Dread(
                        id,
                        ftype.0,
                        H5S_ALL,
                        H5S_ALL,
                        H5P_DEFAULT,
                        buf.as_mut_ptr().cast(),
                    )
                } else {
                    let mem = Hid(
                        H5Screate_simple(rank, count.as_ptr(), ptr::null()),
                        H5Sclose,
                    );
                    if mem.0 < 0 {
                        return Err("hyperslab selection failed".into());
                    }
                    select_region(space.0, start, count)?;
                    H5Dread(
                        id,
                        ftype.0,
                        mem.0,
                        space.0,
                        H5P_DEFAULT,
                        buf.as_mut_ptr().cast(),
                    )
                };
                if status < 0 {
                    return Err("H5Dread failed".into());
                }
            }
            if be != cfg!(target_endian = "big") {
                dtype.swap_elements(&mut buf);
            }
            Ok(SourceValues { dtype, bytes: buf })
        }
    })
}

/// The memory dataspace of the region `start`+`count` (scalar for a 0-d dataset), with the
/// region selected in the file dataspace `space`: what `H5Dread` of the region takes.
///
/// # Safety
/// `space` is a valid dataspace identifier; call inside `hdf5::sync::sync`; the region lies
/// inside the extent.
unsafe fn memory_space(space: hid_t, start: &[u64], count: &[u64]) -> Result<Hid, String> {
    // SAFETY: as the caller promises; the dataspace made here is owned by the returned `Hid`.
    unsafe {
        let rank = count.len();
        let mem = Hid(
            if rank == 0 {
                hdf5_sys::h5s::H5Screate(hdf5_sys::h5s::H5S_class_t::H5S_SCALAR)
            } else {
                H5Screate_simple(rank as i32, count.as_ptr(), ptr::null())
            },
            H5Sclose,
        );
        if mem.0 < 0 {
            return Err("cannot make the memory dataspace".into());
        }
        if rank > 0 {
            select_region(space, start, count)?;
        }
        Ok(mem)
    }
}

/// The object references of the region `start`+`count` of the dataset `id` (at `var`, `n`
/// elements): each its target's name as libhdf5 gives it (`H5Rget_name`), relative to the
/// dataset ([`vzarr_hdf5::relative_path`]); "" for a null reference.
///
/// # Safety
/// Valid identifiers; call inside `hdf5::sync::sync`; the region lies inside the extent.
unsafe fn hdf5_read_references(
    id: hid_t,
    space: hid_t,
    start: &[u64],
    count: &[u64],
    n: usize,
    var: &str,
) -> Result<Vec<String>, String> {
    // SAFETY: the caller's identifiers are valid; `refs` holds `n` classic object references
    // (`hobj_ref_t`, an address), as many as the memory dataspace selects; each name buffer
    // is as long as the size passed with it.
    unsafe {
        let mem = memory_space(space, start, count)?;
        let mut refs: Vec<haddr_t> = vec![0; n];
        if H5Dread(
            id,
            *H5T_STD_REF_OBJ,
            mem.0,
            space,
            H5P_DEFAULT,
            refs.as_mut_ptr().cast(),
        ) < 0
        {
            return Err("H5Dread of object references failed".into());
        }
        let start_path = format!("/{}", var.trim_start_matches('/'));
        let mut names: std::collections::HashMap<haddr_t, String> =
            std::collections::HashMap::new();
        refs.iter()
            .map(|r| {
                if *r == 0 {
                    return Ok(String::new());
                }
                if let Some(p) = names.get(r) {
                    return Ok(p.clone());
                }
                let ptr: *const std::ffi::c_void = (r as *const haddr_t).cast();
                let len = H5Rget_name(id, H5R_type_t::H5R_OBJECT1, ptr, ptr::null_mut(), 0);
                if len <= 0 {
                    return Err(format!("H5Rget_name found no name for the object at {r}"));
                }
                let mut buf = vec![0u8; len as usize + 1];
                if H5Rget_name(
                    id,
                    H5R_type_t::H5R_OBJECT1,
                    ptr,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                ) < 0
                {
                    return Err(format!("H5Rget_name failed for the object at {r}"));
                }
                buf.truncate(len as usize);
                let name = String::from_utf8(buf).map_err(|e| e.to_string())?;
                let p = vzarr_hdf5::relative_path(&name, &start_path);
                names.insert(*r, p.clone());
                Ok(p)
            })
            .collect()
    }
}

/// Selects the region `start`+`count` of the dataspace `space` (a hyperslab, the selection
/// `H5Dread` then reads).
///
/// # Safety
/// `space` a valid dataspace identifier of as many dimensions as `start` and `count` have;
/// call inside `hdf5::sync::sync`.
unsafe fn select_region(space: hid_t, start: &[u64], count: &[u64]) -> Result<(), String> {
    // SAFETY: the caller's dataspace; `start` and `count` hold one value per dimension.
    let status = unsafe {
        H5Sselect_hyperslab(
            space,
            H5S_seloper_t::H5S_SELECT_SET,
            start.as_ptr(),
            ptr::null(),
            count.as_ptr(),
            ptr::null(),
        )
    };
    if status < 0 {
        return Err("hyperslab selection failed".into());
    }
    Ok(())
}

/// Reads the region `start`+`count` (`n` elements) of a variable-length string dataset `id`
/// (file type `ftype`, dataspace `space`) as the HDF5 library hands the strings out: C
/// strings in the file's character set, NULL read as empty.
///
/// A read-only file refuses to read never-written chunks of such a dataset when it has a fill
/// value (the library would write the fill value into the global heap: "no write intent on
/// file"); a region inside one chunk that was never written then reads as the dataset's fill
/// value, which the library gives for it in a writable file.
///
/// # Safety
/// Valid identifiers; call inside `hdf5::sync::sync`; the region lies inside the extent.
unsafe fn hdf5_read_strings(
    id: hid_t,
    ftype: hid_t,
    space: hid_t,
    start: &[u64],
    count: &[u64],
    n: usize,
) -> Result<Vec<String>, String> {
    // SAFETY: the caller's identifiers are valid; the memory type, dataspace, property list
    // and buffers created here are owned and released here; `buf` holds `n` pointers, as
    // many as the memory dataspace selects; pointers the library returns are NULL or
    // NUL-terminated strings it allocated, freed by `H5Treclaim`/`H5free_memory`.
    unsafe {
        let mtype = Hid(H5Tcopy(*H5T_C_S1), H5Tclose);
        if mtype.0 < 0
            || H5Tset_size(mtype.0, H5T_VARIABLE) < 0
            || H5Tset_cset(mtype.0, H5Tget_cset(ftype)) < 0
        {
            return Err("cannot make the memory type of variable-length strings".into());
        }
        let mem = memory_space(space, start, count)?;
        let mut buf: Vec<*mut std::ffi::c_char> = vec![ptr::null_mut(); n];
        let status = H5Dread(
            id,
            mtype.0,
            mem.0,
            space,
            H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        );
        if status < 0 {
            return match unwritten_chunk_fill(id, mtype.0, start, count)? {
                Some(fill) => Ok(vec![fill; n]),
                None => Err("H5Dread of variable-length strings failed".into()),
            };
        }
        let out: Result<Vec<String>, String> = buf
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                if p.is_null() {
                    return Ok(String::new());
                }
                let b = std::ffi::CStr::from_ptr(p).to_bytes();
                std::str::from_utf8(b)
                    .map(str::to_string)
                    .map_err(|e| format!("string {i} of the region is not UTF-8: {e}"))
            })
            .collect();
        H5Treclaim(mtype.0, mem.0, H5P_DEFAULT, buf.as_mut_ptr().cast());
        out
    }
}

/// The fill value of the dataset `id` (as `mtype`, a variable-length C string) if the region
/// `start`+`count` lies inside one chunk that was never written; `None` otherwise.
///
/// # Safety
/// Valid identifiers; call inside `hdf5::sync::sync`.
unsafe fn unwritten_chunk_fill(
    id: hid_t,
    mtype: hid_t,
    start: &[u64],
    count: &[u64],
) -> Result<Option<String>, String> {
    // SAFETY: as in `hdf5_read_strings`; `dims` holds `start.len()` entries, the rank the
    // library reports is checked against it; the fill value pointer is the library's, freed
    // with `H5free_memory`.
    unsafe {
        let dcpl = Hid(H5Dget_create_plist(id), H5Pclose);
        if dcpl.0 < 0 || start.is_empty() {
            return Ok(None);
        }
        let mut dims = vec![0 as hsize_t; start.len()];
        if H5Pget_chunk(dcpl.0, dims.len() as i32, dims.as_mut_ptr()) != dims.len() as i32 {
            return Ok(None); // Not chunked.
        }
        let mut origin = Vec::with_capacity(dims.len());
        for ((&s, &c), &d) in start.iter().zip(count).zip(&dims) {
            let o = s / d.max(1) * d.max(1);
            if c == 0 || s + c > o + d {
                return Ok(None); // Not inside one chunk.
            }
            origin.push(o);
        }
        let (mut mask, mut addr, mut size) = (0u32, 0 as haddr_t, 0 as hsize_t);
        if H5Dget_chunk_info_by_coord(id, origin.as_ptr(), &mut mask, &mut addr, &mut size) < 0 {
            return Ok(None);
        }
        if size != 0 {
            return Ok(None); // Written: the read failed for another reason.
        }
        let mut p: *mut std::ffi::c_char = ptr::null_mut();
        if H5Pget_fill_value(dcpl.0, mtype, (&mut p as *mut *mut std::ffi::c_char).cast()) < 0 {
            return Err("cannot read the dataset's fill value".into());
        }
        if p.is_null() {
            return Ok(Some(String::new()));
        }
        let s = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
        H5free_memory(p.cast());
        Ok(Some(s))
    }
}

fn nc_dtype(t: &netcdf::types::NcVariableType) -> Result<DataType, String> {
    use netcdf::types::{FloatType, IntType, NcVariableType as T};
    Ok(match t {
        T::Int(IntType::I8) => DataType::Int8,
        T::Int(IntType::I16) => DataType::Int16,
        T::Int(IntType::I32) => DataType::Int32,
        T::Int(IntType::I64) => DataType::Int64,
        T::Int(IntType::U8) => DataType::UInt8,
        T::Int(IntType::U16) => DataType::UInt16,
        T::Int(IntType::U32) => DataType::UInt32,
        T::Int(IntType::U64) => DataType::UInt64,
        T::Float(FloatType::F32) => DataType::Float32,
        T::Float(FloatType::F64) => DataType::Float64,
        T::Char => DataType::FixedBytes(1),
        other => return Err(format!("netCDF type {other:?} is not supported")),
    })
}

pub(crate) fn nc_read(
    file: &netcdf::File,
    var: &str,
    start: &[u64],
    count: &[u64],
) -> Result<SourceValues, String> {
    let v = file
        .variable(var)
        .ok_or_else(|| format!("no variable {var:?} in the file"))?;
    let dtype = nc_dtype(&v.vartype())?;
    let dims = v.dimensions();
    if dims.len() != count.len() {
        return Err(format!(
            "the variable has {} dimensions, the array {}",
            dims.len(),
            count.len()
        ));
    }
    for (k, ((&s, &c), d)) in start.iter().zip(count).zip(dims).enumerate() {
        if s.checked_add(c).is_none_or(|e| e > d.len() as u64) {
            return Err(format!(
                "axis {k}: region is outside the variable's length {}",
                d.len()
            ));
        }
    }
    if count.contains(&0) {
        return Ok(SourceValues {
            dtype,
            bytes: Vec::new(),
        });
    }
    let bytes = if count.is_empty() {
        v.get_raw_values(..)
    } else {
        let extents: Vec<Range<usize>> = start
            .iter()
            .zip(count)
            .map(|(&s, &c)| s as usize..(s + c) as usize)
            .collect();
        v.get_raw_values(extents)
    }
    .map_err(|e| format!("netCDF read failed: {e}"))?;
    Ok(SourceValues { dtype, bytes })
}
