//! Streaming parsers for HTTP access logs: nginx, Apache httpd, Tomcat, Envoy
//! (text and JSON), generic JSON lines, and any line shape a regex describes.
//!
//! Every request line becomes a [`Request`]: when the request started (UTC,
//! nanosecond precision kept) and how long it took, in `f64` seconds. Servers
//! that stamp a line with the time the request *ended* (nginx, Tomcat) are
//! moved back by the duration. Like the rest of the crate this is pure: bytes
//! in, requests out, no I/O.
//!
//! ```
//! use pausewatch_parsers::{AccessFormat, AccessLogParser};
//! let format = AccessFormat::preset("envoy").unwrap();
//! let mut parser = AccessLogParser::new(format, 64 * 1024).unwrap();
//! let mut requests = Vec::new();
//! parser.feed(b"[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"\n", &mut requests);
//! parser.finish(&mut requests);
//! assert_eq!(requests[0].start.to_rfc3339(), "2016-04-15T20:17:00.310+00:00");
//! assert_eq!(requests[0].duration_s, 0.226);
//! ```

use chrono::{DateTime, FixedOffset, NaiveDate, TimeDelta, TimeZone, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lines::{LineSplitter, Piece};
use crate::log_format::{CompiledLogFormat, Server};

/// Whether a line's timestamp is when the request started or when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampMeaning {
    /// The request was received at this time.
    Start,
    /// The line was written (the response finished) at this time; the start
    /// is this time minus the duration.
    End,
}

/// The unit a duration field is written in. Fractions are accepted in every
/// unit (`0.250` seconds, `12.5` milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurationUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl DurationUnit {
    /// Decimal places between this unit and nanoseconds.
    pub(crate) fn nanos_exponent(self) -> u32 {
        match self {
            DurationUnit::Seconds => 9,
            DurationUnit::Milliseconds => 6,
            DurationUnit::Microseconds => 3,
            DurationUnit::Nanoseconds => 0,
        }
    }
}

/// How a timestamp field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeFormat {
    /// `2016-04-15T20:17:00.310Z`, `2023-11-14T14:13:20-08:00` (any fraction).
    Rfc3339,
    /// `1700000000.500`: seconds since the epoch, any fraction.
    EpochSeconds,
    /// `1700000000500`: milliseconds since the epoch (a fraction is allowed).
    EpochMillis,
    /// `1700000000500000`: microseconds since the epoch (a fraction is allowed).
    EpochMicros,
    /// Common Log Format, `10/Oct/2000:13:55:36 -0700`, optionally with a
    /// fraction of a second: `10/Oct/2000:13:55:36.123 -0700`. A space instead
    /// of the colon between date and time (Apache's documented
    /// `%{%d/%b/%Y %T}t.%{msec_frac}t %{%z}t`) is accepted too. The offset
    /// is honoured; English month abbreviations, any case.
    Clf,
}

impl TimeFormat {
    /// Parses one timestamp written in this format; `None` if it is not one.
    pub fn parse(&self, text: &str) -> Option<DateTime<Utc>> {
        let text = text.trim();
        match self {
            TimeFormat::Rfc3339 => rfc3339(text),
            TimeFormat::EpochSeconds => epoch(scaled_decimal(text, 9)?),
            TimeFormat::EpochMillis => epoch(scaled_decimal(text, 6)?),
            TimeFormat::EpochMicros => epoch(scaled_decimal(text, 3)?),
            TimeFormat::Clf => clf(text),
        }
    }
}

