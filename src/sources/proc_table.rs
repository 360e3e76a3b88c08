//! One view of /proc per scan, on the `procfs` crate: every process's pid,
//! start and command line, read once and shared by the JVM and Go
//! discoverers and by [`JvmLogWriters`](super::procfs::JvmLogWriters), so a
//! scan walks /proc once and a command line is split one way. What only some
//! kinds need (status, environment, cgroup, stderr, later maps and tasks) is
//! read on demand, for the processes they examine.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use procfs::process::Process;
use procfs::FromReadSI;

/// A process as a scan saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcEntry {
    pub pid: u32,
    /// Start, in clock ticks after boot: with the pid, the process's identity.
    pub start_ticks: u64,
    /// `/proc/PID/cmdline` split at its NULs, empty arguments dropped (as
    /// the procfs crate splits it): what every discoverer matches.
    pub arguments: Vec<String>,
    dir: PathBuf,
    /// Whether it runs in another mount namespace than the agent: its files
    /// are then opened through `/proc/PID/root`.
    foreign_mounts: bool,
    /// The program it runs, as [`image_of`] tells one `exec` from another.
    image: Option<Image>,
}

/// Where the running program's text and stack begin and end, from
/// `/proc/PID/stat`: an `exec` keeps the pid and the start, and replaces
/// these (the stack's place is randomised at every `exec`, the text's
/// bounds differ from one program to another). A process whose image is
/// unchanged keeps its command line and mount namespace from the scan
/// before, which saves reading them every second for every process.
type Image = (u64, u64, u64);

/// `PF_KTHREAD` in `/proc/PID/stat`'s flags: a kernel thread, which never
/// runs a program.
const KERNEL_THREAD: u32 = 0x0020_0000;

/// The image of a process (see [`Image`]); `None` when the kernel hides
/// it (all zeros: a process being torn down, or one whose memory this
/// agent may not read), which makes every scan read it afresh.
fn image_of(stat: &procfs::process::Stat) -> Option<Image> {
    if stat.flags & KERNEL_THREAD != 0 {
        return Some((0, 0, 0));
    }
    let image = (stat.startcode, stat.endcode, stat.startstack);
    (image != (0, 0, 0)).then_some(image)
}

impl ProcEntry {
    /// `/proc/PID`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The crate's handle on this process, for what the table does not
    /// keep (tasks and their schedstat, memory maps). It holds a file
    /// descriptor: drop it when done.
    pub fn process(&self) -> procfs::ProcResult<Process> {
        Process::new_with_root(self.dir.clone())
    }

    /// `/proc/PID/status`: real uid, `NSpid`.
    pub fn status(&self) -> Option<procfs::process::Status> {
        self.process().ok()?.status().ok()
    }

    /// The environment, raw (`NAME=value` separated by NULs): the crate's
    /// map would lose the order and duplicates that `GODEBUG` and the
    /// `*_JAVA_OPTIONS` rules depend on.
    pub fn environ(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        if let Ok(mut file) = self.process().and_then(|p| p.open_relative("environ")) {
            let _ = file.read_to_end(&mut bytes);
        }
        bytes
    }

    /// The working directory, as the process sees it (empty when unreadable).
    pub fn cwd(&self) -> PathBuf {
        self.process().and_then(|p| p.cwd()).unwrap_or_default()
    }

    /// The executable's path, as the process sees it.
    pub fn exe(&self) -> Option<PathBuf> {
        self.process().and_then(|p| p.exe()).ok()
    }

    /// The cgroup paths of its hierarchies (`/proc/PID/cgroup`).
    pub fn cgroups(&self) -> Vec<String> {
        let groups = self.process().and_then(|p| p.cgroups());
        groups.map_or_else(
            |_| Vec::new(),
            |groups| groups.0.into_iter().map(|g| g.pathname).collect(),
        )
    }

    /// Its stderr's path as the process sees it, when stderr is a regular
    /// file (not a terminal, pipe or socket).
    pub fn stderr_file(&self) -> Option<PathBuf> {
        // `metadata` follows the descriptor's link to the open file itself.
        if !std::fs::metadata(self.dir.join("fd/2")).ok()?.is_file() {
            return None;
        }
        match self.process().ok()?.fd_from_fd(2).ok()?.target {
            procfs::process::FDTarget::Path(path) => Some(path),
            _ => None,
        }
    }

