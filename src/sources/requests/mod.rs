//! Request latency as clients see it, from the kernel, for every
//! discovered JVM that listens on a TCP port: no access log, no JVM flag.
//!
//! A request begins when its bytes are queued on one of the JVM's server
//! connections, before the JVM reads them, so the time requests wait in
//! the kernel behind a stopped JVM is counted (an access log starts when
//! the handler runs, after the stop). It ends at the last send of its
//! response. Each request goes to its JVM stream's latency state, where
//! it is attributed and correlated like an access log's
//! (`latency_source="kernel"` on `pausewatch_jvm_discovered`).
//!
//! The listeners are read from /proc every [`LOOK_EVERY`]: a JVM's
//! connections count from the first bytes after its port is known.

mod listeners;
mod pairing;
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod probes;
mod written;
/// The skeleton libbpf-cargo generates from the BPF object (build.rs).
#[cfg(all(feature = "ebpf", target_os = "linux"))]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/requests.skel.rs"));
}

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::Utc;

use super::reading::{Reading, Update};
use super::{Source, SourceCheckpoint, SourceKey};
use crate::config::{AccessTarget, Config};
use crate::model::correlate::RequestTiming;
use crate::store::{AgentState, ErrorKind, LatencyReason, StreamId};
use listeners::Listener;
use pairing::{Pairing, Request};

/// How often the JVMs' listening sockets are read again.
const LOOK_EVERY: Duration = Duration::from_secs(2);
/// Listening ports measured per JVM, the lowest first: the kernel's map
/// of listeners is bounded (4,096), and one JVM listening on thousands of
/// ports must not leave no room for the others'.
const PORTS_PER_JVM: usize = 64;

#[cfg(all(feature = "ebpf", target_os = "linux"))]
use probes::RequestProbes;

/// A build without the `ebpf` feature has no probes: a type with no
/// value, so that the code that uses them is one for both builds.
#[cfg(not(all(feature = "ebpf", target_os = "linux")))]
enum RequestProbes {}

#[cfg(not(all(feature = "ebpf", target_os = "linux")))]
impl RequestProbes {
    fn drain(&mut self) -> Vec<pairing::Record> {
        match *self {}
    }
    fn connection(&self, _: u64) -> Option<(u64, u64)> {
        match *self {}
    }
    fn lost(&self) -> (u64, u64) {
        match *self {}
    }
    fn listen(&self, _: Listener, _: u32) -> Result<(), String> {
        match *self {}
    }
    fn forget(&self, _: Listener) {
        match *self {}
    }
}

/// What the source measures with: the loaded probes, or why there are none.
/// (Probes are only loaded in an eBPF build.)
#[cfg_attr(not(all(feature = "ebpf", target_os = "linux")), allow(dead_code))]
enum Kernel {
    Probes(Box<RequestProbes>),
    Unavailable(LatencyReason),
}

/// The one source of every discovered JVM's request latency.
pub struct RequestSource {
    kernel: Kernel,
    proc_root: PathBuf,
    pairing: Pairing,
    /// The listeners in the kernel's map, and whose they are.
    listening: HashMap<Listener, u32>,
    looked: Option<Instant>,
    /// Records lost, as last read (ring buffer, budgets).
    lost: (u64, u64),
    /// Whether an `[[access_log]]` names a JVM by its port: then the
    /// listeners are read without probes too.
    ports_wanted: bool,
    /// `[ebpf] requests_dir`: the requests written out too.
    files: Option<written::RequestFiles>,
    /// JVMs whose ports were capped at [`PORTS_PER_JVM`], said once.
    capped: BTreeSet<u32>,
    polled: Instant,
}

impl RequestSource {
    /// The source, with its probes loaded when `[ebpf] enabled` and the
    /// kernel allows; `None` without discovery (no JVM to measure).
    pub fn new(config: &Config) -> Option<RequestSource> {
        if !config.discovery.enabled {
            return None;
        }
        Some(RequestSource {
            kernel: Self::load(config),
            proc_root: PathBuf::from(super::PROC_ROOT),
            pairing: Pairing::default(),
            listening: HashMap::new(),
            looked: None,
            lost: (0, 0),
            ports_wanted: (config.access_log.iter()).any(
                |access| matches!(&access.target, AccessTarget::Jvm(jvm) if jvm.port.is_some()),
            ),
            files: (config.ebpf.requests_dir.clone()).map(written::RequestFiles::new),
            capped: BTreeSet::new(),
            polled: Instant::now(),
        })
    }

