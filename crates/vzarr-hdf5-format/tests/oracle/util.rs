//! Raw libhdf5 calls for what hdf5-metno's high-level API does not offer.

use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};
use std::ptr;

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5a::{H5Aclose, H5Acreate2, H5Awrite};
use hdf5_sys::h5d::{H5Dclose, H5Dcreate2, H5Dwrite, H5Dwrite_chunk};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5r::{H5R_ref_t, H5R_type_t, H5Rcreate, H5Rcreate_object, H5Rdestroy};
use hdf5_sys::h5s::{
    H5S_ALL, H5S_class_t, H5S_seloper_t, H5Sclose, H5Screate, H5Screate_simple, H5Sselect_hyperslab,
};
use hdf5_sys::h5t::{
    H5T_IEEE_F64BE, H5T_NATIVE_B16, H5T_NATIVE_INT32, H5T_NATIVE_UINT8, H5T_STD_I16BE,
    H5T_STD_I32LE, H5T_STD_REF, H5T_STD_REF_DSETREG, H5T_STD_REF_OBJ, H5T_STD_U8LE, H5T_UNIX_D32LE,
    H5T_class_t, H5Tarray_create2, H5Tclose, H5Tcommit2, H5Tcopy, H5Tcreate, H5Tenum_create,
    H5Tenum_insert, H5Tinsert, H5Tset_offset, H5Tset_precision, H5Tvlen_create,
};
use ndarray::Array1;

unsafe extern "C" {
    /// HDF5 2.0's complex number type constructor (not bound by hdf5-sys 0.12).
    fn H5Tcomplex_create(base_type_id: hid_t) -> hid_t;
}

fn check(r: i64, what: &str) {
    assert!(r >= 0, "libhdf5 call failed: {what}");
}

/// Writes one chunk's stored bytes with a filter mask.
pub(crate) fn write_chunk_direct(ds: &hdf5::Dataset, offset: &[u64], mask: u32, bytes: &[u8]) {
    let off: Vec<hsize_t> = offset.to_vec();
    // SAFETY: the dataset is open and `bytes` holds the chunk as written; under the library lock.
    hdf5::sync::sync(|| unsafe {
        check(
            i64::from(H5Dwrite_chunk(
                ds.id(),
                H5P_DEFAULT,
                mask,
                off.as_ptr(),
                bytes.len(),
                bytes.as_ptr().cast(),
            )),
            "H5Dwrite_chunk",
        );
    });
}

fn attr_raw(loc: hid_t, name: &str, t: hid_t, dims: &[u64], data: *const c_void) {
    let c = CString::new(name).unwrap();
    // SAFETY: `loc` and `t` are open identifiers and `data` points at `dims` elements of `t`.
    unsafe {
        let s = if dims.is_empty() {
            H5Screate(H5S_class_t::H5S_SCALAR)
        } else {
            H5Screate_simple(dims.len() as i32, dims.as_ptr(), ptr::null())
        };
        let a = H5Acreate2(loc, c.as_ptr(), t, s, H5P_DEFAULT, H5P_DEFAULT);
        check(a, name);
        check(i64::from(H5Awrite(a, t, data)), name);
        H5Aclose(a);
        H5Sclose(s);
    }
}

