//! Dimension scales, phony dimensions and netCDF-4 files.

use std::path::{Path, PathBuf};

use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_I32LE};

use super::{id, le, tag};
use crate::generated::{Ver, create};
use crate::raw::{Lay, Space, attr, close_dataset, dataset, dimension_list, string_attr, unlink};

/// Dimension scales (classic and new-style references, partial lists, wrong ranks,
/// unreachable targets, the root group, other groups' scales, unlimited and dimension-only
/// scales) and phony dimensions.
pub(crate) fn dims(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("dims_{}.h5", tag(ver)));
    let f = create(&p, ver, |_| {});
    let root = id(&f);
    let scale = |loc: hid_t, name: &str, space: Space, netcdf_name: Option<&str>| {
        let n = match &space {
            Space::Simple(d, _) => d[0] as usize,
            _ => 1,
        };
        let lay = match &space {
            Space::Simple(_, Some(_)) => Lay::Chunked(vec![2]),
            _ => Lay::Contiguous,
        };
        let d = dataset(
            loc,
            name,
            *H5T_IEEE_F64LE,
            &space,
            &lay,
            &[],
            None,
            Some(&le(&vec![1.5f64; n], f64::to_le_bytes)),
        );
        string_attr(d, "CLASS", "DIMENSION_SCALE");
        string_attr(d, "NAME", netcdf_name.unwrap_or(name));
        d
    };
    let x = scale(root, "x", Space::dims(&[4]), None);
    let y = scale(root, "y", Space::dims(&[3]), None);
    let t = scale(
        root,
        "t",
        Space::Simple(vec![5], Some(vec![u64::MAX])),
        None,
    );
    let only = scale(
        root,
        "dimonly",
        Space::dims(&[6]),
        Some("This is a netCDF dimension but not a netCDF variable         6"),
    );
    let only_unlim = scale(
        root,
        "rec",
        Space::Simple(vec![2], Some(vec![u64::MAX])),
        Some("This is a netCDF dimension but not a netCDF variable         2"),
    );
    attr(
        x,
        "units",
        *H5T_STD_I32LE,
        &Space::Scalar,
        &1i32.to_le_bytes(),
    );
    for d in [x, y, t, only, only_unlim] {
        close_dataset(d);
    }
    let grid = f.create_group("grid").unwrap();
    let lat = scale(grid.id(), "lat", Space::dims(&[4]), None);
    close_dataset(lat);
    let arr = |loc: hid_t, name: &str, dims: &[u64]| {
        let n: u64 = dims.iter().product();
        dataset(
            loc,
            name,
            *H5T_IEEE_F32LE,
            &Space::dims(dims),
            &Lay::Contiguous,
            &[],
            None,
            Some(&vec![0u8; n as usize * 4]),
        )
    };
    for (name, classic) in [("v_classic", true), ("v_new", false)] {
        let d = arr(root, name, &[4, 3]);
        dimension_list(root, d, &[Some("/x"), Some("/y")], classic);
        close_dataset(d);
    }
    let d = arr(root, "partial", &[4, 3]);
    dimension_list(root, d, &[None, Some("/y")], true);
    close_dataset(d);
    let d = arr(root, "wrong_rank", &[4, 3]);
    dimension_list(root, d, &[Some("/x")], true);
    close_dataset(d);
    let d = arr(root, "to_root", &[4]);
    dimension_list(root, d, &[Some("/")], true);
    close_dataset(d);
    let d = arr(root, "cross_group", &[4, 5]);
    dimension_list(root, d, &[Some("/grid/lat"), Some("/t")], false);
    close_dataset(d);
    let d = arr(root, "gone_target", &[2]);
    let gone = arr(root, "gone", &[2]);
    close_dataset(gone);
    dimension_list(root, d, &[Some("/gone")], true);
    close_dataset(d);
    // A two-dimensional scale with a DIMENSION_LIST of its own.
    let d = arr(root, "scale2d", &[4, 3]);
    string_attr(d, "CLASS", "DIMENSION_SCALE");
    string_attr(d, "NAME", "scale2d");
    dimension_list(root, d, &[Some("/x"), None], true);
    close_dataset(d);
    // Phony dimensions: shared within a group by length, never twice in one array.
    for (name, shape) in [
        ("p_a", vec![3, 3]),
        ("p_b", vec![3, 7]),
        ("p_c", vec![7, 3, 3]),
        ("p_scalar", vec![]),
    ] {
        let d = if shape.is_empty() {
            dataset(
                root,
                name,
                *H5T_STD_I32LE,
                &Space::Scalar,
                &Lay::Contiguous,
                &[],
                None,
                Some(&[0; 4]),
            )
        } else {
            arr(root, name, &shape)
        };
        close_dataset(d);
    }
    for gname in ["g1", "g1/sub", "g2"] {
        let g = f.create_group(gname).unwrap();
        for (name, shape) in [("a", vec![3, 3]), ("b", vec![4, 7])] {
            close_dataset(arr(g.id(), name, &shape));
        }
        // A scale of the root group seen from a subgroup.
        let d = arr(g.id(), "uses_x", &[4, 4]);
        dimension_list(root, d, &[Some("/x"), Some("/x")], true);
        close_dataset(d);
    }
    drop(grid);
    // Last, so that no later object takes its place: the reference now points at an object
    // no link reaches.
    unlink(root, "gone");
    f.close().unwrap();
    p
}

