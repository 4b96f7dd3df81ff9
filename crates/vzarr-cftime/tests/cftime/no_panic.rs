//! Fuzz-ish robustness: random units strings, calendars, values and fields must give Ok or Err,
//! never a panic or an overflow. Accepted units must re-parse from their canonical form.

use vzarr_cftime::{Calendar, DateTime, Instant, Units, convert, decode, encode};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn digits(&mut self, max: usize) -> String {
        let n = self.below(max + 1);
        (0..n)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }
}

const UNITS: &[&str] = &[
    "days",
    "day",
    "d",
    "Days",
    "HOURS",
    "hour",
    "hr",
    "hrs",
    "h",
    "minutes",
    "min",
    "mins",
    "seconds",
    "sec",
    "secs",
    "s",
    "milliseconds",
    "ms",
    "msec",
    "microseconds",
    "us",
    "usec",
    "months",
    "month",
    "years",
    "year",
    "common_years",
    "fortnights",
    "",
    "µs",
    "days,",
    "s2",
];
const SINCE: &[&str] = &["since", "SINCE", "Since", "after", "", "since since", "@"];
const SEPS: &[&str] = &[" ", "T", "t", "  ", "\t", "_", "", "T ", " T"];
const TZ: &[&str] = &[
    "",
    "Z",
    " Z",
    " UTC",
    "utc",
    " GMT",
    "+01:00",
    " -6",
    " +05:30",
    "-0600",
    "+",
    "-",
    "+99",
    "-99999",
    " +5:3",
    "ü",
    "\u{301}",
    " CET",
    "+01:00 UTC",
    " 00:00",
    "Z Z",
];
const CALENDARS: &[&str] = &[
    "standard",
    "gregorian",
    "proleptic_gregorian",
    "julian",
    "noleap",
    "365_day",
    "all_leap",
    "366_day",
    "360_day",
    "none",
    "",
    "tai",
    "NOLEAP",
];

