//! Thin safe wrappers over the HDF5 C API calls the scanner needs beyond `hdf5-metno`.
//!
//! Every function here must run inside `hdf5::sync::sync` (the library's global lock); the
//! scanner takes the lock once per file.

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, haddr_t, herr_t, hsize_t};
use hdf5_sys::h5a::{
    H5Aclose, H5Aexists, H5Aget_name, H5Aget_space, H5Aget_type, H5Aopen, H5Aopen_by_idx, H5Aread,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5o::{H5O_INFO_NUM_ATTRS, H5O_info2_t, H5Oget_info3};
use hdf5_sys::h5p::{H5P_DEFAULT, H5Pclose};
use hdf5_sys::h5s::{
    H5S_class_t, H5Sclose, H5Sget_simple_extent_dims, H5Sget_simple_extent_ndims,
    H5Sget_simple_extent_npoints, H5Sget_simple_extent_type,
};
use hdf5_sys::h5t::{
    H5T_class_t, H5T_cset_t, H5T_order_t, H5T_sign_t, H5T_str_t, H5Tclose, H5Tget_class,
    H5Tget_cset, H5Tget_ebias, H5Tget_fields, H5Tget_member_name, H5Tget_member_value,
    H5Tget_nmembers, H5Tget_offset, H5Tget_order, H5Tget_precision, H5Tget_sign, H5Tget_size,
    H5Tget_strpad, H5Tget_super, H5Tis_variable_str,
};

/// An owned HDF5 identifier, closed on drop with the matching close function.
pub(crate) struct Hid {
    id: hid_t,
    close: unsafe extern "C" fn(hid_t) -> herr_t,
}

impl Hid {
    /// Wraps `id` if it is valid (non-negative), else returns `what` as the error.
    pub(crate) fn new(
        id: hid_t,
        close: unsafe extern "C" fn(hid_t) -> herr_t,
        what: &str,
    ) -> Result<Self, String> {
        if id < 0 {
            Err(format!("{what} failed"))
        } else {
            Ok(Hid { id, close })
        }
    }

    pub(crate) fn id(&self) -> hid_t {
        self.id
    }
}

impl Drop for Hid {
    fn drop(&mut self) {
        // SAFETY: `id` is a valid identifier owned by this wrapper.
        unsafe {
            (self.close)(self.id);
        }
    }
}

pub(crate) fn type_hid(id: hid_t, what: &str) -> Result<Hid, String> {
    Hid::new(id, H5Tclose, what)
}

pub(crate) fn space_hid(id: hid_t, what: &str) -> Result<Hid, String> {
    Hid::new(id, H5Sclose, what)
}

pub(crate) fn plist_hid(id: hid_t, what: &str) -> Result<Hid, String> {
    Hid::new(id, H5Pclose, what)
}

pub(crate) fn attr_hid(id: hid_t, what: &str) -> Result<Hid, String> {
    Hid::new(id, H5Aclose, what)
}

/// Shape of a dataspace: `None` for a null dataspace, `Some([])` for a scalar.
pub(crate) fn space_shape(space: hid_t) -> Result<Option<Vec<u64>>, String> {
    // SAFETY: `space` is a valid dataspace id; the buffers have the reported rank.
    unsafe {
        match H5Sget_simple_extent_type(space) {
            H5S_class_t::H5S_NULL => Ok(None),
            H5S_class_t::H5S_SCALAR => Ok(Some(vec![])),
            H5S_class_t::H5S_SIMPLE => {
                let n = H5Sget_simple_extent_ndims(space);
                if n < 0 {
                    return Err("dataspace rank unreadable".into());
                }
                let mut dims = vec![0 as hsize_t; n as usize];
                if H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), ptr::null_mut()) < 0 {
                    return Err("dataspace extent unreadable".into());
                }
                Ok(Some(dims))
            }
            _ => Err("unknown dataspace class".into()),
        }
    }
}

