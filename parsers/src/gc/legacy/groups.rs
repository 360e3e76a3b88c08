//! A JDK 8 line's stamps and bracket groups: the tree every event is read
//! from. A leaf, so that the parser and the interpreter share it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::events::LogTime;
use crate::gc::envelope::parse_iso8601;
use crate::gc::grammar;

/// Bracket groups nest at most this deep in a real log (four or five); a
/// deeper tree is garbage, and recursion must stay bounded.
pub(super) const MAX_DEPTH: usize = 12;

/// What a line's, or a bracket group's, prefix says:
/// `2015-07-22T14:53:42.655-0100: 1.807: #2: `.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    pub wall: Option<DateTime<Utc>>,
    pub uptime_s: Option<f64>,
    /// `-XX:+PrintGCID`.
    pub gc_id: Option<u64>,
}

impl Stamp {
    pub fn time(&self) -> LogTime {
        LogTime {
            uptime_s: self.uptime_s,
            wall: self.wall,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.wall.is_none() && self.uptime_s.is_none() && self.gc_id.is_none()
    }
}
/// The leading stamps of a line: date stamp, uptime and GC id, each optional.
/// Threads that log at once interleave their stamps
/// (`2015-02-25T12:47:08.028+0100: 2015-02-25T12:47:08.028+0100: 6616,888: `):
/// repeated stamps are skipped, the first of each kind kept.
pub(crate) fn leading_stamp(text: &str) -> (Stamp, &str) {
    let mut stamp = Stamp::default();
    let mut rest = text;
    loop {
        if rest.as_bytes().get(10) == Some(&b'T') {
            if let Some(wall) = rest.get(..28).and_then(parse_iso8601) {
                if let Some(after) = rest[28..].strip_prefix(": ") {
                    stamp.wall.get_or_insert(wall);
                    rest = after;
                    continue;
                }
            }
        }
        if let Some((uptime, after)) = uptime_prefix(rest) {
            stamp.uptime_s.get_or_insert(uptime);
            rest = after;
            continue;
        }
        break;
    }
    if let Some((id, after)) = rest.strip_prefix('#').and_then(id_prefix) {
        stamp.gc_id = Some(id);
        rest = after;
    }
    (stamp, rest)
}

/// `1.807: ` or `366,174: ` at the start of `text`.
pub(super) fn uptime_prefix(text: &str) -> Option<(f64, &str)> {
    let (rest, uptime) = grammar::decimal(text).ok()?;
    let consumed = &text[..text.len() - rest.len()];
    if !consumed.contains(['.', ',']) {
        return None;
    }
    Some((uptime, rest.strip_prefix(": ")?))
}

pub(super) fn id_prefix(text: &str) -> Option<(u64, &str)> {
    let (rest, id) = grammar::integer(text).ok()?;
    Some((id, rest.strip_prefix(": ")?))
}

/// Splits the stamps off the end of the text that precedes a nested group:
/// `GC (Allocation Failure) 2016-03-22T10:02:41.962-0100: 13.396: ` (the
/// stamps may follow a word directly when concurrent output was spliced in).
pub(super) fn trailing_stamp(text: &str) -> (&str, Stamp) {
    let mut stamp = Stamp::default();
    let mut rest = text;
    if let Some(before) = rest.strip_suffix(": ") {
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && before[..before.len() - digits].ends_with('#') {
            stamp.gc_id = before[before.len() - digits..].parse().ok();
            rest = &before[..before.len() - digits - 1];
        }
    }
    if let Some(before) = rest.strip_suffix(": ") {
        let start = before
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',')
            .len();
        if let Some((uptime, "")) = uptime_prefix_exact(&before[start..]) {
            stamp.uptime_s = Some(uptime);
            rest = &before[..start];
        }
    }
    if let Some(before) = rest.strip_suffix(": ") {
        if let Some(wall) = before
            .len()
            .checked_sub(28)
            .and_then(|at| before.get(at..))
            .and_then(parse_iso8601)
        {
            stamp.wall = Some(wall);
            rest = &before[..before.len() - 28];
        }
    }
    (rest, stamp)
}

/// A whole `D[.,]D` token as an uptime.
pub(super) fn uptime_prefix_exact(token: &str) -> Option<(f64, &str)> {
    let separators = token.matches(['.', ',']).count();
    if separators != 1 || token.starts_with(['.', ',']) {
        return None;
    }
    let (rest, value) = grammar::decimal(token).ok()?;
    Some((value, rest))
}

/// One bracket group: its stamps, its own text with nested groups taken
/// out, and those groups.
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) stamp: Stamp,
    pub(super) text: String,
    pub(super) children: Vec<Group>,
}

pub(super) enum Unbalanced {
    /// The group is not closed yet: more lines may close it.
    Open,
    /// Nested beyond any real log.
    Garbled,
}

/// Parses the group that opens at `text[0] == '['`; returns it and the text after its `]`.
pub(super) fn group(text: &str, stamp: Stamp, depth: usize) -> Result<(Group, &str), Unbalanced> {
    if depth > MAX_DEPTH || !text.starts_with('[') {
        return Err(Unbalanced::Garbled);
    }
    let mut node = Group {
        stamp,
        ..Group::default()
    };
    let mut rest = &text[1..];
    loop {
        let Some(at) = memchr::memchr2(b'[', b']', rest.as_bytes()) else {
            return Err(Unbalanced::Open);
        };
        if rest.as_bytes()[at] == b']' {
            node.text.push_str(&rest[..at]);
            return Ok((node, &rest[at + 1..]));
        }
        let (before, child_stamp) = trailing_stamp(&rest[..at]);
        node.text.push_str(before);
        let (child, after) = group(&rest[at..], child_stamp, depth + 1)?;
        node.children.push(child);
        rest = after;
    }
}
