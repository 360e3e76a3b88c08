//! The grammar of the tokens inside GC log messages: numbers with either
//! decimal separator, sizes, heap transitions, durations, and the
//! `Name (qualifier) (cause) heap duration` shape shared by pause, concurrent
//! and cycle lines. What runs for most lines is written by hand over bytes
//! (nom's combinators backtracked and cost several times as much); the rest
//! uses nom. Every function keeps nom's `IResult` shape.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till};
use nom::character::complete::char;
use nom::combinator::{all_consuming, opt};
use nom::sequence::{delimited, terminated};
use nom::{IResult, Parser};

use crate::events::{Collector, CpuTimes, HeapTransition};

/// Parses `123`, `1.5` or `1,5` (HotSpot honours the locale's decimal separator).
/// By hand, in one pass that reads the digits as it finds them: every figure
/// of every line goes through here.
pub(crate) fn decimal(i: &str) -> IResult<&str, f64> {
    let bytes = i.as_bytes();
    let (whole, mut mantissa) = digits(bytes, 0);
    if whole == 0 {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Digit,
        )));
    }
    let fraction = match bytes.get(whole) {
        Some(b'.' | b',') => {
            let (fraction, with_fraction) = digits(&bytes[whole + 1..], mantissa);
            mantissa = with_fraction;
            fraction
        }
        _ => 0,
    };
    let end = if fraction > 0 {
        whole + 1 + fraction
    } else {
        whole
    };
    let (text, rest) = i.split_at(end);
    // Clinger's fast path: a mantissa below 2^53 over an exact power of ten
    // is one correctly rounded division, the same value `parse` gives.
    if whole + fraction <= 15 {
        // Below 10^15, so through `i64`: one conversion instruction, where
        // a `u64` takes a branch and several.
        return Ok((rest, mantissa as i64 as f64 / POWERS_OF_TEN[fraction]));
    }
    match text.replacen(',', ".", 1).parse() {
        Ok(v) => Ok((rest, v)),
        Err(_) => Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Float,
        ))),
    }
}

/// Powers of ten exact in an `f64`, for [`decimal`]'s fast path.
const POWERS_OF_TEN: [f64; 16] = [
    1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The length of the run of ASCII digits `bytes` starts with, and `mantissa`
/// with them appended (it wraps past 19 digits, where [`decimal`] does not
/// use it).
pub(super) fn digits(bytes: &[u8], mut mantissa: u64) -> (usize, u64) {
    let mut count = 0;
    while let Some(digit) = bytes.get(count).map(|b| b.wrapping_sub(b'0')) {
        if digit > 9 {
            break;
        }
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(digit));
        count += 1;
    }
    (count, mantissa)
}

/// Parses an unsigned integer.
pub(crate) fn integer(i: &str) -> IResult<&str, u64> {
    let bytes = i.as_bytes();
    let (count, wrapped) = digits(bytes, 0);
    // Nineteen digits always fit; only a longer run is read again, checked.
    let value = match count {
        0 => None,
        1..=19 => Some(wrapped),
        _ => bytes[..count].iter().try_fold(0u64, |value, &b| {
            value.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        }),
    };
    match value {
        Some(value) => Ok((&i[count..], value)),
        None => Err(error(i, nom::error::ErrorKind::Digit)),
    }
}

/// A size such as `14M`, `33275K`, `24.0M` or `512B`, in bytes.
pub(crate) fn size_bytes(i: &str) -> IResult<&str, u64> {
    let (rest, value) = decimal(i)?;
    let multiplier: f64 = match rest.as_bytes().first() {
        Some(b'B') => 1.0,
        Some(b'K') => 1024.0,
        Some(b'M') => 1024.0 * 1024.0,
        Some(b'G') => 1024.0 * 1024.0 * 1024.0,
        Some(b'T') => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(error(rest, nom::error::ErrorKind::OneOf)),
    };
    Ok((&rest[1..], (value * multiplier).round() as u64))
}

/// `(128M)` after a size: the capacity. ZGC's `(62%)` is taken off and
/// gives none; anything else is left in place.
fn capacity(i: &str) -> (&str, Option<u64>) {
    let Some(inner) = i.strip_prefix('(') else {
        return (i, None);
    };
    if let Ok((rest, size)) = size_bytes(inner) {
        if let Some(rest) = rest.strip_prefix(')') {
            return (rest, Some(size));
        }
    }
    match integer(inner).map(|(rest, _)| rest.strip_prefix("%)")) {
        Ok(Some(rest)) => (rest, None),
        _ => (i, None),
    }
}

