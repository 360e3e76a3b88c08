//! Configuration for `pausewatch run --config FILE`.
//!
//! The file is TOML. Every error names the file, the 1-based line and a dotted
//! key path (`gc_log[1].start_at`, array indices 0-based), because the person
//! reading it is usually editing the file on a host with nothing but a terminal.
//!
//! Parsing happens in two steps: serde reads the text into `Raw*` sections
//! whose values are small checked types (`values`: durations, shares, label
//! names, URLs...), each wording its own error; then `validate` checks what
//! involves several keys (a required key, the `gc_log` link, a path listed
//! twice) into [`Config`], on the line of the key or table kept as
//! `toml::Spanned`. A serde error carries only a byte span; its key path is
//! recovered by locating that span in the document's span tree
//! (`toml::de::DeTable`, see `spans`). Each section (`[[gc_log]]`,
//! `[[access_log]]`, ...) has its own module with its raw form.

pub mod access_format;
mod access_log;
mod alerts;
mod check;
mod correlation;
mod discovery;
mod gc_log;
mod http_client;
mod latency_histogram;
mod otlp;
pub mod reference;
mod spans;
mod values;
mod web;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use documented::DocumentedFields;
use serde::{Deserialize, Serialize, Serializer};
use toml::Spanned;

pub use access_log::{AccessLogSource, AccessTarget, JvmSelector};
pub use alerts::AlertSinks;
pub use correlation::CorrelationConfig;
pub use discovery::{
    DiscoveryConfig, DiscoveryRule, EbpfConfig, RequestArrival, RuntimeStatsConfig,
    DISCOVERY_LABELS,
};
pub use gc_log::{GcLogSource, DEFAULT_FORGET_AFTER};
pub use http_client::{
    redact_url, tls_from_pem, ClientIdentity, Endpoint, HttpClientConfig, Secret, TlsSettings,
};
pub use latency_histogram::LatencyHistogramSource;
pub use otlp::{OtlpConfig, Protocol, Temporality, TlsFiles, PAUSE_RECORDS_KEPT};
pub use spans::ConfigError;
pub use web::{load_web_config, WebConfig};

pub use crate::follow::StartAt;
use crate::labels::reserved_label_names;
use crate::model::alerts::AlertsConfig;
use crate::model::jvm::DEFAULT_MAX_LABEL_VALUES;
use crate::model::serialize_duration;
use access_log::RawAccessLog;
use alerts::RawAlerts;
use correlation::RawCorrelation;
use discovery::{RawDiscovery, RawRuntimeStats};
use gc_log::RawGcLog;
use latency_histogram::RawHistogram;
use otlp::RawOtlp;
use spans::{key, Ctx};
use values::{IntIn, Listen, NonEmpty, Positive, Within};

/// Default metrics address: loopback, so nothing is exposed until asked for.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";
/// Default directory for read-offset checkpoints.
pub const DEFAULT_CHECKPOINT_DIR: &str = "/var/lib/pausewatch";
/// Fallback poll period for when inotify events do not arrive (NFS, overlayfs).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(250);
/// Shortest accepted `poll_interval`: below it polling burns a core, and the
/// fast path is inotify anyway.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How often read offsets are persisted; bounds re-read work after a restart.
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Per-minute history kept in memory by default.
pub const DEFAULT_HISTORY: Duration = Duration::from_secs(24 * 3600);
/// Less than an hour of history cannot serve the hourly windows.
pub const MIN_HISTORY: Duration = Duration::from_secs(3600);
/// `[[gc_log]]` and `[[access_log]]` entries together at most. Each is
/// followed, polled and checkpointed on its own; thousands of entries (a
/// generated config) are better one glob per directory, whose matches are
/// capped and reported.
pub const MAX_SOURCES: usize = 1000;
/// Thirty days of minutes (43,200 per stream) at most: memory, the checkpoint
/// and `/api/v1/minutes` grow with it, and beyond it a typo
/// (`100000years`) would overflow the arithmetic of times.
pub const MAX_HISTORY: Duration = Duration::from_secs(30 * 24 * 3600);
/// Default cap on one log line: bounds the memory a corrupt or binary file can take.
pub const DEFAULT_MAX_LINE_BYTES: usize = 65536;
/// Smallest accepted `max_line_bytes`: real GC log lines are rarely shorter.
pub const MIN_MAX_LINE_BYTES: usize = 256;
/// Largest accepted `max_line_bytes` (16 MiB): bounds memory per source.
pub const MAX_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Connections served at once by default: far below systemd's 1,024
/// descriptors, so idle clients cannot starve the agent's files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Largest accepted `max_connections`.
pub const MAX_MAX_CONNECTIONS: usize = 65_536;
/// Connections one client address is served at once by default: a scraper
/// needs one, and one client's flood leaves the other slots to the rest.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 32;
/// How long a connection may take to send a request's header, or stay idle
/// between requests, by default.
pub const DEFAULT_HTTP_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Limits of the HTTP server: what a flood of idle or slow clients can hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HttpLimits {
    /// Connections served at once; beyond them a few spare ones serve
    /// `/healthz` only and the rest are closed.
    pub max_connections: usize,
    /// Of those, how many one client address may hold.
    pub max_connections_per_client: usize,
    /// A connection that sends no complete request header for this long
    /// (a new one, or an idle keep-alive one) is closed.
    #[serde(rename = "http_header_timeout", serialize_with = "serialize_duration")]
    pub header_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            header_timeout: DEFAULT_HTTP_HEADER_TIMEOUT,
        }
    }
}

