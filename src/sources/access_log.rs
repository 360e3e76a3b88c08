//! A service's access log: followed like a GC log, parsed in its configured
//! format, each request handed to the latency state of the GC stream of the
//! JVM that served it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pausewatch_parsers::{AccessLogParser, Request};
use serde::{Deserialize, Serialize};

use super::{report_note, Source, SourceCheckpoint, SourceKey};
use crate::config;
use crate::follow::{FollowOptions, Follower, Position};
use crate::model::correlate::RequestTiming;
use crate::model::latency::LatencyState;
use crate::store::{AccessStreamState, AgentState, Store, StreamId};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessLogCheckpoint {
    pub log: String,
    pub position: Option<Position>,
    pub parser: AccessLogParser,
    pub state: Arc<AccessStreamState>,
}

pub struct AccessLogSource {
    id: StreamId,
    follower: Follower,
    parser: AccessLogParser,
    /// The live path of the GC log whose JVM serves these requests.
    link: String,
    offset: chrono::Duration,
}

impl AccessLogSource {
    /// Starts following `live`; `None` when its format cannot build a parser.
    pub fn start(
        id: StreamId,
        source: &config::AccessLogSource,
        live: PathBuf,
        restored: Option<SourceCheckpoint>,
        follow: FollowOptions,
        store: &Store,
    ) -> Option<AccessLogSource> {
        let log = live.display().to_string();
        let (position, parser, state) = match restored {
            Some(SourceCheckpoint::AccessLog(checkpoint)) => (
                checkpoint.position,
                checkpoint.parser,
                Arc::unwrap_or_clone(checkpoint.state),
            ),
            _ => {
                let parser =
                    match AccessLogParser::new(source.format.clone(), source.max_line_bytes) {
                        Ok(parser) => parser,
                        Err(error) => {
                            tracing::error!(log = %log, %error, "access log format rejected");
                            return None;
                        }
                    };
                let state = AccessStreamState {
                    log: log.clone(),
                    readable: true,
                    ..AccessStreamState::default()
                };
                (None, parser, state)
            }
        };
        tracing::info!(log = %log, resumed = position.is_some(), "following access log");
        store.write().access_streams.insert(id, state.into());
        Some(AccessLogSource {
            id,
            follower: Follower::new(live, follow, position),
            parser,
            link: source.gc_log.clone(),
            offset: pausewatch_parsers::seconds_to_duration(source.offset_seconds),
        })
    }
}

/// Requests handed over under one lock at most, as GC events are.
const HAND_OVER_BATCH: usize = 4096;

/// Hands `requests` to the GC stream whose live path is `link`, under one
/// lock, or counts them unattributed while that stream does not exist.
fn hand_over(
    store: &Store,
    id: StreamId,
    link: &str,
    offset: chrono::Duration,
    requests: &mut Vec<Request>,
) {
    if requests.is_empty() {
        return;
    }
    let mut state = store.write();
    let target = state.stream_by_log(link);
    let target_labels = target.and_then(|target| {
        let stream = state.stream_mut(target)?;
        let latency = stream.latency.get_or_insert_with(LatencyState::default);
        for request in requests.iter() {
            latency.add_request(RequestTiming {
                start: request
                    .start
                    .checked_add_signed(offset)
                    .unwrap_or(request.start),
                duration_s: request.duration_s,
            });
        }
        Some((stream.log.clone(), stream.labels.clone()))
    });
    if let Some(access) = state.access_mut(id) {
        match target_labels {
            Some((log, labels)) => {
                access.target = Some(log);
                access.labels = labels;
            }
            None => access.unattributed_requests += requests.len() as u64,
        }
    }
    requests.clear();
}

impl Source for AccessLogSource {
    fn key(&self) -> SourceKey {
        SourceKey::AccessLog(self.follower.live_path().display().to_string())
    }

    fn poll(&mut self, store: &Store) -> bool {
        let mut requests = Vec::new();
        let (id, link, offset) = (self.id, self.link.as_str(), self.offset);
        let parser = &mut self.parser;
        let outcome = self.follower.poll(&mut |chunk| {
            parser.feed(chunk, &mut requests);
            if requests.len() >= HAND_OVER_BATCH {
                hand_over(store, id, link, offset, &mut requests);
            }
        });
        hand_over(store, id, link, offset, &mut requests);
        let mut state = store.write();
        if let Some(access) = state.access_mut(self.id) {
            access.stats = self.parser.stats().clone();
            access.read_lag_bytes = outcome.lag_bytes;
            access.readable = outcome.readable;
            for note in &outcome.notes {
                report_note(note, self.follower.live_path(), &mut access.errors);
            }
        }
        outcome.bytes_read > 0
    }

    fn checkpoint(&self, state: &AgentState) -> SourceCheckpoint {
        SourceCheckpoint::AccessLog(Box::new(AccessLogCheckpoint {
            log: self.follower.live_path().display().to_string(),
            position: self.follower.position(),
            parser: self.parser.clone(),
            state: state
                .access_streams
                .get(&self.id)
                .cloned()
                .unwrap_or_default(),
        }))
    }

    fn watch_dir(&self) -> Option<&Path> {
        self.follower.live_path().parent()
    }
}
