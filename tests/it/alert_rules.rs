//! The alert rules on real GC logs: every rule fires on a log that shows its
//! condition and stays quiet on a healthy one; the lifecycle of the engine
//! (pending for `for`, firing once, Alertmanager re-sends, resolved once);
//! and the `[alerts]` configuration tables.
//!
//! Streams are built the way the agent builds them: the fixture's log goes
//! through the parser (`analyze::parse_files`), every event into
//! `JvmState::apply`, the parser's JVM run into `note_run`. Logs decorated with
//! uptime only are placed on the wall clock with the JVM start time the
//! workload recorded (`mxbeans.json`, `RuntimeMXBean.getStartTime()`).
//!
//! Each rule is evaluated with `now` one minute after the minute of interest,
//! so that the minute is the last complete one. The expected values were read
//! by hand from the logs; the line (or the grep that counts them) is quoted
//! next to each assertion.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use pausewatch::alerts::{evaluate, AlertEngine, Finding};
use pausewatch::model::alerts::{
    AlertState, AlertsConfig, Notification, RegressionStatistic, RuleKind, RuleSettings, Thresholds,
};
use pausewatch::model::correlate::{AttributionOptions, RequestTiming};
use pausewatch::model::jvm::JvmState;
use pausewatch::model::latency::{CorrelationSettings, LatencyState};
use pausewatch::store::{AgentState, StreamState};
use pausewatch_parsers::{GcEvent, LogTime};

use crate::common;

// ---------------------------------------------------------------------------
// Streams from the fixtures.

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse()
        .unwrap_or_else(|e| panic!("bad time {text:?}: {e}"))
}

/// `RuntimeMXBean.getStartTime()` of the fixture's JVM, for logs that carry
/// uptime only; `None` when the log has wall-clock decorations of its own.
fn jvm_start(dir: &Path) -> Option<DateTime<Utc>> {
    let log = std::fs::read_to_string(dir.join("gc.log")).expect("fixture gc.log");
    let first = log.lines().next().unwrap_or_default();
    if pausewatch_parsers::line_time(first).is_some_and(|t| t.wall.is_some()) {
        return None;
    }
    let text = std::fs::read_to_string(dir.join("mxbeans.json")).expect("fixture mxbeans.json");
    let mxbeans: serde_json::Value = serde_json::from_str(&text).expect("mxbeans.json is JSON");
    let millis = mxbeans["start_time_ms"].as_i64().expect("start_time_ms");
    Some(DateTime::from_timestamp_millis(millis).expect("valid start time"))
}

/// A fixture's log parsed as the agent parses it.
struct Log {
    events: Vec<GcEvent>,
    parser: pausewatch_parsers::GcLogParser,
}

fn parse(name: &str) -> Log {
    let dir = fixture_dir(name);
    let (events, parser) =
        pausewatch::commands::analyze::parse_files(&[dir.join("gc.log")], jvm_start(&dir))
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert!(!events.is_empty(), "{name}: no events");
    Log { events, parser }
}

fn shift(time: &mut LogTime, by: TimeDelta) {
    if let Some(wall) = &mut time.wall {
        *wall += by;
    }
}

/// The same events at another wall-clock time (uptimes untouched): a real
/// log standing for what the JVM did a day or some hours earlier.
fn shifted(events: &[GcEvent], by: TimeDelta) -> Vec<GcEvent> {
    events
        .iter()
        .cloned()
        .map(|mut event| {
            match &mut event {
                GcEvent::Pause(p) => {
                    shift(&mut p.start, by);
                    shift(&mut p.end, by);
                }
                GcEvent::Safepoint(s) => {
                    shift(&mut s.start, by);
                    shift(&mut s.end, by);
                }
                GcEvent::ConcurrentPhase(c) => shift(&mut c.end, by),
                GcEvent::Cycle(c) => shift(&mut c.end, by),
                GcEvent::Stall(s) => shift(&mut s.end, by),
                GcEvent::JvmRestart(r) => shift(&mut r.time, by),
            }
            event
        })
        .collect()
}

/// A followed stream made of fixture logs, each moved by its shift; the last
/// one is the live log. The stream is readable and its last event was
/// processed when it was written (as the agent would have, following it live).
fn stream_of(parts: &[(&str, TimeDelta)]) -> StreamState {
    let mut jvm = JvmState::default();
    let mut log_path = String::new();
    for (name, by) in parts {
        let log = parse(name);
        jvm.ingest(log.parser.run(), &shifted(&log.events, *by), None);
        log_path = fixture_dir(name).join("gc.log").display().to_string();
    }
    StreamState {
        log: log_path,
        last_event_processed_at: jvm.last_event,
        readable: true,
        jvm,
        ..StreamState::default()
    }
}

fn stream(name: &str) -> StreamState {
    stream_of(&[(name, TimeDelta::zero())])
}

/// Moves a fixture whose events are in `from`'s minute into `to`'s minute.
fn moved(from: &str, to: &str) -> TimeDelta {
    at(to) - at(from)
}

fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} is not {expected} ± {tolerance}"
    );
}

fn check(kind: RuleKind, thresholds: &Thresholds, stream: &StreamState, now: &str) -> Finding {
    evaluate(kind, thresholds, stream, at(now))
}

/// Rule `kind` with the default thresholds on `stream` at `now`.
fn with_defaults(kind: RuleKind, stream: &StreamState, now: &str) -> Finding {
    check(kind, &Thresholds::default(), stream, now)
}

/// [`with_defaults`] on one fixture.
fn by_default(kind: RuleKind, fixture: &str, now: &str) -> Finding {
    with_defaults(kind, &stream(fixture), now)
}

fn fires(finding: &Finding, value: f64, tolerance: f64, summary_part: &str) {
    assert!(finding.active, "should fire: {finding:?}");
    assert_close(finding.value, value, tolerance, "value");
    assert!(
        finding.summary.contains(summary_part),
        "summary {:?} lacks {summary_part:?}",
        finding.summary
    );
}

fn quiet(finding: &Finding) {
    assert!(!finding.active, "should stay quiet: {finding:?}");
}

/// The healthy JVM: G1, 25 pauses, the longest 11.835 ms, no full GC, no
/// evacuation failure, live data 55M of 128M. Its events end in 01:44.
const HEALTHY: &str = "jvm/jdk17-g1-steady";
const HEALTHY_NOW: &str = "2026-11-30T01:45:00Z";

/// The latency fixture: Parallel GC, 5 full GCs of 76-104 ms, all in 02:21.
const LONG_PAUSES: &str = "latency/jdk17-parallel";
const LONG_PAUSES_NOW: &str = "2026-11-30T02:22:00Z";

// ---------------------------------------------------------------------------
// PauseBudgetExceeded

#[test]
fn pause_budget_fires_on_the_longest_pause_of_the_minute() {
    let stream = stream(LONG_PAUSES);
    let finding = with_defaults(RuleKind::PauseBudget, &stream, LONG_PAUSES_NOW);
    // [2026-11-30T02:21:27.332+0000][7.599s][info][gc] GC(16) Pause Full (Ergonomics) 218M->180M(243M) 104.303ms
    fires(
        &finding,
        0.104303,
        1e-9,
        "longest GC pause 104.3 ms in the minute from 02:21 UTC, budget 50.0 ms",
    );
    // The minute after holds no pause at all.
    quiet(&with_defaults(
        RuleKind::PauseBudget,
        &stream,
        "2026-11-30T02:23:00Z",
    ));
}

