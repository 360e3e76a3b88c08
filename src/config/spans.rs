//! From a toml span to the one-line `FILE:LINE: key K: message` error, and
//! the typed readers every section uses so its errors land on the value's line.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::{Spanned, Value};

use super::http_client::reworded_unknown_key;
use super::values;

/// A configuration error, located as precisely as the input allows.
///
/// Display is one line: `FILE:LINE: key KEY: MESSAGE`, dropping the parts
/// that are unknown, so editors and `grep` can jump to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The config file (the `origin` given to [`parse`](super::parse)).
    pub file: PathBuf,
    /// 1-based line of the offending key or token; `None` when the file could
    /// not be read at all.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `gc_log[0].labels.service` (indices 0-based).
    pub key: Option<String>,
    /// What is wrong, on one line.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

// ---------------------------------------------------------------------------
// Key paths.

#[derive(Clone, Debug)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

/// Renders a key path TOML-style: bare keys as is, others quoted.
pub(super) fn render_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    out.push_str(k);
                } else {
                    out.push_str(&format!("{k:?}"));
                }
            }
        }
    }
    out
}

pub(super) fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// One key/value of the parsed document with its spans, for mapping a serde
/// error's byte span back to a key path.
struct Entry {
    path: Vec<Seg>,
    key_span: Option<Range<usize>>,
    value_span: Range<usize>,
    is_table: bool,
}