/// Whether a dataspace is 1-D with an unlimited maximum extent.
pub(crate) fn is_unlimited_1d(space: hid_t) -> bool {
    // SAFETY: valid dataspace id; buffers of the reported rank (1).
    unsafe {
        if H5Sget_simple_extent_ndims(space) != 1 {
            return false;
        }
        let (mut dim, mut max) = (0 as hsize_t, 0 as hsize_t);
        H5Sget_simple_extent_dims(space, &mut dim, &mut max) >= 0 && max == hsize_t::MAX
    }
}

/// Number of elements of a dataspace (0 for null).
pub(crate) fn space_npoints(space: hid_t) -> u64 {
    // SAFETY: valid dataspace id.
    let n = unsafe { H5Sget_simple_extent_npoints(space) };
    u64::try_from(n).unwrap_or(0)
}

/// What an HDF5 type is, as far as the scanner cares.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TypeInfo {
    /// Integer of `size` bytes.
    Int {
        size: usize,
        signed: bool,
        big_endian: bool,
    },
    /// IEEE float of `size` bytes.
    Float { size: usize, big_endian: bool },
    /// Enum with two members FALSE=0 and TRUE=1 on a 1-byte integer (h5py's bool).
    Bool,
    /// Any other enum, read as its base integer.
    Enum {
        size: usize,
        signed: bool,
        big_endian: bool,
    },
    /// Fixed-length string of `size` bytes.
    FixedString { size: usize, pad: StrPad },
    /// Variable-length string.
    VarString { utf8: bool },
    /// Everything else, with a name for messages.
    Other(String),
}

/// Padding of a fixed-length string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StrPad {
    NullTerm,
    NullPad,
    SpacePad,
}

fn ieee_layout(t: hid_t, size: usize) -> bool {
    let (mut spos, mut epos, mut esize, mut mpos, mut msize) = (0, 0, 0, 0, 0);
    // SAFETY: valid float type id; out-pointers are valid.
    let ok =
        unsafe { H5Tget_fields(t, &mut spos, &mut epos, &mut esize, &mut mpos, &mut msize) } >= 0;
    // SAFETY: valid float type id.
    let (ebias, precision, offset) =
        unsafe { (H5Tget_ebias(t), H5Tget_precision(t), H5Tget_offset(t)) };
    let want = match size {
        2 => (15, 10, 5, 0, 10, 15),
        4 => (31, 23, 8, 0, 23, 127),
        8 => (63, 52, 11, 0, 52, 1023),
        _ => return false,
    };
    ok && (spos, epos, esize, mpos, msize, ebias) == want && precision == size * 8 && offset == 0
}

fn int_info(t: hid_t) -> Result<(usize, bool, bool), String> {
    // SAFETY: valid integer type id.
    unsafe {
        let size = H5Tget_size(t);
        let signed = match H5Tget_sign(t) {
            H5T_sign_t::H5T_SGN_NONE => false,
            H5T_sign_t::H5T_SGN_2 => true,
            _ => return Err("integer with unknown sign".into()),
        };
        let big = match H5Tget_order(t) {
            H5T_order_t::H5T_ORDER_LE => false,
            H5T_order_t::H5T_ORDER_BE => true,
            H5T_order_t::H5T_ORDER_NONE if size == 1 => false,
            _ => return Err("integer with VAX or mixed byte order".into()),
        };
        if !matches!(size, 1 | 2 | 4 | 8)
            || H5Tget_precision(t) != size * 8
            || H5Tget_offset(t) != 0
        {
            return Err(format!("{size}-byte integer with padding bits"));
        }
        Ok((size, signed, big))
    }
}

