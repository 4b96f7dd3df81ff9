//! libhdf5 calls that hdf5-metno's API does not offer: datasets of any datatype, dataspace,
//! layout and filter pipeline; attributes of any type (null dataspaces included); direct
//! chunk writes with a filter mask; `DIMENSION_LIST` attributes of classic and new-style
//! object references; reading a dataset's stored bytes. Every call runs under the library
//! lock.

use std::ffi::{CString, c_void};
use std::path::Path;
use std::ptr;

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5a::{H5Aclose, H5Acreate2, H5Awrite};
use hdf5_sys::h5d::{
    H5D_layout_t, H5Dclose, H5Dcreate2, H5Dget_type, H5Dopen2, H5Dread, H5Dset_extent, H5Dwrite,
    H5Dwrite_chunk,
};
use hdf5_sys::h5f::{H5F_ACC_RDONLY, H5Fclose, H5Fopen};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5P_CLS_DATASET_CREATE, H5P_DEFAULT, H5Pclose, H5Pcreate, H5Pset_chunk, H5Pset_deflate,
    H5Pset_fill_value, H5Pset_fletcher32, H5Pset_layout, H5Pset_shuffle,
};
use hdf5_sys::h5r::{H5R_ref_t, H5R_type_t, H5Rcreate, H5Rcreate_object, H5Rdestroy};
use hdf5_sys::h5s::{H5S_ALL, H5S_class_t, H5Sclose, H5Screate, H5Screate_simple};
use hdf5_sys::h5t::{
    H5T_C_S1, H5T_STD_REF, H5T_STD_REF_OBJ, H5T_str_t, H5Tclose, H5Tcopy, H5Tset_size,
    H5Tset_strpad, H5Tvlen_create,
};
use vzarr_core::{ChunkRef, VirtualArray};

fn check(r: i64, what: &str) {
    assert!(r >= 0, "libhdf5 call failed: {what}");
}

/// A dataspace to create.
#[derive(Clone, Debug)]
pub(crate) enum Space {
    /// No elements.
    Null,
    /// One element, rank 0.
    Scalar,
    /// Current and (optionally) maximum dimensions (`u64::MAX`: unlimited).
    Simple(Vec<u64>, Option<Vec<u64>>),
}

impl Space {
    /// A simple dataspace of fixed size.
    pub(crate) fn dims(d: &[u64]) -> Space {
        Space::Simple(d.to_vec(), None)
    }

    fn create(&self) -> hid_t {
        // SAFETY: creates a dataspace from the given dimensions; under the library lock.
        hdf5::sync::sync(|| unsafe {
            match self {
                Space::Null => H5Screate(H5S_class_t::H5S_NULL),
                Space::Scalar => H5Screate(H5S_class_t::H5S_SCALAR),
                Space::Simple(d, m) => H5Screate_simple(
                    d.len() as i32,
                    d.as_ptr(),
                    m.as_ref().map_or(ptr::null(), |m| m.as_ptr()),
                ),
            }
        })
    }
}

/// A filter of a dataset's pipeline.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Flt {
    Shuffle,
    Deflate(u32),
    Fletcher32,
}

/// A storage layout.
#[derive(Clone, Debug)]
pub(crate) enum Lay {
    Contiguous,
    Compact,
    Chunked(Vec<u64>),
}

/// A copy of a predefined datatype (`*H5T_STD_I16BE`, ...), owned by the caller.
pub(crate) fn copy_type(t: hid_t) -> hid_t {
    // SAFETY: copies a library type; under the library lock.
    hdf5::sync::sync(|| unsafe { H5Tcopy(t) })
}

/// A fixed-length string type of `size` bytes with padding `pad`, owned by the caller.
pub(crate) fn fixed_string(size: usize, pad: H5T_str_t) -> hid_t {
    // SAFETY: copies and modifies a new type; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let t = H5Tcopy(*H5T_C_S1);
        H5Tset_size(t, size);
        H5Tset_strpad(t, pad);
        t
    })
}

/// Closes a datatype the caller owns.
pub(crate) fn close_type(t: hid_t) {
    // SAFETY: `t` is a type id the caller owns; under the library lock.
    hdf5::sync::sync(|| unsafe {
        H5Tclose(t);
    });
}