/// Largest accepted `max_label_values`: past this the cap no longer bounds `/metrics`.
pub const MAX_MAX_LABEL_VALUES: usize = 10_000;
/// Labels the alert engine sets on every alert.
const ALERT_LABELS: &[&str] = &["alertname", "log", "source"];

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
    /// Distinct values of `cause` (and of `operation`) per stream and family;
    /// also set on every [`GcLogSource`], which hands it to its JVM's state.
    pub max_label_values: usize,
    /// `max_connections`, `max_connections_per_client` and
    /// `http_header_timeout`, top-level keys.
    #[serde(flatten)]
    pub http: HttpLimits,
    /// TLS and basic auth of the endpoints (exporter-toolkit YAML), checked
    /// at load and re-read by the server when it changes.
    pub web_config: Option<PathBuf>,
    /// The GC logs to follow; each entry is one logical source.
    pub gc_log: Vec<GcLogSource>,
    /// Access logs of the services those JVMs run.
    pub access_log: Vec<AccessLogSource>,
    /// Latency histograms scraped from the services, where there is no access log.
    pub latency_histogram: Vec<LatencyHistogramSource>,
    pub correlation: CorrelationConfig,
    pub discovery: DiscoveryConfig,
    pub runtime_stats: RuntimeStatsConfig,
    pub ebpf: EbpfConfig,
    /// Not printed with the effective config: rules read back only from their tables.
    #[serde(skip)]
    pub alerts: AlertsConfig,
    /// Where alerts go: not printed, they carry credentials.
    #[serde(skip)]
    pub alert_sinks: AlertSinks,
    /// OTLP export, on when the file has an `[otlp]` table. Not printed: its
    /// headers hold credentials.
    #[serde(skip)]
    pub otlp: Option<OtlpConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            checkpoint_dir: PathBuf::from(DEFAULT_CHECKPOINT_DIR),
            poll_interval: DEFAULT_POLL_INTERVAL,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            history: DEFAULT_HISTORY,
            max_label_values: DEFAULT_MAX_LABEL_VALUES,
            http: HttpLimits::default(),
            web_config: None,
            gc_log: Vec::new(),
            access_log: Vec::new(),
            latency_histogram: Vec::new(),
            correlation: CorrelationConfig::default(),
            discovery: DiscoveryConfig::default(),
            runtime_stats: RuntimeStatsConfig::default(),
            ebpf: EbpfConfig::default(),
            alerts: AlertsConfig::default(),
            alert_sinks: AlertSinks::default(),
            otlp: None,
        }
    }
}

/// Reads and parses the config file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    parse(&read(path)?, path)
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: None,
        key: None,
        message: format!("cannot read config file: {e}"),
    })
}

/// Reads the config file at `path`, or says every error in it, in file
/// order (`check-config`; `run` stops at the first).
pub fn check(path: &Path) -> Result<Config, Vec<ConfigError>> {
    let text = read(path).map_err(|error| vec![error])?;
    check::check(&text, path, &|name| std::env::var(name).ok())
}

/// Parses config text; `origin` is used only in error messages.
pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    parse_with_env(text, origin, &|name| std::env::var(name).ok())
}

