//! The agent's store of the model, keyed by a stable stream id.
//!
//! The agent loop is the only writer: it reads files without the lock, then
//! applies what it read under one short lock per source poll. Readers (the
//! exporters, the HTTP API, the alert rules, the checkpoint) take a
//! [`Store::snapshot`]: a copy of the maps of `Arc`s, made under the lock in
//! microseconds, then encoded without it. A stream that a reader still holds
//! is copied on its next write ([`Arc::make_mut`]), so neither side waits on
//! the other's encoding or I/O; its minutes are shared by the hour, so the
//! copy is of the hour the write touches, not of the day kept.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessStats, ParseStats};
use serde::{Deserialize, Serialize};

use crate::model::alerts::{Alert, DeliveryCounters};
use crate::model::jvm::JvmState;
use crate::model::latency::{LatencyState, MalformedWindow};
use crate::model::runtime::RuntimeStats;

/// A stream's identity for the life of the agent: streams come and go
/// (rotated sets found by a glob, JVMs that exit), so positions in a list
/// would shift; ids are handed out in discovery order and never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamId(pub u64);

/// One followed GC log stream: a JVM's `gc.log` and its rotated files.
#[derive(Debug, Clone, Default)]
pub struct StreamState {
    /// The stream's live path (`/var/log/app/gc.log`); the `log` label.
    pub log: String,
    /// Labels from the configuration, added to every series of this stream.
    pub labels: BTreeMap<String, String>,
    pub jvm: JvmState,
    /// The parser's counters: lines, bytes, unparsed lines by kind.
    pub parse: ParseStats,
    /// Files of the set currently open or known (live file plus rotated ones).
    pub files_followed: u64,
    /// Bytes written to the live file that have not been read yet.
    pub read_lag_bytes: u64,
    /// Agent clock when the last event of this stream was processed.
    pub last_event_processed_at: Option<DateTime<Utc>>,
    /// Whether the live file could be read at the last attempt.
    pub readable: bool,
    /// Errors by kind (`unreadable`, `missing`, `truncated`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Request latency of the service this JVM runs, when a latency source
    /// is configured for it.
    pub latency: Option<LatencyState>,
    /// Where `latency`'s requests come from, once any came.
    pub latency_source: Option<LatencySource>,
    /// Server connections the kernel's latency leaves out: they carried
    /// more than one request at a time (HTTP/2, gRPC, pipelining).
    pub multiplexed_connections: u64,
    /// Runtime stats from the JVM's hsperfdata, when it is sampled.
    pub runtime: Option<RuntimeStats>,
    /// The discovered JVM exited and its grace period passed: it has no
    /// series and no alerts any more, and its minutes stay in
    /// `/api/v1/minutes` until `history` drops them.
    pub exited: bool,
    /// How discovery found this JVM, when it did.
    pub discovered: Option<Discovered>,
}

/// What discovery knows of a JVM besides its labels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovered {
    /// The process's owner.
    pub user: String,
    /// Why its hsperfdata cannot be read (`perf_data_disabled`,
    /// `no_hsperfdata`, `permission_denied`), when it cannot.
    pub unavailable: Option<String>,
    /// Its pid on the host: the eBPF source's records name it.
    pub pid: u32,
    /// Its start in clock ticks after boot: with `pid`, the process the
    /// eBPF records name (a pid reused between two scans is another).
    pub start_ticks: u64,
    /// The one input its pause figures come from.
    pub pause_source: PauseSource,
    /// Why eBPF does not measure it (`not_built`, `disabled`,
    /// `permission_denied`, ...), when it does not.
    pub ebpf_reason: Option<EbpfReason>,
    /// The one input its safepoints come from.
    pub safepoint_source: SafepointSource,
    /// For a JVM whose GC log supplies the pauses and whose safepoints the
    /// probes see: pauses the log gave minus those the probes recorded,
    /// less that difference at the first comparison (see the eBPF source).
    pub log_probe_mismatch: Option<f64>,
    /// Whether the kernel measures its requests (`latency_source="kernel"`),
    /// or why not; `None` until the request source has looked.
    pub requests: Option<Result<(), LatencyReason>>,
    /// The TCP ports it listens on, as last read (an `[[access_log]]` may
    /// name the JVM by one).
    pub ports: Vec<u16>,
    /// Listening ports a `[[discovery.rule]]` leaves out of the kernel's
    /// request latency.
    pub excluded_ports: Vec<u16>,
}

impl Discovered {
    /// What measures its pauses: `None` when nothing does (no log, no
    /// probes, and its hsperfdata cannot be read), and its pause figures
    /// are absent (`pause_source="none"`).
    pub fn pauses_measured_by(&self) -> Option<PauseSource> {
        match self.pause_source {
            PauseSource::Hsperfdata if self.unavailable.is_some() => None,
            source => Some(source),
        }
    }
}