/// A JVM without a GC log whose sampler saw the minute's pauses only
/// several at a time: the maximum is a lower bound, still over budget.
#[test]
fn pause_budget_fires_on_a_lower_bound_and_says_so() {
    let log = parse(LONG_PAUSES);
    let mut stream = stream(LONG_PAUSES);
    // As the hsperfdata source marks the pauses it recovered several per sample.
    stream.jvm.mark_max_lower_bound(&log.events);
    let finding = with_defaults(RuleKind::PauseBudget, &stream, LONG_PAUSES_NOW);
    // GC(16) Pause Full (Ergonomics) 218M->180M(243M) 104.303ms, as above.
    fires(
        &finding,
        0.104303,
        1e-9,
        "longest GC pause at least 104.3 ms in the minute from 02:21 UTC, budget 50.0 ms",
    );
    // Under the budget a lower bound says nothing: quiet.
    let generous = Thresholds {
        max_pause: Duration::from_millis(200),
        ..Thresholds::default()
    };
    quiet(&check(
        RuleKind::PauseBudget,
        &generous,
        &stream,
        LONG_PAUSES_NOW,
    ));
}

#[test]
fn pause_budget_is_quiet_on_a_healthy_log() {
    let finding = by_default(RuleKind::PauseBudget, HEALTHY, HEALTHY_NOW);
    quiet(&finding);
    // [3.050s][info][gc] GC(13) Pause Young (Mixed) (G1 Evacuation Pause) 69M->60M(128M) 11.835ms,
    // the longest of the log.
    assert_close(finding.value, 0.011835, 1e-9, "longest pause");
}

// ---------------------------------------------------------------------------
// PauseRegression: history is built from real logs moved in time.

/// p99 of the latency fixture as `histogram_quantile` estimates it from the
/// pause buckets: 57 of its 59 pauses are <= 100 ms, 2 are in (100 ms, 200 ms]
/// (104.303 and 103.694 ms); rank 0.99 * 59 = 58.41, so
/// 0.1 + 0.1 * (58.41 - 57) / 2.
const LONG_PAUSES_P99: f64 = 0.1705;
/// jdk17-parallel-steady, events in 01:45. Its p99 is 48.5 ms: 15 pauses,
/// 3 <= 2 ms, 5 in (2, 5], 4 in (5, 10], 3 in (20, 50] ms (24.989, 28.119,
/// 33.553); rank 0.99 * 15 = 14.85, so 0.02 + 0.03 * (14.85 - 12) / 3.
const PARALLEL_STEADY: &str = "jvm/jdk17-parallel-steady";

/// The fixtures are JVM runs of seconds: these cases compare them whole, so
/// neither warm-up nor a minimum of baseline minutes applies.
fn regression_thresholds() -> Thresholds {
    Thresholds {
        regression_warmup: Duration::ZERO,
        regression_min_baseline: Duration::ZERO,
        ..Thresholds::default()
    }
}

/// `PauseRegression` at `now` over `stream`, the fixtures compared whole.
fn regression(stream: &StreamState, now: &str) -> Finding {
    check(
        RuleKind::PauseRegression,
        &regression_thresholds(),
        stream,
        now,
    )
}

/// The latency fixture's long pauses today, after the healthy parallel run
/// (jdk17-parallel-steady, events in 01:45) moved to `healthy_at`.
fn long_pauses_after_steady(healthy_at: &str) -> StreamState {
    stream_of(&[
        (PARALLEL_STEADY, moved("2026-11-30T01:45:00Z", healthy_at)),
        (LONG_PAUSES, TimeDelta::zero()),
    ])
}

#[test]
fn pause_regression_against_the_same_window_a_day_earlier() {
    // Yesterday the same service ran healthy (jdk17-parallel-steady, moved to
    // 02:21 a day earlier); today it has the latency fixture's full GCs.
    let stream = long_pauses_after_steady("2026-11-29T02:21:00Z");
    let finding = regression(&stream, LONG_PAUSES_NOW);
    fires(
        &finding,
        LONG_PAUSES_P99,
        1e-9,
        "p99 pause over the last 15m is 170.5 ms, baseline 48.5 ms (the same window a day earlier)",
    );

    // The day-old window wins over the trailing hours: with the same long
    // pauses a day earlier it is no regression, although the hours before
    // the window were calm.
    let stream = stream_of(&[
        (
            LONG_PAUSES,
            moved("2026-11-30T02:21:00Z", "2026-11-29T02:21:00Z"),
        ),
        (
            PARALLEL_STEADY,
            moved("2026-11-30T01:45:00Z", "2026-11-30T01:21:00Z"),
        ),
        (LONG_PAUSES, TimeDelta::zero()),
    ]);
    let finding = regression(&stream, LONG_PAUSES_NOW);
    quiet(&finding);
    assert!(
        finding
            .summary
            .contains("baseline 170.5 ms (the same window a day earlier)"),
        "{finding:?}"
    );
}

#[test]
fn pause_regression_against_the_trailing_hours_without_day_old_data() {
    // No data a day ago; an hour before the 15-minute window the JVM ran
    // healthy (jdk17-parallel-steady moved to 01:21).
    let stream = long_pauses_after_steady("2026-11-30T01:21:00Z");
    let finding = regression(&stream, LONG_PAUSES_NOW);
    fires(
        &finding,
        LONG_PAUSES_P99,
        1e-9,
        "baseline 48.5 ms (the trailing hours)",
    );

    // Beyond the trailing 3 hours it is no baseline: nothing to compare with.
    let stream = long_pauses_after_steady("2026-11-29T22:21:00Z");
    quiet(&regression(&stream, LONG_PAUSES_NOW));
}

#[test]
fn pause_regression_against_a_pinned_baseline() {
    // The day-old data says regression (see above), but a pinned baseline
    // overrides it: 170.5 ms is not 1.5 x 120 ms.
    let history = long_pauses_after_steady("2026-11-29T02:21:00Z");
    let mut thresholds = Thresholds {
        regression_pinned: Some(Duration::from_millis(120)),
        ..regression_thresholds()
    };
    let finding = check(
        RuleKind::PauseRegression,
        &thresholds,
        &history,
        LONG_PAUSES_NOW,
    );
    quiet(&finding);
    assert!(
        finding.summary.contains("baseline 120.0 ms (pinned)"),
        "{finding:?}"
    );

    // Pinned at 100 ms, 170.5 ms is a regression, even with no history at all.
    thresholds.regression_pinned = Some(Duration::from_millis(100));
    fires(
        &check(
            RuleKind::PauseRegression,
            &thresholds,
            &stream(LONG_PAUSES),
            LONG_PAUSES_NOW,
        ),
        LONG_PAUSES_P99,
        1e-9,
        "baseline 100.0 ms (pinned)",
    );

    // The max statistic compares the longest pause itself (104.303 ms).
    thresholds.regression_pinned = Some(Duration::from_millis(60));
    thresholds.regression_statistic = RegressionStatistic::Max;
    fires(
        &check(
            RuleKind::PauseRegression,
            &thresholds,
            &stream(LONG_PAUSES),
            LONG_PAUSES_NOW,
        ),
        0.104303,
        1e-9,
        "max pause over the last 15m is 104.3 ms, baseline 60.0 ms (pinned)",
    );
}

