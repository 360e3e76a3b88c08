use super::*;

fn parse(log: &str) -> (Vec<GcEvent>, Vec<String>) {
    let mut parser = LegacyParser::new(64 * 1024);
    let mut events = Vec::new();
    let mut claims = Vec::new();
    for line in log.lines() {
        claims.push(format!("{:?}", parser.line(line.trim_end(), &mut events)));
    }
    parser.flush(&mut events);
    (events, claims)
}

fn pauses(events: &[GcEvent]) -> Vec<&Pause> {
    events.iter().filter_map(GcEvent::as_pause).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn stamps_at_the_start_and_before_nested_groups() {
    let (stamp, rest) = leading_stamp("2015-07-22T14:53:42.655-0100: 1.807: #2: [GC");
    assert_eq!(stamp.uptime_s, Some(1.807));
    assert_eq!(stamp.gc_id, Some(2));
    assert_eq!(
        stamp.wall.unwrap().to_rfc3339(),
        "2015-07-22T15:53:42.655+00:00"
    );
    assert_eq!(rest, "[GC");
    let (before, stamp) = trailing_stamp("ParNew2016-03-22T10:02:41.970-0100: 13.404: ");
    assert_eq!(before, "ParNew");
    assert_eq!(stamp.uptime_s, Some(13.404));
    let (before, stamp) = trailing_stamp("GC (Allocation Failure) 366,174: ");
    assert_eq!(before, "GC (Allocation Failure) ");
    assert_eq!(stamp.uptime_s, Some(366.174));
}

/// GCViewer TestDataReaderSun1_8_0.serialPrintGCID: 2 events, the
/// second 0.0134215 s with 25384K before (its DefNew then Tenured ran).
#[test]
fn serial_young_and_promotion_into_tenured() {
    let (events, _) = parse(
            "2022-08-01T17:14:32.660+0000: 0.177: #1: [GC (Allocation Failure) 2022-08-01T17:14:32.661+0000: 0.178: #1: [DefNew: 9766K->1056K(9792K), 0.0057621 secs] 16728K->16694K(31680K), 0.0073601 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n\
             2022-08-01T17:14:32.671+0000: 0.188: #2: [GC (Allocation Failure) 2022-08-01T17:14:32.672+0000: 0.189: #2: [DefNew: 9746K->1056K(9792K), 0.0073505 secs]2022-08-01T17:14:32.680+0000: 0.197: #3: [Tenured: 24314K->24378K(24384K), 0.0036336 secs] 25384K->25370K(34176K), [Metaspace: 2712K->2712K(1056768K)], 0.0134215 secs] [Times: user=0.01 sys=0.00, real=0.02 secs] \n",
        );
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 2);
    assert!(close(pauses[0].duration_s, 0.0073601));
    assert!(!pauses[0].full);
    assert_eq!(pauses[0].collector, Collector::Serial);
    assert!(close(pauses[1].duration_s, 0.0134215));
    assert_eq!(pauses[1].heap.unwrap().before_bytes, 25384 * 1024);
    assert!(pauses[1].full, "DefNew failed over to Tenured");
    assert_eq!(pauses[1].gc_id, Some(2));
    assert_eq!(pauses[1].cause.as_deref(), Some("Allocation Failure"));
    assert_eq!(pauses[1].cpu.unwrap().real_s, 0.02);
    let names: Vec<_> = pauses[1].pools.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["DefNew", "Tenured", "Metaspace"]);
}

/// FORMATS.md §9.2 (gctoolkit scavangeBeforeRemarkWithReference.log):
/// PrintReferenceGC groups inside ParNew are not pauses.
#[test]
fn reference_processing_inside_a_young_pause() {
    let (events, _) = parse("2016-03-22T10:02:41.962-0100: 13.396: [GC (Allocation Failure) 2016-03-22T10:02:41.962-0100: 13.396: [ParNew2016-03-22T10:02:41.970-0100: 13.404: [SoftReference, 0 refs, 0.0000260 secs]2016-03-22T10:02:41.970-0100: 13.404: [WeakReference, 59 refs, 0.0000110 secs]2016-03-22T10:02:41.970-0100: 13.404: [FinalReference, 1407 refs, 0.0025979 secs]2016-03-22T10:02:41.973-0100: 13.407: [PhantomReference, 0 refs, 0 refs, 0.0000131 secs]2016-03-22T10:02:41.973-0100: 13.407: [JNI Weak Reference, 0.0000088 secs]: 69952K->8704K(78656K), 0.0104509 secs] 69952K->11354K(253440K), 0.0105137 secs] [Times: user=0.04 sys=0.01, real=0.01 secs] ");
    let pauses = pauses(&events);
    assert_eq!(events.len(), 1);
    assert!(close(pauses[0].duration_s, 0.0105137));
    assert_eq!(pauses[0].pools[0].name, "ParNew");
    assert_eq!(pauses[0].collector, Collector::Cms);
}