/// The shape of an access log. Use [`AccessFormat::preset`] for the products
/// pausewatch knows; [`AccessFormat::Json`] and [`AccessFormat::Regex`] for
/// anything else.
///
/// | preset | the product's configuration | timestamp | duration |
/// |---|---|---|---|
/// | `nginx` | `log_format pausewatch '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $msec';` | `$msec`, end, ms | `$request_time`, s (ms resolution) |
/// | `apache` | `LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\" %D" pausewatch` | `%t`, start, s (or ms) | `%D`, µs |
/// | `tomcat` | `pattern="%h %l %u %t &quot;%r&quot; %s %b %D"` (Tomcat 10.0+) | `%t`, end, s (or `[%{msec}t]`, ms) | `%D`, µs |
/// | `tomcat9` | the same on Tomcat 9.0 and older | as `tomcat` | `%D`, ms |
/// | `tomcat-begin-msec` | `pattern="%h %l %u [%{begin:msec}t] &quot;%r&quot; %s %b %D"` (10.0+) | start, ms | `%D`, µs |
/// | `tomcat9-begin-msec` | the same on Tomcat 9.0 and older | start, ms | `%D`, ms |
/// | `envoy` | Envoy's default format (no `log_format` set) | `%START_TIME%`, start, ms | `%DURATION%`, ms |
/// | `envoy-json` | `json_format`/`typed_json_format` with `start_time: "%START_TIME%"`, `duration: "%DURATION%"` | start, ms | ms |
/// | `json` | [`AccessFormat::Json`]: fields, formats and units given | configured | configured |
/// | `regex` | [`AccessFormat::Regex`]: named groups | configured | configured |
/// | (custom) | [`AccessFormat::LogFormat`]: an nginx `log_format` or Apache `LogFormat` string | from the format | from the format |
///
/// Every preset variant's documentation gives the exact directive and what the
/// fields mean.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessFormat {
    /// nginx (`ngx_http_log_module`), the `combined` format followed by
    /// `$request_time $msec`:
    ///
    /// ```nginx
    /// log_format pausewatch '$remote_addr - $remote_user [$time_local] "$request" '
    ///                       '$status $body_bytes_sent "$http_referer" '
    ///                       '"$http_user_agent" $request_time $msec';
    /// access_log /var/log/nginx/access.log pausewatch;
    /// ```
    ///
    /// `$msec` is the "time in seconds with a milliseconds resolution at the
    /// time of the log write", i.e. when the request ended; `$request_time`
    /// is the "request processing time in seconds with a milliseconds
    /// resolution; time elapsed between the first bytes were read from the
    /// client and the log write". So start = `$msec` − `$request_time`
    /// (<https://nginx.org/en/docs/http/ngx_http_log_module.html>).
    ///
    /// Also accepted: `$msec` left out, with `[$time_iso8601]` (or
    /// `[$time_local]`) in the brackets; that time is also taken at the log
    /// write, so it is the end, at one-second resolution:
    ///
    /// ```nginx
    /// log_format pausewatch '$remote_addr - $remote_user [$time_iso8601] "$request" '
    ///                       '$status $body_bytes_sent "$http_referer" '
    ///                       '"$http_user_agent" $request_time';
    /// ```
    ///
    /// The two numbers are read from the end of the line, so spaces or
    /// quotes in the request line or user agent do no harm. A trailing pair
    /// of numbers is taken as `$request_time $msec` only if `$msec` agrees
    /// with the bracketed time (within 2 s); otherwise the last number is
    /// `$request_time` and the bracketed time the end.
    Nginx,
    /// Apache httpd (`mod_log_config`), the combined format followed by `%D`:
    ///
    /// ```apache
    /// LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\" %D" pausewatch
    /// CustomLog "logs/access_log" pausewatch
    /// ```
    ///
    /// or the common format followed by `%D` (`"%h %l %u %t \"%r\" %>s %b %D"`).
    /// `%t` is the "time the request was received", so the START, at one
    /// second resolution (`[10/Oct/2000:13:55:36 -0700]`); `%D` is "the time
    /// taken to serve the request, in microseconds"
    /// (<https://httpd.apache.org/docs/2.4/mod/mod_log_config.html>). For
    /// millisecond starts write `[%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t]`
    /// in place of `%t`, which prints `[10/Oct/2000:13:55:36.123 -0700]`.
    /// `%D` is read as the last field on the line.
    Apache,
    /// Tomcat's `AccessLogValve` with `%D` last:
    ///
    /// ```xml
    /// <Valve className="org.apache.catalina.valves.AccessLogValve" directory="logs"
    ///        prefix="localhost_access_log" suffix=".txt"
    ///        pattern="%h %l %u %t &quot;%r&quot; %s %b %D" />
    /// ```
    ///
    /// (`pattern="combined"` plus ` %D` works too). Tomcat's `%t`, and
    /// `%{msec}t` / `%{end:msec}t`, print the time the response FINISHED
    /// (only a `begin:` prefix selects the request start; see
    /// `AbstractAccessLogValve.DateAndTimeElement`), so the bracket is read
    /// as the end: in Common Log Format (`[10/Oct/2000:13:55:36 -0700]`,
    /// second resolution) or, if it holds only digits, as epoch milliseconds
    /// from `pattern="%h %l %u [%{msec}t] &quot;%r&quot; %s %b %D"`.
    ///
    /// `%D` is the time taken in MICROseconds from Tomcat 10.0 on (preset
    /// `tomcat`, `duration_unit: Microseconds`) and in MILLIseconds in
    /// Tomcat 9.0 and older (preset `tomcat9`, `Milliseconds`).
    ///
    /// For `[%{begin:msec}t]` (epoch ms at the request start) use the presets
    /// `tomcat-begin-msec` / `tomcat9-begin-msec`: the line alone cannot
    /// tell a begin from an end timestamp. (`%{begin}t`, CLF at the start,
    /// would likewise be misread as the end here; describe it with
    /// [`AccessFormat::Regex`] and a `start` group.)
    Tomcat { duration_unit: DurationUnit },
    /// Envoy's default access log format, used when no `log_format` is set:
    ///
    /// ```text
    /// [%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
    /// %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
    /// %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%"
    /// "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"\n
    /// ```
    ///
    /// `%START_TIME%` is the "request start time including milliseconds"
    /// (`2016-04-15T20:17:00.310Z`) and `%DURATION%` the "total duration in
    /// milliseconds of the request from the start time to the last byte out"
    /// (<https://www.envoyproxy.io/docs/envoy/latest/configuration/observability/access_log/usage>).
    /// Newer Envoy spells `%REQ(...)%` as `%REQUEST_HEADER(...)%`; the line is
    /// the same. Any format that starts `[%START_TIME%] "<request>"
    /// %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT%
    /// %DURATION%` parses.
    Envoy,
    /// Envoy (or Istio, `accessLogEncoding: JSON`) JSON access logs: one JSON
    /// object a line with the keys
    ///
    /// ```yaml
    /// log_format:
    ///   json_format:              # or typed_json_format
    ///     start_time: "%START_TIME%"
    ///     duration: "%DURATION%"
    ///     # ... any other keys
    /// ```
    ///
    /// `start_time` is RFC 3339, the request start; `duration` is
    /// milliseconds, a string (`"123"`, `json_format`) or a number (`123`,
    /// `typed_json_format`). The same as [`AccessFormat::Json`] with those
    /// fields.
    EnvoyJson,
    /// Any JSON-lines log. Fields are looked up by name; a dotted path
    /// (`http.start`) reaches into nested objects (a top-level key that
    /// contains the dots wins). Values may be strings or numbers.
    Json {
        time_field: String,
        time_format: TimeFormat,
        duration_field: String,
        duration_unit: DurationUnit,
        timestamp: TimestampMeaning,
    },
    /// Any line a regular expression (Rust `regex` syntax) describes, with
    /// the named groups `duration` and exactly one of `start` (the start
    /// time), `end` (the end time) or `time` (whose meaning is `timestamp`).
    /// For example
    /// `^\S+ \[(?P<end>[^\]]+)\] .* (?P<duration>[0-9.]+)$` with `time_format:
    /// Clf`. `timestamp` is used only with a `time` group.
    Regex {
        pattern: String,
        time_format: TimeFormat,
        duration_unit: DurationUnit,
        timestamp: TimestampMeaning,
    },
    /// Any layout nginx or Apache httpd can write, given by the format
    /// string of its configuration (nginx `log_format`, Apache `LogFormat`,
    /// escapes such as `\"` as written there). It needs one time variable
    /// (nginx `$msec`, `$time_iso8601`, `$time_local`; Apache `%t`,
    /// `%{msec}t`, `%{usec}t`, `%{sec}t`, a strftime `%{...}t` with `%z`)
    /// and one duration variable (nginx `$request_time`,
    /// `$upstream_response_time`; Apache `%D`, `%{us}T`, `%{ms}T`, `%T`).
    /// nginx times are taken at the log write (the end); Apache's `%t` is
    /// when the request was received (the start), `%{end:...}t` the end.
    LogFormat { server: Server, format: String },
}