impl StreamState {
    /// Where the service's own figures (its access log, its histogram) go:
    /// beside the kernel's when the kernel measures the JVM's requests, else
    /// they are the stream's latency.
    pub fn service_latency(&mut self) -> &mut LatencyState {
        let latency = self.latency.get_or_insert_with(LatencyState::default);
        match *self.latency_source.get_or_insert(LatencySource::AccessLog) {
            LatencySource::Kernel => latency.server_view(),
            LatencySource::AccessLog => latency,
        }
    }

    /// The stream the kernel's requests go to: an access log's figures
    /// there so far become the server's view beside them.
    pub fn kernel_latency(&mut self) -> &mut LatencyState {
        let latency = self.latency.get_or_insert_with(LatencyState::default);
        if self.latency_source.replace(LatencySource::Kernel) == Some(LatencySource::AccessLog) {
            latency.make_server_view();
        }
        latency
    }

    /// Whether anything measures the stream's pauses: a log always does.
    pub fn pauses_measured(&self) -> bool {
        (self.discovered.as_ref()).is_none_or(|jvm| jvm.pauses_measured_by().is_some())
    }
}

/// Which input measures a discovered JVM's pauses: one per JVM, so that
/// no pause is counted twice. A readable GC log is richer (causes, heap);
/// without one, the safepoint probes are exact; without them, hsperfdata's
/// counters are sampled, exact only while pauses are further apart than
/// the sampling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PauseSource {
    GcLog,
    Ebpf,
    #[default]
    Hsperfdata,
}

impl PauseSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PauseSource::GcLog => "gc_log",
            PauseSource::Ebpf => "ebpf",
            PauseSource::Hsperfdata => "hsperfdata",
        }
    }
}

/// Why eBPF does not measure a discovered JVM
/// (`pausewatch_jvm_discovered{ebpf_reason}`): a closed set, each said in
/// one log line with what was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EbpfReason {
    /// The agent was built without the `ebpf` feature.
    NotBuilt,
    /// `[ebpf] enabled = false`.
    Disabled,
    /// `bpf()` was refused: no CAP_BPF and CAP_PERFMON, a seccomp filter, an LSM.
    PermissionDenied,
    LoadFailed,
    /// The open-files limit leaves no room for the probes' descriptors.
    TooFewDescriptors,
    NoLibjvm,
    /// What the process maps as libjvm.so is not a library to attach to.
    NotALibrary,
    /// Upgraded in place, and the mapped file cannot be opened.
    LibjvmReplaced,
    /// Owned or writable by another non-root user.
    UntrustedLibrary,
    /// No `VM Thread` some seconds after its start.
    NotAJvm,
    /// As many libraries attached as allowed, in all or for its user.
    AttachLimit,
    AttachFailed,
    /// Attached, but its counter moves while no record comes.
    NoRecords,
}

impl EbpfReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EbpfReason::NotBuilt => "not_built",
            EbpfReason::Disabled => "disabled",
            EbpfReason::PermissionDenied => "permission_denied",
            EbpfReason::LoadFailed => "load_failed",
            EbpfReason::TooFewDescriptors => "too_few_descriptors",
            EbpfReason::NoLibjvm => "no_libjvm",
            EbpfReason::NotALibrary => "not_a_library",
            EbpfReason::LibjvmReplaced => "libjvm_replaced",
            EbpfReason::UntrustedLibrary => "untrusted_library",
            EbpfReason::NotAJvm => "not_a_jvm",
            EbpfReason::AttachLimit => "attach_limit",
            EbpfReason::AttachFailed => "attach_failed",
            EbpfReason::NoRecords => "no_records",
        }
    }
}

/// Where a stream's request latency comes from: the service's access log
/// (or its latency histogram), or the kernel's view of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencySource {
    AccessLog,
    Kernel,
}

/// Why the kernel does not measure a discovered JVM's requests
/// (`latency_reason`), as [`EbpfReason`] says it for its pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyReason {
    /// The agent was built without the `ebpf` feature.
    NotBuilt,
    /// `[ebpf] enabled = false`.
    Disabled,
    /// `bpf()` was refused: no CAP_BPF and CAP_PERFMON, a seccomp filter, an LSM.
    PermissionDenied,
    LoadFailed,
    /// The open-files limit leaves no room for the probes' descriptors.
    TooFewDescriptors,
    /// This kernel lacks the tracepoints (`sock:sk_data_ready` is Linux 6.6).
    NoTracepoints,
    /// It listens on no TCP port: it serves no requests.
    NoListener,
    /// A `[[discovery.rule]]`'s `exclude_ports` names every port it listens on.
    PortsExcluded,
    /// Its sockets cannot be read in /proc.
    ProcUnreadable,
}

