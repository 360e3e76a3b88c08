//! The catalog's unit tests.
use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::TimeZone;

use super::readers::age_seconds;
use super::*;
use crate::export::prometheus::tests::fixture_stream;
use crate::labels::reserved_label_names;
use crate::model::alerts::AlertState;
use crate::model::correlate::{Attribution, LatencyMinute};
use crate::model::latency::LatencyState;
use crate::model::runtime::{CollectorStats, MemoryPool, RuntimeStats};
use crate::store::{AccessStreamState, StreamId};

fn at(hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, hour, minute, second)
        .unwrap()
}

/// The labels the catalog sets beside configured ones: Prometheus' target
/// labels, and for every family whose series carry configured labels its
/// scopes' labels, its own and, for a histogram, `le`.
fn labels_beside_configured_ones() -> BTreeSet<&'static str> {
    let mut names = BTreeSet::from(["instance", "job"]);
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

#[test]
fn reserved_label_names_hold_every_label_a_configured_one_could_clash_with() {
    let reserved = reserved_label_names();
    // The config refuses exactly the names the families set.
    assert_eq!(labels_beside_configured_ones(), reserved);
    // Missing from the config's list until it was held to the catalog: with
    // `collector = "x"`, pausewatch_jvm_info carried `collector` twice.
    for name in ["collector", "jdk_version", "method"] {
        assert!(reserved.contains(name), "{name}");
    }
    // The list the config kept before it was held to the catalog.
    for name in [
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
    ] {
        assert!(reserved.contains(name), "{name}");
    }
    // Agent-only series (build info, deliveries, OTLP exports) carry no
    // configured labels: nothing to clash with.
    for name in ["version", "sink", "signal", "result"] {
        assert!(!reserved.contains(name), "{name}");
    }
}

#[test]
fn names_follow_kind_and_unit() {
    let mut seen = BTreeSet::new();
    for family in CATALOG {
        let name = family.name;
        assert!(seen.insert(name), "{name} defined twice");
        let base = name.strip_suffix("_total");
        assert_eq!(base.is_some(), family.kind == Kind::Counter, "{name}");
        let base = base.unwrap_or(name);
        let suffix = match family.unit {
            Unit::Seconds => "_seconds",
            Unit::Bytes => "_bytes",
            Unit::Ratio => "_ratio",
            Unit::None => {
                for unit in ["_seconds", "_bytes", "_ratio"] {
                    assert!(!base.ends_with(unit), "{name} has no unit");
                }
                continue;
            }
        };
        assert!(base.ends_with(suffix), "{name}");
    }
}

/// A state in which every family has at least one series.
fn every_scope() -> AgentState {
    let mut stream = fixture_stream();
    let minute = at(1, 45, 0);
    let mut latency = LatencyState::default();
    latency.histogram.observe(0.1);
    latency.correlation.pearson_max_pause_p99 = Some(0.5);
    latency.minutes.insert(
        minute.timestamp(),
        LatencyMinute {
            start: minute,
            latency: Default::default(),
            attribution: Some(Attribution {
                explained_share: Some(0.5),
                ..Attribution::default()
            }),
            ports: [(8080, Default::default())].into(),
        },
    );
    latency.counters.requests_by_port.insert(8080, 1);
    // The access log's view beside the kernel's.
    let mut server = latency.clone();
    server.server = None;
    latency.server = Some(Box::new(server));
    stream.latency = Some(latency);
    stream.jvm.add_cpu(minute.timestamp(), 0.3, 1.5, Some(2.0));
    stream.discovered = Some(crate::store::Discovered {
        log_probe_mismatch: Some(0.0),
        requests: Some(Ok(())),
        ..crate::store::Discovered::default()
    });
    stream.runtime = Some(RuntimeStats {
        collectors: vec![CollectorStats {
            name: "G1 young collection pauses".to_string(),
            invocations: 1,
            seconds: 0.01,
        }],
        memory: vec![MemoryPool {
            area: "heap".to_string(),
            id: "G1 Eden Space".to_string(),
            used: Some(1),
            committed: 2,
            max: Some(3),
        }],
        log_counter_mismatch: vec![("G1 Young Generation".to_string(), 0.0)],
        safepoint_probe_mismatch: Some(0.0),
        cpu_seconds: Some(1.5),
        ..RuntimeStats::default()
    });
    let alert = Alert {
        alertname: "PausewatchLongPause".to_string(),
        state: AlertState::Firing,
        labels: BTreeMap::from([("state".to_string(), "clashing".to_string())]),
        annotations: BTreeMap::new(),
        value: 1.0,
        active_since: minute,
        fired_at: None,
        resolved_at: None,
    };
    let mut state = AgentState::from_streams([stream, go_stream()]);
    state.ebpf_records_unclaimed = Some(3);
    let mut access = AccessStreamState::default();
    access.malformed_window.add(10, 1);
    state.access_streams.insert(StreamId(2), Arc::new(access));
    state.alerts = Arc::new(vec![alert]);
    let mut deliveries = state.deliveries.lock().unwrap();
    deliveries.delivered.insert("webhook".to_string(), 1);
    drop(deliveries);
    let mut otlp = state.otlp.lock().unwrap();
    otlp.exports.insert(("logs", "success"), 1);
    drop(otlp);
    state
}

/// A Go program's stream: the first cycles of tests/fixtures/go.
fn go_stream() -> StreamState {
    let trace = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/go/go1.19-alloc/gctrace.log");
    let (events, parser) =
        crate::commands::analyze::parse_files(&[trace], None).expect("fixture parses");
    let mut jvm = crate::model::jvm::JvmState::default();
    jvm.ingest(parser.run(), &events, None);
    StreamState {
        log: "/var/log/translate/stderr.log".to_string(),
        jvm,
        ..StreamState::default()
    }
}

