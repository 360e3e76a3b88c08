//! Parse throughput on one core over a large real GC log, and over Go
//! `gctrace` output (`cargo bench -p pausewatch-parsers --bench throughput -- gctrace`).
//!
//! `parsers/benches/run.sh` records the log (a JDK 17 G1 run at `gc*=debug`)
//! and times `wc -l` on the same file for comparison. Without that log the
//! committed fixture logs are used, joined.
//!
//! `parse_jdk8` times the JDK 6 to 8 format on real logs of each collector
//! from the public corpus (`../shared/corpus`), joined and repeated to about
//! 6 MB; it is left out, saying so, when the corpus is absent.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pausewatch_parsers::GcLogParser;

fn bench_log() -> (PathBuf, Vec<u8>) {
    if let Ok(path) = std::env::var("PAUSEWATCH_BENCH_LOG") {
        let path = PathBuf::from(path);
        let bytes = std::fs::read(&path).expect("PAUSEWATCH_BENCH_LOG is readable");
        return (path, bytes);
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/jvm");
    let mut dirs: Vec<_> = std::fs::read_dir(&fixtures)
        .expect("fixtures present")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut bytes = Vec::new();
    for dir in dirs {
        if let Ok(log) = std::fs::read(dir.join("gc.log")) {
            bytes.extend_from_slice(&log);
        }
    }
    (fixtures, bytes)
}

/// JDK 6 to 8 logs of every collector and detail level, by size: CMS with
/// concurrent mode failures, JDK 6 G1, a JDK 8 CMS series with date stamps,
/// JDK 8 G1 details with PrintGCID, Parallel and Serial.
const JDK8_LOGS: &[&str] = &[
    "GCViewer/src/test/resources/openjdk/SampleSun1_5_0ConcurrentModeFailure.txt",
    "GCViewer/src/test/resources/openjdk/SampleSun1_6_0G1_gc_verbose.txt",
    "GCViewer/src/test/resources/openjdk/SampleSun1_8_0Series-ManuallyMerged.txt",
    "GCViewer/src/test/resources/openjdk/SampleSun1_8_0G1PrintGCID.txt",
    "jifa/analysis/gc-log/src/test/resources/8G1LogConcurrencyProblem.log",
    "jifa/analysis/gc-log/src/test/resources/8ParallelGCParser.log",
    "jifa/analysis/gc-log/src/test/resources/8SerialGCParser.log",
];

fn jdk8_log() -> Option<Vec<u8>> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    let mut once = Vec::new();
    for log in JDK8_LOGS {
        once.extend_from_slice(&std::fs::read(corpus.join(log)).ok()?);
    }
    Some(once.repeat((6 << 20) / once.len() + 1))
}

/// Parses the whole log in 64 KiB reads, as `analyze` does.
fn parse_all(bytes: &[u8]) -> usize {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    for chunk in bytes.chunks(64 * 1024) {
        parser.feed(chunk, &mut events);
    }
    parser.finish(&mut events);
    events.len()
}

/// Bytes per second and lines per second of `parse_all` over `bytes`.
fn measure(c: &mut Criterion, group: &str, bytes: &[u8]) {
    let lines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    eprintln!("{group}: {} bytes, {} lines", bytes.len(), lines);
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes", |b| b.iter(|| parse_all(bytes)));
    group.throughput(Throughput::Elements(lines));
    group.bench_function("lines", |b| b.iter(|| parse_all(bytes)));
    group.finish();
}

fn parse(c: &mut Criterion) {
    let (path, bytes) = bench_log();
    eprintln!("bench log: {}", path.display());
    measure(c, "parse", &bytes);
}

/// Go `gctrace` output: the committed trace of a real Go program
/// (tests/fixtures/go) repeated to about 32 MiB; every line is a cycle.
fn gctrace(c: &mut Criterion) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/go/go1.19-alloc/gctrace.log");
    let one = std::fs::read(&path).expect("the Go fixture is present");
    let bytes = one.repeat((32 << 20) / one.len() + 1);
    measure(c, "gctrace", &bytes);
}

/// JDK 6 to 8 logs from the public corpus, see [`JDK8_LOGS`].
fn parse_jdk8(c: &mut Criterion) {
    let Some(bytes) = jdk8_log() else {
        eprintln!("SKIPPED parse_jdk8: the public corpus (../shared/corpus) is absent");
        return;
    };
    measure(c, "parse_jdk8", &bytes);
}

criterion_group!(benches, parse, gctrace, parse_jdk8);
criterion_main!(benches);
