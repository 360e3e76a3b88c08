//! The integration tests, one binary (as ripgrep's `tests/tests.rs`): the
//! crate is linked once instead of once a file, and tests of different
//! files share the test threads. Each file is a module; `cargo test --test
//! it FILE::` runs one file's tests. The tests that need the host to
//! themselves are in `tests/solo/`.

#[path = "../common/mod.rs"]
mod common;

mod access_logs;
mod agent_clock;
mod agent_follow;
mod agent_histogram;
mod alert_rules;
mod alertmanager;
mod analyze_unchanged;
mod cli;
mod compare;
mod container;
mod corpus;
mod dashboards;
mod deb;
mod demo;
mod discovery_service;
mod fleet;
mod gc_cpu;
mod go_gctrace;
mod histogram_source;
mod hostile_host;
mod hsperf_stats;
mod idle_agent;
mod jdk8_logs;
mod jvm_fixtures;
mod latency_attribution;
mod man_pages;
mod manifests;
mod otlp;
mod prometheus;
mod promtool;
mod readme;
mod report_html;
mod rpm;
mod systemd_unit;
mod tls;
mod trial;
mod web_config;
mod webhook;
mod zero_config;
mod zgc_pause_time;
