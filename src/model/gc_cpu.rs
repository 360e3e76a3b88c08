//! The CPU a collector burns: per kind of collector work, for a JVM (its
//! hsperfdata counters or its collector threads' schedstat) and for a Go
//! program (its gctrace lines), and the CPU beside it that its total leaves
//! out. Pauses are half of what GC costs; concurrent collectors take the
//! other half as CPU even when their pauses are tiny.

use std::collections::{BTreeMap, HashMap};

use pausewatch_parsers::CycleCpu;
use serde::Serialize;

/// Kinds of collector work (`kind` label values). Summed they are what JDK
/// 22+ calls `sun.threads.total_gc_cpu_time`, and for Go the CPU that
/// `runtime.MemStats.GCCPUFraction` counts.
pub const WORKERS: &str = "workers";
pub const CONCURRENT_MARK: &str = "concurrent_mark";
pub const CONCURRENT_REFINE: &str = "concurrent_refine";
pub const SERVICE: &str = "service";
pub const STOP_THE_WORLD: &str = "stop_the_world";
pub const ASSIST: &str = "assist";
pub const BACKGROUND: &str = "background";
/// Beside the collector: HotSpot's VM Thread runs every safepoint operation
/// (and Serial's collections), Go's idle marking uses processors nothing
/// else wanted.
pub const VM_THREAD: &str = "vm_thread";
pub const IDLE_MARK: &str = "idle_mark";

/// Where a figure came from (`source` label of `pausewatch_gc_cpu_info`).
pub const HSPERFDATA: &str = "hsperfdata";
pub const SCHEDSTAT: &str = "schedstat";
pub const GCTRACE: &str = "gctrace";

/// Why a JVM has no collector CPU (`reason`).
/// Serial collects on the VM Thread, which runs every other safepoint
/// operation too: its CPU is exported beside, not as the collector's.
pub const SERIAL_ON_VM_THREAD: &str = "serial_collects_on_vm_thread";
/// No thread of the process has a collector's name (an unknown collector).
pub const NO_COLLECTOR_THREADS: &str = "no_collector_threads";
/// Its threads cannot be listed or read (another user's process under
/// `hidepid`, or a restricted /proc).
pub const TASKS_DENIED: &str = "tasks_denied";

/// A stream's collector CPU, cumulative since its runtime started (a JVM)
/// or since the agent read its first gctrace line (Go).
/// `Serialize` for `analyze`'s output; the checkpoint has its own record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GcCpu {
    /// Seconds per kind of collector work.
    pub kinds: BTreeMap<String, f64>,
    /// Seconds per kind of work beside the collector's, not in its total.
    pub beside: BTreeMap<String, f64>,
    /// [`HSPERFDATA`], [`SCHEDSTAT`] or [`GCTRACE`]; empty when unknown.
    pub source: String,
    /// Why there is no figure, when there is none.
    pub unavailable: Option<String>,
}

impl GcCpu {
    /// The collector's CPU in seconds: every kind, nothing beside.
    pub fn total(&self) -> f64 {
        self.kinds.values().sum()
    }

    /// Adds one Go cycle's CPU.
    pub fn add_cycle(&mut self, cpu: &CycleCpu) {
        self.source = GCTRACE.to_string();
        for (kind, seconds) in [
            (STOP_THE_WORLD, cpu.stop_the_world_s),
            (ASSIST, cpu.assist_s),
            (BACKGROUND, cpu.background_s),
        ] {
            *self.kinds.entry(kind.to_string()).or_default() += seconds;
        }
        *self.beside.entry(IDLE_MARK.to_string()).or_default() += cpu.idle_s;
    }
}

/// The collector CPU of one Go cycle, as `GCCPUFraction` counts it.
pub fn cycle_gc_seconds(cpu: &CycleCpu) -> f64 {
    cpu.stop_the_world_s + cpu.assist_s + cpu.background_s
}

/// A thread's kind of work, and whether it is the collector's.
pub type ThreadKind = (&'static str, bool);

/// What a HotSpot thread does, by its name (`/proc/PID/task/TID/comm`, cut
/// at 15 bytes), as checked on JDK 17 and 25: `Some((kind, true))` for
/// collector work, `Some((VM_THREAD, false))` for the VM Thread.
pub fn hotspot_thread_kind(comm: &str) -> Option<ThreadKind> {
    let kind = match comm {
        "VM Thread" => return Some((VM_THREAD, false)),
        // G1 and Parallel's parallel workers; ZGC's (`ZWorker#N`, JDK 21+
        // `ZWorkerYoung#N`, `ZWorkerOld#N`) and its safepoint-time
        // `RuntimeWorker#N`; Shenandoah's `Shenandoah GC Threads#N`.
        _ if comm.starts_with("GC Thread#")
            || comm.starts_with("ZWorker")
            || comm.starts_with("RuntimeWorker#")
            || comm.starts_with("Shenandoah GC") =>
        {
            WORKERS
        }
        _ if comm == "G1 Main Marker" || comm.starts_with("G1 Conc#") => CONCURRENT_MARK,
        _ if comm.starts_with("G1 Refine") => CONCURRENT_REFINE,
        // G1's service thread; ZGC's driver(s), director, statistics,
        // unmapper and uncommitter; Shenandoah's control and uncommit threads.
        "G1 Service" | "ZDirector" | "ZStat" | "ZUnmapper" => SERVICE,
        _ if comm.starts_with("ZDriver")
            || comm.starts_with("ZUncommitter")
            || comm.starts_with("Shenandoah") =>
        {
            SERVICE
        }
        _ => return None,
    };
    Some((kind, true))
}

/// One reading of a thread: its identity (tid and start), kind, and
/// `sum_exec_runtime` in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadReading {
    pub tid: i32,
    pub start_ticks: u64,
    pub kind: &'static str,
    pub collector: bool,
    pub runtime_ns: u64,
}

