//! The dashboard's headline panel checked against an agent's own minutes:
//! what Grafana draws from Prometheus must be what the agent measured.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{http_get_ok, root, Prometheus};

/// The dashboard whose headline panel the tests check.
const DASHBOARD: &str = "dashboards/grafana/pausewatch.json";
/// The headline panel's id: max GC pause beside p99.9 latency, per minute.
const HEADLINE_PANEL: u64 = 2;

/// The headline panel's targets: `(refId, expr)`, with `$service` and
/// `$instance` matching every series.
pub fn headline_panel() -> Vec<(String, String)> {
    let path = root().join(DASHBOARD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"));
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let panel = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|panel| panel["id"] == HEADLINE_PANEL)
        .expect("the headline panel");
    assert_eq!(panel["interval"], "1m", "the panel's step is a minute");
    panel["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|target| {
            let expr = target["expr"].as_str().expect("expr");
            (
                target["refId"].as_str().expect("refId").to_string(),
                expr.replace("$service", ".+").replace("$instance", ".+"),
            )
        })
        .collect()
}

/// One minute of an agent's `/api/v1/minutes`: its max pause and, when it
/// had requests, its p99.9.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinuteFigures {
    pub pause_max_seconds: f64,
    /// The minute's `pause_max_lower_bound`, absent from the JSON when false.
    pub pause_max_lower_bound: bool,
    pub p999_seconds: Option<f64>,
}

/// The agent's minutes (of its only JVM) by start, Unix seconds.
pub fn agent_minutes(port: u16) -> BTreeMap<i64, MinuteFigures> {
    let body = http_get_ok(port, "/api/v1/minutes").expect("/api/v1/minutes");
    let json: Value = serde_json::from_str(&body).expect("minutes JSON");
    let minutes = json["jvms"][0]["minutes"].as_array().cloned();
    minutes
        .unwrap_or_default()
        .iter()
        .map(|minute| {
            let start = minute["start"].as_str().expect("start");
            let start = chrono::DateTime::parse_from_rfc3339(start).expect("RFC 3339 start");
            let latency = &minute["latency"];
            let p999_seconds = (latency["count"].as_u64().unwrap_or(0) > 0)
                .then(|| latency["p999_seconds"].as_f64().expect("p999_seconds"));
            let figures = MinuteFigures {
                pause_max_seconds: minute["pause_max_seconds"].as_f64().expect("pause max"),
                pause_max_lower_bound: minute["pause_max_lower_bound"] == true,
                p999_seconds,
            };
            (start.timestamp(), figures)
        })
        .collect()
}

/// Runs the headline panel's queries over the minutes `from..=to` (Unix
/// seconds, minute starts) as Grafana does for its 1m interval, and checks
/// each point against the agent's `/api/v1/minutes` for the minute starting
/// at that point: every minute has its max pause there, every minute with
/// requests its p99.9, a minute without requests no latency point, and only
/// a minute whose max is a lower bound a lower-bound mark (at that max).
/// Returns the points checked.
pub fn check_headline_panel(prom: &Prometheus, agent_ports: &[u16], from: i64, to: i64) -> usize {
    let mut checked = 0;
    for (ref_id, expr) in headline_panel() {
        let latency = expr.contains("latency");
        // The lower-bound marks: a point only where the minute's max is one.
        let lower_bound = expr.contains("pausewatch_gc_pause_max_lower_bound");
        let result = prom.query_range(&expr, from, to, 60).expect("range query");
        for port in agent_ports {
            let instance = format!("127.0.0.1:{port}");
            let minutes = agent_minutes(*port);
            let points: BTreeMap<i64, f64> = result
                .iter()
                .filter(|series| series["metric"]["instance"] == instance.as_str())
                .flat_map(|series| series["values"].as_array().cloned().unwrap_or_default())
                .map(|point| {
                    let at = point[0].as_f64().expect("point time") as i64;
                    let value = point[1].as_str().expect("point value").parse::<f64>();
                    (at, value.expect("a number"))
                })
                .collect();
            eprintln!("panel {ref_id} {instance}: {points:?}");
            for minute in (from..=to).step_by(60) {
                let figures = minutes.get(&minute).copied().unwrap_or(MinuteFigures {
                    pause_max_seconds: 0.0,
                    pause_max_lower_bound: false,
                    p999_seconds: None,
                });
                let expected = if latency {
                    figures.p999_seconds
                } else if lower_bound {
                    figures
                        .pause_max_lower_bound
                        .then_some(figures.pause_max_seconds)
                } else {
                    Some(figures.pause_max_seconds)
                };
                let drawn = points.get(&minute).copied();
                let matches = match (drawn, expected) {
                    (Some(drawn), Some(expected)) => (drawn - expected).abs() <= 1e-9,
                    (drawn, expected) => drawn == expected,
                };
                assert!(
                    matches,
                    "panel {ref_id}, {instance}, minute {}: drawn {drawn:?}, the agent's minute says {expected:?}",
                    chrono::DateTime::from_timestamp(minute, 0).unwrap()
                );
                checked += 1;
            }
        }
    }
    checked
}
