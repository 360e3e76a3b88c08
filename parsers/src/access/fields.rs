//! The fields every access-log grammar reads: timestamps in their formats,
//! durations in their units, and the [`Request`] they make. A leaf module, so
//! that the preset grammars and the `LogFormat` compiler share them without
//! importing the front door.

use chrono::{DateTime, FixedOffset, NaiveDate, TimeDelta, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// Whether a line's timestamp is when the request started or when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampMeaning {
    /// The request was received at this time.
    Start,
    /// The line was written (the response finished) at this time; the start
    /// is this time minus the duration.
    End,
}

/// The unit a duration field is written in. Fractions are accepted in every
/// unit (`0.250` seconds, `12.5` milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurationUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl DurationUnit {
    /// Decimal places between this unit and nanoseconds.
    pub(crate) fn nanos_exponent(self) -> u32 {
        match self {
            DurationUnit::Seconds => 9,
            DurationUnit::Milliseconds => 6,
            DurationUnit::Microseconds => 3,
            DurationUnit::Nanoseconds => 0,
        }
    }
}

/// How a timestamp field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeFormat {
    /// `2016-04-15T20:17:00.310Z`, `2023-11-14T14:13:20-08:00` (any fraction).
    Rfc3339,
    /// `1700000000.500`: seconds since the epoch, any fraction.
    EpochSeconds,
    /// `1700000000500`: milliseconds since the epoch (a fraction is allowed).
    EpochMillis,
    /// `1700000000500000`: microseconds since the epoch (a fraction is allowed).
    EpochMicros,
    /// Common Log Format, `10/Oct/2000:13:55:36 -0700`, optionally with a
    /// fraction of a second: `10/Oct/2000:13:55:36.123 -0700`. A space instead
    /// of the colon between date and time (Apache's documented
    /// `%{%d/%b/%Y %T}t.%{msec_frac}t %{%z}t`) is accepted too. The offset
    /// is honoured; English month abbreviations, any case.
    Clf,
}

impl TimeFormat {
    /// Parses one timestamp written in this format; `None` if it is not one.
    pub fn parse(&self, text: &str) -> Option<DateTime<Utc>> {
        let text = text.trim();
        match self {
            TimeFormat::Rfc3339 => rfc3339(text),
            TimeFormat::EpochSeconds => epoch(scaled_decimal(text, 9)?),
            TimeFormat::EpochMillis => epoch(scaled_decimal(text, 6)?),
            TimeFormat::EpochMicros => epoch(scaled_decimal(text, 3)?),
            TimeFormat::Clf => clf(text),
        }
    }
}

/// One request: when it started and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub start: DateTime<Utc>,
    pub duration_s: f64,
}

pub(crate) fn request(
    at: DateTime<Utc>,
    meaning: TimestampMeaning,
    duration_nanos: i128,
) -> Option<Request> {
    let nanos = i64::try_from(duration_nanos).ok()?;
    if nanos < 0 {
        return None;
    }
    let start = match meaning {
        TimestampMeaning::Start => at,
        TimestampMeaning::End => at.checked_sub_signed(TimeDelta::nanoseconds(nanos))?,
    };
    Some(Request {
        start,
        duration_s: nanos as f64 / 1e9,
    })
}

/// A non-negative integer written in ASCII digits only.
pub(super) fn whole_number(text: &str) -> Option<i128> {
    if text.is_empty() || text.len() > 30 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A non-negative decimal (`1700000000.500`, `226`, `.5`) times
/// 10^`exponent`, as an integer: exact, digits beyond the last place
/// truncated. Exponent notation (`1.5e-3`, as JSON writers may print floats)
/// goes through `f64`.
pub(crate) fn scaled_decimal(text: &str, exponent: u32) -> Option<i128> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if digits(whole) && digits(fraction) {
        if (whole.is_empty() && fraction.is_empty()) || whole.len() > 24 {
            return None;
        }
        let scale = 10i128.pow(exponent);
        let mut value = if whole.is_empty() {
            0
        } else {
            whole.parse::<i128>().ok()?.checked_mul(scale)?
        };
        let mut place = scale;
        for digit in fraction.bytes().take(exponent as usize) {
            place /= 10;
            value += i128::from(digit - b'0') * place;
        }
        return Some(value);
    }
    if !text.bytes().any(|b| b == b'e' || b == b'E') {
        return None;
    }
    let float: f64 = text.parse().ok()?;
    let scaled = float * 10f64.powi(exponent as i32);
    if !scaled.is_finite() || !(0.0..1e30).contains(&scaled) {
        return None;
    }
    Some(scaled.round() as i128)
}

/// Nanoseconds since the epoch as a UTC time.
pub(crate) fn epoch(nanos: i128) -> Option<DateTime<Utc>> {
    let seconds = i64::try_from(nanos.div_euclid(1_000_000_000)).ok()?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).ok()?;
    DateTime::from_timestamp(seconds, sub)
}

pub(crate) fn rfc3339(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

/// `10/Oct/2000:13:55:36[.123] -0700` (or `+07:00`, `Z`; a space for the
/// colon after the year).
pub(crate) fn clf(text: &str) -> Option<DateTime<Utc>> {
    let (local, zone) = text.trim().rsplit_once(' ')?;
    let offset = utc_offset(zone)?;
    let (date, time) = local.split_at_checked(12)?;
    let mut date_parts = date.split('/');
    let (Some(day), Some(month), Some(year_sep), None) = (
        date_parts.next(),
        date_parts.next(),
        date_parts.next(),
        date_parts.next(),
    ) else {
        return None;
    };
    let year = year_sep.strip_suffix(':').or(year_sep.strip_suffix(' '))?;
    let day = fixed_digits(day, 2)?;
    let year = fixed_digits(year, 4)?;
    let month = month_number(month)?;
    let (hms, fraction) = match time.split_once(['.', ',']) {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    let mut hms_parts = hms.split(':');
    let (Some(hour), Some(minute), Some(second), None) = (
        hms_parts.next(),
        hms_parts.next(),
        hms_parts.next(),
        hms_parts.next(),
    ) else {
        return None;
    };
    let nanos = match fraction {
        None => 0,
        Some(fraction) => {
            if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let mut nanos = 0u32;
            let mut place = 1_000_000_000u32;
            for digit in fraction.bytes().take(9) {
                place /= 10;
                nanos += u32::from(digit - b'0') * place;
            }
            nanos
        }
    };
    let naive = NaiveDate::from_ymd_opt(year as i32, month, day)?.and_hms_nano_opt(
        fixed_digits(hour, 2)?,
        fixed_digits(minute, 2)?,
        fixed_digits(second, 2)?,
        nanos,
    )?;
    Some(
        offset
            .from_local_datetime(&naive)
            .single()?
            .with_timezone(&Utc),
    )
}

/// `-0700`, `+0530`, `+05:30`, `Z`.
pub(super) fn utc_offset(zone: &str) -> Option<FixedOffset> {
    if zone == "Z" || zone == "z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((hours, minutes)) => (hours, minutes),
        None => digits.split_at_checked(2)?,
    };
    let seconds = fixed_digits(hours, 2)? * 3600 + fixed_digits(minutes, 2)? * 60;
    FixedOffset::east_opt(sign * seconds as i32)
}

/// `text` if it is exactly `len` ASCII digits.
pub(super) fn fixed_digits(text: &str, len: usize) -> Option<u32> {
    if text.len() != len || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

pub(super) fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    MONTHS
        .iter()
        .position(|month| month.eq_ignore_ascii_case(name))
        .map(|index| index as u32 + 1)
}
