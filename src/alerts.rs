//! The alert engine: rules evaluated every minute over each JVM's minute
//! windows, with Prometheus-style lifecycle (pending until `for` has elapsed,
//! firing, resolved) and delivery to Alertmanager, a webhook and the log.
//!
//! Evaluation never blocks tailing: it reads the shared state under the lock
//! for a moment, and deliveries go through a queue to a sender thread that
//! retries with backoff.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::jvm::Histogram;
use crate::state::{AgentState, StreamState};
use crate::windows::last_complete_minute;

/// The rules pausewatch knows, with the alert name each fires as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    PauseBudget,
    PauseRegression,
    GcOverhead,
    HeapPressure,
    FullGc,
    EvacuationFailure,
    DegeneratedGc,
    AllocationStall,
    GcDrivenTail,
    TimeToSafepoint,
    StaleLog,
}

impl RuleKind {
    pub const ALL: [RuleKind; 11] = [
        RuleKind::PauseBudget,
        RuleKind::PauseRegression,
        RuleKind::GcOverhead,
        RuleKind::HeapPressure,
        RuleKind::FullGc,
        RuleKind::EvacuationFailure,
        RuleKind::DegeneratedGc,
        RuleKind::AllocationStall,
        RuleKind::GcDrivenTail,
        RuleKind::TimeToSafepoint,
        RuleKind::StaleLog,
    ];

    /// The `[alerts.<name>]` table name.
    pub fn config_name(self) -> &'static str {
        match self {
            RuleKind::PauseBudget => "pause_budget",
            RuleKind::PauseRegression => "pause_regression",
            RuleKind::GcOverhead => "gc_overhead",
            RuleKind::HeapPressure => "heap_pressure",
            RuleKind::FullGc => "full_gc",
            RuleKind::EvacuationFailure => "evacuation_failure",
            RuleKind::DegeneratedGc => "degenerated_gc",
            RuleKind::AllocationStall => "allocation_stall",
            RuleKind::GcDrivenTail => "gc_driven_tail",
            RuleKind::TimeToSafepoint => "time_to_safepoint",
            RuleKind::StaleLog => "stale_log",
        }
    }

    pub fn from_config_name(name: &str) -> Option<RuleKind> {
        RuleKind::ALL
            .into_iter()
            .find(|kind| kind.config_name() == name)
    }

    /// The `alertname` label, as the Prometheus rules in dashboards/ name it too.
    pub fn alertname(self) -> &'static str {
        match self {
            RuleKind::PauseBudget => "PauseBudgetExceeded",
            RuleKind::PauseRegression => "PauseRegression",
            RuleKind::GcOverhead => "GcOverheadHigh",
            RuleKind::HeapPressure => "HeapPressure",
            RuleKind::FullGc => "FullGc",
            RuleKind::EvacuationFailure => "EvacuationFailure",
            RuleKind::DegeneratedGc => "DegeneratedGc",
            RuleKind::AllocationStall => "AllocationStall",
            RuleKind::GcDrivenTail => "GcDrivenTail",
            RuleKind::TimeToSafepoint => "LongTimeToSafepoint",
            RuleKind::StaleLog => "StaleGcLog",
        }
    }

    fn default_for(self) -> Duration {
        match self {
            RuleKind::HeapPressure => Duration::from_secs(300),
            _ => Duration::ZERO,
        }
    }
}

/// Which pause statistic the regression rule compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionStatistic {
    P99,
    Max,
}

/// Thresholds of every rule, with the defaults a JVM service owner would pick.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    /// PauseBudgetExceeded: longest acceptable pause in a minute (the callers' timeout).
    pub max_pause: Duration,
    /// PauseRegression: recent window, ratio over the baseline, statistic,
    /// trailing window used when there is no day-old data, optional pinned
    /// baseline, and a floor below which a regression does not matter.
    pub regression_window: Duration,
    pub regression_ratio: f64,
    pub regression_statistic: RegressionStatistic,
    pub regression_trailing: Duration,
    pub regression_pinned: Option<Duration>,
    pub regression_min_pause: Duration,
    /// GcOverheadHigh: fraction of wall time paused over `overhead_window`.
    pub overhead_ratio: f64,
    pub overhead_window: Duration,
    /// HeapPressure: live data after GC as a share of the max heap.
    pub heap_share: f64,
    /// GcDrivenTail: the p99.9 SLO, and the share of slow requests that must be stop-affected.
    pub tail_slo: Duration,
    pub tail_affected_share: f64,
    /// LongTimeToSafepoint.
    pub max_time_to_safepoint: Duration,
    /// StaleGcLog: silence after which a followed log is stale.
    pub stale_after: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            max_pause: Duration::from_millis(50),
            regression_window: Duration::from_secs(15 * 60),
            regression_ratio: 1.5,
            regression_statistic: RegressionStatistic::P99,
            regression_trailing: Duration::from_secs(3 * 3600),
            regression_pinned: None,
            regression_min_pause: Duration::from_millis(10),
            overhead_ratio: 0.1,
            overhead_window: Duration::from_secs(300),
            heap_share: 0.9,
            tail_slo: Duration::from_millis(50),
            tail_affected_share: 0.5,
            max_time_to_safepoint: Duration::from_millis(100),
            stale_after: Duration::from_secs(600),
        }
    }
}

