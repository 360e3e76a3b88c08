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

use std::sync::mpsc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::reading::{Reading, Update};
use super::{Source, SourceCheckpoint, SourceKey};
use crate::config::LatencyHistogramSource;
use crate::store::{AgentState, ErrorKind};
use exposition::format_matchers;

mod accumulator;
mod client;
mod exposition;
mod quantiles;

pub(crate) use accumulator::{Cumulative, Scrape};
pub use accumulator::{MinuteAccumulator, MAX_GAP_MINUTES};
pub use client::{fetch, HistogramSourceConfig, ACCEPT};
pub use exposition::parse_buckets;
pub(crate) use exposition::parse_number;
pub use quantiles::summarize;

/// Cumulative bucket counts, sorted by bound: `(le, count)` with
/// `f64::INFINITY` for `le="+Inf"`.
pub type Buckets = Vec<(f64, f64)>;

/// The checkpoint key of a histogram source: what it scrapes and selects.
pub fn source_key(source: &LatencyHistogramSource) -> String {
    format!(
        "{} {}{}",
        source.url,
        source.metric,
        format_matchers(&source.matchers)
    )
}

#[derive(Debug, Clone)]
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

    fn poll(&mut self, reading: &mut Reading) -> bool {
        let scraped: Vec<Scraped> = self.scrapes.try_iter().collect();
        if scraped.is_empty() {
            return false;
        }
        for (at, result) in scraped {
            match result {
                Ok(buckets) => reading.push(Update::HistogramMinutes {
                    log: self.link.clone(),
                    minutes: self.accumulator.observe(at, buckets),
                }),
                Err(error) => {
                    tracing::warn!(%error, "latency histogram scrape failed");
                    reading.push(Update::Errors(ErrorKind::LatencyHistogramScrape, 1));
                }
            }
        }
        true
    }

    fn checkpoint(&self, _state: &AgentState) -> Option<SourceCheckpoint> {
        Some(SourceCheckpoint::LatencyHistogram(HistogramCheckpoint {
            key: self.key.clone(),
            accumulator: self.accumulator.clone(),
        }))
    }
}

#[cfg(test)]
mod tests;
