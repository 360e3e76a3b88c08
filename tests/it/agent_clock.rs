//! A GC log decorated with uptime only has no wall-clock time of its own: the
//! agent finds the running JVM that writes it in /proc and anchors the log to
//! that process's start, so its pauses land in the right minutes.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{sample, sum};
use chrono::{DateTime, Utc};

use crate::common;

/// The configuration of an agent in `dir` (its checkpoint there) that
/// reads `log` from its beginning and polls it, where it must, every 100 ms.
fn one_log(dir: &Path, port: u16, log: &Path) -> String {
    format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{dir}/checkpoint\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = \"{log}\"\nstart_at = \"beginning\"\n",
        dir = dir.display(),
        log = log.display()
    )
}

#[test]
fn uptime_only_log_is_placed_by_the_running_jvms_start() {
    let Some((dir, classes, _)) = common::workloads_or_skip() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let port = common::free_port();
    let agent = common::Agent::start(dir.path(), port, &one_log(dir.path(), port, &log));
    let started = Utc::now();
    let status = Command::new("java")
        .args(["-XX:+UseSerialGC", "-Xmx64m"])
        .arg(format!("-Xlog:gc:file={}:uptime", log.display()))
        .arg("-cp")
        .arg(&classes)
        .args(["GcWorkload", "steady", "4"])
        .arg(dir.path().join("mxbeans.json"))
        .status()
        .unwrap();
    assert!(status.success());
    let finished = Utc::now();
    let jvm_pauses = common::MxBeans::read(&dir.path().join("mxbeans.json")).total_count();
    let metrics = agent.metrics_when(Duration::from_secs(10), |m| {
        sum(m, "jvm_gc_pause_seconds_count", &[]) == jvm_pauses as f64
    });
    assert_eq!(
        sample(&metrics, "pausewatch_log_events_without_wall_clock_total"),
        Some(0.0)
    );
    // Every pause sits in a minute between the JVM's start and its end.
    let minutes: serde_json::Value =
        serde_json::from_str(&agent.get("/api/v1/minutes").unwrap()).unwrap();
    let minutes = &minutes["jvms"][0]["minutes"];
    assert_eq!(common::minutes_pause_count(minutes), jvm_pauses);
    for minute in minutes
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["pause_count"].as_u64().unwrap() > 0)
    {
        let start: DateTime<Utc> = minute["start"].as_str().unwrap().parse().unwrap();
        assert!(
            start > started - chrono::Duration::minutes(1) && start <= finished,
            "minute {start} outside the JVM's run {started}..{finished}"
        );
    }
}

/// Per minute start: its pause count, total, maximum and heap after the last pause.
type MinuteFigures = BTreeMap<i64, (u64, f64, f64, u64)>;

/// A G1 log of the last `minutes` minutes, as a JDK 17 writes it with
/// `-Xlog:gc,safepoint:file=...:time,uptime`: in most minutes a few pauses
/// of varied length and heap, each with its safepoint; some minutes quiet.
/// Returns the log and its minutes' figures, as read off the lines written.
fn g1_log_of_the_last(minutes: i64) -> (String, MinuteFigures) {
    let now = Utc::now().timestamp();
    let first = (now / 60 - minutes) * 60;
    let mut text = String::new();
    let mut expected = BTreeMap::new();
    let mut random = 0x2545_f491_4f6c_dd1du64;
    let mut next = |below: u64| {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random % below
    };
    let stamp = |seconds: i64, millis: u64| {
        let at = DateTime::from_timestamp(seconds, millis as u32 * 1_000_000).unwrap();
        at.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string()
    };
    let mut gc = 0;
    for minute in 0..minutes {
        let start = first + 60 * minute;
        let pauses = if next(5) == 0 { 0 } else { 1 + next(4) };
        for i in 0..pauses {
            let (second, millis) = (start + 10 * i as i64 + next(9) as i64, next(1000));
            let uptime = (second - first) as u64 * 1000 + millis;
            let micros = 300 + next(40_000);
            let ms = format!("{}.{:03}", micros / 1000, micros % 1000);
            let after = 4 + next(60);
            let line = format!(
                "[{}][{uptime}ms][info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) {}M->{after}M(128M) {ms}ms\n",
                stamp(second, millis),
                after + 20
            );
            text.push_str(&line);
            let nanos = micros * 1000 + 41_000;
            text.push_str(&format!(
                "[{}][{uptime}ms][info][safepoint] Safepoint \"G1CollectForAllocation\", Time since last: 1000000 ns, Reaching safepoint: 3500 ns, Cleanup: 500 ns, At safepoint: {} ns, Total: {} ns\n",
                stamp(second, millis),
                nanos - 4000,
                nanos
            ));
            let seconds: f64 = ms.parse::<f64>().unwrap() / 1000.0;
            let figures = expected.entry(start).or_insert((0, 0.0, 0.0, 0));
            figures.0 += 1;
            figures.1 += seconds;
            figures.2 = f64::max(figures.2, seconds);
            figures.3 = after << 20;
            gc += 1;
        }
    }
    (text, expected)
}

