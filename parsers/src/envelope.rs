//! The unified-logging envelope: zero or more `[decoration]` groups, always in
//! HotSpot's fixed order (time, utctime, uptime, timemillis, uptimemillis,
//! timenanos, uptimenanos, hostname, pid, tid, level, tags), padded with
//! spaces that only grow, then one space and the message.
//!
//! Decorations are recognised by shape, not by column. Wall-clock text is kept
//! as a slice and converted only for lines that produce events, which keeps
//! the common (ignored) line cheap.

use chrono::{DateTime, TimeZone, Utc};
use nom::bytes::complete::take_till;
use nom::character::complete::char;
use nom::sequence::delimited;
use nom::{IResult, Parser};

/// Epoch milliseconds above this (20 years after 1970) are `timemillis`, not
/// `uptimemillis`: the same rule gctoolkit uses for the `[NNNms]` ambiguity.
const EPOCH_MILLIS_THRESHOLD: u64 = 20 * 365 * 24 * 3600 * 1000;

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Envelope<'a> {
    /// `time`/`utctime` text, e.g. `2022-01-29T16:34:51.654+0000`.
    pub wall_text: Option<&'a str>,
    /// `timemillis`.
    pub wall_millis: Option<i64>,
    /// `uptime`, `uptimemillis` or `uptimenanos`, in seconds.
    pub uptime_s: Option<f64>,
    /// At least one decoration was present.
    pub decorated: bool,
    /// The decorations were blank: a continuation of a multi-line message.
    pub continuation: bool,
    pub message: &'a str,
}

impl Envelope<'_> {
    /// The line's wall-clock time, if it carries one that parses.
    pub fn wall(&self) -> Option<DateTime<Utc>> {
        if let Some(ms) = self.wall_millis {
            return Utc.timestamp_millis_opt(ms).single();
        }
        self.wall_text.and_then(parse_iso8601)
    }
}

fn group(i: &str) -> IResult<&str, &str> {
    delimited(char('['), take_till(|c| c == ']'), char(']')).parse(i)
}

/// Splits a line into decorations and message; `None` when a leading bracket
/// group is not a decoration (a JDK 8 `[GC (...` line, say).
pub(crate) fn parse(line: &str) -> Option<Envelope<'_>> {
    let mut env = Envelope::default();
    let mut rest = line;
    let mut millis = [0u64; 2];
    let mut millis_count = 0;
    let mut nanos = [0u64; 2];
    let mut nanos_count = 0;
    let mut blank = false;
    while rest.starts_with('[') {
        let Ok((after, raw)) = group(rest) else {
            break;
        };
        let text = raw.trim();
        let bytes = text.as_bytes();
        if text.is_empty() {
            blank = true;
        } else if let Some(n) = integer_with_suffix(text, "ms") {
            if millis_count < 2 {
                millis[millis_count] = n;
                millis_count += 1;
            }
        } else if let Some(n) = integer_with_suffix(text, "ns") {
            if nanos_count < 2 {
                nanos[nanos_count] = n;
                nanos_count += 1;
            }
        } else if let Some(seconds) = uptime_seconds(text) {
            env.uptime_s = Some(seconds);
        } else if bytes.len() >= 20 && bytes[4] == b'-' && bytes[10] == b'T' {
            env.wall_text = Some(text);
        } else if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b',' | b'_' | b'.' | b'-'))
        {
            // pid, tid, level, tags and hostname are all of this alphabet;
            // anything else means this is not a unified-logging line.
            return None;
        }
        env.decorated = true;
        rest = after;
    }
    match millis_count {
        2 => {
            env.wall_millis = Some(millis[0] as i64);
            env.uptime_s.get_or_insert(millis[1] as f64 / 1000.0);
        }
        1 if millis[0] > EPOCH_MILLIS_THRESHOLD => env.wall_millis = Some(millis[0] as i64),
        1 => {
            env.uptime_s.get_or_insert(millis[0] as f64 / 1000.0);
        }
        _ => {}
    }
    // `timenanos` has an arbitrary origin; with two ns decorations the second is
    // `uptimenanos`, and a single one is taken as uptime when nothing else is.
    if nanos_count > 0 && env.uptime_s.is_none() {
        env.uptime_s = Some(nanos[nanos_count - 1] as f64 / 1e9);
    }
    env.continuation = blank;
    env.message = if env.decorated {
        rest.strip_prefix(' ').unwrap_or(rest)
    } else {
        rest
    };
    Some(env)
}

fn integer_with_suffix(text: &str, suffix: &str) -> Option<u64> {
    let digits = text.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `0.017s` or `1,474s`.
fn uptime_seconds(text: &str) -> Option<f64> {
    let number = text.strip_suffix('s')?;
    let separator = number.find(['.', ','])?;
    let (whole, fraction) = (&number[..separator], &number[separator + 1..]);
    if whole.is_empty()
        || fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: f64 = whole.parse().ok()?;
    let fraction_value: f64 = fraction.parse().ok()?;
    Some(whole + fraction_value / 10f64.powi(fraction.len() as i32))
}

/// `2022-01-29T16:34:51.654+0000` (HotSpot's form) or with a `+00:00` offset.
pub(crate) fn parse_iso8601(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z")
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_decorators_in_order() {
        let env = parse("[2020-04-22T12:36:40.485+0000][2.185s][boxname][5702][info ][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 53M->9M(1024M) 12.513ms").unwrap();
        assert_eq!(env.uptime_s, Some(2.185));
        assert_eq!(
            env.wall().unwrap().to_rfc3339(),
            "2020-04-22T12:36:40.485+00:00"
        );
        assert!(env.message.starts_with("GC(0) Pause Young"));
    }

    #[test]
    fn millis_disambiguated_by_position_and_magnitude() {
        let env =
            parse("[2021-04-26T14:16:47.634+0000][1619446607634ms][info][gc,heap,exit ] Heap")
                .unwrap();
        assert_eq!(env.wall_millis, Some(1619446607634));
        assert_eq!(env.uptime_s, None);
        let env = parse("[2023-12-06T07:32:54.113+0000][25ms] Using G1").unwrap();
        assert_eq!(env.uptime_s, Some(0.025));
        assert_eq!(env.message, "Using G1");
    }

    #[test]
    fn comma_uptime_and_no_decorations() {
        assert_eq!(
            parse("[1,474s][info][safepoint         ] Application time: 0,0423040 seconds")
                .unwrap()
                .uptime_s,
            Some(1.474)
        );
        let env = parse("GC(3) Pause Remark 1M->1M(5M) 1.0ms").unwrap();
        assert!(!env.decorated);
        assert_eq!(env.message, "GC(3) Pause Remark 1M->1M(5M) 1.0ms");
    }

    #[test]
    fn legacy_bracket_is_not_a_decoration() {
        assert!(
            parse("[GC (Allocation Failure) [PSYoungGen: 65536K->10746K(76288K)] 0.02 secs]")
                .is_none()
        );
    }
}
