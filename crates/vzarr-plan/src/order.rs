//! Ordering files along an existing dimension: each file's length of the dimension, the
//! values of its coordinate decoded into one encoding (CF time with each file's own units),
//! the order of the files by those values, and the gaps and overlaps between neighbours.

use vzarr_core::{VirtualArray, VirtualDataset};
use vzarr_source::SourceStore;

use crate::error::{Boundary, FilePair, Gap, PlanError};
use crate::input::{Input, attr_str, axis_of};
use crate::prefetch::{Prefetched, read_numbers};
use crate::time::{self, CfTime};

/// Length of `dim` in a file, from its arrays (all must agree).
pub(crate) fn dim_len(input: &Input, dim: &str) -> Result<u64, PlanError> {
    let mut len = None;
    for (path, a) in &input.ds.arrays {
        if let Some(k) = axis_of(a, dim) {
            let n = a.shape()[k];
            match len {
                None => len = Some(n),
                Some(m) if m != n => {
                    return Err(PlanError::DimLength {
                        file: input.url.clone(),
                        variable: path.clone(),
                        dim: dim.to_string(),
                        len: n,
                        other: m,
                    });
                }
                Some(_) => {}
            }
        }
    }
    len.ok_or_else(|| PlanError::NoConcatDim {
        file: input.url.clone(),
        dim: dim.to_string(),
    })
}

/// The variable that orders files along `dim`: the array at path `by` when 1-D with `dim` as
/// its only dimension (`by` is `dim` itself unless an ordering variable was given).
pub(crate) fn coordinate<'a>(
    ds: &'a VirtualDataset,
    dim: &str,
    by: &str,
) -> Option<&'a VirtualArray> {
    ds.arrays.get(by).filter(|a| a.dimension_names == [dim])
}

/// The concatenation coordinate's values of every file, in one encoding.
pub(crate) struct Coordinate {
    /// Per file (input order), its values: in `time`'s units when CF time, else as stored.
    pub(crate) values: Vec<Vec<f64>>,
    /// CF time: the common calendar and the units the values are in.
    pub(crate) time: Option<CfTime>,
}

impl Coordinate {
    /// A value as a label for messages: a date for CF time, else the number.
    fn label(&self, v: f64) -> String {
        match &self.time {
            Some(t) => t.describe(v),
            None => format!("{v}"),
        }
    }
}

/// Reads the variable that orders files along `dim` (the array at path `by`: `dim`'s
/// coordinate variable unless an ordering variable was given, `ordering`) of every file;
/// `None` when no file has a coordinate variable and none was given. CF time values are
/// decoded with each file's units and re-encoded into the first file's.
pub(crate) fn coordinate_values(
    inputs: &[Input],
    dim: &str,
    by: &str,
    ordering: bool,
    reader: &dyn SourceStore,
    pre: &Prefetched,
) -> Result<Option<Coordinate>, PlanError> {
    if ordering {
        // A variable the user named must be what it has to be, in every file that has it.
        for input in inputs {
            if let Some(a) = input.ds.arrays.get(by)
                && a.dimension_names != [dim]
            {
                return Err(PlanError::OrderByNotAlongDim {
                    file: input.url.clone(),
                    variable: by.into(),
                    dim: dim.into(),
                    dims: a.dimension_names.clone(),
                });
            }
        }
    }
    let coords: Vec<Option<&VirtualArray>> =
        inputs.iter().map(|i| coordinate(&i.ds, dim, by)).collect();
    if coords.iter().all(Option::is_none) {
        if ordering {
            return Err(PlanError::OrderByMissing {
                variable: by.into(),
                dim: dim.into(),
            });
        }
        return Ok(None);
    }
    if let Some(pos) = coords.iter().position(Option::is_none) {
        let present = coords.iter().position(Option::is_some).unwrap_or(0);
        return Err(PlanError::MissingVariable {
            variable: by.into(),
            present: inputs[present].url.clone(),
            absent: inputs[pos].url.clone(),
            odd: inputs[pos].url.clone(),
        });
    }
    let coords: Vec<&VirtualArray> = coords.into_iter().flatten().collect();
    let is_time = |a: &VirtualArray| attr_str(a, "units").is_some_and(time::is_cf_time_units);
    let mut values = Vec::with_capacity(inputs.len());
    for (input, a) in inputs.iter().zip(&coords) {
        values.push(read_numbers(input, by, a, reader, pre)?);
    }
    if !coords.iter().any(|a| is_time(a)) {
        return Ok(Some(Coordinate { values, time: None }));
    }
    // CF time: every file needs units; calendars must agree.
    let calendar = |a: &VirtualArray| attr_str(a, "calendar").unwrap_or("standard").to_string();
    let cal0 = calendar(coords[0]);
    for (k, a) in coords.iter().enumerate() {
        if !is_time(a) {
            return Err(PlanError::NotCfTime {
                file: inputs[k].url.clone(),
                variable: by.into(),
            });
        }
        if !time::same_calendar(&calendar(a), &cal0) {
            return Err(PlanError::Mismatch {
                variable: by.into(),
                field: "calendar".into(),
                files: FilePair::new(&inputs[0].url, &inputs[k].url),
                detail: format!("{cal0:?} vs {:?}", calendar(a)),
            });
        }
    }
    let target = attr_str(coords[0], "units").unwrap_or_default().to_string();
    for (k, a) in coords.iter().enumerate() {
        let from = attr_str(a, "units").unwrap_or_default();
        values[k] =
            time::convert(&values[k], from, &target, &cal0).map_err(|source| PlanError::Time {
                file: inputs[k].url.clone(),
                variable: by.into(),
                source,
            })?;
    }
    Ok(Some(Coordinate {
        values,
        time: Some(CfTime {
            calendar: cal0,
            units: target,
        }),
    }))
}

