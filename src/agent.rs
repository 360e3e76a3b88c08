//! `pausewatch run`: the agent's loop. It asks the source registry for the
//! streams that appeared, polls every source (each reads without the store's
//! lock and applies what it read under one short lock), finalizes latency
//! minutes, evaluates the alert rules on a snapshot, and checkpoints every
//! source together, atomically, so that a restart after `kill -9` neither
//! loses nor double-counts a pause.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use notify::{RecursiveMode, Watcher};

use crate::alerts::sinks::{sender_loop, Sink};
use crate::alerts::AlertEngine;
use crate::checkpoint;
use crate::config::Config;
use crate::model::alerts::Notification;
use crate::sources::{Registry, Source, SourceCheckpoint};
use crate::store::{SharedStore, StreamState};

const DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// After a file event, how long to wait for more before reading: bounds the
/// agent's wake-ups to 50 a second on a busy log, well inside the delay budget.
const COALESCE_EVENTS_FOR: Duration = Duration::from_millis(20);

pub struct Agent {
    config: Config,
    store: SharedStore,
    registry: Registry,
    sources: Vec<Box<dyn Source>>,
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
    pub fn new(config: Config, store: SharedStore) -> Result<Agent> {
        std::fs::create_dir_all(&config.checkpoint_dir).with_context(|| {
            format!(
                "cannot create checkpoint_dir {}",
                config.checkpoint_dir.display()
            )
        })?;
        let checkpoint_path = config.checkpoint_dir.join(checkpoint::FILE_NAME);
        let restored = match std::fs::read(&checkpoint_path) {
            Ok(bytes) => match checkpoint::parse(&bytes) {
                Ok(sources) => {
                    tracing::info!(path = %checkpoint_path.display(), sources = sources.len(), "resuming from checkpoint");
                    sources
                }
                Err(error) => {
                    let aside = checkpoint_path.with_extension("json.unreadable");
                    tracing::error!(path = %checkpoint_path.display(), aside = %aside.display(), error = %format!("{error:#}"), "checkpoint unreadable; starting fresh");
                    let _ = std::fs::rename(&checkpoint_path, &aside);
                    store.write().count_error("checkpoint_read");
                    Vec::new()
                }
            },
            Err(_) => Vec::new(),
        };
        Ok(Agent {
            registry: Registry::new(config.clone(), restored),
            config,
            store,
            sources: Vec::new(),
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

    /// Adds sources for streams seen for the first time, and watches their
    /// directories.
    fn discover_sources(&mut self, watcher: Option<&mut notify::RecommendedWatcher>) {
        let found = self.registry.discover(&self.store);
        let new_dirs: Vec<PathBuf> = found
            .iter()
            .filter_map(|s| s.watch_dir())
            .filter(|dir| self.watched_dirs.insert(dir.to_path_buf()))
            .map(|dir| dir.to_path_buf())
            .collect();
        self.sources.extend(found);
        if let Some(watcher) = watcher {
            for dir in new_dirs {
                if let Err(error) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %dir.display(), %error, "cannot watch; polling only");
                    self.store.write().count_error("watch");
                }
            }
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
        let alerts = &self.config.alerts;
        let sinks = alerts
            .alertmanager_url
            .clone()
            .map(Sink::Alertmanager)
            .into_iter()
            .chain(alerts.webhook_url.clone().map(Sink::Webhook));
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

    /// Polls every source once and applies what it found.
    pub fn poll_once(&mut self) {
        for source in &mut self.sources {
            self.dirty |= source.poll(&self.store);
        }
        self.finalize_latency();
        self.evaluate_alerts();
    }

    /// Writes every source's checkpoint in one atomic file. The state is read
    /// from a snapshot, so serializing never holds the store's lock.
    pub fn checkpoint(&mut self) -> Result<()> {
        let snapshot = self.store.snapshot();
        let sources: Vec<SourceCheckpoint> = self
            .sources
            .iter()
            .map(|source| source.checkpoint(&snapshot))
            // Sources not seen this time keep their checkpoint for when they return.
            .chain(self.registry.unclaimed().cloned())
            .collect();
        drop(snapshot);
        checkpoint::write_atomically(&self.checkpoint_path, &checkpoint::serialize(&sources)?)?;
        self.dirty = false;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    fn prune_history(&mut self) {
        let Ok(history) = chrono::Duration::from_std(self.config.history) else {
            return;
        };
        let oldest = Utc::now() - history;
        let mut state = self.store.write();
        for stream in state.streams.values_mut() {
            let stream = Arc::make_mut(stream);
            stream.jvm.minutes.prune_outside(oldest, oldest + history);
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
                    self.store.write().count_error("watch");
                    None
                }
            };
        self.discover_sources(watcher.as_mut());
        self.start_senders();
        while !shutdown.load(Ordering::SeqCst) {
            self.poll_once();
            if self
                .last_discovery
                .is_none_or(|t| t.elapsed() >= DISCOVERY_INTERVAL)
            {
                self.discover_sources(watcher.as_mut());
                self.prune_history();
            }
            if self.dirty && self.last_checkpoint.elapsed() >= self.config.checkpoint_interval {
                if let Err(error) = self.checkpoint() {
                    tracing::error!(error = %format!("{error:#}"), "checkpoint failed");
                    self.store.write().count_error("checkpoint_write");
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
