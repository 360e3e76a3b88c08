//! The metric catalog: every family pausewatch exports, defined once.
//!
//! Names follow Micrometer where Micrometer has the metric (`jvm_gc_pause_seconds`
//! with `gc`, `action`, `cause`; `jvm_gc_live_data_size_bytes`, ...) so existing
//! JVM dashboards keep working; everything else is `pausewatch_*`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::PoisonError;
use std::time::Duration;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{Collector, UnparsedKind};

use crate::model::alerts::Alert;
use crate::model::correlate::LatencyMinute;
use crate::model::histogram::Histogram;
use crate::model::jvm::{PauseSeries, SafepointSeries};
use crate::model::minutes::{last_complete_minute, Minute, CLOCK_OUTLIER};
use crate::model::runtime::{CollectorStats, MemoryPool, RuntimeStats};
use crate::store::{AccessStreamState, AgentState, StreamState};

/// `window` label values of `pausewatch_gc_overhead_ratio` and the number of
/// complete minutes each covers.
pub const OVERHEAD_WINDOWS: [(&str, u32); 2] = [("1m", 1), ("5m", 5)];

/// Set to `go` on every series of a stream the Go runtime writes (its
/// `gctrace` output), so that the shared families tell Go services from
/// JVMs; JVM streams go without it, as they always have.
const RUNTIME_LABEL: &str = "runtime";

/// Labels Prometheus itself attaches to every scraped series; a source label
/// of the same name would be renamed `exported_*` on scrape.
const TARGET_LABELS: [&str; 2] = ["instance", "job"];

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
/// today, OpenTelemetry next) reads the same definition instead of
/// restating names and label sets, and so that the configuration can refuse
/// source labels that would clash with them ([`reserved_label_names`]).
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

