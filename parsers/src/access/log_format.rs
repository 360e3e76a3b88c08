//! An nginx `log_format` or Apache `LogFormat` string compiled into a matcher,
//! so that any layout those servers write can be read, as GoAccess and Vector
//! read them: the user pastes the format string from the server's
//! configuration instead of describing it with a regex.
//!
//! The string becomes an anchored regex. The one time variable and the one
//! duration variable pausewatch reads get patterns of their own shape (digits,
//! a Common Log Format date, ...); every other variable matches up to the
//! literal character that follows it, skipping backslash escapes (`\"` in
//! Apache's `%r`, `\x22` in nginx's).

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::fields::{
    clf, epoch, request, rfc3339, scaled_decimal, DurationUnit, Request, TimestampMeaning,
};

/// The server whose format-string syntax a custom format is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Server {
    /// `ngx_http_log_module`'s `log_format`: `$variable`, `${variable}`.
    Nginx,
    /// `mod_log_config`'s `LogFormat`: `%h`, `%>s`, `%{Referer}i`, `%{ms}T`.
    Apache,
}

impl Server {
    /// The time and duration variables this server's format must contain
    /// one of each of, for error messages.
    fn needs(self) -> (&'static str, &'static str) {
        match self {
            Server::Nginx => (
                "$msec, $time_iso8601 or $time_local",
                "$request_time or $upstream_response_time",
            ),
            Server::Apache => (
                "%t, %{sec}t, %{msec}t, %{usec}t or %{<strftime with %z>}t",
                "%D, %T, %{ms}T, %{us}T or %{s}T",
            ),
        }
    }
}

/// How the captured time is read.
#[derive(Debug, Clone, PartialEq)]
enum TimeKind {
    /// Time since the epoch in a unit `exponent` decimal places above
    /// nanoseconds (`$msec`, seconds: 9; `%{msec}t`, milliseconds: 6).
    Epoch(u32),
    Rfc3339,
    Clf,
    /// A chrono format holding an offset (Apache `%{...}t` runs).
    Strftime(String),
}

/// A duration variable: its unit, and whether it is a list to add up
/// (`$upstream_response_time` after retries: `0.010, 0.020 : 0.005`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct DurationKind {
    unit: DurationUnit,
    list: bool,
    /// The smallest step the server writes: nginx prints seconds with three
    /// decimals, Apache whole numbers of the unit.
    resolution: DurationUnit,
}

/// One piece of a format string.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(String),
    Time {
        kind: TimeKind,
        meaning: TimestampMeaning,
        /// Lower ranks are preferred when a format has several.
        rank: u8,
        pattern: String,
    },
    Duration {
        kind: DurationKind,
        rank: u8,
        pattern: String,
    },
    /// A variable pausewatch does not read; `fraction` marks Apache's
    /// `%{msec_frac}t`/`%{usec_frac}t`, which join a neighbouring time.
    Other {
        fraction: Option<u8>,
    },
}

/// A compiled custom format: the regex and how to read its two groups.
#[derive(Debug, Clone)]
pub(crate) struct CompiledLogFormat {
    regex: Regex,
    time: TimeKind,
    meaning: TimestampMeaning,
    duration: DurationKind,
}

const DIGITS: &str = r"[0-9]+";
const DECIMAL: &str = r"[0-9]+(?:\.[0-9]+)?";
const CLF_DATE: &str =
    r"[0-9]{2}/[A-Za-z]{3}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)? [+-][0-9]{4}";
const ISO8601: &str = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})";

impl CompiledLogFormat {
    /// The resolution of the duration variable the format is read by.
    pub(crate) fn resolution(&self) -> DurationUnit {
        self.duration.resolution
    }

