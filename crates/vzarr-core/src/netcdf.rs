//! What a netCDF reader shows of a variable or group that Zarr v3 JSON cannot say: the
//! stored type of each numeric attribute (JSON numbers have none, so `np.float32(0.01)` would
//! come back as a Python float and unpack packed data to float64), and how the source stored
//! the variable (its chunk shape, compression, unlimited dimensions), which xarray's netCDF4
//! backend hands out as `encoding`.
//!
//! The model keeps it in an array's or group's [`Attributes`] under the reserved key
//! [`NETCDF_KEY`], so that it travels wherever attributes travel (the planner, the cache,
//! inlined arrays). The writers take it out of the attributes and write it beside them, as a
//! top-level field of the node's `zarr.json` that readers may ignore (Zarr v3 core
//! specification, "Extension definition": an object with `"must_understand": false`, which
//! zarr-python 3.4 and zarrs accept and keep); the readers of `zarr.json` put it back.
//!
//! ```json
//! {"zarr_format": 3, "node_type": "array", ..., "attributes": {"scale_factor": 0.01},
//!  "vzarr:netcdf": {"must_understand": false, "attribute_types": {"scale_factor": "float32"},
//!                   "chunksizes": [1, 90, 180], "zlib": true, "complevel": 4,
//!                   "shuffle": true, "unlimited_dims": ["time"]}}
//! ```
//!
//! Fields (each optional): `attribute_types` (attribute name -> numpy type name: `int8` ..
//! `uint64`, `float16` .. `float64`), `chunksizes` (the source's chunk shape; absent for
//! contiguous storage, with `contiguous: true`), `zlib`/`complevel`/`shuffle`/`fletcher32`,
//! `unlimited_dims` (of the variable's dimensions, those that are unlimited in the source),
//! `dtype` (the netCDF type where the Zarr one differs: `S1` for character arrays),
//! `dimension_names` (where netCDF names the axes differently from the Zarr array: a
//! character array's string-length dimension), `_FillValue` (a byte-string array's, which
//! xarray's Zarr backend cannot decode) and `_FillValue_at` (its place among the attributes
//! when not the last), `not_shown` (why netCDF readers do not show the array at all: an HDF5
//! array datatype), `attributes_not_shown` (the attributes netCDF readers do not show: of an
//! enum type not committed to the file).

use serde_json::{Map, Value, json};

use crate::Attributes;

/// The reserved attribute key, and the `zarr.json` field, of the netCDF view.
pub const NETCDF_KEY: &str = "vzarr:netcdf";

/// The view's field giving the place of a `_FillValue` it holds among the attributes.
const FILL_AT: &str = "_FillValue_at";

/// numpy's name of a numeric type of `size` bytes (`float` for IEEE floats, else integers,
/// `signed` or not), as the netCDF view records attribute types; `None` for other sizes.
pub fn numpy_type_name(float: bool, signed: bool, size: usize) -> Option<&'static str> {
    Some(match (float, signed, size) {
        (true, _, 2) => "float16",
        (true, _, 4) => "float32",
        (true, _, 8) => "float64",
        (false, true, 1) => "int8",
        (false, true, 2) => "int16",
        (false, true, 4) => "int32",
        (false, true, 8) => "int64",
        (false, false, 1) => "uint8",
        (false, false, 2) => "uint16",
        (false, false, 4) => "uint32",
        (false, false, 8) => "uint64",
        _ => return None,
    })
}

