//! Running as a service: signals, the listen address, the checkpoint
//! directory and a disk that fills up.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, free_port, http_get_ok, jvm_fixture, sum, toml_string};

/// `config` written to `dir/pausewatch.toml`.
fn config_file(dir: &Path, config: &str) -> std::path::PathBuf {
    common::write_file(dir, "pausewatch.toml", config)
}

/// The agent with its stderr captured, on a config written into `dir`.
fn spawn(dir: &Path, config: &str) -> Child {
    common::run_command(&config_file(dir, config))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_healthy(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while http_get_ok(port, "/healthz").is_err() {
        assert!(Instant::now() < deadline, "the agent never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` to exit within `limit`; kills it and fails otherwise.
fn exit_within(child: &mut Child, limit: Duration) -> (ExitStatus, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

/// The stderr of an agent on `config` that must exit 2 (a setup fault).
fn exit_2_stderr(dir: &Path, config: &str) -> String {
    let mut agent = spawn(dir, config);
    let (status, _) = exit_within(&mut agent, Duration::from_secs(10));
    let stderr = stderr_of(&mut agent);
    assert_eq!(status.code(), Some(2), "{stderr}");
    stderr
}

fn config(dir: &Path, port: u16, extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n{extra}",
        toml_string(&dir.join("checkpoint"))
    )
}

#[test]
fn sigterm_takes_effect_at_once_even_with_an_hour_long_poll_interval() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut agent = spawn(
        dir.path(),
        &config(dir.path(), port, "poll_interval = \"1h\"\n"),
    );
    wait_healthy(port);
    signal(&agent, "TERM");
    let (status, took) = exit_within(&mut agent, Duration::from_secs(10));
    assert!(status.success(), "{status}: {}", stderr_of(&mut agent));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(dir.path().join("checkpoint/state.json").exists());
}

#[test]
fn hup_usr1_and_usr2_do_not_kill_the_agent_and_usr1_writes_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    std::fs::copy(jvm_fixture("jdk17-parallel-full").join("gc.log"), &log).unwrap();
    let port = free_port();
    let gc_log = format!(
        "checkpoint_interval = \"1h\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
        toml_string(&log)
    );
    let mut agent = spawn(dir.path(), &config(dir.path(), port, &gc_log));
    wait_healthy(port);
    let state = dir.path().join("checkpoint/state.json");
    assert!(!state.exists(), "no checkpoint is due within the hour");
    signal(&agent, "USR1");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !state.exists() {
        assert!(Instant::now() < deadline, "SIGUSR1 wrote no checkpoint");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&agent, "HUP");
    signal(&agent, "USR2");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        agent.try_wait().unwrap().is_none(),
        "a signal killed the agent"
    );
    // The fixture's 17 pauses (mxbeans.json: 4 PS Scavenge, 13 PS MarkSweep).
    let metrics = http_get_ok(port, "/metrics").unwrap();
    assert_eq!(sum(&metrics, "jvm_gc_pause_seconds_count", &[]), 17.0);
    signal(&agent, "TERM");
    let (status, _) = exit_within(&mut agent, Duration::from_secs(10));
    let stderr = stderr_of(&mut agent);
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("SIGHUP"), "{stderr}");
    assert!(stderr.contains("status: GC log"), "{stderr}");
}

#[test]
fn listen_on_port_zero_logs_the_port_it_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = spawn(dir.path(), &config(dir.path(), 0, ""));
    let mut stderr = agent.stderr.take().unwrap();
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    let port = loop {
        let read = stderr.read(&mut buffer).unwrap();
        assert!(read > 0, "the agent ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
        let port = seen.split("listen=127.0.0.1:").nth(1).map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        });
        if let Some(port) = port.filter(|p| !p.is_empty()) {
            break port.parse::<u16>().unwrap();
        }
    };
    assert_ne!(port, 0, "{seen}");
    wait_healthy(port);
    let _ = agent.kill();
    let _ = agent.wait();
}

#[test]
fn an_address_in_use_exits_2_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let stderr = exit_2_stderr(dir.path(), &config(dir.path(), port, ""));
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}

#[test]
fn a_second_agent_on_the_same_checkpoint_dir_exits_2_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let first_port = free_port();
    let mut first = spawn(dir.path(), &config(dir.path(), first_port, ""));
    wait_healthy(first_port);
    let second_dir = tempfile::tempdir().unwrap();
    let stderr = exit_2_stderr(second_dir.path(), &config(dir.path(), free_port(), ""));
    assert!(
        stderr.contains(&format!("pid {}", first.id())),
        "names the holder: {stderr}"
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first keeps running"
    );
    let _ = first.kill();
    let _ = first.wait();
}

