//! The Prometheus rules in `dashboards/prometheus/` are valid and pass their
//! unit tests, and no rule goes untested.
//!
//! - `promtool check rules` on `pausewatch-rules.yml`, then `promtool test
//!   rules` on `pausewatch-rules.test.yml`; both must succeed, and their output
//!   is printed. Needs `/usr/bin/promtool` (Debian's `prometheus` package,
//!   which CI installs) or `promtool` on `PATH`; without it this test
//!   is skipped (`common::skip`).
//! - Without promtool: every `record:` of the rules appears in the `expr` of a
//!   `promql_expr_test`, every `alert:` is the `alertname` of an
//!   `alert_rule_test`, and every alert name of the agent's own engine has a
//!   Prometheus rule of the same name. The YAML is read by scanning lines, which
//!   the two files' plain block style allows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pausewatch::model::alerts::RuleKind;

mod common;

const RULES: &str = "dashboards/prometheus/pausewatch-rules.yml";
const TESTS: &str = "dashboards/prometheus/pausewatch-rules.test.yml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// [`common::installed`] `promtool`, or `None` after skipping.
fn promtool_or_skip() -> Option<PathBuf> {
    common::or_skip(
        common::installed("promtool"),
        "promtool is not installed (no /usr/bin/promtool, none on PATH; apt-get install prometheus)",
    )
}

/// Runs `promtool <args>` in the workspace root, prints what it said, and
/// fails the test unless it succeeded.
fn run_promtool(promtool: &Path, args: &[&str]) {
    let output = Command::new(promtool)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", promtool.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("$ promtool {}\n{stdout}{stderr}", args.join(" "));
    assert!(
        output.status.success(),
        "promtool {} failed ({}):\n{stdout}{stderr}",
        args.join(" "),
        output.status
    );
}

#[test]
fn promtool_checks_and_tests_the_rules() {
    let Some(promtool) = promtool_or_skip() else {
        return;
    };
    run_promtool(&promtool, &["check", "rules", RULES]);
    run_promtool(&promtool, &["test", "rules", TESTS]);
}

/// The value of `key: value` on a line (after an optional list dash), unquoted.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let line = line.trim_start();
    let line = line.strip_prefix("- ").unwrap_or(line).trim_start();
    let value = line.strip_prefix(key)?.strip_prefix(':')?.trim();
    let value = value.split(" #").next().unwrap_or(value).trim();
    Some(value.trim_matches(|c| c == '\'' || c == '"'))
}

/// Record and alert names of the rules file, in file order.
fn rule_names(rules: &str) -> (Vec<String>, Vec<String>) {
    let (mut records, mut alerts) = (Vec::new(), Vec::new());
    for line in rules.lines() {
        if let Some(name) = value_of(line, "record") {
            records.push(name.to_string());
        } else if let Some(name) = value_of(line, "alert") {
            alerts.push(name.to_string());
        }
    }
    (records, alerts)
}

/// Which list of a promtool test group a line belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Section {
    Other,
    AlertTests,
    ExprTests,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The `alertname`s of the `alert_rule_test`s and the `expr`s of the
/// `promql_expr_test`s of the test file (a block scalar `expr: |` with the
/// lines indented under it).
fn tested(tests: &str) -> (BTreeSet<String>, Vec<String>) {
    let (mut alertnames, mut exprs) = (BTreeSet::new(), Vec::<String>::new());
    let mut section = Section::Other;
    // The indentation of an `expr: |` line while its block is being read.
    let mut block: Option<usize> = None;
    for line in tests.lines() {
        if let Some(key_indent) = block {
            if line.trim().is_empty() || indent(line) > key_indent {
                let expr = exprs.last_mut().expect("block follows its expr");
                expr.push(' ');
                expr.push_str(line.trim());
                continue;
            }
            block = None;
        }
        let key = line.trim_start().trim_start_matches("- ").trim_end();
        match key {
            "alert_rule_test:" => section = Section::AlertTests,
            "promql_expr_test:" => section = Section::ExprTests,
            "input_series:" | "external_labels:" | "external_url:" => section = Section::Other,
            _ if key.starts_with("interval:") && line.trim_start().starts_with("- ") => {
                section = Section::Other
            }
            _ => {}
        }
        match section {
            Section::AlertTests => {
                if let Some(name) = value_of(line, "alertname") {
                    alertnames.insert(name.to_string());
                }
            }
            Section::ExprTests => {
                if let Some(expr) = value_of(line, "expr") {
                    if expr.starts_with(['|', '>']) {
                        // The key's own column: after the list dash, if any.
                        let dash = if line.trim_start().starts_with("- ") {
                            2
                        } else {
                            0
                        };
                        block = Some(indent(line) + dash);
                        exprs.push(String::new());
                    } else {
                        exprs.push(expr.to_string());
                    }
                }
            }
            Section::Other => {}
        }
    }
    (alertnames, exprs)
}

