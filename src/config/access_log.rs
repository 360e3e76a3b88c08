//! `[[access_log]]`: request logs lined up with a GC stream.

use std::collections::BTreeMap;

use documented::DocumentedFields;
use pausewatch_parsers::AccessFormat;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::access_format::{build_format, AccessFields};
use super::gc_log::GcLogSource;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{
    DurationUnitName, LineCap, NonEmpty, Offset, Port, Text, TimeFormatName, TimestampName,
};
use super::{StartAt, DEFAULT_MAX_LINE_BYTES};

/// An access log to line up with a GC log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessLogSource {
    /// A path or a glob, followed like a GC log (rotation, checkpoints).
    pub path: String,
    pub format: AccessFormat,
    /// The JVM that serves these requests.
    #[serde(flatten)]
    pub target: AccessTarget,
    pub start_at: StartAt,
    /// Seconds added to every request time, for clock skew between the logs.
    pub offset_seconds: f64,
    pub max_line_bytes: usize,
    /// As for `[[gc_log]]`.
    pub follow_symlinks_outside: bool,
}

/// Which JVM serves an access log's requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessTarget {
    /// The live path of the GC log whose JVM it is: named, or the only
    /// `[[gc_log]]` when that is a plain path.
    GcLog(String),
    /// A JVM discovery finds, which may write no GC log at all.
    Jvm(JvmSelector),
}

/// A discovered JVM, by what it has: every given part must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JvmSelector {
    /// A TCP port it listens on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Labels it carries: a `[[discovery.rule]]`'s (`service`), or
    /// discovery's own (`jvm`, `program`, `container`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl JvmSelector {
    /// Whether a JVM with these labels and listening ports is the one.
    pub fn selects(&self, labels: &BTreeMap<String, String>, ports: &[u16]) -> bool {
        self.port.is_none_or(|port| ports.contains(&port))
            && (self.labels.iter()).all(|(name, value)| labels.get(name) == Some(value))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of `port` and `labels`")]
pub(super) struct RawJvmSelector {
    port: Option<Port>,
    #[serde(default)]
    labels: BTreeMap<String, Text>,
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "an [[access_log]] table")]
pub(super) struct RawAccessLog {
    /// The access log, a path or a glob, followed like a GC log.
    ///
    /// Default: required
    path: Option<NonEmpty>,
    /// nginx, apache, tomcat, tomcat9, tomcat-begin-msec, tomcat9-begin-msec,
    /// envoy, envoy-json, json or regex.
    ///
    /// Default: required unless log_format is given
    format: Option<Spanned<Text>>,
    /// Any other nginx or Apache layout: the server's own format string.
    ///
    /// Default: none
    log_format: Option<Spanned<Text>>,
    /// Live path of the GC log of the JVM serving these requests; required with
    /// several GC sources or a glob.
    ///
    /// Default: the only [[gc_log]] path
    gc_log: Option<Spanned<Text>>,
    /// Instead of gc_log: the discovered JVM serving these requests, by a port
    /// it listens on and labels it has, e.g. { port = 8080 } or { labels = {
    /// service = "pricing" } }; the newest match. Beside the kernel's request
    /// latency it is kept as the server's view.
    ///
    /// Default: none
    jvm: Option<Spanned<RawJvmSelector>>,
    /// As for [[gc_log]].
    ///
    /// Default: `"end"`
    start_at: Option<StartAt>,
    /// Added to request times for clock skew; may be negative.
    ///
    /// Default: `"0ms"`
    offset: Option<Offset>,
    /// As for [[gc_log]].
    ///
    /// Default: `65536`
    max_line_bytes: Option<LineCap>,
    /// As for [[gc_log]].
    ///
    /// Default: `false`
    follow_symlinks_outside: Option<bool>,
    /// json: the field holding the time (dotted for nested fields).
    ///
    /// Default: none
    time_field: Option<Text>,
    /// json: the field holding the duration.
    ///
    /// Default: none
    duration_field: Option<Text>,
    /// regex: named groups duration and start, end or time.
    ///
    /// Default: none
    pattern: Option<Text>,
    /// json, regex: rfc3339, epoch_seconds, epoch_millis, epoch_micros or clf.
    ///
    /// Default: none
    time_format: Option<TimeFormatName>,
    /// json, regex: s, ms, us or ns.
    ///
    /// Default: none
    duration_unit: Option<DurationUnitName>,
    /// json, regex: start or end, which instant the time is.
    ///
    /// Default: none
    timestamp: Option<TimestampName>,
}

