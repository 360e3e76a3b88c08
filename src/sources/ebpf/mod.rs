//! Exact pauses of every discovered JVM without a GC log, from HotSpot's
//! own safepoint probes (USDT), when the agent is built with `--features
//! ebpf` and may load BPF programs (CAP_BPF and CAP_PERFMON).
//!
//! [`Ebpf`] is what discovery asks, for each JVM, whether eBPF measures
//! it (attaching its libjvm.so on first sight) or why not; the one
//! [`source::EbpfSource`] it hands out takes the records the ring buffer's
//! thread ([`ring`]) gathered at every poll, without blocking, and folds
//! each safepoint into its JVM's stream through the same
//! `JvmState::ingest` as GC log lines.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Config;
use crate::store::EbpfReason;

#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod library;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod probes;
/// The skeleton libbpf-cargo generates from the BPF object (build.rs): its
/// maps and programs by name, and the record types from its BTF, so that
/// `safepoints.h` is the one definition of a record.
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/safepoints.skel.rs"));
}
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod record;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
pub(crate) use probes::probe_descriptors;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
pub(crate) use record::read as read_record;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod ring;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
pub(crate) use ring::RingReader;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod source;

/// Whether eBPF measures a JVM discovery found.
#[derive(Debug, Clone, PartialEq)]
pub enum Coverage {
    /// Measured; `from_start`: its library was attached before the JVM
    /// started, so every pause it made was recorded (else its counters'
    /// comparison takes its baseline at the attachment).
    Measured { from_start: bool },
    /// Its libjvm.so is being attached, off the agent's loop: ask again
    /// soon (its records wait meanwhile).
    Attaching,
    /// It shows no JVM's signs yet (a JVM just started): ask again at the
    /// next scan.
    NotYet,
    /// Not measured: the reason (`ebpf_reason`) and what was found.
    NotMeasured(EbpfReason, String),
}

/// The process discovery asks about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Asking {
    pub pid: u32,
    /// Its start in clock ticks after boot: with `pid`, which process it is.
    pub start_ticks: u64,
    /// Its effective uid, when known.
    pub uid: Option<u32>,
    /// Whether it started so recently that it may still be starting.
    pub young: bool,
}

impl Asking {
    /// The process: (pid, start ticks).
    pub fn process(&self) -> (u32, u64) {
        (self.pid, self.start_ticks)
    }
}

/// What a restarted agent needs to count the safepoints it missed while
/// down: an event stream has no offset to resume from, so each JVM's
/// `sun.rt.safepoints` value its records reached stands in for one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EbpfCheckpoint {
    /// By `pid@start_ticks` (a pid reused by another process is not the JVM).
    pub reached: BTreeMap<String, u64>,
}

/// The probes shared by discovery and the eBPF source, or why there are none.
pub struct Ebpf {
    #[cfg(all(feature = "ebpf", target_os = "linux"))]
    probes: Option<std::sync::Arc<std::sync::Mutex<probes::Probes>>>,
    /// Why eBPF measures no JVM at all, when it does not.
    unavailable: Option<EbpfReason>,
    /// Whether the source was handed out.
    handed_out: bool,
}

impl Ebpf {
    /// Loads the probes when `[ebpf] enabled` and discovery is on; where
    /// they cannot be, one line in the log says why.
    pub fn new(config: &Config) -> Ebpf {
        let mut ebpf = Ebpf {
            #[cfg(all(feature = "ebpf", target_os = "linux"))]
            probes: None,
            unavailable: None,
            handed_out: false,
        };
        if !config.discovery.enabled {
            return ebpf;
        }
        if !config.ebpf.enabled {
            ebpf.unavailable = Some(EbpfReason::Disabled);
            return ebpf;
        }
        #[cfg(all(feature = "ebpf", target_os = "linux"))]
        match probes::Probes::load() {
            Ok(mut loaded) => {
                loaded.attach_installed();
                ebpf.probes = Some(std::sync::Arc::new(std::sync::Mutex::new(loaded)));
            }
            Err((reason, error)) => {
                if reason == EbpfReason::PermissionDenied {
                    tracing::warn!(reason = reason.as_str(), error, "eBPF safepoint probes cannot be loaded (bpf() needs CAP_BPF and CAP_PERFMON, and no seccomp filter or LSM denying it; RLIMIT_MEMLOCK is not the cause since Linux 5.11): the pauses of JVMs without a GC log come from hsperfdata");
                } else {
                    tracing::warn!(reason = reason.as_str(), error, "eBPF safepoint probes cannot be loaded: the pauses of JVMs without a GC log come from hsperfdata");
                }
                ebpf.unavailable = Some(reason);
            }
        }
        #[cfg(not(all(feature = "ebpf", target_os = "linux")))]
        {
            tracing::warn!("built without the ebpf feature: JVMs without a GC log are measured from hsperfdata samples, so pauses closer together than [runtime_stats] interval have only a lower-bound maximum, and their safepoints and time to safepoint are not seen; the .deb, the .rpm and the container image are built with it, or build with `cargo build --release --features ebpf` (clang, libelf-dev, zlib1g-dev, pkg-config)");
            ebpf.unavailable = Some(EbpfReason::NotBuilt);
        }
        ebpf
    }

    /// Whether eBPF measures the JVM `pid` (its libjvm.so asked to be
    /// attached if it was not), or the reason it does not.
    pub fn cover(&self, proc_root: &Path, asking: &Asking) -> Coverage {
        if let Some(reason) = self.unavailable {
            return Coverage::NotMeasured(reason, String::new());
        }
        #[cfg(all(feature = "ebpf", target_os = "linux"))]
        if let Some(probes) = &self.probes {
            let mut probes = probes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let coverage = probes.cover(proc_root, asking);
            if let Coverage::NotMeasured(reason, error) = &coverage {
                tracing::warn!(
                    pid = asking.pid,
                    reason = reason.as_str(),
                    error,
                    "eBPF does not measure this JVM: its pauses come from hsperfdata"
                );
            }
            return coverage;
        }
        let _ = (proc_root, asking);
        Coverage::NotMeasured(EbpfReason::NotBuilt, String::new())
    }

    /// Silences the probes for a JVM the configuration leaves out (see
    /// `Probes::leave_out`).
    pub fn leave_out(&self, pid: u32, start_ticks: u64) {
        #[cfg(all(feature = "ebpf", target_os = "linux"))]
        if let Some(probes) = &self.probes {
            (probes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner))
            .leave_out(pid, start_ticks);
        }
        let _ = (pid, start_ticks);
    }

    /// The source that reads the probes' records, once, resuming the
    /// count of missed safepoints from `restored`.
    pub fn source(
        &mut self,
        discovery_interval: std::time::Duration,
        restored: Option<super::SourceCheckpoint>,
    ) -> Option<Box<dyn super::Source>> {
        if self.handed_out {
            return None;
        }
        #[cfg(all(feature = "ebpf", target_os = "linux"))]
        if let Some(probes) = &self.probes {
            self.handed_out = true;
            let restored = match restored {
                Some(super::SourceCheckpoint::Ebpf(checkpoint)) => checkpoint,
                _ => EbpfCheckpoint::default(),
            };
            return Some(Box::new(source::EbpfSource::new(
                probes.clone(),
                discovery_interval,
                restored,
            )));
        }
        let _ = (discovery_interval, restored);
        None
    }
}
