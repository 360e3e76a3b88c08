//! A service's access log: followed like a GC log, parsed in its configured
//! format, each request handed to the latency state of the GC stream of the
//! JVM that served it.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessFormat, AccessLogParser, AccessStats, Request};

use super::reading::{FileRead, Reading, Update};
use super::{read_batched, report_notes, NewStream, Source, SourceCheckpoint, SourceKey};
use crate::config::{self, AccessTarget};
use crate::follow::{Follower, Position};
use crate::model::correlate::RequestTiming;
use crate::model::latency::MalformedWindow;
use crate::store::{AccessStreamState, AgentState, StreamId};

/// Requests held for a GC stream that does not exist yet: the service's
/// log is often found before its JVM's (a glob that matches once the JVM
/// starts). At most this many are held...
const HOLD_AT_MOST: usize = 100_000;
/// ...for at most this long after they were read; then they are counted
/// unattributed.
const HOLD_FOR: chrono::Duration = chrono::Duration::minutes(10);

/// A request waiting for its GC stream.
#[derive(Debug, Clone)]
pub struct HeldRequest {
    pub read_at: DateTime<Utc>,
    pub request: Request,
}

#[derive(Debug, Clone)]
pub struct AccessLogCheckpoint {
    pub log: String,
    pub position: Option<Position>,
    pub parser: AccessLogParser,
    pub state: Arc<AccessStreamState>,
    /// Requests read but not handed over yet: they are past `position`.
    pub held: VecDeque<HeldRequest>,
}

pub struct AccessLogSource {
    id: StreamId,
    follower: Follower,
    parser: AccessLogParser,
    /// The JVM that serves these requests.
    target: AccessTarget,
    offset: chrono::Duration,
    held: VecDeque<HeldRequest>,
    malformed: Malformed,
}

impl AccessLogSource {
    /// Starts following `live`; `None` when its format cannot build a parser.
    pub fn start(
        mut new: NewStream,
        source: &config::AccessLogSource,
        reading: &mut Reading,
    ) -> Option<AccessLogSource> {
        let (log, restored) = new.resume(|checkpoint| match checkpoint {
            SourceCheckpoint::AccessLog(checkpoint) => Some(checkpoint),
            _ => None,
        });
        let (position, parser, state, held) = match restored {
            Some(checkpoint) => (
                checkpoint.position,
                checkpoint.parser,
                Arc::unwrap_or_clone(checkpoint.state),
                checkpoint.held,
            ),
            None => {
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
                (None, parser, state, VecDeque::new())
            }
        };
        tracing::info!(log = %log, resumed = position.is_some(), "following access log");
        let malformed = Malformed {
            window: state.malformed_window,
            warned: state.malformed_warned,
            counted: counted(&state.stats),
        };
        reading.push(Update::AccessStream(new.id, state.into()));
        Some(AccessLogSource {
            id: new.id,
            follower: new.follower(position),
            parser,
            target: source.target.clone(),
            offset: pausewatch_parsers::seconds_to_duration(source.offset_seconds),
            held,
            malformed,
        })
    }
}

/// The stream of the JVM an access log names: its GC log's, or the
/// newest discovered JVM that matches (after a restart, the new JVM).
fn target_stream(state: &AgentState, target: &AccessTarget) -> Option<StreamId> {
    match target {
        AccessTarget::GcLog(link) => state.stream_by_log(link),
        AccessTarget::Jvm(selector) => (state.streams.iter().rev())
            .filter(|(_, stream)| !stream.exited)
            .find(|(_, stream)| {
                (stream.discovered.as_ref())
                    .is_some_and(|jvm| selector.selects(&stream.labels, &jvm.ports))
            })
            .map(|(id, _)| *id),
    }
}

/// Hands `held`, then `requests`, to the stream of the JVM `target` names
/// (beside the kernel's figures when the kernel measures it); while that
/// stream does not exist, holds them (bounded) and counts those given up
/// on unattributed. `true` when held requests were handed over or given up
/// on.
fn hand_over(
    reading: &mut Reading,
    access: StreamId,
    target: &AccessTarget,
    offset: chrono::Duration,
    held: &mut VecDeque<HeldRequest>,
    requests: &mut Vec<Request>,
) -> bool {
    if requests.is_empty() && held.is_empty() {
        return false;
    }
    let was_held = held.len();
    if let Some(target) = reading.look(|state| target_stream(state, target)) {
        let waited = held.drain(..).map(|held| held.request);
        let requests = waited
            .chain(requests.drain(..))
            .map(|request| RequestTiming {
                start: (request.start.checked_add_signed(offset)).unwrap_or(request.start),
                duration_s: request.duration_s,
            });
        reading.push(Update::ServiceRequests {
            access,
            target,
            requests: requests.collect(),
        });
        return was_held > 0;
    }
    let now = Utc::now();
    held.extend(requests.drain(..).map(|request| HeldRequest {
        read_at: now,
        request,
    }));
    let mut given_up = 0;
    while held.len() > HOLD_AT_MOST || held.front().is_some_and(|h| now - h.read_at > HOLD_FOR) {
        held.pop_front();
        given_up += 1;
    }
    if given_up > 0 {
        reading.push(Update::Unattributed {
            access,
            requests: given_up,
        });
    }
    held.len() != was_held
}