    /// Compiles `format`; the error names the variable that is missing or
    /// the directive that cannot be read.
    pub(crate) fn new(server: Server, format: &str) -> Result<CompiledLogFormat, String> {
        let tokens = match server {
            Server::Nginx => nginx_tokens(format),
            Server::Apache => merge_apache_times(apache_tokens(format)?)?,
        };
        let (time_needed, duration_needed) = server.needs();
        let time_at = best(&tokens, |t| match t {
            Token::Time { rank, .. } => Some(*rank),
            _ => None,
        })
        .ok_or_else(|| format!("the format has no time variable: it needs one of {time_needed}"))?;
        let duration_at = best(&tokens, |t| match t {
            Token::Duration { rank, .. } => Some(*rank),
            _ => None,
        })
        .ok_or_else(|| {
            format!("the format has no duration variable: it needs one of {duration_needed}")
        })?;
        let mut regex = String::from("^");
        let mut time = None;
        let mut duration = None;
        for (i, token) in tokens.iter().enumerate() {
            match token {
                Token::Literal(text) => regex.push_str(&regex::escape(text)),
                Token::Time {
                    kind,
                    meaning,
                    pattern,
                    ..
                } if i == time_at => {
                    regex.push_str(&format!("(?P<t>{pattern})"));
                    time = Some((kind.clone(), *meaning));
                }
                Token::Duration { kind, pattern, .. } if i == duration_at => {
                    regex.push_str(&format!("(?P<d>{pattern})"));
                    duration = Some(*kind);
                }
                _ => regex.push_str(&until(tokens.get(i + 1))),
            }
        }
        regex.push('$');
        let (time, meaning) = time.expect("the time token was found above");
        let regex = Regex::new(&regex).map_err(|e| format!("the format does not compile: {e}"))?;
        Ok(CompiledLogFormat {
            regex,
            time,
            meaning,
            duration: duration.expect("the duration token was found above"),
        })
    }

    pub(crate) fn parse(&self, line: &str) -> Option<Request> {
        let captures = self.regex.captures(line)?;
        let stamp = captures.name("t")?.as_str();
        let at = match &self.time {
            TimeKind::Epoch(exponent) => epoch(scaled_decimal(stamp, *exponent)?)?,
            TimeKind::Rfc3339 => rfc3339(stamp)?,
            // Apache's `%t` prints its brackets.
            TimeKind::Clf => clf(stamp.trim_start_matches('[').trim_end_matches(']'))?,
            TimeKind::Strftime(format) => DateTime::parse_from_str(stamp, format)
                .ok()?
                .with_timezone(&Utc),
        };
        let text = captures.name("d")?.as_str();
        let exponent = self.duration.unit.nanos_exponent();
        let nanos = if self.duration.list {
            text.split([',', ':'])
                .map(|part| scaled_decimal(part, exponent))
                .try_fold(0i128, |sum, part| sum.checked_add(part?))?
        } else {
            scaled_decimal(text, exponent)?
        };
        request(at, self.meaning, nanos)
    }
}

/// Index of the token `rank` ranks best (lowest; the first on ties).
fn best(tokens: &[Token], rank: impl Fn(&Token) -> Option<u8>) -> Option<usize> {
    tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| rank(t).map(|r| (r, i)))
        .min()
        .map(|(_, i)| i)
}

/// A variable not read: anything up to the next literal's first character
/// (backslash escapes skipped), or lazily anything when no literal follows.
fn until(next: Option<&Token>) -> String {
    match next {
        Some(Token::Literal(text)) => {
            let stop = regex::escape(&text.chars().next().map(String::from).unwrap_or_default());
            format!(r"(?:[^{stop}\\]|\\.)*")
        }
        _ => ".*?".to_string(),
    }
}

/// Appends `c` to the literal at the end of `tokens`, or starts one.
fn push_literal(tokens: &mut Vec<Token>, c: char) {
    if let Some(Token::Literal(text)) = tokens.last_mut() {
        text.push(c);
    } else {
        tokens.push(Token::Literal(c.to_string()));
    }
}

fn nginx_tokens(format: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        let name_len = |s: &str| {
            s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len())
        };
        let after = &rest[1..];
        let (name, consumed) = if c != '$' {
            (None, c.len_utf8())
        } else if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (Some(&braced[..end]), end + 3),
                None => (None, 1),
            }
        } else {
            let len = name_len(after);
            ((len > 0).then(|| &after[..len]), len + 1)
        };
        match name {
            Some(name) => tokens.push(nginx_variable(name)),
            None => push_literal(&mut tokens, c),
        }
        rest = &rest[consumed..];
    }
    tokens
}

