//! OTLP requests built from a snapshot by walking the catalog: metrics, and pause log records.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::Utc;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, HistogramDataPoint, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::config::{OtlpConfig, Temporality};
use crate::export::catalog::{Family, Kind, Sample, Scope, Unit, Value, CATALOG};
use crate::model::histogram::{Histogram, PAUSE_BUCKETS};
use crate::model::jvm::{PauseQueue, PauseRecord};
use crate::store::{AgentState, StreamState};

/// Identifies a series across exports, for delta points.
type SeriesKey = (String, Cow<'static, str>, Vec<(String, String)>);

/// A point's figure, owned so it can be remembered.
#[derive(Debug, Clone, PartialEq)]
enum Figure {
    Int(u64),
    Float(f64),
    Histogram(Histogram),
}

impl Figure {
    fn of(value: Value<'_>) -> Figure {
        match value {
            Value::Int(v) => Figure::Int(v),
            Value::Float(v) => Figure::Float(v),
            Value::Histogram(h) => Figure::Histogram(h.clone()),
        }
    }

    /// Adds a series that differs only by a dropped attribute (`jvm.gc.cause`).
    fn add(&mut self, other: &Figure) {
        match (self, other) {
            (Figure::Int(a), Figure::Int(b)) => *a += b,
            (Figure::Float(a), Figure::Float(b)) => *a += b,
            (Figure::Histogram(a), Figure::Histogram(b)) => a.merge(b),
            (a, b) => unreachable!("a family reads one kind of value: {a:?} and {b:?}"),
        }
    }

    /// What happened since `before`; `None` when the series went back (a
    /// stream forgotten and found again): then it starts over.
    fn since(&self, before: &Figure) -> Option<Figure> {
        match (self, before) {
            (Figure::Int(now), Figure::Int(then)) => now.checked_sub(*then).map(Figure::Int),
            (Figure::Float(now), Figure::Float(then)) => {
                (now >= then).then(|| Figure::Float(now - then))
            }
            (Figure::Histogram(now), Figure::Histogram(then)) => {
                let count = now.count.checked_sub(then.count)?;
                let buckets = PAUSE_BUCKETS
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        let at = |h: &Histogram| h.buckets.get(i).copied().unwrap_or(0);
                        at(now).checked_sub(at(then))
                    })
                    .collect::<Option<Vec<u64>>>()?;
                Some(Figure::Histogram(Histogram {
                    buckets,
                    count,
                    sum: now.sum - then.sum,
                }))
            }
            _ => None,
        }
    }
}

/// What the receiver last acknowledged of a series: for delta points.
#[derive(Debug, Clone)]
struct Acknowledged {
    figure: Figure,
    at: SystemTime,
}

/// One built export: the request, and the figures it reported.
pub struct Export {
    pub request: ExportMetricsServiceRequest,
    sent: Vec<(SeriesKey, Figure)>,
    at: SystemTime,
}

/// Builds requests from snapshots; remembers what was acknowledged.
pub struct Exporter {
    pub(super) config: OtlpConfig,
    build_version: &'static str,
    /// When the cumulative series start: the agent's start.
    started: SystemTime,
    host: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, then `[otlp] resource_attributes`.
    common_attributes: BTreeMap<String, String>,
    /// `OTEL_SERVICE_NAME`, which names the agent's resource.
    service_name: Option<String>,
    acknowledged: BTreeMap<SeriesKey, Acknowledged>,
}

/// One built request of pause records.
pub struct PauseRecords {
    pub request: ExportLogsServiceRequest,
    /// Per JVM, its queue and the last pause sent.
    sent: Vec<(Arc<Mutex<PauseQueue>>, u64)>,
    /// Pauses that left the queue before they could be sent.
    pub(super) dropped: u64,
}

/// The resource of the agent's own metrics.
const AGENT: &str = "agent";

