//! Every input of the agent behind one trait: GC logs, access logs, latency
//! histograms, and the runtime stats of the JVMs /proc discovery finds.
//!
//! A [`Source`] reads without the store's lock and hands over what it read,
//! its own health included, as typed updates ([`reading`]) that the agent
//! alone writes into the store; it says what a restart needs to resume
//! ([`SourceCheckpoint`]). The
//! [`Registry`] builds sources from the configuration, finds the streams a
//! glob names as they appear, and hands each its checkpoint back.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use pausewatch_parsers::StreamParser;

use crate::config::{self, Config, CorrelationConfig};
use crate::follow::{
    base_dir, discover_with, log_exists, Confine, FollowOptions, Follower, Listings, Note,
    PollOutcome, Position, StartAt, MAX_MATCHES,
};
use crate::model::correlate::AttributionOptions;
use crate::model::latency::CorrelationSettings;
use crate::store::{AgentState, ErrorKind, StreamId, StreamState};
use reading::{Reading, Update};

pub mod access_log;
pub mod discovery;
pub mod ebpf;
pub mod gc_log;
mod gc_threads;
pub mod gotrace;
pub mod hsperf_file;
pub mod latency_histogram;
mod launcher;
pub mod measure;
pub mod proc_table;
pub mod procfs;
pub mod reading;
pub mod requests;
pub mod runtime_stats;

/// One input of the agent.
pub trait Source: Send {
    /// What the checkpoint file knows this source by.
    fn key(&self) -> SourceKey;
    /// Reads what is new and hands it over to `reading`; `true` when
    /// anything changed that a checkpoint should record.
    fn poll(&mut self, reading: &mut Reading) -> bool;
    /// What a restart needs to resume exactly where this source is now,
    /// given a snapshot of the store.
    /// `None` for a source with nothing to resume.
    fn checkpoint(&self, state: &AgentState) -> Option<SourceCheckpoint>;
    /// The directory whose file events should wake the agent, for file sources.
    fn watch_dir(&self) -> Option<&Path> {
        None
    }
    /// The live file this source follows: a file event on it or on one of
    /// its rotations polls it, so that a busy host polls only the files that
    /// changed between full polls.
    fn live_path(&self) -> Option<&Path> {
        None
    }
    /// Whether this source must be polled now even though none of its files
    /// changed (a timer of its own, a channel to drain).
    fn due(&self) -> bool {
        true
    }
    /// How soon this source needs a pass of the loop that no file event
    /// brings (its next sample, a pause waiting to be flushed); `None`:
    /// none of its own. Otherwise the loop passes once a second.
    fn wake_in(&self) -> Option<std::time::Duration> {
        None
    }
    /// The stream this source fills in the store, when it has one.
    fn stream(&self) -> Option<StreamId> {
        None
    }
    /// Whether the stream has ended for good (a JVM directory a glob matched,
    /// removed): the agent then drops the source, its series and its checkpoint.
    fn gone(&self) -> bool {
        false
    }
}

/// The files that file events named since the last poll, by directory: a
/// host with hundreds of streams looks up each source's directory once
/// instead of comparing every path with every source.
#[derive(Debug, Default)]
pub struct ChangedFiles<'a> {
    names_by_dir: HashMap<&'a Path, Vec<&'a OsStr>>,
}

impl<'a> ChangedFiles<'a> {
    pub fn new(paths: &'a [PathBuf]) -> Self {
        let mut names_by_dir: HashMap<&Path, Vec<&OsStr>> = HashMap::new();
        for path in paths {
            if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
                names_by_dir.entry(dir).or_default().push(name);
            }
        }
        ChangedFiles { names_by_dir }
    }

    /// Whether `live` or one of its rotations (a name it begins) changed.
    pub fn touch(&self, live: &Path) -> bool {
        let (Some(dir), Some(live)) = (live.parent(), live.file_name()) else {
            return false;
        };
        self.names_by_dir.get(dir).is_some_and(|names| {
            names
                .iter()
                .any(|name| name.as_encoded_bytes().starts_with(live.as_encoded_bytes()))
        })
    }
}

/// What every file source starts from: its id in the store, its live
/// path, its checkpoint if it had one, and how to follow it.
pub struct NewStream {
    pub id: StreamId,
    pub live: PathBuf,
    pub restored: Option<SourceCheckpoint>,
    pub follow: FollowOptions,
}

