//! `/api/v1/minutes`: each stream's exact minutes, by default the last hour
//! of the first page of streams, the day (or a week) on request, paged by
//! stream so that one response stays a few megabytes on a host of hundreds
//! of JVMs.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{error, App};
use crate::model::correlate::{combine, CombinedMinute};
use crate::model::minutes::FUTURE_TOLERANCE_SECONDS;
use crate::store::{PauseSource, SafepointSource, StreamId, StreamState};

/// Chunks of `/api/v1/minutes` written ahead of what the client has read.
const MINUTES_CHUNKS_AHEAD: usize = 4;
/// Bytes of JSON in one chunk, give or take a JVM.
const MINUTES_CHUNK_BYTES: usize = 64 * 1024;

/// `/api/v1/minutes` response.
#[derive(Debug, Serialize, Deserialize)]
pub struct MinutesResponse {
    pub jvms: Vec<JvmMinutes>,
    /// More streams follow: the same query with `after` set to this gives
    /// the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<u64>,
}

/// One log stream's minutes, oldest first, quiet minutes included as zeros.
#[derive(Debug, Serialize, Deserialize)]
pub struct JvmMinutes {
    pub log: String,
    pub labels: BTreeMap<String, String>,
    pub collector: String,
    pub jdk_version: Option<String>,
    /// For a discovered JVM, the input its pauses come from (`none`: the
    /// minutes have no pause figures) and its safepoints'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safepoint_source: Option<String>,
    /// With a latency source, each minute also carries `latency` and `attribution`.
    pub minutes: Vec<CombinedMinute>,
}

/// A minute's figures that only a measure of the JVM's pauses gives.
const PAUSE_FIGURES: [&str; 12] = [
    "pause_count",
    "pause_total_seconds",
    "pause_max_seconds",
    "pause_max_lower_bound",
    "records_lost",
    "pause_histogram",
    "full_gcs",
    "evacuation_failures",
    "degenerated_gcs",
    "allocation_stalls",
    "allocation_stall_seconds",
    "concurrent_cycle_seconds",
];
/// ... of its safepoints.
const SAFEPOINT_FIGURES: [&str; 4] = [
    "safepoint_count",
    "safepoint_total_seconds",
    "safepoint_max_seconds",
    "time_to_safepoint_max_seconds",
];
/// ... of its GC log (the heap before and after each collection).
const LOG_FIGURES: [&str; 5] = [
    "heap_after_gc_bytes",
    "heap_committed_bytes",
    "live_data_bytes",
    "allocated_bytes",
    "promoted_bytes",
];

/// The minute figures nothing measures for `stream`: absent from its
/// minutes, as their series are from `/metrics`, never zeros that read as
/// a healthy JVM.
fn unmeasured_figures(stream: &StreamState) -> Vec<&'static str> {
    let Some(discovered) = &stream.discovered else {
        return Vec::new();
    };
    let mut unmeasured = Vec::new();
    if discovered.pauses_measured_by().is_none() {
        unmeasured.extend(PAUSE_FIGURES);
    }
    if discovered.safepoint_source == SafepointSource::None {
        unmeasured.extend(SAFEPOINT_FIGURES);
    }
    if stream.log.is_empty() {
        unmeasured.extend(LOG_FIGURES);
    }
    unmeasured
}

/// `jvm` as JSON, without the `unmeasured` figures of its minutes.
fn write_jvm(out: &mut Vec<u8>, jvm: &JvmMinutes, unmeasured: &[&str]) -> serde_json::Result<()> {
    if unmeasured.is_empty() {
        return serde_json::to_writer(out, jvm);
    }
    let mut value = serde_json::to_value(jvm)?;
    if let Some(minutes) = value["minutes"].as_array_mut() {
        for minute in minutes.iter_mut().filter_map(|m| m.as_object_mut()) {
            unmeasured.iter().for_each(|figure| {
                minute.remove(*figure);
            });
        }
    }
    serde_json::to_writer(out, &value)
}

/// Minutes per stream in one response unless `limit` says otherwise: the
/// last hour, what a dashboard or a person looks at; the day is `limit=1440`.
const DEFAULT_MINUTES_LIMIT: u64 = 60;
/// The most minutes per stream one response may ask for: a week.
const MAX_MINUTES_LIMIT: u64 = 7 * 24 * 60;
/// Streams in one response unless `page_size` says otherwise: a busy JVM's
/// minute is about 580 bytes of JSON from a GC log, up to about 1.2 KB with
/// request latency and its attribution, so 25 JVMs with an hour each stay
/// under 2 MB.
const DEFAULT_PAGE_SIZE: u64 = 25;
/// The most streams one response may ask for.
const MAX_PAGE_SIZE: u64 = 1000;

