//! The release rule end to end: a fleet of agents, one real Prometheus with
//! the rules `pausewatch rules --config` prints, one real Alertmanager, and
//! VictoriaMetrics scraping the same agents.
//!
//! Two services, each instance an agent process of its own following the GC
//! log and access log of one instance of the Java stand-in service
//! (`tests/fixtures/compare`), written live at their own pace by the
//! product's replay (`pausewatch::commands::replay`):
//!
//! - `checkout`, 8 instances: seven replay the baseline run, each from
//!   another point of it; the canary replays the run with the grown cache.
//!   `CanaryPauseRegression` and `CanaryTailRegression` must fire for the
//!   canary, for no other instance, and reach Alertmanager once each; the
//!   dashboard's "Canary vs fleet" queries must rank the canary first.
//! - `search`, 6 instances of the baseline, restarted one after the other (a
//!   new JVM run: the GC log truncated, the JVM's start-up pauses again):
//!   nothing fires.
//!
//! The rules run with the shortest window the configuration takes
//! (`window = "2m"`, `for = "3m"`): each minute's figure is stamped with its
//! minute's start and reaches Prometheus only after the minute ends, so the
//! rules' range is a minute longer than the window and holds a minute at
//! every evaluation (with the window as the range, the records vanished for
//! seconds after every minute and the canary never fired); `for` is longer
//! than a minute's figure stays in that range (2 minutes), so that a
//! restart's start-up pauses cannot fire. VictoriaMetrics answers the same dashboard
//! queries; where its values differ from Prometheus', the test says which
//! (see `dashboards/README.md`).
//!
//! Needs prometheus, prometheus-alertmanager and victoria-metrics (Debian
//! packages, which CI installs); without them the test is SKIPPED (and fails
//! under `PAUSEWATCH_REQUIRE_ALL=1`).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{root, toml_string, Children, Prometheus};
use chrono::Utc;
use pausewatch::commands::replay::retimed;
use pausewatch_parsers::line_time;
use serde_json::Value;

use crate::common;

const CANARY_SERVICE: &str = "checkout";
const ROLLING_SERVICE: &str = "search";
/// Instances of `checkout`; the canary is one of them.
const CHECKOUT_INSTANCES: usize = 8;
const CANARY_INDEX: usize = 3;
const SEARCH_INSTANCES: usize = 6;
/// Search instance `j` restarts this long after the test's start, plus
/// `RESTART_STEP` per instance before it.
const FIRST_RESTART: f64 = 5.0;
const RESTART_STEP: f64 = 5.0;
/// The baseline instances of checkout start this far into the recorded
/// run, plus `PHASE_STEP` each: their pauses do not line up, as in a fleet.
const FIRST_PHASE: f64 = 60.0;
const PHASE_STEP: f64 = 45.0;
/// The rules' configuration: the shipped rules with short windows.
const RULES_CONFIG: &str = "[alerts.canary_pause]\nwindow = \"2m\"\nfor = \"3m\"\n\
                            [alerts.canary_tail]\nwindow = \"2m\"\nfor = \"3m\"\n";
/// The canary's alerts fire about 4 minutes in: the first minute's
/// figures, then `for`.
const TEST_BUDGET: Duration = Duration::from_secs(480);
/// The rolling restart is watched until a firing would have shown: the last
/// restart, its start-up pause (35 s of uptime in the baseline run), the
/// minute it ends in, and `for`.
const WATCH_ROLLING_FOR: Duration = Duration::from_secs(
    (FIRST_RESTART + RESTART_STEP * SEARCH_INSTANCES as f64) as u64 + 40 + 60 + 180 + 10,
);
const CANARY_ALERTS: [&str; 2] = ["CanaryPauseRegression", "CanaryTailRegression"];
const MAIN_SERIES: [&str; 3] = [
    "pausewatch_gc_pause_max_seconds",
    "pausewatch_request_latency_p999_seconds",
    "pausewatch_log_lines_total",
];

// ---------------------------------------------------------------- recorded runs

