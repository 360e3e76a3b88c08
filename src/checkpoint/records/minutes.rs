//! Records of a stream's minutes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::histogram::Histogram;
use crate::model::minutes::{is_zero, Minute};

/// Version 5 of [`Histogram`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HistogramV5 {
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

both_ways!(Histogram, HistogramV5, |histogram| {
    buckets: histogram.buckets,
    count: histogram.count,
    sum: histogram.sum,
});

/// Version 5 of [`Minute`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MinuteV5 {
    start: DateTime<Utc>,
    pause_count: u64,
    pause_total_seconds: f64,
    pause_max_seconds: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pause_max_lower_bound: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    seen_partly: bool,
    #[serde(skip_serializing_if = "is_zero")]
    records_lost: u64,
    pause_histogram: HistogramV5,
    safepoint_count: u64,
    safepoint_total_seconds: f64,
    safepoint_max_seconds: f64,
    time_to_safepoint_max_seconds: f64,
    full_gcs: u64,
    evacuation_failures: u64,
    degenerated_gcs: u64,
    allocation_stalls: u64,
    allocation_stall_seconds: f64,
    concurrent_cycle_seconds: f64,
    heap_after_gc_bytes: Option<u64>,
    heap_committed_bytes: Option<u64>,
    live_data_bytes: Option<u64>,
    allocated_bytes: u64,
    promoted_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    gc_cpu_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_cpu_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gc_cpu_of_process: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gc_cpu_of_available: Option<f64>,
}

impl MinuteV5 {
    /// The minute's key: its start in seconds since the epoch.
    pub fn key(&self) -> i64 {
        self.start.timestamp()
    }
}

both_ways!(Minute, MinuteV5, |minute| {
    start: minute.start,
    pause_count: minute.pause_count,
    pause_total_seconds: minute.pause_total_seconds,
    pause_max_seconds: minute.pause_max_seconds,
    pause_max_lower_bound: minute.pause_max_lower_bound,
    seen_partly: minute.seen_partly,
    records_lost: minute.records_lost,
    pause_histogram: minute.pause_histogram.into(),
    safepoint_count: minute.safepoint_count,
    safepoint_total_seconds: minute.safepoint_total_seconds,
    safepoint_max_seconds: minute.safepoint_max_seconds,
    time_to_safepoint_max_seconds: minute.time_to_safepoint_max_seconds,
    full_gcs: minute.full_gcs,
    evacuation_failures: minute.evacuation_failures,
    degenerated_gcs: minute.degenerated_gcs,
    allocation_stalls: minute.allocation_stalls,
    allocation_stall_seconds: minute.allocation_stall_seconds,
    concurrent_cycle_seconds: minute.concurrent_cycle_seconds,
    heap_after_gc_bytes: minute.heap_after_gc_bytes,
    heap_committed_bytes: minute.heap_committed_bytes,
    live_data_bytes: minute.live_data_bytes,
    allocated_bytes: minute.allocated_bytes,
    promoted_bytes: minute.promoted_bytes,
    gc_cpu_seconds: minute.gc_cpu_seconds,
    process_cpu_seconds: minute.process_cpu_seconds,
    cpus: minute.cpus,
    gc_cpu_of_process: minute.gc_cpu_of_process,
    gc_cpu_of_available: minute.gc_cpu_of_available,
});
