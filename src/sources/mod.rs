//! Every input of the agent behind one trait: GC logs, access logs and
//! latency histograms today; runtime stats and /proc discovery next.
//!
//! A [`Source`] reads without holding the store's lock, applies what it read
//! under one short lock, reports its own health in its stream's state and
//! says what a restart needs to resume ([`SourceCheckpoint`]). The
//! [`Registry`] builds sources from the configuration, finds the streams a
//! glob names as they appear, and hands each its checkpoint back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use pausewatch_parsers::StreamParser;
use serde::{Deserialize, Serialize};

use crate::config::{Config, CorrelationConfig};
use crate::follow::{discover, Follower, Note, PollOutcome};
use crate::model::correlate::AttributionOptions;
use crate::model::latency::CorrelationSettings;
use crate::store::{AgentState, Store, StreamId};

pub mod access_log;
pub mod gc_log;
pub mod latency_histogram;
pub mod procfs;

/// One input of the agent.
pub trait Source: Send {
    /// What the checkpoint file knows this source by.
    fn key(&self) -> SourceKey;
    /// Reads what is new and applies it to the store; `true` when anything
    /// changed that a checkpoint should record.
    fn poll(&mut self, store: &Store) -> bool;
    /// What a restart needs to resume exactly where this source is now,
    /// given a snapshot of the store.
    fn checkpoint(&self, state: &AgentState) -> SourceCheckpoint;
    /// The directory whose file events should wake the agent, for file sources.
    fn watch_dir(&self) -> Option<&Path> {
        None
    }
    /// Whether a file event on `path` concerns this source, so that a busy
    /// host polls only the files that changed between full polls.
    fn reads(&self, _path: &Path) -> bool {
        false
    }
    /// Whether this source must be polled now even though none of its files
    /// changed (a timer of its own, a channel to drain).
    fn due(&self) -> bool {
        true
    }
}

/// Whether `path` is `live` or one of its rotations: the files whose events
/// concern a follower of `live`.
pub fn is_live_or_rotated(live: &Path, path: &Path) -> bool {
    path.parent() == live.parent()
        && match (live.file_name(), path.file_name()) {
            (Some(live), Some(name)) => {
                name.as_encoded_bytes().starts_with(live.as_encoded_bytes())
            }
            _ => false,
        }
}

/// A source's identity in the checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SourceKey {
    GcLog(String),
    AccessLog(String),
    LatencyHistogram(String),
}

/// Everything one source needs after a restart, keyed by kind
/// (`{"gc_log": {...}}`). Not internally tagged: serde buffers such enums
/// in a form that cannot read maps keyed by numbers, which the minutes are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceCheckpoint {
    GcLog(Box<gc_log::GcLogCheckpoint>),
    AccessLog(Box<access_log::AccessLogCheckpoint>),
    LatencyHistogram(latency_histogram::HistogramCheckpoint),
}

impl SourceCheckpoint {
    pub fn key(&self) -> SourceKey {
        match self {
            SourceCheckpoint::GcLog(c) => SourceKey::GcLog(c.log.clone()),
            SourceCheckpoint::AccessLog(c) => SourceKey::AccessLog(c.log.clone()),
            SourceCheckpoint::LatencyHistogram(c) => SourceKey::LatencyHistogram(c.key.clone()),
        }
    }
}

/// Records applied to the store under one lock at most: a catch-up read of
/// a large file must not hold gigabytes of records, nor the lock for long.
const APPLY_BATCH: usize = 4096;

/// Reads what is new in a followed file through `parser`, handing the
/// records to `apply` in batches of at most [`APPLY_BATCH`] (and once more
/// at the end, possibly empty): the one read loop of every file source.
pub fn read_batched<P: StreamParser>(
    follower: &mut Follower,
    parser: &mut P,
    mut apply: impl FnMut(&mut P, &mut Vec<P::Output>),
) -> PollOutcome {
    let mut records = Vec::new();
    let outcome = follower.poll(&mut |chunk| {
        parser.feed(chunk, &mut records);
        if records.len() >= APPLY_BATCH {
            apply(parser, &mut records);
        }
    });
    apply(parser, &mut records);
    outcome
}