    fn load(config: &Config) -> Kernel {
        if !config.ebpf.enabled {
            return Kernel::Unavailable(LatencyReason::Disabled);
        }
        #[cfg(all(feature = "ebpf", target_os = "linux"))]
        match RequestProbes::load(config.ebpf.request_arrival) {
            Ok(probes) => Kernel::Probes(Box::new(probes)),
            Err((reason, error)) => {
                tracing::warn!(reason = reason.as_str(), error, "the kernel request-latency probes cannot be loaded: discovered JVMs have no request latency (an [[access_log]] still gives it)");
                Kernel::Unavailable(reason)
            }
        }
        #[cfg(not(all(feature = "ebpf", target_os = "linux")))]
        Kernel::Unavailable(LatencyReason::NotBuilt)
    }

    /// The discovered JVMs alive now: pid -> stream.
    fn jvms(state: &AgentState) -> BTreeMap<u32, StreamId> {
        (state.streams.iter())
            .filter(|(_, stream)| !stream.exited)
            .filter_map(|(id, stream)| Some((stream.discovered.as_ref()?.pid, *id)))
            .collect()
    }

    /// Reads each JVM's listening sockets, puts them in the kernel's map
    /// (and takes out those gone), and says per JVM whether its requests
    /// are measured.
    fn look(&mut self, reading: &mut Reading) {
        // Per JVM: its ports not to measure, and what was said of it.
        type Known = (u32, Vec<u16>, Option<Result<(), LatencyReason>>);
        let (jvms, known) = reading.look(|state| {
            let jvms = Self::jvms(state);
            let known: HashMap<StreamId, Known> = (jvms.values())
                .filter_map(|id| {
                    let jvm = state.streams.get(id)?.discovered.as_ref()?;
                    Some((*id, (jvm.pid, jvm.excluded_ports.clone(), jvm.requests)))
                })
                .collect();
            (jvms, known)
        });
        let mut verdicts: Vec<(StreamId, Result<(), LatencyReason>, Vec<u16>)> = Vec::new();
        let mut wanted: HashMap<Listener, u32> = HashMap::new();
        for (pid, id) in &jvms {
            let probed = matches!(self.kernel, Kernel::Probes(_));
            let found = (probed || self.ports_wanted)
                .then(|| listeners::listening(&self.proc_root, *pid))
                .flatten();
            let ports = (found.iter().flatten())
                .map(|listener| listener.port)
                .collect::<BTreeSet<u16>>();
            let verdict = match (&self.kernel, found) {
                (Kernel::Unavailable(reason), _) => Err(*reason),
                (Kernel::Probes(_), None) => Err(LatencyReason::ProcUnreadable),
                (Kernel::Probes(_), Some(found)) if found.is_empty() => {
                    Err(LatencyReason::NoListener)
                }
                (Kernel::Probes(_), Some(found)) => {
                    let excluded = known
                        .get(id)
                        .map_or(&[][..], |(_, ports, _)| ports.as_slice());
                    let mut measured = (found.into_iter())
                        .filter(|listener| !excluded.contains(&listener.port))
                        .map(|listener| (listener, *pid))
                        .collect::<Vec<_>>();
                    if measured.len() > PORTS_PER_JVM && self.capped.insert(*pid) {
                        tracing::warn!(
                            pid,
                            ports = measured.len(),
                            kept = PORTS_PER_JVM,
                            "a JVM listens on more ports than are measured per JVM; the lowest are"
                        );
                    }
                    measured.truncate(PORTS_PER_JVM);
                    let before = wanted.len();
                    wanted.extend(measured);
                    match wanted.len() > before {
                        true => Ok(()),
                        false => Err(LatencyReason::PortsExcluded),
                    }
                }
            };
            verdicts.push((*id, verdict, ports.into_iter().collect()));
        }
        if let Kernel::Probes(probes) = &self.kernel {
            for listener in self.listening.keys() {
                if !wanted.contains_key(listener) {
                    probes.forget(*listener);
                }
            }
            for (listener, pid) in &wanted {
                if self.listening.get(listener) != Some(pid) {
                    if let Err(error) = probes.listen(*listener, *pid) {
                        tracing::warn!(
                            pid,
                            port = listener.port,
                            error,
                            "cannot watch a JVM's listening port"
                        );
                    }
                }
            }
        }
        self.listening = wanted;
        for (id, verdict, ports) in verdicts {
            let Some((pid, _, said)) = known.get(&id) else {
                continue;
            };
            match verdict {
                Err(reason) if *said != Some(verdict) => tracing::info!(
                    pid,
                    reason = reason.as_str(),
                    "the kernel does not measure this JVM's requests"
                ),
                _ => {}
            }
            reading.push(Update::Listening {
                stream: id,
                ports,
                verdict,
            });
        }
    }

