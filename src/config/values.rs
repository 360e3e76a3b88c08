//! The small types config values are read as. Each one's `Deserialize` checks
//! the value's type and range and words the error as the agent always has;
//! toml puts the error's span on the value (or the map key), from which
//! `spans` finds its line and key path. The checks are functions of the
//! `toml::Value` [`read`] hands them, so each type states its check once.

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

use chrono::{DateTime, Utc};
use pausewatch_parsers::{DurationUnit, TimeFormat, TimestampMeaning};
use regex::Regex;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Value;

use super::access_format::{
    parse_duration_unit, parse_signed_duration, parse_time_format, parse_timestamp_meaning,
};
use super::discovery::DISCOVERY_LABELS;
use super::{label_problem, LabelUse, MAX_MAX_LINE_BYTES, MIN_MAX_LINE_BYTES};
use crate::model::alerts::RegressionStatistic;

/// Reads one value and converts it with `check`, whose message is the error.
/// The check runs inside the visitor, so toml puts the value's own span on
/// the error (an item of an array too, not only the array).
pub(super) fn read<'de, D: Deserializer<'de>, T>(
    d: D,
    check: impl FnOnce(&Value) -> Result<T, String>,
) -> Result<T, D::Error> {
    d.deserialize_any(Check(check))
}

struct Check<F>(F);

impl<F> Check<F> {
    fn done<T, E: de::Error>(self, v: Value) -> Result<T, E>
    where
        F: FnOnce(&Value) -> Result<T, String>,
    {
        (self.0)(&v).map_err(E::custom)
    }
}

impl<'de, T, F: FnOnce(&Value) -> Result<T, String>> Visitor<'de> for Check<F> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a TOML value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<T, E> {
        self.done(Value::Boolean(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        self.done(Value::Integer(n))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<T, E> {
        self.done(Value::Float(f))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        self.done(Value::String(text.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        self.done(Value::deserialize(SeqAccessDeserializer::new(seq))?)
    }

    /// A table, or a date-time (which toml hands over as a map).
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        self.done(Value::deserialize(MapAccessDeserializer::new(map))?)
    }
}

/// A type error, worded `expected WHAT, found TYPE`.
pub(super) fn expected(what: &str, v: &Value) -> String {
    format!("expected {what}, found {}", v.type_str())
}

pub(super) fn string(v: &Value) -> Result<&str, String> {
    v.as_str().ok_or_else(|| expected("a string", v))
}

/// A string with more than blanks in it (returned untrimmed).
pub(super) fn non_empty(v: &Value) -> Result<&str, String> {
    let text = string(v)?;
    if text.trim().is_empty() {
        return Err("must not be empty".to_string());
    }
    Ok(text)
}

pub(super) fn flag(v: &Value) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| expected("true or false", v))
}

pub(super) fn duration(v: &Value) -> Result<Duration, String> {
    let text = v
        .as_str()
        .ok_or_else(|| expected("a duration string such as \"250ms\"", v))?;
    humantime::parse_duration(text.trim()).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// Zero would turn a periodic loop into a busy loop.
pub(super) fn positive_duration(v: &Value) -> Result<Duration, String> {
    let d = duration(v)?;
    if d.is_zero() {
        return Err("must be greater than zero".to_string());
    }
    Ok(d)
}

/// A duration in `[min, max]`, for settings that misbehave when too short or long.
fn duration_within(v: &Value, min: Duration, max: Duration) -> Result<Duration, String> {
    let d = duration(v)?;
    let (bound, limit) = match d {
        d if d < min => ("below the minimum", min),
        d if d > max => ("above the maximum", max),
        d => return Ok(d),
    };
    Err(format!(
        "{} is {bound} of {}",
        humantime::format_duration(d),
        humantime::format_duration(limit)
    ))
}

/// An integer in `range`; `note` follows the range in the message.
pub(super) fn integer_in(
    v: &Value,
    range: RangeInclusive<usize>,
    note: &str,
) -> Result<usize, String> {
    let Value::Integer(n) = v else {
        return Err(expected("an integer", v));
    };
    match usize::try_from(*n) {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "{n} is out of range {}..={}{note}",
            range.start(),
            range.end()
        )),
    }
}

