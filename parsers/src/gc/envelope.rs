//! The unified-logging envelope: zero or more `[decoration]` groups, always in
//! HotSpot's fixed order (time, utctime, uptime, timemillis, uptimemillis,
//! timenanos, uptimenanos, hostname, pid, tid, level, tags), padded with
//! spaces that only grow, then one space and the message.
//!
//! Decorations are recognised by shape, not by column. Wall-clock text is kept
//! as a slice and converted only for lines that produce events, which keeps
//! the common (ignored) line cheap.

use chrono::{DateTime, TimeZone, Utc};

use super::grammar;

/// Epoch milliseconds above this (20 years after 1970) are `timemillis`, not
/// `uptimemillis`: the same rule gctoolkit uses for the `[NNNms]` ambiguity.
const EPOCH_MILLIS_THRESHOLD: u64 = 20 * 365 * 24 * 3600 * 1000;

/// Length of `2022-01-29T16:34:51.654+0000`.
const WALL_LEN: usize = 28;

/// Powers of ten for the fraction digits of an uptime.
const POWERS_OF_TEN: [f64; 10] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Envelope<'a> {
    /// `time`/`utctime` text, e.g. `2022-01-29T16:34:51.654+0000`.
    pub wall_text: Option<&'a str>,
    /// `timemillis`, or a time read before (a JDK 8 stamp, the prefix of a
    /// Go line, whose nanoseconds are kept).
    pub wall_time: Option<DateTime<Utc>>,
    /// `uptime`, `uptimemillis` or `uptimenanos`, in seconds.
    pub uptime_s: Option<f64>,
    /// At least one decoration was present.
    pub decorated: bool,
    /// The decorations were blank: a continuation of a multi-line message.
    pub continuation: bool,
    pub message: &'a str,
}

impl Envelope<'_> {
    /// The line's wall-clock time, if it carries one that parses.
    pub fn wall(&self) -> Option<DateTime<Utc>> {
        self.wall_time
            .or_else(|| self.wall_text.and_then(parse_iso8601))
    }
}

/// The time `timemillis` says.
fn wall_of_millis(millis: u64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(i64::try_from(millis).ok()?)
        .single()
}

/// The decorations of the line before that most lines repeat, byte for
/// byte: the uptime (`[0.769s]`, shared by the many lines of one
/// millisecond) and the run of level and tags (`[trace][gc,ref    ]`). One
/// comparison of each costs less than reading it again a byte at a time
/// (the tags were about 190 of a trace-level Shenandoah line's 1,290
/// instructions, the uptime 120 of its 900). Only what [`plain_uptime`] and
/// [`plain_word`] read is kept, and they read nothing past a decoration's
/// `]`, so skipping a repeat gives what reading it would: a cache, which
/// two parsers in the same state may hold differently.
#[derive(Debug, Clone)]
pub(crate) struct Repeated {
    words: [u8; Repeated::WORDS_CAPACITY],
    words_len: u8,
    /// The uptime decoration's bytes, `]` included, as a little-endian
    /// number: compared with a line's first 16 bytes in one load.
    uptime: u128,
    /// Its length (0 when none is kept), and its value.
    uptime_len: u8,
    uptime_s: f64,
}

impl Default for Repeated {
    fn default() -> Self {
        Repeated {
            words: [0; Repeated::WORDS_CAPACITY],
            words_len: 0,
            uptime: 0,
            uptime_len: 0,
            uptime_s: 0.0,
        }
    }
}

impl Repeated {
    /// Level and tags together are about 30 bytes; longer runs are read each time.
    const WORDS_CAPACITY: usize = 64;
    /// `[123456.789s]` is 13 bytes; a longer uptime is read each time.
    const UPTIME_CAPACITY: usize = 16;

    /// The length of the run of words kept, if `bytes` starts with it.
    fn words_in(&self, bytes: &[u8]) -> Option<usize> {
        let len = usize::from(self.words_len);
        (len > 0 && bytes.starts_with(&self.words[..len])).then_some(len)
    }

