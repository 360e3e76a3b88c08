//! Finding the host's Java processes in /proc: who they are (pid, namespace
//! pid, user, main class or jar, container, start) and where their
//! hsperfdata is, so that a JVM needs no configuration to be seen.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use std::io::Read;

use crate::follow::log_exists;

use super::launcher::{expand_argfiles, MAX_ARGFILE_BYTES, OPTIONS_WITH_VALUE};
use super::procfs::{boot_time, gc_log_files, processes, start_ticks, wall_clock};

/// One Java process, as found at a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaProcess {
    pub pid: u32,
    /// Its pid in its own PID namespace (the last `NSpid` field): the name of
    /// its hsperfdata file, and `%p` in its options.
    pub nspid: u32,
    pub user: String,
    /// Start, in clock ticks after boot: with the pid, the process's identity.
    pub start_ticks: u64,
    pub started: DateTime<Utc>,
    pub arguments: Vec<String>,
    /// The 64-hex-digit id of its container, from its cgroup, when it has one.
    pub container: Option<String>,
}

impl JavaProcess {
    /// The command line, arguments joined by spaces: what `include`,
    /// `exclude` and rules match.
    pub fn command_line(&self) -> String {
        self.arguments.join(" ")
    }

    /// The `jvm` label: the jar's file name for `-jar`, else the main class
    /// (or `module/class` for `-m`).
    pub fn main(&self) -> String {
        main_of(&self.arguments)
    }

    /// Why its counters cannot exist, from its options.
    pub fn perf_data_disabled(&self) -> bool {
        self.arguments
            .iter()
            .any(|a| a == "-XX:-UsePerfData" || a == "-XX:+PerfDisableSharedMem")
    }

    /// The labels of its series: `pid`, `jvm`, `container` when there is one.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("pid".to_string(), self.pid.to_string()),
            ("jvm".to_string(), self.main()),
        ]);
        if let Some(container) = &self.container {
            labels.insert("container".to_string(), container.clone());
        }
        labels
    }
}

fn main_of(arguments: &[String]) -> String {
    let mut rest = arguments.iter().skip(1);
    while let Some(argument) = rest.next() {
        match argument.as_str() {
            "-jar" => {
                let jar = rest.next().map_or("", String::as_str);
                return Path::new(jar)
                    .file_name()
                    .map_or(jar.to_string(), |n| n.to_string_lossy().into_owned());
            }
            "-m" | "--module" => return rest.next().cloned().unwrap_or_default(),
            option if OPTIONS_WITH_VALUE.contains(&option) => {
                rest.next();
            }
            // An argfile (expanded only to find GC logs) or an option.
            option if option.starts_with(['-', '@']) => {}
            main => return main.to_string(),
        }
    }
    "java".to_string()
}

/// Scans /proc for Java processes, remembering the ones already reported.
pub struct Scanner {
    proc_root: PathBuf,
    /// Java processes reported, by pid, with their start.
    known: HashMap<u32, u64>,
    users: HashMap<u32, String>,
}

impl Scanner {
    pub fn new(proc_root: PathBuf) -> Scanner {
        Scanner {
            proc_root,
            known: HashMap::new(),
            users: passwd_users(Path::new("/etc/passwd")),
        }
    }

    /// The Java processes that started since the last scan. A process is
    /// Java when its `argv[0]` is `java`; its command line is read at every
    /// scan, since a process may exec java long after it was forked.
    pub fn scan(&mut self) -> Vec<JavaProcess> {
        let boot = boot_time(&self.proc_root).unwrap_or(0);
        let mut found = Vec::new();
        let mut alive = HashMap::with_capacity(self.known.len());
        for (pid, dir) in processes(&self.proc_root) {
            let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
                continue;
            };
            let arguments: Vec<String> = cmdline
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let is_java = arguments
                .first()
                .is_some_and(|argv0| Path::new(argv0).file_name().is_some_and(|n| n == "java"));
            if !is_java {
                continue;
            }
            let Some(ticks) = start_ticks(&self.proc_root, pid) else {
                continue;
            };
            alive.insert(pid, ticks);
            if self.known.get(&pid) == Some(&ticks) {
                continue;
            }
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            let uid = status_field(&status, "Uid:").and_then(|v| v.parse().ok());
            let nspid = status_field(&status, "NSpid:")
                .and_then(|v| {
                    v.rsplit(char::is_whitespace)
                        .next()
                        .and_then(|p| p.parse().ok())
                })
                .unwrap_or(pid);
            let cgroup = std::fs::read_to_string(dir.join("cgroup")).unwrap_or_default();
            found.push(JavaProcess {
                pid,
                nspid,
                user: uid
                    .and_then(|uid| self.users.get(&uid).cloned())
                    .or_else(|| uid.map(|u: u32| u.to_string()))
                    .unwrap_or_default(),
                start_ticks: ticks,
                started: wall_clock(boot, ticks),
                arguments,
                container: container_id(&cgroup),
            });
        }
        self.known = alive;
        found
    }
}

