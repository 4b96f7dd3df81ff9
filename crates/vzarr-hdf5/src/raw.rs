//! Thin safe wrappers over the HDF5 C API calls the scanner needs beyond `hdf5-metno`.
//!
//! Every function here must run inside `hdf5::sync::sync` (the library's global lock); the
//! scanner takes the lock once per file.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, haddr_t, herr_t, hsize_t};
use hdf5_sys::h5a::{
    H5Aclose, H5Aexists, H5Aget_name, H5Aget_space, H5Aget_type, H5Aopen, H5Aread,
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

/// A name from an HDF5 call that is made twice: `get(null, 0)` returns the name's length
/// (without its NUL, negative on failure), `get(buf, size)` fills a buffer of that length + 1.
fn two_call_name(mut get: impl FnMut(*mut c_char, usize) -> isize) -> Option<String> {
    let n = usize::try_from(get(ptr::null_mut(), 0)).ok()?;
    let mut buf = vec![0u8; n + 1];
    if get(buf.as_mut_ptr().cast(), buf.len()) < 0 {
        return None;
    }
    buf.truncate(n);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn read_one_attr(attr: hid_t) -> Result<RawAttr, String> {
    // SAFETY: valid attribute id; the buffer is as long as the size passed.
    let name = two_call_name(|buf, size| unsafe { H5Aget_name(attr, size, buf) })
        .ok_or("attribute name unreadable")?;
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
///
/// The names are listed in one `H5Aiterate2` pass and the attributes opened by name:
/// `H5Aopen_by_idx` builds and sorts a copy of the object's whole attribute table on every
/// call, which made reading n attributes cost n table copies.
pub(crate) fn read_attributes(obj: hid_t) -> Result<Vec<RawAttr>, String> {
    use hdf5_sys::h5a::{H5A_info_t, H5Aiterate2};
    extern "C" fn collect(
        _loc: hid_t,
        name: *const c_char,
        _info: *const H5A_info_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 passes a valid NUL-terminated name; `data` is the Vec below.
        unsafe { (*(data as *mut Vec<CString>)).push(CStr::from_ptr(name).to_owned()) };
        0
    }
    let mut oinfo: H5O_info2_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid object id; out-pointer valid.
    if unsafe { H5Oget_info3(obj, &mut oinfo, H5O_INFO_NUM_ATTRS) } < 0 {
        return Err("object info unreadable".into());
    }
    if oinfo.num_attrs == 0 {
        return Ok(Vec::new());
    }
    let mut names: Vec<CString> = Vec::with_capacity(oinfo.num_attrs as usize);
    for index in [H5_index_t::H5_INDEX_CRT_ORDER, H5_index_t::H5_INDEX_NAME] {
        names.clear();
        let mut idx: hsize_t = 0;
        // SAFETY: valid object id; the callback only appends to `names`.
        let r = unsafe {
            H5Aiterate2(
                obj,
                index,
                H5_iter_order_t::H5_ITER_INC,
                &mut idx,
                Some(collect),
                (&mut names as *mut Vec<CString>).cast(),
            )
        };
        // Creation order not tracked: fall back to name order.
        if r >= 0 {
            break;
        }
        if index == H5_index_t::H5_INDEX_NAME {
            return Err("cannot list the attributes".into());
        }
    }
    names
        .iter()
        .map(|name| {
            // SAFETY: valid object id and NUL-terminated name.
            let attr = attr_hid(
                unsafe { H5Aopen(obj, name.as_ptr(), H5P_DEFAULT) },
                "H5Aopen",
            )?;
            read_one_attr(attr.id())
        })
        .collect()
}

/// Whether an object has an attribute called `name`.
pub(crate) fn has_attr(obj: hid_t, name: &str) -> bool {
    let Ok(c) = CString::new(name) else {
        return false;
    };
    // SAFETY: valid object id and NUL-terminated name.
    unsafe { H5Aexists(obj, c.as_ptr()) > 0 }
}

unsafe extern "C" {
    /// HDF5's native-VOL conversion of an object token to its file address (public API,
    /// `H5VLnative.h`; not bound by hdf5-sys).
    fn H5VLnative_token_to_addr(
        loc_id: hid_t,
        token: hdf5_sys::h5o::H5O_token_t,
        addr: *mut haddr_t,
    ) -> herr_t;
}

/// The path of every object of a file by its address, from one visit of the file (what
/// `H5Rget_obj_name` finds by visiting the file once per reference).
#[derive(Debug, Default)]
pub(crate) struct ObjectNames(HashMap<haddr_t, String>);

impl ObjectNames {
    /// Visits every object reachable from the root group `root`.
    pub(crate) fn of_file(root: hid_t) -> Result<Self, String> {
        use hdf5_sys::h5o::{H5O_INFO_BASIC, H5Ovisit3};
        extern "C" fn visit(
            obj: hid_t,
            name: *const c_char,
            info: *const H5O_info2_t,
            data: *mut c_void,
        ) -> herr_t {
            // SAFETY: HDF5 passes a valid name and info; `data` is the map below.
            unsafe {
                let map = &mut *(data as *mut HashMap<haddr_t, String>);
                let mut addr: haddr_t = 0;
                if H5VLnative_token_to_addr(obj, (*info).token, &mut addr) >= 0 {
                    let name = CStr::from_ptr(name).to_string_lossy().into_owned();
                    map.entry(addr).or_insert(name);
                }
            }
            0
        }
        let mut map: HashMap<haddr_t, String> = HashMap::new();
        // SAFETY: valid group id; the callback only inserts into `map`.
        let r = unsafe {
            H5Ovisit3(
                root,
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                Some(visit),
                (&mut map as *mut HashMap<haddr_t, String>).cast(),
                H5O_INFO_BASIC,
            )
        };
        if r < 0 {
            return Err("cannot visit the file's objects".into());
        }
        Ok(ObjectNames(map))
    }
}

#[repr(C)]
struct Hvl {
    len: usize,
    p: *mut c_void,
}

/// The dimension scales attached to each axis of a dataset, by object path, from its
/// `DIMENSION_LIST` attribute. `Ok(None)` when there is no such attribute. Object references
/// of the classic kind (what netCDF-4 and the HDF5 dimension-scale API write) are resolved
/// through `names`, built on first use from `root`; references of the HDF5 1.12 kind through
/// `H5Rget_obj_name`.
pub(crate) fn dimension_list(
    ds: hid_t,
    rank: usize,
    root: hid_t,
    names: &mut Option<ObjectNames>,
) -> Result<Option<Vec<Option<String>>>, String> {
    use hdf5_sys::h5r::{H5R_ref_t, H5R_type_t, H5Rget_name, H5Rget_obj_name};
    use hdf5_sys::h5t::{H5T_STD_REF, H5T_STD_REF_OBJ, H5Tequal, H5Tvlen_create};

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
    let ftype = type_hid(unsafe { H5Aget_type(attr.id()) }, "H5Aget_type")?;
    let base = type_hid(unsafe { H5Tget_super(ftype.id()) }, "H5Tget_super")?;
    // SAFETY: H5T_STD_REF(_OBJ) are library globals, valid after H5open.
    let classic = unsafe { H5Tequal(base.id(), *H5T_STD_REF_OBJ) } > 0;
    let reftype = if classic {
        *H5T_STD_REF_OBJ
    } else {
        *H5T_STD_REF
    };
    let memtype = type_hid(unsafe { H5Tvlen_create(reftype) }, "H5Tvlen_create")?;
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
    let mut resolve = || -> Result<Vec<Option<String>>, String> {
        let mut out = Vec::with_capacity(rank);
        for hvl in &buf {
            if hvl.len == 0 || hvl.p.is_null() {
                out.push(None);
                continue;
            }
            let name = if classic {
                // SAFETY: `p` points at `len` (>= 1) object addresses read above.
                let addr = unsafe { *(hvl.p as *const haddr_t) };
                if names.is_none() {
                    *names = Some(ObjectNames::of_file(root)?);
                }
                match names.as_ref().and_then(|n| n.0.get(&addr)) {
                    Some(n) => Some(n.clone()),
                    // Not reachable by a hard link from the root: ask the library.
                    None => {
                        let p = (&addr as *const haddr_t).cast();
                        // SAFETY: `p` is one object address; the buffer is as long as `size`.
                        two_call_name(|buf, size| unsafe {
                            H5Rget_name(ds, H5R_type_t::H5R_OBJECT1, p, buf, size)
                        })
                    }
                }
            } else {
                let r = hvl.p as *const H5R_ref_t;
                // SAFETY: `r` points at `len` references read above; the buffer is as long as
                // `size`.
                two_call_name(|buf, size| unsafe { H5Rget_obj_name(r, H5P_DEFAULT, buf, size) })
            };
            out.push(name.filter(|n| !n.is_empty()));
        }
        Ok(out)
    };
    let out = resolve();
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
    out.map(Some)
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