    /// `path`, as the process names it, as the agent opens it: through
    /// `/proc/PID/root` when the process is in another mount namespace.
    pub fn seen(&self, path: &Path) -> PathBuf {
        if self.foreign_mounts {
            self.dir
                .join("root")
                .join(path.strip_prefix("/").unwrap_or(path))
        } else {
            path.to_path_buf()
        }
    }

    /// The 64-hex-digit id of its container, from its cgroup path, when it has one.
    pub fn container(&self) -> Option<String> {
        self.cgroups()
            .iter()
            .rev()
            .find_map(|path| container_id(path))
    }
}

/// The container id in a cgroup path: the last 64-hex-digit component part
/// (`docker-<id>.scope`, `/docker/<id>`, `cri-containerd-<id>`).
pub fn container_id(cgroup: &str) -> Option<String> {
    let is_hex = |c: char| c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
    cgroup
        .rsplit(|c: char| !is_hex(c))
        .find(|run| run.len() == 64)
        .map(str::to_string)
}

/// The processes of one scan of /proc, refreshed on demand, with the
/// boot time and clock tick that place their starts in wall-clock time.
pub struct ProcTable {
    root: PathBuf,
    boot: Option<i64>,
    entries: HashMap<u32, ProcEntry>,
    scanned: Option<Instant>,
    /// Bumped when a scan finds another set of processes (or command
    /// lines) than the one before: what caches keyed on processes watch.
    generation: u64,
}

