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

/// JDK 6 to 8 lines of every collector and detail flag, hand-written after
/// FORMATS.md §9: multi-line events, spliced concurrent output, heap blocks.
const LEGACY_SAMPLE: &str = "\
OpenJDK 64-Bit Server VM (25.342-b07) for linux-amd64 JRE (1.8.0_342-b07), built on Jul 16 2022 09:19:19 by \"openjdk\" with gcc 4.4.7
CommandLine flags: -XX:MaxHeapSize=536870912 -XX:+PrintGCDetails -XX:+UseConcMarkSweepGC
2016-04-14T22:30:09.108+0200: 1.053: #0: [GC (Allocation Failure) 1.053: [ParNew: 218496K->25704K(245760K), 0.0145305 secs] 218496K->25704K(791936K), 0.0146984 secs] [Times: user=0.13 sys=0.00, real=0.01 secs]
2016-04-14T22:30:12.886+0200: 4.830: [GC (CMS Initial Mark) [1 CMS-initial-mark: 29170K(546176K)] 45355K(791936K), 0.0017923 secs] [Times: user=0.00 sys=0.00, real=0.00 secs]
2016-04-14T22:30:13.217+0200: 5.161: [CMS-concurrent-abortable-preclean: 0.146/0.280 secs] [Times: user=1.27 sys=0.05, real=0.28 secs]
5.2: [GC 5.2: [ParNew (promotion failed)
Desired survivor size 1343488 bytes, new threshold 1 (max 1)
- age   1:    1286472 bytes,    1286472 total
: 2624K->2624K(2624K), 0.0047280 secs]5.3: [CMS5.4: [CMS-concurrent-mark: 0.1/0.2 secs] (concurrent mode failure): 2622587K->2608283K(2988200K), 13.5914940 secs] 2625211K->2608283K(2990824K), [Metaspace: 152319K->150812K(262144K)], 13.5959700 secs] [Times: user=13.56 sys=0.02, real=13.60 secs]
{Heap before GC invocations=1 (full 0):
 PSYoungGen      total 76288K, used 65536K [0x00000000fab00000, 0x0000000100000000, 0x0000000100000000)
20.1: [GC (Allocation Failure)
Desired survivor size 4194304 bytes, new threshold 7 (max 15)
[PSYoungGen: 24571K->4081K(28672K)] 24571K->22186K(94208K), 0.0199218 secs] [Times: user=0.02 sys=0.02, real=0.02 secs]
Heap after GC invocations=2 (full 0):
 PSYoungGen      total 76288K, used 10746K [0x00000000fab00000, 0x0000000100000000, 0x0000000100000000)
}
21.0: [Full GC (Ergonomics) [PSYoungGen: 25080K->2964K(473600K)] [ParOldGen: 12858K->13271K(26624K)] 37938K->16236K(500224K), [Metaspace: 8531K->8493K(21504K)], 0.0590550 secs] [Times: user=0.28 sys=0.00, real=0.06 secs]
24.263: [GC pause (G1 Evacuation Pause) (young)24.264: [GC concurrent-root-region-scan-end, 0.0157002 secs]
, 0.0052520 secs]
   [Parallel Time: 4.4 ms, GC Workers: 8]
   [Eden: 24.0M(24.0M)->0.0B(30.0M) Survivors: 0.0B->3072.0K Heap: 33.6M(256.0M)->13.9M(256.0M)]
 [Times: user=0.03 sys=0.00, real=0.00 secs]
24.268: Total time for which application threads were stopped: 0.0054520 seconds, Stopping threads took: 0.0000269 seconds
25.360: [GC remark, 0.0943079 secs]
25.369: [Full GC (Allocation Failure)  22330M->8207M(22432M), 27.9811092 secs]
application says hello [GC (System.gc())  1234K->1000K(8192K), 0,0200000 secs]
";

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

/// The agent checkpoints the parser between any two reads: a JDK 8 event
/// open across a checkpoint (joined lines, a pause waiting for its G1
/// details) must come out of the restored parser as it would have.
#[test]
fn a_checkpoint_inside_a_jdk8_event_changes_nothing() {
    let input = LEGACY_SAMPLE.as_bytes();
    let (expected, expected_stats) = run(input, &[input.len()], 64 * 1024);
    assert!(expected.len() > 10, "{expected:?}");
    let line_ends: Vec<usize> = memchr::memchr_iter(b'\n', input).map(|i| i + 1).collect();
    for &cut in &line_ends {
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(&input[..cut], &mut events);
        let saved = serde_json::to_string(&parser).unwrap();
        let mut parser: GcLogParser = serde_json::from_str(&saved).unwrap();
        parser.feed(&input[cut..], &mut events);
        parser.finish(&mut events);
        assert!(events == expected, "checkpoint after byte {cut}");
        assert_eq!(parser.stats(), &expected_stats);
    }
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
    fn legacy_chunking_never_changes_the_result(
        garbage in proptest::collection::vec(any::<u8>(), 0..512),
        split in 0usize..1_000_000,
        chunks in proptest::collection::vec(1usize..512, 1..16),
        max_line_bytes in prop_oneof![Just(64 * 1024), 16usize..400],
    ) {
        let sample = LEGACY_SAMPLE.as_bytes();
        let at = split % sample.len();
        let mut input = sample[..at].to_vec();
        input.extend_from_slice(&garbage);
        input.extend_from_slice(&sample[at..]);
        let whole = run(&input, &[input.len()], max_line_bytes);
        let chunked = run(&input, &chunks, max_line_bytes);
        prop_assert_eq!(&whole.1, &chunked.1);
        prop_assert!(whole.0 == chunked.0, "events differ");
    }

    /// Any order and mutilation of JDK 8 lines: cut anywhere, brackets
    /// dropped or doubled, lines shuffled.
    #[test]
    fn legacy_fragments_never_panic(
        picks in proptest::collection::vec((0usize..64, 0usize..400, 0usize..400), 0..64),
    ) {
        let lines: Vec<&str> = LEGACY_SAMPLE.lines().collect();
        let mut input = String::new();
        for (line, from, to) in picks {
            let line = lines[line % lines.len()];
            let (from, to) = (from.min(line.len()), to.min(line.len()));
            let (from, to) = (from.min(to), from.max(to));
            if let Some(piece) = line.get(from..to) {
                input.push_str(piece);
            }
            input.push(if to % 3 == 0 { '[' } else { '\n' });
        }
        let (_, stats) = run(input.as_bytes(), &[7, 300, 1], 256);
        prop_assert_eq!(stats.bytes, input.len() as u64);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..8192)) {
        let (_, stats) = run(&bytes, &[7, 300, 1], 256);
        prop_assert_eq!(stats.bytes, bytes.len() as u64);
    }
}