/// A convention metric whose attributes all come from the family's labels.
const fn semconv(name: &'static str) -> Option<Semconv> {
    Some(Semconv {
        name,
        attributes: &[],
        unless_pools: false,
    })
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

    /// Prefixes each sample's own labels with the scope's.
    fn label<'a>(
        &self,
        scope_labels: Labels<'a>,
        samples: Vec<Sample<'a>>,
    ) -> impl Iterator<Item = Series<'a>> {
        let names = self.labels;
        samples.into_iter().map(move |sample| {
            let own = names.iter().copied().zip(sample.labels);
            Series {
                labels: scope_labels.iter().cloned().chain(own).collect(),
                value: sample.value,
                minute: sample.minute,
            }
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

/// A `jvm.memory.*` metric of the heap as a whole: the log gives no
/// per-pool figures, so points carry `jvm.memory.type` but no pool name.
const fn whole_heap(name: &'static str, unless_pools: bool) -> Option<Semconv> {
    Some(Semconv {
        name,
        attributes: &[("jvm.memory.type", "heap")],
        unless_pools,
    })
}

/// Every family, in exposition order.
pub static CATALOG: &[Family] = &[
    Family {
        name: "jvm_gc_pause_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Stop-the-world GC pauses read from the GC log, labelled as Micrometer labels jvm.gc.pause.",
        labels: &["gc", "action", "cause"],
        semconv: semconv("jvm.gc.duration"),
        scopes: &[Scope::Stream(pauses)],
    },
    Family {
        name: "go_gc_pause_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Stop-the-world pauses of a Go program's GC cycles (sweep plus mark termination, as runtime/metrics /sched/pauses/total/gc:seconds), read from its gctrace output; cause is forced for runtime.GC().",
        labels: &["cause"],
        semconv: None,
        scopes: &[Scope::Stream(go_pauses)],
    },
    Family {
        name: "pausewatch_gc_pause_max_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Exact longest GC pause that ended in the last complete wall-clock minute, 0 if none (not Micrometer's decaying max).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            last_complete(s, now, |m| Value::Float(m.map_or(0.0, |m| m.pause_max_seconds)))
        })],
    },
    Family {
        name: "pausewatch_gc_pause_max_lower_bound",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "1 when pausewatch_gc_pause_max_seconds of the same minute is a lower bound (hsperfdata: several pauses between two samples, only their total known), else 0.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            last_complete(s, now, |m| Value::Int(m.is_some_and(|m| m.pause_max_lower_bound).into()))
        })],
    },
    Family {
        name: "pausewatch_gc_pauses_last_minute",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "GC pauses that ended in the last complete wall-clock minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            last_complete(s, now, |m| Value::Int(m.map_or(0, |m| m.pause_count)))
        })],
    },
    Family {
        name: "pausewatch_gc_overhead_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Fraction of wall-clock time spent in GC pauses over the last 1 or 5 complete minutes.",
        labels: &["window"],
        semconv: None,
        scopes: &[Scope::Stream(overhead)],
    },
    Family {
        name: "pausewatch_safepoints_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Safepoints (every stop of the application threads, GC or not), by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_operation(s, |op| Value::Int(op.count)))],
    },
    Family {
        name: "pausewatch_safepoint_stopped_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time the application threads were stopped at safepoints, by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            per_operation(s, |op| Value::Float(op.stopped_seconds))
        })],
    },
    Family {
        name: "pausewatch_safepoint_time_to_safepoint_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time spent bringing the application threads to safepoints, by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            per_operation(s, |op| Value::Float(op.time_to_safepoint_seconds))
        })],
    },
    Family {
        name: "pausewatch_safepoint_time_to_safepoint_max_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Longest time to safepoint in the last complete wall-clock minute, 0 if none.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            last_complete(s, now, |m| {
                Value::Float(m.map_or(0.0, |m| m.time_to_safepoint_max_seconds))
            })
        })],
    },
    Family {
        name: "pausewatch_allocation_stalls_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Allocation stalls: application threads blocked until the collector freed memory (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.allocation_stalls)))],
    },
    Family {
        name: "pausewatch_relocation_stalls_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Relocation stalls: application threads blocked on object relocation (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.relocation_stalls)))],
    },
    Family {
        name: "pausewatch_gc_concurrent_cycles_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Concurrent GC cycles completed (G1 mark cycles, ZGC and Shenandoah cycles).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.concurrent_cycles)))],
    },
    Family {
        name: "pausewatch_gc_full_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Full GCs.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.full_gcs)))],
    },
    Family {
        name: "pausewatch_gc_evacuation_failures_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses with an evacuation failure (G1 to-space exhausted).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.evacuation_failures)))],
    },
    Family {
        name: "pausewatch_gc_degenerated_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Degenerated GCs (Shenandoah).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.degenerated_gcs)))],
    },
    Family {
        name: "pausewatch_gc_humongous_allocations_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses caused by a humongous allocation (G1).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.humongous_allocations)))],
    },
    Family {
        name: "pausewatch_gc_explicit_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses requested explicitly with System.gc().",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.explicit_gcs)))],
    },
    Family {
        name: "pausewatch_jvm_restarts_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "JVM restarts seen in the log stream (a new run started writing it).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.jvm_restarts)))],
    },
    Family {
        name: "pausewatch_jvm_start_time_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Start of the JVM run writing the log, Unix time (from the log's uptime, else its first event): the Prometheus rules leave each run's warm-up out of PauseRegression baselines.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let start = s.jvm.run_starts.last();
            known(start.map(|t| Value::Float(t.timestamp_millis() as f64 / 1000.0)))
        })],
    },
    Family {
        name: "jvm_gc_memory_promoted_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes promoted into the old generation by young collections.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.promoted_bytes)))],
    },
    Family {
        name: "jvm_gc_memory_allocated_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes allocated: heap growth from the end of one collection to the start of the next.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.allocated_bytes)))],
    },
    Family {
        name: "pausewatch_allocation_stall_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time application threads spent in allocation stalls (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            one(Value::Float(s.jvm.counters.allocation_stall_seconds))
        })],
    },
    Family {
        name: "pausewatch_gc_concurrent_cycle_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Wall-clock duration of concurrent GC cycles; not pause time.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            one(Value::Float(s.jvm.counters.concurrent_cycle_seconds))
        })],
    },
    Family {
        name: "pausewatch_gc_concurrent_phase_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Duration of concurrent GC phases, which run alongside the application; not pause time.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            one(Value::Float(s.jvm.counters.concurrent_phase_seconds))
        })],
    },
    Family {
        name: "pausewatch_jvm_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "The JVM writing the log: collector and JDK version; the value is always 1.",
        labels: &["collector", "jdk_version"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let version = s.jvm.jdk_version.as_deref().unwrap_or("unknown");
            info(vec![s.jvm.collector.as_str().into(), version.into()])
        })],
    },
    Family {
        name: "pausewatch_jvm_discovered",
        kind: Kind::Info,
        unit: Unit::None,
        help: "A JVM discovery found; runtime_stats says whether its hsperfdata is read, reason why not; pause_source which one input its pauses come from (gc_log, ebpf or hsperfdata), ebpf_reason why eBPF does not measure it. The value is always 1.",
        labels: &["user", "runtime_stats", "reason", "pause_source", "ebpf_reason"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| discovered(s))],
    },
    Family {
        name: "pausewatch_jvm_gc_collections_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Collections by HotSpot collector counter (sun.gc.collector.N.invocations): the JVM's own count since it started.",
        labels: &["collector"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_collector(s, |c| Value::Int(c.invocations)))],
    },
    Family {
        name: "pausewatch_jvm_gc_collection_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time in collections by HotSpot collector counter (sun.gc.collector.N.time).",
        labels: &["collector"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_collector(s, |c| Value::Float(c.seconds)))],
    },
    Family {
        name: "pausewatch_gc_pauses_unresolved_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Pauses recovered from hsperfdata several between two samples: counted and timed in total, each given the mean duration.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.unresolved_pauses))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_probe_mismatch",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "For a JVM whose pauses eBPF measures: safepoints the probes recorded minus the JVM's sun.rt.safepoints counter, less that difference at the first comparison; below 0, records were lost (pausewatch_errors_total{kind=\"ebpf_events_dropped\"}).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            runtime(s, |r| known(r.safepoint_probe_mismatch.map(Value::Float)))
        })],
    },
    Family {
        name: "pausewatch_gc_log_counter_mismatch",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "For a JVM whose GC log is followed or whose pauses eBPF measures: pauses counted from the log or the probes minus the JVM's own hsperfdata counter, per gc; non-zero for long, the agent misses part of the log.",
        labels: &["gc"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            runtime(s, |r| {
                let mismatch = r.log_counter_mismatch.iter();
                mismatch
                    .map(|(gc, difference)| Sample {
                        minute: None,
                        labels: vec![gc.as_str().into()],
                        value: Value::Float(*difference),
                    })
                    .collect()
            })
        })],
    },
    Family {
        name: "pausewatch_jvm_safepoints_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Safepoints since the JVM started (sun.rt.safepoints).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.safepoints))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time at safepoints since the JVM started (sun.rt.safepointTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.safepoint_seconds))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_sync_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time to reach safepoints since the JVM started (sun.rt.safepointSyncTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.safepoint_sync_seconds))))],
    },
    Family {
        name: "jvm_memory_used_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Memory used per pool, under Micrometer's names (id is the MXBean's pool name).",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.used"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| p.used))],
    },
    Family {
        name: "jvm_memory_committed_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Memory committed per pool.",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.committed"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| Some(p.committed)))],
    },
    Family {
        name: "jvm_memory_max_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum memory per pool, where the pool has one.",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.limit"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| p.max))],
    },
    Family {
        name: "pausewatch_jvm_gc_cause_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "The collection running now (cause, No GC between collections) and the last one's cause. The value is always 1.",
        labels: &["cause", "last_cause"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| info(vec![r.gc_cause.as_str().into(), r.gc_last_cause.as_str().into()])))],
    },
    Family {
        name: "jvm_classes_loaded_classes",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Classes loaded now (loaded minus unloaded, as Micrometer counts).",
        labels: &[],
        semconv: semconv("jvm.class.count"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.classes_loaded.saturating_sub(r.classes_unloaded)))))],
    },
    Family {
        name: "jvm_classes_unloaded_classes_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Classes unloaded since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.classes_unloaded))))],
    },
    Family {
        name: "pausewatch_jvm_compilation_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "JIT compilation time since the JVM started (java.ci.totalTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.jit_seconds))))],
    },
    Family {
        name: "jvm_threads_live_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Live threads.",
        labels: &[],
        semconv: semconv("jvm.thread.count"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_live))))],
    },
    Family {
        name: "jvm_threads_daemon_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Live daemon threads.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_daemon))))],
    },
    Family {
        name: "jvm_threads_peak_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Most live threads since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_peak))))],
    },
    Family {
        name: "process_uptime_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Time since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.uptime_seconds))))],
    },
    Family {
        name: "process_cpu_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "CPU time the JVM's process used, user and system, since it started (/proc/PID/stat), as the Prometheus Java client names it.",
        labels: &[],
        semconv: semconv("jvm.cpu.time"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| known(r.cpu_seconds.map(Value::Float))))],
    },
    Family {
        name: "pausewatch_heap_after_gc_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap occupancy after the latest collection.",
        labels: &[],
        semconv: whole_heap("jvm.memory.used_after_last_gc", false),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.after_gc_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_heap_committed_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap capacity reported by the latest collection.",
        labels: &[],
        semconv: whole_heap("jvm.memory.committed", true),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.committed_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_heap_max_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum heap size from the log preamble.",
        labels: &[],
        semconv: whole_heap("jvm.memory.limit", true),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.max_bytes.map(Value::Int)))],
    },
    Family {
        name: "jvm_gc_live_data_size_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap occupancy after the latest full, mixed or major collection: the live data set.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.live_data_bytes.map(Value::Int)))],
    },
    Family {
        name: "jvm_gc_max_data_size_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum heap size from the log preamble.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.max_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_log_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines read from the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.parse.lines)))],
    },
    Family {
        name: "pausewatch_log_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes read from the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.parse.bytes)))],
    },
    Family {
        name: "pausewatch_log_unparsed_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines of the log stream that were not understood, by reason.",
        labels: &["kind"],
        semconv: None,
        scopes: &[Scope::Stream(unparsed_lines)],
    },
    Family {
        name: "pausewatch_label_values_overflow_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Events whose label value was past max_label_values distinct values of its family, counted under \"other\".",
        labels: &["label"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            ["cause", "operation"]
                .into_iter()
                .map(|label| Sample {
                    labels: vec![label.into()],
                    value: Value::Int(s.jvm.label_overflow.get(label).copied().unwrap_or(0)),
                    minute: None,
                })
                .collect()
        })],
    },
    Family {
        name: "pausewatch_log_events_without_wall_clock_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Events that could not be placed in wall-clock time (uptime-only log without a JVM start): not in minutes, alerts or correlation.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.minutes.unplaced_events)))],
    },
    Family {
        name: "pausewatch_log_files_followed",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Files of the log stream currently followed (live file and rotated ones).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.files_followed)))],
    },
    Family {
        name: "pausewatch_log_read_lag_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Bytes written to the live log file that the agent has not read yet.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.read_lag_bytes)))],
    },
    Family {
        name: "pausewatch_log_last_event_age_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Time since the agent last processed an event of the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            let age = s.last_event_processed_at.map(|at| age_seconds(at, now));
            known(age.map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_log_readable",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Whether the live log file could be read at the last attempt (1) or not (0).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(u64::from(s.readable))))],
    },
    Family {
        name: "pausewatch_errors_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Agent errors by kind; errors of one log stream carry its labels.",
        labels: &["kind"],
        semconv: None,
        scopes: &[
            Scope::Stream(|s, _| by_kind(&s.errors)),
            Scope::AccessLog(|a| by_kind(&a.errors)),
            Scope::Agent(|agent, _| by_kind(&agent.errors)),
        ],
    },
    Family {
        name: "pausewatch_request_duration_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Request durations read from the service's access log (buckets as jvm_gc_pause_seconds).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Histogram(&l.histogram)))
        })],
    },
    Family {
        name: "pausewatch_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests read from the access log or counted by the latency histogram.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Int(l.counters.requests)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests slower than the SLO (or their minute's p99.9 without one), in attributed minutes.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Int(l.counters.slow_requests)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_stop_affected_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Slow requests of which GC pauses and safepoints covered at least the configured share.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let latency = s.latency.as_ref();
            known(latency.map(|l| Value::Int(l.counters.slow_requests_stop_affected)))
        })],
    },
    Family {
        name: "pausewatch_request_latency_p99_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99 request latency of the last attributed minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| Some(Value::Float(m.latency.p99_seconds)))
        })],
    },
    Family {
        name: "pausewatch_request_latency_p999_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99.9 request latency of the last attributed minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| Some(Value::Float(m.latency.p999_seconds)))
        })],
    },
    Family {
        name: "pausewatch_request_latency_p999_without_stop_affected_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99.9 of the last attributed minute recomputed without stop-affected requests: the tail without pauses.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| {
                let attribution = m.attribution?;
                Some(Value::Float(attribution.p999_without_stop_affected_seconds))
            })
        })],
    },
    Family {
        name: "pausewatch_slow_time_explained_by_stops_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Share of the slow requests' time over the SLO that overlapping stops explain, last attributed minute (absent when no request was slow).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| m.attribution?.explained_share.map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_pause_latency_correlation",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Correlation of each minute's max pause with its p99 or p99.9 over the sliding window (absent below the minimum of minutes).",
        labels: &["method", "quantile"],
        semconv: None,
        scopes: &[Scope::Stream(correlations)],
    },
    Family {
        name: "pausewatch_access_log_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines read from the access log.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(a.stats.lines)))],
    },
    Family {
        name: "pausewatch_access_log_malformed_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Access log lines that did not parse in the configured format.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| {
            one(Value::Int(a.stats.malformed + a.stats.too_long))
        })],
    },
    Family {
        name: "pausewatch_access_log_malformed_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Share of the access log's last 500 to 1,000 non-blank lines that did not parse in the configured format (absent before any line); near 1, the format is wrong.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| {
            known(a.malformed_window.ratio().map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_access_log_unattributed_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests read while no GC stream could take them (its log not found yet).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(a.unattributed_requests)))],
    },
    Family {
        name: "pausewatch_access_log_readable",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "1 when the access log could be read at the last attempt.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(u64::from(a.readable))))],
    },
    Family {
        name: "pausewatch_alerts",
        kind: Kind::Info,
        unit: Unit::None,
        help: "Alerts of the agent's own rules: 1 per alert in its state (pending, firing, or resolved at the last evaluation).",
        labels: &["state"],
        semconv: None,
        scopes: &[Scope::Alert(|alert| info(vec![alert.state.as_str().into()]))],
    },
    Family {
        name: "pausewatch_alert_deliveries_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Alert deliveries to Alertmanager and the webhook, by result (failed attempts are retried with backoff).",
        labels: &["sink", "result"],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| alert_deliveries(agent))],
    },
    Family {
        name: "pausewatch_otlp_exports_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "OTLP export requests by signal (metrics, logs) and result: success, failure (retried with backoff; nothing is lost) or rejected (the receiver refused some items).",
        labels: &["signal", "result"],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| {
            let otlp = agent.otlp.lock().unwrap_or_else(PoisonError::into_inner);
            (otlp.exports.iter())
                .map(|((signal, result), count)| Sample {
                    labels: vec![(*signal).into(), (*result).into()],
                    value: Value::Int(*count),
                    minute: None,
                })
                .collect()
        })],
    },
    Family {
        name: "pausewatch_otlp_pause_records_dropped_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Pause log records dropped from a JVM's bounded queue (the oldest first) while the OTLP receiver did not take them.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| {
            let otlp = agent.otlp.lock().unwrap_or_else(PoisonError::into_inner);
            let on = otlp.exports.keys().any(|(signal, _)| *signal == "logs");
            known(on.then_some(Value::Int(otlp.pause_records_dropped)))
        })],
    },
    Family {
        name: "pausewatch_build_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "pausewatch build; the value is always 1.",
        labels: &["version"],
        semconv: None,
        scopes: &[Scope::Agent(|_, version| info(vec![version.into()]))],
    },
];

