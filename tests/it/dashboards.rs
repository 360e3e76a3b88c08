//! Every query in the Grafana dashboards is run against a real Prometheus that
//! scraped the agent in this test, and must return data.
//!
//! Two agents (two `instance`s of the service `checkout`) follow the same
//! recorded Java service: `tests/fixtures/latency/jdk17-parallel/gc.log`
//! written live by `pausewatch replay --speed 8 --retime`, and its access log
//! rewritten here with the same shift, so that pauses and requests line up as
//! they did in the JVM and the requests' minute is attributed within the test.
//! Prometheus scrapes both agents every second and loads
//! `dashboards/prometheus/pausewatch-rules.yml` when it exists. Then every
//! `expr` of every panel of every dashboard under `dashboards/grafana` (found
//! by walking the JSON, whatever its layout) is run through
//! `/api/v1/query` with the Grafana variables substituted, and must return at
//! least one sample with a finite value. The only exceptions are listed in
//! [`ALLOWED_EMPTY`], each with its reason.
//!
//! Needs `/usr/bin/prometheus` (Debian's `prometheus` package, which CI
//! installs) or `prometheus` on `PATH`; without it the test is skipped (`common::skip`)
//! and returns. The structural checks of the dashboards run without it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{root, sample_value, toml_string, Children, Prometheus};
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::Value;

use crate::common;

/// A recorded Java service that paused: GC log and access log of the same run.
const FIXTURE: &str = "tests/fixtures/latency/jdk17-parallel";
const SERVICE: &str = "checkout";
/// Agents scraped by Prometheus: more than one, so that the per-service
/// medians of the canary panels have something to be the median of.
const AGENTS: usize = 2;
/// The whole test, including the wait for a minute to be attributed: about
/// 80 s at worst here, with room for a slower CI machine.
const TEST_BUDGET: Duration = Duration::from_secs(150);
/// The replay starts between these seconds of a wall-clock minute, so that the
/// minute it starts in holds the first full GC and its slow requests (the log's
/// first 10 s) and ends, and is attributed, within the budget.
const START_WINDOW_SECONDS: (f64, f64) = (15.0, 50.0);
/// `finalize_after` given to the agents: a minute is attributed this long after it ends.
const FINALIZE_AFTER_SECONDS: i64 = 1;
/// HotSpot's `time` decoration, as `pausewatch replay --retime` writes it.
const GC_TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3f%z";

/// The Grafana variables and what they become here: every instance of the
/// service the agents report, and the intervals Grafana would compute for a
/// short range with a 1 s scrape interval.
const VARIABLES: [(&str, &str); 6] = [
    ("service", SERVICE),
    ("instance", ".+"),
    ("__rate_interval", "1m"),
    ("__interval", "15s"),
    ("__range", "5m"),
    ("datasource", "prometheus"),
];

/// ALLOWED-EMPTY queries: an expression containing the first string may return
/// no sample, for the reason given. Every other query must return data.
const ALLOWED_EMPTY: [(&str, &str); 6] = [
    (
        "jvm_memory_",
        "ALLOWED EMPTY: hsperfdata's heap, drawn for a JVM without a GC log; these agents read a recorded GC log (tests/solo/runtime_stats.rs holds the pools to the MXBeans)",
    ),
    (
        "ALERTS{",
        "ALLOWED EMPTY: ALERTS exists only while a rule fires, and nothing has to fire here",
    ),
    (
        "pausewatch_gc_pause_max_lower_bound{",
        "ALLOWED EMPTY: marks only minutes whose max is a lower bound (no GC log, several pauses between two hsperfdata samples); these agents read a GC log, so there is none (the headline check compares every minute with the agent's flag)",
    ),
    (
        "pausewatch_gc_cpu_ratio{",
        "ALLOWED EMPTY: a GC log says nothing of the collector's CPU (discovered JVMs and Go programs do: tests/it/gc_cpu.rs, tests/it/go_gctrace.rs); these agents read a recorded GC log",
    ),
    (
        ":ratio_to_others_median5m{",
        "ALLOWED EMPTY: only an instance above its service's median has a ratio, and the test's two agents replay the same log",
    ),
    (
        "pausewatch_alerts{",
        "ALLOWED EMPTY: the agent does not export pausewatch_alerts yet (being built)",
    ),
];