impl ProcTable {
    /// An empty table of the processes in `root` (`/proc`, or a fake tree).
    pub fn new(root: PathBuf) -> ProcTable {
        ProcTable {
            root,
            boot: None,
            entries: HashMap::new(),
            scanned: None,
            generation: 0,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Scans again when the last scan is older than `max_age` (or there was
    /// none); says whether it did.
    pub fn refresh_within(&mut self, max_age: Duration) -> bool {
        if self.scanned.is_some_and(|at| at.elapsed() < max_age) {
            return false;
        }
        self.refresh();
        true
    }

    /// Reads every process's start and, when it runs another program than
    /// at the scan before, its command line: the one walk of /proc.
    pub fn refresh(&mut self) {
        self.scanned = Some(Instant::now());
        self.boot = boot_time(&self.root);
        let own_mounts = std::fs::read_link(self.root.join("self/ns/mnt")).ok();
        let mut entries = HashMap::with_capacity(self.entries.len());
        let processes = procfs::process::all_processes_with_root(&self.root);
        for process in processes.into_iter().flatten().flatten() {
            let Ok(stat) = process.stat() else { continue };
            let pid = stat.pid as u32;
            let image = image_of(&stat);
            let same = |known: &&ProcEntry| {
                known.start_ticks == stat.starttime && image.is_some() && known.image == image
            };
            let entry = match self.entries.get(&pid).filter(same) {
                Some(known) => known.clone(),
                None => {
                    let dir = self.root.join(pid.to_string());
                    let mounts = std::fs::read_link(dir.join("ns/mnt")).ok();
                    ProcEntry {
                        pid,
                        start_ticks: stat.starttime,
                        arguments: process.cmdline().unwrap_or_default(),
                        foreign_mounts: mounts != own_mounts,
                        dir,
                        image,
                    }
                }
            };
            entries.insert(pid, entry);
        }
        if entries != self.entries {
            self.generation += 1;
        }
        self.entries = entries;
    }

    /// The processes of the last scan.
    pub fn entries(&self) -> impl Iterator<Item = &ProcEntry> {
        self.entries.values()
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// When a process that started `ticks` after boot started, if the boot
    /// time is known.
    pub fn started(&self, ticks: u64) -> Option<DateTime<Utc>> {
        Some(wall_clock(self.boot?, ticks))
    }
}

/// Boot time, seconds since the epoch (`btime` in /proc/stat).
fn boot_time(proc_root: &Path) -> Option<i64> {
    let stats =
        procfs::KernelStats::from_file(proc_root.join("stat"), procfs::current_system_info());
    stats.ok().map(|stats| stats.btime as i64)
}

/// When a process that started `ticks` after boot started, on the wall
/// clock that file times are on, to the clock tick (10 ms): `started`, from
/// /proc/stat's boot time in whole seconds, may be a second early, which
/// tells no file its previous run wrote just before it from its own.
pub fn started_to_the_tick(ticks: u64) -> std::time::SystemTime {
    let per_second = procfs::ticks_per_second().max(1);
    let since_boot = Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second);
    let ago = super::clock_now(libc::CLOCK_BOOTTIME).saturating_sub(since_boot);
    std::time::SystemTime::now() - ago
}

/// `ticks` after `boot` in wall-clock time, at the kernel's clock tick
/// (`sysconf(_SC_CLK_TCK)`).
fn wall_clock(boot: i64, ticks: u64) -> DateTime<Utc> {
    let per_second = procfs::ticks_per_second();
    let nanos =
        boot as i128 * 1_000_000_000 + ticks as i128 * 1_000_000_000 / per_second.max(1) as i128;
    DateTime::from_timestamp_nanos(nanos as i64)
}

fn stat(proc_root: &Path, pid: u32) -> Option<procfs::process::Stat> {
    Process::new_with_root(proc_root.join(pid.to_string()))
        .ok()?
        .stat()
        .ok()
}

/// Start of a process in ticks after boot, read now (not from a scan).
pub fn start_ticks(proc_root: &Path, pid: u32) -> Option<u64> {
    stat(proc_root, pid).map(|stat| stat.starttime)
}

/// Whether process `pid` that started at `ticks` still runs.
pub fn is_alive(proc_root: &Path, pid: u32, ticks: u64) -> bool {
    start_ticks(proc_root, pid) == Some(ticks)
}

/// Whether the process a checkpoint names by `pid@start_ticks` still runs
/// (a pid reused by another process is not it; a key that does not read is
/// no process).
pub fn is_alive_key(proc_root: &Path, key: &str) -> bool {
    let (pid, ticks) = key.split_once('@').unwrap_or_default();
    match (pid.parse(), ticks.parse()) {
        (Ok(pid), Ok(ticks)) => is_alive(proc_root, pid, ticks),
        _ => false,
    }
}

/// CPU time a process used, user plus system, in seconds, read now.
pub fn cpu_seconds(proc_root: &Path, pid: u32) -> Option<f64> {
    let stat = stat(proc_root, pid)?;
    Some((stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64)
}

/// The CPUs a process may run on (its affinity, `Cpus_allowed_list`).
pub fn cpus_allowed(proc_root: &Path, pid: u32) -> Option<f64> {
    let status = Process::new_with_root(proc_root.join(pid.to_string()))
        .ok()?
        .status()
        .ok()?;
    let ranges = status.cpus_allowed_list?;
    Some(ranges.iter().map(|(a, b)| f64::from(b - a + 1)).sum())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A fake /proc process directory: `stat` with all 52 fields (started
    /// `ticks` after boot, 250 user and 150 system ticks), `status` taken
    /// from this process's own with `uid` and `nspid`, `cmdline`, `environ`
    /// and `cwd`; and the tree's `stat` booted at 1,800,000,000 s.
    pub fn fake_process(
        root: &Path,
        pid: u32,
        ticks: u64,
        cmdline: &str,
        environ: &str,
        cwd: &Path,
    ) -> PathBuf {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let host = std::fs::read_to_string("/proc/stat").unwrap();
        let host_btime = host.lines().find(|l| l.starts_with("btime ")).unwrap();
        std::fs::write(
            root.join("stat"),
            host.replace(host_btime, "btime 1800000000"),
        )
        .unwrap();
        let mut fields: Vec<String> = (4..=52).map(|n| n.to_string()).collect();
        fields[14 - 4] = "250".to_string();
        fields[15 - 4] = "150".to_string();
        fields[22 - 4] = ticks.to_string();
        // Another command line is another program: its own image.
        let image = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            cmdline.hash(&mut hasher);
            hasher.finish() >> 20 << 12
        };
        fields[26 - 4] = image.to_string();
        fields[27 - 4] = (image + 4096).to_string();
        fields[28 - 4] = (image + 8192).to_string();
        let stat = format!("{pid} (java main) S {}\n", fields.join(" "));
        std::fs::write(dir.join("stat"), stat).unwrap();
        let status: String = std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .map(|line| match line.split(':').next() {
                Some("Uid") => "Uid:\t1000\t1000\t1000\t1000".to_string(),
                Some("NSpid") => format!("NSpid:\t{pid}\t7"),
                Some("Pid") => format!("Pid:\t{pid}"),
                Some("Tgid") => format!("Tgid:\t{pid}"),
                _ => line.to_string(),
            })
            .map(|line| line + "\n")
            .collect();
        std::fs::write(dir.join("status"), status).unwrap();
        std::fs::write(dir.join("cmdline"), cmdline.replace(' ', "\0") + "\0").unwrap();
        std::fs::write(dir.join("environ"), environ).unwrap();
        let _ = std::fs::remove_file(dir.join("cwd"));
        std::os::unix::fs::symlink(cwd, dir.join("cwd")).unwrap();
        dir
    }

    #[test]
    fn a_scan_reads_each_process_once_and_counts_changes() {
        let root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        fake_process(root.path(), 4242, 1234, "java -Xmx1g  Main", "", cwd.path());
        fake_process(root.path(), 17, 5, "/bin/sh -c x", "", cwd.path());
        std::fs::create_dir(root.path().join("self")).unwrap();
        let mut table = ProcTable::new(root.path().to_path_buf());
        assert!(table.refresh_within(Duration::from_secs(60)));
        assert!(!table.refresh_within(Duration::from_secs(60)));
        let generation = table.generation();
        let mut entries: Vec<&ProcEntry> = table.entries().collect();
        entries.sort_by_key(|e| e.pid);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].pid, 4242);
        assert_eq!(entries[1].start_ticks, 1234);
        // The empty argument between the two spaces is dropped.
        assert_eq!(entries[1].arguments, ["java", "-Xmx1g", "Main"]);
        assert_eq!(entries[1].cwd(), cwd.path());
        let status = entries[1].status().unwrap();
        assert_eq!((status.ruid, status.nspid), (1000, Some(vec![4242, 7])));
        // 12.34 s after boot, at this machine's clock tick.
        let tick = procfs::ticks_per_second();
        let expected = 1_800_000_000_000_000_000 + 1234 * 1_000_000_000 / tick as i64;
        assert_eq!(
            table.started(1234),
            Some(DateTime::from_timestamp_nanos(expected))
        );
        assert_eq!(cpu_seconds(root.path(), 4242), Some(400.0 / tick as f64));
        assert!(is_alive(root.path(), 4242, 1234));
        assert!(!is_alive(root.path(), 4242, 1235));
        // The same processes: the same generation; one gone: the next.
        table.refresh();
        assert_eq!(table.generation(), generation);
        std::fs::remove_dir_all(root.path().join("17")).unwrap();
        table.refresh();
        assert_eq!(table.generation(), generation + 1);
        assert_eq!(table.entries().count(), 1);
    }

    #[test]
    fn this_process_is_in_the_host_table_with_its_real_start() {
        let mut table = ProcTable::new(PathBuf::from("/proc"));
        table.refresh();
        let own = std::process::id();
        let me = table.entries().find(|e| e.pid == own).unwrap();
        let start = table.started(me.start_ticks).unwrap();
        let age = Utc::now() - start;
        assert!(age.num_seconds() >= 0 && age.num_hours() < 24, "{start}");
        assert_eq!(me.arguments, std::env::args().collect::<Vec<_>>());
        assert_eq!(me.seen(Path::new("/tmp/x")), PathBuf::from("/tmp/x"));
    }

    #[test]
    fn a_process_that_execs_another_program_is_read_again() {
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "read line; exec sleep 30", "exec-marker"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = shell.id();
        let mut table = ProcTable::new(PathBuf::from("/proc"));
        let arguments = |table: &ProcTable| {
            let entry = table.entries().find(|e| e.pid == pid).unwrap();
            (entry.arguments.clone(), entry.start_ticks)
        };
        table.refresh();
        let (before, started) = arguments(&table);
        assert_eq!(before.last().map(String::as_str), Some("exec-marker"));
        table.refresh();
        assert_eq!(arguments(&table), (before, started));
        // The same pid and start, another program.
        drop(shell.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            table.refresh();
            if arguments(&table) == (vec!["sleep".to_string(), "30".to_string()], started) {
                break;
            }
            assert!(Instant::now() < deadline, "{:?}", arguments(&table));
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = shell.kill();
        let _ = shell.wait();
    }

    #[test]
    fn container_ids_come_from_the_cgroup_path() {
        let id = "3f4e1a2b".repeat(8);
        let cgroup = format!("/system.slice/docker-{id}.scope");
        assert_eq!(container_id(&cgroup), Some(id.clone()));
        assert_eq!(
            container_id(&format!("/kubepods/burstable/pod1/{id}")),
            Some(id)
        );
        assert_eq!(container_id("/user.slice/session-1.scope"), None);
    }
}
