//! `[discovery]` (which Java processes of the host the agent follows without
//! a `[[gc_log]]`) and `[runtime_stats]` (how often their hsperfdata is read).

use std::collections::BTreeMap;
use std::time::Duration;

use documented::DocumentedFields;
use regex::Regex;
use serde::{Deserialize, Serialize, Serializer};
use toml::Spanned;

use super::serialize_duration;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{
    ArrivalName, Dur, Flag, NonEmpty, Patterns, Port, Positive, RuleLabel, RulePattern, Within,
};

/// Labels discovery sets itself on a JVM's (`jvm`) or Go program's (`program`) series.
pub const DISCOVERY_LABELS: [&str; 4] = ["pid", "jvm", "program", "container"];

/// Finding the host's Java processes.
#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryConfig {
    pub enabled: bool,
    /// How often /proc is scanned for JVMs that started or exited.
    #[serde(serialize_with = "serialize_duration")]
    pub interval: Duration,
    /// A JVM is followed when its command line matches one of these (all when empty).
    #[serde(serialize_with = "serialize_regexes")]
    pub include: Vec<Regex>,
    /// ... and none of these.
    #[serde(serialize_with = "serialize_regexes")]
    pub exclude: Vec<Regex>,
    /// How long an exited JVM's series stay, so a last scrape sees its end.
    #[serde(serialize_with = "serialize_duration")]
    pub grace: Duration,
    pub rule: Vec<DiscoveryRule>,
}

impl PartialEq for DiscoveryConfig {
    fn eq(&self, other: &Self) -> bool {
        let patterns = |r: &[Regex]| r.iter().map(|r| r.as_str().to_string()).collect::<Vec<_>>();
        self.enabled == other.enabled
            && self.interval == other.interval
            && patterns(&self.include) == patterns(&other.include)
            && patterns(&self.exclude) == patterns(&other.exclude)
            && self.grace == other.grace
            && self.rule == other.rule
    }
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        DiscoveryConfig {
            enabled: true,
            interval: Duration::from_secs(10),
            include: Vec::new(),
            exclude: Vec::new(),
            grace: Duration::from_secs(300),
            rule: Vec::new(),
        }
    }
}

impl DiscoveryConfig {
    /// Whether a JVM with this command line is followed.
    pub fn selects(&self, command_line: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(command_line)))
            && !self.exclude.iter().any(|r| r.is_match(command_line))
    }

    /// The labels every matching rule adds, later rules winning.
    pub fn labels_for(&self, command_line: &str) -> BTreeMap<String, String> {
        let matching = self
            .rule
            .iter()
            .filter(|r| r.pattern.is_match(command_line));
        matching.flat_map(|r| r.labels.clone()).collect()
    }

    /// The listening ports whose requests the kernel is not to measure in
    /// the JVM with this command line (long-poll, streaming, admin ports).
    pub fn excluded_ports(&self, command_line: &str) -> Vec<u16> {
        let matching = self
            .rule
            .iter()
            .filter(|r| r.pattern.is_match(command_line));
        let mut ports: Vec<u16> = matching.flat_map(|r| r.exclude_ports.clone()).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }
}

/// `[[discovery.rule]] match = "REGEX" labels = {...}`.
#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryRule {
    #[serde(rename = "match", serialize_with = "serialize_regex")]
    pub pattern: Regex,
    pub labels: BTreeMap<String, String>,
    /// Listening ports left out of the kernel's request latency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_ports: Vec<u16>,
}

impl PartialEq for DiscoveryRule {
    fn eq(&self, other: &Self) -> bool {
        self.pattern.as_str() == other.pattern.as_str()
            && self.labels == other.labels
            && self.exclude_ports == other.exclude_ports
    }
}

/// Sampling every discovered JVM's hsperfdata.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuntimeStatsConfig {
    pub enabled: bool,
    #[serde(serialize_with = "serialize_duration")]
    pub interval: Duration,
}

impl Default for RuntimeStatsConfig {
    fn default() -> Self {
        RuntimeStatsConfig {
            enabled: true,
            interval: Duration::from_millis(200),
        }
    }
}

/// The eBPF safepoint source (`--features ebpf`): on by default, and
/// refused cleanly (one log line, a reason in `/metrics`) where the build,
/// the kernel or the privileges do not allow it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EbpfConfig {
    pub enabled: bool,
    /// Which tracepoint marks a request's arrival.
    pub request_arrival: RequestArrival,
    /// Where the kernel's requests are written, one file per JVM, for the
    /// offline commands; `None`: not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_dir: Option<std::path::PathBuf>,
}