/// An integer or float; `what` words the type error.
pub(super) fn number(v: &Value, what: &str) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Integer(n) => Ok(*n as f64),
        _ => Err(expected(what, v)),
    }
}

/// A share of something, in (0, 1]: zero would make every case qualify.
pub(super) fn share(v: &Value, what: &str) -> Result<f64, String> {
    let share = number(v, what)?;
    if share > 0.0 && share <= 1.0 {
        Ok(share)
    } else {
        Err(format!("{share} is not in (0, 1]"))
    }
}

fn regex(text: &str) -> Result<Regex, String> {
    Regex::new(text).map_err(|e| {
        let detail = e.to_string();
        let last = detail.lines().last().unwrap_or_default().trim();
        format!("invalid regex {text:?}: {last}")
    })
}

/// An `http://` or `https://` URL without credentials in it (they would be
/// logged with every failed delivery: use basic_auth); returned trimmed.
pub(super) fn outgoing_url(v: &Value) -> Result<String, String> {
    let url = non_empty(v)?.trim();
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(format!("{url:?} is not an http:// or https:// URL"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(
            "credentials in the URL would appear in logs; give them in basic_auth".to_string(),
        );
    }
    Ok(url.to_string())
}

/// Accepts an RFC 3339 string or a TOML offset date-time; a date-time
/// without offset is refused because the JVM's zone is unknown here.
fn timestamp(v: &Value) -> Result<DateTime<Utc>, String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Datetime(dt) if dt.offset.is_some() && dt.time.is_some() => dt.to_string(),
        Value::Datetime(dt) => {
            return Err(format!("{dt} is not a date-time with UTC offset; write a full RFC 3339 timestamp such as \"2026-11-30T10:00:00Z\""))
        }
        _ => return Err(expected("an RFC 3339 timestamp string", v)),
    };
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            format!(
                "invalid RFC 3339 timestamp {text:?}: {e}; expected e.g. \"2026-11-30T10:00:00Z\""
            )
        })
}

