//! Where alerts go besides the agent's log: Alertmanager's v2 API and a
//! webhook, each on its own thread with a bounded queue and retries, so a
//! sink that is down never holds up reading logs or another sink.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc;
use std::time::Duration;

use crate::config::Endpoint;
use crate::http_client::HttpClient;
use crate::model::alerts::{Alert, DeliveryCounters, Notification};

/// Alertmanager API v2 alert.
fn alertmanager_body(alerts: &[Alert]) -> serde_json::Value {
    serde_json::Value::Array(
        alerts
            .iter()
            .map(|alert| {
                let mut body = serde_json::json!({
                    "labels": alert.labels,
                    "annotations": alert.annotations,
                    "startsAt": alert.fired_at.unwrap_or(alert.active_since).to_rfc3339(),
                    "generatorURL": "",
                });
                if let Some(resolved) = alert.resolved_at {
                    body["endsAt"] = serde_json::Value::String(resolved.to_rfc3339());
                }
                body
            })
            .collect(),
    )
}

fn post_json(client: &HttpClient, body: &serde_json::Value) -> Result<(), String> {
    let response = client
        .post()
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| client.describe("POST", e))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(client.status_error("POST", response.status()))
    }
}

/// How long one delivery attempt may take, TLS handshake included.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where alerts go, besides the agent's log.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    /// Alertmanager's base URL; alerts are posted to `/api/v2/alerts`.
    Alertmanager(Endpoint),
    Webhook(Endpoint),
}

impl Sink {
    fn name(&self) -> &'static str {
        match self {
            Sink::Alertmanager(_) => "alertmanager",
            Sink::Webhook(_) => "webhook",
        }
    }

    /// Alertmanager wants every re-send to keep the alert alive; a webhook
    /// only the transitions.
    fn wants(&self, notification: &Notification) -> bool {
        matches!(self, Sink::Alertmanager(_)) || !notification.repeat
    }

    fn endpoint(&self) -> &Endpoint {
        match self {
            Sink::Alertmanager(endpoint) | Sink::Webhook(endpoint) => endpoint,
        }
    }

    fn url(&self) -> String {
        match self {
            Sink::Alertmanager(base) => {
                format!("{}/api/v2/alerts", base.url.trim_end_matches('/'))
            }
            Sink::Webhook(endpoint) => endpoint.url.clone(),
        }
    }

    fn body(&self, alert: &Alert) -> serde_json::Value {
        match self {
            Sink::Alertmanager(_) => alertmanager_body(std::slice::from_ref(alert)),
            Sink::Webhook(_) => serde_json::to_value(alert).unwrap_or_default(),
        }
    }
}

/// A queued delivery.
struct Pending {
    body: serde_json::Value,
    attempts: u32,
}

const MAX_QUEUED_DELIVERIES: usize = 1000;
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Runs on its own thread, one per sink (so a sink that is down holds up no
/// other): delivers notifications in order, retrying a failed one with
/// exponential backoff (2 s to 60 s) until it succeeds, so a sink that was
/// down gets everything once it is back. The queue is bounded; past that the
/// oldest deliveries are dropped and counted.
pub fn sender_loop(
    sink: Sink,
    notifications: mpsc::Receiver<Notification>,
    counters: std::sync::Arc<std::sync::Mutex<DeliveryCounters>>,
) {
    let client = match HttpClient::new(&sink.url(), &sink.endpoint().client, DELIVERY_TIMEOUT) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(sink = sink.name(), %error, "alert sink not started");
            return;
        }
    };
    let mut queue: VecDeque<Pending> = VecDeque::new();
    // When the failed delivery at the front is due again. A deadline, not a
    // timeout: notifications arriving meanwhile (re-sends every
    // `resend_interval`) must not restart the backoff.
    let mut retry_at: Option<std::time::Instant> = None;
    let count = |map: fn(&mut DeliveryCounters) -> &mut BTreeMap<String, u64>| {
        let mut counters = counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *map(&mut counters)
            .entry(sink.name().to_string())
            .or_insert(0) += 1;
    };
    loop {
        let wait = match (queue.front(), retry_at) {
            (Some(_), Some(at)) => at.saturating_duration_since(std::time::Instant::now()),
            (Some(_), None) => Duration::ZERO,
            (None, _) => Duration::from_secs(3600),
        };
        match notifications.recv_timeout(wait) {
            Ok(notification) => {
                if sink.wants(&notification) {
                    queue.push_back(Pending {
                        body: sink.body(&notification.alert),
                        attempts: 0,
                    });
                }
                while queue.len() > MAX_QUEUED_DELIVERIES {
                    queue.pop_front();
                    count(|c| &mut c.dropped);
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) if queue.is_empty() => return,
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        while let Some(pending) = queue.front_mut() {
            match post_json(&client, &pending.body) {
                Ok(()) => {
                    count(|c| &mut c.delivered);
                    queue.pop_front();
                    retry_at = None;
                }
                Err(error) => {
                    pending.attempts += 1;
                    let backoff =
                        Duration::from_secs(1u64 << pending.attempts.min(6)).min(MAX_BACKOFF);
                    retry_at = Some(std::time::Instant::now() + backoff);
                    count(|c| &mut c.failed);
                    tracing::warn!(sink = sink.name(), %error, attempts = pending.attempts, "alert delivery failed; will retry");
                    break;
                }
            }
        }
    }
}
