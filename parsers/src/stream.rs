//! The contract every log parser in this crate keeps, so that the agent can
//! drive any source (GC logs, access logs, and later hsperfdata, JDK 8 and Go
//! `gctrace` output) through one read loop.

use crate::access::{AccessLogParser, Request};
use crate::events::GcEvent;
use crate::gc::GcLogParser;

/// A parser fed a byte stream in arbitrary chunks, producing typed records.
///
/// Implementations are pure and chunk-independent: feeding the same bytes in
/// any split gives the same records and counters. Each parser also keeps its
/// own inherent `feed`/`finish`, so callers that name a concrete parser need
/// not import this trait.
pub trait StreamParser {
    /// What one parsed line (or group of lines) becomes.
    type Output;

    /// Parses the complete lines in `bytes`, appending their records to
    /// `out`; an unfinished last line is held until more bytes arrive.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Output>);

    /// Ends the stream: parses an unterminated last line and emits anything
    /// held back.
    fn finish(&mut self, out: &mut Vec<Self::Output>);

    /// Lines seen so far, understood or not.
    fn lines(&self) -> u64;

    /// Bytes fed so far.
    fn bytes(&self) -> u64;
}

/// Implements [`StreamParser`] for a parser by forwarding to its inherent
/// `feed`, `finish` and `stats()` (whose `lines` and `bytes` it reads): the
/// parsers keep those methods, and the impls would otherwise be twins.
macro_rules! forward_stream_parser {
    ($parser:ty => $output:ty) => {
        impl StreamParser for $parser {
            type Output = $output;

            fn feed(&mut self, bytes: &[u8], out: &mut Vec<$output>) {
                <$parser>::feed(self, bytes, out);
            }

            fn finish(&mut self, out: &mut Vec<$output>) {
                <$parser>::finish(self, out);
            }

            fn lines(&self) -> u64 {
                self.stats().lines
            }

            fn bytes(&self) -> u64 {
                self.stats().bytes
            }
        }
    };
}

forward_stream_parser!(GcLogParser => GcEvent);
forward_stream_parser!(AccessLogParser => Request);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessFormat;

    /// Generic over the trait, as the agent's read loop is.
    fn drive<P: StreamParser>(parser: &mut P, input: &[u8]) -> Vec<P::Output> {
        let mut out = Vec::new();
        for chunk in input.chunks(7) {
            parser.feed(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    #[test]
    fn gc_and_access_parsers_run_through_one_generic_loop() {
        let gc =
            b"[0.207s][info][gc] GC(0) Pause Young (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n\
                   [0.208s][info][gc] unrelated\n";
        let mut parser = GcLogParser::default();
        let events = drive(&mut parser, gc);
        assert_eq!(events.len(), 1);
        assert_eq!((parser.lines(), parser.bytes()), (2, gc.len() as u64));

        let access = b"[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \"locations\" \"tcp://10.0.2.1:80\"";
        let mut parser = AccessLogParser::new(AccessFormat::Envoy, 64 * 1024).unwrap();
        let requests = drive(&mut parser, access);
        assert_eq!(requests[0].duration_s, 0.226);
        assert_eq!((parser.lines(), parser.bytes()), (1, access.len() as u64));
    }
}
