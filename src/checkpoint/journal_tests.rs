//! The journal's unit tests, apart so that `journal.rs` stays readable.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use pausewatch_parsers::GcLogParser;

use super::*;
use crate::checkpoint::tests::gc_figures;
use crate::checkpoint::{load, Loaded};
use crate::model::latency::{CorrelationSettings, LatencyState};
use crate::sources::gc_log::GcLogCheckpoint;
use crate::store::StreamState;

/// A GC stream whose service's requests are lined up with its pauses,
/// fed as the agent feeds it.
pub(super) struct Stream {
    pub(super) parser: GcLogParser,
    pub(super) state: StreamState,
    gc: u32,
}

impl Stream {
    fn new() -> Stream {
        Stream::named("/l/gc.log")
    }

    pub(super) fn named(log: &str) -> Stream {
        Stream {
            parser: GcLogParser::default(),
            state: StreamState {
                log: log.into(),
                latency: Some(LatencyState::default()),
                ..StreamState::default()
            },
            gc: 0,
        }
    }

    fn resumed(source: SourceCheckpoint) -> Stream {
        let SourceCheckpoint::GcLog(gc) = source else {
            panic!("a GC log")
        };
        let gc = *gc;
        Stream {
            gc: gc
                .state
                .jvm
                .pauses
                .iter()
                .map(|s| s.histogram.count as u32)
                .sum(),
            parser: gc.parser,
            state: Arc::unwrap_or_clone(gc.state),
        }
    }

    fn at(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 1, 45, 0).unwrap()
            + TimeDelta::milliseconds(700 * i64::from(self.gc))
    }

    /// `pauses` pauses 700 ms apart (12 ms each), 20 requests around
    /// each (one inside the pause), then the minutes due attributed.
    pub(super) fn run(&mut self, pauses: u32) {
        let mut events = Vec::new();
        for _ in 0..pauses {
            let at = self.at();
            let stamp = at.format("%Y-%m-%dT%H:%M:%S%.3f+0000");
            let text = format!(
                "[{stamp}][1.000s][info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 12.000ms\n\
                 [{stamp}][1.000s][info][gc,cpu] GC({gc}) User=0.01s Sys=0.00s Real=0.01s\n",
                gc = self.gc
            );
            self.parser.feed(text.as_bytes(), &mut events);
            let latency = self.state.latency.as_mut().unwrap();
            for i in 0..20 {
                latency.add_request(RequestTiming {
                    start: at - TimeDelta::milliseconds(40 * i + 7),
                    duration_s: f64::from(i as u32 % 9 + 1) / 1000.0 * 3.0,
                });
            }
            self.gc += 1;
        }
        let now = self.at();
        let StreamState { jvm, latency, .. } = &mut self.state;
        jvm.ingest(self.parser.run(), &events, latency.as_mut());
        let minutes = jvm.minutes.clone();
        latency
            .as_mut()
            .unwrap()
            .finalize(now, &CorrelationSettings::default(), &minutes);
    }

    /// Ten more pauses, then a checkpoint.
    fn step(&mut self, journal: &mut Journal) {
        self.run(10);
        journal
            .write(&[self.checkpoint()], std::iter::empty())
            .unwrap();
    }

    pub(super) fn checkpoint(&self) -> SourceCheckpoint {
        SourceCheckpoint::GcLog(Box::new(GcLogCheckpoint {
            log: self.state.log.clone(),
            position: None,
            parser: self.parser.clone(),
            state: Arc::new(self.state.clone()),
            writer: None,
        }))
    }
}

/// `count` streams of logs of their own.
pub(super) fn streams(count: usize) -> Vec<Stream> {
    (0..count)
        .map(|i| Stream::named(&format!("/l/{i}/gc.log")))
        .collect()
}

fn checkpoints(streams: &[Stream]) -> Vec<SourceCheckpoint> {
    streams.iter().map(Stream::checkpoint).collect()
}

fn journal_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("journal.1")).unwrap().len()
}

