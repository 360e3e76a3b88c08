//! OTLP export against a real receiver: rotel, an OpenTelemetry collector
//! (PyPI package `rotel`, whose wheel ships `rotel-agent`), logs every data
//! point it receives; the tests read that log and check it against the
//! JVM's own MXBean counts and times and against the agent's `/metrics`.
//!
//! Configured headers are checked on the wire, by a plain HTTP listener that
//! records what the agent sends (rotel does not log headers).
//!
//! Needs `rotel-agent` on `PATH` or inside the installed `rotel` Python
//! package (`.ci/run` installs it); without it each test is skipped (`common::skip`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{toml_string, Children, MxBeans};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsService;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use rcgen::ExtendedKeyUsagePurpose;

use crate::common;

// ---------------------------------------------------------------- rotel

/// `rotel-agent` on `PATH`, else the one the `rotel` wheel installed beside
/// its Python module, or `None` after skipping.
fn rotel_or_skip() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("rotel-agent"))
            .find(|candidate| candidate.is_file())
    });
    let in_wheel = || {
        let output = Command::new("python3")
            .args([
                "-c",
                "import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
            ])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
        path.is_file().then_some(path)
    };
    common::or_skip(
        on_path.or_else(in_wheel),
        "rotel-agent not found (pip install rotel)",
    )
}

/// A running rotel-agent, logging every data point to `DIR/NAME-N.out`;
/// killed when dropped.
struct Rotel {
    binary: PathBuf,
    dir: PathBuf,
    name: String,
    grpc: u16,
    http: u16,
    child: Option<Child>,
    /// The logs of this and earlier runs, in order.
    outputs: Vec<PathBuf>,
}

impl Rotel {
    fn start(binary: &Path, dir: &Path, name: &str) -> Rotel {
        let ports = common::free_ports(2);
        let mut rotel = Rotel {
            binary: binary.to_path_buf(),
            dir: dir.to_path_buf(),
            name: name.to_string(),
            grpc: ports[0],
            http: ports[1],
            child: None,
            outputs: Vec::new(),
        };
        rotel.run();
        rotel
    }