#[test]
fn pause_regression_below_the_min_pause_floor_does_not_matter() {
    // Shenandoah: yesterday jdk17-shenandoah-steady (43 pauses <= 0.5 ms and
    // one of 1.068 ms: p99 = 0.001 + 0.001 * (43.56 - 43) / 1 = 1.56 ms);
    // today jdk17-shenandoah-degenerated (68 pauses <= 0.5 ms, 3 in
    // (2, 5] ms, the degenerated GC of 8.807 ms: p99 = 0.005 + 0.005 *
    // (71.28 - 71) / 1 = 6.4 ms). Four times the baseline, but under 10 ms.
    let stream = stream_of(&[
        (
            "jvm/jdk17-shenandoah-steady",
            moved("2026-11-30T01:45:00Z", "2026-11-29T01:45:00Z"),
        ),
        ("jvm/jdk17-shenandoah-degenerated", TimeDelta::zero()),
    ]);
    let now = "2026-11-30T01:46:00Z";
    let finding = regression(&stream, now);
    quiet(&finding);
    assert_close(finding.value, 0.0064, 1e-9, "recent p99");
    assert!(finding.summary.contains("baseline 1.6 ms"), "{finding:?}");

    // With the floor at 5 ms the same data is a regression.
    let thresholds = Thresholds {
        regression_min_pause: Duration::from_millis(5),
        ..regression_thresholds()
    };
    fires(
        &check(RuleKind::PauseRegression, &thresholds, &stream, now),
        0.0064,
        1e-9,
        "p99 pause over the last 15m is 6.4 ms, baseline 1.6 ms (the same window a day earlier)",
    );
}

#[test]
fn pause_regression_is_quiet_on_a_healthy_log_like_the_day_before() {
    // The healthy JVM today and the same healthy run a day earlier. Its p99
    // (24 pauses <= 10 ms, one of 11.835 ms: 0.01 + 0.01 * 0.75 = 17.5 ms) is
    // above the 10 ms floor, so only the ratio keeps the rule quiet.
    let stream = stream_of(&[
        (
            HEALTHY,
            moved("2026-11-30T01:44:00Z", "2026-11-29T01:44:00Z"),
        ),
        (HEALTHY, TimeDelta::zero()),
    ]);
    let finding = regression(&stream, HEALTHY_NOW);
    quiet(&finding);
    assert_close(finding.value, 0.0175, 1e-9, "recent p99");
    assert!(
        finding
            .summary
            .contains("baseline 17.5 ms (the same window a day earlier)"),
        "{finding:?}"
    );
}

