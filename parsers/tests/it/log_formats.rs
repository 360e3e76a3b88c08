//! Custom formats given as the server's own format string, and every
//! preset's documented format: lines are written from the format string the
//! way the server fills it in, then parsed. Expected starts and durations
//! are worked out by hand in the comments.

use chrono::{DateTime, TimeZone, Utc};
use pausewatch_parsers::*;

fn at(seconds: i64, nanos: u32) -> DateTime<Utc> {
    Utc.timestamp_opt(seconds, nanos).unwrap()
}

fn nginx(format: &str) -> AccessFormat {
    AccessFormat::LogFormat {
        server: Server::Nginx,
        format: format.to_string(),
    }
}

fn apache(format: &str) -> AccessFormat {
    AccessFormat::LogFormat {
        server: Server::Apache,
        format: format.to_string(),
    }
}

fn one(format: &AccessFormat, line: &str) -> Request {
    format.validate().unwrap();
    parse_line(format, line).unwrap_or_else(|| panic!("did not parse: {line}"))
}

/// Fills a format string in as the server would: every variable replaced by
/// its value, longest names first so `$request` does not eat `$request_time`.
fn render(format: &str, values: &[(&str, &str)]) -> String {
    let mut values = values.to_vec();
    values.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut line = format.to_string();
    for (name, value) in values {
        line = line.replace(name, value);
    }
    assert!(
        !line.contains('$') && !line.contains("%{") && !line.contains("%h"),
        "unfilled variable in {line}"
    );
    line
}

