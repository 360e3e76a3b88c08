//! Splitting a byte stream into lines as it arrives, with a cap on line
//! length so that a corrupt or binary file cannot grow the buffer without
//! bound. Shared by every log parser in this crate.
//!
//! A run of NUL bytes also ends a line. A crash, or a file preallocated and
//! then written, leaves such a block where a line (or its newline) should be;
//! without this the block and the next real line would be read as one line.
//! A NUL run never makes a line of its own.

use serde::{Deserialize, Serialize};

/// What the splitter hands on: a complete line (without its `\n` or NULs), or
/// the news that a line was longer than the cap and is being skipped.
pub enum Piece<'a> {
    /// A line already known to be UTF-8: it was checked with the rest of its
    /// chunk, in one call (per line, the check's setup cost more than the check).
    Text(&'a str),
    /// A line not checked yet: it spanned two chunks, or its chunk was not
    /// all UTF-8.
    Line(&'a [u8]),
    TooLong,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineSplitter {
    max_line_bytes: usize,
    partial: Vec<u8>,
    /// Inside an over-long line, already reported, until its newline.
    skipping: bool,
}

impl Default for LineSplitter {
    fn default() -> Self {
        LineSplitter::new(64 * 1024)
    }
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            max_line_bytes,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Bytes of an unfinished line held until its newline arrives.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Hands every complete line in `bytes` to `on_piece`; chunk boundaries
    /// never change what is handed on.
    pub fn feed(&mut self, bytes: &[u8], mut on_piece: impl FnMut(Piece<'_>)) {
        // Every line found below ends at or before the chunk's last terminator.
        let complete = memchr::memrchr2(b'\n', 0, bytes).map_or(0, |end| end + 1);
        let text = simdutf8::basic::from_utf8(&bytes[..complete]).ok();
        let mut start = 0;
        while let Some(found) = memchr::memchr2(b'\n', 0, &bytes[start..]) {
            let line = start..start + found;
            let by_nul = bytes[line.end] == 0;
            start = line.end + 1;
            if by_nul {
                // Skipped in one go: a crash can leave megabytes of them.
                start += bytes[start..].iter().take_while(|&&b| b == 0).count();
            }
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                if !(by_nul && line.is_empty()) {
                    // Lines start and end next to ASCII terminators: char boundaries.
                    match text {
                        Some(text) => self.hand_on(&text[line], Piece::Text, &mut on_piece),
                        None => self.hand_on(&bytes[line], Piece::Line, &mut on_piece),
                    }
                }
            } else {
                let mut joined = std::mem::take(&mut self.partial);
                joined.extend_from_slice(&bytes[line]);
                self.hand_on(&joined[..], Piece::Line, &mut on_piece);
                joined.clear();
                self.partial = joined;
            }
        }
        let rest = &bytes[start..];
        if rest.is_empty() || self.skipping {
            return;
        }
        if self.partial.len() + rest.len() > self.max_line_bytes {
            self.partial.clear();
            self.partial.shrink_to(self.max_line_bytes.min(4096));
            self.skipping = true;
            on_piece(Piece::TooLong);
        } else {
            self.partial.extend_from_slice(rest);
        }
    }

    /// Ends the stream: hands on an unterminated last line.
    pub fn finish(&mut self, mut on_piece: impl FnMut(Piece<'_>)) {
        self.skipping = false;
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.hand_on(&last[..], Piece::Line, &mut on_piece);
        }
    }

    fn hand_on<'a, T: AsRef<[u8]> + ?Sized>(
        &self,
        line: &'a T,
        piece: impl FnOnce(&'a T) -> Piece<'a>,
        on_piece: &mut impl FnMut(Piece<'_>),
    ) {
        if line.as_ref().len() > self.max_line_bytes {
            on_piece(Piece::TooLong);
        } else {
            on_piece(piece(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the splitter hands on for `input` fed in `chunk`-byte pieces.
    fn split(input: &[u8], chunk: usize, max_line_bytes: usize) -> Vec<Option<Vec<u8>>> {
        let mut splitter = LineSplitter::new(max_line_bytes);
        let mut pieces = Vec::new();
        let mut collect = |piece: Piece<'_>| {
            pieces.push(match piece {
                Piece::Text(line) => Some(line.as_bytes().to_vec()),
                Piece::Line(line) => Some(line.to_vec()),
                Piece::TooLong => None,
            })
        };
        for part in input.chunks(chunk) {
            splitter.feed(part, &mut collect);
        }
        splitter.finish(&mut collect);
        pieces
    }

    #[test]
    fn a_nul_run_ends_a_line_but_never_makes_one() {
        let input = b"one\n\0\0\0\0two\0\0\0three\n\n\0four";
        let expected: Vec<Option<Vec<u8>>> = vec![
            Some(b"one".to_vec()),
            Some(b"two".to_vec()),
            Some(b"three".to_vec()),
            Some(b"".to_vec()),
            Some(b"four".to_vec()),
        ];
        for chunk in 1..=input.len() {
            assert_eq!(split(input, chunk, 1024), expected, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_nul_run_ends_the_skipping_of_an_over_long_line() {
        let input = b"0123456789abcdef\0\0\0ok\n";
        for chunk in 1..=input.len() {
            assert_eq!(
                split(input, chunk, 8),
                vec![None, Some(b"ok".to_vec())],
                "chunks of {chunk}"
            );
        }
    }
}