/// Creates the dataset `name` in `loc` of type `ty`, writes `data` (stored bytes of every
/// element) when given, and returns its id (close with [`close_dataset`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn dataset(
    loc: hid_t,
    name: &str,
    ty: hid_t,
    space: &Space,
    layout: &Lay,
    filters: &[Flt],
    fill: Option<&[u8]>,
    data: Option<&[u8]>,
) -> hid_t {
    let cname = CString::new(name).unwrap();
    let s = space.create();
    check(s, "dataspace");
    // SAFETY: property list, dataset and dataspace ids created and closed here; `fill` holds
    // one element of `ty` and `data` every element of the dataspace; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        match layout {
            Lay::Contiguous => check(
                i64::from(H5Pset_layout(dcpl, H5D_layout_t::H5D_CONTIGUOUS)),
                "layout",
            ),
            Lay::Compact => check(
                i64::from(H5Pset_layout(dcpl, H5D_layout_t::H5D_COMPACT)),
                "layout",
            ),
            Lay::Chunked(c) => check(
                i64::from(H5Pset_chunk(dcpl, c.len() as i32, c.as_ptr())),
                "chunk",
            ),
        }
        for f in filters {
            let r = match f {
                Flt::Shuffle => H5Pset_shuffle(dcpl),
                Flt::Deflate(l) => H5Pset_deflate(dcpl, *l),
                Flt::Fletcher32 => H5Pset_fletcher32(dcpl),
            };
            check(i64::from(r), "filter");
        }
        if let Some(v) = fill {
            check(
                i64::from(H5Pset_fill_value(dcpl, ty, v.as_ptr().cast())),
                "fill value",
            );
        }
        let d = H5Dcreate2(loc, cname.as_ptr(), ty, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        check(d, name);
        if let Some(bytes) = data {
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
        }
        H5Pclose(dcpl);
        H5Sclose(s);
        d
    })
}

/// Closes a dataset id.
pub(crate) fn close_dataset(d: hid_t) {
    // SAFETY: `d` is a dataset id the caller owns; under the library lock.
    hdf5::sync::sync(|| unsafe {
        H5Dclose(d);
    });
}

/// Changes a dataset's extent.
pub(crate) fn set_extent(d: hid_t, dims: &[u64]) {
    // SAFETY: `dims` has one entry per axis of the dataset; under the library lock.
    check(
        i64::from(hdf5::sync::sync(|| unsafe {
            H5Dset_extent(d, dims.as_ptr())
        })),
        "H5Dset_extent",
    );
}

/// Writes one chunk's stored bytes, with a filter mask, at the chunk's logical `offset`.
pub(crate) fn write_chunk(d: hid_t, offset: &[u64], mask: u32, bytes: &[u8]) {
    let off: Vec<hsize_t> = offset.to_vec();
    // SAFETY: `off` has one entry per axis and `bytes` is the chunk as stored; under the
    // library lock.
    let r = hdf5::sync::sync(|| unsafe {
        H5Dwrite_chunk(
            d,
            H5P_DEFAULT,
            mask,
            off.as_ptr(),
            bytes.len(),
            bytes.as_ptr().cast(),
        )
    });
    check(i64::from(r), "H5Dwrite_chunk");
}

/// Creates the attribute `name` of `loc` with type `ty`, writing `data` (every element as
/// stored; nothing for a null dataspace).
pub(crate) fn attr(loc: hid_t, name: &str, ty: hid_t, space: &Space, data: &[u8]) {
    let cname = CString::new(name).unwrap();
    let s = space.create();
    check(s, "dataspace");
    // SAFETY: ids created and closed here; `data` holds every element of the dataspace in
    // `ty`; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let a = H5Acreate2(loc, cname.as_ptr(), ty, s, H5P_DEFAULT, H5P_DEFAULT);
        check(a, name);
        if !matches!(space, Space::Null) {
            check(i64::from(H5Awrite(a, ty, data.as_ptr().cast())), name);
        }
        H5Aclose(a);
        H5Sclose(s);
    });
}

/// A fixed-length, NUL-terminated string attribute (the form netCDF-C and the dimension
/// scale API write `CLASS` and `NAME` in).
pub(crate) fn string_attr(loc: hid_t, name: &str, value: &str) {
    let mut bytes = value.as_bytes().to_vec();
    bytes.push(0);
    let t = fixed_string(bytes.len(), H5T_str_t::H5T_STR_NULLTERM);
    attr(loc, name, t, &Space::Scalar, &bytes);
    close_type(t);
}