/// As [`parse`], with the environment `[otlp]` reads (`OTEL_*`) from `env`.
fn parse_with_env(text: &str, origin: &Path, env: otlp::Env) -> Result<Config, ConfigError> {
    let ctx = Ctx { text, origin };
    let raw: RawConfig = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    ctx.validate(raw, env)
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a pausewatch config table")]
struct RawConfig {
    /// Address (IP:PORT) of /metrics, /healthz and /api/v1/*; loopback only by
    /// default.
    ///
    /// Default: `"127.0.0.1:9464"`
    listen: Option<Listen>,
    /// Where positions, parser state and per-minute aggregates are
    /// checkpointed. Without a configuration file the agent uses this as root,
    /// else $XDG_STATE_HOME/pausewatch or ~/.local/state/pausewatch.
    ///
    /// Default: `"/var/lib/pausewatch"`
    checkpoint_dir: Option<NonEmpty>,
    /// Polling period of the files whose inotify events do not arrive (NFS,
    /// FUSE, a log reached through a symlink, one found written without an
    /// event); at least 10ms. Other files are read on their events, and polled
    /// every 10 s in case one was lost.
    ///
    /// Default: `"250ms"`
    poll_interval: Option<Within<{ MIN_POLL_INTERVAL.as_millis() as u64 }, { u64::MAX }>>,
    /// How often the checkpoint is written when something changed.
    ///
    /// Default: `"1s"`
    checkpoint_interval: Option<Positive>,
    /// Per-minute history kept in memory; 1h to 30d.
    ///
    /// Default: `"24h"`
    history: Option<Within<{ MIN_HISTORY.as_millis() as u64 }, { MAX_HISTORY.as_millis() as u64 }>>,
    /// Distinct values of cause and operation per stream; further ones are
    /// counted as "other" (1 to 10000).
    ///
    /// Default: `100`
    max_label_values: Option<IntIn<1, MAX_MAX_LABEL_VALUES>>,
    /// HTTP connections served at once; beyond them 8 spare connections serve
    /// /healthz only, and the rest are closed.
    ///
    /// Default: `256`
    max_connections: Option<IntIn<1, MAX_MAX_CONNECTIONS>>,
    /// Of those, how many one client address may hold; its further connections
    /// get the spare ones.
    ///
    /// Default: `32`
    max_connections_per_client: Option<IntIn<1, MAX_MAX_CONNECTIONS>>,
    /// A connection that sends no complete request header for this long is
    /// closed.
    ///
    /// Default: `"10s"`
    http_header_timeout: Option<Positive>,
    /// TLS and basic auth of the endpoints: an exporter-toolkit web config
    /// file, relative to this file.
    ///
    /// Default: none
    web_config: Option<NonEmpty>,
    /// The [[gc_log]] tables.
    #[serde(default)]
    gc_log: Vec<Spanned<RawGcLog>>,
    /// The [[access_log]] tables.
    #[serde(default)]
    access_log: Vec<Spanned<RawAccessLog>>,
    /// The [[latency_histogram]] tables.
    #[serde(default)]
    latency_histogram: Vec<Spanned<RawHistogram>>,
    /// The [correlation] table.
    correlation: Option<RawCorrelation>,
    /// The [discovery] table.
    discovery: Option<RawDiscovery>,
    /// The [runtime_stats] table.
    runtime_stats: Option<RawRuntimeStats>,
    /// The [ebpf] table.
    ebpf: Option<discovery::RawEbpf>,
    /// The [alerts] table.
    alerts: Option<RawAlerts>,
    /// The [otlp] table.
    otlp: Option<RawOtlp>,
}

impl Ctx<'_> {
    fn validate(&self, raw: RawConfig, env: otlp::Env) -> Result<Config, ConfigError> {
        let d = Config::default();
        let mut config = Config {
            listen: raw.listen.map_or(d.listen, |v| v.0),
            checkpoint_dir: raw.checkpoint_dir.map_or(d.checkpoint_dir, |v| v.0.into()),
            poll_interval: raw.poll_interval.map_or(d.poll_interval, |v| v.0),
            checkpoint_interval: raw
                .checkpoint_interval
                .map_or(d.checkpoint_interval, |v| v.0),
            history: raw.history.map_or(d.history, |v| v.0),
            max_label_values: raw.max_label_values.map_or(d.max_label_values, |v| v.0),
            http: HttpLimits {
                max_connections: raw.max_connections.map_or(d.http.max_connections, |v| v.0),
                max_connections_per_client: (raw.max_connections_per_client)
                    .map_or(d.http.max_connections_per_client, |v| v.0),
                header_timeout: raw
                    .http_header_timeout
                    .map_or(d.http.header_timeout, |v| v.0),
            },
            ..d
        };
        if let Some(file) = raw.web_config {
            let file = self.resolve(&file.0);
            // Its own errors name its own file, line and key.
            load_web_config(&file)?;
            config.web_config = Some(file);
        }

        let entries = raw.gc_log.iter().map(|e| ("gc_log", e.span()));
        let entries = entries.chain(raw.access_log.iter().map(|e| ("access_log", e.span())));
        if let Some((kind, span)) = entries.clone().nth(MAX_SOURCES) {
            let count = entries.count();
            return Err(self.err(
                span,
                &[key(kind)],
                format!("{count} [[gc_log]] and [[access_log]] entries, above the maximum of {MAX_SOURCES}: list the logs of a directory with one glob path"),
            ));
        }
        config.gc_log = self.gc_logs(raw.gc_log)?;
        for source in &mut config.gc_log {
            source.max_label_values = config.max_label_values;
        }
        if let Some(raw_discovery) = raw.discovery {
            config.discovery = self.discovery(raw_discovery)?;
        }
        for (i, raw_access) in raw.access_log.into_iter().enumerate() {
            let discovery = config.discovery.enabled;
            let access = self.access_source(i, raw_access, &config.gc_log, discovery)?;
            config.access_log.push(access);
        }
        for (i, raw_histogram) in raw.latency_histogram.into_iter().enumerate() {
            let histogram = self.histogram_source(i, raw_histogram, &config.gc_log)?;
            config.latency_histogram.push(histogram);
        }
        if let Some(raw_correlation) = raw.correlation {
            config.correlation = raw_correlation.into();
        }
        if let Some(raw_runtime_stats) = raw.runtime_stats {
            config.runtime_stats = raw_runtime_stats.into();
        }
        if let Some(raw_ebpf) = raw.ebpf {
            config.ebpf = self.ebpf(raw_ebpf);
        }
        if let Some(slo) = config.correlation.slo {
            config.alerts.thresholds.tail_slo = slo;
        }
        if let Some(raw_alerts) = raw.alerts {
            config.alert_sinks = self.alerts(raw_alerts, &mut config.alerts)?;
        }
        if let Some(raw_otlp) = raw.otlp {
            let otlp = self.otlp(raw_otlp, env)?;
            if otlp.pause_events {
                for source in &mut config.gc_log {
                    source.pause_records = PAUSE_RECORDS_KEPT;
                }
            }
            config.otlp = Some(otlp);
        }
        Ok(config)
    }
}

