//! The README against the program: its `analyze` and `compare` examples are
//! what the commands print, and its access-log formats are the ones the parser
//! documents and parses.

use std::path::Path;
use std::process::Command;

use pausewatch_parsers::AccessFormat;

mod common;

fn readme() -> String {
    std::fs::read_to_string(common::root().join("README.md")).unwrap()
}

/// Every preset's format, as the README tells users to configure it, is the
/// one the parser documents (and parses lines of, parsers/tests/log_formats.rs).
#[test]
fn the_readme_shows_each_presets_documented_format() {
    let readme = readme();
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
        assert!(readme.contains(&snippet), "README lacks {snippet}");
    }
}

/// Every README block that starts with `$ pausewatch analyze ...` or
/// `$ pausewatch compare ...` is that command's output: the whole of it, or
/// its first lines when the block ends in `...`. A comparison whose gate
/// fails exits 1, as documented.
#[test]
fn the_readme_analyze_examples_are_what_the_commands_print() {
    let readme = readme();
    let bin = Path::new(common::PAUSEWATCH).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut checked = 0;
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut open = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            open = !open;
            if open {
                blocks.push(Vec::new());
            }
        } else if open {
            blocks.last_mut().expect("a block is open").push(line);
        }
    }
    for block in blocks {
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
            "{command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed = String::from_utf8(output.stdout).unwrap();
        let shown = &block[1..];
        let printed: Vec<&str> = printed.lines().collect();
        match shown.iter().position(|l| *l == "...") {
            Some(cut) => assert_eq!(shown[..cut], printed[..cut.min(printed.len())], "{command}"),
            None => assert_eq!(shown, printed, "{command}"),
        }
        checked += 1;
    }
    assert!(checked >= 2, "README examples found: {checked}");
}

/// Every family the agent exports is in the README's metrics table, and
/// each one the OpenTelemetry conventions name is on the row of its
/// OpenTelemetry name.
#[test]
fn the_readme_names_every_family_for_both_exporters() {
    use pausewatch::export::catalog::CATALOG;
    let readme = readme();
    for family in CATALOG {
        let prometheus = format!("`{}`", family.name);
        assert!(readme.contains(&prometheus), "README lacks {prometheus}");
        if family.semconv.is_some() {
            let otel = format!("| `{}` | {prometheus} |", family.otel_name());
            assert!(readme.contains(&otel), "README lacks the row {otel}");
        }
    }
}
