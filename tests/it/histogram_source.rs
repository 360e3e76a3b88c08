//! The histogram source end to end: this test serves a Micrometer-style
//! histogram over HTTP on 127.0.0.1, changes it between scrapes as a script
//! says, and scrapes it with `fetch` + `parse_buckets` +
//! `MinuteAccumulator::observe` at injected times, 15 s apart. The
//! per-minute quantiles are checked against values computed by hand.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use pausewatch::model::correlate::LatencySummary;
use pausewatch::sources::latency_histogram::{
    fetch, parse_buckets, HistogramSourceConfig, MinuteAccumulator,
};

const METRIC: &str = "http_server_requests_seconds";
const BOUNDS: [f64; 9] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// What the served endpoint answers.
#[derive(Clone)]
enum Answer {
    Ok(String),
    Status(u16),
}

struct Server {
    port: u16,
    answer: Arc<Mutex<Answer>>,
    /// The request heads received, in order.
    requests: Arc<Mutex<Vec<String>>>,
}

/// A tiny HTTP/1.1 server: `/metrics` answers the current `Answer`, `/hang`
/// accepts and answers nothing for 3 s, `/stall` sends the head and part of
/// the body, then nothing for 3 s. One thread per connection; each
/// connection serves one request and closes.
fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = Arc::new(Mutex::new(Answer::Status(503)));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (shared_answer, shared_requests) = (answer.clone(), requests.clone());
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (answer, requests) = (shared_answer.clone(), shared_requests.clone());
            thread::spawn(move || handle(stream, &answer, &requests));
        }
    });
    Server {
        port,
        answer,
        requests,
    }
}

fn handle(mut stream: TcpStream, answer: &Mutex<Answer>, requests: &Mutex<Vec<String>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    requests.lock().unwrap().push(head.clone());
    if head.starts_with("GET /hang ") {
        thread::sleep(Duration::from_secs(3));
        return;
    }
    if head.starts_with("GET /stall ") {
        // The head and part of the body, then nothing.
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nlat_bucket{le=\"+Inf\"} 1\n",
        );
        thread::sleep(Duration::from_secs(3));
        return;
    }
    let current = answer.lock().unwrap().clone();
    let (status, body) = match current {
        Answer::Ok(body) => ("200 OK".to_string(), body),
        Answer::Status(code) => (
            format!("{code} Trouble"),
            format!("status {code} from the test server\n"),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain;version=0.0.4;charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

fn config(port: u16, path: &str, timeout: Duration) -> HistogramSourceConfig {
    HistogramSourceConfig {
        url: format!("http://127.0.0.1:{port}{path}"),
        metric: METRIC.to_string(),
        matchers: [("uri".to_string(), "/price".to_string())]
            .into_iter()
            .collect(),
        timeout,
        client: Default::default(),
    }
}

/// The application's timer: per (uri, status) non-cumulative bucket counts,
/// the last one for `+Inf`.
struct App {
    series: BTreeMap<(&'static str, &'static str), [u64; BOUNDS.len() + 1]>,
}

impl App {
    fn new() -> App {
        App {
            series: BTreeMap::new(),
        }
    }

    fn record(&mut self, uri: &'static str, status: &'static str, seconds: f64, requests: u64) {
        let index = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        self.series
            .entry((uri, status))
            .or_insert([0; BOUNDS.len() + 1])[index] += requests;
    }

    fn restart(&mut self) {
        self.series.clear();
    }

    /// The exposition as Micrometer 1.x (Prometheus simpleclient) writes it.
    fn render(&self) -> String {
        let mut text = String::from(
            "# HELP jvm_threads_live_threads The current number of live threads\n\
             # TYPE jvm_threads_live_threads gauge\n\
             jvm_threads_live_threads 42.0\n\
             # HELP http_server_requests_seconds  \n\
             # TYPE http_server_requests_seconds histogram\n",
        );
        for ((uri, status), counts) in &self.series {
            let labels = format!("exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"{status}\",uri=\"{uri}\"");
            let mut cumulative = 0;
            for (index, count) in counts.iter().enumerate() {
                cumulative += count;
                let le = BOUNDS
                    .get(index)
                    .map_or("+Inf".to_string(), |b| format!("{b:?}"));
                text.push_str(&format!(
                    "{METRIC}_bucket{{{labels},le=\"{le}\",}} {cumulative}.0\n"
                ));
            }
            text.push_str(&format!("{METRIC}_count{{{labels},}} {cumulative}.0\n"));
            text.push_str(&format!("{METRIC}_sum{{{labels},}} 1.5\n"));
        }
        text.push_str("# HELP http_server_requests_seconds_max  \n# TYPE http_server_requests_seconds_max gauge\n");
        for (uri, status) in self.series.keys() {
            text.push_str(&format!(
                "{METRIC}_max{{method=\"GET\",status=\"{status}\",uri=\"{uri}\",}} 0.7\n"
            ));
        }
        text
    }
}

#[track_caller]
fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0),
        "{actual} != {expected}"
    );
}

