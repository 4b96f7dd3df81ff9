//! Agreement between files: everything that must be the same in every file before a variable
//! can be combined (data type, byte order, fill value, codecs up to compression level,
//! dimensions, chunk edges on the other axes, attributes that change decoding), the same set
//! of variables in every file, and variables without the concatenation dimension identical in
//! metadata and values.

use std::collections::BTreeMap;

use serde_json::Value;
use vzarr_codec::ByteCodecs;
use vzarr_core::{Codec, SkippedVariable, VirtualArray};
use vzarr_source::SourceStore;

use crate::agree;
use crate::error::{FilePair, PlanError, ReadError};
use crate::input::{Input, Version};
use crate::values;

/// Attributes that change how values decode: they must agree across files.
pub(crate) const DECODING_ATTRS: &[&str] = &[
    "scale_factor",
    "add_offset",
    "_FillValue",
    "missing_value",
    "valid_min",
    "valid_max",
    "valid_range",
    "units",
    "calendar",
    "_Unsigned",
    "_Encoding",
];

/// Two JSON values for a message, each cut at 200 characters.
fn json_diff(a: &Value, b: &Value) -> String {
    let s = |v: &Value| {
        let t = v.to_string();
        if t.len() > 200 {
            format!("{}...", &t[..200])
        } else {
            t
        }
    };
    format!("{} vs {}", s(a), s(b))
}

/// Codecs that decode the same way (compression levels may differ).
fn codecs_compatible(a: &[Codec], b: &[Codec]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.decodes_like(y))
}

/// Checks that `other` matches `reference` in everything that must agree; `skip_axis` is the
/// concatenation axis, whose length and chunking may differ; `ignore_attrs` are decoding
/// attributes allowed to differ (those the caller re-encodes).
pub(crate) fn check_compatible(
    path: &str,
    reference: Version<'_>,
    other: Version<'_>,
    skip_axis: Option<usize>,
    ignore_attrs: &[&str],
) -> Result<(), PlanError> {
    let (a, b) = (reference.array, other.array);
    let mismatch = |field: &str, detail: String| PlanError::Mismatch {
        variable: path.into(),
        field: field.into(),
        files: FilePair::new(reference.url, other.url),
        detail,
    };
    if a.data_type != b.data_type {
        return Err(mismatch(
            "data type",
            format!("{} vs {}", a.data_type.name(), b.data_type.name()),
        ));
    }
    if a.data_type.has_endianness() && a.endian != b.endian {
        return Err(mismatch(
            "byte order",
            format!("{:?} vs {:?}", a.endian, b.endian),
        ));
    }
    if a.fill_value != b.fill_value {
        return Err(mismatch(
            "fill value",
            json_diff(
                &a.fill_value.to_zarr_json(a.data_type.clone()),
                &b.fill_value.to_zarr_json(b.data_type.clone()),
            ),
        ));
    }
    if !codecs_compatible(&a.codecs, &b.codecs) {
        let l = |c: &[Codec]| c.iter().map(Codec::label).collect::<Vec<_>>().join(",");
        return Err(mismatch(
            "codecs",
            format!("[{}] vs [{}]", l(&a.codecs), l(&b.codecs)),
        ));
    }
    if a.dimension_names != b.dimension_names {
        return Err(mismatch(
            "dimensions",
            format!("{:?} vs {:?}", a.dimension_names, b.dimension_names),
        ));
    }
    for (k, (da, db)) in a.grid.dims().iter().zip(b.grid.dims()).enumerate() {
        if Some(k) == skip_axis {
            continue;
        }
        if da.extent() != db.extent() {
            return Err(mismatch(
                "shape",
                format!(
                    "{} is {} vs {}",
                    a.dimension_names[k],
                    da.extent(),
                    db.extent()
                ),
            ));
        }
        if da != db {
            return Err(mismatch(
                "chunk edges",
                format!(
                    "along {}: {:?} vs {:?}",
                    a.dimension_names[k],
                    da.edges(),
                    db.edges()
                ),
            ));
        }
    }
    for key in DECODING_ATTRS.iter().filter(|k| !ignore_attrs.contains(k)) {
        let (x, y) = (a.attributes.get(*key), b.attributes.get(*key));
        if x != y {
            return Err(mismatch(
                &format!("attribute {key}"),
                json_diff(x.unwrap_or(&Value::Null), y.unwrap_or(&Value::Null)),
            ));
        }
    }
    Ok(())
}

/// Checks that every input has the same arrays and skipped variables; returns their union.
pub(crate) fn check_same_variables(ordered: &[&Input]) -> Result<Vec<SkippedVariable>, PlanError> {
    let first = ordered[0];
    for other in &ordered[1..] {
        for path in other.ds.arrays.keys() {
            if !first.ds.arrays.contains_key(path) {
                return Err(PlanError::MissingVariable {
                    variable: path.clone(),
                    present: other.url.clone(),
                    absent: first.url.clone(),
                    odd: other.url.clone(),
                });
            }
        }
    }
    let mut skipped: BTreeMap<String, SkippedVariable> = BTreeMap::new();
    for input in ordered {
        for s in &input.ds.skipped {
            if let Some(arr) = ordered.iter().find(|i| i.ds.arrays.contains_key(&s.path)) {
                return Err(PlanError::MissingVariable {
                    variable: s.path.clone(),
                    present: arr.url.clone(),
                    absent: format!("{} (left out there: {})", input.url, s.reason),
                    odd: input.url.clone(),
                });
            }
            skipped.entry(s.path.clone()).or_insert_with(|| s.clone());
        }
    }
    Ok(skipped.into_values().collect())
}

