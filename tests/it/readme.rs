//! The README and the user guide (`docs/*.md`) against the program: their
//! `analyze` and `compare` examples are what the commands print
//! (`docs/offline.md`), the access-log formats are the ones the parser
//! documents and parses (`docs/access-logs.md`), the OpenTelemetry names are
//! the catalog's (`docs/opentelemetry.md`), and the metric tables are what a
//! running agent exports (`docs/metrics.md`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pausewatch_parsers::AccessFormat;

use crate::common;

/// Every preset's format, as `docs/access-logs.md` tells users to configure
/// it, is the one the parser documents (and parses lines of,
/// parsers/tests/it/log_formats.rs).
#[test]
fn the_readme_shows_each_presets_documented_format() {
    let page = common::docs::page("docs/access-logs.md");
    let doc = |name| AccessFormat::documented(name).unwrap();
    let snippets = [
        format!("log_format pausewatch '{}';", doc("nginx")),
        format!("LogFormat \"{}\" pausewatch", doc("apache")),
        format!("pattern=\"{}\"", doc("tomcat").replace('"', "&quot;")),
        format!(
            "pattern=\"{}\"",
            doc("tomcat-begin-msec").replace('"', "&quot;")
        ),
        doc("envoy").to_string(),
        doc("envoy-json").to_string(),
    ];
    for snippet in snippets {
        assert!(
            page.contains(&snippet),
            "docs/access-logs.md lacks {snippet}"
        );
    }
}

/// Every block of the README or a page of `docs/` that starts with
/// `$ pausewatch analyze ...` or `$ pausewatch compare ...` is that command's
/// output, run from the repository's root: the whole of it, or its first
/// lines when the block ends in `...`. A comparison whose gate fails exits 1,
/// as documented.
#[test]
fn the_readme_analyze_examples_are_what_the_commands_print() {
    let pages = common::docs::pages();
    let bin = Path::new(common::PAUSEWATCH).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut checked = 0;
    let mut blocks: Vec<(&str, Vec<&str>)> = Vec::new();
    for (page, text) in &pages {
        let mut open = false;
        for line in text.lines() {
            if line.starts_with("```") {
                open = !open;
                if open {
                    blocks.push((page, Vec::new()));
                }
            } else if open {
                blocks.last_mut().expect("a block is open").1.push(line);
            }
        }
    }
    for (page, block) in blocks {
        let Some(command) = block.first().and_then(|l| l.strip_prefix("$ ")) else {
            continue;
        };
        if !command.starts_with("pausewatch analyze") && !command.starts_with("pausewatch compare")
        {
            continue;
        }
        let output = Command::new("sh")
            .args(["-c", command])
            .current_dir(common::root())
            .env("PATH", &path)
            .output()
            .unwrap();
        let gate_failed = command.contains("--fail-if") && output.status.code() == Some(1);
        assert!(
            output.status.success() || gate_failed,
            "{page}: {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed = String::from_utf8(output.stdout).unwrap();
        let shown = &block[1..];
        let printed: Vec<&str> = printed.lines().collect();
        match shown.iter().position(|l| *l == "...") {
            Some(cut) => assert_eq!(
                shown[..cut],
                printed[..cut.min(printed.len())],
                "{page}: {command}"
            ),
            None => assert_eq!(shown, printed, "{page}: {command}"),
        }
        checked += 1;
    }
    assert!(checked >= 2, "examples found: {checked}");
}

/// Each family the OpenTelemetry conventions name, or that is not named by
/// the rule, is on the row of its OpenTelemetry name in
/// `docs/opentelemetry.md`.
#[test]
fn the_readme_names_each_conventions_family_under_its_opentelemetry_name() {
    use pausewatch::export::catalog::CATALOG;
    let page = common::docs::page("docs/opentelemetry.md");
    let renamed = |family: &&pausewatch::export::catalog::Family| {
        pausewatch::export::catalog::OTEL_NAMES
            .iter()
            .any(|(name, _)| *name == family.name)
    };
    for family in CATALOG
        .iter()
        .filter(|family| family.semconv.is_some() || renamed(family))
    {
        let otel = format!("| `{}` | `{}` |", family.otel_name(), family.name);
        assert!(
            page.contains(&otel),
            "docs/opentelemetry.md lacks the row {otel}"
        );
    }
}

/// The metric tables of `docs/metrics.md` (its `## Metrics` section, to the
/// end of the page) against a real scrape: an agent following a
/// GC log a real JVM wrote (tests/fixtures/jvm) exports every family the
/// tables name, and the tables name every family it exports (the `# TYPE`
/// lines, which the agent writes for each family from its first scrape).
#[test]
fn the_readme_metric_tables_name_exactly_the_families_a_running_agent_exports() {
    let page = common::docs::page("docs/metrics.md");
    let tables = &page[page.find("\n## Metrics\n").expect("## Metrics")..];
    let documented: BTreeSet<&str> = tables
        .lines()
        .filter_map(|row| row.strip_prefix("| `"))
        .flat_map(|row| {
            let first_cell = row.split(" | ").next().unwrap_or("");
            first_cell.split(", ").map(|name| name.trim_matches('`'))
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let log = common::jvm_fixture("jdk17-g1-steady").join("gc.log");
    let port = common::free_port();
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
             [[gc_log]]\npath = {}\nstart_at = \"beginning\"\n",
            common::toml_string(&dir.path().join("checkpoint")),
            common::toml_string(&log),
        ),
    );
    // Read to the end: the fixture's pauses are all counted.
    let metrics = agent.metrics_when(Duration::from_secs(30), |m| {
        m.lines()
            .any(|l| l.starts_with("jvm_gc_pause_seconds_count{") && !l.ends_with(" 0"))
    });
    let exported: BTreeSet<String> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|line| match line.split_once(' ') {
            Some((name, "counter")) => format!("{name}_total"),
            Some((name, _)) => name.to_string(),
            None => panic!("bad TYPE line {line:?}"),
        })
        .collect();
    assert!(
        exported.len() >= 70,
        "{} families in:\n{metrics}",
        exported.len()
    );
    let undocumented: Vec<&String> = exported
        .iter()
        .filter(|name| !documented.contains(name.as_str()))
        .collect();
    assert!(
        undocumented.is_empty(),
        "exported, not in docs/metrics.md: {undocumented:?}"
    );
    let missing: Vec<&&str> = documented
        .iter()
        .filter(|name| !exported.contains(**name))
        .collect();
    assert!(
        missing.is_empty(),
        "in docs/metrics.md, not exported: {missing:?}"
    );
}
