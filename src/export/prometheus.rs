//! `/metrics`: the agent state in the OpenMetrics text format, as the
//! [catalog](super::catalog) defines it.
//!
//! Each scrape reads a snapshot of [`AgentState`](crate::store::AgentState)
//! and walks the catalog, instead of mirroring the state into client-library
//! metric objects, so the state (which the checkpoint also holds) stays the
//! single source of truth and a scrape can never disagree with
//! `/api/v1/minutes`.
//!
//! The text is written here, family by family, because per-minute figures
//! carry their minute's start as the sample's timestamp (OpenMetrics allows
//! one; prometheus-client cannot write it): a minute is published only once
//! complete, and stamped at the scrape it would be drawn one to two minutes
//! late. The format is prometheus-client's, byte for byte (numbers by `dtoa`
//! and `itoa` as it writes them, `le` before the series' labels).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

pub use super::catalog::OVERHEAD_WINDOWS;
use super::catalog::{Family, Kind, Labels, Series, Unit, Value, CATALOG};
use crate::model::histogram::{Histogram, PAUSE_BUCKETS};
use crate::store::SharedStore;

/// The `Content-Type` of [`render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What `/metrics` serves: the store, read on every scrape.
#[derive(Debug)]
pub struct Exposition {
    store: SharedStore,
    build_version: &'static str,
    /// Decides which minute is the last complete one.
    clock: fn() -> DateTime<Utc>,
}

/// The exposition of `store`.
pub fn registry(store: SharedStore, build_version: &'static str) -> Exposition {
    registry_with_clock(store, build_version, Utc::now)
}

/// As [`registry`], with the clock that decides which minute is the last
/// complete one; tests pass a fixed one.
pub fn registry_with_clock(
    store: SharedStore,
    build_version: &'static str,
    clock: fn() -> DateTime<Utc>,
) -> Exposition {
    Exposition {
        store,
        build_version,
        clock,
    }
}

/// The OpenMetrics text exposition, ending in `# EOF`.
pub fn render(exposition: &Exposition) -> String {
    let now = (exposition.clock)();
    let state = exposition.store.snapshot();
    let mut text = String::with_capacity(16 * 1024);
    for family in CATALOG {
        let series = family.read(&state, exposition.build_version, now);
        write_family(&mut text, family, &series);
    }
    text.push_str("# EOF\n");
    text
}