/// The layout from the field: 3,000 of 3,000 lines rejected by the `nginx`
/// preset, read with the format string given.
#[test]
fn an_nginx_layout_given_by_its_log_format_string_parses() {
    // $msec 1700000000.500 is the log write (the end); minus $request_time
    // 0.250 -> start 1700000000.250.
    let line = r#"1700000000.500 0.250 "GET /api/orders?id=1 HTTP/1.1" 200"#;
    assert_eq!(
        parse_line(&AccessFormat::preset("nginx").unwrap(), line),
        None
    );
    let r = one(&nginx(r#"$msec $request_time "$request" $status"#), line);
    assert_eq!(r.start, at(1_700_000_000, 250_000_000));
    assert_eq!(r.duration_s, 0.25);
    // ${variable} spelling, $time_iso8601 (the end, second resolution) and
    // $upstream_response_time after a retry: 0.010 + 0.020 + 0.005 = 0.035.
    let format =
        nginx(r#"${remote_addr} [$time_iso8601] "$request" $status $upstream_response_time"#);
    let r = one(
        &format,
        r#"10.0.0.1 [2023-11-14T14:13:20-08:00] "GET / HTTP/1.1" 502 0.010, 0.020 : 0.005"#,
    );
    assert_eq!(r.duration_s, 0.035);
    // 2023-11-14T22:13:20Z = 1700000000, minus 35 ms.
    assert_eq!(r.start, at(1_699_999_999, 965_000_000));
    // No upstream ("-"): no duration, a malformed line, not a panic.
    assert_eq!(
        parse_line(
            &format,
            r#"10.0.0.1 [2023-11-14T14:13:20-08:00] "GET / HTTP/1.1" 404 -"#
        ),
        None
    );
}

#[test]
fn an_apache_layout_given_by_its_log_format_string_parses() {
    // mod_log_config's documented example line for the common format
    // (httpd.apache.org/docs/2.4/logs.html), with %D = 1234 µs appended.
    // %t is when the request was received: the start, at
    // 2000-10-10T20:55:36Z = 971211336.
    let format = apache(r#"%h %l %u %t \"%r\" %>s %b %D"#);
    let r = one(
        &format,
        r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 1234"#,
    );
    assert_eq!(r.start, at(971_211_336, 0));
    assert_eq!(r.duration_s, 0.001234);
    // A request line holding an escaped quote (Apache writes \").
    let r = one(
        &format,
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a\"b HTTP/1.0" 200 - 7"#,
    );
    assert_eq!(r.duration_s, 0.000007);
    // Millisecond starts the way the Apache manual builds them, %{ms}T.
    let format = apache(r#"%h [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] \"%r\" %>s %{ms}T"#);
    let r = one(
        &format,
        r#"127.0.0.1 [10/Oct/2000:13:55:36.123 -0700] "GET / HTTP/1.1" 200 45"#,
    );
    assert_eq!(r.start, at(971_211_336, 123_000_000));
    assert_eq!(r.duration_s, 0.045);
    // %{end:msec}t is the end: 1700000000500 ms minus %{us}T 250000 µs.
    let r = one(
        &apache(r#"%{end:msec}t %{us}T \"%r\""#),
        r#"1700000000500 250000 "GET / HTTP/1.1""#,
    );
    assert_eq!(r.start, at(1_700_000_000, 250_000_000));
}

#[test]
fn a_format_without_a_time_or_a_duration_is_refused_naming_what_is_missing() {
    let e = nginx(r#"$remote_addr "$request" $request_time"#)
        .validate()
        .unwrap_err();
    assert!(e.contains("$msec, $time_iso8601 or $time_local"), "{e}");
    let e = apache(r#"%h %t \"%r\" %>s %b"#).validate().unwrap_err();
    assert!(e.contains("%D"), "{e}");
    let e = apache("%h %{%Y-%m-%d %H:%M:%S}t %D")
        .validate()
        .unwrap_err();
    assert!(e.contains("%z"), "{e}");
    assert!(AccessLogParser::new(apache("%h %{"), 1024).is_err());
}

#[test]
fn a_custom_format_survives_a_checkpoint() {
    let format = nginx(r#"$msec $request_time "$request" $status"#);
    let mut parser = AccessLogParser::new(format, 64 * 1024).unwrap();
    let mut out = Vec::new();
    parser.feed(
        b"1700000000.500 0.250 \"GET / HTTP/1.1\" 200\n1700000001.000 0.1",
        &mut out,
    );
    let json = serde_json::to_string(&parser).unwrap();
    let mut parser: AccessLogParser = serde_json::from_str(&json).unwrap();
    parser.feed(b"00 \"GET / HTTP/1.1\" 200\nnot a line\n", &mut out);
    parser.finish(&mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].duration_s, 0.1);
    assert_eq!(parser.stats().malformed, 1);
    assert_eq!(
        parser.stats().first_malformed.as_deref(),
        Some("not a line")
    );
}

/// Every preset parses a line written from the format it documents (the
/// text docs/access-logs.md tells users to configure).
#[test]
fn every_preset_parses_a_line_written_from_its_documented_format() {
    // nginx: 14/Nov/2023:14:13:20 -0800 = 1700000000; $msec 1700000000.500
    // minus $request_time 0.250.
    let nginx_values = [
        ("$remote_addr", "203.0.113.7"),
        ("$remote_user", "-"),
        ("$time_local", "14/Nov/2023:14:13:20 -0800"),
        ("$request", "GET /api/orders HTTP/1.1"),
        ("$status", "200"),
        ("$body_bytes_sent", "612"),
        ("$http_referer", "-"),
        ("$http_user_agent", "curl/8.4.0"),
        ("$request_time", "0.250"),
        ("$msec", "1700000000.500"),
    ];
    let documented = AccessFormat::documented("nginx").unwrap();
    let line = render(documented, &nginx_values);
    for format in [AccessFormat::preset("nginx").unwrap(), nginx(documented)] {
        let r = one(&format, &line);
        assert_eq!(
            (r.start, r.duration_s),
            (at(1_700_000_000, 250_000_000), 0.25)
        );
    }

    // Apache: %t 10/Oct/2000:13:55:36 -0700 = 971211336, the start; %D µs.
    let apache_values = [
        ("%h", "127.0.0.1"),
        ("%l", "-"),
        ("%u", "frank"),
        ("%t", "[10/Oct/2000:13:55:36 -0700]"),
        ("%r", "GET /apache_pb.gif HTTP/1.0"),
        ("%>s", "200"),
        ("%b", "2326"),
        ("%{Referer}i", "http://www.example.com/start.html"),
        ("%{User-agent}i", "Mozilla/4.08 [en] (Win98; I ;Nav)"),
        ("%D", "1234"),
    ];
    let documented = AccessFormat::documented("apache").unwrap();
    // LogFormat's string escapes quotes; the log has plain ones.
    let line = render(&documented.replace("\\\"", "\""), &apache_values);
    for format in [AccessFormat::preset("apache").unwrap(), apache(documented)] {
        let r = one(&format, &line);
        assert_eq!((r.start, r.duration_s), (at(971_211_336, 0), 0.001234));
    }

    // Tomcat: %t is the end; %D is µs on 10+, ms on 9.
    let tomcat_values = [
        ("%h", "127.0.0.1"),
        ("%l", "-"),
        ("%u", "-"),
        ("%t", "[10/Oct/2000:13:55:36 -0700]"),
        ("%r", "GET /app HTTP/1.1"),
        ("%s", "200"),
        ("%b", "512"),
        ("%D", "250"),
    ];
    let line = render(AccessFormat::documented("tomcat").unwrap(), &tomcat_values);
    let r = one(&AccessFormat::preset("tomcat").unwrap(), &line);
    assert_eq!(
        (r.start, r.duration_s),
        (at(971_211_335, 999_750_000), 0.00025)
    );
    let r = one(&AccessFormat::preset("tomcat9").unwrap(), &line);
    assert_eq!(
        (r.start, r.duration_s),
        (at(971_211_335, 750_000_000), 0.25)
    );
    let begin_values = [
        ("%h", "127.0.0.1"),
        ("%l", "-"),
        ("%u", "-"),
        ("%{begin:msec}t", "1700000000500"),
        ("%r", "GET /app HTTP/1.1"),
        ("%s", "200"),
        ("%b", "512"),
        ("%D", "250000"),
    ];
    let line = render(
        AccessFormat::documented("tomcat-begin-msec").unwrap(),
        &begin_values,
    );
    let r = one(&AccessFormat::preset("tomcat-begin-msec").unwrap(), &line);
    assert_eq!(
        (r.start, r.duration_s),
        (at(1_700_000_000, 500_000_000), 0.25)
    );

    // Envoy: filled with the values of the documented example, the default
    // format gives Envoy's own example line (envoyproxy.io, access logging).
    let envoy_values = [
        ("%START_TIME%", "2016-04-15T20:17:00.310Z"),
        ("%REQ(:METHOD)%", "POST"),
        ("%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "/api/v1/locations"),
        ("%PROTOCOL%", "HTTP/2"),
        ("%RESPONSE_CODE%", "204"),
        ("%RESPONSE_FLAGS%", "-"),
        ("%BYTES_RECEIVED%", "154"),
        ("%BYTES_SENT%", "0"),
        ("%DURATION%", "226"),
        ("%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%", "100"),
        ("%REQ(X-FORWARDED-FOR)%", "10.0.35.28"),
        ("%REQ(USER-AGENT)%", "nsq2http"),
        (
            "%REQ(X-REQUEST-ID)%",
            "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2",
        ),
        ("%REQ(:AUTHORITY)%", "locations"),
        ("%UPSTREAM_HOST%", "tcp://10.0.2.1:80"),
        ("\\n", "\n"),
    ];
    let line = render(AccessFormat::documented("envoy").unwrap(), &envoy_values);
    assert_eq!(
        line,
        "[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"\n"
    );
    let r = one(&AccessFormat::preset("envoy").unwrap(), line.trim_end());
    assert_eq!(
        (r.start, r.duration_s),
        (at(1_460_751_420, 310_000_000), 0.226)
    );
    let line = render(
        AccessFormat::documented("envoy-json").unwrap(),
        &[
            ("%START_TIME%", "2016-04-15T20:17:00.310Z"),
            ("%DURATION%", "226"),
        ],
    );
    let r = one(&AccessFormat::preset("envoy-json").unwrap(), &line);
    assert_eq!(
        (r.start, r.duration_s),
        (at(1_460_751_420, 310_000_000), 0.226)
    );
}
