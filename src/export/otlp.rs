//! OTLP export: the agent state pushed to an OpenTelemetry receiver, as the
//! [catalog](super::catalog) defines it, over gRPC or http/protobuf.
//!
//! Like `/metrics`, each export reads a [`Store::snapshot`](crate::store::Store::snapshot)
//! and walks the catalog, so both exporters always agree. The request is
//! built from the OpenTelemetry project's generated OTLP types: the SDK
//! cannot carry a histogram that is already aggregated, and the model's
//! histograms are. One request holds a resource per JVM (its log stream)
//! and one for the agent's own metrics.
//!
//! Delivery runs on a thread of its own and never touches the agent's loop.
//! A failed export is not queued: the next attempt (1 s later, doubling up
//! to 60 s) reads a newer snapshot, whose cumulative figures include
//! everything the failed one held; delta points are computed against what
//! the receiver last acknowledged, so they lose nothing either.
//!
//! With `pause_events`, each pause also goes out as a `jvm.gc.pause` log
//! record, from the bounded queue of recent pauses each JVM's state keeps
//! ([`RecentPauses`](crate::model::jvm::RecentPauses)): the exporter sends
//! those after the last one the receiver took.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::Utc;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, HistogramDataPoint, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::catalog::{Family, Kind, Sample, Scope, Unit, Value, CATALOG};
use crate::config::redact_url;
use crate::model::histogram::{Histogram, PAUSE_BUCKETS};
use crate::model::jvm::{PauseQueue, PauseRecord};
use crate::store::{AgentState, OtlpCounters, SharedStore, StreamState};

/// The transport of OTLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
}

/// What a sum or histogram point holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporality {
    /// Everything since the series started.
    Cumulative,
    /// What happened since the previous export the receiver acknowledged.
    Delta,
}

/// PEM files for TLS, read when the configuration is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsFiles {
    /// CA certificates to trust instead of the system's.
    pub ca: Option<Vec<u8>>,
    /// Client certificate chain and key, for mutual TLS.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

/// The `[otlp]` section, with the environment applied.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// Full URL of the receiver: for http/protobuf including `/v1/metrics`.
    pub endpoint: String,
    pub protocol: Protocol,
    pub interval: Duration,
    /// Of one export request, connecting included.
    pub timeout: Duration,
    /// Sent with every request (authentication).
    pub headers: BTreeMap<String, String>,
    pub temporality: Temporality,
    pub tls: TlsFiles,
    /// Resource attributes of every resource, over `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource_attributes: BTreeMap<String, String>,
    /// The opt-in `jvm.gc.cause` attribute on `jvm.gc.duration`: one series
    /// per cause, as `jvm_gc_pause_seconds` has.
    pub gc_cause: bool,
    /// Each pause as a `jvm.gc.pause` log record, to the logs endpoint.
    pub pause_events: bool,
    /// Where the pause records go, while `pause_events` is on: for
    /// http/protobuf `/v1/logs` beside `/v1/metrics`; for gRPC the endpoint.
    pub logs_endpoint: Option<String>,
}

/// Pauses each JVM keeps for the records while the receiver is away; older
/// ones are dropped and counted (`pausewatch_otlp_pause_records_dropped_total`).
pub const PAUSE_RECORDS_KEPT: usize = 10_000;

/// Results of `pausewatch_otlp_exports_total`.
const RESULTS: [&str; 3] = ["success", "failure", "rejected"];
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A failing receiver is logged at once, then at most this often.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Starts the exporter's thread: an export every `interval`, retried with
/// backoff while the receiver fails.
pub fn spawn(
    config: OtlpConfig,
    store: SharedStore,
    build_version: &'static str,
) -> anyhow::Result<()> {
    // reqwest's rustls takes the process's crypto provider; tonic picks ring itself.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let transport = {
        let _context = runtime.enter();
        Transport::new(&config)?
    };
    let counts = store.snapshot().otlp;
    let signals: &[&'static str] = if config.pause_events {
        &["metrics", "logs"]
    } else {
        &["metrics"]
    };
    let mut counters = counts.lock().unwrap_or_else(PoisonError::into_inner);
    for signal in signals {
        counters
            .exports
            .extend(RESULTS.map(|result| ((*signal, result), 0)));
    }
    drop(counters);
    let delivery = Delivery {
        exporter: Exporter::new(config, build_version),
        transport,
        runtime,
        store,
        counts,
    };
    std::thread::Builder::new()
        .name("otlp".to_string())
        .spawn(move || delivery.run())?;
    Ok(())
}

