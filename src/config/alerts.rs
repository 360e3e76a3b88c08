//! `[alerts]` and `[alerts.<rule>]`: sinks, labels and per-rule thresholds.
//!
//! Each rule's table is its own serde struct, so a key of another rule is
//! refused as unknown; [`reworded_unknown_key`] answers an unknown key with
//! the keys and rules the agent knows, as it always has.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

use documented::DocumentedFields;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::http_client::{Endpoint, RawClient};
use super::reference::Fields;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{
    self, AlertLabel, CanaryWindow, Dur, Flag, IntIn, LabelValue, Pinned, Positive, Ratio,
    RuleShare, Statistic, Url,
};
use crate::model::alerts::{AlertsConfig, CanaryRule, RuleKind, RuleSettings, Thresholds};

/// The fleet rules' tables: Prometheus-only, so not [`RuleKind`]s.
const CANARY_RULES: [&str; 2] = ["canary_pause", "canary_tail"];

/// The alert sinks: `alertmanager_url` and `webhook_url`, each with the
/// connection settings of its own table (`[alerts.alertmanager]`,
/// `[alerts.webhook]`; not under the URL keys, which stay plain strings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertSinks {
    pub alertmanager: Option<Endpoint>,
    pub webhook: Option<Endpoint>,
}

/// A table whose type error names what it holds (`expected a table of
/// labels, found integer`); `W` gives the words.
pub(super) struct Described<T, W>(T, PhantomData<W>);

pub(super) trait Words {
    const WHAT: &'static str;
}

impl<'de, T: Deserialize<'de>, W: Words> Deserialize<'de> for Described<T, W> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        values::table(d, W::WHAT).map(|t| Described(t, PhantomData))
    }
}

macro_rules! words {
    ($($name:ident = $what:literal;)*) => {$(
        pub(super) struct $name;
        impl Words for $name {
            const WHAT: &'static str = $what;
        }
    )*};
}

words! {
    RuleWords = "a table of rule settings";
    LabelWords = "a table of labels";
    StringWords = "a table of strings";
}

/// `[alerts.alertmanager]` or `[alerts.webhook]`; not a table is refused
/// after a missing URL, as always.
pub(super) struct SinkSettings(Result<RawClient, &'static str>);

impl<'de> Deserialize<'de> for SinkSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        values::table_or_type(d).map(SinkSettings)
    }
}

type Rule<T> = Described<T, RuleWords>;
type Labels = Described<BTreeMap<AlertLabel, LabelValue>, LabelWords>;
/// Any value is taken, a non-string as its TOML text.
type Annotations = Described<BTreeMap<String, toml::Value>, StringWords>;

fn labels(raw: Labels) -> BTreeMap<String, String> {
    raw.0.into_iter().map(|(k, v)| (k.0, v.0)).collect()
}

/// The settings every rule has.
fn apply_common(
    settings: &mut RuleSettings,
    enabled: Option<Flag>,
    for_duration: Option<Dur>,
    raw_labels: Option<Labels>,
    annotations: Option<Annotations>,
) {
    if let Some(enabled) = enabled {
        settings.enabled = enabled.0;
    }
    if let Some(for_duration) = for_duration {
        settings.for_duration = for_duration.0;
    }
    if let Some(raw) = raw_labels {
        settings.labels = labels(raw);
    }
    if let Some(annotations) = annotations {
        settings.annotations = (annotations.0.into_iter())
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                (k, text)
            })
            .collect()
    }
}

