//! `pausewatch run`: the tailing loop. It discovers the log streams the
//! configuration names, follows each through rotation, feeds the bytes to the
//! parser and the events to the shared per-JVM state, and checkpoints
//! positions, parser state and aggregates together, atomically, so that a
//! restart after `kill -9` neither loses nor double-counts a pause.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use notify::{RecursiveMode, Watcher};
use pausewatch_parsers::{GcEvent, GcLogParser, ParserOptions};
use serde::{Deserialize, Serialize};

use crate::config::{Config, GcLogSource, StartAt};
use crate::state::{SharedState, StreamState};
use crate::tail::{Follower, Note, Position};

const CHECKPOINT_FILE: &str = "state.json";
const CHECKPOINT_VERSION: u32 = 1;
/// A pause waits for its CPU-times line; after this much quiet it is emitted without.
const PENDING_FLUSH_AFTER: Duration = Duration::from_millis(200);
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Serialize, Deserialize)]
struct StreamCheckpoint {
    log: String,
    position: Option<Position>,
    parser: GcLogParser,
    state: StreamState,
}

#[derive(Serialize, Deserialize)]
struct Checkpoint {
    version: u32,
    streams: Vec<StreamCheckpoint>,
}

struct StreamRuntime {
    follower: Follower,
    parser: GcLogParser,
    /// Index into `AgentState::streams`.
    slot: usize,
    last_data: Instant,
}

/// The file a rotated name belongs to: `gc.log.3` and `gc.log.00` belong to
/// `gc.log`, logrotate's `gc.log-20260101` too.
pub fn live_path_of(path: &Path) -> PathBuf {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().to_string()) else {
        return path.to_path_buf();
    };
    let stripped = match name.rsplit_once(['.', '-']) {
        Some((stem, suffix))
            if !stem.is_empty()
                && !suffix.is_empty()
                && suffix.bytes().all(|b| b.is_ascii_digit()) =>
        {
            stem.to_string()
        }
        _ => name,
    };
    path.with_file_name(stripped)
}