/// `14M->12M(128M)`, `14M->12M`, ZGC's `60M(62%)->62M(65%)`, or the JDK 17+
/// pool form `16371K(18944K)->16132K(18944K)` with a capacity on both sides.
/// By hand: a CMS line holds three, and nom's combinators cost a thousand
/// instructions for each.
pub(crate) fn heap_transition(i: &str) -> IResult<&str, HeapTransition> {
    let (rest, before) = size_bytes(i)?;
    let (rest, capacity_before) = capacity(rest);
    let Some(rest) = rest.strip_prefix("->") else {
        return Err(error(rest, nom::error::ErrorKind::Tag));
    };
    let (rest, after) = size_bytes(rest)?;
    let (rest, capacity_after) = capacity(rest);
    Ok((
        rest,
        HeapTransition {
            before_bytes: before,
            after_bytes: after,
            capacity_bytes: capacity_after.or(capacity_before),
        },
    ))
}

/// G1 region counts before, after and (optionally) the target.
pub(crate) type RegionCounts = (u64, u64, Option<u64>);

/// Region counts in G1's `Eden regions: 6->0(6)` lines (no unit).
pub(crate) fn region_transition(i: &str) -> IResult<&str, RegionCounts> {
    let (rest, before) = integer(i)?;
    let Some(rest) = rest.strip_prefix("->") else {
        return Err(error(rest, nom::error::ErrorKind::Tag));
    };
    let (rest, after) = integer(rest)?;
    let target = rest
        .strip_prefix('(')
        .and_then(|inside| integer(inside).ok())
        .and_then(|(close, target)| Some((close.strip_prefix(')')?, target)));
    Ok(match target {
        Some((rest, target)) => (rest, (before, after, Some(target))),
        None => (rest, (before, after, None)),
    })
}

/// `9.772ms` or generational ZGC's `0.036s`, in seconds.
pub(crate) fn duration(i: &str) -> IResult<&str, f64> {
    let (rest, value) = decimal(i)?;
    // HotSpot writes `6.363ms`; some logs that went through other tools
    // carry `6.363 ms`, and the pause must not be lost for the space.
    let (rest, _) = opt(char(' ')).parse(rest)?;
    let (rest, unit) = alt((tag("ms"), tag("us"), tag("µs"), tag("ns"), tag("s"))).parse(rest)?;
    let seconds = match unit {
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        _ => value,
    };
    Ok((rest, seconds))
}

/// `123 ns` in the safepoint lines, in seconds.
pub(crate) fn nanos(i: &str) -> IResult<&str, f64> {
    let (rest, count) = integer(i)?;
    match rest.strip_prefix(" ns") {
        Some(rest) => Ok((rest, count as f64 / 1e9)),
        None => Err(error(rest, nom::error::ErrorKind::Tag)),
    }
}

/// Seconds written as `0.0128948 seconds`.
pub(crate) fn seconds_word(i: &str) -> IResult<&str, f64> {
    terminated(decimal, tag(" seconds")).parse(i)
}

/// Contents of a parenthesised group, nested parentheses allowed
/// (`(System.gc())`).
pub(crate) fn paren_group(i: &str) -> IResult<&str, &str> {
    let bytes = i.as_bytes();
    if bytes.first() != Some(&b'(') {
        return Err(error(i, nom::error::ErrorKind::Char));
    }
    // Bytes, not chars: a parenthesis is never part of a multi-byte character.
    let mut depth = 0usize;
    for (index, &b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&i[index + 1..], &i[1..index]));
                }
            }
            _ => {}
        }
    }
    Err(error(i, nom::error::ErrorKind::Char))
}

/// nom's error for `i`.
fn error(i: &str, kind: nom::error::ErrorKind) -> nom::Err<nom::error::Error<&str>> {
    nom::Err::Error(nom::error::Error::new(i, kind))
}