/// Classifies an HDF5 datatype.
pub(crate) fn type_info(t: hid_t) -> TypeInfo {
    // SAFETY: `t` is a valid datatype id; all calls only read it.
    unsafe {
        let size = H5Tget_size(t);
        match H5Tget_class(t) {
            H5T_class_t::H5T_INTEGER => match int_info(t) {
                Ok((size, signed, big_endian)) => TypeInfo::Int {
                    size,
                    signed,
                    big_endian,
                },
                Err(e) => TypeInfo::Other(e),
            },
            H5T_class_t::H5T_FLOAT => {
                let big_endian = match H5Tget_order(t) {
                    H5T_order_t::H5T_ORDER_LE => false,
                    H5T_order_t::H5T_ORDER_BE => true,
                    _ => return TypeInfo::Other("float with VAX or mixed byte order".into()),
                };
                if ieee_layout(t, size) {
                    TypeInfo::Float { size, big_endian }
                } else {
                    TypeInfo::Other(format!("non-IEEE {}-bit float", size * 8))
                }
            }
            H5T_class_t::H5T_STRING => {
                if H5Tis_variable_str(t) > 0 {
                    TypeInfo::VarString {
                        utf8: H5Tget_cset(t) == H5T_cset_t::H5T_CSET_UTF8,
                    }
                } else {
                    let pad = match H5Tget_strpad(t) {
                        H5T_str_t::H5T_STR_NULLPAD => StrPad::NullPad,
                        H5T_str_t::H5T_STR_SPACEPAD => StrPad::SpacePad,
                        _ => StrPad::NullTerm,
                    };
                    TypeInfo::FixedString { size, pad }
                }
            }
            H5T_class_t::H5T_ENUM => {
                let Ok(base) = type_hid(H5Tget_super(t), "H5Tget_super") else {
                    return TypeInfo::Other("enum with unreadable base type".into());
                };
                let (bsize, signed, big_endian) = match int_info(base.id()) {
                    Ok(v) => v,
                    Err(e) => return TypeInfo::Other(format!("enum on {e}")),
                };
                if bsize == 1 && is_bool_enum(t) {
                    TypeInfo::Bool
                } else {
                    TypeInfo::Enum {
                        size: bsize,
                        signed,
                        big_endian,
                    }
                }
            }
            H5T_class_t::H5T_COMPOUND => TypeInfo::Other("compound type".into()),
            H5T_class_t::H5T_REFERENCE => TypeInfo::Other("reference type".into()),
            H5T_class_t::H5T_VLEN => TypeInfo::Other("variable-length sequence type".into()),
            H5T_class_t::H5T_ARRAY => TypeInfo::Other("array type".into()),
            H5T_class_t::H5T_OPAQUE => TypeInfo::Other("opaque type".into()),
            H5T_class_t::H5T_BITFIELD => TypeInfo::Other("bitfield type".into()),
            H5T_class_t::H5T_TIME => TypeInfo::Other("time type".into()),
            other => TypeInfo::Other(format!("type class {other:?}")),
        }
    }
}

/// Whether an enum has exactly the members FALSE=0 and TRUE=1 (h5py's bool).
fn is_bool_enum(t: hid_t) -> bool {
    // SAFETY: valid enum type id; member names are freed with H5free_memory.
    unsafe {
        if H5Tget_nmembers(t) != 2 {
            return false;
        }
        let mut seen = [false; 2];
        for i in 0..2u32 {
            let name_ptr = H5Tget_member_name(t, i);
            if name_ptr.is_null() {
                return false;
            }
            let name = CStr::from_ptr(name_ptr)
                .to_string_lossy()
                .to_ascii_uppercase();
            hdf5_sys::h5::H5free_memory(name_ptr.cast());
            let mut v: u8 = 0;
            if H5Tget_member_value(t, i, (&mut v as *mut u8).cast()) < 0 {
                return false;
            }
            match (name.as_str(), v) {
                ("FALSE", 0) => seen[0] = true,
                ("TRUE", 1) => seen[1] = true,
                _ => return false,
            }
        }
        seen == [true, true]
    }
}

/// Reads `n` elements of a fixed-size type from an attribute, without conversion.
fn read_attr_raw(attr: hid_t, ftype: hid_t, n: u64, size: usize) -> Result<Vec<u8>, String> {
    let len = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .filter(|&l| l <= 1 << 30)
        .ok_or("attribute too large")?;
    let mut buf = vec![0u8; len.max(1)];
    // SAFETY: buffer holds n elements of the file type.
    if unsafe { H5Aread(attr, ftype, buf.as_mut_ptr().cast()) } < 0 {
        return Err("H5Aread failed".into());
    }
    buf.truncate(len);
    Ok(buf)
}