/// Label names a source's configured labels must not take, because the agent
/// sets them on the same series (Prometheus rejects a scrape with a label
/// twice) or Prometheus attaches them to every target.
///
/// Labels of agent-only families (`version`, `sink`, `result`) are not
/// reserved: their series never carry configured labels, so they cannot clash.
pub fn reserved_label_names() -> BTreeSet<&'static str> {
    let mut names = BTreeSet::from(TARGET_LABELS);
    for family in CATALOG {
        for scope_labels in family.scopes.iter().filter_map(Scope::scope_labels) {
            names.extend(scope_labels);
            names.extend(family.labels);
            if family.kind == Kind::Histogram {
                names.insert("le");
            }
        }
    }
    names
}

/// Every unparsed-line kind, so that each `kind` series exists from the first
/// scrape (at 0) and `rate()` sees the first bad line.
const UNPARSED_KINDS: [UnparsedKind; 5] = [
    UnparsedKind::NotUnifiedLogging,
    UnparsedKind::LegacyFormat,
    UnparsedKind::MalformedEvent,
    UnparsedKind::TooLong,
    UnparsedKind::InvalidUtf8,
];

/// Fails to compile when a kind is added to `UnparsedKind` but not to `UNPARSED_KINDS`.
const _: fn(UnparsedKind) = |kind| match kind {
    UnparsedKind::NotUnifiedLogging
    | UnparsedKind::LegacyFormat
    | UnparsedKind::MalformedEvent
    | UnparsedKind::TooLong
    | UnparsedKind::InvalidUtf8 => {}
};

