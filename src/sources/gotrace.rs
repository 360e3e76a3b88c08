//! Go programs that trace their GC into a file: a process with `gctrace=N`
//! (N ≥ 1) in its `GODEBUG` whose stderr is a regular file writes one line per
//! collection cycle there, which the agent follows without configuration,
//! as it follows the GC log a JVM's options name.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::discovery::{container_id, is_alive};
use super::procfs::{boot_time, processes, start_ticks, wall_clock};
use super::{gc_log::GcLogSource, Source, SourceCheckpoint, SourceKey};
use crate::store::{AgentState, Store, StreamId};

/// How often a followed Go program is checked for having exited.
const LIVENESS_CHECK_EVERY: Duration = Duration::from_secs(1);

/// One Go program tracing its GC into a file, as found at a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct GoProcess {
    pub pid: u32,
    pub start_ticks: u64,
    pub started: DateTime<Utc>,
    /// The executable's file name: the job-like name of its series.
    pub program: String,
    pub command_line: String,
    /// Its stderr, as the agent opens it (through /proc/PID/root when the
    /// program runs in another mount namespace).
    pub trace: PathBuf,
    pub container: Option<String>,
}

impl GoProcess {
    /// The labels of its series: `pid`, `program`, `container` when there is one.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("pid".to_string(), self.pid.to_string()),
            ("program".to_string(), self.program.clone()),
        ]);
        if let Some(container) = &self.container {
            labels.insert("container".to_string(), container.clone());
        }
        labels
    }
}

/// Whether an environment (`/proc/PID/environ`: `NAME=value` separated by
/// NULs) turns the GC trace on: `GODEBUG` holds `gctrace=N` with N ≥ 1.
/// As in the runtime, the first `GODEBUG` counts, and its last `gctrace`.
pub fn traces_gc(environ: &[u8]) -> bool {
    let Some(godebug) = environ
        .split(|&b| b == 0)
        .find_map(|variable| variable.strip_prefix(b"GODEBUG="))
    else {
        return false;
    };
    let godebug = String::from_utf8_lossy(godebug);
    godebug
        .split(',')
        .filter_map(|setting| setting.trim().strip_prefix("gctrace="))
        .next_back()
        .and_then(|level| level.parse::<u32>().ok())
        .is_some_and(|level| level >= 1)
}

/// The file the process in `dir` (`/proc/PID`) traces its GC into: its
/// stderr, when its environment turns the trace on and stderr is a regular
/// file (not a terminal, pipe or socket).
pub fn gctrace_file(proc_root: &Path, dir: &Path) -> Option<PathBuf> {
    let environ = std::fs::read(dir.join("environ")).ok()?;
    if !traces_gc(&environ) {
        return None;
    }
    // `metadata` follows the descriptor's link to the open file itself.
    if !std::fs::metadata(dir.join("fd/2")).ok()?.is_file() {
        return None;
    }
    let target = std::fs::read_link(dir.join("fd/2")).ok()?;
    let other_namespace = std::fs::read_link(dir.join("ns/mnt")).ok()
        != std::fs::read_link(proc_root.join("self/ns/mnt")).ok();
    let path = if other_namespace {
        dir.join("root")
            .join(target.strip_prefix("/").unwrap_or(&target))
    } else {
        target
    };
    path.exists().then_some(path)
}

/// Scans /proc for Go programs tracing their GC to a file. Each process
/// (pid and start) is examined once: the environment does not change
/// after exec.
pub struct GoScanner {
    proc_root: PathBuf,
    /// Processes already examined, by pid, with their start.
    examined: HashMap<u32, u64>,
}

impl GoScanner {
    pub fn new(proc_root: PathBuf) -> GoScanner {
        GoScanner {
            proc_root,
            examined: HashMap::new(),
        }
    }

