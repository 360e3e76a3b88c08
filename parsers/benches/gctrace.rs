//! Parse throughput of Go `gctrace` output on one core: the committed trace
//! of a real Go program (tests/fixtures/go), repeated to about 32 MiB, read
//! through `GcLogParser` in 64 KiB chunks as `analyze` reads.
//!
//! `cargo bench -p pausewatch-parsers --bench gctrace`

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pausewatch_parsers::GcLogParser;

const TARGET_BYTES: usize = 32 << 20;

fn trace() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/go/go1.19-alloc/gctrace.log");
    let one = std::fs::read(&path).expect("the Go fixture is present");
    one.repeat(TARGET_BYTES / one.len() + 1)
}

fn parse_all(bytes: &[u8]) -> usize {
    let mut parser = GcLogParser::default();
    let mut events = Vec::new();
    let mut count = 0;
    for chunk in bytes.chunks(64 * 1024) {
        parser.feed(chunk, &mut events);
        count += events.len();
        events.clear();
    }
    parser.finish(&mut events);
    count + events.len()
}

fn parse(c: &mut Criterion) {
    let bytes = trace();
    let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
    eprintln!("Go trace: {} bytes, {} lines", bytes.len(), lines);
    let mut group = c.benchmark_group("gctrace");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes", |b| b.iter(|| parse_all(&bytes)));
    group.throughput(Throughput::Elements(lines));
    group.bench_function("lines", |b| b.iter(|| parse_all(&bytes)));
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
