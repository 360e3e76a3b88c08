//! The source that reads the safepoint probes' ring buffer at every poll
//! and folds each safepoint into the stream of the JVM it came from.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;
use pausewatch_parsers::{Collector, GcEvent, JvmRun};

use super::probes::Probes;
use super::record::{Converter, SafepointRecord};
use super::EbpfCheckpoint;
use crate::sources::reading::{Origin, Reading, Update};
use crate::sources::{monotonic_now, Source, SourceCheckpoint, SourceKey};
use crate::store::{AgentState, ErrorKind, PauseSource, SafepointSource, StreamId};

/// Records of one JVM kept while no stream takes them, at most: a JVM that
/// started after its libjvm.so was attached is covered from its first
/// safepoint, though discovery finds it only at its next scan.
const MAX_PENDING: usize = 20_000;
/// How long, beyond two discovery intervals, a record of a process no
/// stream takes is kept (a JVM still starting on a loaded host is found
/// late; one discovery leaves alone, `exclude`, is never claimed).
const PENDING_SLACK: Duration = Duration::from_secs(30);

/// The safepoint cross-check of one JVM: its `sun.rt.safepoints` against
/// the safepoints recorded by the moment the counter was read. HotSpot
/// counts a safepoint when it begins, and the probes stamp its begin on
/// the same clock the sample is stamped with, so the two agree exactly at
/// every sample taken outside a safepoint, however busy the JVM. A sample
/// taken inside one is not compared: the probe fires just before HotSpot
/// counts it, and a preempted VM thread can leave a sample in between.
struct Check {
    /// `pid@start_ticks`: the JVM across agent restarts.
    key: String,
    /// Records taken, of every poll.
    taken: u64,
    /// Begin and end times of records taken that ended after the last
    /// sample compared: a later sample may still precede or fall in them.
    recent: Vec<(u64, u64)>,
    /// When the safepoint in flight at this poll's start began, unless its
    /// record was taken too.
    in_flight: Option<u64>,
    /// CLOCK_MONOTONIC of the last sample compared, or of the poll that
    /// began the check: a sample from before it may precede the probes'
    /// attachment (an agent restarted beside a running JVM), and the
    /// safepoints in between would be counted and never recorded.
    compared_ns: u64,
    /// Recorded minus counted at the first comparison: the probes see a
    /// JVM from their attachment, the counter from the JVM's start.
    baseline: Option<f64>,
    /// The counter at the first comparison.
    first_counted: Option<u64>,
    /// Records the ring buffer had dropped (of every JVM) when this began.
    dropped_before: u64,
}

/// Safepoints a JVM's counter may move with no record before the probes
/// are taken as blind to it.
const BLIND_AFTER: u64 = 3;

/// The shortest stop a JVM exited in that is counted: HotSpot's exit runs
/// a last VM operation that never ends either.
const OPEN_STOP_MIN: Duration = Duration::from_secs(1);

/// How often libraries no running JVM was attached for are released.
const RELEASE_EVERY: Duration = Duration::from_secs(5);

/// The oldest sample compared, behind a poll: a record's begin is kept
/// this long for a sample that may precede it.
const MAX_SAMPLE_AGE: Duration = Duration::from_secs(60);

impl Check {
    /// `in_flight`: when the safepoint it is at began, if it is at one;
    /// `poll_ns`: the poll that begins it.
    fn new((pid, ticks): Process, in_flight: Option<u64>, dropped: u64, poll_ns: u64) -> Check {
        Check {
            key: format!("{pid}@{ticks}"),
            taken: 0,
            recent: Vec::new(),
            in_flight,
            compared_ns: poll_ns,
            baseline: None,
            first_counted: None,
            dropped_before: dropped,
        }
    }

    /// Whether the probes are blind to this JVM: its counter moved by
    /// [`BLIND_AFTER`] safepoints since the first comparison while no
    /// record came, none is in flight and the ring buffer dropped none (an
    /// attachment to a file the JVM does not run, a probe the build lacks).
    fn blind(&self, counted: u64, dropped: u64) -> bool {
        self.taken == 0
            && self.in_flight.is_none()
            && dropped == self.dropped_before
            && self
                .first_counted
                .is_some_and(|first| counted >= first + BLIND_AFTER)
    }

