//! `[[access_log]]`: request logs lined up with a GC stream.

use pausewatch_parsers::AccessFormat;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::access_format::{build_format, AccessFields};
use super::gc_log::GcLogSource;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{
    DurationUnitName, LineCap, NonEmpty, Offset, Text, TimeFormatName, TimestampName,
};
use super::{StartAt, DEFAULT_MAX_LINE_BYTES};

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
    path: Option<NonEmpty>,
    format: Option<Spanned<Text>>,
    gc_log: Option<Spanned<Text>>,
    start_at: Option<StartAt>,
    offset: Option<Offset>,
    max_line_bytes: Option<LineCap>,
    follow_symlinks_outside: Option<bool>,
    time_field: Option<Text>,
    duration_field: Option<Text>,
    pattern: Option<Text>,
    time_format: Option<TimeFormatName>,
    duration_unit: Option<DurationUnitName>,
    timestamp: Option<TimestampName>,
    log_format: Option<Spanned<Text>>,
}

impl Ctx<'_> {
    /// The source, once its format is built from its keys (an error lands on
    /// `format` or `log_format`) and its `gc_log` link found.
    pub(super) fn access_source(
        &self,
        i: usize,
        raw: Spanned<RawAccessLog>,
        gc_logs: &[GcLogSource],
    ) -> Result<AccessLogSource, ConfigError> {
        let at = |k: &str| vec![key("access_log"), Seg::Index(i), key(k)];
        let span = raw.span();
        let r = raw.into_inner();
        let Some(path) = r.path else {
            return Err(self.missing(span, &at("path"), "a file path or glob"));
        };
        let text = |v: &Option<Spanned<Text>>| v.as_ref().map(|v| v.get_ref().0.clone());
        let fields = AccessFields {
            log_format: text(&r.log_format),
            time_field: r.time_field.map(|v| v.0),
            duration_field: r.duration_field.map(|v| v.0),
            pattern: r.pattern.map(|v| v.0),
            time_format: r.time_format.map(|v| v.0),
            duration_unit: r.duration_unit.map(|v| v.0),
            timestamp: r.timestamp.map(|v| v.0),
        };
        let format = build_format(text(&r.format).as_deref(), &fields).map_err(|e| {
            let value = if e.key == "log_format" {
                &r.log_format
            } else {
                &r.format
            };
            let span = value.as_ref().map_or(span.clone(), Spanned::span);
            self.err(span, &at(e.key), e.message)
        })?;
        Ok(AccessLogSource {
            path: path.0,
            format,
            gc_log: self.gc_link(span, r.gc_log, &at("gc_log"), gc_logs)?,
            start_at: r.start_at.unwrap_or_default(),
            offset_seconds: r.offset.map_or(0.0, |v| v.0),
            max_line_bytes: r.max_line_bytes.map_or(DEFAULT_MAX_LINE_BYTES, |v| v.0),
            follow_symlinks_outside: r.follow_symlinks_outside.unwrap_or(false),
        })
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