/// nginx takes every time variable at the log write, so they are ends
/// (<https://nginx.org/en/docs/http/ngx_http_log_module.html>).
fn nginx_variable(name: &str) -> Token {
    let time = |kind, rank, pattern: &str| Token::Time {
        kind,
        meaning: TimestampMeaning::End,
        rank,
        pattern: pattern.to_string(),
    };
    let seconds = |list, rank, pattern: &str| Token::Duration {
        kind: DurationKind {
            unit: DurationUnit::Seconds,
            list,
            resolution: DurationUnit::Milliseconds,
        },
        rank,
        pattern: pattern.to_string(),
    };
    match name {
        "msec" => time(TimeKind::Epoch(9), 0, DECIMAL),
        "time_iso8601" => time(TimeKind::Rfc3339, 1, ISO8601),
        "time_local" => time(TimeKind::Clf, 2, CLF_DATE),
        "request_time" => seconds(false, 0, DECIMAL),
        "upstream_response_time" => seconds(true, 1, &format!("{DECIMAL}(?:(?:, | : ){DECIMAL})*")),
        _ => Token::Other { fraction: None },
    }
}

/// Apache's `LogFormat` string, its C-style escapes (`\"`, `\t`) undone.
fn apache_tokens(format: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = match chars.next() {
                    Some('t') => '\t',
                    Some('n') => '\n',
                    Some(other) => other,
                    None => '\\',
                };
                push_literal(&mut tokens, escaped);
            }
            '%' if chars.peek() == Some(&'%') => {
                chars.next();
                push_literal(&mut tokens, '%');
            }
            '%' => {
                // Conditions and redirect modifiers: `%>s`, `%!200,304{Referer}i`.
                while chars
                    .peek()
                    .is_some_and(|c| matches!(c, '<' | '>' | '!' | ',') || c.is_ascii_digit())
                {
                    chars.next();
                }
                let mut argument = None;
                if chars.peek() == Some(&'{') {
                    chars.next();
                    let inside: String = chars.by_ref().take_while(|c| *c != '}').collect();
                    argument = Some(inside);
                }
                let letter = chars
                    .next()
                    .ok_or_else(|| format!("the format ends inside a directive: {format:?}"))?;
                tokens.push(apache_directive(argument.as_deref(), letter)?);
            }
            c => push_literal(&mut tokens, c),
        }
    }
    Ok(tokens)
}

fn apache_directive(argument: Option<&str>, letter: char) -> Result<Token, String> {
    let duration = |unit, rank| Token::Duration {
        kind: DurationKind {
            unit,
            list: false,
            resolution: unit,
        },
        rank,
        pattern: DIGITS.to_string(),
    };
    Ok(match (letter, argument) {
        ('D', None) => duration(DurationUnit::Microseconds, 0),
        ('T', Some("us")) => duration(DurationUnit::Microseconds, 0),
        ('T', Some("ms")) => duration(DurationUnit::Milliseconds, 1),
        ('T', None | Some("s")) => duration(DurationUnit::Seconds, 2),
        // `%t` is "the time the request was received" in brackets.
        ('t', None) => Token::Time {
            kind: TimeKind::Clf,
            meaning: TimestampMeaning::Start,
            rank: 2,
            pattern: format!(r"\[{CLF_DATE}\]"),
        },
        ('t', Some(argument)) => apache_time(argument)?,
        _ => Token::Other { fraction: None },
    })
}

/// `%{[begin:|end:]FORMAT}t`: `sec`, `msec`, `usec` since the epoch,
/// `msec_frac`/`usec_frac`, or a strftime format.
fn apache_time(argument: &str) -> Result<Token, String> {
    let (meaning, format) = if let Some(rest) = argument.strip_prefix("end:") {
        (TimestampMeaning::End, rest)
    } else {
        (
            TimestampMeaning::Start,
            argument.strip_prefix("begin:").unwrap_or(argument),
        )
    };
    let epoch = |exponent, rank| Token::Time {
        kind: TimeKind::Epoch(exponent),
        meaning,
        rank,
        pattern: DIGITS.to_string(),
    };
    Ok(match format {
        "sec" => epoch(9, 1),
        "msec" => epoch(6, 0),
        "usec" => epoch(3, 0),
        "msec_frac" => Token::Other { fraction: Some(3) },
        "usec_frac" => Token::Other { fraction: Some(6) },
        strftime => Token::Time {
            pattern: strftime_pattern(strftime)?,
            kind: TimeKind::Strftime(strftime.to_string()),
            meaning,
            rank: 1,
        },
    })
}