/// Tomcat with `[%{begin:msec}t]` in the place of `%t`.
pub(crate) const TOMCAT_BEGIN_MSEC_PATTERN: &str =
    r#"^.*?\[(?P<start>[0-9]+)\] ".*" \S+ \S+ (?P<duration>[0-9]+)$"#;

impl AccessFormat {
    /// Every name [`AccessFormat::preset`] knows. `json` and `regex` are not
    /// presets: they need fields, see [`AccessFormat::Json`] and
    /// [`AccessFormat::Regex`].
    pub const PRESETS: &'static [&'static str] = &[
        "nginx",
        "apache",
        "tomcat",
        "tomcat9",
        "tomcat-begin-msec",
        "tomcat9-begin-msec",
        "envoy",
        "envoy-json",
    ];

    /// The format for a preset name (see the table on [`AccessFormat`]);
    /// `None` for unknown names and for `json`/`regex`, which need fields.
    /// `tomcat10` is accepted as another name for `tomcat`.
    pub fn preset(name: &str) -> Option<AccessFormat> {
        let tomcat_begin = |duration_unit| AccessFormat::Regex {
            pattern: TOMCAT_BEGIN_MSEC_PATTERN.to_string(),
            time_format: TimeFormat::EpochMillis,
            duration_unit,
            timestamp: TimestampMeaning::Start,
        };
        Some(match name {
            "nginx" => AccessFormat::Nginx,
            "apache" => AccessFormat::Apache,
            "tomcat" | "tomcat10" => AccessFormat::Tomcat {
                duration_unit: DurationUnit::Microseconds,
            },
            "tomcat9" => AccessFormat::Tomcat {
                duration_unit: DurationUnit::Milliseconds,
            },
            "tomcat-begin-msec" => tomcat_begin(DurationUnit::Microseconds),
            "tomcat9-begin-msec" => tomcat_begin(DurationUnit::Milliseconds),
            "envoy" => AccessFormat::Envoy,
            "envoy-json" => AccessFormat::EnvoyJson,
            _ => return None,
        })
    }

    /// Checks what can be wrong in a configured format: a regex that does
    /// not compile or lacks the `duration` group or a single `start`/`end`/
    /// `time` group; an empty JSON field name.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            AccessFormat::Json {
                time_field,
                duration_field,
                ..
            } => {
                if time_field.trim().is_empty() {
                    return Err("json access log format: time_field is empty".to_string());
                }
                if duration_field.trim().is_empty() {
                    return Err("json access log format: duration_field is empty".to_string());
                }
                Ok(())
            }
            AccessFormat::Regex { .. } | AccessFormat::LogFormat { .. } => {
                Compiled::new(self).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// What a preset expects, as the text to put in the product's
    /// configuration; `None` for other names. The README quotes these, and
    /// tests parse lines written from them.
    pub fn documented(preset: &str) -> Option<&'static str> {
        Some(match preset {
            "nginx" => NGINX_LOG_FORMAT,
            "apache" => APACHE_LOG_FORMAT,
            "tomcat" | "tomcat9" | "tomcat10" => r#"%h %l %u %t "%r" %s %b %D"#,
            "tomcat-begin-msec" | "tomcat9-begin-msec" => {
                r#"%h %l %u [%{begin:msec}t] "%r" %s %b %D"#
            }
            "envoy" => ENVOY_FORMAT,
            "envoy-json" => r#"{"start_time": "%START_TIME%", "duration": "%DURATION%"}"#,
            _ => return None,
        })
    }

    /// The layout this format reads, for messages about lines it rejects.
    pub fn expected(&self) -> String {
        let preset = |name| Self::documented(name).unwrap_or_default().to_string();
        match self {
            AccessFormat::Nginx => format!("nginx log_format '{NGINX_LOG_FORMAT}'"),
            AccessFormat::Apache => format!("Apache LogFormat \"{APACHE_LOG_FORMAT}\""),
            AccessFormat::Tomcat { .. } => format!("Tomcat pattern \"{}\"", preset("tomcat")),
            AccessFormat::Envoy => format!("Envoy format \"{ENVOY_FORMAT}\""),
            AccessFormat::EnvoyJson => preset("envoy-json"),
            AccessFormat::Json {
                time_field,
                time_format,
                duration_field,
                duration_unit,
                timestamp,
            } => format!(
                "JSON objects with the time in {time_field:?} ({time_format:?}, the request's {}) and the duration in {duration_field:?} ({duration_unit:?})",
                format!("{timestamp:?}").to_lowercase()
            ),
            AccessFormat::Regex { pattern, .. } => format!("lines matching {pattern}"),
            AccessFormat::LogFormat { server, format } => format!("{server:?} format '{format}'"),
        }
    }
}

