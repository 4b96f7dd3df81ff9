//! A lossless JSON form of a [`VirtualDataset`], for scan caches and the partial scans of
//! sharded builds: everything the planner needs (metadata, manifests, skipped variables,
//! unlimited dimensions, provenance), so that planning from records gives the same output as
//! planning from fresh scans.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{
    ChunkRef, CoreError, Group, Provenance, SkippedVariable, VirtualArray, VirtualDataset,
};

/// Version of the record format; records of another version are refused. Also raised when
/// the scanners' output changes for the same file (3: variable-length strings stored inline,
/// soft links followed, names Zarr does not allow mapped; 4: arrays and groups in the file's
/// order, attribute arrays nested as their dataspace, bool `_FillValue` kept, chunks longer
/// than an unfiltered dataset's first axis cut to it, compounds with variable-length string
/// members stored inline; 5: object references read as the paths of their targets; 6: DMR++ chunks in files beside
/// the granule read, their files recorded as companions), so that
/// cached and partial scans of an older vzarr are scanned
/// again rather than planned with a different result.
pub const RECORD_VERSION: u64 = 6;

fn bad(what: impl Into<String>) -> CoreError {
    CoreError::Metadata(format!("scan record: {}", what.into()))
}

/// The record of a dataset. Per array: its metadata, its sources, and its stored chunks only
/// (`refs`: `[position, source, offset, length]`; `inline`: `[position, base64]`), so a record
/// is as small as what is stored however large the grid.
pub fn to_record(ds: &VirtualDataset) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let groups: Map<String, Value> = ds
        .groups
        .iter()
        .map(|(p, g)| (p.clone(), Value::Object(g.attributes.clone())))
        .collect();
    let arrays: Map<String, Value> = ds
        .arrays
        .iter()
        .map(|(p, a)| {
            let m = &a.manifest;
            let sources: Vec<&str> = m.sources().iter().map(|s| &**s).collect();
            let ids: std::collections::HashMap<&str, usize> =
                sources.iter().enumerate().map(|(k, s)| (*s, k)).collect();
            let mut refs = Vec::new();
            let mut inline = Vec::new();
            for (i, r) in m.iter_stored() {
                match r {
                    ChunkRef::Missing => {}
                    ChunkRef::Inline(bytes) => inline.push(json!([i, b64.encode(bytes)])),
                    ChunkRef::Range {
                        source,
                        offset,
                        length,
                    } => refs.push(json!([i, ids[source], offset, length])),
                }
            }
            let v = json!({
                "metadata": a.zarr_metadata(),
                "sources": sources,
                "refs": refs,
                "inline": inline,
            });
            (p.clone(), v)
        })
        .collect();
    json!({
        "vzarr_scan_record": RECORD_VERSION,
        "provenance": ds.provenance,
        "unlimited_dims": ds.unlimited_dims,
        "skipped": ds.skipped,
        "groups": groups,
        "arrays": arrays,
    })
}

