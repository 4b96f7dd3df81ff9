//! Zarr v2 metadata in kerchunk references, translated once into the Zarr v3 documents the
//! rest of the reader (and vzarr's model) understands.
//!
//! kerchunk writes Zarr v2 hierarchies (kerchunk specification,
//! <https://fsspec.github.io/kerchunk/spec.html>): `.zgroup`, `.zattrs`, `<array>/.zarray`,
//! `<array>/.zattrs` with `_ARRAY_DIMENSIONS`, optionally everything again in a consolidated
//! `.zmetadata`, and chunk keys `<array>/<i>.<j>` (or `<i>/<j>` with
//! `"dimension_separator": "/"`). The `.zarray` fields are those of the Zarr v2 specification
//! (<https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>): `shape`, `chunks`, `dtype` (a
//! numpy type string with its byte order), `compressor` and `filters` (numcodecs
//! configurations: decoding applies the compressor, then the filters last to first), `fill_value`
//! (`null`, a number, `"NaN"`, `"Infinity"`, `"-Infinity"`, base64 for byte strings) and `order`.
//!
//! The translation: numcodecs codecs to the codecs vzarr writes (`zlib` to `numcodecs.zlib`,
//! `shuffle` to `numcodecs.shuffle`, `blosc`, `zstd`, `fletcher32`, `bz2`), the type string to a
//! Zarr v3 data type and the `bytes` codec's endianness, `_ARRAY_DIMENSIONS` to
//! `dimension_names`, and the fill value to both `fill_value` and the `_FillValue` attribute in
//! the form xarray's Zarr v3 backend decodes (xarray masks a v2 array's `fill_value`; a v3
//! array's only through that attribute). Arrays that are valid Zarr v2 but have no counterpart
//! in vzarr's model (Fortran order, codecs without a Zarr v3 counterpart vzarr reads, datetime
//! or object types) are [`V2Error::Unsupported`]: the caller leaves them out with the reason.

use serde_json::{Map, Value, json};
use vzarr_core::{BloscShuffle, Codec, DataType, Endian, FillValue, StructField};

/// Why a Zarr v2 array was not translated.
#[derive(Debug)]
pub(super) enum V2Error {
    /// The metadata breaks the Zarr v2 specification.
    Malformed(String),
    /// Valid, but not representable in vzarr's model: the array is left out with this reason.
    Unsupported(String),
}

fn malformed(s: impl Into<String>) -> V2Error {
    V2Error::Malformed(s.into())
}

fn unsupported(s: impl Into<String>) -> V2Error {
    V2Error::Unsupported(s.into())
}

/// A translated array: its Zarr v3 document and how its chunk keys separate indices.
pub(super) struct V2Array {
    /// The Zarr v3 `zarr.json` document.
    pub(super) doc: Value,
    /// `.` (the default) or `/`.
    pub(super) separator: char,
    /// Rank.
    pub(super) ndim: usize,
}

/// Most fields of a structured type read here.
const MAX_FIELDS: usize = 4096;

/// A numpy type string (`<f4`, `>i2`, `|u1`, `|b1`, `|S12`, `<c16`, `|O`) as a data type and
/// byte order; `object` is `|O` (only variable-length UTF-8 text is supported, and only
/// where the filters say so).
fn parse_typestr(s: &str, object_utf8: bool) -> Result<(DataType, Endian), V2Error> {
    let bad = || malformed(format!("dtype {s:?} is not a numpy type string"));
    let mut chars = s.chars();
    let order = chars.next().ok_or_else(bad)?;
    let rest = chars.as_str();
    let endian = match order {
        '<' | '|' | '=' => Endian::Little,
        '>' => Endian::Big,
        _ => return Err(bad()),
    };
    let kind = rest.chars().next().ok_or_else(bad)?;
    let size_text = &rest[kind.len_utf8()..];
    if kind == 'O' {
        if !size_text.is_empty() && size_text != "8" {
            return Err(bad());
        }
        if object_utf8 {
            return Ok((DataType::String, Endian::Little));
        }
        return Err(unsupported(format!(
            "dtype {s:?}: object arrays other than variable-length UTF-8 text (the vlen-utf8 filter) have no Zarr v3 counterpart here"
        )));
    }
    if matches!(kind, 'M' | 'm') {
        return Err(unsupported(format!(
            "dtype {s:?}: numpy datetime and timedelta types have no Zarr v3 data type vzarr writes"
        )));
    }
    if size_text.is_empty() || !size_text.bytes().all(|b| b.is_ascii_digit()) || size_text.len() > 9
    {
        return Err(bad());
    }
    let size: usize = size_text.parse().map_err(|_| bad())?;
    let dt = match kind {
        'b' if size == 1 => DataType::Bool,
        'i' => DataType::integer(size, true).ok_or_else(bad)?,
        'u' => DataType::integer(size, false).ok_or_else(bad)?,
        'f' => DataType::float(size).ok_or_else(bad)?,
        'c' if size == 8 => DataType::Complex64,
        'c' if size == 16 => DataType::Complex128,
        'S' if size > 0 && size <= 1 << 20 => DataType::FixedBytes(size),
        'U' => {
            return Err(unsupported(format!(
                "dtype {s:?}: fixed-length Unicode arrays (numpy U) have no Zarr v3 data type vzarr writes"
            )));
        }
        'V' => {
            return Err(unsupported(format!(
                "dtype {s:?}: opaque void types have no Zarr v3 data type vzarr writes"
            )));
        }
        _ => return Err(bad()),
    };
    let endian = if dt.size() <= 1 || matches!(dt, DataType::FixedBytes(_)) {
        Endian::Little
    } else {
        endian
    };
    Ok((dt, endian))
}

