//! Everything the agent knows about one JVM's log stream, built from its
//! events: pause histograms under Micrometer's labels, safepoint totals by
//! operation, counters of the rarer events, heap gauges and the minute series.
//!
//! This is the single source of truth for `/metrics` and `/api/v1/minutes`,
//! and it is serialisable so that a checkpoint holds it together with the file
//! offsets it reflects: after a crash the agent resumes both at once and
//! neither loses nor double-counts a pause.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use pausewatch_parsers::{Collector, Cycle, GcEvent, Generation, Pause, Safepoint};
use serde::Serialize;

use crate::model::gc_cpu::GcCpu;
use crate::model::histogram::Histogram;
use crate::model::latency::LatencyState;
use crate::model::minutes::{event_end, minute_start, MinuteWindows, Placement};
use crate::model::mxbean::{jdk_major, micrometer_labels};

/// One stop-the-world pause as an event of its own, for the OTLP
/// `jvm.gc.pause` log records.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseRecord {
    /// Position in the stream's pauses since the agent started: the
    /// exporter resumes after the last one the receiver took.
    pub seq: u64,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub duration_s: f64,
    /// The log's name with its qualifiers: `Pause Young (Normal)`.
    pub name: String,
    /// Micrometer's `gc` and `action`, as on `jvm_gc_pause_seconds`.
    pub gc: String,
    pub action: String,
    /// HotSpot's cause, not capped like the `cause` label: one record has one.
    pub cause: Option<String>,
    pub collector: Collector,
}

/// While the OTLP pause records are on, the pauses the receiver has not
/// taken yet: a bounded queue shared with the exporter's thread through its
/// own lock (a copy of the stream shares it too, so copying a stream on
/// write never copies the queue). The agent pushes; the exporter removes
/// what was delivered. A receiver that is down neither holds up the agent
/// nor grows its memory past `capacity`: the oldest pauses are dropped.
#[derive(Debug, Clone, Default)]
pub struct RecentPauses {
    /// Pauses kept; 0 (the default) keeps none.
    pub capacity: usize,
    /// `seq` of the next pause.
    next_seq: u64,
    pub queue: Arc<Mutex<PauseQueue>>,
}

#[derive(Debug, Default)]
pub struct PauseQueue {
    pub pauses: VecDeque<PauseRecord>,
    /// Pauses dropped to make room, not counted by the exporter yet.
    pub dropped: u64,
}

impl PauseQueue {
    /// Removes the pauses up to `seq`, which the receiver took.
    pub fn delivered(&mut self, seq: u64) {
        while self.pauses.front().is_some_and(|pause| pause.seq <= seq) {
            self.pauses.pop_front();
        }
    }
}

impl RecentPauses {
    fn push(&mut self, pause: &Pause, gc: &str, action: &str) {
        if self.capacity == 0 {
            return;
        }
        // Only a pause placed in wall-clock time can go on a timeline.
        let Some(end) = pause.end.wall else { return };
        let start = pause
            .start
            .wall
            .unwrap_or_else(|| pause.end.earlier_by(pause.duration_s).wall.unwrap_or(end));
        let qualifiers: String = pause.qualifiers.iter().map(|q| format!(" ({q})")).collect();
        let name = format!("{}{qualifiers}", pause.name);
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.pauses.push_back(PauseRecord {
            seq: self.next_seq,
            start,
            end,
            duration_s: pause.duration_s,
            name,
            gc: gc.to_string(),
            action: action.to_string(),
            cause: pause.cause.as_deref().map(str::to_string),
            collector: pause.collector,
        });
        self.next_seq += 1;
        while queue.pauses.len() > self.capacity {
            queue.pauses.pop_front();
            queue.dropped += 1;
        }
    }
}

/// One `jvm_gc_pause_seconds` series: Micrometer's `gc`, `action`, `cause`.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseSeries {
    pub gc: String,
    pub action: String,
    pub cause: String,
    pub histogram: Histogram,
    /// When the series' latest pause ended: the hsperfdata cross-check
    /// compares a busy JVM's counts when the counter's last collection is
    /// this one, so that neither side has a pause the other has not read.
    pub last_end: Option<pausewatch_parsers::LogTime>,
    /// Of `histogram.count`, the pauses of the JVM runs before the one now
    /// writing the stream (a JVM restarted into its log): the comparison
    /// with a JVM's own counters takes its run's alone.
    pub before_this_run: u64,
    /// The latest pauses' ends, each with [`Self::this_run`] after it: the
    /// cross-check finds how many pauses the log had when a counter sample
    /// was taken, though a busy JVM's log is always a pause or two behind
    /// (not checkpointed: a restarted agent compares once new pauses come).
    pub recent_ends: std::collections::VecDeque<(pausewatch_parsers::LogTime, u64)>,
}

