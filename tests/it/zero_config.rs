//! `pausewatch run` without a configuration, as an ordinary user (uid
//! 65534 through `setpriv`, with a HOME it can write): it keeps its
//! checkpoint in the user's XDG state directory instead of failing on
//! /var/lib/pausewatch, and discovers the user's own JVM with its figures;
//! SIGUSR2's status line for that JVM, which has no GC log, names it.
//! Without CAP_BPF its pauses come from hsperfdata, and /metrics says why.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

use crate::common::{sum, Agent};

const NOBODY: &str = "65534";

/// A directory tree nobody owns, so the agent and the JVM can write there.
fn owned_by_nobody(path: &Path) {
    common::run_stdout("chown", &["-R", "65534:65534", path.to_str().unwrap()]);
}

fn as_nobody(program: &str) -> Command {
    let mut command = Command::new("setpriv");
    command
        .args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")])
        .args(["--clear-groups", "--no-new-privs", "--inh-caps=-all"])
        .arg(program)
        .env_remove("XDG_STATE_HOME");
    command
}

#[test]
fn an_ordinary_user_runs_without_configuration() {
    if let Some(reason) = common::missing_root_or_tool(
        "setpriv needs it to become another user",
        &[("setpriv", &["--version"]), ("java", &["-version"])],
    ) {
        common::skip(reason);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(
        home.join("Sleeper.java"),
        "public class Sleeper { public static void main(String[] a) throws Exception { Thread.sleep(120_000); } }\n",
    )
    .unwrap();
    owned_by_nobody(dir.path());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let marker = "-Dpausewatch.test=an_ordinary_user_runs_without_configuration".to_string();
    let jvm = as_nobody("java")
        .args(["-Xmx32m", &marker, "Sleeper.java"])
        .current_dir(&home)
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let jvm = Guard(jvm);
    for (xdg_state_home, state) in [
        (None, home.join(".local/state/pausewatch")),
        (Some(&xdg), xdg.join("pausewatch")),
    ] {
        let port = common::free_port();
        let stderr = dir.path().join("agent.log");
        let mut command = as_nobody(common::PAUSEWATCH);
        command
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .env("HOME", &home)
            .stderr(std::fs::File::create(&stderr).unwrap());
        if let Some(xdg) = xdg_state_home {
            command.env("XDG_STATE_HOME", xdg);
        }
        let child = command.spawn().unwrap();
        let agent_pid = child.id().to_string();
        let agent = Agent::from_child(port, child);
        let pid_label = format!("pid=\"{}\"", jvm.0.id());
        // The user's own JVM, its hsperfdata read: figures, not "permission denied".
        let metrics = agent.metrics_when(Duration::from_secs(60), |m| {
            sum(m, "pausewatch_jvm_discovered", &[&pid_label]) == 1.0
                && m.lines()
                    .any(|l| l.starts_with("jvm_memory_") && l.contains(&pid_label))
        });
        assert!(
            !metrics
                .lines()
                .any(|l| l.contains(&pid_label) && l.contains("runtime_stats=\"unavailable\"")),
            "{metrics}"
        );
        // An ordinary user may not load BPF programs: hsperfdata measures
        // the pauses, and the reason is given.
        let ebpf_reason = if cfg!(feature = "ebpf") {
            "ebpf_reason=\"permission_denied\""
        } else {
            "ebpf_reason=\"not_built\""
        };
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with("pausewatch_jvm_discovered{")
                    && l.contains(&pid_label)
                    && l.contains("pause_source=\"hsperfdata\"")
                    && l.contains(ebpf_reason)),
            "{metrics}"
        );
        assert!(
            state.join("lock").is_file(),
            "no checkpoint in {}",
            state.display()
        );
        let log = std::fs::read_to_string(&stderr).unwrap();
        assert!(log.contains(&state.display().to_string()), "{log}");
        // SIGUSR2's status line of a JVM without a GC log says which JVM,
        // and what measures it (not a "GC log").
        common::run_stdout("kill", &["-USR2", &agent_pid]);
        let status = format!(
            "status: JVM without a GC log pid=\"{}\" jvm=\"Sleeper.java\" pause_source=\"hsperfdata\"",
            jvm.0.id()
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&stderr).unwrap().contains(&status) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {status} in\n{}",
                std::fs::read_to_string(&stderr).unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(agent);
    }
}

/// Kills the JVM when the test ends, passed or failed.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An ordinary user whose home cannot be written (nobody's is
/// /nonexistent): the state directory cannot be used, which exits 2, as
/// `pausewatch(1)` says, naming the directory and the way out.
#[test]
fn an_ordinary_user_without_a_writable_home_is_told_to_name_a_checkpoint_dir() {
    if let Some(reason) = common::missing_root_or_tool(
        "setpriv needs it to become another user",
        &[("setpriv", &["--version"])],
    ) {
        common::skip(reason);
        return;
    }
    let output = as_nobody(common::PAUSEWATCH)
        .args(["run", "--listen", "127.0.0.1:0"])
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/.local/state/pausewatch")
            && stderr.contains("--checkpoint-dir"),
        "{stderr}"
    );
}
