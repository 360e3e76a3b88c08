//! `[alerts]` and `[alerts.<rule>]`: sinks, labels and per-rule thresholds.
//!
//! Read as a plain table rather than a struct: the rule names come from
//! [`RuleKind`], so an unknown one can be answered with the list of known ones.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::{Spanned, Value};

use super::http_client::Endpoint;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::{label_problem, values, LabelUse};
use crate::model::alerts::{
    AlertsConfig, CanaryRule, RegressionStatistic, RuleKind, RuleSettings, Thresholds,
};

/// The fleet rules' tables: Prometheus-only, so not [`RuleKind`]s.
const CANARY_RULES: [&str; 2] = ["canary_pause", "canary_tail"];

/// The `[alerts]` table, each key with its span.
pub(super) type RawAlerts = BTreeMap<Spanned<String>, Spanned<Value>>;

/// The alert sinks: `alertmanager_url` and `webhook_url`, each with the
/// connection settings of its own table (`[alerts.alertmanager]`,
/// `[alerts.webhook]`; not under the URL keys, which stay plain strings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertSinks {
    pub alertmanager: Option<Endpoint>,
    pub webhook: Option<Endpoint>,
}

/// A sink's URL and its settings table, as found in `[alerts]`.
#[derive(Default)]
struct RawSink<'a> {
    url: Option<String>,
    settings: Option<(&'a Spanned<String>, &'a Spanned<Value>)>,
}

