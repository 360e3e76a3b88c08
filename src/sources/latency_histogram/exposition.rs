//! The Prometheus text format and OpenMetrics, read as far as one histogram's buckets.

use std::collections::{BTreeMap, BTreeSet};

use super::Buckets;

/// The cumulative counts of `<metric>_bucket`, summed per `le` over every
/// series whose labels match all `matchers`.
///
/// Reads the Prometheus text format 0.0.4 and OpenMetrics: `#` lines, label
/// values with escaped `\"`, `\\`, `\n` and commas, trailing commas (as
/// Micrometer writes them), `le="+Inf"`, `le="0.1"` and `le="1.0e-1"`,
/// timestamps and exemplars after the value, and quoted UTF-8 metric names
/// (`{"name_bucket", le="1"}`). A series with a NaN (or negative, or
/// infinite) count is left out. When the series have different bucket
/// layouts, each contributes at every bound the count of its largest bound at
/// or below it (a lower bound, which keeps the sum cumulative). A histogram
/// without a `+Inf` bucket is returned as found; [`quantile`] gives `None`
/// for it, as Prometheus gives NaN.
///
/// `Err` for a malformed `<metric>_bucket` line, a matcher on `le`, or when no
/// series matches.
pub fn parse_buckets(
    exposition: &str,
    metric: &str,
    matchers: &BTreeMap<String, String>,
) -> Result<Buckets, String> {
    if matchers.contains_key("le") {
        return Err("a matcher on `le` is not allowed: the buckets are the histogram".to_string());
    }
    let name = format!("{metric}_bucket");
    let quoted_name = format!("\"{}\"", escape(&name));
    // Series (labels without `le`, sorted) -> le -> count.
    let mut matching: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
    let mut all_series: BTreeSet<Labels> = BTreeSet::new();
    for (index, raw_line) in exposition.lines().enumerate() {
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let after_name = if let Some(rest) = line.strip_prefix(name.as_str()) {
            match rest.chars().next() {
                Some('{') | Some(' ') | Some('\t') => rest,
                _ => continue,
            }
        } else if line.starts_with('{') && line.contains(&quoted_name) {
            line
        } else {
            continue;
        };
        let sample = parse_bucket_sample(after_name, &name)
            .map_err(|e| format!("line {}: {e}: {line}", index + 1))?;
        let Some((labels, le, count)) = sample else {
            continue; // a quoted name that is not ours
        };
        all_series.insert(labels.clone());
        let matches = matchers.iter().all(|(key, wanted)| {
            labels
                .iter()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str())
                == wanted.as_str()
        });
        if !matches {
            continue;
        }
        let buckets = matching.entry(labels).or_default();
        match buckets.iter_mut().find(|(bound, _)| *bound == le) {
            Some(existing) => existing.1 = count,
            None => buckets.push((le, count)),
        }
    }
    if all_series.is_empty() {
        return Err(format!("no `{name}` samples in the exposition (is `{metric}` a histogram this endpoint exposes?)"));
    }
    if matching.is_empty() {
        return Err(format!(
            "{} series of `{name}`, but none matches {}",
            all_series.len(),
            format_matchers(matchers)
        ));
    }
    let found = matching.len();
    let series: Vec<Vec<(f64, f64)>> = matching
        .into_values()
        .filter(|buckets| {
            buckets
                .iter()
                .all(|(_, count)| count.is_finite() && *count >= 0.0)
        })
        .map(|mut buckets| {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            buckets
        })
        .collect();
    if series.is_empty() {
        return Err(format!(
            "all {found} series of `{name}` matching {} have NaN or invalid bucket counts",
            format_matchers(matchers)
        ));
    }
    let mut bounds: Vec<f64> = series.iter().flatten().map(|(le, _)| *le).collect();
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    let mut sums = vec![0.0; bounds.len()];
    for buckets in &series {
        let mut next = 0;
        let mut count = 0.0;
        for (bound, sum) in bounds.iter().zip(sums.iter_mut()) {
            while next < buckets.len() && buckets[next].0 <= *bound {
                count = buckets[next].1;
                next += 1;
            }
            *sum += count;
        }
    }
    Ok(bounds.into_iter().zip(sums).collect())
}

