//! Go `GODEBUG=gctrace=1` output through `GcLogParser`, against figures that
//! do not come from this parser:
//! * GCViewer's `TestDataReaderGo.java` (chewiebug/GCViewer,
//!   src/test/java/com/tagtraum/perf/gcviewer/imp/TestDataReaderGo.java):
//!   `exampleLog` asserts 635 events for `go/go1.9.txt`; `test` asserts 2
//!   events for its five inline lines (the line whose heap figure overflows is
//!   dropped).
//! * Totals of `go1.9.txt` computed with awk from the file itself
//!   (`awk '/^gc /{split($5,c,"+"); s+=c[1]+c[3]; m+=c[2]} END {print s, m}'`):
//!   stop-the-world 220.860 ms, concurrent mark 14905.6 ms; the longest pause
//!   is cycle 157's `0+71+48 ms clock` (48 ms); the last line is
//!   `gc 635 @526.898s ... 82->82->42 MB`.

use std::path::PathBuf;

use pausewatch_parsers::{
    Collector, GcEvent, GcLogParser, ParseStats, ParserOptions, UnparsedKind,
};
use proptest::prelude::*;

use crate::skip;

fn parse_with(text: &[u8], options: ParserOptions) -> (Vec<GcEvent>, ParseStats, GcLogParser) {
    let mut parser = GcLogParser::new(options);
    let mut events = Vec::new();
    parser.feed(text, &mut events);
    parser.finish(&mut events);
    let stats = parser.stats().clone();
    (events, stats, parser)
}

fn parse(text: &[u8]) -> (Vec<GcEvent>, ParseStats) {
    let (events, stats, _) = parse_with(text, ParserOptions::default());
    (events, stats)
}

fn pauses(events: &[GcEvent]) -> Vec<&pausewatch_parsers::Pause> {
    events.iter().filter_map(GcEvent::as_pause).collect()
}

fn go19() -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/GCViewer/src/test/resources/go/go1.9.txt");
    skip::or_skip(
        std::fs::read(&path).ok(),
        format_args!("corpus file not found: {}", path.display()),
    )
}

#[test]
fn gcviewer_go_1_9_example_log() {
    let Some(log) = go19() else { return };
    let (events, stats, parser) = parse_with(&log, ParserOptions::default());
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 635, "GCViewer TestDataReaderGo.exampleLog");
    let total_ms: f64 = pauses.iter().map(|p| p.duration_s * 1000.0).sum();
    assert!((total_ms - 220.860).abs() < 1e-6, "{total_ms}");
    let max_ms = pauses
        .iter()
        .map(|p| p.duration_s * 1000.0)
        .fold(0.0, f64::max);
    assert!((max_ms - 48.0).abs() < 1e-9, "{max_ms}");
    let longest = pauses.iter().find(|p| p.duration_s == 0.048).unwrap();
    assert_eq!(longest.gc_id, Some(157));
    let mark_ms: f64 = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::ConcurrentPhase(p) => Some(p.duration_s * 1000.0),
            _ => None,
        })
        .sum();
    assert!((mark_ms - 14905.6).abs() < 1e-6, "{mark_ms}");
    let GcEvent::Cycle(last) = events.last().unwrap() else {
        panic!("the last event is the cycle")
    };
    let heap = last.heap.unwrap();
    assert_eq!((heap.before_bytes, heap.after_bytes), (82 << 20, 42 << 20));
    // `@526.898s` plus 0+26+0 ms of clock: the line is printed at the end.
    assert!((last.end.uptime_s.unwrap() - 526.924).abs() < 1e-9);
    assert_eq!(last.end.wall, None, "no prefix and no start given");
    assert_eq!(parser.run().collector, Collector::Go);
    // The three `scvg` lines are runtime output understood and skipped.
    assert_eq!((stats.lines, stats.ignored_lines), (638, 3));
    assert_eq!(stats.unparsed_total(), 0);
    assert!(pauses.iter().all(|p| !p.explicit && p.cause.is_none()));
}

#[test]
fn gcviewer_inline_test_keeps_two_of_three_cycles() {
    let (events, stats) = parse(
        b"gc starting...\n\
gc 1 @997.597s 3%: 68+0.36+0.51 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P\n\
a line unrelated to GC logging\n\
gc 2 @997.597s 3%: 68+0.36+0.51 ms clock, 205+0/16/89+1.5 ms cpu, 11111111111111111111111111111111111->84->42 MB, 86 MB goal, 3 P\n\
gc 3 @997.597s 3%: 68+0.36+0.51 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P\n",
    );
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 2, "GCViewer TestDataReaderGo.test");
    // 68 + 0.51 ms, by hand from the line.
    assert!((pauses[0].duration_s - 0.06851).abs() < 1e-12);
    assert_eq!(stats.unparsed.get(&UnparsedKind::MalformedEvent), Some(&1));
    assert_eq!(
        stats.unparsed.get(&UnparsedKind::NotUnifiedLogging),
        Some(&2)
    );
}

