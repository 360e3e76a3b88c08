//! The Debian package, installed as an operator installs it: built by
//! `packaging/build-deb.sh` (cargo-deb), installed with dpkg, its shipped
//! configuration checked, its binary run as the `pausewatch` user with
//! exactly `CAP_DAC_READ_SEARCH` and `CAP_SYS_PTRACE` (`setpriv`, as the
//! systemd unit grants them) against a real JVM's GC log that another user
//! owns with mode 0600, then removed and purged, leaving nothing behind.
//!
//! The truth for the pauses is the JVM's own `GarbageCollectorMXBean` count
//! recorded with the log. The same binary without the capabilities must not
//! read the log, so the capabilities are what makes it work.
//!
//! Needs root, dpkg, adduser, setpriv and cargo-deb (`.ci/run` installs it);
//! without them, or when a `pausewatch` package is already installed on this
//! machine (never clobbered), the test is skipped (`common::skip`). It builds the release
//! binary, the longest part.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{jvm_fixture, run_stdout, succeeds, toml_string, MxBeans};

mod common;

const BEAN: &str = "G1 Young Generation";
const CONFFILE: &str = "/etc/pausewatch/pausewatch.toml";
const UNIT: &str = "/usr/lib/systemd/system/pausewatch.service";
/// The owner of the GC log: a user other than `pausewatch`.
const LOG_OWNER: u32 = 65534;

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    let missing = common::missing_root_or_tool(
        "dpkg -i needs it",
        &[
            ("dpkg", &["--version"]),
            ("adduser", &["--version"]),
            ("setpriv", &["--version"]),
            ("cargo", &["deb", "--version"]),
        ],
    );
    if missing.is_some() {
        return missing;
    }
    if succeeds("dpkg", &["-s", "pausewatch"]) {
        return Some("a pausewatch package is installed on this machine; not touching it".into());
    }
    None
}

/// The agent as the package's user, with `capabilities` only (none: none).
fn agent_as_pausewatch(config: &Path, capabilities: &[&str], log: &Path) -> Agent {
    let caps: Vec<String> = capabilities.iter().map(|c| format!("+{c}")).collect();
    let caps = caps.join(",");
    let mut command = Command::new("setpriv");
    command.args([
        "--reuid=pausewatch",
        "--regid=pausewatch",
        "--init-groups",
        "--no-new-privs",
    ]);
    if caps.is_empty() {
        command.args(["--inh-caps=-all", "--bounding-set=-all"]);
    } else {
        command
            .arg(format!("--inh-caps=-all,{caps}"))
            .arg(format!("--ambient-caps=-all,{caps}"))
            .arg(format!("--bounding-set=-all,{caps}"));
    }
    command
        .args(["/usr/bin/pausewatch", "run", "--config"])
        .arg(config)
        .stderr(std::fs::File::create(log).unwrap());
    Agent(command.spawn().unwrap())
}