    /// The Go programs tracing their GC to a file that started since the last scan.
    pub fn scan(&mut self) -> Vec<GoProcess> {
        let boot = boot_time(&self.proc_root).unwrap_or(0);
        let mut found = Vec::new();
        let mut alive = HashMap::with_capacity(self.examined.len());
        for (pid, dir) in processes(&self.proc_root) {
            let Some(ticks) = start_ticks(&self.proc_root, pid) else {
                continue;
            };
            alive.insert(pid, ticks);
            if self.examined.get(&pid) == Some(&ticks) {
                continue;
            }
            let Some(trace) = gctrace_file(&self.proc_root, &dir) else {
                continue;
            };
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let arguments: Vec<String> = cmdline
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let executable = std::fs::read_link(dir.join("exe"))
                .ok()
                .or_else(|| arguments.first().map(PathBuf::from));
            let program = executable
                .as_deref()
                .and_then(Path::file_name)
                .map_or_else(|| "go".to_string(), |n| n.to_string_lossy().into_owned());
            let cgroup = std::fs::read_to_string(dir.join("cgroup")).unwrap_or_default();
            found.push(GoProcess {
                pid,
                start_ticks: ticks,
                started: wall_clock(boot, ticks),
                program,
                command_line: arguments.join(" "),
                trace,
                container: container_id(&cgroup),
            });
        }
        // Every live process stays examined: one found not tracing is not
        // read again, one found tracing is followed until it exits.
        self.examined = alive;
        found
    }
}

/// The GC trace of a discovered Go program: read like a discovered JVM's
/// log, and gone, with its series, once the program has exited and the file
/// has been quiet for a grace period. A program started again into the same
/// file (`2>>`) keeps the stream going: its lines are a restart.
pub struct GoTraceSource {
    trace: GcLogSource,
    proc_root: PathBuf,
    pid: u32,
    start_ticks: u64,
    grace: Duration,
    last_check: Option<Instant>,
    exited: bool,
    last_data: Instant,
}

impl GoTraceSource {
    pub fn new(
        trace: GcLogSource,
        process: &GoProcess,
        proc_root: PathBuf,
        grace: Duration,
    ) -> GoTraceSource {
        GoTraceSource {
            trace,
            proc_root,
            pid: process.pid,
            start_ticks: process.start_ticks,
            grace,
            last_check: None,
            exited: false,
            last_data: Instant::now(),
        }
    }
}

impl Source for GoTraceSource {
    fn key(&self) -> SourceKey {
        self.trace.key()
    }

    fn poll(&mut self, store: &Store) -> bool {
        let changed = self.trace.poll(store);
        if changed {
            self.last_data = Instant::now();
        }
        if !self.exited
            && self
                .last_check
                .is_none_or(|at| at.elapsed() >= LIVENESS_CHECK_EVERY)
        {
            self.last_check = Some(Instant::now());
            if !is_alive(&self.proc_root, self.pid, self.start_ticks) {
                tracing::info!(pid = self.pid, grace = %humantime::format_duration(self.grace), "Go program exited; its series go after the grace period");
                self.exited = true;
            }
        }
        changed
    }

    fn checkpoint(&self, state: &AgentState) -> Option<SourceCheckpoint> {
        self.trace.checkpoint(state)
    }

    fn watch_dir(&self) -> Option<&Path> {
        self.trace.watch_dir()
    }

    fn live_path(&self) -> Option<&Path> {
        self.trace.live_path()
    }

    fn due(&self) -> bool {
        self.trace.due() || !self.exited
    }

    fn stream(&self) -> Option<StreamId> {
        self.trace.stream()
    }

    fn gone(&self) -> bool {
        self.exited && self.last_data.elapsed() >= self.grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gctrace_in_godebug_turns_the_trace_on() {
        let on = [
            &b"PATH=/bin\0GODEBUG=gctrace=1\0"[..],
            b"GODEBUG=madvdontneed=1,gctrace=2",
            b"GODEBUG=gctrace=1\0X=1\0GODEBUG=gctrace=0\0",
        ];
        for environ in on {
            assert!(traces_gc(environ), "{}", String::from_utf8_lossy(environ));
        }
        let off = [
            &b"PATH=/bin\0"[..],
            b"GODEBUG=gctrace=0",
            b"GODEBUG=gctrace=1,gctrace=0",
            b"XGODEBUG=gctrace=1",
            b"GODEBUG=scavtrace=1",
            b"GODEBUG=gctrace=x",
            b"GODEBUG=gctrace=0\0X=1\0GODEBUG=gctrace=1\0",
        ];
        for environ in off {
            assert!(!traces_gc(environ), "{}", String::from_utf8_lossy(environ));
        }
    }

    /// This test process neither traces its GC nor is a Go program.
    #[test]
    fn a_process_without_gctrace_has_no_trace_file() {
        let proc_root = Path::new("/proc");
        let dir = proc_root.join(std::process::id().to_string());
        assert_eq!(gctrace_file(proc_root, &dir), None);
    }
}
