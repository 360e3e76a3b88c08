//! Turning the user's words for an access log (a preset name, an nginx or
//! Apache format string, or `json` / `regex` with their fields) into a parser
//! format, the same way for the agent's configuration and for
//! `pausewatch analyze --latency`; and, for `analyze`, telling the format of
//! a log from its first lines.

use std::fmt;

use pausewatch_parsers::{
    parse_line, AccessFormat, DurationUnit, Server, TimeFormat, TimestampMeaning,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The fields `json` and `regex` need, and the format string of a custom
/// nginx or Apache layout; presets ignore them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessFields {
    /// An nginx `log_format` or Apache `LogFormat` string.
    pub log_format: Option<String>,
    pub time_field: Option<String>,
    pub duration_field: Option<String>,
    pub pattern: Option<String>,
    pub time_format: Option<TimeFormat>,
    pub duration_unit: Option<DurationUnit>,
    pub timestamp: Option<TimestampMeaning>,
}

/// Every format name accepted: the presets plus `json` and `regex`.
pub fn format_names() -> Vec<&'static str> {
    let mut names = AccessFormat::PRESETS.to_vec();
    names.extend(["json", "regex"]);
    names
}

pub fn parse_time_format(text: &str) -> Result<TimeFormat, String> {
    Ok(match text {
        "rfc3339" => TimeFormat::Rfc3339,
        "epoch_seconds" => TimeFormat::EpochSeconds,
        "epoch_millis" => TimeFormat::EpochMillis,
        "epoch_micros" => TimeFormat::EpochMicros,
        "clf" => TimeFormat::Clf,
        other => {
            return Err(format!(
                "unknown time format {other:?}: expected rfc3339, epoch_seconds, epoch_millis, epoch_micros or clf"
            ))
        }
    })
}

pub fn parse_duration_unit(text: &str) -> Result<DurationUnit, String> {
    Ok(match text {
        "s" | "seconds" => DurationUnit::Seconds,
        "ms" | "milliseconds" => DurationUnit::Milliseconds,
        "us" | "µs" | "microseconds" => DurationUnit::Microseconds,
        "ns" | "nanoseconds" => DurationUnit::Nanoseconds,
        other => {
            return Err(format!(
                "unknown duration unit {other:?}: expected s, ms, us or ns"
            ))
        }
    })
}

pub fn parse_timestamp_meaning(text: &str) -> Result<TimestampMeaning, String> {
    match text {
        "start" => Ok(TimestampMeaning::Start),
        "end" => Ok(TimestampMeaning::End),
        other => Err(format!(
            "unknown timestamp meaning {other:?}: expected start or end"
        )),
    }
}

/// Why a format could not be built, and which setting is at fault
/// (`format`, `log_format`), so the configuration can point at its line and
/// `analyze` at its flag.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatError {
    pub key: &'static str,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The parser format for `name` with `fields`; the error says what is
/// missing. With a `log_format`, `name` is `nginx` or `apache`, or absent
/// (then `$variables` mean nginx, `%directives` Apache).
pub fn build_format(
    name: Option<&str>,
    fields: &AccessFields,
) -> Result<AccessFormat, FormatError> {
    let error = |key, message: String| FormatError { key, message };
    if let Some(log_format) = &fields.log_format {
        let server = match name {
            Some("nginx") => Server::Nginx,
            Some("apache") => Server::Apache,
            None if log_format.contains('$') => Server::Nginx,
            None => Server::Apache,
            Some(other) => {
                return Err(error(
                    "format",
                    format!(
                        "log_format is read with format \"nginx\" or \"apache\", not {other:?}"
                    ),
                ))
            }
        };
        let format = AccessFormat::LogFormat {
            server,
            format: log_format.clone(),
        };
        format
            .validate()
            .map_err(|message| error("log_format", format!("{log_format:?}: {message}")))?;
        return Ok(format);
    }
    let name = name.ok_or_else(|| {
        error(
            "format",
            format!(
                "an access log needs a format: {}",
                format_names().join(", ")
            ),
        )
    })?;
    build_named(name, fields).map_err(|message| error("format", message))
}

