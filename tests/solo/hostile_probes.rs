//! The agent as a hostile host treats it, round 3 (the others are
//! `tests/it/hostile_host.rs`): the root agent's discovery and eBPF
//! paths as another local user attacks them, with real JVMs run as other
//! users through `setpriv` and the agent's probes loaded.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, Agent, Children};

/// The victim's and the attacker's users (Debian's `daemon` and `lp`):
/// HotSpot names its hsperfdata directory by the user's name, so both must
/// be in /etc/passwd.
const VICTIM: (u32, &str) = (1, "daemon");
const ATTACKER: (u32, &str) = (7, "lp");

/// A command run as `user` (uid and gid alike), without supplementary groups.
fn as_user(user: (u32, &str), program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("setpriv");
    command
        .arg(format!("--reuid={}", user.0))
        .arg(format!("--regid={}", user.0))
        .args(["--clear-groups", "--no-new-privs"])
        .arg(program);
    command
}

/// A directory any user may read, with the Java workloads compiled in
/// `classes`, and the marker of the test's JVMs; `None` (skipped loudly)
/// where the probes cannot be loaded.
fn prepared() -> Option<(tempfile::TempDir, PathBuf, String)> {
    if !common::bpf_or_skip() {
        return None;
    }
    let (dir, classes, marker) = common::workloads_or_skip()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((dir, classes, marker))
}

/// A directory of `dir` that `user` owns.
fn owned_dir(dir: &Path, name: &str, user: (u32, &str)) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(&path).unwrap();
    std::os::unix::fs::chown(&path, Some(user.0), Some(user.0)).unwrap();
    path
}

/// How a test's agent runs beside its defaults: top-level settings, and
/// the discovery interval.
struct Settings {
    top: &'static str,
    interval: &'static str,
}

const DEFAULTS: Settings = Settings {
    top: "",
    interval: "200ms",
};

/// An agent with the probes loaded (root), discovering the JVMs with
/// `marker`, its log in `dir/agent.log`: its port and process.
fn spawn_agent(dir: &Path, marker: &str, settings: Settings) -> (u16, std::process::Child) {
    let port = common::free_port();
    let config = common::write_file(
        dir,
        "pausewatch.toml",
        format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n{}\n\
             [discovery]\ninterval = \"{}\"\ninclude = [{}]\n\
             [runtime_stats]\ninterval = \"100ms\"\n",
            common::toml_string(&dir.join("state")),
            settings.top,
            settings.interval,
            common::discovery_include(marker),
        ),
    );
    let log = std::fs::File::create(dir.join("agent.log")).unwrap();
    let child = common::run_command(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    (port, child)
}

/// [`spawn_agent`]'s agent once it serves `/metrics`.
fn start_agent(children: &mut Children, dir: &Path, marker: &str, settings: Settings) -> Agent {
    let (port, child) = spawn_agent(dir, marker, settings);
    let agent = Agent::from_child(port, child);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    let series = [
        "pausewatch_jvm_discovered",
        "pausewatch_errors",
        "jvm_gc_pause_seconds_count",
    ];
    children.dump_on_failure(&[port], &series);
    agent
}

/// `java` (a command: a JDK's `java`, perhaps run as another user) running
/// the GC workload with `flags`, its pauses logged to its stderr (the truth
/// a test holds the agent to), for `seconds`.
fn workload(
    mut java: Command,
    flags: &[&str],
    classes: &Path,
    marker: &str,
    seconds: &str,
    json: &Path,
) -> Command {
    java.args(["-Xmx64m", "-Xlog:gc:stderr", marker])
        .args(["-Dwl.rate=20", "-Dwl.quiesceMs=1500"])
        .args(flags)
        .arg("-cp")
        .arg(classes)
        .args(["GcWorkload", "steady", seconds])
        .arg(json);
    java
}

/// The agent's pause count and largest pause of the JVM `pid`, over every
/// minute `/api/v1/minutes` keeps.
fn agent_pauses(agent: &Agent, pid: u32) -> (u64, f64) {
    let body = agent.get("/api/v1/minutes").unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let pid = pid.to_string();
    let jvms = json["jvms"].as_array().cloned().unwrap_or_default();
    let Some(jvm) = jvms.iter().find(|j| j["labels"]["pid"] == pid.as_str()) else {
        return (0, 0.0);
    };
    let minutes = jvm["minutes"].as_array().cloned().unwrap_or_default();
    minutes.iter().fold((0, 0.0), |(count, max), minute| {
        let minute_max = minute["pause_max_seconds"].as_f64().unwrap_or(0.0);
        (
            count + minute["pause_count"].as_u64().unwrap_or(0),
            f64::max(max, minute_max),
        )
    })
}