#[test]
fn appended_checkpoints_replay_to_the_state_they_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut stream = Stream::new();
    let mut lens = Vec::new();
    // Fourteen minutes: minutes attributed, stops pruned.
    for _ in 0..120 {
        stream.step(&mut journal);
        lens.push(journal_len(dir.path()));
    }
    let latency = stream.state.latency.as_ref().unwrap();
    assert!(latency.minutes.len() >= 2 && !latency.pending().is_empty());
    assert!(latency.stops.iter().count() < 1000, "stops were pruned");
    // One journal, appended to; each append far smaller than a snapshot.
    let mut snapshot = Vec::new();
    full(&mut snapshot, &stream.checkpoint()).unwrap();
    let appended = lens.windows(2).map(|l| l[1] - l[0]).max().unwrap();
    assert!(appended * 5 < snapshot.len() as u64, "{lens:?}");
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    assert_eq!(gc_figures(&sources[0]), gc_figures(&stream.checkpoint()));
    // Nothing changed: nothing written.
    let before = journal_len(dir.path());
    journal
        .write(&[stream.checkpoint()], std::iter::empty())
        .unwrap();
    assert_eq!(journal_len(dir.path()), before);
    // And the checkpoint after it is still a delta.
    stream.step(&mut journal);
    let text = std::fs::read_to_string(dir.path().join("journal.1")).unwrap();
    let records: Vec<Record> = text[before as usize..]
        .lines()
        .flat_map(|line| match serde_json::from_str(line).unwrap() {
            Record::Packed(packed) => unpack(&packed).unwrap(),
            record => vec![record],
        })
        .collect();
    assert!(records.iter().any(|r| matches!(r, Record::Delta(..))));
    assert!(!records
        .iter()
        .any(|r| matches!(r, Record::Source(_) | Record::Fresh(_))));
}

#[test]
fn a_torn_tail_is_ignored_and_cut_before_appending_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut stream = Stream::new();
    for _ in 0..5 {
        stream.step(&mut journal);
    }
    let committed = gc_figures(&stream.checkpoint());
    let committed_len = journal_len(dir.path());
    stream.step(&mut journal);
    let full_len = journal_len(dir.path());
    // A crash mid-write: half of the last checkpoint's records on disk,
    // or all of them but the end of the commit line.
    for torn in [committed_len + (full_len - committed_len) / 2, full_len - 2] {
        let file = OpenOptions::new()
            .write(true)
            .open(dir.path().join("journal.1"))
            .unwrap();
        file.set_len(torn).unwrap();
        let Loaded { sources, journal } = load(dir.path()).unwrap().unwrap();
        assert_eq!(gc_figures(&sources[0]), committed, "torn at {torn}");
        assert_eq!(journal_len(dir.path()), committed_len, "the tail is cut");
        drop(journal);
    }
    // The restarted agent appends after the last commit, and that replays.
    let Loaded {
        mut sources,
        mut journal,
    } = load(dir.path()).unwrap().unwrap();
    let mut resumed = Stream::resumed(sources.pop().unwrap());
    for _ in 0..3 {
        resumed.step(&mut journal);
    }
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    assert_eq!(gc_figures(&sources[0]), gc_figures(&resumed.checkpoint()));
}

/// A journal of six checkpoints: the figures and length after the
/// fifth, and the whole file.
fn six_checkpoints(dir: &Path) -> (String, u64, Vec<u8>) {
    let mut journal = Journal::new(dir);
    let mut stream = Stream::new();
    for _ in 0..5 {
        stream.step(&mut journal);
    }
    let committed = (gc_figures(&stream.checkpoint()), journal_len(dir));
    stream.step(&mut journal);
    let bytes = std::fs::read(dir.join("journal.1")).unwrap();
    (committed.0, committed.1, bytes)
}

