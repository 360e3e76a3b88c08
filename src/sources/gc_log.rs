//! A JVM's GC log: followed through rotation, parsed, folded into the JVM's
//! model. Uptime-only logs are anchored to their JVM's start from /proc.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pausewatch_parsers::{line_time, GcEvent, GcLogParser, LogTime, ParserOptions};

use super::procfs::JvmLogWriters;
use super::reading::{FileRead, Origin, Reading, Update};
use super::{read_batched, report_notes, NewStream, Source, SourceCheckpoint, SourceKey};
use crate::config;
use crate::follow::{has_glob_chars, open_regular, Follower, Position};
use crate::model::jvm::LabelCap;
use crate::store::{AgentState, StreamId, StreamState};

/// A pause waits for its CPU-times line; after this much quiet it is emitted without.
const PENDING_FLUSH_AFTER: Duration = Duration::from_millis(200);
/// How often /proc is searched for the start of a JVM whose log has uptime only.
const CLOCK_PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// How long the first read of an uptime-only log waits for /proc to show
/// the JVM writing it: a JVM started after the agent writes its first pauses
/// before a scan has seen it, and read then they would have no time.
const ANCHOR_WAIT: Duration = Duration::from_secs(3);

/// Lines read from the head of each file to find its first timestamp...
const ORDERING_PROBE_LINES: usize = 200;
/// ...and bytes at most: a file of one endless line cannot grow the buffer.
const ORDERING_PROBE_BYTES: u64 = 256 * 1024;

/// The time of the first line of `path` that carries one; `None` for a
/// path that is not a regular file (a FIFO would block the open).
fn first_time(path: &Path) -> Option<LogTime> {
    first_time_in(open_regular(path).ok()?)
}

/// The time of the first line of `file` that carries one.
fn first_time_in(file: File) -> Option<LogTime> {
    let reader = BufReader::new(file.take(ORDERING_PROBE_BYTES));
    reader
        .split(b'\n')
        .take(ORDERING_PROBE_LINES)
        .map_while(Result::ok)
        .find_map(|line| line_time(&String::from_utf8_lossy(&line)))
}

/// Puts a rotated set in time order by each file's first timestamp:
/// wall-clock when every file has one, else uptime; otherwise (a file
/// without either, or unreadable) the order given. HotSpot's numbers wrap
/// around, and copies lose modification times.
pub fn oldest_first(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut keyed: Vec<(PathBuf, Option<LogTime>)> = paths
        .into_iter()
        .map(|path| {
            let time = first_time(&path);
            (path, time)
        })
        .collect();
    if keyed
        .iter()
        .all(|(_, t)| t.is_some_and(|t| t.wall.is_some()))
    {
        keyed.sort_by_key(|(_, t)| t.and_then(|t| t.wall));
    } else if keyed
        .iter()
        .all(|(_, t)| t.is_some_and(|t| t.uptime_s.is_some()))
    {
        keyed.sort_by(|(_, a), (_, b)| {
            let (a, b) = (a.and_then(|t| t.uptime_s), b.and_then(|t| t.uptime_s));
            a.partial_cmp(&b).unwrap_or(Ordering::Equal)
        });
    }
    keyed.into_iter().map(|(path, _)| path).collect()
}

/// What a restart needs: where reading stopped, the parser's unfinished
/// state and the aggregates that reflect exactly the bytes before it.
#[derive(Debug, Clone)]
pub struct GcLogCheckpoint {
    pub log: String,
    pub position: Option<Position>,
    pub parser: GcLogParser,
    pub state: Arc<StreamState>,
    /// For a log discovery found: its writer, `pid@start_ticks`. Resumed
    /// only for that process; after its exit the stream is kept as exited.
    pub writer: Option<String>,
}

