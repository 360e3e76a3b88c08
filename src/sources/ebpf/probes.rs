//! The BPF program loaded once, attached once per libjvm.so file, and its
//! ring buffer read without blocking.
//!
//! Uprobes are per inode, and attaching by path with pid -1 covers every
//! process mapping that file, including JVMs started later and containers
//! sharing an image layer: a JDK is attached when the first JVM running it
//! is discovered, and never again.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use libbpf_rs::{ErrorKind, Link, MapCore, MapFlags, Object, ObjectBuilder, RingBuffer};

use super::record::SafepointRecord;

/// The BPF object build.rs compiled from `safepoints.bpf.c`.
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/safepoints.bpf.o"));

/// Each program and the probe it runs on.
const PROBES: [(&str, &str, &str); 7] = [
    ("safepoint_begin", "hs_private", "safepoint__begin"),
    ("safepoint_end", "hs_private", "safepoint__end"),
    ("vmop_begin", "hotspot", "vmops__begin"),
    ("gc_begin", "hotspot", "gc__begin"),
    ("gc_end", "hotspot", "gc__end"),
    ("pool_begin", "hotspot", "mem__pool__gc__begin"),
    ("pool_end", "hotspot", "mem__pool__gc__end"),
];

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

/// Why a JVM is not measured by eBPF, as `/metrics` says it
/// (`pausewatch_jvm_discovered{ebpf_reason}`).
pub const PERMISSION_DENIED: &str = "permission_denied";
pub const LOAD_FAILED: &str = "load_failed";
pub const NO_LIBJVM: &str = "no_libjvm";
pub const ATTACH_FAILED: &str = "attach_failed";

/// The loaded program, its attachments and its ring buffer. Fields drop in
/// order: the ring buffer and the links before the object they use.
pub struct Probes {
    ring: RingBuffer<'static>,
    /// Attachments by libjvm.so (device, inode); a file that could not be
    /// attached keeps its reason instead, so it is not tried at every JVM.
    attached: HashMap<(u64, u64), Result<Vec<Link>, String>>,
    object: Object,
    received: Arc<Mutex<Vec<SafepointRecord>>>,
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
    /// Loads the program and sets up its ring buffer: `Err` is a reason
    /// and what the kernel said (no CAP_BPF and CAP_PERFMON, no BTF...).
    pub fn load() -> Result<Probes, (&'static str, String)> {
        let object = ObjectBuilder::default()
            .open_memory(OBJECT)
            .and_then(|open| open.load())
            .map_err(|e| refused(&e))?;
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        let events = object
            .maps()
            .find(|map| map.name() == "events")
            .ok_or((LOAD_FAILED, "no events map".to_string()))?;
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
        Ok(Probes {
            ring,
            attached: HashMap::new(),
            object,
            received,
        })
    }

    /// Attaches the libjvm.so that process `pid` maps, unless its file is
    /// attached already: `Err` is the reason the JVM is not covered.
    pub fn cover(&mut self, proc_root: &Path, pid: u32) -> Result<(), (&'static str, String)> {
        let library = libjvm_of(proc_root, pid).ok_or_else(|| {
            (
                NO_LIBJVM,
                format!("no libjvm.so in {}/{pid}/maps", proc_root.display()),
            )
        })?;
        self.attach_file(&library)
            .map_err(|error| (ATTACH_FAILED, error))
    }

    /// Attaches the JDKs installed where packages and images put them, so
    /// that the first JVM of each is covered from its first safepoint, not
    /// from its discovery; a JDK elsewhere is attached when a JVM running
    /// it is discovered.
    pub fn attach_installed(&mut self) {
        let libraries = INSTALLED_LIBJVM
            .iter()
            .filter_map(|pattern| glob::glob(pattern).ok())
            .flatten()
            .flatten();
        for library in libraries {
            let _ = self.attach_file(&library);
        }
    }

    /// Attaches `library` unless its file is attached already (or could
    /// not be, which is not tried again).
    fn attach_file(&mut self, library: &Path) -> Result<(), String> {
        let metadata =
            std::fs::metadata(library).map_err(|e| format!("{}: {e}", library.display()))?;
        let file = (metadata.dev(), metadata.ino());
        let object = &self.object;
        let attached = self.attached.entry(file).or_insert_with(|| {
            let links = attach(object, library);
            match &links {
                Ok(_) => tracing::info!(library = %library.display(), "eBPF safepoint probes attached"),
                Err(error) => tracing::warn!(library = %library.display(), error, "eBPF safepoint probes cannot be attached: its JVMs' pauses come from hsperfdata"),
            }
            links
        });
        attached.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// The records the ring buffer holds now, without waiting.
    pub fn drain(&mut self) -> Vec<SafepointRecord> {
        // A negative count is an error of the ring buffer's epoll; the
        // records it holds are read at the next call.
        let _ = self.ring.poll_raw(Duration::ZERO);
        std::mem::take(&mut *self.received.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// When each of `pids` at a safepoint that has begun and not ended
    /// began it (HotSpot counts a safepoint when it begins; the one a JVM
    /// exits in never ends, so the map keeps an entry of every JVM that
    /// exited: only the JVMs asked for are looked up).
    pub fn in_flight(&self, pids: &[u32]) -> HashMap<u32, u64> {
        let Some(inflight) = self.object.maps().find(|map| map.name() == "inflight") else {
            return HashMap::new();
        };
        pids.iter()
            .filter_map(|pid| {
                let value = inflight.lookup(&pid.to_ne_bytes(), MapFlags::ANY).ok()??;
                Some((*pid, SafepointRecord::parse(&value)?.begin_ns))
            })
            .collect()
    }

    /// Records the ring buffer had no room for, since the program loaded.
    pub fn dropped(&self) -> u64 {
        let Some(drops) = self.object.maps().find(|map| map.name() == "drops") else {
            return 0;
        };
        match drops.lookup(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(value)) if value.len() == 8 => {
                u64::from_ne_bytes(value.try_into().expect("8 bytes"))
            }
            _ => 0,
        }
    }
}

/// Every program attached to its probe in `library`, for every process.
fn attach(object: &Object, library: &Path) -> Result<Vec<Link>, String> {
    let mut links = Vec::new();
    for (name, provider, probe) in PROBES {
        let program = object
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("no program {name}"))?;
        let link = program
            .attach_usdt(-1, library, provider, probe)
            .map_err(|e| format!("{provider}:{probe}: {e:#}"))?;
        links.push(link);
    }
    Ok(links)
}

/// The libjvm.so that process `pid` maps, as a path this process can open
/// (through `/proc/PID/root`, for a JVM in a container).
pub fn libjvm_of(proc_root: &Path, pid: u32) -> Option<PathBuf> {
    let process = proc_root.join(pid.to_string());
    let maps = std::fs::read_to_string(process.join("maps")).ok()?;
    let path = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.ends_with("/libjvm.so"))?;
    Some(process.join("root").join(path.trim_start_matches('/')))
}
