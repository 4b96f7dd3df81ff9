//! CF calendars and their day-number arithmetic.
//!
//! Every calendar numbers its days relative to its own 1970-01-01 (which exists in all of them).
//! Years are given in the calendar's CF numbering: `standard` and `julian` have no year 0 (year 1
//! is preceded by year -1), `proleptic_gregorian` and the idealized calendars have a year 0
//! (ISO 8601 / astronomical numbering). These are the CF 1.9+ and cftime defaults.

use std::fmt;

use crate::error::{CfTimeError, Result};

/// A CF calendar (CF conventions section 4.4.1); aliases map to one variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Calendar {
    /// `standard` / `gregorian`: Julian before 1582-10-15, Gregorian from then; 1582-10-05..14 do not exist.
    #[default]
    Standard,
    /// `proleptic_gregorian`: Gregorian rules for all dates, with a year 0.
    ProlepticGregorian,
    /// `julian`: a leap year every 4 years, no year 0.
    Julian,
    /// `noleap` / `365_day`: every year has 365 days.
    NoLeap,
    /// `all_leap` / `366_day`: every year has 366 days.
    AllLeap,
    /// `360_day`: twelve months of 30 days.
    Day360,
}

/// Days from 0000-03-01 (astronomical years) to the given proleptic Gregorian date.
fn gregorian_raw(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe
}

/// Inverse of [`gregorian_raw`].
fn gregorian_from_raw(z: i64) -> (i64, u32, u32) {
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    split_march_doy(era * 400 + yoe, doy)
}

/// Days from 0000-03-01 (astronomical years) to the given Julian-calendar date.
fn julian_raw(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(4);
    let yoe = y - era * 4;
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    era * 1461 + yoe * 365 + doy
}

/// Inverse of [`julian_raw`].
fn julian_from_raw(z: i64) -> (i64, u32, u32) {
    let era = z.div_euclid(1461);
    let doe = z - era * 1461;
    let yoe = (doe - doe / 1460) / 365;
    let doy = doe - 365 * yoe;
    split_march_doy(era * 4 + yoe, doy)
}

