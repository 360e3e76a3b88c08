//! Every configuration key with its default and meaning: the source of
//! `pausewatch.toml(5)` (`pausewatch man`). The tests below hold it to the
//! parser: each key the parser accepts is listed, and each listed default
//! gives the same configuration as leaving the key out.

/// What a key is when it is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDefault {
    /// This TOML value: writing it changes nothing.
    Value(&'static str),
    /// No value stands for it (required, unset, derived from other keys).
    Note(&'static str),
}

/// One key of the configuration file.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The table it belongs in: `""` for the top level, `gc_log` for
    /// `[[gc_log]]`, `alerts.RULE` for the settings every rule has.
    pub section: &'static str,
    pub name: &'static str,
    pub default: KeyDefault,
    pub meaning: &'static str,
}

const fn key(
    section: &'static str,
    name: &'static str,
    default: &'static str,
    meaning: &'static str,
) -> Key {
    Key {
        section,
        name,
        default: KeyDefault::Value(default),
        meaning,
    }
}

const fn note(
    section: &'static str,
    name: &'static str,
    note: &'static str,
    meaning: &'static str,
) -> Key {
    Key {
        section,
        name,
        default: KeyDefault::Note(note),
        meaning,
    }
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

/// Every key, section by section.
pub const KEYS: &[Key] = &[
    key("", "listen", "\"127.0.0.1:9464\"", "Address (IP:PORT) of /metrics, /healthz and /api/v1/*; loopback only by default."),
    key("", "checkpoint_dir", "\"/var/lib/pausewatch\"", "Where positions, parser state and per-minute aggregates are checkpointed. Without a configuration file the agent uses this as root, else $XDG_STATE_HOME/pausewatch or ~/.local/state/pausewatch."),
    key("", "poll_interval", "\"250ms\"", "Polling period of the files whose inotify events do not arrive (NFS, FUSE, a log reached through a symlink, one found written without an event); at least 10ms. Other files are read on their events, and polled every 10 s in case one was lost."),
    key("", "checkpoint_interval", "\"1s\"", "How often the checkpoint is written when something changed."),
    key("", "history", "\"24h\"", "Per-minute history kept in memory; 1h to 30d."),
    key("", "max_label_values", "100", "Distinct values of cause and operation per stream; further ones are counted as \"other\" (1 to 10000)."),
    key("", "max_connections", "256", "HTTP connections served at once; beyond them 8 spare connections serve /healthz only, and the rest are closed."),
    key("", "max_connections_per_client", "32", "Of those, how many one client address may hold; its further connections get the spare ones."),
    key("", "http_header_timeout", "\"10s\"", "A connection that sends no complete request header for this long is closed."),
    note("", "web_config", "none", "TLS and basic auth of the endpoints: an exporter-toolkit web config file, relative to this file."),
    note("gc_log", "path", "required", "A path or a glob; rotated files belong to their live file, and each live file is one JVM."),
    key("gc_log", "start_at", "\"end\"", "\"end\" or \"beginning\": where to start in a file seen for the first time."),
    key("gc_log", "labels", "{}", "Labels added to every series of the source."),
    note("gc_log", "jvm_start", "none", "RFC 3339 JVM start, for logs decorated with uptime only."),
    key("gc_log", "max_line_bytes", "65536", "Longer lines are counted and skipped (256 to 16777216)."),
    key("gc_log", "follow_symlinks_outside", "false", "Read files through symlinks that lead out of the configured directories."),
    key("gc_log", "forget_after", "\"5m\"", "How long a file a glob matched may be missing before its stream is dropped with its series."),
    note("access_log", "path", "required", "The access log, a path or a glob, followed like a GC log."),
    note("access_log", "format", "required unless log_format is given", "nginx, apache, tomcat, tomcat9, tomcat-begin-msec, tomcat9-begin-msec, envoy, envoy-json, json or regex."),
    note("access_log", "log_format", "none", "Any other nginx or Apache layout: the server's own format string."),
    note("access_log", "gc_log", "the only [[gc_log]] path", "Live path of the GC log of the JVM serving these requests; required with several GC sources or a glob."),
    note("access_log", "jvm", "none", "Instead of gc_log: the discovered JVM serving these requests, by a port it listens on and labels it has, e.g. { port = 8080 } or { labels = { service = \"pricing\" } }; the newest match. Beside the kernel's request latency it is kept as the server's view."),
    key("access_log", "start_at", "\"end\"", "As for [[gc_log]]."),
    key("access_log", "offset", "\"0ms\"", "Added to request times for clock skew; may be negative."),
    key("access_log", "max_line_bytes", "65536", "As for [[gc_log]]."),
    key("access_log", "follow_symlinks_outside", "false", "As for [[gc_log]]."),
    note("access_log", "time_field", "none", "json: the field holding the time (dotted for nested fields)."),
    note("access_log", "duration_field", "none", "json: the field holding the duration."),
    note("access_log", "pattern", "none", "regex: named groups duration and start, end or time."),
    note("access_log", "time_format", "none", "json, regex: rfc3339, epoch_seconds, epoch_millis, epoch_micros or clf."),
    note("access_log", "duration_unit", "none", "json, regex: s, ms, us or ns."),
    note("access_log", "timestamp", "none", "json, regex: start or end, which instant the time is."),
    note("latency_histogram", "url", "required", "The application's Prometheus endpoint, http:// or https://."),
    key("latency_histogram", "metric", "\"http_server_requests_seconds\"", "The histogram's name."),
    note("latency_histogram", "matchers", "none", "Label values the series must have."),
    key("latency_histogram", "interval", "\"15s\"", "Time between scrapes."),
    note("latency_histogram", "gc_log", "the only [[gc_log]] path", "As for [[access_log]]."),
    note("latency_histogram", "tls_config", "none", "As under [alerts.alertmanager]."),
    note("latency_histogram", "basic_auth", "none", "As under [alerts.alertmanager]."),
    note("latency_histogram", "authorization", "none", "As under [alerts.alertmanager]."),
    note("latency_histogram", "bearer_token", "none", "As under [alerts.alertmanager]."),
    note("latency_histogram", "bearer_token_file", "none", "As under [alerts.alertmanager]."),
    note("correlation", "slo", "none (each minute's p99.9)", "Requests slower than this are slow."),
    key("correlation", "affected_share", "0.25", "Share of a request's time stops must cover to make it stop-affected."),
    key("correlation", "window", "\"60m\"", "Sliding window of the pause/latency correlation."),
    key("correlation", "min_minutes", "10", "Minutes with requests a correlation needs."),
    key("correlation", "finalize_after", "\"15s\"", "How long after a minute ends its requests are attributed (late lines)."),
    key("discovery", "enabled", "true", "Scan /proc for JVMs and Go programs."),
    key("discovery", "interval", "\"10s\"", "Time between scans."),
    key("discovery", "include", "[]", "Regexes on the command line; empty: every JVM."),
    key("discovery", "exclude", "[]", "Regexes on the command line of JVMs left alone."),
    key("discovery", "grace", "\"5m\"", "How long an exited JVM's series stay."),
    note("discovery.rule", "match", "required", "Regex on the command line."),
    note("discovery.rule", "labels", "{}", "Labels of the matching JVMs; service overrides the derived one."),
    note("discovery.rule", "exclude_ports", "[]", "Listening ports of the matching JVMs whose requests the kernel does not measure: long-poll, streaming, admin ports."),
    key("runtime_stats", "enabled", "true", "Sample each discovered JVM's hsperfdata and /proc."),
    key(
        "runtime_stats",
        "interval",
        "\"200ms\"",
        "Time between samples; an idle JVM (no collection or safepoint for 10 s) is sampled every 2 s until its counters move (every 10 s when a GC log or eBPF gives its pauses).",
    ),
    key("ebpf", "enabled", "true", "Measure the pauses of discovered JVMs without a GC log through eBPF; where it cannot (no feature, no privilege), hsperfdata does and /metrics says why."),
    key("ebpf", "request_arrival", "\"auto\"", "The tracepoint a request's arrival is read from: sk_data_ready (Linux 6.6) where the kernel has it, else tcp_probe; name one to use it."),
    note("ebpf", "requests_dir", "none", "A directory to write the kernel's requests to, one JSON line each ({start, duration_ms, port}), one file per JVM (service-pid.jsonl), for analyze --latency, report and compare."),
    note("alerts", "alertmanager_url", "none", "Alertmanager (API v2) to send alerts to."),
    note("alerts", "webhook_url", "none", "URL each alert transition is posted to as JSON."),
    note("alerts", "alertmanager", "none", "The [alerts.alertmanager] table, below."),
    note("alerts", "webhook", "none", "The [alerts.webhook] table: keys as [alerts.alertmanager]."),
    key("alerts", "evaluation_interval", "\"1m\"", "Time between rule evaluations."),
    key("alerts", "resend_interval", "\"1m\"", "Alertmanager re-sends while firing."),
    key("alerts", "labels", "{}", "Labels on every alert."),
    note("alerts.alertmanager", "tls_config", "none", "{ ca_file, cert_file, key_file, server_name, insecure_skip_verify }, files relative to this file."),
    note("alerts.alertmanager", "basic_auth", "none", "{ username, password or password_file }."),
    note("alerts.alertmanager", "authorization", "none", "{ type, credentials or credentials_file }."),
    note("alerts.alertmanager", "bearer_token", "none", "Sent as Authorization: Bearer."),
    note("alerts.alertmanager", "bearer_token_file", "none", "A file holding the bearer token."),
    key("alerts.RULE", "enabled", "true", "Whether the rule is evaluated."),
    key("alerts.RULE", "for", "\"0s\"", "How long the condition must hold before the alert fires."),
    key("alerts.RULE", "labels", "{}", "Labels of the rule's alerts (severity is \"warning\" unless set)."),
    key("alerts.RULE", "annotations", "{}", "Annotations of the rule's alerts; summary replaces the generated one."),
    key("alerts.pause_budget", "max_pause", "\"50ms\"", "The callers' timeout."),
    key("alerts.pause_regression", "window", "\"15m\"", "The window compared with its baseline."),
    key("alerts.pause_regression", "ratio", "1.5", "Factor on the baseline above which the window regressed."),
    key("alerts.pause_regression", "statistic", "\"p99\"", "\"p99\" or \"max\"."),
    key("alerts.pause_regression", "trailing", "\"3h\"", "Baseline when there is no day-old data."),
    note("alerts.pause_regression", "baseline", "none", "A pinned baseline pause instead."),
    key("alerts.pause_regression", "min_pause", "\"10ms\"", "Pauses are never a regression below this."),
    key("alerts.pause_regression", "warmup", "\"5m\"", "Each JVM run's first minutes are left out of baselines."),
    key("alerts.pause_regression", "min_baseline", "\"30m\"", "Minutes with pauses a baseline needs."),
    key("alerts.gc_overhead", "threshold", "0.1", "Share of wall time."),
    key("alerts.gc_overhead", "window", "\"5m\"", "Over this window."),
    key("alerts.gc_cpu", "threshold", "0.2", "Share of the process's CPU."),
    key("alerts.gc_cpu", "for", "\"10m\"", "As under [alerts.RULE], with this default."),
    key("alerts.heap_pressure", "share", "0.9", "Share of the max heap."),
    key("alerts.heap_pressure", "for", "\"5m\"", "As under [alerts.RULE], with this default."),
    note("alerts.gc_driven_tail", "slo", "[correlation] slo, else \"50ms\"", "The p99.9 above which the tail is slow."),
    key("alerts.gc_driven_tail", "share", "0.5", "Share of the slow requests that were stop-affected or queued behind a stop."),
    key("alerts.time_to_safepoint", "max", "\"100ms\"", "Longest accepted time to safepoint."),
    key("alerts.stale_log", "after", "\"10m\"", "Time without an event."),
    key("alerts.log_counter_mismatch", "for", "\"10m\"", "As under [alerts.RULE], with this default."),
    key("alerts.canary_pause", "enabled", "true", "Whether the rule is written into the Prometheus rules."),
    key("alerts.canary_pause", "window", "\"5m\"", "Each instance's longest pause of the minutes that ended in this window, at least 2m (a minute's figure reaches Prometheus after the minute ends); the recording rules' names end in it."),
    key("alerts.canary_pause", "for", "\"30m\"", "How long the difference must last: longer than a restart's warm-up."),
    key("alerts.canary_pause", "ratio", "1.5", "Factor on the other instances' median."),
    key("alerts.canary_pause", "min_pause", "\"10ms\"", "Never a regression below this."),
    key("alerts.canary_pause", "min_instances", "3", "Instances the service needs for a comparison."),
    key("alerts.canary_tail", "enabled", "true", "As under [alerts.canary_pause]."),
    key("alerts.canary_tail", "window", "\"5m\"", "Each instance's highest p99.9 of the minutes that ended in this window, at least 2m."),
    key("alerts.canary_tail", "for", "\"30m\"", "As under [alerts.canary_pause]."),
    key("alerts.canary_tail", "ratio", "1.5", "Factor on the other instances' median."),
    key("alerts.canary_tail", "min_latency", "\"10ms\"", "Never a regression below this."),
    key("alerts.canary_tail", "min_instances", "3", "Instances the service needs for a comparison."),
    note("otlp", "endpoint", "\"http://localhost:4318\" (gRPC: \"http://localhost:4317\")", "The receiver; /v1/metrics is added to an http/protobuf URL without a path (OTEL_EXPORTER_OTLP_ENDPOINT)."),
    key("otlp", "protocol", "\"http/protobuf\"", "Or \"grpc\" (OTEL_EXPORTER_OTLP_PROTOCOL)."),
    key("otlp", "interval", "\"15s\"", "Time between exports (OTEL_METRIC_EXPORT_INTERVAL)."),
    key("otlp", "timeout", "\"10s\"", "Of one export request (OTEL_EXPORTER_OTLP_TIMEOUT)."),
    key("otlp", "headers", "{}", "Sent with every request (OTEL_EXPORTER_OTLP_HEADERS)."),
    key("otlp", "temporality", "\"cumulative\"", "Or \"delta\" (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE)."),
    note("otlp", "tls_config", "none", "{ ca_file, cert_file, key_file } for an https:// endpoint."),
    key("otlp", "resource_attributes", "{}", "Attributes of every resource (merged with OTEL_RESOURCE_ATTRIBUTES)."),
    key("otlp", "gc_cause", "false", "jvm.gc.cause on jvm.gc.duration."),
    key("otlp", "pause_events", "false", "Each pause also as a jvm.gc.pause log record."),
    note("otlp", "logs_endpoint", "the endpoint with /v1/logs", "Where the pause records go (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT)."),
];

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
