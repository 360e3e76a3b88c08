//! One discovered JVM: its hsperfdata sampled every `[runtime_stats] interval`
//! into runtime stats, and, when no GC log supplies them, its pauses
//! recovered from the collector counters into the same [`JvmState::ingest`]
//! as log-derived pauses (minutes, histogram, alerts, correlation).
//!
//! The file is opened and read as `hsperf_file` does (never blocking, never
//! more than its prologue says is used), into a reused buffer; the
//! counters' offsets are found once by the parser and again only when the
//! JVM appends entries. Values are read twice until two reads agree, since
//! the JVM writes them while they are read.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use pausewatch_parsers::hsperf::{self};
use pausewatch_parsers::{Collector, GcEvent, JvmRun};

use super::discovery::JavaProcess;
use super::gc_threads::GcThreads;
use super::hsperf_file::{self, Unreadable};
use super::proc_table::{cpu_seconds, cpus_allowed, is_alive};
use super::reading::{self, CpuGrowth, JvmChange, JvmSample, Reading, Update};
use super::{Source, SourceCheckpoint, SourceKey};
use crate::config::RuntimeStatsConfig;
use crate::model::gc_cpu::{self, GcCpu};
use crate::model::jvm::PauseSeries;
use crate::model::minutes::minute_of;
use crate::model::mxbean::jdk_major;
use crate::model::runtime::{gc_label_of_counter, recover_pauses, PauseCounters, Recovered};
use crate::store::{AgentState, Discovered, PauseSource, SafepointSource, StreamId, StreamState};

mod resume;
mod sample;

pub use resume::DiscoveredCheckpoint;
pub use sample::stats_of;
use sample::{extract, Layout, Sample};

/// Reads of the counters that may disagree before a sample is given up (the
/// next one will do): the JVM updates them during a collection.
const MAX_READS: usize = 5;
/// How long after a pause its log line may still be unwritten (HotSpot
/// writes it at the pause's end, the agent reads it at its next poll): a
/// comparison waits this long after the last pause.
const LOG_FLUSH_ALLOWANCE_SECONDS: f64 = 1.0;
/// How long a file must stay unusable before it is reported invalid.
const INVALID_AFTER: Duration = Duration::from_secs(1);
/// How often a JVM's CPU affinity is read again.
const CPUS_READ_EVERY: Duration = Duration::from_secs(10);
/// A JVM without a collection or a safepoint for this long is idle...
const IDLE_AFTER: Duration = Duration::from_secs(10);
/// ... and sampled this often (or at `interval` if that is longer) until
/// its counters move, when its pauses come from them: an idle JVM costs the
/// agent a tenth of a busy one's samples. The first sample after it wakes
/// may find several pauses (their maximum then a lower bound, flagged).
const IDLE_INTERVAL: Duration = Duration::from_secs(2);
/// ... or this often when a GC log or the eBPF probes give its pauses: the
/// samples are then only its runtime stats, whose gauges a scrape reads
/// every 15 s or so.
const IDLE_STATS_INTERVAL: Duration = Duration::from_secs(10);

/// Which stream a discovered JVM fills.
pub struct Placement {
    pub id: StreamId,
    /// A stream of its own (else a GC log's, which supplies the pauses).
    pub owns_stream: bool,
    /// Its labels, for a stream of its own.
    pub labels: BTreeMap<String, String>,
    /// The stream goes with the JVM (its own, or a log discovery found).
    pub retires: bool,
    pub proc_root: PathBuf,
    /// The one input its pauses come from.
    pub pause_source: PauseSource,
    /// Why eBPF does not measure it, when it does not.
    pub ebpf_reason: Option<crate::store::EbpfReason>,
    /// The one input its safepoints come from.
    pub safepoint_source: SafepointSource,
    /// Whether its pauses' input saw it from its start (a log read from its
    /// beginning, probes attached before it started): its counters are
    /// compared from zero, else from the difference at the first comparison.
    pub pauses_from_start: bool,
    /// Listening ports the kernel is not to measure (`exclude_ports`).
    pub excluded_ports: Vec<u16>,
    /// The previous run's checkpoint of this JVM's own stream.
    pub restored: Option<DiscoveredCheckpoint>,
}

