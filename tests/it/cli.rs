//! `pausewatch analyze` as a user runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{jvm_fixture as fixture, MxBeans};
use serde_json::Value;

use crate::common;

fn analyze(args: &[&str], files: &[PathBuf]) -> (i32, String, String) {
    let output = Command::new(common::PAUSEWATCH)
        .arg("analyze")
        .args(args)
        .args(files)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn bean_count(dir: &Path, bean: &str) -> u64 {
    MxBeans::read(&dir.join("mxbeans.json")).bean(bean).count
}

#[test]
fn json_report_has_the_documented_fields_and_the_jvms_counts() {
    let dir = fixture("jdk17-parallel-full");
    let (code, stdout, stderr) = analyze(&["--format", "json", "--events"], &[dir.join("gc.log")]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let young = bean_count(&dir, "PS Scavenge");
    let full = bean_count(&dir, "PS MarkSweep");
    assert_eq!(report["pauses"]["count"].as_u64().unwrap(), young + full);
    for field in [
        "total_seconds",
        "max_seconds",
        "p50_seconds",
        "p99_seconds",
        "p999_seconds",
    ] {
        assert!(report["pauses"][field].is_f64(), "pauses.{field}");
    }
    let by_name = report["by_name"].as_array().unwrap();
    let count_of = |name: &str| {
        by_name
            .iter()
            .find(|n| n["name"] == name)
            .map_or(0, |n| n["count"].as_u64().unwrap())
    };
    assert_eq!(count_of("Pause Young"), young);
    assert_eq!(count_of("Pause Full"), full);
    // A young collection that fails over to a full one is two pauses in one safepoint.
    assert!(report["safepoints"]["count"].as_u64().unwrap() >= young.max(full));
    let minutes = report["minutes"].as_array().unwrap();
    assert!(!minutes.is_empty());
    let per_minute = common::minutes_pause_count(&report["minutes"]);
    assert_eq!(per_minute, young + full);
    assert!(minutes[0]["start"].as_str().unwrap().ends_with(":00Z"));
    assert_eq!(report["unparsed_lines"], 0);
    assert_eq!(
        report["events"].as_array().unwrap().len() as u64,
        young + full
    );
}

#[test]
fn rotated_set_in_any_order_gives_the_same_report() {
    let dir = fixture("jdk17-g1-rotation");
    let mut files = common::gc_log_files(&dir);
    assert!(
        files.len() >= 3,
        "rotation fixture has {} files",
        files.len()
    );
    let (_, forward, _) = analyze(&["--format", "json"], &files);
    files.reverse();
    let (_, backward, _) = analyze(&["--format", "json"], &files);
    let (forward, backward): (Value, Value) = (
        serde_json::from_str(&forward).unwrap(),
        serde_json::from_str(&backward).unwrap(),
    );
    assert_eq!(forward["pauses"], backward["pauses"]);
    assert_eq!(forward["jvm_restarts"], 0);
    let young = forward["by_name"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "Pause Young")
        .unwrap()["count"]
        .as_u64()
        .unwrap();
    assert_eq!(young, bean_count(&dir, "G1 Young Generation"));
}

#[test]
fn text_report_is_a_table_and_missing_files_fail_clearly() {
    let (code, stdout, _) = analyze(&[], &[fixture("jdk17-parallel-steady").join("gc.log")]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Pause Young"));
    assert!(stdout.contains("minute (UTC)"));
    let (code, _, stderr) = analyze(&[], &[PathBuf::from("/nonexistent/gc.log")]);
    assert_eq!(code, 1);
    assert!(stderr.contains("/nonexistent/gc.log"), "{stderr}");
}

/// Runs `pausewatch run` on `config` (written to a file), which must refuse
/// it with exit status 2 and an error that starts
/// `pausewatch: FILE:LINE: key KEY: MESSAGE`; the error.
fn run_refuses(config: &str, line: usize, key: &str, message: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_file(dir.path(), "pausewatch.toml", config);
    let stderr = common::exit_2_stderr(
        Command::new(common::PAUSEWATCH)
            .args(["run", "--config"])
            .arg(&path),
    );
    let expected = format!(
        "pausewatch: {}:{line}: key {key}: {message}",
        path.display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    stderr
}

#[test]
fn a_latency_source_under_a_gc_log_glob_must_name_its_jvm() {
    let stderr = run_refuses(
        "[[gc_log]]\npath = \"/var/log/*/gc.log*\"\n\n[[access_log]]\npath = \"/var/log/nginx/pricing.log\"\nformat = \"nginx\"\n",
        4,
        "access_log[0].gc_log",
        "missing `gc_log`: ",
    );
    assert!(stderr.contains("name the live GC log"), "{stderr}");
}

#[test]
fn a_label_named_like_one_of_the_agents_own_exits_2_naming_the_key() {
    // pausewatch_jvm_info has its own `collector`: with this label it would
    // carry two, and Prometheus would reject every sample of the scrape.
    run_refuses(
        "[[gc_log]]\npath = \"/var/log/app/gc.log\"\nlabels = { collector = \"x\" }\n",
        3,
        "gc_log[0].labels.collector",
        "",
    );
}

/// The demo's log is in the binary: a copy of it runs with the source tree
/// hidden under an empty file system (a mount namespace of its own).
#[test]
fn the_demo_runs_from_an_installed_binary_without_the_source_tree() {
    if !common::mount_namespace_or_skip("the source tree cannot be hidden") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("pausewatch");
    std::fs::copy(common::PAUSEWATCH, &installed).unwrap();
    let port = common::free_port();
    let script = format!(
        "mount -t tmpfs none '{root}' && cd / && exec '{bin}' run --demo --listen 127.0.0.1:{port}",
        root = common::root().display(),
        bin = installed.display()
    );
    let mut child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut pauses = 0.0;
    while pauses == 0.0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
        pauses = common::sum(
            &metrics,
            "jvm_gc_pause_seconds_count",
            &["service=\"demo\""],
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(pauses > 0.0, "the demo served no pause within 30 s");
}

fn pausewatch(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(common::PAUSEWATCH)
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn check_config_accepts_the_example_and_names_the_line_and_key_of_a_mistake() {
    let example = common::root().join("examples/pausewatch.toml");
    let (code, stdout, stderr) = pausewatch(&["check-config", example.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("valid"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let config = common::write_file(
        dir.path(),
        "pausewatch.toml",
        "listen = \"127.0.0.1:9464\"\n\n[[gc_log]]\npath = \"/var/log/app/gc.log\"\nstart_at = \"middle\"\n",
    );
    let (code, _, stderr) = pausewatch(&["check-config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    let expected = format!(
        "pausewatch: {}:5: key gc_log[0].start_at: ",
        config.display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");

    // Every mistake in one run, in file order: the duration on line 7 no
    // longer hides the `start_at` on line 3.
    let config = common::write_file(
        dir.path(),
        "pausewatch.toml",
        "[[gc_log]]\npath = \"/var/log/app/gc.log\"\nstart_at = \"middle\"\n\n\
         [discovery]\ninclude = [\"app\"]\ninterval = \"soon\"\n",
    );
    let (code, _, stderr) = pausewatch(&["check-config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    let keys: Vec<&str> = stderr
        .lines()
        .filter_map(|line| line.split(": key ").nth(1)?.split(':').next())
        .collect();
    assert_eq!(
        keys,
        ["gc_log[0].start_at", "discovery.interval"],
        "{stderr}"
    );
}

/// The commit comes from git itself, not from the build script's output.
#[test]
fn version_names_the_release_and_the_commit() {
    let (code, stdout, _) = pausewatch(&["--version"]);
    assert_eq!(code, Some(0));
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(common::root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap());
    let Some(head) = head else {
        return common::skip("the commit check needs git and a checkout");
    };
    let version = stdout.trim();
    assert!(
        version.starts_with(&format!("pausewatch {} (", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    // The features it was built with, as this test was.
    let features = if cfg!(feature = "ebpf") {
        "ebpf"
    } else {
        "none"
    };
    assert!(
        version.contains(&format!("(features: {features})")),
        "{version}"
    );
    let commit = version.rsplit('(').next().unwrap().trim_end_matches(')');
    assert!(
        commit.len() >= 12 && head.starts_with(commit),
        "{version} vs {head}"
    );
}

/// The agent's first log lines, with stderr a pipe (as under journald).
fn first_log_lines(log_format: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_file(
        dir.path(),
        "pausewatch.toml",
        format!(
            "listen = \"127.0.0.1:0\"\ncheckpoint_dir = {}\n",
            common::toml_string(&dir.path().join("state"))
        ),
    );
    let mut child = common::run_command(&config)
        .args(["--log-format", log_format])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    while !text.contains("agent started") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() == 0 {
            break;
        }
        text.push_str(&line);
    }
    let _ = child.kill();
    let _ = child.wait();
    text
}

#[test]
fn logs_have_no_colour_codes_off_a_terminal_and_can_be_json_lines() {
    let text = first_log_lines("text");
    assert!(text.contains("pausewatch agent started"), "{text}");
    assert!(!text.contains('\x1b'), "escape codes in {text:?}");

    let json = first_log_lines("json");
    let started = json
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .find(|line| line["fields"]["message"] == "pausewatch agent started")
        .unwrap_or_else(|| panic!("no start line in {json}"));
    assert_eq!(started["level"], "INFO");
    assert!(started["fields"]["listen"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
}

/// A log another process truncates while `analyze` parses it from its
/// memory map (a JVM restarted into the same log name does that) makes it
/// fail with a clear message instead of dying of SIGBUS. The truncation
/// comes a fifth, two fifths and three fifths of the way through a timed
/// whole run on a 40 MB log (a debug build takes seconds, a release build a
/// tenth of one); at least one lands mid-parse.
#[test]
fn a_log_cut_short_while_analyze_reads_it_is_a_clear_error() {
    use std::os::unix::process::ExitStatusExt;
    let directory = tempfile::tempdir().unwrap();
    let steady = std::fs::read(fixture("jdk17-g1-steady").join("gc.log")).unwrap();
    let mut log = Vec::new();
    while log.len() < 40 << 20 {
        log.extend(&steady);
    }
    let path = directory.path().join("gc.log");
    std::fs::write(&path, &log).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        analyze(&["--format", "json"], std::slice::from_ref(&path)).0,
        0
    );
    let whole_run = started.elapsed();
    let mut cut_short = 0;
    for fifths in [1, 2, 3] {
        std::fs::write(&path, &log).unwrap();
        let child = Command::new(common::PAUSEWATCH)
            .args(["analyze", "--format", "json"])
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(whole_run * fifths / 5);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.signal(), None, "killed by a signal: {stderr}");
        if !output.status.success() {
            assert!(
                stderr.contains("was cut short while it was read"),
                "{stderr}"
            );
            cut_short += 1;
        }
    }
    assert!(
        cut_short > 0,
        "no truncation landed while analyze read the log"
    );
}
