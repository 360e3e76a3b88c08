//! A discovered JVM's default `service` label, against real JVMs: the main
//! class the test launched, the `OTEL_SERVICE_NAME` it set in the JVM's
//! environment, and a `[[discovery.rule]]` that overrides both.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::Agent;

use crate::common;

/// A JVM running the test workload's main class for a while, with `flags`
/// (the test's marker among them) and `env` added to its environment.
fn jvm(classes: &Path, flags: &[&str], env: &[(&str, &str)], snapshot: &Path) -> Child {
    Command::new("java")
        .args(["-XX:+UseSerialGC", "-Xmx32m"])
        .args(flags)
        .args(["-Dwl.rate=5", "-cp"])
        .arg(classes)
        .args(["GcWorkload", "steady", "30"])
        .arg(snapshot)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// The `service` label of JVM `pid`'s `pausewatch_jvm_discovered` series.
fn service_of(metrics: &str, pid: u32) -> Option<String> {
    let pid = format!("pid=\"{pid}\"");
    let line = metrics
        .lines()
        .find(|l| l.starts_with("pausewatch_jvm_discovered{") && l.contains(&pid))?;
    let value = line.split("service=\"").nth(1)?;
    Some(value[..value.find('"')?].to_string())
}

#[test]
fn a_discovered_jvm_is_labelled_with_its_main_class_its_otel_name_or_a_rule() {
    let Some((dir, classes, marker)) = common::workloads_or_skip() else {
        return;
    };
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n\
         [[discovery.rule]]\nmatch = \"-Dwl.rule\"\nlabels = {{ service = \"pricing\" }}\n",
        common::toml_string(&dir.path().join("checkpoint")),
        common::discovery_include(&marker),
    );
    let agent = Agent::start(dir.path(), port, &config);
    let snapshot = |name: &str| dir.path().join(format!("{name}.json"));
    let mut plain = jvm(&classes, &[&marker], &[], &snapshot("plain"));
    let otel = [("OTEL_SERVICE_NAME", "quotes")];
    let mut named = jvm(&classes, &[&marker], &otel, &snapshot("named"));
    let rule = [marker.as_str(), "-Dwl.rule=1"];
    let mut ruled = jvm(&classes, &rule, &otel, &snapshot("ruled"));
    let pids = [plain.id(), named.id(), ruled.id()];
    let metrics = agent.metrics_when(Duration::from_secs(60), |m| {
        pids.iter().all(|&pid| service_of(m, pid).is_some())
    });
    for child in [&mut plain, &mut named, &mut ruled] {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(service_of(&metrics, pids[0]).as_deref(), Some("GcWorkload"));
    assert_eq!(service_of(&metrics, pids[1]).as_deref(), Some("quotes"));
    assert_eq!(service_of(&metrics, pids[2]).as_deref(), Some("pricing"));
}