fn random_units(rng: &mut Rng) -> String {
    match rng.below(5) {
        // Plausible: mostly valid units.
        0 => {
            let s = format!(
                "{} since {}{}-{}-{} {}:{}:{}.{}{}",
                rng.pick(UNITS),
                rng.pick(&["", "-", "+"]),
                rng.below(12_000),
                rng.below(13),
                rng.below(32),
                rng.below(25),
                rng.below(61),
                rng.below(61),
                rng.digits(12),
                rng.pick(TZ)
            );
            s.replace(".Z", "Z").replace(". ", " ").replace(".+", "+")
        }
        // Structured: unit since date [time] [tz].
        1 => {
            let sign = rng.pick(&["", "", "-", "+", "--"]);
            let mut s = format!(
                "{} {} {sign}{}-{}-{}",
                rng.pick(UNITS),
                rng.pick(SINCE),
                rng.digits(8),
                rng.digits(3),
                rng.digits(3)
            );
            if rng.below(2) == 0 {
                s += &format!(
                    "{}{}:{}:{}",
                    rng.pick(SEPS),
                    rng.digits(3),
                    rng.digits(3),
                    rng.digits(3)
                );
                if rng.below(2) == 0 {
                    s += &format!(".{}", rng.digits(14));
                }
            }
            s + rng.pick(TZ)
        }
        // Mutation of a valid string.
        2 | 3 => {
            let mut chars: Vec<char> = "hours since 2000-01-01 00:00:00.5 -06:00".chars().collect();
            for _ in 0..=rng.below(4) {
                let pos = rng.below(chars.len() + 1);
                let ch = char::from_u32(rng.below(0x250) as u32).unwrap_or('x');
                match rng.below(3) {
                    0 if pos < chars.len() => {
                        chars.remove(pos);
                    }
                    1 if pos < chars.len() => chars[pos] = ch,
                    _ => chars.insert(pos, ch),
                }
            }
            chars.into_iter().collect()
        }
        // Random bytes.
        _ => {
            let n = rng.below(40);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

fn random_value(rng: &mut Rng) -> f64 {
    const SPECIAL: &[f64] = &[
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        1e300,
        -1e300,
        1e20,
        9.2e18,
        -9.3e18,
        4e8,
        3.65e8,
        1e15,
        1.0000006,
        0.9999994,
    ];
    match rng.below(3) {
        0 => SPECIAL[rng.below(SPECIAL.len())],
        1 => f64::from_bits(rng.next()),
        _ => (rng.next() as i64 >> rng.below(64)) as f64 / 1000.0,
    }
}

#[test]
fn random_inputs_never_panic() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut accepted = 0usize;
    let mut decoded = 0usize;
    for _ in 0..100_000 {
        let text = random_units(&mut rng);
        let cal_text = rng.pick(CALENDARS);
        let Ok(cal) = Calendar::parse(cal_text) else {
            continue;
        };
        let Ok(u) = Units::parse(&text, cal) else {
            continue;
        };
        accepted += 1;
        // The canonical form re-parses to equivalent units.
        let again = Units::parse(&u.canonical(), cal)
            .unwrap_or_else(|e| panic!("{text:?} -> {:?}: {e}", u.canonical()));
        assert!(again.is_equivalent(&u), "{text:?}");
        let values: Vec<f64> = (0..8).map(|_| random_value(&mut rng)).collect();
        for v in &values {
            if let Ok(Some(i)) = u.decode_one(*v) {
                decoded += 1;
                let _ = i.to_iso_string();
                let _ = u.encode_one(&i).unwrap();
            }
        }
        let _ = decode(&values, &u);
        let _ = convert(&values, &u, &again);
        let other = Units::parse("microseconds since 1970-01-01", cal).unwrap();
        let _ = convert(&values, &u, &other);
        let _ = convert(&values, &other, &u);
        let extremes = [Instant::min(cal), Instant::max(cal), u.reference()];
        let enc = encode(&extremes, &u).unwrap();
        assert!(enc.iter().all(|x| x.is_finite()));
    }
    println!("{accepted} units accepted, {decoded} values decoded");
    assert!(accepted > 1000, "too few accepted units: {accepted}");
    assert!(decoded > 1000, "too few decoded values: {decoded}");
}

#[test]
fn random_fields_never_panic() {
    let mut rng = Rng(7);
    let wide = |rng: &mut Rng| -> u32 {
        match rng.below(3) {
            0 => rng.below(70) as u32,
            1 => u32::MAX - rng.below(3) as u32,
            _ => rng.next() as u32,
        }
    };
    for _ in 0..50_000 {
        let cal = Calendar::ALL[rng.below(6)];
        let year = match rng.below(3) {
            0 => rng.below(30_000) as i32 - 15_000,
            1 => [i32::MIN, i32::MAX, -1_000_001, 1_000_001, 0][rng.below(5)],
            _ => rng.next() as i32,
        };
        let (mo, d, h, mi, s) = (
            wide(&mut rng),
            wide(&mut rng),
            wide(&mut rng),
            wide(&mut rng),
            wide(&mut rng),
        );
        if let Ok(dt) = DateTime::from_ymd_hms(cal, year, mo % 14, d % 33, h % 25, mi % 61, s % 61)
        {
            let i = dt.to_instant();
            assert_eq!(i.to_datetime(), dt);
            let _ = dt.with_nanosecond(wide(&mut rng));
            let shift = i128::from(rng.next() as i64) * i128::from(rng.next() as u32);
            if let Ok(j) = i.checked_add_nanos(shift) {
                assert_eq!(j.nanos_since(&i).unwrap(), shift);
                assert_eq!(j.to_datetime().to_instant(), j);
            }
        }
        let _ = DateTime::from_ymd_hms(cal, year, mo, d, h, mi, s);
        let _ = Instant::from_parts(
            cal,
            rng.next() as i64 >> rng.below(64),
            rng.next() >> rng.below(64),
        );
        let _ =
            Instant::from_nanos_since_epoch(cal, i128::from(rng.next() as i64) << rng.below(64));
        let _ = cal.days_in_month(i64::from(year), mo);
        let _ = cal.days_in_year(rng.next() as i64);
    }
}