/// The netCDF view held in `attributes`, created empty when absent.
fn view_mut(attributes: &mut Attributes) -> &mut Map<String, Value> {
    let entry = attributes
        .entry(NETCDF_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("an object")
}

/// Records that the attribute `name` holds numbers of the numpy type `type_name`.
pub fn set_attribute_type(attributes: &mut Attributes, name: &str, type_name: &str) {
    let view = view_mut(attributes);
    let types = view
        .entry("attribute_types")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(t) = types.as_object_mut() {
        t.insert(name.to_string(), json!(type_name));
    }
}

/// Sets the field `key` of the netCDF view in `attributes`.
pub fn set_field(attributes: &mut Attributes, key: &str, value: Value) {
    view_mut(attributes).insert(key.to_string(), value);
}

/// A node's `zarr.json` fields for `attributes`: the attributes without the netCDF view, and
/// the view as an extension field (with `"must_understand": false`), when there is one.
/// With `hide_fill`, the `_FillValue` attribute goes into the view (as `_FillValue`): for
/// byte-string arrays, whose `_FillValue` xarray's Zarr backend cannot decode (it refuses to
/// open the dataset), while vzarr's readers put it back.
pub fn split(attributes: &Attributes, hide_fill: bool) -> (Value, Option<Value>) {
    let hidden = attributes.get("_FillValue").filter(|_| hide_fill);
    match (attributes.get(NETCDF_KEY), hidden) {
        (None, None) => (Value::Object(attributes.clone()), None),
        (view, hidden) => {
            let mut view = match view {
                Some(Value::Object(v)) => v.clone(),
                _ => Map::new(),
            };
            let mut rest = attributes.clone();
            rest.shift_remove(NETCDF_KEY);
            if let Some(fill) = hidden {
                let at = rest.keys().position(|k| k == "_FillValue");
                rest.shift_remove("_FillValue");
                view.insert("_FillValue".into(), fill.clone());
                // Its place among the attributes (netCDF readers list them in file order),
                // when it was not the last.
                if let Some(at) = at.filter(|&i| i < rest.len()) {
                    view.insert(FILL_AT.into(), json!(at));
                }
            }
            let mut ext = Map::new();
            ext.insert("must_understand".into(), Value::Bool(false));
            let mut keys: Vec<&String> = view.keys().collect();
            keys.sort();
            for k in keys {
                ext.insert(k.clone(), canonical(&view[k]));
            }
            (Value::Object(rest), Some(Value::Object(ext)))
        }
    }
}

/// `v` with the keys of every object in it in sorted order: the view is written the same
/// whatever order it was assembled or cached in (deterministic output).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The attributes of a node's `zarr.json` document `doc`, with its netCDF view (the extension
/// field) put back under [`NETCDF_KEY`]; `None` when `attributes` is present but not an object.
pub fn attributes_of(doc: &Value) -> Option<Attributes> {
    let mut attributes = match doc.get("attributes") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return None,
    };
    if let Some(Value::Object(ext)) = doc.get(NETCDF_KEY) {
        let mut view = ext.clone();
        view.remove("must_understand");
        let at = view.remove(FILL_AT).and_then(|v| v.as_u64());
        if let Some(fill) = view.remove("_FillValue") {
            let at = at.map_or(attributes.len(), |i| {
                usize::try_from(i)
                    .unwrap_or(usize::MAX)
                    .min(attributes.len())
            });
            attributes.shift_insert(at, "_FillValue".into(), fill);
        }
        // Derived from the dataset's order when written (`VirtualDataset::group_document`).
        view.remove("variables");
        if !view.is_empty() {
            attributes.insert(NETCDF_KEY.into(), Value::Object(view));
        }
    }
    Some(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_back() {
        let mut a = Attributes::new();
        a.insert("scale_factor".into(), json!(0.5));
        set_attribute_type(&mut a, "scale_factor", "float32");
        set_field(&mut a, "zlib", json!(true));
        let (attrs, ext) = split(&a, false);
        assert_eq!(attrs, json!({"scale_factor": 0.5}));
        let ext = ext.unwrap();
        assert_eq!(ext["must_understand"], json!(false));
        // Keys sorted, whatever order the view was assembled in.
        let keys: Vec<&String> = ext.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["must_understand", "attribute_types", "zlib"]);
        assert_eq!(ext["attribute_types"], json!({"scale_factor": "float32"}));
        let doc = json!({"attributes": attrs, NETCDF_KEY: ext});
        assert_eq!(attributes_of(&doc).unwrap(), a);
        // No view: nothing beside the attributes.
        let plain: Attributes = [("units".to_string(), json!("K"))].into_iter().collect();
        assert_eq!(split(&plain, false).1, None);
        // A byte-string array's _FillValue goes into the view, and comes back.
        let mut s = Attributes::new();
        s.insert("_FillValue".into(), json!("AA=="));
        let (attrs, ext) = split(&s, true);
        assert_eq!(attrs, json!({}));
        assert_eq!(
            ext,
            Some(json!({"must_understand": false, "_FillValue": "AA=="}))
        );
        let doc = json!({"attributes": attrs, NETCDF_KEY: ext.unwrap()});
        assert_eq!(attributes_of(&doc).unwrap(), s);
        assert!(attributes_of(&json!({"attributes": 3})).is_none());
        // Before other attributes: it comes back in its place.
        let mut s = Attributes::new();
        s.insert("_FillValue".into(), json!("AA=="));
        s.insert("units".into(), json!("m"));
        let (attrs, ext) = split(&s, true);
        assert_eq!(ext.as_ref().unwrap()["_FillValue_at"], json!(0));
        let doc = json!({"attributes": attrs, NETCDF_KEY: ext.unwrap()});
        let back = attributes_of(&doc).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["_FillValue", "units"]);
    }

    #[test]
    fn numpy_type_names() {
        assert_eq!(numpy_type_name(true, true, 4), Some("float32"));
        assert_eq!(numpy_type_name(false, false, 2), Some("uint16"));
        assert_eq!(numpy_type_name(false, false, 3), None);
    }
}