pub struct GcLogSource {
    id: StreamId,
    follower: Follower,
    parser: GcLogParser,
    last_data: Instant,
    /// Last look in /proc for the JVM's start, for an uptime-only log.
    last_clock_probe: Option<Instant>,
    /// Since when the first read waits for the JVM's start ([`ANCHOR_WAIT`]).
    awaiting_anchor_since: Option<Instant>,
    /// Whether the configuration gives the JVM start (then /proc is not asked).
    configured_start: bool,
    /// Which process writes which log, shared by every GC log source.
    writers: Arc<Mutex<JvmLogWriters>>,
    /// For a file a glob matched: how long it may be missing before the
    /// stream is dropped. A configured path is never dropped: its absence
    /// is what `StaleGcLog` reports.
    forget_after: Option<Duration>,
    /// For a log discovery found, its writer (see [`GcLogCheckpoint::writer`]).
    writer: Option<String>,
    /// Readable, lag and files followed as last written to the stream.
    reported: Option<(bool, u64, u64)>,
    /// The live file (device, inode) whose first timestamp was read, and
    /// whether it was uptime only.
    first_time_of: Option<((u64, u64), bool)>,
}

/// Whether a latency source (an access log, a histogram) names a GC
/// stream: its requests are then lined up with the stream's stops, which
/// it records from its first event on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    LinedUp,
    None,
}

impl GcLogSource {
    /// The same source, for a log only one process writes: a new process
    /// writing it after that one exited is another stream's (see
    /// [`Follower::of_one_writer`]).
    pub fn of_one_writer(self, still_writing: crate::follow::StillWriting) -> GcLogSource {
        GcLogSource {
            follower: self.follower.of_one_writer(still_writing),
            ..self
        }
    }

    /// The same source, for the log discovery found that `writer`
    /// (`pid@start_ticks`) writes.
    pub fn found_for(self, writer: String) -> GcLogSource {
        GcLogSource {
            writer: Some(writer),
            ..self
        }
    }

