//! What libhdf5 (through hdf5-metno / hdf5-sys) reports about a file: the oracle.
//!
//! Every function runs its C calls under the library's global lock.

use std::collections::HashSet;
use std::ffi::{CStr, CString, c_char, c_uint, c_void};
use std::path::Path;
use std::ptr;

use hdf5_sys::h5::{H5_index_t, H5_iter_order_t, haddr_t, herr_t, hsize_t};
use hdf5_sys::h5a::{
    H5A_info_t, H5Aclose, H5Aget_space, H5Aget_type, H5Aiterate2, H5Aopen, H5Aread,
};
use hdf5_sys::h5d::{
    H5D_fill_value_t, H5Dget_create_plist, H5Dget_offset, H5Dget_space, H5Dget_storage_size,
    H5Dget_type,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5l::{H5L_info2_t, H5L_type_t, H5Lget_val, H5Literate2, H5Lunpack_elink_val};
use hdf5_sys::h5o::{H5O_INFO_BASIC, H5O_info2_t, H5O_token_t, H5O_type_t, H5Oget_info_by_name3};
use hdf5_sys::h5p::{
    H5P_DEFAULT, H5Pclose, H5Pfill_value_defined, H5Pget_chunk, H5Pget_external_count,
    H5Pget_fill_value, H5Pget_filter2, H5Pget_layout, H5Pget_nfilters,
};
use hdf5_sys::h5s::{
    H5S_class_t, H5Sclose, H5Sget_simple_extent_dims, H5Sget_simple_extent_ndims,
    H5Sget_simple_extent_npoints, H5Sget_simple_extent_type,
};
use hdf5_sys::h5t::{
    H5T_C_S1, H5T_STD_REF_OBJ, H5T_VARIABLE, H5T_class_t, H5T_cset_t, H5T_str_t, H5Tclose, H5Tcopy,
    H5Tdetect_class, H5Tget_class, H5Tget_order, H5Tget_sign, H5Tget_size, H5Tget_super,
    H5Tis_variable_str, H5Tset_cset, H5Tset_size, H5Tset_strpad, H5Tvlen_create,
};

unsafe extern "C" {
    /// Native-VOL token to address (public API, `H5VLnative.h`; not bound by hdf5-sys).
    fn H5VLnative_token_to_addr(loc_id: hid_t, token: H5O_token_t, addr: *mut haddr_t) -> herr_t;
}

/// A link as libhdf5 lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LibLink {
    Hard(u64),
    Soft(String),
    External(String, String),
    Other,
}

/// An attribute as libhdf5 reads it.
#[derive(Clone, Debug, Default)]
pub(crate) struct LibAttr {
    pub name: String,
    pub class: i32,
    pub size: usize,
    pub is_vlen_string: bool,
    pub npoints: u64,
    /// Raw bytes (file type, no conversion) for types without variable-length parts.
    pub raw: Option<Vec<u8>>,
    /// Variable-length strings.
    pub strings: Option<Vec<Option<Vec<u8>>>>,
    /// Addresses of classic object references in a vlen sequence (DIMENSION_LIST style).
    pub ref_lists: Option<Vec<Vec<u64>>>,
}

/// A dataset as libhdf5 reports it.
#[derive(Clone, Debug, Default)]
pub(crate) struct LibDataset {
    pub shape: Option<Vec<u64>>,
    pub max: Option<Vec<u64>>,
    pub class: i32,
    pub size: usize,
    pub order: i32,
    pub sign: i32,
    pub is_vlen_string: bool,
    pub layout: i32,
    pub chunk: Option<Vec<u64>>,
    pub filters: Vec<(i32, u32, Vec<u32>)>,
    pub fill_status: i32,
    pub fill: Option<Vec<u8>>,
    pub offset: Option<u64>,
    pub storage_size: u64,
    pub index_type: Option<i32>,
    /// (offset, filter mask, address, size), in iteration order.
    pub chunks: Vec<(Vec<u64>, u32, u64, u64)>,
    pub external: i32,
}

/// One object found by walking the file.
#[derive(Clone, Debug)]
pub(crate) struct LibObject {
    pub path: String,
    pub addr: u64,
    pub kind: i32,
    pub links: Option<Vec<(String, LibLink)>>,
    /// The link names in creation order where the group tracks it, else by name.
    pub file_order: Option<Vec<String>>,
    pub attrs: Result<Vec<LibAttr>, String>,
    pub dataset: Option<Result<LibDataset, String>>,
}

