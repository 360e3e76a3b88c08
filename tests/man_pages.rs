//! The man pages: `pausewatch man --dir` writes one page per subcommand
//! that `pausewatch --help` lists (the main page's SUBCOMMANDS section
//! names each as pausewatch-COMMAND(1)), and both packages install every
//! page the main page refers to.

use std::process::Command;

mod common;

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

#[test]
fn every_subcommand_has_a_page_and_both_packages_ship_it() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(common::PAUSEWATCH)
        .args(["man", "--dir"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
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
