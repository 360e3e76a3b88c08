//! The histogram source's unit tests: parsing, quantiles, the accumulator, a restart.

use std::collections::BTreeMap;

use super::*;
use crate::model::correlate::LatencySummary;
use crate::model::histogram::histogram_quantile;
use crate::store::Store;
use chrono::TimeZone;

const INF: f64 = f64::INFINITY;

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

#[track_caller]
fn assert_close(actual: f64, expected: f64) {
    assert!(close(actual, expected), "{actual} != {expected}");
}

fn none() -> BTreeMap<String, String> {
    BTreeMap::new()
}

fn matchers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, h, m, s).unwrap()
}

/// Micrometer's output with `publishPercentileHistogram`, as posted in
/// "Java Micrometer - What to do with metrics of type *_bucket"
/// (Stack Overflow question 68394394, mirrored at
/// https://newbetuts.com/68394394-java-micrometer-what-to-do-with-metrics-of-type-bucket),
/// copied verbatim: note the `,}` Micrometer writes and the trailing
/// blanks of the HELP line. The excerpt stops before the `+Inf` bucket.
const MICROMETER_EXCERPT: &str = "\
# HELP http_server_requests_seconds  
# TYPE http_server_requests_seconds histogram
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.005592405\",} 273.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.006990506\",} 797.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.008388607\",} 2638.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.009786708\",} 3543.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.011184809\",} 3932.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.01258291\",} 4154.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.013981011\",} 4279.0
http_server_requests_seconds_bucket{exception=\"None\",method=\"GET\",outcome=\"SUCCESS\",status=\"200\",uri=\"/health\",le=\"0.015379112\",} 4380.0
";

#[test]
fn parses_the_documented_micrometer_excerpt() {
    let expected = vec![
        (0.005592405, 273.0),
        (0.006990506, 797.0),
        (0.008388607, 2638.0),
        (0.009786708, 3543.0),
        (0.011184809, 3932.0),
        (0.01258291, 4154.0),
        (0.013981011, 4279.0),
        (0.015379112, 4380.0),
    ];
    let buckets =
        parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &none()).unwrap();
    assert_eq!(buckets, expected);
    let health = matchers(&[("uri", "/health"), ("method", "GET")]);
    assert_eq!(
        parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &health).unwrap(),
        expected
    );
    // The excerpt has no +Inf bucket: no quantile, as Prometheus gives NaN.
    assert_eq!(histogram_quantile(0.5, &buckets), None);

    let other = matchers(&[("uri", "/price")]);
    let error =
        parse_buckets(MICROMETER_EXCERPT, "http_server_requests_seconds", &other).unwrap_err();
    assert!(
        error.contains("1 series") && error.contains("uri=\"/price\""),
        "{error}"
    );
    let error = parse_buckets(MICROMETER_EXCERPT, "jvm_gc_pause_seconds", &none()).unwrap_err();
    assert!(
        error.contains("no `jvm_gc_pause_seconds_bucket` samples"),
        "{error}"
    );
}

/// Both text formats, every syntax the parser must get through.
const MIXED: &str = r#"# HELP http_server_requests_seconds Duration of HTTP server request handling
# TYPE http_server_requests_seconds histogram
http_server_requests_seconds{uri="/price",quantile="0.99",} 0.3
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="0.1",} 10.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="0.5",} 18.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/price",le="+Inf",} 20.0 1714557600000
http_server_requests_seconds_count{method="GET",status="200",uri="/price",} 20.0
http_server_requests_seconds_sum{method="GET",status="200",uri="/price",} 3.5
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="1.0e-1"} 1 # {trace_id="abc"} 0.05 1714557600.123
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="5.0E-1"} 3
http_server_requests_seconds_bucket{uri="/price",method="GET",status="500",le="+Inf"} 5
http_server_requests_seconds_created{uri="/price",method="GET",status="500"} 1714557000.0
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="0.1"} 100
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="0.5"} 200
http_server_requests_seconds_bucket{method="GET",status="200",uri="/say \"hi\", \\ bye",le="+Inf"} 300
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="0.1"} NaN
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="0.5"} NaN
http_server_requests_seconds_bucket{method="POST",status="200",uri="/price",le="+Inf"} NaN
http_server_requests_seconds_bucket_total{uri="/price",le="0.1"} 999
http_server_requests_seconds_max{uri="/price"} 0.9
{"http_server_requests_seconds_bucket", uri="/utf8", le="0.1"} 7
{"http_server_requests_seconds_bucket", uri="/utf8", le="0.5"} 8
{"http_server_requests_seconds_bucket", uri="/utf8", le="+Inf"} 9
{"other.metric_bucket", uri="/price", le="0.1"} 1000
# EOF
"#;

