//! JDK 6 to 8 GC logs from the public corpus (../shared/corpus), read by the
//! same `GcLogParser` as unified logs, checked against what GCViewer's,
//! Jifa's and garbagecat's own unit tests assert for the same files, or
//! against counts taken by hand (grep). Each expected figure names its source.
//! When the corpus is absent every test is skipped (tests/common/skip.rs).

use std::path::{Path, PathBuf};

use pausewatch_parsers::{
    Collector, ConcurrentPhase, GcEvent, GcLogParser, JvmRun, ParseStats, Pause, Safepoint,
};

struct Parsed {
    pauses: Vec<Pause>,
    phases: Vec<ConcurrentPhase>,
    safepoints: Vec<Safepoint>,
    stats: ParseStats,
    run: JvmRun,
}

use crate::skip;

fn corpus_file(relative: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus")
        .join(relative);
    skip::or_skip(
        path.is_file().then(|| path.clone()),
        format_args!("corpus file not found: {}", path.display()),
    )
}

/// Parses a corpus file in 4 KiB chunks, as the agent reads a growing file.
fn parse(relative: &str) -> Option<Parsed> {
    let bytes = std::fs::read(corpus_file(relative)?).unwrap();
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    for chunk in bytes.chunks(4096) {
        parser.feed(chunk, &mut events);
    }
    parser.finish(&mut events);
    let mut parsed = Parsed {
        pauses: Vec::new(),
        phases: Vec::new(),
        safepoints: Vec::new(),
        stats: parser.stats().clone(),
        run: parser.run().clone(),
    };
    for event in events {
        match event {
            GcEvent::Pause(p) => parsed.pauses.push(p),
            GcEvent::ConcurrentPhase(c) => parsed.phases.push(c),
            GcEvent::Safepoint(s) => parsed.safepoints.push(s),
            _ => {}
        }
    }
    Some(parsed)
}

const OPENJDK: &str = "GCViewer/src/test/resources/openjdk/";
const JIFA: &str = "jifa/analysis/gc-log/src/test/resources/";
const GARBAGECAT: &str = "garbagecat/src/test/resources/data/";

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-9
}

fn sum(pauses: &[Pause]) -> f64 {
    pauses.iter().map(|p| p.duration_s).sum()
}

fn max(pauses: &[Pause]) -> f64 {
    pauses.iter().map(|p| p.duration_s).fold(0.0, f64::max)
}

#[track_caller]
fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(close(actual, expected), "{what}: {actual} != {expected}");
}

/// Serial: DefNew, Tenured, a young collection that fell back to Tenured,
/// `-XX:+PrintGCDateStamps` without time stamps and `-XX:+PrintGCID`.
#[test]
fn serial_jdk8_matches_jifa() {
    let Some(log) = parse(&format!("{JIFA}8SerialGCParser.log")) else {
        return;
    };
    // Jifa TestParser.testJDK8SerialGCParser: 8 events; event 1 a young GC of
    // 70.1086 ms, heap 126740K -> 114869K (253440K); event 6 a full GC of
    // 1095.987 ms caused by an allocation failure, old 785946K -> 756062K (786120K).
    assert_eq!(log.pauses.len(), 8);
    let young = &log.pauses[1];
    assert_close(young.duration_s, 0.0701086, "young pause");
    let heap = young.heap.unwrap();
    assert_eq!(
        (heap.before_bytes, heap.after_bytes, heap.capacity_bytes),
        (126740 * 1024, 114869 * 1024, Some(253440 * 1024))
    );
    let full = &log.pauses[6];
    assert_close(full.duration_s, 1.095987, "full pause");
    assert!(full.full);
    assert_eq!(full.cause.as_deref(), Some("Allocation Failure"));
    let tenured = full.pools.iter().find(|p| p.name == "Tenured").unwrap();
    assert_eq!(
        (tenured.before_bytes, tenured.after_bytes),
        (785946 * 1024, 756062 * 1024)
    );
    assert!(log.pauses.iter().all(|p| p.collector == Collector::Serial));
    // Date stamps only: wall time without uptime; PrintGCID numbers them.
    assert!(log.pauses.iter().all(|p| p.start.wall.is_some()));
    assert!(log.pauses.iter().all(|p| p.gc_id.is_some()));
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// JDK 1.4 Serial with time stamps only: GCViewer
/// TestDataReaderSun1_4_0.testPrintGCDetails lists the four events with
/// 0.0084272, 0.2858561, 0.8142078 and 0.8036514 s; the third is a young
/// collection that went on into Tenured (a full collection).
#[test]
fn serial_jdk1_4_matches_gcviewer() {
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_4_2PrintGCDetails.txt")) else {
        return;
    };
    let durations: Vec<f64> = log.pauses.iter().map(|p| p.duration_s).collect();
    assert_eq!(durations, [0.0084272, 0.2858561, 0.8142078, 0.8036514]);
    let full: Vec<bool> = log.pauses.iter().map(|p| p.full).collect();
    assert_eq!(full, [false, true, true, true]);
    assert_eq!(log.pauses[2].start.uptime_s, Some(22.879));
}