    /// Counts this poll's records of the JVM.
    fn take(&mut self, records: &[SafepointRecord], poll_ns: u64) {
        self.taken += records.len() as u64;
        let oldest = poll_ns.saturating_sub(MAX_SAMPLE_AGE.as_nanos() as u64);
        self.recent.retain(|(_, end)| *end > oldest);
        (self.recent).extend(records.iter().map(|r| (r.begin_ns, r.end_ns)));
        // Ended between the in-flight read and the drain: taken once.
        if records.iter().any(|r| Some(r.begin_ns) == self.in_flight) {
            self.in_flight = None;
        }
    }

    /// Safepoints recorded, with the one in flight.
    fn recorded(&self) -> u64 {
        self.taken + u64::from(self.in_flight.is_some())
    }

    /// Recorded minus counted at a sample not compared yet, less the
    /// baseline. A sample read after `poll_ns`, when the safepoint in
    /// flight was read, waits for the next poll: one that began in between
    /// would be counted and not recorded. One read inside a safepoint is
    /// skipped (see [`Check`]).
    fn compare(
        &mut self,
        runtime: &crate::model::runtime::RuntimeStats,
        poll_ns: u64,
    ) -> Option<f64> {
        let sampled = runtime.sampled_monotonic_ns;
        let stale = sampled.saturating_add(MAX_SAMPLE_AGE.as_nanos() as u64) < poll_ns;
        if sampled <= self.compared_ns || sampled >= poll_ns || stale {
            return None;
        }
        let inside = |(begin, end): (u64, u64)| begin <= sampled && sampled < end;
        let in_flight = self.in_flight.is_some_and(|begin| begin <= sampled);
        if in_flight || self.recent.iter().any(|r| inside(*r)) {
            return None;
        }
        let later = self.recent.iter().filter(|(b, _)| *b > sampled).count() as u64;
        let recorded = self.taken.saturating_sub(later);
        let difference = recorded as f64 - runtime.safepoints as f64;
        self.first_counted.get_or_insert(runtime.safepoints);
        self.compared_ns = sampled;
        self.recent.retain(|(_, end)| *end > sampled);
        Some(difference - *self.baseline.get_or_insert(difference))
    }

    /// The JVM's `sun.rt.safepoints` value the records reached, once
    /// compared: where a restarted agent's records must resume.
    fn reached(&self) -> Option<u64> {
        Some((self.recorded() as f64 - self.baseline?).max(0.0) as u64)
    }

    /// The safepoints between `reached` by the previous run and this run's
    /// first record, once compared.
    fn missed_since(&self, reached: u64) -> Option<u64> {
        // Minus the baseline: the counter before this run's first record.
        Some((-self.baseline? - reached as f64).max(0.0) as u64)
    }
}

/// A process: its pid and its start in clock ticks after boot, as records
/// and /proc name it (a pid reused between two scans is another process).
type Process = (u32, u64);

/// What the probes give a JVM's stream.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    /// Every pause and safepoint: the JVM has no GC log.
    Measures,
    /// A count of pauses to hold its GC log's against, and its safepoints
    /// when the log has none.
    ChecksLog { safepoints: bool },
}

impl Role {
    /// Whether the JVM's safepoints are the probes' records.
    fn records_safepoints(self) -> bool {
        matches!(self, Role::Measures | Role::ChecksLog { safepoints: true })
    }
}

/// The pause counts of a JVM's GC log and of the probes, compared once
/// both have been still for the time a log line may take to be read.
#[derive(Default)]
struct LogCheck {
    /// Pauses the probes recorded, and when the last one ended.
    recorded: u64,
    last_end_ns: u64,
    /// The log's count at the previous poll.
    logged: Option<u64>,
    /// Logged minus recorded at the first comparison: the log may hold
    /// pauses from before the probes were attached.
    baseline: Option<f64>,
}

