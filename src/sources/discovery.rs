//! Finding the host's Java processes in the shared [`ProcTable`]: who they
//! are (pid, namespace pid, user, main class or jar, service, container,
//! start), which GC logs their options name and where their hsperfdata is,
//! so that a JVM needs no configuration to be seen.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::follow::log_exists;

use super::launcher::{expand_argfiles, MAX_ARGFILE_BYTES, OPTIONS_WITH_VALUE};
use super::proc_table::{ProcEntry, ProcTable};

/// One Java process, as found at a scan: its table entry (pid, start,
/// arguments, which it derefs to) and what the JVM discoverer read besides.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaProcess {
    pub entry: ProcEntry,
    /// Its pid in its own PID namespace (the last `NSpid` field): the name of
    /// its hsperfdata file, and `%p` in its options.
    pub nspid: u32,
    pub user: String,
    /// Its effective uid, which HotSpot names and owns its hsperfdata by:
    /// a file or GC log of another user's is not believed to be its own.
    pub uid: Option<u32>,
    pub started: DateTime<Utc>,
    /// The 64-hex-digit id of its container, from its cgroup, when it has one.
    pub container: Option<String>,
    /// Its default `service` label (see [`service_of`]).
    pub service: String,
}

impl std::ops::Deref for JavaProcess {
    type Target = ProcEntry;

    fn deref(&self) -> &ProcEntry {
        &self.entry
    }
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

    /// Whose hsperfdata file is its own.
    pub fn hsperf_owner(&self) -> super::hsperf_file::Owner {
        super::hsperf_file::Owner {
            pid: self.pid,
            nspid: self.nspid,
            uid: self.uid,
        }
    }

    /// Why its counters cannot exist, from its options.
    pub fn perf_data_disabled(&self) -> bool {
        self.arguments
            .iter()
            .any(|a| a == "-XX:-UsePerfData" || a == "-XX:+PerfDisableSharedMem")
    }

    /// The labels of its series: `pid`, `jvm`, `service`, `container` when
    /// there is one. `[[discovery.rule]]` labels are added over these, so a
    /// rule's `service` wins.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("pid".to_string(), self.pid.to_string()),
            ("jvm".to_string(), self.main()),
            ("service".to_string(), self.service.clone()),
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

/// The value of the first `name` in an environment (`/proc/PID/environ`).
fn env_value<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(name.as_bytes())?.strip_prefix(b"="))
}

/// A JVM's (or Go program's) default `service`, the first of: `OTEL_SERVICE_NAME`, then
/// `service.name` in `OTEL_RESOURCE_ATTRIBUTES` (the names an
/// OpenTelemetry-instrumented service already carries); in a Kubernetes pod
/// (`KUBERNETES_SERVICE_HOST` set) its workload, the pod name in `HOSTNAME`
/// without the suffixes a Deployment, ReplicaSet, DaemonSet or StatefulSet
/// adds; else `main`, the jar or main class. Docker names and pod labels are
/// not read: they are in no file of the process.
pub(super) fn service_of(environ: &[u8], main: &str) -> String {
    let text = |name| env_value(environ, name).map(|v| String::from_utf8_lossy(v).into_owned());
    let resource = text("OTEL_RESOURCE_ATTRIBUTES").and_then(|attributes| {
        attributes.split(',').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key.trim() == "service.name").then(|| value.trim().to_string())
        })
    });
    let pod = text("KUBERNETES_SERVICE_HOST")
        .and(text("HOSTNAME"))
        .map(|pod| workload_of(&pod));
    text("OTEL_SERVICE_NAME")
        .into_iter()
        .chain(resource)
        .chain(pod)
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| main.to_string())
}

