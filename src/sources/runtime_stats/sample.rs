//! One hsperfdata sample: where the counters are (found once per layout),
//! their values read at those offsets, and the runtime stats they say.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use pausewatch_parsers::hsperf::{self, ByteOrder, PerfData, Value};
use pausewatch_parsers::Collector;

use crate::model::gc_cpu;
use crate::model::runtime::{
    collector_of, CollectorStats, MemoryPool, PauseCounters, RuntimeStats,
};

/// G1's placeholder survivor space, always empty: its capacity is the pad
/// JDK 17 adds to every G1 capacity (`G1MonitoringSupport::pad_capacity`,
/// the object alignment, 8 bytes; 0 on JDK 25), which the MXBeans do not.
const G1_PAD_SPACE: &str = "sun.gc.generation.0.space.1.capacity";
/// Collector counters looked for (HotSpot has at most three).
const MAX_COLLECTORS: usize = 8;

/// JDK 22+'s collector CPU counters (nanoseconds) and their `kind`; only
/// G1 and Parallel publish them (ZGC, Shenandoah and Serial leave
/// `sun.threads.total_gc_cpu_time` at 0 on JDK 25, their threads busy).
const HSPERF_GC_CPU: [(&str, &str); 5] = [
    ("sun.threads.cpu_time.gc_parallel_workers", gc_cpu::WORKERS),
    ("sun.threads.cpu_time.gc_conc_mark", gc_cpu::CONCURRENT_MARK),
    (
        "sun.threads.cpu_time.gc_conc_refine",
        gc_cpu::CONCURRENT_REFINE,
    ),
    ("sun.threads.cpu_time.gc_service", gc_cpu::SERVICE),
    ("sun.threads.cpu_time.vm", gc_cpu::VM_THREAD),
];

/// Where the counters of one sample are, found once per layout.
pub(super) struct Layout {
    order: ByteOrder,
    pub(super) entries: usize,
    pub(super) collector: Collector,
    pub(super) version: Option<String>,
    frequency: f64,
    pub(super) jvm_start: DateTime<Utc>,
    /// Offsets of every `Long` read at each sample, in the order of `longs`.
    offsets: Vec<usize>,
    /// Named positions in `offsets`.
    names: BTreeMap<String, usize>,
    collectors: Vec<(String, String)>,
    pools: Vec<PoolLayout>,
    /// Bytes HotSpot added to each capacity (G1 on JDK 17).
    capacity_pad: u64,
    /// Offsets of `sun.gc.cause` and `sun.gc.lastCause`.
    causes: Option<(usize, usize)>,
}

/// A heap pool's counters.
struct PoolLayout {
    id: String,
    /// Counter name prefix (`sun.gc.generation.0.space.0`).
    prefix: String,
    /// Whether its `used` follows the heap: G1's and old generations' do;
    /// Parallel's and Serial's young spaces and ZGC's are updated only at
    /// collections (or by a 50 ms sampler), so they would not be the MXBean's.
    live_used: bool,
    /// Whether its `maxCapacity` is the MXBean's max: for the old (or only)
    /// generation; a young space's is a sizing bound the MXBean does not report.
    has_max: bool,
}

fn is_z(collector: Collector) -> bool {
    matches!(collector, Collector::Z | Collector::ZGenerational)
}

/// The Micrometer id (MXBean pool name) of a generation's space.
fn pool_id(collector: Collector, generation: &str, space: &str) -> Option<String> {
    let id = match (collector, generation, space) {
        (Collector::G1, "young", "eden") => "G1 Eden Space",
        (Collector::G1, "young", "s1") => "G1 Survivor Space",
        (Collector::G1, "old", _) => "G1 Old Gen",
        (Collector::Parallel, _, "eden") => "PS Eden Space",
        (Collector::Parallel, "old", _) => "PS Old Gen",
        (Collector::Serial, _, "eden") => "Eden Space",
        (Collector::Serial, "old", _) => "Tenured Gen",
        (Collector::Shenandoah, "Heap", _) => "Shenandoah",
        (Collector::Z, "old", _) => "ZHeap",
        // Generational ZGC updates its generations' counters only at its
        // cycles (committed 72 MiB in the file, 86 MiB in the MXBean), and the
        // MXBeans have no pool for a survivor half or an empty placeholder.
        _ => return None,
    };
    Some(id.to_string())
}

