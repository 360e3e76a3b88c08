//! `pausewatch analyze --latency` against a Java service that really paused:
//! tests/workload/RequestWorkload.java serves requests at a constant rate
//! (latency measured from the intended start) with a large on-heap cache, and
//! tests/latency/run.sh freezes it twice with SIGSTOP/SIGCONT while it runs.
//!
//! The truth is independent of the code under test: the JVM's own GC
//! notifications (`gc-events.jsonl`), the freeze intervals the script
//! measured around its `kill` calls (`freezes.json`), and the access log read
//! here line by line.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::sample;
use serde_json::Value;

use crate::common;

/// `[start, end]` in epoch microseconds.
type Interval = (f64, f64);

struct Request {
    start_us: f64,
    duration_us: f64,
}

struct Truth {
    requests: Vec<Request>,
    gc_pauses: Vec<Interval>,
    freezes: Vec<Interval>,
}

fn read_json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn epoch_us(rfc3339: &str) -> f64 {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339).unwrap();
    t.timestamp() as f64 * 1e6 + f64::from(t.timestamp_subsec_micros())
}

fn truth(dir: &Path) -> Truth {
    let requests = read_json_lines(&dir.join("access.jsonl"))
        .iter()
        .map(|r| Request {
            start_us: epoch_us(r["start"].as_str().unwrap()),
            duration_us: r["duration_ms"].as_f64().unwrap() * 1000.0,
        })
        .collect();
    let events = read_json_lines(&dir.join("gc-events.jsonl"));
    let jvm_start_ms = events[0]["jvm_start_ms"].as_f64().unwrap();
    let gc_pauses = events[1..]
        .iter()
        .map(|e| {
            (
                (jvm_start_ms + e["start_uptime_ms"].as_f64().unwrap()) * 1000.0,
                (jvm_start_ms + e["end_uptime_ms"].as_f64().unwrap()) * 1000.0,
            )
        })
        .collect();
    let freezes: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("freezes.json")).unwrap()).unwrap();
    let freezes = freezes
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["start_us"].as_f64().unwrap(),
                f["end_us"].as_f64().unwrap(),
            )
        })
        .collect();
    Truth {
        requests,
        gc_pauses,
        freezes,
    }
}

fn covered(request: &Request, intervals: &[Interval]) -> f64 {
    let end = request.start_us + request.duration_us;
    intervals
        .iter()
        .map(|(from, to)| (to.min(end) - from.max(request.start_us)).max(0.0))
        .sum()
}

fn analyze(dir: &Path, access_args: &[&str]) -> Value {
    let gc_log = dir.join("gc.log");
    let fixed = ["--events", "--slo", "50ms"];
    common::analyze_json(
        fixed
            .iter()
            .chain(access_args)
            .copied()
            .chain([gc_log.to_str().unwrap()]),
    )
}

/// What the truth says about one reading of the requests.
struct Expected {
    requests: u64,
    slow: u64,
    gc_slowed: u64,
    /// Starts (epoch µs) of slow requests slowed only by a freeze.
    freeze_slowed: Vec<f64>,
    /// Every request at or above the p99.9 rank was slowed by GC.
    pauses_make_the_tail: bool,
}

fn expected(requests: &[Request], truth: &Truth) -> Expected {
    let slo_us = 50_000.0;
    let slow: Vec<&Request> = requests.iter().filter(|r| r.duration_us > slo_us).collect();
    let gc_affected = |r: &Request| covered(r, &truth.gc_pauses) >= 0.25 * r.duration_us;
    let mut by_duration: Vec<&Request> = requests.iter().collect();
    by_duration.sort_by(|a, b| b.duration_us.total_cmp(&a.duration_us));
    let above_p999 = requests.len() - (0.999 * requests.len() as f64).ceil() as usize + 1;
    Expected {
        requests: requests.len() as u64,
        slow: slow.len() as u64,
        gc_slowed: slow.iter().filter(|r| gc_affected(r)).count() as u64,
        freeze_slowed: slow
            .iter()
            .filter(|r| covered(r, &truth.freezes) >= 0.25 * r.duration_us && !gc_affected(r))
            .map(|r| r.start_us)
            .collect(),
        pauses_make_the_tail: by_duration[..above_p999].iter().all(|r| gc_affected(r)),
    }
}