/// The one sample of a family without labels of its own.
/// Samples from a stream's runtime stats, none when it has none.
fn runtime<'a>(
    stream: &'a StreamState,
    read: fn(&'a RuntimeStats) -> Vec<Sample<'a>>,
) -> Vec<Sample<'a>> {
    stream.runtime.as_ref().map(read).unwrap_or_default()
}

fn per_collector(
    stream: &StreamState,
    value: fn(&CollectorStats) -> Value<'static>,
) -> Vec<Sample<'_>> {
    let Some(runtime) = &stream.runtime else {
        return Vec::new();
    };
    runtime
        .collectors
        .iter()
        .map(|c| Sample {
            labels: vec![c.name.as_str().into()],
            value: value(c),
            minute: None,
        })
        .collect()
}

fn per_pool(stream: &StreamState, value: fn(&MemoryPool) -> Option<u64>) -> Vec<Sample<'_>> {
    let Some(runtime) = &stream.runtime else {
        return Vec::new();
    };
    runtime
        .memory
        .iter()
        .filter_map(|p| {
            let labels = vec![p.area.as_str().into(), p.id.as_str().into()];
            Some(Sample {
                labels,
                value: Value::Int(value(p)?),
                minute: None,
            })
        })
        .collect()
}

fn discovered(stream: &StreamState) -> Vec<Sample<'_>> {
    let Some(discovered) = &stream.discovered else {
        return Vec::new();
    };
    let (state, reason) = match &discovered.unavailable {
        Some(reason) => ("unavailable", reason.as_str()),
        None => ("available", ""),
    };
    info(vec![
        discovered.user.as_str().into(),
        state.into(),
        reason.into(),
        discovered.pause_source.as_str().into(),
        discovered.ebpf_reason.as_deref().unwrap_or("").into(),
    ])
}

