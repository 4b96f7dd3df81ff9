//! CF time handling for the planner, over `vzarr-cftime`.

use vzarr_cftime::{Calendar, Units};

/// Whether a `units` attribute is a CF time units string (`<unit> since <date>`).
pub(crate) fn is_cf_time_units(units: &str) -> bool {
    units.to_ascii_lowercase().contains(" since ")
}

fn calendar(name: &str) -> Result<Calendar, String> {
    Calendar::parse(name).map_err(|e| e.to_string())
}

/// Whether two calendar attributes name the same calendar (`standard` = `gregorian`).
pub(crate) fn same_calendar(a: &str, b: &str) -> bool {
    match (Calendar::parse(a), Calendar::parse(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// Checks that `units` parse in `calendar`.
pub(crate) fn check_units(units: &str, cal: &str) -> Result<(), String> {
    Units::parse(units, calendar(cal)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Re-encodes `values` from `from` units to `to` units in `cal`.
pub(crate) fn convert(values: &[f64], from: &str, to: &str, cal: &str) -> Result<Vec<f64>, String> {
    let c = calendar(cal)?;
    let f = Units::parse(from, c).map_err(|e| e.to_string())?;
    let t = Units::parse(to, c).map_err(|e| e.to_string())?;
    vzarr_cftime::convert(values, &f, &t).map_err(|e| e.to_string())
}

/// A value in `units` as a date for messages, falling back to the number.
pub(crate) fn describe(v: f64, units: &str, cal: &str) -> String {
    calendar(cal)
        .and_then(|c| Units::parse(units, c).map_err(|e| e.to_string()))
        .and_then(|u| vzarr_cftime::decode(&[v], &u).map_err(|e| e.to_string()))
        .ok()
        .and_then(|d| d.first().copied().flatten())
        .map_or_else(|| format!("{v} {units}"), |i| i.to_iso_string())
}
