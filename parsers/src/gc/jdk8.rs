//! The JDK 6 to 8 format's way in: undecorated lines go to the grammar in
//! `legacy/`, which knows nothing of the run, and what it finds is put on the
//! run's clock here.

use super::envelope::split_message;
use super::legacy::Claim;
use super::run::legacy_envelope;
use super::state::{GcLogParser, Grammar, Line, Outcome, Understood, UnparsedKind};
use crate::events::*;

/// `-XX:+PrintGCDetails` and `-verbose:gc` output (JDK 6 to 8).
pub(super) struct Jdk8;

impl Grammar for Jdk8 {
    fn read(&self, p: &mut GcLogParser, line: &Line, out: &mut Vec<GcEvent>) -> Option<Outcome> {
        if line.envelope().is_some_and(|env| env.decorated) {
            return None;
        }
        p.legacy_line(line.text, out)
    }
}

impl GcLogParser {
    /// Hands an undecorated line to the JDK 6 to 8 parser; `None` when it
    /// is not JDK 8 output.
    fn legacy_line(&mut self, text: &str, out: &mut Vec<GcEvent>) -> Option<Outcome> {
        let mut found = self.legacy.take_found();
        let claim = self.legacy.line(text, &mut found);
        self.place_legacy(&mut found, out);
        self.legacy.give_back_found(found);
        Some(match claim {
            Claim::NotLegacy => return None,
            Claim::Used => Outcome::Used,
            Claim::Ignored => Outcome::Ignored,
            Claim::Malformed => Outcome::Unparsed(UnparsedKind::LegacyFormat),
            Claim::StoppedTime { stamp, rest } => {
                let env = legacy_envelope(stamp.time());
                self.check_restart(&env, &split_message(""), out);
                match self.stopped_time_line(rest, &env, out) {
                    Understood::Yes => Outcome::Used,
                    Understood::Ignored => Outcome::Ignored,
                    Understood::Malformed => Outcome::Unparsed(UnparsedKind::MalformedEvent),
                }
            }
            Claim::Preamble(preamble) => {
                if let Some(collector) = preamble.collector {
                    self.run.collector = collector;
                }
                self.run.version = preamble.version.or(self.run.version.take());
                self.run.max_heap_bytes = preamble.max_heap_bytes.or(self.run.max_heap_bytes);
                Outcome::Used
            }
        })
    }
}