fn build_named(name: &str, fields: &AccessFields) -> Result<AccessFormat, String> {
    let format = match name {
        "json" => AccessFormat::Json {
            time_field: fields
                .time_field
                .clone()
                .ok_or("format json needs time_field")?,
            time_format: fields.time_format.unwrap_or(TimeFormat::Rfc3339),
            duration_field: fields
                .duration_field
                .clone()
                .ok_or("format json needs duration_field")?,
            duration_unit: fields
                .duration_unit
                .ok_or("format json needs duration_unit")?,
            timestamp: fields.timestamp.unwrap_or(TimestampMeaning::Start),
        },
        "regex" => AccessFormat::Regex {
            pattern: fields.pattern.clone().ok_or("format regex needs pattern")?,
            time_format: fields.time_format.ok_or("format regex needs time_format")?,
            duration_unit: fields
                .duration_unit
                .ok_or("format regex needs duration_unit")?,
            timestamp: fields.timestamp.unwrap_or(TimestampMeaning::Start),
        },
        preset => AccessFormat::preset(preset).ok_or_else(|| {
            format!(
                "unknown access log format {preset:?}: expected one of {}",
                format_names().join(", ")
            )
        })?,
    };
    format.validate()?;
    Ok(format)
}

/// The first non-blank lines of a log, what detection looks at.
fn sample<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    lines.filter(|l| !l.trim().is_empty()).take(50).collect()
}

/// How many lines of `sample` `format` parses.
fn parsed_count(format: &AccessFormat, sample: &[&str]) -> usize {
    sample
        .iter()
        .filter(|line| parse_line(format, line).is_some())
        .count()
}

/// The preset that parses most of the sample lines, for `analyze` without
/// `--latency-format`.
pub fn detect_preset<'a>(lines: impl Iterator<Item = &'a str>) -> Option<AccessFormat> {
    let sample = sample(lines);
    AccessFormat::PRESETS
        .iter()
        .filter_map(|name| AccessFormat::preset(name))
        .map(|format| (parsed_count(&format, &sample), format))
        .filter(|(parsed, _)| *parsed * 2 > sample.len())
        .max_by_key(|(parsed, _)| *parsed)
        .map(|(_, format)| format)
}

/// Names of time fields in JSON access logs, most specific first, and
/// whether they are the request's start. Other times are taken as the end:
/// a logger stamps a line when it writes it, after the response.
const TIME_FIELDS: [(&str, TimestampMeaning); 9] = [
    ("start_time", TimestampMeaning::Start),
    ("start", TimestampMeaning::Start),
    ("started_at", TimestampMeaning::Start),
    ("@timestamp", TimestampMeaning::End),
    ("timestamp", TimestampMeaning::End),
    ("time", TimestampMeaning::End),
    ("ts", TimestampMeaning::End),
    ("datetime", TimestampMeaning::End),
    ("date", TimestampMeaning::End),
];

/// Stems of duration field names; the unit comes from a suffix (`_ms`).
const DURATION_STEMS: [&str; 8] = [
    "duration",
    "latency",
    "elapsed",
    "request_time",
    "response_time",
    "took",
    "time_taken",
    "request_duration",
];

const UNIT_SUFFIXES: [(&str, DurationUnit); 12] = [
    ("_ms", DurationUnit::Milliseconds),
    ("_millis", DurationUnit::Milliseconds),
    ("_milliseconds", DurationUnit::Milliseconds),
    ("_us", DurationUnit::Microseconds),
    ("_micros", DurationUnit::Microseconds),
    ("_microseconds", DurationUnit::Microseconds),
    ("_ns", DurationUnit::Nanoseconds),
    ("_nanos", DurationUnit::Nanoseconds),
    ("_s", DurationUnit::Seconds),
    ("_sec", DurationUnit::Seconds),
    ("_secs", DurationUnit::Seconds),
    ("_seconds", DurationUnit::Seconds),
];

