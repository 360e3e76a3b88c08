//! See the parent module.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use crate::common::{
    connect_from, http_get, http_get_ok, http_get_on, sum, toml_string, Children, PAUSEWATCH,
};

/// Address space a pausewatch process under test may use (KiB, `ulimit -v`):
/// generous for the agent's threads and arenas, far below a runaway allocation.
const ADDRESS_SPACE_KIB: u64 = 2 << 20;

/// `pausewatch ARGS...` with its address space capped at [`ADDRESS_SPACE_KIB`].
fn bounded_pausewatch(args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB} && exec \"$@\""))
        .arg("sh")
        .arg(PAUSEWATCH)
        .args(args);
    command
}

/// A G1 pause line ending at `end`, lasting `ms`.
fn pause_line(end: DateTime<Utc>, gc: u32, ms: f64) -> String {
    format!(
        "[{}][{gc}.000s][info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) {ms:.3}ms\n",
        end.format("%Y-%m-%dT%H:%M:%S%.3f+0000")
    )
}

/// Starts a memory-capped agent reading `log` from its beginning (and no
/// other JVM of the host: discovery off), with `extra` top-level config
/// lines, and waits until it has counted `pauses` pauses.
fn start_agent(dir: &Path, children: &mut Children, log: &Path, extra: &str, pauses: u64) -> u16 {
    let port = crate::common::free_port();
    let config = crate::common::write_file(
        dir,
        "pausewatch.toml",
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n{extra}\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n[discovery]\nenabled = false\n",
            toml_string(&dir.join("state")),
            toml_string(log)
        ),
    );
    children.spawn_service(
        "agent",
        &mut bounded_pausewatch(&["run", "--config", config.to_str().unwrap()]),
    );
    children.dump_on_failure(&[port], &["pausewatch_log", "jvm_gc_pause_seconds_count"]);
    children.wait_until(
        Instant::now() + Duration::from_secs(20),
        "the agent to read the log",
        |_| {
            http_get_ok(port, "/metrics")
                .is_ok_and(|m| sum(&m, "jvm_gc_pause_seconds_count", &[]) as u64 == pauses)
        },
    );
    port
}

/// `/api/v1/minutes` with `query`, parsed, with the size of its body.
fn minutes(port: u16, query: &str) -> (Value, usize) {
    let body = http_get_ok(port, &format!("/api/v1/minutes{query}")).unwrap();
    (serde_json::from_str(&body).unwrap(), body.len())
}

