//! `pausewatch analyze --latency` on access logs as they are found in the
//! field: a layout no preset reads, JSON lines without flags, several logs
//! at once, a log in the wrong format.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

fn recorded() -> PathBuf {
    common::root().join("tests/fixtures/latency/jdk17-parallel")
}

/// Runs `analyze --format json --slo 50ms ARGS GC_LOG` on the recorded run.
fn analyze(args: &[&str]) -> (i32, Value, String) {
    let output = Command::new(common::PAUSEWATCH)
        .args(["analyze", "--format", "json", "--slo", "50ms"])
        .args(args)
        .arg(recorded().join("gc.log"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), report, stderr)
}

fn analyze_ok(args: &[&str]) -> Value {
    let (code, report, stderr) = analyze(args);
    assert_eq!(code, 0, "{stderr}");
    report
}

/// Runs `pausewatch ARGS GC_LOG`, which must succeed; its stdout.
fn run_ok(args: &[&str], gc_log: &Path) -> String {
    let output = Command::new(common::PAUSEWATCH)
        .args(args)
        .arg(gc_log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    String::from_utf8(output.stdout).unwrap()
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The recorded nginx log rewritten as `$msec $request_time "$request"
/// $status`: the layout whose 3,000 lines the `nginx` preset rejected.
fn msec_first_layout(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(recorded().join("access.nginx.log")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (request_time, msec) = (fields[fields.len() - 2], fields[fields.len() - 1]);
        let request = line.split('"').nth(1).unwrap();
        let status = line
            .split('"')
            .nth(2)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        out.push_str(&format!("{msec} {request_time} \"{request}\" {status}\n"));
    }
    common::write_file(dir, "access.log", out)
}

#[test]
fn an_nginx_layout_given_by_its_log_format_reads_the_same_requests_as_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    let custom = msec_first_layout(dir.path());
    let preset = analyze_ok(&["--latency", arg(&recorded().join("access.nginx.log"))]);
    let given = analyze_ok(&[
        "--latency",
        arg(&custom),
        "--log-format",
        r#"$msec $request_time "$request" $status"#,
    ]);
    assert_eq!(given["latency"]["count"], 6000);
    assert_eq!(given["latency"], preset["latency"]);
    assert_eq!(given["attribution"], preset["attribution"]);
    assert_eq!(given["access_logs"][0]["malformed"], 0);
}

#[test]
fn a_log_no_line_of_which_parses_fails_quoting_its_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let custom = msec_first_layout(dir.path());
    let first = std::fs::read_to_string(&custom)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let (code, _, stderr) = analyze(&["--latency", arg(&custom), "--latency-format", "nginx"]);
    assert_eq!(code, 1, "{stderr}");
    let quoted = format!("{first:?}");
    assert!(stderr.contains(&quoted), "{stderr}");
    assert!(stderr.contains("$request_time $msec"), "{stderr}");
    // Undetectable: the first line is quoted too, with the flags to pass.
    let (code, _, stderr) = analyze(&["--latency", arg(&custom)]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&quoted) && stderr.contains("--log-format"),
        "{stderr}"
    );
    // A format string without a duration is refused, naming the flag.
    let (code, _, stderr) = analyze(&[
        "--latency",
        arg(&custom),
        "--log-format",
        "$msec \"$request\"",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--log-format") && stderr.contains("$request_time"),
        "{stderr}"
    );
}

#[test]
fn json_lines_are_detected_without_flags() {
    let jsonl = recorded().join("access.jsonl");
    let flagged = analyze_ok(&common::json_latency_flags(&jsonl));
    let detected = analyze_ok(&["--latency", arg(&jsonl)]);
    assert_eq!(detected["latency"]["count"], 6000);
    assert_eq!(detected["latency"], flagged["latency"]);
    assert_eq!(detected["attribution"], flagged["attribution"]);
    assert_eq!(detected["access_logs"][0]["detected"], true);
    // A duration whose name gives no unit: the fields found and the flag.
    let dir = tempfile::tempdir().unwrap();
    let vague = common::write_file(
        dir.path(),
        "vague.jsonl",
        "{\"ts\":1796005280254,\"latency\":12,\"path\":\"/price\"}\n",
    );
    let (code, _, stderr) = analyze(&["--latency", arg(&vague)]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("\"latency\"") && stderr.contains("--duration-unit"),
        "{stderr}"
    );
    let report = analyze_ok(&["--latency", arg(&vague), "--duration-unit", "ms"]);
    assert_eq!(report["latency"]["count"], 1);
    assert_eq!(report["latency"]["max_seconds"], 0.012);
}