/// A pod's workload from its name: `NAME-HASH-XXXXX` (Deployment: a
/// pod-template hash of 6 to 10 and a suffix of 5 of the characters
/// Kubernetes' names draw on), `NAME-XXXXX` (ReplicaSet, DaemonSet, Job),
/// `NAME-N` (StatefulSet); any other name as it is.
fn workload_of(pod: &str) -> String {
    let random = |part: &str, lengths: std::ops::RangeInclusive<usize>| {
        lengths.contains(&part.len())
            && part
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
    };
    let parts: Vec<&str> = pod.split('-').collect();
    let keep = match parts.as_slice() {
        [name @ .., hash, suffix]
            if !name.is_empty() && random(hash, 6..=10) && random(suffix, 5..=5) =>
        {
            name.len()
        }
        [name @ .., last]
            if !name.is_empty()
                && (random(last, 5..=5) || last.bytes().all(|b| b.is_ascii_digit())) =>
        {
            name.len()
        }
        _ => parts.len(),
    };
    parts[..keep].join("-")
}

/// Finds Java processes in the table, remembering the ones already reported.
pub struct Scanner {
    /// Java processes reported, by pid, with their start.
    known: HashMap<u32, u64>,
    users: HashMap<u32, String>,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            known: HashMap::new(),
            users: passwd_users(Path::new("/etc/passwd")),
        }
    }
}