/// The nginx `log_format` the `nginx` preset reads: `combined`, then
/// `$request_time $msec`.
const NGINX_LOG_FORMAT: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $msec"#;

/// The Apache `LogFormat` the `apache` preset reads: `combined`, then `%D`.
const APACHE_LOG_FORMAT: &str =
    r#"%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\" %D"#;

/// Envoy's default format string.
const ENVOY_FORMAT: &str = r#"[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"\n"#;

/// The matcher a configured format compiles to (a `Regex` or `LogFormat`
/// format); presets need none.
#[derive(Debug, Clone)]
enum Compiled {
    Regex(Regex),
    LogFormat(CompiledLogFormat),
}

impl Compiled {
    /// `None` for formats that need no compiling.
    fn new(format: &AccessFormat) -> Result<Option<Compiled>, String> {
        Ok(match format {
            AccessFormat::Regex { pattern, .. } => Some(Compiled::Regex(compile(pattern)?)),
            AccessFormat::LogFormat { server, format } => Some(Compiled::LogFormat(
                CompiledLogFormat::new(*server, format)?,
            )),
            _ => None,
        })
    }
}

/// Compiles an access-log regex and checks its named groups.
fn compile(pattern: &str) -> Result<Regex, String> {
    let regex =
        Regex::new(pattern).map_err(|e| format!("access log regex does not compile: {e}"))?;
    let names: Vec<&str> = regex.capture_names().flatten().collect();
    if !names.contains(&"duration") {
        return Err("access log regex needs a named group `duration`: (?P<duration>...)".into());
    }
    let times = ["start", "end", "time"]
        .iter()
        .filter(|name| names.contains(name))
        .count();
    match times {
        1 => Ok(regex),
        0 => Err(
            "access log regex needs a named group `start`, `end` or `time`: (?P<start>...)".into(),
        ),
        _ => Err("access log regex must have only one of the groups `start`, `end`, `time`".into()),
    }
}

