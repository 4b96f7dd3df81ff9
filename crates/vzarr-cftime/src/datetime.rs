//! Calendar dates ([`DateTime`]) and exact points in time ([`Instant`]).

use std::cmp::Ordering;
use std::fmt;

use crate::calendar::Calendar;
use crate::error::{CfTimeError, Result};
use crate::fields::{Fields, MAX_YEAR, MIN_YEAR};

/// Nanoseconds in a day.
pub(crate) const NANOS_PER_DAY: i128 = 86_400_000_000_000;

/// A calendar date and time of day (UTC, no time zone) that is valid in its calendar.
///
/// Years follow the calendar's CF numbering: `standard` and `julian` have no year 0 (year 1 is
/// preceded by year -1 = 1 BC); the other calendars have a year 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateTime {
    calendar: Calendar,
    year: i32,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    nanosecond: u32,
}

impl DateTime {
    /// Midnight of a date; errors if the date does not exist in the calendar.
    pub fn from_ymd(calendar: Calendar, year: i32, month: u32, day: u32) -> Result<DateTime> {
        DateTime::from_ymd_hms(calendar, year, month, day, 0, 0, 0)
    }

    /// A date and time of day (whole seconds); errors if it does not exist in the calendar.
    pub fn from_ymd_hms(
        calendar: Calendar,
        year: i32,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
        second: u32,
    ) -> Result<DateTime> {
        let fields = Fields {
            year: year.into(),
            month,
            day,
            hour,
            minute,
            second,
            nanosecond: 0,
        };
        Self::checked(calendar, fields)
    }

    /// The same date-time with the fraction of the second set to `nanosecond` (0..1e9).
    pub fn with_nanosecond(self, nanosecond: u32) -> Result<DateTime> {
        Self::checked(
            self.calendar,
            Fields {
                nanosecond,
                ..self.fields()
            },
        )
    }

    /// Parses `YYYY-MM-DD[( |T)hh:mm[:ss[.f...]]][ Z|UTC|±hh[:mm]]` (the syntax of a units reference); offsets are applied, the result is UTC.
    pub fn parse(text: &str, calendar: Calendar) -> Result<DateTime> {
        let parsed = crate::units::reference::parse_reference(text).map_err(|reason| {
            CfTimeError::InvalidDateTime {
                text: text.to_string(),
                calendar,
                reason,
            }
        })?;
        let local = DateTime::checked(calendar, parsed.local).map_err(|e| match e {
            CfTimeError::InvalidDateTime { reason, .. } => CfTimeError::InvalidDateTime {
                text: text.to_string(),
                calendar,
                reason,
            },
            other => other,
        })?;
        let offset_ns = i128::from(parsed.utc_offset_minutes) * 60_000_000_000;
        let utc = local
            .to_instant()
            .checked_add_nanos(-offset_ns)
            .map_err(|_| CfTimeError::InvalidDateTime {
                text: text.to_string(),
                calendar,
                reason: format!(
                    "after applying the time-zone offset the date-time is outside years {MIN_YEAR}..={MAX_YEAR}"
                ),
            })?;
        Ok(utc.to_datetime())
    }

    /// Validating constructor over wide integer fields (used by parsers).
    pub(crate) fn checked(calendar: Calendar, fields: Fields) -> Result<DateTime> {
        let fail = |reason: String| CfTimeError::InvalidDateTime {
            text: fields.to_iso_string(),
            calendar,
            reason,
        };
        let Fields {
            year,
            month,
            day,
            hour,
            minute,
            second,
            nanosecond,
        } = fields;
        if year < i64::from(MIN_YEAR) || year > i64::from(MAX_YEAR) {
            return Err(fail(format!(
                "year {year} is outside the supported range {MIN_YEAR}..={MAX_YEAR}"
            )));
        }
        if year == 0 && !calendar.has_year_zero() {
            return Err(fail(format!(
                "year 0 does not exist in the {calendar} calendar (year 1 is preceded by year -1)"
            )));
        }
        if !(1..=12).contains(&month) {
            return Err(fail(format!("month {month} is not in 1..=12")));
        }
        let dim = calendar.days_in_month(year, month);
        if day < 1 || day > dim {
            return Err(fail(format!(
                "day {day} is not in 1..={dim} for month {month} of year {year}"
            )));
        }
        if calendar == Calendar::Standard && year == 1582 && month == 10 && (5..=14).contains(&day)
        {
            return Err(fail(
                "1582-10-05..1582-10-14 do not exist in the standard (mixed Julian/Gregorian) calendar".into(),
            ));
        }
        if hour > 23 {
            return Err(fail(format!("hour {hour} is not in 0..=23")));
        }
        if minute > 59 {
            return Err(fail(format!("minute {minute} is not in 0..=59")));
        }
        if second > 59 {
            return Err(fail(format!(
                "second {second} is not in 0..=59 (CF calendars have no leap seconds)"
            )));
        }
        if nanosecond >= 1_000_000_000 {
            return Err(fail(format!("nanosecond {nanosecond} is not below 1e9")));
        }
        // The casts are lossless after the checks above.
        Ok(DateTime {
            calendar,
            year: year as i32,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            nanosecond,
        })
    }

