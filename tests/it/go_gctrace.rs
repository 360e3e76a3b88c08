//! Go programs' `GODEBUG=gctrace=1` output, read by `analyze` and by the
//! agent, against the Go runtime's own accounting: the program
//! (tests/workload/go/gcload.go) prints `runtime.MemStats` as its last act,
//! and no collection starts after it is read.
//!
//! * The pause count equals `NumGC` exactly.
//! * The pause total agrees with `PauseTotalNs` within the rounding of the
//!   trace: the runtime truncates each clock figure it prints (whole
//!   milliseconds from 10 ms, else two significant digits with at most three
//!   decimals, `0` below 1 µs), so the truth lies between the sum of the
//!   printed figures and that sum plus one unit of the last printed digit of
//!   each. The bound is computed here from the raw lines, not by the parser.
//! * Go 1.19 marks the cycle under way when `runtime.GC()` is called as
//!   `(forced)` too (later runtimes set the flag under the GC semaphore):
//!   forced pauses lie between `NumForcedGC` and twice that.
//!
//! Tests needing `go` (Debian `golang-go`) are skipped (`common::skip`) without it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::common;

/// What `gcload` prints as its last act.
#[derive(Debug, Deserialize)]
struct MemStats {
    num_gc: u64,
    num_forced_gc: u64,
    pause_total_ns: u64,
    pauses: Vec<RuntimePause>,
    /// `GCCPUFraction`, wall time and GOMAXPROCS: printed by live runs
    /// (the recorded fixture predates them).
    #[serde(default)]
    gc_cpu_fraction: f64,
    #[serde(default)]
    wall_s: f64,
    #[serde(default)]
    gomaxprocs: u32,
}

/// One entry of the runtime's ring of pauses (`PauseEnd`, `PauseNs`).
#[derive(Debug, Deserialize)]
struct RuntimePause {
    end_unix_ns: i64,
    ns: u64,
}

/// The trace read by the test, figure by figure: the printed stop-the-world
/// total, how much truncation may have taken off it, and `(forced)` lines.
struct Printed {
    cycles: u64,
    pause_ms: f64,
    truncated_ms: f64,
    /// What truncation may have taken off each cycle's pause, in cycle order.
    truncated_ms_by_cycle: Vec<f64>,
    forced: u64,
}

fn printed(trace: &str) -> Printed {
    let mut figures = Printed {
        cycles: 0,
        pause_ms: 0.0,
        truncated_ms: 0.0,
        truncated_ms_by_cycle: Vec::new(),
        forced: 0,
    };
    for line in trace.lines() {
        let Some(at) = line.find("gc ") else { continue };
        let line = &line[at..];
        let Some((_, after)) = line.split_once("%: ") else {
            continue;
        };
        let clock: Vec<&str> = after
            .split(" ms clock")
            .next()
            .unwrap()
            .split('+')
            .collect();
        figures.cycles += 1;
        let mut cycle_truncated_ms = 0.0;
        for figure in [clock[0], clock[2]] {
            figures.pause_ms += figure.parse::<f64>().unwrap();
            cycle_truncated_ms += match figure.split_once('.') {
                Some((_, decimals)) => 10f64.powi(-(decimals.len() as i32)),
                None if figure == "0" => 0.001,
                None => 1.0,
            };
        }
        figures.truncated_ms += cycle_truncated_ms;
        figures.truncated_ms_by_cycle.push(cycle_truncated_ms);
        figures.forced += u64::from(line.ends_with(" (forced)"));
    }
    figures
}

/// Checks `count`, `total_s` and `forced` (pausewatch's reading) against the
/// runtime's accounting and the printed trace.
fn check(label: &str, count: u64, total_s: f64, forced: u64, trace: &str, truth: &MemStats) {
    let printed = printed(trace);
    assert_eq!(
        printed.cycles, truth.num_gc,
        "{label}: the trace has NumGC lines"
    );
    assert_eq!(count, truth.num_gc, "{label}: pauses = NumGC");
    let total_ms = total_s * 1000.0;
    assert!(
        (total_ms - printed.pause_ms).abs() < 1e-6,
        "{label}: {total_ms} ms read, {} ms printed",
        printed.pause_ms
    );
    let truth_ms = truth.pause_total_ns as f64 / 1e6;
    assert!(
        truth_ms >= total_ms - 1e-6 && truth_ms <= total_ms + printed.truncated_ms + 1e-6,
        "{label}: PauseTotalNs {truth_ms} ms outside [{total_ms}, {total_ms} + {}]",
        printed.truncated_ms
    );
    assert_eq!(forced, printed.forced, "{label}: (forced) lines");
    // The runtime prints " (forced)" from a flag the next cycle's start
    // sets: a heap-triggered cycle still printing when runtime.GC() starts
    // the next one is marked too. The trace may mark more cycles than
    // NumForcedGC, never fewer: gcload waits for each forced cycle's line
    // before it allocates again.
    assert!(
        truth.num_forced_gc <= forced && forced <= 2 * truth.num_forced_gc,
        "{label}: {forced} forced, NumForcedGC {}",
        truth.num_forced_gc
    );
    println!(
        "{label}: {count} pauses = NumGC; {total_ms:.3} ms read, PauseTotalNs {truth_ms:.3} ms (bound +{:.3} ms); {forced} forced, NumForcedGC {}",
        printed.truncated_ms, truth.num_forced_gc
    );
}