/// A newtype read by a check function of this module.
macro_rules! checked {
    ($($(#[$doc:meta])* $name:ident($inner:ty) = $check:expr;)*) => {$(
        $(#[$doc])*
        pub(super) struct $name(pub(super) $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                read(d, $check).map($name)
            }
        }
    )*};
}

checked! {
    /// Any string, with the type error worded as the other values'.
    Text(String) = |v| string(v).map(str::to_string);
    /// A string with more than blanks in it, kept as written.
    NonEmpty(String) = |v| non_empty(v).map(str::to_string);
    /// A string with more than blanks in it, trimmed (a file name, a token).
    Trimmed(String) = |v| non_empty(v).map(|text| text.trim().to_string());
    /// The name TLS verifies instead of the URL's host.
    ServerName(String) = |v| {
        let name = non_empty(v)?.trim();
        match rustls_pki_types::ServerName::try_from(name) {
            Ok(_) => Ok(name.to_string()),
            Err(_) => Err(format!("{name:?} is not a DNS name or IP address")),
        }
    };
    Flag(bool) = flag;
    /// `"250ms"`, `"2h 30m"`: humantime's words.
    Dur(Duration) = duration;
    Positive(Duration) = positive_duration;
    /// A canary rule's window: Prometheus gets a minute's figure, stamped
    /// with the minute's start, only after the minute ends, so a window
    /// shorter than 2m holds no minute at all for those seconds.
    CanaryWindow(Duration) = |v| {
        let window = duration(v)?;
        match window < Duration::from_secs(120) {
            true => Err(format!("{} is below the minimum of 2m: each minute's figure is stamped with the minute's start and reaches Prometheus after the minute ends, so a shorter window holds none for a few seconds after every minute and the rule never fires", humantime::format_duration(window))),
            false => Ok(window),
        }
    };
    Share(f64) = |v| share(v, "a number between 0 and 1");
    Url(String) = outgoing_url;
    Timestamp(DateTime<Utc>) = timestamp;
    /// `[ebpf] request_arrival`.
    ArrivalName(super::discovery::RequestArrival) = |v| match v.as_str() {
        Some("auto") => Ok(super::discovery::RequestArrival::Auto),
        Some("sk_data_ready") => Ok(super::discovery::RequestArrival::SkDataReady),
        Some("tcp_probe") => Ok(super::discovery::RequestArrival::TcpProbe),
        _ => Err("expected \"auto\", \"sk_data_ready\" or \"tcp_probe\"".to_string()),
    };
    /// A TCP port.
    Port(u16) = |v| integer_in(v, 1..=65535, "").map(|port| port as u16);
    /// `max_line_bytes` of a GC or access log source.
    LineCap(usize) = |v| integer_in(v, MIN_MAX_LINE_BYTES..=MAX_MAX_LINE_BYTES, " (16 MiB)");
    /// An IP and port, the address the agent listens on.
    Listen(SocketAddr) = |v| {
        let text = string(v)?;
        text.trim().parse().map_err(|_| format!("invalid listen address {text:?}: expected IP:PORT, e.g. \"127.0.0.1:9464\" or \"[::1]:9464\""))
    };
    /// A glob pattern of log files, kept as written.
    GlobPath(String) = |v| {
        let path = non_empty(v)?;
        match glob::Pattern::new(path) {
            Ok(_) => Ok(path.to_string()),
            Err(e) => Err(format!("invalid glob pattern {path:?}: {} at character {}", e.msg, e.pos)),
        }
    };
    /// A regex on a command line that must say something (`[[discovery.rule]] match`).
    RulePattern(Regex) = |v| regex(non_empty(v)?);
    /// A label name on every series of a source.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    SeriesLabel(String) = |v| label(v, None);
    /// A label name a discovery rule sets: neither a series' own nor one discovery sets.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    RuleLabel(String) = |v| label(v, Some(&DISCOVERY_LABELS[..]));
    /// An `[otlp] resource_attributes` name.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    AttributeName(String) = |v| match string(v)? {
        name if name.trim().is_empty() => Err("an attribute name must not be empty".to_string()),
        name => Ok(name.to_string()),
    };
    TimeFormatName(TimeFormat) = |v| parse_time_format(string(v)?.trim());
    DurationUnitName(DurationUnit) = |v| parse_duration_unit(string(v)?.trim());
    TimestampName(TimestampMeaning) = |v| parse_timestamp_meaning(string(v)?.trim());
    /// Seconds added to request times (`"-20ms"`).
    Offset(f64) = |v| parse_signed_duration(string(v)?.trim());
    /// A rule's share of something, in (0, 1].
    RuleShare(f64) = |v| share(v, "a number");
    /// A factor on a baseline: at or below zero every figure is a regression.
    Ratio(f64) = |v| match number(v, "a number")? {
        ratio if ratio > 0.0 && ratio.is_finite() => Ok(ratio),
        ratio => Err(format!("{ratio} is not a finite number above 0")),
    };
    /// `[alerts.pause_regression] statistic`.
    Statistic(RegressionStatistic) = |v| match v.as_str() {
        Some("p99") => Ok(RegressionStatistic::P99),
        Some("max") => Ok(RegressionStatistic::Max),
        _ => Err("expected \"p99\" or \"max\"".to_string()),
    };
    /// A duration that replaces a computed default (`[alerts.pause_regression] baseline`).
    Pinned(Option<Duration>) = |v| duration(v).map(Some);
    /// A label name on alerts.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    AlertLabel(String) = |v| {
        let name = string(v)?;
        label_problem(name, LabelUse::Alert).map_or_else(|| Ok(name.to_string()), Err)
    };
    /// A label value on alerts.
    LabelValue(String) = |v| v.as_str().map(str::to_string).ok_or_else(|| "a label value must be a string".to_string());
}

fn label(v: &Value, own: Option<&[&str]>) -> Result<String, String> {
    let name = string(v)?;
    if own.is_some_and(|own| own.contains(&name)) {
        return Err(format!(
            "label name {name:?} is set by discovery itself; choose another name"
        ));
    }
    match label_problem(name, LabelUse::Series) {
        Some(problem) => Err(problem),
        None => Ok(name.to_string()),
    }
}