/// Where a label name goes; each place has its own names the agent sets itself.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LabelUse {
    /// On every series of a `[[gc_log]]` source: must not be a label name of the metric catalog.
    Series,
    /// On alerts (`[alerts] labels`, `[alerts.<rule>] labels`): must not be one of [`ALERT_LABELS`].
    Alert,
}

/// Why `name` cannot be a label for `usage`, if it cannot. Every label name in
/// the config is checked here, so the reserved lists are read in one place.
fn label_problem(name: &str, usage: LabelUse) -> Option<String> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    // A configured label named like one of the agent's own would appear
    // twice on a series, and Prometheus rejects the whole scrape: the
    // metric catalog says which names those are.
    let reserved = match usage {
        LabelUse::Series => reserved_label_names().contains(name),
        LabelUse::Alert => ALERT_LABELS.contains(&name),
    };
    let dunder = name.starts_with("__");
    if !valid || (dunder && usage == LabelUse::Alert) {
        Some(format!(
            "{name:?} is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
        ))
    } else if dunder {
        Some(format!(
            "label name {name:?} starts with \"__\", which Prometheus reserves"
        ))
    } else if reserved {
        Some(format!(
            "label name {name:?} is set by pausewatch itself; choose another name"
        ))
    } else {
        None
    }
}