/// Parallel: PSYoungGen, ParOldGen, `Full GC (Ergonomics)`, Metaspace.
#[test]
fn parallel_jdk8_matches_jifa() {
    let Some(log) = parse(&format!("{JIFA}8ParallelGCParser.log")) else {
        return;
    };
    // Jifa TestParser.testJDK8ParallelGCParser: 6 events; event 2 a young GC
    // (Allocation Failure) of 46.2864 ms, young 51200K -> 4096K (77824K), heap
    // 118572K -> 117625K (252416K), user 290 ms; event 5 a full GC
    // (Ergonomics) of 4.6781 ms, old 341228K -> 720K (302592K).
    assert_eq!(log.pauses.len(), 6);
    let young = &log.pauses[2];
    assert_close(young.duration_s, 0.0462864, "young pause");
    assert_eq!(young.cause.as_deref(), Some("Allocation Failure"));
    let ps_young = &young.pools[0];
    assert_eq!(
        (
            ps_young.name.as_str(),
            ps_young.before_bytes,
            ps_young.after_bytes,
            ps_young.capacity_bytes
        ),
        ("PSYoungGen", 51200 * 1024, 4096 * 1024, Some(77824 * 1024))
    );
    let heap = young.heap.unwrap();
    assert_eq!(
        (heap.before_bytes, heap.after_bytes, heap.capacity_bytes),
        (118572 * 1024, 117625 * 1024, Some(252416 * 1024))
    );
    assert_eq!(young.cpu.unwrap().user_s, 0.29);
    let full = &log.pauses[5];
    assert_close(full.duration_s, 0.0046781, "full pause");
    assert!(full.full);
    assert_eq!(full.cause.as_deref(), Some("Ergonomics"));
    let old = full.pools.iter().find(|p| p.name == "ParOldGen").unwrap();
    assert_eq!(
        (old.before_bytes, old.after_bytes, old.capacity_bytes),
        (341228 * 1024, 720 * 1024, Some(302592 * 1024))
    );
    assert_eq!(log.run.collector, Collector::Parallel);
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// Parallel with `-XX:+PrintTenuringDistribution` splitting every event over
/// three lines, and `-XX:+PrintGCID` with `Full GC (System.gc())`.
#[test]
fn parallel_tenuring_and_gc_id_match_gcviewer() {
    let Some(log) = parse(&format!(
        "{OPENJDK}SampleSun1_8_0Parallel_Tenuring_PrintGCCause.txt"
    )) else {
        return;
    };
    // GCViewer TestDataReaderSun1_8_0.parallelPrintTenuringGcCause: 5 events,
    // the first "GC (Allocation Failure); PSYoungGen" of 0.0199218 s.
    assert_eq!(log.pauses.len(), 5);
    assert_close(log.pauses[0].duration_s, 0.0199218, "first pause");
    assert_eq!(log.pauses[0].pools[0].name, "PSYoungGen");
    assert_eq!(log.stats.unparsed_total(), 0);

    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_8_0ParallelPrintGCID.txt")) else {
        return;
    };
    // GCViewer TestDataReaderSun1_8_0.parallelPrintGCID: 5 events. By hand
    // (grep): 2 of them `Full GC (System.gc())`, numbered #0 to #4.
    assert_eq!(log.pauses.len(), 5);
    assert_eq!(
        log.pauses.iter().filter(|p| p.full && p.explicit).count(),
        2
    );
    let ids: Vec<_> = log.pauses.iter().map(|p| p.gc_id.unwrap()).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
}