    fn keep_words(&mut self, run: &[u8]) {
        // WORDS_CAPACITY fits a u8.
        if run.len() <= Self::WORDS_CAPACITY {
            self.words[..run.len()].copy_from_slice(run);
            self.words_len = run.len() as u8;
        }
    }

    /// What [`plain_uptime`] gives for `bytes`: the value kept if they start
    /// with the same decoration, else read and kept.
    fn uptime(&mut self, bytes: &[u8]) -> Option<(f64, usize)> {
        let head = bytes
            .first_chunk::<{ Repeated::UPTIME_CAPACITY }>()
            .map(|head| u128::from_le_bytes(*head));
        let len = usize::from(self.uptime_len);
        if let Some(head) = head {
            if len > 0 && head & Self::mask(len) == self.uptime {
                return Some((self.uptime_s, len - 1));
            }
        }
        let (seconds, close) = plain_uptime(bytes)?;
        if let (Some(head), true) = (head, close < Self::UPTIME_CAPACITY) {
            self.uptime = head & Self::mask(close + 1);
            // Below UPTIME_CAPACITY, so it fits a u8.
            self.uptime_len = (close + 1) as u8;
            self.uptime_s = seconds;
        }
        Some((seconds, close))
    }

    /// The low `len` bytes (1 to 16) of a little-endian number.
    fn mask(len: usize) -> u128 {
        u128::MAX >> (8 * (Self::UPTIME_CAPACITY - len))
    }
}