fn flatten(value: &Spanned<DeValue<'_>>, path: &mut Vec<Seg>, out: &mut Vec<Entry>) {
    match value.get_ref() {
        DeValue::Table(table) => {
            for (k, v) in table.iter() {
                path.push(Seg::Key(k.get_ref().to_string()));
                out.push(Entry {
                    path: path.clone(),
                    key_span: Some(k.span()),
                    value_span: v.span(),
                    is_table: matches!(v.get_ref(), DeValue::Table(_)),
                });
                flatten(v, path, out);
                path.pop();
            }
        }
        DeValue::Array(array) => {
            for (i, v) in array.iter().enumerate() {
                path.push(Seg::Index(i));
                out.push(Entry {
                    path: path.clone(),
                    key_span: None,
                    value_span: v.span(),
                    is_table: matches!(v.get_ref(), DeValue::Table(_)),
                });
                flatten(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `pos` lies in `span`; empty spans count as covering their start.
fn covers(span: &Range<usize>, pos: usize) -> bool {
    span.start <= pos && pos < span.end.max(span.start + 1)
}

fn one_line(message: String) -> String {
    if message.contains('\n') {
        message.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        message
    }
}

// ---------------------------------------------------------------------------
// Locating errors.

/// The text being validated and the name its errors carry.
pub(super) struct Ctx<'a> {
    pub(super) text: &'a str,
    pub(super) origin: &'a Path,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub(super) fn err(
        &self,
        span: Range<usize>,
        path: &[Seg],
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            file: self.origin.to_path_buf(),
            line: Some(self.line_of(span.start)),
            key: Some(render_path(path)),
            message: one_line(message.into()),
        }
    }

    /// Converts a toml/serde error: line from its span, key from the span tree.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let span = e.span();
        let path = span.as_ref().and_then(|s| self.key_at(s, e.message()));
        let mut message = one_line(e.message().to_string());
        if let Some(reworded) = path
            .as_ref()
            .and_then(|p| reworded_unknown_key(p, &message))
        {
            message = reworded;
        }
        let key = path.as_deref().map(render_path);
        if key.as_deref() == Some("gc_log") && message.ends_with("expected a sequence") {
            // `[gc_log]` instead of `[[gc_log]]` is the likely slip.
            message.push_str("; write each source as a [[gc_log]] table (double brackets)");
        }
        ConfigError {
            file: self.origin.to_path_buf(),
            line: span.map(|s| self.line_of(s.start)),
            key,
            message,
        }
    }

    /// Best key path for an error at `span`. For data errors the document
    /// parses and the smallest key or value span covering the error wins. For
    /// syntax errors the recovered partial document is used, and only keys on
    /// the error's own line are trusted.
    fn key_at(&self, span: &Range<usize>, message: &str) -> Option<Vec<Seg>> {
        let (doc, errors) = DeTable::parse_recoverable(self.text);
        let root = Spanned::new(doc.span(), DeValue::Table(doc.into_inner()));
        let mut entries = Vec::new();
        flatten(&root, &mut Vec::new(), &mut entries);
        let pos = span.start;
        let smallest = |it: &mut dyn Iterator<Item = (&Entry, &Range<usize>)>| {
            it.min_by_key(|(e, s)| (s.end.saturating_sub(s.start), usize::MAX - e.path.len()))
                .map(|(e, _)| e.path.clone())
        };

        if errors.is_empty() {
            let mut hits = entries.iter().flat_map(|e| {
                e.key_span
                    .iter()
                    .chain(std::iter::once(&e.value_span))
                    .filter(|s| covers(s, pos))
                    .map(move |s| (e, s))
            });
            return smallest(&mut hits);
        }

        let line = self.line_of(pos);
        if message == "duplicate key" {
            // The repeated key is not in the recovered document: name it from
            // the error span, under the innermost table it was written in.
            let name = self.text.get(span.clone())?.trim().to_string();
            let inline = entries
                .iter()
                .filter(|e| e.is_table && covers(&e.value_span, pos))
                .min_by_key(|e| e.value_span.len());
            let header = entries
                .iter()
                .filter(|e| {
                    e.is_table
                        && e.value_span.start < pos
                        && self.text[e.value_span.clone()].starts_with('[')
                })
                .max_by_key(|e| (e.value_span.start, e.path.len()));
            let mut path = inline
                .or(header)
                .map(|e| e.path.clone())
                .unwrap_or_default();
            path.push(Seg::Key(
                name.trim_matches(|c| c == '"' || c == '\'').to_string(),
            ));
            return Some(path);
        }
        let on_line = |e: &&Entry| {
            e.key_span
                .as_ref()
                .is_some_and(|k| self.line_of(k.start) == line && k.start <= pos)
        };
        let mut in_value = entries
            .iter()
            .filter(on_line)
            .filter(|e| e.value_span.start <= pos && pos <= e.value_span.end)
            .map(|e| (e, &e.value_span));
        if let Some(found) = smallest(&mut in_value) {
            return Some(found);
        }
        entries
            .iter()
            .filter(on_line)
            .max_by_key(|e| e.key_span.as_ref().map(|k| k.start))
            .map(|e| e.path.clone())
    }

    /// The line of a nested key, found in the document's span tree (inner
    /// keys of a table read as a plain value have no span of their own).
    pub(super) fn span_of(&self, path: &[Seg], fallback: Range<usize>) -> Range<usize> {
        let (doc, _) = DeTable::parse_recoverable(self.text);
        let root = Spanned::new(doc.span(), DeValue::Table(doc.into_inner()));
        let mut entries = Vec::new();
        flatten(&root, &mut Vec::new(), &mut entries);
        let wanted = render_path(path);
        entries
            .iter()
            .find(|e| render_path(&e.path) == wanted)
            .and_then(|e| e.key_span.clone())
            .unwrap_or(fallback)
    }

    // -----------------------------------------------------------------------
    // For `[alerts]`, still read as a plain table: the checks of `values`,
    // their errors placed on the value's line.

    /// `check` of the value, its error located at the value.
    pub(super) fn value<'v, T>(
        &self,
        v: &'v Spanned<Value>,
        path: &[Seg],
        check: impl FnOnce(&'v Value) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        check(v.get_ref()).map_err(|message| self.err(v.span(), path, message))
    }

    /// A required key that is missing, reported on its `table`'s line.
    pub(super) fn missing(&self, table: Range<usize>, path: &[Seg], what: &str) -> ConfigError {
        self.err(
            table,
            path,
            format!(
                "missing required key `{}` ({what})",
                render_path(&path[path.len() - 1..])
            ),
        )
    }

    pub(super) fn type_err(&self, v: &Spanned<Value>, path: &[Seg], expected: &str) -> ConfigError {
        self.err(v.span(), path, values::expected(expected, v.get_ref()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::parse;
    use super::super::tests::{doc, parse_err, FILE};

    #[test]
    fn syntax_error() {
        let e = parse_err(
            &[
                "listen = '127.0.0.1:9464'",
                "",
                "[[gc_log]]",
                "path = '/x'",
                "poll = 250ms",
            ],
            5,
            "gc_log[0].poll",
        );
        assert!(e.message.contains("quoted"), "{e}");
        let e = parse_err(
            &["[[gc_log]]", "path = '/x'", "start_at = 'end' junk"],
            3,
            "gc_log[0].start_at",
        );
        assert!(e.message.contains("expected"), "{e}");
    }

    #[test]
    fn syntax_error_without_key() {
        let e = parse(
            &doc(&["listen = '127.0.0.1:1'", "[[gc_log]", "path = '/x'"]),
            Path::new(FILE),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.to_string().starts_with(&format!("{FILE}:2: ")), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn duplicate_key() {
        parse_err(
            &[
                "[[gc_log]]",
                "path = '/x'",
                "start_at = 'end'",
                "start_at = 'end'",
            ],
            4,
            "gc_log[0].start_at",
        );
        parse_err(&["history = '1h'", "history = '2h'"], 2, "history");
    }
}
