//! A JVM's runtime stats from its hsperfdata counters, and the pauses those
//! counters reveal when the JVM writes no GC log.
//!
//! Pure: the source reads the file, this module reads the counters. Which
//! counter is a pause counter was checked per collector against the JVM's
//! own MXBeans (tests/fixtures/hsperf), not assumed: G1's three collectors
//! (young, full, and Remark plus Cleanup: the JDK 20+ `G1 Concurrent GC`
//! bean), Parallel's and Serial's two, ZGC's pause counters (single and
//! generational). Shenandoah's `Shenandoah full` counter nests pauses inside
//! cycles (110 invocations against 29 pauses), so Shenandoah's pauses are
//! reported as unavailable rather than wrong.

use chrono::{DateTime, Utc};
use pausewatch_parsers::{seconds_to_duration, Collector, Generation, LogTime, Name, Pause};

use crate::model::gc_cpu::GcCpu;
use crate::model::mxbean::micrometer_labels;

/// One heap memory pool as Micrometer labels it (`area`, `id` = the MXBean's
/// pool name). Non-heap pools are left out: hsperfdata updates Metaspace's
/// figures only at collections, so they would not be the MXBeans'.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPool {
    /// `heap` or `nonheap`.
    pub area: String,
    pub id: String,
    /// `None` where hsperfdata's figure lags the heap (see the source).
    pub used: Option<u64>,
    pub committed: u64,
    /// `None` where the MXBean says -1 (undefined).
    pub max: Option<u64>,
}

/// One collector's cumulative counters.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectorStats {
    /// HotSpot's name (`G1 young collection pauses`).
    pub name: String,
    pub invocations: u64,
    pub seconds: f64,
}

/// Everything one sample of the counters says; gauges are the latest values,
/// counters the JVM's own totals since it started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeStats {
    pub collectors: Vec<CollectorStats>,
    pub safepoints: u64,
    pub safepoint_seconds: f64,
    pub safepoint_sync_seconds: f64,
    pub memory: Vec<MemoryPool>,
    pub gc_cause: String,
    pub gc_last_cause: String,
    pub classes_loaded: u64,
    pub classes_unloaded: u64,
    pub jit_seconds: f64,
    pub threads_live: u64,
    pub threads_daemon: u64,
    pub threads_peak: u64,
    pub uptime_seconds: f64,
    /// CLOCK_MONOTONIC (ns) at which the counters held these values: where
    /// the eBPF source places `safepoints` among its records.
    pub sampled_monotonic_ns: u64,
    /// User plus system CPU time of the process, from /proc (hsperfdata
    /// has no such counter); `None` until read.
    pub cpu_seconds: Option<f64>,
    /// The collector's CPU, from hsperfdata or the collector threads.
    pub gc_cpu: GcCpu,
    /// Pauses that fell several between two samples: their count and total
    /// are exact, their individual durations are not.
    pub unresolved_pauses: u64,
    /// Whether pauses are recovered from the counters for this collector.
    pub pauses_available: bool,
    /// For a JVM whose GC log supplies the pauses: per `gc` label, pauses
    /// counted from the log minus the JVM's own counter (see the source).
    pub log_counter_mismatch: Vec<(String, f64)>,
    /// For a JVM whose pauses eBPF measures: safepoints the probes recorded
    /// minus `sun.rt.safepoints`, less that difference at the first
    /// comparison; below 0, records were lost.
    pub safepoint_probe_mismatch: Option<f64>,
}

/// The Micrometer (MXBean) identity of a HotSpot pause counter, by its name.
struct PauseCounter {
    collector: Collector,
    name: &'static str,
    qualifier: Option<&'static str>,
    generation: Generation,
    full: bool,
}

/// The pause each collector counter stands for, so that [`crate::model::mxbean`]
/// gives it the bean's name, as a log-derived pause of the same kind.
fn pause_counter(name: &str) -> Option<PauseCounter> {
    let (collector, name, qualifier, generation, full) = match name {
        "G1 young collection pauses" => {
            (Collector::G1, "Pause Young", None, Generation::Young, false)
        }
        "G1 full collection pauses" => (Collector::G1, "Pause Full", None, Generation::Full, true),
        // Remark and Cleanup: the bean does not tell them apart either.
        "G1 concurrent cycle pauses" => {
            (Collector::G1, "Pause Remark", None, Generation::Old, false)
        }
        "Parallel young collection pauses" => (
            Collector::Parallel,
            "Pause Young",
            None,
            Generation::Young,
            false,
        ),
        "Parallel full collection pauses" => (
            Collector::Parallel,
            "Pause Full",
            None,
            Generation::Full,
            true,
        ),
        "Serial young collection pauses" => (
            Collector::Serial,
            "Pause Young",
            None,
            Generation::Young,
            false,
        ),
        "Serial full collection pauses" => (
            Collector::Serial,
            "Pause Full",
            None,
            Generation::Full,
            true,
        ),
        "Z concurrent cycle pauses" => (Collector::Z, "Pause", None, Generation::Old, false),
        "ZGC minor collection pauses" => (
            Collector::ZGenerational,
            "Pause",
            Some("Minor"),
            Generation::Young,
            false,
        ),
        "ZGC major collection pauses" => (
            Collector::ZGenerational,
            "Pause",
            Some("Major"),
            Generation::Old,
            false,
        ),
        _ => return None,
    };
    Some(PauseCounter {
        collector,
        name,
        qualifier,
        generation,
        full,
    })
}

