//! Configuration for `pausewatch run --config FILE`.
//!
//! The file is TOML. Every error names the file, the 1-based line and a dotted
//! key path (`gc_log[1].start_at`, array indices 0-based), because the person
//! reading it is usually editing the file on a host with nothing but a terminal.
//!
//! Parsing happens in two steps: serde reads the text into `Raw*` structs whose
//! fields keep their source spans (`toml::Spanned`), then `validate` turns them
//! into [`Config`], so semantic errors can point at the offending key's line.
//! Errors raised by serde itself carry only a byte span; the key path for them
//! is recovered by locating that span in the document's span tree
//! (`toml::de::DeTable`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use pausewatch_parsers::AccessFormat;
use serde::{Deserialize, Serialize, Serializer};
use toml::de::{DeTable, DeValue};
use toml::{Spanned, Value};

use crate::follow::StartAt;
use crate::model::alerts::{
    serialize_duration, AlertsConfig, RegressionStatistic, RuleKind, RuleSettings, Thresholds,
};
use crate::sources::access_format::{
    build_format, parse_duration_unit, parse_signed_duration, parse_time_format,
    parse_timestamp_meaning, AccessFields,
};

/// Default metrics address: loopback, so nothing is exposed until asked for.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";
/// Default directory for read-offset checkpoints.
pub const DEFAULT_CHECKPOINT_DIR: &str = "/var/lib/pausewatch";
/// Fallback poll period for when inotify events do not arrive (NFS, overlayfs).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How often read offsets are persisted; bounds re-read work after a restart.
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Per-minute history kept in memory by default.
pub const DEFAULT_HISTORY: Duration = Duration::from_secs(24 * 3600);
/// Less than an hour of history cannot serve the hourly windows.
pub const MIN_HISTORY: Duration = Duration::from_secs(3600);
/// Default cap on one log line: bounds the memory a corrupt or binary file can take.
pub const DEFAULT_MAX_LINE_BYTES: usize = 65536;
/// Smallest accepted `max_line_bytes`: real GC log lines are rarely shorter.
pub const MIN_MAX_LINE_BYTES: usize = 256;
/// Largest accepted `max_line_bytes` (16 MiB): bounds memory per source.
pub const MAX_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Labels the agent sets on its own series; a source label with one of these
/// names would silently clash with them, so the config rejects it.
pub const RESERVED_LABELS: &[&str] = &[
    "gc",
    "action",
    "cause",
    "log",
    "operation",
    "kind",
    "le",
    "quantile",
    "window",
    "state",
    "alertname",
    "instance",
    "job",
];

/// The agent's effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Address of the Prometheus metrics endpoint.
    pub listen: SocketAddr,
    /// Where read offsets are checkpointed so a restart neither re-counts nor skips.
    pub checkpoint_dir: PathBuf,
    /// Polling period used when file events do not arrive.
    #[serde(serialize_with = "serialize_duration")]
    pub poll_interval: Duration,
    /// How often checkpoints are written.
    #[serde(serialize_with = "serialize_duration")]
    pub checkpoint_interval: Duration,
    /// How much per-minute history to keep in memory (at least [`MIN_HISTORY`]).
    #[serde(serialize_with = "serialize_duration")]
    pub history: Duration,
    /// The GC logs to follow; each entry is one logical source.
    pub gc_log: Vec<GcLogSource>,
    /// Access logs of the services those JVMs run.
    pub access_log: Vec<AccessLogSource>,
    /// Latency histograms scraped from the services, where there is no access log.
    pub latency_histogram: Vec<LatencyHistogramSource>,
    pub correlation: CorrelationConfig,
    /// Not printed with the effective config: rules read back only from their tables.
    #[serde(skip)]
    pub alerts: AlertsConfig,
}

/// An access log to line up with a GC log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessLogSource {
    /// A path or a glob, followed like a GC log (rotation, checkpoints).
    pub path: String,
    pub format: AccessFormat,
    /// The GC stream (its live path) of the JVM serving these requests;
    /// `None` when there is a single `[[gc_log]]` source.
    pub gc_log: Option<String>,
    pub start_at: StartAt,
    /// Seconds added to every request time, for clock skew between the logs.
    pub offset_seconds: f64,
    pub max_line_bytes: usize,
}

/// A Prometheus histogram of request durations served by the application.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyHistogramSource {
    pub url: String,
    /// Family name without `_bucket`, e.g. `http_server_requests_seconds`.
    pub metric: String,
    /// Label equality filters (`uri = "/price"`).
    pub matchers: BTreeMap<String, String>,
    #[serde(serialize_with = "serialize_duration")]
    pub interval: Duration,
    pub gc_log: Option<String>,
}

/// How requests are attributed to stops and correlated with pauses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrelationConfig {
    /// Requests slower than this are slow; `None`: each minute's p99.9.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_optional_duration"
    )]
    pub slo: Option<Duration>,
    /// Share of a request's time stops must cover to make it stop-affected.
    pub affected_share: f64,
    /// Sliding window of the correlation coefficients.
    #[serde(serialize_with = "serialize_duration")]
    pub window: Duration,
    /// Minutes with requests needed before a coefficient is given.
    pub min_minutes: usize,
    /// How long after a minute ends its requests are attributed.
    #[serde(serialize_with = "serialize_duration")]
    pub finalize_after: Duration,
}

impl Default for CorrelationConfig {
    fn default() -> Self {
        CorrelationConfig {
            slo: None,
            affected_share: 0.25,
            window: Duration::from_secs(3600),
            min_minutes: 10,
            finalize_after: Duration::from_secs(15),
        }
    }
}

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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            checkpoint_dir: PathBuf::from(DEFAULT_CHECKPOINT_DIR),
            poll_interval: DEFAULT_POLL_INTERVAL,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            history: DEFAULT_HISTORY,
            gc_log: Vec::new(),
            access_log: Vec::new(),
            latency_histogram: Vec::new(),
            correlation: CorrelationConfig::default(),
            alerts: AlertsConfig::default(),
        }
    }
}

