//! Files that are not logs, made by another user in a directory a glob
//! watches (a FIFO, a link to `/dev/zero`), and a writer without
//! `O_APPEND` whose file is copied and truncated while the agent is stopped.
//! Each case runs the agent binary: it must go on counting the real logs
//! exactly (`pausewatch analyze` of the same bytes), answer, and stop on
//! SIGTERM.

use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::follow::{analyze_pauses, pauses, steady_pieces, write, HOLD, SETTLE};
use crate::common::{
    free_port, http_get_ok, jvm_fixture, missing_root_or_tool, run_command, sum, PAUSEWATCH,
};

/// The uid and gid of `nobody`.
const NOBODY: &str = "65534";

/// Runs `program ARGS` as `nobody`, which must succeed.
fn as_nobody(program: &str, args: &[&Path]) {
    let status = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            program,
        ])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "{program} {args:?} as nobody");
}

/// Root is needed to act as `nobody`; fails (never skips) otherwise.
fn require_root_and_setpriv() {
    let missing = missing_root_or_tool(
        "files are made as nobody",
        &[("setpriv", &["--version"]), ("mkfifo", &["--version"])],
    );
    assert!(missing.is_none(), "{missing:?}");
}

/// A directory `nobody` can reach (tempdirs are 0700) with a subdirectory
/// `nobody` owns.
fn nobodys_directory(dir: &Path) -> std::path::PathBuf {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = dir.join("logs/evil");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::set_permissions(dir.join("logs"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = Command::new("chown")
        .args([&format!("{NOBODY}:{NOBODY}")])
        .arg(&theirs)
        .status()
        .unwrap();
    assert!(status.success());
    theirs
}

/// The agent as a child whose pid the test signals; killed when dropped.
struct Running {
    child: Child,
    port: u16,
}

impl Running {
    fn start(dir: &Path, port: u16, sources: &str) -> Running {
        Running::start_limited(dir, port, sources, None)
    }

    /// As [`Running::start`], with `prlimit --nofile=N:N` when `nofile` is given.
    fn start_limited(dir: &Path, port: u16, sources: &str, nofile: Option<u32>) -> Running {
        let config = crate::common::write_file(
            dir,
            "pausewatch.toml",
            format!(
                "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = \"{}/checkpoint\"\npoll_interval = \"50ms\"\ncheckpoint_interval = \"100ms\"\n{sources}",
                dir.display()
            ),
        );
        let mut command = run_command(&config);
        if let Some(nofile) = nofile {
            // prlimit execs the agent: the child's pid is the agent's.
            command = Command::new("prlimit");
            command
                .arg(format!("--nofile={nofile}:{nofile}"))
                .args([PAUSEWATCH, "run", "--config"])
                .arg(&config);
        }
        let child = command.stderr(Stdio::null()).spawn().unwrap();
        Running { child, port }
    }

    fn metrics(&self) -> String {
        http_get_ok(self.port, "/metrics").unwrap_or_default()
    }

    /// Waits until `figure` of `/metrics` reaches `expected` (or `SETTLE`
    /// passes), then for `HOLD`: what it shows then.
    fn settle(&self, expected: f64, figure: impl Fn(&str) -> f64) -> String {
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline && figure(&self.metrics()) < expected {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(HOLD);
        self.metrics()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name}");
    }

    /// Stops the agent and returns once every one of its threads is stopped:
    /// `kill -STOP` returns before a thread of the process has been scheduled
    /// to stop the others, and a busy thread can run for milliseconds more.
    fn freeze(&self) {
        self.signal("STOP");
        let tasks = format!("/proc/{}/task", self.child.id());
        let stopped = |stat: String| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('T'))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_dir(&tasks)
            .expect("the agent has exited")
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("stat")).ok())
            .all(stopped)
        {
            assert!(
                Instant::now() < deadline,
                "the agent not stopped 10 s after SIGSTOP"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Resident memory, from /proc.
    fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }

    /// SIGTERM, which must end the agent within `limit`.
    fn terminate_within(&mut self, limit: Duration) {
        self.signal("TERM");
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < limit, "SIGTERM ignored for {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn not_regular(metrics: &str) -> f64 {
    sum(
        metrics,
        "pausewatch_errors_total",
        &["kind=\"not_regular_file\""],
    )
}

/// Another user's FIFO in a glob directory, and a link to it, once froze
/// the agent in `open()`: nothing read, SIGTERM ignored.
#[test]
fn another_users_fifo_in_a_glob_directory_blocks_nothing() {
    require_root_and_setpriv();
    let dir = tempfile::tempdir().unwrap();
    let theirs = nobodys_directory(dir.path());
    let [x, y, _] = steady_pieces();
    let log = dir.path().join("logs/app/gc.log");
    write(&log, &x);
    as_nobody("mkfifo", &[&theirs.join("gc.log")]);
    as_nobody(
        "ln",
        &[
            Path::new("-s"),
            Path::new("gc.log"),
            &theirs.join("link.log"),
        ],
    );
    let sources = format!(
        "[[gc_log]]\npath = \"{}/logs/*/*.log\"\nstart_at = \"beginning\"\n",
        dir.path().display()
    );
    let mut agent = Running::start(dir.path(), free_port(), &sources);
    let first = analyze_pauses(&[&log]);
    let metrics = agent.settle(first, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), first, "{metrics}");
    // The FIFO and the link to it are one file: skipped, and said once.
    assert_eq!(not_regular(&metrics), 1.0, "{metrics}");
    // Still reading, still answering.
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(y.as_bytes()).unwrap();
    let expected = analyze_pauses(&[&log]);
    assert!(expected > first);
    let metrics = agent.settle(expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
    assert_eq!(not_regular(&metrics), 1.0, "not once per poll: {metrics}");
    assert!(http_get_ok(agent.port, "/healthz").is_ok());
    agent.terminate_within(Duration::from_secs(10));
}

/// A link to `/dev/zero` made by `nobody` was read (3.5 GB in 5 s): refused
/// as not a regular file, whether links may lead out of the configured
/// directories or not (the default: only the follower checked where they
/// lead, not the look for the log's first timestamp); memory stays small.
#[test]
fn a_link_to_dev_zero_made_by_nobody_is_never_read() {
    require_root_and_setpriv();
    let dir = tempfile::tempdir().unwrap();
    let theirs = nobodys_directory(dir.path());
    let [x, ..] = steady_pieces();
    let log = dir.path().join("logs/app/gc.log");
    write(&log, &x);
    as_nobody(
        "ln",
        &[
            Path::new("-s"),
            Path::new("/dev/zero"),
            &theirs.join("gc.log"),
        ],
    );
    let expected = analyze_pauses(&[&log]);
    for outside in ["false", "true"] {
        let run = dir.path().join(format!("run-{outside}"));
        std::fs::create_dir_all(&run).unwrap();
        let sources = format!(
            "[[gc_log]]\npath = \"{}/logs/*/gc.log\"\nstart_at = \"beginning\"\nfollow_symlinks_outside = {outside}\n",
            dir.path().display()
        );
        let mut agent = Running::start(&run, free_port(), &sources);
        let metrics = agent.settle(1.0, not_regular);
        assert_eq!(not_regular(&metrics), 1.0, "outside {outside}\n{metrics}");
        let metrics = agent.settle(expected, |m| pauses(m, &[]));
        assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
        let rss = agent.rss_bytes();
        assert!(rss < 200 << 20, "{rss} bytes resident, outside {outside}");
        agent.terminate_within(Duration::from_secs(10));
    }
}

/// The steady fixture cut into `n` pieces, each ending just before a
/// collection starts, so that the pieces' pauses add up to the whole's.
fn pieces(n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(jvm_fixture("jdk17-g1-steady").join("gc.log")).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("[gc,start") && lines[i].contains(" Pause "))
        .collect();
    let mut cuts = vec![0];
    cuts.extend((1..n).map(|k| starts[k * starts.len() / n]));
    cuts.push(lines.len());
    cuts.windows(2)
        .map(|w| lines[w[0]..w[1]].concat())
        .collect()
}

/// A writer without O_APPEND goes on at its own offset after logrotate's
/// copytruncate, so the file starts with a hole of NULs that hides the next
/// truncation (1,303 of 1,500 pauses, 1 of 3 truncations seen). The agent
/// is stopped at each truncation, with lines it has not read in the copy.
#[test]
fn copytruncate_behind_a_writer_without_o_append_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/gc.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let writer = std::fs::File::create(&log).unwrap();
    let mut written = String::new();
    // At the writer's own offset, as without O_APPEND.
    let emit = |written: &mut String, text: &str| {
        writer
            .write_all_at(text.as_bytes(), written.len() as u64)
            .unwrap();
        written.push_str(text);
    };
    let pieces = pieces(7);
    emit(&mut written, &pieces[0]);
    let sources = format!(
        "[[gc_log]]\npath = \"{}\"\nstart_at = \"beginning\"\n",
        log.display()
    );
    let agent = Running::start(dir.path(), free_port(), &sources);
    let truth = dir.path().join("written.log");
    let truth_so_far = |written: &str| {
        std::fs::write(&truth, written).unwrap();
        analyze_pauses(&[&truth])
    };
    let expected = truth_so_far(&pieces[0]);
    agent.settle(expected, |m| pauses(m, &[]));
    for round in 0..3 {
        agent.freeze();
        emit(&mut written, &pieces[1 + 2 * round]);
        // logrotate: older copies shift, the file is copied, then truncated.
        for n in (1..=3).rev() {
            let older = log.with_file_name(format!("gc.log.{n}"));
            if older.exists() {
                std::fs::rename(&older, log.with_file_name(format!("gc.log.{}", n + 1))).unwrap();
            }
        }
        std::fs::copy(&log, log.with_file_name("gc.log.1")).unwrap();
        let truncated = Command::new("truncate")
            .args(["-s", "0"])
            .arg(&log)
            .status();
        assert!(truncated.unwrap().success());
        emit(&mut written, &pieces[2 + 2 * round]);
        agent.signal("CONT");
        let expected = truth_so_far(&written);
        let metrics = agent.settle(expected, |m| pauses(m, &[]));
        assert_eq!(pauses(&metrics, &[]), expected, "round {round}\n{metrics}");
        assert_eq!(
            sum(&metrics, "pausewatch_errors_total", &["kind=\"truncated\""]),
            (round + 1) as f64,
            "every truncation seen\n{metrics}"
        );
    }
    assert_eq!(
        truth_so_far(&written),
        analyze_pauses(&[jvm_fixture("jdk17-g1-steady").join("gc.log")])
    );
}