impl Scanner {
    /// Reports `pid` again at the next scan, as if it had just started.
    pub fn forget(&mut self, pid: u32) {
        self.known.remove(&pid);
    }
}

/// `java.rt.vmArgs` is cut to this many bytes (`PerfMaxStringConstLength`):
/// one this long may have lost options.
const VM_ARGS_CUT: usize = 1024;

/// The JVM's options, in the order it reads them (a later `-Xloggc` wins):
/// hsperfdata's `java.rt.vmArgs`, which the JVM wrote from
/// `JAVA_TOOL_OPTIONS`, the launcher's arguments (`JDK_JAVA_OPTIONS`, the
/// command line, `@argfiles` expanded) and `_JAVA_OPTIONS`; when there is
/// none yet, or it was cut, the same gathered from /proc: the environment's
/// variables around the command line with its `@argfiles` expanded as the
/// launcher does, from the JVM's working directory.
fn jvm_options(
    proc_root: &Path,
    process: &JavaProcess,
    seen: &dyn Fn(PathBuf) -> PathBuf,
) -> Vec<String> {
    if let Some(vm_args) = vm_args(proc_root, process) {
        return vm_args;
    }
    let dir = proc_root.join(process.pid.to_string());
    let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
    let variable = |wanted: &str| -> Vec<String> {
        environ
            .split(|&b| b == 0)
            .filter_map(|entry| entry.strip_prefix(wanted.as_bytes())?.strip_prefix(b"="))
            .flat_map(|value| {
                let value = String::from_utf8_lossy(value);
                value
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let cwd = std::fs::read_link(dir.join("cwd")).unwrap_or_default();
    let read = |name: &str| -> Option<Vec<u8>> {
        let file = std::fs::File::open(seen(cwd.join(name))).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_ARGFILE_BYTES).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    };
    let mut options = variable("JAVA_TOOL_OPTIONS");
    options.extend(variable("JDK_JAVA_OPTIONS"));
    options.extend(expand_argfiles(&process.arguments, &read));
    options.extend(variable("_JAVA_OPTIONS"));
    options
}

/// The options in hsperfdata's `java.rt.vmArgs`, unless it is cut. It
/// joins them with spaces and drops quotes, so a word that does not start
/// with `-` continues the option before it (`-Xlog:gc:file=/a b/gc.log`).
fn vm_args(proc_root: &Path, process: &JavaProcess) -> Option<Vec<String>> {
    let bytes = super::hsperf_file::read_once(proc_root, process)?;
    let data = pausewatch_parsers::hsperf::parse(&bytes).ok()?;
    let joined = data.string("java.rt.vmArgs")?;
    if joined.len() >= VM_ARGS_CUT {
        return None;
    }
    let mut options: Vec<String> = Vec::new();
    for word in joined.split(' ').filter(|w| !w.is_empty()) {
        match options.last_mut() {
            Some(option) if !word.starts_with('-') => {
                option.push(' ');
                option.push_str(word);
            }
            _ => options.push(word.to_string()),
        }
    }
    Some(options)
}

/// The GC log files the JVM writes, from its options (see
/// [`jvm_options`]), as the agent can open them: through /proc/PID/root
/// when the JVM is in another mount namespace. Of the names a file may have
/// (`%t` at the process's start and the second after, as the JVM takes its
/// time a moment after the process starts; `-Xloggc`'s `%p` as JDK 8 and as
/// JDK 9+ write it), the first that exists, else the first.
pub fn gc_logs(proc_root: &Path, process: &JavaProcess) -> Vec<PathBuf> {
    let dir = proc_root.join(process.pid.to_string());
    let root = (std::fs::read_link(dir.join("ns/mnt")).ok()
        != std::fs::read_link(proc_root.join("self/ns/mnt")).ok())
    .then(|| dir.join("root"));
    let seen = |path: PathBuf| match &root {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(&path)),
        None => path,
    };
    let options = jvm_options(proc_root, process, &seen);
    let cwd = std::fs::read_link(dir.join("cwd")).unwrap_or_default();
    let at = |offset: i64| {
        let started = process.started + chrono::Duration::seconds(offset);
        gc_log_files(&cwd, process.nspid, Some(started), &options)
    };
    let (now, next) = (at(0), at(1));
    now.into_iter()
        .zip(next)
        .filter_map(|(now, next)| {
            let names: Vec<PathBuf> = now.into_iter().chain(next).map(seen).collect();
            let written = names.iter().find(|name| log_exists(name));
            written.or(names.first()).cloned()
        })
        .collect()
}

/// Whether process `pid` that started at `ticks` still runs.
pub fn is_alive(proc_root: &Path, pid: u32, ticks: u64) -> bool {
    start_ticks(proc_root, pid) == Some(ticks)
}

/// The first value of `field` in /proc/PID/status (for `Uid:` the real uid,
/// for `NSpid:` the whole list).
fn status_field<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    let line = status.lines().find_map(|l| l.strip_prefix(field))?.trim();
    if field == "Uid:" {
        line.split_whitespace().next()
    } else {
        Some(line)
    }
}