fn analyze(args: &[&str], trace: &Path) -> Value {
    let trace = trace.to_str().unwrap();
    common::analyze_json(args.iter().copied().chain([trace]))
}

fn check_analyze(label: &str, report: &Value, trace: &str, truth: &MemStats) {
    let pauses = &report["pauses"];
    check(
        label,
        pauses["count"].as_u64().unwrap(),
        pauses["total_seconds"].as_f64().unwrap(),
        report["markers"]["explicit_gcs"].as_u64().unwrap(),
        trace,
        truth,
    );
    assert_eq!(report["collector"], "go");
    assert_eq!(report["unparsed_lines"], 0);
    assert_eq!(report["markers"]["concurrent_cycles"], truth.num_gc);
}

#[test]
fn recorded_trace_matches_the_runtime_accounting() {
    let dir = common::root().join("tests/fixtures/go/go1.19-alloc");
    let trace = std::fs::read_to_string(dir.join("gctrace.log")).unwrap();
    let truth: MemStats =
        serde_json::from_slice(&std::fs::read(dir.join("memstats.json")).unwrap()).unwrap();
    let report = analyze(&[], &dir.join("gctrace.log"));
    check_analyze("go1.19 fixture", &report, &trace, &truth);
    // The text report names the runtime, not a JDK; 80 = NumGC.
    let text = Command::new(common::PAUSEWATCH)
        .arg("analyze")
        .arg(dir.join("gctrace.log"))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("runtime: go (gctrace)\n"), "{text}");
    assert!(
        text.contains(&format!("pauses: {} ", truth.num_gc)),
        "{text}"
    );
}

// ---------------------------------------------------------------- live Go programs

/// `go` on the PATH, or a loud skip.
fn go_or_skip() -> bool {
    let found = common::succeeds("go", &["version"]);
    if !found {
        common::skip("`go` is not installed (Debian: golang-go)");
    }
    found
}

/// tests/workload/go/gcload.go built once per test binary, its build cache
/// under the target directory.
fn gcload() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::go_build("gcload.go", false))
}

/// `gcload ARGS` with `GODEBUG`, stderr appended to `trace`; its MemStats.
fn run_gcload(args: &[&str], godebug: &str, trace: &Path) -> MemStats {
    let stderr = std::fs::File::create(trace).unwrap();
    let output = Command::new(gcload())
        .args(args)
        .env("GODEBUG", godebug)
        .stderr(stderr)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "gcload {args:?}: {}",
        output.status
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn live_program_through_analyze() {
    if !go_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("stderr.log");
    let started = chrono::Utc::now();
    let truth = run_gcload(&["alloc", "2"], "gctrace=1", &trace);
    let text = std::fs::read_to_string(&trace).unwrap();
    let report = analyze(&["--jvm-start", &started.to_rfc3339()], &trace);
    check_analyze("live gcload via analyze", &report, &text, &truth);
    // Anchored by the start, every pause lands in a minute.
    let placed = common::minutes_pause_count(&report["minutes"]);
    assert_eq!(placed, truth.num_gc);
}

/// The agent's reading of a Go stream: pause count, total and forced
/// pauses, under both names, every one placed in time.
fn check_agent(label: &str, metrics: &str, selector: &[&str], trace: &Path, truth: &MemStats) {
    let text = std::fs::read_to_string(trace).unwrap();
    let count = common::sum(metrics, "jvm_gc_pause_seconds_count", selector);
    let total = common::sum(metrics, "jvm_gc_pause_seconds_sum", selector);
    let forced = common::sum(metrics, "pausewatch_gc_explicit_total", selector);
    check(label, count as u64, total, forced as u64, &text, truth);
    assert_eq!(
        common::sum(metrics, "go_gc_pause_seconds_count", selector),
        count,
        "{label}: go_gc_pause_seconds"
    );
    assert_eq!(
        common::sum(metrics, "go_gc_pause_seconds_sum", selector),
        total
    );
    assert_eq!(
        common::sum(
            metrics,
            "pausewatch_log_events_without_wall_clock_total",
            selector
        ),
        0.0,
        "{label}: anchored by the program's start from /proc"
    );
    assert_eq!(
        common::sum(metrics, "pausewatch_gc_concurrent_cycles_total", selector),
        truth.num_gc as f64
    );
}

/// An agent polling every 100 ms with `config` after its common keys, up.
fn start_agent(dir: &Path, config: &str) -> common::Agent {
    let port = common::free_port();
    let agent = common::Agent::start(
        dir,
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {checkpoint}\npoll_interval = \"100ms\"\n{config}",
            checkpoint = common::toml_string(&dir.join("checkpoint")),
        ),
    );
    agent.metrics_when(Duration::from_secs(20), |m| {
        m.contains("pausewatch_build_info")
    });
    agent
}