/// Pause ends a series keeps in `recent_ends`: a second of a JVM that
/// collects 30 times a second, five of the 200 ms counter samples.
const RECENT_ENDS: usize = 32;

impl PauseSeries {
    /// The pauses of the JVM run now writing the stream.
    pub fn this_run(&self) -> u64 {
        self.histogram.count - self.before_this_run
    }
}

/// Safepoint totals for one VM operation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SafepointSeries {
    pub operation: String,
    pub count: u64,
    pub stopped_seconds: f64,
    pub time_to_safepoint_seconds: f64,
}

/// Monotonic counts of events, all since the agent first read this stream.
/// `Serialize` for `analyze`'s output; the checkpoint has its own record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventCounters {
    pub full_gcs: u64,
    pub evacuation_failures: u64,
    pub degenerated_gcs: u64,
    pub humongous_allocations: u64,
    pub explicit_gcs: u64,
    pub allocation_stalls: u64,
    pub allocation_stall_seconds: f64,
    pub relocation_stalls: u64,
    pub concurrent_cycles: u64,
    pub concurrent_cycle_seconds: f64,
    pub concurrent_phase_seconds: f64,
    pub allocated_bytes: u64,
    pub promoted_bytes: u64,
    pub jvm_restarts: u64,
}

/// Latest heap figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeapGauges {
    pub after_gc_bytes: Option<u64>,
    pub committed_bytes: Option<u64>,
    /// Heap after the last full, mixed or major collection: the live data set.
    pub live_data_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
}

/// Distinct values of `cause` (or `operation`) one stream's family may take
/// by default: HotSpot has a few dozen causes, a hostile log thousands.
pub const DEFAULT_MAX_LABEL_VALUES: usize = 100;

/// The value that label values past the cap are counted under.
pub const OTHER_LABEL_VALUE: &str = "other";

/// The cap on distinct label values of a family; from the configuration,
/// not the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelCap(pub usize);

impl Default for LabelCap {
    fn default() -> Self {
        LabelCap(DEFAULT_MAX_LABEL_VALUES)
    }
}

/// `value` when it may have a series of its own (it has one already, or
/// fewer than `cap` distinct values besides [`OTHER_LABEL_VALUE`] do), else
/// [`OTHER_LABEL_VALUE`], counted in `overflow` under `label`. Asked for
/// every event: nothing is allocated unless a value is new.
fn capped<'v, 'k>(
    value: &'v str,
    known: impl Iterator<Item = &'k str> + Clone,
    cap: LabelCap,
    overflow: &mut BTreeMap<String, u64>,
    label: &str,
) -> &'v str {
    let known = known.filter(|known| *known != OTHER_LABEL_VALUE);
    if known.clone().any(|known| known == value) {
        return value;
    }
    let distinct: std::collections::BTreeSet<&str> = known.collect();
    if distinct.len() < cap.0 {
        return value;
    }
    *overflow.entry(label.to_string()).or_default() += 1;
    OTHER_LABEL_VALUE
}

#[derive(Debug, Clone, Default)]
pub struct JvmState {
    pub collector: Collector,
    pub jdk_version: Option<String>,
    pub pauses: Vec<PauseSeries>,
    pub safepoints: Vec<SafepointSeries>,
    pub counters: EventCounters,
    pub heap: HeapGauges,
    pub minutes: MinuteWindows,
    /// Wall-clock end of the newest event, from the log.
    pub last_event: Option<DateTime<Utc>>,
    /// Heap after the previous collection, to derive allocation between collections.
    pub(crate) previous_heap_after: Option<u64>,
    pub max_label_values: LabelCap,
    /// Events counted under [`OTHER_LABEL_VALUE`], by label (`cause`, `operation`).
    pub label_overflow: BTreeMap<String, u64>,
    /// Wall-clock starts of the JVM runs seen, oldest first (at most
    /// [`MAX_RUN_STARTS`]): PauseRegression leaves their warm-up out of baselines.
    pub run_starts: Vec<DateTime<Utc>>,
    /// Whether the current run's start is in `run_starts`.
    pub(crate) in_run: bool,
    /// For the OTLP pause records; not checkpointed (events, not figures).
    pub recent_pauses: RecentPauses,
    /// The collector's CPU the log tells (Go's gctrace); a discovered JVM's
    /// is in its runtime stats.
    pub gc_cpu: GcCpu,
}

