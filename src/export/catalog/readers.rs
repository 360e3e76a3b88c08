//! Readers of the state that more than one family shares.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::Duration;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{Collector, UnparsedKind};

use super::{Sample, Value, OVERHEAD_WINDOWS};
use crate::model::correlate::LatencyMinute;
use crate::model::jvm::{EventCounters, PauseSeries, SafepointSeries};
use crate::model::minutes::{last_complete_minute, Minute, CLOCK_OUTLIER};
use crate::model::runtime::{CollectorStats, MemoryPool, RuntimeStats};
use crate::store::{AgentState, EbpfReason, PauseSource, SafepointSource, StreamState};

/// Every unparsed-line kind, so that each `kind` series exists from the first
/// scrape (at 0) and `rate()` sees the first bad line.
const UNPARSED_KINDS: [UnparsedKind; 5] = [
    UnparsedKind::NotUnifiedLogging,
    UnparsedKind::LegacyFormat,
    UnparsedKind::MalformedEvent,
    UnparsedKind::TooLong,
    UnparsedKind::InvalidUtf8,
];

/// Fails to compile when a kind is added to `UnparsedKind` but not to `UNPARSED_KINDS`.
const _: fn(UnparsedKind) = |kind| match kind {
    UnparsedKind::NotUnifiedLogging
    | UnparsedKind::LegacyFormat
    | UnparsedKind::MalformedEvent
    | UnparsedKind::TooLong
    | UnparsedKind::InvalidUtf8 => {}
};

/// The one sample of a family without labels of its own.
/// Samples from a stream's runtime stats, none when it has none.
pub(super) fn runtime<'a>(
    stream: &'a StreamState,
    read: fn(&'a RuntimeStats) -> Vec<Sample<'a>>,
) -> Vec<Sample<'a>> {
    stream.runtime.as_ref().map(read).unwrap_or_default()
}

pub(super) fn per_collector(
    stream: &StreamState,
    value: fn(&CollectorStats) -> Value<'static>,
) -> Vec<Sample<'_>> {
    let Some(runtime) = &stream.runtime else {
        return Vec::new();
    };
    runtime
        .collectors
        .iter()
        .map(|c| Sample {
            labels: vec![c.name.as_str().into()],
            value: value(c),
            minute: None,
        })
        .collect()
}

pub(super) fn per_pool(
    stream: &StreamState,
    value: fn(&MemoryPool) -> Option<u64>,
) -> Vec<Sample<'_>> {
    let Some(runtime) = &stream.runtime else {
        return Vec::new();
    };
    runtime
        .memory
        .iter()
        .filter_map(|p| {
            let labels = vec![p.area.as_str().into(), p.id.as_str().into()];
            Some(Sample {
                labels,
                value: Value::Int(value(p)?),
                minute: None,
            })
        })
        .collect()
}

pub(super) fn discovered(stream: &StreamState) -> Vec<Sample<'_>> {
    let Some(discovered) = &stream.discovered else {
        return Vec::new();
    };
    let (state, reason) = match &discovered.unavailable {
        Some(reason) => ("unavailable", reason.as_str()),
        None => ("available", ""),
    };
    info(vec![
        discovered.user.as_str().into(),
        state.into(),
        reason.into(),
        discovered
            .pauses_measured_by()
            .map_or("none", PauseSource::as_str)
            .into(),
        discovered.ebpf_reason.map_or("", EbpfReason::as_str).into(),
        discovered.safepoint_source.as_str().into(),
        match discovered.requests {
            Some(Ok(())) => "kernel",
            _ => "none",
        }
        .into(),
        match discovered.requests {
            Some(Err(reason)) => reason.as_str(),
            _ => "",
        }
        .into(),
    ])
}

/// A figure of the stream's pauses, none when nothing measures them (a JVM
/// without a log or probes whose hsperfdata cannot be read): absent, never
/// a 0 that reads as a healthy JVM.
pub(super) fn measured<'a>(
    stream: &'a StreamState,
    read: impl FnOnce(&'a StreamState) -> Vec<Sample<'a>>,
) -> Vec<Sample<'a>> {
    match stream.pauses_measured() {
        true => read(stream),
        false => Vec::new(),
    }
}

