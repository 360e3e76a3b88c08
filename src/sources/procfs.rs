//! Finding the start time of the running JVM that writes a GC log, from
//! `/proc`, for logs decorated with uptime only: without it their pauses
//! cannot be placed in wall-clock time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// Linux reports process start times in USER_HZ ticks, 100 on every
/// mainstream architecture.
const TICKS_PER_SECOND: f64 = 100.0;
/// How often /proc is scanned at most: a host with hundreds of processes and
/// hundreds of uptime-only logs must not pay for a scan on every poll.
const SCAN_EVERY: Duration = Duration::from_secs(10);
/// A new file may ask for a scan sooner, but not more often than this.
const FRESH_SCAN_EVERY: Duration = Duration::from_secs(1);

/// The processes in `proc_root`: each pid and its directory.
pub(super) fn processes(proc_root: &Path) -> impl Iterator<Item = (u32, PathBuf)> {
    let entries = std::fs::read_dir(proc_root).into_iter().flatten().flatten();
    entries.filter_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
        Some((pid, entry.path()))
    })
}

/// Boot time, seconds since the epoch (`btime` in /proc/stat).
pub(super) fn boot_time(proc_root: &Path) -> Option<i64> {
    let stat = std::fs::read_to_string(proc_root.join("stat")).ok()?;
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// Fields of /proc/PID/stat by their number in proc(5), 1-based, past the
/// command name (field 2), which may itself hold spaces and parentheses.
fn stat_fields<const N: usize>(
    proc_root: &Path,
    pid: u32,
    numbers: [usize; N],
) -> Option<[u64; N]> {
    let stat = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    let after_name: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let mut values = [0; N];
    for (value, number) in values.iter_mut().zip(numbers) {
        *value = after_name.get(number.checked_sub(3)?)?.parse().ok()?;
    }
    Some(values)
}

/// Start of a process in ticks after boot (field 22).
pub(super) fn start_ticks(proc_root: &Path, pid: u32) -> Option<u64> {
    stat_fields(proc_root, pid, [22]).map(|[ticks]| ticks)
}

/// CPU time a process used, user (field 14) plus system (field 15), in seconds.
pub(super) fn cpu_seconds(proc_root: &Path, pid: u32) -> Option<f64> {
    stat_fields(proc_root, pid, [14, 15])
        .map(|[user, system]| (user + system) as f64 / TICKS_PER_SECOND)
}

pub(super) fn wall_clock(boot: i64, ticks: u64) -> DateTime<Utc> {
    let nanos = (boot as f64 * 1e9 + ticks as f64 / TICKS_PER_SECOND * 1e9) as i64;
    DateTime::from_timestamp_nanos(nanos)
}

/// The files a JVM's GC logging options send `gc`-tagged output to, as
/// HotSpot names them, relative paths from `cwd`: each `-Xlog` option with
/// the `gc` tag writing to a file, and the last `-Xloggc:PATH`. One entry per
/// file, with the names it may have, most likely first: `-Xloggc`'s `%p` is
/// `pid1234` on JDK 8 (only in the file name) and `1234` on JDK 9+, where
/// `-Xloggc` means `-Xlog:gc:file=PATH`. The first `%p` is the JVM's own
/// (possibly namespaced) pid, the first `%t` its start (`YYYY-MM-DD_HH-MM-SS`,
/// local time; the caller may look a second around it). A JDK 8 rotation
/// ring (`-XX:+UseGCLogFileRotation`) is named `PATH`, as the follower
/// follows it.
pub(super) fn gc_log_files(
    cwd: &Path,
    pid: u32,
    started: Option<DateTime<Utc>>,
    arguments: &[String],
) -> Vec<Vec<PathBuf>> {
    let stamp = started.map(|start| {
        let stamp = start.with_timezone(&chrono::Local);
        stamp.format("%Y-%m-%d_%H-%M-%S").to_string()
    });
    let expand = |path: &str, pid: &str| {
        let path = path.replacen("%p", pid, 1);
        match &stamp {
            Some(stamp) => path.replacen("%t", stamp, 1),
            None => path,
        }
    };
    let mut files: Vec<Vec<PathBuf>> = arguments
        .iter()
        .filter_map(|a| a.strip_prefix("-Xlog:"))
        .filter_map(|option| {
            let mut parts = split_unquoted(option, ':');
            let selectors = parts.next()?;
            let file = parts.next()?.strip_prefix("file=")?;
            let file = file.trim_matches('"');
            writes_gc(selectors).then(|| vec![cwd.join(expand(file, &pid.to_string()))])
        })
        .collect();
    let loggc = arguments
        .iter()
        .rev()
        .find_map(|a| a.strip_prefix("-Xloggc:"));
    if let Some(path) = loggc.filter(|path| !path.is_empty()) {
        let (dir, name) = path.rsplit_once('/').map_or(("", path), |(d, n)| (d, n));
        let jdk8_name = expand(name, &format!("pid{pid}"));
        let jdk8 = if dir.is_empty() && !path.starts_with('/') {
            jdk8_name
        } else {
            format!("{dir}/{jdk8_name}")
        };
        let mut names = vec![cwd.join(jdk8)];
        let unified = cwd.join(expand(path, &pid.to_string()));
        if !names.contains(&unified) {
            names.push(unified);
        }
        files.push(names);
    }
    files
}

/// Whether an `-Xlog` selection (`gc*,safepoint=info`) includes the `gc` tag.
fn writes_gc(selectors: &str) -> bool {
    selectors.split(',').any(|selector| {
        let tags = selector.split('=').next().unwrap_or("");
        tags.split('+').any(|tag| tag.trim_end_matches('*') == "gc")
    })
}

/// `text` split at `separator`s outside double quotes.
fn split_unquoted(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    text.split(move |c| {
        if c == '"' {
            quoted = !quoted;
        }
        c == separator && !quoted
    })
}

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
/// and the GC log files of its command line (every name each may have),
/// read once per process.
struct Process {
    start_ticks: u64,
    logs: Vec<PathBuf>,
}

/// Which running process writes which `-Xlog` file (or Go GC trace, its
/// stderr), for logs decorated with uptime only: without their JVM's start their pauses cannot be placed in
/// wall-clock time. One finder serves every GC log source.
pub struct JvmLogWriters {
    proc_root: PathBuf,
    processes: HashMap<u32, Process>,
    boot: Option<i64>,
    last_scan: Option<Instant>,
}

impl Default for JvmLogWriters {
    fn default() -> Self {
        JvmLogWriters::at(PathBuf::from("/proc"))
    }
}

impl JvmLogWriters {
    fn at(proc_root: PathBuf) -> JvmLogWriters {
        JvmLogWriters {
            proc_root,
            processes: HashMap::new(),
            boot: None,
            last_scan: None,
        }
    }

    /// Start time of the process whose `-Xlog` writes `log`, if one runs.
    /// /proc is scanned again when the last scan is older than
    /// [`SCAN_EVERY`], or [`FRESH_SCAN_EVERY`] when `fresh` (a file seen for
    /// the first time, whose JVM may just have started).
    pub fn start_of(&mut self, log: &Path, fresh: bool) -> Option<DateTime<Utc>> {
        let due = if fresh { FRESH_SCAN_EVERY } else { SCAN_EVERY };
        if self.last_scan.is_none_or(|at| at.elapsed() >= due) {
            self.scan();
        }
        let wanted = canonical(log);
        let ticks = self
            .processes
            .values()
            .find(|p| p.logs.contains(&wanted))?
            .start_ticks;
        Some(wall_clock(self.boot?, ticks))
    }

    /// Reads every process's start; the command line only of processes not
    /// seen before (or whose pid was reused).
    fn scan(&mut self) {
        self.last_scan = Some(Instant::now());
        self.boot = boot_time(&self.proc_root);
        let mut seen = HashMap::with_capacity(self.processes.len());
        for (pid, _) in processes(&self.proc_root) {
            let Some(start_ticks) = start_ticks(&self.proc_root, pid) else {
                continue;
            };
            let process = match self.processes.remove(&pid) {
                Some(known) if known.start_ticks == start_ticks => known,
                _ => Process {
                    start_ticks,
                    logs: self.xlog_logs(pid, start_ticks),
                },
            };
            seen.insert(pid, process);
        }
        self.processes = seen;
    }

    fn xlog_logs(&self, pid: u32, start_ticks: u64) -> Vec<PathBuf> {
        let dir = self.proc_root.join(pid.to_string());
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            return Vec::new();
        };
        let arguments: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let cwd = std::fs::read_link(dir.join("cwd")).unwrap_or_default();
        let start = self.boot.map(|boot| wall_clock(boot, start_ticks));
        let go_trace = super::gotrace::gctrace_file(&self.proc_root, &dir);
        gc_log_files(&cwd, pid, start, &arguments)
            .iter()
            .flatten()
            .chain(&go_trace)
            .map(|file| canonical(file))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xlog_file_options_are_resolved_and_expanded() {
        let arguments = [
            "java".to_string(),
            "-Xlog:gc*,safepoint:file=logs/gc-%p.log:uptime:filecount=5".to_string(),
            "-Xlog:gc:file=\"/var/log/a b/gc.log\"".to_string(),
        ];
        let cwd = std::env::current_dir().unwrap();
        let files = gc_log_files(&cwd, std::process::id(), None, &arguments);
        assert_eq!(
            files[0],
            [cwd.join(format!("logs/gc-{}.log", std::process::id()))]
        );
        assert_eq!(files[1], [PathBuf::from("/var/log/a b/gc.log")]);
    }

    #[test]
    fn only_gc_outputs_count_and_only_the_first_p_and_t_are_expanded() {
        let arguments = [
            "-Xlog:safepoint:file=sp.log".to_string(),
            "-Xlog:gc+heap=debug:file=\"/l/a:b-%p-%p.log\"".to_string(),
            "-Xlog:gc:stdout".to_string(),
            "-Xlog:os+gc*,class:file=/l/gc-%t-%t.log:time".to_string(),
        ];
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let local = start
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d_%H-%M-%S");
        let files = gc_log_files(Path::new("/w"), 7, Some(start), &arguments);
        assert_eq!(
            files,
            [
                [PathBuf::from("/l/a:b-7-%p.log")],
                [PathBuf::from(format!("/l/gc-{local}-%t.log"))]
            ]
        );
    }

    /// HotSpot 8's `make_log_name` (`ostream.cpp`, and its `test_loggc_filename`
    /// cases): `%p` becomes `pid` and the pid, `%t` the start as
    /// `YYYY-MM-DD_HH-MM-SS`, each once and only in the file name; JDK 9+
    /// maps `-Xloggc:PATH` to `-Xlog:gc:file=PATH`, where `%p` is the pid.
    #[test]
    fn the_last_xloggc_is_named_as_jdk8_and_as_jdk9_name_it() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let local = start
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d_%H-%M-%S");
        let files = |arguments: &[&str]| {
            let arguments: Vec<String> = arguments.iter().map(|a| a.to_string()).collect();
            gc_log_files(Path::new("/w"), 42, Some(start), &arguments)
        };
        assert_eq!(
            files(&["-Xloggc:/l/first.log", "-Xloggc:logs/gc-%t-%p-%p.log"]),
            [[
                PathBuf::from(format!("/w/logs/gc-{local}-pid42-%p.log")),
                PathBuf::from(format!("/w/logs/gc-{local}-42-%p.log"))
            ]]
        );
        assert_eq!(
            files(&["-Xloggc:/l/%p/gc.log", "-XX:+UseGCLogFileRotation"]),
            [[PathBuf::from("/l/%p/gc.log"), PathBuf::from("/l/42/gc.log")]]
        );
        assert_eq!(
            files(&["-Xloggc:gc.log", "-XX:NumberOfGCLogFiles=5"]),
            [[PathBuf::from("/w/gc.log")]]
        );
        assert!(files(&["-Xloggc:", "-verbose:gc"]).is_empty());
    }

    #[test]
    fn this_process_started_before_now() {
        let proc_root = Path::new("/proc");
        let boot = boot_time(proc_root).unwrap();
        let start = wall_clock(boot, start_ticks(proc_root, std::process::id()).unwrap());
        let age = Utc::now() - start;
        assert!(age.num_seconds() >= 0 && age.num_hours() < 24, "{start}");
    }

    /// A /proc of one JVM: booted at 1,800,000,000 s, started 1,234 ticks
    /// (12.34 s) later, writing `gc.log` relative to its working directory.
    fn fake_proc(root: &Path, cwd: &Path, ticks: u64, cmdline: &str) {
        let pid = root.join("4242");
        std::fs::create_dir_all(&pid).unwrap();
        std::fs::write(root.join("stat"), "cpu 1 2 3\nbtime 1800000000\n").unwrap();
        let fields: Vec<String> = (4..=21).map(|n| n.to_string()).collect();
        let stat = format!("4242 (java main) S {} {ticks} 0\n", fields.join(" "));
        std::fs::write(pid.join("stat"), stat).unwrap();
        std::fs::write(pid.join("cmdline"), cmdline.replace(' ', "\0")).unwrap();
        let _ = std::fs::remove_file(pid.join("cwd"));
        std::os::unix::fs::symlink(cwd, pid.join("cwd")).unwrap();
    }

    #[test]
    fn a_jvms_command_line_is_read_once_and_a_reused_pid_read_again() {
        let root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let log = cwd.path().join("gc.log");
        std::fs::write(&log, "").unwrap();
        fake_proc(
            root.path(),
            cwd.path(),
            1234,
            "java -Xlog:gc:file=gc.log -jar app.jar",
        );
        let mut writers = JvmLogWriters::at(root.path().to_path_buf());
        let expected = DateTime::from_timestamp(1_800_000_012, 340_000_000).unwrap();
        assert_eq!(writers.start_of(&log, true), Some(expected));
        // Same process (same start): its command line is not read again.
        fake_proc(root.path(), cwd.path(), 1234, "java -jar other.jar");
        writers.last_scan = None;
        assert_eq!(writers.start_of(&log, false), Some(expected));
        // Within the scan period nothing is read at all.
        fake_proc(root.path(), cwd.path(), 999, "java -jar other.jar");
        assert_eq!(writers.start_of(&log, false), Some(expected));
        // The pid reused by another process: read again, no longer the writer.
        writers.last_scan = None;
        assert_eq!(writers.start_of(&log, false), None);
    }
}