    /// The calendar this date belongs to.
    pub fn calendar(&self) -> Calendar {
        self.calendar
    }
    /// The year in the calendar's CF numbering.
    pub fn year(&self) -> i32 {
        self.year
    }
    /// The month, 1..=12.
    pub fn month(&self) -> u32 {
        self.month.into()
    }
    /// The day of the month, 1..=31.
    pub fn day(&self) -> u32 {
        self.day.into()
    }
    /// The hour, 0..=23.
    pub fn hour(&self) -> u32 {
        self.hour.into()
    }
    /// The minute, 0..=59.
    pub fn minute(&self) -> u32 {
        self.minute.into()
    }
    /// The whole second, 0..=59.
    pub fn second(&self) -> u32 {
        self.second.into()
    }
    /// The fraction of the second in nanoseconds, 0..1e9.
    pub fn nanosecond(&self) -> u32 {
        self.nanosecond
    }
    /// The fraction of the second in whole microseconds (truncated), 0..1e6.
    pub fn microsecond(&self) -> u32 {
        self.nanosecond / 1000
    }
    /// The second including its fraction, as f64 (for display; use [`DateTime::nanosecond`] for exact work).
    pub fn fractional_second(&self) -> f64 {
        f64::from(self.second) + f64::from(self.nanosecond) / 1e9
    }

    /// The exact instant of this date-time.
    pub fn to_instant(&self) -> Instant {
        let days =
            self.calendar
                .days_from_date(i64::from(self.year), self.month.into(), self.day.into());
        let nanos = ((u64::from(self.hour) * 60 + u64::from(self.minute)) * 60
            + u64::from(self.second))
            * 1_000_000_000
            + u64::from(self.nanosecond);
        Instant {
            calendar: self.calendar,
            days,
            nanos,
        }
    }

    /// `YYYY-MM-DD HH:MM:SS` plus `.ffffff` (or 9 digits) when there is a fraction; negative years as `-YYYY`.
    pub fn to_iso_string(&self) -> String {
        self.fields().to_iso_string()
    }

    /// The fields of this date-time, widened.
    fn fields(&self) -> Fields {
        Fields {
            year: self.year.into(),
            month: self.month.into(),
            day: self.day.into(),
            hour: self.hour.into(),
            minute: self.minute.into(),
            second: self.second.into(),
            nanosecond: self.nanosecond,
        }
    }

    /// Key for ordering within one calendar.
    fn key(&self) -> (i32, u8, u8, u8, u8, u8, u32) {
        (
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.nanosecond,
        )
    }
}

impl PartialOrd for DateTime {
    /// Chronological order; `None` between date-times of different calendars.
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (self.calendar == other.calendar).then(|| self.key().cmp(&other.key()))
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso_string())
    }
}

/// An exact point in time of one calendar: days since the calendar's 1970-01-01 plus nanoseconds into the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Instant {
    calendar: Calendar,
    days: i64,
    nanos: u64,
}

impl Instant {
    /// The first supported day (`MIN_YEAR`-01-01) of a calendar, as days since its 1970-01-01.
    fn min_days(calendar: Calendar) -> i64 {
        calendar.days_from_date(MIN_YEAR.into(), 1, 1)
    }

    /// The last supported day (`MAX_YEAR`-12-31) of a calendar, as days since its 1970-01-01.
    fn max_days(calendar: Calendar) -> i64 {
        calendar.days_from_date(i64::from(MAX_YEAR) + 1, 1, 1) - 1
    }