impl Exporter {
    pub fn new(config: OtlpConfig, build_version: &'static str) -> Exporter {
        let from_env = opentelemetry_sdk::Resource::builder_empty()
            .with_detector(Box::new(
                opentelemetry_sdk::resource::EnvResourceDetector::new(),
            ))
            .build();
        let mut common_attributes: BTreeMap<String, String> = from_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_str().into_owned()))
            .collect();
        common_attributes.extend(config.resource_attributes.clone());
        let service_name = std::env::var("OTEL_SERVICE_NAME")
            .ok()
            .filter(|name| !name.trim().is_empty());
        Exporter {
            config,
            build_version,
            started: SystemTime::now(),
            host: host_name(),
            common_attributes,
            service_name,
            acknowledged: BTreeMap::new(),
        }
    }

    /// The request for `state` at `now`.
    pub fn build(&self, state: &AgentState, now: SystemTime) -> Export {
        let clock = chrono::DateTime::<Utc>::from(now);
        // Resource key -> family index -> points.
        let mut points: BTreeMap<String, BTreeMap<usize, Vec<Point>>> = BTreeMap::new();
        for (index, family) in CATALOG.iter().enumerate() {
            for scope in family.scopes {
                match scope {
                    Scope::Stream(read) => {
                        let replaced = |stream: &StreamState| {
                            family.semconv.is_some_and(|s| s.unless_pools)
                                && stream
                                    .runtime
                                    .as_ref()
                                    .is_some_and(|r| !r.memory.is_empty())
                        };
                        for stream in state.streams.values().filter(|s| !replaced(s)) {
                            let into = points.entry(stream.log.clone()).or_default();
                            self.add(into, index, Vec::new(), read(stream, clock));
                        }
                    }
                    Scope::AccessLog(read) => {
                        for access in state.access_streams.values() {
                            // On the resource of the JVM the requests are lined up with.
                            let resource = match &access.target {
                                Some(log) if state.stream_by_log(log).is_some() => log.clone(),
                                _ => AGENT.to_string(),
                            };
                            let scope =
                                vec![("pausewatch.access_log".to_string(), access.log.clone())];
                            let into = points.entry(resource).or_default();
                            self.add(into, index, scope, read(access));
                        }
                    }
                    Scope::Alert(read) => {
                        for alert in state.alerts.iter() {
                            let scope = alert
                                .labels
                                .iter()
                                .filter(|(name, _)| !family.labels.contains(&name.as_str()))
                                .map(|(name, value)| (name.clone(), value.clone()))
                                .collect();
                            let into = points.entry(AGENT.to_string()).or_default();
                            self.add(into, index, scope, read(alert));
                        }
                    }
                    Scope::Agent(read) => {
                        let into = points.entry(AGENT.to_string()).or_default();
                        self.add(into, index, Vec::new(), read(state, self.build_version));
                    }
                }
            }
        }

        let streams: BTreeMap<&str, &StreamState> = state
            .streams
            .values()
            .map(|stream| (stream.log.as_str(), stream.as_ref()))
            .collect();
        let mut sent = Vec::new();
        let resource_metrics = points
            .into_iter()
            .map(|(resource, families)| {
                let attributes = match streams.get(resource.as_str()) {
                    Some(stream) => self.jvm_resource(stream),
                    None => self.agent_resource(),
                };
                let metrics = families
                    .into_iter()
                    .filter(|(_, points)| !points.is_empty())
                    .map(|(index, points)| {
                        self.metric(&CATALOG[index], &resource, points, now, &mut sent)
                    })
                    .collect();
                ResourceMetrics {
                    resource: Some(resource_of(attributes)),
                    scope_metrics: vec![ScopeMetrics {
                        scope: Some(self.scope()),
                        metrics,
                        schema_url: String::new(),
                    }],
                    schema_url: String::new(),
                }
            })
            .collect();
        Export {
            request: ExportMetricsServiceRequest { resource_metrics },
            sent,
            at: now,
        }
    }

    /// The pauses of every JVM the receiver has not taken yet, as log records.
    pub fn pause_records(&self, state: &AgentState, now: SystemTime) -> PauseRecords {
        let mut resource_logs = Vec::new();
        let mut sent = Vec::new();
        let mut dropped = 0;
        for stream in state.streams.values() {
            let shared = &stream.jvm.recent_pauses.queue;
            let mut queue = shared.lock().unwrap_or_else(PoisonError::into_inner);
            dropped += std::mem::take(&mut queue.dropped);
            let Some(last) = queue.pauses.back().map(|pause| pause.seq) else {
                continue;
            };
            let log_records = (queue.pauses.iter())
                .map(|pause| pause_record(pause, now))
                .collect();
            drop(queue);
            sent.push((shared.clone(), last));
            resource_logs.push(ResourceLogs {
                resource: Some(resource_of(self.jvm_resource(stream))),
                scope_logs: vec![ScopeLogs {
                    scope: Some(self.scope()),
                    log_records,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            });
        }
        PauseRecords {
            request: ExportLogsServiceRequest { resource_logs },
            sent,
            dropped,
        }
    }

    fn scope(&self) -> InstrumentationScope {
        InstrumentationScope {
            name: "pausewatch".to_string(),
            version: self.build_version.to_string(),
            ..Default::default()
        }
    }

    /// Remembers what an export the receiver accepted reported.
    pub fn acknowledge(&mut self, export: Export) {
        if self.config.temporality == Temporality::Cumulative {
            return;
        }
        for (key, figure) in export.sent {
            self.acknowledged.insert(
                key,
                Acknowledged {
                    figure,
                    at: export.at,
                },
            );
        }
    }

    /// Adds the family's samples, with attributes under OpenTelemetry's
    /// names; samples left alike by dropping `jvm.gc.cause` are added up.
    fn add(
        &self,
        into: &mut BTreeMap<usize, Vec<Point>>,
        index: usize,
        scope: Vec<(String, String)>,
        samples: Vec<Sample<'_>>,
    ) {
        let family = &CATALOG[index];
        let points = into.entry(index).or_default();
        for sample in samples {
            let mut attributes = scope.clone();
            let fixed = family.semconv.map_or(&[][..], |s| s.attributes);
            attributes.extend(fixed.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            for (label, value) in family.labels.iter().zip(sample.labels) {
                if *label == "cause" && !self.config.gc_cause {
                    continue;
                }
                attributes.push((
                    Family::otel_attribute(label).to_string(),
                    value.into_owned(),
                ));
            }
            let figure = Figure::of(sample.value);
            match points.iter_mut().find(|p| p.attributes == attributes) {
                Some(point) => point.figure.add(&figure),
                None => points.push(Point { attributes, figure }),
            }
        }
    }

    fn metric(
        &self,
        family: &Family,
        resource: &str,
        points: Vec<Point>,
        now: SystemTime,
        sent: &mut Vec<(SeriesKey, Figure)>,
    ) -> Metric {
        let name = family.otel_name();
        let delta = self.config.temporality == Temporality::Delta;
        let temporality = if delta {
            AggregationTemporality::Delta
        } else {
            AggregationTemporality::Cumulative
        } as i32;
        let time = unix_nanos(now);
        let cumulative = matches!(family.kind, Kind::Counter | Kind::Histogram);
        let mut reported = Vec::new();
        for point in points {
            let (figure, start) = if delta && cumulative {
                let key = (resource.to_string(), name.clone(), point.attributes.clone());
                let before = self.acknowledged.get(&key);
                let since = before.and_then(|b| Some((point.figure.since(&b.figure)?, b.at)));
                sent.push((key, point.figure.clone()));
                since.unwrap_or((point.figure, self.started))
            } else {
                (point.figure, self.started)
            };
            let start = if cumulative { unix_nanos(start) } else { 0 };
            reported.push((key_values(point.attributes), figure, start));
        }
        let numbers = |reported: Vec<(Vec<KeyValue>, Figure, u64)>| {
            reported
                .into_iter()
                .map(|(attributes, figure, start)| NumberDataPoint {
                    attributes,
                    start_time_unix_nano: start,
                    time_unix_nano: time,
                    value: Some(match figure {
                        Figure::Int(v) => number_data_point::Value::AsInt(v as i64),
                        Figure::Float(v) => number_data_point::Value::AsDouble(v),
                        Figure::Histogram(_) => unreachable!("numbers only"),
                    }),
                    ..Default::default()
                })
                .collect()
        };
        let data = match family.kind {
            Kind::Counter => metric::Data::Sum(Sum {
                data_points: numbers(reported),
                aggregation_temporality: temporality,
                is_monotonic: true,
            }),
            Kind::Gauge | Kind::Info => metric::Data::Gauge(Gauge {
                data_points: numbers(reported),
            }),
            Kind::Histogram => {
                metric::Data::Histogram(opentelemetry_proto::tonic::metrics::v1::Histogram {
                    data_points: reported
                        .into_iter()
                        .map(|(attributes, figure, start)| {
                            let Figure::Histogram(h) = figure else {
                                unreachable!("histogram families read histograms")
                            };
                            histogram_point(attributes, &h, start, time)
                        })
                        .collect(),
                    aggregation_temporality: temporality,
                })
            }
        };
        Metric {
            name: name.into_owned(),
            description: family.help.to_string(),
            unit: otel_unit(family.unit).to_string(),
            data: Some(data),
            ..Default::default()
        }
    }

    /// A JVM's resource: what identifies the service and the process.
    fn jvm_resource(&self, stream: &StreamState) -> BTreeMap<String, String> {
        let mut attributes = self.common_attributes.clone();
        // Configured labels (`env`, `team`) describe the JVM; `service` names
        // it, else the main class discovery found (`jvm`). Discovery's `pid`
        // and `container` are the conventions' `process.pid` and `container.id`.
        attributes.extend((stream.labels.iter()).map(|(name, value)| {
            let name = match name.as_str() {
                "pid" => "process.pid",
                "container" => "container.id",
                other => other,
            };
            (name.to_string(), value.clone())
        }));
        attributes.remove("service");
        // A Go program (its `gctrace` output) is named by its executable.
        let go = stream.jvm.collector == pausewatch_parsers::Collector::Go;
        let service = (stream.labels.get("service"))
            .or_else(|| stream.labels.get("jvm"))
            .or_else(|| stream.labels.get("program"))
            .cloned()
            .unwrap_or_else(|| format!("unknown_service:{}", if go { "go" } else { "java" }));
        attributes.insert("service.name".to_string(), service);
        if go {
            attributes.insert("process.runtime.name".to_string(), "go".to_string());
        }
        attributes.insert(
            "service.instance.id".to_string(),
            format!("{}:{}", self.host, stream.log),
        );
        attributes.insert("host.name".to_string(), self.host.clone());
        attributes.insert("pausewatch.log".to_string(), stream.log.clone());
        if let Some(version) = &stream.jvm.jdk_version {
            attributes.insert("process.runtime.version".to_string(), version.clone());
        }
        attributes
    }

    /// The agent's resource, for its own metrics.
    fn agent_resource(&self) -> BTreeMap<String, String> {
        let pid = std::process::id().to_string();
        let mut attributes = BTreeMap::from([
            ("service.name".to_string(), "pausewatch".to_string()),
            (
                "service.version".to_string(),
                self.build_version.to_string(),
            ),
            (
                "service.instance.id".to_string(),
                format!("{}:{pid}", self.host),
            ),
            ("host.name".to_string(), self.host.clone()),
            ("process.pid".to_string(), pid),
        ]);
        attributes.extend(self.common_attributes.clone());
        if let Some(name) = &self.service_name {
            attributes.insert("service.name".to_string(), name.clone());
        }
        attributes
    }
}

impl PauseRecords {
    /// The receiver took them: out of their queues.
    pub(super) fn delivered(self) {
        for (queue, last) in self.sent {
            let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.delivered(last);
        }
    }
}

/// A pause as a `jvm.gc.pause` event: stamped with its start, so that it
/// lines up with request spans; its end and duration as attributes.
fn pause_record(pause: &PauseRecord, now: SystemTime) -> LogRecord {
    let start = SystemTime::from(pause.start);
    let ms = pause.duration_s * 1000.0;
    let cause = pause.cause.as_deref();
    let body = match cause {
        Some(cause) => format!("{} ({cause}) {ms:.3}ms", pause.name),
        None => format!("{} {ms:.3}ms", pause.name),
    };
    let rfc3339 =
        |at: chrono::DateTime<Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut attributes = vec![
        ("jvm.gc.name".to_string(), pause.gc.clone()),
        ("jvm.gc.action".to_string(), pause.action.clone()),
        ("pausewatch.pause.name".to_string(), pause.name.clone()),
        (
            "pausewatch.collector".to_string(),
            pause.collector.as_str().to_string(),
        ),
        ("pausewatch.pause.start".to_string(), rfc3339(pause.start)),
        ("pausewatch.pause.end".to_string(), rfc3339(pause.end)),
    ];
    if let Some(cause) = cause {
        attributes.push(("jvm.gc.cause".to_string(), cause.to_string()));
    }
    let mut attributes = key_values(attributes);
    attributes.push(KeyValue {
        key: "pausewatch.pause.duration".to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::DoubleValue(pause.duration_s)),
        }),
        ..Default::default()
    });
    LogRecord {
        time_unix_nano: unix_nanos(start),
        observed_time_unix_nano: unix_nanos(now),
        severity_number: SeverityNumber::Info as i32,
        severity_text: "INFO".to_string(),
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(body)),
        }),
        attributes,
        event_name: "jvm.gc.pause".to_string(),
        ..Default::default()
    }
}