impl NewStream {
    /// Its live path as the stream's `log` name, and its checkpoint when
    /// `pick` takes it (one of the source's own kind): where every file
    /// source begins, before it builds a fresh parser and state or not.
    pub fn resume<C>(
        &mut self,
        pick: impl FnOnce(SourceCheckpoint) -> Option<C>,
    ) -> (String, Option<C>) {
        let log = self.live.display().to_string();
        (log, self.restored.take().and_then(pick))
    }

    /// The follower of its live file, from the checkpoint's `position` when
    /// there was one.
    pub fn follower(self, position: Option<Position>) -> Follower {
        Follower::new(self.live, self.follow, position)
    }
}

/// A source's identity in the checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SourceKey {
    GcLog(String),
    AccessLog(String),
    LatencyHistogram(String),
    /// A discovered JVM, by `pid@start_ticks`.
    RuntimeStats(String),
    /// The eBPF safepoint probes: one source for every JVM.
    Ebpf,
    /// The kernel's request latency: one source for every JVM.
    Requests,
}

/// Everything one source needs after a restart; the checkpoint's records
/// (`checkpoint::records`) define how it is written.
#[derive(Debug, Clone)]
pub enum SourceCheckpoint {
    GcLog(Box<gc_log::GcLogCheckpoint>),
    AccessLog(Box<access_log::AccessLogCheckpoint>),
    LatencyHistogram(latency_histogram::HistogramCheckpoint),
    Ebpf(ebpf::EbpfCheckpoint),
    /// A discovered JVM's own stream (it has no GC log).
    Discovered(Box<runtime_stats::DiscoveredCheckpoint>),
}

impl SourceCheckpoint {
    pub fn key(&self) -> SourceKey {
        match self {
            SourceCheckpoint::GcLog(c) => SourceKey::GcLog(c.log.clone()),
            SourceCheckpoint::AccessLog(c) => SourceKey::AccessLog(c.log.clone()),
            SourceCheckpoint::LatencyHistogram(c) => SourceKey::LatencyHistogram(c.key.clone()),
            SourceCheckpoint::Ebpf(_) => SourceKey::Ebpf,
            SourceCheckpoint::Discovered(c) => SourceKey::RuntimeStats(c.jvm.clone()),
        }
    }

    /// The stream a source carries, if any, under the name the journal
    /// files its minutes by ([`SourceKey::stream_name`]).
    pub fn stream(&self) -> Option<(String, &Arc<StreamState>)> {
        let name = self.key().stream_name()?;
        match self {
            SourceCheckpoint::GcLog(c) => Some((name, &c.state)),
            SourceCheckpoint::Discovered(c) => Some((name, &c.state)),
            _ => None,
        }
    }

    /// [`Self::stream`], to put its collections back.
    pub fn stream_mut(&mut self) -> Option<(String, &mut Arc<StreamState>)> {
        let name = self.key().stream_name()?;
        match self {
            SourceCheckpoint::GcLog(c) => Some((name, &mut c.state)),
            SourceCheckpoint::Discovered(c) => Some((name, &mut c.state)),
            _ => None,
        }
    }
}

impl SourceKey {
    /// The name a stream's minutes, requests and stops are filed under in
    /// the journal: a GC log's path, `jvm:PID@TICKS` for a discovered
    /// JVM's own stream.
    pub fn stream_name(&self) -> Option<String> {
        match self {
            SourceKey::GcLog(log) => Some(log.clone()),
            SourceKey::RuntimeStats(jvm) => Some(format!("jvm:{jvm}")),
            _ => None,
        }
    }
}

/// How long after its start a JVM may still create the log its options name.
const LOG_CREATION_GRACE: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

/// How long after its start a JVM may still show none of a JVM's signs
/// (HotSpot starts its `VM Thread` within its first second).
const JVM_SIGNS_GRACE: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// Whether `process` started so recently that its log may still appear.
fn young(process: &discovery::JavaProcess) -> bool {
    chrono::Utc::now() - process.started < LOG_CREATION_GRACE
}

/// How soon discovery looks again at a JVM whose libjvm.so is being attached.
const ATTACHING_RECHECK: std::time::Duration = std::time::Duration::from_millis(200);

/// Where the kernel's process information is.
const PROC_ROOT: &str = "/proc";