#[test]
fn several_access_logs_are_combined() {
    let jsonl = recorded().join("access.jsonl");
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    // Instances interleave: every other request to each.
    let half = |parity| {
        lines
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == parity)
            .map(|(_, l)| format!("{l}\n"))
            .collect::<String>()
    };
    std::fs::write(&a, half(0)).unwrap();
    std::fs::write(&b, half(1)).unwrap();
    let whole = analyze_ok(&["--latency", arg(&jsonl)]);
    let split = analyze_ok(&["--latency", arg(&a), "--latency", arg(&b)]);
    assert_eq!(split["latency"], whole["latency"]);
    assert_eq!(split["attribution"], whole["attribution"]);
    assert_eq!(split["minutes"], whole["minutes"]);
    assert_eq!(split["access_logs"].as_array().unwrap().len(), 2);
    assert_eq!(split["access_logs"][1]["requests"], 3000);
}

/// The slowest request of the recorded run: `duration_ms` 113.013 in
/// access.jsonl (HdrHistogram alone reports 113.023 ms).
#[test]
fn the_latency_max_is_the_slowest_request_and_no_slow_request_explains_nothing() {
    let report = analyze_ok(&["--latency", arg(&recorded().join("access.jsonl"))]);
    assert_eq!(report["latency"]["max_seconds"], 0.113013);
    for minute in report["minutes"].as_array().unwrap() {
        let max = minute["latency"]["max_seconds"].as_f64().unwrap();
        assert!(minute["latency"]["p999_seconds"].as_f64().unwrap() <= max);
    }
    // With an SLO no request reaches, nothing is slow: no share at all.
    let output = Command::new(common::PAUSEWATCH)
        .args(["analyze", "--format", "json", "--slo", "10s", "--latency"])
        .arg(recorded().join("access.jsonl"))
        .arg(recorded().join("gc.log"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["attribution"]["slow_requests"], 0);
    assert!(report["attribution"]["explained_share"].is_null());
}

/// The field report, in the agent: every line of the log rejected by the
/// preset configured. The malformed share is exported and the agent says so
/// once, quoting the first line and the layout the preset expects.
#[test]
fn the_agent_reports_an_access_log_in_the_wrong_format() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(recorded().join("gc.log"), dir.path().join("gc.log")).unwrap();
    let access = msec_first_layout(dir.path());
    let port = common::free_port();
    let config = common::write_file(
        dir.path(),
        "pausewatch.toml",
        format!(
            r#"listen = "127.0.0.1:{port}"
checkpoint_dir = "{dir}/checkpoint"
poll_interval = "100ms"
[[gc_log]]
path = "{dir}/gc.log"
start_at = "beginning"
[[access_log]]
path = "{access}"
format = "nginx"
start_at = "beginning"
"#,
            dir = dir.path().display(),
            access = access.display()
        ),
    );
    let mut children = common::Children::new(dir.path());
    children.spawn_service("agent", &mut common::run_command(&config));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut metrics = String::new();
    children.wait_until(deadline, "the malformed ratio", |_| {
        metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
        common::sample(&metrics, "pausewatch_access_log_malformed_lines_total") == Some(6000.0)
    });
    assert_eq!(
        common::sample(&metrics, "pausewatch_access_log_malformed_ratio"),
        Some(1.0)
    );
    let stderr = std::fs::read_to_string(dir.path().join("agent.stderr")).unwrap();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("do not parse"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("1796005280.254 0.001"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("$request_time $msec"),
        "{}",
        warnings[0]
    );
}

/// A minute with pauses but no request (as the minute in progress is, live)
/// has no latency figures: `null`, not a p99.9 of 0 (issue 22, 8).
#[test]
fn a_minute_without_requests_has_no_latency_figures() {
    let dir = tempfile::tempdir().unwrap();
    let gc_log = common::write_file(
        dir.path(),
        "gc.log",
        "\
[2026-11-30T01:45:10.000+0000][1.000s][info][gc] Using G1
[2026-11-30T01:45:14.664+0000][5.664s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 15M->14M(61M) 14.401ms
[2026-11-30T01:46:30.000+0000][81.000s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 2.000ms
",
    );
    // Two requests, both ending in 01:45 (epoch 1796003120 is 01:45:20).
    let access = dir.path().join("access.log");
    let line = |time: &str, end: &str| {
        format!("127.0.0.1 - - [30/Nov/2026:01:45:20 +0000] \"GET /price HTTP/1.1\" 200 512 \"-\" \"workload\" {time} {end}\n")
    };
    let text = line("0.012", "1796003120.250") + &line("0.030", "1796003121.500");
    std::fs::write(&access, text).unwrap();
    let stdout = run_ok(
        &["analyze", "--format", "json", "--latency", arg(&access)],
        &gc_log,
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let minutes = report["minutes"].as_array().unwrap();
    let at = |start: &str| {
        (minutes.iter())
            .find(|m| m["start"].as_str().is_some_and(|s| s.starts_with(start)))
            .unwrap_or_else(|| panic!("no minute {start}: {minutes:?}"))
    };
    let busy = &at("2026-11-30T01:45")["latency"];
    assert_eq!(busy["count"], 2);
    assert_eq!(busy["max_seconds"], 0.030);
    let quiet = &at("2026-11-30T01:46")["latency"];
    assert_eq!(quiet["count"], 0, "{quiet}");
    for figure in [
        "p50_seconds",
        "p90_seconds",
        "p99_seconds",
        "p999_seconds",
        "max_seconds",
    ] {
        assert!(quiet[figure].is_null(), "{figure}: {quiet}");
    }
}

/// nginx writes `$request_time` in whole milliseconds: most of the recorded
/// run's lines read `0.000`, while the same requests logged in µs
/// (access.jsonl) have a p50 under 1 ms. The p50 is below nginx's
/// resolution and is printed as such, not as 0.001 ms (issue 22, 5).
#[test]
fn a_percentile_below_nginx_resolution_is_printed_as_below_it() {
    let nginx = recorded().join("access.nginx.log");
    let text = std::fs::read_to_string(&nginx).unwrap();
    let zeros = (text.lines())
        .filter(|line| line.split_whitespace().rev().nth(1) == Some("0.000"))
        .count();
    assert!(zeros * 2 > text.lines().count(), "{zeros} lines read 0.000");
    let micros = analyze_ok(&["--latency", arg(&recorded().join("access.jsonl"))]);
    assert!(micros["latency"]["p90_seconds"].as_f64().unwrap() < 0.001);
    assert!(micros["latency"]["p99_seconds"].as_f64().unwrap() > 0.001);
    assert!(micros.get("latency_below_resolution").is_none(), "{micros}");

    let report = analyze_ok(&["--latency", arg(&nginx)]);
    assert_eq!(report["access_logs"][0]["resolution_seconds"], 0.001);
    assert_eq!(report["latency_resolution_seconds"], 0.001);
    assert_eq!(
        report["latency_below_resolution"],
        serde_json::json!(["p50_seconds", "p90_seconds"])
    );
    // The existing figures are unchanged.
    assert!(report["latency"]["p50_seconds"].as_f64().unwrap() < 0.001);

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    for args in [
        vec!["analyze", "--latency", arg(&nginx)],
        vec!["report", "-o", arg(&html), "--latency", arg(&nginx)],
    ] {
        let text = run_ok(&args, &recorded().join("gc.log"));
        if args[0] == "analyze" {
            assert!(text.contains("p50 < 1 ms   p99 48.031 ms"), "{text}");
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("&lt; 1 ms / 48.031 ms"), "{page}");
}