    /// Starts a run on the same ports and waits until it accepts connections.
    fn run(&mut self) {
        let output = self
            .dir
            .join(format!("{}-{}.out", self.name, self.outputs.len()));
        let file = File::create(&output).unwrap();
        let child = Command::new(&self.binary)
            .arg("start")
            .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{}", self.grpc)])
            .args(["--otlp-http-endpoint", &format!("127.0.0.1:{}", self.http)])
            .args(["--exporter", "blackhole"])
            .args([
                "--debug-log",
                "metrics",
                "--debug-log",
                "logs",
                "--debug-log-verbosity",
                "detailed",
            ])
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("start rotel-agent");
        self.child = Some(child);
        self.outputs.push(output);
        let deadline = Instant::now() + Duration::from_secs(15);
        while [self.grpc, self.http]
            .iter()
            .any(|port| TcpStream::connect(("127.0.0.1", *port)).is_err())
        {
            assert!(Instant::now() < deadline, "rotel-agent did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the receiver: the agent's exports fail until [`Rotel::run`].
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Every data point received so far, by all runs, in order.
    fn points(&self) -> Vec<Point> {
        self.outputs
            .iter()
            .flat_map(|output| parse_debug_log(&std::fs::read_to_string(output).unwrap()))
            .collect()
    }

    /// Every log record received so far, by all runs, in order.
    fn records(&self) -> Vec<Record> {
        self.outputs
            .iter()
            .flat_map(|output| parse_log_records(&std::fs::read_to_string(output).unwrap()))
            .collect()
    }
}

impl Drop for Rotel {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            for output in &self.outputs {
                let text = std::fs::read_to_string(output).unwrap_or_default();
                let head: String = text.lines().take(60).collect::<Vec<_>>().join("\n");
                eprintln!("----- {} (first lines) -----\n{head}", output.display());
            }
        }
    }
}

/// One data point as rotel logged it.
#[derive(Debug, Clone, Default)]
struct Point {
    resource: BTreeMap<String, String>,
    metric: String,
    unit: String,
    delta: bool,
    attributes: BTreeMap<String, String>,
    start: u64,
    time: u64,
    count: Option<u64>,
    sum: Option<f64>,
    value: Option<f64>,
}

/// Reads rotel's `--debug-log-verbosity detailed` output (the OpenTelemetry
/// Collector's debug exporter format).
fn parse_debug_log(text: &str) -> Vec<Point> {
    #[derive(PartialEq)]
    enum In {
        Resource,
        Point,
        Other,
    }
    let mut points = Vec::new();
    let mut current = Point::default();
    let mut section = In::Other;
    let mut in_point = false;
    let finish = |points: &mut Vec<Point>, current: &Point, in_point: bool| {
        if in_point {
            points.push(current.clone());
        }
    };
    for line in text.lines() {
        let line = line.trim_end();
        if line.starts_with("ResourceMetrics #") {
            finish(&mut points, &current, in_point);
            in_point = false;
            current = Point::default();
            section = In::Other;
        } else if line == "Resource attributes:" {
            section = In::Resource;
        } else if line.starts_with("Metric #") {
            finish(&mut points, &current, in_point);
            in_point = false;
            section = In::Other;
        } else if line.starts_with("HistogramDataPoints #")
            || line.starts_with("NumberDataPoints #")
        {
            finish(&mut points, &current, in_point);
            in_point = true;
            current.attributes.clear();
            (current.count, current.sum, current.value) = (None, None, None);
            section = In::Other;
        } else if line == "Data point attributes:" {
            section = In::Point;
        } else if let Some(rest) = line.trim_start().strip_prefix("-> ") {
            let Some((key, value)) = rest.split_once(": ") else {
                continue;
            };
            let value = value
                .strip_prefix("Str(")
                .or_else(|| value.strip_prefix("Int("))
                .and_then(|v| v.strip_suffix(')'))
                .unwrap_or(value)
                .to_string();
            match (&section, key) {
                (In::Resource, _) => {
                    current.resource.insert(key.to_string(), value);
                }
                (In::Point, _) => {
                    current.attributes.insert(key.to_string(), value);
                }
                (In::Other, "Name") => current.metric = value,
                (In::Other, "Unit") => current.unit = value,
                (In::Other, "AggregationTemporality") => current.delta = value.ends_with("DELTA"),
                _ => {}
            }
        } else if let Some(v) = line.strip_prefix("StartTimestamp: ") {
            current.start = v.parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Timestamp: ") {
            current.time = v.parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Count: ") {
            current.count = v.parse().ok();
        } else if let Some(v) = line.strip_prefix("Sum: ") {
            current.sum = v.parse().ok();
        } else if let Some(v) = line.strip_prefix("Value: ") {
            current.value = v.parse().ok();
        }
    }
    finish(&mut points, &current, in_point);
    points
}

/// One log record as rotel logged it.
#[derive(Debug, Clone, Default)]
struct Record {
    resource: BTreeMap<String, String>,
    event_name: String,
    time: u64,
    attributes: BTreeMap<String, String>,
}

/// The log records of rotel's detailed debug output.
fn parse_log_records(text: &str) -> Vec<Record> {
    let mut records = Vec::new();
    let mut resource = BTreeMap::new();
    let mut current: Option<Record> = None;
    let mut in_resource = false;
    for line in text.lines().map(str::trim_end) {
        if line.starts_with("ResourceLog #") || line.starts_with("ResourceMetrics #") {
            records.extend(current.take());
            resource.clear();
            in_resource = false;
        } else if line == "Resource attributes:" {
            in_resource = true;
        } else if line.starts_with("ScopeLogs #") || line.starts_with("ScopeMetrics #") {
            in_resource = false;
        } else if line.starts_with("LogRecord #") {
            records.extend(current.take());
            current = Some(Record {
                resource: resource.clone(),
                ..Record::default()
            });
        } else if let Some(rest) = line.trim_start().strip_prefix("-> ") {
            let Some((key, value)) = rest.split_once(": ") else {
                continue;
            };
            let value = (value.split_once('('))
                .and_then(|(_, v)| v.strip_suffix(')'))
                .unwrap_or(value)
                .to_string();
            match (&mut current, in_resource) {
                (_, true) => {
                    resource.insert(key.to_string(), value);
                }
                (Some(record), false) => {
                    record.attributes.insert(key.to_string(), value);
                }
                (None, false) => {}
            }
        } else if let Some(record) = &mut current {
            if let Some(name) = line.strip_prefix("EventName: ") {
                record.event_name = name.to_string();
            } else if let Some(time) = line.strip_prefix("Timestamp: ") {
                record.time = time.parse().unwrap_or(0);
            }
        }
    }
    records.extend(current);
    records
}

/// Per `jvm.gc.name`: the `jvm.gc.pause` records of agent `agent` and
/// their durations added up.
fn record_totals(records: &[Record], agent: &str) -> BTreeMap<String, (u64, f64)> {
    let mut totals: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for record in records.iter().filter(|r| {
        r.event_name == "jvm.gc.pause"
            && r.resource.get("test.agent").map(String::as_str) == Some(agent)
    }) {
        let total = totals
            .entry(record.attributes["jvm.gc.name"].clone())
            .or_default();
        total.0 += 1;
        total.1 += record.attributes["pausewatch.pause.duration"]
            .parse::<f64>()
            .unwrap();
    }
    totals
}

/// The `jvm.gc.duration` points of the resource with `resource` attribute
/// `test.agent = agent`.
fn gc_duration<'p>(points: &'p [Point], agent: &str) -> impl Iterator<Item = &'p Point> {
    let agent = agent.to_string();
    points.iter().filter(move |p| {
        p.metric == "jvm.gc.duration"
            && p.resource.get("test.agent").map(String::as_str) == Some(&agent)
    })
}

/// Per `jvm.gc.name`: count and sum of the latest cumulative points (of
/// every cause), or of all delta points added up.
fn gc_totals(points: &[Point], agent: &str) -> BTreeMap<String, (u64, f64)> {
    let mut latest: BTreeMap<BTreeMap<String, String>, &Point> = BTreeMap::new();
    let mut totals: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for point in gc_duration(points, agent) {
        if point.delta {
            let total = totals
                .entry(point.attributes["jvm.gc.name"].clone())
                .or_default();
            total.0 += point.count.unwrap();
            total.1 += point.sum.unwrap();
        } else {
            latest.insert(point.attributes.clone(), point);
        }
    }
    for (attributes, point) in latest {
        let total = totals.entry(attributes["jvm.gc.name"].clone()).or_default();
        total.0 += point.count.unwrap();
        total.1 += point.sum.unwrap();
    }
    totals
}