impl Ctx<'_> {
    pub(super) fn alerts(
        &self,
        raw: &RawAlerts,
        alerts: &mut AlertsConfig,
    ) -> Result<AlertSinks, ConfigError> {
        let mut alertmanager = RawSink::default();
        let mut webhook = RawSink::default();
        for (name, value) in raw {
            let path = [key("alerts"), Seg::Key(name.get_ref().clone())];
            match name.get_ref().as_str() {
                "alertmanager_url" => {
                    alertmanager.url = Some(self.value(value, &path, values::outgoing_url)?)
                }
                "webhook_url" => {
                    webhook.url = Some(self.value(value, &path, values::outgoing_url)?)
                }
                "alertmanager" => alertmanager.settings = Some((name, value)),
                "webhook" => webhook.settings = Some((name, value)),
                "evaluation_interval" => {
                    alerts.evaluation_interval =
                        self.value(value, &path, values::positive_duration)?
                }
                "resend_interval" => {
                    alerts.resend_interval = self.value(value, &path, values::positive_duration)?
                }
                "labels" => alerts.labels = self.label_table(value, &path)?,
                "canary_pause" => {
                    self.canary(value, &path, "min_pause", &mut alerts.canary_pause)?
                }
                "canary_tail" => {
                    self.canary(value, &path, "min_latency", &mut alerts.canary_tail)?
                }
                rule_name => {
                    let Some(kind) = RuleKind::from_config_name(rule_name) else {
                        let known: Vec<&str> = (RuleKind::ALL.iter().map(|k| k.config_name()))
                            .chain(CANARY_RULES)
                            .collect();
                        return Err(self.err(
                            name.span(),
                            &path,
                            format!(
                                "unknown key; expected alertmanager_url, webhook_url, alertmanager, webhook, evaluation_interval, resend_interval, labels or a rule: {}",
                                known.join(", ")
                            ),
                        ));
                    };
                    let Value::Table(table) = value.get_ref() else {
                        return Err(self.type_err(value, &path, "a table of rule settings"));
                    };
                    let settings = alerts
                        .rules
                        .iter_mut()
                        .find(|r| r.kind == kind)
                        .expect("every rule has settings");
                    self.rule(
                        kind,
                        table,
                        &path,
                        name.span(),
                        settings,
                        &mut alerts.thresholds,
                    )?;
                }
            }
        }
        Ok(AlertSinks {
            alertmanager: self.sink(alertmanager, "alertmanager_url")?,
            webhook: self.sink(webhook, "webhook_url")?,
        })
    }

    /// The sink's endpoint, when its URL is given.
    fn sink(&self, raw: RawSink, url_key: &str) -> Result<Option<Endpoint>, ConfigError> {
        let settings = raw.settings.map(|(name, value)| {
            let path = [key("alerts"), Seg::Key(name.get_ref().clone())];
            (path, name.span(), value)
        });
        match (raw.url, settings) {
            (None, None) => Ok(None),
            (Some(url), None) => Ok(Some(Endpoint::plain(url))),
            (None, Some((path, span, _))) => Err(self.err(
                span,
                &path,
                format!("connection settings without a URL: set [alerts] {url_key}"),
            )),
            (Some(url), Some((path, span, value))) => {
                let Value::Table(_) = value.get_ref() else {
                    return Err(self.type_err(value, &path, "a table of connection settings"));
                };
                let raw = self.raw_client(value, &path)?;
                let client = self.http_client(raw, &path, span, &url)?;
                Ok(Some(Endpoint { url, client }))
            }
        }
    }

    fn rule(
        &self,
        kind: RuleKind,
        table: &toml::Table,
        rule_path: &[Seg],
        rule_span: Range<usize>,
        settings: &mut RuleSettings,
        thresholds: &mut Thresholds,
    ) -> Result<(), ConfigError> {
        for (name, value) in table {
            let mut path = rule_path.to_vec();
            path.push(Seg::Key(name.clone()));
            let span = self.span_of(&path, rule_span.clone());
            let spanned = Spanned::new(span.clone(), value.clone());
            let duration = || self.value(&spanned, &path, values::duration);
            let share = || self.value(&spanned, &path, |v| values::share(v, "a number"));
            let ratio = || self.ratio(&spanned, &path);
            let unknown = || {
                self.err(
                    span.clone(),
                    &path,
                    format!(
                        "unknown key for rule {} ({})",
                        kind.config_name(),
                        kind.alertname()
                    ),
                )
            };
            match (name.as_str(), kind) {
                ("enabled", _) => settings.enabled = self.value(&spanned, &path, values::flag)?,
                ("for", _) => settings.for_duration = duration()?,
                ("labels", _) => settings.labels = self.label_table(&spanned, &path)?,
                ("annotations", _) => {
                    let Value::Table(annotations) = value else {
                        return Err(self.type_err(&spanned, &path, "a table of strings"));
                    };
                    settings.annotations = annotations
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().map_or_else(|| v.to_string(), str::to_string),
                            )
                        })
                        .collect();
                }
                ("max_pause", RuleKind::PauseBudget) => thresholds.max_pause = duration()?,
                ("window", RuleKind::PauseRegression) => thresholds.regression_window = duration()?,
                ("ratio", RuleKind::PauseRegression) => thresholds.regression_ratio = ratio()?,
                ("statistic", RuleKind::PauseRegression) => {
                    thresholds.regression_statistic = match value.as_str() {
                        Some("p99") => RegressionStatistic::P99,
                        Some("max") => RegressionStatistic::Max,
                        _ => return Err(self.err(span, &path, "expected \"p99\" or \"max\"")),
                    }
                }
                ("trailing", RuleKind::PauseRegression) => {
                    thresholds.regression_trailing = duration()?
                }
                ("baseline", RuleKind::PauseRegression) => {
                    thresholds.regression_pinned = Some(duration()?)
                }
                ("warmup", RuleKind::PauseRegression) => thresholds.regression_warmup = duration()?,
                ("min_baseline", RuleKind::PauseRegression) => {
                    thresholds.regression_min_baseline = duration()?
                }
                ("min_pause", RuleKind::PauseRegression) => {
                    thresholds.regression_min_pause = duration()?
                }
                ("threshold", RuleKind::GcOverhead) => thresholds.overhead_ratio = share()?,
                ("window", RuleKind::GcOverhead) => thresholds.overhead_window = duration()?,
                ("threshold", RuleKind::GcCpu) => thresholds.gc_cpu_share = share()?,
                ("share", RuleKind::HeapPressure) => thresholds.heap_share = share()?,
                ("slo", RuleKind::GcDrivenTail) => thresholds.tail_slo = duration()?,
                ("share", RuleKind::GcDrivenTail) => thresholds.tail_affected_share = share()?,
                ("max", RuleKind::TimeToSafepoint) => {
                    thresholds.max_time_to_safepoint = duration()?
                }
                ("after", RuleKind::StaleLog) => thresholds.stale_after = duration()?,
                _ => return Err(unknown()),
            }
        }
        Ok(())
    }

    /// A factor on a baseline: at or below zero every figure is a regression.
    fn ratio(&self, v: &Spanned<Value>, path: &[Seg]) -> Result<f64, ConfigError> {
        let ratio = self.value(v, path, |v| values::number(v, "a number"))?;
        if ratio > 0.0 && ratio.is_finite() {
            Ok(ratio)
        } else {
            Err(self.err(
                v.span(),
                path,
                format!("{ratio} is not a finite number above 0"),
            ))
        }
    }

    /// `[alerts.canary_pause]` or `[alerts.canary_tail]`; `floor_key` names
    /// the rule's floor.
    fn canary(
        &self,
        value: &Spanned<Value>,
        rule_path: &[Seg],
        floor_key: &str,
        rule: &mut CanaryRule,
    ) -> Result<(), ConfigError> {
        let Value::Table(table) = value.get_ref() else {
            return Err(self.type_err(value, rule_path, "a table of rule settings"));
        };
        for (name, setting) in table {
            let mut path = rule_path.to_vec();
            path.push(Seg::Key(name.clone()));
            let spanned = Spanned::new(self.span_of(&path, value.span()), setting.clone());
            match name.as_str() {
                "enabled" => rule.enabled = self.value(&spanned, &path, values::flag)?,
                "window" => rule.window = self.value(&spanned, &path, values::positive_duration)?,
                "for" => rule.for_duration = self.value(&spanned, &path, values::duration)?,
                "ratio" => rule.ratio = self.ratio(&spanned, &path)?,
                "min_instances" => {
                    // Fewer than two: no other instance to compare with.
                    rule.min_instances =
                        self.value(&spanned, &path, |v| values::integer_in(v, 2..=10_000, ""))? as u32
                }
                floor if floor == floor_key => rule.floor = self.value(&spanned, &path, values::duration)?,
                _ => {
                    return Err(self.err(
                        spanned.span(),
                        &path,
                        format!(
                            "unknown key; expected enabled, window, for, ratio, {floor_key} or min_instances"
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    fn label_table(
        &self,
        v: &Spanned<Value>,
        path: &[Seg],
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let Value::Table(table) = v.get_ref() else {
            return Err(self.type_err(v, path, "a table of labels"));
        };
        let mut labels = BTreeMap::new();
        for (name, value) in table {
            let mut label_path = path.to_vec();
            label_path.push(Seg::Key(name.clone()));
            let span = self.span_of(&label_path, v.span());
            if let Some(problem) = label_problem(name, LabelUse::Alert) {
                return Err(self.err(span, &label_path, problem));
            }
            let Some(text) = value.as_str() else {
                return Err(self.err(span, &label_path, "a label value must be a string"));
            };
            labels.insert(name.clone(), text.to_string());
        }
        Ok(labels)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{parse_err, parse_ok};

    #[test]
    fn regression_ratio_is_above_zero() {
        for bad in ["-1", "0", "inf", "nan"] {
            let line = format!("ratio = {bad}");
            let e = parse_err(
                &["[alerts.pause_regression]", "window = '15m'", &line],
                3,
                "alerts.pause_regression.ratio",
            );
            assert!(e.message.contains("not a finite number above 0"), "{e}");
        }
        let c = parse_ok(&["[alerts.pause_regression]", "ratio = 0.5"]);
        assert_eq!(c.alerts.thresholds.regression_ratio, 0.5);
    }

    #[test]
    fn shares_are_in_zero_to_one() {
        for (rule, key) in [
            ("gc_overhead", "threshold"),
            ("gc_cpu", "threshold"),
            ("heap_pressure", "share"),
            ("gc_driven_tail", "share"),
        ] {
            for bad in ["-0.1", "0", "1.01", "nan"] {
                let header = format!("[alerts.{rule}]");
                let line = format!("{key} = {bad}");
                let e = parse_err(&[&header, "", &line], 3, &format!("alerts.{rule}.{key}"));
                assert!(e.message.contains("is not in (0, 1]"), "{e}");
            }
        }
        let c = parse_ok(&["[alerts.heap_pressure]", "share = 1"]);
        assert_eq!(c.alerts.thresholds.heap_share, 1.0);
    }

    #[test]
    fn canary_rules_take_their_own_keys() {
        let c = parse_ok(&[
            "[alerts.canary_tail]",
            "window = '2m'",
            "for = '10m'",
            "ratio = 2",
            "min_latency = '25ms'",
            "min_instances = 5",
            "enabled = false",
        ]);
        let tail = &c.alerts.canary_tail;
        assert_eq!(tail.window, std::time::Duration::from_secs(120));
        assert_eq!(tail.for_duration, std::time::Duration::from_secs(600));
        assert_eq!(
            (tail.ratio, tail.min_instances, tail.enabled),
            (2.0, 5, false)
        );
        assert_eq!(tail.floor, std::time::Duration::from_millis(25));
        assert_eq!(c.alerts.canary_pause, Default::default());
        let e = parse_err(
            &["[alerts.canary_pause]", "min_latency = '25ms'"],
            2,
            "alerts.canary_pause.min_latency",
        );
        assert!(
            e.message
                .contains("expected enabled, window, for, ratio, min_pause or min_instances"),
            "{e}"
        );
        let e = parse_err(
            &["[alerts.canary_pause]", "min_instances = 1"],
            2,
            "alerts.canary_pause.min_instances",
        );
        assert!(e.message.contains("out of range 2..="), "{e}");
    }
}
