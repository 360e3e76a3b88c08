//! A real Prometheus scrapes a running agent, and what Prometheus stored is
//! checked against independent truth: the JVM's own MXBean counts and a plain
//! reading of the log file.
//!
//! The agent follows a file that `pausewatch replay` writes live (a real JDK 17
//! G1 log, retimed so its minutes are current); Prometheus scrapes the agent
//! every second through its OpenMetrics parser; the test then asks Prometheus,
//! through its HTTP API, for the figures a dashboard would show.
//!
//! Needs `/usr/bin/prometheus` (Debian's `prometheus` package, which CI
//! installs) or `prometheus` on `PATH`; without it the test is skipped (`common::skip`)
//! and returns.

use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{sample_value, toml_string, url_encode, Children, MxBeans, Prometheus};
use serde_json::Value;

use crate::common;

const FIXTURE: &str = "tests/fixtures/jvm/jdk17-g1-concurrent";
const BEAN: &str = "G1 Young Generation";
/// More than two scrape intervals: a value unchanged this long has been scraped.
const STABLE_FOR: Duration = Duration::from_millis(2500);

fn fixture(name: &str) -> PathBuf {
    common::root().join(FIXTURE).join(name)
}

/// The agent's main series, printed when the test fails.
const MAIN_SERIES: [&str; 4] = [
    "jvm_gc_pause_seconds_count",
    "pausewatch_safepoints_total",
    "pausewatch_log_",
    "pausewatch_errors_total",
];

