use super::*;

fn parse(text: &[u8]) -> (Vec<GcEvent>, ParseStats) {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    parser.feed(text, &mut events);
    parser.finish(&mut events);
    (events, parser.stats().clone())
}

fn malformed(stats: &ParseStats) -> u64 {
    stats
        .unparsed
        .get(&UnparsedKind::MalformedEvent)
        .copied()
        .unwrap_or(0)
}

#[test]
fn durations_beyond_a_day_are_malformed_events() {
    let lines = [
            "[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 99999999999999999999999999ms",
            "[0.2s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 86400001ms",
            "[0.2s][info][gc] GC(2) Concurrent Mark 99999999999.000ms",
            "[0.2s][info][gc] GC(3) Concurrent Mark Cycle 86401.0s",
            "[0.2s][info][gc] GC(4) Garbage Collection (Warmup) 24M(10%)->4M(2%) 100000s",
            "[0.2s][info][gc] Allocation Stall (main) 90000000.0ms",
            "[0.2s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 1 ns, At safepoint: 1 ns, Total: 18446744073709551615 ns",
            "[0.2s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 86400000000001 ns, At safepoint: 1 ns, Total: 2 ns",
            "[0.2s][info][safepoint] Total time for which application threads were stopped: 86400.5 seconds, Stopping threads took: 0.1 seconds",
            "[0.2s][info][safepoint] Total time for which application threads were stopped: 0.5 seconds, Stopping threads took: 1000000000 seconds",
        ];
    for line in lines {
        let (events, stats) = parse(format!("{line}\n").as_bytes());
        assert!(events.is_empty(), "{line}: {events:?}");
        assert_eq!(malformed(&stats), 1, "{line}");
    }
}

#[test]
fn a_day_long_pause_still_counts() {
    let (events, stats) =
        parse(b"[0.2s][info][gc] GC(0) Pause Full (System.gc()) 24M->4M(256M) 86400000.000ms\n");
    let [GcEvent::Pause(pause)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(pause.duration_s, 86400.0);
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn an_invalid_byte_in_a_harmless_place_keeps_the_event() {
    let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evac\xffuation Pause) 24M->4M(256M) 7.033ms\n\
              [0.3s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 2000 ns, At safepoint: 3000 ns, Total: 5000 ns, Threads: 3 runn\xc3ble\n",
        );
    let [GcEvent::Pause(pause), GcEvent::Safepoint(safepoint)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(pause.duration_s, 0.007033);
    assert_eq!(pause.cause.as_deref(), Some("G1 Evac\u{fffd}uation Pause"));
    assert_eq!(safepoint.total_s, 0.000005);
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn an_invalid_byte_that_breaks_the_line_is_counted_as_invalid_utf8() {
    let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 7.0\xff3ms\n\
              [0.2s][info][gc,phases] GC(0)   Other: 0.\xff1ms\n\
              \xfe\xff binary\n",
        );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(stats.unparsed.get(&UnparsedKind::InvalidUtf8), Some(&3));
    assert_eq!(stats.unparsed_total(), 3);
    assert_eq!(stats.ignored_lines, 0);
}

#[test]
fn a_nul_block_does_not_swallow_the_next_pause() {
    let second = b"[0.300s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 30M->6M(256M) 5.000ms\n";
    for first in [
            &b"[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n\0\0\0\0"[..],
            &b"[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\0\0\0\0"[..],
            &b"\0\0\0[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n\0\0\0"[..],
        ] {
            let (events, stats) = parse(&[first, &second[..]].concat());
            let durations: Vec<f64> = events
                .iter()
                .filter_map(|e| match e {
                    GcEvent::Pause(p) => Some(p.duration_s),
                    _ => None,
                })
                .collect();
            assert_eq!(durations, vec![0.007033, 0.005], "{first:?}");
            assert_eq!((stats.lines, stats.unparsed_total()), (2, 0));
        }
}

/// The shape the hostile-host trial met: a space between the duration
/// and its unit. Shenandoah's end-of-run table (`gc,stats`, no `GC(N)`)
/// has the same spacing and is a total, not a pause.
#[test]
fn a_space_before_the_unit_keeps_the_pause() {
    let (events, stats) = parse(
            b"[2021-03-01T10:00:00.000+0000][info][gc] GC(5) Pause Young (Normal) (G1 Evacuation Pause) 1338M->1324M(5120M) 6.363 ms\n\
              [2021-03-01T10:00:01.000+0000][info][gc] GC(6) Pause Remark 1400M->1390M(5120M) 250 us\n\
              [2021-03-01T10:00:02.000+0000][info][gc,stats] Pause Init Mark (G)  1516 us\n",
        );
    let durations: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::Pause(p) => Some(p.duration_s),
            _ => None,
        })
        .collect();
    assert_eq!(durations.len(), 2, "{durations:?}");
    assert!((durations[0] - 0.006363).abs() < 1e-12);
    assert!((durations[1] - 0.000250).abs() < 1e-12);
    assert_eq!(stats.unparsed_total(), 0);
}

