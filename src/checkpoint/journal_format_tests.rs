//! The guard of the journal's format: a journal written from a fixed state
//! of every kind of source must be, record for record, the one committed in
//! `tests/fixtures/checkpoint-v5`, and that one must replay to the state.
//! A change of the format is a new version with a fixture of its own; this
//! one must keep loading.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use chrono::{TimeDelta, TimeZone, Utc};
use pausewatch_parsers::{AccessFormat, AccessLogParser, Request};

use super::tests::{streams, Stream};
use super::*;
use crate::checkpoint::{load, Loaded};
use crate::follow::{HeadPrint, Position};
use crate::model::runtime::{CollectorStats, MemoryPool, PauseCounters, RuntimeStats};
use crate::sources::access_log::{AccessLogCheckpoint, HeldRequest};
use crate::sources::ebpf::EbpfCheckpoint;
use crate::sources::latency_histogram::{HistogramCheckpoint, MinuteAccumulator};
use crate::sources::runtime_stats::DiscoveredCheckpoint;
use crate::store::{AccessStreamState, Discovered, PauseSource, SafepointSource};

const FIXTURE: &str = "tests/fixtures/checkpoint-v5";

/// The sources of the fixture, besides the GC streams: a discovered JVM,
/// an access log, a latency histogram and the eBPF source.
struct Others {
    jvm: Stream,
    access: AccessLogCheckpoint,
    accumulator: MinuteAccumulator,
    reached: u64,
}

impl Others {
    fn new() -> Others {
        let mut jvm = Stream::named("");
        jvm.state.labels = BTreeMap::from([("service".into(), "shop".into())]);
        jvm.state.discovered = Some(Discovered {
            user: "app".into(),
            pid: 4243,
            start_ticks: 1300,
            pause_source: PauseSource::Hsperfdata,
            safepoint_source: SafepointSource::Ebpf,
            ports: vec![8080],
            ..Discovered::default()
        });
        jvm.state.runtime = Some(RuntimeStats {
            collectors: vec![CollectorStats {
                name: "G1 young collection pauses".into(),
                invocations: 12,
                seconds: 0.25,
            }],
            safepoints: 40,
            memory: vec![MemoryPool {
                area: "heap".into(),
                id: "G1 Eden Space".into(),
                used: Some(1 << 20),
                committed: 8 << 20,
                max: None,
            }],
            gc_cause: "No GC".into(),
            cpu_seconds: Some(3.5),
            log_counter_mismatch: vec![("young".into(), 1.0)],
            ..RuntimeStats::default()
        });
        let mut parser = AccessLogParser::new(AccessFormat::Nginx, 65536).unwrap();
        parser.feed(b"not a request\nhalf a li", &mut Vec::new());
        let mut state = AccessStreamState {
            log: "/l/access.log".into(),
            target: Some("/l/0/gc.log".into()),
            stats: parser.stats().clone(),
            read_lag_bytes: 11,
            readable: true,
            unattributed_requests: 3,
            errors: BTreeMap::from([("malformed".into(), 1)]),
            ..AccessStreamState::default()
        };
        state.malformed_window.add(1, 1);
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 1, 45, 3).unwrap();
        let access = AccessLogCheckpoint {
            log: "/l/access.log".into(),
            position: None,
            parser,
            state: Arc::new(state),
            held: VecDeque::from([HeldRequest {
                read_at: at,
                request: Request {
                    start: at - TimeDelta::milliseconds(250),
                    duration_s: 0.25,
                },
            }]),
        };
        Others {
            jvm,
            access,
            accumulator: MinuteAccumulator::new(),
            reached: 17,
        }
    }

    /// One round: the JVM's pauses, a scrape, safepoints.
    fn run(&mut self, round: u32) {
        self.jvm.run(1);
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 1, 45, 7).unwrap()
            + TimeDelta::seconds(30 * i64::from(round));
        let count = f64::from(100 * round);
        self.accumulator.observe(
            at,
            vec![
                (0.1, count),
                (1.0, count + 5.0),
                (f64::INFINITY, count + 6.0),
            ],
        );
        self.reached += u64::from(round);
    }

    fn checkpoints(&self) -> Vec<SourceCheckpoint> {
        vec![
            SourceCheckpoint::Discovered(Box::new(DiscoveredCheckpoint {
                jvm: "4243@1300".into(),
                watched_minute: 1_796_003_100,
                state: Arc::new(self.jvm.state.clone()),
                counters: BTreeMap::from([(
                    "G1 young".into(),
                    PauseCounters {
                        invocations: 12,
                        seconds: 0.25,
                        last_entry: 30.5,
                        last_exit: 30.51,
                    },
                )]),
            })),
            SourceCheckpoint::AccessLog(Box::new(self.access.clone())),
            SourceCheckpoint::LatencyHistogram(HistogramCheckpoint {
                key: "http://app:9090/metrics http_server_requests_seconds".into(),
                accumulator: self.accumulator.clone(),
            }),
            SourceCheckpoint::Ebpf(EbpfCheckpoint {
                reached: BTreeMap::from([("4243@1300".into(), self.reached)]),
            }),
        ]
    }
}

