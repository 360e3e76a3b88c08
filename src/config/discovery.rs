//! `[discovery]` (which Java processes of the host the agent follows without
//! a `[[gc_log]]`) and `[runtime_stats]` (how often their hsperfdata is read).

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize, Serializer};
use toml::{Spanned, Value};

use super::spans::{key, ConfigError, Ctx, Seg};
use super::{label_problem, serialize_duration, LabelUse};

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
}

/// `[[discovery.rule]] match = "REGEX" labels = {...}`.
#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryRule {
    #[serde(rename = "match", serialize_with = "serialize_regex")]
    pub pattern: Regex,
    pub labels: BTreeMap<String, String>,
}

impl PartialEq for DiscoveryRule {
    fn eq(&self, other: &Self) -> bool {
        self.pattern.as_str() == other.pattern.as_str() && self.labels == other.labels
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
}

impl Default for EbpfConfig {
    fn default() -> Self {
        EbpfConfig { enabled: true }
    }
}

fn serialize_regex<S: Serializer>(r: &Regex, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

fn serialize_regexes<S: Serializer>(r: &[Regex], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(r.iter().map(Regex::as_str))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [discovery] table")]
pub(super) struct RawDiscovery {
    enabled: Option<Spanned<Value>>,
    interval: Option<Spanned<Value>>,
    include: Option<Spanned<Value>>,
    exclude: Option<Spanned<Value>>,
    grace: Option<Spanned<Value>>,
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[discovery.rule]] table")]
pub(super) struct RawRule {
    #[serde(rename = "match")]
    pattern: Option<Spanned<Value>>,
    labels: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [runtime_stats] table")]
pub(super) struct RawRuntimeStats {
    enabled: Option<Spanned<Value>>,
    interval: Option<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an [ebpf] table")]
pub(super) struct RawEbpf {
    enabled: Option<Spanned<Value>>,
}

impl Ctx<'_> {
    fn boolean(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<bool, ConfigError> {
        v.get_ref()
            .as_bool()
            .ok_or_else(|| self.type_err(v, path, "true or false"))
    }

    fn regex(
        &self,
        v: &Spanned<Value>,
        span: Range<usize>,
        path: &[Seg],
    ) -> Result<Regex, ConfigError> {
        let text = self.string(v, path)?;
        Regex::new(text).map_err(|e| {
            let first = e
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_string();
            self.err(span, path, format!("invalid regex {text:?}: {first}"))
        })
    }

    /// A string or an array of strings, each a regex.
    fn regexes(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<Vec<Regex>, ConfigError> {
        match v.get_ref() {
            Value::String(_) => Ok(vec![self.regex(v, v.span(), path)?]),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let mut at = path.to_vec();
                    at.push(Seg::Index(i));
                    let spanned = Spanned::new(v.span(), item.clone());
                    self.regex(&spanned, v.span(), &at)
                })
                .collect(),
            _ => Err(self.type_err(v, path, "a regex or an array of regexes")),
        }
    }

    pub(super) fn discovery(&self, raw: &RawDiscovery) -> Result<DiscoveryConfig, ConfigError> {
        let at = |k: &str| vec![key("discovery"), key(k)];
        let mut config = DiscoveryConfig::default();
        if let Some(v) = &raw.enabled {
            config.enabled = self.boolean(v, &at("enabled"))?;
        }
        if let Some(v) = &raw.interval {
            config.interval = self.positive_duration(v, &at("interval"))?;
        }
        if let Some(v) = &raw.include {
            config.include = self.regexes(v, &at("include"))?;
        }
        if let Some(v) = &raw.exclude {
            config.exclude = self.regexes(v, &at("exclude"))?;
        }
        if let Some(v) = &raw.grace {
            config.grace = self.duration(v, &at("grace"))?;
        }
        for (i, rule) in raw.rule.iter().enumerate() {
            let path = |k: &str| vec![key("discovery"), key("rule"), Seg::Index(i), key(k)];
            let pattern = self.required_string(
                rule.span(),
                &rule.get_ref().pattern,
                &path("match"),
                "a regex on the command line",
            )?;
            let pattern_value = rule.get_ref().pattern.as_ref().expect("required above");
            let pattern = self.regex(
                &Spanned::new(pattern_value.span(), Value::String(pattern)),
                pattern_value.span(),
                &path("match"),
            )?;
            let mut labels = BTreeMap::new();
            for (name, value) in rule.get_ref().labels.iter().flatten() {
                let mut lpath = path("labels");
                lpath.push(Seg::Key(name.get_ref().clone()));
                let own = DISCOVERY_LABELS
                    .contains(&name.get_ref().as_str())
                    .then(|| {
                        format!(
                            "label name {:?} is set by discovery itself; choose another name",
                            name.get_ref()
                        )
                    });
                if let Some(problem) =
                    own.or_else(|| label_problem(name.get_ref(), LabelUse::Series))
                {
                    return Err(self.err(name.span(), &lpath, problem));
                }
                labels.insert(name.get_ref().clone(), value.get_ref().clone());
            }
            config.rule.push(DiscoveryRule { pattern, labels });
        }
        Ok(config)
    }

    pub(super) fn runtime_stats(
        &self,
        raw: &RawRuntimeStats,
    ) -> Result<RuntimeStatsConfig, ConfigError> {
        let at = |k: &str| vec![key("runtime_stats"), key(k)];
        let mut config = RuntimeStatsConfig::default();
        if let Some(v) = &raw.enabled {
            config.enabled = self.boolean(v, &at("enabled"))?;
        }
        if let Some(v) = &raw.interval {
            config.interval = self.at_least(v, &at("interval"), MIN_SAMPLE_INTERVAL)?;
        }
        Ok(config)
    }
}

impl Ctx<'_> {
    pub(super) fn ebpf(&self, raw: &RawEbpf) -> Result<EbpfConfig, ConfigError> {
        let mut config = EbpfConfig::default();
        if let Some(v) = &raw.enabled {
            config.enabled = self.boolean(v, &[key("ebpf"), key("enabled")])?;
        }
        Ok(config)
    }
}

/// Below this the sampling costs more than it can tell: HotSpot itself
/// updates its sampled counters every 50 ms.
const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, parse_ok};

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
            "[runtime_stats]",
            "interval = '1s'",
        ]);
        let discovery = &config.discovery;
        assert!(discovery.selects("java -jar app.jar"));
        assert!(!discovery.selects("java -jar app.jar jenkins"));
        assert!(!discovery.selects("java -cp x Main"));
        let labels = discovery.labels_for("java -jar pricing-2.jar");
        assert_eq!(labels.get("service").map(String::as_str), Some("pricing"));
        assert_eq!(config.runtime_stats.interval.as_secs(), 1);
    }

    #[test]
    fn bad_keys_name_their_line() {
        parse_err(
            &["[discovery]", "include = ['(']"],
            2,
            "discovery.include[0]",
        );
        parse_err(&["[discovery]", "enabled = 'yes'"], 2, "discovery.enabled");
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
            &["[[discovery.rule]]", "labels = { a = '1' }"],
            1,
            "discovery.rule[0].match",
        );
    }
}
