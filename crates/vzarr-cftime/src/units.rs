//! CF time units: `<unit> since <reference date-time>`.

use std::fmt;

use crate::calendar::Calendar;
use crate::datetime::{DateTime, Instant, MAX_YEAR, MIN_YEAR};
use crate::error::{CfTimeError, Result};
use crate::num;

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

/// Fields of a reference date-time as written (local time) plus its UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedReference {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) hour: u32,
    pub(crate) minute: u32,
    pub(crate) second: u32,
    pub(crate) nanosecond: u32,
    pub(crate) utc_offset_minutes: i32,
}

/// A byte cursor over ASCII text.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }
    fn peek_at(&self, k: usize) -> Option<u8> {
        self.text.as_bytes().get(self.pos + k).copied()
    }
    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
        self.pos > start
    }
    /// The unread rest (always at a char boundary: only ASCII bytes are consumed).
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }
    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }
    /// Reads a run of ASCII digits: (value, count). Values over 18 digits saturate.
    fn digits(&mut self) -> (u64, usize) {
        let mut v: u64 = 0;
        let mut n = 0;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            v = v.saturating_mul(10).saturating_add(u64::from(b - b'0'));
            n += 1;
            self.pos += 1;
        }
        (v, n)
    }
    /// Reads 1 or 2 digits of a named field.
    fn field(&mut self, name: &str, max_digits: usize) -> std::result::Result<u32, String> {
        let (v, n) = self.digits();
        if n == 0 {
            return Err(format!("expected {name} digits at {:?}", self.rest()));
        }
        if n > max_digits {
            return Err(format!("{name} has more than {max_digits} digits"));
        }
        // Lossless: at most 2 digits.
        Ok(v as u32)
    }
}

