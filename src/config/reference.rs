//! Every configuration key with its default and meaning, the source of
//! `pausewatch.toml(5)` (`pausewatch man`), generated from the serde structs
//! that read the file (`Raw*`), so that the page cannot drift from them.
//!
//! A field's doc comment is its meaning; a key's ends in a paragraph
//! `Default: ...` on one line: `` Default: `VALUE` `` when writing that TOML
//! value changes nothing, else a note in words (`Default: required`,
//! `Default: none`). A field without it is a table with a section of its own
//! (`gc_log` in the top level). `DocumentedFields` refuses a field without a
//! doc comment at compile time. A key that is a Rust keyword is a raw
//! identifier (`r#for`), which serde reads without its `r#`, never a
//! `#[serde(rename)]` that the names here would not follow.
//!
//! The tests hold the result to the parser: each key it accepts is listed,
//! each listed key is accepted, and each `` `VALUE` `` gives the same
//! configuration as leaving the key out.

use documented::DocumentedFields;

use super::access_log::RawAccessLog;
use super::alerts::{AlertsFields, RawCanaryPause, RawCanaryTail, RULE_TABLES};
use super::correlation::RawCorrelation;
use super::discovery::{RawDiscovery, RawEbpf, RawRule, RawRuntimeStats};
use super::gc_log::RawGcLog;
use super::http_client::RawClient;
use super::latency_histogram::RawHistogram;
use super::otlp::RawOtlp;
use super::RawConfig;

/// What a key is when it is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDefault {
    /// This TOML value: writing it changes nothing.
    Value(&'static str),
    /// No value stands for it (required, unset, derived from other keys).
    Note(&'static str),
}

/// One key of the configuration file.
#[derive(Debug, Clone)]
pub struct Key {
    /// The table it belongs in: `""` for the top level, `gc_log` for
    /// `[[gc_log]]`, `alerts.RULE` for the settings every rule has.
    pub section: &'static str,
    pub name: &'static str,
    pub default: KeyDefault,
    /// The doc comment's lines joined into one.
    pub meaning: String,
}

/// A serde struct's field names and doc comments, in field order.
#[derive(Clone, Copy)]
pub(super) struct Fields {
    names: &'static [&'static str],
    docs: &'static [&'static str],
}

impl Fields {
    pub(super) const fn of<T: DocumentedFields>() -> Self {
        Fields {
            names: T::FIELD_NAMES,
            docs: T::FIELD_DOCS,
        }
    }

    /// Each field's TOML name (serde's: without `r#`) and doc comment.
    fn iter(self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let names = (self.names.iter()).map(|name| name.strip_prefix("r#").unwrap_or(name));
        names.zip(self.docs.iter().copied())
    }
}

/// The struct that reads each section's table; the rules' are
/// [`RULE_TABLES`].
const TABLES: &[(&str, Fields)] = &[
    ("", Fields::of::<RawConfig>()),
    ("gc_log", Fields::of::<RawGcLog>()),
    ("access_log", Fields::of::<RawAccessLog>()),
    ("latency_histogram", Fields::of::<RawHistogram>()),
    ("correlation", Fields::of::<RawCorrelation>()),
    ("discovery", Fields::of::<RawDiscovery>()),
    ("discovery.rule", Fields::of::<RawRule>()),
    ("runtime_stats", Fields::of::<RawRuntimeStats>()),
    ("ebpf", Fields::of::<RawEbpf>()),
    ("alerts", Fields::of::<AlertsFields>()),
    ("alerts.alertmanager", Fields::of::<RawClient>()),
    ("alerts.canary_pause", Fields::of::<RawCanaryPause>()),
    ("alerts.canary_tail", Fields::of::<RawCanaryTail>()),
    ("otlp", Fields::of::<RawOtlp>()),
];

/// The key a field is, `None` for a table (no `Default:` paragraph).
fn key(section: &'static str, name: &'static str, doc: &'static str) -> Option<Key> {
    let (meaning, default) = doc.rsplit_once("\n\nDefault: ")?;
    let default = match default.strip_prefix('`').and_then(|d| d.strip_suffix('`')) {
        Some(value) => KeyDefault::Value(value),
        None => KeyDefault::Note(default),
    };
    let meaning = meaning.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(Key {
        section,
        name,
        default,
        meaning,
    })
}

/// Each rule's doc comment of its field `name`, if every rule has one.
fn rule_docs(name: &str) -> Option<Vec<&'static str>> {
    (RULE_TABLES.iter())
        .map(|(_, rule)| rule.iter().find(|(n, _)| *n == name).map(|(_, doc)| doc))
        .collect()
}