/// GCViewer TestDataReaderSun1_6_0.testCMSPromotionFailed... style, and
/// FORMATS.md §9.2: tenuring lines split the ParNew group.
#[test]
fn promotion_failed_across_tenuring_lines_is_a_full_pause() {
    let (events, claims) = parse(
            "2118019.970: [GC 2118019.971: [ParNew (promotion failed)\n\
             Desired survivor size 1343488 bytes, new threshold 1 (max 1)\n\
             - age   1:    1286472 bytes,    1286472 total\n\
             : 2624K->2624K(2624K), 0.0047280 secs]2118019.975: [CMS: 2622587K->2608283K(2988200K), 13.5914940 secs] 2625211K->2608283K(2990824K), [CMS Perm : 152319K->150812K(262144K)], 13.5959700 secs] [Times: user=13.56 sys=0.02, real=13.60 secs]\n",
        );
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 1, "{claims:?}");
    assert!(close(pauses[0].duration_s, 13.5959700));
    assert!(pauses[0].full);
    assert_eq!(pauses[0].qualifiers, ["promotion failed"]);
    assert_eq!(claims[1], "Ignored");
}

/// GCViewer TestDataReaderSun1_8_0.scavengeBeforeRemarkPrintHeapAtGC_YGOccupancy
/// (SampleSun1_8_0CMS_ScavengeBeforeRemark_HeapAtGc.txt, shortened heap
/// block): 2 pauses, 0.0000778 and 0.0019970 - 0.0000778.
#[test]
fn scavenge_before_remark_is_two_pauses() {
    let (events, _) = parse(
            "2015-05-14T18:55:12.588+0200: 1.157: [GC (CMS Final Remark) [YG occupancy: 10451 K (47936 K)]{Heap before GC invocations=22 (full 13):\n \
             par new generation   total 47936K, used 10451K [0x00000000f6400000, 0x00000000f9800000, 0x00000000f9800000)\n\
             2015-05-14T18:55:12.588+0200: 1.158: [GC (CMS Final Remark) 1.158: [ParNew: 10451K->10451K(47936K), 0.0000303 secs] 111291K->111291K(154432K), 0.0000778 secs] [Times: user=0.00 sys=0.00, real=0.00 secs]\n\
             Heap after GC invocations=23 (full 13):\n \
             par new generation   total 47936K, used 10451K [0x00000000f6400000, 0x00000000f9800000, 0x00000000f9800000)\n\
             }\n\
             1.158: [Rescan (parallel) , 0.0002732 secs]1.158: [weak refs processing, 0.0000176 secs][1 CMS-remark: 100839K(106496K)] 111291K(154432K), 0.0019970 secs] [Times: user=0.00 sys=0.00, real=0.00 secs]\n",
        );
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 2, "{events:?}");
    assert_eq!(pauses[0].name, "Pause Young");
    assert!(close(pauses[0].duration_s, 0.0000778));
    assert_eq!(pauses[1].name, "Pause Remark");
    assert!(close(pauses[1].duration_s, 0.0019970 - 0.0000778));
    assert_eq!(pauses[1].collector, Collector::Cms);
}

