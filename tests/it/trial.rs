//! The trial of issue 10, end to end: a Java stand-in service under the
//! release agent, a real Prometheus loaded with the rules `pausewatch rules
//! --config` renders for the agent's configuration, and a real Alertmanager
//! receiving from both.
//!
//! The service is tests/workload/RequestWorkload.java: a constant arrival rate
//! of 200 requests/s, latency measured from each request's intended start,
//! and an on-heap LRU cache whose size is the run's knob. Two runs of the
//! same JVM (Parallel GC, a fixed 512 MB heap) write the same GC log
//! (`-Xlog`, HotSpot archives the first run's file when the second starts)
//! and one access log each:
//!
//! 1. a small cache (`wl.live=0.1`) and short-lived sessions: a start-up
//!    pause while the cache fills (before the first request, in the run's
//!    warm-up), then young collections of a few ms (70 ms at most at a load
//!    average of 15 on 2 cores), no full collection;
//! 2. a cache of 3.3 million entries of 16-48 bytes (`wl.live=0.2`) and
//!    sessions kept 5 s, which die in the old generation: full collections
//!    of the whole cache, from several hundred ms on an idle machine to
//!    seconds on a loaded one, and a p99.9 made by them. The SLO (300 ms)
//!    sits between the two runs with room on both sides, whatever the load:
//!    a loaded machine stretches both runs' pauses alike.
//!
//! Wall-clock minutes set the pace, so the windows are short: PauseRegression
//! compares the last minute's longest pause (`window = "1m"`) with the p90 of
//! the minute maxima of the 3 minutes before (`trailing`), without each run's
//! first 30 s (`warmup`), and needs 2 such minutes (`min_baseline`). With
//! `B` the first minute after the first run's warm-up, the first run's
//! requests start until 5 s before `B+2`, the second's from just after
//! `B+2` until 5 s before `B+3` (`wl.untilMs`: however long a JVM takes to
//! start on a loaded machine, no request spills into the next minute). The
//! start-up minute, and every minute up to `B+1`, has too little baseline to
//! compare with; `B+2` has the second run's long pauses against `B` and
//! `B+1`. Every wait polls for its condition: the alerts while `B+2` is the
//! last complete minute, the panel once Prometheus holds `B+3` (no
//! requests): 5 to 6 minutes in all.
//!
//! Asserted: `PauseRegression` and `GcDrivenTail` fire for the cache change,
//! in the agent and in Prometheus, and neither fired before the second run;
//! Alertmanager holds each once per `source`; the dashboard's headline panel,
//! its exact queries run over the range, draws each minute's max pause and
//! p99.9 at that minute, as the agent's `/api/v1/minutes` gives them, and no
//! p99.9 for the minute without requests.
//!
//! Needs `java` and `javac`, Prometheus and Alertmanager (CI installs them);
//! without one the test is skipped (`common::skip`) and returns.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{toml_string, Children, Prometheus};
use serde_json::Value;

use crate::common;

/// The whole test, with room for a slow machine.
const BUDGET: Duration = Duration::from_secs(420);
/// Requests per second, in both runs.
const RATE: &str = "200";
/// PauseRegression's warm-up in the configuration below, in seconds.
const WARMUP_SECONDS: i64 = 30;
/// The alerts the cache change must fire.
const ALERTS: [&str; 2] = ["PauseRegression", "GcDrivenTail"];
/// Printed from the agent when the test fails.
const MAIN_SERIES: [&str; 5] = [
    "pausewatch_gc_pause_max_seconds",
    "pausewatch_request_latency_p999_seconds",
    "pausewatch_jvm_start_time_seconds",
    "pausewatch_alerts",
    "pausewatch_errors_total",
];

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The instant at `unix` seconds (now if that has passed).
fn instant_at(unix: f64) -> Instant {
    Instant::now() + Duration::from_secs_f64((unix - unix_now()).max(0.0))
}