/// A `.zarray` `dtype`: a type string, or a structured type (`[[name, type], ...]`, fields of
/// one byte order, no sub-array shapes).
fn parse_dtype(v: &Value, object_utf8: bool) -> Result<(DataType, Endian), V2Error> {
    match v {
        Value::String(s) => parse_typestr(s, object_utf8),
        Value::Array(fields) => {
            if fields.is_empty() || fields.len() > MAX_FIELDS {
                return Err(malformed("a structured dtype needs 1 to 4096 fields"));
            }
            let mut out = Vec::with_capacity(fields.len());
            let mut order: Option<Endian> = None;
            for f in fields {
                let Some([name, t]) = f.as_array().map(Vec::as_slice) else {
                    return Err(unsupported(format!(
                        "structured dtype field {f}: only [name, type] fields (no sub-array shapes) are supported"
                    )));
                };
                let name = name
                    .as_str()
                    .ok_or_else(|| malformed(format!("structured dtype field name {name}")))?;
                let (dt, e) = match t {
                    Value::String(s) => parse_typestr(s, false)?,
                    Value::Array(_) => parse_dtype(t, false)?,
                    _ => return Err(malformed(format!("structured dtype field type {t}"))),
                };
                if dt.size() > 1 && !matches!(dt, DataType::FixedBytes(_)) {
                    if order.is_some_and(|o| o != e) {
                        return Err(unsupported(
                            "a structured dtype with fields of both byte orders",
                        ));
                    }
                    order = Some(e);
                }
                out.push(StructField {
                    name: name.to_string(),
                    data_type: dt,
                });
            }
            Ok((
                DataType::Struct(out.into()),
                order.unwrap_or(Endian::Little),
            ))
        }
        _ => Err(malformed(format!(
            "dtype {v} is neither a string nor a list"
        ))),
    }
}

