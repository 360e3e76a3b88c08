//! Alert data: the rules pausewatch knows and their thresholds, and the
//! alerts they produce. The engine in `crate::alerts` evaluates them; the
//! configuration builds them; exporters and the API show them.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::serialize_duration;

/// The rules pausewatch knows, with the alert name each fires as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    PauseBudget,
    PauseRegression,
    GcOverhead,
    GcCpu,
    HeapPressure,
    FullGc,
    EvacuationFailure,
    DegeneratedGc,
    AllocationStall,
    GcDrivenTail,
    TimeToSafepoint,
    StaleLog,
    LogCounterMismatch,
}

impl RuleKind {
    pub const ALL: [RuleKind; 13] = [
        RuleKind::PauseBudget,
        RuleKind::PauseRegression,
        RuleKind::GcOverhead,
        RuleKind::GcCpu,
        RuleKind::HeapPressure,
        RuleKind::FullGc,
        RuleKind::EvacuationFailure,
        RuleKind::DegeneratedGc,
        RuleKind::AllocationStall,
        RuleKind::GcDrivenTail,
        RuleKind::TimeToSafepoint,
        RuleKind::StaleLog,
        RuleKind::LogCounterMismatch,
    ];

    /// The `[alerts.<name>]` table name.
    pub fn config_name(self) -> &'static str {
        match self {
            RuleKind::PauseBudget => "pause_budget",
            RuleKind::PauseRegression => "pause_regression",
            RuleKind::GcOverhead => "gc_overhead",
            RuleKind::GcCpu => "gc_cpu",
            RuleKind::HeapPressure => "heap_pressure",
            RuleKind::FullGc => "full_gc",
            RuleKind::EvacuationFailure => "evacuation_failure",
            RuleKind::DegeneratedGc => "degenerated_gc",
            RuleKind::AllocationStall => "allocation_stall",
            RuleKind::GcDrivenTail => "gc_driven_tail",
            RuleKind::TimeToSafepoint => "time_to_safepoint",
            RuleKind::StaleLog => "stale_log",
            RuleKind::LogCounterMismatch => "log_counter_mismatch",
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
            RuleKind::GcCpu => "GcCpuHigh",
            RuleKind::HeapPressure => "HeapPressure",
            RuleKind::FullGc => "FullGc",
            RuleKind::EvacuationFailure => "EvacuationFailure",
            RuleKind::DegeneratedGc => "DegeneratedGc",
            RuleKind::AllocationStall => "AllocationStall",
            RuleKind::GcDrivenTail => "GcDrivenTail",
            RuleKind::TimeToSafepoint => "LongTimeToSafepoint",
            RuleKind::StaleLog => "StaleGcLog",
            RuleKind::LogCounterMismatch => "GcLogCounterMismatch",
        }
    }

    pub fn default_for(self) -> Duration {
        match self {
            RuleKind::HeapPressure => Duration::from_secs(300),
            // A collector busy for one minute (a burst of allocation) is
            // not yet a cost worth a page.
            RuleKind::GcCpu => Duration::from_secs(600),
            // A difference that lasts: one collection the log has not
            // flushed yet, or a sample between two counters, passes.
            RuleKind::LogCounterMismatch => Duration::from_secs(600),
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
    /// PauseRegression baselines leave out each JVM run's first
    /// `regression_warmup` (class loading, JIT, heap sizing pause longer),
    /// and need `regression_min_baseline` of minutes with pauses: a baseline
    /// of a few seconds says nothing.
    pub regression_warmup: Duration,
    pub regression_min_baseline: Duration,
    /// GcOverheadHigh: fraction of wall time paused over `overhead_window`.
    pub overhead_ratio: f64,
    pub overhead_window: Duration,
    /// GcCpuHigh: the collector's share of the process's CPU in a minute.
    pub gc_cpu_share: f64,
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
            regression_warmup: Duration::from_secs(300),
            regression_min_baseline: Duration::from_secs(1800),
            overhead_ratio: 0.1,
            overhead_window: Duration::from_secs(300),
            gc_cpu_share: 0.2,
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
    #[serde(serialize_with = "serialize_duration")]
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

/// A fleet rule of the shipped Prometheus rules (`CanaryPauseRegression`,
/// `CanaryTailRegression`): one instance's figure over `window` against the
/// median of the other instances of its service. Only Prometheus evaluates
/// it: one agent sees one instance, never its peers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CanaryRule {
    pub enabled: bool,
    #[serde(serialize_with = "serialize_duration")]
    pub window: Duration,
    #[serde(serialize_with = "serialize_duration")]
    pub for_duration: Duration,
    /// Factor on the others' median above which the instance regressed.
    pub ratio: f64,
    /// Below this the figure is never a regression (`min_pause`, `min_latency`).
    #[serde(serialize_with = "serialize_duration")]
    pub floor: Duration,
    /// Services with fewer instances have no fleet to compare with.
    pub min_instances: u32,
}

impl Default for CanaryRule {
    /// A day-long release compared on 5-minute windows: 30 minutes of a
    /// 1.5-fold difference is no restart's warm-up.
    fn default() -> Self {
        CanaryRule {
            enabled: true,
            window: Duration::from_secs(300),
            for_duration: Duration::from_secs(1800),
            ratio: 1.5,
            floor: Duration::from_millis(10),
            min_instances: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertsConfig {
    #[serde(serialize_with = "serialize_duration")]
    pub evaluation_interval: Duration,
    /// Alertmanager forgets an alert not re-sent within its resolve timeout.
    #[serde(serialize_with = "serialize_duration")]
    pub resend_interval: Duration,
    /// Labels on every alert (`team`, `env`).
    pub labels: BTreeMap<String, String>,
    pub thresholds: Thresholds,
    pub rules: Vec<RuleSettings>,
    /// `[alerts.canary_pause]`: the longest pause against the fleet's.
    pub canary_pause: CanaryRule,
    /// `[alerts.canary_tail]`: the p99.9 latency against the fleet's.
    pub canary_tail: CanaryRule,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            evaluation_interval: Duration::from_secs(60),
            resend_interval: Duration::from_secs(60),
            labels: BTreeMap::new(),
            thresholds: Thresholds::default(),
            rules: RuleKind::ALL
                .into_iter()
                .map(RuleSettings::defaults)
                .collect(),
            canary_pause: CanaryRule::default(),
            canary_tail: CanaryRule::default(),
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

/// Delivery counters, by sink and result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryCounters {
    pub delivered: BTreeMap<String, u64>,
    pub failed: BTreeMap<String, u64>,
    pub dropped: BTreeMap<String, u64>,
}
