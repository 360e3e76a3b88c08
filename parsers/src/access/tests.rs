use super::fields::*;
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