/// Splits a line into decorations and message; `None` when a leading bracket
/// group is not a decoration (a JDK 8 `[GC (...` line, say). Hand-rolled over
/// bytes: this runs for every line, most of which are then ignored. `known`
/// holds the previous line's uptime, level and tags, and gets this line's.
pub(crate) fn parse<'a>(line: &'a str, known: &mut Repeated) -> Option<Envelope<'a>> {
    let mut env = Envelope::default();
    let mut rest = line;
    // HotSpot's default decorations, `[0.017s][info][gc,phases   ] `, or
    // those with `time` before them, with the level and tags of the line
    // before: nearly every line of a log, read here without the
    // bookkeeping below for decorations it may meet (a third of the cost
    // of a trace-level ZGC line). The loop goes on from whatever this did
    // not finish.
    if let Some(text) = plain_wall_text(line) {
        env.wall_text = Some(text);
        env.decorated = true;
        rest = &line[WALL_LEN + 2..];
    }
    if let Some((seconds, close)) = rest
        .starts_with('[')
        .then(|| known.uptime(rest.as_bytes()))
        .flatten()
    {
        env.uptime_s = Some(seconds);
        env.decorated = true;
        rest = &rest[close + 1..];
        // The level and tags of the line before, or else read here as the
        // loop below would: a log whose tags change every line (every line
        // an event) paid there for two failed comparisons with the words
        // kept and two failed reads of a clock per line.
        let words = known
            .words_in(rest.as_bytes())
            .map(|len| (len, false))
            .or_else(|| plain_words(rest.as_bytes()).map(|len| (len, true)));
        if let Some((len, new)) = words {
            let message = &rest[len..];
            if !message.starts_with('[') {
                if new {
                    known.keep_words(&rest.as_bytes()[..len]);
                }
                env.message = message.strip_prefix(' ').unwrap_or(message);
                return Some(env);
            }
        }
    }
    // The first run of plain words, as offsets of `line`, unless `known` had it.
    let mut words = 0..0;
    let mut repeated = false;
    let mut millis = [0u64; 2];
    let mut millis_count = 0;
    let mut nanos = [0u64; 2];
    let mut nanos_count = 0;
    let mut blank = false;
    while rest.as_bytes().first() == Some(&b'[') {
        let bytes = rest.as_bytes();
        if let Some((seconds, close)) = plain_uptime(bytes) {
            env.uptime_s = Some(seconds);
            env.decorated = true;
            rest = &rest[close + 1..];
            continue;
        }
        if let Some(len) = known.words_in(bytes) {
            env.decorated = true;
            rest = &rest[len..];
            repeated = true;
            continue;
        }
        if let Some(close) = plain_word(bytes) {
            let start = line.len() - rest.len();
            if words.is_empty() {
                words = start..start + close + 1;
            } else if words.end == start {
                words.end = start + close + 1;
            }
            env.decorated = true;
            rest = &rest[close + 1..];
            continue;
        }
        // HotSpot's `time` decoration is always 28 characters: take it without a scan.
        let (text, close, word) =
            if bytes.len() > WALL_LEN + 1 && bytes[WALL_LEN + 1] == b']' && bytes[11] == b'T' {
                (trim_spaces(&rest[1..WALL_LEN + 1]), WALL_LEN + 1, false)
            } else {
                let Some(scan) = scan_decoration(bytes) else {
                    break;
                };
                (&rest[scan.start..scan.end], scan.close, scan.word)
            };
        rest = &rest[close + 1..];
        env.decorated = true;
        let bytes = text.as_bytes();
        let Some(&last) = bytes.last() else {
            blank = true;
            continue;
        };
        // Level, tags, pid, tid, hostname: one pass found it of the word
        // alphabet. Only one that starts with a digit and ends in `s` can be
        // a clock, and only one shaped as a date is wall-clock time.
        if word && !(last == b's' && bytes[0].is_ascii_digit()) && !is_wall_text(bytes) {
            continue;
        }
        if last == b's' && bytes.len() >= 2 {
            let before = bytes[bytes.len() - 2];
            if before == b'm' || before == b'n' {
                if let Some(n) = all_digits(&bytes[..bytes.len() - 2]) {
                    if before == b'm' && millis_count < 2 {
                        millis[millis_count] = n;
                        millis_count += 1;
                    } else if before == b'n' && nanos_count < 2 {
                        nanos[nanos_count] = n;
                        nanos_count += 1;
                    }
                    continue;
                }
            } else if let Some(seconds) = uptime_seconds(&bytes[..bytes.len() - 1]) {
                env.uptime_s = Some(seconds);
                continue;
            }
        }
        if is_wall_text(bytes) {
            env.wall_text = Some(text);
            continue;
        }
        // pid, tid, level, tags and hostname are all of the word alphabet;
        // anything else means this is not a unified-logging line.
        if !word {
            return None;
        }
    }
    if !repeated && !words.is_empty() {
        known.keep_words(&line.as_bytes()[words]);
    }
    match millis_count {
        2 => {
            env.wall_time = wall_of_millis(millis[0]);
            env.uptime_s.get_or_insert(millis[1] as f64 / 1000.0);
        }
        1 if millis[0] > EPOCH_MILLIS_THRESHOLD => env.wall_time = wall_of_millis(millis[0]),
        1 => {
            env.uptime_s.get_or_insert(millis[0] as f64 / 1000.0);
        }
        _ => {}
    }
    // `timenanos` has an arbitrary origin; with two ns decorations the second is
    // `uptimenanos`, and a single one is taken as uptime when nothing else is.
    if nanos_count > 0 && env.uptime_s.is_none() {
        env.uptime_s = Some(nanos[nanos_count - 1] as f64 / 1e9);
    }
    env.continuation = blank;
    env.message = if env.decorated {
        rest.strip_prefix(' ').unwrap_or(rest)
    } else {
        rest
    };
    Some(env)
}

/// `[2022-01-29T16:34:51.654+0000]`, HotSpot's `time` decoration, at the
/// start of `line`: its text, as the loop in [`parse`] would take it (by
/// its length, without a scan); `None` for anything that loop would read
/// differently.
fn plain_wall_text(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    if !(bytes.len() > WALL_LEN + 1
        && bytes[0] == b'['
        && bytes[WALL_LEN + 1] == b']'
        && bytes[11] == b'T')
    {
        return None;
    }
    let text = trim_spaces(&line[1..WALL_LEN + 1]);
    let shaped = is_wall_text(text.as_bytes()) && !text.ends_with('s');
    shaped.then_some(text)
}

