//! A lossless JSON form of a [`VirtualDataset`], for scan caches and the partial scans of
//! sharded builds: everything the planner needs (metadata, manifests, skipped variables,
//! unlimited dimensions, provenance), so that planning from records gives the same output as
//! planning from fresh scans.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{
    ChunkRef, CoreError, Group, Provenance, SkippedVariable, VirtualArray, VirtualDataset,
};

/// Version of the record format; records of another version are refused.
pub const RECORD_VERSION: u64 = 1;

fn bad(what: impl Into<String>) -> CoreError {
    CoreError::Metadata(format!("scan record: {}", what.into()))
}

/// The record of a dataset.
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
            let n = m.len();
            let (mut ids, mut offsets, mut lengths, mut inline) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::new(),
            );
            let sources: Vec<&str> = m.sources().iter().map(|s| &**s).collect();
            for r in m.iter() {
                match r {
                    ChunkRef::Missing => {
                        ids.push(-1i64);
                        offsets.push(0u64);
                        lengths.push(0u64);
                    }
                    ChunkRef::Inline(bytes) => {
                        ids.push(-2);
                        offsets.push(inline.len() as u64);
                        lengths.push(bytes.len() as u64);
                        inline.push(Value::String(b64.encode(bytes)));
                    }
                    ChunkRef::Range {
                        source,
                        offset,
                        length,
                    } => {
                        let id = sources.iter().position(|s| *s == source).unwrap_or(0);
                        ids.push(id as i64);
                        offsets.push(offset);
                        lengths.push(length);
                    }
                }
            }
            let v = json!({
                "metadata": a.zarr_metadata(),
                "sources": sources,
                "ids": ids,
                "offsets": offsets,
                "lengths": lengths,
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

fn u64s(v: &Value, key: &str) -> Result<Vec<u64>, CoreError> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("no {key}")))?
        .iter()
        .map(|x| x.as_u64().ok_or_else(|| bad(format!("bad {key}"))))
        .collect()
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
    for (p, a) in v
        .get("arrays")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no arrays"))?
    {
        let mut array =
            VirtualArray::from_zarr_metadata(a.get("metadata").ok_or_else(|| bad("no metadata"))?)?;
        let sources: Vec<&str> = a
            .get("sources")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no sources"))?
            .iter()
            .map(|s| s.as_str().ok_or_else(|| bad("bad source")))
            .collect::<Result<_, _>>()?;
        let ids: Vec<i64> = a
            .get("ids")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no ids"))?
            .iter()
            .map(|x| x.as_i64().ok_or_else(|| bad("bad id")))
            .collect::<Result<_, _>>()?;
        let offsets = u64s(a, "offsets")?;
        let lengths = u64s(a, "lengths")?;
        let inline: Vec<Vec<u8>> = a
            .get("inline")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no inline"))?
            .iter()
            .map(|s| {
                s.as_str()
                    .and_then(|s| b64.decode(s).ok())
                    .ok_or_else(|| bad("bad inline chunk"))
            })
            .collect::<Result<_, _>>()?;
        let n = array.manifest.len();
        if ids.len() != n || offsets.len() != n || lengths.len() != n {
            return Err(bad(format!(
                "array {p}: {} chunk entries for {n} chunks",
                ids.len()
            )));
        }
        let sids: Vec<u32> = sources
            .iter()
            .map(|s| array.manifest.intern(s))
            .collect::<Result<_, _>>()?;
        for i in 0..n {
            match ids[i] {
                -1 => {}
                -2 => {
                    let bytes = inline
                        .get(offsets[i] as usize)
                        .ok_or_else(|| bad("inline index"))?;
                    array.manifest.set_inline(i, bytes.clone())?;
                }
                id => {
                    let sid = usize::try_from(id)
                        .ok()
                        .and_then(|k| sids.get(k))
                        .ok_or_else(|| bad("source id"))?;
                    array.manifest.set_range(i, *sid, offsets[i], lengths[i])?;
                }
            }
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
        rec["arrays"]["v"]["ids"] = json!([7, -1]);
        assert!(from_record(&rec).is_err());
        rec["arrays"]["v"]["ids"] = json!([-1]);
        assert!(from_record(&rec).is_err());
    }
}
