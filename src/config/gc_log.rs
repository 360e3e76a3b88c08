//! `[[gc_log]]`: the GC logs to follow, and the `gc_log` link by which a
//! latency source names one of their streams.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use documented::DocumentedFields;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{GlobPath, LineCap, Positive, SeriesLabel, Text, Timestamp};
use super::{StartAt, DEFAULT_MAX_LINE_BYTES};
use crate::follow::has_glob_chars;
use crate::model::jvm::DEFAULT_MAX_LABEL_VALUES;

/// One GC log source: a file, or a glob whose matches form one rotated set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcLogSource {
    /// A path or a glob (`/var/log/app/gc.log*`); validated as a glob pattern.
    pub path: String,
    /// Where to start in files seen for the first time (no checkpoint yet).
    pub start_at: StartAt,
    /// Extra labels put on every series of this source.
    pub labels: BTreeMap<String, String>,
    /// JVM start time, for logs decorated with uptime only: it turns uptimes
    /// into wall-clock timestamps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jvm_start: Option<DateTime<Utc>>,
    /// Longest line accepted, in bytes; bounds memory on a corrupt or binary file.
    pub max_line_bytes: usize,
    /// Whether files may be read through symlinks that lead out of the
    /// configured directories (off: the agent often runs as root).
    pub follow_symlinks_outside: bool,
    /// How long a file a glob matched may be missing before its stream is
    /// dropped with its series (a JVM whose directory was removed).
    #[serde(serialize_with = "crate::model::serialize_duration")]
    pub forget_after: Duration,
    /// The top-level `max_label_values`, for the source to hand to its JVM's state.
    #[serde(skip)]
    pub max_label_values: usize,
    /// Pauses kept for the OTLP pause records (`[otlp] pause_events`); 0: none.
    #[serde(skip)]
    pub pause_records: usize,
}

/// `forget_after` unless configured: long enough for any rotation.
pub const DEFAULT_FORGET_AFTER: Duration = Duration::from_secs(300);

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [[gc_log]] table")]
pub(super) struct RawGcLog {
    /// A path or a glob; rotated files belong to their live file, and each live
    /// file is one JVM.
    ///
    /// Default: required
    path: Option<Spanned<GlobPath>>,
    /// "end" or "beginning": where to start in a file seen for the first time.
    ///
    /// Default: `"end"`
    start_at: Option<StartAt>,
    /// Labels added to every series of the source.
    ///
    /// Default: `{}`
    #[serde(default)]
    labels: BTreeMap<SeriesLabel, String>,
    /// RFC 3339 JVM start, for logs decorated with uptime only.
    ///
    /// Default: none
    jvm_start: Option<Timestamp>,
    /// Longer lines are counted and skipped (256 to 16777216).
    ///
    /// Default: `65536`
    max_line_bytes: Option<LineCap>,
    /// Read files through symlinks that lead out of the configured directories.
    ///
    /// Default: `false`
    follow_symlinks_outside: Option<bool>,
    /// How long a file a glob matched may be missing before its stream is
    /// dropped with its series.
    ///
    /// Default: `"5m"`
    forget_after: Option<Positive>,
}

