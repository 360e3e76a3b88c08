//! The bytes of GC log files for the offline commands, a chunk at a time:
//! plain, gzipped or zipped (told by their magic bytes, not their names, as
//! GCViewer does: rotated logs are kept compressed), with CR-only line ends
//! turned into LF. Nothing is held beyond one chunk, so `analyze`'s memory
//! does not follow the size of its input.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result};

/// Bytes handed on at a time.
const CHUNK: usize = 1024 * 1024;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Feeds the contents of `path` to `each`, a chunk at a time: a gzip file
/// decompressed (all its members), a zip archive's files one after the
/// other in the archive's order.
pub fn read_gc_log(path: &Path, each: &mut dyn FnMut(&[u8])) -> Result<()> {
    let open = || File::open(path).with_context(|| format!("cannot open {}", path.display()));
    let mut magic = [0u8; 4];
    let mut head = open()?;
    let known = read_up_to(&mut head, &mut magic)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = LineEnds::default();
    let mut emit = |bytes: &[u8]| lines.convert(bytes, each);
    if magic[..known].starts_with(GZIP_MAGIC) {
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::new(open()?));
        copy_chunks(decoder, &mut emit)
            .with_context(|| format!("cannot decompress {} (gzip)", path.display()))?;
    } else if magic[..known].starts_with(ZIP_MAGIC) {
        let mut archive = zip::ZipArchive::new(BufReader::new(open()?))
            .with_context(|| format!("cannot read {} (zip)", path.display()))?;
        for index in 0..archive.len() {
            let entry = archive
                .by_index(index)
                .with_context(|| format!("cannot read entry {index} of {}", path.display()))?;
            if entry.is_dir() {
                continue;
            }
            let name = entry.name().to_string();
            copy_chunks(entry, &mut emit)
                .with_context(|| format!("cannot decompress {name} in {}", path.display()))?;
        }
    } else {
        copy_chunks(open()?, &mut emit)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    lines.finish(each);
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

fn copy_chunks(mut reader: impl Read, each: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(read) => each(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// Turns a CR that ends a line on its own (old Mac line ends, which some
/// Windows tools write) into LF; CRLF passes unchanged, the parsers take it.
/// A chunk that ends in CR leaves the decision to the next chunk's first byte.
#[derive(Default)]
struct LineEnds {
    /// The previous chunk ended in a CR not yet handed on.
    carried_cr: bool,
    converted: Vec<u8>,
}

impl LineEnds {
    fn convert(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(&[u8])) {
        if self.carried_cr {
            self.carried_cr = false;
            each(if bytes.first() == Some(&b'\n') {
                b"\r"
            } else {
                b"\n"
            });
        }
        if bytes.last() == Some(&b'\r') {
            self.carried_cr = true;
            bytes = &bytes[..bytes.len() - 1];
        }
        let lone_cr = memchr::memchr_iter(b'\r', bytes).any(|at| bytes.get(at + 1) != Some(&b'\n'));
        if !lone_cr {
            each(bytes);
            return;
        }
        self.converted.clear();
        self.converted.extend_from_slice(bytes);
        for at in 0..self.converted.len() {
            if self.converted[at] == b'\r' && self.converted.get(at + 1) != Some(&b'\n') {
                self.converted[at] = b'\n';
            }
        }
        each(&self.converted);
    }

    /// The input ended: a CR carried over ends the last line.
    fn finish(&mut self, each: &mut dyn FnMut(&[u8])) {
        if std::mem::take(&mut self.carried_cr) {
            each(b"\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `LineEnds` hands on for `chunks`.
    fn converted(chunks: &[&[u8]]) -> Vec<u8> {
        let mut lines = LineEnds::default();
        let mut out = Vec::new();
        for chunk in chunks {
            lines.convert(chunk, &mut |bytes| out.extend_from_slice(bytes));
        }
        lines.finish(&mut |bytes| out.extend_from_slice(bytes));
        out
    }

    #[test]
    fn lone_carriage_returns_end_lines_and_crlf_is_kept() {
        assert_eq!(converted(&[b"a\rb\r\nc\r"]), b"a\nb\r\nc\n");
        // CR and LF split between chunks stay one CRLF line end.
        assert_eq!(converted(&[b"a\r", b"\nb\r", b"c"]), b"a\r\nb\nc");
        assert_eq!(converted(&[b"plain\n"]), b"plain\n");
    }
}