impl Default for EbpfConfig {
    fn default() -> Self {
        EbpfConfig {
            enabled: true,
            request_arrival: RequestArrival::Auto,
            requests_dir: None,
        }
    }
}

/// The tracepoint that marks a request's bytes arriving on a server
/// connection: `sock:sk_data_ready` (Linux 6.6) when the kernel has it,
/// else `tcp:tcp_probe` (each segment that tcp_rcv_established handles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestArrival {
    Auto,
    SkDataReady,
    TcpProbe,
}

fn serialize_regex<S: Serializer>(r: &Regex, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

fn serialize_regexes<S: Serializer>(r: &[Regex], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(r.iter().map(Regex::as_str))
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [discovery] table")]
pub(super) struct RawDiscovery {
    /// Scan /proc for JVMs and Go programs.
    ///
    /// Default: `true`
    enabled: Option<Flag>,
    /// Time between scans.
    ///
    /// Default: `"10s"`
    interval: Option<Positive>,
    /// Regexes on the command line; empty: every JVM.
    ///
    /// Default: `[]`
    include: Option<Patterns>,
    /// Regexes on the command line of JVMs left alone.
    ///
    /// Default: `[]`
    exclude: Option<Patterns>,
    /// How long an exited JVM's series stay.
    ///
    /// Default: `"5m"`
    grace: Option<Dur>,
    /// The [[discovery.rule]] tables.
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [[discovery.rule]] table")]
pub(super) struct RawRule {
    /// Regex on the command line.
    ///
    /// Default: required
    r#match: Option<RulePattern>,
    /// Labels of the matching JVMs; service overrides the derived one.
    ///
    /// Default: {}
    #[serde(default)]
    labels: BTreeMap<RuleLabel, String>,
    /// Listening ports of the matching JVMs whose requests the kernel does not
    /// measure: long-poll, streaming, admin ports.
    ///
    /// Default: []
    #[serde(default)]
    exclude_ports: Vec<Port>,
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [runtime_stats] table")]
pub(super) struct RawRuntimeStats {
    /// Sample each discovered JVM's hsperfdata and /proc.
    ///
    /// Default: `true`
    enabled: Option<Flag>,
    /// Time between samples; an idle JVM (no collection or safepoint for 10 s)
    /// is sampled every 2 s until its counters move (every 10 s when a GC log
    /// or eBPF gives its pauses).
    ///
    /// Default: `"200ms"`
    interval: Option<Within<{ MIN_SAMPLE_INTERVAL.as_millis() as u64 }, { u64::MAX }>>,
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "an [ebpf] table")]
pub(super) struct RawEbpf {
    /// Measure the pauses of discovered JVMs without a GC log through eBPF;
    /// where it cannot (no feature, no privilege), hsperfdata does and /metrics
    /// says why.
    ///
    /// Default: `true`
    enabled: Option<Flag>,
    /// The tracepoint a request's arrival is read from: sk_data_ready (Linux
    /// 6.6) where the kernel has it, else tcp_probe; name one to use it.
    ///
    /// Default: `"auto"`
    request_arrival: Option<ArrivalName>,
    /// A directory to write the kernel's requests to, one JSON line each
    /// ({start, duration_ms, port}), one file per JVM (service-pid.jsonl), for
    /// analyze --latency, report and compare.
    ///
    /// Default: none
    requests_dir: Option<NonEmpty>,
}

impl Ctx<'_> {
    /// `[discovery]`; a rule without `match` is refused on its table's line.
    pub(super) fn discovery(&self, raw: RawDiscovery) -> Result<DiscoveryConfig, ConfigError> {
        let d = DiscoveryConfig::default();
        let mut rules = Vec::new();
        for (i, rule) in raw.rule.into_iter().enumerate() {
            let span = rule.span();
            let rule = rule.into_inner();
            let Some(pattern) = rule.r#match else {
                let path = [key("discovery"), key("rule"), Seg::Index(i), key("match")];
                return Err(self.missing(span, &path, "a regex on the command line"));
            };
            let labels = rule.labels.into_iter().map(|(k, v)| (k.0, v)).collect();
            rules.push(DiscoveryRule {
                pattern: pattern.0,
                labels,
                exclude_ports: rule.exclude_ports.into_iter().map(|p| p.0).collect(),
            });
        }
        Ok(DiscoveryConfig {
            enabled: raw.enabled.map_or(d.enabled, |v| v.0),
            interval: raw.interval.map_or(d.interval, |v| v.0),
            include: raw.include.map_or(d.include, |v| v.0),
            exclude: raw.exclude.map_or(d.exclude, |v| v.0),
            grace: raw.grace.map_or(d.grace, |v| v.0),
            rule: rules,
        })
    }
}

impl From<RawRuntimeStats> for RuntimeStatsConfig {
    fn from(raw: RawRuntimeStats) -> Self {
        let d = RuntimeStatsConfig::default();
        RuntimeStatsConfig {
            enabled: raw.enabled.map_or(d.enabled, |v| v.0),
            interval: raw.interval.map_or(d.interval, |v| v.0),
        }
    }
}

impl Ctx<'_> {
    /// `[ebpf]`; `requests_dir` relative to the config file's directory.
    pub(super) fn ebpf(&self, raw: RawEbpf) -> EbpfConfig {
        let d = EbpfConfig::default();
        EbpfConfig {
            enabled: raw.enabled.map_or(d.enabled, |v| v.0),
            request_arrival: raw.request_arrival.map_or(d.request_arrival, |v| v.0),
            requests_dir: raw.requests_dir.map(|dir| self.resolve(&dir.0)),
        }
    }
}