/// A JDK 8 rotation set (`-XX:+UseGCLogFileRotation`), each file starting
/// with the VM header again and a "GC log file created" line: read in order
/// by one parser it is one JVM run, with the pauses of the file GCViewer's
/// GcSeriesLoaderTest.merge_FilesInRightOrder merges it into
/// (SampleSun1_8_0Series-ManuallyMerged.txt). By hand: 533 `[GC (` events,
/// 3 of them CMS remarks holding a young collection, so 536 pauses.
#[test]
fn a_rotation_set_is_one_run() {
    let Some(merged) = parse(&format!("{OPENJDK}SampleSun1_8_0Series-ManuallyMerged.txt")) else {
        return;
    };
    assert_eq!(merged.pauses.len(), 536);
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    for part in 1..=7 {
        let Some(path) = corpus_file(&format!("{OPENJDK}SampleSun1_8_0Series-Part{part}.txt"))
        else {
            return;
        };
        parser.feed(&std::fs::read(path).unwrap(), &mut events);
    }
    parser.finish(&mut events);
    let pauses: Vec<&Pause> = events.iter().filter_map(GcEvent::as_pause).collect();
    assert_eq!(pauses.len(), 536);
    assert_close(
        pauses.iter().map(|p| p.duration_s).sum(),
        sum(&merged.pauses),
        "pause sum",
    );
    assert_eq!(parser.stats().restarts, 0);
    assert_eq!(parser.stats().unparsed_total(), 0);
}

/// `-XX:+PrintHeapAtGC` blocks around a Parallel pause: GCViewer
/// TestDataReaderSun1_8_0.parallelPrintHeapAtGC, pause sum 0.0103603 s.
#[test]
fn heap_at_gc_blocks_are_skipped() {
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_8_0ParallelPrintHeapAtGC.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(sum(&log.pauses), 0.0103603, "pause sum");
    assert_eq!(log.stats.unparsed_total(), 0);
    assert_eq!(log.run.version.as_deref(), Some("1.8.0-ea-b123"));
}