/// The first GC stream as discovery finds one: read to a position, by a
/// known writer.
fn with_position(source: SourceCheckpoint) -> SourceCheckpoint {
    let SourceCheckpoint::GcLog(mut gc) = source else {
        panic!("a GC log")
    };
    gc.position = Some(Position {
        dev: 2049,
        ino: 131,
        head: HeadPrint {
            len: 4096,
            hash: 0x5eed,
        },
        offset: 81920,
        mtime: Some(UNIX_EPOCH + Duration::from_secs(1_796_003_160)),
        tail: Some(HeadPrint { len: 64, hash: 7 }),
    });
    gc.writer = Some("4242@1234".into());
    SourceCheckpoint::GcLog(gc)
}

/// Writes the fixture's checkpoints: every source in full, then rounds of
/// deltas (the later ones packed). Returns the last sources and the journal.
fn written() -> (Vec<SourceCheckpoint>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::new(dir.path());
    let mut streams = streams(6);
    let mut others = Others::new();
    let mut sources = Vec::new();
    for round in 0..5 {
        // The first stream's minutes are attributed: it read 105 s at start.
        for (number, stream) in streams.iter_mut().enumerate() {
            stream.run(match (round, number) {
                (0, 0) => 150,
                (0, _) => 4,
                _ => 2,
            });
        }
        others.run(round);
        sources = streams.iter().map(Stream::checkpoint).collect();
        let first = sources.remove(0);
        sources.insert(0, with_position(first));
        sources.extend(others.checkpoints());
        journal.write(&sources, std::iter::empty()).unwrap();
    }
    let text = std::fs::read_to_string(dir.path().join("journal.1")).unwrap();
    (sources, text)
}

/// A journal's records one a line, those of packed checkpoints inflated; a
/// checkpoint's end by its sequence alone (the checksum of a packed one is
/// the deflater's as much as the format's).
fn records(journal: &str) -> Vec<String> {
    let mut records = Vec::new();
    for line in journal.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        if let Some(packed) = value.get("packed").and_then(Value::as_str) {
            let deflated = base64::engine::general_purpose::STANDARD
                .decode(packed)
                .unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::DeflateDecoder::new(&deflated[..]),
                &mut text,
            )
            .unwrap();
            records.extend(text.lines().map(str::to_string));
        } else if let Some(sealed) = value.get("sealed") {
            records.push(format!("sealed {}", sealed["sequence"]));
        } else {
            records.push(line.to_string());
        }
    }
    records
}

/// What a source holds, its collections included.
fn figures(source: &SourceCheckpoint) -> String {
    let mut figures = format!(
        "{:?}\n{}",
        source.key(),
        serde_json::to_string(&SourceV5::from(source)).unwrap()
    );
    if let Some((_, state)) = source.stream() {
        figures += &format!("\n{:?}", state.jvm.minutes.iter().collect::<Vec<_>>());
        if let Some(latency) = &state.latency {
            figures += &format!(
                "\n{:?}\n{:?}\n{:?}",
                latency.minutes,
                latency.pending(),
                latency.stops.iter().collect::<Vec<_>>()
            );
        }
    }
    figures
}

#[test]
fn the_journal_is_written_as_the_committed_version_5_fixture() {
    assert_eq!(VERSION, 5, "a new version needs a fixture of its own");
    let (_, text) = written();
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(FIXTURE)
            .join("journal.1"),
    )
    .unwrap();
    let (written, expected) = (records(&text), records(&fixture));
    assert!(
        text.contains(r#"{"packed":"#) && written.iter().any(|r| r.starts_with(r#"{"delta":"#))
    );
    for (number, (written, expected)) in written.iter().zip(&expected).enumerate() {
        assert_eq!(
            written, expected,
            "record {number} differs from the fixture's"
        );
    }
    assert_eq!(written.len(), expected.len());
}

#[test]
fn the_committed_version_5_fixture_replays_to_the_state_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    for name in [FILE_NAME, "journal.1"] {
        std::fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
    }
    let Loaded { sources, .. } = load(dir.path()).unwrap().unwrap();
    let (expected, _) = written();
    assert_eq!(sources.len(), expected.len());
    for source in &sources {
        let same = expected.iter().find(|e| e.key() == source.key()).unwrap();
        assert_eq!(figures(source), figures(same));
    }
}