/// A configuration error, located as precisely as the input allows.
///
/// Display is one line: `FILE:LINE: key KEY: MESSAGE`, dropping the parts
/// that are unknown, so editors and `grep` can jump to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The config file (the `origin` given to [`parse`]).
    pub file: PathBuf,
    /// 1-based line of the offending key or token; `None` when the file could
    /// not be read at all.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `gc_log[0].labels.service` (indices 0-based).
    pub key: Option<String>,
    /// What is wrong, on one line.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Reads and parses the config file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: None,
        key: None,
        message: format!("cannot read config file: {e}"),
    })?;
    parse(&text, path)
}

/// Parses config text; `origin` is used only in error messages.
pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let ctx = Ctx { text, origin };
    let raw: RawConfig = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    ctx.validate(raw)
}

// ---------------------------------------------------------------------------
// Raw, span-carrying form. Scalars with their own validation are read as
// `Spanned<Value>` so type errors get our wording and the key's exact line.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a pausewatch config table")]
struct RawConfig {
    listen: Option<Spanned<Value>>,
    checkpoint_dir: Option<Spanned<Value>>,
    poll_interval: Option<Spanned<Value>>,
    checkpoint_interval: Option<Spanned<Value>>,
    history: Option<Spanned<Value>>,
    #[serde(default)]
    gc_log: Vec<Spanned<RawSource>>,
    #[serde(default)]
    access_log: Vec<Spanned<RawAccessLog>>,
    #[serde(default)]
    latency_histogram: Vec<Spanned<RawHistogram>>,
    correlation: Option<RawCorrelation>,
    alerts: Option<BTreeMap<Spanned<String>, Spanned<Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an [[access_log]] table")]
struct RawAccessLog {
    path: Option<Spanned<Value>>,
    format: Option<Spanned<Value>>,
    gc_log: Option<Spanned<Value>>,
    start_at: Option<Spanned<StartAt>>,
    offset: Option<Spanned<Value>>,
    max_line_bytes: Option<Spanned<Value>>,
    time_field: Option<Spanned<Value>>,
    duration_field: Option<Spanned<Value>>,
    pattern: Option<Spanned<Value>>,
    time_format: Option<Spanned<Value>>,
    duration_unit: Option<Spanned<Value>>,
    timestamp: Option<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[latency_histogram]] table")]
struct RawHistogram {
    url: Option<Spanned<Value>>,
    metric: Option<Spanned<Value>>,
    matchers: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    interval: Option<Spanned<Value>>,
    gc_log: Option<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [correlation] table")]
struct RawCorrelation {
    slo: Option<Spanned<Value>>,
    affected_share: Option<Spanned<Value>>,
    window: Option<Spanned<Value>>,
    min_minutes: Option<Spanned<Value>>,
    finalize_after: Option<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[gc_log]] table")]
struct RawSource {
    path: Option<Spanned<Value>>,
    start_at: Option<Spanned<StartAt>>,
    labels: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    jvm_start: Option<Spanned<Value>>,
    max_line_bytes: Option<Spanned<Value>>,
}

// ---------------------------------------------------------------------------
// Key paths.

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Renders a key path TOML-style: bare keys as is, others quoted.
fn render_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    out.push_str(k);
                } else {
                    out.push_str(&format!("{k:?}"));
                }
            }
        }
    }
    out
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// One key/value of the parsed document with its spans, for mapping a serde
/// error's byte span back to a key path.
struct Entry {
    path: Vec<Seg>,
    key_span: Option<Range<usize>>,
    value_span: Range<usize>,
    is_table: bool,
}

