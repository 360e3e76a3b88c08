//! A JVM's GC log: followed through rotation, parsed, folded into the JVM's
//! model. Uptime-only logs are anchored to their JVM's start from /proc.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use pausewatch_parsers::{GcEvent, GcLogParser, ParserOptions};
use serde::{Deserialize, Serialize};

use super::{report_note, Source, SourceCheckpoint, SourceKey};
use crate::config;
use crate::follow::{Follower, Position};
use crate::model::jvm::LabelCap;
use crate::model::latency::LatencyState;
use crate::store::{AgentState, Store, StreamId, StreamState};

/// A pause waits for its CPU-times line; after this much quiet it is emitted without.
const PENDING_FLUSH_AFTER: Duration = Duration::from_millis(200);
/// How often /proc is searched for the start of a JVM whose log has uptime only.
const CLOCK_PROBE_INTERVAL: Duration = Duration::from_secs(2);
/// Events applied under one lock at most: a catch-up read of a large log
/// must not hold gigabytes of events, nor the lock for long.
const APPLY_BATCH: usize = 4096;

/// What a restart needs: where reading stopped, the parser's unfinished
/// state and the aggregates that reflect exactly the bytes before it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcLogCheckpoint {
    pub log: String,
    pub position: Option<Position>,
    pub parser: GcLogParser,
    pub state: Arc<StreamState>,
}

pub struct GcLogSource {
    id: StreamId,
    follower: Follower,
    parser: GcLogParser,
    last_data: Instant,
    /// Last look in /proc for the JVM's start, for an uptime-only log.
    last_clock_probe: Option<Instant>,
    /// Whether the configuration gives the JVM start (then /proc is not asked).
    configured_start: bool,
}

impl GcLogSource {
    /// Starts following `live`, resuming from `restored` when there is one,
    /// and registers its stream in the store.
    pub fn start(
        id: StreamId,
        source: &config::GcLogSource,
        live: PathBuf,
        restored: Option<SourceCheckpoint>,
        latency_target: bool,
        store: &Store,
    ) -> GcLogSource {
        let log = live.display().to_string();
        let (position, parser, mut state) = match restored {
            Some(SourceCheckpoint::GcLog(checkpoint)) => (
                checkpoint.position,
                checkpoint.parser,
                Arc::unwrap_or_clone(checkpoint.state),
            ),
            _ => (
                None,
                GcLogParser::new(ParserOptions {
                    jvm_start: source.jvm_start,
                    max_line_bytes: source.max_line_bytes,
                }),
                StreamState {
                    log: log.clone(),
                    ..StreamState::default()
                },
            ),
        };
        // Labels follow the configuration, not the checkpoint.
        state.labels = source.labels.clone();
        state.jvm.max_label_values = LabelCap(source.max_label_values);
        // A latency source will line its requests up with this JVM's stops:
        // record stops from the first event on.
        if latency_target && state.latency.is_none() {
            state.latency = Some(LatencyState::default());
        }
        state.readable = true;
        tracing::info!(log = %log, resumed = position.is_some(), "following");
        store.write().streams.insert(id, state.into());
        GcLogSource {
            id,
            follower: Follower::new(live, source.start_at, position),
            parser,
            last_data: Instant::now(),
            last_clock_probe: None,
            configured_start: source.jvm_start.is_some(),
        }
    }

    /// For a log without wall-clock time and no configured start, anchors the
    /// parser to the start of the JVM writing it, found in /proc.
    fn probe_jvm_start(&mut self, store: &Store) {
        let needed = self.parser.stats().lines == 0
            || store
                .write()
                .streams
                .get(&self.id)
                .is_some_and(|s| s.jvm.minutes.unplaced_events > 0);
        if !needed
            || self.configured_start
            || self.parser.run().anchor.is_some()
            || self
                .last_clock_probe
                .is_some_and(|t| t.elapsed() < CLOCK_PROBE_INTERVAL)
            || !self.follower.live_path().exists()
        {
            return;
        }
        self.last_clock_probe = Some(Instant::now());
        if let Some(start) = super::procfs::jvm_start_for_log(self.follower.live_path()) {
            self.parser.anchor_jvm_start(start);
            tracing::info!(log = %self.follower.live_path().display(), "uptime-only log anchored to its JVM's start from /proc");
        }
    }
}

/// Folds `events` into stream `id` under one lock.
fn apply(store: &Store, id: StreamId, parser: &GcLogParser, events: &mut Vec<GcEvent>) {
    if events.is_empty() {
        return;
    }
    let mut state = store.write();
    let Some(stream) = state.stream_mut(id) else {
        return;
    };
    if events.iter().any(|e| matches!(e, GcEvent::JvmRestart(_))) {
        tracing::info!(log = %stream.log, "JVM restarted");
    }
    let StreamState { jvm, latency, .. } = stream;
    jvm.ingest(parser.run(), events, latency.as_mut());
    stream.last_event_processed_at = Some(Utc::now());
    events.clear();
}

impl Source for GcLogSource {
    fn key(&self) -> SourceKey {
        SourceKey::GcLog(self.follower.live_path().display().to_string())
    }

    fn poll(&mut self, store: &Store) -> bool {
        self.probe_jvm_start(store);
        let (id, parser) = (self.id, &mut self.parser);
        let mut events = Vec::new();
        let outcome = self.follower.poll(&mut |chunk| {
            parser.feed(chunk, &mut events);
            if events.len() >= APPLY_BATCH {
                apply(store, id, parser, &mut events);
            }
        });
        let mut changed = outcome.bytes_read > 0;
        if changed {
            self.last_data = Instant::now();
        } else if self.last_data.elapsed() >= PENDING_FLUSH_AFTER {
            parser.flush(&mut events);
            changed = !events.is_empty();
        }
        apply(store, id, parser, &mut events);
        let mut state = store.write();
        if let Some(stream) = state.stream_mut(id) {
            stream.parse = parser.stats().clone();
            stream.read_lag_bytes = outcome.lag_bytes;
            stream.files_followed = outcome.files_known;
            stream.readable = outcome.readable;
            for note in &outcome.notes {
                report_note(note, self.follower.live_path(), &mut stream.errors);
            }
        }
        changed
    }

    fn checkpoint(&self, state: &AgentState) -> SourceCheckpoint {
        SourceCheckpoint::GcLog(Box::new(GcLogCheckpoint {
            log: self.follower.live_path().display().to_string(),
            position: self.follower.position(),
            parser: self.parser.clone(),
            state: state.streams.get(&self.id).cloned().unwrap_or_default(),
        }))
    }

    fn watch_dir(&self) -> Option<&Path> {
        self.follower.live_path().parent()
    }
}