/// One request: when it started and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub start: DateTime<Utc>,
    pub duration_s: f64,
}

/// Counters of what the parser has seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessStats {
    pub bytes: u64,
    /// Every line, including blank, malformed and too-long ones.
    pub lines: u64,
    pub requests: u64,
    /// Non-blank lines that do not parse in the configured format.
    pub malformed: u64,
    /// Lines longer than `max_line_bytes`, skipped.
    pub too_long: u64,
    /// The first malformed line (its first 300 bytes), to quote when the
    /// format is wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_malformed: Option<String>,
}

/// Streaming parser for one access log stream (a file, or a rotated set in
/// order). Serialisable so that a tailing agent can checkpoint it; the
/// matcher of a [`AccessFormat::Regex`] or [`AccessFormat::LogFormat`]
/// format is not serialised but rebuilt on the first line after
/// deserialising.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessLogParser {
    format: AccessFormat,
    lines: LineSplitter,
    stats: AccessStats,
    #[serde(skip)]
    compiled: Option<Compiled>,
    /// The format did not compile when rebuilt (a hand-edited checkpoint):
    /// every line is then malformed, without compiling again each time.
    #[serde(skip)]
    compile_failed: bool,
}

impl AccessLogParser {
    /// A parser for `format`; lines longer than `max_line_bytes` are counted
    /// in [`AccessStats::too_long`] and skipped. Fails if the format does not
    /// [`validate`](AccessFormat::validate) or `max_line_bytes` is zero.
    pub fn new(format: AccessFormat, max_line_bytes: usize) -> Result<AccessLogParser, String> {
        format.validate()?;
        if max_line_bytes == 0 {
            return Err("max_line_bytes must be positive".to_string());
        }
        let compiled = Compiled::new(&format)?;
        Ok(AccessLogParser {
            format,
            lines: LineSplitter::new(max_line_bytes),
            stats: AccessStats::default(),
            compiled,
            compile_failed: false,
        })
    }

    pub fn format(&self) -> &AccessFormat {
        &self.format
    }

    pub fn stats(&self) -> &AccessStats {
        &self.stats
    }

    /// Bytes of an unfinished last line held until its newline arrives.
    pub fn buffered_bytes(&self) -> usize {
        self.lines.buffered()
    }

    /// Feeds bytes as they arrive; the requests of complete lines are
    /// appended to `out`. Chunk boundaries never change the result.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Request>) {
        self.stats.bytes += bytes.len() as u64;
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |piece| self.piece(piece, out));
        self.lines = lines;
    }

    /// Ends the stream: parses an unterminated last line.
    pub fn finish(&mut self, out: &mut Vec<Request>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|piece| self.piece(piece, out));
        self.lines = lines;
    }

    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<Request>) {
        self.stats.lines += 1;
        match piece {
            Piece::Text(text) => self.line(text.as_bytes(), out),
            Piece::Line(raw) => self.line(raw, out),
            Piece::TooLong => self.stats.too_long += 1,
        }
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<Request>) {
        // Invalid UTF-8 is replaced, not rejected: the fields read are ASCII,
        // and a stray byte in a user agent should not lose the request.
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_start_matches('\u{feff}');
        if text.trim().is_empty() {
            return;
        }
        if self.compiled.is_none() && !self.compile_failed {
            match Compiled::new(&self.format) {
                Ok(compiled) => self.compiled = compiled,
                Err(_) => self.compile_failed = true,
            }
        }
        match parse_with(&self.format, self.compiled.as_ref(), text) {
            Some(request) => {
                self.stats.requests += 1;
                out.push(request);
            }
            None => {
                self.stats.malformed += 1;
                if self.stats.first_malformed.is_none() {
                    let end = (0..=text.len().min(300))
                        .rev()
                        .find(|&i| text.is_char_boundary(i))
                        .unwrap_or(0);
                    self.stats.first_malformed = Some(text[..end].trim_end().to_string());
                }
            }
        }
    }
}

/// Parses one line (without its newline) in `format`; `None` if it is blank
/// or malformed.
///
/// For [`AccessFormat::Regex`] and [`AccessFormat::LogFormat`] this compiles
/// the format on every call; to parse many lines use an [`AccessLogParser`],
/// which compiles it once.
pub fn parse_line(format: &AccessFormat, line: &str) -> Option<Request> {
    let compiled = Compiled::new(format).ok()?;
    parse_with(format, compiled.as_ref(), line)
}