fn flatten(value: &Spanned<DeValue<'_>>, path: &mut Vec<Seg>, out: &mut Vec<Entry>) {
    match value.get_ref() {
        DeValue::Table(table) => {
            for (k, v) in table.iter() {
                path.push(Seg::Key(k.get_ref().to_string()));
                out.push(Entry {
                    path: path.clone(),
                    key_span: Some(k.span()),
                    value_span: v.span(),
                    is_table: matches!(v.get_ref(), DeValue::Table(_)),
                });
                flatten(v, path, out);
                path.pop();
            }
        }
        DeValue::Array(array) => {
            for (i, v) in array.iter().enumerate() {
                path.push(Seg::Index(i));
                out.push(Entry {
                    path: path.clone(),
                    key_span: None,
                    value_span: v.span(),
                    is_table: matches!(v.get_ref(), DeValue::Table(_)),
                });
                flatten(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `pos` lies in `span`; empty spans count as covering their start.
fn covers(span: &Range<usize>, pos: usize) -> bool {
    span.start <= pos && pos < span.end.max(span.start + 1)
}

// ---------------------------------------------------------------------------
// Validation.

struct Ctx<'a> {
    text: &'a str,
    origin: &'a Path,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn err(&self, span: Range<usize>, path: &[Seg], message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.origin.to_path_buf(),
            line: Some(self.line_of(span.start)),
            key: Some(render_path(path)),
            message: one_line(message.into()),
        }
    }

    /// Converts a toml/serde error: line from its span, key from the span tree.
    fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let span = e.span();
        let key = span.as_ref().and_then(|s| self.key_at(s, e.message()));
        let mut message = one_line(e.message().to_string());
        if key.as_deref() == Some("gc_log") && message.ends_with("expected a sequence") {
            // `[gc_log]` instead of `[[gc_log]]` is the likely slip.
            message.push_str("; write each source as a [[gc_log]] table (double brackets)");
        }
        ConfigError {
            file: self.origin.to_path_buf(),
            line: span.map(|s| self.line_of(s.start)),
            key,
            message,
        }
    }

    /// Best key path for an error at `span`. For data errors the document
    /// parses and the smallest key or value span covering the error wins. For
    /// syntax errors the recovered partial document is used, and only keys on
    /// the error's own line are trusted.
    fn key_at(&self, span: &Range<usize>, message: &str) -> Option<String> {
        let (doc, errors) = DeTable::parse_recoverable(self.text);
        let root = Spanned::new(doc.span(), DeValue::Table(doc.into_inner()));
        let mut entries = Vec::new();
        flatten(&root, &mut Vec::new(), &mut entries);
        let pos = span.start;
        let smallest = |it: &mut dyn Iterator<Item = (&Entry, &Range<usize>)>| {
            it.min_by_key(|(e, s)| (s.end.saturating_sub(s.start), usize::MAX - e.path.len()))
                .map(|(e, _)| render_path(&e.path))
        };

        if errors.is_empty() {
            let mut hits = entries.iter().flat_map(|e| {
                e.key_span
                    .iter()
                    .chain(std::iter::once(&e.value_span))
                    .filter(|s| covers(s, pos))
                    .map(move |s| (e, s))
            });
            return smallest(&mut hits);
        }

        let line = self.line_of(pos);
        if message == "duplicate key" {
            // The repeated key is not in the recovered document: name it from
            // the error span, under the innermost table it was written in.
            let name = self.text.get(span.clone())?.trim().to_string();
            let inline = entries
                .iter()
                .filter(|e| e.is_table && covers(&e.value_span, pos))
                .min_by_key(|e| e.value_span.len());
            let header = entries
                .iter()
                .filter(|e| {
                    e.is_table
                        && e.value_span.start < pos
                        && self.text[e.value_span.clone()].starts_with('[')
                })
                .max_by_key(|e| (e.value_span.start, e.path.len()));
            let mut path = inline
                .or(header)
                .map(|e| e.path.clone())
                .unwrap_or_default();
            path.push(Seg::Key(
                name.trim_matches(|c| c == '"' || c == '\'').to_string(),
            ));
            return Some(render_path(&path));
        }
        let on_line = |e: &&Entry| {
            e.key_span
                .as_ref()
                .is_some_and(|k| self.line_of(k.start) == line && k.start <= pos)
        };
        let mut in_value = entries
            .iter()
            .filter(on_line)
            .filter(|e| e.value_span.start <= pos && pos <= e.value_span.end)
            .map(|e| (e, &e.value_span));
        if let Some(found) = smallest(&mut in_value) {
            return Some(found);
        }
        entries
            .iter()
            .filter(on_line)
            .max_by_key(|e| e.key_span.as_ref().map(|k| k.start))
            .map(|e| render_path(&e.path))
    }

    fn validate(&self, raw: RawConfig) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(v) = &raw.listen {
            let path = [key("listen")];
            let s = self.string(v, &path)?;
            config.listen = s.trim().parse().map_err(|_| {
                self.err(
                    v.span(),
                    &path,
                    format!("invalid listen address {s:?}: expected IP:PORT, e.g. \"127.0.0.1:9464\" or \"[::1]:9464\""),
                )
            })?;
        }
        if let Some(v) = &raw.checkpoint_dir {
            let path = [key("checkpoint_dir")];
            let s = self.string(v, &path)?;
            if s.trim().is_empty() {
                return Err(self.err(v.span(), &path, "must not be empty"));
            }
            config.checkpoint_dir = PathBuf::from(s);
        }
        if let Some(v) = &raw.poll_interval {
            config.poll_interval = self.positive_duration(v, "poll_interval")?;
        }
        if let Some(v) = &raw.checkpoint_interval {
            config.checkpoint_interval = self.positive_duration(v, "checkpoint_interval")?;
        }
        if let Some(v) = &raw.history {
            let path = [key("history")];
            let d = self.duration(v, &path)?;
            if d < MIN_HISTORY {
                return Err(self.err(
                    v.span(),
                    &path,
                    format!(
                        "{} is below the minimum of {}",
                        humantime::format_duration(d),
                        humantime::format_duration(MIN_HISTORY)
                    ),
                ));
            }
            config.history = d;
        }

        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, src) in raw.gc_log.iter().enumerate() {
            let source = self.source(i, src)?;
            if let Some(first) = seen.get(&source.path) {
                let v = src.get_ref().path.as_ref().expect("validated");
                return Err(self.err(
                    v.span(),
                    &[key("gc_log"), Seg::Index(i), key("path")],
                    format!(
                        "same path as gc_log[{first}]; a rotated set is one source, list it once"
                    ),
                ));
            }
            seen.insert(source.path.clone(), i);
            config.gc_log.push(source);
        }
        for (i, raw_access) in raw.access_log.iter().enumerate() {
            let access = self.access_source(i, raw_access, config.gc_log.len())?;
            config.access_log.push(access);
        }
        for (i, raw_histogram) in raw.latency_histogram.iter().enumerate() {
            let histogram = self.histogram_source(i, raw_histogram, config.gc_log.len())?;
            config.latency_histogram.push(histogram);
        }
        if let Some(raw_correlation) = &raw.correlation {
            config.correlation = self.correlation(raw_correlation)?;
        }
        if let Some(slo) = config.correlation.slo {
            config.alerts.thresholds.tail_slo = slo;
        }
        if let Some(raw_alerts) = &raw.alerts {
            self.alerts(raw_alerts, &mut config.alerts)?;
        }
        Ok(config)
    }

    /// The line of a nested key, found in the document's span tree (inner
    /// keys of a table read as a plain value have no span of their own).
    fn span_of(&self, path: &[Seg], fallback: Range<usize>) -> Range<usize> {
        let (doc, _) = DeTable::parse_recoverable(self.text);
        let root = Spanned::new(doc.span(), DeValue::Table(doc.into_inner()));
        let mut entries = Vec::new();
        flatten(&root, &mut Vec::new(), &mut entries);
        let wanted = render_path(path);
        entries
            .iter()
            .find(|e| render_path(&e.path) == wanted)
            .and_then(|e| e.key_span.clone())
            .unwrap_or(fallback)
    }

    fn alerts(
        &self,
        raw: &BTreeMap<Spanned<String>, Spanned<Value>>,
        alerts: &mut AlertsConfig,
    ) -> Result<(), ConfigError> {
        for (name, value) in raw {
            let path = [key("alerts"), Seg::Key(name.get_ref().clone())];
            match name.get_ref().as_str() {
                "alertmanager_url" | "webhook_url" => {
                    let url = self.string(value, &path)?.trim().to_string();
                    if !url.starts_with("http://") && !url.starts_with("https://") {
                        return Err(self.err(
                            value.span(),
                            &path,
                            format!("{url:?} is not an http:// URL"),
                        ));
                    }
                    if name.get_ref() == "alertmanager_url" {
                        alerts.alertmanager_url = Some(url);
                    } else {
                        alerts.webhook_url = Some(url);
                    }
                }
                "evaluation_interval" => {
                    alerts.evaluation_interval = self.positive_duration_at(value, &path)?
                }
                "resend_interval" => {
                    alerts.resend_interval = self.positive_duration_at(value, &path)?
                }
                "labels" => alerts.labels = self.label_table(value, &path)?,
                rule_name => {
                    let Some(kind) = RuleKind::from_config_name(rule_name) else {
                        let known: Vec<&str> =
                            RuleKind::ALL.iter().map(|k| k.config_name()).collect();
                        return Err(self.err(
                            name.span(),
                            &path,
                            format!(
                                "unknown key; expected alertmanager_url, webhook_url, evaluation_interval, resend_interval, labels or a rule: {}",
                                known.join(", ")
                            ),
                        ));
                    };
                    let Value::Table(table) = value.get_ref() else {
                        return Err(self.type_err(value, &path, "a table of rule settings"));
                    };
                    let settings = alerts
                        .rules
                        .iter_mut()
                        .find(|r| r.kind == kind)
                        .expect("every rule has settings");
                    self.rule(
                        kind,
                        table,
                        &path,
                        name.span(),
                        settings,
                        &mut alerts.thresholds,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn rule(
        &self,
        kind: RuleKind,
        table: &toml::Table,
        rule_path: &[Seg],
        rule_span: Range<usize>,
        settings: &mut RuleSettings,
        thresholds: &mut Thresholds,
    ) -> Result<(), ConfigError> {
        for (name, value) in table {
            let mut path = rule_path.to_vec();
            path.push(Seg::Key(name.clone()));
            let span = self.span_of(&path, rule_span.clone());
            let spanned = Spanned::new(span.clone(), value.clone());
            let duration = || self.duration(&spanned, &path);
            let number = || match value {
                Value::Float(f) => Ok(*f),
                Value::Integer(n) => Ok(*n as f64),
                _ => Err(self.type_err(&spanned, &path, "a number")),
            };
            let share = || {
                let share = number()?;
                if share > 0.0 && share <= 1.0 {
                    Ok(share)
                } else {
                    Err(self.err(span.clone(), &path, format!("{share} is not in (0, 1]")))
                }
            };
            let unknown = || {
                self.err(
                    span.clone(),
                    &path,
                    format!(
                        "unknown key for rule {} ({})",
                        kind.config_name(),
                        kind.alertname()
                    ),
                )
            };
            match (name.as_str(), kind) {
                ("enabled", _) => {
                    settings.enabled = value
                        .as_bool()
                        .ok_or_else(|| self.type_err(&spanned, &path, "true or false"))?
                }
                ("for", _) => settings.for_duration = duration()?,
                ("labels", _) => settings.labels = self.label_table(&spanned, &path)?,
                ("annotations", _) => {
                    let Value::Table(annotations) = value else {
                        return Err(self.type_err(&spanned, &path, "a table of strings"));
                    };
                    settings.annotations = annotations
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().map_or_else(|| v.to_string(), str::to_string),
                            )
                        })
                        .collect();
                }
                ("max_pause", RuleKind::PauseBudget) => thresholds.max_pause = duration()?,
                ("window", RuleKind::PauseRegression) => thresholds.regression_window = duration()?,
                ("ratio", RuleKind::PauseRegression) => thresholds.regression_ratio = number()?,
                ("statistic", RuleKind::PauseRegression) => {
                    thresholds.regression_statistic = match value.as_str() {
                        Some("p99") => RegressionStatistic::P99,
                        Some("max") => RegressionStatistic::Max,
                        _ => return Err(self.err(span, &path, "expected \"p99\" or \"max\"")),
                    }
                }
                ("trailing", RuleKind::PauseRegression) => {
                    thresholds.regression_trailing = duration()?
                }
                ("baseline", RuleKind::PauseRegression) => {
                    thresholds.regression_pinned = Some(duration()?)
                }
                ("min_pause", RuleKind::PauseRegression) => {
                    thresholds.regression_min_pause = duration()?
                }
                ("threshold", RuleKind::GcOverhead) => thresholds.overhead_ratio = share()?,
                ("window", RuleKind::GcOverhead) => thresholds.overhead_window = duration()?,
                ("share", RuleKind::HeapPressure) => thresholds.heap_share = share()?,
                ("slo", RuleKind::GcDrivenTail) => thresholds.tail_slo = duration()?,
                ("share", RuleKind::GcDrivenTail) => thresholds.tail_affected_share = share()?,
                ("max", RuleKind::TimeToSafepoint) => {
                    thresholds.max_time_to_safepoint = duration()?
                }
                ("after", RuleKind::StaleLog) => thresholds.stale_after = duration()?,
                _ => return Err(unknown()),
            }
        }
        Ok(())
    }

    fn positive_duration_at(
        &self,
        v: &Spanned<Value>,
        path: &[Seg],
    ) -> Result<Duration, ConfigError> {
        let d = self.duration(v, path)?;
        if d.is_zero() {
            return Err(self.err(v.span(), path, "must be greater than zero"));
        }
        Ok(d)
    }

    fn label_table(
        &self,
        v: &Spanned<Value>,
        path: &[Seg],
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let Value::Table(table) = v.get_ref() else {
            return Err(self.type_err(v, path, "a table of labels"));
        };
        let mut labels = BTreeMap::new();
        for (name, value) in table {
            let mut label_path = path.to_vec();
            label_path.push(Seg::Key(name.clone()));
            let span = self.span_of(&label_path, v.span());
            if let Some(problem) = alert_label_problem(name) {
                return Err(self.err(span, &label_path, problem));
            }
            let Some(text) = value.as_str() else {
                return Err(self.err(span, &label_path, "a label value must be a string"));
            };
            labels.insert(name.clone(), text.to_string());
        }
        Ok(labels)
    }

    fn required_string(
        &self,
        table: Range<usize>,
        value: &Option<Spanned<Value>>,
        path: &[Seg],
        what: &str,
    ) -> Result<String, ConfigError> {
        let Some(v) = value else {
            return Err(self.err(
                table,
                path,
                format!(
                    "missing required key `{}` ({what})",
                    render_path(&path[path.len() - 1..])
                ),
            ));
        };
        let text = self.string(v, path)?;
        if text.trim().is_empty() {
            return Err(self.err(v.span(), path, "must not be empty"));
        }
        Ok(text.to_string())
    }

    fn optional_string(
        &self,
        value: &Option<Spanned<Value>>,
        path: &[Seg],
    ) -> Result<Option<String>, ConfigError> {
        value
            .as_ref()
            .map(|v| self.string(v, path).map(str::to_string))
            .transpose()
    }

    /// A `gc_log` link; required when there is not exactly one GC source to default to.
    fn gc_link(
        &self,
        table: Range<usize>,
        value: &Option<Spanned<Value>>,
        path: &[Seg],
        gc_sources: usize,
    ) -> Result<Option<String>, ConfigError> {
        let link = self.optional_string(value, path)?;
        if link.is_none() && gc_sources != 1 {
            return Err(self.err(
                table,
                path,
                format!("missing `gc_log`: with {gc_sources} [[gc_log]] sources, name the live GC log of this service's JVM"),
            ));
        }
        Ok(link)
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

    fn access_source(
        &self,
        i: usize,
        raw: &Spanned<RawAccessLog>,
        gc_sources: usize,
    ) -> Result<AccessLogSource, ConfigError> {
        let at = |k: &str| vec![key("access_log"), Seg::Index(i), key(k)];
        let r = raw.get_ref();
        let path = self.required_string(raw.span(), &r.path, &at("path"), "a file path or glob")?;
        let fields = AccessFields {
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
        let name = self.required_string(
            raw.span(),
            &r.format,
            &at("format"),
            "nginx, apache, tomcat, envoy, envoy-json, json or regex",
        )?;
        let format_span = r.format.as_ref().map_or(raw.span(), |v| v.span());
        let format = build_format(&name, &fields)
            .map_err(|message| self.err(format_span, &at("format"), message))?;
        Ok(AccessLogSource {
            path,
            format,
            gc_log: self.gc_link(raw.span(), &r.gc_log, &at("gc_log"), gc_sources)?,
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
        })
    }

    fn histogram_source(
        &self,
        i: usize,
        raw: &Spanned<RawHistogram>,
        gc_sources: usize,
    ) -> Result<LatencyHistogramSource, ConfigError> {
        let at = |k: &str| vec![key("latency_histogram"), Seg::Index(i), key(k)];
        let r = raw.get_ref();
        let url = self.required_string(
            raw.span(),
            &r.url,
            &at("url"),
            "the http:// address of the application's metrics",
        )?;
        if !url.starts_with("http://") {
            let span = r.url.as_ref().map_or(raw.span(), |v| v.span());
            return Err(self.err(span, &at("url"), format!("{url:?} is not an http:// URL")));
        }
        let interval = match &r.interval {
            None => Duration::from_secs(15),
            Some(v) => self.duration(v, &at("interval"))?,
        };
        Ok(LatencyHistogramSource {
            url,
            metric: self
                .optional_string(&r.metric, &at("metric"))?
                .unwrap_or_else(|| "http_server_requests_seconds".to_string()),
            matchers: r
                .matchers
                .iter()
                .flatten()
                .map(|(k, v)| (k.get_ref().clone(), v.get_ref().clone()))
                .collect(),
            interval,
            gc_log: self.gc_link(raw.span(), &r.gc_log, &at("gc_log"), gc_sources)?,
        })
    }

    fn correlation(&self, raw: &RawCorrelation) -> Result<CorrelationConfig, ConfigError> {
        let at = |k: &str| vec![key("correlation"), key(k)];
        let mut config = CorrelationConfig::default();
        if let Some(v) = &raw.slo {
            config.slo = Some(self.duration(v, &at("slo"))?);
        }
        if let Some(v) = &raw.affected_share {
            let share = match v.get_ref() {
                Value::Float(f) => *f,
                Value::Integer(n) => *n as f64,
                _ => {
                    return Err(self.type_err(v, &at("affected_share"), "a number between 0 and 1"))
                }
            };
            if !(share > 0.0 && share <= 1.0) {
                return Err(self.err(
                    v.span(),
                    &at("affected_share"),
                    format!("{share} is not in (0, 1]"),
                ));
            }
            config.affected_share = share;
        }
        if let Some(v) = &raw.window {
            config.window = self.duration(v, &at("window"))?;
        }
        if let Some(v) = &raw.min_minutes {
            let Value::Integer(n) = v.get_ref() else {
                return Err(self.type_err(v, &at("min_minutes"), "an integer"));
            };
            if *n < 2 {
                return Err(self.err(
                    v.span(),
                    &at("min_minutes"),
                    "a correlation needs at least 2 minutes",
                ));
            }
            config.min_minutes = *n as usize;
        }
        if let Some(v) = &raw.finalize_after {
            config.finalize_after = self.duration(v, &at("finalize_after"))?;
        }
        Ok(config)
    }

    fn source(&self, i: usize, raw: &Spanned<RawSource>) -> Result<GcLogSource, ConfigError> {
        let at = |k: &str| vec![key("gc_log"), Seg::Index(i), key(k)];
        let r = raw.get_ref();

        let Some(pv) = &r.path else {
            return Err(self.err(
                raw.span(),
                &at("path"),
                "missing required key `path` (a file path or glob)",
            ));
        };
        let path = self.string(pv, &at("path"))?.to_string();
        if path.trim().is_empty() {
            return Err(self.err(pv.span(), &at("path"), "must not be empty"));
        }
        if let Err(e) = glob::Pattern::new(&path) {
            return Err(self.err(
                pv.span(),
                &at("path"),
                format!(
                    "invalid glob pattern {path:?}: {} at character {}",
                    e.msg, e.pos
                ),
            ));
        }

        let mut labels = BTreeMap::new();
        for (name, value) in r.labels.iter().flatten() {
            let mut lpath = at("labels");
            lpath.push(Seg::Key(name.get_ref().clone()));
            if let Some(problem) = label_name_problem(name.get_ref()) {
                return Err(self.err(name.span(), &lpath, problem));
            }
            labels.insert(name.get_ref().clone(), value.get_ref().clone());
        }

        let jvm_start = match &r.jvm_start {
            None => None,
            Some(v) => Some(self.timestamp(v, &at("jvm_start"))?),
        };

        let max_line_bytes = match &r.max_line_bytes {
            None => DEFAULT_MAX_LINE_BYTES,
            Some(v) => self.line_cap(v, &at("max_line_bytes"))?,
        };

        Ok(GcLogSource {
            path,
            start_at: r
                .start_at
                .as_ref()
                .map(|s| *s.get_ref())
                .unwrap_or_default(),
            labels,
            jvm_start,
            max_line_bytes,
        })
    }

    fn line_cap(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<usize, ConfigError> {
        let Value::Integer(n) = v.get_ref() else {
            return Err(self.type_err(v, path, "an integer"));
        };
        let range = MIN_MAX_LINE_BYTES as i64..=MAX_MAX_LINE_BYTES as i64;
        if !range.contains(n) {
            return Err(self.err(
                v.span(),
                path,
                format!("{n} is out of range {MIN_MAX_LINE_BYTES}..={MAX_MAX_LINE_BYTES} (16 MiB)"),
            ));
        }
        Ok(*n as usize)
    }

    fn type_err(&self, v: &Spanned<Value>, path: &[Seg], expected: &str) -> ConfigError {
        self.err(
            v.span(),
            path,
            format!("expected {expected}, found {}", v.get_ref().type_str()),
        )
    }

    fn string<'v>(&self, v: &'v Spanned<Value>, path: &[Seg]) -> Result<&'v str, ConfigError> {
        v.get_ref()
            .as_str()
            .ok_or_else(|| self.type_err(v, path, "a string"))
    }

    fn duration(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<Duration, ConfigError> {
        let s = v
            .get_ref()
            .as_str()
            .ok_or_else(|| self.type_err(v, path, "a duration string such as \"250ms\""))?;
        humantime::parse_duration(s.trim())
            .map_err(|e| self.err(v.span(), path, format!("invalid duration {s:?}: {e}")))
    }

    /// Zero would turn the poll or checkpoint loop into a busy loop.
    fn positive_duration(&self, v: &Spanned<Value>, name: &str) -> Result<Duration, ConfigError> {
        let path = [key(name)];
        let d = self.duration(v, &path)?;
        if d.is_zero() {
            return Err(self.err(v.span(), &path, "must be greater than zero"));
        }
        Ok(d)
    }

    /// Accepts an RFC 3339 string or a TOML offset date-time; a date-time
    /// without offset is refused because the JVM's zone is unknown here.
    fn timestamp(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<DateTime<Utc>, ConfigError> {
        let text = match v.get_ref() {
            Value::String(s) => s.clone(),
            Value::Datetime(dt) if dt.offset.is_some() && dt.time.is_some() => dt.to_string(),
            Value::Datetime(dt) => {
                return Err(self.err(
                    v.span(),
                    path,
                    format!("{dt} is not a date-time with UTC offset; write a full RFC 3339 timestamp such as \"2026-11-30T10:00:00Z\""),
                ))
            }
            _ => return Err(self.type_err(v, path, "an RFC 3339 timestamp string")),
        };
        DateTime::parse_from_rfc3339(text.trim())
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| {
                self.err(
                    v.span(),
                    path,
                    format!("invalid RFC 3339 timestamp {text:?}: {e}; expected e.g. \"2026-11-30T10:00:00Z\""),
                )
            })
    }
}

/// Why `name` cannot label an alert: it must be a valid Prometheus label name,
/// and `alertname` and `log` are the agent's.
fn alert_label_problem(name: &str) -> Option<String> {
    if name == "alertname" || name == "log" {
        return Some(format!(
            "label name {name:?} is set by pausewatch itself; choose another name"
        ));
    }
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    (!valid || name.starts_with("__"))
        .then(|| format!("{name:?} is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"))
}

/// Why `name` cannot be a source label, if it cannot.
fn label_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let valid_start = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !valid_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!(
            "{name:?} is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
        ));
    }
    if name.starts_with("__") {
        return Some(format!(
            "label name {name:?} starts with \"__\", which Prometheus reserves"
        ));
    }
    if RESERVED_LABELS.contains(&name) {
        return Some(format!(
            "label name {name:?} is set by pausewatch itself; choose another name"
        ));
    }
    None
}