/// The container id in a /proc/PID/cgroup: the last 64-hex-digit path
/// component part (`docker-<id>.scope`, `/docker/<id>`, `cri-containerd-<id>`).
pub(super) fn container_id(cgroup: &str) -> Option<String> {
    let is_hex = |c: char| c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
    cgroup
        .rsplit(|c: char| !is_hex(c))
        .find(|run| run.len() == 64)
        .map(str::to_string)
}

fn passwd_users(path: &Path) -> HashMap<u32, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn the_main_class_or_jar_is_found_past_the_options() {
        assert_eq!(
            main_of(&args("java -Xmx1g -cp a:b com.acme.Main x")),
            "com.acme.Main"
        );
        assert_eq!(
            main_of(&args("/usr/bin/java -jar /opt/app/pricing-2.jar --port 1")),
            "pricing-2.jar"
        );
        assert_eq!(
            main_of(&args("java -p mods -m app/app.Main")),
            "app/app.Main"
        );
        assert_eq!(main_of(&args("java -version")), "java");
        assert_eq!(
            main_of(&args("java @jvm.opts -cp a com.acme.Main")),
            "com.acme.Main"
        );
    }

    /// A JDK 8 JVM in a fake /proc (no hsperfdata, so its options come from
    /// /proc): `-Xloggc` with `%p` and rotation, overridden by a later one in
    /// `_JAVA_OPTIONS`; its ring exists only as `.current` and rotated files.
    #[test]
    fn a_jdk8_xloggc_ring_is_found_under_its_name_with_the_last_option_winning() {
        let proc_root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let dir = proc_root.path().join("4242");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(cwd.path(), dir.join("cwd")).unwrap();
        let environ = "HOME=/root\0_JAVA_OPTIONS=-Xmx1g -Xloggc:logs/gc-%p.log\0";
        std::fs::write(dir.join("environ"), environ).unwrap();
        std::fs::write(cwd.path().join("jvm.opts"), "-Xloggc:/nowhere/first.log\n").unwrap();
        let logs = cwd.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        for name in ["gc-pid7.log.0", "gc-pid7.log.1.current"] {
            std::fs::write(logs.join(name), "").unwrap();
        }
        let process = JavaProcess {
            pid: 4242,
            nspid: 7,
            user: "app".to_string(),
            start_ticks: 1,
            started: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            arguments: args(
                "java @jvm.opts -XX:+UseGCLogFileRotation -XX:NumberOfGCLogFiles=5 -XX:GCLogFileSize=8k Main",
            ),
            container: None,
        };
        assert_eq!(
            gc_logs(proc_root.path(), &process),
            [logs.join("gc-pid7.log")]
        );
        // As JDK 9+ names it, when that is the file there.
        std::fs::remove_file(logs.join("gc-pid7.log.1.current")).unwrap();
        std::fs::write(logs.join("gc-7.log"), "").unwrap();
        assert_eq!(gc_logs(proc_root.path(), &process), [logs.join("gc-7.log")]);
    }

    #[test]
    fn container_ids_come_from_the_cgroup_path() {
        let id = "3f4e1a2b".repeat(8);
        let cgroup = format!("0::/system.slice/docker-{id}.scope\n");
        assert_eq!(container_id(&cgroup), Some(id.clone()));
        assert_eq!(
            container_id(&format!("12:pids:/kubepods/burstable/pod1/{id}\n")),
            Some(id)
        );
        assert_eq!(container_id("0::/user.slice/session-1.scope\n"), None);
    }

    #[test]
    fn this_test_process_is_not_java_and_a_status_is_read() {
        let status = "Name:\tjava\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t7\n";
        assert_eq!(status_field(status, "Uid:"), Some("1000"));
        assert_eq!(status_field(status, "NSpid:"), Some("4242\t7"));
        let mut scanner = Scanner::new(PathBuf::from("/proc"));
        let own = std::process::id();
        assert!(scanner.scan().iter().all(|p| p.pid != own));
    }
}