#[derive(Debug, Deserialize)]
pub(super) struct MinutesQuery {
    since: Option<String>,
    until: Option<String>,
    log: Option<String>,
    limit: Option<String>,
    page_size: Option<String>,
    after: Option<String>,
}

/// A checked `/api/v1/minutes` query.
#[derive(Debug, Clone)]
struct MinutesRequest {
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    log: Option<String>,
    limit: u64,
    page_size: usize,
    /// The page starts after this stream (the previous page's `next_after`).
    after: Option<StreamId>,
}

/// Parses a time parameter. A `+` of the offset arrives as a space when the
/// client did not percent-encode it (`?since=2026-11-30T01:45:00+00:00`);
/// put it back.
fn parse_time(name: &str, raw: Option<&str>) -> Result<Option<DateTime<Utc>>, String> {
    raw.map(|raw| {
        DateTime::parse_from_rfc3339(&raw.replace(' ', "+"))
            .map(|t| t.with_timezone(&Utc))
            .map_err(|error| {
                format!("{name} must be an RFC 3339 time such as 2026-11-30T01:45:00Z: {error}")
            })
    })
    .transpose()
}

/// A count parameter from 1 to `max`, `default` when absent.
fn parse_count(
    name: &str,
    of: &str,
    raw: Option<String>,
    default: u64,
    max: u64,
) -> Result<u64, String> {
    raw.map_or(Ok(default), |raw| {
        raw.parse()
            .ok()
            .filter(|count| (1..=max).contains(count))
            .ok_or_else(|| format!("{name} must be a number of {of} from 1 to {max}"))
    })
}

impl MinutesRequest {
    fn parse(query: MinutesQuery) -> Result<MinutesRequest, String> {
        let limit = parse_count(
            "limit",
            "minutes",
            query.limit,
            DEFAULT_MINUTES_LIMIT,
            MAX_MINUTES_LIMIT,
        )?;
        let page_size = parse_count(
            "page_size",
            "streams",
            query.page_size,
            DEFAULT_PAGE_SIZE,
            MAX_PAGE_SIZE,
        )?;
        let after = query
            .after
            .map(|raw| {
                raw.parse()
                    .map(StreamId)
                    .map_err(|_| "after must be the next_after of the previous page".to_string())
            })
            .transpose()?;
        Ok(MinutesRequest {
            since: parse_time("since", query.since.as_deref())?,
            until: parse_time("until", query.until.as_deref())?,
            log: query.log,
            limit,
            page_size: page_size as usize,
            after,
        })
    }

    /// The minute keys a stream may list: from `since` to `until`, and
    /// nothing beyond the agent's clock, so a line dated years ahead cannot
    /// stretch the series.
    fn window(&self, now: DateTime<Utc>) -> Range<i64> {
        let horizon = now.timestamp() + FUTURE_TOLERANCE_SECONDS + 1;
        self.since.map_or(i64::MIN, |since| since.timestamp())
            ..self
                .until
                .map_or(horizon, |until| until.timestamp().min(horizon))
    }

    /// At most `limit` minutes of what `listed` spans: the first ones after
    /// `since` when it is given (to page forward), else the newest.
    fn clip(&self, listed: Range<i64>) -> Range<i64> {
        let span = i64::try_from(self.limit * 60).unwrap_or(i64::MAX);
        if self.since.is_some() {
            listed.start..listed.end.min(listed.start.saturating_add(span))
        } else {
            listed.start.max(listed.end.saturating_sub(span))..listed.end
        }
    }
}

