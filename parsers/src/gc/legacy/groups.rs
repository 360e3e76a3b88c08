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
    if !text.as_bytes().first()?.is_ascii_digit() {
        return None;
    }
    let (rest, uptime) = grammar::decimal(text).ok()?;
    let consumed = &text.as_bytes()[..text.len() - rest.len()];
    if !consumed.iter().any(|b| matches!(b, b'.' | b',')) {
        return None;
    }
    Some((uptime, rest.strip_prefix(": ")?))
}

/// `str::trim_start`, without decoding a char when the text starts with
/// ASCII that is not blank, as nearly every line and group does: the trims
/// char by char were a twentieth of reading a CMS log.
pub(super) fn trim_start(text: &str) -> &str {
    if text.as_bytes().first().is_some_and(u8::is_ascii_graphic) {
        text
    } else {
        text.trim_start()
    }
}

/// `str::trim_end`, the same way as [`trim_start`].
pub(super) fn trim_end(text: &str) -> &str {
    if text.as_bytes().last().is_some_and(u8::is_ascii_graphic) {
        text
    } else {
        text.trim_end()
    }
}

/// `str::trim`, the same way as [`trim_start`].
pub(super) fn trim(text: &str) -> &str {
    trim_end(trim_start(text))
}

/// `str::find` for two ASCII bytes (`->`, ` (`): a `memchr` for the second,
/// which is the rarer in a GC log, instead of a substring searcher built
/// at every call.
pub(super) fn find_pair(text: &str, pair: [u8; 2]) -> Option<usize> {
    let bytes = text.as_bytes();
    memchr::memchr_iter(pair[1], bytes)
        .find(|&at| at > 0 && bytes[at - 1] == pair[0])
        .map(|at| at - 1)
}

/// How many bytes at the end of `text` are `wanted`: bytes, not chars, as
/// every stamp and figure is ASCII.
pub(super) fn trailing_len(text: &str, wanted: impl Fn(u8) -> bool) -> usize {
    text.bytes().rev().take_while(|&b| wanted(b)).count()
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
        let digits = trailing_len(before, |b| b.is_ascii_digit());
        if digits > 0 && before[..before.len() - digits].ends_with('#') {
            stamp.gc_id = before[before.len() - digits..].parse().ok();
            rest = &before[..before.len() - digits - 1];
        }
    }
    if let Some(before) = rest.strip_suffix(": ") {
        let start = before.len() - trailing_len(before, |b| matches!(b, b'0'..=b'9' | b'.' | b','));
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
    let separator = |b: &u8| matches!(b, b'.' | b',');
    let separators = token.bytes().filter(separator).count();
    if separators != 1 || token.as_bytes().first().is_some_and(separator) {
        return None;
    }
    let (rest, value) = grammar::decimal(token).ok()?;
    Some((value, rest))
}

/// The bracket tree of one event, in flat vectors reused from event to
/// event (a `String` and a `Vec` per group were a fifth of reading a CMS
/// log). Scratch space: it holds nothing between two events, so it is
/// neither compared, cloned nor checkpointed.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    nodes: Vec<Node>,
    /// Every group's own text, each contiguous: written once its children are.
    text: String,
    /// Each group's children, contiguous.
    kids: Vec<u32>,
    /// Children of the groups still being parsed, innermost last.
    pending_kids: Vec<u32>,
    /// Own text of the groups still being parsed, as ranges of the input.
    pending_text: Vec<std::ops::Range<usize>>,
}

impl Clone for Tree {
    fn clone(&self) -> Self {
        Tree::default()
    }
}

impl PartialEq for Tree {
    fn eq(&self, _: &Tree) -> bool {
        true
    }
}

#[derive(Debug)]
struct Node {
    stamp: Stamp,
    text: std::ops::Range<usize>,
    kids: std::ops::Range<usize>,
}

/// One bracket group: its stamps, its own text with nested groups taken
/// out, and those groups.
#[derive(Clone, Copy)]
pub(super) struct Group<'t> {
    tree: &'t Tree,
    node: &'t Node,
}

impl<'t> Group<'t> {
    pub(super) fn stamp(&self) -> Stamp {
        self.node.stamp
    }

    pub(super) fn text(&self) -> &'t str {
        &self.tree.text[self.node.text.clone()]
    }

    pub(super) fn children(&self) -> impl Iterator<Item = Group<'t>> {
        let tree = self.tree;
        tree.kids[self.node.kids.clone()]
            .iter()
            .map(move |&at| Group {
                tree,
                node: &tree.nodes[at as usize],
            })
    }
}

pub(super) enum Unbalanced {
    /// The group is not closed yet: more lines may close it.
    Open,
    /// Nested beyond any real log.
    Garbled,
}

impl Tree {
    /// Parses the group that opens at `text[0] == '['`; returns it and the text after its `]`.
    pub(super) fn parse<'s>(
        &mut self,
        text: &'s str,
        stamp: Stamp,
    ) -> Result<(Group<'_>, &'s str), Unbalanced> {
        self.nodes.clear();
        self.text.clear();
        self.kids.clear();
        self.pending_kids.clear();
        self.pending_text.clear();
        let (root, rest) = self.group(text, text, stamp, 0)?;
        let node = &self.nodes[root];
        Ok((Group { tree: self, node }, rest))
    }

    /// The group that opens at `text`, a suffix of `input`: its index in `nodes`.
    fn group<'s>(
        &mut self,
        input: &str,
        text: &'s str,
        stamp: Stamp,
        depth: usize,
    ) -> Result<(usize, &'s str), Unbalanced> {
        if depth > MAX_DEPTH || !text.starts_with('[') {
            return Err(Unbalanced::Garbled);
        }
        let (kids_from, text_from) = (self.pending_kids.len(), self.pending_text.len());
        // Every `rest` is a suffix of `input`: its offset there is what it lacks.
        let offset = |rest: &str| input.len() - rest.len();
        let mut rest = &text[1..];
        let after = loop {
            let Some(at) = memchr::memchr2(b'[', b']', rest.as_bytes()) else {
                return Err(Unbalanced::Open);
            };
            let start = offset(rest);
            if rest.as_bytes()[at] == b']' {
                self.pending_text.push(start..start + at);
                break &rest[at + 1..];
            }
            let (before, child_stamp) = trailing_stamp(&rest[..at]);
            self.pending_text.push(start..start + before.len());
            let (child, after) = self.group(input, &rest[at..], child_stamp, depth + 1)?;
            self.pending_kids.push(child as u32);
            rest = after;
        };
        let text_start = self.text.len();
        for range in self.pending_text.drain(text_from..) {
            self.text.push_str(&input[range]);
        }
        let kids_start = self.kids.len();
        self.kids.extend(self.pending_kids.drain(kids_from..));
        self.nodes.push(Node {
            stamp,
            text: text_start..self.text.len(),
            kids: kids_start..self.kids.len(),
        });
        Ok((self.nodes.len() - 1, after))
    }
}
