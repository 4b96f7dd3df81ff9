//! Unit tests of CF time units: unit names, reference formats, refusals, units of the
//! `360_day` and `noleap` calendars, construction and equivalence.

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