/// `2022-01-29T16:34:51.654+0000` and its kin, by shape.
fn is_wall_text(bytes: &[u8]) -> bool {
    bytes.len() >= 20 && bytes[4] == b'-' && bytes[10] == b'T'
}

/// One decoration's bounds, from [`scan_decoration`].
struct Scan {
    /// Its text without the padding: `start..end` of the line.
    start: usize,
    end: usize,
    /// The offset of its `]`.
    close: usize,
    /// The text is of the word alphabet (letters, digits, `,_.-`).
    word: bool,
}

/// Whether a byte is of the word alphabet, by table: one load per byte
/// instead of six comparisons.
static WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b',' | b'_' | b'.' | b'-');
        b += 1;
    }
    table
};

/// Finds the `]` of the decoration `bytes` opens, its padding and whether
/// it is a word; `None` when it never closes. Two passes whose branches
/// all go one way on a real line beat one that decides per byte.
fn scan_decoration(bytes: &[u8]) -> Option<Scan> {
    // Decorations are short: a plain scan beats memchr's setup here.
    let close = bytes.iter().position(|&b| b == b']')?;
    let padded = &bytes[1..close];
    let end = 1 + padded
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(0, |at| at + 1);
    let start = 1 + padded
        .iter()
        .position(|&b| b != b' ')
        .unwrap_or(padded.len());
    let start = start.min(end);
    let word = bytes[start..end].iter().all(|&b| WORD[b as usize]);
    Some(Scan {
        start,
        end,
        close,
        word,
    })
}

/// Strips the padding spaces inside a decoration (ASCII only: cheaper than `trim`).
fn trim_spaces(text: &str) -> &str {
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|&b| b != b' ').unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |i| i + 1);
    &text[start..end]
}

/// The value of a non-empty run of ASCII digits (at most 19, so it fits).
fn all_digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    let mut value = 0u64;
    for &b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u64::from(b - b'0');
    }
    Some(value)
}

/// `[0.017s]` without padding, HotSpot's `uptime` on nearly every line:
/// read in one pass (the same value as [`uptime_seconds`]), with the offset
/// of its `]`.
fn plain_uptime(bytes: &[u8]) -> Option<(f64, usize)> {
    let (whole_digits, whole) = grammar::digits(bytes.get(1..).unwrap_or_default(), 0);
    let separator = 1 + whole_digits;
    if whole_digits == 0 || whole_digits > 19 || !matches!(bytes.get(separator), Some(b'.' | b','))
    {
        return None;
    }
    let (fraction_digits, fraction) =
        grammar::digits(bytes.get(separator + 1..).unwrap_or_default(), 0);
    let unit = separator + 1 + fraction_digits;
    if fraction_digits == 0 || bytes.get(unit..unit + 2) != Some(b"s]") {
        return None;
    }
    // Nine fraction digits at most, so the fraction did not wrap.
    let scale = POWERS_OF_TEN.get(fraction_digits).copied()?;
    Some((whole as f64 + fraction as f64 / scale, unit + 1))
}

/// `[info]`, `[gc,phases   ]`: the level and tags of nearly every line, a
/// decoration that starts with a letter, of the word alphabet and padded on
/// the right only; the offset of its `]`. Such a text is never a clock, so
/// one pass skips it, unless it has the shape of a date (which the general
/// path reads as one).
fn plain_word(bytes: &[u8]) -> Option<usize> {
    if !bytes.get(1)?.is_ascii_alphabetic() {
        return None;
    }
    let end = 1 + bytes[1..].iter().position(|&b| !WORD[b as usize])?;
    let close = end + bytes[end..].iter().position(|&b| b != b' ')?;
    let time_shaped = close == WALL_LEN + 1 && bytes[11] == b'T';
    (bytes[close] == b']' && !time_shaped && !is_wall_text(&bytes[1..end])).then_some(close)
}

