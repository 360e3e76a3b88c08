//! An agent with nothing to measure costs next to nothing (issue 39).

use std::time::Duration;

use crate::common::{self, Agent};

/// The voluntary context switches of the process `pid`'s main thread, where
/// the agent's loop runs: one per pass when it waits between passes.
fn main_thread_switches(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("voluntary_ctxt_switches:"))
        .expect("a kernel that counts context switches");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// With discovery on and no JVM it selects, the loop passes once a second
/// (the discovery of new logs and JVMs): no source has a sample, a pause
/// to flush or records to fold. It passed at every `[runtime_stats]
/// interval` (200 ms) before, sampling no JVM.
#[test]
fn an_agent_with_nothing_to_measure_passes_its_loop_once_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninclude = [\"no-program-runs-this-{port}\"]\n",
        common::toml_string(&dir.path().join("state")),
    );
    let agent = Agent::start(dir.path(), port, &config);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    // Past the start: the first discovery, the probes' loading.
    std::thread::sleep(Duration::from_secs(3));
    let before = main_thread_switches(agent.pid());
    std::thread::sleep(Duration::from_secs(6));
    let passes = main_thread_switches(agent.pid()) - before;
    println!("{passes} waits of the loop in 6 s");
    // About 6, and 30 at 200 ms; a few more for the scans' and the
    // checkpoint's waits.
    assert!(passes <= 15, "{passes} waits of the loop in 6 s");
}