/// With `prlimit --nofile=64` and 100 logs, `/metrics` and `/healthz` were
/// unreachable for 10 minutes and no checkpoint was written: every
/// descriptor held a followed file. Files beyond the agent's budget are
/// closed after each poll and found again by identity.
#[test]
fn a_hundred_logs_within_sixty_four_descriptors_are_all_read_and_served() {
    let dir = tempfile::tempdir().unwrap();
    let [x, y, _] = steady_pieces();
    let logs: Vec<_> = (0..100)
        .map(|i| dir.path().join(format!("jvms/{i:03}/gc.log")))
        .collect();
    for log in &logs {
        write(log, &x);
    }
    let sources = format!(
        "[[gc_log]]\npath = \"{}/jvms/*/gc.log\"\nstart_at = \"beginning\"\n",
        dir.path().display()
    );
    let mut agent = Running::start_limited(dir.path(), free_port(), &sources, Some(64));
    let one = analyze_pauses(&[&logs[0]]);
    let metrics = agent.settle(100.0 * one, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), 100.0 * one, "{metrics}");
    // The files closed between polls are still followed: what is appended
    // to each is read once.
    use std::io::Write;
    for log in &logs {
        let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
        file.write_all(y.as_bytes()).unwrap();
    }
    let expected = 100.0 * analyze_pauses(&[&logs[0]]);
    let metrics = agent.settle(expected, |m| pauses(m, &[]));
    assert_eq!(pauses(&metrics, &[]), expected, "{metrics}");
    assert!(http_get_ok(agent.port, "/healthz").is_ok(), "/healthz");
    let checkpoint = dir.path().join("checkpoint/state.json");
    let deadline = Instant::now() + SETTLE;
    while !checkpoint.exists() {
        assert!(Instant::now() < deadline, "no checkpoint written");
        std::thread::sleep(Duration::from_millis(100));
    }
    agent.terminate_within(Duration::from_secs(10));
}