    /// The records since the last poll, paired into whole requests.
    fn requests(&mut self, reading: &mut Reading) -> Vec<Request> {
        let mut done = Vec::new();
        if let Kernel::Probes(probes) = &mut self.kernel {
            // States first, then the records: see `pairing`.
            let now_ns = super::monotonic_now().as_nanos() as u64;
            for connection in self.pairing.expired(now_ns) {
                let kernel = probes.connection(connection);
                self.pairing.end(connection, kernel, &mut done);
            }
            for record in probes.drain() {
                self.pairing.take(record, &mut done);
            }
            let lost = probes.lost();
            let newly = lost.0.saturating_sub(self.lost.0) + lost.1.saturating_sub(self.lost.1);
            if newly > 0 {
                reading.push(Update::Errors(ErrorKind::RequestRecordsDropped, newly));
            }
            self.lost = lost;
        }
        done
    }
}

impl Source for RequestSource {
    fn key(&self) -> SourceKey {
        SourceKey::Requests
    }

    /// Its next take of the records, while it measures a port.
    fn wake_in(&self) -> Option<Duration> {
        (!self.listening.is_empty())
            .then(|| crate::sources::KERNEL_RECORDS_EVERY.saturating_sub(self.polled.elapsed()))
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        self.polled = Instant::now();
        if self.looked.is_none_or(|at| at.elapsed() >= LOOK_EVERY) {
            self.looked = Some(Instant::now());
            self.look(reading);
        }
        let done = self.requests(reading);
        let multiplexed = std::mem::take(&mut self.pairing.multiplexed);
        if done.is_empty() && multiplexed.is_empty() {
            return false;
        }
        // The wall-clock time of CLOCK_MONOTONIC's zero, as the clock is now.
        let zero =
            Utc::now() - chrono::Duration::from_std(super::monotonic_now()).unwrap_or_default();
        // The JVMs alive, and the service each serves (for the files).
        let (jvms, services) = reading.look(|state| {
            let jvms = Self::jvms(state);
            let services: HashMap<StreamId, String> = (jvms.values())
                .filter_map(|id| Some((*id, state.streams.get(id)?.labels.get("service")?.clone())))
                .collect();
            (jvms, services)
        });
        for ((tgid, _), connections) in multiplexed {
            if let Some(id) = jvms.get(&tgid) {
                reading.push(Update::Multiplexed {
                    stream: *id,
                    connections,
                });
            }
        }
        let mut served: BTreeMap<StreamId, Vec<(RequestTiming, u16)>> = BTreeMap::new();
        let mut to_write: BTreeMap<StreamId, written::JvmRequests> = BTreeMap::new();
        for request in done {
            let Some(id) = jvms.get(&request.tgid) else {
                continue;
            };
            let timing = RequestTiming {
                start: zero + chrono::Duration::nanoseconds(request.start_ns as i64),
                duration_s: request.end_ns.saturating_sub(request.start_ns) as f64 / 1e9,
            };
            if self.files.is_some() {
                let jvm = to_write.entry(*id).or_insert_with(|| written::JvmRequests {
                    id: *id,
                    service: services.get(id).cloned().unwrap_or_default(),
                    pid: request.tgid,
                    requests: Vec::new(),
                });
                jvm.requests.push((timing, request.port));
            }
            served.entry(*id).or_default().push((timing, request.port));
        }
        let any_served = !served.is_empty();
        for (stream, requests) in served {
            reading.push(Update::KernelRequests { stream, requests });
        }
        // Written after the requests are handed over: a slow disk holds up
        // no reader.
        reading.flush();
        if let Some(files) = &mut self.files {
            files.keep_only(&jvms.values().copied().collect());
            if let Err(error) = files.write(to_write.into_values().collect()) {
                tracing::warn!(error, "cannot write the kernel's requests ([ebpf] requests_dir); the JVM's are not written");
                reading.push(Update::Errors(ErrorKind::RequestsUnwritten, 1));
            }
        }
        any_served
    }

    fn checkpoint(&self, _: &AgentState) -> Option<SourceCheckpoint> {
        None
    }
}