/// The pause counts of the first JVM's minutes, and their starts.
fn pause_counts(response: &Value) -> Vec<(String, u64)> {
    response["jvms"][0]["minutes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["start"].as_str().unwrap().to_string(),
                m["pause_count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The start of the minute `t` falls in.
fn minute_start(t: DateTime<Utc>) -> DateTime<Utc> {
    t - TimeDelta::seconds(t.timestamp().rem_euclid(60))
}

#[test]
fn a_line_dated_far_in_the_future_is_a_clock_outlier_not_a_range_of_minutes() {
    let dir = tempfile::tempdir().unwrap();
    let mut children = Children::new(dir.path());
    // Three credible pauses in the last minutes, and between them one line
    // dated year 9999 and one dated 2126, whose minutes the agent once tried
    // to list one by one (about 900 GB and 3 GB).
    let now = Utc::now();
    let minute = |ago: i64| minute_start(now - TimeDelta::minutes(ago)) + TimeDelta::seconds(10);
    let far = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    let log_text = [
        pause_line(minute(3), 0, 5.0),
        pause_line(far("9999-12-31T23:59:00Z"), 1, 7.0),
        pause_line(minute(2), 2, 6.0),
        pause_line(far("2126-01-01T00:00:00Z"), 3, 8.0),
        pause_line(minute(2) + TimeDelta::seconds(20), 4, 4.0),
    ]
    .concat();
    let log = crate::common::write_file(dir.path(), "gc.log", log_text);
    let port = start_agent(dir.path(), &mut children, &log, "", 5);

    let (response, size) = minutes(port, "");
    // The credible pauses, hand-counted: one three minutes ago, two a minute later.
    let expected = vec![
        (minute(3).format("%Y-%m-%dT%H:%M:00Z").to_string(), 1),
        (minute(2).format("%Y-%m-%dT%H:%M:00Z").to_string(), 2),
    ];
    assert_eq!(pause_counts(&response), expected);
    assert!(size < 4096, "{size} bytes");
    let metrics = http_get_ok(port, "/metrics").unwrap();
    // Every pause line is still a pause the JVM made; two of them have a time
    // nobody can place.
    assert_eq!(sum(&metrics, "pausewatch_log_lines_total", &[]), 5.0);
    assert_eq!(
        sum(
            &metrics,
            "pausewatch_log_unparsed_lines_total",
            &["kind=\"clock_outlier\""]
        ),
        2.0
    );
    children.assert_alive();
}

/// `pausewatch analyze --format json` of `log`, memory-capped.
fn analyze_json(log: &Path) -> Value {
    let output = bounded_pausewatch(&["analyze", "--format", "json", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "analyze failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn analyze_lists_quiet_minutes_only_between_credible_events() {
    let dir = tempfile::tempdir().unwrap();
    let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    // A 1970 line first (nothing before it to compare with), then one in the
    // middle: once 29 million quiet minutes (6.6 GB).
    let log = crate::common::write_file(
        dir.path(),
        "gc.log",
        [
            pause_line(at("1970-01-01T00:00:01Z"), 0, 1.0),
            pause_line(at("2026-11-30T01:45:10Z"), 1, 5.0),
            pause_line(at("2026-11-30T01:45:40Z"), 2, 6.0),
            pause_line(at("1970-01-01T00:00:02Z"), 3, 2.0),
            pause_line(at("2026-11-30T01:47:05Z"), 4, 4.0),
        ]
        .concat(),
    );
    let report = analyze_json(&log);
    let starts: Vec<(String, u64)> = pause_counts(&serde_json::json!({ "jvms": [report] }));
    assert_eq!(
        starts,
        [
            ("2026-11-30T01:45:00Z".to_string(), 2),
            ("2026-11-30T01:46:00Z".to_string(), 0),
            ("2026-11-30T01:47:00Z".to_string(), 1),
        ]
    );
    assert_eq!(report["pauses"]["count"], 5);
    assert_eq!(report["unparsed_by_kind"]["clock_outlier"], 2);
}

#[test]
fn analyze_caps_the_quiet_minutes_it_lists_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    // Credible neighbours each (less than a day apart), but 20 days from
    // first to last: 28,800 minutes, most of them quiet.
    let lines: Vec<String> = (0..=40)
        .map(|i| {
            pause_line(
                at("2026-11-01T00:00:30Z") + TimeDelta::hours(12 * i),
                i as u32,
                1.0,
            )
        })
        .collect();
    let log = crate::common::write_file(dir.path(), "gc.log", lines.concat());
    let report = analyze_json(&log);
    let minutes = report["minutes"].as_array().unwrap();
    let pauses = crate::common::minutes_pause_count(&report["minutes"]);
    assert_eq!(pauses, 41);
    // 41 minutes with a pause, at most 7 days of quiet ones.
    assert!(minutes.len() <= 41 + 7 * 1440, "{}", minutes.len());
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("quiet minutes"), "{warnings}");
}
#[test]
fn analyze_of_a_log_without_pauses_prints_a_total_of_zero() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::common::write_file(
        dir.path(),
        "gc.log",
        "[2026-11-30T01:45:10.000+0000][1.000s][info][gc] Using G1\n",
    );
    let output = bounded_pausewatch(&["analyze", log.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("pauses: 0   total 0.000 ms"), "{text}");
    assert!(!text.contains("-0.000"), "{text}");
}

#[test]
fn minutes_requests_are_bounded_by_until_log_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut children = Children::new(dir.path());
    // Two JVMs: `busy` paused once a minute for the last 300 minutes (its
    // minute N minutes ago paused N ms, N = 300 down to 1), `other` once.
    let now = Utc::now();
    let start_of = |ago: i64| minute_start(now - TimeDelta::minutes(ago));
    let busy: String = (1..=300)
        .rev()
        .map(|ago| {
            pause_line(
                start_of(ago) + TimeDelta::seconds(30),
                300 - ago as u32,
                ago as f64,
            )
        })
        .collect();
    std::fs::create_dir(dir.path().join("busy")).unwrap();
    std::fs::create_dir(dir.path().join("other")).unwrap();
    let busy_log = crate::common::write_file(dir.path(), "busy/gc.log", busy);
    std::fs::write(
        dir.path().join("other/gc.log"),
        pause_line(start_of(5) + TimeDelta::seconds(30), 0, 2.0),
    )
    .unwrap();
    let port = start_agent(
        dir.path(),
        &mut children,
        &dir.path().join("*/gc.log"),
        "",
        301,
    );
    let key = |ago: i64| start_of(ago).format("%Y-%m-%dT%H:%M:00Z").to_string();
    let ms = |response: &Value| -> Vec<u64> {
        response["jvms"][0]["minutes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["pause_max_seconds"].as_f64().unwrap() * 1000.0).round() as u64)
            .collect()
    };
    let busy_query = format!(
        "?log={}",
        crate::common::url_encode(busy_log.to_str().unwrap())
    );

    // `log` selects one JVM; `limit` keeps the newest minutes without `since`.
    let (response, _) = minutes(port, &format!("{busy_query}&limit=3"));
    assert_eq!(response["jvms"].as_array().unwrap().len(), 1);
    assert_eq!(response["jvms"][0]["log"], busy_log.to_str().unwrap());
    assert_eq!(ms(&response), [3, 2, 1]);
    // ... and the oldest from `since` on; `until` ends before its minute.
    let (response, _) = minutes(
        port,
        &format!("{busy_query}&since={}&until={}&limit=4", key(100), key(90)),
    );
    assert_eq!(ms(&response), [100, 99, 98, 97]);
    let (response, _) = minutes(
        port,
        &format!("{busy_query}&since={}&until={}", key(100), key(95)),
    );
    assert_eq!(ms(&response), [100, 99, 98, 97, 96]);
    // Without `log`, both JVMs, each cut to `limit`.
    let (response, size) = minutes(port, "?limit=2");
    let counts: Vec<usize> = response["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|jvm| jvm["minutes"].as_array().unwrap().len())
        .collect();
    assert_eq!(counts, [2, 1]);
    assert!(size < 4096, "{size} bytes");
    // A limit above the hard maximum, or none at all, is refused, and so
    // is a log the agent does not follow.
    for (query, status) in [
        ("?limit=1000000", 400),
        ("?limit=0", 400),
        ("?until=tomorrow", 400),
        ("?log=/nowhere/gc.log", 404),
    ] {
        let (got, body) =
            crate::common::http_get(port, &format!("/api/v1/minutes{query}")).unwrap();
        assert_eq!(got, status, "{query}: {body}");
    }
}

#[test]
fn label_values_past_the_cap_are_counted_under_other() {
    let dir = tempfile::tempdir().unwrap();
    let mut children = Children::new(dir.path());
    // 30 pauses with 30 different causes, 30 safepoints with 30 different
    // operations; the cap is 10 values per family.
    let start = Utc::now() - TimeDelta::minutes(5);
    let stamp = |i: i64| {
        (start + TimeDelta::seconds(i))
            .format("%Y-%m-%dT%H:%M:%S%.3f+0000")
            .to_string()
    };
    let log_text: String = (0..30)
        .map(|i| {
            format!(
                "[{}][{i}.000s][info][gc] GC({i}) Pause Young (Normal) (Cause {i:02}) 30M->20M(61M) 1.000ms\n\
                 [{}][{i}.000s][info][safepoint] Safepoint \"Operation{i:02}\", Time since last: 1000 ns, Reaching safepoint: 1000 ns, Cleanup: 0 ns, At safepoint: 1000 ns, Total: 2000 ns\n",
                stamp(i),
                stamp(i)
            )
        })
        .collect();
    let log = crate::common::write_file(dir.path(), "gc.log", log_text);
    let port = start_agent(dir.path(), &mut children, &log, "max_label_values = 10", 30);
    let metrics = http_get_ok(port, "/metrics").unwrap();
    let values = |name: &str, label: &str| -> Vec<String> {
        let key = format!("{label}=\"");
        metrics
            .lines()
            .filter(|line| line.starts_with(&format!("{name}{{")))
            .filter_map(|line| {
                let rest = &line[line.find(&key)? + key.len()..];
                Some(rest[..rest.find('"')?].to_string())
            })
            .collect()
    };
    let causes = values("jvm_gc_pause_seconds_count", "cause");
    assert_eq!(causes.len(), 11, "{causes:?}");
    assert_eq!(causes.iter().filter(|c| *c == "other").count(), 1);
    let operations = values("pausewatch_safepoints_total", "operation");
    assert_eq!(operations.len(), 11, "{operations:?}");
    // Nothing is lost: all 30 are counted, 20 of them under "other".
    assert_eq!(sum(&metrics, "jvm_gc_pause_seconds_count", &[]), 30.0);
    assert_eq!(
        sum(&metrics, "jvm_gc_pause_seconds_count", &["cause=\"other\""]),
        20.0
    );
    assert_eq!(sum(&metrics, "pausewatch_safepoints_total", &[]), 30.0);
    assert_eq!(
        sum(
            &metrics,
            "pausewatch_safepoints_total",
            &["operation=\"other\""]
        ),
        20.0
    );
    for label in ["cause", "operation"] {
        assert_eq!(
            sum(
                &metrics,
                "pausewatch_label_values_overflow_total",
                &[&format!("label=\"{label}\"")]
            ),
            20.0,
            "{label}"
        );
    }
}

/// Reads until the agent closes `stream`: end of file, not a timeout.
fn closed_by_the_agent(stream: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).is_ok()
}

#[test]
fn silent_connections_cannot_keep_healthz_from_answering() {
    use std::net::TcpStream;

    let dir = tempfile::tempdir().unwrap();
    let mut children = Children::new(dir.path());
    let log = crate::common::write_file(dir.path(), "gc.log", pause_line(Utc::now(), 0, 1.0));
    let port = start_agent(
        dir.path(),
        &mut children,
        &log,
        "max_connections = 4\nmax_connections_per_client = 2\nhttp_header_timeout = \"6s\"",
        1,
    );
    let client = |last: u8| connect_from([127, 0, 0, last], port);
    // One client takes its share, two of the four slots, and says nothing.
    let mut silent: Vec<TcpStream> = (0..2).map(|_| client(1)).collect();
    std::thread::sleep(Duration::from_millis(200));
    // Another client is served in full; the first one's next connection
    // gets a spare one, which answers /healthz and nothing else.
    let (status, body) = http_get_on(client(2), "/metrics").unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = http_get_on(client(1), "/metrics").unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("/healthz only"), "{body}");
    let (status, body) = http_get_on(client(1), "/healthz").unwrap();
    assert_eq!((status, body.contains("\"ok\"")), (200, true), "{body}");
    // A flood: a third client fills the last two slots and every spare
    // connection twice over, silently. The probe still gets in, long before
    // the silent ones could time out (6 s).
    silent.extend((0..2 + 16).map(|_| client(3)));
    std::thread::sleep(Duration::from_millis(500));
    let asked = Instant::now();
    let (status, body) = http_get(port, "/healthz").unwrap();
    let took = asked.elapsed();
    assert_eq!((status, body.contains("\"ok\"")), (200, true), "{body}");
    assert!(
        took < Duration::from_secs(4),
        "/healthz answered after {took:?}"
    );
    // Every silent connection is closed by the agent, and it serves again.
    for stream in &mut silent {
        assert!(closed_by_the_agent(stream));
    }
    http_get_ok(port, "/metrics").unwrap();
}

/// Two JVMs writing one `gc.log`: A (running for 100 s) logs its preamble
/// and a pause, B starts (its preamble, uptime 0.01 s), then their pauses
/// alternate, 20 each: uptime goes back at every line from A to B.
fn interleaved_log() -> String {
    let mut log = String::from(
        "[2026-11-30T01:45:00.000+0000][100.000s][info][gc] Using G1\n\
         [2026-11-30T01:45:00.100+0000][100.100s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 1.000ms\n\
         [2026-11-30T01:45:01.000+0000][0.010s][info][gc] Using G1\n",
    );
    for i in 1..=20 {
        log.push_str(&format!(
            "[2026-11-30T01:45:{:02}.000+0000][{}.000s][info][gc] GC({i}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 2.000ms\n\
             [2026-11-30T01:45:{:02}.500+0000][{}.500s][info][gc] GC({}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 3.000ms\n",
            i + 1,
            100 + i,
            i + 1,
            i,
            i - 1,
        ));
    }
    log
}

#[test]
fn two_jvms_interleaved_in_one_file_are_one_restart_not_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::common::write_file(dir.path(), "gc.log", interleaved_log());
    let report = analyze_json(&log);
    // Hand-counted: A's first pause, then 20 of A's and 20 of B's.
    assert_eq!(report["pauses"]["count"], 41);
    // One new run started (B's preamble); the rest is two runs taking turns.
    assert_eq!(report["jvm_restarts"], 1, "{}", report["warnings"]);
}

/// 200 JVMs with a day of minutes each: eight clients reading the whole
/// day of all of them (`limit=1440&page_size=200`, about 70 MB each) at once. A liveness probe times out
/// after 1 s, and once waited 2.1 s behind them.
#[test]
fn big_minutes_responses_do_not_hold_up_healthz() {
    use std::io::Read;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let mut children = Children::new(dir.path());
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let now = Utc::now();
    let day_ago = now - TimeDelta::hours(23);
    for jvm in 0..200 {
        let line = |end: DateTime<Utc>, gc: u32, uptime: i64| {
            format!(
                "[{}][{uptime}.000s][info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 1.000ms\n",
                end.format("%Y-%m-%dT%H:%M:%S%.3f+0000")
            )
        };
        let log = line(day_ago, 0, 10) + &line(now, 1, 10 + 23 * 3600);
        std::fs::write(logs.join(format!("jvm{jvm}.log")), log).unwrap();
    }
    let port = start_agent(dir.path(), &mut children, &logs.join("*.log"), "", 400);
    let done = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (done, finished) = (done.clone(), finished.clone());
            std::thread::spawn(move || {
                let mut stream = connect_from([127, 0, 0, 1], port);
                std::io::Write::write_all(
                    &mut stream,
                    b"GET /api/v1/minutes?limit=1440&page_size=200 HTTP/1.0\r\nHost: localhost\r\n\r\n",
                )
                .unwrap();
                let mut buffer = vec![0u8; 1 << 16];
                let mut read = 0;
                while !done.load(Ordering::Relaxed) {
                    match stream.read(&mut buffer).unwrap() {
                        0 => {
                            finished.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        n => read += n,
                    }
                }
                read
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let asked = Instant::now();
    let health = http_get_ok(port, "/healthz").unwrap();
    let took = asked.elapsed();
    let finished_by_then = finished.load(Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let read: Vec<usize> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(health.contains("\"ok\""), "{health}");
    assert_eq!(
        finished_by_then, 0,
        "the responses were all in flight when /healthz was asked ({read:?} bytes read)"
    );
    assert!(read.iter().all(|&n| n > 0), "{read:?}");
    assert!(
        took < Duration::from_secs(1),
        "/healthz answered after {took:?}"
    );
}
