//! Helpers shared by the integration tests that run the agent as a process.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `pausewatch run --config FILE` as a child process, killed when dropped.
pub struct Agent {
    pub port: u16,
    child: Child,
}

impl Agent {
    /// Writes `config` (which must listen on `port`) into `dir` and starts the agent.
    pub fn start(dir: &Path, port: u16, config: &str) -> Agent {
        let path = dir.join("pausewatch.toml");
        std::fs::write(&path, config).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_pausewatch"))
            .args(["run", "--config"])
            .arg(&path)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Agent { port, child }
    }

    /// GET `path` over HTTP/1.0; the body, or `None` while the agent is not up.
    pub fn get(&self, path: &str) -> Option<String> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
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
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// Sum of every sample of `name` whose line contains all of `contains`.
pub fn sum(metrics: &str, name: &str, contains: &[&str]) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with(name) && line[name.len()..].starts_with(['{', ' ']))
        .filter(|line| contains.iter().all(|c| line.contains(c)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Whether `java` and `javac` run; prints a loud SKIPPED line when they do not.
pub fn java_or_skip(test: &str) -> bool {
    let available = ["java", "javac"].iter().all(|tool| {
        Command::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !available {
        eprintln!("*** SKIPPED {test}: java/javac not installed ***");
    }
    available
}

/// Compiles the Java workloads in tests/workload into `dir`.
pub fn compile_workloads(dir: &Path) {
    let sources: Vec<_> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workload"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "java"))
            .collect();
    let status = Command::new("javac")
        .args(["--release", "17", "-d"])
        .arg(dir)
        .args(&sources)
        .status()
        .unwrap();
    assert!(status.success(), "javac failed");
}
