//! Following files on a hostile host: restarts in the middle of rotations,
//! files that appear late, requests that arrive before their GC log, and
//! symlinks that alias files or lead out of the configured directories.
//!
//! Each case runs the agent binary and compares the pauses it counted
//! (`jvm_gc_pause_seconds_count`, summed) with `pausewatch analyze` of the
//! same bytes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{free_port, jvm_fixture, root, sample, sum, Agent, PAUSEWATCH};

/// How long the agent gets to reach a figure.
pub(super) const SETTLE: Duration = Duration::from_secs(20);
/// How long a reached figure must hold, so that a second count would show.
pub(super) const HOLD: Duration = Duration::from_millis(1500);

/// `pauses.count` of `pausewatch analyze` over `files`, in the order given.
pub(super) fn analyze_pauses<P: AsRef<Path>>(files: &[P]) -> f64 {
    let output = Command::new(PAUSEWATCH)
        .args(["analyze", "--format", "json"])
        .args(files.iter().map(AsRef::as_ref))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    report["pauses"]["count"].as_f64().unwrap()
}

/// Pauses the agent counted, in streams whose lines contain all of `contains`.
pub(super) fn pauses(metrics: &str, contains: &[&str]) -> f64 {
    sum(metrics, "jvm_gc_pause_seconds_count", contains)
}

/// Waits until `figure` of `/metrics` reaches `expected` (or `SETTLE`
/// passes), then for `HOLD`: what it shows then.
pub(super) fn settle(agent: &Agent, expected: f64, figure: impl Fn(&str) -> f64) -> String {
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline && figure(&agent.get("/metrics").unwrap_or_default()) < expected
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(HOLD);
    agent.get("/metrics").unwrap_or_default()
}

/// The agent's config: listening on `port`, checkpointing into `dir`, then `sources`.
fn config(dir: &Path, port: u16, sources: &str) -> String {
    format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{}/checkpoint\"\npoll_interval = \"50ms\"\ncheckpoint_interval = \"100ms\"\n{sources}",
        dir.display()
    )
}

/// Starts the agent and waits until it serves `/metrics`.
pub(super) fn start(dir: &Path, port: u16, sources: &str) -> Agent {
    let agent = Agent::start(dir, port, &config(dir, port, sources));
    agent.metrics_when(SETTLE, |m| m.ends_with("# EOF\n"));
    agent
}

/// The steady G1 fixture cut into three pieces, each ending just before a
/// collection starts, so that the pieces' pauses add up to the whole's.
pub(super) fn steady_pieces() -> [String; 3] {
    let text = std::fs::read_to_string(jvm_fixture("jdk17-g1-steady").join("gc.log")).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("[gc,start") && lines[i].contains(" Pause "))
        .collect();
    let (a, b) = (starts[starts.len() / 3], starts[2 * starts.len() / 3]);
    [
        lines[..a].concat(),
        lines[a..b].concat(),
        lines[b..].concat(),
    ]
}

pub(super) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// The distinct `log` labels of `family` in `/metrics`: the streams.
fn streams(metrics: &str, family: &str) -> Vec<String> {
    let mut logs: Vec<String> = metrics
        .lines()
        .filter(|line| line.starts_with(family))
        .filter_map(|line| line.split("log=\"").nth(1)?.split('"').next())
        .map(str::to_string)
        .collect();
    logs.sort();
    logs.dedup();
    logs
}

/// Lets the checkpoint catch up before a SIGKILL.
fn after_a_checkpoint() {
    std::thread::sleep(Duration::from_millis(600));
}

/// A `[[gc_log]]` of `log`, read from its beginning.
fn from_the_beginning(log: &Path) -> String {
    format!(
        "[[gc_log]]\npath = \"{}\"\nstart_at = \"beginning\"\n",
        log.display()
    )
}

/// Runs the agent until it has counted `expected` pauses and checkpointed
/// them, then kills it (SIGKILL).
fn count_and_kill(dir: &Path, port: u16, sources: &str, expected: f64) {
    let agent = start(dir, port, sources);
    settle(&agent, expected, |m| pauses(m, &[]));
    after_a_checkpoint();
    drop(agent);
}

