//! The reference date-time of CF time units (the text after `since`, also what
//! `DateTime` parses): a date, an optional time of day and an optional time zone, with a
//! message naming what is wrong when the text is refused.

use crate::fields::{Fields, MAX_YEAR, MIN_YEAR};

/// Fields of a reference date-time as written (local time) plus its UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedReference {
    pub(crate) local: Fields,
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
        local: Fields {
            year,
            month,
            day,
            ..Fields::default()
        },
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
        r.local.hour = c.field("hour", 2)?;
        if !c.eat(b':') {
            return Err(format!(
                "expected hh:mm after the date, found {:?} (a bare number after the date is ambiguous: \
                 udunits reads it as a packed clock, cftime ignores it)",
                c.rest()
            ));
        }
        r.local.minute = c.field("minute", 2)?;
        if c.eat(b':') {
            r.local.second = c.field("second", 2)?;
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
                r.local.nanosecond = ns;
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