impl LogCheck {
    /// Logged minus recorded, less the baseline, when neither moved since
    /// the previous poll and the last recorded pause ended at least
    /// [`LOG_FLUSH_ALLOWANCE`] before `now_ns`.
    fn compare(&mut self, logged: u64, now_ns: u64) -> Option<f64> {
        let still = self.logged.replace(logged) == Some(logged);
        let flushed =
            now_ns.saturating_sub(self.last_end_ns) >= LOG_FLUSH_ALLOWANCE.as_nanos() as u64;
        if !(still && flushed) {
            return None;
        }
        let difference = logged as f64 - self.recorded as f64;
        Some(difference - *self.baseline.get_or_insert(difference))
    }
}

/// How long after a pause its log line may still be unread: HotSpot
/// writes it at the pause's end, the agent reads it at its next poll.
const LOG_FLUSH_ALLOWANCE: Duration = Duration::from_secs(1);

pub struct EbpfSource {
    probes: Arc<Mutex<Probes>>,
    converters: HashMap<Process, Converter>,
    /// Records of processes no stream has taken yet.
    pending: HashMap<Process, Vec<SafepointRecord>>,
    keep_pending: Duration,
    checks: HashMap<Process, Check>,
    /// Log-against-probes pause counts of JVMs whose GC log supplies them.
    log_checks: HashMap<Process, LogCheck>,
    /// Records each JVM's budget refused, as far as already flagged.
    throttled: HashMap<Process, u64>,
    /// When the libraries no JVM runs were last released.
    released: std::time::Instant,
    /// Safepoints in flight of live JVMs, with when each was last seen so.
    open_stops: HashMap<Process, (SafepointRecord, u64)>,
    /// JVMs whose last stop was closed at their exit: their map entry stays.
    closed_stops: std::collections::HashSet<Process>,
    /// Drops already counted in the store.
    dropped: u64,
    /// The previous run's [`EbpfCheckpoint::reached`] of JVMs not compared yet.
    restored: BTreeMap<String, u64>,
    /// When it last polled, and whether it measured a JVM then: with none,
    /// it asks the loop for no pass of its own.
    polled: std::time::Instant,
    measuring: bool,
}

/// What [`EbpfSource::compare`] found.
#[derive(Default)]
struct Compared {
    updates: Vec<Update>,
    /// Whether a figure a checkpoint records changed.
    changed: bool,
    missed_while_down: u64,
}

impl EbpfSource {
    pub fn new(
        probes: Arc<Mutex<Probes>>,
        discovery_interval: Duration,
        restored: EbpfCheckpoint,
    ) -> EbpfSource {
        // The JVMs still running: a pid in the checkpoint may be another's.
        let proc_root = Path::new("/proc");
        let mut restored = restored.reached;
        restored.retain(|key, _| crate::sources::proc_table::is_alive_key(proc_root, key));
        EbpfSource {
            probes,
            converters: HashMap::new(),
            pending: HashMap::new(),
            keep_pending: discovery_interval * 2 + PENDING_SLACK,
            checks: HashMap::new(),
            log_checks: HashMap::new(),
            throttled: HashMap::new(),
            released: std::time::Instant::now(),
            open_stops: HashMap::new(),
            closed_stops: std::collections::HashSet::new(),
            dropped: 0,
            restored,
            polled: std::time::Instant::now(),
            measuring: false,
        }
    }

