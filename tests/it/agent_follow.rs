//! `pausewatch run` following live writers end to end: a real JVM rotating
//! its log while the agent is SIGKILLed and restarted, a JVM restart that
//! archives the old log, logrotate's copytruncate, delete and recreate, lines
//! written in pieces, and an unreadable source next to a good one.
//!
//! Every test starts the agent binary with its own config and port, scrapes
//! `/metrics` with a raw HTTP/1.0 request and compares the pause counts with
//! the JVM's own `GarbageCollectorMXBean` figures (`mxbeans.json`, written by
//! `tests/workload/GcWorkload.java` as its last act, or the fixture's copy).
//! Child processes are killed when a test ends, also on failure, and the
//! agent's stderr is dumped when a test fails.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{
    gc_log_files as log_set, http_get_ok, jvm_fixture as fixture, MxBeans, PAUSEWATCH as BIN,
};
use serde_json::Value;

use crate::common;

// ---------------------------------------------------------------------------
// Metrics: an OpenMetrics text reader (the HTTP client is common::http_get_ok).

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// One exposition line: `name{k="v",...} value` or `name value`.
fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut consumed = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '}' => {
                    consumed = Some(i + 1);
                    break;
                }
                ',' | ' ' => continue,
                _ => {
                    let mut key = String::from(c);
                    for (_, c) in chars.by_ref() {
                        if c == '=' {
                            break;
                        }
                        key.push(c);
                    }
                    if chars.next().map(|(_, c)| c) != Some('"') {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            '"' => break,
                            other => value.push(other),
                        }
                    }
                    labels.insert(key, value);
                }
            }
        }
        rest = &body[consumed?..];
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

struct Metrics {
    samples: Vec<Sample>,
}

impl Metrics {
    fn parse(text: &str) -> Metrics {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| parse_sample(l).unwrap_or_else(|| panic!("unreadable sample line: {l:?}")))
            .collect();
        Metrics { samples }
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        filter: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && filter
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    /// Sum over every series matching the filter; 0 when there is none.
    fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        // A fold from +0.0: an empty `sum()` of floats is -0.0.
        self.matching(name, filter)
            .fold(0.0, |total, s| total + s.value)
    }

    /// The one series matching the filter, if exactly one does.
    fn one(&self, name: &str, filter: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<_> = self.matching(name, filter).collect();
        (found.len() == 1).then(|| found[0].value)
    }

    /// The figures that must stop changing once the agent has read everything.
    fn progress(&self) -> Vec<Sample> {
        const MOVING: [&str; 6] = [
            "jvm_gc_pause_seconds_count",
            "jvm_gc_pause_seconds_sum",
            "pausewatch_log_lines_total",
            "pausewatch_log_bytes_total",
            "pausewatch_safepoints_total",
            "pausewatch_jvm_restarts_total",
        ];
        self.samples
            .iter()
            .filter(|s| MOVING.contains(&s.name.as_str()))
            .cloned()
            .collect()
    }
}

// ---------------------------------------------------------------------------
// MXBean snapshots.

/// `collectors[].name -> (count, time_ms)` of a `mxbeans.json`.
fn mxbeans(path: &Path) -> BTreeMap<String, (u64, u64)> {
    MxBeans::read(path).by_name()
}

fn add_beans(
    a: &BTreeMap<String, (u64, u64)>,
    b: &BTreeMap<String, (u64, u64)>,
) -> BTreeMap<String, (u64, u64)> {
    let mut total = a.clone();
    for (name, (count, ms)) in b {
        let entry = total.entry(name.clone()).or_default();
        entry.0 += count;
        entry.1 += ms;
    }
    total
}

/// The agent's pause count and total per bean for `log` against the beans:
/// counts exactly, times within max(1 %, 1 ms per pause) (the bean truncates
/// each pause to whole milliseconds). Returns the failures.
fn compare_with_beans(
    metrics: &Metrics,
    log: &str,
    beans: &BTreeMap<String, (u64, u64)>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for (bean, &(count, time_ms)) in beans {
        if bean.ends_with("Cycles") {
            continue; // cycle beans (ZGC), not pauses
        }
        let filter = [("log", log), ("gc", bean.as_str())];
        let seen = metrics.sum("jvm_gc_pause_seconds_count", &filter);
        let seen_ms = metrics.sum("jvm_gc_pause_seconds_sum", &filter) * 1000.0;
        eprintln!(
            "  {bean:<22} jvm {count:>5} pauses {time_ms:>7} ms | agent {seen:>5} pauses {seen_ms:>10.3} ms"
        );
        if seen != count as f64 {
            failures.push(format!("{bean}: count jvm {count} agent {seen}"));
        }
        let tolerance = (seen_ms * 0.01).max(count as f64);
        if (seen_ms - time_ms as f64).abs() > tolerance {
            failures.push(format!(
                "{bean}: time jvm {time_ms} ms agent {seen_ms:.3} ms (tolerance {tolerance:.3} ms)"
            ));
        }
    }
    failures
}

