//! `[[access_log]]`: request logs lined up with a GC stream.

use pausewatch_parsers::AccessFormat;
use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use super::gc_log::GcLogSource;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::{StartAt, DEFAULT_MAX_LINE_BYTES};
use crate::config::access_format::{
    build_format, parse_duration_unit, parse_signed_duration, parse_time_format,
    parse_timestamp_meaning, AccessFields,
};

/// An access log to line up with a GC log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessLogSource {
    /// A path or a glob, followed like a GC log (rotation, checkpoints).
    pub path: String,
    pub format: AccessFormat,
    /// The live path of the GC log whose JVM serves these requests: named,
    /// or the only `[[gc_log]]` when that is a plain path.
    pub gc_log: String,
    pub start_at: StartAt,
    /// Seconds added to every request time, for clock skew between the logs.
    pub offset_seconds: f64,
    pub max_line_bytes: usize,
    /// As for `[[gc_log]]`.
    pub follow_symlinks_outside: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an [[access_log]] table")]
pub(super) struct RawAccessLog {
    path: Option<Spanned<Value>>,
    format: Option<Spanned<Value>>,
    gc_log: Option<Spanned<Value>>,
    start_at: Option<Spanned<StartAt>>,
    offset: Option<Spanned<Value>>,
    max_line_bytes: Option<Spanned<Value>>,
    follow_symlinks_outside: Option<Spanned<bool>>,
    time_field: Option<Spanned<Value>>,
    duration_field: Option<Spanned<Value>>,
    pattern: Option<Spanned<Value>>,
    time_format: Option<Spanned<Value>>,
    duration_unit: Option<Spanned<Value>>,
    timestamp: Option<Spanned<Value>>,
    log_format: Option<Spanned<Value>>,
}