    /// The earliest supported instant of a calendar (`MIN_YEAR`-01-01 00:00:00).
    pub fn min(calendar: Calendar) -> Instant {
        Instant {
            calendar,
            days: Self::min_days(calendar),
            nanos: 0,
        }
    }

    /// The latest supported instant of a calendar (`MAX_YEAR`-12-31 23:59:59.999999999).
    pub fn max(calendar: Calendar) -> Instant {
        Instant {
            calendar,
            days: Self::max_days(calendar),
            nanos: (NANOS_PER_DAY - 1) as u64,
        }
    }

    /// Builds an instant from days since the calendar's 1970-01-01 and nanoseconds into the day (< 86400e9).
    pub fn from_parts(
        calendar: Calendar,
        days_since_epoch: i64,
        nanos_of_day: u64,
    ) -> Result<Instant> {
        if i128::from(nanos_of_day) >= NANOS_PER_DAY {
            return Err(CfTimeError::InstantOutOfRange {
                what: format!("nanoseconds of day {nanos_of_day}"),
                calendar,
                min_year: MIN_YEAR,
                max_year: MAX_YEAR,
            });
        }
        Self::from_nanos_since_epoch(
            calendar,
            i128::from(days_since_epoch) * NANOS_PER_DAY + i128::from(nanos_of_day),
        )
    }

    /// Builds an instant from nanoseconds since the calendar's 1970-01-01 00:00:00.
    pub fn from_nanos_since_epoch(calendar: Calendar, nanos: i128) -> Result<Instant> {
        let days = nanos.div_euclid(NANOS_PER_DAY);
        let in_range = days >= i128::from(Self::min_days(calendar))
            && days <= i128::from(Self::max_days(calendar));
        if !in_range {
            return Err(CfTimeError::InstantOutOfRange {
                what: format!("{nanos} ns since 1970-01-01"),
                calendar,
                min_year: MIN_YEAR,
                max_year: MAX_YEAR,
            });
        }
        // Lossless: days is within the supported range, the remainder within one day.
        Ok(Instant {
            calendar,
            days: days as i64,
            nanos: nanos.rem_euclid(NANOS_PER_DAY) as u64,
        })
    }

    /// The calendar of this instant.
    pub fn calendar(&self) -> Calendar {
        self.calendar
    }

    /// Whole days since the calendar's 1970-01-01 (floor).
    pub fn days_since_epoch(&self) -> i64 {
        self.days
    }

    /// Nanoseconds since the start of the day, 0..86400e9.
    pub fn nanos_of_day(&self) -> u64 {
        self.nanos
    }

    /// Nanoseconds since the calendar's 1970-01-01 00:00:00 (exact).
    pub fn nanos_since_epoch(&self) -> i128 {
        i128::from(self.days) * NANOS_PER_DAY + i128::from(self.nanos)
    }

    /// This instant shifted by `nanos` (may be negative); errors outside the supported range.
    pub fn checked_add_nanos(&self, nanos: i128) -> Result<Instant> {
        let total = self.nanos_since_epoch().checked_add(nanos).ok_or_else(|| {
            CfTimeError::InstantOutOfRange {
                what: format!("{self} + {nanos} ns"),
                calendar: self.calendar,
                min_year: MIN_YEAR,
                max_year: MAX_YEAR,
            }
        })?;
        Self::from_nanos_since_epoch(self.calendar, total).map_err(|_| {
            CfTimeError::InstantOutOfRange {
                what: format!("{self} + {nanos} ns"),
                calendar: self.calendar,
                min_year: MIN_YEAR,
                max_year: MAX_YEAR,
            }
        })
    }

    /// Exact nanoseconds from `earlier` to `self`; errors if the calendars differ.
    pub fn nanos_since(&self, earlier: &Instant) -> Result<i128> {
        if self.calendar != earlier.calendar {
            return Err(CfTimeError::CalendarMismatch {
                context: "difference of two instants".into(),
                left: self.calendar,
                right: earlier.calendar,
            });
        }
        Ok(self.nanos_since_epoch() - earlier.nanos_since_epoch())
    }