fn one(value: Value<'_>) -> Vec<Sample<'_>> {
    vec![Sample {
        labels: Vec::new(),
        value,
        minute: None,
    }]
}

/// As [`one`], or no sample while the figure is unknown.
fn known(value: Option<Value<'_>>) -> Vec<Sample<'_>> {
    value.map(one).unwrap_or_default()
}

/// The one sample of an info family.
fn info(labels: Vec<Cow<'_, str>>) -> Vec<Sample<'_>> {
    vec![Sample {
        labels,
        value: Value::Int(1),
        minute: None,
    }]
}

fn pauses(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    pause_series(stream, |series| {
        vec![
            series.gc.as_str().into(),
            series.action.as_str().into(),
            series.cause.as_str().into(),
        ]
    })
}

/// A Go stream's pauses under the Go name: the runtime has one collector,
/// so only the cause tells its series apart.
fn go_pauses(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    if stream.jvm.collector != Collector::Go {
        return Vec::new();
    }
    pause_series(stream, |series| vec![series.cause.as_str().into()])
}

/// One histogram sample per pause series, labelled by `labels`.
fn pause_series<'a>(
    stream: &'a StreamState,
    labels: impl Fn(&'a PauseSeries) -> Vec<Cow<'a, str>>,
) -> Vec<Sample<'a>> {
    stream
        .jvm
        .pauses
        .iter()
        .map(|series| Sample {
            labels: labels(series),
            value: Value::Histogram(&series.histogram),
            minute: None,
        })
        .collect()
}

fn overhead(stream: &StreamState, now: DateTime<Utc>) -> Vec<Sample<'_>> {
    OVERHEAD_WINDOWS
        .iter()
        .map(|&(window, minutes)| {
            let span = Duration::from_secs(60 * u64::from(minutes));
            Sample {
                labels: vec![window.into()],
                value: Value::Float(stream.jvm.minutes.paused_share(now, span)),
                minute: None,
            }
        })
        .collect()
}

/// One sample per VM operation that reached a safepoint.
fn per_operation(
    stream: &StreamState,
    value: fn(&SafepointSeries) -> Value<'static>,
) -> Vec<Sample<'_>> {
    stream
        .jvm
        .safepoints
        .iter()
        .map(|series| Sample {
            labels: vec![series.operation.as_str().into()],
            value: value(series),
            minute: None,
        })
        .collect()
}

