//! Typed events produced from a GC log. Durations are `f64` seconds (the unit
//! Prometheus and OpenTelemetry expect); sizes are bytes.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// The text of a name, cause or qualifier in an event: HotSpot's fit in 24
/// bytes, which this keeps inline where a `String` would allocate. A G1
/// pause carried about ten such allocations, each freed again once the
/// event was counted: a fifth of `analyze`'s time on a log dense in events.
pub type Name = compact_str::CompactString;

/// When something happened, as far as the log says. Either part may be missing:
/// a log written with `uptime` only has no wall-clock time until it is anchored,
/// and one written with `-Xlog:...:none` has neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LogTime {
    /// Seconds since the JVM started.
    pub uptime_s: Option<f64>,
    /// Wall-clock time in UTC.
    pub wall: Option<DateTime<Utc>>,
}

impl LogTime {
    /// The same instant moved `seconds` earlier, on both clocks.
    pub fn earlier_by(&self, seconds: f64) -> LogTime {
        LogTime {
            uptime_s: self.uptime_s.map(|u| u - seconds),
            wall: self
                .wall
                .and_then(|w| w.checked_sub_signed(seconds_to_duration(seconds))),
        }
    }

    /// The same instant moved `seconds` later: the end of a JDK 8 pause,
    /// whose line is stamped when it starts.
    pub fn later_by(&self, seconds: f64) -> LogTime {
        self.earlier_by(-seconds)
    }
}

/// Converts seconds to a chrono duration with nanosecond precision.
pub fn seconds_to_duration(seconds: f64) -> Duration {
    Duration::nanoseconds((seconds * 1e9).round() as i64)
}

/// The HotSpot collector that wrote the log.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Collector {
    G1,
    Parallel,
    Serial,
    Cms,
    Shenandoah,
    /// Single-generation ZGC (JDK 11 to 23).
    Z,
    /// Generational ZGC (JDK 21 and later).
    ZGenerational,
    /// The Go runtime's collector (`GODEBUG=gctrace=1` output), not a JVM.
    Go,
    /// Not yet known: a rotated file without the `Using ...` preamble and no
    /// collector-specific line seen so far.
    #[default]
    Unknown,
}

impl Collector {
    pub fn as_str(&self) -> &'static str {
        match self {
            Collector::G1 => "g1",
            Collector::Parallel => "parallel",
            Collector::Serial => "serial",
            Collector::Cms => "cms",
            Collector::Shenandoah => "shenandoah",
            Collector::Z => "z",
            Collector::ZGenerational => "z_generational",
            Collector::Go => "go",
            Collector::Unknown => "unknown",
        }
    }
}

/// Which part of the heap a pause collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Generation {
    Young,
    /// G1 mixed collection: young plus some old regions.
    Mixed,
    Old,
    /// Generational Shenandoah's global cycle.
    Global,
    /// A full, stop-the-world collection of the whole heap.
    Full,
}

/// Heap occupancy before and after a collection, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeapTransition {
    pub before_bytes: u64,
    pub after_bytes: u64,
    /// Committed heap size, when the line gives it (ZGC prints percentages instead).
    pub capacity_bytes: Option<u64>,
}

/// One memory pool's change across a pause, from `gc,heap` lines such as
/// `PSYoungGen: 33275K->5090K(38400K)` or G1's `Old regions: 7->13`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolTransition {
    pub name: Name,
    pub before_bytes: u64,
    pub after_bytes: u64,
    pub capacity_bytes: Option<u64>,
}

/// `User=… Sys=… Real=…` of a pause.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user_s: f64,
    pub sys_s: f64,
    pub real_s: f64,
}