/// A G1 log of a JVM started at `start` (uptime decorations): one pause per
/// `(time, milliseconds)`, parsed as the agent parses it.
fn synthetic_stream(start: &str, pauses: &[(DateTime<Utc>, f64)]) -> StreamState {
    let start = at(start);
    let mut text = String::new();
    for (id, (time, ms)) in pauses.iter().enumerate() {
        let uptime = (*time - start).num_milliseconds() as f64 / 1000.0;
        text.push_str(&format!(
            "[{}][{uptime:.3}s][info][gc] GC({id}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) {ms:.3}ms\n",
            time.format("%Y-%m-%dT%H:%M:%S%.3f+0000"),
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_file(dir.path(), "gc.log", text);
    let (events, parser) = pausewatch::commands::analyze::parse_files(&[path], None).unwrap();
    let mut jvm = JvmState::default();
    jvm.ingest(parser.run(), &events, None);
    StreamState {
        log: "gc.log".to_string(),
        last_event_processed_at: jvm.last_event,
        readable: true,
        jvm,
        ..StreamState::default()
    }
}

/// The field case: a JVM started at 01:00 with a 109 ms start-up pause, then
/// one pause a minute, the minute maxima cycling 18..27 ms from 01:01 to
/// 01:59, then 130..138 ms from 02:00. At 02:15 (statistic `max`) the
/// trailing baseline leaves out the warm-up (01:00-01:04) and takes the p90
/// of the 55 minute maxima of 01:05-01:59: sorted, 18-22 ms five times each
/// and 23-27 ms six times each; rank 0.9 * 54 = 48.6 lies between 26 ms
/// (rank 48) and 27 ms (rank 49): 26.6 ms. 138 ms is more than 1.5 times
/// that. (The longest pause of the trailing hours, 109 ms, hid it.)
#[test]
fn pause_regression_baseline_leaves_out_jvm_warm_up_and_one_long_pause() {
    let pauses = |from: &str| -> Vec<(DateTime<Utc>, f64)> {
        let mut pauses = vec![(at("2026-11-30T01:00:02Z"), 109.0)];
        for i in 1..75i64 {
            let time = at("2026-11-30T01:00:30Z") + TimeDelta::minutes(i);
            let ms = if i < 60 { 18 + i % 10 } else { 130 + i % 9 };
            if time >= at(from) {
                pauses.push((time, ms as f64));
            }
        }
        pauses
    };
    let thresholds = Thresholds {
        regression_statistic: RegressionStatistic::Max,
        ..Thresholds::default()
    };
    let stream = synthetic_stream("2026-11-30T01:00:00Z", &pauses("2026-11-30T01:00:00Z"));
    let finding = check(
        RuleKind::PauseRegression,
        &thresholds,
        &stream,
        "2026-11-30T02:15:00Z",
    );
    // 02:14 is minute 74: 130 + 74 % 9 = 132 ms; the window's longest is 138 ms.
    fires(
        &finding,
        0.138,
        1e-9,
        "max pause over the last 15m is 138.0 ms, baseline 26.6 ms (the trailing hours)",
    );
}

/// The same JVM started at 01:35: after its warm-up (to 01:39) only 20
/// minutes with pauses precede the window, under the 30 minutes a baseline
/// needs, so there is nothing to compare with and the rule stays quiet.
#[test]
fn pause_regression_needs_min_baseline_of_minutes_with_pauses() {
    let mut pauses = Vec::new();
    for i in 35..75i64 {
        let time = at("2026-11-30T01:00:30Z") + TimeDelta::minutes(i);
        pauses.push((time, if i < 60 { 20.0 } else { 135.0 }));
    }
    let stream = synthetic_stream("2026-11-30T01:35:00Z", &pauses);
    for statistic in [RegressionStatistic::Max, RegressionStatistic::P99] {
        let thresholds = Thresholds {
            regression_statistic: statistic,
            ..Thresholds::default()
        };
        quiet(&check(
            RuleKind::PauseRegression,
            &thresholds,
            &stream,
            "2026-11-30T02:15:00Z",
        ));
        // With 20 minutes enough, the same data is a regression.
        let thresholds = Thresholds {
            regression_min_baseline: Duration::from_secs(20 * 60),
            ..thresholds
        };
        assert!(
            check(
                RuleKind::PauseRegression,
                &thresholds,
                &stream,
                "2026-11-30T02:15:00Z"
            )
            .active,
            "{statistic:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// GcOverheadHigh

/// No fixture can reach the default (10 % of 5 minutes, 30 s of pauses):
/// the JVMs ran for about 30 s. One minute and 1 % are used instead.
fn overhead_thresholds() -> Thresholds {
    Thresholds {
        overhead_window: Duration::from_secs(60),
        overhead_ratio: 0.01,
        ..Thresholds::default()
    }
}

#[test]
fn gc_overhead_fires_when_pauses_take_a_share_of_the_window() {
    // The 59 `[gc] GC(n) Pause ...` lines of the latency fixture add up to
    // 803.423 ms (awk over their last field), in the minute from 02:21.
    let finding = check(
        RuleKind::GcOverhead,
        &overhead_thresholds(),
        &stream(LONG_PAUSES),
        LONG_PAUSES_NOW,
    );
    fires(
        &finding,
        0.803423 / 60.0,
        1e-9,
        "GC pauses took 1.3 % of wall time over the last 1m",
    );
    // With the default 5-minute window the same pauses are 0.27 %.
    let finding = by_default(RuleKind::GcOverhead, LONG_PAUSES, LONG_PAUSES_NOW);
    quiet(&finding);
    assert_close(finding.value, 0.803423 / 300.0, 1e-9, "default window");
}

#[test]
fn gc_overhead_is_quiet_on_a_healthy_log() {
    // 25 pauses, 111.733 ms in all: 0.19 % of the minute.
    let finding = check(
        RuleKind::GcOverhead,
        &overhead_thresholds(),
        &stream(HEALTHY),
        HEALTHY_NOW,
    );
    quiet(&finding);
    assert_close(finding.value, 0.111733 / 60.0, 1e-9, "overhead");
}

// ---------------------------------------------------------------------------
// HeapPressure

#[test]
fn heap_pressure_fires_when_live_data_fills_the_heap() {
    // JDK 25, generational ZGC under allocation stalls:
    // [...][0.005s][info][gc,init] Max Capacity: 128M
    // [2026-11-30T01:46:59.784+0000][3.299s][info][gc] GC(37) Major Collection (Allocation Rate) 120M(94%)->120M(94%) 0.030s
    let finding = by_default(
        RuleKind::HeapPressure,
        "jvm/jdk25-zgc-stall",
        "2026-11-30T01:47:00Z",
    );
    fires(
        &finding,
        120.0 / 128.0,
        1e-9,
        "live data after GC is 94 % of the max heap (120 of 128 MiB)",
    );
}

#[test]
fn heap_pressure_is_quiet_on_a_healthy_log() {
    // The same collector running steady:
    // [4.919s][info][gc] GC(9) Major Collection (Proactive) 76M(59%)->52M(41%) 0.011s
    let finding = by_default(
        RuleKind::HeapPressure,
        "jvm/jdk25-zgc-steady",
        "2026-11-30T01:47:00Z",
    );
    quiet(&finding);
    assert_close(finding.value, 52.0 / 128.0, 1e-9, "live share");
    // And the healthy G1 JVM: GC(22) Pause Young (Mixed) ... 60M->55M(128M).
    let finding = by_default(RuleKind::HeapPressure, HEALTHY, HEALTHY_NOW);
    quiet(&finding);
    assert_close(finding.value, 55.0 / 128.0, 1e-9, "live share");
}

// ---------------------------------------------------------------------------
// The counting rules: FullGc, EvacuationFailure, DegeneratedGc, AllocationStall.

/// The counting rules on logs where the events they count happen, each
/// counted from the log itself.
#[test]
fn counting_rules_fire_on_the_events_they_count() {
    let cases = [
        // grep -cE '\]\[gc +\] GC\([0-9]+\) Pause Full' jdk17-parallel-full/gc.log: 13,
        // from 01:45:14.711 to 01:45:15.106.
        (
            RuleKind::FullGc,
            "jvm/jdk17-parallel-full",
            "2026-11-30T01:46:00Z",
            13.0,
            "13 full GCs in the minute from 01:45 UTC",
        ),
        // grep -c 'To-space exhausted' jdk17-g1-evacfail/gc.log: 28; the log has
        // uptime only, the JVM started at 01:44:44.703 and ran 5.6 s.
        (
            RuleKind::EvacuationFailure,
            "jvm/jdk17-g1-evacfail",
            "2026-11-30T01:45:00Z",
            28.0,
            "28 evacuation failures in the minute from 01:44 UTC",
        ),
        // [2026-11-30T01:45:42.358+0000] GC(7) Pause Degenerated GC (Outside of Cycle) 121M->80M(128M) 8.807ms
        // [2026-11-30T01:45:43.350+0000] GC(10) Pause Degenerated GC (Mark) 121M->94M(128M) 4.491ms
        // [2026-11-30T01:45:43.357+0000] GC(12) Pause Degenerated GC (Mark) 121M->95M(128M) 3.307ms
        // [2026-11-30T01:45:43.364+0000] GC(14) Pause Degenerated GC (Mark) 121M->95M(128M) 3.637ms
        (
            RuleKind::DegeneratedGc,
            "jvm/jdk17-shenandoah-degenerated",
            "2026-11-30T01:46:00Z",
            4.0,
            "4 degenerated GCs in the minute from 01:45 UTC",
        ),
    ];
    for (kind, log, now, count, summary) in cases {
        fires(&by_default(kind, log, now), count, 0.0, summary);
    }
}

/// The counting rules on logs of the same collectors running steady: none of
/// the events they count happens there.
#[test]
fn counting_rules_are_quiet_on_healthy_logs() {
    let cases = [
        (RuleKind::FullGc, HEALTHY, HEALTHY_NOW),
        (RuleKind::EvacuationFailure, HEALTHY, HEALTHY_NOW),
        // Shenandoah running steady (uptime only, started 01:45:34.333).
        (
            RuleKind::DegeneratedGc,
            "jvm/jdk17-shenandoah-steady",
            "2026-11-30T01:46:00Z",
        ),
        // ZGC running steady (uptime only, started 01:45:49.998).
        (
            RuleKind::AllocationStall,
            "jvm/jdk17-zgc-steady",
            "2026-11-30T01:46:00Z",
        ),
    ];
    for (kind, log, now) in cases {
        let finding = check(kind, &Thresholds::default(), &stream(log), now);
        quiet(&finding);
        assert_eq!(finding.value, 0.0, "{kind:?} on {log}");
    }
}

#[test]
fn allocation_stall_fires_on_allocation_stalls_only() {
    // grep -c '\] Allocation Stall (' jdk17-zgc-stall/gc.log: 32, e.g.
    // [2026-11-30T01:45:56.022+0000][0.291s][info][gc] Allocation Stall (worker-0) 30.272ms
    // The log also has 4 `Relocation Stall (worker-N)` lines: those are not
    // allocation stalls (JvmState counts them apart, as relocation_stalls).
    let stream = stream("jvm/jdk17-zgc-stall");
    assert_eq!(stream.jvm.counters.allocation_stalls, 32);
    assert_eq!(stream.jvm.counters.relocation_stalls, 4);
    let finding = with_defaults(RuleKind::AllocationStall, &stream, "2026-11-30T01:46:00Z");
    fires(
        &finding,
        32.0,
        0.0,
        "32 allocation stalls in the minute from 01:45 UTC",
    );
}

// ---------------------------------------------------------------------------
// GcDrivenTail: the service's access log next to its JVM's stops.

/// The requests of the latency fixture's access.jsonl (6000, all completing
/// in 02:21).
fn requests() -> Vec<RequestTiming> {
    let path = fixture_dir(LONG_PAUSES).join("access.jsonl");
    std::fs::read_to_string(&path)
        .expect("access.jsonl")
        .lines()
        .map(|line| {
            let request: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            RequestTiming {
                start: at(request["start"].as_str().expect("start")),
                duration_s: request["duration_ms"].as_f64().expect("duration_ms") / 1000.0,
            }
        })
        .collect()
}

/// Adds a latency state fed with `requests` and every GC event of the
/// stream's logs, finalized 15 s after the minute ended with the 50 ms SLO.
fn with_latency(
    mut stream: StreamState,
    parts: &[(&str, TimeDelta)],
    requests: &[RequestTiming],
    now: &str,
) -> StreamState {
    let mut latency = LatencyState::default();
    for (name, by) in parts {
        for event in shifted(&parse(name).events, *by) {
            latency.add_event(&event);
        }
    }
    for request in requests {
        latency.add_request(*request);
    }
    let settings = CorrelationSettings {
        attribution: AttributionOptions {
            slo_seconds: Some(0.050),
            affected_share: 0.25,
        },
        ..CorrelationSettings::default()
    };
    latency.finalize(at(now), &settings, &stream.jvm.minutes);
    stream.latency = Some(latency);
    stream
}

/// 15 s after 02:21 ended: the minute is attributed.
const TAIL_NOW: &str = "2026-11-30T02:22:15Z";

#[test]
fn gc_driven_tail_fires_when_slow_requests_were_stopped_by_gc() {
    let parts = [(LONG_PAUSES, TimeDelta::zero())];
    let stream = with_latency(stream_of(&parts), &parts, &requests(), TAIL_NOW);
    let minute = stream.latency.as_ref().unwrap().last_minute().unwrap();
    let attribution = minute.attribution.expect("attributed");
    // 60 requests are slower than 50 ms; 48 of them spent a quarter of their
    // time or more in the full GCs and safepoints (the other 12 are the
    // workload's two injected freezes, freezes.json).
    assert_eq!(
        (
            attribution.slow_requests,
            attribution.slow_requests_stop_affected
        ),
        (60, 48)
    );
    let finding = with_defaults(RuleKind::GcDrivenTail, &stream, TAIL_NOW);
    // p99.9 of the 6000 durations: the 5994th smallest, 92.814 ms
    // (sort -g of duration_ms), as an HdrHistogram with 3 significant digits
    // reports it (within 0.1 ms).
    fires(
        &finding,
        0.092814,
        0.0001,
        "above the 50.0 ms SLO, 80 % of slow requests were stopped by GC or safepoints",
    );
}

#[test]
fn gc_driven_tail_does_not_outlive_its_minute() {
    // The service received no request after 02:21 (the workload ended). At
    // 02:25 the last complete minute is 02:24, three minutes after the slow
    // one: nothing in the recent minutes says the tail is GC-driven, and the
    // alert must be able to resolve, like PauseBudgetExceeded does after a
    // quiet minute.
    let parts = [(LONG_PAUSES, TimeDelta::zero())];
    let stream = with_latency(stream_of(&parts), &parts, &requests(), TAIL_NOW);
    for now in ["2026-11-30T02:25:00Z", "2026-11-30T03:21:00Z"] {
        quiet(&with_defaults(RuleKind::GcDrivenTail, &stream, now));
    }
}

#[test]
fn gc_driven_tail_is_quiet_on_a_healthy_log() {
    // The same traffic next to the healthy JVM's stops (jdk17-g1-steady moved
    // from 01:44 onto the requests' minute): the tail is still over the SLO,
    // but the short young pauses explain almost none of it.
    let parts = [(
        HEALTHY,
        moved("2026-11-30T01:44:00Z", "2026-11-30T02:21:00Z"),
    )];
    let service = with_latency(stream_of(&parts), &parts, &requests(), TAIL_NOW);
    let attribution = service
        .latency
        .as_ref()
        .unwrap()
        .last_minute()
        .unwrap()
        .attribution
        .expect("attributed");
    assert_eq!(attribution.slow_requests, 60);
    assert!(
        attribution.slow_requests_stop_affected * 2 <= attribution.slow_requests,
        "{attribution:?}"
    );
    let finding = with_defaults(RuleKind::GcDrivenTail, &service, TAIL_NOW);
    quiet(&finding);
    assert_close(finding.value, 0.092814, 0.0001, "p99.9");

    // And the healthy JVM without a latency source says nothing.
    quiet(&by_default(RuleKind::GcDrivenTail, HEALTHY, HEALTHY_NOW));
}

/// A tail within the SLO says so, which is also what a resolved alert says
/// (it read "p99.9 8.0 ms above the 50.0 ms SLO").
#[test]
fn gc_driven_tail_within_the_slo_says_so() {
    let parts = [(LONG_PAUSES, TimeDelta::zero())];
    let stream = with_latency(stream_of(&parts), &parts, &requests(), TAIL_NOW);
    let thresholds = Thresholds {
        tail_slo: Duration::from_millis(200),
        ..Thresholds::default()
    };
    let finding = check(RuleKind::GcDrivenTail, &thresholds, &stream, TAIL_NOW);
    quiet(&finding);
    assert_eq!(finding.summary, "p99.9 92.9 ms within the 200.0 ms SLO");
}

// ---------------------------------------------------------------------------
// LongTimeToSafepoint

/// No fixture comes near the 100 ms default: these 5-30 s runs reach
/// safepoints within 5 ms. 2 ms is used instead.
fn ttsp_thresholds() -> Thresholds {
    Thresholds {
        max_time_to_safepoint: Duration::from_millis(2),
        ..Thresholds::default()
    }
}

#[test]
fn time_to_safepoint_fires_on_a_slow_safepoint() {
    // [2026-11-30T02:21:20.057+0000][0.324s][info][safepoint] Safepoint "ParallelGCFailedAllocation", ...,
    //   Reaching safepoint: 4269302 ns, ... (the largest `Reaching safepoint` of the log)
    let finding = check(
        RuleKind::TimeToSafepoint,
        &ttsp_thresholds(),
        &stream(LONG_PAUSES),
        LONG_PAUSES_NOW,
    );
    fires(
        &finding,
        0.004269302,
        1e-12,
        "time to safepoint reached 4.3 ms in the minute from 02:21 UTC",
    );
    quiet(&by_default(
        RuleKind::TimeToSafepoint,
        LONG_PAUSES,
        LONG_PAUSES_NOW,
    ));
}

#[test]
fn time_to_safepoint_is_quiet_on_a_healthy_log() {
    // The healthy JVM's largest `Reaching safepoint` is 5088 ns.
    let finding = check(
        RuleKind::TimeToSafepoint,
        &ttsp_thresholds(),
        &stream(HEALTHY),
        HEALTHY_NOW,
    );
    quiet(&finding);
    assert_close(finding.value, 0.000005088, 1e-12, "ttsp");
}

// ---------------------------------------------------------------------------
// StaleGcLog

#[test]
fn stale_log_fires_after_silence_and_when_unreadable() {
    // The healthy log's last event ends at 01:44:23.391 (GC(22) and its
    // safepoint at 5.018 s uptime, the JVM started at 01:44:18.373); the
    // agent processed it then.
    let mut stream = stream(HEALTHY);
    let last = stream.last_event_processed_at.expect("processed");
    assert_eq!(last, at("2026-11-30T01:44:23.391Z"));

    // 10 minutes 1 second of silence: stale (the default is 10 minutes).
    let finding = evaluate(
        RuleKind::StaleLog,
        &Thresholds::default(),
        &stream,
        last + TimeDelta::seconds(601),
    );
    fires(&finding, 601.0, 1e-9, "no GC event for 10m 1s");

    // Readable but never written to since the agent started: nothing to say.
    stream.last_event_processed_at = None;
    quiet(&evaluate(
        RuleKind::StaleLog,
        &Thresholds::default(),
        &stream,
        last + TimeDelta::hours(1),
    ));

    // Unreadable: stale at once, with or without events before.
    stream.readable = false;
    let finding = evaluate(
        RuleKind::StaleLog,
        &Thresholds::default(),
        &stream,
        last + TimeDelta::seconds(1),
    );
    assert!(finding.active, "{finding:?}");
    assert_eq!(finding.summary, "the GC log cannot be read");
    stream.last_event_processed_at = Some(last);
    assert!(
        evaluate(
            RuleKind::StaleLog,
            &Thresholds::default(),
            &stream,
            last + TimeDelta::seconds(1)
        )
        .active
    );
}

#[test]
fn stale_log_is_quiet_while_events_are_recent() {
    let stream = stream(HEALTHY);
    let last = stream.last_event_processed_at.unwrap();
    let finding = evaluate(
        RuleKind::StaleLog,
        &Thresholds::default(),
        &stream,
        last + TimeDelta::seconds(599),
    );
    quiet(&finding);
    assert_close(finding.value, 599.0, 1e-9, "silence");
    // A shorter `after` turns the same silence stale.
    let thresholds = Thresholds {
        stale_after: Duration::from_secs(300),
        ..Thresholds::default()
    };
    assert!(
        evaluate(
            RuleKind::StaleLog,
            &thresholds,
            &stream,
            last + TimeDelta::seconds(599)
        )
        .active
    );
}

/// The agent itself, on a configured GC log that does not exist (a JVM that
/// never started, a wrong path): `/metrics` says it is not readable, and
/// StaleGcLog fires once that has lasted `after`, not before.
#[test]
fn missing_gc_log_is_unreadable_and_fires_stale_log_after_its_delay() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let log = dir.path().join("never-written/gc.log");
    let agent = common::Agent::start(
        dir.path(),
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
             [[gc_log]]\npath = {}\n\
             [alerts]\nevaluation_interval = \"200ms\"\n\
             [alerts.stale_log]\nafter = \"2s\"\n",
            common::toml_string(&dir.path().join("state")),
            common::toml_string(&log),
        ),
    );
    let metrics = agent.metrics_when(Duration::from_secs(20), |m| {
        common::sample(m, "pausewatch_log_readable").is_some()
    });
    assert_eq!(
        common::sample(&metrics, "pausewatch_log_readable"),
        Some(0.0),
        "{metrics}"
    );
    let stale = agent.firing_alert("StaleGcLog", Duration::from_secs(20));
    let since = at(stale["active_since"].as_str().unwrap());
    let fired = at(stale["fired_at"].as_str().unwrap());
    assert!(
        fired - since >= TimeDelta::seconds(2),
        "fired {fired} before `after` (2 s) from {since}"
    );
    assert_eq!(stale["annotations"]["summary"], "the GC log cannot be read");
}

// ---------------------------------------------------------------------------
// Lifecycle through the engine.

/// The default configuration with only `kind` enabled.
fn only(kind: RuleKind) -> AlertsConfig {
    let mut config = AlertsConfig::default();
    for rule in &mut config.rules {
        rule.enabled = rule.kind == kind;
    }
    config
}

fn rule_mut(config: &mut AlertsConfig, kind: RuleKind) -> &mut RuleSettings {
    config
        .rules
        .iter_mut()
        .find(|r| r.kind == kind)
        .expect("rule settings")
}

fn agent_state(stream: StreamState) -> AgentState {
    AgentState::from_streams([stream])
}

fn states(engine: &AlertEngine) -> Vec<(String, AlertState)> {
    engine
        .alerts()
        .into_iter()
        .map(|a| (a.alertname, a.state))
        .collect()
}

fn kinds(notifications: &[Notification]) -> Vec<(AlertState, bool)> {
    notifications
        .iter()
        .map(|n| (n.alert.state, n.repeat))
        .collect()
}

#[test]
fn heap_pressure_stays_pending_for_five_minutes_then_fires_once() {
    // HeapPressure's default `for` is 5 minutes; the condition (120M live
    // of 128M) holds at every evaluation.
    let config = only(RuleKind::HeapPressure);
    assert_eq!(
        rule_mut(&mut config.clone(), RuleKind::HeapPressure).for_duration,
        Duration::from_secs(300)
    );
    let state = agent_state(stream("jvm/jdk25-zgc-stall"));
    let mut engine = AlertEngine::default();
    let t0 = at("2026-11-30T01:47:00Z");
    for minutes in 0..5 {
        let now = t0 + TimeDelta::minutes(minutes);
        let sent = engine.evaluate(&config, &state, now);
        assert!(sent.is_empty(), "at +{minutes} min: {sent:?}");
        let alerts = engine.alerts();
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].state, AlertState::Pending, "at +{minutes} min");
        assert_eq!(alerts[0].active_since, t0);
        assert_eq!(alerts[0].fired_at, None);
    }
    let fire_at = t0 + TimeDelta::minutes(5);
    let sent = engine.evaluate(&config, &state, fire_at);
    assert_eq!(kinds(&sent), [(AlertState::Firing, false)]);
    let alert = &sent[0].alert;
    assert_eq!(alert.alertname, "HeapPressure");
    assert_eq!(alert.fired_at, Some(fire_at));
    assert_eq!(alert.active_since, t0);
    assert_close(alert.value, 120.0 / 128.0, 1e-9, "value");
    // Within the default 60 s resend interval: nothing more.
    assert!(engine
        .evaluate(&config, &state, fire_at + TimeDelta::seconds(30))
        .is_empty());
    assert_eq!(
        states(&engine),
        [("HeapPressure".to_string(), AlertState::Firing)]
    );
}

/// Discovered JVMs without a GC log all have an empty `log`: one under
/// pressure beside a healthy one fires, and stays firing, on its own.
#[test]
fn alerts_of_jvms_without_a_log_are_kept_apart() {
    let mut config = only(RuleKind::HeapPressure);
    rule_mut(&mut config, RuleKind::HeapPressure).for_duration = Duration::ZERO;
    let discovered = |fixture: &str, pid: &str| StreamState {
        log: String::new(),
        labels: BTreeMap::from([("pid".to_string(), pid.to_string())]),
        ..stream(fixture)
    };
    let state = AgentState::from_streams([
        discovered("jvm/jdk25-zgc-stall", "101"),
        discovered("jvm/jdk17-g1-steady", "102"),
    ]);
    let mut engine = AlertEngine::default();
    let t0 = at("2026-11-30T01:47:00Z");
    for seconds in [0, 1, 2] {
        let sent = engine.evaluate(&config, &state, t0 + TimeDelta::seconds(seconds));
        let expected: &[(AlertState, bool)] = match seconds {
            0 => &[(AlertState::Firing, false)],
            _ => &[],
        };
        assert_eq!(kinds(&sent), expected, "at +{seconds} s");
        let alerts = engine.alerts();
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert_eq!(alerts[0].state, AlertState::Firing);
        assert_eq!(alerts[0].labels["pid"], "101");
    }
}

#[test]
fn firing_alert_is_sent_once_re_sent_for_alertmanager_and_resolved_once() {
    let mut config = only(RuleKind::PauseBudget);
    config.resend_interval = Duration::from_secs(30);
    config.labels = BTreeMap::from([("team".to_string(), "payments".to_string())]);
    let rule = rule_mut(&mut config, RuleKind::PauseBudget);
    rule.labels = BTreeMap::from([("severity".to_string(), "page".to_string())]);
    rule.annotations = BTreeMap::from([(
        "runbook".to_string(),
        "https://runbooks.example/gc".to_string(),
    )]);
    let mut stream = stream(LONG_PAUSES);
    stream.labels = BTreeMap::from([("service".to_string(), "pricing".to_string())]);
    let log = stream.log.clone();
    let state = agent_state(stream);
    let mut engine = AlertEngine::default();

    // Every 10 s from 02:22:00, while 02:21 (the minute of the long pauses)
    // is the last complete minute, then into 02:23.
    let mut sent_at: Vec<(String, Vec<(AlertState, bool)>)> = Vec::new();
    let mut first = None;
    for step in 0..=7 {
        let now = at(LONG_PAUSES_NOW) + TimeDelta::seconds(10 * step);
        let sent = engine.evaluate(&config, &state, now);
        if first.is_none() && !sent.is_empty() {
            first = Some(sent[0].clone());
        }
        sent_at.push((now.format("%H:%M:%S").to_string(), kinds(&sent)));
        if step == 6 {
            // Resolved is shown once, at the evaluation that resolved it.
            assert_eq!(
                states(&engine),
                [("PauseBudgetExceeded".to_string(), AlertState::Resolved)]
            );
        }
    }
    let expected: Vec<(String, Vec<(AlertState, bool)>)> = [
        ("02:22:00", vec![(AlertState::Firing, false)]),
        ("02:22:10", vec![]),
        ("02:22:20", vec![]),
        ("02:22:30", vec![(AlertState::Firing, true)]),
        ("02:22:40", vec![]),
        ("02:22:50", vec![]),
        ("02:23:00", vec![(AlertState::Resolved, false)]),
        ("02:23:10", vec![]),
    ]
    .into_iter()
    .map(|(t, k)| (t.to_string(), k))
    .collect();
    assert_eq!(sent_at, expected);
    // ... and then it is gone.
    assert!(engine.alerts().is_empty(), "{:?}", engine.alerts());

    let alert = first.expect("fired").alert;
    let labels: Vec<(&str, &str)> = alert
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("alertname", "PauseBudgetExceeded"),
            ("log", log.as_str()),
            ("service", "pricing"),
            ("severity", "page"),
            ("source", "agent"),
            ("team", "payments"),
        ]
    );
    assert_eq!(
        alert.annotations.get("summary").map(String::as_str),
        Some("longest GC pause 104.3 ms in the minute from 02:21 UTC, budget 50.0 ms")
    );
    assert_eq!(
        alert.annotations.get("runbook").map(String::as_str),
        Some("https://runbooks.example/gc")
    );
    assert_close(alert.value, 0.104303, 1e-9, "value");
}

