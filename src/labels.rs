//! The label names the agent's own series carry beside configured labels,
//! which a configured label therefore may not take: Prometheus rejects a
//! scrape that names a label twice. A module below both `config`, which
//! refuses these names, and `export`, whose catalog sets them, so that
//! neither imports the other for them; the catalog's tests hold this list
//! to the labels its families really set.

use std::collections::BTreeSet;

/// Prometheus' target labels (`instance`, `job`), the scopes' labels
/// (`log`, `runtime`, `alertname`), every label of a family whose series
/// carry configured labels, and histograms' `le`. Labels of agent-only
/// families (`version`, `sink`, `result`) are not reserved: their series
/// never carry configured labels, so they cannot clash.
const RESERVED: [&str; 32] = [
    "instance",
    "job",
    "log",
    "runtime",
    "alertname",
    "gc",
    "action",
    "cause",
    "le",
    "window",
    "operation",
    "collector",
    "jdk_version",
    "user",
    "runtime_stats",
    "reason",
    "pause_source",
    "ebpf_reason",
    "safepoint_source",
    "latency_source",
    "latency_reason",
    "port",
    "area",
    "id",
    "last_cause",
    "kind",
    "label",
    "method",
    "quantile",
    "state",
    "from",
    "of",
];

/// The names a configured series label may not take ([`RESERVED`]).
pub fn reserved_label_names() -> BTreeSet<&'static str> {
    BTreeSet::from(RESERVED)
}
