//! The parser's pause counts and times against the JVM's own
//! `GarbageCollectorMXBean` figures, for logs real JVMs wrote
//! (tests/fixtures/jvm, made by tests/fixtures/generate.sh).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::{gc_log_files, MxBeans};
use pausewatch::commands::analyze::parse_files;
use pausewatch::model::mxbean::{bean_name, jdk_major};
use pausewatch::sources::gc_log::oldest_first;
use pausewatch_parsers::GcEvent;

use crate::common;

/// Beans that count cycles, not pauses: their counts are not compared.
fn counts_pauses(bean: &str) -> bool {
    !bean.ends_with("Cycles")
}

fn fixture_dirs() -> Vec<PathBuf> {
    let root = common::root().join("tests/fixtures/jvm");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("mxbeans.json").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn pause_counts_and_times_match_the_jvms_mxbeans() {
    let dirs = fixture_dirs();
    assert!(
        dirs.len() >= 20,
        "expected the committed JVM fixtures, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let snapshot = MxBeans::read(&dir.join("mxbeans.json"));
        let files = oldest_first(gc_log_files(dir));
        let (events, parser) = parse_files(&files, None).unwrap();
        let major = jdk_major(&snapshot.java_version);
        let mut by_bean: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
        for event in &events {
            if let GcEvent::Pause(pause) = event {
                if let Some(bean) = bean_name(pause, major) {
                    let entry = by_bean.entry(bean).or_default();
                    entry.0 += 1;
                    entry.1 += pause.duration_s;
                }
            }
        }
        println!(
            "{name}: {} lines, {} unparsed",
            parser.stats().lines,
            parser.stats().unparsed_total()
        );
        for bean in snapshot
            .collectors
            .iter()
            .filter(|b| counts_pauses(&b.name))
        {
            let (count, seconds) = by_bean.remove(bean.name.as_str()).unwrap_or_default();
            let log_ms = seconds * 1000.0;
            // The bean truncates its total to whole milliseconds and times a
            // span inside the log's (docs/validation.md, tests/it/zgc_pause_time.rs).
            let tolerance_ms = (log_ms * 0.01).max(count as f64);
            println!(
                "  {:<22} jvm {:>5} pauses {:>9} ms | log {:>5} pauses {:>11.3} ms",
                bean.name, bean.count, bean.time_ms, count, log_ms
            );
            if count != bean.count {
                failures.push(format!(
                    "{name}: {} count jvm {} log {count}",
                    bean.name, bean.count
                ));
            }
            if (log_ms - bean.time_ms as f64).abs() > tolerance_ms {
                failures.push(format!(
                    "{name}: {} time jvm {} ms log {log_ms:.3} ms",
                    bean.name, bean.time_ms
                ));
            }
        }
        for (bean, (count, _)) in by_bean {
            failures.push(format!(
                "{name}: {count} pauses attributed to {bean}, which the JVM does not have"
            ));
        }
        if parser.stats().unparsed_total() != 0 {
            failures.push(format!(
                "{name}: {} unparsed lines",
                parser.stats().unparsed_total()
            ));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}
