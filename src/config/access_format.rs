//! Turning the user's words for an access log (a preset name, or `json` /
//! `regex` with their fields) into a parser format, the same way for the
//! agent's configuration and for `pausewatch analyze --latency`.

use pausewatch_parsers::{parse_line, AccessFormat, DurationUnit, TimeFormat, TimestampMeaning};
use serde::{Deserialize, Serialize};

/// The fields `json` and `regex` need; presets ignore them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessFields {
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

/// The parser format for `name` with `fields`; the error says what is missing.
pub fn build_format(name: &str, fields: &AccessFields) -> Result<AccessFormat, String> {
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

/// The preset that parses most of the sample lines, for `analyze` without
/// `--latency-format`.
pub fn detect_preset<'a>(lines: impl Iterator<Item = &'a str>) -> Option<AccessFormat> {
    let sample: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).take(50).collect();
    AccessFormat::PRESETS
        .iter()
        .filter_map(|name| AccessFormat::preset(name))
        .map(|format| {
            let parsed = sample
                .iter()
                .filter(|line| parse_line(&format, line).is_some())
                .count();
            (parsed, format)
        })
        .filter(|(parsed, _)| *parsed * 2 > sample.len())
        .max_by_key(|(parsed, _)| *parsed)
        .map(|(_, format)| format)
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
            build_format("envoy", &AccessFields::default()),
            Ok(AccessFormat::Envoy)
        );
        assert_eq!(
            build_format("json", &AccessFields::default()),
            Err("format json needs time_field".to_string())
        );
        let fields = AccessFields {
            time_field: Some("start".into()),
            duration_field: Some("duration_ms".into()),
            duration_unit: Some(DurationUnit::Milliseconds),
            ..AccessFields::default()
        };
        assert!(build_format("json", &fields).is_ok());
        assert!(build_format("lighttpd", &fields)
            .unwrap_err()
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
}
