//! The container image of `packaging/container/`: built with buildah
//! (`packaging/container/build.sh`, vfs storage, no daemon), then run. Where
//! the sandbox refuses `podman run` (as in CI: crun may not set its rlimits),
//! the image's root filesystem is exported (`podman create` + `podman
//! export`, file capabilities kept) and its entrypoint run chrooted in a
//! mount namespace of its own, as the image's user: `/healthz` must answer,
//! the state directory must take the checkpoint lock, the kernel must show
//! exactly CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_BPF and CAP_PERFMON
//! effective, and the binary, built with `--features ebpf` and loaded with
//! the libraries the image carries, must hold its eBPF probes' programs (one
//! per `SEC("usdt")` of the source).
//!
//! The image takes the packages' release build (about 3 minutes on 2 cores,
//! shared with tests/it/deb.rs and rpm.rs), so this test runs only with `PAUSEWATCH_CONTAINER_TEST=1`, which
//! `.ci/run` sets, and is skipped otherwise (`common::skip`); it needs root,
//! and buildah and podman that work here (their `info` with vfs storage),
//! and setcap: without them it is skipped too.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

const MARKER: &str = "PAUSEWATCH_CONTAINER_TEST";
/// CAP_DAC_READ_SEARCH (2), CAP_SYS_PTRACE (19), CAP_PERFMON (38), CAP_BPF (39).
const FOUR_CAPABILITIES: u64 = (1 << 2) | (1 << 19) | (1 << 38) | (1 << 39);
const VFS_STORAGE: [&str; 2] = ["--storage-driver", "vfs"];

fn output(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// Effective capabilities of `pid`, from the kernel.
fn effective_capabilities(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// The process in `root` running the agent: the last descendant of `pid`.
fn agent_pid(pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    match children.split_whitespace().next() {
        Some(child) => agent_pid(child.parse().ok()?).or(Some(child.parse().ok()?)),
        None => None,
    }
}

#[test]
fn the_image_builds_and_its_entrypoint_serves_healthz_with_four_capabilities_and_its_probes() {
    if std::env::var_os(MARKER).is_none_or(|v| v != "1") {
        return common::skip(format_args!(
            "set {MARKER}=1 to build the release binary and the image (about 3 minutes)"
        ));
    }
    for tool in ["setcap", "unshare", "chroot"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return common::skip(format_args!("{tool} is not installed"));
        }
    }
    for tool in ["buildah", "podman"] {
        let probe = Command::new(tool).args(VFS_STORAGE).arg("info").output();
        if !probe.as_ref().is_ok_and(|o| o.status.success()) {
            return common::skip(format_args!("{tool} cannot run here: {probe:?}"));
        }
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let image = output(
        Command::new(common::root().join("packaging/container/build.sh"))
            .env("CARGO_TARGET_DIR", target)
            .env("STORAGE_DRIVER", "vfs")
            .stderr(Stdio::inherit()),
    );
    let podman = || {
        let mut command = Command::new("podman");
        command.args(VFS_STORAGE);
        command
    };
    let user = output(podman().args(["image", "inspect", "--format", "{{.Config.User}}", &image]));
    assert_eq!(user, "65532:65532");

    let tmp = tempfile::tempdir().unwrap();
    let container = output(podman().args(["create", &image]));
    let tar = tmp.path().join("fs.tar");
    output(podman().args(["export", "-o", tar.to_str().unwrap(), &container]));
    output(podman().args(["rm", &container]));
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    output(
        Command::new("tar")
            .args(["--xattrs", "--xattrs-include=*", "-xf"])
            .arg(&tar)
            .arg("-C")
            .arg(&root),
    );

    let port = common::free_port();
    let mut agent = Command::new("unshare")
        .args([
            "--mount",
            "--fork",
            "--kill-child",
            "chroot",
            "--userspec=65532:65532",
        ])
        .arg(&root)
        .args([
            "/usr/bin/pausewatch",
            "run",
            "--config",
            "/etc/pausewatch/pausewatch.toml",
            "--listen",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(tmp.path().join("agent.stderr")).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let healthy = loop {
        if let Ok((200, body)) = common::http_get(port, "/healthz") {
            break Some(body);
        }
        if Instant::now() > deadline || agent.try_wait().unwrap().is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let pid = agent_pid(agent.id());
    let capabilities = pid.and_then(effective_capabilities);
    let programs = pid.map(common::packaged::bpf_programs_held);
    // Killed by pid: a binary with file capabilities loses the parent-death
    // signal unshare's --kill-child sets, so it would outlive unshare.
    if let Some(pid) = pid {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    let _ = agent.kill();
    let _ = agent.wait();
    let stderr = std::fs::read_to_string(tmp.path().join("agent.stderr")).unwrap();
    let body =
        healthy.unwrap_or_else(|| panic!("no /healthz from the image's entrypoint:\n{stderr}"));
    assert!(body.contains("\"status\":\"ok\""), "{body}");
    assert_eq!(capabilities, Some(FOUR_CAPABILITIES), "{stderr}");
    assert_eq!(
        programs,
        Some(common::packaged::usdt_programs()),
        "BPF programs held: {stderr}"
    );
    assert!(
        root.join("var/lib/pausewatch/lock").exists(),
        "no checkpoint lock: {stderr}"
    );
}