/// Commits datatypes and uses them in datasets and attributes (shared datatype messages).
pub(crate) fn commit_and_use(f: &hdf5::File) {
    // SAFETY: HDF5 calls on identifiers created and closed in this block, under the library lock.
    hdf5::sync::sync(|| unsafe {
        let loc = f.id();
        let t = H5Tcopy(*H5T_STD_I16BE);
        let n = CString::new("be_short").unwrap();
        check(
            i64::from(H5Tcommit2(
                loc,
                n.as_ptr(),
                t,
                H5P_DEFAULT,
                H5P_DEFAULT,
                H5P_DEFAULT,
            )),
            "commit",
        );
        let ct = H5Tcreate(H5T_class_t::H5T_COMPOUND, 12);
        let a = CString::new("a").unwrap();
        let b = CString::new("b").unwrap();
        H5Tinsert(ct, a.as_ptr(), 0, *H5T_STD_I32LE);
        H5Tinsert(ct, b.as_ptr(), 4, *H5T_IEEE_F64BE);
        let cn = CString::new("pair").unwrap();
        check(
            i64::from(H5Tcommit2(
                loc,
                cn.as_ptr(),
                ct,
                H5P_DEFAULT,
                H5P_DEFAULT,
                H5P_DEFAULT,
            )),
            "commit",
        );
        let dims = [4u64];
        let s = H5Screate_simple(1, dims.as_ptr(), ptr::null());
        for (name, ty, bytes) in [
            ("uses_be_short", t, vec![0u8, 1, 0, 2, 0, 3, 0, 4]),
            ("uses_pair", ct, vec![7u8; 48]),
        ] {
            let dn = CString::new(name).unwrap();
            let d = H5Dcreate2(
                loc,
                dn.as_ptr(),
                ty,
                s,
                H5P_DEFAULT,
                H5P_DEFAULT,
                H5P_DEFAULT,
            );
            check(d, name);
            check(
                i64::from(H5Dwrite(
                    d,
                    ty,
                    H5S_ALL,
                    H5S_ALL,
                    H5P_DEFAULT,
                    bytes.as_ptr().cast(),
                )),
                name,
            );
            let v = [5u8, 6];
            attr_raw(d, "committed_attr", t, &[], v.as_ptr().cast());
            H5Dclose(d);
        }
        H5Sclose(s);
        H5Tclose(t);
        H5Tclose(ct);
    });
}

#[repr(C)]
struct Hvl {
    len: usize,
    p: *mut c_void,
}