fn one_line(message: String) -> String {
    if message.contains('\n') {
        message.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        message
    }
}

fn serialize_optional_duration<S: Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => serialize_duration(d, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/etc/pausewatch.toml";

    /// Joins lines with '\n' so each test's line numbers are its array index + 1.
    fn doc(lines: &[&str]) -> String {
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }

    fn parse_ok(lines: &[&str]) -> Config {
        parse(&doc(lines), Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Asserts the error's line and key, and that Display carries both.
    fn parse_err(lines: &[&str], line: usize, key: &str) -> ConfigError {
        let e = parse(&doc(lines), Path::new(FILE)).expect_err("config should be rejected");
        let shown = e.to_string();
        assert_eq!(e.line, Some(line), "wrong line in: {shown}");
        assert_eq!(e.key.as_deref(), Some(key), "wrong key in: {shown}");
        assert!(
            shown.starts_with(&format!("{FILE}:{line}: key {key}: ")),
            "bad display: {shown}"
        );
        assert!(!shown.contains('\n'), "multi-line display: {shown}");
        e
    }

    #[test]
    fn defaults() {
        let c = Config::default();
        assert_eq!(c.listen, "127.0.0.1:9464".parse().unwrap());
        assert_eq!(c.checkpoint_dir, PathBuf::from("/var/lib/pausewatch"));
        assert_eq!(c.poll_interval, Duration::from_millis(250));
        assert_eq!(c.checkpoint_interval, Duration::from_secs(1));
        assert_eq!(c.history, Duration::from_secs(86400));
        assert!(c.gc_log.is_empty());
        assert_eq!(parse("", Path::new(FILE)).unwrap(), c);
        assert_eq!(parse("# nothing\n", Path::new(FILE)).unwrap(), c);
    }

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
    fn full_valid_config() {
        let c = parse_ok(&[
            "listen = '0.0.0.0:9100'",
            "checkpoint_dir = '/tmp/pw'",
            "poll_interval = '100ms'",
            "checkpoint_interval = '5s'",
            "history = '2h 30m'",
            "",
            "[[gc_log]]",
            "path = '/var/log/app/gc.log*'",
            "start_at = 'beginning'",
            "labels = { service = 'pricing', env = 'prod' }",
            "jvm_start = '2026-11-30T11:00:00+01:00'",
            "max_line_bytes = 256",
            "",
            "[[gc_log]]",
            "path = '/opt/b/gc.log'",
            "jvm_start = 2026-11-30T10:00:00Z",
            "max_line_bytes = 16777216",
            "[gc_log.labels]",
            "service = 'b'",
            "_x = ''",
        ]);
        assert_eq!(c.listen, "0.0.0.0:9100".parse().unwrap());
        assert_eq!(c.checkpoint_dir, PathBuf::from("/tmp/pw"));
        assert_eq!(c.poll_interval, Duration::from_millis(100));
        assert_eq!(c.checkpoint_interval, Duration::from_secs(5));
        assert_eq!(c.history, Duration::from_secs(9000));
        assert_eq!(c.gc_log.len(), 2);
        let start: DateTime<Utc> = "2026-11-30T10:00:00Z".parse().unwrap();
        let a = &c.gc_log[0];
        assert_eq!(a.path, "/var/log/app/gc.log*");
        assert_eq!(a.start_at, StartAt::Beginning);
        assert_eq!(a.labels.get("service").map(String::as_str), Some("pricing"));
        assert_eq!(a.labels.get("env").map(String::as_str), Some("prod"));
        assert_eq!(a.jvm_start, Some(start));
        assert_eq!(a.max_line_bytes, 256);
        let b = &c.gc_log[1];
        assert_eq!(b.start_at, StartAt::End);
        assert_eq!(b.jvm_start, Some(start));
        assert_eq!(b.max_line_bytes, 16 * 1024 * 1024);
        assert_eq!(b.labels.len(), 2);

        // The serialized effective config reads back to the same config.
        let printed = toml::to_string(&c).unwrap();
        assert_eq!(
            parse(&printed, Path::new("printed")).unwrap(),
            c,
            "{printed}"
        );
    }

    #[test]
    fn ipv6_listen() {
        let c = parse_ok(&["listen = '[::1]:9464'"]);
        assert_eq!(c.listen, "[::1]:9464".parse().unwrap());
    }

    #[test]
    fn example_file_parses() {
        let text = include_str!("../examples/pausewatch.toml");
        let c =
            parse(text, Path::new("examples/pausewatch.toml")).unwrap_or_else(|e| panic!("{e}"));
        let d = Config::default();
        assert_eq!(
            (
                c.listen,
                &c.checkpoint_dir,
                c.poll_interval,
                c.checkpoint_interval,
                c.history
            ),
            (
                d.listen,
                &d.checkpoint_dir,
                d.poll_interval,
                d.checkpoint_interval,
                d.history
            ),
            "the example documents the defaults"
        );
        assert_eq!(c.gc_log.len(), 2);
        assert!(!c.gc_log[0].labels.is_empty());
        assert_eq!(c.gc_log[1].start_at, StartAt::Beginning);
        assert!(c.gc_log[1].jvm_start.is_some());
    }

    #[test]
    fn syntax_error() {
        let e = parse_err(
            &[
                "listen = '127.0.0.1:9464'",
                "",
                "[[gc_log]]",
                "path = '/x'",
                "poll = 250ms",
            ],
            5,
            "gc_log[0].poll",
        );
        assert!(e.message.contains("quoted"), "{e}");
        let e = parse_err(
            &["[[gc_log]]", "path = '/x'", "start_at = 'end' junk"],
            3,
            "gc_log[0].start_at",
        );
        assert!(e.message.contains("expected"), "{e}");
    }

    #[test]
    fn syntax_error_without_key() {
        let e = parse(
            &doc(&["listen = '127.0.0.1:1'", "[[gc_log]", "path = '/x'"]),
            Path::new(FILE),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.to_string().starts_with(&format!("{FILE}:2: ")), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn duplicate_key() {
        parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "start_at = 'end'",
                "start_at = 'end'",
            ],
            4,
            "gc_log[0].start_at",
        );
        parse_err(&["history = '1h'", "history = '2h'"], 2, "history");
    }

    #[test]
    fn unknown_top_level_key() {
        let e = parse_err(&["listen = '127.0.0.1:1'", "", "lisen = 'x'"], 3, "lisen");
        assert!(e.message.contains("unknown field `lisen`"), "{e}");
        parse_err(&["history = '2h'", "[metrics]", "x = 1"], 2, "metrics");
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
    fn wrong_types() {
        parse_err(&["history = '2h'", "listen = 9464"], 2, "listen");
        parse_err(&["checkpoint_dir = false"], 1, "checkpoint_dir");
        let e = parse_err(&["", "poll_interval = 250"], 2, "poll_interval");
        assert!(e.message.contains("found integer"), "{e}");
        parse_err(&["gc_log = 3"], 1, "gc_log");
        let e = parse_err(&["[gc_log]", "path = '/x'"], 1, "gc_log");
        assert!(e.message.contains("[[gc_log]]"), "{e}");
        parse_err(
            &["[[gc_log]]", "path = '/x'", "max_line_bytes = '64k'"],
            3,
            "gc_log[0].max_line_bytes",
        );
        parse_err(
            &["[[gc_log]]", "path = '/x'", "labels = { service = 1 }"],
            3,
            "gc_log[0].labels.service",
        );
        parse_err(&["[[gc_log]]", "path = ['/x']"], 2, "gc_log[0].path");
        parse_err(
            &["[[gc_log]]", "path = '/x'", "labels = 'service'"],
            3,
            "gc_log[0].labels",
        );
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
    fn bad_durations() {
        let e = parse_err(
            &["listen = '127.0.0.1:1'", "poll_interval = '250 parsecs'"],
            2,
            "poll_interval",
        );
        assert!(e.message.contains("parsecs"), "{e}");
        parse_err(&["checkpoint_interval = 'soon'"], 1, "checkpoint_interval");
        parse_err(&["", "", "history = '1 fortnight'"], 3, "history");
        let e = parse_err(&["checkpoint_interval = '0s'"], 1, "checkpoint_interval");
        assert!(e.message.contains("greater than zero"), "{e}");
    }

    #[test]
    fn history_below_minimum() {
        let e = parse_err(&["listen = '127.0.0.1:1'", "history = '59m'"], 2, "history");
        assert!(e.message.contains("minimum of 1h"), "{e}");
        assert_eq!(parse_ok(&["history = '1h'"]).history, MIN_HISTORY);
    }

    #[test]
    fn bad_listen() {
        for bad in ["localhost:9464", "127.0.0.1", "127.0.0.1:99999", ""] {
            let line = format!("listen = '{bad}'");
            let e = parse_err(&["history = '2h'", &line], 2, "listen");
            assert!(e.message.contains("invalid listen address"), "{e}");
        }
    }

    #[test]
    fn bad_checkpoint_dir() {
        parse_err(&["checkpoint_dir = ''"], 1, "checkpoint_dir");
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
        for name in RESERVED_LABELS {
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

    #[test]
    fn unreadable_file() {
        let path = Path::new("/nonexistent/pausewatch-config-test.toml");
        let e = load(path).unwrap_err();
        assert_eq!(e.file, path);
        assert_eq!(e.line, None);
        assert_eq!(e.key, None);
        let shown = e.to_string();
        assert!(
            shown.starts_with("/nonexistent/pausewatch-config-test.toml: "),
            "{shown}"
        );
        assert!(shown.contains("No such file"), "{shown}");
    }

    #[test]
    fn load_reads_file() {
        let dir = std::env::temp_dir().join(format!("pausewatch-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw.toml");
        std::fs::write(&file, "history = '48h'\n").unwrap();
        let c = load(&file);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(c.unwrap().history, Duration::from_secs(48 * 3600));
    }

    #[test]
    fn access_logs_histograms_and_correlation() {
        let config = parse_ok(&[
            "[[gc_log]]",
            "path = \"/var/log/pricing/gc.log*\"",
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
        assert_eq!(config.access_log[0].gc_log, None);
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
        parse_err(
            &["[correlation]", "affected_share = 1.5"],
            2,
            "correlation.affected_share",
        );
        parse_err(
            &[
                "[[latency_histogram]]",
                "url = \"https://x\"",
                "gc_log = \"/a/gc.log\"",
            ],
            2,
            "latency_histogram[0].url",
        );
    }
}