/// FORMATS.md §9.3 (GCViewer SampleSun1_8_0G1HumongousMixed.txt): a
/// concurrent phase spliced into a G1 pause's first line is a phase, the
/// pause ends with its detail block.
#[test]
fn g1_pause_with_spliced_concurrent_output_and_details() {
    let (events, _) = parse(
            "2015-05-01T11:26:29.687+0200: 160770.873: [GC pause (G1 Humongous Allocation) (young)2015-05-01T11:26:29.701+0200: 160770.887: [GC concurrent-root-region-scan-end, 0.0157002 secs]\n\
             2015-05-01T11:26:29.701+0200: 160770.887: [GC concurrent-mark-start]\n\
             , 0.0470136 secs]\n   \
                [Parallel Time: 23.4 ms, GC Workers: 10]\n      \
                   [GC Worker Start (ms): Min: 160770887.8, Avg: 160770887.9, Max: 160770888.0, Diff: 0.2]\n   \
                [Eden: 24.0M(24.0M)->0.0B(30.0M) Survivors: 0.0B->3072.0K Heap: 33.6M(256.0M)->13.9M(256.0M)]\n \
              [Times: user=0.03 sys=0.00, real=0.05 secs]\n",
        );
    let [GcEvent::ConcurrentPhase(phase), GcEvent::Pause(pause)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(phase.name, "GC concurrent-root-region-scan");
    assert!(close(phase.duration_s, 0.0157002));
    assert!(close(pause.duration_s, 0.0470136));
    assert!(pause.humongous);
    assert_eq!(pause.collector, Collector::G1);
    assert_eq!(
        pause.heap.unwrap().after_bytes,
        (13.9 * 1024.0 * 1024.0f64).round() as u64
    );
    assert_eq!(pause.pools.len(), 2);
    assert_eq!(pause.cpu.unwrap().real_s, 0.05);
}

/// GCViewer TestDataReaderSun1_7_0G1.printSimpleToSpaceOverflow: 1
/// pause of 0.0245257 s; `--` marks the to-space overflow.
#[test]
fn g1_to_space_overflow_marker() {
    let (events, _) = parse("2013-12-21T15:48:44.062+0100: 0.441: [GC pause (G1 Evacuation Pause) (young)-- 90M->94M(128M), 0.0245257 secs]");
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 1);
    assert!(close(pauses[0].duration_s, 0.0245257));
    assert!(pauses[0].evacuation_failure);
    assert_eq!(pauses[0].heap.unwrap().after_bytes, 94 << 20);
}

