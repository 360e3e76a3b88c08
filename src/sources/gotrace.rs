//! Go programs that trace their GC into a file: a process with `gctrace=N`
//! (N ≥ 1) in its `GODEBUG` whose stderr is a regular file writes one line per
//! collection cycle there, which the agent follows without configuration,
//! as it follows the GC log a JVM's options name.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::proc_table::{cpu_seconds, is_alive, ProcEntry, ProcTable};
use super::reading::{CpuGrowth, Reading, Update};
use super::{gc_log::GcLogSource, Source, SourceCheckpoint, SourceKey};
use crate::model::minutes::minute_of;
use crate::store::{AgentState, StreamId};

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
    /// Its default `service` label, by the JVMs' rule
    /// (`discovery::service_of`): a dashboard's `$service` selects it.
    pub service: String,
}

impl GoProcess {
    /// The labels of its series: `pid`, `program`, `service`, `container`
    /// when there is one.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("pid".to_string(), self.pid.to_string()),
            ("program".to_string(), self.program.clone()),
            ("service".to_string(), self.service.clone()),
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

/// The file a process traces its GC into, as the agent opens it: its
/// stderr, when its environment turns the trace on and stderr is a regular
/// file (not a terminal, pipe or socket).
pub fn gctrace_file(entry: &ProcEntry) -> Option<PathBuf> {
    if !traces_gc(&entry.environ()) {
        return None;
    }
    let path = entry.seen(&entry.stderr_file()?);
    path.exists().then_some(path)
}

/// Finds Go programs tracing their GC to a file in the table. Each process
/// (pid and start) is examined once: the environment does not change
/// after exec.
#[derive(Default)]
pub struct GoScanner {
    /// Processes already examined, by pid, with their start.
    examined: HashMap<u32, u64>,
}

impl GoScanner {
    /// The Go programs tracing their GC to a file that started since the last scan.
    pub fn scan(&mut self, table: &ProcTable) -> Vec<GoProcess> {
        let mut found = Vec::new();
        let mut alive = HashMap::with_capacity(self.examined.len());
        for entry in table.entries() {
            alive.insert(entry.pid, entry.start_ticks);
            if self.examined.get(&entry.pid) == Some(&entry.start_ticks) {
                continue;
            }
            let Some(trace) = gctrace_file(entry) else {
                continue;
            };
            let executable = entry
                .exe()
                .or_else(|| entry.arguments.first().map(PathBuf::from));
            let program = executable
                .as_deref()
                .and_then(Path::file_name)
                .map_or_else(|| "go".to_string(), |n| n.to_string_lossy().into_owned());
            let service = super::discovery::service_of(&entry.environ(), &program);
            found.push(GoProcess {
                service,
                pid: entry.pid,
                start_ticks: entry.start_ticks,
                started: table.started(entry.start_ticks).unwrap_or_default(),
                program,
                command_line: entry.arguments.join(" "),
                trace,
                container: entry.container(),
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
    /// The program's CPU seconds at the last check: their growth goes into
    /// the minute beside the collector's CPU its gctrace lines give.
    cpu_seconds: Option<f64>,
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
            cpu_seconds: None,
        }
    }
}

impl GoTraceSource {
    /// Adds the program's CPU since the last check to the current minute,
    /// so that its collector's CPU is also a share of the process's.
    fn add_process_cpu(&mut self, reading: &mut Reading) {
        let Some(now) = cpu_seconds(&self.proc_root, self.pid) else {
            return;
        };
        let before = self.cpu_seconds.replace(now);
        let (Some(before), Some(id)) = (before, self.trace.stream()) else {
            return;
        };
        let growth = CpuGrowth {
            minute: minute_of(Utc::now()),
            gc_seconds: 0.0,
            process_seconds: (now - before).max(0.0),
            cpus: None,
        };
        reading.push(Update::Cpu { stream: id, growth });
    }
}

impl Source for GoTraceSource {
    fn key(&self) -> SourceKey {
        self.trace.key()
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        let changed = self.trace.poll(reading);
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
            } else {
                self.add_process_cpu(reading);
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

    fn wake_in(&self) -> Option<Duration> {
        self.trace.wake_in()
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
    use super::super::proc_table::tests::fake_process;
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
        let mut table = ProcTable::new(PathBuf::from("/proc"));
        table.refresh();
        let own = std::process::id();
        let me = table.entries().find(|e| e.pid == own).unwrap();
        assert_eq!(gctrace_file(me), None);
    }

    /// A process in a fake /proc with `gctrace=1` and its stderr in a file.
    #[test]
    fn a_go_program_with_gctrace_into_a_file_is_found_once() {
        let root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let trace = cwd.path().join("trace.log");
        std::fs::write(&trace, "").unwrap();
        let dir = fake_process(
            root.path(),
            31,
            50,
            "./server -port 1",
            "GODEBUG=gctrace=1\0",
            cwd.path(),
        );
        std::fs::create_dir(dir.join("fd")).unwrap();
        std::os::unix::fs::symlink(&trace, dir.join("fd/2")).unwrap();
        fake_process(
            root.path(),
            32,
            50,
            "./quiet",
            "GODEBUG=gctrace=0\0",
            cwd.path(),
        );
        let mut table = ProcTable::new(root.path().to_path_buf());
        table.refresh();
        let mut scanner = GoScanner::default();
        let found = scanner.scan(&table);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].pid, &found[0].trace), (31, &trace));
        assert_eq!(found[0].program, "server");
        assert_eq!(found[0].command_line, "./server -port 1");
        assert!(scanner.scan(&table).is_empty());
    }
}