/// Parses one line; `compiled` is the matcher of a format that needs one.
fn parse_with(format: &AccessFormat, compiled: Option<&Compiled>, line: &str) -> Option<Request> {
    let line = line.trim_end_matches(['\r', '\n']);
    match format {
        AccessFormat::Nginx => nginx(line),
        AccessFormat::Apache => apache(line),
        AccessFormat::Tomcat { duration_unit } => tomcat(line, *duration_unit),
        AccessFormat::Envoy => envoy(line),
        AccessFormat::EnvoyJson => json(
            line,
            "start_time",
            TimeFormat::Rfc3339,
            "duration",
            DurationUnit::Milliseconds,
            TimestampMeaning::Start,
        ),
        AccessFormat::Json {
            time_field,
            time_format,
            duration_field,
            duration_unit,
            timestamp,
        } => json(
            line,
            time_field,
            *time_format,
            duration_field,
            *duration_unit,
            *timestamp,
        ),
        AccessFormat::Regex {
            time_format,
            duration_unit,
            timestamp,
            ..
        } => match compiled? {
            Compiled::Regex(regex) => {
                by_regex(regex, line, *time_format, *duration_unit, *timestamp)
            }
            Compiled::LogFormat(_) => None,
        },
        AccessFormat::LogFormat { .. } => match compiled? {
            Compiled::LogFormat(log_format) => log_format.parse(line),
            Compiled::Regex(_) => None,
        },
    }
}

pub(crate) fn request(
    at: DateTime<Utc>,
    meaning: TimestampMeaning,
    duration_nanos: i128,
) -> Option<Request> {
    let nanos = i64::try_from(duration_nanos).ok()?;
    if nanos < 0 {
        return None;
    }
    let start = match meaning {
        TimestampMeaning::Start => at,
        TimestampMeaning::End => at.checked_sub_signed(TimeDelta::nanoseconds(nanos))?,
    };
    Some(Request {
        start,
        duration_s: nanos as f64 / 1e9,
    })
}

/// The text between the first `[` and the next `]`, and the rest of the line.
fn bracketed(line: &str) -> Option<(&str, &str)> {
    let open = line.find('[')?;
    let close = open + 1 + line[open + 1..].find(']')?;
    Some((&line[open + 1..close], &line[close + 1..]))
}

/// What follows the bracketed time in the CLF family: a quoted request line.
fn request_follows(rest: &str) -> bool {
    rest.trim_start().starts_with('"')
}

/// The last whitespace-separated field of `text`.
fn last_field(text: &str) -> Option<&str> {
    text.split_ascii_whitespace().next_back()
}

fn nginx(line: &str) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let logged = clf(stamp).or_else(|| rfc3339(stamp))?;
    let mut tail = rest.split_ascii_whitespace().rev();
    let last = tail.next()?;
    if let Some(before) = tail.next() {
        if let (Some(request_time), Some(msec)) =
            (scaled_decimal(before, 9), scaled_decimal(last, 9))
        {
            // `$msec` and the bracketed time are taken at the same moment, the
            // latter truncated to the second; disagreement means the pair is
            // something else (`$body_bytes_sent $request_time`, say).
            if let Some(end) = epoch(msec) {
                if end.signed_duration_since(logged).num_milliseconds().abs() <= 2000 {
                    return request(end, TimestampMeaning::End, request_time);
                }
            }
        }
    }
    request(logged, TimestampMeaning::End, scaled_decimal(last, 9)?)
}

fn apache(line: &str) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let start = clf(stamp)?;
    let micros = whole_number(last_field(rest)?)?;
    request(start, TimestampMeaning::Start, micros.checked_mul(1_000)?)
}

fn tomcat(line: &str, unit: DurationUnit) -> Option<Request> {
    let (stamp, rest) = bracketed(line)?;
    if !request_follows(rest) {
        return None;
    }
    let end = match whole_number(stamp) {
        Some(millis) => epoch(millis.checked_mul(1_000_000)?)?,
        None => clf(stamp)?,
    };
    let taken = whole_number(last_field(rest)?)?;
    let nanos = taken.checked_mul(10i128.pow(unit.nanos_exponent()))?;
    request(end, TimestampMeaning::End, nanos)
}

fn envoy(line: &str) -> Option<Request> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (stamp, rest) = rest.split_once(']')?;
    let start = rfc3339(stamp)?;
    let rest = rest.strip_prefix(' ')?.strip_prefix('"')?;
    // The request line may itself hold quotes: try each closing quote until
    // the fields after it have the shape of
    // `%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%`.
    for (quote, _) in rest.match_indices('"') {
        let Some(after) = rest[quote + 1..].strip_prefix(' ') else {
            continue;
        };
        let mut fields = after.split(' ');
        let mut next = || fields.next().filter(|field| !field.is_empty());
        let (Some(code), Some(_flags), Some(received), Some(sent), Some(duration)) =
            (next(), next(), next(), next(), next())
        else {
            continue;
        };
        if whole_number(code).is_none()
            || whole_number(received).is_none()
            || whole_number(sent).is_none()
        {
            continue;
        }
        let millis = whole_number(duration)?;
        return request(
            start,
            TimestampMeaning::Start,
            millis.checked_mul(1_000_000)?,
        );
    }
    None
}

