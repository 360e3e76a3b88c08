//! Access-log presets against lines written the way each product prints them,
//! following the documented directive quoted in each test; expected starts and
//! durations are worked out by hand in the comments.

use chrono::{DateTime, TimeZone, Utc};
use pausewatch_parsers::*;
use proptest::prelude::*;

/// `seconds` + `nanos` after the epoch.
fn at(seconds: i64, nanos: u32) -> DateTime<Utc> {
    Utc.timestamp_opt(seconds, nanos).unwrap()
}

fn preset(name: &str) -> AccessFormat {
    AccessFormat::preset(name).unwrap_or_else(|| panic!("no preset {name}"))
}

fn parse_all(format: AccessFormat, text: &str) -> (Vec<Request>, AccessStats) {
    let mut parser = AccessLogParser::new(format, 64 * 1024).unwrap();
    let mut out = Vec::new();
    parser.feed(text.as_bytes(), &mut out);
    parser.finish(&mut out);
    (out, parser.stats().clone())
}

/// Parses lines that must all be well formed.
fn parse_ok(format: AccessFormat, text: &str) -> Vec<Request> {
    let (requests, stats) = parse_all(format, text);
    assert_eq!(stats.malformed, 0, "malformed lines in {text}");
    assert_eq!(stats.requests, requests.len() as u64);
    requests
}

/// Asserts when `request` started and how long it took.
fn timed(request: &Request, start: DateTime<Utc>, duration_s: f64) {
    assert_eq!(
        (request.start, request.duration_s),
        (start, duration_s),
        "{request:?}"
    );
}

fn one(format: &AccessFormat, line: &str) -> Request {
    parse_line(format, line).unwrap_or_else(|| panic!("did not parse: {line}"))
}

// ---------------------------------------------------------------- nginx

// log_format pausewatch '$remote_addr - $remote_user [$time_local] "$request" '
//                       '$status $body_bytes_sent "$http_referer" '
//                       '"$http_user_agent" $request_time $msec';
// https://nginx.org/en/docs/http/ngx_http_log_module.html: $msec is the time
// of the log write (request end, ms resolution), $request_time the processing
// time in seconds with ms resolution. nginx escapes `"` in variables as \x22.

#[test]
fn nginx_msec_is_the_end_and_request_time_is_subtracted() {
    // 1700000000 = 2023-11-14T22:13:20Z = 14/Nov/2023:14:13:20 -0800 ($time_local
    // on a host at UTC-8, truncated to the second). End 1700000000.500 minus
    // request_time 0.250 -> start 1700000000.250.
    let log = "\
203.0.113.7 - - [14/Nov/2023:14:13:20 -0800] \"GET /api/orders?id=1 HTTP/1.1\" 200 612 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36\" 0.250 1700000000.500
203.0.113.8 - alice [14/Nov/2023:14:13:21 -0800] \"POST /api/a b \\x22c\\x22 HTTP/1.1\" 201 0 \"https://example.com/x?y=\\x22z\\x22\" \"curl/8.4.0 \\x22quoted\\x22 [en] 1.5 2\" 1.002 1700000001.001
";
    let requests = parse_ok(preset("nginx"), log);
    assert_eq!(requests.len(), 2);
    timed(&requests[0], at(1_700_000_000, 250_000_000), 0.25);
    // 1700000001.001 - 1.002 = 1699999999.999
    timed(&requests[1], at(1_699_999_999, 999_000_000), 1.002);
}

#[test]
fn nginx_iso8601_without_msec_ends_at_the_bracketed_second() {
    // log_format pausewatch '$remote_addr - $remote_user [$time_iso8601] "$request" '
    //                       '$status $body_bytes_sent "$http_referer" '
    //                       '"$http_user_agent" $request_time';
    // $time_iso8601 2023-11-14T14:13:20-08:00 = 1700000000 (end) - 0.250
    // -> start 1699999999.750.
    let line = "203.0.113.7 - - [2023-11-14T14:13:20-08:00] \"GET / HTTP/2.0\" 200 612 \"-\" \"Go-http-client/2.0\" 0.250";
    let r = one(&preset("nginx"), line);
    timed(&r, at(1_699_999_999, 750_000_000), 0.25);
    // The same with [$time_local] and no $msec.
    let line = "203.0.113.7 - - [14/Nov/2023:14:13:20 -0800] \"GET / HTTP/1.1\" 200 612 \"-\" \"curl/8.4.0\" 0.250";
    assert_eq!(
        one(&preset("nginx"), line).start,
        at(1_699_999_999, 750_000_000)
    );
}

