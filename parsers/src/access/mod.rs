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

mod fields;
mod log_format;
mod presets;
mod resolution;
#[cfg(test)]
mod tests;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::lines::{LineSplitter, Piece};
pub use fields::{DurationUnit, Request, TimeFormat, TimestampMeaning};
use log_format::CompiledLogFormat;
pub use log_format::Server;
use presets::*;

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
    /// configuration; `None` for other names. docs/access-logs.md quotes these, and
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
