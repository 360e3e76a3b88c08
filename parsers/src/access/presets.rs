//! The grammars of the formats pausewatch knows by name (nginx, Apache httpd,
//! Tomcat, Envoy), of JSON lines and of a user's regex: one function per
//! format, each a line in and a [`Request`] out, so a new product adds a
//! function here and an arm in the front door's dispatch.

use regex::Regex;
use serde_json::Value;

use super::fields::*;

/// The text between the first `[` and the next `]`, and the rest of the line.
pub(super) fn bracketed(line: &str) -> Option<(&str, &str)> {
    let open = line.find('[')?;
    let close = open + 1 + line[open + 1..].find(']')?;
    Some((&line[open + 1..close], &line[close + 1..]))
}

/// What follows the bracketed time in the CLF family: a quoted request line.
pub(super) fn request_follows(rest: &str) -> bool {
    rest.trim_start().starts_with('"')
}

/// The last whitespace-separated field of `text`.
pub(super) fn last_field(text: &str) -> Option<&str> {
    text.split_ascii_whitespace().next_back()
}

pub(super) fn nginx(line: &str) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let logged = clf(stamp).or_else(|| rfc3339(stamp))?;
    let mut tail = rest.split_ascii_whitespace().rev();
    let last = tail.next()?;
    if let Some(before) = tail.next() {
        if let (Some(request_time), Some(msec)) =
            (scaled_decimal(before, 9), scaled_decimal(last, 9))
        {
            // `$msec` and the bracketed time are taken at the same moment, the
            // latter truncated to the second; disagreement means the pair is
            // something else (`$body_bytes_sent $request_time`, say).
            if let Some(end) = epoch(msec) {
                if end.signed_duration_since(logged).num_milliseconds().abs() <= 2000 {
                    return request(end, TimestampMeaning::End, request_time);
                }
            }
        }
    }
    request(logged, TimestampMeaning::End, scaled_decimal(last, 9)?)
}

pub(super) fn apache(line: &str) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let start = clf(stamp)?;
    let micros = whole_number(last_field(rest)?)?;
    request(start, TimestampMeaning::Start, micros.checked_mul(1_000)?)
}

pub(super) fn tomcat(line: &str, unit: DurationUnit) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let end = match whole_number(stamp) {
        Some(millis) => epoch(millis.checked_mul(1_000_000)?)?,
        None => clf(stamp)?,
    };
    let taken = whole_number(last_field(rest)?)?;
    let nanos = taken.checked_mul(10i128.pow(unit.nanos_exponent()))?;
    request(end, TimestampMeaning::End, nanos)
}

pub(super) fn envoy(line: &str) -> Option<Request> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (stamp, rest) = rest.split_once(']')?;
    let start = rfc3339(stamp)?;
    let rest = rest.strip_prefix(' ')?.strip_prefix('"')?;
    // The request line may itself hold quotes: try each closing quote until
    // the fields after it have the shape of
    // `%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%`.
    for (quote, _) in rest.match_indices('"') {
        let Some(after) = rest[quote + 1..].strip_prefix(' ') else {
            continue;
        };
        let mut fields = after.split(' ');
        let mut next = || fields.next().filter(|field| !field.is_empty());
        let (Some(code), Some(_flags), Some(received), Some(sent), Some(duration)) =
            (next(), next(), next(), next(), next())
        else {
            continue;
        };
        if whole_number(code).is_none()
            || whole_number(received).is_none()
            || whole_number(sent).is_none()
        {
            continue;
        }
        let millis = whole_number(duration)?;
        return request(
            start,
            TimestampMeaning::Start,
            millis.checked_mul(1_000_000)?,
        );
    }
    None
}

pub(super) fn json(
    line: &str,
    time_field: &str,
    time_format: TimeFormat,
    duration_field: &str,
    unit: DurationUnit,
    meaning: TimestampMeaning,
) -> Option<Request> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    let at = match lookup(&value, time_field)? {
        Value::String(text) => time_format.parse(text)?,
        Value::Number(number) => match time_format {
            TimeFormat::EpochSeconds | TimeFormat::EpochMillis | TimeFormat::EpochMicros => {
                time_format.parse(&number.to_string())?
            }
            TimeFormat::Rfc3339 | TimeFormat::Clf => return None,
        },
        _ => return None,
    };
    let nanos = match lookup(&value, duration_field)? {
        Value::String(text) => scaled_decimal(text, unit.nanos_exponent())?,
        Value::Number(number) => scaled_decimal(&number.to_string(), unit.nanos_exponent())?,
        _ => return None,
    };
    request(at, meaning, nanos)
}

/// A field of a JSON object by name, or by dotted path into nested objects.
pub(super) fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let object = value.as_object()?;
    if let Some(found) = object.get(path) {
        return Some(found);
    }
    if !path.contains('.') {
        return None;
    }
    let mut current = value;
    for key in path.split('.') {
        current = current.as_object()?.get(key)?;
    }
    Some(current)
}

pub(super) fn by_regex(
    regex: &Regex,
    line: &str,
    time_format: TimeFormat,
    unit: DurationUnit,
    timestamp: TimestampMeaning,
) -> Option<Request> {
    let captures = regex.captures(line)?;
    let (stamp, meaning) = if let Some(start) = captures.name("start") {
        (start.as_str(), TimestampMeaning::Start)
    } else if let Some(end) = captures.name("end") {
        (end.as_str(), TimestampMeaning::End)
    } else {
        (captures.name("time")?.as_str(), timestamp)
    };
    let at = time_format.parse(stamp)?;
    let nanos = scaled_decimal(captures.name("duration")?.as_str(), unit.nanos_exponent())?;
    request(at, meaning, nanos)
}