fn cstr(p: *const c_char) -> String {
    // SAFETY: libhdf5 hands out NUL-terminated names.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Walks a file as libhdf5 sees it: every object reachable by hard links, once.
pub(crate) fn walk(path: &Path) -> hdf5::Result<Vec<LibObject>> {
    let file = hdf5::File::open(path)?;
    hdf5::sync::sync(|| {
        let root = file.id();
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let root_addr = obj_addr(root, ".").expect("root address");
        seen.insert(root_addr);
        visit(root, "/", root_addr, &mut seen, &mut out);
        Ok(out)
    })
}

fn obj_addr(loc: hid_t, name: &str) -> Option<(u64, i32)> {
    let c = CString::new(name).ok()?;
    // SAFETY: H5O_info2_t is a plain C struct for which all-zero bytes are a valid value.
    let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid location, NUL-terminated name, out-pointer valid.
    if unsafe { H5Oget_info_by_name3(loc, c.as_ptr(), &mut info, H5O_INFO_BASIC, H5P_DEFAULT) } < 0
    {
        return None;
    }
    let mut addr: haddr_t = 0;
    // SAFETY: token from the info above.
    if unsafe { H5VLnative_token_to_addr(loc, info.token, &mut addr) } < 0 {
        return None;
    }
    let kind = match info.type_ {
        H5O_type_t::H5O_TYPE_GROUP => 0,
        H5O_type_t::H5O_TYPE_DATASET => 1,
        H5O_type_t::H5O_TYPE_NAMED_DATATYPE => 2,
        _ => 3,
    };
    Some((addr, kind))
}

fn visit(
    loc: hid_t,
    path: &str,
    addr: (u64, i32),
    seen: &mut HashSet<(u64, i32)>,
    out: &mut Vec<LibObject>,
) {
    let (a, kind) = addr;
    let name = if path == "/" {
        ".".to_string()
    } else {
        path.to_string()
    };
    let cname = CString::new(name.clone()).unwrap();
    let mut obj = LibObject {
        path: path.to_string(),
        addr: a,
        kind,
        links: None,
        file_order: None,
        attrs: Err("not read".into()),
        dataset: None,
    };
    // Open the object to read its attributes.
    // SAFETY: `loc` is an open identifier and `cname` a NUL-terminated name.
    let oid = unsafe { hdf5_sys::h5o::H5Oopen(loc, cname.as_ptr(), H5P_DEFAULT) };
    if oid >= 0 {
        obj.attrs = attributes(oid);
        if kind == 1 {
            obj.dataset = Some(dataset(oid));
        }
        // SAFETY: `oid` was opened above and is closed once.
        unsafe { hdf5_sys::h5o::H5Oclose(oid) };
    }
    let mut children = Vec::new();
    if kind == 0 {
        // SAFETY: `loc` is an open identifier and `cname` a NUL-terminated name.
        let gid = unsafe { hdf5_sys::h5g::H5Gopen2(loc, cname.as_ptr(), H5P_DEFAULT) };
        if gid >= 0 {
            let links = links(gid);
            for (lname, l) in &links {
                if let LibLink::Hard(_) = l {
                    children.push(lname.clone());
                }
            }
            obj.links = Some(links);
            obj.file_order = Some(names_in_file_order(gid));
            out.push(obj);
            for lname in children {
                let child_path = if path == "/" {
                    format!("/{lname}")
                } else {
                    format!("{path}/{lname}")
                };
                if let Some(ca) = obj_addr(gid, &lname)
                    && seen.insert(ca)
                {
                    visit_child(gid, &child_path, ca, seen, out);
                }
            }
            // SAFETY: `gid` was opened above and is closed once.
            unsafe { hdf5_sys::h5g::H5Gclose(gid) };
            return;
        }
    }
    out.push(obj);
}

fn visit_child(
    gid: hid_t,
    path: &str,
    addr: (u64, i32),
    seen: &mut HashSet<(u64, i32)>,
    out: &mut Vec<LibObject>,
) {
    let name = path.rsplit('/').next().unwrap().to_string();
    // Visit relative to the parent group, by the link's name.
    let (a, kind) = addr;
    let cname = CString::new(name.clone()).unwrap();
    let mut obj = LibObject {
        path: path.to_string(),
        addr: a,
        kind,
        links: None,
        file_order: None,
        attrs: Err("not read".into()),
        dataset: None,
    };
    // SAFETY: `gid` is an open group and `cname` a NUL-terminated name.
    let oid = unsafe { hdf5_sys::h5o::H5Oopen(gid, cname.as_ptr(), H5P_DEFAULT) };
    if oid < 0 {
        obj.attrs = Err("cannot open".into());
        out.push(obj);
        return;
    }
    obj.attrs = attributes(oid);
    if kind == 1 {
        obj.dataset = Some(dataset(oid));
    }
    if kind == 0 {
        let links = links(oid);
        let mut children = Vec::new();
        for (lname, l) in &links {
            if let LibLink::Hard(_) = l {
                children.push(lname.clone());
            }
        }
        obj.links = Some(links);
        obj.file_order = Some(names_in_file_order(oid));
        out.push(obj);
        for lname in children {
            if let Some(ca) = obj_addr(oid, &lname)
                && seen.insert(ca)
            {
                visit_child(oid, &format!("{path}/{lname}"), ca, seen, out);
            }
        }
    } else {
        out.push(obj);
    }
    // SAFETY: `oid` was opened above and is closed once.
    unsafe { hdf5_sys::h5o::H5Oclose(oid) };
}

/// Links of a group in name order.
pub(crate) fn links(group: hid_t) -> Vec<(String, LibLink)> {
    extern "C" fn collect(
        g: hid_t,
        name: *const c_char,
        info: *const H5L_info2_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: libhdf5 passes a valid name and info; `data` is the Vec below.
        unsafe {
            let out = &mut *(data as *mut Vec<(String, LibLink)>);
            let n = cstr(name);
            let mut copy: H5L_info2_t = std::ptr::read(info);
            let l = match (*info).type_ {
                H5L_type_t::H5L_TYPE_HARD => {
                    let mut addr: haddr_t = 0;
                    H5VLnative_token_to_addr(g, *copy.u.token(), &mut addr);
                    LibLink::Hard(addr)
                }
                H5L_type_t::H5L_TYPE_SOFT | H5L_type_t::H5L_TYPE_EXTERNAL => {
                    let size = *copy.u.val_size();
                    let mut buf = vec![0u8; size.max(1)];
                    H5Lget_val(g, name, buf.as_mut_ptr().cast(), size, H5P_DEFAULT);
                    if (*info).type_ == H5L_type_t::H5L_TYPE_SOFT {
                        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                        LibLink::Soft(String::from_utf8_lossy(&buf[..end]).into_owned())
                    } else {
                        let mut f: *const c_char = ptr::null();
                        let mut o: *const c_char = ptr::null();
                        let mut flags: c_uint = 0;
                        H5Lunpack_elink_val(buf.as_ptr().cast(), size, &mut flags, &mut f, &mut o);
                        LibLink::External(cstr(f), cstr(o))
                    }
                }
                _ => LibLink::Other,
            };
            out.push((n, l));
        }
        0
    }
    let mut out: Vec<(String, LibLink)> = Vec::new();
    let mut idx: hsize_t = 0;
    // SAFETY: valid group id; the callback only appends to `out`.
    unsafe {
        H5Literate2(
            group,
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_INC,
            &mut idx,
            Some(collect),
            (&mut out as *mut Vec<(String, LibLink)>).cast(),
        );
    }
    out
}

/// The link names of a group by creation order (`H5_INDEX_CRT_ORDER`), or by name where the
/// library refuses (creation order not tracked).
pub(crate) fn names_in_file_order(group: hid_t) -> Vec<String> {
    extern "C" fn collect(
        _g: hid_t,
        name: *const c_char,
        _info: *const H5L_info2_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: libhdf5 passes a valid name; `data` is the Vec below.
        unsafe { (*(data as *mut Vec<String>)).push(cstr(name)) };
        0
    }
    for index in [H5_index_t::H5_INDEX_CRT_ORDER, H5_index_t::H5_INDEX_NAME] {
        let mut out: Vec<String> = Vec::new();
        let mut idx: hsize_t = 0;
        // SAFETY: valid group id; the callback only appends to `out`.
        let r = unsafe {
            H5Literate2(
                group,
                index,
                H5_iter_order_t::H5_ITER_INC,
                &mut idx,
                Some(collect),
                (&mut out as *mut Vec<String>).cast(),
            )
        };
        if r >= 0 {
            return out;
        }
    }
    Vec::new()
}

fn space_info(space: hid_t) -> (Option<Vec<u64>>, Option<Vec<u64>>, u64) {
    // SAFETY: valid dataspace id; buffers of the reported rank.
    unsafe {
        let np = u64::try_from(H5Sget_simple_extent_npoints(space)).unwrap_or(0);
        match H5Sget_simple_extent_type(space) {
            H5S_class_t::H5S_NULL => (None, None, 0),
            H5S_class_t::H5S_SCALAR => (Some(vec![]), Some(vec![]), 1),
            _ => {
                let n = H5Sget_simple_extent_ndims(space).max(0) as usize;
                let mut d = vec![0 as hsize_t; n];
                let mut m = vec![0 as hsize_t; n];
                H5Sget_simple_extent_dims(space, d.as_mut_ptr(), m.as_mut_ptr());
                (Some(d), Some(m), np)
            }
        }
    }
}

fn class_of(t: hid_t) -> i32 {
    // SAFETY: valid type id.
    unsafe { H5Tget_class(t) as i32 }
}

fn has_vlen_or_ref(t: hid_t) -> bool {
    // SAFETY: valid type id.
    unsafe {
        H5Tdetect_class(t, H5T_class_t::H5T_VLEN) > 0
            || H5Tis_variable_str(t) > 0
            || H5Tdetect_class(t, H5T_class_t::H5T_REFERENCE) > 0
    }
}

/// Attributes in the order `H5Aiterate2` gives with the creation-order index (falling back to
/// the name index), as the vzarr scanner lists them.
pub(crate) fn attributes(obj: hid_t) -> Result<Vec<LibAttr>, String> {
    extern "C" fn collect(
        _l: hid_t,
        name: *const c_char,
        _i: *const H5A_info_t,
        d: *mut c_void,
    ) -> herr_t {
        // SAFETY: valid name; `d` is the Vec below.
        unsafe { (*(d as *mut Vec<String>)).push(cstr(name)) };
        0
    }
    let mut names: Vec<String> = Vec::new();
    let mut ok = false;
    for index in [H5_index_t::H5_INDEX_CRT_ORDER, H5_index_t::H5_INDEX_NAME] {
        names.clear();
        let mut idx: hsize_t = 0;
        // SAFETY: valid object; callback appends names.
        let r = unsafe {
            H5Aiterate2(
                obj,
                index,
                H5_iter_order_t::H5_ITER_INC,
                &mut idx,
                Some(collect),
                (&mut names as *mut Vec<String>).cast(),
            )
        };
        if r >= 0 {
            ok = true;
            break;
        }
    }
    if !ok {
        return Err("H5Aiterate2 failed".into());
    }
    let mut out = Vec::new();
    for n in names {
        let c = CString::new(n.clone()).unwrap();
        // SAFETY: valid object and name; ids closed below.
        unsafe {
            let a = H5Aopen(obj, c.as_ptr(), H5P_DEFAULT);
            if a < 0 {
                return Err(format!("H5Aopen {n}"));
            }
            let t = H5Aget_type(a);
            let s = H5Aget_space(a);
            let (_, _, np) = space_info(s);
            let mut attr = LibAttr {
                name: n,
                class: class_of(t),
                size: H5Tget_size(t),
                is_vlen_string: H5Tis_variable_str(t) > 0,
                npoints: np,
                ..Default::default()
            };
            if H5Sget_simple_extent_type(s) != H5S_class_t::H5S_NULL {
                if attr.is_vlen_string {
                    attr.strings = Some(read_vlen_strings(a, np as usize));
                } else if !has_vlen_or_ref(t) {
                    let mut buf = vec![0u8; (np as usize * attr.size).max(1)];
                    if H5Aread(a, t, buf.as_mut_ptr().cast()) >= 0 {
                        buf.truncate(np as usize * attr.size);
                        attr.raw = Some(buf);
                    }
                } else if attr.class == H5T_class_t::H5T_VLEN as i32 {
                    let sup = H5Tget_super(t);
                    if hdf5_sys::h5t::H5Tequal(sup, *H5T_STD_REF_OBJ) > 0 {
                        attr.ref_lists = Some(read_ref_lists(a, s, np as usize));
                    }
                    H5Tclose(sup);
                } else if attr.class == H5T_class_t::H5T_REFERENCE as i32
                    && hdf5_sys::h5t::H5Tequal(t, *H5T_STD_REF_OBJ) > 0
                {
                    let mut buf = vec![0u64; np as usize];
                    if H5Aread(a, t, buf.as_mut_ptr().cast()) >= 0 {
                        attr.ref_lists = Some(buf.into_iter().map(|x| vec![x]).collect());
                    }
                }
            }
            H5Sclose(s);
            H5Tclose(t);
            H5Aclose(a);
            out.push(attr);
        }
    }
    Ok(out)
}

unsafe fn read_vlen_strings(a: hid_t, n: usize) -> Vec<Option<Vec<u8>>> {
    // SAFETY: the caller gives a valid vlen string attribute of n elements.
    unsafe {
        let mt = H5Tcopy(*H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5T_cset_t::H5T_CSET_UTF8);
        H5Tset_strpad(mt, H5T_str_t::H5T_STR_NULLTERM);
        let mut ptrs: Vec<*mut c_char> = vec![ptr::null_mut(); n.max(1)];
        let ok = H5Aread(a, mt, ptrs.as_mut_ptr().cast()) >= 0;
        let out = ptrs[..n]
            .iter()
            .map(|&p| (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes().to_vec()))
            .collect();
        if ok {
            let s = H5Aget_space(a);
            hdf5_sys::h5t::H5Treclaim(mt, s, H5P_DEFAULT, ptrs.as_mut_ptr().cast());
            H5Sclose(s);
        }
        H5Tclose(mt);
        out
    }
}

#[repr(C)]
struct Hvl {
    len: usize,
    p: *mut c_void,
}

unsafe fn read_ref_lists(a: hid_t, space: hid_t, n: usize) -> Vec<Vec<u64>> {
    // SAFETY: a vlen of H5T_STD_REF_OBJ attribute of n elements.
    unsafe {
        let mt = H5Tvlen_create(*H5T_STD_REF_OBJ);
        let mut buf: Vec<Hvl> = (0..n)
            .map(|_| Hvl {
                len: 0,
                p: ptr::null_mut(),
            })
            .collect();
        let mut out = Vec::new();
        if H5Aread(a, mt, buf.as_mut_ptr().cast()) >= 0 {
            for h in &buf {
                let s = std::slice::from_raw_parts(h.p as *const u64, h.len);
                out.push(s.to_vec());
            }
            hdf5_sys::h5t::H5Treclaim(mt, space, H5P_DEFAULT, buf.as_mut_ptr().cast());
        }
        H5Tclose(mt);
        out
    }
}

/// Storage facts of an open dataset.
pub(crate) fn dataset(d: hid_t) -> Result<LibDataset, String> {
    let mut out = LibDataset::default();
    // SAFETY: valid dataset id; every id opened here is closed here.
    unsafe {
        let s = H5Dget_space(d);
        let t = H5Dget_type(d);
        let p = H5Dget_create_plist(d);
        if s < 0 || t < 0 || p < 0 {
            return Err("dataset ids".into());
        }
        let (shape, max, _) = space_info(s);
        out.shape = shape;
        out.max = max;
        out.class = class_of(t);
        out.size = H5Tget_size(t);
        out.order = H5Tget_order(t) as i32;
        out.sign = if out.class == 0 {
            H5Tget_sign(t) as i32
        } else {
            -1
        };
        out.is_vlen_string = H5Tis_variable_str(t) > 0;
        out.layout = H5Pget_layout(p) as i32;
        if out.layout == 2 {
            let rank = out.shape.as_ref().map_or(0, |s| s.len());
            let mut c = vec![0 as hsize_t; rank.max(1)];
            let got = H5Pget_chunk(p, rank as i32, c.as_mut_ptr());
            c.truncate(got.max(0) as usize);
            out.chunk = Some(c);
            let mut it: hdf5_sys::h5d::H5D_chunk_index_t = 0;
            if hdf5_sys::h5d::H5Dget_chunk_index_type(d, &mut it) >= 0 {
                out.index_type = Some(it as i32);
            }
        }
        let nf = H5Pget_nfilters(p);
        for i in 0..nf.max(0) as c_uint {
            let mut flags: c_uint = 0;
            let mut cd = [0 as c_uint; 64];
            let mut n: usize = cd.len();
            let mut cfg: c_uint = 0;
            let id = H5Pget_filter2(
                p,
                i,
                &mut flags,
                &mut n,
                cd.as_mut_ptr(),
                0,
                ptr::null_mut(),
                &mut cfg,
            );
            out.filters.push((id, flags, cd[..n.min(64)].to_vec()));
        }
        let mut st = H5D_fill_value_t::H5D_FILL_VALUE_ERROR;
        H5Pfill_value_defined(p, &mut st);
        out.fill_status = st as i32;
        if st == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED && !has_vlen_or_ref(t) {
            let mut buf = vec![0u8; out.size];
            if H5Pget_fill_value(p, t, buf.as_mut_ptr().cast()) >= 0 {
                out.fill = Some(buf);
            }
        }
        let off = H5Dget_offset(d);
        out.offset = (off != haddr_t::MAX).then_some(off);
        out.storage_size = H5Dget_storage_size(d);
        out.external = H5Pget_external_count(p);
        H5Pclose(p);
        H5Tclose(t);
        H5Sclose(s);
    }
    if out.layout == 2 {
        let mut chunks = Vec::new();
        let ds: hdf5::Dataset = unsafe {
            // SAFETY: a new reference to the id, released by the wrapper.
            hdf5_sys::h5i::H5Iinc_ref(d);
            hdf5::from_id(d).map_err(|e| e.to_string())?
        };
        let r = ds.chunks_visit(|c| {
            chunks.push((c.offset.to_vec(), c.filter_mask, c.addr, c.size));
            0
        });
        if let Err(e) = r {
            return Err(format!("chunks_visit: {e}"));
        }
        out.chunks = chunks;
    }
    Ok(out)
}

/// Object paths by address as `H5Ovisit3` with the name index gives them (the first path of
/// each object; relative names made absolute, the root as "/").
pub(crate) fn ovisit_paths(path: &Path) -> std::collections::HashMap<u64, String> {
    use std::collections::HashMap;
    extern "C" fn cb(
        obj: hid_t,
        name: *const c_char,
        info: *const H5O_info2_t,
        d: *mut c_void,
    ) -> herr_t {
        // SAFETY: valid name and info; `d` is the map below.
        unsafe {
            let map = &mut *(d as *mut HashMap<u64, String>);
            let mut addr: haddr_t = 0;
            if H5VLnative_token_to_addr(obj, (*info).token, &mut addr) >= 0 {
                let n = cstr(name);
                let p = if n == "." {
                    "/".to_string()
                } else {
                    format!("/{n}")
                };
                map.entry(addr).or_insert(p);
            }
        }
        0
    }
    let file = hdf5::File::open(path).unwrap();
    let mut map: HashMap<u64, String> = HashMap::new();
    // SAFETY: HDF5 calls on the open file, under the library lock; buffers are sized as HDF5 asks.
    hdf5::sync::sync(|| unsafe {
        hdf5_sys::h5o::H5Ovisit3(
            file.id(),
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_INC,
            Some(cb),
            (&mut map as *mut HashMap<u64, String>).cast(),
            H5O_INFO_BASIC,
        );
    });
    map
}

/// The raw bytes of a dataset with a fixed-size type (file type, no conversion), row-major.
pub(crate) fn read_raw_bytes(path: &Path, dataset: &str, nbytes: usize) -> Option<Vec<u8>> {
    let file = hdf5::File::open(path).ok()?;
    let ds = file.dataset(dataset).ok()?;
    // SAFETY: HDF5 calls on the open dataset, under the library lock; buffers are sized as HDF5 asks.
    hdf5::sync::sync(|| unsafe {
        let t = H5Dget_type(ds.id());
        let mut buf = vec![0u8; nbytes.max(1)];
        let r = hdf5_sys::h5d::H5Dread(
            ds.id(),
            t,
            hdf5_sys::h5s::H5S_ALL,
            hdf5_sys::h5s::H5S_ALL,
            H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        );
        H5Tclose(t);
        (r >= 0).then(|| {
            buf.truncate(nbytes);
            buf
        })
    })
}