/// Reads a variable-length string attribute of `n` elements.
fn read_attr_vlen_strings(
    attr: hid_t,
    ftype: hid_t,
    space: hid_t,
    n: u64,
) -> Result<Vec<String>, String> {
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= 1 << 24)
        .ok_or("attribute too large")?;
    let mut ptrs: Vec<*mut c_char> = vec![ptr::null_mut(); n.max(1)];
    // SAFETY: a vlen string read fills one char* per element, allocated by HDF5.
    let ok = unsafe { H5Aread(attr, ftype, ptrs.as_mut_ptr().cast()) } >= 0;
    let mut out = Vec::with_capacity(n);
    for &p in &ptrs[..n] {
        if p.is_null() {
            out.push(String::new());
        } else {
            // SAFETY: HDF5 returned a NUL-terminated string.
            out.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        }
    }
    if ok {
        // SAFETY: `ptrs` was filled by H5Aread with `ftype` over `space`.
        unsafe {
            hdf5_sys::h5t::H5Treclaim(ftype, space, H5P_DEFAULT, ptrs.as_mut_ptr().cast());
        }
    }
    if ok {
        Ok(out)
    } else {
        Err("H5Aread of variable-length strings failed".into())
    }
}

fn fixed_strings(bytes: &[u8], size: usize, pad: StrPad) -> Vec<String> {
    if size == 0 {
        return vec![];
    }
    bytes
        .chunks(size)
        .map(|s| {
            let s = match pad {
                StrPad::NullTerm | StrPad::NullPad => {
                    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
                }
                StrPad::SpacePad => {
                    let end = s
                        .iter()
                        .rposition(|&b| b != b' ' && b != 0)
                        .map_or(0, |i| i + 1);
                    &s[..end]
                }
            };
            String::from_utf8_lossy(s).into_owned()
        })
        .collect()
}

/// Decodes integers of `size` bytes into JSON numbers.
pub(crate) fn ints_to_json(
    bytes: &[u8],
    size: usize,
    signed: bool,
    big: bool,
) -> Vec<serde_json::Value> {
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            if big {
                for (i, &x) in c.iter().rev().enumerate() {
                    b[i] = x;
                }
            } else {
                b[..size].copy_from_slice(c);
            }
            if signed {
                // Sign-extend.
                let shift = 64 - 8 * size as u32;
                let v = (i64::from_le_bytes(b) << shift) >> shift;
                serde_json::Value::from(v)
            } else {
                serde_json::Value::from(u64::from_le_bytes(b))
            }
        })
        .collect()
}

/// Decodes IEEE floats of `size` bytes into f64 values.
pub(crate) fn floats(bytes: &[u8], size: usize, big: bool) -> Vec<f64> {
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = c.to_vec();
            if big {
                b.reverse();
            }
            match size {
                2 => vzarr_core::half_to_f64(u16::from_le_bytes([b[0], b[1]])),
                4 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            }
        })
        .collect()
}

/// An attribute's value: JSON (`Ok`) or why it cannot be represented (`Err`).
pub(crate) struct RawAttr {
    pub name: String,
    pub value: Result<serde_json::Value, String>,
    /// The first element's raw bytes and type, for `_FillValue` conversion.
    pub numeric: Option<(TypeInfo, Vec<u8>)>,
}

fn collapse(mut v: Vec<serde_json::Value>, scalar_space: bool) -> serde_json::Value {
    if v.len() == 1 || (scalar_space && !v.is_empty()) {
        v.swap_remove(0)
    } else {
        serde_json::Value::Array(v)
    }
}