/// A run of [`plain_word`]s (`[info][gc,phases   ]`) at the start of
/// `bytes` with no decoration after it: the run's length.
fn plain_words(bytes: &[u8]) -> Option<usize> {
    let mut len = 0;
    while bytes.get(len) == Some(&b'[') {
        len += plain_word(&bytes[len..])? + 1;
    }
    (len > 0).then_some(len)
}

/// `0.017` or `1,474` (the `s` already removed).
fn uptime_seconds(number: &[u8]) -> Option<f64> {
    let separator = number.iter().position(|&b| b == b'.' || b == b',')?;
    let whole = all_digits(&number[..separator])?;
    let fraction_digits = &number[separator + 1..];
    let fraction = all_digits(fraction_digits)?;
    let scale = POWERS_OF_TEN.get(fraction_digits.len()).copied()?;
    Some(whole as f64 + fraction as f64 / scale)
}

/// `2022-01-29T16:34:51.654+0000` (HotSpot's form), read by position; other
/// offsets such as `+00:00` go through chrono's parser.
pub(crate) fn parse_iso8601(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    let field = |range: std::ops::Range<usize>| all_digits(b.get(range)?).map(|v| v as u32);
    if b.len() == WALL_LEN && b[19] == b'.' && matches!(b[23], b'+' | b'-') {
        let date =
            chrono::NaiveDate::from_ymd_opt(field(0..4)? as i32, field(5..7)?, field(8..10)?)?;
        let time = date.and_hms_milli_opt(
            field(11..13)?,
            field(14..16)?,
            field(17..19)?,
            field(20..23)?,
        )?;
        let offset_s = (field(24..26)? * 3600 + field(26..28)? * 60) as i64;
        let utc =
            time - chrono::Duration::seconds(if b[23] == b'+' { offset_s } else { -offset_s });
        return Some(utc.and_utc());
    }
    DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z")
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A message with its `GC(N)` id and generational-ZGC prefix taken off.
pub(super) struct Message<'a> {
    pub(super) gc_id: Option<u64>,
    /// `y`, `Y` or `O` in generational ZGC lines.
    pub(super) zgc_generation: Option<char>,
    pub(super) body: &'a str,
}