/// A discovery pass uses the process table as it is when it was scanned
/// this recently (for a GC log's writer), else scans it again.
const DISCOVERY_SCAN_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// How often a source whose records come from the kernel (the eBPF
/// safepoint and request programs) asks for a pass while it measures a JVM,
/// when nothing else wakes the loop sooner: `[runtime_stats] interval`'s
/// default, the pace the loop kept for them before each source said its own.
pub const KERNEL_RECORDS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// CLOCK_MONOTONIC now: the clock `bpf_ktime_get_ns` stamps the eBPF
/// probes' records with, so that a counter read can be placed among them.
pub fn monotonic_now() -> std::time::Duration {
    clock_now(libc::CLOCK_MONOTONIC)
}

/// The clock `clock`'s time now (CLOCK_BOOTTIME: what /proc counts a
/// process's start on).
pub fn clock_now(clock: libc::clockid_t) -> std::time::Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec of ours.
    unsafe { libc::clock_gettime(clock, &mut now) };
    std::time::Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Reads what is new in a followed file through `parser`, handing the
/// records to `apply` in batches of at most [`reading::APPLY_BATCH`] (and once more
/// at the end, possibly empty): the one read loop of every file source.
pub fn read_batched<P: StreamParser>(
    follower: &mut Follower,
    parser: &mut P,
    mut apply: impl FnMut(&mut P, &mut Vec<P::Output>),
) -> PollOutcome {
    let mut records = Vec::new();
    let outcome = follower.poll(&mut |chunk| {
        parser.feed(chunk, &mut records);
        if records.len() >= reading::APPLY_BATCH {
            apply(parser, &mut records);
        }
    });
    apply(parser, &mut records);
    outcome
}

/// How often running out of descriptors is logged, whatever the sources.
const OUT_OF_DESCRIPTORS_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs a follower's note; the error it is, when it is one. The same for
/// every file source.
fn report_note(note: &Note, live: &Path) -> Option<ErrorKind> {
    let log = live.display();
    match note {
        Note::Opened(path) => tracing::info!(log = %log, file = %path.display(), "reading"),
        Note::Rotated => tracing::info!(log = %log, "rotated"),
        Note::Truncated => {
            tracing::warn!(log = %log, "truncated or rewritten in place");
            return Some(ErrorKind::Truncated);
        }
        Note::RecoveredFromCopy(path) => {
            tracing::info!(log = %log, copy = %path.display(), "read the unread tail from the rotated copy")
        }
        Note::CheckpointFileGone => {
            tracing::warn!(log = %log, "checkpointed file is gone; reading the live file from its start");
            return Some(ErrorKind::CheckpointFileGone);
        }
        Note::Unreadable(message) => {
            tracing::error!(log = %log, error = %message, "unreadable");
            return Some(ErrorKind::Unreadable);
        }
        Note::Missing => {
            tracing::warn!(log = %log, "log file missing");
            return Some(ErrorKind::Missing);
        }
        Note::SymlinkOutside { path, real } => {
            tracing::error!(log = %log, file = %path.display(), target = %real.display(), "not read: a symlink out of the configured directories (follow_symlinks_outside = true allows it)");
            return Some(ErrorKind::SymlinkOutside);
        }
        Note::OutOfDescriptors => {
            // Every source meets it at once: one line for all of them.
            static LOGGED: Mutex<Option<std::time::Instant>> = Mutex::new(None);
            let mut logged = LOGGED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if logged.is_none_or(|at| at.elapsed() >= OUT_OF_DESCRIPTORS_LOG_EVERY) {
                *logged = Some(std::time::Instant::now());
                tracing::warn!(log = %log, "out of file descriptors; files are opened again at the next poll (logged at most once a minute)");
            }
            return Some(ErrorKind::DescriptorsExhausted);
        }
        Note::NotRegular { path, kind } => {
            tracing::error!(log = %log, file = %path.display(), kind, "not read: not a regular file");
            return Some(ErrorKind::NotRegularFile);
        }
        Note::WriterExited => {
            tracing::info!(log = %log, "its process exited and the file was replaced: the new file is another run's stream")
        }
    }
    None
}

