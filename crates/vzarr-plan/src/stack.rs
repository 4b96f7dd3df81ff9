//! Stacking along a new dimension (ensemble members): every variable gets a new leading axis
//! with one chunk per file; dimension coordinates and their bounds are kept once; the new
//! dimension's coordinate holds the labels (file names by default), inline.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use vzarr_core::{
    ChunkGrid, ChunkManifest, ConcatInfo, ConcatPiece, DataType, DimGrid, Endian, FillValue,
    VirtualArray, VirtualDataset,
};
use vzarr_source::SourceStore;

use crate::compat::{check_compatible, check_identical, check_same_variables};
use crate::error::PlanError;
use crate::input::{Input, Version, attr_str, join, leaf, parent, same_path, take_manifests};
use crate::output::{base_dataset, combined_provenance, copy_ref};
use crate::{PlanReport, file_name, prefetch};

/// Whether an array is a dimension coordinate (1-D, named after its dimension).
fn is_dim_coordinate(path: &str, a: &VirtualArray) -> bool {
    a.dimension_names.len() == 1 && a.dimension_names[0] == leaf(path)
}

/// The labels of the new dimension encoded as one array's values.
struct Labels {
    /// Int64 when every label is an integer, Float64 when every label is a number, else
    /// fixed-length UTF-8 text.
    data_type: DataType,
    /// The values, little-endian, in file order.
    raw: Vec<u8>,
    /// `_Encoding` for text.
    attributes: serde_json::Map<String, Value>,
}

impl Labels {
    fn encode(labels: &[String]) -> Labels {
        if let Ok(v) = labels
            .iter()
            .map(|s| s.trim().parse::<i64>())
            .collect::<Result<Vec<_>, _>>()
        {
            return Labels {
                data_type: DataType::Int64,
                raw: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                attributes: Default::default(),
            };
        }
        if let Ok(v) = labels
            .iter()
            .map(|s| s.trim().parse::<f64>())
            .collect::<Result<Vec<_>, _>>()
        {
            return Labels {
                data_type: DataType::Float64,
                raw: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                attributes: Default::default(),
            };
        }
        let width = labels.iter().map(String::len).max().unwrap_or(1).max(1);
        let mut raw = Vec::with_capacity(width * labels.len());
        for l in labels {
            let mut b = l.as_bytes().to_vec();
            b.resize(width, 0);
            raw.extend(b);
        }
        let mut attributes = serde_json::Map::new();
        attributes.insert("_Encoding".into(), json!("utf-8"));
        Labels {
            data_type: DataType::FixedBytes(width),
            raw,
            attributes,
        }
    }
}

/// The new dimension's coordinate: integers, floats or UTF-8 text, inline.
fn label_array(dim: &str, labels: &[String]) -> Result<VirtualArray, PlanError> {
    let n = labels.len() as u64;
    let Labels {
        data_type,
        raw,
        attributes,
    } = Labels::encode(labels);
    let grid = ChunkGrid::regular(&[n], &[n.max(1)])?;
    let mut manifest = ChunkManifest::new_missing(grid.n_chunks()? as usize);
    if n > 0 {
        manifest.set_inline(0, raw)?;
    }
    Ok(VirtualArray {
        data_type: data_type.clone(),
        endian: Endian::Little,
        fill_value: FillValue::zero(data_type),
        codecs: vec![],
        dimension_names: vec![dim.into()],
        attributes,
        grid,
        manifest,
    })
}