    /// Each JVM's records against what its GC log and its counters say,
    /// with this poll's records in: the mismatches to show, the JVMs the
    /// probes see nothing of, and the safepoints missed while the agent
    /// was down.
    fn compare(
        &mut self,
        state: &AgentState,
        streams: &HashMap<Process, Option<(StreamId, Role)>>,
        (begun, dropped): (&HashMap<Process, u64>, u64),
        (poll_ns, now_ns): (u64, u64),
    ) -> Compared {
        let mut compared = Compared::default();
        for (process, id) in streams.iter().filter_map(|(process, target)| match target {
            Some((id, Role::ChecksLog { .. })) => Some((*process, *id)),
            _ => None,
        }) {
            let Some(stream) = state.streams.get(&id) else {
                continue;
            };
            let logged = stream.jvm.pauses.iter().map(|p| p.histogram.count).sum();
            let shown = stream.discovered.as_ref().map(|d| d.log_probe_mismatch);
            let check = self.log_checks.entry(process).or_default();
            let mismatch = check.compare(logged, now_ns);
            if let (Some(mismatch), Some(shown)) = (mismatch, shown) {
                if Some(mismatch) == shown {
                    continue;
                }
                compared.updates.push(Update::LogProbeMismatch {
                    stream: id,
                    mismatch,
                });
                compared.changed = true;
            }
        }
        let safepoints_recorded = streams.iter().filter_map(|(process, target)| match target {
            Some((id, role)) if role.records_safepoints() => Some((*process, *id)),
            _ => None,
        });
        for (process, id) in safepoints_recorded {
            let Some(stream) = state.streams.get(&id) else {
                continue;
            };
            let Some(runtime) = stream.runtime.as_ref() else {
                continue;
            };
            let check = (self.checks.entry(process)).or_insert_with(|| {
                Check::new(process, begun.get(&process).copied(), dropped, poll_ns)
            });
            let shown = runtime.safepoint_probe_mismatch;
            let mismatch = check.compare(runtime, poll_ns).or(shown);
            if mismatch != shown {
                compared.updates.push(Update::SafepointProbeMismatch {
                    stream: id,
                    mismatch,
                });
            }
            // Never reported measured by probes that see nothing of it: its
            // counters measure it instead, and the reason says why.
            if check.blind(runtime.safepoints, dropped) && stream.discovered.is_some() {
                tracing::warn!(pid = process.0, counted = runtime.safepoints, "eBPF records nothing of this JVM while its counter moves: its pauses come from hsperfdata");
                compared.updates.push(Update::ProbesBlind(id));
                compared.changed = true;
            }
            // A JVM the agent measured before it restarted: what ran while
            // it was down is lost, and counted.
            let before = self.restored.get(&check.key);
            if let Some(missed) = before.and_then(|r| check.missed_since(*r)) {
                self.restored.remove(&check.key);
                compared.missed_while_down += missed;
            }
        }
        compared
    }

    /// The discovered JVMs by process, with their stream and what the
    /// probes give it (`None`: nothing, its records are not kept).
    fn streams(state: &AgentState) -> HashMap<Process, Option<(StreamId, Role)>> {
        state
            .streams
            .iter()
            .filter_map(|(id, stream)| {
                let discovered = stream.discovered.as_ref()?;
                let attached = discovered.ebpf_reason.is_none() && !stream.exited;
                let role = match discovered.pause_source {
                    PauseSource::Ebpf => Some(Role::Measures),
                    PauseSource::GcLog => Some(Role::ChecksLog {
                        safepoints: discovered.safepoint_source == SafepointSource::Ebpf,
                    }),
                    PauseSource::Hsperfdata => None,
                };
                let process = (discovered.pid, discovered.start_ticks);
                Some((process, role.filter(|_| attached).map(|r| (*id, r))))
            })
            .collect()
    }
}

/// Which process a record of a pid is, by when it began: a pid reused
/// between two scans is another process. Records are stamped on
/// CLOCK_MONOTONIC, process starts counted in clock ticks of
/// CLOCK_BOOTTIME, which differ by the time the host was suspended.
struct Owners {
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC now, in ns.
    boot_offset_ns: u64,
    tick_ns: u64,
    /// The start of the process each pid has now (`None`: no process).
    current: HashMap<u32, Option<u64>>,
}

impl Owners {
    fn new() -> Owners {
        let boottime = crate::sources::clock_now(libc::CLOCK_BOOTTIME);
        Owners {
            boot_offset_ns: boottime.saturating_sub(monotonic_now()).as_nanos() as u64,
            tick_ns: 1_000_000_000 / procfs::ticks_per_second().max(1),
            current: HashMap::new(),
        }
    }

    /// Whether process `(pid, start_ticks)` had started by `monotonic_ns`.
    fn started_by(&self, (_, start_ticks): Process, monotonic_ns: u64) -> bool {
        start_ticks.saturating_mul(self.tick_ns) <= monotonic_ns.saturating_add(self.boot_offset_ns)
    }

