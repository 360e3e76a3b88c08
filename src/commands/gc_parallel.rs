//! A GC log parsed on two cores, its events handed on in order: each
//! stretch of the log is cut in two at a line end, the second half read
//! ahead on another thread ([`GcLogParser::read_ahead`]) while this one
//! reads the first, then caught up with ([`GcLogParser::catch_up`]). The
//! events, counts and state are those of a sequential parse by construction
//! (`parsers/tests/it/speculation.rs` checks it).

use std::io::{Seek, SeekFrom};
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use pausewatch_parsers::{GcEvent, GcLogParser};

use crate::commands::gc_input::{is_compressed, read_gc_log_into, read_plain_into, Sink, CHUNK};
use crate::commands::mapped_log::MappedLog;

/// Bytes read before they are parsed in two halves: long enough for the
/// guess of a half's starting state to converge early in it, short enough
/// that the bytes are still in the cache when they are parsed. 8 MB, read
/// at once, were parsed from memory (bench/README.md). A plain file is
/// mapped instead ([`MAPPED_STRETCH`]); what is read is compressed, or the
/// rest of a file after a CR, or what was written since it was mapped.
const STRETCH: usize = 2 << 20;

/// A mapped log's stretches: nothing is copied, so they need not fit the
/// cache, and longer ones cost fewer rounds of the split. Trace-level logs
/// parsed 10-26 % faster from a map than from 2 MB stretches read into a
/// buffer (bench/README.md).
const MAPPED_STRETCH: usize = 8 << 20;

/// This thread's half is fed and its events folded this many bytes at a time.
const PIECE: usize = 1 << 20;

/// A stretch shorter than this is parsed on this thread alone.
const MIN_SPLIT: usize = 256 << 10;

/// The share of the first stretch this thread reads itself: less than
/// half, since it also folds the events of both halves. Later stretches
/// take the share that would have finished both halves together in the
/// stretch before: on a trace-level log (few events, folding is cheap) the
/// read-ahead was still busy for a third of this thread's time.
const FIRST_OWN_SHARE: f64 = 0.4;

/// The bounds of the share: a stretch that went oddly (a preamble, a
/// restart) does not hand nearly all of the next to one thread.
const OWN_SHARE_RANGE: std::ops::RangeInclusive<f64> = 0.25..=0.65;

/// The head of a stream is read on this thread alone: before its preamble
/// (collector, region size) a guess knows nothing and would not converge.
const HEAD: usize = 64 << 10;

/// Parses the file at `path` with `parser`, handing its events to `deliver`
/// in the order a sequential parse gives them; `finish` is left to the caller.
pub fn parse_gc_log(
    path: &Path,
    parser: &mut GcLogParser,
    deliver: &mut dyn FnMut(&mut Vec<GcEvent>),
) -> Result<()> {
    let mut halves = Halves {
        fresh: Vec::new(),
        ahead: Vec::new(),
        own_share: FIRST_OWN_SHARE,
    };
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    // A plain file is parsed from a map as far as it can be; what is left
    // (its last line if unfinished, what was written since, the rest from a
    // stretch with a CR in it) is read as any other.
    let mut mapped_to = None;
    if let Some(mapped) = MappedLog::open(&file).filter(|m| !is_compressed(m.bytes())) {
        let parsed = parse_mapped(&mapped, parser, &mut halves, deliver);
        if mapped.truncated() {
            bail!(
                "{} was cut short while it was read (a JVM restarted into it?): analyze it again",
                path.display()
            );
        }
        mapped_to = Some(parsed);
    }
    // The buffer is made of huge pages only for a rest that fills one.
    let file_len = file.metadata().map_or(0, |m| m.len());
    let to_read = file_len.saturating_sub(mapped_to.unwrap_or(0) as u64);
    let mut stretch = Stretch {
        buffer: StretchBuffer::new(to_read)
            .with_context(|| format!("cannot map a read buffer for {}", path.display()))?,
        filled: 0,
        parser,
        halves,
        deliver,
    };
    match mapped_to {
        Some(parsed) => {
            let mut file = file;
            file.seek(SeekFrom::Start(parsed as u64))
                .with_context(|| format!("cannot read {}", path.display()))?;
            read_plain_into(file, path, &mut stretch)?;
        }
        None => read_gc_log_into(file, path, &mut stretch)?,
    }
    let Stretch {
        buffer,
        filled,
        parser,
        mut halves,
        deliver,
    } = stretch;
    parse_stretch(
        parser,
        &buffer.bytes()[..filled],
        &mut halves,
        deliver,
        false,
    );
    deliver(&mut halves.fresh);
    Ok(())
}

