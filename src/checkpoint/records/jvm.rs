//! Records of a JVM's state: its pause and safepoint series, counters, heap
//! and the bookkeeping of its minutes (the minutes themselves are written
//! apart, [`super::MinuteV5`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use pausewatch_parsers::{Collector, LogTime};
use serde::{Deserialize, Serialize};

use super::minutes::{HistogramV5, MinuteV5};
use crate::model::gc_cpu::GcCpu;
use crate::model::jvm::{
    EventCounters, HeapGauges, JvmState, LabelCap, PauseSeries, RecentPauses, SafepointSeries,
};
use crate::model::minutes::{is_zero, ClockCheck, MinuteWindows};

/// Version 5 of [`GcCpu`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GcCpuV5 {
    kinds: BTreeMap<String, f64>,
    beside: BTreeMap<String, f64>,
    source: String,
    unavailable: Option<String>,
}

both_ways!(GcCpu, GcCpuV5, |cpu| {
    kinds: cpu.kinds,
    beside: cpu.beside,
    source: cpu.source,
    unavailable: cpu.unavailable,
});

/// Version 5 of [`PauseSeries`].
#[derive(Debug, Serialize, Deserialize)]
pub struct PauseSeriesV5<'a> {
    gc: Cow<'a, str>,
    action: Cow<'a, str>,
    cause: Cow<'a, str>,
    histogram: HistogramV5,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_end: Option<LogTime>,
    #[serde(default, skip_serializing_if = "is_zero")]
    before_this_run: u64,
}

impl<'a> From<&'a PauseSeries> for PauseSeriesV5<'a> {
    fn from(series: &'a PauseSeries) -> Self {
        PauseSeriesV5 {
            gc: Cow::Borrowed(&series.gc),
            action: Cow::Borrowed(&series.action),
            cause: Cow::Borrowed(&series.cause),
            histogram: series.histogram.clone().into(),
            last_end: series.last_end,
            before_this_run: series.before_this_run,
        }
    }
}

impl PauseSeriesV5<'_> {
    fn into_model(self) -> PauseSeries {
        PauseSeries {
            gc: self.gc.into_owned(),
            action: self.action.into_owned(),
            cause: self.cause.into_owned(),
            histogram: self.histogram.into(),
            last_end: self.last_end,
            before_this_run: self.before_this_run,
            // Not checkpointed: a restarted agent compares once new pauses come.
            recent_ends: VecDeque::new(),
        }
    }
}

/// Version 5 of [`SafepointSeries`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SafepointSeriesV5 {
    operation: String,
    count: u64,
    stopped_seconds: f64,
    time_to_safepoint_seconds: f64,
}

both_ways!(SafepointSeries, SafepointSeriesV5, |series| {
    operation: series.operation,
    count: series.count,
    stopped_seconds: series.stopped_seconds,
    time_to_safepoint_seconds: series.time_to_safepoint_seconds,
});

/// Version 5 of [`EventCounters`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct EventCountersV5 {
    full_gcs: u64,
    evacuation_failures: u64,
    degenerated_gcs: u64,
    humongous_allocations: u64,
    explicit_gcs: u64,
    allocation_stalls: u64,
    allocation_stall_seconds: f64,
    relocation_stalls: u64,
    concurrent_cycles: u64,
    concurrent_cycle_seconds: f64,
    concurrent_phase_seconds: f64,
    allocated_bytes: u64,
    promoted_bytes: u64,
    jvm_restarts: u64,
}

both_ways!(EventCounters, EventCountersV5, |counters| {
    full_gcs: counters.full_gcs,
    evacuation_failures: counters.evacuation_failures,
    degenerated_gcs: counters.degenerated_gcs,
    humongous_allocations: counters.humongous_allocations,
    explicit_gcs: counters.explicit_gcs,
    allocation_stalls: counters.allocation_stalls,
    allocation_stall_seconds: counters.allocation_stall_seconds,
    relocation_stalls: counters.relocation_stalls,
    concurrent_cycles: counters.concurrent_cycles,
    concurrent_cycle_seconds: counters.concurrent_cycle_seconds,
    concurrent_phase_seconds: counters.concurrent_phase_seconds,
    allocated_bytes: counters.allocated_bytes,
    promoted_bytes: counters.promoted_bytes,
    jvm_restarts: counters.jvm_restarts,
});

/// Version 5 of [`HeapGauges`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HeapGaugesV5 {
    after_gc_bytes: Option<u64>,
    committed_bytes: Option<u64>,
    live_data_bytes: Option<u64>,
    max_bytes: Option<u64>,
}