    /// The process of `pid` a record that began at `begin_ns` came from:
    /// the one running under it now if it had started by then, else the
    /// latest of `known` to have started by then.
    fn of(&mut self, pid: u32, begin_ns: u64, known: &[Process]) -> Option<Process> {
        let current = *self
            .current
            .entry(pid)
            .or_insert_with(|| crate::sources::proc_table::start_ticks(Path::new("/proc"), pid));
        let current = current.map(|ticks| (pid, ticks));
        current
            .into_iter()
            .chain(known.iter().copied().filter(|p| p.0 == pid))
            .filter(|process| self.started_by(*process, begin_ns))
            .max_by_key(|process| process.1)
    }
}

impl EbpfSource {
    /// The stops of JVMs that exited in them (a heap dump, then `kill
    /// -STOP` and `kill -9`): HotSpot never ends them, so no record comes.
    /// A safepoint seen in flight at a poll while its JVM lived, and in
    /// flight still once it is gone, is closed at the last poll that saw it
    /// alive: a lower bound. Shorter than [`OPEN_STOP_MIN`], it is the
    /// JVM's exit itself (its last VM operation), and not counted.
    fn close_stops_of_the_dead(
        &mut self,
        in_flight: &HashMap<Process, SafepointRecord>,
        poll_ns: u64,
    ) -> Vec<(Process, SafepointRecord)> {
        let proc_root = Path::new("/proc");
        let mut closed = Vec::new();
        for (process, record) in in_flight {
            if self.closed_stops.contains(process) {
                continue;
            }
            if crate::sources::proc_table::is_alive(proc_root, process.0, process.1) {
                self.open_stops.insert(*process, (record.clone(), poll_ns));
                continue;
            }
            self.closed_stops.insert(*process);
            let Some((record, seen)) = self.open_stops.remove(process) else {
                continue;
            };
            if seen.saturating_sub(record.begin_ns) >= OPEN_STOP_MIN.as_nanos() as u64 {
                closed.push((*process, record.closed_at(seen)));
            }
        }
        // Those that ended as stops do.
        self.open_stops
            .retain(|process, _| in_flight.contains_key(process));
        closed
    }
}

impl Source for EbpfSource {
    fn key(&self) -> SourceKey {
        SourceKey::Ebpf
    }