/// Samples one JVM's hsperfdata.
pub struct RuntimeStatsSource {
    key: String,
    id: StreamId,
    process: JavaProcess,
    proc_root: PathBuf,
    interval: Duration,
    /// `[runtime_stats] enabled`: off, the JVM is only listed.
    sampling: bool,
    grace: Duration,
    /// Whether pauses come from these counters (no GC log and no eBPF
    /// supplies them).
    recovers_pauses: bool,
    /// The stream goes when the JVM has exited for the grace period.
    retires: bool,
    /// The stream is the JVM's own (no GC log): this source checkpoints it.
    owns_stream: bool,
    /// The minute (key) of the last poll: the stream's record is due when
    /// it moves on, so that a restart knows which minutes it did not watch.
    watched_minute: i64,
    file: Option<File>,
    buffer: Vec<u8>,
    layout: Option<Layout>,
    previous: BTreeMap<String, PauseCounters>,
    /// Log-minus-counter differences taken as the start (see [`Self::log_counter_mismatch`]).
    mismatch_baseline: BTreeMap<String, f64>,
    /// Each collector's recent counters, outside pauses.
    counter_history: BTreeMap<String, std::collections::VecDeque<PauseCounters>>,
    /// Counters before the first sample: zeros for a JVM that started after
    /// the agent (every pause is new), else the first sample itself.
    baseline_zero: bool,
    /// Whether the stream's pauses are compared with the counters from
    /// zero (see [`Placement::pauses_from_start`]).
    compared_from_zero: bool,
    /// The collector threads, read when hsperfdata has no CPU counters.
    threads: GcThreads,
    /// Collector and process CPU seconds at the previous sample, whose
    /// growth goes into the minute.
    previous_cpu: Option<(f64, f64)>,
    last_sample: Option<Instant>,
    /// The CPUs it may run on, and when they were read.
    cpus: Option<(Instant, Option<f64>)>,
    /// The collections and safepoints the counters said at the last
    /// sample, and since when they have said so (see [`IDLE_AFTER`]).
    activity: Option<(u64, Instant)>,
    last_lookup: Option<Instant>,
    /// Since when every sample found the bytes unusable.
    invalid_since: Option<Instant>,
    exited: Option<Instant>,
    /// The exited JVM's stats were taken off its configured log's stream
    /// (or a JVM restarted into the log had taken it).
    released: bool,
}

impl RuntimeStatsSource {
    /// Whether `id`'s stream still carries this JVM: a configured log's
    /// stream passes to a JVM restarted into it, and the run that exited
    /// then writes nothing there.
    fn carried(&self, state: &AgentState) -> bool {
        state
            .streams
            .get(&self.id)
            .and_then(|stream| stream.discovered.as_ref())
            .is_some_and(|jvm| {
                (jvm.pid, jvm.start_ticks) == (self.process.pid, self.process.start_ticks)
            })
    }