#[test]
fn parses_both_text_formats_and_sums_matching_series() {
    let metric = "http_server_requests_seconds";
    // uri="/price": 200s + 500s; the POST series is NaN and left out.
    let price = parse_buckets(MIXED, metric, &matchers(&[("uri", "/price")])).unwrap();
    assert_eq!(price, vec![(0.1, 11.0), (0.5, 21.0), (INF, 25.0)]);
    // Escaped quotes, backslashes and commas in a label value.
    let quoted =
        parse_buckets(MIXED, metric, &matchers(&[("uri", "/say \"hi\", \\ bye")])).unwrap();
    assert_eq!(quoted, vec![(0.1, 100.0), (0.5, 200.0), (INF, 300.0)]);
    // A quoted (UTF-8 style) metric name.
    let utf8 = parse_buckets(MIXED, metric, &matchers(&[("uri", "/utf8")])).unwrap();
    assert_eq!(utf8, vec![(0.1, 7.0), (0.5, 8.0), (INF, 9.0)]);
    // Everything that is not NaN.
    let all = parse_buckets(MIXED, metric, &none()).unwrap();
    assert_eq!(all, vec![(0.1, 118.0), (0.5, 229.0), (INF, 334.0)]);
    // Only NaN series match.
    let error = parse_buckets(MIXED, metric, &matchers(&[("method", "POST")])).unwrap_err();
    assert!(error.contains("NaN"), "{error}");
}

#[test]
fn matchers_filter_series() {
    let text = r#"
lat_bucket{uri="/price",method="GET",le="0.1"} 1
lat_bucket{uri="/price",method="GET",le="+Inf"} 2
lat_bucket{uri="/price",method="POST",le="0.1"} 10
lat_bucket{uri="/price",method="POST",le="+Inf"} 20
lat_bucket{uri="/health",method="GET",le="0.1"} 100
lat_bucket{uri="/health",method="GET",le="+Inf"} 200
lat_bucket{uri="/price",method="GET",region="eu",le="0.1"} 1000
lat_bucket{uri="/price",method="GET",region="eu",le="+Inf"} 2000
"#;
    let parse = |pairs: &[(&str, &str)]| parse_buckets(text, "lat", &matchers(pairs));
    assert_eq!(parse(&[]).unwrap(), vec![(0.1, 1111.0), (INF, 2222.0)]);
    assert_eq!(
        parse(&[("uri", "/price")]).unwrap(),
        vec![(0.1, 1011.0), (INF, 2022.0)]
    );
    assert_eq!(
        parse(&[("uri", "/price"), ("method", "GET")]).unwrap(),
        vec![(0.1, 1001.0), (INF, 2002.0)]
    );
    // An empty value matches series without the label, as in PromQL.
    assert_eq!(
        parse(&[("uri", "/price"), ("region", "")]).unwrap(),
        vec![(0.1, 11.0), (INF, 22.0)]
    );
    assert!(parse(&[("uri", "/nope")]).unwrap_err().contains("4 series"));
    assert!(parse(&[("le", "0.1")]).is_err());
}

#[test]
fn malformed_bucket_lines_are_errors_other_lines_are_not() {
    let metric = "lat";
    let ok = "garbage that is not ours {{{\nlat_bucket{le=\"+Inf\"} 3\n";
    assert_eq!(
        parse_buckets(ok, metric, &none()).unwrap(),
        vec![(INF, 3.0)]
    );
    for bad in [
        "lat_bucket{le=\"0.1\"",
        "lat_bucket{le=\"0.1} 3",
        "lat_bucket{le=0.1} 3",
        "lat_bucket{uri=\"/\"} 3",
        "lat_bucket{le=\"abc\"} 3",
        "lat_bucket{le=\"NaN\"} 3",
        "lat_bucket{le=\"0.1\"}",
        "lat_bucket{le=\"0.1\"} x",
    ] {
        let error = parse_buckets(bad, metric, &none()).unwrap_err();
        assert!(error.starts_with("line 1:"), "{bad}: {error}");
    }
}