/// The parser's kinds, then the model's clock outliers: lines whose event
/// could not be placed in time.
fn unparsed_lines(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    let unparsed = &stream.parse.unparsed;
    UNPARSED_KINDS
        .iter()
        .map(|kind| (kind.as_str(), unparsed.get(kind).copied().unwrap_or(0)))
        .chain([(CLOCK_OUTLIER, stream.jvm.minutes.clock_outliers)])
        .map(|(kind, count)| Sample {
            labels: vec![kind.into()],
            value: Value::Int(count),
            minute: None,
        })
        .collect()
}

fn by_kind(errors: &BTreeMap<String, u64>) -> Vec<Sample<'_>> {
    errors
        .iter()
        .map(|(kind, count)| Sample {
            labels: vec![kind.as_str().into()],
            value: Value::Int(*count),
            minute: None,
        })
        .collect()
}

/// A figure of the last complete minute, stamped with that minute.
fn last_complete<'a>(
    stream: &'a StreamState,
    now: DateTime<Utc>,
    value: impl FnOnce(Option<&'a Minute>) -> Value<'a>,
) -> Vec<Sample<'a>> {
    let minute = last_complete_minute(now);
    vec![Sample {
        labels: Vec::new(),
        value: value(stream.jvm.minutes.get(minute)),
        minute: Some(minute),
    }]
}