    /// Its next fold, while it measures a JVM.
    fn wake_in(&self) -> Option<Duration> {
        (self.measuring)
            .then(|| crate::sources::KERNEL_RECORDS_EVERY.saturating_sub(self.polled.elapsed()))
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        // The streams as the poll starts: a JVM found after this waits for
        // the next poll, which reads its safepoint in flight.
        let (streams, collectors) = reading.look(|state| {
            let streams = Self::streams(state);
            let collectors: HashMap<StreamId, Collector> = (streams.values().flatten())
                .filter_map(|(id, _)| Some((*id, state.streams.get(id)?.jvm.collector)))
                .collect();
            (streams, collectors)
        });
        // The JVMs whose safepoints are compared with their counter.
        let compared: Vec<Process> = (streams.iter())
            .filter_map(|(process, target)| match target {
                Some((_, role)) if role.records_safepoints() => Some(*process),
                _ => None,
            })
            .collect();
        let measured: Vec<Process> = (streams.iter())
            .filter_map(|(process, target)| target.map(|_| *process))
            .collect();
        let pids = |processes: &[Process]| processes.iter().map(|p| p.0).collect::<Vec<_>>();
        self.polled = std::time::Instant::now();
        self.measuring = !measured.is_empty();
        // Their safepoints in flight before the drain: one that ends in
        // between is in both, and is taken once (see `Check::take`).
        let (poll_ns, in_flight, records, dropped, throttled, left_out) = {
            let mut probes = self.probes.lock().unwrap_or_else(PoisonError::into_inner);
            let poll_ns = monotonic_now().as_nanos() as u64;
            if self.released.elapsed() >= RELEASE_EVERY {
                self.released = std::time::Instant::now();
                let proc_root = Path::new("/proc");
                probes.release_unused(|pid, ticks| {
                    crate::sources::proc_table::is_alive(proc_root, pid, ticks)
                });
            }
            let in_flight = probes.in_flight(&pids(&compared));
            let throttled = probes.throttled(&pids(&measured));
            (
                poll_ns,
                in_flight,
                probes.drain(),
                probes.dropped(),
                throttled,
                probes.left_out().collect::<HashSet<Process>>(),
            )
        };
        let mut owners = Owners::new();
        // A safepoint in flight under a pid is the process's only if it
        // began after the process started (the map keeps the entries of
        // JVMs that exited mid-safepoint).
        let in_flight: HashMap<Process, SafepointRecord> = (compared.iter())
            .filter_map(|process| {
                let record = in_flight.get(&process.0)?;
                (owners.started_by(*process, record.begin_ns)).then(|| (*process, record.clone()))
            })
            .collect();
        let begun: HashMap<Process, u64> = (in_flight.iter())
            .map(|(process, record)| (*process, record.begin_ns))
            .collect();
        for (process, check) in &mut self.checks {
            check.in_flight = begun.get(process).copied();
        }
        let never_ended = self.close_stops_of_the_dead(&in_flight, poll_ns);
        for (process, record) in &never_ended {
            self.pending
                .entry(*process)
                .or_default()
                .push(record.clone());
        }
        let known: Vec<Process> = streams.keys().copied().collect();
        // Records no measured JVM takes: of processes gone, left out (sent
        // before discovery left them out), left waiting too long, or not
        // measured by the probes.
        let mut unclaimed = 0;
        for record in records {
            let owner = owners.of(record.tgid, record.begin_ns, &known);
            let Some(process) = owner.filter(|process| !left_out.contains(process)) else {
                unclaimed += 1;
                continue;
            };
            let pending = self.pending.entry(process).or_default();
            match pending.len() < MAX_PENDING {
                true => pending.push(record),
                false => unclaimed += 1,
            }
        }
        let monotonic = monotonic_now();
        // The wall-clock time of CLOCK_MONOTONIC's zero, as the clock is now.
        let zero = Utc::now() - chrono::Duration::from_std(monotonic).unwrap_or_default();
        let expired = monotonic.saturating_sub(self.keep_pending).as_nanos() as u64;
        let mut changed = false;
        // Records lost since the last poll, by JVM: those its budget
        // refused, and, when the ring buffer was full, the host's drops
        // (whose JVMs cannot be told apart). Their minutes are flagged.
        let newly_dropped = dropped.saturating_sub(self.dropped);
        if newly_dropped > 0 {
            reading.push(Update::Errors(ErrorKind::EbpfEventsDropped, newly_dropped));
            self.dropped = dropped;
        }
        let minute = crate::model::minutes::minute_of(Utc::now());
        for process in &measured {
            // Counted per pid: from when this process was first seen on.
            let refused = throttled.get(&process.0).copied().unwrap_or(0);
            let seen = self.throttled.insert(*process, refused).unwrap_or(refused);
            let lost = refused.saturating_sub(seen) + newly_dropped;
            let Some((id, _)) = streams.get(process).copied().flatten() else {
                continue;
            };
            if lost > 0 {
                reading.push(Update::RecordsLost {
                    stream: id,
                    minute,
                    records: lost,
                });
                changed = true;
            }
        }
        self.pending.retain(|process, pending| {
            let (id, role, collector) = match streams.get(process) {
                Some(Some((id, role))) if collectors.contains_key(id) => {
                    (*id, *role, collectors[id])
                }
                Some(_) => {
                    unclaimed += pending.len() as u64;
                    return false;
                }
                None => {
                    let waiting = pending.len();
                    pending.retain(|record| record.end_ns > expired);
                    unclaimed += (waiting - pending.len()) as u64;
                    return !pending.is_empty();
                }
            };
            let converter = self.converters.entry(*process).or_default();
            let mut events: Vec<_> = pending
                .iter()
                .flat_map(|record| converter.events(record, collector, zero))
                .collect();
            if role.records_safepoints() {
                let check = (self.checks.entry(*process)).or_insert_with(|| {
                    Check::new(*process, begun.get(process).copied(), dropped, poll_ns)
                });
                check.take(pending, poll_ns);
            }
            let mut run = JvmRun::default();
            match role {
                Role::Measures => {
                    if collector == Collector::Unknown {
                        run.collector = pending
                            .iter()
                            .map(|r| super::record::collector_of_operation(&r.operation))
                            .find(|c| *c != Collector::Unknown)
                            .unwrap_or_default();
                    }
                }
                Role::ChecksLog { safepoints } => {
                    let check = self.log_checks.entry(*process).or_default();
                    check.recorded += events.iter().filter_map(GcEvent::as_pause).count() as u64;
                    let collected = pending.iter().filter(|r| !r.gcs.is_empty());
                    if let Some(end) = collected.map(|r| r.end_ns).max() {
                        check.last_end_ns = check.last_end_ns.max(end);
                    }
                    // The log's pauses stay the log's: only what it lacks.
                    events.retain(|e| safepoints && matches!(e, GcEvent::Safepoint(_)));
                }
            }
            if !events.is_empty() || run.collector != Collector::Unknown {
                reading.push(Update::GcEvents {
                    stream: id,
                    run,
                    events,
                    origin: Origin::Probes,
                });
            }
            changed = true;
            false
        });
        reading.push(Update::UnclaimedRecords(unclaimed));
        let now_ns = monotonic.as_nanos() as u64;
        // Each JVM's records against its log and its counters, with this
        // poll's records in.
        let compared = reading
            .look(|state| self.compare(state, &streams, (&begun, dropped), (poll_ns, now_ns)));
        changed |= compared.changed;
        compared
            .updates
            .into_iter()
            .for_each(|update| reading.push(update));
        let missed_while_down = compared.missed_while_down;
        if missed_while_down > 0 {
            let missed = ErrorKind::EbpfSafepointsMissedWhileDown;
            reading.push(Update::Errors(missed, missed_while_down));
        }
        // A stop that never ended makes the minute's maxima lower bounds.
        for (process, record) in &never_ended {
            let Some((id, _)) = streams.get(process).copied().flatten() else {
                continue;
            };
            let ended = zero + chrono::Duration::nanoseconds(record.end_ns as i64);
            reading.push(Update::StopNeverEnded {
                stream: id,
                minute: crate::model::minutes::minute_of(ended),
            });
            tracing::warn!(pid = process.0, seconds = (record.end_ns - record.begin_ns) as f64 / 1e9, operation = %record.operation, "a stop that never ended: the JVM exited in it; counted up to when it was last seen, as a lower bound");
        }
        let attached = |process: &Process| streams.get(process).is_some_and(Option::is_some);
        self.converters.retain(|process, _| attached(process));
        self.checks.retain(|process, _| attached(process));
        self.log_checks.retain(|process, _| attached(process));
        self.throttled.retain(|process, _| attached(process));
        self.closed_stops
            .retain(|process| streams.contains_key(process));
        changed
    }