#[test]
fn resolved_alert_carries_its_times_and_default_severity() {
    let config = only(RuleKind::PauseBudget);
    let state = agent_state(stream(LONG_PAUSES));
    let mut engine = AlertEngine::default();
    let fired = engine.evaluate(&config, &state, at(LONG_PAUSES_NOW));
    assert_eq!(kinds(&fired), [(AlertState::Firing, false)]);
    assert_eq!(
        fired[0].alert.labels.get("severity").map(String::as_str),
        Some("warning")
    );
    let resolved_at = at("2026-11-30T02:23:00Z");
    let resolved = engine.evaluate(&config, &state, resolved_at);
    assert_eq!(kinds(&resolved), [(AlertState::Resolved, false)]);
    assert_eq!(resolved[0].alert.resolved_at, Some(resolved_at));
    assert_eq!(resolved[0].alert.fired_at, Some(at(LONG_PAUSES_NOW)));
    assert!(engine
        .evaluate(&config, &state, resolved_at + TimeDelta::minutes(1))
        .is_empty());
    assert!(engine.alerts().is_empty());
}

#[test]
fn resolved_notification_says_it_resolved_with_the_value_now() {
    let config = only(RuleKind::PauseBudget);
    let state = agent_state(stream(LONG_PAUSES));
    let mut engine = AlertEngine::default();
    engine.evaluate(&config, &state, at(LONG_PAUSES_NOW));
    let resolved = engine.evaluate(&config, &state, at("2026-11-30T02:23:00Z"));
    assert_eq!(kinds(&resolved), [(AlertState::Resolved, false)]);
    let alert = &resolved[0].alert;
    // 02:22 holds no pause (the fixture's last event is at 02:21:27).
    assert_eq!(
        alert.annotations.get("summary").map(String::as_str),
        Some("resolved: longest GC pause 0.0 ms in the minute from 02:22 UTC, budget 50.0 ms")
    );
    assert_eq!(alert.value, 0.0);
}

