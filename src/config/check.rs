//! Every error of a configuration file in one run, in file order, for
//! `check-config`: serde stops at the first error it meets, which need not
//! be the first in the file, so each top-level key and each `[[...]]` entry
//! is also read and checked alone.

use std::path::Path;

use serde::Deserialize;
use toml::de::{DeArray, DeString, DeTable, DeValue};
use toml::Spanned;

use super::{otlp, ConfigError, Ctx, RawConfig};

/// The sources whose checks need the `[[gc_log]]` entries they name.
const NAMING_GC_LOGS: &[&str] = &["access_log", "latency_histogram"];

/// The configuration in `text`, or every error found in it, in file order.
pub(super) fn check(
    text: &str,
    origin: &Path,
    env: otlp::Env,
) -> Result<super::Config, Vec<ConfigError>> {
    let first = match super::parse_with_env(text, origin, env) {
        Ok(config) => return Ok(config),
        Err(first) => first,
    };
    let ctx = Ctx { text, origin };
    let mut errors = match DeTable::parse(text) {
        Ok(root) => one_by_one(&ctx, root, env),
        // A syntax error: nothing after it can be read.
        Err(_) => Vec::new(),
    };
    // Also the error only the whole file has (two keys that disagree).
    errors.push(first);
    errors.sort_by(|a, b| (a.line, &a.key, &a.message).cmp(&(b.line, &b.key, &b.message)));
    errors.dedup();
    Err(errors)
}

/// The errors of each part of `root` read alone: a top-level key, or one
/// entry of an array of tables (beside the `[[gc_log]]` entries, those with
/// an error by their path alone, for an entry that names one).
fn one_by_one(ctx: &Ctx<'_>, root: Spanned<DeTable<'_>>, env: otlp::Env) -> Vec<ConfigError> {
    let span = root.span();
    let root = root.into_inner();
    let read_alone = |parts: Vec<(&Spanned<DeString<'_>>, Spanned<DeValue<'_>>)>| {
        let alone: DeTable<'_> = parts
            .into_iter()
            .map(|(key, value)| (key.clone(), value))
            .collect();
        let deserializer = toml::de::Deserializer::from(Spanned::new(span.clone(), alone));
        RawConfig::deserialize(deserializer)
            .map_err(|error| ctx.toml_error(&error))
            .and_then(|raw| ctx.validate(raw, env))
            .err()
    };
    let mut errors = Vec::new();
    let mut gc_logs: Vec<Spanned<DeValue<'_>>> = Vec::new();
    let mut gc_log_key = None;
    let mut naming = Vec::new();
    for (key, value) in &root {
        for part in entries(value) {
            if NAMING_GC_LOGS.contains(&key.get_ref().as_ref()) {
                naming.push((key, part));
                continue;
            }
            let error = read_alone(vec![(key, part.clone())]);
            if key.get_ref() == "gc_log" {
                gc_log_key = Some(key);
                // An entry with an error still names its log, by its path.
                let entry = match error {
                    None => array_items(part),
                    Some(_) => array_items(part)
                        .into_iter()
                        .filter_map(path_only)
                        .collect(),
                };
                gc_logs.extend(entry);
            }
            errors.extend(error);
        }
    }
    for (key, part) in naming {
        let mut parts = vec![(key, part)];
        if let Some(gc_log) = gc_log_key {
            let span = gc_logs.first().map_or(0..0, Spanned::span);
            let entries: DeArray<'_> = gc_logs.iter().cloned().collect();
            parts.push((gc_log, Spanned::new(span, DeValue::Array(entries))));
        }
        errors.extend(read_alone(parts));
    }
    errors
}

/// A `[[gc_log]]` entry reduced to its `path`, when that is a string.
fn path_only(entry: Spanned<DeValue<'_>>) -> Option<Spanned<DeValue<'_>>> {
    let span = entry.span();
    let DeValue::Table(table) = entry.into_inner() else {
        return None;
    };
    let (key, path) = table.into_iter().find(|(key, _)| key.get_ref() == "path")?;
    path.get_ref().is_str().then_some(())?;
    let only: DeTable<'_> = std::iter::once((key, path)).collect();
    Some(Spanned::new(span, DeValue::Table(only)))
}

/// The items of an array (an entry of an array of tables, as an array of one).
fn array_items<'i>(value: Spanned<DeValue<'i>>) -> Vec<Spanned<DeValue<'i>>> {
    match value.into_inner() {
        DeValue::Array(items) => items.into_iter().collect(),
        _ => Vec::new(),
    }
}

/// `value` alone, or each entry of an array of tables as an array of one.
fn entries<'i>(value: &Spanned<DeValue<'i>>) -> Vec<Spanned<DeValue<'i>>> {
    match value.get_ref() {
        DeValue::Array(items) if items.iter().all(|item| item.get_ref().is_table()) => items
            .iter()
            .map(|item| {
                let one: DeArray<'i> = std::iter::once(item.clone()).collect();
                Spanned::new(item.span(), DeValue::Array(one))
            })
            .collect(),
        _ => vec![value.clone()],
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{doc, FILE};
    use super::*;

    fn errors(lines: &[&str]) -> Vec<(Option<usize>, Option<String>)> {
        let errors = check(&doc(lines), Path::new(FILE), &|_| None).expect_err("invalid");
        errors.into_iter().map(|e| (e.line, e.key)).collect()
    }

    /// A bad `start_at` on line 3 was hidden by a bad duration on line 6;
    /// now both are reported, in file order, with the second entry's error
    /// and an access log naming no GC log.
    #[test]
    fn every_error_in_file_order() {
        let found = errors(&[
            "[[gc_log]]",
            "path = '/var/log/a/gc.log'",
            "start_at = 'middle'",
            "",
            "[discovery]",
            "interval = 'soon'",
            "",
            "[[gc_log]]",
            "path = '/var/log/b/gc.log'",
            "labels = { __bad = 'x' }",
            "",
            "[[access_log]]",
            "path = '/var/log/a/access.log'",
            "format = 'nginx'",
            "gc_log = '/var/log/c/gc.log'",
            "",
            "[[access_log]]",
            "path = '/var/log/b/access.log'",
            "format = 'nginx'",
            "gc_log = '/var/log/b/gc.log'",
        ]);
        let lines: Vec<Option<usize>> = found.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [Some(3), Some(6), Some(10), Some(15)], "{found:?}");
    }

    #[test]
    fn a_valid_file_has_no_errors() {
        let text = doc(&["[[gc_log]]", "path = '/var/log/a/gc.log'"]);
        assert!(check(&text, Path::new(FILE), &|_| None).is_ok());
    }
}
