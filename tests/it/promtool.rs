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
//!   Prometheus rule of the same name. Both files are parsed as YAML
//!   (serde_yaml_ng) into the fields promtool reads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pausewatch::model::alerts::RuleKind;
use serde::Deserialize;

use crate::common;

const RULES: &str = "dashboards/prometheus/pausewatch-rules.yml";
const TESTS: &str = "dashboards/prometheus/pausewatch-rules.test.yml";

fn read(relative: &str) -> String {
    let path = common::root().join(relative);
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
        .current_dir(common::root())
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

/// A Prometheus rule file, as `promtool check rules` reads it (other keys
/// ignored).
#[derive(Deserialize)]
struct RuleFile {
    groups: Vec<RuleGroup>,
}

#[derive(Deserialize)]
struct RuleGroup {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
struct Rule {
    record: Option<String>,
    alert: Option<String>,
}

/// A promtool unit-test file: the alert names and expressions it tests.
#[derive(Deserialize)]
struct TestFile {
    tests: Vec<TestGroup>,
}

#[derive(Deserialize)]
struct TestGroup {
    #[serde(default)]
    alert_rule_test: Vec<AlertTest>,
    #[serde(default)]
    promql_expr_test: Vec<ExprTest>,
}

#[derive(Deserialize)]
struct AlertTest {
    alertname: String,
}

#[derive(Deserialize)]
struct ExprTest {
    expr: String,
}

/// Record and alert names of the rules file, in file order.
fn rule_names(rules: &str) -> (Vec<String>, Vec<String>) {
    let file: RuleFile = serde_yaml_ng::from_str(rules).expect("the rule file is YAML");
    let rules = file.groups.into_iter().flat_map(|group| group.rules);
    let (mut records, mut alerts) = (Vec::new(), Vec::new());
    for rule in rules {
        match (rule.record, rule.alert) {
            (Some(record), None) => records.push(record),
            (None, Some(alert)) => alerts.push(alert),
            (record, alert) => panic!("a rule needs one of record and alert: {record:?} {alert:?}"),
        }
    }
    (records, alerts)
}

/// The `alertname`s of the `alert_rule_test`s and the `expr`s of the
/// `promql_expr_test`s of the test file.
fn tested(tests: &str) -> (BTreeSet<String>, Vec<String>) {
    let file: TestFile = serde_yaml_ng::from_str(tests).expect("the test file is YAML");
    let (mut alertnames, mut exprs) = (BTreeSet::new(), Vec::new());
    for group in file.tests {
        alertnames.extend(group.alert_rule_test.into_iter().map(|test| test.alertname));
        exprs.extend(group.promql_expr_test.into_iter().map(|test| test.expr));
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

    assert_none(
        &records,
        |record| !exprs.iter().any(|expr| mentions(expr, record)),
        &format!("recording rules of {RULES} in no promql_expr_test of {TESTS}"),
    );
    assert_none(
        &alerts,
        |alert| !alertnames.contains(alert),
        &format!("alerts of {RULES} in no alert_rule_test of {TESTS}"),
    );
    assert_none(
        &alertnames,
        |name| !alerts.contains(name),
        &format!("{TESTS} tests alerts that {RULES} does not define"),
    );

    // An alert may have several rules (StaleGcLog: one per `reason`, each
    // with its own `for`); promtool's lint rejects two with the same labels.
    let twice: Vec<&String> = records
        .iter()
        .enumerate()
        .filter(|(i, name)| records.iter().take(*i).any(|n| n == *name))
        .map(|(_, name)| name)
        .collect();
    assert!(
        twice.is_empty(),
        "{RULES} defines these names twice: {twice:?}"
    );
}

/// Fails with `what` and the names of `names` for which `wrong` holds.
fn assert_none<'a>(
    names: impl IntoIterator<Item = &'a String>,
    wrong: impl Fn(&String) -> bool,
    what: &str,
) {
    let found: Vec<&String> = names.into_iter().filter(|name| wrong(name)).collect();
    assert!(found.is_empty(), "{what}: {found:?}");
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
fn a_name_is_mentioned_whole() {
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

/// A directory holding `rules.yml`, `pausewatch rules` for `config` (the
/// text of a configuration file), and the rules.
fn rules_for(config: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_file(dir.path(), "pausewatch.toml", config);
    let rules = pausewatch_rules(Some(&path));
    std::fs::write(dir.path().join("rules.yml"), &rules).unwrap();
    (dir, rules)
}

/// `promtool check rules` on `dir/rules.yml`, then `promtool test rules` on
/// a file of `groups` (items of its `tests:`, see [`test_group`]) evaluated
/// every minute against `rules.yml`, written to `dir/tests.yml`.
fn check_and_test(promtool: &Path, dir: &Path, groups: &[String]) {
    let tests = format!(
        "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n{}",
        groups.concat()
    );
    std::fs::write(dir.join("tests.yml"), tests).unwrap();
    let dir = dir.to_str().unwrap();
    run_promtool(promtool, &["check", "rules", &format!("{dir}/rules.yml")]);
    run_promtool(promtool, &["test", "rules", &format!("{dir}/tests.yml")]);
}

/// One item of a promtool test file's `tests:`: `inputs` (made by
/// [`input`]) sampled every minute, and `alert_rule_test`'s items (YAML
/// indented by six spaces).
fn test_group(inputs: &[String], alert_rule_test: &str) -> String {
    format!(
        "  - interval: 1m\n    input_series:\n{}    alert_rule_test:\n{alert_rule_test}",
        inputs.concat()
    )
}

/// One item of `input_series`: a series and its values (promtool's notation).
fn input(series: &str, values: &str) -> String {
    format!("      - series: '{series}'\n        values: '{values}'\n")
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
    let (dir, _) = rules_for("[alerts.pause_budget]\nmax_pause = \"30ms\"\n");
    let series = r#"pausewatch_gc_pause_max_seconds{job="pausewatch",service="pricing",instance="h1:9464",log="/var/log/pricing/gc.log"}"#;
    let alert_rule_test = r#"      - eval_time: 0m
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
"#;
    let group = test_group(&[input(series, "0.025 0.04")], alert_rule_test);
    check_and_test(&promtool, dir.path(), &[group]);
}

/// `[alerts.canary_pause]` with a 1-minute window, a 2-minute `for`, a ratio
/// of 2, a 50 ms floor and 4 instances, and `[alerts.canary_tail]` disabled:
/// in Prometheus (promtool) a canary at 100 ms among three peers at 20 ms
/// fires after 2 minutes, not before, and no peer does; with only three
/// instances nothing fires; the tail rule is not in the file, and the
/// records carry the configured window.
#[test]
fn canary_rules_follow_their_configuration_in_prometheus() {
    let Some(promtool) = promtool_or_skip() else {
        return;
    };
    let (dir, rules) = rules_for(
        "[alerts.canary_pause]\nwindow = \"2m\"\nfor = \"2m\"\nratio = 2\nmin_pause = \"50ms\"\nmin_instances = 4\n[alerts.canary_tail]\nenabled = false\n",
    );
    assert!(!rules.contains("alert: CanaryTailRegression"), "{rules}");
    assert!(
        rules.contains(
            "record: service_instance:pausewatch_gc_pause_max_seconds:ratio_to_others_median2m"
        ),
        "{rules}"
    );
    let series = |instance: &str, value: &str| {
        input(
            &format!("pausewatch_gc_pause_max_seconds{{job=\"pausewatch\",service=\"pricing\",instance=\"{instance}\",log=\"/var/log/gc.log\"}}"),
            &format!("{value}x5"),
        )
    };
    let inputs = [
        series("h1:9464", "0.1"),
        series("h2:9464", "0.02"),
        series("h3:9464", "0.02"),
        series("h4:9464", "0.02"),
    ];
    let four = r#"      - eval_time: 1m
        alertname: CanaryPauseRegression
        exp_alerts: []
      - eval_time: 3m
        alertname: CanaryPauseRegression
        exp_alerts:
          - exp_labels:
              severity: warning
              source: prometheus
              service: pricing
              instance: h1:9464
            exp_annotations:
              summary: "h1:9464 pauses longer than the rest of pricing"
              description: "For 2 minutes the longest GC pause of h1:9464 (100ms over 2 minutes) has been more than 2 times the median of the other instances of pricing: now 5.00 times."
"#;
    let three = r#"      - eval_time: 4m
        alertname: CanaryPauseRegression
        exp_alerts: []
"#;
    let groups = [test_group(&inputs, four), test_group(&inputs[..3], three)];
    check_and_test(&promtool, dir.path(), &groups);
}