/// A duration field's unit from its name: `duration_ms` is milliseconds;
/// nginx's `request_time` is seconds; a bare `duration` is unknown
/// (`Some(None)`); not a duration name: `None`.
fn duration_unit_of(name: &str) -> Option<Option<DurationUnit>> {
    let lower = name.to_ascii_lowercase();
    if lower == "request_time" {
        return Some(Some(DurationUnit::Seconds));
    }
    if DURATION_STEMS.contains(&lower.as_str()) {
        return Some(None);
    }
    UNIT_SUFFIXES.iter().find_map(|(suffix, unit)| {
        let stem = lower.strip_suffix(suffix)?;
        DURATION_STEMS.contains(&stem).then_some(Some(*unit))
    })
}

/// How a time value is written: RFC 3339 or CLF text, or epoch seconds,
/// milliseconds or microseconds told apart by magnitude.
fn time_format_of(value: &Value) -> Option<TimeFormat> {
    let epoch = |number: f64| {
        [
            (1e9..1e11, TimeFormat::EpochSeconds),
            (1e11..1e14, TimeFormat::EpochMillis),
            (1e14..1e17, TimeFormat::EpochMicros),
        ]
        .into_iter()
        .find(|(range, _)| range.contains(&number))
        .map(|(_, format)| format)
    };
    match value {
        Value::Number(number) => epoch(number.as_f64()?),
        Value::String(text) => [TimeFormat::Rfc3339, TimeFormat::Clf]
            .into_iter()
            .find(|format| format.parse(text).is_some())
            .or_else(|| epoch(text.trim().parse().ok()?)),
        _ => None,
    }
}

/// For `analyze` without `--latency-format` on JSON lines: a time field and
/// a duration field found by their common names (`time`, `timestamp`,
/// `@timestamp`, `start`, `ts`, ... / `duration_ms`, `request_time`,
/// `latency_us`, ...), the unit from the name's suffix. `hints` (the
/// `--time-field`, `--duration-unit`, ... flags) override what is guessed.
/// `Ok(None)` when the lines are not JSON objects; the error names the
/// fields found and the flags to pass.
pub fn detect_json<'a>(
    lines: impl Iterator<Item = &'a str>,
    hints: &AccessFields,
) -> Result<Option<AccessFormat>, String> {
    let sample = sample(lines);
    let Some(Value::Object(first)) = sample.first().and_then(|l| serde_json::from_str(l).ok())
    else {
        return Ok(None);
    };
    let found: Vec<&str> = first.keys().map(String::as_str).collect();
    let flags = "pass --latency-format json --time-field F --time-format rfc3339|epoch_seconds|epoch_millis|epoch_micros --duration-field F --duration-unit s|ms|us|ns";
    let time_field = match &hints.time_field {
        Some(field) => field.clone(),
        None => TIME_FIELDS
            .iter()
            .find(|(name, _)| first.contains_key(*name))
            .map(|(name, _)| name.to_string())
            .ok_or_else(|| {
                format!(
                    "JSON lines without a time field by a known name (fields: {found:?}); {flags}"
                )
            })?,
    };
    let time_format = match hints.time_format {
        Some(format) => format,
        None => first
            .get(&time_field)
            .and_then(time_format_of)
            .ok_or_else(|| {
                format!("JSON time field {time_field:?} holds no time pausewatch can read ({:?}); {flags}", first.get(&time_field))
            })?,
    };
    let timestamp = hints.timestamp.unwrap_or_else(|| {
        TIME_FIELDS
            .iter()
            .find(|(name, _)| *name == time_field)
            .map_or(TimestampMeaning::End, |(_, meaning)| *meaning)
    });
    let duration_field = match &hints.duration_field {
        Some(field) => field.clone(),
        None => {
            let mut candidates: Vec<(&str, Option<DurationUnit>)> = found
                .iter()
                .filter_map(|name| Some((*name, duration_unit_of(name)?)))
                .collect();
            // A name that says its unit beats one that does not.
            candidates.sort_by_key(|(_, unit)| unit.is_none());
            match (candidates.first(), hints.duration_unit) {
                (Some((name, Some(_))), _) | (Some((name, None)), Some(_)) => name.to_string(),
                (Some((name, None)), None) => {
                    return Err(format!(
                        "JSON duration field {name:?} does not say its unit; pass --duration-unit s|ms|us|ns (or {flags})"
                    ))
                }
                (None, _) => {
                    return Err(format!(
                        "JSON lines without a duration field by a known name (fields: {found:?}); {flags}"
                    ))
                }
            }
        }
    };
    let duration_unit = match hints.duration_unit {
        Some(unit) => unit,
        None => duration_unit_of(&duration_field).flatten().ok_or_else(|| {
            format!("JSON duration field {duration_field:?} does not say its unit; pass --duration-unit s|ms|us|ns")
        })?,
    };
    let format = AccessFormat::Json {
        time_field,
        time_format,
        duration_field,
        duration_unit,
        timestamp,
    };
    if parsed_count(&format, &sample) * 2 <= sample.len() {
        return Err(format!(
            "JSON lines, but most do not parse as {}; {flags}",
            format.expected()
        ));
    }
    Ok(Some(format))
}