/// Per-kind totals of threads that come and go: a thread's CPU stays in its
/// kind's total after it exits (GC worker threads can be dynamic), and a
/// total never goes back.
#[derive(Debug, Clone, Default)]
pub struct ThreadTotals {
    /// The last reading of each live thread, by tid and start.
    last: HashMap<(i32, u64), u64>,
    /// Nanoseconds per kind, with whether the kind is the collector's.
    totals: BTreeMap<(&'static str, bool), u64>,
}

impl ThreadTotals {
    /// Takes one sample of every thread of interest: the growth of each
    /// thread seen before, the whole runtime of a new one. Threads missing
    /// from `readings` have exited; their CPU stays counted.
    pub fn update(&mut self, readings: &[ThreadReading]) {
        let mut live = HashMap::with_capacity(readings.len());
        for reading in readings {
            let id = (reading.tid, reading.start_ticks);
            let before = self.last.get(&id).copied().unwrap_or(0);
            let grown = reading.runtime_ns.saturating_sub(before);
            *self
                .totals
                .entry((reading.kind, reading.collector))
                .or_default() += grown;
            live.insert(id, reading.runtime_ns.max(before));
        }
        self.last = live;
    }

    /// The totals as a [`GcCpu`] read from schedstat.
    pub fn gc_cpu(&self) -> GcCpu {
        let mut cpu = GcCpu {
            source: SCHEDSTAT.to_string(),
            ..GcCpu::default()
        };
        for (&(kind, collector), &ns) in &self.totals {
            let into = if collector {
                &mut cpu.kinds
            } else {
                &mut cpu.beside
            };
            into.insert(kind.to_string(), ns as f64 / 1e9);
        }
        cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(tid: i32, comm: &str, runtime_ns: u64) -> ThreadReading {
        let (kind, collector) = hotspot_thread_kind(comm).unwrap();
        ThreadReading {
            tid,
            start_ticks: 7,
            kind,
            collector,
            runtime_ns,
        }
    }

    #[test]
    fn exited_threads_stay_counted_and_totals_never_go_back() {
        let mut totals = ThreadTotals::default();
        totals.update(&[
            reading(10, "GC Thread#0", 500),
            reading(11, "GC Thread#1", 300),
            reading(12, "VM Thread", 50),
        ]);
        // Thread 11 exited; a new worker appeared; tid 10 grew.
        totals.update(&[
            reading(10, "GC Thread#0", 700),
            reading(13, "GC Thread#2", 100),
            reading(12, "VM Thread", 60),
        ]);
        let cpu = totals.gc_cpu();
        assert_eq!(cpu.kinds[WORKERS], 1100e-9);
        assert_eq!(cpu.beside[VM_THREAD], 60e-9);
        // A reused tid is a new thread: its whole runtime counts.
        let reused = ThreadReading {
            start_ticks: 9,
            ..reading(11, "GC Thread#1", 40)
        };
        totals.update(&[reading(10, "GC Thread#0", 700), reused]);
        assert_eq!(totals.gc_cpu().kinds[WORKERS], 1140e-9);
    }

    #[test]
    fn thread_names_of_each_collector() {
        for (comm, kind) in [
            ("GC Thread#3", WORKERS),
            ("G1 Main Marker", CONCURRENT_MARK),
            ("G1 Conc#1", CONCURRENT_MARK),
            ("G1 Refine#0", CONCURRENT_REFINE),
            ("G1 Service", SERVICE),
            ("ZWorkerYoung#2", WORKERS),
            ("ZDriverMajor", SERVICE),
            ("Shenandoah GC T", WORKERS),
            ("Shenandoah Cont", SERVICE),
        ] {
            assert_eq!(hotspot_thread_kind(comm), Some((kind, true)), "{comm}");
        }
        assert_eq!(hotspot_thread_kind("C2 CompilerThre"), None);
        assert_eq!(hotspot_thread_kind("VM Thread"), Some((VM_THREAD, false)));
    }
}