#[track_caller]
fn assert_summary(
    actual: &LatencySummary,
    count: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
) {
    assert_eq!(actual.count, count, "{actual:?}");
    assert_close(actual.p50_seconds, p50);
    assert_close(actual.p90_seconds, p90);
    assert_close(actual.p99_seconds, p99);
    assert_close(actual.p999_seconds, p999);
    assert_close(actual.max_seconds, max);
}

fn time(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, h, m, s).unwrap()
}

#[test]
fn scripted_minutes_over_http() {
    let server = serve();
    let config = config(server.port, "/metrics", Duration::from_secs(5));
    let mut app = App::new();
    let mut accumulator = MinuteAccumulator::new();
    let mut emitted = Vec::new();
    let mut failed_scrapes = 0;
    // Scrapes at 10:00:05, 10:00:20, ..., 10:05:05; the requests recorded
    // before a scrape are those of the 15 s ending at it.
    for i in 0..21i64 {
        let at = time(10, 0, 5) + chrono::Duration::seconds(15 * i);
        // The minute whose delta the 15 s ending at this scrape fall in: 10:01
        // runs from the last scrape at or before 10:01:00 (10:00:50) to the last
        // at or before 10:02:00 (10:01:50), so it takes scrapes 4..=7.
        let (minute, quarter) = (i / 4, i % 4);
        app.record("/health", "200", 0.002, 3); // never selected
        match (i, minute, quarter) {
            (0, ..) => app.record("/price", "200", 0.003, 500), // before the agent
            // Minute 10:00 (no baseline, skipped): 30 quick requests.
            (_, 0, _) => app.record("/price", "200", 0.003, 10),
            // Minute 10:01: 100 requests, one slow: 99 at 20 ms, 1 at 700 ms.
            (_, 1, 0) | (_, 1, 1) | (_, 1, 3) => app.record("/price", "200", 0.02, 25),
            (_, 1, 2) => {
                app.record("/price", "200", 0.02, 24);
                app.record("/price", "200", 0.7, 1);
            }
            // Minute 10:02, a bad minute: 950 at 8 ms, 40 at 200 ms, 10 over
            // 2.5 s (5 of them errors, a second series of the same uri).
            (_, 2, 0) | (_, 2, 1) => app.record("/price", "200", 0.008, 475),
            (_, 2, 2) => app.record("/price", "200", 0.2, 40),
            (_, 2, 3) => {
                app.record("/price", "200", 3.0, 5);
                app.record("/price", "500", 3.0, 5);
            }
            // Minute 10:03: 30 at 40 ms, then the application restarts (its
            // counters start from zero), then 20 at 40 ms and 50 at 300 ms.
            (_, 3, 0) | (_, 3, 1) => app.record("/price", "200", 0.04, 15),
            (_, 3, 2) => {
                app.restart();
                app.record("/price", "200", 0.04, 20);
            }
            (_, 3, 3) => app.record("/price", "200", 0.3, 50),
            // Minute 10:04: no /price request, and one scrape fails.
            _ => {}
        }
        *server.answer.lock().unwrap() = if at == time(10, 4, 35) {
            Answer::Status(500)
        } else {
            Answer::Ok(app.render())
        };
        match fetch(&config.client().unwrap()) {
            Ok(text) => {
                let buckets = parse_buckets(&text, METRIC, &config.matchers).unwrap();
                emitted.extend(accumulator.observe(at, buckets));
            }
            Err(error) => {
                assert!(error.contains("500"), "{error}");
                failed_scrapes += 1;
            }
        }
    }
    assert_eq!(failed_scrapes, 1);
    let minutes: Vec<DateTime<Utc>> = emitted.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        minutes,
        vec![
            time(10, 1, 0),
            time(10, 2, 0),
            time(10, 3, 0),
            time(10, 4, 0)
        ]
    );

    // 10:01, cumulative delta: <=0.01: 0, <=0.025 .. <=0.5: 99, <=1 and +Inf: 100.
    // p50: rank 50 of 99 in (0.01, 0.025]; p99: rank 99 is the whole bucket;
    // p99.9: rank 99.9 is 0.9 of 1 in (0.5, 1].
    assert_summary(
        &emitted[0].1,
        100,
        0.01 + 0.015 * 50.0 / 99.0,
        0.01 + 0.015 * 90.0 / 99.0,
        0.025,
        0.5 + 0.5 * 0.9,
        1.0,
    );
    // 10:02: <=0.005: 0, <=0.01 .. <=0.1: 950, <=0.25 .. <=2.5: 990, +Inf: 1000.
    // p50: rank 500 of 950 in (0.005, 0.01]; p99: rank 990 is all 40 of
    // (0.1, 0.25]; p99.9: rank 999 is in +Inf, the highest finite bound; max
    // likewise.
    assert_summary(
        &emitted[1].1,
        1000,
        0.005 + 0.005 * 500.0 / 950.0,
        0.005 + 0.005 * 900.0 / 950.0,
        0.25,
        2.5,
        2.5,
    );
    // 10:03, across the restart: <=0.025: 0, <=0.05 .. <=0.25: 50, <=0.5 .. +Inf: 100.
    // p50: rank 50 is all of (0.025, 0.05]; p90: rank 90 is 40 of 50 in
    // (0.25, 0.5]; p99: 49 of 50; p99.9: 49.9 of 50.
    assert_summary(
        &emitted[2].1,
        100,
        0.05,
        0.25 + 0.25 * 40.0 / 50.0,
        0.25 + 0.25 * 49.0 / 50.0,
        0.25 + 0.25 * 49.9 / 50.0,
        0.5,
    );
    // 10:04: no request, a zero summary.
    assert_eq!(emitted[3].1, LatencySummary::default());

    // Every scrape asked for the 0.0.4 text format.
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 21);
    for head in requests.iter() {
        assert!(head.starts_with("GET /metrics HTTP/1.1\r\n"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\naccept: text/plain;version=0.0.4\r\n"),
            "{head}"
        );
    }
}