/// ParNew + CMS with `-XX:+PrintGCID`: young pauses, initial mark and remark
/// are pauses; concurrent phases are not.
#[test]
fn cms_with_gc_id_matches_gcviewer() {
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_8_0CmsPrintGcId.txt")) else {
        return;
    };
    // GCViewer TestDataReaderSun1_8_0.cmsPrintGCID: 18 events, the first
    // "GC (Allocation Failure); ParNew" of 0.0106548 s with 8678K before.
    // Its 18 count the 8 concurrent lines too (4 `-start` markers, 4 with a
    // duration: mark, preclean, sweep, reset; by grep), leaving 10 pauses.
    assert_eq!(log.pauses.len(), 10);
    assert_eq!(log.phases.len(), 4);
    let first = &log.pauses[0];
    assert_close(first.duration_s, 0.0106548, "first pause");
    assert_eq!(first.heap.unwrap().before_bytes, 8678 * 1024);
    assert_eq!(first.gc_id, Some(0));
    let names: Vec<&str> = log.pauses.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "Pause Young").count(), 8);
    assert_eq!(
        names.iter().filter(|n| **n == "Pause Initial Mark").count(),
        1
    );
    assert_eq!(names.iter().filter(|n| **n == "Pause Remark").count(), 1);
    // CMS-concurrent-mark: 0.005/0.013 secs: the wall-clock figure.
    let mark = log
        .phases
        .iter()
        .find(|p| p.name == "CMS-concurrent-mark")
        .unwrap();
    assert_close(mark.duration_s, 0.013, "concurrent mark");
    assert_eq!(log.run.collector, Collector::Cms);
    assert_eq!(log.run.version.as_deref(), Some("1.8.0_342-b07"));
    assert_eq!(log.run.max_heap_bytes, Some(536870912));
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// `-XX:+CMSScavengeBeforeRemark` with PrintHeapAtGC, PrintTenuringDistribution
/// and PrintFLSStatistics: GCViewer
/// TestDataReaderSun1_8_0.scavengeBeforeRemark_HeapAtGC_PrintTenuringDistribution_PrintFLSStats
/// counts 2 pauses, 0.1306264 s and 0.1787717 - 0.1306264 s.
#[test]
fn cms_scavenge_before_remark_matches_gcviewer() {
    let Some(log) = parse(&format!(
        "{OPENJDK}SampleSun1_8_0CMS_ScavengeBR_HeapAtGC_TenuringDist_PrintFLS.txt"
    )) else {
        return;
    };
    assert_eq!(log.pauses.len(), 2);
    assert_close(log.pauses[0].duration_s, 0.1306264, "scavenge");
    assert_eq!(log.pauses[0].name, "Pause Young");
    assert_close(log.pauses[1].duration_s, 0.1787717 - 0.1306264, "remark");
    assert_eq!(log.pauses[1].name, "Pause Remark");
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// Concurrent mode failure with a concurrent phase spliced into the CMS
/// group: GCViewer TestDataReaderSun1_8_0.cmsPrintHeapBeforeFullGc, 2
/// events: "CMS-concurrent-mark", then "Full GC (GCLocker Initiated GC);
/// CMS (concurrent mode failure); Metaspace" of 218.6928810 s.
#[test]
fn cms_concurrent_mode_failure_matches_gcviewer() {
    let Some(log) = parse(&format!(
        "{OPENJDK}SampleSun1_8_0CMS_HeadDumpBeforeFullGc.txt"
    )) else {
        return;
    };
    assert_eq!(log.phases.len(), 1);
    assert_eq!(log.phases[0].name, "CMS-concurrent-mark");
    assert_eq!(log.pauses.len(), 1);
    let full = &log.pauses[0];
    assert_close(full.duration_s, 218.6928810, "full pause");
    assert!(full.full);
    assert_eq!(full.cause.as_deref(), Some("GCLocker Initiated GC"));
    assert!(full
        .qualifiers
        .iter()
        .any(|q| q == "concurrent mode failure"));
}

/// Promotion failed, over tenuring lines: GCViewer
/// TestDataReaderSun1_7_0.printTenuringDistributionCMSInitiationStatistics,
/// 1 event of 21.5649460 s; and Jifa TestParser.testJDK8GenerationalGCInterleave,
/// a full GC of 2016.0411 ms.
#[test]
fn cms_promotion_failed_matches_gcviewer_and_jifa() {
    let Some(log) = parse(&format!(
        "{OPENJDK}SampleSun1_7_0CMSTenuringDistributionInitiationStatistics.txt"
    )) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(log.pauses[0].duration_s, 21.5649460, "pause");
    assert!(log.pauses[0].full);
    assert!(log.pauses[0]
        .qualifiers
        .iter()
        .any(|q| q == "promotion failed"));
    let Some(log) = parse(&format!("{JIFA}8GenerationalGCInterleave.log")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(log.pauses[0].duration_s, 2.0160411, "pause");
    assert!(log.pauses[0].full);
    assert_eq!(log.pauses[0].cause.as_deref(), Some("Allocation Failure"));
}

/// JDK 6 G1 with `-verbose:gc` only: GCViewer
/// TestDataReaderSun1_6_0G1.testG1GcVerbose asserts a pause sum of
/// 62.616796 s and a longest pause of 0.1581177 s. By grep: 2478 `GC pause`,
/// 250 `GC remark`, 245 `GC cleanup` and 5 `Full GC`, some split by spliced
/// `GC concurrent-mark-end` output.
#[test]
fn g1_jdk6_verbose_matches_gcviewer() {
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_6_0G1_gc_verbose.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 2478 + 250 + 245 + 5);
    assert!((sum(&log.pauses) - 62.616796).abs() < 1e-6);
    assert_close(max(&log.pauses), 0.1581177, "longest pause");
    let count = |name: &str| log.pauses.iter().filter(|p| p.name == name).count();
    assert_eq!(
        (
            count("Pause Remark"),
            count("Pause Cleanup"),
            count("Pause Full")
        ),
        (250, 245, 5)
    );
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// JDK 8 G1 details: young, remark, cleanup, full and a mixed pause with
/// to-space exhausted, from Jifa TestParser.testJDK8G1GCParser: young 56.3085
/// ms (G1 Evacuation Pause), remark 478.5858 ms, full GC 1924.2692 ms
/// (Metadata GC Threshold), mixed 26.4971 ms (Jifa counts remark and cleanup
/// as phases of its concurrent cycle; they are pauses here).
#[test]
fn g1_jdk8_details_match_jifa() {
    let Some(log) = parse(&format!("{JIFA}8G1GCParser.log")) else {
        return;
    };
    let summary: Vec<(&str, f64)> = log
        .pauses
        .iter()
        .map(|p| (p.name.as_str(), p.duration_s))
        .collect();
    assert_eq!(
        summary,
        [
            ("Pause Young", 0.0563085),
            ("Pause Remark", 0.4785858),
            ("Pause Cleanup", 0.0659638),
            ("Pause Full", 1.9242692),
            ("Pause Young", 0.0264971),
        ]
    );
    assert_eq!(
        log.pauses[3].cause.as_deref(),
        Some("Metadata GC Threshold")
    );
    let mixed = &log.pauses[4];
    assert!(mixed.evacuation_failure);
    assert_eq!(mixed.qualifiers, ["Mixed", "to-space exhausted"]);
    // The `[Eden: ... Heap: 10.3G(20.0G)->...]` detail line gives the heap.
    assert!(log.pauses[0].heap.is_some());
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// `-XX:+PrintAdaptiveSizePolicy` output inside and between events, and
/// `-XX:+PrintReferenceGC` groups inside pauses.
#[test]
fn adaptive_size_policy_and_reference_gc_match_gcviewer_and_jifa() {
    // GCViewer TestDataReaderSun1_6_0.testAdaptiveSizePolicy (Parallel):
    // 10 events, longest young pause 0.0224480 s, longest full 0.0204436 s.
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_6_0AdaptiveSizePolicy.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 10);
    let (full, young): (Vec<Pause>, Vec<Pause>) = log.pauses.into_iter().partition(|p| p.full);
    assert_close(max(&young), 0.0224480, "longest young pause");
    assert_close(max(&full), 0.0204436, "longest full pause");
    assert_eq!(log.stats.unparsed_total(), 0);
    // GCViewer TestDataReaderSun1_7_0G1.printAdaptiveSizePolicy (G1 with
    // G1Ergonomics lines inside each pause): longest pause 0.158757 s.
    let Some(log) = parse(&format!(
        "{OPENJDK}SampleSun1_7_0_12PrintAdaptiveSizePolicy.txt"
    )) else {
        return;
    };
    assert_close(max(&log.pauses), 0.158757, "longest G1 pause");
    assert!(log
        .pauses
        .iter()
        .all(|p| p.qualifiers.iter().all(|q| q == "Concurrent Start")));
    // Jifa TestParser.testJDK8G1GCParserAdaptiveSize: 1 event, 8.5898 ms.
    let Some(log) = parse(&format!("{JIFA}8G1GCParserAdaptiveSize.log")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(log.pauses[0].duration_s, 0.0085898, "pause");
    // GCViewer TestDataReaderSun1_7_0G1.printReferencePolicy: 1 event of
    // 0.0049738 s; TestDataReaderSun1_7_0.parallelPrintUseAdaptiveSizeReference
    // (PrintReferenceGC with Parallel): 1 event of 0.0134562 s.
    for (file, duration) in [
        ("SampleSun1_7_0G1PrintReferencePolicy.txt", 0.0049738),
        ("SampleSun1_7_0ParallelAdaptiveSizeReference.txt", 0.0134562),
    ] {
        let Some(log) = parse(&format!("{OPENJDK}{file}")) else {
            return;
        };
        assert_eq!(log.pauses.len(), 1, "{file}");
        assert_close(log.pauses[0].duration_s, duration, file);
        assert_eq!(log.stats.unparsed_total(), 0, "{file}");
    }
}

/// JDK 8 G1 from GCViewer TestDataReaderSun1_8_0G1: pause sums 16.7578613 s
/// (printGCCauseTenuringDistribution... G1PrintGCCausePrintTenuringDistribution.txt)
/// and 0.0055924 s (G1PrintHeapAtGc.txt); 1 event in G1HumongousMixed.txt,
/// whose first line carries a spliced concurrent phase.
#[test]
fn g1_jdk8_samples_match_gcviewer() {
    for (file, pauses, total) in [
        (
            "SampleSun1_8_0G1PrintGCCausePrintTenuringDistribution.txt",
            1,
            16.7578613,
        ),
        ("SampleSun1_8_0G1PrintHeapAtGc.txt", 1, 0.0055924),
        ("SampleSun1_8_0G1HumongousMixed.txt", 1, 0.0470136),
    ] {
        let Some(log) = parse(&format!("{OPENJDK}{file}")) else {
            return;
        };
        assert_eq!(log.pauses.len(), pauses, "{file}");
        assert_close(sum(&log.pauses), total, file);
        assert!(log.pauses.iter().all(|p| p.collector == Collector::G1));
        assert_eq!(log.stats.unparsed_total(), 0, "{file}");
    }
}

/// G1 with `-XX:+PrintGCID`: GCViewer TestDataReaderSun1_8_0G1.printGCID
/// counts 11 events, which by grep are 7 pauses (5 young, one of them
/// initial-mark, a remark and a cleanup) and 4 concurrent lines (2 `-start`
/// markers). G1 details with date stamps but no time stamps: GCViewer
/// TestDataReaderSun1_7_0G1.printDetailsWithoutTimestamp, 1 pause of
/// 0.0055310 s, placed by its date stamp (2013-12-21T15:49:27.817+0100).
#[test]
fn g1_gc_id_and_no_stamps_match_gcviewer() {
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_8_0G1PrintGCID.txt")) else {
        return;
    };
    assert_eq!((log.pauses.len(), log.phases.len()), (7, 2));
    let names: Vec<&str> = log.pauses.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Pause Young",
            "Pause Young",
            "Pause Young",
            "Pause Young",
            "Pause Young",
            "Pause Remark",
            "Pause Cleanup"
        ]
    );
    assert_eq!(log.pauses[3].qualifiers, ["Concurrent Start"]);
    let ids: Vec<u64> = log.pauses.iter().filter_map(|p| p.gc_id).collect();
    assert_eq!(ids.len(), 7);
    let Some(log) = parse(&format!("{OPENJDK}SampleSun1_7_0G1_DetailsWoTimestamp.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(log.pauses[0].duration_s, 0.0055310, "pause");
    let start = log.pauses[0].start;
    assert_eq!(start.uptime_s, None);
    assert_eq!(
        start.wall.unwrap().to_rfc3339(),
        "2013-12-21T14:49:27.817+00:00"
    );
    assert_eq!(log.stats.unparsed_total(), 0);
}

/// `-XX:+PrintGCApplicationStoppedTime` with G1 details and tenuring:
/// garbagecat TestJvmRun (dataset98.txt) counts 2 blocking events, the
/// first at 1002192 ms and the last at 1002847 ms, and 6 stopped-time
/// events totalling 1064937 us (each truncated to whole microseconds).
#[test]
fn application_stopped_time_matches_garbagecat() {
    let Some(log) = parse(&format!("{GARBAGECAT}dataset98.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 2);
    assert_eq!(log.pauses[0].start.uptime_s, Some(1002.192));
    assert_eq!(log.pauses[1].start.uptime_s, Some(1002.847));
    assert_eq!(log.safepoints.len(), 6);
    let micros: u64 = log
        .safepoints
        .iter()
        .map(|s| (s.total_s * 1e6 + 1e-6) as u64)
        .sum();
    assert_eq!(micros, 1064937);
    // Each safepoint ends at its line's stamp and lasts what it says.
    let last = log.safepoints.last().unwrap();
    assert_eq!(last.end.uptime_s, Some(1003.884));
    assert!(last.end.wall.is_some());
}

/// JDK 8's `Stopping threads took` is the time to reach the safepoint:
/// FORMATS.md §9.4 (garbagecat dataset104.txt), checked by hand.
#[test]
fn stopping_threads_is_time_to_safepoint() {
    let Some(log) = parse(&format!("{GARBAGECAT}dataset104.txt")) else {
        return;
    };
    let first = log
        .safepoints
        .iter()
        .find(|s| s.end.uptime_s == Some(0.193))
        .expect("the stop at 0.193 s");
    assert_close(first.total_s, 0.0000746, "stopped");
    assert_close(first.reaching_s.unwrap(), 0.0000269, "stopping threads");
    assert!(log.pauses.is_empty() || log.pauses.iter().all(|p| p.duration_s > 0.0));
}

/// `-verbose:gc` on a JBoss server's stdout (garbagecat dataset114.txt):
/// the one GC line, 0.0760907 s by hand, is found among the server's
/// output, which is counted as foreign lines, not as GC logging.
#[test]
fn gc_lines_among_application_stdout() {
    let Some(log) = parse(&format!("{GARBAGECAT}dataset114.txt")) else {
        return;
    };
    assert_eq!(log.pauses.len(), 1);
    assert_close(log.pauses[0].duration_s, 0.0760907, "pause");
    assert!(log.stats.unparsed_total() > 0);
    assert_eq!(
        log.stats
            .unparsed
            .get(&pausewatch_parsers::UnparsedKind::LegacyFormat),
        None
    );
}

/// JDK 8's Shenandoah backport writes `[Pause Init Mark, 1.983 ms]`: GCViewer
/// TestDataReaderSun1_8_0.shenandoah_8u332 asserts a pause sum of 0.197536 s.
#[test]
fn shenandoah_jdk8_matches_gcviewer() {
    let Some(log) = parse(&format!("{OPENJDK}SampleOpenJdk1_8_0-332.txt")) else {
        return;
    };
    assert!((sum(&log.pauses) - 0.197536).abs() < 1e-6);
    assert!(log
        .pauses
        .iter()
        .all(|p| p.collector == Collector::Shenandoah));
    assert!(!log.phases.is_empty());
    // Its pause line is written when the pause ends: `2.469: [Pause Init
    // Mark (process weakrefs), start]`, then `2.472: [... , 3.341 ms]`.
    let first = &log.pauses[0];
    assert_eq!(first.end.uptime_s, Some(2.472));
    assert!((first.start.uptime_s.unwrap() - (2.472 - 0.003341)).abs() < 1e-9);
}

/// Every JDK 6 to 8 file of the corpus (the rows its README classifies as
/// `legacy(pre-JDK9)`, 272 of them): no event is left unreadable, and every
/// file whose row counts `[GC`, `[Full GC` or `GC pause` occurrences yields
/// pauses, except two checked by hand: dataset111.txt is one line cut off
/// inside its Full GC, and dataset64.txt holds only G1's concurrent string
/// deduplication (`[GC concurrent-string-deduplication, ...]`), no pause.
#[test]
fn every_jdk8_corpus_file_is_read() {
    let Some(readme) = corpus_file("README.md") else {
        return;
    };
    let readme = std::fs::read_to_string(readme).unwrap();
    let rows: Vec<(&str, bool)> = readme
        .lines()
        .filter(|row| row.contains("| legacy(pre-JDK9) |"))
        .filter_map(|row| {
            let path = row.split('`').nth(1)?;
            let names_gc = ["fullGC=", "youngGC=", "g1pause="]
                .iter()
                .any(|key| row.contains(key));
            Some((path, names_gc))
        })
        .collect();
    assert!(rows.len() >= 270, "{} rows", rows.len());
    let mut unreadable = Vec::new();
    let mut without_pauses = Vec::new();
    for (path, names_gc) in rows {
        let Some(relative) = ["GCViewer", "garbagecat", "jifa"]
            .iter()
            .map(|project| format!("{project}/{path}"))
            .find(|relative| {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../shared/corpus")
                    .join(relative)
                    .is_file()
            })
        else {
            panic!("{path} is listed but absent");
        };
        let log = parse(&relative).unwrap();
        if log
            .stats
            .unparsed
            .contains_key(&pausewatch_parsers::UnparsedKind::LegacyFormat)
        {
            unreadable.push(relative.clone());
        }
        if names_gc && log.pauses.is_empty() {
            without_pauses.push(relative);
        }
    }
    assert!(unreadable.is_empty(), "{unreadable:?}");
    assert_eq!(
        without_pauses,
        [
            "garbagecat/src/test/resources/data/dataset111.txt",
            "garbagecat/src/test/resources/data/dataset64.txt",
        ]
    );
}
