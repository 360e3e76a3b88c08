//! `pausewatch run`: the agent's loop. It asks the source registry for the
//! streams that appeared, polls every source (each reads without the store's
//! lock and hands over what it read, which [`apply`] writes into the store
//! under one short lock per batch), finalizes latency
//! minutes, evaluates the alert rules on a snapshot, and checkpoints what
//! changed in every source in one journal commit, so that a restart after
//! `kill -9` neither loses nor double-counts a pause.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use notify::{RecursiveMode, Watcher};

use crate::alerts::sinks::{sender_loop, Sink};
use crate::alerts::AlertEngine;
use crate::checkpoint::{self, Journal};
use crate::config::Config;
use crate::model::alerts::Notification;
use crate::model::minutes::KeepFrom;
use crate::sources::reading::Reading;
use crate::sources::{ChangedFiles, Registry, Source, SourceCheckpoint, SourceKey};
use crate::store::{EbpfReason, ErrorKind, PauseSource, SharedStore, StreamState};

mod apply;
pub use apply::apply;

const DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// A failing checkpoint is logged at once, then at most this often.
const CHECKPOINT_ERROR_EVERY: Duration = Duration::from_secs(60);
/// The file in `checkpoint_dir` that one agent at a time holds locked.
const LOCK_FILE: &str = "lock";

/// How long the loop may go without a beat before `/healthz` fails: a few
/// poll intervals, and never less than 10 s, which a long catch-up read or a
/// checkpoint on a slow disk may take.
fn stall_limit(poll_interval: Duration) -> Duration {
    (poll_interval * 4).max(Duration::from_secs(10))
}

/// What wakes the loop before its poll interval is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// Files in a followed directory changed; no path: poll every source.
    Files(Vec<PathBuf>),
    /// SIGTERM or SIGINT: a last poll, a final checkpoint, and out.
    Shutdown,
    /// SIGHUP.
    Reload,
    /// SIGUSR1: write a checkpoint now.
    Checkpoint,
    /// SIGUSR2: log what the agent follows.
    Status,
}

/// The checkpoint directory cannot be used: another agent holds it
/// (running a second one on it would overwrite its state), or it cannot be
/// created (a non-root start without a writable home). The agent does not
/// start: exit 2, with the way out named.
#[derive(Debug)]
pub struct CheckpointDirUnusable(pub String);

impl std::fmt::Display for CheckpointDirUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckpointDirUnusable {}

/// Locks `dir/lock` for this process and writes its pid there, so that a
/// second agent on the same directory can say who holds it.
pub(crate) fn lock_checkpoint_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() { "unknown" } else { holder };
            return Err(CheckpointDirUnusable(format!(
                "checkpoint_dir {} is in use by another pausewatch agent (pid {holder}, lock {})",
                dir.display(),
                path.display()
            ))
            .into());
        }
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(error).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())?;
    Ok(file)
}
/// After a file event, how long to wait for more before reading: bounds the
/// agent's wake-ups to 50 a second on a busy log, well inside the delay budget.
const COALESCE_EVENTS_FOR: Duration = Duration::from_millis(20);

/// How often a file whose events arrive is polled all the same: the net for
/// an event the kernel dropped without saying so. Such a file is otherwise
/// read when an event names it; polling 200 quiet logs every
/// `poll_interval` cost 2 % of a core.
const EVENT_DRIVEN_SAFETY_POLL: Duration = Duration::from_secs(10);

/// File systems whose files change without inotify events on this host:
/// network and FUSE file systems, written from elsewhere. Their files are
/// polled every `poll_interval`.
const NO_LOCAL_EVENTS: [i64; 10] = [
    0x6969,      // NFS
    0x517b,      // SMB
    0xff53_4d42, // CIFS
    0xfe53_4d42, // SMB2
    0x6573_5546, // FUSE
    0x00c3_6400, // Ceph
    0x0102_1997, // 9P
    0x5346_414f, // AFS
    0x0bd0_0bd0, // Lustre
    0x0116_1970, // GFS2
];