// ---------------------------------------------------------------- the agent

/// The MXBean counts and times (ms) of the collectors that ran.
fn mxbean_truth(fixture: &str) -> BTreeMap<String, (u64, u64)> {
    let beans = MxBeans::read(&common::jvm_fixture(fixture).join("mxbeans.json"));
    let mut truth = beans.by_name();
    truth.retain(|_, (count, _)| *count > 0);
    truth
}

/// An agent config following `gc_log` with `[otlp]` holding `otlp`; every
/// resource carries `test.agent = NAME`.
fn agent_config(dir: &Path, name: &str, port: u16, gc_log: &Path, otlp: &[String]) -> PathBuf {
    let mut lines = vec![
        format!("listen = \"127.0.0.1:{port}\""),
        format!("checkpoint_dir = {}", toml_string(&dir.join(name))),
        "poll_interval = \"50ms\"".to_string(),
        "[[gc_log]]".to_string(),
        format!("path = {}", toml_string(gc_log)),
        "start_at = \"beginning\"".to_string(),
        "labels = { service = \"pricing\" }".to_string(),
        "[otlp]".to_string(),
        "interval = \"1s\"".to_string(),
    ];
    lines.extend(otlp.iter().cloned());
    if !otlp
        .iter()
        .any(|line| line.starts_with("resource_attributes"))
    {
        lines.push(format!(
            "resource_attributes = {{ \"test.agent\" = \"{name}\" }}"
        ));
    }
    common::write_file(dir, &format!("{name}.toml"), lines.join("\n") + "\n")
}

/// Stops `receiver` right after the agent on `port` counts one more
/// successful export (exports are `interval = 1s` apart).
fn stop_between_exports(receiver: &mut Rotel, port: u16) {
    let before = exports(port, "success");
    let deadline = Instant::now() + Duration::from_secs(10);
    while exports(port, "success") == before {
        assert!(Instant::now() < deadline, "no export acknowledged");
        std::thread::sleep(Duration::from_millis(10));
    }
    receiver.stop();
}

/// Per `gc` label of `jvm_gc_pause_seconds`: count and sum on `/metrics`.
fn metrics_totals(port: u16) -> BTreeMap<String, (u64, f64)> {
    let metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
    let mut totals: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("jvm_gc_pause_seconds_") else {
            continue;
        };
        let Some(gc) = rest.split("gc=\"").nth(1).and_then(|r| r.split('"').next()) else {
            continue;
        };
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        let total = totals.entry(gc.to_string()).or_default();
        if rest.starts_with("count{") {
            total.0 += value as u64;
        } else if rest.starts_with("sum{") {
            total.1 += value;
        }
    }
    totals
}

/// `pausewatch_otlp_exports_total` of the metrics requests with `result`.
fn exports(port: u16, result: &str) -> f64 {
    let metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
    let result = format!("result=\"{result}\"");
    common::sum(
        &metrics,
        "pausewatch_otlp_exports_total",
        &["signal=\"metrics\"", &result],
    )
}

fn counts(totals: &BTreeMap<String, (u64, f64)>) -> BTreeMap<String, u64> {
    totals
        .iter()
        .map(|(gc, (count, _))| (gc.clone(), *count))
        .collect()
}

/// Whether the agent on `port` has read every pause the JVM counted and the
/// receiver has the same counts as its `/metrics`.
fn complete(
    received: &BTreeMap<String, (u64, f64)>,
    port: u16,
    truth: &BTreeMap<String, (u64, u64)>,
) -> bool {
    let metrics = metrics_totals(port);
    read_all(&metrics, truth) && counts(received) == counts(&metrics)
}

/// Whether `/metrics` counts every pause the JVM's beans counted.
fn read_all(metrics: &BTreeMap<String, (u64, f64)>, truth: &BTreeMap<String, (u64, u64)>) -> bool {
    truth
        .iter()
        .all(|(gc, (count, _))| metrics.get(gc).map(|m| m.0) == Some(*count))
}

/// The JVM's figures, the agent's `/metrics` and what the receiver got agree:
/// counts exactly, times within max(1 %, 1 ms per pause) of the MXBean's
/// (which the JVM rounds to milliseconds), and to 1e-9 s of `/metrics` for
/// every collector, those without a JDK 17 bean (G1's Remark and Cleanup) too.
fn assert_agree(
    received: &BTreeMap<String, (u64, f64)>,
    metrics: &BTreeMap<String, (u64, f64)>,
    truth: &BTreeMap<String, (u64, u64)>,
) {
    for (gc, &(count, time_ms)) in truth {
        let (got_count, got_sum) = received[gc];
        assert_eq!(got_count, count, "{gc}: pauses received");
        let tolerance = (time_ms as f64 * 0.01).max(count as f64) / 1000.0;
        assert!(
            (got_sum - time_ms as f64 / 1000.0).abs() <= tolerance,
            "{gc}: {got_sum} s received, the JVM says {time_ms} ms"
        );
    }
    assert_eq!(counts(received), counts(metrics));
    for (gc, (_, metrics_sum)) in metrics {
        let got_sum = received[gc].1;
        assert!(
            (got_sum - metrics_sum).abs() < 1e-9,
            "{gc}: {got_sum} vs /metrics {metrics_sum}"
        );
    }
}