/// Go streams carry `runtime="go"`, and their pauses are under the Go
/// name too; JVM streams keep the labels they always had.
#[test]
fn go_streams_are_told_apart_by_runtime() {
    let state = every_scope();
    let now = at(1, 46, 30);
    let runtime = |series: &Series| {
        series
            .labels
            .iter()
            .find(|(name, _)| *name == "runtime")
            .map(|(_, value)| value.to_string())
    };
    for family in CATALOG
        .iter()
        .filter(|f| matches!(f.scopes, [Scope::Stream(_)]))
    {
        for series in family.read(&state, "1.2.3", now) {
            let go = series.labels[0].1 == "/var/log/translate/stderr.log";
            assert_eq!(
                runtime(&series).is_some(),
                go,
                "{}: {series:?}",
                family.name
            );
        }
    }
    let go_family = CATALOG
        .iter()
        .find(|f| f.name == "go_gc_pause_seconds")
        .unwrap();
    let series = go_family.read(&state, "1.2.3", now);
    let count: u64 = series
        .iter()
        .map(|s| match s.value {
            Value::Histogram(h) => h.count,
            _ => 0,
        })
        .sum();
    // memstats.json of the fixture: NumGC.
    assert_eq!(count, 80);
    assert!(series.iter().all(|s| runtime(s).as_deref() == Some("go")));
}

#[test]
fn every_family_reads_series_that_fit_it() {
    let state = every_scope();
    for family in CATALOG {
        let series = family.read(&state, "1.2.3", at(1, 46, 30));
        assert!(!series.is_empty(), "{} read nothing", family.name);
        for one in series {
            let names: Vec<&str> = one.labels.iter().map(|(name, _)| *name).collect();
            assert!(names.ends_with(family.labels), "{}: {names:?}", family.name);
            let unique: BTreeSet<&str> = names.iter().copied().collect();
            assert_eq!(unique.len(), names.len(), "{}: {names:?}", family.name);
            let fits = match (family.kind, one.value) {
                (Kind::Counter | Kind::Gauge, Value::Int(_) | Value::Float(_)) => true,
                (Kind::Info, value) => value == Value::Int(1),
                (Kind::Histogram, Value::Histogram(_)) => true,
                _ => false,
            };
            assert!(fits, "{}: {:?}", family.name, one.value);
        }
    }
}

#[test]
fn age_is_never_negative() {
    assert_eq!(age_seconds(at(1, 46, 0), at(1, 45, 0)), 0.0);
    assert_eq!(
        age_seconds(
            at(1, 45, 0),
            at(1, 45, 1) + chrono::TimeDelta::milliseconds(500)
        ),
        1.5
    );
}

/// The value and timestamp of `/metrics`' one sample of `family` at 01:46:30.
fn scraped(stream: StreamState, family: &str) -> (String, String) {
    let store = Arc::new(crate::store::Store::new(AgentState::from_streams([stream])));
    let text = crate::export::prometheus::render(&crate::export::prometheus::registry_with_clock(
        store,
        "1.2.3",
        || at(1, 46, 30),
    ));
    let mut lines = text
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{")));
    let line = lines
        .next()
        .unwrap_or_else(|| panic!("no {family} in {text}"));
    assert!(lines.next().is_none(), "{family} twice");
    let mut fields = line.rsplitn(3, ' ');
    let timestamp = fields.next().unwrap().to_string();
    (fields.next().unwrap().to_string(), timestamp)
}

#[test]
fn a_lower_bound_maximum_is_flagged_in_the_same_minute_as_the_maximum() {
    // The fixture's GC log gives 01:45 an exact maximum (22.499 ms).
    let exact = fixture_stream();
    let minute = at(1, 45, 0).timestamp().to_string();
    assert_eq!(
        scraped(exact.clone(), "pausewatch_gc_pause_max_lower_bound"),
        ("0".to_string(), minute.clone())
    );
    // As hsperfdata sampling marks a minute whose pauses it could not tell apart.
    let mut sampled = exact;
    let key = at(1, 45, 0).timestamp();
    sampled.jvm.minutes.minute_mut(key).pause_max_lower_bound = true;
    let (max, max_minute) = scraped(sampled.clone(), "pausewatch_gc_pause_max_seconds");
    assert!(
        (max.parse::<f64>().unwrap() - 0.022499).abs() < 1e-12,
        "{max}"
    );
    assert_eq!(max_minute, minute);
    assert_eq!(
        scraped(sampled, "pausewatch_gc_pause_max_lower_bound"),
        ("1".to_string(), minute)
    );
    // OTLP walks the same catalog, under the name docs/discovery.md gives.
    let family = CATALOG
        .iter()
        .find(|f| f.name == "pausewatch_gc_pause_max_lower_bound")
        .unwrap();
    assert_eq!(family.otel_name(), "pausewatch.gc_pause_max_lower_bound");
}

/// A reader that gives a family fewer label values than it has names: the
/// sample is refused (a debug build fails on it), not cut to fit.
#[test]
#[should_panic(expected = "1 label values for [\"kind\", \"extra\"]")]
fn a_sample_with_the_wrong_number_of_label_values_is_refused() {
    let family = Family {
        name: "pausewatch_test_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "",
        labels: &["kind", "extra"],
        semconv: None,
        scopes: &[Scope::Agent(|_, _| {
            vec![Sample {
                labels: vec!["one".into()],
                value: Value::Int(1),
                minute: None,
            }]
        })],
    };
    family.read(&AgentState::default(), "", at(1, 0, 0));
}