impl Ctx<'_> {
    /// The source, once its format is built from its keys (an error lands on
    /// `format` or `log_format`) and its JVM named (`gc_log` or `jvm`).
    pub(super) fn access_source(
        &self,
        i: usize,
        raw: Spanned<RawAccessLog>,
        gc_logs: &[GcLogSource],
        discovery: bool,
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
        let target = match r.jvm {
            None => AccessTarget::GcLog(self.gc_link(span, r.gc_log, &at("gc_log"), gc_logs)?),
            Some(jvm) => {
                let (jvm_span, jvm) = (jvm.span(), jvm.into_inner());
                let selector = JvmSelector {
                    port: jvm.port.map(|port| port.0),
                    labels: (jvm.labels.into_iter())
                        .map(|(name, value)| (name, value.0))
                        .collect(),
                };
                let problem = if r.gc_log.is_some() {
                    Some("name the JVM by `gc_log` or by `jvm`, not both")
                } else if selector == JvmSelector::default() {
                    Some("`jvm` needs a `port` the JVM listens on or `labels` it has, e.g. jvm = { labels = { service = \"pricing\" } }")
                } else if !discovery {
                    Some("`jvm` names a JVM that discovery finds, and [discovery] enabled = false")
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(self.err(jvm_span, &at("jvm"), problem.to_string()));
                }
                AccessTarget::Jvm(selector)
            }
        };
        Ok(AccessLogSource {
            path: path.0,
            format,
            target,
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
    use super::{AccessTarget, JvmSelector};

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
        assert_eq!(
            config.access_log[0].target,
            AccessTarget::GcLog("/var/log/pricing/gc.log".into())
        );
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

    #[test]
    fn an_access_log_names_a_discovered_jvm_by_port_or_labels() {
        let config = parse_ok(&[
            "[[discovery.rule]]",
            "match = \"pricing\\\\.jar\"",
            "labels = { service = \"pricing\" }",
            "[[access_log]]",
            "path = \"/var/log/pricing/access.log\"",
            "format = \"nginx\"",
            "jvm = { labels = { service = \"pricing\" } }",
            "[[access_log]]",
            "path = \"/var/log/admin/access.log\"",
            "format = \"nginx\"",
            "jvm = { port = 8081 }",
        ]);
        let AccessTarget::Jvm(by_labels) = &config.access_log[0].target else {
            panic!("{:?}", config.access_log[0].target);
        };
        let pricing = [("service".to_string(), "pricing".to_string())].into();
        assert!(by_labels.selects(&pricing, &[]));
        assert!(!by_labels.selects(&Default::default(), &[8080]));
        let AccessTarget::Jvm(by_port) = &config.access_log[1].target else {
            panic!("{:?}", config.access_log[1].target);
        };
        assert_eq!(
            by_port,
            &JvmSelector {
                port: Some(8081),
                labels: Default::default()
            }
        );
        assert!(by_port.selects(&pricing, &[8080, 8081]));
        assert!(!by_port.selects(&pricing, &[8080]));
        // Printed back as written.
        let printed = toml::to_string(&config).unwrap();
        assert!(printed.contains("[access_log.jvm.labels]"), "{printed}");
    }

    #[test]
    fn a_jvm_target_is_checked() {
        let access = [
            "[[access_log]]",
            "path = \"/a/x.log\"",
            "format = \"nginx\"",
        ];
        for (jvm, key, message) in [
            ("jvm = {}", "access_log[0].jvm", "needs a `port`"),
            (
                "jvm = { port = 70000 }",
                "access_log[0].jvm.port",
                "out of range",
            ),
            (
                "jvm = { pid = 1 }",
                "access_log[0].jvm.pid",
                "unknown field",
            ),
        ] {
            let lines = [&access[..], &[jvm]].concat();
            let e = parse_err(&lines, 4, key);
            assert!(e.message.contains(message), "{jvm}: {e}");
        }
        let lines = [&["[[gc_log]]", "path = \"/a/gc.log\""], &access[..]].concat();
        let both = [
            &lines[..],
            &["gc_log = \"/a/gc.log\"", "jvm = { port = 80 }"],
        ]
        .concat();
        let e = parse_err(&both, 7, "access_log[0].jvm");
        assert!(e.message.contains("not both"), "{e}");
        let off = [
            &["[discovery]", "enabled = false"],
            &access[..],
            &["jvm = { port = 80 }"],
        ]
        .concat();
        let e = parse_err(&off, 6, "access_log[0].jvm");
        assert!(e.message.contains("enabled = false"), "{e}");
    }
}
