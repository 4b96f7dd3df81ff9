//! Behaviour of decode / encode / convert: exactness, round trips, calendars, errors.

use vzarr_cftime::{
    Calendar, CfTimeError, DateTime, Instant, MAX_YEAR, TimeUnit, Units, convert, decode, encode,
};

fn units(text: &str, cal: Calendar) -> Units {
    Units::parse(text, cal).unwrap()
}

fn iso(values: &[f64], u: &Units) -> Vec<String> {
    decode(values, u)
        .unwrap()
        .into_iter()
        .map(|i| i.map_or("NaT".into(), |i| i.to_iso_string()))
        .collect()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

#[test]
fn round_trip_decode_encode_is_exact_for_whole_units() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for cal in Calendar::ALL {
        for text in [
            "days since 1850-01-01",
            "hours since 1582-10-15 00:00:00",
            "minutes since 2000-01-01 00:00:00 +05:30",
            "seconds since 1970-01-01",
            "milliseconds since 0001-01-01 12:00:00",
            "microseconds since 1999-12-30 23:59:59.5",
        ] {
            let u = units(text, cal);
            let per_day = 86_400e9 / u.unit().nanoseconds() as f64;
            let values: Vec<f64> = (0..2000)
                .map(|_| (rng.range(-1_400_000, 2_900_000) as f64 * per_day / 1000.0).round())
                .collect();
            let instants = decode(&values, &u).unwrap();
            let back = encode(&instants, &u).unwrap();
            assert_eq!(back, values, "{text} ({cal})");
            // Into hours since another reference: integral ratio gives exact results.
            if u.unit() == TimeUnit::Days {
                let to = units("hours since 2000-01-01", cal);
                let base = encode(&[u.reference()], &to).unwrap()[0];
                let conv = convert(&values, &u, &to).unwrap();
                for (v, c) in values.iter().zip(&conv) {
                    assert_eq!(*c, base + v * 24.0, "{v} {text} ({cal})");
                }
            }
        }
    }
}

#[test]
fn fractional_values_round_trip_to_the_same_f64() {
    let mut rng = Rng(42);
    for cal in Calendar::ALL {
        let u = units("days since 1900-01-01", cal);
        let values: Vec<f64> = (0..5000)
            .map(|_| {
                let whole = rng.range(-700_000, 2_000_000) as f64;
                // Fractions that are whole minutes: exactly decodable to the microsecond.
                whole + rng.range(0, 1439) as f64 / 1440.0
            })
            .collect();
        let back = encode(&decode(&values, &u).unwrap(), &u).unwrap();
        assert_eq!(back, values, "{cal}");
    }
}

#[test]
fn monthly_files_into_one_axis() {
    // 24 monthly files, each with its own units, all into one "days since 2000-01-01".
    for cal in [Calendar::Standard, Calendar::NoLeap, Calendar::Day360] {
        let target = units("days since 2000-01-01", cal);
        let mut all = Vec::new();
        for k in 0..24 {
            let (y, m) = (2000 + k / 12, 1 + k % 12);
            let u = units(&format!("hours since {y}-{m:02}-01 00:00:00"), cal);
            let n = cal.days_in_month(y.into(), m as u32);
            let vals: Vec<f64> = (0..n).map(|d| f64::from(d * 24 + 12)).collect();
            all.extend(convert(&vals, &u, &target).unwrap());
        }
        let total: u32 = (0..24)
            .map(|k| cal.days_in_month((2000 + k / 12).into(), (1 + k % 12) as u32))
            .sum();
        let expected: Vec<f64> = (0..total).map(|d| f64::from(d) + 0.5).collect();
        assert_eq!(all, expected, "{cal}");
    }
}

#[test]
fn float_noise_lands_on_whole_microseconds() {
    let u = units("days since 2000-01-01", Calendar::Standard);
    assert_eq!(iso(&[1234.0416666666667], &u), ["2003-05-19 01:00:00"]);
    assert_eq!(iso(&[2.0 / 3.0], &u), ["2000-01-01 16:00:00"]);
    assert_eq!(iso(&[0.1], &u), ["2000-01-01 02:24:00"]);
    let h = units("hours since 2000-01-01", Calendar::Standard);
    let conv = convert(&[1234.0416666666667], &u, &h).unwrap();
    assert_eq!(conv, [29617.0]);
}

