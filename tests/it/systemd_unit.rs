//! The `.deb`'s systemd unit run by a real systemd: a minimal Debian booted
//! in `systemd-nspawn` (PID 1 of this sandbox is not systemd, so the unit
//! cannot run on the host), the package installed there with dpkg, whose
//! post-install script enables and starts the service. The kernel's view of
//! the service's process must show what the unit grants: the `pausewatch`
//! user, exactly CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_BPF and
//! CAP_PERFMON (effective, bounding, ambient), no new privileges and a
//! seccomp filter. Under that sandbox the agent loads its eBPF probes (it
//! holds one BPF program per `SEC("usdt")` of the source: the filter lets
//! `bpf()` through), reads a JVM's GC log that another user owns with mode
//! 0600 (its pause count equals the JVM's `GarbageCollectorMXBean`), stops
//! cleanly on `systemctl stop`, and a purge removes its user and state.
//!
//! The root filesystem comes from `debootstrap` (Debian's mirror, about
//! 4 minutes the first time), with the libraries the `.deb` depends on, and
//! is kept in the target directory; each boot runs on an ephemeral copy
//! with a private network. nspawn keeps CAP_BPF and CAP_PERFMON out of a
//! container's bounding set and its seccomp filter refuses `bpf()` and
//! `perf_event_open()` unless told otherwise, so the container gets both
//! (`--capability`, `--system-call-filter`), as a host's services have them. It runs only with
//! `PAUSEWATCH_SYSTEMD_TEST=1`, as root, with debootstrap, systemd-nspawn
//! (`systemd-container`), nsenter and cargo-deb; otherwise it is skipped (`common::skip`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{jvm_fixture, run_stdout, MxBeans};

use crate::common;

const MARKER: &str = "PAUSEWATCH_SYSTEMD_TEST";
/// CAP_DAC_READ_SEARCH (2), CAP_SYS_PTRACE (19), CAP_PERFMON (38), CAP_BPF (39).
const FOUR_CAPABILITIES: u64 = (1 << 2) | (1 << 19) | (1 << 38) | (1 << 39);
const BEAN: &str = "G1 Young Generation";
/// Where the container sees the JVM fixture and the package.
const FIXTURE: &str = "/srv/fixture";
const DEB: &str = "/srv/pausewatch.deb";

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    if std::env::var_os(MARKER).is_none_or(|v| v != "1") {
        return Some(format!(
            "set {MARKER}=1 to boot systemd in a container (debootstrap: about 4 minutes the first time)"
        ));
    }
    common::missing_root_or_tool(
        "nspawn and dpkg need it",
        &[
            ("debootstrap", &["--version"]),
            ("systemd-nspawn", &["--version"]),
            ("nsenter", &["--version"]),
            ("cargo", &["deb", "--version"]),
        ],
    )
}

/// A minimal Debian of the host's release with systemd and the `.deb`'s
/// libraries, made once (under a name of its own: a root made before the
/// package needed libelf is not reused).
fn root_filesystem(cache: &Path) -> PathBuf {
    let root = cache.join("systemd-root-ebpf");
    if root.join("usr/lib/systemd/systemd").exists() {
        return root;
    }
    let release = std::fs::read_to_string("/etc/os-release").unwrap();
    let codename = release
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .expect("VERSION_CODENAME in /etc/os-release");
    let partial = cache.join("systemd-root-ebpf.partial");
    let _ = std::fs::remove_dir_all(&partial);
    let started = Instant::now();
    run_stdout(
        "debootstrap",
        &[
            "--variant=minbase",
            "--include=systemd,systemd-sysv,dbus,adduser,libelf1,zlib1g",
            codename,
            partial.to_str().unwrap(),
        ],
    );
    std::fs::rename(&partial, &root).unwrap();
    eprintln!("debootstrap {codename}: {:?}", started.elapsed());
    root
}

/// The booted container: powered off and reaped when dropped.
struct Container {
    nspawn: Child,
    init: u32,
}

impl Container {
    fn boot(root: &Path, binds: &[(&Path, &str)]) -> Container {
        let mut command = Command::new("systemd-nspawn");
        command.arg("--directory").arg(root).args([
            "--boot",
            "--ephemeral",
            "--private-network",
            "--keep-unit",
            "--register=no",
            "--console=pipe",
            "--capability=CAP_BPF,CAP_PERFMON",
            "--system-call-filter=bpf perf_event_open",
        ]);
        for (host, inside) in binds {
            command.arg(format!("--bind-ro={}:{inside}", host.display()));
        }
        let nspawn = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut container = Container { nspawn, init: 0 };
        container.init = container.wait_for("systemd to boot", || {
            let init = child_of(container.nspawn.id())?;
            let state = Command::new("nsenter")
                .args([
                    "-t",
                    &init.to_string(),
                    "-a",
                    "systemctl",
                    "is-system-running",
                ])
                .output()
                .ok()?;
            let state = String::from_utf8_lossy(&state.stdout).trim().to_string();
            (state == "running" || state == "degraded").then_some(init)
        });
        container
    }

