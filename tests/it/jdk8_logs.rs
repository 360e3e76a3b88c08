//! `pausewatch analyze` and `pausewatch run` on JDK 6 to 8 logs from the
//! public corpus, with no option saying which format they are in; the
//! figures are the ones GCViewer's and Jifa's own tests assert for the same
//! files.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common;

/// `analyze --format json ARGS FILE` on `relative` of the public corpus, or
/// `None` after skipping when the corpus is missing.
fn analyze_corpus(relative: &str, args: &[&str]) -> Option<Value> {
    let file = common::corpus_file(relative)?;
    let args = args.iter().map(|a| a.as_ref()).chain([file.as_os_str()]);
    Some(common::analyze_json(args))
}

/// GCViewer TestDataReaderSun1_6_0G1.testG1GcVerbose: pause sum 62.616796 s,
/// longest 0.1581177 s; 2978 pauses by grep (2478 `GC pause`, 250 `GC
/// remark`, 245 `GC cleanup`, 5 `Full GC`). The log has uptime only, so
/// `--jvm-start` places its pauses in minutes.
#[test]
fn analyze_reads_a_jdk6_g1_log_as_gcviewer_does() {
    let Some(report) = analyze_corpus(
        "GCViewer/src/test/resources/openjdk/SampleSun1_6_0G1_gc_verbose.txt",
        &["--jvm-start", "2026-01-01T00:00:00Z"],
    ) else {
        return;
    };
    let pauses = &report["pauses"];
    assert_eq!(pauses["count"], 2978);
    assert!((pauses["total_seconds"].as_f64().unwrap() - 62.616796).abs() < 1e-6);
    assert_eq!(pauses["max_seconds"].as_f64(), Some(0.1581177));
    assert_eq!(report["collector"], "g1");
    assert_eq!(report["markers"]["full_gcs"], 5);
    assert_eq!(report["unparsed_lines"], 0);
    assert_eq!(report["warnings"].as_array().unwrap().len(), 0, "{report}");
    // 119.9 s of uptime: the pauses fall in the first two minutes.
    let minutes = report["minutes"].as_array().unwrap();
    let placed = common::minutes_pause_count(&report["minutes"]);
    assert_eq!(placed, 2978);
    assert_eq!(minutes[0]["start"], "2026-01-01T00:00:00Z");
}

/// Jifa TestParser.testJDK8ParallelGCParser: 6 events, the longest of them
/// (by reading the log) the `Full GC (Ergonomics)` of 1.3724621 s, 3 of
/// them full; the pauses sum to 2.2366226 s (by hand, adding the six
/// `secs]` figures). The file has uptime only and no header.
#[test]
fn analyze_reads_a_jdk8_parallel_log() {
    let Some(report) = analyze_corpus(
        "jifa/analysis/gc-log/src/test/resources/8ParallelGCParser.log",
        &[],
    ) else {
        return;
    };
    let pauses = &report["pauses"];
    assert_eq!(pauses["count"], 6);
    assert_eq!(pauses["max_seconds"].as_f64(), Some(1.3724621));
    assert!((pauses["total_seconds"].as_f64().unwrap() - 2.2366226).abs() < 1e-9);
    assert_eq!(report["markers"]["full_gcs"], 3);
    assert_eq!(report["collector"], "parallel");
    assert_eq!(report["unparsed_lines"], 0);
}

/// A CMS log with date stamps (GCViewer TestDataReaderSun1_8_0.cmsPrintGCID:
/// 10 pauses among its 18 events, see parsers/tests/it/legacy_corpus.rs) is
/// placed in its own wall-clock minute and names its JDK from the header.
#[test]
fn analyze_places_a_date_stamped_cms_log_in_minutes() {
    let Some(report) = analyze_corpus(
        "GCViewer/src/test/resources/openjdk/SampleSun1_8_0CmsPrintGcId.txt",
        &[],
    ) else {
        return;
    };
    assert_eq!(report["pauses"]["count"], 10);
    assert_eq!(report["pauses"]["max_seconds"].as_f64(), Some(0.0106548));
    assert_eq!(report["collector"], "cms");
    assert_eq!(report["jdk_version"], "1.8.0_342-b07");
    let minutes = report["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 1);
    assert_eq!(minutes[0]["start"], "2022-08-01T17:16:00Z");
    assert_eq!(minutes[0]["pause_count"], 10);
}

/// The agent follows a JDK 8 log that `pausewatch replay` writes live (CMS
/// with date stamps and `-XX:+PrintGCID`): `/metrics` counts its 10 pauses
/// (GCViewer TestDataReaderSun1_8_0.cmsPrintGCID, see
/// parsers/tests/it/legacy_corpus.rs), the 8 young ones under Micrometer's
/// `gc="ParNew"`, for 0.0557297 s in all (the ten `secs]` figures added by
/// hand), and reads no line as unreadable.
#[test]
fn the_agent_follows_a_jdk8_log_written_live() {
    let Some(source) =
        common::corpus_file("GCViewer/src/test/resources/openjdk/SampleSun1_8_0CmsPrintGcId.txt")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("gc.log");
    let port = common::free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n[[gc_log]]\npath = {}\n",
        common::toml_string(&dir.path().join("state")),
        common::toml_string(&live),
    );
    let agent = common::Agent::start(dir.path(), port, &config);
    agent.metrics_when(Duration::from_secs(30), |m| m.ends_with("# EOF\n"));
    let status = common::replay_command(&source, &live, &["--lines-per-second", "200"])
        .status()
        .unwrap();
    assert!(status.success());
    let metrics = agent.metrics_when(Duration::from_secs(30), |m| {
        common::sum(m, "jvm_gc_pause_seconds_count", &[]) >= 10.0
    });
    assert_eq!(
        common::sum(&metrics, "jvm_gc_pause_seconds_count", &[]),
        10.0
    );
    assert_eq!(
        common::sum(&metrics, "jvm_gc_pause_seconds_count", &["gc=\"ParNew\""]),
        8.0
    );
    let total = common::sum(&metrics, "jvm_gc_pause_seconds_sum", &[]);
    assert!((total - 0.0557297).abs() < 1e-9, "{total}");
    assert_eq!(
        common::sum(
            &metrics,
            "pausewatch_log_unparsed_lines_total",
            &["kind=\"legacy_format\""]
        ),
        0.0,
        "{metrics}"
    );
}

/// A JDK 8 rotation set given out of order is put in time order by its
/// date stamps, as GCViewer's GcSeriesLoaderTest.merge_FilesInWrongOrder
/// merges it: one run, no restart. By hand: 74 + 93 + 93 `[GC (` events in
/// parts 1 to 3, 3 of part 1's being CMS remarks holding a young collection,
/// so 263 pauses.
#[test]
fn analyze_orders_a_jdk8_rotation_set() {
    let parts: Option<Vec<PathBuf>> = [3, 1, 2]
        .iter()
        .map(|n| {
            common::corpus_file(&format!(
                "GCViewer/src/test/resources/openjdk/SampleSun1_8_0Series-Part{n}.txt"
            ))
        })
        .collect();
    let Some(parts) = parts else {
        return;
    };
    let output = Command::new(common::PAUSEWATCH)
        .args(["analyze", "--format", "json"])
        .args(&parts)
        .output()
        .unwrap();
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "SampleSun1_8_0Series-Part1.txt",
            "SampleSun1_8_0Series-Part2.txt",
            "SampleSun1_8_0Series-Part3.txt"
        ]
    );
    assert_eq!(report["pauses"]["count"], 263);
    assert_eq!(report["jvm_restarts"], 0);
    assert_eq!(report["unparsed_lines"], 0);
}