impl Scanner {
    /// The Java processes that started since the last scan. A process is
    /// Java when its `argv[0]` is `java`; the table reads every command line
    /// at every scan, since a process may exec java long after it was forked.
    pub fn scan(&mut self, table: &ProcTable) -> Vec<JavaProcess> {
        let mut found = Vec::new();
        let mut alive = HashMap::with_capacity(self.known.len());
        for entry in table.entries() {
            let is_java = entry
                .arguments
                .first()
                .is_some_and(|argv0| Path::new(argv0).file_name().is_some_and(|n| n == "java"));
            if !is_java {
                continue;
            }
            alive.insert(entry.pid, entry.start_ticks);
            if self.known.get(&entry.pid) == Some(&entry.start_ticks) {
                continue;
            }
            let status = entry.status();
            let uid = status.as_ref().map(|s| s.ruid);
            let euid = status.as_ref().map(|s| s.euid);
            let nspid = status
                .and_then(|s| s.nspid?.last().copied())
                .map_or(entry.pid, |pid| pid as u32);
            let service = service_of(&entry.environ(), &main_of(&entry.arguments));
            found.push(JavaProcess {
                nspid,
                user: uid
                    .and_then(|uid| self.users.get(&uid).cloned())
                    .or_else(|| uid.map(|u: u32| u.to_string()))
                    .unwrap_or_default(),
                uid: euid,
                started: table.started(entry.start_ticks).unwrap_or_default(),
                container: entry.container(),
                service,
                entry: entry.clone(),
            });
        }
        self.known = alive;
        found
    }

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
fn jvm_options(proc_root: &Path, process: &JavaProcess, cwd: &Path) -> Vec<String> {
    if let Some(vm_args) = vm_args(proc_root, process) {
        return vm_args;
    }
    let environ = process.environ();
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
    // Any local user may put a FIFO where an argfile is named: open it as
    // the follower opens logs, never waiting for a writer.
    let read = |name: &str| -> Option<Vec<u8>> {
        let file = crate::follow::open_regular(&process.seen(&cwd.join(name))).ok()?;
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
    let bytes = super::hsperf_file::read_once(proc_root, process.hsperf_owner())?;
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

/// The GC log files a JVM writes, and whether they carry its safepoints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JvmGcLogs {
    pub files: Vec<PathBuf>,
    /// Whether a file with its GC output also has the `safepoint` tag (or,
    /// on JDK 8, `-XX:+PrintGCApplicationStoppedTime`): else the probes
    /// supply its safepoints beside the log's pauses.
    pub safepoints: bool,
}

/// The GC log files the JVM writes, from its options (see
/// [`jvm_options`]), as the agent can open them: through /proc/PID/root
/// when the JVM is in another mount namespace. Of the names a file may have
/// (`%t` at the process's start and the second after, as the JVM takes its
/// time a moment after the process starts; `-Xloggc`'s `%p` as JDK 8 and as
/// JDK 9+ write it), the first that exists, else the first.
pub fn gc_logs(proc_root: &Path, process: &JavaProcess) -> JvmGcLogs {
    let cwd = process.cwd();
    let options = jvm_options(proc_root, process, &cwd);
    let at = |offset: i64| {
        let started = process.started + chrono::Duration::seconds(offset);
        gc_log_files(&cwd, process.nspid, Some(started), &options)
    };
    let (now, next) = (at(0), at(1));
    let files = now
        .into_iter()
        .zip(next)
        .filter_map(|(now, next)| {
            let names: Vec<PathBuf> = now
                .into_iter()
                .chain(next)
                .map(|name| process.seen(&name))
                .collect();
            let written = names.iter().find(|name| log_exists(name));
            written.or(names.first()).cloned()
        })
        .collect();
    JvmGcLogs {
        files,
        safepoints: logs_safepoints(&options),
    }
}

/// Whether the JVM's GC log has its safepoints: an `-Xlog` file output
/// selecting both the `gc` and the `safepoint` tags, or JDK 8's
/// stopped-time lines. One answer per JVM: a JVM writing two GC logs of
/// which only one has them is taken as having them.
fn logs_safepoints(arguments: &[String]) -> bool {
    let unified = arguments
        .iter()
        .filter_map(|a| a.strip_prefix("-Xlog:"))
        .filter_map(|option| {
            let mut parts = split_unquoted(option, ':');
            let selectors = parts.next()?;
            parts.next()?.strip_prefix("file=")?;
            Some(selectors)
        })
        .any(|selectors| writes_gc(selectors) && selects_tag(selectors, "safepoint"));
    let jdk8 = arguments.iter().any(|a| a.starts_with("-Xloggc:"))
        && arguments
            .iter()
            .rev()
            .find_map(|a| {
                a.strip_prefix("-XX:")
                    .filter(|f| f.ends_with("PrintGCApplicationStoppedTime"))
            })
            .is_some_and(|flag| flag.starts_with('+'));
    unified || jdk8
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

/// Why `log`, a GC log a JVM's options name, is not believed to be the
/// JVM's own, if it is not. HotSpot writes it as the JVM's user, so a file
/// another user owns (their forgery, or `/etc/shadow` named in a forged
/// hsperfdata file) is not the JVM's; nor is one any user may write, or
/// replace through a directory any user may write without the sticky bit.
/// A log not created yet has nothing to judge: `None` until it exists.
pub fn untrusted_log(log: &Path, uid: Option<u32>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let Some(uid) = uid else {
        return Some("the JVM's user is not known".to_string());
    };
    let file = std::fs::metadata(log).ok()?;
    if file.uid() != uid {
        return Some(format!(
            "{} is owned by uid {}, not by the JVM's uid {uid}",
            log.display(),
            file.uid()
        ));
    }
    if file.mode() & 0o002 != 0 {
        return Some(format!(
            "{} may be written by any user (mode {:o})",
            log.display(),
            file.mode() & 0o7777
        ));
    }
    let real = std::fs::canonicalize(log).ok()?;
    let dir = real.parent()?;
    let directory = std::fs::metadata(dir).ok()?;
    if directory.uid() != uid && directory.uid() != 0 {
        return Some(format!(
            "its directory {} is owned by uid {}, neither the JVM's uid {uid} nor root",
            dir.display(),
            directory.uid()
        ));
    }
    if directory.mode() & 0o002 != 0 && directory.mode() & 0o1000 == 0 {
        return Some(format!(
            "its directory {} may be written by any user (mode {:o})",
            dir.display(),
            directory.mode() & 0o7777
        ));
    }
    None
}

/// Whether an `-Xlog` selection (`gc*,safepoint=info`) includes the `gc` tag.
fn writes_gc(selectors: &str) -> bool {
    selects_tag(selectors, "gc")
}

/// Whether an `-Xlog` selection (`gc*,safepoint=info`) includes `tag`,
/// alone or with others, at a level other than `off`.
fn selects_tag(selectors: &str, tag: &str) -> bool {
    selectors.split(',').any(|selector| {
        let (tags, level) = selector.split_once('=').unwrap_or((selector, "info"));
        level != "off" && tags.split('+').any(|t| t.trim_end_matches('*') == tag)
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
    use super::super::proc_table::tests::fake_process;
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

    /// A JDK 8 JVM in a fake /proc (no hsperfdata, so its options come from
    /// /proc): `-Xloggc` with `%p` and rotation, overridden by a later one in
    /// `_JAVA_OPTIONS`; its ring exists only as `.current` and rotated files.
    /// The scan finds it with its namespace pid, user, start and service.
    #[test]
    fn a_jdk8_xloggc_ring_is_found_under_its_name_with_the_last_option_winning() {
        let proc_root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let environ = "HOME=/root\0_JAVA_OPTIONS=-Xmx1g -Xloggc:logs/gc-%p.log\0";
        fake_process(
            proc_root.path(),
            4242,
            100,
            "java @jvm.opts -XX:+UseGCLogFileRotation -XX:NumberOfGCLogFiles=5 -XX:GCLogFileSize=8k Main",
            environ,
            cwd.path(),
        );
        fake_process(proc_root.path(), 17, 5, "/bin/sh -c java", "", cwd.path());
        std::fs::write(cwd.path().join("jvm.opts"), "-Xloggc:/nowhere/first.log\n").unwrap();
        let logs = cwd.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        for name in ["gc-pid7.log.0", "gc-pid7.log.1.current"] {
            std::fs::write(logs.join(name), "").unwrap();
        }
        let mut table = ProcTable::new(proc_root.path().to_path_buf());
        table.refresh();
        let mut scanner = Scanner::default();
        let found = scanner.scan(&table);
        assert_eq!(found.len(), 1);
        let process = &found[0];
        assert_eq!((process.pid, process.nspid), (4242, 7));
        assert_eq!(process.service, "Main");
        assert_eq!(process.started, table.started(100).unwrap());
        assert_eq!(
            gc_logs(proc_root.path(), process).files,
            [logs.join("gc-pid7.log")]
        );
        // As JDK 9+ names it, when that is the file there.
        std::fs::remove_file(logs.join("gc-pid7.log.1.current")).unwrap();
        std::fs::write(logs.join("gc-7.log"), "").unwrap();
        assert_eq!(
            gc_logs(proc_root.path(), process).files,
            [logs.join("gc-7.log")]
        );
        // Reported once; again after `forget`.
        table.refresh();
        assert!(scanner.scan(&table).is_empty());
        scanner.forget(4242);
        assert_eq!(scanner.scan(&table).len(), 1);
    }

    /// Any local user may make the argfile a JVM names a FIFO: reading the
    /// JVM's options must not wait for a writer, and the rest still counts.
    #[test]
    fn an_argfile_that_is_a_fifo_blocks_nothing() {
        let proc_root = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let environ = "_JAVA_OPTIONS=-Xloggc:gc.log\0";
        fake_process(
            proc_root.path(),
            4243,
            100,
            "java @jvm.opts Main",
            environ,
            cwd.path(),
        );
        let fifo = cwd.path().join("jvm.opts");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        std::fs::write(cwd.path().join("gc.log"), "").unwrap();
        let mut table = ProcTable::new(proc_root.path().to_path_buf());
        table.refresh();
        let process = Scanner::default().scan(&table).remove(0);
        let (sender, receiver) = std::sync::mpsc::channel();
        let root = proc_root.path().to_path_buf();
        std::thread::spawn(move || sender.send(gc_logs(&root, &process)).unwrap());
        let logs = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading the options waited on the FIFO");
        assert_eq!(logs.files, [cwd.path().join("gc.log")]);
    }

    /// A log is the JVM's when its user owns it and no other user may
    /// write it or replace it.
    #[test]
    fn a_gc_log_is_trusted_only_when_no_other_user_can_write_it() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        let own = Some(rustix::process::geteuid().as_raw());
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("gc.log");
        assert_eq!(untrusted_log(&log, own), None, "not created yet");
        std::fs::write(&log, "").unwrap();
        mode(&log, 0o644);
        assert_eq!(untrusted_log(&log, own), None);
        let other = untrusted_log(&log, own.map(|uid| uid + 1)).unwrap();
        assert!(other.contains("is owned by uid"), "{other}");
        assert!(untrusted_log(&log, None).is_some());
        mode(&log, 0o666);
        assert!(untrusted_log(&log, own).unwrap().contains("mode 666"));
        mode(&log, 0o644);
        mode(dir.path(), 0o777);
        assert!(untrusted_log(&log, own).unwrap().contains("its directory"));
        // A sticky directory (/tmp): others cannot replace the file.
        mode(dir.path(), 0o1777);
        assert_eq!(untrusted_log(&log, own), None);
    }

    #[test]
    fn a_gc_log_has_safepoints_when_its_output_selects_them() {
        let has = |line: &str| logs_safepoints(&args(line));
        assert!(has("java -Xlog:gc*,safepoint:file=gc.log:uptime Main"));
        assert!(has(
            "java -Xlog:gc+heap=debug,safepoint*=info:file=\"a:b.log\" Main"
        ));
        // To stderr, to another file, or turned off: the log has none.
        assert!(!has(
            "java -Xlog:gc*:file=gc.log -Xlog:safepoint:stderr Main"
        ));
        assert!(!has("java -Xlog:gc*,safepoint=off:file=gc.log Main"));
        assert!(!has("java -Xlog:gc*:file=gc.log -Xlog:safepoint=info Main"));
        // JDK 8: the stopped-time lines, the last flag winning.
        assert!(has(
            "java -Xloggc:gc.log -XX:+PrintGCApplicationStoppedTime Main"
        ));
        assert!(!has(
            "java -Xloggc:gc.log -XX:+PrintGCApplicationStoppedTime -XX:-PrintGCApplicationStoppedTime Main"
        ));
        assert!(!has("java -XX:+PrintGCApplicationStoppedTime Main"));
    }

    #[test]
    fn the_service_is_the_otel_name_the_pods_workload_or_the_main() {
        let service = |environ: &str| service_of(environ.as_bytes(), "app.jar");
        assert_eq!(service("HOME=/\0"), "app.jar");
        assert_eq!(service("OTEL_SERVICE_NAME=pricing\0HOSTNAME=x"), "pricing");
        assert_eq!(
            service("OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod, service.name=quotes\0"),
            "quotes"
        );
        assert_eq!(service("OTEL_SERVICE_NAME=\0"), "app.jar");
        // Outside Kubernetes HOSTNAME is only a host (or container id).
        assert_eq!(service("HOSTNAME=pricing-7d9f8c6b5d-x2x4z\0"), "app.jar");
        let pod = |name: &str| {
            service(&format!(
                "KUBERNETES_SERVICE_HOST=10.0.0.1\0HOSTNAME={name}\0"
            ))
        };
        assert_eq!(pod("pricing-api-7d9f8c6b5d-x2x4z"), "pricing-api");
        assert_eq!(pod("node-agent-x2x4z"), "node-agent");
        assert_eq!(pod("kafka-2"), "kafka");
        assert_eq!(pod("standalone"), "standalone");
        // Not Kubernetes' random alphabet (it has no vowels): kept whole.
        assert_eq!(pod("my-release-abcde"), "my-release-abcde");
    }

    #[test]
    fn this_test_process_is_not_java() {
        let mut table = ProcTable::new(PathBuf::from("/proc"));
        table.refresh();
        let own = std::process::id();
        assert!(table.entries().any(|e| e.pid == own));
        assert!(Scanner::default().scan(&table).iter().all(|p| p.pid != own));
    }
}