/// The minutes of every stream, or of the one whose live path is `log`,
/// streamed one JVM at a time: a response for hundreds of JVMs never exists
/// in memory as a whole. They are written on a blocking thread, a few JVMs
/// ahead of the client: 8 such responses for 200 JVMs once held up
/// `/healthz` for 2.1 s on the server's one worker thread.
pub(super) async fn minutes(
    State(app): State<App>,
    query: Result<Query<MinutesQuery>, QueryRejection>,
) -> Response {
    // A query that does not parse (a duplicate `since`) answers JSON too.
    let query = match query {
        Ok(Query(query)) => query,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    let request = match MinutesRequest::parse(query) {
        Ok(request) => request,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let first = request
        .after
        .map_or(StreamId(0), |after| StreamId(after.0 + 1));
    let mut streams: Vec<(StreamId, Arc<StreamState>)> = app
        .store
        .snapshot()
        .streams
        .split_off(&first)
        .into_iter()
        .filter(|(_, stream)| request.log.as_ref().is_none_or(|log| &stream.log == log))
        .take(request.page_size + 1)
        .collect();
    if let (Some(log), true) = (&request.log, streams.is_empty()) {
        return error(StatusCode::NOT_FOUND, format!("no GC log stream {log}"));
    }
    let next_after = (streams.len() > request.page_size).then(|| {
        streams.truncate(request.page_size);
        streams.last().map_or(0, |(id, _)| id.0)
    });
    let end = match next_after {
        Some(after) => format!("],\"next_after\":{after}}}"),
        None => "]}".to_string(),
    }
    .into_bytes();
    let window = request.window(Utc::now());
    let (send, receive) = tokio::sync::mpsc::channel(MINUTES_CHUNKS_AHEAD);
    tokio::task::spawn_blocking(move || {
        // The bytes serde_json writes for `MinutesResponse`, sent in chunks
        // of whole JVMs of about `MINUTES_CHUNK_BYTES`: a chunk per JVM made
        // a thread handoff and a write(2) each.
        let mut chunk = Vec::from("{\"jvms\":[");
        for (index, (_, stream)) in streams.into_iter().enumerate() {
            let jvm = jvm_minutes(&stream, window.clone(), &request);
            if index > 0 {
                chunk.push(b',');
            }
            let written = write_jvm(&mut chunk, &jvm, &unmeasured_figures(&stream));
            if let Err(error) = written {
                // Ends the body: the client sees a truncated response.
                let _ = send.blocking_send(Err(error));
                return;
            }
            if chunk.len() >= MINUTES_CHUNK_BYTES {
                // The client has gone: stop writing.
                if send
                    .blocking_send(Ok(Bytes::from(std::mem::take(&mut chunk))))
                    .is_err()
                {
                    return;
                }
            }
        }
        chunk.extend_from_slice(&end);
        let _ = send.blocking_send(Ok(Bytes::from(chunk)));
    });
    let body = futures_util::stream::unfold(receive, |mut receive| async move {
        receive.recv().await.map(|chunk| (chunk, receive))
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(body),
    )
        .into_response()
}

/// One stream's entry of the response.
fn jvm_minutes(stream: &StreamState, window: Range<i64>, request: &MinutesRequest) -> JvmMinutes {
    let discovered = stream.discovered.as_ref();
    JvmMinutes {
        log: stream.log.clone(),
        labels: stream.labels.clone(),
        collector: stream.jvm.collector.as_str().to_string(),
        jdk_version: stream.jvm.jdk_version.clone(),
        pause_source: discovered.map(|d| {
            let source = d.pauses_measured_by();
            source.map_or("none", PauseSource::as_str).to_string()
        }),
        safepoint_source: discovered.map(|d| d.safepoint_source.as_str().to_string()),
        minutes: window_minutes(stream, window, request),
    }
}

/// The stream's minutes in `window`, quiet ones as zeros, cut to the
/// request's limit, with the latency of each when the stream has a latency
/// source.
fn window_minutes(
    stream: &StreamState,
    window: Range<i64>,
    request: &MinutesRequest,
) -> Vec<CombinedMinute> {
    let latency = stream.latency.as_ref().map(|latency| &latency.minutes);
    let latency_keys = latency.and_then(|minutes| {
        let mut keys = minutes.range(window.clone()).map(|(key, _)| *key);
        let first = keys.next()?;
        Some(first..keys.next_back().unwrap_or(first) + 60)
    });
    let listed = match (stream.jvm.minutes.listed(window), latency_keys) {
        (Some(gc), Some(latency)) => gc.start.min(latency.start)..gc.end.max(latency.end),
        (Some(listed), None) | (None, Some(listed)) => listed,
        (None, None) => return Vec::new(),
    };
    let clip = request.clip(listed);
    let gc = stream.jvm.minutes.filled(clip.clone(), u64::MAX).minutes;
    let Some(latency) = latency else {
        return combine(gc, [], false);
    };
    let mut minutes = combine(gc, latency.range(clip), true);
    let server = (stream.latency.as_ref()).and_then(|latency| latency.server.as_deref());
    if let Some(server) = server {
        for minute in &mut minutes {
            let at = minute.gc.start.timestamp();
            minute.access_log_latency = server.minutes.get(&at).map(|m| m.latency);
        }
    }
    minutes
}