/// Runs remembered: restarts more frequent than this within a baseline window
/// leave no warm-up-free minute to compare with anyway.
const MAX_RUN_STARTS: usize = 64;

/// Old-generation pools as HotSpot names them in `gc,heap` lines.
fn is_old_pool(name: &str) -> bool {
    matches!(
        name,
        "ParOldGen" | "PSOldGen" | "Tenured" | "CMS" | "Old regions" | "Humongous regions"
    )
}

impl JvmState {
    /// Adds a sample's growth of a discovered JVM's collector and process
    /// CPU to the minute keyed `key`, with the CPUs it may use.
    pub fn add_cpu(&mut self, key: i64, gc_seconds: f64, process_seconds: f64, cpus: Option<f64>) {
        let minute = self.minutes.minute_mut(key);
        minute.add_gc_cpu(gc_seconds, Some(process_seconds), cpus);
    }

    /// The one fold from parsed events to the model, for the agent and
    /// `analyze` alike: what the parser knows of the JVM run first (its JDK
    /// version decides Micrometer's labels), then every event, each also
    /// recorded as a stop when the service's latency is lined up with it.
    pub fn ingest(
        &mut self,
        run: &pausewatch_parsers::JvmRun,
        events: &[GcEvent],
        latency: Option<&mut LatencyState>,
    ) {
        self.note_run(run);
        self.ingest_events(events, true, latency);
    }

    /// [`ingest`](Self::ingest)'s fold over `events` alone, for a caller
    /// that streams a log through it (`analyze`): with `complete` false, more
    /// of the stream is to come, and the events whose minutes depend on the
    /// time of one still unread are left for the next call
    /// ([`MinuteWindows::settle_clock`]). Returns how many of
    /// `events` (a prefix) were taken.
    pub fn ingest_events(
        &mut self,
        events: &[GcEvent],
        complete: bool,
        mut latency: Option<&mut LatencyState>,
    ) -> usize {
        // The clock is asked only where its answer may change: asking at
        // every event rescanned the rest of a run without wall-clock time
        // for each of its events.
        let mut ask_at = 0;
        for (index, event) in events.iter().enumerate() {
            if index == ask_at {
                match self.minutes.settle_clock(&events[index..], complete) {
                    Some(taken) => ask_at = index + taken,
                    None => return index,
                }
            }
            let placed = self.apply(event);
            if let (Some(latency), Placement::Minute(_)) = (latency.as_deref_mut(), placed) {
                latency.add_event(event);
            }
        }
        events.len()
    }

    /// Updates every figure from one event, and says where it was placed. An
    /// event whose time is not (yet) credible still counts everywhere but in
    /// minutes, stops and the time of the last event.
    fn apply(&mut self, event: &GcEvent) -> Placement {
        let placement = self.minutes.add(event);
        let placed = placement.key();
        match event {
            GcEvent::Pause(pause) => self.apply_pause(pause, placed),
            GcEvent::Safepoint(safepoint) => self.apply_safepoint(safepoint),
            GcEvent::Stall(stall) => match stall.kind {
                pausewatch_parsers::StallKind::Allocation => {
                    self.counters.allocation_stalls += 1;
                    self.counters.allocation_stall_seconds += stall.duration_s;
                }
                pausewatch_parsers::StallKind::Relocation => self.counters.relocation_stalls += 1,
            },
            GcEvent::Cycle(cycle) => self.apply_cycle(cycle, placed),
            GcEvent::ConcurrentPhase(phase) => {
                self.counters.concurrent_phase_seconds += phase.duration_s;
            }
            GcEvent::JvmRestart(_) => {
                self.counters.jvm_restarts += 1;
                for series in &mut self.pauses {
                    series.before_this_run = series.histogram.count;
                    series.recent_ends.clear();
                }
                self.in_run = false;
                self.previous_heap_after = None;
                // The new JVM's heap says nothing of the old one's live data.
                self.heap = HeapGauges::default();
            }
        }
        if let Placement::Minute(_) = placement {
            self.touch(event);
        }
        placement
    }

