//! Parse throughput on one core over a large real GC log, and over Go
//! `gctrace` output (`cargo bench -p pausewatch-parsers --bench throughput -- gctrace`).
//!
//! `parsers/benches/run.sh` records the log (a JDK 17 G1 run at `gc*=debug`)
//! and times `wc -l` on the same file for comparison. Without that log the
//! committed fixture logs are used, joined.

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

criterion_group!(benches, parse, gctrace);
criterion_main!(benches);