// ---------------------------------------------------------------- tests

#[test]
fn both_protocols_deliver_the_jvms_pauses_and_the_resources() {
    let Some(rotel) = rotel_or_skip() else {
        return;
    };
    const FIXTURE: &str = "jdk17-parallel-full";
    let truth = mxbean_truth(FIXTURE);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gc_log = dir.join("gc.log");
    std::fs::copy(common::jvm_fixture(FIXTURE).join("gc.log"), &gc_log).unwrap();
    let receiver = Rotel::start(&rotel, dir, "rotel");
    let ports = common::free_ports(2);

    let http = agent_config(
        dir,
        "http",
        ports[0],
        &gc_log,
        // No path: the agent adds /v1/metrics.
        &[format!("endpoint = \"http://127.0.0.1:{}\"", receiver.http)],
    );
    let grpc = agent_config(
        dir,
        "grpc",
        ports[1],
        &gc_log,
        &[
            "protocol = \"grpc\"".to_string(),
            format!("endpoint = \"http://127.0.0.1:{}\"", receiver.grpc),
            "gc_cause = true".to_string(),
        ],
    );
    let mut children = Children::new(dir);
    children.dump_on_failure(&ports, &["jvm_gc_pause_seconds_count", "pausewatch_otlp"]);
    for (name, config) in [("agent-http", &http), ("agent-grpc", &grpc)] {
        children.spawn_service(
            name,
            common::run_command(config)
                .env("OTEL_RESOURCE_ATTRIBUTES", "team=gc,cost.center=42")
                .env("OTEL_SERVICE_NAME", "pausewatch-ci"),
        );
    }

    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "both agents' exports to carry every pause, and a success to be counted",
        |_| {
            let points = receiver.points();
            let counted = points.iter().any(|p| {
                p.metric == "pausewatch.otlp_exports"
                    && p.attributes.get("result").map(String::as_str) == Some("success")
                    && p.value >= Some(1.0)
            });
            counted
                && [("http", ports[0]), ("grpc", ports[1])]
                    .iter()
                    .all(|(agent, port)| complete(&gc_totals(&points, agent), *port, &truth))
        },
    );
    let points = receiver.points();
    for (agent, port) in [("http", ports[0]), ("grpc", ports[1])] {
        assert_agree(&gc_totals(&points, agent), &metrics_totals(port), &truth);
    }

    // And `pausewatch analyze` of the same log.
    let output = Command::new(common::PAUSEWATCH)
        .args(["analyze", "--format", "json"])
        .arg(&gc_log)
        .output()
        .unwrap();
    let analyzed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for agent in ["http", "grpc"] {
        let totals = gc_totals(&points, agent);
        let count: u64 = totals.values().map(|(count, _)| count).sum();
        let sum: f64 = totals.values().map(|(_, sum)| sum).sum();
        assert_eq!(count, analyzed["pauses"]["count"].as_u64().unwrap());
        let analyzed_sum = analyzed["pauses"]["total_seconds"].as_f64().unwrap();
        assert!((sum - analyzed_sum).abs() < 1e-9, "{sum} vs {analyzed_sum}");
    }

    // Pause records are off unless asked for.
    assert!(receiver.records().is_empty());

    // jvm.gc.cause only where asked for; every point in seconds.
    for point in gc_duration(&points, "http") {
        assert!(!point.attributes.contains_key("jvm.gc.cause"), "{point:?}");
        assert_eq!(point.unit, "s");
    }
    let causes: Vec<&str> = gc_duration(&points, "grpc")
        .map(|p| p.attributes["jvm.gc.cause"].as_str())
        .collect();
    assert!(
        causes.contains(&"System.gc()") || causes.len() > 2,
        "{causes:?}"
    );

    // The JVM's resource: named by the configured service, with the
    // configured and environment attributes; the agent's own one apart.
    let jvm = &gc_duration(&points, "http").last().unwrap().resource;
    assert_eq!(jvm["service.name"], "pricing");
    assert_eq!(jvm["team"], "gc");
    assert_eq!(jvm["cost.center"], "42");
    assert_eq!(jvm["pausewatch.log"], gc_log.display().to_string());
    assert_eq!(jvm["process.runtime.version"], "17.0.15+6-Debian-1deb12u1");
    assert!(jvm["service.instance.id"].ends_with(&gc_log.display().to_string()));
    let agent_exports: Vec<&Point> = points
        .iter()
        .filter(|p| p.metric == "pausewatch.otlp_exports" && p.resource["test.agent"] == "http")
        .collect();
    let agent = &agent_exports
        .last()
        .expect("the agent's own metrics")
        .resource;
    assert_eq!(agent["service.name"], "pausewatch-ci");
    assert_eq!(agent["team"], "gc");
    assert!(agent["process.pid"].parse::<u32>().is_ok(), "{agent:?}");

    // No metric is named like an attribute, and no two names differ only
    // by a plural `s` (issue 22): the names as the receiver got them.
    let names: BTreeSet<&str> = points.iter().map(|p| p.metric.as_str()).collect();
    for point in &points {
        for attribute in point.resource.keys().chain(point.attributes.keys()) {
            assert!(
                !names.contains(attribute.as_str()),
                "{attribute}: a metric and an attribute"
            );
        }
    }
    for name in &names {
        assert!(
            !names.contains(format!("{name}s").as_str()),
            "{name} and {name}s"
        );
    }
    // The bytes read: the whole log, read from its beginning.
    let read = (points.iter())
        .rfind(|p| p.metric == "pausewatch.log_read" && p.resource["test.agent"] == "http")
        .expect("pausewatch.log_read");
    let size = std::fs::metadata(&gc_log).unwrap().len();
    assert_eq!((read.value, read.unit.as_str()), (Some(size as f64), "By"));

    // Heap limit from the log's preamble (the JVM ran with -Xmx64m).
    let limit = points
        .iter()
        .find(|p| p.metric == "jvm.memory.limit")
        .expect("jvm.memory.limit");
    assert_eq!(limit.value, Some(64.0 * 1024.0 * 1024.0));
    assert_eq!(limit.attributes["jvm.memory.type"], "heap");
    assert_eq!(limit.unit, "By");
}

