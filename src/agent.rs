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
use pausewatch_parsers::{AccessLogParser, GcEvent, GcLogParser, ParserOptions};
use serde::{Deserialize, Serialize};

use crate::alerts::{sender_loop, AlertEngine, Notification, Sink};
use crate::config::{AccessLogSource, Config, GcLogSource, LatencyHistogramSource, StartAt};
use crate::correlate::{AttributionOptions, LatencySummary, RequestTiming};
use crate::histogram_source::{fetch, parse_buckets, HistogramSourceConfig, MinuteAccumulator};
use crate::latency::{CorrelationSettings, LatencyState};
use crate::state::{AccessStreamState, SharedState, StreamState};
use crate::tail::{Follower, Note, Position};

const CHECKPOINT_FILE: &str = "state.json";
const CHECKPOINT_VERSION: u32 = 1;
/// A pause waits for its CPU-times line; after this much quiet it is emitted without.
const PENDING_FLUSH_AFTER: Duration = Duration::from_millis(200);
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// After a file event, how long to wait for more before reading: bounds the
/// agent's wake-ups to 50 a second on a busy log, well inside the delay budget.
const COALESCE_EVENTS_FOR: Duration = Duration::from_millis(20);

#[derive(Serialize, Deserialize)]
struct StreamCheckpoint {
    log: String,
    position: Option<Position>,
    parser: GcLogParser,
    state: StreamState,
}

#[derive(Serialize, Deserialize)]
struct AccessCheckpoint {
    log: String,
    position: Option<Position>,
    parser: AccessLogParser,
    state: AccessStreamState,
}

#[derive(Serialize, Deserialize)]
struct Checkpoint {
    version: u32,
    streams: Vec<StreamCheckpoint>,
    #[serde(default)]
    access: Vec<AccessCheckpoint>,
}

struct AccessRuntime {
    follower: Follower,
    parser: AccessLogParser,
    /// Index into `AgentState::access_streams`.
    slot: usize,
    /// The configured `gc_log` link, if any.
    link: Option<String>,
    offset_seconds: f64,
}

/// A minute summarised by a histogram scraper thread, or its failure.
enum ScrapeReport {
    Minute {
        link: Option<String>,
        start: chrono::DateTime<Utc>,
        latency: LatencySummary,
    },
    Failed(String),
}

struct StreamRuntime {
    follower: Follower,
    parser: GcLogParser,
    /// Index into `AgentState::streams`.
    slot: usize,
    last_data: Instant,
    /// Last look in /proc for the JVM's start, for an uptime-only log.
    last_clock_probe: Option<Instant>,
    /// Whether the configuration gives the JVM start (then /proc is not asked).
    configured_start: bool,
}

/// How often /proc is searched for the start of a JVM whose log has uptime only.
const CLOCK_PROBE_INTERVAL: Duration = Duration::from_secs(2);