/// What a variable without the concatenation dimension must be.
const IDENTICAL: &str =
    "(a variable without the concatenation dimension must be identical in every file)";

/// Checks that a variable without the concatenation dimension is identical in every file:
/// the same metadata and the same values, chunk by chunk. Chunks are compared encoded first;
/// only chunks whose stored bytes differ are decoded and compared again. `known_same` says
/// that the values were already found identical in every file ([`crate::prefetch`]): then
/// only the metadata is compared, and nothing is read.
///
/// Every file is compared with the first; when one differs, the files are grouped by
/// agreement and the error names the first file (by URL) of the largest group and the first
/// file outside it ([`crate::agree`]): the file that differs from the others, never one of
/// the majority.
pub(crate) fn check_identical(
    path: &str,
    arrays: &[&VirtualArray],
    urls: &[&str],
    reader: &dyn SourceStore,
    known_same: bool,
) -> Result<(), PlanError> {
    let cmp = Identical {
        path,
        arrays,
        urls,
        reader,
        known_same,
    };
    let mut differs = false;
    for k in 1..arrays.len() {
        if cmp.difference(0, k)?.is_some() {
            differs = true;
            break;
        }
    }
    if !differs {
        return Ok(());
    }
    // Some file differs: which one is decided by agreement. A read that fails while
    // grouping is the error (it names its file).
    let mut failed = None;
    let group = agree::largest_group(urls, |i, j| match cmp.difference(i, j) {
        Ok(d) => d.is_none(),
        Err(e) => {
            failed.get_or_insert(e);
            false
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let mut by_url: Vec<usize> = (0..urls.len()).collect();
    by_url.sort_by(|&a, &b| urls[a].cmp(urls[b]).then(a.cmp(&b)));
    let odd = by_url
        .into_iter()
        .find(|k| !group.contains(k))
        .expect("a file outside the largest group, one having differed");
    Err(cmp
        .difference(group[0], odd)?
        .expect("files of different groups differ"))
}

/// The comparison of one variable kept once between files.
struct Identical<'a> {
    /// The variable's path.
    path: &'a str,
    /// Its version in each file.
    arrays: &'a [&'a VirtualArray],
    /// Each file's URL.
    urls: &'a [&'a str],
    /// Where chunks are read.
    reader: &'a dyn SourceStore,
    /// The values are known to be identical: only the metadata is compared.
    known_same: bool,
}

impl Identical<'_> {
    /// How the versions in files `i` and `j` differ (a mismatch naming `i` then `j`), or
    /// `None` when they are identical.
    fn difference(&self, i: usize, j: usize) -> Result<Option<PlanError>, PlanError> {
        let (path, reader) = (self.path, self.reader);
        let (a, b) = (self.arrays[i], self.arrays[j]);
        let (ua, ub) = (self.urls[i], self.urls[j]);
        let meta = a.zarr_metadata();
        let other = b.zarr_metadata();
        if other != meta {
            let field = meta
                .as_object()
                .and_then(|m| m.iter().find(|(key, v)| other.get(key.as_str()) != Some(v)))
                .map_or("metadata".to_string(), |(key, _)| key.clone());
            let detail = json_diff(&meta[field.as_str()], &other[field.as_str()]);
            return Ok(Some(PlanError::Mismatch {
                variable: path.into(),
                field: format!("{field} {IDENTICAL}"),
                files: FilePair::new(ua, ub),
                detail,
            }));
        }
        if self.known_same {
            return Ok(None);
        }
        let read_err = |url: &str, source: ReadError| PlanError::Read {
            file: url.into(),
            variable: path.into(),
            source,
        };
        let codecs = ByteCodecs::new(&a.codecs).map_err(|e| read_err(ua, e.into()))?;
        // Chunks stored in either file (a chunk missing in both reads as the same fill value,
        // the metadata being equal).
        let mut stored: Vec<usize> = a
            .manifest
            .iter_stored()
            .chain(b.manifest.iter_stored())
            .map(|(i, _)| i)
            .collect();
        stored.sort_unstable();
        stored.dedup();
        for c in stored {
            let encoded = |arr: &VirtualArray, url: &str| {
                values::encoded_chunk(arr, c, reader).map_err(|e| read_err(url, e))
            };
            if encoded(a, ua)? == encoded(b, ub)? {
                continue;
            }
            let raw = |arr: &VirtualArray, url: &str| {
                values::raw_chunk(arr, &codecs, c, reader).map_err(|e| read_err(url, e))
            };
            if raw(a, ua)? != raw(b, ub)? {
                return Ok(Some(PlanError::Mismatch {
                    variable: path.into(),
                    field: format!("values {IDENTICAL}"),
                    files: FilePair::new(ua, ub),
                    detail: format!("chunk {:?} differs", a.grid.chunk_index(c as u64)),
                }));
            }
        }
        Ok(None)
    }
}
