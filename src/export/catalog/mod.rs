//! The metric catalog: every family pausewatch exports, defined once.
//!
//! Names follow Micrometer where Micrometer has the metric (`jvm_gc_pause_seconds`
//! with `gc`, `action`, `cause`; `jvm_gc_live_data_size_bytes`, ...) so existing
//! JVM dashboards keep working; everything else is `pausewatch_*`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use pausewatch_parsers::Collector;

use crate::model::alerts::Alert;
use crate::model::histogram::Histogram;
use crate::store::{AccessStreamState, AgentState, StreamState};

/// `window` label values of `pausewatch_gc_overhead_ratio` and the number of
/// complete minutes each covers.
pub const OVERHEAD_WINDOWS: [(&str, u32); 2] = [("1m", 1), ("5m", 5)];

/// Set to `go` on every series of a stream the Go runtime writes (its
/// `gctrace` output), so that the shared families tell Go services from
/// JVMs; JVM streams go without it, as they always have.
const RUNTIME_LABEL: &str = "runtime";

/// What a family measures; each exporter maps it to its own instrument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (until the agent restarts); the name ends in `_total`.
    Counter,
    Gauge,
    /// Bucket `i` counts the observations up to [`crate::model::histogram::PAUSE_BUCKETS`]`[i]`.
    Histogram,
    /// Always 1: what matters is in the labels (an OpenMetrics info, exposed
    /// as a gauge like Prometheus's own `*_info` and `ALERTS`).
    Info,
}

/// The unit of a family's values. Prometheus wants it as a name suffix
/// (and `# UNIT` line); OpenTelemetry as an instrument attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Bytes,
    /// A fraction of 1.
    Ratio,
    /// Counts, flags, correlation coefficients.
    None,
}

/// One value read from the state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Int(u64),
    Float(f64),
    Histogram(&'a Histogram),
}

/// What a reader returns for one series: the family's own label values and
/// the value. [`Family::read`] adds the scope's labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// Values of [`Family::labels`], in that order.
    pub labels: Vec<Cow<'a, str>>,
    pub value: Value<'a>,
    /// The wall-clock minute a per-minute figure describes. It is published
    /// only once the minute is complete, so an exporter that stamps it with
    /// the minute's start lets a dashboard draw it at that minute rather than
    /// at the scrape.
    pub minute: Option<DateTime<Utc>>,
}

/// Reads one GC stream; `now` decides which minute is the last complete one.
pub type StreamReader = for<'a> fn(&'a StreamState, DateTime<Utc>) -> Vec<Sample<'a>>;
/// Reads one access log.
pub type AccessLogReader = for<'a> fn(&'a AccessStreamState) -> Vec<Sample<'a>>;
/// Reads one alert.
pub type AlertReader = for<'a> fn(&'a Alert) -> Vec<Sample<'a>>;
/// Reads the agent as a whole; the `&str` is the agent's version.
pub type AgentReader = for<'a> fn(&'a AgentState, &'a str) -> Vec<Sample<'a>>;

/// What a family has series for, and how to read one of them.
#[derive(Clone, Copy)]
pub enum Scope {
    /// Per GC stream: series carry `log` and the stream's configured labels.
    Stream(StreamReader),
    /// Per access log: series carry its `log` and the configured labels of
    /// the GC stream it feeds.
    AccessLog(AccessLogReader),
    /// Per alert: series carry the alert's labels (`alertname`, `log`,
    /// `severity`, configured and rule labels).
    Alert(AlertReader),
    /// Once for the agent: series carry only the family's own labels.
    Agent(AgentReader),
}

impl Scope {
    /// Names the agent sets on every series of the scope next to the
    /// configured labels; `None` when the series carry no configured labels.
    pub fn scope_labels(&self) -> Option<&'static [&'static str]> {
        match self {
            Scope::Stream(_) => Some(&["log", RUNTIME_LABEL]),
            Scope::AccessLog(_) => Some(&["log"]),
            Scope::Alert(_) => Some(&["alertname", "log"]),
            Scope::Agent(_) => None,
        }
    }
}

