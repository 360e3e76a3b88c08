//! Per-minute latency from an application's own Prometheus histogram.
//!
//! Services without an access log usually still expose a latency histogram,
//! e.g. Micrometer's `http_server_requests_seconds_bucket{..., le="0.1"}` on
//! Spring Boot's `/actuator/prometheus`. The agent scrapes it every
//! `interval` ([`fetch`]), sums the selected series per bucket bound
//! ([`parse_buckets`]) and feeds each scrape with its time to a
//! [`MinuteAccumulator`], which turns the cumulative counters into one
//! [`LatencySummary`] per completed minute for
//! `LatencyState::add_histogram_minute`. The accumulator is checkpointed, so
//! a restart loses no minute.
//!
//! What a histogram cannot give:
//! - No request-level attribution: only per-minute quantiles, as
//!   `histogram_quantile` would compute them, i.e. interpolated inside a
//!   bucket and never more precise than the bucket layout.
//! - Minute boundaries are resolved to the scrape interval: a minute's delta
//!   runs from the last scrape at or before its start to the last scrape at or
//!   before its end, so requests finishing between that scrape and the
//!   boundary land in the neighbouring minute.
//! - `max_seconds` is the upper bound of the highest non-empty bucket, an
//!   upper bound of the true maximum, not the maximum itself. When requests
//!   fell into the `+Inf` bucket it is the highest finite bound, which the true
//!   maximum exceeds.
//! - Counter resets are detected on the summed series: when a series of the
//!   selection disappears (its process restarted, Micrometer expired the
//!   meter) the sum decreases and the scrape is treated as starting from zero,
//!   like a restart. Select a stable set of series with the matchers.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use std::sync::mpsc;

use super::{Source, SourceCheckpoint, SourceKey};
use crate::config::{HttpClientConfig, LatencyHistogramSource};
use crate::http_client::HttpClient;
use crate::model::correlate::LatencySummary;
use crate::model::histogram::histogram_quantile;
use crate::model::latency::LatencyState;
use crate::model::minutes::minute_start;
use crate::store::{AgentState, Store};

/// Where and what to scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSourceConfig {
    /// An `http://` or `https://` URL, e.g. `http://127.0.0.1:8080/actuator/prometheus`.
    pub url: String,
    /// The histogram's base name without `_bucket`, e.g. `http_server_requests_seconds`.
    pub metric: String,
    /// Label equality filters, e.g. `uri="/price"`. As in PromQL, an empty
    /// value matches series without the label.
    pub matchers: BTreeMap<String, String>,
    /// The whole exchange (connect, request, response and body) must finish within it.
    pub timeout: Duration,
    /// TLS and credentials.
    pub client: HttpClientConfig,
}

impl HistogramSourceConfig {
    /// The client every scrape of this source uses.
    pub fn client(&self) -> Result<HttpClient, String> {
        HttpClient::new(&self.url, &self.client, self.timeout)
    }
}

/// Cumulative bucket counts, sorted by bound: `(le, count)` with
/// `f64::INFINITY` for `le="+Inf"`.
pub type Buckets = Vec<(f64, f64)>;

/// The media type asked for: the classic text format, which every Prometheus
/// client library serves (an OpenMetrics answer is parsed as well).
pub const ACCEPT: &str = "text/plain;version=0.0.4";

/// The largest response body read: a Spring Boot endpoint with percentile
/// histograms for many URIs runs to a few megabytes.
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// Scrape gaps longer than this are not bridged: the minutes in the gap are
/// not emitted and the accumulator starts over (the first minute after the
/// gap has no baseline).
pub const MAX_GAP_MINUTES: i64 = 60;

/// GETs the exposition with [`ACCEPT`]. Every failure (refused connection,
/// timeout, TLS, non-2xx status, unreadable body) is an `Err` that names the
/// URL; never panics.
pub fn fetch(client: &HttpClient) -> Result<String, String> {
    let mut response = client
        .get()
        .header("Accept", ACCEPT)
        .call()
        .map_err(|error| client.describe("GET", error))?;
    let status = response.status();
    if !status.is_success() {
        let body = response
            .body_mut()
            .with_config()
            .limit(4096)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let excerpt: String = body.trim().chars().take(200).collect();
        let mut message = client.status_error("GET", status);
        if !excerpt.is_empty() {
            let _ = write!(message, ": {excerpt}");
        }
        return Err(message);
    }
    response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(|error| client.describe("GET", error))
}