    /// Marks the minutes of `events`' pauses as having a lower-bound
    /// maximum: their pauses' individual durations are not known.
    pub fn mark_max_lower_bound(&mut self, events: &[GcEvent]) {
        for event in events {
            if let GcEvent::Pause(Pause {
                end:
                    pausewatch_parsers::LogTime {
                        wall: Some(end), ..
                    },
                ..
            }) = event
            {
                // Looked up, not searched: a day of minutes made the search
                // 5.9 us a pause.
                let key = crate::model::minutes::minute_of(*end);
                if self.minutes.get(minute_start(key)).is_some() {
                    self.minutes.minute_mut(key).pause_max_lower_bound = true;
                }
            }
        }
    }

    /// Marks the minute keyed `key` as having a lower-bound maximum: a stop
    /// the JVM exited in, counted up to when it was last seen.
    pub fn mark_max_lower_bound_at(&mut self, key: i64) {
        self.minutes.minute_mut(key).pause_max_lower_bound = true;
    }

    /// Flags the minutes from `from` to `to` (keys, at most a day of them)
    /// as not watched whole; `unseen_pauses` when pauses in them may have
    /// gone unseen, so their maxima are lower bounds.
    pub fn mark_seen_partly(&mut self, from: i64, to: i64, unseen_pauses: bool) {
        const DAY: i64 = 24 * 60 * 60;
        for key in (from.max(to - DAY)..=to).step_by(60) {
            let minute = self.minutes.minute_mut(key);
            minute.seen_partly = true;
            minute.pause_max_lower_bound |= unseen_pauses;
        }
    }

    /// Marks the minute keyed `key` as missing `lost` eBPF records: its
    /// pauses are counted short, and its maximum is a lower bound.
    pub fn mark_records_lost(&mut self, key: i64, lost: u64) {
        let minute = self.minutes.minute_mut(key);
        minute.records_lost += lost;
        minute.pause_max_lower_bound = true;
    }

    /// Records what the parser knows of the JVM run (collector, version, max heap).
    pub fn note_run(&mut self, run: &pausewatch_parsers::JvmRun) {
        if run.collector != Collector::Unknown {
            self.collector = run.collector;
        }
        if run.version.is_some() {
            self.jdk_version.clone_from(&run.version);
        }
        if run.max_heap_bytes.is_some() {
            self.heap.max_bytes = run.max_heap_bytes;
        }
    }

    /// Moves `last_event` to the end of a placed event (only a credible time
    /// may say how fresh the stream is), and notes the run's start at its
    /// first placed event.
    fn touch(&mut self, event: &GcEvent) {
        let Some(end) = event_end(event) else { return };
        let wall = end.wall;
        if !self.in_run {
            if let Some(at) = wall {
                // With uptime the JVM's own start; without, its first event.
                let start = end
                    .uptime_s
                    .map_or(at, |up| end.earlier_by(up).wall.unwrap_or(at));
                self.run_starts.push(start);
                if self.run_starts.len() > MAX_RUN_STARTS {
                    self.run_starts.remove(0);
                }
                self.in_run = true;
            }
        }
        if wall.is_some() && wall > self.last_event {
            self.last_event = wall;
        }
    }

