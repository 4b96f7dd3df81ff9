//! CF-conventions time coordinates (CF section 4.4): parse `units`/`calendar`, decode numbers to
//! exact instants, re-encode instants into other units. Pure Rust, no I/O.
//!
//! ```
//! use vzarr_cftime::{Calendar, Units, convert, decode};
//!
//! let cal = Calendar::parse("noleap")?;
//! let from = Units::parse("days since 2001-01-01", cal)?;
//! let to = Units::parse("hours since 2000-01-01 00:00:00", cal)?;
//! assert_eq!(convert(&[0.0, 1.5, f64::NAN], &from, &to)?[..2], [8760.0, 8796.0]);
//! let t = decode(&[58.5], &from)?[0].unwrap();
//! assert_eq!(t.to_iso_string(), "2001-02-28 12:00:00");
//! # Ok::<(), vzarr_cftime::CfTimeError>(())
//! ```
//!
//! # Behaviour (what a user should know)
//!
//! * **Reference implementation.** Results follow Python `cftime` (used by xarray) with its
//!   CF 1.9+ defaults: `standard`/`gregorian` and `julian` have no year 0 (year 1 is preceded
//!   by year -1 = 1 BC, and a reference in year 0 is refused, as cftime does);
//!   `proleptic_gregorian` and the idealized calendars have a year 0. `standard` is Julian up
//!   to 1582-10-04 and Gregorian from 1582-10-15; the ten days in between do not exist.
//! * **Decoding** computes `value × unit` exactly (no float rounding) and rounds it to the
//!   microsecond, half to even, exactly like cftime (including cftime's snap of results 1 µs
//!   away from a whole second onto that second for units of a second or longer). So decoded
//!   instants are µs-aligned (when the reference is) and float noise such as
//!   `1234.0416666666667 days` lands exactly on 01:00. NaN and ±infinity decode to `None`.
//! * **Encoding** computes `(instant − reference) / unit` exactly and rounds once to the
//!   nearest f64, so whole multiples convert to exact integers and other values are the
//!   correctly rounded quotient (identical to cftime's `date2num` for µs-aligned instants).
//! * **Instants** are exact: days since the calendar's 1970-01-01 plus nanoseconds into the
//!   day. The supported range is years [`MIN_YEAR`]..=[`MAX_YEAR`] in every calendar; values
//!   outside give [`CfTimeError::OutOfRange`], never an overflow.
//! * **Units**: days/day/d, hours/hour/hr/hrs/h, minutes/minute/min/mins,
//!   seconds/second/sec/secs/s, milliseconds/millisecond/millisec(s)/msec(s)/ms,
//!   microseconds/microsecond/microsec(s)/usec(s)/us, case-insensitive, followed by `since`.
//!   `months`/`years since` are accepted **only for `360_day`** (a month is exactly 30 days, a
//!   year 360 days) and refused otherwise: their length varies in real calendars, udunits
//!   defines a month as 1/12 of 365.242198781 days, and CF discourages them. (cftime accepts
//!   `months` for 360_day but no `years` at all.) `common_years` (exactly 365 days) is
//!   accepted for `noleap`/`365_day`, as in cftime.
//! * **Reference date-time**: `[+-]Y…-M[M]-D[D]`, optionally followed by a time
//!   `h[h]:m[m][:s[s][.fraction]]` separated by blanks or `T`, optionally followed by `Z`,
//!   `UTC`, `GMT` or a numeric offset `±h`, `±hh`, `±h:mm`, `±hh:mm`, `±hhmm` (with or without
//!   a blank before it). An offset means the written time is local time: the reference in UTC
//!   is the written time minus the offset (`00:00:00 +01:00` is 23:00 UTC the day before),
//!   which is what udunits and cftime do. Fractions are kept to the nanosecond (further digits
//!   are ignored). Anything else, including trailing text, is an error.
//!   Differences to cftime (which silently ignores what its regex does not match): cftime
//!   ignores one-digit offsets such as ` -6` (treats them as UTC) while this crate applies them
//!   as udunits does; cftime ignores a bare hour after the date (`2000-01-01 6`) while this
//!   crate refuses it as ambiguous; cftime ignores trailing garbage, this crate refuses it.
//! * **Calendars** are case-insensitive; `none`, `utc`, `tai` and unknown names are refused.
//!   A missing attribute means `standard` ([`Calendar::from_attribute`]).

#![forbid(unsafe_code)]

mod calendar;
mod datetime;
mod error;
mod fields;
mod num;
mod units;

pub use calendar::Calendar;
pub use datetime::{DateTime, Instant};
pub use error::{CfTimeError, Result};
pub use fields::{MAX_YEAR, MIN_YEAR};
pub use units::{TimeUnit, Units};

/// Decodes numeric time values into instants; non-finite values (NaN, ±inf) give `None`.
pub fn decode(values: &[f64], units: &Units) -> Result<Vec<Option<Instant>>> {
    values.iter().map(|&v| units.decode_one(v)).collect()
}

/// Encodes instants (or `Option<Instant>`, where `None` gives NaN) as numbers in `units`.
pub fn encode<T>(instants: &[T], units: &Units) -> Result<Vec<f64>>
where
    T: Copy + Into<Option<Instant>>,
{
    instants
        .iter()
        .map(|&i| match i.into() {
            Some(instant) => units.encode_one(&instant),
            None => Ok(f64::NAN),
        })
        .collect()
}

/// Re-encodes values from one units to another of the same calendar; non-finite values give NaN.
pub fn convert(values: &[f64], from: &Units, to: &Units) -> Result<Vec<f64>> {
    if from.calendar() != to.calendar() {
        return Err(CfTimeError::CalendarMismatch {
            context: format!(
                "converting from units {:?} to units {:?}",
                from.as_str(),
                to.as_str()
            ),
            left: from.calendar(),
            right: to.calendar(),
        });
    }
    values
        .iter()
        .map(|&v| match from.decode_one(v)? {
            Some(instant) => to.encode_one(&instant),
            None => Ok(f64::NAN),
        })
        .collect()
}