#[test]
fn series_with_different_layouts_stay_cumulative() {
    let text = r#"
lat_bucket{uri="/a",le="0.1"} 5
lat_bucket{uri="/a",le="+Inf"} 10
lat_bucket{uri="/b",le="0.2"} 1
lat_bucket{uri="/b",le="+Inf"} 2
"#;
    // /b contributes 0 at 0.1 (nothing known below 0.2); /a contributes its
    // 0.1 count at 0.2.
    let buckets = parse_buckets(text, "lat", &none()).unwrap();
    assert_eq!(buckets, vec![(0.1, 5.0), (0.2, 6.0), (INF, 12.0)]);
}

#[test]
fn quantile_interpolates_like_histogram_quantile() {
    // Cumulative: 50 at or below 0.1, 90 at or below 0.2, 99 at or below 0.5, 100 in all.
    let buckets = vec![(0.1, 50.0), (0.2, 90.0), (0.5, 99.0), (INF, 100.0)];
    // p50: rank 50 is the whole first bucket [0, 0.1]: 0.1.
    assert_close(histogram_quantile(0.50, &buckets).unwrap(), 0.1);
    // p25: rank 25 of 50 in [0, 0.1]: 0.05.
    assert_close(histogram_quantile(0.25, &buckets).unwrap(), 0.05);
    // p60: rank 60 is 10 of 40 in (0.1, 0.2]: 0.125.
    assert_close(histogram_quantile(0.60, &buckets).unwrap(), 0.125);
    // p90: rank 90 is all 40 of (0.1, 0.2]: 0.2.
    assert_close(histogram_quantile(0.90, &buckets).unwrap(), 0.2);
    // p95: rank 95 is 5 of 9 in (0.2, 0.5]: 0.2 + 5/9 * 0.3 = 0.36666...
    assert_close(
        histogram_quantile(0.95, &buckets).unwrap(),
        0.2 + (5.0 / 9.0) * 0.3,
    );
    assert_close(
        histogram_quantile(0.95, &buckets).unwrap(),
        0.366_666_666_666_666_7,
    );
    // p99: rank 99 is all 9 of (0.2, 0.5]: 0.5.
    assert_close(histogram_quantile(0.99, &buckets).unwrap(), 0.5);
    // p99.9: rank 99.9 is in +Inf: the highest finite bound.
    assert_close(histogram_quantile(0.999, &buckets).unwrap(), 0.5);
    assert_close(histogram_quantile(1.0, &buckets).unwrap(), 0.5);
    // Order of the input does not matter.
    let mut shuffled = buckets.clone();
    shuffled.reverse();
    assert_close(
        histogram_quantile(0.95, &shuffled).unwrap(),
        0.2 + (5.0 / 9.0) * 0.3,
    );

    assert_eq!(histogram_quantile(0.5, &[(0.1, 0.0), (INF, 0.0)]), None);
    assert_eq!(histogram_quantile(0.5, &[(0.1, 3.0), (0.2, 4.0)]), None);
    assert_eq!(histogram_quantile(0.5, &[(INF, 4.0)]), None);
    assert_eq!(histogram_quantile(1.5, &buckets), None);
    assert_eq!(histogram_quantile(f64::NAN, &buckets), None);
    // A non-positive lowest bound is returned as is.
    assert_close(
        histogram_quantile(0.1, &[(-1.0, 5.0), (INF, 10.0)]).unwrap(),
        -1.0,
    );
    // Non-cumulative noise is flattened: (0.2, 80) counts as 90.
    let noisy = vec![(0.1, 90.0), (0.2, 80.0), (0.5, 99.0), (INF, 100.0)];
    assert_close(
        histogram_quantile(0.95, &noisy).unwrap(),
        0.2 + (5.0 / 9.0) * 0.3,
    );
}

#[test]
fn summary_of_a_delta() {
    let delta = vec![
        (0.1, 50.0),
        (0.2, 90.0),
        (0.5, 99.0),
        (1.0, 100.0),
        (INF, 100.0),
    ];
    let summary = summarize(&delta);
    assert_eq!(summary.count, 100);
    assert_close(summary.p50_seconds, 0.1);
    assert_close(summary.p90_seconds, 0.2);
    assert_close(summary.p99_seconds, 0.5);
    // rank 99.9 is 0.9 of 1 in (0.5, 1]: 0.95.
    assert_close(summary.p999_seconds, 0.95);
    // Highest non-empty bucket: (0.5, 1].
    assert_close(summary.max_seconds, 1.0);
    // Something above the highest finite bound: its bound is the max.
    let summary = summarize(&vec![(0.1, 1.0), (1.0, 1.0), (INF, 2.0)]);
    assert_close(summary.max_seconds, 1.0);
    assert_eq!(
        summarize(&vec![(0.1, 0.0), (INF, 0.0)]),
        LatencySummary::default()
    );
}