    fn apply_pause(&mut self, pause: &Pause, placed: Option<i64>) {
        let major = self.jdk_version.as_deref().and_then(jdk_major);
        let (gc, action, cause) = micrometer_labels(pause, major);
        self.recent_pauses.push(pause, gc, action);
        let cause = capped(
            cause,
            self.pauses.iter().map(|s| s.cause.as_str()),
            self.max_label_values,
            &mut self.label_overflow,
            "cause",
        );
        let series = match self
            .pauses
            .iter_mut()
            .position(|s| s.gc == gc && s.action == action && s.cause == cause)
        {
            Some(index) => &mut self.pauses[index],
            None => {
                self.pauses.push(PauseSeries {
                    gc: gc.to_string(),
                    action: action.to_string(),
                    cause: cause.to_string(),
                    histogram: Histogram::default(),
                    last_end: None,
                    before_this_run: 0,
                    recent_ends: Default::default(),
                });
                self.pauses.last_mut().expect("just pushed")
            }
        };
        series.histogram.observe(pause.duration_s);
        series.last_end = Some(pause.end);
        if series.recent_ends.len() == RECENT_ENDS {
            series.recent_ends.pop_front();
        }
        let this_run = series.this_run();
        series.recent_ends.push_back((pause.end, this_run));
        let counters = &mut self.counters;
        counters.full_gcs += u64::from(pause.full);
        counters.evacuation_failures += u64::from(pause.evacuation_failure);
        counters.degenerated_gcs += u64::from(pause.degenerated);
        counters.humongous_allocations += u64::from(pause.humongous);
        counters.explicit_gcs += u64::from(pause.explicit);
        if let Some(heap) = pause.heap {
            self.record_heap(
                heap.before_bytes,
                heap.after_bytes,
                heap.capacity_bytes,
                pause,
                placed,
            );
        }
        let promoted = if pause.generation == Some(Generation::Young) {
            pause
                .pools
                .iter()
                .filter(|p| is_old_pool(&p.name))
                .map(|p| p.after_bytes.saturating_sub(p.before_bytes))
                .sum()
        } else {
            0
        };
        self.counters.promoted_bytes += promoted;
        if let Some(key) = placed {
            self.minutes.minute_mut(key).promoted_bytes += promoted;
        }
    }

    /// Heap after a collection; allocation is the growth since the previous one.
    fn record_heap(
        &mut self,
        before: u64,
        after: u64,
        capacity: Option<u64>,
        pause: &Pause,
        placed: Option<i64>,
    ) {
        let allocated = self
            .previous_heap_after
            .map_or(0, |previous| before.saturating_sub(previous));
        self.previous_heap_after = Some(after);
        self.counters.allocated_bytes += allocated;
        self.heap.after_gc_bytes = Some(after);
        if capacity.is_some() {
            self.heap.committed_bytes = capacity;
        }
        let live = matches!(pause.generation, Some(Generation::Full | Generation::Mixed));
        if live {
            self.heap.live_data_bytes = Some(after);
        }
        if let Some(key) = placed {
            let minute = self.minutes.minute_mut(key);
            minute.allocated_bytes += allocated;
            minute.heap_after_gc_bytes = Some(after);
            if capacity.is_some() {
                minute.heap_committed_bytes = capacity;
            }
            if live {
                minute.live_data_bytes = Some(after);
            }
        }
    }

    fn apply_cycle(&mut self, cycle: &Cycle, placed: Option<i64>) {
        if let Some(cpu) = &cycle.cpu {
            self.gc_cpu.add_cycle(cpu);
        }
        self.counters.concurrent_cycles += 1;
        self.counters.concurrent_cycle_seconds += cycle.duration_s.unwrap_or(0.0);
        // ZGC and Go have no pause with a heap transition: their cycle summary carries it.
        if let Some(heap) = cycle.heap {
            if matches!(
                cycle.collector,
                Collector::Z | Collector::ZGenerational | Collector::Go
            ) {
                let allocated = self
                    .previous_heap_after
                    .map_or(0, |previous| heap.before_bytes.saturating_sub(previous));
                self.previous_heap_after = Some(heap.after_bytes);
                self.counters.allocated_bytes += allocated;
                self.heap.after_gc_bytes = Some(heap.after_bytes);
                let live = cycle.name != "Minor Collection";
                if live {
                    self.heap.live_data_bytes = Some(heap.after_bytes);
                }
                if let Some(key) = placed {
                    let minute = self.minutes.minute_mut(key);
                    minute.allocated_bytes += allocated;
                    minute.heap_after_gc_bytes = Some(heap.after_bytes);
                    if live {
                        minute.live_data_bytes = Some(heap.after_bytes);
                    }
                }
            }
        }
    }