/// The end of the word at `bytes[at..]`: a letter, then letters, digits
/// and `-_.`; `None` when no word starts there.
fn word_end(bytes: &[u8], at: usize) -> Option<usize> {
    if !bytes.get(at)?.is_ascii_alphabetic() {
        return None;
    }
    let tail = bytes[at + 1..]
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        .count();
    Some(at + 1 + tail)
}

/// The shape shared by pause, concurrent-phase and cycle lines:
/// `Pause Young (Normal) (G1 Evacuation Pause) 14M->14M(46M) 9.772ms`.
#[derive(Debug, PartialEq)]
pub(crate) struct PhaseLine<'a> {
    pub name: &'a str,
    pub groups: Groups<'a>,
    pub heap: Option<HeapTransition>,
    pub duration_s: Option<f64>,
}

/// Parses a whole message of the phase-line shape; trailing text fails it.
///
/// By hand, not with combinators: every pause, phase and cycle line goes
/// through here, and nom's backtracking tried each part several times.
/// Name: words separated by single spaces, each starting with a letter
/// (`Pause Young`, `Concurrent Process Non-Strong References`); then the
/// groups, a heap transition and a duration, each after one space and each
/// optional; nothing may follow.
pub(crate) fn phase_line(i: &str) -> IResult<&str, PhaseLine<'_>> {
    let bytes = i.as_bytes();
    let Some(mut at) = word_end(bytes, 0) else {
        return Err(error(i, nom::error::ErrorKind::Alpha));
    };
    while bytes.get(at) == Some(&b' ') {
        match word_end(bytes, at + 1) {
            Some(end) => at = end,
            None => break,
        }
    }
    let name = &i[..at];
    let groups_start = at;
    while bytes.get(at) == Some(&b' ') {
        match paren_group(&i[at + 1..]) {
            Ok((rest, _)) => at = i.len() - rest.len(),
            Err(_) => break,
        }
    }
    let groups = Groups(&i[groups_start..at]);
    let mut rest = &i[at..];
    let heap = match rest.strip_prefix(' ').map(heap_transition) {
        Some(Ok((after, heap))) => {
            rest = after;
            Some(heap)
        }
        _ => None,
    };
    let duration_s = match rest.strip_prefix(' ').map(duration) {
        Some(Ok((after, seconds))) => {
            rest = after;
            Some(seconds)
        }
        _ => None,
    };
    if !rest.is_empty() {
        return Err(error(rest, nom::error::ErrorKind::Eof));
    }
    Ok((
        rest,
        PhaseLine {
            name,
            groups,
            heap,
            duration_s,
        },
    ))
}

/// The parenthesised groups of a phase line (` (Normal) (G1 Evacuation
/// Pause)`), kept as text and read again when asked for: a line costs no
/// allocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Groups<'a>(&'a str);

impl<'a> Groups<'a> {
    /// Each group's contents, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            let (after, group) = paren_group(rest.strip_prefix(' ')?).ok()?;
            rest = after;
            Some(group)
        })
    }
}

/// `User=0.01s Sys=0.00s Real=0.01s`.
pub(crate) fn cpu_times(i: &str) -> IResult<&str, CpuTimes> {
    all_consuming(
        (
            delimited(tag("User="), decimal, char('s')),
            delimited(tag(" Sys="), decimal, char('s')),
            delimited(tag(" Real="), decimal, char('s')),
        )
            .map(|(user_s, sys_s, real_s)| CpuTimes {
                user_s,
                sys_s,
                real_s,
            }),
    )
    .parse(i)
}

/// One `Key: value` field of a JDK 13+ safepoint line. Its key and value
/// are a few bytes each: a plain scan finds their ends sooner than a
/// `memchr` call is set up.
pub(crate) fn safepoint_field(i: &str) -> IResult<&str, (&str, &str)> {
    let end_of = |text: &str, byte: u8| text.bytes().position(|b| b == byte).unwrap_or(text.len());
    let colon = end_of(i, b':');
    let Some(value_onward) = i[colon..].strip_prefix(": ") else {
        return Err(error(&i[colon..], nom::error::ErrorKind::Tag));
    };
    let comma = end_of(value_onward, b',');
    Ok((
        &value_onward[comma..],
        (&i[..colon], &value_onward[..comma]),
    ))
}