/// The `Pause` lines of a JVM's own `-Xlog:gc` output: count and largest (s).
fn logged_pauses(log: &Path) -> (u64, f64) {
    let pause = regex::Regex::new(r"GC\(\d+\) Pause .* (\d+\.\d+)ms$").unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|line| pause.captures(line))
        .fold((0, 0.0), |(count, max), c| {
            (count + 1, f64::max(max, c[1].parse::<f64>().unwrap() / 1e3))
        })
}

/// `bytes` with the first `from` replaced by `to`, NUL-padded to its length
/// (a PerfData string is NUL-terminated in a field of fixed size).
fn patched(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert!(to.len() <= from.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from} is not in the file"));
    let mut out = bytes.to_vec();
    out[at..at + from.len()].fill(0);
    out[at..at + to.len()].copy_from_slice(to.as_bytes());
    out
}

/// Waits for the hsperfdata file of the JVM `pid` run by `user` to name
/// `option` in its `java.rt.vmArgs`: its bytes.
fn hsperfdata_naming(user: &str, pid: u32, option: &str) -> Vec<u8> {
    let path = PathBuf::from(format!("/tmp/hsperfdata_{user}/{pid}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bytes = std::fs::read(&path).unwrap_or_default();
        if bytes.windows(option.len()).any(|w| w == option.as_bytes()) {
            return bytes;
        }
        assert!(
            Instant::now() < deadline,
            "{} never named {option}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Removes a directory when dropped, whatever the test's outcome.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Case 1: a local user makes `/tmp/hsperfdata_daemon` (mode 777) before
/// daemon's JVMs start, which then write no hsperfdata of their own, and
/// puts there, under each victim's pid, a real hsperfdata file of their
/// own JVM whose `java.rt.vmArgs` names a GC log they write (five 30 s
/// pauses), or `/etc/shadow`. The agent trusts neither: it says why, never
/// opens either log, and measures both victims by eBPF, their pauses those
/// of the victims' own `-Xlog:gc` output.
#[test]
fn another_users_hsperfdata_cannot_forge_or_hide_a_jvms_pauses() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    let agent = start_agent(&mut children, dir, &marker, DEFAULTS);

    let trap = Path::new("/tmp").join(format!("hsperfdata_{}", VICTIM.1));
    assert!(
        !trap.exists(),
        "{} exists already: this test needs to make it",
        trap.display()
    );
    let _trap_removed = RemoveOnDrop(trap.clone());
    let attacker_dir = owned_dir(dir, "attacker", ATTACKER);
    std::fs::create_dir(&trap).unwrap();
    std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&trap, Some(ATTACKER.0), Some(ATTACKER.0)).unwrap();

    // The attacker's own JVM: its hsperfdata names the log they write.
    let forged_log = attacker_dir.join("gc-forged.log");
    let xlog = format!("-Xlog:gc:file={}", forged_log.display());
    let mut attacker_jvm = as_user(ATTACKER, "java");
    attacker_jvm
        .args(["-Xmx32m", "-XX:+UseSerialGC", "-cp"])
        .arg(&classes)
        .args(["-Dwl.rate=1", &xlog, "GcWorkload", "steady", "60"])
        .arg(attacker_dir.join("attacker.json"))
        .current_dir(&attacker_dir);
    children.spawn_service("attacker-jvm", &mut attacker_jvm);
    // setpriv execs what it runs: the child's pid is the JVM's.
    let attacker_pid = children.pid("attacker-jvm");
    let real = hsperfdata_naming(ATTACKER.1, attacker_pid, &xlog);
    let naming_shadow = patched(&real, &forged_log.display().to_string(), "/etc/shadow");

    // Two victims, each held in a shell until its forged file is in place,
    // then exec'd into the JVM under the same pid.
    let victim_dir = owned_dir(dir, "victim", VICTIM);
    let mut victims = Vec::new();
    for (name, forged) in [("forged", &real), ("shadow", &naming_shadow)] {
        let go = victim_dir.join(format!("{name}.go"));
        let mut wait = as_user(VICTIM, "sh");
        wait.arg("-c")
            .arg("while [ ! -e \"$0\" ]; do sleep 0.05; done; exec \"$@\"")
            .arg(&go)
            .arg("java")
            .current_dir(&victim_dir);
        let json = victim_dir.join(format!("{name}.json"));
        let mut command = workload(wait, &["-XX:+UseSerialGC"], &classes, &marker, "6", &json);
        children.spawn_job(name, &mut command);
        let pid = children.pid(name);
        let file = trap.join(pid.to_string());
        std::fs::write(&file, forged).unwrap();
        std::os::unix::fs::chown(&file, Some(ATTACKER.0), Some(ATTACKER.0)).unwrap();
        std::fs::write(&go, "").unwrap();
        victims.push((name, pid));
    }
    // The attacker appends five 30 s pauses while the victims run.
    let mut forged_lines = String::from("[0.010s][info][gc] Using Serial\n");
    for i in 0..5 {
        forged_lines += &format!(
            "[{}.000s][info][gc] GC({i}) Pause Young (Allocation Failure) 20M->2M(64M) 30000.000ms\n",
            i + 1
        );
    }
    std::fs::write(&forged_log, forged_lines).unwrap();
    std::os::unix::fs::chown(&forged_log, Some(ATTACKER.0), Some(ATTACKER.0)).unwrap();

    for (name, pid) in &victims {
        children.wait_until(
            Instant::now() + Duration::from_secs(60),
            &format!("the {name} victim to exit"),
            |c| c.exited(name).is_some(),
        );
        let truth = logged_pauses(&dir.join(format!("{name}.stderr")));
        assert!(truth.0 >= 3, "{name}: only {truth:?} pauses in its own log");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut counted = agent_pauses(&agent, *pid);
        while counted.0 != truth.0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            counted = agent_pauses(&agent, *pid);
        }
        assert_eq!(
            counted.0, truth.0,
            "{name}: the agent's pauses against its own log"
        );
        assert!(counted.1 < 1.0, "{name}: a forged pause of {} s", counted.1);
        let metrics = agent.get("/metrics").unwrap_or_default();
        let line = common::discovered(&metrics, *pid).unwrap_or_default();
        // Refused as untrusted; or, on a loaded host where discovery
        // looked as the short-lived victim exited, no longer readable.
        let reason = |r: &str| line.contains(&format!(",reason=\"{r}\""));
        assert!(
            line.contains("pause_source=\"ebpf\"")
                && (reason("untrusted_hsperfdata") || reason("no_hsperfdata")),
            "{name}: {line}"
        );
    }
    let metrics = agent.get("/metrics").unwrap_or_default();
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    for named in ["gc-forged.log", "/etc/shadow"] {
        assert!(!metrics.contains(named), "{named} in /metrics");
        assert!(
            !log.lines()
                .any(|l| l.contains(named) && l.contains("following the GC log")),
            "{named} followed:\n{log}"
        );
    }
    let refused = log
        .lines()
        .find(|l| l.contains("untrusted_hsperfdata") && l.contains("is owned by uid 7"));
    assert!(refused.is_some(), "no line says why:\n{log}");
}

/// The JDK 17 Debian installs, whose libjvm.so the tests copy.
const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// A copy of the JDK at `JDK17` in `dir/name`: its tree of directories,
/// its files links to the originals but for `bin/java` and
/// `lib/server/libjvm.so`, real files (the launcher finds its JDK, and
/// HotSpot its home, through their own paths).
fn private_jdk(dir: &Path, name: &str) -> PathBuf {
    let jdk = dir.join(name);
    common::succeed(Command::new("cp").args(["-rs", JDK17]).arg(&jdk));
    for file in ["bin/java", "lib/server/libjvm.so"] {
        std::fs::remove_file(jdk.join(file)).unwrap();
        std::fs::copy(Path::new(JDK17).join(file), jdk.join(file)).unwrap();
    }
    jdk
}

/// Sends `signal` to `pid` and waits up to `within` for it to exit: the
/// time it took, `None` if it did not.
fn exits_on(agent: &mut std::process::Child, signal: &str, within: Duration) -> Option<Duration> {
    let sent = Instant::now();
    common::succeed(Command::new("kill").args([signal, &agent.id().to_string()]));
    while sent.elapsed() < within {
        if agent.try_wait().unwrap().is_some() {
            return Some(sent.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Case 2: a local user's process named `java` maps a libjvm.so, unlinks
/// it and leaves a FIFO at its name; and a FIFO waits at a JDK path the
/// agent attaches at start (`/opt/X/lib/server/libjvm.so`). Neither may
/// freeze the agent: it starts, serves `/healthz`, lists the process as
/// not a JVM (case 4: it has no VM Thread), and exits at once on SIGTERM.
#[test]
fn a_fifo_for_a_libjvm_freezes_nothing() {
    let _alone = crate::alone();
    let Some((dir, _classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let opt = PathBuf::from(format!("/opt/pausewatch-test-{}", std::process::id()));
    let _opt_removed = RemoveOnDrop(opt.clone());
    std::fs::create_dir_all(opt.join("lib/server")).unwrap();
    common::succeed(Command::new("mkfifo").arg(opt.join("lib/server/libjvm.so")));
    let mut children = Children::new(dir);

    // The attacker's library, mapped, unlinked and replaced by a FIFO.
    let attacker_dir = owned_dir(dir, "attacker", ATTACKER);
    let library = attacker_dir.join("lib/server/libjvm.so");
    std::fs::create_dir_all(library.parent().unwrap()).unwrap();
    std::fs::copy(Path::new(JDK17).join("lib/server/libjvm.so"), &library).unwrap();
    common::succeed(Command::new("chown").args(["-R", "7:7"]).arg(&attacker_dir));
    let ready = attacker_dir.join("ready");
    let script = "import mmap, os, sys, time\n\
                  f = open(sys.argv[1], 'rb')\n\
                  m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
                  os.unlink(sys.argv[1]); os.mkfifo(sys.argv[1])\n\
                  open(sys.argv[2], 'w').close()\n\
                  time.sleep(600)\n";
    let mut fake = as_user(ATTACKER, "bash");
    fake.args(["-c", "exec -a java python3 -c \"$0\" \"$@\"", script])
        .arg(&library)
        .arg(&ready)
        .arg(&marker);
    children.spawn_service("fake-java", &mut fake);
    children.wait_until(
        Instant::now() + Duration::from_secs(10),
        "the FIFO in place",
        |_| ready.exists(),
    );
    let fake_pid = children.pid("fake-java");

    let (port, mut agent) = spawn_agent(dir, &marker, DEFAULTS);
    // Listed once it has shown no JVM's signs for 10 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut line = None;
    while line.is_none() && Instant::now() < deadline {
        let metrics = common::http_get(port, "/metrics")
            .map(|(_, b)| b)
            .unwrap_or_default();
        line = common::discovered(&metrics, fake_pid);
        std::thread::sleep(Duration::from_millis(100));
    }
    let log_text = || std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    let line = line.unwrap_or_else(|| panic!("the fake java was never listed:\n{}", log_text()));
    // Its loop still beats once the process was taken in.
    std::thread::sleep(Duration::from_secs(1));
    let health = common::http_get(port, "/healthz");
    assert!(matches!(health, Ok((200, _))), "{health:?}\n{}", log_text());
    assert!(line.contains("ebpf_reason=\"not_a_jvm\""), "{line}");
    let took = exits_on(&mut agent, "-TERM", Duration::from_secs(5));
    assert!(took.is_some(), "SIGTERM ignored:\n{}", log_text());
    let text = log_text();
    assert!(
        text.lines()
            .any(|l| l.contains(&opt.display().to_string()) && l.contains("not a regular file")),
        "the FIFO at the JDK path is not reported:\n{text}"
    );
}

/// Case 3: a JDK upgraded in place under a running JVM (its libjvm.so
/// replaced by `mv`, as dpkg and rpm do), then the agent started: the
/// probes go on the file the JVM maps, not the new one, and every
/// safepoint its counter makes from then on is recorded.
#[test]
fn a_jdk_upgraded_in_place_leaves_its_running_jvm_measured() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let jdk = private_jdk(dir, "jdk");
    let mut children = Children::new(dir);
    let json = dir.join("jvm.json");
    let mut jvm = workload(
        Command::new(jdk.join("bin/java")),
        &["-XX:+UseSerialGC"],
        &classes,
        &marker,
        "12",
        &json,
    );
    children.spawn_job("jvm", &mut jvm);
    let pid = children.pid("jvm");
    // The upgrade: a new file renamed over the one the JVM maps.
    std::thread::sleep(Duration::from_secs(1));
    let server = jdk.join("lib/server");
    std::fs::copy(server.join("libjvm.so"), server.join("libjvm.so.new")).unwrap();
    std::fs::rename(server.join("libjvm.so.new"), server.join("libjvm.so")).unwrap();

    let agent = start_agent(&mut children, dir, &marker, DEFAULTS);
    children.wait_until(
        Instant::now() + Duration::from_secs(60),
        "the JVM to exit",
        |c| c.exited("jvm").is_some(),
    );
    let truth = logged_pauses(&dir.join("jvm.stderr"));
    let (counted, _) = agent_pauses(&agent, pid);
    let metrics = agent.get("/metrics").unwrap_or_default();
    let line = common::discovered(&metrics, pid).unwrap_or_default();
    assert!(
        line.contains("pause_source=\"ebpf\"") && line.contains("ebpf_reason=\"\""),
        "{line}"
    );
    assert!(
        counted >= 3 && counted <= truth.0,
        "{counted} pauses of the log's {truth:?}"
    );
    let pid_label = format!("pid=\"{pid}\"");
    let mismatch = metrics
        .lines()
        .find(|l| {
            l.starts_with("pausewatch_jvm_safepoint_probe_mismatch{") && l.contains(&pid_label)
        })
        .and_then(common::line_value);
    assert_eq!(mismatch, Some(0.0), "safepoints the probes missed");
}

/// Case 6: the probes' descriptors (19, and 7 per JDK) come out of the
/// share planned for held files. With `prlimit --nofile=64` and 100 logs
/// they do not fit, and the agent says so instead of taking the HTTP
/// server's and the checkpoint's; with 160 they are loaded. Either way
/// every log is read, `/healthz` answers and SIGTERM writes the last
/// checkpoint.
#[test]
fn the_probes_descriptors_are_counted_in_a_tight_open_files_limit() {
    let _alone = crate::alone();
    let Some((dir, _classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let line = "[0.500s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 10M->5M(64M) 1.000ms\n";
    for i in 0..100 {
        let log = dir.join(format!("jvms/{i:03}/gc.log"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, line.repeat(3)).unwrap();
    }
    for (limit, expected) in [(64, "too_few_descriptors"), (160, "probes attached")] {
        let run = dir.join(format!("limit-{limit}"));
        std::fs::create_dir_all(&run).unwrap();
        let port = common::free_port();
        let config = common::write_file(
            &run,
            "pausewatch.toml",
            format!(
                "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\ncheckpoint_interval = \"100ms\"\n\
                 [[gc_log]]\npath = \"{}/jvms/*/gc.log\"\nstart_at = \"beginning\"\n\
                 [discovery]\ninclude = [{}]\n",
                common::toml_string(&run.join("state")),
                dir.display(),
                common::discovery_include(&marker),
            ),
        );
        let mut agent = Command::new("prlimit")
            .arg(format!("--nofile={limit}:{limit}"))
            .args([common::PAUSEWATCH, "run", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(run.join("agent.log")).unwrap())
            .spawn()
            .unwrap();
        let log = || std::fs::read_to_string(run.join("agent.log")).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(30);
        let counted = |metrics: &str| common::sum(metrics, "jvm_gc_pause_seconds_count", &[]);
        let mut metrics = String::new();
        while counted(&metrics) < 300.0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            metrics = common::http_get_ok(port, "/metrics").unwrap_or_default();
        }
        assert_eq!(counted(&metrics), 300.0, "limit {limit}:\n{}", log());
        // Every connection the plan allows is still served, beside the probes.
        let clients: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(move || common::http_get(port, "/healthz")))
            .collect();
        for client in clients {
            let answer = client.join().unwrap();
            assert!(
                matches!(answer, Ok((200, _))),
                "limit {limit}: {answer:?}\n{}",
                log()
            );
        }
        assert!(log().contains(expected), "limit {limit}:\n{}", log());
        let took = exits_on(&mut agent, "-TERM", Duration::from_secs(10));
        assert!(took.is_some(), "limit {limit}: SIGTERM ignored:\n{}", log());
        assert!(agent.wait().unwrap().success(), "limit {limit}:\n{}", log());
        assert!(
            run.join("state/state.json").exists(),
            "limit {limit}: no checkpoint"
        );
        assert!(
            !log().contains("Too many open files"),
            "limit {limit}:\n{}",
            log()
        );
    }
}

/// The JVM `pid`'s pause count per `gc` label, from `/metrics`.
fn pauses_by_bean(metrics: &str, pid: u32) -> std::collections::BTreeMap<String, f64> {
    let pid = format!("pid=\"{pid}\"");
    let mut beans = std::collections::BTreeMap::new();
    for line in metrics.lines() {
        if !line.starts_with("jvm_gc_pause_seconds_count{") || !line.contains(&pid) {
            continue;
        }
        let bean = line
            .split("gc=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next());
        if let (Some(bean), Some(value)) = (bean, common::line_value(line)) {
            *beans.entry(bean.to_string()).or_default() += value;
        }
    }
    beans
}

/// Case 7: a Parallel JVM killed and a G1 JVM started under the same pid
/// within one discovery interval. A record goes to the process its pid had
/// when it began, so the G1 JVM's records wait for its discovery instead of
/// going to the dead JVM's stream, and every pause of its log is counted
/// under its G1 beans.
#[test]
fn a_pid_reused_within_a_discovery_interval_is_another_jvm() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    let jvm = |collector: &str, seconds: &str, name: &str| {
        let json = dir.join(format!("{name}.json"));
        workload(
            Command::new("java"),
            &[collector],
            &classes,
            &marker,
            seconds,
            &json,
        )
    };
    children.spawn_job("parallel", &mut jvm("-XX:+UseParallelGC", "60", "parallel"));
    let pid = children.pid("parallel");
    // A long interval: the pid is reused between two scans.
    let settings = Settings {
        top: "",
        interval: "10s",
    };
    let agent = start_agent(&mut children, dir, &marker, settings);
    agent.metrics_when(Duration::from_secs(30), |m| {
        pauses_by_bean(m, pid).contains_key("PS Scavenge")
    });
    // Killed; the next process made gets its pid back.
    common::succeed(Command::new("kill").args(["-KILL", &pid.to_string()]));
    children.wait_until(Instant::now() + Duration::from_secs(10), "the kill", |c| {
        c.exited("parallel").is_some()
    });
    let mut reused = None;
    for attempt in 0..50 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).unwrap();
        let name = format!("g1-{attempt}");
        // Running past the next scan, which finds it.
        children.spawn_job(&name, &mut jvm("-XX:+UseG1GC", "15", &name));
        if children.pid(&name) == pid {
            reused = Some(name);
            break;
        }
        common::succeed(Command::new("kill").args(["-KILL", &children.pid(&name).to_string()]));
    }
    let reused = reused.expect("the pid was never given again");
    children.wait_until(
        Instant::now() + Duration::from_secs(60),
        "the G1 JVM",
        |c| c.exited(&reused).is_some(),
    );
    let truth = logged_pauses(&dir.join(format!("{reused}.stderr")));
    let parallel = logged_pauses(&dir.join("parallel.stderr"));
    // Found at the next scan, with the records it made before.
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        let beans = pauses_by_bean(m, pid);
        beans
            .keys()
            .filter(|b| b.starts_with("G1"))
            .map(|b| beans[b])
            .sum::<f64>()
            >= truth.0 as f64
    });
    let beans = pauses_by_bean(&metrics, pid);
    let g1: f64 = beans
        .iter()
        .filter(|(b, _)| b.starts_with("G1"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(g1, truth.0 as f64, "{beans:?}");
    let ps: f64 = beans
        .iter()
        .filter(|(b, _)| b.starts_with("PS"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        ps <= parallel.0 as f64,
        "{beans:?} against the Parallel JVM's {parallel:?}"
    );
}

/// Case 5: two JVMs of a local user that stop the world as fast as they
/// can (tens of thousands of safepoints a second between them, more than
/// the shared ring buffer holds between two polls) beside an innocent JVM.
/// Each process's budget in the BPF program keeps the flood from the ring
/// buffer: the innocent JVM loses nothing, and the flooding JVMs' minutes
/// say they lost records. The agent's loop is stalled for 4 s in the
/// middle (more than the ring buffer holds of the floods at their budgets),
/// as a slow disk or a loaded host stalls it: the ring buffer is read on a
/// thread of its own, so the stall loses nothing either.
#[test]
fn one_users_flood_of_safepoints_blinds_no_other_jvm() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    // Polled once a second: the ring buffer holds about 9,000 records.
    let settings = Settings {
        top: "poll_interval = \"1s\"",
        interval: "200ms",
    };
    let agent = start_agent(&mut children, dir, &marker, settings);
    for flood in ["flood-1", "flood-2"] {
        let mut command = as_user(ATTACKER, "java");
        command
            .args(["-Xmx32m", "-XX:+UseSerialGC", &marker, "-cp"])
            .arg(&classes)
            .args(["SafepointFlood", "12"]);
        children.spawn_job(flood, &mut command);
    }
    let json = dir.join("innocent.json");
    let mut innocent = workload(
        Command::new("java"),
        &["-XX:+UseSerialGC"],
        &classes,
        &marker,
        "8",
        &json,
    );
    children.spawn_job("innocent", &mut innocent);
    let pid = children.pid("innocent");
    std::thread::sleep(Duration::from_secs(2));
    stall_main_thread(agent.pid(), Duration::from_secs(4));
    for name in ["innocent", "flood-1", "flood-2"] {
        children.wait_until(Instant::now() + Duration::from_secs(60), name, |c| {
            c.exited(name).is_some()
        });
    }
    let truth = logged_pauses(&dir.join("innocent.stderr"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut counted = agent_pauses(&agent, pid);
    while counted.0 != truth.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        counted = agent_pauses(&agent, pid);
    }
    assert_eq!(
        counted.0, truth.0,
        "the innocent JVM's pauses against its own log"
    );
    let body = agent.get("/api/v1/minutes").unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let lost = |pid: u32| -> u64 {
        let jvms = json["jvms"].as_array().cloned().unwrap_or_default();
        let jvm = jvms
            .iter()
            .find(|j| j["labels"]["pid"] == pid.to_string().as_str());
        let minutes = jvm.map(|j| j["minutes"].as_array().cloned().unwrap_or_default());
        minutes
            .unwrap_or_default()
            .iter()
            .map(|m| m["records_lost"].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(lost(pid), 0, "the innocent JVM's minutes");
    for flood in ["flood-1", "flood-2"] {
        let flood_pid = children.pid(flood);
        assert!(
            lost(flood_pid) > 0,
            "{flood}'s minutes do not say they lost records"
        );
    }
    let metrics = agent.get("/metrics").unwrap_or_default();
    assert_eq!(
        common::sum(
            &metrics,
            "pausewatch_errors_total",
            &["ebpf_events_dropped"]
        ),
        0.0
    );
}

/// Stops the main thread of the process `pid` alone, where the agent's
/// loop runs, for `how_long`: a ptrace stop holds one thread, where
/// SIGSTOP would hold them all.
fn stall_main_thread(pid: u32, how_long: Duration) {
    let pid = pid as libc::pid_t;
    let null = std::ptr::null_mut::<libc::c_void>();
    // SAFETY: ptrace and waitpid on a child of this process, with no
    // memory passed but `status`; the same thread seizes and detaches.
    unsafe {
        assert_eq!(
            libc::ptrace(libc::PTRACE_SEIZE, pid, null, null),
            0,
            "seize"
        );
        assert_eq!(libc::ptrace(libc::PTRACE_INTERRUPT, pid, null, null), 0);
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, libc::__WALL), pid);
        assert!(libc::WIFSTOPPED(status), "stopped: {status:#x}");
        std::thread::sleep(how_long);
        assert_eq!(
            libc::ptrace(libc::PTRACE_DETACH, pid, null, null),
            0,
            "detach"
        );
    }
}

/// The agent's descriptors of BPF links (7 per library attached).
fn bpf_links(pid: u32) -> usize {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap();
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.to_string_lossy() == "anon_inode:bpf_link")
        .count()
}

/// Case 4: a local user's JVMs, each from a copy of the JDK of its own,
/// have at most 4 libraries attached for them (the rest are listed with
/// `attach_limit`); a JVM whose libjvm.so another non-root user owns is
/// not attached for (`untrusted_library`); and once the JVMs are gone,
/// their libraries are released.
#[test]
fn a_users_copies_of_libjvm_are_bounded_and_released() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    let (port, agent) = spawn_agent(dir, &marker, DEFAULTS);
    let agent_pid = agent.id();
    let agent = Agent::from_child(port, agent);
    agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
    let links_before = bpf_links(agent_pid);
    let mut pids = Vec::new();
    for i in 0..6 {
        let jdk = private_jdk(dir, &format!("jdk-{i}"));
        if i == 5 {
            // Another non-root user's file: theirs to change.
            std::os::unix::fs::chown(jdk.join("lib/server/libjvm.so"), Some(VICTIM.0), None)
                .unwrap();
        }
        let json = dir.join(format!("jvm-{i}.json"));
        let flags = ["-XX:+UseSerialGC", "-Dwl.rate=2"];
        let java = as_user(ATTACKER, jdk.join("bin/java"));
        let mut jvm = workload(java, &flags, &classes, &marker, "600", &json);
        let name = format!("jvm-{i}");
        children.spawn_service(&name, &mut jvm);
        pids.push(children.pid(&name));
    }
    let reasons = |metrics: &str| -> Vec<String> {
        pids.iter()
            .filter_map(|pid| common::discovered(metrics, *pid))
            .filter_map(|line| {
                let reason = line.split("ebpf_reason=\"").nth(1)?.split('"').next()?;
                Some(reason.to_string())
            })
            .collect()
    };
    let metrics = agent.metrics_when(Duration::from_secs(60), |m| reasons(m).len() == 6);
    let mut found = reasons(&metrics);
    found.sort();
    assert_eq!(
        found,
        ["", "", "", "", "attach_limit", "untrusted_library"],
        "{metrics}"
    );
    assert_eq!(bpf_links(agent_pid), links_before + 4 * 7);
    drop(children);
    let log = || std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    let released = || log().matches("eBPF safepoint probes released").count();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (bpf_links(agent_pid) > links_before || released() < 4) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        bpf_links(agent_pid),
        links_before,
        "not released:\n{}",
        log()
    );
    assert_eq!(released(), 4, "{}", log());
}

/// Case 5, the cross-check: a JVM that collects 30 times a second, its GC
/// log always a pause or two behind its counters, still has its log held
/// to its hsperfdata counters while it runs (it was compared only after a
/// second without a collection, so never).
#[test]
fn a_busy_jvms_log_is_held_to_its_counters_while_it_collects() {
    let _alone = crate::alone();
    let Some((dir, classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    let agent = start_agent(&mut children, dir, &marker, DEFAULTS);
    let log = dir.join("gc-busy.log");
    let xlog = format!("-Xlog:gc:file={}", log.display());
    let json = dir.join("busy.json");
    let flags = ["-XX:+UseParallelGC", "-Xmn4m", "-Dwl.rate=60", &xlog];
    let mut busy = workload(Command::new("java"), &flags, &classes, &marker, "30", &json);
    children.spawn_job("busy", &mut busy);
    let pid = format!("pid=\"{}\"", children.pid("busy"));
    let compared = |metrics: &str| {
        metrics.lines().any(|l| {
            l.starts_with("pausewatch_gc_log_counter_mismatch{")
                && l.contains(&pid)
                && l.contains("gc=\"PS Scavenge\"")
        })
    };
    let metrics = agent.metrics_when(Duration::from_secs(20), compared);
    assert!(
        children.exited("busy").is_none(),
        "compared only once it stopped"
    );
    let collections = common::sum(&metrics, "jvm_gc_pause_seconds_count", &[&pid]);
    assert!(collections >= 30.0, "{collections} collections");
    let mismatch = common::sum(&metrics, "pausewatch_gc_log_counter_mismatch", &[&pid]);
    assert_eq!(mismatch, 0.0, "{metrics}");
}

/// Writes, as Python, an ELF64 file at `path` whose `.note.stapsdt`
/// section has `sites` probe sites of `hs_private:safepoint__begin`.
const CRAFTED_ELF: &str = r#"
import struct, sys
path, sites = sys.argv[1], int(sys.argv[2])
desc = struct.pack("<QQQ", 0x1000, 0, 0) + b"hs_private\0safepoint__begin\0\0"
note = struct.pack("<III", 8, len(desc), 3) + b"stapsdt\0" + desc + b"\0" * (-len(desc) % 4)
names = b"\0.shstrtab\0.note.stapsdt\0"
notes_at = 64
notes = note * sites
names_at = notes_at + len(notes)
table = names_at + len(names)
header = bytearray(64)
header[0:6] = b"\x7fELF\x02\x01"
header[0x28:0x30] = struct.pack("<Q", table)
header[0x3A:0x40] = struct.pack("<HHH", 64, 3, 1)
def section(name, at, size):
    entry = bytearray(64)
    entry[0:4] = struct.pack("<I", name)
    entry[0x18:0x28] = struct.pack("<QQ", at, size)
    return bytes(entry)
with open(path, "wb") as out:
    out.write(bytes(header) + notes + names + bytes(64) + section(1, names_at, len(names)) + section(11, notes_at, len(notes)))
"#;

/// A process named `java` that shows a JVM's sign (a thread it names `VM
/// Thread`), maps the file `argv[1]`, says it is ready at `argv[2]`, and waits.
const SIGNED_FAKE_JVM: &str = r#"
import ctypes, mmap, sys, threading, time
libc = ctypes.CDLL(None)
def vm_thread():
    libc.prctl(15, b"VM Thread", 0, 0, 0)
    time.sleep(600)
threading.Thread(target=vm_thread, daemon=True).start()
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
time.sleep(0.5)
open(sys.argv[2], "w").close()
time.sleep(600)
"#;

/// Case 4, the crafted file: a local user's process with a JVM's sign maps
/// a libjvm.so of their own with 200,000 probe sites. The agent reads its
/// notes' size before libbpf parses anything, refuses it at once, and
/// neither grows nor stops answering.
#[test]
fn a_libjvm_with_absurdly_many_probe_sites_is_refused_before_it_is_parsed() {
    let _alone = crate::alone();
    let Some((dir, _classes, marker)) = prepared() else {
        return;
    };
    let dir = dir.path();
    let mut children = Children::new(dir);
    let attacker_dir = owned_dir(dir, "attacker", ATTACKER);
    let library = attacker_dir.join("lib/server/libjvm.so");
    std::fs::create_dir_all(library.parent().unwrap()).unwrap();
    common::succeed(
        Command::new("python3")
            .args(["-c", CRAFTED_ELF])
            .arg(&library)
            .arg("200000"),
    );
    common::succeed(Command::new("chown").args(["-R", "7:7"]).arg(&attacker_dir));
    let ready = attacker_dir.join("ready");
    let mut fake = as_user(ATTACKER, "bash");
    fake.args([
        "-c",
        "exec -a java python3 -c \"$0\" \"$@\"",
        SIGNED_FAKE_JVM,
    ])
    .arg(&library)
    .arg(&ready)
    .arg(&marker);
    children.spawn_service("crafted", &mut fake);
    let pid = children.pid("crafted");
    children.wait_until(
        Instant::now() + Duration::from_secs(10),
        "the crafted file mapped",
        |_| ready.exists(),
    );
    let (port, agent) = spawn_agent(dir, &marker, DEFAULTS);
    let agent_pid = agent.id();
    let agent = Agent::from_child(port, agent);
    let started = Instant::now();
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        common::discovered(m, pid).is_some()
    });
    let line = common::discovered(&metrics, pid).unwrap();
    assert!(line.contains("ebpf_reason=\"not_a_library\""), "{line}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (status, body) = common::http_get(port, "/healthz").unwrap();
    assert_eq!(status, 200, "{body}");
    let peak_kib = common::peak_rss_kib(agent_pid);
    assert!(peak_kib < 64 << 10, "peak RSS {peak_kib} KiB");
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(log.contains("probe notes, more than any JDK's"), "{log}");
}