fn read_one_attr(attr: hid_t) -> Result<RawAttr, String> {
    // SAFETY: valid attribute id; name buffer sized from the first call.
    let name = unsafe {
        let n = H5Aget_name(attr, 0, ptr::null_mut());
        if n < 0 {
            return Err("attribute name unreadable".into());
        }
        let mut buf = vec![0u8; n as usize + 1];
        H5Aget_name(attr, buf.len(), buf.as_mut_ptr().cast());
        buf.truncate(n as usize);
        String::from_utf8_lossy(&buf).into_owned()
    };
    // SAFETY: valid attribute id.
    let ftype = type_hid(unsafe { H5Aget_type(attr) }, "H5Aget_type")?;
    let space = space_hid(unsafe { H5Aget_space(attr) }, "H5Aget_space")?;
    let shape = space_shape(space.id())?;
    let scalar = matches!(shape.as_deref(), Some([]));
    let n = if shape.is_none() {
        0
    } else {
        space_npoints(space.id())
    };
    let info = type_info(ftype.id());
    let mut numeric = None;
    let value = match &info {
        TypeInfo::Int {
            size,
            signed,
            big_endian,
        }
        | TypeInfo::Enum {
            size,
            signed,
            big_endian,
        } => read_attr_raw(attr, ftype.id(), n, *size).map(|b| {
            numeric = Some((info.clone(), b.clone()));
            collapse(ints_to_json(&b, *size, *signed, *big_endian), scalar)
        }),
        TypeInfo::Bool => read_attr_raw(attr, ftype.id(), n, 1).map(|b| {
            collapse(
                b.iter().map(|&x| serde_json::Value::Bool(x != 0)).collect(),
                scalar,
            )
        }),
        TypeInfo::Float { size, big_endian } => {
            read_attr_raw(attr, ftype.id(), n, *size).map(|b| {
                numeric = Some((info.clone(), b.clone()));
                collapse(
                    floats(&b, *size, *big_endian)
                        .into_iter()
                        .map(vzarr_core::attrs::float_value)
                        .collect(),
                    scalar,
                )
            })
        }
        TypeInfo::FixedString { size, pad } => {
            if shape.is_none() {
                Ok(serde_json::Value::String(String::new()))
            } else {
                read_attr_raw(attr, ftype.id(), n, *size).map(|b| {
                    let v = fixed_strings(&b, *size, *pad);
                    collapse(
                        v.into_iter().map(serde_json::Value::String).collect(),
                        scalar,
                    )
                })
            }
        }
        TypeInfo::VarString { .. } => {
            if shape.is_none() {
                Ok(serde_json::Value::String(String::new()))
            } else {
                read_attr_vlen_strings(attr, ftype.id(), space.id(), n).map(|v| {
                    collapse(
                        v.into_iter().map(serde_json::Value::String).collect(),
                        scalar,
                    )
                })
            }
        }
        TypeInfo::Other(what) => Err(format!("attribute of {what}")),
    };
    Ok(RawAttr {
        name,
        value,
        numeric,
    })
}