/// Turns a March-based year and day of year into (year, month, day).
fn split_march_doy(y: i64, doy: i64) -> (i64, u32, u32) {
    let mp = (5 * doy + 2) / 153;
    // The casts are lossless: mp is 0..=11 and the day 1..=31.
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Cumulative days before each month in a 365-day year.
const CUM_DAYS: [i64; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];
/// Cumulative days before each month in a 366-day year.
const CUM_DAYS_LEAP: [i64; 13] = [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366];

/// Finds (month, day) from a 0-based day of year in a fixed-length year.
fn month_day_from_doy(doy: i64, cum: &[i64; 13]) -> (u32, u32) {
    let mut m = 1usize;
    while m < 12 && doy >= cum[m] {
        m += 1;
    }
    // Lossless: m is 1..=12 and the day 1..=31.
    (m as u32, (doy - cum[m - 1] + 1) as u32)
}

/// Converts a CF year without year 0 (`-1` is 1 BC) to an astronomical year.
fn astro_from_historical(y: i64) -> i64 {
    if y < 0 { y + 1 } else { y }
}

/// Converts an astronomical year to CF numbering without year 0.
fn historical_from_astro(y: i64) -> i64 {
    if y <= 0 { y - 1 } else { y }
}

/// Days from Gregorian 1970-01-01 to Gregorian 1582-10-15, the first Gregorian day of `standard`.
const GREGORIAN_START: i64 = -141_427;

impl Calendar {
    /// Every calendar, in a fixed order (useful for tests and tables).
    pub const ALL: [Calendar; 6] = [
        Calendar::Standard,
        Calendar::ProlepticGregorian,
        Calendar::Julian,
        Calendar::NoLeap,
        Calendar::AllLeap,
        Calendar::Day360,
    ];

    /// Parses a CF `calendar` attribute (case-insensitive, surrounding blanks ignored; `none` and unknown names are refused).
    pub fn parse(s: &str) -> Result<Calendar> {
        let t = s.trim().to_ascii_lowercase();
        let cal = match t.as_str() {
            "standard" | "gregorian" => Calendar::Standard,
            "proleptic_gregorian" => Calendar::ProlepticGregorian,
            "julian" => Calendar::Julian,
            "noleap" | "365_day" => Calendar::NoLeap,
            "all_leap" | "366_day" => Calendar::AllLeap,
            "360_day" => Calendar::Day360,
            "none" => {
                return Err(CfTimeError::InvalidCalendar {
                    calendar: s.to_string(),
                    reason: "calendar \"none\" means the time axis has no calendar dates; it cannot be decoded or re-encoded".into(),
                });
            }
            "" => {
                return Err(CfTimeError::InvalidCalendar {
                    calendar: s.to_string(),
                    reason: "empty calendar name (a missing attribute means \"standard\": use Calendar::from_attribute(None))".into(),
                });
            }
            _ => {
                return Err(CfTimeError::InvalidCalendar {
                    calendar: s.to_string(),
                    reason: "expected one of standard, gregorian, proleptic_gregorian, julian, noleap, 365_day, all_leap, 366_day, 360_day".into(),
                });
            }
        };
        Ok(cal)
    }

    /// Parses an optional `calendar` attribute: a missing attribute means `standard` (CF 4.4.1).
    pub fn from_attribute(attr: Option<&str>) -> Result<Calendar> {
        attr.map_or(Ok(Calendar::Standard), Calendar::parse)
    }

    /// The canonical CF name (`standard`, `proleptic_gregorian`, `julian`, `noleap`, `all_leap`, `360_day`).
    pub fn name(self) -> &'static str {
        match self {
            Calendar::Standard => "standard",
            Calendar::ProlepticGregorian => "proleptic_gregorian",
            Calendar::Julian => "julian",
            Calendar::NoLeap => "noleap",
            Calendar::AllLeap => "all_leap",
            Calendar::Day360 => "360_day",
        }
    }

    /// Whether the calendar has a year 0 (false for `standard` and `julian`, where year 1 follows year -1).
    pub fn has_year_zero(self) -> bool {
        !matches!(self, Calendar::Standard | Calendar::Julian)
    }

    /// Whether `year` is a leap year (has a February 29) in this calendar; always false for `360_day`.
    pub fn is_leap_year(self, year: i64) -> bool {
        let julian = |y: i64| astro_from_historical(y).rem_euclid(4) == 0;
        let gregorian =
            |y: i64| y.rem_euclid(4) == 0 && (y.rem_euclid(100) != 0 || y.rem_euclid(400) == 0);
        match self {
            Calendar::Standard => {
                if year > 1581 {
                    gregorian(year)
                } else {
                    julian(year)
                }
            }
            Calendar::ProlepticGregorian => gregorian(year),
            Calendar::Julian => julian(year),
            Calendar::NoLeap | Calendar::Day360 => false,
            Calendar::AllLeap => true,
        }
    }

    /// Number of days of `month` (1..=12) in `year`; 0 for an invalid month.
    pub fn days_in_month(self, year: i64, month: u32) -> u32 {
        if !(1..=12).contains(&month) {
            return 0;
        }
        if self == Calendar::Day360 {
            return 30;
        }
        const LEN: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let base = LEN[month as usize - 1];
        if month == 2 && self.is_leap_year(year) {
            29
        } else {
            base
        }
    }

    /// Number of days in `year` (the `standard` year 1582 has 355).
    pub fn days_in_year(self, year: i64) -> u32 {
        match self {
            Calendar::Day360 => 360,
            Calendar::Standard if year == 1582 => 355,
            _ if self.is_leap_year(year) => 366,
            _ => 365,
        }
    }

    /// Days since this calendar's 1970-01-01 of a valid date (year in CF numbering). No validation.
    pub(crate) fn days_from_date(self, year: i64, month: u32, day: u32) -> i64 {
        let m = i64::from(month);
        let d = i64::from(day);
        match self {
            Calendar::ProlepticGregorian => {
                gregorian_raw(year, month, day) - gregorian_raw(1970, 1, 1)
            }
            Calendar::Julian => {
                julian_raw(astro_from_historical(year), month, day) - julian_raw(1970, 1, 1)
            }
            Calendar::Standard => {
                if (year, month, day) >= (1582, 10, 15) {
                    gregorian_raw(year, month, day) - gregorian_raw(1970, 1, 1)
                } else {
                    // Julian 1582-10-04 is the day before Gregorian 1582-10-15.
                    julian_raw(astro_from_historical(year), month, day) - julian_raw(1582, 10, 4)
                        + GREGORIAN_START
                        - 1
                }
            }
            Calendar::NoLeap => 365 * (year - 1970) + CUM_DAYS[month as usize - 1] + d - 1,
            Calendar::AllLeap => 366 * (year - 1970) + CUM_DAYS_LEAP[month as usize - 1] + d - 1,
            Calendar::Day360 => 360 * (year - 1970) + 30 * (m - 1) + d - 1,
        }
    }

    /// Inverse of [`Calendar::days_from_date`]: (year in CF numbering, month, day).
    pub(crate) fn date_from_days(self, days: i64) -> (i64, u32, u32) {
        match self {
            Calendar::ProlepticGregorian => gregorian_from_raw(days + gregorian_raw(1970, 1, 1)),
            Calendar::Julian => {
                let (y, m, d) = julian_from_raw(days + julian_raw(1970, 1, 1));
                (historical_from_astro(y), m, d)
            }
            Calendar::Standard => {
                if days >= GREGORIAN_START {
                    gregorian_from_raw(days + gregorian_raw(1970, 1, 1))
                } else {
                    let raw = days - GREGORIAN_START + 1 + julian_raw(1582, 10, 4);
                    let (y, m, d) = julian_from_raw(raw);
                    (historical_from_astro(y), m, d)
                }
            }
            Calendar::NoLeap => {
                let y = days.div_euclid(365);
                let (m, d) = month_day_from_doy(days - y * 365, &CUM_DAYS);
                (y + 1970, m, d)
            }
            Calendar::AllLeap => {
                let y = days.div_euclid(366);
                let (m, d) = month_day_from_doy(days - y * 366, &CUM_DAYS_LEAP);
                (y + 1970, m, d)
            }
            Calendar::Day360 => {
                let y = days.div_euclid(360);
                let doy = days - y * 360;
                // Lossless: doy is 0..360.
                (y + 1970, (doy / 30 + 1) as u32, (doy % 30 + 1) as u32)
            }
        }
    }
}