/// One recorded run of the stand-in service: its GC log and access log
/// lines, each at its offset (seconds) from the JVM's start.
struct Run {
    gc: Vec<(f64, String)>,
    access: Vec<(f64, String)>,
    /// Wall time of the JVM's start (epoch seconds).
    start: f64,
}

impl Run {
    fn read(name: &str) -> Run {
        let dir = root().join("tests/fixtures/compare").join(name);
        let gc_text = std::fs::read_to_string(dir.join("gc.log")).expect("fixture gc.log");
        let first = gc_text
            .lines()
            .find_map(line_time)
            .expect("a timed first line");
        let start = first.wall.expect("time decoration").timestamp_micros() as f64 / 1e6
            - first.uptime_s.expect("uptime decoration");
        let mut offset = 0.0;
        let gc = (gc_text.lines())
            .map(|line| {
                if let Some(uptime) = line_time(line).and_then(|t| t.uptime_s) {
                    offset = uptime;
                }
                (offset, line.to_string())
            })
            .collect();
        let access_text =
            std::fs::read_to_string(dir.join("access.log")).expect("fixture access.log");
        let access = (access_text.lines())
            .filter_map(|line| Some((completion(line)? - start, line.to_string())))
            .collect();
        Run { gc, access, start }
    }

    /// The run's last offset.
    fn length(&self) -> f64 {
        self.gc.last().map_or(0.0, |(offset, _)| *offset)
    }
}

/// `$msec` of a `$request_time $msec` line.
fn completion(line: &str) -> Option<f64> {
    line.split_once(' ')?.1.trim().parse().ok()
}

fn now_seconds() -> f64 {
    Utc::now().timestamp_micros() as f64 / 1e6
}

/// A stretch of one run an instance writes: from `from` to `until` seconds
/// of the run; `fresh` is a new JVM (its GC log truncated first).
struct Segment<'a> {
    run: &'a Run,
    from: f64,
    until: f64,
    fresh: bool,
}