/// The agent's configuration: the GC log, the runs' access logs, a 100 ms
/// SLO, short PauseRegression windows, alerts to Alertmanager.
fn agent_config(dir: &Path, port: u16, alertmanager: u16) -> String {
    let gc_log = toml_string(&dir.join("gc.log"));
    format!(
        r#"listen = "127.0.0.1:{port}"
checkpoint_dir = {checkpoints}
poll_interval = "100ms"

[[gc_log]]
path = {gc_log}
labels = {{ service = "pricing" }}

[[access_log]]
path = {access}
format = "json"
time_field = "start"
duration_field = "duration_ms"
duration_unit = "ms"
gc_log = {gc_log}

[correlation]
slo = "300ms"
finalize_after = "2s"

[alerts]
alertmanager_url = "http://127.0.0.1:{alertmanager}"
evaluation_interval = "1s"
resend_interval = "5s"

[alerts.pause_regression]
statistic = "max"
window = "1m"
trailing = "3m"
warmup = "{WARMUP_SECONDS}s"
min_baseline = "2m"
"#,
        checkpoints = toml_string(&dir.join("checkpoints")),
        access = toml_string(&dir.join("access-*.jsonl")),
    )
}

/// Each run's service: `wl.*` system properties of RequestWorkload. The
/// first keeps a small cache and per-request sessions for 0.2 s, which die
/// young: young collections of a few ms and no full GC, so its minutes
/// stay far below the SLO even when a loaded machine stretches its pauses
/// tenfold. The second holds 3.3 million small entries and keeps sessions
/// 5 s, which fill the old generation: full collections of the whole cache
/// every 10 to 20 s, several hundred ms on an idle machine, seconds on a
/// loaded one.
const SMALL_CACHE: &[&str] = &["-Dwl.live=0.1", "-Dwl.sessionSec=0.2"];
const LARGE_CACHE: &[&str] = &["-Dwl.live=0.2", "-Dwl.minObj=16", "-Dwl.maxObj=48"];
/// How long before its minute ends a run schedules its last request: the
/// slowest requests (a full GC on a loaded machine) must end in that minute.
const LAST_REQUEST_MARGIN: f64 = 5.0;

/// One run of the service, scheduling requests until `until` (Unix
/// seconds), however long its JVM takes to start and fill its cache.
fn service_run(classes: &Path, dir: &Path, run: u32, cache: &[&str], until: f64) -> Command {
    let mut command = Command::new("java");
    command
        .current_dir(dir)
        // A fixed heap: no resizing full GCs at start-up, whose pauses
        // would overlap the first requests.
        .args(["-XX:+UseParallelGC", "-Xms512m", "-Xmx512m", "-Xmn40m"])
        .args(cache)
        .arg(format!("-Dwl.untilMs={}", (until * 1e3) as i64))
        .arg("-Xlog:gc*,safepoint:file=gc.log:time,uptime,level,tags")
        .arg("-cp")
        .arg(classes)
        .arg("RequestWorkload")
        .arg(format!("{:.1}", until - unix_now()))
        .arg(RATE)
        .arg(format!("access-{run}.jsonl"))
        .arg(format!("gc-events-{run}.jsonl"))
        .arg(format!("mxbeans-{run}.json"));
    command
}

/// Runs the service from now until its last requests, `LAST_REQUEST_MARGIN`
/// before the minute `minute_end` (Unix seconds) ends. Waits for it to end.
fn run_service(
    children: &mut Children,
    deadline: Instant,
    classes: &Path,
    dir: &Path,
    (run, cache): (u32, &[&str]),
    minute_end: f64,
) {
    let until = minute_end - LAST_REQUEST_MARGIN;
    let seconds = until - unix_now();
    assert!(seconds > 10.0, "run {run}: only {seconds:.1} s left");
    eprintln!("run {run}: {cache:?} for {seconds:.1} s");
    let name = format!("service-{run}");
    children.spawn_job(&name, &mut service_run(classes, dir, run, cache, until));
    children.wait_until(deadline, &format!("run {run} to end"), |children| {
        children.exited(&name).is_some()
    });
    let status = children.exited(&name).expect("ended");
    assert!(status.success(), "run {run} failed: {status}");
    eprintln!(
        "run {run} ended {:.1} s before its minute ended",
        minute_end - unix_now()
    );
}

