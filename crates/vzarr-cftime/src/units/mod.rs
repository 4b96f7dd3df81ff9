//! CF time units: `<unit> since <reference date-time>`.
//!
//! This module holds the units and their unit names, and decodes and encodes values with
//! them; [`reference`](mod@reference) parses the reference date-time after `since`.

pub(crate) mod reference;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::calendar::Calendar;
use crate::datetime::{DateTime, Instant};
use crate::error::{CfTimeError, Result};
use crate::fields::{MAX_YEAR, MIN_YEAR};
use crate::num;

pub(crate) use reference::parse_reference;

/// The unit of a CF time coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// `microseconds`, `microsecond`, `microsec(s)`, `usec(s)`, `us`.
    Microseconds,
    /// `milliseconds`, `millisecond`, `millisec(s)`, `msec(s)`, `ms`.
    Milliseconds,
    /// `seconds`, `second`, `sec(s)`, `s`.
    Seconds,
    /// `minutes`, `minute`, `min(s)`.
    Minutes,
    /// `hours`, `hour`, `hr(s)`, `h`.
    Hours,
    /// `days`, `day`, `d`.
    Days,
    /// `months`, `month`: exactly 30 days; only for the `360_day` calendar.
    Months,
    /// `years`, `year`: exactly 360 days; only for the `360_day` calendar.
    Years,
    /// `common_years`, `common_year`: exactly 365 days; only for `noleap`/`365_day` (as in cftime).
    CommonYears,
}

impl TimeUnit {
    /// Parses a unit name (case-insensitive); calendar restrictions are checked by [`Units`].
    pub fn parse(name: &str) -> Option<TimeUnit> {
        let unit =
            match name.to_ascii_lowercase().as_str() {
                "microseconds" | "microsecond" | "microsec" | "microsecs" | "usec" | "usecs"
                | "us" => TimeUnit::Microseconds,
                "milliseconds" | "millisecond" | "millisec" | "millisecs" | "msec" | "msecs"
                | "ms" => TimeUnit::Milliseconds,
                "seconds" | "second" | "sec" | "secs" | "s" => TimeUnit::Seconds,
                "minutes" | "minute" | "min" | "mins" => TimeUnit::Minutes,
                "hours" | "hour" | "hr" | "hrs" | "h" => TimeUnit::Hours,
                "days" | "day" | "d" => TimeUnit::Days,
                "months" | "month" => TimeUnit::Months,
                "years" | "year" => TimeUnit::Years,
                "common_years" | "common_year" => TimeUnit::CommonYears,
                _ => return None,
            };
        Some(unit)
    }