#[test]
fn a_changed_byte_in_the_last_checkpoint_replays_up_to_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let (committed, committed_len, bytes) = six_checkpoints(dir.path());
    let last = &bytes[committed_len as usize..];
    // A letter of a record's text (a time's zone in a delta), and a digit
    // of a figure changed so that the line still parses: both found by
    // the checksum.
    let letter = committed_len as usize + last.iter().position(|b| *b == b'Z').unwrap();
    let digit =
        committed_len as usize + last.iter().position(|b| (b'1'..=b'8').contains(b)).unwrap();
    for (at, to) in [(letter, b'Y'), (digit, bytes[digit] + 1)] {
        let mut damaged = bytes.clone();
        damaged[at] = to;
        std::fs::write(dir.path().join("journal.1"), &damaged).unwrap();
        let Loaded { sources, journal } = load(dir.path()).unwrap().unwrap();
        assert_eq!(gc_figures(&sources[0]), committed, "changed at {at}");
        assert_eq!(
            journal_len(dir.path()),
            committed_len,
            "cut at the last good commit"
        );
        let kept = std::fs::read(dir.path().join("journal.1.damaged")).unwrap();
        assert_eq!(
            kept,
            damaged[committed_len as usize..],
            "the cut bytes are kept"
        );
        drop(journal);
    }
}

#[test]
fn a_version_3_journal_without_checksums_replays_and_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, bytes) = six_checkpoints(dir.path());
    let sealed = load(dir.path()).unwrap().unwrap().sources;
    // The same records, each checkpoint closed as version 3 closed it.
    let text = String::from_utf8(bytes).unwrap();
    let v3: String = text
        .lines()
        .map(|line| match serde_json::from_str(line).unwrap() {
            Record::Sealed { sequence, .. } => format!("{{\"commit\":{sequence}}}\n"),
            _ => format!("{line}\n"),
        })
        .collect();
    assert_eq!(v3.matches(r#"{"commit":"#).count(), 6);
    std::fs::write(dir.path().join("journal.1"), v3).unwrap();
    std::fs::write(
        dir.path().join(FILE_NAME),
        r#"{"version":3,"journal":"journal.1"}"#,
    )
    .unwrap();
    let Loaded {
        sources,
        mut journal,
    } = load(dir.path()).unwrap().unwrap();
    assert_eq!(gc_figures(&sources[0]), gc_figures(&sealed[0]));
    // The first checkpoint moves it to a journal with checksums.
    journal.write(&sources, std::iter::empty()).unwrap();
    assert_eq!(journals_in(dir.path()), [2]);
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(dir.path().join(FILE_NAME)).unwrap()).unwrap();
    assert_eq!(manifest.version, VERSION);
    let again = load(dir.path()).unwrap().unwrap().sources;
    assert_eq!(gc_figures(&again[0]), gc_figures(&sealed[0]));
}

#[test]
fn a_grown_journal_is_compacted_into_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut stream = Stream::new();
    stream.run(1);
    journal
        .write(&[stream.checkpoint()], std::iter::empty())
        .unwrap();
    journal.open.as_mut().unwrap().len = COMPACT_FROM + 1;
    stream.run(1);
    journal
        .write(&[stream.checkpoint()], std::iter::empty())
        .unwrap();
    assert_eq!(journals_in(dir.path()), [2], "the old journal is gone");
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    assert_eq!(gc_figures(&sources[0]), gc_figures(&stream.checkpoint()));
}

/// Streams that all read a lot since the last checkpoint (a day of
/// history each, read at start-up) go to a new journal written a source at
/// a time, rather than appending one checkpoint that holds all of them.
#[test]
fn a_checkpoint_larger_than_a_journal_is_written_as_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut streams = streams(3);
    journal
        .write(&checkpoints(&streams), std::iter::empty())
        .unwrap();
    let mut one = Vec::new();
    for stream in &mut streams {
        stream.run(300);
    }
    full(&mut one, &streams[0].checkpoint()).unwrap();
    journal.append_max = one.len() as u64 * 3 / 2;
    journal
        .write(&checkpoints(&streams), std::iter::empty())
        .unwrap();
    assert_eq!(
        journals_in(dir.path()),
        [2],
        "a new journal, the old one gone"
    );
    // It is appended to from then on.
    streams[1].run(1);
    journal
        .write(&checkpoints(&streams), std::iter::empty())
        .unwrap();
    assert_eq!(journals_in(dir.path()), [2]);
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    for (loaded, stream) in sources.iter().zip(&streams) {
        assert_eq!(gc_figures(loaded), gc_figures(&stream.checkpoint()));
    }
}

