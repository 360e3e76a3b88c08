//! A service without access logs: the agent scrapes the application's own
//! Prometheus histogram and derives per-minute latency quantiles from the
//! bucket deltas. The histogram is served by Prometheus' own Go client
//! (client_golang, tests/workload/go/histogram/main.go), which observes the
//! same known latencies before every scrape; the agent's quantiles must be
//! the ones this test computes from those latencies.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::sample;

use crate::common;

/// Per scrape: ten requests of 40 ms and one of 300 ms.
const LATENCIES: [f64; 11] = [
    0.04, 0.04, 0.04, 0.04, 0.04, 0.04, 0.04, 0.04, 0.04, 0.04, 0.3,
];
/// client_golang's `prometheus.DefBuckets`, the Go program's buckets.
const DEF_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The `q` quantile of `latencies` as a histogram of `bounds` gives it:
/// Prometheus' `histogram_quantile`, linear inside the bucket the rank
/// falls in. Any number of whole scrapes has the same quantiles.
fn histogram_quantile(latencies: &[f64], bounds: &[f64], q: f64) -> f64 {
    let rank = q * latencies.len() as f64;
    let mut lower = 0.0;
    for &upper in bounds {
        let below = latencies.iter().filter(|&&l| l <= lower).count() as f64;
        let within = latencies
            .iter()
            .filter(|&&l| l > lower && l <= upper)
            .count() as f64;
        if below + within >= rank {
            return lower + (upper - lower) * (rank - below) / within;
        }
        lower = upper;
    }
    panic!("rank {rank} above the last bucket");
}

/// The Go program, serving; killed when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds and starts the client_golang service; its port.
fn serve_histogram() -> Option<(Service, u16)> {
    if !common::succeeds("go", &["version"]) {
        common::skip("`go` is not installed (Debian: golang-go)");
        return None;
    }
    let client = "/usr/share/gocode/src/github.com/prometheus/client_golang";
    if !std::path::Path::new(client).is_dir() {
        common::skip("apt-get install golang-github-prometheus-client-golang-dev");
        return None;
    }
    let binary = common::go_build("histogram/main.go", true);
    let latencies: Vec<String> = LATENCIES.iter().map(f64::to_string).collect();
    let mut child = Command::new(binary)
        .arg(latencies.join(","))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("port {line:?}"));
    Some((Service(child), port))
}

#[test]
fn agent_turns_a_client_golang_histogram_into_minute_quantiles() {
    let Some((_service, app)) = serve_histogram() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{dir}/checkpoint\"\n\
             [[gc_log]]\npath = \"{dir}/gc.log\"\n\
             [[latency_histogram]]\nurl = \"http://127.0.0.1:{app}/metrics\"\n\
             interval = \"1s\"\nmatchers = {{ uri = \"/price\" }}\n",
            dir = dir.path().display()
        ),
    );
    // The first minute boundary sets the baseline, the second completes a
    // minute: up to two minutes of real time.
    let metrics = agent.metrics_when(Duration::from_secs(150), |m| {
        sample(m, "pausewatch_request_latency_p99_seconds").is_some()
    });
    // By hand: the p99 rank 0.99 * 11 = 10.89 falls 0.89 into the one
    // request of (250 ms, 500 ms], p99 = 0.25 + 0.25 * 0.89 = 0.4725 s;
    // p99.9: 0.25 + 0.25 * 0.989 = 0.49725 s.
    let p99 = histogram_quantile(&LATENCIES, &DEF_BUCKETS, 0.99);
    let p999 = histogram_quantile(&LATENCIES, &DEF_BUCKETS, 0.999);
    assert!((p99 - 0.4725).abs() < 1e-12 && (p999 - 0.49725).abs() < 1e-12);
    let seen_p99 = sample(&metrics, "pausewatch_request_latency_p99_seconds").unwrap();
    let seen_p999 = sample(&metrics, "pausewatch_request_latency_p999_seconds").unwrap();
    assert!((seen_p99 - p99).abs() < 1e-9, "p99 {seen_p99}, not {p99}");
    assert!(
        (seen_p999 - p999).abs() < 1e-9,
        "p99.9 {seen_p999}, not {p999}"
    );
    // Whole scrapes of the /price route only (/health's 9 s requests are
    // matched out).
    let requests = sample(&metrics, "pausewatch_requests_total").unwrap();
    let per_scrape = LATENCIES.len() as f64;
    assert!(
        requests > 0.0 && requests % per_scrape == 0.0,
        "whole scrapes of {per_scrape} requests: {requests}"
    );
    // No request-level attribution from a histogram.
    assert_eq!(
        sample(
            &metrics,
            "pausewatch_request_latency_p999_without_stop_affected_seconds"
        ),
        None
    );
}