/// The errors among a poll's notes, each logged.
pub fn report_notes(notes: &[Note], live: &Path) -> Vec<ErrorKind> {
    notes
        .iter()
        .filter_map(|note| report_note(note, live))
        .collect()
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
    /// Real paths of the files that have a source: a file reached through
    /// several paths (symlinks, overlapping globs) is one stream.
    claimed: BTreeSet<PathBuf>,
    /// The directories the configuration names, where symlinks may lead.
    roots: Confine,
    /// Whether the agent has looked before (a discovery pass, or a run that
    /// left a checkpoint): a file found now is new, and `start_at` is only
    /// for the files already there at the first start.
    looked_before: bool,
    /// Globs that hit the cap on matches, reported once each.
    capped: BTreeSet<String>,
    /// The glob walks' directory listings, kept while unchanged.
    listings: Listings,
    next_id: u64,
    writers: Arc<Mutex<procfs::JvmLogWriters>>,
    /// The one view of /proc the discoverers and `writers` share.
    table: Arc<Mutex<proc_table::ProcTable>>,
    /// The host's Java processes, when `[discovery]` is enabled.
    scanner: Option<discovery::Scanner>,
    /// The host's Go programs tracing their GC to a file, likewise.
    go_scanner: Option<gotrace::GoScanner>,
    last_scan: Option<std::time::Instant>,
    /// The agent's own start in clock ticks after boot: a JVM that started
    /// after it is read from its first counter and its log's beginning
    /// (ticks, not wall-clock time: /proc's boot time is whole seconds).
    started_ticks: u64,
    /// The eBPF safepoint probes, or why there are none.
    ebpf: ebpf::Ebpf,
    /// The request-latency source, until it is handed out.
    requests: Option<requests::RequestSource>,
}