both_ways!(HeapGauges, HeapGaugesV5, |heap| {
    after_gc_bytes: heap.after_gc_bytes,
    committed_bytes: heap.committed_bytes,
    live_data_bytes: heap.live_data_bytes,
    max_bytes: heap.max_bytes,
});

/// Version 5 of [`ClockCheck`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClockCheckV5 {
    reference: Option<i64>,
    suspect: Option<(i64, MinuteV5)>,
}

both_ways!(ClockCheck, ClockCheckV5, |clock| {
    reference: clock.reference,
    suspect: clock.suspect.map(|(key, minute)| (key, minute.into())),
});

/// Version 5 of [`MinuteWindows`], without its minutes; those of versions
/// 1 and 2, which held them, are read.
#[derive(Debug, Serialize, Deserialize)]
pub struct MinuteWindowsV5 {
    #[serde(default, skip_serializing)]
    minutes: BTreeMap<i64, MinuteV5>,
    unplaced_events: u64,
    #[serde(default)]
    clock_outliers: u64,
    #[serde(default)]
    clock: ClockCheckV5,
}

impl From<&MinuteWindows> for MinuteWindowsV5 {
    fn from(windows: &MinuteWindows) -> Self {
        MinuteWindowsV5 {
            minutes: BTreeMap::new(),
            unplaced_events: windows.unplaced_events,
            clock_outliers: windows.clock_outliers,
            clock: windows.clock.clone().into(),
        }
    }
}

impl MinuteWindowsV5 {
    fn into_model(self) -> MinuteWindows {
        let mut windows =
            MinuteWindows::restored(self.unplaced_events, self.clock_outliers, self.clock.into());
        for minute in self.minutes.into_values() {
            windows.restore(minute.into());
        }
        windows
    }
}

/// Version 5 of [`JvmState`].
#[derive(Debug, Serialize, Deserialize)]
pub struct JvmV5<'a> {
    collector: Collector,
    jdk_version: Option<Cow<'a, str>>,
    pauses: Vec<PauseSeriesV5<'a>>,
    safepoints: Vec<SafepointSeriesV5>,
    counters: EventCountersV5,
    heap: HeapGaugesV5,
    minutes: MinuteWindowsV5,
    last_event: Option<DateTime<Utc>>,
    previous_heap_after: Option<u64>,
    #[serde(default)]
    label_overflow: Cow<'a, BTreeMap<String, u64>>,
    #[serde(default)]
    run_starts: Cow<'a, [DateTime<Utc>]>,
    #[serde(default)]
    in_run: bool,
    #[serde(default)]
    gc_cpu: GcCpuV5,
}

impl<'a> From<&'a JvmState> for JvmV5<'a> {
    fn from(jvm: &'a JvmState) -> Self {
        JvmV5 {
            collector: jvm.collector,
            jdk_version: jvm.jdk_version.as_deref().map(Cow::Borrowed),
            pauses: jvm.pauses.iter().map(Into::into).collect(),
            safepoints: jvm.safepoints.iter().cloned().map(Into::into).collect(),
            counters: jvm.counters.clone().into(),
            heap: jvm.heap.clone().into(),
            minutes: (&jvm.minutes).into(),
            last_event: jvm.last_event,
            previous_heap_after: jvm.previous_heap_after,
            label_overflow: Cow::Borrowed(&jvm.label_overflow),
            run_starts: Cow::Borrowed(&jvm.run_starts),
            in_run: jvm.in_run,
            gc_cpu: jvm.gc_cpu.clone().into(),
        }
    }
}

impl JvmV5<'_> {
    pub fn into_model(self) -> JvmState {
        JvmState {
            collector: self.collector,
            jdk_version: self.jdk_version.map(Cow::into_owned),
            pauses: self
                .pauses
                .into_iter()
                .map(PauseSeriesV5::into_model)
                .collect(),
            safepoints: self.safepoints.into_iter().map(Into::into).collect(),
            counters: self.counters.into(),
            heap: self.heap.into(),
            minutes: self.minutes.into_model(),
            last_event: self.last_event,
            previous_heap_after: self.previous_heap_after,
            // The configuration's, set when the source starts.
            max_label_values: LabelCap::default(),
            label_overflow: self.label_overflow.into_owned(),
            run_starts: self.run_starts.into_owned(),
            in_run: self.in_run,
            recent_pauses: RecentPauses::default(),
            gc_cpu: self.gc_cpu.into(),
        }
    }
}
