//! The BPF program loaded once, attached once per libjvm.so file on a
//! thread of its own, and its ring buffer read without blocking.
//!
//! Uprobes are per inode, and attaching by path with pid -1 covers every
//! process mapping that file, including JVMs started later and containers
//! sharing an image layer: a JDK is attached when the first JVM running it
//! is discovered, and never again.
//!
//! Any local user can name a process `java` and make its libjvm.so
//! whatever they like: a FIFO (libbpf's `open()` then waits for a writer
//! forever, SIGTERM included), a file unlinked and replaced, or a JDK
//! upgraded in place under a running JVM (`mv new libjvm.so`, as dpkg and
//! rpm do). So the agent opens the very file the process maps
//! (`/proc/PID/map_files/RANGE`), without blocking, checks it (a regular
//! ELF file of a sane size, the inode the maps name) and hands libbpf
//! `/proc/self/fd/N` of its own descriptor, never a path another user can
//! change; and the attaching, which parses the whole file, runs on a thread
//! of its own, so that the loop serving the sources never waits for it.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::Duration;

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{
    ErrorKind, Link, MapCore, MapFlags, MapHandle, OpenObject, PrintLevel, ProgramMut, RingBuffer,
};

use super::record::{read, start_ticks, SafepointRecord};
use super::skel::{types, SafepointsSkel, SafepointsSkelBuilder};
use super::Coverage;

/// The programs attached to each libjvm.so (see [`programs`]).
const PROGRAMS: usize = 7;

/// Each program and the probe it runs on.
fn programs<'a>(
    skel: &'a SafepointsSkel<'_>,
) -> [(&'a ProgramMut<'a>, &'static str, &'static str); PROGRAMS] {
    let progs = &skel.progs;
    [
        (&progs.safepoint_begin, "hs_private", "safepoint__begin"),
        (&progs.safepoint_end, "hs_private", "safepoint__end"),
        (&progs.vmop_begin, "hotspot", "vmops__begin"),
        (&progs.gc_begin, "hotspot", "gc__begin"),
        (&progs.gc_end, "hotspot", "gc__end"),
        (&progs.pool_begin, "hotspot", "mem__pool__gc__begin"),
        (&progs.pool_end, "hotspot", "mem__pool__gc__end"),
    ]
}

/// Where JDK packages and images install libjvm.so: Debian's and Red
/// Hat's packages, JDK 8's `jre/lib/ARCH/server`, and the images that put
/// a JDK under `/opt` (Eclipse Temurin's `/opt/java/openjdk`) or `/usr/local`.
const INSTALLED_LIBJVM: [&str; 6] = [
    "/usr/lib/jvm/*/lib/server/libjvm.so",
    "/usr/lib/jvm/*/jre/lib/*/server/libjvm.so",
    "/usr/java/*/lib/server/libjvm.so",
    "/opt/java/*/lib/server/libjvm.so",
    "/opt/*/lib/server/libjvm.so",
    "/usr/local/*/lib/server/libjvm.so",
];

/// The largest libjvm.so believed: HotSpot's are 15-25 MB (with debug
/// symbols, under 300 MB); a larger file is not parsed.
const MAX_LIBJVM_BYTES: u64 = 512 << 20;

/// Why a JVM is not measured by eBPF, as `/metrics` says it
/// (`pausewatch_jvm_discovered{ebpf_reason}`).
pub const PERMISSION_DENIED: &str = "permission_denied";
pub const LOAD_FAILED: &str = "load_failed";
pub const NO_LIBJVM: &str = "no_libjvm";
pub const ATTACH_FAILED: &str = "attach_failed";
/// The file mapped as libjvm.so is no shared library (a FIFO, a device, not
/// ELF, absurdly large).
pub const NOT_A_LIBRARY: &str = "not_a_library";
/// The libjvm.so the JVM maps was replaced since (a JDK upgraded in place),
/// and the file it maps cannot be opened (`map_files` needs CAP_SYS_ADMIN).
pub const LIBJVM_REPLACED: &str = "libjvm_replaced";

/// There are too few file descriptors for the probes beside the files,
/// connections and checkpoint the agent's descriptors are planned for.
pub const TOO_FEW_DESCRIPTORS: &str = "too_few_descriptors";

/// A file's identity: device and inode, which uprobes are attached to.
type FileId = (u64, u64);

