//! The agent's live view of one service's request latency next to its JVM's
//! stops. Requests wait in their completion minute until the minute is over
//! and both logs have had time to catch up; the minute is then attributed
//! once, and its summary kept for the API, the metrics and the correlation.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use pausewatch_parsers::GcEvent;
use serde::{Deserialize, Serialize};

use crate::model::changes::{Arrivals, Changes};
use crate::model::correlate::{
    attribute, completion_minute, correlate, stop_of, summarize, AttributionOptions, Correlation,
    LatencyMinute, LatencySummary, RequestTiming, Stop, StopIndex,
};
use crate::model::histogram::Histogram;
use crate::model::minutes::{minute_start, MinuteWindows};

/// How the agent attributes and correlates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrelationSettings {
    pub attribution: AttributionOptions,
    /// Minutes in the sliding correlation window.
    pub window_minutes: usize,
    /// Fewer minutes with requests than this: no coefficient.
    pub min_minutes: usize,
    /// How long after a minute ends its requests are attributed (late log lines).
    pub finalize_after_seconds: i64,
}

impl Default for CorrelationSettings {
    fn default() -> Self {
        CorrelationSettings {
            attribution: AttributionOptions::default(),
            window_minutes: 60,
            min_minutes: 10,
            finalize_after_seconds: 15,
        }
    }
}

/// Malformed lines among the last lines of an access log: the block being
/// filled and the one before, so the share covers the last
/// [`MalformedWindow::BLOCK`] to twice as many lines. A wrong format shows at
/// once, and a log fixed later recovers within two blocks, where a
/// share over every line ever read would take ages.
/// Crate-visible for the checkpoint's record of it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MalformedWindow {
    pub(crate) lines: u64,
    pub(crate) malformed: u64,
    pub(crate) previous_lines: u64,
    pub(crate) previous_malformed: u64,
}

impl MalformedWindow {
    pub const BLOCK: u64 = 500;

    /// Counts `lines` non-blank lines read, `malformed` of them not parsed.
    pub fn add(&mut self, lines: u64, malformed: u64) {
        self.lines += lines;
        self.malformed += malformed;
        if self.lines >= Self::BLOCK {
            self.previous_lines = self.lines;
            self.previous_malformed = self.malformed;
            self.lines = 0;
            self.malformed = 0;
        }
    }

    /// Non-blank lines the share is taken over.
    pub fn lines(&self) -> u64 {
        self.lines + self.previous_lines
    }

    /// Those of them that did not parse.
    pub fn malformed(&self) -> u64 {
        self.malformed + self.previous_malformed
    }

    /// The share of those lines that did not parse; `None` before any line.
    pub fn ratio(&self) -> Option<f64> {
        let lines = self.lines();
        (lines > 0).then(|| self.malformed() as f64 / lines as f64)
    }
}

#[derive(Debug, Clone, Default)]
pub struct LatencyCounters {
    pub requests: u64,
    pub slow_requests: u64,
    pub slow_requests_stop_affected: u64,
    /// Slow requests that queued behind a stop (see `Attribution`).
    pub slow_requests_queued_behind_stops: u64,
    /// Slow requests stop-affected or queued behind a stop.
    pub slow_requests_gc_driven: u64,
    /// Requests whose minute was already attributed when they arrived.
    pub late_requests: u64,
    /// Requests by the JVM's listening port, when the kernel measures them.
    pub requests_by_port: BTreeMap<u16, u64>,
}

#[derive(Debug, Clone, Default)]
pub struct LatencyState {
    pub stops: StopIndex,
    /// Requests waiting for their minute to be attributed, in arrival order.
    /// This and `minutes` are not in a checkpoint's record of the state: the
    /// journal writes what changed apart.
    pending: BTreeMap<i64, Vec<RequestTiming>>,
    /// The pending requests' durations by listening port, when the kernel
    /// measured them. Not in a checkpoint: after a restart the minute
    /// waiting then has the JVM's figures only.
    pending_by_port: BTreeMap<i64, BTreeMap<u16, Vec<f64>>>,
    /// Attributed minutes, oldest first.
    pub minutes: BTreeMap<i64, LatencyMinute>,
    /// Every request's duration, as it arrives.
    pub histogram: Histogram,
    pub counters: LatencyCounters,
    pub correlation: Correlation,
    /// The newest minute attributed: requests completing in or before it are late.
    pub(crate) finalized_through: Option<i64>,
    /// The newest minute whose requests `finalize` has closed, with requests
    /// or not: a newer one than the last attributed means traffic stopped.
    pub(crate) closed_through: Option<i64>,
    /// Which `minutes` changed, and the stops as they arrived: for the journal.
    minute_changes: Changes,
    arrived_stops: Arrivals<Stop>,
    /// The service's own view (its access log) of the requests the kernel
    /// measures here, kept beside them: the difference is the time requests
    /// waited before the server read them. Not in a checkpoint: after a
    /// restart it starts again from the access log's next lines.
    pub server: Option<Box<LatencyState>>,
}