fn json(
    line: &str,
    time_field: &str,
    time_format: TimeFormat,
    duration_field: &str,
    unit: DurationUnit,
    meaning: TimestampMeaning,
) -> Option<Request> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    let at = match lookup(&value, time_field)? {
        Value::String(text) => time_format.parse(text)?,
        Value::Number(number) => match time_format {
            TimeFormat::EpochSeconds | TimeFormat::EpochMillis | TimeFormat::EpochMicros => {
                time_format.parse(&number.to_string())?
            }
            TimeFormat::Rfc3339 | TimeFormat::Clf => return None,
        },
        _ => return None,
    };
    let nanos = match lookup(&value, duration_field)? {
        Value::String(text) => scaled_decimal(text, unit.nanos_exponent())?,
        Value::Number(number) => scaled_decimal(&number.to_string(), unit.nanos_exponent())?,
        _ => return None,
    };
    request(at, meaning, nanos)
}

/// A field of a JSON object by name, or by dotted path into nested objects.
fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let object = value.as_object()?;
    if let Some(found) = object.get(path) {
        return Some(found);
    }
    if !path.contains('.') {
        return None;
    }
    let mut current = value;
    for key in path.split('.') {
        current = current.as_object()?.get(key)?;
    }
    Some(current)
}

fn by_regex(
    regex: &Regex,
    line: &str,
    time_format: TimeFormat,
    unit: DurationUnit,
    timestamp: TimestampMeaning,
) -> Option<Request> {
    let captures = regex.captures(line)?;
    let (stamp, meaning) = if let Some(start) = captures.name("start") {
        (start.as_str(), TimestampMeaning::Start)
    } else if let Some(end) = captures.name("end") {
        (end.as_str(), TimestampMeaning::End)
    } else {
        (captures.name("time")?.as_str(), timestamp)
    };
    let at = time_format.parse(stamp)?;
    let nanos = scaled_decimal(captures.name("duration")?.as_str(), unit.nanos_exponent())?;
    request(at, meaning, nanos)
}

/// A non-negative integer written in ASCII digits only.
fn whole_number(text: &str) -> Option<i128> {
    if text.is_empty() || text.len() > 30 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A non-negative decimal (`1700000000.500`, `226`, `.5`) times
/// 10^`exponent`, as an integer: exact, digits beyond the last place
/// truncated. Exponent notation (`1.5e-3`, as JSON writers may print floats)
/// goes through `f64`.
pub(crate) fn scaled_decimal(text: &str, exponent: u32) -> Option<i128> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if digits(whole) && digits(fraction) {
        if (whole.is_empty() && fraction.is_empty()) || whole.len() > 24 {
            return None;
        }
        let scale = 10i128.pow(exponent);
        let mut value = if whole.is_empty() {
            0
        } else {
            whole.parse::<i128>().ok()?.checked_mul(scale)?
        };
        let mut place = scale;
        for digit in fraction.bytes().take(exponent as usize) {
            place /= 10;
            value += i128::from(digit - b'0') * place;
        }
        return Some(value);
    }
    if !text.bytes().any(|b| b == b'e' || b == b'E') {
        return None;
    }
    let float: f64 = text.parse().ok()?;
    let scaled = float * 10f64.powi(exponent as i32);
    if !scaled.is_finite() || !(0.0..1e30).contains(&scaled) {
        return None;
    }
    Some(scaled.round() as i128)
}

/// Nanoseconds since the epoch as a UTC time.
pub(crate) fn epoch(nanos: i128) -> Option<DateTime<Utc>> {
    let seconds = i64::try_from(nanos.div_euclid(1_000_000_000)).ok()?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).ok()?;
    DateTime::from_timestamp(seconds, sub)
}