impl Ctx<'_> {
    /// All `[[gc_log]]` sources; a path listed twice would be two streams
    /// reading the same files, so it is refused.
    pub(super) fn gc_logs(
        &self,
        raw: Vec<Spanned<RawGcLog>>,
    ) -> Result<Vec<GcLogSource>, ConfigError> {
        let mut sources: Vec<GcLogSource> = Vec::new();
        for (i, src) in raw.into_iter().enumerate() {
            let at = [key("gc_log"), Seg::Index(i), key("path")];
            let span = src.span();
            let r = src.into_inner();
            let Some(path) = r.path else {
                return Err(self.missing(span, &at, "a file path or glob"));
            };
            if let Some(first) = sources.iter().position(|s| s.path == path.get_ref().0) {
                return Err(self.err(
                    path.span(),
                    &at,
                    format!(
                        "same path as gc_log[{first}]; a rotated set is one source, list it once"
                    ),
                ));
            }
            sources.push(GcLogSource {
                path: path.into_inner().0,
                start_at: r.start_at.unwrap_or_default(),
                labels: r.labels.into_iter().map(|(k, v)| (k.0, v)).collect(),
                jvm_start: r.jvm_start.map(|t| t.0),
                max_line_bytes: r.max_line_bytes.map_or(DEFAULT_MAX_LINE_BYTES, |v| v.0),
                follow_symlinks_outside: r.follow_symlinks_outside.unwrap_or(false),
                forget_after: r.forget_after.map_or(DEFAULT_FORGET_AFTER, |v| v.0),
                max_label_values: DEFAULT_MAX_LABEL_VALUES,
                pause_records: 0,
            });
        }
        Ok(sources)
    }

    /// The live GC log a latency source belongs to (its `gc_log` key), which
    /// the agent compares with each stream's live path. Omitted, it is the
    /// single `[[gc_log]]` path, but not a glob: that can match several JVMs
    /// and the agent would pick whichever it found first. Given, it must be
    /// one file a `[[gc_log]]` path names or matches, or it would link to nothing.
    pub(super) fn gc_link(
        &self,
        table: Range<usize>,
        value: Option<Spanned<Text>>,
        path: &[Seg],
        gc_logs: &[GcLogSource],
    ) -> Result<String, ConfigError> {
        let Some(v) = value else {
            return match gc_logs {
                [only] if !has_glob_chars(&only.path) => Ok(only.path.clone()),
                [] => Err(self.err(
                    table,
                    path,
                    "missing `gc_log`: no [[gc_log]] is configured; name the live GC log of this service's JVM, or (an [[access_log]]) the discovered JVM: jvm = { port = 8080 } or jvm = { labels = { service = \"...\" } }".to_string(),
                )),
                [only] => Err(self.err(
                    table,
                    path,
                    format!("missing `gc_log`: gc_log[0].path {:?} is a glob that can match several JVMs; name the live GC log of this service's JVM", only.path),
                )),
                _ => Err(self.err(
                    table,
                    path,
                    format!("missing `gc_log`: with {} [[gc_log]] sources, name the live GC log of this service's JVM", gc_logs.len()),
                )),
            };
        };
        let link = v.get_ref().0.as_str();
        if has_glob_chars(link) {
            return Err(self.err(
                v.span(),
                path,
                format!("{link:?} is a glob; name the live GC log of this service's JVM, one file"),
            ));
        }
        let named = gc_logs.iter().any(|source| {
            source.path == link
                || glob::Pattern::new(&source.path)
                    .is_ok_and(|pattern| pattern.matches_path(Path::new(link)))
        });
        if !named {
            return Err(self.err(
                v.span(),
                path,
                format!("{link:?} is neither a [[gc_log]] path nor matched by a [[gc_log]] glob; name the live GC log of this service's JVM"),
            ));
        }
        Ok(link.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, parse_ok};
    use super::super::StartAt;
    use crate::labels;

    #[test]
    fn source_defaults() {
        let c = parse_ok(&["[[gc_log]]", "path = '/var/log/gc.log'"]);
        let s = &c.gc_log[0];
        assert_eq!(s.start_at, StartAt::End);
        assert!(s.labels.is_empty());
        assert_eq!(s.jvm_start, None);
        assert_eq!(s.max_line_bytes, 65536);
    }

    #[test]
    fn unknown_source_key() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/a'",
                "",
                "[[gc_log]]",
                "path = '/b'",
                "start = 'end'",
            ],
            6,
            "gc_log[1].start",
        );
        assert!(e.message.contains("unknown field `start`"), "{e}");
    }

    #[test]
    fn bad_start_at() {
        let e = parse_err(
            &[
                "listen = '127.0.0.1:9464'",
                "",
                "[[gc_log]]",
                "path = '/a'",
                "",
                "[[gc_log]]",
                "path = '/b'",
                "start_at = 'middle'",
            ],
            8,
            "gc_log[1].start_at",
        );
        assert!(e.message.contains("middle"), "{e}");
        assert!(e.message.contains("beginning"), "{e}");
    }

    #[test]
    fn bad_jvm_start() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "jvm_start = '2026-11-30 10:00'",
            ],
            3,
            "gc_log[0].jvm_start",
        );
        assert!(e.message.contains("RFC 3339"), "{e}");
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "",
                "jvm_start = 2026-11-30T10:00:00",
            ],
            4,
            "gc_log[0].jvm_start",
        );
        assert!(e.message.contains("offset"), "{e}");
        parse_err(
            &["[[gc_log]]", "path = '/x'", "jvm_start = 1764496800"],
            3,
            "gc_log[0].jvm_start",
        );
    }

    #[test]
    fn max_line_bytes_out_of_range() {
        for bad in ["255", "16777217", "-1", "0"] {
            let line = format!("max_line_bytes = {bad}");
            let e = parse_err(
                &["[[gc_log]]", "path = '/x'", "", &line],
                4,
                "gc_log[0].max_line_bytes",
            );
            assert!(e.message.contains("out of range"), "{e}");
        }
    }

    #[test]
    fn missing_path() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/a'",
                "",
                "[[gc_log]]",
                "start_at = 'end'",
            ],
            4,
            "gc_log[1].path",
        );
        assert!(e.message.contains("missing"), "{e}");
        parse_err(
            &["gc_log = [", "  { start_at = 'end' },", "]"],
            2,
            "gc_log[0].path",
        );
    }

    #[test]
    fn empty_path() {
        let e = parse_err(
            &["[[gc_log]]", "start_at = 'end'", "path = ''"],
            3,
            "gc_log[0].path",
        );
        assert!(e.message.contains("empty"), "{e}");
    }

    #[test]
    fn invalid_glob() {
        let e = parse_err(
            &["[[gc_log]]", "path = '/var/log/[gc.log'"],
            2,
            "gc_log[0].path",
        );
        assert!(e.message.contains("glob"), "{e}");
        parse_err(
            &["[[gc_log]]", "", "path = '/var/log/a**/gc.log'"],
            3,
            "gc_log[0].path",
        );
    }

    #[test]
    fn duplicate_path() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/a/gc.log*'",
                "[[gc_log]]",
                "path = '/a/gc.log*'",
            ],
            4,
            "gc_log[1].path",
        );
        assert!(e.message.contains("gc_log[0]"), "{e}");
    }

    #[test]
    fn invalid_label_names() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "labels = { ok = 'a', \"1st\" = 'b' }",
            ],
            3,
            "gc_log[0].labels.1st",
        );
        assert!(
            e.message.contains("not a valid Prometheus label name"),
            "{e}"
        );
        parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "[gc_log.labels]",
                "ok = 'a'",
                "\"a-b\" = 'b'",
            ],
            5,
            "gc_log[0].labels.a-b",
        );
        parse_err(
            &["[[gc_log]]", "path = '/x'", "labels = { \"\" = 'b' }"],
            3,
            "gc_log[0].labels.\"\"",
        );
        parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "labels = { \"app.kubernetes.io\" = 'b' }",
            ],
            3,
            "gc_log[0].labels.\"app.kubernetes.io\"",
        );
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "[gc_log.labels]",
                "__name = 'a'",
            ],
            4,
            "gc_log[0].labels.__name",
        );
        assert!(e.message.contains("__"), "{e}");
    }

    #[test]
    fn reserved_label_names() {
        for name in labels::reserved_label_names() {
            let line = format!("{name} = 'x'");
            let e = parse_err(
                &[
                    "[[gc_log]]",
                    "path = '/x'",
                    "[gc_log.labels]",
                    "service = 'a'",
                    &line,
                ],
                5,
                &format!("gc_log[0].labels.{name}"),
            );
            assert!(e.message.contains("set by pausewatch"), "{e}");
        }
    }

    /// A glob under the only `[[gc_log]]` can stand for several JVMs: a latency
    /// source must then name its own, on the line of its table.
    #[test]
    fn no_default_link_to_a_glob() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/var/log/*/gc.log*'",
                "",
                "[[access_log]]",
                "path = '/var/log/nginx/pricing.log'",
                "format = 'nginx'",
            ],
            4,
            "access_log[0].gc_log",
        );
        assert!(e.message.contains("is a glob"), "{e}");
        assert!(e.message.contains("name the live GC log"), "{e}");
        parse_err(
            &[
                "[[gc_log]]",
                "path = '/var/log/pricing/gc.log*'",
                "[[latency_histogram]]",
                "url = 'http://127.0.0.1:8080/metrics'",
            ],
            3,
            "latency_histogram[0].gc_log",
        );
    }

    #[test]
    fn default_link_is_the_only_plain_path() {
        let c = parse_ok(&[
            "[[gc_log]]",
            "path = '/var/log/pricing/gc.log'",
            "[[access_log]]",
            "path = '/var/log/nginx/pricing.log*'",
            "format = 'nginx'",
            "[[latency_histogram]]",
            "url = 'http://127.0.0.1:8080/metrics'",
        ]);
        let expected = "/var/log/pricing/gc.log";
        assert_eq!(
            c.access_log[0].target,
            super::super::AccessTarget::GcLog(expected.into())
        );
        assert_eq!(c.latency_histogram[0].gc_log, expected);
    }

    #[test]
    fn named_link_is_a_configured_path_or_a_match_of_its_glob() {
        let c = parse_ok(&[
            "[[gc_log]]",
            "path = '/var/log/*/gc.log*'",
            "[[gc_log]]",
            "path = '/opt/batch/gc.log'",
            "[[access_log]]",
            "path = '/var/log/nginx/pricing.log'",
            "format = 'nginx'",
            "gc_log = '/var/log/pricing/gc.log'",
            "[[latency_histogram]]",
            "url = 'http://127.0.0.1:8080/metrics'",
            "gc_log = '/opt/batch/gc.log'",
        ]);
        assert_eq!(
            c.access_log[0].target,
            super::super::AccessTarget::GcLog("/var/log/pricing/gc.log".into())
        );
        assert_eq!(c.latency_histogram[0].gc_log, "/opt/batch/gc.log");
    }

    #[test]
    fn named_link_must_be_one_configured_file() {
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/var/log/*/gc.log*'",
                "[[access_log]]",
                "path = '/var/log/nginx/pricing.log'",
                "format = 'nginx'",
                "gc_log = '/var/log/pricing/gc.log*'",
            ],
            6,
            "access_log[0].gc_log",
        );
        assert!(e.message.contains("is a glob"), "{e}");
        let e = parse_err(
            &[
                "[[gc_log]]",
                "path = '/var/log/*/gc.log*'",
                "[[gc_log]]",
                "path = '/opt/batch/gc.log'",
                "[[latency_histogram]]",
                "url = 'http://127.0.0.1:8080/metrics'",
                "",
                "gc_log = '/opt/pricing/gc.log'",
            ],
            8,
            "latency_histogram[0].gc_log",
        );
        assert!(e.message.contains("neither a [[gc_log]] path"), "{e}");
        // Without any [[gc_log]], no link can name a stream.
        parse_err(
            &[
                "[[access_log]]",
                "path = '/var/log/nginx/pricing.log'",
                "format = 'nginx'",
                "gc_log = '/var/log/pricing/gc.log'",
            ],
            4,
            "access_log[0].gc_log",
        );
    }
}
