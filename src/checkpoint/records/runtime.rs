//! Records of what discovery and the runtime stats know of a JVM.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::jvm::GcCpuV5;
use crate::model::runtime::{CollectorStats, MemoryPool, RuntimeStats};
use crate::store::{
    Discovered, EbpfReason, LatencyReason, LatencySource, PauseSource, SafepointSource,
};

unit_enum! {
    /// Version 5 of [`PauseSource`].
    #[derive(Default)]
    PauseSourceV5 <=> PauseSource {
        GcLog,
        Ebpf,
        #[default]
        Hsperfdata,
    }
}

unit_enum! {
    /// Version 5 of [`SafepointSource`].
    #[derive(Default)]
    SafepointSourceV5 <=> SafepointSource {
        GcLog,
        Ebpf,
        #[default]
        None,
    }
}

unit_enum! {
    /// Version 5 of [`LatencySource`].
    LatencySourceV5 <=> LatencySource { AccessLog, Kernel }
}

unit_enum! {
    /// Version 5 of [`EbpfReason`].
    EbpfReasonV5 <=> EbpfReason {
        NotBuilt,
        Disabled,
        PermissionDenied,
        LoadFailed,
        TooFewDescriptors,
        NoLibjvm,
        NotALibrary,
        LibjvmReplaced,
        UntrustedLibrary,
        NotAJvm,
        AttachLimit,
        AttachFailed,
        NoRecords,
    }
}

unit_enum! {
    /// Version 5 of [`LatencyReason`].
    LatencyReasonV5 <=> LatencyReason {
        NotBuilt,
        Disabled,
        PermissionDenied,
        LoadFailed,
        TooFewDescriptors,
        NoTracepoints,
        NoListener,
        PortsExcluded,
        ProcUnreadable,
    }
}

/// Version 5 of [`Discovered`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiscoveryV5 {
    user: String,
    unavailable: Option<String>,
    #[serde(default)]
    pid: u32,
    #[serde(default)]
    start_ticks: u64,
    #[serde(default)]
    pause_source: PauseSourceV5,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ebpf_reason: Option<EbpfReasonV5>,
    #[serde(default)]
    safepoint_source: SafepointSourceV5,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_probe_mismatch: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requests: Option<Result<(), LatencyReasonV5>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ports: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    excluded_ports: Vec<u16>,
}

both_ways!(Discovered, DiscoveryV5, |jvm| {
    user: jvm.user,
    unavailable: jvm.unavailable,
    pid: jvm.pid,
    start_ticks: jvm.start_ticks,
    pause_source: jvm.pause_source.into(),
    ebpf_reason: jvm.ebpf_reason.map(Into::into),
    safepoint_source: jvm.safepoint_source.into(),
    log_probe_mismatch: jvm.log_probe_mismatch,
    requests: jvm.requests.map(|r| r.map_err(Into::into)),
    ports: jvm.ports,
    excluded_ports: jvm.excluded_ports,
});

/// Version 5 of [`CollectorStats`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CollectorStatsV5 {
    name: String,
    invocations: u64,
    seconds: f64,
}

both_ways!(CollectorStats, CollectorStatsV5, |collector| {
    name: collector.name,
    invocations: collector.invocations,
    seconds: collector.seconds,
});

/// Version 5 of [`MemoryPool`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryPoolV5 {
    area: String,
    id: String,
    used: Option<u64>,
    committed: u64,
    max: Option<u64>,
}

both_ways!(MemoryPool, MemoryPoolV5, |pool| {
    area: pool.area,
    id: pool.id,
    used: pool.used,
    committed: pool.committed,
    max: pool.max,
});

/// Version 5 of [`RuntimeStats`].
#[derive(Debug, Serialize, Deserialize)]
pub struct RuntimeV5<'a> {
    collectors: Vec<CollectorStatsV5>,
    safepoints: u64,
    safepoint_seconds: f64,
    safepoint_sync_seconds: f64,
    memory: Vec<MemoryPoolV5>,
    gc_cause: Cow<'a, str>,
    gc_last_cause: Cow<'a, str>,
    classes_loaded: u64,
    classes_unloaded: u64,
    jit_seconds: f64,
    threads_live: u64,
    threads_daemon: u64,
    threads_peak: u64,
    uptime_seconds: f64,
    #[serde(default)]
    cpu_seconds: Option<f64>,
    #[serde(default)]
    gc_cpu: GcCpuV5,
    unresolved_pauses: u64,
    pauses_available: bool,
    log_counter_mismatch: Cow<'a, [(String, f64)]>,
    #[serde(default)]
    safepoint_probe_mismatch: Option<f64>,
}

impl<'a> From<&'a RuntimeStats> for RuntimeV5<'a> {
    fn from(stats: &'a RuntimeStats) -> Self {
        RuntimeV5 {
            collectors: stats.collectors.iter().cloned().map(Into::into).collect(),
            safepoints: stats.safepoints,
            safepoint_seconds: stats.safepoint_seconds,
            safepoint_sync_seconds: stats.safepoint_sync_seconds,
            memory: stats.memory.iter().cloned().map(Into::into).collect(),
            gc_cause: Cow::Borrowed(&stats.gc_cause),
            gc_last_cause: Cow::Borrowed(&stats.gc_last_cause),
            classes_loaded: stats.classes_loaded,
            classes_unloaded: stats.classes_unloaded,
            jit_seconds: stats.jit_seconds,
            threads_live: stats.threads_live,
            threads_daemon: stats.threads_daemon,
            threads_peak: stats.threads_peak,
            uptime_seconds: stats.uptime_seconds,
            cpu_seconds: stats.cpu_seconds,
            gc_cpu: stats.gc_cpu.clone().into(),
            unresolved_pauses: stats.unresolved_pauses,
            pauses_available: stats.pauses_available,
            log_counter_mismatch: Cow::Borrowed(&stats.log_counter_mismatch),
            safepoint_probe_mismatch: stats.safepoint_probe_mismatch,
        }
    }
}

impl RuntimeV5<'_> {
    pub fn into_model(self) -> RuntimeStats {
        RuntimeStats {
            collectors: self.collectors.into_iter().map(Into::into).collect(),
            safepoints: self.safepoints,
            safepoint_seconds: self.safepoint_seconds,
            safepoint_sync_seconds: self.safepoint_sync_seconds,
            memory: self.memory.into_iter().map(Into::into).collect(),
            gc_cause: self.gc_cause.into_owned(),
            gc_last_cause: self.gc_last_cause.into_owned(),
            classes_loaded: self.classes_loaded,
            classes_unloaded: self.classes_unloaded,
            jit_seconds: self.jit_seconds,
            threads_live: self.threads_live,
            threads_daemon: self.threads_daemon,
            threads_peak: self.threads_peak,
            uptime_seconds: self.uptime_seconds,
            // The previous run's clock: no record of this run is placed by it.
            sampled_monotonic_ns: 0,
            cpu_seconds: self.cpu_seconds,
            gc_cpu: self.gc_cpu.into(),
            unresolved_pauses: self.unresolved_pauses,
            pauses_available: self.pauses_available,
            log_counter_mismatch: self.log_counter_mismatch.into_owned(),
            safepoint_probe_mismatch: self.safepoint_probe_mismatch,
        }
    }
}