#[test]
fn delta_adds_up_and_a_receiver_outage_loses_nothing() {
    let Some(rotel) = rotel_or_skip() else {
        return;
    };
    const FIXTURE: &str = "jdk17-g1-concurrent";
    let truth = mxbean_truth(FIXTURE);
    let text = std::fs::read(common::jvm_fixture(FIXTURE).join("gc.log")).unwrap();
    let middle = text.len() / 2;
    let middle = middle + text[middle..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gc_log = common::write_file(dir, "gc.log", &text[..middle]);

    let mut cumulative_receiver = Rotel::start(&rotel, dir, "cumulative");
    let mut delta_receiver = Rotel::start(&rotel, dir, "delta");
    let ports = common::free_ports(2);
    let cumulative = agent_config(
        dir,
        "cumulative",
        ports[0],
        &gc_log,
        &[
            format!(
                "endpoint = \"http://127.0.0.1:{}\"",
                cumulative_receiver.http
            ),
            "pause_events = true".to_string(),
        ],
    );
    let delta = agent_config(
        dir,
        "delta",
        ports[1],
        &gc_log,
        &[
            "protocol = \"grpc\"".to_string(),
            format!("endpoint = \"http://127.0.0.1:{}\"", delta_receiver.grpc),
            "temporality = \"delta\"".to_string(),
        ],
    );
    let mut children = Children::new(dir);
    children.dump_on_failure(&ports, &["jvm_gc_pause_seconds_count", "pausewatch_otlp"]);
    children.spawn_service("agent-cumulative", &mut common::run_command(&cumulative));
    children.spawn_service("agent-delta", &mut common::run_command(&delta));

    // The first half arrives, then both receivers go down.
    let received = |rotel: &Rotel, agent: &str| -> u64 {
        gc_totals(&rotel.points(), agent)
            .values()
            .map(|(c, _)| c)
            .sum()
    };
    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "the first half to arrive whole",
        |_| {
            let cumulative = gc_totals(&cumulative_receiver.points(), "cumulative");
            let delta = gc_totals(&delta_receiver.points(), "delta");
            let records = record_totals(&cumulative_receiver.records(), "cumulative");
            let (cumulative_read, delta_read) =
                (metrics_totals(ports[0]), metrics_totals(ports[1]));
            received(&cumulative_receiver, "cumulative") > 0
                && counts(&cumulative) == counts(&cumulative_read)
                && counts(&records) == counts(&cumulative_read)
                && counts(&delta) == counts(&delta_read)
        },
    );
    // Each receiver is stopped just after its agent counted a metrics export
    // acknowledged, a second before the next one: never mid-request, where
    // the receiver would keep what the agent then sends again (with the
    // first half delivered, no pause records follow those exports).
    stop_between_exports(&mut cumulative_receiver, ports[0]);
    stop_between_exports(&mut delta_receiver, ports[1]);
    let before_outage = received(&cumulative_receiver, "cumulative");
    let total: u64 = truth.values().map(|(count, _)| count).sum();
    assert!(before_outage < total, "the first half holds every pause");

    // The second half is read while nothing receives it.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&gc_log)
        .unwrap()
        .write_all(&text[middle..])
        .unwrap();
    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "the agents to read everything and fail to export",
        |_| {
            ports.iter().all(|&port| {
                read_all(&metrics_totals(port), &truth) && exports(port, "failure") >= 2.0
            })
        },
    );

    // Back up: the cumulative figures, and the deltas added up, are whole.
    cumulative_receiver.run();
    delta_receiver.run();
    children.wait_until(
        Instant::now() + Duration::from_secs(60),
        "every pause to arrive after the outage",
        |_| {
            let cumulative = gc_totals(&cumulative_receiver.points(), "cumulative");
            let delta = gc_totals(&delta_receiver.points(), "delta");
            let records = record_totals(&cumulative_receiver.records(), "cumulative");
            complete(&cumulative, ports[0], &truth)
                && complete(&delta, ports[1], &truth)
                && complete(&records, ports[0], &truth)
        },
    );
    // Two more exports: nothing is counted twice.
    std::thread::sleep(Duration::from_millis(2500));
    let delta_points = delta_receiver.points();
    assert_agree(
        &gc_totals(&delta_points, "delta"),
        &metrics_totals(ports[1]),
        &truth,
    );
    assert_agree(
        &gc_totals(&cumulative_receiver.points(), "cumulative"),
        &metrics_totals(ports[0]),
        &truth,
    );

    // Each delta point covers the time since the previous one of its series:
    // no gap and no overlap, even across the outage.
    let mut previous: BTreeMap<BTreeMap<String, String>, u64> = BTreeMap::new();
    for point in gc_duration(&delta_points, "delta") {
        assert!(point.delta);
        if let Some(end) = previous.insert(point.attributes.clone(), point.time) {
            assert_eq!(point.start, end, "{point:?}");
        }
    }
    assert!(exports(ports[1], "success") >= 2.0);

    // One pause record per pause, none twice, across the outage.
    let records = cumulative_receiver.records();
    assert_agree(
        &record_totals(&records, "cumulative"),
        &metrics_totals(ports[0]),
        &truth,
    );
    for record in records.iter().filter(|r| r.event_name == "jvm.gc.pause") {
        let start = &record.attributes["pausewatch.pause.start"];
        let end = &record.attributes["pausewatch.pause.end"];
        assert!(start <= end, "{record:?}");
        assert!(record.attributes.contains_key("pausewatch.pause.name"));
        assert_eq!(record.attributes["pausewatch.collector"], "g1");
    }
}

