//! Attributes: listing their names, opening one, and reading its values (fixed-size elements,
//! variable-length strings, or variable-length lists of object references).

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, haddr_t, herr_t, hsize_t};
use hdf5_sys::h5a::{
    H5A_info_t, H5Aexists, H5Aget_name, H5Aget_space, H5Aget_type, H5Aiterate2, H5Aopen, H5Aread,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5r::{H5R_ref_t, H5Rget_obj_name};
use hdf5_sys::h5t::{H5T_STD_REF, H5T_STD_REF_OBJ, H5Tequal, H5Treclaim, H5Tvlen_create};

use super::{Hid, dtype, locked, space, two_call_name};

/// The names of an object's attributes in the order of `index` (creation order or name);
/// `None` when they cannot be listed that way (creation order is not always tracked).
pub(crate) fn names(obj: hid_t, index: H5_index_t) -> Option<Vec<CString>> {
    /// Appends each name to the `Vec<CString>` behind `data`.
    unsafe extern "C" fn collect(
        _loc: hid_t,
        name: *const c_char,
        _info: *const H5A_info_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 calls this only from `H5Aiterate2` below, with a NUL-terminated name
        // valid for the call and `data` the `names` vector, borrowed mutably by nobody else
        // while the iteration runs.
        unsafe { (*data.cast::<Vec<CString>>()).push(CStr::from_ptr(name).to_owned()) };
        0
    }
    let mut names: Vec<CString> = Vec::new();
    let mut idx: hsize_t = 0;
    // SAFETY: `idx` is a local position HDF5 updates; the callback only appends to `names`,
    // which outlives the call; lock held.
    let r = locked(|| unsafe {
        H5Aiterate2(
            obj,
            index,
            H5_iter_order_t::H5_ITER_INC,
            &mut idx,
            Some(collect),
            (&mut names as *mut Vec<CString>).cast(),
        )
    });
    (r >= 0).then_some(names)
}

/// Whether an object has an attribute called `name`.
pub(crate) fn exists(obj: hid_t, name: &CStr) -> bool {
    // SAFETY: `name` is NUL-terminated; a query of an identifier; lock held.
    locked(|| unsafe { H5Aexists(obj, name.as_ptr()) }) > 0
}

/// An open attribute with its datatype and dataspace, so that reads size their buffers from
/// the attribute itself.
pub(crate) struct Attribute {
    attr: Hid,
    ftype: Hid,
    space: Hid,
}

/// Object references read from an attribute (one list per element, the last reference of
/// each, the one netCDF-C takes: `H5DSiterate_scales`): file addresses for the classic kind
/// (`H5T_STD_REF_OBJ`, what netCDF-4 and the dimension-scale API write), object paths for the
/// HDF5 1.12 kind (`H5T_STD_REF`).
pub(crate) enum References {
    /// Classic object references: the address of the last object of each list.
    Addresses(Vec<Option<haddr_t>>),
    /// New-style references: the path of the last object of each list.
    Paths(Vec<Option<String>>),
}

/// One element of a variable-length sequence in memory (`hvl_t`).
#[repr(C)]
struct Hvl {
    len: usize,
    p: *mut c_void,
}

impl Attribute {
    /// Opens the attribute `name` of `obj`; `what` names the call in errors.
    pub(crate) fn open(obj: hid_t, name: &CStr, what: &str) -> Result<Self, String> {
        // SAFETY: `name` is NUL-terminated; the new identifier is owned by the `Hid`; lock
        // held.
        let attr = Hid::attribute(
            locked(|| unsafe { H5Aopen(obj, name.as_ptr(), H5P_DEFAULT) }),
            what,
        )?;
        // SAFETY: queries of the attribute just opened; the new identifiers are owned by the
        // `Hid`s; lock held.
        let ftype = Hid::datatype(locked(|| unsafe { H5Aget_type(attr.id()) }), "H5Aget_type")?;
        // SAFETY: as above.
        let space = Hid::dataspace(
            locked(|| unsafe { H5Aget_space(attr.id()) }),
            "H5Aget_space",
        )?;
        Ok(Attribute { attr, ftype, space })
    }

    /// The attribute's name as HDF5 reports it.
    pub(crate) fn name(&self) -> Option<String> {
        let attr = self.attr.id();
        // SAFETY: HDF5 writes at most `size` bytes, the buffer's length (`two_call_name`);
        // lock held.
        two_call_name(|buf, size| locked(|| unsafe { H5Aget_name(attr, size, buf) }))
    }

    /// The attribute's datatype as stored.
    pub(crate) fn file_type(&self) -> hid_t {
        self.ftype.id()
    }

    /// The attribute's dataspace.
    pub(crate) fn space(&self) -> hid_t {
        self.space.id()
    }

    /// Every element as stored (the file type as memory type: no conversion), at most `max`
    /// bytes in all.
    pub(crate) fn read_raw(&self, max: usize) -> Result<Vec<u8>, String> {
        let len = usize::try_from(space::npoints(self.space()))
            .ok()
            .and_then(|n| n.checked_mul(dtype::size(self.file_type())))
            .filter(|&l| l <= max)
            .ok_or("attribute too large")?;
        let mut buf = vec![0u8; len.max(1)];
        // SAFETY: `buf` holds every element of the attribute's dataspace in its own type, what
        // HDF5 writes; lock held.
        if locked(|| unsafe { H5Aread(self.attr.id(), self.file_type(), buf.as_mut_ptr().cast()) })
            < 0
        {
            return Err("H5Aread failed".into());
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// A variable-length string attribute of at most `max` elements.
    pub(crate) fn read_vlen_strings(&self, max: usize) -> Result<Vec<String>, String> {
        if !dtype::is_variable_str(self.file_type()) {
            return Err("not a variable-length string attribute".into());
        }
        let n = usize::try_from(space::npoints(self.space()))
            .ok()
            .filter(|&n| n <= max)
            .ok_or("attribute too large")?;
        let mut ptrs: Vec<*mut c_char> = vec![ptr::null_mut(); n.max(1)];
        locked(|| {
            // SAFETY: reading a variable-length string type writes one `char *` per element
            // of the dataspace, allocated by HDF5: `ptrs` has one slot per element; lock held.
            let ok =
                unsafe { H5Aread(self.attr.id(), self.file_type(), ptrs.as_mut_ptr().cast()) } >= 0;
            let mut out = Vec::with_capacity(n);
            for &p in &ptrs[..n] {
                if p.is_null() {
                    out.push(String::new());
                } else {
                    // SAFETY: a non-null pointer HDF5 wrote is a NUL-terminated string, read
                    // before it is reclaimed below.
                    out.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
                }
            }
            if ok {
                // SAFETY: `ptrs` was filled by `H5Aread` with this type over this dataspace;
                // the strings are released once, here; lock held.
                unsafe {
                    H5Treclaim(
                        self.file_type(),
                        self.space(),
                        H5P_DEFAULT,
                        ptrs.as_mut_ptr().cast(),
                    );
                }
                Ok(out)
            } else {
                Err("H5Aread of variable-length strings failed".into())
            }
        })
    }

    /// An attribute of variable-length lists of object references: the last object of each
    /// list (`None` for an empty list, or a name HDF5 cannot give).
    pub(crate) fn read_references(&self) -> Result<References, String> {
        locked(|| {
            let base = dtype::super_type(self.file_type())?;
            // SAFETY: a comparison of two identifiers; `H5T_STD_REF_OBJ` is a library global,
            // set when the library was opened; lock held.
            let classic = unsafe { H5Tequal(base.id(), *H5T_STD_REF_OBJ) } > 0;
            let reftype = if classic {
                *H5T_STD_REF_OBJ
            } else {
                *H5T_STD_REF
            };
            // SAFETY: creates a type from a library global; owned by the `Hid`; lock held.
            let memtype = Hid::datatype(unsafe { H5Tvlen_create(reftype) }, "H5Tvlen_create")?;
            let n = usize::try_from(space::npoints(self.space())).map_err(|e| e.to_string())?;
            let mut buf: Vec<Hvl> = (0..n)
                .map(|_| Hvl {
                    len: 0,
                    p: ptr::null_mut(),
                })
                .collect();
            // SAFETY: reading a variable-length type writes one `hvl_t` per element of the
            // dataspace (HDF5 allocates the sequences): `buf` has one per element; lock held.
            if unsafe { H5Aread(self.attr.id(), memtype.id(), buf.as_mut_ptr().cast()) } < 0 {
                return Err("object references unreadable".into());
            }
            let last = buf
                .iter()
                .map(|hvl| (hvl.len > 0 && !hvl.p.is_null()).then(|| (hvl.p, hvl.len - 1)));
            let refs = if classic {
                References::Addresses(
                    last
                        // SAFETY: `p` points at `len` >= 1 classic references, each a file
                        // address (`hobj_ref_t`), allocated by the read above and not yet
                        // reclaimed; `k` = `len - 1` is the last of them.
                        .map(|p| p.map(|(p, k)| unsafe { *p.cast::<haddr_t>().add(k) }))
                        .collect(),
                )
            } else {
                References::Paths(
                    last.map(|p| {
                        let (p, k) = p?;
                        // SAFETY: `p` points at `len` >= 1 references read above and not
                        // yet reclaimed; `k` = `len - 1` is the last of them.
                        let r = unsafe { p.cast::<H5R_ref_t>().add(k) }.cast_const();
                        // SAFETY: `r` points at a reference read above and not
                        // yet reclaimed; HDF5 writes at most `size` bytes, the buffer's
                        // length (`two_call_name`).
                        two_call_name(|name, size| unsafe {
                            H5Rget_obj_name(r, H5P_DEFAULT, name, size)
                        })
                    })
                    .collect(),
                )
            };
            // SAFETY: `buf` was filled by `H5Aread` with `memtype` over the attribute's
            // dataspace; this releases the sequences (and destroys new-style references) once;
            // lock held.
            unsafe {
                H5Treclaim(
                    memtype.id(),
                    self.space(),
                    H5P_DEFAULT,
                    buf.as_mut_ptr().cast(),
                );
            }
            Ok(refs)
        })
    }
}