#[test]
fn forced_cycles_are_explicit() {
    let (events, _) = parse(b"gc 9430 @100.008s 3%: 0.079+0.85+0.013 ms clock, 1.2+0/1.7/3.0+0.21 ms cpu, 1->1->1 MB, 2 MB goal, 16 P (forced)\n");
    let pause = pauses(&events)[0];
    assert!(pause.explicit);
    assert_eq!(pause.cause.as_deref(), Some("forced"));
    assert!((pause.duration_s - 0.000092).abs() < 1e-12);
}

/// Journal (`journalctl -o short-iso`) lines carry the wall clock; without
/// a prefix the process start anchors the uptime.
#[test]
fn prefixes_and_the_process_start_date_the_pauses() {
    let line = "gc 2 @1.000s 1%: 0.5+10+1.5 ms clock, 1+1/1/1+1 ms cpu, 4->5->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P";
    let (events, _) = parse(format!("2026-12-01T05:41:51+0000 host app[123]: {line}\n").as_bytes());
    let pause = pauses(&events)[0];
    assert_eq!(
        pause.end.wall,
        Some("2026-12-01T05:41:51Z".parse().unwrap())
    );
    assert!((pause.end.uptime_s.unwrap() - 1.012).abs() < 1e-9);
    assert!((pause.duration_s - 0.002).abs() < 1e-12);

    let start = "2026-12-01T05:00:00Z".parse().unwrap();
    let (events, _, _) = parse_with(
        format!("{line}\n").as_bytes(),
        ParserOptions {
            jvm_start: Some(start),
            ..ParserOptions::default()
        },
    );
    let pause = pauses(&events)[0];
    assert_eq!(
        pause.end.wall,
        Some("2026-12-01T05:00:01.012Z".parse().unwrap())
    );
    assert_eq!(
        pause.start.wall,
        Some("2026-12-01T05:00:01.010Z".parse().unwrap())
    );
}

/// A second process appending to the same stderr file starts again at `gc 1`.
#[test]
fn a_new_process_in_the_same_file_is_a_restart() {
    let (events, stats) = parse(
        b"gc 1 @5.000s 1%: 0.1+1+0.1 ms clock, 1+1/1/1+1 ms cpu, 4->4->1 MB, 5 MB goal, 2 P\n\
gc 2 @9.000s 1%: 0.1+1+0.1 ms clock, 1+1/1/1+1 ms cpu, 4->4->1 MB, 5 MB goal, 2 P\n\
gc 1 @0.010s 1%: 0.1+1+0.1 ms clock, 1+1/1/1+1 ms cpu, 4->4->1 MB, 5 MB goal, 2 P\n",
    );
    assert_eq!(stats.restarts, 1);
    assert_eq!(pauses(&events).len(), 3);
}

const SAMPLE: &str = "gc 1 @0.016s 19%: 0.053+36+0.016 ms clock, 0.21+36/4.9/39+0.066 ms cpu, 3->3->3 MB, 4 MB goal, 66 MB stacks, 0 MB globals, 4 P
scvg0: inuse: 49, idle: 3, sys: 52, released: 0, consumed: 52 (MB)
2026-12-01T05:41:51.123456789Z stderr F gc 2 @0.100s 3%: 0.079+0.85+0.013 ms clock, 1.2+0/1.7/3.0+0.21 ms cpu, 1->1->1 MB, 2 MB goal, 16 P (forced)
GC forced
2026-12-01T05:41:52+0000 host app[1]: gc 3 @1.100s 3%: 1+2+3 ms clock, 1+1/1/1+1 ms cpu, 1->1->1 MB, 2 MB goal, 16 P
";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any byte anywhere in real Go lines: no panic, and chunking changes nothing.
    #[test]
    fn damaged_go_lines_never_panic(
        edits in proptest::collection::vec((0usize..10_000, any::<u8>()), 0..12),
        chunk in 1usize..64,
    ) {
        let mut input = SAMPLE.as_bytes().to_vec();
        for (at, byte) in edits {
            let at = at % input.len();
            input[at] = byte;
        }
        let (whole, whole_stats) = parse(&input);
        let mut parser = GcLogParser::default();
        let mut chunked = Vec::new();
        for piece in input.chunks(chunk) {
            parser.feed(piece, &mut chunked);
        }
        parser.finish(&mut chunked);
        prop_assert!(whole == chunked);
        prop_assert_eq!(&whole_stats, parser.stats());
    }
}