impl LatencyReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyReason::NotBuilt => "not_built",
            LatencyReason::Disabled => "disabled",
            LatencyReason::PermissionDenied => "permission_denied",
            LatencyReason::LoadFailed => "load_failed",
            LatencyReason::TooFewDescriptors => "too_few_descriptors",
            LatencyReason::NoTracepoints => "no_tracepoints",
            LatencyReason::NoListener => "no_listener",
            LatencyReason::PortsExcluded => "ports_excluded",
            LatencyReason::ProcUnreadable => "proc_unreadable",
        }
    }
}

/// Which input gives a discovered JVM's safepoints (non-GC ones and the
/// time to reach each): a GC log with the `safepoint` tag; else the probes,
/// also beside a GC log without it; else none (hsperfdata has only totals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SafepointSource {
    GcLog,
    Ebpf,
    #[default]
    None,
}

impl SafepointSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SafepointSource::GcLog => "gc_log",
            SafepointSource::Ebpf => "ebpf",
            SafepointSource::None => "none",
        }
    }
}

/// One followed access log, feeding the latency state of a GC stream.
#[derive(Debug, Clone, Default)]
pub struct AccessStreamState {
    pub log: String,
    /// The GC stream (its `log`) the requests are lined up with, once found.
    pub target: Option<String>,
    /// That GC stream's configured labels, so the access log's series carry
    /// the same `service`.
    pub labels: BTreeMap<String, String>,
    pub stats: AccessStats,
    pub read_lag_bytes: u64,
    pub readable: bool,
    /// Requests read while no GC stream could take them.
    pub unattributed_requests: u64,
    pub errors: BTreeMap<String, u64>,
    /// Malformed lines among the last ones: the figure of
    /// `pausewatch_access_log_malformed_ratio`, for a wrong format.
    pub malformed_window: MalformedWindow,
    /// The wrong-format warning was logged and the share has not fallen
    /// back since: it is logged once per crossing, not every poll.
    pub malformed_warned: bool,
}

/// What `pausewatch_errors_total{kind}` counts: a closed set, so that a
/// typo at a call site cannot make a new class of error in every
/// dashboard's eyes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A followed file was truncated or rewritten in place.
    Truncated,
    /// The checkpointed file is gone; the live one is read from its start.
    CheckpointFileGone,
    Unreadable,
    Missing,
    /// A symlink out of the configured directories, not followed.
    SymlinkOutside,
    DescriptorsExhausted,
    NotRegularFile,
    /// A glob matched more files than are followed.
    GlobCapped,
    /// A GC log a JVM's options name is another user's to change.
    UntrustedGcLog,
    CheckpointRead,
    CheckpointWrite,
    /// File events could not be watched.
    Watch,
    LatencyHistogramScrape,
    /// eBPF records the ring buffer had no room for.
    EbpfEventsDropped,
    /// Request records the kernel program lost: a full ring buffer, or a
    /// JVM over its budget of records a second.
    RequestRecordsDropped,
    /// A JVM's file in `[ebpf] requests_dir` could not be written.
    RequestsUnwritten,
    /// Safepoints of JVMs measured before a restart, run while it was down.
    EbpfSafepointsMissedWhileDown,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::CheckpointFileGone => "checkpoint_file_gone",
            ErrorKind::Unreadable => "unreadable",
            ErrorKind::Missing => "missing",
            ErrorKind::SymlinkOutside => "symlink_outside",
            ErrorKind::DescriptorsExhausted => "descriptors_exhausted",
            ErrorKind::NotRegularFile => "not_regular_file",
            ErrorKind::GlobCapped => "glob_capped",
            ErrorKind::UntrustedGcLog => "untrusted_gc_log",
            ErrorKind::CheckpointRead => "checkpoint_read",
            ErrorKind::CheckpointWrite => "checkpoint_write",
            ErrorKind::Watch => "watch",
            ErrorKind::LatencyHistogramScrape => "latency_histogram_scrape",
            ErrorKind::EbpfEventsDropped => "ebpf_events_dropped",
            ErrorKind::RequestRecordsDropped => "request_records_dropped",
            ErrorKind::RequestsUnwritten => "requests_unwritten",
            ErrorKind::EbpfSafepointsMissedWhileDown => "ebpf_safepoints_missed_while_down",
        }
    }
}

/// Counts an error of `kind` in an error map.
pub fn count_error(errors: &mut BTreeMap<String, u64>, kind: ErrorKind) {
    add_errors(errors, kind, 1);
}

/// Counts `count` errors of `kind` in an error map.
pub fn add_errors(errors: &mut BTreeMap<String, u64>, kind: ErrorKind, count: u64) {
    *errors.entry(kind.as_str().to_string()).or_insert(0) += count;
}