    /// A source for `process`, filling the stream `placement` says;
    /// `grace` is how long its series stay after it exits; a JVM started
    /// after the agent has every pause counted from its first.
    pub fn start(
        process: JavaProcess,
        placement: Placement,
        config: &RuntimeStatsConfig,
        grace: Duration,
        started_after_agent: bool,
        reading: &mut Reading,
    ) -> RuntimeStatsSource {
        let Placement {
            id,
            owns_stream,
            labels,
            retires,
            proc_root,
            pause_source,
            ebpf_reason,
            safepoint_source,
            pauses_from_start,
            excluded_ports,
            restored,
        } = placement;
        let unavailable = if !config.enabled {
            Some("disabled".to_string())
        } else {
            process
                .perf_data_disabled()
                .then(|| "perf_data_disabled".to_string())
        };
        if let Some(reason) = &unavailable {
            tracing::warn!(pid = process.pid, jvm = %process.main(), reason, "no runtime stats: the JVM runs with -XX:-UsePerfData or -XX:+PerfDisableSharedMem; remove that option to see its counters");
        }
        let now = Utc::now();
        let watched_minute = minute_of(now);
        let mut previous = BTreeMap::new();
        {
            let discovered = Discovered {
                user: process.user.clone(),
                unavailable,
                pid: process.pid,
                start_ticks: process.start_ticks,
                pause_source,
                ebpf_reason,
                safepoint_source,
                log_probe_mismatch: None,
                requests: None,
                ports: Vec::new(),
                excluded_ports,
            };
            if owns_stream {
                let mut stream = match restored {
                    Some(restored) => {
                        let (stream, counters) = restored.resumed(labels, now);
                        previous = counters;
                        stream
                    }
                    None => {
                        let mut stream = StreamState {
                            labels,
                            readable: true,
                            ..StreamState::default()
                        };
                        // A JVM that ran before it was watched: the minute
                        // it was found in is not all seen.
                        if !pauses_from_start {
                            let jvm = &mut stream.jvm;
                            jvm.mark_seen_partly(watched_minute, watched_minute, false);
                        }
                        stream
                    }
                };
                stream.discovered = Some(discovered);
                reading.push(Update::Stream(id, std::sync::Arc::new(stream)));
            } else {
                reading.push(Update::Discovered(id, discovered));
            }
        }
        tracing::info!(pid = process.pid, nspid = process.nspid, jvm = %process.main(), container = process.container.as_deref().unwrap_or(""), "JVM discovered");
        RuntimeStatsSource {
            key: format!("{}@{}", process.pid, process.start_ticks),
            id,
            baseline_zero: started_after_agent,
            compared_from_zero: pauses_from_start,
            process,
            proc_root,
            interval: config.interval,
            sampling: config.enabled,
            grace,
            recovers_pauses: pause_source == PauseSource::Hsperfdata,
            retires,
            owns_stream,
            watched_minute,
            file: None,
            buffer: Vec::new(),
            layout: None,
            previous,
            mismatch_baseline: BTreeMap::new(),
            counter_history: BTreeMap::new(),
            threads: GcThreads::default(),
            previous_cpu: started_after_agent.then_some((0.0, 0.0)),
            last_sample: None,
            activity: None,
            cpus: None,
            last_lookup: None,
            invalid_since: None,
            exited: None,
            released: false,
        }
    }

    /// Opens the hsperfdata file, at most once per second while it is missing
    /// (a JVM creates it a moment after it starts); says why when it cannot.
    fn open(&mut self, reading: &mut Reading) {
        if !self.sampling
            || self.process.perf_data_disabled()
            || self
                .last_lookup
                .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last_lookup = Some(Instant::now());
        match hsperf_file::find(&self.proc_root, self.process.hsperf_owner()) {
            Ok((_, file)) => {
                self.file = Some(file);
                self.report(reading, None);
            }
            // A JVM exiting during the lookup takes its /proc/PID/root with
            // it: that says nothing of its file (the exit is seen next).
            Err(_) if !is_alive(&self.proc_root, self.process.pid, self.process.start_ticks) => {}
            Err(unreadable) => self.report(reading, Some(unreadable)),
        }
    }