/// A stop-the-world GC pause, counted once, from the line that carries its duration.
/// `Default` is a pause of nothing known: builders name what their line gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    pub gc_id: Option<u64>,
    pub collector: Collector,
    /// The pause name without qualifiers: `Pause Young`, `Pause Remark`, `Pause Mark Start`, ...
    pub name: Name,
    /// Parenthesised qualifiers that are not the cause: `Normal`, `Mixed`,
    /// `unload classes`, `Outside of Cycle`; for generational ZGC `Minor` or `Major`.
    pub qualifiers: Vec<Name>,
    /// The GC cause as HotSpot names it (`G1 Evacuation Pause`, `System.gc()`, ...).
    pub cause: Option<Name>,
    pub generation: Option<Generation>,
    pub start: LogTime,
    pub end: LogTime,
    pub duration_s: f64,
    pub heap: Option<HeapTransition>,
    pub pools: Vec<PoolTransition>,
    pub cpu: Option<CpuTimes>,
    pub full: bool,
    /// G1 to-space exhausted / evacuation failure.
    pub evacuation_failure: bool,
    /// Shenandoah degenerated GC.
    pub degenerated: bool,
    /// Caused by a humongous allocation.
    pub humongous: bool,
    /// Caused by an explicit `System.gc()`.
    pub explicit: bool,
}

/// A safepoint: every stop of the application threads, GC or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Safepoint {
    /// VM operation (`G1CollectForAllocation`, `Cleanup`, ...); absent in the
    /// JDK 9-12 format when the `Entering safepoint region` line was not seen.
    pub operation: Option<Name>,
    pub start: LogTime,
    pub end: LogTime,
    /// Time to reach the safepoint (all threads stopped).
    pub reaching_s: Option<f64>,
    pub cleanup_s: Option<f64>,
    pub at_safepoint_s: Option<f64>,
    pub leaving_s: Option<f64>,
    /// Total time the application was stopped.
    pub total_s: f64,
}

/// A concurrent GC phase: work done while the application runs, not a pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentPhase {
    pub gc_id: Option<u64>,
    pub collector: Collector,
    pub name: Name,
    pub generation: Option<Generation>,
    pub end: LogTime,
    pub duration_s: f64,
}

/// A whole collection cycle: G1's concurrent mark cycle, a ZGC cycle, a
/// generational ZGC minor/major collection. Its duration is not a pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cycle {
    pub gc_id: Option<u64>,
    pub collector: Collector,
    /// `Concurrent Mark Cycle`, `Concurrent Undo Cycle`, `Garbage Collection`,
    /// `Minor Collection`, `Major Collection`, ...
    pub name: Name,
    pub cause: Option<Name>,
    pub end: LogTime,
    pub duration_s: Option<f64>,
    pub heap: Option<HeapTransition>,
    /// The CPU the cycle used, where the log says (Go's gctrace).
    #[serde(default)]
    pub cpu: Option<CycleCpu>,
}

/// The CPU one Go cycle used, from gctrace's `A+B/C/D+E ms cpu`, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CycleCpu {
    /// Both stop-the-world phases (A + E: their clock time times GOMAXPROCS).
    pub stop_the_world_s: f64,
    /// Mark assists by allocating goroutines (B).
    pub assist_s: f64,
    /// Dedicated and fractional background mark workers (C).
    pub background_s: f64,
    /// Marking on processors with nothing else to run (D), which Go's
    /// `GCCPUFraction` leaves out.
    pub idle_s: f64,
    /// GOMAXPROCS during the cycle.
    pub processors: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallKind {
    Allocation,
    Relocation,
}

/// A ZGC stall: one application thread blocked waiting for the collector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub kind: StallKind,
    pub thread: Name,
    pub end: LogTime,
    pub duration_s: f64,
}

/// A new JVM run began in the same stream (GC ids and uptime started again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JvmRestart {
    pub time: LogTime,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GcEvent {
    Pause(Pause),
    Safepoint(Safepoint),
    ConcurrentPhase(ConcurrentPhase),
    Cycle(Cycle),
    Stall(Stall),
    JvmRestart(JvmRestart),
}

impl GcEvent {
    /// The pause, if the event is one: what most readers of an event list want.
    pub fn as_pause(&self) -> Option<&Pause> {
        match self {
            GcEvent::Pause(pause) => Some(pause),
            _ => None,
        }
    }
}