    /// Polls `ready` every 200 ms for up to a minute.
    fn wait_for<T>(&self, what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(value) = ready() {
                return value;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `args` run inside the container (all its namespaces).
    fn exec(&self, args: &[&str]) -> Output {
        Command::new("nsenter")
            .args(["-t", &self.init.to_string(), "-a"])
            .args(args)
            .output()
            .unwrap()
    }

    /// The stdout of `args` inside, which must succeed.
    fn run(&self, args: &[&str]) -> String {
        let output = self.exec(args);
        assert!(
            output.status.success(),
            "{args:?} in the container: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// An HTTP GET of the agent inside (bash's /dev/tcp: the network is
    /// private and the minimal system has no HTTP client).
    fn http_get(&self, target: &str) -> String {
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET {target} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        );
        let output = self.exec(&["bash", "-c", &script]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.init != 0 {
            let _ = self.exec(&["systemctl", "poweroff"]);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.nspawn.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.nspawn.kill();
        let _ = self.nspawn.wait();
    }
}

/// The first child of `pid` (the container's init is nspawn's only child).
fn child_of(pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// A `/proc/PID/status` field.
fn status_field<'a>(status: &'a str, field: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in:\n{status}"))
        .trim()
}

#[test]
fn systemd_runs_the_unit_with_four_capabilities_and_a_seccomp_filter_that_lets_bpf_through() {
    if let Some(reason) = missing_prerequisite() {
        return common::skip(reason);
    }
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let root = root_filesystem(cache);
    let deb = common::build_package("build-deb.sh");
    let fixture = jvm_fixture("jdk17-g1-concurrent");
    let expected = MxBeans::read(&fixture.join("mxbeans.json"))
        .bean(BEAN)
        .count as f64;

    let started = Instant::now();
    let container = Container::boot(&root, &[(&deb, DEB), (&fixture, FIXTURE)]);
    eprintln!("booted in {:?}", started.elapsed());
    // A GC log only its owner (nobody) may read, in a directory only it
    // may enter, and the agent told to read it.
    container.run(&[
        "install",
        "-d",
        "-o",
        "nobody",
        "-m",
        "0700",
        "/var/log/app",
    ]);
    container.run(&[
        "install",
        "-o",
        "nobody",
        "-m",
        "0600",
        &format!("{FIXTURE}/gc.log"),
        "/var/log/app/gc.log",
    ]);
    container.run(&["dpkg", "-i", DEB]);
    container.run(&[
        "sh",
        "-c",
        "printf '\\n[[gc_log]]\\npath = \"/var/log/app/gc.log\"\\nstart_at = \"beginning\"\\n' >> /etc/pausewatch/pausewatch.toml",
    ]);
    container.run(&["systemctl", "restart", "pausewatch"]);

    let pid = container.wait_for("the service's main process", || {
        let pid = container.run(&[
            "systemctl",
            "show",
            "-p",
            "MainPID",
            "--value",
            "pausewatch",
        ]);
        Some(pid.trim().to_string()).filter(|p| p != "0")
    });
    let status = container.run(&["cat", &format!("/proc/{pid}/status")]);
    let user = container.run(&["getent", "passwd", "pausewatch"]);
    let uid = user.split(':').nth(2).unwrap();
    assert!(
        status_field(&status, "Uid")
            .split_whitespace()
            .all(|id| id == uid),
        "{status}"
    );
    for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        let mask = u64::from_str_radix(status_field(&status, set), 16).unwrap();
        assert_eq!(mask, FOUR_CAPABILITIES, "{set}");
    }
    assert_eq!(status_field(&status, "NoNewPrivs"), "1");
    assert_eq!(status_field(&status, "Seccomp"), "2", "no seccomp filter");
    // The probes loaded at start, under that filter.
    let programs = common::packaged::usdt_programs();
    let held = container.wait_for("the BPF programs", || {
        let fds = container.run(&["ls", "-l", &format!("/proc/{pid}/fd")]);
        let held = fds.matches("anon_inode:bpf-prog").count();
        (held == programs).then_some(held)
    });
    eprintln!("the service holds {held} BPF programs");

    let metrics = container.wait_for("the MXBean's pause count", || {
        let metrics = container.http_get("/metrics");
        let pauses = common::sum(
            &metrics,
            "jvm_gc_pause_seconds_count",
            &[&format!("gc=\"{BEAN}\"")],
        );
        (pauses == expected).then_some(metrics)
    });
    assert_eq!(
        common::sample(&metrics, "pausewatch_log_readable"),
        Some(1.0)
    );
    assert!(container.http_get("/healthz").contains("\"status\":\"ok\""));

    // A clean stop: SIGTERM, a final checkpoint, exit 0.
    container.run(&["systemctl", "stop", "pausewatch"]);
    let result = container.run(&[
        "systemctl",
        "show",
        "-p",
        "Result",
        "-p",
        "ExecMainStatus",
        "pausewatch",
    ]);
    assert!(result.contains("Result=success"), "{result}");
    assert!(result.contains("ExecMainStatus=0"), "{result}");
    container.run(&["test", "-s", "/var/lib/pausewatch/state.json"]);

    container.run(&["dpkg", "--purge", "pausewatch"]);
    for left in [
        &["getent", "passwd", "pausewatch"][..],
        &["test", "-e", "/var/lib/pausewatch"][..],
        &["test", "-e", "/etc/pausewatch"][..],
    ] {
        assert!(
            !container.exec(left).status.success(),
            "after purge: {left:?}"
        );
    }
    eprintln!("systemd_unit.rs: {:?} from boot", started.elapsed());
}