#[test]
fn configured_and_environment_headers_reach_the_receiver_and_the_proxy_is_honoured() {
    let captured: Arc<Mutex<Vec<String>>> = Arc::default();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    {
        let captured = captured.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                if let Some(head) = answer_ok(stream) {
                    captured.lock().unwrap().push(head);
                }
            }
        });
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gc_log = dir.join("gc.log");
    std::fs::copy(
        common::jvm_fixture("jdk17-parallel-full").join("gc.log"),
        &gc_log,
    )
    .unwrap();
    let ports = common::free_ports(3);
    let from_file = agent_config(
        dir,
        "file",
        ports[0],
        &gc_log,
        &[
            format!("endpoint = \"http://127.0.0.1:{port}/custom/path\""),
            "headers = { Authorization = \"Bearer s3cret\", \"X-Scope-OrgID\" = \"tenant-7\" }"
                .to_string(),
        ],
    );
    let from_env = agent_config(dir, "env", ports[1], &gc_log, &[]);
    let mut children = Children::new(dir);
    children.spawn_service("agent-file", &mut common::run_command(&from_file));
    children.spawn_service(
        "agent-env",
        common::run_command(&from_env)
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )
            .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k%3D1,x-team=gc"),
    );
    // A receiver only the proxy the environment names can reach (as the
    // SDKs' exporters honour HTTP_PROXY): the listener stands in for it.
    let via_proxy = agent_config(dir, "proxy", ports[2], &gc_log, &[]);
    let remote = "otlp-receiver.invalid:4318";
    children.spawn_service(
        "agent-proxy",
        common::run_command(&via_proxy)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{remote}"))
            .env("HTTP_PROXY", format!("http://127.0.0.1:{port}"))
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy"),
    );
    let proxied = |h: &String| {
        h.starts_with(&format!("POST http://{remote}/v1/metrics "))
            || h.starts_with(&format!("CONNECT {remote} "))
    };
    children.wait_until(
        Instant::now() + Duration::from_secs(20),
        "a request from each agent",
        |_| {
            let heads = captured.lock().unwrap();
            heads.iter().any(|h| h.starts_with("POST /custom/path "))
                && heads.iter().any(|h| h.starts_with("POST /v1/metrics "))
                && heads.iter().any(proxied)
        },
    );
    let heads = captured.lock().unwrap();
    let file = heads
        .iter()
        .find(|h| h.starts_with("POST /custom/path "))
        .unwrap();
    let lower = file.to_ascii_lowercase();
    assert!(
        lower.contains("\r\nauthorization: bearer s3cret\r\n"),
        "{file}"
    );
    assert!(lower.contains("\r\nx-scope-orgid: tenant-7\r\n"), "{file}");
    assert!(
        lower.contains("\r\ncontent-type: application/x-protobuf\r\n"),
        "{file}"
    );
    let env = heads
        .iter()
        .find(|h| h.starts_with("POST /v1/metrics "))
        .unwrap();
    assert!(env.contains("\r\nx-api-key: k=1\r\n"), "{env}");
    assert!(env.contains("\r\nx-team: gc\r\n"), "{env}");
}

/// Reads one HTTP/1.1 request (head and `Content-Length` body), answers
/// `200` with an empty body, and gives the head.
fn answer_ok(mut stream: impl Read + Write) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).ok()?;
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).ok()?;
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    stream.flush().ok()?;
    Some(head)
}