/// A file with the rarer datatypes and reference attributes of both kinds.
pub(crate) fn types(dir: &Path) -> PathBuf {
    let p = dir.join("types.h5");
    let f = crate::generated::create(&p, crate::generated::Ver::Latest, |_| {});
    f.new_dataset_builder()
        .with_data(&Array1::from_shape_fn(5, |i| i as f64))
        .create("target")
        .unwrap();
    f.create_group("grp").unwrap();
    // SAFETY: HDF5 calls on identifiers created and closed in this block, under the library lock.
    hdf5::sync::sync(|| unsafe {
        let loc = f.id();
        // Bitfield, time, opaque, enum, array, nested compound, vlen sequence attributes.
        let bf = H5Tcopy(*H5T_NATIVE_B16);
        let v16 = [0xa5u8, 0x5a, 1, 2];
        attr_raw(loc, "bitfield", bf, &[2], v16.as_ptr().cast());
        let tm = H5Tcopy(*H5T_UNIX_D32LE);
        let v32 = [1u8, 2, 3, 4];
        attr_raw(loc, "time", tm, &[], v32.as_ptr().cast());
        let op = H5Tcreate(H5T_class_t::H5T_OPAQUE, 3);
        let tag = CString::new("my tag").unwrap();
        hdf5_sys::h5t::H5Tset_tag(op, tag.as_ptr());
        let v3 = [9u8, 8, 7, 6, 5, 4];
        attr_raw(loc, "opaque", op, &[2], v3.as_ptr().cast());
        let en = H5Tenum_create(*H5T_STD_U8LE);
        for (i, n) in ["red", "green", "blue"].iter().enumerate() {
            let cn = CString::new(*n).unwrap();
            let v = i as u8 * 10;
            H5Tenum_insert(en, cn.as_ptr(), (&v as *const u8).cast());
        }
        let ve = [0u8, 10, 20];
        attr_raw(loc, "enum", en, &[3], ve.as_ptr().cast());
        let adims = [2u64, 3];
        let ar = H5Tarray_create2(*H5T_STD_I32LE, 2, adims.as_ptr());
        let va: Vec<u8> = (0..24u8).collect();
        attr_raw(loc, "array", ar, &[], va.as_ptr().cast());
        let inner = H5Tcreate(H5T_class_t::H5T_COMPOUND, 8);
        let x = CString::new("x").unwrap();
        let y = CString::new("y").unwrap();
        H5Tinsert(inner, x.as_ptr(), 0, *H5T_STD_I32LE);
        H5Tinsert(inner, y.as_ptr(), 4, *H5T_STD_I32LE);
        let outer = H5Tcreate(H5T_class_t::H5T_COMPOUND, 32);
        let i_n = CString::new("inner").unwrap();
        let a_n = CString::new("arr").unwrap();
        H5Tinsert(outer, i_n.as_ptr(), 0, inner);
        H5Tinsert(outer, a_n.as_ptr(), 8, ar);
        let vo: Vec<u8> = (0..32u8).collect();
        attr_raw(loc, "nested_compound", outer, &[], vo.as_ptr().cast());
        // Complex numbers (HDF5 2.0, datatype class 11).
        let cx = H5Tcomplex_create(*hdf5_sys::h5t::H5T_IEEE_F32LE);
        check(cx, "H5Tcomplex_create");
        let vc: Vec<u8> = (0..16u8).collect();
        attr_raw(loc, "complex", cx, &[2], vc.as_ptr().cast());
        H5Tclose(cx);
        // Integer with padding bits.
        let pi = H5Tcopy(*H5T_STD_I32LE);
        H5Tset_precision(pi, 12);
        H5Tset_offset(pi, 4);
        let vp = [0xf0u8, 0x0f, 0, 0];
        attr_raw(loc, "padded_int", pi, &[], vp.as_ptr().cast());
        // Vlen sequence of ints.
        let vl = H5Tvlen_create(*H5T_NATIVE_INT32);
        let mut ints = [1i32, 2, 3];
        let h = [
            Hvl {
                len: 3,
                p: ints.as_mut_ptr().cast(),
            },
            Hvl {
                len: 0,
                p: ptr::null_mut(),
            },
        ];
        attr_raw(loc, "vlen_ints", vl, &[2], h.as_ptr().cast());
        // Classic object references and a DIMENSION_LIST-like vlen of them.
        let t1 = CString::new("/target").unwrap();
        let t2 = CString::new("/grp").unwrap();
        let mut r = [0u64; 2];
        H5Rcreate(
            (&mut r[0] as *mut u64).cast(),
            loc,
            t1.as_ptr(),
            H5R_type_t::H5R_OBJECT1,
            -1,
        );
        H5Rcreate(
            (&mut r[1] as *mut u64).cast(),
            loc,
            t2.as_ptr(),
            H5R_type_t::H5R_OBJECT1,
            -1,
        );
        attr_raw(loc, "obj_refs", *H5T_STD_REF_OBJ, &[2], r.as_ptr().cast());
        let vr = H5Tvlen_create(*H5T_STD_REF_OBJ);
        let hv = [
            Hvl {
                len: 2,
                p: r.as_mut_ptr().cast(),
            },
            Hvl {
                len: 1,
                p: (&mut r[1] as *mut u64).cast(),
            },
        ];
        attr_raw(loc, "ref_lists", vr, &[2], hv.as_ptr().cast());
        // Region reference.
        let dn = CString::new("target").unwrap();
        let d = hdf5_sys::h5d::H5Dopen2(loc, dn.as_ptr(), H5P_DEFAULT);
        let sp = hdf5_sys::h5d::H5Dget_space(d);
        let start = [1u64];
        let count = [2u64];
        H5Sselect_hyperslab(
            sp,
            H5S_seloper_t::H5S_SELECT_SET,
            start.as_ptr(),
            ptr::null(),
            count.as_ptr(),
            ptr::null(),
        );
        let mut reg = [0u8; 12];
        H5Rcreate(
            reg.as_mut_ptr().cast(),
            loc,
            t1.as_ptr(),
            H5R_type_t::H5R_DATASET_REGION1,
            sp,
        );
        attr_raw(
            loc,
            "region_ref",
            *H5T_STD_REF_DSETREG,
            &[],
            reg.as_ptr().cast(),
        );
        H5Sclose(sp);
        H5Dclose(d);
        // New-style (1.12) references, direct and in a vlen.
        let mut nr: [H5R_ref_t; 2] = std::mem::zeroed();
        H5Rcreate_object(loc, t1.as_ptr(), H5P_DEFAULT, &mut nr[0]);
        H5Rcreate_object(loc, t2.as_ptr(), H5P_DEFAULT, &mut nr[1]);
        attr_raw(loc, "new_refs", *H5T_STD_REF, &[2], nr.as_ptr().cast());
        let vn = H5Tvlen_create(*H5T_STD_REF);
        let hn = [Hvl {
            len: 2,
            p: nr.as_mut_ptr().cast(),
        }];
        attr_raw(loc, "new_ref_lists", vn, &[1], hn.as_ptr().cast());
        for r in &mut nr {
            H5Rdestroy(r);
        }
        for t in [bf, tm, op, en, ar, inner, outer, pi, vl, vr, vn] {
            H5Tclose(t);
        }
        let _ = *H5T_NATIVE_UINT8;
    });
    f.close().unwrap();
    p
}