#[repr(C)]
struct Hvl {
    len: usize,
    p: *mut c_void,
}

/// Writes a `DIMENSION_LIST` on `ds` whose axes reference the objects at `targets` (`None`:
/// an empty list), as classic (`H5T_STD_REF_OBJ`) or HDF5 1.12 (`H5T_STD_REF`) object
/// references.
pub(crate) fn dimension_list(file: hid_t, ds: hid_t, targets: &[Option<&str>], classic: bool) {
    let names: Vec<Option<CString>> = targets
        .iter()
        .map(|t| t.map(|t| CString::new(t).unwrap()))
        .collect();
    let n = targets.len();
    // SAFETY: references are created into buffers of their size and destroyed once; the
    // vlen buffers point at them while the attribute is written; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let mut old: Vec<u64> = vec![0; n];
        let mut new: Vec<H5R_ref_t> = vec![std::mem::zeroed(); n];
        for (i, name) in names.iter().enumerate() {
            let Some(name) = name else { continue };
            let r = if classic {
                H5Rcreate(
                    (&mut old[i] as *mut u64).cast(),
                    file,
                    name.as_ptr(),
                    H5R_type_t::H5R_OBJECT1,
                    -1,
                )
            } else {
                H5Rcreate_object(file, name.as_ptr(), H5P_DEFAULT, &mut new[i])
            };
            check(i64::from(r), "reference");
        }
        let hvl: Vec<Hvl> = (0..n)
            .map(|i| Hvl {
                len: usize::from(names[i].is_some()),
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
        let t = H5Tvlen_create(base);
        let dims = [n as u64];
        let s = H5Screate_simple(1, dims.as_ptr(), ptr::null());
        let a = H5Acreate2(
            ds,
            c"DIMENSION_LIST".as_ptr(),
            t,
            s,
            H5P_DEFAULT,
            H5P_DEFAULT,
        );
        check(a, "DIMENSION_LIST");
        check(
            i64::from(H5Awrite(a, t, hvl.as_ptr().cast())),
            "DIMENSION_LIST",
        );
        H5Aclose(a);
        H5Sclose(s);
        H5Tclose(t);
        if !classic {
            for (i, name) in names.iter().enumerate() {
                if name.is_some() {
                    H5Rdestroy(&mut new[i]);
                }
            }
        }
    });
}

