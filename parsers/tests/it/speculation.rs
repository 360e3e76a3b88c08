//! A stream parsed in stretches read ahead (`GcLogParser::speculate`, as
//! `pausewatch analyze` does on a second thread) gives exactly the events,
//! counts and final state of a sequential parse: on every recorded JVM log
//! of the repository and Jifa's logs in the public corpus (JDK 8 to 17), split at many
//! line boundaries.

use std::path::{Path, PathBuf};

use pausewatch_parsers::{GcEvent, GcLogParser, ParseStats};

use crate::skip;

/// Events, counts and the serialised final state.
type Outcome = (Vec<GcEvent>, ParseStats, String);

fn sequential(bytes: &[u8]) -> Outcome {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    parser.feed(bytes, &mut events);
    parser.finish(&mut events);
    let state = serde_json::to_string(&parser).unwrap();
    (events, parser.stats().clone(), state)
}

/// Stretches ending at `ends`, taken in pairs: the second of each read
/// ahead from the state at the start of the first, as on two threads.
fn read_ahead(bytes: &[u8], ends: &[usize]) -> Outcome {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    // The guesses' event vector goes round, as `analyze` passes it on.
    let mut spare = Vec::new();
    let mut start = 0;
    for pair in ends.chunks(2) {
        let first = &bytes[start..pair[0]];
        let Some(&end) = pair.get(1) else {
            parser.feed(first, &mut events);
            break;
        };
        let second = &bytes[pair[0]..end];
        let mut speculation = parser.speculate(std::mem::take(&mut spare));
        speculation.read(second);
        parser.feed(first, &mut events);
        spare = parser.catch_up(second, speculation, &mut events);
        start = end;
    }
    parser.finish(&mut events);
    let state = serde_json::to_string(&parser).unwrap();
    (events, parser.stats().clone(), state)
}

/// Line ends near each `1/parts` of the log, and the log's end.
fn line_ends(bytes: &[u8], parts: usize) -> Vec<usize> {
    let mut ends: Vec<usize> = (1..parts)
        .filter_map(|part| {
            let from = bytes.len() * part / parts;
            memchr::memchr(b'\n', &bytes[from..]).map(|at| from + at + 1)
        })
        .collect();
    ends.push(bytes.len());
    ends.dedup();
    ends
}

fn check(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let expected = sequential(&bytes);
    assert!(!expected.0.is_empty(), "{}: no events", path.display());
    for parts in [2, 3, 8, 40] {
        let got = read_ahead(&bytes, &line_ends(&bytes, parts));
        assert!(
            got == expected,
            "{} in {parts} stretches: events, counts or state differ",
            path.display()
        );
    }
}

#[test]
fn every_recorded_jvm_log_reads_ahead_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/jvm");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("gc.log"))
        .filter(|log| log.is_file())
        .collect();
    logs.sort();
    assert!(
        logs.len() >= 20,
        "fixtures missing under {}",
        root.display()
    );
    for log in &logs {
        check(log);
    }
}

#[test]
fn jifa_corpus_logs_read_ahead_exactly() {
    let resources = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/jifa/analysis/gc-log/src/test/resources");
    let Some(resources) = skip::or_skip(
        resources.is_dir().then_some(resources.clone()),
        format_args!("corpus not found: {}", resources.display()),
    ) else {
        return;
    };
    // JDK 8 (CMS, G1, Parallel, Serial, spliced output), 11 and 17 logs.
    for entry in std::fs::read_dir(&resources).unwrap() {
        let log = entry.unwrap().path();
        if log.extension().is_some_and(|ext| ext == "log") {
            check(&log);
        }
    }
}