/// A libjvm.so opened by the agent itself, checked, ready to be attached
/// through its descriptor.
pub struct Library {
    file: File,
    id: FileId,
    /// What the logs call it: the path the process maps it at.
    shown: PathBuf,
}

/// How far the attaching of one libjvm.so is.
#[derive(Debug, Clone, PartialEq)]
enum Attachment {
    Pending,
    Attached,
    /// The reason, and what was said.
    Failed(&'static str, String),
}

/// The loaded program's maps, its ring buffer and the thread that attaches
/// it. Fields drop in order: the ring buffer before the map it reads.
pub struct Probes {
    ring: RingBuffer<'static>,
    /// Kept open: the ring buffer's epoll waits on this descriptor.
    _events: MapHandle,
    inflight: MapHandle,
    drops: MapHandle,
    budgets: MapHandle,
    received: Arc<Mutex<Vec<SafepointRecord>>>,
    /// Libraries for the attaching thread.
    requests: mpsc::Sender<Library>,
    /// How far each file is, by identity: a file that could not be
    /// attached keeps its reason, so it is not tried at every JVM.
    attachments: Arc<Mutex<HashMap<FileId, Attachment>>>,
}

/// libbpf's own lines, through the agent's log instead of bare on stderr.
/// On a refused `bpf()` libbpf blames RLIMIT_MEMLOCK and the kernel's
/// configuration; since Linux 5.11 BPF memory is charged to the cgroup, and
/// EPERM means a capability is missing, or a seccomp filter or LSM denies
/// `bpf()`: that is what the line says instead.
fn log_libbpf(level: PrintLevel, message: String) {
    let message = message.trim_end();
    let message = message.strip_prefix("libbpf: ").unwrap_or(message);
    let refused = message.contains("EPERM") || message.contains("Operation not permitted");
    if refused && message.contains("RLIMIT_MEMLOCK") {
        tracing::debug!(target: "libbpf", "{message}");
        return;
    }
    match level {
        PrintLevel::Warn => tracing::warn!(target: "libbpf", "{message}"),
        PrintLevel::Info => tracing::info!(target: "libbpf", "{message}"),
        PrintLevel::Debug => tracing::debug!(target: "libbpf", "{message}"),
    }
}

/// An error of the BPF syscalls as a reason and a detail.
fn refused(error: &libbpf_rs::Error) -> (&'static str, String) {
    let reason = match error.kind() {
        ErrorKind::PermissionDenied => PERMISSION_DENIED,
        _ => LOAD_FAILED,
    };
    (reason, format!("{error:#}"))
}

impl Probes {
    /// Loads the program, sets up its ring buffer and starts the thread
    /// that attaches it: `Err` is a reason and what the kernel said (no
    /// CAP_BPF and CAP_PERFMON, no BTF...).
    pub fn load() -> Result<Probes, (&'static str, String)> {
        libbpf_rs::set_print(Some((PrintLevel::Info, log_libbpf)));
        // The skeleton borrows its object's storage for as long as it
        // lives, the agent's lifetime: the storage is leaked, once.
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let skel = SafepointsSkelBuilder::default()
            .open(storage)
            .and_then(|open| open.load())
            .map_err(|e| refused(&e))?;
        let maps = &skel.maps;
        let handle =
            |map: &libbpf_rs::MapMut<'_>| MapHandle::try_from(map).map_err(|e| refused(&e));
        let (events, inflight) = (handle(&maps.events)?, handle(&maps.inflight)?);
        let (drops, budgets) = (handle(&maps.drops)?, handle(&maps.budgets)?);
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        let mut builder = libbpf_rs::RingBufferBuilder::new();
        builder
            .add(&events, move |data: &[u8]| {
                if let Some(record) = SafepointRecord::parse(data) {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(record);
                }
                0
            })
            .map_err(|e| refused(&e))?;
        let ring = builder.build().map_err(|e| refused(&e))?;
        let held = probe_descriptors();
        if !crate::follow::room_for_probes(0, held) {
            return Err((
                TOO_FEW_DESCRIPTORS,
                format!("the probes need {held} file descriptors and more for each JDK, beyond those the open-files limit leaves (raise it: LimitNOFILE)"),
            ));
        }
        crate::follow::set_held_by_probes(held);
        let (requests, pending) = mpsc::channel();
        let attachments = Arc::new(Mutex::new(HashMap::new()));
        let shared = attachments.clone();
        std::thread::Builder::new()
            .name("ebpf-attach".to_string())
            .spawn(move || attach_requested(skel, pending, shared))
            .map_err(|e| (LOAD_FAILED, format!("no thread to attach with: {e}")))?;
        Ok(Probes {
            ring,
            _events: events,
            inflight,
            drops,
            budgets,
            received,
            requests,
            attachments,
        })
    }