#[test]
fn fetch_reports_connection_refused() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = config(port, "/metrics", Duration::from_secs(2));
    let error = fetch(&config.client().unwrap()).unwrap_err();
    eprintln!("{error}");
    assert!(error.contains("connection refused"), "{error}");
    assert_names_the_server_not_the_path(&error, port);
}

/// Errors name the scrape's scheme, host and port, never its path or query,
/// where tokens travel.
fn assert_names_the_server_not_the_path(error: &str, port: u16) {
    assert!(
        error.contains(&format!("http://127.0.0.1:{port}")),
        "{error}"
    );
    assert!(!error.contains("/metrics"), "{error}");
}

#[test]
fn fetch_reports_http_errors() {
    let server = serve();
    *server.answer.lock().unwrap() = Answer::Status(500);
    let config = config(server.port, "/metrics", Duration::from_secs(2));
    let error = fetch(&config.client().unwrap()).unwrap_err();
    eprintln!("{error}");
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(error.contains("status 500 from the test server"), "{error}");
    assert_names_the_server_not_the_path(&error, server.port);

    *server.answer.lock().unwrap() = Answer::Status(404);
    let error = fetch(&config.client().unwrap()).unwrap_err();
    assert!(error.contains("HTTP 404"), "{error}");

    // A 200 without the histogram: fetch succeeds, parsing says what is missing.
    *server.answer.lock().unwrap() = Answer::Ok("up 1\n".to_string());
    let text = fetch(&config.client().unwrap()).unwrap();
    let error = parse_buckets(&text, METRIC, &config.matchers).unwrap_err();
    assert!(
        error.contains("no `http_server_requests_seconds_bucket` samples"),
        "{error}"
    );
}

/// A fetch of `path` with a 300 ms timeout fails, saying so, well within 2 s.
fn assert_fetch_times_out(path: &str) {
    let server = serve();
    let config = config(server.port, path, Duration::from_millis(300));
    let started = Instant::now();
    let error = fetch(&config.client().unwrap()).unwrap_err();
    let took = started.elapsed();
    eprintln!("{error} ({took:?})");
    assert!(error.contains("timed out after 300ms"), "{error}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn fetch_times_out() {
    assert_fetch_times_out("/hang");
}

#[test]
fn fetch_times_out_on_a_stalled_body() {
    assert_fetch_times_out("/stall");
}