#[test]
fn gregorian_julian_switch() {
    let s = Calendar::Standard;
    let u = units("days since 1582-10-04", s);
    assert_eq!(
        iso(&[0.0, 0.5, 1.0, 2.0, -365.0], &u),
        [
            "1582-10-04 00:00:00",
            "1582-10-04 12:00:00",
            "1582-10-15 00:00:00",
            "1582-10-16 00:00:00",
            "1581-10-04 00:00:00"
        ]
    );
    // Julian leap year 1500 exists in standard, not in proleptic_gregorian.
    let u = units("days since 1500-02-28", s);
    assert_eq!(iso(&[1.0], &u), ["1500-02-29 00:00:00"]);
    let u = units("days since 1500-02-28", Calendar::ProlepticGregorian);
    assert_eq!(iso(&[1.0], &u), ["1500-03-01 00:00:00"]);
    // Across the switch, standard and proleptic_gregorian agree after 1582-10-15 only.
    let a = units("days since 1582-10-15", s);
    let b = units("days since 1970-01-01", s);
    assert_eq!(convert(&[0.0], &a, &b).unwrap(), [-141_427.0]);
    assert!(Units::parse("days since 1582-10-14", s).is_err());
    assert!(Units::parse("days since 1582-10-14", Calendar::ProlepticGregorian).is_ok());
}

#[test]
fn leap_days_per_calendar() {
    let text = "days since 2000-02-28";
    // Expected values from cftime.num2date([1, 36525], "days since 2000-02-28", calendar).
    let want = [
        (
            Calendar::Standard,
            "2000-02-29 00:00:00",
            "2100-02-28 00:00:00",
        ),
        (
            Calendar::ProlepticGregorian,
            "2000-02-29 00:00:00",
            "2100-02-28 00:00:00",
        ),
        (
            Calendar::Julian,
            "2000-02-29 00:00:00",
            "2100-02-28 00:00:00",
        ),
        (
            Calendar::NoLeap,
            "2000-03-01 00:00:00",
            "2100-03-25 00:00:00",
        ),
        (
            Calendar::AllLeap,
            "2000-02-29 00:00:00",
            "2099-12-15 00:00:00",
        ),
        (
            Calendar::Day360,
            "2000-02-29 00:00:00",
            "2101-08-13 00:00:00",
        ),
    ];
    for (cal, one, century) in want {
        let u = units(text, cal);
        assert_eq!(iso(&[1.0, 36525.0], &u), [one, century], "{cal}");
    }
}

#[test]
fn negative_years_and_year_zero() {
    let s = units("days since 0001-01-01", Calendar::Standard);
    assert_eq!(
        iso(&[-1.0, -366.0], &s),
        ["-0001-12-31 00:00:00", "-0001-01-01 00:00:00"]
    );
    let p = units("days since 0001-01-01", Calendar::ProlepticGregorian);
    assert_eq!(
        iso(&[-1.0, -366.0], &p),
        ["0000-12-31 00:00:00", "0000-01-01 00:00:00"]
    );
    let j = units("days since -4713-01-01 12:00:00", Calendar::Julian);
    let dt = decode(&[2_451_545.0], &j).unwrap()[0].unwrap();
    // JD 2451545.0 is 2000-01-01 12:00 Gregorian = 1999-12-19 12:00 Julian.
    assert_eq!(dt.to_iso_string(), "1999-12-19 12:00:00");
}

#[test]
fn time_zones_shift_the_reference() {
    let s = Calendar::Standard;
    let utc = units("hours since 2000-01-01 00:00:00", s);
    for (text, hours) in [
        ("hours since 2000-01-01 00:00:00 -6", 6.0),
        ("hours since 2000-01-01 00:00:00 -06:00", 6.0),
        ("hours since 2000-01-01T00:00:00-0600", 6.0),
        ("hours since 2000-01-01T00:00:00+01:00", -1.0),
        ("hours since 2000-01-01T00:00:00Z", 0.0),
        ("hours since 2000-01-01 00:00:00 UTC", 0.0),
    ] {
        assert_eq!(
            convert(&[0.0], &units(text, s), &utc).unwrap(),
            [hours],
            "{text}"
        );
    }
}

