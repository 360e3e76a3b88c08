//! Splitting a byte stream into lines as it arrives, with a cap on line
//! length so that a corrupt or binary file cannot grow the buffer without
//! bound. Shared by every log parser in this crate.

use serde::{Deserialize, Serialize};

/// What the splitter hands on: a complete line (without its `\n`), or the
/// news that a line was longer than the cap and is being skipped.
pub enum Piece<'a> {
    Line(&'a [u8]),
    TooLong,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
        let mut rest = bytes;
        while let Some(position) = memchr::memchr(b'\n', rest) {
            let line = &rest[..position];
            rest = &rest[position + 1..];
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                self.hand_on(line, &mut on_piece);
            } else {
                let mut joined = std::mem::take(&mut self.partial);
                joined.extend_from_slice(line);
                self.hand_on(&joined, &mut on_piece);
                joined.clear();
                self.partial = joined;
            }
        }
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
            self.hand_on(&last, &mut on_piece);
        }
    }

    fn hand_on(&self, line: &[u8], on_piece: &mut impl FnMut(Piece<'_>)) {
        if line.len() > self.max_line_bytes {
            on_piece(Piece::TooLong);
        } else {
            on_piece(Piece::Line(line));
        }
    }
}