/// Whether file events are trusted for files in `dir`.
#[allow(clippy::unnecessary_cast)] // `f_type` is an i64 here, a u32 elsewhere.
fn events_arrive_in(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|fs| !NO_LOCAL_EVENTS.contains(&(fs.f_type as i64)))
}

/// A source, and whether file events arrive for its file.
struct Followed {
    source: Box<dyn Source>,
    /// Its file is watched on a local file system: it is read when an event
    /// names it, and every [`EVENT_DRIVEN_SAFETY_POLL`], not every
    /// `poll_interval`. Cleared when a poll finds data no event announced;
    /// set again by the next event that names it.
    events_arrive: bool,
}

/// Which sources a pass of the loop polls, besides those [`Source::due`].
#[derive(Debug, Default)]
struct PollScope {
    /// Every source: at start, after an event that named no file (an
    /// overflow of the event queue), and every [`EVENT_DRIVEN_SAFETY_POLL`].
    all: bool,
    /// The periodic safety poll: what a file whose events arrive has to
    /// read then, no event announced.
    safety: bool,
    /// The sources whose file events do not arrive (or that have no file):
    /// every `poll_interval`.
    unwatched: bool,
    /// Files that events named.
    files: Vec<PathBuf>,
}

pub struct Agent {
    config: Config,
    /// Held for the agent's life: the lock on `checkpoint_dir`.
    _lock: File,
    wake: mpsc::Sender<Wake>,
    woken: mpsc::Receiver<Wake>,
    /// Failed checkpoints since the last one that succeeded, and when that
    /// was last logged.
    checkpoint_failures: u64,
    checkpoint_failure_logged: Option<Instant>,
    store: SharedStore,
    registry: Registry,
    sources: Vec<Followed>,
    checkpoint_path: PathBuf,
    journal: Journal,
    last_checkpoint: Instant,
    last_discovery: Option<Instant>,
    freed_memory: FreedMemory,
    dirty: bool,
    watched_dirs: BTreeSet<PathBuf>,
    /// Watched directories whose files' events are trusted.
    event_dirs: BTreeSet<PathBuf>,
    engine: AlertEngine,
    last_evaluation: Instant,
    /// One channel per sink's delivery thread.
    notifications: Vec<mpsc::Sender<Notification>>,
}

impl Agent {
    /// Loads the checkpoint, if any. A corrupt checkpoint is reported and set
    /// aside rather than stopping the agent; a newer agent's is refused.
    pub fn new(config: Config, store: SharedStore) -> Result<Agent> {
        std::fs::create_dir_all(&config.checkpoint_dir).map_err(|error| {
            CheckpointDirUnusable(format!(
                "cannot create checkpoint_dir {}: {error}; choose a directory this user can write with --checkpoint-dir DIR, or checkpoint_dir in a configuration file",
                config.checkpoint_dir.display()
            ))
        })?;
        let lock = lock_checkpoint_dir(&config.checkpoint_dir)?;
        let checkpoint_path = config.checkpoint_dir.join(checkpoint::FILE_NAME);
        let (restored, journal) = match checkpoint::load(&config.checkpoint_dir) {
            Ok(Some(loaded)) => {
                tracing::info!(path = %checkpoint_path.display(), sources = loaded.sources.len(), "resuming from checkpoint");
                (loaded.sources, loaded.journal)
            }
            Ok(None) => (Vec::new(), Journal::new(&config.checkpoint_dir)),
            Err(error) if error.is::<checkpoint::NewerVersion>() => return Err(error),
            Err(error) => {
                let aside = checkpoint::set_aside(&config.checkpoint_dir);
                tracing::error!(path = %checkpoint_path.display(), aside = %aside.display(), error = %format!("{error:#}"), "checkpoint unreadable; starting fresh");
                store.write().count_error(ErrorKind::CheckpointRead);
                (Vec::new(), Journal::new(&config.checkpoint_dir))
            }
        };
        let (wake, woken) = mpsc::channel();
        store.heartbeat.set_limit(stall_limit(config.poll_interval));
        Ok(Agent {
            registry: Registry::new(config.clone(), restored),
            config,
            _lock: lock,
            wake,
            woken,
            checkpoint_failures: 0,
            checkpoint_failure_logged: None,
            store,
            sources: Vec::new(),
            checkpoint_path,
            journal,
            last_checkpoint: Instant::now(),
            last_discovery: None,
            freed_memory: FreedMemory::new(),
            dirty: false,
            watched_dirs: BTreeSet::new(),
            event_dirs: BTreeSet::new(),
            engine: AlertEngine::default(),
            last_evaluation: Instant::now(),
            notifications: Vec::new(),
        })
    }