/// Below this the sampling costs more than it can tell: HotSpot itself
/// updates its sampled counters every 50 ms.
const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, parse_ok};
    use super::RequestArrival;

    #[test]
    fn rules_include_and_exclude_are_read() {
        let config = parse_ok(&[
            "[discovery]",
            "interval = '2s'",
            "include = ['-jar app']",
            "exclude = 'jenkins'",
            "[[discovery.rule]]",
            "match = 'pricing-.*\\.jar'",
            "labels = { service = 'pricing' }",
            "exclude_ports = [8081, 9000]",
            "[[discovery.rule]]",
            "match = 'pricing-2'",
            "exclude_ports = [9000]",
            "[runtime_stats]",
            "interval = '1s'",
        ]);
        let discovery = &config.discovery;
        assert!(discovery.selects("java -jar app.jar"));
        assert!(!discovery.selects("java -jar app.jar jenkins"));
        assert!(!discovery.selects("java -cp x Main"));
        let labels = discovery.labels_for("java -jar pricing-2.jar");
        assert_eq!(labels.get("service").map(String::as_str), Some("pricing"));
        let ports = discovery.excluded_ports("java -jar pricing-2.jar");
        assert_eq!(ports, [8081, 9000]);
        assert!(discovery.excluded_ports("java -jar app.jar").is_empty());
        assert_eq!(config.runtime_stats.interval.as_secs(), 1);
        let probe = parse_ok(&["[ebpf]", "request_arrival = 'tcp_probe'"]);
        assert_eq!(probe.ebpf.request_arrival, RequestArrival::TcpProbe);
        assert_eq!(config.ebpf.request_arrival, RequestArrival::Auto);
    }

    #[test]
    fn bad_keys_name_their_line() {
        parse_err(
            &["[discovery]", "include = ['(']"],
            2,
            "discovery.include[0]",
        );
        // An item of an array on a line of its own: that line.
        parse_err(
            &["[discovery]", "exclude = [", "  'a',", "  '(',", "]"],
            4,
            "discovery.exclude[1]",
        );
        parse_err(&["[discovery]", "enabled = 'yes'"], 2, "discovery.enabled");
        parse_err(
            &["[ebpf]", "request_arrival = 'kprobe'"],
            2,
            "ebpf.request_arrival",
        );
        parse_err(
            &["[runtime_stats]", "interval = '1ms'"],
            2,
            "runtime_stats.interval",
        );
        parse_err(
            &[
                "[[discovery.rule]]",
                "match = 'x'",
                "labels = { pid = '1' }",
            ],
            3,
            "discovery.rule[0].labels.pid",
        );
        parse_err(
            &["[[discovery.rule]]", "match = 'x'", "exclude_ports = [0]"],
            3,
            "discovery.rule[0].exclude_ports[0]",
        );
        parse_err(
            &["[[discovery.rule]]", "labels = { a = '1' }"],
            1,
            "discovery.rule[0].match",
        );
    }
}