impl fmt::Display for Calendar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Calendar {
    type Err = CfTimeError;

    fn from_str(s: &str) -> Result<Calendar> {
        Calendar::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gregorian_start_constant() {
        assert_eq!(
            gregorian_raw(1582, 10, 15) - gregorian_raw(1970, 1, 1),
            GREGORIAN_START
        );
    }

    #[test]
    fn parse_names_and_aliases() {
        for (s, c) in [
            ("standard", Calendar::Standard),
            ("Gregorian", Calendar::Standard),
            (" STANDARD ", Calendar::Standard),
            ("proleptic_gregorian", Calendar::ProlepticGregorian),
            ("julian", Calendar::Julian),
            ("noleap", Calendar::NoLeap),
            ("365_day", Calendar::NoLeap),
            ("NoLeap", Calendar::NoLeap),
            ("all_leap", Calendar::AllLeap),
            ("366_DAY", Calendar::AllLeap),
            ("360_day", Calendar::Day360),
        ] {
            assert_eq!(Calendar::parse(s).unwrap(), c, "{s}");
        }
        assert_eq!(Calendar::from_attribute(None).unwrap(), Calendar::Standard);
        for bad in [
            "none",
            "None",
            "",
            "utc",
            "tai",
            "gregorian_proleptic",
            "365day",
        ] {
            let e = Calendar::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn leap_rules() {
        let pg = Calendar::ProlepticGregorian;
        assert!(pg.is_leap_year(2000));
        assert!(!pg.is_leap_year(1900));
        assert!(pg.is_leap_year(2024));
        assert!(pg.is_leap_year(0));
        assert!(pg.is_leap_year(-4));
        assert!(!pg.is_leap_year(-100));
        assert!(pg.is_leap_year(-400));
        let j = Calendar::Julian;
        assert!(j.is_leap_year(1900));
        assert!(j.is_leap_year(-1)); // 1 BC
        assert!(j.is_leap_year(-5));
        assert!(!j.is_leap_year(-4));
        let s = Calendar::Standard;
        assert!(s.is_leap_year(1500)); // Julian rule
        assert!(!s.is_leap_year(1700)); // Gregorian rule
        assert!(s.is_leap_year(1600));
        assert!(!s.is_leap_year(1582));
        assert_eq!(s.days_in_year(1582), 355);
        assert!(!Calendar::NoLeap.is_leap_year(2000));
        assert!(Calendar::AllLeap.is_leap_year(2001));
        assert_eq!(Calendar::AllLeap.days_in_year(2001), 366);
        assert_eq!(Calendar::Day360.days_in_month(2000, 2), 30);
        assert_eq!(Calendar::Day360.days_in_year(2000), 360);
        assert_eq!(Calendar::NoLeap.days_in_month(2000, 2), 28);
        assert_eq!(Calendar::Standard.days_in_month(2000, 13), 0);
    }

    #[test]
    fn day_numbers_round_trip_and_are_contiguous() {
        for cal in Calendar::ALL {
            let start = cal.days_from_date(-2001, 1, 1);
            let mut prev: Option<(i64, u32, u32)> = None;
            for days in start..start + 1_600_000 {
                let (y, m, d) = cal.date_from_days(days);
                assert_eq!(cal.days_from_date(y, m, d), days, "{cal} {y}-{m}-{d}");
                assert!(d >= 1 && d <= cal.days_in_month(y, m), "{cal} {y}-{m}-{d}");
                assert!(cal.has_year_zero() || y != 0);
                if let Some(p) = prev {
                    assert!((y, m, d) > p, "{cal} {p:?} -> {y}-{m}-{d}");
                }
                prev = Some((y, m, d));
            }
        }
    }

    #[test]
    fn epochs_and_known_days() {
        for cal in Calendar::ALL {
            assert_eq!(cal.days_from_date(1970, 1, 1), 0, "{cal}");
        }
        let s = Calendar::Standard;
        assert_eq!(s.date_from_days(GREGORIAN_START), (1582, 10, 15));
        assert_eq!(s.date_from_days(GREGORIAN_START - 1), (1582, 10, 4));
        // Julian 1970-01-01 is Gregorian 1970-01-14.
        assert_eq!(
            julian_raw(1970, 1, 1) - julian_raw(1582, 10, 5),
            gregorian_raw(1970, 1, 14) - gregorian_raw(1582, 10, 15)
        );
        // Year -1 is followed by year 1 (no year zero) in julian/standard.
        assert_eq!(s.days_from_date(1, 1, 1) - s.days_from_date(-1, 12, 31), 1);
        assert_eq!(
            Calendar::Julian.days_from_date(1, 1, 1) - Calendar::Julian.days_from_date(-1, 12, 31),
            1
        );
        // 0001-01-01 standard is JDN 1721424; 1970-01-01 is JDN 2440588.
        assert_eq!(s.days_from_date(1, 1, 1), 1_721_424 - 2_440_588);
        // -4712-01-01 Julian (4713 BC) is JDN 0.
        assert_eq!(s.days_from_date(-4713, 1, 1), -2_440_588);
        assert_eq!(Calendar::NoLeap.days_from_date(1971, 3, 1), 365 + 59);
        assert_eq!(Calendar::AllLeap.days_from_date(1971, 3, 1), 366 + 60);
        assert_eq!(Calendar::Day360.days_from_date(1971, 3, 1), 360 + 60);
        assert_eq!(Calendar::Day360.date_from_days(-1), (1969, 12, 30));
    }
}
