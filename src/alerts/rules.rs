//! The Prometheus rule file for the agent's thresholds (`pausewatch rules`):
//! one source of truth for both engines, so that a threshold tuned in the
//! agent's configuration is the one Prometheus alerts on too.
//!
//! The file is `rules.yml` with `@name@` placeholders filled in. A template
//! rather than serialized structures keeps its comments, which are the
//! rules' documentation; `promtool check rules` parses the output (tests).

use std::time::Duration;

use crate::model::alerts::{AlertsConfig, CanaryRule, RuleKind};

const TEMPLATE: &str = include_str!("rules.yml");
/// The fleet alerts, each left out when its `[alerts.canary_*]` is disabled.
const CANARY_PAUSE_ALERT: &str = include_str!("canary_pause_alert.yml");
const CANARY_TAIL_ALERT: &str = include_str!("canary_tail_alert.yml");

/// A duration as PromQL writes it: `50ms`, `15m`, `1h30m`.
fn promql_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    out
}

/// A window in words for the annotations: `15 minutes`, `3 hours`.
fn words(d: Duration) -> String {
    let secs = d.as_secs();
    let (n, unit) = match secs {
        s if s > 0 && s % 3600 == 0 => (s / 3600, "hour"),
        s if s > 0 && s % 60 == 0 => (s / 60, "minute"),
        _ => return promql_duration(d),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// A PromQL filter, evaluated at a minute's start, that keeps the JVMs for
/// which that minute is a PauseRegression baseline minute: it had pauses and
/// lies past the run's `warmup`.
fn baseline_minute(warmup: Duration) -> String {
    format!(
        "last_over_time(pausewatch_gc_pauses_last_minute[59s]) > 0 and time() - pausewatch_jvm_start_time_seconds >= {}",
        warmup.as_secs_f64()
    )
}

/// Whole minutes that make up `d`, as the agent counts baseline minutes.
fn minutes_needed(d: Duration) -> String {
    d.as_secs().div_ceil(60).to_string()
}

fn percent(share: f64) -> String {
    format!("{}%", (share * 1000.0).round() / 10.0)
}

/// The placeholders of one fleet rule, `@{prefix}_window@` and the like.
fn canary_values(prefix: &str, rule: &CanaryRule) -> Vec<(String, String)> {
    [
        ("window", promql_duration(rule.window)),
        // The minutes that ended in the window: each figure is stamped with
        // its minute's start, a minute before the minute is over.
        (
            "range",
            promql_duration(rule.window + Duration::from_secs(60)),
        ),
        ("window_text", words(rule.window)),
        ("for", promql_duration(rule.for_duration)),
        ("for_text", words(rule.for_duration)),
        ("ratio", rule.ratio.to_string()),
        ("min", promql_duration(rule.floor)),
        ("min_s", rule.floor.as_secs_f64().to_string()),
        ("instances", rule.min_instances.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (format!("{prefix}_{name}"), value))
    .collect()
}

/// `template` with every `@name@` replaced by its value.
fn fill(template: &str, values: &[(String, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end = after.find('@').expect("a placeholder closes on its line");
        let name = &after[..end];
        let value = values
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("rules.yml: unknown placeholder @{name}@"));
        out.push_str(&value.1);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The rule file for `config`; `from` names the configuration file in its
/// header (`None`: the defaults). An `Err` says which threshold Prometheus
/// cannot express.
pub fn prometheus_rules(config: &AlertsConfig, from: Option<&str>) -> Result<String, String> {
    let t = &config.thresholds;
    let overhead_window = promql_duration(t.overhead_window);
    // The agent exports the paused share over these two windows only.
    if !["1m", "5m"].contains(&overhead_window.as_str()) {
        return Err(format!(
            "[alerts.gc_overhead] window = \"{overhead_window}\": the Prometheus rules read pausewatch_gc_overhead_ratio, exported for 1m and 5m only"
        ));
    }
    let seconds = |d: Duration| d.as_secs_f64().to_string();
    let for_duration = |kind: RuleKind| {
        (config.rules.iter())
            .find(|rule| rule.kind == kind)
            .map_or(kind.default_for(), |rule| rule.for_duration)
    };
    let mut values: Vec<(String, String)> = [
        (
            "config",
            from.map(|f| format!(" --config {f}")).unwrap_or_default(),
        ),
        ("max_pause", promql_duration(t.max_pause)),
        ("max_pause_s", seconds(t.max_pause)),
        ("regression_window", promql_duration(t.regression_window)),
        ("regression_window_text", words(t.regression_window)),
        (
            "regression_trailing",
            promql_duration(t.regression_trailing),
        ),
        ("regression_trailing_text", words(t.regression_trailing)),
        ("regression_ratio", t.regression_ratio.to_string()),
        (
            "regression_offset",
            promql_duration(t.regression_window + Duration::from_secs(60)),
        ),
        ("regression_warmup", promql_duration(t.regression_warmup)),
        ("regression_warmup_text", words(t.regression_warmup)),
        ("baseline_minute", baseline_minute(t.regression_warmup)),
        (
            "day_minutes",
            minutes_needed(t.regression_min_baseline.min(t.regression_window)),
        ),
        (
            "trailing_minutes",
            minutes_needed(t.regression_min_baseline.min(t.regression_trailing)),
        ),
        ("min_pause", promql_duration(t.regression_min_pause)),
        ("min_pause_s", seconds(t.regression_min_pause)),
        ("overhead_window", overhead_window),
        ("overhead_window_text", words(t.overhead_window)),
        ("overhead_ratio", t.overhead_ratio.to_string()),
        ("overhead_pct", percent(t.overhead_ratio)),
        ("gc_cpu_share", t.gc_cpu_share.to_string()),
        ("gc_cpu_pct", percent(t.gc_cpu_share)),
        ("heap_share", t.heap_share.to_string()),
        ("heap_pct", percent(t.heap_share)),
        ("tail_slo", promql_duration(t.tail_slo)),
        ("tail_slo_s", seconds(t.tail_slo)),
        ("tail_share", t.tail_affected_share.to_string()),
        ("tail_share_pct", percent(t.tail_affected_share)),
        (
            "tail_share_text",
            if t.tail_affected_share == 0.5 {
                "half".to_string()
            } else {
                percent(t.tail_affected_share)
            },
        ),
        ("ttsp_max", promql_duration(t.max_time_to_safepoint)),
        ("ttsp_max_s", seconds(t.max_time_to_safepoint)),
        ("stale_after", promql_duration(t.stale_after)),
        ("stale_after_s", seconds(t.stale_after)),
        (
            "mismatch_for",
            promql_duration(for_duration(RuleKind::LogCounterMismatch)),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value))
    .collect();
    values.extend(canary_values("canary_pause", &config.canary_pause));
    values.extend(canary_values("canary_tail", &config.canary_tail));
    let canary_alerts = [
        (&config.canary_pause, CANARY_PAUSE_ALERT),
        (&config.canary_tail, CANARY_TAIL_ALERT),
    ]
    .into_iter()
    .filter(|(rule, _)| rule.enabled)
    .map(|(_, alert)| format!("\n{}", fill(alert, &values).trim_end()))
    .collect::<Vec<_>>()
    .join("\n");
    // A group with no rules is valid YAML only as an empty list.
    let canary_alerts = if canary_alerts.is_empty() {
        " []".to_string()
    } else {
        canary_alerts
    };
    values.push(("canary_alerts".to_string(), canary_alerts));
    Ok(fill(TEMPLATE, &values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_promql_reads_them() {
        assert_eq!(promql_duration(Duration::from_millis(50)), "50ms");
        assert_eq!(promql_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(promql_duration(Duration::from_secs(600)), "10m");
        assert_eq!(words(Duration::from_secs(900)), "15 minutes");
        assert_eq!(words(Duration::from_secs(3600)), "1 hour");
        assert_eq!(percent(0.1), "10%");
    }
}