    /// Records why the counters cannot be read (`None`: they can), with a
    /// warning that says what was found when the reason changes.
    fn report(&self, reading: &mut Reading, unreadable: Option<Unreadable>) {
        let said = reading.look(|state| {
            let jvm = state.streams.get(&self.id)?.discovered.as_ref();
            jvm.filter(|_| self.carried(state))
                .map(|jvm| jvm.unavailable.clone())
        });
        let reason = unreadable.as_ref().map(|u| u.reason.to_string());
        // Not its stream any more, or nothing new to say.
        if said.is_none_or(|said| said == reason) {
            return;
        }
        if let Some(unreadable) = unreadable {
            let (pid, jvm, found) = (self.process.pid, self.process.main(), &unreadable.detail);
            match unreadable.reason {
                hsperf_file::DENIED => {
                    tracing::warn!(pid, %jvm, reason = unreadable.reason, found, "no runtime stats: its hsperfdata cannot be read (another user's file needs CAP_DAC_READ_SEARCH, another user's /proc/PID/root CAP_SYS_PTRACE)")
                }
                hsperf_file::MISSING => {
                    tracing::warn!(pid, %jvm, reason = unreadable.reason, found, "no runtime stats: no hsperfdata file of this JVM (it may still be starting, or its /tmp is not the one it runs with)")
                }
                _ => {
                    tracing::warn!(pid, %jvm, reason = unreadable.reason, found, "no runtime stats: its hsperfdata file is refused")
                }
            }
        }
        reading.push(self.change(JvmChange::Unavailable(reason)));
    }

    /// `change` for this JVM's stream, while the stream carries it.
    fn change(&self, change: JvmChange) -> Update {
        Update::Jvm {
            stream: self.id,
            process: (self.process.pid, self.process.start_ticks),
            change,
        }
    }

    /// Reads the file into the buffer: `Ok(false)` when there is none open.
    fn read(&mut self) -> Result<bool, String> {
        let Some(file) = &self.file else {
            return Ok(false);
        };
        hsperf_file::read(file, &mut self.buffer)?;
        Ok(true)
    }

    /// The layout of the file as it is now, found again when entries were
    /// added; `Err` says why the bytes are not usable PerfData.
    fn ensure_layout(&mut self) -> Result<(), String> {
        let prologue = hsperf::parse_prologue(&self.buffer).map_err(|e| e.to_string())?;
        if self
            .layout
            .as_ref()
            .is_some_and(|l| l.entries == prologue.num_entries)
        {
            return Ok(());
        }
        let data = hsperf::parse(&self.buffer).map_err(|e| e.to_string())?;
        self.layout = Layout::of(&data);
        match self.layout {
            Some(_) => Ok(()),
            None => Err(format!(
                "{} entries without sun.os.hrt.frequency or sun.rt.createVmBeginTime",
                data.counters.len()
            )),
        }
    }

    /// Two reads that agree, and a CLOCK_MONOTONIC time (ns) at which the
    /// counters held those values: between the two reads. `Ok(None)` when
    /// there is no file or the values kept changing; `Err` when the bytes
    /// are not usable PerfData.
    fn stable_sample(&mut self) -> Result<Option<(Sample, u64)>, String> {
        let mut last: Option<Sample> = None;
        for _ in 0..MAX_READS {
            let read_at = crate::sources::monotonic_now().as_nanos() as u64;
            if !self.read()? {
                return Ok(None);
            }
            self.ensure_layout()?;
            let Some(layout) = self.layout.as_ref() else {
                return Ok(None);
            };
            let sample = extract(&self.buffer, layout).ok_or("a counter lies past the data")?;
            if last.as_ref() == Some(&sample) {
                return Ok(last.map(|sample| (sample, read_at)));
            }
            last = Some(sample);
        }
        Ok(None)
    }

    /// Samples the file and applies what it says; a file that stays
    /// unusable for [`INVALID_AFTER`] is reported as invalid (a JVM being
    /// created shows zeros or an inaccessible prologue for a moment).
    /// Whether pauses were recovered.
    fn sample(&mut self, reading: &mut Reading) -> bool {
        match self.stable_sample() {
            Ok(Some((sample, sampled_ns))) => {
                if self.invalid_since.take().is_some() {
                    self.report(reading, None);
                }
                return self.hand_over(&sample, sampled_ns, reading);
            }
            Ok(None) => {}
            Err(detail) => {
                let since = *self.invalid_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= INVALID_AFTER {
                    let unreadable = Unreadable {
                        reason: hsperf_file::INVALID,
                        detail,
                    };
                    self.report(reading, Some(unreadable));
                }
            }
        }
        false
    }