/// Renames `log` to `log.1`, writes `second` to a new `log`, renames that to
/// `log.2` and writes `third` to a new `log`, as HotSpot rotates.
fn rotate_twice(log: &Path, second: &str, third: &str) {
    for (rotated, text) in [("gc.log.1", second), ("gc.log.2", third)] {
        std::thread::sleep(Duration::from_millis(20));
        std::fs::rename(log, log.with_file_name(rotated)).unwrap();
        write(log, text);
    }
}

#[test]
fn restart_after_two_rotations_reads_the_rotated_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let [x, y, z] = steady_pieces();
    let (first, rest) = x.split_at(x.len() / 2);
    let first_end = first.rfind('\n').unwrap() + 1;
    let (first, rest) = (&x[..first_end], format!("{}{rest}", &first[first_end..]));
    write(&log, first);
    let (port, sources) = (free_port(), from_the_beginning(&log));
    count_and_kill(dir.path(), port, &sources, analyze_pauses(&[&log]));
    // While the agent is down: the rest of the first file, two rotations.
    append(&log, &rest);
    rotate_twice(&log, &y, &z);
    let files = ["gc.log.1", "gc.log.2", "gc.log"].map(|f| dir.path().join(f));
    let expected = analyze_pauses(&files);
    let agent = start(dir.path(), port, &sources);
    let metrics = settle(&agent, expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
}

#[test]
fn restart_after_the_checkpointed_file_was_deleted_reads_the_newer_rotated_files() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let [x, y, z] = steady_pieces();
    write(&log, &x);
    let (port, sources) = (free_port(), from_the_beginning(&log));
    let counted = analyze_pauses(&[&log]);
    count_and_kill(dir.path(), port, &sources, counted);
    // Two rotations, and the oldest rotated file (the checkpointed one) deleted.
    rotate_twice(&log, &y, &z);
    std::fs::remove_file(dir.path().join("gc.log.1")).unwrap();
    let expected = counted + analyze_pauses(&[dir.path().join("gc.log.2"), log]);
    let agent = start(dir.path(), port, &sources);
    let metrics = settle(&agent, expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
}

#[test]
fn start_at_beginning_reads_the_rotated_files_already_there_oldest_first() {
    let fixture = jvm_fixture("jdk17-g1-rotation");
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&fixture)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("gc.log"))
        .collect();
    // Copied newest name first, so that modification times lie about age:
    // as after a restore from a backup.
    names.sort();
    names.reverse();
    for name in &names {
        std::fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let expected = analyze_pauses(&names.iter().map(|n| fixture.join(n)).collect::<Vec<_>>());
    let sources = format!(
        "[[gc_log]]\npath = \"{}/gc.log\"\nstart_at = \"beginning\"\n",
        dir.path().display()
    );
    let agent = start(dir.path(), free_port(), &sources);
    let metrics = settle(&agent, expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
    assert_eq!(
        sample(&metrics, "pausewatch_jvm_restarts_total"),
        Some(0.0),
        "read out of order, the uptime would run backwards"
    );
}

/// An `[[access_log]]` of the latency fixture's JSON lines at `path`,
/// served by the JVM of `gc_log`, with `more` keys.
fn json_access_log(path: &Path, gc_log: &Path, more: &str) -> String {
    format!(
        r#"[[access_log]]
path = "{}"
format = "json"
time_field = "start"
duration_field = "duration_ms"
duration_unit = "ms"
gc_log = "{}"
{more}"#,
        path.display(),
        gc_log.display()
    )
}

#[test]
fn files_created_after_the_agent_started_are_read_from_their_start() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::fs::read_to_string(jvm_fixture("jdk17-g1-steady").join("gc.log")).unwrap();
    let whole = analyze_pauses(&[jvm_fixture("jdk17-g1-steady").join("gc.log")]);
    let latency = root().join("tests/fixtures/latency/jdk17-parallel");
    let requests = std::fs::read_to_string(latency.join("access.jsonl")).unwrap();
    let (globbed, plain, access) = (
        dir.path().join("jvms"),
        dir.path().join("plain/gc.log"),
        dir.path().join("access.jsonl"),
    );
    std::fs::create_dir_all(&globbed).unwrap();
    let sources = format!(
        "[[gc_log]]\npath = \"{}/*/gc.log\"\n[[gc_log]]\npath = \"{}\"\n{}",
        globbed.display(),
        plain.display(),
        json_access_log(&access, &plain, "")
    );
    let port = free_port();
    let agent = start(dir.path(), port, &sources);
    // Past the first discovery pass: the JVMs and the service start now.
    std::thread::sleep(Duration::from_millis(1500));
    write(&globbed.join("a/gc.log"), &fixture);
    write(&plain, &fixture);
    write(&access, &requests);
    let metrics = settle(&agent, 2.0 * whole, |m| pauses(m, &[]));
    let a = format!("log=\"{}\"", globbed.join("a/gc.log").display());
    let p = format!("log=\"{}\"", plain.display());
    assert_eq!(pauses(&metrics, &[&a]), whole, "glob match\n{metrics}");
    assert_eq!(pauses(&metrics, &[&p]), whole, "plain path\n{metrics}");
    assert_eq!(
        sample(&metrics, "pausewatch_requests_total"),
        Some(requests.lines().count() as f64),
        "access log"
    );
    after_a_checkpoint();
    drop(agent);
    // A JVM that starts while the agent is down is new after the restart.
    write(&globbed.join("b/gc.log"), &fixture);
    let agent = start(dir.path(), port, &sources);
    let metrics = settle(&agent, 3.0 * whole, |m| pauses(m, &[]));
    let b = format!("log=\"{}\"", globbed.join("b/gc.log").display());
    assert_eq!(pauses(&metrics, &[&b]), whole, "after a restart\n{metrics}");
    assert_eq!(pauses(&metrics, &[]), 3.0 * whole, "{metrics}");
}

