//! The year range every calendar supports and the fields of a date-time as written, before
//! they are checked against a calendar: what the date-time type and the parser of reference
//! date-times (`units::reference`) share.

/// Smallest year supported by [`DateTime`](crate::DateTime) and [`Instant`](crate::Instant)
/// (in every calendar).
pub const MIN_YEAR: i32 = -1_000_000;
/// Largest year supported by [`DateTime`](crate::DateTime) and [`Instant`](crate::Instant)
/// (in every calendar).
pub const MAX_YEAR: i32 = 1_000_000;

/// The fields of a date-time as written, not yet checked against a calendar (wide enough
/// for what parsers read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) hour: u32,
    pub(crate) minute: u32,
    pub(crate) second: u32,
    pub(crate) nanosecond: u32,
}

impl Fields {
    /// Formats the fields as `YYYY-MM-DD HH:MM:SS[.ffffff|.fffffffff]`.
    pub(crate) fn to_iso_string(self) -> String {
        let (year, nanosecond) = (self.year, self.nanosecond);
        let y = if year < 0 {
            format!("-{:04}", year.unsigned_abs())
        } else {
            format!("{year:04}")
        };
        let frac = if nanosecond == 0 {
            String::new()
        } else if nanosecond.is_multiple_of(1000) {
            format!(".{:06}", nanosecond / 1000)
        } else {
            format!(".{nanosecond:09}")
        };
        format!(
            "{y}-{:02}-{:02} {:02}:{:02}:{:02}{frac}",
            self.month, self.day, self.hour, self.minute, self.second
        )
    }
}
