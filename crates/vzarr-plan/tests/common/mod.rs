//! Synthetic per-file datasets for planner tests and benches: a monthly archive of daily data
//! whose time coordinate is kept inline (no I/O needed) and whose data variables point at
//! made-up byte ranges of made-up files.
#![allow(dead_code)]

use serde_json::json;
use vzarr_core::{
    ChunkGrid, ChunkManifest, Codec, DataType, DimGrid, Endian, FillValue, Provenance,
    SourceRecord, VirtualArray, VirtualDataset,
};
pub(crate) use vzarr_source::MemStore as MemReader;

/// Days of month `m` (1-12) of a non-leap year.
pub(crate) fn days(m: usize) -> u64 {
    [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(m - 1) % 12]
}

/// One file: `nt` daily steps starting `day0` days after 2000-01-01 (time values written in
/// the file's own units `days since 2000-01-01 + day0`), `nvars` data variables (time, 4, 5)
/// with time chunks of `chunk_t`, codecs `codecs`.
pub(crate) fn month_file(
    url: &str,
    day0: u64,
    nt: u64,
    chunk_t: u64,
    nvars: usize,
    codecs: &[Codec],
) -> VirtualDataset {
    let mut ds = VirtualDataset::new();
    // Time coordinate: inline values 0.5, 1.5, ... in "days since <month start>".
    let tgrid = ChunkGrid::regular(&[nt], &[nt.max(1)]).unwrap();
    let mut tman = ChunkManifest::new_missing(tgrid.n_chunks().unwrap() as usize);
    if nt > 0 {
        let raw: Vec<u8> = (0..nt)
            .flat_map(|i| (i as f64 + 0.5).to_le_bytes())
            .collect();
        tman.set_inline(0, raw).unwrap();
    }
    let mut tattrs = serde_json::Map::new();
    tattrs.insert(
        "units".into(),
        json!(format!("days since 2000-01-01 00:00:00 +{day0}d")),
    );
    let (y, m, d) = civil(day0);
    tattrs.insert(
        "units".into(),
        json!(format!("days since {y:04}-{m:02}-{d:02}")),
    );
    tattrs.insert("calendar".into(), json!("noleap"));
    ds.arrays.insert(
        "time".into(),
        VirtualArray {
            data_type: DataType::Float64,
            endian: Endian::Little,
            fill_value: FillValue::from_f64(DataType::Float64, f64::NAN).unwrap(),
            codecs: vec![],
            dimension_names: vec!["time".into()],
            attributes: tattrs,
            grid: tgrid,
            manifest: tman,
        },
    );
    for v in 0..nvars {
        let grid = ChunkGrid::new(vec![
            DimGrid::fixed(chunk_t, nt).unwrap(),
            DimGrid::fixed(4, 4).unwrap(),
            DimGrid::fixed(5, 5).unwrap(),
        ]);
        let n = grid.n_chunks().unwrap() as usize;
        let mut man = ChunkManifest::new_missing(n);
        let sid = man.intern(url).unwrap();
        for i in 0..n {
            man.set_range(
                i,
                sid,
                4096 + (v * 1000 + i) as u64 * 80 * chunk_t,
                80 * chunk_t,
            )
            .unwrap();
        }
        let mut attrs = serde_json::Map::new();
        attrs.insert("units".into(), json!("K"));
        ds.arrays.insert(
            format!("var{v}"),
            VirtualArray {
                data_type: DataType::Float32,
                endian: Endian::Little,
                fill_value: FillValue::from_f64(DataType::Float32, 1e20).unwrap(),
                codecs: codecs.to_vec(),
                dimension_names: vec!["time".into(), "y".into(), "x".into()],
                attributes: attrs,
                grid,
                manifest: man,
            },
        );
    }
    ds.unlimited_dims.insert("time".into());
    ds.provenance = Provenance::single(SourceRecord {
        url: url.into(),
        size: 1 << 20,
        mtime_ns: Some(1),
        etag: None,
        fingerprint: None,
    });
    ds
}

/// (year, month, day) of `day` days after 2000-01-01 in the noleap calendar.
pub(crate) fn civil(day: u64) -> (u64, u64, u64) {
    let y = 2000 + day / 365;
    let mut r = day % 365;
    let mut m = 1;
    while r >= days(m as usize) {
        r -= days(m as usize);
        m += 1;
    }
    (y, m, r + 1)
}

/// `n` monthly files of a noleap archive, in time order.
pub(crate) fn archive(
    n: usize,
    chunk_t: u64,
    nvars: usize,
    codecs: &[Codec],
) -> Vec<VirtualDataset> {
    let mut out = Vec::with_capacity(n);
    let mut day0 = 0;
    for k in 0..n {
        let nt = days(k % 12 + 1);
        out.push(month_file(
            &format!("file:///archive/f{k:05}.nc"),
            day0,
            nt,
            chunk_t,
            nvars,
            codecs,
        ));
        day0 += nt;
    }
    out
}