#[test]
fn requests_read_before_their_gc_log_appears_wait_for_it_across_a_restart() {
    let latency = root().join("tests/fixtures/latency/jdk17-parallel");
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.jsonl");
    std::fs::copy(latency.join("access.jsonl"), &access).unwrap();
    let requests = std::fs::read_to_string(&access).unwrap().lines().count() as f64;
    let gc_log = dir.path().join("jvm/gc.log");
    let sources = format!(
        "[[gc_log]]\npath = \"{}/*/gc.log\"\n{}",
        dir.path().display(),
        json_access_log(&access, &gc_log, "start_at = \"beginning\"\n")
    );
    let port = free_port();
    let agent = start(dir.path(), port, &sources);
    settle(&agent, requests, |m| {
        sample(m, "pausewatch_access_log_lines_total").unwrap_or(0.0)
    });
    after_a_checkpoint();
    drop(agent);
    let agent = start(dir.path(), port, &sources);
    write(
        &gc_log,
        &std::fs::read_to_string(latency.join("gc.log")).unwrap(),
    );
    let metrics = settle(&agent, requests, |m| {
        sample(m, "pausewatch_requests_total").unwrap_or(0.0)
    });
    assert_eq!(
        sample(&metrics, "pausewatch_requests_total"),
        Some(requests),
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            "pausewatch_access_log_unattributed_requests_total"
        ),
        Some(0.0),
        "{metrics}"
    );
}

#[test]
fn one_file_reached_through_symlinks_is_one_stream() {
    let dir = tempfile::tempdir().unwrap();
    let [piece, ..] = steady_pieces();
    let logs = dir.path().join("logs");
    write(&logs.join("releases/r1/gc.log"), &piece);
    std::os::unix::fs::symlink("releases/r1", logs.join("current")).unwrap();
    // Six JVMs, each directory with a link to its parent: a loop.
    let looped = dir.path().join("loop");
    for i in 0..6 {
        let jvm = looped.join(format!("jvm{i}"));
        write(&jvm.join("gc.log"), &piece);
        std::os::unix::fs::symlink("..", jvm.join("up")).unwrap();
    }
    let sources = format!(
        "[[gc_log]]\npath = \"{}/**/gc.log\"\nstart_at = \"beginning\"\n[[gc_log]]\npath = \"{}/**/gc.log\"\nstart_at = \"beginning\"\n",
        logs.display(),
        looped.display()
    );
    let one = analyze_pauses(&[logs.join("releases/r1/gc.log")]);
    let agent = start(dir.path(), free_port(), &sources);
    let metrics = settle(&agent, 7.0 * one, |m| pauses(m, &[]));
    let logs_label = format!("log=\"{}/", logs.display());
    assert_eq!(pauses(&metrics, &[&logs_label]), one, "{metrics}");
    assert_eq!(pauses(&metrics, &[]), 7.0 * one, "{metrics}");
    assert_eq!(
        streams(&metrics, "pausewatch_log_lines_total").len(),
        7,
        "{metrics}"
    );
}