/// Parses the whole lines of a mapped log a stretch at a time, up to a part
/// with a CR in it (see [`parse_stretch`]); returns how far it parsed.
fn parse_mapped(
    mapped: &MappedLog,
    parser: &mut GcLogParser,
    halves: &mut Halves,
    deliver: &mut dyn FnMut(&mut Vec<GcEvent>),
) -> usize {
    let bytes = mapped.bytes();
    let whole = &bytes[..memchr::memrchr(b'\n', bytes).map_or(0, |at| at + 1)];
    let mut parsed = 0;
    while parsed < whole.len() {
        let end = if whole.len() - parsed > MAPPED_STRETCH {
            line_end_after(whole, parsed + MAPPED_STRETCH)
        } else {
            whole.len()
        };
        let stretch = &whole[parsed..end];
        let done = parse_stretch(parser, stretch, halves, deliver, true);
        mapped.release(parsed..parsed + done);
        parsed += done;
        if done < stretch.len() {
            break;
        }
    }
    parsed
}

/// A file at least this large has its buffer in huge pages: a smaller one
/// would touch less than one.
const HUGE_PAGE: usize = 2 << 20;

/// The buffer a stretch is read into, with room for a read on top, so that
/// it never grows. Mapped on its own, and for a file of `file_bytes` that
/// fills a huge page, in huge pages where the kernel gives them
/// (`madvise`): faulting in 2,300 small pages cost `analyze` more than
/// reading the bytes into them did. The kernel backs only the huge-page
/// aligned part of a mapping with huge pages, so the buffer starts at such
/// a boundary inside a mapping one huge page larger, and its length is a
/// whole number of them.
struct StretchBuffer {
    map: memmap2::MmapMut,
    start: usize,
}

impl StretchBuffer {
    const LEN: usize = (STRETCH + CHUNK).next_multiple_of(HUGE_PAGE);

    fn new(file_bytes: u64) -> Result<StretchBuffer> {
        // Pages never touched cost nothing, the extra huge page included.
        let map = memmap2::MmapMut::map_anon(Self::LEN + HUGE_PAGE)?;
        if file_bytes >= HUGE_PAGE as u64 {
            // Only a hint: without transparent huge pages the buffer works the same.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        let start = (HUGE_PAGE - map.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE;
        Ok(StretchBuffer { map, start })
    }

    fn bytes(&self) -> &[u8] {
        &self.map[self.start..self.start + Self::LEN]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.start..self.start + Self::LEN]
    }
}

/// The log read straight into one buffer, parsed a stretch at a time.
struct Stretch<'a> {
    buffer: StretchBuffer,
    filled: usize,
    parser: &'a mut GcLogParser,
    halves: Halves,
    deliver: &'a mut dyn FnMut(&mut Vec<GcEvent>),
}

/// What passes from one stretch to the next.
struct Halves {
    /// Reused: a fresh vector per stretch grew into new pages every time.
    fresh: Vec<GcEvent>,
    /// The read-ahead's events, its vector kept from stretch to stretch.
    ahead: Vec<GcEvent>,
    /// The share of the next stretch this thread reads itself.
    own_share: f64,
}

impl Sink for Stretch<'_> {
    fn room(&mut self) -> &mut [u8] {
        &mut self.buffer.bytes_mut()[self.filled..]
    }

    fn filled(&mut self, len: usize) {
        self.filled += len;
        if self.filled < STRETCH {
            return;
        }
        // The last line may be unfinished: it waits for the next stretch.
        let bytes = &self.buffer.bytes()[..self.filled];
        let end = memchr::memrchr(b'\n', bytes).map_or(bytes.len(), |at| at + 1);
        parse_stretch(
            self.parser,
            &bytes[..end],
            &mut self.halves,
            self.deliver,
            false,
        );
        self.buffer.bytes_mut().copy_within(end..self.filled, 0);
        self.filled -= end;
    }
}