    /// A JVM without PerfData (`-XX:-UsePerfData`), or whose file is not
    /// readable: its collector's CPU from its threads' schedstat and its
    /// process's from /proc, which need no hsperfdata. Without collector
    /// threads (Serial and Epsilon run none) there is no figure, and
    /// `pausewatch_gc_cpu_info` says so.
    fn sample_threads(&mut self, reading: &mut Reading) {
        let mut gc_cpu = self.threads.sample(&self.proc_root, self.process.pid);
        if gc_cpu.kinds.is_empty() && gc_cpu.unavailable.is_none() {
            gc_cpu.unavailable = Some(gc_cpu::NO_COLLECTOR_THREADS.to_string());
        }
        let process = cpu_seconds(&self.proc_root, self.process.pid);
        let cpus = self.cpus_allowed();
        if !reading.look(|state| self.carried(state)) {
            return;
        }
        let growth = process.and_then(|process| {
            cpu_growth(&mut self.previous_cpu, cpus, (gc_cpu.total(), process))
        });
        reading.push(self.change(JvmChange::ThreadsCpu { gc_cpu, growth }));
    }

    /// The CPUs the JVM may run on, read again every [`CPUS_READ_EVERY`]:
    /// its affinity hardly changes, and `/proc/PID/status` is the biggest
    /// file a sample read.
    fn cpus_allowed(&mut self) -> Option<f64> {
        match self.cpus {
            Some((at, cpus)) if at.elapsed() < CPUS_READ_EVERY => cpus,
            _ => {
                let cpus = cpus_allowed(&self.proc_root, self.process.pid);
                self.cpus = Some((Instant::now(), cpus));
                cpus
            }
        }
    }

    /// How often the JVM is sampled now: `interval`, or less often once its
    /// counters have not moved for [`IDLE_AFTER`].
    fn period(&self) -> Duration {
        let idle = match self.recovers_pauses {
            true => IDLE_INTERVAL,
            false => IDLE_STATS_INTERVAL,
        };
        match self.activity {
            Some((_, since)) if since.elapsed() >= IDLE_AFTER => self.interval.max(idle),
            _ => self.interval,
        }
    }

