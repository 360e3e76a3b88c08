//! A GC log decorated with uptime only has no wall-clock time of its own: the
//! agent finds the running JVM that writes it in /proc and anchors the log to
//! that process's start, so its pauses land in the right minutes.

use std::process::Command;
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::{sample, sum};

mod common;

#[test]
fn uptime_only_log_is_placed_by_the_running_jvms_start() {
    let Some((dir, classes, _)) = common::workloads_or_skip() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let port = common::free_port();
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{dir}/checkpoint\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = \"{log}\"\nstart_at = \"beginning\"\n",
            dir = dir.path().display(),
            log = log.display()
        ),
    );
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