pub(crate) fn rfc3339(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

/// `10/Oct/2000:13:55:36[.123] -0700` (or `+07:00`, `Z`; a space for the
/// colon after the year).
pub(crate) fn clf(text: &str) -> Option<DateTime<Utc>> {
    let (local, zone) = text.trim().rsplit_once(' ')?;
    let offset = utc_offset(zone)?;
    let (date, time) = local.split_at_checked(12)?;
    let mut date_parts = date.split('/');
    let (Some(day), Some(month), Some(year_sep), None) = (
        date_parts.next(),
        date_parts.next(),
        date_parts.next(),
        date_parts.next(),
    ) else {
        return None;
    };
    let year = year_sep.strip_suffix(':').or(year_sep.strip_suffix(' '))?;
    let day = fixed_digits(day, 2)?;
    let year = fixed_digits(year, 4)?;
    let month = month_number(month)?;
    let (hms, fraction) = match time.split_once(['.', ',']) {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    let mut hms_parts = hms.split(':');
    let (Some(hour), Some(minute), Some(second), None) = (
        hms_parts.next(),
        hms_parts.next(),
        hms_parts.next(),
        hms_parts.next(),
    ) else {
        return None;
    };
    let nanos = match fraction {
        None => 0,
        Some(fraction) => {
            if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let mut nanos = 0u32;
            let mut place = 1_000_000_000u32;
            for digit in fraction.bytes().take(9) {
                place /= 10;
                nanos += u32::from(digit - b'0') * place;
            }
            nanos
        }
    };
    let naive = NaiveDate::from_ymd_opt(year as i32, month, day)?.and_hms_nano_opt(
        fixed_digits(hour, 2)?,
        fixed_digits(minute, 2)?,
        fixed_digits(second, 2)?,
        nanos,
    )?;
    Some(
        offset
            .from_local_datetime(&naive)
            .single()?
            .with_timezone(&Utc),
    )
}

/// `-0700`, `+0530`, `+05:30`, `Z`.
fn utc_offset(zone: &str) -> Option<FixedOffset> {
    if zone == "Z" || zone == "z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((hours, minutes)) => (hours, minutes),
        None => digits.split_at_checked(2)?,
    };
    let seconds = fixed_digits(hours, 2)? * 3600 + fixed_digits(minutes, 2)? * 60;
    FixedOffset::east_opt(sign * seconds as i32)
}

/// `text` if it is exactly `len` ASCII digits.
fn fixed_digits(text: &str, len: usize) -> Option<u32> {
    if text.len() != len || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    MONTHS
        .iter()
        .position(|month| month.eq_ignore_ascii_case(name))
        .map(|index| index as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(
            scaled_decimal("1700000000.500", 9),
            Some(1_700_000_000_500_000_000)
        );
        assert_eq!(scaled_decimal("0.250", 9), Some(250_000_000));
        assert_eq!(scaled_decimal("226", 6), Some(226_000_000));
        assert_eq!(scaled_decimal(".5", 3), Some(500));
        assert_eq!(scaled_decimal("1.5e-3", 9), Some(1_500_000));
        assert_eq!(scaled_decimal("1.23456789012", 9), Some(1_234_567_890));
        for bad in [
            "", ".", "-1", "+1", "1.2.3", "abc", "inf", "NaN", "-1e3", "1e400", "0x10",
        ] {
            assert_eq!(scaled_decimal(bad, 9), None, "{bad:?}");
        }
    }

    #[test]
    fn a_nul_block_does_not_swallow_the_next_request() {
        let line = "[2016-04-15T20:17:00.310Z] \"GET / HTTP/2\" 200 - 0 10 226 100 \"-\" \"curl\" \"id\" \"host\" \"tcp://10.0.2.1:80\"";
        let input = format!("{line}\0\0\0\0{line}\n\0\0");
        let mut parser = AccessLogParser::new(AccessFormat::Envoy, 64 * 1024).unwrap();
        let mut requests = Vec::new();
        parser.feed(input.as_bytes(), &mut requests);
        parser.finish(&mut requests);
        assert_eq!(requests.len(), 2);
        assert_eq!((parser.stats().lines, parser.stats().malformed), (2, 0));
    }

    #[test]
    fn clf_honours_offsets_and_fractions() {
        let t = clf("10/Oct/2000:13:55:36 -0700").unwrap();
        assert_eq!(t.to_rfc3339(), "2000-10-10T20:55:36+00:00");
        let t = clf("10/Oct/2000:13:55:36.123 -0700").unwrap();
        assert_eq!(t.timestamp_subsec_millis(), 123);
        let t = clf("10/oct/2000 13:55:36.5 +05:30").unwrap();
        assert_eq!(t.to_rfc3339(), "2000-10-10T08:25:36.500+00:00");
        for bad in [
            "10/Oct/2000:13:55:36",
            "1/Oct/2000:13:55:36 -0700",
            "10/Foo/2000:13:55:36 -0700",
            "31/Feb/2000:13:55:36 -0700",
            "10/Oct/2000:13:55:36. -0700",
            "10/Oct/2000:25:55:36 -0700",
            "10/Oct/2000:13:55:36 -07",
            "",
            "é/Oct/2000:13:55:36 -0700",
        ] {
            assert_eq!(clf(bad), None, "{bad:?}");
        }
    }
}