impl Registry {
    pub fn new(config: Config, restored: Vec<SourceCheckpoint>) -> Registry {
        let settings = correlation_settings(&config.correlation);
        let paths = config.gc_log.iter().map(|s| &s.path);
        let roots = paths
            .chain(config.access_log.iter().map(|s| &s.path))
            .map(|path| base_dir(path));
        let roots = Confine::within(roots);
        let table = Arc::new(Mutex::new(proc_table::ProcTable::new(PathBuf::from(
            PROC_ROOT,
        ))));
        Registry {
            settings,
            looked_before: !restored.is_empty(),
            restored: restored.into_iter().map(|c| (c.key(), c)).collect(),
            known: BTreeSet::new(),
            claimed: BTreeSet::new(),
            roots,
            capped: BTreeSet::new(),
            listings: Listings::default(),
            next_id: 0,
            writers: Arc::new(Mutex::new(procfs::JvmLogWriters::new(table.clone()))),
            table,
            scanner: config.discovery.enabled.then(discovery::Scanner::default),
            go_scanner: config.discovery.enabled.then(gotrace::GoScanner::default),
            last_scan: None,
            started_ticks: proc_table::start_ticks(Path::new(PROC_ROOT), std::process::id())
                .unwrap_or(0),
            ebpf: ebpf::Ebpf::new(&config),
            requests: requests::RequestSource::new(&config),
            config,
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

    /// Where a source may follow symlinks to.
    fn confine(&self, follow_symlinks_outside: bool) -> Confine {
        if follow_symlinks_outside {
            Confine::Anywhere
        } else {
            self.roots.clone()
        }
    }

    /// How a new stream's follower starts: at the configured `start_at` in
    /// a file there at the agent's first look, else at the beginning, as
    /// the file appeared since.
    fn follow_options(&self, start_at: StartAt, follow_symlinks_outside: bool) -> FollowOptions {
        FollowOptions {
            start_at: if self.looked_before {
                StartAt::Beginning
            } else {
                start_at
            },
            confine: self.confine(follow_symlinks_outside),
            ..FollowOptions::default()
        }
    }

    /// The live paths each configured path (with its
    /// `follow_symlinks_outside`) names now, with the index of the path; a
    /// glob's matches capped, and the cap reported once.
    fn candidates<'a>(
        &mut self,
        paths: impl Iterator<Item = (&'a String, bool)>,
        reading: &mut Reading,
    ) -> Vec<(usize, PathBuf)> {
        let mut candidates = Vec::new();
        for (index, (pattern, follow_symlinks_outside)) in paths.enumerate() {
            let confine = self.confine(follow_symlinks_outside);
            let found = discover_with(pattern, &confine, &mut self.listings);
            if found.capped && self.capped.insert(pattern.clone()) {
                tracing::error!(path = %pattern, cap = MAX_MATCHES, "glob matches too many files; the rest are not followed");
                reading.push(Update::Errors(ErrorKind::GlobCapped, 1));
            }
            candidates.extend(found.live.into_iter().map(|live| (index, live)));
        }
        candidates
    }

    /// The new streams among `candidates` (a source's index and a live path),
    /// each with its checkpoint: one per real file however many paths reach
    /// it, a path with a checkpoint claiming its file first.
    fn claim(
        &mut self,
        key: fn(String) -> SourceKey,
        mut candidates: Vec<(usize, PathBuf)>,
    ) -> Vec<(usize, PathBuf, Option<SourceCheckpoint>)> {
        candidates
            .sort_by_key(|(_, live)| !self.restored.contains_key(&key(live.display().to_string())));
        let mut claimed = Vec::new();
        for (index, live) in candidates {
            let key = key(live.display().to_string());
            if self.known.contains(&key) || !self.claimed.insert(procfs::canonical(&live)) {
                continue;
            }
            if let Some(restored) = self.take_new(key) {
                claimed.push((index, live, restored));
            }
        }
        claimed
    }

    /// Whether a latency source names the GC stream `log`.
    fn is_latency_target(&self, log: &str) -> bool {
        let links = (self.config.access_log.iter()).filter_map(|a| match &a.target {
            config::AccessTarget::GcLog(link) => Some(link),
            config::AccessTarget::Jvm(_) => None,
        });
        let histogram_links = self.config.latency_histogram.iter().map(|h| &h.gc_log);
        links.chain(histogram_links).any(|link| link == log)
    }

    /// Sources for streams that appeared since the last call; new GC
    /// streams first, so that an access log finds the stream it feeds.
    pub fn discover(&mut self, reading: &mut Reading) -> Vec<Box<dyn Source>> {
        let mut found: Vec<Box<dyn Source>> = Vec::new();
        let gc_logs = self.config.gc_log.clone();
        let paths = gc_logs.iter().map(|s| (&s.path, s.follow_symlinks_outside));
        let candidates = self.candidates(paths, reading);
        for (index, live, restored) in self.claim(SourceKey::GcLog, candidates) {
            let source = &gc_logs[index];
            let follow = FollowOptions {
                order: gc_log::oldest_first,
                ..self.follow_options(source.start_at, source.follow_symlinks_outside)
            };
            let requests = match self.is_latency_target(&live.display().to_string()) {
                true => gc_log::Requests::LinedUp,
                false => gc_log::Requests::None,
            };
            let new = NewStream {
                id: self.next_id(),
                live,
                restored,
                follow,
            };
            found.push(Box::new(gc_log::GcLogSource::start(
                new,
                source,
                requests,
                self.writers.clone(),
                reading,
            )));
        }
        let access_logs = self.config.access_log.clone();
        let paths = access_logs
            .iter()
            .map(|s| (&s.path, s.follow_symlinks_outside));
        let candidates = self.candidates(paths, reading);
        for (index, live, restored) in self.claim(SourceKey::AccessLog, candidates) {
            let source = &access_logs[index];
            let new = NewStream {
                follow: self.follow_options(source.start_at, source.follow_symlinks_outside),
                id: self.next_id(),
                live,
                restored,
            };
            if let Some(access) = access_log::AccessLogSource::start(new, source, reading) {
                found.push(Box::new(access));
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
        self.listings.forget_unvisited();
        let restored = self.take_new(SourceKey::Ebpf).flatten();
        found.extend(self.ebpf.source(self.config.discovery.interval, restored));
        if let Some(requests) = self.requests.take() {
            found.push(Box::new(requests));
        }
        found.extend(self.discover_jvms(reading));
        self.looked_before = true;
        found
    }

    /// Sources for the Java processes that started since the last scan, once
    /// per `[discovery] interval`: each fills a stream of its own, or the
    /// stream of the `[[gc_log]]` it writes, which then supplies its pauses.
    fn discover_jvms(&mut self, reading: &mut Reading) -> Vec<Box<dyn Source>> {
        let interval = self.config.discovery.interval;
        let (Some(scanner), Some(go_scanner)) = (&mut self.scanner, &mut self.go_scanner) else {
            return Vec::new();
        };
        if self.last_scan.is_some_and(|at| at.elapsed() < interval) {
            return Vec::new();
        }
        let scan_started = std::time::Instant::now();
        self.last_scan = Some(scan_started);
        let (processes, go_programs) = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            // A scan a GC log source asked for this second is as good.
            table.refresh_within(DISCOVERY_SCAN_REUSE);
            (scanner.scan(&table), go_scanner.scan(&table))
        };
        tracing::debug!(
            elapsed_us = scan_started.elapsed().as_micros() as u64,
            new_jvms = processes.len(),
            new_go_programs = go_programs.len(),
            "discovery scan"
        );
        let mut found: Vec<Box<dyn Source>> = Vec::new();
        let mut retry = Vec::new();
        let mut attaching = false;
        for process in processes {
            let command_line = process.command_line();
            if !self.config.discovery.selects(&command_line) {
                self.ebpf.leave_out(process.pid, process.start_ticks);
                continue;
            }
            let proc_root = PathBuf::from(PROC_ROOT);
            // eBPF, where it reaches, is asked even for a JVM with a log (the
            // reason says why it is not used elsewhere).
            let asking = ebpf::Asking {
                pid: process.pid,
                start_ticks: process.start_ticks,
                uid: process.uid,
                young: chrono::Utc::now() - process.started < JVM_SIGNS_GRACE,
            };
            let ebpf = self.ebpf.cover(&proc_root, &asking);
            let started_after_agent = process.start_ticks >= self.started_ticks;
            let mut gc_logs = discovery::gc_logs(&proc_root, &process);
            let mut untrusted = Vec::new();
            gc_logs
                .files
                .retain(|log| match discovery::untrusted_log(log, process.uid) {
                    Some(why) => {
                        untrusted.push((log.clone(), why));
                        false
                    }
                    None => true,
                });
            let inputs = measure::JvmInputs {
                ebpf,
                log: self.jvm_log(&gc_logs.files, reading),
                log_has_safepoints: gc_logs.safepoints,
                young: young(&process),
                started_after_agent,
            };
            let measurement = match measure::decide(inputs) {
                measure::Decision::LookAgain { soon } => {
                    retry.push(process.pid);
                    attaching |= soon;
                    continue;
                }
                measure::Decision::Measure(measurement) => measurement,
            };
            for (log, why) in untrusted {
                tracing::warn!(pid = process.pid, jvm = %process.main(), log = %log.display(), why, "not followed as the JVM's GC log: it is not the JVM's user's alone");
                reading.push(Update::Errors(ErrorKind::UntrustedGcLog, 1));
            }
            let mut labels = process.labels();
            labels.extend(self.config.discovery.labels_for(&command_line));
            let jvm = SourceKey::RuntimeStats(format!("{}@{}", process.pid, process.start_ticks));
            let restored = match self.restored.remove(&jvm) {
                Some(SourceCheckpoint::Discovered(restored)) => Some(*restored),
                _ => None,
            };
            let (id, owns_stream, retires) = match measurement.stream {
                measure::StreamChoice::Configured(id) => (id, false, false),
                measure::StreamChoice::FollowLog(log) => {
                    let id = self.next_id();
                    let writer = Writer::at(process.pid, process.start_ticks, process.started);
                    let source = self.follow_discovered_log(id, log, &writer, &labels, reading);
                    found.push(Box::new(source));
                    (id, false, true)
                }
                measure::StreamChoice::Own => (self.next_id(), true, true),
            };
            found.push(Box::new(runtime_stats::RuntimeStatsSource::start(
                process,
                runtime_stats::Placement {
                    id,
                    owns_stream,
                    labels,
                    retires,
                    proc_root,
                    pause_source: measurement.pause_source,
                    ebpf_reason: measurement.ebpf_reason,
                    safepoint_source: measurement.safepoint_source,
                    pauses_from_start: measurement.pauses_from_start,
                    excluded_ports: self.config.discovery.excluded_ports(&command_line),
                    restored: restored.filter(|_| owns_stream),
                },
                &self.config.runtime_stats,
                self.config.discovery.grace,
                started_after_agent,
                reading,
            )));
        }
        if let Some(scanner) = &mut self.scanner {
            retry.into_iter().for_each(|pid| scanner.forget(pid));
        }
        self.keep_exited_jvms(reading);
        // A library takes milliseconds to attach: its JVMs are looked at
        // again soon, not a whole interval later.
        if attaching {
            let soon = interval.saturating_sub(ATTACHING_RECHECK);
            self.last_scan = scan_started.checked_sub(soon);
        }
        found.extend(self.discover_go_programs(go_programs, reading));
        found
    }

    /// The streams of processes discovery found that exited while the
    /// agent was down, from their checkpoints: their minutes stay until
    /// `history` drops them.
    fn keep_exited_jvms(&mut self, reading: &mut Reading) {
        let gone = |process: &str| !proc_table::is_alive_key(Path::new(PROC_ROOT), process);
        let exited: Vec<SourceKey> = (self.restored.iter())
            .filter(|(_, restored)| match restored {
                SourceCheckpoint::Discovered(jvm) => gone(&jvm.jvm),
                SourceCheckpoint::GcLog(log) => log.writer.as_deref().is_some_and(gone),
                _ => false,
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in exited {
            let stream = match self.restored.remove(&key) {
                Some(SourceCheckpoint::Discovered(jvm)) => jvm.exited(),
                Some(SourceCheckpoint::GcLog(log)) => {
                    let mut stream = Arc::unwrap_or_clone(log.state);
                    stream.exited = true;
                    stream
                }
                _ => continue,
            };
            let id = self.next_id();
            reading.push(Update::Stream(id, Arc::new(stream)));
        }
    }

    /// The GC log a JVM writes (`logs`, the names it may have, trusted),
    /// as the configuration and the streams followed know it.
    fn jvm_log(&self, logs: &[PathBuf], reading: &mut Reading) -> measure::JvmLog {
        let logs: Vec<PathBuf> = logs.iter().map(|file| procfs::canonical(file)).collect();
        let configured = |log: &Path| {
            let patterns = self.config.gc_log.iter();
            patterns
                .filter_map(|c| glob::Pattern::new(&c.path).ok())
                .any(|p| p.matches_path(log))
        };
        // A configured log's stream carries one JVM at a time: a JVM
        // restarted into it takes it from the run that exited. (The stream
        // of a log discovery found is its JVM's alone.)
        let followed = reading.look(|state| {
            let writes = |log: &str| logs.contains(&procfs::canonical(Path::new(log)));
            let free = |log: &str, discovered: &Option<crate::store::Discovered>| match discovered {
                None => true,
                Some(jvm) => {
                    configured(Path::new(log))
                        && !proc_table::is_alive(Path::new(PROC_ROOT), jvm.pid, jvm.start_ticks)
                }
            };
            state
                .streams
                .iter()
                .find(|(_, s)| writes(&s.log) && free(&s.log, &s.discovered))
                .map(|(id, _)| *id)
        });
        match (followed, logs.first()) {
            (Some(id), _) => measure::JvmLog::Followed(id),
            (None, None) => measure::JvmLog::None,
            (None, Some(_)) if logs.iter().any(|log| configured(log)) => {
                measure::JvmLog::Configured
            }
            (None, Some(first)) => measure::JvmLog::Own {
                first_created: log_exists(first),
                created: logs.iter().find(|log| log_exists(log)).cloned(),
            },
        }
    }

    /// Sources for the Go programs tracing their GC into a file that
    /// started since the last scan, unless a `[[gc_log]]` names that file
    /// (it then supplies the pauses, anchored by the program's start).
    fn discover_go_programs(
        &mut self,
        processes: Vec<gotrace::GoProcess>,
        reading: &mut Reading,
    ) -> Vec<Box<dyn Source>> {
        let mut found: Vec<Box<dyn Source>> = Vec::new();
        for process in processes {
            if !self.config.discovery.selects(&process.command_line) {
                continue;
            }
            let trace = procfs::canonical(&process.trace);
            let configured = self.config.gc_log.iter().any(|c| {
                glob::Pattern::new(&c.path).is_ok_and(|p| p.matches_path(&trace))
                    || procfs::canonical(Path::new(&c.path)) == trace
            });
            if configured || self.claimed.contains(&trace) {
                continue;
            }
            let mut labels = process.labels();
            labels.extend(self.config.discovery.labels_for(&process.command_line));
            let id = self.next_id();
            let writer = Writer::at(process.pid, process.start_ticks, process.started);
            let source = self.follow_discovered_log(id, trace, &writer, &labels, reading);
            found.push(Box::new(gotrace::GoTraceSource::new(
                source,
                &process,
                PathBuf::from(PROC_ROOT),
                self.config.discovery.grace,
            )));
        }
        found
    }

    /// A source following the GC log discovery found for the process
    /// `writer`, as a configured `[[gc_log]]` would: from where the previous
    /// run's checkpoint of that process left it, else from its beginning
    /// when the process started after the agent, else from its end.
    fn follow_discovered_log(
        &mut self,
        id: StreamId,
        log: PathBuf,
        process: &Writer,
        labels: &BTreeMap<String, String>,
        reading: &mut Reading,
    ) -> gc_log::GcLogSource {
        let start_at = if process.start_ticks >= self.started_ticks {
            StartAt::Beginning
        } else {
            StartAt::End
        };
        let source = crate::config::GcLogSource {
            path: log.display().to_string(),
            start_at,
            labels: labels.clone(),
            jvm_start: Some(process.started),
            max_line_bytes: crate::config::DEFAULT_MAX_LINE_BYTES,
            follow_symlinks_outside: true,
            forget_after: crate::config::DEFAULT_FORGET_AFTER,
            max_label_values: self.config.max_label_values,
            pause_records: match &self.config.otlp {
                Some(otlp) if otlp.pause_events => crate::config::PAUSE_RECORDS_KEPT,
                _ => 0,
            },
        };
        tracing::info!(pid = process.pid, log = %log.display(), "following the GC log discovery found");
        self.claimed.insert(procfs::canonical(&log));
        // Its rotated files from before it started are a previous run's.
        let follow = FollowOptions {
            start_at,
            confine: Confine::Anywhere,
            order: gc_log::oldest_first,
            written_since: Some(proc_table::started_to_the_tick(process.start_ticks)),
        };
        let (pid, start_ticks) = (process.pid, process.start_ticks);
        let writer = format!("{pid}@{start_ticks}");
        let key = SourceKey::GcLog(source.path.clone());
        let restored = match self.restored.remove(&key) {
            Some(SourceCheckpoint::GcLog(c)) if c.writer.as_ref() != Some(&writer) => {
                // Another process's, gone: kept as exited at the next scan.
                self.restored.insert(key, SourceCheckpoint::GcLog(c));
                None
            }
            restored => restored,
        };
        let new = NewStream {
            id,
            live: log,
            restored,
            follow,
        };
        let requests = gc_log::Requests::None;
        let still_writing = move || proc_table::is_alive(Path::new(PROC_ROOT), pid, start_ticks);
        gc_log::GcLogSource::start(new, &source, requests, self.writers.clone(), reading)
            .found_for(writer)
            .of_one_writer(Box::new(still_writing))
    }

    /// Forgets a source that is gone, so that its file is a new stream if it
    /// comes back.
    pub fn forget(&mut self, key: &SourceKey) {
        self.known.remove(key);
        let (SourceKey::GcLog(path) | SourceKey::AccessLog(path)) = key else {
            return;
        };
        self.claimed.remove(&procfs::canonical(Path::new(path)));
    }

    /// Checkpoints of sources not seen this run, kept for when they return.
    pub fn unclaimed(&self) -> impl Iterator<Item = &SourceCheckpoint> {
        self.restored.values()
    }
}

/// The process writing a GC log discovery found: a JVM, or a Go program.
struct Writer {
    pid: u32,
    start_ticks: u64,
    started: chrono::DateTime<chrono::Utc>,
}

impl Writer {
    fn at(pid: u32, start_ticks: u64, started: chrono::DateTime<chrono::Utc>) -> Writer {
        Writer {
            pid,
            start_ticks,
            started,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_touches_the_live_file_and_its_rotations_in_its_directory_only() {
        let paths: Vec<PathBuf> = ["/logs/a/gc.log.1", "/logs/b/other.log"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let changed = ChangedFiles::new(&paths);
        assert!(changed.touch(Path::new("/logs/a/gc.log")));
        assert!(!changed.touch(Path::new("/logs/b/gc.log")));
        assert!(!changed.touch(Path::new("/logs/a/gc.log.1.current.other")));
        assert!(changed.touch(Path::new("/logs/b/other.log")));
    }
}
