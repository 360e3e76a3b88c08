//! Every file of the public corpus (../shared/corpus) parses without a panic;
//! a dozen unified logs have their pause counts checked by hand.

use std::path::{Path, PathBuf};

use pausewatch::commands::analyze::parse_files;
use pausewatch_parsers::{Collector, GcEvent};

use crate::common;

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

#[test]
fn every_corpus_file_parses_without_panic() {
    let Some(root) = common::corpus_dir("") else {
        return;
    };
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(
        files.len() > 400,
        "corpus looks truncated: {} files",
        files.len()
    );
    let mut unified_files = 0;
    for file in &files {
        let (events, parser) = parse_files(std::slice::from_ref(file), None).unwrap();
        let pauses = events
            .iter()
            .filter(|e| matches!(e, GcEvent::Pause(_)))
            .count();
        let stats = parser.stats();
        if pauses > 0 {
            unified_files += 1;
        }
        println!(
            "{:>6} pauses {:>7} lines {:>7} unparsed  {}",
            pauses,
            stats.lines,
            stats.unparsed_total(),
            file.strip_prefix(&root).unwrap().display()
        );
    }
    assert!(
        unified_files >= 100,
        "only {unified_files} files yielded pauses"
    );
}

/// (file, collector, pauses, full GCs, evacuation failures, degenerated GCs,
/// lines that are not GC logging), counted by reading each file. The 150 lines
/// of SampleShenandoahSeveralSystemGC are exception traces the JVM interleaved.
const HAND_CHECKED: &[(&str, Collector, usize, usize, usize, usize, u64)] = &[
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/sample-ujl-jdk17-full-concurrent-cycle-g1-gc-all-safepont,os-cpu.txt", Collector::G1, 9, 0, 0, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/sample-ujl-g1-gc-all,safepoint,os+cpu-to-space-exhausted.txt", Collector::G1, 1, 0, 1, 0, 0),
    ("garbagecat/src/test/resources/data/dataset182.txt", Collector::G1, 7, 0, 0, 0, 0),
    ("jifa/analysis/gc-log/src/test/resources/11G1PrintGC.log", Collector::G1, 9, 0, 5, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/sample-ujl-parallel-gc-all,safepoint,os+cpu.txt", Collector::Parallel, 8, 4, 0, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/sample-ujl-serial-gc-all,safepoint,os+cpu.txt", Collector::Serial, 4, 1, 0, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/sample-ujl-cms-gc-all,safepoint,os+cpu.txt", Collector::Cms, 12, 2, 0, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/Sample-ujl-shenandoah-jdk17.txt", Collector::Shenandoah, 4, 0, 0, 0, 0),
    ("GCViewer/src/test/resources/openjdk/unified-jvm-logging/SampleShenandoahSeveralSystemGC.txt", Collector::Shenandoah, 438, 438, 0, 0, 150),
    ("garbagecat/src/test/resources/data/dataset285.txt", Collector::Shenandoah, 1, 0, 0, 1, 0),
    ("garbagecat/src/test/resources/data/dataset243.txt", Collector::Z, 153, 0, 0, 0, 0),
    ("garbagecat/src/test/resources/data/dataset271.txt", Collector::ZGenerational, 5, 0, 0, 0, 0),
    ("garbagecat/src/test/resources/data/dataset278.txt", Collector::ZGenerational, 3, 0, 0, 0, 0),
];

#[test]
fn hand_checked_pause_counts() {
    let Some(root) = common::corpus_dir("") else {
        return;
    };
    for (file, collector, count, full, evacuation_failures, degenerated, unparsed) in HAND_CHECKED {
        let (events, parser) = parse_files(&[root.join(file)], None).unwrap();
        let pauses: Vec<_> = events.iter().filter_map(GcEvent::as_pause).collect();
        assert_eq!(pauses.len(), *count, "pauses in {file}");
        assert!(
            pauses.iter().all(|p| p.collector == *collector),
            "collector in {file}"
        );
        assert_eq!(
            pauses.iter().filter(|p| p.full).count(),
            *full,
            "full GCs in {file}"
        );
        assert_eq!(
            pauses.iter().filter(|p| p.evacuation_failure).count(),
            *evacuation_failures,
            "evacuation failures in {file}"
        );
        assert_eq!(
            pauses.iter().filter(|p| p.degenerated).count(),
            *degenerated,
            "degenerated GCs in {file}"
        );
        assert_eq!(
            parser.stats().unparsed_total(),
            *unparsed,
            "unparsed lines in {file}"
        );
    }
}