/// A CA (`ca.pem`, and `other-ca.pem` that signed nothing), a server
/// certificate for 127.0.0.1 (`server.pem`, `server-key.pem`) and a client
/// certificate (`client.pem`, `client-key.pem`).
fn write_pki(dir: &Path) {
    let ca = common::pki::new_ca("pausewatch test CA");
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("ca.pem", &ca.pem());
    write("other-ca.pem", &common::pki::new_ca("some other CA").pem());
    for (name, subject, usage) in [
        ("server", "127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth),
        ("client", "pausewatch", ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let (cert, key) = common::pki::leaf(&ca, &[subject], usage);
        write(&format!("{name}.pem"), &cert);
        write(&format!("{name}-key.pem"), &key);
    }
}

/// A TLS server on 127.0.0.1 that wants a client certificate signed by
/// `dir/ca.pem` and records the head of every request it answers.
fn mutual_tls_receiver(dir: &Path) -> (u16, Arc<Mutex<Vec<String>>>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(dir.join("ca.pem")).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let chain: Vec<CertificateDer> = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server-key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let captured: Arc<Mutex<Vec<String>>> = Arc::default();
    let heads = captured.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
            let connection = rustls::ServerConnection::new(config.clone()).unwrap();
            // A client without a certificate fails the handshake here.
            if let Some(head) = answer_ok(rustls::StreamOwned::new(connection, tcp)) {
                heads.lock().unwrap().push(head);
            }
        }
    });
    (port, captured)
}

/// Records the names of the metrics of every gRPC export it answers.
struct MetricNames(Arc<Mutex<Vec<String>>>);

#[tonic::async_trait]
impl MetricsService for MetricNames {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let request = request.into_inner();
        let metrics = (request.resource_metrics.iter())
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics);
        let mut names = self.0.lock().unwrap();
        names.extend(metrics.map(|m| m.name.clone()));
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC OTLP receiver (tonic, as the OpenTelemetry Collector's Go
/// counterpart) on 127.0.0.1 over TLS that wants a client certificate signed
/// by `dir/ca.pem`; records the metric names it receives.
fn grpc_mutual_tls_receiver(dir: &Path) -> (u16, Arc<Mutex<Vec<String>>>) {
    use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsServiceServer;
    use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let tls = ServerTlsConfig::new()
        .identity(Identity::from_pem(
            read("server.pem"),
            read("server-key.pem"),
        ))
        .client_ca_root(Certificate::from_pem(read("ca.pem")));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let captured: Arc<Mutex<Vec<String>>> = Arc::default();
    let names = MetricNames(captured.clone());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            Server::builder()
                .tls_config(tls)
                .unwrap()
                .add_service(MetricsServiceServer::new(names))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .unwrap();
        });
    });
    (port, captured)
}

#[test]
fn mutual_tls_with_the_configured_ca_and_client_certificate_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    write_pki(tmp.path());
    let (port, captured) = mutual_tls_receiver(tmp.path());
    mutual_tls(tmp.path(), port, &[]);
    let heads = captured.lock().unwrap();
    assert!(!heads.is_empty());
    assert!(
        heads.iter().all(|h| h.starts_with("POST /v1/metrics ")),
        "{heads:?}"
    );
}

#[test]
fn mutual_tls_with_the_configured_ca_and_client_certificate_over_grpc() {
    let tmp = tempfile::tempdir().unwrap();
    write_pki(tmp.path());
    let (port, captured) = grpc_mutual_tls_receiver(tmp.path());
    mutual_tls(tmp.path(), port, &["protocol = \"grpc\"".to_string()]);
    let names = captured.lock().unwrap();
    assert!(names.iter().any(|n| n == "jvm.gc.duration"), "{names:?}");
}

/// Four agents export to the mutual-TLS receiver on `port` with `otlp`
/// settings: with the CA and a client certificate (delivered), and without
/// the certificate, with another CA, with the system's roots (all refused).
fn mutual_tls(dir: &Path, port: u16, otlp: &[String]) {
    let gc_log = dir.join("gc.log");
    std::fs::copy(
        common::jvm_fixture("jdk17-parallel-full").join("gc.log"),
        &gc_log,
    )
    .unwrap();
    let endpoint = format!("endpoint = \"https://127.0.0.1:{port}\"");
    let tls = |settings: &str| format!("tls_config = {{ {settings} }}");
    let ports = common::free_ports(4);
    let with = |settings: Vec<String>| otlp.iter().cloned().chain(settings).collect::<Vec<_>>();
    let configs = [
        (
            "mtls",
            vec![
                endpoint.clone(),
                tls("ca_file = \"ca.pem\", cert_file = \"client.pem\", key_file = \"client-key.pem\""),
            ],
        ),
        // The server asks for a client certificate: refused.
        ("no-client-cert", vec![endpoint.clone(), tls("ca_file = \"ca.pem\"")]),
        // Another CA does not vouch for the server: refused.
        (
            "other-ca",
            vec![
                endpoint.clone(),
                tls("ca_file = \"other-ca.pem\", cert_file = \"client.pem\", key_file = \"client-key.pem\""),
            ],
        ),
        // The system's roots do not know the test CA: refused.
        ("system-roots", vec![endpoint]),
    ];
    let mut children = Children::new(dir);
    children.dump_on_failure(&ports, &["pausewatch_otlp"]);
    for ((name, settings), port) in configs.into_iter().zip(&ports) {
        let config = agent_config(dir, name, *port, &gc_log, &with(settings));
        children.spawn_service(name, &mut common::run_command(&config));
    }
    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "an export over mutual TLS and three refused ones",
        |_| {
            exports(ports[0], "success") >= 1.0
                && ports[1..]
                    .iter()
                    .all(|&port| exports(port, "failure") >= 1.0)
        },
    );
    for &port in &ports[1..] {
        assert_eq!(exports(port, "success"), 0.0);
    }
}