/// The exporter's thread: what it builds requests with and sends them by.
struct Delivery {
    exporter: Exporter,
    transport: Transport,
    runtime: tokio::runtime::Runtime,
    store: SharedStore,
    counts: Arc<Mutex<OtlpCounters>>,
}

impl Delivery {
    fn run(mut self) {
        let mut failures = 0u32;
        let mut last_warning: Option<Instant> = None;
        loop {
            let wait = match failures {
                0 => self.exporter.config.interval,
                n => (MIN_BACKOFF * 2u32.saturating_pow(n - 1)).min(MAX_BACKOFF),
            };
            std::thread::sleep(wait);
            match self.export() {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(after = failures, "OTLP export succeeds again");
                    }
                    failures = 0;
                }
                Err(error) => {
                    failures += 1;
                    if last_warning.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                        tracing::warn!(%error, failures, "OTLP export failed; retrying with backoff");
                        last_warning = Some(Instant::now());
                    }
                }
            }
        }
    }

    /// One export of a fresh snapshot: the metrics, then the pause records.
    fn export(&mut self) -> Result<(), String> {
        let now = SystemTime::now();
        let state = self.store.snapshot();
        let metrics = self.exporter.build(&state, now);
        let records =
            (self.exporter.config.pause_events).then(|| self.exporter.pause_records(&state, now));
        drop(state);
        let sent = (self.runtime).block_on(self.transport.send_metrics(metrics.request.clone()));
        let metrics_sent = count(&self.counts, "metrics", sent);
        if metrics_sent.is_ok() {
            self.exporter.acknowledge(metrics);
        }
        let Some(records) = records else {
            return metrics_sent;
        };
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pause_records_dropped += records.dropped;
        if records.request.resource_logs.is_empty() {
            return metrics_sent;
        }
        let sent = (self.runtime).block_on(self.transport.send_logs(records.request.clone()));
        let records_sent = count(&self.counts, "logs", sent);
        if records_sent.is_ok() {
            records.delivered();
        }
        metrics_sent.and(records_sent)
    }
}