#[test]
fn pending_alert_that_clears_is_forgotten_without_a_notification() {
    // With `for = 2m` the minute of long pauses is over before the alert fires.
    let mut config = only(RuleKind::PauseBudget);
    rule_mut(&mut config, RuleKind::PauseBudget).for_duration = Duration::from_secs(120);
    let state = agent_state(stream(LONG_PAUSES));
    let mut engine = AlertEngine::default();
    for now in ["2026-11-30T02:22:00Z", "2026-11-30T02:22:30Z"] {
        assert!(engine.evaluate(&config, &state, at(now)).is_empty());
        assert_eq!(
            states(&engine),
            [("PauseBudgetExceeded".to_string(), AlertState::Pending)]
        );
    }
    for now in ["2026-11-30T02:23:00Z", "2026-11-30T02:23:30Z"] {
        let sent = engine.evaluate(&config, &state, at(now));
        assert!(sent.is_empty(), "at {now}: {sent:?}");
        assert!(
            engine.alerts().is_empty(),
            "at {now}: {:?}",
            engine.alerts()
        );
    }
}

#[test]
fn healthy_log_raises_no_alert_with_the_default_rules() {
    // Every rule, default thresholds, the healthy JVM's minute.
    let state = agent_state(stream(HEALTHY));
    let mut engine = AlertEngine::default();
    let sent = engine.evaluate(&AlertsConfig::default(), &state, at(HEALTHY_NOW));
    assert!(sent.is_empty(), "{sent:?}");
    assert!(engine.alerts().is_empty(), "{:?}", engine.alerts());
}