/// One data point before it is encoded.
struct Point {
    attributes: Vec<(String, String)>,
    figure: Figure,
}

/// OTLP wants cumulative bucket bounds without the `+Inf` one, and a count per bucket.
fn histogram_point(
    attributes: Vec<KeyValue>,
    histogram: &Histogram,
    start: u64,
    time: u64,
) -> HistogramDataPoint {
    HistogramDataPoint {
        attributes,
        start_time_unix_nano: start,
        time_unix_nano: time,
        count: histogram.count,
        sum: Some(histogram.sum),
        bucket_counts: (0..PAUSE_BUCKETS.len())
            .map(|i| histogram.buckets.get(i).copied().unwrap_or(0))
            .collect(),
        explicit_bounds: PAUSE_BUCKETS
            .iter()
            .copied()
            .filter(|bound| bound.is_finite())
            .collect(),
        ..Default::default()
    }
}

/// UCUM, as the semantic conventions spell units.
fn otel_unit(unit: Unit) -> &'static str {
    match unit {
        Unit::Seconds => "s",
        Unit::Bytes => "By",
        Unit::Ratio | Unit::None => "1",
    }
}

fn resource_of(attributes: BTreeMap<String, String>) -> Resource {
    Resource {
        attributes: key_values(attributes),
        ..Default::default()
    }
}

/// String attributes, but `process.pid`, which the conventions make an int.
fn key_values(attributes: impl IntoIterator<Item = (String, String)>) -> Vec<KeyValue> {
    attributes
        .into_iter()
        .map(|(key, value)| {
            let value = match (key.as_str(), value.parse()) {
                ("process.pid", Ok(pid)) => any_value::Value::IntValue(pid),
                _ => any_value::Value::StringValue(value),
            };
            KeyValue {
                key,
                value: Some(AnyValue { value: Some(value) }),
                ..Default::default()
            }
        })
        .collect()
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