/// Parses `bytes`, which end at a line end or the end of the input; returns
/// how many it parsed. With `stop_at_cr`, bytes straight from a file, it
/// stops before a part with a CR in it (the reader turns a lone one into LF
/// in its buffer): each thread looks through its own part before it parses
/// it, which costs next to nothing there, where one look through the whole
/// stretch first cost a sixth of the time a map saved.
fn parse_stretch(
    parser: &mut GcLogParser,
    bytes: &[u8],
    halves: &mut Halves,
    deliver: &mut dyn FnMut(&mut Vec<GcEvent>),
    stop_at_cr: bool,
) -> usize {
    let Halves {
        fresh,
        ahead,
        own_share,
    } = halves;
    let has_cr = |part: &[u8]| stop_at_cr && memchr::memchr(b'\r', part).is_some();
    let mut parsed = 0;
    if parser.stats().bytes == 0 {
        let head = line_end_after(bytes, HEAD.min(bytes.len()));
        if has_cr(&bytes[..head]) {
            return 0;
        }
        parser.feed(&bytes[..head], fresh);
        deliver(fresh);
        parsed = head;
    }
    let bytes = &bytes[parsed..];
    let split = line_end_after(bytes, (bytes.len() as f64 * *own_share) as usize);
    if bytes.len() < MIN_SPLIT || split == bytes.len() {
        if has_cr(bytes) {
            return parsed;
        }
        parser.feed(bytes, fresh);
        deliver(fresh);
        return parsed + bytes.len();
    }
    let (first, second) = bytes.split_at(split);
    let mut speculation = parser.speculate(std::mem::take(ahead));
    let started = Instant::now();
    let (own, other) = std::thread::scope(|scope| {
        let ahead = scope.spawn(|| {
            if has_cr(second) {
                return None;
            }
            speculation.read(second);
            Some(started.elapsed())
        });
        let own = (!has_cr(first)).then(|| {
            // In pieces, so that the events in hand stay few.
            for piece in first.chunks(PIECE) {
                parser.feed(piece, fresh);
                deliver(fresh);
            }
            started.elapsed()
        });
        (own, ahead.join().expect("the GC log read ahead panicked"))
    });
    let Some(own) = own else {
        return parsed;
    };
    let Some(other) = other else {
        return parsed + first.len();
    };
    // Bytes a second on each side, and the share that evens them out.
    let own_rate = first.len() as f64 / own.as_secs_f64().max(1e-6);
    let other_rate = second.len() as f64 / other.as_secs_f64().max(1e-6);
    let even = own_rate / (own_rate + other_rate);
    *own_share = even.clamp(*OWN_SHARE_RANGE.start(), *OWN_SHARE_RANGE.end());
    // The read-ahead's events wait in `fresh` for the next stretch, where
    // this thread folds them while the other reads on: folded here, they
    // kept the other thread idle meanwhile. Whatever comes next delivers
    // `fresh` first, and `parse_gc_log` delivers what the last one left.
    *ahead = parser.catch_up(second, speculation, fresh);
    parsed + bytes.len()
}

/// The offset just past the first line end at or after `at`, or the end.
fn line_end_after(bytes: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |end| at + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pausewatch_parsers::ParserOptions;

    /// A log of several stretches, parsed on two cores from a map or read
    /// (gzipped), gives the events of one parse on one core in the same
    /// order, the read-ahead's events held over into the next stretch
    /// included: three JVM runs (G1, generational ZGC, Shenandoah) over and
    /// over, 20 MB in all.
    #[test]
    fn a_log_parsed_on_two_cores_gives_the_events_of_one_parse() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jvm");
        let mut runs = Vec::new();
        for name in [
            "jdk17-g1-steady",
            "jdk25-zgc-steady",
            "jdk17-shenandoah-steady",
        ] {
            runs.extend(std::fs::read(fixtures.join(name).join("gc.log")).unwrap());
        }
        let mut log = Vec::new();
        while log.len() < 20 << 20 {
            log.extend(&runs);
        }
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("gc.log");
        std::fs::write(&path, &log).unwrap();

        let mut one_core = GcLogParser::new(ParserOptions::default());
        let mut expected = Vec::new();
        one_core.feed(&log, &mut expected);
        one_core.finish(&mut expected);

        assert!(expected.len() > 30_000, "{} events", expected.len());

        let gzipped = directory.path().join("gc.log.gz");
        let mut encoder = flate2::write::GzEncoder::new(
            std::fs::File::create(&gzipped).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::Write::write_all(&mut encoder, &log).unwrap();
        encoder.finish().unwrap();
        for path in [path, gzipped] {
            let mut two_cores = GcLogParser::new(ParserOptions::default());
            let mut events = Vec::new();
            parse_gc_log(&path, &mut two_cores, &mut |fresh| events.append(fresh)).unwrap();
            two_cores.finish(&mut events);
            assert!(
                events == expected,
                "{}: the two parses differ",
                path.display()
            );
            assert_eq!(two_cores.stats(), one_core.stats(), "{}", path.display());
        }
    }
}