impl LatencyState {
    /// Records a GC pause or safepoint as a stop.
    pub fn add_event(&mut self, event: &GcEvent) {
        if let Some(server) = &mut self.server {
            server.add_event(event);
        }
        if let Some(stop) = stop_of(event) {
            self.arrived_stops.push(stop.clone());
            self.stops.add(stop);
        }
    }

    /// The access log's view beside the kernel's, begun with the stops
    /// known so far so that its requests are attributed alike.
    pub fn server_view(&mut self) -> &mut LatencyState {
        let stops = &self.stops;
        self.server.get_or_insert_with(|| {
            Box::new(LatencyState {
                stops: stops.clone(),
                ..LatencyState::default()
            })
        })
    }

    /// Makes what was measured so far (an access log's requests) the
    /// server's view, for the kernel's requests to take its place.
    pub fn make_server_view(&mut self) {
        let server = std::mem::take(self);
        self.stops = server.stops.clone();
        self.server = Some(Box::new(server));
    }

    pub fn add_request(&mut self, request: RequestTiming) {
        self.counters.requests += 1;
        self.histogram.observe(request.duration_s);
        let minute = completion_minute(&request);
        if self.finalized_through.is_some_and(|done| minute <= done) {
            self.counters.late_requests += 1;
            return;
        }
        self.pending.entry(minute).or_default().push(request);
    }

    /// A request the kernel measured on the JVM's listening `port`: the
    /// JVM's request, and its port's.
    pub fn add_port_request(&mut self, request: RequestTiming, port: u16) {
        *self.counters.requests_by_port.entry(port).or_default() += 1;
        let minute = completion_minute(&request);
        if self.finalized_through.is_none_or(|done| minute > done) {
            let ports = self.pending_by_port.entry(minute).or_default();
            ports.entry(port).or_default().push(request.duration_s);
        }
        self.add_request(request);
    }

    /// A minute summarised from a latency histogram (no requests to attribute).
    pub fn add_histogram_minute(&mut self, start: DateTime<Utc>, latency: LatencySummary) {
        self.counters.requests += latency.count;
        self.minute_changes.touch(start.timestamp());
        self.minutes.insert(
            start.timestamp(),
            LatencyMinute {
                start,
                latency,
                attribution: None,
                ports: BTreeMap::new(),
            },
        );
    }

    /// Attributes every pending minute that ended `finalize_after_seconds`
    /// before `now`, then recomputes the correlation over the window.
    pub fn finalize(
        &mut self,
        now: DateTime<Utc>,
        settings: &CorrelationSettings,
        pauses: &MinuteWindows,
    ) {
        if let Some(server) = &mut self.server {
            server.finalize(now, settings, pauses);
        }
        let cutoff = now.timestamp() - settings.finalize_after_seconds - 60;
        self.closed_through = Some(cutoff.div_euclid(60) * 60);
        let ready: Vec<i64> = self
            .pending
            .range(..=cutoff)
            .map(|(minute, _)| *minute)
            .collect();
        for minute in ready {
            let requests = self.pending.remove(&minute).unwrap_or_default();
            let attributed = attribute(&requests, &self.stops, &settings.attribution);
            let ports = (self.pending_by_port.remove(&minute).unwrap_or_default())
                .into_iter()
                .map(|(port, durations)| (port, summarize(durations.into_iter())))
                .collect();
            self.counters.slow_requests += attributed.attribution.slow_requests;
            self.counters.slow_requests_stop_affected +=
                attributed.attribution.slow_requests_stop_affected;
            self.counters.slow_requests_queued_behind_stops +=
                attributed.attribution.slow_requests_queued_behind_stops;
            self.counters.slow_requests_gc_driven += attributed.attribution.slow_requests_gc_driven;
            self.minute_changes.touch(minute);
            self.minutes.insert(
                minute,
                LatencyMinute {
                    start: minute_start(minute),
                    latency: attributed.latency,
                    attribution: Some(attributed.attribution),
                    ports,
                },
            );
            self.finalized_through = Some(
                self.finalized_through
                    .map_or(minute, |done| done.max(minute)),
            );
        }
        let points: Vec<(f64, LatencySummary)> = self
            .minutes
            .values()
            .rev()
            .take(settings.window_minutes)
            .filter(|m| m.latency.count > 0)
            .map(|m| {
                let max_pause = pauses.get(m.start).map_or(0.0, |p| p.pause_max_seconds);
                (max_pause, m.latency)
            })
            .collect();
        self.correlation = correlate(&points, settings.min_minutes);
        // Stops older than the oldest request still waiting are no longer needed.
        let oldest_needed = self.pending.keys().next().copied().unwrap_or(cutoff) - 60 * 10;
        self.stops.prune_before(minute_start(oldest_needed));
    }