/// A figure of the current attributed minute, stamped with that minute;
/// none once traffic stopped (see [`crate::model::latency::LatencyState::current_minute`]).
fn latency_minute<'a>(
    stream: &'a StreamState,
    value: impl FnOnce(&'a LatencyMinute) -> Option<Value<'a>>,
) -> Vec<Sample<'a>> {
    let Some(minute) = stream.latency.as_ref().and_then(|l| l.current_minute()) else {
        return Vec::new();
    };
    value(minute)
        .map(|value| Sample {
            labels: Vec::new(),
            value,
            minute: Some(minute.start),
        })
        .into_iter()
        .collect()
}

fn correlations(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    let Some(latency) = &stream.latency else {
        return Vec::new();
    };
    let c = &latency.correlation;
    let coefficients = [
        ("pearson", "0.99", c.pearson_max_pause_p99),
        ("spearman", "0.99", c.spearman_max_pause_p99),
        ("pearson", "0.999", c.pearson_max_pause_p999),
        ("spearman", "0.999", c.spearman_max_pause_p999),
    ];
    coefficients
        .into_iter()
        .filter_map(|(method, quantile, value)| {
            Some(Sample {
                labels: vec![method.into(), quantile.into()],
                value: Value::Float(value?),
                minute: None,
            })
        })
        .collect()
}

/// Delivery counts by sink and result. They live behind the sender thread's
/// lock, so the sink names are copied out.
fn alert_deliveries(agent: &AgentState) -> Vec<Sample<'static>> {
    let deliveries = agent
        .deliveries
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let by_result = [
        ("success", &deliveries.delivered),
        ("failure", &deliveries.failed),
        ("dropped", &deliveries.dropped),
    ];
    by_result
        .into_iter()
        .flat_map(|(result, counts)| {
            counts.iter().map(move |(sink, count)| Sample {
                labels: vec![sink.clone().into(), result.into()],
                value: Value::Int(*count),
                minute: None,
            })
        })
        .collect()
}

/// Seconds from `at` to `now`, never negative (the agent clock may step back).
fn age_seconds(at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    ((now - at).num_milliseconds() as f64 / 1000.0).max(0.0)
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
