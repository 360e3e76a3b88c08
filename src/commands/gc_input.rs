//! The bytes of GC log files for the offline commands, a chunk at a time:
//! plain, gzipped or zipped (told by their magic bytes, not their names, as
//! GCViewer does: rotated logs are kept compressed), with CR-only line ends
//! turned into LF. Nothing is held beyond one chunk, so `analyze`'s memory
//! does not follow the size of its input.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use anyhow::{Context, Result};

/// Bytes read at a time.
pub const CHUNK: usize = 1024 * 1024;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Where [`read_gc_log_into`] puts what it reads: straight into the
/// caller's buffer, so that bytes are not copied again on their way to it.
pub trait Sink {
    /// Room for the next read: at least two bytes.
    fn room(&mut self) -> &mut [u8];
    /// The first `len` bytes of the last [`room`](Self::room) were filled.
    fn filled(&mut self, len: usize);
}

/// Feeds the contents of `path` to `each`, a chunk at a time.
pub fn read_gc_log(path: &Path, each: &mut dyn FnMut(&[u8])) -> Result<()> {
    /// A chunk buffer handed on whole each time it is filled.
    struct Chunks<'e> {
        buffer: Vec<u8>,
        each: &'e mut dyn FnMut(&[u8]),
    }
    impl Sink for Chunks<'_> {
        fn room(&mut self) -> &mut [u8] {
            &mut self.buffer
        }
        fn filled(&mut self, len: usize) {
            (self.each)(&self.buffer[..len]);
        }
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    read_gc_log_into(
        file,
        path,
        &mut Chunks {
            buffer: vec![0; CHUNK],
            each,
        },
    )
}

/// Reads the contents of `file`, opened from `path`, into `sink`, a chunk at
/// a time: a gzip file decompressed (all its members), a zip archive's files
/// one after the other in the archive's order.
pub fn read_gc_log_into(mut file: File, path: &Path, sink: &mut dyn Sink) -> Result<()> {
    let mut magic = [0u8; 4];
    let known = read_up_to(&mut file, &mut magic)
        .with_context(|| format!("cannot read {}", path.display()))?;
    // The bytes read to tell the format go on ahead of the rest: the file
    // is opened once, so a FIFO or a file replaced meanwhile loses nothing.
    let whole = (&magic[..known]).chain(file);
    if !is_compressed(&magic[..known]) {
        return read_plain_into(whole, path, sink);
    }
    let mut lines = LineEnds::default();
    if magic[..known].starts_with(GZIP_MAGIC) {
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::new(whole));
        lines
            .copy(decoder, sink)
            .with_context(|| format!("cannot decompress {} (gzip)", path.display()))?;
    } else {
        // A zip archive is read from its end: only a file that seeks back can be one.
        let mut file = whole.into_inner().1;
        file.rewind()
            .with_context(|| format!("cannot read {} (zip) from its start", path.display()))?;
        let mut archive = zip::ZipArchive::new(BufReader::new(file))
            .with_context(|| format!("cannot read {} (zip)", path.display()))?;
        for index in 0..archive.len() {
            let entry = archive
                .by_index(index)
                .with_context(|| format!("cannot read entry {index} of {}", path.display()))?;
            if entry.is_dir() {
                continue;
            }
            let name = entry.name().to_string();
            lines
                .copy(entry, sink)
                .with_context(|| format!("cannot decompress {name} in {}", path.display()))?;
        }
    }
    lines.finish(sink);
    Ok(())
}

/// Whether a file's first bytes are those of a gzip file or a zip archive.
pub fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(GZIP_MAGIC) || head.starts_with(ZIP_MAGIC)
}

/// Reads `plain`, a plain log from `path`, into `sink` from where it
/// stands: a whole log, or the rest of one whose start was read otherwise,
/// at a line start.
pub fn read_plain_into(plain: impl Read, path: &Path, sink: &mut dyn Sink) -> Result<()> {
    let mut lines = LineEnds::default();
    lines
        .copy(plain, sink)
        .with_context(|| format!("cannot read {}", path.display()))?;
    lines.finish(sink);
    Ok(())
}

/// Fills as much of `buffer` as the reader has: the bytes read.
fn read_up_to(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(filled)
}

/// Turns a CR that ends a line on its own (old Mac line ends, which some
/// Windows tools write) into LF, in the sink's buffer; CRLF passes
/// unchanged, the parsers take it. A read that ends in CR holds it back
/// until the next byte decides, across the files of an archive.
#[derive(Default)]
struct LineEnds {
    /// A CR held back: the last byte read so far.
    carried_cr: bool,
}

impl LineEnds {
    /// Reads all of `reader` into `sink`.
    fn copy(&mut self, mut reader: impl Read, sink: &mut dyn Sink) -> std::io::Result<()> {
        loop {
            let room = sink.room();
            // The CR held back goes first, as what the next byte makes of it.
            let from = usize::from(self.carried_cr);
            let read = match reader.read(&mut room[from..]) {
                Ok(0) => return Ok(()),
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            let mut end = from + read;
            if self.carried_cr {
                room[0] = if room[1] == b'\n' { b'\r' } else { b'\n' };
            }
            self.carried_cr = room[end - 1] == b'\r';
            if self.carried_cr {
                end -= 1;
            }
            // A CR is lone unless LF follows; the one held back is not LF.
            let mut next = 0;
            while let Some(found) = memchr::memchr(b'\r', &room[next..end]) {
                let at = next + found;
                if at + 1 == end || room[at + 1] != b'\n' {
                    room[at] = b'\n';
                }
                next = at + 1;
            }
            if end > 0 {
                sink.filled(end);
            }
        }
    }

    /// The input ended: a CR held back ends the last line.
    fn finish(&mut self, sink: &mut dyn Sink) {
        if std::mem::take(&mut self.carried_cr) {
            sink.room()[0] = b'\n';
            sink.filled(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `LineEnds` hands on for `chunks`, read in that many reads.
    fn converted(chunks: &[&[u8]]) -> Vec<u8> {
        struct Collect(Vec<u8>, [u8; 64]);
        impl Sink for Collect {
            fn room(&mut self) -> &mut [u8] {
                &mut self.1
            }
            fn filled(&mut self, len: usize) {
                self.0.extend_from_slice(&self.1[..len]);
            }
        }
        let mut lines = LineEnds::default();
        let mut out = Collect(Vec::new(), [0; 64]);
        for chunk in chunks {
            lines.copy(*chunk, &mut out).unwrap();
        }
        lines.finish(&mut out);
        out.0
    }

    #[test]
    fn lone_carriage_returns_end_lines_and_crlf_is_kept() {
        assert_eq!(converted(&[b"a\rb\r\nc\r"]), b"a\nb\r\nc\n");
        // CR and LF split between chunks stay one CRLF line end.
        assert_eq!(converted(&[b"a\r", b"\nb\r", b"c"]), b"a\r\nb\nc");
        assert_eq!(converted(&[b"plain\n"]), b"plain\n");
    }
}