/// The rule tables (`name: Raw Kind { own keys: type => threshold }`, each
/// key's doc comment its entry in [`super::reference`]; `for { docs }` before
/// the keys when the rule's `for` has a default of its own) and the
/// `[alerts]` table that holds them.
macro_rules! alert_tables {
    ($($name:ident: $raw:ident $kind:ident $(for { $(#[$for_doc:meta])* })? {
        $($(#[$doc:meta])* $key:ident: $ty:ty => $target:ident),*
    })*) => {
        $(rule_table! {
            $raw [$($(#[$for_doc])*)?] { $($(#[$doc])* $key: $ty => $target),* }
        })*

        /// The `[alerts]` table's keys.
        #[derive(Deserialize, DocumentedFields)]
        #[serde(deny_unknown_fields)]
        pub(super) struct AlertsFields {
            /// Alertmanager (API v2) to send alerts to.
            ///
            /// Default: none
            alertmanager_url: Option<Url>,
            /// URL each alert transition is posted to as JSON.
            ///
            /// Default: none
            webhook_url: Option<Url>,
            /// The [alerts.alertmanager] table, below.
            ///
            /// Default: none
            alertmanager: Option<Spanned<SinkSettings>>,
            /// The [alerts.webhook] table: keys as [alerts.alertmanager].
            ///
            /// Default: none
            webhook: Option<Spanned<SinkSettings>>,
            /// Time between rule evaluations.
            ///
            /// Default: `"1m"`
            evaluation_interval: Option<Positive>,
            /// Alertmanager re-sends while firing.
            ///
            /// Default: `"1m"`
            resend_interval: Option<Positive>,
            /// Labels on every alert.
            ///
            /// Default: `{}`
            labels: Option<Labels>,
            /// The [alerts.canary_pause] table.
            canary_pause: Option<Rule<RawCanaryPause>>,
            /// The [alerts.canary_tail] table.
            canary_tail: Option<Rule<RawCanaryTail>>,
            $(
                #[doc = concat!("The [alerts.", stringify!($name), "] table.")]
                $name: Option<Rule<$raw>>,
            )*
        }

        /// Each rule's table, by section, for [`super::reference`].
        pub(super) const RULE_TABLES: &[(&str, Fields)] = &[
            $((concat!("alerts.", stringify!($name)), Fields::of::<$raw>()),)*
        ];

        impl AlertsFields {
            /// The rules' settings and thresholds.
            fn apply_rules(&mut self, alerts: &mut AlertsConfig) {
                $(if let Some(raw) = self.$name.take() {
                    let settings = (alerts.rules.iter_mut())
                        .find(|r| r.kind == RuleKind::$kind)
                        .expect("every rule has settings");
                    raw.0.apply(settings, &mut alerts.thresholds);
                })*
            }
        }
    };
}

/// One rule's table: the settings every rule has, then its own keys; `[]`
/// gives `for` its usual doc comment and default.
macro_rules! rule_table {
    ($raw:ident [] $keys:tt) => {
        rule_table! {
            $raw [
                /// How long the condition must hold before the alert fires.
                ///
                /// Default: `"0s"`
            ] $keys
        }
    };
    ($raw:ident [$(#[$for_doc:meta])+] {
        $($(#[$doc:meta])* $key:ident: $ty:ty => $target:ident),*
    }) => {
        #[derive(Deserialize, DocumentedFields)]
        #[serde(deny_unknown_fields)]
        struct $raw {
            /// Whether the rule is evaluated.
            ///
            /// Default: `true`
            enabled: Option<Flag>,
            $(#[$for_doc])+
            r#for: Option<Dur>,
            /// Labels of the rule's alerts (severity is "warning" unless set).
            ///
            /// Default: `{}`
            labels: Option<Labels>,
            /// Annotations of the rule's alerts; summary replaces the generated
            /// one.
            ///
            /// Default: `{}`
            annotations: Option<Annotations>,
            $($(#[$doc])* $key: Option<$ty>,)*
        }

        impl $raw {
            fn apply(self, settings: &mut RuleSettings, _thresholds: &mut Thresholds) {
                apply_common(settings, self.enabled, self.r#for, self.labels, self.annotations);
                $(if let Some(v) = self.$key {
                    _thresholds.$target = v.0;
                })*
            }
        }
    };
}

alert_tables! {
    pause_budget: RawPauseBudget PauseBudget {
        /// The callers' timeout.
        ///
        /// Default: `"50ms"`
        max_pause: Dur => max_pause
    }
    pause_regression: RawPauseRegression PauseRegression {
        /// The window compared with its baseline.
        ///
        /// Default: `"15m"`
        window: Dur => regression_window,
        /// Factor on the baseline above which the window regressed.
        ///
        /// Default: `1.5`
        ratio: Ratio => regression_ratio,
        /// "p99" or "max".
        ///
        /// Default: `"p99"`
        statistic: Statistic => regression_statistic,
        /// Baseline when there is no day-old data.
        ///
        /// Default: `"3h"`
        trailing: Dur => regression_trailing,
        /// A pinned baseline pause instead.
        ///
        /// Default: none
        baseline: Pinned => regression_pinned,
        /// Each JVM run's first minutes are left out of baselines.
        ///
        /// Default: `"5m"`
        warmup: Dur => regression_warmup,
        /// Minutes with pauses a baseline needs.
        ///
        /// Default: `"30m"`
        min_baseline: Dur => regression_min_baseline,
        /// Pauses are never a regression below this.
        ///
        /// Default: `"10ms"`
        min_pause: Dur => regression_min_pause
    }
    gc_overhead: RawGcOverhead GcOverhead {
        /// Share of wall time.
        ///
        /// Default: `0.1`
        threshold: RuleShare => overhead_ratio,
        /// Over this window.
        ///
        /// Default: `"5m"`
        window: Dur => overhead_window
    }
    gc_cpu: RawGcCpu GcCpu for {
        /// As under [alerts.RULE], with this default.
        ///
        /// Default: `"10m"`
    } {
        /// Share of the process's CPU.
        ///
        /// Default: `0.2`
        threshold: RuleShare => gc_cpu_share
    }
    heap_pressure: RawHeapPressure HeapPressure for {
        /// As under [alerts.RULE], with this default.
        ///
        /// Default: `"5m"`
    } {
        /// Share of the max heap.
        ///
        /// Default: `0.9`
        share: RuleShare => heap_share
    }
    full_gc: RawFullGc FullGc {}
    evacuation_failure: RawEvacuationFailure EvacuationFailure {}
    degenerated_gc: RawDegeneratedGc DegeneratedGc {}
    allocation_stall: RawAllocationStall AllocationStall {}
    gc_driven_tail: RawGcDrivenTail GcDrivenTail {
        /// The p99.9 above which the tail is slow.
        ///
        /// Default: [correlation] slo, else "50ms"
        slo: Dur => tail_slo,
        /// Share of the slow requests that were stop-affected or queued behind
        /// a stop.
        ///
        /// Default: `0.5`
        share: RuleShare => tail_affected_share
    }
    time_to_safepoint: RawTimeToSafepoint TimeToSafepoint {
        /// Longest accepted time to safepoint.
        ///
        /// Default: `"100ms"`
        max: Dur => max_time_to_safepoint
    }
    stale_log: RawStaleLog StaleLog {
        /// Time without an event.
        ///
        /// Default: `"10m"`
        after: Dur => stale_after
    }
    log_counter_mismatch: RawLogCounterMismatch LogCounterMismatch for {
        /// As under [alerts.RULE], with this default.
        ///
        /// Default: `"10m"`
    } {}
}

/// `[alerts.canary_pause]` and `[alerts.canary_tail]`: the same keys but
/// the window's meaning and the floor's name.
macro_rules! canary_tables {
    ($($raw:ident { $(#[$window_doc:meta])* window, $(#[$floor_doc:meta])* $floor:ident })*) => {$(
        #[derive(Deserialize, DocumentedFields)]
        #[serde(deny_unknown_fields)]
        pub(super) struct $raw {
            /// Whether the rule is written into the Prometheus rules.
            ///
            /// Default: `true`
            enabled: Option<Flag>,
            $(#[$window_doc])*
            window: Option<CanaryWindow>,
            /// How long the difference must last: longer than a restart's
            /// warm-up.
            ///
            /// Default: `"30m"`
            r#for: Option<Dur>,
            /// Factor on the other instances' median.
            ///
            /// Default: `1.5`
            ratio: Option<Ratio>,
            $(#[$floor_doc])*
            $floor: Option<Dur>,
            // Fewer than two: no other instance to compare with.
            /// Instances the service needs for a comparison.
            ///
            /// Default: `3`
            min_instances: Option<IntIn<2, 10_000>>,
        }

        impl $raw {
            fn apply(self, rule: &mut CanaryRule) {
                let floor = self.$floor.map(|v| v.0);
                apply_canary(rule, (self.enabled, self.window, self.r#for), self.ratio, floor, self.min_instances);
            }
        }
    )*};
}

canary_tables! {
    RawCanaryPause {
        /// Each instance's longest pause of the minutes that ended in this
        /// window, at least 2m (a minute's figure reaches Prometheus after the
        /// minute ends); the recording rules' names end in it.
        ///
        /// Default: `"5m"`
        window,
        /// Never a regression below this.
        ///
        /// Default: `"10ms"`
        min_pause
    }
    RawCanaryTail {
        /// Each instance's highest p99.9 of the minutes that ended in this
        /// window, at least 2m.
        ///
        /// Default: `"5m"`
        window,
        /// Never a regression below this.
        ///
        /// Default: `"10ms"`
        min_latency
    }
}

fn apply_canary(
    rule: &mut CanaryRule,
    (enabled, window, for_duration): (Option<Flag>, Option<CanaryWindow>, Option<Dur>),
    ratio: Option<Ratio>,
    floor: Option<Duration>,
    min_instances: Option<IntIn<2, 10_000>>,
) {
    rule.enabled = enabled.map_or(rule.enabled, |v| v.0);
    rule.window = window.map_or(rule.window, |v| v.0);
    rule.for_duration = for_duration.map_or(rule.for_duration, |v| v.0);
    rule.ratio = ratio.map_or(rule.ratio, |v| v.0);
    rule.floor = floor.unwrap_or(rule.floor);
    rule.min_instances = min_instances.map_or(rule.min_instances, |v| v.0 as u32);
}

/// `[alerts]`: a map (a derived struct would also take `[[alerts]]`'s
/// array), refused otherwise in serde's words as always.
pub(super) struct RawAlerts(AlertsFields);

impl<'de> Deserialize<'de> for RawAlerts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MapOnly)
    }
}

struct MapOnly;

impl<'de> Visitor<'de> for MapOnly {
    type Value = RawAlerts;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawAlerts, A::Error> {
        AlertsFields::deserialize(MapAccessDeserializer::new(map)).map(RawAlerts)
    }
}

/// An unknown key of `[alerts]` or of a rule's table, worded as the agent
/// always has: with the keys and rules it knows.
pub(super) fn reworded_unknown_key(path: &[Seg], message: &str) -> Option<String> {
    message.strip_prefix("unknown field `")?;
    let [Seg::Key(alerts), rest @ ..] = path else {
        return None;
    };
    if alerts != "alerts" {
        return None;
    }
    match rest {
        [_] => {
            let known: Vec<&str> = (RuleKind::ALL.iter().map(|k| k.config_name()))
                .chain(CANARY_RULES)
                .collect();
            Some(format!(
                "unknown key; expected alertmanager_url, webhook_url, alertmanager, webhook, evaluation_interval, resend_interval, labels or a rule: {}",
                known.join(", ")
            ))
        }
        [Seg::Key(rule), _] => {
            if let Some(kind) = RuleKind::from_config_name(rule) {
                return Some(format!(
                    "unknown key for rule {} ({})",
                    kind.config_name(),
                    kind.alertname()
                ));
            }
            let floor = match rule.as_str() {
                "canary_pause" => "min_pause",
                "canary_tail" => "min_latency",
                _ => return None,
            };
            Some(format!(
                "unknown key; expected enabled, window, for, ratio, {floor} or min_instances"
            ))
        }
        _ => None,
    }
}

impl Ctx<'_> {
    pub(super) fn alerts(
        &self,
        RawAlerts(mut raw): RawAlerts,
        alerts: &mut AlertsConfig,
    ) -> Result<AlertSinks, ConfigError> {
        if let Some(v) = raw.evaluation_interval.take() {
            alerts.evaluation_interval = v.0;
        }
        if let Some(v) = raw.resend_interval.take() {
            alerts.resend_interval = v.0;
        }
        if let Some(raw_labels) = raw.labels.take() {
            alerts.labels = labels(raw_labels);
        }
        if let Some(canary) = raw.canary_pause.take() {
            canary.0.apply(&mut alerts.canary_pause);
        }
        if let Some(canary) = raw.canary_tail.take() {
            canary.0.apply(&mut alerts.canary_tail);
        }
        raw.apply_rules(alerts);
        Ok(AlertSinks {
            alertmanager: self.sink(raw.alertmanager_url, raw.alertmanager, "alertmanager")?,
            webhook: self.sink(raw.webhook_url, raw.webhook, "webhook")?,
        })
    }

    /// The sink's endpoint, when its URL is given.
    fn sink(
        &self,
        url: Option<Url>,
        settings: Option<Spanned<SinkSettings>>,
        table: &str,
    ) -> Result<Option<Endpoint>, ConfigError> {
        let path = [key("alerts"), key(table)];
        match (url, settings) {
            (None, None) => Ok(None),
            (Some(url), None) => Ok(Some(Endpoint::plain(url.0))),
            (None, Some(settings)) => Err(self.err(
                self.span_of(&path, settings.span()),
                &path,
                format!("connection settings without a URL: set [alerts] {table}_url"),
            )),
            (Some(url), Some(settings)) => {
                let value = settings.span();
                let raw = settings.into_inner().0.map_err(|found| {
                    let message = format!("expected a table of connection settings, found {found}");
                    self.err(value.clone(), &path, message)
                })?;
                let client = self.http_client(raw, &path, self.span_of(&path, value), &url.0)?;
                Ok(Some(Endpoint { url: url.0, client }))
            }
        }
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
        // A window without a published minute in it for seconds after every
        // minute's end: the rule could never fire.
        let e = parse_err(
            &["[alerts.canary_tail]", "window = '90s'"],
            2,
            "alerts.canary_tail.window",
        );
        assert!(e.message.contains("below the minimum of 2m"), "{e}");
    }
}