    /// Hands over a sample; whether it recovered pauses.
    fn hand_over(&mut self, sample: &Sample, sampled_ns: u64, reading: &mut Reading) -> bool {
        // The eBPF source hands a JVM its probes see nothing of back to
        // these counters.
        let pause_source = reading.look(|state| {
            let carried = self.carried(state);
            (state.streams.get(&self.id))
                .and_then(|s| s.discovered.as_ref())
                .filter(|_| carried)
                .map(|d| d.pause_source)
        });
        if let Some(pause_source) = pause_source {
            self.recovers_pauses = pause_source == PauseSource::Hsperfdata;
        }
        let cpus = self.cpus_allowed();
        let Some(layout) = &self.layout else {
            return false;
        };
        let (mut stats, counters) = sample.stats(layout);
        stats.sampled_monotonic_ns = sampled_ns;
        let collections: u64 = counters.iter().map(|(_, _, c)| c.invocations).sum();
        note_activity(&mut self.activity, collections + stats.safepoints);
        // As the RuntimeMXBean counts it (JDK 25 has no ticks counter).
        let uptime = Utc::now() - layout.jvm_start;
        stats.uptime_seconds = uptime.num_milliseconds().max(0) as f64 / 1e3;
        stats.cpu_seconds = cpu_seconds(&self.proc_root, self.process.pid);
        if stats.gc_cpu.source.is_empty() {
            stats.gc_cpu = match layout.collector {
                Collector::Serial => GcCpu {
                    unavailable: Some(gc_cpu::SERIAL_ON_VM_THREAD.to_string()),
                    ..self.threads.sample(&self.proc_root, self.process.pid)
                },
                _ => self.threads.sample(&self.proc_root, self.process.pid),
            };
        }
        stats.pauses_available = self.recovers_pauses && layout.collector != Collector::Shenandoah;
        let mut events = Vec::new();
        let mut unresolved = 0;
        for (prefix, name, now) in &counters {
            let now = *now;
            if !stats.pauses_available || now.mid_pause() {
                continue;
            }
            let before = match self.previous.get(prefix) {
                Some(before) => *before,
                None if self.baseline_zero => PauseCounters::default(),
                None => now,
            };
            match recover_pauses(name, &before, &now, &sample.last_cause, layout.jvm_start) {
                Recovered::Nothing => {}
                Recovered::One(pause) => events.push(GcEvent::Pause(*pause)),
                Recovered::Several(pauses) => {
                    unresolved += pauses.len() as u64;
                    events.extend(pauses.into_iter().map(GcEvent::Pause));
                }
            }
            self.previous.insert(prefix.clone(), now);
        }
        let mut run = JvmRun::default();
        run.collector = layout.collector;
        run.version.clone_from(&layout.version);
        let major = layout.version.as_deref().and_then(jdk_major);
        let jvm_start = layout.jvm_start;
        let pooled =
            pause_source == Some(PauseSource::Ebpf) && layout.collector == Collector::ZGenerational;
        // What the stream has: the process's last CPU reading (the last
        // sample, taken after the exit, finds no /proc/PID/stat) and, when
        // a log or the probes give the pauses, their count against these
        // counters.
        let seen = reading.look(|state| {
            let stream = state
                .streams
                .get(&self.id)
                .filter(|_| self.carried(state))?;
            let runtime = stream.runtime.as_ref();
            let mismatch = (!self.recovers_pauses).then(|| {
                let previous = runtime.map(|r| r.log_counter_mismatch.clone());
                self.log_counter_mismatch(
                    &counters,
                    &stream.jvm.pauses,
                    (major, pooled),
                    (stats.uptime_seconds, jvm_start),
                    previous.unwrap_or_default(),
                )
            });
            Some((runtime.and_then(|r| r.cpu_seconds), mismatch))
        });
        let Some((cpu_seconds_before, mismatch)) = seen else {
            return false;
        };
        let growth = (stats.cpu_seconds.or(cpu_seconds_before)).and_then(|process| {
            cpu_growth(
                &mut self.previous_cpu,
                cpus,
                (stats.gc_cpu.total(), process),
            )
        });
        if let Some(mismatch) = mismatch {
            stats.log_counter_mismatch = mismatch;
        }
        let recovered_any = self.recovers_pauses && !events.is_empty();
        let recovered = (self.recovers_pauses).then_some(reading::Recovered { events, unresolved });
        reading.push(self.change(JvmChange::Sample(Box::new(JvmSample {
            stats,
            growth,
            run,
            recovered,
        }))));
        recovered_any
    }
}

/// Notes in `activity` the collections and safepoints the counters say.
fn note_activity(activity: &mut Option<(u64, Instant)>, collections_and_safepoints: u64) {
    match activity {
        Some((seen, _)) if *seen == collections_and_safepoints => {}
        _ => *activity = Some((collections_and_safepoints, Instant::now())),
    }
}

/// The collector's and the process's CPU since the `previous` reading,
/// for this minute; `reading` is both, cumulative seconds.
fn cpu_growth(
    previous: &mut Option<(f64, f64)>,
    cpus: Option<f64>,
    reading: (f64, f64),
) -> Option<CpuGrowth> {
    let (gc, process) = reading;
    let (gc_before, process_before) = previous.replace(reading)?;
    Some(CpuGrowth {
        minute: minute_of(Utc::now()),
        gc_seconds: (gc - gc_before).max(0.0),
        process_seconds: (process - process_before).max(0.0),
        cpus,
    })
}

/// Samples of a collector's counters kept for a busy JVM's log to catch up
/// with (at the default interval, 10 s of them).
const COUNTER_HISTORY: usize = 10;

/// How near the counter's last exit a pause's end must be to be the same
/// collection: the log's uptime has milliseconds, and the counters' clock
/// starts within one of `sun.rt.createVmBeginTime`.
const SAME_PAUSE_SECONDS: f64 = 0.005;

