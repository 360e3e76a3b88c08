//! The BPF program loaded once, attached once per libjvm.so file on a
//! thread of its own, and its ring buffer read by another (`ring.rs`).
//!
//! Uprobes are per inode, and attaching by path with pid -1 covers every
//! process mapping that file, including JVMs started later and containers
//! sharing an image layer: a JDK is attached when the first JVM running it
//! is discovered, and never again.
//!
//! A library is opened and checked by `library.rs` before libbpf sees it;
//! the attaching, which parses the whole file, runs on a thread of its own,
//! so that the loop serving the sources never waits for it. Any local user
//! can make the agent attach to copies of libjvm.so of their own, so the
//! attachments are bounded (in all, and per user), and one no process runs
//! any more is released.

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{
    ErrorKind, Link, MapCore, MapFlags, MapHandle, OpenObject, PrintLevel, ProgramMut,
};

use super::library::{has_jvm_signs, mapped_libjvm, open_library, FileId, Library};
use super::record::{read, SafepointRecord};
use super::ring::RingReader;
use super::skel::{types, SafepointsSkel, SafepointsSkelBuilder};
use super::{Asking, Coverage};
use crate::store::EbpfReason;

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

/// Libraries attached at once, at most, and per non-root user whose
/// processes asked for them: libbpf's table of USDT specs is full at about
/// 36 files, and each file holds 7 links.
const MAX_LIBRARIES: usize = 24;
const MAX_LIBRARIES_PER_USER: usize = 4;

/// How far the attaching of one libjvm.so is.
#[derive(Debug, Clone, PartialEq)]
enum Attachment {
    Pending,
    /// Since this CLOCK_BOOTTIME instant, what /proc counts a start on.
    Attached(Duration),
    /// The reason, and what was said.
    Failed(EbpfReason, String),
}

/// Who a library was attached for.
struct Use {
    /// Installed where packages put JDKs: kept for the JVMs to come.
    installed: bool,
    /// The non-root user whose process asked for it first: it counts
    /// against their bound.
    user: Option<u32>,
    /// The processes it was asked for (pid, start ticks): released once
    /// none of them runs.
    processes: HashSet<(u32, u64)>,
}

/// What the attaching thread is asked to do.
enum Request {
    Attach(Library),
    Release(FileId),
}