fn has_glob_chars(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Live paths of the streams a source names now.
fn discover(source: &GcLogSource) -> BTreeSet<PathBuf> {
    let mut lives = BTreeSet::new();
    if !has_glob_chars(&source.path) {
        lives.insert(PathBuf::from(&source.path));
        return lives;
    }
    if let Ok(paths) = glob::glob(&source.path) {
        for path in paths.flatten() {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if [".gz", ".bz2", ".xz", ".zst", ".zip"]
                .iter()
                .any(|s| name.ends_with(s))
            {
                continue;
            }
            lives.insert(live_path_of(&path));
        }
    }
    lives
}

pub struct Agent {
    config: Config,
    shared: SharedState,
    streams: Vec<StreamRuntime>,
    restored: Vec<StreamCheckpoint>,
    checkpoint_path: PathBuf,
    last_checkpoint: Instant,
    last_discovery: Option<Instant>,
    dirty: bool,
    watched_dirs: BTreeSet<PathBuf>,
}

impl Agent {
    /// Loads the checkpoint, if any. A corrupt checkpoint is reported and set
    /// aside rather than stopping the agent.
    pub fn new(config: Config, shared: SharedState) -> Result<Agent> {
        std::fs::create_dir_all(&config.checkpoint_dir).with_context(|| {
            format!(
                "cannot create checkpoint_dir {}",
                config.checkpoint_dir.display()
            )
        })?;
        let checkpoint_path = config.checkpoint_dir.join(CHECKPOINT_FILE);
        let restored = match std::fs::read(&checkpoint_path) {
            Ok(bytes) => match serde_json::from_slice::<Checkpoint>(&bytes) {
                Ok(checkpoint) if checkpoint.version == CHECKPOINT_VERSION => {
                    tracing::info!(path = %checkpoint_path.display(), streams = checkpoint.streams.len(), "resuming from checkpoint");
                    checkpoint.streams
                }
                Ok(_) | Err(_) => {
                    let aside = checkpoint_path.with_extension("json.unreadable");
                    tracing::error!(path = %checkpoint_path.display(), aside = %aside.display(), "checkpoint unreadable; starting fresh");
                    let _ = std::fs::rename(&checkpoint_path, &aside);
                    shared
                        .lock()
                        .expect("state lock")
                        .count_error("checkpoint_read");
                    Vec::new()
                }
            },
            Err(_) => Vec::new(),
        };
        Ok(Agent {
            config,
            shared,
            streams: Vec::new(),
            restored,
            checkpoint_path,
            last_checkpoint: Instant::now(),
            last_discovery: None,
            dirty: false,
            watched_dirs: BTreeSet::new(),
        })
    }

    /// Adds streams for live paths seen for the first time.
    fn discover_streams(&mut self, watcher: Option<&mut notify::RecommendedWatcher>) {
        let mut new_dirs = Vec::new();
        for source in self.config.gc_log.clone() {
            for live in discover(&source) {
                let log = live.display().to_string();
                let known = self
                    .shared
                    .lock()
                    .expect("state lock")
                    .streams
                    .iter()
                    .any(|s| s.log == log);
                if known {
                    continue;
                }
                self.add_stream(&source, live.clone());
                if let Some(dir) = live.parent() {
                    if self.watched_dirs.insert(dir.to_path_buf()) {
                        new_dirs.push(dir.to_path_buf());
                    }
                }
            }
        }
        if let Some(watcher) = watcher {
            for dir in new_dirs {
                if let Err(error) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %dir.display(), %error, "cannot watch; polling only");
                    self.shared.lock().expect("state lock").count_error("watch");
                }
            }
        }
        self.last_discovery = Some(Instant::now());
    }

    fn add_stream(&mut self, source: &GcLogSource, live: PathBuf) {
        let log = live.display().to_string();
        let restored = self
            .restored
            .iter()
            .position(|c| c.log == log)
            .map(|index| self.restored.swap_remove(index));
        let (position, parser, mut state) = match restored {
            Some(checkpoint) => (
                Some(checkpoint.position).flatten(),
                checkpoint.parser,
                checkpoint.state,
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
        state.readable = true;
        tracing::info!(log = %log, resumed = position.is_some(), "following");
        let mut shared = self.shared.lock().expect("state lock");
        shared.streams.push(state);
        let slot = shared.streams.len() - 1;
        drop(shared);
        self.streams.push(StreamRuntime {
            follower: Follower::new(live, source.start_at, position),
            parser,
            slot,
            last_data: Instant::now(),
        });
    }

    /// Reads every stream once and applies what it found.
    pub fn poll_once(&mut self) {
        let now = Instant::now();
        for runtime in &mut self.streams {
            let StreamRuntime {
                follower,
                parser,
                slot,
                last_data,
            } = runtime;
            let shared = &self.shared;
            let mut events = Vec::new();
            let outcome = follower.poll(&mut |chunk| {
                parser.feed(chunk, &mut events);
                if !events.is_empty() {
                    apply(shared, *slot, parser, &mut events);
                }
            });
            if outcome.bytes_read > 0 {
                *last_data = now;
                self.dirty = true;
            } else if now.duration_since(*last_data) >= PENDING_FLUSH_AFTER {
                parser.flush(&mut events);
                if !events.is_empty() {
                    self.dirty = true;
                }
            }
            apply(shared, *slot, parser, &mut events);
            let mut state = shared.lock().expect("state lock");
            let stream = &mut state.streams[*slot];
            stream.parse = parser.stats().clone();
            stream.read_lag_bytes = outcome.lag_bytes;
            stream.files_followed = outcome.files_known;
            stream.readable = outcome.readable;
            for note in &outcome.notes {
                report(stream, follower.live_path(), note);
            }
        }
    }

    /// Writes positions, parser states and aggregates in one atomic file.
    pub fn checkpoint(&mut self) -> Result<()> {
        let state = self.shared.lock().expect("state lock");
        let mut streams: Vec<StreamCheckpoint> = self
            .streams
            .iter()
            .map(|runtime| StreamCheckpoint {
                log: state.streams[runtime.slot].log.clone(),
                position: runtime.follower.position(),
                parser: runtime.parser.clone(),
                state: state.streams[runtime.slot].clone(),
            })
            .collect();
        drop(state);
        // Streams not seen this time keep their checkpoint for when they return.
        streams.extend(self.restored.iter().map(|c| StreamCheckpoint {
            log: c.log.clone(),
            position: c.position,
            parser: c.parser.clone(),
            state: c.state.clone(),
        }));
        let bytes = serde_json::to_vec(&Checkpoint {
            version: CHECKPOINT_VERSION,
            streams,
        })?;
        write_atomically(&self.checkpoint_path, &bytes)?;
        self.dirty = false;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    fn prune_history(&mut self) {
        let Ok(history) = chrono::Duration::from_std(self.config.history) else {
            return;
        };
        let oldest = Utc::now() - history;
        let mut state = self.shared.lock().expect("state lock");
        for stream in &mut state.streams {
            stream.jvm.minutes.prune_before(oldest);
        }
    }

    /// Runs until `shutdown` is set, then writes a final checkpoint.
    pub fn run(mut self, shutdown: Arc<AtomicBool>) -> Result<()> {
        let (wake, woken) = mpsc::channel::<()>();
        let mut watcher =
            match notify::recommended_watcher(move |_event: notify::Result<notify::Event>| {
                let _ = wake.send(());
            }) {
                Ok(watcher) => Some(watcher),
                Err(error) => {
                    tracing::warn!(%error, "file notifications unavailable; polling only");
                    self.shared.lock().expect("state lock").count_error("watch");
                    None
                }
            };
        self.discover_streams(watcher.as_mut());
        while !shutdown.load(Ordering::SeqCst) {
            self.poll_once();
            if self
                .last_discovery
                .is_none_or(|t| t.elapsed() >= DISCOVERY_INTERVAL)
            {
                self.discover_streams(watcher.as_mut());
                self.prune_history();
            }
            if self.dirty && self.last_checkpoint.elapsed() >= self.config.checkpoint_interval {
                if let Err(error) = self.checkpoint() {
                    tracing::error!(error = %format!("{error:#}"), "checkpoint failed");
                    self.shared
                        .lock()
                        .expect("state lock")
                        .count_error("checkpoint_write");
                }
            }
            // Woken by a file event, or the poll interval for file systems
            // where events do not arrive (NFS, some containers).
            if woken.recv_timeout(self.config.poll_interval).is_ok() {
                while woken.try_recv().is_ok() {}
            }
        }
        self.poll_once();
        self.checkpoint()
    }
}

fn apply(shared: &SharedState, slot: usize, parser: &GcLogParser, events: &mut Vec<GcEvent>) {
    if events.is_empty() {
        return;
    }
    let mut state = shared.lock().expect("state lock");
    let stream = &mut state.streams[slot];
    stream.jvm.note_run(parser.run());
    for event in events.iter() {
        if let GcEvent::JvmRestart(_) = event {
            tracing::info!(log = %stream.log, "JVM restarted");
        }
        stream.jvm.apply(event);
    }
    stream.last_event_processed_at = Some(Utc::now());
    events.clear();
}

fn report(stream: &mut StreamState, live: &Path, note: &Note) {
    match note {
        Note::Opened(path) => {
            tracing::info!(log = %live.display(), file = %path.display(), "reading")
        }
        Note::Rotated => tracing::info!(log = %live.display(), "rotated"),
        Note::Truncated => {
            tracing::warn!(log = %live.display(), "truncated or rewritten in place");
            stream.count_error("truncated");
        }
        Note::RecoveredFromCopy(path) => {
            tracing::info!(log = %live.display(), copy = %path.display(), "read the unread tail from the rotated copy")
        }
        Note::CheckpointFileGone => {
            tracing::warn!(log = %live.display(), "checkpointed file is gone; reading the live file from its start");
            stream.count_error("checkpoint_file_gone");
        }
        Note::Unreadable(message) => {
            tracing::error!(log = %live.display(), error = %message, "unreadable");
            stream.count_error("unreadable");
        }
        Note::Missing => {
            tracing::warn!(log = %live.display(), "log file missing");
            stream.count_error("missing");
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&temporary)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
        .with_context(|| format!("cannot rename to {}", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The sources to follow when `start_at` does not apply: used by the demo.
pub fn demo_source(path: &Path, jvm_start: chrono::DateTime<Utc>) -> GcLogSource {
    GcLogSource {
        path: path.display().to_string(),
        start_at: StartAt::Beginning,
        labels: [("service".to_string(), "demo".to_string())]
            .into_iter()
            .collect(),
        jvm_start: Some(jvm_start),
        max_line_bytes: crate::config::DEFAULT_MAX_LINE_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_belong_to_their_live_file() {
        assert_eq!(
            live_path_of(Path::new("/l/gc.log.3")),
            PathBuf::from("/l/gc.log")
        );
        assert_eq!(
            live_path_of(Path::new("/l/gc.log.00")),
            PathBuf::from("/l/gc.log")
        );
        assert_eq!(
            live_path_of(Path::new("/l/gc.log-20260101")),
            PathBuf::from("/l/gc.log")
        );
        assert_eq!(
            live_path_of(Path::new("/l/gc.log")),
            PathBuf::from("/l/gc.log")
        );
        assert_eq!(
            live_path_of(Path::new("/l/gc-1234.log")),
            PathBuf::from("/l/gc-1234.log")
        );
    }
}