    /// A handle that wakes the loop: for file events and signals.
    pub fn waker(&self) -> mpsc::Sender<Wake> {
        self.wake.clone()
    }

    /// Adds sources for streams seen for the first time, and watches their
    /// directories.
    fn discover_sources(&mut self, watcher: Option<&mut notify::RecommendedWatcher>) {
        let found = (self.registry).discover(&mut Reading::new(&self.store, apply));
        let new_dirs: Vec<PathBuf> = found
            .iter()
            .filter_map(|s| s.watch_dir())
            .filter(|dir| self.watched_dirs.insert(dir.to_path_buf()))
            .map(|dir| dir.to_path_buf())
            .collect();
        if let Some(watcher) = watcher {
            for dir in new_dirs {
                match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                    Ok(()) if events_arrive_in(&dir) => drop(self.event_dirs.insert(dir)),
                    Ok(()) => {
                        tracing::info!(dir = %dir.display(), "a network or FUSE file system: polled every poll_interval")
                    }
                    Err(error) => {
                        tracing::warn!(dir = %dir.display(), %error, "cannot watch; polling only");
                        self.store.write().count_error(ErrorKind::Watch);
                    }
                }
            }
        }
        // A log reached through a symlink is written in another directory,
        // whose events the watch does not see.
        let is_file = |live: &Path| std::fs::symlink_metadata(live).is_ok_and(|m| m.is_file());
        for source in found {
            let events_arrive = source.live_path().is_some_and(is_file)
                && source
                    .watch_dir()
                    .is_some_and(|dir| self.event_dirs.contains(dir));
            self.sources.push(Followed {
                source,
                events_arrive,
            });
        }
        self.last_discovery = Some(Instant::now());
    }

    /// Attributes the latency minutes that are complete and refreshes the correlations.
    fn finalize_latency(&mut self) {
        let now = Utc::now();
        let settings = *self.registry.settings();
        let mut state = self.store.write();
        let ids: Vec<_> = state
            .streams
            .iter()
            .filter(|(_, s)| s.latency.is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(StreamState {
                latency: Some(latency),
                jvm,
                ..
            }) = state.stream_mut(id)
            {
                latency.finalize(now, &settings, &jvm.minutes);
            }
        }
    }

    /// Starts one delivery thread per configured sink.
    fn start_senders(&mut self) {
        let sinks = &self.config.alert_sinks;
        let sinks = sinks
            .alertmanager
            .clone()
            .map(Sink::Alertmanager)
            .into_iter()
            .chain(sinks.webhook.clone().map(Sink::Webhook));
        let counters = self.store.write().deliveries.clone();
        for sink in sinks {
            let (sender, receiver) = mpsc::channel();
            let counters = counters.clone();
            std::thread::spawn(move || sender_loop(sink, receiver, counters));
            self.notifications.push(sender);
        }
    }

    /// Evaluates the alert rules on a snapshot when the interval has passed.
    fn evaluate_alerts(&mut self) {
        if self.last_evaluation.elapsed() < self.config.alerts.evaluation_interval {
            return;
        }
        self.last_evaluation = Instant::now();
        let snapshot = self.store.snapshot();
        let notifications = self
            .engine
            .evaluate(&self.config.alerts, &snapshot, Utc::now());
        self.store.write().alerts = Arc::new(self.engine.alerts());
        for notification in notifications {
            // The log is a sink too: transitions only, not Alertmanager's re-sends.
            let alert = &notification.alert;
            if !notification.repeat {
                // A JVM without a log is told by its pid and name.
                let label = |name: &str| alert.labels.get(name).map(String::as_str);
                tracing::warn!(
                    alertname = %alert.alertname,
                    state = alert.state.as_str(),
                    log = label("log").unwrap_or(""),
                    pid = label("pid"),
                    jvm = label("jvm"),
                    summary = alert.annotations.get("summary").map(String::as_str).unwrap_or(""),
                    "alert"
                );
            }
            for sender in &self.notifications {
                let _ = sender.send(notification.clone());
            }
        }
    }

    /// Polls every source once and applies what it found.
    pub fn poll_once(&mut self) {
        self.poll_sources(&PollScope {
            all: true,
            ..PollScope::default()
        });
    }

    /// Polls the sources `scope` names and those due on their own. On a
    /// host with hundreds of logs a file event then costs one read, not
    /// hundreds, and quiet logs cost nothing between safety polls.
    fn poll_sources(&mut self, scope: &PollScope) {
        let named = ChangedFiles::new(&scope.files);
        for followed in &mut self.sources {
            let source = &mut followed.source;
            let live = source.live_path();
            let has_file = live.is_some();
            let is_named = live.is_some_and(|live| named.touch(live));
            let wanted = is_named
                || scope.all
                || (scope.unwatched && !followed.events_arrive)
                || source.due();
            if !wanted {
                continue;
            }
            let read = source.poll(&mut Reading::new(&self.store, apply));
            self.dirty |= read;
            if has_file {
                if is_named {
                    followed.events_arrive = true;
                } else if read && scope.safety {
                    // What it read no event announced: poll it from now on.
                    followed.events_arrive = false;
                }
            }
            self.store.heartbeat.beat();
        }
        self.retire_gone_sources();
        self.finalize_latency();
        self.evaluate_alerts();
    }

    /// Drops sources whose stream has ended for good, with their series; an
    /// exited JVM's stream keeps its minutes, and the other sources filling
    /// it (the GC log discovery found) go with it.
    fn retire_gone_sources(&mut self) {
        let (mut gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.sources)
            .into_iter()
            .partition(|followed| followed.source.gone());
        let exited: Vec<_> = gone
            .iter()
            .map(|followed| &followed.source)
            .filter(|source| matches!(source.key(), SourceKey::RuntimeStats(_)))
            .filter_map(|source| source.stream())
            .collect();
        let (with_exited, kept): (Vec<_>, Vec<_>) = kept.into_iter().partition(|followed| {
            (followed.source.stream()).is_some_and(|id| exited.contains(&id))
        });
        gone.extend(with_exited);
        self.sources = kept;
        for Followed { source, .. } in gone {
            let key = source.key();
            tracing::info!(source = ?key, "gone for good; its series are dropped");
            if let Some(id) = source.stream() {
                let mut state = self.store.write();
                match state.stream_mut(id) {
                    // An exited JVM's minutes stay until history drops them.
                    Some(stream) if exited.contains(&id) => stream.exited = true,
                    _ => {
                        state.streams.remove(&id);
                        state.access_streams.remove(&id);
                    }
                }
            }
            self.registry.forget(&key);
            self.dirty = true;
        }
    }

    /// Writes a checkpoint; a failure is counted, logged at once and then at
    /// most every [`CHECKPOINT_ERROR_EVERY`], so a full disk does not flood
    /// the log.
    fn checkpoint_or_report(&mut self) {
        match self.checkpoint() {
            Ok(()) => {
                if self.checkpoint_failures > 0 {
                    tracing::info!(path = %self.checkpoint_path.display(), failures = self.checkpoint_failures, "checkpoint written again");
                }
                self.checkpoint_failures = 0;
                self.checkpoint_failure_logged = None;
            }
            Err(error) => {
                self.checkpoint_failures += 1;
                self.store.write().count_error(ErrorKind::CheckpointWrite);
                let due = self
                    .checkpoint_failure_logged
                    .is_none_or(|at| at.elapsed() >= CHECKPOINT_ERROR_EVERY);
                if due {
                    self.checkpoint_failure_logged = Some(Instant::now());
                    tracing::error!(error = %format!("{error:#}"), failures = self.checkpoint_failures, "checkpoint failed; retrying, logged again in a minute if it still fails");
                }
                // Retry at the next interval, not on every poll.
                self.last_checkpoint = Instant::now();
            }
        }
    }

    /// Logs what the agent follows (SIGUSR2).
    fn log_status(&self) {
        let state = self.store.snapshot();
        for stream in state.streams.values() {
            let label = |name: &str| stream.labels.get(name).map(String::as_str);
            // A discovered JVM without a GC log has an empty `log`: its pid
            // and name tell the lines apart, and what measures it is said.
            if let Some(discovered) = stream.discovered.as_ref().filter(|_| stream.log.is_empty()) {
                let ebpf_reason = discovered.ebpf_reason.map(EbpfReason::as_str);
                tracing::info!(
                    pid = label("pid"),
                    jvm = label("jvm"),
                    pause_source = discovered
                        .pauses_measured_by()
                        .map_or("none", PauseSource::as_str),
                    ebpf_reason,
                    "status: JVM without a GC log"
                );
                continue;
            }
            tracing::info!(log = %stream.log, pid = label("pid"), jvm = label("jvm"), lines = stream.parse.lines, lag_bytes = stream.read_lag_bytes, readable = stream.readable, "status: GC log");
        }
        for access in state.access_streams.values() {
            tracing::info!(log = %access.log, lines = access.stats.lines, lag_bytes = access.read_lag_bytes, readable = access.readable, "status: access log");
        }
        tracing::info!(sources = self.sources.len(), checkpoint = %self.checkpoint_path.display(), checkpoint_failures = self.checkpoint_failures, "status");
    }

    /// Appends what changed in every source since the last checkpoint to
    /// the journal, in one commit. The state is read from a snapshot, so
    /// serializing never holds the store's lock.
    pub fn checkpoint(&mut self) -> Result<()> {
        let snapshot = self.store.snapshot();
        let sources: Vec<SourceCheckpoint> = self
            .sources
            .iter()
            .filter_map(|followed| followed.source.checkpoint(&snapshot))
            .collect();
        drop(snapshot);
        // Sources not seen this time keep their checkpoint for when they return.
        self.journal.write(&sources, self.registry.unclaimed())?;
        self.dirty = false;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// Drops the minutes older than `history`, and the streams of exited
    /// JVMs that have none left.
    fn prune_history(&mut self) {
        let Ok(history) = chrono::Duration::from_std(self.config.history) else {
            return;
        };
        let now = Utc::now();
        let mut state = self.store.write();
        for stream in state.streams.values_mut() {
            let stream = Arc::make_mut(stream);
            let from = match stream.exited {
                true => KeepFrom::Now,
                false => KeepFrom::NewestEvent,
            };
            let oldest = stream.jvm.minutes.prune(history, now, from);
            if let Some(latency) = &mut stream.latency {
                latency.prune_before(oldest);
            }
        }
        state
            .streams
            .retain(|_, stream| !stream.exited || !stream.jvm.minutes.is_empty());
    }

    /// How long the loop may wait for an event: until the next poll of the
    /// sources whose events do not arrive (when there are any), the next
    /// safety poll, discovery, a checkpoint due, and a discovered JVM's sample.
    fn next_pass_in(&self, last_unwatched_poll: Instant, last_safety_poll: Instant) -> Duration {
        let until = |last: Instant, every: Duration| every.saturating_sub(last.elapsed());
        let mut timeout = until(last_safety_poll, EVENT_DRIVEN_SAFETY_POLL);
        // Files whose events do not arrive; a source without a file (eBPF,
        // a scraped histogram) has no events to miss.
        let unwatched =
            |followed: &Followed| !followed.events_arrive && followed.source.live_path().is_some();
        if self.sources.iter().any(unwatched) {
            timeout = timeout.min(until(last_unwatched_poll, self.config.poll_interval));
        }
        if let Some(discovery) = self.last_discovery {
            timeout = timeout.min(until(discovery, DISCOVERY_INTERVAL));
        }
        if self.dirty {
            timeout = timeout.min(until(self.last_checkpoint, self.config.checkpoint_interval));
        }
        // Each discovered JVM's next sample, a pause to flush, the eBPF
        // records of measured JVMs: with none, an idle host's loop passes
        // once a second instead of at every `[runtime_stats] interval`.
        let wanted = self.sources.iter().filter_map(|f| f.source.wake_in());
        wanted.fold(timeout, Duration::min)
    }

    /// Runs until a [`Wake::Shutdown`] arrives, then writes a final checkpoint.
    pub fn run(mut self) -> Result<()> {
        let wake = self.waker();
        let mut watcher =
            match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // inotify reports opens and reads too, the agent's own among
                // them: each would wake a poll that opens the file again.
                // Idle, 200 logs kept the loop spinning on its own events.
                if let Ok(event) = &event {
                    if changes_nothing(&event.kind) {
                        return;
                    }
                }
                // An error says nothing of which file: poll them all.
                let paths = event.map(|e| e.paths).unwrap_or_default();
                let _ = wake.send(Wake::Files(paths));
            }) {
                Ok(watcher) => Some(watcher),
                Err(error) => {
                    tracing::warn!(%error, "file notifications unavailable; polling only");
                    self.store.write().count_error(ErrorKind::Watch);
                    None
                }
            };
        self.discover_sources(watcher.as_mut());
        self.start_senders();
        let mut scope = PollScope {
            all: true,
            ..PollScope::default()
        };
        let mut last_unwatched_poll = Instant::now();
        let mut last_safety_poll = Instant::now();
        loop {
            self.store.heartbeat.beat();
            if scope.all {
                last_safety_poll = Instant::now();
            }
            if scope.all || scope.unwatched {
                last_unwatched_poll = Instant::now();
            }
            self.poll_sources(&scope);
            if self
                .last_discovery
                .is_none_or(|t| t.elapsed() >= DISCOVERY_INTERVAL)
            {
                self.discover_sources(watcher.as_mut());
                self.prune_history();
                self.freed_memory.return_burst();
            }
            if self.dirty && self.last_checkpoint.elapsed() >= self.config.checkpoint_interval {
                self.checkpoint_or_report();
            }
            let timeout = self.next_pass_in(last_unwatched_poll, last_safety_poll);
            let mut wakes = match self.woken.recv_timeout(timeout) {
                Ok(files @ Wake::Files(_)) => {
                    // A busy log fires an event per write: gather them for
                    // a moment so that one poll reads many lines.
                    std::thread::sleep(COALESCE_EVENTS_FOR);
                    vec![files]
                }
                Ok(other) => vec![other],
                Err(_) => Vec::new(),
            };
            wakes.extend(self.woken.try_iter());
            let mut files = Vec::new();
            let mut overflow = false;
            for wake in &wakes {
                match wake {
                    Wake::Files(named) if named.is_empty() => overflow = true,
                    Wake::Files(named) => files.extend(named.iter().cloned()),
                    _ => {}
                }
            }
            let safety = last_safety_poll.elapsed() >= EVENT_DRIVEN_SAFETY_POLL;
            scope = PollScope {
                all: overflow || safety,
                safety,
                unwatched: last_unwatched_poll.elapsed() >= self.config.poll_interval,
                files,
            };
            if wakes.contains(&Wake::Shutdown) {
                break;
            }
            if wakes.contains(&Wake::Reload) {
                tracing::warn!("SIGHUP: the configuration is not reloaded while running; restart the agent to apply changes");
            }
            if wakes.contains(&Wake::Checkpoint) {
                self.checkpoint_or_report();
            }
            if wakes.contains(&Wake::Status) {
                self.log_status();
            }
        }
        self.poll_once();
        self.checkpoint()
            .with_context(|| format!("final checkpoint to {}", self.checkpoint_path.display()))
    }
}