pub(super) fn split_message(message: &str) -> Message<'_> {
    let plain = Message {
        gc_id: None,
        zgc_generation: None,
        body: message,
    };
    let bytes = message.as_bytes();
    if !bytes.starts_with(b"GC(") {
        return plain;
    }
    // By hand: every line of a collection goes through here. It accepts what
    // `str::parse::<u64>` does: an optional `+`, digits, a value that fits.
    let first = 3 + usize::from(bytes.get(3) == Some(&b'+'));
    let Ok((after, id)) = grammar::integer(&message[first..]) else {
        return plain;
    };
    let Some(after) = after.strip_prefix(')') else {
        return plain;
    };
    let body = after.strip_prefix(' ').unwrap_or(after);
    let bytes = body.as_bytes();
    if bytes.len() >= 3 && matches!(bytes[0], b'y' | b'Y' | b'O') && &bytes[1..3] == b": " {
        return Message {
            gc_id: Some(id),
            zgc_generation: Some(bytes[0] as char),
            body: &body[3..],
        };
    }
    Message {
        gc_id: Some(id),
        zgc_generation: None,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line read on its own, with nothing known from a line before.
    fn parse(line: &str) -> Option<Envelope<'_>> {
        super::parse(line, &mut Repeated::default())
    }

    #[test]
    fn repeated_uptime_level_and_tags_read_as_if_read_anew() {
        let lines = [
            "[0.010s][trace][gc,ref               ] GC(1) Encountered Reference: 0x1",
            "[0.011s][trace][gc,ref               ] GC(1) Dropped Reference: 0x2",
            "[10.011s][trace][gc,ref               ] GC(1) Dropped Reference: 0x2",
            "[0.012s][info ][gc,ref               ] GC(1) Other",
            "[trace][gc,ref               ] no clock",
            "[trace][gc,ref               ][0.013s] clock after",
            "[2022-01-29T16:34:51.654+0000][trace][gc,ref               ] wall",
            "[2022-01-29T16:34:51.654+0000][1.5s][trace][gc,ref               ] time, uptime",
            "[2022-01-29T16:34:51.655+0000][1.5s][trace][gc,ref               ] time, uptime",
            "[2022-01-29T16:34:51.655+0000][1.5s][info][gc] other tags",
            "[ 2022-01-29T16:34:51.65+0000][1.5s][trace][gc,ref               ] padded",
            "[2022-01-29T16:34:51.654+000s][1.5s][trace][gc,ref               ] an s",
            "[2022-01-29X16:34:51.654+0000][1.5s][trace][gc,ref               ] no T",
            "[abcdefghijTklmnopqrstuvwxy12][1.5s][trace][gc,ref               ] not a time",
            "[2022-01-29T16:34:51.654+0000]",
            "[2022-01-29T16:34:51.654+0000][1.5s][host][42][trace][gc,ref               ] all",
            "[1.5s][host][42][host] pid between",
            "[1.5s][host][host][5ms] millis after",
            "[1.5s][trace][gc,ref               ",
            "[1.5s][trace][gc,ref  ] short",
            "[1.5s][trace][gc,ref               ]] bracket",
            "[1.5s][trace][gc,ref               ] ",
            "[1.5s][trace][gc,ref               ]",
            "[1.6s][trace][gc,ref               ][5ms] millis after the tags",
            "[1.6s][trace][gc,ref               ][host] a word after the tags",
            "x1.6s][trace][gc,ref               ] no bracket before the clock",
            "[1.6s] short",
            "[1.6s]",
            "[1.65s][trace][gc,ref               ] a longer clock",
            "[1.65sX[trace][gc,ref               ] the clock's bracket differs",
            "[1.65s][trace][gc,ref               ] a longer clock",
            "[1.65s ][trace][gc,ref               ] a padded clock",
            "[123456789.123s][trace][gc,ref               ] too long to keep",
            "[123456789.123s][trace][gc,ref               ] too long to keep",
            "[12345678.123s][trace][gc,ref               ] just kept",
            "[12345678.123s][trace][gc,ref               ] just kept",
            "[1.7s][info][gc,phases   ] tags that change every line",
            "[1.7s][info][gc,heap] and change again",
            "[1.7s][debug][gc,heap] a level that changes",
            "[1.7s][info][2022-01-29T16:34:51.654+0000] a date after the level",
            "[1.7s][info][42] a number after the level",
            "[1.7s][info][gc][1.8s] a clock after the tags",
            "[1.7s][info][gc][ 5ms] a padded clock after the tags",
            "[1.7s][info] a level alone",
            "[1.7s][info]",
            "[1.7s][info][gc unclosed",
            "[1.7s][info][g c] a space inside",
            "[1.7s][info ][gc   ] padded",
            "[GC (Allocation Failure) [PSYoungGen: 65536K->10746K(76288K)] 0.02 secs]",
        ];
        let mut known = Repeated::default();
        for line in lines.iter().chain(lines.iter().rev()).chain(&lines) {
            assert_eq!(super::parse(line, &mut known), parse(line), "{line}");
        }
    }

    #[test]
    fn only_a_date_in_the_time_decorations_place_is_read_as_time() {
        let env = parse("[2022-01-29T16:34:51.654+0000][1.5s][info][gc] GC(0) x").unwrap();
        assert_eq!(env.wall_text, Some("2022-01-29T16:34:51.654+0000"));
        assert_eq!(env.uptime_s, Some(1.5));
        assert_eq!(env.message, "GC(0) x");
        // As long as a time, with its `T` in place: not a decoration at all.
        assert_eq!(parse("[abcdefghijTklmnopqrstuvwxy12][1.5s] x"), None);
    }

    #[test]
    fn all_decorators_in_order() {
        let env = parse("[2020-04-22T12:36:40.485+0000][2.185s][boxname][5702][info ][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 53M->9M(1024M) 12.513ms").unwrap();
        assert_eq!(env.uptime_s, Some(2.185));
        assert_eq!(
            env.wall().unwrap().to_rfc3339(),
            "2020-04-22T12:36:40.485+00:00"
        );
        assert!(env.message.starts_with("GC(0) Pause Young"));
    }

    #[test]
    fn millis_disambiguated_by_position_and_magnitude() {
        let env =
            parse("[2021-04-26T14:16:47.634+0000][1619446607634ms][info][gc,heap,exit ] Heap")
                .unwrap();
        assert_eq!(env.wall_time, wall_of_millis(1619446607634));
        assert_eq!(env.uptime_s, None);
        let env = parse("[2023-12-06T07:32:54.113+0000][25ms] Using G1").unwrap();
        assert_eq!(env.uptime_s, Some(0.025));
        assert_eq!(env.message, "Using G1");
    }

    #[test]
    fn comma_uptime_and_no_decorations() {
        assert_eq!(
            parse("[1,474s][info][safepoint         ] Application time: 0,0423040 seconds")
                .unwrap()
                .uptime_s,
            Some(1.474)
        );
        let env = parse("GC(3) Pause Remark 1M->1M(5M) 1.0ms").unwrap();
        assert!(!env.decorated);
        assert_eq!(env.message, "GC(3) Pause Remark 1M->1M(5M) 1.0ms");
    }

    #[test]
    fn wall_clock_offsets_are_honoured() {
        let fast = parse_iso8601("2022-11-10T03:37:29.443-0800").unwrap();
        assert_eq!(fast.to_rfc3339(), "2022-11-10T11:37:29.443+00:00");
        let slow = parse_iso8601("2022-11-10T03:37:29.443-08:00").unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn gc_ids_are_read_as_str_parse_reads_them() {
        for (message, id) in [
            ("GC(12) Pause Young", Some(12)),
            ("GC(+7) Pause Young", Some(7)),
            ("GC(007) Pause Young", Some(7)),
            ("GC(18446744073709551615) x", Some(u64::MAX)),
            ("GC(18446744073709551616) x", None),
            ("GC() x", None),
            ("GC(+) x", None),
            ("GC(1 x", None),
            ("GC(1a) x", None),
        ] {
            let expected = message[3..]
                .split_once(')')
                .and_then(|(digits, _)| digits.parse::<u64>().ok());
            assert_eq!(expected, id, "{message}");
            assert_eq!(split_message(message).gc_id, id, "{message}");
        }
        let young = split_message("GC(3) y: Pause Mark Start");
        assert_eq!(
            (young.zgc_generation, young.body),
            (Some('y'), "Pause Mark Start")
        );
    }

    #[test]
    fn level_and_tags_padded_or_not() {
        let env = parse("[1.5s][info ][gc,phases   ] GC(1)   Other: 0.1ms").unwrap();
        assert_eq!(
            (env.uptime_s, env.message),
            (Some(1.5), "GC(1)   Other: 0.1ms")
        );
        // Padding on the left goes the general way, with the same result.
        let env = parse("[1.5s][ info][gc] GC(1) x").unwrap();
        assert_eq!((env.uptime_s, env.message), (Some(1.5), "GC(1) x"));
        // Fraction digits past nine are not an uptime this parser trusts.
        assert!(parse("[1.1234567890s][info] x").is_none_or(|env| env.uptime_s.is_none()));
    }

    #[test]
    fn legacy_bracket_is_not_a_decoration() {
        assert!(
            parse("[GC (Allocation Failure) [PSYoungGen: 65536K->10746K(76288K)] 0.02 secs]")
                .is_none()
        );
    }
}