#[test]
fn cms_concurrent_phases_are_not_pauses() {
    let (events, _) = parse(
            "2016-04-14T22:30:12.886+0200: 4.830: [GC (CMS Initial Mark) [1 CMS-initial-mark: 29170K(546176K)] 45355K(791936K), 0.0017923 secs] [Times: user=0.00 sys=0.00, real=0.00 secs] \n\
             2016-04-14T22:30:13.217+0200: 5.161: [CMS-concurrent-abortable-preclean: 0.146/0.280 secs] [Times: user=1.27 sys=0.05, real=0.28 secs] \n\
             2016-04-14T22:30:12.900+0200: 4.844: [CMS-concurrent-mark-start]\n",
        );
    let [GcEvent::Pause(mark), GcEvent::ConcurrentPhase(preclean)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(mark.name, "Pause Initial Mark");
    assert_eq!(mark.cause.as_deref(), Some("CMS Initial Mark"));
    assert!(close(preclean.duration_s, 0.280));
    assert_eq!(preclean.name, "CMS-concurrent-abortable-preclean");
}

#[test]
fn gc_lines_among_application_output() {
    let (events, claims) = parse(
        "Starting service on port 8080\n\
             [GC (Allocation Failure)  65536K->1234K(251392K), 0.0123000 secs]\n\
             request served in 12 ms\n\
             INFO done[Full GC (System.gc())  1234K->1000K(251392K), 0.0200000 secs]\n",
    );
    let pauses = pauses(&events);
    assert_eq!(pauses.len(), 2);
    assert!(pauses[1].full && pauses[1].explicit);
    assert_eq!(claims[0], "NotLegacy");
    assert_eq!(claims[2], "NotLegacy");
}

/// `line_time` orders a rotated set and paces `replay`: JDK 8 stamps count.
#[test]
fn line_time_reads_jdk8_stamps() {
    let time =
        crate::line_time("2016-04-14T22:30:09.108+0200: 1.053: [GC (Allocation Failure)").unwrap();
    assert_eq!(time.uptime_s, Some(1.053));
    assert_eq!(
        time.wall.unwrap().to_rfc3339(),
        "2016-04-14T20:30:09.108+00:00"
    );
    assert_eq!(
        crate::line_time(
            "24.268: Total time for which application threads were stopped: 0.0054520 seconds"
        )
        .unwrap()
        .uptime_s,
        Some(24.268)
    );
    assert_eq!(
        crate::line_time("Desired survivor size 1343488 bytes"),
        None
    );
}

#[test]
fn durations_in_each_unit() {
    assert_eq!(trailing_duration(", 0.0146984 secs"), Some(0.0146984));
    assert_eq!(trailing_duration(": 0.146/0.280 secs"), Some(0.280));
    assert_eq!(trailing_duration(", 0.0019007"), None);
    assert_eq!(trailing_seconds(", 0.0019007"), Some(0.0019007));
    assert_eq!(trailing_duration(", 1.983 ms"), Some(0.001983));
    assert_eq!(trailing_duration(", 0,0004130 secs"), Some(0.000413));
    assert_eq!(trailing_duration("GC concurrent-mark-start"), None);
    assert_eq!(trailing_duration(" 45355K(791936K)"), None);
    // A multi-byte character right before the number (a proptest finding).
    assert_eq!(trailing_duration("é1.5 secs"), Some(1.5));
    assert_eq!(heap_in("é1K->1K(2K)").unwrap().before_bytes, 1024);
}

/// No pause or phase lasts a day: a longer figure is a garbled number.
#[test]
fn durations_beyond_a_day_are_malformed() {
    let (events, claims) = parse(
        "1.0: [GC (Allocation Failure)  1K->1K(2K), 99999999.0000000 secs]\n\
             2.0: [CMS-concurrent-mark: 0.1/86401.0 secs]\n",
    );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(claims, ["Malformed", "Malformed"]);
}

/// Groups one after another on a line are read in a loop, not by
/// recursion: a 64 KiB line of them must not exhaust the stack.
#[test]
fn many_events_on_one_line() {
    let line = "[GC (a)  1K->1K(2K), 0.0000001 secs]".repeat(2000);
    let (events, _) = parse(&line);
    assert_eq!(pauses(&events).len(), 2000);
    let (events, _) = parse("1.0: [GC (a)  1K->1K(2K), 0.1 secs]1.1: [CMS-concurrent-mark: 0.1/0.2 secs]1.2: [GC (b)  1K->1K(2K), 0.3 secs] [Times: user=0.01 sys=0.00, real=0.30 secs]");
    let summary: Vec<String> = events
        .iter()
        .map(|e| match e {
            GcEvent::Pause(p) => format!("pause {:?} {}", p.cause, p.cpu.is_some()),
            GcEvent::ConcurrentPhase(c) => format!("phase {}", c.name),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "phase CMS-concurrent-mark",
            "pause Some(\"a\") false",
            "pause Some(\"b\") true"
        ]
    );
}

#[test]
fn deep_or_unclosed_brackets_neither_panic_nor_grow() {
    let mut parser = LegacyParser::new(256);
    let mut events = Vec::new();
    let deep = format!("1.0: [GC {}", "[".repeat(100));
    assert_eq!(parser.line(&deep, &mut events), Claim::Malformed);
    assert_eq!(
        parser.line("1.0: [GC (x) [ParNew", &mut events),
        Claim::Used
    );
    for _ in 0..100 {
        let _ = parser.line(": [a", &mut events);
    }
    assert!(parser.open.as_ref().map_or(0, |o| o.len()) <= 256);
    assert!(events.is_empty());
}

proptest::proptest! {
    /// The byte-level helpers of the hot path give what `str`'s own methods
    /// give, on any text: Unicode blanks, multi-byte chars beside the bytes
    /// sought.
    #[test]
    fn byte_helpers_agree_with_str(text in "[ \t\u{b}\u{a0}\u{2028}a(0-9.,:>\\-éµ]{0,12}") {
        proptest::prop_assert_eq!(trim(&text), text.trim());
        proptest::prop_assert_eq!(trim_start(&text), text.trim_start());
        proptest::prop_assert_eq!(trim_end(&text), text.trim_end());
        proptest::prop_assert_eq!(find_pair(&text, *b"->"), text.find("->"));
        proptest::prop_assert_eq!(find_pair(&text, *b" ("), text.find(" ("));
        proptest::prop_assert_eq!(
            text.len() - trailing_len(&text, |b| b.is_ascii_digit() || b == b'.'),
            text.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.').len()
        );
    }
}