impl Layout {
    pub(super) fn of(data: &PerfData) -> Option<Layout> {
        // Numbered with gaps by some collectors (ZGC: 0 and 2, or only 2).
        let collectors: Vec<(String, String)> = (0..MAX_COLLECTORS)
            .filter_map(|i| {
                let prefix = format!("sun.gc.collector.{i}");
                let name = data.string(&format!("{prefix}.name"))?.to_string();
                Some((prefix, name))
            })
            .collect();
        let names: Vec<&str> = collectors.iter().map(|(_, n)| n.as_str()).collect();
        let collector = collector_of(data.string("sun.gc.policy.name").unwrap_or(""), &names);
        let mut pools = Vec::new();
        for generation in 0..4 {
            let Some(gen_name) = data.string(&format!("sun.gc.generation.{generation}.name"))
            else {
                continue;
            };
            for space in 0..4 {
                let prefix = format!("sun.gc.generation.{generation}.space.{space}");
                let Some(space_name) = data.string(&format!("{prefix}.name")) else {
                    continue;
                };
                if let Some(id) = pool_id(collector, gen_name, space_name) {
                    pools.push(PoolLayout {
                        id,
                        prefix,
                        live_used: collector == Collector::G1
                            || collector == Collector::Shenandoah
                            || (gen_name == "old" && !is_z(collector)),
                        has_max: matches!(gen_name, "old" | "Heap"),
                    });
                }
            }
        }
        let pad = match collector {
            Collector::G1 => data.long(G1_PAD_SPACE).map_or(0, |pad| pad.max(0) as u64),
            _ => 0,
        };
        let mut wanted: Vec<String> = [
            "sun.rt.safepoints",
            "sun.rt.safepointTime",
            "sun.rt.safepointSyncTime",
            "java.cls.loadedClasses",
            "java.cls.sharedLoadedClasses",
            "java.cls.unloadedClasses",
            "java.cls.sharedUnloadedClasses",
            "java.ci.totalTime",
            "java.threads.live",
            "java.threads.daemon",
            "java.threads.livePeak",
        ]
        .into_iter()
        .chain(HSPERF_GC_CPU.iter().map(|(counter, _)| *counter))
        .map(str::to_string)
        .collect();
        for (prefix, _) in &collectors {
            for field in ["invocations", "time", "lastEntryTime", "lastExitTime"] {
                wanted.push(format!("{prefix}.{field}"));
            }
        }
        for pool in &pools {
            for field in ["used", "capacity", "maxCapacity"] {
                wanted.push(format!("{}.{field}", pool.prefix));
            }
        }
        let string_at = |name: &str| data.get(name).map(|c| c.data_offset);
        let mut layout = Layout {
            order: data.prologue.byte_order,
            entries: data.prologue.num_entries,
            collector,
            version: data
                .string("java.property.java.vm.version")
                .map(str::to_string),
            frequency: data.long("sun.os.hrt.frequency").filter(|f| *f > 0)? as f64,
            jvm_start: DateTime::from_timestamp_millis(data.long("sun.rt.createVmBeginTime")?)?,
            offsets: Vec::new(),
            names: BTreeMap::new(),
            collectors,
            pools,
            capacity_pad: pad,
            causes: string_at("sun.gc.cause").zip(string_at("sun.gc.lastCause")),
        };
        for name in wanted {
            if let Some(counter) = data.get(&name) {
                if let Value::Long(_) = counter.value {
                    layout.names.insert(name, layout.offsets.len());
                    layout.offsets.push(counter.data_offset);
                }
            }
        }
        Some(layout)
    }
}

/// One sample: the `Long`s in layout order and the two cause strings.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sample {
    longs: Vec<i64>,
    cause: String,
    pub(super) last_cause: String,
}

