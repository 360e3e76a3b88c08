//! The alert engine: rules evaluated every minute over each JVM's minute
//! windows, with Prometheus-style lifecycle (pending until `for` has elapsed,
//! firing, resolved) and delivery to Alertmanager, a webhook and the log.
//!
//! Evaluation never blocks tailing: it reads a snapshot of the store, and
//! deliveries go through a queue to a sender thread per sink ([`sinks`])
//! that retries with backoff.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::alerts::{
    Alert, AlertState, AlertsConfig, Notification, RegressionStatistic, RuleKind, Thresholds,
};
use crate::model::histogram::Histogram;
use crate::model::minutes::{last_complete_minute, Minute};
use crate::store::{AgentState, PauseSource, StreamId, StreamState};

pub mod rules;
pub mod sinks;

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

/// The regression statistic of the pauses in `[end - window, end)`.
fn window_statistic(
    stream: &StreamState,
    end: DateTime<Utc>,
    window: Duration,
    statistic: RegressionStatistic,
) -> Option<f64> {
    let minutes: Vec<Cow<Minute>> = stream.jvm.minutes.window_ending(end, window).collect();
    match statistic {
        RegressionStatistic::P99 => p99(&minutes),
        RegressionStatistic::Max => minutes
            .iter()
            .filter(|m| m.pause_count > 0)
            .map(|m| m.pause_max_seconds)
            .reduce(f64::max),
    }
}

fn p99(minutes: &[Cow<Minute>]) -> Option<f64> {
    let mut merged = Histogram::default();
    for minute in minutes {
        merged.merge(&minute.pause_histogram);
    }
    merged.quantile(0.99)
}

/// Quantile `q` of `values` as PromQL's `quantile_over_time` computes it
/// (linear between the closest ranks), so both engines agree.
fn quantile(q: f64, values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let rank = q * (values.len().checked_sub(1)? as f64);
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    Some(values[low] + (values[high] - values[low]) * (rank - low as f64))
}

/// The baseline of `[end - window, end)`: only minutes with pauses outside a
/// JVM run's warm-up count, and there must be `min_baseline` of them (all of
/// a shorter window). For
/// `max`, the p90 of those minutes' maxima: one long pause is not the norm.
fn baseline_statistic(
    stream: &StreamState,
    end: DateTime<Utc>,
    window: Duration,
    thresholds: &Thresholds,
) -> Option<f64> {
    let warmup = TimeDelta::from_std(thresholds.regression_warmup).unwrap_or_default();
    let in_warmup = |minute: &Minute| {
        let minute_end = minute.start + TimeDelta::minutes(1);
        stream
            .jvm
            .run_starts
            .iter()
            .any(|&start| minute.start.max(start) < minute_end.min(start + warmup))
    };
    let minutes: Vec<Cow<Minute>> = stream
        .jvm
        .minutes
        .window_ending(end, window)
        .filter(|m| m.pause_count > 0 && !in_warmup(m))
        .collect();
    // A window shorter than `min_baseline` (the day-old one) must be full.
    let needed = thresholds.regression_min_baseline.min(window);
    if (minutes.len() as u64) * 60 < needed.as_secs() {
        return None;
    }
    match thresholds.regression_statistic {
        RegressionStatistic::P99 => p99(&minutes),
        RegressionStatistic::Max => {
            let mut maxima: Vec<f64> = minutes.iter().map(|m| m.pause_max_seconds).collect();
            quantile(BASELINE_QUANTILE, &mut maxima)
        }
    }
}

/// Which quantile of the baseline minutes' maxima stands for their norm.
const BASELINE_QUANTILE: f64 = 0.9;