/// Logs a follower's note and counts the errors among them in `errors`;
/// the same for every file source.
pub fn report_note(note: &Note, live: &Path, errors: &mut BTreeMap<String, u64>) {
    let log = live.display();
    let count = |errors: &mut BTreeMap<String, u64>, kind: &str| {
        crate::store::count_error(errors, kind);
    };
    match note {
        Note::Opened(path) => tracing::info!(log = %log, file = %path.display(), "reading"),
        Note::Rotated => tracing::info!(log = %log, "rotated"),
        Note::Truncated => {
            tracing::warn!(log = %log, "truncated or rewritten in place");
            count(errors, "truncated");
        }
        Note::RecoveredFromCopy(path) => {
            tracing::info!(log = %log, copy = %path.display(), "read the unread tail from the rotated copy")
        }
        Note::CheckpointFileGone => {
            tracing::warn!(log = %log, "checkpointed file is gone; reading the live file from its start");
            count(errors, "checkpoint_file_gone");
        }
        Note::Unreadable(message) => {
            tracing::error!(log = %log, error = %message, "unreadable");
            count(errors, "unreadable");
        }
        Note::Missing => {
            tracing::warn!(log = %log, "log file missing");
            count(errors, "missing");
        }
    }
}

/// How the agent attributes and correlates, from `[correlation]`.
fn correlation_settings(correlation: &CorrelationConfig) -> CorrelationSettings {
    CorrelationSettings {
        attribution: AttributionOptions {
            slo_seconds: correlation.slo.map(|d| d.as_secs_f64()),
            affected_share: correlation.affected_share,
        },
        window_minutes: (correlation.window.as_secs() / 60).max(1) as usize,
        min_minutes: correlation.min_minutes,
        finalize_after_seconds: correlation.finalize_after.as_secs() as i64,
    }
}

/// Builds sources from the configuration as their streams appear, each
/// with its checkpoint when it had one.
pub struct Registry {
    config: Config,
    settings: CorrelationSettings,
    restored: BTreeMap<SourceKey, SourceCheckpoint>,
    known: BTreeSet<SourceKey>,
    next_id: u64,
    writers: Arc<Mutex<procfs::JvmLogWriters>>,
}

impl Registry {
    pub fn new(config: Config, restored: Vec<SourceCheckpoint>) -> Registry {
        let settings = correlation_settings(&config.correlation);
        Registry {
            config,
            settings,
            restored: restored.into_iter().map(|c| (c.key(), c)).collect(),
            known: BTreeSet::new(),
            next_id: 0,
            writers: Arc::default(),
        }
    }

    pub fn settings(&self) -> &CorrelationSettings {
        &self.settings
    }

    fn next_id(&mut self) -> StreamId {
        self.next_id += 1;
        StreamId(self.next_id)
    }

    /// The restored checkpoint of `key`, if this source has not started yet.
    fn take_new(&mut self, key: SourceKey) -> Option<Option<SourceCheckpoint>> {
        if !self.known.insert(key.clone()) {
            return None;
        }
        Some(self.restored.remove(&key))
    }

    /// Whether a latency source names the GC stream `log`.
    fn is_latency_target(&self, log: &str) -> bool {
        let links = self.config.access_log.iter().map(|a| &a.gc_log);
        let histogram_links = self.config.latency_histogram.iter().map(|h| &h.gc_log);
        links.chain(histogram_links).any(|link| link == log)
    }

    /// Sources for streams that appeared since the last call; new GC
    /// streams first, so that an access log finds the stream it feeds.
    pub fn discover(&mut self, store: &Store) -> Vec<Box<dyn Source>> {
        let mut found: Vec<Box<dyn Source>> = Vec::new();
        for source in self.config.gc_log.clone() {
            for live in discover(&source.path) {
                let log = live.display().to_string();
                let Some(restored) = self.take_new(SourceKey::GcLog(log.clone())) else {
                    continue;
                };
                let id = self.next_id();
                let latency = self.is_latency_target(&log);
                found.push(Box::new(gc_log::GcLogSource::start(
                    id,
                    &source,
                    live,
                    restored,
                    latency,
                    self.writers.clone(),
                    store,
                )));
            }
        }
        for source in self.config.access_log.clone() {
            for live in discover(&source.path) {
                let log = live.display().to_string();
                let Some(restored) = self.take_new(SourceKey::AccessLog(log.clone())) else {
                    continue;
                };
                let id = self.next_id();
                if let Some(access) =
                    access_log::AccessLogSource::start(id, &source, live, restored, store)
                {
                    found.push(Box::new(access));
                }
            }
        }
        for source in self.config.latency_histogram.clone() {
            let key = latency_histogram::source_key(&source);
            let Some(restored) = self.take_new(SourceKey::LatencyHistogram(key)) else {
                continue;
            };
            found.push(Box::new(latency_histogram::HistogramSource::start(
                &source, restored,
            )));
        }
        found
    }

    /// Checkpoints of sources not seen this run, kept for when they return.
    pub fn unclaimed(&self) -> impl Iterator<Item = &SourceCheckpoint> {
        self.restored.values()
    }
}