/// Hours of minutes go into the agent's packed history and come back the
/// same: each minute's figures are the log's, and after the agent is
/// killed, the log emptied and the agent restarted from its checkpoint,
/// `/api/v1/minutes` is the same to the byte.
#[test]
fn hours_of_minutes_read_back_as_written_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (text, expected) = g1_log_of_the_last(200);
    let log = common::write_file(dir.path(), "gc.log", text);
    let port = common::free_port();
    // A checkpoint a second, the default.
    let config = one_log(dir.path(), port, &log);
    let pauses: u64 = expected.values().map(|f| f.0).sum();
    let day = "/api/v1/minutes?limit=1440";
    let read = |agent: &common::Agent| {
        agent.metrics_when(Duration::from_secs(20), |m| {
            sum(m, "jvm_gc_pause_seconds_count", &[]) == pauses as f64
        });
        let body: serde_json::Value = serde_json::from_str(&agent.get(day).unwrap()).unwrap();
        body["jvms"][0]["minutes"].clone()
    };
    let agent = common::Agent::start(dir.path(), port, &config);
    let minutes = read(&agent);
    let busy: Vec<&serde_json::Value> = minutes
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["pause_count"].as_u64() > Some(0))
        .collect();
    assert_eq!(busy.len(), expected.len());
    for (minute, (start, (count, total, max, heap))) in busy.iter().zip(&expected) {
        let at: DateTime<Utc> = minute["start"].as_str().unwrap().parse().unwrap();
        assert_eq!(at.timestamp(), *start);
        assert_eq!(minute["pause_count"].as_u64(), Some(*count), "{minute}");
        let close = |key: &str, want: f64| {
            let got = minute[key].as_f64().unwrap();
            assert!(
                (got - want).abs() < 1e-12,
                "{key} {got} != {want}: {minute}"
            );
        };
        close("pause_total_seconds", *total);
        close("pause_max_seconds", *max);
        assert_eq!(minute["safepoint_count"].as_u64(), Some(*count), "{minute}");
        assert_eq!(
            minute["heap_after_gc_bytes"].as_u64(),
            Some(*heap),
            "{minute}"
        );
    }
    // A checkpoint a second: wait for one after the last minute went in.
    // The log is then emptied, so that the minutes can come only from it.
    std::thread::sleep(Duration::from_secs(3));
    drop(agent);
    std::fs::write(&log, "").unwrap();
    let agent = common::Agent::start(dir.path(), port, &config);
    let again = read(&agent);
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&minutes).unwrap()
    );
}

/// Waits until the agent has read `len` bytes of `log`: how long it took.
fn read_within(agent: &common::Agent, log: &str, len: u64, limit: Duration) -> Duration {
    let start = std::time::Instant::now();
    let series = format!("log=\"{log}\"");
    agent.metrics_when(limit, |m| {
        sum(m, "pausewatch_log_bytes_total", &[&series]) == len as f64
    });
    start.elapsed()
}

/// A log on a local file system is read on its file events, not polled
/// every `poll_interval`. Written through a hard link in another directory,
/// it sends no event to the watched one: the safety poll finds what was
/// written (within 10 s), and from then on the log is polled every
/// `poll_interval`, as on a file system without events.
#[test]
fn a_log_whose_writes_send_no_event_is_found_out_and_polled() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let watched = dir.path().join("watched");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&watched).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let log = watched.join("gc.log");
    std::fs::write(
        &log,
        "[2026-12-06T10:00:00.000+0000][0.010s][info][gc] Using G1\n",
    )
    .unwrap();
    let link = elsewhere.join("gc.log");
    std::fs::hard_link(&log, &link).unwrap();
    let port = common::free_port();
    let agent = common::Agent::start(dir.path(), port, &one_log(dir.path(), port, &log));
    let name = log.display().to_string();
    let len = || std::fs::metadata(&log).unwrap().len();
    read_within(&agent, &name, len(), Duration::from_secs(10));
    let write = |gc: u32| {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&link)
            .unwrap();
        let at = format!("[2026-12-06T10:00:0{gc}.000+0000][{gc}.000s]");
        let lines = format!(
            "{at}[info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 3.210ms\n\
             {at}[info][gc,cpu] GC({gc}) User=0.01s Sys=0.00s Real=0.00s\n"
        );
        // One write, as HotSpot writes each line: no pause waits for its CPU line.
        file.write_all(lines.as_bytes()).unwrap();
    };
    write(1);
    let first = read_within(&agent, &name, len(), Duration::from_secs(15));
    // The safety poll that found it came up to 10 s after the one before:
    // another write is read at the next poll_interval, not 10 s later.
    write(2);
    let second = read_within(&agent, &name, len(), Duration::from_secs(4));
    eprintln!("read after {first:?} (the safety poll), then after {second:?}");
    // Until then a file whose events arrive is not polled every poll_interval.
    assert!(first > Duration::from_secs(5), "read after {first:?}");
}