/// The cumulative counts of `<metric>_bucket`, summed per `le` over every
/// series whose labels match all `matchers`.
///
/// Reads the Prometheus text format 0.0.4 and OpenMetrics: `#` lines, label
/// values with escaped `\"`, `\\`, `\n` and commas, trailing commas (as
/// Micrometer writes them), `le="+Inf"`, `le="0.1"` and `le="1.0e-1"`,
/// timestamps and exemplars after the value, and quoted UTF-8 metric names
/// (`{"name_bucket", le="1"}`). A series with a NaN (or negative, or
/// infinite) count is left out. When the series have different bucket
/// layouts, each contributes at every bound the count of its largest bound at
/// or below it (a lower bound, which keeps the sum cumulative). A histogram
/// without a `+Inf` bucket is returned as found; [`quantile`] gives `None`
/// for it, as Prometheus gives NaN.
///
/// `Err` for a malformed `<metric>_bucket` line, a matcher on `le`, or when no
/// series matches.
pub fn parse_buckets(
    exposition: &str,
    metric: &str,
    matchers: &BTreeMap<String, String>,
) -> Result<Buckets, String> {
    if matchers.contains_key("le") {
        return Err("a matcher on `le` is not allowed: the buckets are the histogram".to_string());
    }
    let name = format!("{metric}_bucket");
    let quoted_name = format!("\"{}\"", escape(&name));
    // Series (labels without `le`, sorted) -> le -> count.
    let mut matching: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
    let mut all_series: BTreeSet<Labels> = BTreeSet::new();
    for (index, raw_line) in exposition.lines().enumerate() {
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let after_name = if let Some(rest) = line.strip_prefix(name.as_str()) {
            match rest.chars().next() {
                Some('{') | Some(' ') | Some('\t') => rest,
                _ => continue,
            }
        } else if line.starts_with('{') && line.contains(&quoted_name) {
            line
        } else {
            continue;
        };
        let sample = parse_bucket_sample(after_name, &name)
            .map_err(|e| format!("line {}: {e}: {line}", index + 1))?;
        let Some((labels, le, count)) = sample else {
            continue; // a quoted name that is not ours
        };
        all_series.insert(labels.clone());
        let matches = matchers.iter().all(|(key, wanted)| {
            labels
                .iter()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str())
                == wanted.as_str()
        });
        if !matches {
            continue;
        }
        let buckets = matching.entry(labels).or_default();
        match buckets.iter_mut().find(|(bound, _)| *bound == le) {
            Some(existing) => existing.1 = count,
            None => buckets.push((le, count)),
        }
    }
    if all_series.is_empty() {
        return Err(format!("no `{name}` samples in the exposition (is `{metric}` a histogram this endpoint exposes?)"));
    }
    if matching.is_empty() {
        return Err(format!(
            "{} series of `{name}`, but none matches {}",
            all_series.len(),
            format_matchers(matchers)
        ));
    }
    let found = matching.len();
    let series: Vec<Vec<(f64, f64)>> = matching
        .into_values()
        .filter(|buckets| {
            buckets
                .iter()
                .all(|(_, count)| count.is_finite() && *count >= 0.0)
        })
        .map(|mut buckets| {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            buckets
        })
        .collect();
    if series.is_empty() {
        return Err(format!(
            "all {found} series of `{name}` matching {} have NaN or invalid bucket counts",
            format_matchers(matchers)
        ));
    }
    let mut bounds: Vec<f64> = series.iter().flatten().map(|(le, _)| *le).collect();
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    let mut sums = vec![0.0; bounds.len()];
    for buckets in &series {
        let mut next = 0;
        let mut count = 0.0;
        for (bound, sum) in bounds.iter().zip(sums.iter_mut()) {
            while next < buckets.len() && buckets[next].0 <= *bound {
                count = buckets[next].1;
                next += 1;
            }
            *sum += count;
        }
    }
    Ok(bounds.into_iter().zip(sums).collect())
}

type Labels = Vec<(String, String)>;

/// Parses `{labels} value [timestamp] [# exemplar]` (or ` value ...`) of a
/// bucket sample into its labels without `le`, sorted, its bound and its
/// count. `Ok(None)` when the line names its metric inside the braces and it
/// is another metric.
fn parse_bucket_sample(text: &str, name: &str) -> Result<Option<(Labels, f64, f64)>, String> {
    let (mut labels, inner_name, rest) = if text.starts_with('{') {
        parse_labels(text)?
    } else {
        (Vec::new(), None, text)
    };
    if let Some(inner) = inner_name {
        if inner != name {
            return Ok(None);
        }
    }
    let value_text = rest
        .split_whitespace()
        .next()
        .ok_or_else(|| "missing sample value".to_string())?;
    let count =
        parse_number(value_text).ok_or_else(|| format!("invalid sample value `{value_text}`"))?;
    let le_index = labels
        .iter()
        .position(|(k, _)| k == "le")
        .ok_or_else(|| "bucket without an `le` label".to_string())?;
    let (_, le_text) = labels.remove(le_index);
    let le = parse_number(le_text.trim()).ok_or_else(|| format!("invalid le=\"{le_text}\""))?;
    if le.is_nan() || le == f64::NEG_INFINITY {
        return Err(format!("invalid le=\"{le_text}\""));
    }
    labels.sort();
    Ok(Some((labels, le, count)))
}

/// Go's `ParseFloat` forms that matter here: decimals, exponents, `+Inf`,
/// `-Inf`, `NaN` (Rust's parser takes these case-insensitively).
fn parse_number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}

/// Parses `{name="value", ...}` from the start of `text`; returns the labels,
/// a quoted metric name if the set holds one, and the text after `}`.
fn parse_labels(text: &str) -> Result<(Labels, Option<String>, &str), String> {
    let bytes = text.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        i
    };
    let mut labels = Vec::new();
    let mut metric_name = None;
    let mut i = 1;
    loop {
        i = skip_ws(i);
        match bytes.get(i) {
            None => return Err("unterminated label set".to_string()),
            Some(b'}') => return Ok((labels, metric_name, &text[i + 1..])),
            _ => {}
        }
        let name = if bytes[i] == b'"' {
            let (quoted, next) = parse_quoted(text, i)?;
            i = skip_ws(next);
            if bytes.get(i) != Some(&b'=') {
                if metric_name.is_some() {
                    return Err("two metric names in one label set".to_string());
                }
                metric_name = Some(quoted);
                match bytes.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => {}
                    _ => return Err(format!("expected `,` or `}}` at column {}", i + 1)),
                }
                continue;
            }
            quoted
        } else {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b':')
            {
                i += 1;
            }
            if start == i {
                return Err(format!("expected a label name at column {}", i + 1));
            }
            let name = text[start..i].to_string();
            i = skip_ws(i);
            name
        };
        if bytes.get(i) != Some(&b'=') {
            return Err(format!("expected `=` after label `{name}`"));
        }
        i = skip_ws(i + 1);
        if bytes.get(i) != Some(&b'"') {
            return Err(format!("expected a quoted value for label `{name}`"));
        }
        let (value, next) = parse_quoted(text, i)?;
        labels.push((name, value));
        i = skip_ws(next);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {}
            _ => return Err(format!("expected `,` or `}}` at column {}", i + 1)),
        }
    }
}