/// An expression containing this reads per-minute figures minute by minute:
/// each minute's sample stands at its start, and for 59 s after it.
const PER_MINUTE: &str = "[59s]";

/// An expression containing this is a fleet-wide median of a service: it
/// filters by service but deliberately not by instance.
const FLEET_MEDIAN: &str = "quantile by (service) (0.5,";

/// An expression starting with this reads a service's recording rule (the
/// fleet dashboard): one series per service, no instance to filter.
const SERVICE_RECORD: &str = "service:";

/// The agents' latency series, printed when the test fails.
const MAIN_SERIES: [&str; 6] = [
    "pausewatch_log_lines_total",
    "pausewatch_gc_pause_max_seconds",
    "pausewatch_request",
    "pausewatch_slow_",
    "pausewatch_access_log_lines_total",
    "pausewatch_errors_total",
];

fn fixture(name: &str) -> PathBuf {
    root().join(FIXTURE).join(name)
}

// ---------------------------------------------------------------- dashboards

/// Every `*.json` file under `dashboards/grafana`, parsed.
fn dashboards() -> Vec<(PathBuf, Value)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root().join("dashboards/grafana"), &mut paths);
    assert!(
        !paths.is_empty(),
        "no dashboard JSON under dashboards/grafana"
    );
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let json = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
            (path, json)
        })
        .collect()
}

/// One PromQL expression of a dashboard, with where it was found.
struct Query {
    dashboard: String,
    panel: String,
    ref_id: String,
    expr: String,
}

impl Query {
    fn name(&self) -> String {
        format!("{} / {} / {}", self.dashboard, self.panel, self.ref_id)
    }
}

/// Every `"expr"` string anywhere in the dashboard, with the title of the
/// innermost titled object around it (the panel) and the target's `refId`.
fn collect_exprs(value: &Value, panel: &str, ref_id: &str, file: &str, out: &mut Vec<Query>) {
    match value {
        Value::Object(map) => {
            let panel = map.get("title").and_then(Value::as_str).unwrap_or(panel);
            let ref_id = map.get("refId").and_then(Value::as_str).unwrap_or(ref_id);
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("expr", Value::String(expr)) => out.push(Query {
                        dashboard: file.to_string(),
                        panel: panel.to_string(),
                        ref_id: ref_id.to_string(),
                        expr: expr.clone(),
                    }),
                    _ => collect_exprs(child, panel, ref_id, file, out),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_exprs(item, panel, ref_id, file, out);
            }
        }
        _ => {}
    }
}

fn dashboard_queries() -> Vec<Query> {
    let mut out = Vec::new();
    for (path, json) in dashboards() {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let before = out.len();
        collect_exprs(&json, "(dashboard)", "-", &file, &mut out);
        assert!(out.len() > before, "{file}: no expr in any panel");
    }
    out
}

/// Grafana's variable forms `$name`, `${name}` and `${name:format}` replaced
/// by [`VARIABLES`]; an unknown variable is an error. A `$` not followed by a
/// name (a regex anchor) stays.
fn substitute(expr: &str) -> Result<String, String> {
    let values: BTreeMap<&str, &str> = VARIABLES.into_iter().collect();
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            let close = braced
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {expr:?}"))?;
            let inner = &braced[..close];
            (inner.split(':').next().unwrap_or(inner), close + 2)
        } else {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..len], len)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        let value = values
            .get(name)
            .ok_or_else(|| format!("unknown Grafana variable ${name} in {expr:?}"))?;
        out.push_str(value);
        rest = &after[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

fn allowed_empty(expr: &str) -> Option<&'static str> {
    ALLOWED_EMPTY
        .iter()
        .find(|(marker, _)| expr.contains(marker))
        .map(|(_, reason)| *reason)
}

