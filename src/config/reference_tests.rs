//! The key reference against the parser itself.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;
use crate::config::alerts::RawAlerts;
use crate::config::{parse_with_env, Config, ConfigError};
use crate::model::alerts::RuleKind;

/// Parses without the environment, which `[otlp]` would read.
fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_with_env(text, Path::new("/etc/pausewatch.toml"), &|_| None)
}

const GC: &str = "[[gc_log]]\npath = \"/var/log/app/gc.log\"\n";

/// The smallest valid file that opens `section`, so that a key written
/// after it belongs to that table.
fn base(section: &str) -> String {
    match section {
        "" => String::new(),
        "gc_log" => GC.to_string(),
        "access_log" => {
            format!("{GC}[[access_log]]\npath = \"/var/log/app/access.log\"\nformat = \"nginx\"\n")
        }
        "latency_histogram" => {
            format!("{GC}[[latency_histogram]]\nurl = \"http://127.0.0.1:8080/metrics\"\n")
        }
        "discovery.rule" => {
            "[[discovery.rule]]\nmatch = \"x\"\nlabels = { service = \"x\" }\n".into()
        }
        "alerts.alertmanager" => {
            "[alerts]\nalertmanager_url = \"http://127.0.0.1:9093\"\n[alerts.alertmanager]\n".into()
        }
        section => format!("[{section}]\n"),
    }
}

/// The sections a rule's keys are in: `alerts.RULE` stands for each rule
/// without a row of its own for that key.
fn rule_sections(section: &str, name: &str) -> Vec<String> {
    if section != "alerts.RULE" {
        return vec![section.to_string()];
    }
    (RuleKind::ALL.iter())
        .map(|kind| format!("alerts.{}", kind.config_name()))
        .filter(|own| !keys().iter().any(|k| k.section == own && k.name == name))
        .collect()
}

