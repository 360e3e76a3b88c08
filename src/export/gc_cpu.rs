//! Readers of the collector CPU families (`pausewatch_gc_cpu_*`), kept apart
//! from the catalog's table so that the table holds only their entries.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::catalog::{Sample, Value};
use crate::model::gc_cpu::GcCpu;
use crate::model::minutes::last_complete_minute;
use crate::store::StreamState;

/// A stream's collector CPU: a discovered JVM's runtime stats, else what
/// its log said (Go's gctrace); `None` when neither has any.
fn of(stream: &StreamState) -> Option<&GcCpu> {
    match &stream.runtime {
        Some(runtime) => Some(&runtime.gc_cpu),
        None => Some(&stream.jvm.gc_cpu).filter(|cpu| !cpu.source.is_empty()),
    }
}

fn per_kind(kinds: &BTreeMap<String, f64>) -> Vec<Sample<'_>> {
    kinds
        .iter()
        .map(|(kind, seconds)| Sample {
            labels: vec![kind.as_str().into()],
            value: Value::Float(*seconds),
            minute: None,
        })
        .collect()
}

/// `pausewatch_gc_cpu_seconds_total`.
pub fn collector(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    of(stream).map_or_else(Vec::new, |cpu| per_kind(&cpu.kinds))
}

/// `pausewatch_gc_cpu_beside_seconds_total`.
pub fn beside(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    of(stream).map_or_else(Vec::new, |cpu| per_kind(&cpu.beside))
}

/// `pausewatch_gc_cpu_info`: where the figures come from, or why there are none.
pub fn info(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    let Some(cpu) = of(stream) else {
        return Vec::new();
    };
    vec![Sample {
        labels: vec![
            cpu.source.as_str().into(),
            cpu.unavailable.as_deref().unwrap_or("").into(),
        ],
        value: Value::Int(1),
        minute: None,
    }]
}

/// `pausewatch_gc_cpu_ratio`: the last complete minute's collector CPU over
/// the process's CPU and over the CPUs available, where each is known.
pub fn ratio(stream: &StreamState, now: DateTime<Utc>) -> Vec<Sample<'_>> {
    let start = last_complete_minute(now);
    let Some(minute) = stream.jvm.minutes.get(start) else {
        return Vec::new();
    };
    [
        ("process", minute.gc_cpu_of_process),
        ("available", minute.gc_cpu_of_available),
    ]
    .into_iter()
    .filter_map(|(of, ratio)| {
        Some(Sample {
            labels: vec![of.into()],
            value: Value::Float(ratio?),
            minute: Some(start),
        })
    })
    .collect()
}