#[test]
fn real_prometheus_scrapes_the_agent() {
    let Some(prometheus) = common::prometheus_or_skip() else {
        return;
    };
    let started = Instant::now();

    // Independent truth: the JVM's bean, and the log read as plain text.
    let bean = MxBeans::read(&fixture("mxbeans.json")).bean(BEAN).clone();
    let (bean_count, bean_time_ms) = (bean.count, bean.time_ms);
    let source = fixture("gc.log");
    let log_text = std::fs::read_to_string(&source).expect("read the fixture log");
    let log_lines = log_text.bytes().filter(|&b| b == b'\n').count() as f64;
    let safepoint_lines = log_text.matches("Safepoint \"").count() as f64;
    assert!(
        bean_count > 0 && safepoint_lines > 0.0,
        "fixture lost its pauses"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let ports = common::free_ports(2);
    let (agent_port, prom_port) = (ports[0], ports[1]);
    let gc_log = dir.join("gc.log");
    File::create(&gc_log).expect("create the followed log");

    let agent_config = dir.join("pausewatch.toml");
    let agent_toml = [
        format!("listen = \"127.0.0.1:{agent_port}\""),
        format!("checkpoint_dir = {}", toml_string(&dir.join("checkpoint"))),
        "poll_interval = \"100ms\"".to_string(),
        String::new(),
        "[[gc_log]]".to_string(),
        format!("path = {}", toml_string(&gc_log)),
        "start_at = \"beginning\"".to_string(),
        "labels = { service = \"checkout\" }".to_string(),
    ];
    std::fs::write(&agent_config, agent_toml.join("\n") + "\n").unwrap();

    let mut children = Children::new(&dir);
    children.dump_on_failure(&[agent_port], &MAIN_SERIES);
    children.spawn_service("agent", &mut common::run_command(&agent_config));
    let prom = Prometheus::start(
        &mut children,
        &prometheus,
        prom_port,
        &[agent_port],
        &[],
        None,
    );

    children.wait_until(
        Instant::now() + Duration::from_secs(10),
        "agent serving /metrics",
        |_| common::serves_metrics(agent_port),
    );
    prom.wait_ready(&mut children, Instant::now() + Duration::from_secs(30));
    // Prometheus applies its targets a few seconds after start. Wait for a
    // scrape of the still empty log, so that the counters are seen growing and
    // `rate()` has two different samples to work with.
    let lines_query = "sum(pausewatch_log_lines_total{job=\"pausewatch\",service=\"checkout\"})";
    children.wait_until(
        Instant::now() + Duration::from_secs(20),
        "a first scrape of the empty log",
        |_| matches!(prom.query_one(lines_query), Ok(Some(v)) if v == 0.0),
    );

    children.spawn_job(
        "replay",
        &mut common::replay_command(&source, &gc_log, &["--speed", "4", "--retime"]),
    );

    // Until the replay is over and Prometheus holds the final state: every line
    // read, and the figures unchanged for more than two scrape intervals.
    let young = format!("gc=\"{BEAN}\",service=\"checkout\",job=\"pausewatch\"");
    let count_query = format!("sum(jvm_gc_pause_seconds_count{{{young}}})");
    let safepoints_query = "sum(pausewatch_safepoints_total{job=\"pausewatch\"})";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    let mut stable_since = Instant::now();
    loop {
        children.assert_alive();
        let replayed = match children.exited("replay") {
            Some(status) => {
                assert!(status.success(), "pausewatch replay failed: {status}");
                true
            }
            None => false,
        };
        let snapshot = (
            prom.query_one(lines_query).ok().flatten(),
            prom.query_one(&count_query).ok().flatten(),
            prom.query_one(safepoints_query).ok().flatten(),
        );
        if last != Some(snapshot) {
            last = Some(snapshot);
            stable_since = Instant::now();
        }
        if replayed && snapshot.0 == Some(log_lines) && stable_since.elapsed() >= STABLE_FOR {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for Prometheus to hold the final state; last (lines, {BEAN} \
             pauses, safepoints) = {last:?}, expected lines {log_lines}, replay done: {replayed}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let replayed_text = std::fs::read_to_string(&gc_log).expect("read the replayed log");
    assert_eq!(
        replayed_text.lines().count(),
        log_text.lines().count(),
        "the replay wrote every line"
    );

    // Prometheus scraped the agent without error, through its OpenMetrics parser.
    let up = prom.query("up{job=\"pausewatch\"}").unwrap();
    assert_eq!(up.len(), 1, "one pausewatch target: {up:?}");
    assert_eq!(sample_value(&up[0]), 1.0, "target up: {up:?}");
    assert_eq!(
        up[0]["metric"]["instance"],
        format!("127.0.0.1:{agent_port}")
    );
    let targets = prom.api("/api/v1/targets").unwrap();
    let active: Vec<&Value> = targets["activeTargets"]
        .as_array()
        .expect("activeTargets")
        .iter()
        .filter(|t| t["labels"]["job"] == "pausewatch")
        .collect();
    assert_eq!(active.len(), 1, "{targets}");
    assert_eq!(active[0]["health"], "up", "{}", active[0]);
    assert_eq!(active[0]["lastError"], "", "scrape error: {}", active[0]);
    assert_eq!(
        active[0]["scrapeUrl"],
        format!("http://127.0.0.1:{agent_port}/metrics")
    );
    // Units exist only in OpenMetrics: a `seconds` unit proves Prometheus
    // negotiated and parsed the OpenMetrics exposition, not the 0.0.4 text one.
    let match_target = url_encode("{job=\"pausewatch\"}");
    for (family, kind, unit) in [
        ("jvm_gc_pause_seconds", "histogram", "seconds"),
        ("pausewatch_safepoints", "counter", ""),
        ("pausewatch_build_info", "gauge", ""),
    ] {
        let metadata = prom
            .api(&format!(
                "/api/v1/targets/metadata?match_target={match_target}&metric={family}"
            ))
            .unwrap();
        let entry = metadata
            .as_array()
            .and_then(|entries| entries.first())
            .unwrap_or_else(|| panic!("no metadata for {family}: {metadata}"));
        assert_eq!(entry["type"], kind, "{family}: {entry}");
        assert_eq!(entry["unit"], unit, "{family}: {entry}");
    }

    // The JVM's own count of young collections.
    let count = prom.value(&count_query);
    assert_eq!(
        count, bean_count as f64,
        "{count_query} vs the {BEAN} MXBean"
    );
    let inf_query = format!("sum(jvm_gc_pause_seconds_bucket{{le=\"+Inf\",{young}}})");
    let inf = prom.value(&inf_query);
    assert_eq!(inf, bean_count as f64, "{inf_query} vs the {BEAN} MXBean");
    // ... and its accumulated time, within max(1 %, 1 ms per pause).
    let sum_query = format!("sum(jvm_gc_pause_seconds_sum{{{young}}})");
    let seconds = prom.value(&sum_query);
    let bean_seconds = bean_time_ms as f64 / 1000.0;
    let tolerance = (0.01 * bean_seconds).max(0.001 * bean_count as f64);
    assert!(
        (seconds - bean_seconds).abs() <= tolerance,
        "{sum_query} = {seconds} s, the {BEAN} MXBean says {bean_seconds} s (tolerance {tolerance} s)"
    );

    // The log read as text: its safepoint lines and its lines.
    let safepoints = prom.value(safepoints_query);
    assert_eq!(
        safepoints, safepoint_lines,
        "{safepoints_query} vs `Safepoint \"` lines"
    );
    let lines = prom.value(lines_query);
    assert_eq!(lines, log_lines, "{lines_query} vs the log's line count");

    // Every series carries the configured and the scrape labels.
    let expected_log = gc_log.display().to_string();
    for family in [
        "jvm_gc_pause_seconds_count",
        "pausewatch_safepoints_total",
        "pausewatch_log_lines_total",
    ] {
        let series = prom
            .query(&format!("{family}{{job=\"pausewatch\"}}"))
            .unwrap();
        assert!(!series.is_empty(), "no {family} series");
        let all = prom.query(family).unwrap();
        assert_eq!(
            series.len(),
            all.len(),
            "{family} series without job: {all:?}"
        );
        for sample in &series {
            let labels = &sample["metric"];
            assert_eq!(labels["service"], "checkout", "{sample}");
            assert_eq!(labels["job"], "pausewatch", "{sample}");
            assert_eq!(
                labels["instance"],
                format!("127.0.0.1:{agent_port}"),
                "{sample}"
            );
            assert_eq!(labels["log"], expected_log.as_str(), "{sample}");
        }
    }
    let build = prom
        .query("pausewatch_build_info{job=\"pausewatch\"}")
        .unwrap();
    assert_eq!(build.len(), 1, "pausewatch_build_info: {build:?}");
    assert_eq!(sample_value(&build[0]), 1.0);
    assert_eq!(build[0]["metric"]["version"], env!("CARGO_PKG_VERSION"));

    // Prometheus accepts the histogram for quantiles: the counters grew while
    // it scraped, so the rate is positive and the quantile a number.
    let quantile_query =
        "histogram_quantile(0.99, sum by (le) (rate(jvm_gc_pause_seconds_bucket[1m])))";
    let p99 = prom.value(quantile_query);
    assert!(
        p99.is_finite() && p99 > 0.0 && p99 <= 10.0,
        "{quantile_query} = {p99}"
    );

    eprintln!(
        "prometheus.rs: {count} {BEAN} pauses ({seconds:.6} s), {safepoints} safepoints, \
         {lines} lines, p99 {p99:.4} s; {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