/// One numcodecs configuration (`{"id": ..., ...}`) as a codec of vzarr's model.
fn numcodec(conf: &Value, dt: &DataType) -> Result<Codec, V2Error> {
    let id = conf
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("codec {conf} has no \"id\"")))?;
    let uint = |k: &str, default: Option<u64>| -> Result<u64, V2Error> {
        match conf.get(k) {
            Some(v) => v.as_u64().ok_or_else(|| {
                malformed(format!("codec {id}: {k} {v} is not a non-negative integer"))
            }),
            None => default.ok_or_else(|| malformed(format!("codec {id}: no {k}"))),
        }
    };
    let small = |v: u64, what: &str| -> Result<u32, V2Error> {
        u32::try_from(v).map_err(|_| malformed(format!("codec {id}: {what} {v} is too large")))
    };
    Ok(match id {
        "zlib" => Codec::Zlib {
            level: small(uint("level", Some(1))?, "level")?.min(9),
        },
        "shuffle" => {
            let size = uint("elementsize", Some(4))?;
            Codec::Shuffle {
                element_size: usize::try_from(size)
                    .ok()
                    .filter(|&s| s > 0 && s <= 1 << 20)
                    .ok_or_else(|| malformed(format!("codec shuffle: elementsize {size}")))?,
            }
        }
        "fletcher32" => Codec::Fletcher32,
        "zstd" => Codec::Zstd {
            level: match conf.get("level") {
                None => 0,
                Some(v) => v
                    .as_i64()
                    .and_then(|l| i32::try_from(l).ok())
                    .ok_or_else(|| malformed(format!("codec zstd: level {v}")))?,
            },
        },
        "bz2" => Codec::Bz2 {
            level: small(uint("level", Some(1))?, "level")?,
        },
        "blosc" => {
            let cname = conf
                .get("cname")
                .and_then(Value::as_str)
                .unwrap_or("lz4")
                .to_string();
            if !["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"].contains(&cname.as_str()) {
                return Err(malformed(format!("codec blosc: cname {cname:?}")));
            }
            let typesize = dt.size().max(1);
            // numcodecs: -1 automatic (bit shuffle for 1-byte elements, else byte shuffle).
            let shuffle = match conf.get("shuffle").map(|v| v.as_i64()) {
                None => BloscShuffle::Shuffle,
                Some(Some(-1)) if typesize == 1 => BloscShuffle::BitShuffle,
                Some(Some(-1)) | Some(Some(1)) => BloscShuffle::Shuffle,
                Some(Some(0)) => BloscShuffle::NoShuffle,
                Some(Some(2)) => BloscShuffle::BitShuffle,
                Some(other) => {
                    return Err(malformed(format!("codec blosc: shuffle {other:?}")));
                }
            };
            Codec::Blosc {
                cname,
                clevel: small(uint("clevel", Some(5))?, "clevel")?.min(9),
                shuffle,
                typesize,
                // Blosc frames describe their own block size: decoding ignores this.
                blocksize: usize::try_from(uint("blocksize", Some(0))?).unwrap_or(0),
            }
        }
        other => {
            return Err(unsupported(format!(
                "codec {other:?} has no Zarr v3 counterpart that vzarr writes and reads"
            )));
        }
    })
}

/// The array's `.zattrs` without `_ARRAY_DIMENSIONS`, and the dimension names it gives.
fn split_attrs(
    zattrs: Option<&Value>,
    ndim: usize,
) -> Result<(Map<String, Value>, Vec<String>), V2Error> {
    let mut attrs = match zattrs {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(malformed(format!(".zattrs is not an object: {other}"))),
    };
    let dims = match attrs.remove("_ARRAY_DIMENSIONS") {
        None | Some(Value::Null) => (0..ndim).map(|i| format!("dim_{i}")).collect(),
        Some(Value::Array(names)) => {
            if names.len() != ndim {
                return Err(malformed(format!(
                    "_ARRAY_DIMENSIONS names {} dimensions of a {ndim}-dimensional array",
                    names.len()
                )));
            }
            names
                .iter()
                .map(|n| {
                    n.as_str()
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .ok_or_else(|| {
                            malformed(format!("_ARRAY_DIMENSIONS entry {n} is not a name"))
                        })
                })
                .collect::<Result<_, _>>()?
        }
        Some(other) => {
            return Err(malformed(format!(
                "_ARRAY_DIMENSIONS {other} is not a list"
            )));
        }
    };
    Ok((attrs, dims))
}