/// Every element of the dataset `name` of the file at `path`, as stored (read with its own
/// file type: no conversion).
pub(crate) fn read_stored(path: &Path, name: &str, nbytes: usize) -> Vec<u8> {
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let n = CString::new(name).unwrap();
    let mut buf = vec![0u8; nbytes.max(1)];
    // SAFETY: ids opened and closed here; `buf` holds every element of the dataset in its
    // file type (the caller gives the size); under the library lock.
    hdf5::sync::sync(|| unsafe {
        let f = H5Fopen(p.as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        check(f, "H5Fopen");
        let d = H5Dopen2(f, n.as_ptr(), H5P_DEFAULT);
        check(d, "H5Dopen2");
        let t = H5Dget_type(d);
        check(
            i64::from(H5Dread(
                d,
                t,
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                buf.as_mut_ptr().cast(),
            )),
            "H5Dread",
        );
        H5Tclose(t);
        H5Dclose(d);
        H5Fclose(f);
    });
    buf.truncate(nbytes);
    buf
}

/// Checks that every chunk the native manifest of the unfiltered array `name` references
/// holds, in its part inside the array, the values libhdf5 reads at the chunk's position.
/// Returns the number of chunks checked.
pub(crate) fn check_chunk_positions(path: &Path, name: &str, array: &VirtualArray) -> usize {
    assert!(array.codecs.is_empty(), "{name}: only unfiltered arrays");
    let es = array.data_type.size();
    let shape = array.shape();
    let n: u64 = shape.iter().product();
    let values = read_stored(path, name, n as usize * es);
    let data = std::fs::read(path).unwrap();
    let mut checked = 0;
    for i in 0..array.manifest.len() {
        let ChunkRef::Range { offset, length, .. } = array.manifest.get(i) else {
            continue;
        };
        let idx = array.grid.chunk_index(i as u64);
        let origin = array.grid.chunk_origin(&idx);
        let cshape = array.grid.chunk_shape(&idx);
        let stored = &data[offset as usize..(offset + length) as usize];
        let per: u64 = cshape.iter().product();
        let mut pos = vec![0u64; cshape.len()];
        for k in 0..per as usize {
            let at: Vec<u64> = origin.iter().zip(&pos).map(|(o, p)| o + p).collect();
            if at.iter().zip(&shape).all(|(a, s)| a < s) {
                let lin = at.iter().zip(&shape).fold(0u64, |a, (p, d)| a * d + p) as usize;
                assert_eq!(
                    &stored[k * es..(k + 1) * es],
                    &values[lin * es..(lin + 1) * es],
                    "{}: {name}: element {at:?} of chunk {idx:?}",
                    path.display()
                );
            }
            for d in (0..pos.len()).rev() {
                pos[d] += 1;
                if pos[d] < cshape[d] {
                    break;
                }
                pos[d] = 0;
            }
        }
        checked += 1;
    }
    checked
}

/// `H5T_IEEE_F16LE` and `H5T_IEEE_F16BE`, new in HDF5 1.14.4; hdf5-metno-sys 0.12.5 does not
/// declare them.
mod f16_globals {
    use hdf5_sys::h5i::hid_t;
    unsafe extern "C" {
        pub(crate) static H5T_IEEE_F16LE_g: hid_t;
        pub(crate) static H5T_IEEE_F16BE_g: hid_t;
    }
}

/// A copy of IEEE half precision in the given byte order, owned by the caller.
pub(crate) fn float16(big_endian: bool) -> hid_t {
    // SAFETY: the library is initialised before its globals are read; under the library lock.
    hdf5::sync::sync(|| unsafe {
        hdf5_sys::h5::H5open();
        H5Tcopy(if big_endian {
            f16_globals::H5T_IEEE_F16BE_g
        } else {
            f16_globals::H5T_IEEE_F16LE_g
        })
    })
}

/// An enum type on `base` with the given members, owned by the caller.
pub(crate) fn enum_type(base: hid_t, members: &[(&str, &[u8])]) -> hid_t {
    // SAFETY: each value holds one element of `base`; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let t = hdf5_sys::h5t::H5Tenum_create(base);
        for (name, value) in members {
            let n = CString::new(*name).unwrap();
            check(
                i64::from(hdf5_sys::h5t::H5Tenum_insert(
                    t,
                    n.as_ptr(),
                    value.as_ptr().cast(),
                )),
                "enum member",
            );
        }
        t
    })
}

/// A compound type of one 4-byte little-endian integer member, owned by the caller.
pub(crate) fn compound_type() -> hid_t {
    // SAFETY: a new type; under the library lock.
    hdf5::sync::sync(|| unsafe {
        let t = hdf5_sys::h5t::H5Tcreate(hdf5_sys::h5t::H5T_class_t::H5T_COMPOUND, 4);
        let n = CString::new("a").unwrap();
        hdf5_sys::h5t::H5Tinsert(t, n.as_ptr(), 0, *hdf5_sys::h5t::H5T_STD_I32LE);
        t
    })
}

/// A variable-length string attribute (UTF-8).
pub(crate) fn vlen_string_attr(loc: hid_t, name: &str, space: &Space, values: &[&str]) {
    let owned: Vec<CString> = values.iter().map(|v| CString::new(*v).unwrap()).collect();
    let ptrs: Vec<*const std::ffi::c_char> = owned.iter().map(|c| c.as_ptr()).collect();
    // SAFETY: a new type; under the library lock.
    let t = hdf5::sync::sync(|| unsafe {
        let t = H5Tcopy(*H5T_C_S1);
        H5Tset_size(t, usize::MAX);
        hdf5_sys::h5t::H5Tset_cset(t, hdf5_sys::h5t::H5T_cset_t::H5T_CSET_UTF8);
        t
    });
    // SAFETY: the bytes of the pointer array, which outlives the write.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            ptrs.as_ptr().cast::<u8>(),
            ptrs.len() * std::mem::size_of::<*const u8>(),
        )
    };
    attr(loc, name, t, space, bytes);
    close_type(t);
}

/// Deletes the link `name` of `loc` (the object stays in the file, unreachable).
pub(crate) fn unlink(loc: hid_t, name: &str) {
    let n = CString::new(name).unwrap();
    // SAFETY: a NUL-terminated name; under the library lock.
    let r = hdf5::sync::sync(|| unsafe { hdf5_sys::h5l::H5Ldelete(loc, n.as_ptr(), H5P_DEFAULT) });
    check(i64::from(r), "H5Ldelete");
}