/// Whether `name` occurs in `expr` as a whole metric name, not as a prefix of
/// a longer one (`..:p99_15m` is not in `..:p99_15m_offset1d`).
fn mentions(expr: &str, name: &str) -> bool {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    expr.match_indices(name).any(|(at, _)| {
        let before = expr[..at].chars().next_back();
        let after = expr[at + name.len()..].chars().next();
        !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char)
    })
}

#[test]
fn every_rule_has_a_unit_test() {
    let (records, alerts) = rule_names(&read(RULES));
    let (alertnames, exprs) = tested(&read(TESTS));
    println!(
        "{} recording rules, {} alerts; {} alert names and {} expressions tested",
        records.len(),
        alerts.len(),
        alertnames.len(),
        exprs.len()
    );
    assert!(
        records.len() >= 10 && alerts.len() >= 13,
        "{RULES}: too few rules found ({} records, {} alerts): did the layout change?",
        records.len(),
        alerts.len()
    );

    let untested_records: Vec<&String> = records
        .iter()
        .filter(|record| !exprs.iter().any(|expr| mentions(expr, record)))
        .collect();
    assert!(
        untested_records.is_empty(),
        "recording rules of {RULES} in no promql_expr_test of {TESTS}: {untested_records:?}"
    );
    let untested_alerts: Vec<&String> = alerts
        .iter()
        .filter(|alert| !alertnames.contains(*alert))
        .collect();
    assert!(
        untested_alerts.is_empty(),
        "alerts of {RULES} in no alert_rule_test of {TESTS}: {untested_alerts:?}"
    );
    let unknown: Vec<&String> = alertnames
        .iter()
        .filter(|name| !alerts.contains(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "{TESTS} tests alerts that {RULES} does not define: {unknown:?}"
    );

    // An alert may have several rules (StaleGcLog: one per `reason`, each
    // with its own `for`); promtool's lint rejects two with the same labels.
    let duplicates: Vec<&String> = records
        .iter()
        .enumerate()
        .filter(|(i, name)| records.iter().take(*i).any(|n| n == *name))
        .map(|(_, name)| name)
        .collect();
    assert!(
        duplicates.is_empty(),
        "{RULES} defines these names twice: {duplicates:?}"
    );
}

#[test]
fn the_agents_alerts_have_prometheus_rules() {
    let (_, alerts) = rule_names(&read(RULES));
    for kind in RuleKind::ALL {
        assert!(
            alerts.iter().any(|alert| alert == kind.alertname()),
            "the agent's rule {} fires as {}, which {RULES} does not define",
            kind.config_name(),
            kind.alertname()
        );
    }
}

#[test]
fn the_line_scanner_reads_what_promtool_reads() {
    let (records, alerts) = rule_names(
        "groups:\n  - name: g\n    rules:\n      - record: a:b:c\n        expr: x\n      \
         - alert: Quoted # comment\n        expr: y\n      - alert: 'Other'\n        expr: z\n",
    );
    assert_eq!(records, ["a:b:c"]);
    assert_eq!(alerts, ["Quoted", "Other"]);

    let (alertnames, exprs) = tested(
        "tests:\n  - interval: 1m\n    input_series:\n      - series: 'x'\n        values: '1'\n    \
         alert_rule_test:\n      - eval_time: 1m\n        alertname: A\n    promql_expr_test:\n      \
         - expr: a:b:c > 0\n        eval_time: 1m\n  - interval: 1m\n    input_series:\n      \
         - series: 'alertname: B'\n",
    );
    assert_eq!(alertnames, BTreeSet::from(["A".to_string()]));
    assert_eq!(exprs, ["a:b:c > 0"]);

    let (_, exprs) = tested(
        "tests:\n  - interval: 1m\n    promql_expr_test:\n      - expr: |\n          sum(\n            \
         d:e:f\n          )\n        eval_time: 1m\n      - expr: g\n",
    );
    assert_eq!(exprs, [" sum( d:e:f )", "g"]);
    let (_, exprs) = tested(
        "tests:\n  - interval: 1m\n    promql_expr_test:\n      - eval_time: 1m\n        \
         expr: |\n          h:i:j\n        exp_samples: []\n",
    );
    assert_eq!(exprs, [" h:i:j"]);

    assert!(mentions("count(a:b:c != a:b:c)", "a:b:c"));
    assert!(mentions("a:b:c{x=\"1\"}", "a:b:c"));
    assert!(!mentions("a:b:c_offset1d", "a:b:c"));
    assert!(!mentions("x_a:b:c", "a:b:c"));
}

/// `pausewatch rules [--config FILE]`, its standard output.
fn pausewatch_rules(config: Option<&Path>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pausewatch"));
    command.arg("rules");
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let output = command.output().expect("run pausewatch rules");
    assert!(
        output.status.success(),
        "pausewatch rules: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// One source of truth: the shipped rule file is what `pausewatch rules`
/// prints for the default configuration, byte for byte.
#[test]
fn shipped_rules_are_the_output_of_pausewatch_rules_for_the_defaults() {
    assert!(
        pausewatch_rules(None) == read(RULES),
        "{RULES} is stale: regenerate it with `cargo run -- rules > {RULES}`"
    );
}

/// The agent configured with a 30 ms pause budget: the rules printed for that
/// configuration make Prometheus (promtool) fire PauseBudgetExceeded on a
/// 40 ms pause and not on a 25 ms one, with `source="prometheus"` and the
/// configured budget in its text.
#[test]
fn rules_for_a_configured_budget_fire_in_prometheus_at_that_budget() {
    let Some(promtool) = promtool_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pausewatch.toml");
    std::fs::write(&config, "[alerts.pause_budget]\nmax_pause = \"30ms\"\n").unwrap();
    let rules = pausewatch_rules(Some(&config));
    std::fs::write(dir.path().join("rules.yml"), &rules).unwrap();
    let series = r#"pausewatch_gc_pause_max_seconds{job="pausewatch",service="pricing",instance="h1:9464",log="/var/log/pricing/gc.log"}"#;
    let tests = format!(
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: '{series}'
        values: '0.025 0.04'
    alert_rule_test:
      - eval_time: 0m
        alertname: PauseBudgetExceeded
        exp_alerts: []
      - eval_time: 1m
        alertname: PauseBudgetExceeded
        exp_alerts:
          - exp_labels:
              severity: warning
              source: prometheus
              job: pausewatch
              service: pricing
              instance: h1:9464
              log: /var/log/pricing/gc.log
            exp_annotations:
              summary: "GC pause over the 30ms budget on h1:9464"
              description: "The longest GC pause of pricing on h1:9464 (/var/log/pricing/gc.log) in the last complete minute was 40ms, over the 30ms budget."
"#
    );
    std::fs::write(dir.path().join("tests.yml"), tests).unwrap();
    let dir_str = dir.path().to_str().unwrap();
    run_promtool(
        &promtool,
        &["check", "rules", &format!("{dir_str}/rules.yml")],
    );
    run_promtool(
        &promtool,
        &["test", "rules", &format!("{dir_str}/tests.yml")],
    );
}