    /// The canonical (plural) name, e.g. `days`.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Microseconds => "microseconds",
            TimeUnit::Milliseconds => "milliseconds",
            TimeUnit::Seconds => "seconds",
            TimeUnit::Minutes => "minutes",
            TimeUnit::Hours => "hours",
            TimeUnit::Days => "days",
            TimeUnit::Months => "months",
            TimeUnit::Years => "years",
            TimeUnit::CommonYears => "common_years",
        }
    }

    /// The exact length of the unit in microseconds.
    pub fn microseconds(self) -> u64 {
        const DAY: u64 = 86_400_000_000;
        match self {
            TimeUnit::Microseconds => 1,
            TimeUnit::Milliseconds => 1_000,
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Minutes => 60_000_000,
            TimeUnit::Hours => 3_600_000_000,
            TimeUnit::Days => DAY,
            TimeUnit::Months => 30 * DAY,
            TimeUnit::Years => 360 * DAY,
            TimeUnit::CommonYears => 365 * DAY,
        }
    }

    /// The exact length of the unit in nanoseconds.
    pub fn nanoseconds(self) -> i128 {
        i128::from(self.microseconds()) * 1000
    }

    /// Why this unit is refused for `calendar`, or `None` if it is allowed.
    fn refusal(self, calendar: Calendar) -> Option<String> {
        match self {
            TimeUnit::Months | TimeUnit::Years if calendar != Calendar::Day360 => Some(format!(
                "'{} since' is only supported for the 360_day calendar, where a month is exactly 30 days \
                 and a year 360 days; in the {calendar} calendar months and years vary in length, \
                 udunits would use a fixed 1/12 of 365.242198781 days and CF discourages these units",
                self.name()
            )),
            TimeUnit::CommonYears if calendar != Calendar::NoLeap => Some(format!(
                "'common_years since' is only supported for the noleap/365_day calendar, not {calendar}"
            )),
            _ => None,
        }
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parsed CF time units of one calendar: a unit and a reference instant (UTC).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Units {
    text: String,
    unit: TimeUnit,
    reference: Instant,
    utc_offset_minutes: i32,
}

/// Splits off the first whitespace-separated token.
fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(|ch: char| ch.is_whitespace()) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

impl Units {
    /// Parses `<unit> since <reference>` for `calendar` (see the crate docs for the accepted syntax).
    pub fn parse(text: &str, calendar: Calendar) -> Result<Units> {
        let fail = |reason: String| CfTimeError::InvalidUnits {
            units: text.to_string(),
            calendar,
            reason,
        };
        let (unit_tok, rest) = split_token(text);
        let (since_tok, reference) = split_token(rest);
        if unit_tok.is_empty() {
            return Err(fail(
                "empty units string (expected '<unit> since <date-time>')".into(),
            ));
        }
        if !since_tok.eq_ignore_ascii_case("since") {
            return Err(fail(
                "expected '<unit> since <date-time>' (no 'since' after the unit)".into(),
            ));
        }
        let unit = TimeUnit::parse(unit_tok).ok_or_else(|| {
            fail(format!(
                "unknown time unit {unit_tok:?} (expected days, hours, minutes, seconds, milliseconds, \
                 microseconds or an abbreviation such as d, h, hr, min, s, sec, ms, msec, us, usec)"
            ))
        })?;
        if let Some(reason) = unit.refusal(calendar) {
            return Err(fail(reason));
        }
        if reference.is_empty() {
            return Err(fail("missing reference date-time after 'since'".into()));
        }
        let p = parse_reference(reference).map_err(fail)?;
        let local = DateTime::checked(calendar, p.local).map_err(|e| match e {
            CfTimeError::InvalidDateTime { reason, .. } => fail(format!(
                "invalid reference date-time {reference:?}: {reason}"
            )),
            other => other,
        })?;
        let offset_ns = i128::from(p.utc_offset_minutes) * 60_000_000_000;
        let reference_instant = local
            .to_instant()
            .checked_add_nanos(-offset_ns)
            .map_err(|_| {
                fail(format!(
                    "the reference date-time in UTC is outside years {MIN_YEAR}..={MAX_YEAR}"
                ))
            })?;
        Ok(Units {
            text: text.to_string(),
            unit,
            reference: reference_instant,
            utc_offset_minutes: p.utc_offset_minutes,
        })
    }

    /// Units `<unit> since <reference>` (reference in UTC); errors if the unit is not allowed in the reference's calendar.
    pub fn new(unit: TimeUnit, reference: Instant) -> Result<Units> {
        let text = format!("{} since {}", unit.name(), reference.to_iso_string());
        if let Some(reason) = unit.refusal(reference.calendar()) {
            return Err(CfTimeError::InvalidUnits {
                units: text,
                calendar: reference.calendar(),
                reason,
            });
        }
        Ok(Units {
            text,
            unit,
            reference,
            utc_offset_minutes: 0,
        })
    }

    /// The units string as given to [`Units::parse`] (or the canonical form for [`Units::new`]).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The canonical form `<unit> since YYYY-MM-DD HH:MM:SS[.f]` with the reference in UTC.
    pub fn canonical(&self) -> String {
        format!(
            "{} since {}",
            self.unit.name(),
            self.reference.to_iso_string()
        )
    }

    /// The time unit.
    pub fn unit(&self) -> TimeUnit {
        self.unit
    }

    /// The calendar the units belong to.
    pub fn calendar(&self) -> Calendar {
        self.reference.calendar()
    }

    /// The reference instant (time zone offset already applied, i.e. UTC).
    pub fn reference(&self) -> Instant {
        self.reference
    }

    /// The reference as a UTC date-time.
    pub fn reference_datetime(&self) -> DateTime {
        self.reference.to_datetime()
    }

    /// The UTC offset written in the units string, in minutes (0 if none).
    pub fn utc_offset_minutes(&self) -> i32 {
        self.utc_offset_minutes
    }

    /// Whether both units encode every instant to the same number (same calendar, unit and UTC reference).
    pub fn is_equivalent(&self, other: &Units) -> bool {
        self.unit == other.unit && self.reference == other.reference
    }

    /// Decodes one value; `Ok(None)` for NaN or infinities. Rounds to the microsecond like cftime.
    pub fn decode_one(&self, value: f64) -> Result<Option<Instant>> {
        if !value.is_finite() {
            return Ok(None);
        }
        let out_of_range = || CfTimeError::OutOfRange {
            value,
            units: self.text.clone(),
            calendar: self.calendar(),
            min_year: MIN_YEAR,
            max_year: MAX_YEAR,
        };
        let snap = !matches!(self.unit, TimeUnit::Microseconds | TimeUnit::Milliseconds);
        let micros = num::scaled_round_micros(value, self.unit.microseconds(), snap)
            .ok_or_else(out_of_range)?;
        self.reference
            .checked_add_nanos(micros * 1000)
            .map(Some)
            .map_err(|_| out_of_range())
    }

    /// Encodes one instant as a number of units since the reference (correctly rounded f64).
    pub fn encode_one(&self, instant: &Instant) -> Result<f64> {
        if instant.calendar() != self.calendar() {
            return Err(CfTimeError::CalendarMismatch {
                context: format!("encoding instant {instant} with units {:?}", self.text),
                left: instant.calendar(),
                right: self.calendar(),
            });
        }
        let diff = instant.nanos_since_epoch() - self.reference.nanos_since_epoch();
        Ok(num::div_to_f64(diff, self.unit.nanoseconds()))
    }
}

impl fmt::Display for Units {
    /// Writes the canonical form (see [`Units::canonical`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}