/// Counts an export's result; a partial rejection is logged but not retried
/// (the receiver refused those items: sending them again would not help).
fn count(
    counts: &Mutex<OtlpCounters>,
    signal: &'static str,
    sent: Result<i64, String>,
) -> Result<(), String> {
    let result = match &sent {
        Ok(0) => "success",
        Ok(_) => "rejected",
        Err(_) => "failure",
    };
    let mut counters = counts.lock().unwrap_or_else(PoisonError::into_inner);
    *counters.exports.entry((signal, result)).or_insert(0) += 1;
    match sent {
        Ok(0) => Ok(()),
        Ok(rejected) => {
            tracing::warn!(signal, rejected, "the OTLP receiver rejected some items");
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// The sender: a gRPC channel or an HTTP client, with the configured headers.
enum Transport {
    Grpc {
        channel: tonic::transport::Channel,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
    },
    Http {
        client: reqwest::Client,
        metrics_url: String,
        logs_url: Option<String>,
        headers: reqwest::header::HeaderMap,
    },
}

impl Transport {
    /// Needs a tokio runtime entered (the gRPC channel connects lazily on it).
    fn new(config: &OtlpConfig) -> anyhow::Result<Transport> {
        match config.protocol {
            Protocol::Grpc => {
                let mut endpoint =
                    tonic::transport::Endpoint::from_shared(config.endpoint.clone())?
                        .connect_timeout(config.timeout)
                        .timeout(config.timeout);
                if config.endpoint.starts_with("https:") {
                    let mut tls = tonic::transport::ClientTlsConfig::new();
                    tls = match &config.tls.ca {
                        Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(ca)),
                        None => tls.with_native_roots(),
                    };
                    if let Some((cert, key)) = &config.tls.client {
                        tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
                    }
                    endpoint = endpoint.tls_config(tls)?;
                }
                let mut metadata = tonic::metadata::MetadataMap::new();
                for (name, value) in &config.headers {
                    let name = tonic::metadata::MetadataKey::from_bytes(name.as_bytes())?;
                    metadata.insert(name, value.parse()?);
                }
                Ok(Transport::Grpc {
                    channel: endpoint.connect_lazy(),
                    metadata,
                    timeout: config.timeout,
                })
            }
            Protocol::HttpProtobuf => {
                let mut builder = reqwest::Client::builder()
                    .timeout(config.timeout)
                    .connect_timeout(config.timeout)
                    .user_agent(concat!("pausewatch/", env!("CARGO_PKG_VERSION")));
                if let Some(ca) = &config.tls.ca {
                    builder = builder.tls_certs_only(reqwest::Certificate::from_pem_bundle(ca)?);
                }
                if let Some((cert, key)) = &config.tls.client {
                    let pem = [cert.as_slice(), b"\n", key].concat();
                    builder = builder.identity(reqwest::Identity::from_pem(&pem)?);
                }
                let mut headers = reqwest::header::HeaderMap::new();
                for (name, value) in &config.headers {
                    headers.insert(
                        reqwest::header::HeaderName::from_bytes(name.as_bytes())?,
                        value.parse()?,
                    );
                }
                Ok(Transport::Http {
                    client: builder.build()?,
                    metrics_url: config.endpoint.clone(),
                    logs_url: config.logs_endpoint.clone(),
                    headers,
                })
            }
        }
    }

    /// Sends metrics; `Ok` holds the data points the receiver rejected.
    async fn send_metrics(&self, request: ExportMetricsServiceRequest) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc { channel, .. } => MetricsServiceClient::new(channel.clone())
                .export(self.grpc_request(request))
                .await
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http {
                metrics_url: url, ..
            } => ExportMetricsServiceResponse::decode(&self.post(url, request).await?[..])
                .unwrap_or_default(),
        };
        Ok(response
            .partial_success
            .map_or(0, |p| p.rejected_data_points))
    }

    /// Sends pause records; `Ok` holds the records the receiver rejected.
    async fn send_logs(&self, request: ExportLogsServiceRequest) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc { channel, .. } => LogsServiceClient::new(channel.clone())
                .export(self.grpc_request(request))
                .await
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http { logs_url, .. } => {
                let url = logs_url.as_deref().ok_or("no logs endpoint")?;
                ExportLogsServiceResponse::decode(&self.post(url, request).await?[..])
                    .unwrap_or_default()
            }
        };
        Ok(response
            .partial_success
            .map_or(0, |p| p.rejected_log_records))
    }

    /// A gRPC request with the configured metadata and timeout.
    fn grpc_request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Transport::Grpc {
            metadata, timeout, ..
        } = self
        {
            *request.metadata_mut() = metadata.clone();
            request.set_timeout(*timeout);
        }
        request
    }

    /// POSTs a protobuf message; the response body of a 2xx answer (empty
    /// when the receiver has nothing to say, which decodes as "all taken").
    async fn post(&self, url: &str, message: impl Message) -> Result<Vec<u8>, String> {
        let Transport::Http {
            client, headers, ..
        } = self
        else {
            unreachable!("only the HTTP transport posts")
        };
        let response = client
            .post(url)
            .headers(headers.clone())
            .header("Content-Type", "application/x-protobuf")
            .body(message.encode_to_vec())
            .send()
            .await
            .map_err(|e| format!("POST {}: {}", redact_url(url), e.without_url()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("POST {}: {}", redact_url(url), e.without_url()))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return Err(format!("POST {}: HTTP {status}: {text}", redact_url(url)));
        }
        Ok(body.to_vec())
    }
}