/// The pauses of the bean `gc` the stream has of the JVM's run.
fn log_total(pauses: &[PauseSeries], gc: &str) -> u64 {
    (pauses.iter())
        .filter(|series| series.gc == gc)
        .map(PauseSeries::this_run)
        .sum()
}

/// How many pauses of the bean `gc` the stream had when the collection
/// that ended at `last_exit` (uptime seconds of the JVM started at
/// `jvm_start`) ended, when one of its series' recent pauses is that
/// collection and every series' recent pauses reach back to it; `None`
/// when they do not tell.
fn log_count_at(
    pauses: &[PauseSeries],
    gc: &str,
    last_exit: f64,
    jvm_start: DateTime<Utc>,
) -> Option<u64> {
    let uptime_of = |end: &pausewatch_parsers::LogTime| {
        let from_wall = end
            .wall
            .map(|wall| (wall - jvm_start).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6);
        end.uptime_s.or(from_wall)
    };
    let mut found = false;
    let mut total = 0;
    for series in pauses.iter().filter(|series| series.gc == gc) {
        let ends = || {
            (series.recent_ends.iter()).filter_map(|(end, count)| Some((uptime_of(end)?, *count)))
        };
        found |= ends().any(|(end, _)| (end - last_exit).abs() <= SAME_PAUSE_SECONDS);
        let by_then = ends()
            .rev()
            .find(|(end, _)| *end <= last_exit + SAME_PAUSE_SECONDS);
        total += match by_then {
            Some((_, count)) => count,
            // None of this series' pauses had ended by then, if it kept them all.
            None if series.recent_ends.len() as u64 == series.this_run() => 0,
            None => return None,
        };
    }
    found.then_some(total)
}

impl RuntimeStatsSource {
    /// Per `gc` label, the pauses the log gave minus the JVM's counter, less
    /// the difference at the first comparison when the JVM started before
    /// the agent (the log was then not read from the JVM's start); with
    /// `pooled`, generational ZGC's two beans as one ([`compared_as`]).
    fn log_counter_mismatch(
        &mut self,
        counters: &[(String, String, PauseCounters)],
        pauses: &[PauseSeries],
        (major, pooled): (Option<u32>, bool),
        (uptime, jvm_start): (f64, DateTime<Utc>),
        previous: Vec<(String, f64)>,
    ) -> Vec<(String, f64)> {
        // Each counter as it was at the stream's latest pause of its beans:
        // now, when it has been idle for the time a log line may take to
        // be read; else a recent sample whose last collection is that
        // pause (a JVM that collects all the time, whose log is always a
        // pause or two behind its counters).
        let mut by_gc: BTreeMap<String, Option<f64>> = BTreeMap::new();
        for (_, name, counter) in counters {
            let Some(gc) = gc_label_of_counter(name, major) else {
                continue;
            };
            let history = self.counter_history.entry(name.clone()).or_default();
            if !counter.mid_pause() {
                if history.len() == COUNTER_HISTORY {
                    history.pop_front();
                }
                history.push_back(*counter);
            }
            let settled =
                !counter.mid_pause() && uptime - counter.last_exit >= LOG_FLUSH_ALLOWANCE_SECONDS;
            // The log's pauses of this bean and the counter, at one moment.
            let compared = match settled {
                true => Some((log_total(pauses, &gc), counter.invocations)),
                false => (history.iter().rev()).find_map(|c| {
                    log_count_at(pauses, &gc, c.last_exit, jvm_start).map(|n| (n, c.invocations))
                }),
            };
            let entry = by_gc.entry(compared_as(gc, pooled)).or_insert(Some(0.0));
            *entry = entry
                .zip(compared)
                .map(|(sum, (log, counter))| sum + log as f64 - counter as f64);
        }
        let previous: BTreeMap<String, f64> = previous.into_iter().collect();
        by_gc
            .into_iter()
            .filter_map(|(gc, difference)| {
                let Some(difference) = difference else {
                    // Not comparable at this sample: as it was.
                    return previous.get(&gc).map(|value| (gc, *value));
                };
                let start = if self.compared_from_zero {
                    0.0
                } else {
                    difference
                };
                let baseline = *self.mismatch_baseline.entry(gc.clone()).or_insert(start);
                Some((gc, difference - baseline))
            })
            .collect()
    }
}