/// Micrometer's `gc` label (the `GarbageCollectorMXBean`'s name, where the
/// JDK has that bean) of the pauses HotSpot's collector counter `name`
/// counts, if it counts pauses (Shenandoah's does not).
pub fn gc_label_of_counter(name: &str, jdk_major: Option<u32>) -> Option<String> {
    let counter = pause_counter(name)?;
    let pause = counter_pause(&counter, "", 0.0, 0.0, 0.0, |_| LogTime::default());
    Some(micrometer_labels(&pause, jdk_major).0.to_string())
}

/// The collector a JVM runs, from `sun.gc.policy.name` and its collectors' names.
pub fn collector_of(policy: &str, collector_names: &[&str]) -> Collector {
    match policy {
        "GarbageFirst" => Collector::G1,
        "ParScav:MSC" => Collector::Parallel,
        "Copy:MSC" => Collector::Serial,
        _ if collector_names.iter().any(|n| n.starts_with("Shenandoah")) => Collector::Shenandoah,
        _ if collector_names.contains(&"Z concurrent cycle pauses") => Collector::Z,
        _ if collector_names.iter().any(|n| n.starts_with("ZGC ")) => Collector::ZGenerational,
        _ => Collector::Unknown,
    }
}

/// One collector's pause counters at one sample, in seconds since the JVM
/// started (HotSpot's elapsed counter).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PauseCounters {
    pub invocations: u64,
    pub seconds: f64,
    pub last_entry: f64,
    pub last_exit: f64,
}

impl PauseCounters {
    /// A pause is running: the invocation is counted at its start, its time
    /// and exit at its end.
    pub fn mid_pause(&self) -> bool {
        self.last_entry > self.last_exit
    }
}

/// The pause a counter stands for, from `start` to `end` uptime seconds.
fn counter_pause(
    counter: &PauseCounter,
    cause: &str,
    start: f64,
    end: f64,
    duration: f64,
    at: impl Fn(f64) -> LogTime,
) -> Pause {
    Pause {
        collector: counter.collector,
        name: counter.name.into(),
        qualifiers: counter.qualifier.map(Name::from).into_iter().collect(),
        cause: (!cause.is_empty() && cause != "No GC").then(|| cause.into()),
        generation: Some(counter.generation),
        start: at(start),
        end: at(end),
        duration_s: duration,
        full: counter.full,
        humongous: cause == "G1 Humongous Allocation",
        explicit: cause == "System.gc()",
        ..Pause::default()
    }
}

/// What two samples of one collector's counters say happened between them.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovered {
    Nothing,
    /// One pause: its start, end and duration are exact.
    One(Box<Pause>),
    /// Several pauses: `count` and the total are exact; each carries the
    /// mean duration, so the minute's maximum is a lower bound.
    Several(Vec<Pause>),
}

/// The pauses of collector `name` between two samples. `jvm_start` places
/// HotSpot's elapsed counter on the wall clock. A sample taken mid-pause is
/// not compared: the caller keeps the previous sample for the next one.
pub fn recover_pauses(
    name: &str,
    before: &PauseCounters,
    now: &PauseCounters,
    cause: &str,
    jvm_start: DateTime<Utc>,
) -> Recovered {
    let Some(counter) = pause_counter(name) else {
        return Recovered::Nothing;
    };
    let new = now.invocations.saturating_sub(before.invocations);
    if new == 0 {
        return Recovered::Nothing;
    }
    let total = (now.seconds - before.seconds).max(0.0);
    let at = |uptime: f64| LogTime {
        uptime_s: Some(uptime),
        wall: Some(jvm_start + seconds_to_duration(uptime)),
    };
    let pause = |start: f64, end: f64, duration: f64| {
        counter_pause(&counter, cause, start, end, duration, at)
    };
    if new == 1 {
        return Recovered::One(Box::new(pause(now.last_entry, now.last_exit, total)));
    }
    let mean = total / new as f64;
    let pauses = (0..new)
        .map(|_| pause(now.last_exit - mean, now.last_exit, mean))
        .collect();
    Recovered::Several(pauses)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(invocations: u64, seconds: f64, entry: f64, exit: f64) -> PauseCounters {
        PauseCounters {
            invocations,
            seconds,
            last_entry: entry,
            last_exit: exit,
        }
    }

    #[test]
    fn one_new_invocation_is_one_exact_pause() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let before = counters(3, 0.030, 1.0, 1.010);
        let now = counters(4, 0.042, 2.0, 2.012);
        let name = "Parallel young collection pauses";
        let Recovered::One(pause) =
            recover_pauses(name, &before, &now, "Allocation Failure", start)
        else {
            panic!()
        };
        assert!((pause.duration_s - 0.012).abs() < 1e-12);
        assert_eq!(pause.end.wall, Some(start + seconds_to_duration(2.012)));
        assert_eq!(pause.cause.as_deref(), Some("Allocation Failure"));
        // Shenandoah's counter nests pauses in cycles: nothing is made of it.
        let shenandoah = recover_pauses("Shenandoah full", &before, &now, "", start);
        assert_eq!(shenandoah, Recovered::Nothing);
    }

    #[test]
    fn several_pauses_keep_their_count_and_total() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let before = counters(3, 0.030, 1.0, 1.010);
        let now = counters(6, 0.060, 2.0, 2.012);
        let Recovered::Several(pauses) = recover_pauses(
            "G1 young collection pauses",
            &before,
            &now,
            "G1 Evacuation Pause",
            start,
        ) else {
            panic!()
        };
        assert_eq!(pauses.len(), 3);
        let total: f64 = pauses.iter().map(|p| p.duration_s).sum();
        assert!((total - 0.030).abs() < 1e-12);
        assert!(!now.mid_pause() && counters(1, 0.0, 2.0, 1.0).mid_pause());
    }
}