fn grpc_error(status: tonic::Status) -> String {
    format!("gRPC {:?}: {}", status.code(), status.message())
}

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
    config: OtlpConfig,
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
    dropped: u64,
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
    fn delivered(self) {
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
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::export::prometheus::tests::fixture_stream;
    use crate::model::runtime::{MemoryPool, RuntimeStats};

    fn config(temporality: Temporality, gc_cause: bool) -> OtlpConfig {
        OtlpConfig {
            endpoint: "http://localhost:4318/v1/metrics".to_string(),
            protocol: Protocol::HttpProtobuf,
            interval: Duration::from_secs(15),
            timeout: Duration::from_secs(10),
            headers: BTreeMap::new(),
            temporality,
            tls: Default::default(),
            resource_attributes: BTreeMap::new(),
            gc_cause,
            pause_events: false,
            logs_endpoint: None,
        }
    }

    /// `jvm.gc.duration` points of the request: attributes, count, sum, start.
    fn gc_points(request: &ExportMetricsServiceRequest) -> Vec<(Vec<String>, u64, f64, u64)> {
        let metrics = request
            .resource_metrics
            .iter()
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics);
        let mut points = Vec::new();
        for metric in metrics.filter(|m| m.name == "jvm.gc.duration") {
            let Some(metric::Data::Histogram(h)) = &metric.data else {
                panic!("jvm.gc.duration is a histogram");
            };
            for p in &h.data_points {
                let attributes = p.attributes.iter().map(|kv| format!("{kv:?}")).collect();
                points.push((attributes, p.count, p.sum.unwrap(), p.start_time_unix_nano));
            }
        }
        points
    }

    #[test]
    fn a_discovered_jvm_is_named_by_its_main_class_with_its_pid_and_container() {
        let exporter = Exporter::new(config(Temporality::Cumulative, false), "test");
        let mut stream = fixture_stream();
        stream.labels = BTreeMap::from([
            ("pid".to_string(), "4242".to_string()),
            ("jvm".to_string(), "PricingService".to_string()),
            ("container".to_string(), "3f2a9c".to_string()),
            ("team".to_string(), "pricing".to_string()),
        ]);
        let resource = exporter.jvm_resource(&stream);
        assert_eq!(resource["service.name"], "PricingService");
        assert_eq!(resource["process.pid"], "4242");
        assert_eq!(resource["container.id"], "3f2a9c");
        assert_eq!(resource["team"], "pricing");
        assert!(!resource.contains_key("pid") && !resource.contains_key("container"));
        // A configured `service` label names the service, whatever was discovered.
        stream
            .labels
            .insert("service".to_string(), "pricing".to_string());
        let resource = exporter.jvm_resource(&stream);
        assert_eq!(resource["service.name"], "pricing");
        assert!(!resource.contains_key("service"));
    }

    /// A Go program's stream: named by its executable, its runtime said.
    #[test]
    fn a_go_program_is_named_by_its_executable() {
        let exporter = Exporter::new(config(Temporality::Cumulative, false), "test");
        let mut stream = fixture_stream();
        stream.jvm.collector = pausewatch_parsers::Collector::Go;
        stream.labels.clear();
        let resource = exporter.jvm_resource(&stream);
        assert_eq!(resource["service.name"], "unknown_service:go");
        assert_eq!(resource["process.runtime.name"], "go");
        stream.labels = BTreeMap::from([
            ("pid".to_string(), "77".to_string()),
            ("program".to_string(), "translate-cache".to_string()),
        ]);
        let resource = exporter.jvm_resource(&stream);
        assert_eq!(resource["service.name"], "translate-cache");
        assert_eq!(resource["process.pid"], "77");
    }

    #[test]
    fn otel_names_are_distinct_and_follow_the_conventions() {
        let mut seen = BTreeSet::new();
        // A whole-heap family shares its name with the per-pool one that replaces it.
        for family in CATALOG
            .iter()
            .filter(|f| !f.semconv.is_some_and(|s| s.unless_pools))
        {
            let name = family.otel_name();
            assert!(seen.insert(name.clone()), "{name} twice");
            match family.semconv {
                Some(_) => assert!(name.starts_with("jvm."), "{name}"),
                None => assert!(name.starts_with("pausewatch."), "{name}"),
            }
            for suffix in ["_total", "_seconds", "_bytes"] {
                assert!(
                    !name.ends_with(suffix),
                    "{name}: the unit is {:?}",
                    family.unit
                );
            }
        }
        let gc = CATALOG
            .iter()
            .find(|f| f.name == "jvm_gc_pause_seconds")
            .unwrap();
        assert_eq!(gc.otel_name(), "jvm.gc.duration");
        let stalls = CATALOG
            .iter()
            .find(|f| f.name == "pausewatch_allocation_stall_seconds_total")
            .unwrap();
        assert_eq!(stalls.otel_name(), "pausewatch.allocation_stall_time");
    }

    /// `(attributes, value)` of the request's gauge points named `name`.
    fn gauge_points(request: &ExportMetricsServiceRequest, name: &str) -> Vec<(String, f64)> {
        let metrics = (request.resource_metrics.iter())
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics);
        let mut points = Vec::new();
        for metric in metrics.filter(|m| m.name == name) {
            let Some(metric::Data::Gauge(gauge)) = &metric.data else {
                panic!("{name} is a gauge");
            };
            for point in &gauge.data_points {
                let attributes = point
                    .attributes
                    .iter()
                    .map(|kv| format!("{kv:?}"))
                    .collect();
                let value = match point.value {
                    Some(number_data_point::Value::AsInt(v)) => v as f64,
                    Some(number_data_point::Value::AsDouble(v)) => v,
                    None => f64::NAN,
                };
                points.push((attributes, value));
            }
        }
        points
    }

    #[test]
    fn whole_heap_figures_give_way_to_a_jvms_pools() {
        let exporter = Exporter::new(config(Temporality::Cumulative, false), "1");
        let now = SystemTime::now();
        let mut stream = fixture_stream();
        let committed = stream.jvm.heap.committed_bytes.unwrap() as f64;
        let request = exporter
            .build(&AgentState::from_streams([stream.clone()]), now)
            .request;
        let points = gauge_points(&request, "jvm.memory.committed");
        assert_eq!(points.len(), 1, "{points:?}");
        assert_eq!(points[0].1, committed);
        assert!(!points[0].0.contains("jvm.memory.pool.name"));

        stream.runtime = Some(RuntimeStats {
            memory: vec![MemoryPool {
                area: "heap".to_string(),
                id: "PS Eden Space".to_string(),
                used: Some(1024),
                committed: 4096,
                max: None,
            }],
            ..RuntimeStats::default()
        });
        let request = exporter
            .build(&AgentState::from_streams([stream]), now)
            .request;
        let points = gauge_points(&request, "jvm.memory.committed");
        assert_eq!(points.len(), 1, "{points:?}");
        assert_eq!(points[0].1, 4096.0);
        assert!(
            points[0].0.contains("jvm.memory.pool.name") && points[0].0.contains("PS Eden Space")
        );
        assert!(points[0].0.contains("jvm.memory.type") && points[0].0.contains("heap"));
        assert_eq!(gauge_points(&request, "jvm.memory.used")[0].1, 1024.0);
        // The log's figure after the last collection has no per-pool twin.
        assert_eq!(
            gauge_points(&request, "jvm.memory.used_after_last_gc").len(),
            1
        );
    }

    #[test]
    fn causes_are_added_up_unless_asked_for() {
        let state = AgentState::from_streams([fixture_stream()]);
        let series = &state.streams.values().next().unwrap().jvm.pauses;
        let now = SystemTime::now();
        let with = Exporter::new(config(Temporality::Cumulative, true), "1");
        let by_cause = gc_points(&with.build(&state, now).request);
        assert_eq!(by_cause.len(), series.len());
        let without = Exporter::new(config(Temporality::Cumulative, false), "1");
        let merged = gc_points(&without.build(&state, now).request);
        let collectors: BTreeSet<(&str, &str)> = series
            .iter()
            .map(|s| (s.gc.as_str(), s.action.as_str()))
            .collect();
        assert_eq!(merged.len(), collectors.len());
        let total = |points: &[(Vec<String>, u64, f64, u64)]| -> (u64, f64) {
            (
                points.iter().map(|p| p.1).sum(),
                points.iter().map(|p| p.2).sum(),
            )
        };
        let (count, sum) = total(&merged);
        assert_eq!(count, series.iter().map(|s| s.histogram.count).sum::<u64>());
        assert!((sum - total(&by_cause).1).abs() < 1e-12);
    }

    /// The fixture's stream with its pauses kept as records, at most `capacity`.
    fn recording(capacity: usize) -> AgentState {
        let mut stream = fixture_stream();
        stream.jvm = Default::default();
        stream.jvm.recent_pauses.capacity = capacity;
        let (events, parser) = crate::commands::analyze::parse_files(
            &[crate::export::prometheus::tests::fixture_path("gc.log")],
            None,
        )
        .unwrap();
        stream.jvm.ingest(parser.run(), &events, None);
        AgentState::from_streams([stream])
    }

    fn records(request: &ExportLogsServiceRequest) -> Vec<&LogRecord> {
        (request.resource_logs.iter())
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| &s.log_records)
            .collect()
    }

    #[test]
    fn pause_records_resume_after_the_last_taken_and_count_what_was_dropped() {
        // The fixture has 17 pauses (4 young, 13 full, says its mxbeans.json).
        let state = recording(100);
        let exporter = Exporter::new(config(Temporality::Cumulative, false), "1");
        let first = exporter.pause_records(&state, SystemTime::now());
        let sent = records(&first.request);
        assert_eq!((sent.len(), first.dropped), (17, 0));
        assert!(sent.iter().all(|r| r.event_name == "jvm.gc.pause"));
        assert!(sent
            .windows(2)
            .all(|w| w[0].time_unix_nano <= w[1].time_unix_nano));
        // Not taken: the same again. Taken: nothing new.
        let again = exporter.pause_records(&state, SystemTime::now());
        assert_eq!(records(&again.request).len(), 17);
        again.delivered();
        let after = exporter.pause_records(&state, SystemTime::now());
        assert!(after.request.resource_logs.is_empty());

        // A queue of 5: the 12 oldest were dropped before anything was sent.
        let state = recording(5);
        let first = exporter.pause_records(&state, SystemTime::now());
        assert_eq!((records(&first.request).len(), first.dropped), (5, 12));
        let again = exporter.pause_records(&state, SystemTime::now());
        assert_eq!(again.dropped, 0, "counted once");
    }

    #[test]
    fn delta_points_cover_what_the_receiver_has_not_acknowledged() {
        let stream = fixture_stream();
        let all = stream.jvm.pauses[0].histogram.count;
        let mut state = AgentState::from_streams([stream]);
        let mut exporter = Exporter::new(config(Temporality::Delta, true), "1");
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000);
        let first = exporter.build(&state, t0);
        assert_eq!(
            gc_points(&first.request)[0].1,
            all,
            "first delta: everything"
        );
        exporter.acknowledge(first);

        let observe = |state: &mut AgentState, pause: f64| {
            let stream = state.stream_mut(crate::store::StreamId(1)).unwrap();
            stream.jvm.pauses[0].histogram.observe(pause);
        };
        observe(&mut state, 0.25);
        let t1 = t0 + Duration::from_secs(15);
        // Not acknowledged (the receiver was down): the next delta holds it too.
        let lost = exporter.build(&state, t1);
        assert_eq!(gc_points(&lost.request)[0].1, 1);
        drop(lost);
        observe(&mut state, 0.5);
        let t2 = t1 + Duration::from_secs(15);
        let second = exporter.build(&state, t2);
        let (_, count, sum, start) = gc_points(&second.request)[0].clone();
        assert_eq!(count, 2);
        assert!((sum - 0.75).abs() < 1e-12, "{sum}");
        assert_eq!(start, unix_nanos(t0), "from the last acknowledged export");
        exporter.acknowledge(second);
        let third = exporter.build(&state, t2 + Duration::from_secs(15));
        assert_eq!(gc_points(&third.request)[0].1, 0);
    }
}
