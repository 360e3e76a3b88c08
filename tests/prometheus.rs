//! A real Prometheus scrapes a running agent, and what Prometheus stored is
//! checked against independent truth: the JVM's own MXBean counts and a plain
//! reading of the log file.
//!
//! The agent follows a file that `pausewatch replay` writes live (a real JDK 17
//! G1 log, retimed so its minutes are current); Prometheus scrapes the agent
//! every second through its OpenMetrics parser; the test then asks Prometheus,
//! through its HTTP API, for the figures a dashboard would show.
//!
//! Needs `/usr/bin/prometheus` (Debian's `prometheus` package, which CI
//! installs) or `prometheus` on `PATH`; without it the test prints `SKIPPED`
//! and returns.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/jvm/jdk17-g1-concurrent";
const BEAN: &str = "G1 Young Generation";
/// More than two scrape intervals: a value unchanged this long has been scraped.
const STABLE_FOR: Duration = Duration::from_millis(2500);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(FIXTURE)
        .join(name)
}

/// `/usr/bin/prometheus`, else the first `prometheus` on `PATH`.
fn prometheus_binary() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/bin/prometheus");
    if debian.is_file() {
        return Some(debian);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("prometheus"))
        .find(|candidate| candidate.is_file())
}

/// Two distinct free loopback ports (both held while the second is picked).
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let b = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// The children of the test, killed when it ends; on a failure their stderr
/// (and what the agent serves) is printed first.
struct Children {
    running: Vec<(&'static str, Child, PathBuf)>,
    agent_port: u16,
}

impl Children {
    fn spawn(&mut self, name: &'static str, command: &mut Command, dir: &Path) {
        let stderr_path = dir.join(format!("{name}.stderr"));
        let stderr = File::create(&stderr_path).expect("create a stderr file");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.running.push((name, child, stderr_path));
    }

    /// The exit status of `name` if it has exited; panics if it is not known.
    fn exited(&mut self, name: &str) -> Option<ExitStatus> {
        let (_, child, _) = self
            .running
            .iter_mut()
            .find(|(n, _, _)| *n == name)
            .expect("known child");
        child.try_wait().expect("try_wait")
    }

    /// Panics if a long-running child (agent, Prometheus) has died.
    fn assert_alive(&mut self, names: &[&str]) {
        for name in names {
            if let Some(status) = self.exited(name) {
                panic!("{name} exited early: {status}");
            }
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        if failed {
            // What the agent serves now, before it is stopped.
            match http_get(self.agent_port, "/metrics") {
                Ok((status, body)) => {
                    eprintln!("----- agent /metrics (HTTP {status}), main series -----");
                    for line in body.lines().filter(|line| {
                        [
                            "jvm_gc_pause_seconds_count",
                            "pausewatch_safepoints_total",
                            "pausewatch_log_",
                            "pausewatch_errors_total",
                        ]
                        .iter()
                        .any(|name| line.starts_with(name))
                    }) {
                        eprintln!("{line}");
                    }
                }
                Err(error) => eprintln!("----- agent /metrics unavailable: {error} -----"),
            }
        }
        for (_, child, _) in &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !failed {
            return;
        }
        for (name, _, stderr_path) in &self.running {
            let text = std::fs::read_to_string(stderr_path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(80)..];
            eprintln!(
                "----- {name} stderr (last {} of {} lines) -----",
                tail.len(),
                lines.len()
            );
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}

/// One HTTP/1.0 GET: the server closes the connection after the response.
fn http_get(port: u16, target: &str) -> Result<(u16, String), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(10))))
        .map_err(|e| e.to_string())?;
    let request = format!("GET {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read from {addr}: {e}"))?;
    let raw = String::from_utf8(raw).map_err(|e| format!("non-UTF-8 reply: {e}"))?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in reply: {raw:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET a Prometheus API path and return its `data`, or why not.
fn api(prom_port: u16, target: &str) -> Result<Value, String> {
    let (status, body) = http_get(prom_port, target)?;
    let json: Value =
        serde_json::from_str(&body).map_err(|e| format!("{target}: bad JSON ({e}): {body}"))?;
    if status != 200 || json["status"] != "success" {
        return Err(format!("{target}: HTTP {status}: {body}"));
    }
    Ok(json["data"].clone())
}

/// An instant query's result vector.
fn query(prom_port: u16, promql: &str) -> Result<Vec<Value>, String> {
    let data = api(
        prom_port,
        &format!("/api/v1/query?query={}", url_encode(promql)),
    )?;
    if data["resultType"] != "vector" {
        return Err(format!("{promql}: not a vector: {data}"));
    }
    Ok(data["result"].as_array().cloned().unwrap_or_default())
}

/// A sample's value (`"69"`, `"NaN"`, `"+Inf"`).
fn sample_value(sample: &Value) -> f64 {
    let text = sample["value"][1]
        .as_str()
        .unwrap_or_else(|| panic!("no value in {sample}"));
    text.parse()
        .unwrap_or_else(|e| panic!("bad value {text:?} in {sample}: {e}"))
}

/// The value of a query that yields at most one sample (`sum(...)` of nothing
/// yields none).
fn query_one(prom_port: u16, promql: &str) -> Result<Option<f64>, String> {
    let result = query(prom_port, promql)?;
    match result.as_slice() {
        [] => Ok(None),
        [sample] => Ok(Some(sample_value(sample))),
        _ => Err(format!("{promql}: expected one sample, got {result:?}")),
    }
}

fn must(prom_port: u16, promql: &str) -> f64 {
    query_one(prom_port, promql)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("{promql}: no sample"))
}