/// Parses the quoted string starting at `text[start] == '"'`; returns it
/// unescaped and the index after the closing quote.
fn parse_quoted(text: &str, start: usize) -> Result<(String, usize), String> {
    let mut value = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            '"' => return Ok((value, start + 1 + offset + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => value.push('\n'),
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => break,
            },
            c => value.push(c),
        }
    }
    Err("unterminated quoted string".to_string())
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn format_matchers(matchers: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = matchers
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The summary of one minute's bucket deltas: `count` is the `+Inf` delta,
/// the quantiles come from [`quantile`] (0 when undefined), `max_seconds` is
/// the bound of the highest non-empty bucket (the highest finite bound when
/// that is `+Inf`). All zero when nothing was counted.
pub fn summarize(delta: &Buckets) -> LatencySummary {
    let total = delta.last().map_or(0.0, |(_, count)| *count);
    let count = if total.is_finite() && total > 0.0 {
        total.round() as u64
    } else {
        0
    };
    if count == 0 {
        return LatencySummary::default();
    }
    let q = |q: f64| histogram_quantile(q, delta).unwrap_or(0.0);
    let mut max_seconds = 0.0;
    let mut below = 0.0;
    let mut highest_finite = 0.0;
    for (le, cumulative) in delta {
        if *cumulative > below {
            max_seconds = if le.is_finite() { *le } else { highest_finite };
        }
        below = below.max(*cumulative);
        if le.is_finite() {
            highest_finite = *le;
        }
    }
    LatencySummary {
        count,
        p50_seconds: q(0.50),
        p90_seconds: q(0.90),
        p99_seconds: q(0.99),
        p999_seconds: q(0.999),
        max_seconds,
    }
}

/// Cumulative counts as a serializable value: bounds are written as strings
/// (`"+Inf"`, `"0.1"`) since JSON has no infinity.
#[derive(Debug, Clone, PartialEq)]
struct Cumulative(Buckets);

impl Serialize for Cumulative {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<(String, f64)> = self
            .0
            .iter()
            .map(|(le, count)| {
                let le = if *le == f64::INFINITY {
                    "+Inf".to_string()
                } else {
                    le.to_string()
                };
                (le, *count)
            })
            .collect();
        pairs.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Cumulative {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pairs: Vec<(String, f64)> = Vec::deserialize(deserializer)?;
        pairs
            .into_iter()
            .map(|(le, count)| match parse_number(&le) {
                Some(bound) if !bound.is_nan() => Ok((bound, count)),
                _ => Err(D::Error::custom(format!("invalid bucket bound `{le}`"))),
            })
            .collect::<Result<Buckets, _>>()
            .map(Cumulative)
    }
}

/// One scrape as the accumulator keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Scrape {
    at: DateTime<Utc>,
    /// The counts as scraped, to detect resets.
    raw: Cumulative,
    /// The counts made monotonic across resets.
    adjusted: Cumulative,
}

/// Turns scrapes of cumulative buckets into per-minute summaries.
///
/// Minute `M` (`[M, M + 60 s)`) is complete once a scrape after its end has
/// been seen; its delta is the cumulative count at the last scrape at or
/// before `M`'s end minus that at the last scrape at or before `M`'s start.
/// So the first minute after start (no scrape at or before its start) is
/// skipped, and a scrape exactly on a boundary closes the minute before it.
///
/// - Counter resets: when any cumulative count is lower than in the previous
///   scrape, the new scrape counts from zero (as Prometheus' `rate` does):
///   its counts are added to what was counted before the reset. Requests
///   between the last scrape before a restart and the restart are lost.
/// - Scrape gaps: a minute in which no scrape happened takes the nearest
///   earlier scrape as its baseline and as its end, so it is still emitted,
///   with a zero summary, and the requests of the gap are counted in the
///   minute of the next scrape. Gaps over [`MAX_GAP_MINUTES`] are not
///   bridged: the accumulator starts over.
/// - A scrape older than the previous one, or with no buckets, a NaN bound or
///   a non-finite or negative count, is ignored. A change of bucket layout
///   (bounds added or removed) starts the accumulator over at that scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MinuteAccumulator {
    /// The latest scrape.
    last: Option<Scrape>,
    /// Adjusted counts at the last scrape at or before the start of the
    /// minute the latest scrape closes (the minute before it when it is on a
    /// boundary); `None` until there is one.
    baseline: Option<Cumulative>,
}

/// The minute (epoch seconds) a scrape taken at `at` ends: the `M` with
/// `M < at <= M + 60 s`.
fn closing_minute(at: DateTime<Utc>) -> i64 {
    let seconds = at.timestamp();
    let minute = seconds.div_euclid(60) * 60;
    if minute == seconds && at.timestamp_subsec_nanos() == 0 {
        minute - 60
    } else {
        minute
    }
}

fn valid(mut buckets: Buckets) -> Option<Buckets> {
    if buckets.is_empty()
        || buckets
            .iter()
            .any(|(le, count)| le.is_nan() || !count.is_finite() || *count < 0.0)
    {
        return None;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return None;
    }
    Some(buckets)
}

fn same_layout(a: &Buckets, b: &Buckets) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
}

fn delta(end: &Buckets, start: &Buckets) -> Buckets {
    end.iter()
        .zip(start)
        .map(|((le, e), (_, s))| (*le, (e - s).max(0.0)))
        .collect()
}

impl MinuteAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one scrape taken at `at`; returns the summaries of minutes that
    /// completed, i.e. the per-minute delta between the last scrape at or
    /// before each minute boundary (counter resets: when any cumulative count
    /// decreases, treat the new scrape as starting from zero). Each minute is
    /// returned with its start; oldest first.
    pub fn observe(
        &mut self,
        at: DateTime<Utc>,
        buckets: Buckets,
    ) -> Vec<(DateTime<Utc>, LatencySummary)> {
        let Some(raw) = valid(buckets) else {
            return Vec::new();
        };
        let Some(last) = self.last.take() else {
            self.last = Some(Scrape {
                at,
                adjusted: Cumulative(raw.clone()),
                raw: Cumulative(raw),
            });
            return Vec::new();
        };
        if at < last.at {
            self.last = Some(last);
            return Vec::new();
        }
        let relayout = !same_layout(&raw, &last.raw.0);
        let adjusted = if relayout {
            raw.clone()
        } else {
            let reset = raw.iter().zip(&last.raw.0).any(|(new, old)| new.1 < old.1);
            raw.iter()
                .zip(&last.raw.0)
                .zip(&last.adjusted.0)
                .map(|(((le, new), (_, old)), (_, before))| {
                    let increase = if reset { *new } else { new - old };
                    (*le, before + increase)
                })
                .collect()
        };
        let previous_minute = closing_minute(last.at);
        let minute = closing_minute(at);
        let mut completed = Vec::new();
        if minute > previous_minute {
            if let Some(baseline) = &self.baseline {
                let summary = summarize(&delta(&last.adjusted.0, &baseline.0));
                completed.push((minute_start(previous_minute), summary));
            }
            let gap = (minute - previous_minute) / 60 - 1;
            if gap > MAX_GAP_MINUTES {
                self.baseline = None;
            } else {
                for skipped in 1..=gap {
                    completed.push((
                        minute_start(previous_minute + 60 * skipped),
                        LatencySummary::default(),
                    ));
                }
                self.baseline = Some(last.adjusted.clone());
            }
        }
        if relayout {
            self.baseline = None;
        }
        self.last = Some(Scrape {
            at,
            raw: Cumulative(raw),
            adjusted: Cumulative(adjusted),
        });
        completed
    }
}