    /// Starts following `live`, resuming from `restored` when there is one,
    /// and hands over its stream.
    pub fn start(
        mut new: NewStream,
        source: &config::GcLogSource,
        requests: Requests,
        writers: Arc<Mutex<JvmLogWriters>>,
        reading: &mut Reading,
    ) -> GcLogSource {
        let (log, restored) = new.resume(|checkpoint| match checkpoint {
            SourceCheckpoint::GcLog(checkpoint) => Some(checkpoint),
            _ => None,
        });
        let (position, parser, mut state) = match restored {
            Some(checkpoint) => (
                checkpoint.position,
                checkpoint.parser,
                Arc::unwrap_or_clone(checkpoint.state),
            ),
            None => (
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
        state.jvm.recent_pauses.capacity = source.pause_records;
        if requests == Requests::LinedUp {
            state.service_latency();
        }
        state.readable = true;
        tracing::info!(log = %log, resumed = position.is_some(), "following");
        reading.push(Update::Stream(new.id, state.into()));
        GcLogSource {
            id: new.id,
            follower: new.follower(position),
            parser,
            last_data: Instant::now(),
            last_clock_probe: None,
            awaiting_anchor_since: None,
            configured_start: source.jvm_start.is_some(),
            writers,
            forget_after: has_glob_chars(&source.path).then_some(source.forget_after),
            writer: None,
            reported: None,
            first_time_of: None,
        }
    }

    /// For a log without wall-clock time and no configured start, anchors the
    /// parser to the start of the JVM writing it, found in /proc.
    /// Before the first read it looks at the file's first timestamp: a log
    /// with wall-clock decorations needs no anchor (and must not be logged
    /// as uptime-only).
    /// `true` while the first read should wait for the JVM's start.
    fn probe_jvm_start(&mut self, reading: &mut Reading) -> bool {
        // Past its wait, a first read is no longer held back, and the probe
        // goes back to its interval: a file read from its end may give no
        // line for days.
        let awaiting = self
            .awaiting_anchor_since
            .is_some_and(|since| since.elapsed() < ANCHOR_WAIT);
        if self.configured_start
            || self.parser.run().anchor.is_some()
            || (!awaiting
                && self
                    .last_clock_probe
                    .is_some_and(|t| t.elapsed() < CLOCK_PROBE_INTERVAL))
        {
            return false;
        }
        let first_read = self.parser.stats().lines == 0;
        let needed = if first_read {
            self.first_time_has_no_wall_clock()
        } else {
            let id = self.id;
            reading.look(|state| {
                (state.streams.get(&id)).is_some_and(|s| s.jvm.minutes.unplaced_events > 0)
            })
        };
        if !needed {
            return false;
        }
        let fresh = self.last_clock_probe.is_none() || awaiting;
        self.last_clock_probe = Some(Instant::now());
        let start = self
            .writers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .start_of(self.follower.live_path(), fresh);
        if let Some(start) = start {
            self.parser.anchor_jvm_start(start);
            self.awaiting_anchor_since = None;
            tracing::info!(log = %self.follower.live_path().display(), "uptime-only log anchored to its JVM's start from /proc");
            return false;
        }
        first_read
            && self
                .awaiting_anchor_since
                .get_or_insert_with(Instant::now)
                .elapsed()
                < ANCHOR_WAIT
    }
}

impl GcLogSource {
    /// Whether the live file's first timestamp is uptime only, read once
    /// per file: the answer is kept with the file's identity, so a log read
    /// from its end that stays quiet costs a `stat` per probe, not an open,
    /// a path resolution and a read.
    fn first_time_has_no_wall_clock(&mut self) -> bool {
        let path = self.follower.live_path();
        let identity = |meta: &std::fs::Metadata| (meta.dev(), meta.ino());
        if let (Some((known, uptime_only)), Ok(meta)) =
            (self.first_time_of, std::fs::metadata(path))
        {
            if known == identity(&meta) {
                return uptime_only;
            }
        }
        // Through the follower's confinement: a link to `/dev/zero` or
        // `/etc/shadow` is no more read here than by the follower.
        let Ok(file) = self.follower.confine().open(path) else {
            return false;
        };
        let Ok(meta) = file.metadata() else {
            return false;
        };
        let Some(time) = first_time_in(file) else {
            // No timestamp yet (an empty file): asked again.
            return false;
        };
        let uptime_only = time.wall.is_none();
        self.first_time_of = Some((identity(&meta), uptime_only));
        uptime_only
    }
}

/// Hands over the events read for stream `id`.
fn hand_over(reading: &mut Reading, id: StreamId, parser: &GcLogParser, events: &mut Vec<GcEvent>) {
    if events.is_empty() {
        return;
    }
    reading.push(Update::GcEvents {
        stream: id,
        run: parser.run().clone(),
        events: std::mem::take(events),
        origin: Origin::GcLog,
    });
}

impl Source for GcLogSource {
    fn key(&self) -> SourceKey {
        SourceKey::GcLog(self.follower.live_path().display().to_string())
    }

    fn poll(&mut self, reading: &mut Reading) -> bool {
        if self.probe_jvm_start(reading) {
            return false;
        }
        let id = self.id;
        let outcome = read_batched(&mut self.follower, &mut self.parser, |parser, events| {
            hand_over(reading, id, parser, events)
        });
        let parser = &mut self.parser;
        let mut changed = outcome.bytes_read > 0;
        if changed {
            self.last_data = Instant::now();
        } else if self.last_data.elapsed() >= PENDING_FLUSH_AFTER {
            let mut events = Vec::new();
            parser.flush(&mut events);
            changed = !events.is_empty();
            hand_over(reading, id, parser, &mut events);
        }
        // A quiet poll leaves the stream alone: a write copies a stream that
        // a snapshot (a scrape, a probe, a checkpoint) still shares.
        let reported = (outcome.readable, outcome.lag_bytes, outcome.files_known);
        if !changed && outcome.notes.is_empty() && self.reported == Some(reported) {
            return false;
        }
        self.reported = Some(reported);
        reading.push(Update::GcLogRead {
            stream: id,
            read: FileRead {
                stats: parser.stats().clone(),
                lag_bytes: outcome.lag_bytes,
                files_followed: outcome.files_known,
                readable: outcome.readable,
                errors: report_notes(&outcome.notes, self.follower.live_path()),
            },
        });
        changed
    }

    fn checkpoint(&self, state: &AgentState) -> Option<SourceCheckpoint> {
        Some(SourceCheckpoint::GcLog(Box::new(GcLogCheckpoint {
            log: self.follower.live_path().display().to_string(),
            position: self.follower.position(),
            parser: self.parser.clone(),
            state: state.streams.get(&self.id).cloned().unwrap_or_default(),
            writer: self.writer.clone(),
        })))
    }

    fn watch_dir(&self) -> Option<&Path> {
        self.follower.live_path().parent()
    }

    fn live_path(&self) -> Option<&Path> {
        Some(self.follower.live_path())
    }

    /// A pause waiting for its CPU-times line is emitted after a quiet moment.
    fn due(&self) -> bool {
        self.parser.has_pending() && self.last_data.elapsed() >= PENDING_FLUSH_AFTER
    }

    /// When a pause waiting for its CPU-times line is flushed. Once that is
    /// past, the next pass polls it anyway (`due`): a source held back
    /// (waiting for its JVM's start) must not keep the loop spinning.
    fn wake_in(&self) -> Option<Duration> {
        let flush_in = PENDING_FLUSH_AFTER.saturating_sub(self.last_data.elapsed());
        (self.parser.has_pending() && !flush_in.is_zero()).then_some(flush_in)
    }

    fn stream(&self) -> Option<StreamId> {
        Some(self.id)
    }

    fn gone(&self) -> bool {
        self.forget_after
            .zip(self.follower.missing_for())
            .is_some_and(|(grace, missing)| missing >= grace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::follow::FollowOptions;
    use crate::store::Store;

    fn source_of(dir: &Path, line: &str) -> GcLogSource {
        let live = dir.join("gc.log");
        std::fs::write(&live, line).unwrap();
        let config = config::GcLogSource {
            path: live.display().to_string(),
            start_at: config::StartAt::default(),
            labels: Default::default(),
            jvm_start: None,
            max_line_bytes: 65536,
            follow_symlinks_outside: false,
            forget_after: config::DEFAULT_FORGET_AFTER,
            max_label_values: crate::model::jvm::DEFAULT_MAX_LABEL_VALUES,
            pause_records: 0,
        };
        let new = NewStream {
            id: StreamId(1),
            live,
            restored: None,
            follow: FollowOptions::default(),
        };
        GcLogSource::start(
            new,
            &config,
            Requests::None,
            Arc::default(),
            &mut Reading::new(&Store::default(), crate::agent::apply),
        )
    }

    /// A log decorated with wall-clock time was said to be "uptime-only" and
    /// anchored from /proc: only a log whose lines carry uptime alone is.
    #[test]
    fn only_an_uptime_only_log_looks_for_its_jvms_start() {
        let dir = tempfile::tempdir().unwrap();
        let wall = "[2026-11-30T01:53:02.123+0000][0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n";
        let mut source = source_of(dir.path(), wall);
        source.probe_jvm_start(&mut Reading::new(&Store::default(), crate::agent::apply));
        assert!(source.last_clock_probe.is_none(), "wall-clock log probed");
        let uptime = "[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n";
        let mut source = source_of(dir.path(), uptime);
        source.probe_jvm_start(&mut Reading::new(&Store::default(), crate::agent::apply));
        assert!(
            source.last_clock_probe.is_some(),
            "uptime-only log not probed"
        );
    }
}