/// `"G1CollectForAllocation", ` at the start of a JDK 13+ safepoint line.
pub(crate) fn quoted(i: &str) -> IResult<&str, &str> {
    delimited(char('"'), take_till(|c| c == '"'), char('"')).parse(i)
}

/// No pause, phase, cycle, safepoint or stall lasts a day: a longer duration
/// is a garbled number, and one such value would swamp every sum and maximum.
const MAX_DURATION_S: f64 = 24.0 * 3600.0;

/// Whether a GC cause names a humongous allocation (`G1 Humongous
/// Allocation`): found by its capital, where a substring search was set
/// up anew for every pause (4 % of a CMS line's parse).
pub(crate) fn humongous_cause(cause: &str) -> bool {
    let bytes = cause.as_bytes();
    memchr::memchr_iter(b'H', bytes).any(|at| bytes[at..].starts_with(b"Humongous"))
}

/// Whether a parsed duration (seconds) is one HotSpot could have measured.
pub(crate) fn plausible(duration_s: f64) -> bool {
    (0.0..=MAX_DURATION_S).contains(&duration_s)
}

pub(crate) fn collector_from_pool(pool: &str) -> Option<Collector> {
    Some(match pool {
        "PSYoungGen" | "ParOldGen" | "PSOldGen" => Collector::Parallel,
        "DefNew" | "Tenured" => Collector::Serial,
        "ParNew" | "CMS" => Collector::Cms,
        _ => return None,
    })
}