#[test]
fn agent_discovers_a_go_program_tracing_to_a_file() {
    if !go_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let agent = start_agent(
        dir.path(),
        r#"[discovery]
interval = "200ms"
include = ["gcload-[0-9]+ alloc 3 discover-me$"]
grace = "4s"
"#,
    );
    let trace = dir.path().join("app-stderr.log");
    // The other tests' programs run beside this one: only this one is included.
    let truth = run_gcload(
        &["alloc", "3", "discover-me"],
        "madvdontneed=1,gctrace=1",
        &trace,
    );
    let selector = [r#"runtime="go""#, r#"program="gcload-"#];
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        common::sum(m, "jvm_gc_pause_seconds_count", &selector) == truth.num_gc as f64
    });
    check_agent("discovered gcload", &metrics, &selector, &trace, &truth);
    // A `service`, as a JVM's, so that a dashboard's `$service` selects it.
    let by_service = [r#"runtime="go""#, r#"service="gcload-"#];
    assert_eq!(
        common::sum(&metrics, "jvm_gc_pause_seconds_count", &by_service),
        truth.num_gc as f64
    );
    // The collector's CPU, as the runtime counts it: GCCPUFraction of the
    // CPU available since the program started.
    let runtime_gc_cpu = truth.gc_cpu_fraction * truth.wall_s * f64::from(truth.gomaxprocs);
    let gc_cpu = common::sum(&metrics, "pausewatch_gc_cpu_seconds_total", &selector);
    assert!(
        (gc_cpu - runtime_gc_cpu).abs() <= 0.10 * runtime_gc_cpu,
        "GC CPU {gc_cpu} s, the runtime's {runtime_gc_cpu} s ({truth:?})"
    );
    // The same CPU in the minutes, beside the program's own CPU read from /proc.
    let minutes: Value = serde_json::from_str(&agent.get("/api/v1/minutes").unwrap()).unwrap();
    let stream = minutes["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["log"] == trace.display().to_string())
        .expect("the program's minutes");
    let figure = |name: &str| -> f64 {
        let minutes = stream["minutes"].as_array().unwrap().iter();
        minutes.filter_map(|m| m[name].as_f64()).sum()
    };
    let in_minutes = figure("gc_cpu_seconds");
    assert!(
        (in_minutes - gc_cpu).abs() < 1e-9,
        "{in_minutes} in the minutes, {gc_cpu} exported"
    );
    assert!(figure("process_cpu_seconds") > 0.0, "{stream}");
    let pid_label = metrics
        .lines()
        .find(|l| l.starts_with("jvm_gc_pause_seconds_count{"))
        .unwrap();
    assert!(pid_label.contains(r#"pid=""#), "{pid_label}");
    assert!(pid_label.contains(&format!("log={}", common::toml_string(&trace))));
    // Exited and quiet for the grace period: its series go.
    agent.metrics_when(Duration::from_secs(30), |m| {
        !m.contains(r#"program="gcload-"#)
    });
}

#[test]
fn agent_follows_a_configured_go_trace_anchored_from_proc() {
    if !go_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("stderr.log");
    let agent = start_agent(
        dir.path(),
        &format!(
            r#"[[gc_log]]
path = {trace}
start_at = "beginning"
labels = {{ service = "translate" }}
"#,
            trace = common::toml_string(&trace),
        ),
    );
    let truth = run_gcload(&["alloc", "3"], "gctrace=1", &trace);
    let selector = [r#"runtime="go""#, r#"service="translate""#];
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        common::sum(m, "jvm_gc_pause_seconds_count", &selector) == truth.num_gc as f64
    });
    check_agent("configured gcload", &metrics, &selector, &trace, &truth);
    assert!(
        metrics.contains(r#"gc="Go GC""#),
        "Micrometer-style gc label"
    );
}

/// A Go trace's position and parser state are checkpointed like a GC
/// log's: an agent killed half way and started again counts every cycle of
/// the recorded run once.
#[test]
fn agent_resumes_a_go_trace_from_its_checkpoint() {
    let fixture = common::root().join("tests/fixtures/go/go1.19-alloc");
    let recorded = std::fs::read_to_string(fixture.join("gctrace.log")).unwrap();
    let truth: MemStats =
        serde_json::from_slice(&std::fs::read(fixture.join("memstats.json")).unwrap()).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    let dir = tempfile::tempdir().unwrap();
    let trace = common::write_file(dir.path(), "stderr.log", first.join("\n") + "\n");
    let config = format!(
        "checkpoint_interval = \"200ms\"\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\njvm_start = \"2026-12-01T05:00:00Z\"\n",
        common::toml_string(&trace)
    );
    let count = |m: &str| common::sum(m, "go_gc_pause_seconds_count", &[r#"runtime="go""#]);
    let agent = start_agent(dir.path(), &config);
    agent.metrics_when(Duration::from_secs(20), |m| count(m) == first.len() as f64);
    // Two checkpoint intervals, then killed.
    std::thread::sleep(Duration::from_millis(600));
    drop(agent);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    file.write_all((second.join("\n") + "\n").as_bytes())
        .unwrap();
    let agent = start_agent(dir.path(), &config);
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| count(m) >= truth.num_gc as f64);
    check_agent(
        "restarted agent",
        &metrics,
        &[r#"runtime="go""#],
        &trace,
        &truth,
    );
    assert_eq!(
        common::sum(&metrics, "pausewatch_jvm_restarts_total", &[]),
        0.0
    );
}

// ---------------------------------------------------------------- a Go service and its access log

/// One line of the service's access log (`{"start": RFC 3339, "duration_ms": N}`).
struct Request {
    start_us: f64,
    duration_us: f64,
}

fn requests(access: &Path) -> Vec<Request> {
    std::fs::read_to_string(access)
        .unwrap()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let start = chrono::DateTime::parse_from_rfc3339(v["start"].as_str().unwrap()).unwrap();
            Request {
                start_us: start.timestamp_micros() as f64,
                duration_us: v["duration_ms"].as_f64().unwrap() * 1000.0,
            }
        })
        .collect()
}

/// Slow requests (over the SLO) a quarter or more covered by `pauses`
/// (`[start, end]` in epoch µs). Pauses are dated by when the shipper read
/// their lines, so two placed pauses can overlap: time covered by both counts
/// once, as docs/offline.md says of stops.
fn stop_affected(requests: &[Request], pauses: &[(f64, f64)], slo_us: f64) -> u64 {
    let mut sorted = pauses.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut union: Vec<(f64, f64)> = Vec::new();
    for (from, to) in sorted {
        match union.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => union.push((from, to)),
        }
    }
    requests
        .iter()
        .filter(|r| r.duration_us > slo_us)
        .filter(|r| {
            let end = r.start_us + r.duration_us;
            let covered: f64 = union
                .iter()
                .map(|(from, to)| (to.min(end) - from.max(r.start_us)).max(0.0))
                .sum();
            covered >= 0.25 * r.duration_us
        })
        .count() as u64
}

/// The time the shipper put in front of each `gc N` line, by N.
fn shipped_at(trace: &str) -> std::collections::BTreeMap<u64, f64> {
    trace
        .lines()
        .filter_map(|line| {
            let (stamp, rest) = line.split_once(" stderr F gc ")?;
            let number = rest.split_once(' ')?.0.parse().ok()?;
            let at = chrono::DateTime::parse_from_rfc3339(stamp).ok()?;
            Some((number, at.timestamp_nanos_opt()? as f64 / 1000.0))
        })
        .collect()
}

/// A Go HTTP service whose stop-the-world pauses are long (a goroutine spins
/// without preemption points and asynchronous preemption is off, so each
/// collection waits for it), its stderr shipped with an RFC 3339 timestamp in
/// front of each line as Kubernetes' CRI log does, and its access log: the
/// requests `analyze --latency` finds slowed by the pauses are the ones the
/// runtime's own record of its pauses (`PauseEnd`, `PauseNs`) covers.
#[test]
fn go_service_requests_slowed_by_its_pauses_are_attributed() {
    if !go_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("service.log");
    let access = dir.path().join("access.jsonl");
    let port = common::free_port();
    let mut service = Command::new(gcload())
        .args(["serve", &format!("127.0.0.1:{port}")])
        .arg(&access)
        .env("GODEBUG", "gctrace=1,asyncpreemptoff=1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The shipper: each stderr line as it arrives, dated when it is read.
    let stderr = service.stderr.take().unwrap();
    let shipped = trace_path.clone();
    let shipper = std::thread::spawn(move || {
        let mut out = std::fs::File::create(shipped).unwrap();
        for line in BufReader::new(stderr).lines() {
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
            writeln!(out, "{now} stderr F {}", line.unwrap()).unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while common::http_get(port, "/").is_err() {
        assert!(Instant::now() < deadline, "the Go service never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Four clients, each one request at a time, for 8 seconds or until the
    // trace has 200 cycles: the runtime's ring keeps only the last 256 pauses,
    // and a fast machine runs more than that in 8 seconds.
    let enough = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let enough = enough.clone();
            std::thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(8);
                while Instant::now() < end && !enough.load(Ordering::Relaxed) {
                    common::http_get_ok(port, "/").unwrap();
                }
            })
        })
        .collect();
    while !clients.iter().all(|c| c.is_finished()) {
        let trace = std::fs::read_to_string(&trace_path).unwrap_or_default();
        if trace.lines().filter(|l| l.contains(" gc ")).count() >= 200 {
            enough.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    clients.into_iter().for_each(|c| c.join().unwrap());
    common::http_get_ok(port, "/quit").unwrap();
    let output = service.wait_with_output().unwrap();
    shipper.join().unwrap();
    assert!(output.status.success(), "gcload serve: {}", output.status);
    let truth: MemStats = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        truth.num_gc <= 256,
        "every pause is in the runtime's ring ({} cycles)",
        truth.num_gc
    );

    let slo_us = 10_000.0;
    let requests = requests(&access);
    // The JSON lines' fields (`start`, `duration_ms`) are told without flags.
    let report = analyze(
        &["--slo", "10ms", "--latency", access.to_str().unwrap()],
        &trace_path,
    );
    let trace = std::fs::read_to_string(&trace_path).unwrap();
    check_analyze("gcload serve", &report, &trace, &truth);
    let attribution = &report["attribution"];
    println!("latency {} attribution {attribution}", report["latency"]);
    assert_eq!(report["latency"]["count"], requests.len() as u64);
    let slow = requests.iter().filter(|r| r.duration_us > slo_us).count() as u64;
    assert_eq!(attribution["slow_requests"], slow);
    // Each pause as the runtime recorded its length (`PauseNs`, or less
    // what truncating its printed figures may take off), ending when the
    // shipper dated its line: how late that is, the agent cannot know.
    let shipped = shipped_at(&trace);
    let delays_us: Vec<f64> = truth
        .pauses
        .iter()
        .enumerate()
        .map(|(i, p)| shipped[&(i as u64 + 1)] - p.end_unix_ns as f64 / 1000.0)
        .collect();
    let max_delay_ms = delays_us.iter().fold(0.0f64, |a, d| a.max(*d)) / 1000.0;
    println!("the shipper dated the lines up to {max_delay_ms:.3} ms after the pauses ended");
    let truncated_ms = printed(&trace).truncated_ms_by_cycle;
    let placed = |truncate: bool| -> Vec<(f64, f64)> {
        truth
            .pauses
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let end = shipped[&(i as u64 + 1)];
                let less_us = if truncate {
                    truncated_ms[i] * 1000.0
                } else {
                    0.0
                };
                (end - (p.ns as f64 / 1000.0 - less_us).max(0.0), end)
            })
            .collect()
    };
    let exact = stop_affected(&requests, &placed(false), slo_us);
    let truncated = stop_affected(&requests, &placed(true), slo_us);
    let (low, high) = (exact.min(truncated), exact.max(truncated));
    let found = attribution["slow_requests_stop_affected"].as_u64().unwrap();
    assert!(
        exact >= 1,
        "the run must have requests slowed by the pauses ({slow} slow)"
    );
    assert!(
        (low..=high).contains(&found),
        "{found} stop-affected; the runtime's pauses say {exact} ({truncated} as short as the printed figures may be)"
    );
    let p999 = report["latency"]["p999_seconds"].as_f64().unwrap();
    let without = attribution["p999_without_stop_affected_seconds"]
        .as_f64()
        .unwrap();
    assert!(without <= p999, "{without} <= {p999}");
}
