//! Records of the sources' checkpoints: what a source resumes from.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessLogParser, GcLogParser, Request};
use serde::{Deserialize, Serialize};

use super::histogram::AccumulatorV5;
use super::stream::{AccessStreamV5, StreamV5};
use crate::follow::{HeadPrint, Position};
use crate::model::runtime::PauseCounters;
use crate::sources::access_log::{AccessLogCheckpoint, HeldRequest};
use crate::sources::ebpf::EbpfCheckpoint;
use crate::sources::gc_log::GcLogCheckpoint;
use crate::sources::latency_histogram::HistogramCheckpoint;
use crate::sources::runtime_stats::DiscoveredCheckpoint;
use crate::sources::SourceCheckpoint;

/// Version 5 of [`SourceCheckpoint`], tagged by kind (`{"gc_log": {...}}`).
/// Not internally tagged: serde buffers such enums in a form that cannot
/// read maps keyed by numbers, which the minutes of versions 1 and 2 are.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceV5<'a> {
    GcLog(Box<GcLogV5<'a>>),
    AccessLog(Box<AccessLogV5<'a>>),
    LatencyHistogram(LatencyHistogramV5<'a>),
    Ebpf(EbpfV5<'a>),
    Discovered(Box<DiscoveredV5<'a>>),
}

impl<'a> From<&'a SourceCheckpoint> for SourceV5<'a> {
    fn from(source: &'a SourceCheckpoint) -> Self {
        match source {
            SourceCheckpoint::GcLog(c) => SourceV5::GcLog(Box::new(c.as_ref().into())),
            SourceCheckpoint::AccessLog(c) => SourceV5::AccessLog(Box::new(c.as_ref().into())),
            SourceCheckpoint::LatencyHistogram(c) => SourceV5::LatencyHistogram(c.into()),
            SourceCheckpoint::Ebpf(c) => SourceV5::Ebpf(c.into()),
            SourceCheckpoint::Discovered(c) => SourceV5::Discovered(Box::new(c.as_ref().into())),
        }
    }
}

impl SourceV5<'_> {
    pub fn into_model(self) -> SourceCheckpoint {
        match self {
            SourceV5::GcLog(r) => SourceCheckpoint::GcLog(Box::new(r.into_model())),
            SourceV5::AccessLog(r) => SourceCheckpoint::AccessLog(Box::new(r.into_model())),
            SourceV5::LatencyHistogram(r) => SourceCheckpoint::LatencyHistogram(r.into_model()),
            SourceV5::Ebpf(r) => SourceCheckpoint::Ebpf(r.into_model()),
            SourceV5::Discovered(r) => SourceCheckpoint::Discovered(Box::new(r.into_model())),
        }
    }
}

/// Version 5 of [`HeadPrint`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HeadPrintV5 {
    len: u32,
    hash: u64,
}

both_ways!(HeadPrint, HeadPrintV5, |print| {
    len: print.len,
    hash: print.hash,
});

/// Version 5 of [`Position`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PositionV5 {
    dev: u64,
    ino: u64,
    head: HeadPrintV5,
    offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtime: Option<SystemTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tail: Option<HeadPrintV5>,
}

both_ways!(Position, PositionV5, |position| {
    dev: position.dev,
    ino: position.ino,
    head: position.head.into(),
    offset: position.offset,
    mtime: position.mtime,
    tail: position.tail.map(Into::into),
});

/// Version 5 of [`GcLogCheckpoint`].
#[derive(Debug, Serialize, Deserialize)]
pub struct GcLogV5<'a> {
    log: Cow<'a, str>,
    position: Option<PositionV5>,
    parser: Cow<'a, GcLogParser>,
    state: StreamV5<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    writer: Option<Cow<'a, str>>,
}

impl<'a> From<&'a GcLogCheckpoint> for GcLogV5<'a> {
    fn from(checkpoint: &'a GcLogCheckpoint) -> Self {
        GcLogV5 {
            log: Cow::Borrowed(&checkpoint.log),
            position: checkpoint.position.map(Into::into),
            parser: Cow::Borrowed(&checkpoint.parser),
            state: checkpoint.state.as_ref().into(),
            writer: checkpoint.writer.as_deref().map(Cow::Borrowed),
        }
    }
}

impl GcLogV5<'_> {
    pub fn into_model(self) -> GcLogCheckpoint {
        GcLogCheckpoint {
            log: self.log.into_owned(),
            position: self.position.map(Into::into),
            parser: self.parser.into_owned(),
            state: Arc::new(self.state.into_model()),
            writer: self.writer.map(Cow::into_owned),
        }
    }
}

/// Version 5 of [`Request`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RequestV5 {
    start: DateTime<Utc>,
    duration_s: f64,
}

/// Version 5 of [`HeldRequest`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HeldRequestV5 {
    read_at: DateTime<Utc>,
    request: RequestV5,
}