/// The nginx file read here field by field: `... $request_time $msec`, where
/// `$msec` is the completion time (ms resolution).
fn nginx_requests(path: &Path) -> Vec<Request> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let duration_us = fields[fields.len() - 2].parse::<f64>().unwrap() * 1e6;
            let end_us = fields[fields.len() - 1].parse::<f64>().unwrap() * 1e6;
            Request {
                start_us: end_us - duration_us,
                duration_us,
            }
        })
        .collect()
}

/// Asserts what the issue asks: requests slowed by GC pauses are attributed to
/// stops, requests slowed only by the freezes are not, and the tail without
/// stop-affected requests is lower when pauses make it. Returns whether they
/// did (so the drop was checked).
/// GC-slowed requests a recording needs for the attribution to be judged.
const MIN_GC_SLOWED: u64 = 1;

fn check(dir: &Path) -> bool {
    let truth = truth(dir);
    let json_path = dir.join("access.jsonl");
    let json_args = common::json_latency_flags(&json_path);
    let nginx_path = dir.join("access.nginx.log");
    let nginx_args = ["--latency", nginx_path.to_str().unwrap()];
    let variants = [
        (
            "json",
            analyze(dir, &json_args),
            expected(&truth.requests, &truth),
        ),
        (
            "nginx (detected)",
            analyze(dir, &nginx_args),
            expected(&nginx_requests(&nginx_path), &truth),
        ),
    ];
    let mut pauses_made_the_tail = true;
    for (label, report, expected) in variants {
        // Full-GC lengths vary from run to run and machine to machine (some
        // runs have a single full GC over 50 ms): one GC-slowed request,
        // checked exactly against the JVM's notifications, tells the two
        // causes apart.
        assert!(
            expected.gc_slowed >= MIN_GC_SLOWED,
            "{label}: the run must have requests slowed by GC"
        );
        assert!(
            expected.freeze_slowed.len() >= 4,
            "{label}: the run must have requests slowed by the freezes"
        );
        let attribution = &report["attribution"];
        println!(
            "{label}: latency {} attribution {attribution}",
            report["latency"]
        );
        assert_eq!(
            report["latency"]["count"].as_u64().unwrap(),
            expected.requests,
            "{label}"
        );
        assert_eq!(
            attribution["slow_requests"].as_u64().unwrap(),
            expected.slow,
            "{label}"
        );
        assert_eq!(
            attribution["slow_requests_stop_affected"].as_u64().unwrap(),
            expected.gc_slowed,
            "{label}: slow requests stop-affected, against the JVM's own GC notifications"
        );
        let share = attribution["explained_share"].as_f64().unwrap();
        assert!(
            share > 0.0 && share < 1.0,
            "{label}: explained share {share}"
        );
        let p999 = report["latency"]["p999_seconds"].as_f64().unwrap();
        let without = attribution["p999_without_stop_affected_seconds"]
            .as_f64()
            .unwrap();
        if expected.pauses_make_the_tail {
            assert!(
                without < p999,
                "{label}: p99.9 without stop-affected {without} < {p999}"
            );
        } else {
            assert!(
                without <= p999,
                "{label}: p99.9 without stop-affected {without} <= {p999}"
            );
        }
        pauses_made_the_tail &= expected.pauses_make_the_tail;
        // Request by request: whatever only the freezes slowed is not blamed on stops.
        let slow_requests = report["slow_requests"].as_array().unwrap();
        assert_eq!(slow_requests.len() as u64, expected.slow);
        let mut freeze_checked = 0;
        for listed in slow_requests {
            let start_us = epoch_us(listed["start"].as_str().unwrap());
            if expected
                .freeze_slowed
                .iter()
                .any(|s| (s - start_us).abs() < 1500.0)
            {
                freeze_checked += 1;
                assert_eq!(
                    listed["stop_affected"], false,
                    "{label}: freeze-slowed request {listed}"
                );
            }
        }
        assert_eq!(
            freeze_checked,
            expected.freeze_slowed.len(),
            "{label}: every freeze-slowed request listed"
        );
        let minutes = report["minutes"].as_array().unwrap();
        let per_minute: u64 = minutes
            .iter()
            .map(|m| m["latency"]["count"].as_u64().unwrap())
            .sum();
        assert_eq!(per_minute, expected.requests, "{label}");
        assert!(minutes.iter().all(|m| m["attribution"].is_object()));
    }
    pauses_made_the_tail
}

