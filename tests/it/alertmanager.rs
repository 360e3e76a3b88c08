//! The agent's alerts reaching a real Prometheus Alertmanager
//! (`prometheus-alertmanager`, Debian package of the same name).
//!
//! Each test starts its own Alertmanager (loopback, clustering off, its own
//! storage and a receiver that does nothing) and its own `pausewatch run`
//! following a GC log into which `pausewatch replay --speed 50 --retime`
//! writes the latency fixture's real log (`tests/fixtures/latency/jdk17-parallel`),
//! stamped from now on: five full GCs of 76-104 ms between 7.6 s and 25.5 s
//! after the first line, young GCs under 36 ms around them.
//!
//! Timing: PauseBudgetExceeded looks at the last complete wall-clock minute,
//! so it fires when the minute holding the long pauses is over and resolves
//! one minute later, when the next minute (without them) is over. The replay
//! is started early enough in a minute (second <= 31) for all long pauses to
//! fall into that minute, waiting for the next minute otherwise. So:
//! firing 29-60 s after the replay, resolution 60 s later; with set-up a test
//! takes 1.5-2.5 minutes. `fires_in_alertmanager_and_resolves` covers the
//! whole life of the alert; `reaches_alertmanager_that_was_down_when_it_fired`
//! stops once the alert arrived. The two run in parallel. Every wait is
//! bounded; children are killed when a test ends, and their logs are printed
//! when it fails.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::alertmanager_or_skip;
use chrono::{DateTime, Timelike, Utc};
use serde_json::Value;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_pausewatch");
const ALERT: &str = "PauseBudgetExceeded";

fn fixture_log() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/latency/jdk17-parallel/gc.log")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

// ---------------------------------------------------------------------------
// Child processes: killed on drop, their output shown when the test failed.

struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &'static str, command: &mut Command, log: PathBuf) -> Process {
        let out = File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Process { name, child, log }
    }

    fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early: {status}", self.name);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(150)..];
            eprintln!(
                "----- {} ({}), last {} lines -----\n{}\n----- end of {} -----",
                self.name,
                self.log.display(),
                tail.len(),
                tail.join("\n"),
                self.name
            );
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP.

fn http_get(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into();
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    let body = response
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("GET {url}: {e}"))?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(format!("GET {url}: HTTP {status}: {body}"))
    }
}

fn get_json(url: &str) -> Result<Value, String> {
    let body = http_get(url)?;
    serde_json::from_str(&body).map_err(|e| format!("GET {url}: {e}: {body}"))
}

/// Polls `probe` every 100 ms until it gives a value; panics after `limit`.
fn wait_for<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {} s waiting for {what}",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `name{labels} value` samples of an exposition whose labels include `wanted`.
fn samples(
    text: &str,
    name: &str,
    wanted: &[(&str, &str)],
) -> Vec<(BTreeMap<String, String>, f64)> {
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (labels, value) = match rest.strip_prefix('{') {
            Some(body) => match body.rsplit_once('}') {
                Some((labels, value)) => (labels, value),
                None => continue,
            },
            None if rest.starts_with(' ') => ("", rest),
            None => continue,
        };
        // Label values here are paths and names: no escaped quotes or commas.
        let labels: BTreeMap<String, String> = labels
            .split("\",")
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                Some((key.trim().to_string(), value.trim_matches('"').to_string()))
            })
            .collect();
        let Some(value) = value.split_whitespace().next().and_then(|v| v.parse().ok()) else {
            continue;
        };
        if wanted
            .iter()
            .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        {
            found.push((labels, value));
        }
    }
    found
}

// ---------------------------------------------------------------------------
// Alertmanager and the agent.

struct Setup {
    dir: tempfile::TempDir,
    alertmanager_binary: PathBuf,
    alertmanager_port: u16,
    agent_port: u16,
    gc_log: PathBuf,
}