/// A dataset from its record.
pub fn from_record(v: &Value) -> Result<VirtualDataset, CoreError> {
    if v.get("vzarr_scan_record").and_then(Value::as_u64) != Some(RECORD_VERSION) {
        return Err(bad(format!("not a version {RECORD_VERSION} scan record")));
    }
    let mut ds = VirtualDataset::new();
    ds.provenance =
        serde_json::from_value::<Provenance>(v.get("provenance").cloned().unwrap_or_default())
            .map_err(|e| bad(format!("provenance: {e}")))?;
    ds.unlimited_dims =
        serde_json::from_value(v.get("unlimited_dims").cloned().unwrap_or(json!([])))
            .map_err(|e| bad(format!("unlimited_dims: {e}")))?;
    ds.skipped = serde_json::from_value::<Vec<SkippedVariable>>(
        v.get("skipped").cloned().unwrap_or(json!([])),
    )
    .map_err(|e| bad(format!("skipped: {e}")))?;
    ds.groups.clear();
    for (p, attrs) in v
        .get("groups")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no groups"))?
    {
        let attributes = attrs
            .as_object()
            .cloned()
            .ok_or_else(|| bad("group attributes"))?;
        ds.groups.insert(p.clone(), Group { attributes });
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let list = |a: &'_ Value, key: &str| -> Result<Vec<Value>, CoreError> {
        a.get(key)
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| bad(format!("no {key}")))
    };
    for (p, a) in v
        .get("arrays")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no arrays"))?
    {
        let mut array =
            VirtualArray::from_zarr_metadata(a.get("metadata").ok_or_else(|| bad("no metadata"))?)?;
        let sids: Vec<u32> = list(a, "sources")?
            .iter()
            .map(|s| {
                s.as_str()
                    .ok_or_else(|| bad("bad source"))
                    .and_then(|s| array.manifest.intern(s))
            })
            .collect::<Result<_, _>>()?;
        let index = |e: &Value| -> Result<usize, CoreError> {
            e.get(0)
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| bad(format!("array {p}: bad chunk position")))
        };
        for e in list(a, "refs")? {
            let num = |k: usize| e.get(k).and_then(Value::as_u64);
            let (Some(s), Some(offset), Some(length)) = (num(1), num(2), num(3)) else {
                return Err(bad(format!("array {p}: bad reference {e}")));
            };
            let sid = usize::try_from(s)
                .ok()
                .and_then(|k| sids.get(k))
                .ok_or_else(|| bad("source id"))?;
            array.manifest.set_range(index(&e)?, *sid, offset, length)?;
        }
        for e in list(a, "inline")? {
            let bytes = e
                .get(1)
                .and_then(Value::as_str)
                .and_then(|s| b64.decode(s).ok())
                .ok_or_else(|| bad("bad inline chunk"))?;
            array.manifest.set_inline(index(&e)?, bytes)?;
        }
        ds.arrays.insert(p.clone(), array);
    }
    ds.validate()?;
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkGrid, ChunkManifest, DataType, DimGrid, Endian, FillValue, SourceRecord};

    #[test]
    fn round_trips_everything() {
        let mut ds = VirtualDataset::new();
        ds.groups
            .get_mut("")
            .unwrap()
            .attributes
            .insert("b".into(), json!(1));
        ds.groups
            .get_mut("")
            .unwrap()
            .attributes
            .insert("a".into(), json!("x"));
        ds.groups.insert("g".into(), Group::default());
        let grid = ChunkGrid::new(vec![
            DimGrid::varying(vec![3, 2], 5).unwrap(),
            DimGrid::fixed(4, 4).unwrap(),
        ]);
        let mut m = ChunkManifest::new_missing(2);
        let s = m.intern("file:///x.nc").unwrap();
        m.set_range(0, s, 10, 48).unwrap();
        m.set_inline(1, vec![1, 2, 3]).unwrap();
        ds.arrays.insert(
            "g/v".into(),
            VirtualArray {
                data_type: DataType::Int16,
                endian: Endian::Big,
                fill_value: FillValue::from_i64(DataType::Int16, -1).unwrap(),
                codecs: vec![crate::Codec::Zlib { level: 1 }],
                dimension_names: vec!["t".into(), "x".into()],
                attributes: Default::default(),
                grid,
                manifest: m,
            },
        );
        ds.skipped.push(SkippedVariable {
            path: "s".into(),
            reason: "r".into(),
        });
        ds.unlimited_dims.insert("t".into());
        ds.provenance = Provenance::single(SourceRecord {
            url: "file:///x.nc".into(),
            size: 9,
            mtime_ns: Some(5),
            etag: None,
            fingerprint: None,
        });
        let rec = to_record(&ds);
        let back = from_record(&rec).unwrap();
        assert_eq!(back, ds);
        // Attribute order survives.
        let keys: Vec<&String> = back.groups[""].attributes.keys().collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(to_record(&back), rec);
    }

    #[test]
    fn refuses_other_versions_and_bad_entries() {
        assert!(from_record(&json!({"vzarr_scan_record": 99})).is_err());
        let mut ds = VirtualDataset::new();
        let grid = ChunkGrid::regular(&[2], &[1]).unwrap();
        ds.arrays.insert(
            "v".into(),
            VirtualArray {
                data_type: DataType::UInt8,
                endian: Endian::Little,
                fill_value: FillValue::zero(DataType::UInt8),
                codecs: vec![],
                dimension_names: vec!["d".into()],
                attributes: Default::default(),
                grid,
                manifest: ChunkManifest::new_missing(2),
            },
        );
        let mut rec = to_record(&ds);
        rec["arrays"]["v"]["sources"] = json!(["file:///x.nc"]);
        rec["arrays"]["v"]["refs"] = json!([[0, 7, 0, 1]]);
        assert!(from_record(&rec).is_err(), "unknown source");
        rec["arrays"]["v"]["refs"] = json!([[2, 0, 0, 1]]);
        assert!(from_record(&rec).is_err(), "position outside the grid");
        rec["arrays"]["v"]["refs"] = json!([[0, 0, u64::MAX, 2]]);
        assert!(from_record(&rec).is_err(), "overflow");
        rec["arrays"]["v"]["refs"] = json!([[1, 0, 10, 2]]);
        assert!(from_record(&rec).is_ok());
    }
}