/// A family's descriptor (`# HELP`, `# TYPE`, `# UNIT`), then its samples.
fn write_family(out: &mut String, family: &Family, series: &[Series<'_>]) {
    let (name, kind) = match family.kind {
        Kind::Counter => (
            family
                .name
                .strip_suffix("_total")
                .expect("counter names end in _total"),
            "counter",
        ),
        Kind::Gauge | Kind::Info => (family.name, "gauge"),
        Kind::Histogram => (family.name, "histogram"),
    };
    // OpenMetrics spells a ratio's unit `ratios`, which the `_ratio` names
    // (Prometheus's convention) do not end in: no `# UNIT` for them.
    let unit = match family.unit {
        Unit::Seconds => Some("seconds"),
        Unit::Bytes => Some("bytes"),
        Unit::Ratio | Unit::None => None,
    };
    if let Some(unit) = unit {
        debug_assert!(
            name.ends_with(&format!("_{unit}")),
            "{name} ends in its unit"
        );
    }
    let _ = writeln!(out, "# HELP {name} {}", family.help);
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(unit) = unit {
        let _ = writeln!(out, "# UNIT {name} {unit}");
    }
    for series in series {
        match (family.kind, series.value) {
            (Kind::Histogram, Value::Histogram(histogram)) => {
                write_histogram(out, name, &series.labels, histogram)
            }
            (Kind::Counter | Kind::Gauge | Kind::Info, Value::Int(_) | Value::Float(_)) => {
                out.push_str(name);
                if family.kind == Kind::Counter {
                    out.push_str("_total");
                }
                write_labels(out, None, &series.labels);
                out.push(' ');
                write_number(out, series.value);
                if let Some(minute) = series.minute {
                    let _ = write!(out, " {}", minute.timestamp());
                }
                out.push('\n');
            }
            // The catalog's tests read every family: this is a catalog bug.
            (kind, value) => unreachable!("{kind:?} family {} read {value:?}", family.name),
        }
    }
}

/// One histogram series: `_sum`, `_count`, then the cumulative buckets.
fn write_histogram(out: &mut String, name: &str, labels: &Labels<'_>, histogram: &Histogram) {
    out.push_str(name);
    out.push_str("_sum");
    write_labels(out, None, labels);
    out.push(' ');
    out.push_str(dtoa::Buffer::new().format(histogram.sum));
    out.push('\n');
    let _ = write!(out, "{name}_count");
    write_labels(out, None, labels);
    let _ = writeln!(out, " {}", histogram.count);
    let mut cumulative = 0;
    let mut bound_text = dtoa::Buffer::new();
    for (i, &bound) in PAUSE_BUCKETS.iter().enumerate() {
        cumulative += histogram.buckets.get(i).copied().unwrap_or(0);
        let le = if bound == f64::INFINITY {
            "+Inf"
        } else {
            bound_text.format(bound)
        };
        let _ = write!(out, "{name}_bucket");
        write_labels(out, Some(le), labels);
        let _ = writeln!(out, " {cumulative}");
    }
}

/// `{le="..",k="v",..}`, values escaped; nothing when there is no label.
fn write_labels(out: &mut String, le: Option<&str>, labels: &Labels<'_>) {
    let mut separator = '{';
    if let Some(le) = le {
        let _ = write!(out, "{separator}le=\"{le}\"");
        separator = ',';
    }
    for (key, value) in labels {
        let _ = write!(out, "{separator}{key}=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
        separator = ',';
    }
    if separator == ',' {
        out.push('}');
    }
}

fn write_number(out: &mut String, value: Value<'_>) {
    match value {
        Value::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Float(v) => out.push_str(dtoa::Buffer::new().format(v)),
        Value::Histogram(_) => unreachable!("histograms are written by write_histogram"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, HashMap, HashSet};
    use std::path::PathBuf;
    use std::sync::Arc;

    use chrono::TimeZone;

    use super::*;
    use crate::model::jvm::JvmState;
    use crate::store::{AgentState, Store, StreamState};

    /// The fixture every test reads: Parallel GC, 4 young and 13 full
    /// pauses, all ending in the minute 2026-11-30T01:45Z.
    pub(crate) const FIXTURE: &str = "tests/fixtures/jvm/jdk17-parallel-full";

    pub(crate) fn fixture_path(file: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(FIXTURE)
            .join(file)
    }

    /// A stream as the tailer would leave it after reading the whole fixture log.
    pub(crate) fn fixture_stream() -> StreamState {
        let (events, parser) =
            crate::commands::analyze::parse_files(&[fixture_path("gc.log")], None)
                .expect("fixture parses");
        let mut jvm = JvmState::default();
        jvm.ingest(parser.run(), &events, None);
        StreamState {
            log: "/var/log/pricing/gc.log".to_string(),
            labels: BTreeMap::from([("service".to_string(), "pricing".to_string())]),
            jvm,
            parse: parser.stats().clone(),
            files_followed: 1,
            read_lag_bytes: 0,
            last_event_processed_at: Some(at(1, 45, 20)),
            readable: true,
            errors: BTreeMap::from([("truncated".to_string(), 2)]),
            latency: None,
            runtime: None,
            discovered: None,
            exited: false,
            ..StreamState::default()
        }
    }

    pub(crate) fn fixture_state() -> SharedStore {
        let mut state = AgentState::from_streams([fixture_stream()]);
        state.count_error(crate::store::ErrorKind::CheckpointWrite);
        Arc::new(Store::new(state))
    }

    fn at(hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, hour, minute, second)
            .unwrap()
    }

    /// The `PS Scavenge` and `PS MarkSweep` bean counts and times the JVM
    /// itself reported at exit: an oracle independent of the parser.
    fn mxbean_collectors() -> HashMap<String, (u64, f64)> {
        let text = std::fs::read_to_string(fixture_path("mxbeans.json")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json["collectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    (c["count"].as_u64().unwrap(), c["time_ms"].as_f64().unwrap()),
                )
            })
            .collect()
    }

    fn render_at(now: fn() -> DateTime<Utc>) -> String {
        render(&registry_with_clock(fixture_state(), "1.2.3", now))
    }

    /// A sample line split into name, labels and value.
    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: BTreeMap<String, String>,
        value: f64,
        /// Unix seconds, for per-minute figures.
        timestamp: Option<i64>,
    }

    fn parse_labels(text: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (key, after) = rest.split_once("=\"").expect("label has =\"");
            assert!(is_name(key), "bad label name {key:?}");
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().expect("unterminated label value") {
                    (_, '\\') => match chars.next().expect("dangling escape").1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => panic!("bad escape \\{c}"),
                    },
                    (i, '"') => break i,
                    (_, c) => value.push(c),
                }
            };
            assert!(
                labels.insert(key.to_string(), value).is_none(),
                "duplicate label {key}"
            );
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        labels
    }

    fn is_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// Checks the OpenMetrics text structure: every line is a descriptor, a
    /// sample or the final `# EOF`; families are contiguous and declared once;
    /// every sample belongs to the family declared before it with a suffix its
    /// type allows; no series repeats. Returns the samples and family types.
    fn parse_exposition(text: &str) -> (Vec<Sample>, HashMap<String, String>) {
        assert!(text.ends_with("# EOF\n"), "exposition must end with # EOF");
        let body = text.strip_suffix("# EOF\n").unwrap();
        let mut types = HashMap::new();
        let mut current: Option<(String, String)> = None;
        let mut samples = Vec::new();
        let mut seen = HashSet::new();
        for line in body.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(is_name(name), "{line}");
                assert!(
                    matches!(kind, "counter" | "gauge" | "histogram"),
                    "unexpected type in {line}"
                );
                assert!(
                    types.insert(name.to_string(), kind.to_string()).is_none(),
                    "family {name} declared twice"
                );
                current = Some((name.to_string(), kind.to_string()));
                continue;
            }
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap();
                assert!(is_name(name) && !help.trim().is_empty(), "{line}");
                continue;
            }
            if let Some(rest) = line.strip_prefix("# UNIT ") {
                let (name, unit) = rest.split_once(' ').unwrap();
                assert!(name.ends_with(&format!("_{unit}")), "{line}");
                continue;
            }
            assert!(!line.starts_with('#'), "unexpected comment {line:?}");
            // The series ends where its labels close, or at the first space.
            let split = line
                .find('}')
                .map_or_else(|| line.find(' '), |close| Some(close + 1));
            let (series, rest) = line.split_at(split.expect("sample has a value"));
            let mut fields = rest.split_whitespace();
            let value = fields.next().expect("sample has a value");
            let timestamp = fields.next().map(|t| {
                t.parse::<i64>()
                    .unwrap_or_else(|_| panic!("bad timestamp in {line:?}"))
            });
            assert_eq!(fields.next(), None, "trailing text in {line:?}");
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v
                    .parse()
                    .unwrap_or_else(|_| panic!("bad value in {line:?}")),
            };
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (
                    name,
                    parse_labels(labels.strip_suffix('}').expect("labels close")),
                ),
                None => (series, BTreeMap::new()),
            };
            assert!(is_name(name), "bad metric name in {line:?}");
            // Nothing pausewatch exposes can be negative, not even -0.0.
            assert!(
                !rest.starts_with(" -0.0") && value >= 0.0,
                "negative value in {line:?}"
            );
            let (family, kind) = current.as_ref().expect("sample before any # TYPE");
            let suffix = name
                .strip_prefix(family.as_str())
                .unwrap_or_else(|| panic!("{name} outside its family {family}"));
            let allowed: &[&str] = match kind.as_str() {
                "counter" => &["_total", "_created"],
                "histogram" => &["_bucket", "_sum", "_count", "_created"],
                _ => &[""],
            };
            assert!(
                allowed.contains(&suffix),
                "{name} is not a sample name of {kind} {family}"
            );
            assert!(seen.insert(series.to_string()), "series repeated: {series}");
            samples.push(Sample {
                name: name.to_string(),
                labels,
                value,
                timestamp,
            });
        }
        (samples, types)
    }

    /// The value of the one sample called `name` whose labels include `labels`.
    fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
        let matching: Vec<&Sample> = samples
            .iter()
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(matching.len(), 1, "{name} {labels:?}: {matching:?}");
        matching[0].value
    }

    fn sum_of(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
        samples
            .iter()
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// One minute after the fixture's only minute (01:45), so 01:45 is the last complete one.
    fn a_minute_later() -> DateTime<Utc> {
        at(1, 46, 30)
    }

    #[test]
    fn exposition_is_well_formed_and_complete() {
        let text = render_at(a_minute_later);
        let (samples, types) = parse_exposition(&text);
        let expected = [
            ("jvm_gc_pause_seconds", "histogram"),
            ("go_gc_pause_seconds", "histogram"),
            ("pausewatch_gc_pause_max_seconds", "gauge"),
            ("pausewatch_gc_pause_max_lower_bound", "gauge"),
            ("pausewatch_gc_pauses_last_minute", "gauge"),
            ("pausewatch_safepoints", "counter"),
            ("pausewatch_safepoint_stopped_seconds", "counter"),
            ("pausewatch_safepoint_time_to_safepoint_seconds", "counter"),
            (
                "pausewatch_safepoint_time_to_safepoint_max_seconds",
                "gauge",
            ),
            ("pausewatch_allocation_stalls", "counter"),
            ("pausewatch_allocation_stall_seconds", "counter"),
            ("pausewatch_relocation_stalls", "counter"),
            ("pausewatch_heap_after_gc_bytes", "gauge"),
            ("pausewatch_heap_committed_bytes", "gauge"),
            ("pausewatch_heap_max_bytes", "gauge"),
            ("jvm_gc_live_data_size_bytes", "gauge"),
            ("jvm_gc_max_data_size_bytes", "gauge"),
            ("jvm_gc_memory_allocated_bytes", "counter"),
            ("jvm_gc_memory_promoted_bytes", "counter"),
            ("pausewatch_gc_overhead_ratio", "gauge"),
            ("pausewatch_gc_concurrent_cycles", "counter"),
            ("pausewatch_gc_concurrent_cycle_seconds", "counter"),
            ("pausewatch_gc_concurrent_phase_seconds", "counter"),
            ("pausewatch_gc_full", "counter"),
            ("pausewatch_gc_evacuation_failures", "counter"),
            ("pausewatch_gc_degenerated", "counter"),
            ("pausewatch_gc_humongous_allocations", "counter"),
            ("pausewatch_gc_explicit", "counter"),
            ("pausewatch_jvm_restarts", "counter"),
            ("pausewatch_jvm_start_time_seconds", "gauge"),
            ("pausewatch_jvm_info", "gauge"),
            ("pausewatch_log_lines", "counter"),
            ("pausewatch_log_bytes", "counter"),
            ("pausewatch_log_unparsed_lines", "counter"),
            ("pausewatch_log_files_followed", "gauge"),
            ("pausewatch_log_read_lag_bytes", "gauge"),
            ("pausewatch_log_last_event_age_seconds", "gauge"),
            ("pausewatch_log_readable", "gauge"),
            ("pausewatch_errors", "counter"),
            ("pausewatch_build_info", "gauge"),
            ("pausewatch_request_duration_seconds", "histogram"),
            ("pausewatch_requests", "counter"),
            ("pausewatch_slow_requests", "counter"),
            ("pausewatch_slow_requests_stop_affected", "counter"),
            ("pausewatch_request_latency_p99_seconds", "gauge"),
            ("pausewatch_request_latency_p999_seconds", "gauge"),
            (
                "pausewatch_request_wait_unseen_by_server_p999_seconds",
                "gauge",
            ),
            (
                "pausewatch_request_latency_p999_without_stop_affected_seconds",
                "gauge",
            ),
            ("pausewatch_slow_time_explained_by_stops_ratio", "gauge"),
            ("pausewatch_pause_latency_correlation", "gauge"),
            ("pausewatch_access_log_lines", "counter"),
            ("pausewatch_access_log_malformed_lines", "counter"),
            ("pausewatch_access_log_malformed_ratio", "gauge"),
            ("pausewatch_access_log_unattributed_requests", "counter"),
            ("pausewatch_access_log_readable", "gauge"),
            ("pausewatch_alerts", "gauge"),
            ("pausewatch_label_values_overflow", "counter"),
            ("pausewatch_log_events_without_wall_clock", "counter"),
            ("pausewatch_alert_deliveries", "counter"),
            ("pausewatch_otlp_exports", "counter"),
            ("pausewatch_otlp_pause_records_dropped", "counter"),
            ("pausewatch_ebpf_records_unclaimed", "counter"),
            ("pausewatch_jvm_discovered", "gauge"),
            ("pausewatch_multiplexed_connections", "counter"),
            ("pausewatch_port_requests", "counter"),
            ("pausewatch_port_request_latency_p999_seconds", "gauge"),
            ("pausewatch_slow_requests_queued_behind_stops", "counter"),
            ("pausewatch_slow_requests_gc_driven", "counter"),
            ("pausewatch_jvm_gc_collections", "counter"),
            ("pausewatch_jvm_gc_collection_seconds", "counter"),
            ("pausewatch_gc_pauses_unresolved", "counter"),
            ("pausewatch_jvm_safepoints", "counter"),
            ("pausewatch_jvm_safepoint_probe_mismatch", "gauge"),
            ("pausewatch_gc_log_probe_mismatch", "gauge"),
            ("pausewatch_gc_log_counter_mismatch", "gauge"),
            ("pausewatch_jvm_safepoint_seconds", "counter"),
            ("pausewatch_jvm_safepoint_sync_seconds", "counter"),
            ("jvm_memory_used_bytes", "gauge"),
            ("jvm_memory_committed_bytes", "gauge"),
            ("jvm_memory_max_bytes", "gauge"),
            ("pausewatch_jvm_gc_cause_info", "gauge"),
            ("jvm_classes_loaded_classes", "gauge"),
            ("jvm_classes_unloaded_classes", "counter"),
            ("pausewatch_jvm_compilation_seconds", "counter"),
            ("jvm_threads_live_threads", "gauge"),
            ("jvm_threads_daemon_threads", "gauge"),
            ("jvm_threads_peak_threads", "gauge"),
            ("process_uptime_seconds", "gauge"),
            ("process_cpu_seconds", "counter"),
            ("pausewatch_gc_cpu_seconds", "counter"),
            ("pausewatch_gc_cpu_beside_seconds", "counter"),
            ("pausewatch_gc_cpu_info", "gauge"),
            ("pausewatch_gc_cpu_ratio", "gauge"),
        ];
        for (family, kind) in expected {
            assert_eq!(
                types.get(family).map(String::as_str),
                Some(kind),
                "{family}"
            );
        }
        assert_eq!(
            types.len(),
            expected.len(),
            "unexpected families: {types:?}"
        );
        // Every family has a series for this stream, and every stream series
        // carries `log` and the configured labels.
        // This fixture has no latency source, no alert, no OTLP export, no
        // discovered JVM and no Go program: those families are declared, empty.
        let latency_family = |family: &str| {
            [
                "go_",
                "pausewatch_request",
                "pausewatch_multiplexed",
                "pausewatch_port_request",
                "pausewatch_slow",
                "pausewatch_pause_latency",
                "pausewatch_access_log",
                "pausewatch_alert",
                "pausewatch_otlp",
                "pausewatch_jvm_",
                "pausewatch_gc_pauses_unresolved",
                "pausewatch_gc_log_counter_mismatch",
                "pausewatch_gc_log_probe_mismatch",
                "pausewatch_ebpf_",
                "jvm_memory_",
                "jvm_classes_",
                "jvm_threads_",
                "process_uptime",
                "process_cpu",
                "pausewatch_gc_cpu",
            ]
            .iter()
            .any(|prefix| family.starts_with(prefix))
                && family != "pausewatch_jvm_info"
                && family != "pausewatch_jvm_restarts"
        };
        for (family, _) in expected
            .into_iter()
            .filter(|(family, _)| !latency_family(family))
        {
            assert!(
                samples.iter().any(|s| s.name.starts_with(family)),
                "{family} has no sample"
            );
        }
        for sample in &samples {
            let agent_level = sample.name == "pausewatch_build_info"
                || (sample.name == "pausewatch_errors_total"
                    && sample.labels.get("kind").map(String::as_str) == Some("checkpoint_write"));
            if !agent_level {
                assert_eq!(
                    sample.labels.get("log").map(String::as_str),
                    Some("/var/log/pricing/gc.log"),
                    "{sample:?}"
                );
                assert_eq!(
                    sample.labels.get("service").map(String::as_str),
                    Some("pricing")
                );
            }
        }
    }

    #[test]
    fn pause_counts_match_the_jvms_own_mxbeans() {
        let (samples, _) = parse_exposition(&render_at(a_minute_later));
        let beans = mxbean_collectors();
        for bean in ["PS Scavenge", "PS MarkSweep"] {
            let (count, time_ms) = beans[bean];
            let gc = [("gc", bean)];
            assert_eq!(
                sum_of(&samples, "jvm_gc_pause_seconds_count", &gc),
                count as f64,
                "{bean}"
            );
            // The bean's time is whole milliseconds of the same pauses.
            let sum_ms = sum_of(&samples, "jvm_gc_pause_seconds_sum", &gc) * 1000.0;
            assert!(
                (sum_ms - time_ms).abs() < 1.0,
                "{bean}: {sum_ms} ms vs {time_ms} ms"
            );
            // +Inf holds every observation of each series.
            let infinite = sum_of(
                &samples,
                "jvm_gc_pause_seconds_bucket",
                &[("gc", bean), ("le", "+Inf")],
            );
            assert_eq!(infinite, count as f64, "{bean}");
        }
        let total: u64 = beans.values().map(|(count, _)| count).sum();
        assert_eq!(
            sum_of(&samples, "jvm_gc_pause_seconds_count", &[]),
            total as f64
        );
    }

    /// Each `(le, count)`: the count of the pause histogram's `series` up to `le`.
    fn assert_buckets(
        samples: &[Sample],
        series: &[(&'static str, &'static str)],
        expected: &[(&'static str, f64)],
    ) {
        for (le, count) in expected {
            let mut labels = series.to_vec();
            labels.push(("le", le));
            let bucket = value(samples, "jvm_gc_pause_seconds_bucket", &labels);
            assert_eq!(bucket, *count, "le={le} of {series:?}");
        }
    }

    #[test]
    fn pause_buckets_hold_the_pauses_read_off_the_log() {
        let (samples, _) = parse_exposition(&render_at(a_minute_later));
        // The 11 `Pause Full (Ergonomics)` lines, by hand: 22.499 4.905 3.163
        // 2.743 5.770 10.185 12.120 5.714 3.564 3.048 4.201 ms.
        let series = [
            ("gc", "PS MarkSweep"),
            ("action", "end of major GC"),
            ("cause", "Ergonomics"),
        ];
        // GC(2), 22.499 ms, is the only one past 20 ms: it lands in le="0.05".
        let full_buckets = [
            ("0.002", 0.0),
            ("0.005", 6.0),
            ("0.01", 8.0),
            ("0.02", 10.0),
            ("0.05", 11.0),
            ("10.0", 11.0),
            ("+Inf", 11.0),
        ];
        assert_buckets(&samples, &series, &full_buckets);
        assert_eq!(value(&samples, "jvm_gc_pause_seconds_count", &series), 11.0);
        assert!(close(
            value(&samples, "jvm_gc_pause_seconds_sum", &series),
            0.077912
        ));
        // Young pauses 14.401 16.198 1.065 2.696 ms, all `Allocation Failure`.
        let young = [
            ("gc", "PS Scavenge"),
            ("action", "end of minor GC"),
            ("cause", "Allocation Failure"),
        ];
        let young_buckets = [
            ("0.001", 0.0),
            ("0.002", 1.0),
            ("0.005", 2.0),
            ("0.01", 2.0),
            ("0.02", 4.0),
            ("+Inf", 4.0),
        ];
        assert_buckets(&samples, &young, &young_buckets);
        // Every bound of PAUSE_BUCKETS is exposed; counts never decrease.
        let mut previous = 0.0;
        for bound in PAUSE_BUCKETS {
            let le = if bound.is_infinite() {
                "+Inf".to_string()
            } else {
                dtoa_like(bound)
            };
            let mut labels = young.to_vec();
            labels.push(("le", &le));
            let v = value(&samples, "jvm_gc_pause_seconds_bucket", &labels);
            assert!(v >= previous);
            previous = v;
        }
    }

    /// `le` as the exposition writes it (shortest round-trip, `.0` for integers).
    fn dtoa_like(v: f64) -> String {
        let s = format!("{v}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    }

    #[test]
    fn last_minute_gauges_read_the_minute_before_now() {
        // In 01:46 the last complete minute is 01:45, which holds all 17
        // pauses; the longest is GC(2) `Pause Full (Ergonomics) ... 22.499ms`
        // and the longest time to safepoint `Reaching safepoint: 95131 ns`.
        let (samples, _) = parse_exposition(&render_at(a_minute_later));
        assert!(close(
            value(&samples, "pausewatch_gc_pause_max_seconds", &[]),
            0.022499
        ));
        assert_eq!(
            value(&samples, "pausewatch_gc_pauses_last_minute", &[]),
            17.0
        );
        assert!(close(
            value(
                &samples,
                "pausewatch_safepoint_time_to_safepoint_max_seconds",
                &[]
            ),
            0.000095131
        ));
        // The 17 pauses add up to 130.99 ms.
        let one = value(
            &samples,
            "pausewatch_gc_overhead_ratio",
            &[("window", "1m")],
        );
        let five = value(
            &samples,
            "pausewatch_gc_overhead_ratio",
            &[("window", "5m")],
        );
        assert!(close(one, 0.13099 / 60.0), "{one}");
        assert!(close(five, 0.13099 / 300.0), "{five}");
        // Each per-minute figure is stamped with its minute, 01:45, and
        // nothing else is stamped (Prometheus stamps it at the scrape).
        let minute = at(1, 45, 0).timestamp();
        for sample in &samples {
            let per_minute = [
                "pausewatch_gc_pause_max_seconds",
                "pausewatch_gc_pause_max_lower_bound",
                "pausewatch_gc_pauses_last_minute",
                "pausewatch_safepoint_time_to_safepoint_max_seconds",
            ]
            .contains(&sample.name.as_str());
            assert_eq!(sample.timestamp, per_minute.then_some(minute), "{sample:?}");
        }

        // While 01:45 is still the current minute it is not complete: zeros.
        let (samples, _) = parse_exposition(&render_at(|| at(1, 45, 59)));
        assert_eq!(value(&samples, "pausewatch_gc_pause_max_seconds", &[]), 0.0);
        assert_eq!(
            value(&samples, "pausewatch_gc_pauses_last_minute", &[]),
            0.0
        );
        assert_eq!(
            value(
                &samples,
                "pausewatch_gc_overhead_ratio",
                &[("window", "5m")]
            ),
            0.0
        );

        // Two minutes later 01:45 has left the 1m window but not the 5m one.
        let (samples, _) = parse_exposition(&render_at(|| at(1, 47, 0)));
        assert_eq!(value(&samples, "pausewatch_gc_pause_max_seconds", &[]), 0.0);
        assert_eq!(
            value(
                &samples,
                "pausewatch_gc_overhead_ratio",
                &[("window", "1m")]
            ),
            0.0
        );
        let five = value(
            &samples,
            "pausewatch_gc_overhead_ratio",
            &[("window", "5m")],
        );
        assert!(close(five, 0.13099 / 300.0));
        // ... and six minutes later it has left both.
        let (samples, _) = parse_exposition(&render_at(|| at(1, 51, 0)));
        assert_eq!(
            value(
                &samples,
                "pausewatch_gc_overhead_ratio",
                &[("window", "5m")]
            ),
            0.0
        );
    }

    #[test]
    fn safepoint_heap_and_health_figures_match_the_log() {
        let (samples, _) = parse_exposition(&render_at(a_minute_later));
        // The log's first line, `[2026-11-30T01:45:14.354+0000][0.003s]`:
        // the JVM started at 01:45:14.351 (each line rounds to a millisecond).
        let start = value(&samples, "pausewatch_jvm_start_time_seconds", &[]);
        let expected = at(1, 45, 14).timestamp() as f64 + 0.351;
        assert!((start - expected).abs() <= 0.002, "{start} vs {expected}");
        let op = [("operation", "ParallelGCFailedAllocation")];
        // 15 `Safepoint "ParallelGCFailedAllocation"` lines; their `Total:`
        // and `Reaching safepoint:` fields sum to 132030792 ns and 125998 ns.
        assert_eq!(value(&samples, "pausewatch_safepoints_total", &op), 15.0);
        assert!(close(
            value(&samples, "pausewatch_safepoint_stopped_seconds_total", &op),
            0.132030792
        ));
        assert!(close(
            value(
                &samples,
                "pausewatch_safepoint_time_to_safepoint_seconds_total",
                &op
            ),
            0.000125998
        ));
        // 13 `Pause Full` lines; no ZGC, G1 or Shenandoah events.
        assert_eq!(value(&samples, "pausewatch_gc_full_total", &[]), 13.0);
        assert_eq!(
            value(&samples, "pausewatch_allocation_stalls_total", &[]),
            0.0
        );
        assert_eq!(value(&samples, "pausewatch_gc_degenerated_total", &[]), 0.0);
        // `Heap Max Capacity: 64M`; the last pause is `Pause Full ... 58M->1M(58M)`.
        let mib = 1024.0 * 1024.0;
        assert_eq!(
            value(&samples, "pausewatch_heap_max_bytes", &[]),
            64.0 * mib
        );
        assert_eq!(
            value(&samples, "jvm_gc_max_data_size_bytes", &[]),
            64.0 * mib
        );
        assert_eq!(value(&samples, "pausewatch_heap_after_gc_bytes", &[]), mib);
        assert_eq!(
            value(&samples, "pausewatch_heap_committed_bytes", &[]),
            58.0 * mib
        );
        assert_eq!(value(&samples, "jvm_gc_live_data_size_bytes", &[]), mib);
        // `Using Parallel`; the mxbeans snapshot's vm_version.
        let jvm = value(
            &samples,
            "pausewatch_jvm_info",
            &[("collector", "parallel")],
        );
        assert_eq!(jvm, 1.0);
        let version = samples
            .iter()
            .find(|s| s.name == "pausewatch_jvm_info")
            .and_then(|s| s.labels.get("jdk_version"))
            .unwrap();
        assert!(
            version.starts_with("17.0.15+6-Debian-1deb12u1"),
            "{version}"
        );
        // Lines and bytes as `wc` counts them.
        let log = std::fs::read(fixture_path("gc.log")).unwrap();
        let lines = log.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(
            value(&samples, "pausewatch_log_lines_total", &[]),
            lines as f64
        );
        assert_eq!(
            value(&samples, "pausewatch_log_bytes_total", &[]),
            log.len() as f64
        );
        for kind in [
            "not_unified_logging",
            "legacy_format",
            "malformed_event",
            "too_long",
            "invalid_utf8",
        ] {
            assert_eq!(
                value(
                    &samples,
                    "pausewatch_log_unparsed_lines_total",
                    &[("kind", kind)]
                ),
                0.0
            );
        }
        // Stream fields set by `fixture_stream`; processed at 01:45:20, now 01:46:30.
        assert_eq!(
            value(&samples, "pausewatch_log_last_event_age_seconds", &[]),
            70.0
        );
        assert_eq!(value(&samples, "pausewatch_log_readable", &[]), 1.0);
        assert_eq!(value(&samples, "pausewatch_log_files_followed", &[]), 1.0);
        assert_eq!(value(&samples, "pausewatch_log_read_lag_bytes", &[]), 0.0);
        assert_eq!(
            value(
                &samples,
                "pausewatch_errors_total",
                &[("kind", "truncated")]
            ),
            2.0
        );
        let agent = samples
            .iter()
            .find(|s| s.labels.get("kind").map(String::as_str) == Some("checkpoint_write"))
            .unwrap();
        assert_eq!(agent.name, "pausewatch_errors_total");
        assert_eq!(agent.labels.len(), 1, "agent errors carry only kind");
        assert_eq!(
            value(&samples, "pausewatch_build_info", &[("version", "1.2.3")]),
            1.0
        );
    }

    #[test]
    fn unknown_figures_are_omitted_and_an_empty_agent_still_renders() {
        let stream = StreamState {
            log: "/tmp/quoted \"gc\".log".to_string(),
            ..StreamState::default()
        };
        let state = Arc::new(Store::new(AgentState::from_streams([stream])));
        let text = render(&registry_with_clock(state, "0.0.0", a_minute_later));
        let (samples, _) = parse_exposition(&text);
        for absent in [
            "pausewatch_heap_after_gc_bytes",
            "pausewatch_heap_max_bytes",
            "jvm_gc_live_data_size_bytes",
            "pausewatch_log_last_event_age_seconds",
            "jvm_gc_pause_seconds_count",
        ] {
            assert!(!samples.iter().any(|s| s.name == absent), "{absent}");
        }
        let info = samples
            .iter()
            .find(|s| s.name == "pausewatch_jvm_info")
            .unwrap();
        assert_eq!(info.labels["jdk_version"], "unknown");
        assert_eq!(info.labels["collector"], "unknown");
        assert_eq!(info.labels["log"], "/tmp/quoted \"gc\".log");
        assert_eq!(value(&samples, "pausewatch_log_readable", &[]), 0.0);

        let empty = render(&registry(Arc::new(Store::default()), "0.0.0"));
        let (samples, _) = parse_exposition(&empty);
        assert_eq!(samples.len(), 1, "only build_info: {samples:?}");
    }

    #[test]
    fn a_poisoned_lock_still_renders() {
        let state = fixture_state();
        let poisoner = state.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.write();
            panic!("tailer died holding the lock");
        })
        .join();
        assert!(state.is_poisoned());
        let (samples, _) =
            parse_exposition(&render(&registry_with_clock(state, "1", a_minute_later)));
        assert_eq!(sum_of(&samples, "jvm_gc_pause_seconds_count", &[]), 17.0);
    }
}