/// Reads every attribute of an object, in creation order where tracked, else by name.
pub(crate) fn read_attributes(obj: hid_t) -> Result<Vec<RawAttr>, String> {
    let mut oinfo: H5O_info2_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid object id; out-pointer valid.
    if unsafe { H5Oget_info3(obj, &mut oinfo, H5O_INFO_NUM_ATTRS) } < 0 {
        return Err("object info unreadable".into());
    }
    let n = oinfo.num_attrs;
    let dot = c".";
    let mut index = H5_index_t::H5_INDEX_CRT_ORDER;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        // SAFETY: valid object id; "." names the object itself.
        let mut id = unsafe {
            H5Aopen_by_idx(
                obj,
                dot.as_ptr(),
                index,
                H5_iter_order_t::H5_ITER_INC,
                i,
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        if id < 0 && i == 0 && index == H5_index_t::H5_INDEX_CRT_ORDER {
            // Creation order not tracked: fall back to name order.
            index = H5_index_t::H5_INDEX_NAME;
            id = unsafe {
                H5Aopen_by_idx(
                    obj,
                    dot.as_ptr(),
                    index,
                    H5_iter_order_t::H5_ITER_INC,
                    i,
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                )
            };
        }
        let attr = attr_hid(id, "H5Aopen_by_idx")?;
        out.push(read_one_attr(attr.id())?);
    }
    Ok(out)
}

/// Whether an object has an attribute called `name`.
pub(crate) fn has_attr(obj: hid_t, name: &str) -> bool {
    let Ok(c) = CString::new(name) else {
        return false;
    };
    // SAFETY: valid object id and NUL-terminated name.
    unsafe { H5Aexists(obj, c.as_ptr()) > 0 }
}

/// The dimension scales attached to each axis of a dataset, by object path, from its
/// `DIMENSION_LIST` attribute. `Ok(None)` when there is no such attribute.
pub(crate) fn dimension_list(
    ds: hid_t,
    rank: usize,
) -> Result<Option<Vec<Option<String>>>, String> {
    use hdf5_sys::h5r::{H5R_ref_t, H5Rget_obj_name};
    use hdf5_sys::h5t::{H5T_STD_REF, H5Tvlen_create};

    if !has_attr(ds, "DIMENSION_LIST") {
        return Ok(None);
    }
    // SAFETY: valid dataset id; NUL-terminated name.
    let attr = attr_hid(
        unsafe { H5Aopen(ds, c"DIMENSION_LIST".as_ptr(), H5P_DEFAULT) },
        "H5Aopen DIMENSION_LIST",
    )?;
    let space = space_hid(unsafe { H5Aget_space(attr.id()) }, "H5Aget_space")?;
    if space_npoints(space.id()) != rank as u64 {
        return Err("DIMENSION_LIST does not match the dataset rank".into());
    }
    // SAFETY: H5T_STD_REF is a library global, valid after H5open.
    let memtype = type_hid(unsafe { H5Tvlen_create(*H5T_STD_REF) }, "H5Tvlen_create")?;
    #[repr(C)]
    struct Hvl {
        len: usize,
        p: *mut c_void,
    }
    let mut buf: Vec<Hvl> = (0..rank)
        .map(|_| Hvl {
            len: 0,
            p: ptr::null_mut(),
        })
        .collect();
    // SAFETY: one hvl_t per axis; HDF5 allocates the reference arrays.
    if unsafe { H5Aread(attr.id(), memtype.id(), buf.as_mut_ptr().cast()) } < 0 {
        return Err("DIMENSION_LIST unreadable".into());
    }
    let mut out = Vec::with_capacity(rank);
    for hvl in &buf {
        let mut name = None;
        if hvl.len > 0 && !hvl.p.is_null() {
            let r = hvl.p as *const H5R_ref_t;
            // SAFETY: `r` points at `len` references read above.
            unsafe {
                let n = H5Rget_obj_name(r, H5P_DEFAULT, ptr::null_mut(), 0);
                if n > 0 {
                    let mut b = vec![0u8; n as usize + 1];
                    H5Rget_obj_name(r, H5P_DEFAULT, b.as_mut_ptr().cast(), b.len());
                    b.truncate(n as usize);
                    name = Some(String::from_utf8_lossy(&b).into_owned());
                }
            }
        }
        out.push(name);
    }
    // Release the references and the vlen memory.
    // SAFETY: `buf` was filled by H5Aread with `memtype` over `space`.
    unsafe {
        hdf5_sys::h5t::H5Treclaim(
            memtype.id(),
            space.id(),
            H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        );
    }
    Ok(Some(out))
}

/// Reads an attribute holding a short fixed or variable-length string.
pub(crate) fn string_attr(obj: hid_t, name: &str) -> Option<String> {
    if !has_attr(obj, name) {
        return None;
    }
    let c = CString::new(name).ok()?;
    // SAFETY: valid object id and name.
    let attr = attr_hid(unsafe { H5Aopen(obj, c.as_ptr(), H5P_DEFAULT) }, "H5Aopen").ok()?;
    let raw = read_one_attr(attr.id()).ok()?;
    match raw.value {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

/// An undefined address (`HADDR_UNDEF`).
pub(crate) const HADDR_UNDEF: haddr_t = haddr_t::MAX;