/// `(variable, selector, label)` of every `label_values(selector, label)` variable.
fn label_values_variables() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (path, json) in dashboards() {
        let variables = json["templating"]["list"].as_array().cloned();
        for variable in variables.unwrap_or_default() {
            if variable["type"] != "query" {
                continue;
            }
            let name = variable["name"].as_str().unwrap_or("?").to_string();
            let query = variable["query"]["query"]
                .as_str()
                .or_else(|| variable["query"].as_str())
                .or_else(|| variable["definition"].as_str())
                .unwrap_or_else(|| panic!("{}: variable {name} has no query", path.display()));
            let args = query
                .trim()
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .unwrap_or_else(|| panic!("{name}: not a label_values() query: {query}"));
            let (selector, label) = args
                .rsplit_once(',')
                .unwrap_or_else(|| panic!("{name}: label_values without a metric: {query}"));
            out.push((name, selector.trim().to_string(), label.trim().to_string()));
        }
    }
    out
}

/// Every panel, rows' nested panels included.
fn all_panels(dashboard: &Value) -> Vec<&Value> {
    fn walk<'a>(panels: &'a Value, out: &mut Vec<&'a Value>) {
        for panel in panels.as_array().into_iter().flatten() {
            out.push(panel);
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// Every Prometheus datasource reference, wherever it is.
fn prometheus_datasources<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if let Some(ds) = map.get("datasource") {
                if ds["type"] == "prometheus" || ds.is_string() {
                    out.push(ds);
                }
            }
            for child in map.values() {
                prometheus_datasources(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| prometheus_datasources(i, out)),
        _ => {}
    }
}

/// What Grafana needs to import and provision the dashboards, and the filters
/// every query must apply. Needs no Prometheus.
#[test]
fn dashboards_are_provisionable_and_filtered() {
    let mut uids = BTreeSet::new();
    for (path, json) in dashboards() {
        let file = path.display().to_string();
        assert!(json.get("__inputs").is_none(), "{file}: has __inputs");
        assert!(
            json["schemaVersion"].as_u64().is_some_and(|v| v >= 36),
            "{file}: schemaVersion {}",
            json["schemaVersion"]
        );
        let uid = json["uid"].as_str().unwrap_or_default();
        assert!(!uid.is_empty(), "{file}: no uid");
        assert!(uids.insert(uid.to_string()), "{file}: uid {uid} used twice");
        assert!(json["title"].as_str().is_some_and(|t| !t.is_empty()));

        let variables = json["templating"]["list"].as_array().expect("templating");
        let variable = |name: &str| {
            variables
                .iter()
                .find(|v| v["name"] == name)
                .unwrap_or_else(|| panic!("{file}: no variable {name}"))
        };
        let datasource = variable("datasource");
        assert_eq!(datasource["type"], "datasource", "{file}: {datasource}");
        assert_eq!(datasource["query"], "prometheus", "{file}: {datasource}");
        for name in ["service", "instance"] {
            assert_eq!(variable(name)["type"], "query", "{file}: {name}");
        }

        let mut references = Vec::new();
        prometheus_datasources(&json, &mut references);
        assert!(!references.is_empty());
        for ds in references {
            assert_eq!(
                ds["uid"], "${datasource}",
                "{file}: a datasource not taken from the variable: {ds}"
            );
        }

        let mut ids = BTreeSet::new();
        for panel in all_panels(&json) {
            let title = panel["title"].as_str().unwrap_or("?");
            let id = panel["id"].as_u64().expect("panel id");
            assert!(ids.insert(id), "{file}: panel id {id} used twice");
            if panel["type"] == "row" {
                continue;
            }
            assert!(
                panel["description"].as_str().is_some_and(|d| d.len() > 20),
                "{file}: panel {title:?} has no description"
            );
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{file}: panel {title:?} has no target");
            for target in targets {
                assert!(
                    target["expr"].as_str().is_some_and(|e| !e.is_empty()),
                    "{file}: panel {title:?}: a target without expr: {target}"
                );
            }
        }
    }

    for query in dashboard_queries() {
        let expr = &query.expr;
        assert!(
            expr.contains("service=~\"$service\""),
            "{}: not filtered by service: {expr}",
            query.name()
        );
        assert!(
            expr.contains("instance=~\"$instance\"")
                || expr.contains(FLEET_MEDIAN)
                || expr.starts_with(SERVICE_RECORD),
            "{}: not filtered by instance: {expr}",
            query.name()
        );
        substitute(expr).unwrap_or_else(|e| panic!("{}: {e}", query.name()));
    }

    let provisioning = root().join("dashboards/grafana/provisioning");
    let read = |name: &str| {
        std::fs::read_to_string(provisioning.join(name))
            .unwrap_or_else(|e| panic!("provisioning/{name}: {e}"))
    };
    let providers = read("dashboards.yml");
    for needle in ["apiVersion: 1", "providers:", "type: file", "path:"] {
        assert!(providers.contains(needle), "dashboards.yml lacks {needle}");
    }
    let datasources = read("datasources.yml");
    for needle in [
        "apiVersion: 1",
        "type: prometheus",
        "uid: prometheus",
        "url: http://localhost:9090",
    ] {
        assert!(
            datasources.contains(needle),
            "datasources.yml lacks {needle}"
        );
    }
}

// ---------------------------------------------------------------- time

/// Seconds since the start of the wall-clock minute of `at`.
fn second_of_minute(at: DateTime<Utc>) -> f64 {
    at.timestamp().rem_euclid(60) as f64 + f64::from(at.timestamp_subsec_millis()) / 1000.0
}

/// The time decoration of a GC log line (`[2026-11-30T02:21:19.737+0000]...`).
fn gc_line_time(line: &str) -> Option<DateTime<Utc>> {
    let decoration = line.strip_prefix('[')?.split(']').next()?;
    DateTime::parse_from_str(decoration, GC_TIME_FORMAT)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The fixture's access log with every request start moved by `shift`.
fn shifted_access_log(shift: TimeDelta) -> String {
    let text = std::fs::read_to_string(fixture("access.jsonl")).expect("read access.jsonl");
    let mut out = String::with_capacity(text.len() + 1024);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut request: Value = serde_json::from_str(line).expect("access.jsonl line is JSON");
        let start = request["start"].as_str().expect("start");
        let start = DateTime::parse_from_rfc3339(start).expect("RFC 3339 start");
        let moved =
            (start.with_timezone(&Utc) + shift).to_rfc3339_opts(SecondsFormat::Micros, true);
        request["start"] = Value::String(moved);
        out.push_str(&request.to_string());
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------- the test

#[test]
fn every_dashboard_query_returns_data() {
    let Some(prometheus) = common::prometheus_or_skip() else {
        return;
    };
    let started = Instant::now();
    let deadline = started + TEST_BUDGET;
    let queries = dashboard_queries();
    let variables = label_values_variables();

    let source = fixture("gc.log");
    let log_text = std::fs::read_to_string(&source).expect("read the fixture GC log");
    let log_lines = log_text.bytes().filter(|&b| b == b'\n').count() as f64;
    let first_time = log_text
        .lines()
        .find_map(gc_line_time)
        .expect("the fixture log has a time decoration");

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let ports = common::free_ports(AGENTS + 1);
    let (agent_ports, prom_port) = (ports[..AGENTS].to_vec(), ports[AGENTS]);
    let gc_log = dir.join("gc.log");
    let access_log = dir.join("access.jsonl");
    File::create(&gc_log).expect("create the GC log");
    File::create(&access_log).expect("create the access log");

    let mut children = Children::new(&dir);
    children.dump_on_failure(&agent_ports, &MAIN_SERIES);
    for (i, port) in agent_ports.iter().enumerate() {
        let config = [
            format!("listen = \"127.0.0.1:{port}\""),
            format!(
                "checkpoint_dir = {}",
                toml_string(&dir.join(format!("checkpoint-{i}")))
            ),
            "poll_interval = \"100ms\"".to_string(),
            String::new(),
            "[[gc_log]]".to_string(),
            format!("path = {}", toml_string(&gc_log)),
            "start_at = \"beginning\"".to_string(),
            format!("labels = {{ service = \"{SERVICE}\" }}"),
            String::new(),
            "[[access_log]]".to_string(),
            format!("path = {}", toml_string(&access_log)),
            "format = \"json\"".to_string(),
            "time_field = \"start\"".to_string(),
            "duration_field = \"duration_ms\"".to_string(),
            "duration_unit = \"ms\"".to_string(),
            "start_at = \"beginning\"".to_string(),
            String::new(),
            "[correlation]".to_string(),
            "slo = \"50ms\"".to_string(),
            format!("finalize_after = \"{FINALIZE_AFTER_SECONDS}s\""),
        ];
        let path = dir.join(format!("pausewatch-{i}.toml"));
        std::fs::write(&path, config.join("\n") + "\n").unwrap();
        children.spawn_service(&format!("agent-{i}"), &mut common::run_command(&path));
    }

    let rules = root().join("dashboards/prometheus/pausewatch-rules.yml");
    let rule_files: Vec<PathBuf> = rules.is_file().then(|| rules.clone()).into_iter().collect();
    let prom = Prometheus::start(
        &mut children,
        &prometheus,
        prom_port,
        &agent_ports,
        &rule_files,
        None,
    );

    for port in &agent_ports {
        children.wait_until(deadline, "the agents serving /metrics", |_| {
            common::serves_metrics(*port)
        });
    }
    prom.wait_ready(&mut children, deadline);
    if rules.is_file() {
        let groups = prom.api("/api/v1/rules").expect("rules API");
        let groups = groups["groups"].as_array().map_or(0, Vec::len);
        eprintln!("loaded {} ({groups} rule groups)", rules.display());
    } else {
        eprintln!("{} does not exist: no rules loaded", rules.display());
    }
    // A scrape of the empty logs by both agents, so that every counter is seen growing.
    let empty =
        format!("pausewatch_log_lines_total{{job=\"pausewatch\",service=\"{SERVICE}\"}} == 0");
    children.wait_until(deadline, "a first scrape of every agent", |_| {
        prom.count(&empty) == AGENTS
    });

    // Start the replay where its first minute holds a full GC and slow
    // requests and ends soon enough.
    let second = second_of_minute(Utc::now());
    let (from, to) = START_WINDOW_SECONDS;
    if !(from..=to).contains(&second) {
        let wait = Duration::from_secs_f64((from - second).rem_euclid(60.0));
        eprintln!("at :{second:.1}, waiting {wait:.1?} to start the replay at :{from}");
        let until = Instant::now() + wait;
        children.wait_until(deadline, "the replay's start", |_| Instant::now() >= until);
    }
    children.spawn_job(
        "replay",
        &mut common::replay_command(&source, &gc_log, &["--speed", "8", "--retime"]),
    );

    // The replay's shift, read back from its first line: the access log gets
    // exactly the same one, so that requests overlap the pauses they did.
    let mut shift = None;
    children.wait_until(deadline, "the replay's first line", |_| {
        let text = std::fs::read_to_string(&gc_log).unwrap_or_default();
        shift = text
            .lines()
            .next()
            .filter(|_| text.contains('\n'))
            .and_then(gc_line_time)
            .map(|now| now - first_time);
        shift.is_some()
    });
    let shift = shift.unwrap();
    let replay_start = first_time + shift;
    OpenOptions::new()
        .append(true)
        .open(&access_log)
        .and_then(|mut f| f.write_all(shifted_access_log(shift).as_bytes()))
        .expect("write the access log");
    let first_minute = replay_start.timestamp().div_euclid(60) * 60;
    let minute_end = first_minute + 60;
    eprintln!(
        "replay started at {replay_start} (:{:.1}); its first minute is attributed at about {}",
        second_of_minute(replay_start),
        DateTime::from_timestamp(minute_end + FINALIZE_AFTER_SECONDS, 0).unwrap()
    );

    // Until Prometheus holds the attributed minute of both agents and the whole log.
    let lines = format!(
        "pausewatch_log_lines_total{{job=\"pausewatch\",service=\"{SERVICE}\"}} == {log_lines}"
    );
    let attributed = format!(
        "pausewatch_request_latency_p999_without_stop_affected_seconds{{service=\"{SERVICE}\"}}"
    );
    let slow = format!("increase(pausewatch_slow_requests_total{{service=\"{SERVICE}\"}}[1m]) > 0");
    children.wait_until(
        deadline,
        "Prometheus to hold both agents' attributed minute",
        |children| {
            let replayed = match children.exited("replay") {
                Some(status) => {
                    assert!(status.success(), "pausewatch replay failed: {status}");
                    true
                }
                None => false,
            };
            replayed
                && prom.count(&lines) == AGENTS
                && prom.count(&attributed) == AGENTS
                && prom.count(&slow) == AGENTS
        },
    );
    // The recording rules (the fleet dashboard's series) evaluated over the
    // data: the newest evaluation may predate it by one interval (1 s).
    let evaluated = Instant::now() + Duration::from_secs(3);
    children.wait_until(deadline, "the rules' evaluation over the data", |_| {
        Instant::now() >= evaluated
    });
    eprintln!(
        "data ready after {:.1} s; running {} dashboard queries and {} variable queries\n",
        started.elapsed().as_secs_f64(),
        queries.len(),
        variables.len()
    );

    let mut failures = Vec::new();
    for q in &queries {
        let promql = substitute(&q.expr).unwrap_or_else(|e| panic!("{}: {e}", q.name()));
        let allowed = allowed_empty(&q.expr);
        // A per-minute query draws a minute at its start only: run it there.
        let at = q.expr.contains(PER_MINUTE).then_some(first_minute);
        match prom.query_at(&promql, at) {
            Err(error) => {
                eprintln!(
                    "[FAIL] error    {}\n       {promql}\n       {error}",
                    q.name()
                );
                failures.push(format!("{}: {error}", q.name()));
            }
            Ok(result) => {
                let finite = result
                    .iter()
                    .filter(|s| sample_value(s).is_finite())
                    .count();
                let values: Vec<String> = result
                    .iter()
                    .take(3)
                    .map(|s| format!("{:.4}", sample_value(s)))
                    .collect();
                let verdict = match (finite, allowed) {
                    (0, Some(_)) => "[ok, allowed empty]",
                    (0, None) => "[FAIL]",
                    _ => "[ok]",
                };
                eprintln!(
                    "{verdict} {} series ({finite} finite) {}\n       {promql}\n       values {values:?}",
                    result.len(),
                    q.name()
                );
                if let (0, Some(reason)) = (finite, allowed) {
                    eprintln!("       {reason}");
                }
                if finite == 0 && allowed.is_none() {
                    failures.push(format!(
                        "{}: {} series, none finite: {promql}",
                        q.name(),
                        result.len()
                    ));
                }
            }
        }
    }
    for (name, selector, label) in &variables {
        let selector = substitute(selector).unwrap_or_else(|e| panic!("${name}: {e}"));
        let promql = format!("group by ({label}) ({selector})");
        let values: Vec<String> = prom
            .query(&promql)
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s["metric"][label.as_str()].as_str().map(str::to_string))
            .collect();
        let verdict = if values.is_empty() { "[FAIL]" } else { "[ok]" };
        eprintln!("{verdict} variable ${name}: label_values({selector}, {label}) = {values:?}");
        if values.is_empty() {
            failures.push(format!("variable ${name}: no {label} values of {selector}"));
        }
    }

    // The headline panel over the replay's minute and the one before (quiet,
    // no requests), point by point against each agent's own minutes.
    let points = common::check_headline_panel(&prom, &agent_ports, first_minute - 60, first_minute);
    eprintln!("headline panel: {points} points drawn at their minute");

    let elapsed = started.elapsed();
    eprintln!(
        "\ndashboards.rs: {} queries, {} failed, {:.1} s",
        queries.len() + variables.len(),
        failures.len(),
        elapsed.as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} dashboard queries returned no data:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(elapsed <= TEST_BUDGET, "took {elapsed:?}");
}