impl Setup {
    fn new(alertmanager_binary: PathBuf) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let gc_log = dir.path().join("gc.log");
        File::create(&gc_log).expect("empty gc.log");
        Setup {
            alertmanager_binary,
            alertmanager_port: free_port(),
            agent_port: free_port(),
            gc_log,
            dir,
        }
    }

    fn alertmanager_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.alertmanager_port)
    }

    fn agent_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.agent_port)
    }

    /// Alertmanager with one receiver that does nothing, clustering off.
    fn start_alertmanager(&self) -> Process {
        let mut process = Process::spawn(
            "alertmanager",
            &mut common::alertmanager_command(
                &self.alertmanager_binary,
                self.dir.path(),
                self.alertmanager_port,
            ),
            self.dir.path().join("alertmanager.log"),
        );
        let ready = format!("{}/-/ready", self.alertmanager_url());
        wait_for(Duration::from_secs(20), "Alertmanager to be ready", || {
            process.assert_running();
            http_get(&ready).ok()
        });
        process
    }

    fn start_agent(&self) -> Process {
        let config = self.dir.path().join("pausewatch.toml");
        std::fs::write(
            &config,
            format!(
                r#"listen = "127.0.0.1:{port}"
checkpoint_dir = {checkpoints:?}
poll_interval = "100ms"

[[gc_log]]
path = {log:?}
start_at = "beginning"

# The JVMs of other tests on this host would have alerts of their own.
[discovery]
enabled = false

[alerts]
alertmanager_url = "{alertmanager}"
evaluation_interval = "1s"
resend_interval = "5s"
labels = {{ team = "payments" }}
"#,
                port = self.agent_port,
                checkpoints = self.dir.path().join("checkpoints").display().to_string(),
                log = self.gc_log.display().to_string(),
                alertmanager = self.alertmanager_url(),
            ),
        )
        .expect("pausewatch.toml");
        let mut process = Process::spawn(
            "pausewatch",
            Command::new(BIN)
                .arg("run")
                .arg("--config")
                .arg(&config)
                .env("RUST_LOG", "info"),
            self.dir.path().join("pausewatch.log"),
        );
        let health = format!("{}/healthz", self.agent_url());
        wait_for(Duration::from_secs(20), "the agent to serve HTTP", || {
            process.assert_running();
            http_get(&health).ok()
        });
        process
    }

    /// Replays the fixture so that its long pauses all fall into one minute;
    /// returns the start of that minute.
    fn replay_long_pauses(&self) -> DateTime<Utc> {
        // The last full GC is 25.5 s after the first line: start at second 31
        // at the latest, or wait for the next minute.
        let now = Utc::now();
        if now.second() > 31 {
            let to_next = 60.0 - now.second() as f64 - now.nanosecond() as f64 / 1e9;
            std::thread::sleep(Duration::from_secs_f64(to_next + 0.2));
        }
        let started = Utc::now();
        let mut replay = Process::spawn(
            "pausewatch replay",
            Command::new(BIN)
                .arg("replay")
                .arg(fixture_log())
                .arg(&self.gc_log)
                .args(["--speed", "50", "--retime"]),
            self.dir.path().join("replay.log"),
        );
        // 31 s of log at 50 times its pace: well under a second.
        let status = wait_for(Duration::from_secs(10), "the replay to finish", || {
            replay.child.try_wait().expect("replay status")
        });
        assert!(status.success(), "replay failed: {status}");
        started.with_second(0).unwrap().with_nanosecond(0).unwrap()
    }

    fn agent_alerts(&self) -> Vec<Value> {
        let url = format!("{}/api/v1/alerts", self.agent_url());
        let body = get_json(&url).unwrap_or_else(|e| panic!("{e}"));
        body["alerts"]
            .as_array()
            .unwrap_or_else(|| panic!("no alerts array: {body}"))
            .clone()
    }

    /// The agent's PauseBudgetExceeded alert, if it has one.
    fn agent_alert(&self) -> Option<Value> {
        self.agent_alerts()
            .into_iter()
            .find(|a| a["alertname"] == ALERT)
    }

    fn metrics(&self) -> String {
        http_get(&format!("{}/metrics", self.agent_url())).unwrap_or_else(|e| panic!("{e}"))
    }

    fn deliveries(&self, result: &str) -> f64 {
        samples(
            &self.metrics(),
            "pausewatch_alert_deliveries_total",
            &[("sink", "alertmanager"), ("result", result)],
        )
        .iter()
        .map(|(_, v)| v)
        .sum()
    }

    /// PauseBudgetExceeded among Alertmanager's active alerts, if there.
    fn alertmanager_alert(&self) -> Option<Value> {
        let url = format!(
            "{}/api/v2/alerts?active=true&silenced=false&inhibited=false",
            self.alertmanager_url()
        );
        let alerts = get_json(&url).ok()?;
        alerts
            .as_array()?
            .iter()
            .find(|a| a["labels"]["alertname"] == ALERT)
            .cloned()
    }
}