#[test]
fn nginx_trailing_number_pair_is_msec_only_when_it_agrees_with_the_bracket() {
    // A common-format line with only $request_time appended: `612 0.250` must
    // not be read as `$request_time $msec` (0.250 is 1970, not 2023).
    let line = "203.0.113.7 - - [14/Nov/2023:14:13:20 -0800] \"GET / HTTP/1.1\" 200 612 0.250";
    let r = one(&preset("nginx"), line);
    timed(&r, at(1_699_999_999, 750_000_000), 0.25);
}

// ---------------------------------------------------------------- Apache

// LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\" %D" pausewatch
// https://httpd.apache.org/docs/2.4/mod/mod_log_config.html: %t is the time
// the request was received (START), %D the time taken in microseconds.
// httpd escapes `"` in %r and %i as \".

#[test]
fn apache_combined_with_d_starts_at_t() {
    // The combined example of https://httpd.apache.org/docs/2.4/logs.html with
    // %D = 1234 appended. 10/Oct/2000:13:55:36 -0700 = 2000-10-10T20:55:36Z
    // = 971211336.
    let log = "\
127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326 \"http://www.example.com/start.html\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\" 1234
127.0.0.1 - - [10/Oct/2000:13:55:37 -0700] \"GET /a\\\"b HTTP/1.1\" 404 - \"-\" \"Mozilla \\\"x\\\" 5.0\" 250000
";
    let requests = parse_ok(preset("apache"), log);
    assert_eq!(requests.len(), 2);
    timed(&requests[0], at(971_211_336, 0), 0.001234);
    timed(&requests[1], at(971_211_337, 0), 0.25);
}

#[test]
fn apache_common_with_d_and_millisecond_time() {
    // LogFormat "%h %l %u %t \"%r\" %>s %b %D"
    let line = "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326 250000";
    let r = one(&preset("apache"), line);
    timed(&r, at(971_211_336, 0), 0.25);
    // %t replaced by [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t]
    let line = "127.0.0.1 - frank [10/Oct/2000:13:55:36.123 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326 250000";
    assert_eq!(
        one(&preset("apache"), line).start,
        at(971_211_336, 123_000_000)
    );
    // The documented "%{%d/%b/%Y %T}t.%{msec_frac}t %{%z}t" inside brackets.
    let line = "127.0.0.1 - frank [10/Oct/2000 13:55:36.007 -0700] \"GET / HTTP/1.0\" 200 2326 9";
    let r = one(&preset("apache"), line);
    timed(&r, at(971_211_336, 7_000_000), 0.000009);
}

#[test]
fn timezone_offsets_are_honoured() {
    // The same instant written at three offsets.
    let format = preset("apache");
    for stamp in [
        "10/Oct/2000:13:55:36 -0700",
        "10/Oct/2000:20:55:36 +0000",
        "11/Oct/2000:02:25:36 +0530",
    ] {
        let line = format!("h - - [{stamp}] \"GET / HTTP/1.1\" 200 1 1");
        assert_eq!(one(&format, &line).start, at(971_211_336, 0), "{stamp}");
    }
}

// ---------------------------------------------------------------- Tomcat

// <Valve className="org.apache.catalina.valves.AccessLogValve" directory="logs"
//        prefix="localhost_access_log" suffix=".txt"
//        pattern="%h %l %u %t &quot;%r&quot; %s %b %D" />
// Tomcat's %t is the time the response finished (AbstractAccessLogValve's
// DateAndTimeElement adds the elapsed time unless the format has `begin:`);
// %D is "Time taken to process the request, in microseconds" from Tomcat 10.0
// (https://tomcat.apache.org/tomcat-11.0-doc/api/org/apache/catalina/valves/AbstractAccessLogValve.html)
// and "in millis" before
// (https://tomcat.apache.org/tomcat-8.5-doc/api/org/apache/catalina/valves/AbstractAccessLogValve.html).