#[test]
fn each_documented_default_is_the_default() {
    let mut checked = 0;
    for key in keys() {
        let KeyDefault::Value(value) = key.default else {
            continue;
        };
        for section in rule_sections(key.section, key.name) {
            let without = base(&section);
            let with = format!("{without}{} = {value}\n", key.name);
            let expected = parse(&without).unwrap_or_else(|e| panic!("{without}: {e}"));
            let got = parse(&with).unwrap_or_else(|e| panic!("{with}: {e}"));
            assert_eq!(
                got, expected,
                "[{section}] {} = {value} is not the default",
                key.name
            );
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked}");
}

/// The keys a table accepts, from the parser's answer to an unknown one.
fn accepted(section: &str) -> BTreeSet<String> {
    let text = format!("{}no_such_key = 1\n", base(section));
    listed(&parse(&text).unwrap_err().message)
}

/// The names an unknown-key message lists after `expected`.
fn listed(message: &str) -> BTreeSet<String> {
    let list = message.split_once("expected ").expect(message).1;
    let list = list
        .split(" or a rule:")
        .next()
        .unwrap()
        .replace("one of ", "");
    (list.split(", ").flat_map(|item| item.split(" or ")))
        .map(|name| name.trim().trim_matches('`').to_string())
        .collect()
}

/// Each rule's own keys, and as `alerts.RULE` those every rule takes: the
/// fields of the rule's serde struct, from serde's own answer to an unknown
/// key (the parser words it without the list).
fn rule_keys() -> BTreeSet<(String, String)> {
    let per_rule: Vec<(String, BTreeSet<String>)> = (RuleKind::ALL.iter())
        .map(|kind| {
            let text = format!("[{}]\nno_such_key = 1\n", kind.config_name());
            let e = toml::from_str::<RawAlerts>(&text).err().expect(&text);
            (
                format!("alerts.{}", kind.config_name()),
                listed(e.message()),
            )
        })
        .collect();
    let every = (per_rule.iter().map(|(_, keys)| keys.clone()))
        .reduce(|a, b| &a & &b)
        .unwrap_or_default();
    let own = per_rule.into_iter().flat_map(|(section, keys)| {
        let own: Vec<String> = keys.difference(&every).cloned().collect();
        own.into_iter().map(move |k| (section.clone(), k))
    });
    (every.iter().map(|k| ("alerts.RULE".to_string(), k.clone())))
        .chain(own)
        .collect()
}

#[test]
fn every_key_the_parser_accepts_is_documented_and_no_other() {
    let mut parser_keys = rule_keys();
    assert!(parser_keys.len() > 15, "{parser_keys:?}");
    for (section, _) in SECTIONS.iter().filter(|(s, _)| !s.starts_with("alerts.")) {
        // A table's name is its section, not a key.
        let tables = accepted(section).into_iter().filter(|name| {
            let path = if section.is_empty() {
                name.clone()
            } else {
                format!("{section}.{name}")
            };
            !SECTIONS.iter().any(|(s, _)| *s == path) || *section == "alerts"
        });
        for name in tables {
            parser_keys.insert((section.to_string(), name));
        }
    }
    for section in [
        "alerts.alertmanager",
        "alerts.canary_pause",
        "alerts.canary_tail",
    ] {
        for name in accepted(section) {
            parser_keys.insert((section.to_string(), name));
        }
    }
    // A rule's own default for a key every rule has (`for`) is no other key.
    let generic = |k: &&Key| {
        (RuleKind::ALL.iter()).any(|kind| k.section == format!("alerts.{}", kind.config_name()))
            && parser_keys.contains(&("alerts.RULE".to_string(), k.name.to_string()))
            && k.section != "alerts.RULE"
    };
    let documented: BTreeSet<(String, String)> = (keys().iter())
        .filter(|k| !generic(k))
        .map(|k| (k.section.to_string(), k.name.to_string()))
        .collect();
    let missing: Vec<_> = parser_keys.difference(&documented).collect();
    assert!(missing.is_empty(), "not documented: {missing:?}");
    let stale: Vec<_> = documented.difference(&parser_keys).collect();
    assert!(stale.is_empty(), "not accepted: {stale:?}");
    for key in keys() {
        assert!(SECTIONS.iter().any(|(s, _)| *s == key.section), "{key:?}");
    }
}

/// A field without a `Default:` paragraph is a table with a section of its
/// own, and each key has a meaning, a one-line default and one entry.
#[test]
fn every_field_is_a_documented_key_or_a_table_with_a_section() {
    let rules: Vec<&str> = RULE_TABLES.iter().map(|(section, _)| *section).collect();
    for &(section, table) in TABLES.iter().chain(RULE_TABLES) {
        for (name, doc) in table.iter() {
            let Some(key) = key(section, name, doc) else {
                let path = [section, name].join(".");
                let path = path.trim_start_matches('.');
                assert!(
                    SECTIONS.iter().any(|(s, _)| *s == path) || rules.contains(&path),
                    "[{section}] {name}: no `Default:` paragraph, and no section {path}"
                );
                continue;
            };
            let (KeyDefault::Value(default) | KeyDefault::Note(default)) = key.default;
            assert!(
                !key.meaning.is_empty() && !default.is_empty() && !default.contains('\n'),
                "[{section}] {name}: {doc:?}"
            );
        }
    }
    let keys = keys();
    let entries: BTreeSet<(&str, &str)> = keys.iter().map(|k| (k.section, k.name)).collect();
    assert_eq!(entries.len(), keys.len(), "a key listed twice");
}

/// The user guide (docs/) names every key the page lists, so a key added
/// to the parser with its doc comment is also explained where users read
/// first.
#[test]
fn the_guide_names_every_key() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let guide: String = (std::fs::read_dir(&docs).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let missing: Vec<String> = (keys().into_iter())
        .filter(|key| {
            let word = regex::Regex::new(&format!(r"\b{}\b", key.name)).unwrap();
            !word.is_match(&guide)
        })
        .map(|key| format!("[{}] {}", key.section, key.name))
        .collect();
    assert!(missing.is_empty(), "not in docs/*.md: {missing:?}");
}