/// The checkpoint key of a histogram source: what it scrapes and selects.
pub fn source_key(source: &LatencyHistogramSource) -> String {
    format!(
        "{} {}{}",
        source.url,
        source.metric,
        format_matchers(&source.matchers)
    )
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistogramCheckpoint {
    pub key: String,
    pub accumulator: MinuteAccumulator,
}

/// One scrape's buckets, or why there are none.
type Scraped = (DateTime<Utc>, Result<Buckets, String>);

/// Scrapes on its own thread (a slow application must not hold up the
/// tailing) and accumulates on the agent's, where the accumulator is
/// checkpointed with everything else.
pub struct HistogramSource {
    key: String,
    link: String,
    accumulator: MinuteAccumulator,
    scrapes: mpsc::Receiver<Scraped>,
}

impl HistogramSource {
    /// Starts scraping `source` every interval on a thread of its own.
    pub fn start(
        source: &LatencyHistogramSource,
        restored: Option<SourceCheckpoint>,
    ) -> HistogramSource {
        let (sender, scrapes) = mpsc::channel();
        let config = HistogramSourceConfig {
            url: source.url.clone(),
            metric: source.metric.clone(),
            matchers: source.matchers.clone(),
            timeout: source.interval.min(Duration::from_secs(5)),
            client: source.client.clone(),
        };
        let interval = source.interval;
        std::thread::spawn(move || {
            let client = config.client();
            loop {
                let scraped = client.as_ref().map_err(String::clone).and_then(|client| {
                    let text = fetch(client)?;
                    parse_buckets(&text, &config.metric, &config.matchers)
                });
                if sender.send((Utc::now(), scraped)).is_err() {
                    return;
                }
                std::thread::sleep(interval);
            }
        });
        HistogramSource::resume(source, restored, scrapes)
    }

    /// The source fed by `scrapes`, its accumulator taken from `restored`.
    fn resume(
        source: &LatencyHistogramSource,
        restored: Option<SourceCheckpoint>,
        scrapes: mpsc::Receiver<Scraped>,
    ) -> HistogramSource {
        let accumulator = match restored {
            Some(SourceCheckpoint::LatencyHistogram(checkpoint)) => checkpoint.accumulator,
            _ => MinuteAccumulator::new(),
        };
        HistogramSource {
            key: source_key(source),
            link: source.gc_log.clone(),
            accumulator,
            scrapes,
        }
    }
}

impl Source for HistogramSource {
    fn key(&self) -> SourceKey {
        SourceKey::LatencyHistogram(self.key.clone())
    }

    fn poll(&mut self, store: &Store) -> bool {
        let scraped: Vec<Scraped> = self.scrapes.try_iter().collect();
        if scraped.is_empty() {
            return false;
        }
        let mut state = store.write();
        let target = state.stream_by_log(&self.link);
        for (at, result) in scraped {
            match result {
                Ok(buckets) => {
                    let minutes = self.accumulator.observe(at, buckets);
                    let Some(stream) = target.and_then(|id| state.stream_mut(id)) else {
                        continue;
                    };
                    let latency = stream.latency.get_or_insert_with(LatencyState::default);
                    for (start, summary) in minutes {
                        latency.add_histogram_minute(start, summary);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "latency histogram scrape failed");
                    state.count_error("latency_histogram_scrape");
                }
            }
        }
        true
    }

    fn checkpoint(&self, _state: &AgentState) -> SourceCheckpoint {
        SourceCheckpoint::LatencyHistogram(HistogramCheckpoint {
            key: self.key.clone(),
            accumulator: self.accumulator.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const INF: f64 = f64::INFINITY;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
    }

    #[track_caller]
    fn assert_close(actual: f64, expected: f64) {
        assert!(close(actual, expected), "{actual} != {expected}");
    }

    fn none() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    fn matchers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 5, 1, h, m, s).unwrap()
    }

    /// Micrometer's output with `publishPercentileHistogram`, as posted in
    /// "Java Micrometer - What to do with metrics of type *_bucket"
    /// (Stack Overflow question 68394394, mirrored at
    /// https://newbetuts.com/68394394-java-micrometer-what-to-do-with-metrics-of-type-bucket),
    /// copied verbatim: note the `,}` Micrometer writes and the trailing
    /// blanks of the HELP line. The excerpt stops before the `+Inf` bucket.
    const MICROMETER_EXCERPT: &str = "\
# HELP http_server_requests_seconds  
# TYPE http_server_requests_seconds histogram
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.005592405\",} 273.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.006990506\",} 797.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.008388607\",} 2638.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.009786708\",} 3543.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.011184809\",} 3932.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.01258291\",} 4154.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.013981011\",} 4279.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.015379112\",} 4380.0
";

    #[test]
    fn parses_the_documented_micrometer_excerpt() {
        let expected = vec![
            (0.005592405, 273.0),
            (0.006990506, 797.0),
            (0.008388607, 2638.0),
            (0.009786708, 3543.0),
            (0.011184809, 3932.0),
            (0.01258291, 4154.0),
            (0.013981011, 4279.0),
            (0.015379112, 4380.0),
        ];
        let buckets =
            parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &none()).unwrap();
        assert_eq!(buckets, expected);
        let health = matchers(&[("uri", "/health"), ("method", "GET")]);
        assert_eq!(
            parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &health).unwrap(),
            expected
        );
        // The excerpt has no +Inf bucket: no quantile, as Prometheus gives NaN.
        assert_eq!(histogram_quantile(0.5, &buckets), None);

        let other = matchers(&[("uri", "/price")]);
        let error =
            parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &other).unwrap_err();
        assert!(
            error.contains("1 series") && error.contains("uri=\"/price\""),
            "{error}"
        );
        let error = parse_buckets(MICROMETER_EXCERPT, "jvm_gc_pause_seconds", &none()).unwrap_err();
        assert!(
            error.contains("no `jvm_gc_pause_seconds_bucket` samples"),
            "{error}"
        );
    }

    /// Both text formats, every syntax the parser must get through.
    const MIXED: &str = r#"# HELP http_server_requests_seconds Duration of HTTP server request handling