/// A file event that cannot have added or removed bytes: an open, a read, or
/// a close by a reader. A writer's close still wakes the loop.
fn changes_nothing(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(kind, notify::EventKind::Access(access)
        if !matches!(access, AccessKind::Close(AccessMode::Write)))
}

/// Hands the heap's free pages back to the kernel after a burst freed
/// memory. glibc keeps in its arenas what a burst freed (a day of history
/// read at start-up and written into a new journal, the chunks packed
/// since): 200 JVMs with a day each kept the agent at 37-39 MiB resident,
/// 30-31 MiB once trimmed. Trimming every 10 s cost more than it saved
/// (2.1-2.3 % of a core against 1.75 % at 200 logs: the loop's own churn
/// faulted the pages back in), so it waits for the free bytes to grow by
/// [`FREED_BURST`] since the last trim, looked at every
/// [`LOOK_AT_FREED_MEMORY_EVERY`].
struct FreedMemory {
    /// Free heap bytes after the last trim, or the fewest seen since.
    free_since_trim: usize,
    last_look: Instant,
}

/// How often the heap's free bytes are looked at.
const LOOK_AT_FREED_MEMORY_EVERY: Duration = Duration::from_secs(10);

impl FreedMemory {
    fn new() -> FreedMemory {
        FreedMemory {
            free_since_trim: 0,
            last_look: Instant::now(),
        }
    }