/// One metric family: name, kind, unit, help, own label names and readers.
///
/// The catalog exists so that every exporter (the Prometheus exposition
/// and the OTLP exporter) reads the same definition instead of
/// restating names and label sets, and so that the configuration can refuse
/// source labels that would clash with them ([`crate::labels`], which its
/// tests hold to the families' labels).
#[derive(Clone, Copy)]
pub struct Family {
    /// The name as Prometheus scrapes it: counters end in `_total`, and the
    /// unit, when it is seconds or bytes, precedes that.
    pub name: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    pub help: &'static str,
    /// The family's own label names, after the scope's labels on each series.
    pub labels: &'static [&'static str],
    /// The OpenTelemetry JVM semantic conventions' metric this family is,
    /// where they have it; `None`: exported as [`Family::otel_name`] derives.
    pub semconv: Option<Semconv>,
    /// Where the samples come from, in exposition order; only
    /// `pausewatch_errors_total` has three (per stream, per access log, then the agent's).
    pub scopes: &'static [Scope],
}

/// A metric of the OpenTelemetry JVM semantic conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Semconv {
    pub name: &'static str,
    /// Attributes every point carries (`jvm.memory.type = heap`).
    pub attributes: &'static [(&'static str, &'static str)],
    /// A whole-heap figure from the log that a JVM's per-pool runtime stats
    /// report under the same name: exported only for a JVM without them, so
    /// that summing the name's points never counts the heap twice.
    pub unless_pools: bool,
}

/// Attribute names of the semantic conventions for the catalog's label
/// names, where they differ.
const OTEL_ATTRIBUTES: [(&str, &str); 5] = [
    ("gc", "jvm.gc.name"),
    ("action", "jvm.gc.action"),
    ("cause", "jvm.gc.cause"),
    // Micrometer's `area` is `heap` (runtime stats have heap pools only),
    // which is also the convention's value.
    ("area", "jvm.memory.type"),
    ("id", "jvm.memory.pool.name"),
];

/// One series as exporters see it: every label, and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series<'a> {
    /// The scope's labels (`log` and the configured ones, or an alert's),
    /// then the family's own.
    pub labels: Labels<'a>,
    pub value: Value<'a>,
    /// As [`Sample::minute`].
    pub minute: Option<DateTime<Utc>>,
}

/// Label names and values.
pub type Labels<'a> = Vec<(&'a str, Cow<'a, str>)>;

/// OpenTelemetry names that the rule of [`Family::otel_name`] would get
/// wrong: `pausewatch.log` is also the resource attribute naming the log,
/// and a seconds counter stripped of its unit would differ from its count
/// only by a plural `s` (`allocation_stall` and `allocation_stalls`).
pub const OTEL_NAMES: [(&str, &str); 5] = [
    ("pausewatch_log_bytes_total", "pausewatch.log_read"),
    (
        "pausewatch_allocation_stall_seconds_total",
        "pausewatch.allocation_stall_time",
    ),
    (
        "pausewatch_gc_concurrent_cycle_seconds_total",
        "pausewatch.gc_concurrent_cycle_time",
    ),
    (
        "pausewatch_jvm_gc_collection_seconds_total",
        "pausewatch.jvm_gc_collection_time",
    ),
    (
        "pausewatch_jvm_safepoint_seconds_total",
        "pausewatch.jvm_safepoint_time",
    ),
];

