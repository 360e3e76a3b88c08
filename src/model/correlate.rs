//! How much of a service's tail latency do stops of the JVM explain?
//!
//! Stops are GC pauses and safepoints as intervals of wall-clock time.
//! Requests are `[start, start + duration]`. A request is *stop-affected* when
//! stops cover at least a configured share (25 %) of it. Per minute (by request
//! completion) the correlator reports the latency distribution, how many slow
//! requests were stop-affected, how much of the slow requests' time over the
//! SLO the overlapping stops explain, and what the p99.9 would have been
//! without the stop-affected requests; over a sliding window it reports the
//! Pearson and Spearman correlation of each minute's maximum pause with its
//! p99 and p99.9.

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use pausewatch_parsers::{GcEvent, LogTime, Name};
use serde::{Deserialize, Serialize};

use crate::model::minutes::{minute_of, minute_start, Minute};

/// Latencies are recorded in microseconds, from 1 µs to 1 hour, 3 significant digits.
const HISTOGRAM_MAX_MICROS: u64 = 3_600_000_000;

fn micros(seconds: f64) -> u64 {
    ((seconds * 1e6).round() as u64).clamp(1, HISTOGRAM_MAX_MICROS)
}

fn seconds_between(start: DateTime<Utc>, end: DateTime<Utc>) -> f64 {
    (end - start).num_nanoseconds().unwrap_or(i64::MAX) as f64 / 1e9
}

