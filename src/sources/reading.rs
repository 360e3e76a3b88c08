//! What a source hands the agent. A source reads its files, probes and
//! counters and says what it read as typed [`Update`]s; the agent's
//! `apply` (src/agent/apply.rs) alone writes them into the store, so the
//! rules of the fold live in one place and a new input kind is one reader.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessStats, GcEvent, JvmRun, ParseStats};

use crate::model::correlate::{LatencySummary, RequestTiming};
use crate::model::gc_cpu::GcCpu;
use crate::model::latency::MalformedWindow;
use crate::model::runtime::RuntimeStats;
use crate::store::{
    AccessStreamState, AgentState, Discovered, ErrorKind, LatencyReason, Store, StreamId,
    StreamState,
};

/// Records held before they are applied: a catch-up read of a large file
/// must not hold gigabytes of records, nor the store's lock for long.
pub(super) const APPLY_BATCH: usize = 4096;

/// One thing a source read, for the agent to write into the store.
#[derive(Debug)]
pub enum Update {
    /// A stream the source fills from now on (or one a checkpoint kept).
    Stream(StreamId, Arc<StreamState>),
    /// An access log's own stream.
    AccessStream(StreamId, Arc<AccessStreamState>),
    /// Errors of the agent, not of one stream.
    Errors(ErrorKind, u64),
    /// Events read for `stream`, with what is known of the JVM run (its
    /// JDK version decides Micrometer's labels).
    GcEvents {
        stream: StreamId,
        run: JvmRun,
        events: Vec<GcEvent>,
        origin: Origin,
    },
    /// How reading a GC log goes.
    GcLogRead {
        stream: StreamId,
        read: FileRead<ParseStats>,
    },
    /// How reading an access log goes.
    AccessLogRead {
        access: StreamId,
        read: FileRead<AccessStats>,
        malformed: MalformedWindow,
        malformed_warned: bool,
    },
    /// Requests an access log read, for the JVM stream `target` (the
    /// access log's series take that stream's labels).
    ServiceRequests {
        access: StreamId,
        target: StreamId,
        requests: Vec<RequestTiming>,
    },
    /// Requests an access log read that no JVM stream took in time.
    Unattributed { access: StreamId, requests: u64 },
    /// A process's CPU since its previous reading.
    Cpu { stream: StreamId, growth: CpuGrowth },
    /// Request-latency minutes from a service's own histogram, for the GC
    /// stream whose live path is `log`.
    HistogramMinutes {
        log: String,
        minutes: Vec<(DateTime<Utc>, LatencySummary)>,
    },
    /// What discovery knows of the JVM that fills `stream` from now on.
    Discovered(StreamId, Discovered),
    /// What a discovered JVM's counters and /proc say, for the stream that
    /// carries that process (`pid`, `start_ticks`) still: a configured log's
    /// stream passes to a JVM restarted into it, and the run that exited
    /// then writes nothing there.
    Jvm {
        stream: StreamId,
        process: (u32, u64),
        change: JvmChange,
    },
    /// A JVM's listening ports, and whether the kernel measures its requests.
    Listening {
        stream: StreamId,
        ports: Vec<u16>,
        verdict: Result<(), LatencyReason>,
    },
    /// Requests the kernel saw a JVM serve, each with its port.
    KernelRequests {
        stream: StreamId,
        requests: Vec<(RequestTiming, u16)>,
    },
    /// Server connections that carried more than one request at a time.
    Multiplexed { stream: StreamId, connections: u64 },
    /// eBPF records of `stream`'s JVM lost in `minute`: its maxima there are
    /// lower bounds.
    RecordsLost {
        stream: StreamId,
        minute: i64,
        records: u64,
    },
    /// A stop that never ended (its JVM exited in it) in `minute`.
    StopNeverEnded { stream: StreamId, minute: i64 },
    /// The GC log's pauses minus the probes' count.
    LogProbeMismatch { stream: StreamId, mismatch: f64 },
    /// The probes' safepoints against the JVM's counter.
    SafepointProbeMismatch {
        stream: StreamId,
        mismatch: Option<f64>,
    },
    /// Probes that see nothing of a JVM whose counter moves: its counters
    /// measure it instead.
    ProbesBlind(StreamId),
    /// eBPF safepoint records no measured JVM took (of a poll: the
    /// counter exists from the eBPF source's first).
    UnclaimedRecords(u64),
}

