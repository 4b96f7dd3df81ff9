//! CF time for the planner, over `vzarr-cftime`: recognising time coordinates, and the
//! coordinate and its bounds concatenated with each file's values re-encoded into one units
//! string, written inline.

use serde_json::json;
use vzarr_cftime::{Calendar, CfTimeError, Units};
use vzarr_core::{DataType, VirtualArray};
use vzarr_source::SourceStore;

use crate::compat::check_compatible;
use crate::error::PlanError;
use crate::inline::inline_array;
use crate::input::{Input, Version, attr_str, axis_of};
use crate::prefetch::{Prefetched, read_numbers};
use crate::values;

/// Whether a `units` attribute is a CF time units string (`<unit> since <date>`).
pub(crate) fn is_cf_time_units(units: &str) -> bool {
    units.to_ascii_lowercase().contains(" since ")
}

/// Whether two calendar attributes name the same calendar (`standard` = `gregorian`).
pub(crate) fn same_calendar(a: &str, b: &str) -> bool {
    match (Calendar::parse(a), Calendar::parse(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// Re-encodes `values` from `from` units to `to` units in `cal`.
pub(crate) fn convert(
    values: &[f64],
    from: &str,
    to: &str,
    cal: &str,
) -> Result<Vec<f64>, CfTimeError> {
    let c = Calendar::parse(cal)?;
    let f = Units::parse(from, c)?;
    let t = Units::parse(to, c)?;
    vzarr_cftime::convert(values, &f, &t)
}

/// A CF time encoding: the calendar and the units values are in.
#[derive(Clone, Debug)]
pub(crate) struct CfTime {
    /// The calendar attribute (`standard` when absent).
    pub(crate) calendar: String,
    /// The units string (`<unit> since <date>`).
    pub(crate) units: String,
}

impl CfTime {
    /// Checks that the units parse in the calendar.
    pub(crate) fn check(&self) -> Result<(), CfTimeError> {
        Units::parse(&self.units, Calendar::parse(&self.calendar)?).map(|_| ())
    }

    /// A value in these units as a date for messages, falling back to the number.
    pub(crate) fn describe(&self, v: f64) -> String {
        Calendar::parse(&self.calendar)
            .and_then(|c| Units::parse(&self.units, c))
            .and_then(|u| vzarr_cftime::decode(&[v], &u))
            .ok()
            .and_then(|d| d.first().copied().flatten())
            .map_or_else(|| format!("{v} {}", self.units), |i| i.to_iso_string())
    }
}

/// How per-file CF time values are re-encoded.
pub(crate) struct TimeEncoding<'a> {
    /// The common calendar and the units to encode into.
    pub(crate) target: &'a CfTime,
    /// Path of the coordinate that ordered the files (its bounds are re-encoded too).
    pub(crate) coord: &'a str,
    /// Each file's coordinate units (for bounds without units of their own).
    pub(crate) coord_units: Vec<&'a str>,
}

/// Concatenates per-file time coordinates (or their bounds) re-encoded into one units.
pub(crate) fn time_array(
    path: &str,
    arrays: &[&VirtualArray],
    inputs: &[&Input],
    dim: &str,
    enc: &TimeEncoding,
    reader: &dyn SourceStore,
    pre: &Prefetched,
) -> Result<VirtualArray, PlanError> {
    let first = arrays[0];
    let mut all = Vec::new();
    let mut extent = 0u64;
    let k = axis_of(first, dim).unwrap_or(0);
    if k != 0 {
        return Err(PlanError::TimeAxisNotFirst {
            file: inputs[0].url.clone(),
            variable: path.into(),
            dim: dim.into(),
        });
    }
    let reference = Version {
        url: &inputs[0].url,
        array: first,
    };
    for (j, (a, input)) in arrays.iter().zip(inputs).enumerate() {
        if j > 0 {
            let other = Version {
                url: &input.url,
                array: a,
            };
            check_compatible(path, reference, other, Some(k), &["units", "_FillValue"])?;
        }
        let v = read_numbers(input, path, a, reader, pre)?;
        let from = attr_str(a, "units").unwrap_or(enc.coord_units[j]);
        let target = enc.target;
        let conv = convert(&v, from, &target.units, &target.calendar).map_err(|source| {
            PlanError::Time {
                file: input.url.clone(),
                variable: path.into(),
                source,
            }
        })?;
        all.extend(conv);
        extent += a.shape()[k];
    }
    let mut shape = first.shape();
    shape[k] = extent;
    let dt = if first.data_type.is_float()
        || values::from_f64(&all, first.data_type.clone()).is_none()
    {
        if first.data_type == DataType::Float32
            && values::from_f64(&all, DataType::Float32).is_some()
        {
            DataType::Float32
        } else {
            DataType::Float64
        }
    } else {
        first.data_type.clone()
    };
    let raw = values::from_f64(&all, dt.clone()).expect("representable by construction");
    let mut out = inline_array(first, &shape, dt, raw)?;
    if out.attributes.contains_key("units") || path == enc.coord {
        out.attributes
            .insert("units".into(), json!(enc.target.units));
    }
    Ok(out)
}
