//! Finding the start time of the running process that writes a GC log,
//! from the shared [`ProcTable`], for logs decorated with uptime only:
//! without it their pauses cannot be placed in wall-clock time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::discovery::gc_log_files;
use super::gotrace::gctrace_file;
use super::proc_table::{ProcEntry, ProcTable};

/// How often /proc is scanned at most: a host with hundreds of processes and
/// hundreds of uptime-only logs must not pay for a scan on every poll.
const SCAN_EVERY: Duration = Duration::from_secs(10);
/// A new file may ask for a scan sooner, but not more often than this.
const FRESH_SCAN_EVERY: Duration = Duration::from_secs(1);

/// The real path of a file, or of where it will be when it does not exist
/// yet (a log not created, a JDK 8 ring, which no file is called after).
pub(super) fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map_or_else(|_| path.to_path_buf(), |dir| dir.join(name)),
        _ => path.to_path_buf(),
    }
}

/// A process as last scanned: its start (which tells a reused pid apart)
/// and the real paths of the GC log files of its command line (every name
/// each may have) or of its Go GC trace, read once per process.
struct Process {
    start_ticks: u64,
    logs: Vec<PathBuf>,
}

/// Which running process writes which `-Xlog` file (or Go GC trace, its
/// stderr), for logs decorated with uptime only. One finder serves every GC
/// log source, on the registry's [`ProcTable`].
pub struct JvmLogWriters {
    table: Arc<Mutex<ProcTable>>,
    processes: HashMap<u32, Process>,
    /// The table's generation `processes` was built from.
    generation: Option<u64>,
    /// The real path of each log asked about. Resolving one costs a
    /// `readlink` per path component, and every uptime-only stream asks
    /// every few seconds; the answer only matters against the processes'
    /// logs, so it is resolved again when the table's processes change.
    real_paths: HashMap<PathBuf, PathBuf>,
}

/// A finder on a table of the host's /proc of its own.
impl Default for JvmLogWriters {
    fn default() -> Self {
        JvmLogWriters::new(Arc::new(Mutex::new(ProcTable::new(PathBuf::from("/proc")))))
    }
}

impl JvmLogWriters {
    pub fn new(table: Arc<Mutex<ProcTable>>) -> JvmLogWriters {
        JvmLogWriters {
            table,
            processes: HashMap::new(),
            generation: None,
            real_paths: HashMap::new(),
        }
    }

    /// Start time of the process that writes `log`, if one runs. /proc is
    /// scanned again when the table's last scan is older than
    /// [`SCAN_EVERY`], or [`FRESH_SCAN_EVERY`] when `fresh` (a file seen for
    /// the first time, whose JVM may just have started).
    pub fn start_of(&mut self, log: &Path, fresh: bool) -> Option<DateTime<Utc>> {
        let due = if fresh { FRESH_SCAN_EVERY } else { SCAN_EVERY };
        let table = self.table.clone();
        let mut table = table.lock().unwrap_or_else(PoisonError::into_inner);
        table.refresh_within(due);
        if self.generation != Some(table.generation()) {
            self.update(&table);
            self.real_paths.clear();
        }
        let wanted = self
            .real_paths
            .entry(log.to_path_buf())
            .or_insert_with(|| canonical(log));
        let ticks = self
            .processes
            .values()
            .find(|p| p.logs.contains(wanted))?
            .start_ticks;
        table.started(ticks)
    }

    /// Keeps the logs of the processes still running; reads those of
    /// processes not seen before (or whose pid was reused).
    fn update(&mut self, table: &ProcTable) {
        self.generation = Some(table.generation());
        let mut seen = HashMap::with_capacity(self.processes.len());
        for entry in table.entries() {
            let process = match self.processes.remove(&entry.pid) {
                Some(known) if known.start_ticks == entry.start_ticks => known,
                _ => Process {
                    start_ticks: entry.start_ticks,
                    logs: written_logs(table, entry),
                },
            };
            seen.insert(entry.pid, process);
        }
        self.processes = seen;
    }
}

/// The real paths of the files a process's `-Xlog` options name, and of its
/// Go GC trace.
fn written_logs(table: &ProcTable, entry: &ProcEntry) -> Vec<PathBuf> {
    let start = table.started(entry.start_ticks);
    let go_trace = gctrace_file(entry);
    gc_log_files(&entry.cwd(), entry.pid, start, &entry.arguments)
        .iter()
        .flatten()
        .chain(&go_trace)
        .map(|file| canonical(file))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::proc_table::tests::fake_process;
    use super::*;

    #[test]
    fn a_jvms_command_line_is_read_once_and_a_reused_pid_read_again() {
        let root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let log = cwd.path().join("gc.log");
        std::fs::write(&log, "").unwrap();
        let java = |ticks, cmdline: &str| {
            fake_process(root.path(), 4242, ticks, cmdline, "", cwd.path());
        };
        java(1234, "java -Xlog:gc:file=gc.log -jar app.jar");
        let table = Arc::new(Mutex::new(ProcTable::new(root.path().to_path_buf())));
        let mut writers = JvmLogWriters::new(table.clone());
        let tick = procfs::ticks_per_second() as i64;
        let expected =
            DateTime::from_timestamp_nanos(1_800_000_000_000_000_000 + 1234 * 1_000_000_000 / tick);
        assert_eq!(writers.start_of(&log, true), Some(expected));
        // Same process (same start): its log files are not read again.
        java(1234, "java -jar other.jar");
        table.lock().unwrap().refresh();
        assert_eq!(writers.start_of(&log, false), Some(expected));
        // Within the scan period nothing is read at all.
        java(999, "java -jar other.jar");
        assert_eq!(writers.start_of(&log, false), Some(expected));
        // The pid reused by another process: read again, no longer the writer.
        table.lock().unwrap().refresh();
        assert_eq!(writers.start_of(&log, false), None);
    }

    /// A log's real path is resolved once while the processes stay the
    /// same, and again when they change: a symlink moved to the file a new
    /// JVM writes is then found.
    #[test]
    fn a_logs_real_path_is_cached_until_the_processes_change() {
        let root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("old.log"), "").unwrap();
        std::fs::write(cwd.path().join("new.log"), "").unwrap();
        let link = cwd.path().join("current.log");
        std::os::unix::fs::symlink("old.log", &link).unwrap();
        fake_process(
            root.path(),
            1,
            10,
            "java -Xlog:gc:file=new.log Main",
            "",
            cwd.path(),
        );
        let table = Arc::new(Mutex::new(ProcTable::new(root.path().to_path_buf())));
        let mut writers = JvmLogWriters::new(table.clone());
        assert_eq!(writers.start_of(&link, true), None);
        assert_eq!(writers.real_paths.len(), 1);
        // Retargeted, with the same processes: the cached answer stands.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("new.log", &link).unwrap();
        table.lock().unwrap().refresh();
        assert_eq!(writers.start_of(&link, false), None);
        // A process more: resolved again, and found.
        fake_process(root.path(), 2, 20, "sleep 1", "", cwd.path());
        table.lock().unwrap().refresh();
        assert!(writers.start_of(&link, false).is_some());
    }
}