/// A running agent, killed when dropped.
struct Agent(std::process::Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn metrics_when(port: u16, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
        if ready(&metrics) {
            return metrics;
        }
        assert!(Instant::now() < deadline, "never got {what}:\n{metrics}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_deb_installs_runs_with_two_capabilities_and_purges_clean() {
    if let Some(reason) = missing_prerequisite() {
        return common::skip(reason);
    }
    let deb = common::build_package("build-deb.sh");

    run_stdout("dpkg", &["-i", deb.to_str().unwrap()]);
    let installed = Installed;
    let files = run_stdout("dpkg", &["-L", "pausewatch"]);
    for file in [
        "/usr/bin/pausewatch",
        CONFFILE,
        UNIT,
        "/usr/share/man/man1/pausewatch.1.gz",
        "/usr/share/man/man1/pausewatch-run.1.gz",
        "/usr/share/man/man1/pausewatch-compare.1.gz",
        "/usr/share/man/man5/pausewatch.toml.5.gz",
        "/usr/share/bash-completion/completions/pausewatch",
    ] {
        assert!(
            files.lines().any(|l| l == file),
            "{file} not in the package:\n{files}"
        );
    }
    let conffiles = run_stdout("dpkg-query", &["-W", "-f=${Conffiles}", "pausewatch"]);
    assert!(conffiles.contains(CONFFILE), "{conffiles}");
    // Stripped: no debug sections left in the installed binary.
    let sections = run_stdout("readelf", &["-S", "/usr/bin/pausewatch"]);
    assert!(!sections.contains(".debug_info"), "not stripped");
    let user = run_stdout("getent", &["passwd", "pausewatch"]);
    let uid: u32 = user.split(':').nth(2).unwrap().parse().unwrap();
    assert_eq!(std::fs::metadata("/var/lib/pausewatch").unwrap().uid(), uid);
    let shipped = std::fs::read_to_string(CONFFILE).unwrap();
    assert!(shipped.contains("listen = \"127.0.0.1:9464\""), "{shipped}");
    assert!(
        shipped.contains("checkpoint_dir = \"/var/lib/pausewatch\""),
        "{shipped}"
    );
    run_stdout("/usr/bin/pausewatch", &["check-config", CONFFILE]);
    if succeeds("systemd-analyze", &["--version"]) {
        let verify = Command::new("systemd-analyze")
            .args(["verify", UNIT])
            .output()
            .unwrap();
        let complaints = String::from_utf8_lossy(&verify.stderr);
        assert!(
            verify.status.success() && complaints.trim().is_empty(),
            "systemd-analyze verify: {complaints}"
        );
    }

    // A real JVM's GC log that only its owner may read, in a directory
    // only its owner may enter.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let app = dir.join("app");
    std::fs::create_dir(&app).unwrap();
    let log = app.join("gc.log");
    std::fs::copy(jvm_fixture("jdk17-g1-concurrent").join("gc.log"), &log).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&log, Some(LOG_OWNER), Some(LOG_OWNER)).unwrap();
    std::os::unix::fs::chown(&app, Some(LOG_OWNER), Some(LOG_OWNER)).unwrap();
    let expected = MxBeans::read(&jvm_fixture("jdk17-g1-concurrent").join("mxbeans.json"))
        .bean(BEAN)
        .count as f64;

    for (name, capabilities) in [
        ("without", &[][..]),
        ("with", &["dac_read_search", "sys_ptrace"][..]),
    ] {
        let state = dir.join(format!("state-{name}"));
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::chown(&state, Some(uid), Some(uid)).unwrap();
        let port = common::free_port();
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
                toml_string(&state),
                toml_string(&log)
            ),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let stderr = dir.join(format!("{name}.stderr"));
        let _agent = agent_as_pausewatch(&config, capabilities, &stderr);
        let pauses = |m: &str| {
            common::sum(
                m,
                "jvm_gc_pause_seconds_count",
                &[&format!("gc=\"{BEAN}\"")],
            )
        };
        if capabilities.is_empty() {
            let metrics = metrics_when(port, "an unreadable log", |m| {
                common::sample(m, "pausewatch_log_readable") == Some(0.0)
            });
            assert_eq!(pauses(&metrics), 0.0, "read without capabilities");
        } else {
            let metrics = metrics_when(port, "the MXBean's pause count", |m| pauses(m) == expected);
            assert_eq!(
                common::sample(&metrics, "pausewatch_log_readable"),
                Some(1.0)
            );
        }
    }

    installed.remove_and_purge();
    assert!(
        !Path::new("/etc/pausewatch").exists(),
        "/etc/pausewatch left"
    );
    assert!(!Path::new("/var/lib/pausewatch").exists(), "state left");
    assert!(!succeeds("getent", &["passwd", "pausewatch"]), "user left");
    assert!(!succeeds("getent", &["group", "pausewatch"]), "group left");
    for file in files.lines().filter(|l| l.starts_with('/')) {
        let path = Path::new(file);
        // Directories the package shares with the system stay.
        assert!(path.is_dir() || !path.exists(), "{file} left after purge");
    }
    assert!(
        !succeeds("dpkg", &["-s", "pausewatch"]),
        "still known to dpkg"
    );
}

/// The installed package: purged when dropped, should the test fail half-way.
struct Installed;

impl Installed {
    /// `dpkg -r` (the conffile and state stay), then `dpkg --purge`.
    fn remove_and_purge(self) {
        run_stdout("dpkg", &["-r", "pausewatch"]);
        assert!(
            !Path::new("/usr/bin/pausewatch").exists(),
            "binary left after remove"
        );
        assert!(Path::new(CONFFILE).exists(), "a remove keeps the conffile");
        assert!(
            Path::new("/var/lib/pausewatch").exists(),
            "a remove keeps the state"
        );
        run_stdout("dpkg", &["--purge", "pausewatch"]);
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg")
            .args(["--purge", "pausewatch"])
            .output();
    }
}