/// Translates a `.zarray` (and the array's `.zattrs`) into a Zarr v3 array document.
pub(super) fn translate_array(zarray: &Value, zattrs: Option<&Value>) -> Result<V2Array, V2Error> {
    let z = zarray
        .as_object()
        .ok_or_else(|| malformed(".zarray is not a JSON object"))?;
    if z.get("zarr_format").and_then(Value::as_u64) != Some(2) {
        return Err(malformed(".zarray: zarr_format is not 2"));
    }
    let dims_of = |k: &str| -> Result<Vec<u64>, V2Error> {
        z.get(k)
            .and_then(Value::as_array)
            .ok_or_else(|| malformed(format!(".zarray: no {k} list")))?
            .iter()
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    malformed(format!(
                        ".zarray: {k} entry {v} is not a non-negative integer"
                    ))
                })
            })
            .collect()
    };
    let shape = dims_of("shape")?;
    let chunks = dims_of("chunks")?;
    if shape.len() != chunks.len() {
        return Err(malformed(format!(
            ".zarray: shape has {} dimensions, chunks {}",
            shape.len(),
            chunks.len()
        )));
    }
    if shape.len() > vzarr_core::MAX_RANK {
        return Err(malformed(format!(
            ".zarray: {} dimensions (at most {})",
            shape.len(),
            vzarr_core::MAX_RANK
        )));
    }
    if chunks.contains(&0) {
        return Err(malformed(".zarray: a chunk length of 0"));
    }
    match z.get("order").and_then(Value::as_str) {
        Some("C") | None => {}
        Some("F") => {
            return Err(unsupported(
                "Fortran (column-major) chunk order: vzarr writes C-order chunks only, and reading F-order bytes as C order would transpose every chunk",
            ));
        }
        Some(o) => return Err(malformed(format!(".zarray: order {o:?}"))),
    }
    let separator = match z.get("dimension_separator") {
        None | Some(Value::Null) => '.',
        Some(Value::String(s)) if s == "." => '.',
        Some(Value::String(s)) if s == "/" => '/',
        Some(other) => return Err(malformed(format!(".zarray: dimension_separator {other}"))),
    };
    let filters: Vec<Value> = match z.get("filters") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(f)) => f.clone(),
        Some(other) => return Err(malformed(format!(".zarray: filters {other} is not a list"))),
    };
    let object_utf8 = filters
        .first()
        .and_then(|f| f.get("id"))
        .and_then(Value::as_str)
        == Some("vlen-utf8");
    let (dt, endian) = parse_dtype(
        z.get("dtype")
            .ok_or_else(|| malformed(".zarray: no dtype"))?,
        object_utf8,
    )?;
    // Encoding order: the filters first to last, then the compressor.
    let mut codecs = Vec::new();
    let filters = if dt.is_string() {
        &filters[1..]
    } else {
        &filters[..]
    };
    for f in filters {
        codecs.push(numcodec(f, &dt)?);
    }
    match z.get("compressor") {
        None | Some(Value::Null) => {}
        Some(c @ Value::Object(_)) => codecs.push(numcodec(c, &dt)?),
        Some(other) => return Err(malformed(format!(".zarray: compressor {other}"))),
    }
    if dt.is_string() && !codecs.is_empty() {
        return Err(unsupported(
            "variable-length text with further codecs after vlen-utf8",
        ));
    }
    let fill_json = z.get("fill_value").unwrap_or(&Value::Null);
    let fill = match fill_json {
        Value::Null => None,
        Value::Number(n) if dt == DataType::Bool => Some(FillValue::from_zarr_json(
            dt.clone(),
            &Value::Bool(n.as_f64() != Some(0.0)),
        )),
        v => Some(FillValue::from_zarr_json(dt.clone(), v)),
    }
    .transpose()
    .map_err(|e| malformed(format!(".zarray: fill_value {fill_json}: {e}")))?;
    let (mut attrs, dims) = split_attrs(zattrs, shape.len())?;
    match &fill {
        // xarray masks a Zarr v2 array's fill_value; a v3 array's only through _FillValue.
        Some(f) => {
            attrs.insert(
                "_FillValue".into(),
                vzarr_core::attrs::cf_fill_value(dt.clone(), f),
            );
        }
        None => {
            if let Some(v) = attrs.get("_FillValue").cloned()
                && let Ok(f) = FillValue::from_zarr_json(dt.clone(), &v)
            {
                attrs.insert(
                    "_FillValue".into(),
                    vzarr_core::attrs::cf_fill_value(dt.clone(), &f),
                );
            }
        }
    }
    let fill = fill.unwrap_or_else(|| FillValue::zero(dt.clone()));
    let first = if dt.is_string() {
        vzarr_core::vlen_utf8_codec_json()
    } else {
        vzarr_core::bytes_codec_json(dt.size(), endian, dt.has_endianness())
    };
    let mut codecs_json = vec![first];
    codecs_json.extend(codecs.iter().map(Codec::to_zarr_json));
    let doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": dt.to_zarr_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill.to_zarr_json(dt.clone()),
        "codecs": codecs_json,
        "attributes": attrs,
        "dimension_names": dims,
    });
    Ok(V2Array {
        doc,
        separator,
        ndim: shape.len(),
    })
}

/// A group's `.zattrs` as a Zarr v3 group document.
pub(super) fn translate_group(zattrs: Option<&Value>) -> Result<Value, V2Error> {
    let attrs = match zattrs {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(malformed(format!(".zattrs is not an object: {other}"))),
    };
    Ok(json!({"zarr_format": 3, "node_type": "group", "attributes": attrs}))
}

