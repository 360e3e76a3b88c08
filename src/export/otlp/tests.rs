//! The OTLP requests built from fixed states: names, resources, points, records.

use std::collections::BTreeSet;
use std::time::Duration;

use super::*;
use crate::config::Protocol;
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
    assert!(points[0].0.contains("jvm.memory.pool.name") && points[0].0.contains("PS Eden Space"));
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