    /// The calendar date and time of day of this instant.
    pub fn to_datetime(&self) -> DateTime {
        let (year, month, day) = self.calendar.date_from_days(self.days);
        let secs = self.nanos / 1_000_000_000;
        // Lossless: the range of `days` keeps the year within MIN_YEAR..=MAX_YEAR,
        // and the fields of the day are bounded.
        DateTime {
            calendar: self.calendar,
            year: year as i32,
            month: month as u8,
            day: day as u8,
            hour: (secs / 3600) as u8,
            minute: (secs / 60 % 60) as u8,
            second: (secs % 60) as u8,
            nanosecond: (self.nanos % 1_000_000_000) as u32,
        }
    }

    /// The instant of a date-time (same as [`DateTime::to_instant`]).
    pub fn from_datetime(datetime: &DateTime) -> Instant {
        datetime.to_instant()
    }

    /// The date-time as `YYYY-MM-DD HH:MM:SS[.ffffff]` (see [`DateTime::to_iso_string`]).
    pub fn to_iso_string(&self) -> String {
        self.to_datetime().to_iso_string()
    }
}

impl PartialOrd for Instant {
    /// Chronological order; `None` between instants of different calendars.
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (self.calendar == other.calendar)
            .then(|| (self.days, self.nanos).cmp(&(other.days, other.nanos)))
    }
}

impl From<DateTime> for Instant {
    fn from(dt: DateTime) -> Instant {
        dt.to_instant()
    }
}

