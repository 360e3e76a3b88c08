//! The man pages: `pausewatch man --dir` writes one page per subcommand
//! that `pausewatch --help` lists (the main page's SUBCOMMANDS section
//! names each as pausewatch-COMMAND(1)), and both packages install every
//! page the main page refers to.

use std::process::Command;

use crate::common;

/// The subcommands, as `pausewatch --help` lists them (the parser's own
/// answer, not the page generator's).
fn subcommands() -> Vec<String> {
    let help = common::run_stdout(common::PAUSEWATCH, &["--help"]);
    help.split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The pages `pausewatch man --dir` writes.
fn man_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(common::PAUSEWATCH)
        .args(["man", "--dir"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

#[test]
fn every_subcommand_has_a_page_and_both_packages_ship_it() {
    let dir = man_dir();
    let commands = subcommands();
    assert!(commands.len() >= 8, "{commands:?}");
    let cargo = std::fs::read_to_string(common::root().join("Cargo.toml")).unwrap();
    let main_page = common::run_stdout(common::PAUSEWATCH, &["man"]);
    for command in &commands {
        let name = format!("pausewatch-{command}");
        let page = std::fs::read_to_string(dir.path().join(format!("{name}.1")))
            .unwrap_or_else(|e| panic!("{name}.1: {e}"));
        assert!(page.contains(&format!(".TH {name} 1")), "{page}");
        assert!(page.contains(".SH SYNOPSIS"), "{name}");
        let reference = format!("{}(1)", name.replace('-', "\\-"));
        assert!(
            main_page.contains(&reference),
            "the main page does not name {reference}"
        );
        let file = format!("target/release/generated/{name}.1.gz");
        assert_eq!(
            cargo.matches(&file).count(),
            2,
            "{file}: one .deb and one .rpm asset"
        );
    }
    // Every page the main page names exists: none is left dangling.
    for reference in main_page.split("pausewatch\\-").skip(1) {
        let Some(name) = reference
            .split("(1)")
            .next()
            .filter(|n| !n.contains(char::is_whitespace))
        else {
            continue;
        };
        let name = name.replace("\\-", "-");
        assert!(
            commands.contains(&name),
            "pausewatch-{name}(1) is named but not a page"
        );
    }
    assert!(std::fs::metadata(dir.path().join("pausewatch.1")).is_ok());
}

/// roff as a reader sees it: font changes dropped, `\-` a minus.
fn unroff(page: &str) -> String {
    page.replace("\\fB", "")
        .replace("\\fR", "")
        .replace("\\-", "-")
        .replace("\\e", "\\")
}

/// pausewatch.toml(5) lists the configuration keys with their defaults,
/// the main page has files, signals, exit status and environment and
/// points to it, and both packages ship it (issue 22, 4).
#[test]
fn the_configuration_page_lists_every_key_with_its_default() {
    let dir = man_dir();
    let page = std::fs::read_to_string(dir.path().join("pausewatch.toml.5")).unwrap();
    assert!(page.starts_with(".TH pausewatch.toml 5 "), "{page}");
    let page = unroff(&page);
    // The example file sets every top-level key to its default.
    let example = std::fs::read_to_string(common::root().join("examples/pausewatch.toml")).unwrap();
    let top_level = example.split("\n[").next().unwrap();
    let settings: Vec<&str> = (top_level.lines())
        .filter(|line| !line.starts_with('#') && line.contains(" = "))
        .collect();
    assert!(settings.len() >= 8, "{settings:?}");
    for setting in settings {
        assert!(
            page.contains(&format!("\n{setting}\n")),
            "{setting} not in the page"
        );
    }
    // Keys of every section, with the defaults docs/configuration.md's tables give.
    for (table, setting) in [
        ("[[gc_log]]", "max_line_bytes = 65536"),
        ("[[access_log]]", "offset = \"0ms\""),
        ("[correlation]", "affected_share = 0.25"),
        ("[discovery]", "interval = \"10s\""),
        ("[runtime_stats]", "interval = \"200ms\""),
        ("[alerts]", "resend_interval = \"1m\""),
        ("[alerts.pause_regression]", "ratio = 1.5"),
        ("[alerts.heap_pressure]", "for = \"5m\""),
        ("[otlp]", "protocol = \"http/protobuf\""),
    ] {
        let section = page.split(&format!(".SS {table}\n")).nth(1).expect(table);
        let section = section.split(".SS ").next().unwrap();
        assert!(
            section.contains(&format!("\n{setting}\n")),
            "{table} {setting}"
        );
    }

    let main_page = std::fs::read_to_string(dir.path().join("pausewatch.1")).unwrap();
    assert_eq!(main_page, common::run_stdout(common::PAUSEWATCH, &["man"]));
    for section in ["FILES", "SIGNALS", "EXIT STATUS", "ENVIRONMENT"] {
        assert!(
            main_page.contains(&format!("\n.SH {section}\n")),
            "{section}"
        );
    }
    assert!(main_page.contains("pausewatch.toml\\fR(5)"));
    let shipped =
        std::fs::read_to_string(common::root().join("packaging/pausewatch.toml")).unwrap();
    assert!(shipped.contains("`man 5 pausewatch.toml`"), "{shipped}");
    let cargo = std::fs::read_to_string(common::root().join("Cargo.toml")).unwrap();
    let file = "target/release/generated/pausewatch.toml.5.gz";
    assert_eq!(
        cargo.matches(file).count(),
        2,
        "one .deb and one .rpm asset"
    );
    let release =
        std::fs::read_to_string(common::root().join("packaging/release-files.sh")).unwrap();
    assert!(
        release.contains("\"$generated/man\"/*.5"),
        "release-files.sh gzips the page"
    );
}