/// The input positions in output order: by first coordinate value; files with no values
/// (zero records) go first, they add nothing.
pub(crate) fn by_first_value(cv: &Coordinate) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cv.values.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |k: usize| cv.values[k].first().copied().unwrap_or(f64::NEG_INFINITY);
        key(a).total_cmp(&key(b))
    });
    order
}

/// The last value of a file seen so far, while walking files in order.
struct End {
    /// Input position.
    file: usize,
    /// Its last coordinate value.
    last: f64,
}

/// Checks the ordered coordinate for overlaps (always an error) and gaps (an error unless
/// `allow_gaps`); returns the gaps found.
pub(crate) fn check_spacing(
    order: &[usize],
    inputs: &[Input],
    cv: &Coordinate,
    allow_gaps: bool,
) -> Result<Vec<Gap>, PlanError> {
    let mut within = 0.0f64;
    for v in &cv.values {
        for w in v.windows(2) {
            within = within.max(w[1] - w[0]);
        }
    }
    let firsts: Vec<f64> = order
        .iter()
        .filter_map(|&k| cv.values[k].first().copied())
        .collect();
    let step = if within > 0.0 {
        within
    } else {
        let mut diffs: Vec<f64> = firsts.windows(2).map(|w| w[1] - w[0]).collect();
        diffs.sort_by(f64::total_cmp);
        diffs.get(diffs.len() / 2).copied().unwrap_or(0.0)
    };
    let mut gaps = Vec::new();
    let mut prev: Option<End> = None;
    for &k in order {
        let v = &cv.values[k];
        let (Some(&first), Some(&last)) = (v.first(), v.last()) else {
            continue;
        };
        if let Some(End {
            file: p,
            last: prev_last,
        }) = prev
        {
            let boundary = || Boundary {
                files: FilePair::new(&inputs[p].url, &inputs[k].url),
                first_ends: cv.label(prev_last),
                second_starts: cv.label(first),
            };
            if first <= prev_last {
                return Err(PlanError::Overlap(boundary()));
            }
            if step > 0.0 && first - prev_last > 1.5 * step {
                let gap = Gap {
                    boundary: boundary(),
                    step,
                };
                if !allow_gaps {
                    return Err(PlanError::Gap(gap));
                }
                gaps.push(gap);
            }
        }
        prev = Some(End { file: k, last });
    }
    Ok(gaps)
}
