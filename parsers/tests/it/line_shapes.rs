//! Line shapes from ../shared/FORMATS.md (verbatim lines from public logs),
//! with the expected values read off the lines by hand.

use pausewatch_parsers::*;

fn parse(text: &str) -> (Vec<GcEvent>, ParseStats) {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    parser.feed(text.as_bytes(), &mut events);
    parser.finish(&mut events);
    (events, parser.stats().clone())
}

fn pauses(events: &[GcEvent]) -> Vec<&Pause> {
    events.iter().filter_map(GcEvent::as_pause).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn g1_jdk17_young_pause_is_counted_once_with_cpu_and_start_line() {
    let log = "\
[2022-01-29T16:34:51.644+0000][235ms][info][gc,start    ] GC(6) Pause Young (Normal) (G1 Evacuation Pause)
[2022-01-29T16:34:51.644+0000][236ms][info][gc,marking  ] GC(5) Concurrent Mark
[2022-01-29T16:34:51.649+0000][240ms][info][gc,phases   ] GC(6)   Pre Evacuate Collection Set: 1.0ms
[2022-01-29T16:34:51.652+0000][243ms][info][gc,heap     ] GC(6) Eden regions: 6->0(6)
[2022-01-29T16:34:51.654+0000][245ms][info][gc,metaspace] GC(6) Metaspace: 258K(448K)->258K(448K) NonClass: 242K(320K)->242K(320K) Class: 15K(128K)->15K(128K)
[2022-01-29T16:34:51.654+0000][245ms][info][gc          ] GC(6) Pause Young (Normal) (G1 Evacuation Pause) 14M->14M(46M) 9.772ms
[2022-01-29T16:34:51.654+0000][246ms][info][gc,cpu      ] GC(6) User=0.01s Sys=0.00s Real=0.01s
[2022-01-29T16:34:51.655+0000][246ms][info][safepoint   ] Safepoint \"G1CollectForAllocation\", Time since last: 1634200 ns, Reaching safepoint: 92800 ns, At safepoint: 11173200 ns, Total: 11266000 ns
";
    let (events, stats) = parse(log);
    let p = pauses(&events);
    assert_eq!(p.len(), 1);
    let pause = p[0];
    assert_eq!(pause.gc_id, Some(6));
    assert_eq!(pause.collector, Collector::G1);
    assert_eq!(pause.name, "Pause Young");
    assert_eq!(pause.qualifiers, vec!["Normal"]);
    assert_eq!(pause.cause.as_deref(), Some("G1 Evacuation Pause"));
    assert_eq!(pause.generation, Some(Generation::Young));
    assert!(close(pause.duration_s, 0.009772));
    assert_eq!(pause.heap.unwrap().capacity_bytes, Some(46 * 1024 * 1024));
    assert_eq!(pause.cpu.unwrap().real_s, 0.01);
    // Start from the gc,start line, end from the summary line.
    assert_eq!(pause.start.uptime_s, Some(0.235));
    assert_eq!(pause.end.uptime_s, Some(0.245));
    assert_eq!(
        pause.end.wall.unwrap().to_rfc3339(),
        "2022-01-29T16:34:51.654+00:00"
    );
    let GcEvent::Safepoint(sp) = events.last().unwrap() else {
        panic!("last event is the safepoint")
    };
    assert_eq!(sp.operation.as_deref(), Some("G1CollectForAllocation"));
    assert!(close(sp.total_s, 0.011266));
    assert!(close(sp.reaching_s.unwrap(), 0.0000928));
    assert!(close(sp.at_safepoint_s.unwrap(), 0.0111732));
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn g1_names_across_jdks_and_markers() {
    let log = "\
[0.298s][info][gc           ] GC(5) Pause Initial Mark (G1 Evacuation Pause) 80M->80M(128M) 5.011ms
[0.693s][info][gc] GC(50) Pause Mixed (G1 Evacuation Pause) 29M->28M(123M) 2.790ms
[0.321s][info][gc            ] GC(12) To-space exhausted
[0.321s][info][gc            ] GC(12) Pause Young (G1 Evacuation Pause) 116M->119M(128M) 2.717ms
[0.052s][info][gc] GC(17) Pause Young (Normal) (G1 Evacuation Pause) (Evacuation Failure) 57M->47M(64M) 0.420ms
[0.075s][info][gc] GC(18) Pause Young (Normal) (G1 Evacuation Pause) (Evacuation Failure: Allocation) 36M->30M(46M) 1.922ms
[2020-06-24T19:24:56.395-0700][4442390ms] GC(126) Pause Young (Concurrent Start) (G1 Humongous Allocation) 882M->842M(1223M) 19.777ms
[16.630s][info][gc            ] GC(1355) Pause Young (Mixed) (G1 Evacuation Pause) 15M->12M(31M) 1.202ms
[0.069s][info][gc     ] GC(1) Pause Full (G1 Compaction Pause) 1M->1M(5M) 6.324ms
";
    let (events, stats) = parse(log);
    let p = pauses(&events);
    assert_eq!(p.len(), 8);
    assert_eq!(p[0].name, "Pause Initial Mark");
    assert_eq!(p[1].generation, Some(Generation::Mixed));
    assert!(!p[0].evacuation_failure);
    assert!(
        p[2].evacuation_failure,
        "To-space exhausted line before the pause"
    );
    assert!(p[3].evacuation_failure && p[4].evacuation_failure);
    assert_eq!(p[4].cause.as_deref(), Some("G1 Evacuation Pause"));
    assert!(p[5].humongous);
    assert_eq!(p[5].qualifiers, vec!["Concurrent Start"]);
    assert_eq!(p[6].generation, Some(Generation::Mixed));
    assert!(p[7].full);
    assert_eq!(p[7].generation, Some(Generation::Full));
    assert_eq!(stats.unparsed_total(), 0);
    // Uptime went from 16.63 s back to 0.069 s: a new JVM run.
    assert_eq!(stats.restarts, 2);
}

#[test]
fn concurrent_cycle_interleaves_with_young_pause_and_remark_cleanup_count() {
    let log = "\
[2022-01-29T16:34:51.642+0000][233ms][info][gc          ] GC(5) Concurrent Mark Cycle
[2022-01-29T16:34:51.643+0000][234ms][info][gc,marking  ] GC(5) Concurrent Clear Claimed Marks 0.443ms
[2022-01-29T16:34:51.644+0000][235ms][info][gc,start    ] GC(6) Pause Young (Normal) (G1 Evacuation Pause)
[2022-01-29T16:34:51.654+0000][245ms][info][gc          ] GC(6) Pause Young (Normal) (G1 Evacuation Pause) 14M->14M(46M) 9.772ms
[2022-01-29T16:34:51.682+0000][273ms][info][gc,start    ] GC(5) Pause Remark
[2022-01-29T16:34:51.683+0000][275ms][info][gc          ] GC(5) Pause Remark 46M->46M(138M) 1.314ms
[2022-01-29T16:34:51.702+0000][293ms][info][gc          ] GC(5) Pause Cleanup 67M->67M(138M) 0.371ms
[2022-01-29T16:34:51.719+0000][311ms][info][gc          ] GC(5) Concurrent Mark Cycle 77.704ms
";
    let (events, _) = parse(log);
    let names: Vec<_> = pauses(&events)
        .iter()
        .map(|p| (p.gc_id, p.name.to_string()))
        .collect();
    assert_eq!(
        names,
        vec![
            (Some(6), "Pause Young".to_string()),
            (Some(5), "Pause Remark".to_string()),
            (Some(5), "Pause Cleanup".to_string())
        ]
    );
    let remark = pauses(&events)[1].clone();
    assert_eq!(remark.start.uptime_s, Some(0.273));
    assert_eq!(remark.generation, Some(Generation::Old));
    // Cleanup had no start line: start is end minus duration.
    let cleanup = pauses(&events)[2].clone();
    assert!(close(cleanup.start.uptime_s.unwrap(), 0.293 - 0.000371));
    let cycles: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::Cycle(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].name, "Concurrent Mark Cycle");
    assert!(close(cycles[0].duration_s.unwrap(), 0.077704));
    assert!(events.iter().any(
        |e| matches!(e, GcEvent::ConcurrentPhase(c) if c.name == "Concurrent Clear Claimed Marks")
    ));
}

#[test]
fn parallel_serial_cms_pools_name_the_collector_without_preamble() {
    let log = "\
[0.217s][info][gc,heap      ] GC(0) PSYoungGen: 33275K->5090K(38400K)
[0.217s][info][gc,heap      ] GC(0) ParOldGen: 0K->25596K(87552K)
[0.217s][info][gc           ] GC(0) Pause Young (Allocation Failure) 32M->30M(123M) 5.123ms
[0.244s][info][gc             ] GC(2) Pause Full (Ergonomics) 62M->61M(123M) 13.561ms
";
    let (events, _) = parse(log);
    let p = pauses(&events);
    assert_eq!(p[0].collector, Collector::Parallel);
    assert_eq!(p[0].cause.as_deref(), Some("Allocation Failure"));
    assert_eq!(p[0].pools.len(), 2);
    assert_eq!(p[0].pools[1].name, "ParOldGen");
    assert_eq!(p[0].pools[1].after_bytes, 25596 * 1024);
    assert!(p[1].full && p[1].pools.is_empty());

    let cms = "\
[0.019s][info][gc    ] Using Concurrent Mark Sweep
[0.310s][info][gc           ] GC(3) Pause Initial Mark 91M->91M(150M) 0.165ms
[0.310s][info][gc           ] GC(3) Concurrent Mark
[0.314s][info][gc           ] GC(3) Pause Remark 130M->130M(150M) 0.908ms
";
    let (events, stats) = parse(cms);
    let p = pauses(&events);
    assert_eq!(p.len(), 2);
    assert!(p
        .iter()
        .all(|p| p.collector == Collector::Cms && p.generation == Some(Generation::Old)));
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn shenandoah_pauses_degenerated_and_generational() {
    let log = "\
[2022-08-16T20:38:11.260+0800][1.355s][info][gc           ] GC(0) Pause Init Mark (process weakrefs) (unload classes) 0.755ms
[2022-08-16T20:38:11.266+0800][1.361s][info][gc            ] GC(0) Concurrent cleanup 504M->189M(506M) 0.211ms
[2022-08-16T20:38:11.270+0800][1.365s][info][gc            ] GC(0) Pause Final Update Refs 0.191ms
[2019-09-28T14:33:00.053+0000][8.772s][info][gc            ] Trigger: Average GC time (27.84 ms) is above the time for allocation rate (686.09 MB/s) to deplete free headroom (11M)
[2019-09-28T14:33:00.085+0000][8.804s][info][gc            ] GC(165) Pause Degenerated GC (Outside of Cycle) 119M->56M(124M) 11.373ms
[2026-03-16T16:44:23.148+0000][19.061s][info ][gc             ] GC(4) Pause Init Mark (Young) 0.135ms
[2026-03-16T16:44:23.463+0000][19.377s][info ][gc             ] GC(4) Pause Init Update Refs 0.022ms
";
    let (events, stats) = parse(log);
    let p = pauses(&events);
    assert_eq!(p.len(), 5);
    assert!(p.iter().all(|p| p.collector == Collector::Shenandoah));
    assert_eq!(p[0].qualifiers, vec!["process weakrefs", "unload classes"]);
    assert_eq!(p[0].cause, None);
    // 20:38:11.260 at +0800 is 12:38:11.260 UTC.
    assert_eq!(
        p[0].end.wall.unwrap().to_rfc3339(),
        "2022-08-16T12:38:11.260+00:00"
    );
    assert!(p[2].degenerated);
    assert_eq!(p[2].qualifiers, vec!["Outside of Cycle"]);
    assert_eq!(p[3].generation, Some(Generation::Young));
    assert_eq!(p[4].generation, None);
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn zgc_single_generation_pauses_stalls_and_cycle() {
    let log = "\
[200.343s][info][gc,start    ] GC(25) Garbage Collection (Allocation Rate)
[200.344s][info][gc,phases   ] GC(25) Pause Mark Start 0.008ms
[201.482s][info][gc          ] Allocation Stall (Group1.Backend.CompositeBackend{Tier1}.1) 0.706ms
[201.507s][info][gc,phases   ] GC(25) Concurrent Mark 1163.494ms
[201.507s][info][gc,phases   ] GC(25) Pause Mark End 0.011ms
[201.519s][info][gc,phases   ] GC(25) Pause Relocate Start 0.006ms
[201.521s][info][gc          ] Relocation Stall (Group1.Backend.CompositeBackend{Tier1}.3) 0.720ms
[201.658s][info][gc,heap     ] GC(25)      Used:     3334M (84%)        3954M (100%)       3898M (99%)        2230M (56%)        3954M (100%)       2230M (56%)
[201.660s][info][gc       ] GC(25) Garbage Collection (Allocation Rate) 10620M(5%)->8800M(4%)
";
    let (events, stats) = parse(log);
    let p = pauses(&events);
    assert_eq!(p.len(), 3);
    assert!(p.iter().all(|p| p.collector == Collector::Z));
    assert_eq!(
        p[0].cause.as_deref(),
        Some("Allocation Rate"),
        "cause from the cycle's start line"
    );
    let stalls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::Stall(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(stalls.len(), 2);
    assert_eq!(stalls[0].thread, "Group1.Backend.CompositeBackend{Tier1}.1");
    assert_eq!(stalls[1].kind, StallKind::Relocation);
    let cycle = events
        .iter()
        .find_map(|e| match e {
            GcEvent::Cycle(c) => Some(c),
            _ => None,
        })
        .unwrap();
    assert!(close(cycle.duration_s.unwrap(), 201.660 - 200.343));
    assert_eq!(cycle.heap.unwrap().after_bytes, 8800 * 1024 * 1024);
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn generational_zgc_pauses_are_phase_lines_and_summaries_are_cycles() {
    let log = "\
[0.193s][info][gc          ] GC(2) Major Collection (Warmup)
[0.193s][info][gc,phases   ] GC(2) Y: Young Generation
[0.193s][info][gc,phases   ] GC(2) Y: Pause Mark Start (Major) 0.009ms
[0.204s][info][gc,phases   ] GC(2) Y: Concurrent Mark 10.699ms
[0.204s][info][gc,phases   ] GC(2) Y: Pause Mark End 0.006ms
[0.208s][info][gc,phases   ] GC(2) Y: Pause Relocate Start 0.005ms
[0.212s][info][gc,phases   ] GC(2) Y: Young Generation 30M(31%)->26M(27%) 0.019s
[0.212s][info][gc,phases   ] GC(2) O: Old Generation
[0.213s][info][gc,phases   ] GC(2) O: Pause Mark End 0.005ms
[0.214s][info][gc          ] GC(3) Minor Collection (Allocation Rate)
[0.215s][info][gc,phases   ] GC(3) y: Pause Mark Start 0.004ms
[0.216s][info][gc,phases   ] GC(2) O: Pause Relocate Start 0.006ms
[0.220s][info][gc          ] GC(3) Minor Collection (Allocation Rate) 60M(62%)->62M(65%) 0.020s
[0.228s][info][gc,phases   ] GC(2) O: Old Generation 26M(27%)->26M(27%) 0.016s
[0.228s][info][gc          ] GC(2) Major Collection (Warmup) 30M(31%)->26M(27%) 0.036s
";
    let (events, stats) = parse(log);
    let p = pauses(&events);
    assert_eq!(p.len(), 6);
    assert!(p.iter().all(|p| p.collector == Collector::ZGenerational));
    let minor: Vec<_> = p
        .iter()
        .filter(|p| p.qualifiers.contains(&Name::from("Minor")))
        .collect();
    let major: Vec<_> = p
        .iter()
        .filter(|p| p.qualifiers.contains(&Name::from("Major")))
        .collect();
    // The old-generation pause inside the minor collection is accounted to it,
    // as HotSpot's ZGC Minor Pauses bean does.
    assert_eq!((minor.len(), major.len()), (2, 4));
    assert_eq!(p[5].generation, Some(Generation::Old));
    assert!(p[5].qualifiers.contains(&Name::from("Minor")));
    assert_eq!(p[0].cause.as_deref(), Some("Warmup"));
    assert_eq!(p[3].generation, Some(Generation::Old));
    let cycles: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::Cycle(c) => Some((c.name.to_string(), c.duration_s)),
            _ => None,
        })
        .collect();
    assert_eq!(
        cycles,
        vec![
            ("Minor Collection".to_string(), Some(0.020)),
            ("Major Collection".to_string(), Some(0.036))
        ]
    );
    assert_eq!(stats.unparsed_total(), 0);
}

#[test]
fn four_generations_of_safepoint_lines() {
    let log = "\
[2019-09-28T14:33:00.073+0000][8.792s][info][safepoint     ] Application time: 0.0869252 seconds
[2019-09-28T14:33:00.073+0000][8.793s][info][safepoint     ] Entering safepoint region: ShenandoahDegeneratedGC
[2019-09-28T14:33:00.086+0000][8.805s][info][safepoint     ] Leaving safepoint region
[2019-09-28T14:33:00.086+0000][8.805s][info][safepoint     ] Total time for which application threads were stopped: 0.0128948 seconds, Stopping threads took: 0.0002622 seconds
[9.068s][info][safepoint   ] Safepoint \"G1CollectForAllocation\", Time since last: 3273659 ns, Reaching safepoint: 12838 ns, At safepoint: 704423 ns, Total: 717261 ns
[9.193s][info][safepoint   ] Safepoint \"ZMarkStartYoungAndOld\", Time since last: 40267220 ns, Reaching safepoint: 188420 ns, Cleanup: 16818 ns, At safepoint: 21648 ns, Total: 226886 ns
[2026-03-17T10:11:17.293+0000][9.749s][info][safepoint      ] Safepoint \"ZMarkStartYoungAndOld\", Time since last: 1497896961 ns, Reaching safepoint: 3881 ns, At safepoint: 29320 ns, Leaving safepoint: 1043 ns, Total: 34244 ns, Threads: 0 runnable, 12 total
[1,474s][info][safepoint         ] Total time for which application threads were stopped: 0,0004130 seconds
";
    let (events, stats) = parse(log);
    let sps: Vec<&Safepoint> = events
        .iter()
        .filter_map(|e| match e {
            GcEvent::Safepoint(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(sps.len(), 5);
    assert_eq!(sps[0].operation.as_deref(), Some("ShenandoahDegeneratedGC"));
    assert!(close(sps[0].total_s, 0.0128948));
    assert!(close(sps[0].reaching_s.unwrap(), 0.0002622));
    assert_eq!(sps[0].start.uptime_s, Some(8.793));
    assert!(close(sps[1].total_s, 0.000717261));
    assert!(close(sps[2].cleanup_s.unwrap(), 0.000016818));
    assert!(close(sps[3].leaving_s.unwrap(), 0.000001043));
    assert!(close(sps[3].total_s, 0.000034244));
    assert!(close(sps[4].total_s, 0.000413));
    assert_eq!(sps[4].operation, None);
    assert_eq!(stats.unparsed_total(), 0);
    assert_eq!(stats.restarts, 1, "uptime 1.474 s after 9.749 s");
}

#[test]
fn uptime_only_log_is_anchored_by_the_callers_jvm_start() {
    let start = chrono::DateTime::parse_from_rfc3339("2024-05-01T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let mut parser = GcLogParser::new(ParserOptions {
        jvm_start: Some(start),
        ..ParserOptions::default()
    });
    let mut events = Vec::new();
    parser.feed(
        b"[2.677s] GC(4) Pause Young (Prepare Mixed) (G1 Evacuation Pause) 999M->760M(1000M) 0.885ms\n",
        &mut events,
    );
    parser.finish(&mut events);
    let GcEvent::Pause(p) = &events[0] else {
        panic!()
    };
    assert_eq!(
        p.end.wall.unwrap().to_rfc3339(),
        "2024-05-01T10:00:02.677+00:00"
    );
}

#[test]
fn preamble_after_collections_is_a_restart_and_bad_lines_are_counted() {
    let log = "\
[2024-04-12T17:56:00.635-0400] GC(74) Pause Degenerated GC (Outside of Cycle) 90M->15M(96M) 13.088ms
[2024-04-12T17:56:10.000-0400][info][gc] Using G1
[2024-04-12T17:56:11.000-0400][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 90M->15M(96M) 1.000ms
[2024-04-12T17:56:12.000-0400][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 90M->
2016-04-14T22:30:09.108+0200: 1.053: [GC (Allocation Failure) 1.053: [ParNew: 218496K->25704K(245760K), 0.0145305 secs] 218496K->garbled]
Exception in thread \"main\" java.lang.OutOfMemoryError
";
    let (events, stats) = parse(log);
    assert_eq!(stats.restarts, 1);
    let p = pauses(&events);
    assert_eq!(p.len(), 2);
    assert_eq!(p[1].collector, Collector::G1);
    assert_eq!(stats.unparsed[&UnparsedKind::MalformedEvent], 1);
    assert_eq!(stats.unparsed[&UnparsedKind::LegacyFormat], 1);
    assert_eq!(stats.unparsed[&UnparsedKind::NotUnifiedLogging], 1);
    assert_eq!(stats.lines, 6);
}

#[test]
fn crlf_long_lines_and_invalid_utf8_never_break_the_stream() {
    let mut parser = GcLogParser::new(ParserOptions {
        max_line_bytes: 200,
        ..ParserOptions::default()
    });
    let mut events = Vec::new();
    parser.feed(
        b"[0.1s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 1M->1M(2M) 1.0ms\r\n",
        &mut events,
    );
    parser.feed(&[b'x'; 150], &mut events);
    parser.feed(&[b'y'; 150], &mut events);
    parser.feed(b"\n[0.2s][info][gc] \xff\xfe\n", &mut events);
    parser.feed(
        b"[0.3s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 1M->1M(2M) 2.0ms",
        &mut events,
    );
    parser.finish(&mut events);
    assert_eq!(pauses(&events).len(), 2);
    let stats = parser.stats();
    assert_eq!(stats.unparsed[&UnparsedKind::TooLong], 1);
    assert_eq!(stats.unparsed[&UnparsedKind::InvalidUtf8], 1);
    assert_eq!(stats.lines, 4);
}

#[test]
fn jdk17_pool_lines_with_capacities_and_breakdown() {
    let log = "\
[2026-11-30T01:45:08.783+0000][0.159s][info][gc,start    ] GC(0) Pause Young (Allocation Failure)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc,heap     ] GC(0) PSYoungGen: 33280K(38400K)->5106K(38400K) Eden: 33280K(33280K)->0K(33280K) From: 0K(5120K)->5106K(5120K)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc,heap     ] GC(0) ParOldGen: 0K(87552K)->27704K(87552K)
[2026-11-30T01:45:08.808+0000][0.184s][info][gc          ] GC(0) Pause Young (Allocation Failure) 32M->32M(123M) 24.989ms
";
    let (events, _) = parse(log);
    let p = pauses(&events);
    assert_eq!(p[0].collector, Collector::Parallel);
    let pools: Vec<_> = p[0]
        .pools
        .iter()
        .map(|pool| {
            (
                pool.name.as_str(),
                pool.before_bytes / 1024,
                pool.after_bytes / 1024,
                pool.capacity_bytes.map(|c| c / 1024),
            )
        })
        .collect();
    assert_eq!(
        pools,
        vec![
            ("PSYoungGen", 33280, 5106, Some(38400)),
            ("ParOldGen", 0, 27704, Some(87552))
        ]
    );
}

#[test]
fn g1_regions_become_bytes_with_the_preamble_region_size() {
    let log = "\
[0.014s][info][gc,init] Heap Region Size: 1M
[0.014s][info][gc,init] Heap Max Capacity: 128M
[0.132s][info][gc,heap     ] GC(0) Eden regions: 6->0(5)
[0.132s][info][gc,heap     ] GC(0) Old regions: 0->5
[0.133s][info][gc          ] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 7M->6M(128M) 3.1ms
";
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    parser.feed(log.as_bytes(), &mut events);
    parser.finish(&mut events);
    assert_eq!(parser.run().max_heap_bytes, Some(128 << 20));
    let p = pauses(&events);
    assert_eq!(p[0].pools[1].name, "Old regions");
    assert_eq!(p[0].pools[1].after_bytes, 5 << 20);
    assert_eq!(p[0].pools[0].capacity_bytes, Some(5 << 20));
}

/// Inputs the fuzz target found (fuzz/README.md): they once panicked or grew the state.
#[test]
fn fuzz_findings_neither_panic_nor_grow() {
    let (events, _) = parse(
        "[8210000000000000ms][0ms] Safepoint \"\", Total: 1 ns\n[9000000000.0s] Safepoint \"\", Total: 1 ns\n",
    );
    assert_eq!(events.len(), 2);
    let (_, stats) = parse("Heap Region Size: 1T\nGC(1)en regions: 99999999->0(1)\n");
    assert_eq!(stats.lines, 2);
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    for _ in 0..10_000 {
        parser.feed(b"GC(1) PSYoungGen: 9T->9T(9T)\n", &mut events);
    }
    parser.feed(
        b"GC(1) Pause Young (Allocation Failure) 1M->1M(2M) 1.0ms\n",
        &mut events,
    );
    parser.finish(&mut events);
    let GcEvent::Pause(pause) = &events[0] else {
        panic!()
    };
    assert!(pause.pools.len() <= 16, "{} pools kept", pause.pools.len());
}