#[test]
fn recorded_run_attributes_gc_slowed_requests_and_not_freezes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/latency/jdk17-parallel");
    assert!(
        check(&dir),
        "the recorded run is one where GC pauses make the p99.9"
    );
}

#[test]
fn live_run_with_sigstop_freezes() {
    if !common::java_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/latency/run.sh");
    // On a loaded machine a 30 s run may see too few full GCs slow a
    // request (the JVM's own GC notifications say so): record once more
    // before judging; `check` still demands them.
    let mut out = PathBuf::new();
    for attempt in 1..=2 {
        out = dir.path().join(format!("run{attempt}"));
        let status = Command::new("bash")
            .arg(&script)
            .arg(&out)
            .arg("30")
            .status()
            .unwrap();
        assert!(status.success(), "tests/latency/run.sh failed: {status}");
        let truth = truth(&out);
        if expected(&truth.requests, &truth).gc_slowed >= MIN_GC_SLOWED {
            break;
        }
        eprintln!("note: recording {attempt} had no GC-slowed request");
    }
    if !check(&out) {
        eprintln!("note: in this run the freezes, not GC, made the p99.9; the drop of the tail was not checked");
    }
}

#[test]
fn agent_attributes_the_followed_access_log() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/latency/jdk17-parallel");
    let dir = tempfile::tempdir().unwrap();
    for file in ["gc.log", "access.jsonl"] {
        std::fs::copy(fixture.join(file), dir.path().join(file)).unwrap();
    }
    let port = common::free_port();
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            r#"listen = "127.0.0.1:{port}"
checkpoint_dir = "{dir}/checkpoint"
poll_interval = "100ms"
[[gc_log]]
path = "{dir}/gc.log"
start_at = "beginning"
labels = {{ service = "checkout" }}
[[access_log]]
path = "{dir}/access.jsonl"
format = "json"
time_field = "start"
duration_field = "duration_ms"
duration_unit = "ms"
start_at = "beginning"
[correlation]
slo = "50ms"
finalize_after = "1s"
"#,
            dir = dir.path().display()
        ),
    );
    let truth = truth(&fixture);
    let expected = expected(&truth.requests, &truth);
    // The recorded minutes are long over: they are attributed at the first loop
    // after the files are read.
    let metrics = agent.metrics_when(std::time::Duration::from_secs(30), |m| {
        sample(m, "pausewatch_slow_requests_total") == Some(expected.slow as f64)
    });
    assert_eq!(
        sample(&metrics, "pausewatch_requests_total"),
        Some(expected.requests as f64)
    );
    assert_eq!(
        sample(&metrics, "pausewatch_slow_requests_stop_affected_total"),
        Some(expected.gc_slowed as f64),
        "against the JVM's own GC notifications"
    );
    assert_eq!(
        sample(&metrics, "pausewatch_request_duration_seconds_count"),
        Some(expected.requests as f64)
    );
    // The recorded minutes are long over and minutes without requests have
    // closed since: no current latency figures, and the minutes keep theirs.
    assert!(!metrics.contains("pausewatch_request_latency_p999_seconds{"));
    let minutes = common::agent_minutes(port);
    assert!(
        minutes.values().any(|m| m.p999_seconds.is_some()),
        "{minutes:?}"
    );
}