/// `50ms`, `-20ms`: humantime with an optional sign, for clock offsets.
pub fn parse_signed_duration(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (sign, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    humantime::parse_duration(magnitude.trim())
        .map(|d| sign * d.as_secs_f64())
        .map_err(|e| format!("invalid duration {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_field_formats_build_and_explain_what_is_missing() {
        assert_eq!(
            build_format(Some("envoy"), &AccessFields::default()),
            Ok(AccessFormat::Envoy)
        );
        assert_eq!(
            build_format(Some("json"), &AccessFields::default()),
            Err(FormatError {
                key: "format",
                message: "format json needs time_field".to_string()
            })
        );
        let fields = AccessFields {
            time_field: Some("start".into()),
            duration_field: Some("duration_ms".into()),
            duration_unit: Some(DurationUnit::Milliseconds),
            ..AccessFields::default()
        };
        assert!(build_format(Some("json"), &fields).is_ok());
        assert!(build_format(Some("lighttpd"), &fields)
            .unwrap_err()
            .message
            .contains("nginx"));
        assert_eq!(parse_signed_duration("-20ms"), Ok(-0.020));
        assert_eq!(parse_signed_duration("1s"), Ok(1.0));
    }

    #[test]
    fn detection_picks_the_preset_that_parses_the_lines() {
        // Envoy's documented example line (envoyproxy.io, access logging, default format).
        let envoy = "[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"";
        assert_eq!(
            detect_preset([envoy, envoy].into_iter()),
            Some(AccessFormat::Envoy)
        );
        assert_eq!(detect_preset(["not a log line"].into_iter()), None);
    }

    #[test]
    fn json_lines_are_detected_by_their_field_names() {
        // The first line of tests/fixtures/latency/jdk17-parallel/access.jsonl.
        let line = r#"{"start":"2026-11-30T02:21:20.253286Z","duration_ms":0.816,"status":200,"path":"/price"}"#;
        assert_eq!(
            detect_json([line].into_iter(), &AccessFields::default()),
            Ok(Some(AccessFormat::Json {
                time_field: "start".into(),
                time_format: TimeFormat::Rfc3339,
                duration_field: "duration_ms".into(),
                duration_unit: DurationUnit::Milliseconds,
                timestamp: TimestampMeaning::Start,
            }))
        );
        // Epoch milliseconds by magnitude; a bare `latency` needs its unit.
        let line = r#"{"ts":1700000000500,"latency":12,"path":"/"}"#;
        let e = detect_json([line].into_iter(), &AccessFields::default()).unwrap_err();
        assert!(
            e.contains("\"latency\"") && e.contains("--duration-unit"),
            "{e}"
        );
        let hints = AccessFields {
            duration_unit: Some(DurationUnit::Milliseconds),
            ..AccessFields::default()
        };
        let Ok(Some(AccessFormat::Json {
            time_format,
            timestamp,
            ..
        })) = detect_json([line].into_iter(), &hints)
        else {
            panic!("not detected");
        };
        assert_eq!(
            (time_format, timestamp),
            (TimeFormat::EpochMillis, TimestampMeaning::End)
        );
        let e = detect_json([r#"{"when":"x","status":200}"#].into_iter(), &hints).unwrap_err();
        assert!(e.contains("\"when\"") && e.contains("--time-field"), "{e}");
        assert_eq!(detect_json(["plain text"].into_iter(), &hints), Ok(None));
    }
}