/// What must hold for a log the agent has read to its end: no unparsed line
/// of any kind, no read lag, readable, and `restarts` JVM restarts.
fn stream_failures(metrics: &Metrics, log: &str, restarts: u64) -> Vec<String> {
    let mut failures = Vec::new();
    let filter = [("log", log)];
    for sample in metrics.matching("pausewatch_log_unparsed_lines_total", &filter) {
        if sample.value != 0.0 {
            failures.push(format!(
                "{} unparsed lines of kind {:?}",
                sample.value,
                sample.labels.get("kind")
            ));
        }
    }
    let expected = [
        ("pausewatch_jvm_restarts_total", restarts as f64),
        ("pausewatch_log_read_lag_bytes", 0.0),
        ("pausewatch_log_readable", 1.0),
    ];
    for (name, value) in expected {
        let seen = metrics.one(name, &filter);
        if seen != Some(value) {
            failures.push(format!("{name} {seen:?}, expected {value}"));
        }
    }
    failures
}

// ---------------------------------------------------------------------------
// The harness: a temporary directory, the agent and the other children.

struct Harness {
    name: &'static str,
    dir: Option<tempfile::TempDir>,
    port: u16,
    config: PathBuf,
    agent: Option<Child>,
    agent_runs: usize,
    /// JVMs and replays, with the file their output goes to.
    children: Vec<(String, Child, PathBuf)>,
    last_metrics: Option<String>,
}

impl Harness {
    /// A directory and an agent config following `sources` from their beginning.
    fn new(name: &'static str, sources: &dyn Fn(&Path) -> Vec<PathBuf>) -> Harness {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pausewatch-{name}-"))
            .tempdir()
            .unwrap();
        let port = common::free_port();
        let config = dir.path().join("pausewatch.toml");
        let mut text = format!(
            "listen = '127.0.0.1:{port}'\ncheckpoint_dir = '{}'\npoll_interval = '100ms'\ncheckpoint_interval = '200ms'\n",
            dir.path().join("checkpoint").display()
        );
        for source in sources(dir.path()) {
            text += &format!(
                "\n[[gc_log]]\npath = '{}'\nstart_at = 'beginning'\n",
                source.display()
            );
        }
        std::fs::write(&config, &text).unwrap();
        eprintln!("[{name}] dir {} port {port}\n{text}", dir.path().display());
        Harness {
            name,
            dir: Some(dir),
            port,
            config,
            agent: None,
            agent_runs: 0,
            children: Vec::new(),
            last_metrics: None,
        }
    }