// ---------------------------------------------------------------------------
// The `[alerts]` configuration.

const CONFIG_FILE: &str = "/etc/pausewatch.toml";

fn parse_config(text: &str) -> Result<pausewatch::config::Config, pausewatch::config::ConfigError> {
    pausewatch::config::parse(text, Path::new(CONFIG_FILE))
}

#[test]
fn alerts_tables_set_thresholds_for_labels_and_annotations() {
    let text = r#"
[[gc_log]]
path = "/var/log/app/gc.log"

[alerts]
alertmanager_url = "http://127.0.0.1:9093"
webhook_url = "http://127.0.0.1:8080/hook"
evaluation_interval = "15s"
resend_interval = "2m"
labels = { team = "payments", env = "prod" }

[alerts.pause_budget]
max_pause = "200ms"
for = "1m"
labels = { severity = "page" }
annotations = { runbook = "https://runbooks.example/gc" }

[alerts.pause_regression]
window = "30m"
ratio = 2
statistic = "max"
trailing = "6h"
baseline = "40ms"
min_pause = "20ms"
warmup = "10m"
min_baseline = "1h"

[alerts.gc_overhead]
threshold = 0.05
window = "10m"

[alerts.gc_cpu]
threshold = 0.3

[alerts.heap_pressure]
share = 0.8
for = "10m"

[alerts.gc_driven_tail]
slo = "100ms"
share = 0.6

[alerts.time_to_safepoint]
max = "50ms"

[alerts.stale_log]
after = "5m"

[alerts.full_gc]
enabled = false
"#;
    let config = parse_config(text).unwrap_or_else(|e| panic!("{e}"));
    let alerts = &config.alerts;
    let sinks = &config.alert_sinks;
    assert_eq!(
        sinks.alertmanager.as_ref().map(|e| e.url.as_str()),
        Some("http://127.0.0.1:9093")
    );
    assert_eq!(
        sinks.webhook.as_ref().map(|e| e.url.as_str()),
        Some("http://127.0.0.1:8080/hook")
    );
    assert_eq!(alerts.evaluation_interval, Duration::from_secs(15));
    assert_eq!(alerts.resend_interval, Duration::from_secs(120));
    assert_eq!(
        alerts.labels,
        BTreeMap::from([
            ("env".to_string(), "prod".to_string()),
            ("team".to_string(), "payments".to_string()),
        ])
    );
    let expected = Thresholds {
        max_pause: Duration::from_millis(200),
        regression_window: Duration::from_secs(1800),
        regression_ratio: 2.0,
        regression_statistic: RegressionStatistic::Max,
        regression_trailing: Duration::from_secs(6 * 3600),
        regression_pinned: Some(Duration::from_millis(40)),
        regression_min_pause: Duration::from_millis(20),
        regression_warmup: Duration::from_secs(600),
        regression_min_baseline: Duration::from_secs(3600),
        overhead_ratio: 0.05,
        overhead_window: Duration::from_secs(600),
        gc_cpu_share: 0.3,
        heap_share: 0.8,
        tail_slo: Duration::from_millis(100),
        tail_affected_share: 0.6,
        max_time_to_safepoint: Duration::from_millis(50),
        stale_after: Duration::from_secs(300),
    };
    assert_eq!(alerts.thresholds, expected);

    let rule = |kind: RuleKind| {
        alerts
            .rules
            .iter()
            .find(|r| r.kind == kind)
            .unwrap_or_else(|| panic!("no settings for {kind:?}"))
    };
    let budget = rule(RuleKind::PauseBudget);
    assert!(budget.enabled);
    assert_eq!(budget.for_duration, Duration::from_secs(60));
    assert_eq!(
        budget.labels,
        BTreeMap::from([("severity".to_string(), "page".to_string())])
    );
    assert_eq!(
        budget.annotations,
        BTreeMap::from([(
            "runbook".to_string(),
            "https://runbooks.example/gc".to_string()
        )])
    );
    assert_eq!(
        rule(RuleKind::HeapPressure).for_duration,
        Duration::from_secs(600)
    );
    assert!(!rule(RuleKind::FullGc).enabled);
    // Untouched rules keep their defaults.
    let stale = rule(RuleKind::StaleLog);
    assert!(stale.enabled);
    assert_eq!(stale.for_duration, Duration::ZERO);
    assert!(stale.labels.is_empty() && stale.annotations.is_empty());
    assert_eq!(alerts.rules.len(), RuleKind::ALL.len());
}