impl<'a> Segment<'a> {
    /// The JVM already running: `run` from `from` to `until` seconds.
    fn running(run: &'a Run, from: f64, until: f64) -> Segment<'a> {
        Segment {
            run,
            from,
            until,
            fresh: false,
        }
    }

    /// A new JVM: all of `run`, its GC log truncated first.
    fn restarted(run: &'a Run) -> Segment<'a> {
        Segment {
            run,
            from: 0.0,
            until: run.length(),
            fresh: true,
        }
    }
}

/// Writes the segments one after the other into `dir`'s `gc.log` and
/// `access.log`, each line when its moved time comes: the GC log's through
/// the product's `retimed`, the requests moved by the same shift. A
/// segment that starts mid-run first writes the JVM's preamble (its first
/// second), as a log already open would hold it. Returns when `stop` is set.
fn play(dir: &Path, segments: &[Segment], stop: &AtomicBool) {
    let gc_path = dir.join("gc.log");
    let open = |path: &Path| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open a log")
    };
    let mut access = open(&dir.join("access.log"));
    for segment in segments {
        if segment.fresh {
            std::fs::write(&gc_path, b"").expect("truncate the GC log");
        }
        let mut gc = open(&gc_path);
        let shift = now_seconds() - (segment.run.start + segment.from);
        let gc_shift = chrono::Duration::microseconds((shift * 1e6) as i64);
        let preamble =
            (segment.run.gc.iter()).filter(|(offset, _)| *offset < 1.0 && segment.from > 0.0);
        for (_, line) in preamble {
            writeln!(gc, "{}", retimed(line, gc_shift)).unwrap();
        }
        let in_segment = |offset: f64| offset >= segment.from && offset < segment.until;
        let gc_lines = (segment.run.gc.iter()).filter(|(o, _)| in_segment(*o));
        let access_lines = (segment.run.access.iter()).filter(|(o, _)| in_segment(*o));
        let mut merged: Vec<(f64, bool, &String)> = gc_lines
            .map(|(o, l)| (*o, true, l))
            .chain(access_lines.map(|(o, l)| (*o, false, l)))
            .collect();
        merged.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (offset, is_gc, line) in merged {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let wait = segment.run.start + offset + shift - now_seconds();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
            if is_gc {
                writeln!(gc, "{}", retimed(line, gc_shift)).unwrap();
            } else {
                let latency = line.split_once(' ').map_or("", |(l, _)| l);
                let moved = completion(line).unwrap() + shift;
                writeln!(access, "{latency} {moved:.3}").unwrap();
            }
        }
    }
}

// ---------------------------------------------------------------- the fleet

/// One instance: its directory and agent port.
struct Instance {
    service: &'static str,
    dir: PathBuf,
    port: u16,
}

impl Instance {
    fn label(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn config(&self) -> String {
        let gc_log = toml_string(&self.dir.join("gc.log"));
        let access_log = toml_string(&self.dir.join("access.log"));
        let checkpoint = toml_string(&self.dir.join("checkpoint"));
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {checkpoint}\npoll_interval = \"200ms\"\n\
             [discovery]\nenabled = false\n\
             [[gc_log]]\npath = {gc_log}\nstart_at = \"beginning\"\nlabels = {{ service = \"{service}\" }}\n\
             [[access_log]]\npath = {access_log}\nformat = \"nginx\"\nlog_format = '$request_time $msec'\nstart_at = \"beginning\"\n\
             [correlation]\nslo = \"50ms\"\nfinalize_after = \"1s\"\n",
            port = self.port,
            service = self.service,
        )
    }
}

/// Prometheus' file-based service discovery: every agent with its service.
fn file_sd(instances: &[Instance]) -> String {
    let groups: Vec<Value> = (instances.iter())
        .map(|i| serde_json::json!({"targets": [i.label()], "labels": {"fleet": "test"}}))
        .collect();
    serde_json::to_string_pretty(&groups).unwrap()
}

/// Alertmanager's active alerts named `alertname`.
fn alertmanager_alerts(port: u16, alertname: &str) -> Vec<Value> {
    let body = match common::http_get(port, "/api/v2/alerts?active=true") {
        Ok((200, body)) => body,
        _ => return Vec::new(),
    };
    let alerts: Value = serde_json::from_str(&body).unwrap_or_default();
    (alerts.as_array().into_iter().flatten())
        .filter(|a| a["labels"]["alertname"] == alertname)
        .cloned()
        .collect()
}

/// `pausewatch rules --config FILE`, written to `dir/rules.yml`.
fn write_rules(dir: &Path) -> PathBuf {
    let config = dir.join("rules.toml");
    std::fs::write(&config, RULES_CONFIG).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_pausewatch"))
        .args(["rules", "--config"])
        .arg(&config)
        .output()
        .expect("run pausewatch rules");
    assert!(output.status.success(), "{output:?}");
    let rules = dir.join("rules.yml");
    std::fs::write(&rules, &output.stdout).unwrap();
    rules
}

/// The "Canary vs fleet" panels' per-instance queries, with the
/// dashboard's variables set to `service` and every instance.
fn canary_panel_queries(service: &str) -> Vec<(String, String)> {
    let path = root().join("dashboards/grafana/pausewatch.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap_or_default();
        let canary_row = ["instance vs service median", "Instance ÷ service median"];
        if !canary_row.iter().any(|t| title.contains(t)) {
            continue;
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            // The per-instance series; the medians have no instance to rank.
            if target["legendFormat"]
                .as_str()
                .is_some_and(|l| l.contains("{{instance}}"))
            {
                let expr = expr.replace("$service", service).replace("$instance", ".+");
                queries.push((title.to_string(), expr));
            }
        }
    }
    assert!(
        queries.len() >= 4,
        "the Canary vs fleet panels changed: {queries:?}"
    );
    queries
}

/// Each instance's mean over the per-minute range of `promql` at minute starts.
fn means_by_instance(
    query: impl Fn(&str, i64, i64) -> Result<Vec<Value>, String>,
    promql: &str,
    (start, end): (i64, i64),
) -> BTreeMap<String, f64> {
    let series = query(promql, start, end).unwrap_or_else(|e| panic!("{e}"));
    (series.iter())
        .filter_map(|s| {
            let values: Vec<f64> = (s["values"].as_array()?.iter())
                .filter_map(|v| v[1].as_str()?.parse().ok())
                .filter(|v: &f64| v.is_finite())
                .collect();
            let instance = s["metric"]["instance"].as_str()?.to_string();
            (!values.is_empty())
                .then(|| (instance, values.iter().sum::<f64>() / values.len() as f64))
        })
        .collect()
}

/// `victoria-metrics` (Debian's package), or `None` after skipping.
fn victoria_or_skip() -> Option<PathBuf> {
    common::or_skip(
        common::installed("victoria-metrics"),
        "victoria-metrics is not installed (apt-get install victoria-metrics)",
    )
}

/// VictoriaMetrics' `/api/v1/query_range` (the Prometheus API).
fn victoria_range(port: u16, promql: &str, start: i64, end: i64) -> Result<Vec<Value>, String> {
    let target = format!(
        "/api/v1/query_range?query={}&start={start}&end={end}&step=60",
        common::url_encode(promql)
    );
    let (status, body) = common::http_get(port, &target)?;
    let json: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if status != 200 || json["status"] != "success" {
        return Err(format!("{promql}: HTTP {status}: {body}"));
    }
    Ok(json["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The samples of a VictoriaMetrics export (JSON lines): each series'
/// timestamps (seconds) with their values, in the order stored.
fn exported_samples(export: &str) -> Vec<(i64, f64)> {
    let mut samples = Vec::new();
    for line in export.lines() {
        let series: Value = serde_json::from_str(line).unwrap_or_default();
        let stamps = series["timestamps"].as_array().cloned().unwrap_or_default();
        let values = series["values"].as_array().cloned().unwrap_or_default();
        for (t, v) in stamps.iter().zip(&values) {
            if let (Some(t), Some(v)) = (t.as_i64(), v.as_f64()) {
                samples.push((t / 1000, v));
            }
        }
    }
    samples
}

/// Each series' stored samples, by instance and timestamp (seconds): what
/// an engine holds, as opposed to what a query makes of it.
type Stored = BTreeMap<String, BTreeMap<i64, Vec<f64>>>;

/// What Prometheus stored for `selector` over the last `window`: one value
/// a timestamp, the first it scraped.
fn stored_in_prometheus(prom: &common::Prometheus, selector: &str, window: &str) -> Stored {
    let query = format!("{selector}[{window}]");
    let target = format!("/api/v1/query?query={}", common::url_encode(&query));
    let data = prom.api(&target).unwrap_or_else(|e| panic!("{e}"));
    let mut stored = Stored::new();
    for series in data["result"].as_array().into_iter().flatten() {
        let instance = series["metric"]["instance"].as_str().unwrap_or_default();
        let samples = stored.entry(instance.to_string()).or_default();
        for point in series["values"].as_array().into_iter().flatten() {
            if let (Some(t), Some(v)) = (point[0].as_f64(), point[1].as_str()) {
                samples
                    .entry(t as i64)
                    .or_default()
                    .push(v.parse().unwrap());
            }
        }
    }
    stored
}

/// What VictoriaMetrics stored for `selector`: every value scraped for a
/// timestamp, in the order stored.
fn stored_in_victoria(vm_port: u16, selector: &str) -> Stored {
    let target = format!("/api/v1/export?match[]={}", common::url_encode(selector));
    let (_, export) = common::http_get(vm_port, &target).unwrap_or_else(|e| panic!("{e}"));
    let mut stored = Stored::new();
    for line in export.lines() {
        let series: Value = serde_json::from_str(line).unwrap_or_default();
        let instance = series["metric"]["instance"].as_str().unwrap_or_default();
        let samples = stored.entry(instance.to_string()).or_default();
        for (t, v) in exported_samples(line) {
            let values = samples.entry(t).or_default();
            if !values.contains(&v) {
                values.push(v);
            }
        }
    }
    stored
}

/// The instances and timestamps in `[from, to]` whose stored values differ
/// between the engines, which scrape at different moments: a minute's
/// figure the agent revised between two scrapes (a line read after its
/// minute ended, on a loaded machine), of which Prometheus keeps the first
/// value and VictoriaMetrics every one it scraped; or a minute published so
/// briefly (the next one right after it) that one engine never scraped it.
fn stored_differently(
    prometheus: &Stored,
    victoria: &Stored,
    (from, to): (i64, i64),
) -> Vec<(String, i64, Vec<f64>, Vec<f64>)> {
    // VictoriaMetrics keeps about 12 significant digits.
    let close = |a: &f64, b: &f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    let covers = |x: &[f64], y: &[f64]| x.iter().all(|a| y.iter().any(|b| close(a, b)));
    let mut differing = Vec::new();
    let instances: std::collections::BTreeSet<&String> =
        prometheus.keys().chain(victoria.keys()).collect();
    for instance in instances {
        let stamps = |stored: &Stored| {
            (stored.get(instance).into_iter().flatten())
                .filter(|(t, _)| (from..=to).contains(*t))
                .map(|(t, v)| (*t, v.clone()))
                .collect::<BTreeMap<i64, Vec<f64>>>()
        };
        let (in_prometheus, in_victoria) = (stamps(prometheus), stamps(victoria));
        let all: std::collections::BTreeSet<i64> = in_prometheus
            .keys()
            .chain(in_victoria.keys())
            .copied()
            .collect();
        for t in all {
            let (p, v) = (
                in_prometheus.get(&t).cloned().unwrap_or_default(),
                in_victoria.get(&t).cloned().unwrap_or_default(),
            );
            if !(covers(&p, &v) && covers(&v, &p)) {
                differing.push((instance.clone(), t, p, v));
            }
        }
    }
    differing
}

#[test]
fn canary_alerts_fire_for_the_canary_alone_and_a_rolling_restart_fires_nothing() {
    let (Some(prometheus), Some(alertmanager), Some(victoria)) = (
        common::prometheus_or_skip(),
        common::alertmanager_or_skip(),
        victoria_or_skip(),
    ) else {
        return;
    };
    let started = Instant::now();
    let deadline = started + TEST_BUDGET;
    let baseline = Run::read("baseline");
    let candidate = Run::read("candidate");

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let ports = common::free_ports(CHECKOUT_INSTANCES + SEARCH_INSTANCES + 3);
    let (prom_port, am_port, vm_port) = (ports[0], ports[1], ports[2]);
    let services = (0..CHECKOUT_INSTANCES)
        .map(|_| CANARY_SERVICE)
        .chain((0..SEARCH_INSTANCES).map(|_| ROLLING_SERVICE));
    let instances: Vec<Instance> = services
        .zip(&ports[3..])
        .enumerate()
        .map(|(i, (service, port))| {
            let dir = dir.join(format!("{service}-{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            for log in ["gc.log", "access.log"] {
                std::fs::write(dir.join(log), b"").unwrap();
            }
            Instance {
                service,
                dir,
                port: *port,
            }
        })
        .collect();
    let canary = instances[CANARY_INDEX].label();
    let agent_ports: Vec<u16> = instances.iter().map(|i| i.port).collect();

    let mut children = Children::new(&dir);
    children.dump_on_failure(&agent_ports, &MAIN_SERIES);
    for (i, instance) in instances.iter().enumerate() {
        let config = instance.dir.join("pausewatch.toml");
        std::fs::write(&config, instance.config()).unwrap();
        children.spawn_service(&format!("agent-{i}"), &mut common::run_command(&config));
    }
    children.spawn_service(
        "alertmanager",
        &mut common::alertmanager_command(&alertmanager, &dir, am_port),
    );
    let targets = dir.join("targets.json");
    std::fs::write(&targets, file_sd(&instances)).unwrap();
    let job = format!(
        "  - job_name: pausewatch\n    honor_timestamps: true\n    file_sd_configs:\n      - files: [{}]\n        refresh_interval: 1s",
        toml_string(&targets)
    );
    let rules = write_rules(&dir);
    let prom = Prometheus::start_with_jobs(
        &mut children,
        &prometheus,
        prom_port,
        &[rules],
        Some(am_port),
        std::slice::from_ref(&job),
    );
    // VictoriaMetrics reads the same scrape configuration (its promscrape),
    // but for file_sd's refresh_interval, which it does not know.
    let vm_config = dir.join("victoria.yml");
    let vm_job = job.replace("\n        refresh_interval: 1s", "");
    std::fs::write(
        &vm_config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n{vm_job}\n"),
    )
    .unwrap();
    children.spawn_service(
        "victoria-metrics",
        Command::new(&victoria)
            .arg(format!("-promscrape.config={}", vm_config.display()))
            .arg(format!(
                "-storageDataPath={}",
                dir.join("victoria").display()
            ))
            .arg(format!("-httpListenAddr=127.0.0.1:{vm_port}"))
            .arg("-search.latencyOffset=0s"),
    );
    for port in &agent_ports {
        children.wait_until(deadline, "every agent serving /metrics", |_| {
            common::serves_metrics(*port)
        });
    }
    prom.wait_ready(&mut children, deadline);

    // The fleet's logs, written live from now.
    let test_start = Instant::now();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // The writers stop when the checks end, passed or not.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop_writers = StopOnDrop(&stop);
        for (i, instance) in instances.iter().enumerate() {
            let (baseline, candidate) = (&baseline, &candidate);
            let segments = if instance.service == ROLLING_SERVICE {
                let j = (i - CHECKOUT_INSTANCES) as f64;
                let from = FIRST_PHASE + PHASE_STEP * j;
                let restart = FIRST_RESTART + RESTART_STEP * j;
                vec![
                    Segment::running(baseline, from, from + restart),
                    Segment::restarted(baseline),
                ]
            } else if i == CANARY_INDEX {
                vec![Segment::running(candidate, FIRST_PHASE, candidate.length())]
            } else {
                let from = (FIRST_PHASE + PHASE_STEP * i as f64) % (baseline.length() - 60.0);
                vec![
                    Segment::running(baseline, from, baseline.length()),
                    Segment::restarted(baseline),
                ]
            };
            let (dir, stop) = (instance.dir.clone(), &stop);
            scope.spawn(move || play(&dir, &segments, stop));
        }

        // Until both canary alerts reach Alertmanager and the rolling
        // restart has been watched long enough; nothing else may fire.
        let others_firing = format!(
            "ALERTS{{alertname=~\"Canary.*\", alertstate=\"firing\", instance!=\"{canary}\"}}"
        );
        children.wait_until(
            deadline,
            "the canary's alerts in Alertmanager, the rolling restart watched",
            |_| {
                let firing = prom.query(&others_firing).unwrap_or_default();
                assert!(
                    firing.is_empty(),
                    "a canary alert fired for another instance: {firing:?}"
                );
                CANARY_ALERTS
                    .iter()
                    .all(|name| !alertmanager_alerts(am_port, name).is_empty())
                    && test_start.elapsed() >= WATCH_ROLLING_FOR
            },
        );
        eprintln!(
            "canary alerts delivered, rolling restart watched after {:?}",
            test_start.elapsed()
        );

        for name in CANARY_ALERTS {
            let delivered = alertmanager_alerts(am_port, name);
            assert_eq!(delivered.len(), 1, "{name} in Alertmanager: {delivered:?}");
            let labels = &delivered[0]["labels"];
            assert_eq!(labels["instance"], canary.as_str(), "{labels}");
            assert_eq!(labels["service"], CANARY_SERVICE, "{labels}");
            assert_eq!(labels["source"], "prometheus", "{labels}");
        }
        // Over the whole test, no canary alert of another instance was
        // ever firing or even pending in the rolling service's case.
        let ever = format!(
            "max_over_time(ALERTS{{alertname=~\"Canary.*\", alertstate=\"firing\", instance!=\"{canary}\"}}[10m])"
        );
        assert_eq!(prom.query(&ever).unwrap(), Vec::<Value>::new());
        let rolling = format!(
            "max_over_time(ALERTS{{alertname=~\"Canary.*\", service=\"{ROLLING_SERVICE}\"}}[10m])"
        );
        eprintln!(
            "the rolling restart's canary alerts, pending at most: {:?}",
            prom.query(&rolling).unwrap()
        );

        // The dashboard ranks the canary first, in Prometheus and in VictoriaMetrics.
        let now = Utc::now().timestamp();
        let range = (
            (now - 240).div_euclid(60) * 60,
            (now - 60).div_euclid(60) * 60,
        );
        let mut differences = Vec::new();
        for (title, promql) in canary_panel_queries(CANARY_SERVICE) {
            let from_prometheus =
                means_by_instance(|q, s, e| prom.query_range(q, s, e, 60), &promql, range);
            let top = from_prometheus
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(instance, _)| instance.clone());
            assert_eq!(
                top.as_deref(),
                Some(canary.as_str()),
                "{title}: {promql}: {from_prometheus:?}"
            );
            assert!(
                from_prometheus.len() >= CHECKOUT_INSTANCES - 1,
                "{title}: {from_prometheus:?}"
            );
            let from_victoria =
                means_by_instance(|q, s, e| victoria_range(vm_port, q, s, e), &promql, range);
            let top_in_victoria = (from_victoria.iter())
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(instance, _)| instance.clone());
            assert_eq!(
                top_in_victoria, top,
                "{title} in VictoriaMetrics: {from_victoria:?}"
            );
            let metric = [
                "pausewatch_request_latency_p999_seconds",
                "pausewatch_gc_pause_max_seconds",
            ]
            .into_iter()
            .find(|m| promql.contains(m))
            .unwrap();
            for (instance, value) in &from_prometheus {
                let other = from_victoria.get(instance).copied();
                if other.is_none_or(|v| (v - value).abs() > 1e-6 * value.abs().max(1e-3)) {
                    let text = format!(
                        "{title}: {instance}: Prometheus {value}, VictoriaMetrics {other:?}"
                    );
                    // A median reads every instance of the service.
                    let of = (!promql.contains("quantile")).then(|| instance.clone());
                    differences.push((metric, of, text));
                }
            }
        }
        // Differences where both engines stored the same samples are a
        // difference of the engines; where they stored different ones
        // (see `stored_differently`) they are a difference of the scrapes.
        let selector = |metric: &str| format!("{metric}{{service=\"{CANARY_SERVICE}\"}}");
        let differing: BTreeMap<&str, _> = [
            "pausewatch_gc_pause_max_seconds",
            "pausewatch_request_latency_p999_seconds",
        ]
        .into_iter()
        .map(|metric| {
            let (in_prometheus, in_victoria) = (
                stored_in_prometheus(&prom, &selector(metric), "15m"),
                stored_in_victoria(vm_port, &selector(metric)),
            );
            // Both stores read: an empty answer would explain nothing.
            for stored in [&in_prometheus, &in_victoria] {
                assert!(
                    stored.get(&canary).is_some_and(|stamps| !stamps.is_empty()),
                    "{metric} of {canary} stored: {stored:?}"
                );
            }
            let differing = stored_differently(&in_prometheus, &in_victoria, range);
            eprintln!("{metric} stored differently (instance, stamp, Prometheus, VictoriaMetrics): {differing:?}");
            (metric, differing)
        })
        .collect();
        let unexplained: Vec<String> = (differences.into_iter())
            .filter(|(metric, of, text)| {
                let explained = (differing[metric].iter())
                    .any(|(instance, ..)| of.as_ref().is_none_or(|of| of == instance));
                eprintln!("{text}: explained by what was stored: {explained}");
                !explained
            })
            .map(|(_, _, text)| text)
            .collect();
        assert!(
            unexplained.is_empty(),
            "VictoriaMetrics differs from Prometheus where both stored the same samples: {unexplained:?}"
        );
    });
}

/// The recipe for hosts that cannot be scraped, as shipped:
/// `dashboards/prometheus/agent-mode.yml` in a real Prometheus in agent mode
/// beside an agent (the demo), remote-writing to VictoriaMetrics. The
/// central store holds the agent's minute figure with its minute's
/// timestamp, its value, and the host's `instance`.
#[test]
fn agent_mode_prometheus_remote_writes_the_minutes_to_a_central_store() {
    let (Some(prometheus), Some(victoria)) = (common::prometheus_or_skip(), victoria_or_skip())
    else {
        return;
    };
    // Prometheus in agent mode drops samples stamped before it started, so
    // the first figure to arrive is that of the first minute after its
    // start, published when that minute ends: up to 2 minutes.
    let deadline = Instant::now() + Duration::from_secs(200);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let ports = common::free_ports(3);
    let (agent_port, prom_port, vm_port) = (ports[0], ports[1], ports[2]);
    let mut children = Children::new(dir);
    children.spawn_service(
        "agent",
        Command::new(env!("CARGO_BIN_EXE_pausewatch"))
            .args(["run", "--demo", "--listen"])
            .arg(format!("127.0.0.1:{agent_port}")),
    );
    children.spawn_service(
        "victoria-metrics",
        Command::new(&victoria)
            .arg(format!(
                "-storageDataPath={}",
                dir.join("victoria").display()
            ))
            .arg(format!("-httpListenAddr=127.0.0.1:{vm_port}")),
    );
    let shipped = std::fs::read_to_string(root().join("dashboards/prometheus/agent-mode.yml"))
        .expect("the shipped agent-mode configuration");
    let config = shipped
        .replace("127.0.0.1:9464", &format!("127.0.0.1:{agent_port}"))
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("HOST", "host-7")
        .replace(
            "CENTRAL",
            &format!("http://127.0.0.1:{vm_port}/api/v1/write"),
        );
    assert_ne!(config, shipped);
    std::fs::write(dir.join("agent-mode.yml"), &config).unwrap();
    children.spawn_service(
        "prometheus-agent",
        Command::new(&prometheus)
            .arg("--enable-feature=agent")
            .arg(format!(
                "--config.file={}",
                dir.join("agent-mode.yml").display()
            ))
            .arg(format!(
                "--storage.agent.path={}",
                dir.join("agent-wal").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}")),
    );

    // Every figure the agent served for a complete minute, with its stamp,
    // until the central store holds one of them.
    let mut served: Vec<(f64, i64)> = Vec::new();
    let target = format!(
        "/api/v1/export?match[]={}",
        common::url_encode(
            "pausewatch_gc_pause_max_seconds{instance=\"host-7:9464\",job=\"pausewatch\"}"
        )
    );
    let mut central = String::new();
    let arrived = children.poll_until(deadline, |_| {
        let metrics = (common::http_get(agent_port, "/metrics").map(|r| r.1)).unwrap_or_default();
        let stamped = (metrics.lines())
            .find(|l| l.starts_with("pausewatch_gc_pause_max_seconds{"))
            .and_then(|l| {
                let mut fields = l.rsplit(' ');
                let stamp: i64 = fields.next()?.parse().ok()?;
                let value: f64 = fields.next()?.parse().ok()?;
                Some((value, stamp))
            });
        served.extend(stamped.filter(|s| !served.contains(s)));
        central = common::http_get(vm_port, &target)
            .map(|r| r.1)
            .unwrap_or_default();
        exported_samples(&central).iter().any(|(t, v)| {
            (served.iter()).any(|(value, stamp)| t == stamp && (v - value).abs() < 1e-9)
        })
    });
    assert!(
        arrived,
        "the central store never held one of {served:?} (value, minute) for host-7:9464: {central}"
    );
}