#[test]
fn months_and_years_only_in_360_day() {
    let m = units("months since 2000-01-01", Calendar::Day360);
    let d = units("days since 2000-01-01", Calendar::Day360);
    assert_eq!(
        convert(&[1.0, 12.0, -0.5], &m, &d).unwrap(),
        [30.0, 360.0, -15.0]
    );
    let y = units("years since 2000-01-01", Calendar::Day360);
    assert_eq!(convert(&[1.0, 0.5], &y, &m).unwrap(), [12.0, 6.0]);
    for cal in [
        Calendar::Standard,
        Calendar::NoLeap,
        Calendar::AllLeap,
        Calendar::Julian,
    ] {
        let e = Units::parse("months since 2000-01-01", cal)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"months since 2000-01-01\"") && e.contains("360_day"),
            "{e}"
        );
        assert!(Units::parse("years since 2000-01-01", cal).is_err());
    }
}

#[test]
fn non_finite_values_pass_through() {
    let u = units("days since 2000-01-01", Calendar::Standard);
    let h = units("hours since 2000-01-01", Calendar::Standard);
    let out = convert(&[f64::NAN, 1.0, f64::INFINITY, f64::NEG_INFINITY], &u, &h).unwrap();
    assert!(out[0].is_nan() && out[2].is_nan() && out[3].is_nan());
    assert_eq!(out[1], 24.0);
    let dec = decode(&[f64::NAN, 0.0], &u).unwrap();
    assert!(dec[0].is_none() && dec[1].is_some());
    let enc = encode(&dec, &h).unwrap();
    assert!(enc[0].is_nan());
    assert_eq!(enc[1], 0.0);
    assert!(decode(&[], &u).unwrap().is_empty());
}

#[test]
fn out_of_range_values_are_errors() {
    let u = units("days since 2000-01-01", Calendar::Standard);
    for v in [1e300, -1e300, f64::MAX, f64::MIN, 4e8, -4e8, 1e20] {
        let e = decode(&[0.0, v], &u).unwrap_err();
        assert!(matches!(e, CfTimeError::OutOfRange { .. }), "{v}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains("\"days since 2000-01-01\""), "{msg}");
        assert!(convert(&[v], &u, &u).is_err());
    }
    // Just inside the supported range.
    let far = units("days since 1000000-12-31", Calendar::NoLeap);
    assert_eq!(iso(&[0.999], &far), ["1000000-12-31 23:58:33.600000"]);
    assert!(decode(&[1.0], &far).is_err());
    let us = units("microseconds since 2000-01-01", Calendar::Standard);
    assert!(decode(&[9.2e18], &us).is_ok());
    assert!(decode(&[1e25], &us).is_err());
    assert_eq!(
        Instant::max(Calendar::Standard).to_datetime().year(),
        MAX_YEAR
    );
}

#[test]
fn calendar_mismatch_is_an_error() {
    let a = units("days since 2000-01-01", Calendar::Standard);
    let b = units("days since 2000-01-01", Calendar::NoLeap);
    let e = convert(&[1.0], &a, &b).unwrap_err();
    assert!(matches!(e, CfTimeError::CalendarMismatch { .. }));
    assert!(e.to_string().contains("standard") && e.to_string().contains("noleap"));
    let i = decode(&[1.0], &a).unwrap();
    assert!(encode(&i, &b).is_err());
    // Aliases are the same calendar.
    let g = units(
        "days since 2000-01-01",
        Calendar::parse("gregorian").unwrap(),
    );
    assert_eq!(convert(&[1.5], &a, &g).unwrap(), [1.5]);
}

#[test]
fn encode_is_correctly_rounded() {
    let cal = Calendar::Standard;
    let r = DateTime::from_ymd(cal, 2000, 1, 1).unwrap().to_instant();
    let u = Units::new(TimeUnit::Days, r).unwrap();
    let third = r.checked_add_nanos(28_800_000_000_000).unwrap();
    assert_eq!(encode(&[third], &u).unwrap(), [1.0 / 3.0]);
    let tiny = r.checked_add_nanos(1).unwrap();
    assert_eq!(encode(&[tiny], &u).unwrap(), [1.0 / 86_400e9]);
    let neg = r.checked_add_nanos(-3_600_000_000_000).unwrap();
    assert_eq!(encode(&[neg], &u).unwrap(), [-1.0 / 24.0]);
}

#[test]
fn reference_with_nanoseconds() {
    let u = units(
        "seconds since 2000-01-01 00:00:00.123456789",
        Calendar::Standard,
    );
    let i = decode(&[1.0], &u).unwrap()[0].unwrap();
    assert_eq!(i.to_iso_string(), "2000-01-01 00:00:01.123456789");
    assert_eq!(i.to_datetime().nanosecond(), 123_456_789);
    assert_eq!(encode(&[i], &u).unwrap(), [1.0]);
}