type Labels = Vec<(String, String)>;

/// Parses `{labels} value [timestamp] [# exemplar]` (or ` value ...`) of a
/// bucket sample into its labels without `le`, sorted, its bound and its
/// count. `Ok(None)` when the line names its metric inside the braces and it
/// is another metric.
fn parse_bucket_sample(text: &str, name: &str) -> Result<Option<(Labels, f64, f64)>, String> {
    let (mut labels, inner_name, rest) = if text.starts_with('{') {
        parse_labels(text)?
    } else {
        (Vec::new(), None, text)
    };
    if let Some(inner) = inner_name {
        if inner != name {
            return Ok(None);
        }
    }
    let value_text = rest
        .split_whitespace()
        .next()
        .ok_or_else(|| "missing sample value".to_string())?;
    let count =
        parse_number(value_text).ok_or_else(|| format!("invalid sample value `{value_text}`"))?;
    let le_index = labels
        .iter()
        .position(|(k, _)| k == "le")
        .ok_or_else(|| "bucket without an `le` label".to_string())?;
    let (_, le_text) = labels.remove(le_index);
    let le = parse_number(le_text.trim()).ok_or_else(|| format!("invalid le=\"{le_text}\""))?;
    if le.is_nan() || le == f64::NEG_INFINITY {
        return Err(format!("invalid le=\"{le_text}\""));
    }
    labels.sort();
    Ok(Some((labels, le, count)))
}

/// Go's `ParseFloat` forms that matter here: decimals, exponents, `+Inf`,
/// `-Inf`, `NaN` (Rust's parser takes these case-insensitively).
pub(crate) fn parse_number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}

/// Parses `{name="value", ...}` from the start of `text`; returns the labels,
/// a quoted metric name if the set holds one, and the text after `}`.
fn parse_labels(text: &str) -> Result<(Labels, Option<String>, &str), String> {
    let bytes = text.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        i
    };
    let mut labels = Vec::new();
    let mut metric_name = None;
    let mut i = 1;
    loop {
        i = skip_ws(i);
        match bytes.get(i) {
            None => return Err("unterminated label set".to_string()),
            Some(b'}') => return Ok((labels, metric_name, &text[i + 1..])),
            _ => {}
        }
        let name = if bytes[i] == b'"' {
            let (quoted, next) = parse_quoted(text, i)?;
            i = skip_ws(next);
            if bytes.get(i) != Some(&b'=') {
                if metric_name.is_some() {
                    return Err("two metric names in one label set".to_string());
                }
                metric_name = Some(quoted);
                match bytes.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => {}
                    _ => return Err(format!("expected `,` or `}}` at column {}", i + 1)),
                }
                continue;
            }
            quoted
        } else {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b':')
            {
                i += 1;
            }
            if start == i {
                return Err(format!("expected a label name at column {}", i + 1));
            }
            let name = text[start..i].to_string();
            i = skip_ws(i);
            name
        };
        if bytes.get(i) != Some(&b'=') {
            return Err(format!("expected `=` after label `{name}`"));
        }
        i = skip_ws(i + 1);
        if bytes.get(i) != Some(&b'"') {
            return Err(format!("expected a quoted value for label `{name}`"));
        }
        let (value, next) = parse_quoted(text, i)?;
        labels.push((name, value));
        i = skip_ws(next);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {}
            _ => return Err(format!("expected `,` or `}}` at column {}", i + 1)),
        }
    }
}

/// Parses the quoted string starting at `text[start] == '"'`; returns it
/// unescaped and the index after the closing quote.
fn parse_quoted(text: &str, start: usize) -> Result<(String, usize), String> {
    let mut value = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            '"' => return Ok((value, start + 1 + offset + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => value.push('\n'),
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => break,
            },
            c => value.push(c),
        }
    }
    Err("unterminated quoted string".to_string())
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(super) fn format_matchers(matchers: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = matchers
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}
