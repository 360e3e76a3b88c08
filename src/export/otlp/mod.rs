//! OTLP export: the agent state pushed to an OpenTelemetry receiver, as the
//! [catalog](super::catalog) defines it, over gRPC or http/protobuf.
//!
//! Like `/metrics`, each export reads a [`Store::snapshot`](crate::store::Store::snapshot)
//! and walks the catalog, so both exporters always agree. The request is
//! built from the OpenTelemetry project's generated OTLP types: the SDK
//! cannot carry a histogram that is already aggregated, and the model's
//! histograms are. One request holds a resource per JVM (its log stream)
//! and one for the agent's own metrics.
//!
//! Delivery runs on a thread of its own and never touches the agent's loop.
//! A failed export is not queued: the next attempt (1 s later, doubling up
//! to 60 s) reads a newer snapshot, whose cumulative figures include
//! everything the failed one held; delta points are computed against what
//! the receiver last acknowledged, so they lose nothing either.
//!
//! With `pause_events`, each pause also goes out as a `jvm.gc.pause` log
//! record, from the bounded queue of recent pauses each JVM's state keeps
//! ([`RecentPauses`](crate::model::jvm::RecentPauses)): the exporter sends
//! those after the last one the receiver took.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::config::OtlpConfig;
use crate::store::{OtlpCounters, SharedStore};

mod request;
mod transport;

pub use request::{Export, Exporter, PauseRecords};
use transport::Transport;

/// Results of `pausewatch_otlp_exports_total`.
const RESULTS: [&str; 3] = ["success", "failure", "rejected"];
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A failing receiver is logged at once, then at most this often.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Starts the exporter's thread: an export every `interval`, retried with
/// backoff while the receiver fails.
pub fn spawn(
    config: OtlpConfig,
    store: SharedStore,
    build_version: &'static str,
) -> anyhow::Result<()> {
    let transport = Transport::new(&config)?;
    let counts = store.snapshot().otlp;
    let signals: &[&'static str] = if config.pause_events {
        &["metrics", "logs"]
    } else {
        &["metrics"]
    };
    let mut counters = counts.lock().unwrap_or_else(PoisonError::into_inner);
    for signal in signals {
        counters
            .exports
            .extend(RESULTS.map(|result| ((*signal, result), 0)));
    }
    drop(counters);
    let delivery = Delivery {
        exporter: Exporter::new(config, build_version),
        transport,
        store,
        counts,
    };
    std::thread::Builder::new()
        .name("otlp".to_string())
        .spawn(move || delivery.run())?;
    Ok(())
}

/// The exporter's thread: what it builds requests with and sends them by.
struct Delivery {
    exporter: Exporter,
    transport: Transport,
    store: SharedStore,
    counts: Arc<Mutex<OtlpCounters>>,
}

impl Delivery {
    fn run(mut self) {
        let mut failures = 0u32;
        let mut last_warning: Option<Instant> = None;
        loop {
            let wait = match failures {
                0 => self.exporter.config.interval,
                n => (MIN_BACKOFF * 2u32.saturating_pow(n - 1)).min(MAX_BACKOFF),
            };
            std::thread::sleep(wait);
            match self.export() {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(after = failures, "OTLP export succeeds again");
                    }
                    failures = 0;
                }
                Err(error) => {
                    failures += 1;
                    if last_warning.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                        tracing::warn!(%error, failures, "OTLP export failed; retrying with backoff");
                        last_warning = Some(Instant::now());
                    }
                }
            }
        }
    }

    /// One export of a fresh snapshot: the metrics, then the pause records.
    fn export(&mut self) -> Result<(), String> {
        let now = SystemTime::now();
        let state = self.store.snapshot();
        let metrics = self.exporter.build(&state, now);
        let records =
            (self.exporter.config.pause_events).then(|| self.exporter.pause_records(&state, now));
        drop(state);
        let sent = self.transport.send_metrics(metrics.request.clone());
        let metrics_sent = count(&self.counts, "metrics", sent);
        if metrics_sent.is_ok() {
            self.exporter.acknowledge(metrics);
        }
        let Some(records) = records else {
            return metrics_sent;
        };
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pause_records_dropped += records.dropped;
        if records.request.resource_logs.is_empty() {
            return metrics_sent;
        }
        let sent = self.transport.send_logs(records.request.clone());
        let records_sent = count(&self.counts, "logs", sent);
        if records_sent.is_ok() {
            records.delivered();
        }
        metrics_sent.and(records_sent)
    }
}

/// Counts an export's result; a partial rejection is logged but not retried
/// (the receiver refused those items: sending them again would not help).
fn count(
    counts: &Mutex<OtlpCounters>,
    signal: &'static str,
    sent: Result<i64, String>,
) -> Result<(), String> {
    let result = match &sent {
        Ok(0) => "success",
        Ok(_) => "rejected",
        Err(_) => "failure",
    };
    let mut counters = counts.lock().unwrap_or_else(PoisonError::into_inner);
    *counters.exports.entry((signal, result)).or_insert(0) += 1;
    match sent {
        Ok(0) => Ok(()),
        Ok(rejected) => {
            tracing::warn!(signal, rejected, "the OTLP receiver rejected some items");
            Ok(())
        }
        Err(error) => Err(error),
    }
}