/// A checkpoint holds the parser's state every second: finished
/// collections must not stay in it (they used to, up to 128 of them).
#[test]
fn finished_collections_leave_no_state_behind() {
    let mut log = String::new();
    for id in 0..200 {
        log.push_str(&format!(
                "[1.0s][info][gc,start] GC({id}) Pause Young (Normal) (G1 Evacuation Pause)\n\
                 [1.0s][info][gc] GC({id}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.210ms\n\
                 [1.0s][info][gc,cpu] GC({id}) User=0.01s Sys=0.00s Real=0.00s\n"
            ));
    }
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    parser.feed(log.as_bytes(), &mut events);
    assert_eq!(events.len(), 200);
    assert!(parser.open.is_empty(), "{} open", parser.open.len());
}

#[test]
fn absurd_cpu_times_are_dropped_but_the_pause_kept() {
    let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 7.033ms\n\
              [0.2s][info][gc,cpu] GC(0) User=99999999.00s Sys=0.00s Real=0.01s\n",
        );
    let [GcEvent::Pause(pause)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(pause.duration_s, 0.007033);
    assert_eq!(pause.cpu, None);
    assert_eq!(malformed(&stats), 1);
}

/// A shipper's prefix dates a Go cycle to the nanosecond: its pause ends
/// then, not at the millisecond before (a request a quarter covered by the
/// pause would otherwise fall short of it).
#[test]
fn a_go_lines_prefix_dates_its_pause_to_the_nanosecond() {
    let (events, _) = parse(
        b"2026-12-02T22:04:03.426861327Z stderr F gc 1 @0.050s 13%: 7.9+0.26+0.002 ms clock, 15+0.13/0.19/0+0.005 ms cpu, 3->4->3 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n",
    );
    let pause = events.iter().find_map(GcEvent::as_pause).expect("a pause");
    let end: chrono::DateTime<chrono::Utc> = "2026-12-02T22:04:03.426861327Z".parse().unwrap();
    assert_eq!(pause.end.wall, Some(end));
    assert_eq!(
        pause.start.wall,
        Some(end - chrono::Duration::nanoseconds(7_902_000))
    );
}

/// The same for Shenandoah, whose collections stay open after a pause for
/// the later pauses of their cycle: once nothing is left to pass on they
/// go, or a guess of the parser's state ([`GcLogParser::speculate`]) never
/// matches it and `analyze`'s read-ahead is wasted.
#[test]
fn finished_shenandoah_collections_leave_no_state_behind() {
    // Generational Shenandoah passes each collection's generation on: those stay.
    for (fixture, may_stay_open) in [
        ("jdk17-shenandoah-steady", false),
        ("jdk25-shenandoah-generational", true),
    ] {
        let path = format!(
            "{}/../tests/fixtures/jvm/{fixture}/gc.log",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(&std::fs::read(&path).unwrap(), &mut events);
        assert!(events.iter().any(|e| e.as_pause().is_some()), "{fixture}");
        let kept_for_nothing = parser
            .open
            .values()
            .filter(|open| **open == super::state::OpenCollection::default() || !may_stay_open)
            .count();
        assert_eq!(kept_for_nothing, 0, "{fixture}: {:?}", parser.open);
    }
}