    fn apply_safepoint(&mut self, safepoint: &Safepoint) {
        let operation = capped(
            safepoint.operation.as_deref().unwrap_or("unknown"),
            self.safepoints.iter().map(|s| s.operation.as_str()),
            self.max_label_values,
            &mut self.label_overflow,
            "operation",
        );
        let series = match self
            .safepoints
            .iter_mut()
            .position(|s| s.operation == operation)
        {
            Some(index) => &mut self.safepoints[index],
            None => {
                self.safepoints.push(SafepointSeries {
                    operation: operation.to_string(),
                    ..SafepointSeries::default()
                });
                self.safepoints.last_mut().expect("just pushed")
            }
        };
        series.count += 1;
        series.stopped_seconds += safepoint.total_s;
        series.time_to_safepoint_seconds += safepoint.reaching_s.unwrap_or(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pausewatch_parsers::GcLogParser;

    /// Lines from tests/fixtures/jvm/jdk17-parallel-steady/gc.log.
    const PARALLEL: &str = "\
[2026-11-30T01:45:08.783+0000][0.159s][info][gc,start    ] GC(0) Pause Young (Allocation Failure)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc,heap     ] GC(0) PSYoungGen: 33280K(38400K)->5106K(38400K) Eden: 33280K(33280K)->0K(33280K) From: 0K(5120K)->5106K(5120K)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc,heap     ] GC(0) ParOldGen: 0K(87552K)->27704K(87552K)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc          ] GC(0) Pause Young (Allocation Failure) 32M->32M(123M) 24.989ms
[2026-11-30T01:45:09.100+0000][0.476s][info][gc          ] GC(1) Pause Full (Ergonomics) 60M->40M(123M) 12.000ms
";

    #[test]
    fn promotion_allocation_and_live_data_come_from_the_heap_lines() {
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(PARALLEL.as_bytes(), &mut events);
        parser.finish(&mut events);
        let mut jvm = JvmState::default();
        jvm.ingest(parser.run(), &events, None);
        // Old gen grew 0K -> 27704K in the young collection.
        assert_eq!(jvm.counters.promoted_bytes, 27704 * 1024);
        // 32M after GC(0), 60M before GC(1): 28M allocated in between.
        assert_eq!(jvm.counters.allocated_bytes, 28 << 20);
        assert_eq!(jvm.heap.live_data_bytes, Some(40 << 20));
        assert_eq!(jvm.counters.full_gcs, 1);
        let series = &jvm.pauses[0];
        assert_eq!(
            (series.gc.as_str(), series.action.as_str()),
            ("PS Scavenge", "end of minor GC")
        );
        let minute = jvm.minutes.iter().next().unwrap();
        assert_eq!(minute.pause_count, 2);
        assert!((minute.pause_max_seconds - 0.024989).abs() < 1e-12);
    }

    /// The Parallel lines above with uptime only (the JDK's default
    /// decorations, no JVM start known), then the two ZGC stalls of
    /// FORMATS.md section 7.1 (GCViewer's sample-ujl-zgc-gc-other.txt).
    const UPTIME_ONLY: &str = "\
[0.159s][info][gc,start    ] GC(0) Pause Young (Allocation Failure)
[0.184s][info][gc,heap     ] GC(0) PSYoungGen: 33280K(38400K)->5106K(38400K) Eden: 33280K(33280K)->0K(33280K) From: 0K(5120K)->5106K(5120K)
[0.184s][info][gc,heap     ] GC(0) ParOldGen: 0K(87552K)->27704K(87552K)
[0.184s][info][gc          ] GC(0) Pause Young (Allocation Failure) 32M->32M(123M) 24.989ms
[0.476s][info][gc          ] GC(1) Pause Full (Ergonomics) 60M->40M(123M) 12.000ms
[201.482s][info][gc          ] Allocation Stall (Group1.Backend.CompositeBackend{Tier1}.1) 0.706ms
[201.521s][info][gc          ] Relocation Stall (Group1.Backend.CompositeBackend{Tier1}.3) 0.720ms
";

    #[test]
    fn an_event_without_wall_clock_time_is_counted_once() {
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(UPTIME_ONLY.as_bytes(), &mut events);
        parser.finish(&mut events);
        let mut jvm = JvmState::default();
        jvm.ingest(parser.run(), &events, None);
        // Two pauses (the young one with heap and pool lines), one
        // allocation stall, one relocation stall: four events, none placed.
        assert_eq!(jvm.minutes.unplaced_events, 4);
        assert_eq!(jvm.minutes.iter().count(), 0);
        assert_eq!(jvm.counters.relocation_stalls, 1);
    }
}