/// Everything the agent knows, as one snapshot.
#[derive(Debug, Clone, Default)]
pub struct AgentState {
    /// GC log streams, in discovery order.
    pub streams: BTreeMap<StreamId, Arc<StreamState>>,
    /// Access logs, in discovery order.
    pub access_streams: BTreeMap<StreamId, Arc<AccessStreamState>>,
    /// Pending and firing alerts, and those resolved at the last evaluation.
    pub alerts: Arc<Vec<Alert>>,
    /// Alert deliveries by sink, updated by the sender threads.
    pub deliveries: Arc<Mutex<DeliveryCounters>>,
    /// Errors not tied to one stream (`checkpoint_write`, `watch`, ...).
    pub errors: BTreeMap<String, u64>,
    /// What the OTLP exporter's thread counts.
    pub otlp: Arc<Mutex<OtlpCounters>>,
    /// eBPF safepoint records of processes the agent does not measure;
    /// `None` while no eBPF source runs.
    pub ebpf_records_unclaimed: Option<u64>,
}

/// The OTLP exporter's counts; empty while it is off.
#[derive(Debug, Default)]
pub struct OtlpCounters {
    /// Export requests by signal (`metrics`, `logs`) and result.
    pub exports: BTreeMap<(&'static str, &'static str), u64>,
    /// Pause records that left a JVM's bounded queue before the receiver took them.
    pub pause_records_dropped: u64,
}

impl AgentState {
    /// A state holding `streams`, with ids in their order.
    pub fn from_streams(streams: impl IntoIterator<Item = StreamState>) -> AgentState {
        AgentState {
            streams: (1..)
                .map(StreamId)
                .zip(streams.into_iter().map(Arc::new))
                .collect(),
            ..AgentState::default()
        }
    }

    pub fn count_error(&mut self, kind: ErrorKind) {
        count_error(&mut self.errors, kind);
    }

    /// The GC stream `id`, for writing (copied first if a reader holds it).
    pub fn stream_mut(&mut self, id: StreamId) -> Option<&mut StreamState> {
        self.streams.get_mut(&id).map(Arc::make_mut)
    }

    pub fn access_mut(&mut self, id: StreamId) -> Option<&mut AccessStreamState> {
        self.access_streams.get_mut(&id).map(Arc::make_mut)
    }

    /// The GC stream whose live path is `log`.
    pub fn stream_by_log(&self, log: &str) -> Option<StreamId> {
        self.streams
            .iter()
            .find(|(_, s)| s.log == log)
            .map(|(id, _)| *id)
    }
}

/// The shared store: one writer (the agent loop), many snapshot readers.
#[derive(Debug, Default)]
pub struct Store {
    state: Mutex<AgentState>,
    /// Bumped by the agent's loop as it goes; read by `/healthz`.
    pub heartbeat: Heartbeat,
}

/// When the agent's loop last made progress, without a lock: a loop stuck
/// in a system call (or on the store's lock) must not stop `/healthz` from
/// saying so.
#[derive(Debug)]
pub struct Heartbeat {
    base: Instant,
    /// Milliseconds after `base` of the last beat.
    last: AtomicU64,
    /// Milliseconds without a beat after which the loop counts as stalled.
    limit: AtomicU64,
}

/// The stall limit until the agent sets its own.
const DEFAULT_STALL_LIMIT: Duration = Duration::from_secs(10);

impl Default for Heartbeat {
    /// A beat now.
    fn default() -> Heartbeat {
        Heartbeat {
            base: Instant::now(),
            last: AtomicU64::new(0),
            limit: AtomicU64::new(DEFAULT_STALL_LIMIT.as_millis() as u64),
        }
    }
}

impl Heartbeat {
    pub fn beat(&self) {
        let now = self.base.elapsed().as_millis() as u64;
        self.last.store(now, Ordering::Relaxed);
    }

    /// Sets how long without a beat is a stall.
    pub fn set_limit(&self, limit: Duration) {
        let limit = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// How long since the last beat, when that is longer than the limit.
    pub fn stalled(&self) -> Option<(Duration, Duration)> {
        let now = self.base.elapsed().as_millis() as u64;
        let age = Duration::from_millis(now.saturating_sub(self.last.load(Ordering::Relaxed)));
        let limit = Duration::from_millis(self.limit.load(Ordering::Relaxed));
        (age > limit).then_some((age, limit))
    }
}

pub type SharedStore = Arc<Store>;

impl Store {
    pub fn new(state: AgentState) -> Store {
        Store {
            state: Mutex::new(state),
            heartbeat: Heartbeat::default(),
        }
    }

    /// The state for writing. A writer that panicked mid-update leaves
    /// figures that are still better to serve than none.
    pub fn write(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a writer panicked while holding the lock.
    pub fn is_poisoned(&self) -> bool {
        self.state.is_poisoned()
    }

    /// A consistent copy to read at leisure: cheap, the streams are shared.
    pub fn snapshot(&self) -> AgentState {
        self.write().clone()
    }
}