/// A duration in `[MIN_MS, MAX_MS]` milliseconds (`u64::MAX`: no maximum).
pub(super) struct Within<const MIN_MS: u64, const MAX_MS: u64>(pub(super) Duration);

impl<'de, const MIN_MS: u64, const MAX_MS: u64> Deserialize<'de> for Within<MIN_MS, MAX_MS> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let max = match MAX_MS {
            u64::MAX => Duration::MAX,
            ms => Duration::from_millis(ms),
        };
        read(d, |v| {
            duration_within(v, Duration::from_millis(MIN_MS), max)
        })
        .map(Within)
    }
}

/// An integer in `MIN..=MAX`.
pub(super) struct IntIn<const MIN: usize, const MAX: usize>(pub(super) usize);

impl<'de, const MIN: usize, const MAX: usize> Deserialize<'de> for IntIn<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read(d, |v| integer_in(v, MIN..=MAX, "")).map(IntIn)
    }
}

/// A regex or an array of regexes; an error names the item at fault.
pub(super) struct Patterns(pub(super) Vec<Regex>);

struct Pattern(Regex);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read(d, |v| regex(string(v)?)).map(Pattern)
    }
}

impl<'de> Deserialize<'de> for Patterns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PatternsVisitor)
    }
}

struct PatternsVisitor;

/// The type error of [`Patterns`], in the words of the others.
fn not_patterns<E: de::Error>(found: &str) -> E {
    E::custom(format!(
        "expected a regex or an array of regexes, found {found}"
    ))
}

impl<'de> Visitor<'de> for PatternsVisitor {
    type Value = Patterns;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a regex or an array of regexes")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Patterns, E> {
        regex(text).map(|r| Patterns(vec![r])).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Patterns, A::Error> {
        let mut patterns = Vec::new();
        while let Some(Pattern(r)) = items.next_element()? {
            patterns.push(r);
        }
        Ok(Patterns(patterns))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Patterns, E> {
        Err(not_patterns("boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Patterns, E> {
        Err(not_patterns("integer"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Patterns, E> {
        Err(not_patterns("float"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Patterns, A::Error> {
        Err(not_patterns("table"))
    }
}

/// A table read as `T`; anything else is refused in the words of the other
/// values (`expected a table, found string`), not serde's.
pub(super) struct Table<T>(pub(super) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Table<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        table(d, "a table").map(Table)
    }
}

/// A table read as `T`, anything else refused as `expected WHAT, found TYPE`.
pub(super) fn table<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    what: &'static str,
) -> Result<T, D::Error> {
    let visitor = TableVisitor {
        what: Some(what),
        of: std::marker::PhantomData,
    };
    let read = d.deserialize_any(visitor)?;
    Ok(read.unwrap_or_else(|_| unreachable!("refused by the visitor")))
}

/// A table read as `T`, or the type found instead (`"integer"`), for a
/// section whose other checks come before the type's.
pub(super) fn table_or_type<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Result<T, &'static str>, D::Error> {
    d.deserialize_any(TableVisitor {
        what: None,
        of: std::marker::PhantomData,
    })
}

/// `what` names the table in the error; without it the type found is
/// returned, not refused.
struct TableVisitor<T> {
    what: Option<&'static str>,
    of: std::marker::PhantomData<T>,
}

type TableOr<T> = Result<T, &'static str>;

impl<T> TableVisitor<T> {
    fn not_a_table<E: de::Error>(&self, found: &'static str) -> Result<TableOr<T>, E> {
        match self.what {
            Some(what) => Err(E::custom(format!("expected {what}, found {found}"))),
            None => Ok(Err(found)),
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for TableVisitor<T> {
    type Value = TableOr<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.what.unwrap_or("a table"))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TableOr<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Ok)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<TableOr<T>, E> {
        self.not_a_table("string")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<TableOr<T>, A::Error> {
        self.not_a_table("array")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TableOr<T>, E> {
        self.not_a_table("boolean")
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<TableOr<T>, E> {
        self.not_a_table("integer")
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<TableOr<T>, E> {
        self.not_a_table("float")
    }
}