#[test]
fn a_discovered_jvms_runtime_stats_arrive_under_the_conventions_names() {
    let Some(rotel) = rotel_or_skip() else {
        return;
    };
    let Some((tmp, classes, marker)) = common::workloads_or_skip() else {
        return;
    };
    let dir = tmp.path();
    let receiver = Rotel::start(&rotel, dir, "rotel");
    let port = common::free_port();
    let config = common::write_file(
        dir,
        "agent.toml",
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
             [discovery]\ninterval = \"200ms\"\ngrace = \"60s\"\ninclude = [{}]\n\
             [runtime_stats]\ninterval = \"100ms\"\n\
             [otlp]\ninterval = \"1s\"\nendpoint = \"http://127.0.0.1:{}\"\n",
            toml_string(&dir.join("checkpoint")),
            common::discovery_include(&marker),
            receiver.http,
        ),
    );
    let mut children = Children::new(dir);
    children.dump_on_failure(&[port], &["pausewatch_jvm_discovered", "pausewatch_otlp"]);
    children.spawn_service("agent", &mut common::run_command(&config));

    // The workload's MXBean snapshot, with its heap pools and the
    // process's CPU time (`-Dwl.hsperf`), then its exit.
    let snapshot = dir.join("mxbeans.json");
    let mut jvm = Command::new("java")
        .args(["-XX:+UseG1GC", "-Xmx64m", &marker])
        .arg(format!("-Dwl.hsperf={}", dir.join("hsperf.copy").display()))
        .args([
            "-Dwl.rate=25",
            "-Dwl.quiesceMs=1500",
            "-Dwl.cpuSettleMs=500",
        ])
        .arg("-cp")
        .arg(&classes)
        .args(["GcWorkload", "steady", "3"])
        .arg(&snapshot)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = jvm.id().to_string();
    assert!(jvm.wait().unwrap().success());
    let exited = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    // The JVM's points of an export made after its exit.
    let last = |points: &[Point], metric: &str| -> Vec<Point> {
        let of_jvm = points.iter().filter(|p| {
            p.metric == metric && p.resource.get("process.pid") == Some(&pid) && p.time > exited
        });
        let mut latest: BTreeMap<String, Point> = BTreeMap::new();
        for point in of_jvm {
            latest.insert(format!("{:?}", point.attributes), point.clone());
        }
        latest.into_values().collect()
    };
    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "an export of the exited JVM's runtime stats",
        |_| !last(&receiver.points(), "jvm.cpu.time").is_empty(),
    );
    let points = receiver.points();
    let beans: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();

    // Heap pools under jvm.memory.*, named as the MXBeans name them, and
    // no whole-heap point beside them.
    let committed = last(&points, "jvm.memory.committed");
    assert!(!committed.is_empty());
    for point in &committed {
        assert_eq!(point.attributes["jvm.memory.type"], "heap", "{point:?}");
        let pool = &point.attributes["jvm.memory.pool.name"];
        let bean = (beans["memory_pools"].as_array().unwrap().iter())
            .find(|b| b["name"] == pool.as_str())
            .unwrap_or_else(|| panic!("no MXBean pool {pool}"));
        assert_eq!(point.value, bean["committed"].as_f64(), "{pool}");
        assert_eq!(point.unit, "By");
    }
    let classes = &beans["classes"];
    let loaded = classes["loaded"].as_f64().unwrap() - classes["unloaded"].as_f64().unwrap();
    // The same figure as /metrics, and the snapshot's classes plus the
    // few the JVM loads on its way to halt.
    let count = last(&points, "jvm.class.count")[0].value.unwrap();
    let metrics = common::http_get(port, "/metrics").unwrap().1;
    let pid_label = format!("pid=\"{pid}\"");
    let exposed = metrics
        .lines()
        .find(|l| l.starts_with("jvm_classes_loaded_classes{") && l.contains(&pid_label))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert_eq!(Some(count), exposed);
    assert!(
        (loaded..=loaded + 10.0).contains(&count),
        "{count} classes, {loaded} at the snapshot"
    );
    // CPU time: a monotonic sum in seconds, read within the snapshot.
    let cpu = &last(&points, "jvm.cpu.time")[0];
    assert_eq!((cpu.unit.as_str(), cpu.delta), ("s", false));
    let before = beans["process_cpu_ns_before"].as_f64().unwrap() / 1e9;
    let after = beans["process_cpu_ns"].as_f64().unwrap() / 1e9;
    let value = cpu.value.unwrap();
    assert!(
        before - 0.05 <= value && value <= after + 0.05,
        "{value} outside {before}..{after}"
    );
}