both_ways!(Request, RequestV5, |request| {
    start: request.start,
    duration_s: request.duration_s,
});

both_ways!(HeldRequest, HeldRequestV5, |held| {
    read_at: held.read_at,
    request: held.request.into(),
});

/// Version 5 of [`AccessLogCheckpoint`].
#[derive(Debug, Serialize, Deserialize)]
pub struct AccessLogV5<'a> {
    log: Cow<'a, str>,
    position: Option<PositionV5>,
    parser: Cow<'a, AccessLogParser>,
    state: AccessStreamV5<'a>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    held: Vec<HeldRequestV5>,
}

impl<'a> From<&'a AccessLogCheckpoint> for AccessLogV5<'a> {
    fn from(checkpoint: &'a AccessLogCheckpoint) -> Self {
        AccessLogV5 {
            log: Cow::Borrowed(&checkpoint.log),
            position: checkpoint.position.map(Into::into),
            parser: Cow::Borrowed(&checkpoint.parser),
            state: checkpoint.state.as_ref().into(),
            held: checkpoint.held.iter().cloned().map(Into::into).collect(),
        }
    }
}

impl AccessLogV5<'_> {
    pub fn into_model(self) -> AccessLogCheckpoint {
        AccessLogCheckpoint {
            log: self.log.into_owned(),
            position: self.position.map(Into::into),
            parser: self.parser.into_owned(),
            state: Arc::new(self.state.into_model()),
            held: self.held.into_iter().map(Into::into).collect(),
        }
    }
}

/// Version 5 of [`HistogramCheckpoint`].
#[derive(Debug, Serialize, Deserialize)]
pub struct LatencyHistogramV5<'a> {
    key: Cow<'a, str>,
    accumulator: AccumulatorV5,
}

impl<'a> From<&'a HistogramCheckpoint> for LatencyHistogramV5<'a> {
    fn from(HistogramCheckpoint { key, accumulator }: &'a HistogramCheckpoint) -> Self {
        LatencyHistogramV5 {
            key: Cow::Borrowed(key),
            accumulator: accumulator.clone().into(),
        }
    }
}

impl LatencyHistogramV5<'_> {
    fn into_model(self) -> HistogramCheckpoint {
        HistogramCheckpoint {
            key: self.key.into_owned(),
            accumulator: self.accumulator.into(),
        }
    }
}

/// Version 5 of [`EbpfCheckpoint`].
#[derive(Debug, Serialize, Deserialize)]
pub struct EbpfV5<'a> {
    reached: Cow<'a, BTreeMap<String, u64>>,
}

impl<'a> From<&'a EbpfCheckpoint> for EbpfV5<'a> {
    fn from(EbpfCheckpoint { reached }: &'a EbpfCheckpoint) -> Self {
        EbpfV5 {
            reached: Cow::Borrowed(reached),
        }
    }
}

impl EbpfV5<'_> {
    fn into_model(self) -> EbpfCheckpoint {
        EbpfCheckpoint {
            reached: self.reached.into_owned(),
        }
    }
}

/// Version 5 of [`PauseCounters`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PauseCountersV5 {
    invocations: u64,
    seconds: f64,
    last_entry: f64,
    last_exit: f64,
}

both_ways!(PauseCounters, PauseCountersV5, |counters| {
    invocations: counters.invocations,
    seconds: counters.seconds,
    last_entry: counters.last_entry,
    last_exit: counters.last_exit,
});

/// Version 5 of [`DiscoveredCheckpoint`].
#[derive(Debug, Serialize, Deserialize)]
pub struct DiscoveredV5<'a> {
    jvm: Cow<'a, str>,
    watched_minute: i64,
    state: StreamV5<'a>,
    #[serde(default)]
    counters: BTreeMap<Cow<'a, str>, PauseCountersV5>,
}

impl<'a> From<&'a DiscoveredCheckpoint> for DiscoveredV5<'a> {
    fn from(checkpoint: &'a DiscoveredCheckpoint) -> Self {
        DiscoveredV5 {
            jvm: Cow::Borrowed(&checkpoint.jvm),
            watched_minute: checkpoint.watched_minute,
            state: checkpoint.state.as_ref().into(),
            counters: checkpoint
                .counters
                .iter()
                .map(|(collector, c)| (Cow::Borrowed(collector.as_str()), (*c).into()))
                .collect(),
        }
    }
}

impl DiscoveredV5<'_> {
    fn into_model(self) -> DiscoveredCheckpoint {
        DiscoveredCheckpoint {
            jvm: self.jvm.into_owned(),
            watched_minute: self.watched_minute,
            state: Arc::new(self.state.into_model()),
            counters: self
                .counters
                .into_iter()
                .map(|(collector, c)| (collector.into_owned(), c.into()))
                .collect(),
        }
    }
}