/// Zarr v2 metadata keys (leaf names).
pub(crate) const V2_LEAVES: [&str; 4] = [".zarray", ".zattrs", ".zgroup", ".zmetadata"];

/// The Zarr v2 metadata of one node, as found under its keys.
#[derive(Debug, Default)]
pub(super) struct V2Node {
    /// `.zarray`, when the node is an array.
    pub(super) zarray: Option<Value>,
    /// `.zattrs`.
    pub(super) zattrs: Option<Value>,
}

/// Whether `key` is a Zarr v2 metadata key, and of which node path and leaf.
pub(super) fn split_v2_key(key: &str) -> Option<(&str, &str)> {
    let (path, leaf) = key.rsplit_once('/').unwrap_or(("", key));
    V2_LEAVES.contains(&leaf).then_some((path, leaf))
}

/// The Zarr v2 nodes of the metadata entries, by path: the keys given one by one, completed
/// by the root's consolidated `.zmetadata` (a key given both ways must say the same, or a
/// reader opening the references consolidated would read something else). Errors name the
/// key.
pub(super) fn collect_nodes(
    meta: &[(String, Value)],
) -> Result<std::collections::BTreeMap<String, V2Node>, (String, String)> {
    use std::collections::BTreeMap;
    let mut given: BTreeMap<String, Value> = BTreeMap::new();
    let mut consolidated: Option<(String, Value)> = None;
    for (key, value) in meta {
        let Some((path, leaf)) = split_v2_key(key) else {
            continue;
        };
        super::names::check_node_path(path).map_err(|e| (key.clone(), e))?;
        let (doc, _) = super::metadata::metadata_document(value).map_err(|e| (key.clone(), e))?;
        if leaf == ".zmetadata" {
            // A nested group's consolidated block repeats what its keys say: the root's is read.
            if path.is_empty() {
                consolidated = Some((key.clone(), doc));
            }
            continue;
        }
        given.insert(key.clone(), doc);
    }
    if let Some((ckey, doc)) = consolidated {
        let entries = doc
            .get("metadata")
            .and_then(Value::as_object)
            .ok_or_else(|| (ckey.clone(), "no \"metadata\" object".to_string()))?;
        for (k, v) in entries {
            let Some((path, _)) = split_v2_key(k) else {
                continue;
            };
            if k.ends_with(".zmetadata") {
                continue;
            }
            super::names::check_node_path(path)
                .map_err(|e| (ckey.clone(), format!("entry {k:?}: {e}")))?;
            let (v, _) = super::metadata::metadata_document(v)
                .map_err(|e| (ckey.clone(), format!("entry {k:?}: {e}")))?;
            match given.get(k) {
                Some(g) if *g != v => {
                    return Err((
                        k.clone(),
                        "differs from its entry in the consolidated .zmetadata; refused, since a reader opening the references consolidated would read something else".into(),
                    ));
                }
                Some(_) => {}
                None => {
                    given.insert(k.clone(), v);
                }
            }
        }
    }
    let mut nodes: BTreeMap<String, V2Node> = BTreeMap::new();
    for (key, doc) in given {
        let (path, leaf) = split_v2_key(&key).expect("v2 key");
        let node = nodes.entry(path.to_string()).or_default();
        match leaf {
            ".zarray" => node.zarray = Some(doc),
            ".zattrs" => node.zattrs = Some(doc),
            _ => {
                if doc.get("zarr_format").and_then(Value::as_u64) != Some(2) {
                    return Err((key, "zarr_format is not 2".into()));
                }
            }
        }
    }
    Ok(nodes)
}