    /// Whether the libjvm.so that process `pid` maps is attached; asks
    /// for it to be when it was never seen ([`Coverage::Attaching`]).
    pub fn cover(&mut self, proc_root: &Path, pid: u32) -> Coverage {
        match mapped_libjvm(proc_root, pid) {
            Ok(library) => self.request(library),
            Err((reason, detail)) => Coverage::NotMeasured(reason, detail),
        }
    }

    /// Asks for the JDKs installed where packages and images put them, so
    /// that the first JVM of each is covered from its first safepoint, not
    /// from its discovery; a JDK elsewhere is attached when a JVM running
    /// it is discovered.
    pub fn attach_installed(&mut self) {
        let libraries = INSTALLED_LIBJVM
            .iter()
            .filter_map(|pattern| glob::glob(pattern).ok())
            .flatten()
            .flatten();
        for path in libraries {
            match open_library(&path, None) {
                Ok(library) => drop(self.request(library)),
                Err((reason, error)) => {
                    tracing::warn!(library = %path.display(), reason, error, "not attached")
                }
            }
        }
    }

    /// Where `library` is: attached, failed, or handed to the attaching
    /// thread now.
    fn request(&mut self, library: Library) -> Coverage {
        let mut attachments = self
            .attachments
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match attachments.get(&library.id) {
            Some(Attachment::Attached) => Coverage::Measured,
            Some(Attachment::Failed(reason, error)) => Coverage::NotMeasured(reason, error.clone()),
            Some(Attachment::Pending) => Coverage::Attaching,
            None => {
                attachments.insert(library.id, Attachment::Pending);
                if let Err(mpsc::SendError(library)) = self.requests.send(library) {
                    let error = "the attaching thread has ended".to_string();
                    let failed = Attachment::Failed(ATTACH_FAILED, error.clone());
                    attachments.insert(library.id, failed);
                    return Coverage::NotMeasured(ATTACH_FAILED, error);
                }
                Coverage::Attaching
            }
        }
    }