impl Ctx<'_> {
    pub(super) fn access_source(
        &self,
        i: usize,
        raw: &Spanned<RawAccessLog>,
        gc_logs: &[GcLogSource],
    ) -> Result<AccessLogSource, ConfigError> {
        let at = |k: &str| vec![key("access_log"), Seg::Index(i), key(k)];
        let r = raw.get_ref();
        let path = self.required_string(raw.span(), &r.path, &at("path"), "a file path or glob")?;
        let fields = AccessFields {
            log_format: self.optional_string(&r.log_format, &at("log_format"))?,
            time_field: self.optional_string(&r.time_field, &at("time_field"))?,
            duration_field: self.optional_string(&r.duration_field, &at("duration_field"))?,
            pattern: self.optional_string(&r.pattern, &at("pattern"))?,
            time_format: self.parsed(&r.time_format, &at("time_format"), parse_time_format)?,
            duration_unit: self.parsed(
                &r.duration_unit,
                &at("duration_unit"),
                parse_duration_unit,
            )?,
            timestamp: self.parsed(&r.timestamp, &at("timestamp"), parse_timestamp_meaning)?,
        };
        let name = self.optional_string(&r.format, &at("format"))?;
        let format = build_format(name.as_deref(), &fields).map_err(|e| {
            let value = if e.key == "log_format" {
                &r.log_format
            } else {
                &r.format
            };
            let span = value.as_ref().map_or(raw.span(), |v| v.span());
            self.err(span, &at(e.key), e.message)
        })?;
        Ok(AccessLogSource {
            path,
            format,
            gc_log: self.gc_link(raw.span(), &r.gc_log, &at("gc_log"), gc_logs)?,
            start_at: r
                .start_at
                .as_ref()
                .map(|s| *s.get_ref())
                .unwrap_or_default(),
            offset_seconds: self
                .parsed(&r.offset, &at("offset"), parse_signed_duration)?
                .unwrap_or(0.0),
            max_line_bytes: match &r.max_line_bytes {
                None => DEFAULT_MAX_LINE_BYTES,
                Some(v) => self.line_cap(v, &at("max_line_bytes"))?,
            },
            follow_symlinks_outside: r
                .follow_symlinks_outside
                .as_ref()
                .is_some_and(|v| *v.get_ref()),
        })
    }

    /// One value parsed by `parse`, its error placed on the value's line.
    fn parsed<T>(
        &self,
        value: &Option<Spanned<Value>>,
        path: &[Seg],
        parse: fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = value else { return Ok(None) };
        let text = self.string(v, path)?;
        parse(text.trim())
            .map(Some)
            .map_err(|message| self.err(v.span(), path, message))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pausewatch_parsers::AccessFormat;

    use super::super::tests::{parse_err, parse_ok};

    #[test]
    fn access_logs_histograms_and_correlation() {
        let config = parse_ok(&[
            "[[gc_log]]",
            "path = \"/var/log/pricing/gc.log\"",
            "[[access_log]]",
            "path = \"/var/log/nginx/pricing.log\"",
            "format = \"nginx\"",
            "offset = \"-20ms\"",
            "[[access_log]]",
            "path = \"/var/log/pricing/requests.jsonl\"",
            "format = \"json\"",
            "time_field = \"start\"",
            "duration_field = \"duration_ms\"",
            "duration_unit = \"ms\"",
            "[[latency_histogram]]",
            "url = \"http://127.0.0.1:8080/actuator/prometheus\"",
            "matchers = { uri = \"/price\" }",
            "[correlation]",
            "slo = \"50ms\"",
            "affected_share = 0.5",
        ]);
        assert_eq!(config.access_log[0].format, AccessFormat::Nginx);
        assert_eq!(config.access_log[0].offset_seconds, -0.020);
        assert_eq!(config.access_log[0].gc_log, "/var/log/pricing/gc.log");
        assert!(matches!(
            config.access_log[1].format,
            AccessFormat::Json { .. }
        ));
        assert_eq!(
            config.latency_histogram[0].metric,
            "http_server_requests_seconds"
        );
        assert_eq!(
            config.latency_histogram[0].interval,
            Duration::from_secs(15)
        );
        assert_eq!(config.correlation.slo, Some(Duration::from_millis(50)));
        assert_eq!(config.correlation.affected_share, 0.5);
    }

    #[test]
    fn access_log_errors_name_their_key() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = \"/a/gc.log\"",
                "[[access_log]]",
                "path = \"/a/x.log\"",
                "format = \"json\"",
            ],
            5,
            "access_log[0].format",
        );
        assert!(e.message.contains("time_field"), "{e}");
        parse_err(
            &[
                "[[gc_log]]",
                "path = \"/a/gc.log\"",
                "[[access_log]]",
                "path = \"/a/x.log\"",
                "format = \"lighttpd\"",
            ],
            5,
            "access_log[0].format",
        );
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = \"/a/gc.log\"",
                "[[gc_log]]",
                "path = \"/b/gc.log\"",
                "[[access_log]]",
                "path = \"/a/x.log\"",
                "format = \"nginx\"",
            ],
            5,
            "access_log[0].gc_log",
        );
        assert!(e.message.contains("2 [[gc_log]] sources"), "{e}");
    }

    #[test]
    fn a_custom_log_format_is_compiled_and_its_errors_name_the_key_and_the_variable() {
        let config = parse_ok(&[
            "[[gc_log]]",
            "path = \"/a/gc.log\"",
            "[[access_log]]",
            "path = \"/a/x.log\"",
            "format = \"nginx\"",
            "log_format = '$msec $request_time \"$request\" $status'",
        ]);
        assert!(matches!(
            config.access_log[0].format,
            AccessFormat::LogFormat {
                server: pausewatch_parsers::Server::Nginx,
                ..
            }
        ));
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = \"/a/gc.log\"",
                "[[access_log]]",
                "path = \"/a/x.log\"",
                "format = \"apache\"",
                "log_format = '%h %t \\\"%r\\\" %>s %b'",
            ],
            6,
            "access_log[0].log_format",
        );
        assert!(e.message.contains("no duration variable"), "{e}");
        assert!(e.message.contains("%D"), "{e}");
        parse_err(
            &[
                "[[gc_log]]",
                "path = \"/a/gc.log\"",
                "[[access_log]]",
                "path = \"/a/x.log\"",
                "format = \"envoy\"",
                "log_format = '$msec $request_time'",
            ],
            5,
            "access_log[0].format",
        );
    }
}