pub(crate) fn collector_from_using(name: &str) -> Option<Collector> {
    Some(match name {
        "G1" => Collector::G1,
        "Parallel" => Collector::Parallel,
        "Serial" => Collector::Serial,
        "Concurrent Mark Sweep" => Collector::Cms,
        "Shenandoah" => Collector::Shenandoah,
        "The Z Garbage Collector" => Collector::Z,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_humongous_cause_is_found_wherever_its_word_is() {
        for cause in [
            "G1 Humongous Allocation",
            "Humongous",
            "HHumongous",
            "H Humongous",
        ] {
            assert!(humongous_cause(cause), "{cause}");
        }
        for cause in ["Allocation Failure", "Humongou", "humongous", "H", ""] {
            assert!(!humongous_cause(cause), "{cause}");
        }
    }

    #[test]
    fn decimals_are_the_values_the_standard_parser_gives() {
        // Short and long mantissas, both separators, every fraction length.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let digits = state.to_string();
            let whole = 1 + (state % 12) as usize;
            let fraction = ((state >> 8) % 10) as usize;
            let separator = if state & 1 == 0 { "." } else { "," };
            let text = format!(
                "{}{separator}{} secs",
                &digits[..whole.min(digits.len())],
                &digits[digits.len() - fraction.min(digits.len())..]
            );
            let expected: f64 = text
                .split(' ')
                .next()
                .unwrap()
                .replace(',', ".")
                .trim_end_matches('.')
                .parse()
                .unwrap();
            let (rest, value) = decimal(&text).unwrap();
            assert_eq!(value.to_bits(), expected.to_bits(), "{text}");
            assert_eq!(rest.trim_start_matches([',', '.']), " secs", "{text}");
        }
        assert_eq!(
            decimal("12345678901234567.5,"),
            Ok((",", 12345678901234567.5))
        );
        assert_eq!(decimal("7.x"), Ok((".x", 7.0)));
        assert!(decimal(".5").is_err());
    }

    #[test]
    fn g1_young_pause_line() {
        let (_, line) =
            phase_line("Pause Young (Normal) (G1 Evacuation Pause) 14M->14M(46M) 9.772ms").unwrap();
        assert_eq!(line.name, "Pause Young");
        assert_eq!(
            line.groups.iter().collect::<Vec<_>>(),
            ["Normal", "G1 Evacuation Pause"]
        );
        assert_eq!(
            line.heap,
            Some(HeapTransition {
                before_bytes: 14 << 20,
                after_bytes: 14 << 20,
                capacity_bytes: Some(46 << 20)
            })
        );
        assert!((line.duration_s.unwrap() - 0.009772).abs() < 1e-12);
    }

    #[test]
    fn nested_parens_and_comma_decimal() {
        let (_, line) = phase_line("Pause Full (System.gc()) 10M->1M(128M) 6,572ms").unwrap();
        assert_eq!(line.groups.iter().collect::<Vec<_>>(), ["System.gc()"]);
        assert!((line.duration_s.unwrap() - 0.006572).abs() < 1e-12);
    }

    #[test]
    fn zgc_summary_in_seconds_with_percentages() {
        let (_, line) =
            phase_line("Minor Collection (Allocation Rate) 60M(62%)->62M(65%) 0.020s").unwrap();
        assert_eq!(line.name, "Minor Collection");
        assert_eq!(line.heap.unwrap().capacity_bytes, None);
        assert_eq!(line.duration_s, Some(0.020));
    }

    #[test]
    fn pool_transition_with_capacity_on_both_sides() {
        let (rest, t) =
            heap_transition("16371K(18944K)->16132K(18944K) Eden: 16371K(16384K)->16132K(16384K)")
                .unwrap();
        assert_eq!(
            (t.before_bytes, t.after_bytes, t.capacity_bytes),
            (16371 * 1024, 16132 * 1024, Some(18944 * 1024))
        );
        assert!(rest.starts_with(" Eden"));
    }

    #[test]
    fn integers_and_region_counts() {
        assert_eq!(integer("42K"), Ok(("K", 42)));
        assert!(integer("18446744073709551616").is_err());
        assert!(integer("x").is_err());
        assert_eq!(region_transition("6->0(6)"), Ok(("", (6, 0, Some(6)))));
        // An unclosed target is left as it was, as nom's `opt` leaves it.
        assert_eq!(region_transition("6->0(6"), Ok(("(6", (6, 0, None))));
        assert!(region_transition("6-0").is_err());
        assert_eq!(nanos("1500 ns, x"), Ok((", x", 1.5e-6)));
        assert_eq!(
            safepoint_field("Reaching safepoint: 2146 ns, Cleanup: 1 ns"),
            Ok((", Cleanup: 1 ns", ("Reaching safepoint", "2146 ns")))
        );
        assert!(safepoint_field("no colon").is_err());
    }

    #[test]
    fn names_groups_heap_and_duration_each_optional() {
        let (_, line) = phase_line("Concurrent Mark Cycle 12.5ms").unwrap();
        assert_eq!(
            (line.name, line.duration_s),
            ("Concurrent Mark Cycle", Some(0.0125))
        );
        let (_, line) = phase_line("Pause Remark 10M->9M(128M)").unwrap();
        assert_eq!((line.groups.iter().count(), line.duration_s), (0, None));
        assert!(line.heap.is_some());
        // A group that does not close, or text after the duration, fails the line.
        assert!(phase_line("Pause Young (Normal 1.0ms").is_err());
        assert!(phase_line("Pause Young 1.0ms later").is_err());
        assert!(phase_line("(Normal) 1.0ms").is_err());
        // A word may hold digits and `-_.` after its first letter.
        let (_, line) = phase_line("Concurrent Process Non-Strong References v2.1 3us").unwrap();
        assert_eq!(line.name, "Concurrent Process Non-Strong References v2.1");
    }

    #[test]
    fn heap_transitions_leave_what_they_do_not_read() {
        // Each capacity is optional, as nom's `opt` made it: one that does
        // not close is left where it is.
        let (rest, heap) = heap_transition("14M->12M(128M").unwrap();
        assert_eq!(rest, "(128M");
        assert_eq!(
            (heap.before_bytes, heap.after_bytes, heap.capacity_bytes),
            (14 << 20, 12 << 20, None)
        );
        let (rest, heap) = heap_transition("60M(62%)->62M(65%) x").unwrap();
        assert_eq!((rest, heap.capacity_bytes), (" x", None));
        let (_, heap) = heap_transition("1K(2K)->1K").unwrap();
        assert_eq!(heap.capacity_bytes, Some(2048));
        assert!(heap_transition("14M-12M").is_err());
        assert!(heap_transition("14->12M").is_err());
        assert_eq!(size_bytes("1.5KB"), Ok(("B", 1536)));
        assert!(size_bytes("12").is_err());
    }

    #[test]
    fn start_line_has_no_duration() {
        let (_, line) = phase_line("Pause Init Mark (unload classes)").unwrap();
        assert_eq!(line.duration_s, None);
        assert!(phase_line("Pause Young (Normal) (G1 Evac").is_err());
    }
}