    /// The records the ring buffer holds now, without waiting.
    pub fn drain(&mut self) -> Vec<SafepointRecord> {
        // A negative count is an error of the ring buffer's epoll; the
        // records it holds are read at the next call.
        let _ = self.ring.poll_raw(Duration::ZERO);
        std::mem::take(&mut *self.received.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// When each of `pids` at a safepoint that has begun and not ended
    /// began it, with the process's start (HotSpot counts a safepoint when
    /// it begins; the one a JVM exits in never ends, so the map keeps an
    /// entry of every JVM that exited: only the JVMs asked for are looked up).
    pub fn in_flight(&self, pids: &[u32]) -> HashMap<u32, (u64, u64)> {
        per_pid(&self.inflight, pids, |state: types::inflight| {
            (state.record.begin_ns, start_ticks(state.record.start_ns))
        })
    }

    /// The records each of `pids` lost to its budget since it started,
    /// with the process's start in clock ticks (as [`Probes::in_flight`]).
    pub fn throttled(&self, pids: &[u32]) -> HashMap<u32, (u64, u64)> {
        per_pid(&self.budgets, pids, |budget: types::budget| {
            (budget.throttled, start_ticks(budget.start_ns))
        })
    }

    /// Records the ring buffer had no room for, since the program loaded.
    pub fn dropped(&self) -> u64 {
        match self.drops.lookup(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(value)) if value.len() == 8 => {
                u64::from_ne_bytes(value.try_into().expect("8 bytes"))
            }
            _ => 0,
        }
    }
}

/// What `pick` takes of the value each of `pids` has in `map`, a map
/// keyed by tgid whose values are the generated type `T`.
fn per_pid<T: Copy, V>(map: &MapHandle, pids: &[u32], pick: impl Fn(T) -> V) -> HashMap<u32, V> {
    pids.iter()
        .filter_map(|pid| {
            let value = map.lookup(&pid.to_ne_bytes(), MapFlags::ANY).ok()??;
            Some((*pid, pick(read::<T>(&value)?)))
        })
        .collect()
}

/// The attaching thread: attaches every library asked for through its
/// descriptor, keeps the links for the agent's lifetime, and says how it went.
fn attach_requested(
    skel: SafepointsSkel<'static>,
    requests: mpsc::Receiver<Library>,
    attachments: Arc<Mutex<HashMap<FileId, Attachment>>>,
) {
    let mut links: HashMap<FileId, Vec<Link>> = HashMap::new();
    for library in requests {
        // The kernel resolves this in the agent, to the file it opened.
        let through = PathBuf::from(format!("/proc/self/fd/{}", library.file.as_raw_fd()));
        let held = probe_descriptors();
        let attached = if crate::follow::room_for_probes(held, PROGRAMS) {
            attach(&skel, &through).map_err(|error| (ATTACH_FAILED, error))
        } else {
            Err((TOO_FEW_DESCRIPTORS, format!("{held} file descriptors held by the probes already, and no room for more beyond those the open-files limit leaves (raise it: LimitNOFILE)")))
        };
        let outcome = match attached {
            Ok(attached) => {
                tracing::info!(library = %library.shown.display(), "eBPF safepoint probes attached");
                links.insert(library.id, attached);
                crate::follow::set_held_by_probes(probe_descriptors());
                Attachment::Attached
            }
            Err((reason, error)) => {
                tracing::warn!(library = %library.shown.display(), reason, error, "eBPF safepoint probes cannot be attached: its JVMs' pauses come from hsperfdata");
                Attachment::Failed(reason, error)
            }
        };
        attachments
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(library.id, outcome);
    }
}

/// Every program attached to its probe in `library`, for every process.
fn attach(skel: &SafepointsSkel<'_>, library: &Path) -> Result<Vec<Link>, String> {
    programs(skel)
        .into_iter()
        .map(|(program, provider, probe)| {
            program
                .attach_usdt(-1, library, provider, probe)
                .map_err(|e| format!("{provider}:{probe}: {e:#}"))
        })
        .collect()
}

/// The descriptors the BPF program, its maps, its links and its ring
/// buffer hold, counted by kind in `/proc/self/fd` (on kernels without
/// multi-uprobe links, a probe site is a perf event of its own).
fn probe_descriptors() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let bpf = entries
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter(|target| {
            let target = target.as_os_str().as_encoded_bytes();
            [
                &b"anon_inode:bpf"[..],
                b"anon_inode:btf",
                b"anon_inode:[perf_event]",
            ]
            .iter()
            .any(|kind| target.starts_with(kind))
        })
        .count();
    // The ring buffer's epoll.
    bpf + 1
}

/// The libjvm.so that process `pid` maps, opened by its mapping
/// (`/proc/PID/map_files/RANGE`: the very file mapped, unlinked or replaced
/// since or not); where that is refused (it needs CAP_SYS_ADMIN), by the
/// path it was mapped from, through `/proc/PID/root`, kept only when it is
/// still the inode the maps name.
pub fn mapped_libjvm(proc_root: &Path, pid: u32) -> Result<Library, (&'static str, String)> {
    let process = proc_root.join(pid.to_string());
    let no_libjvm = || {
        (
            NO_LIBJVM,
            format!("no libjvm.so in {}/maps", process.display()),
        )
    };
    let maps = std::fs::read_to_string(process.join("maps")).map_err(|_| no_libjvm())?;
    // `START-END PERMS OFFSET DEV INODE PATH[ (deleted)]`
    let (range, inode, path) = maps
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(6, char::is_whitespace);
            let range = fields.next()?;
            let inode = fields.nth(3)?;
            let path = fields.next()?.trim_start();
            let path = path.strip_suffix(" (deleted)").unwrap_or(path);
            path.ends_with("/libjvm.so").then(|| {
                (
                    range.to_string(),
                    inode.parse::<u64>().ok(),
                    path.to_string(),
                )
            })
        })
        .ok_or_else(no_libjvm)?;
    let shown = PathBuf::from(&path);
    let mapped = process.join("map_files").join(&range);
    let through_root = process.join("root").join(path.trim_start_matches('/'));
    let (opened, at) = match open_nonblocking(&mapped) {
        Err(error) if matches!(error.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
            (open_nonblocking(&through_root), through_root)
        }
        opened => (opened, mapped),
    };
    let replaced_hint = |(reason, error): (&'static str, String)| {
        match reason {
        LIBJVM_REPLACED => (reason, format!("{error}; the file the JVM maps can be opened only through /proc/{pid}/map_files, which needs CAP_SYS_ADMIN")),
        _ => (reason, error),
    }
    };
    checked_library(opened, &at, inode)
        .map(|library| Library { shown, ..library })
        .map_err(replaced_hint)
}