/// The loaded program's maps, its ring buffer's reader and the thread that
/// attaches it.
pub struct Probes {
    ring: RingReader<SafepointRecord>,
    inflight: MapHandle,
    drops: MapHandle,
    budgets: MapHandle,
    /// The JVMs the configuration leaves out (`left_out_jvms`, by pid)...
    left_out: MapHandle,
    /// ...and the start of the process each pid was left out for, so that
    /// the pid is taken out when it exits or another process has it.
    left_out_processes: HashMap<u32, u64>,
    /// Measured JVMs whose pid was still left out for a process that had
    /// exited: their records before discovery were not sent.
    sent_late: HashSet<(u32, u64)>,
    /// Work for the attaching thread.
    requests: mpsc::Sender<Request>,
    /// How far each file is, by identity: a file that could not be
    /// attached keeps its reason, so it is not tried at every JVM.
    attachments: Arc<Mutex<HashMap<FileId, Attachment>>>,
    /// Who each file asked for or attached is for.
    uses: HashMap<FileId, Use>,
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
fn refused(error: &libbpf_rs::Error) -> (EbpfReason, String) {
    let reason = match error.kind() {
        ErrorKind::PermissionDenied => EbpfReason::PermissionDenied,
        _ => EbpfReason::LoadFailed,
    };
    (reason, format!("{error:#}"))
}

impl Probes {
    /// Loads the program, sets up its ring buffer and starts the thread
    /// that attaches it: `Err` is a reason and what the kernel said (no
    /// CAP_BPF and CAP_PERFMON, no BTF...).
    pub fn load() -> Result<Probes, (EbpfReason, String)> {
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
        let left_out = handle(&maps.left_out_jvms)?;
        let ring = RingReader::start("ebpf-safepoints", events, SafepointRecord::parse)
            .map_err(|error| (EbpfReason::LoadFailed, error))?;
        let held = probe_descriptors();
        if !crate::follow::room_for_probes(0, held) {
            return Err((
                EbpfReason::TooFewDescriptors,
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
            .map_err(|e| {
                (
                    EbpfReason::LoadFailed,
                    format!("no thread to attach with: {e}"),
                )
            })?;
        Ok(Probes {
            ring,
            inflight,
            drops,
            budgets,
            left_out,
            left_out_processes: HashMap::new(),
            sent_late: HashSet::new(),
            requests,
            attachments,
            uses: HashMap::new(),
        })
    }

    /// Whether the libjvm.so that the process `asking` maps is attached;
    /// asks for it to be when it was never seen ([`Coverage::Attaching`]),
    /// unless the process shows no JVM's signs, the file is another user's
    /// to change, or its user (or the host) has as many attached as allowed.
    pub fn cover(&mut self, proc_root: &Path, asking: &Asking) -> Coverage {
        self.measure_pid(asking.pid, asking.start_ticks);
        match self.cover_library(proc_root, asking) {
            Coverage::Measured { .. } if self.sent_late.contains(&asking.process()) => {
                Coverage::Measured { from_start: false }
            }
            coverage => coverage,
        }
    }

    /// [`Self::cover`] but for a pid that was left out.
    fn cover_library(&mut self, proc_root: &Path, asking: &Asking) -> Coverage {
        let library = match mapped_libjvm(proc_root, asking.pid) {
            Ok(library) => library,
            Err((reason, detail)) => return Coverage::NotMeasured(reason, detail),
        };
        if !has_jvm_signs(proc_root, asking.pid) {
            if asking.young {
                return Coverage::NotYet;
            }
            let detail = format!(
                "process {} maps {} but has no VM Thread",
                asking.pid,
                library.shown.display()
            );
            return Coverage::NotMeasured(EbpfReason::NotAJvm, detail);
        }
        // An unknown owner is trusted with nothing.
        let uid = asking.uid.unwrap_or(u32::MAX);
        if let Some(why) = library.untrusted_for(uid) {
            return Coverage::NotMeasured(EbpfReason::UntrustedLibrary, why);
        }
        let process = asking.process();
        if let Some(known) = self.uses.get_mut(&library.id) {
            known.processes.insert(process);
            return self.request(library, asking.start_ticks);
        }
        let user = (uid != 0).then_some(uid);
        let users = |user| self.uses.values().filter(|u| u.user == Some(user)).count();
        let limit = match user {
            _ if self.uses.len() >= MAX_LIBRARIES => Some(format!(
                "{} libraries attached or asked for already",
                self.uses.len()
            )),
            Some(user) if users(user) >= MAX_LIBRARIES_PER_USER => Some(format!(
                "{} libraries attached for uid {user}'s processes already",
                users(user)
            )),
            _ => None,
        };
        if let Some(limit) = limit {
            return Coverage::NotMeasured(EbpfReason::AttachLimit, limit);
        }
        let use_ = Use {
            installed: false,
            user,
            processes: HashSet::from([process]),
        };
        self.uses.insert(library.id, use_);
        self.request(library, asking.start_ticks)
    }

    /// Asks for the JDKs installed where packages and images put them, so
    /// that the first JVM of each is covered from its first safepoint, not
    /// from its discovery; a JDK elsewhere is attached when a JVM running
    /// it is discovered. Only root's files: another user's under `/opt` is
    /// theirs to change.
    pub fn attach_installed(&mut self) {
        let libraries = INSTALLED_LIBJVM
            .iter()
            .filter_map(|pattern| glob::glob(pattern).ok())
            .flatten()
            .flatten();
        for path in libraries {
            let checked =
                open_library(&path, None).and_then(|library| match library.untrusted_for(0) {
                    Some(why) => Err((EbpfReason::UntrustedLibrary, why)),
                    None => Ok(library),
                });
            match checked {
                Ok(library) if !self.uses.contains_key(&library.id) => {
                    let use_ = Use {
                        installed: true,
                        user: None,
                        processes: HashSet::new(),
                    };
                    self.uses.insert(library.id, use_);
                    drop(self.request(library, 0));
                }
                Ok(_) => {}
                Err((reason, error)) => {
                    tracing::warn!(library = %path.display(), reason = reason.as_str(), error, "not attached")
                }
            }
        }
    }

    /// Silences the probes for the JVM `pid` started at `start_ticks` (as
    /// /proc/PID/stat says), which the configuration leaves out: its
    /// safepoints still trap in the kernel, but send no record for the
    /// agent to read and throw away.
    pub fn leave_out(&mut self, pid: u32, start_ticks: u64) {
        match (self.left_out).update(&pid.to_ne_bytes(), &[1], MapFlags::ANY) {
            Ok(()) => drop(self.left_out_processes.insert(pid, start_ticks)),
            // A full map (16,384 JVMs left out at once): this one's
            // records are read and dropped, as before.
            Err(error) => {
                tracing::debug!(pid, error = %error, "a JVM left out still sends its records")
            }
        }
    }

    /// The JVMs left out (pid, start ticks), while they run.
    pub fn left_out(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.left_out_processes
            .iter()
            .map(|(pid, ticks)| (*pid, *ticks))
    }

    /// Takes `pid` out of the JVMs left out, for the JVM started at
    /// `start_ticks` that discovery selects: when the pid was in for a
    /// process that exited (the map is cleaned every few seconds, a pid may
    /// come back sooner), this JVM's records were not sent until now.
    fn measure_pid(&mut self, pid: u32, start_ticks: u64) {
        if let Some(ticks) = self.left_out_processes.remove(&pid) {
            let _ = self.left_out.delete(&pid.to_ne_bytes());
            if ticks != start_ticks {
                self.sent_late.insert((pid, start_ticks));
            }
        }
    }

    /// Releases the libraries attached for processes none of which is
    /// `alive` any more (installed JDKs stay attached), and takes the JVMs
    /// left out that exited out of the map.
    pub fn release_unused(&mut self, alive: impl Fn(u32, u64) -> bool) {
        self.sent_late.retain(|(pid, ticks)| alive(*pid, *ticks));
        let left_out = &self.left_out;
        self.left_out_processes.retain(|pid, ticks| {
            let alive = alive(*pid, *ticks);
            if !alive {
                let _ = left_out.delete(&pid.to_ne_bytes());
            }
            alive
        });
        let mut released = Vec::new();
        for (id, known) in &mut self.uses {
            known.processes.retain(|(pid, ticks)| alive(*pid, *ticks));
            if !known.installed && known.processes.is_empty() {
                released.push(*id);
            }
        }
        let mut attachments = self
            .attachments
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for id in released {
            self.uses.remove(&id);
            attachments.remove(&id);
            let _ = self.requests.send(Request::Release(id));
        }
    }

    /// Where `library` is for a process started at `started_ticks`:
    /// attached (before it started, or not), failed, or handed to the
    /// attaching thread now.
    fn request(&mut self, library: Library, started_ticks: u64) -> Coverage {
        let mut attachments = self
            .attachments
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match attachments.get(&library.id) {
            Some(Attachment::Attached(at)) => {
                let tick_ns = 1_000_000_000 / procfs::ticks_per_second().max(1);
                let started = Duration::from_nanos(started_ticks.saturating_mul(tick_ns));
                Coverage::Measured {
                    from_start: *at <= started,
                }
            }
            Some(Attachment::Failed(reason, error)) => {
                Coverage::NotMeasured(*reason, error.clone())
            }
            Some(Attachment::Pending) => Coverage::Attaching,
            None => {
                let id = library.id;
                attachments.insert(id, Attachment::Pending);
                if self.requests.send(Request::Attach(library)).is_err() {
                    let error = "the attaching thread has ended".to_string();
                    let failed = Attachment::Failed(EbpfReason::AttachFailed, error.clone());
                    attachments.insert(id, failed);
                    return Coverage::NotMeasured(EbpfReason::AttachFailed, error);
                }
                Coverage::Attaching
            }
        }
    }

    /// The records submitted since the last call, without waiting.
    pub fn drain(&mut self) -> Vec<SafepointRecord> {
        self.ring.drain()
    }

    /// When each of `pids` at a safepoint that has begun and not ended
    /// began it (HotSpot counts a safepoint when it begins; the one a JVM
    /// exits in never ends, so the map keeps an entry of every JVM that
    /// exited: only the JVMs asked for are looked up).
    pub fn in_flight(&self, pids: &[u32]) -> HashMap<u32, SafepointRecord> {
        per_pid(&self.inflight, pids, SafepointRecord::in_flight)
    }

    /// The records each of `pids` lost to its budget (of every process
    /// that has had the pid since the entry was made).
    pub fn throttled(&self, pids: &[u32]) -> HashMap<u32, u64> {
        per_pid(&self.budgets, pids, |budget: types::budget| {
            budget.throttled
        })
    }

    /// Records the ring buffer, or the queue after it, had no room for,
    /// since the program loaded.
    pub fn dropped(&self) -> u64 {
        let in_kernel = match self.drops.lookup(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(value)) if value.len() == 8 => {
                u64::from_ne_bytes(value.try_into().expect("8 bytes"))
            }
            _ => 0,
        };
        in_kernel + self.ring.overflowed()
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
/// descriptor (unless it has more probe sites than any JDK), keeps the
/// links until the library is released, and says how it went. An outcome
/// is kept only while its library is still asked for: one released while
/// being attached has its links dropped at the release that follows.
fn attach_requested(
    skel: SafepointsSkel<'static>,
    requests: mpsc::Receiver<Request>,
    attachments: Arc<Mutex<HashMap<FileId, Attachment>>>,
) {
    let mut links: HashMap<FileId, Vec<Link>> = HashMap::new();
    for request in requests {
        let library = match request {
            Request::Attach(library) => library,
            Request::Release(id) => {
                if links.remove(&id).is_some() {
                    tracing::info!(
                        device = id.0,
                        inode = id.1,
                        "eBPF safepoint probes released: no JVM runs the library any more"
                    );
                    crate::follow::set_held_by_probes(probe_descriptors());
                }
                continue;
            }
        };
        // The kernel resolves this in the agent, to the file it opened.
        let through = PathBuf::from(format!("/proc/self/fd/{}", library.file.as_raw_fd()));
        let held = probe_descriptors();
        let attached = if !crate::follow::room_for_probes(held, PROGRAMS) {
            Err((EbpfReason::TooFewDescriptors, format!("{held} file descriptors held by the probes already, and no room for more beyond those the open-files limit leaves (raise it: LimitNOFILE)")))
        } else {
            library
                .probe_sites()
                .map_err(|error| (EbpfReason::NotALibrary, error))
                .and_then(|_| {
                    attach(&skel, &through).map_err(|error| (EbpfReason::AttachFailed, error))
                })
        };
        let outcome = match attached {
            Ok(attached) => {
                tracing::info!(library = %library.shown.display(), "eBPF safepoint probes attached");
                links.insert(library.id, attached);
                crate::follow::set_held_by_probes(probe_descriptors());
                Attachment::Attached(crate::sources::clock_now(libc::CLOCK_BOOTTIME))
            }
            Err((reason, error)) => {
                tracing::warn!(library = %library.shown.display(), reason = reason.as_str(), error, "eBPF safepoint probes cannot be attached: its JVMs' pauses come from hsperfdata");
                Attachment::Failed(reason, error)
            }
        };
        let mut attachments = attachments.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = attachments.get_mut(&library.id) {
            *state = outcome;
        }
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
/// multi-uprobe links, a probe site is a perf event of its own); the
/// request-latency probes' too, when they are loaded.
pub(crate) fn probe_descriptors() -> usize {
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
