//! `pausewatch analyze`: read GC log files offline and summarise their pauses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use pausewatch_parsers::{
    AccessFormat, AccessLogParser, GcEvent, GcLogParser, Name, ParserOptions, Pause,
};
use serde::Serialize;

use crate::commands::gc_input::read_gc_log;
use crate::commands::gc_parallel::parse_gc_log;
use crate::config::access_format::{detect_json, detect_preset, format_names, AccessFields};
use crate::model::correlate::{
    attribute, combine, correlate, per_minute, stop_of, Attribution, AttributionOptions,
    CombinedMinute, Correlation, LatencySummary, RequestTiming, SlowRequest, StopIndex,
};
use crate::model::gc_cpu::GcCpu;
use crate::model::jvm::{EventCounters, JvmState};
use crate::model::minutes::CLOCK_OUTLIER;
use crate::sources::gc_log::oldest_first;

/// Quiet minutes listed at most (7 days): the report's size follows the
/// events in the log, not the time between them.
const MAX_QUIET_MINUTES: u64 = 7 * 24 * 60;

#[derive(Debug, Serialize)]
pub struct PauseSummary {
    pub count: u64,
    pub total_seconds: f64,
    pub max_seconds: f64,
    pub p50_seconds: f64,
    pub p99_seconds: f64,
    pub p999_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct NameSummary {
    pub name: String,
    pub count: u64,
    pub total_seconds: f64,
    pub max_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct SafepointSummary {
    pub count: u64,
    pub total_seconds: f64,
    pub max_seconds: f64,
}

/// The report `analyze` prints; the JSON field names are a stable interface.
#[derive(Debug, Serialize)]
pub struct Report {
    pub files: Vec<PathBuf>,
    pub collector: String,
    pub jdk_version: Option<String>,
    pub pauses: PauseSummary,
    pub by_name: Vec<NameSummary>,
    pub safepoints: SafepointSummary,
    /// The rarer events and heap flows (full GCs, evacuation failures, stalls, ...).
    pub markers: EventCounters,
    /// The collector's CPU where the log says (Go's gctrace; per minute in
    /// `minutes`). A JVM's log does not: its `gc,cpu` lines time the pauses'
    /// workers, not the concurrent threads; the agent reads a running JVM's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_cpu: Option<GcCpu>,
    pub minutes: Vec<CombinedMinute>,
    /// With `--latency`: each access log and the format it was read in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_logs: Vec<AccessLogSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    /// With `--latency`: the coarsest duration step the access logs are
    /// written in, where their formats fix it (nginx: whole milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_resolution_seconds: Option<f64>,
    /// The `latency` figures below that step, which say only "less than it"
    /// (more than half of nginx's `$request_time` values can be `0.000`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency_below_resolution: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
    pub lines: u64,
    pub unparsed_lines: u64,
    pub unparsed_by_kind: BTreeMap<String, u64>,
    pub jvm_restarts: u64,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Pause>>,
    /// With `--latency --events`: every slow request and the stops it overlapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_requests: Option<Vec<SlowRequest>>,
    /// With events: every request after the warm-up, for `compare`'s
    /// per-request bootstrap (not part of analyze's JSON).
    #[serde(skip)]
    pub requests: Option<Vec<RequestTiming>>,
    /// Every JVM restart read (the report marks them; not in analyze's JSON).
    #[serde(skip)]
    pub restarts: Vec<RestartSeen>,
}

/// A new JVM run found in the files: when (if the log has wall-clock time),
/// and the file it began in, the one a user tells the runs by.
#[derive(Debug, Clone)]
pub struct RestartSeen {
    pub time: Option<DateTime<Utc>>,
    pub file: PathBuf,
}

/// One access log as `analyze` read it.
#[derive(Debug, Serialize)]
pub struct AccessLogSummary {
    pub file: PathBuf,
    /// The layout it was read in ([`AccessFormat::expected`]).
    pub format: String,
    /// Whether that layout was detected from its first lines.
    pub detected: bool,
    pub lines: u64,
    pub requests: u64,
    pub malformed: u64,
    /// The duration step its format writes, where the format fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_seconds: Option<f64>,
}

/// The access logs to line up with the GC log.
pub struct LatencyInput {
    /// Several instances behind one fleet, or a rotated set: their requests
    /// are combined.
    pub paths: Vec<PathBuf>,
    /// `None`: detect each file's format from its first lines.
    pub format: Option<AccessFormat>,
    /// Flags that steer detection of JSON lines (`--time-field`, ...).
    pub hints: AccessFields,
    /// Added to every request time (clock skew between the two logs).
    pub offset_seconds: f64,
    pub attribution: AttributionOptions,
}

/// Minutes with requests needed before a correlation coefficient is given.
const MIN_CORRELATION_MINUTES: usize = 10;

/// Nearest-rank percentile of sorted values (exact, no interpolation).
pub fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Parses the files as one stream, in the order given, all events kept (for
/// tests that feed the model themselves; `analyze` folds them as they come).
pub fn parse_files(
    paths: &[PathBuf],
    jvm_start: Option<DateTime<Utc>>,
) -> Result<(Vec<GcEvent>, GcLogParser)> {
    let mut parser = GcLogParser::new(ParserOptions {
        jvm_start,
        ..ParserOptions::default()
    });
    let mut events = Vec::new();
    for path in paths {
        read_gc_log(path, &mut |bytes| parser.feed(bytes, &mut events))?;
    }
    parser.finish(&mut events);
    Ok((events, parser))
}

/// Events held back at most while the clock of a run is undecided (no two
/// of its times near each other yet, [`JvmState::ingest_events`]): past
/// that, the first time is taken, as at the end of the input.
const MAX_HELD_EVENTS: usize = 1 << 16;

/// Reads the files as one stream, in the order given, and folds their
/// events into `fold` as they are parsed: nothing but the fold outlives a
/// stretch of the log (`gc_parallel.rs`), so memory does not grow with it.
fn fold_files(
    paths: &[PathBuf],
    jvm_start: Option<DateTime<Utc>>,
    fold: &mut Fold,
) -> Result<GcLogParser> {
    let mut parser = GcLogParser::new(ParserOptions {
        jvm_start,
        ..ParserOptions::default()
    });
    let mut fresh = Vec::new();
    for path in paths {
        parse_gc_log(path, &mut parser, &mut |fresh| {
            // Noted here, where the file being read is known.
            fold.restarts
                .extend(fresh.iter().filter_map(|event| match event {
                    GcEvent::JvmRestart(r) => Some(RestartSeen {
                        time: r.time.wall,
                        file: path.clone(),
                    }),
                    _ => None,
                }));
            fold.take(fresh, false);
        })?;
    }
    parser.finish(&mut fresh);
    fold.take(&mut fresh, true);
    Ok(parser)
}

pub struct AnalyzeOptions {
    pub jvm_start: Option<DateTime<Utc>>,
    pub include_events: bool,
    pub latency: Option<LatencyInput>,
    /// Leave out the events and requests of the run's first seconds (its
    /// warm-up), counted from its first event with a wall-clock time.
    pub skip_first_seconds: Option<f64>,
}

/// When an event ended (or happened), on the wall clock.
fn event_wall_time(event: &GcEvent) -> Option<DateTime<Utc>> {
    match event {
        GcEvent::Pause(p) => p.end.wall,
        GcEvent::Safepoint(s) => s.end.wall,
        GcEvent::ConcurrentPhase(c) => c.end.wall,
        GcEvent::Cycle(c) => c.end.wall,
        GcEvent::Stall(s) => s.end.wall,
        GcEvent::JvmRestart(r) => r.time.wall,
    }
}

pub fn analyze(paths: &[PathBuf], options: &AnalyzeOptions) -> Result<Report> {
    // The GC log and each access log are read on threads of their own: they
    // are independent until attribution, and archives are large.
    let (parsed, access_logs) = std::thread::scope(|scope| {
        let gc = scope.spawn(|| {
            // An unreadable file is reported by `fold_files`.
            let files = oldest_first(paths.to_vec());
            let mut fold = Fold::new(options);
            fold_files(&files, options.jvm_start, &mut fold).map(|parser| (files, fold, parser))
        });
        let access: Vec<_> = options
            .latency
            .iter()
            .flat_map(|input| input.paths.iter().map(move |path| (path, input)))
            .map(|(path, input)| scope.spawn(move || read_requests(path, input)))
            .collect();
        let access_logs: Result<Vec<_>> = access
            .into_iter()
            .map(|reader| reader.join().expect("an access-log reader panicked"))
            .collect();
        (gc.join().expect("the GC-log reader panicked"), access_logs)
    });
    let (files, fold, parser) = parsed?;
    let access_logs = access_logs?;
    let warm_up_end = fold.warm_up_end();
    let has_stops_without_time = fold.saw_stops && !fold.saw_timed_stop;
    let (mut report, stops) = fold.report(files, &parser);
    if let Some(input) = &options.latency {
        let stops = stops.unwrap_or_default();
        let mut requests = Vec::new();
        for (summary, warning, read) in access_logs {
            report.access_logs.push(summary);
            report.warnings.extend(warning);
            requests.extend(read);
        }
        if let Some(end) = warm_up_end {
            requests.retain(|r| r.start >= end);
        }
        if has_stops_without_time {
            report.warnings.push(
                "the GC log has no wall-clock time, so its stops cannot be lined up with requests; pass --jvm-start (attribution and correlation left out)"
                    .to_string(),
            );
        }
        add_latency(
            &mut report,
            &requests,
            &stops,
            input,
            !has_stops_without_time,
            options.include_events,
        );
        mark_below_resolution(&mut report);
    }
    Ok(report)
}

/// Sets the latency's resolution, the coarsest of the access logs', and
/// names the figures below it.
fn mark_below_resolution(report: &mut Report) {
    let steps = report
        .access_logs
        .iter()
        .filter_map(|l| l.resolution_seconds);
    report.latency_resolution_seconds = steps.reduce(f64::max);
    let (Some(step), Some(l)) = (report.latency_resolution_seconds, report.latency) else {
        return;
    };
    let figures = [
        ("p50_seconds", l.p50_seconds),
        ("p90_seconds", l.p90_seconds),
        ("p99_seconds", l.p99_seconds),
        ("p999_seconds", l.p999_seconds),
        ("max_seconds", l.max_seconds),
    ];
    report.latency_below_resolution = (figures.into_iter())
        .filter(|(_, value)| l.count > 0 && below(*value, step))
        .map(|(name, _)| name)
        .collect();
}

/// Whether `seconds` is under the step `step` (not merely rounded to it).
fn below(seconds: f64, step: f64) -> bool {
    seconds < step * (1.0 - 1e-9)
}

/// A request latency in ms, or `< STEP ms` when it is below the access
/// logs' resolution: nginx's p50 of `0.000` lines is no 0.001 ms.
pub fn latency_ms(report: &Report, seconds: f64) -> String {
    match report.latency_resolution_seconds {
        Some(step) if below(seconds, step) => format!("< {} ms", step * 1000.0),
        _ => format!("{:.3} ms", seconds * 1000.0),
    }
}

/// The format `input` gives, or the one detected from `text`: a preset,
/// else JSON lines by their field names. `true` when detected.
fn format_of(path: &Path, text: &str, input: &LatencyInput) -> Result<(AccessFormat, bool)> {
    if let Some(format) = &input.format {
        return Ok((format.clone(), false));
    }
    if let Some(format) = detect_preset(text.lines()) {
        return Ok((format, true));
    }
    match detect_json(text.lines(), &input.hints) {
        Ok(Some(format)) => Ok((format, true)),
        Err(message) => anyhow::bail!("{}: {message}", path.display()),
        Ok(None) => anyhow::bail!(
            "cannot tell the format of {} (first line: {:?}); pass --latency-format ({}), or --log-format with the server's nginx log_format or Apache LogFormat string",
            path.display(),
            text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default(),
            format_names().join(", ")
        ),
    }
}

/// Reads one access log's requests into `requests`; a warning when most of
/// its lines do not parse. Fails, quoting the first line, when none does.
/// One access log's summary, its warning if most lines did not parse, and its requests.
type AccessLogRead = (AccessLogSummary, Option<String>, Vec<RequestTiming>);

fn read_requests(path: &Path, input: &LatencyInput) -> Result<AccessLogRead> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (format, detected) = format_of(path, &String::from_utf8_lossy(&bytes), input)?;
    let expected = format.expected();
    let resolution_seconds = format.duration_resolution().map(|unit| unit.seconds());
    let mut parser = AccessLogParser::new(format, 64 * 1024).map_err(anyhow::Error::msg)?;
    let mut read = Vec::new();
    parser.feed(&bytes, &mut read);
    parser.finish(&mut read);
    let stats = parser.stats();
    let bad = stats.malformed + stats.too_long;
    let first_bad = stats.first_malformed.as_deref().unwrap_or_default();
    if read.is_empty() {
        anyhow::bail!(
            "no line of {} parses ({bad} of {} lines rejected); first line: {first_bad:?}; expected {expected}",
            path.display(),
            stats.lines
        );
    }
    let warning = (bad > stats.requests).then(|| {
        format!(
            "{bad} of {} lines of {} do not parse (first: {first_bad:?}); expected {expected}",
            stats.lines,
            path.display()
        )
    });
    let offset = pausewatch_parsers::seconds_to_duration(input.offset_seconds);
    let requests = read
        .into_iter()
        .map(|r| RequestTiming {
            start: r.start.checked_add_signed(offset).unwrap_or(r.start),
            duration_s: r.duration_s,
        })
        .collect();
    let summary = AccessLogSummary {
        file: path.to_path_buf(),
        format: expected,
        detected,
        lines: stats.lines,
        requests: stats.requests,
        malformed: bad,
        resolution_seconds,
    };
    Ok((summary, warning, requests))
}

/// Adds the latency summary, attribution, correlation and per-minute latency.
fn add_latency(
    report: &mut Report,
    requests: &[RequestTiming],
    stops: &StopIndex,
    input: &LatencyInput,
    attribute_stops: bool,
    include_events: bool,
) {
    let overall = attribute(requests, stops, &input.attribution);
    report.latency = Some(overall.latency);
    let mut by_minute = per_minute(requests, stops, &input.attribution);
    if !attribute_stops {
        for minute in by_minute.values_mut() {
            minute.attribution = None;
        }
    }
    let gc_minutes = std::mem::take(&mut report.minutes)
        .into_iter()
        .map(|m| m.gc)
        .collect();
    let mut minutes = combine(gc_minutes, &by_minute, true);
    if attribute_stops {
        for minute in &mut minutes {
            minute.attribution.get_or_insert_with(Attribution::default);
        }
    }
    let points: Vec<(f64, LatencySummary)> = minutes
        .iter()
        .filter_map(|m| {
            m.latency
                .filter(|l| l.count > 0)
                .map(|l| (m.gc.pause_max_seconds, l))
        })
        .collect();
    report.minutes = minutes;
    if attribute_stops {
        report.attribution = Some(overall.attribution);
        report.correlation = Some(correlate(&points, MIN_CORRELATION_MINUTES));
        if include_events {
            report.slow_requests = Some(overall.slow);
        }
    }
    if include_events {
        report.requests = Some(requests.to_vec());
    }
}

/// A pause duration ordered as `f64::total_cmp` orders it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Duration(f64);

impl Eq for Duration {}

impl PartialOrd for Duration {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Duration {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Every pause duration with how often it occurred: the exact percentiles
/// of all of them, in memory that follows the distinct durations (logs
/// print them to a fixed resolution), not the number of pauses.
#[derive(Debug, Default)]
struct Durations {
    counts: BTreeMap<Duration, u64>,
    count: u64,
}

impl Durations {
    fn add(&mut self, seconds: f64) {
        *self.counts.entry(Duration(seconds)).or_default() += 1;
        self.count += 1;
    }

    /// The sum in ascending order, as over the sorted list, from +0.0 (an
    /// empty `sum()` is -0.0, printed `-0.000 ms`).
    fn total(&self) -> f64 {
        let mut total = 0.0;
        for (duration, count) in &self.counts {
            for _ in 0..*count {
                total += duration.0;
            }
        }
        total
    }

    fn max(&self) -> f64 {
        self.counts.keys().next_back().map_or(0.0, |d| d.0)
    }

    /// [`percentile`] of the sorted durations.
    fn percentile(&self, quantile: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((quantile * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (duration, count) in &self.counts {
            seen += count;
            if seen >= rank {
                return duration.0;
            }
        }
        unreachable!("rank {rank} is at most the count {seen}")
    }
}

/// The end of the warm-up `--skip-first` leaves out, known from the first
/// event with a wall-clock time on.
enum WarmUp {
    Nothing,
    /// Seconds to skip from the first event with a wall-clock time, not seen yet.
    Waiting(f64),
    Until(Option<DateTime<Utc>>),
}

impl WarmUp {
    /// Whether `event` is past the warm-up (one without wall-clock time always is).
    fn keeps(&mut self, event: &GcEvent) -> bool {
        let Some(time) = event_wall_time(event) else {
            return true;
        };
        if let WarmUp::Waiting(skip) = *self {
            *self = WarmUp::Until(
                time.checked_add_signed(pausewatch_parsers::seconds_to_duration(skip)),
            );
        }
        match self {
            WarmUp::Until(Some(end)) => time >= *end,
            _ => true,
        }
    }
}

/// What `analyze` keeps of the GC log's events as they are read: the model,
/// the report's summaries, and the events themselves only where asked for
/// (`--events`, the stops of `--latency`).
struct Fold {
    jvm: JvmState,
    warm_up: WarmUp,
    /// Parsed events not folded in yet: the clock of their run is undecided.
    held: Vec<GcEvent>,
    durations: Durations,
    by_name: BTreeMap<Name, NameSummary>,
    safepoints: SafepointSummary,
    /// The collector of the first pause, for a log that never names it.
    first_collector: Option<pausewatch_parsers::Collector>,
    pauses: Option<Vec<Pause>>,
    stops: Option<StopIndex>,
    saw_stops: bool,
    saw_timed_stop: bool,
    restarts: Vec<RestartSeen>,
}

impl Fold {
    fn new(options: &AnalyzeOptions) -> Self {
        Fold {
            jvm: JvmState::default(),
            warm_up: options
                .skip_first_seconds
                .filter(|s| *s > 0.0)
                .map_or(WarmUp::Nothing, WarmUp::Waiting),
            held: Vec::new(),
            durations: Durations::default(),
            by_name: BTreeMap::new(),
            safepoints: SafepointSummary {
                count: 0,
                total_seconds: 0.0,
                max_seconds: 0.0,
            },
            first_collector: None,
            pauses: options.include_events.then(Vec::new),
            stops: options.latency.as_ref().map(|_| StopIndex::default()),
            saw_stops: false,
            saw_timed_stop: false,
            restarts: Vec::new(),
        }
    }

    fn warm_up_end(&self) -> Option<DateTime<Utc>> {
        match self.warm_up {
            WarmUp::Until(end) => end,
            _ => None,
        }
    }

    /// Folds in `fresh` (emptied), past the warm-up; with `complete` false
    /// some may wait for the events after them.
    /// Both vectors keep their capacity from call to call: a vector grown
    /// anew for every stretch's events faulted in fresh pages each time
    /// (9,000 page faults on a 47 MB JDK 8 log, at about 3.5 us each).
    fn take(&mut self, fresh: &mut Vec<GcEvent>, complete: bool) {
        let warm_up = &mut self.warm_up;
        if self.held.is_empty() {
            std::mem::swap(&mut self.held, fresh);
            self.held.retain(|event| warm_up.keeps(event));
        } else {
            self.held
                .extend(fresh.drain(..).filter(|event| warm_up.keeps(event)));
        }
        let complete = complete || self.held.len() > MAX_HELD_EVENTS;
        let taken = self.jvm.ingest_events(&self.held, complete, None);
        let mut held = std::mem::take(&mut self.held);
        for event in held.drain(..taken) {
            self.count(event);
        }
        self.held = held;
    }

    fn count(&mut self, event: GcEvent) {
        if matches!(event, GcEvent::Pause(_) | GcEvent::Safepoint(_)) {
            self.saw_stops = true;
            if let Some(stop) = stop_of(&event) {
                self.saw_timed_stop = true;
                if let Some(stops) = &mut self.stops {
                    stops.add(stop);
                }
            }
        }
        match event {
            GcEvent::Pause(pause) => {
                self.durations.add(pause.duration_s);
                // Looked up before inserting, once: a handful of names, every pause.
                let entry = match self.by_name.get_mut(&pause.name) {
                    Some(entry) => entry,
                    None => self
                        .by_name
                        .entry(pause.name.clone())
                        .or_insert_with(|| NameSummary {
                            name: pause.name.to_string(),
                            count: 0,
                            total_seconds: 0.0,
                            max_seconds: 0.0,
                        }),
                };
                entry.count += 1;
                entry.total_seconds += pause.duration_s;
                entry.max_seconds = entry.max_seconds.max(pause.duration_s);
                self.first_collector.get_or_insert(pause.collector);
                if let Some(pauses) = &mut self.pauses {
                    pauses.push(pause);
                }
            }
            GcEvent::Safepoint(s) => {
                let safepoints = &mut self.safepoints;
                safepoints.count += 1;
                safepoints.total_seconds += s.total_s;
                safepoints.max_seconds = safepoints.max_seconds.max(s.total_s);
            }
            _ => {}
        }
    }

    /// The report of the whole log, and the stops with `--latency`.
    fn report(self, files: Vec<PathBuf>, parser: &GcLogParser) -> (Report, Option<StopIndex>) {
        let Fold {
            mut jvm,
            durations,
            by_name,
            safepoints,
            first_collector,
            pauses,
            stops,
            restarts,
            ..
        } = self;
        jvm.note_run(parser.run());
        jvm.minutes.finish();
        if jvm.collector == pausewatch_parsers::Collector::Unknown {
            if let Some(collector) = first_collector {
                jvm.collector = collector;
            }
        }
        let stats = parser.stats();
        let mut warnings = Vec::new();
        if jvm.minutes.unplaced_events > 0 {
            warnings.push(format!(
            "{} events have no wall-clock time (the log has no time decorator and no line with both time and uptime); pass --jvm-start to place them in minutes",
            jvm.minutes.unplaced_events
        ));
        }
        if let Some(legacy) = stats
            .unparsed
            .get(&pausewatch_parsers::UnparsedKind::LegacyFormat)
        {
            warnings.push(format!(
            "{legacy} JDK 8 (-XX:+PrintGCDetails) events could not be read (garbled or cut short); their pauses are missing"
        ));
        }
        if jvm.minutes.clock_outliers > 0 {
            warnings.push(format!(
            "{} events are dated more than a day from the events around them (a wrong clock or a corrupt line): counted, but not placed in minutes",
            jvm.minutes.clock_outliers
        ));
        }
        let filled = jvm.minutes.filled(i64::MIN..i64::MAX, MAX_QUIET_MINUTES);
        if filled.quiet_left_out > 0 {
            warnings.push(format!(
            "quiet minutes are listed for at most {} days: {} quiet minutes between events are left out of `minutes`",
            MAX_QUIET_MINUTES / (24 * 60),
            filled.quiet_left_out
        ));
        }
        let mut unparsed_by_kind: BTreeMap<String, u64> = stats
            .unparsed
            .iter()
            .map(|(kind, count)| (kind.as_str().to_string(), *count))
            .collect();
        if jvm.minutes.clock_outliers > 0 {
            unparsed_by_kind.insert(CLOCK_OUTLIER.to_string(), jvm.minutes.clock_outliers);
        }
        let mut by_name: Vec<NameSummary> = by_name.into_values().collect();
        by_name.sort_by(|a, b| b.total_seconds.total_cmp(&a.total_seconds));
        let report = Report {
            files,
            collector: jvm.collector.as_str().to_string(),
            jdk_version: parser.run().version.clone(),
            pauses: PauseSummary {
                count: durations.count,
                total_seconds: durations.total(),
                max_seconds: durations.max(),
                p50_seconds: durations.percentile(0.50),
                p99_seconds: durations.percentile(0.99),
                p999_seconds: durations.percentile(0.999),
            },
            by_name,
            safepoints,
            minutes: filled
                .minutes
                .into_iter()
                .map(|gc| CombinedMinute {
                    gc,
                    latency: None,
                    attribution: None,
                    ports: Default::default(),
                    access_log_latency: None,
                })
                .collect(),
            access_logs: Vec::new(),
            latency: None,
            latency_resolution_seconds: None,
            latency_below_resolution: Vec::new(),
            attribution: None,
            correlation: None,
            markers: jvm.counters,
            gc_cpu: Some(jvm.gc_cpu).filter(|cpu| !cpu.source.is_empty()),
            lines: stats.lines,
            unparsed_lines: stats.unparsed_total() + jvm.minutes.clock_outliers,
            unparsed_by_kind,
            jvm_restarts: stats.restarts,
            warnings,
            events: pauses,
            slow_requests: None,
            requests: None,
            restarts,
        };
        (report, stops)
    }
}

fn ms(seconds: f64) -> String {
    format!("{:.3}", seconds * 1000.0)
}

/// The human-readable report.
pub fn render_text(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let p = &report.pauses;
    // A Go trace has a runtime, not a JDK.
    if report.collector == pausewatch_parsers::Collector::Go.as_str() {
        let _ = writeln!(out, "runtime: go (gctrace)");
    } else {
        let _ = writeln!(
            out,
            "collector: {}   jdk: {}",
            report.collector,
            report.jdk_version.as_deref().unwrap_or("unknown")
        );
    }
    let _ = writeln!(
        out,
        "lines: {}   unparsed: {}   jvm restarts: {}",
        report.lines, report.unparsed_lines, report.jvm_restarts
    );
    let _ = writeln!(
        out,
        "\npauses: {}   total {} ms   max {} ms   p50 {} ms   p99 {} ms   p99.9 {} ms",
        p.count,
        ms(p.total_seconds),
        ms(p.max_seconds),
        ms(p.p50_seconds),
        ms(p.p99_seconds),
        ms(p.p999_seconds)
    );
    let _ = writeln!(
        out,
        "\n{:<28} {:>8} {:>12} {:>10}",
        "pause", "count", "total ms", "max ms"
    );
    for name in &report.by_name {
        let _ = writeln!(
            out,
            "{:<28} {:>8} {:>12} {:>10}",
            name.name,
            name.count,
            ms(name.total_seconds),
            ms(name.max_seconds)
        );
    }
    let s = &report.safepoints;
    let _ = writeln!(
        out,
        "\nsafepoints: {}   total {} ms   max {} ms",
        s.count,
        ms(s.total_seconds),
        ms(s.max_seconds)
    );
    let m = &report.markers;
    let _ = writeln!(
        out,
        "full GCs: {}   evacuation failures: {}   degenerated: {}   humongous: {}   System.gc(): {}   allocation stalls: {}",
        m.full_gcs, m.evacuation_failures, m.degenerated_gcs, m.humongous_allocations, m.explicit_gcs, m.allocation_stalls
    );
    if let Some(cpu) = &report.gc_cpu {
        let list = |kinds: &BTreeMap<String, f64>| {
            let kinds: Vec<String> = kinds
                .iter()
                .map(|(kind, seconds)| format!("{kind} {} ms", ms(*seconds)))
                .collect();
            kinds.join(", ")
        };
        let busiest = report
            .minutes
            .iter()
            .filter_map(|m| m.gc.gc_cpu_of_available)
            .reduce(f64::max)
            .map(|share| {
                format!(
                    "   busiest minute {:.1} % of the CPUs available",
                    share * 100.0
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "GC CPU: {} ms ({})   beside it: {}{busiest}",
            ms(cpu.total()),
            list(&cpu.kinds),
            list(&cpu.beside),
        );
    }
    for log in &report.access_logs {
        let _ = writeln!(
            out,
            "\naccess log: {}   lines: {}   requests: {}   malformed: {}\n  read as {}{}",
            log.file.display(),
            log.lines,
            log.requests,
            log.malformed,
            log.format,
            if log.detected { " (detected)" } else { "" }
        );
    }
    if let (Some(latency), Some(attribution)) = (&report.latency, &report.attribution) {
        let _ = writeln!(
            out,
            "\nrequests: {}   p50 {}   p99 {}   p99.9 {}   max {}",
            latency.count,
            latency_ms(report, latency.p50_seconds),
            latency_ms(report, latency.p99_seconds),
            latency_ms(report, latency.p999_seconds),
            latency_ms(report, latency.max_seconds)
        );
        let _ = writeln!(
            out,
            "slow (> {} ms): {}   stop-affected: {}   queued behind stops: {}   either (GC-driven): {}   time over the SLO explained by stops: {}   p99.9 without stop-affected: {} ms",
            ms(attribution.slo_seconds),
            attribution.slow_requests,
            attribution.slow_requests_stop_affected,
            attribution.slow_requests_queued_behind_stops,
            attribution.slow_requests_gc_driven,
            attribution
                .explained_share
                .map_or("n/a".to_string(), |share| format!("{:.1} %", share * 100.0)),
            ms(attribution.p999_without_stop_affected_seconds)
        );
    }
    if let Some(correlation) = &report.correlation {
        let coefficient = |r: Option<f64>| r.map_or("n/a".to_string(), |r| format!("{r:.2}"));
        let _ = writeln!(
            out,
            "max pause vs p99.9 over {} minutes: Pearson {}   Spearman {}",
            correlation.minutes,
            coefficient(correlation.pearson_max_pause_p999),
            coefficient(correlation.spearman_max_pause_p999)
        );
    }
    if !report.minutes.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<22} {:>7} {:>12} {:>10} {:>12} {:>10} {:>10} {:>6} {:>8}",
            "minute (UTC)",
            "pauses",
            "total ms",
            "max ms",
            "stopped ms",
            "requests",
            "p99.9 ms",
            "slow",
            "affected"
        );
        for minute in &report.minutes {
            let gc = &minute.gc;
            let (requests, p999) = minute
                .latency
                .map_or(("-".to_string(), "-".to_string()), |l| {
                    // A minute without requests has no p99.9.
                    let p999 = match l.count {
                        0 => "-".to_string(),
                        _ => latency_ms(report, l.p999_seconds).replace(" ms", ""),
                    };
                    (l.count.to_string(), p999)
                });
            let (slow, affected) =
                minute
                    .attribution
                    .map_or(("-".to_string(), "-".to_string()), |a| {
                        (
                            a.slow_requests.to_string(),
                            a.slow_requests_stop_affected.to_string(),
                        )
                    });
            let _ = writeln!(
                out,
                "{:<22} {:>7} {:>12} {:>10} {:>12} {:>10} {:>10} {:>6} {:>8}",
                gc.start.format("%Y-%m-%d %H:%M"),
                gc.pause_count,
                ms(gc.pause_total_seconds),
                ms(gc.pause_max_seconds),
                ms(gc.safepoint_total_seconds),
                requests,
                p999,
                slow,
                affected
            );
        }
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "\nwarning: {warning}");
    }
    out
}