/// Polls `ready` every 100 ms until it holds; panics with `what` after `limit`.
fn wait_for(children: &mut Children, limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        children.assert_alive(&["agent", "prometheus"]);
        if ready() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The MXBean's `(count, time_ms)` from the fixture's `mxbeans.json`.
fn bean(name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(fixture("mxbeans.json")).expect("read mxbeans.json");
    let json: Value = serde_json::from_str(&text).expect("mxbeans.json is JSON");
    let collector = json["collectors"]
        .as_array()
        .expect("collectors")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no bean {name} in mxbeans.json"));
    (
        collector["count"].as_u64().expect("count"),
        collector["time_ms"].as_u64().expect("time_ms"),
    )
}

#[test]
fn real_prometheus_scrapes_the_agent() {
    let Some(prometheus) = prometheus_binary() else {
        eprintln!(
            "\n\n*** SKIPPED: prometheus not installed (no /usr/bin/prometheus, none on PATH); \
             `apt-get install prometheus` to run tests/prometheus.rs ***\n\n"
        );
        return;
    };
    let started = Instant::now();

    // Independent truth: the JVM's bean, and the log read as plain text.
    let (bean_count, bean_time_ms) = bean(BEAN);
    let source = fixture("gc.log");
    let log_text = std::fs::read_to_string(&source).expect("read the fixture log");
    let log_lines = log_text.bytes().filter(|&b| b == b'\n').count() as f64;
    let safepoint_lines = log_text.matches("Safepoint \"").count() as f64;
    assert!(
        bean_count > 0 && safepoint_lines > 0.0,
        "fixture lost its pauses"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    let (agent_port, prom_port) = free_ports();
    let gc_log = dir.join("gc.log");
    File::create(&gc_log).expect("create the followed log");

    // Paths as JSON strings: valid TOML basic strings, whatever they hold.
    let toml_string = |path: &Path| serde_json::to_string(&path.display().to_string()).unwrap();
    let agent_config = dir.join("pausewatch.toml");
    let agent_toml = [
        format!("listen = \"127.0.0.1:{agent_port}\""),
        format!("checkpoint_dir = {}", toml_string(&dir.join("checkpoint"))),
        "poll_interval = \"100ms\"".to_string(),
        String::new(),
        "[[gc_log]]".to_string(),
        format!("path = {}", toml_string(&gc_log)),
        "start_at = \"beginning\"".to_string(),
        "labels = { service = \"checkout\" }".to_string(),
    ];
    std::fs::write(&agent_config, agent_toml.join("\n") + "\n").unwrap();
    let prom_config = dir.join("prometheus.yml");
    let prom_yaml = [
        "global:".to_string(),
        "  scrape_interval: 1s".to_string(),
        "  scrape_timeout: 1s".to_string(),
        "  evaluation_interval: 1s".to_string(),
        "scrape_configs:".to_string(),
        "  - job_name: pausewatch".to_string(),
        "    static_configs:".to_string(),
        format!("      - targets: ['127.0.0.1:{agent_port}']"),
    ];
    std::fs::write(&prom_config, prom_yaml.join("\n") + "\n").unwrap();

    let mut children = Children {
        running: Vec::new(),
        agent_port,
    };
    children.spawn(
        "agent",
        Command::new(env!("CARGO_BIN_EXE_pausewatch"))
            .args(["run", "--config"])
            .arg(&agent_config),
        &dir,
    );
    children.spawn(
        "prometheus",
        Command::new(&prometheus)
            .arg(format!("--config.file={}", prom_config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}")),
        &dir,
    );

    wait_for(
        &mut children,
        Duration::from_secs(10),
        "agent serving /metrics",
        || matches!(http_get(agent_port, "/metrics"), Ok((200, body)) if body.ends_with("# EOF\n")),
    );
    wait_for(
        &mut children,
        Duration::from_secs(30),
        "prometheus /-/ready",
        || matches!(http_get(prom_port, "/-/ready"), Ok((200, _))),
    );
    // Prometheus applies its targets a few seconds after start. Wait for a
    // scrape of the still empty log, so that the counters are seen growing and
    // `rate()` has two different samples to work with.
    let lines_query = "sum(pausewatch_log_lines_total{job=\"pausewatch\",service=\"checkout\"})";
    wait_for(
        &mut children,
        Duration::from_secs(20),
        "a first scrape of the empty log",
        || matches!(query_one(prom_port, lines_query), Ok(Some(v)) if v == 0.0),
    );

    children.spawn(
        "replay",
        Command::new(env!("CARGO_BIN_EXE_pausewatch"))
            .arg("replay")
            .arg(&source)
            .arg(&gc_log)
            .args(["--speed", "4", "--retime"]),
        &dir,
    );

    // Until the replay is over and Prometheus holds the final state: every line
    // read, and the figures unchanged for more than two scrape intervals.
    let young = format!("gc=\"{BEAN}\",service=\"checkout\",job=\"pausewatch\"");
    let count_query = format!("sum(jvm_gc_pause_seconds_count{{{young}}})");
    let safepoints_query = "sum(pausewatch_safepoints_total{job=\"pausewatch\"})";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    let mut stable_since = Instant::now();
    loop {
        children.assert_alive(&["agent", "prometheus"]);
        let replayed = match children.exited("replay") {
            Some(status) => {
                assert!(status.success(), "pausewatch replay failed: {status}");
                true
            }
            None => false,
        };
        let snapshot = (
            query_one(prom_port, lines_query).ok().flatten(),
            query_one(prom_port, &count_query).ok().flatten(),
            query_one(prom_port, safepoints_query).ok().flatten(),
        );
        if last != Some(snapshot) {
            last = Some(snapshot);
            stable_since = Instant::now();
        }
        if replayed && snapshot.0 == Some(log_lines) && stable_since.elapsed() >= STABLE_FOR {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for Prometheus to hold the final state; last (lines, {BEAN} \
             pauses, safepoints) = {last:?}, expected lines {log_lines}, replay done: {replayed}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let replayed_text = std::fs::read_to_string(&gc_log).expect("read the replayed log");
    assert_eq!(
        replayed_text.lines().count(),
        log_text.lines().count(),
        "the replay wrote every line"
    );

    // Prometheus scraped the agent without error, through its OpenMetrics parser.
    let up = query(prom_port, "up{job=\"pausewatch\"}").unwrap();
    assert_eq!(up.len(), 1, "one pausewatch target: {up:?}");
    assert_eq!(sample_value(&up[0]), 1.0, "target up: {up:?}");
    assert_eq!(
        up[0]["metric"]["instance"],
        format!("127.0.0.1:{agent_port}")
    );
    let targets = api(prom_port, "/api/v1/targets").unwrap();
    let active: Vec<&Value> = targets["activeTargets"]
        .as_array()
        .expect("activeTargets")
        .iter()
        .filter(|t| t["labels"]["job"] == "pausewatch")
        .collect();
    assert_eq!(active.len(), 1, "{targets}");
    assert_eq!(active[0]["health"], "up", "{}", active[0]);
    assert_eq!(active[0]["lastError"], "", "scrape error: {}", active[0]);
    assert_eq!(
        active[0]["scrapeUrl"],
        format!("http://127.0.0.1:{agent_port}/metrics")
    );
    // Units exist only in OpenMetrics: a `seconds` unit proves Prometheus
    // negotiated and parsed the OpenMetrics exposition, not the 0.0.4 text one.
    let match_target = url_encode("{job=\"pausewatch\"}");
    for (family, kind, unit) in [
        ("jvm_gc_pause_seconds", "histogram", "seconds"),
        ("pausewatch_safepoints", "counter", ""),
        ("pausewatch_build_info", "gauge", ""),
    ] {
        let metadata = api(
            prom_port,
            &format!("/api/v1/targets/metadata?match_target={match_target}&metric={family}"),
        )
        .unwrap();
        let entry = metadata
            .as_array()
            .and_then(|entries| entries.first())
            .unwrap_or_else(|| panic!("no metadata for {family}: {metadata}"));
        assert_eq!(entry["type"], kind, "{family}: {entry}");
        assert_eq!(entry["unit"], unit, "{family}: {entry}");
    }

    // The JVM's own count of young collections.
    let count = must(prom_port, &count_query);
    assert_eq!(
        count, bean_count as f64,
        "{count_query} vs the {BEAN} MXBean"
    );
    let inf_query = format!("sum(jvm_gc_pause_seconds_bucket{{le=\"+Inf\",{young}}})");
    let inf = must(prom_port, &inf_query);
    assert_eq!(inf, bean_count as f64, "{inf_query} vs the {BEAN} MXBean");
    // ... and its accumulated time, within max(1 %, 1 ms per pause).
    let sum_query = format!("sum(jvm_gc_pause_seconds_sum{{{young}}})");
    let seconds = must(prom_port, &sum_query);
    let bean_seconds = bean_time_ms as f64 / 1000.0;
    let tolerance = (0.01 * bean_seconds).max(0.001 * bean_count as f64);
    assert!(
        (seconds - bean_seconds).abs() <= tolerance,
        "{sum_query} = {seconds} s, the {BEAN} MXBean says {bean_seconds} s (tolerance {tolerance} s)"
    );

    // The log read as text: its safepoint lines and its lines.
    let safepoints = must(prom_port, safepoints_query);
    assert_eq!(
        safepoints, safepoint_lines,
        "{safepoints_query} vs `Safepoint \"` lines"
    );
    let lines = must(prom_port, lines_query);
    assert_eq!(lines, log_lines, "{lines_query} vs the log's line count");

    // Every series carries the configured and the scrape labels.
    let expected_log = gc_log.display().to_string();
    for family in [
        "jvm_gc_pause_seconds_count",
        "pausewatch_safepoints_total",
        "pausewatch_log_lines_total",
    ] {
        let series = query(prom_port, &format!("{family}{{job=\"pausewatch\"}}")).unwrap();
        assert!(!series.is_empty(), "no {family} series");
        let all = query(prom_port, family).unwrap();
        assert_eq!(
            series.len(),
            all.len(),
            "{family} series without job: {all:?}"
        );
        for sample in &series {
            let labels = &sample["metric"];
            assert_eq!(labels["service"], "checkout", "{sample}");
            assert_eq!(labels["job"], "pausewatch", "{sample}");
            assert_eq!(
                labels["instance"],
                format!("127.0.0.1:{agent_port}"),
                "{sample}"
            );
            assert_eq!(labels["log"], expected_log.as_str(), "{sample}");
        }
    }
    let build = query(prom_port, "pausewatch_build_info{job=\"pausewatch\"}").unwrap();
    assert_eq!(build.len(), 1, "pausewatch_build_info: {build:?}");
    assert_eq!(sample_value(&build[0]), 1.0);
    assert_eq!(build[0]["metric"]["version"], env!("CARGO_PKG_VERSION"));

    // Prometheus accepts the histogram for quantiles: the counters grew while
    // it scraped, so the rate is positive and the quantile a number.
    let quantile_query =
        "histogram_quantile(0.99, sum by (le) (rate(jvm_gc_pause_seconds_bucket[1m])))";
    let p99 = must(prom_port, quantile_query);
    assert!(
        p99.is_finite() && p99 > 0.0 && p99 <= 10.0,
        "{quantile_query} = {p99}"
    );

    eprintln!(
        "prometheus.rs: {count} {BEAN} pauses ({seconds:.6} s), {safepoints} safepoints, \
         {lines} lines, p99 {p99:.4} s; {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