/// A histogram the tests write requests into; `scrape` gives its cumulative counts.
struct Model {
    bounds: Vec<f64>,
    counts: Vec<f64>,
}

impl Model {
    fn new(bounds: &[f64]) -> Model {
        let mut bounds = bounds.to_vec();
        bounds.push(INF);
        let counts = vec![0.0; bounds.len()];
        Model { bounds, counts }
    }

    fn record(&mut self, seconds: f64, requests: u32) {
        let index = self.bounds.iter().position(|b| seconds <= *b).unwrap();
        self.counts[index] += requests as f64;
    }

    fn scrape(&self) -> Buckets {
        let mut sum = 0.0;
        self.bounds
            .iter()
            .zip(&self.counts)
            .map(|(b, c)| {
                sum += c;
                (*b, sum)
            })
            .collect()
    }
}

#[test]
fn three_minutes_of_15_second_scrapes() {
    let mut model = Model::new(&[0.05, 0.1, 0.25, 0.5, 1.0]);
    model.record(0.01, 1000); // before the agent started
    let mut accumulator = MinuteAccumulator::new();
    let mut emitted = Vec::new();
    // Scrapes at 12:00:07, :22, :37, :52, 12:01:07, ... 12:04:07.
    for i in 0..17u32 {
        let time = at(12, 0, 7) + chrono::Duration::seconds(15 * i as i64);
        // Requests since the previous scrape, by the interval ending now.
        match (time.format("%M").to_string().as_str(), i % 4) {
            ("00", _) if i > 0 => model.record(0.3, 10), // minute 12:00, skipped
            // 12:01 (the interval ending 12:01:07 belongs to it too):
            // 99 fast requests and a slow one.
            ("01", 0) | ("01", 1) | ("01", 3) => model.record(0.02, 25),
            ("01", 2) => {
                model.record(0.02, 24);
                model.record(0.7, 1);
            }
            // 12:02: 100 <= 0.05 s, 80 in (0.05, 0.1], 18 in (0.1, 0.25], 2 over 1 s.
            ("02", 0) => {
                model.record(0.04, 50);
                model.record(0.08, 40);
            }
            ("02", 1) => {
                model.record(0.04, 50);
                model.record(0.08, 40);
            }
            ("02", 2) => model.record(0.2, 18),
            ("02", 3) => model.record(5.0, 2),
            _ => {} // 12:03: nothing
        }
        emitted.extend(accumulator.observe(time, model.scrape()));
    }
    let minutes: Vec<DateTime<Utc>> = emitted.iter().map(|(m, _)| *m).collect();
    assert_eq!(minutes, vec![at(12, 1, 0), at(12, 2, 0), at(12, 3, 0)]);

    // 12:01: cumulative delta 0.05:99 ... 0.5:99, 1:100, +Inf:100.
    let first = emitted[0].1;
    assert_eq!(first.count, 100);
    assert_close(first.p50_seconds, 0.05 * 50.0 / 99.0);
    assert_close(first.p90_seconds, 0.05 * 90.0 / 99.0);
    assert_close(first.p99_seconds, 0.05);
    assert_close(first.p999_seconds, 0.5 + 0.5 * 0.9);
    assert_close(first.max_seconds, 1.0);

    // 12:02: cumulative 0.05:100, 0.1:180, 0.25:198, 0.5:198, 1:198, +Inf:200.
    let second = emitted[1].1;
    assert_eq!(second.count, 200);
    assert_close(second.p50_seconds, 0.05);
    assert_close(second.p90_seconds, 0.1);
    assert_close(second.p99_seconds, 0.25);
    assert_close(second.p999_seconds, 1.0);
    assert_close(second.max_seconds, 1.0);

    // 12:03: no requests, a zero summary.
    assert_eq!(emitted[2].1, LatencySummary::default());
}