/// Parses a reference date-time: `[+-]Y...-M[M]-D[D]`, then optionally `( +|T)h[h]:m[m][:s[s][.f...]]`, then optionally ` Z`, ` UTC`, ` GMT` or a numeric offset `±h[h][[:]mm]` (only after a time of day).
pub(crate) fn parse_reference(text: &str) -> std::result::Result<ParsedReference, String> {
    let mut c = Cursor {
        text: text.trim(),
        pos: 0,
    };
    if c.at_end() {
        return Err("missing reference date-time".into());
    }
    let negative = if c.eat(b'-') {
        true
    } else {
        c.eat(b'+');
        false
    };
    let (y, ny) = c.digits();
    if ny == 0 {
        return Err(format!("expected a date YYYY-MM-DD, found {:?}", c.text));
    }
    if ny > 7 || y > MAX_YEAR.unsigned_abs().into() {
        return Err(format!(
            "year is outside the supported range {MIN_YEAR}..={MAX_YEAR}"
        ));
    }
    // Lossless: y <= 1_000_000.
    let year = if negative { -(y as i64) } else { y as i64 };
    if !c.eat(b'-') {
        return Err(format!(
            "expected '-' and a month after the year (a date is YYYY-MM-DD) at {:?}",
            c.rest()
        ));
    }
    let month = c.field("month", 2)?;
    if !c.eat(b'-') {
        return Err(format!(
            "expected '-' and a day after the month (a date is YYYY-MM-DD) at {:?}",
            c.rest()
        ));
    }
    let day = c.field("day", 2)?;
    let mut r = ParsedReference {
        year,
        month,
        day,
        hour: 0,
        minute: 0,
        second: 0,
        nanosecond: 0,
        utc_offset_minutes: 0,
    };

    // Time of day.
    let mut has_time = false;
    let t_sep =
        matches!(c.peek(), Some(b'T' | b't')) && c.peek_at(1).is_some_and(|b| b.is_ascii_digit());
    if t_sep {
        c.pos += 1;
    } else {
        let save = c.pos;
        c.skip_ws();
        if !c.peek().is_some_and(|b| b.is_ascii_digit()) {
            c.pos = save;
        }
    }
    if c.peek().is_some_and(|b| b.is_ascii_digit()) {
        has_time = true;
        r.hour = c.field("hour", 2)?;
        if !c.eat(b':') {
            return Err(format!(
                "expected hh:mm after the date, found {:?} (a bare number after the date is ambiguous: \
                 udunits reads it as a packed clock, cftime ignores it)",
                c.rest()
            ));
        }
        r.minute = c.field("minute", 2)?;
        if c.eat(b':') {
            r.second = c.field("second", 2)?;
            if c.eat(b'.') {
                let start = c.pos;
                while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                    c.pos += 1;
                }
                let frac = &c.text[start..c.pos];
                if frac.is_empty() {
                    return Err("expected digits after the decimal point of the seconds".into());
                }
                // Nanosecond resolution: further digits are ignored (truncation).
                let mut ns: u32 = 0;
                for k in 0..9 {
                    let d = frac.as_bytes().get(k).map_or(0, |b| u32::from(b - b'0'));
                    ns = ns * 10 + d;
                }
                r.nanosecond = ns;
            }
        }
    }

    // Time zone.
    c.skip_ws();
    if !c.at_end() {
        let rest = c.rest();
        let lower = rest.get(..3).map(str::to_ascii_lowercase);
        if matches!(lower.as_deref(), Some("utc" | "gmt")) {
            c.pos += 3;
        } else if matches!(c.peek(), Some(b'Z' | b'z')) {
            c.pos += 1;
        } else if matches!(c.peek(), Some(b'+' | b'-')) {
            if !has_time {
                return Err(format!(
                    "a signed number right after the date ({rest:?}) is ambiguous (udunits reads it as a \
                     packed clock); write a time of day before a time-zone offset, e.g. '00:00:00 {rest}'"
                ));
            }
            let sign = if c.eat(b'-') {
                -1
            } else {
                c.eat(b'+');
                1
            };
            let (v, n) = c.digits();
            let (hours, minutes) = match n {
                1 | 2 => {
                    let m = if c.eat(b':') {
                        c.field("offset minute", 2)?
                    } else {
                        0
                    };
                    (v, u64::from(m))
                }
                3 | 4 => (v / 100, v % 100),
                _ => {
                    return Err(format!(
                        "invalid time-zone offset {rest:?} (expected ±h, ±hh, ±hh:mm or ±hhmm)"
                    ));
                }
            };
            if hours > 23 || minutes > 59 {
                return Err(format!("time-zone offset {rest:?} is out of range"));
            }
            // Lossless: hours <= 23, minutes <= 59.
            r.utc_offset_minutes = sign * (hours * 60 + minutes) as i32;
        } else {
            return Err(format!("unexpected text {rest:?} after the date-time"));
        }
        c.skip_ws();
        if !c.at_end() {
            return Err(format!(
                "unexpected text {:?} after the time zone",
                c.rest()
            ));
        }
    }
    Ok(r)
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
        let local = DateTime::checked(
            calendar,
            p.year,
            p.month,
            p.day,
            p.hour,
            p.minute,
            p.second,
            p.nanosecond,
        )
        .map_err(|e| match e {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(units: &str, cal: Calendar) -> String {
        Units::parse(units, cal).unwrap().canonical()
    }

    #[test]
    fn accepted_unit_names() {
        let cal = Calendar::Standard;
        for (name, unit) in [
            ("days", TimeUnit::Days),
            ("day", TimeUnit::Days),
            ("d", TimeUnit::Days),
            ("DAYS", TimeUnit::Days),
            ("Days", TimeUnit::Days),
            ("hours", TimeUnit::Hours),
            ("hour", TimeUnit::Hours),
            ("hr", TimeUnit::Hours),
            ("hrs", TimeUnit::Hours),
            ("h", TimeUnit::Hours),
            ("minutes", TimeUnit::Minutes),
            ("minute", TimeUnit::Minutes),
            ("min", TimeUnit::Minutes),
            ("mins", TimeUnit::Minutes),
            ("seconds", TimeUnit::Seconds),
            ("second", TimeUnit::Seconds),
            ("sec", TimeUnit::Seconds),
            ("secs", TimeUnit::Seconds),
            ("s", TimeUnit::Seconds),
            ("milliseconds", TimeUnit::Milliseconds),
            ("millisecond", TimeUnit::Milliseconds),
            ("msec", TimeUnit::Milliseconds),
            ("msecs", TimeUnit::Milliseconds),
            ("ms", TimeUnit::Milliseconds),
            ("microseconds", TimeUnit::Microseconds),
            ("microsecond", TimeUnit::Microseconds),
            ("usec", TimeUnit::Microseconds),
            ("usecs", TimeUnit::Microseconds),
            ("us", TimeUnit::Microseconds),
            ("US", TimeUnit::Microseconds),
        ] {
            let u = Units::parse(&format!("{name} since 2000-01-01"), cal).unwrap();
            assert_eq!(u.unit(), unit, "{name}");
            let u = Units::parse(&format!("  {name}   SINCE\t2000-01-01  "), cal).unwrap();
            assert_eq!(u.unit(), unit, "{name}");
        }
    }

    #[test]
    fn reference_formats() {
        let s = Calendar::Standard;
        for (text, expect) in [
            ("days since 2000-01-01", "days since 2000-01-01 00:00:00"),
            ("days since 2000-1-1", "days since 2000-01-01 00:00:00"),
            (
                "days since 2000-01-01 00:00:00",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01T00:00:00",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01t06:30",
                "days since 2000-01-01 06:30:00",
            ),
            (
                "days since 2000-01-01 6:5:4",
                "days since 2000-01-01 06:05:04",
            ),
            (
                "days since 2000-01-01 00:00:00.5",
                "days since 2000-01-01 00:00:00.500000",
            ),
            (
                "days since 2000-01-01 00:00:00.000000001",
                "days since 2000-01-01 00:00:00.000000001",
            ),
            (
                "days since 2000-01-01 00:00:00.1234567899",
                "days since 2000-01-01 00:00:00.123456789",
            ),
            (
                "days since 2000-01-01 00:00:00.0",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00Z",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01T00:00:00Z",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 Z",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 UTC",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00.0 utc",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 UTC",
                "days since 2000-01-01 00:00:00",
            ),
            ("days since 2000-01-01Z", "days since 2000-01-01 00:00:00"),
            (
                "days since 2000-01-01 00:00:00 GMT",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00+01:00",
                "days since 1999-12-31 23:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 +01:00",
                "days since 1999-12-31 23:00:00",
            ),
            (
                "days since 2000-01-01T00:00:00+0100",
                "days since 1999-12-31 23:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 -0600",
                "days since 2000-01-01 06:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 -06:00",
                "days since 2000-01-01 06:00:00",
            ),
            (
                "days since 2000-01-01 00:00:00 -6",
                "days since 2000-01-01 06:00:00",
            ),
            (
                "days since 2000-01-01 00:00 +5:30",
                "days since 1999-12-31 18:30:00",
            ),
            (
                "days since 2000-01-01 00:00 +530",
                "days since 1999-12-31 18:30:00",
            ),
            (
                "days since 2000-01-01 00:00:00 +00:00",
                "days since 2000-01-01 00:00:00",
            ),
            (
                "hours since 1800-01-01 00:00:0.0",
                "hours since 1800-01-01 00:00:00",
            ),
            (
                "seconds since 1970-01-01 00:00:00 +0000",
                "seconds since 1970-01-01 00:00:00",
            ),
            (
                "minutes since 2018-01-01T00:00:00.000Z",
                "minutes since 2018-01-01 00:00:00",
            ),
            (
                "days since 1850-1-1 0:0:0",
                "days since 1850-01-01 00:00:00",
            ),
            ("days since +2000-01-01", "days since 2000-01-01 00:00:00"),
            ("days since 12000-01-01", "days since 12000-01-01 00:00:00"),
            ("days since 1-1-1", "days since 0001-01-01 00:00:00"),
            (
                "days since 0001-01-01 00:00:00",
                "days since 0001-01-01 00:00:00",
            ),
            (
                "days since -4712-01-01 12:00:00",
                "days since -4712-01-01 12:00:00",
            ),
            (
                "days since 1582-10-15 00:00:00",
                "days since 1582-10-15 00:00:00",
            ),
            (
                "days since 1582-10-15 00:00:00 +01:00",
                "days since 1582-10-04 23:00:00",
            ),
        ] {
            assert_eq!(utc(text, s), expect, "{text}");
        }
        let u = Units::parse("hours since 2000-01-01 00:00:00 -6", s).unwrap();
        assert_eq!(u.utc_offset_minutes(), -360);
        assert_eq!(u.as_str(), "hours since 2000-01-01 00:00:00 -6");
        assert_eq!(u.to_string(), "hours since 2000-01-01 06:00:00");
        // Year zero and negative years where the calendar has them.
        assert_eq!(
            utc("days since 0000-01-01", Calendar::ProlepticGregorian),
            "days since 0000-01-01 00:00:00"
        );
        assert_eq!(
            utc("days since 0-1-1", Calendar::Day360),
            "days since 0000-01-01 00:00:00"
        );
        assert_eq!(
            utc("days since -101-02-29", Calendar::Julian),
            "days since -0101-02-29 00:00:00"
        );
        assert_eq!(
            utc("days since 2000-02-30", Calendar::Day360),
            "days since 2000-02-30 00:00:00"
        );
        assert_eq!(
            utc("days since 2001-02-29", Calendar::AllLeap),
            "days since 2001-02-29 00:00:00"
        );
    }

    #[test]
    fn refused_units_have_clear_errors() {
        let s = Calendar::Standard;
        for (text, cal, needle) in [
            ("", s, "empty"),
            ("   ", s, "empty"),
            ("days", s, "since"),
            ("days after 2000-01-01", s, "since"),
            ("days since", s, "missing reference"),
            ("days since   ", s, "missing reference"),
            ("fortnights since 2000-01-01", s, "unknown time unit"),
            ("days since yesterday", s, "expected a date"),
            ("days since 2000", s, "month"),
            ("days since 2000-01", s, "day"),
            ("days since 2000-13-01", s, "month 13"),
            ("days since 2001-02-29", s, "day 29"),
            ("days since 2000-02-29", Calendar::NoLeap, "day 29"),
            ("days since 2000-01-31", Calendar::Day360, "day 31"),
            ("days since 1582-10-10", s, "do not exist"),
            ("days since 0000-01-01", s, "year 0"),
            ("days since 0000-01-01", Calendar::Julian, "year 0"),
            ("days since 2000-01-01 24:00:00", s, "hour 24"),
            ("days since 2000-01-01 00:60:00", s, "minute 60"),
            ("days since 2000-01-01 00:00:60", s, "second 60"),
            ("days since 2000-01-01 6", s, "ambiguous"),
            ("days since 2000-01-01 -6", s, "ambiguous"),
            ("days since 2000-01-01 00:00:00 +25:00", s, "out of range"),
            ("days since 2000-01-01 00:00:00 +01:75", s, "out of range"),
            (
                "days since 2000-01-01 00:00:00 +123456",
                s,
                "invalid time-zone",
            ),
            ("days since 2000-01-01 00:00:00 +", s, "invalid time-zone"),
            ("days since 2000-01-01 00:00:00 CET", s, "unexpected text"),
            (
                "days since 2000-01-01 00:00:00 UTC junk",
                s,
                "unexpected text",
            ),
            ("days since 2000-01-01 00:00:00.", s, "decimal point"),
            ("days since 2000-01-01 00:", s, "minute"),
            ("days since 2000-001-01", s, "more than 2 digits"),
            ("days since 99999999-01-01", s, "supported range"),
            ("days since 1000001-01-01", s, "supported range"),
            (
                "days since 1000000-12-31 23:00:00 -06:00",
                s,
                "outside years",
            ),
            ("months since 2000-01-01", s, "360_day"),
            ("months since 2000-01-01", Calendar::NoLeap, "360_day"),
            (
                "years since 2000-01-01",
                Calendar::ProlepticGregorian,
                "365.242198781",
            ),
            ("common_years since 2000-01-01", s, "noleap"),
            ("days since 2000-01-01 ünïcode", s, "unexpected text"),
            ("däys since 2000-01-01", s, "unknown time unit"),
        ] {
            let err = Units::parse(text, cal).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(needle), "{text:?}: {msg}");
            assert!(msg.contains(&format!("{text:?}")), "{text:?}: {msg}");
            assert!(
                matches!(err, CfTimeError::InvalidUnits { .. }),
                "{text:?}: {err:?}"
            );
        }
    }

    #[test]
    fn months_and_years_in_360_day() {
        let cal = Calendar::Day360;
        let u = Units::parse("months since 2000-01-01", cal).unwrap();
        assert_eq!(u.unit(), TimeUnit::Months);
        assert_eq!(
            u.decode_one(13.5).unwrap().unwrap().to_iso_string(),
            "2001-02-16 00:00:00"
        );
        let y = Units::parse("years since 2000-01-01", cal).unwrap();
        assert_eq!(
            y.decode_one(-1.25).unwrap().unwrap().to_iso_string(),
            "1998-10-01 00:00:00"
        );
        let c = Units::parse("common_years since 2000-01-01", Calendar::NoLeap).unwrap();
        assert_eq!(
            c.decode_one(2.0).unwrap().unwrap().to_iso_string(),
            "2002-01-01 00:00:00"
        );
        assert!(Units::new(TimeUnit::Months, u.reference()).is_ok());
        let std_ref = DateTime::from_ymd(Calendar::Standard, 2000, 1, 1)
            .unwrap()
            .to_instant();
        assert!(Units::new(TimeUnit::Months, std_ref).is_err());
    }

    #[test]
    fn new_and_equivalence() {
        let cal = Calendar::Standard;
        let r = DateTime::from_ymd_hms(cal, 1999, 12, 31, 23, 0, 0)
            .unwrap()
            .to_instant();
        let a = Units::new(TimeUnit::Hours, r).unwrap();
        assert_eq!(a.as_str(), "hours since 1999-12-31 23:00:00");
        let b = Units::parse("hours since 2000-01-01T00:00:00+01:00", cal).unwrap();
        assert!(a.is_equivalent(&b));
        assert_ne!(a, b);
        let c = Units::parse("h since 2000-01-01", cal).unwrap();
        assert!(!a.is_equivalent(&c));
        assert_eq!(
            b.reference_datetime().to_iso_string(),
            "1999-12-31 23:00:00"
        );
    }
}