/// Evaluates one rule for one stream at `now`.
pub fn evaluate(
    kind: RuleKind,
    thresholds: &Thresholds,
    stream: &StreamState,
    now: DateTime<Utc>,
) -> Finding {
    let last = last_complete_minute(now);
    let minute = stream.jvm.minutes.get(last);
    let minute = minute.as_deref();
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
            // A lower bound over budget is over budget; the summary says the
            // longest pause may have been longer than the figure.
            let lower_bound = minute.is_some_and(|m| m.pause_max_lower_bound);
            Finding {
                active: max > seconds(thresholds.max_pause),
                value: max,
                summary: format!(
                    "longest GC pause {}{} in the minute from {}, budget {}",
                    if lower_bound { "at least " } else { "" },
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
            let day_ago = baseline_statistic(stream, end - TimeDelta::days(1), window, thresholds);
            let window_start = end - TimeDelta::from_std(window).unwrap_or_default();
            let trailing = baseline_statistic(
                stream,
                window_start,
                thresholds.regression_trailing,
                thresholds,
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
        RuleKind::GcCpu => {
            // Of the process's CPU where it is read (discovered), else of the
            // CPUs available (a configured Go trace: GCCPUFraction's measure).
            let Some((share, of)) = minute.and_then(|m| {
                let process = m.gc_cpu_of_process.map(|s| (s, "the process's CPU"));
                process.or_else(|| m.gc_cpu_of_available.map(|s| (s, "the CPUs available")))
            }) else {
                return inactive(0.0);
            };
            Finding {
                active: share > thresholds.gc_cpu_share,
                value: share,
                summary: format!(
                    "the collector used {:.0} % of {of} in the minute from {}",
                    share * 100.0,
                    last.format("%H:%M UTC")
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
            // Either rule: stopped, or queued behind a stop's backlog.
            let share = if attribution.slow_requests == 0 {
                0.0
            } else {
                attribution.slow_requests_gc_driven as f64 / attribution.slow_requests as f64
            };
            let (p999, slo) = (latency.latency.p999_seconds, seconds(thresholds.tail_slo));
            // Also the text of a resolved alert: it says how the tail is now.
            let summary = match p999 > slo {
                true => format!(
                    "p99.9 {} above the {} SLO, {:.0} % of slow requests were stopped by GC or safepoints or queued behind them",
                    ms(p999),
                    ms(slo),
                    share * 100.0
                ),
                false => format!("p99.9 {} within the {} SLO", ms(p999), ms(slo)),
            };
            Finding {
                active: p999 > slo && share > thresholds.tail_affected_share,
                value: p999,
                summary,
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
        RuleKind::LogCounterMismatch => {
            let mismatches = stream.runtime.iter().flat_map(|r| &r.log_counter_mismatch);
            let Some((gc, difference)) = mismatches.max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            else {
                return inactive(0.0);
            };
            // The input that disagrees with the counter: its GC log, or
            // what measures a JVM without one.
            let pause_source = stream.discovered.as_ref().map(|d| d.pause_source);
            let (source, why) = match pause_source {
                Some(PauseSource::Ebpf) => (
                    "the eBPF probes have",
                    "records were lost, or a JDK's probes count its collections otherwise",
                ),
                _ => (
                    "the GC log has",
                    "the agent misses part of the log, or the parser has a gap",
                ),
            };
            Finding {
                active: *difference != 0.0,
                value: *difference,
                summary: format!(
                    "{source} {} {} pauses of {gc} than the JVM's own counter: {why}",
                    difference.abs(),
                    if *difference < 0.0 { "fewer" } else { "more" }
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

/// What a resolved notification says: that it resolved, with the figure now.
fn resolved_summary(finding: &Finding) -> String {
    if finding.summary.is_empty() {
        "resolved".to_string()
    } else {
        format!("resolved: {}", finding.summary)
    }
}

/// Alert states, keyed by (alertname, stream): not by the `log` label,
/// which every discovered JVM without a GC log has empty.
#[derive(Debug, Default)]
pub struct AlertEngine {
    alerts: BTreeMap<(String, StreamId), Alert>,
    last_sent: BTreeMap<(String, StreamId), DateTime<Utc>>,
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
            for (id, stream) in state.streams.iter().filter(|(_, s)| !s.exited) {
                let finding = evaluate(rule.kind, &config.thresholds, stream, now);
                // A log that cannot be read (or does not exist yet: a JVM
                // that has not started) is given `after` too before it fires.
                let for_duration = if rule.kind == RuleKind::StaleLog && !stream.readable {
                    rule.for_duration.max(config.thresholds.stale_after)
                } else {
                    rule.for_duration
                };
                let key = (rule.kind.alertname().to_string(), *id);
                let mut labels = config.labels.clone();
                labels.extend(stream.labels.clone());
                labels.extend(rule.labels.clone());
                labels.insert("alertname".to_string(), rule.kind.alertname().to_string());
                labels.insert("log".to_string(), stream.log.clone());
                // Which engine fired it, so that Alertmanager never takes the
                // agent's alert and the Prometheus rule's for one another.
                labels.insert("source".to_string(), "agent".to_string());
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
                        if for_duration.is_zero() {
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
                        if alert.state == AlertState::Pending && held >= for_duration {
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
                            // The firing text would say the problem is still there.
                            alert.value = finding.value;
                            if !rule.annotations.contains_key("summary") {
                                alert
                                    .annotations
                                    .insert("summary".to_string(), resolved_summary(&finding));
                            }
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
        self.resolve_gone(state, now, &mut notifications);
        notifications
    }

    /// Resolves the alerts of streams whose series went (a JVM that exited
    /// and whose grace passed: its stream is exited, or gone), as Prometheus
    /// resolves an alert whose series vanished; pending ones are dropped.
    /// They were never evaluated again, so they fired until the history
    /// dropped the stream's minutes, a day later.
    fn resolve_gone(
        &mut self,
        state: &AgentState,
        now: DateTime<Utc>,
        notifications: &mut Vec<Notification>,
    ) {
        let live = |id: &StreamId| state.streams.get(id).is_some_and(|s| !s.exited);
        let gone: Vec<(String, StreamId)> = (self.alerts.keys())
            .filter(|(_, id)| !live(id))
            .cloned()
            .collect();
        for key in gone {
            let Some(alert) = self.alerts.get_mut(&key) else {
                continue;
            };
            if alert.state != AlertState::Firing {
                self.alerts.remove(&key);
                continue;
            }
            alert.state = AlertState::Resolved;
            alert.resolved_at = Some(now);
            alert.annotations.insert(
                "summary".to_string(),
                "resolved: its JVM has exited".to_string(),
            );
            notifications.push(Notification {
                alert: alert.clone(),
                repeat: false,
            });
            self.last_sent.remove(&key);
        }
    }

    /// Current alerts (pending, firing, and those resolved at the last evaluation).
    pub fn alerts(&self) -> Vec<Alert> {
        self.alerts.values().cloned().collect()
    }
}
