//! Read throughput through the manifest (vzarr-read) against the netCDF library reading the
//! same variable, in the same run; prints the figures, asserts only that the values agree.
//!
//! ```sh
//! cargo bench -p vzarr-verify --bench throughput
//! ```

#[path = "../tests/verify/common.rs"]
mod common;

use std::path::Path;
use std::time::Instant;

use common::*;
use ndarray::{ArrayD, IxDyn};

struct Case {
    label: &'static str,
    file: &'static str,
    options: fn() -> netcdf::Options,
    chunk: Option<[usize; 3]>,
    deflate: bool,
}

fn write(path: &Path, c: &Case, shape: [usize; 3]) {
    let mut f = netcdf::create_with(path, (c.options)()).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", shape[1]).unwrap();
    f.add_dimension("lon", shape[2]).unwrap();
    {
        let mut v = f
            .add_variable::<f32>("tas", &["time", "lat", "lon"])
            .unwrap();
        if let Some(ch) = c.chunk {
            v.set_chunking(&ch).unwrap();
        }
        if c.deflate {
            v.set_compression(1, true).unwrap();
        }
    }
    if c.chunk.is_none() {
        f.enddef().unwrap(); // classic formats leave define mode explicitly
    }
    let mut v = f.variable_mut("tas").unwrap();
    // Smooth fields with some noise, written a day at a time.
    for t in 0..shape[0] {
        let day = ArrayD::from_shape_fn(IxDyn(&[1, shape[1], shape[2]]), |i| {
            let (y, x) = (i[1] as f32, i[2] as f32);
            250.0
                + 30.0 * (y / 30.0).sin() * (x / 45.0 + t as f32 / 50.0).cos()
                + ((i[1] * 7 + i[2] * 13 + t) % 17) as f32 * 0.01
        });
        v.put(day.view(), [t..t + 1, 0..shape[1], 0..shape[2]])
            .unwrap();
    }
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..n {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.expect("n >= 1"))
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [365, 180, 360];
    let mb = (shape.iter().product::<usize>() * 4) as f64 / 1e6;
    let cases = [
        Case {
            label: "NetCDF4, chunks 1x180x360, shuffle+deflate(1)",
            file: "deflate.nc",
            options: || netcdf::Options::NETCDF4,
            chunk: Some([1, 180, 360]),
            deflate: true,
        },
        Case {
            label: "NetCDF4, chunks 30x180x360, uncompressed",
            file: "raw.nc",
            options: || netcdf::Options::NETCDF4,
            chunk: Some([30, 180, 360]),
            deflate: false,
        },
        Case {
            label: "NetCDF3 64-bit offset, record variable",
            file: "nc3.nc",
            options: || netcdf::Options::_64BIT_OFFSET,
            chunk: None,
            deflate: false,
        },
    ];
    println!("\nvariable tas float32 {shape:?} = {mb:.1} MB, best of 3 (warm page cache)");
    for c in &cases {
        let src = dir.path().join(c.file);
        write(&src, c, shape);
        let out = dir.path().join(format!("{}.json", c.file));
        build(&src, &out, None);
        let reader = open(&out);
        // Raw native-endian values on both sides (no conversion into typed arrays).
        let (t_manifest, a) = best_of(3, || {
            reader.array("tas").unwrap().read_all_raw().unwrap().bytes
        });
        let nc = netcdf::open(&src).unwrap();
        let (t_netcdf, b) = best_of(3, || {
            nc.variable("tas").unwrap().get_raw_values(..).unwrap()
        });
        assert!(a == b, "{}: values differ", c.label);
        let chunks = reader.dataset().arrays["tas"].manifest.len();
        println!(
            "{:<48} {chunks:>4} chunks  manifest {:>7.1} MB/s  netCDF-C {:>7.1} MB/s  ratio {:.2}",
            c.label,
            mb / t_manifest,
            mb / t_netcdf,
            t_netcdf / t_manifest
        );
    }
}