impl Family {
    /// The OpenTelemetry name: the semantic conventions' where they have the
    /// metric, else one of [`OTEL_NAMES`], else `pausewatch.` and the
    /// Prometheus name without its prefix, `_total` and unit (the unit
    /// travels beside the name in OTLP).
    pub fn otel_name(&self) -> Cow<'static, str> {
        if let Some(semconv) = self.semconv {
            return semconv.name.into();
        }
        if let Some((_, otel)) = OTEL_NAMES.iter().find(|(name, _)| *name == self.name) {
            return (*otel).into();
        }
        let name = self.name.strip_suffix("_total").unwrap_or(self.name);
        let name = match self.unit {
            Unit::Seconds => name.strip_suffix("_seconds"),
            Unit::Bytes => name.strip_suffix("_bytes"),
            Unit::Ratio | Unit::None => None,
        }
        .unwrap_or(name);
        let name = name.strip_prefix("pausewatch_").unwrap_or(name);
        format!("pausewatch.{name}").into()
    }

    /// The OpenTelemetry attribute name of the family's label `label`.
    pub fn otel_attribute(label: &str) -> &str {
        OTEL_ATTRIBUTES
            .iter()
            .find(|(name, _)| *name == label)
            .map_or(label, |(_, otel)| otel)
    }

    /// Every series of the family in `state`, scope by scope in exposition
    /// order; `build_version` is the agent's version, `now` the clock that
    /// decides the last complete minute.
    pub fn read<'a>(
        &self,
        state: &'a AgentState,
        build_version: &'a str,
        now: DateTime<Utc>,
    ) -> Vec<Series<'a>> {
        let mut series = Vec::new();
        for scope in self.scopes {
            match scope {
                Scope::Stream(read) => {
                    for stream in state.streams.values().filter(|s| !s.exited) {
                        let mut scope_labels = log_labels(&stream.log, &stream.labels);
                        if stream.jvm.collector == Collector::Go {
                            scope_labels.push((RUNTIME_LABEL, "go".into()));
                        }
                        series.extend(self.label(scope_labels, read(stream, now)));
                    }
                }
                Scope::AccessLog(read) => {
                    for access in state.access_streams.values() {
                        let scope_labels = log_labels(&access.log, &access.labels);
                        series.extend(self.label(scope_labels, read(access)));
                    }
                }
                Scope::Alert(read) => {
                    for alert in state.alerts.iter() {
                        // The family's own labels (`state`) replace the alert's.
                        let scope_labels = alert
                            .labels
                            .iter()
                            .filter(|(name, _)| !self.labels.contains(&name.as_str()))
                            .map(|(name, value)| (name.as_str(), value.into()))
                            .collect();
                        series.extend(self.label(scope_labels, read(alert)));
                    }
                }
                Scope::Agent(read) => {
                    series.extend(self.label(Vec::new(), read(state, build_version)))
                }
            }
        }
        series
    }

    /// Prefixes each sample's own labels with the scope's. A sample whose
    /// reader gave another number of label values than the family has names
    /// is refused (and fails a debug build), not cut to fit.
    fn label<'a>(
        &self,
        scope_labels: Labels<'a>,
        samples: Vec<Sample<'a>>,
    ) -> impl Iterator<Item = Series<'a>> {
        let (name, names) = (self.name, self.labels);
        samples.into_iter().filter_map(move |sample| {
            if sample.labels.len() != names.len() {
                debug_assert!(
                    false,
                    "{name}: {} label values for {names:?}",
                    sample.labels.len()
                );
                tracing::error!(
                    family = name,
                    expected = names.len(),
                    got = sample.labels.len(),
                    "a reader gave the wrong number of label values: its sample is left out"
                );
                return None;
            }
            let own = names.iter().copied().zip(sample.labels);
            Some(Series {
                labels: scope_labels.iter().cloned().chain(own).collect(),
                value: sample.value,
                minute: sample.minute,
            })
        })
    }
}

/// `log` first, then the configured labels: what every series of a log carries.
fn log_labels<'a>(log: &'a str, configured: &'a BTreeMap<String, String>) -> Labels<'a> {
    let configured = configured.iter().map(|(k, v)| (k.as_str(), v.into()));
    std::iter::once(("log", log.into()))
        .chain(configured)
        .collect()
}

mod families;
mod readers;

pub use families::CATALOG;

#[cfg(test)]
mod tests;
