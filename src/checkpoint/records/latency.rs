//! Records of a service's latency beside its JVM's stops: the latency
//! state, its attributed minutes, and an access log's malformed lines.

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use pausewatch_parsers::Name;
use serde::{Deserialize, Serialize};

use super::minutes::HistogramV5;
use crate::model::correlate::{
    Attribution, Correlation, LatencyMinute, LatencySummary, RequestTiming, Stop, StopIndex,
};
use crate::model::latency::{LatencyCounters, LatencyState, MalformedWindow};

/// Version 5 of [`LatencySummary`]: the figures are absent when no request
/// was counted.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct LatencySummaryV5 {
    count: u64,
    p50_seconds: Option<f64>,
    p90_seconds: Option<f64>,
    p99_seconds: Option<f64>,
    p999_seconds: Option<f64>,
    max_seconds: Option<f64>,
}

impl From<LatencySummary> for LatencySummaryV5 {
    fn from(summary: LatencySummary) -> Self {
        let [p50_seconds, p90_seconds, p99_seconds, p999_seconds, max_seconds] = summary.figures();
        LatencySummaryV5 {
            count: summary.count,
            p50_seconds,
            p90_seconds,
            p99_seconds,
            p999_seconds,
            max_seconds,
        }
    }
}

impl From<LatencySummaryV5> for LatencySummary {
    fn from(record: LatencySummaryV5) -> Self {
        LatencySummary::from_figures(
            record.count,
            [
                record.p50_seconds,
                record.p90_seconds,
                record.p99_seconds,
                record.p999_seconds,
                record.max_seconds,
            ],
        )
    }
}

/// Version 5 of [`Attribution`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct AttributionV5 {
    slo_seconds: f64,
    slow_requests: u64,
    slow_requests_stop_affected: u64,
    #[serde(default)]
    slow_requests_queued_behind_stops: u64,
    #[serde(default)]
    slow_requests_gc_driven: u64,
    explained_share: Option<f64>,
    p999_without_stop_affected_seconds: f64,
}

both_ways!(Attribution, AttributionV5, |attribution| {
    slo_seconds: attribution.slo_seconds,
    slow_requests: attribution.slow_requests,
    slow_requests_stop_affected: attribution.slow_requests_stop_affected,
    slow_requests_queued_behind_stops: attribution.slow_requests_queued_behind_stops,
    slow_requests_gc_driven: attribution.slow_requests_gc_driven,
    explained_share: attribution.explained_share,
    p999_without_stop_affected_seconds: attribution.p999_without_stop_affected_seconds,
});

/// Version 5 of [`LatencyMinute`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyMinuteV5 {
    start: DateTime<Utc>,
    latency: LatencySummaryV5,
    attribution: Option<AttributionV5>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    ports: BTreeMap<u16, LatencySummaryV5>,
}

impl From<&LatencyMinute> for LatencyMinuteV5 {
    fn from(minute: &LatencyMinute) -> Self {
        LatencyMinuteV5 {
            start: minute.start,
            latency: minute.latency.into(),
            attribution: minute.attribution.map(Into::into),
            ports: minute
                .ports
                .iter()
                .map(|(p, s)| (*p, (*s).into()))
                .collect(),
        }
    }
}

impl From<LatencyMinuteV5> for LatencyMinute {
    fn from(record: LatencyMinuteV5) -> Self {
        LatencyMinute {
            start: record.start,
            latency: record.latency.into(),
            attribution: record.attribution.map(Into::into),
            ports: record
                .ports
                .into_iter()
                .map(|(p, s)| (p, s.into()))
                .collect(),
        }
    }
}

/// Version 5 of [`Stop`], read from checkpoints of versions 1 and 2 (the
/// journal writes stops as a timeline).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StopV5 {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    name: Name,
}

both_ways!(Stop, StopV5, |stop| {
    start: stop.start,
    end: stop.end,
    name: stop.name,
});

/// Version 5 of [`RequestTiming`], read from checkpoints of versions 1 and
/// 2 (the journal writes requests as a timeline).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RequestTimingV5 {
    start: DateTime<Utc>,
    duration_s: f64,
}

both_ways!(RequestTiming, RequestTimingV5, |request| {
    start: request.start,
    duration_s: request.duration_s,
});