/// Parses the index part of a Zarr v2 chunk key (`"0.12.3"` with separator `.`); `"0"` is the
/// one chunk of a 0-d array.
pub(super) fn parse_v2_indices(
    rest: &str,
    separator: char,
    ndim: usize,
) -> Result<Vec<u64>, String> {
    if ndim == 0 {
        return if rest == "0" {
            Ok(Vec::new())
        } else {
            Err(format!(
                "chunk key part {rest:?} of a 0-dimensional array is not \"0\""
            ))
        };
    }
    let v = super::names::parse_chunk_indices(&rest.replace(separator, "/"))?;
    if separator == '.' && rest.contains('/') {
        return Err(format!("chunk key part {rest:?} mixes separators"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn za(extra: Value) -> Value {
        let mut z = json!({"zarr_format": 2, "shape": [4, 6], "chunks": [2, 3], "dtype": "<f4",
            "compressor": null, "filters": null, "fill_value": null, "order": "C"});
        for (k, v) in extra.as_object().unwrap() {
            z[k] = v.clone();
        }
        z
    }

    #[test]
    fn kerchunk_hdf5_array() {
        let z = za(json!({"dtype": ">i2", "fill_value": -999,
            "filters": [{"id": "shuffle", "elementsize": 2}, {"id": "zlib", "level": 4}]}));
        let a = translate_array(
            &z,
            Some(&json!({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})),
        )
        .unwrap();
        assert_eq!(a.separator, '.');
        let d = &a.doc;
        assert_eq!(d["data_type"], json!("int16"));
        assert_eq!(
            d["codecs"][0],
            json!({"name": "bytes", "configuration": {"endian": "big"}})
        );
        assert_eq!(d["codecs"][1]["name"], json!("numcodecs.shuffle"));
        assert_eq!(
            d["codecs"][2],
            json!({"name": "numcodecs.zlib", "configuration": {"level": 4}})
        );
        assert_eq!(d["fill_value"], json!(-999));
        assert_eq!(d["attributes"], json!({"units": "K", "_FillValue": -999}));
        assert_eq!(d["dimension_names"], json!(["y", "x"]));
        vzarr_core::VirtualArray::from_zarr_metadata(d).unwrap();
    }

    #[test]
    fn fill_values_and_refusals() {
        let a = translate_array(&za(json!({"fill_value": "NaN"})), None).unwrap();
        assert_eq!(a.doc["fill_value"], json!("NaN"));
        assert_eq!(a.doc["attributes"]["_FillValue"], json!("AAAAAAAA+H8="));
        assert_eq!(a.doc["dimension_names"], json!(["dim_0", "dim_1"]));
        let a = translate_array(&za(json!({"dimension_separator": "/"})), None).unwrap();
        assert_eq!(a.separator, '/');
        assert!(a.doc["attributes"].get("_FillValue").is_none());
        for (extra, kind) in [
            (json!({"order": "F"}), "Fortran"),
            (json!({"dtype": "<M8[ns]"}), "datetime"),
            (json!({"compressor": {"id": "lz4"}}), "\"lz4\""),
        ] {
            match translate_array(&za(extra), None) {
                Err(V2Error::Unsupported(r)) => assert!(r.contains(kind), "{r}"),
                _ => panic!("not refused: {kind}"),
            }
        }
        for bad in [
            json!({"dtype": "f4"}),
            json!({"chunks": [0, 1]}),
            json!({"shape": [1]}),
            json!({"fill_value": "x"}),
            json!({"order": "Z"}),
            json!({"zarr_format": 3}),
        ] {
            assert!(
                matches!(
                    translate_array(&za(bad.clone()), None),
                    Err(V2Error::Malformed(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            translate_array(&za(json!({})), Some(&json!({"_ARRAY_DIMENSIONS": ["x"]}))),
            Err(V2Error::Malformed(_))
        ));
    }

    #[test]
    fn types() {
        let t = |s: &str| parse_typestr(s, false).unwrap();
        assert_eq!(t("|b1"), (DataType::Bool, Endian::Little));
        assert_eq!(t(">u8"), (DataType::UInt64, Endian::Big));
        assert_eq!(t("|S7"), (DataType::FixedBytes(7), Endian::Little));
        assert_eq!(t(">S7").1, Endian::Little);
        assert_eq!(t("<c16").0, DataType::Complex128);
        assert_eq!(parse_typestr("|O", true).unwrap().0, DataType::String);
        let (s, e) = parse_dtype(&json!([["a", ">i4"], ["b", ">f8"]]), false).unwrap();
        assert_eq!(e, Endian::Big);
        assert!(matches!(s, DataType::Struct(f) if f.len() == 2));
        let blosc = numcodec(
            &json!({"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1, "blocksize": 0}),
            &DataType::UInt8,
        )
        .unwrap();
        assert!(matches!(
            blosc,
            Codec::Blosc {
                shuffle: BloscShuffle::BitShuffle,
                typesize: 1,
                ..
            }
        ));
    }
}