#[test]
fn counter_reset_counts_from_zero() {
    let mut accumulator = MinuteAccumulator::new();
    let scrape = |a: f64, b: f64, c: f64| vec![(0.1, a), (0.5, b), (INF, c)];
    assert!(accumulator
        .observe(at(12, 0, 30), scrape(10.0, 10.0, 10.0))
        .is_empty());
    // Closes 12:00, which has no baseline.
    assert!(accumulator
        .observe(at(12, 1, 10), scrape(20.0, 25.0, 30.0))
        .is_empty());
    // The process restarted: the counts went down.
    assert!(accumulator
        .observe(at(12, 1, 40), scrape(5.0, 5.0, 6.0))
        .is_empty());
    let completed = accumulator.observe(at(12, 2, 5), scrape(8.0, 10.0, 12.0));
    assert_eq!(completed.len(), 1);
    let (minute, summary) = completed[0];
    assert_eq!(minute, at(12, 1, 0));
    // 12:00:30 -> 12:01:10: +10, +15, +20; then 5, 5, 6 since the restart:
    // delta 0.1:15, 0.5:20, +Inf:26.
    assert_eq!(summary.count, 26);
    // p50: rank 13 of 15 in [0, 0.1].
    assert_close(summary.p50_seconds, 0.1 * 13.0 / 15.0);
    // p90: rank 23.4 is above 20: +Inf, the highest finite bound.
    assert_close(summary.p90_seconds, 0.5);
    assert_close(summary.p99_seconds, 0.5);
    assert_close(summary.max_seconds, 0.5);
    // 12:02 continues from the restarted counts: 12:01:40 (5,5,6) -> 12:02:50 (9,12,15).
    assert!(accumulator
        .observe(at(12, 2, 50), scrape(9.0, 12.0, 15.0))
        .is_empty());
    let completed = accumulator.observe(at(12, 3, 1), scrape(9.0, 12.0, 15.0));
    // Delta 0.1:4, 0.5:7, +Inf:9 (from the 12:01:40 scrape, the last before 12:02).
    assert_eq!(completed[0].0, at(12, 2, 0));
    assert_eq!(completed[0].1.count, 9);
    // p50: rank 4.5 is 0.5 of 3 in (0.1, 0.5].
    assert_close(completed[0].1.p50_seconds, 0.1 + 0.4 * 0.5 / 3.0);
}

#[test]
fn scrape_gaps_still_emit_and_long_gaps_start_over() {
    let mut accumulator = MinuteAccumulator::new();
    let scrape = |fast: f64, total: f64| vec![(0.1, fast), (INF, total)];
    accumulator.observe(at(12, 0, 30), scrape(0.0, 0.0));
    accumulator.observe(at(12, 1, 30), scrape(10.0, 10.0));
    // No scrape in 12:02 and 12:03.
    let completed = accumulator.observe(at(12, 4, 10), scrape(30.0, 40.0));
    let minutes: Vec<_> = completed.iter().map(|(m, s)| (*m, s.count)).collect();
    // 12:01: 12:00:30 -> 12:01:30; 12:02 and 12:03: the 12:01:30 scrape
    // is their baseline and their end.
    assert_eq!(
        minutes,
        vec![(at(12, 1, 0), 10), (at(12, 2, 0), 0), (at(12, 3, 0), 0)]
    );
    assert_eq!(completed[1].1, LatencySummary::default());
    // 12:04 counts the whole gap, from the nearest earlier scrape 12:01:30.
    let completed = accumulator.observe(at(12, 5, 10), scrape(30.0, 40.0));
    assert_eq!(completed.len(), 1);
    assert_eq!((completed[0].0, completed[0].1.count), (at(12, 4, 0), 30));

    // A gap over MAX_GAP_MINUTES: 12:05 is emitted, the gap is not, and
    // the first minute after it has no baseline.
    let late = at(12, 5, 10) + chrono::Duration::minutes(MAX_GAP_MINUTES + 5);
    let completed = accumulator.observe(late, scrape(50.0, 60.0));
    assert_eq!(completed.len(), 1);
    assert_eq!((completed[0].0, completed[0].1.count), (at(12, 5, 0), 0));
    let completed = accumulator.observe(late + chrono::Duration::seconds(60), scrape(51.0, 61.0));
    assert!(completed.is_empty());
    let completed = accumulator.observe(late + chrono::Duration::seconds(120), scrape(53.0, 63.0));
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].1.count, 1);
}

#[test]
fn boundary_scrapes_close_the_minute_before() {
    let mut accumulator = MinuteAccumulator::new();
    let scrape = |n: f64| vec![(1.0, n), (INF, n)];
    accumulator.observe(at(12, 0, 0), scrape(0.0));
    assert!(accumulator.observe(at(12, 0, 30), scrape(5.0)).is_empty());
    // 12:01:00 is the end of 12:00: it is the last scrape at or before it.
    assert!(accumulator.observe(at(12, 1, 0), scrape(7.0)).is_empty());
    let completed = accumulator.observe(
        at(12, 1, 0) + chrono::Duration::milliseconds(1),
        scrape(9.0),
    );
    assert_eq!(completed.len(), 1);
    assert_eq!((completed[0].0, completed[0].1.count), (at(12, 0, 0), 7));
}

