//! A service without access logs: the agent scrapes the application's own
//! Prometheus histogram and derives per-minute latency quantiles from the
//! bucket deltas. The test serves the histogram and controls every bucket.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::sample;

mod common;

/// Serves a Micrometer-style histogram; every scrape adds 10 requests at or
/// under 100 ms and 1 between 100 and 500 ms. Returns the port.
fn serve_histogram(scrapes: Arc<AtomicU64>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
            }
            let k = scrapes.fetch_add(1, Ordering::SeqCst) + 1;
            let (fast, slow) = (10 * k, k);
            let labels = r#"method="GET",uri="/price",status="200""#;
            let body = format!(
                "# TYPE http_server_requests_seconds histogram\n\
                 http_server_requests_seconds_bucket{{{labels},le=\"0.1\"}} {fast}\n\
                 http_server_requests_seconds_bucket{{{labels},le=\"0.5\"}} {total}\n\
                 http_server_requests_seconds_bucket{{{labels},le=\"+Inf\"}} {total}\n\
                 http_server_requests_seconds_count{{{labels}}} {total}\n\
                 http_server_requests_seconds_sum{{{labels}}} 1.0\n",
                total = fast + slow
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn agent_turns_a_scraped_histogram_into_minute_quantiles() {
    let scrapes = Arc::new(AtomicU64::new(0));
    let app = serve_histogram(scrapes.clone());
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{dir}/checkpoint\"\n\
             [[gc_log]]\npath = \"{dir}/gc.log\"\n\
             [[latency_histogram]]\nurl = \"http://127.0.0.1:{app}/actuator/prometheus\"\n\
             interval = \"1s\"\nmatchers = {{ uri = \"/price\" }}\n",
            dir = dir.path().display()
        ),
    );
    // The first minute boundary sets the baseline, the second completes a
    // minute: up to two minutes of real time.
    let metrics = agent.metrics_when(Duration::from_secs(150), |m| {
        sample(m, "pausewatch_request_latency_p99_seconds").is_some()
    });
    // A minute of k scrapes holds 10k requests in (0, 100 ms] and k in
    // (100 ms, 500 ms]: whatever k, the p99 rank 0.99 * 11k = 10.89k falls
    // 0.89k into the second bucket, so p99 = 0.1 + 0.4 * 0.89 = 0.456 s; the
    // p99.9 rank 10.989k gives 0.1 + 0.4 * 0.989 = 0.4956 s.
    let p99 = sample(&metrics, "pausewatch_request_latency_p99_seconds").unwrap();
    let p999 = sample(&metrics, "pausewatch_request_latency_p999_seconds").unwrap();
    assert!((p99 - 0.456).abs() < 1e-9, "p99 {p99}");
    assert!((p999 - 0.4956).abs() < 1e-9, "p99.9 {p999}");
    let requests = sample(&metrics, "pausewatch_requests_total").unwrap();
    assert!(
        requests > 0.0 && requests % 11.0 == 0.0,
        "whole scrapes of 11 requests: {requests}"
    );
    assert!(scrapes.load(Ordering::SeqCst) >= 60);
    // No request-level attribution from a histogram.
    assert_eq!(
        sample(
            &metrics,
            "pausewatch_request_latency_p999_without_stop_affected_seconds"
        ),
        None
    );
}
