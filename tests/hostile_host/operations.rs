//! Running as a service: signals, the listen address, the checkpoint
//! directory and a disk that fills up.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, free_port, http_get_ok, jvm_fixture, sum, toml_string};

/// The agent with its stderr captured, on a config written into `dir`.
fn spawn(dir: &Path, config: &str) -> Child {
    let path = dir.join("pausewatch.toml");
    std::fs::write(&path, config).unwrap();
    common::run_command(&path)
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
    let mut agent = spawn(dir.path(), &config(dir.path(), port, ""));
    let (status, _) = exit_within(&mut agent, Duration::from_secs(10));
    let stderr = stderr_of(&mut agent);
    assert_eq!(status.code(), Some(2), "{stderr}");
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
    let mut second = spawn(second_dir.path(), &config(dir.path(), free_port(), ""));
    let (status, _) = exit_within(&mut second, Duration::from_secs(10));
    let stderr = stderr_of(&mut second);
    assert_eq!(status.code(), Some(2), "{stderr}");
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
    let permitted = Command::new("unshare")
        .args(["--mount", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !permitted {
        eprintln!("SKIPPED: unshare --mount is not permitted here, so no small file system can be mounted");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let checkpoint_dir = dir.path().join("checkpoint");
    std::fs::create_dir(&checkpoint_dir).unwrap();
    let log = dir.path().join("gc.log");
    std::fs::copy(jvm_fixture("jdk17-g1-concurrent").join("gc.log"), &log).unwrap();
    let port = free_port();
    let config_path = dir.path().join("pausewatch.toml");
    std::fs::write(
        &config_path,
        config(
            dir.path(),
            port,
            &format!(
                "checkpoint_interval = \"100ms\"\npoll_interval = \"100ms\"\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
                toml_string(&log)
            ),
        ),
    )
    .unwrap();
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