#[test]
fn tomcat_10_and_9_differ_in_the_unit_of_d() {
    // The Tomcat example line of
    // https://support.huaweicloud.com/intl/en-us/usermanual-lts/lts_07_0048.html,
    // 192.168.12.2 - - [07/Mar/2018:09:49:55 +0800] "GET /logHello/test HTTP/1.1" 200 1943,
    // with %D appended. 09:49:55 +0800 = 01:49:55Z = 1520387395 (end).
    let tomcat10 = "192.168.12.2 - - [07/Mar/2018:09:49:55 +0800] \"GET /logHello/test HTTP/1.1\" 200 1943 250000";
    let r = one(&preset("tomcat"), tomcat10);
    assert_eq!(r.duration_s, 0.25); // 250000 µs
    assert_eq!(r.start, at(1_520_387_394, 750_000_000));
    assert_eq!(parse_line(&preset("tomcat10"), tomcat10), Some(r));

    let tomcat9 =
        "192.168.12.2 - - [07/Mar/2018:09:49:55 +0800] \"GET /logHello/test HTTP/1.1\" 200 - 250";
    let r = one(&preset("tomcat9"), tomcat9);
    assert_eq!(r.duration_s, 0.25); // 250 ms
    assert_eq!(r.start, at(1_520_387_394, 750_000_000));

    // The Tomcat 10 line read as Tomcat 9 is 250 seconds long.
    assert_eq!(one(&preset("tomcat9"), tomcat10).duration_s, 250.0);
}

#[test]
fn tomcat_msec_brackets_end_or_begin_by_preset() {
    // pattern="%h %l %u [%{msec}t] &quot;%r&quot; %s %b %D" (= %{end:msec}t):
    // end 1700000000500 ms - 250000 µs -> start 1700000000.250.
    let end = "10.0.0.1 - - [1700000000500] \"GET /x HTTP/1.1\" 200 5 250000";
    let r = one(&preset("tomcat"), end);
    timed(&r, at(1_700_000_000, 250_000_000), 0.25);
    // pattern="%h %l %u [%{begin:msec}t] &quot;%r&quot; %s %b %D": start as written.
    let begin = "10.0.0.1 - bob [1700000000250] \"GET /x y HTTP/1.1\" 200 - 250000";
    let r = one(&preset("tomcat-begin-msec"), begin);
    timed(&r, at(1_700_000_000, 250_000_000), 0.25);
    let begin9 = "10.0.0.1 - - [1700000000250] \"GET /x HTTP/1.1\" 200 5 250";
    let r = one(&preset("tomcat9-begin-msec"), begin9);
    timed(&r, at(1_700_000_000, 250_000_000), 0.25);
}

// ---------------------------------------------------------------- Envoy

#[test]
fn envoy_default_format_documented_example() {
    // Default format and example line from
    // https://www.envoyproxy.io/docs/envoy/v1.20.0/configuration/observability/access_log/usage
    // (the doc wraps it over two lines; Envoy writes one):
    // [%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
    // %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ...
    // START_TIME = request start (2016-04-15T20:17:00.310Z = 1460751420.310),
    // DURATION = 226 ms.
    let log = "\
[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"
[2016-04-15T20:17:01.000Z] \"GET /a\"b\" c HTTP/1.1\" 503 UH,UF 0 19 0 - \"-\" \"curl/7.64.0\" \"d0b2\" \"svc\" \"-\"
";
    let requests = parse_ok(preset("envoy"), log);
    assert_eq!(requests.len(), 2);
    timed(&requests[0], at(1_460_751_420, 310_000_000), 0.226);
    timed(&requests[1], at(1_460_751_421, 0), 0.0);
}