/// Alertmanager's active alerts named `alertname`, by `source` label.
fn alertmanager_alerts(port: u16, alertname: &str) -> BTreeMap<String, Vec<Value>> {
    let mut by_source: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let Ok(body) = common::http_get_ok(port, "/api/v2/alerts?active=true") else {
        return by_source;
    };
    let alerts: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
    for alert in alerts
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == alertname)
    {
        let source = alert["labels"]["source"].as_str().unwrap_or("").to_string();
        by_source.entry(source).or_default().push(alert);
    }
    by_source
}

/// When each of the agent's alerts named `alertname` became active (Unix seconds).
fn agent_alerts_since(port: u16, alertname: &str) -> Vec<f64> {
    let body = common::http_get_ok(port, "/api/v1/alerts").expect("/api/v1/alerts");
    let json: Value = serde_json::from_str(&body).expect("alerts JSON");
    json["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["alertname"] == alertname)
        .map(|a| {
            let since = a["active_since"].as_str().expect("active_since");
            chrono::DateTime::parse_from_rfc3339(since)
                .expect("RFC 3339")
                .timestamp() as f64
        })
        .collect()
}

#[test]
fn a_cache_change_fires_both_engines_and_the_panel_draws_each_minute() {
    if !common::java_or_skip() {
        return;
    }
    let Some(prometheus) = common::prometheus_or_skip() else {
        return;
    };
    let Some(alertmanager) = common::alertmanager_or_skip() else {
        return;
    };
    let started = Instant::now();
    let deadline = started + BUDGET;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let classes = dir.join("classes");
    common::compile_workloads(&classes);
    let ports = common::free_ports(3);
    let (agent_port, prom_port, am_port) = (ports[0], ports[1], ports[2]);

    let mut children = Children::new(dir);
    children.dump_on_failure(&[agent_port], &MAIN_SERIES);
    children.spawn_service(
        "alertmanager",
        &mut common::alertmanager_command(&alertmanager, dir, am_port),
    );
    let config = dir.join("pausewatch.toml");
    std::fs::write(&config, agent_config(dir, agent_port, am_port)).unwrap();
    children.spawn_service("agent", &mut common::run_command(&config));

    // The rules for this configuration, as an operator would render them.
    let rendered = Command::new(common::PAUSEWATCH)
        .args(["rules", "--config"])
        .arg(&config)
        .output()
        .expect("pausewatch rules");
    assert!(
        rendered.status.success(),
        "pausewatch rules: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let rules = dir.join("pausewatch-rules.yml");
    std::fs::write(&rules, &rendered.stdout).unwrap();
    let prom = Prometheus::start(
        &mut children,
        &prometheus,
        prom_port,
        &[agent_port],
        &[rules],
        Some(am_port),
    );
    children.wait_until(deadline, "the agent serving /metrics", |_| {
        common::serves_metrics(agent_port)
    });
    prom.wait_ready(&mut children, deadline);
    children.wait_until(deadline, "Alertmanager ready", |_| {
        matches!(common::http_get(am_port, "/-/ready"), Ok((200, _)))
    });

    // The first minute wholly after the first run's warm-up (its JVM starts
    // within a second or two of now).
    let launched = unix_now();
    let first_minute = launched.div_euclid(60.0) * 60.0;
    let baseline_start = ((launched + WARMUP_SECONDS as f64 + 2.0) / 60.0).ceil() * 60.0;
    let regression_minute = baseline_start + 120.0;
    let quiet_minute = regression_minute + 60.0;
    run_service(
        &mut children,
        deadline,
        &classes,
        dir,
        (1, SMALL_CACHE),
        regression_minute,
    );
    // The second run starts inside the regression minute, so that its
    // warm-up leaves the baseline minutes alone.
    children.wait_until(deadline, "the regression minute", |_| {
        unix_now() >= regression_minute + 0.5
    });
    let second_run = unix_now();
    run_service(
        &mut children,
        deadline,
        &classes,
        dir,
        (2, LARGE_CACHE),
        quiet_minute,
    );

    // Both alerts from both engines in Alertmanager, while the regression
    // minute is the last complete one: PauseRegression resolves once the
    // quiet minute is. What Alertmanager holds is logged as it changes.
    let mut seen = String::new();
    let fired = children.poll_until(deadline.min(instant_at(quiet_minute + 60.0)), |_| {
        let sources: Vec<(&str, Vec<String>)> = ALERTS
            .iter()
            .map(|name| {
                (
                    *name,
                    alertmanager_alerts(am_port, name).into_keys().collect(),
                )
            })
            .collect();
        let now = format!("{sources:?}");
        if now != seen {
            eprintln!(
                "{:+.1} s after the regression minute, in Alertmanager: {now}",
                unix_now() - regression_minute
            );
            seen = now;
        }
        sources
            .iter()
            .all(|(_, sources)| sources == &["agent", "prometheus"])
    });
    let minutes = common::agent_minutes(agent_port);
    let start = minutes.keys().next().copied().expect("minutes");
    for (minute, figures) in &minutes {
        eprintln!(
            "minute {}: max pause {:.1} ms, p99.9 {:?} ms",
            chrono::DateTime::from_timestamp(*minute, 0).expect("a minute"),
            figures.pause_max_seconds * 1e3,
            figures.p999_seconds.map(|s| s * 1e3)
        );
    }
    assert!(
        fired,
        "PauseRegression and GcDrivenTail did not both reach Alertmanager from both sources \
         while the regression minute was the last complete one: {seen}"
    );
    let gc_log = dir.join("gc.log").display().to_string();
    let target = format!("127.0.0.1:{agent_port}");
    for name in ALERTS {
        let by_source = alertmanager_alerts(am_port, name);
        eprintln!("{name} in Alertmanager: {by_source:#?}");
        assert_eq!(
            by_source.keys().collect::<Vec<_>>(),
            ["agent", "prometheus"],
            "{name}"
        );
        for (source, alerts) in &by_source {
            assert_eq!(alerts.len(), 1, "{name} from {source}: {alerts:#?}");
            let alert = &alerts[0];
            // The agent names the JVM by its log; Prometheus names the
            // target, and the JVM too where the rule is per JVM.
            let (label, expected) = match source.as_str() {
                "agent" => ("log", &gc_log),
                _ => ("instance", &target),
            };
            assert_eq!(alert["labels"][label], expected.as_str(), "{alert}");
            assert_eq!(alert["labels"]["service"], "pricing", "{alert}");
            let starts_at =
                chrono::DateTime::parse_from_rfc3339(alert["startsAt"].as_str().expect("startsAt"))
                    .expect("RFC 3339")
                    .timestamp() as f64;
            assert!(
                starts_at >= second_run,
                "{name} from {source} started before the cache change: {alert}"
            );
        }
        // Neither engine fired before the cache change: not for the first
        // run's start-up pause, not on too little baseline.
        for since in agent_alerts_since(agent_port, name) {
            assert!(
                since >= second_run,
                "the agent's {name} active since {since}"
            );
        }
        let before = format!("ALERTS{{alertname=\"{name}\"}}");
        let history = prom
            .query_range(&before, first_minute as i64, second_run as i64, 1)
            .expect("ALERTS history");
        assert!(
            history.is_empty(),
            "Prometheus's {name} before the cache change: {history:?}"
        );
    }

    // The headline panel, once Prometheus holds the agent's figures of the
    // minute without requests.
    let quiet_stamp =
        format!("timestamp(pausewatch_gc_pause_max_seconds{{instance=\"{target}\"}})");
    children.wait_until(deadline, "the quiet minute in Prometheus", |_| {
        prom.query_one(&quiet_stamp)
            .ok()
            .flatten()
            .is_some_and(|stamp| stamp >= quiet_minute)
    });
    let points = common::check_headline_panel(&prom, &[agent_port], start, quiet_minute as i64);
    eprintln!(
        "trial.rs: {points} panel points drawn at their minute, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