/// One rule's switches: enabled, `for`, extra labels and annotations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleSettings {
    pub kind: RuleKind,
    pub enabled: bool,
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub for_duration: Duration,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl RuleSettings {
    pub fn defaults(kind: RuleKind) -> RuleSettings {
        RuleSettings {
            kind,
            enabled: true,
            for_duration: kind.default_for(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertsConfig {
    pub alertmanager_url: Option<String>,
    pub webhook_url: Option<String>,
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub evaluation_interval: Duration,
    /// Alertmanager forgets an alert not re-sent within its resolve timeout.
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub resend_interval: Duration,
    /// Labels on every alert (`team`, `env`).
    pub labels: BTreeMap<String, String>,
    pub thresholds: Thresholds,
    pub rules: Vec<RuleSettings>,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            alertmanager_url: None,
            webhook_url: None,
            evaluation_interval: Duration::from_secs(60),
            resend_interval: Duration::from_secs(60),
            labels: BTreeMap::new(),
            thresholds: Thresholds::default(),
            rules: RuleKind::ALL
                .into_iter()
                .map(RuleSettings::defaults)
                .collect(),
        }
    }
}

/// What a rule found for one stream at one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub active: bool,
    /// The figure compared with the threshold (seconds, ratio, count).
    pub value: f64,
    pub summary: String,
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn ms(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1000.0)
}

fn window_statistic(
    stream: &StreamState,
    end: DateTime<Utc>,
    window: Duration,
    statistic: RegressionStatistic,
) -> Option<f64> {
    let mut merged = Histogram::default();
    let mut max: Option<f64> = None;
    for minute in stream.jvm.minutes.window_ending(end, window) {
        merged.merge(&minute.pause_histogram);
        if minute.pause_count > 0 {
            max = Some(max.unwrap_or(0.0).max(minute.pause_max_seconds));
        }
    }
    match statistic {
        RegressionStatistic::P99 => merged.quantile(0.99),
        RegressionStatistic::Max => max,
    }
}

/// Evaluates one rule for one stream at `now`.
pub fn evaluate(
    kind: RuleKind,
    thresholds: &Thresholds,
    stream: &StreamState,
    now: DateTime<Utc>,
) -> Finding {
    let last = last_complete_minute(now);
    let minute = stream.jvm.minutes.get(last);
    let inactive = |value: f64| Finding {
        active: false,
        value,
        summary: String::new(),
    };
    let count_rule = |count: u64, what: &str| Finding {
        active: count > 0,
        value: count as f64,
        summary: format!(
            "{count} {what} in the minute from {}",
            last.format("%H:%M UTC")
        ),
    };
    match kind {
        RuleKind::PauseBudget => {
            let max = minute.map_or(0.0, |m| m.pause_max_seconds);
            Finding {
                active: max > seconds(thresholds.max_pause),
                value: max,
                summary: format!(
                    "longest GC pause {} in the minute from {}, budget {}",
                    ms(max),
                    last.format("%H:%M UTC"),
                    ms(seconds(thresholds.max_pause))
                ),
            }
        }
        RuleKind::PauseRegression => {
            let end = last + TimeDelta::minutes(1);
            let window = thresholds.regression_window;
            let statistic = thresholds.regression_statistic;
            let Some(recent) = window_statistic(stream, end, window, statistic) else {
                return inactive(0.0);
            };
            let day_ago = window_statistic(stream, end - TimeDelta::days(1), window, statistic);
            let window_start = end - TimeDelta::from_std(window).unwrap_or_default();
            let trailing = window_statistic(
                stream,
                window_start,
                thresholds.regression_trailing,
                statistic,
            );
            let (baseline, source) = match (thresholds.regression_pinned, day_ago, trailing) {
                (Some(pinned), _, _) => (seconds(pinned), "pinned"),
                (None, Some(day), _) => (day, "the same window a day earlier"),
                (None, None, Some(trailing)) => (trailing, "the trailing hours"),
                (None, None, None) => return inactive(recent),
            };
            let floor = seconds(thresholds.regression_min_pause);
            Finding {
                active: recent > floor && recent > baseline * thresholds.regression_ratio,
                value: recent,
                summary: format!(
                    "{} pause over the last {} is {}, baseline {} ({source})",
                    match statistic {
                        RegressionStatistic::P99 => "p99",
                        RegressionStatistic::Max => "max",
                    },
                    humantime::format_duration(window),
                    ms(recent),
                    ms(baseline)
                ),
            }
        }
        RuleKind::GcOverhead => {
            let window = thresholds.overhead_window;
            let ratio = stream.jvm.minutes.paused_share(now, window);
            Finding {
                active: ratio > thresholds.overhead_ratio,
                value: ratio,
                summary: format!(
                    "GC pauses took {:.1} % of wall time over the last {}",
                    ratio * 100.0,
                    humantime::format_duration(window)
                ),
            }
        }
        RuleKind::HeapPressure => {
            let heap = &stream.jvm.heap;
            let (Some(live), Some(max)) = (
                heap.live_data_bytes,
                heap.max_bytes.or(heap.committed_bytes),
            ) else {
                return inactive(0.0);
            };
            let share = live as f64 / max.max(1) as f64;
            Finding {
                active: share > thresholds.heap_share,
                value: share,
                summary: format!(
                    "live data after GC is {:.0} % of the max heap ({} of {} MiB)",
                    share * 100.0,
                    live >> 20,
                    max >> 20
                ),
            }
        }
        RuleKind::FullGc => count_rule(minute.map_or(0, |m| m.full_gcs), "full GCs"),
        RuleKind::EvacuationFailure => count_rule(
            minute.map_or(0, |m| m.evacuation_failures),
            "evacuation failures",
        ),
        RuleKind::DegeneratedGc => {
            count_rule(minute.map_or(0, |m| m.degenerated_gcs), "degenerated GCs")
        }
        RuleKind::AllocationStall => count_rule(
            minute.map_or(0, |m| m.allocation_stalls),
            "allocation stalls",
        ),
        RuleKind::GcDrivenTail => {
            // The newest attributed minute, if it is the last complete one or,
            // while that one waits for late requests (`finalize_after`), the
            // one before: an older minute says nothing about now.
            let recent = last - TimeDelta::minutes(1);
            let Some(latency) = stream
                .latency
                .as_ref()
                .and_then(|l| l.last_minute())
                .filter(|m| m.start >= recent)
            else {
                return inactive(0.0);
            };
            let Some(attribution) = latency.attribution else {
                return inactive(0.0);
            };
            let share = if attribution.slow_requests == 0 {
                0.0
            } else {
                attribution.slow_requests_stop_affected as f64 / attribution.slow_requests as f64
            };
            let p999 = latency.latency.p999_seconds;
            Finding {
                active: p999 > seconds(thresholds.tail_slo) && share > thresholds.tail_affected_share,
                value: p999,
                summary: format!(
                    "p99.9 {} above the {} SLO, {:.0} % of slow requests were stopped by GC or safepoints",
                    ms(p999),
                    ms(seconds(thresholds.tail_slo)),
                    share * 100.0
                ),
            }
        }
        RuleKind::TimeToSafepoint => {
            let ttsp = minute.map_or(0.0, |m| m.time_to_safepoint_max_seconds);
            Finding {
                active: ttsp > seconds(thresholds.max_time_to_safepoint),
                value: ttsp,
                summary: format!(
                    "time to safepoint reached {} in the minute from {}",
                    ms(ttsp),
                    last.format("%H:%M UTC")
                ),
            }
        }
        RuleKind::StaleLog => {
            let silent_for = stream.last_event_processed_at.map_or(f64::INFINITY, |at| {
                (now - at).num_milliseconds() as f64 / 1000.0
            });
            let stale = silent_for > seconds(thresholds.stale_after) || !stream.readable;
            Finding {
                active: stale && (stream.last_event_processed_at.is_some() || !stream.readable),
                value: if silent_for.is_finite() {
                    silent_for
                } else {
                    0.0
                },
                summary: if stream.readable {
                    format!(
                        "no GC event for {}",
                        humantime::format_duration(Duration::from_secs(silent_for.max(0.0) as u64))
                    )
                } else {
                    "the GC log cannot be read".to_string()
                },
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    Pending,
    Firing,
    Resolved,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
        }
    }
}

/// One alert instance: a rule for a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub alertname: String,
    pub state: AlertState,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub value: f64,
    /// When the condition first held (start of pending).
    pub active_since: DateTime<Utc>,
    pub fired_at: Option<DateTime<Utc>>,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// A message for the sinks.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub alert: Alert,
    /// Only Alertmanager wants repeats; the webhook and the log get transitions.
    pub repeat: bool,
}

/// Alert states, keyed by (alertname, log).
#[derive(Debug, Default)]
pub struct AlertEngine {
    alerts: BTreeMap<(String, String), Alert>,
    last_sent: BTreeMap<(String, String), DateTime<Utc>>,
}

impl AlertEngine {
    /// Evaluates every enabled rule for every stream; returns what to deliver.
    pub fn evaluate(
        &mut self,
        config: &AlertsConfig,
        state: &AgentState,
        now: DateTime<Utc>,
    ) -> Vec<Notification> {
        let mut notifications = Vec::new();
        // A resolved alert is shown once, then forgotten.
        self.alerts
            .retain(|_, alert| alert.state != AlertState::Resolved);
        for rule in config.rules.iter().filter(|r| r.enabled) {
            for stream in &state.streams {
                let finding = evaluate(rule.kind, &config.thresholds, stream, now);
                let key = (rule.kind.alertname().to_string(), stream.log.clone());
                let mut labels = config.labels.clone();
                labels.extend(stream.labels.clone());
                labels.extend(rule.labels.clone());
                labels.insert("alertname".to_string(), rule.kind.alertname().to_string());
                labels.insert("log".to_string(), stream.log.clone());
                labels
                    .entry("severity".to_string())
                    .or_insert_with(|| "warning".to_string());
                let mut annotations = rule.annotations.clone();
                annotations
                    .entry("summary".to_string())
                    .or_insert(finding.summary.clone());
                match (self.alerts.get_mut(&key), finding.active) {
                    (None, false) => {}
                    (None, true) => {
                        let mut alert = Alert {
                            alertname: key.0.clone(),
                            state: AlertState::Pending,
                            labels,
                            annotations,
                            value: finding.value,
                            active_since: now,
                            fired_at: None,
                            resolved_at: None,
                        };
                        if rule.for_duration.is_zero() {
                            alert.state = AlertState::Firing;
                            alert.fired_at = Some(now);
                            notifications.push(Notification {
                                alert: alert.clone(),
                                repeat: false,
                            });
                            self.last_sent.insert(key.clone(), now);
                        }
                        self.alerts.insert(key, alert);
                    }
                    (Some(alert), true) => {
                        alert.value = finding.value;
                        alert.annotations = annotations;
                        let held = (now - alert.active_since).to_std().unwrap_or_default();
                        if alert.state == AlertState::Pending && held >= rule.for_duration {
                            alert.state = AlertState::Firing;
                            alert.fired_at = Some(now);
                            notifications.push(Notification {
                                alert: alert.clone(),
                                repeat: false,
                            });
                            self.last_sent.insert(key, now);
                        } else if alert.state == AlertState::Firing {
                            let due = self.last_sent.get(&key).is_none_or(|sent| {
                                (now - *sent).to_std().unwrap_or_default() >= config.resend_interval
                            });
                            if due {
                                notifications.push(Notification {
                                    alert: alert.clone(),
                                    repeat: true,
                                });
                                self.last_sent.insert(key, now);
                            }
                        }
                    }
                    (Some(alert), false) => {
                        if alert.state == AlertState::Firing {
                            alert.state = AlertState::Resolved;
                            alert.resolved_at = Some(now);
                            notifications.push(Notification {
                                alert: alert.clone(),
                                repeat: false,
                            });
                            self.last_sent.remove(&key);
                        } else {
                            // Pending that never fired: nobody was told, nothing to resolve.
                            self.alerts.remove(&key);
                        }
                    }
                }
            }
        }
        notifications
    }

    /// Current alerts (pending, firing, and those resolved at the last evaluation).
    pub fn alerts(&self) -> Vec<Alert> {
        self.alerts.values().cloned().collect()
    }
}

/// Delivery counters, by sink and result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryCounters {
    pub delivered: BTreeMap<String, u64>,
    pub failed: BTreeMap<String, u64>,
    pub dropped: BTreeMap<String, u64>,
}

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

fn post_json(url: &str, body: &serde_json::Value) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .proxy(None)
        .user_agent(concat!("pausewatch/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| format!("POST {url}: {e}"))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("POST {url}: HTTP {}", response.status()))
    }
}

/// Where alerts go, besides the agent's log.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    /// Alertmanager's base URL; alerts are posted to `/api/v2/alerts`.
    Alertmanager(String),
    Webhook(String),
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

    fn url(&self) -> String {
        match self {
            Sink::Alertmanager(base) => format!("{}/api/v2/alerts", base.trim_end_matches('/')),
            Sink::Webhook(url) => url.clone(),
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
    let url = sink.url();
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
            match post_json(&url, &pending.body) {
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