/// Lines needed before a wrong format is reported: a few bad lines at the
/// start (a truncated first line) are no reason to.
const WARN_AFTER_LINES: u64 = 100;
/// Share of malformed lines above which the format is taken to be wrong.
const WARN_ABOVE_RATIO: f64 = 0.5;

/// Lines read and lines not parsed, by the parser's counters.
fn counted(stats: &AccessStats) -> (u64, u64) {
    let bad = stats.malformed + stats.too_long;
    (stats.requests + bad, bad)
}

/// The share of malformed lines among the last ones read
/// (`pausewatch_access_log_malformed_ratio`, kept in the access stream),
/// for a wrong format.
#[derive(Debug, Clone, Copy, Default)]
struct Malformed {
    window: MalformedWindow,
    /// The wrong-format warning was logged and the share has not fallen
    /// back since: it is logged once per crossing, not every poll.
    warned: bool,
    /// [`counted`] at the last look.
    counted: (u64, u64),
}

impl Malformed {
    /// Counts the lines read since the last look into the window; the
    /// warning to log when the share first rises above half of at least
    /// 100 lines (quoting the first bad line and the format expected), once
    /// until it falls back.
    fn note(&mut self, stats: &AccessStats, format: &AccessFormat) -> Option<String> {
        let (lines, bad) = counted(stats);
        let (lines_before, bad_before) = std::mem::replace(&mut self.counted, (lines, bad));
        self.window.add(
            lines.saturating_sub(lines_before),
            bad.saturating_sub(bad_before),
        );
        let window = self.window;
        let wrong = window.lines() >= WARN_AFTER_LINES
            && window.ratio().is_some_and(|ratio| ratio > WARN_ABOVE_RATIO);
        if !wrong {
            self.warned = false;
            return None;
        }
        if std::mem::replace(&mut self.warned, true) {
            return None;
        }
        Some(format!(
            "{} of the last {} lines of the access log do not parse; first bad line: {:?}; expected {}",
            window.malformed(),
            window.lines(),
            stats.first_malformed.as_deref().unwrap_or_default(),
            format.expected()
        ))
    }
}

impl Source for AccessLogSource {
    fn key(&self) -> SourceKey {
        SourceKey::AccessLog(self.follower.live_path().display().to_string())
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        let (id, target, offset) = (self.id, &self.target, self.offset);
        let held = &mut self.held;
        let mut held_changed = false;
        let outcome = read_batched(&mut self.follower, &mut self.parser, |_, requests| {
            held_changed |= hand_over(reading, id, target, offset, held, requests);
        });
        let live = self.follower.live_path();
        if let Some(warning) = self
            .malformed
            .note(self.parser.stats(), self.parser.format())
        {
            tracing::warn!(log = %live.display(), "{warning}");
        }
        reading.push(Update::AccessLogRead {
            access: id,
            read: FileRead {
                stats: self.parser.stats().clone(),
                lag_bytes: outcome.lag_bytes,
                files_followed: outcome.files_known,
                readable: outcome.readable,
                errors: report_notes(&outcome.notes, live),
            },
            malformed: self.malformed.window,
            malformed_warned: self.malformed.warned,
        });
        outcome.bytes_read > 0 || held_changed
    }

    fn checkpoint(&self, state: &AgentState) -> Option<SourceCheckpoint> {
        Some(SourceCheckpoint::AccessLog(Box::new(AccessLogCheckpoint {
            log: self.follower.live_path().display().to_string(),
            position: self.follower.position(),
            parser: self.parser.clone(),
            state: state
                .access_streams
                .get(&self.id)
                .cloned()
                .unwrap_or_default(),
            held: self.held.clone(),
        })))
    }

    fn watch_dir(&self) -> Option<&Path> {
        self.follower.live_path().parent()
    }

    fn live_path(&self) -> Option<&Path> {
        Some(self.follower.live_path())
    }

    fn due(&self) -> bool {
        false
    }

