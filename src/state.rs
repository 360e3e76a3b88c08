//! What the running agent shares between the tailer thread, which updates it,
//! and the HTTP server, which reads it for `/metrics` and the JSON API.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessStats, ParseStats};
use serde::{Deserialize, Serialize};

use crate::alerts::{Alert, DeliveryCounters};
use crate::jvm::JvmState;
use crate::latency::LatencyState;

/// One followed log stream: a JVM's `gc.log` and its rotated files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// Errors by kind (`unreadable`, `vanished`, `truncated`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Request latency of the service this JVM runs, when a latency source
    /// is configured for it.
    pub latency: Option<LatencyState>,
}

impl StreamState {
    pub fn count_error(&mut self, kind: &str) {
        *self.errors.entry(kind.to_string()).or_insert(0) += 1;
    }
}

/// One followed access log, feeding the latency state of a GC stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AccessStreamState {
    pub log: String,
    /// The GC stream (its `log`) the requests are lined up with, once found.
    pub target: Option<String>,
    /// That GC stream's configured labels, so the access log's series carry
    /// the same `service`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub stats: AccessStats,
    pub read_lag_bytes: u64,
    pub readable: bool,
    /// Requests read while no GC stream could take them.
    pub unattributed_requests: u64,
    pub errors: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default)]
pub struct AgentState {
    pub streams: Vec<StreamState>,
    pub access_streams: Vec<AccessStreamState>,
    /// Pending and firing alerts, and those resolved at the last evaluation.
    pub alerts: Vec<Alert>,
    /// Alert deliveries by sink, updated by the sender thread.
    pub deliveries: Arc<Mutex<DeliveryCounters>>,
    /// Errors not tied to one stream (`checkpoint_write`, `watch`, ...).
    pub errors: BTreeMap<String, u64>,
}

impl AgentState {
    pub fn count_error(&mut self, kind: &str) {
        *self.errors.entry(kind.to_string()).or_insert(0) += 1;
    }
}

pub type SharedState = Arc<Mutex<AgentState>>;