/// Stacks the inputs, in input order, along a new leading dimension `dim`.
pub(crate) fn stack_new(
    mut inputs: Vec<Input>,
    dim: &str,
    labels: Option<&[String]>,
    reader: &dyn SourceStore,
) -> Result<(VirtualDataset, PlanReport), PlanError> {
    let labels: Vec<String> = match labels {
        Some(l) if l.len() != inputs.len() => {
            return Err(PlanError::LabelCount {
                dim: dim.into(),
                labels: l.len(),
                files: inputs.len(),
            });
        }
        Some(l) => l.to_vec(),
        None => inputs
            .iter()
            .map(|i| file_name(&i.url).to_string())
            .collect(),
    };
    let ordered: Vec<&Input> = inputs.iter().collect();
    let skipped = check_same_variables(&ordered)?;
    for input in &ordered {
        if let Some((path, _)) = input
            .ds
            .arrays
            .iter()
            .find(|(_, a)| a.dimension_names.iter().any(|d| d == dim))
        {
            return Err(PlanError::NewDimExists {
                file: input.url.clone(),
                variable: path.clone(),
                dim: dim.into(),
            });
        }
    }
    // Dimension coordinates and their bounds are kept once.
    let mut once: BTreeSet<String> = BTreeSet::new();
    for (path, a) in &ordered[0].ds.arrays {
        if is_dim_coordinate(path, a) {
            once.insert(path.clone());
            if let Some(b) = attr_str(a, "bounds") {
                once.insert(join(parent(path), b));
            }
        }
    }
    // The references of the stacked variables leave the inputs here and each file's are
    // dropped once copied (see `take_manifests`).
    let stacked_paths: Vec<String> = ordered[0]
        .ds
        .arrays
        .keys()
        .filter(|p| !once.contains(*p))
        .cloned()
        .collect();
    let order: Vec<usize> = (0..inputs.len()).collect();
    let mut taken = take_manifests(&mut inputs, &order, stacked_paths);
    let ordered: Vec<&Input> = inputs.iter().collect();
    let urls: Vec<&str> = ordered.iter().map(|i| i.url.as_str()).collect();
    let first = &ordered[0].ds;
    let once_paths: Vec<String> = once.iter().cloned().collect();
    let pre = prefetch::gather(&inputs, &|_| Vec::new(), &|_| once_paths.clone(), reader);
    let mut out = base_dataset(&ordered, skipped);
    let mut report = PlanReport::default();
    let mut stacked = Vec::new();
    let nf = ordered.len() as u64;
    for path in first.arrays.keys() {
        let arrays = same_path(&ordered, path)?;
        if once.contains(path) {
            check_identical(path, &arrays, &urls, reader, pre.all_same(&ordered, path))?;
            report.kept_once.push(path.clone());
            out.arrays.insert(path.clone(), arrays[0].clone());
            continue;
        }
        let a0 = arrays[0];
        let reference = Version {
            url: &ordered[0].url,
            array: a0,
        };
        for (a, input) in arrays.iter().zip(&ordered).skip(1) {
            let other = Version {
                url: &input.url,
                array: a,
            };
            check_compatible(path, reference, other, None, &[])?;
        }
        let mut dims = vec![DimGrid::fixed(1, nf)?];
        dims.extend(a0.grid.dims().iter().cloned());
        let grid = ChunkGrid::new(dims);
        // (Taken above unless some file lacks the variable, which `same_path` reports.)
        let manifests = taken
            .remove(path)
            .unwrap_or_else(|| arrays.iter().map(|a| a.manifest.clone()).collect());
        let per = manifests[0].len();
        let stored = manifests.iter().map(ChunkManifest::stored).sum();
        let n = per
            .checked_mul(ordered.len())
            .ok_or_else(|| PlanError::TooManyChunks {
                variable: path.clone(),
            })?;
        let mut manifest = ChunkManifest::new_missing_expecting(n, stored);
        for (f, m) in manifests.into_iter().enumerate() {
            for (c, r) in m.iter_stored() {
                copy_ref(&mut manifest, f * per + c, r)?;
            }
        }
        let mut dimension_names = vec![dim.to_string()];
        dimension_names.extend(a0.dimension_names.iter().cloned());
        out.arrays.insert(
            path.clone(),
            VirtualArray {
                grid,
                manifest,
                dimension_names,
                ..a0.clone()
            },
        );
        stacked.push(path.clone());
    }
    if out.arrays.contains_key(dim) || out.groups.contains_key(dim) {
        return Err(PlanError::NewDimClash { dim: dim.into() });
    }
    out.arrays
        .insert(dim.to_string(), label_array(dim, &labels)?);
    stacked.push(dim.to_string());
    report.order = urls.iter().map(|u| u.to_string()).collect();
    report.concatenated = stacked.clone();
    let pieces = ordered
        .iter()
        .enumerate()
        .map(|(k, i)| ConcatPiece {
            url: i.url.clone(),
            start: k as u64,
            len: 1,
        })
        .collect();
    out.provenance = combined_provenance(
        &ordered,
        ConcatInfo {
            dim: dim.into(),
            order_by: None,
            new_dim: true,
            pieces,
            arrays: stacked,
            retimed: Vec::new(),
        },
    );
    Ok((out, report))
}