/// A netCDF-4 file (or netCDF-4 classic model) through netCDF-C: groups using their
/// parents' dimensions, unlimited dimensions in any position, dimensions without variables,
/// every attribute type, fill values of every type.
pub(crate) fn netcdf4(dir: &Path, classic: bool) -> PathBuf {
    use netcdf::AttributeValue as A;
    let p = dir.join(if classic {
        "nc4_classic_model.nc"
    } else {
        "nc4_extra.nc"
    });
    let mut f = if classic {
        netcdf::create_with(&p, netcdf::Options::NETCDF4 | netcdf::Options::CLASSIC).unwrap()
    } else {
        netcdf::create(&p).unwrap()
    };
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 4).unwrap();
    f.add_dimension("y", 3).unwrap();
    f.add_dimension("z", 3).unwrap();
    f.add_dimension("unused", 7).unwrap();
    let mut attrs: Vec<(&str, A)> = vec![
        ("schar", A::Schar(-3)),
        ("schars", A::Schars(vec![-1, 2])),
        ("short", A::Short(-300)),
        ("int", A::Int(7)),
        ("ints", A::Ints(vec![1, 2, 3])),
        ("float", A::Float(0.1)),
        ("float_nan", A::Float(f32::NAN)),
        ("double", A::Double(1e300)),
        ("doubles", A::Doubles(vec![0.5, -0.25])),
        ("text", A::Str("hello".into())),
    ];
    if !classic {
        attrs.extend([
            ("uchar", A::Uchar(200)),
            ("ushorts", A::Ushorts(vec![1, 65535])),
            ("uint", A::Uint(u32::MAX)),
            ("longlong", A::Longlong(i64::MIN)),
            ("ulonglongs", A::Ulonglongs(vec![0, u64::MAX])),
            ("strs", A::Strs(vec!["a".into(), "".into(), "ccc".into()])),
        ]);
    }
    for (name, v) in &attrs {
        f.add_attribute(name, v.clone()).unwrap();
    }
    // Definitions first: the classic model writes data only out of define mode.
    {
        let mut v = f.add_variable::<f64>("time", &["time"]).unwrap();
        v.put_attribute("units", "days since 2000-01-01").unwrap();
    }
    f.add_variable::<f32>("v", &["time", "x"])
        .unwrap()
        .set_fill_value(-1.0f32)
        .unwrap();
    f.add_variable::<i16>("w", &["x", "time"])
        .unwrap()
        .set_compression(3, true)
        .unwrap();
    {
        let mut v = f.add_variable::<i8>("yz", &["y", "z"]).unwrap();
        v.set_fill_value(-7i8).unwrap();
        for (name, a) in &attrs {
            v.put_attribute(name, a.clone()).unwrap();
        }
    }
    if !classic {
        f.add_unlimited_dimension("rec").unwrap();
        f.add_variable::<f64>("rec_var", &["rec"]).unwrap();
        let mut v = f.add_variable::<u64>("u64_fill", &["x"]).unwrap();
        v.set_fill_value(u64::MAX).unwrap();
        let mut v = f.add_variable::<i64>("i64_be", &["y"]).unwrap();
        v.set_endianness(netcdf::Endianness::Big).unwrap();
        v.set_fill_value(-2i64).unwrap();
        let mut g = f.add_group("g").unwrap();
        g.add_dimension("gx", 2).unwrap();
        g.add_attribute("group_attr", "in g").unwrap();
        let mut v = g.add_variable::<u8>("gv", &["x", "gx"]).unwrap();
        v.set_fill_value(9u8).unwrap();
        v.put_values(&[1u8; 8], ..).unwrap();
        let mut sub = g.add_group("sub").unwrap();
        sub.add_dimension("x", 5).unwrap();
        let mut v = sub.add_variable::<f32>("shadow", &["x", "y"]).unwrap();
        v.put_values(&[0.5f32; 15], ..).unwrap();
        let mut v = sub.add_variable::<f32>("x", &["x"]).unwrap();
        v.put_values(&[0.0f32, 1.0, 2.0, 3.0, 4.0], ..).unwrap();
    } else {
        f.enddef().unwrap();
    }
    let put = |name: &str, f: &mut netcdf::FileMut, w: &dyn Fn(&mut netcdf::VariableMut)| {
        w(&mut f.variable_mut(name).unwrap());
    };
    put("time", &mut f, &|v| {
        v.put_values(&[0.0f64, 1.0, 2.0], (0..3,)).unwrap()
    });
    put("v", &mut f, &|v| {
        v.put_values(&[1.0f32; 8], (0..2, ..)).unwrap()
    });
    put("w", &mut f, &|v| {
        v.put_values(&[2i16; 12], (.., 0..3)).unwrap()
    });
    if !classic {
        put("rec_var", &mut f, &|v| {
            v.put_values(&[4.0f64], (0..1,)).unwrap()
        });
        put("i64_be", &mut f, &|v| {
            v.put_values(&[1i64, 2, 3], ..).unwrap()
        });
    }
    drop(f);
    p
}