/// `file` relative to the directory of the config file `origin` names it in,
/// as Prometheus resolves the files its configs name.
fn relative_to(origin: &Path, file: &str) -> PathBuf {
    let file = Path::new(file);
    match origin.parent() {
        Some(dir) if file.is_relative() => dir.join(file),
        _ => file.to_path_buf(),
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
    use chrono::{DateTime, Utc};

    use super::*;

    pub(super) const FILE: &str = "/etc/pausewatch.toml";

    /// Joins lines with '\n' so each test's line numbers are its array index + 1.
    pub(super) fn doc(lines: &[&str]) -> String {
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }

    pub(super) fn parse_ok(lines: &[&str]) -> Config {
        parse(&doc(lines), Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Asserts the error's line and key, and that Display carries both.
    pub(super) fn parse_err(lines: &[&str], line: usize, key: &str) -> ConfigError {
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
    fn full_valid_config() {
        let c = parse_ok(&[
            "listen = '0.0.0.0:9100'",
            "checkpoint_dir = '/tmp/pw'",
            "poll_interval = '100ms'",
            "checkpoint_interval = '5s'",
            "history = '2h 30m'",
            "max_label_values = 20",
            "max_connections = 16",
            "http_header_timeout = '3s'",
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
        assert_eq!(c.max_label_values, 20);
        assert_eq!(c.http.max_connections, 16);
        assert_eq!(c.http.header_timeout, Duration::from_secs(3));
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
        let text = include_str!("../../examples/pausewatch.toml");
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
    fn unknown_top_level_key() {
        let e = parse_err(&["listen = '127.0.0.1:1'", "", "lisen = 'x'"], 3, "lisen");
        assert!(e.message.contains("unknown field `lisen`"), "{e}");
        parse_err(&["history = '2h'", "[metrics]", "x = 1"], 2, "metrics");
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
    fn bad_durations() {
        let e = parse_err(
            &["listen = '127.0.0.1:1'", "poll_interval = '250 parsecs'"],
            2,
            "poll_interval",
        );
        assert!(e.message.contains("parsecs"), "{e}");
        parse_err(&["checkpoint_interval = 'soon'"], 1, "checkpoint_interval");
        parse_err(&["", "", "history = '1 fortnight'"], 3, "history");
        // Issue 19, 9: accepted, then overflowed the agent's time arithmetic.
        let e = parse_err(&["", "history = '100000years'"], 2, "history");
        assert!(e.message.ends_with("is above the maximum of 30days"), "{e}");
        assert_eq!(parse_ok(&["history = '30d'"]).history, MAX_HISTORY);
        let e = parse_err(&["checkpoint_interval = '0s'"], 1, "checkpoint_interval");
        assert!(e.message.contains("greater than zero"), "{e}");
    }

    /// Issue 19, 7: 10,000 entries passed check-config, then the agent took
    /// gigabytes and never wrote a checkpoint.
    #[test]
    fn source_count_bound() {
        let entry = |i: usize| format!("[[gc_log]]\npath = '/l/{i}/gc.log'");
        let at_most: Vec<String> = (0..MAX_SOURCES).map(entry).collect();
        let lines: Vec<&str> = at_most.iter().map(String::as_str).collect();
        assert_eq!(parse_ok(&lines).gc_log.len(), MAX_SOURCES);
        let access = "[[access_log]]\npath = '/l/a.log'\nformat = 'nginx'\ngc_log = '/l/0/gc.log'";
        let over: Vec<&str> = lines.iter().copied().chain([access]).collect();
        // Each entry takes two lines: the access log's begins on line 2,001.
        let e = parse_err(&over, 2 * MAX_SOURCES + 1, "access_log");
        assert!(
            e.message.starts_with(
                "1001 [[gc_log]] and [[access_log]] entries, above the maximum of 1000"
            ),
            "{e}"
        );
    }

    #[test]
    fn http_limits() {
        assert_eq!(parse_ok(&[]).http, HttpLimits::default());
        let c = parse_ok(&[
            "max_connections = 4",
            "max_connections_per_client = 2",
            "http_header_timeout = '2s'",
        ]);
        assert_eq!(
            c.http,
            HttpLimits {
                max_connections: 4,
                max_connections_per_client: 2,
                header_timeout: Duration::from_secs(2)
            }
        );
        parse_err(&["max_connections = 0"], 1, "max_connections");
        parse_err(
            &["max_connections_per_client = 0"],
            1,
            "max_connections_per_client",
        );
        parse_err(&["http_header_timeout = '0s'"], 1, "http_header_timeout");
    }

    #[test]
    fn max_label_values_reaches_every_gc_log() {
        let c = parse_ok(&[
            "max_label_values = 7",
            "[[gc_log]]",
            "path = '/var/log/a/gc.log'",
        ]);
        assert_eq!((c.max_label_values, c.gc_log[0].max_label_values), (7, 7));
        for bad in ["0", "10001", "-1"] {
            let e = parse_err(
                &[&format!("max_label_values = {bad}")],
                1,
                "max_label_values",
            );
            assert!(e.message.contains("out of range 1..=10000"), "{e}");
        }
    }

    #[test]
    fn history_below_minimum() {
        let e = parse_err(&["listen = '127.0.0.1:1'", "history = '59m'"], 2, "history");
        assert!(e.message.contains("minimum of 1h"), "{e}");
        assert_eq!(parse_ok(&["history = '1h'"]).history, MIN_HISTORY);
    }

    #[test]
    fn poll_interval_below_minimum() {
        for bad in ["1ns", "9ms", "0s"] {
            let line = format!("poll_interval = '{bad}'");
            let e = parse_err(&["listen = '127.0.0.1:1'", "", &line], 3, "poll_interval");
            assert!(e.message.contains("below the minimum of 10ms"), "{e}");
        }
        assert_eq!(
            parse_ok(&["poll_interval = '10ms'"]).poll_interval,
            MIN_POLL_INTERVAL
        );
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
}