/// `path` opened for reading without blocking (a FIFO opens at once).
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// Opens `path` without blocking and keeps it when it is a library (see
/// [`checked_library`]).
fn open_library(path: &Path, inode: Option<u64>) -> Result<Library, (&'static str, String)> {
    checked_library(open_nonblocking(path), path, inode)
}

/// The file opened at `path`, kept when it is a regular ELF file of a
/// believable size, and the inode `inode` when one is expected.
fn checked_library(
    opened: std::io::Result<File>,
    path: &Path,
    inode: Option<u64>,
) -> Result<Library, (&'static str, String)> {
    let shown = path.display();
    let file = opened.map_err(|error| (NOT_A_LIBRARY, format!("{shown}: {error}")))?;
    let metadata = file
        .metadata()
        .map_err(|error| (NOT_A_LIBRARY, format!("{shown}: {error}")))?;
    if !metadata.is_file() {
        return Err((NOT_A_LIBRARY, format!("{shown} is not a regular file")));
    }
    if metadata.len() > MAX_LIBJVM_BYTES {
        let size = metadata.len();
        return Err((
            NOT_A_LIBRARY,
            format!("{shown} has {size} bytes, more than a libjvm.so"),
        ));
    }
    if inode.is_some_and(|inode| inode != metadata.ino()) {
        return Err((
            LIBJVM_REPLACED,
            format!("{shown} was replaced since the JVM mapped it"),
        ));
    }
    let mut magic = [0u8; 4];
    if file.read_exact_at(&mut magic, 0).is_err() || &magic != b"\x7fELF" {
        return Err((NOT_A_LIBRARY, format!("{shown} is not an ELF file")));
    }
    Ok(Library {
        id: (metadata.dev(), metadata.ino()),
        file,
        shown: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc with a process mapping `libjvm.so` from `mapped`, whose
    /// mapping's file is `map_file` (made by `make`).
    fn fake(make: impl FnOnce(&Path)) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let process = root.path().join("42");
        std::fs::create_dir_all(process.join("map_files")).unwrap();
        let file = process.join("map_files/7f00-7f10");
        make(&file);
        let inode = std::fs::metadata(&file).map(|m| m.ino()).unwrap_or(0);
        std::fs::write(
            process.join("maps"),
            format!("7f00-7f10 r-xp 00000000 fd:01 {inode}                    /opt/jdk/lib/server/libjvm.so (deleted)\n"),
        )
        .unwrap();
        root
    }

    #[test]
    fn a_fifo_mapped_as_libjvm_is_refused_without_blocking() {
        let root = fake(|file| {
            let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
        });
        let (reason, error) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, NOT_A_LIBRARY);
        assert!(error.ends_with("is not a regular file"), "{error}");
    }

    #[test]
    fn only_an_elf_file_of_the_mapped_inode_is_a_library() {
        let root = fake(|file| std::fs::write(file, b"#!/bin/sh\n").unwrap());
        let (reason, _) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, NOT_A_LIBRARY);
        let root = fake(|file| std::fs::write(file, b"\x7fELF\x02\x01\x01").unwrap());
        let library = mapped_libjvm(root.path(), 42).ok().unwrap();
        assert_eq!(library.shown, Path::new("/opt/jdk/lib/server/libjvm.so"));
        // The file at the mapping is another inode than the maps name.
        let replaced = root.path().join("42/map_files/7f00-7f10");
        let new = root.path().join("new");
        std::fs::write(&new, b"\x7fELF\x02\x01\x01").unwrap();
        std::fs::rename(&new, &replaced).unwrap();
        let (reason, _) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, LIBJVM_REPLACED);
        assert_eq!(mapped_libjvm(root.path(), 43).err().unwrap().0, NO_LIBJVM);
    }
}
