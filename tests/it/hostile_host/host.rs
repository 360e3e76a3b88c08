//! See the parent module: the hsperfdata files of fake `java` processes as
//! their user may make them (a FIFO, a 10 GB sparse copy, a cut or random
//! file, a symlink to /etc/shadow, an absurd prologue), all at once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::{http_get, root, sum, toml_string, Children, PAUSEWATCH};

/// nobody's uid and gid.
const NOBODY: u32 = 65534;

/// A process whose `argv[0]` is `DIR/java` (a copy of `sleep`), run as nobody.
fn fake_java(dir: &Path) -> Child {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(dir.join("java"))
        .arg("600")
        .spawn()
        .unwrap()
}

/// Removes the fake JVMs' files and kills them when the test ends.
struct Fakes {
    children: Vec<Child>,
    files: Vec<PathBuf>,
}

impl Drop for Fakes {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

#[test]
fn hostile_hsperfdata_files_are_refused_without_blocking_or_buffering() {
    let root_and_setpriv = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n"
        && Command::new("setpriv").arg("--version").output().is_ok();
    if !root_and_setpriv {
        crate::common::skip("needs root and setpriv");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy("/bin/sleep", dir.path().join("java")).unwrap();
    let hsperf_dir = Path::new("/tmp/hsperfdata_nobody");
    std::fs::create_dir_all(hsperf_dir).unwrap();
    std::os::unix::fs::chown(hsperf_dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let fixture = root().join("tests/fixtures/hsperf/jdk17-g1");
    let real = std::fs::read(fixture.join("hsperfdata")).unwrap();
    let beans: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture.join("mxbeans.json")).unwrap()).unwrap();
    let mut absurd = real.clone();
    absurd[8..12].copy_from_slice(&i32::MAX.to_le_bytes());

    let mut fakes = Fakes {
        children: Vec::new(),
        files: Vec::new(),
    };
    // (case, the reason expected)
    let cases = [
        ("fifo", "not_regular_file"),
        ("sparse_10g", ""),
        ("truncated", "invalid_hsperfdata"),
        ("random", "invalid_hsperfdata"),
        ("shadow", "not_regular_file"),
        ("absurd", "invalid_hsperfdata"),
        ("missing", "no_hsperfdata"),
    ];
    let mut pids = Vec::new();
    for (case, _) in cases {
        let child = fake_java(dir.path());
        let file = hsperf_dir.join(child.id().to_string());
        pids.push(child.id());
        fakes.children.push(child);
        fakes.files.push(file.clone());
        match case {
            "fifo" => assert!(Command::new("mkfifo")
                .arg(&file)
                .status()
                .unwrap()
                .success()),
            "sparse_10g" => {
                std::fs::write(&file, &real).unwrap();
                assert!(Command::new("truncate")
                    .args(["-s", "10G"])
                    .arg(&file)
                    .status()
                    .unwrap()
                    .success());
            }
            "truncated" => std::fs::write(&file, &real[..real.len() / 3]).unwrap(),
            "random" => std::fs::write(&file, [0x5a_u8; 32 << 10]).unwrap(),
            "shadow" => std::os::unix::fs::symlink("/etc/shadow", &file).unwrap(),
            "absurd" => std::fs::write(&file, &absurd).unwrap(),
            _ => {}
        }
        if case != "missing" {
            std::os::unix::fs::lchown(&file, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }

    let port = crate::common::free_port();
    let config = crate::common::write_file(
        dir.path(),
        "pausewatch.toml",
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
             [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n[runtime_stats]\ninterval = \"100ms\"\n",
            toml_string(&dir.path().join("state")),
            crate::common::discovery_include(&dir.path().display().to_string()),
        ),
    );
    let mut children = Children::new(dir.path());
    children.spawn_service(
        "agent",
        Command::new(PAUSEWATCH).args(["run", "--config", config.to_str().unwrap()]),
    );
    children.dump_on_failure(&[port], &["pausewatch_jvm_discovered", "jvm_threads"]);
    let listed = |metrics: &str, pid: u32, reason: &str| {
        let pid = format!("pid=\"{pid}\"");
        let reason = format!("reason=\"{reason}\"");
        let state = if reason.len() > 9 {
            "unavailable"
        } else {
            "available"
        };
        let state = format!("runtime_stats=\"{state}\"");
        sum(
            metrics,
            "pausewatch_jvm_discovered",
            &[&pid, &state, &reason],
        ) == 1.0
    };
    let mut metrics = String::new();
    children.wait_until(
        Instant::now() + Duration::from_secs(30),
        "every fake JVM listed with its reason",
        |_| {
            metrics = http_get(port, "/metrics")
                .map(|(_, b)| b)
                .unwrap_or_default();
            cases
                .iter()
                .zip(&pids)
                .all(|((_, reason), pid)| listed(&metrics, *pid, reason))
        },
    );
    // The 10 GB file's counters are the JVM's own, as its MXBeans said.
    let sparse = format!("pid=\"{}\"", pids[1]);
    assert_eq!(
        sum(&metrics, "jvm_threads_live_threads", &[&sparse]),
        beans["threads"]["live"].as_f64().unwrap()
    );
    // Nothing blocked: the loop beats and /healthz says so.
    let (status, body) = http_get(port, "/healthz").unwrap();
    assert_eq!(status, 200, "{body}");
    // Nothing of the 10 GB was buffered: the agent's peak RSS stays small.
    let agent_pid = Command::new("pgrep")
        .args(["-f", &format!("{}$", config.display())])
        .output()
        .unwrap();
    let agent_pid = String::from_utf8_lossy(&agent_pid.stdout)
        .trim()
        .to_string();
    let peak_kib = crate::common::peak_rss_kib(agent_pid.parse().unwrap());
    assert!(peak_kib < 200 << 10, "peak RSS {peak_kib} KiB");
    // The missing file's warning says what was found, not a capability.
    let log = std::fs::read_to_string(dir.path().join("agent.stderr")).unwrap();
    let missing = log
        .lines()
        .find(|l| l.contains("no_hsperfdata") && l.contains(&pids[6].to_string()))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(missing.contains("hsperfdata_* directories"), "{missing}");
    assert!(!missing.contains("CAP_"), "{missing}");
    let fifo = log
        .lines()
        .find(|l| l.contains("not_regular_file") && l.contains("is a FIFO"));
    assert!(fifo.is_some(), "{log}");
}