# TYPE http_server_requests_seconds histogram
http_server_requests_seconds{uri="/price",quantile="0.99",} 0.3
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="0.1",} 10.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="0.5",} 18.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="+Inf",} 20.0 1714557600000
http_server_requests_seconds_count{method="GET",status="200",uri="/price",} 20.0
http_server_requests_seconds_sum{method="GET",status="200",uri="/price",} 3.5
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="1.0e-1"} 1 # {trace_id="abc"} 0.05 1714557600.123
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="5.0E-1"} 3
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="+Inf"} 5
http_server_requests_seconds_created{uri="/price",method="GET",status="500"} 1714557000.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="0.1"} 100
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="0.5"} 200
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="+Inf"} 300
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="0.1"} NaN
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="0.5"} NaN
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="+Inf"} NaN
http_server_requests_seconds_bucket_total{uri="/price",le="0.1"} 999
http_server_requests_seconds_max{uri="/price"} 0.9
{"http_server_requests_seconds_bucket", uri="/utf8", le="0.1"} 7
{"http_server_requests_seconds_bucket", uri="/utf8", le="0.5"} 8
{"http_server_requests_seconds_bucket", uri="/utf8", le="+Inf"} 9
{"other.metric_bucket", uri="/price", le="0.1"} 1000
# EOF
"#;

    #[test]
    fn parses_both_text_formats_and_sums_matching_series() {
        let metric = "http_server_requests_seconds";
        // uri="/price": 200s + 500s; the POST series is NaN and left out.
        let price = parse_buckets(MIXED, metric, &matchers(&[("uri", "/price")])).unwrap();
        assert_eq!(price, vec![(0.1, 11.0), (0.5, 21.0), (INF, 25.0)]);
        // Escaped quotes, backslashes and commas in a label value.
        let quoted =
            parse_buckets(MIXED, metric, &matchers(&[("uri", "/say \"hi\", \\ bye")])).unwrap();
        assert_eq!(quoted, vec![(0.1, 100.0), (0.5, 200.0), (INF, 300.0)]);
        // A quoted (UTF-8 style) metric name.
        let utf8 = parse_buckets(MIXED, metric, &matchers(&[("uri", "/utf8")])).unwrap();
        assert_eq!(utf8, vec![(0.1, 7.0), (0.5, 8.0), (INF, 9.0)]);
        // Everything that is not NaN.
        let all = parse_buckets(MIXED, metric, &none()).unwrap();
        assert_eq!(all, vec![(0.1, 118.0), (0.5, 229.0), (INF, 334.0)]);
        // Only NaN series match.
        let error = parse_buckets(MIXED, metric, &matchers(&[("method", "POST")])).unwrap_err();
        assert!(error.contains("NaN"), "{error}");
    }

    #[test]
    fn matchers_filter_series() {
        let text = r#"
lat_bucket{uri="/price",method="GET",le="0.1"} 1
lat_bucket{uri="/price",method="GET",le="+Inf"} 2
lat_bucket{uri="/price",method="POST",le="0.1"} 10
lat_bucket{uri="/price",method="POST",le="+Inf"} 20
lat_bucket{uri="/health",method="GET",le="0.1"} 100
lat_bucket{uri="/health",method="GET",le="+Inf"} 200
lat_bucket{uri="/price",method="GET",region="eu",le="0.1"} 1000
lat_bucket{uri="/price",method="GET",region="eu",le="+Inf"} 2000
"#;
        let parse = |pairs: &[(&str, &str)]| parse_buckets(text, "lat", &matchers(pairs));
        assert_eq!(parse(&[]).unwrap(), vec![(0.1, 1111.0), (INF, 2222.0)]);
        assert_eq!(
            parse(&[("uri", "/price")]).unwrap(),
            vec![(0.1, 1011.0), (INF, 2022.0)]
        );
        assert_eq!(
            parse(&[("uri", "/price"), ("method", "GET")]).unwrap(),
            vec![(0.1, 1001.0), (INF, 2002.0)]
        );
        // An empty value matches series without the label, as in PromQL.
        assert_eq!(
            parse(&[("uri", "/price"), ("region", "")]).unwrap(),
            vec![(0.1, 11.0), (INF, 22.0)]
        );
        assert!(parse(&[("uri", "/nope")]).unwrap_err().contains("4 series"));
        assert!(parse(&[("le", "0.1")]).is_err());
    }

    #[test]
    fn malformed_bucket_lines_are_errors_other_lines_are_not() {
        let metric = "lat";
        let ok = "garbage that is not ours {{{\nlat_bucket{le=\"+Inf\"} 3\n";
        assert_eq!(
            parse_buckets(ok, metric, &none()).unwrap(),
            vec![(INF, 3.0)]
        );
        for bad in [
            "lat_bucket{le=\"0.1\"",
            "lat_bucket{le=\"0.1} 3",
            "lat_bucket{le=0.1} 3",
            "lat_bucket{uri=\"/\"} 3",
            "lat_bucket{le=\"abc\"} 3",
            "lat_bucket{le=\"NaN\"} 3",
            "lat_bucket{le=\"0.1\"}",
            "lat_bucket{le=\"0.1\"} x",
        ] {
            let error = parse_buckets(bad, metric, &none()).unwrap_err();
            assert!(error.starts_with("line 1:"), "{bad}: {error}");
        }
    }

    #[test]
    fn series_with_different_layouts_stay_cumulative() {
        let text = r#"
lat_bucket{uri="/a",le="0.1"} 5
lat_bucket{uri="/a",le="+Inf"} 10
lat_bucket{uri="/b",le="0.2"} 1
lat_bucket{uri="/b",le="+Inf"} 2
"#;
        // /b contributes 0 at 0.1 (nothing known below 0.2); /a contributes its
        // 0.1 count at 0.2.
        let buckets = parse_buckets(text, "lat", &none()).unwrap();
        assert_eq!(buckets, vec![(0.1, 5.0), (0.2, 6.0), (INF, 12.0)]);
    }

    #[test]
    fn quantile_interpolates_like_histogram_quantile() {
        // Cumulative: 50 at or below 0.1, 90 at or below 0.2, 99 at or below 0.5, 100 in all.
        let buckets = vec![(0.1, 50.0), (0.2, 90.0), (0.5, 99.0), (INF, 100.0)];
        // p50: rank 50 is the whole first bucket [0, 0.1]: 0.1.
        assert_close(histogram_quantile(0.50, &buckets).unwrap(), 0.1);
        // p25: rank 25 of 50 in [0, 0.1]: 0.05.
        assert_close(histogram_quantile(0.25, &buckets).unwrap(), 0.05);
        // p60: rank 60 is 10 of 40 in (0.1, 0.2]: 0.125.
        assert_close(histogram_quantile(0.60, &buckets).unwrap(), 0.125);
        // p90: rank 90 is all 40 of (0.1, 0.2]: 0.2.
        assert_close(histogram_quantile(0.90, &buckets).unwrap(), 0.2);
        // p95: rank 95 is 5 of 9 in (0.2, 0.5]: 0.2 + 5/9 * 0.3 = 0.36666...
        assert_close(
            histogram_quantile(0.95, &buckets).unwrap(),
            0.2 + (5.0 / 9.0) * 0.3,
        );
        assert_close(
            histogram_quantile(0.95, &buckets).unwrap(),
            0.366_666_666_666_666_7,
        );
        // p99: rank 99 is all 9 of (0.2, 0.5]: 0.5.
        assert_close(histogram_quantile(0.99, &buckets).unwrap(), 0.5);
        // p99.9: rank 99.9 is in +Inf: the highest finite bound.
        assert_close(histogram_quantile(0.999, &buckets).unwrap(), 0.5);
        assert_close(histogram_quantile(1.0, &buckets).unwrap(), 0.5);
        // Order of the input does not matter.
        let mut shuffled = buckets.clone();
        shuffled.reverse();
        assert_close(
            histogram_quantile(0.95, &shuffled).unwrap(),
            0.2 + (5.0 / 9.0) * 0.3,
        );

        assert_eq!(histogram_quantile(0.5, &[(0.1, 0.0), (INF, 0.0)]), None);
        assert_eq!(histogram_quantile(0.5, &[(0.1, 3.0), (0.2, 4.0)]), None);
        assert_eq!(histogram_quantile(0.5, &[(INF, 4.0)]), None);
        assert_eq!(histogram_quantile(1.5, &buckets), None);
        assert_eq!(histogram_quantile(f64::NAN, &buckets), None);
        // A non-positive lowest bound is returned as is.
        assert_close(
            histogram_quantile(0.1, &[(-1.0, 5.0), (INF, 10.0)]).unwrap(),
            -1.0,
        );
        // Non-cumulative noise is flattened: (0.2, 80) counts as 90.
        let noisy = vec![(0.1, 90.0), (0.2, 80.0), (0.5, 99.0), (INF, 100.0)];
        assert_close(
            histogram_quantile(0.95, &noisy).unwrap(),
            0.2 + (5.0 / 9.0) * 0.3,
        );
    }

    #[test]
    fn summary_of_a_delta() {
        let delta = vec![
            (0.1, 50.0),
            (0.2, 90.0),
            (0.5, 99.0),
            (1.0, 100.0),
            (INF, 100.0),
        ];
        let summary = summarize(&delta);
        assert_eq!(summary.count, 100);
        assert_close(summary.p50_seconds, 0.1);
        assert_close(summary.p90_seconds, 0.2);
        assert_close(summary.p99_seconds, 0.5);
        // rank 99.9 is 0.9 of 1 in (0.5, 1]: 0.95.
        assert_close(summary.p999_seconds, 0.95);
        // Highest non-empty bucket: (0.5, 1].
        assert_close(summary.max_seconds, 1.0);
        // Something above the highest finite bound: its bound is the max.
        let summary = summarize(&vec![(0.1, 1.0), (1.0, 1.0), (INF, 2.0)]);
        assert_close(summary.max_seconds, 1.0);
        assert_eq!(
            summarize(&vec![(0.1, 0.0), (INF, 0.0)]),
            LatencySummary::default()
        );
    }

    /// A histogram the tests write requests into; `scrape` gives its cumulative counts.
    struct Model {
        bounds: Vec<f64>,
        counts: Vec<f64>,
    }

    impl Model {
        fn new(bounds: &[f64]) -> Model {
            let mut bounds = bounds.to_vec();
            bounds.push(INF);
            let counts = vec![0.0; bounds.len()];
            Model { bounds, counts }
        }

        fn record(&mut self, seconds: f64, requests: u32) {
            let index = self.bounds.iter().position(|b| seconds <= *b).unwrap();
            self.counts[index] += requests as f64;
        }

        fn scrape(&self) -> Buckets {
            let mut sum = 0.0;
            self.bounds
                .iter()
                .zip(&self.counts)
                .map(|(b, c)| {
                    sum += c;
                    (*b, sum)
                })
                .collect()
        }
    }

    #[test]
    fn three_minutes_of_15_second_scrapes() {
        let mut model = Model::new(&[0.05, 0.1, 0.25, 0.5, 1.0]);
        model.record(0.01, 1000); // before the agent started
        let mut accumulator = MinuteAccumulator::new();
        let mut emitted = Vec::new();
        // Scrapes at 12:00:07, :22, :37, :52, 12:01:07, ... 12:04:07.
        for i in 0..17u32 {
            let time = at(12, 0, 7) + chrono::Duration::seconds(15 * i as i64);
            // Requests since the previous scrape, by the interval ending now.
            match (time.format("%M").to_string().as_str(), i % 4) {
                ("00", _) if i > 0 => model.record(0.3, 10), // minute 12:00, skipped
                // 12:01 (the interval ending 12:01:07 belongs to it too):
                // 99 fast requests and a slow one.
                ("01", 0) | ("01", 1) | ("01", 3) => model.record(0.02, 25),
                ("01", 2) => {
                    model.record(0.02, 24);
                    model.record(0.7, 1);
                }
                // 12:02: 100 <= 0.05 s, 80 in (0.05, 0.1], 18 in (0.1, 0.25], 2 over 1 s.
                ("02", 0) => {
                    model.record(0.04, 50);
                    model.record(0.08, 40);
                }
                ("02", 1) => {
                    model.record(0.04, 50);
                    model.record(0.08, 40);
                }
                ("02", 2) => model.record(0.2, 18),
                ("02", 3) => model.record(5.0, 2),
                _ => {} // 12:03: nothing
            }
            emitted.extend(accumulator.observe(time, model.scrape()));
        }
        let minutes: Vec<DateTime<Utc>> = emitted.iter().map(|(m, _)| *m).collect();
        assert_eq!(minutes, vec![at(12, 1, 0), at(12, 2, 0), at(12, 3, 0)]);

        // 12:01: cumulative delta 0.05:99 ... 0.5:99, 1:100, +Inf:100.
        let first = emitted[0].1;
        assert_eq!(first.count, 100);
        assert_close(first.p50_seconds, 0.05 * 50.0 / 99.0);
        assert_close(first.p90_seconds, 0.05 * 90.0 / 99.0);
        assert_close(first.p99_seconds, 0.05);
        assert_close(first.p999_seconds, 0.5 + 0.5 * 0.9);
        assert_close(first.max_seconds, 1.0);

        // 12:02: cumulative 0.05:100, 0.1:180, 0.25:198, 0.5:198, 1:198, +Inf:200.
        let second = emitted[1].1;
        assert_eq!(second.count, 200);
        assert_close(second.p50_seconds, 0.05);
        assert_close(second.p90_seconds, 0.1);
        assert_close(second.p99_seconds, 0.25);
        assert_close(second.p999_seconds, 1.0);
        assert_close(second.max_seconds, 1.0);

        // 12:03: no requests, a zero summary.
        assert_eq!(emitted[2].1, LatencySummary::default());
    }

    #[test]
    fn counter_reset_counts_from_zero() {
        let mut accumulator = MinuteAccumulator::new();
        let scrape = |a: f64, b: f64, c: f64| vec![(0.1, a), (0.5, b), (INF, c)];
        assert!(accumulator
            .observe(at(12, 0, 30), scrape(10.0, 10.0, 10.0))
            .is_empty());
        // Closes 12:00, which has no baseline.
        assert!(accumulator
            .observe(at(12, 1, 10), scrape(20.0, 25.0, 30.0))
            .is_empty());
        // The process restarted: the counts went down.
        assert!(accumulator
            .observe(at(12, 1, 40), scrape(5.0, 5.0, 6.0))
            .is_empty());
        let completed = accumulator.observe(at(12, 2, 5), scrape(8.0, 10.0, 12.0));
        assert_eq!(completed.len(), 1);
        let (minute, summary) = completed[0];
        assert_eq!(minute, at(12, 1, 0));
        // 12:00:30 -> 12:01:10: +10, +15, +20; then 5, 5, 6 since the restart:
        // delta 0.1:15, 0.5:20, +Inf:26.
        assert_eq!(summary.count, 26);
        // p50: rank 13 of 15 in [0, 0.1].
        assert_close(summary.p50_seconds, 0.1 * 13.0 / 15.0);
        // p90: rank 23.4 is above 20: +Inf, the highest finite bound.
        assert_close(summary.p90_seconds, 0.5);
        assert_close(summary.p99_seconds, 0.5);
        assert_close(summary.max_seconds, 0.5);
        // 12:02 continues from the restarted counts: 12:01:40 (5,5,6) -> 12:02:50 (9,12,15).
        assert!(accumulator
            .observe(at(12, 2, 50), scrape(9.0, 12.0, 15.0))
            .is_empty());
        let completed = accumulator.observe(at(12, 3, 1), scrape(9.0, 12.0, 15.0));
        // Delta 0.1:4, 0.5:7, +Inf:9 (from the 12:01:40 scrape, the last before 12:02).
        assert_eq!(completed[0].0, at(12, 2, 0));
        assert_eq!(completed[0].1.count, 9);
        // p50: rank 4.5 is 0.5 of 3 in (0.1, 0.5].
        assert_close(completed[0].1.p50_seconds, 0.1 + 0.4 * 0.5 / 3.0);
    }

    #[test]
    fn scrape_gaps_still_emit_and_long_gaps_start_over() {
        let mut accumulator = MinuteAccumulator::new();
        let scrape = |fast: f64, total: f64| vec![(0.1, fast), (INF, total)];
        accumulator.observe(at(12, 0, 30), scrape(0.0, 0.0));
        accumulator.observe(at(12, 1, 30), scrape(10.0, 10.0));
        // No scrape in 12:02 and 12:03.
        let completed = accumulator.observe(at(12, 4, 10), scrape(30.0, 40.0));
        let minutes: Vec<_> = completed.iter().map(|(m, s)| (*m, s.count)).collect();
        // 12:01: 12:00:30 -> 12:01:30; 12:02 and 12:03: the 12:01:30 scrape
        // is their baseline and their end.
        assert_eq!(
            minutes,
            vec![(at(12, 1, 0), 10), (at(12, 2, 0), 0), (at(12, 3, 0), 0)]
        );
        assert_eq!(completed[1].1, LatencySummary::default());
        // 12:04 counts the whole gap, from the nearest earlier scrape 12:01:30.
        let completed = accumulator.observe(at(12, 5, 10), scrape(30.0, 40.0));
        assert_eq!(completed.len(), 1);
        assert_eq!((completed[0].0, completed[0].1.count), (at(12, 4, 0), 30));

        // A gap over MAX_GAP_MINUTES: 12:05 is emitted, the gap is not, and
        // the first minute after it has no baseline.
        let late = at(12, 5, 10) + chrono::Duration::minutes(MAX_GAP_MINUTES + 5);
        let completed = accumulator.observe(late, scrape(50.0, 60.0));
        assert_eq!(completed.len(), 1);
        assert_eq!((completed[0].0, completed[0].1.count), (at(12, 5, 0), 0));
        let completed =
            accumulator.observe(late + chrono::Duration::seconds(60), scrape(51.0, 61.0));
        assert!(completed.is_empty());
        let completed =
            accumulator.observe(late + chrono::Duration::seconds(120), scrape(53.0, 63.0));
        assert_eq!(completed.len(), 1);
        assert_eq!(completed[0].1.count, 1);
    }

    #[test]
    fn boundary_scrapes_close_the_minute_before() {
        let mut accumulator = MinuteAccumulator::new();
        let scrape = |n: f64| vec![(1.0, n), (INF, n)];
        accumulator.observe(at(12, 0, 0), scrape(0.0));
        assert!(accumulator.observe(at(12, 0, 30), scrape(5.0)).is_empty());
        // 12:01:00 is the end of 12:00: it is the last scrape at or before it.
        assert!(accumulator.observe(at(12, 1, 0), scrape(7.0)).is_empty());
        let completed = accumulator.observe(
            at(12, 1, 0) + chrono::Duration::milliseconds(1),
            scrape(9.0),
        );
        assert_eq!(completed.len(), 1);
        assert_eq!((completed[0].0, completed[0].1.count), (at(12, 0, 0), 7));
    }

    #[test]
    fn odd_scrapes_are_ignored_and_layout_changes_start_over() {
        let mut accumulator = MinuteAccumulator::new();
        accumulator.observe(at(12, 0, 30), vec![(0.1, 1.0), (INF, 1.0)]);
        accumulator.observe(at(12, 1, 30), vec![(0.1, 2.0), (INF, 2.0)]);
        let before = accumulator.clone();
        assert!(accumulator
            .observe(at(12, 1, 0), vec![(0.1, 9.0), (INF, 9.0)])
            .is_empty());
        assert!(accumulator.observe(at(12, 1, 40), vec![]).is_empty());
        assert!(accumulator
            .observe(at(12, 1, 40), vec![(0.1, f64::NAN), (INF, 9.0)])
            .is_empty());
        assert_eq!(accumulator, before);
        // New bounds: 12:01 is still emitted from the old layout, 12:02 has no baseline.
        let completed =
            accumulator.observe(at(12, 2, 30), vec![(0.1, 3.0), (0.2, 3.0), (INF, 3.0)]);
        assert_eq!(completed.len(), 1);
        assert_eq!(completed[0].1.count, 1);
        let completed =
            accumulator.observe(at(12, 3, 30), vec![(0.1, 4.0), (0.2, 4.0), (INF, 4.0)]);
        assert!(completed.is_empty());
        let completed =
            accumulator.observe(at(12, 4, 30), vec![(0.1, 6.0), (0.2, 6.0), (INF, 6.0)]);
        assert_eq!(completed[0].1.count, 1);
    }

    #[test]
    fn checkpoint_round_trip_keeps_infinity() {
        let mut accumulator = MinuteAccumulator::new();
        accumulator.observe(at(12, 0, 30), vec![(0.1, 1.0), (INF, 2.0)]);
        accumulator.observe(at(12, 1, 30), vec![(0.1, 3.0), (INF, 5.0)]);
        let json = serde_json::to_string(&accumulator).unwrap();
        assert!(json.contains("\"+Inf\""), "{json}");
        let mut restored: MinuteAccumulator = serde_json::from_str(&json).unwrap();
        assert_eq!(restored, accumulator);
        let completed = restored.observe(at(12, 2, 30), vec![(0.1, 4.0), (INF, 9.0)]);
        assert_eq!((completed[0].0, completed[0].1.count), (at(12, 1, 0), 3));
        assert!(serde_json::from_str::<MinuteAccumulator>(
            r#"{"last":null,"baseline":[["abc",1.0]]}"#
        )
        .is_err());
    }

    /// Minute 10:00 is closed by the scrape at 10:01:10 but has no baseline;
    /// the scrape at 10:02:10 closes 10:01, whose delta runs from the last
    /// scrape at or before 10:01 (0 requests) to the last at or before 10:02
    /// (10): 10 requests, all under 100 ms. The agent restarts in between.
    #[test]
    fn a_restart_resumes_the_minute_in_progress() {
        let source = LatencyHistogramSource {
            url: "http://127.0.0.1:1/metrics".into(),
            metric: "http_server_requests_seconds".into(),
            matchers: BTreeMap::new(),
            interval: Duration::from_secs(20),
            gc_log: "/l/gc.log".into(),
            client: Default::default(),
        };
        let buckets = |fast: f64, all: f64| vec![(0.1, fast), (0.5, all), (INF, all)];
        let run = |restored: Option<SourceCheckpoint>, scrapes: Vec<Scraped>| {
            let store = Store::new(crate::store::AgentState::from_streams([
                crate::store::StreamState {
                    log: "/l/gc.log".into(),
                    ..Default::default()
                },
            ]));
            let (sender, receiver) = mpsc::channel();
            let mut histogram = HistogramSource::resume(&source, restored, receiver);
            for scrape in scrapes {
                sender.send(scrape).unwrap();
            }
            histogram.poll(&store);
            let checkpoint = histogram.checkpoint(&store.snapshot());
            let latency = store
                .snapshot()
                .streams
                .values()
                .next()
                .unwrap()
                .latency
                .clone();
            (checkpoint, latency)
        };
        let (checkpoint, latency) = run(
            None,
            vec![
                (at(10, 0, 50), Ok(buckets(0.0, 0.0))),
                (at(10, 1, 10), Ok(buckets(10.0, 10.0))),
            ],
        );
        assert!(latency.is_none_or(|l| l.minutes.is_empty()));
        let dir = tempfile::tempdir().unwrap();
        crate::checkpoint::Journal::new(dir.path())
            .write(&[checkpoint], std::iter::empty())
            .unwrap();
        let restored = crate::checkpoint::load(dir.path())
            .unwrap()
            .unwrap()
            .sources
            .pop();
        let after_restart = vec![(at(10, 2, 10), Ok(buckets(30.0, 40.0)))];
        let (_, latency) = run(restored, after_restart.clone());
        let minutes = latency.unwrap().minutes;
        let minute = &minutes[&at(10, 1, 0).timestamp()];
        assert_eq!(minute.latency.count, 10);
        assert!(minute.latency.max_seconds <= 0.1);
        // Without the checkpoint, the first scrape after the restart has no baseline.
        let (_, fresh) = run(None, after_restart);
        assert!(fresh.is_none_or(|l| l.minutes.is_empty()));
    }
}