/// Version 5 of [`StopIndex`], without its stops but those of versions 1
/// and 2, which held them.
#[derive(Debug, Serialize, Deserialize)]
pub struct StopIndexV5 {
    #[serde(default, skip_serializing)]
    stops: VecDeque<StopV5>,
    longest_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pruned_before: Option<DateTime<Utc>>,
}

/// Version 5 of [`LatencyCounters`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyCountersV5 {
    requests: u64,
    slow_requests: u64,
    slow_requests_stop_affected: u64,
    #[serde(default)]
    slow_requests_queued_behind_stops: u64,
    #[serde(default)]
    slow_requests_gc_driven: u64,
    late_requests: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    requests_by_port: BTreeMap<u16, u64>,
}

both_ways!(LatencyCounters, LatencyCountersV5, |counters| {
    requests: counters.requests,
    slow_requests: counters.slow_requests,
    slow_requests_stop_affected: counters.slow_requests_stop_affected,
    slow_requests_queued_behind_stops: counters.slow_requests_queued_behind_stops,
    slow_requests_gc_driven: counters.slow_requests_gc_driven,
    late_requests: counters.late_requests,
    requests_by_port: counters.requests_by_port,
});

/// Version 5 of [`Correlation`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct CorrelationV5 {
    minutes: u64,
    pearson_max_pause_p99: Option<f64>,
    spearman_max_pause_p99: Option<f64>,
    pearson_max_pause_p999: Option<f64>,
    spearman_max_pause_p999: Option<f64>,
}

both_ways!(Correlation, CorrelationV5, |correlation| {
    minutes: correlation.minutes,
    pearson_max_pause_p99: correlation.pearson_max_pause_p99,
    spearman_max_pause_p99: correlation.spearman_max_pause_p99,
    pearson_max_pause_p999: correlation.pearson_max_pause_p999,
    spearman_max_pause_p999: correlation.spearman_max_pause_p999,
});

/// Version 5 of [`LatencyState`], without its collections (attributed
/// minutes, pending requests, stops: the journal writes them apart) but
/// those of versions 1 and 2, which held them.
#[derive(Debug, Serialize, Deserialize)]
pub struct LatencyV5 {
    stops: StopIndexV5,
    #[serde(default, skip_serializing)]
    pending: BTreeMap<i64, Vec<RequestTimingV5>>,
    #[serde(default, skip_serializing)]
    minutes: BTreeMap<i64, LatencyMinuteV5>,
    histogram: HistogramV5,
    counters: LatencyCountersV5,
    correlation: CorrelationV5,
    finalized_through: Option<i64>,
    #[serde(default)]
    closed_through: Option<i64>,
}

impl From<&LatencyState> for LatencyV5 {
    fn from(latency: &LatencyState) -> Self {
        LatencyV5 {
            stops: StopIndexV5 {
                stops: VecDeque::new(),
                longest_s: latency.stops.longest_s,
                pruned_before: latency.stops.pruned_before,
            },
            pending: BTreeMap::new(),
            minutes: BTreeMap::new(),
            histogram: latency.histogram.clone().into(),
            counters: latency.counters.clone().into(),
            correlation: latency.correlation.into(),
            finalized_through: latency.finalized_through,
            closed_through: latency.closed_through,
        }
    }
}

impl LatencyV5 {
    pub fn into_model(self) -> LatencyState {
        let mut latency = LatencyState::restored(
            StopIndex::restored(self.stops.longest_s, self.stops.pruned_before),
            self.histogram.into(),
            self.counters.into(),
            self.correlation.into(),
            self.finalized_through,
            self.closed_through,
        );
        latency.restore(
            self.minutes.into_values().map(Into::into),
            self.pending
                .into_iter()
                .map(|(minute, requests)| (minute, requests.into_iter().map(Into::into).collect()))
                .collect(),
            self.stops.stops.into_iter().map(Into::into),
        );
        latency
    }
}

/// Version 5 of [`MalformedWindow`].
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct MalformedWindowV5 {
    lines: u64,
    malformed: u64,
    previous_lines: u64,
    previous_malformed: u64,
}

both_ways!(MalformedWindow, MalformedWindowV5, |window| {
    lines: window.lines,
    malformed: window.malformed,
    previous_lines: window.previous_lines,
    previous_malformed: window.previous_malformed,
});
