//! Metadata values of kerchunk references as Zarr v3 documents (a JSON-encoded string, as
//! kerchunk writes them, or a JSON object), and the number of chunks an array document's
//! `chunk_grid` implies, bounded without expanding run-length encoded edges.

use bytes::Bytes;
use serde_json::Value;

/// Number of chunks the `chunk_grid` of an array document implies, computed without
/// expanding run-length encoded edges; `None` when the document is not understood here (the
/// model's parser then reports it). Errors when a limit is passed.
pub(super) fn count_chunks(doc: &Value, limit: u64) -> Result<Option<u64>, String> {
    let Some(shape) = doc
        .get("shape")
        .and_then(Value::as_array)
        .map(|s| s.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
    else {
        return Ok(None);
    };
    let Some(shape) = shape else { return Ok(None) };
    if shape.len() > vzarr_core::MAX_RANK {
        return Err(format!(
            "{} dimensions (at most {})",
            shape.len(),
            vzarr_core::MAX_RANK
        ));
    }
    let Some(grid) = doc.get("chunk_grid") else {
        return Ok(None);
    };
    let conf = grid.get("configuration");
    let too_many = || format!("the chunk grid has more than {limit} chunks");
    let per_axis: Vec<u64> = match grid.get("name").and_then(Value::as_str) {
        Some("regular") => {
            let Some(cs) = conf
                .and_then(|c| c.get("chunk_shape"))
                .and_then(Value::as_array)
                .and_then(|v| v.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            else {
                return Ok(None);
            };
            if cs.len() != shape.len() || cs.contains(&0) {
                return Ok(None);
            }
            shape
                .iter()
                .zip(&cs)
                .map(|(&e, &c)| e.div_ceil(c))
                .collect()
        }
        Some("rectilinear") => {
            let Some(shapes) = conf
                .and_then(|c| c.get("chunk_shapes"))
                .and_then(Value::as_array)
            else {
                return Ok(None);
            };
            if shapes.len() != shape.len() {
                return Ok(None);
            }
            let mut v = Vec::with_capacity(shape.len());
            for (s, &extent) in shapes.iter().zip(&shape) {
                match s {
                    Value::Number(n) => match n.as_u64() {
                        Some(c) if c > 0 => v.push(extent.div_ceil(c)),
                        _ => return Ok(None),
                    },
                    Value::Array(items) => {
                        // Every listed edge is expanded by the model's parser: bound them all.
                        let mut listed: u64 = 0;
                        let mut used: u64 = 0;
                        let mut covered: u64 = 0;
                        for item in items {
                            let (val, count) = match item {
                                Value::Number(n) => (n.as_u64(), Some(1)),
                                Value::Array(p) if p.len() == 2 => (p[0].as_u64(), p[1].as_u64()),
                                _ => return Ok(None),
                            };
                            let (Some(val), Some(count)) = (val, count) else {
                                return Ok(None);
                            };
                            if val == 0 {
                                return Ok(None);
                            }
                            listed = listed.saturating_add(count);
                            if listed > limit {
                                return Err(too_many());
                            }
                            if covered < extent {
                                let need = (extent - covered).div_ceil(val);
                                let take = need.min(count);
                                used += take;
                                covered = covered.saturating_add(take.saturating_mul(val));
                            }
                        }
                        v.push(if extent == 0 { 0 } else { used });
                    }
                    _ => return Ok(None),
                }
            }
            v
        }
        _ => return Ok(None),
    };
    let mut n: u64 = 1;
    for c in per_axis {
        n = n.checked_mul(c).ok_or_else(too_many)?;
    }
    if n > limit {
        return Err(too_many());
    }
    Ok(Some(n))
}

/// A metadata value as a JSON document: a JSON-encoded string or an object.
pub(super) fn metadata_document(value: &Value) -> Result<(Value, Bytes), String> {
    match value {
        Value::String(s) => {
            let doc: Value = match serde_json::from_str(s) {
                Ok(d) => d,
                // Python's json module (kerchunk's writer) spells non-finite floats as bare
                // NaN, Infinity and -Infinity; read them as the strings Zarr uses for them.
                Err(e) => serde_json::from_str(&quote_non_finite(s))
                    .map_err(|_| format!("metadata is not valid JSON: {e}"))?,
            };
            if !doc.is_object() {
                return Err("metadata is not a JSON object".into());
            }
            Ok((doc, Bytes::from(s.clone().into_bytes())))
        }
        Value::Object(_) => {
            let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            Ok((value.clone(), Bytes::from(text)))
        }
        _ => Err("metadata must be a JSON object or a JSON-encoded string".into()),
    }
}

/// `text` with the bare tokens `NaN`, `Infinity` and `-Infinity` outside JSON strings quoted
/// (`"NaN"`, ...), as Zarr writes non-finite floats.
pub(super) fn quote_non_finite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if let Some(token) = ["NaN", "Infinity", "-Infinity"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(token);
            out.push('"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_non_finite_floats() {
        let (doc, _) = metadata_document(&Value::String(
            r#"{"a": [0.25, NaN, Infinity, -Infinity], "b": "NaN \" Infinity"}"#.into(),
        ))
        .unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"a": [0.25, "NaN", "Infinity", "-Infinity"], "b": "NaN \" Infinity"})
        );
        assert!(metadata_document(&Value::String("{\"a\": Nope}".into())).is_err());
    }
}