#[test]
fn no_alerts_table_means_the_defaults() {
    let config = parse_config("[[gc_log]]\npath = \"/var/log/app/gc.log\"\n").unwrap();
    assert_eq!(config.alerts, AlertsConfig::default());
    assert!(config.alerts.rules.iter().all(|r| r.enabled));
    // The correlation SLO is the GcDrivenTail SLO unless the rule sets its own.
    let config = parse_config("[correlation]\nslo = \"80ms\"\n").unwrap();
    assert_eq!(config.alerts.thresholds.tail_slo, Duration::from_millis(80));
}

/// The error of `text`, which must be refused at `line` for `key`.
fn config_error(text: &str, line: usize, key: &str) -> pausewatch::config::ConfigError {
    let error = parse_config(text).expect_err("config should be rejected");
    assert_eq!(
        (error.line, error.key.as_deref()),
        (Some(line), Some(key)),
        "{error}"
    );
    error
}

#[test]
fn unknown_rule_is_an_error_naming_its_line_and_key() {
    let text = "\
[alerts]
evaluation_interval = \"30s\"

[alerts.pause_budgett]
max_pause = \"100ms\"
";
    let error = config_error(text, 4, "alerts.pause_budgett");
    assert!(error.message.contains("pause_budget"), "{error}");
    let shown = error.to_string();
    assert!(
        shown.starts_with("/etc/pausewatch.toml:4: key alerts.pause_budgett: unknown key"),
        "{shown}"
    );
}

#[test]
fn unknown_key_inside_a_rule_is_an_error_naming_its_line_and_key() {
    let text = "\
[alerts]
evaluation_interval = \"30s\"

[alerts.pause_budget]
for = \"1m\"
max_pauses = \"100ms\"
";
    let error = config_error(text, 6, "alerts.pause_budget.max_pauses");
    assert!(
        error.message.contains("unknown key for rule pause_budget"),
        "{error}"
    );

    // Another rule's parameter is unknown here too.
    let text = "\
[alerts.heap_pressure]
for = \"1m\"

[alerts.time_to_safepoint]
share = 0.5
";
    config_error(text, 5, "alerts.time_to_safepoint.share");
}

// ---------------------------------------------------------------------------
// GcCpuHigh

/// A discovered JVM whose last complete minute (00:00) saw `gc` seconds of
/// collector CPU out of `process` seconds of the process's, on 4 CPUs.
fn cpu_stream(gc: f64, process: f64) -> StreamState {
    let mut stream = StreamState::default();
    let minute = at("2026-11-30T00:00:00Z").timestamp();
    stream.jvm.add_cpu(minute, gc, process, Some(4.0));
    stream
}

#[test]
fn gc_cpu_fires_for_a_busy_collector_and_not_an_idle_jvm() {
    let now = "2026-11-30T00:01:30Z";
    // 30 % of the process's CPU, though under 20 % of 4 CPUs: the process's share counts.
    let busy = with_defaults(RuleKind::GcCpu, &cpu_stream(12.0, 40.0), now);
    fires(&busy, 0.3, 1e-12, "30 % of the process's CPU");
    quiet(&with_defaults(RuleKind::GcCpu, &cpu_stream(0.2, 10.0), now));
    // No CPU figures at all: nothing to say.
    quiet(&with_defaults(
        RuleKind::GcCpu,
        &StreamState::default(),
        now,
    ));
    assert_eq!(RuleKind::GcCpu.default_for(), Duration::from_secs(600));
}

/// A JVM's alerts once it has exited and its series went after the grace
/// (its stream exited, or gone): a firing alert resolves at once, saying
/// so, and is then forgotten; a pending one goes without a word. They
/// used to stay, firing, until the history dropped the stream a day later.
#[test]
fn the_alerts_of_an_exited_jvm_resolve_when_its_series_go() {
    let mut config = only(RuleKind::HeapPressure);
    rule_mut(&mut config, RuleKind::HeapPressure).for_duration = Duration::ZERO;
    let mut state = agent_state(stream("jvm/jdk25-zgc-stall"));
    let mut engine = AlertEngine::default();
    let t0 = at("2026-11-30T01:47:00Z");
    let sent = engine.evaluate(&config, &state, t0);
    assert_eq!(kinds(&sent), [(AlertState::Firing, false)]);
    let id = *state.streams.keys().next().unwrap();
    std::sync::Arc::make_mut(state.streams.get_mut(&id).unwrap()).exited = true;
    let sent = engine.evaluate(&config, &state, t0 + TimeDelta::minutes(1));
    assert_eq!(kinds(&sent), [(AlertState::Resolved, false)]);
    assert_eq!(
        sent[0].alert.annotations["summary"],
        "resolved: its JVM has exited"
    );
    let later = engine.evaluate(&config, &state, t0 + TimeDelta::minutes(2));
    assert!(later.is_empty() && engine.alerts().is_empty(), "{later:?}");

    // Pending when its stream went: dropped, nobody told.
    rule_mut(&mut config, RuleKind::HeapPressure).for_duration = Duration::from_secs(300);
    let state = agent_state(stream("jvm/jdk25-zgc-stall"));
    let mut engine = AlertEngine::default();
    assert!(engine.evaluate(&config, &state, t0).is_empty());
    assert_eq!(
        states(&engine),
        [("HeapPressure".to_string(), AlertState::Pending)]
    );
    let gone = AgentState::default();
    assert!(engine
        .evaluate(&config, &gone, t0 + TimeDelta::minutes(1))
        .is_empty());
    assert!(engine.alerts().is_empty());
}

/// `GcLogCounterMismatch` names the input that disagrees with the JVM's
/// counter: its GC log, or the eBPF probes of a JVM that has none.
#[test]
fn the_counter_mismatch_names_the_input_that_disagrees() {
    let mut config = only(RuleKind::LogCounterMismatch);
    rule_mut(&mut config, RuleKind::LogCounterMismatch).for_duration = Duration::ZERO;
    let summary = |pause_source: Option<pausewatch::store::PauseSource>| {
        let mut state = stream("jvm/jdk17-g1-steady");
        state.runtime = Some(pausewatch::model::runtime::RuntimeStats {
            log_counter_mismatch: vec![("G1 Young Generation".to_string(), -3.0)],
            ..Default::default()
        });
        state.discovered = pause_source.map(|pause_source| pausewatch::store::Discovered {
            pause_source,
            ..Default::default()
        });
        let sent = AlertEngine::default().evaluate(
            &config,
            &agent_state(state),
            at("2026-11-30T01:47:00Z"),
        );
        sent[0].alert.annotations["summary"].clone()
    };
    let probes = summary(Some(pausewatch::store::PauseSource::Ebpf));
    assert!(
        probes.starts_with("the eBPF probes have 3 fewer pauses of G1 Young Generation"),
        "{probes}"
    );
    for log in [
        summary(None),
        summary(Some(pausewatch::store::PauseSource::GcLog)),
    ] {
        assert!(log.starts_with("the GC log has 3 fewer pauses"), "{log}");
    }
}