/// The checkpoint directory on a 4 KiB file system of its own (a private
/// mount namespace): the lock file takes its one page, so no state fits.
#[test]
fn a_full_disk_is_reported_once_a_minute_and_leaves_no_temporary_file() {
    if !common::mount_namespace_or_skip("no small file system can be mounted") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let checkpoint_dir = dir.path().join("checkpoint");
    std::fs::create_dir(&checkpoint_dir).unwrap();
    let log = dir.path().join("gc.log");
    std::fs::copy(jvm_fixture("jdk17-g1-concurrent").join("gc.log"), &log).unwrap();
    let port = free_port();
    let config_path = config_file(
        dir.path(),
        &config(
            dir.path(),
            port,
            &format!(
                "checkpoint_interval = \"100ms\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
                toml_string(&log)
            ),
        ),
    );
    let script = format!(
        "mount -t tmpfs -o size=4k none '{}' && exec '{}' run --config '{}'",
        checkpoint_dir.display(),
        common::PAUSEWATCH,
        config_path.display()
    );
    let mut agent = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_healthy(port);
    // Seen from inside the agent's mount namespace.
    let inside = Path::new("/proc")
        .join(agent.id().to_string())
        .join("root")
        .join(checkpoint_dir.strip_prefix("/").unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let failures = loop {
        let metrics = http_get_ok(port, "/metrics").unwrap_or_default();
        let failures = sum(&metrics, "pausewatch_errors_total", &["checkpoint_write"]);
        if failures >= 5.0 {
            break failures;
        }
        assert!(Instant::now() < deadline, "checkpoints kept succeeding");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(inside.join("lock").exists(), "looking at the right place");
    assert!(
        !inside.join("state.json.tmp").exists(),
        "a partial file was left"
    );
    signal(&agent, "TERM");
    let (status, _) = exit_within(&mut agent, Duration::from_secs(10));
    let stderr = stderr_of(&mut agent);
    assert!(!status.success(), "the final checkpoint cannot succeed");
    let logged = stderr.matches("checkpoint failed").count();
    assert_eq!(
        logged, 1,
        "{failures} failures, logged {logged} times: {stderr}"
    );
    assert!(
        stderr.contains(&checkpoint_dir.join("state.json").display().to_string()),
        "the exit message names the file: {stderr}"
    );
}

/// A JVM and its service written live for `for_how_long`: a G1 pause every
/// 100 ms (4 to 40 ms), 300 requests a second in nginx's format with
/// `$request_time $msec`, every tenth slow (60 ms). Times are the wall
/// clock's, so minutes are attributed once over, as in production. Returns
/// the pauses and requests written.
fn write_service(gc_log: &Path, access_log: &Path, for_how_long: Duration) -> (u64, u64) {
    use std::io::Write;
    let open = |path: &Path| {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap()
    };
    let (mut gc, mut access) = (open(gc_log), open(access_log));
    let stamp = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%S%.3f+0000");
    let started = Instant::now();
    writeln!(
        gc,
        "[{}][1000ms][info][gc] Using G1",
        stamp(chrono::Utc::now())
    )
    .unwrap();
    let (mut pauses, mut requests) = (0, 0);
    while started.elapsed() < for_how_long {
        let due = Duration::from_micros(3333 * requests);
        std::thread::sleep(due.saturating_sub(started.elapsed()));
        let now = chrono::Utc::now();
        let duration_ms = if requests % 10 == 0 {
            60
        } else {
            1 + requests % 9
        };
        writeln!(
            access,
            "127.0.0.1 - - [{}] \"GET /price HTTP/1.1\" 200 512 \"-\" \"test\" {}.{:03} {}.{:03}",
            now.format("%d/%b/%Y:%H:%M:%S +0000"),
            duration_ms / 1000,
            duration_ms % 1000,
            now.timestamp(),
            now.timestamp_subsec_millis()
        )
        .unwrap();
        requests += 1;
        if requests % 30 == 0 {
            let uptime = 1000 + started.elapsed().as_millis();
            let (gc_id, pause_ms) = (pauses, 4 + (pauses * 7) % 37);
            writeln!(
                gc,
                "[{t}][{uptime}ms][info][gc] GC({gc_id}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) {pause_ms}.000ms\n\
                 [{t}][{uptime}ms][info][gc,cpu] GC({gc_id}) User=0.01s Sys=0.00s Real=0.01s",
                t = stamp(now)
            )
            .unwrap();
            pauses += 1;
        }
    }
    (pauses, requests)
}

/// The counters a restart must neither lose nor double.
fn counted(port: u16) -> [f64; 5] {
    let metrics = http_get_ok(port, "/metrics").unwrap_or_default();
    [
        "jvm_gc_pause_seconds_count",
        "pausewatch_requests_total",
        "pausewatch_slow_requests_total",
        "pausewatch_slow_requests_stop_affected_total",
        "pausewatch_access_log_lines_total",
    ]
    .map(|name| sum(&metrics, name, &[]))
}

/// Two agents follow the same live GC and access logs; one is SIGKILLed
/// twice (checkpoints every 100 ms, so each kill lands among journal
/// appends) and restarted at once. Once the minutes are attributed, its
/// pauses, requests, slow and stop-affected requests are the other's.
#[test]
fn sigkilled_twice_mid_stream_the_agent_counts_what_an_agent_never_killed_counts() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let (gc_log, access_log) = (logs.join("gc.log"), logs.join("access.log"));
    // Minutes are attributed a second after they end: write until a minute
    // boundary at least 12 s away, so the test waits for one minute at most.
    let now = chrono::Utc::now();
    let mut boundary = (now.timestamp() / 60 + 1) * 60;
    if boundary - now.timestamp() < 12 {
        boundary += 60;
    }
    let writing = Duration::from_millis(
        (boundary * 1000 - now.timestamp_millis() - 300)
            .try_into()
            .unwrap(),
    );
    let sources = format!(
        "checkpoint_interval = \"100ms\"\npoll_interval = \"100ms\"\n\
         [[gc_log]]\npath = {gc}\nstart_at = \"beginning\"\n\
         [[access_log]]\npath = {access}\nformat = \"nginx\"\ngc_log = {gc}\nstart_at = \"beginning\"\n\
         [correlation]\nslo = \"50ms\"\nfinalize_after = \"1s\"\n",
        gc = toml_string(&gc_log),
        access = toml_string(&access_log)
    );
    std::fs::write(&gc_log, "").unwrap();
    std::fs::write(&access_log, "").unwrap();
    let agent_in = |name: &str, port: u16| {
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        let agent = spawn(&home, &config(&home, port, &sources));
        wait_healthy(port);
        agent
    };
    let (never_killed_port, killed_port) = (free_port(), free_port());
    let _never_killed = KillOnDrop(agent_in("never-killed", never_killed_port));
    let mut killed = agent_in("killed", killed_port);
    let writer = {
        let (gc_log, access_log) = (gc_log.clone(), access_log.clone());
        std::thread::spawn(move || write_service(&gc_log, &access_log, writing))
    };
    let started = Instant::now();
    let mut resumed = 0;
    for at in [writing * 3 / 10, writing * 13 / 20] {
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        killed.kill().unwrap();
        killed.wait().unwrap();
        killed = agent_in("killed", killed_port);
        resumed += 1;
    }
    let (pauses, requests) = writer.join().unwrap();
    let mut killed = KillOnDrop(killed);
    // The last minute is attributed a second after it ends.
    let attributed = Duration::from_secs(3);
    std::thread::sleep(attributed);
    let deadline = Instant::now() + Duration::from_secs(15);
    let (expected, got) = loop {
        let (expected, got) = (counted(never_killed_port), counted(killed_port));
        let complete = expected[..2] == [pauses as f64, requests as f64] && expected[2] > 0.0;
        if (complete && expected == got) || Instant::now() > deadline {
            break (expected, got);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stderr = {
        signal(&killed.0, "TERM");
        exit_within(&mut killed.0, Duration::from_secs(10));
        stderr_of(&mut killed.0)
    };
    assert_eq!(resumed, 2);
    assert!(
        stderr.contains("resuming from checkpoint"),
        "the last start resumed from the journal: {stderr}"
    );
    assert_eq!(
        expected[..2],
        [pauses as f64, requests as f64],
        "the agent never killed read everything"
    );
    assert!(
        expected[2] > 0.0 && expected[3] > 0.0,
        "slow and stop-affected requests to compare: {expected:?}"
    );
    assert_eq!(
        got, expected,
        "[pauses, requests, slow, stop-affected, access lines] after two SIGKILLs"
    );
}

/// A child killed when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An agent killed after its checkpoints: what it showed before, and how
/// to start it again.
struct Killed {
    dir: tempfile::TempDir,
    port: u16,
    sources: String,
    journal: std::path::PathBuf,
    /// Pauses in the fixture (mxbeans.json), all counted before the kill.
    expected: f64,
    /// `/api/v1/minutes` and the `jvm_` series of `/metrics` at the kill.
    minutes: String,
    metrics: String,
}

/// The `jvm_` series of a scrape: the model of the streams, not the
/// agent's own figures (its CPU, its uptime).
fn jvm_series(metrics: &str) -> String {
    metrics
        .lines()
        .filter(|l| l.starts_with("jvm_"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An agent under the default `start_at = "end"` follows a log that a JVM
/// writes after it started (the fixture's lines in two halves, a checkpoint
/// after each, the second of deltas); it is SIGKILLed once everything it
/// counted is committed.
fn checkpointed_then_killed() -> Killed {
    let dir = tempfile::tempdir().unwrap();
    let fixture = jvm_fixture("jdk17-parallel-full");
    let expected = common::MxBeans::read(&fixture.join("mxbeans.json")).total_count() as f64;
    let text = std::fs::read_to_string(fixture.join("gc.log")).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let log = common::write_file(dir.path(), "gc.log", "");
    let port = free_port();
    let sources = format!(
        "checkpoint_interval = \"100ms\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = {}\n",
        toml_string(&log)
    );
    let journal = dir.path().join("checkpoint/journal.1");
    let commits = || {
        std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .matches(r#"{"sealed":"#)
            .count()
    };
    let mut agent = KillOnDrop(spawn(dir.path(), &config(dir.path(), port, &sources)));
    wait_healthy(port);
    let mut counted = 0.0;
    for half in lines.chunks(lines.len() / 2 + 1) {
        let before = commits();
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut file, half.concat().as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = sum(
                &http_get_ok(port, "/metrics").unwrap_or_default(),
                "jvm_gc_pause_seconds_count",
                &[],
            );
            if now > counted && commits() > before {
                counted = now;
                break;
            }
            assert!(Instant::now() < deadline, "no checkpoint of the new lines");
            std::thread::sleep(Duration::from_millis(100));
        }
        // Checkpoints come every 100 ms while something changed: a journal
        // unchanged for a second has committed everything counted.
        let mut len = 0;
        while std::fs::metadata(&journal).unwrap().len() != len {
            len = std::fs::metadata(&journal).unwrap().len();
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    assert_eq!(
        counted, expected,
        "the agent never killed counts every pause"
    );
    let minutes = http_get_ok(port, "/api/v1/minutes").unwrap();
    let metrics = jvm_series(&http_get_ok(port, "/metrics").unwrap());
    agent.0.kill().unwrap();
    agent.0.wait().unwrap();
    Killed {
        dir,
        port,
        sources,
        journal,
        expected,
        minutes,
        metrics,
    }
}

/// `killed`'s agent started again on its checkpoint: its stderr once it
/// counts `expected` pauses and then nothing more (or 20 s pass), and the
/// counts it showed when it got there and half a second later.
fn restart(killed: &Killed) -> (String, f64, f64, String, String) {
    let port = killed.port;
    let mut agent = KillOnDrop(spawn(
        killed.dir.path(),
        &config(killed.dir.path(), port, &killed.sources),
    ));
    wait_healthy(port);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got;
    loop {
        got = sum(
            &http_get_ok(port, "/metrics").unwrap_or_default(),
            "jvm_gc_pause_seconds_count",
            &[],
        );
        if got == killed.expected || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing more to read: the count stays.
    std::thread::sleep(Duration::from_millis(500));
    let metrics = http_get_ok(port, "/metrics").unwrap();
    let settled = sum(&metrics, "jvm_gc_pause_seconds_count", &[]);
    let minutes = http_get_ok(port, "/api/v1/minutes").unwrap();
    signal(&agent.0, "TERM");
    exit_within(&mut agent.0, Duration::from_secs(10));
    let stderr = stderr_of(&mut agent.0);
    (stderr, got, settled, minutes, jvm_series(&metrics))
}

/// A restart after checkpoints of deltas (each a few figures against the
/// record before) shows exactly the model the killed agent showed.
#[test]
fn a_restart_after_delta_records_restores_the_same_model() {
    let killed = checkpointed_then_killed();
    let journal = std::fs::read_to_string(&killed.journal).unwrap();
    assert!(journal.contains(r#"{"delta":"#), "{journal}");
    let (stderr, _, _, minutes, metrics) = restart(&killed);
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
    assert!(
        killed.minutes.contains(r#""pause_count""#),
        "{}",
        killed.minutes
    );
    assert_eq!(minutes, killed.minutes, "/api/v1/minutes");
    assert!(killed.metrics.contains("jvm_gc_pause_seconds_count"));
    assert_eq!(metrics, killed.metrics, "the jvm_ series of /metrics");
}

/// `damage` changes the newest journal record of a killed agent (see
/// [`checkpointed_then_killed`]), and a restarted agent must still count
/// every pause, the second half read again from the last good checkpoint,
/// and say what it cut.
fn restart_after_damaging_the_journal(damage: impl Fn(&mut Vec<u8>, usize)) {
    let killed = checkpointed_then_killed();
    let mut bytes = std::fs::read(&killed.journal).unwrap();
    // The newest record: the line before the last commit.
    let last_commit = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap();
    let newest = bytes[..last_commit]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    damage(&mut bytes, newest);
    std::fs::write(&killed.journal, &bytes).unwrap();
    let (stderr, got, settled, _, _) = restart(&killed);
    let expected = killed.expected;
    assert_eq!((got, settled), (expected, expected), "{stderr}");
    assert!(
        stderr.contains("checkpoint journal damaged") && !stderr.contains("starting fresh"),
        "{stderr}"
    );
    assert!(killed
        .dir
        .path()
        .join("checkpoint/journal.1.damaged")
        .exists());
}

/// Issue 19, 3: one changed byte used to throw the whole checkpoint away,
/// and under `start_at = "end"` the restarted agent counted none of them.
#[test]
fn a_changed_byte_in_the_newest_journal_record_loses_no_pause_before_it() {
    restart_after_damaging_the_journal(|bytes, newest| {
        let middle = newest + (bytes.len() - newest) / 3;
        bytes[middle] ^= 0x20;
    });
}

/// Issue 19, 3: a changed digit in a checkpointed offset was believed.
/// The newest record is a delta, its figures (the offset's change among
/// them) without names: the last digit of one is changed.
#[test]
fn a_changed_digit_in_a_checkpointed_offset_is_found_not_believed() {
    restart_after_damaging_the_journal(|bytes, newest| {
        let end = newest + bytes[newest..].iter().position(|b| *b == b'\n').unwrap();
        let at = newest
            + bytes[newest..end]
                .iter()
                .rposition(u8::is_ascii_digit)
                .expect("a figure in the newest record");
        // The last digit of a number, so that it stays well formed.
        let digit = &mut bytes[at];
        *digit = if *digit == b'9' { b'8' } else { *digit + 1 };
    });
}

#[test]
fn a_checkpoint_of_a_newer_version_is_refused_with_exit_2_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("checkpoint/state.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let newer = r#"{"version":99,"journal":"journal.7"}"#;
    std::fs::write(&state, newer).unwrap();
    let stderr = exit_2_stderr(dir.path(), &config(dir.path(), free_port(), ""));
    assert!(
        stderr.contains(&format!("{} is checkpoint version 99", state.display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        newer,
        "left as it was"
    );
}

/// The agent's clock as its HTTP server stamps its answers (`Date`).
fn agent_clock(port: u16) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let date = answer
        .lines()
        .find_map(|line| line.strip_prefix("date: "))?;
    chrono::DateTime::parse_from_rfc2822(date.trim()).ok()
}

/// Issue 19, 9: with the host clock set a day ahead (libfaketime, its
/// offset re-read from a file), the next prune used to drop every minute.
#[test]
fn a_clock_set_a_day_ahead_keeps_the_minute_history() {
    let library = Path::new("/usr/lib")
        .join(format!("{}-linux-gnu", std::env::consts::ARCH))
        .join("faketime/libfaketimeMT.so.1");
    assert!(
        library.exists(),
        "{} is missing: apt-get install faketime (.ci/run does)",
        library.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let now = chrono::Utc::now();
    let lines: String = (1..=3)
        .map(|ago| {
            let t = (now - chrono::TimeDelta::minutes(4 - ago)).format("%Y-%m-%dT%H:%M:%S%.3f+0000");
            format!("[{t}][{ago}.000s][info][gc] GC({ago}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 5.000ms\n")
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let offset = common::write_file(dir.path(), "faketime", "+0\n");
    let port = free_port();
    let path = config_file(
        dir.path(),
        &config(
            dir.path(),
            port,
            &format!(
                "history = \"1h\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
                toml_string(&log)
            ),
        ),
    );
    let mut agent = KillOnDrop(
        common::run_command(&path)
            .env("LD_PRELOAD", &library)
            .env("FAKETIME_TIMESTAMP_FILE", &offset)
            .env("FAKETIME_NO_CACHE", "1")
            // Timers and intervals keep the real pace.
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_healthy(port);
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::agent_minutes(port).len() < 3 {
        assert!(Instant::now() < deadline, "the three minutes never came");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&offset, "+1d\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while agent_clock(port).is_none_or(|t| t < chrono::Utc::now() + chrono::TimeDelta::hours(23)) {
        assert!(Instant::now() < deadline, "the agent's clock never moved");
        std::thread::sleep(Duration::from_millis(100));
    }
    // History is pruned every second: three prunes at the new time.
    let held = Instant::now();
    while held.elapsed() < Duration::from_secs(3) {
        let minutes = common::agent_minutes(port).len();
        assert_eq!(minutes, 3, "minutes left after the jump");
        std::thread::sleep(Duration::from_millis(200));
    }
    signal(&agent.0, "TERM");
    exit_within(&mut agent.0, Duration::from_secs(10));
}

/// `n` `[[gc_log]]` entries, each an empty log of its own in `dir/logs`,
/// read from the beginning (a line written before its first poll counts).
fn many_sources(dir: &Path, n: usize) -> String {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    (0..n)
        .map(|i| {
            let log = logs.join(format!("gc{i}.log"));
            std::fs::write(&log, "").unwrap();
            format!(
                "[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
                toml_string(&log)
            )
        })
        .collect()
}

/// Issue 19, 7: 10,000 entries passed check-config, then the agent grew to
/// 5.5 GB and never wrote a checkpoint. Now a clear refusal, from both.
#[test]
fn ten_thousand_gc_log_entries_are_refused_with_the_line_and_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), free_port(), &many_sources(dir.path(), 10_000));
    let stderr = exit_2_stderr(dir.path(), &config);
    let path = dir.path().join("pausewatch.toml");
    // Two header lines, then three lines per entry: the 1,001st on line 3,003.
    let expected = format!(
        "{}:3003: key gc_log: 10000 [[gc_log]] and [[access_log]] entries, above the maximum of 1000",
        path.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    let checked = common::exit_2_stderr(
        Command::new(common::PAUSEWATCH).args(["check-config", path.to_str().unwrap()]),
    );
    assert!(checked.contains(&expected), "{checked}");
}

/// 500 logs in one directory: every stream starts, memory stays small (it
/// was about 550 KB a stream before any event, most of it each source's own
/// copy of every configured directory), and the checkpoint of a pause is
/// written. (Not the bound of 1,000: each log holds a descriptor, and the
/// soft limit of 1,024 stops the agent at 527 until it raises it.)
#[test]
fn five_hundred_gc_logs_start_in_little_memory_and_are_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = many_sources(dir.path(), 500);
    // Two lines a stream on stderr: a pipe nobody reads would fill and stop it.
    let path = config_file(dir.path(), &config(dir.path(), port, &extra));
    let agent = common::run_command(&path).stderr(Stdio::null()).spawn();
    let mut agent = KillOnDrop(agent.unwrap());
    wait_healthy(port);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = http_get_ok(port, "/healthz");
        if health
            .as_ref()
            .is_ok_and(|h| h.contains(r#""streams":500"#))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every stream started: {health:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let pause = "[2026-11-30T01:45:14.354+0000][0.003s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 5.000ms\n";
    std::fs::write(dir.path().join("logs/gc499.log"), pause).unwrap();
    let journal = dir.path().join("checkpoint/journal.1");
    while !std::fs::read_to_string(&journal).is_ok_and(|j| j.contains("gc499.log")) {
        assert!(Instant::now() < deadline, "no checkpoint written");
        std::thread::sleep(Duration::from_millis(200));
    }
    let rss_kib = crate::common::peak_rss_kib(agent.0.id());
    // 27 MiB measured (debug build); 64 KiB a stream at most.
    assert!(
        rss_kib < 64 * 1024,
        "peak RSS {rss_kib} KiB for 1,000 streams"
    );
    signal(&agent.0, "TERM");
    exit_within(&mut agent.0, Duration::from_secs(20));
}
