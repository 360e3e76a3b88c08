//! The Debian package, installed as an operator installs it: built by
//! `packaging/build-deb.sh` (cargo-deb, `--features ebpf`), installed with
//! dpkg, its shipped configuration checked, its binary run as the
//! `pausewatch` user (`setpriv`) against a real JVM's GC log that another
//! user owns with mode 0600 and a running JVM without a GC log, then removed
//! and purged, leaving nothing behind.
//!
//! The truth for the pauses is the JVMs' own `GarbageCollectorMXBean`
//! counts: the one recorded with the log, and the one a JVM started after
//! the agent writes at its exit. Without capabilities the binary must not
//! read the log; with `CAP_DAC_READ_SEARCH` and `CAP_SYS_PTRACE` alone it
//! reads it, but the eBPF probes are refused (`ebpf_reason=
//! "permission_denied"`, no BPF program held); with the unit's four,
//! `CAP_BPF` and `CAP_PERFMON` added, it holds the programs and measures
//! the JVM without a log through them, every pause its MXBeans count.
//!
//! Needs root, dpkg, adduser, setpriv, a JDK and cargo-deb (`.ci/run`
//! installs it); without them, or when a `pausewatch` package is already
//! installed on this machine (never clobbered), the test is skipped
//! (`common::skip`). It builds the release binary, the longest part.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::packaged::{agent_as, bpf_programs_held, usdt_programs};
use crate::common::{jvm_fixture, run_stdout, succeeds, toml_string, MxBeans};

use crate::common;

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
            ("java", &["-version"]),
            ("javac", &["-version"]),
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

/// A JVM of the GC workload without a GC log, `marker` on its command line
/// for discovery; killed when dropped.
struct Jvm(Child);

impl Jvm {
    fn start(classes: &Path, marker: &str, flags: &[&str], args: &[&str]) -> Jvm {
        let child = Command::new("java")
            .args(["-Xmx128m", marker])
            .args(flags)
            .arg("-cp")
            .arg(classes)
            .arg("GcWorkload")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Jvm(child)
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `pausewatch_jvm_discovered` line of `pid`, if there is one.
fn discovered(metrics: &str, pid: u32) -> Option<&str> {
    let pid = format!("pid=\"{pid}\"");
    metrics
        .lines()
        .find(|l| l.starts_with("pausewatch_jvm_discovered{") && l.contains(&pid))
}

#[test]
fn the_deb_installs_runs_with_four_capabilities_measures_through_ebpf_and_purges_clean() {
    if let Some(reason) = missing_prerequisite() {
        return common::skip(reason);
    }
    let deb = common::build_package("build-deb.sh");

    // Linked against the system's libelf and zlib, which it depends on.
    let depends = run_stdout("dpkg-deb", &["-f", deb.to_str().unwrap(), "Depends"]);
    for library in ["libelf1", "zlib1g"] {
        assert!(
            depends.contains(library),
            "no {library} in Depends: {depends}"
        );
    }
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
        "/usr/share/doc/pausewatch/README.md",
    ]
    .into_iter()
    .map(str::to_string)
    // The user guide README links to.
    .chain(common::docs::guide_pages().map(|page| format!("/usr/share/doc/pausewatch/docs/{page}")))
    {
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

    // A JVM without a GC log, running before the agents start: discovery
    // finds it by the marker on its command line.
    let classes = dir.join("classes");
    common::compile_workloads(&classes);
    let marker = format!("-Dpausewatch.deb={}", dir.display());
    let idle = Jvm::start(
        &classes,
        &marker,
        &["-XX:+UseSerialGC", "-Dwl.rate=2"],
        &["steady", "600", dir.join("idle.json").to_str().unwrap()],
    );
    let idle_pid = idle.0.id();
    let programs = usdt_programs();

    for (name, capabilities) in [
        ("without", &[][..]),
        ("two", &["dac_read_search", "sys_ptrace"][..]),
        (
            "four",
            &["dac_read_search", "sys_ptrace", "bpf", "perfmon"][..],
        ),
    ] {
        let state = dir.join(format!("state-{name}"));
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::chown(&state, Some(uid), Some(uid)).unwrap();
        let port = common::free_port();
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n[[gc_log]]\npath = {}\nstart_at = \"beginning\"\n\
                 [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n",
                toml_string(&state),
                toml_string(&log),
                toml_string(Path::new(&regex::escape(&marker))),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let stderr = dir.join(format!("{name}.stderr"));
        let binary = Path::new("/usr/bin/pausewatch");
        let agent = agent_as(
            binary,
            ("pausewatch", "pausewatch"),
            capabilities,
            &config,
            port,
            &stderr,
        );
        let wait = Duration::from_secs(30);
        let pauses = |m: &str| {
            common::sum(
                m,
                "jvm_gc_pause_seconds_count",
                &[&format!("gc=\"{BEAN}\"")],
            )
        };
        if capabilities.is_empty() {
            let metrics = agent.metrics_when(wait, |m| {
                common::sample(m, "pausewatch_log_readable") == Some(0.0)
            });
            assert_eq!(pauses(&metrics), 0.0, "read without capabilities");
            assert_eq!(bpf_programs_held(agent.pid()), 0, "{name}");
            continue;
        }
        let metrics = agent.metrics_when(wait, |m| {
            pauses(m) == expected && discovered(m, idle_pid).is_some()
        });
        assert_eq!(
            common::sample(&metrics, "pausewatch_log_readable"),
            Some(1.0)
        );
        let line = discovered(&metrics, idle_pid).unwrap();
        let held = bpf_programs_held(agent.pid());
        if name == "two" {
            // The unit's capabilities before the eBPF source: refused,
            // hsperfdata measures the JVM and /metrics says why.
            assert!(
                line.contains("pause_source=\"hsperfdata\"")
                    && line.contains("ebpf_reason=\"permission_denied\""),
                "{line}"
            );
            assert_eq!(held, 0, "BPF programs held without CAP_BPF");
            continue;
        }
        assert!(line.contains("pause_source=\"ebpf\""), "{line}");
        assert_eq!(held, programs, "BPF programs held by the agent");

        // A JVM started now is measured by the probes from its first
        // pause: every pause its MXBeans count, and no other.
        let json = dir.join("measured.json");
        let mut measured = Jvm::start(
            &classes,
            &marker,
            &["-XX:+UseG1GC", "-Dwl.rate=150"],
            &["steady", "3", json.to_str().unwrap()],
        );
        let pid = measured.0.id();
        assert!(measured.0.wait().unwrap().success(), "the JVM failed");
        let beans = MxBeans::read(&json).by_name();
        let total: u64 = beans.values().map(|(count, _)| count).sum();
        assert!(total >= 3, "only {total} collections: {beans:?}");
        // Per bean the MXBeans have (JDK 17's G1 has no bean for the
        // concurrent cycle's Remark and Cleanup pauses, which the agent
        // reports as `G1 Concurrent GC`, as JDK 20 and later do).
        let pid_label = format!("pid=\"{pid}\"");
        let counted = |m: &str, bean: &str| {
            let series = format!("gc=\"{bean}\"");
            common::sum(m, "jvm_gc_pause_seconds_count", &[&pid_label, &series])
        };
        let metrics = agent.metrics_when(wait, |m| {
            beans
                .iter()
                .all(|(bean, (count, _))| counted(m, bean) == *count as f64)
        });
        let line = discovered(&metrics, pid).unwrap_or_default();
        assert!(line.contains("pause_source=\"ebpf\""), "{line}");
        eprintln!("through eBPF: {beans:?} as the MXBeans; {held} BPF programs held");
    }
    drop(idle);

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