#[test]
fn a_symlink_out_of_the_configured_directories_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let [piece, ..] = steady_pieces();
    // A file the agent may read as root but that is no business of the config.
    write(&dir.path().join("secret/shadow"), &piece);
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::os::unix::fs::symlink("../secret/shadow", logs.join("gc.log")).unwrap();
    let sources = format!(
        "[[gc_log]]\npath = \"{}/gc.log\"\nstart_at = \"beginning\"\n",
        logs.display()
    );
    let agent = start(dir.path(), free_port(), &sources);
    let refused = |m: &str| sum(m, "pausewatch_errors_total", &["kind=\"symlink_outside\""]);
    let metrics = settle(&agent, 1.0, refused);
    assert_eq!(refused(&metrics), 1.0, "refused and said once\n{metrics}");
    assert_eq!(pauses(&metrics, &[]), 0.0, "{metrics}");
    assert_eq!(
        sum(&metrics, "pausewatch_log_bytes_total", &[]),
        0.0,
        "{metrics}"
    );
    drop(agent);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let sources = format!(
        "[[gc_log]]\npath = \"{}/gc.log\"\nstart_at = \"beginning\"\nfollow_symlinks_outside = true\n",
        logs.display()
    );
    let agent = start(&allowed, free_port(), &sources);
    let expected = analyze_pauses(&[dir.path().join("secret/shadow")]);
    let metrics = settle(&agent, expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "allowed\n{metrics}");
}

/// A JVM directory a glob matched is removed: after `forget_after` its
/// stream and series are gone; a file that comes back there is a new stream,
/// counted from its start and not on top of the old one.
#[test]
fn a_removed_jvm_directory_drops_its_stream_and_a_new_file_there_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let [piece, ..] = steady_pieces();
    let jvms = dir.path().join("jvms");
    write(&jvms.join("a/gc.log"), &piece);
    write(&jvms.join("b/gc.log"), &piece);
    let one = analyze_pauses(&[jvms.join("a/gc.log")]);
    let sources = format!(
        "[[gc_log]]\npath = \"{}/*/gc.log\"\nstart_at = \"beginning\"\nforget_after = \"1s\"\n",
        jvms.display()
    );
    let agent = start(dir.path(), free_port(), &sources);
    let metrics = settle(&agent, 2.0 * one, |m| pauses(m, &[]));
    assert_eq!(streams(&metrics, "pausewatch_log_lines_total").len(), 2);
    std::fs::remove_dir_all(jvms.join("b")).unwrap();
    let b_label = format!("log=\"{}", jvms.join("b/gc.log").display());
    let deadline = Instant::now() + SETTLE;
    let mut metrics = agent.get("/metrics").unwrap_or_default();
    while metrics.contains(&b_label) {
        assert!(Instant::now() < deadline, "b's series stayed: {metrics}");
        std::thread::sleep(Duration::from_millis(200));
        metrics = agent.get("/metrics").unwrap_or_default();
    }
    assert_eq!(pauses(&metrics, &[]), one, "a's pauses alone: {metrics}");
    let health = agent.get("/healthz").unwrap();
    assert!(health.contains("\"streams\":1"), "{health}");
    write(&jvms.join("b/gc.log"), &piece);
    let metrics = settle(&agent, 2.0 * one, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[&b_label]), one, "{metrics}");
    assert_eq!(pauses(&metrics, &[]), 2.0 * one, "{metrics}");
}