/// What generational ZGC's two pause beans are compared as, together,
/// where eBPF measures the JVM.
const ZGC_PAUSES: &str = "ZGC Pauses";

/// The `gc` a bean is compared under: with `pooled`, generational ZGC's
/// minor and major pauses as one total, as the probes cannot tell which
/// collection a young pause belongs to (a few runs filed a major
/// collection's young pauses as minor: -56/+36 after 5 minutes, a false
/// `GcLogCounterMismatch`).
fn compared_as(gc: String, pooled: bool) -> String {
    match pooled && gc.starts_with("ZGC ") && gc.ends_with(" Pauses") {
        true => ZGC_PAUSES.to_string(),
        false => gc,
    }
}

impl Source for RuntimeStatsSource {
    fn key(&self) -> SourceKey {
        SourceKey::RuntimeStats(self.key.clone())
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        if !self.due() {
            return false;
        }
        self.last_sample = Some(Instant::now());
        if self.exited.is_none()
            && !is_alive(&self.proc_root, self.process.pid, self.process.start_ticks)
        {
            tracing::info!(pid = self.process.pid, jvm = %self.process.main(), grace = %humantime::format_duration(self.grace), "JVM exited; its series go after the grace period");
            self.exited = Some(Instant::now());
            // Its last counters: the file HotSpot removed at exit is still
            // open here, and holds the pauses since the previous sample.
            return self.sample(reading) && self.owns_stream;
        }
        if let Some(exited) = self.exited {
            // A configured log's stream stays, without the exited JVM's stats.
            if !self.retires && !self.released && exited.elapsed() >= self.grace {
                reading.push(self.change(JvmChange::Released));
                self.released = true;
            }
            return false;
        }
        if self.file.is_none() {
            self.open(reading);
        }
        if self.file.is_none() && self.sampling {
            self.sample_threads(reading);
        }
        let recovered = self.sample(reading);
        // Its own stream's record is due when it changed, and when the
        // minute moved on (which minutes a restart did not watch).
        let minute = minute_of(Utc::now());
        let moved = minute != self.watched_minute;
        self.watched_minute = minute;
        self.owns_stream && (recovered || moved)
    }

    /// The JVM's own stream (a JVM with a GC log is resumed from the log's
    /// checkpoint); after its exit too, until the grace ends, so that a
    /// restarted agent keeps its minutes.
    fn checkpoint(&self, state: &AgentState) -> Option<SourceCheckpoint> {
        let stream = state.streams.get(&self.id)?;
        if !self.owns_stream || !self.carried(state) {
            return None;
        }
        Some(SourceCheckpoint::Discovered(Box::new(
            DiscoveredCheckpoint {
                jvm: self.key.clone(),
                watched_minute: self.watched_minute,
                state: stream.clone(),
                counters: self.previous.clone(),
            },
        )))
    }

    fn due(&self) -> bool {
        self.last_sample
            .is_none_or(|at| at.elapsed() >= self.period())
    }

    /// Its next sample.
    fn wake_in(&self) -> Option<Duration> {
        let since = self.last_sample.map_or(Duration::MAX, |at| at.elapsed());
        Some(self.period().saturating_sub(since))
    }

    fn stream(&self) -> Option<StreamId> {
        self.retires.then_some(self.id)
    }

    /// After the grace; for a configured log's stream, once the exited
    /// JVM's stats are off it, so that a JVM restarted into it is found.
    fn gone(&self) -> bool {
        self.exited.is_some_and(|at| at.elapsed() >= self.grace) && (self.retires || self.released)
    }
}