/// Where events come from: a GC log's are what makes it fresh
/// (`last_event_processed_at`, the `StaleGcLog` alert).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    GcLog,
    Probes,
}

/// What changed of a discovered JVM (see [`Update::Jvm`]).
#[derive(Debug)]
pub enum JvmChange {
    /// Why its counters cannot be read (`None`: they can).
    Unavailable(Option<String>),
    /// Its collector's CPU from its threads, when hsperfdata is not read.
    ThreadsCpu {
        gc_cpu: GcCpu,
        growth: Option<CpuGrowth>,
    },
    /// A sample of its hsperfdata.
    Sample(Box<JvmSample>),
    /// The exited JVM's stats leave its configured log's stream.
    Released,
}

/// A sample of a JVM's hsperfdata.
#[derive(Debug)]
pub struct JvmSample {
    /// Its stats; the eBPF source's safepoint comparison is kept, and
    /// `unresolved_pauses` counts on from the stream's.
    pub stats: RuntimeStats,
    pub growth: Option<CpuGrowth>,
    /// Its collector and JDK version; they fill what a log picked up
    /// mid-file did not say.
    pub run: JvmRun,
    /// The pauses recovered from the counters, when they measure them.
    pub recovered: Option<Recovered>,
}

/// Pauses the counters gave, `unresolved` of them not told apart (several
/// in one sample): the minute's maximum is then a lower bound.
#[derive(Debug)]
pub struct Recovered {
    pub events: Vec<GcEvent>,
    pub unresolved: u64,
}

/// A process's CPU seconds in a minute since its previous reading;
/// `gc_seconds` of them its collector's, `cpus` the CPUs it may run on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuGrowth {
    pub minute: i64,
    pub gc_seconds: f64,
    pub process_seconds: f64,
    pub cpus: Option<f64>,
}

impl Update {
    /// How many records it holds, for [`APPLY_BATCH`].
    fn records(&self) -> usize {
        match self {
            Update::GcEvents { events, .. } => events.len(),
            Update::ServiceRequests { requests, .. } => requests.len(),
            Update::KernelRequests { requests, .. } => requests.len(),
            _ => 1,
        }
    }
}

/// How a followed file reads: the parser's counters, what is left to read,
/// and the errors its follower met (already logged).
#[derive(Debug, Clone, Default)]
pub struct FileRead<S> {
    pub stats: S,
    pub lag_bytes: u64,
    pub files_followed: u64,
    pub readable: bool,
    pub errors: Vec<ErrorKind>,
}

/// The agent's function that writes an update into the store.
pub type Apply = fn(&mut AgentState, Update);

/// A source's view of the store while it polls: it may look at the state
/// (what it measures, where a request belongs) and hands over what it read;
/// only the agent's [`Apply`] writes. Updates are applied in batches, and
/// before each look, so a look sees everything handed over before it.
pub struct Reading<'a> {
    store: &'a Store,
    apply: Apply,
    pending: Vec<Update>,
    pending_records: usize,
}

impl<'a> Reading<'a> {
    pub fn new(store: &'a Store, apply: Apply) -> Reading<'a> {
        Reading {
            store,
            apply,
            pending: Vec::new(),
            pending_records: 0,
        }
    }

    /// Hands over `update`; applied with the next batch.
    pub fn push(&mut self, update: Update) {
        self.pending_records += update.records();
        self.pending.push(update);
        if self.pending_records >= APPLY_BATCH {
            self.flush();
        }
    }

    /// What `look` finds in the store, with every update handed over so far
    /// applied.
    pub fn look<R>(&mut self, look: impl FnOnce(&AgentState) -> R) -> R {
        self.flush();
        look(&self.store.write())
    }

    /// Applies what was handed over, under one lock.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut state = self.store.write();
        for update in self.pending.drain(..) {
            (self.apply)(&mut state, update);
        }
        self.pending_records = 0;
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_sees_every_update_handed_over_before_it_and_the_rest_lands_at_the_end() {
        let store = Store::default();
        let watch = |state: &AgentState| state.errors.get(ErrorKind::Watch.as_str()).copied();
        let mut reading = Reading::new(&store, crate::agent::apply);
        reading.push(Update::Errors(ErrorKind::Watch, 2));
        assert_eq!(watch(&store.write()), None, "applied by the batch");
        assert_eq!(reading.look(watch), Some(2));
        reading.push(Update::Errors(ErrorKind::Watch, 1));
        drop(reading);
        assert_eq!(watch(&store.write()), Some(3));
    }
}