pub(super) fn extract(bytes: &[u8], layout: &Layout) -> Option<Sample> {
    let longs = layout
        .offsets
        .iter()
        .map(|&at| hsperf::read_long(bytes, layout.order, at))
        .collect::<Option<Vec<_>>>()?;
    let text = |at: usize| {
        let bytes = bytes.get(at..)?;
        let end = memchr::memchr(0, bytes).unwrap_or(bytes.len()).min(256);
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    };
    let (cause, last_cause) = match layout.causes {
        Some((cause, last)) => (text(cause)?, text(last)?),
        None => (String::new(), String::new()),
    };
    Some(Sample {
        longs,
        cause,
        last_cause,
    })
}

impl Sample {
    /// The runtime stats this sample says, and each collector's counters
    /// (its prefix, its name, the counters) for pause recovery.
    pub(super) fn stats(
        &self,
        layout: &Layout,
    ) -> (RuntimeStats, Vec<(String, String, PauseCounters)>) {
        let long = |name: &str| layout.names.get(name).map_or(0, |&i| self.longs[i]);
        let seconds = |ticks: i64| ticks as f64 / layout.frequency;
        let unsigned = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut stats = RuntimeStats {
            safepoints: unsigned(long("sun.rt.safepoints")),
            safepoint_seconds: seconds(long("sun.rt.safepointTime")),
            safepoint_sync_seconds: seconds(long("sun.rt.safepointSyncTime")),
            gc_cause: self.cause.clone(),
            gc_last_cause: self.last_cause.clone(),
            classes_loaded: unsigned(
                long("java.cls.loadedClasses") + long("java.cls.sharedLoadedClasses"),
            ),
            classes_unloaded: unsigned(
                long("java.cls.unloadedClasses") + long("java.cls.sharedUnloadedClasses"),
            ),
            jit_seconds: seconds(long("java.ci.totalTime")),
            threads_live: unsigned(long("java.threads.live")),
            threads_daemon: unsigned(long("java.threads.daemon")),
            threads_peak: unsigned(long("java.threads.livePeak")),
            ..RuntimeStats::default()
        };
        if layout.names.contains_key(HSPERF_GC_CPU[0].0) {
            stats.gc_cpu.source = gc_cpu::HSPERFDATA.to_string();
            for (counter, kind) in HSPERF_GC_CPU {
                let into = match kind {
                    gc_cpu::VM_THREAD => &mut stats.gc_cpu.beside,
                    _ => &mut stats.gc_cpu.kinds,
                };
                into.insert(kind.to_string(), long(counter) as f64 / 1e9);
            }
        }
        let mut counters = Vec::new();
        for (prefix, name) in &layout.collectors {
            let field = |f: &str| long(&format!("{prefix}.{f}"));
            let now = PauseCounters {
                invocations: unsigned(field("invocations")),
                seconds: seconds(field("time")),
                last_entry: seconds(field("lastEntryTime")),
                last_exit: seconds(field("lastExitTime")),
            };
            stats.collectors.push(CollectorStats {
                name: name.clone(),
                invocations: now.invocations,
                seconds: now.seconds,
            });
            counters.push((prefix.clone(), name.clone(), now));
        }
        for pool in &layout.pools {
            let field = |f: &str| unsigned(long(&format!("{}.{f}", pool.prefix)));
            let pad = layout.capacity_pad;
            let max = field("maxCapacity").saturating_sub(pad);
            stats.memory.push(MemoryPool {
                area: "heap".to_string(),
                id: pool.id.clone(),
                used: pool.live_used.then(|| field("used")),
                committed: field("capacity").saturating_sub(pad),
                max: (pool.has_max && max > 0).then_some(max),
            });
        }
        (stats, counters)
    }
}

/// The runtime stats in a whole hsperfdata file, as one sample reads them
/// (for tests and tools; the source reads a live file).
pub fn stats_of(bytes: &[u8]) -> Option<RuntimeStats> {
    let data = hsperf::parse(bytes).ok()?;
    let layout = Layout::of(&data)?;
    Some(extract(bytes, &layout)?.stats(&layout).0)
}