#[test]
fn envoy_json_documented_keys_string_or_number() {
    // The json_format example of the Envoy docs (output
    // {"protocol": "HTTP/1.1", "duration": "123", "my_custom_header": "value_of_MY_CUSTOM_HEADER"})
    // with "start_time": "%START_TIME%" added, as Istio's JSON encoding does;
    // typed_json_format renders duration as the number 123.
    let log = "\
{\"start_time\": \"2016-04-15T20:17:00.310Z\", \"protocol\": \"HTTP/1.1\", \"duration\": \"123\", \"my_custom_header\": \"value_of_MY_CUSTOM_HEADER\"}
{\"start_time\":\"2016-04-15T20:17:00.310Z\",\"protocol\":\"HTTP/1.1\",\"duration\":123}
";
    let requests = parse_ok(preset("envoy-json"), log);
    assert_eq!(requests.len(), 2);
    for r in &requests {
        timed(r, at(1_460_751_420, 310_000_000), 0.123);
    }
}

// ---------------------------------------------------------------- json, regex

#[test]
fn json_with_nested_fields_units_and_meanings() {
    let format = AccessFormat::Json {
        time_field: "http.start_ms".into(),
        time_format: TimeFormat::EpochMillis,
        duration_field: "took_us".into(),
        duration_unit: DurationUnit::Microseconds,
        timestamp: TimestampMeaning::Start,
    };
    let r = one(
        &format,
        r#"{"http":{"start_ms":1700000000250,"path":"/x"},"took_us":250000}"#,
    );
    timed(&r, at(1_700_000_000, 250_000_000), 0.25);
    // A top-level key holding the dots wins over the nested path.
    let r = one(
        &format,
        r#"{"http.start_ms":"1700000001000","http":{"start_ms":5},"took_us":"1"}"#,
    );
    assert_eq!(r.start, at(1_700_000_001, 0));

    // End timestamps in RFC 3339 with an offset, duration in float seconds.
    let format = AccessFormat::Json {
        time_field: "ts".into(),
        time_format: TimeFormat::Rfc3339,
        duration_field: "elapsed".into(),
        duration_unit: DurationUnit::Seconds,
        timestamp: TimestampMeaning::End,
    };
    // 2023-11-14T14:13:20.5-08:00 = 1700000000.5 end - 0.000250 -> 1700000000.49975
    let r = one(
        &format,
        r#"{"ts":"2023-11-14T14:13:20.5-08:00","elapsed":0.00025}"#,
    );
    timed(&r, at(1_700_000_000, 499_750_000), 0.00025);
    // Exponent notation from a float-printing logger.
    let r = one(&format, r#"{"ts":"2023-11-14T22:13:20Z","elapsed":2.5e-4}"#);
    assert_eq!(r.start, at(1_699_999_999, 999_750_000));

    // Epoch seconds kept to the nanosecond, CLF strings, nanosecond durations.
    let format = AccessFormat::Json {
        time_field: "t".into(),
        time_format: TimeFormat::EpochSeconds,
        duration_field: "d".into(),
        duration_unit: DurationUnit::Nanoseconds,
        timestamp: TimestampMeaning::Start,
    };
    let r = one(&format, r#"{"t":"1700000000.123456789","d":1500}"#);
    timed(&r, at(1_700_000_000, 123_456_789), 0.0000015);
    let format = AccessFormat::Json {
        time_field: "t".into(),
        time_format: TimeFormat::Clf,
        duration_field: "d".into(),
        duration_unit: DurationUnit::Milliseconds,
        timestamp: TimestampMeaning::Start,
    };
    let r = one(&format, r#"{"t":"10/Oct/2000:13:55:36.5 -0700","d":1}"#);
    assert_eq!(r.start, at(971_211_336, 500_000_000));

    for bad in [
        r#"{"t":"10/Oct/2000:13:55:36 -0700"}"#,
        r#"{"d":1}"#,
        r#"{"t":12,"d":1}"#,
        r#"{"t":"10/Oct/2000:13:55:36 -0700","d":-1}"#,
        r#"{"t":"10/Oct/2000:13:55:36 -0700","d":null}"#,
        r#"["t","d"]"#,
        "not json",
    ] {
        assert_eq!(parse_line(&format, bad), None, "{bad}");
    }
}

#[test]
fn regex_groups_start_end_time() {
    let end = AccessFormat::Regex {
        pattern: r"^\S+ \[(?P<end>[^\]]+)\] .* (?P<duration>[0-9.]+)$".into(),
        time_format: TimeFormat::Clf,
        duration_unit: DurationUnit::Seconds,
        timestamp: TimestampMeaning::Start, // ignored: the group says `end`
    };
    assert!(end.validate().is_ok());
    let r = one(&end, "1.2.3.4 [14/Nov/2023:14:13:20 -0800] GET / 0.5");
    timed(&r, at(1_699_999_999, 500_000_000), 0.5);

    let time = AccessFormat::Regex {
        pattern: r"t=(?P<time>\d+) d=(?P<duration>\d+)".into(),
        time_format: TimeFormat::EpochMicros,
        duration_unit: DurationUnit::Microseconds,
        timestamp: TimestampMeaning::End,
    };
    // end 1700000000.000250 - 250 µs -> 1700000000.
    let r = one(&time, "level=info t=1700000000000250 d=250 path=/");
    assert_eq!(r.start, at(1_700_000_000, 0));
    let time_start = AccessFormat::Regex {
        pattern: r"t=(?P<time>\d+) d=(?P<duration>\d+)".into(),
        time_format: TimeFormat::EpochMicros,
        duration_unit: DurationUnit::Microseconds,
        timestamp: TimestampMeaning::Start,
    };
    assert_eq!(
        one(&time_start, "t=1700000000000250 d=250").start,
        at(1_700_000_000, 250_000)
    );

    let start = AccessFormat::Regex {
        pattern: r"^(?P<start>\S+) (?P<duration>\S+)ms".into(),
        time_format: TimeFormat::Rfc3339,
        duration_unit: DurationUnit::Milliseconds,
        timestamp: TimestampMeaning::End,
    };
    let r = one(&start, "2023-11-14T22:13:20.000123Z 12.5ms");
    timed(&r, at(1_700_000_000, 123_000), 0.0125);
    assert_eq!(parse_line(&start, "no match here"), None);
    assert_eq!(parse_line(&start, "yesterday 12ms"), None);
}

// ---------------------------------------------------------------- config

#[test]
fn presets_and_validation() {
    for name in AccessFormat::PRESETS {
        let format = preset(name);
        assert_eq!(format.validate(), Ok(()), "{name}");
        AccessLogParser::new(format, 1024).unwrap();
    }
    for name in ["json", "regex", "", "NGINX", "envoy_json"] {
        assert_eq!(AccessFormat::preset(name), None, "{name}");
    }
    assert_eq!(
        preset("tomcat"),
        AccessFormat::Tomcat {
            duration_unit: DurationUnit::Microseconds
        }
    );
    assert_eq!(
        preset("tomcat9"),
        AccessFormat::Tomcat {
            duration_unit: DurationUnit::Milliseconds
        }
    );

    let regex = |pattern: &str| AccessFormat::Regex {
        pattern: pattern.into(),
        time_format: TimeFormat::Rfc3339,
        duration_unit: DurationUnit::Seconds,
        timestamp: TimestampMeaning::Start,
    };
    for bad in [
        r"(?P<start>\S+) (?P<duration>",                  // does not compile
        r"(?P<start>\S+) (\S+)",                          // no duration
        r"(\S+) (?P<duration>\S+)",                       // no time group
        r"(?P<start>\S+) (?P<end>\S+) (?P<duration>\S+)", // two time groups
    ] {
        let format = regex(bad);
        assert!(format.validate().is_err(), "{bad}");
        assert!(AccessLogParser::new(format.clone(), 1024).is_err(), "{bad}");
        assert_eq!(parse_line(&format, "2023-11-14T22:13:20Z 1"), None);
    }
    let json = AccessFormat::Json {
        time_field: " ".into(),
        time_format: TimeFormat::Rfc3339,
        duration_field: "d".into(),
        duration_unit: DurationUnit::Seconds,
        timestamp: TimestampMeaning::Start,
    };
    assert!(json.validate().is_err());
    assert!(AccessLogParser::new(preset("nginx"), 0).is_err());
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

#[test]
fn serde_names_are_snake_case() {
    assert_eq!(json(&AccessFormat::Nginx), r#""nginx""#);
    assert_eq!(json(&AccessFormat::EnvoyJson), r#""envoy_json""#);
    assert_eq!(
        json(&preset("tomcat9")),
        r#"{"tomcat":{"duration_unit":"milliseconds"}}"#
    );
    assert_eq!(json(&TimeFormat::EpochMillis), r#""epoch_millis""#);
    assert_eq!(json(&TimeFormat::Rfc3339), r#""rfc3339""#);
    assert_eq!(json(&TimestampMeaning::End), r#""end""#);
    assert_eq!(json(&DurationUnit::Microseconds), r#""microseconds""#);
    let format: AccessFormat = serde_json::from_str(
        r#"{"json":{"time_field":"a.b","time_format":"epoch_seconds","duration_field":"d","duration_unit":"seconds","timestamp":"end"}}"#,
    )
    .unwrap();
    assert_eq!(
        format,
        AccessFormat::Json {
            time_field: "a.b".into(),
            time_format: TimeFormat::EpochSeconds,
            duration_field: "d".into(),
            duration_unit: DurationUnit::Seconds,
            timestamp: TimestampMeaning::End,
        }
    );
}

// ---------------------------------------------------------------- streaming

/// Lines of every preset, each valid for its own format.
fn sample(name: &str) -> &'static str {
    match name {
        "nginx" => "203.0.113.7 - - [14/Nov/2023:14:13:20 -0800] \"GET / HTTP/1.1\" 200 612 \"-\" \"curl/8.4.0\" 0.250 1700000000.500\n",
        "apache" => "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326 \"-\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\" 1234\n",
        "tomcat" | "tomcat9" => "192.168.12.2 - - [07/Mar/2018:09:49:55 +0800] \"GET /logHello/test HTTP/1.1\" 200 1943 250\n",
        "tomcat-begin-msec" | "tomcat9-begin-msec" => "10.0.0.1 - - [1700000000250] \"GET /x HTTP/1.1\" 200 5 250\n",
        "envoy" => "[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"\n",
        "envoy-json" => "{\"start_time\":\"2016-04-15T20:17:00.310Z\",\"duration\":\"123\"}\n",
        _ => unreachable!(),
    }
}

#[test]
fn malformed_blank_and_too_long_lines_are_counted_and_skipped() {
    let good = sample("envoy");
    let long = format!("[{}]\n", "x".repeat(300));
    let log = format!(
        "{good}garbage line\n\n   \r\n{good}[2016-04-15T20:17:00.310Z] \"GET / HTTP/1.1\" 200 - 1 2 -\n{long}{}\r\n\u{ff}\u{fe}\n{}",
        good.trim_end(),
        good.trim_end() // unterminated last line, parsed by finish()
    );
    let mut parser = AccessLogParser::new(preset("envoy"), 256).unwrap();
    let mut out = Vec::new();
    parser.feed(log.as_bytes(), &mut out);
    assert_eq!(out.len(), 3);
    parser.finish(&mut out);
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|r| r.duration_s == 0.226));
    assert_eq!(
        parser.stats(),
        &AccessStats {
            bytes: log.len() as u64,
            lines: 10,
            requests: 4,
            malformed: 3, // garbage, DURATION "-", the \u{ff}\u{fe} line
            too_long: 1,
            first_malformed: Some("garbage line".to_string()),
        }
    );
}

#[test]
fn a_byte_order_mark_does_not_cost_the_first_line() {
    let log = format!("\u{feff}{}", sample("envoy-json"));
    assert_eq!(parse_ok(preset("envoy-json"), &log).len(), 1);
}

#[test]
fn every_preset_rejects_the_others_lines() {
    let names = AccessFormat::PRESETS;
    for name in names {
        for other in names {
            let line = sample(other).trim_end();
            let parsed = parse_line(&preset(name), line).is_some();
            let same_shape = sample(name) == sample(other);
            // Tomcat-9 end lines also fit the Tomcat 10 preset (only the unit
            // differs) and nginx accepts any CLF line ending in a number; the
            // rest must not cross-parse.
            let tolerated = matches!(
                (*name, *other),
                ("nginx", "apache" | "tomcat" | "tomcat9")
                    | ("apache", "tomcat" | "tomcat9" | "nginx")
                    | (
                        "tomcat" | "tomcat9",
                        "apache" | "nginx" | "tomcat-begin-msec" | "tomcat9-begin-msec"
                    )
                    | ("tomcat-begin-msec" | "tomcat9-begin-msec", _)
            );
            if same_shape {
                assert!(parsed, "{name} on its own sample");
            } else if !tolerated {
                assert!(!parsed, "{name} parsed a {other} line");
            }
        }
    }
}

#[test]
fn checkpoint_mid_line_and_resume() {
    let regex = AccessFormat::Regex {
        pattern: r"^(?P<start>\S+) (?P<duration>\d+)$".into(),
        time_format: TimeFormat::Rfc3339,
        duration_unit: DurationUnit::Milliseconds,
        timestamp: TimestampMeaning::Start,
    };
    let regex_log = "2023-11-14T22:13:20Z 5\n2023-11-14T22:13:21Z 6\nbad\n2023-11-14T22:13:22Z 7\n";
    for (format, log) in [
        (regex, regex_log.to_string()),
        (preset("nginx"), sample("nginx").repeat(3)),
    ] {
        let whole = parse_all(format.clone(), &log);
        let mut parser = AccessLogParser::new(format, 1024).unwrap();
        let mut out = Vec::new();
        let cut = log.len() / 2 + 3;
        parser.feed(&log.as_bytes()[..cut], &mut out);
        let saved = serde_json::to_string(&parser).unwrap();
        let mut parser: AccessLogParser = serde_json::from_str(&saved).unwrap();
        parser.feed(&log.as_bytes()[cut..], &mut out);
        parser.finish(&mut out);
        assert_eq!(out, whole.0);
        assert_eq!(parser.stats(), &whole.1);
    }
}

fn run(
    format: &AccessFormat,
    input: &[u8],
    chunks: &[usize],
    max: usize,
) -> (Vec<Request>, AccessStats) {
    let mut parser = AccessLogParser::new(format.clone(), max).unwrap();
    let mut out = Vec::new();
    let mut offset = 0;
    let mut sizes = chunks.iter().cycle();
    while offset < input.len() {
        let size = sizes.next().copied().unwrap_or(input.len()).max(1);
        let end = (offset + size).min(input.len());
        parser.feed(&input[offset..end], &mut out);
        offset = end;
    }
    parser.finish(&mut out);
    (out, parser.stats().clone())
}

fn all_formats() -> Vec<AccessFormat> {
    let mut formats: Vec<AccessFormat> = AccessFormat::PRESETS.iter().map(|n| preset(n)).collect();
    formats.push(AccessFormat::Json {
        time_field: "a.b".into(),
        time_format: TimeFormat::EpochSeconds,
        duration_field: "d".into(),
        duration_unit: DurationUnit::Seconds,
        timestamp: TimestampMeaning::End,
    });
    formats.push(AccessFormat::Regex {
        pattern: r"\[(?P<time>[^\]]*)\].* (?P<duration>\S+)$".into(),
        time_format: TimeFormat::Clf,
        duration_unit: DurationUnit::Microseconds,
        timestamp: TimestampMeaning::End,
    });
    for (server, format) in [
        (
            Server::Nginx,
            r#"$msec $request_time "$request" $upstream_response_time"#,
        ),
        (
            Server::Apache,
            r#"[%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] \"%r\" %{ms}T"#,
        ),
    ] {
        formats.push(AccessFormat::LogFormat {
            server,
            format: format.into(),
        });
    }
    formats
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn chunking_never_changes_the_result(
        picks in proptest::collection::vec(0usize..8, 1..40),
        garbage in proptest::collection::vec(any::<u8>(), 0..300),
        at_line in 0usize..40,
        chunks in proptest::collection::vec(1usize..200, 1..12),
        max in prop_oneof![Just(64 * 1024), 40usize..300],
    ) {
        let names = AccessFormat::PRESETS;
        for name in names {
            let format = preset(name);
            let mut input = Vec::new();
            for (i, pick) in picks.iter().enumerate() {
                if i == at_line {
                    input.extend_from_slice(&garbage);
                }
                input.extend_from_slice(sample(names[*pick % names.len()]).as_bytes());
                if pick % 3 == 0 {
                    input.extend_from_slice(b"\r\n\n");
                }
            }
            let whole = run(&format, &input, &[input.len()], max);
            let chunked = run(&format, &input, &chunks, max);
            prop_assert_eq!(&whole.1, &chunked.1);
            prop_assert_eq!(&whole.0, &chunked.0);
            prop_assert_eq!(whole.1.bytes, input.len() as u64);
            prop_assert_eq!(whole.1.requests, whole.0.len() as u64);
            if max == 64 * 1024 && garbage.is_empty() {
                // Every line of this preset's own shape parsed.
                let own = picks.iter().filter(|p| sample(names[**p % names.len()]) == sample(name)).count();
                prop_assert!(whole.0.len() >= own);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        for format in all_formats() {
            let (out, stats) = run(&format, &bytes, &[7, 300, 1], 256);
            prop_assert_eq!(stats.bytes, bytes.len() as u64);
            prop_assert_eq!(stats.requests, out.len() as u64);
            prop_assert!(stats.requests + stats.malformed + stats.too_long <= stats.lines);
        }
    }

    #[test]
    fn arbitrary_lines_never_panic(
        line in "[\\[\\]\"{}:./ 0-9a-zA-Z+-]{0,120}",
        noise in any::<String>(),
    ) {
        for format in all_formats() {
            for text in [line.as_str(), noise.as_str()] {
                if let Some(r) = parse_line(&format, text) {
                    prop_assert!(r.duration_s >= 0.0 && r.duration_s.is_finite());
                }
            }
        }
    }
}