/// `start` moved `seconds` earlier, saturating (a garbage duration must not panic).
fn before(start: DateTime<Utc>, seconds: f64) -> DateTime<Utc> {
    start
        .checked_sub_signed(pausewatch_parsers::seconds_to_duration(seconds))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// `start` moved `seconds` later, saturating.
fn after(start: DateTime<Utc>, seconds: f64) -> DateTime<Utc> {
    start
        .checked_add_signed(pausewatch_parsers::seconds_to_duration(seconds))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// One stop of the application threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// `Pause Young`, `Safepoint G1CollectForAllocation`, ...
    pub name: Name,
}

/// The stops an event describes, when it has wall-clock time.
pub fn stop_of(event: &GcEvent) -> Option<Stop> {
    let wall = |t: &LogTime| t.wall;
    match event {
        GcEvent::Pause(p) => Some(Stop {
            start: wall(&p.start)?,
            end: wall(&p.end)?,
            name: p.name.clone(),
        }),
        GcEvent::Safepoint(s) => Some(Stop {
            start: wall(&s.start)?,
            end: wall(&s.end)?,
            name: {
                let mut name = Name::from("Safepoint ");
                name.push_str(s.operation.as_deref().unwrap_or("unknown"));
                name
            },
        }),
        _ => None,
    }
}

/// Stops ordered by start; overlaps (a GC pause inside its safepoint) are
/// counted once when measuring how much of a request they cover.
#[derive(Debug, Clone, Default)]
pub struct StopIndex {
    /// The checkpoint journal writes the stops apart, as they arrive.
    stops: VecDeque<Stop>,
    /// The longest stop, so a search by start can reach every overlapping one.
    pub(crate) longest_s: f64,
    /// Where the last pruning that dropped stops cut: stops restored from
    /// the journal that start before it are dropped again.
    pub(crate) pruned_before: Option<DateTime<Utc>>,
}

impl StopIndex {
    /// An index as a checkpoint recorded it, its stops to be put back by
    /// [`Self::restore`].
    pub(crate) fn restored(longest_s: f64, pruned_before: Option<DateTime<Utc>>) -> StopIndex {
        StopIndex {
            stops: VecDeque::new(),
            longest_s,
            pruned_before,
        }
    }

    pub fn add(&mut self, stop: Stop) {
        self.longest_s = self.longest_s.max(seconds_between(stop.start, stop.end));
        let index = self.stops.partition_point(|s| s.start <= stop.start);
        self.stops.insert(index, stop);
    }

    /// Stops overlapping `[start, end]`.
    pub fn overlapping(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> impl Iterator<Item = &Stop> {
        let earliest = before(start, self.longest_s);
        let first = self.stops.partition_point(|s| s.start < earliest);
        self.stops
            .range(first..)
            .take_while(move |s| s.start < end)
            .filter(move |s| s.end > start)
    }

    /// Seconds of `[start, end]` covered by the union of the stops.
    pub fn covered_seconds(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> f64 {
        let mut covered = 0.0;
        let mut reached = start;
        for stop in self.overlapping(start, end) {
            let from = stop.start.max(reached);
            let to = stop.end.min(end);
            if to > from {
                covered += seconds_between(from, to);
                reached = to;
            }
        }
        covered
    }

    pub fn prune_before(&mut self, time: DateTime<Utc>) {
        let earliest = before(time, self.longest_s);
        if self.stops.front().is_some_and(|s| s.start < earliest) {
            self.pruned_before = Some(earliest);
        }
        while self.stops.front().is_some_and(|s| s.start < earliest) {
            self.stops.pop_front();
        }
    }

    /// The stops, by start.
    pub fn iter(&self) -> impl Iterator<Item = &Stop> {
        self.stops.iter()
    }

    /// Puts back stops read from a checkpoint journal, in the order they
    /// arrived, without those an earlier pruning dropped.
    pub fn restore(&mut self, stops: impl IntoIterator<Item = Stop>) {
        for stop in stops {
            if self.pruned_before.is_none_or(|cut| stop.start >= cut) {
                self.add(stop);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.stops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stops.is_empty()
    }
}

/// A request as the access log gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestTiming {
    pub start: DateTime<Utc>,
    pub duration_s: f64,
}

impl RequestTiming {
    pub fn end(&self) -> DateTime<Utc> {
        after(self.start, self.duration_s)
    }
}

/// Request latency of a minute or a run. In JSON a minute without requests
/// (the one in progress, a quiet one) has `null` figures: a `0.0` there
/// would read as requests that took no time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "LatencyJson", from = "LatencyJson")]
pub struct LatencySummary {
    pub count: u64,
    pub p50_seconds: f64,
    pub p90_seconds: f64,
    pub p99_seconds: f64,
    pub p999_seconds: f64,
    pub max_seconds: f64,
}

/// [`LatencySummary`] as JSON: its figures `None` without requests.
#[derive(Serialize, Deserialize)]
struct LatencyJson {
    count: u64,
    p50_seconds: Option<f64>,
    p90_seconds: Option<f64>,
    p99_seconds: Option<f64>,
    p999_seconds: Option<f64>,
    max_seconds: Option<f64>,
}

impl From<LatencySummary> for LatencyJson {
    fn from(l: LatencySummary) -> Self {
        let [p50_seconds, p90_seconds, p99_seconds, p999_seconds, max_seconds] = l.figures();
        LatencyJson {
            count: l.count,
            p50_seconds,
            p90_seconds,
            p99_seconds,
            p999_seconds,
            max_seconds,
        }
    }
}

impl From<LatencyJson> for LatencySummary {
    fn from(l: LatencyJson) -> Self {
        let figures = [
            l.p50_seconds,
            l.p90_seconds,
            l.p99_seconds,
            l.p999_seconds,
            l.max_seconds,
        ];
        LatencySummary::from_figures(l.count, figures)
    }
}

impl LatencySummary {
    /// p50, p90, p99, p99.9 and the maximum, absent when no request was
    /// counted (not zero): as the API and the checkpoint write them.
    pub(crate) fn figures(&self) -> [Option<f64>; 5] {
        let figure = |value: f64| (self.count > 0).then_some(value);
        [
            figure(self.p50_seconds),
            figure(self.p90_seconds),
            figure(self.p99_seconds),
            figure(self.p999_seconds),
            figure(self.max_seconds),
        ]
    }

    /// The summary of `count` requests with [`Self::figures`].
    pub(crate) fn from_figures(count: u64, figures: [Option<f64>; 5]) -> LatencySummary {
        let [p50, p90, p99, p999, max] = figures.map(|figure| figure.unwrap_or(0.0));
        LatencySummary {
            count,
            p50_seconds: p50,
            p90_seconds: p90,
            p99_seconds: p99,
            p999_seconds: p999,
            max_seconds: max,
        }
    }

    /// Quantiles of `histogram`, with the exact `max_seconds` of what it
    /// recorded: HdrHistogram keeps 3 significant digits, so its own max
    /// (and a top quantile) can come out above the slowest request
    /// (0.142975 s for 0.142869 s); no figure is reported above the exact max.
    fn of(histogram: &Histogram<u64>, max_seconds: f64) -> LatencySummary {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        let q =
            |quantile: f64| (histogram.value_at_quantile(quantile) as f64 / 1e6).min(max_seconds);
        LatencySummary {
            count: histogram.len(),
            p50_seconds: q(0.50),
            p90_seconds: q(0.90),
            p99_seconds: q(0.99),
            p999_seconds: q(0.999),
            max_seconds,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The threshold that made a request slow: the SLO, or the p99.9 when none is set.
    pub slo_seconds: f64,
    pub slow_requests: u64,
    pub slow_requests_stop_affected: u64,
    /// Slow requests that arrived during a stop, or while requests that
    /// arrived during it were still waiting: the backlog a stop leaves
    /// drains after it ends, so most late requests wait behind it without
    /// being stopped themselves (see [`backlogs`]).
    #[serde(default)]
    pub slow_requests_queued_behind_stops: u64,
    /// Slow requests either rule puts on the stops (stop-affected, or
    /// queued behind a stop): the answer to "is the tail GC?".
    #[serde(default)]
    pub slow_requests_gc_driven: u64,
    /// Share of the slow requests' time over the SLO that overlapping stops
    /// explain; `None` when no request was slow (nothing to explain, which
    /// is not "stops explain none of it").
    pub explained_share: Option<f64>,
    /// The p99.9 had the stops not happened: over the same requests, each
    /// stop-affected one shortened by the time stops covered it. Leaving
    /// those requests out instead would move the rank, so that the figure
    /// could come out above the p99.9 itself; this one never does.
    pub p999_without_stop_affected_seconds: f64,
}

/// A slow request and the stops it overlapped: the request-level answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRequest {
    pub start: DateTime<Utc>,
    pub duration_seconds: f64,
    pub stopped_seconds: f64,
    pub stop_affected: bool,
    /// It arrived in a stop's backlog.
    #[serde(default)]
    pub queued_behind_stop: bool,
    pub stops: Vec<Stop>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AttributionOptions {
    /// Requests slower than this are slow; `None`: the p99.9 of the set.
    pub slo_seconds: Option<f64>,
    /// Share of a request's duration stops must cover to make it stop-affected.
    pub affected_share: f64,
}

impl Default for AttributionOptions {
    fn default() -> Self {
        AttributionOptions {
            slo_seconds: None,
            affected_share: 0.25,
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_MICROS, 3).expect("valid histogram bounds")
}

/// Everything the attribution says about one set of requests (a minute, or a whole run).
pub struct Attributed {
    pub latency: LatencySummary,
    pub attribution: Attribution,
    pub slow: Vec<SlowRequest>,
}

/// The stretches in which an arriving request queued behind a stop: from
/// each stop's start (overlapping stops taken together) until the last
/// request that arrived during it completed. By start, each with the
/// latest end of it and those before it, for [`queued_behind`].
fn backlogs(requests: &[RequestTiming], stops: &StopIndex) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let (Some(first), Some(last)) = (
        requests.iter().map(|r| r.start).min(),
        requests.iter().map(|r| r.start).max(),
    ) else {
        return Vec::new();
    };
    let mut windows: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
    for stop in stops.overlapping(first, after(last, 1e-6)) {
        match windows.last_mut() {
            Some((_, end)) if stop.start <= *end => *end = (*end).max(stop.end),
            _ => windows.push((stop.start, stop.end)),
        }
    }
    let stopped: Vec<(DateTime<Utc>, DateTime<Utc>)> = windows.clone();
    for request in requests {
        let index = stopped.partition_point(|(start, _)| *start <= request.start);
        if index > 0 && request.start <= stopped[index - 1].1 {
            let drained = &mut windows[index - 1].1;
            *drained = (*drained).max(request.end());
        }
    }
    let mut latest = DateTime::<Utc>::MIN_UTC;
    for window in &mut windows {
        latest = latest.max(window.1);
        window.1 = latest;
    }
    windows
}

/// Whether a request begun at `start` arrived in one of `backlogs`.
fn queued_behind(backlogs: &[(DateTime<Utc>, DateTime<Utc>)], start: DateTime<Utc>) -> bool {
    let index = backlogs.partition_point(|(begun, _)| *begun <= start);
    index > 0 && start < backlogs[index - 1].1
}

/// The latency of a set of request durations, in seconds.
pub fn summarize(durations: impl Iterator<Item = f64>) -> LatencySummary {
    let mut all = new_histogram();
    let mut max = 0.0f64;
    for duration in durations {
        all.saturating_record(micros(duration));
        max = max.max(duration);
    }
    LatencySummary::of(&all, max)
}

/// Attributes a set of requests to the stops.
pub fn attribute(
    requests: &[RequestTiming],
    stops: &StopIndex,
    options: &AttributionOptions,
) -> Attributed {
    let latency = summarize(requests.iter().map(|r| r.duration_s));
    let threshold = options.slo_seconds.unwrap_or(latency.p999_seconds);
    let mut without_stops = new_histogram();
    let mut without_max = 0.0f64;
    let mut slow = Vec::new();
    let mut affected_count = 0;
    let mut queued_count = 0;
    let mut gc_driven_count = 0;
    let backlogs = backlogs(requests, stops);
    let (mut excess_total, mut excess_explained) = (0.0, 0.0);
    for request in requests {
        let end = request.end();
        let stopped = stops.covered_seconds(request.start, end);
        let affected =
            request.duration_s > 0.0 && stopped >= options.affected_share * request.duration_s;
        let counterfactual = if affected {
            (request.duration_s - stopped).max(0.0)
        } else {
            request.duration_s
        };
        without_stops.saturating_record(micros(counterfactual));
        without_max = without_max.max(counterfactual);
        if request.duration_s > threshold {
            let excess = request.duration_s - threshold;
            excess_total += excess;
            excess_explained += stopped.min(excess);
            affected_count += u64::from(affected);
            let queued = queued_behind(&backlogs, request.start);
            queued_count += u64::from(queued);
            gc_driven_count += u64::from(affected || queued);
            slow.push(SlowRequest {
                start: request.start,
                duration_seconds: request.duration_s,
                stopped_seconds: stopped,
                stop_affected: affected,
                queued_behind_stop: queued,
                stops: stops.overlapping(request.start, end).cloned().collect(),
            });
        }
    }
    Attributed {
        latency,
        attribution: Attribution {
            slo_seconds: threshold,
            slow_requests: slow.len() as u64,
            slow_requests_stop_affected: affected_count,
            slow_requests_queued_behind_stops: queued_count,
            slow_requests_gc_driven: gc_driven_count,
            explained_share: (excess_total > 0.0).then(|| excess_explained / excess_total),
            p999_without_stop_affected_seconds: LatencySummary::of(&without_stops, without_max)
                .p999_seconds,
        },
        slow,
    }
}

/// One minute of latency next to the stops of the same minute.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyMinute {
    pub start: DateTime<Utc>,
    pub latency: LatencySummary,
    /// Absent when latency comes from a histogram: no request to attribute.
    pub attribution: Option<Attribution>,
    /// The same minute by listening port, when the kernel measured it: an
    /// admin port's health checks do not dilute the service's tail.
    pub ports: BTreeMap<u16, LatencySummary>,
}

/// A minute of GC figures with, when a latency source exists, the latency
/// and attribution of the same minute: the row a dashboard lines up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CombinedMinute {
    #[serde(flatten)]
    pub gc: Minute,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// `latency` by listening port (see [`LatencyMinute::ports`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ports: BTreeMap<u16, LatencySummary>,
    /// The access log's view of the same requests, where the kernel's is
    /// `latency` (see [`crate::model::latency::LatencyState::server`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log_latency: Option<LatencySummary>,
}

impl From<Minute> for CombinedMinute {
    /// A GC minute with no latency (yet).
    fn from(gc: Minute) -> CombinedMinute {
        CombinedMinute {
            gc,
            latency: None,
            attribution: None,
            ports: BTreeMap::new(),
            access_log_latency: None,
        }
    }
}

/// Joins GC minutes and latency minutes by start. Minutes only one side has
/// are kept; with `fill`, every minute gets a latency (zeros when quiet) so
/// that the series has one shape.
pub fn combine<'a>(
    gc: Vec<Minute>,
    latency: impl IntoIterator<Item = (&'a i64, &'a LatencyMinute)>,
    fill: bool,
) -> Vec<CombinedMinute> {
    let mut latency = latency.into_iter().peekable();
    if latency.peek().is_none() && !fill {
        // GC minutes alone (most streams): already in order, nothing to join.
        return gc.into_iter().map(CombinedMinute::from).collect();
    }
    let mut minutes: BTreeMap<i64, CombinedMinute> = gc
        .into_iter()
        .map(|gc| (gc.start.timestamp(), CombinedMinute::from(gc)))
        .collect();
    for (key, latency_minute) in latency {
        let entry = minutes.entry(*key).or_insert_with(|| {
            CombinedMinute::from(Minute {
                start: latency_minute.start,
                ..Minute::default()
            })
        });
        entry.latency = Some(latency_minute.latency);
        entry.attribution = latency_minute.attribution;
        entry.ports.clone_from(&latency_minute.ports);
    }
    if fill {
        for minute in minutes.values_mut() {
            minute.latency.get_or_insert_with(LatencySummary::default);
        }
    }
    minutes.into_values().collect()
}

/// Pearson and Spearman coefficients over the minutes that have requests.
/// `Serialize` for `analyze`'s report; the checkpoint has its own record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Correlation {
    pub minutes: u64,
    pub pearson_max_pause_p99: Option<f64>,
    pub spearman_max_pause_p99: Option<f64>,
    pub pearson_max_pause_p999: Option<f64>,
    pub spearman_max_pause_p999: Option<f64>,
}

pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || n != y.len() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n as f64;
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Ranks with ties sharing their average rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let average = (i + j) as f64 / 2.0 + 1.0;
        for &index in &order[i..=j] {
            ranks[index] = average;
        }
        i = j + 1;
    }
    ranks
}

pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&ranks(x), &ranks(y))
}

/// Correlation of per-minute max pause with p99 and p99.9, given minutes with
/// requests and their max pause; `None` coefficients below `min_minutes`.
pub fn correlate(points: &[(f64, LatencySummary)], min_minutes: usize) -> Correlation {
    let minutes = points.len() as u64;
    if points.len() < min_minutes {
        return Correlation {
            minutes,
            ..Correlation::default()
        };
    }
    let pauses: Vec<f64> = points.iter().map(|(pause, _)| *pause).collect();
    let p99: Vec<f64> = points.iter().map(|(_, l)| l.p99_seconds).collect();
    let p999: Vec<f64> = points.iter().map(|(_, l)| l.p999_seconds).collect();
    Correlation {
        minutes,
        pearson_max_pause_p99: pearson(&pauses, &p99),
        spearman_max_pause_p99: spearman(&pauses, &p99),
        pearson_max_pause_p999: pearson(&pauses, &p999),
        spearman_max_pause_p999: spearman(&pauses, &p999),
    }
}

/// The minute (epoch seconds) a request completed in.
pub fn completion_minute(request: &RequestTiming) -> i64 {
    minute_of(request.end())
}

/// Groups requests by completion minute and attributes each minute.
pub fn per_minute(
    requests: &[RequestTiming],
    stops: &StopIndex,
    options: &AttributionOptions,
) -> BTreeMap<i64, LatencyMinute> {
    let mut by_minute: BTreeMap<i64, Vec<RequestTiming>> = BTreeMap::new();
    for request in requests {
        by_minute
            .entry(completion_minute(request))
            .or_default()
            .push(*request);
    }
    by_minute
        .into_iter()
        .map(|(key, minute_requests)| {
            let attributed = attribute(&minute_requests, stops, options);
            (
                key,
                LatencyMinute {
                    start: minute_start(key),
                    latency: attributed.latency,
                    attribution: Some(attributed.attribution),
                    ports: BTreeMap::new(),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        chrono::TimeZone::timestamp_millis_opt(&Utc, 1_800_000_000_000 + ms).unwrap()
    }

    fn stop(from_ms: i64, to_ms: i64) -> Stop {
        Stop {
            start: at(from_ms),
            end: at(to_ms),
            name: "Pause Young".into(),
        }
    }

    #[test]
    fn overlapping_stops_are_counted_once() {
        let mut stops = StopIndex::default();
        stops.add(stop(100, 200)); // a safepoint
        stops.add(stop(110, 190)); // the pause inside it
        stops.add(stop(500, 520));
        assert!((stops.covered_seconds(at(0), at(1000)) - 0.120).abs() < 1e-9);
        assert!((stops.covered_seconds(at(150), at(510)) - 0.060).abs() < 1e-9);
        assert_eq!(stops.overlapping(at(150), at(510)).count(), 3);
        stops.prune_before(at(400));
        assert_eq!(stops.len(), 1);
    }

    #[test]
    fn a_request_is_stop_affected_from_a_quarter_of_its_time() {
        let mut stops = StopIndex::default();
        stops.add(stop(1000, 1100));
        let requests = [
            // 100 ms stopped of 300 ms: affected, slow.
            RequestTiming {
                start: at(900),
                duration_s: 0.300,
            },
            // 100 ms stopped of 500 ms: 20 %, not affected, but slow.
            RequestTiming {
                start: at(950),
                duration_s: 0.500,
            },
            // Fast requests away from the stop.
            RequestTiming {
                start: at(2000),
                duration_s: 0.010,
            },
            RequestTiming {
                start: at(2100),
                duration_s: 0.012,
            },
        ];
        let options = AttributionOptions {
            slo_seconds: Some(0.050),
            affected_share: 0.25,
        };
        let result = attribute(&requests, &stops, &options);
        assert_eq!(result.attribution.slow_requests, 2);
        assert_eq!(result.attribution.slow_requests_stop_affected, 1);
        // Excess over 50 ms: 250 + 450 = 700 ms; stops explain 100 + 100 ms.
        assert!((result.attribution.explained_share.unwrap() - 200.0 / 700.0).abs() < 1e-9);
        // The affected request is 200 ms without its stop; the unaffected
        // 500 ms one is now the slowest.
        assert!((result.attribution.p999_without_stop_affected_seconds - 0.500).abs() < 0.001);
        assert_eq!(result.slow[0].stops.len(), 1);
    }

    /// A 100 ms stop at 1,000 ms. Requests arriving in it wait for it and
    /// then drain one by one; one arriving after the stop ended but while
    /// the last of those still waited queues behind it too, though no stop
    /// covers it. One arriving after the backlog drained does not.
    #[test]
    fn a_request_queued_behind_a_stop_is_counted_though_no_stop_covers_it() {
        let mut stops = StopIndex::default();
        stops.add(stop(1000, 1100)); // a safepoint
        stops.add(stop(1010, 1090)); // the pause inside it
        let request = |start_ms: i64, duration_ms: i64| RequestTiming {
            start: at(start_ms),
            duration_s: duration_ms as f64 / 1e3,
        };
        let requests = [
            request(960, 240),  // stopped for 100 of its 240 ms: affected, not queued
            request(1050, 150), // arrived in the stop, done at 1,200
            request(1090, 180), // arrived in the stop, done at 1,270: the backlog drains
            request(1150, 110), // after the stop, before 1,270: queued
            request(1300, 60),  // after the backlog: slow, not queued
            request(1400, 5),
        ];
        let options = AttributionOptions {
            slo_seconds: Some(0.050),
            affected_share: 0.25,
        };
        let result = attribute(&requests, &stops, &options);
        assert_eq!(result.attribution.slow_requests, 5);
        // Covered a quarter by the stop: the first two.
        assert_eq!(result.attribution.slow_requests_stop_affected, 2);
        assert_eq!(result.attribution.slow_requests_queued_behind_stops, 3);
        let queued: Vec<bool> = result.slow.iter().map(|r| r.queued_behind_stop).collect();
        assert_eq!(queued, [false, true, true, true, false]);
        // Either rule: all but the last.
        assert_eq!(result.attribution.slow_requests_gc_driven, 4);
        // No stop: nothing queued.
        let none = attribute(&requests, &StopIndex::default(), &options);
        assert_eq!(none.attribution.slow_requests_queued_behind_stops, 0);
    }

    /// 1,000 requests: 993 of 1 ms, two slow ones (100 and 90 ms) no stop
    /// touched, and five of 2 ms each fully covered by a stop. The p99.9 is
    /// the 999th value, 90 ms. Leaving the five out would make it the 995th
    /// of 995, 100 ms: above the p99.9. Taking their stopped time out keeps
    /// the rank: still 90 ms.
    #[test]
    fn the_tail_without_stops_is_never_above_the_tail() {
        let mut stops = StopIndex::default();
        stops.add(stop(50_000, 50_100));
        let mut requests = vec![
            RequestTiming {
                start: at(0),
                duration_s: 0.001,
            };
            993
        ];
        requests.push(RequestTiming {
            start: at(10_000),
            duration_s: 0.100,
        });
        requests.push(RequestTiming {
            start: at(20_000),
            duration_s: 0.090,
        });
        for i in 0..5 {
            requests.push(RequestTiming {
                start: at(50_000 + 10 * i),
                duration_s: 0.002,
            });
        }
        let result = attribute(&requests, &stops, &AttributionOptions::default());
        assert!((result.latency.p999_seconds - 0.090).abs() < 0.0001);
        let without = result.attribution.p999_without_stop_affected_seconds;
        assert!((without - 0.090).abs() < 0.0001, "{without}");
    }

    #[test]
    fn pearson_and_spearman_on_hand_computed_series() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!((pearson(&x, &y).unwrap() - 1.0).abs() < 1e-12);
        // Monotonic but not linear: Spearman 1, Pearson below 1.
        let z = [1.0, 8.0, 27.0, 64.0, 125.0];
        assert!((spearman(&x, &z).unwrap() - 1.0).abs() < 1e-12);
        assert!(pearson(&x, &z).unwrap() < 0.99);
        // x = 1..4, y = 1,3,2,4: r = 0.8 (by hand: sxy = 4, sxx = syy = 5).
        assert!(
            (pearson(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap() - 0.8).abs() < 1e-12
        );
        assert_eq!(ranks(&[10.0, 20.0, 10.0]), vec![1.5, 3.0, 1.5]);
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
    }

    /// The slowest request of the recorded run's fixture is 113.013 ms
    /// (`duration_ms` in tests/fixtures/latency/jdk17-parallel/access.jsonl);
    /// HdrHistogram's 3 digits report 113.023 ms (as the version-1
    /// checkpoint fixture, written from that run, still shows).
    #[test]
    fn the_max_is_the_slowest_request_exactly_and_no_quantile_is_above_it() {
        let requests: Vec<RequestTiming> = [0.001, 0.002, 0.113013]
            .into_iter()
            .map(|duration_s| RequestTiming {
                start: at(0),
                duration_s,
            })
            .collect();
        let result = attribute(
            &requests,
            &StopIndex::default(),
            &AttributionOptions::default(),
        );
        assert_eq!(result.latency.max_seconds, 0.113013);
        assert!(result.latency.p999_seconds <= 0.113013);
        assert!(result.attribution.p999_without_stop_affected_seconds <= 0.113013);
    }

    #[test]
    fn nothing_slow_explains_nothing_rather_than_none_of_it() {
        let requests = [RequestTiming {
            start: at(0),
            duration_s: 0.001,
        }];
        let options = AttributionOptions {
            slo_seconds: Some(0.050),
            affected_share: 0.25,
        };
        let result = attribute(&requests, &StopIndex::default(), &options);
        assert_eq!(result.attribution.slow_requests, 0);
        assert_eq!(result.attribution.explained_share, None);
        let json = serde_json::to_value(result.attribution).unwrap();
        assert!(json["explained_share"].is_null(), "{json}");
    }
}