    /// Trims the heap if a burst freed memory since the last trim; does
    /// nothing until [`LOOK_AT_FREED_MEMORY_EVERY`] has passed.
    fn return_burst(&mut self) {
        if self.last_look.elapsed() < LOOK_AT_FREED_MEMORY_EVERY {
            return;
        }
        self.last_look = Instant::now();
        #[cfg(target_env = "gnu")]
        // SAFETY: mallinfo2 and malloc_trim take no pointer; they read the
        // allocator's figures and release free pages only.
        unsafe {
            let free = libc::mallinfo2().fordblks;
            if free > self.free_since_trim.saturating_add(FREED_BURST) {
                libc::malloc_trim(0);
                // Trimmed pages still count as free: the next burst is
                // measured from here.
                self.free_since_trim = free;
            } else {
                // Or from less, once the churn reuses them.
                self.free_since_trim = self.free_since_trim.min(free);
            }
        }
    }
}

/// Free heap bytes a burst must add before they are handed back.
const FREED_BURST: usize = 4 << 20;

#[cfg(test)]
mod file_event_tests {
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
    use notify::EventKind;

    use super::changes_nothing;

    #[test]
    fn reads_wake_nothing_and_writes_do() {
        assert!(changes_nothing(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(changes_nothing(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!changes_nothing(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(!changes_nothing(&EventKind::Modify(ModifyKind::Any)));
        assert!(!changes_nothing(&EventKind::Create(CreateKind::File)));
        assert!(!changes_nothing(&EventKind::Any));
    }
}