impl StreamRuntime {
    /// For a log without wall-clock time and no configured start, anchors the
    /// parser to the start of the JVM writing it, found in /proc. Returns
    /// whether it did.
    fn probe_jvm_start(&mut self) -> bool {
        if self.configured_start
            || self.parser.run().anchor.is_some()
            || self
                .last_clock_probe
                .is_some_and(|t| t.elapsed() < CLOCK_PROBE_INTERVAL)
            || !self.follower.live_path().exists()
        {
            return false;
        }
        self.last_clock_probe = Some(Instant::now());
        match crate::procfs::jvm_start_for_log(self.follower.live_path()) {
            Some(start) => {
                self.parser.anchor_jvm_start(start);
                true
            }
            None => false,
        }
    }
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

/// Live paths of the streams a path or glob names now.
fn discover(pattern: &str) -> BTreeSet<PathBuf> {
    let mut lives = BTreeSet::new();
    if !has_glob_chars(pattern) {
        lives.insert(PathBuf::from(pattern));
        return lives;
    }
    if let Ok(paths) = glob::glob(pattern) {
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
    access: Vec<AccessRuntime>,
    restored: Vec<StreamCheckpoint>,
    restored_access: Vec<AccessCheckpoint>,
    settings: CorrelationSettings,
    scrapes: Option<mpsc::Receiver<ScrapeReport>>,
    checkpoint_path: PathBuf,
    last_checkpoint: Instant,
    last_discovery: Option<Instant>,
    dirty: bool,
    watched_dirs: BTreeSet<PathBuf>,
    engine: AlertEngine,
    last_evaluation: Instant,
    /// One channel per sink's delivery thread.
    notifications: Vec<mpsc::Sender<Notification>>,
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
        let (restored, restored_access) = match std::fs::read(&checkpoint_path) {
            Ok(bytes) => match serde_json::from_slice::<Checkpoint>(&bytes) {
                Ok(checkpoint) if checkpoint.version == CHECKPOINT_VERSION => {
                    tracing::info!(path = %checkpoint_path.display(), streams = checkpoint.streams.len(), "resuming from checkpoint");
                    (checkpoint.streams, checkpoint.access)
                }
                Ok(_) | Err(_) => {
                    let aside = checkpoint_path.with_extension("json.unreadable");
                    tracing::error!(path = %checkpoint_path.display(), aside = %aside.display(), "checkpoint unreadable; starting fresh");
                    let _ = std::fs::rename(&checkpoint_path, &aside);
                    shared
                        .lock()
                        .expect("state lock")
                        .count_error("checkpoint_read");
                    (Vec::new(), Vec::new())
                }
            },
            Err(_) => (Vec::new(), Vec::new()),
        };
        let correlation = &config.correlation;
        let settings = CorrelationSettings {
            attribution: AttributionOptions {
                slo_seconds: correlation.slo.map(|d| d.as_secs_f64()),
                affected_share: correlation.affected_share,
            },
            window_minutes: (correlation.window.as_secs() / 60).max(1) as usize,
            min_minutes: correlation.min_minutes,
            finalize_after_seconds: correlation.finalize_after.as_secs() as i64,
        };
        Ok(Agent {
            config,
            shared,
            streams: Vec::new(),
            access: Vec::new(),
            restored,
            restored_access,
            settings,
            scrapes: None,
            checkpoint_path,
            last_checkpoint: Instant::now(),
            last_discovery: None,
            dirty: false,
            watched_dirs: BTreeSet::new(),
            engine: AlertEngine::default(),
            last_evaluation: Instant::now(),
            notifications: Vec::new(),
        })
    }

    /// Adds streams for live paths seen for the first time.
    fn discover_streams(&mut self, watcher: Option<&mut notify::RecommendedWatcher>) {
        let mut new_dirs = Vec::new();
        for source in self.config.gc_log.clone() {
            for live in discover(&source.path) {
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
        for source in self.config.access_log.clone() {
            for live in discover(&source.path) {
                let log = live.display().to_string();
                if self
                    .shared
                    .lock()
                    .expect("state lock")
                    .access_streams
                    .iter()
                    .any(|s| s.log == log)
                {
                    continue;
                }
                self.add_access_stream(&source, live.clone());
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
        // A latency source will line its requests up with this JVM's stops:
        // record stops from the first event on.
        if self.is_latency_target(&log) && state.latency.is_none() {
            state.latency = Some(LatencyState::default());
        }
        state.readable = true;
        tracing::info!(log = %log, resumed = position.is_some(), "following");
        let mut shared = self.shared.lock().expect("state lock");
        shared.streams.push(state);
        let slot = shared.streams.len() - 1;
        drop(shared);
        let runtime = StreamRuntime {
            follower: Follower::new(live, source.start_at, position),
            parser,
            slot,
            last_data: Instant::now(),
            last_clock_probe: None,
            configured_start: source.jvm_start.is_some(),
        };
        self.streams.push(runtime);
    }

    /// Whether an access log or latency histogram source names this GC stream.
    fn is_latency_target(&self, log: &str) -> bool {
        let slot = self.streams.len();
        let gc_sources = self.config.gc_log.len();
        let links = self
            .config
            .access_log
            .iter()
            .map(|a| a.gc_log.as_deref())
            .chain(
                self.config
                    .latency_histogram
                    .iter()
                    .map(|h| h.gc_log.as_deref()),
            );
        links
            .into_iter()
            .any(|link| links_to(link, log, slot, gc_sources))
    }

    fn add_access_stream(&mut self, source: &AccessLogSource, live: PathBuf) {
        let log = live.display().to_string();
        let restored = self
            .restored_access
            .iter()
            .position(|c| c.log == log)
            .map(|index| self.restored_access.swap_remove(index));
        let (position, parser, state) = match restored {
            Some(checkpoint) => (checkpoint.position, checkpoint.parser, checkpoint.state),
            None => {
                let parser =
                    match AccessLogParser::new(source.format.clone(), source.max_line_bytes) {
                        Ok(parser) => parser,
                        Err(error) => {
                            tracing::error!(log = %log, %error, "access log format rejected");
                            return;
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
        let mut shared = self.shared.lock().expect("state lock");
        shared.access_streams.push(state);
        let slot = shared.access_streams.len() - 1;
        drop(shared);
        self.access.push(AccessRuntime {
            follower: Follower::new(live, source.start_at, position),
            parser,
            slot,
            link: source.gc_log.clone(),
            offset_seconds: source.offset_seconds,
        });
    }

    /// Starts one scraper thread per latency histogram source.
    fn start_scrapers(&mut self) {
        if self.config.latency_histogram.is_empty() {
            return;
        }
        let (sender, receiver) = mpsc::channel();
        for source in self.config.latency_histogram.clone() {
            let sender = sender.clone();
            std::thread::spawn(move || scrape_loop(source, sender));
        }
        self.scrapes = Some(receiver);
    }

    /// Minutes summarised by the scrapers since the last call.
    fn take_scrapes(&mut self) {
        let Some(receiver) = &self.scrapes else {
            return;
        };
        let reports: Vec<ScrapeReport> = receiver.try_iter().collect();
        let mut state = self.shared.lock().expect("state lock");
        for report in reports {
            match report {
                ScrapeReport::Minute {
                    link,
                    start,
                    latency,
                } => {
                    if let Some(slot) =
                        target_slot(&state.streams, link.as_deref(), self.config.gc_log.len())
                    {
                        let stream = &mut state.streams[slot];
                        stream
                            .latency
                            .get_or_insert_with(LatencyState::default)
                            .add_histogram_minute(start, latency);
                        self.dirty = true;
                    }
                }
                ScrapeReport::Failed(error) => {
                    tracing::warn!(%error, "latency histogram scrape failed");
                    state.count_error("latency_histogram_scrape");
                }
            }
        }
    }

    /// Reads every access log once and hands its requests to their GC stream.
    fn poll_access(&mut self) {
        let gc_sources = self.config.gc_log.len();
        for runtime in &mut self.access {
            let AccessRuntime {
                follower,
                parser,
                slot,
                link,
                offset_seconds,
            } = runtime;
            let shared = &self.shared;
            let offset = pausewatch_parsers::seconds_to_duration(*offset_seconds);
            let mut requests = Vec::new();
            let outcome = follower.poll(&mut |chunk| {
                parser.feed(chunk, &mut requests);
                hand_requests(
                    shared,
                    *slot,
                    link.as_deref(),
                    gc_sources,
                    offset,
                    &mut requests,
                );
            });
            if outcome.bytes_read > 0 {
                self.dirty = true;
            }
            let mut state = shared.lock().expect("state lock");
            let access = &mut state.access_streams[*slot];
            access.stats = parser.stats().clone();
            access.read_lag_bytes = outcome.lag_bytes;
            access.readable = outcome.readable;
            for note in &outcome.notes {
                if let Note::Unreadable(message) = note {
                    tracing::error!(log = %access.log, error = %message, "access log unreadable");
                    *access.errors.entry("unreadable".to_string()).or_insert(0) += 1;
                }
            }
        }
    }

    /// Attributes the minutes that are complete and refreshes the correlations.
    fn finalize_latency(&mut self) {
        let now = Utc::now();
        let mut state = self.shared.lock().expect("state lock");
        for stream in &mut state.streams {
            let StreamState { latency, jvm, .. } = stream;
            if let Some(latency) = latency {
                latency.finalize(now, &self.settings, &jvm.minutes);
            }
        }
    }

    /// Starts one delivery thread per configured sink.
    fn start_senders(&mut self) {
        let alerts = &self.config.alerts;
        let sinks = alerts
            .alertmanager_url
            .clone()
            .map(Sink::Alertmanager)
            .into_iter()
            .chain(alerts.webhook_url.clone().map(Sink::Webhook));
        let counters = self.shared.lock().expect("state lock").deliveries.clone();
        for sink in sinks {
            let (sender, receiver) = mpsc::channel();
            let counters = counters.clone();
            std::thread::spawn(move || sender_loop(sink, receiver, counters));
            self.notifications.push(sender);
        }
    }

    /// Evaluates the alert rules when the interval has passed.
    fn evaluate_alerts(&mut self) {
        if self.last_evaluation.elapsed() < self.config.alerts.evaluation_interval {
            return;
        }
        self.last_evaluation = Instant::now();
        let mut state = self.shared.lock().expect("state lock");
        let notifications = self
            .engine
            .evaluate(&self.config.alerts, &state, Utc::now());
        state.alerts = self.engine.alerts();
        drop(state);
        for notification in notifications {
            // The log is a sink too: transitions only, not Alertmanager's re-sends.
            let alert = &notification.alert;
            if !notification.repeat {
                tracing::warn!(
                    alertname = %alert.alertname,
                    state = alert.state.as_str(),
                    log = alert.labels.get("log").map(String::as_str).unwrap_or(""),
                    summary = alert.annotations.get("summary").map(String::as_str).unwrap_or(""),
                    "alert"
                );
            }
            for sender in &self.notifications {
                let _ = sender.send(notification.clone());
            }
        }
    }

    /// Reads every stream once and applies what it found.
    pub fn poll_once(&mut self) {
        let now = Instant::now();
        for runtime in &mut self.streams {
            // Before reading: an uptime-only log is placed in time from its first line.
            let unplaced = self.shared.lock().expect("state lock").streams[runtime.slot]
                .jvm
                .minutes
                .unplaced_events;
            if (runtime.parser.stats().lines == 0 || unplaced > 0) && runtime.probe_jvm_start() {
                tracing::info!(log = %runtime.follower.live_path().display(), "uptime-only log anchored to its JVM's start from /proc");
            }
            let StreamRuntime {
                follower,
                parser,
                slot,
                last_data,
                ..
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
        self.poll_access();
        self.take_scrapes();
        self.finalize_latency();
        self.evaluate_alerts();
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
        let mut access: Vec<AccessCheckpoint> = self
            .access
            .iter()
            .map(|runtime| AccessCheckpoint {
                log: state.access_streams[runtime.slot].log.clone(),
                position: runtime.follower.position(),
                parser: runtime.parser.clone(),
                state: state.access_streams[runtime.slot].clone(),
            })
            .collect();
        drop(state);
        access.extend(self.restored_access.iter().map(|c| AccessCheckpoint {
            log: c.log.clone(),
            position: c.position,
            parser: c.parser.clone(),
            state: c.state.clone(),
        }));
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
            access,
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
            if let Some(latency) = &mut stream.latency {
                latency.prune_before(oldest);
            }
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
        self.start_scrapers();
        self.start_senders();
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
                // A busy log fires an event per write: gather them for a
                // moment so that one poll reads many lines.
                std::thread::sleep(COALESCE_EVENTS_FOR);
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
        if let Some(latency) = &mut stream.latency {
            latency.add_event(event);
        }
    }
    stream.last_event_processed_at = Some(Utc::now());
    events.clear();
}

/// Whether a latency source linked by `link` belongs to the GC stream `log`,
/// the `slot`-th discovered: the stream whose live path the configuration
/// names, or the first one when there is a single GC source.
fn links_to(link: Option<&str>, log: &str, slot: usize, gc_sources: usize) -> bool {
    match link {
        Some(link) => link == log,
        None => gc_sources == 1 && slot == 0,
    }
}

/// The GC stream a latency source belongs to.
fn target_slot(streams: &[StreamState], link: Option<&str>, gc_sources: usize) -> Option<usize> {
    streams
        .iter()
        .enumerate()
        .position(|(slot, s)| links_to(link, &s.log, slot, gc_sources))
}

fn hand_requests(
    shared: &SharedState,
    access_slot: usize,
    link: Option<&str>,
    gc_sources: usize,
    offset: chrono::Duration,
    requests: &mut Vec<pausewatch_parsers::Request>,
) {
    if requests.is_empty() {
        return;
    }
    let mut state = shared.lock().expect("state lock");
    let target = target_slot(&state.streams, link, gc_sources);
    match target {
        Some(slot) => {
            let log = state.streams[slot].log.clone();
            let latency = state.streams[slot]
                .latency
                .get_or_insert_with(LatencyState::default);
            for request in requests.iter() {
                latency.add_request(RequestTiming {
                    start: request
                        .start
                        .checked_add_signed(offset)
                        .unwrap_or(request.start),
                    duration_s: request.duration_s,
                });
            }
            let labels = state.streams[slot].labels.clone();
            let access = &mut state.access_streams[access_slot];
            access.target = Some(log);
            access.labels = labels;
        }
        None => state.access_streams[access_slot].unattributed_requests += requests.len() as u64,
    }
    requests.clear();
}

/// Scrapes one histogram source every `interval`, forever, reporting each
/// completed minute. Runs on its own thread: a slow application must not
/// hold up the tailing.
fn scrape_loop(source: LatencyHistogramSource, sender: mpsc::Sender<ScrapeReport>) {
    let config = HistogramSourceConfig {
        url: source.url.clone(),
        metric: source.metric.clone(),
        matchers: source.matchers.clone(),
        timeout: source.interval.min(Duration::from_secs(5)),
    };
    let mut accumulator = MinuteAccumulator::new();
    loop {
        let scraped =
            fetch(&config).and_then(|text| parse_buckets(&text, &config.metric, &config.matchers));
        let reports: Vec<ScrapeReport> = match scraped {
            Ok(buckets) => accumulator
                .observe(Utc::now(), buckets)
                .into_iter()
                .map(|(start, latency)| ScrapeReport::Minute {
                    link: source.gc_log.clone(),
                    start,
                    latency,
                })
                .collect(),
            Err(error) => vec![ScrapeReport::Failed(format!("{}: {error}", source.url))],
        };
        for report in reports {
            if sender.send(report).is_err() {
                return;
            }
        }
        std::thread::sleep(source.interval);
    }
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
