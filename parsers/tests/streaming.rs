//! Feeding a log whole or in arbitrary chunks must give identical events and
//! counters, whatever garbage (random bytes, blocks of NULs) is mixed in.

use std::path::Path;

use pausewatch_parsers::{GcEvent, GcLogParser, ParseStats, ParserOptions};
use proptest::prelude::*;

/// The head of every committed JVM fixture log, joined: real lines from every
/// collector and decorator set.
fn fixture_sample() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/jvm");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("fixtures missing at {}: {e}", root.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    dirs.sort();
    let mut sample = Vec::new();
    for dir in dirs {
        if let Ok(bytes) = std::fs::read(dir.join("gc.log")) {
            sample.extend_from_slice(&bytes[..bytes.len().min(24 * 1024)]);
        }
    }
    assert!(
        sample.len() > 100_000,
        "expected fixture logs under {}",
        root.display()
    );
    sample
}

fn run(input: &[u8], chunks: &[usize], max_line_bytes: usize) -> (Vec<GcEvent>, ParseStats) {
    let mut parser = GcLogParser::new(ParserOptions {
        max_line_bytes,
        ..ParserOptions::default()
    });
    let mut events = Vec::new();
    let mut offset = 0;
    let mut sizes = chunks.iter().cycle();
    while offset < input.len() {
        let size = sizes.next().copied().unwrap_or(input.len()).max(1);
        let end = (offset + size).min(input.len());
        parser.feed(&input[offset..end], &mut events);
        offset = end;
    }
    parser.finish(&mut events);
    (events, parser.stats().clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn chunking_never_changes_the_result(
        garbage in proptest::collection::vec(any::<u8>(), 0..2048),
        split in 0usize..1_000_000,
        nuls in 0usize..5000,
        nul_split in 0usize..1_000_000,
        chunks in proptest::collection::vec(1usize..4096, 1..16),
        max_line_bytes in prop_oneof![Just(64 * 1024), 16usize..400],
    ) {
        let sample = fixture_sample();
        let at = split % sample.len();
        let mut input = sample[..at].to_vec();
        input.extend_from_slice(&garbage);
        input.extend_from_slice(&sample[at..]);
        // A crash's block of NULs, anywhere: mid-line, at a line start, in the garbage.
        let nul_at = nul_split % input.len();
        input.splice(nul_at..nul_at, std::iter::repeat_n(0u8, nuls));
        let whole = run(&input, &[input.len()], max_line_bytes);
        let chunked = run(&input, &chunks, max_line_bytes);
        prop_assert_eq!(&whole.1, &chunked.1);
        prop_assert!(whole.0 == chunked.0, "events differ");
        prop_assert_eq!(whole.1.bytes, input.len() as u64);
    }

    #[test]
    fn a_nul_block_at_a_line_start_changes_no_event(
        line in 0usize..1_000_000,
        nuls in 1usize..5000,
        chunks in proptest::collection::vec(1usize..4096, 1..16),
    ) {
        let sample = fixture_sample();
        let starts: Vec<usize> = memchr::memchr_iter(b'\n', &sample).map(|i| i + 1).collect();
        let at = starts[line % starts.len()];
        let mut input = sample[..at].to_vec();
        input.extend(std::iter::repeat_n(0u8, nuls));
        input.extend_from_slice(&sample[at..]);
        let (clean_events, clean_stats) = run(&sample, &[sample.len()], 64 * 1024);
        let (events, stats) = run(&input, &chunks, 64 * 1024);
        prop_assert!(events == clean_events, "events differ");
        prop_assert_eq!(stats, ParseStats { bytes: input.len() as u64, ..clean_stats });
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..8192)) {
        let (_, stats) = run(&bytes, &[7, 300, 1], 256);
        prop_assert_eq!(stats.bytes, bytes.len() as u64);
    }
}
