//! Records of the streams' states: a GC stream's (a log's or a discovered
//! JVM's) and an access log's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{AccessStats, ParseStats};
use serde::{Deserialize, Serialize};

use super::jvm::JvmV5;
use super::latency::{LatencyV5, MalformedWindowV5};
use super::runtime::{DiscoveryV5, LatencySourceV5, RuntimeV5};
use crate::model::minutes::is_zero;
use crate::store::{AccessStreamState, StreamState};

type Counts = BTreeMap<String, u64>;

/// Version 5 of [`StreamState`], without its collections (minutes, latency
/// minutes, pending requests, stops: the journal writes them apart).
#[derive(Debug, Serialize, Deserialize)]
pub struct StreamV5<'a> {
    log: Cow<'a, str>,
    labels: Cow<'a, BTreeMap<String, String>>,
    jvm: JvmV5<'a>,
    parse: Cow<'a, ParseStats>,
    files_followed: u64,
    read_lag_bytes: u64,
    last_event_processed_at: Option<DateTime<Utc>>,
    readable: bool,
    errors: Cow<'a, Counts>,
    latency: Option<LatencyV5>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_source: Option<LatencySourceV5>,
    #[serde(default, skip_serializing_if = "is_zero")]
    multiplexed_connections: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    runtime: Option<RuntimeV5<'a>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    exited: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    discovered: Option<DiscoveryV5>,
}

impl<'a> From<&'a StreamState> for StreamV5<'a> {
    fn from(state: &'a StreamState) -> Self {
        StreamV5 {
            log: Cow::Borrowed(&state.log),
            labels: Cow::Borrowed(&state.labels),
            jvm: (&state.jvm).into(),
            parse: Cow::Borrowed(&state.parse),
            files_followed: state.files_followed,
            read_lag_bytes: state.read_lag_bytes,
            last_event_processed_at: state.last_event_processed_at,
            readable: state.readable,
            errors: Cow::Borrowed(&state.errors),
            latency: state.latency.as_ref().map(Into::into),
            latency_source: state.latency_source.map(Into::into),
            multiplexed_connections: state.multiplexed_connections,
            runtime: state.runtime.as_ref().map(Into::into),
            exited: state.exited,
            discovered: state.discovered.clone().map(Into::into),
        }
    }
}

impl StreamV5<'_> {
    pub fn into_model(self) -> StreamState {
        StreamState {
            log: self.log.into_owned(),
            labels: self.labels.into_owned(),
            jvm: self.jvm.into_model(),
            parse: self.parse.into_owned(),
            files_followed: self.files_followed,
            read_lag_bytes: self.read_lag_bytes,
            last_event_processed_at: self.last_event_processed_at,
            readable: self.readable,
            errors: self.errors.into_owned(),
            latency: self.latency.map(LatencyV5::into_model),
            latency_source: self.latency_source.map(Into::into),
            multiplexed_connections: self.multiplexed_connections,
            runtime: self.runtime.map(RuntimeV5::into_model),
            exited: self.exited,
            discovered: self.discovered.map(Into::into),
        }
    }
}

/// Version 5 of [`AccessStreamState`].
#[derive(Debug, Serialize, Deserialize)]
pub struct AccessStreamV5<'a> {
    log: Cow<'a, str>,
    target: Option<Cow<'a, str>>,
    #[serde(default)]
    labels: Cow<'a, BTreeMap<String, String>>,
    stats: Cow<'a, AccessStats>,
    read_lag_bytes: u64,
    readable: bool,
    unattributed_requests: u64,
    errors: Cow<'a, Counts>,
    #[serde(default)]
    malformed_window: MalformedWindowV5,
    #[serde(default)]
    malformed_warned: bool,
}

impl<'a> From<&'a AccessStreamState> for AccessStreamV5<'a> {
    fn from(state: &'a AccessStreamState) -> Self {
        AccessStreamV5 {
            log: Cow::Borrowed(&state.log),
            target: state.target.as_deref().map(Cow::Borrowed),
            labels: Cow::Borrowed(&state.labels),
            stats: Cow::Borrowed(&state.stats),
            read_lag_bytes: state.read_lag_bytes,
            readable: state.readable,
            unattributed_requests: state.unattributed_requests,
            errors: Cow::Borrowed(&state.errors),
            malformed_window: state.malformed_window.into(),
            malformed_warned: state.malformed_warned,
        }
    }
}

impl AccessStreamV5<'_> {
    pub fn into_model(self) -> AccessStreamState {
        AccessStreamState {
            log: self.log.into_owned(),
            target: self.target.map(Cow::into_owned),
            labels: self.labels.into_owned(),
            stats: self.stats.into_owned(),
            read_lag_bytes: self.read_lag_bytes,
            readable: self.readable,
            unattributed_requests: self.unattributed_requests,
            errors: self.errors.into_owned(),
            malformed_window: self.malformed_window.into(),
            malformed_warned: self.malformed_warned,
        }
    }
}