#[test]
fn odd_scrapes_are_ignored_and_layout_changes_start_over() {
    let mut accumulator = MinuteAccumulator::new();
    accumulator.observe(at(12, 0, 30), vec![(0.1, 1.0), (INF, 1.0)]);
    accumulator.observe(at(12, 1, 30), vec![(0.1, 2.0), (INF, 2.0)]);
    let before = accumulator.clone();
    assert!(accumulator
        .observe(at(12, 1, 0), vec![(0.1, 9.0), (INF, 9.0)])
        .is_empty());
    assert!(accumulator.observe(at(12, 1, 40), vec![]).is_empty());
    assert!(accumulator
        .observe(at(12, 1, 40), vec![(0.1, f64::NAN), (INF, 9.0)])
        .is_empty());
    assert_eq!(accumulator, before);
    // New bounds: 12:01 is still emitted from the old layout, 12:02 has no baseline.
    let completed = accumulator.observe(at(12, 2, 30), vec![(0.1, 3.0), (0.2, 3.0), (INF, 3.0)]);
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].1.count, 1);
    let completed = accumulator.observe(at(12, 3, 30), vec![(0.1, 4.0), (0.2, 4.0), (INF, 4.0)]);
    assert!(completed.is_empty());
    let completed = accumulator.observe(at(12, 4, 30), vec![(0.1, 6.0), (0.2, 6.0), (INF, 6.0)]);
    assert_eq!(completed[0].1.count, 1);
}

/// Minute 10:00 is closed by the scrape at 10:01:10 but has no baseline;
/// the scrape at 10:02:10 closes 10:01, whose delta runs from the last
/// scrape at or before 10:01 (0 requests) to the last at or before 10:02
/// (10): 10 requests, all under 100 ms. The agent restarts in between.
#[test]
fn a_restart_resumes_the_minute_in_progress() {
    let source = LatencyHistogramSource {
        url: "http://127.0.0.1:1/metrics".into(),
        metric: "http_server_requests_seconds".into(),
        matchers: BTreeMap::new(),
        interval: Duration::from_secs(20),
        gc_log: "/l/gc.log".into(),
        client: Default::default(),
    };
    let buckets = |fast: f64, all: f64| vec![(0.1, fast), (0.5, all), (INF, all)];
    let run = |restored: Option<SourceCheckpoint>, scrapes: Vec<Scraped>| {
        let store = Store::new(crate::store::AgentState::from_streams([
            crate::store::StreamState {
                log: "/l/gc.log".into(),
                ..Default::default()
            },
        ]));
        let (sender, receiver) = mpsc::channel();
        let mut histogram = HistogramSource::resume(&source, restored, receiver);
        for scrape in scrapes {
            sender.send(scrape).unwrap();
        }
        histogram.poll(&mut crate::sources::reading::Reading::new(
            &store,
            crate::agent::apply,
        ));
        let checkpoint = histogram.checkpoint(&store.snapshot()).unwrap();
        let latency = store
            .snapshot()
            .streams
            .values()
            .next()
            .unwrap()
            .latency
            .clone();
        (checkpoint, latency)
    };
    let (checkpoint, latency) = run(
        None,
        vec![
            (at(10, 0, 50), Ok(buckets(0.0, 0.0))),
            (at(10, 1, 10), Ok(buckets(10.0, 10.0))),
        ],
    );
    assert!(latency.is_none_or(|l| l.minutes.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    crate::checkpoint::Journal::new(dir.path())
        .write(&[checkpoint], std::iter::empty())
        .unwrap();
    let restored = crate::checkpoint::load(dir.path())
        .unwrap()
        .unwrap()
        .sources
        .pop();
    let after_restart = vec![(at(10, 2, 10), Ok(buckets(30.0, 40.0)))];
    let (_, latency) = run(restored, after_restart.clone());
    let minutes = latency.unwrap().minutes;
    let minute = &minutes[&at(10, 1, 0).timestamp()];
    assert_eq!(minute.latency.count, 10);
    assert!(minute.latency.max_seconds <= 0.1);
    // Without the checkpoint, the first scrape after the restart has no baseline.
    let (_, fresh) = run(None, after_restart);
    assert!(fresh.is_none_or(|l| l.minutes.is_empty()));
}
