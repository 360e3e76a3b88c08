//! `pausewatch run --demo` with a configuration and `--listen`: the
//! embedded service's logs (tests/fixtures/compare) before and after its
//! cache change are replayed into a temporary directory. Calm before the
//! change; within about two minutes after it the agent serves the longest
//! pause per minute beside p99.9, stop-affected requests, the change (a JVM
//! restart), the first whole minute after it lined up with its requests, and
//! an alert that fired after the change; at SIGTERM the directory goes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::common;

use crate::common::{free_port, http_get_ok, sample};

#[test]
fn the_demo_tells_the_story_live() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("pausewatch.toml");
    // Evaluate alerts every few seconds instead of every minute.
    std::fs::write(&config, "[alerts]\nevaluation_interval = \"2s\"\n").unwrap();
    let port = free_port();
    let started = Utc::now();
    let mut child = Command::new(common::PAUSEWATCH)
        .args(["run", "--demo", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let demo_dir = std::env::temp_dir().join(format!("pausewatch-demo-{}", child.id()));
    let minutes = |query: &str| -> Vec<Value> {
        let body = http_get_ok(port, &format!("/api/v1/minutes{query}")).unwrap_or_default();
        serde_json::from_str::<Value>(&body)
            .ok()
            .map_or(Vec::new(), |m| {
                m["jvms"][0]["minutes"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
    };
    // The first whole minute after the change, replayed live.
    let after = (started + chrono::Duration::minutes(1))
        .format("%Y-%m-%dT%H:%M:00Z")
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(150);
    let (metrics, alerts, minute) = loop {
        let metrics = http_get_ok(port, "/metrics").unwrap_or_default();
        let alerts = http_get_ok(port, "/api/v1/alerts").unwrap_or_default();
        let ready = [
            "pausewatch_gc_pause_max_seconds",
            "pausewatch_request_latency_p999_seconds",
            "pausewatch_slow_requests_stop_affected_total",
            "pausewatch_jvm_restarts_total",
        ]
        .iter()
        .all(|name| sample(&metrics, name).is_some_and(|v| v > 0.0));
        let minute = minutes(&format!("?since={after}"))
            .into_iter()
            .find(|m| m["latency"]["count"].as_u64() > Some(0) && m["attribution"].is_object());
        if let (true, true, Some(minute)) = (ready, alerts.contains("\"firing\""), minute) {
            break (metrics, alerts, minute);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the demo did not get there in 150 s:\n{metrics}\n{alerts}\n{:?}",
                minutes("")
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(demo_dir.is_dir(), "{}", demo_dir.display());
    assert!(metrics.contains("service=\"demo\""));
    // Every alert fired after the change: the two minutes before it are calm.
    let alerts: Value = serde_json::from_str(&alerts).unwrap();
    let alerts = alerts["alerts"].as_array().unwrap();
    assert!(!alerts.is_empty());
    for alert in alerts {
        assert_eq!(alert["labels"]["source"], "agent", "{alert}");
        let since: DateTime<Utc> = alert["active_since"].as_str().unwrap().parse().unwrap();
        assert!(since >= started, "{alert} fired before the change");
    }
    assert!(alerts
        .iter()
        .any(|a| a["alertname"] == "PauseBudgetExceeded"));
    // The minutes line the longest pause up with the tail and the slow
    // requests the stops caught.
    assert!(minutes("").iter().any(|m| {
        m["pause_max_seconds"].as_f64() > Some(0.0)
            && m["latency"]["p999_seconds"].as_f64() > Some(0.0)
            && m["attribution"]["slow_requests_stop_affected"].as_u64() > Some(0)
    }));
    assert!(minute["pause_count"].as_u64() > Some(0), "{minute}");
    // 50 requests a second, all of them replayed.
    let requests = minute["latency"]["count"].as_u64().unwrap();
    assert!((2900..=3100).contains(&requests), "{minute}");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    assert!(!demo_dir.exists(), "{} is left behind", demo_dir.display());
}

/// README, the demo and any page of `docs/` that tells it say how far the
/// cache grew as the recording's own command line does (`-Dwl.live=` of each
/// run).
#[test]
fn the_readme_gives_the_fixtures_cache_sizes() {
    let live = |run: &str| -> u32 {
        let command = std::fs::read_to_string(
            common::root().join(format!("tests/fixtures/compare/{run}/command.txt")),
        )
        .unwrap();
        let value = command.split("-Dwl.live=").nth(1).unwrap();
        let fraction: f64 = value.split_whitespace().next().unwrap().parse().unwrap();
        (fraction * 100.0).round() as u32
    };
    let sentence = format!("from {} % to {} %", live("baseline"), live("candidate"));
    let mut texts = common::docs::pages();
    texts.push((
        "src/commands/demo.rs".to_string(),
        common::docs::page("src/commands/demo.rs"),
    ));
    for (name, text) in &texts {
        let said = text.matches("from 15 % to ").count();
        let must = name == "README.md" || name == "src/commands/demo.rs";
        assert!(
            (said > 0 || !must) && text.matches(&sentence).count() == said,
            "{name} does not say {sentence}"
        );
    }
}