    /// Where each JVM's records reached: an event stream has no offset, so
    /// pauses while the agent is down are not seen, only counted.
    fn checkpoint(&self, _state: &AgentState) -> Option<SourceCheckpoint> {
        let mut reached = self.restored.clone();
        let checks = self.checks.values();
        reached.extend(checks.filter_map(|c| Some((c.key.clone(), c.reached()?))));
        Some(SourceCheckpoint::Ebpf(EbpfCheckpoint { reached }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::runtime::RuntimeStats;

    /// A record of a safepoint that began at `begin_ns`.
    fn record(begin_ns: u64) -> SafepointRecord {
        SafepointRecord {
            tgid: 1,
            begin_ns,
            operation_ns: 0,
            end_ns: begin_ns + 5,
            operation: String::new(),
            gcs: Vec::new(),
        }
    }

    /// A sample read at `sampled_ns` with the counter at `safepoints`.
    fn sample(sampled_ns: u64, safepoints: u64) -> RuntimeStats {
        RuntimeStats {
            sampled_monotonic_ns: sampled_ns,
            safepoints,
            ..RuntimeStats::default()
        }
    }

    /// A check begun at the monotonic clock's zero.
    fn check(in_flight: Option<u64>) -> Check {
        Check::new((1, 1), in_flight, 0, 0)
    }

    #[test]
    fn probes_that_record_nothing_while_the_counter_moves_are_blind() {
        let mut check = check(None);
        check.take(&[], 50);
        assert_eq!(check.compare(&sample(40, 100), 50), Some(0.0));
        assert!(!check.blind(102, 0));
        assert!(check.blind(103, 0));
        // Records were dropped meanwhile: lost, not blind.
        assert!(!check.blind(103, 1));
        // One in flight, or one recorded: it sees the JVM.
        check.in_flight = Some(60);
        assert!(!check.blind(103, 0));
        check.in_flight = None;
        check.take(&[70].map(record), 80);
        assert!(!check.blind(110, 0));
    }

    #[test]
    fn a_busy_jvm_agrees_at_every_sample_whatever_began_after_it() {
        // 100 safepoints before the probes were attached.
        let mut check = check(Some(45));
        check.take(&[10, 20, 30, 40].map(record), 50);
        // Read at 35: three had begun; 40 and the one in flight at 45 had not.
        assert_eq!(check.compare(&sample(35, 103), 50), Some(0.0));
        // The same sample again says nothing new.
        assert_eq!(check.compare(&sample(35, 103), 50), None);
        // The one in flight ended between the in-flight read and the drain:
        // one record, counted once.
        check.in_flight = Some(70);
        check.take(&[45, 55].map(record), 80);
        assert_eq!(check.recorded(), 7);
        assert_eq!(check.compare(&sample(68, 106), 80), Some(0.0));
        // A sample inside the one in flight is not compared.
        assert_eq!(check.compare(&sample(75, 107), 80), None);
        // The record of the one at 70 lost: one short.
        check.in_flight = None;
        check.take(&[90].map(record), 120);
        assert_eq!(check.compare(&sample(110, 108), 120), Some(-1.0));
        // Nor one inside a recorded safepoint: HotSpot may not have counted
        // it yet.
        check.take(&[130].map(record), 150);
        assert_eq!(check.compare(&sample(132, 108), 150), None);
        assert_eq!(check.compare(&sample(140, 109), 150), Some(-1.0));
    }

    #[test]
    fn a_sample_from_before_the_check_began_is_not_compared() {
        // An agent restarted beside a running JVM: the counter was read
        // at 90, the probes were attached at 95 after a safepoint at 92,
        // and the check began at the poll at 100.
        let mut check = Check::new((1, 1), None, 0, 100);
        check.take(&[110].map(record), 150);
        assert_eq!(check.compare(&sample(90, 5), 150), None);
        assert_eq!(check.compare(&sample(120, 7), 150), Some(0.0));
        assert_eq!(check.compare(&sample(130, 7), 150), Some(0.0));
    }

    #[test]
    fn a_sample_read_after_the_in_flight_read_waits_for_the_next_poll() {
        let mut check = check(None);
        check.take(&[10].map(record), 50);
        assert_eq!(check.compare(&sample(60, 2), 50), None);
        // A safepoint began at 65, after the sample: in flight at 70.
        check.in_flight = Some(65);
        assert_eq!(check.compare(&sample(60, 2), 70), Some(0.0));
        assert_eq!(check.reached(), Some(3));
    }

    #[test]
    fn a_restart_counts_exactly_the_safepoints_between_the_two_runs() {
        // The first run's records reached the counter's 20th safepoint.
        let mut first = check(None);
        first.take(&(1..=12).map(|i| record(i * 10)).collect::<Vec<_>>(), 200);
        assert_eq!(first.compare(&sample(125, 20), 200), Some(0.0));
        let reached = first.reached().unwrap();
        assert_eq!(reached, 20);
        // The second run's first record began at 500, after 7 more safepoints.
        let mut second = check(Some(510));
        second.take(&[500].map(record), 520);
        assert_eq!(second.missed_since(reached), None);
        assert_eq!(second.compare(&sample(515, 29), 520), None);
        assert_eq!(second.compare(&sample(505, 28), 520), Some(0.0));
        assert_eq!(second.missed_since(reached), Some(7));
    }
}