    /// The newest attributed minute.
    pub fn last_minute(&self) -> Option<&LatencyMinute> {
        self.minutes.values().next_back()
    }

    /// The newest attributed minute while it is the newest closed one: a
    /// minute without requests has no latency, so the figures of the last
    /// minute that had some are not the current ones. Minutes from a latency
    /// histogram close at its first scrape after them, up to a minute after
    /// `finalize` closed them, so they stay current that minute longer.
    pub fn current_minute(&self) -> Option<&LatencyMinute> {
        let last = self.last_minute()?;
        let Some(closed) = self.closed_through else {
            return Some(last);
        };
        let lag = if last.attribution.is_some() { 0 } else { 60 };
        (last.start.timestamp() + lag >= closed).then_some(last)
    }

    pub fn prune_before(&mut self, oldest_kept: DateTime<Utc>) {
        if let Some(server) = &mut self.server {
            server.prune_before(oldest_kept);
        }
        self.minutes = self.minutes.split_off(&oldest_kept.timestamp());
        self.minute_changes.prune_before(oldest_kept.timestamp());
    }

    /// Requests waiting for their minute, by completion minute.
    pub fn pending(&self) -> &BTreeMap<i64, Vec<RequestTiming>> {
        &self.pending
    }

    /// Which attributed minutes changed when, for the checkpoint journal.
    pub fn minute_changes(&self) -> &Changes {
        &self.minute_changes
    }

    /// The stops as they arrived, for the checkpoint journal.
    pub fn arrived_stops(&self) -> &Arrivals<Stop> {
        &self.arrived_stops
    }

    /// A state as a checkpoint recorded it: its collections are put back
    /// by [`Self::restore`], its change marks start empty.
    pub(crate) fn restored(
        stops: StopIndex,
        histogram: Histogram,
        counters: LatencyCounters,
        correlation: Correlation,
        finalized_through: Option<i64>,
        closed_through: Option<i64>,
    ) -> LatencyState {
        LatencyState {
            stops,
            pending: BTreeMap::new(),
            pending_by_port: BTreeMap::new(),
            minutes: BTreeMap::new(),
            histogram,
            counters,
            correlation,
            finalized_through,
            closed_through,
            minute_changes: Changes::default(),
            arrived_stops: Arrivals::default(),
            server: None,
        }
    }

    /// Puts back what a checkpoint journal recorded apart from the state:
    /// attributed minutes, pending requests (those of minutes attributed
    /// since they were written are dropped: the minute holds them) and
    /// stops, in the order they arrived. Not changes.
    pub fn restore(
        &mut self,
        minutes: impl IntoIterator<Item = LatencyMinute>,
        pending: BTreeMap<i64, Vec<RequestTiming>>,
        stops: impl IntoIterator<Item = Stop>,
    ) {
        self.minutes
            .extend(minutes.into_iter().map(|m| (m.start.timestamp(), m)));
        let done = self.finalized_through;
        self.pending.extend(
            pending
                .into_iter()
                .filter(|(minute, _)| done.is_none_or(|done| *minute > done)),
        );
        self.stops.restore(stops);
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(minute: u32, second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 2, minute, second)
            .unwrap()
    }

    #[test]
    fn the_current_minute_is_gone_once_a_minute_passes_without_requests() {
        let settings = CorrelationSettings::default();
        let pauses = MinuteWindows::default();
        let mut latency = LatencyState::default();
        latency.add_request(RequestTiming {
            start: at(10, 30),
            duration_s: 0.02,
        });
        // 02:10 is attributed 15 s after it ends, and current until 02:11
        // has been closed too, without requests.
        latency.finalize(at(11, 14), &settings, &pauses);
        assert!(latency.current_minute().is_none());
        latency.finalize(at(11, 15), &settings, &pauses);
        assert_eq!(latency.current_minute().map(|m| m.start), Some(at(10, 0)));
        latency.finalize(at(12, 14), &settings, &pauses);
        assert_eq!(latency.current_minute().map(|m| m.start), Some(at(10, 0)));
        latency.finalize(at(12, 15), &settings, &pauses);
        assert!(latency.current_minute().is_none());
        assert_eq!(latency.last_minute().map(|m| m.start), Some(at(10, 0)));
    }
}