/// A figure of the stream's log file, none for a JVM that writes none (its
/// pauses measured by eBPF or hsperfdata).
pub(super) fn logged<'a>(
    stream: &'a StreamState,
    read: impl FnOnce(&'a StreamState) -> Vec<Sample<'a>>,
) -> Vec<Sample<'a>> {
    match stream.log.is_empty() {
        true => Vec::new(),
        false => read(stream),
    }
}

/// A count only a GC log gives (concurrent cycles, stalls, evacuation
/// failures): absent for a JVM that writes none, not a 0 nothing measured.
pub(super) fn log_count(
    stream: &StreamState,
    read: impl FnOnce(&EventCounters) -> Value<'static>,
) -> Vec<Sample<'_>> {
    logged(stream, |s| one(read(&s.jvm.counters)))
}

/// A figure of a discovered JVM's safepoints, none when nothing measures
/// them (no GC log with the `safepoint` tag, no probes).
pub(super) fn safepoints_measured<'a>(
    stream: &'a StreamState,
    read: impl FnOnce(&'a StreamState) -> Vec<Sample<'a>>,
) -> Vec<Sample<'a>> {
    match &stream.discovered {
        Some(jvm) if jvm.safepoint_source == SafepointSource::None => Vec::new(),
        _ => read(stream),
    }
}

pub(super) fn one(value: Value<'_>) -> Vec<Sample<'_>> {
    vec![Sample {
        labels: Vec::new(),
        value,
        minute: None,
    }]
}

/// As [`one`], or no sample while the figure is unknown.
pub(super) fn known(value: Option<Value<'_>>) -> Vec<Sample<'_>> {
    value.map(one).unwrap_or_default()
}

/// The one sample of an info family.
pub(super) fn info(labels: Vec<Cow<'_, str>>) -> Vec<Sample<'_>> {
    vec![Sample {
        labels,
        value: Value::Int(1),
        minute: None,
    }]
}

pub(super) fn pauses(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    pause_series(stream, |series| {
        vec![
            series.gc.as_str().into(),
            series.action.as_str().into(),
            series.cause.as_str().into(),
        ]
    })
}

/// A Go stream's pauses under the Go name: the runtime has one collector,
/// so only the cause tells its series apart.
pub(super) fn go_pauses(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    if stream.jvm.collector != Collector::Go {
        return Vec::new();
    }
    pause_series(stream, |series| vec![series.cause.as_str().into()])
}

/// One histogram sample per pause series, labelled by `labels`.
fn pause_series<'a>(
    stream: &'a StreamState,
    labels: impl Fn(&'a PauseSeries) -> Vec<Cow<'a, str>>,
) -> Vec<Sample<'a>> {
    stream
        .jvm
        .pauses
        .iter()
        .map(|series| Sample {
            labels: labels(series),
            value: Value::Histogram(&series.histogram),
            minute: None,
        })
        .collect()
}

pub(super) fn overhead(stream: &StreamState, now: DateTime<Utc>) -> Vec<Sample<'_>> {
    OVERHEAD_WINDOWS
        .iter()
        .map(|&(window, minutes)| {
            let span = Duration::from_secs(60 * u64::from(minutes));
            Sample {
                labels: vec![window.into()],
                value: Value::Float(stream.jvm.minutes.paused_share(now, span)),
                minute: None,
            }
        })
        .collect()
}

/// One sample per VM operation that reached a safepoint.
pub(super) fn per_operation(
    stream: &StreamState,
    value: fn(&SafepointSeries) -> Value<'static>,
) -> Vec<Sample<'_>> {
    stream
        .jvm
        .safepoints
        .iter()
        .map(|series| Sample {
            labels: vec![series.operation.as_str().into()],
            value: value(series),
            minute: None,
        })
        .collect()
}