    fn path(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    fn log(&self, message: &str) {
        eprintln!("[{} +{:?}] {message}", self.name, started_at().elapsed());
    }

    /// Starts the agent and waits until it answers `/healthz`.
    fn start_agent(&mut self) {
        assert!(self.agent.is_none(), "agent already running");
        let stderr_path = self
            .path()
            .join(format!("agent-{}.stderr", self.agent_runs));
        self.agent_runs += 1;
        let stderr = File::create(&stderr_path).unwrap();
        let child = common::run_command(&self.config)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(stderr.try_clone().unwrap())
            .stderr(stderr)
            .spawn()
            .expect("spawn the agent");
        self.log(&format!("agent started, pid {}", child.id()));
        self.agent = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.agent.as_mut().unwrap().try_wait().unwrap() {
                panic!("the agent exited before serving: {status}");
            }
            if http_get_ok(self.port, "/healthz").is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the agent did not answer on port {} within 15 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL (what `Child::kill` sends on Unix): no final checkpoint.
    fn kill_agent(&mut self) {
        let mut child = self.agent.take().expect("agent running");
        child.kill().unwrap();
        let status = child.wait().unwrap();
        self.log(&format!("agent killed: {status}"));
    }

    fn agent_is_running(&mut self) -> bool {
        self.agent
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    fn agent_stderr(&self, run: usize) -> String {
        std::fs::read_to_string(self.path().join(format!("agent-{run}.stderr"))).unwrap_or_default()
    }

    fn spawn(&mut self, name: &str, command: &mut Command) {
        let output = self.path().join(format!("{name}.out"));
        let file = File::create(&output).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {name}: {e}"));
        self.log(&format!("{name} started, pid {}", child.id()));
        self.children.push((name.to_string(), child, output));
    }

    /// Waits for the child `name` to exit; fails after `timeout`.
    fn wait_for(&mut self, name: &str, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        let index = self
            .children
            .iter()
            .position(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no child {name}"));
        loop {
            if let Some(status) = self.children[index].1.try_wait().unwrap() {
                self.log(&format!("{name} exited: {status}"));
                let output = std::fs::read_to_string(&self.children[index].2).unwrap_or_default();
                assert!(status.success(), "{name} failed ({status}):\n{output}");
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{name} still running after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn scrape(&mut self) -> Metrics {
        let text = http_get_ok(self.port, "/metrics")
            .unwrap_or_else(|e| panic!("GET /metrics on port {}: {e}", self.port));
        let metrics = Metrics::parse(&text);
        self.last_metrics = Some(text);
        metrics
    }

    /// Scrapes until the agent has caught up: `caught_up(metrics)` holds
    /// (the bytes read equal what was written) and two scrapes 400 ms apart
    /// show the same progress (400 ms: more than the 200 ms after which a
    /// pause still waiting for its CPU-times line is emitted).
    fn settle(&mut self, timeout: Duration, caught_up: &dyn Fn(&Metrics) -> bool) -> Metrics {
        let deadline = Instant::now() + timeout;
        let mut previous: Option<Vec<Sample>> = None;
        loop {
            let metrics = self.scrape();
            let progress = metrics.progress();
            if caught_up(&metrics) && previous.as_ref() == Some(&progress) {
                self.log("metrics settled");
                return metrics;
            }
            if Instant::now() >= deadline {
                self.log(&format!(
                    "WARNING: metrics did not settle within {timeout:?}; asserting on the last scrape"
                ));
                return metrics;
            }
            previous = Some(progress);
            std::thread::sleep(Duration::from_millis(400));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(mut agent) = self.agent.take() {
            let _ = agent.kill();
            let _ = agent.wait();
        }
        for (_, child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !std::thread::panicking() {
            return;
        }
        eprintln!("==== {} FAILED: diagnostics ====", self.name);
        for run in 0..self.agent_runs {
            eprintln!(
                "---- agent run {run} stderr ----\n{}",
                self.agent_stderr(run)
            );
        }
        for (name, _, output) in &self.children {
            let text = std::fs::read_to_string(output).unwrap_or_default();
            eprintln!("---- {name} output ----\n{text}");
        }
        if let Ok(entries) = std::fs::read_dir(self.path()) {
            let mut listing: Vec<String> = entries
                .flatten()
                .map(|e| {
                    let meta = e.metadata().ok();
                    format!(
                        "{:>9} ino {:>10} {}",
                        meta.as_ref().map_or(0, |m| m.len()),
                        meta.as_ref().map_or(0, |m| m.ino()),
                        e.file_name().to_string_lossy()
                    )
                })
                .collect();
            listing.sort();
            eprintln!("---- directory ----\n{}", listing.join("\n"));
        }
        if let Some(metrics) = &self.last_metrics {
            let interesting: Vec<&str> = metrics
                .lines()
                .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
                .collect();
            eprintln!(
                "---- last /metrics (no buckets) ----\n{}",
                interesting.join("\n")
            );
        }
        if let Some(dir) = self.dir.take() {
            eprintln!("---- kept for inspection: {} ----", dir.keep().display());
        }
    }
}

fn started_at() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// `(dev, ino)`.
fn identity(path: &Path) -> (u64, u64) {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (meta.dev(), meta.ino())
}

fn total_size(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum()
}

fn total_lines(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|f| {
            std::fs::read(f)
                .unwrap()
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64
        })
        .sum()
}

// ---------------------------------------------------------------------------
// The Java workload.

/// Compiles the workloads (tests/workload/*.java) into `dir/classes`.
fn compile_workload(dir: &Path) -> PathBuf {
    let out = dir.join("classes");
    common::compile_workloads(&out);
    out
}

/// `java ... GcWorkload steady SECONDS MXBEANS` in `dir`, logging to `dir/gc.log`.
fn workload_command(
    classes: &Path,
    dir: &Path,
    rotation: &str,
    seconds: f64,
    mxbeans: &str,
) -> Command {
    let mut command = Command::new("java");
    command
        .current_dir(dir)
        .args([
            "-XX:ActiveProcessorCount=2",
            "-XX:+UseG1GC",
            "-Xmx128m",
            // A small young generation and a fast allocation rate: many
            // collections, so the log rotates every second or two.
            "-Xmn16m",
            "-Dwl.rate=150",
        ])
        .arg(format!(
            "-Xlog:gc*,safepoint:file=gc.log:time,uptime,level,tags:{rotation}"
        ))
        .arg("-cp")
        .arg(classes)
        .args(["GcWorkload", "steady", &seconds.to_string(), mxbeans]);
    command
}

// ---------------------------------------------------------------------------
// The tests.

/// A JVM rotates its log every second or two (`filecount=50,filesize=32K`);
/// the agent is SIGKILLed mid-run and restarted after at least two rotations
/// it did not see. It must resume from its checkpoint in the rotated file and
/// end with exactly the JVM's own counts: nothing lost, nothing counted twice.
#[test]
fn real_jvm_rotating_log_survives_agent_sigkill() {
    if !common::java_or_skip() {
        return;
    }
    let mut h = Harness::new("sigkill", &|dir| vec![dir.join("gc.log")]);
    let dir = h.path().to_path_buf();
    let classes = compile_workload(&dir);
    let log = dir.join("gc.log").display().to_string();
    h.start_agent();
    h.spawn(
        "jvm",
        &mut workload_command(
            &classes,
            &dir,
            "filecount=50,filesize=32K",
            12.0,
            "mxbeans.json",
        ),
    );
    let jvm_started = Instant::now();

    std::thread::sleep(Duration::from_secs(4));
    let checkpoint = dir.join("checkpoint/state.json");
    assert!(
        checkpoint.exists(),
        "no checkpoint after 4 s of a JVM writing: {}",
        checkpoint.display()
    );
    let before_kill = h.scrape();
    h.log(&format!(
        "before the kill: {} lines read, {} files",
        before_kill.sum("pausewatch_log_lines_total", &[("log", &log)]),
        log_set(&dir).len()
    ));
    let rotated_at_kill = log_set(&dir).len();
    h.kill_agent();

    // Stay down for 2 s and until the JVM has rotated at least twice more:
    // back up, the agent must finish the checkpointed file (renamed since),
    // read a whole rotated file it never had open, then the live one.
    let down = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    while log_set(&dir).len() < rotated_at_kill + 2 && down.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let rotated_at_restart = log_set(&dir).len();
    assert!(
        rotated_at_restart >= rotated_at_kill + 2,
        "the JVM did not rotate its log twice while the agent was down ({rotated_at_kill} files at the kill, {rotated_at_restart} {:?} later); the test would not test what it claims",
        down.elapsed()
    );
    h.log(&format!(
        "restarting after {:?} down; {} rotation(s) meanwhile; jvm at {:?}",
        down.elapsed(),
        rotated_at_restart - rotated_at_kill,
        jvm_started.elapsed()
    ));
    h.start_agent();

    h.wait_for("jvm", Duration::from_secs(45));
    let files = log_set(&dir);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    h.log(&format!("log set: {names:?}"));
    assert!(
        !dir.join("gc.log.49").exists(),
        "the rotation ring wrapped (gc.log.49 exists): rotated files were overwritten"
    );
    assert!(
        files.len() >= 4,
        "expected at least 3 rotations in 12 s, got {names:?}"
    );
    assert!(
        std::fs::read_to_string(dir.join("gc.log.00"))
            .unwrap()
            .contains("Using G1"),
        "gc.log.00 should still hold the JVM's first lines (no wrap)"
    );
    let bytes = total_size(&files);
    let lines = total_lines(&files);
    let metrics = h.settle(Duration::from_secs(10), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(bytes as f64)
    });

    let resumed = h.agent_stderr(1);
    for line in resumed.lines().filter(|l| l.contains(" reading ")).take(4) {
        h.log(&format!(
            "restarted agent: {}",
            line.split_once("  ").map_or(line, |x| x.1)
        ));
    }
    assert!(
        resumed.contains("resuming from checkpoint"),
        "the restarted agent did not resume from its checkpoint"
    );
    assert!(
        !resumed.contains("checkpointed file is gone"),
        "the restarted agent did not find its checkpointed file among the rotated ones"
    );
    let beans = mxbeans(&dir.join("mxbeans.json"));
    let mut failures = compare_with_beans(&metrics, &log, &beans);
    for bean in ["G1 Young Generation", "G1 Old Generation"] {
        if !beans.contains_key(bean) {
            failures.push(format!("mxbeans.json has no {bean}"));
        }
    }
    failures.extend(stream_failures(&metrics, &log, 0));
    let read = metrics.one("pausewatch_log_bytes_total", &[("log", &log)]);
    if read != Some(bytes as f64) {
        failures.push(format!(
            "bytes read {read:?}, the log files hold {bytes}: lost or read twice"
        ));
    }
    let read_lines = metrics.one("pausewatch_log_lines_total", &[("log", &log)]);
    if read_lines != Some(lines as f64) {
        failures.push(format!(
            "lines read {read_lines:?}, the log files hold {lines}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
}

/// Two JVM runs one after the other write the same `gc.log`. HotSpot with
/// `filecount>0` archives the existing file at start by renaming it to the
/// first free number (`gc.log.0` for filecount=5). The agent follows the
/// rename, reads the new file and counts both runs and one restart.
#[test]
fn jvm_restart_archives_the_old_log_and_is_counted() {
    if !common::java_or_skip() {
        return;
    }
    let mut h = Harness::new("restart", &|dir| vec![dir.join("gc.log")]);
    let dir = h.path().to_path_buf();
    let classes = compile_workload(&dir);
    let log = dir.join("gc.log").display().to_string();
    h.start_agent();
    // 1 MiB files: no size rotation, only the archive at start.
    let rotation = "filecount=5,filesize=1M";
    h.spawn(
        "jvm-1",
        &mut workload_command(&classes, &dir, rotation, 2.0, "mxbeans-1.json"),
    );
    h.wait_for("jvm-1", Duration::from_secs(30));
    let first = dir.join("gc.log");
    let first_identity = identity(&first);
    let first_size = std::fs::metadata(&first).unwrap().len();
    assert_eq!(
        log_set(&dir),
        vec![first.clone()],
        "one run, one file expected"
    );

    h.spawn(
        "jvm-2",
        &mut workload_command(&classes, &dir, rotation, 2.0, "mxbeans-2.json"),
    );
    h.wait_for("jvm-2", Duration::from_secs(30));

    let archived = dir.join("gc.log.0");
    let files = log_set(&dir);
    assert_eq!(
        files,
        vec![first.clone(), archived.clone()],
        "HotSpot should have archived the first run's gc.log as gc.log.0"
    );
    assert_eq!(
        identity(&archived),
        first_identity,
        "gc.log.0 is the first run's file, renamed"
    );
    assert_eq!(std::fs::metadata(&archived).unwrap().len(), first_size);
    assert_ne!(
        identity(&first),
        first_identity,
        "the second run writes a new file"
    );
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.lines().next().unwrap_or_default().contains("Using G1"),
            "{} should start with the JVM's preamble",
            file.display()
        );
    }

    let bytes = total_size(&files);
    let metrics = h.settle(Duration::from_secs(10), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(bytes as f64)
    });
    let beans = add_beans(
        &mxbeans(&dir.join("mxbeans-1.json")),
        &mxbeans(&dir.join("mxbeans-2.json")),
    );
    let mut failures = compare_with_beans(&metrics, &log, &beans);
    failures.extend(stream_failures(&metrics, &log, 1));
    let read = metrics.one("pausewatch_log_bytes_total", &[("log", &log)]);
    if read != Some(bytes as f64) {
        failures.push(format!("bytes read {read:?}, the two files hold {bytes}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
}

/// A fixture's lines, each with its `\n`.
fn fixture_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'));
    text.split_inclusive('\n').map(str::to_string).collect()
}

fn append_lines(file: &mut File, lines: &[String], pause: Duration) {
    for line in lines {
        // One write per line, as HotSpot does.
        file.write_all(line.as_bytes()).unwrap();
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// logrotate's `copytruncate`: rotate the older copies, copy, then truncate
/// the file in place while the writer keeps it open (O_APPEND).
fn copytruncate(log: &Path) {
    let copy = |n: u32| log.with_file_name(format!("gc.log.{n}"));
    for n in (1..4).rev() {
        if copy(n).exists() {
            std::fs::rename(copy(n), copy(n + 1)).unwrap();
        }
    }
    std::fs::copy(log, copy(1)).unwrap();
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(log)
        .unwrap();
}

/// A live file written line by line goes through two logrotate
/// copytruncates (one while the agent may still be behind, one after it has
/// caught up), then a delete + recreate twice (the second writer is
/// `pausewatch replay`, which opens with O_APPEND|O_CREAT). The whole fixture
/// is written once; the agent must count exactly the fixture's beans and read
/// every byte exactly once.
#[test]
fn copytruncate_and_delete_recreate_lose_nothing() {
    let source = fixture("jdk17-parallel-steady");
    let lines = fixture_lines(&source.join("gc.log"));
    let fixture_bytes = std::fs::metadata(source.join("gc.log")).unwrap().len();
    let mut h = Harness::new("copytruncate", &|dir| vec![dir.join("gc.log")]);
    let dir = h.path().to_path_buf();
    let live = dir.join("gc.log");
    let log = live.display().to_string();
    h.start_agent();

    let n = lines.len();
    let cuts = [0, n / 4, n / 2, 5 * n / 8, 3 * n / 4, n];
    let mut written = 0u64;
    let caught_up = |h: &mut Harness, written: u64| {
        h.settle(Duration::from_secs(10), &|m| {
            m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(written as f64)
        })
    };

    // Phase 1: paced lines, then the last ten in one burst and a copytruncate
    // right away, so the agent may not have read them: they are in the copy.
    let mut writer = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&live)
        .unwrap();
    let burst = cuts[1] - 10;
    append_lines(&mut writer, &lines[..burst], Duration::from_millis(2));
    append_lines(&mut writer, &lines[burst..cuts[1]], Duration::ZERO);
    copytruncate(&live);
    written += lines[..cuts[1]].iter().map(|l| l.len() as u64).sum::<u64>();
    h.log(&format!("copytruncate 1 after {} lines", cuts[1]));

    // Phase 2: more lines into the truncated file (same descriptor), wait
    // until the agent has read them, then copytruncate with the writer paused.
    append_lines(
        &mut writer,
        &lines[cuts[1]..cuts[2]],
        Duration::from_millis(2),
    );
    written += lines[cuts[1]..cuts[2]]
        .iter()
        .map(|l| l.len() as u64)
        .sum::<u64>();
    caught_up(&mut h, written);
    copytruncate(&live);
    h.log(&format!("copytruncate 2 after {} lines", cuts[2]));

    // Phase 3: more lines, then delete the file while the agent may still be
    // behind and recreate it after it has noticed the file missing.
    append_lines(
        &mut writer,
        &lines[cuts[2]..cuts[3]],
        Duration::from_millis(2),
    );
    drop(writer);
    std::fs::remove_file(&live).unwrap();
    h.log(&format!("deleted after {} lines", cuts[3]));
    std::thread::sleep(Duration::from_millis(400));

    // Phase 4: `pausewatch replay` recreates the file and writes the next part.
    let part = |name: &str, range: std::ops::Range<usize>| {
        let path = dir.join(name);
        std::fs::write(&path, lines[range].concat()).unwrap();
        path
    };
    let part4 = part("part-4.log", cuts[3]..cuts[4]);
    h.spawn(
        "replay-4",
        &mut common::replay_command(&part4, &live, &["--lines-per-second", "400"]),
    );
    h.wait_for("replay-4", Duration::from_secs(20));

    // Phase 5: delete and recreate at once, the agent given no time between.
    std::fs::remove_file(&live).unwrap();
    let part5 = part("part-5.log", cuts[4]..cuts[5]);
    h.spawn(
        "replay-5",
        &mut common::replay_command(&part5, &live, &["--lines-per-second", "400"]),
    );
    h.wait_for("replay-5", Duration::from_secs(20));
    h.log("all written");

    let metrics = caught_up(&mut h, fixture_bytes);
    let beans = mxbeans(&source.join("mxbeans.json"));
    let mut failures = compare_with_beans(&metrics, &log, &beans);
    failures.extend(stream_failures(&metrics, &log, 0));
    let read = metrics.one("pausewatch_log_bytes_total", &[("log", &log)]);
    if read != Some(fixture_bytes as f64) {
        failures.push(format!(
            "bytes read {read:?}, the fixture has {fixture_bytes}: lost or read twice"
        ));
    }
    let read_lines = metrics.one("pausewatch_log_lines_total", &[("log", &log)]);
    if read_lines != Some(n as f64) {
        failures.push(format!("lines read {read_lines:?}, the fixture has {n}"));
    }
    let truncations = metrics.one(
        "pausewatch_errors_total",
        &[("log", &log), ("kind", "truncated")],
    );
    if truncations != Some(2.0) {
        failures.push(format!(
            "errors_total{{kind=truncated}} {truncations:?}, expected 2 (one per copytruncate)"
        ));
    }
    let stderr = h.agent_stderr(0);
    h.log(&format!(
        "recovered from the copy: {}; rotations seen: {}; missing seen: {}",
        stderr.contains("read the unread tail from the rotated copy"),
        stderr.matches("rotated").count(),
        stderr.contains("log file missing")
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
}

/// xorshift64*: reproducible pseudo-random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A fixture appended in random pieces (mostly splitting lines, a few
/// milliseconds apart, sometimes stopping mid-line for longer than the agent's
/// 200 ms pending-pause flush): the agent must count what the JVM counted and
/// what `pausewatch analyze` finds in the whole file.
#[test]
fn partial_lines_written_in_pieces() {
    let source = fixture("jdk17-g1-concurrent");
    let bytes = std::fs::read(source.join("gc.log")).unwrap();
    let mut h = Harness::new("pieces", &|dir| vec![dir.join("gc.log")]);
    let live = h.path().join("gc.log");
    let log = live.display().to_string();
    h.start_agent();

    let seed = std::env::var("PAUSEWATCH_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0042u64);
    h.log(&format!("seed {seed} (PAUSEWATCH_TEST_SEED)"));
    let mut rng = Rng(seed | 1);
    let mut writer = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&live)
        .unwrap();
    let mut at = 0;
    let mut pieces = 0;
    let mut mid_line = 0;
    let mut long_stops = 0;
    while at < bytes.len() {
        let size = if rng.below(2) == 0 {
            1 + rng.below(8)
        } else {
            8 + rng.below(600)
        } as usize;
        let end = (at + size).min(bytes.len());
        writer.write_all(&bytes[at..end]).unwrap();
        writer.flush().unwrap();
        at = end;
        pieces += 1;
        let in_line = end < bytes.len() && bytes[end - 1] != b'\n';
        mid_line += usize::from(in_line);
        // Three long stops mid-line, spread over the file.
        if in_line && long_stops < 3 && at * 4 > bytes.len() * (long_stops + 1) {
            long_stops += 1;
            std::thread::sleep(Duration::from_millis(350));
        } else if rng.below(3) == 0 {
            std::thread::sleep(Duration::from_millis(1 + rng.below(3)));
        }
    }
    drop(writer);
    h.log(&format!(
        "{} bytes in {pieces} pieces, {mid_line} ending mid-line, {long_stops} long stops",
        bytes.len()
    ));

    let metrics = h.settle(Duration::from_secs(10), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(bytes.len() as f64)
    });
    let beans = mxbeans(&source.join("mxbeans.json"));
    let mut failures = compare_with_beans(&metrics, &log, &beans);
    failures.extend(stream_failures(&metrics, &log, 0));

    // Every pause and safepoint, as the offline report counts them in one go.
    let output = Command::new(BIN)
        .args(["analyze", "--format", "json"])
        .arg(source.join("gc.log"))
        .output()
        .unwrap();
    assert!(output.status.success(), "analyze failed");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let all_pauses = metrics.sum("jvm_gc_pause_seconds_count", &[("log", &log)]);
    let expected_pauses = report["pauses"]["count"].as_u64().unwrap();
    if all_pauses != expected_pauses as f64 {
        failures.push(format!(
            "all pauses: agent {all_pauses}, analyze {expected_pauses}"
        ));
    }
    let safepoints = metrics.sum("pausewatch_safepoints_total", &[("log", &log)]);
    let expected_safepoints = report["safepoints"]["count"].as_u64().unwrap();
    if safepoints != expected_safepoints as f64 {
        failures.push(format!(
            "safepoints: agent {safepoints}, analyze {expected_safepoints}"
        ));
    }
    let lines = metrics.one("pausewatch_log_lines_total", &[("log", &log)]);
    let expected_lines = report["lines"].as_u64().unwrap();
    if lines != Some(expected_lines as f64) {
        failures.push(format!("lines: agent {lines:?}, analyze {expected_lines}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
}

/// One source's path is a directory (unreadable even for root), another (when
/// not root) a file with mode 000; a good log is replayed next to them. The
/// agent reports the bad ones and keeps serving the good one.
#[test]
fn unreadable_file_next_to_a_good_one() {
    let source = fixture("jdk17-parallel-steady");
    let fixture_bytes = std::fs::metadata(source.join("gc.log")).unwrap().len();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(true);
    let mut h = Harness::new("unreadable", &|dir| {
        let mut sources = vec![dir.join("bad-dir/gc.log"), dir.join("good/gc.log")];
        if !root {
            sources.push(dir.join("bad-mode/gc.log"));
        }
        sources
    });
    let dir = h.path().to_path_buf();
    std::fs::create_dir_all(dir.join("bad-dir/gc.log")).unwrap();
    std::fs::create_dir_all(dir.join("good")).unwrap();
    let mut bad_logs = vec![dir.join("bad-dir/gc.log").display().to_string()];
    if root {
        h.log("running as root: mode 000 does not stop root, only the directory case is tested");
    } else {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("bad-mode/gc.log");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(source.join("gc.log"), &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        bad_logs.push(path.display().to_string());
    }
    let good = dir.join("good/gc.log");
    let good_log = good.display().to_string();
    h.start_agent();
    h.spawn(
        "replay",
        &mut common::replay_command(
            &source.join("gc.log"),
            &good,
            &["--lines-per-second", "400"],
        ),
    );
    h.wait_for("replay", Duration::from_secs(20));

    let metrics = h.settle(Duration::from_secs(10), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &good_log)]) == Some(fixture_bytes as f64)
    });
    let beans = mxbeans(&source.join("mxbeans.json"));
    let mut failures = compare_with_beans(&metrics, &good_log, &beans);
    failures.extend(stream_failures(&metrics, &good_log, 0));
    for bad in &bad_logs {
        let readable = metrics.one("pausewatch_log_readable", &[("log", bad)]);
        if readable != Some(0.0) {
            failures.push(format!("{bad}: readable {readable:?}, expected 0"));
        }
        let errors = metrics
            .one(
                "pausewatch_errors_total",
                &[("log", bad), ("kind", "unreadable")],
            )
            .unwrap_or(0.0);
        if errors < 1.0 {
            failures.push(format!(
                "{bad}: errors_total{{kind=unreadable}} {errors}, expected >= 1"
            ));
        }
        let pauses = metrics.sum("jvm_gc_pause_seconds_count", &[("log", bad)]);
        if pauses != 0.0 {
            failures.push(format!("{bad}: {pauses} pauses from an unreadable source"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
    // Still serving after the errors.
    h.scrape();
}

/// logrotate's copytruncate while the agent is down (SIGKILLed): the lines
/// written after the agent's last checkpoint and before the copy are only in
/// `gc.log.1` when it comes back. The running agent recovers such a tail from
/// the copy (`Follower::check_rewritten`); a restarted one should too.
#[test]
fn copytruncate_while_the_agent_is_down_loses_nothing() {
    let source = fixture("jdk17-parallel-steady");
    let lines = fixture_lines(&source.join("gc.log"));
    let fixture_bytes = std::fs::metadata(source.join("gc.log")).unwrap().len();
    let mut h = Harness::new("copytruncate-down", &|dir| vec![dir.join("gc.log")]);
    let live = h.path().join("gc.log");
    let log = live.display().to_string();
    h.start_agent();
    let n = lines.len();
    let mut writer = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&live)
        .unwrap();
    append_lines(&mut writer, &lines[..n / 2], Duration::from_millis(1));
    let half: u64 = lines[..n / 2].iter().map(|l| l.len() as u64).sum();
    h.settle(Duration::from_secs(10), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(half as f64)
    });
    // The checkpoint interval is 200 ms; settling took longer.
    h.kill_agent();
    append_lines(&mut writer, &lines[n / 2..3 * n / 4], Duration::ZERO);
    copytruncate(&live);
    append_lines(&mut writer, &lines[3 * n / 4..], Duration::ZERO);
    drop(writer);
    h.start_agent();
    let metrics = h.settle(Duration::from_secs(5), &|m| {
        m.one("pausewatch_log_bytes_total", &[("log", &log)]) == Some(fixture_bytes as f64)
    });
    let beans = mxbeans(&source.join("mxbeans.json"));
    let mut failures = compare_with_beans(&metrics, &log, &beans);
    let read = metrics.one("pausewatch_log_bytes_total", &[("log", &log)]);
    if read != Some(fixture_bytes as f64) {
        failures.push(format!(
            "bytes read {read:?}, the fixture has {fixture_bytes}: lost or read twice"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The JDK 8 rotation set GCViewer keeps as a test resource
/// (`SampleSun1_8_0Series-Part1..7.txt`: the files one JVM wrote with
/// `-XX:+UseGCLogFileRotation`, each beginning with HotSpot's "GC log file
/// created" line and ending with its "Saved as" line), or `None` (the test
/// is skipped) without the public corpus.
fn jdk8_rotation_set() -> Option<Vec<Vec<String>>> {
    let dir = common::corpus_dir("GCViewer/src/test/resources/openjdk")?;
    let part = |n: usize| fixture_lines(&dir.join(format!("SampleSun1_8_0Series-Part{n}.txt")));
    Some((1..=7).map(part).collect())
}

/// One JDK 8 JVM's ring of `files` files named `ring`, moved through
/// HotSpot 8's `gcLogFileStream` file operations (`ostream.cpp`): it starts
/// in `ring.0.current` (`fopen(.., "w")`); a rotation removes an old
/// `ring.K`, renames `ring.K.current` to `ring.K`, creates
/// `ring.K+1.current` (or `ring.0.current` after the last) and then removes
/// an old `ring.K+1`. The lines, in-band markers included, are the corpus's.
struct Jdk8Jvm {
    ring: PathBuf,
    files: usize,
    number: usize,
    writer: File,
}

impl Jdk8Jvm {
    fn numbered(&self, number: usize, current: bool) -> PathBuf {
        let name = self.ring.file_name().unwrap().to_string_lossy();
        let suffix = if current { ".current" } else { "" };
        self.ring.with_file_name(format!("{name}.{number}{suffix}"))
    }

    fn start(ring: PathBuf, files: usize) -> Jdk8Jvm {
        std::fs::create_dir_all(ring.parent().unwrap()).unwrap();
        let current = ring.with_file_name(format!(
            "{}.0.current",
            ring.file_name().unwrap().to_string_lossy()
        ));
        let writer = File::create(current).unwrap();
        Jdk8Jvm {
            ring,
            files,
            number: 0,
            writer,
        }
    }

    fn rotate(&mut self) {
        let saved = self.numbered(self.number, false);
        let _ = std::fs::remove_file(&saved);
        std::fs::rename(self.numbered(self.number, true), &saved).unwrap();
        self.number = (self.number + 1) % self.files;
        self.writer = File::create(self.numbered(self.number, true)).unwrap();
        let _ = std::fs::remove_file(self.numbered(self.number, false));
    }
}

/// Two JDK 8 rings of 4 files, one configured by its name (`a/gc.log`), one
/// by a glob (`b/gc*.log*`), written from before the agent sees them through
/// all 7 files of the corpus's rotation set: they wrap, and the agent is
/// SIGKILLed in the fourth file and restarted in the fifth (the wrapped
/// `gc.log.0.current`), resuming from its checkpoint in the renamed
/// `gc.log.3`. Every byte and line of the set must be read exactly once,
/// counted against the corpus files themselves.
#[test]
fn a_jdk8_rotation_ring_is_followed_through_wraps_and_an_agent_kill() {
    let Some(parts) = jdk8_rotation_set() else {
        return;
    };
    let mut h = Harness::new("jdk8-ring", &|dir| {
        vec![dir.join("a/gc.log"), dir.join("b/gc*.log*")]
    });
    let rings = [h.path().join("a/gc.log"), h.path().join("b/gc.log")];
    let labels: Vec<String> = rings.iter().map(|r| r.display().to_string()).collect();
    let bytes =
        |parts: &[Vec<String>]| -> u64 { parts.iter().flatten().map(|l| l.len() as u64).sum() };
    // The files followed are a directory listing, taken at each rotation and
    // at most every 5 s otherwise: one taken while `rotate` had created the
    // next file and not yet removed its predecessor counts 5 until the next.
    let read_all = |h: &mut Harness, written: u64, files: Option<f64>| {
        h.settle(Duration::from_secs(12), &|m| {
            labels.iter().all(|log| {
                let filter = [("log", log.as_str())];
                m.one("pausewatch_log_bytes_total", &filter) == Some(written as f64)
                    && files.is_none_or(|files| {
                        m.one("pausewatch_log_files_followed", &filter) == Some(files)
                    })
            })
        })
    };
    h.start_agent();
    let mut jvms: Vec<Jdk8Jvm> = rings.iter().map(|r| Jdk8Jvm::start(r.clone(), 4)).collect();
    let write = |jvms: &mut [Jdk8Jvm], lines: &[String]| {
        for line in lines {
            for jvm in jvms.iter_mut() {
                jvm.writer.write_all(line.as_bytes()).unwrap();
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    };
    let half = parts[3].len() / 2;
    for (index, part) in parts.iter().enumerate() {
        match index {
            3 => {
                write(&mut jvms, &part[..half]);
                read_all(
                    &mut h,
                    bytes(&parts[..3]) + bytes(&[part[..half].to_vec()]),
                    None,
                );
                // The checkpoint interval is 200 ms; settling took longer.
                h.kill_agent();
                write(&mut jvms, &part[half..]);
            }
            4 => {
                write(&mut jvms, &part[..half]);
                h.start_agent();
                write(&mut jvms, &part[half..]);
            }
            _ => write(&mut jvms, part),
        }
        if index + 1 < parts.len() {
            // Rotations happen at GC safepoints, never within one clock tick.
            std::thread::sleep(Duration::from_millis(20));
            jvms.iter_mut().for_each(Jdk8Jvm::rotate);
        }
    }
    let total_bytes = bytes(&parts);
    let total_lines: usize = parts.iter().map(Vec::len).sum();
    let metrics = read_all(&mut h, total_bytes, Some(4.0));
    let mut failures = Vec::new();
    for log in &labels {
        let filter = [("log", log.as_str())];
        let read = metrics.one("pausewatch_log_bytes_total", &filter);
        if read != Some(total_bytes as f64) {
            failures.push(format!(
                "{log}: bytes read {read:?}, the set has {total_bytes}"
            ));
        }
        let lines = metrics.one("pausewatch_log_lines_total", &filter);
        if lines != Some(total_lines as f64) {
            failures.push(format!(
                "{log}: lines read {lines:?}, the set has {total_lines}"
            ));
        }
        let files = metrics.one("pausewatch_log_files_followed", &filter);
        if files != Some(4.0) {
            failures.push(format!("{log}: files followed {files:?}, the ring has 4"));
        }
        // Counted by hand: 533 `[GC (` events in the seven parts, 3 of them
        // CMS remarks holding a young collection (-XX:+CMSScavengeBeforeRemark),
        // as in the file GCViewer's GcSeriesLoaderTest merges them into
        // (SampleSun1_8_0Series-ManuallyMerged.txt, parsers/tests/it/legacy_corpus.rs).
        let pauses = metrics.sum("jvm_gc_pause_seconds_count", &filter);
        if pauses != 536.0 {
            failures.push(format!("{log}: {pauses} pauses, the set has 536"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(h.agent_is_running(), "the agent died");
}