    fn stream(&self) -> Option<StreamId> {
        Some(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Discovered, Store, StreamState};

    fn request() -> Request {
        Request {
            start: Utc::now(),
            duration_s: 0.01,
        }
    }

    /// The field report: a log written as `$msec $request_time "$request"
    /// $status` read with the `nginx` preset, every line rejected, silently.
    #[test]
    fn a_log_in_the_wrong_format_is_reported_once_with_its_first_line_and_the_expected_format() {
        let format = AccessFormat::preset("nginx").unwrap();
        let mut parser = AccessLogParser::new(format.clone(), 64 * 1024).unwrap();
        let line = "1700000000.500 0.250 \"GET /api/orders HTTP/1.1\" 200\n";
        let mut malformed = Malformed::default();
        let mut out = Vec::new();
        parser.feed(line.repeat(99).as_bytes(), &mut out);
        assert_eq!(
            malformed.note(parser.stats(), &format),
            None,
            "under 100 lines"
        );
        parser.feed(line.repeat(2901).as_bytes(), &mut out);
        let warning = malformed.note(parser.stats(), &format).expect("a warning");
        assert!(
            warning.contains(line.trim_end().replace('"', "\\\"").as_str()),
            "{warning}"
        );
        assert!(warning.contains("$request_time $msec"), "{warning}");
        assert_eq!(malformed.window.ratio(), Some(1.0));
        parser.feed(line.as_bytes(), &mut out);
        assert_eq!(malformed.note(parser.stats(), &format), None, "once");
        assert!(out.is_empty());
    }

    #[test]
    fn requests_wait_for_their_gc_stream_and_are_given_up_after_the_hold() {
        let store = Store::default();
        let id = StreamId(1);
        store.write().access_streams.insert(id, Arc::default());
        let mut held = VecDeque::from([HeldRequest {
            read_at: Utc::now() - HOLD_FOR - chrono::Duration::seconds(1),
            request: request(),
        }]);
        let mut requests = vec![request(), request()];
        let gc_log = AccessTarget::GcLog("gc.log".into());
        assert!(hand_over(
            &mut Reading::new(&store, crate::agent::apply),
            id,
            &gc_log,
            chrono::Duration::zero(),
            &mut held,
            &mut requests
        ));
        assert_eq!(held.len(), 2, "the new ones wait");
        assert_eq!(store.write().access_streams[&id].unattributed_requests, 1);
        store.write().streams.insert(
            StreamId(2),
            Arc::new(StreamState {
                log: "gc.log".to_string(),
                ..StreamState::default()
            }),
        );
        hand_over(
            &mut Reading::new(&store, crate::agent::apply),
            id,
            &gc_log,
            chrono::Duration::zero(),
            &mut held,
            &mut requests,
        );
        assert!(held.is_empty());
        let state = store.write();
        let latency = state.streams[&StreamId(2)].latency.as_ref().unwrap();
        assert_eq!(latency.counters.requests, 2);
    }

    #[test]
    fn a_discovered_jvm_gets_its_access_log_beside_the_kernels_figures() {
        let store = Store::default();
        let id = StreamId(1);
        store.write().access_streams.insert(id, Arc::default());
        let jvm = |pid, ports: &[u16], exited| StreamState {
            exited,
            discovered: Some(Discovered {
                pid,
                ports: ports.to_vec(),
                ..Discovered::default()
            }),
            ..StreamState::default()
        };
        let target = AccessTarget::Jvm(config::JvmSelector {
            port: Some(8080),
            labels: Default::default(),
        });
        {
            let mut state = store.write();
            // The JVM before a restart, gone; another JVM; the new one.
            state
                .streams
                .insert(StreamId(2), jvm(10, &[8080], true).into());
            state
                .streams
                .insert(StreamId(3), jvm(11, &[9090], false).into());
            state
                .streams
                .insert(StreamId(4), jvm(12, &[8080, 8081], false).into());
        }
        let mut held = VecDeque::new();
        let mut read = |count: usize| {
            let mut requests = (0..count).map(|_| request()).collect();
            let reading = &mut Reading::new(&store, crate::agent::apply);
            let offset = chrono::Duration::zero();
            hand_over(reading, id, &target, offset, &mut held, &mut requests);
        };
        read(1);
        let latency = |state: &AgentState, id| state.streams[&StreamId(id)].latency.clone();
        {
            let state = store.write();
            assert!(latency(&state, 2).is_none() && latency(&state, 3).is_none());
            assert_eq!(latency(&state, 4).unwrap().counters.requests, 1);
        }
        // The kernel's requests come: the access log's go beside them.
        let timing = RequestTiming {
            start: Utc::now(),
            duration_s: 0.2,
        };
        let mut state = store.write();
        let stream = state.stream_mut(StreamId(4)).unwrap();
        stream.kernel_latency().add_port_request(timing, 8080);
        drop(state);
        read(2);
        let state = store.write();
        let kernel = latency(&state, 4).unwrap();
        assert_eq!(kernel.counters.requests, 1);
        assert_eq!(kernel.server.unwrap().counters.requests, 3);
    }
}