/// The parser's kinds, then the model's clock outliers: lines whose event
/// could not be placed in time.
pub(super) fn unparsed_lines(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    let unparsed = &stream.parse.unparsed;
    UNPARSED_KINDS
        .iter()
        .map(|kind| (kind.as_str(), unparsed.get(kind).copied().unwrap_or(0)))
        .chain([(CLOCK_OUTLIER, stream.jvm.minutes.clock_outliers)])
        .map(|(kind, count)| Sample {
            labels: vec![kind.into()],
            value: Value::Int(count),
            minute: None,
        })
        .collect()
}

pub(super) fn by_kind(errors: &BTreeMap<String, u64>) -> Vec<Sample<'_>> {
    errors
        .iter()
        .map(|(kind, count)| Sample {
            labels: vec![kind.as_str().into()],
            value: Value::Int(*count),
            minute: None,
        })
        .collect()
}

/// A figure of the last complete minute, stamped with that minute.
pub(super) fn last_complete<'a>(
    stream: &'a StreamState,
    now: DateTime<Utc>,
    value: impl FnOnce(Option<&Minute>) -> Value<'a>,
) -> Vec<Sample<'a>> {
    let minute = last_complete_minute(now);
    vec![Sample {
        labels: Vec::new(),
        value: value(stream.jvm.minutes.get(minute).as_deref()),
        minute: Some(minute),
    }]
}

/// A figure of the current attributed minute, stamped with that minute;
/// none once traffic stopped (see [`crate::model::latency::LatencyState::current_minute`]).
pub(super) fn latency_minute<'a>(
    stream: &'a StreamState,
    value: impl FnOnce(&'a LatencyMinute) -> Option<Value<'a>>,
) -> Vec<Sample<'a>> {
    let Some(minute) = stream.latency.as_ref().and_then(|l| l.current_minute()) else {
        return Vec::new();
    };
    value(minute)
        .map(|value| Sample {
            labels: Vec::new(),
            value,
            minute: Some(minute.start),
        })
        .into_iter()
        .collect()
}

/// The kernel's p99.9 less the access log's, in the current minute when
/// the access log has it too.
pub(super) fn unseen_wait(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    latency_minute(stream, |minute| {
        let server = stream.latency.as_ref()?.server.as_deref()?;
        let seen = server.minutes.get(&minute.start.timestamp())?;
        let unseen = minute.latency.p999_seconds - seen.latency.p999_seconds;
        Some(Value::Float(unseen))
    })
}

pub(super) fn correlations(stream: &StreamState, _: DateTime<Utc>) -> Vec<Sample<'_>> {
    let Some(latency) = &stream.latency else {
        return Vec::new();
    };
    let c = &latency.correlation;
    let coefficients = [
        ("pearson", "0.99", c.pearson_max_pause_p99),
        ("spearman", "0.99", c.spearman_max_pause_p99),
        ("pearson", "0.999", c.pearson_max_pause_p999),
        ("spearman", "0.999", c.spearman_max_pause_p999),
    ];
    coefficients
        .into_iter()
        .filter_map(|(method, quantile, value)| {
            Some(Sample {
                labels: vec![method.into(), quantile.into()],
                value: Value::Float(value?),
                minute: None,
            })
        })
        .collect()
}

/// Delivery counts by sink and result. They live behind the sender thread's
/// lock, so the sink names are copied out.
pub(super) fn alert_deliveries(agent: &AgentState) -> Vec<Sample<'static>> {
    let deliveries = agent
        .deliveries
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let by_result = [
        ("success", &deliveries.delivered),
        ("failure", &deliveries.failed),
        ("dropped", &deliveries.dropped),
    ];
    by_result
        .into_iter()
        .flat_map(|(result, counts)| {
            counts.iter().map(move |(sink, count)| Sample {
                labels: vec![sink.clone().into(), result.into()],
                value: Value::Int(*count),
                minute: None,
            })
        })
        .collect()
}

/// Seconds from `at` to `now`, never negative (the agent clock may step back).
pub(super) fn age_seconds(at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    ((now - at).num_milliseconds() as f64 / 1000.0).max(0.0)
}