#[test]
fn many_streams_are_written_as_deltas_packed_and_replay_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut streams = streams(40);
    let mut appended = Vec::new();
    for _ in 0..8 {
        for stream in &mut streams {
            stream.run(3);
        }
        let before = std::fs::metadata(dir.path().join("journal.1")).map_or(0, |m| m.len());
        journal
            .write(&checkpoints(&streams), std::iter::empty())
            .unwrap();
        appended.push(journal_len(dir.path()) - before);
    }
    let text = std::fs::read_to_string(dir.path().join("journal.1")).unwrap();
    assert_eq!(
        text.matches(r#"{"packed":"#).count(),
        7,
        "every checkpoint after the first"
    );
    // Three pauses of forty streams: a small part of their records.
    let mut snapshot = Vec::new();
    for checkpoint in checkpoints(&streams) {
        full(&mut snapshot, &checkpoint).unwrap();
    }
    assert!(
        appended[1..].iter().all(|a| a * 10 < snapshot.len() as u64),
        "{appended:?} against a snapshot of {}",
        snapshot.len()
    );
    let Loaded {
        sources,
        mut journal,
    } = load(dir.path()).unwrap().unwrap();
    let expected = checkpoints(&streams);
    assert_eq!(sources.len(), expected.len());
    for source in &sources {
        let same = expected.iter().find(|e| e.key() == source.key()).unwrap();
        assert_eq!(gc_figures(source), gc_figures(same));
    }
    // Appended to after the restart, numbered as before it.
    let mut resumed: Vec<Stream> = sources.into_iter().map(Stream::resumed).collect();
    for _ in 0..2 {
        for stream in &mut resumed {
            stream.run(2);
        }
        journal
            .write(&checkpoints(&resumed), std::iter::empty())
            .unwrap();
    }
    let again = load(dir.path()).unwrap().unwrap().sources;
    for (source, stream) in again.iter().zip(&resumed) {
        assert_eq!(gc_figures(source), gc_figures(&stream.checkpoint()));
    }
}

/// A discovered JVM's own stream is journaled as a GC log's is, its
/// collections filed apart from a log's though both stream states match.
#[test]
fn a_discovered_jvms_stream_replays_beside_a_gc_logs() {
    use crate::sources::runtime_stats::DiscoveredCheckpoint;
    let discovered = |stream: &Stream| {
        SourceCheckpoint::Discovered(Box::new(DiscoveredCheckpoint {
            jvm: "4242@1234".into(),
            watched_minute: 60,
            state: Arc::new(stream.state.clone()),
            counters: Default::default(),
        }))
    };
    let figures = |source: &SourceCheckpoint| {
        let (name, state) = source.stream().unwrap();
        let latency = state.latency.as_ref().unwrap();
        format!(
            "{name}\n{}\n{:?}\n{:?}\n{:?}\n{:?}",
            serde_json::to_string(&SourceV5::from(source)).unwrap(),
            state.jvm.minutes.iter().collect::<Vec<_>>(),
            latency.minutes,
            latency.pending(),
            latency.stops.iter().collect::<Vec<_>>(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let (mut log, mut jvm) = (Stream::new(), Stream::named(""));
    for round in 0..30 {
        log.run(10);
        jvm.run(if round % 3 == 0 { 0 } else { 7 });
        let sources = [log.checkpoint(), discovered(&jvm)];
        journal.write(&sources, std::iter::empty()).unwrap();
    }
    assert!(jvm.state.jvm.minutes.iter().count() >= 2);
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    let replayed = |key: &SourceKey| sources.iter().find(|s| s.key() == *key).unwrap();
    let key = SourceKey::RuntimeStats("4242@1234".into());
    assert_eq!(figures(replayed(&key)), figures(&discovered(&jvm)));
    assert_eq!(
        gc_figures(replayed(&SourceKey::GcLog("/l/gc.log".into()))),
        gc_figures(&log.checkpoint())
    );
}