/// Whether a rule's field is a setting every rule has, with the doc comment
/// most rules give it (the others have a default of their own).
fn every_rule_has(&(name, doc): &(&str, &str)) -> bool {
    rule_docs(name).is_some_and(|docs| docs.iter().filter(|d| **d == doc).count() * 2 > docs.len())
}

/// Every key: each table's in field order; the settings every rule has, once
/// as `alerts.RULE`; then each rule's own keys and own defaults.
pub fn keys() -> Vec<Key> {
    let mut fields: Vec<(&str, (&str, &str))> = (TABLES.iter())
        .flat_map(|&(section, table)| table.iter().map(move |field| (section, field)))
        .collect();
    let rule_fields = RULE_TABLES.iter().flat_map(|(_, rule)| rule.iter());
    for field in rule_fields.filter(every_rule_has) {
        if !fields.contains(&("alerts.RULE", field)) {
            fields.push(("alerts.RULE", field));
        }
    }
    for &(section, rule) in RULE_TABLES {
        let (defaults, own): (Vec<_>, Vec<_>) = (rule.iter())
            .filter(|field| !every_rule_has(field))
            .partition(|(name, _)| rule_docs(name).is_some());
        fields.extend(
            own.into_iter()
                .chain(defaults)
                .map(|field| (section, field)),
        );
    }
    (fields.into_iter())
        .filter_map(|(section, (name, doc))| key(section, name, doc))
        .collect()
}

/// The sections in the order the page lists them, each with a sentence.
pub const SECTIONS: &[(&str, &str)] = &[
    ("", "Top-level keys."),
    ("gc_log", "One [[gc_log]] table per GC log source (a path or a glob)."),
    ("access_log", "One [[access_log]] table per access log of a service, lined up with its JVM's pauses."),
    ("latency_histogram", "One [[latency_histogram]] table per service without an access log: its own Prometheus histogram, scraped."),
    ("correlation", "How requests are attributed to stops."),
    ("discovery", "JVMs and Go programs found in /proc, without a [[gc_log]]."),
    ("discovery.rule", "Labels for the discovered JVMs whose command line matches."),
    ("runtime_stats", "Sampling each discovered JVM's hsperfdata."),
    ("ebpf", "Exact pauses of discovered JVMs without a GC log, from HotSpot's safepoint probes (a build with --features ebpf, CAP_BPF and CAP_PERFMON)."),
    ("alerts", "The agent's own alert rules and where alerts go."),
    ("alerts.alertmanager", "TLS and credentials of the Alertmanager sink; [alerts.webhook] takes the same keys for the webhook, and [[latency_histogram]] for its scrape."),
    ("alerts.RULE", "Every rule (pause_budget, pause_regression, gc_overhead, gc_cpu, heap_pressure, full_gc, evacuation_failure, degenerated_gc, allocation_stall, gc_driven_tail, time_to_safepoint, stale_log, log_counter_mismatch) takes these."),
    ("alerts.pause_budget", "PauseBudgetExceeded: the last complete minute's longest pause is above max_pause."),
    ("alerts.pause_regression", "PauseRegression: a pause statistic over window exceeds ratio times its baseline."),
    ("alerts.gc_overhead", "GcOverheadHigh: pauses take more than threshold of wall time over window."),
    ("alerts.gc_cpu", "GcCpuHigh: the collector takes more than threshold of the process's CPU in a minute (a Go trace whose process is not read: of its GOMAXPROCS); a minute in which the process used under 0.6 s of CPU has no share, so an idle JVM's housekeeping never fires it."),
    ("alerts.heap_pressure", "HeapPressure: live data after the last full collection above share of the max heap."),
    ("alerts.gc_driven_tail", "GcDrivenTail: the p99.9 is above slo while more than share of the slow requests were stop-affected or queued behind a stop."),
    ("alerts.time_to_safepoint", "LongTimeToSafepoint: a time to safepoint above max."),
    ("alerts.stale_log", "StaleGcLog: no event, or the log unreadable, for after."),
    ("alerts.log_counter_mismatch", "GcLogCounterMismatch: pauses counted from the log differ from the JVM's own counter."),
    ("alerts.canary_pause", "CanaryPauseRegression, in the Prometheus rules only (pausewatch rules; one agent sees one instance): an instance's longest pause over window above ratio times the median of the other instances of its service."),
    ("alerts.canary_tail", "CanaryTailRegression, in the Prometheus rules only: the same for an instance's p99.9 request latency."),
    ("otlp", "OpenTelemetry export, on when the file has an [otlp] table (even empty). Keys left out come from the OTEL_EXPORTER_OTLP_* environment variables, then from these defaults."),
];

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
