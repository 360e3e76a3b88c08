//! The families themselves: one entry per metric, in exposition order.

use std::sync::PoisonError;

use super::readers::{
    age_seconds, alert_deliveries, by_kind, correlations, discovered, go_pauses, info, known,
    last_complete, latency_minute, log_count, logged, measured, one, overhead, pauses,
    per_collector, per_operation, per_pool, runtime, safepoints_measured, unparsed_lines,
    unseen_wait,
};
use super::{Family, Kind, Sample, Scope, Semconv, Unit, Value};
use crate::export::gc_cpu;

/// A convention metric whose attributes all come from the family's labels.
const fn semconv(name: &'static str) -> Option<Semconv> {
    Some(Semconv {
        name,
        attributes: &[],
        unless_pools: false,
    })
}

/// A `jvm.memory.*` metric of the heap as a whole: the log gives no
/// per-pool figures, so points carry `jvm.memory.type` but no pool name.
const fn whole_heap(name: &'static str, unless_pools: bool) -> Option<Semconv> {
    Some(Semconv {
        name,
        attributes: &[("jvm.memory.type", "heap")],
        unless_pools,
    })
}

/// Every family, in exposition order.
pub static CATALOG: &[Family] = &[
    Family {
        name: "jvm_gc_pause_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Stop-the-world GC pauses read from the GC log, labelled as Micrometer labels jvm.gc.pause.",
        labels: &["gc", "action", "cause"],
        semconv: semconv("jvm.gc.duration"),
        scopes: &[Scope::Stream(|s, now| measured(s, |s| pauses(s, now)))],
    },
    Family {
        name: "go_gc_pause_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Stop-the-world pauses of a Go program's GC cycles (sweep plus mark termination, as runtime/metrics /sched/pauses/total/gc:seconds), read from its gctrace output; cause is forced for runtime.GC().",
        labels: &["cause"],
        semconv: None,
        scopes: &[Scope::Stream(go_pauses)],
    },
    Family {
        name: "pausewatch_gc_pause_max_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Exact longest GC pause that ended in the last complete wall-clock minute, 0 if none (not Micrometer's decaying max).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| measured(s, |s| {
            last_complete(s, now, |m| Value::Float(m.map_or(0.0, |m| m.pause_max_seconds)))
        }))],
    },
    Family {
        name: "pausewatch_gc_pause_max_lower_bound",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "1 when pausewatch_gc_pause_max_seconds of the same minute is a lower bound (hsperfdata: several pauses between two samples, only their total known), else 0.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| measured(s, |s| {
            last_complete(s, now, |m| Value::Int(m.is_some_and(|m| m.pause_max_lower_bound).into()))
        }))],
    },
    Family {
        name: "pausewatch_gc_pauses_last_minute",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "GC pauses that ended in the last complete wall-clock minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| measured(s, |s| {
            last_complete(s, now, |m| Value::Int(m.map_or(0, |m| m.pause_count)))
        }))],
    },
    Family {
        name: "pausewatch_gc_overhead_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Fraction of wall-clock time spent in GC pauses over the last 1 or 5 complete minutes.",
        labels: &["window"],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| measured(s, |s| overhead(s, now)))],
    },
    Family {
        name: "pausewatch_safepoints_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Safepoints (every stop of the application threads, GC or not), by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_operation(s, |op| Value::Int(op.count)))],
    },
    Family {
        name: "pausewatch_safepoint_stopped_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time the application threads were stopped at safepoints, by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            per_operation(s, |op| Value::Float(op.stopped_seconds))
        })],
    },
    Family {
        name: "pausewatch_safepoint_time_to_safepoint_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time spent bringing the application threads to safepoints, by VM operation.",
        labels: &["operation"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            per_operation(s, |op| Value::Float(op.time_to_safepoint_seconds))
        })],
    },
    Family {
        name: "pausewatch_safepoint_time_to_safepoint_max_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Longest time to safepoint in the last complete wall-clock minute, 0 if none.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| {
            safepoints_measured(s, |s| {
                last_complete(s, now, |m| {
                    Value::Float(m.map_or(0.0, |m| m.time_to_safepoint_max_seconds))
                })
            })
        })],
    },
    Family {
        name: "pausewatch_allocation_stalls_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Allocation stalls: application threads blocked until the collector freed memory (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.allocation_stalls)))],
    },
    Family {
        name: "pausewatch_relocation_stalls_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Relocation stalls: application threads blocked on object relocation (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.relocation_stalls)))],
    },
    Family {
        name: "pausewatch_gc_concurrent_cycles_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Concurrent GC cycles completed (G1 mark cycles, ZGC and Shenandoah cycles).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.concurrent_cycles)))],
    },
    Family {
        name: "pausewatch_gc_full_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Full GCs.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.full_gcs)))],
    },
    Family {
        name: "pausewatch_gc_evacuation_failures_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses with an evacuation failure (G1 to-space exhausted).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.evacuation_failures)))],
    },
    Family {
        name: "pausewatch_gc_degenerated_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Degenerated GCs (Shenandoah).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.degenerated_gcs)))],
    },
    Family {
        name: "pausewatch_gc_humongous_allocations_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses caused by a humongous allocation (G1).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Int(c.humongous_allocations)))],
    },
    Family {
        name: "pausewatch_gc_explicit_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "GC pauses requested explicitly with System.gc().",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.explicit_gcs)))],
    },
    Family {
        name: "pausewatch_jvm_restarts_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "JVM restarts seen in the log stream (a new run started writing it).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| one(Value::Int(s.jvm.counters.jvm_restarts)))],
    },
    Family {
        name: "pausewatch_jvm_start_time_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Start of the JVM run writing the log, Unix time (from the log's uptime, else its first event): the Prometheus rules leave each run's warm-up out of PauseRegression baselines.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let start = s.jvm.run_starts.last();
            known(start.map(|t| Value::Float(t.timestamp_millis() as f64 / 1000.0)))
        })],
    },
    Family {
        name: "jvm_gc_memory_promoted_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes promoted into the old generation by young collections.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.jvm.counters.promoted_bytes))))],
    },
    Family {
        name: "jvm_gc_memory_allocated_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes allocated: heap growth from the end of one collection to the start of the next.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.jvm.counters.allocated_bytes))))],
    },
    Family {
        name: "pausewatch_allocation_stall_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time application threads spent in allocation stalls (ZGC).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Float(c.allocation_stall_seconds)))],
    },
    Family {
        name: "pausewatch_gc_concurrent_cycle_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Wall-clock duration of concurrent GC cycles; not pause time.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Float(c.concurrent_cycle_seconds)))],
    },
    Family {
        name: "pausewatch_gc_concurrent_phase_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Duration of concurrent GC phases, which run alongside the application; not pause time.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| log_count(s, |c| Value::Float(c.concurrent_phase_seconds)))],
    },
    Family {
        name: "pausewatch_jvm_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "The JVM writing the log: collector and JDK version; the value is always 1.",
        labels: &["collector", "jdk_version"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let version = s.jvm.jdk_version.as_deref().unwrap_or("unknown");
            info(vec![s.jvm.collector.as_str().into(), version.into()])
        })],
    },
    Family {
        name: "pausewatch_jvm_discovered",
        kind: Kind::Info,
        unit: Unit::None,
        help: "A JVM discovery found; runtime_stats says whether its hsperfdata is read, reason why not; pause_source which one input its pauses come from (gc_log, ebpf or hsperfdata; none when nothing measures them, and its pause figures are absent), ebpf_reason why eBPF does not measure it, safepoint_source which one input its safepoints come from (gc_log with the safepoint tag, else ebpf, also beside a GC log, else none), latency_source kernel when its request latency comes from the kernel (else none), latency_reason why not. The value is always 1.",
        labels: &["user", "runtime_stats", "reason", "pause_source", "ebpf_reason", "safepoint_source", "latency_source", "latency_reason"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| discovered(s))],
    },
    Family {
        name: "pausewatch_jvm_gc_collections_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Collections by HotSpot collector counter (sun.gc.collector.N.invocations): the JVM's own count since it started.",
        labels: &["collector"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_collector(s, |c| Value::Int(c.invocations)))],
    },
    Family {
        name: "pausewatch_jvm_gc_collection_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time in collections by HotSpot collector counter (sun.gc.collector.N.time).",
        labels: &["collector"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| per_collector(s, |c| Value::Float(c.seconds)))],
    },
    Family {
        name: "pausewatch_gc_pauses_unresolved_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Pauses recovered from hsperfdata several between two samples: counted and timed in total, each given the mean duration.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.unresolved_pauses))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_probe_mismatch",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "For a JVM whose pauses eBPF measures: safepoints the probes recorded minus the JVM's sun.rt.safepoints counter, less that difference at the first comparison; below 0, records were lost (pausewatch_errors_total{kind=\"ebpf_events_dropped\"}).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            runtime(s, |r| known(r.safepoint_probe_mismatch.map(Value::Float)))
        })],
    },
    Family {
        name: "pausewatch_gc_log_probe_mismatch",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "For a JVM whose GC log supplies the pauses and whose libjvm.so the probes are attached to: pauses counted from the log minus those the probes recorded, less that difference at the first comparison; non-zero for long, the log misses pauses (or has lines the agent does not read).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let discovered = s.discovered.as_ref();
            known(discovered.and_then(|d| d.log_probe_mismatch).map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_ebpf_records_unclaimed_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "eBPF safepoint records of processes the agent does not measure, read and dropped; a JVM the configuration leaves out sends none.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| {
            known(agent.ebpf_records_unclaimed.map(Value::Int))
        })],
    },
    Family {
        name: "pausewatch_gc_log_counter_mismatch",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "For a JVM whose GC log is followed or whose pauses eBPF measures: pauses counted from the log or the probes minus the JVM's own hsperfdata counter, per gc; non-zero for long, the agent misses part of the log.",
        labels: &["gc"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            runtime(s, |r| {
                let mismatch = r.log_counter_mismatch.iter();
                mismatch
                    .map(|(gc, difference)| Sample {
                        minute: None,
                        labels: vec![gc.as_str().into()],
                        value: Value::Float(*difference),
                    })
                    .collect()
            })
        })],
    },
    Family {
        name: "pausewatch_jvm_safepoints_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Safepoints since the JVM started (sun.rt.safepoints).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.safepoints))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time at safepoints since the JVM started (sun.rt.safepointTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.safepoint_seconds))))],
    },
    Family {
        name: "pausewatch_jvm_safepoint_sync_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "Time to reach safepoints since the JVM started (sun.rt.safepointSyncTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.safepoint_sync_seconds))))],
    },
    Family {
        name: "jvm_memory_used_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Memory used per pool, under Micrometer's names (id is the MXBean's pool name).",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.used"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| p.used))],
    },
    Family {
        name: "jvm_memory_committed_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Memory committed per pool.",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.committed"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| Some(p.committed)))],
    },
    Family {
        name: "jvm_memory_max_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum memory per pool, where the pool has one.",
        labels: &["area", "id"],
        semconv: semconv("jvm.memory.limit"),
        scopes: &[Scope::Stream(|s, _| per_pool(s, |p| p.max))],
    },
    Family {
        name: "pausewatch_jvm_gc_cause_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "The collection running now (cause, No GC between collections) and the last one's cause. The value is always 1.",
        labels: &["cause", "last_cause"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| info(vec![r.gc_cause.as_str().into(), r.gc_last_cause.as_str().into()])))],
    },
    Family {
        name: "jvm_classes_loaded_classes",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Classes loaded now (loaded minus unloaded, as Micrometer counts).",
        labels: &[],
        semconv: semconv("jvm.class.count"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.classes_loaded.saturating_sub(r.classes_unloaded)))))],
    },
    Family {
        name: "jvm_classes_unloaded_classes_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Classes unloaded since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.classes_unloaded))))],
    },
    Family {
        name: "pausewatch_jvm_compilation_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "JIT compilation time since the JVM started (java.ci.totalTime).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.jit_seconds))))],
    },
    Family {
        name: "jvm_threads_live_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Live threads.",
        labels: &[],
        semconv: semconv("jvm.thread.count"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_live))))],
    },
    Family {
        name: "jvm_threads_daemon_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Live daemon threads.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_daemon))))],
    },
    Family {
        name: "jvm_threads_peak_threads",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Most live threads since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Int(r.threads_peak))))],
    },
    Family {
        name: "process_uptime_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Time since the JVM started.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| one(Value::Float(r.uptime_seconds))))],
    },
    Family {
        name: "process_cpu_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "CPU time the JVM's process used, user and system, since it started (/proc/PID/stat), as the Prometheus Java client names it.",
        labels: &[],
        semconv: semconv("jvm.cpu.time"),
        scopes: &[Scope::Stream(|s, _| runtime(s, |r| known(r.cpu_seconds.map(Value::Float))))],
    },
    // The collector's CPU (src/export/gc_cpu.rs reads it; model/gc_cpu.rs says what each kind is).
    Family {
        name: "pausewatch_gc_cpu_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "CPU the collector used, by kind of work (JVM: workers, concurrent_mark, concurrent_refine, service; Go: stop_the_world, assist, background). Summed: JDK 22+'s sun.threads.total_gc_cpu_time, or the CPU Go's GCCPUFraction counts.",
        labels: &["kind"],
        semconv: None,
        scopes: &[Scope::Stream(gc_cpu::collector)],
    },
    Family {
        name: "pausewatch_gc_cpu_beside_seconds_total",
        kind: Kind::Counter,
        unit: Unit::Seconds,
        help: "CPU beside the collector's, not in its total: the JVM's VM Thread (every safepoint operation, and Serial's collections), Go's marking on idle processors (idle_mark).",
        labels: &["kind"],
        semconv: None,
        scopes: &[Scope::Stream(gc_cpu::beside)],
    },
    Family {
        name: "pausewatch_gc_cpu_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "Where the collector CPU comes from (from: hsperfdata, schedstat, gctrace), or why there is none (reason). The value is always 1.",
        labels: &["from", "reason"],
        semconv: None,
        scopes: &[Scope::Stream(gc_cpu::info)],
    },
    Family {
        name: "pausewatch_gc_cpu_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "The collector's CPU over the last complete minute, as a share of the process's CPU (of=process; none under 0.6 s of it in the minute) and of the CPUs available to it (of=available).",
        labels: &["of"],
        semconv: None,
        scopes: &[Scope::Stream(gc_cpu::ratio)],
    },
    Family {
        name: "pausewatch_heap_after_gc_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap occupancy after the latest collection.",
        labels: &[],
        semconv: whole_heap("jvm.memory.used_after_last_gc", false),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.after_gc_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_heap_committed_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap capacity reported by the latest collection.",
        labels: &[],
        semconv: whole_heap("jvm.memory.committed", true),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.committed_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_heap_max_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum heap size from the log preamble.",
        labels: &[],
        semconv: whole_heap("jvm.memory.limit", true),
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.max_bytes.map(Value::Int)))],
    },
    Family {
        name: "jvm_gc_live_data_size_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Heap occupancy after the latest full, mixed or major collection: the live data set.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.live_data_bytes.map(Value::Int)))],
    },
    Family {
        name: "jvm_gc_max_data_size_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Maximum heap size from the log preamble.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| known(s.jvm.heap.max_bytes.map(Value::Int)))],
    },
    Family {
        name: "pausewatch_log_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines read from the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.parse.lines))))],
    },
    Family {
        name: "pausewatch_log_bytes_total",
        kind: Kind::Counter,
        unit: Unit::Bytes,
        help: "Bytes read from the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.parse.bytes))))],
    },
    Family {
        name: "pausewatch_log_unparsed_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines of the log stream that were not understood, by reason.",
        labels: &["kind"],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| logged(s, |s| unparsed_lines(s, now)))],
    },
    Family {
        name: "pausewatch_label_values_overflow_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Events whose label value was past max_label_values distinct values of its family, counted under \"other\".",
        labels: &["label"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            ["cause", "operation"]
                .into_iter()
                .map(|label| Sample {
                    labels: vec![label.into()],
                    value: Value::Int(s.jvm.label_overflow.get(label).copied().unwrap_or(0)),
                    minute: None,
                })
                .collect()
        })],
    },
    Family {
        name: "pausewatch_log_events_without_wall_clock_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Events that could not be placed in wall-clock time (uptime-only log without a JVM start): not in minutes, alerts or correlation.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.jvm.minutes.unplaced_events))))],
    },
    Family {
        name: "pausewatch_log_files_followed",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Files of the log stream currently followed (live file and rotated ones).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.files_followed))))],
    },
    Family {
        name: "pausewatch_log_read_lag_bytes",
        kind: Kind::Gauge,
        unit: Unit::Bytes,
        help: "Bytes written to the live log file that the agent has not read yet.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(s.read_lag_bytes))))],
    },
    Family {
        name: "pausewatch_log_last_event_age_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "Time since the agent last processed an event of the log stream.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, now| logged(s, |s| {
            let age = s.last_event_processed_at.map(|at| age_seconds(at, now));
            known(age.map(Value::Float))
        }))],
    },
    Family {
        name: "pausewatch_log_readable",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Whether the live log file could be read at the last attempt (1) or not (0).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| logged(s, |s| one(Value::Int(u64::from(s.readable)))))],
    },
    Family {
        name: "pausewatch_errors_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Agent errors by kind; errors of one log stream carry its labels.",
        labels: &["kind"],
        semconv: None,
        scopes: &[
            Scope::Stream(|s, _| by_kind(&s.errors)),
            Scope::AccessLog(|a| by_kind(&a.errors)),
            Scope::Agent(|agent, _| by_kind(&agent.errors)),
        ],
    },
    Family {
        name: "pausewatch_request_duration_seconds",
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help: "Request durations read from the service's access log (buckets as jvm_gc_pause_seconds).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Histogram(&l.histogram)))
        })],
    },
    Family {
        name: "pausewatch_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests read from the access log or counted by the latency histogram.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Int(l.counters.requests)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests slower than the SLO (or their minute's p99.9 without one), in attributed minutes.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Int(l.counters.slow_requests)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_stop_affected_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Slow requests of which GC pauses and safepoints covered at least the configured share.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let latency = s.latency.as_ref();
            known(latency.map(|l| Value::Int(l.counters.slow_requests_stop_affected)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_queued_behind_stops_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Slow requests that arrived during a stop, or while requests that arrived during it still waited: the backlog a stop leaves, in attributed minutes.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let latency = s.latency.as_ref();
            known(latency.map(|l| Value::Int(l.counters.slow_requests_queued_behind_stops)))
        })],
    },
    Family {
        name: "pausewatch_slow_requests_gc_driven_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Slow requests that either rule puts on the stops (stop-affected, or queued behind a stop): the share GcDrivenTail takes, in attributed minutes.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            known(s.latency.as_ref().map(|l| Value::Int(l.counters.slow_requests_gc_driven)))
        })],
    },
    Family {
        name: "pausewatch_request_latency_p99_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99 request latency of the last attributed minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| Some(Value::Float(m.latency.p99_seconds)))
        })],
    },
    Family {
        name: "pausewatch_request_latency_p999_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99.9 request latency of the last attributed minute.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| Some(Value::Float(m.latency.p999_seconds)))
        })],
    },
    Family {
        name: "pausewatch_request_wait_unseen_by_server_p999_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "The kernel's p99.9 request latency less the access log's, last attributed minute: the time requests waited before the server read them (where both measure the JVM; negative when the access log's clock is ahead).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(unseen_wait)],
    },
    Family {
        name: "pausewatch_request_latency_p999_without_stop_affected_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99.9 of the last attributed minute recomputed without stop-affected requests: the tail without pauses.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| {
                let attribution = m.attribution?;
                Some(Value::Float(attribution.p999_without_stop_affected_seconds))
            })
        })],
    },
    Family {
        name: "pausewatch_slow_time_explained_by_stops_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Share of the slow requests' time over the SLO that overlapping stops explain, last attributed minute (absent when no request was slow).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            latency_minute(s, |m| m.attribution?.explained_share.map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_pause_latency_correlation",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "Correlation of each minute's max pause with its p99 or p99.9 over the sliding window (absent below the minimum of minutes).",
        labels: &["method", "quantile"],
        semconv: None,
        scopes: &[Scope::Stream(correlations)],
    },
    Family {
        name: "pausewatch_port_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests the kernel measured, by the JVM's listening port.",
        labels: &["port"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let ports = s.latency.iter().flat_map(|l| &l.counters.requests_by_port);
            (ports.map(|(port, count)| Sample {
                labels: vec![port.to_string().into()],
                value: Value::Int(*count),
                minute: None,
            }))
            .collect()
        })],
    },
    Family {
        name: "pausewatch_port_request_latency_p999_seconds",
        kind: Kind::Gauge,
        unit: Unit::Seconds,
        help: "p99.9 request latency of the last attributed minute, by the JVM's listening port (the kernel's figures).",
        labels: &["port"],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let Some(minute) = s.latency.as_ref().and_then(|l| l.current_minute()) else {
                return Vec::new();
            };
            (minute.ports.iter().map(|(port, latency)| Sample {
                labels: vec![port.to_string().into()],
                value: Value::Float(latency.p999_seconds),
                minute: Some(minute.start),
            }))
            .collect()
        })],
    },
    Family {
        name: "pausewatch_multiplexed_connections_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Server connections left out of the kernel's request latency: they carried more than one request at a time (HTTP/2, gRPC, pipelining).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Stream(|s, _| {
            let measured = s.discovered.as_ref().is_some_and(|d| d.requests == Some(Ok(())));
            known(measured.then_some(Value::Int(s.multiplexed_connections)))
        })],
    },
    Family {
        name: "pausewatch_access_log_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Lines read from the access log.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(a.stats.lines)))],
    },
    Family {
        name: "pausewatch_access_log_malformed_lines_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Access log lines that did not parse in the configured format.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| {
            one(Value::Int(a.stats.malformed + a.stats.too_long))
        })],
    },
    Family {
        name: "pausewatch_access_log_malformed_ratio",
        kind: Kind::Gauge,
        unit: Unit::Ratio,
        help: "Share of the access log's last 500 to 1,000 non-blank lines that did not parse in the configured format (absent before any line); near 1, the format is wrong.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| {
            known(a.malformed_window.ratio().map(Value::Float))
        })],
    },
    Family {
        name: "pausewatch_access_log_unattributed_requests_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Requests read while no GC stream could take them (its log not found yet).",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(a.unattributed_requests)))],
    },
    Family {
        name: "pausewatch_access_log_readable",
        kind: Kind::Gauge,
        unit: Unit::None,
        help: "1 when the access log could be read at the last attempt.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::AccessLog(|a| one(Value::Int(u64::from(a.readable))))],
    },
    Family {
        name: "pausewatch_alerts",
        kind: Kind::Info,
        unit: Unit::None,
        help: "Alerts of the agent's own rules: 1 per alert in its state (pending, firing, or resolved at the last evaluation).",
        labels: &["state"],
        semconv: None,
        scopes: &[Scope::Alert(|alert| info(vec![alert.state.as_str().into()]))],
    },
    Family {
        name: "pausewatch_alert_deliveries_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Alert deliveries to Alertmanager and the webhook, by result (failed attempts are retried with backoff).",
        labels: &["sink", "result"],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| alert_deliveries(agent))],
    },
    Family {
        name: "pausewatch_otlp_exports_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "OTLP export requests by signal (metrics, logs) and result: success, failure (retried with backoff; nothing is lost) or rejected (the receiver refused some items).",
        labels: &["signal", "result"],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| {
            let otlp = agent.otlp.lock().unwrap_or_else(PoisonError::into_inner);
            (otlp.exports.iter())
                .map(|((signal, result), count)| Sample {
                    labels: vec![(*signal).into(), (*result).into()],
                    value: Value::Int(*count),
                    minute: None,
                })
                .collect()
        })],
    },
    Family {
        name: "pausewatch_otlp_pause_records_dropped_total",
        kind: Kind::Counter,
        unit: Unit::None,
        help: "Pause log records dropped from a JVM's bounded queue (the oldest first) while the OTLP receiver did not take them.",
        labels: &[],
        semconv: None,
        scopes: &[Scope::Agent(|agent, _| {
            let otlp = agent.otlp.lock().unwrap_or_else(PoisonError::into_inner);
            let on = otlp.exports.keys().any(|(signal, _)| *signal == "logs");
            known(on.then_some(Value::Int(otlp.pause_records_dropped)))
        })],
    },
    Family {
        name: "pausewatch_build_info",
        kind: Kind::Info,
        unit: Unit::None,
        help: "pausewatch build; the value is always 1.",
        labels: &["version"],
        semconv: None,
        scopes: &[Scope::Agent(|_, version| info(vec![version.into()]))],
    },
];