/// Joins a run of `%{...}t` pieces separated by short literals into one
/// time, as Apache's documented
/// `%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t` is meant to be read; a
/// strftime time must end up with its offset (`%z`).
fn merge_apache_times(tokens: Vec<Token>) -> Result<Vec<Token>, String> {
    let is_piece = |t: &Token| {
        matches!(
            t,
            Token::Time {
                kind: TimeKind::Strftime(_),
                ..
            } | Token::Other { fraction: Some(_) }
        )
    };
    let joiner =
        |t: &Token| matches!(t, Token::Literal(s) if s.len() <= 3 && !s.contains(['"', '[', ']']));
    let mut merged = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_piece(&tokens[i]) {
            merged.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end + 1 < tokens.len() && joiner(&tokens[end]) && is_piece(&tokens[end + 1]) {
            end += 2;
        }
        let run = &tokens[i..end];
        let mut format = String::new();
        let mut meaning = None;
        for token in run {
            match token {
                Token::Time {
                    kind: TimeKind::Strftime(piece),
                    meaning: m,
                    ..
                } => {
                    format.push_str(piece);
                    meaning.get_or_insert(*m);
                }
                Token::Other {
                    fraction: Some(digits),
                } => format.push_str(&format!("%{digits}f")),
                Token::Literal(text) => format.push_str(&text.replace('%', "%%")),
                _ => {}
            }
        }
        match meaning {
            // Only fractions: nothing to add them to.
            None => merged.extend(run.iter().cloned()),
            Some(meaning) => {
                if !(format.contains("%z") || format.contains("%:z")) {
                    return Err(format!(
                        "the time %{{{format}}}t has no UTC offset (%z): add %{{%z}}t after it, or use %t or %{{msec}}t"
                    ));
                }
                merged.push(Token::Time {
                    pattern: strftime_pattern(&format)?,
                    kind: TimeKind::Strftime(format),
                    meaning,
                    rank: 1,
                });
            }
        }
        i = end;
    }
    Ok(merged)
}

/// A regex for what strftime `format` prints.
fn strftime_pattern(format: &str) -> Result<String, String> {
    let mut pattern = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            pattern.push_str(&regex::escape(&c.to_string()));
            continue;
        }
        let mut spec = chars.next().unwrap_or('%');
        let mut width = None;
        if spec.is_ascii_digit() {
            width = spec.to_digit(10);
            spec = chars.next().unwrap_or('%');
        }
        if spec == ':' && chars.next() == Some('z') {
            pattern.push_str("[+-][0-9]{2}:[0-9]{2}");
            continue;
        }
        pattern.push_str(&match spec {
            'Y' => "[0-9]{4}".to_string(),
            'm' | 'd' | 'H' | 'M' | 'S' | 'y' | 'I' => "[0-9]{2}".to_string(),
            'e' => " ?[0-9]{1,2}".to_string(),
            'j' => "[0-9]{3}".to_string(),
            'b' | 'h' | 'a' => "[A-Za-z]{3}".to_string(),
            'B' | 'A' | 'p' | 'Z' => "[A-Za-z]+".to_string(),
            'z' => "[+-][0-9]{4}".to_string(),
            'T' => "[0-9]{2}:[0-9]{2}:[0-9]{2}".to_string(),
            'F' => "[0-9]{4}-[0-9]{2}-[0-9]{2}".to_string(),
            'f' => format!("[0-9]{{{}}}", width.unwrap_or(9)),
            's' => DIGITS.to_string(),
            '%' => "%".to_string(),
            other => {
                return Err(format!(
                    "the time format {format:?} uses %{other}, which pausewatch cannot read"
                ))
            }
        });
    }
    Ok(pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_which_variable_is_missing() {
        let e = CompiledLogFormat::new(Server::Nginx, "$remote_addr [$time_local] \"$request\"")
            .unwrap_err();
        assert!(e.contains("$request_time"), "{e}");
        let e = CompiledLogFormat::new(Server::Nginx, "$remote_addr $request_time").unwrap_err();
        assert!(e.contains("$msec"), "{e}");
        let e = CompiledLogFormat::new(Server::Apache, "%h %{%d/%b/%Y %T}t %D").unwrap_err();
        assert!(e.contains("%z"), "{e}");
        let e = CompiledLogFormat::new(Server::Apache, "%h %t \"%r\" %>s").unwrap_err();
        assert!(e.contains("%D"), "{e}");
    }

    #[test]
    fn strftime_runs_join_into_one_time() {
        let tokens = merge_apache_times(
            apache_tokens("[%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] %D").unwrap(),
        )
        .unwrap();
        assert!(matches!(
            &tokens[1],
            Token::Time { kind: TimeKind::Strftime(f), .. } if f == "%d/%b/%Y:%H:%M:%S.%3f %z"
        ));
    }
}
