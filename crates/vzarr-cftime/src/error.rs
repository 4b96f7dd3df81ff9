//! Error type of the crate.

use crate::Calendar;

/// Errors of CF time handling; every message quotes the offending string or value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CfTimeError {
    /// A `calendar` attribute that is not one of the supported CF calendars.
    #[error("unsupported CF calendar {calendar:?}: {reason}")]
    InvalidCalendar {
        /// The calendar string as given.
        calendar: String,
        /// Why it was refused.
        reason: String,
    },
    /// A `units` string that is not `<unit> since <reference date-time>` or uses a unit the calendar does not allow.
    #[error("invalid CF time units {units:?} (calendar {calendar}): {reason}")]
    InvalidUnits {
        /// The units string as given.
        units: String,
        /// The calendar the units were parsed for.
        calendar: Calendar,
        /// Why it was refused.
        reason: String,
    },
    /// A date or time of day that does not exist in the calendar (e.g. 2001-02-29, or 1582-10-10 in `standard`).
    #[error("invalid date-time {text:?} in calendar {calendar}: {reason}")]
    InvalidDateTime {
        /// The date-time as given (string or formatted fields).
        text: String,
        /// The calendar it was checked against.
        calendar: Calendar,
        /// Why it was refused.
        reason: String,
    },
    /// A time value whose instant lies outside the supported range (years -1,000,000..=1,000,000).
    #[error(
        "time value {value} in units {units:?} (calendar {calendar}) is outside the supported range of years {min_year}..={max_year}"
    )]
    OutOfRange {
        /// The offending value.
        value: f64,
        /// The units string it was read with.
        units: String,
        /// The calendar.
        calendar: Calendar,
        /// Smallest supported year.
        min_year: i32,
        /// Largest supported year.
        max_year: i32,
    },
    /// An instant or date-time arithmetic result outside the supported range.
    #[error(
        "{what} is outside the supported range of years {min_year}..={max_year} (calendar {calendar})"
    )]
    InstantOutOfRange {
        /// Description of the computation.
        what: String,
        /// The calendar.
        calendar: Calendar,
        /// Smallest supported year.
        min_year: i32,
        /// Largest supported year.
        max_year: i32,
    },
    /// Two calendars that must agree do not (conversion between units, or an instant encoded with units of another calendar).
    #[error("calendar mismatch: {context}: {left} vs {right}")]
    CalendarMismatch {
        /// What was being done.
        context: String,
        /// The first calendar.
        left: Calendar,
        /// The second calendar.
        right: Calendar,
    },
}

/// Result alias of the crate.
pub type Result<T, E = CfTimeError> = std::result::Result<T, E>;