impl From<Instant> for DateTime {
    fn from(i: Instant) -> DateTime {
        i.to_datetime()
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_per_calendar() {
        use Calendar::*;
        assert!(DateTime::from_ymd(Standard, 2000, 2, 29).is_ok());
        assert!(DateTime::from_ymd(Standard, 1900, 2, 29).is_err());
        assert!(DateTime::from_ymd(Julian, 1900, 2, 29).is_ok());
        assert!(DateTime::from_ymd(Standard, 1500, 2, 29).is_ok());
        assert!(DateTime::from_ymd(ProlepticGregorian, 1500, 2, 29).is_err());
        assert!(DateTime::from_ymd(NoLeap, 2000, 2, 29).is_err());
        assert!(DateTime::from_ymd(AllLeap, 2001, 2, 29).is_ok());
        assert!(DateTime::from_ymd(Day360, 2001, 2, 30).is_ok());
        assert!(DateTime::from_ymd(Day360, 2001, 1, 31).is_err());
        assert!(DateTime::from_ymd(Standard, 1582, 10, 4).is_ok());
        assert!(DateTime::from_ymd(Standard, 1582, 10, 15).is_ok());
        for d in 5..=14 {
            let e = DateTime::from_ymd(Standard, 1582, 10, d).unwrap_err();
            assert!(e.to_string().contains("do not exist"), "{e}");
            assert!(DateTime::from_ymd(ProlepticGregorian, 1582, 10, d).is_ok());
            assert!(DateTime::from_ymd(Julian, 1582, 10, d).is_ok());
        }
        assert!(DateTime::from_ymd(Standard, 0, 1, 1).is_err());
        assert!(DateTime::from_ymd(Julian, 0, 1, 1).is_err());
        assert!(DateTime::from_ymd(ProlepticGregorian, 0, 1, 1).is_ok());
        assert!(DateTime::from_ymd(Day360, 0, 1, 1).is_ok());
        assert!(DateTime::from_ymd(Standard, 2000, 0, 1).is_err());
        assert!(DateTime::from_ymd(Standard, 2000, 13, 1).is_err());
        assert!(DateTime::from_ymd(Standard, 2000, 1, 0).is_err());
        assert!(DateTime::from_ymd_hms(Standard, 2000, 1, 1, 24, 0, 0).is_err());
        assert!(DateTime::from_ymd_hms(Standard, 2000, 1, 1, 0, 60, 0).is_err());
        assert!(DateTime::from_ymd_hms(Standard, 2000, 1, 1, 0, 0, 60).is_err());
        let dt = DateTime::from_ymd_hms(Standard, 2000, 1, 1, 23, 59, 59).unwrap();
        assert!(dt.with_nanosecond(999_999_999).is_ok());
        assert!(dt.with_nanosecond(1_000_000_000).is_err());
        assert!(DateTime::from_ymd(Standard, MAX_YEAR, 12, 31).is_ok());
        assert!(DateTime::from_ymd(Standard, MIN_YEAR, 1, 1).is_ok());
        assert!(DateTime::from_ymd(Standard, MAX_YEAR + 1, 1, 1).is_err());
        assert!(DateTime::from_ymd(Standard, i32::MIN, 1, 1).is_err());
    }

    #[test]
    fn instant_round_trip_and_range() {
        for cal in Calendar::ALL {
            let lo = Instant::min(cal);
            let hi = Instant::max(cal);
            assert_eq!(lo.to_datetime().year(), MIN_YEAR);
            assert_eq!(hi.to_datetime().year(), MAX_YEAR);
            assert_eq!(hi.to_datetime().to_instant(), hi);
            assert_eq!(lo.to_datetime().to_instant(), lo);
            assert!(lo.checked_add_nanos(-1).is_err());
            assert!(hi.checked_add_nanos(1).is_err());
            assert!(hi.checked_add_nanos(i128::MAX).is_err());
            assert!(lo.checked_add_nanos(i128::MIN).is_err());
            assert!(Instant::from_parts(cal, 0, 86_400_000_000_000).is_err());
            assert!(Instant::from_parts(cal, i64::MAX, 0).is_err());
            let i = Instant::from_parts(cal, -1, 3_600_000_000_000).unwrap();
            assert_eq!(i.nanos_since_epoch(), -82_800_000_000_000);
            let dt = i.to_datetime();
            assert_eq!((dt.hour(), dt.minute(), dt.second()), (1, 0, 0));
        }
        let a = DateTime::from_ymd(Calendar::Standard, 2000, 1, 1)
            .unwrap()
            .to_instant();
        let b = DateTime::from_ymd(Calendar::NoLeap, 2000, 1, 1)
            .unwrap()
            .to_instant();
        assert!(a.partial_cmp(&b).is_none());
        assert!(a.nanos_since(&b).is_err());
    }

    #[test]
    fn gregorian_switch() {
        let s = Calendar::Standard;
        let before = DateTime::from_ymd(s, 1582, 10, 4).unwrap().to_instant();
        let after = DateTime::from_ymd(s, 1582, 10, 15).unwrap().to_instant();
        assert_eq!(after.nanos_since(&before).unwrap(), NANOS_PER_DAY);
        assert_eq!(
            before
                .checked_add_nanos(NANOS_PER_DAY / 2)
                .unwrap()
                .to_iso_string(),
            "1582-10-04 12:00:00"
        );
        assert_eq!(
            after
                .checked_add_nanos(-NANOS_PER_DAY / 2)
                .unwrap()
                .to_iso_string(),
            "1582-10-04 12:00:00"
        );
    }

    #[test]
    fn iso_strings() {
        let dt = DateTime::from_ymd_hms(Calendar::Standard, 2001, 2, 28, 12, 0, 0).unwrap();
        assert_eq!(dt.to_iso_string(), "2001-02-28 12:00:00");
        assert_eq!(
            dt.with_nanosecond(500_000_000).unwrap().to_string(),
            "2001-02-28 12:00:00.500000"
        );
        assert_eq!(
            dt.with_nanosecond(5).unwrap().to_string(),
            "2001-02-28 12:00:00.000000005"
        );
        let bc = DateTime::from_ymd(Calendar::Julian, -44, 3, 15).unwrap();
        assert_eq!(bc.to_iso_string(), "-0044-03-15 00:00:00");
        let small = DateTime::from_ymd(Calendar::Day360, 7, 1, 1).unwrap();
        assert_eq!(small.to_iso_string(), "0007-01-01 00:00:00");
        let big = DateTime::from_ymd(Calendar::NoLeap, 123_456, 1, 1).unwrap();
        assert_eq!(big.to_iso_string(), "123456-01-01 00:00:00");
    }

    #[test]
    fn parse_datetime() {
        let dt = DateTime::parse("2000-01-01T00:00:00+01:00", Calendar::Standard).unwrap();
        assert_eq!(dt.to_iso_string(), "1999-12-31 23:00:00");
        let e = DateTime::parse("2001-02-29", Calendar::Standard).unwrap_err();
        assert!(e.to_string().contains("\"2001-02-29\""), "{e}");
        assert!(DateTime::parse("2001-02-29", Calendar::AllLeap).is_ok());
    }
}
