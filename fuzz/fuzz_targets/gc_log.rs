//! Feeds arbitrary bytes to `GcLogParser` in fuzzer-chosen chunks and checks
//! that it never panics and that its state stays bounded.
//!
//! Input layout: `[chunk_sel, flush_sel, stream...]`.
//! * `chunk_sel` picks the largest chunk (low 3 bits) and seeds the sequence
//!   of chunk sizes (high 5 bits), so the same stream is cut many ways.
//! * `flush_sel`: `flush()` is called after every `flush_sel & 15`-th chunk
//!   (0 = never). The high nibble `r` repeats the stream: it is fed once for
//!   `r < 14`, 16 times for `r == 14` and 256 times for `r == 15` (capped at
//!   256 KiB in total), so a small input can stand for a long-running log and
//!   state that grows with the length of the stream (rather than with the
//!   length of one line) shows up. A repeated stream is never cut finer than
//!   `1..=4096`-byte chunks (short chunks are covered by single-pass inputs).
//!
//! The harness itself allocates little (no copy of the repeated stream, events
//! cleared as they are counted, state size measured without buffering the
//! JSON) so that `-rss_limit_mb` measures the parser.

#![no_main]

use std::io;

use libfuzzer_sys::fuzz_target;
use pausewatch_parsers::{GcLogParser, ParserOptions};

const MAX_LINE_BYTES: usize = 512;
/// Upper bound on `serde_json::to_vec(&parser).len()`.
///
/// What the parser may legitimately hold is bounded by the line cap and
/// `MAX_OPEN_COLLECTIONS` (128): the partial line (<= 512 bytes, <= 2 KiB as a
/// JSON array), and strings cut from single lines: the version, the `Entering
/// safepoint` operation, the pending pause's name/qualifiers/cause, and one
/// cause per open collection. A 512-byte string of control characters is
/// about 3 KiB of escaped JSON, so 128 open collections alone can reach about
/// 390 KB (an input of 128 `GC(i) Pause Young (<480 x \x01>)` lines gives
/// 386,973 bytes). 512 KiB is above everything bounded by design and is
/// exceeded only by state that grows with the length of the stream.
const MAX_STATE_JSON_BYTES: usize = 512 * 1024;
/// Serialising the state costs a lot next to a small `feed`: check it each
/// time this many more bytes have been fed (and always after the last feed
/// and after finish).
const STATE_CHECK_EVERY_BYTES: u64 = 8 * 1024;
/// Cap on the bytes fed in one run, repetitions included.
const MAX_STREAM_BYTES: usize = 256 * 1024;
/// Largest chunk, by the low three bits of the first byte (`usize::MAX`:
/// each repetition of the stream in one `feed`).
const MAX_CHUNK: [usize; 8] = [1, 2, 7, 31, 64, 513, 4096, usize::MAX];

/// An `io::Write` that only counts, to size the JSON without holding it.
struct CountingWriter(usize);

impl io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn check_state(parser: &GcLogParser, when: &str) {
    let mut counter = CountingWriter(0);
    serde_json::to_writer(&mut counter, parser).expect("parser state serialises");
    assert!(
        counter.0 <= MAX_STATE_JSON_BYTES,
        "serialised parser state is {} bytes (> {MAX_STATE_JSON_BYTES}) {when}",
        counter.0
    );
}

fuzz_target!(|data: &[u8]| {
    let (chunk_sel, flush_sel, stream) = match data {
        [a, b, rest @ ..] => (*a, *b, rest),
        _ => return,
    };
    let max_chunk = MAX_CHUNK[(chunk_sel & 7) as usize];
    let flush_every = (flush_sel & 15) as usize;
    let repeat_sel = u32::from(flush_sel >> 4);
    let repeats = match repeat_sel {
        15 => 256,
        14 => 16,
        _ => 1,
    };
    let repeats = repeats.min((MAX_STREAM_BYTES / stream.len().max(1)).max(1));
    let total = stream.len() * repeats;
    // Short chunks are exercised by the single-pass inputs; a repeated stream
    // in 1-byte feeds would only make the run slow.
    let max_chunk = if repeats > 1 { max_chunk.max(4096) } else { max_chunk };
    // xorshift32, seeded from the input so that runs are reproducible.
    let mut rng: u32 = 0x9E37_79B9 ^ u32::from(chunk_sel >> 3) ^ (u32::from(flush_sel) << 8);

    let mut parser = GcLogParser::new(ParserOptions {
        max_line_bytes: MAX_LINE_BYTES,
        ..Default::default()
    });
    let mut events = Vec::new();
    let mut events_seen: u64 = 0;
    let mut fed: u64 = 0;
    let mut newlines: u64 = 0;
    let mut position = 0usize; // in the repeated stream
    let mut chunk_index = 0usize;
    let mut next_state_check = STATE_CHECK_EVERY_BYTES;
    let mut scratch: Vec<u8> = Vec::new(); // a chunk that spans two repetitions

    while position < total {
        let offset = position % stream.len();
        let size = if max_chunk == usize::MAX {
            stream.len() - offset
        } else {
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            (1 + (rng as usize) % max_chunk).min(total - position)
        };
        let chunk: &[u8] = if offset + size <= stream.len() {
            &stream[offset..offset + size]
        } else {
            scratch.clear();
            let mut at = offset;
            while scratch.len() < size {
                let take = (size - scratch.len()).min(stream.len() - at);
                scratch.extend_from_slice(&stream[at..at + take]);
                at = 0;
            }
            &scratch
        };
        position += size;

        parser.feed(chunk, &mut events);
        fed += chunk.len() as u64;
        newlines += memchr_count(chunk);
        chunk_index += 1;

        let stats = parser.stats();
        assert!(
            parser.buffered_bytes() <= MAX_LINE_BYTES,
            "buffered_bytes {} > max_line_bytes {MAX_LINE_BYTES} after chunk {chunk_index}",
            parser.buffered_bytes()
        );
        assert_eq!(stats.bytes, fed, "stats.bytes != bytes fed after chunk {chunk_index}");
        assert!(
            stats.lines >= newlines,
            "stats.lines {} < newlines fed {newlines} after chunk {chunk_index}",
            stats.lines
        );
        events_seen += events.len() as u64;
        events.clear();
        assert_eq!(
            events_seen, stats.events,
            "events returned != stats.events after chunk {chunk_index}"
        );

        if flush_every != 0 && chunk_index % flush_every == 0 {
            parser.flush(&mut events);
            events_seen += events.len() as u64;
            events.clear();
            assert_eq!(events_seen, parser.stats().events, "events != stats.events after flush");
        }
        if fed >= next_state_check {
            check_state(&parser, "while feeding");
            next_state_check = fed + STATE_CHECK_EVERY_BYTES;
        }
    }
    check_state(&parser, "after the last feed");

    parser.finish(&mut events);
    events_seen += events.len() as u64;
    let stats = parser.stats();
    assert_eq!(stats.bytes, fed, "stats.bytes != bytes fed after finish");
    assert!(stats.lines >= newlines, "stats.lines < newlines fed after finish");
    assert_eq!(events_seen, stats.events, "events != stats.events after finish");
    assert_eq!(parser.buffered_bytes(), 0, "bytes still buffered after finish");
    check_state(&parser, "after finish");
});

fn memchr_count(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}
