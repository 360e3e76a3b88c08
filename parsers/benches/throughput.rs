//! Parse throughput on one core over a large real GC log.
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

fn parse(c: &mut Criterion) {
    let (path, bytes) = bench_log();
    let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
    eprintln!(
        "bench log: {} ({} bytes, {} lines)",
        path.display(),
        bytes.len(),
        lines
    );
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes", |b| b.iter(|| parse_all(&bytes)));
    group.throughput(Throughput::Elements(lines));
    group.bench_function("lines", |b| b.iter(|| parse_all(&bytes)));
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