/// The labels and annotations the agent gave the alert, as Alertmanager shows them.
fn check_alertmanager_alert(alert: &Value, setup: &Setup, minute: DateTime<Utc>) {
    let labels = &alert["labels"];
    assert_eq!(labels["alertname"], ALERT, "{alert}");
    assert_eq!(
        labels["log"].as_str(),
        Some(setup.gc_log.display().to_string().as_str()),
        "{alert}"
    );
    assert_eq!(labels["severity"], "warning", "{alert}");
    assert_eq!(labels["team"], "payments", "{alert}");
    let summary = alert["annotations"]["summary"].as_str().unwrap_or_default();
    // GC(16) Pause Full (Ergonomics) 218M->180M(243M) 104.303ms, the longest.
    assert_eq!(
        summary,
        format!(
            "longest GC pause 104.3 ms in the minute from {} UTC, budget 50.0 ms",
            minute.format("%H:%M")
        ),
        "{alert}"
    );
    assert_eq!(alert["status"]["state"], "active", "{alert}");
    // A firing alert is sent without endsAt: Alertmanager puts it a resolve
    // timeout ahead.
    let ends_at: DateTime<Utc> = alert["endsAt"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no endsAt: {alert}"));
    assert!(ends_at > Utc::now(), "{alert}");
}

fn firing_in_agent(setup: &Setup) -> Option<Value> {
    setup.agent_alert().filter(|a| a["state"] == "firing")
}

/// How long after the minute of the long pauses the alert may take to fire:
/// the end of the minute, an evaluation interval, and slack for a busy host.
const FIRING_SLACK: Duration = Duration::from_secs(20);

fn time_left_until(minute_end: DateTime<Utc>, slack: Duration) -> Duration {
    (minute_end - Utc::now()).to_std().unwrap_or_default() + slack
}

#[test]
fn fires_in_alertmanager_and_resolves() {
    let Some(binary) = alertmanager_or_skip() else {
        return;
    };
    let started = Instant::now();
    let setup = Setup::new(binary);
    let _alertmanager = setup.start_alertmanager();
    let mut agent = setup.start_agent();
    let minute = setup.replay_long_pauses();
    let minute_end = minute + chrono::Duration::minutes(1);

    // Firing once the minute is over.
    let alert = wait_for(
        time_left_until(minute_end, FIRING_SLACK),
        "the agent to fire PauseBudgetExceeded",
        || {
            agent.assert_running();
            firing_in_agent(&setup)
        },
    );
    let fired_after = Utc::now() - minute_end;
    assert!(
        fired_after >= chrono::Duration::zero(),
        "fired before the minute of the pauses was over: {alert}"
    );
    assert_eq!(alert["labels"]["severity"], "warning", "{alert}");
    assert!(
        (alert["value"].as_f64().unwrap_or_default() - 0.104303).abs() < 1e-9,
        "{alert}"
    );

    // /metrics agrees.
    let firing = samples(
        &setup.metrics(),
        "pausewatch_alerts",
        &[("alertname", ALERT), ("state", "firing")],
    );
    assert_eq!(firing.len(), 1, "{firing:?}");
    assert_eq!(firing[0].1, 1.0);
    assert_eq!(
        firing[0].0.get("log").map(String::as_str),
        Some(setup.gc_log.display().to_string().as_str())
    );

    // Alertmanager has it, with the agent's labels and annotations.
    let delivered = wait_for(
        Duration::from_secs(15),
        "PauseBudgetExceeded in Alertmanager",
        || setup.alertmanager_alert(),
    );
    check_alertmanager_alert(&delivered, &setup, minute);
    assert!(setup.deliveries("success") >= 1.0);
    assert_eq!(setup.deliveries("failure"), 0.0);

    // Resolved when the next minute, without long pauses, is over: the
    // agent shows it resolved for one evaluation, then not at all.
    let next_end = minute_end + chrono::Duration::minutes(1);
    let resolved = wait_for(
        time_left_until(next_end, FIRING_SLACK),
        "the agent to resolve PauseBudgetExceeded",
        || {
            agent.assert_running();
            setup.agent_alert().filter(|a| a["state"] != "firing")
        },
    );
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    assert!(resolved["resolved_at"].is_string(), "{resolved}");
    wait_for(
        Duration::from_secs(10),
        "the resolved alert to leave the agent's list",
        || setup.agent_alert().is_none().then_some(()),
    );
    wait_for(
        Duration::from_secs(10),
        "PauseBudgetExceeded to leave pausewatch_alerts",
        || {
            samples(
                &setup.metrics(),
                "pausewatch_alerts",
                &[("alertname", ALERT)],
            )
            .is_empty()
            .then_some(())
        },
    );

    // Alertmanager got the resolution (endsAt now): no longer active, and
    // not listed at all since resolved alerts are not shown.
    wait_for(
        Duration::from_secs(15),
        "PauseBudgetExceeded to be resolved in Alertmanager",
        || setup.alertmanager_alert().is_none().then_some(()),
    );
    let all = get_json(&format!("{}/api/v2/alerts", setup.alertmanager_url()))
        .unwrap_or_else(|e| panic!("{e}"));
    let still = all
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["labels"]["alertname"] == ALERT)
        .filter(|a| {
            a["endsAt"]
                .as_str()
                .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                .is_none_or(|ends| ends > Utc::now())
        })
        .count();
    assert_eq!(still, 0, "still unresolved in Alertmanager: {all}");
    assert_eq!(setup.deliveries("failure"), 0.0);
    eprintln!(
        "fires_in_alertmanager_and_resolves: fired {:.1} s after the minute ended, took {:.0} s in all",
        fired_after.num_milliseconds() as f64 / 1000.0,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn reaches_alertmanager_that_was_down_when_it_fired() {
    let Some(binary) = alertmanager_or_skip() else {
        return;
    };
    let started = Instant::now();
    let setup = Setup::new(binary);
    // Alertmanager is down: its port is free and nobody listens on it.
    let mut agent = setup.start_agent();
    let minute = setup.replay_long_pauses();
    let minute_end = minute + chrono::Duration::minutes(1);

    wait_for(
        time_left_until(minute_end, FIRING_SLACK),
        "the agent to fire PauseBudgetExceeded",
        || {
            agent.assert_running();
            firing_in_agent(&setup)
        },
    );
    let fired = Instant::now();
    // An outage of some seconds: three failed attempts (the first at once,
    // then after the 2 s and 4 s backoffs).
    let failures = wait_for(
        Duration::from_secs(20),
        "3 failed deliveries to Alertmanager",
        || {
            let failures = setup.deliveries("failure");
            (failures >= 3.0).then_some(failures)
        },
    );
    assert_eq!(setup.deliveries("success"), 0.0);
    assert!(firing_in_agent(&setup).is_some(), "resolved too early");

    // Alertmanager comes up on the same port; the agent, not restarted,
    // delivers the alert with its next retry (8 s backoff after three
    // failures), well before the alert resolves.
    let _alertmanager = setup.start_alertmanager();
    let up = Instant::now();
    let delivered = wait_for(
        Duration::from_secs(25),
        "PauseBudgetExceeded in Alertmanager after it came up",
        || {
            agent.assert_running();
            setup.alertmanager_alert()
        },
    );
    check_alertmanager_alert(&delivered, &setup, minute);
    assert!(
        firing_in_agent(&setup).is_some(),
        "the alert resolved before it reached Alertmanager"
    );
    assert!(setup.deliveries("success") >= 1.0);
    assert!(setup.deliveries("failure") >= failures);
    eprintln!(
        "reaches_alertmanager_that_was_down_when_it_fired: {failures} failures in {:.1} s, \
         delivered {:.1} s after Alertmanager came up, took {:.0} s in all",
        (up - fired).as_secs_f64(),
        up.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
